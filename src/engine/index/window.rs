//! The sliding window: recent fingerprints in arrival order.
//!
//! Entries carry a sequence number (their position since the window was
//! created); the oldest leaves first, when it is older than the window's time
//! span or when the window is full. The tables of [`super::tables`] refer to
//! entries by the low 32 bits of their sequence number.

use std::collections::VecDeque;

use crate::engine::campaign::CampaignId;

/// One message in the window. 32 bytes.
///
/// Its campaign ([`Entry::owner`]) is a slot of `campaign::Campaigns`, or,
/// while the message is alone in its campaign (most mail), the campaign's
/// 48-bit id itself: a campaign of one message needs no slot, no id map
/// entry and no strings of its own until a second message joins it
/// (the engine then gives it a slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub simhash: u64,
    /// b-bit MinHash sketch (see `crate::engine::minhash`).
    pub sketch: u64,
    /// Arrival time, Unix seconds (u32 lasts until 2106).
    pub time: u32,
    /// The slot, or the low 32 bits of the id (see [`Entry::owner`]).
    owner_lo: u32,
    /// Recipients of the message, saturating.
    pub recipients: u16,
    /// 15-bit hash of the sender domain ([`Entry::sender`]) and, in the
    /// high bit, [`OWN`] ([`Entry::own`]).
    sender_bits: u16,
    /// The high 16 bits of the id of a campaign of one.
    owner_hi: u16,
    /// Weight of the match that placed it in its campaign, in percent (0
    /// to 100: the low seven bits), and in the high bit [`LIST_POST`].
    weight: u8,
    /// [`NEAR`], [`ALONE`], and in the high six bits the size class of
    /// the message's features ([`size_class`]).
    flags: u8,
}

/// The size class of `features` feature hashes: 4 per doubling
/// (`round(4 log2 n)`, at most 63: 55,000 features), what a window entry
/// keeps of a message's size for the containment rule (`link`).
pub fn size_class(features: usize) -> u8 {
    let n = features.max(1) as f64;
    (4.0 * n.log2()).round().clamp(0.0, 63.0) as u8
}

/// The features a size class stands for (within about 9%).
pub fn class_size(class: u8) -> f64 {
    (f64::from(class) / 4.0).exp2()
}

/// In the near tables (without: too few features, matched by exact hash
/// only).
const NEAR: u8 = 1;
/// Alone in its campaign: the owner is the campaign's id, not a slot.
const ALONE: u8 = 2;
/// In `sender_bits`' high bit: the site's own mail
/// ([`crate::engine::party::Origin::Own`]), counted on its own tally.
const OWN: u16 = 0x8000;
/// The sender domain's hash: 15 bits.
pub const SENDER_MASK: u16 = 0x7FFF;
/// In `weight`'s high bit: the message was a list post
/// ([`crate::engine::campaign::Member::list_post`]).
const LIST_POST: u8 = 0x80;

/// Whose message an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A campaign slot (two messages or more, or one that needs a slot:
    /// alerted, allowed, forgotten).
    Slot(u32),
    /// Alone in the campaign of this id.
    Alone(CampaignId),
}

impl Entry {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        simhash: u64,
        sketch: u64,
        time: u32,
        owner: Owner,
        recipients: u16,
        sender: u16,
        weight: u8,
        near: bool,
    ) -> Entry {
        let mut e = Entry {
            simhash,
            sketch,
            time,
            owner_lo: 0,
            recipients,
            sender_bits: sender & SENDER_MASK,
            owner_hi: 0,
            weight: weight.min(100),
            flags: if near { NEAR } else { 0 },
        };
        e.set_owner(owner);
        e
    }

    /// Weight of the match that placed it in its campaign, in percent.
    pub fn weight(&self) -> u8 {
        self.weight & !LIST_POST
    }

    /// The message was a list post.
    pub fn list_post(&self) -> bool {
        self.weight & LIST_POST != 0
    }

    /// Marked as a list post, or not.
    pub fn with_list_post(mut self, list_post: bool) -> Entry {
        self.weight = self.weight() | if list_post { LIST_POST } else { 0 };
        self
    }

    /// The 15-bit hash of the sender domain.
    pub fn sender(&self) -> u16 {
        self.sender_bits & SENDER_MASK
    }

    /// The sender field as kept: the hash and the own-mail bit (snapshots).
    pub fn sender_bits(&self) -> u16 {
        self.sender_bits
    }

    /// The site's own mail, counted on its own tally.
    pub fn own(&self) -> bool {
        self.sender_bits & OWN != 0
    }

    /// Marked as own mail, or not.
    pub fn with_own(mut self, own: bool) -> Entry {
        self.sender_bits = self.sender() | if own { OWN } else { 0 };
        self
    }

    /// In the near tables.
    pub fn near(&self) -> bool {
        self.flags & NEAR != 0
    }

    /// The size class of the message's features ([`size_class`]).
    pub fn size(&self) -> u8 {
        self.flags >> 2
    }

    /// With the size class of `features` features.
    pub fn with_size(mut self, features: usize) -> Entry {
        self.flags = (self.flags & 3) | (size_class(features) << 2);
        self
    }

    /// With this size class (snapshots).
    pub fn with_size_class(mut self, class: u8) -> Entry {
        self.flags = (self.flags & 3) | ((class & 63) << 2);
        self
    }

    pub fn owner(&self) -> Owner {
        if self.flags & ALONE != 0 {
            Owner::Alone(CampaignId(
                (u64::from(self.owner_hi) << 32) | u64::from(self.owner_lo),
            ))
        } else {
            Owner::Slot(self.owner_lo)
        }
    }

    /// The slot, for an entry that has one.
    pub fn slot(&self) -> Option<u32> {
        match self.owner() {
            Owner::Slot(s) => Some(s),
            Owner::Alone(_) => None,
        }
    }

    /// Sets the owner (an id keeps its low 48 bits).
    pub fn set_owner(&mut self, owner: Owner) {
        match owner {
            Owner::Slot(s) => {
                self.flags &= !ALONE;
                self.owner_lo = s;
                self.owner_hi = 0;
            }
            Owner::Alone(id) => {
                self.flags |= ALONE;
                self.owner_lo = id.0 as u32;
                self.owner_hi = (id.0 >> 32) as u16;
            }
        }
    }
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

    /// The entry recorded under `seq`, to change its owner.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        let offset = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.entries.get_mut(offset)
    }

    /// Sequence number of the oldest entry (the next one when empty).
    pub fn first_seq(&self) -> u64 {
        self.base
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
        Entry::new(s, 0, 0, Owner::Slot(0), 1, 0, 100, true)
    }

    #[test]
    fn entry_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn an_owner_is_a_slot_or_a_48_bit_id() {
        let mut x = Entry::new(
            1,
            2,
            3,
            Owner::Alone(CampaignId(0xABCD_1234_5678)),
            4,
            5,
            6,
            true,
        );
        assert_eq!(x.owner(), Owner::Alone(CampaignId(0xABCD_1234_5678)));
        assert!(x.near());
        assert_eq!(x.slot(), None);
        x.set_owner(Owner::Slot(7));
        assert_eq!(
            (x.owner(), x.slot(), x.near()),
            (Owner::Slot(7), Some(7), true)
        );
        let y = Entry::new(
            1,
            2,
            3,
            Owner::Alone(CampaignId(u64::MAX >> 16)),
            4,
            5,
            6,
            false,
        );
        assert_eq!(y.owner(), Owner::Alone(CampaignId(0xFFFF_FFFF_FFFF)));
        assert!(!y.near());
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
