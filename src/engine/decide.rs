//! The stateless parts of a decision: allow-lists and skips
//! ([`observe`]), what a store is asked ([`Observation`]) and answers
//! ([`Outcome`]), and the verdict made of the answer ([`verdict_of`]).
//! Between the two, a store records the message: [`super::Engine`] in
//! memory, or Redis (`crate::store`).

use super::analysis::Analysis;
use super::campaign::CampaignId;
use super::envelope::Envelope;
use super::minhash::jaccard_estimate;
use super::party::{Parties, Recipients};
use super::shingle::Sentences;
use super::verdict::{
    level_in, AllowReason, CampaignSummary, Level, NearMiss, SkipReason, Verdict,
};
use crate::config::{Config, Thresholds};

/// Why this message is allow-listed, if it is.
pub fn allowed(cfg: &Config, analysis: &Analysis, env: &Envelope) -> Option<AllowReason> {
    let allow = &cfg.allow;
    if allow.authenticated && env.auth_user.as_deref().is_some_and(|u| !u.is_empty()) {
        return Some(AllowReason::Authenticated);
    }
    if let Some(ip) = env.client_addr {
        if allow.client_networks.iter().any(|n| n.contains(&ip)) {
            return Some(AllowReason::ClientNetwork);
        }
    }
    if all_recipients_allowed(&allow.recipients, env) {
        return Some(AllowReason::Recipient);
    }
    if !allow.sender_domains.is_empty() {
        let domain = env
            .mail_from
            .as_deref()
            .and_then(domain_of)
            .map(str::to_ascii_lowercase)
            .or_else(|| analysis.from_domain.clone());
        if let Some(d) = domain {
            let hit = allow.sender_domains.iter().any(|a| {
                d == *a
                    || (d.len() > a.len()
                        && d.ends_with(a.as_str())
                        && d.as_bytes().get(d.len() - a.len() - 1) == Some(&b'.'))
            });
            if hit {
                return Some(AllowReason::SenderDomain);
            }
        }
    }
    None
}

/// Every recipient of the transaction is in `allow.recipients`: `local@`
/// entries match the local part at any domain (and a bare `<Postmaster>`,
/// RFC 5321 section 4.1.1.3), others the whole address, without regard
/// to case. One recipient that is not listed, or recipients beyond those
/// kept ([`MAX_KEPT_RCPTS`], not seen), and the transaction is judged
/// for all: a milter cannot split a transaction, and adding `abuse@` to
/// a campaign's recipients must not let it through to the others.
fn all_recipients_allowed(list: &[String], env: &Envelope) -> bool {
    if list.is_empty() || env.rcpts.is_empty() || env.more_rcpts > 0 {
        return false;
    }
    env.rcpts.iter().all(|r| {
        let local = r.rsplit_once('@').map_or(r.as_str(), |(l, _)| l);
        list.iter().any(|a| match a.strip_suffix('@') {
            Some(want) => local.eq_ignore_ascii_case(want),
            None => r.eq_ignore_ascii_case(a),
        })
    })
}

/// 15-bit hash of a sender domain (for distinct-sender counts; a window
/// entry keeps it beside its own-mail bit).
fn sender_hash(domain: &str) -> u16 {
    let h = crate::engine::shingle::hash_tokens([domain], (0x6275_6c6b, 0x7761_7463));
    (h >> 49) as u16
}

fn domain_of(addr: &str) -> Option<&str> {
    addr.rsplit_once('@')
        .map(|(_, d)| d.trim_end_matches('>'))
        .filter(|d| !d.is_empty())
}

