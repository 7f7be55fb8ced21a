//! Features to [`Fingerprint`]: a 64-bit simhash and the exact SHA-256.
//!
//! Simhash (Charikar 2002): for every bit position, add a feature's weight
//! when the bit is set in the feature's hash and subtract it when not; the
//! sign of the sum gives the bit (a sum of zero gives 0). The weight grows
//! with the feature's frequency in the message, sublinearly: 1 + ⌊log2 tf⌋.
//! Raw counts let one repeated shingle (a table of numbers, a row of dashes)
//! outweigh the rest of the text, so that unrelated messages get the same
//! simhash; measured on the SpamAssassin easy-ham set, raw counts chained 88
//! unrelated messages into one campaign. Two messages whose weighted feature
//! vectors have angle θ differ in about 64·θ/π bits.
//!
//! [`VERSION`] changes with any change to tokenizing, normalizing or hashing;
//! `fixtures/vectors/fingerprint-v<N>.tsv` pins it.

use sha2::{Digest, Sha256};

use crate::shingle::Shingles;

/// Version of the fingerprint algorithm (normalization + shingles + hashes).
pub const VERSION: u8 = 2;

/// The fingerprints of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub simhash: u64,
    /// SHA-256 of the normalized text and the attachment hashes.
    pub exact: [u8; 32],
    /// Number of distinct features behind `simhash`.
    pub features: u32,
    /// MinHash sketch and LSH band keys (see `crate::minhash`).
    pub min: crate::minhash::MinSketch,
    pub version: u8,
}

/// The weight of a feature seen `tf` times: 1 + ⌊log2 tf⌋.
pub fn weight(tf: u32) -> i64 {
    1 + i64::from(tf.max(1).ilog2())
}

/// Charikar's simhash of weighted features.
pub fn simhash(shingles: &Shingles) -> u64 {
    // Per bit, the weight of the features that set it, and the total:
    // the signed sum is 2 * set - total. Branch-free over i32 lanes, so the
    // compiler vectorizes the inner loop; a weight is at most 33, so a
    // chunk of 2^20 features cannot overflow an i32 before it is added to
    // the i64 sums.
    let mut set = [0i64; 64];
    let mut total = 0i64;
    for chunk in shingles.features.chunks(1 << 20) {
        let mut part = [0i32; 64];
        for &(h, tf) in chunk {
            let w = weight(tf) as i32;
            total += i64::from(w);
            for (bit, sum) in part.iter_mut().enumerate() {
                *sum += w & -(((h >> bit) & 1) as i32);
            }
        }
        for (s, p) in set.iter_mut().zip(part) {
            *s += i64::from(p);
        }
    }
    set.iter().enumerate().fold(
        0u64,
        |acc, (bit, &s)| if 2 * s > total { acc | (1 << bit) } else { acc },
    )
}

/// SHA-256 over the normalized text, then each attachment hash.
pub fn exact_hash(normalized_text: &str, attachments: &[[u8; 32]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(normalized_text.as_bytes());
    for a in attachments {
        h.update([0u8]);
        h.update(a);
    }
    h.finalize().into()
}

/// Number of differing bits.
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Estimated cosine similarity of the two weighted feature vectors from the
/// Hamming distance of their simhashes: cos(π·d/64).
pub fn resemblance(distance: u32) -> f64 {
    (std::f64::consts::PI * f64::from(distance.min(64)) / 64.0).cos()
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn single_feature_simhash_is_its_hash() {
        let s = Shingles {
            features: vec![(0xDEAD_BEEF_0123_4567, 3)],
        };
        assert_eq!(simhash(&s), 0xDEAD_BEEF_0123_4567);
        assert_eq!(simhash(&Shingles::default()), 0);
    }

    #[test]
    fn one_frequent_feature_does_not_decide_every_bit() {
        // 20 distinct features once each, one feature 1000 times.
        let mut f: Vec<(u64, u32)> = (1..=20u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1))
            .collect();
        f.push((0xFFFF_FFFF_FFFF_FFFF, 1000));
        assert_ne!(simhash(&Shingles { features: f }), u64::MAX);
        assert_eq!(weight(1), 1);
        assert_eq!(weight(4), 3);
    }

    #[test]
    fn resemblance_is_one_at_zero_and_zero_at_half() {
        assert_eq!(resemblance(0), 1.0);
        assert!(resemblance(32).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn hamming_is_symmetric_and_bounded(a: u64, b: u64) {
            prop_assert_eq!(hamming(a, b), hamming(b, a));
            prop_assert!(hamming(a, b) <= 64);
            prop_assert_eq!(hamming(a, a), 0);
        }
    }
}
