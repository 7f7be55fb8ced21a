//! Who takes part in a campaign: its parties, and what each message adds
//! to them (issue 50, "Conversations are not campaigns").
//!
//! A campaign's **parties** are the envelope senders and recipients of its
//! messages and the Message-IDs of its messages, each kept as a keyed
//! 24-bit key (22 bits of hash, 2 of role: no address is kept in clear,
//! here, in snapshots or in the shared log). A campaign counts the **distinct recipients** it reached:
//! a message adds the recipients that are no party yet, and the rest of
//! its recipients are people the campaign already counted.
//!
//! Each message after the first is one of three moves ([`Kind`]):
//! - **within**: every recipient is already a party (a reply, a
//!   reply-all, an answer to a poll). It reaches nobody new, whoever sent
//!   it.
//! - **forward**: it reaches new recipients, and its sender was a
//!   *recipient* of the campaign (or it answers one of its messages by
//!   `In-Reply-To` or `References`): a person passing on what they got.
//! - **copy**: it reaches new recipients from a sender who never received
//!   the text (a second transaction of its first sender included): what
//!   a bulk mailer does.
//!
//! A campaign is a **conversation** while it holds at most one delivery
//! that is not a forward (its first message) and at most
//! [`MAX_FORWARDS`] forwards: it is then judged as one delivery, as a
//! list's post is (`campaign::one_delivery`): clean while its distinct
//! recipients stay within `thresholds.single_transaction_recipients`.
//!
//! What a sender gains by shaping a campaign as a conversation (forging
//! envelope senders that were recipients of an earlier copy, and
//! `In-Reply-To` fields, as a forged thread does): at most the reach of
//! one transaction (`single_transaction_recipients`, which the sender
//! cannot move), spread over at most [`MAX_FORWARDS`] + 1 deliveries. The
//! first copy to reach new people from a sender who was no recipient, or
//! the forward past [`MAX_FORWARDS`], makes it a campaign counted by its
//! distinct recipients like any other, and a campaign that stops being a
//! conversation never becomes one again while it lives. Headers alone
//! never take a message out of a campaign: an `In-Reply-To` only makes a
//! copy a forward, which is bounded the same way.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::envelope::MAX_KEPT_RCPTS;
use super::minhash::mix;

/// Low bits of a party key: the role of an address. A Message-ID's key
/// has none (0).
pub const RECIPIENT: u32 = 1;
pub const SENDER: u32 = 2;
const ROLES: u32 = 3;

/// Forwards a conversation may hold (messages that reach new people from
/// a sender who was a recipient of it, or that answer one of its
/// messages): a message forwarded to a new group, or a thread in which a
/// few people copy in a colleague, is still a conversation; a fourth
/// forward makes it a campaign. Against a forged thread (copies sent from
/// addresses an earlier copy went to) this is what makes the fourth such
/// copy count as any copy does.
pub const MAX_FORWARDS: u32 = 3;

/// Message-IDs of `In-Reply-To` and `References` a message is looked up
/// by (the reader keeps at most these).
pub use bulkwatch_read::mime::MAX_ANSWERS;

/// Party keys held exactly per campaign (512 bytes at most in a vector);
/// past it, a bit set of 4,096 bits (512 bytes) that may answer "a
/// party" for a key it never held, about 2% of the time at 300 keys.
pub const MAX_EXACT: usize = 128;
const BITS: usize = 4096;

/// Party keys of one message: its sender, its recipients and its own
/// Message-ID ([`Parties::keys`]); the most one message adds.
pub const MAX_MESSAGE_KEYS: usize = 2 + MAX_KEPT_RCPTS;

/// The seed of party keys under fingerprint key `key` (another one than
/// the shingles' so that a party key says nothing about a word's hash).
fn seed(key: (u64, u64), domain: u64) -> u64 {
    mix(key.0 ^ mix(key.1 ^ domain))
}

/// The bits of a party key: 22 bits of hash and the 2 role bits, so that
/// a campaign of one keeps each in 3 bytes ([`KEY_BYTES`]). Two addresses
/// share a key one time in 4 million; a campaign's 128 exact keys take a
/// new address for a party about once in 30,000 messages (a recipient
/// not counted, or a copy taken for a forward), and the key is keyed, so
/// no sender can aim at it.
const KEY_MASK: u32 = (1 << 24) - 1;
/// Bytes of a key in a campaign of one's record.
pub const KEY_BYTES: usize = 3;

