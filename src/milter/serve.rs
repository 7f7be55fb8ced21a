//! `bulkwatch serve`: the daemon around [`crate::milter::run`].
//!
//! Start: load the configuration (built-in defaults without `--config`),
//! load the snapshot from `state_dir/state.bin` (a corrupt or incompatible
//! one is moved aside to `state.bin.corrupt-<unixtime>` and the daemon
//! starts empty), bind the milter socket (a stale Unix socket is removed
//! only if it really is a socket; mode, owner and group are applied), start
//! the metrics listener, the snapshot timer and the alert task, then tell
//! systemd READY=1.
//!
//! Signals: SIGHUP reloads the file (RELOADING=1 … READY=1); an invalid file
//! is refused with its file and key and the running configuration stays.
//! SIGTERM or SIGINT: STOPPING=1, stop accepting, let callbacks in progress
//! finish, write the snapshot, remove the Unix socket, exit 0.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use sd_notify::NotifyState;
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::cli::{CliError, Outcome};
use crate::config::{Config, MilterConfig, SocketSpec};
use crate::engine::Engine;
use crate::milter::{alert, metrics, unix_now, AnyListener, NoDelayListener, State};
use crate::snapshot::{self, FILE_NAME};
use crate::store::Shared;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Configuration file (TOML); built-in defaults without it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // try_init: a subscriber set already (tests) is fine.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

fn other(
    what: impl Into<String>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> CliError {
    CliError::Other {
        what: what.into(),
        source: Box::new(source),
    }
}

/// Error and causes on one line, for log fields.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

fn notify(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        warn!(error = %e, "sd_notify failed");
    }
}

/// Runs the daemon until SIGTERM or SIGINT.
///
/// # Errors
/// Bad configuration, a socket that cannot be bound, or an unwritable
/// state directory.
pub fn run(args: ServeArgs) -> Result<Outcome, CliError> {
    init_tracing(args.log_format);
    let cfg = crate::cli::load_config(args.config.as_ref())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| other("cannot start the async runtime", e))?;
    rt.block_on(serve(args.config, cfg))
}

/// Loads `dir/state.bin`, or starts empty (moving a bad file aside).
pub fn load_state(dir: &Path, cfg: &Config) -> (Engine, Option<u64>) {
    // Temporary files of writes cut short (kill -9, power loss) are never
    // loaded; remove them so they do not pile up.
    if let Ok(rd) = fs::read_dir(dir) {
        let prefix = format!(".{FILE_NAME}.tmp-");
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let path = dir.join(FILE_NAME);
    if !path.exists() {
        info!(path = %path.display(), "no snapshot, starting empty");
        return (Engine::new(cfg), None);
    }
    match snapshot::load(&path, cfg) {
        Ok((engine, loaded)) => {
            let s = engine.stats();
            info!(
                path = %path.display(),
                saved_at = loaded.saved_at,
                window_entries = s.window_entries,
                campaigns = s.campaigns,
                "snapshot loaded"
            );
            if !loaded.bands_restored {
                warn!("the saved band tables do not fit this configuration: their items were skipped (the MinHash stage refills as mail arrives)");
            }
            (engine, Some(loaded.saved_at))
        }
        Err(e) => {
            match snapshot::move_aside(&path, unix_now()) {
                Ok(to) => {
                    warn!(path = %path.display(), moved_to = %to.display(), error = %chain(&e), "snapshot unusable, moved aside; starting empty")
                }
                Err(m) => {
                    warn!(path = %path.display(), error = %chain(&e), move_error = %chain(&m), "snapshot unusable and cannot be moved aside; starting empty")
                }
            }
            (Engine::new(cfg), None)
        }
    }
}

/// Looks a user or group name up in `file` (`/etc/passwd`, `/etc/group`):
/// the third field of the line whose first field is `name`. A number is
/// taken as is.
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let text = fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next() == Some(name)).then(|| f.nth(1).and_then(|id| id.parse().ok()))?
    })
}

