//! Contained reading: the part of the engine that parses hostile bytes
//! runs in worker processes, so that a parser that dies costs one verdict,
//! never the daemon.
//!
//! A stack overflow, an allocation failure or an abort inside a
//! dependency cannot be caught inside a process: it ends the process. So
//! the daemon (and `scan`, `replay`, `tune`) never parses mail itself. A
//! [`Pool`] keeps a few pre-started worker processes (`bulkwatch worker`,
//! [`child`]), each fed one message at a time over its standard input and
//! answering over its standard output ([`wire`]): the raw message and its
//! recipients in, a [`Reading`] out (the normalized text and what the
//! fingerprint needs besides; [`crate::engine::read`]). The keyed part of
//! the fingerprint ([`crate::engine::fingerprint`]) stays in the daemon:
//! a worker never holds the hash key.
//!
//! When a worker dies, panics, answers something that does not decode or
//! takes longer than the caller's time bound, the call fails with a
//! [`Failure`] saying why (the caller gives that message its configured
//! failure answer, logs it with the queue id, counts it and keeps the
//! message for forensics), the worker is killed and another is started.
//! A worker is also replaced after [`MAX_USES`] messages, so that one
//! taken over by a sender (a parser bug) does not judge for long. Workers
//! are sandboxed ([`sandbox`]): no files, no network, no secrets.
//!
//! Cost: the message crosses a pipe twice (in raw, out normalized) and
//! the daemon waits for another process instead of running the parser on
//! its own thread (docs/dev/performance.md has the figures).

pub mod child;
pub mod fair;
pub mod sandbox;
pub mod wire;

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::time::{timeout, timeout_at, Instant};

use crate::config::Config;
use crate::engine::{read_config, ReadConfig, Reading};
pub use wire::Hooks;

/// Tesseract as this process's recognizer ([`provide_ocr`]), its
/// readings remembered by picture family.
static TESSERACT: Remembered = Remembered {
    read: Mutex::new(None),
};

/// Pictures this process had Tesseract read, and pictures whose text it
/// reused ([`Remembered`]).
static RECOGNIZED: AtomicU64 = AtomicU64::new(0);
static REUSED: AtomicU64 = AtomicU64::new(0);

/// Pictures this process had Tesseract read, and those whose text it took
/// from one of the same family read before.
pub fn ocr_readings() -> (u64, u64) {
    (
        RECOGNIZED.load(Ordering::Relaxed),
        REUSED.load(Ordering::Relaxed),
    )
}

/// Pictures whose text is remembered ([`Remembered`]).
const REMEMBERED_PICTURES: usize = 1024;

/// A recognizer that reads a picture once per family: a picture of the
/// same perceptual hash and size as one read before (a campaign's copies,
/// a flood of one picture) reuses its text (issue 65: reading pictures is
/// the most expensive thing the filter does). A reading stopped at its
/// deadline is not remembered. Per process: each OCR worker keeps its
/// own.
struct Remembered {
    read: Mutex<Option<Family>>,
}

/// Texts read, by perceptual hash and size of the picture, each with the
/// picture's [`Thumbnail`].
type Family = lru::LruCache<(u64, u32, u32), (Thumbnail, Option<String>)>;

/// Side of a [`Thumbnail`].
const THUMB: usize = 32;
/// A picture's grey levels averaged in [`THUMB`] × [`THUMB`] boxes.
type Thumbnail = Box<[u8; THUMB * THUMB]>;
/// Most mean difference of grey level between two pictures' thumbnails
/// for one to reuse the other's text. The perceptual hash is 64 bits of
/// 9 × 8 cells: two pictures of one layout with other words can share it,
/// and then a sender whose picture came first would have its text read in
/// the other (a newsletter's banner read as spam). Speckles and a few
/// changed pixels move a thumbnail by well under a level; other words in
/// the same place move it by several.
const SAME_THUMB: f64 = 1.5;

/// `pixels` (`w` × `h`, a row after another) averaged into
/// [`THUMB`] × [`THUMB`] boxes.
fn thumbnail(pixels: &[u8], w: u32, h: u32) -> Thumbnail {
    let (w, h) = (w.max(1) as usize, h.max(1) as usize);
    let mut sums = [0u64; THUMB * THUMB];
    let mut counts = [0u64; THUMB * THUMB];
    for (i, p) in pixels.iter().take(w * h).enumerate() {
        let (x, y) = (i % w, i / w);
        let cell = (y * THUMB / h) * THUMB + x * THUMB / w;
        if let (Some(s), Some(c)) = (sums.get_mut(cell), counts.get_mut(cell)) {
            *s += u64::from(*p);
            *c += 1;
        }
    }
    let mut out = Box::new([255u8; THUMB * THUMB]);
    for ((o, s), c) in out.iter_mut().zip(sums).zip(counts) {
        if let Some(mean) = s.checked_div(c) {
            *o = u8::try_from(mean).unwrap_or(u8::MAX);
        }
    }
    out
}

/// Two thumbnails of one picture family: their mean difference is at
/// most [`SAME_THUMB`] grey levels.
fn same_family(a: &Thumbnail, b: &Thumbnail) -> bool {
    let diff: u64 = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    diff as f64 / (THUMB * THUMB) as f64 <= SAME_THUMB
}

impl bulkwatch_read::ocr::Recognizer for Remembered {
    /// A page's text the reader drew: read every time (pictures of other
    /// words in one font pass for one family).
    fn recognize_drawn(
        &self,
        pixels: &[u8],
        w: u32,
        h: u32,
        deadline_ms: u32,
    ) -> bulkwatch_read::ocr::Recognized {
        RECOGNIZED.fetch_add(1, Ordering::Relaxed);
        bulkwatch_ocr::read(pixels, w, h, deadline_ms)
    }

