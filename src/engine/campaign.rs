//! Campaigns: groups of near-identical messages and their counters.
//!
//! Every message in the window belongs to one campaign, found through its
//! slot. A message that matches several campaigns merges them into the
//! oldest (a template that drifts stays one campaign); the others become
//! aliases that forward to it, so entries already in the window need no
//! rewrite. A slot holds a reference count (window entries naming it plus
//! aliases pointing at it) and is freed at zero, so the number of slots never
//! exceeds twice the window's entries. Counts fall as entries leave the
//! window ([`Campaigns::release`]).

use std::collections::{HashMap, VecDeque};

use crate::engine::party::{Answered, Kind, Move, Parties, Talk, KEY_BYTES, MAX_REPLY_FREE};
use crate::engine::simhash::hex;

/// Short stable campaign id: 48 bits from the SHA-256 of the campaign's first
/// message, shown as 12 hex digits. The same on every host for the same
/// first message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CampaignId(pub u64);

impl CampaignId {
    pub fn from_exact(exact: &[u8; 32]) -> CampaignId {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&exact[..6]);
        CampaignId(u64::from_be_bytes(b))
    }

    /// The id as it is written (12 hex digits), if `s` is one.
    pub fn from_hex(s: &str) -> Option<CampaignId> {
        (s.len() == 12 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u64::from_str_radix(s, 16).ok().map(CampaignId))
            .flatten()
    }
}

impl std::fmt::Display for CampaignId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0.to_be_bytes();
        f.write_str(&hex(&b[2..]))
    }
}

/// The id tried after `id` when it is taken ([`Campaigns::new_id`]): a
/// 48-bit hash of it, which differs from it in about half its digits.
pub fn next_id(id: CampaignId) -> CampaignId {
    CampaignId(crate::engine::minhash::mix(id.0 ^ 0x6275_6c6b_7761) & 0xFFFF_FFFF_FFFF)
}

/// Distinct sender domains tracked per campaign (by 16-bit hash).
const MAX_SENDERS: usize = 64;
/// Longest sample subject kept, in characters.
pub const MAX_SUBJECT: usize = 120;

/// A live campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    pub id: CampaignId,
    /// Unix seconds (u32, as in window entries: until 2106; 8 bytes less
    /// in every slot).
    pub first_seen: u32,
    pub last_seen: u32,
    /// Messages in the window.
    pub messages: u32,
    /// Distinct recipients of those messages: each message adds the
    /// recipients that were no party of the campaign yet
    /// ([`crate::engine::party`]); one message to 300 RCPT TO counts 300.
    pub recipients: u64,
    /// Recipients weighted by match strength, in hundredths.
    pub score_centi: u64,
    /// (sender-domain hash, messages) for up to 64 domains.
    pub senders: Senders,
    /// A sample subject and a few sender domains in clear, for people.
    pub texts: Texts,
    /// Set once the campaign has been reported as bulk (alerts fire once).
    pub alerted: bool,
    /// Every member so far was a list post ([`Member::list_post`]): with
    /// one sender domain, the campaign is one list's delivery of one post,
    /// however many transactions it took, and is judged as one
    /// transaction (`verdict::level_of`).
    /// Once false it stays false (members leaving the window do not
    /// restore it).
    pub list_post: bool,
    /// An operator allowed the campaign (`bulkwatch campaigns allow`):
    /// its messages are `allowed` before this time (Unix seconds;
    /// [`WHILE_LIVE`]: for as long as it lives). Merges keep the later.
    /// (`NonZeroU64`: 8 bytes where `Option<u64>` takes 16, in every slot.)
    pub allowed_until: Option<std::num::NonZeroU64>,
    /// Its parties and deliveries ([`Talk`]): `None` while it is one
    /// message alone in its window entry (the entry's record holds its
    /// parties), or when they are not known (a snapshot of a build
    /// before parties): then every recipient of a later message counts.
    pub talk: Option<Box<Talk>>,
    /// The most recipients one inbound delivery (a first message or a
    /// copy) added: within `thresholds.single_transaction_recipients` they
    /// are one transaction, no evidence of a campaign ([`Campaign::measure`]).
    /// Reset when that delivery leaves the window.
    pub largest: u16,
    /// Recipients added by replies ([`Kind::Reply`]) and not counted
    /// toward the level, at most [`MAX_REPLY_FREE`].
    pub freed: u16,
    /// Recipients added to its conversation by messages that went again
    /// to everyone it reached ([`Kind::Grow`]): with its largest delivery,
    /// one conversation of at most `single_transaction_recipients`.
    pub grown: u16,
    /// The site's own mail, counted apart: distinct recipients of its own
    /// messages in the window ([`crate::engine::party::Origin::Own`]).
    pub own: u32,
    /// The most recipients one own message added.
    pub own_largest: u16,
    /// Set once its own mail reached bulk (its alert fires once).
    pub own_alerted: bool,
}

/// What a window entry that leaves takes out of its campaign
/// ([`Campaigns::release`]).
#[derive(Debug, Clone, Copy)]
pub struct Leaving {
    pub recipients: u16,
    pub weight_pct: u8,
    /// Its message was the site's own ([`Campaign::own`]).
    pub own: bool,
    /// Its sender's key among the campaign's senders.
    pub sender: u16,
}

/// Unix seconds as a campaign keeps them (saturating, as window entries do).
pub fn secs32(t: u64) -> u32 {
    u32::try_from(t).unwrap_or(u32::MAX)
}

/// [`Campaign::allowed_until`] for an allowance without end (far past any
/// real time; it fits the log's and the snapshot's 64-bit fields).
pub const WHILE_LIVE: u64 = 1 << 40;

impl Campaign {
    /// A campaign of no message yet, first seen `now`.
    fn empty(id: CampaignId, now: u64) -> Campaign {
        Campaign {
            id,
            first_seen: secs32(now),
            last_seen: secs32(now),
            messages: 0,
            recipients: 0,
            score_centi: 0,
            senders: Senders::default(),
            texts: Texts::default(),
            alerted: false,
            list_post: false,
            allowed_until: None,
            talk: None,
            largest: 0,
            freed: 0,
            grown: 0,
            own: 0,
            own_largest: 0,
            own_alerted: false,
        }
    }

