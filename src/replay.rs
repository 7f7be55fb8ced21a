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
//! - **Arrival**: each message is judged at the time it reached the
//!   mailbox, read from its own headers ([`arrival_time`]), and the files
//!   are merged in that order, as if they had been delivered to one site.
//!   This is what a replay of a site's archive needs to give the verdicts
//!   the daemon would have given: a daily newsletter replayed one second
//!   apart is a campaign; delivered a day apart, its issues never share a
//!   6-hour window. A message that carries no time, or an earlier time
//!   than the message before it in its file (an archive is written in
//!   delivery order, so a step back is a clock or relay error), is judged
//!   with the message before it.
//!
//! An mbox has no envelope: each message counts as one recipient (it was
//! delivered to one mailbox), and the recipient names used for stripping
//! personalization come from its To and Cc headers.
//!
//! With `store.backend = "redis"` the replay reads and warms the shared
//! state, exactly as a daemon would (the local engine is the fallback).
//!
//! Campaign ids in the returned records are the final ids: a campaign that
//! was later merged into an older one is reported under the older id.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};

use crate::campaign::CampaignId;
use crate::config::Config;
use crate::engine::{finish, observe, Analysis, Engine, Envelope, UnixSecs};
use crate::store::{Shared, SharedResult};
use crate::verdict::{Level, Verdict};

/// Simulated time of the first message: 2024-01-01T00:00:00Z.
pub const REPLAY_EPOCH: u64 = 1_704_067_200;

/// Where a replay takes the time of each message from (module notes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// [`REPLAY_EPOCH`], then `1 / rate` seconds per message, file order.
    #[default]
    Simulated,
    /// Each message's time of arrival ([`arrival_time`]); files merged by it.
    Arrival,
}

