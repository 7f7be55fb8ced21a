//! `[state]`: where and how often the in-memory state is saved.

use std::path::PathBuf;
use std::time::Duration;

use super::raw::RawState;
use super::{in_range, ConfigError};

/// Persistence of the in-memory state.
#[derive(Debug, Clone, PartialEq)]
pub struct StateConfig {
    pub state_dir: PathBuf,
    pub snapshot_interval: Duration,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            state_dir: PathBuf::from("state"),
            snapshot_interval: Duration::from_secs(300),
        }
    }
}

impl TryFrom<RawState> for StateConfig {
    type Error = ConfigError;

    fn try_from(raw: RawState) -> Result<Self, ConfigError> {
        let RawState {
            state_dir,
            snapshot_interval_secs,
        } = raw;
        let mut c = StateConfig::default();
        if let Some(v) = state_dir {
            if v.is_empty() {
                return Err(ConfigError::invalid("state.state_dir", "must not be empty"));
            }
            c.state_dir = PathBuf::from(v);
        }
        if let Some(v) = snapshot_interval_secs {
            c.snapshot_interval =
                Duration::from_secs(in_range("state.snapshot_interval_secs", v, 1, 86400)?);
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
            StateConfig::try_from(RawState::default()).unwrap(),
            StateConfig::default()
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        for (raw, key, message) in [
            (
                RawState {
                    state_dir: Some(String::new()),
                    snapshot_interval_secs: None,
                },
                "state.state_dir",
                "must not be empty",
            ),
            (
                RawState {
                    state_dir: None,
                    snapshot_interval_secs: Some(0),
                },
                "state.snapshot_interval_secs",
                "0 is outside 1..=86400",
            ),
            (
                RawState {
                    state_dir: None,
                    snapshot_interval_secs: Some(86401),
                },
                "state.snapshot_interval_secs",
                "86401 is outside 1..=86400",
            ),
        ] {
            assert_eq!(
                refusal(StateConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }
}
