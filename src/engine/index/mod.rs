//! Near-duplicate lookup: the sliding [`window::Window`] of recent messages,
//! the permuted block [`tables::Tables`] over their simhashes and the MinHash
//! [`tables::Bands`] over their band keys.
//!
//! An entry matches a query when its simhash is within Hamming distance k
//! (found exactly, through the block tables), or when it shares a MinHash
//! band, its b-bit sketch differs in at most `max_sketch_diff` of 32
//! values and its simhash is within `max_minhash_distance` (the second
//! stage, for pairs simhash places too far apart). Optionally it also
//! returns *corroborating* entries: band candidates that miss those tests
//! but pass looser ones (see [`NearIndex::with_corroboration`]); alone
//! they are not a match, and the engine counts them per campaign. And
//! *containing* entries: entries found by probing the band tables with
//! the message's second and third smallest MinHash values, within bounds
//! of their own ([`NearIndex::with_containment`]), for the containment
//! test alone.
//! [`NearIndex::query`] returns exactly those entries (a property test
//! compares it with a brute-force scan); [`NearIndex::evict_before`] removes
//! entries older than the window from all structures. No clock: callers pass
//! the time.

pub mod tables;
pub mod window;

use crate::engine::minhash::{mix, probe_keys, sketch_diff};
use crate::engine::shingle::{MAX_SENTENCE_KEYS, SENTENCE_ANCHORS};
use crate::engine::simhash::hamming;
use tables::{Bands, Tables};
use window::{Entry, Owner, Window};

/// Most matches [`NearIndex::query`] returns (the closest). More add
/// nothing to a verdict: they name the same few campaigns, and each one
/// costs the caller a campaign lookup.
pub const MAX_MATCHES: usize = 256;

/// Least band tables in which a probe must find an entry, through the
/// message's own band key or a probe key, for it to be a containing entry
/// ([`NearIndex::with_containment`]): each such table says that two of the
/// text's minimums are, whole, among the message's three smallest values.
/// The containment test compares only 2 bits of each value, and a text
/// of which the message holds a third can pass it by chance: under looser
/// candidate bounds than the shipped ones, two ham messages of the corpus
/// joined that way (docs/dev/quality.md); at 2 tables they did not, and at
/// the shipped bounds the corpus and the dressed suite measured the same
/// as at 1. (With one band table no entry qualifies.)
pub const MIN_PROBED_BANDS: u32 = 2;

/// The most band tables an index of `bands` MinHash bands keeps: its
/// anchor table included (see [`NearIndex::with_containment`]), whether
/// the containment rule is on or not, since a snapshot saved with it is
/// read without it ([`NearIndex::restore_parts`]).
pub fn max_band_tables(bands: usize) -> usize {
    bands + usize::from(bands > 0)
}

/// Bits of a text's first anchor in its anchor item's check bits (the
/// low ones, which name its bucket at every table size: band tables grow
/// to 20 index bits at most).
const FIRST_ANCHOR_BITS: u32 = 20;
const FIRST_ANCHOR_MASK: u32 = (1 << FIRST_ANCHOR_BITS) - 1;

/// The upper half of a sentence key: all a log entry carries of it.
fn upper(key: u64) -> u32 {
    (key >> 32) as u32
}

/// The 12 bits that stand for two anchors in an anchor item, whichever
/// comes first.
fn pair_check(x: u64, y: u64) -> u32 {
    (mix(u64::from(upper(x) ^ upper(y))) >> (32 + FIRST_ANCHOR_BITS)) as u32
}

/// The check bits of a text's anchor item: 20 bits of its first anchor
/// (its bucket, and checked) and 12 of the pair of the other two. One
/// item of 8 bytes a text instead of one an anchor (24 bytes: a window
/// entry's state went from 196 to 225 bytes, past the 220 asked). A
/// lookup key meets the items of its bucket whose 20 bits are its own and
/// whose 12 are those of a pair of the message's keys: by chance, for one
/// item in 34 a message of 16 keys (120 pairs) meets, and such a false
/// candidate still faces the containment test.
fn anchor_check(first: u64, second: u64, third: u64) -> u32 {
    (upper(first) & FIRST_ANCHOR_MASK) | (pair_check(second, third) << FIRST_ANCHOR_BITS)
}

/// What a query found of each entry (low sequence number, through the
/// message's own band, through a probe, the band tables, through its
/// anchors), one line an entry: an entry found through several tables
/// shares a band if any band table found it, and so for probes and
/// anchors.
fn merge_found(cands: &mut Vec<(u32, bool, bool, u32, bool)>) {
    cands.sort_unstable();
    cands.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 |= later.1;
            kept.2 |= later.2;
            kept.3 |= later.3;
            kept.4 |= later.4;
            true
        } else {
            false
        }
    });
}

/// The pair bits ([`pair_check`]) of every two of a message's lookup
/// keys, sorted and distinct (120 at most).
fn pair_checks(lookups: &[u64]) -> Vec<u32> {
    let mut pairs: Vec<u32> = Vec::with_capacity(lookups.len() * lookups.len() / 2);
    for (i, x) in lookups.iter().enumerate() {
        let later = lookups.get(i + 1..).unwrap_or_default();
        pairs.extend(later.iter().map(|y| pair_check(*x, *y)));
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The sentence keys a message looks anchors up by, or a text's anchors
/// in their order: each of another upper half than the one before (the
/// anchor table keeps bits of that half only), at most
/// [`MAX_SENTENCE_KEYS`].
fn anchor_lookups(sentences: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::with_capacity(sentences.len().min(MAX_SENTENCE_KEYS));
    for &k in sentences {
        if out.last().is_some_and(|l| l >> 32 == k >> 32) {
            continue;
        }
        if out.len() == MAX_SENTENCE_KEYS {
            break;
        }
        out.push(k);
    }
    out
}

/// A live campaign as the engine and the linking rule name it: by its
/// slot, or, for a campaign of one message (which has no slot until a
/// second message joins it or an operator corrects it), by the window
/// entry of that message. The one reference to a campaign in memory;
/// the stored forms (a window entry's owner, the exact set's value) are
/// read into it where they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignRef {
    Slot(u32),
    /// The sequence number of the entry whose message is the campaign.
    Alone(u64),
}

impl CampaignRef {
    /// The campaign of the window entry `seq` whose owner is `owner`.
    fn of(owner: Owner, seq: u64) -> CampaignRef {
        match owner {
            Owner::Slot(s) => CampaignRef::Slot(s),
            Owner::Alone(_) => CampaignRef::Alone(seq),
        }
    }
}

/// A match found in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub seq: u64,
    /// Simhash Hamming distance.
    pub distance: u32,
    /// Differing 2-bit MinHash values (0..=32).
    pub sketch_diff: u32,
    /// The entry's campaign.
    pub campaign: CampaignRef,
    /// The entry's MinHash sketch.
    pub sketch: u64,
    /// What the entry is to the message ([`MatchKind`]).
    pub kind: MatchKind,
    /// The entry's size class ([`window::size_class`]).
    pub size: u8,
}

