//! Replaying mailboxes through the engine.
//!
//! This is the library function behind `bulkwatch replay` and `bulkwatch
//! tune`, and the one the tests call. Two clocks ([`Clock`]):
//!
//! - **Simulated** (the default): messages are fed in file order; the clock
//!   starts at [`REPLAY_EPOCH`] and advances by `1 / rate` seconds per
//!   message (one second by default). For a stream of synthetic or
//!   shuffled mail, which has no arrival times worth keeping; a message
//!   then shares the window with the 21,600 before it (the default span).
//! - **Arrival**: each message is judged at the time it reached the site,
//!   read from its own headers ([`arrival_time`]), and all messages of all
//!   files in that order, as if they had been delivered to one site. This
//!   is what a replay of a site's archive needs to give the verdicts the
//!   daemon would have given: a daily newsletter replayed one second apart
//!   is a campaign; delivered a day apart, its issues never share a 6-hour
//!   window. Every message is analyzed before the first is judged, since
//!   an archive need not be in order of arrival (the SpamAssassin corpus
//!   is in the order its owner fetched it). A message without a usable
//!   date (none, or one more than a day in the future: a forged or broken
//!   one) takes the time of the last dated message before it in its
//!   file, or of the first one when none is before it (0 in a file with
//!   none).
//!
//! A mailbox keeps part of the envelope. The envelope sender is the
//! address of a message's mbox `From ` line, else its `Return-Path` field
//! (which a delivery agent writes): the list rule and the conversation
//! rule read it as the daemon does. The recipients are not kept: each
//! copy of a message counts as one recipient of whom nothing is known (it
//! was delivered to one mailbox), and the recipient names used for
//! stripping personalization come from its To and Cc headers. Copies of
//! one message found in several inputs (the same Message-ID and the same
//! text in two or more Maildirs or mbox files: one delivery to several
//! mailboxes) are one message with that many recipients, as the daemon
//! saw it in one transaction: the first copy judged counts them all, and
//! the others are not judged again ([`ReplaySummary::copies`]).
//!
//! With `store.backend = "redis"` the replay on the simulated clock reads
//! and warms the shared state, exactly as a daemon would (the local engine
//! is the fallback); on the arrival clock it runs on memory alone
//! ([`Replayer::new`]).
//!
//! Campaign ids in the returned records are the final ids: a campaign that
//! was later merged into an older one is reported under the older id.

pub mod arrival;
pub mod maildir;
pub mod mbox;
pub mod spill;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};

pub use self::arrival::arrival_time;
use self::arrival::latest_arrival;
use crate::config::Config;
use crate::engine::campaign::CampaignId;
use crate::engine::verdict::{Level, LevelKind, Verdict};
use crate::engine::{Analysis, Engine, Envelope, UnixSecs};
use crate::store::judge::{Judge, Source, Warming};
use crate::store::RedisLayer;

/// Simulated time of the first message: 2024-01-01T00:00:00Z.
pub const REPLAY_EPOCH: u64 = 1_704_067_200;

/// Where a replay takes the time of each message from (module notes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// [`REPLAY_EPOCH`], then `1 / rate` seconds per message, file order.
    #[default]
    Simulated,
    /// Each message's time of arrival ([`arrival_time`]); every message of
    /// every file judged in that order.
    Arrival,
}

/// Options of a replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Messages per simulated second (1.0: one second apart), for
    /// [`Clock::Simulated`].
    pub rate: f64,
    /// Where each message's time comes from.
    pub clock: Clock,
    /// Threads that analyze messages (parse to fingerprint) in
    /// [`replay_files`]; 0: one per available core, at most
    /// [`DEFAULT_MAX_THREADS`]. Decisions are made in order on one
    /// thread, so the result is the same for any number.
    pub jobs: usize,
    /// Where messages are read (parsed and normalized).
    pub read_in: ReadIn,
    /// Write the records to a temporary file as they are made
    /// ([`spill::Spill`]) instead of keeping them in
    /// [`ReplaySummary::records`]: memory then stays bounded by the
    /// window however large the mailbox (`bulkwatch replay`).
    pub spill: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            rate: 1.0,
            clock: Clock::Simulated,
            jobs: 0,
            read_in: ReadIn::ThisProcess,
            spill: false,
        }
    }
}

/// Where a replay reads messages.
#[derive(Debug, Clone, Default)]
pub enum ReadIn {
    /// In this process: tests and benchmarks of the engine. A message
    /// that kills its parser ends the replay.
    #[default]
    ThisProcess,
    /// In worker processes of `program` (the `bulkwatch` binary), one per
    /// analysis thread, as the daemon reads mail ([`crate::worker`]): a
    /// message that kills its reading is reported
    /// ([`ReplaySummary::failures`]) and the replay goes on. What
    /// `bulkwatch replay`, `scan` and `tune` do.
    Workers {
        program: PathBuf,
        hooks: crate::worker::Hooks,
    },
}

/// How one analysis thread reads.
enum Reader {
    Here,
    Worker(crate::worker::Local),
}

impl Reader {
    fn new(read_in: &ReadIn, cfg: &Config) -> Result<Reader, crate::worker::Failure> {
        match read_in {
            ReadIn::ThisProcess => {
                crate::worker::provide_ocr_here(cfg);
                Ok(Reader::Here)
            }
            ReadIn::Workers { program, hooks } => Ok(Reader::Worker(crate::worker::Local::start(
                program,
                cfg,
                hooks.clone(),
            )?)),
        }
    }

    /// Reads and fingerprints the messages of a batch (no envelope; `None`
    /// for an unreadable one), in order. A worker gets the whole batch at
    /// once ([`crate::worker::Pool::read_many`]).
    fn analyze(&self, batch: &[Item], cfg: &Config) -> Vec<Option<Analyzed>> {
        match self {
            Reader::Here => batch
                .iter()
                .map(|item| {
                    item.msg
                        .as_ref()
                        .ok()
                        .map(|raw| Ok(analyze_unenveloped(raw, cfg)))
                })
                .collect(),
            Reader::Worker(w) => {
                let raws: Vec<&[u8]> = batch
                    .iter()
                    .filter_map(|item| item.msg.as_deref().ok())
                    .collect();
                let mut read = w
                    .read_many(&raws, cfg.milter.engine_timeout)
                    .into_iter()
                    .map(|r| r.map(|r| crate::engine::fingerprint(r, cfg)));
                batch
                    .iter()
                    .map(|item| match item.msg {
                        Ok(_) => read.next(),
                        Err(_) => None,
                    })
                    .collect()
            }
        }
    }
}

