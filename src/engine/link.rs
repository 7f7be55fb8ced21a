//! Which campaign a message joins: the linking rule (docs/dev/quality.md,
//! "Linking").
//!
//! A campaign is one text and its busted copies, not a family of look-alike
//! texts, so one weak edge must not be enough to grow it:
//! - A **strong** match (the exact text, or a match within
//!   `thresholds.strong_distance` or `thresholds.strong_sketch_diff`) joins
//!   the message to that match's campaign.
//! - A message with **only weak** matches (within the window's radius or
//!   MinHash bounds but not strong, or within the looser corroboration
//!   bounds) joins a campaign only when at least `n` distinct texts of it
//!   (`window.corroborating_matches`) match it: the campaign with the most.
//! - **Merges** need strong evidence too: the message merges the campaigns
//!   it matches strongly (into the oldest); a campaign it matches only
//!   weakly is never merged.
//! - A message that **contains** a text of a campaign ([`Rule::contains`]:
//!   a copy diluted with other words) and has no strong match joins that
//!   campaign and merges nothing. Texts found only by probing the band
//!   tables with the message's other smallest MinHash values (containing
//!   entries, [`MatchKind::Containing`]) are evidence of this alone.
//! - A campaign matched but not joined is reported as a near miss.
//!
//! `n = 0` restores the single-link rule of fingerprint version 4 and
//! before: every campaign with a match (strong or weak) is joined and
//! merged, and corroborating entries count for nothing.
//!
//! Texts, not entries, are counted: entries with one MinHash sketch (exact
//! copies, copies that differ only in what normalization removes) are one
//! piece of evidence, so one mail delivered in several transactions cannot
//! corroborate anything on its own.
//!
//! This is the only implementation of the rule: with Redis, every daemon
//! applies the site's log to an engine of its own (`store::stream`).
//!
//! # Settings and constants
//!
//! Every bound the rule reads, and where it is set. A setting is the
//! operator's (`bulkwatch.toml`, checked and documented there); a
//! constant is the code's, each documented at its definition with the
//! evidence it rests on (most of it pairs of the SpamAssassin corpus under
//! one key: docs/dev/quality.md, which also says which of them reappear on
//! held-out halves under another key: `benches/heldout_constants.py`).
//!
//! | bound | kind | where |
//! | --- | --- | --- |
//! | strong match: distance, sketch difference | setting | `thresholds.strong_distance`, `thresholds.strong_sketch_diff` |
//! | weak match: radius, MinHash bound | setting | `window.max_distance`, `window.max_sketch_diff` |
//! | weight of a weak match | setting | `thresholds.weak_match_weight` |
//! | distinct texts that corroborate | setting | `window.corroborating_matches` |
//! | corroborating and containing candidates' bounds | setting | `window.corroborating_sketch_diff`, `window.corroborating_distance` |
//! | containment on or off | setting | `window.containment` |
//! | misses of a contained text | constant | [`MAX_CONTAINED_MISSES`], [`MAX_PROBED_MISSES`] |
//! | least size of a contained text | constant | [`MIN_CONTAINED`], [`MIN_PROBED`], [`MIN_QUOTED`] |
//! | a reply's growth and its quote's share | constant | [`MIN_GROWTH`], [`MIN_QUOTED_SHARE`] |
//! | band tables a containing entry needs | constant | [`MIN_PROBED_BANDS`](super::index::MIN_PROBED_BANDS) |
//! | matches a query returns | constant | [`MAX_MATCHES`](super::index::MAX_MATCHES) |
//!
//! The rule's decision itself (`choose`) reads only the evidence per
//! campaign that `gather` collects and the corroboration setting: it is
//! a pure function, tested as a table of its branches.

use super::index::{CampaignRef, Match, MatchKind};
use super::minhash::contained_misses;

/// What the linking rule needs of the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub strong_distance: u32,
    pub strong_sketch_diff: u32,
    /// Distinct texts of a campaign that must match a message with weak
    /// matches only (0: single link).
    pub corroboration: usize,
    /// The message's features, for the containment rule (0: off).
    pub features: usize,
    /// The message's MinHash sketch and its second and third smallest
    /// values ([`crate::engine::minhash::MinSketch`]), for the
    /// containment rule.
    pub sketch: u64,
    pub deeper: [u64; 2],
    /// The message is a reply or a forward (`Observation::reply`): the
    /// containment rule holds it to the bounds of a message that quotes.
    pub reply: bool,
}

