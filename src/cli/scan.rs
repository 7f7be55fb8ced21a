//! `bulkwatch scan [FILE|-]`: one message, explained.

use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use super::{load_config, print_stdout, CliError, Exit};
use crate::config::Config;
use crate::engine::simhash::hex;
use crate::engine::verdict::{Level, Verdict};
use crate::engine::{analyze, fingerprint, Analysis, Envelope, UnixSecs};

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Configuration file (TOML); without it, /etc/bulkwatch/bulkwatch.toml
    /// when that exists, else the built-in defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Judge the message against a daemon's state snapshot file.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Characters of normalized text to show: the text as the
    /// fingerprints read it (lower case, signs and digits that stand for
    /// letters read as letters, and every `l` as `i`, since `1` stands
    /// for both).
    #[arg(long, default_value_t = 400)]
    pub show: usize,
    /// The message (RFC 5322); `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

pub fn run(args: ScanArgs) -> Result<Exit, CliError> {
    let cfg = load_config(args.config.as_ref())?;
    let mut raw = Vec::new();
    match args.file.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            // What the parser reads of a message, and one byte more (it
            // then knows the message was cut): a huge file or a device is
            // not read to its end.
            std::fs::File::open(p)
                .and_then(|f| {
                    f.take(cfg.scan.max_parse_bytes as u64 + 1)
                        .read_to_end(&mut raw)
                })
                .map_err(|source| CliError::Read {
                    path: p.clone(),
                    source,
                })?;
        }
        None => {
            std::io::stdin()
                .take(cfg.scan.max_parse_bytes as u64 + 1)
                .read_to_end(&mut raw)
                .map_err(|source| CliError::Read {
                    path: "stdin".into(),
                    source,
                })?;
        }
    }
    let env = Envelope::default();
    // Read in a worker process, as the daemon reads: a message that kills
    // its parser is reported, not a crash of this command.
    let a = match super::read_in_workers()? {
        crate::replay::ReadIn::Workers { program, hooks } => {
            let worker =
                crate::worker::Local::start(&program, &cfg, hooks).map_err(CliError::Workers)?;
            let reading = worker
                .read(&raw, &env.rcpts, cfg.milter.engine_timeout)
                .map_err(CliError::Unread)?;
            fingerprint(reading, &cfg)
        }
        crate::replay::ReadIn::ThisProcess => analyze(&raw, &env, &cfg),
    };
    let verdict = match &args.state {
        Some(state) => {
            let mut engine =
                crate::store::snapshot::load_engine(state, &cfg).map_err(|e| CliError::Other {
                    what: format!("cannot use state {}", state.display()),
                    source: Box::new(e),
                })?;
            let now = engine.latest_time().unwrap_or(UnixSecs(0));
            Some(engine.decide(&a, &env, now))
        }
        None => None,
    };
    // Writing to a String cannot fail.
    let text = render(&a, &cfg, args.show, verdict.as_ref()).unwrap_or_default();
    print_stdout(&text)?;
    Ok(match verdict {
        Some(v) if v.level == Level::Bulk => Exit::BulkFound,
        _ => Exit::Ok,
    })
}

fn render(
    a: &Analysis,
    cfg: &Config,
    show: usize,
    verdict: Option<&Verdict>,
) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    let shown: String = a.normalized.text.chars().take(show).collect();
    writeln!(
        out,
        "message-id:  {}",
        a.message_id.as_deref().unwrap_or("-")
    )?;
    writeln!(out, "subject:     {}", a.subject.as_deref().unwrap_or("-"))?;
    writeln!(
        out,
        "features:    {} (min_features {})",
        a.features, cfg.fingerprint.min_features
    )?;
    writeln!(out, "tokens:      {}", a.normalized.tokens)?;
    match &a.fingerprint {
        Some(fp) => {
            writeln!(out, "simhash:     {:016x}", fp.simhash)?;
            writeln!(out, "sha256:      {}", hex(&fp.exact))?;
            writeln!(out, "version:     {}", fp.version)?;
        }
        None => writeln!(out, "simhash:     - (message could not be parsed)")?,
    }
    writeln!(
        out,
        "normalized:\n{}{}",
        shown,
        if a.normalized.text.chars().count() > show {
            "\n[...]"
        } else {
            ""
        }
    )?;
    if let Some(v) = verdict {
        writeln!(out, "verdict:     {}", v.header_value())?;
        if let Some(m) = v.near_miss {
            writeln!(
                out,
                "near miss:   campaign {} (distance {}, resemblance {:.2}): matched, not joined",
                m.campaign,
                m.distance,
                crate::engine::minhash::jaccard_estimate(m.sketch_diff)
            )?;
        }
    }
    Ok(out)
}
