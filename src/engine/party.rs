//! Who a campaign reached, from what this MX observed (issue 63, "Who
//! sent it, from what the MTA saw").
//!
//! A sender writes its envelope sender, every header and every quote, so
//! none of them decides whom a message reaches or whether it belongs to a
//! conversation. What this MX observes and no sender can forge:
//! - the **envelope recipients** it delivered a message to (RCPT TO of a
//!   transaction it accepted);
//! - the **origin** of a message ([`Origin`]): the site's own mail
//!   (SASL-authenticated users, clients in the site's own networks, local
//!   submission: `crate::config::OwnConfig`) or mail from outside;
//! - the **Message-IDs our own users sent out** through this MX, which
//!   only a real recipient of that mail can quote back in `In-Reply-To` or
//!   `References` ([`OwnThreads`]).
//!
//! A campaign keeps, as keyed 24-bit hashes (22 bits of hash and 2 of
//! role; no address is kept in clear, here, in snapshots or in the shared
//! log), the recipients its inbound copies were delivered to
//! ([`REACHED`]), the site's own users who sent its text ([`OWN_SENDER`])
//! and the recipients of that own mail ([`OWN_REACHED`]). The set is
//! exact and bounded ([`MAX_KEYS`]): once full it answers "unknown" for
//! every address it does not hold, and an unknown recipient is counted.
//!
//! **Inbound mail** counts the recipients it reached that the campaign had
//! not reached: a recipient is known when an inbound copy was delivered
//! to them or when they sent the text themselves from inside. The
//! envelope sender of inbound mail is never recorded and never makes
//! anybody known: a copy "from" a victim counts like any copy. Each
//! message is one of four moves ([`Kind`]):
//! - **first**: it started the campaign;
//! - **within**: every recipient was reached already (a reply-all, an
//!   answer to a poll, a repeat);
//! - **reply**: it reaches a few new people in the shape of a reply: at
//!   most [`MAX_REPLY_NEW`] new recipients beside at least half of the
//!   people the campaign reached (a thread whose Cc grows by one), or in
//!   answer to a Message-ID our own users sent out;
//! - **copy**: anything else that reaches new people.
//!
//! What a campaign's level is measured on (`Campaign::measure`): its
//! distinct recipients, less those of its largest single delivery (while
//! that delivery is within `thresholds.single_transaction_recipients`: one
//! transaction is no evidence of a campaign) and less at most
//! [`MAX_REPLY_FREE`] recipients added by replies. An announcement to 60
//! followed by one outsider copy to one new address measures 2, not 61.
//!
//! **The attacker's best move**, and its bound. Only what this MX saw
//! counts, so a forged envelope sender, `In-Reply-To`, `References`,
//! To/Cc header or quote changes nothing: the same copies sent plainly
//! give the same counts. What shaping can still buy: one transaction
//! (`single_transaction_recipients`, 100, which one plain transaction
//! gets anyway) and [`MAX_REPLY_FREE`] (16) recipients more, added at most
//! [`MAX_REPLY_NEW`] at a time by copies that each go again to at least
//! half of everyone the campaign reached: about 16²/4 deliveries for 16
//! people. An answer to our own users' mail needs a Message-ID only its
//! recipients saw, and buys the same 16 at most.
//!
//! **Own mail** (from inside) is counted apart ([`Origin::Own`]): its
//! recipients are known to other own mail of the campaign, never to
//! inbound copies, so an announcement sent to all staff makes no inbound
//! copy "known", and the same text from outside is counted from zero.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::minhash::mix;

/// Low bits of a party key: an inbound copy was delivered to the address.
pub const REACHED: u32 = 1;
/// The address sent the text from inside (its own mail's envelope sender).
pub const OWN_SENDER: u32 = 2;
/// Own mail was sent to the address.
pub const OWN_REACHED: u32 = 3;
const ROLES: u32 = 3;

/// New recipients a message that goes again to everyone the campaign
/// reached may add and still grow its conversation ([`Kind::Grow`]).
pub const MAX_GROW_NEW: u32 = 4;

