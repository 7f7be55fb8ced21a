//! Configuration: TOML in, validated [`Config`] out.
//!
//! Two stages, as in ripgrep's `LowArgs` -> `HiArgs`: [`raw::RawConfig`] is
//! the file as written (every key optional, unknown keys refused), and
//! [`Config::from_raw`] turns it into the validated form one section at a
//! time: each section's `TryFrom<RawXxx>` fills in that section's defaults,
//! checks its ranges and the rules between its own keys, and names the
//! offending key path in every error. No rule spans two sections.
//!
//! Each key is declared once, in its section's `section!` list (`config/section.rs`): field,
//! type, default, file name and type, how it is read and written back, and
//! whether a new value waits for a restart. The file form, the defaults,
//! the reading, `check-config`'s printing and the reload's split are
//! generated from that list. `config/bulkwatch.toml` shows every key with
//! its default, and tests keep the two equal. Each `[section]` has a module
//! of the same name (`[store.redis]` sits in `store`); the types are
//! re-exported here.
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
mod own;
mod policy;
mod print;
pub mod raw;
mod scan;
mod section;
mod state;
mod store;
mod thresholds;
mod warnings;
mod window;
mod zero_hour;

pub use alerts::{parse_relay, AlertTls, AlertsConfig};
pub use allow::AllowConfig;
pub use campaign::CampaignConfig;
pub use error::ConfigError;
pub use exact::{ExactConfig, MAX_BLOOM_BYTES};
pub use fingerprint::{format_hash_key, FingerprintConfig, DEFAULT_HASH_KEY};
pub use metrics::MetricsConfig;
pub use milter::{parse_socket, FailureAction, MilterConfig, SocketSpec};
pub use normalize::NormalizeConfig;
pub use own::{OwnConfig, OwnNetwork, MYNETWORKS, THREAD_SECS as OWN_THREAD_SECS};
pub use policy::{Action, PolicyConfig};
pub use scan::ScanConfig;
pub use section::Restart;
pub use state::StateConfig;
pub use store::{redacted_url, RedisConfig, RedisLayout, StoreBackend, StoreConfig};
pub use thresholds::Thresholds;
pub use warnings::ConfigWarning;
pub use window::WindowConfig;
pub use zero_hour::{parse_url as parse_doveadm_url, UserName, ZeroHourAction, ZeroHourConfig};

use std::path::Path;

/// The sections, in file order, each once: the whole configuration
/// ([`Config`]), its file form ([`raw::RawConfig`]), the reading, the
/// writing back and the reload split over every section are generated
/// from this list.
macro_rules! sections {
    ($($field:ident: $Ty:ident in $Raw:ident),* $(,)?) => {
        /// The whole validated configuration.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct Config {
            $(pub $field: $Ty,)*
        }

        /// The file as written: every section optional, unknown ones refused.
        #[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct RawConfig {
            $(pub $field: Option<raw::$Raw>,)*
        }

        impl Config {
            /// Fills defaults and validates, one section at a time in file
            /// order (each section's `TryFrom` holds its defaults and rules).
            ///
            /// # Errors
            /// `Invalid` naming the first bad key.
            pub fn from_raw(raw: RawConfig) -> Result<Config, ConfigError> {
                // No rule looks at two sections at once, so nothing is
                // checked here beyond the sections themselves. Fields are
                // evaluated in the order written: the first bad section is
                // the one reported.
                Ok(Config {
                    $($field: raw.$field.unwrap_or_default().try_into()?,)*
                })
            }

            /// A reload, in one place: the configuration in force after
            /// `new` (just loaded) replaces `self` (running), and the keys
            /// whose new values wait for a restart
            /// ([`Config::restart_needed`]). Each of those keeps its running
            /// value; every other key takes the new one. Which keys wait is
            /// declared with each key (`restart` in its section).
            pub fn reloaded(&self, new: &Config) -> (Config, Vec<Restart>) {
                let mut merged = new.clone();
                $(merged.$field.keep_running(&self.$field);)*
                (merged, self.restart_needed(new))
            }

            /// Keys whose change needs a restart, comparing `self` (running)
            /// with `new` (just loaded), in file order.
            /// [`Config::reloaded`] keeps exactly these.
            pub fn restart_needed(&self, new: &Config) -> Vec<Restart> {
                [$(self.$field.restart_needed(&new.$field),)*].concat()
            }

            /// Every key of the file, as dotted paths, in file order (the
            /// keys of `[store.redis]` after the sections).
            pub fn keys() -> impl Iterator<Item = &'static str> {
                [$($Ty::KEYS,)* RedisConfig::KEYS].into_iter().flatten().copied()
            }
        }

        impl From<&Config> for RawConfig {
            /// The configuration as the file would hold it (`check-config`).
            fn from(c: &Config) -> RawConfig {
                RawConfig {
                    $($field: Some((&c.$field).into()),)*
                }
            }
        }
    };
}

