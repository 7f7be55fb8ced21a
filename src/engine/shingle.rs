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
    /// The message's sentence keys and anchors ([`Sentences`]).
    pub sentences: Sentences,
}

/// A message's sentences as the anchor table sees them: of each sentence
/// of its body of at least [`SENTENCE_WORDS`] tokens, its key
/// ([`sentence_key`]). A copy diluted with other text still holds its
/// text's sentences whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sentences {
    /// The text's anchors in the index: the smallest key of each third of
    /// its sentences, in text order (none when it has fewer than
    /// [`SENTENCE_ANCHORS`]). One from each part, so that a message
    /// holding only what the text shares with others (a sender's form and
    /// footer under each mailing, a signature under each post) seldom
    /// holds them all: with the two smallest of all, and with one from
    /// each half, mailings of one insurance sender of the corpus joined
    /// through their common form and footer (docs/dev/quality.md).
    pub anchors: Vec<u64>,
    /// The keys a message looks anchors up by: the [`MAX_SENTENCE_KEYS`]
    /// smallest, distinct, sorted.
    pub lookups: Vec<u64>,
}

/// Least tokens a sentence needs to count as one of a message's sentence
/// keys: shorter ones ("thank you for your order", "click here") are
/// written by everyone.
pub const SENTENCE_WORDS: usize = 8;

/// Most sentence keys a message looks up (the smallest): a text's
/// anchors, each the smallest of a third of its sentences, are among a
/// copy's smallest unless the copy added many times the text's own
/// sentences, and a copy diluted that far is no longer near it by any
/// other measure either. Each is a bucket read and 4 bytes of a Redis log
/// entry.
pub const MAX_SENTENCE_KEYS: usize = 16;

/// A text's sentence keys kept as its anchors in the index
/// ([`Sentences::anchors`]): a later message that holds every one of them
/// whole is a candidate for the containment test however much other text
/// it adds.
pub const SENTENCE_ANCHORS: usize = 3;

impl Sentences {
    /// The anchors and lookups of a message's sentence keys in text order.
    fn of(mut keys: Vec<u64>) -> Sentences {
        let n = keys.len();
        let anchors = if n >= SENTENCE_ANCHORS {
            (0..SENTENCE_ANCHORS)
                .filter_map(|i| {
                    keys.get(i * n / SENTENCE_ANCHORS..(i + 1) * n / SENTENCE_ANCHORS)
                        .and_then(|part| part.iter().min())
                        .copied()
                })
                .collect()
        } else {
            Vec::new()
        };
        keys.sort_unstable();
        keys.dedup();
        keys.truncate(MAX_SENTENCE_KEYS);
        Sentences {
            anchors,
            lookups: keys,
        }
    }
}

/// The key of a sentence from its token hashes: keyed through every token
/// as a shingle is, and apart from any shingle's hash.
pub fn sentence_key(token_hashes: &[u64]) -> u64 {
    mix(combine(token_hashes) ^ 0x7365_6e74_656e_6365)
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
    let mut sentences: Vec<u64> = Vec::new();
    let seed = token_seed(cfg.hash_key);
    let mut end_sentence = |sentence: &mut Vec<u64>, body: bool| {
        if sentence.is_empty() {
            return;
        }
        if body && sentence.len() >= SENTENCE_WORDS {
            sentences.push(sentence_key(sentence));
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
            end_sentence(&mut sentence, true);
        }
        start = end + 1;
    }
    if cfg.include_subject {
        for token in norm.subject.split(' ').filter(|t| !t.is_empty()) {
            sentence.push(xxh3_64_with_seed(token.as_bytes(), seed));
        }
        end_sentence(&mut sentence, false);
    }
    let sentences = Sentences::of(sentences);
    if cfg.sample_modulus > 1 {
        shingles.retain(|h| h % cfg.sample_modulus == 0);
    }
    Features {
        shingles: Shingles::from_hashes(shingles),
        words,
        sentences,
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

    fn sentences(text: &str) -> Sentences {
        let n = Normalized {
            text: text.to_owned(),
            subject: "a subject of many words that is not a sentence of the body".into(),
            tokens: text.split_whitespace().count(),
            kept_cut: None,
        };
        features(&n, &Config::default().fingerprint).sentences
    }

    /// Sentence `i` of eight words or more (`words`).
    fn line(i: usize, words: usize) -> String {
        (0..words)
            .map(|w| format!("s{i}w{w}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_text_is_anchored_by_a_sentence_of_each_third_and_a_diluted_copy_holds_them() {
        let text: Vec<String> = (0..9).map(|i| line(i, 10)).collect();
        let s = sentences(&text.join("\n"));
        assert_eq!(s.anchors.len(), SENTENCE_ANCHORS);
        // (A sentence alone: its one key.)
        let keys: Vec<u64> = text.iter().map(|t| sentences(t).lookups[0]).collect();
        // The smallest key of each third, in order.
        for (i, a) in s.anchors.iter().enumerate() {
            assert_eq!(*a, *keys[3 * i..3 * i + 3].iter().min().unwrap_or(&0));
        }
        assert_eq!(s.lookups.len(), 9);
        // A copy with other sentences between the text's holds every anchor
        // among the keys it looks up.
        let mut diluted = Vec::new();
        for (i, t) in text.iter().enumerate() {
            diluted.push(t.clone());
            diluted.push(line(100 + i, 12));
        }
        let d = sentences(&diluted.join("\n"));
        assert!(s.anchors.iter().all(|a| d.lookups.contains(a)));
        // Short sentences and the subject are no sentences; fewer than
        // three: no anchors. At most MAX_SENTENCE_KEYS lookups, the smallest.
        let few = sentences(&format!(
            "{}\n{}\nshort one\nseven words are not enough here no",
            line(1, 8),
            line(2, 8)
        ));
        assert!(few.anchors.is_empty());
        assert_eq!(few.lookups.len(), 2);
        let many: Vec<String> = (0..40).map(|i| line(i, 8)).collect();
        let m = sentences(&many.join("\n"));
        assert_eq!(m.lookups.len(), MAX_SENTENCE_KEYS);
        assert!(m.lookups.is_sorted());
        assert!(m
            .anchors
            .iter()
            .all(|a| m.lookups.first().is_some_and(|f| f <= a)));
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