/// Why a replay did not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// An input could not be opened (or holds no message).
    #[error("cannot read {path}")]
    Input {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The workers that read mail could not be started.
    #[error("cannot start the workers that read mail")]
    Workers(#[source] crate::worker::Failure),
    /// The records could not be kept in a temporary file
    /// ([`ReplayOptions::spill`]).
    #[error("cannot keep the records in a temporary file")]
    Spill(#[source] std::io::Error),
}

/// A message the replay could not judge because reading it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub mbox: String,
    /// 1-based index within its mbox.
    pub index: usize,
    /// What happened ([`crate::worker::Failure`]).
    pub cause: String,
}

/// Most analysis threads `jobs = 0` starts. Past about eight, the one
/// thread that reads the mailbox and decides (some 4 µs a message of the
/// 25 to 50 of analysis) cannot keep more busy, and each thread may hold
/// up to three batches in memory.
pub const DEFAULT_MAX_THREADS: usize = 8;

impl ReplayOptions {
    /// The number of analysis threads to run (at least 1).
    pub fn threads(&self) -> usize {
        match self.jobs {
            0 => std::thread::available_parallelism()
                .map_or(1, usize::from)
                .min(DEFAULT_MAX_THREADS),
            n => n,
        }
    }
}

/// Most messages in one batch of [`replay_files`]'s pipeline.
const BATCH_MESSAGES: usize = 128;
/// A batch stops growing once its messages hold this many bytes, so a
/// mailbox of large messages does not fill memory while it is read ahead.
const BATCH_BYTES: usize = 8 << 20;

/// One replayed message.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based index over all inputs.
    pub n: usize,
    pub mbox: String,
    /// 1-based index within its mbox.
    pub index: usize,
    /// The time it was judged at, Unix seconds (see [`Clock`]).
    pub time: u64,
    pub message_id: Option<String>,
    pub level: Level,
    /// Final campaign id (after merges).
    pub campaign: Option<CampaignId>,
    /// Campaign recipients when this message was judged.
    pub campaign_size: u64,
    /// Weighted campaign size when this message was judged (what the
    /// thresholds compare).
    pub score: f64,
    pub exact: bool,
    pub distance: Option<u32>,
    pub resemblance: Option<f64>,
    pub features: usize,
    pub simhash: Option<u64>,
    pub subject: Option<String>,
    /// `n` of the closest earlier message it matched, if any.
    pub nearest: Option<usize>,
    /// Distinct texts that matched it, when it joined its campaign on
    /// weak evidence; 0 otherwise.
    pub corroborating: u32,
    /// Mailing-list mail (`Verdict::list`): list headers, and a campaign
    /// of one sender domain.
    pub list: bool,
    /// The closest campaign it matched but did not join (final id, after
    /// merges), with that match's distance and estimated resemblance.
    pub near_campaign: Option<CampaignId>,
    pub near_distance: Option<u32>,
    pub near_resemblance: Option<f64>,
}

/// A campaign found by the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignReport {
    pub id: CampaignId,
    pub messages: usize,
    pub first_n: usize,
    pub last_n: usize,
    pub max_level: Level,
    pub sample_subject: Option<String>,
}

/// What a replay found.
#[derive(Default)]
pub struct ReplaySummary {
    /// Every message's record, in order (empty with
    /// [`ReplayOptions::spill`]: see [`ReplaySummary::each_record`]).
    pub records: Vec<Record>,
    /// The records on disk, with [`ReplayOptions::spill`].
    spill: Option<spill::Spill>,
    /// Campaign ids merged into others, for the spilled records.
    merges: Merges,
    /// Records made in all.
    made: usize,
    /// Messages that could not be read from an mbox (I/O errors).
    pub read_errors: usize,
    /// Messages whose reading failed in their worker (it died, panicked
    /// or ran out of time), in the order met; the replay went on.
    pub failures: Vec<Failed>,
    pub by_level: HashMap<&'static str, usize>,
    /// With the Redis store: messages Redis judged, and messages judged
    /// from the local window because Redis failed or was skipped.
    pub redis_ok: u64,
    pub redis_fallbacks: u64,
    /// Copies of a message in another input than the copy judged (the
    /// same Message-ID and text): counted as its recipients, not judged
    /// again (module notes).
    pub copies: usize,
}

impl std::fmt::Debug for ReplaySummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySummary")
            .field("records", &self.made)
            .field("read_errors", &self.read_errors)
            .field("failures", &self.failures)
            .finish_non_exhaustive()
    }
}

impl ReplaySummary {
    /// Messages judged (records made).
    pub fn judged(&self) -> usize {
        self.made
    }

    /// Calls `f` with every record in order, its campaign ids final
    /// (after the merges), from memory or from the spill.
    ///
    /// # Errors
    /// The spill could not be read back.
    pub fn each_record(&mut self, mut f: impl FnMut(&Record)) -> std::io::Result<()> {
        match self.spill.as_mut() {
            None => {
                for r in &self.records {
                    f(r);
                }
            }
            Some(s) => {
                for r in s.records()? {
                    let mut r = r?;
                    r.campaign = r.campaign.map(|id| self.merges.find(id));
                    r.near_campaign = r.near_campaign.map(|id| self.merges.find(id));
                    f(&r);
                }
            }
        }
        Ok(())
    }

    /// Campaigns of two or more messages, largest first.
    ///
    /// # Errors
    /// The spill could not be read back.
    pub fn campaigns_read(&mut self) -> std::io::Result<Vec<CampaignReport>> {
        let mut map: HashMap<CampaignId, CampaignReport> = HashMap::new();
        self.each_record(|r| add_to_report(&mut map, r))?;
        Ok(sorted_reports(map))
    }

    /// Campaigns of two or more messages, largest first (records in
    /// memory; see [`ReplaySummary::campaigns_read`] for spilled ones).
    pub fn campaigns(&self) -> Vec<CampaignReport> {
        let mut map: HashMap<CampaignId, CampaignReport> = HashMap::new();
        for r in &self.records {
            add_to_report(&mut map, r);
        }
        sorted_reports(map)
    }

    pub fn count(&self, level: LevelKind) -> usize {
        self.by_level.get(level.as_str()).copied().unwrap_or(0)
    }
}

fn add_to_report(map: &mut HashMap<CampaignId, CampaignReport>, r: &Record) {
    let Some(id) = r.campaign else { return };
    let e = map.entry(id).or_insert(CampaignReport {
        id,
        messages: 0,
        first_n: r.n,
        last_n: r.n,
        max_level: Level::Clean,
        sample_subject: r.subject.clone(),
    });
    e.messages += 1;
    e.last_n = r.n;
    if matches!(r.level, Level::Suspect | Level::Bulk) && r.level.kind() > e.max_level.kind() {
        e.max_level = r.level;
    }
}

