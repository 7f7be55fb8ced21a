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
