//! `[metrics]`: the listener of the metrics and /campaigns endpoints.

use super::raw::RawMetrics;
use super::ConfigError;

/// Prometheus text metrics and the /campaigns endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    /// `None`: no metrics listener.
    pub listen: Option<String>,
    /// Bearer token that lets the dashboard allow and forget campaigns
    /// (`POST /campaigns/ID/allow|forget`); `None`: read-only.
    pub control_token: Option<String>,
}

/// Shortest control token accepted (a guessable token would hand the
/// allow-list to anyone who can reach the listener).
pub const MIN_TOKEN_LEN: usize = 20;

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: Some("127.0.0.1:9357".to_owned()),
            control_token: None,
        }
    }
}

impl TryFrom<RawMetrics> for MetricsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMetrics) -> Result<Self, ConfigError> {
        let RawMetrics {
            listen,
            control_token,
        } = raw;
        let mut c = MetricsConfig::default();
        match control_token {
            Some(t) if t.is_empty() => {}
            Some(t) if t.len() < MIN_TOKEN_LEN || !t.bytes().all(|b| b.is_ascii_graphic()) => {
                return Err(ConfigError::invalid(
                    "metrics.control_token",
                    format!("at least {MIN_TOKEN_LEN} printable characters, no spaces (e.g. `bulkwatch keygen`'s hex digits); empty: read-only"),
                ))
            }
            Some(t) => c.control_token = Some(t),
            None => {}
        }
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
            control_token: None,
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
    fn control_tokens_must_be_long_and_printable() {
        let token = |t: &str| {
            MetricsConfig::try_from(RawMetrics {
                listen: None,
                control_token: Some(t.to_owned()),
            })
        };
        assert_eq!(token("").unwrap().control_token, None);
        let good = "0123456789abcdef0123";
        assert_eq!(token(good).unwrap().control_token.as_deref(), Some(good));
        for bad in ["short", "0123456789 abcdef0123"] {
            assert_eq!(refusal(token(bad)).0, "metrics.control_token");
        }
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