/// What a store needs to know about one message: its fingerprints, what
/// it counts for and the thresholds in force. Built by [`observe`].
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub exact: [u8; 32],
    pub simhash: u64,
    pub sketch: u64,
    /// The second and third smallest MinHash values
    /// ([`MinSketch::deeper`](super::minhash::MinSketch::deeper)): what
    /// the containment test compares a stored text with. Not stored in
    /// the window.
    pub deeper: [u64; 2],
    /// MinHash band keys, one per band table in use.
    pub bands: Vec<u64>,
    /// The three smallest MinHash values under each band's two seeds
    /// ([`MinSketch::smallest`](super::minhash::MinSketch::smallest)), two
    /// per band: the keys under which the band tables are probed for
    /// texts the message may contain. Empty: no probes.
    pub smallest: Vec<[u32; 3]>,
    /// Its sentence keys and anchors ([`Analysis::sentences`]), when the
    /// containment rule is on: the index keeps the anchors as the text's
    /// and looks the keys up for texts the message may contain. Empty: no
    /// anchors, no lookups.
    pub sentences: Sentences,
    /// Enough features to look for near duplicates (else exact only).
    pub near: bool,
    /// Its sender, recipients and Message-IDs as party keys
    /// ([`crate::engine::party`]): whom it reaches, and how many it counts
    /// for (at least one).
    pub parties: Parties,
    /// 16-bit hash of the sender domain.
    pub sender: u16,
    pub sender_name: Option<String>,
    pub subject: Option<String>,
    pub features: usize,
    pub thresholds: Thresholds,
    /// The message has list headers ([`Analysis::list`]). Only the verdict
    /// reads it ([`verdict_of`]), never a store: the list class changes the
    /// action, not what is counted.
    pub list: bool,
    /// A list's post: a List-Id field and a non-null envelope sender. A
    /// campaign whose every member is one, from one sender domain, is one
    /// list's delivery of one post and is judged as one transaction of all
    /// its recipients ([`verdict::level_in`](super::verdict::level_in)),
    /// however the list split it (VERP: one transaction per member).
    /// Stores record it.
    pub list_post: bool,
    /// What the line rules would cut was read as the text (a short reply
    /// fingerprinted with its quote): shown in the verdict, never stored.
    pub kept_cut: Option<crate::engine::mime::normalize::KeptCut>,
    /// A reader stopped at the message's work budget ([`Analysis::partial`]):
    /// shown in the verdict, never stored.
    pub partial: bool,
    /// A reply or a forward ([`Analysis::reply`]): it may quote, so the
    /// containment rule holds it to stricter bounds
    /// ([`link::Rule::contains`](super::link::Rule::contains)). Stores
    /// record it (the log entry), the window does not.
    pub reply: bool,
}

impl Observation {
    /// Weight of this message in its campaign, in percent: a weak match
    /// (neither exact nor within the strong distance or sketch difference)
    /// counts `weak_match_weight`.
    pub fn weight_pct(&self, exact: bool, distance: Option<u32>, sketch_diff: Option<u32>) -> u8 {
        let t = &self.thresholds;
        let strong = exact
            || distance.is_some_and(|d| d <= t.strong_distance)
            || sketch_diff.is_some_and(|s| s <= t.strong_sketch_diff);
        if distance.is_none() || strong {
            100
        } else {
            self.weak_weight_pct()
        }
    }

    /// Weight of a weak match, in percent.
    pub fn weak_weight_pct(&self) -> u8 {
        (self.thresholds.weak_match_weight * 100.0)
            .round()
            .clamp(0.0, 100.0) as u8
    }
}

/// What a store found and recorded for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub exact: bool,
    /// Smallest simhash distance of a match (0 for exact).
    pub distance: Option<u32>,
    /// Smallest sketch difference of a match (0 for exact).
    pub sketch_diff: Option<u32>,
    /// Sequence number of the closest match.
    pub nearest: Option<u64>,
    /// Sequence number this message was recorded under.
    pub seq: u64,
    /// Campaign ids merged into `campaign` by this message.
    pub merged: Vec<CampaignId>,
    /// The campaign the message joined, as it stands after joining.
    pub campaign: Option<CampaignSummary>,
    /// The campaign reached the bulk threshold for the first time.
    pub newly_bulk: bool,
    /// Distinct texts of the campaign that matched the message, when it
    /// joined on weak evidence (see [`link`](super::link)); 0 otherwise.
    pub corroborating: u32,
    /// The closest match in a campaign the message did not join.
    pub near_miss: Option<NearMiss>,
    /// An operator allowed the campaign, and the allowance runs
    /// ([`Engine::allow`](super::Engine::allow)).
    pub allowed: bool,
    /// What the message was to its campaign and the recipients it added
    /// ([`crate::engine::party`]).
    pub step: super::party::Move,
}