/// A query: both fingerprints of a message.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    pub simhash: u64,
    pub sketch: u64,
    pub bands: &'a [u64],
    /// The three smallest MinHash values under each band's seeds, two per
    /// band ([`crate::engine::minhash::probe_keys`]): the band tables are
    /// probed with them for containing entries. Empty: no probes.
    pub smallest: &'a [[u32; 3]],
    /// The message's sentence keys
    /// ([`crate::engine::shingle::Features::sentences`]): the anchor
    /// table is looked up by each. Empty: no lookups.
    pub sentences: &'a [u64],
}

/// What [`NearIndex::to_parts`] returns and [`NearIndex::restore_parts`] takes.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexParts {
    /// Sequence number of the first entry.
    pub base: u64,
    /// Window entries, oldest first.
    pub entries: Vec<Entry>,
    /// Bucket index bits of the band tables when saved (a restore puts the
    /// items back at any size; the snapshot reader bounds the bucket count
    /// with it).
    pub band_bits: u32,
    /// Per band table, the non-empty buckets as (index, raw items).
    pub bands: Vec<Vec<(u32, Vec<u64>)>>,
    pub sweep_cursor: usize,
}

/// Window plus tables, kept in step.
#[derive(Debug, Clone)]
pub struct NearIndex {
    window: Window,
    tables: Tables,
    bands: Bands,
    /// Next band bucket to sweep for stale items.
    sweep_cursor: usize,
    /// Band items of entries that left the window and that the sweep has
    /// not dropped yet, at most: each near entry put one item in each band
    /// table. While it is 0 no stale item exists and inserts skip the
    /// sweep, so a window that has not started evicting pays nothing for
    /// it (the sweep's reads are cache misses on a large window). It
    /// overcounts only after a snapshot whose band tables did not fit was
    /// restored without them; the sweep then runs on, as it always did.
    stale_band_items: usize,
    max_entries: usize,
    max_sketch_diff: u32,
    max_minhash_distance: u32,
    /// Bounds of corroborating band candidates (sketch difference,
    /// distance); `None`: none are returned.
    corroboration: Option<(u32, u32)>,
    /// Bounds of containing entries; `None`: no probes.
    containment: Option<(u32, u32)>,
    /// The anchor table's place among the band tables (the last), when the
    /// index has one ([`NearIndex::with_containment`]).
    anchor_table: Option<usize>,
}

/// What a window entry found by a query is to the message, in the order
/// the query lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchKind {
    /// A match: within the window's radius or MinHash bounds.
    Near,
    /// Not a match by itself: a band candidate within the corroboration
    /// bounds only (see [`NearIndex::with_corroboration`]).
    Corroborating,
    /// Not even corroboration: found by a band probe only, within the
    /// containment bounds (see [`NearIndex::with_containment`]). The
    /// linking rule only tests whether the message contains it.
    Containing,
    /// Not even corroboration: an entry whose anchors (its text's
    /// smallest sentence key of each third,
    /// [`Sentences::anchors`](crate::engine::shingle::Sentences::anchors))
    /// the message holds whole, as its anchor item's bits tell, at any
    /// sketch difference and distance (see [`NearIndex::with_containment`]).
    /// The linking rule only tests whether the message contains it.
    Anchored,
}

impl Match {
    /// Not a match by itself (corroborating or containing).
    pub fn corroborating(&self) -> bool {
        self.kind != MatchKind::Near
    }

    /// Evidence for the containment test alone: found by a band probe
    /// ([`MatchKind::Containing`]) or by its anchors
    /// ([`MatchKind::Anchored`]) only.
    pub fn containing(&self) -> bool {
        matches!(self.kind, MatchKind::Containing | MatchKind::Anchored)
    }
}

impl NearIndex {
    /// An empty index of radius `k` holding at most `max_entries`, with
    /// `bands` MinHash band tables (0 disables the second stage).
    pub fn new(
        k: u32,
        max_entries: usize,
        bands: usize,
        max_sketch_diff: u32,
        max_minhash_distance: u32,
    ) -> NearIndex {
        NearIndex {
            window: Window::default(),
            tables: Tables::new(k, max_entries),
            bands: Bands::new(bands, max_entries),
            sweep_cursor: 0,
            stale_band_items: 0,
            max_entries: max_entries.max(1),
            max_sketch_diff,
            max_minhash_distance,
            corroboration: None,
            containment: None,
            anchor_table: None,
        }
    }

    /// Also returns, as `corroborating` matches, band candidates that do
    /// not match but whose sketch differs in at most `max_sketch_diff`
    /// values and whose simhash is at most `max_distance` away.
    pub fn with_corroboration(mut self, max_sketch_diff: u32, max_distance: u32) -> NearIndex {
        self.corroboration = Some((max_sketch_diff, max_distance));
        self
    }