/// The key of an address: its keyed hash, without role bits. Addresses
/// compare without regard to ASCII case (the domain is case-free, and
/// local parts differing only in case are one mailbox on nearly every
/// system).
pub fn address_key(addr: &str, key: (u64, u64)) -> u32 {
    let lower = addr.trim().to_ascii_lowercase();
    (xxh3_64_with_seed(lower.as_bytes(), seed(key, 0x7061_7274)) >> 40) as u32 & KEY_MASK & !ROLES
}

/// The key of a Message-ID (as `mime` keeps it, without angle brackets).
pub fn message_key(id: &str, key: (u64, u64)) -> u32 {
    (xxh3_64_with_seed(id.trim().as_bytes(), seed(key, 0x6d73_6769)) >> 40) as u32
        & KEY_MASK
        & !ROLES
}

/// A key as read from a snapshot or a log entry: only its 24 bits.
pub fn clamp_key(k: u32) -> u32 {
    k & KEY_MASK
}

/// Who takes part in one message, as party keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parties {
    /// The envelope sender (none for the null sender, or when unknown).
    pub sender: Option<u32>,
    /// The distinct recipients whose address is known.
    pub rcpts: Vec<u32>,
    /// Recipients without a known address: beyond those the envelope
    /// keeps ([`MAX_KEPT_RCPTS`]), or of a log entry or snapshot written
    /// before parties were kept. Each is a person no campaign has counted.
    pub anonymous: u32,
    /// The message's own Message-ID.
    pub message: Option<u32>,
    /// The Message-IDs it answers (`In-Reply-To`, `References`), at most
    /// [`MAX_ANSWERS`].
    pub answers: Vec<u32>,
}

impl Parties {
    /// The parties of a message from `sender` to `rcpts` (the kept
    /// addresses) and `more` recipients without address, with Message-ID
    /// `message_id`, answering `answers`.
    pub fn of<S: AsRef<str>>(
        sender: Option<&str>,
        rcpts: &[S],
        more: u32,
        message_id: Option<&str>,
        answers: &[S],
        key: (u64, u64),
    ) -> Parties {
        let mut keys: Vec<u32> = Vec::with_capacity(rcpts.len().min(MAX_KEPT_RCPTS));
        let mut anonymous = more;
        for r in rcpts {
            let r = r.as_ref().trim();
            if r.is_empty() {
                anonymous = anonymous.saturating_add(1);
                continue;
            }
            if keys.len() >= MAX_KEPT_RCPTS {
                anonymous = anonymous.saturating_add(1);
                continue;
            }
            let k = address_key(r, key);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        Parties {
            sender: sender
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| address_key(s, key)),
            rcpts: keys,
            anonymous,
            message: message_id
                .filter(|m| !m.trim().is_empty())
                .map(|m| message_key(m, key)),
            answers: answers
                .iter()
                .map(AsRef::as_ref)
                .filter(|a| !a.trim().is_empty())
                .take(MAX_ANSWERS)
                .map(|a| message_key(a, key))
                .collect(),
        }
    }

    /// `n` recipients of whom nothing is known (a log entry or snapshot
    /// of a build before parties; a replayed copy).
    pub fn anonymous(n: u32) -> Parties {
        Parties {
            anonymous: n,
            ..Parties::default()
        }
    }

    /// The recipients the message counts for.
    pub fn recipients(&self) -> u32 {
        (self.rcpts.len() as u32).saturating_add(self.anonymous)
    }

    /// The keys a campaign records of this message: its sender, its
    /// recipients and its Message-ID.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.sender
            .map(|s| s | SENDER)
            .into_iter()
            .chain(self.rcpts.iter().map(|r| r | RECIPIENT))
            .chain(self.message)
    }
}

/// What a message was to the campaign it joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// It started the campaign.
    First,
    /// Every recipient was a party already.
    Within,
    /// New recipients, from a recipient of the campaign or in answer to
    /// one of its messages.
    Forward,
    /// New recipients from someone who never received the text.
    Copy,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::First => "first",
            Kind::Within => "within",
            Kind::Forward => "forward",
            Kind::Copy => "copy",
        }
    }
}

/// What one message added to its campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub kind: Kind,
    /// Recipients new to the campaign: what it counts for.
    pub added: u32,
    /// Its sender was a party already.
    pub sender_known: bool,
    /// It answers one of the campaign's messages.
    pub answers: bool,
}

/// A campaign's parties and deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Talk {
    set: PartySet,
    /// Deliveries that were not forwards (the first message and copies).
    pub copies: u32,
    /// Forwards.
    pub forwards: u32,
}