/// Binds the milter socket.
///
/// # Errors
/// The address is in use, the path exists and is not a socket, or the
/// owner, group or mode cannot be applied.
pub async fn bind(m: &MilterConfig) -> Result<(AnyListener, Option<PathBuf>), CliError> {
    match &m.socket {
        SocketSpec::Inet(addr) => {
            let l = TcpListener::bind(addr)
                .await
                .map_err(|e| other(format!("cannot listen on inet:{addr}"), e))?;
            info!(socket = %format!("inet:{}", l.local_addr().map_or(addr.clone(), |a| a.to_string())), "milter listening");
            Ok((AnyListener::Tcp(NoDelayListener(l)), None))
        }
        SocketSpec::Unix(path) => {
            if let Ok(meta) = fs::symlink_metadata(path) {
                if meta.file_type().is_socket() {
                    fs::remove_file(path).map_err(|e| {
                        other(format!("cannot remove stale socket {}", path.display()), e)
                    })?;
                } else {
                    return Err(CliError::Usage(format!(
                        "{} exists and is not a socket; refusing to replace it",
                        path.display()
                    )));
                }
            }
            let l = UnixListener::bind(path)
                .map_err(|e| other(format!("cannot listen on unix:{}", path.display()), e))?;
            fs::set_permissions(path, fs::Permissions::from_mode(m.socket_mode))
                .map_err(|e| other(format!("cannot set mode of {}", path.display()), e))?;
            if m.socket_owner.is_some() || m.socket_group.is_some() {
                let uid = match &m.socket_owner {
                    Some(o) => Some(lookup_id("/etc/passwd", o).ok_or_else(|| {
                        CliError::Usage(format!("milter.socket_owner: unknown user `{o}`"))
                    })?),
                    None => None,
                };
                let gid = match &m.socket_group {
                    Some(g) => Some(lookup_id("/etc/group", g).ok_or_else(|| {
                        CliError::Usage(format!("milter.socket_group: unknown group `{g}`"))
                    })?),
                    None => None,
                };
                std::os::unix::fs::chown(path, uid, gid)
                    .map_err(|e| other(format!("cannot chown {}", path.display()), e))?;
            }
            info!(socket = %format!("unix:{}", path.display()), "milter listening");
            Ok((AnyListener::Unix(l), Some(path.clone())))
        }
    }
}

/// Which engine a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotOf {
    /// The local engine ([`State::snapshot_bytes`]): the periodic snapshots.
    Local,
    /// The engine that holds the daemon's view
    /// ([`State::view_snapshot_bytes`]): the snapshot at shutdown.
    View,
}

/// Writes a snapshot of `state` into `dir`: encoded under the engine's
/// lock, written on the blocking pool.
///
/// # Errors
/// The file could not be written; the previous snapshot is intact.
pub async fn write_snapshot(
    state: &State,
    dir: &Path,
    of: SnapshotOf,
) -> Result<PathBuf, snapshot::SnapshotError> {
    let bytes = match of {
        SnapshotOf::Local => state.snapshot_bytes(),
        SnapshotOf::View => state.view_snapshot_bytes(),
    };
    let dir = dir.to_owned();
    let written =
        tokio::task::spawn_blocking(move || snapshot::write_atomic(&dir, FILE_NAME, &bytes))
            .await
            .map_err(|e| snapshot::SnapshotError::Invalid {
                what: format!("snapshot task failed: {e}"),
            })??;
    state.metrics.snapshot_written(unix_now());
    Ok(written)
}

async fn snapshot_loop(state: Arc<State>, dir: PathBuf) {
    loop {
        let every = state.config().state.snapshot_interval;
        tokio::time::sleep(every).await;
        match write_snapshot(&state, &dir, SnapshotOf::Local).await {
            Ok(p) => tracing::debug!(path = %p.display(), "snapshot written"),
            Err(e) => {
                state.metrics.record_error();
                error!(error = %chain(&e), "snapshot failed; previous snapshot kept, still serving");
            }
        }
    }
}

async fn reload_loop(state: Arc<State>, path: Option<PathBuf>, mut hup: Signal) {
    while hup.recv().await.is_some() {
        let mut states = vec![NotifyState::Reloading];
        if let Ok(t) = NotifyState::monotonic_usec_now() {
            states.push(t);
        }
        notify(&states);
        match &path {
            None => warn!("SIGHUP: started without --config, nothing to reload"),
            Some(p) => match Config::load(p) {
                Ok(new) => {
                    let keys = state.reload(&new);
                    info!(file = %p.display(), "configuration reloaded");
                    for k in keys {
                        warn!(file = %p.display(), key = k, "restart needed: this key keeps its running value until restart");
                    }
                }
                Err(e) => error!(
                    file = %p.display(),
                    key = e.key().unwrap_or("-"),
                    error = %chain(&e),
                    "reload refused, running configuration kept"
                ),
            },
        }
        notify(&[NotifyState::Ready]);
    }
}