/// Most of a matched text's 32 MinHash values that may be none of the
/// message's three smallest for the message to join its campaign on
/// containment ([`Rule::contains`],
/// [`contained_misses`]).
pub const MAX_CONTAINED_MISSES: u32 = 2;
/// [`MAX_CONTAINED_MISSES`] for a text found by a band probe alone (a
/// containing entry, [`MatchKind::Containing`]). The probes read 9 keys a band
/// instead of 1, so they bring more texts that the message holds only in
/// part to the test. A text a fifth of which the message lacks misses 3.3
/// values on average (`minhash` unit test): it passes at 2 misses about a
/// third of the time, at 1 a sixth; a text held whole by a message half as
/// large again (0.37 on average) passes at 1 about 95% of the time. At 2,
/// under one key of the corpus, a spam mailing joined another mailing of
/// its sender through a probe.
pub const MAX_PROBED_MISSES: u32 = 1;
/// [`MIN_CONTAINED`] for a text found by a band probe alone: a text of a
/// size class of 64 features or fewer is mostly what a sender's mailings
/// share (a form and a legal notice, in three mailings of one insurance
/// sender on the corpus, which joined under one key at 64).
pub const MIN_PROBED: f64 = 72.0;
/// How much larger (in features) than the matched text's size class a
/// reply or forward must be: a reply that adds a line to the message it
/// quotes is no copy of it (against the least size of the class instead,
/// three pairs of the corpus's ham joined). Any other message need only be
/// as large as the text (the least size of its class).
pub const MIN_GROWTH: f64 = 1.1;
/// Least features of a text that a message may join on containment: a
/// short text is mostly what many messages share (a list's footer under a
/// one-line post), and a message holding it is no copy of it (at 24,
/// ham joined spam campaigns on the corpus).
pub const MIN_CONTAINED: f64 = 40.0;
/// Least features of a text that a reply or forward may join on
/// containment: a short message is what a reply quotes whole (at 40, nine
/// pairs of the corpus's ham joined, each a reply and the message it
/// quotes).
pub const MIN_QUOTED: f64 = 64.0;
/// Least share of the text in a reply or forward, as its sketch
/// difference estimates it (`estimated_share`), besides the test of the
/// three smallest values: a reply whose quoted lines were kept (they are
/// cut only within a bound) holds the message it answers. On the corpus
/// under one key, the three smallest values alone let two such replies
/// join the messages they answer, which this estimate refuses.
pub const MIN_QUOTED_SHARE: f64 = 0.85;

impl Rule {
    fn strong(&self, m: &Match) -> bool {
        !m.corroborating()
            && (m.distance <= self.strong_distance || m.sketch_diff <= self.strong_sketch_diff)
    }

    /// Whether the message holds (nearly) all of the matched text and more:
    /// a copy diluted with other words (Bayesian poison, hash-buster
    /// lines), whose resemblance is only weak because of what was added.
    /// At most [`MAX_CONTAINED_MISSES`] of the text's 32 MinHash values may
    /// be none of the message's three smallest; the text must have
    /// [`MIN_CONTAINED`] features and the message at least as many as the
    /// text, or, for a reply or forward, [`MIN_QUOTED`] and
    /// [`MIN_GROWTH`] times as many, and the share of the text its sketch
    /// difference estimates must reach [`MIN_QUOTED_SHARE`]. A text found
    /// by a band probe alone ([`MatchKind::Containing`]) is held to
    /// [`MAX_PROBED_MISSES`] and [`MIN_PROBED`] instead; one found by its
    /// anchors alone ([`MatchKind::Anchored`]: the message holds a whole
    /// sentence of each third of it) to the bounds of any other. What a sender
    /// gains by marking copies as replies: the rule before 2026-11-27 (the
    /// same bounds and estimate), with the test of the three smallest
    /// values on top.
    ///
    /// (Until 2026-11-27 the rule estimated the share of the text in every
    /// message from the sketch difference, at least 0.85. That estimate's
    /// noise, about 0.08 for a copy diluted by half, refused 2.1% of the
    /// dressed suite's poisoned copies and 1.7% of its hash-buster copies
    /// that met the other bounds, over twelve keys; this test 0.15% and
    /// 0.08%: docs/dev/quality.md.)
    pub fn contains(&self, m: &Match) -> bool {
        if self.features == 0 {
            return false;
        }
        let a = crate::engine::index::window::class_size(m.size);
        let b = self.features as f64;
        let (least, smallest) = size_bounds(self.reply, a);
        let (least, most_misses) = match m.kind {
            MatchKind::Containing => (least.max(MIN_PROBED), MAX_PROBED_MISSES),
            MatchKind::Near | MatchKind::Corroborating | MatchKind::Anchored => {
                (least, MAX_CONTAINED_MISSES)
            }
        };
        if a < least || b < smallest {
            return false;
        }
        if self.reply && estimated_share(m.sketch_diff, a, b) < MIN_QUOTED_SHARE {
            return false;
        }
        contained_misses(m.sketch, self.sketch, self.deeper) <= most_misses
    }
}

