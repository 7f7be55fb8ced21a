//! Which entries of the site's log a replica applied, by who wrote them
//! (issue 64: shared state complete and current, not only authentic).
//!
//! Every entry a host appends carries, under its seal, the host's writer
//! id (random at each start) and a sequence number that the host counts
//! up from 1 ([`Ident`]). A replica applies each (writer, sequence) once:
//! a copy of a genuine entry, sealed and all, appended again by whoever
//! may write to Redis, or met twice when the log is read again after it
//! was cut, changes no count. A sequence number a writer skipped is an
//! entry that was removed (or never appended: a round trip that failed
//! halfway): once the writer is [`REORDER`] entries past it (hosts send
//! several round trips at once, so a writer's entries may land a little
//! out of order) it is counted as missing.

use std::collections::{BTreeSet, HashMap};

/// Who wrote an entry and its place among that writer's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ident {
    pub writer: u64,
    pub seq: u64,
}

/// Bytes of an [`Ident`] at the end of a sealed entry.
pub const IDENT_LEN: usize = 16;

impl Ident {
    /// The 16 bytes written after an entry, under its seal.
    pub fn to_bytes(self) -> [u8; IDENT_LEN] {
        let mut b = [0u8; IDENT_LEN];
        b[..8].copy_from_slice(&self.writer.to_le_bytes());
        b[8..].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// The entry and its ident, from an opened entry that ends in one.
    pub fn split(mut bytes: Vec<u8>) -> Option<(Vec<u8>, Ident)> {
        let at = bytes.len().checked_sub(IDENT_LEN)?;
        let tail = bytes.get(at..)?;
        let writer = u64::from_le_bytes(tail.get(..8)?.try_into().ok()?);
        let seq = u64::from_le_bytes(tail.get(8..)?.try_into().ok()?);
        bytes.truncate(at);
        Some((bytes, Ident { writer, seq }))
    }
}

/// Sequence numbers below a writer's highest that are still told apart
/// (a window of bits); an older one counts as applied (never twice).
const SPAN: u64 = 1 << 16;
const WORDS: usize = (SPAN / 64) as usize;
/// How far past a skipped number a writer may go before it is missing.
pub const REORDER: u64 = 4096;
/// Skipped numbers remembered per writer (a larger gap counts its excess
/// as missing at once).
const MAX_SKIPPED: usize = 8192;
/// Writers remembered (each host's start is a new one); the one seen
/// longest ago goes first, and no entry dated before its newest is taken
/// from an unknown writer after it (a copy of a forgotten writer's entry
/// would count again).
pub const MAX_WRITERS: usize = 1024;

#[derive(Debug, Clone)]
struct Seen {
    highest: u64,
    bits: Box<[u64; WORDS]>,
    skipped: BTreeSet<u64>,
    /// Order of last use, for eviction.
    used: u64,
    /// Date of its newest entry (Unix seconds).
    newest_at: u64,
}

impl Seen {
    fn new(seq: u64, used: u64, at: u64) -> Seen {
        let mut s = Seen {
            highest: seq,
            bits: Box::new([0; WORDS]),
            skipped: BTreeSet::new(),
            used,
            newest_at: at,
        };
        s.set(seq);
        s
    }

    fn bit(seq: u64) -> (usize, u64) {
        (((seq % SPAN) / 64) as usize, 1 << (seq % 64))
    }

    fn set(&mut self, seq: u64) {
        let (w, b) = Seen::bit(seq);
        if let Some(x) = self.bits.get_mut(w) {
            *x |= b;
        }
    }

    fn clear(&mut self, seq: u64) {
        let (w, b) = Seen::bit(seq);
        if let Some(x) = self.bits.get_mut(w) {
            *x &= !b;
        }
    }

    fn has(&self, seq: u64) -> bool {
        if seq > self.highest {
            return false;
        }
        if self.highest - seq >= SPAN {
            return true;
        }
        let (w, b) = Seen::bit(seq);
        self.bits.get(w).is_some_and(|x| x & b != 0)
    }
}

/// What [`Writers::admit`] decided of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Not applied before: apply it.
    New,
    /// Applied already (a copy, a replay, a second reading).
    Again,
}

/// The entries applied, by writer.
#[derive(Debug, Clone, Default)]
pub struct Writers {
    seen: HashMap<u64, Seen>,
    clock: u64,
    /// Entries met again (not applied).
    pub again: u64,
    /// Sequence numbers found missing.
    pub missing: u64,
    /// The newest entry date of the writers forgotten (Unix seconds):
    /// an unknown writer's entry dated no later is not applied.
    forgotten_until: u64,
}

