//! `[metrics]`: the listener of the metrics and /campaigns endpoints.

use super::section::*;
use super::ConfigError;

/// Shortest control token accepted (a guessable token would hand the
/// allow-list to anyone who can reach the listener).
pub const MIN_TOKEN_LEN: usize = 20;

section! {
    /// Prometheus text metrics and the /campaigns endpoint.
    pub struct MetricsConfig in RawMetrics as "metrics" {
        /// `None`: no metrics listener (the empty string in the file).
        listen: Option<String> = Some("127.0.0.1:9357".to_owned()),
            file listen: String,
            read |k, v| if v.is_empty() {
                Ok(None)
            } else if v.parse::<std::net::SocketAddr>().is_err() {
                Err(ConfigError::invalid(
                    k,
                    format!("`{v}` is not an address:port (empty string turns metrics off)"),
                ))
            } else {
                Ok(Some(v))
            },
            write |v| Some(v.clone().unwrap_or_default()),
            restart LISTENER;
        /// Bearer token that lets the dashboard allow and forget campaigns
        /// (`POST /campaigns/ID/allow|forget`); `None`: read-only (the
        /// empty string in the file).
        control_token: Option<String> = None,
            file control_token: String,
            read |k, t| if t.is_empty() {
                Ok(None)
            } else if t.len() < MIN_TOKEN_LEN || !t.bytes().all(|b| b.is_ascii_graphic()) {
                Err(ConfigError::invalid(
                    k,
                    format!("at least {MIN_TOKEN_LEN} printable characters, no spaces (e.g. `bulkwatch keygen`'s hex digits); empty: read-only"),
                ))
            } else {
                Ok(Some(t))
            },
            write |v| Some(v.clone().unwrap_or_default());
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
