//! `bulkwatch serve`: the daemon around [`crate::milter::run`].
//!
//! Start: load the configuration (`--config`, else
//! [`crate::cli::system_config`] when it exists, else the built-in
//! defaults; the "bulkwatch serving" line names which),
//! then, in this order:
//! - lock the state directory: an exclusive `flock` on
//!   `state_dir/bulkwatch.lock` ([`LOCK_FILE`]), held for the daemon's
//!   life, with its pid written in the file. A second instance on the same
//!   directory exits with an error naming the holder's pid before it binds
//!   a socket or touches a file, so two daemons never delete each other's
//!   temporary snapshots or overwrite `state.bin` in turn;
//! - check the directory is writable (a probe file written, synced and
//!   removed): a daemon that could never save its state refuses to start,
//!   naming the directory, instead of serving and failing at the first
//!   snapshot;
//! - load the snapshot from `state_dir/state.bin` (a corrupt, incompatible
//!   or refused one — not a regular file, larger than this configuration
//!   can produce, see [`crate::store::snapshot::load`] — is moved aside to
//!   `state.bin.corrupt-<unixtime>` and the daemon starts empty);
//! - bind the milter socket. An existing Unix socket is taken over only if
//!   it is stale: if a connection to it is accepted (or would be, the
//!   backlog being full) another process is listening and the daemon
//!   refuses to start; only a refused connection marks it stale and lets
//!   it be removed. A path that is not a socket is never replaced. Mode,
//!   owner and group are applied;
//! - start the metrics listener, the snapshot timer and the alert task,
//!   then tell systemd READY=1.
//!
//! Signals: SIGHUP reloads the file (RELOADING=1 … READY=1); an invalid file
//! is refused with its file and key and the running configuration stays.
//! SIGTERM or SIGINT: STOPPING=1, stop accepting, let callbacks in progress
//! finish, write the snapshot, remove the Unix socket (only if the path is
//! still the socket this process bound, by device and inode: a socket
//! another process has put there since is left alone), exit 0; if the
//! snapshot at shutdown failed, the error is logged and the exit status is
//! non-zero (2), so a supervisor sees that state was lost.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use sd_notify::NotifyState;
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::cli::{CliError, Exit, StartError};
use crate::config::{Config, MilterConfig, SocketSpec};
use crate::engine::Engine;
use crate::milter::{alert, unix_now, Listener, State};
use crate::store::snapshot::{self, FILE_NAME};
use crate::store::RedisLayer;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
    /// The text lines, without their time, to the local syslog daemon
    /// (`--syslog-socket`, facility `--syslog-facility`, the level as the
    /// priority): for hosts without systemd's journal.
    Syslog,
}

/// The syslog facility of `--log-format syslog`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Facility {
    /// Beside Postfix's lines (mail.log on Debian), as OpenDKIM logs.
    Mail,
    Daemon,
    User,
    Local0,
    Local1,
    Local2,
    Local3,
    Local4,
    Local5,
    Local6,
    Local7,
}

