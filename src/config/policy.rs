//! `[policy]`: the action taken for each verdict level.

use super::section::*;
use super::ConfigError;

/// What the milter does for a verdict level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing at all.
    None,
    /// Add the X-Bulkwatch header.
    Tag,
    /// Tag and hold in Postfix's hold queue.
    Quarantine,
    /// 550 5.7.1.
    Reject,
    /// 451 4.7.1.
    Tempfail,
    /// Accept and drop silently.
    Discard,
}

impl Action {
    fn parse(key: &str, s: &str) -> Result<Self, ConfigError> {
        Ok(match s {
            "none" => Action::None,
            "tag" => Action::Tag,
            "quarantine" => Action::Quarantine,
            "reject" => Action::Reject,
            "tempfail" => Action::Tempfail,
            "discard" => Action::Discard,
            other => {
                return Err(ConfigError::invalid(
                    key,
                    format!(
                        "`{other}` is not one of none, tag, quarantine, reject, tempfail, discard"
                    ),
                ))
            }
        })
    }

    /// How hard the action is on the mail, for "the milder of two":
    /// delivered untouched, delivered tagged, held, deferred, refused,
    /// dropped.
    pub fn severity(self) -> u8 {
        match self {
            Action::None => 0,
            Action::Tag => 1,
            Action::Quarantine => 2,
            Action::Tempfail => 3,
            Action::Reject => 4,
            Action::Discard => 5,
        }
    }

    /// The name used in TOML.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::Tag => "tag",
            Action::Quarantine => "quarantine",
            Action::Reject => "reject",
            Action::Tempfail => "tempfail",
            Action::Discard => "discard",
        }
    }
}

section! {
    /// Action per verdict level.
    pub struct PolicyConfig in RawPolicy as "policy" {
        /// Clean mail: `None` (no header, the default) or `Tag` (an
        /// `X-Bulkwatch: clean` header, for downstream filters).
        clean: Action = Action::None,
            file clean: String,
            read |k, v| match Action::parse(k, &v)? {
                a @ (Action::None | Action::Tag) => Ok(a),
                _ => Err(ConfigError::invalid(
                    k,
                    format!("`{v}` is not one of none, tag (clean mail is always delivered)"),
                )),
            },
            write |a| Some(a.as_str().to_owned());
        suspect: Action = Action::Tag,
            file suspect: String,
            read |k, v| Action::parse(k, &v),
            write |a| Some(a.as_str().to_owned());
        bulk: Action = Action::Tag,
            file bulk: String,
            read |k, v| Action::parse(k, &v),
            write |a| Some(a.as_str().to_owned());
        /// Mailing-list mail (`Verdict::list`) at suspect or bulk gets the
        /// milder of this and its level's action: none, tag (the default) or
        /// quarantine, never refused or dropped. A list that gets a refusal
        /// counts a bounce against the subscriber and unsubscribes them
        /// after a few; a discard loses the post unseen. Anyone can write
        /// list headers, so the class must not be a way to hurt real lists
        /// either.
        list: Action = Action::Tag,
            file list: String,
            read |k, v| match Action::parse(k, &v)? {
                a @ (Action::None | Action::Tag | Action::Quarantine) => Ok(a),
                _ => Err(ConfigError::invalid(
                    k,
                    format!(
                        "`{v}` is not one of none, tag, quarantine (list mail is never refused or dropped)"
                    ),
                )),
            },
            write |a| Some(a.as_str().to_owned());
        /// The site's own mail (`[own]`) at suspect or bulk on its own
        /// tally gets the milder of this and its level's action. The
        /// default, none, adds no header and never holds, refuses or drops
        /// it: a campaign from inside is logged and alerted
        /// (`own.alert`); set tag, quarantine or reject to act on it.
        own: Action = Action::None,
            file own: String,
            read |k, v| Action::parse(k, &v),
            write |a| Some(a.as_str().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            PolicyConfig::try_from(RawPolicy::default()).unwrap(),
            PolicyConfig::default()
        );
    }

    #[test]
    fn unknown_actions_are_refused_naming_their_key() {
        let names = "is not one of none, tag, quarantine, reject, tempfail, discard";
        for (raw, key, message) in [
            (
                RawPolicy {
                    suspect: Some("block".to_owned()),
                    ..RawPolicy::default()
                },
                "policy.suspect",
                format!("`block` {names}"),
            ),
            (
                RawPolicy {
                    bulk: Some("Reject".to_owned()),
                    ..RawPolicy::default()
                },
                "policy.bulk",
                format!("`Reject` {names}"),
            ),
        ] {
            assert_eq!(
                refusal(PolicyConfig::try_from(raw)),
                (key.to_owned(), message)
            );
        }
    }

    #[test]
    fn clean_mail_is_tagged_or_left_alone_never_more() {
        for (v, want) in [("none", Action::None), ("tag", Action::Tag)] {
            let raw = RawPolicy {
                clean: Some(v.to_owned()),
                ..RawPolicy::default()
            };
            assert_eq!(
                PolicyConfig::try_from(raw).map(|c| c.clean).ok(),
                Some(want)
            );
        }
        for v in ["reject", "quarantine", "discard", "tempfail"] {
            let raw = RawPolicy {
                clean: Some(v.to_owned()),
                ..RawPolicy::default()
            };
            assert_eq!(
                refusal(PolicyConfig::try_from(raw)),
                (
                    "policy.clean".to_owned(),
                    format!("`{v}` is not one of none, tag (clean mail is always delivered)")
                )
            );
        }
    }

    #[test]
    fn list_mail_is_tagged_held_or_left_alone_never_refused() {
        assert_eq!(PolicyConfig::default().list, Action::Tag);
        for (v, want) in [
            ("none", Action::None),
            ("tag", Action::Tag),
            ("quarantine", Action::Quarantine),
        ] {
            let raw = RawPolicy {
                list: Some(v.to_owned()),
                ..RawPolicy::default()
            };
            assert_eq!(PolicyConfig::try_from(raw).map(|c| c.list).ok(), Some(want));
        }
        for v in ["reject", "tempfail", "discard"] {
            let raw = RawPolicy {
                list: Some(v.to_owned()),
                ..RawPolicy::default()
            };
            assert_eq!(
                refusal(PolicyConfig::try_from(raw)),
                (
                    "policy.list".to_owned(),
                    format!("`{v}` is not one of none, tag, quarantine (list mail is never refused or dropped)")
                )
            );
        }
    }

    #[test]
    fn every_action_name_round_trips() {
        for action in [
            Action::None,
            Action::Tag,
            Action::Quarantine,
            Action::Reject,
            Action::Tempfail,
            Action::Discard,
        ] {
            let c = PolicyConfig::try_from(RawPolicy {
                suspect: Some(action.as_str().to_owned()),
                bulk: Some(action.as_str().to_owned()),
                ..RawPolicy::default()
            })
            .unwrap();
            assert_eq!((c.suspect, c.bulk), (action, action));
        }
    }
}
