//! `bulkwatch serve`.
use std::path::PathBuf;

use clap::Args;

use crate::cli::{CliError, Outcome};

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn run(_args: ServeArgs) -> Result<Outcome, CliError> {
    Err(CliError::Usage("serve: not yet".into()))
}
