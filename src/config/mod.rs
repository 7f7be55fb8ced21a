//! Configuration: TOML in, validated [`Config`] out.
//!
//! Two stages, as in ripgrep's `LowArgs` -> `HiArgs`: [`raw::RawConfig`] is
//! the file as written (every key optional, unknown keys refused), and
//! [`Config::from_raw`] turns it into the validated form one section at a
//! time: each section's `TryFrom<RawXxx>` fills in that section's defaults,
//! checks its ranges and the rules between its own keys, and names the
//! offending key path in every error. No rule spans two sections. The
//! defaults live in one place, each section's `Default` impl;
//! `config/bulkwatch.toml` shows the same values and a test keeps the two
//! equal. Each `[section]` has a module of the same name holding its
//! validated struct, defaults, rules and their tests (`[store.redis]` sits
//! in `store`); the types are re-exported here.
//!
//! This module reads files only in [`Config::load`]; everything else is pure.

mod alerts;
mod allow;
mod campaign;
mod error;
mod exact;
mod fingerprint;
mod lines;
mod metrics;
mod milter;
mod normalize;
mod policy;
mod print;
pub mod raw;
mod scan;
mod state;
mod store;
mod thresholds;
mod warnings;
mod window;

pub use alerts::{parse_relay, AlertsConfig};
pub use allow::AllowConfig;
pub use campaign::CampaignConfig;
pub use error::ConfigError;
pub use exact::{ExactConfig, MAX_BLOOM_BYTES};
pub use fingerprint::{format_hash_key, FingerprintConfig, DEFAULT_HASH_KEY};
pub use metrics::MetricsConfig;
pub use milter::{parse_socket, FailureAction, MilterConfig, SocketSpec};
pub use normalize::NormalizeConfig;
pub use policy::{Action, PolicyConfig};
pub use scan::ScanConfig;
pub use state::StateConfig;
pub use store::{RedisConfig, RedisLayout, StoreBackend, StoreConfig};
pub use thresholds::Thresholds;
pub use warnings::ConfigWarning;
pub use window::WindowConfig;

use std::path::Path;

use raw::RawConfig;

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub scan: ScanConfig,
    pub normalize: NormalizeConfig,
    pub fingerprint: FingerprintConfig,
    pub window: WindowConfig,
    pub exact: ExactConfig,
    pub campaign: CampaignConfig,
    pub thresholds: Thresholds,
    pub allow: AllowConfig,
    pub milter: MilterConfig,
    pub policy: PolicyConfig,
    pub state: StateConfig,
    pub metrics: MetricsConfig,
    pub alerts: AlertsConfig,
    pub store: StoreConfig,
}

/// `v` if it lies in `lo..=hi`, else an error naming `key` (for every section).
fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T, ConfigError> {
    // `contains`, not `v < lo || v > hi`: NaN (TOML has `nan`) is in no range.
    if !(lo..=hi).contains(&v) {
        Err(ConfigError::invalid(
            key,
            format!("{v} is outside {lo}..={hi}"),
        ))
    } else {
        Ok(v)
    }
}

/// [`in_range`], then as `usize`.
fn to_usize(key: &str, v: u64, lo: u64, hi: u64) -> Result<usize, ConfigError> {
    let v = in_range(key, v, lo, hi)?;
    usize::try_from(v).map_err(|_| ConfigError::invalid(key, "too large for this platform"))
}

/// Largest configuration file read (the shipped one, every key commented,
/// is about 12 KB).
pub const MAX_FILE: u64 = 1 << 20;