impl Talk {
    /// The talk of a campaign whose first message had `p`.
    pub fn first(p: &Parties) -> (Talk, Move) {
        let mut t = Talk {
            set: PartySet::default(),
            copies: 1,
            forwards: 0,
        };
        t.set.extend(p.keys());
        let m = Move {
            kind: Kind::First,
            added: p.recipients(),
            sender_known: false,
            answers: false,
        };
        (t, m)
    }

    /// The talk of a campaign of one message whose recorded keys are
    /// `keys` ([`Parties::keys`]).
    pub fn from_keys(keys: impl IntoIterator<Item = u32>) -> Talk {
        let mut t = Talk {
            set: PartySet::default(),
            copies: 1,
            forwards: 0,
        };
        t.set.extend(keys);
        t
    }

    /// What a message with parties `p` is to this campaign ([`Kind`]),
    /// without recording it.
    pub fn classify(&self, p: &Parties) -> Move {
        let known = |k: u32| self.set.contains(k | RECIPIENT) || self.set.contains(k | SENDER);
        let added = p
            .rcpts
            .iter()
            .filter(|r| !known(**r))
            .count()
            .try_into()
            .unwrap_or(u32::MAX)
            .saturating_add(p.anonymous);
        let was_recipient = p.sender.is_some_and(|s| self.set.contains(s | RECIPIENT));
        let answers = p.answers.iter().any(|a| self.set.contains(*a));
        let kind = if added == 0 {
            Kind::Within
        } else if was_recipient || answers {
            Kind::Forward
        } else {
            Kind::Copy
        };
        Move {
            kind,
            added,
            sender_known: p.sender.is_some_and(known),
            answers,
        }
    }

    /// Records a message with parties `p`: its move, counted.
    pub fn join(&mut self, p: &Parties) -> Move {
        let m = self.classify(p);
        match m.kind {
            Kind::Forward => self.forwards = self.forwards.saturating_add(1),
            Kind::Copy | Kind::First => self.copies = self.copies.saturating_add(1),
            Kind::Within => {}
        }
        self.set.extend(p.keys());
        m
    }

    /// Takes in a campaign merged into this one: its parties and its
    /// deliveries (two campaigns are two deliveries at least).
    pub fn merge(&mut self, other: &Talk) {
        self.copies = self.copies.saturating_add(other.copies);
        self.forwards = self.forwards.saturating_add(other.forwards);
        self.set.union(&other.set);
    }

    /// One first delivery, and at most [`MAX_FORWARDS`] forwards.
    pub fn conversation(&self) -> bool {
        self.copies <= 1 && self.forwards <= MAX_FORWARDS
    }

    /// Party keys held (an estimate once past [`MAX_EXACT`]).
    pub fn parties(&self) -> usize {
        self.set.len()
    }

    /// The keys held exactly, or the bit set's words (snapshots).
    pub fn to_parts(&self) -> (u32, u32, SetParts<'_>) {
        (self.copies, self.forwards, self.set.parts())
    }

    /// Rebuilt from [`Talk::to_parts`]; `None` when the parts are out of
    /// bounds.
    pub fn from_parts(copies: u32, forwards: u32, set: OwnedSetParts) -> Option<Talk> {
        Some(Talk {
            set: PartySet::from_parts(set)?,
            copies,
            forwards,
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.set.heap_bytes()
    }
}

/// The keys of a campaign's party set, borrowed (snapshots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetParts<'a> {
    Exact(&'a [u32]),
    Bits(&'a [u64], u32),
}

/// The keys of a campaign's party set, owned (snapshots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedSetParts {
    Exact(Vec<u32>),
    Bits(Vec<u64>, u32),
}

/// The number of words of the bit set.
pub const BIT_WORDS: usize = BITS / 64;

/// A set of party keys: exact up to [`MAX_EXACT`], then a Bloom filter
/// of [`BITS`] bits with two positions a key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PartySet {
    Exact(Vec<u32>),
    /// The bits, and the keys inserted (an upper bound on the distinct).
    Bits(Box<[u64; BIT_WORDS]>, u32),
}

impl Default for PartySet {
    fn default() -> Self {
        PartySet::Exact(Vec::new())
    }
}

/// The two bit positions of a key.
fn positions(k: u32) -> [usize; 2] {
    let h = mix(u64::from(k));
    [(h as usize) % BITS, ((h >> 32) as usize) % BITS]
}

impl PartySet {
    fn contains(&self, k: u32) -> bool {
        match self {
            PartySet::Exact(v) => v.contains(&k),
            PartySet::Bits(b, _) => positions(k)
                .iter()
                .all(|p| b.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0)),
        }
    }