async fn serve(config_path: Option<PathBuf>, cfg: Config) -> Result<Outcome, CliError> {
    let dir = cfg.state.state_dir.clone();
    fs::create_dir_all(&dir).map_err(|source| CliError::Write {
        path: dir.clone(),
        source,
    })?;
    let (engine, saved_at) = load_state(&dir, &cfg);

    let mut state = State::new(engine);
    match Shared::from_config(&cfg) {
        Ok(Some(shared)) => {
            info!(
                urls = ?cfg.store.redis.urls,
                keys = shared.store().key_base(),
                "shared state in redis; the local window is the fallback"
            );
            state = state.with_shared(shared);
        }
        Ok(None) => {}
        Err(e) => return Err(other("cannot set up the redis store", e)),
    }
    let mut tasks = Vec::new();
    if !cfg.alerts.to.is_empty() {
        let (tx, rx) = mpsc::channel(alert::QUEUE);
        state = state.with_alerts(tx);
        tasks.push(tokio::spawn(alert::run(cfg.alerts.clone(), rx)));
    }
    if let Some(t) = saved_at {
        state.metrics.snapshot_written(t);
    }
    let state = Arc::new(state);

    let (listener, unix_path) = bind(&cfg.milter).await?;
    if let Some(addr) = &cfg.metrics.listen {
        let l = TcpListener::bind(addr)
            .await
            .map_err(|e| other(format!("cannot listen for metrics on {addr}"), e))?;
        info!(listen = %addr, "metrics listening");
        tasks.push(tokio::spawn(metrics::serve(l, Arc::clone(&state))));
    }
    tasks.push(tokio::spawn(snapshot_loop(Arc::clone(&state), dir.clone())));
    let sig = |k: SignalKind| signal(k).map_err(|e| other("cannot install signal handler", e));
    let hup = sig(SignalKind::hangup())?;
    let mut term = sig(SignalKind::terminate())?;
    let mut int = sig(SignalKind::interrupt())?;
    tasks.push(tokio::spawn(reload_loop(
        Arc::clone(&state),
        config_path,
        hup,
    )));

    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => info!("SIGTERM: stopping"),
            _ = int.recv() => info!("SIGINT: stopping"),
        }
        notify(&[NotifyState::Stopping]);
    };
    notify(&[NotifyState::Ready]);
    info!(version = env!("CARGO_PKG_VERSION"), "bulkwatch serving");
    let served = crate::milter::run(listener, Arc::clone(&state), shutdown).await;
    for t in &tasks {
        t.abort();
    }
    match write_snapshot(&state, &dir, SnapshotOf::View).await {
        Ok(p) => info!(path = %p.display(), "snapshot written at shutdown"),
        Err(e) => error!(error = %chain(&e), "snapshot at shutdown failed; previous snapshot kept"),
    }
    if let Some(p) = unix_path {
        let _ = fs::remove_file(p);
    }
    served.map_err(|e| other("milter listener failed", e))?;
    info!("stopped");
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_resolve_from_numbers_and_names() {
        assert_eq!(lookup_id("/nonexistent", "42"), Some(42));
        assert_eq!(lookup_id("/etc/passwd", "root"), Some(0));
        assert_eq!(lookup_id("/etc/passwd", "no-such-user-here"), None);
    }

    #[test]
    fn bad_snapshot_is_moved_aside_and_engine_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(FILE_NAME), b"garbage").unwrap();
        fs::write(dir.path().join(".state.bin.tmp-1-0"), b"half").unwrap();
        let (e, saved) = load_state(dir.path(), &Config::default());
        assert_eq!(saved, None);
        assert_eq!(e.stats().window_entries, 0);
        assert!(!dir.path().join(FILE_NAME).exists());
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with("state.bin.corrupt-")),
            "{names:?}"
        );
    }
}
