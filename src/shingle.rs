//! Normalized text to weighted features: hashed word shingles.
//!
//! A shingle is `shingle_words` consecutive tokens of one sentence (a
//! sentence shorter than that gives one shingle of all its tokens); shingles
//! never span sentences. Each shingle is hashed with SipHash-1-3 keyed by
//! `fingerprint.hash_key`, over the UTF-8 bytes of each token followed by the
//! byte 0xFF (which never occurs in UTF-8, so token boundaries are
//! unambiguous). The hash is the same on every host and after every restart
//! for the same key. With `sample_modulus = m > 1` only hashes that are
//! 0 mod m are kept (Broder 1997).
//!
//! Output: [`Shingles`], distinct hashes with their counts, sorted by hash.

use siphasher::sip::SipHasher13;
use std::hash::Hasher;

use crate::config::FingerprintConfig;
use crate::mime::normalize::Normalized;

/// Distinct shingle hashes with their frequencies.
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
}

/// Hashes one shingle (a slice of tokens) with the configured key.
pub fn hash_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>, key: (u64, u64)) -> u64 {
    let mut h = SipHasher13::new_with_keys(key.0, key.1);
    for t in tokens {
        h.write(t.as_bytes());
        h.write_u8(0xFF);
    }
    h.finish()
}

/// The set of single words of a normalized message (the MinHash features:
/// an inserted hash-buster word adds one element and breaks nothing around
/// it, where it breaks `shingle_words` shingles).
pub fn word_set(norm: &Normalized, cfg: &FingerprintConfig) -> Shingles {
    let mut one = cfg.clone();
    one.shingle_words = 1;
    let mut s = shingles(
        &Normalized {
            text: norm.text.replace('\n', " "),
            subject: norm.subject.clone(),
            tokens: norm.tokens,
        },
        &FingerprintConfig {
            shingle_words: 1,
            sample_modulus: 1,
            ..one
        },
    );
    for f in &mut s.features {
        f.1 = 1;
    }
    s
}

/// Computes the shingles of a normalized message.
pub fn shingles(norm: &Normalized, cfg: &FingerprintConfig) -> Shingles {
    let mut hashes: Vec<u64> = Vec::with_capacity(norm.tokens + 8);
    let w = cfg.shingle_words.max(1);
    let mut tokens: Vec<&str> = Vec::with_capacity(64);
    let subject = cfg.include_subject.then_some(norm.subject.as_str());
    for sentence in norm.text.split('\n').chain(subject) {
        tokens.clear();
        tokens.extend(sentence.split(' ').filter(|t| !t.is_empty()));
        if tokens.is_empty() {
            continue;
        }
        if tokens.len() <= w {
            hashes.push(hash_tokens(tokens.iter().copied(), cfg.hash_key));
        } else {
            for win in tokens.windows(w) {
                hashes.push(hash_tokens(win.iter().copied(), cfg.hash_key));
            }
        }
    }
    if cfg.sample_modulus > 1 {
        hashes.retain(|h| h % cfg.sample_modulus == 0);
    }
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