/// New recipients a reply may add ([`Kind::Reply`]) beside at least half
/// of everyone reached: two, or as many as it reaches again, at most
/// eight; more, and it is a copy.
pub const MAX_REPLY_NEW: u32 = 8;

/// Recipients a campaign's replies may add without being counted toward
/// its level ([`Kind::Reply`]): what shaping copies as replies can gain.
pub const MAX_REPLY_FREE: u32 = 16;

/// Message-IDs of `In-Reply-To` and `References` a message is looked up
/// by (the reader keeps at most these).
pub use bulkwatch_read::mime::MAX_ANSWERS;

/// Recipients of one message whose keys are kept (Postfix's own default
/// `smtpd_recipient_limit`); more are counted as unknown people.
pub const MAX_MESSAGE_RCPTS: usize = 1000;

/// Party keys held per campaign: past it the set is full, answers
/// "unknown" for what it does not hold, and takes no more.
pub const MAX_KEYS: usize = 1024;

/// Party keys of one message: its sender and its recipients
/// ([`Parties::keys`]); the most one message adds.
pub const MAX_MESSAGE_KEYS: usize = 1 + MAX_MESSAGE_RCPTS;

/// The seed of party keys under fingerprint key `key` (another one than
/// the shingles' so that a party key says nothing about a word's hash).
fn seed(key: (u64, u64), domain: u64) -> u64 {
    mix(key.0 ^ mix(key.1 ^ domain))
}

/// The bits of a party key: 22 bits of hash and the 2 role bits, so that
/// a campaign of one keeps each in 3 bytes ([`KEY_BYTES`]). Two addresses
/// share a key one time in 4 million, and the key is keyed, so no sender
/// can aim at a collision.
const KEY_MASK: u32 = (1 << 24) - 1;
/// Bytes of a key in a campaign of one's record.
pub const KEY_BYTES: usize = 3;

/// The unkeyed hash of an address as the milter session keeps it for
/// recipients past those it keeps in clear (ASCII case folded).
pub fn address_hash(addr: &str) -> u64 {
    let lower = addr.trim().to_ascii_lowercase();
    xxhash_rust::xxh3::xxh3_64(lower.as_bytes())
}

/// The key of an address: its keyed hash, without role bits. Addresses
/// compare without regard to ASCII case (the domain is case-free, and
/// local parts differing only in case are one mailbox on nearly every
/// system).
pub fn address_key(addr: &str, key: (u64, u64)) -> u32 {
    hashed_key(address_hash(addr), key)
}

/// The key of an address from its [`address_hash`].
pub fn hashed_key(hash: u64, key: (u64, u64)) -> u32 {
    (mix(hash ^ seed(key, 0x7061_7274)) >> 40) as u32 & KEY_MASK & !ROLES
}

/// The thread key of a Message-ID (as `mime` keeps it, without angle
/// brackets): 64 bits, keyed, so that a forged `References` field naming
/// made-up identifiers hits one our users sent about once in 10^15 tries.
pub fn message_key(id: &str, key: (u64, u64)) -> u64 {
    xxh3_64_with_seed(id.trim().as_bytes(), seed(key, 0x6d73_6769)) | 1
}

/// A key as read from a snapshot or a log entry: only its 24 bits.
pub fn clamp_key(k: u32) -> u32 {
    k & KEY_MASK
}

/// Where a message came from, as the MTA saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Origin {
    /// From outside the site.
    #[default]
    Inbound,
    /// The site's own mail: a SASL-authenticated client, a client in the
    /// site's own networks, local submission ([`crate::config::OwnConfig`]).
    Own,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Inbound => "inbound",
            Origin::Own => "own",
        }
    }
}

