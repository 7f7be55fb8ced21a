//! Bucket tables over the window: permuted block tables for Hamming search
//! (Manku, Jain, Das Sarma 2007) and MinHash band tables (LSH).
//!
//! **Block tables.** The 64 bits are cut into k+1 blocks. Two fingerprints
//! within distance k differ in at most k bits, so by pigeonhole at least one
//! block is equal in both. Table t is keyed by (a prefix of) block t: a query
//! looks in one bucket per table and is sure to meet every fingerprint within
//! distance k, distance k included.
//!
//! **Band tables.** Table j is keyed by band key j of [`crate::minhash`]; a
//! query meets every entry that shares at least one band.
//!
//! Each bucket item packs the entry's sequence number (low 32 bits) with 32
//! check bits (other bits of the fingerprint, or the rest of the band key), so
//! most candidates are rejected without touching the window; the check can
//! only reject items that cannot match.
//!
//! Items enter buckets in sequence order and the window evicts in sequence
//! order, so an evicted entry is always at the front of each of its buckets:
//! deletion is exact and O(1), and no stale item is ever kept.

use std::collections::VecDeque;

/// Most items a query reads from one bucket: the newest ones.
///
/// A bucket is long only when many window entries share a block or band
/// key: a large campaign of near-identical copies, or messages built to
/// flood one bucket. Reading all of it would make one lookup cost
/// O(window) and a flood of n copies O(n²) in all; the newest items are
/// enough to find the campaign (its copies have been merged into one, and
/// the newest copy is the one that resembles the next best).
///
/// 256, not the 1,024 it was: a replay of 20,000 hash-busted copies of one
/// text among the fixture campaigns gave the same verdict for every message
/// with either bound, in 1.3 s instead of 3.3 s (`benches/flood.py`). A random window of 10^7
/// entries fills a block bucket with about 150 items, so the bound binds in
/// floods only. The Redis script (`MAX_SCAN` in `record.lua`) keeps the
/// same bound; `tests/store.rs` checks that they agree.
pub const MAX_BUCKET_SCAN: usize = 256;

/// One bucket a query reads: its newest items (at most
/// [`MAX_BUCKET_SCAN`]) and the test on their check bits.
///
/// A query first collects the buckets of every table, then reads them: the
/// bucket headers and items of a large window are cache misses, and
/// collecting first lets the processor wait for all of them at once
/// instead of for one table after another (see [`warm`]).
#[derive(Debug, Clone, Copy)]
pub struct BucketScan<'a> {
    older: &'a [u64],
    newer: &'a [u64],
    check: u32,
    /// Most differing check bits (block tables); `None`: equal check bits
    /// (band tables).
    radius: Option<u32>,
}

impl BucketScan<'_> {
    /// Calls `found(low_seq)` for each item that passes the test.
    pub fn run(&self, mut found: impl FnMut(u32)) {
        let check = self.check;
        for part in [self.older, self.newer] {
            match self.radius {
                Some(k) => {
                    for &item in part {
                        if (((item >> 32) as u32) ^ check).count_ones() <= k {
                            found(item as u32);
                        }
                    }
                }
                None => {
                    for &item in part {
                        if (item >> 32) as u32 == check {
                            found(item as u32);
                        }
                    }
                }
            }
        }
    }
}

