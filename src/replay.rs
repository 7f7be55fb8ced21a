//! Replaying mailboxes through the engine with simulated time.
//!
//! This is the library function behind `bulkwatch replay` and `bulkwatch
//! tune`, and the one the tests call. Messages are fed in file order; the
//! clock starts at [`REPLAY_EPOCH`] and advances by `1 / rate` seconds per
//! message (one second by default), because Date headers are often wrong.
//! An mbox has no envelope: each message counts as one recipient (it was
//! delivered to one mailbox), and the recipient names used for stripping
//! personalization come from its To and Cc headers.
//!
//! With `store.backend = "redis"` the replay reads and warms the shared
//! state, exactly as a daemon would (the local engine is the fallback).
//!
//! Campaign ids in the returned records are the final ids: a campaign that
//! was later merged into an older one is reported under the older id.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::campaign::CampaignId;
use crate::config::Config;
use crate::engine::{finish, observe, Analysis, Engine, Envelope, UnixSecs};
use crate::store::{Shared, SharedResult};
use crate::verdict::{Level, Verdict};

/// Simulated time of the first message: 2024-01-01T00:00:00Z.
pub const REPLAY_EPOCH: u64 = 1_704_067_200;

/// Options of a replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Messages per simulated second (1.0: one second apart).
    pub rate: f64,
    /// Threads that analyze messages (parse to fingerprint) in
    /// [`replay_files`]; 0: one per available core, at most
    /// [`DEFAULT_MAX_THREADS`]. Decisions are made in file order on one
    /// thread, so the result is the same for any number.
    pub jobs: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { rate: 1.0, jobs: 0 }
    }
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
    pub skip_reason: Option<&'static str>,
    /// `n` of the closest earlier message it matched, if any.
    pub nearest: Option<usize>,
    /// Distinct texts that corroborated it, when it joined its campaign on
    /// corroboration alone; 0 otherwise.
    pub corroborating: u32,
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
#[derive(Debug, Clone, Default)]
pub struct ReplaySummary {
    pub records: Vec<Record>,
    /// Messages that could not be read from an mbox (I/O errors).
    pub read_errors: usize,
    pub by_level: HashMap<&'static str, usize>,
    /// With the Redis store: messages Redis judged, and messages judged
    /// from the local window because Redis failed or was skipped.
    pub shared_ok: u64,
    pub shared_fallbacks: u64,
}

impl ReplaySummary {
    /// Campaigns of two or more messages, largest first.
    pub fn campaigns(&self) -> Vec<CampaignReport> {
        let mut map: HashMap<CampaignId, CampaignReport> = HashMap::new();
        for r in &self.records {
            let Some(id) = r.campaign else { continue };
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
            if matches!(r.level, Level::Suspect | Level::Bulk) && r.level > e.max_level {
                e.max_level = r.level;
            }
        }
        let mut v: Vec<CampaignReport> = map.into_values().filter(|c| c.messages >= 2).collect();
        v.sort_by(|a, b| b.messages.cmp(&a.messages).then(a.first_n.cmp(&b.first_n)));
        v
    }

    pub fn count(&self, level: Level) -> usize {
        self.by_level.get(level.as_str()).copied().unwrap_or(0)
    }
}

/// Union-find over campaign ids merged during the replay.
#[derive(Default)]
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

pub use crate::mbox::read_mbox;

/// The replay state, fed one message at a time.
pub struct Replayer {
    engine: Engine,
    /// The Redis store, when the configuration asks for one: its verdicts
    /// win; the local engine is the fallback (as in the milter).
    shared: Option<Shared>,
    opts: ReplayOptions,
    merges: Merges,
    /// Window sequence number -> record number, for `nearest`.
    seq_to_n: HashMap<u64, usize>,
    pub summary: ReplaySummary,
}

