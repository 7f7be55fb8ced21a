//! MinHash (Broder 1997): a second, set-based view of a message's features,
//! used to find and verify near-duplicates that simhash places too far apart.
//!
//! Why: with k = 3 on 64 bits, simhash links only pairs of very high
//! similarity. Measured on the SpamAssassin corpus, pairs with Jaccard 0.85
//! to 0.96 (word 4-shingles) were 5 to 6 bits apart, and in theory a pair at
//! Jaccard 0.8 is about 10 bits apart. MinHash estimates Jaccard directly.
//!
//! From the features of [`crate::engine::shingle::Shingles`] this computes
//! [`MINHASHES`] minimums, each over `fmix32(x ^ seed_i)` (x: the feature
//! folded to 32 bits) with seeds derived from the fingerprint key. Two
//! outputs are kept per message:
//! - a 64-bit **sketch**: the low 2 bits of each minimum (b-bit MinHash, Li
//!   and König 2010). Two minimums are equal with probability J, so the
//!   number of differing 2-bit values estimates 1 - J;
//! - **band keys** for LSH: band j hashes minimums 2j and 2j+1; two messages
//!   share band j with probability about J².

/// Number of minimums computed.
pub const MINHASHES: usize = 32;
/// Largest number of LSH bands (each band takes 2 minimums).
pub const MAX_BANDS: usize = 16;

/// Sketch and band keys of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinSketch {
    pub sketch: u64,
    pub bands: [u64; MAX_BANDS],
}

/// SplitMix64's finalizer: a fast, well-mixed permutation of u64 (also
/// combines shingle hashes in `crate::engine::shingle`).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Per-minimum seeds derived from the fingerprint key: the high halves of
/// a SplitMix64 stream started from `k0 ^ rotl(k1, 32)`.
pub fn seeds(key: (u64, u64)) -> [u32; MINHASHES] {
    let mut s = [0u32; MINHASHES];
    let mut state = key.0 ^ key.1.rotate_left(32);
    for x in s.iter_mut() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        *x = (mix(state) >> 32) as u32;
    }
    s
}

/// MurmurHash3's 32-bit finalizer: a bijection of u32 with full
/// avalanche.
pub fn fmix32(mut v: u32) -> u32 {
    v ^= v >> 16;
    v = v.wrapping_mul(0x85EB_CA6B);
    v ^= v >> 13;
    v = v.wrapping_mul(0xC2B2_AE35);
    v ^ (v >> 16)
}

/// Computes the sketch and band keys of a set of feature hashes (repeats
/// change nothing: MinHash estimates set resemblance).
///
/// Minimum i is over `fmix32(x ^ seed_i)`, where x folds a feature's 64
/// bits to 32 (`lo ^ hi`): 32-bit lanes, so the compiler computes four
/// minimums per SSE instruction, several times faster than the 64-bit
/// SplitMix finalizer per minimum of fingerprint version 2. (Two of a
/// message's features share x with probability about n² / 2^33: none in
/// practice.)
pub fn min_sketch(features: &[u64], seeds: &[u32; MINHASHES]) -> MinSketch {
    let mut mins = [u32::MAX; MINHASHES];
    for &h in features {
        let x = (h ^ (h >> 32)) as u32;
        for (m, s) in mins.iter_mut().zip(seeds) {
            *m = (*m).min(fmix32(x ^ s));
        }
    }
    let mut out = MinSketch::default();
    for (i, m) in mins.iter().enumerate() {
        out.sketch |= u64::from(m & 3) << (2 * i);
    }
    for (j, b) in out.bands.iter_mut().enumerate() {
        let (a, c) = (
            u64::from(mins.get(2 * j).copied().unwrap_or(0)),
            u64::from(mins.get(2 * j + 1).copied().unwrap_or(0)),
        );
        *b = mix(a ^ mix(c ^ 0x6261_6e64));
    }
    out
}

/// Number of the 32 two-bit values that differ between two sketches.
pub fn sketch_diff(a: u64, b: u64) -> u32 {
    let x = a ^ b;
    ((x | (x >> 1)) & 0x5555_5555_5555_5555).count_ones()
}

/// Estimated Jaccard resemblance from a sketch difference: a 2-bit value
/// differs with probability (1 - J)·3/4, so J ≈ 1 - diff/32 · 4/3.
pub fn jaccard_estimate(diff: u32) -> f64 {
    (1.0 - f64::from(diff) / MINHASHES as f64 * 4.0 / 3.0).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(range: std::ops::Range<u64>) -> Vec<u64> {
        range.map(mix).collect()
    }

    #[test]
    fn identical_sets_have_identical_sketches() {
        let s = seeds((1, 2));
        assert_eq!(min_sketch(&set(0..100), &s), min_sketch(&set(0..100), &s));
        assert_eq!(sketch_diff(5, 5), 0);
    }

    #[test]
    fn sketch_diff_counts_two_bit_values() {
        assert_eq!(sketch_diff(0b00, 0b11), 1);
        assert_eq!(sketch_diff(0b0101, 0b1010), 2);
        assert_eq!(sketch_diff(0, u64::MAX), 32);
    }

    #[test]
    fn estimate_tracks_jaccard() {
        // 1000 pairs of sets with Jaccard 0.8 (900 shared of 1000 each...
        // |A∩B| = 800, |A∪B| = 1000).
        let s = seeds((3, 4));
        let mut total = 0.0;
        let n = 200;
        for t in 0..n {
            let base = t * 10_000;
            let a = set(base..base + 900);
            let b = set(base + 100..base + 1000);
            total += jaccard_estimate(sketch_diff(
                min_sketch(&a, &s).sketch,
                min_sketch(&b, &s).sketch,
            ));
        }
        let mean = total / n as f64;
        assert!((mean - 0.8).abs() < 0.05, "{mean}");
    }
}