/// Options of a replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Messages per simulated second (1.0: one second apart), for
    /// [`Clock::Simulated`].
    pub rate: f64,
    pub clock: Clock,
    /// Threads that analyze messages (parse to fingerprint) in
    /// [`replay_files`]; 0: one per available core, at most
    /// [`DEFAULT_MAX_THREADS`]. Decisions are made in file order on one
    /// thread, so the result is the same for any number.
    pub jobs: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            rate: 1.0,
            clock: Clock::Simulated,
            jobs: 0,
        }
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
    /// [`Clock::Arrival`]: the time the last message was judged at.
    last_arrival: u64,
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
            last_arrival: 0,
            summary: ReplaySummary::default(),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn shared(&self) -> Option<&Shared> {
        self.shared.as_ref()
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
                self.last_arrival = arrival.unwrap_or(0).max(self.last_arrival);
                UnixSecs(self.last_arrival)
            }
        }
    }

    /// Feeds one message and returns its verdict.
    pub fn feed(&mut self, mbox: &str, index: usize, raw: &[u8]) -> Verdict {
        let a = analyze(raw, self.engine.config());
        let arrival = match self.opts.clock {
            Clock::Simulated => None,
            Clock::Arrival => arrival_time(raw),
        };
        self.feed_timed(mbox, index, &a, arrival)
    }

    /// Feeds one message already analyzed (by [`analyze`] with this
    /// replayer's configuration) and returns its verdict. With
    /// [`Clock::Arrival`] it is judged with the message before it; see
    /// [`Replayer::feed_timed`].
    pub fn feed_analyzed(&mut self, mbox: &str, index: usize, a: &Analysis) -> Verdict {
        self.feed_timed(mbox, index, a, None)
    }

    /// Feeds one message already analyzed, with its arrival time (Unix
    /// seconds, from [`arrival_time`]), and returns its verdict. The
    /// simulated clock ignores `arrival`; the arrival clock judges a
    /// message without one, or with one earlier than the last, at the
    /// last message's time.
    pub fn feed_timed(
        &mut self,
        mbox: &str,
        index: usize,
        a: &Analysis,
        arrival: Option<u64>,
    ) -> Verdict {
        let n = self.summary.records.len() + 1;
        let env = Envelope::default();
        let now = self.time_of(n, arrival);
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

/// Replays mbox files: in the order given with the simulated clock, merged
/// by arrival time with the arrival clock. `progress` is called after each
/// message.
///
/// With more than one thread ([`ReplayOptions::threads`]), a reader thread
/// splits the mailboxes into batches (at most 128 messages and about 8 MiB)
/// and hands them round-robin to analysis threads; this thread takes their
/// results back in the same round-robin order, so messages are decided in
/// the order read. Each thread holds at most one batch waiting, one in work
/// and one done: memory stays bounded however large the mailbox.
///
/// # Errors
/// Opening a file fails: the path and the I/O error. Every file is opened
/// before the first message is judged.
pub fn replay_files(
    paths: &[PathBuf],
    cfg: &Config,
    opts: ReplayOptions,
    mut progress: impl FnMut(u64),
) -> Result<ReplaySummary, (PathBuf, std::io::Error)> {
    let threads = opts.threads();
    let inputs = Inputs::open(paths, opts.clock)?;
    let names: Vec<String> = paths.iter().map(|p| mbox_name(p)).collect();
    let mut r = Replayer::new(cfg, opts);
    if threads <= 1 {
        for item in inputs {
            let a = item.msg.as_ref().ok().map(|raw| analyze(raw, cfg));
            judge(&mut r, &names, &item, a.as_ref(), &mut progress);
        }
    } else {
        replay_in_parallel(&mut r, cfg, &names, inputs, threads, &mut progress);
    }
    Ok(r.finish())
}

/// One message of a replay's input.
struct Item {
    /// Which input file (index into the paths).
    file: usize,
    /// 0-based index within its file.
    index: usize,
    /// The message, or the error reading it.
    msg: std::io::Result<Vec<u8>>,
    /// [`Clock::Arrival`]: its time, never earlier than the message before
    /// it in its file (module notes); `None` with the simulated clock.
    time: Option<u64>,
}

/// The messages of a replay's files in the order they are judged: file
/// after file, or merged by arrival time. Holds one message read ahead
/// per file.
struct Inputs {
    files: Vec<InputFile>,
    clock: Clock,
    /// [`Clock::Simulated`]: the file being read.
    current: usize,
    /// [`Clock::Arrival`]: (time, file) of each file's message read ahead,
    /// earliest on top; a tie goes to the file given first.
    heads: BinaryHeap<Reverse<(u64, usize)>>,
}

struct InputFile {
    messages: std::iter::Enumerate<crate::mbox::Mbox<std::fs::File>>,
    /// Time of the last message read from it.
    last: u64,
    ahead: Option<Item>,
}

impl Inputs {
    fn open(paths: &[PathBuf], clock: Clock) -> Result<Inputs, (PathBuf, std::io::Error)> {
        let files: Vec<InputFile> = paths
            .iter()
            .map(|p| {
                let f = std::fs::File::open(p).map_err(|e| (p.clone(), e))?;
                Ok(InputFile {
                    messages: read_mbox(f).enumerate(),
                    last: 0,
                    ahead: None,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut inputs = Inputs {
            heads: BinaryHeap::with_capacity(files.len()),
            files,
            clock,
            current: 0,
        };
        if clock == Clock::Arrival {
            for i in 0..inputs.files.len() {
                inputs.read_ahead(i);
            }
        }
        Ok(inputs)
    }

    /// Reads the next message of file `i` ahead and queues it by time.
    fn read_ahead(&mut self, i: usize) {
        if let Some(f) = self.files.get_mut(i) {
            f.ahead = f.read(i);
            if let Some(t) = f.ahead.as_ref().and_then(|m| m.time) {
                self.heads.push(Reverse((t, i)));
            }
        }
    }
}

impl InputFile {
    /// The next message of this file, timed for the arrival clock.
    fn read(&mut self, file: usize) -> Option<Item> {
        let (index, msg) = self.messages.next()?;
        let own = msg.as_deref().ok().and_then(arrival_time);
        self.last = own.map_or(self.last, |t| t.max(self.last));
        Some(Item {
            file,
            index,
            msg,
            time: Some(self.last),
        })
    }
}

impl Iterator for Inputs {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        match self.clock {
            Clock::Simulated => loop {
                let file = self.current;
                match self.files.get_mut(file)?.messages.next() {
                    Some((index, msg)) => {
                        return Some(Item {
                            file,
                            index,
                            msg,
                            time: None,
                        })
                    }
                    None => self.current += 1,
                }
            },
            Clock::Arrival => {
                let Reverse((_, i)) = self.heads.pop()?;
                let item = self.files.get_mut(i)?.ahead.take();
                self.read_ahead(i);
                item
            }
        }
    }
}

/// Decides one message from its analysis, or counts it unreadable.
fn judge(
    r: &mut Replayer,
    names: &[String],
    item: &Item,
    a: Option<&Analysis>,
    progress: &mut impl FnMut(u64),
) {
    match a {
        Some(a) => {
            let name = names.get(item.file).map_or("", String::as_str);
            r.feed_timed(name, item.index + 1, a, item.time);
        }
        None => r.read_error(),
    }
    progress(1);
}

/// Messages of one batch, with their analyses once analyzed.
type Batch = Vec<Item>;

/// The pipeline of [`replay_files`].
fn replay_in_parallel(
    r: &mut Replayer,
    cfg: &Config,
    names: &[String],
    mut messages: impl Iterator<Item = Item> + Send,
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
                        .map(|item| item.msg.as_ref().ok().map(|raw| analyze(raw, cfg)))
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
                    let Some(item) = messages.next() else {
                        break;
                    };
                    bytes += item.msg.as_ref().map_or(0, Vec::len);
                    batch.push(item);
                }
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
            for (item, a) in batch.iter().zip(&analyses) {
                judge(r, names, item, a.as_ref(), progress);
            }
        }
    });
}

