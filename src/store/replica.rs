//! A daemon's replica of the site: an engine of its own to which it
//! applies the site's Redis log, entry by entry in the log's order
//! (`crate::store::stream`), with the corrections and crossings that
//! applying brings.

use std::collections::{HashMap, VecDeque};

use crate::config::Config;
use crate::engine::campaign::CampaignId;
use crate::engine::verdict::CampaignSummary;
use crate::engine::Correction;
use crate::engine::{Engine, Observation, Outcome, UnixSecs};
use crate::store::entry::{decode, decode_correction, encode_correction, StreamId, CORRECTION};
use crate::store::head::Head;
use crate::store::writers::{Admit, Ident, Writers};
use crate::store::Store;

/// Most corrections stated again in one upkeep (see
/// `Replica::corrections_to_renew`).
const MAX_RENEWED: usize = 256;

/// Most campaigns whose last correction a replica remembers.
const MAX_CORRECTED: usize = 100_000;

/// Outcomes kept for entries applied by another thread's call.
pub(crate) const RECENT: usize = 4096;

/// Most seconds an entry's time may be ahead of Redis's clock.
pub(crate) const MAX_AHEAD_SECS: u64 = 3600;

/// An entry dated more than [`MAX_AHEAD_SECS`] past Redis's clock when it
/// was appended (a host whose clock runs ahead). Applied, it would move
/// every replica's time forward, and campaigns would stop leaving the
/// window: every replica skips it.
pub(crate) fn too_far_ahead(now: UnixSecs, id: StreamId) -> bool {
    now.0 > id.0 / 1000 + MAX_AHEAD_SECS
}

/// An entry of the log, decoded.
enum Decoded {
    Correction(Correction, UnixSecs),
    Observation(Box<Observation>, UnixSecs),
}

impl Decoded {
    /// Its date (Unix seconds, its writer's clock).
    fn at(&self) -> u64 {
        match self {
            Decoded::Correction(_, now) | Decoded::Observation(_, now) => now.0,
        }
    }
}

/// A daemon's copy of the site's state, built from the log.
pub(crate) struct Replica {
    pub(crate) engine: Engine,
    /// The last entry applied.
    pub(crate) last: Option<StreamId>,
    /// Who wrote it and its number, when it says.
    pub(crate) last_ident: Option<Ident>,
    /// Time of the newest entry applied: entries are applied at no earlier
    /// time (hosts' clocks differ a little).
    pub(crate) now: u64,
    /// Outcomes of the last entries applied.
    pub(crate) recent: VecDeque<(StreamId, Outcome)>,
    /// Redis's clock, in milliseconds, as of the newest id seen.
    pub(crate) redis_ms: u64,
    /// When the TTL was last renewed and the log trimmed (this host's
    /// clock).
    pub(crate) upkeep_at: Option<std::time::Instant>,
    /// Entries applied since the replica was made (skipped ones not
    /// counted): tells [`LogStore::copy_due`] whether it moved.
    pub(crate) applied: u64,
    /// The replica has given an outcome since it was made: it has read the
    /// log up to its daemon's messages (a replica made at a start or a
    /// rebuild holds only the log's oldest part until then).
    pub(crate) answered: bool,
    /// For each campaign a correction applies to (its live id), Redis's
    /// clock (ms) of the last correction entry that named it.
    pub(crate) corrected: HashMap<CampaignId, u64>,
    /// For each campaign a correction applies to (its live id), the time
    /// (the entry's own, Unix seconds) of the latest correction applied to
    /// it: an older one is not applied ([`Replica::apply`]).
    pub(crate) corrected_at: HashMap<CampaignId, u64>,
    /// Campaigns that turned bulk in entries applied since the replica
    /// answered (any host's: [`LogStore::take_crossings`]), the latest
    /// [`MAX_CROSSINGS`].
    pub(crate) crossings: VecDeque<Crossing>,
    /// The entries applied, by writer: each is applied once
    /// ([`crate::store::writers`]).
    pub(crate) writers: Writers,
    /// For each campaign id the site's head names (`crate::store::head`),
    /// the time of its latest correction there: a log entry older than it
    /// is not applied (a withdrawal whose log entry was removed stands).
    pub(crate) head_at: HashMap<CampaignId, u64>,
}