/// The containment rule's size bounds for a text of size class size `a`:
/// the least the text may be, and the least the message may be. A size
/// class stands for sizes within 9% of its size, so "as large as the
/// text" is as large as the least of them.
pub fn size_bounds(reply: bool, a: f64) -> (f64, f64) {
    if reply {
        (MIN_QUOTED, a * MIN_GROWTH)
    } else {
        (MIN_CONTAINED, a * (-0.125f64).exp2())
    }
}

/// The share of a text of `a` features in a message of `b` that a
/// sketch difference of `diff` values estimates: with J the resemblance it
/// estimates, J (a + b) / ((1 + J) a).
fn estimated_share(diff: u32, a: f64, b: f64) -> f64 {
    let equal = 1.0 - f64::from(diff.min(32)) / 32.0;
    let j = ((equal - 0.25) / 0.75).clamp(0.0, 1.0);
    j * (a + b) / ((1.0 + j) * a)
}

/// The evidence for one campaign (its live root, `K`: a
/// [`CampaignRef`] in the engine).
#[derive(Debug, Clone, PartialEq)]
struct Evidence<K> {
    root: K,
    exact: bool,
    /// Distinct sketches of its strong matches.
    strong: Vec<u64>,
    /// Distinct sketches of its weak and corroborating matches.
    weak: Vec<u64>,
    /// Its first strong match in the list's order.
    first_strong: Option<Match>,
    /// Its first match of any kind in the list's order.
    first: Option<Match>,
    /// Position of `first_strong` in the list (exact: before all).
    strong_pos: usize,
    /// Its first match that the message contains ([`Rule::contains`]).
    contained: Option<Match>,
}

/// The rule's decision for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Link<K> {
    /// Live campaigns to join: the first is the campaign chosen, the
    /// others are merged with it (into the oldest, see `Campaigns::merge`).
    /// Empty: a new campaign.
    pub join: Vec<K>,
    /// Joined on weak evidence: the number of distinct texts that matched.
    pub weak_texts: usize,
    /// Joined because the message contains a text of the campaign
    /// ([`Rule::contains`]): it counts as a copy.
    pub contained: bool,
    /// Closest match behind the join (smallest sketch difference, then
    /// distance, then sequence number), `None` for an exact match alone.
    pub closest: Option<Match>,
    /// Smallest distance and sketch difference behind the join.
    pub distance: Option<u32>,
    pub sketch_diff: Option<u32>,
    /// The closest match in a campaign the message did not join.
    pub near_miss: Option<Match>,
}

impl<K> Link<K> {
    /// No campaign joined, nothing missed.
    fn none() -> Link<K> {
        Link {
            join: Vec::new(),
            weak_texts: 0,
            contained: false,
            closest: None,
            distance: None,
            sketch_diff: None,
            near_miss: None,
        }
    }
}

/// Applies the rule. `exact` is the live campaign of an exact match,
/// `matches` come from `NearIndex::query` (matches sorted closest first,
/// then corroborating entries sorted the same way, then containing ones);
/// `resolve` gives a match's campaign's live root, `None` for one that
/// counts for nothing (forgotten). A containing entry is evidence of
/// nothing but containment ([`Rule::contains`]).
pub fn link<K: Copy + Eq>(
    rule: &Rule,
    exact: Option<CampaignRef>,
    matches: &[Match],
    resolve: impl Fn(CampaignRef) -> Option<K>,
) -> Link<K> {
    choose(rule, &gather(rule, exact, matches, resolve))
}