fn sorted_reports(map: HashMap<CampaignId, CampaignReport>) -> Vec<CampaignReport> {
    let mut v: Vec<CampaignReport> = map.into_values().filter(|c| c.messages >= 2).collect();
    v.sort_by(|a, b| b.messages.cmp(&a.messages).then(a.first_n.cmp(&b.first_n)));
    v
}

/// Union-find over campaign ids merged during the replay.
#[derive(Default, Clone)]
struct Merges(HashMap<CampaignId, CampaignId>);

impl Merges {
    fn find(&self, mut id: CampaignId) -> CampaignId {
        for _ in 0..10_000 {
            match self.0.get(&id) {
                Some(next) if *next != id => id = *next,
                _ => break,
            }
        }
        id
    }
}

pub use self::mbox::read_mbox;

/// The record number of each window sequence number a replay gave out,
/// for the records' `nearest`: 4 bytes per windowed message, not per
/// replayed one. A nearest entry was in the window when the message was
/// judged, before the message's own entry took the place of the oldest,
/// so the numbers of the window and one more are kept. Sequence numbers
/// come in increasing order; with a shared store other hosts' entries take
/// numbers too, and those read as none.
struct SeqToN {
    /// The sequence number of `ns[0]`.
    base: u64,
    ns: VecDeque<u32>,
    keep: usize,
}

impl SeqToN {
    /// No record (a number another host's entry took).
    const NONE: u32 = u32::MAX;

    /// For a window of `window` entries.
    fn new(window: usize) -> SeqToN {
        SeqToN {
            base: 0,
            ns: VecDeque::new(),
            keep: window.saturating_add(1),
        }
    }

    fn end(&self) -> u64 {
        self.base + self.ns.len() as u64
    }

    fn push(&mut self, seq: u64, n: usize) {
        if seq < self.end() {
            // Not in order: nothing to trust before it.
            self.ns.clear();
        }
        if self.ns.is_empty() || seq - self.end() >= self.keep as u64 {
            self.ns.clear();
            self.base = seq;
        }
        while self.end() < seq {
            self.ns.push_back(Self::NONE);
        }
        self.ns.push_back(u32::try_from(n).unwrap_or(Self::NONE));
        while self.ns.len() > self.keep {
            self.ns.pop_front();
            self.base += 1;
        }
    }

    fn get(&self, seq: u64) -> Option<usize> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.ns
            .get(i)
            .filter(|n| **n != Self::NONE)
            .map(|n| *n as usize)
    }
}

/// The replay state, fed one message at a time.
pub struct Replayer {
    /// The local engine and, when the configuration asks for one, the
    /// Redis store: its verdicts win and the local engine is the fallback,
    /// decided where the milter's are ([`Judge`]).
    judge: Judge,
    cfg: Arc<Config>,
    opts: ReplayOptions,
    merges: Merges,
    /// Window sequence number -> record number, for `nearest`.
    seq_to_n: SeqToN,
    /// The first error writing the spill.
    spill_error: Option<std::io::Error>,
    /// [`Clock::Arrival`]: the time the last message was judged at, and
    /// the latest time believed ([`latest_arrival`]).
    last_arrival: u64,
    latest_arrival: u64,
    pub summary: ReplaySummary,
}

impl Replayer {
    /// A replayer with the store `cfg` configures. A Redis store that
    /// cannot be set up (a bad address) is logged and the replay runs on
    /// memory alone; a Redis that is down only makes messages fall back.
    ///
    /// With [`Clock::Arrival`] the replay runs on memory alone, whatever
    /// the store: shared state holds the site's present, and mail of the
    /// past judged against it would meet entries from its future (the log
    /// layout would even apply it at the log's newest time).
    pub fn new(cfg: &Config, opts: ReplayOptions) -> Replayer {
        if opts.clock == Clock::Arrival {
            return Replayer::with_redis(cfg, opts, None);
        }
        let shared = RedisLayer::from_config(cfg).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "shared store unusable; replaying on memory alone");
            None
        });
        Replayer::with_redis(cfg, opts, shared)
    }

    /// A replayer over a given shared store (or none).
    pub fn with_redis(cfg: &Config, opts: ReplayOptions, shared: Option<RedisLayer>) -> Replayer {
        Replayer {
            judge: Judge::new(Engine::new(cfg), shared, Warming::InPlace),
            cfg: Arc::new(cfg.clone()),
            opts,
            merges: Merges::default(),
            seq_to_n: SeqToN::new(cfg.window.max_entries),
            spill_error: None,
            last_arrival: 0,
            latest_arrival: latest_arrival(),
            summary: ReplaySummary::default(),
        }
    }

    /// The local engine.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.judge.engine()
    }

    /// The Redis store, if any.
    pub fn redis(&self) -> Option<&RedisLayer> {
        self.judge.redis()
    }

    /// The time message `n` (1-based) is judged at: simulated, or its
    /// arrival time, never earlier than the message before it.
    fn time_of(&mut self, n: usize, arrival: Option<u64>) -> UnixSecs {
        match self.opts.clock {
            Clock::Simulated => {
                let secs = (n.saturating_sub(1) as f64 / self.opts.rate.max(1e-9)).floor();
                UnixSecs(REPLAY_EPOCH + secs.min(1e12) as u64)
            }
            Clock::Arrival => {
                let own = arrival.filter(|t| *t <= self.latest_arrival);
                self.last_arrival = own.unwrap_or(0).max(self.last_arrival);
                UnixSecs(self.last_arrival)
            }
        }
    }

    /// Feeds one message and returns its verdict.
    pub fn feed(&mut self, mbox: &str, index: usize, raw: &[u8]) -> Verdict {
        // Read in this process: its recognizer for pictures of text, once.
        static OCR: std::sync::Once = std::sync::Once::new();
        OCR.call_once(|| crate::worker::provide_ocr_here(&self.cfg));
        let a = analyze_unenveloped(raw, &self.cfg);
        let arrival = match self.opts.clock {
            Clock::Simulated => None,
            Clock::Arrival => arrival_time(raw),
        };
        let env = envelope_of(return_path(raw), 1);
        self.feed_timed(mbox, index, &a, arrival, &env)
    }

    /// Feeds one message already analyzed, with its arrival time (Unix
    /// seconds, from [`arrival_time`]), and returns its verdict. The
    /// simulated clock ignores `arrival`; the arrival clock judges a
    /// message without one, with one earlier than the last, or with one
    /// more than a day past this host's clock, at the last message's time
    /// ([`replay_files`] sorts by arrival first; this takes messages in
    /// the order given).
    fn feed_timed(
        &mut self,
        mbox: &str,
        index: usize,
        a: &Analysis,
        arrival: Option<u64>,
        env: &Envelope,
    ) -> Verdict {
        let n = self.summary.made + 1;
        let now = self.time_of(n, arrival);
        let judged = self.judge.judge(&self.cfg, a, env, now);
        match judged.source {
            Source::Local => {}
            Source::Redis => self.summary.redis_ok += 1,
            Source::Fallback => self.summary.redis_fallbacks += 1,
        }
        let v = judged.verdict;
        if let Some(c) = &v.campaign {
            for m in &v.merged {
                self.merges.0.insert(*m, c.id);
            }
        }
        *self.summary.by_level.entry(v.level.as_str()).or_default() += 1;
        if let Some(seq) = v.seq {
            self.seq_to_n.push(seq, n);
        }
        let nearest = v.nearest.and_then(|s| self.seq_to_n.get(s));
        let record = Record {
            n,
            mbox: mbox.to_owned(),
            index,
            time: now.0,
            message_id: a.message_id.clone(),
            level: v.level,
            campaign: v.campaign.as_ref().map(|c| c.id),
            campaign_size: v.campaign.as_ref().map_or(0, |c| c.recipients),
            score: v.campaign.as_ref().map_or(0.0, |c| c.score),
            exact: v.exact,
            distance: v.distance,
            resemblance: v.resemblance,
            features: v.features,
            simhash: v.simhash,
            subject: a.subject.clone(),
            nearest,
            corroborating: v.corroborating,
            list: v.list,
            near_campaign: v.near_miss.map(|m| m.campaign),
            near_distance: v.near_miss.map(|m| m.distance),
            near_resemblance: v
                .near_miss
                .map(|m| crate::engine::minhash::jaccard_estimate(m.sketch_diff)),
        };
        self.summary.made = n;
        match self.summary.spill.as_mut() {
            Some(spill) => {
                if let Err(e) = spill.push(&record) {
                    self.spill_error.get_or_insert(e);
                }
            }
            None => self.summary.records.push(record),
        }
        v
    }

    /// Counts a message that could not be read.
    pub fn read_error(&mut self) {
        self.summary.read_errors += 1;
    }

    /// Records a message whose reading failed.
    pub fn analysis_failed(&mut self, mbox: &str, index: usize, f: &crate::worker::Failure) {
        self.summary.failures.push(Failed {
            mbox: mbox.to_owned(),
            index,
            cause: f.to_string(),
        });
    }

    /// Writes the records to a temporary file as they are made
    /// ([`ReplayOptions::spill`]).
    ///
    /// # Errors
    /// The file cannot be made.
    pub fn spill_records(&mut self) -> std::io::Result<()> {
        self.summary.spill = Some(spill::Spill::new()?);
        Ok(())
    }

    /// Resolves campaign ids through the merges and returns the summary
    /// (and the first error writing the spill, if any).
    fn finish_spilled(mut self) -> Result<ReplaySummary, std::io::Error> {
        match self.spill_error.take() {
            Some(e) => Err(e),
            None => Ok(self.into_summary()),
        }
    }

    /// Resolves campaign ids through the merges and returns the summary.
    pub fn into_summary(mut self) -> ReplaySummary {
        for r in &mut self.summary.records {
            if let Some(id) = r.campaign {
                r.campaign = Some(self.merges.find(id));
            }
            if let Some(id) = r.near_campaign {
                r.near_campaign = Some(self.merges.find(id));
            }
        }
        self.summary.merges = std::mem::take(&mut self.merges);
        self.summary
    }
}

