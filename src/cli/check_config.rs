//! `bulkwatch check-config [FILE]`: validate and print the effective settings
//! as TOML, with the file's key names and units. Suspicious values that
//! load all the same are warned on stderr with their lines. The secrets
//! (`fingerprint.hash_key`, `metrics.control_token`) are masked unless
//! `--show-secrets` asks for them: the output is pasted into tickets and
//! chats.

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
    /// Print fingerprint.hash_key and metrics.control_token as they are
    /// (masked by default).
    #[arg(long)]
    pub show_secrets: bool,
}

/// The keys whose values `check-config` masks.
const SECRETS: &[&str] = &["hash_key", "control_token"];

/// `text` (TOML from `Config::to_toml`) with the value of every secret
/// key replaced by a placeholder that says it is set.
fn mask_secrets(text: &str) -> String {
    text.lines()
        .map(|line| {
            let key = line.split(" = ").next().unwrap_or("");
            if SECRETS.contains(&key) && line.contains(" = ") {
                format!("{key} = \"<set, not shown: --show-secrets>\"")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
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
    let (text, note) = if args.show_secrets {
        (cfg.to_toml(), "")
    } else {
        (
            mask_secrets(&cfg.to_toml()),
            " (secrets masked:\n# add --show-secrets to print them)",
        )
    };
    print_stdout(&format!(
        "# {}: OK. Effective settings (defaults filled in), as TOML that\n\
         # reads back as the same configuration{note}:\n{text}",
        file.display(),
    ))?;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_the_rest_is_kept() {
        let mut cfg = Config::default();
        cfg.metrics.control_token = Some("a-token-of-twenty-chars-or-more".into());
        let text = cfg.to_toml();
        assert!(text.contains("a-token-of-twenty-chars-or-more"));
        let masked = mask_secrets(&text);
        assert!(
            !masked.contains("a-token-of-twenty-chars-or-more"),
            "{masked}"
        );
        let key = crate::config::format_hash_key(cfg.fingerprint.hash_key);
        assert!(text.contains(&key) && !masked.contains(&key), "{masked}");
        assert_eq!(masked.matches("<set, not shown").count(), 2);
        assert_eq!(masked.lines().count(), text.lines().count());
    }
}