impl Facility {
    /// The facility's name, as syslog.conf writes it.
    pub fn name(self) -> &'static str {
        match self {
            Facility::Mail => "mail",
            Facility::Daemon => "daemon",
            Facility::User => "user",
            Facility::Local0 => "local0",
            Facility::Local1 => "local1",
            Facility::Local2 => "local2",
            Facility::Local3 => "local3",
            Facility::Local4 => "local4",
            Facility::Local5 => "local5",
            Facility::Local6 => "local6",
            Facility::Local7 => "local7",
        }
    }

    /// The facility's code (RFC 5424 section 6.2.1).
    pub fn code(self) -> u8 {
        match self {
            Facility::User => 1,
            Facility::Mail => 2,
            Facility::Daemon => 3,
            Facility::Local0 => 16,
            Facility::Local1 => 17,
            Facility::Local2 => 18,
            Facility::Local3 => 19,
            Facility::Local4 => 20,
            Facility::Local5 => 21,
            Facility::Local6 => 22,
            Facility::Local7 => 23,
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Configuration file (TOML); without it, /etc/bulkwatch/bulkwatch.toml
    /// when that exists, else the built-in defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Log format on stderr, or syslog (to the local syslog daemon; if it
    /// cannot be reached at start, stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The syslog daemon's socket for --log-format syslog.
    #[arg(long, value_name = "PATH", default_value = "/dev/log")]
    pub syslog_socket: PathBuf,
    /// The syslog facility for --log-format syslog: mail puts the verdicts
    /// beside Postfix's lines for the same queue id (mail.log).
    #[arg(long, value_enum, default_value = "mail")]
    pub syslog_facility: Facility,
}

/// Log lines as syslog datagrams (RFC 3164's form, as `logger` sends
/// them): `<PRI>bulkwatch[PID]: LINE`, one datagram per event, the
/// configured facility (mail by default) and the event's level as the
/// severity. A datagram that
/// cannot be sent (the syslog daemon restarting) is sent once more on a
/// new connection, then written to stderr: a log line is never lost
/// silently, and logging never blocks the milter.
#[derive(Clone)]
struct Syslog {
    path: PathBuf,
    facility: u8,
    socket: Arc<std::sync::Mutex<Option<std::os::unix::net::UnixDatagram>>>,
}

/// Longest datagram sent; longer lines are cut (syslog daemons take 8 KiB
/// or less).
const SYSLOG_MAX: usize = 8192;

impl Syslog {
    fn connect(path: &Path) -> io::Result<std::os::unix::net::UnixDatagram> {
        let s = std::os::unix::net::UnixDatagram::unbound()?;
        s.connect(path)?;
        s.set_nonblocking(true)?;
        Ok(s)
    }

    fn open(path: &Path, facility: Facility) -> io::Result<Syslog> {
        Ok(Syslog {
            path: path.to_owned(),
            facility: facility.code(),
            socket: Arc::new(std::sync::Mutex::new(Some(Syslog::connect(path)?))),
        })
    }

    /// The writer of one event at `severity`.
    fn line(&self, severity: u8) -> SyslogLine {
        SyslogLine {
            to: self.clone(),
            severity,
            buf: Vec::new(),
        }
    }

    fn send(&self, severity: u8, line: &[u8]) {
        let mut msg = format!(
            "<{}>bulkwatch[{}]: ",
            self.facility * 8 + severity,
            std::process::id()
        )
        .into_bytes();
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        msg.extend_from_slice(
            line.get(..SYSLOG_MAX.saturating_sub(msg.len()))
                .unwrap_or(line),
        );
        let mut guard = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        for _ in 0..2 {
            if guard.as_ref().is_some_and(|s| s.send(&msg).is_ok()) {
                return;
            }
            *guard = Syslog::connect(&self.path).ok();
        }
        drop(guard);
        let mut err = io::stderr().lock();
        let _ = err.write_all(line);
        let _ = err.write_all(b"\n");
    }
}

/// One event's bytes, sent as one datagram when the formatter is done.
struct SyslogLine {
    to: Syslog,
    severity: u8,
    buf: Vec<u8>,
}

impl Write for SyslogLine {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SyslogLine {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.to.send(self.severity, &self.buf);
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Syslog {
    type Writer = SyslogLine;

    fn make_writer(&'a self) -> SyslogLine {
        self.line(6)
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> SyslogLine {
        let severity = match *meta.level() {
            tracing::Level::ERROR => 3,
            tracing::Level::WARN => 4,
            tracing::Level::INFO => 6,
            _ => 7,
        };
        self.line(severity)
    }
}

fn init_tracing(format: LogFormat, syslog_socket: &Path, facility: Facility) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // The style sheet parser warns (through the `log` crate, which this
    // subscriber forwards) about CSS it skips: that CSS is the sender's, so
    // its warnings would let any sender write to the log.
    let filter = match "simplecss=off".parse() {
        Ok(d) => filter.add_directive(d),
        Err(_) => filter,
    };
    use crate::milter::alert::LogPlace;
    use std::io::IsTerminal;
    if format == LogFormat::Syslog {
        match Syslog::open(syslog_socket, facility) {
            Ok(syslog) => {
                LogPlace::set(LogPlace::Syslog(facility.name()));
                LOGS_ELSEWHERE.store(true, std::sync::atomic::Ordering::Relaxed);
                // try_init: a subscriber set already (tests) is fine.
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(filter)
                    .with_ansi(false)
                    .without_time()
                    .with_writer(syslog)
                    .try_init();
                return;
            }
            Err(e) => eprintln!(
                "bulkwatch: cannot reach the syslog daemon at {}: {e}; logging to stderr",
                syslog_socket.display()
            ),
        }
    }
    // systemd names the journal stream it gave as standard error.
    LogPlace::set(if std::env::var_os("JOURNAL_STREAM").is_some() {
        LogPlace::Journal
    } else {
        LogPlace::Stderr
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // try_init: a subscriber set already (tests) is fine.
    let _ = match format {
        LogFormat::Text | LogFormat::Syslog => builder.try_init(),
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
    crate::cli::causes(e).join(": ")
}

/// `text` on one line, for a log: the TOML parser's errors quote the
/// offending line under a caret over several lines; the quoted line is kept
/// in backticks (it names the key), the caret and frame lines dropped.
fn one_line(text: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let digits = l.trim_start_matches(|c: char| c.is_ascii_digit());
        match digits.trim_start().strip_prefix('|') {
            // `2 | bulk_threshold = "many"`: the quoted source line.
            Some(source) if digits.len() < l.len() => {
                parts.push(format!("`{}`", source.trim()));
            }
            // `|` and `|    ^^^^`: the frame and the caret.
            Some(_) => {}
            None => parts.push(l.to_owned()),
        }
    }
    parts.join(" ")
}

/// Tells the service manager (systemd's `NOTIFY_SOCKET`) the daemon's
/// state. Outside systemd the variable is unset and nothing is sent; set
/// but with no manager listening (inherited from a shell that systemd
/// started), the first failure is logged once, as what it means, and the
/// others not (each stop logged a warning before).
fn notify(states: &[NotifyState<'_>]) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Err(e) = sd_notify::notify(states) {
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            warn!(
                error = %e,
                socket = ?std::env::var_os("NOTIFY_SOCKET"),
                "NOTIFY_SOCKET is set but no service manager answers there: readiness and \
                 stops are not reported to it (said once; harmless outside systemd, where the \
                 variable was inherited)"
            );
        } else {
            tracing::debug!(error = %e, "sd_notify failed");
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT.
///
/// # Errors
/// Bad configuration, a state directory locked by another instance or not
/// writable, a socket that cannot be bound or that another process listens
/// on, or a snapshot at shutdown that could not be written.
pub fn run(args: ServeArgs) -> Result<Exit, CliError> {
    init_tracing(args.log_format, &args.syslog_socket, args.syslog_facility);
    let path = crate::cli::config_file(args.config.as_ref(), &crate::cli::system_config());
    let served = (|| {
        let (cfg, warnings) = match &path {
            Some(p) => Config::load_with_warnings(p)?,
            None => (Config::default(), Vec::new()),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| other("cannot start the async runtime", e))?;
        rt.block_on(serve(path, cfg, warnings))
    })();
    if let Err(e) = &served {
        report_failure(e);
    }
    served
}

/// Whether READY=1 was sent: after it, a failure is one of stopping.
static READY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A daemon that stops on an error says so where its lines go (syslog, the
/// journal: `main` prints it to stderr as well, which a daemon started in
/// the background has not got), and, if it never became ready, tells the
/// supervisor waiting for READY=1 (systemd, `start-stop-daemon
/// --notify-await` in the init script) with ERRNO=, so that the start
/// fails at once, naming the system's error, instead of at a timeout.
fn report_failure(e: &CliError) {
    if LOGS_ELSEWHERE.load(std::sync::atomic::Ordering::Relaxed) {
        error!("cannot go on: {}", crate::cli::causes(e).join(": "));
    }
    if !READY.load(std::sync::atomic::Ordering::Relaxed) {
        notify(&[NotifyState::Errno(errno_of(e))]);
    }
}

/// Whether the log goes somewhere other than stderr (syslog).
static LOGS_ELSEWHERE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The first system error number in `e`'s chain; EINVAL (a bad file, a bad
/// value) when there is none.
fn errno_of(e: &(dyn std::error::Error + 'static)) -> u32 {
    const EINVAL: u32 = 22;
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(code) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return u32::try_from(code).unwrap_or(EINVAL);
        }
        cur = err.source();
    }
    EINVAL
}

/// The lock file in `state_dir`: locked (`flock`, exclusive) by the daemon
/// that uses the directory, holding its pid.
pub const LOCK_FILE: &str = "bulkwatch.lock";

/// The exclusive lock on a state directory, held while this value lives
/// (the kernel drops it when the process ends, however it ends). The file
/// itself stays: removing it at exit would let a starting instance create
/// and lock a new file while another still holds the old, unlinked one.
#[derive(Debug)]
pub struct StateLock {
    _file: fs::File,
}

/// Locks `dir` for this process: see [`LOCK_FILE`].
///
/// # Errors
/// Another process holds the lock (the message names its pid, as written
/// in the file), or the lock file cannot be created or locked (the
/// directory is not writable, or the path is not a regular file).
pub fn lock_state_dir(dir: &Path) -> Result<StateLock, CliError> {
    let path = dir.join(LOCK_FILE);
    let open_error = |e: io::Error| {
        let what = if matches!(
            e.kind(),
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
        ) {
            format!(
                "state directory {} is not writable: cannot create its lock file {}",
                dir.display(),
                path.display()
            )
        } else {
            format!(
                "cannot open the lock file {} of state directory {}",
                path.display(),
                dir.display()
            )
        };
        other(what, e)
    };
    // Never through a link; a FIFO must not block the open.
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
    // Created, and later given the pid, through a descriptor open for
    // writing that is closed again; locked through one open for reading
    // only, the one kept: a file held open for writing would keep the file
    // system from being remounted read-only (EBUSY). flock takes either.
    let w = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(flags)
        .open(&path)
        .map_err(open_error)?;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&path)
        .map_err(open_error)?;
    let same_regular_file = match (w.metadata(), f.metadata()) {
        (Ok(a), Ok(b)) => a.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    if !same_regular_file {
        return Err(StartError::LockNotRegular {
            dir: dir.to_owned(),
            lock: path,
        }
        .into());
    }
    match f.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = (&f).take(32).read_to_string(&mut text);
            let pid = text.trim();
            let pid = if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
                pid
            } else {
                "unknown"
            };
            return Err(StartError::StateDirInUse {
                dir: dir.to_owned(),
                lock: path,
                pid: pid.to_owned(),
            }
            .into());
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(other(format!("cannot lock {}", path.display()), e));
        }
    }
    w.set_len(0)
        .and_then(|()| w.write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0))
        .map_err(|e| other(format!("cannot write the pid into {}", path.display()), e))?;
    drop(w);
    Ok(StateLock { _file: f })
}

/// Checks that snapshots can be written into `dir`: creates, writes,
/// syncs and removes a probe file. Its name is one of a temporary
/// snapshot's, so a probe left by a crash is cleaned up by [`load_state`].
///
/// # Errors
/// Any step failed: the error names the directory.
pub fn check_writable(dir: &Path) -> Result<(), CliError> {
    let probe = dir.join(format!(".{FILE_NAME}.tmp-probe-{}", std::process::id()));
    let _ = fs::remove_file(&probe);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&probe)?;
        f.write_all(b"bulkwatch write probe\n")?;
        f.sync_all()?;
        drop(f);
        fs::remove_file(&probe)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&probe);
        other(
            format!(
                "state directory {} is not writable: snapshots could not be saved",
                dir.display()
            ),
            e,
        )
    })
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
    // lstat: a link, even a dangling one, is there (and refused by load).
    if fs::symlink_metadata(&path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
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

/// A Unix socket this process bound, known by device and inode: removed at
/// shutdown only while its path still names that socket.
#[derive(Debug)]
pub struct BoundSocket {
    pub path: PathBuf,
    dev: u64,
    ino: u64,
}

impl BoundSocket {
    /// Removes the socket file if the path still is the socket this
    /// process bound; another process's socket put there since is left.
    pub fn remove(&self) {
        match fs::symlink_metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == (self.dev, self.ino) => {
                if let Err(e) = fs::remove_file(&self.path) {
                    warn!(socket = %self.path.display(), error = %e, "cannot remove the socket");
                }
            }
            Ok(_) => warn!(
                socket = %self.path.display(),
                "the socket path names another file now (another process's socket?); left in place"
            ),
            Err(_) => {}
        }
    }
}

