//! State snapshots.
use std::path::Path;

use crate::config::Config;
use crate::engine::Engine;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not yet")]
    NotYet,
}

pub fn load_engine(_p: &Path, _c: &Config) -> Result<Engine, SnapshotError> {
    Err(SnapshotError::NotYet)
}
