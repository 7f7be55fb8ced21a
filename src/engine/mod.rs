//! The engine: raw message plus envelope in, [`Verdict`] out.
//!
//! Two steps, so the expensive one can run without holding a lock:
//! - [`analyze`] is a pure function of the bytes, the envelope and the
//!   configuration: MIME -> normalized text -> shingles -> [`Fingerprint`](simhash::Fingerprint).
//! - [`Engine::decide`] looks the fingerprint up in the window (exact set and
//!   near index), joins or merges campaigns, records the message and applies
//!   the thresholds. It takes the time as an argument and reads no clock.
//!
//! The engine does no I/O: no network, no files, no clock. The milter, the
//! CLI and the store call it.
//!
//! Ways in: the daemon and `bulkwatch replay` judge through
//! [`crate::store::judge::Judge`] (this engine alone, or Redis first with
//! this engine as the fallback; the replay through `Replayer::feed`);
//! `scan --state`, benches and tests call [`Engine::decide`] on a bare
//! engine ([`Engine::process`] when they start from the bytes). What a
//! store must answer is the [`crate::store::Store`] trait.
//!
//! Where things are: `analysis.rs` the stateless reading and fingerprinting,
//! `envelope.rs` what the caller passes in besides the bytes, `decide.rs`
//! the stateless halves of a decision (allow-lists and skips,
//! the verdict from a store's answer), this file the [`Engine`] (the memory
//! store: window, exact set, campaigns), `link.rs` the linking rule,
//! `verdict.rs` what a verdict holds.

pub mod allowance;
mod analysis;
pub mod campaign;
mod decide;
mod envelope;
pub mod exact;
pub mod index;
pub mod link;
/// The readers (the `bulkwatch-read` crate), under the path they had.
pub use bulkwatch_read::mime;
pub mod minhash;
pub mod party;
pub mod shingle;
pub mod simhash;
pub mod verdict;

pub use self::analysis::{
    analyze, fingerprint, read, read_config, read_to, Analysis, ReadConfig, Reading,
};
pub use self::decide::{allowed, observe, parties_of, verdict_of, Observation, Outcome};
pub use self::envelope::{Envelope, UnixSecs, MAX_KEPT_RCPTS};
pub use self::verdict::NearMiss;

use std::borrow::Cow;

use self::campaign::{AloneRecords, Campaign, CampaignId, Campaigns, Member, WHILE_LIVE};
use self::exact::{bloom_seed, ExactSet};
use self::index::window::{Entry, Owner};
use self::index::{CampaignRef, NearIndex, Query};
use self::party::{Move, OwnThreads, Parties, Talk};
use self::verdict::{AllowReason, CampaignSummary, Level, Verdict};
use crate::config::Config;

/// Sizes of the engine's state, for metrics and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineStats {
    pub window_entries: usize,
    pub campaigns: usize,
    pub campaign_slots: usize,
    pub bloom_fill: f64,
    pub lru_entries: usize,
    pub window_heap_bytes: usize,
    pub bloom_bytes: usize,
}

/// The stateful engine: window, exact set and campaigns.
#[derive(Debug, Clone)]
pub struct Engine {
    cfg: Config,
    pub(crate) index: NearIndex,
    pub(crate) exact: ExactSet,
    pub(crate) campaigns: Campaigns,
    /// Sample subjects and sender names of the campaigns of one message,
    /// which live in their window entries ([`Owner::Alone`]).
    pub(crate) alone_texts: AloneRecords,
    /// Window entries alone in their campaign.
    pub(crate) alone: usize,
    /// Campaigns an operator forgot (`bulkwatch campaigns forget`): live
    /// until their messages leave the window, but nothing joins them and
    /// no list shows them, so their text starts again from zero.
    forgotten: std::collections::HashSet<CampaignId>,
    /// The Message-IDs our own users sent out, for the answers that quote
    /// them ([`party::OwnThreads`]).
    pub(crate) own_threads: OwnThreads,
}

/// An operator's correction of a campaign (`bulkwatch campaigns allow`
/// or `forget`): applied by [`Engine::correct`]; with Redis, carried by
/// the log to every replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// Later messages are `allowed` before this time (Unix seconds;
    /// [`WHILE_LIVE`]: while it lives).
    Allow { id: CampaignId, until: u64 },
    /// Nothing joins the campaign any more ([`Engine::forget`]).
    Forget { id: CampaignId },
}

impl Correction {
    /// The campaign it names.
    pub fn id(&self) -> CampaignId {
        match self {
            Correction::Allow { id, .. } | Correction::Forget { id } => *id,
        }
    }
}

/// Where a campaign stands ([`Engine::standing`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Its counts now (`summary.id` is its live id).
    pub summary: CampaignSummary,
    /// An operator's allowance is in force.
    pub allowed: bool,
}

impl Engine {
    /// An empty engine.
    pub fn new(cfg: &Config) -> Engine {
        let w = &cfg.window;
        let mut index = NearIndex::new(
            w.max_distance,
            w.max_entries,
            w.minhash_bands,
            w.max_sketch_diff,
            w.max_minhash_distance,
        );
        if w.corroborating_matches > 0 {
            index = index.with_corroboration(w.corroborating_sketch_diff, w.corroborating_distance);
        }
        if w.containment {
            index = index.with_containment(w.corroborating_sketch_diff, w.corroborating_distance);
        }
        Engine {
            index,
            exact: ExactSet::new(&cfg.exact, cfg.window.window.as_secs(), bloom_seed(cfg)),
            campaigns: Campaigns::new(cfg.campaign.keep_subjects),
            alone_texts: AloneRecords::default(),
            alone: 0,
            forgotten: std::collections::HashSet::new(),
            own_threads: OwnThreads::new(cfg.own.max_threads, cfg.own.thread_secs),
            cfg: cfg.clone(),
        }
    }

    /// Forgets a live campaign: later copies of its text start a campaign
    /// of their own, from zero (its messages stay in the window, counted
    /// for nothing, until they leave it). False when no live campaign has
    /// that id.
    pub fn forget(&mut self, id: CampaignId) -> bool {
        // A forgotten campaign keeps a slot: the forgotten set lasts as long
        // as it does.
        self.give_slot(id);
        self.root_id(id)
            .is_some_and(|live| self.forgotten.insert(live))
    }