/// Reads one word of every cache line the scans will read, all before the
/// first scan starts: independent loads, so their misses overlap. Without
/// it a query over a window of 10^7 entries waited for each table's bucket
/// in turn. The result is passed to `black_box` so the loads are kept.
pub fn warm(scans: &[BucketScan<'_>]) {
    let mut sink = 0u64;
    for s in scans {
        for part in [s.older, s.newer] {
            for w in part.iter().step_by(8) {
                sink ^= *w;
            }
        }
    }
    std::hint::black_box(sink);
}

/// Buckets of (check << 32 | seq) items, indexed by `bits` key bits.
#[derive(Debug, Clone)]
struct BucketTable {
    bits: u32,
    buckets: Vec<VecDeque<u64>>,
}

impl BucketTable {
    fn new(bits: u32) -> BucketTable {
        BucketTable {
            bits,
            // Built, not cloned: `vec![VecDeque::new(); n]` clones the
            // empty deque n times, and for the 393,216 buckets of a window
            // of 10^6 entries that was most of `Engine::new`'s time.
            buckets: std::iter::repeat_with(VecDeque::new)
                .take(1usize << bits)
                .collect(),
        }
    }

    fn index(&self, key: u64) -> usize {
        (key & ((1u64 << self.bits) - 1)) as usize
    }

    fn insert(&mut self, key: u64, check: u32, seq: u64) {
        let i = self.index(key);
        if let Some(b) = self.buckets.get_mut(i) {
            if b.len() == b.capacity() {
                // Grow by a quarter, not double: buckets are many and small,
                // and doubling leaves a third of their memory unused.
                b.reserve_exact((b.len() / 4).max(4));
            }
            b.push_back((u64::from(check) << 32) | (seq & 0xFFFF_FFFF));
        }
    }

    fn remove_oldest(&mut self, key: u64, seq: u64) {
        let low = seq & 0xFFFF_FFFF;
        let i = self.index(key);
        let Some(b) = self.buckets.get_mut(i) else {
            return;
        };
        if b.front().is_some_and(|it| it & 0xFFFF_FFFF == low) {
            b.pop_front();
        } else if let Some(pos) = b.iter().position(|it| it & 0xFFFF_FFFF == low) {
            // Not reached while callers keep the eviction-order contract.
            b.remove(pos);
        }
        if b.is_empty() && b.capacity() > 16 {
            b.shrink_to_fit();
        }
    }

    /// The items of the bucket of `key` (check << 32 | low seq), as the
    /// two contiguous slices of the ring buffer.
    fn scan(&self, key: u64) -> (&[u64], &[u64]) {
        self.buckets
            .get(self.index(key))
            .map_or((&[][..], &[][..]), VecDeque::as_slices)
    }

    /// The newest items of the bucket of `key`, at most
    /// [`MAX_BUCKET_SCAN`], as (older, newer) slices.
    fn newest(&self, key: u64) -> (&[u64], &[u64]) {
        let (x, y) = self.scan(key);
        match MAX_BUCKET_SCAN.checked_sub(y.len()) {
            None => (&[], y.get(y.len() - MAX_BUCKET_SCAN..).unwrap_or(y)),
            Some(room) => (x.get(x.len().saturating_sub(room)..).unwrap_or(x), y),
        }
    }

    fn longest(&self) -> usize {
        self.buckets.iter().map(VecDeque::len).max().unwrap_or(0)
    }

    fn heap_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.capacity() * 8 + std::mem::size_of::<VecDeque<u64>>())
            .sum()
    }
}

/// Bucket index bits for a window of `capacity` entries with about
/// `per_bucket` (a power of two) entries per bucket at capacity, between 8
/// and 20 bits. Each bucket costs a 32-byte header, so fewer, fuller buckets
/// save memory; a query scans one bucket per table.
fn table_bits(capacity: usize, per_bucket: usize) -> u32 {
    let log2 = usize::BITS - capacity.max(1).leading_zeros();
    log2.saturating_sub(per_bucket.trailing_zeros())
        .clamp(8, 20)
}

#[derive(Debug, Clone, Copy)]
struct Block {
    shift: u32,
    key_bits: u32,
}

/// k+1 permuted block tables over simhashes.
#[derive(Debug, Clone)]
pub struct Tables {
    k: u32,
    blocks: Vec<Block>,
    tables: Vec<BucketTable>,
}

impl Tables {
    /// Tables for radius `k` (0..=7) and a window of up to `capacity` entries.
    pub fn new(k: u32, capacity: usize) -> Tables {
        let k = k.min(7);
        let n = k + 1;
        let bits = table_bits(capacity, 4);
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
        let tables = blocks
            .iter()
            .map(|b| BucketTable::new(b.key_bits))
            .collect();
        Tables { k, blocks, tables }
    }

    pub fn radius(&self) -> u32 {
        self.k
    }

    fn key(b: Block, h: u64) -> u64 {
        h >> b.shift
    }

    /// 32 bits of `h` starting just above the key (wrapping around).
    fn check(b: Block, h: u64) -> u32 {
        h.rotate_right(b.shift + b.key_bits) as u32
    }

    /// Adds an entry. Sequence numbers must be added in increasing order.
    pub fn insert(&mut self, h: u64, seq: u64) {
        for (b, t) in self.blocks.iter().zip(self.tables.iter_mut()) {
            t.insert(Self::key(*b, h), Self::check(*b, h), seq);
        }
    }