    fn insert(&mut self, k: u32) {
        match self {
            PartySet::Exact(v) => {
                if v.contains(&k) {
                    return;
                }
                if v.len() < MAX_EXACT {
                    v.push(k);
                    return;
                }
                let mut bits = Box::new([0u64; BIT_WORDS]);
                let n = v.len() as u32;
                for x in v.iter() {
                    set_bits(&mut bits, *x);
                }
                set_bits(&mut bits, k);
                *self = PartySet::Bits(bits, n + 1);
            }
            PartySet::Bits(b, n) => {
                if !positions(k)
                    .iter()
                    .all(|p| b.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0))
                {
                    set_bits(b, k);
                    *n = n.saturating_add(1);
                }
            }
        }
    }

    fn extend(&mut self, keys: impl IntoIterator<Item = u32>) {
        for k in keys {
            self.insert(k);
        }
    }

    fn union(&mut self, other: &PartySet) {
        match other {
            PartySet::Exact(v) => self.extend(v.iter().copied()),
            PartySet::Bits(ob, on) => {
                let mut mine = std::mem::take(self);
                if let PartySet::Exact(v) = &mine {
                    let mut bits = Box::new([0u64; BIT_WORDS]);
                    for x in v {
                        set_bits(&mut bits, *x);
                    }
                    mine = PartySet::Bits(bits, v.len() as u32);
                }
                if let PartySet::Bits(b, n) = &mut mine {
                    for (w, o) in b.iter_mut().zip(ob.iter()) {
                        *w |= o;
                    }
                    *n = n.saturating_add(*on);
                }
                *self = mine;
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            PartySet::Exact(v) => v.len(),
            PartySet::Bits(_, n) => *n as usize,
        }
    }

    fn parts(&self) -> SetParts<'_> {
        match self {
            PartySet::Exact(v) => SetParts::Exact(v),
            PartySet::Bits(b, n) => SetParts::Bits(&b[..], *n),
        }
    }

    fn from_parts(p: OwnedSetParts) -> Option<PartySet> {
        match p {
            OwnedSetParts::Exact(v) if v.len() <= MAX_EXACT => Some(PartySet::Exact(v)),
            OwnedSetParts::Bits(w, n) => {
                let words: [u64; BIT_WORDS] = w.try_into().ok()?;
                Some(PartySet::Bits(Box::new(words), n))
            }
            OwnedSetParts::Exact(_) => None,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            PartySet::Exact(v) => v.capacity() * 4,
            PartySet::Bits(..) => BITS / 8,
        }
    }
}