    fn recognize(
        &self,
        pixels: &[u8],
        w: u32,
        h: u32,
        deadline_ms: u32,
    ) -> bulkwatch_read::ocr::Recognized {
        let key = bulkwatch_read::mime::picture::grey_hash(pixels, w, h).map(|k| (k, w, h));
        let thumb = key.map(|_| thumbnail(pixels, w, h));
        let lock = || self.read.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(k), Some(thumb)) = (key, &thumb) {
            let mut cache = lock();
            let cache = cache.get_or_insert_with(|| {
                lru::LruCache::new(
                    std::num::NonZeroUsize::MIN.saturating_add(REMEMBERED_PICTURES - 1),
                )
            });
            if let Some((_, text)) = cache.get(&k).filter(|(t, _)| same_family(t, thumb)) {
                REUSED.fetch_add(1, Ordering::Relaxed);
                return bulkwatch_read::ocr::Recognized {
                    text: text.clone(),
                    stopped: false,
                    remembered: true,
                };
            }
        }
        let read = bulkwatch_ocr::read(pixels, w, h, deadline_ms);
        RECOGNIZED.fetch_add(1, Ordering::Relaxed);
        if let (Some(k), Some(thumb)) = (key.filter(|_| !read.stopped), thumb) {
            if let Some(cache) = lock().as_mut() {
                cache.put(k, (thumb, read.text.clone()));
            }
        }
        read
    }
}

/// Loads Tesseract for this process with `ocr`'s data and languages and,
/// when it loaded, hands it to the reader (`bulkwatch_read::ocr`): the
/// reading crate loads nothing itself. An OCR worker calls it before its
/// sandbox closes; a process that reads in itself (a replay or `scan`
/// without workers, a test) before it reads. Says what it found.
pub fn provide_ocr(ocr: &bulkwatch_read::config::OcrConfig) -> &'static bulkwatch_ocr::Status {
    let status = bulkwatch_ocr::start(ocr.data.as_deref(), &ocr.languages);
    if bulkwatch_ocr::available() {
        bulkwatch_read::ocr::provide(&TESSERACT);
    }
    status
}

/// [`provide_ocr`] for a process that reads in itself with `cfg`'s
/// settings, when they read pictures' text.
pub fn provide_ocr_here(cfg: &Config) {
    if let Some(o) = crate::engine::read_config(cfg).scan.ocr {
        provide_ocr(&o);
    }
}
use wire::{Hello, Ready, Reply, Request};

/// Workers the daemon keeps: the number of CPUs, at least 2. More would
/// only queue for the CPUs while holding a message each.
pub fn default_size() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// Messages a worker reads before it is replaced.
pub const MAX_USES: u32 = 1000;
/// Longest a new worker may take to start and sandbox itself.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a dead worker's standard error kept for the log line (the
/// runtime's last words: "has overflowed its stack", "memory allocation
/// of N bytes failed").
const MAX_LAST_WORDS: usize = 300;

/// Why a message got no reading.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The worker ended while reading it: how it ended (its exit status or
    /// signal) and its last words on standard error.
    #[error("the worker reading it died ({cause})")]
    Died { cause: String },
    #[error("reading took longer than {0:?}; the worker was killed")]
    Timeout(Duration),
    /// Reading panicked: the panic's message.
    #[error("the worker reading it panicked: {message}")]
    Panicked { message: String },
    #[error("the worker's answer was malformed")]
    Protocol(#[source] std::io::Error),
    #[error("no worker could be started")]
    Start(#[source] StartFailure),
    /// No worker was free within the queue's bound: nothing was read
    /// (not the message's doing; no copy is kept).
    #[error("no worker was free within {0:?} (the queue's bound)")]
    Queue(Duration),
}

/// Why a worker could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartFailure {
    #[error("cannot run {}", .program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} ended at start ({cause})", .program.display())]
    Ended { program: PathBuf, cause: String },
    #[error("{} did not start in {limit:?}", .program.display())]
    Slow { program: PathBuf, limit: Duration },
    #[error("no pipes to the worker")]
    NoPipes,
    #[error("the worker's first answer was malformed")]
    Ready(#[source] crate::store::codec::CodecError),
    #[error("no runtime for the worker")]
    Runtime(#[source] io::Error),
    #[error("cannot find this program's path")]
    Program(#[source] io::Error),
}

fn invalid_data(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl Failure {
    /// The cause as a metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Failure::Died { .. } => "died",
            Failure::Timeout(_) => "timeout",
            Failure::Panicked { .. } => "panicked",
            Failure::Protocol(_) => "protocol",
            Failure::Start(_) => "start",
            Failure::Queue(_) => "queue",
        }
    }

    /// Every label, for metrics.
    pub const LABELS: [&'static str; 6] =
        ["died", "timeout", "panicked", "protocol", "start", "queue"];

    /// The message's reading began and failed (not a wait for a worker,
    /// nor a worker that could not start): the message may be the cause,
    /// and a copy is worth keeping.
    pub fn in_reading(&self) -> bool {
        !matches!(self, Failure::Queue(_) | Failure::Start(_))
    }
}

/// Counters of a pool, for metrics.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Workers started.
    pub started: AtomicU64,
    /// Failures by [`Failure::LABELS`].
    pub failures: [AtomicU64; 6],
    /// Deep readings that failed after the shallow one came, by
    /// [`Failure::LABELS`]: those messages were judged, read partly.
    pub partial: [AtomicU64; 6],
    /// Workers found dead while idle (and replaced before use).
    pub died_idle: AtomicU64,
    /// Restarts held back after repeated deaths (the throttle: five deaths
    /// in ten seconds).
    pub throttled: AtomicU64,
    /// Messages with a picture under a short text, by [`OcrOutcome`]
    /// ([`PoolStats::ocr`]).
    ocr: [AtomicU64; 6],
}

/// What became of a message the readers left to the OCR workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OcrOutcome {
    /// Their reading is the message's.
    Read,
    /// Their reading is the message's, but Tesseract stopped at its own
    /// deadline on a picture, whose text it holds not.
    Partial,
    /// No OCR worker was free within the message's time: the first
    /// reading stood.
    TimedOut,
    /// The OCR worker was still reading at the message's deadline (the
    /// daemon's clock: `engine_timeout_ms` from when a reader took the
    /// message) and was killed: the first reading stood.
    Killed,
    /// The OCR worker died, panicked or could not start: the first
    /// reading stood.
    Failed,
    /// No Tesseract installed: read as with OCR off.
    Unavailable,
}

impl OcrOutcome {
    pub const ALL: [OcrOutcome; 6] = [
        OcrOutcome::Read,
        OcrOutcome::Partial,
        OcrOutcome::TimedOut,
        OcrOutcome::Killed,
        OcrOutcome::Failed,
        OcrOutcome::Unavailable,
    ];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            OcrOutcome::Read => "read",
            OcrOutcome::Partial => "partial",
            OcrOutcome::TimedOut => "timed_out",
            OcrOutcome::Killed => "killed",
            OcrOutcome::Failed => "failed",
            OcrOutcome::Unavailable => "unavailable",
        }
    }

    /// What became of a message from what the OCR workers answered (a
    /// reading whose deep part failed is their shallow one, which says
    /// nothing of the pictures: it failed as the deep part did).
    pub fn of(answer: &Result<Reading, Failure>) -> OcrOutcome {
        match answer {
            Ok(r) => match r.deep_failure {
                Some("timeout") => OcrOutcome::Killed,
                Some("queue") => OcrOutcome::TimedOut,
                Some(_) => OcrOutcome::Failed,
                None if r.ocr_stopped => OcrOutcome::Partial,
                None => OcrOutcome::Read,
            },
            Err(Failure::Timeout(_)) => OcrOutcome::Killed,
            Err(Failure::Queue(_)) => OcrOutcome::TimedOut,
            Err(_) => OcrOutcome::Failed,
        }
    }
}