/// Who takes part in one message, as party keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parties {
    pub origin: Origin,
    /// The envelope sender of own mail (none for inbound mail: a sender
    /// from outside writes it; none for the null sender).
    pub sender: Option<u32>,
    /// The distinct recipients whose key is known.
    pub rcpts: Vec<u32>,
    /// Recipients without a known key: beyond [`MAX_MESSAGE_RCPTS`], or of
    /// a log entry or snapshot written before parties were kept. Each is a
    /// person no campaign has counted.
    pub anonymous: u32,
    /// The thread key of own mail's Message-ID ([`message_key`]), which
    /// later answers may quote ([`OwnThreads`]); none for inbound mail.
    pub message: Option<u64>,
    /// The thread keys of the Message-IDs it answers (`In-Reply-To`,
    /// `References`), at most [`MAX_ANSWERS`].
    pub answers: Vec<u64>,
}

/// The recipients of a message: addresses in clear and the hashes of
/// those past them ([`address_hash`]), and how many were not kept at all.
#[derive(Debug, Clone, Copy)]
pub struct Recipients<'a, S> {
    pub addrs: &'a [S],
    pub hashes: &'a [u64],
    pub more: u32,
}

impl Parties {
    /// The parties of a message of `origin` from `sender` to `rcpts`, with
    /// Message-ID `message_id`, answering `answers`.
    pub fn of<S: AsRef<str>>(
        origin: Origin,
        sender: Option<&str>,
        rcpts: Recipients<'_, S>,
        message_id: Option<&str>,
        answers: &[S],
        key: (u64, u64),
    ) -> Parties {
        let mut keys: Vec<u32> = Vec::with_capacity(rcpts.addrs.len() + rcpts.hashes.len());
        let mut anonymous = rcpts.more;
        let hashes = rcpts
            .addrs
            .iter()
            .map(|r| r.as_ref().trim())
            .map(|r| (!r.is_empty()).then(|| address_hash(r)))
            .chain(rcpts.hashes.iter().map(|h| Some(*h)));
        for h in hashes {
            match h {
                Some(h) if keys.len() < MAX_MESSAGE_RCPTS => {
                    let k = hashed_key(h, key);
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
                _ => anonymous = anonymous.saturating_add(1),
            }
        }
        let own = origin == Origin::Own;
        Parties {
            origin,
            sender: sender
                .map(str::trim)
                .filter(|s| own && !s.is_empty())
                .map(|s| address_key(s, key)),
            rcpts: keys,
            anonymous,
            message: message_id
                .filter(|m| own && !m.trim().is_empty())
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

    /// `n` inbound recipients of whom nothing is known (a log entry or
    /// snapshot of a build before parties; a replayed copy).
    pub fn anonymous(n: u32) -> Parties {
        Parties {
            anonymous: n,
            ..Parties::default()
        }
    }

    /// Own mail.
    pub fn own(&self) -> bool {
        self.origin == Origin::Own
    }

    /// The recipients the message counts for.
    pub fn recipients(&self) -> u32 {
        (self.rcpts.len() as u32).saturating_add(self.anonymous)
    }

    /// The keys a campaign records of this message: the recipients as
    /// reached by inbound or by own mail, and the sender of own mail.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        let role = if self.own() { OWN_REACHED } else { REACHED };
        self.sender
            .filter(|_| self.own())
            .map(|s| s | OWN_SENDER)
            .into_iter()
            .chain(self.rcpts.iter().map(move |r| r | role))
    }
}

/// What a message was to the campaign it joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// It started the campaign.
    First,
    /// Every recipient was reached already.
    Within,
    /// It went again to everyone the campaign reached and to at most
    /// [`MAX_GROW_NEW`] more: a thread whose Cc grows. Its new recipients
    /// join the campaign's first delivery, one conversation of at most
    /// `thresholds.single_transaction_recipients` people.
    Grow,
    /// A few new recipients beside at least half of those reached, or an
    /// answer to the very person who wrote our own mail it answers.
    Reply,
    /// New recipients otherwise.
    Copy,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::First => "first",
            Kind::Within => "within",
            Kind::Grow => "grow",
            Kind::Reply => "reply",
            Kind::Copy => "copy",
        }
    }
}

/// What the MX knows of a message's answers: whether it answers mail our
/// own users sent ([`OwnThreads`]), and the keys of the users who wrote
/// that mail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answered {
    pub own: bool,
    /// The address keys of the own mail's senders it answers (at most
    /// [`MAX_ANSWERS`]).
    pub writers: Vec<u32>,
}

