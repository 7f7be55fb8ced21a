//! `[exact]`: the exact-hash set, with a cap on the memory its Bloom filters take.

use super::section::*;
use super::{to_usize, ConfigError};

/// The most memory the exact set's Bloom filters may take, all generations
/// together (a typo such as `bloom_fp_rate = 1e-300` must not abort the
/// daemon on allocation).
pub const MAX_BLOOM_BYTES: u64 = 4 << 30;

/// The lowest `bloom_fp_rate` accepted: 43 bits per item. A lower rate
/// only grows the filters (`1e-300` would take 180 bytes per item): a
/// false positive costs one lookup in the LRU, which the SHA-256 then
/// settles.
pub const MIN_FP_RATE: f64 = 1e-9;

section! {
    /// The exact-hash set: rotating Bloom filters plus an LRU to the campaign.
    pub struct ExactConfig in RawExact as "exact" {
        bloom_items: usize = 1_000_000,
            file bloom_items: u64,
            read |k, v| to_usize(k, v, 16, 1 << 32),
            write to_u64,
            restart SIZES;
        bloom_fp_rate: f64 = 0.001,
            file bloom_fp_rate: f64,
            read |k, v| {
                if !(MIN_FP_RATE..0.5).contains(&v) {
                    return Err(ConfigError::invalid(
                        k,
                        format!("{v:e} must be at least {MIN_FP_RATE:e} and below 0.5"),
                    ));
                }
                Ok(v)
            },
            restart SIZES;
        generations: usize = 4,
            file generations: u32,
            read |k, v| to_usize(k, v.into(), 2, 16),
            write to_u32,
            restart SIZES;
        lru_capacity: usize = 100_000,
            file lru_capacity: u64,
            read |k, v| to_usize(k, v, 1, 1 << 24),
            write to_u64,
            restart SIZES;
    }
    check |c| {
        let bloom = c.bloom_bytes();
        if bloom > MAX_BLOOM_BYTES {
            return Err(ConfigError::invalid(
                "exact.bloom_items",
                format!(
                    "with exact.bloom_fp_rate = {} and exact.generations = {}, the Bloom \
                     filters would take {} MiB; the limit is {} MiB (fewer items or a \
                     higher rate)",
                    c.bloom_fp_rate,
                    c.generations,
                    bloom >> 20,
                    MAX_BLOOM_BYTES >> 20
                ),
            ));
        }
        Ok(())
    };
}

impl ExactConfig {
    /// Bytes the Bloom filters take, all generations together: each of the
    /// `generations` filters holds `bloom_items / (generations - 1)` items
    /// at `bloom_fp_rate` (`-ln p / ln² 2` bits per item, as `ExactSet`
    /// sizes them).
    pub fn bloom_bytes(&self) -> u64 {
        let slices = self.generations.saturating_sub(1).max(1);
        let per_gen = (self.bloom_items / slices).max(16) as f64;
        let bits_per_item = -self.bloom_fp_rate.ln() / (std::f64::consts::LN_2.powi(2));
        let bytes = per_gen * bits_per_item / 8.0 * self.generations.max(2) as f64;
        if bytes.is_finite() && bytes < u64::MAX as f64 {
            bytes.ceil() as u64
        } else {
            u64::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    fn raw(set: fn(&mut RawExact)) -> RawExact {
        let mut r = RawExact::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            ExactConfig::try_from(RawExact::default()).unwrap(),
            ExactConfig::default()
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        for (raw, key, message) in [
            (
                raw(|r| r.bloom_items = Some(15)),
                "exact.bloom_items",
                "15 is outside 16..=4294967296",
            ),
            (
                raw(|r| r.bloom_items = Some((1 << 32) + 1)),
                "exact.bloom_items",
                "4294967297 is outside 16..=4294967296",
            ),
            (
                raw(|r| r.bloom_fp_rate = Some(0.0)),
                "exact.bloom_fp_rate",
                "0e0 must be at least 1e-9 and below 0.5",
            ),
            (
                raw(|r| r.bloom_fp_rate = Some(1e-300)),
                "exact.bloom_fp_rate",
                "1e-300 must be at least 1e-9 and below 0.5",
            ),
            (
                raw(|r| r.bloom_fp_rate = Some(0.5)),
                "exact.bloom_fp_rate",
                "5e-1 must be at least 1e-9 and below 0.5",
            ),
            (
                raw(|r| r.bloom_fp_rate = Some(f64::NAN)),
                "exact.bloom_fp_rate",
                "NaN must be at least 1e-9 and below 0.5",
            ),
            (
                raw(|r| r.generations = Some(1)),
                "exact.generations",
                "1 is outside 2..=16",
            ),
            (
                raw(|r| r.generations = Some(17)),
                "exact.generations",
                "17 is outside 2..=16",
            ),
            (
                raw(|r| r.lru_capacity = Some(0)),
                "exact.lru_capacity",
                "0 is outside 1..=16777216",
            ),
            (
                raw(|r| r.lru_capacity = Some((1 << 24) + 1)),
                "exact.lru_capacity",
                "16777217 is outside 1..=16777216",
            ),
        ] {
            assert_eq!(
                refusal(ExactConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    /// Each value is in range, but together the filters would not fit in
    /// MAX_BLOOM_BYTES: refused, naming bloom_items and the other two keys.
    #[test]
    fn bloom_filters_over_the_memory_cap_are_refused() {
        let (key, message) = refusal(ExactConfig::try_from(raw(|r| {
            r.bloom_items = Some(1 << 32);
            r.bloom_fp_rate = Some(1e-9);
        })));
        assert_eq!(key, "exact.bloom_items");
        assert!(
            message.starts_with("with exact.bloom_fp_rate = 0.000000001")
                && message.contains(" and exact.generations = 4, the Bloom filters would take ")
                && message.ends_with(" MiB; the limit is 4096 MiB (fewer items or a higher rate)"),
            "{message}"
        );
    }
}
