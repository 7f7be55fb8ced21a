//! [`Verdict`]: what the engine concluded about one message, and the level
//! rule that maps a campaign's weighted size to clean / suspect / bulk.

use crate::config::Thresholds;
use crate::engine::campaign::{Campaign, CampaignId};

/// The level of a verdict. A message that was not judged carries why,
/// so a verdict cannot be "skipped" without a reason, or "bulk" with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    Clean,
    Suspect,
    Bulk,
    /// Let through whatever its campaign: by an allow-list or a domain
    /// allowance, before any store is asked (not judged, not recorded),
    /// or because an operator allowed its campaign
    /// ([`AllowReason::Campaign`]: judged and recorded, so the campaign
    /// goes on counting).
    Allowed(AllowReason),
    /// Not judged.
    Skipped(SkipReason),
}

impl Level {
    /// The level without its reason.
    pub fn kind(self) -> LevelKind {
        match self {
            Level::Clean => LevelKind::Clean,
            Level::Suspect => LevelKind::Suspect,
            Level::Bulk => LevelKind::Bulk,
            Level::Allowed(_) => LevelKind::Allowed,
            Level::Skipped(_) => LevelKind::Skipped,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.kind().as_str()
    }

    /// Why the message was not judged, if it was not: the `reason=` of the
    /// header and the log line.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Level::Allowed(r) => Some(r.as_str()),
            Level::Skipped(r) => Some(r.as_str()),
            Level::Clean | Level::Suspect | Level::Bulk => None,
        }
    }

    pub fn skip_reason(self) -> Option<SkipReason> {
        match self {
            Level::Skipped(r) => Some(r),
            _ => None,
        }
    }

    pub fn allow_reason(self) -> Option<AllowReason> {
        match self {
            Level::Allowed(r) => Some(r),
            _ => None,
        }
    }
}

/// A [`Level`] without its reason: what metrics and summaries count by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LevelKind {
    Clean,
    Suspect,
    Bulk,
    Allowed,
    Skipped,
}

impl LevelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LevelKind::Clean => "clean",
            LevelKind::Suspect => "suspect",
            LevelKind::Bulk => "bulk",
            LevelKind::Allowed => "allowed",
            LevelKind::Skipped => "skipped",
        }
    }

    /// Its position in [`LevelKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// All kinds, for metrics.
    pub const ALL: [LevelKind; 5] = [
        LevelKind::Clean,
        LevelKind::Suspect,
        LevelKind::Bulk,
        LevelKind::Allowed,
        LevelKind::Skipped,
    ];
}

/// Why a message was not judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// mail-parser found no message in the bytes.
    Unparsed,
    /// Fewer than `min_features` shingles and no anchor (attachment, image
    /// source, link with some text): empty or one-line bodies must not form
    /// campaigns with each other.
    TooShort,
}

impl SkipReason {
    pub const ALL: [SkipReason; 2] = [SkipReason::Unparsed, SkipReason::TooShort];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Unparsed => "unparsed",
            SkipReason::TooShort => "too_short",
        }
    }
}

/// Why a message was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllowReason {
    SenderDomain,
    ClientNetwork,
    Authenticated,
    /// An operator allowed the campaign (`bulkwatch campaigns allow`).
    Campaign,
    /// Every recipient is in `allow.recipients` (postmaster@, abuse@).
    Recipient,
    /// An operator allowed the sender's domain (`bulkwatch campaigns
    /// allow-domain`), and a trusted Authentication-Results header says
    /// the From domain passed DKIM or DMARC ([`crate::engine::allowance`]).
    Domain,
    /// Every recipient reported the campaign as not spam (zero-hour
    /// reports, `bulkwatch report ham`).
    Reported,
}

