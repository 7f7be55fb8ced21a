//! Verdict to milter reply: the only module that knows milter statuses and
//! end-of-message actions.
//!
//! [`decision_for`] maps a verdict and the policy to a [`Decision`] (pure, unit
//! tested); [`apply`] carries a decision out on the connection: header
//! removal, `X-Bulkwatch`, quarantine, SMTP replies.

use indymilter::{ContextActions, SetErrorReply, SmtpReply, Status};

use crate::config::{Action, FailureAction, MilterConfig, PolicyConfig};
use crate::engine::verdict::{Level, Verdict};
use crate::milter::session::{Forged, COPY_HEADER_NAME, HEADER_NAME, SCORE_HEADER_NAME};

/// What ends the `X-Bulkwatch` value of a copy put on hold: it reaches a
/// mailbox only when an operator released it (downstream.md's rule
/// delivers it to the inbox).
pub const HELD: &str = "held=yes";

/// Actions negotiated with the MTA: exactly those [`apply`] uses.
pub fn needed_actions() -> indymilter::Actions {
    indymilter::Actions::ADD_HEADER
        | indymilter::Actions::CHANGE_HEADER
        | indymilter::Actions::QUARANTINE
}

/// The headers a tagged message gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// `X-Bulkwatch`: level and explanation.
    pub value: String,
    /// `X-Bulkwatch-Score`: the campaign's weighted recipients, 0 outside
    /// a campaign.
    pub score: f64,
}

impl Tag {
    fn of(verdict: &Verdict) -> Tag {
        Tag {
            value: verdict.header_value(),
            score: verdict.campaign.as_ref().map_or(0.0, |c| c.score),
        }
    }

    /// The score as written: at most two decimals.
    pub fn score_text(&self) -> String {
        let s = format!("{:.2}", self.score);
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// What to do with one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Deliver as is (forged headers still removed).
    Accept,
    /// Deliver with `X-Bulkwatch: <value>` and `X-Bulkwatch-Score`.
    Tag(Tag),
    /// Tag and hold in the MTA's quarantine (Postfix: hold queue).
    Quarantine(Tag),
    /// 550 5.7.1.
    Reject,
    /// 451 4.7.1.
    Tempfail,
    /// Accept and drop.
    Discard,
}

impl Decision {
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Accept => "accept",
            Decision::Tag(_) => "tag",
            Decision::Quarantine(_) => "quarantine",
            Decision::Reject => "reject",
            Decision::Tempfail => "tempfail",
            Decision::Discard => "discard",
        }
    }
}

/// The policy's decision for a verdict. Suspect and bulk verdicts get
/// their policy's action, clean ones `policy.clean` (none or tag);
/// allowed and skipped mail is accepted untagged. Mailing-list mail
/// (`Verdict::list`) at suspect or bulk gets the milder of its level's
/// action and `policy.list`: never harsher than a list deserves, and
/// never harsher than other mail of its level.
pub fn decision_for(verdict: &Verdict, policy: &PolicyConfig) -> Decision {
    let action = match verdict.level {
        Level::Suspect => policy.suspect,
        Level::Bulk => policy.bulk,
        Level::Clean => policy.clean,
        Level::Allowed(_) | Level::Skipped(_) => Action::None,
    };
    let action = if verdict.list
        && matches!(verdict.level, Level::Suspect | Level::Bulk)
        && policy.list.severity() < action.severity()
    {
        policy.list
    } else {
        action
    };
    // The site's own mail: `policy.own` at most, and with its default,
    // none, untouched whatever its level (no header either).
    let action = if verdict.own && policy.own.severity() < action.severity() {
        policy.own
    } else {
        action
    };
    match action {
        Action::None => Decision::Accept,
        Action::Tag => Decision::Tag(Tag::of(verdict)),
        Action::Quarantine => Decision::Quarantine(Tag::of(verdict)),
        Action::Reject => Decision::Reject,
        Action::Tempfail => Decision::Tempfail,
        Action::Discard => Decision::Discard,
    }
}

/// The decision when the engine failed or timed out.
pub fn failure(cfg: &MilterConfig) -> Decision {
    match cfg.failure_action {
        FailureAction::Accept => Decision::Accept,
        FailureAction::Tempfail => Decision::Tempfail,
    }
}

