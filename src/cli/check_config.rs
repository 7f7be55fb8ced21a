//! `bulkwatch check-config FILE`: validate and print the effective settings.

use std::path::PathBuf;

use clap::Args;

use super::{print_stdout, CliError, Exit};
use crate::config::Config;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check.
    pub file: PathBuf,
}

pub fn run(args: CheckConfigArgs) -> Result<Exit, CliError> {
    let cfg = Config::load(&args.file)?;
    if let Some(w) = super::keygen::public_key_warning(&cfg) {
        eprintln!("bulkwatch: warning: {w}");
    }
    print_stdout(&format!(
        "# {}: OK. Effective settings (defaults filled in):\n{cfg:#?}\n",
        args.file.display()
    ))?;
    Ok(Exit::Ok)
}