/// What one message added to its campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub kind: Kind,
    /// Recipients new to the campaign (on its own mail's tally for own
    /// mail): what it counts for.
    pub added: u32,
    /// Own mail, counted apart.
    pub own: bool,
    /// It answers a Message-ID our own users sent out.
    pub answers_own: bool,
}

impl Move {
    /// The move of a campaign's first message.
    pub fn first(p: &Parties) -> Move {
        Move {
            kind: Kind::First,
            added: p.recipients(),
            own: p.own(),
            answers_own: false,
        }
    }
}

/// A campaign's parties and deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Talk {
    set: PartySet,
    /// Deliveries that reached new people not as replies (its first
    /// message and copies), inbound.
    pub copies: u32,
    /// Replies that reached new people.
    pub replies: u32,
}

impl Talk {
    /// The talk of a campaign whose first message had `p`.
    pub fn first(p: &Parties) -> (Talk, Move) {
        let t = Talk::from_keys(p.keys());
        (t, Move::first(p))
    }

    /// The talk of a campaign of one message whose recorded keys are
    /// `keys` ([`Parties::keys`]).
    pub fn from_keys(keys: impl IntoIterator<Item = u32>) -> Talk {
        let mut t = Talk {
            set: PartySet::default(),
            copies: 1,
            replies: 0,
        };
        t.set.extend(keys);
        t
    }

    /// What a message with parties `p` is to this campaign ([`Kind`]),
    /// without recording it, given what it answers (`answered`).
    pub fn classify(&self, p: &Parties, answered: &Answered) -> Move {
        let s = &self.set;
        if p.own() {
            // Own mail's tally: anyone who has the text already.
            let known = |k: u32| (1..=ROLES).any(|role| s.contains(k | role));
            let added = count_unknown(&p.rcpts, known).saturating_add(p.anonymous);
            let kind = if added == 0 { Kind::Within } else { Kind::Copy };
            return Move {
                kind,
                added,
                own: true,
                answers_own: answered.own,
            };
        }
        // An answer to our own users' mail reaches the people they sent
        // this text to as part of their thread.
        let known = |k: u32| {
            s.contains(k | REACHED)
                || s.contains(k | OWN_SENDER)
                || (answered.own && s.contains(k | OWN_REACHED))
        };
        let added = count_unknown(&p.rcpts, known).saturating_add(p.anonymous);
        let again = p.rcpts.len() as u32 - count_unknown(&p.rcpts, known);
        let kind = if added == 0 {
            Kind::Within
        } else if self.grows(p, again, added) {
            Kind::Grow
        } else if self.reply_shaped(p, again, added)
            || p.rcpts
                .iter()
                .filter(|r| !known(**r))
                .all(|r| answered.writers.contains(r))
                && p.anonymous == 0
        {
            Kind::Reply
        } else {
            Kind::Copy
        };
        Move {
            kind,
            added,
            own: false,
            answers_own: answered.own,
        }
    }

    /// The people the campaign reached: inbound recipients and own
    /// senders, each address once (its keys of both roles sort together).
    fn people(&self) -> u32 {
        let mut n = 0u32;
        let mut last = None;
        for k in &self.set.keys {
            if matches!(k & ROLES, REACHED | OWN_SENDER) && last != Some(k >> 2) {
                n = n.saturating_add(1);
                last = Some(k >> 2);
            }
        }
        n
    }

    /// `p` goes again to every person the campaign reached (`again` of
    /// its recipients were) and adds at most [`MAX_GROW_NEW`], each known
    /// by address. A full set cannot tell and says no.
    fn grows(&self, p: &Parties, again: u32, added: u32) -> bool {
        p.anonymous == 0
            && !self.set.full
            && added <= MAX_GROW_NEW
            && again >= 1
            && again >= self.people()
    }