    /// Removes the entry `seq` with fingerprint `h`, the oldest one present.
    pub fn remove_oldest(&mut self, h: u64, seq: u64) {
        for (b, t) in self.blocks.iter().zip(self.tables.iter_mut()) {
            t.remove_oldest(Self::key(*b, h), seq);
        }
    }

    /// Calls `found(low_seq)` for every candidate that passes the prefilter
    /// in some table, among the newest [`MAX_BUCKET_SCAN`] items of each
    /// bucket. A candidate can be reported once per table it matches.
    pub fn candidates(&self, h: u64, mut found: impl FnMut(u32)) {
        let mut scans = Vec::new();
        self.buckets(h, &mut scans);
        for s in &scans {
            s.run(&mut found);
        }
    }

    /// Appends the bucket of `h` in every table to `out`.
    pub fn buckets<'a>(&'a self, h: u64, out: &mut Vec<BucketScan<'a>>) {
        for (b, t) in self.blocks.iter().zip(&self.tables) {
            let (older, newer) = t.newest(Self::key(*b, h));
            out.push(BucketScan {
                older,
                newer,
                check: Self::check(*b, h),
                radius: Some(self.k),
            });
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(BucketTable::heap_bytes).sum()
    }

    /// Items in the longest bucket of any table.
    pub fn longest_bucket(&self) -> usize {
        self.tables
            .iter()
            .map(BucketTable::longest)
            .max()
            .unwrap_or(0)
    }
}

/// One table per MinHash band.
#[derive(Debug, Clone)]
pub struct Bands {
    tables: Vec<BucketTable>,
}

impl Bands {
    /// `n` band tables (0 disables the stage) for up to `capacity` entries.
    pub fn new(n: usize, capacity: usize) -> Bands {
        let bits = table_bits(capacity, 32);
        Bands {
            tables: (0..n).map(|_| BucketTable::new(bits)).collect(),
        }
    }

    pub fn count(&self) -> usize {
        self.tables.len()
    }

    pub fn insert(&mut self, bands: &[u64], seq: u64) {
        for (t, key) in self.tables.iter_mut().zip(bands) {
            t.insert(*key, (key >> 32) as u32, seq);
        }
    }

    /// Drops stale items (those `live` rejects) from the front of `count`
    /// buckets per table starting at `start`; returns where to start next
    /// and how many items it dropped. Band keys are not kept per entry
    /// (that would cost 8 bytes per band per entry), so band items are
    /// deleted lazily: a stale item never matches (its sequence number is
    /// no longer in the window), and this sweep, run a few buckets per
    /// insertion while stale items remain, keeps their number bounded.
    pub fn sweep(
        &mut self,
        start: usize,
        count: usize,
        live: impl Fn(u32) -> bool,
    ) -> (usize, usize) {
        let mut next = start;
        let mut dropped = 0;
        for t in &mut self.tables {
            let n = t.buckets.len();
            for i in 0..count {
                if let Some(b) = t.buckets.get_mut((start + i) % n.max(1)) {
                    while b.front().is_some_and(|it| !live(*it as u32)) {
                        b.pop_front();
                        dropped += 1;
                    }
                    if b.is_empty() && b.capacity() > 16 {
                        b.shrink_to_fit();
                    }
                }
            }
            next = (start + count) % n.max(1);
        }
        (next, dropped)
    }

    /// Buckets per table.
    pub fn buckets_per_table(&self) -> usize {
        self.tables.first().map_or(0, |t| t.buckets.len())
    }

    /// Calls `found(low_seq)` for every entry sharing a band key, among
    /// the newest [`MAX_BUCKET_SCAN`] items of each bucket.
    pub fn candidates(&self, bands: &[u64], mut found: impl FnMut(u32)) {
        let mut scans = Vec::new();
        self.buckets(bands, &mut scans);
        for s in &scans {
            s.run(&mut found);
        }
    }

    /// Appends the bucket of each band key in its table to `out`.
    pub fn buckets<'a>(&'a self, bands: &[u64], out: &mut Vec<BucketScan<'a>>) {
        for (t, key) in self.tables.iter().zip(bands) {
            let (older, newer) = t.newest(*key);
            out.push(BucketScan {
                older,
                newer,
                check: (key >> 32) as u32,
                radius: None,
            });
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(BucketTable::heap_bytes).sum()
    }

    /// Items in the longest bucket of any table (stale items included).
    pub fn longest_bucket(&self) -> usize {
        self.tables
            .iter()
            .map(BucketTable::longest)
            .max()
            .unwrap_or(0)
    }

