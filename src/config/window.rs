//! `[window]`: the sliding window of recent fingerprints and its match bounds.

use std::time::Duration;

use super::raw::RawWindow;
use super::{in_range, to_usize, ConfigError};

/// The sliding window of recent fingerprints.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowConfig {
    pub window: Duration,
    pub max_entries: usize,
    /// Near-duplicate radius k: fingerprints within this Hamming distance match.
    pub max_distance: u32,
    /// MinHash LSH band tables (0 turns the second stage off).
    pub minhash_bands: usize,
    /// A band candidate matches when at most this many of its 32 sketch
    /// values differ (8 ≈ estimated Jaccard 0.67).
    pub max_sketch_diff: u32,
    /// ... and when its simhash is at most this far (two long texts can
    /// share most of their vocabulary and nothing else).
    pub max_minhash_distance: u32,
    /// Distinct texts (MinHash sketches) of a campaign that must match a
    /// message with no strong match for it to join (weak matches and band
    /// candidates within the two bounds below count; see
    /// `crate::engine::link`). 0: single link, the rule before linking
    /// asked for corroboration (any match joins and merges).
    pub corroborating_matches: usize,
    /// Most differing sketch values of a corroborating entry.
    pub corroborating_sketch_diff: u32,
    /// Farthest simhash of a corroborating entry.
    pub corroborating_distance: u32,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            window: Duration::from_secs(6 * 3600),
            max_entries: 1_000_000,
            max_distance: 3,
            minhash_bands: 4,
            max_sketch_diff: 8,
            max_minhash_distance: 16,
            corroborating_matches: 2,
            corroborating_sketch_diff: 10,
            corroborating_distance: 20,
        }
    }
}

impl TryFrom<RawWindow> for WindowConfig {
    type Error = ConfigError;

    fn try_from(raw: RawWindow) -> Result<Self, ConfigError> {
        let RawWindow {
            window_secs,
            max_entries,
            max_distance,
            minhash_bands,
            max_sketch_diff,
            max_minhash_distance,
            corroborating_matches,
            corroborating_sketch_diff,
            corroborating_distance,
        } = raw;
        let mut c = WindowConfig::default();
        if let Some(v) = window_secs {
            c.window = Duration::from_secs(in_range("window.window_secs", v, 60, 30 * 86400)?);
        }
        if let Some(v) = max_entries {
            c.max_entries = to_usize("window.max_entries", v, 16, 1 << 30)?;
        }
        if let Some(v) = max_distance {
            c.max_distance = in_range("window.max_distance", v, 0, 7)?;
        }
        if let Some(v) = minhash_bands {
            c.minhash_bands = to_usize("window.minhash_bands", v.into(), 0, 16)?;
        }
        if let Some(v) = max_sketch_diff {
            c.max_sketch_diff = in_range("window.max_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = max_minhash_distance {
            c.max_minhash_distance = in_range("window.max_minhash_distance", v, 0, 64)?;
        }
        if let Some(v) = corroborating_matches {
            if v == 1 {
                // One entry within the looser bounds is no evidence.
                return Err(ConfigError::invalid(
                    "window.corroborating_matches",
                    "1 is not allowed: 0 links on any single match, 2 to 256 ask that many texts",
                ));
            }
            c.corroborating_matches = to_usize("window.corroborating_matches", v.into(), 0, 256)?;
        }
        if let Some(v) = corroborating_sketch_diff {
            c.corroborating_sketch_diff = in_range("window.corroborating_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = corroborating_distance {
            c.corroborating_distance = in_range("window.corroborating_distance", v, 0, 64)?;
        }
        Ok(c)
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