impl Writers {
    /// Whether the entry `id`, dated `at` (Unix seconds), is new, and
    /// notes it.
    pub fn admit(&mut self, id: Ident, at: u64) -> Admit {
        self.clock += 1;
        let clock = self.clock;
        let Some(s) = self.seen.get_mut(&id.writer) else {
            if at <= self.forgotten_until {
                // Maybe a writer forgotten: its entries stay applied.
                self.again += 1;
                return Admit::Again;
            }
            if self.seen.len() >= MAX_WRITERS {
                if let Some(oldest) = self
                    .seen
                    .iter()
                    .min_by_key(|(_, s)| s.used)
                    .map(|(w, _)| *w)
                {
                    if let Some(gone) = self.seen.remove(&oldest) {
                        self.forgotten_until = self.forgotten_until.max(gone.newest_at);
                    }
                }
            }
            self.seen.insert(id.writer, Seen::new(id.seq, clock, at));
            return Admit::New;
        };
        s.used = clock;
        s.newest_at = s.newest_at.max(at);
        if s.has(id.seq) {
            self.again += 1;
            return Admit::Again;
        }
        if id.seq > s.highest {
            // The numbers between were skipped: missing unless they come.
            let from = s.highest + 1;
            let gap = id.seq - from;
            let kept = gap.min(MAX_SKIPPED as u64);
            self.missing += gap - kept;
            for k in id.seq - kept..id.seq {
                s.skipped.insert(k);
            }
            // Bits leaving the window with the move.
            let clear_from = from.max(id.seq.saturating_sub(SPAN - 1));
            if id.seq - clear_from < SPAN {
                for k in clear_from..=id.seq {
                    s.clear(k);
                }
            } else {
                s.bits.fill(0);
            }
            s.highest = id.seq;
        }
        s.set(id.seq);
        s.skipped.remove(&id.seq);
        // What is REORDER behind the highest and still skipped is gone.
        let limit = s.highest.saturating_sub(REORDER);
        while let Some(first) = s.skipped.first().copied().filter(|k| *k < limit) {
            s.skipped.remove(&first);
            self.missing += 1;
        }
        while s.skipped.len() > MAX_SKIPPED {
            if let Some(first) = s.skipped.pop_first() {
                let _ = first;
                self.missing += 1;
            }
        }
        Admit::New
    }

    /// Writers remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(writer: u64, seq: u64) -> Ident {
        Ident { writer, seq }
    }

    #[test]
    fn an_entry_is_applied_once_whatever_comes_again() {
        let mut w = Writers::default();
        for s in 1..=100 {
            assert_eq!(w.admit(id(7, s), 1), Admit::New);
        }
        assert_eq!(w.admit(id(7, 50), 1), Admit::Again, "a copy");
        assert_eq!(w.admit(id(7, 100), 1), Admit::Again);
        assert_eq!(w.admit(id(8, 50), 1), Admit::New, "another writer");
        assert_eq!(w.again, 2);
        assert_eq!(w.missing, 0);
        // Far older than the window: never applied twice.
        let mut v = Writers::default();
        v.admit(id(1, 200_000), 1);
        assert_eq!(v.admit(id(1, 3), 1), Admit::Again);
    }

    #[test]
    fn a_removed_entry_is_missing_once_the_writer_is_past_it() {
        let mut w = Writers::default();
        for s in (1..=10_000).filter(|s| *s != 500) {
            w.admit(id(3, s), 1);
        }
        assert_eq!(w.missing, 1, "500 was deleted");
        // Out of order within the slack: not missing.
        let mut v = Writers::default();
        for s in [1, 2, 4, 3, 6, 5] {
            assert_eq!(v.admit(id(1, s), 1), Admit::New);
        }
        for s in 7..6000 {
            v.admit(id(1, s), 1);
        }
        assert_eq!(v.missing, 0);
        // A huge jump counts what cannot be remembered at once.
        let mut u = Writers::default();
        u.admit(id(1, 1), 1);
        u.admit(id(1, 100_000), 1);
        assert!(u.missing >= 100_000 - 2 - MAX_SKIPPED as u64);
    }

    #[test]
    fn idents_round_trip_and_short_entries_have_none() {
        let i = id(0xdead_beef, 42);
        let mut bytes = b"entry".to_vec();
        bytes.extend(i.to_bytes());
        assert_eq!(Ident::split(bytes), Some((b"entry".to_vec(), i)));
        assert_eq!(Ident::split(vec![1, 2, 3]), None);
    }

    #[test]
    fn writers_are_bounded_and_a_forgotten_ones_copies_stay_applied() {
        let mut w = Writers::default();
        assert_eq!(w.admit(id(0, 1), 100), Admit::New);
        for k in 1..(MAX_WRITERS as u64 + 10) {
            assert_eq!(w.admit(id(k, 1), 100 + k), Admit::New);
        }
        assert_eq!(w.len(), MAX_WRITERS);
        // Writer 0 was forgotten: a copy of its entry is not new.
        assert_eq!(w.admit(id(0, 1), 100), Admit::Again);
        // A writer that starts now is.
        assert_eq!(w.admit(id(5000, 1), 5000), Admit::New);
    }
}
