//! `bulkwatch scan [FILE|-]`: one message, explained.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use super::{load_config, CliError, Outcome};
use crate::engine::{analyze, Envelope, UnixSecs};
use crate::simhash::hex;
use crate::verdict::Level;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Configuration file (default: built-in defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Judge the message against a daemon's state snapshot file.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Characters of normalized text to show.
    #[arg(long, default_value_t = 400)]
    pub show: usize,
    /// The message (RFC 5322); `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

pub fn run(args: ScanArgs) -> Result<Outcome, CliError> {
    let cfg = load_config(args.config.as_ref())?;
    let mut raw = Vec::new();
    match args.file.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            raw = std::fs::read(p).map_err(|source| CliError::Read {
                path: p.clone(),
                source,
            })?;
        }
        None => {
            std::io::stdin()
                .take(cfg.scan.max_parse_bytes as u64)
                .read_to_end(&mut raw)
                .map_err(|source| CliError::Read {
                    path: "stdin".into(),
                    source,
                })?;
        }
    }
    let env = Envelope::default();
    let a = analyze(&raw, &env, &cfg);
    let shown: String = a.normalized.text.chars().take(args.show).collect();
    println!("message-id:  {}", a.message_id.as_deref().unwrap_or("-"));
    println!("subject:     {}", a.subject.as_deref().unwrap_or("-"));
    println!(
        "features:    {} (min_features {})",
        a.features, cfg.fingerprint.min_features
    );
    println!("tokens:      {}", a.normalized.tokens);
    match &a.fingerprint {
        Some(fp) => {
            println!("simhash:     {:016x}", fp.simhash);
            println!("sha256:      {}", hex(&fp.exact));
            println!("version:     {}", fp.version);
        }
        None => println!("simhash:     - (message could not be parsed)"),
    }
    println!(
        "normalized:\n{}{}",
        shown,
        if a.normalized.text.chars().count() > args.show {
            "\n[...]"
        } else {
            ""
        }
    );
    if let Some(state) = &args.state {
        let mut engine =
            crate::snapshot::load_engine(state, &cfg).map_err(|e| CliError::Other {
                what: format!("cannot use state {}", state.display()),
                source: Box::new(e),
            })?;
        let now = engine.latest_time().unwrap_or(UnixSecs(0));
        let v = engine.decide(&a, &env, now);
        println!("verdict:     {}", v.header_value());
        return Ok(if v.level == Level::Bulk {
            Outcome::BulkFound
        } else {
            Outcome::Ok
        });
    }
    Ok(Outcome::Ok)
}