/// Carries out `decision` at end of message. `forged` counts the
/// `X-Bulkwatch`, `X-Bulkwatch-Score` and `X-Bulkwatch-Copy` headers that
/// arrived with the message: each is deleted (highest index first, so indexes stay valid)
/// whenever the message is delivered, so a sender cannot forge a verdict
/// or a score. `copy` is the `X-Bulkwatch-Copy` of a copy zero-hour
/// may act on ([`crate::milter::zerohour`]).
///
/// # Errors
/// The connection to the MTA failed or an action was not negotiated; the
/// caller logs it (the MTA then applies its `milter_default_action`).
pub async fn apply(
    actions: &impl ContextActions,
    reply: &mut SmtpReply,
    cfg: &MilterConfig,
    decision: &Decision,
    forged: Forged,
    copy: Option<&str>,
) -> Result<Status, indymilter::ActionError> {
    match decision {
        Decision::Accept | Decision::Tag(_) | Decision::Quarantine(_) => {
            for (name, n) in [
                (HEADER_NAME, forged.headers),
                (SCORE_HEADER_NAME, forged.scores),
                (COPY_HEADER_NAME, forged.copies),
            ] {
                for i in (1..=n).rev() {
                    let index = i32::try_from(i).unwrap_or(i32::MAX);
                    actions.change_header(name, index, None::<&str>).await?;
                }
            }
            if let Decision::Tag(t) = decision {
                actions.add_header(HEADER_NAME, t.value.as_str()).await?;
            }
            if let Some(value) = copy {
                actions.add_header(COPY_HEADER_NAME, value).await?;
            }
            if let Decision::Tag(t) | Decision::Quarantine(t) = decision {
                actions
                    .add_header(SCORE_HEADER_NAME, t.score_text())
                    .await?;
            }
            if let Decision::Quarantine(t) = decision {
                // Held: the copy arrives only when an operator releases it
                // (`bulkwatch campaigns release`), and says so, so that a
                // downstream rule can deliver it as released.
                actions
                    .add_header(HEADER_NAME, format!("{}; {HELD}", t.value))
                    .await?;
                actions
                    .quarantine(format!("bulkwatch: {}", t.value))
                    .await?;
            }
            Ok(Status::Accept)
        }
        Decision::Reject => {
            // The text was validated (printable ASCII, bounded) with the
            // config; should the MTA refuse it, a bare 550 is still sent.
            let _ = reply.set_error_reply("550", Some("5.7.1"), [cfg.reject_text.as_str()]);
            Ok(Status::Reject)
        }
        Decision::Tempfail => {
            let _ = reply.set_error_reply("451", Some("4.7.1"), [cfg.tempfail_text.as_str()]);
            Ok(Status::Tempfail)
        }
        Decision::Discard => Ok(Status::Discard),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::campaign::CampaignId;
    use crate::engine::verdict::{AllowReason, CampaignSummary, SkipReason};

    fn verdict(level: Level) -> Verdict {
        let v = Verdict::skipped(SkipReason::TooShort, 0, None);
        Verdict {
            level,
            distance: Some(1),
            campaign: Some(CampaignSummary {
                id: CampaignId(1),
                messages: 6,
                recipients: 6,
                score: 6.0,
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
            ..v
        }
    }

    #[test]
    fn policy_maps_levels_to_decisions() {
        let mut p = Config::default().policy;
        assert_eq!(decision_for(&verdict(Level::Clean), &p), Decision::Accept);
        assert_eq!(
            decision_for(&verdict(Level::Bulk), &p),
            Decision::Tag(Tag {
                value: "bulk; campaign=000000000001; size=6; distance=1".into(),
                score: 6.0
            })
        );
        p.clean = Action::Tag;
        assert!(matches!(
            decision_for(&verdict(Level::Clean), &p),
            Decision::Tag(Tag { ref value, .. }) if value.starts_with("clean")
        ));
        p.bulk = Action::Reject;
        p.suspect = Action::Quarantine;
        assert_eq!(decision_for(&verdict(Level::Bulk), &p), Decision::Reject);
        assert!(matches!(
            decision_for(&verdict(Level::Suspect), &p),
            Decision::Quarantine(_)
        ));
        assert_eq!(
            decision_for(&verdict(Level::Allowed(AllowReason::Campaign)), &p),
            Decision::Accept
        );
    }

    /// List mail gets `policy.list` when that is milder than its level's
    /// action, and its level's action when that is milder.
    #[test]
    fn list_mail_gets_the_milder_of_its_policies() {
        let mut p = Config::default().policy;
        p.bulk = Action::Reject;
        let list = |level| Verdict {
            list: true,
            ..verdict(level)
        };
        assert_eq!(
            decision_for(&list(Level::Bulk), &p),
            Decision::Tag(Tag {
                value: "bulk; campaign=000000000001; size=6; list=yes; distance=1".into(),
                score: 6.0
            })
        );
        p.list = Action::Quarantine;
        assert!(matches!(
            decision_for(&list(Level::Bulk), &p),
            Decision::Quarantine(_)
        ));
        p.suspect = Action::None;
        assert_eq!(decision_for(&list(Level::Suspect), &p), Decision::Accept);
        p.list = Action::None;
        assert_eq!(decision_for(&list(Level::Bulk), &p), Decision::Accept);
        // Clean list mail follows policy.clean like any clean mail.
        p.clean = Action::Tag;
        assert!(matches!(
            decision_for(&list(Level::Clean), &p),
            Decision::Tag(_)
        ));
    }

    #[test]
    fn failure_follows_config() {
        let mut m = Config::default().milter;
        assert_eq!(failure(&m), Decision::Accept);
        m.failure_action = FailureAction::Tempfail;
        assert_eq!(failure(&m), Decision::Tempfail);
    }
}