    /// Forgotten campaigns still in the window (to keep across a restart).
    pub fn forgotten(&self) -> impl Iterator<Item = CampaignId> + '_ {
        self.forgotten.iter().copied()
    }

    /// Applies an operator's correction (the one place every store's
    /// engine does: memory store, log replica, fallback engine). Answers
    /// the live campaign's id; `None` when no live campaign has that id,
    /// or it was forgotten.
    pub fn correct(&mut self, c: Correction) -> Option<CampaignId> {
        match c {
            Correction::Allow { id, until } => self.allow(id, Some(until)),
            Correction::Forget { id } => self.live_id(id).filter(|l| self.forget(*l)),
        }
    }

    /// The id of the live campaign `id` names (itself, or the campaign it
    /// was merged into), forgotten or not.
    pub fn root_id(&self, id: CampaignId) -> Option<CampaignId> {
        match self.campaigns.find(id) {
            Some(slot) => Some(self.campaigns.get(slot)?.id),
            None => self.alone_seq(id).map(|_| id),
        }
    }

    /// The window entry of the campaign of one message `id`, if there is
    /// one (a scan of the window: for operators' commands, not per
    /// message).
    fn alone_seq(&self, id: CampaignId) -> Option<u64> {
        self.index
            .window()
            .iter()
            .find(|(_, e)| e.owner() == Owner::Alone(id))
            .map(|(seq, _)| seq)
    }

    /// Gives the campaign of one message `id` a slot, if it is one.
    fn give_slot(&mut self, id: CampaignId) {
        if let Some(seq) = self.alone_seq(id) {
            self.slot_of_alone(seq);
        }
    }

    /// The campaign of one message in entry `seq` as a [`Campaign`], with
    /// its parties when its record has them.
    fn alone_campaign(&self, seq: u64, e: &Entry, id: CampaignId) -> Campaign {
        let mut reached = Parties::anonymous(e.recipients.into());
        if e.own() {
            reached.origin = party::Origin::Own;
        }
        let none = party::Answered::default();
        let member = Member {
            now: u64::from(e.time),
            parties: &reached,
            weight_pct: e.weight(),
            sender: e.sender(),
            sender_name: None,
            subject: None,
            list_post: e.list_post(),
            answered: &none,
        };
        let mut c = self.campaigns.alone(id, &member);
        c.texts = self.alone_texts.get(seq);
        c.talk = self
            .alone_texts
            .keys(seq)
            .map(|k| Box::new(Talk::from_keys(k)));
        c
    }

    /// The slot of entry `seq`'s campaign, giving a campaign of one message
    /// a slot first (a second message joins it, or an operator corrects
    /// it). `None` when `seq` left the window.
    fn slot_of_alone(&mut self, seq: u64) -> Option<u32> {
        let e = *self.index.window().get(seq)?;
        match e.owner() {
            Owner::Slot(s) => Some(s),
            Owner::Alone(id) => {
                let c = self.alone_campaign(seq, &e, id);
                let slot = self.campaigns.adopt(c);
                if let Some(x) = self.index.window_mut().get_mut(seq) {
                    x.set_owner(Owner::Slot(slot));
                }
                self.alone = self.alone.saturating_sub(1);
                Some(slot)
            }
        }
    }

    /// Allows a live campaign, or the one it was merged into: its later
    /// messages are `allowed` before `until` (Unix seconds; `None`: while
    /// it lives, [`WHILE_LIVE`]). Returns the live campaign's id; `None`
    /// when there is none (or it was forgotten).
    pub fn allow(&mut self, id: CampaignId, until: Option<u64>) -> Option<CampaignId> {
        self.give_slot(id);
        let slot = self.campaigns.find(id)?;
        let live = self.campaigns.get(slot)?.id;
        if self.forgotten.contains(&live) {
            return None;
        }
        self.campaigns
            .set_allowed(slot, Some(until.unwrap_or(WHILE_LIVE).min(WHILE_LIVE)));
        Some(live)
    }

    /// Whether `id` is the own id of a live campaign in a slot (a lookup,
    /// no scan): every corrected campaign has one, since a correction
    /// gives a campaign of one message a slot. A campaign of one is found
    /// by [`Engine::root_id`] (a scan of the window).
    pub fn is_live(&self, id: CampaignId) -> bool {
        self.campaigns.slot_of(id).is_some()
    }

    /// The id of the live campaign `id` names (itself, or the campaign it
    /// was merged into), unless forgotten.
    pub fn live_id(&self, id: CampaignId) -> Option<CampaignId> {
        self.root_id(id).filter(|l| !self.forgotten.contains(l))
    }

    /// Where each of `ids` stands now (its live campaign, whatever it was
    /// merged into): a lookup each, and one scan of the slots when some id
    /// is not live itself. A campaign of one message (no slot) has no
    /// standing: it is clean. For zero-hour, every few seconds.
    pub fn standing(&self, ids: &[CampaignId], now: u64) -> Vec<Option<Standing>> {
        let mut aliases = None;
        ids.iter()
            .map(|id| {
                let slot = match self.campaigns.slot_of(*id) {
                    Some(s) => s,
                    None => *aliases
                        .get_or_insert_with(|| self.campaigns.aliases())
                        .get(id)?,
                };
                let c = self.campaigns.get(slot)?;
                if self.forgotten.contains(&c.id) {
                    return None;
                }
                Some(Standing {
                    summary: CampaignSummary::from(c),
                    allowed: c.allowed_until.is_some_and(|u| u.get() > now),
                })
            })
            .collect()
    }

    /// Allowed campaigns (forgotten ones left out): (id, allowed until;
    /// [`WHILE_LIVE`] for no end).
    pub fn allowances(&self) -> impl Iterator<Item = (CampaignId, u64)> + '_ {
        // (A campaign of one message is never allowed: an allowance gives
        // it a slot.)
        self.campaigns
            .iter()
            .filter(|c| !self.forgotten.contains(&c.id))
            .filter_map(|c| c.allowed_until.map(|u| (c.id, u.get())))
    }

    /// The live campaign of the message recorded under `seq`, while it is
    /// in the window.
    pub fn campaign_of_seq(&self, seq: u64) -> Option<CampaignId> {
        match self.index.window().get(seq)?.owner() {
            Owner::Slot(s) => self.campaigns.get(s).map(|c| c.id),
            Owner::Alone(id) => Some(id),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Takes a reloaded configuration. Thresholds, allow-lists, policy and
    /// campaign options apply to the next message; settings that shape the
    /// state keep their running values ([`Config::reloaded`], the one list).
    pub fn reconfigure(&mut self, new: &Config) {
        let (merged, _) = self.cfg.reloaded(new);
        self.campaigns.keep_subjects = merged.campaign.keep_subjects;
        self.cfg = merged;
    }

    /// Why this message is allow-listed, if it is.
    pub fn allowed(&self, analysis: &Analysis, env: &Envelope) -> Option<AllowReason> {
        allowed(&self.cfg, analysis, env)
    }

    /// Removes what has left the window at `now`.
    pub fn expire(&mut self, now: UnixSecs) {
        let cutoff = now.0.saturating_sub(self.cfg.window.window.as_secs());
        let (campaigns, alone) = (&mut self.campaigns, &mut self.alone);
        self.index
            .evict_before(cutoff, |e| release(campaigns, alone, e));
        self.alone_texts.trim(self.index.window().first_seq());
        self.exact.rotate(now.0);
        if !self.forgotten.is_empty() {
            let campaigns = &self.campaigns;
            self.forgotten.retain(|id| campaigns.slot_of(*id).is_some());
        }
    }

    /// Looks the message up, records it and judges it (in this engine's
    /// own memory store).
    pub fn decide(&mut self, a: &Analysis, env: &Envelope, now: UnixSecs) -> Verdict {
        match observe(&self.cfg, a, env) {
            Err(v) => *v,
            Ok(obs) => self.decide_observed(&obs, now),
        }
    }

    /// [`Engine::decide`] for a message already observed ([`observe`]):
    /// records it and judges it (for [`crate::store::judge::Judge`]).
    pub(crate) fn decide_observed(&mut self, obs: &Observation, now: UnixSecs) -> Verdict {
        let out = self.record_local(obs, now);
        verdict_of(&self.cfg, obs, out)
    }

    /// The memory store: exact set, near index and campaigns (the store
    /// layer's `Store` for an engine, which is how callers outside the
    /// crate reach it). Four steps: look the message up (the exact set,
    /// then the window through the linking rule), weigh what was found
    /// ([`Engine::weigh`], reading the engine only), place the message in
    /// its campaign ([`Engine::place`]), enter it in the window and the
    /// exact set ([`Engine::enter`]); then say where it went.
    pub(crate) fn record_local(&mut self, obs: &Observation, now: UnixSecs) -> Outcome {
        self.expire(now);

        // Exact: Bloom first, then the LRU for the campaign. A campaign of
        // one message has no slot: the rule sees it under a key of its own
        // (`Alone`), and it gets a slot only if this message joins it.
        let seen = self.exact.contains(&obs.exact);
        let exact_key = if seen {
            self.exact
                .campaign_of(&obs.exact)
                .and_then(|v| self.exact_key(v))
        } else {
            None
        };
        let exact = exact_key.is_some();
        // Near: every window entry within distance k, or sharing a MinHash
        // band with a close sketch, then the corroborating entries; the
        // linking rule (`link`) picks the campaign.
        let linked = self.link(obs, exact_key);
        let near_miss = linked.near_miss.and_then(|m| {
            Some(NearMiss {
                campaign: self.key_id(m.campaign)?,
                distance: m.distance,
                sketch_diff: m.sketch_diff,
                seq: m.seq,
            })
        });
        let weighed = self.weigh(obs, &linked, exact, now);
        // Our own users' Message-IDs: an inbound answer quoting one answers
        // mail of ours (own mail's are noted once it is recorded).
        self.own_threads.expire(now.0);
        let answered = if obs.parties.own() {
            party::Answered::default()
        } else {
            self.own_threads.answered(&obs.parties.answers, now.0)
        };
        // A message riding on an allowed campaign starts its own.
        let join = if weighed.rides {
            &[][..]
        } else {
            &linked.join[..]
        };
        let mut merged = Vec::new();
        let placing = Placing {
            weight_pct: weighed.weight_pct,
            answered: &answered,
            seen,
        };
        let (home, step) = self.place(obs, placing, join, now, &mut merged);
        let seq = self.enter(obs, &home, step.added, weighed.weight_pct, now);
        if let Some(k) = obs.parties.message.filter(|_| obs.parties.own()) {
            self.own_threads.note(k, now.0, obs.parties.sender);
        }
        let (campaign, newly_bulk, allowed) = self.placed(home, obs, now);
        Outcome {
            exact,
            distance: linked.distance,
            sketch_diff: linked.sketch_diff,
            nearest: linked.closest.map(|m| m.seq),
            seq,
            merged,
            campaign,
            newly_bulk,
            corroborating: weighed.corroborating,
            near_miss,
            allowed,
            step,
        }
    }

    /// What the linking rule's choice `linked` weighs: the message's
    /// weight in its campaign, and whether it rides on an allowed campaign
    /// (then it joins none of `linked.join`). Reads the engine only.
    fn weigh(
        &self,
        obs: &Observation,
        linked: &link::Link<CampaignRef>,
        exact: bool,
        now: UnixSecs,
    ) -> Weighed {
        let corroborating = u32::try_from(linked.weak_texts).unwrap_or(u32::MAX);
        // A message that holds a text of an allowed campaign may hold
        // anything besides (a spam riding on a newsletter the site
        // allowed): containment never joins an allowed campaign, and such a
        // message starts a campaign of its own.
        let rides = linked.contained
            && linked.join.iter().any(|k| match k {
                CampaignRef::Slot(s) => self
                    .campaigns
                    .get(*s)
                    .and_then(|c| c.allowed_until)
                    .is_some_and(|u| u.get() > now.0),
                CampaignRef::Alone(_) => false,
            });
        let weight_pct = if linked.contained && !rides {
            100
        } else if corroborating > 0 {
            obs.weak_weight_pct()
        } else {
            obs.weight_pct(exact, linked.distance, linked.sketch_diff)
        };
        Weighed {
            weight_pct,
            rides,
            corroborating,
        }
    }

    /// Puts the message in its campaign: the campaigns it joins merged
    /// (into `merged`), or a campaign of one in its entry, or (bulk on its
    /// own: it must remember its alert) a campaign of one in a slot.
    /// Answers where, and what the message added.
    fn place(
        &mut self,
        obs: &Observation,
        placing: Placing<'_>,
        join: &[CampaignRef],
        now: UnixSecs,
        merged: &mut Vec<CampaignId>,
    ) -> (Home, Move) {
        let member = Member {
            now: now.0,
            parties: &obs.parties,
            weight_pct: placing.weight_pct,
            sender: obs.sender,
            sender_name: obs.sender_name.as_deref(),
            subject: obs.subject.as_deref(),
            list_post: obs.list_post,
            answered: placing.answered,
        };
        let join: Vec<u32> = join
            .iter()
            .filter_map(|k| match *k {
                CampaignRef::Alone(seq) => self.slot_of_alone(seq),
                CampaignRef::Slot(s) => Some(s),
            })
            .collect();
        let joined = if join.is_empty() {
            None
        } else {
            self.campaigns.merge(&join, merged)
        };
        let first = Move::first(&obs.parties);
        if let Some(slot) = joined {
            let step = self.campaigns.add_member(slot, member).unwrap_or(first);
            let home = Home::Slot {
                slot,
                alerted_alone: false,
            };
            return (home, step);
        }
        let taken = if placing.seen {
            self.alone_ids_from(&obs.exact)
        } else {
            Vec::new()
        };
        let id = self.campaigns.new_id(&obs.exact, &taken);
        let mut c = self.campaigns.alone(id, &member);
        let own = obs.parties.own();
        let level = verdict::level_in(&CampaignSummary::from(&c), own, &obs.thresholds);
        if level == Level::Bulk {
            if own {
                c.own_alerted = true;
            } else {
                c.alerted = true;
            }
            c.talk = Some(Box::new(Talk::first(&obs.parties).0));
            let home = Home::Slot {
                slot: self.campaigns.adopt(c),
                alerted_alone: true,
            };
            (home, first)
        } else {
            self.alone += 1;
            (Home::Alone(c), first)
        }
    }

    /// Enters the message in the window (an entry leaving it releases its
    /// share), its texts where it is alone, and its exact hash; answers its
    /// sequence number.
    fn enter(
        &mut self,
        obs: &Observation,
        home: &Home,
        added: u32,
        weight_pct: u8,
        now: UnixSecs,
    ) -> u64 {
        let owner = match home {
            Home::Slot { slot, .. } => Owner::Slot(*slot),
            Home::Alone(c) => Owner::Alone(c.id),
        };
        let entry = Entry::new(
            obs.simhash,
            obs.sketch,
            campaign::secs32(now.0),
            owner,
            campaign::counted(added),
            obs.sender,
            weight_pct,
            obs.near,
        )
        .with_size(obs.features)
        .with_list_post(obs.list_post)
        .with_own(obs.parties.own());
        let seq = self.index.window().next_seq();
        if let Some(old) = self.index.insert(entry, &obs.bands, &obs.sentences.anchors) {
            release(&mut self.campaigns, &mut self.alone, &old);
        }
        let no_texts = campaign::Texts::default();
        match home {
            Home::Alone(c) => {
                let keys: Vec<u32> = obs.parties.keys().collect();
                self.alone_texts.push(seq, &c.texts, Some(&keys));
            }
            Home::Slot { .. } => self.alone_texts.push(seq, &no_texts, None),
        }
        self.alone_texts.trim(self.index.window().first_seq());
        let lru = match owner {
            Owner::Slot(slot) => (slot, self.campaigns.slot_id(slot).map_or(0, |i| i.0)),
            Owner::Alone(id) => (seq as u32, id.0 | ALONE_IN_LRU),
        };
        self.exact.insert(obs.exact, lru, now.0);
        seq
    }

    /// The campaign the message was placed in, whether it just turned bulk
    /// (its alert is this message's), and whether it is allowed.
    fn placed(
        &mut self,
        home: Home,
        obs: &Observation,
        now: UnixSecs,
    ) -> (Option<CampaignSummary>, bool, bool) {
        match home {
            Home::Alone(c) => (Some(CampaignSummary::from(&c)), false, false),
            Home::Slot {
                slot,
                alerted_alone,
            } => {
                let campaign = self.campaigns.get(slot).map(CampaignSummary::from);
                let own = obs.parties.own();
                let bulk = campaign
                    .as_ref()
                    .is_some_and(|c| verdict::level_in(c, own, &obs.thresholds) == Level::Bulk);
                let newly_bulk = alerted_alone || (bulk && self.campaigns.mark_alerted(slot, own));
                let allowed = self
                    .campaigns
                    .get(slot)
                    .and_then(|c| c.allowed_until)
                    .is_some_and(|u| u.get() > now.0);
                (campaign, newly_bulk, allowed)
            }
        }
    }

    /// The campaign an exact-set value names, if it is live and not
    /// forgotten. (The stored value is a slot and the campaign's id, or,
    /// for a campaign of one, the low bits of its entry's sequence number
    /// and the id with [`ALONE_IN_LRU`] set: read here into a reference.)
    fn exact_key(&self, (slot, id): (u32, u64)) -> Option<CampaignRef> {
        let slot = if id & ALONE_IN_LRU != 0 {
            let id = CampaignId(id & !ALONE_IN_LRU);
            let (seq, e) = self.index.window().get_by_low(slot)?;
            match e.owner() {
                Owner::Alone(a) if a == id => return Some(CampaignRef::Alone(seq)),
                // Given a slot since: the slot must still be that campaign's.
                Owner::Slot(s) if self.campaigns.slot_id(s) == Some(id) => s,
                _ => return None,
            }
        } else if self.campaigns.slot_id(slot) == Some(CampaignId(id)) {
            slot
        } else {
            return None;
        };
        let live = self.campaigns.get(slot)?.id;
        (!self.forgotten.contains(&live)).then_some(CampaignRef::Slot(slot))
    }

    /// The linking rule's decision for `obs` ([`link::link`]): the
    /// window's matches, weighed. Reads the engine only.
    fn link(&self, obs: &Observation, exact_key: Option<CampaignRef>) -> link::Link<CampaignRef> {
        let matches = if obs.near {
            self.index.query(&Query {
                simhash: obs.simhash,
                sketch: obs.sketch,
                bands: &obs.bands,
                smallest: &obs.smallest,
                sentences: &obs.sentences.lookups,
            })
        } else {
            Vec::new()
        };
        let rule = link::Rule {
            strong_distance: obs.thresholds.strong_distance,
            strong_sketch_diff: obs.thresholds.strong_sketch_diff,
            corroboration: self.cfg.window.corroborating_matches,
            features: if self.cfg.window.containment {
                obs.features
            } else {
                0
            },
            sketch: obs.sketch,
            deeper: obs.deeper,
            reply: obs.reply,
        };
        let (campaigns, forgotten) = (&self.campaigns, &self.forgotten);
        // A campaign of one is never forgotten (forgetting gives it a
        // slot first); a slot counts as its live root, unless forgotten.
        link::link(&rule, exact_key, &matches, |k| match k {
            CampaignRef::Alone(_) => Some(k),
            CampaignRef::Slot(s) => campaigns
                .resolve(s)
                .filter(|r| {
                    campaigns
                        .get(*r)
                        .is_some_and(|c| !forgotten.contains(&c.id))
                })
                .map(CampaignRef::Slot),
        })
    }

    /// What recording `obs` at `now` would do, without recording it: the
    /// campaign it would join and why, what it would add to it and the
    /// level it would get (`bulkwatch scan` through the control socket).
    /// The window as it stands: what left it since the last message is
    /// still counted.
    pub fn explain(&self, obs: &Observation, now: UnixSecs) -> Explanation {
        let answered = if obs.parties.own() {
            party::Answered::default()
        } else {
            self.own_threads.answered(&obs.parties.answers, now.0)
        };
        let exact_key = if self.exact.contains(&obs.exact) {
            self.exact
                .peek_campaign_of(&obs.exact)
                .and_then(|v| self.exact_key(v))
        } else {
            None
        };
        let linked = self.link(obs, exact_key);
        let campaign_of_key = |k: CampaignRef| -> Option<Campaign> {
            match k {
                CampaignRef::Alone(seq) => {
                    let e = self.index.window().get(seq)?;
                    match e.owner() {
                        Owner::Alone(id) => Some(self.alone_campaign(seq, e, id)),
                        Owner::Slot(s) => self.campaigns.get(s).cloned(),
                    }
                }
                CampaignRef::Slot(s) => self.campaigns.get(s).cloned(),
            }
        };
        let near_miss = linked.near_miss.and_then(|m| {
            Some(NearMiss {
                campaign: self.key_id(m.campaign)?,
                distance: m.distance,
                sketch_diff: m.sketch_diff,
                seq: m.seq,
            })
        });
        let joined = linked.join.first().and_then(|k| campaign_of_key(*k));
        let before = joined.as_ref().map(CampaignSummary::from);
        let member = Member {
            now: now.0,
            parties: &obs.parties,
            weight_pct: if linked.contained {
                100
            } else if linked.weak_texts > 0 {
                obs.weak_weight_pct()
            } else {
                obs.weight_pct(exact_key.is_some(), linked.distance, linked.sketch_diff)
            },
            sender: obs.sender,
            sender_name: obs.sender_name.as_deref(),
            subject: obs.subject.as_deref(),
            list_post: obs.list_post,
            answered: &answered,
        };
        let (after, step) = match joined {
            Some(c) => {
                let (c, step) = self.campaigns.with_member(c, &member);
                (c, step)
            }
            None => {
                let id = CampaignId::from_exact(&obs.exact);
                let c = self.campaigns.alone(id, &member);
                (c, Move::first(&obs.parties))
            }
        };
        let after = CampaignSummary::from(&after);
        Explanation {
            exact: exact_key.is_some(),
            distance: linked.distance,
            sketch_diff: linked.sketch_diff,
            weak_texts: linked.weak_texts,
            contained: linked.contained,
            merges: linked.join.len().saturating_sub(1),
            level: verdict::level_in(&after, obs.parties.own(), &obs.thresholds),
            before,
            after,
            step,
            near_miss,
        }
    }

    /// The id of the campaign `key` names.
    fn key_id(&self, key: CampaignRef) -> Option<CampaignId> {
        match key {
            CampaignRef::Alone(seq) => match self.index.window().get(seq)?.owner() {
                Owner::Alone(id) => Some(id),
                Owner::Slot(s) => self.campaigns.get(s).map(|c| c.id),
            },
            CampaignRef::Slot(s) => self.campaigns.get(s).map(|c| c.id),
        }
    }

    /// Ids of campaigns of one message that a new campaign whose first
    /// message is `exact` must not take: the same text alone in the window
    /// (its exact-set entry gone, or its campaign forgotten) under the id
    /// the text gives or one of the next ones ([`campaign::next_id`]), seen
    /// by a scan of the window. Called only when the Bloom filter has seen
    /// the text, so rarely.
    fn alone_ids_from(&self, exact: &[u8; 32]) -> Vec<CampaignId> {
        // Each id of the chain is another live campaign of the same first
        // text: a few at most.
        const CHAIN: usize = 64;
        let mut chain = std::collections::HashSet::with_capacity(CHAIN);
        let mut id = CampaignId::from_exact(exact);
        for _ in 0..CHAIN {
            chain.insert(id);
            id = campaign::next_id(id);
        }
        self.index
            .window()
            .iter()
            .filter_map(|(_, e)| match e.owner() {
                Owner::Alone(id) if chain.contains(&id) => Some(id),
                _ => None,
            })
            .collect()
    }

    /// `analyze` then `decide`.
    pub fn process(&mut self, raw: &[u8], env: &Envelope, now: UnixSecs) -> Verdict {
        let a = analyze(raw, env, &self.cfg);
        self.decide(&a, env, now)
    }

    /// Arrival time of the newest message in the window.
    pub fn latest_time(&self) -> Option<UnixSecs> {
        self.index
            .window()
            .iter()
            .last()
            .map(|(_, e)| UnixSecs(u64::from(e.time)))
    }

    /// Live campaigns (forgotten ones left out): those in slots, then the
    /// campaigns of one message, made from their window entries.
    pub fn campaigns(&self) -> impl Iterator<Item = Cow<'_, Campaign>> {
        let slots = self
            .campaigns
            .iter()
            .filter(|c| !self.forgotten.contains(&c.id))
            .map(Cow::Borrowed);
        let alone = self
            .index
            .window()
            .iter()
            .filter_map(|(seq, e)| match e.owner() {
                Owner::Alone(id) => Some(Cow::Owned(self.alone_campaign(seq, e, id))),
                Owner::Slot(_) => None,
            });
        slots.chain(alone)
    }

    /// Messages of each live campaign in the window by arrival time: `n`
    /// buckets of equal width ending at `now`, oldest first, covering the
    /// window (what a dashboard draws). One pass over the window.
    pub fn arrivals(
        &self,
        now: UnixSecs,
        n: usize,
    ) -> std::collections::HashMap<CampaignId, Vec<u32>> {
        let mut out: std::collections::HashMap<CampaignId, Vec<u32>> =
            std::collections::HashMap::new();
        let n = n.max(1);
        let span = self.cfg.window.window.as_secs().max(1);
        for (_, e) in self.index.window().iter() {
            let t = u64::from(e.time);
            let Some(age) = now.0.checked_sub(t).filter(|a| *a <= span) else {
                continue;
            };
            let id = match e.owner() {
                Owner::Slot(slot) => match self.campaigns.get(slot) {
                    Some(c) => c.id,
                    None => continue,
                },
                Owner::Alone(id) => id,
            };
            // Counted back from now: age 0 is the last bucket; an age of a
            // whole window is folded into the first.
            let back = usize::try_from(age.saturating_mul(n as u64) / span)
                .unwrap_or(n)
                .min(n - 1);
            let b = n - 1 - back;
            let counts = out.entry(id).or_insert_with(|| vec![0; n]);
            if let Some(x) = counts.get_mut(b) {
                *x = x.saturating_add(1);
            }
        }
        out
    }

    /// The window's entries, oldest first (read only).
    pub fn window(&self) -> &crate::engine::index::window::Window {
        self.index.window()
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats {
            window_entries: self.index.len(),
            campaigns: self.campaigns.live() + self.alone,
            campaign_slots: self.campaigns.slots_in_use(),
            bloom_fill: self.exact.fill_ratio(),
            lru_entries: self.exact.lru_len(),
            window_heap_bytes: self.index.heap_bytes(),
            bloom_bytes: self.exact.bloom_bytes(),
        }
    }
}