    /// `p` goes again to at least half of the people the campaign reached
    /// (and one) and adds at most two, or as many as it reaches again,
    /// never more than [`MAX_REPLY_NEW`], each known by address.
    fn reply_shaped(&self, p: &Parties, again: u32, added: u32) -> bool {
        p.anonymous == 0
            && !self.set.full
            && again >= 1
            && 2 * again >= self.people()
            && added <= again.clamp(2, MAX_REPLY_NEW)
    }

    /// Records a message with parties `p`: its move, counted.
    pub fn join(&mut self, p: &Parties, answered: &Answered) -> Move {
        let m = self.classify(p, answered);
        match (m.own, m.kind) {
            (false, Kind::Copy | Kind::First) => self.copies = self.copies.saturating_add(1),
            (false, Kind::Reply | Kind::Grow) => self.replies = self.replies.saturating_add(1),
            _ => {}
        }
        self.set.extend(p.keys());
        m
    }

    /// Takes in a campaign merged into this one: its parties and its
    /// deliveries (two campaigns are two deliveries at least).
    pub fn merge(&mut self, other: &Talk) {
        self.copies = self.copies.saturating_add(other.copies);
        self.replies = self.replies.saturating_add(other.replies);
        self.set.union(&other.set);
    }

    /// No inbound copy reached new people but the first delivery and
    /// replies: shown as `conversation=yes`.
    pub fn conversation(&self) -> bool {
        self.copies <= 1
    }

    /// Party keys held.
    pub fn parties(&self) -> usize {
        self.set.keys.len()
    }

    /// The set is full: it answers "unknown" for what it does not hold.
    pub fn full(&self) -> bool {
        self.set.full
    }

    /// Copies, replies, whether the set is full and its keys (snapshots).
    pub fn to_parts(&self) -> (u32, u32, bool, &[u32]) {
        (self.copies, self.replies, self.set.full, &self.set.keys)
    }