    /// Counts a new member in: the recipients new to the campaign (on
    /// the inbound or the own tally), and its move ([`Kind`]). The first
    /// message's parties stay with the caller (a campaign of one keeps
    /// them in its window entry's record).
    fn add(&mut self, m: &Member<'_>, keep_subjects: bool) -> Move {
        let mv = if self.messages == 0 {
            Move::first(m.parties)
        } else {
            match self.talk.as_deref_mut() {
                Some(t) => t.join(m.parties, m.answered),
                // Parties unknown: every recipient counts, as a copy.
                None => Move {
                    kind: Kind::Copy,
                    added: m.parties.recipients(),
                    own: m.parties.own(),
                    answers_own: m.answered.own,
                },
            }
        };
        let counted = counted(mv.added);
        if mv.own {
            self.own = self.own.saturating_add(u32::from(counted));
            if matches!(mv.kind, Kind::First | Kind::Copy) {
                self.own_largest = self.own_largest.max(counted);
            }
        } else {
            self.recipients = self.recipients.saturating_add(u64::from(counted));
            self.score_centi = self
                .score_centi
                .saturating_add(u64::from(counted) * u64::from(m.weight_pct));
            match mv.kind {
                Kind::First | Kind::Copy => self.largest = self.largest.max(counted),
                Kind::Grow => self.grown = self.grown.saturating_add(counted),
                Kind::Reply => {
                    self.freed = self
                        .freed
                        .saturating_add(counted)
                        .min(MAX_REPLY_FREE as u16);
                }
                Kind::Within => {}
            }
        }
        self.list_post = m.list_post && (self.messages == 0 || self.list_post);
        self.messages = self.messages.saturating_add(1);
        self.last_seen = self.last_seen.max(secs32(m.now));
        self.senders.add(m.sender, 1);
        if let Some(name) = m.sender_name {
            self.texts.add_name(name);
        }
        if let Some(subject) = m.subject.filter(|_| keep_subjects) {
            self.texts.set_subject(subject);
        }
        mv
    }

    /// Weighted recipients, the number compared with the thresholds.
    pub fn score(&self) -> f64 {
        self.score_centi as f64 / 100.0
    }

    /// Distinct sender domains (saturates at 64).
    pub fn sender_domains(&self) -> usize {
        self.senders.iter().filter(|(_, n)| *n > 0).count()
    }

    /// A conversation ([`Talk::conversation`]): one message, or parties
    /// known and no inbound copy but its first delivery and replies.
    pub fn conversation(&self) -> bool {
        self.messages <= 1 || self.talk.as_deref().is_some_and(Talk::conversation)
    }

    /// What its inbound mail is judged on ([`measure_centi`]), in
    /// recipients.
    pub fn measure(&self, single_transaction: u32) -> f64 {
        let free = Free {
            largest: self.largest,
            grown: self.grown,
            freed: self.freed,
        };
        measure_centi(self.score_centi, free, single_transaction) as f64 / 100.0
    }

    /// What its own mail is judged on ([`own_measure`]).
    pub fn own_measure(&self, single_transaction: u32) -> f64 {
        own_measure(self.own, self.own_largest, single_transaction)
    }
}

/// What a campaign's measure leaves out ([`measure_centi`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Free {
    /// [`Campaign::largest`].
    pub largest: u16,
    /// [`Campaign::grown`].
    pub grown: u16,
    /// [`Campaign::freed`].
    pub freed: u16,
}

/// The size an inbound campaign is judged on, in hundredths of a
/// recipient: its weighted recipients (`score_centi`) less one
/// conversation but one person (its largest single delivery and what
/// messages to all of it added, at most `single_transaction`,
/// `thresholds.single_transaction_recipients`: one transaction is no
/// evidence of a campaign, and a delivery larger than that is judged
/// whole) and less what its replies added (at most [`MAX_REPLY_FREE`]);
/// at least one recipient while it has any. One transaction to 60 and one
/// copy to a new address measure 2; twenty copies to one person each, 20.
pub fn measure_centi(score_centi: u64, free: Free, single_transaction: u32) -> u64 {
    let conversation = u32::from(free.largest).saturating_add(u32::from(free.grown));
    let one = if u32::from(free.largest) <= single_transaction {
        u64::from(conversation.min(single_transaction).saturating_sub(1))
    } else {
        0
    };
    let free = one.saturating_add(u64::from(free.freed.min(MAX_REPLY_FREE as u16)));
    score_centi
        .saturating_sub(free.saturating_mul(100))
        .max(score_centi.min(100))
}

/// The size own mail is judged on: its distinct recipients less its
/// largest message's but one (while within `single_transaction`).
pub fn own_measure(own: u32, own_largest: u16, single_transaction: u32) -> f64 {
    let one = if u32::from(own_largest) <= single_transaction {
        u32::from(own_largest.saturating_sub(1))
    } else {
        0
    };
    f64::from(own.saturating_sub(one).max(own.min(1)))
}

/// Recipients a window entry and a campaign count for one message (a
/// 16-bit field in the entry, saturating).
pub fn counted(added: u32) -> u16 {
    u16::try_from(added).unwrap_or(u16::MAX)
}

/// (sender-domain hash, messages) of a campaign, at most 64. Most
/// campaigns are one message from one domain: that one is held inline,
/// without an allocation (a window of 10^6 single messages would
/// otherwise hold 10^6 small vectors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Senders(SendersRepr);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum SendersRepr {
    #[default]
    None,
    One(u16, u32),
    /// Boxed: most campaigns never get here, and the box keeps the enum
    /// (and with it every campaign slot) 8 bytes smaller than a vector
    /// (a boxed slice is a fat pointer and would not).
    #[allow(clippy::box_collection)]
    Many(Box<Vec<(u16, u32)>>),
}

