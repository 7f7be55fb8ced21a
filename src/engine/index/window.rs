//! The sliding window: recent fingerprints in arrival order.
//!
//! Entries carry a sequence number (their position since the window was
//! created); the oldest leaves first, when it is older than the window's time
//! span or when the window is full. The tables of [`super::tables`] refer to
//! entries by the low 32 bits of their sequence number.

use std::collections::VecDeque;

/// One message in the window. 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub simhash: u64,
    /// b-bit MinHash sketch (see `crate::engine::minhash`).
    pub sketch: u64,
    /// Arrival time, Unix seconds (u32 lasts until 2106).
    pub time: u32,
    /// Campaign slot (see `campaign::Campaigns`).
    pub campaign: u32,
    /// Recipients of the message, saturating.
    pub recipients: u16,
    /// 16-bit hash of the sender domain.
    pub sender: u16,
    /// Weight of the match that placed it in its campaign, in percent.
    pub weight: u8,
    /// In the near tables (false: too few features, matched by exact hash only).
    pub near: bool,
}

/// Arrival-ordered entries with sequence numbers.
#[derive(Debug, Default, Clone)]
pub struct Window {
    entries: VecDeque<Entry>,
    /// Sequence number of `entries[0]`.
    base: u64,
}

impl Window {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends an entry and returns its sequence number. The buffer grows by
    /// doubling but never past `max` entries, so a full window holds exactly
    /// what it needs.
    pub fn push(&mut self, e: Entry, max: usize) -> u64 {
        if self.entries.len() == self.entries.capacity() {
            let len = self.entries.len();
            let grow = len.max(16).min(max.saturating_sub(len)).max(1);
            self.entries.reserve_exact(grow);
        }
        self.entries.push_back(e);
        self.base + self.entries.len() as u64 - 1
    }

    /// The oldest entry, if any.
    pub fn front(&self) -> Option<&Entry> {
        self.entries.front()
    }

    /// Removes and returns the oldest entry with its sequence number.
    pub fn pop_front(&mut self) -> Option<(u64, Entry)> {
        let e = self.entries.pop_front()?;
        let seq = self.base;
        self.base += 1;
        Some((seq, e))
    }

    /// The entry recorded under `seq`, if it is still in the window.
    pub fn get(&self, seq: u64) -> Option<&Entry> {
        let offset = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.entries.get(offset)
    }

    /// The entry whose sequence number has these low 32 bits, if it is live.
    pub fn get_by_low(&self, low: u32) -> Option<(u64, &Entry)> {
        let offset = low.wrapping_sub(self.base as u32) as usize;
        self.entries
            .get(offset)
            .map(|e| (self.base + offset as u64, e))
    }

    /// Iterates (sequence number, entry), oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Entry)> {
        let base = self.base;
        self.entries
            .iter()
            .enumerate()
            .map(move |(i, e)| (base + i as u64, e))
    }

    /// Sequence number the next pushed entry gets.
    pub fn next_seq(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// Rebuilds a window from a snapshot.
    pub fn from_parts(base: u64, entries: Vec<Entry>) -> Window {
        Window {
            entries: entries.into(),
            base,
        }
    }

    /// Bytes of heap held (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: u64) -> Entry {
        Entry {
            simhash: s,
            sketch: 0,
            time: 0,
            campaign: 0,
            recipients: 1,
            sender: 0,
            weight: 100,
            near: true,
        }
    }

    #[test]
    fn entry_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn sequence_numbers_survive_pops() {
        let mut w = Window::default();
        for i in 0..10 {
            assert_eq!(w.push(e(i), 100), i);
        }
        assert_eq!(w.pop_front().map(|(s, _)| s), Some(0));
        assert_eq!(w.get_by_low(5).map(|(s, x)| (s, x.simhash)), Some((5, 5)));
        assert!(w.get_by_low(0).is_none());
        assert!(w.get_by_low(10).is_none());
    }
}
