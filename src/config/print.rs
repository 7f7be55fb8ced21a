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

    /// The keys (`section.key`, as the file names them) whose values
    /// differ between this configuration and `other`, in the file's order:
    /// what a reload changes (values are not given: some are secrets).
    pub fn changed_keys(&self, other: &Config) -> Vec<String> {
        let table = |c: &Config| -> toml::Table {
            toml::Table::try_from(RawConfig::from(c)).unwrap_or_default()
        };
        let mut out = Vec::new();
        diff("", &table(self), &table(other), &mut out);
        out
    }
}

/// Appends the dotted keys whose values differ between `a` and `b`.
fn diff(prefix: &str, a: &toml::Table, b: &toml::Table, out: &mut Vec<String>) {
    let mut keys: Vec<&String> = a
        .keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .collect();
    keys.dedup();
    for k in keys {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (a.get(k), b.get(k)) {
            (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) => diff(&name, x, y, out),
            (x, y) if x != y => out.push(name),
            _ => {}
        }
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
    fn changed_keys_name_what_a_reload_changes() {
        let a = Config::default();
        let mut b = a.clone();
        assert!(a.changed_keys(&b).is_empty());
        b.alerts.to = vec!["postmaster@example.org".into()];
        b.thresholds.bulk_threshold = 7.0;
        b.store.redis.urls = vec!["redis://10.0.0.1:6379/0".into()];
        let mut changed = a.changed_keys(&b);
        changed.sort();
        assert_eq!(
            changed,
            ["alerts.to", "store.redis.urls", "thresholds.bulk_threshold"]
        );
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
