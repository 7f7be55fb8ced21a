//! `[state]`: where and how often the in-memory state is saved.

use std::path::PathBuf;
use std::time::Duration;

use super::section::*;
use super::ConfigError;

section! {
    /// Persistence of the in-memory state.
    pub struct StateConfig in RawState as "state" {
        state_dir: PathBuf = PathBuf::from("state"),
            file state_dir: String,
            read |k, v| if v.is_empty() {
                Err(ConfigError::invalid(k, "must not be empty"))
            } else {
                Ok(PathBuf::from(v))
            },
            write |p| Some(p.display().to_string()),
            restart "the state directory is locked and read at start";
        snapshot_interval: Duration = Duration::from_secs(300),
            file snapshot_interval_secs: u64,
            read |k, v| secs_in(k, v, 1, 86400),
            write to_secs;
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
