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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    fn listen(v: &str) -> Result<MetricsConfig, ConfigError> {
        MetricsConfig::try_from(RawMetrics {
            listen: Some(v.to_owned()),
        })
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            MetricsConfig::try_from(RawMetrics::default()).unwrap(),
            MetricsConfig::default()
        );
    }

    #[test]
    fn empty_listen_turns_metrics_off() {
        assert_eq!(listen("").unwrap().listen, None);
        assert_eq!(
            listen("[::1]:9357").unwrap().listen.as_deref(),
            Some("[::1]:9357")
        );
    }

    /// Only a literal address: a host name is refused like any other
    /// non-address.
    #[test]
    fn what_is_no_address_and_port_is_refused() {
        for bad in ["localhost:9357", "127.0.0.1", "127.0.0.1:99999"] {
            assert_eq!(
                refusal(listen(bad)),
                (
                    "metrics.listen".to_owned(),
                    format!("`{bad}` is not an address:port (empty string turns metrics off)")
                )
            );
        }
    }
}
