//! `bulkwatch check-config FILE`: validate and print the effective settings
//! as TOML, with the file's key names and units.

use std::path::PathBuf;

use clap::Args;

use super::{print_stdout, CliError, Exit};
use crate::config::Config;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check.
    pub file: PathBuf,
    /// Print nothing when the file is valid (warnings still go to
    /// stderr): for scripts and the systemd unit's ExecReload.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: CheckConfigArgs) -> Result<Exit, CliError> {
    let cfg = Config::load(&args.file)?;
    if let Some(w) = super::keygen::public_key_warning(&cfg) {
        eprintln!("bulkwatch: warning: {w}");
    }
    if args.quiet {
        return Ok(Exit::Ok);
    }
    print_stdout(&format!(
        "# {}: OK. Effective settings (defaults filled in), as TOML that\n\
         # reads back as the same configuration:\n{}",
        args.file.display(),
        cfg.to_toml()
    ))?;
    Ok(Exit::Ok)
}
