//! Permuted block tables for Hamming search (Manku, Jain, Das Sarma 2007).
//!
//! The 64 bits are cut into k+1 blocks. Two fingerprints within distance k
//! differ in at most k bits, so by pigeonhole at least one block is equal in
//! both. Table t is keyed by (a prefix of) block t: a query looks in one
//! bucket per table and is sure to meet every fingerprint within distance k,
//! distance k included. Each bucket item packs the entry's sequence number
//! (low 32 bits) with 32 other bits of its fingerprint, so most candidates are
//! rejected without touching the window (the bits are a subset, so this
//! prefilter never rejects a true match).
//!
//! Items enter buckets in sequence order and the window evicts in sequence
//! order, so an evicted entry is always at the front of each of its buckets:
//! deletion is exact and O(1), and no stale item is ever kept.

use std::collections::VecDeque;

#[derive(Debug, Clone, Copy)]
struct Block {
    shift: u32,
    key_bits: u32,
}

/// k+1 tables of buckets.
#[derive(Debug, Clone)]
pub struct Tables {
    k: u32,
    blocks: Vec<Block>,
    buckets: Vec<Vec<VecDeque<u64>>>,
    items: usize,
}

/// Bucket index bits for a window of `capacity` entries: about 4 entries per
/// bucket at capacity, between 8 and 20 bits.
fn table_bits(capacity: usize) -> u32 {
    let log2 = usize::BITS - capacity.max(1).leading_zeros();
    log2.saturating_sub(2).clamp(8, 20)
}

impl Tables {
    /// Tables for radius `k` (0..=7) and a window of up to `capacity` entries.
    pub fn new(k: u32, capacity: usize) -> Tables {
        let k = k.min(7);
        let n = k + 1;
        let bits = table_bits(capacity);
        let mut blocks = Vec::with_capacity(n as usize);
        let mut shift = 0;
        for i in 0..n {
            // Widths as equal as possible: the first 64 % n blocks are one wider.
            let width = 64 / n + u32::from(i < 64 % n);
            blocks.push(Block {
                shift,
                key_bits: width.min(bits),
            });
            shift += width;
        }
        let buckets = blocks
            .iter()
            .map(|b| vec![VecDeque::new(); 1usize << b.key_bits])
            .collect();
        Tables {
            k,
            blocks,
            buckets,
            items: 0,
        }
    }

    pub fn radius(&self) -> u32 {
        self.k
    }

    fn key(b: Block, h: u64) -> usize {
        ((h >> b.shift) & ((1u64 << b.key_bits) - 1)) as usize
    }

    /// 32 bits of `h` starting just above the key (wrapping around).
    fn check(b: Block, h: u64) -> u32 {
        h.rotate_right(b.shift + b.key_bits) as u32
    }

    /// Adds an entry. Sequence numbers must be added in increasing order.
    pub fn insert(&mut self, h: u64, seq: u64) {
        for (b, table) in self.blocks.iter().zip(self.buckets.iter_mut()) {
            let item = (u64::from(Self::check(*b, h)) << 32) | (seq & 0xFFFF_FFFF);
            if let Some(bucket) = table.get_mut(Self::key(*b, h)) {
                bucket.push_back(item);
            }
        }
        self.items += 1;
    }

    /// Removes the entry `seq` with fingerprint `h`, which must be the oldest
    /// entry in the tables.
    pub fn remove_oldest(&mut self, h: u64, seq: u64) {
        let low = seq & 0xFFFF_FFFF;
        for (b, table) in self.blocks.iter().zip(self.buckets.iter_mut()) {
            let Some(bucket) = table.get_mut(Self::key(*b, h)) else {
                continue;
            };
            if bucket.front().is_some_and(|it| it & 0xFFFF_FFFF == low) {
                bucket.pop_front();
            } else if let Some(pos) = bucket.iter().position(|it| it & 0xFFFF_FFFF == low) {
                // Not reached when callers keep the contract; kept for safety.
                bucket.remove(pos);
            }
            if bucket.is_empty() && bucket.capacity() > 16 {
                bucket.shrink_to_fit();
            }
        }
        self.items = self.items.saturating_sub(1);
    }

    /// Calls `found(low_seq)` for every candidate that passes the prefilter
    /// in some table. A candidate can be reported once per table it matches.
    pub fn candidates(&self, h: u64, mut found: impl FnMut(u32)) {
        for (b, table) in self.blocks.iter().zip(&self.buckets) {
            let q = Self::check(*b, h);
            let Some(bucket) = table.get(Self::key(*b, h)) else {
                continue;
            };
            for &item in bucket {
                if ((item >> 32) as u32 ^ q).count_ones() <= self.k {
                    found(item as u32);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.items
    }

    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Bytes of heap held by buckets (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.buckets
            .iter()
            .flatten()
            .map(|b| b.capacity() * 8 + std::mem::size_of::<VecDeque<u64>>())
            .sum()
    }
}