impl Senders {
    /// The (hash, messages) pairs, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u32)> + '_ {
        type Pair = (u16, u32);
        let (one, many): (Option<Pair>, &[Pair]) = match &self.0 {
            SendersRepr::None => (None, &[]),
            SendersRepr::One(h, n) => (Some((*h, *n)), &[]),
            SendersRepr::Many(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            SendersRepr::None => 0,
            SendersRepr::One(..) => 1,
            SendersRepr::Many(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts `n` more messages from `h` (a new domain past 64 is not
    /// tracked).
    pub fn add(&mut self, h: u16, n: u32) {
        match &mut self.0 {
            SendersRepr::None => self.0 = SendersRepr::One(h, n),
            SendersRepr::One(x, m) if *x == h => *m += n,
            SendersRepr::One(x, m) => self.0 = SendersRepr::Many(Box::new(vec![(*x, *m), (h, n)])),
            SendersRepr::Many(v) => {
                if let Some((_, m)) = v.iter_mut().find(|(x, _)| *x == h) {
                    *m += n;
                } else if v.len() < MAX_SENDERS {
                    v.push((h, n));
                }
            }
        }
    }

    /// One message from `h` fewer; a domain with none left goes.
    pub fn remove_one(&mut self, h: u16) {
        match &mut self.0 {
            SendersRepr::None => {}
            SendersRepr::One(x, m) if *x == h => {
                *m = m.saturating_sub(1);
                if *m == 0 {
                    self.0 = SendersRepr::None;
                }
            }
            SendersRepr::One(..) => {}
            SendersRepr::Many(v) => {
                if let Some(pos) = v.iter().position(|(x, _)| *x == h) {
                    if let Some((_, n)) = v.get_mut(pos) {
                        *n = n.saturating_sub(1);
                        if *n == 0 {
                            v.swap_remove(pos);
                        }
                    }
                }
            }
        }
    }
}

impl FromIterator<(u16, u32)> for Senders {
    fn from_iter<I: IntoIterator<Item = (u16, u32)>>(it: I) -> Senders {
        let mut s = Senders::default();
        for (h, n) in it {
            s.add(h, n);
        }
        s
    }
}

/// Most sender domains kept in clear per campaign.
pub const MAX_NAMES: usize = 5;

/// A campaign's sample subject and a few sender domains in clear (at most
/// [`MAX_NAMES`]), in one allocation: most campaigns are one message, and
/// a window of 10^6 of them would otherwise hold two small strings each.
///
/// Layout: one character whose code is 0 when there is no subject, else
/// the subject's length in bytes plus one (at most 481: 120 characters);
/// the subject; then each name followed by a newline (a domain holds
/// none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Texts(Option<Box<str>>);

impl Texts {
    /// Texts with `subject` (its first [`MAX_SUBJECT`] characters) and
    /// `names` (as [`Texts::add_name`] keeps them).
    pub fn new<S: AsRef<str>>(subject: Option<&str>, names: impl IntoIterator<Item = S>) -> Texts {
        let mut t = Texts::default();
        if let Some(s) = subject {
            t.set_subject(s);
        }
        for n in names {
            t.add_name(n.as_ref());
        }
        t
    }

    /// (subject, the names part).
    fn parts(&self) -> (Option<&str>, &str) {
        let Some(t) = self.0.as_deref() else {
            return (None, "");
        };
        let mut chars = t.chars();
        let Some(c) = chars.next() else {
            return (None, "");
        };
        let rest = chars.as_str();
        match (c as usize).checked_sub(1) {
            None => (None, rest),
            Some(len) => match (rest.get(..len), rest.get(len..)) {
                (Some(subject), Some(names)) => (Some(subject), names),
                _ => (None, ""),
            },
        }
    }

    fn store(&mut self, subject: Option<&str>, names: &str) {
        if subject.is_none() && names.is_empty() {
            self.0 = None;
            return;
        }
        let code = subject.map_or(0, |s| s.len() + 1);
        let lead = u32::try_from(code)
            .ok()
            .and_then(char::from_u32)
            .unwrap_or('\0');
        let mut t = String::with_capacity(4 + subject.map_or(0, str::len) + names.len());
        t.push(lead);
        t.push_str(if lead == '\0' {
            ""
        } else {
            subject.unwrap_or("")
        });
        t.push_str(names);
        self.0 = Some(t.into_boxed_str());
    }

    pub fn subject(&self) -> Option<&str> {
        self.parts().0
    }

    /// Keeps the first [`MAX_SUBJECT`] characters of `subject` unless a
    /// subject is kept already.
    pub fn set_subject(&mut self, subject: &str) {
        let (kept, names) = self.parts();
        if kept.is_some() {
            return;
        }
        let clipped: String = subject.chars().take(MAX_SUBJECT).collect();
        let names = names.to_owned();
        self.store(Some(&clipped), &names);
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts().1.split('\n').filter(|s| !s.is_empty())
    }

    /// Keeps `name` (its first 100 characters, newlines dropped) unless
    /// already kept or [`MAX_NAMES`] are.
    pub fn add_name(&mut self, name: &str) {
        // Called for every message: a name that needs no cut (the usual
        // case) is compared without a copy.
        let name: std::borrow::Cow<'_, str> = if name.len() <= 100 && !name.contains('\n') {
            name.into()
        } else {
            name.chars()
                .filter(|c| *c != '\n')
                .take(100)
                .collect::<String>()
                .into()
        };
        if name.is_empty() || self.names().count() >= MAX_NAMES || self.names().any(|n| n == name) {
            return;
        }
        let (subject, names) = self.parts();
        let (subject, names) = (subject.map(str::to_owned), format!("{names}{name}\n"));
        self.store(subject.as_deref(), &names);
    }

    /// The names as owned strings.
    pub fn names_vec(&self) -> Vec<String> {
        self.names().map(str::to_owned).collect()
    }

    /// The one string (layout above; "" for none), for [`AloneRecords`] and
    /// snapshots.
    pub fn raw(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    /// Texts from [`Texts::raw`]'s string. Any string reads as some texts
    /// (a malformed lead reads as none), so a hostile snapshot cannot make
    /// it fail.
    pub fn from_raw(raw: String) -> Texts {
        Texts((!raw.is_empty()).then(|| raw.into_boxed_str()))
    }
}

/// The records of the messages alone in their campaign (most mail), by
/// the sequence number of their window entry: a campaign of one keeps its
/// sample subject and sender name here, and its parties (the party keys
/// of its message, [`Parties::keys`]), a few dozen bytes in one shared
/// buffer, until a second message joins it and they move to its slot. One
/// record per window entry (empty for entries with a slot), freed in
/// arrival order as entries leave the window.
///
/// A record is the texts' string ([`Texts::raw`], UTF-8), then, when the
/// parties are known, a byte 0xFF (never part of UTF-8) and each key as
/// [`KEY_BYTES`] little-endian bytes (keys have 24 bits). A record without that byte (a snapshot of a build
/// before parties) has unknown parties.
#[derive(Debug, Clone, Default)]
pub struct AloneRecords {
    /// Sequence number of the first record.
    base: u64,
    /// Each record's length in bytes (a record is at most about 1,200
    /// bytes: [`MAX_RECORD`]). 2 bytes a window entry, where a start
    /// offset took 4.
    lens: VecDeque<u16>,
    /// Where the records start, as byte counts since the buffer began
    /// (wrapping): of the record `base`, then of each record whose
    /// sequence number is a multiple of [`MARK_EVERY`] after it.
    marks: VecDeque<u32>,
    bytes: VecDeque<u8>,
    /// Byte count of `bytes[0]` since the buffer began (wrapping).
    bytes_base: u32,
}

/// The byte between a record's texts and its party keys.
const PARTIES_MARK: u8 = 0xFF;
/// Records between two start offsets kept ([`AloneRecords::marks`]): a
/// lookup adds at most this many lengths.
const MARK_EVERY: u64 = 64;
/// The longest record kept: a record past it (never made by a message:
/// texts are cut at 120 characters of subject and five names of 100, and
/// a message has at most [`crate::engine::party::MAX_MESSAGE_KEYS`] keys)
/// keeps its texts' first bytes.
const MAX_RECORD: usize = u16::MAX as usize;

impl AloneRecords {
    /// Adds the record of entry `seq`: `texts` and the party keys `keys`
    /// for a message alone in its campaign, [`Texts::default`] and `None`
    /// for one with a slot. Entries that left no record (none in order)
    /// read as empty.
    pub fn push(&mut self, seq: u64, texts: &Texts, keys: Option<&[u32]>) {
        if self.lens.is_empty() || seq < self.base {
            self.clear_to(seq);
        }
        while self.next_seq() < seq {
            self.open_record();
            self.lens.push_back(0);
        }
        if self.next_seq() == seq {
            self.open_record();
            let before = self.bytes.len();
            let raw = texts.raw().as_bytes();
            self.bytes
                .extend(raw.get(..MAX_RECORD.min(raw.len())).unwrap_or_default());
            if let Some(keys) = keys {
                if self.bytes.len() - before + 1 + keys.len() * KEY_BYTES <= MAX_RECORD {
                    self.bytes.push_back(PARTIES_MARK);
                    for k in keys {
                        let b = k.to_le_bytes();
                        self.bytes.extend(&b[..KEY_BYTES]);
                    }
                }
            }
            let len = u16::try_from(self.bytes.len() - before).unwrap_or(u16::MAX);
            self.lens.push_back(len);
        }
    }

    /// Sequence number the next record gets.
    fn next_seq(&self) -> u64 {
        self.base + self.lens.len() as u64
    }

    /// Notes where the next record starts when it begins a block.
    fn open_record(&mut self) {
        if self.lens.is_empty() || self.next_seq().is_multiple_of(MARK_EVERY) {
            self.marks.push_back(self.end());
        }
    }

    fn end(&self) -> u32 {
        self.bytes_base.wrapping_add(self.bytes.len() as u32)
    }

    fn clear_to(&mut self, seq: u64) {
        self.lens.clear();
        self.marks.clear();
        self.bytes.clear();
        self.base = seq;
        self.bytes_base = 0;
    }

    /// The bytes of entry `seq`'s record (none when it has no record).
    fn record(&self, seq: u64) -> Option<std::collections::vec_deque::Iter<'_, u8>> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        let len = usize::from(*self.lens.get(i)?);
        // The mark of its block, and the records between that and it.
        let block = usize::try_from(seq / MARK_EVERY - self.base / MARK_EVERY).ok()?;
        let first = (seq / MARK_EVERY * MARK_EVERY).max(self.base);
        let skip = usize::try_from(first - self.base).ok()?;
        let before: usize = self.lens.range(skip..i).map(|l| usize::from(*l)).sum();
        let start = self.marks.get(block)?.wrapping_add(before as u32);
        let from = start.wrapping_sub(self.bytes_base) as usize;
        let to = from + len;
        // Offsets wrap at 4 GiB of records held at once (a window of 10^7
        // campaigns of one holds about 500 MB): past that a record reads
        // as empty, never out of bounds.
        if from >= to || to > self.bytes.len() {
            return None;
        }
        Some(self.bytes.range(from..to))
    }

    /// The texts recorded for entry `seq` (none when it has no record).
    pub fn get(&self, seq: u64) -> Texts {
        let Some(record) = self.record(seq) else {
            return Texts::default();
        };
        let raw: Vec<u8> = record
            .take_while(|b| **b != PARTIES_MARK)
            .copied()
            .collect();
        Texts::from_raw(String::from_utf8(raw).unwrap_or_default())
    }

    /// The party keys recorded for entry `seq`: `None` when it has no
    /// record or its parties are unknown.
    pub fn keys(&self, seq: u64) -> Option<Vec<u32>> {
        let mut record = self.record(seq)?.skip_while(|b| **b != PARTIES_MARK);
        record.next()?;
        let bytes: Vec<u8> = record.copied().collect();
        Some(
            bytes
                .chunks_exact(KEY_BYTES)
                .map(|c| c.iter().rev().fold(0u32, |k, b| (k << 8) | u32::from(*b)))
                .collect(),
        )
    }

    /// Frees the records of entries before `first` (those that left the
    /// window).
    pub fn trim(&mut self, first: u64) {
        while self.base < first {
            let Some(len) = self.lens.pop_front() else {
                self.clear_to(first);
                return;
            };
            let n = usize::from(len).min(self.bytes.len());
            self.bytes.drain(..n);
            self.bytes_base = self.bytes_base.wrapping_add(n as u32);
            self.base += 1;
            if self.lens.is_empty() {
                self.marks.clear();
            } else if self.base.is_multiple_of(MARK_EVERY) {
                // The front block is gone; the next mark is this one's.
                self.marks.pop_front();
            } else if let Some(m) = self.marks.front_mut() {
                *m = self.bytes_base;
            }
        }
    }

    /// Heap bytes held (capacity), for the engine's statistics.
    pub fn heap_bytes(&self) -> usize {
        self.lens.capacity() * 2 + self.marks.capacity() * 4 + self.bytes.capacity()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Slot {
    Free,
    Live {
        campaign: Campaign,
        refs: u32,
    },
    /// A campaign merged into `target`; `id` was its own id.
    Alias {
        target: u32,
        refs: u32,
        id: CampaignId,
    },
}

/// What a new member contributes.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub now: u64,
    /// Its sender, recipients and Message-ID: what it adds to the
    /// campaign's parties and how many recipients it counts for.
    pub parties: &'a Parties,
    pub weight_pct: u8,
    pub sender: u16,
    pub sender_name: Option<&'a str>,
    pub subject: Option<&'a str>,
    /// A mailing list's post: a List-Id and an envelope sender
    /// ([`Observation::list_post`](super::Observation::list_post)).
    pub list_post: bool,
    /// What it answers of our own users' mail
    /// ([`crate::engine::party::OwnThreads`]).
    pub answered: &'a Answered,
}

/// All campaigns, by slot.
#[derive(Debug, Clone, Default)]
pub struct Campaigns {
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_id: HashMap<CampaignId, u32>,
    live: usize,
    pub keep_subjects: bool,
}

/// Longest alias chain followed; chains are short (one link per merge of a
/// merged campaign), this only guards against a bug looping forever.
pub const MAX_CHAIN: usize = 1024;

impl Campaigns {
    pub fn new(keep_subjects: bool) -> Campaigns {
        Campaigns {
            keep_subjects,
            ..Campaigns::default()
        }
    }

    /// Number of live campaigns.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Number of slots in use (live and aliases).
    pub fn slots_in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The live slot a slot forwards to.
    pub fn resolve(&self, mut slot: u32) -> Option<u32> {
        for _ in 0..MAX_CHAIN {
            match self.slots.get(slot as usize)? {
                Slot::Live { .. } => return Some(slot),
                Slot::Alias { target, .. } => slot = *target,
                Slot::Free => return None,
            }
        }
        None
    }

    pub fn get(&self, slot: u32) -> Option<&Campaign> {
        match self.slots.get(self.resolve(slot)? as usize)? {
            Slot::Live { campaign, .. } => Some(campaign),
            _ => None,
        }
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut Campaign> {
        let root = self.resolve(slot)?;
        match self.slots.get_mut(root as usize)? {
            Slot::Live { campaign, .. } => Some(campaign),
            _ => None,
        }
    }

    /// The id a slot was created with (live or merged), for checking that a
    /// remembered slot still means the same campaign.
    pub fn slot_id(&self, slot: u32) -> Option<CampaignId> {
        match self.slots.get(slot as usize)? {
            Slot::Live { campaign, .. } => Some(campaign.id),
            Slot::Alias { id, .. } => Some(*id),
            Slot::Free => None,
        }
    }

    /// The live slot of a campaign id.
    pub fn slot_of(&self, id: CampaignId) -> Option<u32> {
        self.by_id.get(&id).copied()
    }

    /// Every merged-away id still kept, with the live slot it forwards to
    /// (one scan of the slots).
    pub fn aliases(&self) -> std::collections::HashMap<CampaignId, u32> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Alias { id, .. } => Some((*id, self.resolve(u32::try_from(i).ok()?)?)),
                _ => None,
            })
            .collect()
    }

    /// The live slot of a campaign id, or of the campaign it was merged
    /// into while its alias is kept (a scan of the slots: for operators'
    /// commands, not per message).
    pub fn find(&self, id: CampaignId) -> Option<u32> {
        self.slot_of(id).or_else(|| {
            let alias = self
                .slots
                .iter()
                .position(|s| matches!(s, Slot::Alias { id: a, .. } if *a == id))?;
            self.resolve(u32::try_from(alias).ok()?)
        })
    }

    /// Sets the allowance of the live campaign behind `slot`
    /// ([`Campaign::allowed_until`]).
    pub fn set_allowed(&mut self, slot: u32, until: Option<u64>) {
        if let Some(c) = self.get_mut(slot) {
            c.allowed_until = until.and_then(std::num::NonZeroU64::new);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Campaign> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Live { campaign, .. } => Some(campaign),
            _ => None,
        })
    }

    fn alloc(&mut self, s: Slot) -> u32 {
        if let Some(i) = self.free.pop() {
            if let Some(x) = self.slots.get_mut(i as usize) {
                *x = s;
            }
            i
        } else {
            self.slots.push(s);
            (self.slots.len() - 1) as u32
        }
    }

    /// The id a new campaign whose first message is `exact` gets: derived
    /// from `exact`; if that id is taken by a slot or is in `taken` (the
    /// same first message seen as two campaigns: after a forget, or when
    /// the exact set forgot it; or a 48-bit collision) the next is a hash
    /// of it, the same on every host, until free. (It was the id plus one:
    /// `...cb` then `...cc`, ids an operator could not tell apart.)
    pub fn new_id(&self, exact: &[u8; 32], taken: &[CampaignId]) -> CampaignId {
        let mut id = CampaignId::from_exact(exact);
        while self.by_id.contains_key(&id) || taken.contains(&id) {
            id = next_id(id);
        }
        id
    }

    /// Starts a campaign in a slot, its id from [`Campaigns::new_id`]
    /// (tests; the engine starts a campaign of one in its window entry).
    #[cfg(test)]
    pub(crate) fn create(&mut self, exact: &[u8; 32], now: u64) -> u32 {
        let id = self.new_id(exact, &[]);
        let slot = self.alloc(Slot::Live {
            campaign: Campaign::empty(id, now),
            refs: 0,
        });
        self.by_id.insert(id, slot);
        self.live += 1;
        slot
    }

    /// Adds a message to the campaign behind `slot`; the caller records
    /// `slot` in the message's window entry (one reference). Answers what
    /// the message added (`None`: no live campaign behind the slot).
    pub fn add_member(&mut self, slot: u32, m: Member<'_>) -> Option<Move> {
        self.add_ref(slot);
        let keep_subjects = self.keep_subjects;
        let c = self.get_mut(slot)?;
        Some(c.add(&m, keep_subjects))
    }

    /// A campaign of one message (alone, not in a slot): what
    /// a slot that a first message created and joined would hold, but
    /// its parties ([`Campaign::talk`]), which its window entry's record
    /// keeps until it gets a slot.
    pub fn alone(&self, id: CampaignId, m: &Member<'_>) -> Campaign {
        let mut c = Campaign::empty(id, m.now);
        c.add(m, self.keep_subjects);
        c
    }

    /// `c` as it would be with `m` added, and what `m` would add (an
    /// explanation, which records nothing).
    pub fn with_member(&self, mut c: Campaign, m: &Member<'_>) -> (Campaign, Move) {
        let step = c.add(m, self.keep_subjects);
        (c, step)
    }

    /// Gives `c` a slot with one reference (a campaign of one that needs
    /// one, or that a second message joins); its id must be free.
    pub fn adopt(&mut self, c: Campaign) -> u32 {
        let id = c.id;
        let slot = self.alloc(Slot::Live {
            campaign: c,
            refs: 1,
        });
        self.by_id.insert(id, slot);
        self.live += 1;
        slot
    }

    fn add_ref(&mut self, slot: u32) {
        if let Some(Slot::Live { refs, .. } | Slot::Alias { refs, .. }) =
            self.slots.get_mut(slot as usize)
        {
            *refs += 1;
        }
    }

    /// Drops one reference to `slot`, freeing it (and releasing what an alias
    /// points at) at zero.
    fn drop_ref(&mut self, mut slot: u32) {
        for _ in 0..MAX_CHAIN {
            let Some(s) = self.slots.get_mut(slot as usize) else {
                return;
            };
            let next = match s {
                Slot::Live { refs, campaign } => {
                    *refs = refs.saturating_sub(1);
                    if *refs == 0 {
                        let id = campaign.id;
                        *s = Slot::Free;
                        self.by_id.remove(&id);
                        self.live = self.live.saturating_sub(1);
                        self.free.push(slot);
                    }
                    None
                }
                Slot::Alias { refs, target, .. } => {
                    *refs = refs.saturating_sub(1);
                    if *refs == 0 {
                        let t = *target;
                        *s = Slot::Free;
                        self.free.push(slot);
                        Some(t)
                    } else {
                        None
                    }
                }
                Slot::Free => None,
            };
            match next {
                Some(t) => slot = t,
                None => return,
            }
        }
    }

    /// A window entry of campaign `slot` left the window: take its share out
    /// of the counters (the own tally's for own mail) and drop its
    /// reference. When it was the largest delivery, the campaign no
    /// longer discounts one ([`Campaign::measure`]).
    pub fn release(&mut self, slot: u32, e: Leaving) {
        let (recipients, weight_pct) = (e.recipients, e.weight_pct);
        if let Some(c) = self.get_mut(slot) {
            c.messages = c.messages.saturating_sub(1);
            if e.own {
                c.own = c.own.saturating_sub(u32::from(recipients));
                if recipients >= c.own_largest {
                    c.own_largest = 0;
                }
            } else {
                c.recipients = c.recipients.saturating_sub(u64::from(recipients));
                c.score_centi = c
                    .score_centi
                    .saturating_sub(u64::from(recipients) * u64::from(weight_pct));
                if recipients >= c.largest {
                    c.largest = 0;
                }
                let left = u16::try_from(c.recipients).unwrap_or(u16::MAX);
                c.freed = c.freed.min(left);
                c.grown = c.grown.min(left);
            }
            c.senders.remove_one(e.sender);
        }
        self.drop_ref(slot);
    }

    /// Merges the campaigns behind `slots` into the one first seen earliest
    /// (ties: lowest id) and returns its slot; the ids merged away are
    /// appended to `absorbed`.
    pub fn merge(&mut self, slots: &[u32], absorbed: &mut Vec<CampaignId>) -> Option<u32> {
        let mut roots: Vec<u32> = slots.iter().filter_map(|s| self.resolve(*s)).collect();
        roots.sort_unstable();
        roots.dedup();
        let target = *roots.iter().min_by_key(|r| {
            self.get(**r)
                .map_or((u32::MAX, u64::MAX), |c| (c.first_seen, c.id.0))
        })?;
        for r in roots {
            if r == target {
                continue;
            }
            let Some(Slot::Live { campaign, refs }) = self.slots.get(r as usize).cloned() else {
                continue;
            };
            if let Some(t) = self.get_mut(target) {
                t.first_seen = t.first_seen.min(campaign.first_seen);
                t.last_seen = t.last_seen.max(campaign.last_seen);
                t.messages = t.messages.saturating_add(campaign.messages);
                t.recipients = t.recipients.saturating_add(campaign.recipients);
                t.score_centi = t.score_centi.saturating_add(campaign.score_centi);
                t.alerted |= campaign.alerted;
                t.own_alerted |= campaign.own_alerted;
                t.largest = t.largest.max(campaign.largest);
                t.grown = t.grown.saturating_add(campaign.grown);
                t.freed = t
                    .freed
                    .saturating_add(campaign.freed)
                    .min(MAX_REPLY_FREE as u16);
                t.own = t.own.saturating_add(campaign.own);
                t.own_largest = t.own_largest.max(campaign.own_largest);
                t.list_post &= campaign.list_post;
                t.allowed_until = t.allowed_until.max(campaign.allowed_until);
                // Two campaigns are two deliveries; parties unknown on
                // either side are unknown in the whole.
                match (t.talk.as_deref_mut(), campaign.talk.as_deref()) {
                    (Some(mine), Some(theirs)) => mine.merge(theirs),
                    _ => t.talk = None,
                }
                for (h, n) in campaign.senders.iter() {
                    t.senders.add(h, n);
                }
                for n in campaign.texts.names() {
                    t.texts.add_name(n);
                }
                if let Some(subject) = campaign.texts.subject() {
                    t.texts.set_subject(subject);
                }
            }
            self.by_id.remove(&campaign.id);
            absorbed.push(campaign.id);
            self.live = self.live.saturating_sub(1);
            if let Some(s) = self.slots.get_mut(r as usize) {
                *s = Slot::Alias {
                    target,
                    refs,
                    id: campaign.id,
                };
            }
            self.add_ref(target);
        }
        Some(target)
    }

    /// Marks the campaign as alerted (its own mail's alert: `own`);
    /// returns true the first time.
    pub fn mark_alerted(&mut self, slot: u32, own: bool) -> bool {
        match self.get_mut(slot) {
            Some(c) if own && !c.own_alerted => {
                c.own_alerted = true;
                true
            }
            Some(c) if !own && !c.alerted => {
                c.alerted = true;
                true
            }
            _ => false,
        }
    }

    /// Raw slots, for snapshots.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Rebuilds from snapshot slots; `None` if they are inconsistent.
    pub fn from_slots(slots: Vec<Slot>, keep_subjects: bool) -> Option<Campaigns> {
        let mut c = Campaigns::new(keep_subjects);
        for (i, s) in slots.iter().enumerate() {
            match s {
                Slot::Free => c.free.push(i as u32),
                Slot::Live { campaign, .. } => {
                    if c.by_id.insert(campaign.id, i as u32).is_some() {
                        return None;
                    }
                    c.live += 1;
                }
                Slot::Alias { target, .. } => {
                    if *target as usize >= slots.len() {
                        return None;
                    }
                }
            }
        }
        c.slots = slots;
        Some(c)
    }
}

#[cfg(test)]
mod compact_tests {
    use super::*;

