//! Normalized text to weighted features: hashed word shingles, and the set
//! of words for MinHash.
//!
//! Every token is hashed once with SipHash-1-3 keyed by
//! `fingerprint.hash_key`, over its UTF-8 bytes. A shingle is
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
//! and the distinct token hashes (the word set), sorted.

use siphasher::sip::SipHasher13;

use crate::config::FingerprintConfig;
use crate::mime::normalize::Normalized;
use crate::minhash::mix;

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
    fn from_hashes(mut hashes: Vec<u64>) -> Shingles {
        hashes.sort_unstable();
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

/// Shingles for the simhash and the word set for MinHash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    pub shingles: Shingles,
    /// Distinct token hashes (counts are 1): an inserted hash-buster word
    /// adds one element and breaks nothing around it, where it breaks
    /// `shingle_words` shingles.
    pub words: Shingles,
}

/// SipHash-1-3 of one token with the configured key.
pub fn hash_token(token: &str, key: (u64, u64)) -> u64 {
    SipHasher13::new_with_keys(key.0, key.1).hash(token.as_bytes())
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
    let mut shingles: Vec<u64> = Vec::with_capacity(norm.tokens + 8);
    let mut words: Vec<u64> = Vec::with_capacity(norm.tokens + 8);
    let mut sentence: Vec<u64> = Vec::with_capacity(64);
    let subject = cfg.include_subject.then_some(norm.subject.as_str());
    // The one-shot `hash` of a keyed hasher built once: the same value as
    // `write` then `finish` on a new hasher, at a third of the cost on
    // words of a few bytes (no tail buffering).
    let sip = SipHasher13::new_with_keys(cfg.hash_key.0, cfg.hash_key.1);
    for line in norm.text.split('\n').chain(subject) {
        sentence.clear();
        // Tokens are short: a byte loop beats `split(' ')`'s memchr.
        let mut start = 0;
        for (i, b) in line.bytes().chain([b' ']).enumerate() {
            if b == b' ' {
                if i > start {
                    let token = line.get(start..i).unwrap_or_default();
                    sentence.push(sip.hash(token.as_bytes()));
                }
                start = i + 1;
            }
        }
        if sentence.is_empty() {
            continue;
        }
        words.extend_from_slice(&sentence);
        if sentence.len() <= w {
            shingles.push(combine(&sentence));
        } else {
            shingles.extend(sentence.windows(w).map(combine));
        }
    }
    if cfg.sample_modulus > 1 {
        shingles.retain(|h| h % cfg.sample_modulus == 0);
    }
    let mut words = Shingles::from_hashes(words);
    for f in &mut words.features {
        f.1 = 1;
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
        };
        shingles(&n, &Config::default().fingerprint)
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
        };
        let mut cfg = Config::default().fingerprint;
        cfg.sample_modulus = 4;
        let s = shingles(&n, &cfg);
        assert!(s.features.iter().all(|(h, _)| h % 4 == 0));
        assert!(s.len() > 60 && s.len() < 190, "{}", s.len());
    }
}