/// Most crossings a replica keeps until they are taken.
pub(crate) const MAX_CROSSINGS: usize = 64;

/// A campaign turned bulk with an entry of the log (whichever host
/// appended it).
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub campaign: CampaignSummary,
    /// The entry's time (Unix seconds).
    pub at: u64,
    /// Its own mail turned bulk (`[own]`), not its mail from outside.
    pub own: bool,
}

impl Replica {
    pub(crate) fn new(cfg: &Config) -> Replica {
        Replica {
            engine: Engine::new(cfg),
            last: None,
            last_ident: None,
            now: 0,
            recent: VecDeque::new(),
            redis_ms: 0,
            upkeep_at: None,
            applied: 0,
            answered: false,
            corrected: HashMap::new(),
            corrected_at: HashMap::new(),
            crossings: VecDeque::new(),
            writers: Writers::default(),
            head_at: HashMap::new(),
        }
    }

    /// Applies the head's corrections the replica has not applied: each
    /// one newer than what the log brought for its campaign, and the
    /// head's time remembered, so that an older log entry read later is
    /// not applied over it.
    pub(crate) fn apply_head(&mut self, head: &Head) {
        for c in &head.corrections {
            let id = c.correction.id();
            if self.head_at.len() < MAX_CORRECTED || self.head_at.contains_key(&id) {
                let at = self.head_at.entry(id).or_insert(0);
                *at = (*at).max(c.at);
            }
            let named = self.engine.root_id(id);
            let applied = named
                .and_then(|live| self.corrected_at.get(&live))
                .copied()
                .unwrap_or(0);
            if c.at > applied {
                self.engine.correct(c.correction);
                if let Some(live) = named {
                    if self.corrected_at.len() < MAX_CORRECTED
                        || self.corrected_at.contains_key(&live)
                    {
                        self.corrected_at.insert(live, c.at);
                    }
                }
            }
        }
    }

    /// Entries that state again the corrections in force whose last entry
    /// is older than `age_ms` (at most [`MAX_RENEWED`]): the log is trimmed
    /// to the window, but an allowed or forgotten campaign that keeps
    /// getting mail outlives it, and a replica that reads the log from its
    /// start (a daemon that starts) must still find them. Every daemon may
    /// renew one; a replica that applies it counts it as renewed, so a
    /// correction is stated about once per half window. Only a replica
    /// that has read the log up to its daemon's messages renews.
    pub(crate) fn corrections_to_renew(&mut self, age_ms: u64) -> Vec<Vec<u8>> {
        if !self.answered {
            return Vec::new();
        }
        // Campaigns that left the window need no renewal (nor memory).
        let engine = &self.engine;
        self.corrected.retain(|id, _| engine.is_live(*id));
        let now = UnixSecs(self.now);
        let due: Vec<Correction> = self
            .engine
            .allowances()
            .filter(|(_, until)| *until > self.now)
            .map(|(id, until)| Correction::Allow { id, until })
            .chain(self.engine.forgotten().map(|id| Correction::Forget { id }))
            .filter(|c| {
                self.corrected
                    .get(&c.id())
                    .is_none_or(|ms| self.redis_ms.saturating_sub(*ms) >= age_ms)
            })
            .take(MAX_RENEWED)
            .collect();
        for c in &due {
            self.corrected.insert(c.id(), self.redis_ms);
        }
        due.into_iter().map(|c| encode_correction(c, now)).collect()
    }