/// Replays mbox files; a file that holds no message is an error. The
/// simulated clock judges them file after file as
/// they are read; the arrival clock analyzes every message first, then
/// judges all of them in order of arrival (module notes). `progress` is
/// called after each message judged.
///
/// With more than one thread ([`ReplayOptions::threads`]), a reader thread
/// splits the mailboxes into batches (at most 128 messages and about 8 MiB)
/// and hands them round-robin to analysis threads; this thread takes their
/// results back in the same round-robin order, so messages come back in
/// the order read. Each thread holds at most one batch waiting, one in
/// work and one done. On the simulated clock memory stays bounded however
/// large the mailbox (but for the records, see [`ReplaySummary`]); on the
/// arrival clock every analyzed message waits to be judged, without its
/// normalized text (docs/admin/limits.md).
///
/// # Errors
/// Opening a file fails: the path and the I/O error. Every file is opened
/// once before the first message is read. Or the workers
/// ([`ReadIn::Workers`]) cannot be started.
pub fn replay_files(
    paths: &[PathBuf],
    cfg: &Config,
    opts: ReplayOptions,
    mut progress: impl FnMut(u64),
) -> Result<ReplaySummary, ReplayError> {
    let given = paths;
    let paths = &expand_inputs(given);
    let threads = opts.threads();
    let clock = opts.clock;
    // What the parser reads of a message, and one byte more so that the
    // cut shows: a gigabyte on one line is read past, not kept.
    let max_message = cfg.scan.max_parse_bytes.saturating_add(1);
    let inputs = Inputs::open(paths, clock, max_message)
        .map_err(|(path, source)| ReplayError::Input { path, source })?;
    let mut copies = Copies::read(paths, max_message);
    let readers = (0..threads)
        .map(|_| Reader::new(&opts.read_in, cfg))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ReplayError::Workers)?;
    let names: Vec<String> = paths.iter().map(|p| mbox_name(p)).collect();
    let spill = opts.spill;
    let mut r = Replayer::new(cfg, opts);
    if spill {
        r.spill_records().map_err(ReplayError::Spill)?;
    }
    // Messages per file, unreadable ones included.
    let mut counts = vec![0usize; paths.len()];
    let mut count = |item: &Item| {
        if let Some(c) = counts.get_mut(item.file) {
            *c += 1;
        }
    };
    match clock {
        Clock::Simulated => for_each_analyzed(inputs, cfg, readers, |item, a| {
            count(&item);
            feed_item(
                &mut r,
                &names,
                &mut copies,
                &item,
                a.as_ref(),
                &mut progress,
            );
        }),
        Clock::Arrival => {
            let mut all: Vec<(Item, Option<Analyzed>)> = Vec::new();
            for_each_analyzed(inputs, cfg, readers, |mut item, a| {
                count(&item);
                // The message's bytes are done with: keep what judging needs.
                item.msg = item.msg.map(|_| Vec::new());
                all.push((item, a.map(|a| a.map(compact))));
            });
            time_undated(&mut all);
            // Stable: equal times stay in the order read.
            all.sort_by_key(|(item, _)| item.time);
            for (item, a) in &all {
                feed_item(&mut r, &names, &mut copies, item, a.as_ref(), &mut progress);
            }
        }
    }
    // An input that holds no message is a mistake (a file that is not
    // mail, an empty Maildir), not a mailbox of zero messages; in a spool
    // an empty Maildir is a mailbox without mail, but a spool of them all
    // empty is the same mistake.
    let held = |p: &PathBuf| -> usize {
        paths
            .iter()
            .zip(&counts)
            .filter(|(q, _)| *q == p || (!given.contains(q) && q.starts_with(p)))
            .map(|(_, n)| *n)
            .sum()
    };
    if let Some(p) = given.iter().find(|p| held(p) == 0) {
        return Err(ReplayError::Input {
            path: p.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it holds no message (an mbox file starts each message with a \"From \" line; \
                 a Maildir holds one per file in cur/ and new/)",
            ),
        });
    }
    r.finish_spilled().map_err(ReplayError::Spill)
}