    /// Also probes the band tables with the query's other keys
    /// ([`Query::smallest`]) and returns, as [`MatchKind::Containing`]
    /// entries, those found by a probe, in at least
    /// [`MIN_PROBED_BANDS`] tables (by probe or own band key), that neither
    /// match nor corroborate but whose sketch differs in at most
    /// `max_sketch_diff` values and whose simhash is at most
    /// `max_distance` away. A copy diluted with other words may share no
    /// band with its text, since what was added holds some of its
    /// minimums; the text's minimums are still among its three smallest
    /// values.
    ///
    /// With band tables, also keeps an anchor table (one more band table,
    /// the last): one item for each entry whose text has anchors
    /// ([`Sentences::anchors`](crate::engine::shingle::Sentences::anchors)),
    /// in the bucket of its first anchor, with bits of all three
    /// (`anchor_check`); a query looks it up by each of its sentence keys
    /// ([`Query::sentences`]), and an entry whose anchors it holds is
    /// returned as [`MatchKind::Anchored`] whatever its sketch difference
    /// and distance. A copy diluted with more words than the sketch
    /// bounds allow still holds its text's sentences whole.
    pub fn with_containment(mut self, max_sketch_diff: u32, max_distance: u32) -> NearIndex {
        self.containment = Some((max_sketch_diff, max_distance));
        let n = self.band_count();
        if n > 0 && self.anchor_table.is_none() && self.window.is_empty() {
            self.bands = Bands::new(n + 1, self.max_entries);
            self.anchor_table = Some(n);
        }
        self
    }

    pub fn max_minhash_distance(&self) -> u32 {
        self.max_minhash_distance
    }

    pub fn radius(&self) -> u32 {
        self.tables.radius()
    }

    /// MinHash band tables (the anchor table is not one).
    pub fn band_count(&self) -> usize {
        self.bands.count() - usize::from(self.anchor_table.is_some())
    }