impl AllowReason {
    pub fn as_str(self) -> &'static str {
        match self {
            AllowReason::SenderDomain => "sender_domain",
            AllowReason::ClientNetwork => "client_network",
            AllowReason::Authenticated => "authenticated",
            AllowReason::Campaign => "campaign",
            AllowReason::Recipient => "recipient",
            AllowReason::Domain => "domain_allowance",
            AllowReason::Reported => "reported_ham",
        }
    }

    /// All reasons, for metrics.
    pub const ALL: [AllowReason; 7] = [
        AllowReason::SenderDomain,
        AllowReason::ClientNetwork,
        AllowReason::Authenticated,
        AllowReason::Campaign,
        AllowReason::Recipient,
        AllowReason::Domain,
        AllowReason::Reported,
    ];
}

/// A campaign as seen right after this message joined it.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignSummary {
    pub id: CampaignId,
    pub messages: u32,
    pub recipients: u64,
    /// Weighted recipients (weak matches count less).
    pub score: f64,
    pub first_seen: u64,
    pub last_seen: u64,
    pub sender_domains: usize,
    pub senders: Vec<String>,
    pub sample_subject: Option<String>,
    /// Every member was a list post ([`Campaign::list_post`]).
    pub list_post: bool,
    /// A conversation ([`Campaign::conversation`]): no inbound copy but
    /// its first delivery and replies.
    pub conversation: bool,
    /// [`Campaign::largest`].
    pub largest: u16,
    /// [`Campaign::freed`].
    pub freed: u16,
    /// [`Campaign::grown`].
    pub grown: u16,
    /// [`Campaign::own`]: recipients of the site's own mail, counted apart.
    pub own: u32,
    /// [`Campaign::own_largest`].
    pub own_largest: u16,
}

impl CampaignSummary {
    /// What its inbound mail is judged on ([`Campaign::measure`]).
    pub fn measure(&self, single_transaction: u32) -> f64 {
        let centi = (self.score * 100.0).round().max(0.0) as u64;
        let free = crate::engine::campaign::Free {
            largest: self.largest,
            grown: self.grown,
            freed: self.freed,
        };
        crate::engine::campaign::measure_centi(centi, free, single_transaction) as f64 / 100.0
    }

    /// What its own mail is judged on ([`Campaign::own_measure`]).
    pub fn own_measure(&self, single_transaction: u32) -> f64 {
        crate::engine::campaign::own_measure(self.own, self.own_largest, single_transaction)
    }
}

impl From<&Campaign> for CampaignSummary {
    fn from(c: &Campaign) -> Self {
        CampaignSummary {
            id: c.id,
            messages: c.messages,
            recipients: c.recipients,
            score: c.score(),
            first_seen: c.first_seen.into(),
            last_seen: c.last_seen.into(),
            sender_domains: c.sender_domains(),
            senders: c.texts.names_vec(),
            sample_subject: c.texts.subject().map(str::to_owned),
            list_post: c.list_post,
            conversation: c.conversation(),
            largest: c.largest,
            freed: c.freed,
            grown: c.grown,
            own: c.own,
            own_largest: c.own_largest,
        }
    }
}