/// A message's analysis, or why reading it failed.
type Analyzed = Result<Analysis, crate::worker::Failure>;

/// What the arrival clock keeps of an analysis until its message is
/// judged: everything but the normalized text.
fn compact(mut a: Analysis) -> Analysis {
    a.normalized = Default::default();
    a
}

/// Gives each message of the arrival clock that has no usable date the
/// time of the last dated message before it in its file, or, before the
/// first one, the time of that first one (0 in a file with none).
fn time_undated(all: &mut [(Item, Option<Analyzed>)]) {
    for run in all.chunk_by_mut(|(x, _), (y, _)| x.file == y.file) {
        let mut last = run.iter().find_map(|(i, _)| i.time).unwrap_or(0);
        for (item, _) in run.iter_mut() {
            last = item.time.unwrap_or(last);
            item.time = Some(last);
        }
    }
}

/// One message of a replay's input.
struct Item {
    /// Which input file (index into the paths).
    file: usize,
    /// 0-based index within its file.
    index: usize,
    /// The message, or the error reading it.
    msg: std::io::Result<Vec<u8>>,
    /// [`Clock::Arrival`]: its arrival time, `None` when it has no usable
    /// date (none, or one more than a day in the future); until
    /// [`time_undated`]. `None` on the simulated clock.
    time: Option<u64>,
    /// Its envelope sender: the mbox `From ` line's address, else its
    /// `Return-Path` field (`Some("")`: the null sender).
    sender: Option<String>,
}

/// The messages of a replay's files, file after file, one file open at a
/// time.
struct Inputs {
    paths: Vec<PathBuf>,
    clock: Clock,
    /// Most bytes kept of one message.
    max_message: usize,
    /// The file being read.
    current: usize,
    messages: Option<std::iter::Enumerate<Messages>>,
    /// [`Clock::Arrival`]: later dates are taken for errors.
    not_after: u64,
}

/// The messages of one input, read as they are needed, each with the
/// envelope sender its mbox `From ` line names.
type Messages = Box<dyn Iterator<Item = std::io::Result<(Vec<u8>, Option<String>)>> + Send>;

/// An mbox's messages with the senders of their `From ` lines.
struct WithSenders<R>(mbox::Mbox<R>);

impl<R: std::io::Read> Iterator for WithSenders<R> {
    type Item = std::io::Result<(Vec<u8>, Option<String>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let m = self.0.next()?;
        let sender = self.0.sender().map(str::to_owned);
        Some(m.map(|bytes| (bytes, sender)))
    }
}

/// The path that names standard input (an mbox).
pub const STDIN: &str = "-";

/// The messages of one input: standard input (`-`, an mbox), a Maildir
/// directory, or an mbox file.
/// Each message is kept up to `max` bytes.
fn open_input(path: &Path, max: usize) -> std::io::Result<Messages> {
    if path.as_os_str() == STDIN {
        return Ok(Box::new(WithSenders(mbox::read_mbox_bounded(
            std::io::stdin(),
            max,
        ))));
    }
    if path.is_dir() {
        let files = maildir::files(path)?;
        return Ok(Box::new(
            files
                .into_iter()
                .map(move |f| maildir::read_message(&f, max).map(|m| (m, None))),
        ));
    }
    Ok(Box::new(WithSenders(mbox::read_mbox_bounded(
        std::fs::File::open(path)?,
        max,
    ))))
}

impl Inputs {
    /// Checks every input first (a file opens, a directory is a Maildir),
    /// to fail on a bad path before any message is read.
    fn open(
        paths: &[PathBuf],
        clock: Clock,
        max_message: usize,
    ) -> Result<Inputs, (PathBuf, std::io::Error)> {
        for p in paths {
            let checked = if p.as_os_str() == STDIN {
                Ok(())
            } else if p.is_dir() {
                maildir::files(p).map(drop)
            } else {
                std::fs::File::open(p).map(drop)
            };
            checked.map_err(|e| (p.clone(), e))?;
        }
        Ok(Inputs {
            paths: paths.to_vec(),
            clock,
            max_message,
            current: 0,
            messages: None,
            not_after: latest_arrival(),
        })
    }
}

impl Iterator for Inputs {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            let file = self.current;
            let messages = match &mut self.messages {
                Some(m) => m,
                None => {
                    let path = self.paths.get(file)?;
                    match open_input(path, self.max_message) {
                        Ok(m) => self.messages.insert(m.enumerate()),
                        Err(e) => {
                            // Opened a moment ago, gone since: one
                            // unreadable message, and the replay goes on.
                            self.current += 1;
                            return Some(Item {
                                file,
                                index: 0,
                                msg: Err(e),
                                time: None,
                                sender: None,
                            });
                        }
                    }
                }
            };
            let Some((index, msg)) = messages.next() else {
                self.messages = None;
                self.current += 1;
                continue;
            };
            let (msg, line_sender) = match msg {
                Ok((m, s)) => (Ok(m), s),
                Err(e) => (Err(e), None),
            };
            let time = match self.clock {
                Clock::Simulated => None,
                Clock::Arrival => msg
                    .as_deref()
                    .ok()
                    .and_then(arrival_time)
                    .filter(|t| *t <= self.not_after),
            };
            let raw = msg.as_deref().ok();
            return Some(Item {
                file,
                index,
                sender: line_sender.or_else(|| raw.and_then(return_path)),
                msg,
                time,
            });
        }
    }
}

/// Decides one message from its analysis, or counts it unreadable or
/// failed.
fn feed_item(
    r: &mut Replayer,
    names: &[String],
    copies: &mut Copies,
    item: &Item,
    a: Option<&Analyzed>,
    progress: &mut impl FnMut(u64),
) {
    let name = names.get(item.file).map_or("", String::as_str);
    match a {
        Some(Ok(a)) => {
            let exact = a.fingerprint.as_ref().map(|f| f.exact);
            let id = a.message_id.as_deref().and_then(id_hash);
            match copies.judge(id, item.file, exact) {
                Delivery::CopyOf => r.summary.copies += 1,
                Delivery::To(n) => {
                    let env = envelope_of(item.sender.clone(), n);
                    r.feed_timed(name, item.index + 1, a, item.time, &env);
                }
            }
        }
        Some(Err(f)) => r.analysis_failed(name, item.index + 1, f),
        None => r.read_error(),
    }
    progress(1);
}