impl Config {
    /// Reads and validates a TOML file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read; `Parse` or
    /// `Invalid` naming the file and the key otherwise.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::load_with_warnings(path).map(|(cfg, _)| cfg)
    }

    /// [`Config::load`], and the file's suspicious values with their
    /// lines ([`Config::warnings_in`]).
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn load_with_warnings(path: &Path) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
        // A regular file (a link to one is fine) of bounded size: a FIFO at
        // the path must not hang a start or a reload, nor a link to
        // /dev/zero fill memory.
        let bytes = crate::file::read_regular(path, MAX_FILE, crate::file::Links::Follow).map_err(
            |source| ConfigError::Read {
                path: path.to_owned(),
                source,
            },
        )?;
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::NotText {
            path: path.to_owned(),
        })?;
        let cfg =
            Config::from_toml_str(&text).map_err(|e| e.with_origin(&path.display().to_string()))?;
        let warnings = cfg.warnings_in(&text);
        Ok((cfg, warnings))
    }

    /// Parses and validates TOML text.
    ///
    /// # Errors
    /// `Parse` for bad TOML or unknown keys, `Invalid` for bad values (with
    /// the line of the key, as a parse error has one).
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: "config".to_owned(),
            message: e.to_string(),
        })?;
        Config::from_raw(raw).map_err(|e| e.with_origin("config").with_line_in(text))
    }

    /// Fills defaults and validates, one section at a time in file order
    /// (each section's `TryFrom` holds its defaults and rules).
    ///
    /// # Errors
    /// `Invalid` naming the first bad key.
    pub fn from_raw(raw: RawConfig) -> Result<Config, ConfigError> {
        // No rule looks at two sections at once, so nothing is checked here
        // beyond the sections themselves. Fields are evaluated in the order
        // written: the first bad section is the one reported.
        Ok(Config {
            scan: raw.scan.unwrap_or_default().try_into()?,
            normalize: raw.normalize.unwrap_or_default().into(),
            fingerprint: raw.fingerprint.unwrap_or_default().try_into()?,
            window: raw.window.unwrap_or_default().try_into()?,
            exact: raw.exact.unwrap_or_default().try_into()?,
            campaign: raw.campaign.unwrap_or_default().into(),
            thresholds: raw.thresholds.unwrap_or_default().try_into()?,
            allow: raw.allow.unwrap_or_default().try_into()?,
            milter: raw.milter.unwrap_or_default().try_into()?,
            policy: raw.policy.unwrap_or_default().try_into()?,
            state: raw.state.unwrap_or_default().try_into()?,
            metrics: raw.metrics.unwrap_or_default().try_into()?,
            alerts: raw.alerts.unwrap_or_default().try_into()?,
            store: raw.store.unwrap_or_default().try_into()?,
        })
    }

    /// A reload, in one place: the configuration in force after `new`
    /// (just loaded) replaces `self` (running), and the keys whose new
    /// values wait for a restart ([`Config::restart_needed`]). Each of those
    /// keeps its running value; every other key takes the new one.
    pub fn reloaded(&self, new: &Config) -> (Config, Vec<&'static str>) {
        let mut merged = new.clone();
        // Read at start only: the listeners, the state directory, Redis.
        merged.milter.socket = self.milter.socket.clone();
        merged.milter.socket_owner = self.milter.socket_owner.clone();
        merged.milter.socket_group = self.milter.socket_group.clone();
        merged.milter.socket_mode = self.milter.socket_mode;
        merged.milter.max_connections = self.milter.max_connections;
        merged.milter.idle_timeout = self.milter.idle_timeout;
        merged.metrics.listen = self.metrics.listen.clone();
        merged.state.state_dir = self.state.state_dir.clone();
        merged.store = self.store.clone();
        // What the window's fingerprints and sizes were made with.
        merged.fingerprint = self.fingerprint.clone();
        merged.normalize = self.normalize.clone();
        merged.scan = self.scan.clone();
        merged.window = self.window.clone();
        merged.exact = self.exact.clone();
        (merged, self.restart_needed(new))
    }

    /// Keys whose change needs a restart, named by their paths, comparing
    /// `self` (running) with `new` (just loaded). [`Config::reloaded`]
    /// keeps exactly these.
    pub fn restart_needed(&self, new: &Config) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.milter.socket != new.milter.socket {
            keys.push("milter.socket");
        }
        if self.milter.socket_owner != new.milter.socket_owner
            || self.milter.socket_group != new.milter.socket_group
            || self.milter.socket_mode != new.milter.socket_mode
        {
            keys.push("milter.socket_owner/group/mode");
        }
        if self.milter.max_connections != new.milter.max_connections {
            keys.push("milter.max_connections");
        }
        if self.milter.idle_timeout != new.milter.idle_timeout {
            keys.push("milter.idle_timeout_secs");
        }
        if self.metrics.listen != new.metrics.listen {
            keys.push("metrics.listen");
        }
        if self.state.state_dir != new.state.state_dir {
            keys.push("state.state_dir");
        }
        if self.store != new.store {
            keys.push("store");
        }
        if self.fingerprint != new.fingerprint
            || self.normalize != new.normalize
            || self.scan != new.scan
        {
            keys.push("fingerprint/normalize/scan (fingerprints would no longer match the window)");
        }
        if self.window != new.window || self.exact != new.exact {
            keys.push("window/exact (sizes of the in-memory state)");
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reload_keeps_exactly_the_keys_that_need_a_restart() {
        let running = Config::default();
        let mut new = Config::default();
        new.thresholds.bulk_threshold = 7.0;
        new.policy.bulk = Action::Reject;
        new.milter.socket = SocketSpec::Inet("127.0.0.1:1".into());
        new.milter.max_connections += 1;
        new.metrics.listen = None;
        new.state.state_dir = "/elsewhere".into();
        new.state.snapshot_interval += std::time::Duration::from_secs(1);
        new.scan.max_parse_bytes += 1;
        new.window.max_entries += 1;
        let (merged, keys) = running.reloaded(&new);
        // Live: the new values.
        assert_eq!(merged.thresholds.bulk_threshold, 7.0);
        assert_eq!(merged.policy.bulk, Action::Reject);
        assert_eq!(merged.state.snapshot_interval, new.state.snapshot_interval);
        // Restart: the running values, each reported.
        assert_eq!(merged.milter.socket, running.milter.socket);
        assert_eq!(
            merged.milter.max_connections,
            running.milter.max_connections
        );
        assert_eq!(merged.metrics.listen, running.metrics.listen);
        assert_eq!(merged.state.state_dir, running.state.state_dir);
        assert_eq!(merged.scan, running.scan);
        assert_eq!(merged.window, running.window);
        assert_eq!(
            keys,
            vec![
                "milter.socket",
                "milter.max_connections",
                "metrics.listen",
                "state.state_dir",
                "fingerprint/normalize/scan (fingerprints would no longer match the window)",
                "window/exact (sizes of the in-memory state)",
            ]
        );
        // Reloading what runs changes nothing.
        let (same, none) = merged.reloaded(&merged);
        assert_eq!(same, merged);
        assert!(none.is_empty());
    }

    /// The key and message of the `Invalid` error a section's `TryFrom`
    /// returned (the tests of the section modules use it).
    pub(super) fn refusal<T: std::fmt::Debug>(result: Result<T, ConfigError>) -> (String, String) {
        match result {
            Err(ConfigError::Invalid { key, message, .. }) => (key, message),
            other => panic!("expected an invalid value, got {other:?}"),
        }
    }

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_is_refused_with_its_name() {
        let err = Config::from_toml_str("[window]\nmax_distanse = 3\n").unwrap_err();
        assert!(err.to_string().contains("max_distanse"), "{err}");
    }

    #[test]
    fn out_of_range_value_names_key_path() {
        let err = Config::from_toml_str("[window]\nmax_distance = 40\n").unwrap_err();
        assert_eq!(err.key(), Some("window.max_distance"));
    }

    #[test]
    fn an_invalid_value_names_its_line_as_a_parse_error_does() {
        let text = "# site\n\n[thresholds]\nbulk_threshold = 20.0\nsuspect_threshold = 30.0\n";
        let err = Config::from_toml_str(text).unwrap_err();
        assert_eq!(err.line(), Some(5));
        assert_eq!(
            err.to_string(),
            "config: line 5: invalid value for `thresholds.suspect_threshold`: \
             30 is above thresholds.bulk_threshold (20)"
        );
        // A rule broken by a default: the line of the table that is there.
        let err = Config::from_toml_str("[thresholds]\nsuspect_threshold = 30.0\n").unwrap_err();
        assert_eq!(err.line(), Some(2));
        let err = Config::from_toml_str("[thresholds]\nbulk_threshold = 2.0\n").unwrap_err();
        assert_eq!(err.key(), Some("thresholds.suspect_threshold"));
        assert_eq!(err.line(), Some(1));
    }
}

#[cfg(test)]
mod shipped_file {
    use super::*;

    /// config/bulkwatch.toml documents the defaults: it must not drift.
    #[test]
    fn shipped_config_equals_built_in_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bulkwatch.toml");
        let cfg = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg, Config::default());
    }
}
