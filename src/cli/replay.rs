//! `bulkwatch replay MBOX...`: what bulkwatch would have flagged.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{load_config, CliError, Exit, UsageError};
use crate::engine::verdict::{LevelKind, SkipReason};
use crate::replay::{replay_files, Clock, Record, ReplayOptions, ReplaySummary};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Jsonl,
}

/// Where each message's time comes from (README, "Commands").
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ClockArg {
    /// One message every 1/rate seconds, in the order of the files.
    Simulated,
    /// Each message's arrival: the date of its topmost Received header
    /// that is not a local hop, else of its topmost Received, else its
    /// Date header; all messages of all files are judged in that order
    /// (every one is read first). A message without a usable date takes
    /// the time of the last dated one before it in its file, else of the
    /// first dated one after it. Always on the memory store.
    Arrival,
}

/// Which store a replay judges on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreArg {
    /// A private memory store of this process: nothing outside it changes.
    Memory,
    /// The store the configuration names: with Redis, the site's shared
    /// state, which the replay reads and writes into (to check it or warm
    /// it; every daemon then counts the mailbox's messages).
    Site,
}

impl From<ClockArg> for Clock {
    fn from(c: ClockArg) -> Clock {
        match c {
            ClockArg::Simulated => Clock::Simulated,
            ClockArg::Arrival => Clock::Arrival,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Configuration file (TOML); without it, /etc/bulkwatch/bulkwatch.toml
    /// when that exists, else the built-in defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output format: a table, or one JSON object per message (see README).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Override thresholds.bulk_threshold.
    #[arg(long)]
    pub bulk_threshold: Option<f64>,
    /// Where each message's time comes from.
    #[arg(long, value_enum, default_value_t = ClockArg::Simulated)]
    pub clock: ClockArg,
    /// The store to judge on: a private memory store (default), or the
    /// configuration's (`site`: with Redis, writes into the site's state).
    #[arg(long, value_enum, default_value_t = StoreArg::Memory)]
    pub store: StoreArg,
    /// Simulated messages per second (default 1: one second apart).
    #[arg(long, default_value_t = 1.0)]
    pub rate: f64,
    /// Threads that analyze messages (0: one per core, at most 8). Messages
    /// are still judged in order: the output does not depend on it.
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Read messages in this process instead of worker processes (for
    /// benchmarks: the cost of the isolation; a message that kills its
    /// parser then ends the replay).
    #[arg(long, hide = true)]
    pub in_process: bool,
    /// mbox files, Maildir directories (the files of cur/ and new/) or `-`
    /// (an mbox on standard input), replayed in the order given (in order
    /// of arrival with --clock arrival).
    #[arg(required = true, value_name = "MBOX|MAILDIR|-")]
    pub mbox: Vec<PathBuf>,
}

pub fn run(args: ReplayArgs) -> Result<Exit, CliError> {
    let mut cfg = load_config(args.config.as_ref())?;
    if let Some(t) = args.bulk_threshold {
        if t.is_nan() || t < 1.0 {
            return Err(UsageError::BulkThreshold.into());
        }
        cfg.thresholds.bulk_threshold = t;
        cfg.thresholds.suspect_threshold = cfg.thresholds.suspect_threshold.min(t);
    }
    if args.rate.is_nan() || args.rate <= 0.0 || args.rate.is_infinite() {
        return Err(UsageError::Rate.into());
    }
    let site_redis = cfg.store.backend == crate::config::StoreBackend::Redis;
    if site_redis && args.store == StoreArg::Memory {
        // A replay on a host whose configuration shares state in Redis
        // must not count a mailbox into the site's live campaigns.
        cfg.store.backend = crate::config::StoreBackend::Memory;
        eprintln!(
            "store: a private memory store (the configuration names Redis; --store site \
             judges on the site's Redis and writes the mailbox into it)"
        );
    }
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| progress_bar(&args.mbox));
    let mut summary = replay_files(
        &args.mbox,
        &cfg,
        ReplayOptions {
            rate: args.rate,
            clock: args.clock.into(),
            jobs: args.jobs,
            read_in: if args.in_process {
                crate::replay::ReadIn::ThisProcess
            } else {
                super::read_in_workers()?
            },
            // Memory bounded by the window, not by the mailbox.
            spill: true,
        },
        |n| {
            if let Some(b) = &bar {
                b.inc(n);
            }
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for f in &summary.failures {
        eprintln!("{} message {}: not judged: {}", f.mbox, f.index, f.cause);
    }
    let redis = cfg.store.backend == crate::config::StoreBackend::Redis;
    if redis && matches!(args.clock, ClockArg::Arrival) {
        eprintln!(
            "--clock arrival: replayed on the memory store; the shared state holds the present, not the mailbox's past"
        );
    } else if redis {
        eprintln!(
            "redis store: {} messages judged by Redis, {} from the local window",
            summary.redis_ok, summary.redis_fallbacks
        );
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let res = match args.format {
        Format::Jsonl => write_jsonl(&mut out, &mut summary),
        Format::Table => write_table(&mut out, &mut summary),
    };
    res.and_then(|_| out.flush())
        .map_err(|source| CliError::Write {
            path: "stdout".into(),
            source,
        })?;
    Ok(if summary.count(LevelKind::Bulk) > 0 {
        Exit::BulkFound
    } else {
        Exit::Ok
    })
}

/// The JSON object of one record: the jsonl contract (docs/admin/jsonl.md).
pub fn record_json(r: &Record) -> serde_json::Value {
    serde_json::json!({
        "n": r.n,
        "message_id": r.message_id,
        "level": r.level.as_str(),
        "campaign": r.campaign.map(|c| c.to_string()),
        "campaign_size": r.campaign_size,
        "exact": r.exact,
        "distance": r.distance,
        "resemblance": r.resemblance.map(|x| (x * 10_000.0).round() / 10_000.0),
        "mbox": r.mbox,
        "index": r.index,
        "time": r.time,
        "features": r.features,
        "skip_reason": r.level.skip_reason().map(SkipReason::as_str),
        "nearest": r.nearest,
        "corroborating": r.corroborating,
        "list": r.list,
        "near_campaign": r.near_campaign.map(|c| c.to_string()),
        "near_distance": r.near_distance,
        "near_resemblance": r.near_resemblance.map(|x| (x * 10_000.0).round() / 10_000.0),
    })
}

fn write_jsonl(out: &mut impl Write, s: &mut ReplaySummary) -> std::io::Result<()> {
    let mut written = Ok(());
    s.each_record(|r| {
        if written.is_ok() {
            written = writeln!(out, "{}", record_json(r));
        }
    })?;
    written
}

/// The first `n` characters of an optional string (empty for `None`).
fn clip(s: Option<&str>, n: usize) -> String {
    s.unwrap_or("").chars().take(n).collect()
}

fn write_table(out: &mut impl Write, s: &mut ReplaySummary) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>6}  {:<8} {:<12} {:>6} {:>4}  subject",
        "n", "level", "campaign", "size", "dist"
    )?;
    let mut written = Ok(());
    s.each_record(|r| {
        if written.is_ok() {
            written = writeln!(
                out,
                "{:>6}  {:<8} {:<12} {:>6} {:>4}  {}",
                r.n,
                r.level.as_str(),
                r.campaign.map_or("-".to_owned(), |c| c.to_string()),
                r.campaign_size,
                r.distance.map_or("-".to_owned(), |d| d.to_string()),
                clip(r.subject.as_deref(), 60)
            );
        }
    })?;
    written?;
    writeln!(out)?;
    writeln!(
        out,
        "messages: {}  clean: {}  suspect: {}  bulk: {}  allowed: {}  skipped: {}  unreadable: {}  failed: {}",
        s.judged(),
        s.count(LevelKind::Clean),
        s.count(LevelKind::Suspect),
        s.count(LevelKind::Bulk),
        s.count(LevelKind::Allowed),
        s.count(LevelKind::Skipped),
        s.read_errors,
        s.failures.len()
    )?;
    if s.copies > 0 {
        writeln!(
            out,
            "copies in other mailboxes (the same Message-ID and text; counted as recipients \
             of the copy judged): {}",
            s.copies
        )?;
    }
    let campaigns = s.campaigns_read()?;
    writeln!(out, "campaigns of 2 or more messages: {}", campaigns.len())?;
    writeln!(
        out,
        "{:<12} {:>6} {:>7} {:>7}  {:<8} sample subject",
        "campaign", "msgs", "first", "last", "level"
    )?;
    for c in campaigns.iter().take(50) {
        writeln!(
            out,
            "{:<12} {:>6} {:>7} {:>7}  {:<8} {}",
            c.id.to_string(),
            c.messages,
            c.first_n,
            c.last_n,
            c.max_level.as_str(),
            clip(c.sample_subject.as_deref(), 60)
        )?;
    }
    Ok(())
}

/// A progress bar on a terminal: messages done, rate, and, when every
/// input can be counted first (not standard input), the total and the time
/// left. Counting reads the inputs once more, far faster than analysing.
fn progress_bar(inputs: &[PathBuf]) -> indicatif::ProgressBar {
    let total = crate::replay::count_messages(inputs);
    let (pb, template) = match total {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{bar:30} {pos}/{len} messages, {rate}, {elapsed} elapsed, {eta} left",
        ),
        None => (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} {pos} messages, {rate}, {elapsed} elapsed",
        ),
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        pb.set_style(style.with_key(
            "rate",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} msg/s", s.per_sec());
            },
        ));
    }
    pb
}