/// Whether a process accepts connections on the Unix socket at `path`.
/// The connect does not block: a full backlog (a busy listener, a
/// connection flood) counts as listening; only a refused connection (no
/// listener: a stale file) or a vanished path counts as free.
///
/// # Errors
/// Anything else (no permission to connect): the caller cannot tell.
fn socket_in_use(path: &Path) -> io::Result<bool> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    s.set_nonblocking(true)?;
    match s.connect(&SockAddr::unix(path)?) {
        Ok(()) => Ok(true),
        Err(e)
            if e.kind() == io::ErrorKind::WouldBlock
                || e.raw_os_error() == Some(libc::EINPROGRESS) =>
        {
            Ok(true)
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Binds the milter socket.
///
/// # Errors
/// The address is in use, the path exists and is not a socket, another
/// process listens on the socket (or whether one does cannot be told), or
/// the owner, group or mode cannot be applied.
pub async fn bind(m: &MilterConfig) -> Result<(Listener, Option<BoundSocket>), CliError> {
    match &m.socket {
        SocketSpec::Inet(addr) => {
            let l = TcpListener::bind(addr)
                .await
                .map_err(|e| other(format!("cannot listen on inet:{addr}"), e))?;
            info!(socket = %format!("inet:{}", l.local_addr().map_or(addr.clone(), |a| a.to_string())), "milter listening");
            Ok((Listener::Tcp(l), None))
        }
        SocketSpec::Unix(path) => {
            if let Ok(meta) = fs::symlink_metadata(path) {
                if meta.file_type().is_socket() {
                    match socket_in_use(path) {
                        Ok(true) => {
                            return Err(StartError::SocketInUse(path.clone()).into());
                        }
                        Ok(false) => match fs::remove_file(path) {
                            Ok(()) => {
                                info!(socket = %path.display(), "stale socket removed (nothing listening)");
                            }
                            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                            Err(e) => {
                                return Err(other(
                                    format!("cannot remove stale socket {}", path.display()),
                                    e,
                                ));
                            }
                        },
                        Err(e) => {
                            return Err(other(
                                format!(
                                    "cannot tell whether another process listens on unix:{}; \
                                     refusing to take its socket",
                                    path.display()
                                ),
                                e,
                            ));
                        }
                    }
                } else {
                    return Err(StartError::NotASocket(path.clone()).into());
                }
            }
            let l = UnixListener::bind(path)
                .map_err(|e| other(format!("cannot listen on unix:{}", path.display()), e))?;
            // Who the socket file is, for the removal at shutdown.
            let bound = fs::symlink_metadata(path)
                .map(|m| BoundSocket {
                    path: path.clone(),
                    dev: m.dev(),
                    ino: m.ino(),
                })
                .map_err(|e| other(format!("cannot stat {}", path.display()), e))?;
            fs::set_permissions(path, fs::Permissions::from_mode(m.socket_mode))
                .map_err(|e| other(format!("cannot set mode of {}", path.display()), e))?;
            if m.socket_owner.is_some() || m.socket_group.is_some() {
                let uid = match &m.socket_owner {
                    Some(o) => Some(
                        lookup_id("/etc/passwd", o)
                            .ok_or_else(|| StartError::UnknownUser { user: o.clone() })?,
                    ),
                    None => None,
                };
                let gid = match &m.socket_group {
                    Some(g) => Some(
                        lookup_id("/etc/group", g)
                            .ok_or_else(|| StartError::UnknownGroup { group: g.clone() })?,
                    ),
                    None => None,
                };
                std::os::unix::fs::chown(path, uid, gid)
                    .map_err(|e| other(format!("cannot chown {}", path.display()), e))?;
            }
            info!(socket = %format!("unix:{}", path.display()), "milter listening");
            Ok((Listener::Unix(l), Some(bound)))
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

/// Writes a snapshot of `state` into `dir`: copied under the engine's
/// lock, encoded and written on the blocking pool.
///
/// # Errors
/// The file could not be written; the previous snapshot is intact.
pub async fn write_snapshot(
    state: &Arc<State>,
    dir: &Path,
    of: SnapshotOf,
) -> Result<PathBuf, snapshot::SnapshotError> {
    // Copied and encoded on the blocking pool: no runtime thread waits on
    // it (the engine's lock is held for the copy alone, see
    // `State::snapshot_bytes`).
    let st = Arc::clone(state);
    let bytes = tokio::task::spawn_blocking(move || match of {
        SnapshotOf::Local => st.snapshot_bytes(),
        SnapshotOf::View => st.view_snapshot_bytes(),
    })
    .await
    .map_err(|e| snapshot::SnapshotError::Invalid {
        what: format!("snapshot task failed: {e}"),
    })?;
    // The memory store's corrections, with the ids of this snapshot (a
    // merge since the last correction moved an allowance to another id).
    if state.redis().is_none() {
        let saved = state.control.saved(&state.engine());
        if let Some(saved) = saved {
            let st = Arc::clone(state);
            let _ = tokio::task::spawn_blocking(move || st.control.write(&saved)).await;
        }
    }
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

/// The zero-hour ledger of the last run ([`crate::milter::zerohour::FILE`]),
/// if there is one; a bad file is said and left for the next write.
fn restore_zero_hour(z: &crate::milter::zerohour::ZeroHour, cfg: &Config, dir: &Path) {
    use crate::milter::zerohour::{FILE, MAX_FILE};
    let path = dir.join(FILE);
    match crate::file::read_regular(&path, MAX_FILE, crate::file::Links::Refuse) {
        Ok(bytes) => match z.restore(
            &bytes,
            crate::milter::unix_now(),
            cfg.window.window.as_secs(),
        ) {
            Ok(n) => info!(path = %path.display(), copies = n, "zero-hour ledger restored"),
            Err(e) => {
                warn!(path = %path.display(), error = %e, "zero-hour ledger unreadable; starting empty")
            }
        },
        Err(e) if e.is_not_found() => {}
        Err(e) => warn!(error = %e, "zero-hour ledger not read; starting empty"),
    }
}

/// Writes the zero-hour ledger beside the snapshot (off the runtime's
/// threads), when zero-hour is on.
pub async fn write_zero_hour(state: &Arc<State>, dir: &Path) {
    let Some(z) = state.zero_hour().cloned() else {
        return;
    };
    let dir = dir.to_owned();
    let written = tokio::task::spawn_blocking(move || {
        crate::file::write_atomic(&dir, crate::milter::zerohour::FILE, &z.saved(), 0o600)
    })
    .await;
    if let Ok(Err(e)) = written {
        error!(error = %e, "zero-hour ledger not written; the previous one kept");
    }
}

async fn snapshot_loop(state: Arc<State>, dir: PathBuf) {
    loop {
        let every = state.config().state.snapshot_interval;
        tokio::time::sleep(every).await;
        write_zero_hour(&state, &dir).await;
        match write_snapshot(&state, &dir, SnapshotOf::Local).await {
            Ok(p) => tracing::debug!(path = %p.display(), "snapshot written"),
            Err(e) => {
                state.metrics.record_error();
                error!(error = %chain(&e), "snapshot failed; previous snapshot kept, still serving");
            }
        }
    }
}

/// Logs the suspicious values of the configuration file `file`.
fn log_warnings(file: &str, warnings: &[crate::config::ConfigWarning]) {
    for w in warnings {
        warn!(
            file,
            key = w.key,
            line = w.line,
            "suspicious value: {}",
            w.message
        );
    }
}

/// Longest a reload may take to read its file.
const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads the configuration on the blocking pool, within
/// [`RELOAD_TIMEOUT`]: a slow file system never holds the milter's
/// threads.
async fn load_off_runtime(
    p: &Path,
) -> Result<(Config, Vec<crate::config::ConfigWarning>), crate::config::ConfigError> {
    let path = p.to_owned();
    let task = tokio::task::spawn_blocking(move || Config::load_with_warnings(&path));
    let timed_out = |what: &str| crate::config::ConfigError::Read {
        path: p.to_owned(),
        source: crate::file::FileError::Io {
            op: "read",
            path: p.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_owned()),
        },
    };
    match tokio::time::timeout(RELOAD_TIMEOUT, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(timed_out("the reading task failed")),
        Err(_) => Err(timed_out("no answer from the file system in 10 s")),
    }
}

/// The site's own networks (`own.networks`, Postfix's `mynetworks` read
/// with `postconf` when named), logged: what is the site's own mail.
pub fn own_networks(own: &crate::config::OwnConfig) -> Vec<ipnet::IpNet> {
    let postfix = if own.reads_mynetworks() {
        let dir = (!own.postfix_config_dir.is_empty())
            .then(|| Path::new(own.postfix_config_dir.as_str()));
        match crate::postfix::mynetworks(dir) {
            Ok((nets, other)) => {
                if !other.is_empty() {
                    warn!(
                        left_out = %other.join(" "),
                        "own networks: entries of Postfix's mynetworks that are not networks \
                         (host names, files, tables, negations) are left out; list their \
                         networks in own.networks"
                    );
                }
                nets
            }
            Err(e) if e.no_postfix_here() => {
                info!(
                    error = %e,
                    "own networks: no Postfix configuration on this host to read mynetworks \
                     from: no client network is the site's own (for a Postfix elsewhere, list \
                     its networks in own.networks)"
                );
                Vec::new()
            }
            Err(e) => {
                warn!(
                    error = %e,
                    "own networks: Postfix's mynetworks could not be read: no client network \
                     is the site's own (set own.postfix_config_dir, or list own.networks)"
                );
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let nets = own.networks_with(&postfix);
    info!(
        networks = %nets.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
        exclude = %own.exclude.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
        authenticated = own.authenticated,
        local_submission = own.local_submission,
        "the site's own mail (counted apart, never refused unless policy.own says so): \
         these client networks, SASL logins and local submission"
    );
    nets
}

async fn reload_loop(state: Arc<State>, path: Option<PathBuf>, mut hup: Signal) {
    while hup.recv().await.is_some() {
        let mut states = vec![NotifyState::Reloading];
        if let Ok(t) = NotifyState::monotonic_usec_now() {
            states.push(t);
        }
        notify(&states);
        match &path {
            None => warn!(
                "SIGHUP: started on the built-in defaults (no --config, no {}), nothing to reload",
                crate::cli::system_config().display()
            ),
            Some(p) => match load_off_runtime(p).await {
                Ok((new, warnings)) => {
                    let (keys, changed) = state.reload(&new);
                    let own = new.own.clone();
                    let nets = tokio::task::spawn_blocking(move || own_networks(&own))
                        .await
                        .unwrap_or_default();
                    state.set_own_networks(nets);
                    info!(
                        file = %p.display(),
                        changed = %if changed.is_empty() {
                            "nothing".to_owned()
                        } else {
                            changed.join(",")
                        },
                        "configuration reloaded"
                    );
                    log_warnings(&p.display().to_string(), &warnings);
                    for k in keys {
                        warn!(file = %p.display(), key = k.key, why = k.why, "restart needed: this key keeps its running value until restart");
                    }
                }
                Err(e) => error!(
                    file = %p.display(),
                    key = e.key(),
                    error = %one_line(&chain(&e)),
                    "reload refused, running configuration kept"
                ),
            },
        }
        notify(&[NotifyState::Ready]);
    }
}

/// Binds the control socket, mode 0600 (a stale socket of a daemon that
/// died is replaced: the state directory's lock says none runs).
fn bind_control(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let l = tokio::net::UnixListener::bind(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

/// The daemon: locks the state directory, builds the state, binds the
/// milter socket, starts the side tasks and serves until SIGTERM or
/// SIGINT; then writes the snapshot and removes its sockets. The exit
/// status says whether the snapshot was written.
async fn serve(
    config_path: Option<PathBuf>,
    cfg: Config,
    warnings: Vec<crate::config::ConfigWarning>,
) -> Result<Exit, CliError> {
    let file = config_path.as_ref().map_or_else(
        || "built-in defaults".to_owned(),
        |p| p.display().to_string(),
    );
    let dir = cfg.state.state_dir.clone();
    fs::create_dir_all(&dir).map_err(|source| CliError::Write {
        path: dir.clone(),
        source,
    })?;
    // Held until this function returns: after the snapshot at shutdown.
    let _lock = lock_state_dir(&dir)?;
    check_writable(&dir)?;
    let mut tasks = Vec::new();
    let state = Arc::new(build_state(&cfg, &dir, &mut tasks).await?);
    let (listener, unix_socket) = bind(&cfg.milter).await?;
    let control_socket = start_tasks(&cfg, &state, &dir, &mut tasks).await?;
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
    READY.store(true, std::sync::atomic::Ordering::Relaxed);
    info!(version = env!("CARGO_PKG_VERSION"), config = %file, "bulkwatch serving");
    if let Some(w) = crate::cli::keygen::public_key_warning(&state.config()) {
        warn!("{w}");
    }
    log_warnings(&file, &warnings);
    let served = crate::milter::run(listener, Arc::clone(&state), shutdown).await;
    for t in &tasks {
        t.abort();
    }
    write_zero_hour(&state, &dir).await;
    let saved = write_snapshot(&state, &dir, SnapshotOf::View).await;
    match &saved {
        Ok(p) => info!(path = %p.display(), "snapshot written at shutdown"),
        Err(e) => error!(error = %chain(e), "snapshot at shutdown failed; previous snapshot kept"),
    }
    if let Some(s) = unix_socket {
        s.remove();
    }
    // The state directory is this daemon's (its lock): the control socket
    // is ours to remove (after a crash, the next start replaces it).
    let _ = fs::remove_file(&control_socket);
    // The process ends next: freeing the window, the index and the
    // campaigns allocation by allocation (100 ms at 10^5 entries, over a
    // second at 10^6) would only hold the exit after "stopped", and with it
    // a restart; the kernel takes the memory back at once. The tasks' own
    // references, dropped with the runtime, never free it either.
    std::mem::forget(state);
    served.map_err(|e| other("milter listener failed", e))?;
    // The state of this run is lost: the exit status says so.
    saved.map_err(|e| {
        other(
            format!(
                "the snapshot at shutdown could not be written into {}; the previous snapshot (if any) is kept",
                dir.display()
            ),
            e,
        )
    })?;
    info!("stopped");
    Ok(Exit::Ok)
}

/// The daemon's state: the engine from the state directory's snapshot,
/// the control file, the workers that read mail, Redis and alerts (whose
/// task joins `tasks`).
async fn build_state(
    cfg: &Config,
    dir: &Path,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Result<State, CliError> {
    let (mut engine, saved_at) = load_state(dir, cfg);
    let control =
        crate::milter::control::Control::open(crate::milter::control::file_path(dir), &mut engine);
    let workers = start_workers(cfg).await?;
    let mut state = State::new(engine)
        .with_control(control)
        .with_workers(workers)
        .with_forensics(crate::milter::forensics::Forensics::new(dir));
    state.set_own_networks(own_networks(&cfg.own));
    match RedisLayer::from_config(cfg) {
        Ok(Some(shared)) => {
            info!(
                urls = ?cfg
                    .store
                    .redis
                    .urls
                    .iter()
                    .map(|u| crate::config::redacted_url(u))
                    .collect::<Vec<_>>(),
                keys = shared.pool().key_base(),
                "shared state in redis; the local window is the fallback"
            );
            state = state.with_redis(shared);
        }
        Ok(None) => {}
        Err(e) => return Err(other("cannot set up the redis store", e)),
    }
    if cfg.zero_hour.enabled {
        match crate::milter::zerohour::client(cfg) {
            Ok(c) => {
                info!(
                    doveadm = %format!("{}:{}{}", c.host, c.port, c.path),
                    action = ?cfg.zero_hour.action,
                    "zero-hour on: delivered copies are recorded"
                );
                let z = crate::milter::zerohour::ZeroHour::new(cfg);
                restore_zero_hour(&z, cfg, dir);
                state = state.with_zero_hour(Arc::new(z));
            }
            // Mail flows without it; the error says what to mend.
            Err(e) => tracing::error!(error = %e, "zero-hour stays off"),
        }
    }
    // The alert task runs whatever `alerts.to` holds, so that a reload
    // that sets it (or clears it) applies at once.
    {
        let (tx, rx) = mpsc::channel(alert::QUEUE);
        let (cfg_tx, cfg_rx) = tokio::sync::watch::channel(cfg.alerts.clone());
        let site = state
            .redis_shared()
            .map(|r| alert::Site::new(r, cfg.window.window));
        state = state.with_alerts(tx, cfg_tx);
        tasks.push(tokio::spawn(alert::run(
            cfg_rx,
            rx,
            site,
            cfg.metrics.listen.clone(),
            Arc::clone(&state.alert_counts),
        )));
    }
    if let Some(t) = saved_at {
        state.metrics.snapshot_written(t);
    }
    Ok(state)
}

/// The pool of worker processes that read mail, logged with its sandbox.
async fn start_workers(cfg: &Config) -> Result<crate::worker::Pool, CliError> {
    // Mail is read in worker processes (crate::worker): a message that
    // kills its parser costs that message's verdict, not the daemon.
    let program = crate::worker::Pool::program()
        .map_err(|e| other("cannot find this program's path to start workers", e))?;
    let workers = crate::worker::Pool::start(
        &program,
        cfg,
        match cfg.milter.workers {
            0 => crate::worker::default_size(),
            n => n,
        },
        crate::worker::Hooks::from_env(),
    )
    .await
    .map_err(|e| other("cannot start the workers that read mail", e))?;
    // (Said in the log line below: whether pictures of text are read.)
    workers.start_ocr().await;
    info!(
        workers = workers.size(),
        sandbox = %workers.sandbox(),
        "workers reading mail started"
    );
    if !workers.sandbox().contains("seccomp=on") {
        // (A kernel without seccomp, or a service manager's own filter
        // that forbids installing one.)
        warn!(
            sandbox = %workers.sandbox(),
            "the workers that read mail run without their system call filter: a parser bug could \
             reach files and the network (docs/admin/security.md)"
        );
    }
    Ok(workers)
}

/// The metrics listener, the snapshot loop and the control socket, whose
/// path is returned (it is removed at shutdown).
async fn start_tasks(
    cfg: &Config,
    state: &Arc<State>,
    dir: &Path,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Result<PathBuf, CliError> {
    if let Some(addr) = &cfg.metrics.listen {
        let l = TcpListener::bind(addr)
            .await
            .map_err(|e| other(format!("cannot listen for metrics on {addr}"), e))?;
        info!(listen = %addr, "metrics listening");
        tasks.push(tokio::spawn(crate::http::serve(l, Arc::clone(state))));
    }
    tasks.push(tokio::spawn(snapshot_loop(
        Arc::clone(state),
        dir.to_owned(),
    )));
    if state.redis().is_some() {
        tasks.push(tokio::spawn(domains_loop(Arc::clone(state))));
    }
    if let Some(z) = state.zero_hour() {
        start_zero_hour(cfg, state, z, tasks);
    }
    let control_socket = crate::milter::control::socket_path(dir);
    match bind_control(&control_socket) {
        Ok(l) => {
            info!(socket = %control_socket.display(), "control socket listening");
            tasks.push(tokio::spawn(crate::milter::control::serve(
                l,
                Arc::clone(state),
                crate::milter::control::Scope::All,
            )));
        }
        // The daemon filters mail without it: `bulkwatch campaigns` says
        // it cannot connect.
        Err(e) => warn!(socket = %control_socket.display(), error = %e, "no control socket"),
    }
    Ok(control_socket)
}

/// The zero-hour task and the report socket (`zero_hour.report_socket`,
/// mode 0660, `zero_hour.report_group`).
fn start_zero_hour(
    cfg: &Config,
    state: &Arc<State>,
    z: &Arc<crate::milter::zerohour::ZeroHour>,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    match crate::milter::zerohour::client(cfg) {
        Ok(c) => tasks.push(tokio::spawn(crate::milter::zerohour::run(
            Arc::clone(state),
            Arc::clone(z),
            c,
        ))),
        Err(e) => tracing::error!(error = %e, "zero-hour acts on nothing"),
    }
    let path = &cfg.zero_hour.report_socket;
    if path.is_empty() {
        return;
    }
    // Mail flows without reports: a socket that cannot be set up is said,
    // not a reason to stop.
    match bind_reports(cfg, Path::new(path)) {
        Ok(l) => {
            info!(socket = %path, "report socket listening");
            tasks.push(tokio::spawn(crate::milter::control::serve(
                l,
                Arc::clone(state),
                crate::milter::control::Scope::Reports,
            )));
        }
        Err(e) => {
            tracing::error!(error = %e, socket = %path, "no report socket: users' reports are not taken")
        }
    }
}

/// The report socket at `path`, mode 0660, of `zero_hour.report_group`
/// (the daemon's own group when empty).
fn bind_reports(cfg: &Config, path: &Path) -> Result<tokio::net::UnixListener, CliError> {
    use std::os::unix::fs::PermissionsExt;
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            fs::remove_file(path)
                .map_err(|e| other(format!("cannot remove {}", path.display()), e))?;
        }
        Ok(_) => return Err(StartError::NotASocket(path.to_owned()).into()),
        Err(_) => {}
    }
    let l = tokio::net::UnixListener::bind(path)
        .map_err(|e| other(format!("cannot listen on {}", path.display()), e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o660))
        .map_err(|e| other(format!("cannot set mode of {}", path.display()), e))?;
    let group = &cfg.zero_hour.report_group;
    if !group.is_empty() {
        let gid = lookup_id("/etc/group", group).ok_or_else(|| {
            other(
                "zero_hour.report_group",
                std::io::Error::other(format!("unknown group `{group}`")),
            )
        })?;
        std::os::unix::fs::chown(path, None, Some(gid))
            .map_err(|e| other(format!("cannot chown {}", path.display()), e))?;
    }
    Ok(l)
}

/// How often a daemon on Redis reads the site's domain allowances: one
/// set on another host applies here within this.
const DOMAINS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// With Redis: reads the site's domain allowances now and every
/// [`DOMAINS_EVERY`], off the runtime's threads (a round trip, bounded by
/// the store's timeouts).
async fn domains_loop(state: Arc<crate::milter::State>) {
    let mut tick = tokio::time::interval(DOMAINS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let st = Arc::clone(&state);
        let _ = tokio::task::spawn_blocking(move || {
            st.control.refresh_domains(&st, crate::milter::unix_now());
        })
        .await;
    }
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
    fn a_parse_error_is_logged_on_one_line() {
        let e = crate::config::Config::from_toml_str("[window\nmax_entries = 5\n")
            .expect_err("refused");
        let text = chain(&e);
        assert!(
            text.contains('\n'),
            "the parser's own text has several lines"
        );
        let line = one_line(&text);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("line 1, column 8") && line.contains("unclosed table"),
            "{line}"
        );
        assert!(
            line.contains("`[window`"),
            "the quoted source is kept: {line}"
        );
        assert!(!line.contains('^'), "{line}");
    }

    #[test]
    fn a_second_lock_on_a_state_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock_state_dir(dir.path()).unwrap();
        let text = fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
        // flock belongs to the open file: a second open conflicts, even in
        // this process.
        match lock_state_dir(dir.path()).unwrap_err() {
            CliError::Start(StartError::StateDirInUse { pid, dir: d, .. }) => {
                assert_eq!(pid, std::process::id().to_string());
                assert_eq!(d, dir.path());
            }
            other => panic!("{other}"),
        }
        drop(held);
        let again = lock_state_dir(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn writable_probe_names_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(dir.path()).unwrap();
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "probe removed"
        );
        let file = dir.path().join("file");
        fs::write(&file, b"").unwrap();
        let under = file.join("state");
        let e = check_writable(&under).unwrap_err().to_string();
        assert!(
            e.contains(&under.display().to_string()) && e.contains("not writable"),
            "{e}"
        );
    }

    fn unix_milter(path: &Path) -> MilterConfig {
        MilterConfig {
            socket: SocketSpec::Unix(path.to_owned()),
            ..Config::default().milter
        }
    }

    #[tokio::test]
    async fn a_live_socket_is_never_taken_a_stale_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sock");
        let m = unix_milter(&path);
        // Stale: a socket file nobody listens on any more.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let (first, bound) = bind(&m).await.unwrap();
        let bound = bound.unwrap();
        match bind(&m).await {
            Ok(_) => panic!("a second bind took a live socket"),
            Err(CliError::Start(StartError::SocketInUse(p))) => assert_eq!(p, path),
            Err(e) => panic!("{e}"),
        }
        assert!(std::os::unix::net::UnixStream::connect(&path).is_ok());
        // Another socket put at the path: left alone at shutdown.
        fs::remove_file(&path).unwrap();
        let other = std::os::unix::net::UnixListener::bind(&path).unwrap();
        bound.remove();
        assert!(path.exists(), "another process's socket was removed");
        drop(other);
        drop(first);
        fs::remove_file(&path).unwrap();
        let (_l, b) = bind(&m).await.unwrap();
        b.unwrap().remove();
        assert!(!path.exists(), "own socket removed");
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
