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

use crate::engine::shingle::Shingles;

/// Version of the fingerprint algorithm (normalization + shingles + hashes).
///
/// - 2: Supercite quotes and list footers without a rule line are not
///   fingerprinted.
/// - 3: tokens hashed with XXH3 instead of SipHash-1-3, MinHash over
///   32-bit lanes, for speed; the same measured quality (docs/dev/quality.md, Measured
///   quality).
/// - 4: HTML read by an HTML5 tokenizer (inline elements join words,
///   whitespace collapses, hidden text dropped only while enough stays
///   visible); cutting rules bounded so that none erases a message;
///   non-ASCII characters mapped to their UTS #39 confusable skeleton,
///   invisible characters and combining marks dropped; image sources in
///   the exact hash.
/// - 5: spellings a reader still reads are read (`acc0unt`, `s.e.c.u.r.e`,
///   `U P D A T E`, words reversed inside a right-to-left override); a
///   link's target is written into the text once per host, for at most
///   four hosts.
/// - 6: an attached picture is compared by its perceptual hash, not its
///   bytes; a short message with pictures is compared near by them; the
///   text of an attached PDF under a short body is read.
/// - 7: a paragraph of more than 120 words is never taken for a list
///   footer or a disclaimer, and paragraphs removed by themselves as such
///   may hold at most twice the words that stay.
/// - 8: attached documents are read by their bytes (archives, Office and
///   OpenDocument files, SVG, RTF, calendars and contacts, pages smuggled
///   in an attached page, messages attached as bytes); QR codes in the
///   pictures of a short message are its links, and anchor the picture;
///   CSS bidi overrides, generated content and flex order are read as
///   shown, and the alt text of remote pictures under a short text; signs
///   for letters are read with wider bounds (`7he`, `$7@7emen7`).
/// - 9: every picture format a client shows, pictures written into the
///   page, animations' frames, pictures in PDFs and documents; encrypted
///   archives with their stated password; SVG text where it is drawn;
///   style rules reach the elements a browser's selectors reach.
pub const VERSION: u8 = 9;

/// The fingerprints of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub simhash: u64,
    /// SHA-256 of the normalized text and the attachment hashes.
    pub exact: [u8; 32],
    /// Number of distinct features behind `simhash`.
    pub features: u32,
    /// MinHash sketch and LSH band keys (see `crate::engine::minhash`).
    pub min: crate::engine::minhash::MinSketch,
    pub version: u8,
}

/// The weight of a feature seen `tf` times: 1 + ⌊log2 tf⌋.
pub fn weight(tf: u32) -> i64 {
    1 + i64::from(tf.max(1).ilog2())
}

/// Charikar's simhash of weighted features.
///
/// Implementation note: the per-bit sums are kept bit-sliced: counter
/// word `c[j]` holds bit j of all 64 sums, and adding a feature of weight
/// w adds its hash at level j for each set bit j of w, with carries (a
/// ripple that stops at the first level without carry: about two levels
/// per addition). The 64 signs then come from one bit-sliced comparison
/// with ⌊total/2⌋ (an integer sum s has 2s > total exactly when
/// s > ⌊total/2⌋). About ten word operations per feature instead of an
/// addition per bit; `tests::equals_per_bit_sums` checks it against the
/// per-bit sums on random feature sets.
pub fn simhash(shingles: &Shingles) -> u64 {
    // 64 levels hold any sum of u64 weights, so a carry never leaves the
    // array; the ripple rarely passes the level of the total's top bit.
    let mut c = [0u64; 64];
    let mut total = 0u64;
    for &(h, tf) in &shingles.features {
        let w = weight(tf) as u64;
        total += w;
        let mut bits = w;
        while bits != 0 {
            let level = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let mut carry = h;
            for word in c.iter_mut().skip(level) {
                let next = *word & carry;
                *word ^= carry;
                carry = next;
                if carry == 0 {
                    break;
                }
            }
        }
    }
    // Bit-sliced `sum > half`, from the top level down: `gt` marks sums
    // already known greater, `eq` those equal to `half` so far.
    let half = total / 2;
    let (mut gt, mut eq) = (0u64, u64::MAX);
    for (j, word) in c.iter().enumerate().rev() {
        if half >> j & 1 == 0 {
            gt |= eq & word;
            eq &= !word;
        } else {
            eq &= word;
        }
    }
    gt
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

    /// The definition, one sum per bit: the oracle for [`simhash`].
    fn per_bit_sums(shingles: &Shingles) -> u64 {
        let mut sums = [0i64; 64];
        let mut total = 0i64;
        for &(h, tf) in &shingles.features {
            let w = weight(tf);
            total += w;
            for (bit, sum) in sums.iter_mut().enumerate() {
                if h >> bit & 1 == 1 {
                    *sum += w;
                }
            }
        }
        sums.iter().enumerate().fold(
            0u64,
            |acc, (bit, &s)| if 2 * s > total { acc | (1 << bit) } else { acc },
        )
    }

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
        fn equals_per_bit_sums(
            features in proptest::collection::vec((any::<u64>(), 1u32..5_000), 0..300),
            skew in 0u64..4,
        ) {
            // Skewed hashes (bits mostly set or mostly clear) bring sums
            // close to half the total, where the comparison is delicate.
            let features: Vec<(u64, u32)> = features
                .into_iter()
                .map(|(h, tf)| match skew {
                    1 => (h | h.rotate_left(7), tf),
                    2 => (h & h.rotate_left(7), tf),
                    3 => (h, tf % 3 + 1),
                    _ => (h, tf),
                })
                .collect();
            let s = Shingles { features };
            prop_assert_eq!(simhash(&s), per_bit_sums(&s));
        }

        #[test]
        fn hamming_is_symmetric_and_bounded(a: u64, b: u64) {
            prop_assert_eq!(hamming(a, b), hamming(b, a));
            prop_assert!(hamming(a, b) <= 64);
            prop_assert_eq!(hamming(a, a), 0);
        }
    }
}
