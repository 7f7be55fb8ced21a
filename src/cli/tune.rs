//! `bulkwatch tune MBOX --truth LABELS.tsv`: sweep and propose thresholds.

use std::path::PathBuf;

use clap::Args;

use super::{CliError, Outcome};

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long)]
    pub truth: PathBuf,
    #[arg(required = true)]
    pub mbox: Vec<PathBuf>,
}

pub fn run(_args: TuneArgs) -> Result<Outcome, CliError> {
    Err(CliError::Usage("tune: not yet".into()))
}