    pub fn max_sketch_diff(&self) -> u32 {
        self.max_sketch_diff
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

    /// Does entry `e` match the query by the rules above, corroborate it,
    /// or may the query contain it? (`shares_band`; `probed`, whether band
    /// probes found it in enough tables; and `anchored`, whether the query
    /// holds all its anchors, are known by the caller.) Returns the
    /// distance, the sketch difference and which.
    fn accept(
        &self,
        e: &Entry,
        q: &Query<'_>,
        shares_band: bool,
        probed: bool,
        anchored: bool,
    ) -> Option<(u32, u32, MatchKind)> {
        let d = hamming(e.simhash, q.simhash);
        let sd = sketch_diff(e.sketch, q.sketch);
        let by_minhash =
            shares_band && sd <= self.max_sketch_diff && d <= self.max_minhash_distance;
        if d <= self.tables.radius() || by_minhash {
            return Some((d, sd, MatchKind::Near));
        }
        let within =
            |b: Option<(u32, u32)>| b.is_some_and(|(max_sd, max_d)| sd <= max_sd && d <= max_d);
        if shares_band && within(self.corroboration) {
            Some((d, sd, MatchKind::Corroborating))
        } else if anchored {
            Some((d, sd, MatchKind::Anchored))
        } else if probed && within(self.containment) {
            Some((d, sd, MatchKind::Containing))
        } else {
            None
        }
    }

    /// The window, to change an entry's owner (the tables key entries by
    /// sequence number, not by owner).
    pub(crate) fn window_mut(&mut self) -> &mut Window {
        &mut self.window
    }

    /// Every live near entry matching `q`, each once, then the
    /// corroborating ones, then the containing ones, each group sorted by
    /// sketch difference, then distance, then sequence number; at most
    /// [`MAX_MATCHES`] of them (the closest), found among the newest
    /// [`tables::MAX_BUCKET_SCAN`] items of each bucket.
    ///
    /// Implementation note: the work is O(c log c) for c candidates, and c
    /// is at most `MAX_BUCKET_SCAN` per table, so a lookup costs a bounded
    /// amount however many copies of one text the window holds. (Checking
    /// each candidate against the matches found so far, as this once did,
    /// made a flood of n identical messages cost O(n²) per message.)
    pub fn query(&self, q: &Query<'_>) -> Vec<Match> {
        // (low sequence number, found through a band); a candidate comes
        // once per table it is in, so sort and merge its duplicates.
        let mut scans = Vec::with_capacity(16);
        self.tables.buckets(q.simhash, &mut scans);
        let blocks = scans.len();
        // (Never the anchor table: a host with more bands sends more keys.)
        self.bands.buckets(
            q.bands.get(..self.band_count()).unwrap_or(q.bands),
            &mut scans,
        );
        let banded = scans.len();
        // With probes, the band table of each scan past the block tables,
        // as a bit.
        let bit = |j: usize| 1u32.checked_shl(j as u32).unwrap_or(0);
        let mut table_bits: Vec<u32> = Vec::new();
        if self.containment.is_some() {
            table_bits.extend((0..banded - blocks).map(bit));
            for j in 0..self.band_count() {
                for key in probe_keys(q.smallest, j) {
                    self.bands.bucket(j, key, &mut scans);
                    table_bits.push(bit(j));
                }
            }
        }
        let probed_end = scans.len();
        // A message of fewer keys than a text has anchors holds no text's
        // anchors: no lookups (most short mail).
        let mut lookups = anchor_lookups(q.sentences);
        if lookups.len() < SENTENCE_ANCHORS {
            lookups.clear();
        }
        let pairs = self.anchor_table.map_or_else(Vec::new, |t| {
            lookups
                .iter()
                .for_each(|x| self.bands.bucket(t, *x, &mut scans));
            pair_checks(&lookups)
        });
        tables::warm(&scans);
        // (low sequence number, found through the message's own band,
        // found through a probe, the band tables that found it, found
        // through its anchors)
        let mut cands: Vec<(u32, bool, bool, u32, bool)> = Vec::new();
        for (i, s) in scans.iter().enumerate() {
            let (band, probe) = (i >= blocks && i < banded, i >= banded && i < probed_end);
            let tables = i
                .checked_sub(blocks)
                .and_then(|t| table_bits.get(t))
                .copied()
                .unwrap_or(0);
            match i.checked_sub(probed_end).and_then(|l| lookups.get(l)) {
                // An anchor item: its first anchor is this lookup key (in
                // the bits it keeps of it), its other two a pair of the
                // message's keys.
                Some(key) => s.run_items(|it| {
                    let check = (it >> 32) as u32;
                    if check & FIRST_ANCHOR_MASK == upper(*key) & FIRST_ANCHOR_MASK
                        && pairs.binary_search(&(check >> FIRST_ANCHOR_BITS)).is_ok()
                    {
                        cands.push((it as u32, band, probe, tables, true));
                    }
                }),
                None => s.run(|low| cands.push((low, band, probe, tables, false))),
            }
        }
        merge_found(&mut cands);
        let mut out: Vec<Match> = cands
            .into_iter()
            .filter_map(|(low, shares_band, probed, tables, anchored)| {
                let (seq, e) = self.window.get_by_low(low)?;
                let probed = probed && tables.count_ones() >= MIN_PROBED_BANDS;
                let (d, sd, kind) = self.accept(e, q, shares_band, probed, anchored)?;
                Some(Match {
                    seq,
                    distance: d,
                    sketch_diff: sd,
                    campaign: CampaignRef::of(e.owner(), seq),
                    sketch: e.sketch,
                    kind,
                    size: e.size(),
                })
            })
            .collect();
        out.sort_unstable_by_key(|m| {
            (
                m.corroborating(),
                m.containing(),
                m.sketch_diff,
                m.distance,
                m.seq,
            )
        });
        out.truncate(MAX_MATCHES);
        out
    }

    /// Adds an entry (with its band keys and its text's anchors, both
    /// ignored when `e.near` is false); if the window is full, the oldest
    /// entry leaves first and is returned so the caller can update its
    /// campaign.
    pub fn insert(&mut self, e: Entry, bands: &[u64], anchors: &[u64]) -> Option<Entry> {
        let evicted = if self.window.len() >= self.max_entries {
            self.pop_oldest()
        } else {
            None
        };
        let seq = self.window.push(e, self.max_entries);
        if e.near() {
            self.tables.insert(e.simhash, seq);
            self.bands
                .insert(bands.get(..self.band_count()).unwrap_or(bands), seq);
            if let (Some(t), [a, b, c, ..]) = (self.anchor_table, &anchor_lookups(anchors)[..]) {
                self.bands.insert_check(t, anchor_check(*a, *b, *c), seq);
            }
        }
        self.grow_tables();
        if self.stale_band_items > 0 {
            let window = &self.window;
            let (next, dropped) = self
                .bands
                .sweep(self.sweep_cursor, 4, |low| window.get_by_low(low).is_some());
            self.sweep_cursor = next;
            self.stale_band_items = self.stale_band_items.saturating_sub(dropped);
        }
        evicted
    }

    /// Doubles the tables when the window has outgrown them (see
    /// [`tables`], Growth): the block tables are rebuilt from the window,
    /// the band tables split their buckets and drop their stale items on
    /// the way. Each doubling costs time in proportion to the window, once
    /// per doubling: O(1) per insertion over the window's life.
    fn grow_tables(&mut self) {
        let n = self.window.len();
        if let Some(bits) = self.tables.wants(n) {
            self.fill_tables(self.tables.resized(bits));
        }
        if let Some(bits) = self.bands.wants(n) {
            let window = &self.window;
            self.bands
                .grow(bits, |low| window.get_by_low(low).is_some());
            self.stale_band_items = 0;
            self.sweep_cursor = 0;
        }
    }

    /// Puts in `tables` (empty) and inserts the window's near entries.
    fn fill_tables(&mut self, tables: Tables) {
        self.tables = tables;
        for (seq, e) in self.window.iter() {
            if e.near() {
                self.tables.insert(e.simhash, seq);
            }
        }
    }

    /// Removes the oldest entry.
    pub fn pop_oldest(&mut self) -> Option<Entry> {
        let (seq, e) = self.window.pop_front()?;
        if e.near() {
            self.tables.remove_oldest(e.simhash, seq);
            // Band items only: whether the entry had an anchor item is not
            // kept. The sweep drops stale anchor items in the same passes,
            // and they count against this, so it may stop with some left;
            // the next eviction starts it again.
            self.stale_band_items += self.band_count();
        }
        Some(e)
    }

    /// Removes every entry older than `cutoff` (Unix seconds) from the front,
    /// calling `evicted` for each.
    pub fn evict_before(&mut self, cutoff: u64, mut evicted: impl FnMut(&Entry)) {
        while self
            .window
            .front()
            .is_some_and(|e| u64::from(e.time) < cutoff)
        {
            if let Some(e) = self.pop_oldest() {
                evicted(&e);
            }
        }
    }

    /// The state a snapshot needs: the window (first sequence number and
    /// entries) and the band items. The block tables are not included:
    /// they are a function of the window and [`NearIndex::restore_parts`]
    /// rebuilds them.
    pub fn to_parts(&self) -> IndexParts {
        IndexParts {
            base: self.window.next_seq() - self.window.len() as u64,
            entries: self.window.iter().map(|(_, e)| *e).collect(),
            band_bits: self.bands.bits(),
            bands: self
                .bands
                .to_parts(|low| self.window.get_by_low(low).is_some()),
            sweep_cursor: self.sweep_cursor,
        }
    }

    /// Replaces the contents with snapshot parts: the window, the block
    /// tables rebuilt from it, and the live band items, at the table size
    /// the window calls for (whatever size they were saved at). Returns
    /// whether the band items were restored (false: the parts are for
    /// another number of band tables; the band tables start empty and
    /// refill as mail arrives). The caller keeps `parts.entries` within
    /// `max_entries` (the snapshot reader refuses more); the next
    /// insertion evicts as usual.
    pub fn restore_parts(&mut self, mut parts: IndexParts) -> bool {
        // A snapshot of a build without the anchor table: its band tables,
        // and an anchor table that fills as mail arrives.
        if self.anchor_table.is_some() && parts.bands.len() == self.band_count() {
            parts.bands.push(Vec::new());
        }
        // One saved with an anchor table, restored without (containment
        // turned off): the band tables alone.
        if self.anchor_table.is_none() && parts.bands.len() == self.band_count() + 1 {
            parts.bands.pop();
        }
        self.window = Window::from_parts(parts.base, parts.entries);
        let n = self.window.len();
        let tables = Tables::new(self.tables.radius(), self.max_entries);
        self.fill_tables(match tables.wants(n) {
            Some(bits) => tables.resized(bits),
            None => tables,
        });
        self.bands = Bands::new(self.bands.count(), self.max_entries);
        if let Some(bits) = self.bands.wants(n) {
            self.bands.grow(bits, |_| true);
        }
        // Stale items, which snapshots of earlier versions may hold, are
        // left out: the count of stale items starts at its true value, 0.
        let base = self.window.next_seq() - n as u64;
        let restored = self.bands.restore_parts(parts.bands, |low| {
            let offset = low.wrapping_sub(base as u32);
            ((offset as usize) < n).then_some(offset)
        });
        self.stale_band_items = 0;
        self.sweep_cursor = parts.sweep_cursor % self.bands.buckets_per_table().max(1);
        restored
    }

    /// Heap bytes held by window and tables.
    pub fn heap_bytes(&self) -> usize {
        self.window.heap_bytes() + self.tables.heap_bytes() + self.bands.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::minhash::band_key;
    use proptest::prelude::*;

    fn entry(h: u64, time: u32) -> Entry {
        Entry::new(h, h.rotate_left(17), time, Owner::Slot(0), 1, 0, 100, true)
    }

    fn bands_of(h: u64) -> [u64; 2] {
        // Synthetic band keys: shared by fingerprints with the same top 12
        // bits, in the upper half of the key, where band tables take their
        // bucket and check bits (real keys are uniform in all 64 bits).
        // (With 8 such bits, 100k entries made band buckets of about 400
        // items, past MAX_BUCKET_SCAN: a flood, where the newest items are
        // read and brute force is not the reference. Real band tables hold
        // about 32 items a bucket at capacity.)
        [(h >> 52) << 32, ((h >> 40) & 0xFFF | 0x1000) << 32]
    }

    fn q(h: u64, b: &[u64]) -> Query<'_> {
        Query {
            simhash: h,
            sketch: h.rotate_left(17),
            bands: b,
            smallest: &[],
            sentences: &[],
        }
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

    /// A new random fingerprint (when `new`, and for the first), kept in
    /// `bases`; else a copy of one of `bases` with 0..=`max_flip` bits
    /// flipped.
    fn clustered(new: bool, bases: &mut Vec<u64>, max_flip: u32, st: &mut u64) -> u64 {
        if new || bases.is_empty() {
            let b = splitmix(st);
            bases.push(b);
            return b;
        }
        let b = bases[(splitmix(st) as usize) % bases.len()];
        flip(b, (splitmix(st) % u64::from(max_flip + 1)) as u32, st)
    }

    /// The oracle: scan every live entry and apply the match rule directly.
    fn brute(idx: &NearIndex, h: u64, bands: &[u64]) -> Vec<(u64, u32)> {
        brute_all(idx, h, bands)
            .into_iter()
            .filter(|m| !m.2)
            .map(|(s, d, _, _)| (s, d))
            .collect()
    }

    /// The oracle with corroborating and containing entries: (seq,
    /// distance, corroborating, containing), in the order
    /// [`NearIndex::query`] promises.
    fn brute_all(idx: &NearIndex, h: u64, bands: &[u64]) -> Vec<(u64, u32, bool, bool)> {
        oracle(idx, &q(h, bands), |e| bands_of(e).to_vec())
    }

    /// The oracle for any query, given each entry's band keys.
    fn oracle(
        idx: &NearIndex,
        q: &Query<'_>,
        bands: impl Fn(u64) -> Vec<u64>,
    ) -> Vec<(u64, u32, bool, bool)> {
        let mut v: Vec<(bool, bool, u32, u32, u64)> = idx
            .window()
            .iter()
            .filter_map(|(s, e)| {
                let d = hamming(e.simhash, q.simhash);
                let sd = sketch_diff(e.sketch, q.sketch);
                let own = bands(e.simhash);
                let shares = own
                    .iter()
                    .zip(q.bands)
                    .take(idx.band_count())
                    .any(|(a, b)| a == b);
                let found = |j: usize, a: &u64| {
                    q.bands.get(j) == Some(a) || probe_keys(q.smallest, j).any(|k| k == *a)
                };
                let tables = own
                    .iter()
                    .take(idx.band_count())
                    .enumerate()
                    .filter(|(j, a)| found(*j, a))
                    .count();
                let by_probe = own
                    .iter()
                    .take(idx.band_count())
                    .enumerate()
                    .any(|(j, a)| probe_keys(q.smallest, j).any(|k| k == *a));
                let probed =
                    idx.containment.is_some() && by_probe && tables >= MIN_PROBED_BANDS as usize;
                let strict = d <= idx.radius()
                    || (shares && sd <= idx.max_sketch_diff() && d <= idx.max_minhash_distance());
                let within = |b: Option<(u32, u32)>| {
                    b.is_some_and(|(max_sd, max_d)| sd <= max_sd && d <= max_d)
                };
                let corroborating = !strict && shares && within(idx.corroboration);
                let containing = !strict && !corroborating && probed && within(idx.containment);
                (strict || corroborating || containing).then_some((
                    corroborating || containing,
                    containing,
                    sd,
                    d,
                    s,
                ))
            })
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(c, k, _, d, s)| (s, d, c, k)).collect()
    }

    /// An entry whose every anchor a query's sentence keys hold comes back
    /// as anchored whatever its fingerprints; one anchor missing, or an
    /// index without containment, and it does not; a text with fewer
    /// anchors than that leaves none; after a snapshot of a build without
    /// the anchor table, the band items come back and anchors refill.
    #[test]
    fn an_entry_whose_anchors_a_query_holds_is_anchored() {
        let anchors = [7u64 << 32, 3 << 32, 9 << 32];
        let mut idx = NearIndex::new(3, 100, 2, 2, 6).with_containment(10, 20);
        assert_eq!((idx.band_count(), idx.bands.count()), (2, 3));
        idx.insert(entry(0x1234, 1), &bands_of(0x1234), &anchors);
        idx.insert(entry(0x5678, 2), &bands_of(0x5678), &anchors[..2]);
        // Far in every fingerprint, the anchors among other keys.
        let far = !0x1234u64;
        let held = [1 << 32, 3 << 32, 5 << 32, 7 << 32, 9 << 32];
        let query = |idx: &NearIndex, keys: &[u64]| {
            idx.query(&Query {
                sentences: keys,
                ..q(far, &bands_of(far))
            })
        };
        let got = query(&idx, &held);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].seq, got[0].kind), (0, MatchKind::Anchored));
        assert!(got[0].containing() && got[0].sketch_diff > 20);
        assert!(query(&idx, &held[..4]).is_empty(), "an anchor missing");
        let plain = NearIndex::new(3, 100, 2, 2, 6);
        let mut plain = plain.with_corroboration(10, 20);
        plain.insert(entry(0x1234, 1), &bands_of(0x1234), &anchors);
        assert!(
            query(&plain, &held).is_empty(),
            "no containment, no anchors"
        );
        // A snapshot without the anchor table (two band tables).
        let mut parts = idx.to_parts();
        assert_eq!(parts.bands.len(), 3);
        parts.bands.pop();
        let mut back = NearIndex::new(3, 100, 2, 2, 6).with_containment(10, 20);
        assert!(back.restore_parts(parts));
        assert!(query(&back, &held).is_empty());
        assert_eq!(back.query(&q(0x1234, &bands_of(0x1234))).len(), 1);
        back.insert(entry(0x1234, 3), &bands_of(0x1234), &anchors);
        assert_eq!(query(&back, &held).len(), 1);
        // And one saved with the anchor table, restored without it.
        let mut off = NearIndex::new(3, 100, 2, 2, 6);
        assert!(off.restore_parts(back.to_parts()));
        assert_eq!(off.query(&q(0x1234, &bands_of(0x1234))).len(), 2);
    }

    /// Corroborating entries: band candidates that fail the match tests
    /// but pass the looser bounds come back after the matches, and only
    /// with corroboration on.
    #[test]
    fn corroborating_entries_equal_brute_force() {
        let mut st = 99;
        let mut idx = NearIndex::new(3, 50_000, 2, 2, 6).with_corroboration(6, 12);
        let mut bases = Vec::new();
        for i in 0..30_000u32 {
            let h = clustered(i % 8 == 0, &mut bases, 12, &mut st);
            idx.insert(entry(h, i), &bands_of(h), &[]);
        }
        let mut plain = idx.clone();
        plain.corroboration = None;
        let (mut strict, mut corroborating) = (0, 0);
        for n in 0..1_000 {
            let b = bases[(splitmix(&mut st) as usize) % bases.len()];
            let h = flip(b, n % 13, &mut st);
            let got = idx.query(&q(h, &bands_of(h)));
            let seen: Vec<(u64, u32, bool, bool)> = got
                .iter()
                .map(|m| (m.seq, m.distance, m.corroborating(), m.containing()))
                .collect();
            let want = brute_all(&idx, h, &bands_of(h));
            assert_eq!(seen, want, "query {n}");
            strict += got.iter().filter(|m| !m.corroborating()).count();
            corroborating += got.iter().filter(|m| m.corroborating()).count();
            let without: Vec<Match> = got.into_iter().filter(|m| !m.corroborating()).collect();
            assert_eq!(plain.query(&q(h, &bands_of(h))), without);
        }
        assert!(
            strict > 300 && corroborating > 300,
            "{strict} {corroborating}"
        );
    }

    /// Synthetic three smallest values under four seeds (two bands): of
    /// the fingerprint's cluster (its top 12 bits), three of four values,
    /// from one its low bits pick. Two fingerprints of a cluster share a
    /// band when they pick the same first values under both its seeds; a
    /// probe of either finds the other in a table when its three values
    /// under each of the table's seeds hold the other's first (so some are
    /// found in one table only).
    fn smallest_of(h: u64) -> [[u32; 3]; 4] {
        let cluster = (h >> 52) as u32;
        std::array::from_fn(|i| {
            let first = ((h >> (2 * i)) & 3) as u32;
            std::array::from_fn(|r| (cluster << 8) | ((i as u32) << 4) | ((first + r as u32) % 4))
        })
    }

    fn probed_bands_of(h: u64) -> Vec<u64> {
        let m = smallest_of(h);
        vec![band_key(m[0][0], m[1][0]), band_key(m[2][0], m[3][0])]
    }

    /// Containing entries: what a band probe finds that neither matches
    /// nor corroborates, within the containment bounds, in at least
    /// [`MIN_PROBED_BANDS`] tables, after the others; none without probes;
    /// the rest of the answer unchanged by them.
    #[test]
    fn containing_entries_equal_brute_force() {
        let mut st = 7;
        let mut idx = NearIndex::new(3, 50_000, 2, 2, 6)
            .with_corroboration(6, 12)
            .with_containment(9, 16);
        let mut bases = Vec::new();
        for i in 0..30_000u32 {
            let h = clustered(i % 8 == 0, &mut bases, 12, &mut st);
            idx.insert(entry(h, i), &probed_bands_of(h), &[]);
        }
        let mut unprobed = idx.clone();
        unprobed.containment = None;
        let (mut corroborating, mut containing, mut one_table) = (0, 0, 0);
        for n in 0..1_000 {
            let b = bases[(splitmix(&mut st) as usize) % bases.len()];
            let h = flip(b, n % 17, &mut st);
            // Entries a probe finds in one table alone: never containing.
            one_table += idx
                .window()
                .iter()
                .filter(|(_, e)| {
                    let (own, mins) = (probed_bands_of(e.simhash), smallest_of(h));
                    let found = (0..2)
                        .filter(|&j| {
                            own.get(j) == probed_bands_of(h).get(j)
                                || probe_keys(&mins, j).any(|k| Some(&k) == own.get(j))
                        })
                        .count();
                    found == 1 && hamming(e.simhash, h) <= 16
                })
                .count();
            let (bands, smallest) = (probed_bands_of(h), smallest_of(h));
            let query = Query {
                smallest: &smallest,
                ..q(h, &bands)
            };
            let got = idx.query(&query);
            let seen: Vec<(u64, u32, bool, bool)> = got
                .iter()
                .map(|m| (m.seq, m.distance, m.corroborating(), m.containing()))
                .collect();
            assert_eq!(seen, oracle(&idx, &query, probed_bands_of), "query {n}");
            corroborating += got
                .iter()
                .filter(|m| m.corroborating() && !m.containing())
                .count();
            containing += got.iter().filter(|m| m.containing()).count();
            let others: Vec<Match> = got.into_iter().filter(|m| !m.containing()).collect();
            assert_eq!(unprobed.query(&query), others);
        }
        assert!(
            corroborating > 150 && containing > 50 && one_table > 50,
            "{corroborating} {containing} {one_table}"
        );
    }

    #[test]
    fn query_equals_brute_force_on_100k_fingerprints() {
        for (k, nbands) in [(3u32, 0usize), (4, 0), (3, 2)] {
            let mut st = 42 + u64::from(k) + nbands as u64;
            let mut idx = NearIndex::new(k, 200_000, nbands, 10, 40);
            let mut bases = Vec::new();
            for i in 0..100_000u32 {
                // Clusters: most fingerprints are a near copy of an earlier one,
                // at distances 0..=k+2, so both sides of the radius are tested.
                let h = clustered(i % 4 == 0, &mut bases, k + 2, &mut st);
                idx.insert(entry(h, i), &bands_of(h), &[]);
            }
            for n in 0..1_000 {
                let b = bases[(splitmix(&mut st) as usize) % bases.len()];
                let h = flip(b, n % (k + 3), &mut st);
                let got: Vec<(u64, u32)> = idx
                    .query(&q(h, &bands_of(h)))
                    .iter()
                    .map(|m| (m.seq, m.distance))
                    .collect();
                assert_eq!(
                    got,
                    brute(&idx, h, &bands_of(h)),
                    "k={k} bands={nbands} query {n}"
                );
            }
        }
    }

    /// A flood of one fingerprint (a large campaign of identical copies, or
    /// messages built to land in one bucket) fills one bucket per table.
    /// Buckets never hold more than the window (plus stale band items the
    /// sweep has not reached), and a lookup reads a bounded number of items
    /// and returns a bounded number of matches: per-message work does not
    /// grow with the flood.
    #[test]
    fn a_flood_of_one_fingerprint_costs_bounded_work_per_lookup() {
        use tables::MAX_BUCKET_SCAN;
        let h = 0x0123_4567_89AB_CDEF;
        let max_entries = 4 * MAX_BUCKET_SCAN;
        let mut idx = NearIndex::new(3, max_entries, 2, 10, 64);
        // The band sweep visits 4 buckets per insertion.
        let stale = (1usize << idx.bands.bits()) / 4;
        for t in 0..(3 * max_entries) as u32 {
            idx.insert(entry(h, t), &bands_of(h), &[]);
            if t % 64 == 0 {
                assert!(idx.tables.longest_bucket() <= max_entries);
                assert!(idx.bands.longest_bucket() <= max_entries + stale);
            }
        }
        assert_eq!(idx.len(), max_entries);
        assert_eq!(idx.tables.longest_bucket(), max_entries);
        let mut read = 0;
        idx.tables.candidates(h, |_| read += 1);
        assert_eq!(
            read,
            4 * MAX_BUCKET_SCAN,
            "k + 1 = 4 tables, newest items only"
        );
        let mut read = 0;
        idx.bands.candidates(&bands_of(h), |_| read += 1);
        assert_eq!(read, 2 * MAX_BUCKET_SCAN);
        let m = idx.query(&q(h, &bands_of(h)));
        assert_eq!(m.len(), MAX_MATCHES);
        assert!(m.iter().all(|x| x.distance == 0 && x.sketch_diff == 0));
        let newest = idx.window().next_seq();
        assert!(m.iter().all(|x| x.seq >= newest - MAX_BUCKET_SCAN as u64));
    }

    /// Band items of entries that left the window are dropped by the
    /// sweep; the count of stale items then comes back to 0 (inserts stop
    /// sweeping), and a restore drops every stale item a snapshot holds.
    #[test]
    fn stale_band_items_are_swept_counted_and_dropped_on_restore() {
        fn items(parts: &[Vec<(u32, Vec<u64>)>]) -> usize {
            parts.iter().flatten().map(|(_, items)| items.len()).sum()
        }
        fn band_items(idx: &NearIndex) -> usize {
            items(&idx.bands.to_parts(|_| true))
        }
        let mut st = 11;
        let mut idx = NearIndex::new(3, 100, 2, 10, 64);
        for t in 0..100 {
            let h = splitmix(&mut st);
            idx.insert(entry(h, t), &bands_of(h), &[]);
        }
        assert_eq!(idx.stale_band_items, 0, "nothing has left the window");
        assert_eq!(band_items(&idx), 200);
        idx.evict_before(1000, |_| {});
        assert!(idx.is_empty());
        assert_eq!(idx.stale_band_items, 200);
        let mut saved = idx.to_parts();
        assert!(
            saved.bands.iter().all(Vec::is_empty),
            "a snapshot holds no stale band item"
        );
        // Snapshots of earlier versions did: restore one below.
        saved.bands = idx.bands.to_parts(|_| true);
        // The sweep visits 4 buckets per table and insertion: this many
        // insertions visit them all, and the window does not fill.
        let rounds = idx.bands.buckets_per_table() / 4 + 1;
        assert!(rounds < 100);
        for t in 0..rounds as u32 {
            let h = splitmix(&mut st);
            idx.insert(entry(h, 1000 + t), &bands_of(h), &[]);
        }
        assert_eq!(idx.stale_band_items, 0);
        assert_eq!(band_items(&idx), 2 * idx.len(), "only live items left");
        let mut restored = NearIndex::new(3, 100, 2, 10, 64);
        assert_eq!(items(&saved.bands), 200);
        assert!(restored.restore_parts(saved));
        assert_eq!(band_items(&restored), 0);
        assert_eq!(restored.stale_band_items, 0);
    }

    #[test]
    fn distance_k_is_found_and_k_plus_one_is_not() {
        let mut st = 7;
        let mut idx = NearIndex::new(3, 1000, 0, 0, 0);
        let h = splitmix(&mut st);
        idx.insert(entry(h, 0), &[], &[]);
        for _ in 0..200 {
            let a = flip(h, 3, &mut st);
            let b = flip(h, 4, &mut st);
            assert_eq!(idx.query(&q(a, &[])).len(), 1);
            assert!(idx.query(&q(b, &[])).is_empty());
        }
    }

    #[test]
    fn eviction_by_time_and_by_size() {
        let mut idx = NearIndex::new(3, 3, 2, 10, 64);
        for t in 0..3 {
            let h = u64::from(t) * 0x1111;
            assert!(idx.insert(entry(h, t), &bands_of(h), &[]).is_none());
        }
        let out = idx
            .insert(entry(0xFFFF, 3), &bands_of(0xFFFF), &[])
            .expect("full window evicts");
        assert_eq!(out.time, 0);
        assert!(idx
            .query(&q(0, &bands_of(0)))
            .iter()
            .all(|m| m.distance > 0));
        let mut gone = Vec::new();
        idx.evict_before(3, |e| gone.push(e.time));
        assert_eq!(gone, vec![1, 2]);
        assert_eq!(idx.len(), 1);
        assert_eq!(idx.query(&q(0xFFFF, &bands_of(0xFFFF))).len(), 1);
    }

    #[test]
    fn parts_round_trip_answers_queries_alike() {
        let mut st = 11;
        let mut idx = NearIndex::new(3, 500, 2, 10, 64);
        for t in 0..400u32 {
            let h = splitmix(&mut st);
            idx.insert(entry(h, t), &bands_of(h), &[]);
        }
        idx.evict_before(50, |_| {});
        let parts = idx.to_parts();
        let mut back = NearIndex::new(3, 500, 2, 10, 64);
        let bands_ok = back.restore_parts(parts.clone());
        assert!(bands_ok);
        assert_eq!(back.to_parts(), parts);
        for (_, e) in idx.window().iter().step_by(7) {
            let probe = flip(e.simhash, 2, &mut st);
            assert_eq!(
                idx.query(&q(probe, &bands_of(probe))),
                back.query(&q(probe, &bands_of(probe)))
            );
        }
        // A window of another capacity takes the same parts, and answers
        // alike.
        let mut other = NearIndex::new(3, 1 << 20, 2, 10, 64);
        assert!(other.restore_parts(parts));
        assert_eq!(other.len(), idx.len());
        for (_, e) in idx.window().iter().step_by(7) {
            let probe = flip(e.simhash, 2, &mut st);
            assert_eq!(
                idx.query(&q(probe, &bands_of(probe))),
                other.query(&q(probe, &bands_of(probe)))
            );
        }
    }

    /// Tables that grew with the window answer every query as tables built
    /// at their final size do, and an engine that holds few entries holds
    /// small tables.
    #[test]
    fn tables_grown_with_the_window_answer_as_full_sized_ones() {
        let mut st = 5;
        let cap = 1 << 16;
        let mut idx = NearIndex::new(3, cap, 2, 10, 64);
        let empty = idx.heap_bytes();
        assert!(empty < 100_000, "{empty} bytes for an empty index");
        let mut bases = Vec::new();
        for t in 0..20_000u32 {
            let h = clustered(t % 3 == 0, &mut bases, 5, &mut st);
            idx.insert(entry(h, t), &bands_of(h), &[]);
        }
        assert!(idx.tables.bits() > 8 && idx.bands.bits() > 8);
        // Built at the final size from the start: the same parts restored.
        let mut full = NearIndex::new(3, cap, 2, 10, 64);
        full.restore_parts(idx.to_parts());
        assert_eq!(full.tables.bits(), idx.tables.bits());
        assert_eq!(full.bands.bits(), idx.bands.bits());
        for _ in 0..2_000 {
            let b = bases[(splitmix(&mut st) as usize) % bases.len()];
            let h = flip(b, (splitmix(&mut st) % 6) as u32, &mut st);
            let got = idx.query(&q(h, &bands_of(h)));
            assert_eq!(got, full.query(&q(h, &bands_of(h))));
            let seen: Vec<(u64, u32)> = got.iter().map(|m| (m.seq, m.distance)).collect();
            assert_eq!(seen, brute(&idx, h, &bands_of(h)));
        }
    }

    proptest! {
        #[test]
        fn eviction_keeps_nothing_older_than_cutoff(times in proptest::collection::vec(0u32..1000, 1..200), cutoff in 0u64..1100) {
            let mut sorted = times.clone();
            sorted.sort_unstable();
            let mut idx = NearIndex::new(3, 10_000, 2, 10, 64);
            for (i, t) in sorted.iter().enumerate() {
                let h = i as u64 * 0x9E37_79B9;
                idx.insert(entry(h, *t), &bands_of(h), &[]);
            }
            idx.evict_before(cutoff, |_| {});
            prop_assert!(idx.window().iter().all(|(_, e)| u64::from(e.time) >= cutoff));
            prop_assert_eq!(idx.len(), sorted.iter().filter(|t| u64::from(**t) >= cutoff).count());
            for (_, e) in idx.window().iter() {
                prop_assert!(idx.query(&q(e.simhash, &bands_of(e.simhash))).iter().any(|m| m.distance == 0));
            }
        }
    }
}