/// The engine's answer for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub level: Level,
    /// Mailing-list mail: the message has list headers and its campaign
    /// comes from one sender domain (`engine::verdict_of`). Its action is
    /// `policy.list` at most; its level and counts are those of any mail.
    pub list: bool,
    /// The normalized text matched a message of the window exactly.
    pub exact: bool,
    /// Smallest Hamming distance to a window entry (0 for exact), if matched.
    pub distance: Option<u32>,
    /// Estimated Jaccard resemblance to the closest match, from the MinHash
    /// sketches (1.0 for exact).
    pub resemblance: Option<f64>,
    pub campaign: Option<CampaignSummary>,
    /// This message made its campaign bulk for the first time.
    pub newly_bulk: bool,
    /// Campaign ids this message merged into `campaign`.
    pub merged: Vec<CampaignId>,
    /// Window sequence number this message was recorded under, if recorded.
    pub seq: Option<u64>,
    /// Sequence number of the closest match in the window, if any.
    pub nearest: Option<u64>,
    /// Distinct texts of the campaign that corroborated the message, when it
    /// joined on corroboration alone (a weak match; see
    /// `window.corroborating_matches`); 0 otherwise.
    pub corroborating: u32,
    /// The closest campaign the message matched but did not join (see
    /// `crate::engine::link`).
    pub near_miss: Option<NearMiss>,
    pub simhash: Option<u64>,
    pub features: usize,
    /// What the message was to its campaign and the recipients it added
    /// ([`crate::engine::party`]), when it was recorded.
    pub step: Option<crate::engine::party::Move>,
    /// What the line rules would cut was read as the text: a short
    /// reply fingerprinted with its quote
    /// ([`KeptCut`](crate::engine::mime::normalize::KeptCut)).
    pub kept_cut: Option<crate::engine::mime::normalize::KeptCut>,
    /// The message was read partly: a reader stopped at its work budget,
    /// or the deep reading failed and what was read first stands (the
    /// fingerprint is of what was read).
    pub partial: bool,
    /// A picture of text in the message was not read for its text: the
    /// OCR workers had no time for it (a flood of pictures from elsewhere,
    /// or its own) or failed. The message was judged on the rest and is
    /// read again later (`milter::later`), which counts it in its
    /// campaign then. Set by the daemon, never stored.
    pub unread: bool,
    /// The site's own mail ([`crate::engine::party::Origin::Own`]): judged
    /// on its campaign's own tally, and given `policy.own`'s action.
    pub own: bool,
}

impl Verdict {
    /// A verdict of `level` and nothing else: no campaign, no match.
    fn bare(level: Level) -> Verdict {
        Verdict {
            level,
            list: false,
            exact: false,
            distance: None,
            resemblance: None,
            campaign: None,
            newly_bulk: false,
            merged: Vec::new(),
            seq: None,
            nearest: None,
            corroborating: 0,
            near_miss: None,
            simhash: None,
            features: 0,
            step: None,
            kept_cut: None,
            partial: false,
            unread: false,
            own: false,
        }
    }

    pub(crate) fn skipped(reason: SkipReason, features: usize, simhash: Option<u64>) -> Verdict {
        Verdict {
            simhash,
            features,
            ..Verdict::bare(Level::Skipped(reason))
        }
    }

    /// Let through before any store is asked (an allow-list, a domain
    /// allowance).
    pub(crate) fn allowed(reason: AllowReason) -> Verdict {
        Verdict::bare(Level::Allowed(reason))
    }

    /// The value of an `X-Bulkwatch` header: level first, then what a Sieve
    /// rule or a person needs, e.g.
    /// `bulk; campaign=3fa9c1d2e4f5; size=57; distance=2; resemblance=0.99`.
    pub fn header_value(&self) -> String {
        let mut s = self.level.as_str().to_owned();
        if let Some(r) = self.level.reason() {
            s.push_str("; reason=");
            s.push_str(r);
        }
        if let Some(c) = &self.campaign {
            let size = if self.own {
                u64::from(c.own)
            } else {
                c.recipients
            };
            s.push_str(&format!("; campaign={}; size={}", c.id, size));
        }
        if self.list {
            s.push_str("; list=yes");
        }
        if self.own {
            s.push_str("; own=yes");
        }
        if self
            .campaign
            .as_ref()
            .is_some_and(|c| c.conversation && c.messages > 1)
        {
            s.push_str("; conversation=yes");
        }
        if self.exact {
            s.push_str("; exact=yes");
        }
        if let Some(d) = self.distance {
            s.push_str(&format!("; distance={d}"));
        }
        if let Some(r) = self.resemblance {
            s.push_str(&format!("; resemblance={r:.2}"));
        }
        if self.corroborating > 0 {
            s.push_str(&format!("; corroborating={}", self.corroborating));
        }
        if self.kept_cut.is_some() {
            s.push_str("; quote=read");
        }
        if self.partial {
            s.push_str("; read=partial");
        }
        if self.unread {
            s.push_str("; pictures=unread");
        }
        s
    }
}

