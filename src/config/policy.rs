//! `[policy]`: the action taken for each verdict level.

use super::raw::RawPolicy;
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

/// Action per verdict level.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    pub suspect: Action,
    pub bulk: Action,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            suspect: Action::Tag,
            bulk: Action::Tag,
        }
    }
}

impl TryFrom<RawPolicy> for PolicyConfig {
    type Error = ConfigError;

    fn try_from(raw: RawPolicy) -> Result<Self, ConfigError> {
        let RawPolicy { suspect, bulk } = raw;
        let mut c = PolicyConfig::default();
        if let Some(v) = suspect {
            c.suspect = Action::parse("policy.suspect", &v)?;
        }
        if let Some(v) = bulk {
            c.bulk = Action::parse("policy.bulk", &v)?;
        }
        Ok(c)
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
                    bulk: None,
                },
                "policy.suspect",
                format!("`block` {names}"),
            ),
            (
                RawPolicy {
                    suspect: None,
                    bulk: Some("Reject".to_owned()),
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
            })
            .unwrap();
            assert_eq!((c.suspect, c.bulk), (action, action));
        }
    }
}