    proptest::proptest! {
        /// The inline forms keep the semantics of the vector they replace
        /// (add: count or push up to 64; remove: count down, swap-remove
        /// at zero).
        #[test]
        fn senders_act_as_the_vector_did(ops in proptest::collection::vec((0u16..80, 0u8..3), 0..300)) {
            let mut reference: Vec<(u16, u32)> = Vec::new();
            let mut compact = Senders::default();
            for (h, op) in ops {
                if op == 0 {
                    if let Some(pos) = reference.iter().position(|(x, _)| *x == h) {
                        reference[pos].1 -= 1;
                        if reference[pos].1 == 0 {
                            reference.swap_remove(pos);
                        }
                    }
                    compact.remove_one(h);
                } else {
                    let n = u32::from(op);
                    if let Some((_, m)) = reference.iter_mut().find(|(x, _)| *x == h) {
                        *m += n;
                    } else if reference.len() < MAX_SENDERS {
                        reference.push((h, n));
                    }
                    compact.add(h, n);
                }
                proptest::prop_assert_eq!(compact.iter().collect::<Vec<_>>(), reference.clone());
                proptest::prop_assert_eq!(compact.len(), reference.len());
            }
        }
    }

    proptest::proptest! {
        /// Records read back as pushed, across gaps, trims and the marks
        /// every 64 records: the model is a map by sequence number.
        #[test]
        fn alone_records_read_back_as_a_map_would(ops in proptest::collection::vec((0u8..4, 0u64..90, 0usize..40), 0..400)) {
            let mut a = AloneRecords::default();
            let mut model: std::collections::BTreeMap<u64, (Texts, Option<Vec<u32>>)> = Default::default();
            let mut next = 0u64;
            let mut first = 0u64;
            for (op, n, size) in ops {
                if op == 0 {
                    first = (first + n).min(next);
                    a.trim(first);
                    model.retain(|k, _| *k >= first);
                } else {
                    let seq = next + if op == 1 { n % 70 } else { 0 };
                    let texts = if size % 5 == 0 { Texts::default() } else {
                        Texts::new(Some(&"s".repeat(size)), [format!("d{seq}.example")])
                    };
                    let keys: Option<Vec<u32>> = (op != 3).then(|| (0..size as u32 % 7).map(|k| (k * 977 + seq as u32) & 0xFF_FFFF).collect());
                    a.push(seq, &texts, keys.as_deref());
                    model.insert(seq, (texts, keys));
                    next = seq + 1;
                }
                for seq in first.saturating_sub(2)..next + 2 {
                    let (t, k) = model.get(&seq).cloned().unwrap_or_default();
                    proptest::prop_assert_eq!(a.get(seq), t, "texts of {}", seq);
                    proptest::prop_assert_eq!(a.keys(seq), k, "keys of {}", seq);
                }
            }
        }
    }

