//! `[window]`: the sliding window of recent fingerprints and its match bounds.

use std::time::Duration;

use super::section::*;
use super::{in_range, to_usize, ConfigError};

section! {
    /// The sliding window of recent fingerprints.
    pub struct WindowConfig in RawWindow as "window" {
        window: Duration = Duration::from_secs(6 * 3600),
            file window_secs: u64,
            read |k, v| secs_in(k, v, 60, 30 * 86400),
            write to_secs,
            restart SIZES;
        max_entries: usize = 1_000_000,
            file max_entries: u64,
            read |k, v| to_usize(k, v, 16, 1 << 30),
            write to_u64,
            restart SIZES;
        /// Near-duplicate radius k: fingerprints within this Hamming distance match.
        max_distance: u32 = 3,
            file max_distance: u32,
            read |k, v| in_range(k, v, 0, 7),
            restart SIZES;
        /// MinHash LSH band tables (0 turns the second stage off).
        minhash_bands: usize = 4,
            file minhash_bands: u32,
            read |k, v| to_usize(k, v.into(), 0, 16),
            write to_u32,
            restart SIZES;
        /// A band candidate matches when at most this many of its 32 sketch
        /// values differ (8 ≈ estimated Jaccard 0.67).
        max_sketch_diff: u32 = 8,
            file max_sketch_diff: u32,
            read |k, v| in_range(k, v, 0, 32),
            restart LINKS;
        /// ... and when its simhash is at most this far (two long texts can
        /// share most of their vocabulary and nothing else).
        max_minhash_distance: u32 = 16,
            file max_minhash_distance: u32,
            read |k, v| in_range(k, v, 0, 64),
            restart LINKS;
        /// Distinct texts (MinHash sketches) of a campaign that must match a
        /// message with no strong match for it to join (weak matches and band
        /// candidates within the two bounds below count; see
        /// `crate::engine::link`). 0: single link, the rule before linking
        /// asked for corroboration (any match joins and merges).
        corroborating_matches: usize = 2,
            file corroborating_matches: u32,
            read |k, v| {
                if v == 1 {
                    // One entry within the looser bounds is no evidence.
                    return Err(ConfigError::invalid(
                        k,
                        "1 is not allowed: 0 links on any single match, 2 to 256 ask that many texts",
                    ));
                }
                to_usize(k, v.into(), 0, 256)
            },
            write to_u32,
            restart LINKS;
        /// Most differing sketch values of a corroborating entry.
        corroborating_sketch_diff: u32 = 10,
            file corroborating_sketch_diff: u32,
            read |k, v| in_range(k, v, 0, 32),
            restart LINKS;
        /// Farthest simhash of a corroborating entry.
        corroborating_distance: u32 = 20,
            file corroborating_distance: u32,
            read |k, v| in_range(k, v, 0, 64),
            restart LINKS;
        /// A message that holds nearly all of a text of 40 features or more
        /// and is at least as large (a copy diluted with other words; a
        /// reply or forward: 64 features and a tenth larger) joins that
        /// text's campaign with a copy's weight, merging nothing and never
        /// an allowed campaign (`crate::engine::link`).
        containment: bool = true, file containment: bool, restart LINKS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;
    use crate::config::Config;

    fn raw(set: fn(&mut RawWindow)) -> RawWindow {
        let mut r = RawWindow::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            WindowConfig::try_from(RawWindow::default()).unwrap(),
            WindowConfig::default()
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        for (raw, key, message) in [
            (
                raw(|r| r.window_secs = Some(59)),
                "window.window_secs",
                "59 is outside 60..=2592000",
            ),
            (
                raw(|r| r.window_secs = Some(30 * 86400 + 1)),
                "window.window_secs",
                "2592001 is outside 60..=2592000",
            ),
            (
                raw(|r| r.max_entries = Some(15)),
                "window.max_entries",
                "15 is outside 16..=1073741824",
            ),
            (
                raw(|r| r.max_entries = Some((1 << 30) + 1)),
                "window.max_entries",
                "1073741825 is outside 16..=1073741824",
            ),
            (
                raw(|r| r.max_distance = Some(8)),
                "window.max_distance",
                "8 is outside 0..=7",
            ),
            (
                raw(|r| r.minhash_bands = Some(17)),
                "window.minhash_bands",
                "17 is outside 0..=16",
            ),
            (
                raw(|r| r.max_sketch_diff = Some(33)),
                "window.max_sketch_diff",
                "33 is outside 0..=32",
            ),
            (
                raw(|r| r.max_minhash_distance = Some(65)),
                "window.max_minhash_distance",
                "65 is outside 0..=64",
            ),
            (
                raw(|r| r.corroborating_matches = Some(1)),
                "window.corroborating_matches",
                "1 is not allowed: 0 links on any single match, 2 to 256 ask that many texts",
            ),
            (
                raw(|r| r.corroborating_matches = Some(257)),
                "window.corroborating_matches",
                "257 is outside 0..=256",
            ),
            (
                raw(|r| r.corroborating_sketch_diff = Some(33)),
                "window.corroborating_sketch_diff",
                "33 is outside 0..=32",
            ),
            (
                raw(|r| r.corroborating_distance = Some(65)),
                "window.corroborating_distance",
                "65 is outside 0..=64",
            ),
        ] {
            assert_eq!(
                refusal(WindowConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn zero_turns_the_second_stage_and_corroboration_off() {
        let c = WindowConfig::try_from(raw(|r| {
            r.minhash_bands = Some(0);
            r.corroborating_matches = Some(0);
        }))
        .unwrap();
        assert_eq!((c.minhash_bands, c.corroborating_matches), (0, 0));
    }

    #[test]
    fn one_corroborating_entry_is_refused() {
        let err = Config::from_toml_str("[window]\ncorroborating_matches = 1\n").unwrap_err();
        assert_eq!(err.key(), Some("window.corroborating_matches"));
        for v in [0, 2, 256] {
            let toml = format!("[window]\ncorroborating_matches = {v}\n");
            assert_eq!(
                Config::from_toml_str(&toml)
                    .unwrap()
                    .window
                    .corroborating_matches,
                v
            );
        }
    }
}
