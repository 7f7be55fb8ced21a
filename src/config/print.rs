//! The configuration written back as TOML, with the file's own key names
//! and units (seconds, milliseconds, the socket mode in octal), so that
//! `check-config` prints what can be pasted into a file and reads back as
//! the same configuration.

use super::raw::RawConfig;
use super::Config;

impl Config {
    /// The configuration as TOML, with the file's key names and units; it
    /// reads back as the same configuration.
    pub fn to_toml(&self) -> String {
        toml::to_string(&RawConfig::from(self))
            .unwrap_or_else(|e| format!("# cannot print the configuration: {e}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SocketSpec, StoreBackend};

    fn round_trip(c: &Config) -> Config {
        let text = c.to_toml();
        let raw: RawConfig = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        Config::from_raw(raw).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn printed_configuration_reads_back_the_same() {
        let d = Config::default();
        assert_eq!(round_trip(&d), d);
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/bulkwatch.toml"
        ))
        .unwrap();
        let mut c = Config::from_raw(toml::from_str(&format!("{text}\n")).unwrap()).unwrap();
        c.milter.socket = SocketSpec::Unix("/run/bulkwatch/milter.sock".into());
        c.milter.socket_mode = 0o640;
        c.milter.socket_group = Some("postfix".into());
        c.metrics.listen = None;
        c.allow.client_networks = vec!["10.0.0.0/8".parse().unwrap()];
        c.store.backend = StoreBackend::Redis;
        c.fingerprint.hash_key = (0x0123_4567_89ab_cdef, 42);
        c.policy.bulk = super::super::Action::Reject;
        assert_eq!(round_trip(&c), c);
        let text = c.to_toml();
        assert!(text.contains("socket_mode = \"0640\""), "{text}");
        assert!(text.contains("window_secs = 21600"), "{text}");
        assert!(text.contains("[store.redis]"), "{text}");
    }
}
