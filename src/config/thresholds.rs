//! `[thresholds]`: when a campaign is suspect or bulk, and how matches are weighed.

use super::section::*;
use super::{in_range, ConfigError};

section! {
    /// When a campaign is suspect or bulk.
    pub struct Thresholds in RawThresholds as "thresholds" {
        /// Weighted recipients at which a campaign is bulk.
        bulk_threshold: f64 = 20.0,
            file bulk_threshold: f64, read |k, v| in_range(k, v, 1.0, 1e9);
        /// Weighted recipients at which a campaign is suspect.
        suspect_threshold: f64 = 5.0,
            file suspect_threshold: f64, read |k, v| in_range(k, v, 1.0, 1e9);
        /// Near matches at this distance or less count in full.
        strong_distance: u32 = 2,
            file strong_distance: u32, read |k, v| in_range(k, v, 0, 7);
        /// Matches whose sketch differs in at most this many values count in full.
        strong_sketch_diff: u32 = 5,
            file strong_sketch_diff: u32, read |k, v| in_range(k, v, 0, 32);
        /// Weight of a near match farther than `strong_distance`.
        weak_match_weight: f64 = 0.5,
            file weak_match_weight: f64, read |k, v| in_range(k, v, 0.0, 1.0);
        /// A message alone in its campaign (it matched nothing in the window)
        /// is judged by its own recipients only when they exceed this number;
        /// otherwise it is clean. One transaction to a few dozen local
        /// subscribers is no evidence of a campaign; 5,000 RCPT TO are. 0
        /// judges every message by its recipients (the rule until 2026-11-26).
        /// A message counts at most 65,535 recipients (`Envelope`).
        single_transaction_recipients: u32 = 100,
            file single_transaction_recipients: u32, read |k, v| in_range(k, v, 0, 65_535);
    }
    check |c| {
        if c.suspect_threshold > c.bulk_threshold {
            return Err(ConfigError::invalid(
                "thresholds.suspect_threshold",
                format!(
                    "{} is above thresholds.bulk_threshold ({})",
                    c.suspect_threshold, c.bulk_threshold
                ),
            ));
        }
        Ok(())
    };
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