/// Marks an exact-set value that names a campaign of one message: (low
/// 32 bits of its entry's sequence number, id with this bit).
const ALONE_IN_LRU: u64 = 1 << 63;

/// What recording a message would do ([`Engine::explain`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The same text (as normalized) is in the window.
    pub exact: bool,
    /// Smallest simhash distance and sketch difference behind the join.
    pub distance: Option<u32>,
    pub sketch_diff: Option<u32>,
    /// Joined on weak evidence: the distinct texts of the campaign that
    /// matched (`window.corroborating_matches`).
    pub weak_texts: usize,
    /// Joined because the message holds a text of the campaign whole (a
    /// diluted copy).
    pub contained: bool,
    /// Other campaigns it would merge into the one it joins.
    pub merges: usize,
    /// The campaign it would join, as it stands (`None`: it would start
    /// one of its own).
    pub before: Option<CampaignSummary>,
    /// Its campaign once it joined.
    pub after: CampaignSummary,
    /// What it would add: the kind of move and the recipients new to the
    /// campaign ([`party`]).
    pub step: Move,
    /// The level it would get (before allow-lists and allowances).
    pub level: Level,
    /// The closest campaign it matched and would not join.
    pub near_miss: Option<NearMiss>,
}

/// Where a message was recorded ([`Engine::record_local`]).
/// What the linking rule's choice weighs ([`Engine::weigh`]).
struct Weighed {
    /// The message's weight in its campaign, in percent.
    weight_pct: u8,
    /// It holds a text of an allowed campaign and may hold anything
    /// besides: it joins nothing ([`Engine::weigh`]).
    rides: bool,
    /// Distinct texts behind a join on weak evidence.
    corroborating: u32,
}