/// The level of an inbound message in campaign `c` (as it stands after
/// the message joined): [`level_for`] what it measures
/// ([`CampaignSummary::measure`]: its distinct recipients less one
/// transaction's and its replies'). One transaction within
/// `single_transaction_recipients` measures 1 and is clean; a second copy
/// that matches it counts its own new recipients. A mailing list's post
/// delivered in several transactions (every member a list post, from one
/// sender domain) is one delivery, clean within
/// `single_transaction_recipients`. Every store decides "newly bulk" by
/// this rule too, so an alert is not spent on a message that was not bulk.
pub fn campaign_level(c: &CampaignSummary, t: &Thresholds) -> Level {
    let single = t.single_transaction_recipients;
    if c.list_post && c.sender_domains <= 1 && c.recipients <= u64::from(single) {
        return Level::Clean;
    }
    level_for(c.measure(single), t)
}

/// The level of the site's own mail in campaign `c`: [`level_for`] its own
/// tally ([`CampaignSummary::own_measure`]), counted apart from inbound
/// mail.
pub fn own_level(c: &CampaignSummary, t: &Thresholds) -> Level {
    level_for(c.own_measure(t.single_transaction_recipients), t)
}

/// The level of `c` for a message of origin `own`.
pub fn level_in(c: &CampaignSummary, own: bool, t: &Thresholds) -> Level {
    if own {
        own_level(c, t)
    } else {
        campaign_level(c, t)
    }
}

/// The level for a campaign of weighted size `score`.
pub fn level_for(score: f64, t: &Thresholds) -> Level {
    if score >= t.bulk_threshold {
        Level::Bulk
    } else if score >= t.suspect_threshold {
        Level::Suspect
    } else {
        Level::Clean
    }
}

/// A campaign a message matched but did not join (one weak match, or a
/// strong match to an established campaign it did not merge): shown so an
/// operator can see near misses (`replay --format jsonl`, `scan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NearMiss {
    pub campaign: CampaignId,
    pub distance: u32,
    pub sketch_diff: u32,
    /// Sequence number of the closest entry of that campaign.
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn levels_follow_thresholds() {
        let mut t = Config::default().thresholds;
        t.bulk_threshold = 10.0;
        t.suspect_threshold = 3.0;
        assert_eq!(level_for(2.9, &t), Level::Clean);
        assert_eq!(level_for(3.0, &t), Level::Suspect);
        assert_eq!(level_for(10.0, &t), Level::Bulk);
    }

    #[test]
    fn header_names_level_campaign_and_distance() {
        let v = Verdict {
            level: Level::Bulk,
            exact: false,
            distance: Some(2),
            resemblance: Some(0.99),
            campaign: Some(CampaignSummary {
                id: CampaignId(0x3fa9c1),
                messages: 5,
                recipients: 57,
                score: 57.0,
                first_seen: 0,
                last_seen: 0,
                sender_domains: 1,
                senders: vec![],
                sample_subject: None,
                list_post: false,
                conversation: false,
                largest: 0,
                freed: 0,
                grown: 0,
                own: 0,
                own_largest: 0,
            }),
            ..Verdict::skipped(SkipReason::TooShort, 0, None)
        };
        assert_eq!(
            v.header_value(),
            "bulk; campaign=0000003fa9c1; size=57; distance=2; resemblance=0.99"
        );
        let v = Verdict {
            corroborating: 4,
            distance: Some(18),
            resemblance: Some(0.62),
            ..v
        };
        assert_eq!(
            v.header_value(),
            "bulk; campaign=0000003fa9c1; size=57; distance=18; resemblance=0.62; corroborating=4"
        );
    }
}
