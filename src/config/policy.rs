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