    /// The texts of campaigns of one, by sequence number: read back as
    /// pushed, gone once trimmed, empty for entries that left no record.
    #[test]
    fn alone_texts_are_kept_by_sequence_number_until_trimmed() {
        let t = |i: u64| Texts::new(Some(&format!("subject {i}")), [format!("s{i}.example")]);
        let mut a = AloneRecords::default();
        for seq in 5..10 {
            let texts = if seq == 7 { Texts::default() } else { t(seq) };
            a.push(seq, &texts, None);
        }
        assert_eq!(a.get(6), t(6));
        assert_eq!(a.get(7), Texts::default());
        assert_eq!(a.get(9), t(9));
        assert_eq!(a.get(4), Texts::default());
        assert_eq!(a.get(10), Texts::default());
        a.trim(8);
        assert_eq!(a.get(6), Texts::default());
        assert_eq!((a.get(8), a.get(9)), (t(8), t(9)));
        // A gap (entries with no record) reads as empty; later ones as pushed.
        a.push(12, &t(12), None);
        assert_eq!(
            (a.get(10), a.get(11), a.get(12)),
            (Texts::default(), Texts::default(), t(12))
        );
        a.trim(20);
        assert_eq!(a.get(12), Texts::default());
        a.push(20, &t(20), Some(&[7, 0xFF_FFFF]));
        assert_eq!(a.keys(20), Some(vec![7, 0xFF_FFFF]));
        assert_eq!(a.keys(12), None, "trimmed");
        assert_eq!(a.get(20), t(20));
        // Known parties, none of them (a message with no sender and no
        // recipient address), against unknown ones.
        a.push(21, &Texts::default(), Some(&[]));
        a.push(22, &t(22), None);
        assert_eq!((a.keys(21), a.get(21)), (Some(vec![]), Texts::default()));
        assert_eq!((a.keys(22), a.get(22)), (None, t(22)));
        assert_eq!(a.keys(20), Some(vec![7, 0xFF_FFFF]));
    }

