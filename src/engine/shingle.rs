//! Normalized text to weighted features: hashed word shingles, and the set
//! of words for MinHash.
//!
//! Every token is hashed once with XXH3-64 (the xxHash specification,
//! stable since 0.8.0) over its UTF-8 bytes, with a 64-bit seed made from
//! `fingerprint.hash_key`: `k0 ^ mix(k1)` ([`token_seed`]). (Fingerprint
//! version 2 and earlier used SipHash-1-3 keyed by (k0, k1), several
//! times slower on words of a few bytes.) A shingle is
//! `shingle_words` consecutive tokens of one sentence (a sentence shorter
//! than that gives one shingle of all its tokens); shingles never span
//! sentences. A shingle's hash combines its tokens' hashes in order:
//! `acc = mix(rotl(acc, 27) ^ h_i)` from `acc = w` (SplitMix64's
//! finalizer as mix), so it depends on the key through every token. Both
//! are the same on every host and after every restart for the same key.
//! With `sample_modulus = m > 1` only shingle hashes that are 0 mod m are
//! kept (Broder 1997).
//!
//! Output: [`Features`]: distinct shingle hashes with their counts, sorted,
//! and the token hashes (the word set, with repeats).

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::config::FingerprintConfig;
use crate::engine::mime::normalize::Normalized;
use crate::engine::minhash::mix;

/// Distinct hashes with their frequencies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shingles {
    /// (hash, count), sorted by hash, hashes distinct.
    pub features: Vec<(u64, u32)>,
}

impl Shingles {
    /// Number of distinct features.
    pub fn len(&self) -> usize {
        self.features.len()
    }

    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// Sorts and counts raw hashes.
    fn from_hashes(hashes: Vec<u64>) -> Shingles {
        let hashes = sort_uniform(hashes);
        let mut features: Vec<(u64, u32)> = Vec::with_capacity(hashes.len());
        for h in hashes {
            match features.last_mut() {
                Some((last, n)) if *last == h => *n = n.saturating_add(1),
                _ => features.push((h, 1)),
            }
        }
        Shingles { features }
    }
}

/// `hashes` sorted, for hashes spread evenly over the 64-bit range (as
/// shingle hashes are): each is first placed by its top bits, about one
/// hash per place, which leaves the few out of order next to each other;
/// an insertion sort then finishes in about one comparison a hash.
/// (`cargo bench --bench engine -- stages/shingles`, easy-ham: 2.9 us a
/// message before, 2.6 with it, same day.) A crowded place would make the
/// insertion sort quadratic in its crowd, so when any place holds more
/// than 64 hashes (one sentence repeated many times) the general sort
/// takes over.
fn sort_uniform(mut hashes: Vec<u64>) -> Vec<u64> {
    let n = hashes.len();
    if n < 32 {
        hashes.sort_unstable();
        return hashes;
    }
    // 2^bits places: n to 2n of them, at most 2^20 (fewer than n only
    // for more hashes than `max_scan_bytes` allows).
    let bits = (usize::BITS - (n - 1).leading_zeros()).min(20);
    let shift = 64 - bits;
    let mut next = vec![0u32; (1 << bits) + 1];
    for h in &hashes {
        if let Some(c) = next.get_mut((h >> shift) as usize + 1) {
            *c += 1;
        }
    }
    let mut most = 0;
    let mut sum = 0;
    for c in next.iter_mut() {
        most = most.max(*c);
        sum += *c;
        *c = sum;
    }
    if most > 64 {
        hashes.sort_unstable();
        return hashes;
    }
    let mut out = vec![0u64; n];
    for h in hashes {
        if let Some(p) = next.get_mut((h >> shift) as usize) {
            if let Some(slot) = out.get_mut(*p as usize) {
                *slot = h;
            }
            *p += 1;
        }
    }
    for i in 1..n {
        let mut j = i;
        while j > 0 && out.get(j - 1) > out.get(j) {
            out.swap(j - 1, j);
            j -= 1;
        }
    }
    out
}

/// Shingles for the simhash and the word set for MinHash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    pub shingles: Shingles,
    /// Token hashes in text order, repeats included: MinHash takes the
    /// set of words (a minimum over a multiset is the minimum over its
    /// set, so they need no sorting). An inserted hash-buster word adds one
    /// element and breaks nothing around it, where it breaks
    /// `shingle_words` shingles.
    pub words: Vec<u64>,
}

/// The XXH3 seed of a configured key (k0, k1): `k0 ^ mix(k1)`.
pub fn token_seed(key: (u64, u64)) -> u64 {
    key.0 ^ mix(key.1)
}

/// XXH3-64 of one token, seeded from the configured key.
pub fn hash_token(token: &str, key: (u64, u64)) -> u64 {
    xxh3_64_with_seed(token.as_bytes(), token_seed(key))
}

