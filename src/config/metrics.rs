//! `[metrics]`: the listener of the metrics and /campaigns endpoints.

use super::raw::RawMetrics;
use super::ConfigError;

/// Prometheus text metrics and the /campaigns endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    /// `None`: no metrics listener.
    pub listen: Option<String>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: Some("127.0.0.1:9357".to_owned()),
        }
    }
}

impl TryFrom<RawMetrics> for MetricsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMetrics) -> Result<Self, ConfigError> {
        let RawMetrics { listen } = raw;
        let mut c = MetricsConfig::default();
        if let Some(v) = listen {
            if v.is_empty() {
                c.listen = None;
            } else if v.parse::<std::net::SocketAddr>().is_err() {
                return Err(ConfigError::invalid(
                    "metrics.listen",
                    format!("`{v}` is not an address:port (empty string turns metrics off)"),
                ));
            } else {
                c.listen = Some(v);
            }
        }
        Ok(c)
    }
}