/// Analyzes every message of `messages` and hands each with its analysis
/// (`None`: unreadable) to `f`, in the order read: on this thread with
/// one reader, or on one analysis thread per reader with a thread that
/// reads the inputs.
fn for_each_analyzed(
    mut messages: impl Iterator<Item = Item> + Send,
    cfg: &Config,
    readers: Vec<Reader>,
    mut f: impl FnMut(Item, Option<Analyzed>),
) {
    let threads = readers.len();
    let next_batch = |messages: &mut dyn Iterator<Item = Item>| {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < BATCH_MESSAGES && bytes < BATCH_BYTES {
            let Some(item) = messages.next() else {
                break;
            };
            bytes += item.msg.as_ref().map_or(0, Vec::len);
            batch.push(item);
        }
        batch
    };
    if threads <= 1 {
        let Some(reader) = readers.first() else {
            return;
        };
        loop {
            let batch = next_batch(&mut messages);
            if batch.is_empty() {
                return;
            }
            let analyses = reader.analyze(&batch, cfg);
            for (item, a) in batch.into_iter().zip(analyses) {
                f(item, a);
            }
        }
    }
    use std::sync::mpsc::sync_channel;
    type Batch = Vec<Item>;
    std::thread::scope(|scope| {
        let mut to_workers = Vec::with_capacity(threads);
        let mut from_workers = Vec::with_capacity(threads);
        for reader in readers {
            let (tx, rx) = sync_channel::<Batch>(1);
            let (done_tx, done_rx) = sync_channel::<(Batch, Vec<Option<Analyzed>>)>(1);
            scope.spawn(move || {
                for batch in rx {
                    let analyses = reader.analyze(&batch, cfg);
                    if done_tx.send((batch, analyses)).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(tx);
            from_workers.push(done_rx);
        }
        scope.spawn(move || {
            for k in 0.. {
                let batch = next_batch(&mut messages);
                let worker = to_workers.get(k % threads);
                if batch.is_empty() || worker.is_none_or(|w| w.send(batch).is_err()) {
                    // Dropping the senders ends the workers' loops.
                    break;
                }
            }
        });
        // Batch k went to worker k % threads; a closed channel is the end
        // of the input (or a worker that panicked: the scope then re-raises
        // its panic).
        for k in 0.. {
            let Some(Ok((batch, analyses))) = from_workers.get(k % threads).map(|w| w.recv())
            else {
                break;
            };
            for (item, a) in batch.into_iter().zip(analyses) {
                f(item, a);
            }
        }
    });
}

/// The inputs a replay reads: each path as given, but a directory that is
/// no Maildir and holds Maildirs (a mail spool: `DOMAIN/USER/Maildir`),
/// which stands for those Maildirs, in order of path, found up to
/// [`MAX_SPOOL_DEPTH`] levels down without following links. A directory
/// with none stays as given (and is refused as no Maildir).
pub fn expand_inputs(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() != STDIN && p.is_dir() && !maildir::is_maildir(p) {
            let mut found = Vec::new();
            find_maildirs(p, 0, &mut found);
            if !found.is_empty() {
                found.sort();
                out.extend(found);
                continue;
            }
        }
        out.push(p.clone());
    }
    out
}

/// Levels below a spool directory searched for Maildirs.
pub const MAX_SPOOL_DEPTH: usize = 4;
/// Most Maildirs one spool directory stands for.
const MAX_SPOOL_MAILDIRS: usize = 100_000;

fn find_maildirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_SPOOL_DEPTH || out.len() >= MAX_SPOOL_MAILDIRS {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if out.len() >= MAX_SPOOL_MAILDIRS {
            return;
        }
        if maildir::is_maildir(&d) {
            out.push(d);
        } else {
            find_maildirs(&d, depth + 1, out);
        }
    }
}

/// The envelope a replayed message is judged with: its sender, and `n`
/// recipients of whom nothing is known (module notes).
fn envelope_of(sender: Option<String>, n: u32) -> Envelope {
    Envelope {
        mail_from: sender,
        more_rcpts: if n > 1 { n } else { 0 },
        ..Envelope::default()
    }
}

/// The value of the first `name:` field of `raw`'s header section (up to
/// the first empty line, at most 64 KiB read), unfolded and trimmed.
fn header_value(raw: &[u8], name: &str) -> Option<String> {
    let head = raw.get(..raw.len().min(64 << 10)).unwrap_or(raw);
    let mut lines = head.split(|b| *b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return None;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let (n, v) = line.split_at(colon);
        if !n.eq_ignore_ascii_case(name.as_bytes()) {
            continue;
        }
        let mut value = String::from_utf8_lossy(v.get(1..).unwrap_or_default()).into_owned();
        while let Some(next) = lines.peek() {
            if !next.starts_with(b" ") && !next.starts_with(b"\t") {
                break;
            }
            value.push(' ');
            value.push_str(String::from_utf8_lossy(next).trim());
            lines.next();
        }
        return Some(value.trim().to_owned());
    }
    None
}

/// The envelope sender a delivery agent wrote into `Return-Path`
/// (`Some("")`: the null sender).
fn return_path(raw: &[u8]) -> Option<String> {
    let v = header_value(raw, "Return-Path")?;
    let v = v
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim();
    (v.is_empty() || v.contains('@')).then(|| v.to_owned())
}

/// A hash of the message's Message-ID, as written between its brackets.
fn message_id_hash(raw: &[u8]) -> Option<u64> {
    id_hash(&header_value(raw, "Message-ID")?)
}

/// A hash of a Message-ID unfolded, without whitespace and brackets (as
/// the analysis keeps it: `Analysis::message_id`).
fn id_hash(id: &str) -> Option<u64> {
    let id: String = id.chars().filter(|c| !c.is_whitespace()).collect();
    let id = id.trim_start_matches('<').trim_end_matches('>');
    (!id.is_empty()).then(|| xxhash_rust::xxh3::xxh3_64(id.as_bytes()))
}

/// Copies of one message in several inputs (module notes): how many
/// inputs hold each Message-ID, read before the replay, and the text of
/// the copy judged.
#[derive(Debug, Default)]
struct Copies {
    /// Message-ID hash: the inputs holding it (only those in two or
    /// more).
    inputs: HashMap<u64, u32>,
    /// Message-ID hash: the input and the exact hash of the copy judged.
    judged: HashMap<u64, (usize, Option<[u8; 32]>)>,
}

/// What a replayed message is ([`Copies::judge`]).
enum Delivery {
    /// A message delivered to this many mailboxes: judge it.
    To(u32),
    /// A copy of one judged from another input: not judged again.
    CopyOf,
}

impl Copies {
    /// Reads the Message-IDs of every input (none for a single input, or
    /// when one is standard input, which cannot be read twice).
    fn read(paths: &[PathBuf], max_message: usize) -> Copies {
        let mut c = Copies::default();
        if paths.len() < 2 || paths.iter().any(|p| p.as_os_str() == STDIN) {
            return c;
        }
        // Message-ID hash: (last input seen in, inputs).
        let mut seen: HashMap<u64, (usize, u32)> = HashMap::new();
        for (file, p) in paths.iter().enumerate() {
            let Ok(messages) = open_input(p, max_message) else {
                continue;
            };
            for (raw, _) in messages.flatten() {
                if let Some(h) = message_id_hash(&raw) {
                    let e = seen.entry(h).or_insert((usize::MAX, 0));
                    if e.0 != file {
                        *e = (file, e.1.saturating_add(1));
                    }
                }
            }
        }
        c.inputs = seen
            .into_iter()
            .filter(|(_, (_, n))| *n > 1)
            .map(|(h, (_, n))| (h, n))
            .collect();
        c
    }

    /// The first copy of a message held by several inputs is judged as
    /// delivered to all of them; a later copy from another input with the
    /// same text is a copy of it; anything else is judged as delivered to
    /// one mailbox.
    fn judge(&mut self, id: Option<u64>, file: usize, exact: Option<[u8; 32]>) -> Delivery {
        let Some((h, n)) = id.and_then(|h| self.inputs.get(&h).map(|n| (h, *n))) else {
            return Delivery::To(1);
        };
        match self.judged.get(&h) {
            None => {
                self.judged.insert(h, (file, exact));
                Delivery::To(n)
            }
            Some((f, e)) if *f != file && *e == exact => Delivery::CopyOf,
            Some(_) => Delivery::To(1),
        }
    }
}

/// What the replay analyzes a message as: no envelope (see the module
/// documentation).
pub fn analyze_unenveloped(raw: &[u8], cfg: &Config) -> Analysis {
    crate::engine::analyze(raw, &Envelope::default(), cfg)
}

/// How many messages the inputs hold (unreadable ones included), for a
/// progress bar; `None` when one of them is standard input or cannot be
/// read.
pub fn count_messages(paths: &[PathBuf]) -> Option<u64> {
    let mut n = 0u64;
    for p in &expand_inputs(paths) {
        if p.as_os_str() == STDIN {
            return None;
        }
        n += if p.is_dir() {
            maildir::files(p).ok()?.len() as u64
        } else {
            read_mbox(std::fs::File::open(p).ok()?).count() as u64
        };
    }
    Some(n)
}

/// File name of an mbox path, for records.
pub fn mbox_name(path: &Path) -> String {
    if path.as_os_str() == STDIN {
        return "stdin".into();
    }
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_numbers_of_the_window_and_one_more_are_kept() {
        // A window of 2: a message is judged against the 2 entries before
        // it, then its own entry evicts the oldest of them.
        let mut m = SeqToN::new(2);
        m.push(10, 1);
        m.push(11, 2);
        m.push(12, 3);
        // Message 3 was judged while entry 10 was still in the window.
        assert_eq!(m.get(10), Some(1));
        m.push(13, 4);
        assert_eq!((m.get(10), m.get(11), m.get(13)), (None, Some(2), Some(4)));
        // Numbers another host's entries took read as none.
        m.push(15, 5);
        assert_eq!((m.get(14), m.get(15), m.get(13)), (None, Some(5), Some(4)));
        // A gap wider than the window: nothing before it is kept.
        m.push(100, 6);
        assert_eq!((m.get(15), m.get(100), m.get(99)), (None, Some(6), None));
        assert!(m.ns.len() <= 3);
        // Out of order (a new store): starts again.
        m.push(5, 7);
        assert_eq!((m.get(100), m.get(5)), (None, Some(7)));
    }

    #[test]
    fn messages_are_counted_for_the_progress_bar_unless_one_input_is_stdin() {
        let ham = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mbox/ham.mbox");
        assert_eq!(count_messages(std::slice::from_ref(&ham)), Some(153));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("new")).unwrap();
        std::fs::write(dir.path().join("new/1.a"), "Subject: a\n\na\n").unwrap();
        let both = [ham.clone(), dir.path().to_path_buf()];
        assert_eq!(count_messages(&both), Some(154));
        assert_eq!(count_messages(&[ham, PathBuf::from(STDIN)]), None);
    }

    #[test]
    fn feeding_one_by_one_keeps_time_and_distrusts_the_future() {
        let cfg = Config::default();
        let opts = ReplayOptions {
            clock: Clock::Arrival,
            ..ReplayOptions::default()
        };
        let mut r = Replayer::new(&cfg, opts);
        let at = |t: u64| {
            let dt = mail_parser::DateTime::from_timestamp(t as i64);
            format!(
                "Received: from a (a [198.51.100.1]) by mx; {}\nSubject: x\n\nHello there, a short note.\n",
                dt.to_rfc822()
            )
        };
        let soon = latest_arrival() - 86_400 + 3600;
        for (t, want) in [
            (1_000_000_000, 1_000_000_000),
            // Back in time: the last time.
            (999_000_000, 1_000_000_000),
            // Two days ahead of this host's clock: the last time.
            (soon + 2 * 86_400, 1_000_000_000),
            // An hour ahead: believed.
            (soon, soon),
        ] {
            r.feed("m", 1, at(t).as_bytes());
            assert_eq!(r.summary.records.last().map(|x| x.time), Some(want), "{t}");
        }
    }

    /// An mbox file of messages with these Received dates (Unix seconds;
    /// `None`: no date at all), each a near-identical issue of one text.
    fn mbox_of(dir: &Path, name: &str, times: &[Option<u64>]) -> PathBuf {
        let mut out = String::new();
        for (i, t) in times.iter().enumerate() {
            out.push_str("From news@letter.example Mon Jan  1 00:00:00 2024\n");
            if let Some(t) = t {
                let dt = mail_parser::DateTime::from_timestamp(*t as i64);
                out.push_str(&format!(
                    "Received: from out.letter.example by mx.example.org; {}\n",
                    dt.to_rfc822()
                ));
            }
            out.push_str(&format!(
                "From: The Daily <news@letter.example>\nSubject: The Daily, {name} {i}\n\n\
                 Good morning. Today in the Daily: the harbour bridge reopens after two years of \
                 repairs, the city council votes on the new bus lanes, and our critic reviews the \
                 season's first opera. Weather: sunny spells, light winds from the west, highs of \
                 eighteen degrees. You receive this letter because you subscribed on our site; \
                 manage your subscription in your account settings.\n\n"
            ));
        }
        let path = dir.join(name);
        std::fs::write(&path, out).expect("write mbox");
        path
    }

    /// Spilled records read back are the records kept in memory, campaign
    /// ids resolved through the merges alike, on both clocks.
    #[test]
    fn spilled_records_read_back_as_kept_ones() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mbox");
        let paths: Vec<PathBuf> = ["campaigns.mbox", "ham.mbox", "malformed.mbox"]
            .iter()
            .map(|f| fixtures.join(f))
            .collect();
        for clock in [Clock::Simulated, Clock::Arrival] {
            let run = |spill: bool| {
                let opts = ReplayOptions {
                    clock,
                    jobs: 1,
                    spill,
                    ..ReplayOptions::default()
                };
                let mut s = replay_files(&paths, &Config::default(), opts, |_| {}).unwrap();
                let mut records = Vec::new();
                s.each_record(|r| records.push(r.clone())).unwrap();
                assert_eq!(s.judged(), records.len());
                (records, s.campaigns_read().unwrap(), s.records.len())
            };
            let (kept, kept_campaigns, in_memory) = run(false);
            let (spilled, spilled_campaigns, none) = run(true);
            assert!(in_memory > 1000 && none == 0, "{clock:?}");
            assert!(kept
                .iter()
                .any(|r| r.nearest.is_some() && r.resemblance.is_some()));
            assert_eq!(kept, spilled, "{clock:?}");
            assert_eq!(kept_campaigns, spilled_campaigns, "{clock:?}");
        }
    }

    fn replay(paths: &[PathBuf], clock: Clock, jobs: usize) -> ReplaySummary {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 5.0;
        cfg.thresholds.suspect_threshold = 5.0;
        let opts = ReplayOptions {
            clock,
            jobs,
            ..ReplayOptions::default()
        };
        let mut progress = 0;
        let s = replay_files(paths, &cfg, opts, |n| progress += n).expect("replay");
        assert_eq!(progress, (s.records.len() + s.read_errors) as u64);
        s
    }

    #[test]
    fn issues_a_day_apart_are_bulk_only_on_the_simulated_clock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = 86_400;
        let t0 = 1_700_000_000;
        let times: Vec<Option<u64>> = (0..8).map(|i| Some(t0 + i * day)).collect();
        let path = mbox_of(dir.path(), "daily", &times);
        let paths = [path];
        let simulated = replay(&paths, Clock::Simulated, 1);
        assert_eq!(
            simulated.count(LevelKind::Bulk),
            4,
            "issues 5 to 8: the campaign reaches 5"
        );
        let arrival = replay(&paths, Clock::Arrival, 1);
        assert_eq!(arrival.count(LevelKind::Bulk), 0);
        assert_eq!(arrival.count(LevelKind::Clean), 8);
        let when: Vec<u64> = arrival.records.iter().map(|r| r.time).collect();
        assert_eq!(when, times.iter().flatten().copied().collect::<Vec<_>>());
        // The same issues an hour apart are one campaign on either clock.
        let hourly: Vec<Option<u64>> = (0..8).map(|i| Some(t0 + i * 3600)).collect();
        let paths = [mbox_of(dir.path(), "hourly", &hourly)];
        assert_eq!(replay(&paths, Clock::Arrival, 1).count(LevelKind::Bulk), 4);
    }

    #[test]
    fn messages_are_judged_in_order_of_arrival_across_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = mbox_of(
            dir.path(),
            "a",
            &[
                Some(1_000_000_000),
                Some(1_000_000_300),
                Some(1_000_000_100),
            ],
        );
        // A date centuries ahead (forged or broken) counts as none.
        let b = mbox_of(
            dir.path(),
            "b",
            &[
                None,
                Some(1_000_000_200),
                Some(4_000_000_000),
                Some(1_000_000_300),
            ],
        );
        // No date at all: time 0, first.
        let c = mbox_of(dir.path(), "c", &[None]);
        let paths = [a, b, c];
        for jobs in [1, 2] {
            let s = replay(&paths, Clock::Arrival, jobs);
            let order: Vec<(&str, usize, u64)> = s
                .records
                .iter()
                .map(|r| (r.mbox.as_str(), r.index, r.time))
                .collect();
            let want = [
                ("c", 1, 0),
                ("a", 1, 1_000_000_000),
                // Out of order in its file.
                ("a", 3, 1_000_000_100),
                // No date, before the first dated message of its file: at
                // that one's time, and before it, in the order read.
                ("b", 1, 1_000_000_200),
                ("b", 2, 1_000_000_200),
                // In the future: as if undated, with the message before it.
                ("b", 3, 1_000_000_200),
                // A tie: in the order read, the file given first first.
                ("a", 2, 1_000_000_300),
                ("b", 4, 1_000_000_300),
            ];
            assert_eq!(order, want, "jobs {jobs}");
            let n: Vec<usize> = s.records.iter().map(|r| r.n).collect();
            assert_eq!(n, (1..=8).collect::<Vec<_>>());
        }
        // The simulated clock: file after file, a second apart.
        let s = replay(&paths, Clock::Simulated, 2);
        let order: Vec<(&str, usize, u64)> = s
            .records
            .iter()
            .map(|r| (r.mbox.as_str(), r.index, r.time - REPLAY_EPOCH))
            .collect();
        assert_eq!(
            order,
            [
                ("a", 1, 0),
                ("a", 2, 1),
                ("a", 3, 2),
                ("b", 1, 3),
                ("b", 2, 4),
                ("b", 3, 5),
                ("b", 4, 6),
                ("c", 1, 7),
            ]
        );
    }

    #[test]
    fn a_missing_file_fails_before_any_message_is_judged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = mbox_of(dir.path(), "a", &[Some(1_000_000_000)]);
        let missing = dir.path().join("missing");
        let mut judged = 0;
        let res = replay_files(
            &[a, missing.clone()],
            &Config::default(),
            ReplayOptions::default(),
            |n| judged += n,
        );
        assert!(matches!(res, Err(ReplayError::Input { path, .. }) if path == missing));
        assert_eq!(judged, 0);
    }

    #[test]
    fn the_arrival_clock_never_uses_the_shared_store() {
        let mut cfg = Config::default();
        cfg.store.backend = crate::config::StoreBackend::Redis;
        let opts = ReplayOptions {
            clock: Clock::Arrival,
            ..ReplayOptions::default()
        };
        assert!(Replayer::new(&cfg, opts).redis().is_none());
    }
}
