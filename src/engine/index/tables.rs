//! Bucket tables over the window: permuted block tables for Hamming search
//! (Manku, Jain, Das Sarma 2007) and MinHash band tables (LSH).
//!
//! **Block tables.** The 64 bits are cut into k+1 blocks. Two fingerprints
//! within distance k differ in at most k bits, so by pigeonhole at least one
//! block is equal in both. Table t is keyed by (a prefix of) block t: a query
//! looks in one bucket per table and is sure to meet every fingerprint within
//! distance k, distance k included.
//!
//! **Band tables.** Table j is keyed by the upper half of band key j of
//! [`crate::engine::minhash`]; a query meets every entry that shares at least one
//! band. A band counts as shared when the upper halves are equal: keys
//! that differ in their lower half only (2^-32 for a pair of random keys)
//! count too, and then the sketch and distance tests decide, as for any
//! band candidate. (Before 2026-11-24 the bucket came from the lower bits,
//! and about 32 + 16 bits were compared; the Redis store compares whole
//! keys.)
//!
//! Each bucket item packs the entry's sequence number (low 32 bits) with 32
//! check bits (the fingerprint's bits above the block, or the upper half of
//! the band key), so most candidates are rejected without touching the
//! window; a block check only rejects items that cannot match.
//!
//! Items enter buckets in sequence order and the window evicts in sequence
//! order, so an evicted entry is always at the front of each of its block
//! buckets: deletion is exact and O(1). Band items are dropped lazily
//! ([`Bands::sweep`]), as band keys are not kept per entry.
//!
//! **Growth.** Tables start small and double as the window fills, up to the
//! size its capacity calls for, like a hash map: an engine that holds few
//! entries (a fresh or lightly used daemon, `bulkwatch scan`, a short
//! replay) neither builds nor holds bucket headers for millions. A block
//! table is rebuilt from the window's fingerprints
//! ([`super::NearIndex`] does it); a band table is keyed by bits of the
//! band key that its items keep as check bits, so it splits its own
//! buckets. Either way items keep their sequence order, and the tables
//! answer every query as tables built at full size would (but for which
//! items the [`MAX_BUCKET_SCAN`] bound keeps in an overfull bucket).

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
/// floods only.
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
    /// Calls `found(item)` for each item, whole (check << 32 | low
    /// sequence number), untested: for a caller with a test of its own.
    pub fn run_items(&self, mut found: impl FnMut(u64)) {
        self.older
            .iter()
            .chain(self.newer)
            .for_each(|&it| found(it));
    }

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
        self.push(i, (u64::from(check) << 32) | (seq & 0xFFFF_FFFF));
    }

    fn push(&mut self, i: usize, item: u64) {
        if let Some(b) = self.buckets.get_mut(i) {
            if b.len() == b.capacity() {
                // Grow by a quarter, not double: buckets are many and small,
                // and doubling leaves a third of their memory unused.
                b.reserve_exact((b.len() / 4).max(4));
            }
            b.push_back(item);
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

/// Fewest bucket index bits of a table.
const MIN_BITS: u32 = 8;

/// Bucket index bits for a window of `n` entries with about `per_bucket`
/// (a power of two) entries per bucket, between [`MIN_BITS`] and 20 bits.
/// Each bucket costs a 32-byte header, so fewer, fuller buckets save
/// memory; a query scans one bucket per table.
fn table_bits(n: usize, per_bucket: usize) -> u32 {
    let log2 = usize::BITS - n.max(1).leading_zeros();
    log2.saturating_sub(per_bucket.trailing_zeros())
        .clamp(MIN_BITS, 20)
}

/// Index bits a table of at most `max` bits should have for `n` entries,
/// when that is more than its `bits`: twice as many buckets each time the
/// entries reach `per_bucket` per bucket, and straight to `max` once they
/// fill a sixteenth of it. A doubling costs time in proportion to the
/// entries, on the insertion that triggers it; the jump keeps the last and
/// costliest doublings, near a full window of 10^7 entries, from stalling
/// that insertion for a second.
fn wanted_bits(n: usize, per_bucket: usize, bits: u32, max: u32) -> Option<u32> {
    let want = if n >= (per_bucket << max) / 16 {
        max
    } else {
        table_bits(n, per_bucket).min(max)
    };
    (want > bits).then_some(want)
}

/// Window entries per block bucket the tables grow to keep.
const BLOCK_PER_BUCKET: usize = 4;
/// Window entries per band bucket the tables grow to keep.
const BAND_PER_BUCKET: usize = 32;

#[derive(Debug, Clone, Copy)]
struct Block {
    shift: u32,
    key_bits: u32,
}

/// k+1 permuted block tables over simhashes.
#[derive(Debug, Clone)]
pub struct Tables {
    k: u32,
    /// Bucket index bits now (a block narrower than that uses all its bits).
    bits: u32,
    /// Bits the tables grow to at most: what a full window calls for, and
    /// no more than the widest block.
    max_bits: u32,
    blocks: Vec<Block>,
    tables: Vec<BucketTable>,
}

impl Tables {
    /// Empty tables for radius `k` (0..=7) and a window of up to `capacity`
    /// entries, at their smallest size: see [`Tables::wants`].
    pub fn new(k: u32, capacity: usize) -> Tables {
        let k = k.min(7);
        let n = k + 1;
        let widest = 64 / n + u32::from(64 % n != 0);
        let max_bits = table_bits(capacity, BLOCK_PER_BUCKET).min(widest);
        Tables::with_bits(k, MIN_BITS.min(max_bits), max_bits)
    }

    fn with_bits(k: u32, bits: u32, max_bits: u32) -> Tables {
        let n = k + 1;
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
        Tables {
            k,
            bits,
            max_bits,
            blocks,
            tables,
        }
    }

    /// The index bits these tables should have once the window holds `n`
    /// entries, when that is more than they have: the caller then builds
    /// [`Tables::resized`] tables and inserts the window into them.
    pub fn wants(&self, n: usize) -> Option<u32> {
        wanted_bits(n, BLOCK_PER_BUCKET, self.bits, self.max_bits)
    }

    /// Empty tables of the same radius and bound with `bits` index bits.
    pub fn resized(&self, bits: u32) -> Tables {
        Tables::with_bits(self.k, bits.min(self.max_bits), self.max_bits)
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

    /// Bucket index bits now.
    pub fn bits(&self) -> u32 {
        self.bits
    }
}

/// One table per MinHash band.
///
/// A band key's bucket is given by the low bits of its upper half, which
/// is also the item's check: an item alone says which bucket it belongs in
/// at any table size, so the tables split their own buckets as they grow
/// and take back snapshot items whatever size they were saved at.
#[derive(Debug, Clone)]
pub struct Bands {
    bits: u32,
    max_bits: u32,
    tables: Vec<BucketTable>,
}

impl Bands {
    /// `n` band tables (0 disables the stage) for up to `capacity` entries,
    /// at their smallest size: see [`Bands::wants`].
    pub fn new(n: usize, capacity: usize) -> Bands {
        let max_bits = table_bits(capacity, BAND_PER_BUCKET);
        Bands {
            bits: MIN_BITS,
            max_bits,
            tables: (0..n).map(|_| BucketTable::new(MIN_BITS)).collect(),
        }
    }

    pub fn count(&self) -> usize {
        self.tables.len()
    }

    /// Table key and check of a band key: its upper half.
    fn half(key: u64) -> u64 {
        key >> 32
    }

    pub fn insert(&mut self, bands: &[u64], seq: u64) {
        for (t, key) in self.tables.iter_mut().zip(bands) {
            let half = Self::half(*key);
            t.insert(half, half as u32, seq);
        }
    }

    /// Puts an item of check bits `check` for `seq` in table `j` alone
    /// (none past the last table), in the bucket that the low bits of
    /// `check` name, as for any item: a table whose items are checked by
    /// more than their key (the anchor table).
    pub fn insert_check(&mut self, j: usize, check: u32, seq: u64) {
        if let Some(t) = self.tables.get_mut(j) {
            t.insert(u64::from(check), check, seq);
        }
    }

    /// The index bits these tables should have once the window holds `n`
    /// entries, when that is more than they have (see [`Bands::grow`]).
    pub fn wants(&self, n: usize) -> Option<u32> {
        wanted_bits(n, BAND_PER_BUCKET, self.bits, self.max_bits)
    }

    /// Splits every bucket to `bits` index bits (at most the tables'
    /// bound), keeping the items `live` accepts in their order and dropping
    /// the others; returns how many it dropped.
    pub fn grow(&mut self, bits: u32, live: impl Fn(u32) -> bool) -> usize {
        let bits = bits.clamp(self.bits, self.max_bits);
        self.bits = bits;
        let mut dropped = 0;
        for t in &mut self.tables {
            let old = std::mem::replace(t, BucketTable::new(bits));
            for b in old.buckets {
                for item in b {
                    if live(item as u32) {
                        t.push(t.index(item >> 32), item);
                    } else {
                        dropped += 1;
                    }
                }
            }
        }
        dropped
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
        for (j, key) in bands.iter().enumerate() {
            self.bucket(j, *key, out);
        }
    }

    /// Appends the bucket of `key` in table `j` to `out` (none past the
    /// last table).
    pub fn bucket<'a>(&'a self, j: usize, key: u64, out: &mut Vec<BucketScan<'a>>) {
        let Some(t) = self.tables.get(j) else {
            return;
        };
        let half = Self::half(key);
        let (older, newer) = t.newest(half);
        out.push(BucketScan {
            older,
            newer,
            check: half as u32,
            radius: None,
        });
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
        self.bits
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

    /// Puts back what [`Bands::to_parts`] produced, at any table size: each
    /// item goes to the bucket its check bits name (the saved bucket index
    /// is not needed), in sequence order. `offset` gives a live item's
    /// place in the window (None: stale, dropped). Returns false, leaving
    /// the tables empty, when the parts are for another number of tables:
    /// the caller then runs without the saved band items (the second stage
    /// relearns as mail arrives).
    pub fn restore_parts(
        &mut self,
        parts: Vec<Vec<(u32, Vec<u64>)>>,
        offset: impl Fn(u32) -> Option<u32>,
    ) -> bool {
        for t in &mut self.tables {
            t.buckets.iter_mut().for_each(VecDeque::clear);
        }
        if parts.len() != self.tables.len() {
            return false;
        }
        for (t, buckets) in self.tables.iter_mut().zip(parts) {
            for it in buckets.into_iter().flat_map(|(_, items)| items) {
                if offset(it as u32).is_some() {
                    t.push(t.index(it >> 32), it);
                }
            }
            // Each saved bucket is in order, and so is a new bucket that
            // takes items from one saved bucket only (the same or a larger
            // size); one that merges several is sorted.
            let key = |it: &u64| offset(*it as u32).unwrap_or(u32::MAX);
            for b in &mut t.buckets {
                if !b.iter().is_sorted_by_key(key) {
                    b.make_contiguous().sort_by_key(key);
                }
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
        assert!(c.restore_parts(parts.clone(), Some));
        assert_eq!(c.to_parts(|_| true), parts);
        let mut seen_b = Vec::new();
        let mut seen_c = Vec::new();
        b.candidates(&[0, 3, 1 << 40], |s| seen_b.push(s));
        c.candidates(&[0, 3, 1 << 40], |s| seen_c.push(s));
        assert_eq!(seen_b, seen_c);
        assert!(!seen_b.is_empty());
    }

    /// Keys that share their upper half share a band bucket at every size.
    fn keys(seq: u64) -> [u64; 2] {
        let k = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        [k, (k % 5) << 32]
    }

    /// Every band key's items, oldest first, through `candidates`.
    fn found(b: &Bands, n: u64) -> Vec<Vec<u32>> {
        (0..n)
            .map(|s| {
                let mut v = Vec::new();
                b.candidates(&keys(s), |x| v.push(x));
                v
            })
            .collect()
    }

    /// Grown tables find what tables built at their size find, stale
    /// items dropped on the way, bucket order kept.
    #[test]
    fn grown_band_tables_answer_as_full_sized_ones() {
        let n = 20_000u64;
        let mut grown = Bands::new(2, 1 << 20);
        let mut full = Bands::new(2, 1 << 20);
        full.grow(14, |_| true);
        assert_eq!(full.bits(), 14);
        for seq in 0..n {
            grown.insert(&keys(seq), seq);
            full.insert(&keys(seq), seq);
            if let Some(bits) = grown.wants(seq as usize + 1) {
                assert_eq!(grown.grow(bits, |_| true), 0);
            }
        }
        assert!(grown.bits() > MIN_BITS && grown.bits() < full.bits());
        grown.grow(14, |_| true);
        assert_eq!(found(&grown, n), found(&full, n));
        // Growing drops what `live` rejects.
        let mut b = Bands::new(1, 1 << 20);
        for seq in 0..100 {
            b.insert(&keys(seq)[..1], seq);
        }
        assert_eq!(b.grow(9, |low| low >= 40), 40);
        let mut left = 0;
        b.tables[0].buckets.iter().for_each(|x| left += x.len());
        assert_eq!(left, 60);
    }

    /// Saved items go back into tables of any size, each in the bucket its
    /// check bits name, in order; a table count that differs is refused.
    #[test]
    fn band_parts_fit_tables_of_any_size() {
        let n = 3000u64;
        let mut small = Bands::new(2, 1 << 20);
        for seq in 0..n {
            small.insert(&keys(seq), seq);
        }
        let parts = small.to_parts(|_| true);
        let mut big = Bands::new(2, 1 << 20);
        big.grow(12, |_| true);
        assert!(big.restore_parts(parts.clone(), Some));
        assert_eq!(found(&big, n), found(&small, n));
        // And back to the smaller size: buckets merge, and are sorted.
        let mut again = Bands::new(2, 1 << 20);
        assert!(again.restore_parts(big.to_parts(|_| true), Some));
        assert_eq!(found(&again, n), found(&small, n));
        // The saved bucket index is not needed: snapshots from before the
        // band tables took their buckets from the key's upper half filed
        // items elsewhere, and they go back where queries look.
        let scrambled: Vec<Vec<(u32, Vec<u64>)>> = parts
            .iter()
            .map(|t| {
                t.iter()
                    .map(|(i, b)| (i.wrapping_mul(7) % 256, b.clone()))
                    .collect()
            })
            .collect();
        let mut old = Bands::new(2, 1 << 20);
        assert!(old.restore_parts(scrambled, Some));
        assert_eq!(found(&old, n), found(&small, n));
        // Stale items (no offset) are left out.
        let mut live = Bands::new(2, 1 << 20);
        assert!(live.restore_parts(parts.clone(), |low| (low >= 1000).then_some(low)));
        assert!(found(&live, n).iter().flatten().all(|s| *s >= 1000));
        let mut fewer = Bands::new(1, 1 << 20);
        assert!(!fewer.restore_parts(parts, Some));
        assert!(found(&fewer, n).iter().all(Vec::is_empty));
    }
}