/// Combines token hashes into a shingle hash (order matters).
pub fn combine(token_hashes: &[u64]) -> u64 {
    token_hashes
        .iter()
        .fold(token_hashes.len() as u64, |acc, h| {
            mix(acc.rotate_left(27) ^ h)
        })
}

/// Hashes a shingle given as tokens (for callers that have no token hashes).
pub fn hash_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>, key: (u64, u64)) -> u64 {
    let hashes: Vec<u64> = tokens.into_iter().map(|t| hash_token(t, key)).collect();
    combine(&hashes)
}

/// Computes the features of a normalized message.
pub fn features(norm: &Normalized, cfg: &FingerprintConfig) -> Features {
    let w = cfg.shingle_words.max(1);
    // (`tokens` as a reader counted them; never more than the text's
    // bytes, whatever a caller says.)
    let tokens = norm.tokens.min(norm.text.len());
    let mut shingles: Vec<u64> = Vec::with_capacity(tokens + 8);
    let mut words: Vec<u64> = Vec::with_capacity(tokens + 8);
    let mut sentence: Vec<u64> = Vec::with_capacity(64);
    let seed = token_seed(cfg.hash_key);
    let mut end_sentence = |sentence: &mut Vec<u64>| {
        if sentence.is_empty() {
            return;
        }
        words.extend_from_slice(sentence);
        if sentence.len() <= w {
            shingles.push(combine(sentence));
        } else {
            shingles.extend(sentence.windows(w).map(combine));
        }
        sentence.clear();
    };
    // Token and sentence ends found by memchr: one branch per token
    // instead of one per byte.
    let text = norm.text.as_bytes();
    let mut start = 0;
    for end in memchr::memchr2_iter(b' ', b'\n', text).chain([text.len()]) {
        if end > start {
            let token = text.get(start..end).unwrap_or_default();
            sentence.push(xxh3_64_with_seed(token, seed));
        }
        if text.get(end) != Some(&b' ') {
            end_sentence(&mut sentence);
        }
        start = end + 1;
    }
    if cfg.include_subject {
        for token in norm.subject.split(' ').filter(|t| !t.is_empty()) {
            sentence.push(xxh3_64_with_seed(token.as_bytes(), seed));
        }
        end_sentence(&mut sentence);
    }
    if cfg.sample_modulus > 1 {
        shingles.retain(|h| h % cfg.sample_modulus == 0);
    }
    Features {
        shingles: Shingles::from_hashes(shingles),
        words,
    }
}

/// The shingles of a normalized message.
pub fn shingles(norm: &Normalized, cfg: &FingerprintConfig) -> Shingles {
    features(norm, cfg).shingles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn sh(text: &str) -> Shingles {
        let n = Normalized {
            text: text.to_owned(),
            subject: String::new(),
            tokens: text.split_whitespace().count(),
            kept_cut: None,
        };
        shingles(&n, &Config::default().fingerprint)
    }

    proptest::proptest! {
        /// The same order as `sort_unstable`, on uniform hashes, on hashes
        /// crowded into few places, and with repeats.
        #[test]
        fn sort_uniform_sorts(
            v in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..600),
            crowd in 0u32..4,
        ) {
            let v: Vec<u64> = match crowd {
                0 => v,
                // All in one place, more than 64: the general sort.
                1 => v.iter().map(|h| h >> 58).collect(),
                // Up to 38 a place, in random order: the insertion sort.
                2 => v.iter().map(|h| ((h % 16) << 60) | (h >> 40)).collect(),
                _ => v.iter().map(|h| ((h % 5) << 61) | (h % 3)).collect(),
            };
            let mut want = v.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(sort_uniform(v), want);
        }
    }

    #[test]
    fn shingles_do_not_span_sentences_so_order_does_not_matter() {
        assert_eq!(sh("a b c\nd e f"), sh("d e f\na b c"));
        assert_ne!(sh("a b c d e f"), sh("d e f a b c"));
    }

    #[test]
    fn repeated_shingles_are_counted() {
        let s = sh("x y\nx y");
        assert_eq!(s.features.len(), 1);
        assert_eq!(s.features[0].1, 2);
    }

    #[test]
    fn key_changes_hash_and_separator_prevents_ambiguity() {
        assert_ne!(
            hash_tokens(["ab", "c"], (1, 2)),
            hash_tokens(["a", "bc"], (1, 2))
        );
        assert_ne!(hash_tokens(["ab"], (1, 2)), hash_tokens(["ab"], (1, 3)));
    }

    #[test]
    fn sampling_keeps_only_zero_mod_m() {
        let n = Normalized {
            text: (0..500)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" "),
            subject: String::new(),
            tokens: 500,
            kept_cut: None,
        };
        let mut cfg = Config::default().fingerprint;
        cfg.sample_modulus = 4;
        let s = shingles(&n, &cfg);
        assert!(s.features.iter().all(|(h, _)| h % 4 == 0));
        assert!(s.len() > 60 && s.len() < 190, "{}", s.len());
    }
}