fn set_bits(b: &mut [u64; BIT_WORDS], k: u32) {
    for p in positions(k) {
        if let Some(w) = b.get_mut(p / 64) {
            *w |= 1 << (p % 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: (u64, u64) = (1, 2);

    fn msg(from: &str, to: &[&str]) -> Parties {
        Parties::of(Some(from), to, 0, None, &[] as &[&str], KEY)
    }

    fn people(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}@example.org")).collect()
    }

    #[test]
    fn addresses_compare_without_case_and_are_counted_once() {
        let p = Parties::of(
            Some("A@X.example"),
            &["b@y.example", "B@Y.example", ""],
            2,
            None,
            &[] as &[&str],
            KEY,
        );
        assert_eq!(p.sender, Some(address_key("a@x.example", KEY)));
        assert_eq!(p.rcpts.len(), 1);
        assert_eq!(
            p.recipients(),
            1 + 1 + 2,
            "the empty one and two more are anonymous"
        );
        assert_ne!(
            address_key("a@x.example", KEY),
            address_key("a@x.example", (1, 3))
        );
        assert_eq!(address_key("a@x.example", KEY) & ROLES, 0);
    }

    /// A reply-all adds nobody, a poll's answers add nobody, a forward to a
    /// new group adds the group, and a copy from an outsider is a copy.
    #[test]
    fn moves_are_classified_by_who_takes_part() {
        let team = people("u", 12);
        let team_refs: Vec<&str> = team.iter().map(String::as_str).collect();
        let (mut t, first) = Talk::first(&msg("marco@supplier.example", &team_refs));
        assert_eq!((first.kind, first.added), (Kind::First, 12));
        // u0 answers all: Marco and the eleven others.
        let mut all: Vec<&str> = vec!["marco@supplier.example"];
        all.extend(team_refs.iter().skip(1));
        let m = t.join(&msg("u0@example.org", &all));
        assert_eq!((m.kind, m.added, m.sender_known), (Kind::Within, 0, true));
        // Someone outside who writes to parties only adds nobody either.
        let m = t.join(&msg("else@other.example", &["u3@example.org"]));
        assert_eq!(m.kind, Kind::Within);
        // u4 forwards to eight new colleagues.
        let group = people("g", 8);
        let group: Vec<&str> = group.iter().map(String::as_str).collect();
        let m = t.join(&msg("u4@example.org", &group));
        assert_eq!((m.kind, m.added), (Kind::Forward, 8));
        assert!(t.conversation());
        // Marco sends it again to someone new: a second delivery by its
        // sender, a copy.
        // Marco got u0's answer: sending it on to someone new, he is a
        // recipient passing it on (a forward).
        let m = t.join(&msg("marco@supplier.example", &["new@example.org"]));
        assert_eq!((m.kind, m.added), (Kind::Forward, 1));
        assert!(t.conversation());
        // Someone who never received it, to someone new: a copy.
        let m = t.join(&msg("stranger@other.example", &["new2@example.org"]));
        assert_eq!((m.kind, m.added), (Kind::Copy, 1));
        assert!(!t.conversation());
    }

    /// The forged thread: a first copy to thirty addresses, then copies
    /// from them to fresh recipients, each in answer to the first: the
    /// fourth forward ends the conversation.
    #[test]
    fn a_forged_thread_stops_being_a_conversation_after_three_forwards() {
        let own = people("drop", 30);
        let own_refs: Vec<&str> = own.iter().map(String::as_str).collect();
        let first = Parties::of(
            Some("x@spam.example"),
            &own_refs,
            0,
            Some("first@spam.example"),
            &[] as &[&str],
            KEY,
        );
        let (mut t, _) = Talk::first(&first);
        for (i, from) in own.iter().enumerate() {
            let victim = format!("victim{i}@example.org");
            let p = Parties::of(
                Some(from.as_str()),
                &[victim.as_str()],
                0,
                None,
                &["first@spam.example"],
                KEY,
            );
            let m = t.join(&p);
            assert_eq!(m.kind, Kind::Forward);
            assert_eq!(t.conversation(), i < MAX_FORWARDS as usize, "{i}");
        }
        // An answer alone (no party as sender) is a forward too.
        let mut u = Talk::first(&first).0;
        let p = Parties::of(
            Some("nobody@elsewhere.example"),
            &["v@example.org"],
            0,
            None,
            &["first@spam.example"],
            KEY,
        );
        assert_eq!(u.join(&p).kind, Kind::Forward);
        let p = Parties::of(
            Some("nobody@elsewhere.example"),
            &["w@example.org"],
            0,
            None,
            &["unrelated@elsewhere.example"],
            KEY,
        );
        assert_eq!(u.join(&p).kind, Kind::Copy);
    }

    /// Past the exact bound the set is a bit set: what was inserted is
    /// still found, and few keys it never held are.
    #[test]
    fn a_large_set_keeps_its_members_and_few_others() {
        let mut s = PartySet::default();
        for i in 0..1000u32 {
            s.insert(address_key(&format!("p{i}@example.org"), KEY) | RECIPIENT);
        }
        assert!(matches!(s, PartySet::Bits(..)));
        assert!((0..1000u32)
            .all(|i| s.contains(address_key(&format!("p{i}@example.org"), KEY) | RECIPIENT)));
        let false_hits = (0..1000u32)
            .filter(|i| s.contains(address_key(&format!("q{i}@example.org"), KEY) | RECIPIENT))
            .count();
        assert!(false_hits < 250, "{false_hits}");
        assert_eq!(s.heap_bytes(), 512);
        // A union of an exact set into a bit set, and the other way.
        let mut e = PartySet::default();
        e.insert(7 << 2);
        let mut b = s.clone();
        b.union(&e);
        assert!(b.contains(7 << 2));
        e.union(&s);
        assert!(e.contains(address_key("p5@example.org", KEY) | RECIPIENT));
    }

    #[test]
    fn merged_campaigns_are_two_deliveries() {
        let (mut a, _) = Talk::first(&msg("a@x.example", &["r@example.org"]));
        let (b, _) = Talk::first(&msg("b@y.example", &["s@example.org"]));
        a.merge(&b);
        assert!(!a.conversation());
        assert_eq!(a.parties(), 4);
    }
}
