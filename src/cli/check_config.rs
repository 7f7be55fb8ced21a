//! `bulkwatch check-config [FILE]`: validate and print the effective settings
//! as TOML, with the file's key names and units. Suspicious values that
//! load all the same are warned on stderr with their lines.

use std::path::PathBuf;

use clap::Args;

use super::{print_stdout, CliError, Exit};
use crate::config::Config;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check (default: /etc/bulkwatch/bulkwatch.toml, the
    /// file `serve` reads without --config).
    pub file: Option<PathBuf>,
    /// Print nothing when the file is valid (warnings still go to
    /// stderr): for scripts and the systemd unit's ExecReload.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: CheckConfigArgs) -> Result<Exit, CliError> {
    let file = args
        .file
        .unwrap_or_else(|| PathBuf::from(super::SYSTEM_CONFIG));
    let (cfg, warnings) = Config::load_with_warnings(&file)?;
    if let Some(w) = super::keygen::public_key_warning(&cfg) {
        eprintln!("bulkwatch: warning: {w}");
    }
    for w in warnings {
        eprintln!("bulkwatch: warning: {w}");
    }
    if args.quiet {
        return Ok(Exit::Ok);
    }
    print_stdout(&format!(
        "# {}: OK. Effective settings (defaults filled in), as TOML that\n\
         # reads back as the same configuration:\n{}",
        file.display(),
        cfg.to_toml()
    ))?;
    Ok(Exit::Ok)
}