/// How a message is placed in its campaign ([`Engine::place`]).
#[derive(Debug, Clone, Copy)]
struct Placing<'a> {
    weight_pct: u8,
    /// What it answers of our own users' mail.
    answered: &'a party::Answered,
    /// The exact set has seen its text.
    seen: bool,
}

enum Home {
    /// A campaign slot; `alerted_alone`: a campaign of one that is bulk on
    /// its own, given a slot to remember its alert.
    Slot { slot: u32, alerted_alone: bool },
    /// Alone in its campaign, held in its window entry.
    Alone(Campaign),
}

/// A window entry left the window: its share leaves its campaign.
fn release(campaigns: &mut Campaigns, alone: &mut usize, e: &Entry) {
    match e.owner() {
        Owner::Slot(s) => campaigns.release(
            s,
            campaign::Leaving {
                recipients: e.recipients,
                weight_pct: e.weight(),
                own: e.own(),
                sender: e.sender(),
            },
        ),
        Owner::Alone(_) => *alone = alone.saturating_sub(1),
    }
}

/// Shared helpers for unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    /// A personalized spam message for `name`, numbered `n`.
    pub(crate) fn spam(name: &str, n: u32) -> String {
        format!(
            "From: Deals <offers@deals.example>\nTo: {name} <{name}@example.net>\nSubject: Your offer {n}\n\n\
             Dear {name},\n\nWe are pleased to tell you that your account qualifies for our premium \
             savings program. Act now to claim the discount before the end of the week. \
             Visit https://track.deals.example/c/{n}?u={n} to confirm your details.\n\n\
             Our team reviewed your profile and selected you for an exclusive reward. Reply \
             today and receive free shipping on every order. Ref {n}{n}.\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::verdict::SkipReason;
    use proptest::prelude::*;

    proptest! {
        /// Fingerprints are a function of the text: the same on every call,
        /// and the same whether lines end in LF or CRLF.
        #[test]
        fn fingerprint_is_deterministic_and_eol_invariant(body in "[a-zA-Z .,!?\n>-]{0,2000}") {
            let cfg = Config::default();
            let env = Envelope::default();
            let lf = format!("Subject: x\n\n{body}");
            let crlf = lf.replace('\n', "\r\n");
            let a = analyze(lf.as_bytes(), &env, &cfg);
            prop_assert_eq!(&a, &analyze(lf.as_bytes(), &env, &cfg));
            prop_assert_eq!(a.fingerprint, analyze(crlf.as_bytes(), &env, &cfg).fingerprint);
        }
    }

    use self::testutil::spam;

    /// An observation of text `t` (its exact hash and fingerprints), sent
    /// by `sender` with `subject`.
    fn text(t: u8, sender: &str, subject: &str) -> Observation {
        let cfg = Config::default();
        let seed = u64::from(t).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Observation {
            exact: [t; 32],
            simhash: seed,
            sketch: seed.rotate_left(13),
            deeper: [seed.rotate_left(17), seed.rotate_left(19)],
            reply: false,
            bands: (0..cfg.window.minhash_bands as u64)
                .map(|b| seed ^ b)
                .collect(),
            smallest: Vec::new(),
            sentences: Default::default(),
            near: true,
            parties: crate::engine::party::Parties::anonymous(1),
            sender: u16::from(sender.as_bytes()[0]),
            sender_name: Some(sender.into()),
            subject: Some(subject.into()),
            features: 50,
            thresholds: cfg.thresholds.clone(),
            list: false,
            kept_cut: None,
            partial: false,
            list_post: false,
        }
    }

    /// A near copy of `o` (another exact text, the same fingerprints) from
    /// another sender.
    fn copy(o: &Observation, n: u8, sender: &str, subject: &str) -> Observation {
        Observation {
            exact: [n; 32],
            sender: u16::from(sender.as_bytes()[0]),
            sender_name: Some(sender.into()),
            subject: Some(subject.into()),
            ..o.clone()
        }
    }

    /// Most mail is a campaign of one message, held in its window entry
    /// alone (no slot, no strings of its own); a second message gives it
    /// a slot, which keeps what the first message brought (its subject and
    /// sender name) as a slot from the start would have.
    #[test]
    fn a_campaign_of_one_lives_in_its_entry_until_a_second_message_joins() {
        let cfg = Config::default();
        let mut e = Engine::new(&cfg);
        let a = text(1, "a.example", "First");
        let first = e.record_local(&a, UnixSecs(100));
        let c = first.campaign.clone().unwrap();
        assert_eq!(
            (c.messages, c.sample_subject.as_deref()),
            (1, Some("First"))
        );
        assert_eq!(
            (e.campaigns.live(), e.alone, e.stats().campaigns),
            (0, 1, 1)
        );
        let listed: Vec<_> = e.campaigns().map(|c| c.into_owned()).collect();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, c.id);
        assert_eq!(listed[0].texts.subject(), Some("First"));
        assert_eq!(listed[0].texts.names_vec(), ["a.example"]);
        assert_eq!(e.campaign_of_seq(first.seq), Some(c.id));
        assert_eq!(e.root_id(c.id), Some(c.id));
        assert!(!e.is_live(c.id), "no slot yet");

        let second = e.record_local(&copy(&a, 2, "b.example", "Second"), UnixSecs(101));
        let j = second.campaign.unwrap();
        assert_eq!((j.id, j.messages), (c.id, 2));
        assert_eq!(j.sample_subject.as_deref(), Some("First"));
        assert_eq!(j.senders, ["a.example", "b.example"]);
        assert_eq!(
            (e.campaigns.live(), e.alone, e.stats().campaigns),
            (1, 0, 1)
        );
        // A third: an exact copy of the first, through the exact set.
        let third = e.record_local(&copy(&a, 1, "c.example", "Third"), UnixSecs(102));
        assert!(third.exact);
        assert_eq!(third.campaign.unwrap().messages, 3);
        // Both leave the window, and nothing is left of them.
        e.expire(UnixSecs(103 + cfg.window.window.as_secs()));
        assert_eq!(
            (e.campaigns.live(), e.alone, e.campaigns().count()),
            (0, 0, 0)
        );
    }

    /// Four other texts without near features, a second apart after
    /// `after`: the exact set of an engine with `lru_capacity = 2` forgets
    /// what it held.
    fn crowd_out_exact(e: &mut Engine, after: u64) {
        for n in 2..6 {
            e.record_local(
                &Observation {
                    near: false,
                    ..text(n, "x.example", "other")
                },
                UnixSecs(after + u64::from(n)),
            );
        }
    }

    /// An exact copy of a campaign of one message after the exact set
    /// forgot it, with no near features: as for a campaign in a slot, the
    /// copy starts a campaign of its own, under another id (never the id
    /// of the one alone in the window).
    #[test]
    fn ids_stay_unique_when_the_exact_set_forgot_a_campaign_of_one() {
        let mut cfg = Config::default();
        cfg.exact.lru_capacity = 2;
        let mut e = Engine::new(&cfg);
        let far = |o: Observation| Observation { near: false, ..o };
        let t = far(text(1, "a.example", "T"));
        let first = e.record_local(&t, UnixSecs(100)).campaign.unwrap().id;
        crowd_out_exact(&mut e, 100);
        let again = e.record_local(&t, UnixSecs(110));
        let second = again.campaign.unwrap().id;
        assert!(!again.exact);
        assert_ne!(second, first);
        assert_eq!(second, campaign::next_id(first));
        assert_eq!(
            (e.root_id(first), e.root_id(second)),
            (Some(first), Some(second))
        );
    }

    /// The same, two ids down the chain: a forgotten campaign holds the
    /// text's id, a campaign of one the next, and the exact set forgot
    /// that one: the third copy takes the id after both.
    #[test]
    fn ids_stay_unique_down_the_chain_of_taken_ids() {
        let mut cfg = Config::default();
        cfg.exact.lru_capacity = 2;
        let mut e = Engine::new(&cfg);
        let far = |o: Observation| Observation { near: false, ..o };
        let t = far(text(1, "a.example", "T"));
        let first = e.record_local(&t, UnixSecs(100)).campaign.unwrap().id;
        assert!(e.forget(first));
        let second = e.record_local(&t, UnixSecs(101)).campaign.unwrap().id;
        assert_eq!(second, campaign::next_id(first));
        crowd_out_exact(&mut e, 101);
        let third = e.record_local(&t, UnixSecs(110)).campaign.unwrap().id;
        assert_eq!(
            third,
            campaign::next_id(second),
            "not a second campaign under {second}"
        );
    }

    /// Operators' corrections name campaigns of one message too: they get
    /// a slot, and the correction holds for their next copies.
    #[test]
    fn a_campaign_of_one_can_be_allowed_or_forgotten() {
        let mut e = Engine::new(&Config::default());
        let a = text(1, "a.example", "A");
        let id = e.record_local(&a, UnixSecs(100)).campaign.unwrap().id;
        assert_eq!(e.allow(id, None), Some(id));
        assert_eq!(e.allowances().collect::<Vec<_>>(), [(id, WHILE_LIVE)]);
        assert!(
            e.record_local(&copy(&a, 2, "b.example", "A"), UnixSecs(101))
                .allowed
        );

        let b = text(7, "b.example", "B");
        let idb = e.record_local(&b, UnixSecs(102)).campaign.unwrap().id;
        assert!(e.forget(idb));
        // The same text again: its id would be the forgotten one's, so it
        // takes the next, which an operator tells from the forgotten one
        // at a glance (it was the old id plus one).
        let next = e.record_local(&copy(&b, 7, "c.example", "B"), UnixSecs(103));
        let c = next.campaign.unwrap();
        assert_eq!(c.id, campaign::next_id(idb));
        let (old, new) = (idb.to_string(), c.id.to_string());
        let same = old.chars().zip(new.chars()).filter(|(a, b)| a == b).count();
        assert!(same <= 6, "{old} then {new}");
        assert_eq!(c.messages, 1, "from zero");
        assert!(e.campaigns().all(|c| c.id != idb), "no list shows it");
    }

    /// A copy diluted with other words (a third again as many) joins the
    /// campaign of the text it holds, as a copy (full weight), though it
    /// resembles the text only weakly; a message that holds the text of an
    /// allowed campaign does not join it, since what it adds may be
    /// anything; `window.containment = false` turns the rule off.
    #[test]
    fn a_diluted_copy_joins_but_cannot_ride_an_allowance() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 5.0;
        cfg.thresholds.suspect_threshold = 3.0;
        let plain = Observation {
            features: 100,
            ..text(1, "a.example", "parcel")
        };
        // What a third again as many words do to the fingerprints: 8 of 32
        // sketch values and 12 simhash bits differ (weak: past
        // strong_sketch_diff 5 and strong_distance 2), one band is shared;
        // where the smallest values differ, the text's are the message's
        // second smallest.
        let diluted = |n: u8| Observation {
            features: 140,
            sketch: plain.sketch ^ 0x5555,
            deeper: [plain.sketch, plain.deeper[1]],
            simhash: plain.simhash ^ 0xFFF,
            ..copy(&plain, n, "b.example", "parcel")
        };
        let run = |cfg: &Config, allow: bool| {
            let mut e = Engine::new(cfg);
            let mut id = None;
            for i in 0..3 {
                id = e
                    .record_local(
                        &copy(&plain, 10 + i, "a.example", "parcel"),
                        UnixSecs(100 + u64::from(i)),
                    )
                    .campaign
                    .map(|c| c.id);
            }
            let id = id.unwrap();
            if allow {
                assert_eq!(e.allow(id, None), Some(id));
            }
            let out = e.record_local(&diluted(20), UnixSecs(110));
            (e, id, out)
        };
        let (_, id, out) = run(&cfg, false);
        let c = out.campaign.unwrap();
        assert_eq!(
            (c.id, c.messages, c.score),
            (id, 4, 4.0),
            "a copy's full weight"
        );
        assert_eq!((out.distance, out.sketch_diff), (Some(12), Some(8)));
        assert!(out.merged.is_empty());

        // A few words more: a copy joins, a reply (which may quote the
        // text whole) does not.
        for reply in [false, true] {
            let mut e = Engine::new(&cfg);
            let id = e.record_local(&plain, UnixSecs(100)).campaign.map(|c| c.id);
            let few = Observation {
                features: 105,
                reply,
                ..diluted(21)
            };
            let out = e.record_local(&few, UnixSecs(101));
            assert_eq!(out.campaign.map(|c| c.id) == id, !reply, "reply {reply}");
        }

        // An allowed campaign: a message that only holds its text does not
        // join it, and starts a campaign of its own; copies still do.
        let (mut e, id, rider) = run(&cfg, true);
        assert!(!rider.allowed);
        assert_ne!(rider.campaign.map(|c| c.id), Some(id));
        let next = e.record_local(&copy(&plain, 22, "c.example", "parcel"), UnixSecs(112));
        assert!(next.allowed);

        // Off, the diluted copy stays apart.
        cfg.window.containment = false;
        let (_, id, out) = run(&cfg, false);
        assert_ne!(out.campaign.map(|c| c.id), Some(id));
    }

    /// A diluted copy that shares no band with its text (what was added
    /// holds a minimum of each band) is found by probing the band tables
    /// with its second and third smallest values, and joins the text's
    /// campaign as a copy; without the probes (an entry of a build before
    /// them: no smallest values), it starts a campaign of its own.
    #[test]
    fn a_diluted_copy_sharing_no_band_joins_through_a_probe() {
        use minhash::{contained_misses, min_sketch, mix, seeds, sketch_diff};
        let cfg = Config::default();
        let sd = seeds(cfg.fingerprint.hash_key);
        let nb = cfg.window.minhash_bands;
        let of = |words: &[u64], n: u8| {
            let m = min_sketch(words, &sd);
            Observation {
                features: words.len(),
                sketch: m.sketch,
                deeper: m.deeper,
                bands: m.bands[..nb].to_vec(),
                smallest: m.smallest[..2 * nb].to_vec(),
                ..text(n, "a.example", "parcel")
            }
        };
        // The first of a few hundred dilutions (a text of 100 words and
        // 35 others) that shares no band but is found by probes in two
        // tables, within the containment bounds.
        let (plain, diluted) = (0..400u64)
            .map(|k| {
                let text: Vec<u64> = (k * 1000..k * 1000 + 100).map(mix).collect();
                let mut copy = text.clone();
                copy.extend((1_000_000 + k * 1000..1_000_000 + k * 1000 + 35).map(mix));
                (of(&text, 1), of(&copy, 2))
            })
            .find(|(p, d)| {
                let probed = (0..nb)
                    .filter(|&j| {
                        minhash::probe_keys(&d.smallest, j).any(|k| Some(&k) == p.bands.get(j))
                    })
                    .count();
                p.bands.iter().zip(&d.bands).all(|(a, b)| a != b)
                    && probed >= index::MIN_PROBED_BANDS as usize
                    && sketch_diff(p.sketch, d.sketch) <= cfg.window.corroborating_sketch_diff
                    && contained_misses(p.sketch, d.sketch, d.deeper) <= link::MAX_PROBED_MISSES
            })
            .expect("a dilution that shares no band");
        // Simhash: weak (past the strong distance), within the bounds.
        let diluted = Observation {
            simhash: plain.simhash ^ 0xFFF,
            ..diluted
        };
        let mut e = Engine::new(&cfg);
        let id = e.record_local(&plain, UnixSecs(100)).campaign.map(|c| c.id);
        let out = e.record_local(&diluted, UnixSecs(101));
        assert_eq!(out.campaign.map(|c| (c.id, c.messages)), id.map(|i| (i, 2)));
        assert_eq!(out.distance, Some(12));

        let mut e = Engine::new(&cfg);
        let id = e.record_local(&plain, UnixSecs(100)).campaign.map(|c| c.id);
        let unprobed = Observation {
            smallest: Vec::new(),
            ..diluted
        };
        let out = e.record_local(&unprobed, UnixSecs(101));
        assert_ne!(out.campaign.map(|c| c.id), id);
    }

    /// A copy diluted past every sketch and simhash bound, sharing no band,
    /// joins the campaign of the text whose anchors (a sentence of each
    /// third) it holds whole and which passes the containment test; one
    /// that holds two of the three anchors (a footer and a form the text
    /// shares with others), or a reply, starts its own.
    #[test]
    fn a_diluted_copy_past_every_bound_joins_through_its_texts_anchors() {
        use crate::engine::shingle::Sentences;
        let cfg = Config::default();
        let keys = |k: &[u64]| k.iter().map(|k| k << 32).collect::<Vec<u64>>();
        let plain = Observation {
            features: 100,
            sentences: Sentences {
                anchors: keys(&[5, 2, 8]),
                lookups: keys(&[2, 5, 8]),
            },
            ..text(1, "a.example", "parcel")
        };
        let diluted = |lookups: &[u64], reply: bool| Observation {
            features: 140,
            sketch: plain.sketch ^ 0xFFFF_FFFF,
            simhash: plain.simhash ^ 0xFF_FFFF,
            bands: plain.bands.iter().map(|b| b ^ 1).collect(),
            // The text's minimums are among the message's three smallest.
            deeper: [plain.sketch, plain.sketch],
            sentences: Sentences {
                anchors: Vec::new(),
                lookups: keys(lookups),
            },
            reply,
            ..copy(&plain, 2, "b.example", "parcel")
        };
        let joined = |d: &Observation| {
            let mut e = Engine::new(&cfg);
            let id = e.record_local(&plain, UnixSecs(100)).campaign.map(|c| c.id);
            let out = e.record_local(d, UnixSecs(101));
            assert!(out.sketch_diff.is_none_or(|sd| sd > 10));
            out.campaign.map(|c| (c.id, c.messages)) == id.map(|i| (i, 2))
        };
        assert!(joined(&diluted(&[1, 2, 3, 5, 8, 13], false)));
        assert!(!joined(&diluted(&[1, 2, 3, 5, 13], false)), "two of three");
        assert!(!joined(&diluted(&[1, 2, 3, 5, 8, 13], true)), "a reply");
    }

    /// A message bulk on its own (many recipients in one transaction) is a
    /// campaign of one in a slot: it remembers that it alerted.
    #[test]
    fn a_campaign_of_one_that_is_bulk_alerts_once() {
        let mut e = Engine::new(&Config::default());
        let a = Observation {
            parties: crate::engine::party::Parties::anonymous(300),
            ..text(1, "a.example", "A")
        };
        let first = e.record_local(&a, UnixSecs(100));
        assert!(first.newly_bulk);
        assert_eq!((e.campaigns.live(), e.alone), (1, 0));
        let second = e.record_local(&copy(&a, 2, "b.example", "A"), UnixSecs(101));
        assert!(!second.newly_bulk);
        assert_eq!(second.campaign.unwrap().messages, 2);
    }

    /// One recipient, another person each call: a campaign's copies
    /// reach different people (recipients are counted once a campaign).
    fn env() -> Envelope {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Envelope {
            rcpts: vec![format!("x{n}@example.net")],
            ..Envelope::default()
        }
    }

    #[test]
    fn personalized_copies_form_one_bulk_campaign() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 5.0;
        cfg.thresholds.suspect_threshold = 3.0;
        let mut e = Engine::new(&cfg);
        let names = ["alice", "bob", "carol", "dave", "erin", "frank"];
        let verdicts: Vec<Verdict> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                e.process(
                    spam(n, 1000 + i as u32).as_bytes(),
                    &env(),
                    UnixSecs(100 + i as u64),
                )
            })
            .collect();
        let ids: Vec<_> = verdicts
            .iter()
            .map(|v| v.campaign.as_ref().map(|c| c.id))
            .collect();
        assert!(ids.iter().all(|i| *i == ids[0] && i.is_some()), "{ids:?}");
        assert_eq!(verdicts[0].level, Level::Clean);
        assert_eq!(verdicts[2].level, Level::Suspect);
        assert_eq!(verdicts[5].level, Level::Bulk);
        assert!(verdicts[4].newly_bulk && !verdicts[5].newly_bulk);
    }

    /// A message that matches no entry joins the campaign that enough of
    /// its band candidates belong to, counted by distinct text, as a weak
    /// match; fewer texts, copies of one text, or texts spread over
    /// campaigns leave it on its own. Match bounds here: simhash distance 2,
    /// no second stage, so every other near candidate only corroborates;
    /// containment off (the variant holds nearly all of the text, and
    /// would join as a copy).
    /// (The distances asserted are those of fingerprint version 5 under
    /// the default key.)
    #[test]
    fn corroborated_messages_join_as_weak_matches() {
        let text = |extra: &str| {
            format!(
                "From: Deals <offers@deals.example>\nSubject: Offer\n\n\
                 We are pleased to tell you that your account qualifies for our premium \
                 savings program. Act now to claim the discount before the end of the week. \
                 Our team reviewed your profile and selected you for an exclusive reward. \
                 Reply today and receive free shipping on every order {extra}.\n"
            )
        };
        let judge = |min: usize, extras: &[&str]| -> Vec<Verdict> {
            let mut cfg = Config::default();
            cfg.window.max_distance = 2;
            cfg.window.max_sketch_diff = 0;
            cfg.window.max_minhash_distance = 0;
            cfg.window.corroborating_matches = min;
            cfg.window.corroborating_sketch_diff = 32;
            cfg.window.corroborating_distance = 64;
            cfg.window.containment = false;
            let mut e = Engine::new(&cfg);
            extras
                .iter()
                .enumerate()
                .map(|(i, x)| e.process(text(x).as_bytes(), &env(), UnixSecs(1000 + i as u64)))
                .collect()
        };
        let id = |v: &Verdict| v.campaign.as_ref().map(|c| c.id);
        let variant = "from venus and jupiter";
        // Two texts within distance 2 make a campaign; a variant farther
        // from both has both as corroborating entries.
        let v = judge(2, &["from mars", "from orion", variant]);
        assert_eq!(v[1].distance, Some(2), "premise: a match");
        assert_eq!(id(&v[1]), id(&v[0]));
        assert!(v[2].distance.is_some_and(|d| d > 2), "{:?}", v[2]);
        assert_eq!(id(&v[2]), id(&v[0]), "joined on corroboration");
        let counts: Vec<u32> = v.iter().map(|x| x.corroborating).collect();
        assert_eq!(counts, [0, 0, 2]);
        assert!(v[2].header_value().ends_with("; corroborating=2"));
        let c = v[2].campaign.as_ref().unwrap();
        assert_eq!(c.messages, 3);
        assert!((c.score - 2.5).abs() < 1e-9, "a weak match: {}", c.score);
        // Too few texts, or corroboration off: on its own.
        for min in [3, 0] {
            let v = judge(min, &["from mars", "from orion", variant]);
            assert_ne!(id(&v[2]), id(&v[0]), "min {min}");
            assert_eq!((v[2].distance, v[2].corroborating), (None, 0));
        }
        // Two entries of one text (the same words: one MinHash sketch) are
        // one piece of evidence.
        let v = judge(2, &["from mars", "from mars and earth", variant]);
        assert_eq!(id(&v[1]), id(&v[0]), "premise: a match");
        assert_ne!(id(&v[2]), id(&v[0]));
        // Two texts, but in two campaigns: on its own.
        let v = judge(2, &["from mars", "with neptune moons and comets", variant]);
        assert_ne!(id(&v[0]), id(&v[1]), "premise: no match");
        assert!(id(&v[2]) != id(&v[0]) && id(&v[2]) != id(&v[1]));
    }

    /// The campaign chosen among corroborating entries: the most distinct
    /// texts, entries of merged campaigns counted with their target, ties
    /// to the campaign with the closest entry.
    #[test]
    fn corroboration_picks_the_campaign_with_most_texts() {
        use self::index::Match;
        let mut c = Campaigns::new(false);
        let a = c.create(&[1; 32], 0);
        let b = c.create(&[2; 32], 0);
        let x = c.create(&[3; 32], 0);
        let m = |seq: u64, campaign: u32, sketch: u64| Match {
            seq,
            distance: 18,
            sketch_diff: 9,
            campaign: CampaignRef::Slot(campaign),
            sketch,
            kind: crate::engine::index::MatchKind::Corroborating,
            size: 0,
        };
        // Closest first: b once, then a with three texts (one twice).
        let entries = [
            m(1, b, 10),
            m(2, a, 20),
            m(3, a, 20),
            m(4, a, 21),
            m(5, a, 22),
        ];
        let corroborated = |c: &Campaigns, entries: &[Match], min: usize| {
            let rule = link::Rule {
                strong_distance: 2,
                strong_sketch_diff: 5,
                corroboration: min,
                features: 0,
                sketch: 0,
                deeper: [0; 2],
                reply: false,
            };
            let l = link::link(&rule, None, entries, |r| match r {
                CampaignRef::Slot(s) => c.resolve(s),
                CampaignRef::Alone(_) => None,
            });
            l.closest
                .filter(|_| !l.join.is_empty())
                .map(|m| (m, l.weak_texts))
        };
        let (first, n) = corroborated(&c, &entries, 2).unwrap();
        assert_eq!((first.seq, n), (2, 3));
        assert!(corroborated(&c, &entries, 4).is_none());
        assert!(corroborated(&c, &entries, 0).is_none());
        // A tie of two texts each: the campaign of the closest entry.
        let tie = [m(1, b, 10), m(2, a, 20), m(3, a, 21), m(4, b, 11)];
        assert_eq!(
            corroborated(&c, &tie, 2).map(|(e, n)| (e.seq, n)),
            Some((1, 2))
        );
        // x merged into a: its entries count for a.
        let mut absorbed = Vec::new();
        let target = c.merge(&[a, x], &mut absorbed).unwrap();
        assert_eq!(target, a);
        let merged = [
            m(1, b, 10),
            m(2, b, 11),
            m(3, x, 30),
            m(4, a, 31),
            m(5, x, 32),
        ];
        let (first, n) = corroborated(&c, &merged, 2).unwrap();
        assert_eq!((first.seq, first.campaign, n), (3, CampaignRef::Slot(x), 3));
    }

    #[test]
    fn arrivals_count_each_campaigns_messages_by_time() {
        let cfg = Config::default();
        let mut e = Engine::new(&cfg);
        let w = cfg.window.window.as_secs();
        let t0 = 1_000_000;
        // Three copies early in the window, two at its end.
        for (i, t) in [t0, t0 + 1, t0 + 2, t0 + w - 1, t0 + w].iter().enumerate() {
            e.process(spam("alice", i as u32).as_bytes(), &env(), UnixSecs(*t));
        }
        let id = e.campaigns().next().map(|c| c.id).unwrap();
        let a = e.arrivals(UnixSecs(t0 + w), 4);
        assert_eq!(a.get(&id), Some(&vec![3, 0, 0, 2]));
        // Later, the early copies are out of the drawn span.
        let a = e.arrivals(UnixSecs(t0 + w + w / 2), 4);
        assert_eq!(a.get(&id).map(|v| v.iter().sum::<u32>()), Some(2));
    }

    /// An allowed campaign's messages are `allowed` (reason `campaign`)
    /// and raise no alert while the allowance runs, then are judged again;
    /// a forgotten campaign cannot be allowed.
    #[test]
    fn an_allowed_campaign_is_allowed_until_its_time() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 3.0;
        cfg.thresholds.suspect_threshold = 2.0;
        let mut e = Engine::new(&cfg);
        let v = e.process(spam("alice", 0).as_bytes(), &env(), UnixSecs(1000));
        let id = v.campaign.unwrap().id;
        assert_eq!(e.allow(id, Some(1010)), Some(id));
        assert_eq!(e.allowances().collect::<Vec<_>>(), [(id, 1010)]);
        for i in 1..4u32 {
            let v = e.process(
                spam("alice", i).as_bytes(),
                &env(),
                UnixSecs(1000 + u64::from(i)),
            );
            assert_eq!(v.level, Level::Allowed(AllowReason::Campaign), "{i}");
            assert!(!v.newly_bulk, "no alert for an allowed campaign");
        }
        let v = e.process(spam("alice", 9).as_bytes(), &env(), UnixSecs(1010));
        assert_eq!(v.level, Level::Bulk, "the allowance ended");
        assert_eq!(e.allow(CampaignId(1), None), None, "no such campaign");
        assert!(e.forget(id));
        assert_eq!(e.allow(id, None), None, "forgotten");
        assert_eq!(e.allowances().count(), 0);
    }

    #[test]
    fn a_forgotten_campaign_starts_again_from_zero() {
        let cfg = Config::default();
        let mut e = Engine::new(&cfg);
        let mut last = None;
        for i in 0..4 {
            last = Some(e.process(
                spam("alice", i).as_bytes(),
                &env(),
                UnixSecs(1000 + u64::from(i)),
            ));
        }
        let v = last.unwrap();
        let old = v.campaign.as_ref().unwrap().id;
        assert_eq!(v.campaign.as_ref().unwrap().messages, 4);
        assert_eq!(e.campaign_of_seq(v.seq.unwrap()), Some(old));
        assert!(e.forget(old));
        assert!(!e.forget(old), "forgotten once");
        assert!(e.campaigns().all(|c| c.id != old), "no list shows it");
        // The same text, exact and near copies: a new campaign of one.
        for i in [3, 9] {
            let v = e.process(
                spam("alice", i).as_bytes(),
                &env(),
                UnixSecs(2000 + u64::from(i)),
            );
            let c = v.campaign.unwrap();
            assert_ne!(c.id, old);
            assert_eq!(c.messages, if i == 3 { 1 } else { 2 }, "{i}");
        }
        // Once its messages leave the window, the id is dropped.
        e.expire(UnixSecs(1003 + cfg.window.window.as_secs() + 1));
        assert_eq!(e.forgotten().count(), 0);
    }

    #[test]
    fn counts_fall_when_messages_leave_the_window() {
        let cfg = Config::default();
        let mut e = Engine::new(&cfg);
        e.process(spam("alice", 1).as_bytes(), &env(), UnixSecs(1000));
        let v = e.process(spam("bob", 2).as_bytes(), &env(), UnixSecs(1001));
        assert_eq!(v.campaign.map(|c| c.messages), Some(2));
        let later = UnixSecs(1001 + cfg.window.window.as_secs() + 1);
        let v = e.process(spam("carol", 3).as_bytes(), &env(), later);
        assert_eq!(v.campaign.as_ref().map(|c| c.messages), Some(1), "{v:?}");
        assert_eq!(e.stats().window_entries, 1);
        assert_eq!(e.stats().campaigns, 1);
    }

    #[test]
    fn empty_bodies_do_not_form_campaigns() {
        let mut e = Engine::new(&Config::default());
        for i in 0..10 {
            let v = e.process(
                format!("Subject: hi {i}\n\n").as_bytes(),
                &env(),
                UnixSecs(i),
            );
            assert_eq!(v.level, Level::Skipped(SkipReason::TooShort));
        }
        assert_eq!(e.stats().window_entries, 0);
    }

    #[test]
    fn unparseable_input_is_skipped() {
        let mut e = Engine::new(&Config::default());
        let v = e.process(b"", &env(), UnixSecs(0));
        assert_eq!(v.level, Level::Skipped(SkipReason::Unparsed));
    }

    #[test]
    fn allow_lists_apply() {
        let cfg = Config::from_toml_str(
            "[allow]\nsender_domains = [\"deals.example\"]\nclient_networks = [\"192.0.2.0/24\"]\n\
             authenticated = true\n",
        )
        .unwrap();
        let mut e = Engine::new(&cfg);
        let mut en = env();
        en.mail_from = Some("news@mail.deals.example".into());
        assert_eq!(
            e.process(spam("a", 1).as_bytes(), &en, UnixSecs(0)).level,
            Level::Allowed(AllowReason::SenderDomain)
        );
        let mut en = env();
        en.mail_from = Some("x@baddeals.example".into());
        en.client_addr = Some("192.0.2.7".parse().unwrap());
        assert_eq!(
            e.process(spam("a", 1).as_bytes(), &en, UnixSecs(0)).level,
            Level::Allowed(AllowReason::ClientNetwork)
        );
        let mut en = env();
        en.auth_user = Some("alice".into());
        en.mail_from = Some("alice@example.net".into());
        assert_eq!(
            e.process(spam("a", 1).as_bytes(), &en, UnixSecs(0)).level,
            Level::Allowed(AllowReason::Authenticated)
        );
        // By default a login is the site's own mail, judged apart, not
        // let through unjudged.
        let mut d = Engine::new(&Config::default());
        assert!(d
            .process(spam("a", 1).as_bytes(), &en, UnixSecs(0))
            .level
            .allow_reason()
            .is_none());
    }

    /// Recipients of one transaction alone make no campaign below
    /// `single_transaction_recipients`; above it, or once a copy matches,
    /// they count, and the alert (newly bulk) goes with the first bulk
    /// verdict.
    #[test]
    fn one_transaction_alone_is_bulk_only_above_its_own_limit() {
        let cfg = Config::default();
        assert_eq!(cfg.thresholds.single_transaction_recipients, 100);
        let rcpts = |n: usize, tag: &str| Envelope {
            rcpts: (0..n).map(|i| format!("{tag}{i}@example.net")).collect(),
            ..Envelope::default()
        };
        let mut e = Engine::new(&cfg);
        // A list post to 25 subscribers: a campaign of 25, but clean.
        let v = e.process(spam("a", 1).as_bytes(), &rcpts(25, "s"), UnixSecs(0));
        let c = v.campaign.clone().unwrap();
        assert_eq!((c.messages, c.recipients), (1, 25));
        assert_eq!((v.level, v.newly_bulk), (Level::Clean, false));
        // The limit itself is still one transaction's worth.
        let mut e = Engine::new(&cfg);
        let v = e.process(spam("a", 1).as_bytes(), &rcpts(100, "s"), UnixSecs(0));
        assert_eq!(v.level, Level::Clean);
        // 5,000 RCPT TO in one transaction: bulk at once.
        let mut e = Engine::new(&cfg);
        let v = e.process(spam("a", 1).as_bytes(), &rcpts(5000, "s"), UnixSecs(0));
        assert_eq!((v.level, v.newly_bulk), (Level::Bulk, true));
        // Split into transactions of 99: the second matches the first and
        // the campaign counts both; the alert goes with it, not with the
        // first (which was not bulk).
        let mut e = Engine::new(&cfg);
        let first = e.process(spam("a", 1).as_bytes(), &rcpts(99, "a"), UnixSecs(0));
        assert_eq!((first.level, first.newly_bulk), (Level::Clean, false));
        let second = e.process(spam("b", 2).as_bytes(), &rcpts(99, "b"), UnixSecs(1));
        assert_eq!(second.campaign.as_ref().map(|c| c.recipients), Some(198));
        assert_eq!((second.level, second.newly_bulk), (Level::Bulk, true));
        // 0 restores the rule before: 25 recipients alone are bulk.
        let mut off = cfg.clone();
        off.thresholds.single_transaction_recipients = 0;
        let mut e = Engine::new(&off);
        let v = e.process(spam("a", 1).as_bytes(), &rcpts(25, "s"), UnixSecs(0));
        assert_eq!((v.level, v.newly_bulk), (Level::Bulk, true));
    }

    /// Role recipients are allowed only when every recipient of the
    /// transaction is one: an extra abuse@ lets nothing through.
    #[test]
    fn role_recipients_are_allowed_only_when_all_are() {
        let mut cfg = Config::default();
        cfg.allow.recipients.push("ops@example.org".into());
        let to = |r: &[&str]| Envelope {
            rcpts: r.iter().map(|s| s.to_string()).collect(),
            ..Envelope::default()
        };
        let a = analyze(spam("a", 1).as_bytes(), &env(), &cfg);
        let why = |e: &Envelope| allowed(&cfg, &a, e);
        assert_eq!(
            why(&to(&["Postmaster@example.net", "abuse@other.example"])),
            Some(AllowReason::Recipient)
        );
        assert_eq!(why(&to(&["postmaster"])), Some(AllowReason::Recipient));
        assert_eq!(why(&to(&["OPS@example.org"])), Some(AllowReason::Recipient));
        assert_eq!(why(&to(&["ops@example.net"])), None, "other domain");
        assert_eq!(why(&to(&["abuse@example.net", "bob@example.net"])), None);
        assert_eq!(why(&to(&["abuse+x@example.net"])), None);
        assert_eq!(why(&to(&[])), None);
        let mut more = to(&["abuse@example.net"]);
        more.more_rcpts = 1;
        assert_eq!(why(&more), None, "recipients not seen");
        cfg.allow.recipients.clear();
        assert_eq!(allowed(&cfg, &a, &to(&["postmaster@example.net"])), None);
    }

    #[test]
    fn one_message_to_many_recipients_counts_each() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 300.0;
        let mut e = Engine::new(&cfg);
        let en = Envelope {
            rcpts: (0..300).map(|i| format!("u{i}@example.net")).collect(),
            ..Envelope::default()
        };
        let v = e.process(spam("a", 1).as_bytes(), &en, UnixSecs(0));
        assert_eq!(v.campaign.map(|c| c.recipients), Some(300));
        assert_eq!(v.level, Level::Bulk);
    }
}