/// The evidence for each campaign the matches reach (by live root), in
/// the order first reached.
fn gather<K: Copy + Eq>(
    rule: &Rule,
    exact: Option<CampaignRef>,
    matches: &[Match],
    resolve: impl Fn(CampaignRef) -> Option<K>,
) -> Vec<Evidence<K>> {
    // At most MAX_MATCHES entries and a handful of campaigns: a short list
    // beats a map.
    let mut per: Vec<Evidence<K>> = Vec::new();
    fn entry<K: Copy + Eq>(per: &mut Vec<Evidence<K>>, root: K) -> Option<&mut Evidence<K>> {
        if !per.iter().any(|e| e.root == root) {
            per.push(Evidence {
                root,
                exact: false,
                strong: Vec::new(),
                weak: Vec::new(),
                first_strong: None,
                first: None,
                strong_pos: usize::MAX,
                contained: None,
            });
        }
        per.iter_mut().find(|e| e.root == root)
    }
    if let Some(e) = exact.and_then(&resolve).and_then(|r| entry(&mut per, r)) {
        e.exact = true;
        e.strong_pos = 0;
    }
    for (pos, m) in matches.iter().enumerate() {
        let Some(e) = resolve(m.campaign).and_then(|r| entry(&mut per, r)) else {
            continue;
        };
        if m.containing() {
            // Not for a reply: its quotes make it differ from the message
            // it answers as a diluted copy differs from its text.
            if !rule.reply && e.contained.is_none() && rule.contains(m) {
                e.contained = Some(*m);
            }
            continue;
        }
        if e.first.is_none() {
            e.first = Some(*m);
        }
        let strong = rule.strong(m) || (rule.corroboration == 0 && !m.corroborating());
        let texts = if strong { &mut e.strong } else { &mut e.weak };
        if !texts.contains(&m.sketch) {
            texts.push(m.sketch);
        }
        if !strong && e.contained.is_none() && rule.contains(m) {
            e.contained = Some(*m);
        }
        if strong && e.first_strong.is_none() {
            e.first_strong = Some(*m);
            if !e.exact {
                e.strong_pos = pos + 1;
            }
        }
    }
    per
}

/// The rule's choice over the campaigns' evidence `per`: the campaigns
/// with strong evidence (most strong texts first), else the contained
/// text's, else the one with enough corroborating texts; and the closest
/// match of a campaign not joined.
fn choose<K: Copy + Eq>(rule: &Rule, per: &[Evidence<K>]) -> Link<K> {
    let mut out = Link::none();
    let strong_of = |e: &Evidence<K>| e.strong.len() + usize::from(e.exact);
    let chosen = per
        .iter()
        .filter(|e| strong_of(e) > 0)
        // Most strong texts; ties: the closest strong match first.
        .max_by_key(|e| (strong_of(e), std::cmp::Reverse(e.strong_pos)))
        .map(|e| e.root);
    if let Some(first) = chosen {
        out.join.push(first);
        for e in per {
            if e.root != first && strong_of(e) > 0 {
                out.join.push(e.root);
            }
        }
        for e in per.iter().filter(|e| out.join.contains(&e.root)) {
            if e.exact {
                out.distance = Some(0);
                out.sketch_diff = Some(0);
            }
            if let Some(m) = e.first_strong {
                out.distance = Some(out.distance.map_or(m.distance, |d| d.min(m.distance)));
                out.sketch_diff = Some(
                    out.sketch_diff
                        .map_or(m.sketch_diff, |s| s.min(m.sketch_diff)),
                );
                if out.closest.is_none_or(|c| key(&m) < key(&c)) {
                    out.closest = Some(m);
                }
            }
        }
    } else if let Some((root, m)) = per
        .iter()
        .filter_map(|e| e.contained.map(|m| (e.root, m)))
        .min_by_key(|(_, m)| key(m))
    {
        // A diluted copy: it joins the campaign of the text it contains,
        // and merges nothing (containment never links two campaigns).
        out.join.push(root);
        out.contained = true;
        out.closest = Some(m);
        out.distance = Some(m.distance);
        out.sketch_diff = Some(m.sketch_diff);
    } else if rule.corroboration > 0 {
        let weak = per
            .iter()
            .filter(|e| e.weak.len() >= rule.corroboration)
            // Most texts; ties: the closest match first.
            .max_by_key(|e| (e.weak.len(), std::cmp::Reverse(e.first.map(|m| key(&m)))));
        if let Some(e) = weak {
            out.join.push(e.root);
            out.weak_texts = e.weak.len();
            out.closest = e.first;
            out.distance = e.first.map(|m| m.distance);
            out.sketch_diff = e.first.map(|m| m.sketch_diff);
        }
    }
    out.near_miss = per
        .iter()
        .filter(|e| !out.join.contains(&e.root))
        .filter_map(|e| e.first)
        .min_by_key(key);
    out
}

