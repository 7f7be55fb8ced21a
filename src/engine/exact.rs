//! Exact lookup: rotating Bloom filters of SHA-256 values plus an LRU from
//! recent hashes to their campaign.
//!
//! The Bloom filters (bloomfilter crate) are kept in `generations`
//! generations, each covering `window / (generations - 1)` of time or
//! `bloom_items / (generations - 1)` insertions, whichever ends first; a
//! lookup asks every generation, and the oldest generation is dropped when a
//! new one starts. So an entry lives at least one window (unless the item
//! bound forces early rotation, which keeps memory bounded instead), and
//! memory is fixed by configuration. The Bloom filter answers "seen in the
//! window?" for every hash; the LRU remembers the campaign of the most recent
//! `lru_capacity` of them.

use bloomfilter::Bloom;
use lru::LruCache;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::num::NonZeroUsize;

use crate::config::{Config, ExactConfig};

/// One generation of the Bloom filter.
#[derive(Clone)]
pub struct Generation {
    pub bloom: Bloom<[u8; 32]>,
    pub started: u64,
    pub count: usize,
}

/// The rotating set of exact hashes.
#[derive(Clone)]
pub struct ExactSet {
    gens: VecDeque<Generation>,
    lru: LruCache<[u8; 32], (u32, u64)>,
    span_secs: u64,
    per_gen_items: usize,
    max_gens: usize,
    fp_rate: f64,
    seed: [u8; 32],
}

impl std::fmt::Debug for ExactSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExactSet")
            .field("generations", &self.gens.len())
            .field("lru", &self.lru.len())
            .finish()
    }
}

/// The Bloom seed: SHA-256 of the fingerprint key, so every host agrees and
/// a replay is repeatable.
pub fn bloom_seed(cfg: &Config) -> [u8; 32] {
    let (a, b) = cfg.fingerprint.hash_key;
    let mut h = Sha256::new();
    h.update(b"bulkwatch-bloom");
    h.update(a.to_le_bytes());
    h.update(b.to_le_bytes());
    h.finalize().into()
}

impl ExactSet {
    pub fn new(cfg: &ExactConfig, window_secs: u64, seed: [u8; 32]) -> ExactSet {
        let slices = cfg.generations.saturating_sub(1).max(1);
        let mut set = ExactSet {
            gens: VecDeque::new(),
            lru: LruCache::new(NonZeroUsize::new(cfg.lru_capacity).unwrap_or(NonZeroUsize::MIN)),
            span_secs: (window_secs / slices as u64).max(1),
            per_gen_items: (cfg.bloom_items / slices).max(16),
            max_gens: cfg.generations.max(2),
            fp_rate: cfg.bloom_fp_rate,
            seed,
        };
        set.gens.push_back(set.new_gen(0));
        set
    }

    fn new_gen(&self, now: u64) -> Generation {
        // Invariant: config validation keeps bloom_items >= 16 and
        // 0 < bloom_fp_rate < 0.5, the only things this constructor asserts
        // on, and it has no other error path.
        #[allow(clippy::expect_used)]
        let bloom = Bloom::new_for_fp_rate_with_seed(self.per_gen_items, self.fp_rate, &self.seed)
            .expect("validated Bloom sizes");
        Generation {
            bloom,
            started: now,
            count: 0,
        }
    }

    /// Starts a new generation when the current one is old or full.
    pub fn rotate(&mut self, now: u64) {
        let due = self.gens.back().is_none_or(|g| {
            now.saturating_sub(g.started) >= self.span_secs || g.count >= self.per_gen_items
        });
        if due {
            let g = self.new_gen(now);
            self.gens.push_back(g);
            while self.gens.len() > self.max_gens {
                self.gens.pop_front();
            }
        }
    }

    /// Was this hash inserted in a live generation? (False positives at
    /// about the configured rate; no false negatives.)
    pub fn contains(&self, h: &[u8; 32]) -> bool {
        self.gens.iter().any(|g| g.bloom.check(h))
    }

    /// Records a hash and the campaign (slot, id) it belongs to.
    pub fn insert(&mut self, h: [u8; 32], campaign: (u32, u64), now: u64) {
        self.rotate(now);
        if let Some(g) = self.gens.back_mut() {
            g.bloom.set(&h);
            g.count += 1;
        }
        self.lru.put(h, campaign);
    }

    /// The campaign (slot, id) last recorded for this hash, if remembered.
    pub fn campaign_of(&mut self, h: &[u8; 32]) -> Option<(u32, u64)> {
        self.lru.get(h).copied()
    }

    /// [`ExactSet::campaign_of`] without marking the value as recently
    /// used (an explanation, which records nothing).
    pub fn peek_campaign_of(&self, h: &[u8; 32]) -> Option<(u32, u64)> {
        self.lru.peek(h).copied()
    }

    /// Fraction of bits set in the newest generation (for metrics).
    pub fn fill_ratio(&self) -> f64 {
        self.gens.back().map_or(0.0, |g| {
            let bits = g.bloom.len().max(1) as f64;
            let set: u64 = g
                .bloom
                .as_slice()
                .iter()
                .map(|b| u64::from(b.count_ones()))
                .sum();
            set as f64 / bits
        })
    }

    pub fn generations(&self) -> &VecDeque<Generation> {
        &self.gens
    }

    pub fn lru_entries(&self) -> impl Iterator<Item = (&[u8; 32], &(u32, u64))> {
        // Least recently used first, so re-inserting in order restores recency.
        self.lru.iter().rev()
    }

    /// Restores generations and LRU from a snapshot.
    pub fn restore(&mut self, gens: Vec<Generation>, lru: Vec<([u8; 32], (u32, u64))>) {
        if !gens.is_empty() {
            self.gens = gens.into();
            while self.gens.len() > self.max_gens {
                self.gens.pop_front();
            }
        }
        for (h, c) in lru {
            self.lru.put(h, c);
        }
    }

    pub fn lru_len(&self) -> usize {
        self.lru.len()
    }

    /// Heap bytes of the Bloom bitmaps.
    pub fn bloom_bytes(&self) -> usize {
        self.gens.iter().map(|g| g.bloom.as_slice().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(window: u64) -> ExactSet {
        let mut c = Config::default().exact;
        c.bloom_items = 3000;
        c.generations = 4;
        c.lru_capacity = 100;
        ExactSet::new(&c, window, [7; 32])
    }

    fn h(i: u32) -> [u8; 32] {
        Sha256::digest(i.to_le_bytes()).into()
    }

    #[test]
    fn entries_expire_with_the_window() {
        let mut s = set(300);
        s.insert(h(1), (0, 1), 0);
        for t in [100, 200, 299] {
            s.rotate(t);
            assert!(s.contains(&h(1)), "still in window at {t}");
        }
        for t in [400, 500] {
            s.rotate(t);
        }
        assert!(!s.contains(&h(1)), "gone one window and a slice later");
    }

    #[test]
    fn lru_maps_hash_to_campaign() {
        let mut s = set(300);
        s.insert(h(1), (3, 99), 0);
        assert_eq!(s.campaign_of(&h(1)), Some((3, 99)));
        assert_eq!(s.campaign_of(&h(2)), None);
    }

    proptest! {
        #[test]
        fn no_false_negatives_within_a_generation(items in proptest::collection::vec(any::<u32>(), 1..500)) {
            let mut s = set(3600);
            for i in &items { s.insert(h(*i), (0, 0), 10); }
            for i in &items { prop_assert!(s.contains(&h(*i))); }
        }
    }
}