    #[test]
    fn texts_keep_a_subject_and_five_distinct_names_in_one_string() {
        let mut n = Texts::default();
        assert_eq!(n, Texts(None));
        assert_eq!(n.names().count(), 0);
        assert_eq!(n.subject(), None);
        for name in [
            "a.example",
            "b.example",
            "a.example",
            "c\nx",
            "d",
            "e",
            "f",
            "g",
        ] {
            n.add_name(name);
        }
        assert_eq!(n.names_vec(), ["a.example", "b.example", "cx", "d", "e"]);
        assert_eq!(n.subject(), None);
        // A subject (with newlines, NUL and any character) keeps the names,
        // and the first one stays.
        n.set_subject("Deal\n\0 \u{10FFFF}é");
        n.set_subject("later");
        assert_eq!(n.subject(), Some("Deal\n\0 \u{10FFFF}é"));
        assert_eq!(n.names_vec(), ["a.example", "b.example", "cx", "d", "e"]);
        let long = "y".repeat(300);
        let mut m = Texts::default();
        m.add_name(&long);
        assert_eq!(m.names().next().map(str::len), Some(100));
        // Subjects are cut at MAX_SUBJECT characters, of any width; an
        // empty subject is a subject.
        let mut w = Texts::new(Some(&"\u{10FFFF}".repeat(200)), ["x.example"]);
        assert_eq!(w.subject().map(|s| s.chars().count()), Some(MAX_SUBJECT));
        assert_eq!(w.names_vec(), ["x.example"]);
        w.add_name("y.example");
        assert_eq!(w.subject().map(|s| s.chars().count()), Some(MAX_SUBJECT));
        assert_eq!(Texts::new(Some(""), [""; 0]).subject(), Some(""));
        assert_eq!(Texts::new(None, [""; 0]), Texts(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static NONE: Answered = Answered {
        own: false,
        writers: Vec::new(),
    };

    fn member(now: u64, rcpt: u16) -> Member<'static> {
        // Leaked: a few small values a test, for `Member`'s lifetime.
        let parties: &'static Parties = Box::leak(Box::new(Parties::anonymous(rcpt.into())));
        Member {
            now,
            parties,
            weight_pct: 100,
            sender: 1,
            sender_name: Some("a.example"),
            subject: Some("s"),
            list_post: false,
            answered: &NONE,
        }
    }

    /// A window entry of `recipients` leaving.
    fn entry(_slot: u32, recipients: u16) -> Leaving {
        Leaving {
            recipients,
            weight_pct: 100,
            own: false,
            sender: 1,
        }
    }

    #[test]
    fn counts_rise_and_fall() {
        let mut c = Campaigns::new(true);
        let s = c.create(&[1; 32], 10);
        c.add_member(s, member(10, 1));
        c.add_member(s, member(11, 300));
        assert_eq!(c.get(s).map(|x| (x.messages, x.recipients)), Some((2, 301)));
        c.release(s, entry(s, 1));
        assert_eq!(c.get(s).map(|x| (x.messages, x.recipients)), Some((1, 300)));
        c.release(s, entry(s, 300));
        assert!(c.get(s).is_none(), "freed when its last message leaves");
        assert_eq!(c.live(), 0);
        assert_eq!(c.slots_in_use(), 0);
    }

    #[test]
    fn merge_keeps_oldest_and_sums() {
        let mut c = Campaigns::new(true);
        let a = c.create(&[1; 32], 5);
        c.add_member(a, member(5, 2));
        let b = c.create(&[2; 32], 9);
        c.add_member(b, member(9, 3));
        let mut gone = Vec::new();
        let t = c.merge(&[b, a], &mut gone).unwrap();
        assert_eq!(gone.len(), 1);
        assert_eq!(t, a);
        assert_eq!(c.get(b).map(|x| x.id), c.get(a).map(|x| x.id));
        assert_eq!(c.get(a).map(|x| (x.messages, x.recipients)), Some((2, 5)));
        assert_eq!(c.live(), 1);
        // Entries leave: b's entry releases through the alias.
        c.release(b, entry(b, 3));
        assert_eq!(c.get(a).map(|x| x.messages), Some(1));
        c.release(a, entry(a, 2));
        assert_eq!(c.slots_in_use(), 0, "alias and campaign both freed");
    }

    /// An allowance moves with a merge (the later end wins), and the
    /// merged-away id still finds the campaign that absorbed it.
    #[test]
    fn an_allowance_follows_a_merge() {
        let mut c = Campaigns::new(true);
        let a = c.create(&[1; 32], 5);
        c.add_member(a, member(5, 2));
        let b = c.create(&[2; 32], 9);
        c.add_member(b, member(9, 3));
        let b_id = c.get(b).map(|x| x.id).unwrap();
        c.set_allowed(b, Some(500));
        c.set_allowed(a, Some(100));
        let mut gone = Vec::new();
        let t = c.merge(&[a, b], &mut gone).unwrap();
        assert_eq!(gone, [b_id], "b merged into the older a");
        assert_eq!(
            c.get(t)
                .and_then(|x| x.allowed_until)
                .map(std::num::NonZeroU64::get),
            Some(500)
        );
        assert_eq!(c.find(b_id), Some(t), "the alias leads to the target");
        assert_eq!(c.slot_of(b_id), None);
    }

    #[test]
    fn id_is_twelve_hex_digits() {
        let id = CampaignId::from_exact(&[0xAB; 32]);
        assert_eq!(id.to_string(), "abababababab");
    }
}

#[cfg(test)]
mod size_tests {
    /// A campaign of two messages or more holds a slot (docs/dev/
    /// performance.md). 128 bytes before 2026-11-26; 88 before its parties
    /// (`Campaign::talk`, 2026-11-28), which a campaign of one keeps in its
    /// window entry's record instead; 96 before its largest delivery, its
    /// replies' freed recipients and its own mail's tally (issue 63). A
    /// campaign of one has no slot, so this costs only campaigns of two
    /// messages or more (`benches/memory.sh`).
    #[test]
    fn a_campaign_slot_takes_112_bytes() {
        assert_eq!(std::mem::size_of::<super::Slot>(), 112);
        assert_eq!(std::mem::size_of::<super::Senders>(), 16);
    }
}