/// Most header bytes [`arrival_time`] reads, and most bytes of one field
/// it keeps.
const MAX_ARRIVAL_HEADER: usize = 64 * 1024;
const MAX_ARRIVAL_FIELD: usize = 4096;

/// When a message reached its mailbox, Unix seconds: the date of its first
/// (topmost) `Received` header, which the last relay, the receiving site's
/// own, wrote at delivery; else its `Date` header, which the sender wrote.
/// `None` when neither holds a valid RFC 5322 date at or after 1970.
///
/// Only the first 64 KiB of the header section is read, and at most 4 KiB
/// of each of the two fields, folded lines included.
pub fn arrival_time(raw: &[u8]) -> Option<u64> {
    let (received, date) = arrival_fields(raw.get(..MAX_ARRIVAL_HEADER).unwrap_or(raw));
    let parse = |v: &str| {
        let dt = mail_parser::DateTime::parse_rfc822(v.trim())?;
        dt.is_valid()
            .then(|| dt.to_timestamp())
            .and_then(|t| u64::try_from(t).ok())
    };
    // The date follows the last ';' of a Received field (RFC 5321, 4.4).
    received
        .and_then(|v| v.rsplit_once(';').and_then(|(_, d)| parse(d)))
        .or_else(|| date.and_then(|v| parse(&v)))
}

