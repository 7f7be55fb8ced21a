//! `[thresholds]`: when a campaign is suspect or bulk, and how matches are weighed.

use super::raw::RawThresholds;
use super::{in_range, ConfigError};

/// When a campaign is suspect or bulk.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Weighted recipients at which a campaign is bulk.
    pub bulk_threshold: f64,
    /// Weighted recipients at which a campaign is suspect.
    pub suspect_threshold: f64,
    /// Near matches at this distance or less count in full.
    pub strong_distance: u32,
    /// Matches whose sketch differs in at most this many values count in full.
    pub strong_sketch_diff: u32,
    /// Weight of a near match farther than `strong_distance`.
    pub weak_match_weight: f64,
    /// A message alone in its campaign (it matched nothing in the window)
    /// is judged by its own recipients only when they exceed this number;
    /// otherwise it is clean. One transaction to a few dozen local
    /// subscribers is no evidence of a campaign; 5,000 RCPT TO are. 0
    /// judges every message by its recipients (the rule until 2026-11-26).
    pub single_transaction_recipients: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            bulk_threshold: 20.0,
            suspect_threshold: 5.0,
            strong_distance: 2,
            strong_sketch_diff: 5,
            weak_match_weight: 0.5,
            single_transaction_recipients: 100,
        }
    }
}

impl TryFrom<RawThresholds> for Thresholds {
    type Error = ConfigError;

    fn try_from(raw: RawThresholds) -> Result<Self, ConfigError> {
        let RawThresholds {
            bulk_threshold,
            suspect_threshold,
            strong_distance,
            strong_sketch_diff,
            weak_match_weight,
            single_transaction_recipients,
        } = raw;
        let mut c = Thresholds::default();
        if let Some(v) = bulk_threshold {
            c.bulk_threshold = in_range("thresholds.bulk_threshold", v, 1.0, 1e9)?;
        }
        if let Some(v) = suspect_threshold {
            c.suspect_threshold = in_range("thresholds.suspect_threshold", v, 1.0, 1e9)?;
        }
        if let Some(v) = strong_distance {
            c.strong_distance = in_range("thresholds.strong_distance", v, 0, 7)?;
        }
        if let Some(v) = strong_sketch_diff {
            c.strong_sketch_diff = in_range("thresholds.strong_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = weak_match_weight {
            c.weak_match_weight = in_range("thresholds.weak_match_weight", v, 0.0, 1.0)?;
        }
        if let Some(v) = single_transaction_recipients {
            // A message counts at most 65,535 recipients (Envelope).
            c.single_transaction_recipients =
                in_range("thresholds.single_transaction_recipients", v, 0, 65_535)?;
        }
        if c.suspect_threshold > c.bulk_threshold {
            return Err(ConfigError::invalid(
                "thresholds.suspect_threshold",
                format!(
                    "{} is above thresholds.bulk_threshold ({})",
                    c.suspect_threshold, c.bulk_threshold
                ),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;
    use crate::config::Config;

    fn raw(set: fn(&mut RawThresholds)) -> RawThresholds {
        let mut r = RawThresholds::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            Thresholds::try_from(RawThresholds::default()).unwrap(),
            Thresholds::default()
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        for (raw, key, message) in [
            (
                raw(|r| r.bulk_threshold = Some(0.5)),
                "thresholds.bulk_threshold",
                "0.5 is outside 1..=1000000000",
            ),
            (
                raw(|r| r.bulk_threshold = Some(f64::NAN)),
                "thresholds.bulk_threshold",
                "NaN is outside 1..=1000000000",
            ),
            (
                raw(|r| r.suspect_threshold = Some(2e9)),
                "thresholds.suspect_threshold",
                "2000000000 is outside 1..=1000000000",
            ),
            (
                raw(|r| r.strong_distance = Some(8)),
                "thresholds.strong_distance",
                "8 is outside 0..=7",
            ),
            (
                raw(|r| r.strong_sketch_diff = Some(33)),
                "thresholds.strong_sketch_diff",
                "33 is outside 0..=32",
            ),
            (
                raw(|r| r.weak_match_weight = Some(-0.1)),
                "thresholds.weak_match_weight",
                "-0.1 is outside 0..=1",
            ),
            (
                raw(|r| r.single_transaction_recipients = Some(65_536)),
                "thresholds.single_transaction_recipients",
                "65536 is outside 0..=65535",
            ),
            (
                raw(|r| r.weak_match_weight = Some(1.5)),
                "thresholds.weak_match_weight",
                "1.5 is outside 0..=1",
            ),
            // Against the default bulk threshold (20) too.
            (
                raw(|r| r.suspect_threshold = Some(25.0)),
                "thresholds.suspect_threshold",
                "25 is above thresholds.bulk_threshold (20)",
            ),
            (
                raw(|r| r.bulk_threshold = Some(3.0)),
                "thresholds.suspect_threshold",
                "5 is above thresholds.bulk_threshold (3)",
            ),
        ] {
            assert_eq!(
                refusal(Thresholds::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn suspect_may_equal_bulk() {
        let t = Thresholds::try_from(raw(|r| {
            r.bulk_threshold = Some(7.0);
            r.suspect_threshold = Some(7.0);
        }))
        .unwrap();
        assert_eq!((t.suspect_threshold, t.bulk_threshold), (7.0, 7.0));
    }

    #[test]
    fn suspect_above_bulk_is_refused() {
        let err =
            Config::from_toml_str("[thresholds]\nbulk_threshold = 5.0\nsuspect_threshold = 9.0\n")
                .unwrap_err();
        assert_eq!(err.key(), Some("thresholds.suspect_threshold"));
    }
}