/// The first half of a decision, which needs no state: allow-lists and
/// skips give their verdict at once; anything else becomes an
/// [`Observation`] for a store.
pub fn observe(cfg: &Config, a: &Analysis, env: &Envelope) -> Result<Observation, Box<Verdict>> {
    if let Some(reason) = allowed(cfg, a, env) {
        return Err(Box::new(Verdict::allowed(reason)));
    }
    let Some(fp) = a.fingerprint else {
        return Err(Box::new(Verdict::skipped(SkipReason::Unparsed, 0, None)));
    };
    // A short message with pictures is compared near by them (its
    // simhash is theirs: `analysis::fingerprint`), by no MinHash band: its
    // few words say nothing.
    let near = a.features >= cfg.fingerprint.min_features || a.pictured;
    if !near && a.anchors == 0 {
        return Err(Box::new(Verdict::skipped(
            SkipReason::TooShort,
            a.features,
            Some(fp.simhash),
        )));
    }
    let sender_name = env
        .mail_from
        .as_deref()
        .and_then(domain_of)
        .map(str::to_ascii_lowercase)
        .or_else(|| a.from_domain.clone());
    let nbands = if a.pictured {
        0
    } else {
        cfg.window.minhash_bands
    };
    let bands = fp.min.bands.iter().take(nbands).copied().collect();
    let smallest = if cfg.window.containment {
        fp.min.smallest.iter().take(2 * nbands).copied().collect()
    } else {
        Vec::new()
    };
    let sentences = if cfg.window.containment && nbands > 0 {
        a.sentences.clone()
    } else {
        Sentences::default()
    };
    Ok(Observation {
        exact: fp.exact,
        simhash: fp.simhash,
        sketch: fp.min.sketch,
        deeper: fp.min.deeper,
        bands,
        smallest,
        sentences,
        near,
        parties: parties_of(cfg, a, env),
        sender: sender_hash(sender_name.as_deref().unwrap_or("")),
        sender_name,
        subject: a.subject.clone(),
        features: a.features,
        thresholds: cfg.thresholds.clone(),
        list: a.list,
        list_post: a.list_id && env.mail_from.as_deref().and_then(domain_of).is_some(),
        reply: a.reply,
        kept_cut: a.normalized.kept_cut,
        partial: a.partial,
    })
}

/// The parties of a message ([`Parties::of`]): at least one recipient,
/// whatever the envelope says (a message was delivered to someone; a
/// replayed one has no envelope).
pub fn parties_of(cfg: &Config, a: &Analysis, env: &Envelope) -> Parties {
    let hashes = env
        .rcpt_hashes
        .get(..env.rcpt_hashes.len().min(env.more_rcpts as usize))
        .unwrap_or_default();
    let mut p = Parties::of(
        env.origin,
        env.mail_from.as_deref(),
        Recipients {
            addrs: &env.rcpts,
            hashes,
            more: env.more_rcpts.saturating_sub(hashes.len() as u32),
        },
        a.message_id.as_deref(),
        &a.answers,
        cfg.fingerprint.hash_key,
    );
    if p.recipients() == 0 {
        p.anonymous = u32::from(env.recipient_count());
    }
    p
}

/// The second half of a decision: the level from the campaign's weighted
/// size and the verdict's explanation.
///
/// The list class ([`Verdict::list`]): a message with list headers whose
/// campaign comes from one sender domain, so far as the campaign's
/// counts show (`sender_domains`; the stores do not keep which members
/// had list headers). A campaign that also arrives from another sender
/// domain is not a list's post, whatever headers a copy carries. The class
/// changes only the action (`policy.list`); the level, the counts and the
/// alert stay.
pub fn verdict_of(cfg: &Config, obs: &Observation, out: Outcome) -> Verdict {
    let own = obs.parties.own();
    let level = out
        .campaign
        .as_ref()
        .map_or(Level::Clean, |c| level_in(c, own, &cfg.thresholds));
    let list = obs.list && out.campaign.as_ref().is_none_or(|c| c.sender_domains <= 1);
    let level = if out.allowed {
        Level::Allowed(AllowReason::Campaign)
    } else {
        level
    };
    Verdict {
        level,
        list,
        exact: out.exact,
        distance: out.distance,
        resemblance: out
            .sketch_diff
            .map(|s| if out.exact { 1.0 } else { jaccard_estimate(s) }),
        campaign: out.campaign,
        // An allowed campaign raises no alert.
        newly_bulk: out.newly_bulk && !out.allowed,
        merged: out.merged,
        seq: Some(out.seq),
        nearest: out.nearest,
        corroborating: out.corroborating,
        near_miss: out.near_miss,
        simhash: Some(obs.simhash),
        features: obs.features,
        step: Some(out.step),
        kept_cut: obs.kept_cut,
        partial: obs.partial,
        unread: false,
        own: obs.parties.own(),
    }
}