    /// Applies the entries after `last`, in order; returns how many it
    /// skipped (undecodable or dated too far ahead; every replica skips the
    /// same ones).
    pub(crate) fn apply(&mut self, batch: Vec<(StreamId, Vec<u8>, Option<Ident>)>) -> usize {
        let mut bad = 0;
        for (id, bytes, ident) in batch {
            // Reads start at the last entry, inclusive: met again by
            // design, not a copy. (A log made anew may give another entry
            // the same id: its writer's number tells them apart.)
            if self.last == Some(id) && self.last_ident == ident {
                continue;
            }
            let entry = if bytes.first() == Some(&CORRECTION) {
                decode_correction(&bytes)
                    .ok()
                    .map(|(c, now)| Decoded::Correction(c, now))
            } else {
                decode(&bytes)
                    .ok()
                    .map(|(obs, now)| Decoded::Observation(Box::new(obs), now))
            };
            let at = entry.as_ref().map_or(0, Decoded::at);
            if !self.admit(id, ident, at) {
                continue;
            }
            let applied = match entry {
                Some(Decoded::Correction(c, now)) => self.apply_correction(id, c, now),
                Some(Decoded::Observation(obs, now)) => self.apply_observation(id, &obs, now),
                None => false,
            };
            bad += usize::from(!applied);
        }
        bad
    }

    /// Whether entry `id`, dated `at`, is to be applied, and the replica's
    /// position moved to it.
    fn admit(&mut self, id: StreamId, ident: Option<Ident>, at: u64) -> bool {
        let before = self.last.is_some_and(|l| id <= l);
        match ident {
            // An entry that says who wrote it: applied once, wherever it
            // stands (a copy appended again, a log read again after it was
            // cut).
            Some(i) if self.writers.admit(i, at) == Admit::Again => return false,
            Some(_) => {}
            // One of a build before idents: by its place in the log.
            None if before => return false,
            None => {}
        }
        if !before || self.last == Some(id) {
            self.last = Some(id);
            self.last_ident = ident;
        }
        true
    }

    /// Applies a correction entry; false when it is skipped (undecodable,
    /// dated too far ahead, or older than one applied to its campaign).
    fn apply_correction(&mut self, id: StreamId, c: Correction, now: UnixSecs) -> bool {
        if too_far_ahead(now, id) {
            return false;
        }
        self.redis_ms = self.redis_ms.max(id.0);
        // (Named even when it was forgotten already: a renewed forget
        // counts as renewed.)
        let named = self.engine.root_id(c.id());
        // A correction older than one applied to the same campaign is a
        // copy of an old entry (a sealed entry can be copied by whoever may
        // write to Redis): an `allow` written again after a later
        // withdrawal. Hosts renew with their own time, so a true
        // correction is never older. The head's count too.
        let older = named
            .and_then(|live| self.corrected_at.get(&live))
            .is_some_and(|at| now.0 < *at)
            || [Some(c.id()), named]
                .into_iter()
                .flatten()
                .filter_map(|i| self.head_at.get(&i))
                .any(|at| now.0 < *at);
        if older {
            return false;
        }
        self.now = self.now.max(now.0);
        self.engine.correct(c);
        if let Some(live) = named {
            if self.corrected.len() < MAX_CORRECTED {
                self.corrected.insert(live, id.0);
            }
            if self.corrected_at.len() < MAX_CORRECTED || self.corrected_at.contains_key(&live) {
                let at = self.corrected_at.entry(live).or_insert(0);
                *at = (*at).max(now.0);
            }
        }
        self.applied += 1;
        true
    }

