//! Near-duplicate lookup: the sliding [`window::Window`] of recent simhashes
//! and the permuted [`tables::Tables`] over it.
//!
//! [`NearIndex::query`] returns exactly the live entries within Hamming
//! distance k of a fingerprint (a property test compares it with a brute-force
//! scan); [`NearIndex::evict_before`] removes entries older than the window
//! from both structures. No clock: callers pass the time.

pub mod tables;
pub mod window;

use crate::simhash::hamming;
use tables::Tables;
use window::{Entry, Window};

/// A match found in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub seq: u64,
    pub distance: u32,
    pub campaign: u32,
}

/// Window plus tables, kept in step.
#[derive(Debug, Clone)]
pub struct NearIndex {
    window: Window,
    tables: Tables,
    max_entries: usize,
}

impl NearIndex {
    /// An empty index of radius `k` holding at most `max_entries`.
    pub fn new(k: u32, max_entries: usize) -> NearIndex {
        NearIndex {
            window: Window::default(),
            tables: Tables::new(k, max_entries),
            max_entries: max_entries.max(1),
        }
    }

    pub fn radius(&self) -> u32 {
        self.tables.radius()
    }

    pub fn len(&self) -> usize {
        self.window.len()
    }

    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    pub fn window(&self) -> &Window {
        &self.window
    }

    /// Every live entry within distance k of `h`, each once, sorted by
    /// distance then sequence number.
    pub fn query(&self, h: u64) -> Vec<Match> {
        let mut out: Vec<Match> = Vec::new();
        self.tables.candidates(h, |low| {
            if let Some((seq, e)) = self.window.get_by_low(low) {
                let d = hamming(e.simhash, h);
                if d <= self.tables.radius() && !out.iter().any(|m| m.seq == seq) {
                    out.push(Match {
                        seq,
                        distance: d,
                        campaign: e.campaign,
                    });
                }
            }
        });
        out.sort_unstable_by_key(|m| (m.distance, m.seq));
        out
    }

    /// Adds an entry; if the window is full, the oldest entry leaves first
    /// and is returned so the caller can update its campaign.
    pub fn insert(&mut self, e: Entry) -> Option<Entry> {
        let evicted = if self.window.len() >= self.max_entries {
            self.pop_oldest()
        } else {
            None
        };
        let seq = self.window.push(e);
        if e.near {
            self.tables.insert(e.simhash, seq);
        }
        evicted
    }

    /// Removes the oldest entry.
    pub fn pop_oldest(&mut self) -> Option<Entry> {
        let (seq, e) = self.window.pop_front()?;
        if e.near {
            self.tables.remove_oldest(e.simhash, seq);
        }
        Some(e)
    }

    /// Removes every entry older than `cutoff` (Unix seconds) from the front,
    /// calling `evicted` for each.
    pub fn evict_before(&mut self, cutoff: u64, mut evicted: impl FnMut(&Entry)) {
        while self.window.front().is_some_and(|e| u64::from(e.time) < cutoff) {
            if let Some(e) = self.pop_oldest() {
                evicted(&e);
            }
        }
    }

    /// Rebuilds an index from snapshot parts.
    pub fn from_parts(k: u32, max_entries: usize, base: u64, entries: Vec<Entry>) -> NearIndex {
        let mut idx = NearIndex::new(k, max_entries);
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.near) {
            idx.tables.insert(e.simhash, base + i as u64);
        }
        idx.window = Window::from_parts(base, entries);
        idx
    }

    /// Heap bytes held by window and tables.
    pub fn heap_bytes(&self) -> usize {
        self.window.heap_bytes() + self.tables.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(h: u64, time: u32) -> Entry {
        Entry { simhash: h, time, campaign: 0, recipients: 1, sender: 0, weight: 100, near: true }
    }

    /// SplitMix64, for reproducible random fingerprints.
    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn flip(mut h: u64, n: u32, state: &mut u64) -> u64 {
        let mut flipped = 0u64;
        while flipped.count_ones() < n {
            flipped |= 1 << (splitmix(state) % 64);
        }
        h ^= flipped;
        h
    }

    fn brute(idx: &NearIndex, h: u64) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = idx
            .window()
            .iter()
            .filter_map(|(s, e)| {
                let d = hamming(e.simhash, h);
                (d <= idx.radius()).then_some((s, d))
            })
            .collect();
        v.sort_unstable_by_key(|&(s, d)| (d, s));
        v
    }

    #[test]
    fn query_equals_brute_force_on_100k_fingerprints() {
        for k in [3u32, 4] {
            let mut st = 42 + u64::from(k);
            let mut idx = NearIndex::new(k, 200_000);
            let mut bases = Vec::new();
            for i in 0..100_000u32 {
                // Clusters: most fingerprints are a near copy of an earlier one,
                // at distances 0..=k+2, so both sides of the radius are tested.
                let h = if i % 4 == 0 || bases.is_empty() {
                    let b = splitmix(&mut st);
                    bases.push(b);
                    b
                } else {
                    let b = bases[(splitmix(&mut st) as usize) % bases.len()];
                    flip(b, (splitmix(&mut st) % u64::from(k + 3)) as u32, &mut st)
                };
                idx.insert(entry(h, i));
            }
            for q in 0..2_000 {
                let b = bases[(splitmix(&mut st) as usize) % bases.len()];
                let h = flip(b, (q % (k + 3)) as u32, &mut st);
                let got: Vec<(u64, u32)> = idx.query(h).iter().map(|m| (m.seq, m.distance)).collect();
                assert_eq!(got, brute(&idx, h), "k={k} query {q}");
            }
        }
    }

    #[test]
    fn distance_k_is_found_and_k_plus_one_is_not() {
        let mut st = 7;
        let mut idx = NearIndex::new(3, 1000);
        let h = splitmix(&mut st);
        idx.insert(entry(h, 0));
        for _ in 0..200 {
            assert_eq!(idx.query(flip(h, 3, &mut st)).len(), 1);
            assert!(idx.query(flip(h, 4, &mut st)).is_empty());
        }
    }

    #[test]
    fn eviction_by_time_and_by_size() {
        let mut idx = NearIndex::new(3, 3);
        for t in 0..3 {
            assert!(idx.insert(entry(u64::from(t) * 0x1111, t)).is_none());
        }
        let out = idx.insert(entry(0xFFFF, 3)).expect("full window evicts");
        assert_eq!(out.time, 0);
        assert!(idx.query(0).is_empty());
        let mut gone = Vec::new();
        idx.evict_before(3, |e| gone.push(e.time));
        assert_eq!(gone, vec![1, 2]);
        assert_eq!(idx.len(), 1);
        assert_eq!(idx.query(0xFFFF).len(), 1);
    }

    proptest! {
        #[test]
        fn eviction_keeps_nothing_older_than_cutoff(times in proptest::collection::vec(0u32..1000, 1..200), cutoff in 0u64..1100) {
            let mut sorted = times.clone();
            sorted.sort_unstable();
            let mut idx = NearIndex::new(3, 10_000);
            for (i, t) in sorted.iter().enumerate() {
                idx.insert(entry(i as u64 * 0x9E37_79B9, *t));
            }
            idx.evict_before(cutoff, |_| {});
            prop_assert!(idx.window().iter().all(|(_, e)| u64::from(e.time) >= cutoff));
            prop_assert_eq!(idx.len(), sorted.iter().filter(|t| u64::from(**t) >= cutoff).count());
            for (_, e) in idx.window().iter() {
                prop_assert!(idx.query(e.simhash).iter().any(|m| m.distance == 0));
            }
        }
    }
}