/// The order of `NearIndex::query`: matches before corroborating entries,
/// those before containing ones, then sketch difference, distance and
/// sequence number.
fn key(m: &Match) -> (MatchKind, u32, u32, u64) {
    (m.kind, m.sketch_diff, m.distance, m.seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule {
        strong_distance: 2,
        strong_sketch_diff: 5,
        corroboration: 2,
        features: 0,
        sketch: 0,
        deeper: [0; 2],
        reply: false,
    };

    fn m(seq: u64, campaign: u32, distance: u32, sketch_diff: u32, sketch: u64) -> Match {
        Match {
            seq,
            distance,
            sketch_diff,
            campaign: CampaignRef::Slot(campaign),
            sketch,
            kind: MatchKind::Near,
            size: 0,
        }
    }

    fn corr(seq: u64, campaign: u32, sketch: u64) -> Match {
        Match {
            kind: MatchKind::Corroborating,
            ..m(seq, campaign, 18, 9, sketch)
        }
    }

    /// Evidence for campaign `root`, empty.
    fn ev(root: u32) -> Evidence<u32> {
        Evidence {
            root,
            exact: false,
            strong: Vec::new(),
            weak: Vec::new(),
            first_strong: None,
            first: None,
            strong_pos: usize::MAX,
            contained: None,
        }
    }

    /// `ev(root)` with strong texts `sketches`, its first strong match
    /// `first` at position `pos` of the query's list.
    fn strong(root: u32, sketches: &[u64], first: Match, pos: usize) -> Evidence<u32> {
        Evidence {
            strong: sketches.to_vec(),
            first_strong: Some(first),
            first: Some(first),
            strong_pos: pos,
            ..ev(root)
        }
    }

    /// `ev(root)` with weak texts `sketches`, the first of them `first`.
    fn weak(root: u32, sketches: &[u64], first: Match) -> Evidence<u32> {
        Evidence {
            weak: sketches.to_vec(),
            first: Some(first),
            ..ev(root)
        }
    }

    /// A match of sequence number `seq` (and sketch `seq`) at sketch
    /// difference `sd`.
    fn near(seq: u64, sd: u32) -> Match {
        m(seq, 0, 4, sd, seq)
    }

    /// `ev(root)`, the message containing its text found as `seq`.
    fn contained(root: u32, seq: u64, sd: u32) -> Evidence<u32> {
        Evidence {
            contained: Some(Match {
                kind: MatchKind::Containing,
                ..near(seq, sd)
            }),
            ..ev(root)
        }
    }

    /// A row of the choice's table: the branch, the evidence, the
    /// corroboration, then what is joined (the chosen campaign first),
    /// whether on containment, on how many weak texts, and the near
    /// miss's sequence number.
    type Row = (
        &'static str,
        Vec<Evidence<u32>>,
        usize,
        Vec<u32>,
        bool,
        usize,
        Option<u64>,
    );

    /// The rows where strong evidence decides.
    fn strong_rows() -> Vec<Row> {
        let exact = Evidence {
            exact: true,
            strong_pos: 0,
            ..ev(7)
        };
        vec![
            ("nothing found", vec![], 2, vec![], false, 0, None),
            (
                "the exact text alone",
                vec![exact.clone()],
                2,
                vec![7],
                false,
                0,
                None,
            ),
            (
                "most strong texts is chosen, the other strong merged",
                vec![
                    strong(1, &[1], near(1, 2), 1),
                    strong(2, &[2, 3], near(2, 3), 2),
                ],
                2,
                vec![2, 1],
                false,
                0,
                None,
            ),
            (
                "a tie goes to the closest strong match",
                vec![
                    strong(1, &[1], near(5, 2), 5),
                    strong(2, &[2], near(3, 3), 3),
                ],
                2,
                vec![2, 1],
                false,
                0,
                None,
            ),
            (
                "the exact text counts as one strong text, first",
                vec![strong(1, &[1], near(1, 2), 1), exact],
                2,
                vec![7, 1],
                false,
                0,
                None,
            ),
            (
                "a weak campaign is never merged: its match is the near miss",
                vec![
                    strong(1, &[1], near(1, 2), 1),
                    weak(2, &[4, 5, 6], near(4, 9)),
                ],
                2,
                vec![1],
                false,
                0,
                Some(4),
            ),
        ]
    }

    /// The rows without strong evidence: containment, corroboration.
    fn weak_rows() -> Vec<Row> {
        vec![
            (
                "no strong evidence: the contained text's campaign, the closer",
                vec![contained(3, 8, 12), contained(4, 9, 10)],
                2,
                vec![4],
                true,
                0,
                None,
            ),
            (
                "containment before corroboration",
                vec![weak(2, &[4, 5], near(4, 9)), contained(3, 8, 12)],
                2,
                vec![3],
                true,
                0,
                Some(4),
            ),
            (
                "enough weak texts corroborate: the campaign with the most",
                vec![
                    weak(2, &[4, 5], near(4, 9)),
                    weak(3, &[6, 7, 8], near(6, 10)),
                ],
                2,
                vec![3],
                false,
                3,
                Some(4),
            ),
            (
                "too few weak texts: a near miss only",
                vec![weak(2, &[4], near(4, 9))],
                2,
                vec![],
                false,
                0,
                Some(4),
            ),
            (
                "single link (corroboration 0) joins on nothing weak",
                vec![weak(2, &[4, 5, 6], near(4, 9))],
                0,
                vec![],
                false,
                0,
                Some(4),
            ),
        ]
    }

    /// The choice over typed evidence, a row a branch.
    #[test]
    fn the_choice_over_evidence_covers_every_branch() {
        for (branch, per, corroboration, join, contained, weak_texts, miss) in
            strong_rows().into_iter().chain(weak_rows())
        {
            let rule = Rule {
                corroboration,
                ..RULE
            };
            let l = choose(&rule, &per);
            assert_eq!(
                (
                    l.join.clone(),
                    l.contained,
                    l.weak_texts,
                    l.near_miss.map(|m| m.seq)
                ),
                (join, contained, weak_texts, miss),
                "{branch}: {l:?}"
            );
        }
    }

    /// The rule over `ms`, campaigns named by slot.
    fn run(rule: &Rule, exact: Option<u32>, ms: &[Match]) -> Link<u32> {
        let mut sorted = ms.to_vec();
        sorted.sort_by_key(key);
        link(rule, exact.map(CampaignRef::Slot), &sorted, |r| match r {
            CampaignRef::Slot(s) => Some(s),
            CampaignRef::Alone(_) => None,
        })
    }

    #[test]
    fn one_strong_match_joins() {
        let l = run(&RULE, None, &[m(1, 0, 1, 9, 10)]);
        assert_eq!(l.join, vec![0]);
        assert_eq!(
            (l.weak_texts, l.distance, l.sketch_diff),
            (0, Some(1), Some(9))
        );
    }

    /// A weak match of a text of `size` features with MinHash sketch
    /// `sketch`: what a diluted copy finds.
    fn of_size(seq: u64, campaign: u32, sketch_diff: u32, size: usize, sketch: u64) -> Match {
        Match {
            size: crate::engine::index::window::size_class(size),
            ..m(seq, campaign, 12, sketch_diff, sketch)
        }
    }

    /// Words `n..n + len` (feature hashes).
    fn words(n: u64, len: u64) -> Vec<u64> {
        (n..n + len).map(crate::engine::minhash::mix).collect()
    }

    fn sketch_of(w: &[u64]) -> crate::engine::minhash::MinSketch {
        crate::engine::minhash::min_sketch(w, &crate::engine::minhash::seeds((7, 9)))
    }

    /// The rule for a message of these words, containment on.
    fn rule_for(w: &[u64]) -> Rule {
        let s = sketch_of(w);
        Rule {
            features: w.len(),
            sketch: s.sketch,
            deeper: s.deeper,
            ..RULE
        }
    }

    /// A message holding all of a text and half as many words again
    /// (Bayesian poison, hash-buster lines) joins the text's campaign as a
    /// copy, and merges nothing even when it contains texts of two
    /// campaigns.
    #[test]
    fn a_message_that_contains_a_text_joins_its_campaign() {
        let text = words(0, 100);
        let mut msg = text.clone();
        msg.extend(words(1000, 50));
        let t = sketch_of(&text).sketch;
        let rule = rule_for(&msg);
        let diff = crate::engine::minhash::sketch_diff(t, rule.sketch);
        assert!(diff > RULE.strong_sketch_diff, "a weak match: {diff}");
        let l = run(&rule, None, &[of_size(1, 4, diff, 100, t)]);
        assert_eq!((l.join.clone(), l.contained), (vec![4], true));
        assert_eq!(
            (l.distance, l.sketch_diff, l.weak_texts),
            (Some(12), Some(diff), 0)
        );
        // The text in two campaigns (they were never merged): the closest
        // is joined, the other is not merged into it.
        let l = run(
            &rule,
            None,
            &[of_size(1, 4, 9, 100, t), of_size(2, 5, 8, 100, t)],
        );
        assert_eq!(l.join, vec![5], "the closest, alone");
        // Off (features 0), the same match is a near miss.
        let l = run(
            &Rule {
                features: 0,
                ..rule
            },
            None,
            &[of_size(1, 4, diff, 100, t)],
        );
        assert!(l.join.is_empty() && !l.contained);
    }

    /// A containing entry (found by a band probe alone) is evidence of
    /// containment only: a message that holds its text joins, unless it
    /// is a reply; two of another text do not corroborate anything, and
    /// are no near miss.
    #[test]
    fn containing_entries_count_for_containment_only() {
        let text = words(0, 100);
        let t = sketch_of(&text).sketch;
        let mut msg = text.clone();
        msg.extend(words(1000, 50));
        let rule = rule_for(&msg);
        let containing = |seq: u64, sketch: u64| Match {
            kind: MatchKind::Containing,
            ..of_size(seq, 4, 12, 100, sketch)
        };
        let l = run(&rule, None, &[containing(1, t)]);
        assert_eq!((l.join.clone(), l.contained), (vec![4], true));
        let reply = Rule {
            reply: true,
            ..rule
        };
        assert!(run(&reply, None, &[containing(1, t)]).join.is_empty());
        let other = sketch_of(&words(5000, 100)).sketch;
        let l = run(&rule, None, &[containing(1, other), containing(2, !other)]);
        assert!(l.join.is_empty() && l.near_miss.is_none(), "{l:?}");
        // The same two as corroborating entries join on corroboration.
        let corr = |seq: u64, sketch: u64| Match {
            kind: MatchKind::Corroborating,
            ..containing(seq, sketch)
        };
        let l = run(&rule, None, &[corr(1, other), corr(2, !other)]);
        assert_eq!((l.join.clone(), l.weak_texts), (vec![4], 2));
    }

    /// What a text found by a probe alone must pass besides: at most
    /// [`MAX_PROBED_MISSES`] and a size class above [`MIN_PROBED`]; the
    /// same text found through the message's own band joins with two
    /// misses, or at 60 features.
    #[test]
    fn probed_texts_are_held_to_stricter_bounds() {
        let found = |containing: bool, size: usize, sketch: u64| Match {
            kind: if containing {
                MatchKind::Containing
            } else {
                MatchKind::Corroborating
            },
            ..of_size(1, 4, 8, size, sketch)
        };
        // A text the message holds but for a few words, with two misses.
        let (text, msg) = (0..500u64)
            .map(|k| {
                let text = words(k * 1000, 100);
                let mut msg = text[..93].to_vec();
                msg.extend(words(1_000_000 + k * 1000, 60));
                (text, msg)
            })
            .find(|(text, msg)| {
                let m = sketch_of(msg);
                contained_misses(sketch_of(text).sketch, m.sketch, m.deeper) == 2
            })
            .expect("a text with two misses");
        let (t, rule) = (sketch_of(&text).sketch, rule_for(&msg));
        assert!(run(&rule, None, &[found(false, 100, t)]).contained);
        assert!(!run(&rule, None, &[found(true, 100, t)]).contained);
        // A short text held whole (with at most one miss).
        let (short, msg) = (0..500u64)
            .map(|k| {
                let short = words(k * 1000, 60);
                let mut msg = short.clone();
                msg.extend(words(1_000_000 + k * 1000, 30));
                (short, msg)
            })
            .find(|(text, msg)| {
                let m = sketch_of(msg);
                contained_misses(sketch_of(text).sketch, m.sketch, m.deeper) <= 1
            })
            .expect("a text with at most one miss");
        let (t, rule) = (sketch_of(&short).sketch, rule_for(&msg));
        assert!(run(&rule, None, &[found(false, 60, t)]).contained);
        assert!(!run(&rule, None, &[found(true, 60, t)]).contained);
        assert!(run(&rule, None, &[found(true, 80, t)]).contained);
    }

    /// What containment does not join: a smaller message, a text under
    /// [`MIN_CONTAINED`] features, a text of which a fifth is not in the
    /// message; and for a reply or forward, which may quote a message
    /// whole, also a message under [`MIN_GROWTH`] times the text, a text
    /// under [`MIN_QUOTED`] features and a sketch difference that
    /// estimates less than [`MIN_QUOTED_SHARE`] of the text in it.
    #[test]
    fn texts_that_are_not_contained_do_not_join() {
        let text = words(0, 100);
        let t = sketch_of(&text).sketch;
        let grown = |w: &[u64], extra: u64| {
            let mut m = w.to_vec();
            m.extend(words(1000, extra));
            m
        };
        let joins = |rule: &Rule, size: usize, t: u64| {
            !run(rule, None, &[of_size(1, 4, 9, size, t)])
                .join
                .is_empty()
        };
        let reply = |w: &[u64]| Rule {
            reply: true,
            ..rule_for(w)
        };
        let short = words(0, 50);
        let s = sketch_of(&short).sketch;
        for (name, rule, joined) in [
            ("the control", rule_for(&grown(&text, 50)), true),
            ("a reply, the control", reply(&grown(&text, 50)), true),
            ("a few words more", rule_for(&grown(&text, 5)), true),
            ("a reply, a few words more", reply(&grown(&text, 5)), false),
            ("smaller", rule_for(&text[..80]), false),
        ] {
            assert_eq!(joins(&rule, 100, t), joined, "{name}");
        }
        assert!(joins(&rule_for(&grown(&short, 30)), 50, s), "short");
        assert!(!joins(&reply(&grown(&short, 30)), 50, s), "a reply, short");
        let shorter = words(0, 30);
        let s = sketch_of(&shorter).sketch;
        assert!(!joins(&rule_for(&grown(&shorter, 20)), 30, s), "shorter");
        let mut partly = text[..80].to_vec();
        partly.extend(words(2000, 70));
        assert!(!joins(&rule_for(&partly), 100, t), "a fifth missing");
        // A reply's sketch difference must also estimate MIN_QUOTED_SHARE
        // of the text in it (14 of 32 values: 0.70).
        let far = |rule: &Rule| {
            !run(rule, None, &[of_size(1, 4, 14, 100, t)])
                .join
                .is_empty()
        };
        assert!(far(&rule_for(&grown(&text, 50))), "far, a copy");
        assert!(!far(&reply(&grown(&text, 50))), "far, a reply");
    }

    #[test]
    fn one_weak_match_does_not_join_and_is_a_near_miss() {
        let l = run(&RULE, None, &[m(7, 3, 3, 7, 10)]);
        assert!(l.join.is_empty());
        assert_eq!(
            l.near_miss.map(|n| (n.seq, n.campaign)),
            Some((7, CampaignRef::Slot(3)))
        );
        assert_eq!(l.distance, None);
    }

    #[test]
    fn one_text_delivered_twice_is_one_piece_of_evidence() {
        let l = run(&RULE, None, &[m(1, 0, 3, 7, 10), m(2, 0, 3, 7, 10)]);
        assert!(l.join.is_empty());
    }

    #[test]
    fn weak_matches_of_two_texts_join_with_corroborating_entries_counting() {
        let l = run(&RULE, None, &[m(1, 0, 3, 7, 10), corr(2, 0, 11)]);
        assert_eq!((l.join.clone(), l.weak_texts), (vec![0], 2));
        assert_eq!(l.closest.map(|c| c.seq), Some(1));
        // The campaign with the most texts wins.
        let l = run(
            &RULE,
            None,
            &[
                m(1, 0, 3, 6, 10),
                m(2, 0, 3, 7, 11),
                m(3, 1, 3, 7, 12),
                m(4, 1, 4, 8, 13),
                m(5, 1, 4, 8, 14),
            ],
        );
        assert_eq!((l.join.clone(), l.weak_texts), (vec![1], 3));
        assert_eq!(l.near_miss.map(|n| n.seq), Some(1));
    }

    #[test]
    fn strong_evidence_merges() {
        // Strong to campaigns 0 and 1, weak to 2: 0 and 1 are merged,
        // the campaign with the most strong texts first.
        let ms = [
            m(1, 0, 1, 2, 10),
            m(2, 1, 2, 4, 20),
            m(3, 1, 2, 5, 21),
            m(4, 2, 3, 6, 30),
            m(5, 2, 3, 7, 31),
        ];
        let l = run(&RULE, None, &ms);
        assert_eq!(l.join, vec![1, 0]);
        assert_eq!(
            (l.distance, l.sketch_diff, l.weak_texts),
            (Some(1), Some(2), 0)
        );
        assert_eq!(l.near_miss.map(|n| n.campaign), Some(CampaignRef::Slot(2)));
        // An exact match is strong evidence; first on a tie.
        let l = run(&RULE, Some(1), &[m(1, 0, 1, 2, 10)]);
        assert_eq!(l.join, vec![1, 0]);
        assert_eq!((l.distance, l.sketch_diff), (Some(0), Some(0)));
    }

    #[test]
    fn weak_evidence_never_merges() {
        let ms = [
            m(1, 0, 3, 7, 10),
            m(2, 0, 3, 7, 11),
            m(3, 1, 3, 7, 12),
            m(4, 1, 3, 8, 13),
        ];
        let l = run(&RULE, None, &ms);
        assert_eq!(l.join.len(), 1);
    }

    #[test]
    fn zero_restores_single_link() {
        let single = Rule {
            corroboration: 0,
            ..RULE
        };
        let ms = [m(1, 0, 3, 7, 10), m(2, 1, 3, 8, 12), corr(3, 2, 13)];
        let l = run(&single, None, &ms);
        assert_eq!(l.join, vec![0, 1]);
        assert_eq!(l.weak_texts, 0);
    }
}