    /// Applies a message's entry; false when it is skipped (undecodable or
    /// dated too far ahead).
    fn apply_observation(&mut self, id: StreamId, obs: &Observation, now: UnixSecs) -> bool {
        if too_far_ahead(now, id) {
            return false;
        }
        // An entry dated before the window (a copy of an old one, whose
        // writer the replica no longer remembers) would count at the
        // replica's time: it has left the window.
        let window = self.engine.config().window.window.as_secs();
        if now.0.saturating_add(window) < self.now {
            return false;
        }
        // (Junk does not move it.)
        self.redis_ms = self.redis_ms.max(id.0);
        self.now = self.now.max(now.0);
        let Ok(out) = Store::record(&mut self.engine, obs, UnixSecs(self.now)) else {
            return true;
        };
        self.applied += 1;
        // Crossings in the log's history, read after a start or a rebuild,
        // are not news.
        let own = obs.parties.own();
        let wanted = !own || self.engine.config().own.alert;
        if let Some(c) = out
            .campaign
            .as_ref()
            .filter(|_| self.answered && out.newly_bulk && !out.allowed && wanted)
        {
            if self.crossings.len() == MAX_CROSSINGS {
                self.crossings.pop_front();
            }
            self.crossings.push_back(Crossing {
                campaign: c.clone(),
                at: now.0,
                own,
            });
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((id, out));
        true
    }

    pub(crate) fn outcome(&self, id: StreamId) -> Option<Outcome> {
        self.recent
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map(|(_, o)| o.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::entry::encode;
    use crate::store::entry::tests::obs;

    /// A time of the tests' entries (Unix seconds).
    const T: u64 = 1_700_000_000;

    /// The stream id Redis gives an entry appended at `secs`.
    fn stream_id_at(secs: u64) -> StreamId {
        StreamId(secs * 1000, 0)
    }

    /// A replica that applied [`obs`] at `t`, and the id of its campaign.
    fn replica_of_one_campaign(t: u64) -> (Replica, CampaignId) {
        let mut a = Replica::new(&Config::default());
        a.apply(vec![(stream_id_at(t), encode(&obs(), UnixSecs(t)), None)]);
        let id = a.engine.campaigns().next().unwrap().id;
        (a, id)
    }

    /// A copy of an old sealed correction written after a later one for
    /// the same campaign (an `allow` put back after its withdrawal) is not
    /// applied; corrections in their order are.
    #[test]
    fn a_correction_older_than_the_last_one_applied_is_skipped() {
        let (mut a, id) = replica_of_one_campaign(T);
        let allow = |until, at| encode_correction(Correction::Allow { id, until }, UnixSecs(at));
        let forever = u64::MAX >> 30;
        let mut apply = |entry: Vec<u8>, at: u64| {
            let skipped = a.apply(vec![(stream_id_at(at), entry, None)]);
            (skipped, a.engine.allowances().count())
        };
        assert_eq!(apply(allow(forever, T + 1), T + 1), (0, 1));
        assert_eq!(apply(allow(0, T + 2), T + 2), (0, 0), "withdrawn");
        assert_eq!(
            apply(allow(forever, T + 1), T + 3),
            (1, 0),
            "the copy skipped"
        );
        assert_eq!(apply(allow(forever, T + 4), T + 4), (0, 1), "a new allow");
    }

    /// A correction in force is stated again once its last entry is half a
    /// log old, so a replica that reads the log from its start after the
    /// first entry was trimmed still applies it; then not again until the
    /// next half. Every replica applies the same entries alike.
    #[test]
    fn corrections_in_force_are_renewed_before_the_log_loses_them() {
        let cfg = Config::default();
        let (t, ms) = (T, stream_id_at);
        let (mut a, id) = replica_of_one_campaign(t);
        let mut other = obs();
        other.exact = [9; 32];
        other.simhash = !other.simhash;
        other.sketch = !other.sketch;
        other.bands = vec![5, 6, 7, 8];
        a.apply(vec![(ms(t + 1), encode(&other, UnixSecs(t + 1)), None)]);
        let forgotten = a
            .engine
            .campaigns()
            .map(|c| c.id)
            .find(|c| *c != id)
            .unwrap();
        a.apply(vec![
            (
                ms(t + 2),
                encode_correction(
                    Correction::Allow {
                        id,
                        until: u64::MAX >> 30,
                    },
                    UnixSecs(t + 2),
                ),
                None,
            ),
            (
                ms(t + 3),
                encode_correction(Correction::Forget { id: forgotten }, UnixSecs(t + 3)),
                None,
            ),
        ]);
        a.answered = true;
        // Not yet half a log old: nothing to renew.
        assert!(a.corrections_to_renew(3_000_000).is_empty());
        a.redis_ms = (t + 4000) * 1000;
        let renewed = a.corrections_to_renew(3_000_000);
        assert_eq!(renewed.len(), 2);
        assert!(
            a.corrections_to_renew(3_000_000).is_empty(),
            "once per half"
        );
        // A replica that reads only the renewed entries after the messages
        // (the first ones trimmed) holds both corrections.
        let mut b = Replica::new(&cfg);
        b.apply(vec![
            (ms(t), encode(&obs(), UnixSecs(t)), None),
            (ms(t + 1), encode(&other, UnixSecs(t + 1)), None),
        ]);
        let entries: Vec<_> = renewed
            .into_iter()
            .enumerate()
            .map(|(i, e)| (StreamId((t + 4000) * 1000, i as u64), e, None))
            .collect();
        assert_eq!(b.apply(entries), 0, "they decode");
        assert_eq!(
            b.engine.allowances().map(|(c, _)| c).collect::<Vec<_>>(),
            [id]
        );
        assert_eq!(b.engine.forgotten().collect::<Vec<_>>(), [forgotten]);
        // A replica still reading the log renews nothing.
        b.redis_ms = (t + 9000) * 1000;
        assert!(b.corrections_to_renew(3_000_000).is_empty());
    }

    /// An entry that says who wrote it is applied once: a copy of it,
    /// appended again later (a new place in the log), changes no count,
    /// anonymous recipients included.
    #[test]
    fn a_copied_entry_counts_once() {
        let cfg = Config::default();
        let mut r = Replica::new(&cfg);
        let mut o = obs();
        o.parties = crate::engine::party::Parties::anonymous(80);
        let e = encode(&o, UnixSecs(T));
        let who = Ident { writer: 9, seq: 1 };
        r.apply(vec![(stream_id_at(T), e.clone(), Some(who))]);
        let size = |r: &Replica| r.engine.campaigns().map(|c| c.recipients).sum::<u64>();
        assert_eq!(size(&r), 80);
        r.apply(vec![(stream_id_at(T + 5), e.clone(), Some(who))]);
        assert_eq!(size(&r), 80, "the copy is not counted");
        assert_eq!(r.writers.again, 1);
        // Without an ident (a build before them) it would have been.
        r.apply(vec![(stream_id_at(T + 6), e, None)]);
        assert_eq!(size(&r), 160);
    }

    /// A withdrawal whose log entry was removed still stands: the head
    /// holds it, and the allowance's older entry read after it is skipped.
    #[test]
    fn the_heads_withdrawal_stands_when_its_log_entry_is_gone() {
        let (mut a, id) = replica_of_one_campaign(T);
        let mut head = Head::default();
        head.correct(Correction::Allow { id, until: 0 }, T + 2);
        // The allow of T + 1 first, then the head (its withdrawal of T + 2
        // has no entry in the log).
        let allow = encode_correction(
            Correction::Allow {
                id,
                until: u64::MAX >> 30,
            },
            UnixSecs(T + 1),
        );
        a.apply(vec![(stream_id_at(T + 1), allow.clone(), None)]);
        assert_eq!(a.engine.allowances().count(), 1);
        a.apply_head(&head);
        assert_eq!(a.engine.allowances().count(), 0, "withdrawn by the head");
        // A replica that reads the allow after the head: skipped.
        let (mut b, _) = replica_of_one_campaign(T);
        b.apply_head(&head);
        assert_eq!(b.apply(vec![(stream_id_at(T + 1), allow, None)]), 1);
        assert_eq!(b.engine.allowances().count(), 0);
    }
}
