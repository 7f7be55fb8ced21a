//! The command line: `serve`, `replay`, `scan`, `tune`, `check-config`.
//!
//! Each command lives in its own file with an args struct and a `run`
//! function returning an [`Exit`] or a [`CliError`]. Exit
//! codes: 0 ok, 1 bulk found (`scan`, `replay`), 2 error.

pub mod campaigns;
pub mod check_config;
pub mod keygen;
pub mod replay;
pub mod report;
pub mod scan;
pub mod serve;
pub mod tune;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::config::{Config, ConfigError};

/// Errors a command reports before exiting with status 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("configuration error")]
    Config(#[from] ConfigError),
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The command line asks for something impossible (a bad value).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// The daemon refused a request (`bulkwatch campaigns`), saying why.
    #[error("the daemon says: {error}")]
    Refused { error: String },
    /// `serve` cannot start where it was asked to.
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("cannot start the workers that read mail")]
    Workers(#[source] crate::worker::Failure),
    #[error("the message could not be read")]
    Unread(#[source] crate::worker::Failure),
    /// A Postfix tool (`bulkwatch campaigns held|release|delete-held`).
    #[error("Postfix's hold queue")]
    Postfix(#[from] crate::postfix::PostfixError),
    #[error("{what}")]
    Other {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// A command line that asks for something impossible.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("the message has no X-Bulkwatch-Copy header: bulkwatch did not deliver it with zero-hour on")]
    NoCopyHeader,
    #[error("a campaign id is one word")]
    CampaignIdOneWord,
    #[error("`{0}` is not a domain name (letters, digits, '-', '_', two labels at least)")]
    NotADomain(String),
    #[error("{}: line {line} has too few columns", .path.display())]
    TruthColumns { path: PathBuf, line: usize },
    #[error("{}: no message of the input is labelled", .0.display())]
    NoLabels(PathBuf),
    #[error("--radius values must be 0..=7")]
    Radius,
    #[error("--bands values must be 0..=16")]
    Bands,
    #[error("--corroborating values must be 0 (off) or 2..=256")]
    Corroborating,
    #[error("--thresholds values must be 1..=1000000000")]
    Thresholds,
    #[error("--bulk-threshold must be at least 1")]
    BulkThreshold,
    #[error("--rate must be a positive number")]
    Rate,
}

/// Why `serve` refused to start, besides its configuration.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "state directory {dir} is in use by another bulkwatch (pid {pid}, lock file {lock}); \
         refusing to start a second instance on it"
    )]
    StateDirInUse {
        dir: PathBuf,
        lock: PathBuf,
        /// The holder's pid as its lock file says, or "unknown".
        pid: String,
    },
    #[error(
        "{lock} is not a regular file (or was replaced while opened); refusing to use it as the \
         lock of state directory {dir}"
    )]
    LockNotRegular { dir: PathBuf, lock: PathBuf },
    #[error("another process is listening on unix:{}; refusing to take its socket", .0.display())]
    SocketInUse(PathBuf),
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    #[error("milter.socket_owner: unknown user `{user}`")]
    UnknownUser { user: String },
    #[error("milter.socket_group: unknown group `{group}`")]
    UnknownGroup { group: String },
}

/// What a command ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    BulkFound,
}

#[derive(Debug, Parser)]
#[command(name = "bulkwatch", version, about = "Catch bulk, near-identical mail campaigns as they stream in", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the milter daemon for Postfix.
    Serve(crate::cli::serve::ServeArgs),
    /// Feed mbox files or Maildirs through the engine and report what it would flag.
    Replay(replay::ReplayArgs),
    /// Explain the fingerprint and verdict of one message.
    Scan(scan::ScanArgs),
    /// Sweep radius and thresholds over a labelled mbox and propose values.
    Tune(tune::TuneArgs),
    /// Validate a configuration file and print the effective settings.
    CheckConfig(check_config::CheckConfigArgs),
    /// Print a new random fingerprint key (the built-in one is public).
    Keygen(keygen::KeygenArgs),
    /// List, show, allow or forget the running daemon's campaigns.
    Campaigns(campaigns::CampaignsArgs),
    /// Report the message on standard input as spam or not spam for a
    /// user (Dovecot's Junk button: docs/admin/zero-hour.md).
    Report(report::ReportArgs),
    /// A worker process that reads mail for the daemon (started by it,
    /// never by hand: `crate::worker`).
    #[command(hide = true)]
    Worker,
}

impl From<crate::replay::ReplayError> for CliError {
    fn from(e: crate::replay::ReplayError) -> CliError {
        match e {
            crate::replay::ReplayError::Input { path, source } => CliError::Read { path, source },
            crate::replay::ReplayError::Workers(f) => CliError::Workers(f),
            crate::replay::ReplayError::Spill(source) => CliError::Write {
                path: std::env::temp_dir(),
                source,
            },
        }
    }
}