    /// Bucket index bits of every band table (all tables share one size).
    pub fn bits(&self) -> u32 {
        self.tables.first().map_or(0, |t| t.bits)
    }

    /// The raw items that `live` keeps, of every bucket that has some, per
    /// table, as (bucket index, items): what a snapshot stores, since band
    /// keys are not kept per entry and cannot be recomputed from the
    /// window.
    pub fn to_parts(&self, live: impl Fn(u32) -> bool) -> Vec<Vec<(u32, Vec<u64>)>> {
        self.tables
            .iter()
            .map(|t| {
                t.buckets
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| {
                        let items: Vec<u64> =
                            b.iter().copied().filter(|it| live(*it as u32)).collect();
                        (!items.is_empty()).then_some((i as u32, items))
                    })
                    .collect()
            })
            .collect()
    }

    /// Puts back what [`Bands::to_parts`] produced. Returns false, leaving
    /// the tables empty, when the parts do not fit these tables (other
    /// table count or size, or a bucket index out of range): the caller
    /// then runs without the saved band items (the second stage relearns as
    /// mail arrives).
    pub fn restore_parts(&mut self, bits: u32, parts: Vec<Vec<(u32, Vec<u64>)>>) -> bool {
        if bits != self.bits() || parts.len() != self.tables.len() {
            return false;
        }
        for (t, buckets) in self.tables.iter_mut().zip(parts) {
            for (i, items) in buckets {
                let Some(b) = t.buckets.get_mut(i as usize) else {
                    for t in &mut self.tables {
                        t.buckets.iter_mut().for_each(VecDeque::clear);
                    }
                    return false;
                };
                *b = items.into();
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `newest` keeps exactly the last `MAX_BUCKET_SCAN` items, in order,
    /// also when the ring buffer has wrapped into two slices.
    #[test]
    fn newest_items_of_a_wrapped_bucket() {
        let mut t = BucketTable::new(8);
        let n = MAX_BUCKET_SCAN as u64;
        for total in [3, n - 1, n, n + 1, 2 * n + 7] {
            for seq in 0..total + 500 {
                t.insert(0, 0, seq);
                if seq >= total {
                    t.remove_oldest(0, seq - total);
                }
            }
            let (x, y) = t.scan(0);
            assert_eq!((x.len() + y.len()) as u64, total);
            let (older, newer) = t.newest(0);
            let got: Vec<u64> = older.iter().chain(newer).map(|i| i & 0xFFFF_FFFF).collect();
            let end = total + 500;
            let want: Vec<u64> = (end - total.min(n)..end).collect();
            assert_eq!(got, want, "bucket of {total}");
            t.buckets[0].clear();
        }
    }

    #[test]
    fn band_parts_round_trip() {
        let mut b = Bands::new(3, 1000);
        for seq in 0..50u64 {
            let keys = [
                seq.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                seq % 7,
                (seq % 3) << 40,
            ];
            b.insert(&keys, seq);
        }
        let parts = b.to_parts(|_| true);
        let mut c = Bands::new(3, 1000);
        assert!(c.restore_parts(b.bits(), parts.clone()));
        assert_eq!(c.to_parts(|_| true), parts);
        let mut seen_b = Vec::new();
        let mut seen_c = Vec::new();
        b.candidates(&[0, 3, 1 << 40], |s| seen_b.push(s));
        c.candidates(&[0, 3, 1 << 40], |s| seen_c.push(s));
        assert_eq!(seen_b, seen_c);
        assert!(!seen_b.is_empty());
    }

    #[test]
    fn band_parts_of_another_size_are_refused() {
        let mut b = Bands::new(2, 100);
        b.insert(&[1, 2], 0);
        let mut big = Bands::new(2, 1 << 20);
        assert!(!big.restore_parts(b.bits(), b.to_parts(|_| true)));
        let mut fewer = Bands::new(1, 100);
        assert!(!fewer.restore_parts(b.bits(), b.to_parts(|_| true)));
        let mut same = Bands::new(2, 100);
        assert!(!same.restore_parts(b.bits(), vec![vec![(1 << 30, vec![1])], vec![]]));
        let mut n = 0;
        same.candidates(&[1, 2], |_| n += 1);
        assert_eq!(n, 0, "a refused restore leaves the tables empty");
    }
}