/// The first `Received` and the first `Date` field of a header section,
/// unfolded.
fn arrival_fields(head: &[u8]) -> (Option<String>, Option<String>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Field {
        Received,
        Date,
        Other,
    }
    let mut received: Option<String> = None;
    let mut date: Option<String> = None;
    let mut field = Field::Other;
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let (value, target) = if line.starts_with(b" ") || line.starts_with(b"\t") {
            // A folded line continues the field before it.
            (line, field)
        } else {
            let Some(colon) = memchr::memchr(b':', line) else {
                field = Field::Other;
                continue;
            };
            let name = line.get(..colon).unwrap_or_default().trim_ascii_end();
            field = if name.eq_ignore_ascii_case(b"received") && received.is_none() {
                Field::Received
            } else if name.eq_ignore_ascii_case(b"date") && date.is_none() {
                Field::Date
            } else {
                Field::Other
            };
            (line.get(colon + 1..).unwrap_or_default(), field)
        };
        let slot = match target {
            Field::Received => &mut received,
            Field::Date => &mut date,
            Field::Other => continue,
        };
        let s = slot.get_or_insert_with(String::new);
        if s.len() + value.len() < MAX_ARRIVAL_FIELD {
            s.push(' ');
            s.push_str(&String::from_utf8_lossy(value.trim_ascii()));
        }
    }
    (received, date)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_is_the_top_received_date_else_the_date_header() {
        let two = b"Received: from relay.example by mx.example.org;\r\n\
            \tThu, 22 Aug 2002 12:36:23 +0100 (IST)\r\n\
            Received: from a by b; Thu, 22 Aug 2002 10:00:00 +0000\r\n\
            Date: Wed, 21 Aug 2002 09:00:00 +0000\r\n\r\nbody\r\n";
        // 2002-08-22T11:36:23Z, from the folded first Received.
        assert_eq!(arrival_time(two), Some(1_030_016_183));
        let lf = b"Date: Wed, 21 Aug 2002 09:00:00 +0000\nSubject: x\n\nReceived: x; Thu, 22 Aug 2002 10:00:00 +0000\n";
        assert_eq!(
            arrival_time(lf),
            Some(1_029_920_400),
            "no Received: the Date header; the body is not read"
        );
        let undated = b"Received: from a by b with SMTP\nDate: Wed, 21 Aug 2002 09:00:00 +0000\n\n";
        assert_eq!(arrival_time(undated), Some(1_029_920_400));
        for raw in [
            &b""[..],
            b"Subject: no dates\n\nbody",
            b"Date: yesterday\n\n",
            b"Received: x; Thu, 22 Aug 1902 10:00:00 +0000\n\n",
            b"Date: Thu, 32 Aug 2002 10:00:00 +0000\n\n",
            &[0xFF, b':', b'\n', 0xC3, 0x28],
        ] {
            assert_eq!(
                arrival_time(raw),
                None,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn arrival_fields_are_bounded() {
        // A Received field folded into megabytes keeps 4 KiB of it.
        let mut raw = b"Received: from a by b".to_vec();
        for _ in 0..100_000 {
            raw.extend_from_slice(b"\n\twith more and more");
        }
        raw.extend_from_slice(b"; Thu, 22 Aug 2002 10:00:00 +0000\n\n");
        let (received, _) = arrival_fields(&raw);
        assert!(received.is_some_and(|r| r.len() < MAX_ARRIVAL_FIELD));
        assert_eq!(arrival_time(&raw), None);
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

    fn replay(paths: &[PathBuf], clock: Clock, jobs: usize) -> ReplaySummary {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 5.0;
        cfg.thresholds.suspect_threshold = 5.0;
        let opts = ReplayOptions {
            clock,
            jobs,
            ..ReplayOptions::default()
        };
        replay_files(paths, &cfg, opts, |_| {}).expect("replay")
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
            simulated.count(Level::Bulk),
            4,
            "issues 5 to 8: the campaign reaches 5"
        );
        let arrival = replay(&paths, Clock::Arrival, 1);
        assert_eq!(arrival.count(Level::Bulk), 0);
        assert_eq!(arrival.count(Level::Clean), 8);
        let when: Vec<u64> = arrival.records.iter().map(|r| r.time).collect();
        assert_eq!(when, times.iter().flatten().copied().collect::<Vec<_>>());
        // The same issues an hour apart are one campaign on either clock.
        let hourly: Vec<Option<u64>> = (0..8).map(|i| Some(t0 + i * 3600)).collect();
        let paths = [mbox_of(dir.path(), "hourly", &hourly)];
        assert_eq!(replay(&paths, Clock::Arrival, 1).count(Level::Bulk), 4);
    }

    #[test]
    fn files_are_merged_by_arrival_and_steps_back_are_clamped() {
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
        let b = mbox_of(dir.path(), "b", &[None, Some(1_000_000_200), None]);
        let paths = [a, b];
        for jobs in [1, 2] {
            let s = replay(&paths, Clock::Arrival, jobs);
            let order: Vec<(String, usize, u64)> = s
                .records
                .iter()
                .map(|r| (r.mbox.clone(), r.index, r.time))
                .collect();
            let want = [
                // No date, first in its file: before every dated message.
                ("b", 1, 0),
                ("a", 1, 1_000_000_000),
                ("b", 2, 1_000_000_200),
                // Undated: with the message before it in its file.
                ("b", 3, 1_000_000_200),
                ("a", 2, 1_000_000_300),
                // Earlier than the message before it in its file.
                ("a", 3, 1_000_000_300),
            ];
            let want: Vec<(String, usize, u64)> = want
                .iter()
                .map(|(m, i, t)| ((*m).to_owned(), *i, *t))
                .collect();
            assert_eq!(order, want, "jobs {jobs}");
            let n: Vec<usize> = s.records.iter().map(|r| r.n).collect();
            assert_eq!(n, (1..=6).collect::<Vec<_>>());
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
                ("b", 3, 5)
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
        assert_eq!(res.err().map(|(p, _)| p), Some(missing));
        assert_eq!(judged, 0);
    }
}
