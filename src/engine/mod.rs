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

mod analysis;
pub mod campaign;
mod decide;
mod envelope;
pub mod exact;
pub mod index;
pub mod link;
pub mod mime;
pub mod minhash;
pub mod shingle;
pub mod simhash;
pub mod verdict;

pub use self::analysis::{analyze, fingerprint, read, Analysis, ReadConfig, Reading};
pub use self::decide::{allowed, observe, verdict_of, Observation, Outcome};
pub use self::envelope::{Envelope, UnixSecs, MAX_KEPT_RCPTS};
pub use self::verdict::NearMiss;

use self::campaign::{CampaignId, Campaigns, Member, WHILE_LIVE};
use self::exact::{bloom_seed, ExactSet};
use self::index::window::Entry;
use self::index::{NearIndex, Query};
use self::verdict::{campaign_level, AllowReason, CampaignSummary, Level, Verdict};
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
    /// Campaigns an operator forgot (`bulkwatch campaigns forget`): live
    /// until their messages leave the window, but nothing joins them and
    /// no list shows them, so their text starts again from zero.
    forgotten: std::collections::HashSet<CampaignId>,
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
        Engine {
            index,
            exact: ExactSet::new(&cfg.exact, cfg.window.window.as_secs(), bloom_seed(cfg)),
            campaigns: Campaigns::new(cfg.campaign.keep_subjects),
            forgotten: std::collections::HashSet::new(),
            cfg: cfg.clone(),
        }
    }

    /// Forgets a live campaign: later copies of its text start a campaign
    /// of their own, from zero (its messages stay in the window, counted
    /// for nothing, until they leave it). False when no live campaign has
    /// that id.
    pub fn forget(&mut self, id: CampaignId) -> bool {
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
        Some(self.campaigns.get(self.campaigns.find(id)?)?.id)
    }

    /// Allows a live campaign, or the one it was merged into: its later
    /// messages are `allowed` before `until` (Unix seconds; `None`: while
    /// it lives, [`WHILE_LIVE`]). Returns the live campaign's id; `None`
    /// when there is none (or it was forgotten).
    pub fn allow(&mut self, id: CampaignId, until: Option<u64>) -> Option<CampaignId> {
        let slot = self.campaigns.find(id)?;
        let live = self.campaigns.get(slot)?.id;
        if self.forgotten.contains(&live) {
            return None;
        }
        self.campaigns
            .set_allowed(slot, Some(until.unwrap_or(WHILE_LIVE).min(WHILE_LIVE)));
        Some(live)
    }

    /// Whether `id` is a live campaign's own id (a lookup, no scan).
    pub fn is_live(&self, id: CampaignId) -> bool {
        self.campaigns.slot_of(id).is_some()
    }

    /// The id of the live campaign `id` names (itself, or the campaign it
    /// was merged into), unless forgotten.
    pub fn live_id(&self, id: CampaignId) -> Option<CampaignId> {
        self.root_id(id).filter(|l| !self.forgotten.contains(l))
    }

    /// Allowed campaigns (forgotten ones left out): (id, allowed until;
    /// [`WHILE_LIVE`] for no end).
    pub fn allowances(&self) -> impl Iterator<Item = (CampaignId, u64)> + '_ {
        self.campaigns()
            .filter_map(|c| c.allowed_until.map(|u| (c.id, u.get())))
    }

    /// The live campaign of the message recorded under `seq`, while it is
    /// in the window.
    pub fn campaign_of_seq(&self, seq: u64) -> Option<CampaignId> {
        let e = self.index.window().get(seq)?;
        self.campaigns.get(e.campaign).map(|c| c.id)
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
        let campaigns = &mut self.campaigns;
        self.index.evict_before(cutoff, |e| {
            campaigns.release(e.campaign, e.recipients, e.weight, e.sender);
        });
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
    /// crate reach it).
    pub(crate) fn record_local(&mut self, obs: &Observation, now: UnixSecs) -> Outcome {
        self.expire(now);

        // Exact: Bloom first, then the LRU for the campaign.
        let mut exact_slot = None;
        if self.exact.contains(&obs.exact) {
            if let Some((slot, id)) = self.exact.campaign_of(&obs.exact) {
                let live = self.campaigns.get(slot).map(|c| c.id);
                if self.campaigns.slot_id(slot) == Some(CampaignId(id))
                    && live.is_some_and(|l| !self.forgotten.contains(&l))
                {
                    exact_slot = Some(slot);
                }
            }
        }
        let exact = exact_slot.is_some();
        // Near: every window entry within distance k, or sharing a MinHash
        // band with a close sketch, then the corroborating entries; the
        // linking rule (`link`) picks the campaign.
        let matches = if obs.near {
            self.index.query(&Query {
                simhash: obs.simhash,
                sketch: obs.sketch,
                bands: &obs.bands,
            })
        } else {
            Vec::new()
        };
        let rule = link::Rule {
            strong_distance: obs.thresholds.strong_distance,
            strong_sketch_diff: obs.thresholds.strong_sketch_diff,
            corroboration: self.cfg.window.corroborating_matches,
        };
        let (campaigns, forgotten) = (&self.campaigns, &self.forgotten);
        let linked = link::link(&rule, exact_slot, &matches, |s| {
            campaigns.resolve(s).filter(|r| {
                campaigns
                    .get(*r)
                    .is_some_and(|c| !forgotten.contains(&c.id))
            })
        });
        let near_miss = linked.near_miss.and_then(|m| {
            Some(NearMiss {
                campaign: self.campaigns.get(m.campaign)?.id,
                distance: m.distance,
                sketch_diff: m.sketch_diff,
                seq: m.seq,
            })
        });
        let corroborating = u32::try_from(linked.weak_texts).unwrap_or(u32::MAX);
        let (best, best_sketch) = (linked.distance, linked.sketch_diff);
        let nearest = linked.closest.map(|m| m.seq);
        let mut merged = Vec::new();
        let slot = if linked.join.is_empty() {
            self.campaigns.create(&obs.exact, now.0)
        } else {
            match self.campaigns.merge(&linked.join, &mut merged) {
                Some(s) => s,
                None => self.campaigns.create(&obs.exact, now.0),
            }
        };
        let weight_pct = if corroborating > 0 {
            obs.weak_weight_pct()
        } else {
            obs.weight_pct(exact, best, best_sketch)
        };
        self.campaigns.add_member(
            slot,
            Member {
                now: now.0,
                recipients: obs.recipients,
                weight_pct,
                sender: obs.sender,
                sender_name: obs.sender_name.as_deref(),
                subject: obs.subject.as_deref(),
            },
        );
        let entry = Entry {
            simhash: obs.simhash,
            sketch: obs.sketch,
            time: campaign::secs32(now.0),
            campaign: slot,
            recipients: obs.recipients,
            sender: obs.sender,
            weight: weight_pct,
            near: obs.near,
        };
        let seq = self.index.window().next_seq();
        if let Some(old) = self.index.insert(entry, &obs.bands) {
            self.campaigns
                .release(old.campaign, old.recipients, old.weight, old.sender);
        }
        let id = self.campaigns.slot_id(slot).map_or(0, |i| i.0);
        self.exact.insert(obs.exact, (slot, id), now.0);

        let campaign = self.campaigns.get(slot).map(CampaignSummary::from);
        let bulk = campaign
            .as_ref()
            .is_some_and(|c| campaign_level(c, &obs.thresholds) == Level::Bulk);
        let newly_bulk = bulk && self.campaigns.mark_alerted(slot);
        let allowed = self
            .campaigns
            .get(slot)
            .and_then(|c| c.allowed_until)
            .is_some_and(|u| u.get() > now.0);
        Outcome {
            exact,
            distance: best,
            sketch_diff: best_sketch,
            nearest,
            seq,
            merged,
            campaign,
            newly_bulk,
            corroborating,
            near_miss,
            allowed,
        }
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

    /// Live campaigns (forgotten ones left out).
    pub fn campaigns(&self) -> impl Iterator<Item = &crate::engine::campaign::Campaign> {
        self.campaigns
            .iter()
            .filter(|c| !self.forgotten.contains(&c.id))
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
            let Some(c) = self.campaigns.get(e.campaign) else {
                continue;
            };
            // Counted back from now: age 0 is the last bucket; an age of a
            // whole window is folded into the first.
            let back = usize::try_from(age.saturating_mul(n as u64) / span)
                .unwrap_or(n)
                .min(n - 1);
            let b = n - 1 - back;
            let counts = out.entry(c.id).or_insert_with(|| vec![0; n]);
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
            campaigns: self.campaigns.live(),
            campaign_slots: self.campaigns.slots_in_use(),
            bloom_fill: self.exact.fill_ratio(),
            lru_entries: self.exact.lru_len(),
            window_heap_bytes: self.index.heap_bytes(),
            bloom_bytes: self.exact.bloom_bytes(),
        }
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

    fn env() -> Envelope {
        Envelope {
            rcpts: vec!["x@example.net".into()],
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
    /// no second stage, so every other near candidate only corroborates.
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
            campaign,
            sketch,
            corroborating: true,
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
            };
            let l = link::link(&rule, None, entries, |s| c.resolve(s));
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
        assert_eq!((first.seq, first.campaign, n), (3, x, 3));
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
        assert_eq!(v.campaign.map(|c| c.messages), Some(1));
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
            "[allow]\nsender_domains = [\"deals.example\"]\nclient_networks = [\"192.0.2.0/24\"]\n",
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
        assert_eq!(
            e.process(spam("a", 1).as_bytes(), &en, UnixSecs(0)).level,
            Level::Allowed(AllowReason::Authenticated)
        );
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