    /// Rebuilt from [`Talk::to_parts`]; `None` when the parts are out of
    /// bounds.
    pub fn from_parts(copies: u32, replies: u32, full: bool, mut keys: Vec<u32>) -> Option<Talk> {
        if keys.len() > MAX_KEYS {
            return None;
        }
        keys.sort_unstable();
        keys.dedup();
        Some(Talk {
            set: PartySet { keys, full },
            copies,
            replies,
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.set.keys.capacity() * 4
    }
}

fn count_unknown(rcpts: &[u32], known: impl Fn(u32) -> bool) -> u32 {
    let n = rcpts.iter().filter(|r| !known(**r)).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A set of party keys, exact, of at most [`MAX_KEYS`], sorted (a lookup
/// is a binary search: a message of 1,000 recipients against a full set
/// costs some 20,000 comparisons); once a key did not fit it is full: it
/// holds what it held and no more, and a key it does not hold is unknown
/// (the caller counts it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PartySet {
    keys: Vec<u32>,
    full: bool,
}

impl PartySet {
    fn contains(&self, k: u32) -> bool {
        self.keys.binary_search(&k).is_ok()
    }

    fn insert(&mut self, k: u32) {
        match self.keys.binary_search(&k) {
            Ok(_) => {}
            Err(at) if self.keys.len() < MAX_KEYS => self.keys.insert(at, k),
            Err(_) => self.full = true,
        }
    }

    fn extend(&mut self, keys: impl IntoIterator<Item = u32>) {
        for k in keys {
            self.insert(k);
        }
    }

    fn union(&mut self, other: &PartySet) {
        self.full |= other.full;
        self.extend(other.keys.iter().copied());
    }
}

/// Default time our users' Message-IDs are kept for answers
/// ([`OwnThreads`]): two weeks, longer than any window, since a thread
/// goes on for days.
pub const OWN_THREAD_SECS: u64 = crate::config::OWN_THREAD_SECS;

/// The Message-IDs our own users sent out (own mail's
/// [`Parties::message`]) and who sent each, kept [`OWN_THREAD_SECS`] and
/// at most `OwnThreads::capacity`: an inbound message quoting one in
/// `In-Reply-To` or `References` answers mail of ours, which only its
/// recipients saw. The oldest go first; a full store forgets, and a
/// forgotten thread is counted as any mail (never "known").
#[derive(Debug, Clone, Default)]
pub struct OwnThreads {
    /// Thread key → the time it was last sent (Unix seconds) and its
    /// sender's address key (0: the null sender).
    seen: std::collections::HashMap<u64, (u64, u32)>,
    /// Keys in the order sent, with their time, for expiry.
    order: std::collections::VecDeque<(u64, u64)>,
    capacity: usize,
    keep_secs: u64,
}

impl OwnThreads {
    /// An empty store of at most `capacity` threads kept `keep_secs`.
    pub fn new(capacity: usize, keep_secs: u64) -> OwnThreads {
        OwnThreads {
            capacity,
            keep_secs,
            ..OwnThreads::default()
        }
    }

    /// Notes thread key `k` sent at `now` by the address of key `sender`.
    pub fn note(&mut self, k: u64, now: u64, sender: Option<u32>) {
        if self.capacity == 0 {
            return;
        }
        self.expire(now);
        while self.order.len() >= self.capacity {
            self.pop_oldest();
        }
        self.seen.insert(k, (now, sender.map_or(0, clamp_key)));
        self.order.push_back((k, now));
    }

    fn pop_oldest(&mut self) {
        if let Some((k, t)) = self.order.pop_front() {
            if self.seen.get(&k).is_some_and(|(at, _)| *at == t) {
                self.seen.remove(&k);
            }
        }
    }

    /// Forgets what was sent more than `keep_secs` before `now`.
    pub fn expire(&mut self, now: u64) {
        while self
            .order
            .front()
            .is_some_and(|(_, t)| t.saturating_add(self.keep_secs) < now)
        {
            self.pop_oldest();
        }
    }

    /// What `answers` (thread keys) answer of ours at `now`: whether one
    /// is a thread our users sent within `keep_secs`, and who wrote them.
    pub fn answered(&self, answers: &[u64], now: u64) -> Answered {
        let mut out = Answered::default();
        for a in answers.iter().take(MAX_ANSWERS) {
            if let Some((t, sender)) = self.seen.get(a) {
                if t.saturating_add(self.keep_secs) >= now {
                    out.own = true;
                    if *sender != 0 && !out.writers.contains(sender) {
                        out.writers.push(*sender);
                    }
                }
            }
        }
        out
    }

    /// Threads held.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// The (key, time, sender key) of each thread in the order sent
    /// (snapshots).
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u32)> + '_ {
        self.order.iter().filter_map(|(k, t)| {
            let (at, sender) = self.seen.get(k)?;
            (at == t).then_some((*k, *t, *sender))
        })
    }

    /// Heap bytes held (estimated: a map entry about 32 bytes, a queue
    /// item 16).
    pub fn heap_bytes(&self) -> usize {
        self.seen.capacity() * 32 + self.order.capacity() * 16
    }

    /// The same threads under new bounds (a reload).
    pub fn reconfigure(&mut self, capacity: usize, keep_secs: u64) {
        self.capacity = capacity;
        self.keep_secs = keep_secs;
        while self.order.len() > capacity {
            self.pop_oldest();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: (u64, u64) = (1, 2);

    fn parties(origin: Origin, from: &str, to: &[&str], answers: &[&str]) -> Parties {
        Parties::of(
            origin,
            Some(from),
            Recipients {
                addrs: to,
                hashes: &[],
                more: 0,
            },
            Some("id@x.example"),
            answers,
            KEY,
        )
    }

    fn inbound(from: &str, to: &[&str]) -> Parties {
        parties(Origin::Inbound, from, to, &[])
    }

    fn people(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}@example.org")).collect()
    }

    fn refs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }

    #[test]
    fn addresses_compare_without_case_and_are_counted_once() {
        let p = Parties::of(
            Origin::Own,
            Some("A@X.example"),
            Recipients {
                addrs: &["b@y.example", "B@Y.example", ""],
                hashes: &[address_hash("c@z.example"), address_hash("C@Z.example")],
                more: 2,
            },
            None,
            &[],
            KEY,
        );
        assert_eq!(p.sender, Some(address_key("a@x.example", KEY)));
        assert_eq!(p.rcpts.len(), 2);
        assert_eq!(p.recipients(), 2 + 1 + 2, "the empty one and two more");
        assert_ne!(
            address_key("a@x.example", KEY),
            address_key("a@x.example", (1, 3))
        );
        assert_eq!(address_key("a@x.example", KEY) & ROLES, 0);
        // Inbound mail keeps neither its sender nor its Message-ID.
        let q = parties(Origin::Inbound, "a@x.example", &["b@y.example"], &[]);
        assert_eq!((q.sender, q.message), (None, None));
        assert!(q.keys().all(|k| k & ROLES == REACHED));
    }

    /// A reply-all adds nobody, whoever sends it; a copy to someone new
    /// counts whoever it claims to come from.
    #[test]
    fn senders_make_nobody_known() {
        let team = people("u", 12);
        let (mut t, first) = Talk::first(&inbound("marco@supplier.example", &refs(&team)));
        assert_eq!((first.kind, first.added), (Kind::First, 12));
        let none = Answered::default();
        let m = t.join(&inbound("u0@example.org", &refs(&team[1..])), &none);
        assert_eq!((m.kind, m.added), (Kind::Within, 0));
        // The chain: "from" a reached victim to someone new.
        let m = t.join(&inbound("u3@example.org", &["v@example.org"]), &none);
        assert_eq!((m.kind, m.added), (Kind::Copy, 1));
        // "From" the new victim back to the first: nobody new.
        let m = t.join(&inbound("w@example.org", &["v@example.org"]), &none);
        assert_eq!(m.kind, Kind::Within);
        assert!(!t.conversation());
    }

    /// A thread whose Cc grows by one: each answer goes to everyone and
    /// one more (it grows the conversation); one that reaches half again
    /// and adds two is a reply; one new person beside one of nine is a
    /// copy, as are nine new at once.
    #[test]
    fn a_growing_cc_grows_and_a_lone_new_recipient_is_a_copy() {
        let none = Answered::default();
        let mut all = people("p", 4);
        let (mut t, _) = Talk::first(&inbound("x@partner.example", &refs(&all)));
        for i in 0..5 {
            all.push(format!("cc{i}@example.org"));
            let m = t.join(&inbound("y@partner.example", &refs(&all)), &none);
            assert_eq!((m.kind, m.added), (Kind::Grow, 1), "{i}");
        }
        let mut half: Vec<String> = all[..5].to_vec();
        half.extend(people("h", 2));
        let m = t.join(&inbound("z@partner.example", &refs(&half)), &none);
        assert_eq!((m.kind, m.added), (Kind::Reply, 2));
        let m = t.join(
            &inbound("z@partner.example", &["p0@example.org", "new@example.org"]),
            &none,
        );
        assert_eq!(m.kind, Kind::Copy, "one of twelve again is no reply");
        assert!(!t.conversation());
        let mut more = all.clone();
        more.extend(people("n", 9));
        let m = t.join(&inbound("y@partner.example", &refs(&more)), &none);
        assert_eq!((m.kind, m.added), (Kind::Copy, 9));
    }

    /// An answer to our own user's mail: the people she sent this text to
    /// are known to it, and the user who wrote the answered mail is a
    /// reply; anyone else it adds is counted as any copy.
    #[test]
    fn answers_to_our_own_mail_reach_its_people() {
        let ann = address_key("ann@example.org", KEY);
        let own = parties(
            Origin::Own,
            "ann@example.org",
            &["x@partner.example", "bob@example.org"],
            &[],
        );
        let (mut t, first) = Talk::first(&own);
        assert!(first.own);
        let answered = Answered {
            own: true,
            writers: vec![ann],
        };
        // X answers Ann and Bob, whom Ann sent it to. Without the answer
        // Bob got it from inside only: new (the thread grows by him).
        let p = inbound("x@partner.example", &["ann@example.org", "bob@example.org"]);
        let m = t.classify(&p, &Answered::default());
        assert_eq!((m.kind, m.added), (Kind::Grow, 1));
        // As an answer to Ann's mail: nobody new.
        assert_eq!(t.join(&p, &answered).kind, Kind::Within);
        // Copying Carol as well: a copy of one.
        let p = inbound(
            "x@partner.example",
            &["ann@example.org", "carol@example.org"],
        );
        let m = t.join(&p, &answered);
        assert_eq!((m.kind, m.added, m.answers_own), (Kind::Reply, 1, true));
        let p = inbound("x@partner.example", &["dan@example.org", "eve@example.org"]);
        assert_eq!(t.join(&p, &answered).kind, Kind::Copy);
        // The writer of the answered mail, new to another campaign: a reply.
        let (mut u, _) = Talk::first(&inbound("v@vendor.example", &["zed@example.org"]));
        let to_ann = inbound("v@vendor.example", &["ann@example.org"]);
        assert_eq!(u.join(&to_ann, &answered).kind, Kind::Reply);
        let to_nobody = inbound("v@vendor.example", &["ann2@example.org"]);
        assert_eq!(u.join(&to_nobody, &answered).kind, Kind::Copy);
        // Own mail to Carol (who got it inbound) adds nobody to its tally.
        let m = t.join(
            &parties(Origin::Own, "ann@example.org", &["carol@example.org"], &[]),
            &Answered::default(),
        );
        assert_eq!((m.kind, m.added, m.own), (Kind::Within, 0, true));
    }

    /// Full means unknown: past [`MAX_KEYS`] a new recipient counts even
    /// if it was reached, and nothing is a reply.
    #[test]
    fn a_full_set_counts_what_it_does_not_hold() {
        let none = Answered::default();
        let many = people("m", MAX_KEYS + 10);
        let (mut t, first) = Talk::first(&inbound("x@spam.example", &refs(&many[..900])));
        assert_eq!(first.added, 900);
        let m = t.join(&inbound("x@spam.example", &refs(&many[900..])), &none);
        assert_eq!(m.added, (MAX_KEYS + 10 - 900) as u32);
        assert!(t.full());
        assert_eq!(t.parties(), MAX_KEYS);
        // The ten that did not fit, sent again, count again.
        let held: std::collections::HashSet<u32> = t.set.keys.iter().copied().collect();
        let out: Vec<&str> = many
            .iter()
            .filter(|a| !held.contains(&(address_key(a, KEY) | REACHED)))
            .map(String::as_str)
            .collect();
        assert_eq!(out.len(), 10);
        let m = t.join(&inbound("x@spam.example", &out), &none);
        assert_eq!((m.kind, m.added), (Kind::Copy, 10));
        let m = t.join(&inbound("x@spam.example", &["m0@example.org"]), &none);
        assert_eq!(m.kind, Kind::Within, "what it holds it still knows");
    }

    #[test]
    fn merged_campaigns_are_two_deliveries() {
        let (mut a, _) = Talk::first(&inbound("a@x.example", &["r@example.org"]));
        let (b, _) = Talk::first(&inbound("b@y.example", &["s@example.org"]));
        a.merge(&b);
        assert!(!a.conversation());
        assert_eq!(a.parties(), 2);
    }

    #[test]
    fn own_threads_are_kept_for_their_time_and_capacity() {
        let mut o = OwnThreads::new(3, 100);
        for k in 1..=4u64 {
            o.note(k, 10 * k, Some(k as u32 * 4));
        }
        assert!(!o.answered(&[1], 40).own, "pushed out by the fourth");
        assert_eq!(
            o.answered(&[9, 2], 40),
            Answered {
                own: true,
                writers: vec![8]
            }
        );
        assert!(!o.answered(&[2], 121).own, "expired");
        assert!(o.answered(&[4], 140).own);
        assert_eq!(o.iter().count(), 3);
        o.expire(200);
        assert!(o.is_empty());
        let key = message_key("a@b", KEY);
        assert_ne!(key, message_key("a@c", KEY));
        assert_eq!(key, message_key(" a@b ", KEY));
    }
}