/// How the commands that read mail (`replay`, `scan`, `tune`) read it: in
/// worker processes of this binary, as the daemon does ([`crate::worker`]).
///
/// # Errors
/// This program's path cannot be found.
pub fn read_in_workers() -> Result<crate::replay::ReadIn, CliError> {
    let program = crate::worker::Pool::program().map_err(|e| {
        CliError::Workers(crate::worker::Failure::Start(
            crate::worker::StartFailure::Program(e),
        ))
    })?;
    Ok(crate::replay::ReadIn::Workers {
        program,
        hooks: crate::worker::Hooks::from_env(),
    })
}

/// The file every command reads when no `--config` is given, if it
/// exists: where the Debian package installs the configuration.
pub const SYSTEM_CONFIG: &str = "/etc/bulkwatch/bulkwatch.toml";

/// The environment variable that names another file than
/// [`SYSTEM_CONFIG`] for commands given no `--config` (a container's
/// mounted file; tests, which must never read a host's /etc).
pub const CONFIG_ENV: &str = "BULKWATCH_CONFIG";

/// [`CONFIG_ENV`]'s file when set and not empty, else [`SYSTEM_CONFIG`].
pub fn system_config() -> PathBuf {
    std::env::var_os(CONFIG_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(SYSTEM_CONFIG), PathBuf::from)
}

/// The file a command runs on: `given` (`--config`), else `system` when
/// it exists, else none (the built-in defaults). A `system` path whose
/// existence cannot be checked (a directory that may not be searched)
/// counts as existing, so reading it fails and says why instead of the
/// command silently running on other settings.
pub fn config_file(given: Option<&PathBuf>, system: &Path) -> Option<PathBuf> {
    given
        .cloned()
        .or_else(|| (system.try_exists().unwrap_or(true)).then(|| system.to_owned()))
}

/// Loads `--config`'s file, else [`system_config`]'s when it exists, else
/// the built-in defaults.
///
/// # Errors
/// The file cannot be read or is invalid.
pub fn load_config(given: Option<&PathBuf>) -> Result<Config, CliError> {
    match config_file(given, &system_config()) {
        Some(p) => Ok(Config::load(&p)?),
        None => Ok(Config::default()),
    }
}

/// Runs the parsed command line.
///
/// # Errors
/// Whatever the command reports; `main` prints it with its causes.
///
/// Standard output closed by its reader (`bulkwatch scan msg | head -3`)
/// ends the command quietly, as it ends `cat`.
pub fn run(cli: Cli) -> Result<Exit, CliError> {
    let res = match cli.command {
        Command::Serve(a) => crate::cli::serve::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Scan(a) => scan::run(a),
        Command::Tune(a) => tune::run(a),
        Command::CheckConfig(a) => check_config::run(a),
        Command::Keygen(a) => keygen::run(a),
        Command::Campaigns(a) => campaigns::run(a),
        Command::Report(a) => report::run(a),
        Command::Worker => {
            // (main runs the worker before dispatching here.)
            crate::worker::child::run();
            Ok(Exit::Ok)
        }
    };
    match res {
        Err(CliError::Write { path, source })
            if path.as_os_str() == "stdout" && source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(Exit::Ok)
        }
        other => other,
    }
}

/// Writes `text` to standard output and flushes it.
///
/// # Errors
/// [`CliError::Write`] when standard output cannot take it (a closed pipe
/// included; [`run`] ends quietly on that one).
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| CliError::Write {
            path: "stdout".into(),
            source,
        })
}

/// An error and its causes, outermost first, leaving out a cause whose
/// text ends the line before it (some errors print their cause already,
/// as `StoreError::Redis` does).
pub fn causes(err: &dyn std::error::Error) -> Vec<String> {
    let mut lines = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !lines.last().is_some_and(|l| l.ends_with(&text)) {
            lines.push(text);
        }
        source = s.source();
    }
    lines
}

/// Prints an error and each of its causes on its own line, to stderr.
pub fn print_error(err: &dyn std::error::Error) {
    let mut lines = causes(err).into_iter();
    if let Some(first) = lines.next() {
        eprintln!("bulkwatch: error: {first}");
    }
    for cause in lines {
        eprintln!("  caused by: {cause}");
    }
}

#[cfg(test)]
mod tests {
    use super::{causes, config_file};
    use std::path::PathBuf;

    #[test]
    fn without_config_the_system_file_is_used_when_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let system = dir.path().join("bulkwatch.toml");
        let given = PathBuf::from("/elsewhere/site.toml");
        // Absent: the built-in defaults.
        assert_eq!(config_file(None, &system), None);
        std::fs::write(&system, "").unwrap();
        assert_eq!(config_file(None, &system), Some(system.clone()));
        // --config wins over it.
        assert_eq!(config_file(Some(&given), &system), Some(given));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Io;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("redis: connect: {0}")]
        Prints(#[source] Io),
        #[error("redis: connect")]
        Hides(#[source] Io),
    }

    #[test]
    fn a_cause_is_printed_once() {
        assert_eq!(
            causes(&Outer::Prints(Io)),
            vec!["redis: connect: connection refused"]
        );
        assert_eq!(
            causes(&Outer::Hides(Io)),
            vec!["redis: connect", "connection refused"]
        );
    }
}