impl Replayer {
    /// A replayer with the store `cfg` configures. A Redis store that
    /// cannot be set up (a bad address) is logged and the replay runs on
    /// memory alone; a Redis that is down only makes messages fall back.
    pub fn new(cfg: &Config, opts: ReplayOptions) -> Replayer {
        let shared = Shared::from_config(cfg).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "shared store unusable; replaying on memory alone");
            None
        });
        Replayer::with_shared(cfg, opts, shared)
    }

    /// A replayer over a given shared store (or none).
    pub fn with_shared(cfg: &Config, opts: ReplayOptions, shared: Option<Shared>) -> Replayer {
        Replayer {
            engine: Engine::new(cfg),
            shared,
            opts,
            merges: Merges::default(),
            seq_to_n: HashMap::new(),
            summary: ReplaySummary::default(),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn shared(&self) -> Option<&Shared> {
        self.shared.as_ref()
    }

    /// Simulated time of message `n` (1-based).
    fn time_of(&self, n: usize) -> UnixSecs {
        let secs = (n.saturating_sub(1) as f64 / self.opts.rate.max(1e-9)).floor();
        UnixSecs(REPLAY_EPOCH + secs.min(1e12) as u64)
    }

    /// Feeds one message and returns its verdict.
    pub fn feed(&mut self, mbox: &str, index: usize, raw: &[u8]) -> Verdict {
        let a = analyze(raw, self.engine.config());
        self.feed_analyzed(mbox, index, &a)
    }

    /// Feeds one message already analyzed (by [`analyze`] with this
    /// replayer's configuration) and returns its verdict.
    pub fn feed_analyzed(&mut self, mbox: &str, index: usize, a: &Analysis) -> Verdict {
        let n = self.summary.records.len() + 1;
        let env = Envelope::default();
        let now = self.time_of(n);
        // As in the milter: the local engine records every message unless
        // the log layout's replica holds the window (then it is brought up
        // to the replica when a message falls back).
        let mut v = None;
        if self.shared.as_ref().is_none_or(Shared::records_locally) {
            v = Some(self.engine.decide(a, &env, now));
        }
        let mut outage = false;
        if let Some(shared) = &self.shared {
            match observe(self.engine.config(), a, &env) {
                Err(allowed_or_skipped) => v = v.or(Some(*allowed_or_skipped)),
                Ok(obs) => match shared.record(&obs, now) {
                    SharedResult::Shared(out) => {
                        v = Some(finish(self.engine.config(), &obs, out));
                        self.summary.shared_ok += 1;
                    }
                    SharedResult::Failed(e) => {
                        tracing::warn!(n, error = %e, "redis failed; local verdict");
                        self.summary.shared_fallbacks += 1;
                        outage = true;
                    }
                    SharedResult::Skipped => {
                        self.summary.shared_fallbacks += 1;
                        outage = true;
                    }
                    SharedResult::CatchingUp(_) => self.summary.shared_fallbacks += 1,
                },
            }
        }
        let v = v.unwrap_or_else(|| {
            if let Some(shared) = &self.shared {
                shared.warm(&mut self.engine, outage);
            }
            self.engine.decide(a, &env, now)
        });
        if let Some(c) = &v.campaign {
            for m in &v.merged {
                self.merges.0.insert(*m, c.id);
            }
        }
        *self.summary.by_level.entry(v.level.as_str()).or_default() += 1;
        if let Some(seq) = v.seq {
            self.seq_to_n.insert(seq, n);
        }
        let nearest = v.nearest.and_then(|s| self.seq_to_n.get(&s).copied());
        self.summary.records.push(Record {
            n,
            mbox: mbox.to_owned(),
            index,
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
            skip_reason: v.skip.map(|s| s.as_str()),
            nearest,
            corroborating: v.corroborating,
        });
        v
    }

    /// Counts a message that could not be read.
    pub fn read_error(&mut self) {
        self.summary.read_errors += 1;
    }

    /// Resolves campaign ids through the merges and returns the summary.
    pub fn finish(mut self) -> ReplaySummary {
        for r in &mut self.summary.records {
            if let Some(id) = r.campaign {
                r.campaign = Some(self.merges.find(id));
            }
        }
        self.summary
    }
}

/// Replays mbox files in order. `progress` is called after each message.
///
/// With more than one thread ([`ReplayOptions::threads`]), a reader thread
/// splits the mailbox into batches (at most 128 messages and about 8 MiB)
/// and hands them round-robin to analysis threads; this thread takes their
/// results back in the same round-robin order, so messages are decided in
/// file order. Each thread holds at most one batch waiting, one in work
/// and one done: memory stays bounded however large the mailbox.
///
/// # Errors
/// Opening a file fails: the path and the I/O error.
pub fn replay_files(
    paths: &[PathBuf],
    cfg: &Config,
    opts: ReplayOptions,
    mut progress: impl FnMut(u64),
) -> Result<ReplaySummary, (PathBuf, std::io::Error)> {
    let threads = opts.threads();
    let mut r = Replayer::new(cfg, opts);
    for path in paths {
        let file = std::fs::File::open(path).map_err(|e| (path.clone(), e))?;
        let name = mbox_name(path);
        let messages = read_mbox(file).enumerate();
        if threads <= 1 {
            for (i, msg) in messages {
                let a = msg.ok().map(|raw| analyze(&raw, cfg));
                judge(&mut r, &name, i, a.as_ref(), &mut progress);
            }
        } else {
            replay_in_parallel(&mut r, cfg, &name, messages, threads, &mut progress);
        }
    }
    Ok(r.finish())
}

/// Decides message `i` (0-based) of mailbox `name` from its analysis, or
/// counts it unreadable.
fn judge(
    r: &mut Replayer,
    name: &str,
    i: usize,
    a: Option<&Analysis>,
    progress: &mut impl FnMut(u64),
) {
    match a {
        Some(a) => {
            r.feed_analyzed(name, i + 1, a);
        }
        None => r.read_error(),
    }
    progress(1);
}

/// Messages of one batch: (index in the mailbox, the message or the error
/// reading it).
type Batch = Vec<(usize, std::io::Result<Vec<u8>>)>;

/// The pipeline of [`replay_files`] over one mailbox.
fn replay_in_parallel(
    r: &mut Replayer,
    cfg: &Config,
    name: &str,
    mut messages: impl Iterator<Item = (usize, std::io::Result<Vec<u8>>)> + Send,
    threads: usize,
    progress: &mut impl FnMut(u64),
) {
    use std::sync::mpsc::sync_channel;
    std::thread::scope(|scope| {
        let mut to_workers = Vec::with_capacity(threads);
        let mut from_workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (tx, rx) = sync_channel::<Batch>(1);
            let (done_tx, done_rx) = sync_channel::<(Batch, Vec<Option<Analysis>>)>(1);
            scope.spawn(move || {
                for batch in rx {
                    let analyses = batch
                        .iter()
                        .map(|(_, msg)| msg.as_ref().ok().map(|raw| analyze(raw, cfg)))
                        .collect();
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
                let mut batch = Vec::new();
                let mut bytes = 0;
                while batch.len() < BATCH_MESSAGES && bytes < BATCH_BYTES {
                    let Some((i, msg)) = messages.next() else {
                        break;
                    };
                    bytes += msg.as_ref().map_or(0, Vec::len);
                    batch.push((i, msg));
                }
                let worker = to_workers.get(k % threads);
                if batch.is_empty() || worker.is_none_or(|w| w.send(batch).is_err()) {
                    // Dropping the senders ends the workers' loops.
                    break;
                }
            }
        });
        // Batch k went to worker k % threads; a closed channel is the end
        // of the mailbox (or a worker that panicked: the scope then
        // re-raises its panic).
        for k in 0.. {
            let Some(Ok((batch, analyses))) = from_workers.get(k % threads).map(|w| w.recv())
            else {
                break;
            };
            for ((i, _), a) in batch.iter().zip(&analyses) {
                judge(r, name, *i, a.as_ref(), progress);
            }
        }
    });
}

/// What the replay analyzes a message as: no envelope (see the module
/// documentation).
pub fn analyze(raw: &[u8], cfg: &Config) -> Analysis {
    crate::engine::analyze(raw, &Envelope::default(), cfg)
}

/// File name of an mbox path, for records.
pub fn mbox_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