sections! {
    scan: ScanConfig in RawScan,
    normalize: NormalizeConfig in RawNormalize,
    fingerprint: FingerprintConfig in RawFingerprint,
    window: WindowConfig in RawWindow,
    exact: ExactConfig in RawExact,
    campaign: CampaignConfig in RawCampaign,
    thresholds: Thresholds in RawThresholds,
    allow: AllowConfig in RawAllow,
    own: OwnConfig in RawOwn,
    milter: MilterConfig in RawMilter,
    policy: PolicyConfig in RawPolicy,
    state: StateConfig in RawState,
    metrics: MetricsConfig in RawMetrics,
    alerts: AlertsConfig in RawAlerts,
    zero_hour: ZeroHourConfig in RawZeroHour,
    store: StoreConfig in RawStore,
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
        let mut cfg =
            Config::from_toml_str(&text).map_err(|e| e.with_origin(&path.display().to_string()))?;
        let relative = cfg.state.state_dir.is_relative();
        cfg.resolve_paths(path);
        let mut warnings = cfg.warnings_in(&text);
        let line = lines::line_of_key(&text, "state.state_dir");
        if relative && line.is_some() {
            // Files of earlier versions said `state_dir = "state"` and
            // meant the unit's working directory (/var/lib/bulkwatch). (A
            // file without the key keeps its state beside it, unwarned.)
            warnings.push(ConfigWarning {
                key: "state.state_dir",
                line,
                message: format!(
                    "relative: it means {} (the directory of this file), not the \
                     working directory; write an absolute path (the package's file \
                     names /var/lib/bulkwatch/state)",
                    cfg.state.state_dir.display()
                ),
            });
        }
        Ok((cfg, warnings))
    }

    /// Makes a relative `state.state_dir` of a configuration read from the
    /// file at `file` relative to the file's directory, not to the working
    /// directory of whoever reads it (a `unix:` milter socket must be
    /// absolute already):
    /// `bulkwatch campaigns list --config /etc/bulkwatch/bulkwatch.toml`
    /// finds the daemon's state from any directory. A directory that
    /// cannot be made absolute (gone) is taken as it is.
    pub fn resolve_paths(&mut self, file: &Path) {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => std::path::PathBuf::from("."),
        };
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        if self.state.state_dir.is_relative() {
            self.state.state_dir = dir.join(&self.state.state_dir);
        }
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
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(
            keys,
            vec![
                "scan.max_parse_bytes (fingerprints would no longer match the window)",
                "window.max_entries (sizes of the in-memory state)",
                "milter.socket (listeners are opened at start)",
                "milter.max_connections (listeners are opened at start)",
                "state.state_dir (the state directory is locked and read at start)",
                "metrics.listen (listeners are opened at start)",
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

    /// config/bulkwatch.toml documents the defaults: it must not drift. One
    /// value differs on purpose: the packaged file names the state
    /// directory absolutely (the built-in `state` is relative to the
    /// working directory, for a run without a file).
    #[test]
    fn shipped_config_equals_built_in_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bulkwatch.toml");
        let mut cfg = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.state.state_dir, Path::new("/var/lib/bulkwatch/state"));
        cfg.state.state_dir = Config::default().state.state_dir;
        assert_eq!(cfg, Config::default());
    }

    /// A relative state directory is the file's directory's.
    #[test]
    fn a_relative_state_dir_is_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("b.toml");
        std::fs::write(&file, "[state]\nstate_dir = \"here/state\"\n").unwrap();
        let (cfg, warnings) = Config::load_with_warnings(&file).unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(cfg.state.state_dir, base.join("here/state"));
        // ... and says so, with the line (files of earlier versions meant
        // the working directory).
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(
            (warnings[0].key, warnings[0].line),
            ("state.state_dir", Some(2))
        );
        std::fs::write(&file, "[state]\nstate_dir = \"/srv/bw\"\n").unwrap();
        assert_eq!(
            Config::load(&file).unwrap().state.state_dir,
            Path::new("/srv/bw")
        );
    }

    /// ... and shows every key, set or commented out (`# key =`), in its
    /// section (`[store.redis]` is a key of `[store]`).
    #[test]
    fn shipped_config_shows_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bulkwatch.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let mut section = String::new();
        let mut shown = std::collections::HashSet::new();
        for line in text.lines() {
            let line = line.trim_start_matches('#').trim();
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_owned();
                shown.insert(section.clone());
            } else if let Some((key, _)) = line.split_once('=') {
                shown.insert(format!("{section}.{}", key.trim()));
            }
        }
        let missing: Vec<&str> = Config::keys().filter(|k| !shown.contains(*k)).collect();
        assert!(
            missing.is_empty(),
            "not in config/bulkwatch.toml: {missing:?}"
        );
        assert!(Config::keys().count() > 60);
    }
}