impl PoolStats {
    /// Messages left to the OCR workers that ended as `outcome`.
    pub fn ocr(&self, outcome: OcrOutcome) -> u64 {
        self.ocr
            .get(outcome as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn count_ocr(&self, outcome: OcrOutcome) {
        if let Some(c) = self.ocr.get(outcome as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl PoolStats {
    /// Deep readings that failed with this label after the shallow one.
    pub fn partial(&self, label: &str) -> u64 {
        Failure::LABELS
            .iter()
            .position(|l| *l == label)
            .and_then(|i| self.partial.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl PoolStats {
    /// Failures with this label so far.
    pub fn failures(&self, label: &str) -> u64 {
        Failure::LABELS
            .iter()
            .position(|l| *l == label)
            .and_then(|i| self.failures.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Deep readings that failed after the shallow one came, with
    /// `label` ([`Failure::LABELS`]).
    pub fn partial_failures(&self, label: &str) -> u64 {
        Failure::LABELS
            .iter()
            .position(|l| *l == label)
            .and_then(|i| self.partial.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// A worker's standard output, read in large pieces.
type Stdout = tokio::io::BufReader<ChildStdout>;

/// One worker process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: Stdout,
    /// What it wrote to its standard error, read as it comes (a library
    /// that writes there must not fill the pipe and stop the worker):
    /// the reader's task and the last [`MAX_LAST_WORDS`] bytes.
    stderr: Option<Drain>,
    uses: u32,
    /// The last request's bytes, reused.
    buf: Vec<u8>,
}

/// Reads one frame's body into `buf` ([`wire::body_len`]).
async fn read_frame(r: &mut Stdout, buf: &mut Vec<u8>, max: usize) -> io::Result<()> {
    let mut head = [0u8; wire::HEAD];
    r.read_exact(&mut head).await?;
    let len = wire::body_len(head, max)?;
    buf.clear();
    buf.resize(len, 0);
    r.read_exact(buf).await?;
    Ok(())
}

/// How a process ended, in words.
fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        let what = match sig {
            libc::SIGABRT => "SIGABRT: an abort (a stack overflow, an allocation failure)",
            libc::SIGSEGV => "SIGSEGV: a memory fault",
            libc::SIGBUS => "SIGBUS: a memory fault",
            libc::SIGKILL => "SIGKILL: killed",
            libc::SIGSYS => "SIGSYS: a forbidden system call",
            libc::SIGXCPU => "SIGXCPU: its CPU time limit",
            libc::SIGILL => "SIGILL: an illegal instruction",
            _ => "a signal",
        };
        format!("signal {sig}, {what}")
    } else {
        match status.code() {
            Some(c) => format!("exit status {c}"),
            None => "unknown".into(),
        }
    }
}

/// A worker's standard error being read: the task, and what it kept.
type Drain = (tokio::task::JoinHandle<()>, Arc<Mutex<Vec<u8>>>);

/// Reads a worker's standard error until it ends, keeping the last
/// [`MAX_LAST_WORDS`] bytes (its last words, should it die).
fn drain(mut e: ChildStderr) -> Drain {
    let last = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&last);
    let task = tokio::spawn(async move {
        let mut chunk = vec![0u8; 4096];
        while let Ok(n) = e.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let mut l = lock(&kept);
            l.extend_from_slice(chunk.get(..n).unwrap_or_default());
            let extra = l.len().saturating_sub(MAX_LAST_WORDS);
            l.drain(..extra);
        }
    });
    (task, last)
}

/// Printable text of a dead worker's last words: control characters and
/// anything past [`MAX_LAST_WORDS`] dropped.
fn last_words(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl Worker {
    /// Kills the worker and says how it ended, with its last words.
    async fn bury(mut self) -> String {
        let _ = self.child.start_kill();
        let status = timeout(Duration::from_secs(2), self.child.wait()).await;
        let mut words = Vec::new();
        if let Some((mut task, last)) = self.stderr.take() {
            // The process is gone: its pipe ends at once (unless a process
            // it started holds it, which the sandbox forbids).
            if timeout(Duration::from_millis(200), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
            words = std::mem::take(&mut *lock(&last));
        }
        let mut cause = match status {
            Ok(Ok(s)) => describe(s),
            _ => "it would not end".into(),
        };
        let words = last_words(&words);
        if !words.is_empty() {
            cause.push_str(": ");
            cause.push_str(&words);
        }
        cause
    }
}

struct Inner {
    program: PathBuf,
    /// The hello frame, sealed.
    hello: Vec<u8>,
    read: ReadConfig,
    size: usize,
    idle: Mutex<Vec<Worker>>,
    slots: fair::Slots,
    /// Recent deaths, for the restart throttle.
    throttle: Mutex<Throttle>,
    stats: PoolStats,
    /// What the last worker started said of its sandbox.
    sandbox: Mutex<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes `frames` (`n` requests) to `w` while it reads the replies; each
/// reply must come within `limit` of the one before. Pushes a result per
/// message up to and including the first failure. True while the worker
/// is fit for more.
async fn exchange(
    w: &mut Worker,
    frames: &[u8],
    n: usize,
    inner: &Inner,
    limit: Duration,
    results: &mut Vec<Result<Reading, Failure>>,
) -> bool {
    let Worker { stdin, stdout, .. } = w;
    // The worker's output pipe would fill if nothing read it while a
    // large batch is written: both at once, and once the replies are in
    // (or one failed) the writing is dropped.
    let write = async {
        let _ = stdin.write_all(frames).await;
        std::future::pending::<()>().await;
    };
    let max_reply = wire::max_reply(&inner.read);
    let read = async {
        let mut buf = Vec::new();
        for _ in 0..n {
            // A message's shallow reading, when the worker sent one before
            // its deep reading (`Reply::Early`).
            let mut early: Option<Reading> = None;
            let reply = loop {
                let reply = match timeout(limit, read_frame(stdout, &mut buf, max_reply)).await {
                    Ok(Ok(())) => match Reply::decode(&buf, &inner.read) {
                        Ok(Reply::Read(r)) => Ok(*r),
                        Ok(Reply::Early(r)) => {
                            early = Some(*r);
                            continue;
                        }
                        // The panic's text may hold the message's bytes:
                        // shown escaped wherever it goes (the log).
                        Ok(Reply::Panicked { message }) => Err(Failure::Panicked {
                            message: crate::escape::printable(&message),
                        }),
                        Err(e) => Err(Failure::Protocol(invalid_data(e))),
                    },
                    Ok(Err(e)) if e.kind() == io::ErrorKind::InvalidData => {
                        Err(Failure::Protocol(e))
                    }
                    // End of file or a broken pipe: it died.
                    Ok(Err(_)) => Err(Failure::Died {
                        cause: String::new(),
                    }),
                    Err(_) => Err(Failure::Timeout(limit)),
                };
                break reply;
            };
            // The deep reading failed after the shallow one came: the
            // message is judged on that, read partly, and the worker is
            // done for.
            let (reply, alive) = match (reply, early) {
                (Ok(r), _) => (Ok(r), true),
                (Err(f), Some(mut e)) => {
                    inner.count_partial(&f);
                    e.partial = true;
                    e.deep_failure = Some(f.label());
                    (Ok(e), false)
                }
                (Err(f), None) => (Err(f), false),
            };
            let failed = reply.is_err();
            results.push(reply);
            if failed || !alive {
                return false;
            }
        }
        true
    };
    tokio::select! {
        alive = read => alive,
        () = write => false,
    }
}

impl Inner {
    /// Counts a deep reading that failed after the shallow one came.
    fn count_partial(&self, f: &Failure) {
        if let Some(c) = Failure::LABELS
            .iter()
            .position(|l| *l == f.label())
            .and_then(|i| self.stats.partial.get(i))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn count(&self, f: &Failure) {
        if let Some(c) = Failure::LABELS
            .iter()
            .position(|l| *l == f.label())
            .and_then(|i| self.stats.failures.get(i))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn spawn(&self) -> Result<Worker, Failure> {
        let mut cmd = Command::new(&self.program);
        cmd.arg("worker")
            .env_clear()
            // Tesseract's OpenMP on the worker's one thread (the sandbox
            // allows no others): bulkwatch_ocr.
            .env("OMP_THREAD_LIMIT", "1")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| {
            Failure::Start(StartFailure::Spawn {
                program: self.program.clone(),
                source,
            })
        })?;
        let (Some(mut stdin), Some(stdout), stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Failure::Start(StartFailure::NoPipes));
        };
        let mut stdout = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
        let stderr = stderr.map(drain);
        let mut buf = Vec::new();
        let started = timeout(START_TIMEOUT, async {
            stdin.write_all(&self.hello).await?;
            read_frame(&mut stdout, &mut buf, wire::MAX_HELLO).await
        })
        .await;
        let worker = Worker {
            child,
            stdin,
            stdout,
            stderr,
            uses: 0,
            buf: Vec::new(),
        };
        match started {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                let cause = worker.bury().await;
                return Err(Failure::Start(StartFailure::Ended {
                    program: self.program.clone(),
                    cause,
                }));
            }
            Err(_) => {
                let _ = worker.bury().await;
                return Err(Failure::Start(StartFailure::Slow {
                    program: self.program.clone(),
                    limit: START_TIMEOUT,
                }));
            }
        }
        let ready = Ready::decode(&buf).map_err(|e| Failure::Start(StartFailure::Ready(e)))?;
        *lock(&self.sandbox) = ready.sandbox;
        self.stats.started.fetch_add(1, Ordering::Relaxed);
        Ok(worker)
    }

    /// Gives a worker back to the idle list (or ends it when the list is
    /// full, which a replacement started meanwhile can make it).
    fn put(&self, w: Worker) {
        let mut idle = lock(&self.idle);
        if idle.len() < self.size {
            idle.push(w);
        }
    }
}

/// Worker processes that read mail (module documentation). Cheap to
/// clone: clones share the workers.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
    /// The OCR workers: the only ones that load Tesseract (loading it
    /// costs a worker's start 30 ms of CPU, and a worker is replaced every
    /// [`MAX_USES`] messages). The readers say when a message holds a
    /// picture under a short text (`Reading::wants_ocr`); such a message
    /// is read again here, and that reading is the message's.
    ocr: Option<Arc<Ocr>>,
}

/// Whose turn a reading takes a worker in ([`fair`]): a message of now,
/// or one read again later, after every message of now that waits.
#[derive(Debug, Clone, Copy)]
enum Turn<'a> {
    Now(&'a str),
    Later(&'a str),
}

/// The OCR workers of a [`Pool`], started when first needed (or by
/// [`Pool::start_ocr`]): a replay without pictures of text never starts
/// them.
struct Ocr {
    program: PathBuf,
    read: ReadConfig,
    size: usize,
    hooks: Hooks,
    /// The workers, or `None` when they do not read pictures (Tesseract
    /// is not installed), with what their start said.
    pool: tokio::sync::OnceCell<(Option<Pool>, String)>,
}

impl Ocr {
    /// The OCR workers, started the first time.
    async fn pool(&self) -> Option<&Pool> {
        let (pool, _) = self
            .pool
            .get_or_init(|| async {
                let started = Pool::start_with(
                    &self.program,
                    self.read.clone(),
                    self.size,
                    self.hooks.clone(),
                );
                match Box::pin(started).await {
                    Ok(p) if p.sandbox().contains("ocr=on") => {
                        let status = p.sandbox();
                        (Some(p), status)
                    }
                    Ok(p) => {
                        let status = p.sandbox();
                        p.shutdown().await;
                        (None, status)
                    }
                    Err(e) => (None, format!("not started: {e}")),
                }
            })
            .await;
        pool.as_ref()
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("program", &self.inner.program)
            .field("size", &self.inner.size)
            .finish_non_exhaustive()
    }
}

impl Hooks {
    /// Test hooks from the environment, in debug builds only (see
    /// [`wire::Hooks`]): `BULKWATCH_TEST_ABORT_ON` and
    /// `BULKWATCH_TEST_HANG_ON`. Release builds: none.
    pub fn from_env() -> Hooks {
        if !cfg!(debug_assertions) {
            return Hooks::default();
        }
        let var = |name: &str| {
            std::env::var_os(name)
                .map(|v| v.as_encoded_bytes().iter().take(256).copied().collect())
                .unwrap_or_default()
        };
        Hooks {
            abort_on: var("BULKWATCH_TEST_ABORT_ON"),
            hang_on: var("BULKWATCH_TEST_HANG_ON"),
            abort_deep_on: var("BULKWATCH_TEST_ABORT_DEEP_ON"),
            hang_deep_on: var("BULKWATCH_TEST_HANG_DEEP_ON"),
        }
    }
}

impl Pool {
    /// Starts `size` workers (at least 1) of `program` (the `bulkwatch`
    /// binary; [`Pool::program`]) reading with `cfg`'s settings, with
    /// `hooks` in debug builds ([`Hooks::from_env`]). Must be called
    /// inside a tokio runtime.
    ///
    /// # Errors
    /// A worker could not be started: the program is missing, is another
    /// build, or died at start.
    pub async fn start(
        program: &Path,
        cfg: &Config,
        size: usize,
        hooks: Hooks,
    ) -> Result<Pool, Failure> {
        // A descriptor this process got without close-on-exec (from its
        // service manager, its shell, a library) is not the workers' to
        // use: every one above standard error is marked so before the
        // first worker starts.
        close_fds::set_fds_cloexec_threadsafe(3, &[]);
        let mut read = read_config(cfg);
        let size = size.max(1);
        // The OCR workers, started at the first message that needs them
        // (or by `start_ocr`); the readers leave pictures of text to them.
        let ocr = read.scan.ocr.is_some().then(|| {
            Arc::new(Ocr {
                program: program.to_owned(),
                read: read.clone(),
                size: size.div_ceil(4),
                hooks: hooks.clone(),
                pool: tokio::sync::OnceCell::new(),
            })
        });
        read.scan.ocr_elsewhere = ocr.is_some();
        let pool = Self::start_with(program, read, size, hooks).await?;
        Ok(Pool { ocr, ..pool })
    }

    /// Starts the OCR workers now (the daemon does, to log whether
    /// pictures of text are read); true when they read them.
    pub async fn start_ocr(&self) -> bool {
        match &self.ocr {
            Some(o) => o.pool().await.is_some(),
            None => false,
        }
    }

    /// One OCR worker's slot taken for `sender` and held until dropped, as
    /// a message being read holds it (tests: the OCR workers busy without
    /// a clock). `None` when no OCR workers read pictures.
    #[doc(hidden)]
    pub async fn hold_ocr_worker(&self, sender: &str) -> Option<fair::Slot> {
        let ocr = self.ocr.as_ref()?.pool().await?;
        Some(ocr.inner.slots.acquire(sender).await)
    }

    /// [`Pool::start`] of one kind of worker: `size` workers reading with
    /// `read`.
    async fn start_with(
        program: &Path,
        read: ReadConfig,
        size: usize,
        hooks: Hooks,
    ) -> Result<Pool, Failure> {
        let hello = Hello {
            read: read.clone(),
            hooks,
        }
        .frame();
        let size = size.max(1);
        let inner = Arc::new(Inner {
            program: program.to_owned(),
            hello,
            read,
            size,
            idle: Mutex::new(Vec::with_capacity(size)),
            slots: fair::Slots::new(size),
            throttle: Mutex::new(Throttle::default()),
            stats: PoolStats::default(),
            sandbox: Mutex::new(String::new()),
        });
        for _ in 0..size {
            let w = inner.spawn().await?;
            inner.put(w);
        }
        Ok(Pool { inner, ocr: None })
    }

    /// The program that runs workers: this process's own binary, as it
    /// was when first asked (the daemon asks at start): a descriptor of it
    /// is kept open and workers are started from `/proc/PID/fd/N`, so a
    /// package upgrade that replaces the file under a running daemon does
    /// not give it workers of another build. Where `/proc` has no such
    /// path, the binary's path.
    ///
    /// # Errors
    /// Its path cannot be found (`/proc` not mounted).
    pub fn program() -> io::Result<PathBuf> {
        use std::os::fd::AsRawFd;
        static EXE: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
        let exe = EXE.get_or_init(|| std::fs::File::open("/proc/self/exe").ok());
        if let Some(f) = exe {
            let p = PathBuf::from(format!("/proc/{}/fd/{}", std::process::id(), f.as_raw_fd()));
            if p.exists() {
                return Ok(p);
            }
        }
        std::env::current_exe()
    }

    /// What the workers' sandbox took away (for the start-up log line),
    /// and the OCR workers'.
    pub fn sandbox(&self) -> String {
        let own = lock(&self.inner.sandbox).clone();
        match self.ocr.as_ref().map(|o| o.pool.get()) {
            Some(Some((Some(p), _))) => format!("{own}; OCR workers: {}", p.sandbox()),
            Some(Some((None, status))) => format!("{own}; OCR workers: {status}"),
            Some(None) => format!("{own}; OCR workers: not started yet"),
            None => own,
        }
    }

    /// The pool's counters.
    pub fn stats(&self) -> &PoolStats {
        &self.inner.stats
    }

    /// Workers at most.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Reads `raw` in a worker within `limit`, after waiting at most
    /// `limit` for a free one. On failure the worker is killed and
    /// replaced.
    ///
    /// # Errors
    /// Why there is no reading: see [`Failure`].
    pub async fn read(
        &self,
        raw: &[u8],
        rcpts: &[String],
        limit: Duration,
    ) -> Result<Reading, Failure> {
        self.read_as(raw, rcpts, "", limit, limit).await
    }

    /// [`Pool::read`] for `sender` (who holds the fewest workers is served
    /// first while messages wait: [`fair`]), waiting at most `wait` for a
    /// worker; `limit` bounds the reading itself, from when a worker takes
    /// the message, its pictures' text included (the OCR workers get what
    /// the readers left of it).
    ///
    /// # Errors
    /// Why there is no reading: see [`Failure`] ([`Failure::Queue`] when no
    /// worker was free in time).
    pub async fn read_as(
        &self,
        raw: &[u8],
        rcpts: &[String],
        sender: &str,
        wait: Duration,
        limit: Duration,
    ) -> Result<Reading, Failure> {
        let mut results = Vec::with_capacity(1);
        let taken = self
            .read_some(
                &[(raw, rcpts)],
                Turn::Now(sender),
                wait,
                limit,
                None,
                &mut results,
            )
            .await;
        // The message's deadline, by this process's clock: `limit` from
        // when a reader took it. The OCR workers get what is left of it,
        // not a time of their own.
        let until = taken.unwrap_or_else(Instant::now) + limit;
        let r = results.pop().unwrap_or(Err(Failure::Timeout(limit)));
        if let Err(f) = &r {
            self.inner.count(f);
        }
        match r {
            Ok(first) => Ok(self.with_ocr(first, raw, rcpts, sender, until).await),
            Err(f) => Err(f),
        }
    }

    /// `first`, or when it holds a picture of text and there are OCR
    /// workers, their reading of the message, within what is left of the
    /// message's time (`until`): an OCR worker still reading then is
    /// killed. When they fail, `first` stands; every message left to them
    /// is counted by its [`OcrOutcome`], and their failures by cause in
    /// their own statistics.
    async fn with_ocr(
        &self,
        first: Reading,
        raw: &[u8],
        rcpts: &[String],
        sender: &str,
        until: Instant,
    ) -> Reading {
        let Some(ocr) = self.ocr.as_ref().filter(|_| first.wants_ocr) else {
            return first;
        };
        let stats = &self.inner.stats;
        let Some(ocr) = ocr.pool().await else {
            // No OCR here (Tesseract is not installed): the reading is
            // the one a process without it makes.
            stats.count_ocr(OcrOutcome::Unavailable);
            return Reading {
                wants_ocr: false,
                ..first
            };
        };
        let answer = Box::pin(ocr.read_until(raw, rcpts, sender, until)).await;
        let outcome = OcrOutcome::of(&answer);
        stats.count_ocr(outcome);
        match answer {
            // Their shallow reading: the readers' deep one is more.
            Ok(r) if r.deep_failure.is_some() => first,
            Ok(r) => r,
            Err(_) => first,
        }
    }

    /// Reads `raw` in a worker by `until` (waiting for one included): a
    /// worker still reading then is killed. Failures are counted.
    async fn read_until(
        &self,
        raw: &[u8],
        rcpts: &[String],
        sender: &str,
        until: Instant,
    ) -> Result<Reading, Failure> {
        let left = until.saturating_duration_since(Instant::now());
        self.read_one(raw, rcpts, Turn::Now(sender), left, left, Some(until))
            .await
    }

    /// Reads one message in a worker taken in `turn` (waiting at most
    /// `wait`), within `limit` (and `until`); a failure is counted.
    async fn read_one(
        &self,
        raw: &[u8],
        rcpts: &[String],
        turn: Turn<'_>,
        wait: Duration,
        limit: Duration,
        until: Option<Instant>,
    ) -> Result<Reading, Failure> {
        let mut results = Vec::with_capacity(1);
        self.read_some(&[(raw, rcpts)], turn, wait, limit, until, &mut results)
            .await;
        let r = results.pop().unwrap_or(Err(Failure::Timeout(limit)));
        if let Err(f) = &r {
            self.inner.count(f);
        }
        r
    }

    /// Reads `raw` again with its pictures' text, later: a message whose
    /// picture the OCR workers had no time for (its verdict said
    /// `pictures=unread`). It takes an OCR worker only when no message of
    /// now waits for one ([`fair`]), waiting at most `wait`; `limit` bounds
    /// the reading. `None` when no OCR workers read pictures.
    pub async fn read_later(
        &self,
        raw: &[u8],
        rcpts: &[String],
        sender: &str,
        wait: Duration,
        limit: Duration,
    ) -> Option<Result<Reading, Failure>> {
        let ocr = self.ocr.as_ref()?.pool().await?;
        Some(
            ocr.read_one(raw, rcpts, Turn::Later(sender), wait, limit, None)
                .await,
        )
    }

    /// The OCR workers, once started and reading pictures.
    fn ocr_workers(&self) -> Option<&Pool> {
        self.ocr.as_ref()?.pool.get()?.0.as_ref()
    }

    /// The OCR workers' counters, once they started: their starts and
    /// their failures by cause.
    pub fn ocr_stats(&self) -> Option<&PoolStats> {
        self.ocr_workers().map(Pool::stats)
    }

    /// Reads every message of `msgs` (without recipients: mbox mail), in
    /// order, each within `limit` of the one before: the messages go to a
    /// worker back to back and the readings come back in bulk, so a batch
    /// costs a few system calls instead of a round trip each. A message
    /// that kills its worker fails alone (it is read once more, alone, to
    /// tell), and the messages after it go to another worker.
    pub async fn read_many(
        &self,
        msgs: &[&[u8]],
        limit: Duration,
    ) -> Vec<Result<Reading, Failure>> {
        let msgs: Vec<(&[u8], &[String])> = msgs.iter().map(|m| (*m, &[][..])).collect();
        self.read_all(&msgs, limit).await
    }

    async fn read_all(
        &self,
        msgs: &[(&[u8], &[String])],
        limit: Duration,
    ) -> Vec<Result<Reading, Failure>> {
        let mut results = Vec::with_capacity(msgs.len());
        while let Some(rest) = msgs.get(results.len()..).filter(|r| !r.is_empty()) {
            let before = results.len();
            self.read_some(rest, Turn::Now(""), limit, limit, None, &mut results)
                .await;
            if results.len() == before {
                // (read_some answers at least one; guard against a loop.)
                results.push(Err(Failure::Timeout(limit)));
            }
            // A worker writes its replies in bulk: when it dies or hangs,
            // replies of messages before the one that did it may be lost
            // with it, and the first message without one is not always the
            // culprit. A message fails only when it fails alone: from the
            // first without a reply, each is read alone until one fails.
            if rest.len() > 1 && results.last().is_some_and(Result::is_err) {
                results.pop();
                for msg in msgs.get(results.len()..).unwrap_or_default() {
                    self.read_some(
                        std::slice::from_ref(msg),
                        Turn::Now(""),
                        limit,
                        limit,
                        None,
                        &mut results,
                    )
                    .await;
                    if results.last().is_none_or(Result::is_err) {
                        break;
                    }
                }
            }
        }
        for f in results.iter().filter_map(|r| r.as_ref().err()) {
            self.inner.count(f);
        }
        if self.ocr.is_some() {
            for (r, (raw, rcpts)) in results.iter_mut().zip(msgs) {
                if let Ok(first) = r {
                    if first.wants_ocr {
                        let taken = std::mem::take(first);
                        // A batch's message: `limit` from now.
                        let until = Instant::now() + limit;
                        *first = self.with_ocr(taken, raw, rcpts, "", until).await;
                    }
                }
            }
        }
        results
    }

    /// Reads the first messages of `msgs` in one worker, up to and
    /// including the first that fails; pushes their results.
    async fn read_some(
        &self,
        msgs: &[(&[u8], &[String])],
        turn: Turn<'_>,
        wait: Duration,
        limit: Duration,
        until: Option<Instant>,
        results: &mut Vec<Result<Reading, Failure>>,
    ) -> Option<Instant> {
        let inner = &self.inner;
        // The wait for a worker is the queue's, not the reading's.
        let slot = async {
            match turn {
                Turn::Now(sender) => inner.slots.acquire(sender).await,
                Turn::Later(sender) => inner.slots.acquire_later(sender).await,
            }
        };
        let Ok(permit) = timeout(wait, slot).await else {
            results.push(Err(Failure::Queue(wait)));
            return None;
        };
        let taken = Instant::now();
        // With a deadline, the reading gets what the wait left of it.
        let limit = until.map_or(limit, |u| {
            u.saturating_duration_since(Instant::now()).min(limit)
        });
        let deadline = Instant::now() + limit;
        let idle = self.idle_worker().await;
        let mut w = match idle {
            Some(w) => w,
            None => match timeout_at(deadline, inner.spawn()).await {
                Ok(Ok(w)) => w,
                Ok(Err(f)) => {
                    results.push(Err(f));
                    return Some(taken);
                }
                Err(_) => {
                    results.push(Err(Failure::Timeout(limit)));
                    return Some(taken);
                }
            },
        };
        // One byte past the parser's bound: the worker then knows the
        // message was cut (and cuts it where it would have).
        let max = inner.read.scan.max_parse_bytes.saturating_add(1);
        let mut frames = std::mem::take(&mut w.buf);
        frames.clear();
        let mut one = Vec::new();
        for (raw, rcpts) in msgs {
            Request {
                rcpts: rcpts.iter().map(String::as_str).collect(),
                raw: raw.get(..max).unwrap_or(raw),
            }
            .frame_into(&mut one);
            frames.extend_from_slice(&one);
        }
        let before = results.len();
        let alive = exchange(&mut w, &frames, msgs.len(), inner, limit, results).await;
        let done = results.len() - before;
        // Large buffers are not kept between messages.
        if frames.capacity() <= 1 << 20 {
            w.buf = frames;
        }
        if alive {
            w.uses = w
                .uses
                .saturating_add(u32::try_from(done).unwrap_or(u32::MAX));
            if w.uses < MAX_USES {
                inner.put(w);
            } else {
                self.replace(w);
            }
        } else {
            let cause = w.bury().await;
            if let Some(Err(Failure::Died { cause: c })) = results.last_mut() {
                *c = cause;
            }
            self.restart(true);
        }
        drop(permit);
        Some(taken)
    }

    /// Ends the idle workers: their input closed, each ends by itself and
    /// is waited for (killed after a second). Workers still reading end
    /// when their pool is dropped.
    pub async fn shutdown(&self) {
        if let Some(p) = self.ocr_workers() {
            Box::pin(p.shutdown()).await;
        }
        let idle: Vec<Worker> = std::mem::take(&mut *lock(&self.inner.idle));
        for mut w in idle {
            drop(w.stdin);
            if timeout(Duration::from_secs(1), w.child.wait())
                .await
                .is_err()
            {
                let _ = w.child.start_kill();
                let _ = timeout(Duration::from_secs(1), w.child.wait()).await;
            }
        }
    }

    /// An idle worker still alive: one that died while idle (killed from
    /// outside, out of memory) is buried and counted, and the next tried,
    /// so that its death costs no message its verdict.
    async fn idle_worker(&self) -> Option<Worker> {
        loop {
            let mut w = lock(&self.inner.idle).pop()?;
            match w.child.try_wait() {
                Ok(None) => return Some(w),
                _ => {
                    let cause = w.bury().await;
                    self.inner.stats.died_idle.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(cause = %cause, "a worker died while idle; replaced before use");
                }
            }
        }
    }

    /// Retires a worker that did its [`MAX_USES`] and starts another.
    fn replace(&self, w: Worker) {
        drop(w);
        self.restart(false);
    }

    /// Starts a worker in the background for the idle list (after the
    /// throttle's pause when the last one `died`: [`Throttle`]), so that
    /// the next message does not wait for it (when no runtime runs tasks
    /// meanwhile, the next message starts one itself).
    fn restart(&self, died: bool) {
        let inner = Arc::clone(&self.inner);
        let delay = if died {
            lock(&inner.throttle).death(std::time::Instant::now())
        } else {
            Duration::ZERO
        };
        if !delay.is_zero() {
            inner.stats.throttled.fetch_add(1, Ordering::Relaxed);
        }
        tokio::spawn(async move {
            if !delay.is_zero() {
                tracing::warn!(
                    delay_ms = delay.as_millis() as u64,
                    "workers keep dying: the next one is started after a pause"
                );
                tokio::time::sleep(delay).await;
            }
            match inner.spawn().await {
                Ok(w) => inner.put(w),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start an analysis worker; the next message tries again")
                }
            }
        });
    }
}

/// The restart throttle: after [`Throttle::BURST`] deaths within
/// [`Throttle::WINDOW`], each restart waits, from 1 s doubling to 30 s,
/// until deaths stop (as Postfix's master pauses a service whose
/// processes keep failing). A message meanwhile starts a worker itself if
/// none is idle.
#[derive(Debug, Default)]
struct Throttle {
    deaths: std::collections::VecDeque<std::time::Instant>,
    delay: Duration,
}

impl Throttle {
    const BURST: usize = 5;
    const WINDOW: Duration = Duration::from_secs(10);
    const MAX_DELAY: Duration = Duration::from_secs(30);

    /// Notes a death at `now`; answers how long the restart waits.
    fn death(&mut self, now: std::time::Instant) -> Duration {
        self.deaths.push_back(now);
        while self
            .deaths
            .front()
            .is_some_and(|t| now.duration_since(*t) > Self::WINDOW)
        {
            self.deaths.pop_front();
        }
        if self.deaths.len() < Self::BURST {
            self.delay = Duration::ZERO;
        } else {
            self.delay = (self.delay * 2)
                .max(Duration::from_secs(1))
                .min(Self::MAX_DELAY);
        }
        self.delay
    }
}

/// A pool of one worker for a synchronous caller (`scan`, and each
/// analysis thread of `replay`), on a runtime of its own.
pub struct Local {
    rt: tokio::runtime::Runtime,
    pool: Pool,
}

impl Local {
    /// One worker of `program` reading with `cfg`'s settings (and `hooks`,
    /// see [`Pool::start`]).
    ///
    /// # Errors
    /// The runtime or the worker could not be started.
    pub fn start(program: &Path, cfg: &Config, hooks: Hooks) -> Result<Local, Failure> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::Start(StartFailure::Runtime(e)))?;
        let pool = rt.block_on(Pool::start(program, cfg, 1, hooks))?;
        Ok(Local { rt, pool })
    }

    /// [`Pool::read`], waiting for it.
    ///
    /// # Errors
    /// As [`Pool::read`].
    pub fn read(&self, raw: &[u8], rcpts: &[String], limit: Duration) -> Result<Reading, Failure> {
        self.rt.block_on(self.pool.read(raw, rcpts, limit))
    }

    /// [`Pool::read_many`], waiting for it.
    pub fn read_many(&self, msgs: &[&[u8]], limit: Duration) -> Vec<Result<Reading, Failure>> {
        self.rt.block_on(self.pool.read_many(msgs, limit))
    }

    /// The pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl Drop for Local {
    /// Ends the worker and waits for it (its CPU time is then counted as
    /// this process's children's).
    fn drop(&mut self) {
        self.rt.block_on(self.pool.shutdown());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A picture of three lines of "words" (black boxes of `widths`, in
    /// turn, 15 pixels apart) on white, 600 × 200.
    fn words(widths: &[usize]) -> Vec<u8> {
        let (w, h) = (600usize, 200usize);
        let mut p = vec![255u8; w * h];
        for (line, top) in [40usize, 90, 140].into_iter().enumerate() {
            let mut x = 20;
            for (i, width) in widths.iter().cycle().skip(line * 2).take(7).enumerate() {
                for y in top..top + 20 {
                    for dx in 0..*width {
                        if let Some(px) = p.get_mut(y * w + x + dx) {
                            *px = 0;
                        }
                    }
                }
                x += width + 15 + i % 2;
            }
        }
        p
    }

    /// A picture with speckles is of its family; the same layout with
    /// other words is not, whatever hash the two share.
    #[test]
    fn a_family_is_the_same_picture_not_the_same_layout() {
        let a = words(&[60, 40, 80, 50, 70]);
        let mut speckled = a.clone();
        let mut st = 5u64;
        for _ in 0..40 {
            let i = (testkit::splitmix(&mut st) % speckled.len() as u64) as usize;
            speckled[i] = 255 - speckled[i];
        }
        let other = words(&[40, 80, 60, 70, 50]);
        let t = |p: &[u8]| thumbnail(p, 600, 200);
        assert!(same_family(&t(&a), &t(&a)));
        assert!(same_family(&t(&a), &t(&speckled)));
        assert!(!same_family(&t(&a), &t(&other)));
        // Degenerate sizes are thumbnailed without a panic.
        let _ = thumbnail(&[0, 255], 2, 1);
        let _ = thumbnail(&[], 0, 0);
        let _ = thumbnail(&[7; 10], 100_000, 1);
    }
}
