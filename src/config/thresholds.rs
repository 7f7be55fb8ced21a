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
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            bulk_threshold: 20.0,
            suspect_threshold: 5.0,
            strong_distance: 2,
            strong_sketch_diff: 5,
            weak_match_weight: 0.5,
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
