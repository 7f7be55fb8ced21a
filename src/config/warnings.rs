//! Valid values that are probably mistakes: `check-config` prints them
//! and `serve` logs them, at start and on reload. None of them stops a
//! file from loading (the built-in key's warning is
//! `cli::keygen::public_key_warning`).

use super::lines::line_of_key;
use super::Config;

/// A value that loads but is probably not what the admin meant.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigWarning {
    /// The dotted key path (`window.window_secs`).
    pub key: &'static str,
    /// The key's 1-based line in the file, when it is there.
    pub line: Option<usize>,
    /// Why the value is suspicious.
    pub message: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(n) = self.line {
            write!(f, "line {n}: ")?;
        }
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// Below this, a window misses campaigns sent over an afternoon.
const SHORT_WINDOW_SECS: u64 = 3600;
/// Above this, recurring mail (weekly newsletters, reminders) becomes one
/// campaign.
const LONG_WINDOW_SECS: u64 = 7 * 86400;
/// Exact hashes remembered: fewer than this forget a busy hour's mail.
const SMALL_LRU: usize = 1000;

impl Config {
    /// The suspicious values of this configuration, without lines (see
    /// [`Config::warnings_in`]).
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        let mut w = Vec::new();
        let mut warn = |key: &'static str, message: String| {
            w.push(ConfigWarning {
                key,
                line: None,
                message,
            });
        };
        let window = self.window.window.as_secs();
        if window < SHORT_WINDOW_SECS {
            warn(
                "window.window_secs",
                format!(
                    "{window} s is under an hour: a campaign sent over a few hours is counted \
                     in pieces, none of which may reach the thresholds"
                ),
            );
        }
        if window > LONG_WINDOW_SECS {
            warn(
                "window.window_secs",
                format!(
                    "{window} s is over 7 days: weekly newsletters and reminders become \
                     campaigns, and window.max_entries ({}) may evict mail before it leaves \
                     the window",
                    self.window.max_entries
                ),
            );
        }
        let t = &self.thresholds;
        if t.bulk_threshold < 3.0 {
            warn(
                "thresholds.bulk_threshold",
                format!(
                    "{} makes one message to {} recipients bulk (a mail to a few colleagues)",
                    t.bulk_threshold,
                    t.bulk_threshold.ceil().max(1.0)
                ),
            );
        }
        if t.suspect_threshold == t.bulk_threshold {
            warn(
                "thresholds.suspect_threshold",
                "equals thresholds.bulk_threshold: no campaign is ever suspect, only bulk".into(),
            );
        }
        if !self.alerts.to.is_empty() && self.alerts.min_interval.is_zero() {
            warn(
                "alerts.min_interval_secs",
                "0: every campaign that turns bulk mails alerts.to, so a burst of campaigns \
                 is a burst of alerts"
                    .into(),
            );
        }
        if self.exact.lru_capacity < SMALL_LRU {
            warn(
                "exact.lru_capacity",
                format!(
                    "{} exact hashes remembered: an exact copy seen more than {} messages \
                     ago no longer finds its campaign",
                    self.exact.lru_capacity, self.exact.lru_capacity
                ),
            );
        }
        if self.store.redis.layout == crate::config::RedisLayout::RetiredScript {
            warn(
                "store.redis.layout",
                "\"script\" is retired: the log layout is used, and the file may drop the \
                 line. Daemons of one site share campaigns once all run this version \
                 (CHANGELOG.md)"
                    .into(),
            );
        }
        w
    }

    /// [`Config::warnings`] with the line of each key in `text`, the file
    /// this configuration was read from.
    pub fn warnings_in(&self, text: &str) -> Vec<ConfigWarning> {
        let mut w = self.warnings();
        for x in &mut w {
            x.line = line_of_key(text, x.key);
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_and_the_shipped_file_raise_no_warning() {
        assert_eq!(Config::default().warnings(), vec![]);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/bulkwatch.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let cfg = Config::from_toml_str(&text).unwrap();
        assert_eq!(cfg.warnings_in(&text), vec![]);
    }

    /// A file written for an earlier version names the retired script
    /// layout: it starts, on the log layout, and says so.
    #[test]
    fn the_retired_script_layout_is_read_as_the_log_with_a_warning() {
        let text = "[store]\nbackend = \"redis\"\n\n[store.redis]\nlayout = \"script\"\n";
        let cfg = Config::from_toml_str(text).unwrap();
        let w = cfg.warnings_in(text);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!((w[0].key, w[0].line), ("store.redis.layout", Some(5)));
        assert!(w[0].message.contains("retired"), "{}", w[0]);
        let log = Config::from_toml_str(&text.replace("script", "log")).unwrap();
        assert_eq!(log.warnings(), vec![]);
    }

    #[test]
    fn alert_floods_are_warned() {
        let text = "[campaign]\nkeep_subjects = true\n\n[alerts]\nto = [\"ops@example.org\"]\n\
                    min_interval_secs = 0\n";
        let cfg = Config::from_toml_str(text).unwrap();
        let w: Vec<(&str, Option<usize>)> = cfg
            .warnings_in(text)
            .iter()
            .map(|w| (w.key, w.line))
            .collect();
        assert_eq!(w, [("alerts.min_interval_secs", Some(6))]);
    }

    #[test]
    fn suspicious_values_are_warned_with_their_lines() {
        let text = "[window]\nwindow_secs = 60\n\n[thresholds]\nbulk_threshold = 2.0\n\
                    suspect_threshold = 2.0\n[exact]\nlru_capacity = 10\n";
        let cfg = Config::from_toml_str(text).unwrap();
        let w = cfg.warnings_in(text);
        let got: Vec<_> = w.iter().map(|w| (w.key, w.line)).collect();
        assert_eq!(
            got,
            vec![
                ("window.window_secs", Some(2)),
                ("thresholds.bulk_threshold", Some(5)),
                ("thresholds.suspect_threshold", Some(6)),
                ("exact.lru_capacity", Some(8)),
            ]
        );
        assert!(w[0]
            .to_string()
            .starts_with("line 2: window.window_secs: 60 s"));
    }

    #[test]
    fn a_long_window_is_warned_and_a_default_has_no_line() {
        let text = "[window]\nwindow_secs = 1209600\n";
        let cfg = Config::from_toml_str(text).unwrap();
        let w = cfg.warnings_in(text);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!((w[0].key, w[0].line), ("window.window_secs", Some(2)));
        let mut cfg = Config::default();
        cfg.exact.lru_capacity = 5;
        let w = cfg.warnings_in("");
        assert_eq!(
            w[0].to_string(),
            format!("exact.lru_capacity: {}", w[0].message)
        );
    }
}
