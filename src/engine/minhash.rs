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
//!
//! And two more, of the message being judged only (never stored in the
//! window): the low 2 bits of the **second and third smallest** values
//! under each seed ([`MinSketch::deeper`]), for the containment test
//! ([`contained_misses`]); and the three smallest values whole
//! ([`MinSketch::smallest`]), from which [`probe_keys`] makes the other
//! band keys under which a text the message holds may be filed.

/// Number of minimums computed.
pub const MINHASHES: usize = 32;
/// Largest number of LSH bands (each band takes 2 minimums).
pub const MAX_BANDS: usize = 16;

/// Sketch and band keys of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinSketch {
    pub sketch: u64,
    pub bands: [u64; MAX_BANDS],
    /// Like `sketch`, for the second and the third smallest value under
    /// each seed (distinct words; a message of fewer words repeats its
    /// largest).
    pub deeper: [u64; 2],
    /// The three smallest values under each seed, whole: a band's keys
    /// for probing ([`probe_keys`]).
    pub smallest: [[u32; 3]; MINHASHES],
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
    // The three smallest per seed, kept sorted by min and max alone, so
    // that the loop stays branch-free and the compiler vectorizes it. A
    // repeated word gives a value already kept (or one past the third,
    // which stays past it): it is dropped, so the second and third are
    // other words than the smallest, without sorting the words first.
    let mut m1 = [u32::MAX; MINHASHES];
    let mut m2 = [u32::MAX; MINHASHES];
    let mut m3 = [u32::MAX; MINHASHES];
    for &h in features {
        let x = (h ^ (h >> 32)) as u32;
        for (((a, b), c), s) in m1
            .iter_mut()
            .zip(m2.iter_mut())
            .zip(m3.iter_mut())
            .zip(seeds)
        {
            let v = fmix32(x ^ s);
            let v = if v == *a || v == *b || v == *c {
                u32::MAX
            } else {
                v
            };
            let up = (*a).max(v);
            *a = (*a).min(v);
            let up2 = (*b).max(up);
            *b = (*b).min(up);
            *c = (*c).min(up2);
        }
    }
    // Fewer than three distinct words: the missing ranks repeat the
    // largest (each seed's values are a bijection of the words, so a rank
    // is missing under every seed or none).
    for ((a, b), c) in m1.iter().zip(m2.iter_mut()).zip(m3.iter_mut()) {
        if *b == u32::MAX {
            *b = *a;
        }
        if *c == u32::MAX {
            *c = *b;
        }
    }
    let pack = |m: &[u32; MINHASHES]| {
        m.iter()
            .enumerate()
            .fold(0u64, |acc, (i, v)| acc | u64::from(v & 3) << (2 * i))
    };
    let mut out = MinSketch {
        sketch: pack(&m1),
        deeper: [pack(&m2), pack(&m3)],
        ..MinSketch::default()
    };
    for (s, ((a, b), c)) in out.smallest.iter_mut().zip(m1.iter().zip(&m2).zip(&m3)) {
        *s = [*a, *b, *c];
    }
    for (b, key) in out.bands.iter_mut().zip(band_keys(&out.smallest)) {
        *b = key;
    }
    out
}

/// The key of a band from its two seeds' minimums.
pub fn band_key(a: u32, c: u32) -> u64 {
    mix(u64::from(a) ^ mix(u64::from(c) ^ 0x6261_6e64))
}

/// The band keys of the three smallest values under each band's two seeds
/// (`smallest`, per seed): a message's own, as [`min_sketch`] makes them
/// (and the log reader, from an entry's values).
pub fn band_keys(smallest: &[[u32; 3]]) -> impl Iterator<Item = u64> + '_ {
    smallest.chunks_exact(2).filter_map(|pair| match pair {
        [a, c] => Some(band_key(a[0], c[0])),
        _ => None,
    })
}

/// The keys under which band `j`'s table is probed for texts the message
/// may contain, besides the message's own band key: every pair of its
/// three smallest values under the band's two seeds (`smallest`, per
/// seed) but the pair of minimums. A text held whole by the message has
/// its minimum under a seed among the message's three smallest with
/// probability 1 - (1 - p)³ (p: the share of the message's words that
/// are the text's), so its band key is among these 9 with the square of
/// that ([`contained_misses`] is the same argument for the sketch).
pub fn probe_keys(smallest: &[[u32; 3]], j: usize) -> impl Iterator<Item = u64> + '_ {
    let (a, c) = (smallest.get(2 * j), smallest.get(2 * j + 1));
    (1..9).filter_map(move |k| Some(band_key(*a?.get(k / 3)?, *c?.get(k % 3)?)))
}

/// Positions (of 32) where any two-bit value differs: bit 2i set.
fn differing(x: u64) -> u64 {
    (x | (x >> 1)) & 0x5555_5555_5555_5555
}

/// How many of a stored text's 32 values (`text`, its sketch) are none of
/// the smallest three of a message (`sketch`, `deeper`): the containment
/// test of [`crate::engine::link::Rule::contains`].
///
/// Why the three smallest: when the message holds the whole text and more
/// (a diluted copy), the text's minimum under a seed is one of the
/// message's values, the first of the text's words in the message's
/// order. With a share p of the message's words from the text, it is the
/// message's smallest with probability p, one of its three smallest with
/// 1 - (1 - p)³: for p = 2/3, 96% (and the three values match by chance
/// most of the other times), so a copy diluted by half misses under one
/// value of 32 (0.37 in the unit test), where its sketch differs in about
/// eight. A text whose words are only
/// partly in the message misses a value when its minimum falls on a word
/// the message lacks and the message's three values do not match it by
/// chance (42%): with 80% of the text's words in the message, about three
/// misses (3.3 in the unit test).
pub fn contained_misses(text: u64, sketch: u64, deeper: [u64; 2]) -> u32 {
    (differing(text ^ sketch) & differing(text ^ deeper[0]) & differing(text ^ deeper[1]))
        .count_ones()
}

/// Number of the 32 two-bit values that differ between two sketches.
pub fn sketch_diff(a: u64, b: u64) -> u32 {
    differing(a ^ b).count_ones()
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

    /// The second and third smallest are of other words than the
    /// smallest: repeats change nothing, and a message of fewer than
    /// three words repeats its largest.
    #[test]
    fn deeper_values_are_of_distinct_words() {
        let s = seeds((5, 6));
        let words = set(0..50);
        let mut twice = words.clone();
        twice.extend(&words);
        assert_eq!(min_sketch(&twice, &s), min_sketch(&words, &s));
        let one = min_sketch(&set(0..1), &s);
        assert_eq!(one.deeper, [one.sketch; 2]);
        let two = min_sketch(&set(0..2), &s);
        assert_eq!(two.deeper[0], two.deeper[1]);
        assert_ne!(two.deeper[0], two.sketch);
    }

    /// Over 200 draws: a text held whole by a message half as large again
    /// misses 0.37 values of 32 on average; a text a fifth of which the
    /// message lacks, 3.3; an unrelated text, 13.7.
    #[test]
    fn contained_texts_miss_few_values() {
        let s = seeds((8, 9));
        let n = 200;
        let mut total = [0u32; 3];
        for t in 0..n {
            let base = t * 10_000;
            let text = set(base..base + 100);
            let mut whole = text.clone();
            whole.extend(set(base + 5000..base + 5050));
            let mut partly = set(base..base + 80);
            partly.extend(set(base + 5000..base + 5070));
            let other = set(base + 7000..base + 7150);
            let a = min_sketch(&text, &s).sketch;
            for (k, msg) in [whole, partly, other].iter().enumerate() {
                let m = min_sketch(msg, &s);
                total[k] += contained_misses(a, m.sketch, m.deeper);
            }
        }
        let mean = total.map(|x| f64::from(x) / n as f64);
        assert!(mean[0] < 1.5, "{mean:?}");
        assert!((2.5..5.0).contains(&mean[1]), "{mean:?}");
        assert!(mean[2] > 10.0, "{mean:?}");
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
