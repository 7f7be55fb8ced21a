//! The Redis store: Redis holds only an ordered log of the site's observations, and every daemon
//! applies that log, in its order, to an engine of its own (the replica).
//!
//! One message is one pipeline (one round trip) at most: `XADD` appends
//! the message's observation to the stream `{<prefix>:v<version>}:log` and
//! `XRANGE` reads what the site appended since this daemon last read. The
//! daemon applies those entries, its own included, to the replica and
//! takes its message's outcome from there. Up to `pool_size` round trips
//! are out at once; messages that arrive while all are out go together in
//! the next one (one `XADD` each, one `XRANGE`). Every replica applies the same
//! entries in the same order with the same settings, so every daemon sees
//! the same campaign ids and counts, and a lookup costs Redis about two
//! microseconds.
//!
//! The stream is trimmed to `window.max_entries` entries on every append
//! and, once a minute, to the window (by the time in its entry ids,
//! Redis's clock); it expires when no daemon appends for a window plus 5
//! minutes: Redis needs no cleanup job.
//!
//! A daemon that starts, or that was cut off, reads the log from where it
//! stopped (from the beginning after a start),
//! [`MAX_READS_PER_CALL`] chunks per message, and more through a log
//! flooded with entries to skip while half the Redis timeout lasts; until
//! it has caught up with its own entry its messages fall back to the local
//! verdict. A replica never starts over: when the log was trimmed, cut or
//! deleted past its last entry, it keeps its counts and applies what the
//! log holds that it has not (entries name their writer and number: each
//! is applied once, [`crate::store::writers`]).
//!
//! A log key that holds a value of another type (`WRONGTYPE`: set by hand
//! or by another program), or a log that takes no more entries (an entry
//! with the largest id there is), would fail every round trip: it is
//! deleted, counted ([`Pool::wrongtype_repairs`]) and the round trip made
//! again.
//!
//! The operators' corrections in force and the domain allowances are the
//! head's too ([`crate::store::head`]): what a replica that missed a log
//! entry learns them from, and what no older value written back undoes.
//!
//! What the log does not give: a daemon that starts on one window of log
//! names a campaign whose first members have left the log after the
//! oldest member it saw, where the daemons that never stopped keep the
//! first member's id. Counts and verdicts agree.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::Value;

use super::redis::{err, Conn, Pool};
use crate::config::Config;
use crate::engine::campaign::CampaignId;
use crate::engine::Correction;
use crate::engine::{Engine, Observation, Outcome, UnixSecs};
pub use crate::store::entry::{decode, encode, encode_correction};
use crate::store::head::{Head, MAX_HEAD_BYTES};
pub use crate::store::replica::Crossing;
use crate::store::replica::{too_far_ahead, Replica};
use crate::store::seal::{hex_tag, same};
pub use crate::store::seal::{log_key, open, seal};
use crate::store::writers::{Ident, IDENT_LEN};
use crate::store::{BadStream, CatchUp, Store, StoreError};

/// Entries read per `XRANGE`.
const CHUNK: usize = 1024;
/// `XRANGE` calls a message may spend catching up after the first one;
/// beyond them the message is judged locally and the next one goes on.
pub const MAX_READS_PER_CALL: usize = 4;
/// Most `XRANGE` calls a message may spend catching up through chunks
/// mostly skipped, while half the Redis timeout lasts: a log flooded with
/// entries to skip (junk written by whoever may write to Redis) is read
/// through at the speed of Redis, not [`MAX_READS_PER_CALL`] chunks a
/// message.
pub const MAX_READS_FLOODED: usize = 256;
/// Most messages one round trip carries.
pub const MAX_BATCH: usize = 256;
/// Seconds the log outlives the window (clock differences between hosts).
const MARGIN_SECS: u64 = 300;
/// How often (this host's clock, ms) a daemon renews the log's TTL and trims
/// entries older than the window: well within the margin.
const UPKEEP_MS: u64 = 60_000;

/// Whether Redis answered that the log's key cannot take an entry, to any
/// command of a pipeline: `WRONGTYPE` (a key of another type), or a stream
/// whose last id is the largest there is (an entry added with that id by
/// whoever may write to Redis: no `XADD` succeeds after it).
fn needs_repair(e: &redis::RedisError) -> bool {
    const EXHAUSTED: &str = "exhausted the last possible ID";
    e.to_string().contains(EXHAUSTED)
        || e.clone().into_server_errors().is_some_and(|errs| {
            errs.iter().any(|(_, s)| {
                s.code() == "WRONGTYPE" || s.details().is_some_and(|d| d.contains(EXHAUSTED))
            })
        })
}

/// Deletes `KEYS[1]` when it is neither a stream nor missing, or a stream
/// that takes no entry (a probe appended and removed at once); returns the
/// keys deleted.
const REPAIR: &str = "local t = redis.call('TYPE', KEYS[1]).ok \
    if t == 'none' then return 0 end \
    if t ~= 'stream' then return redis.call('DEL', KEYS[1]) end \
    local r = redis.pcall('XADD', KEYS[1], '*', 'p', '') \
    if type(r) == 'table' and r.err then return redis.call('DEL', KEYS[1]) end \
    redis.call('XDEL', KEYS[1], r) \
    return 0";

/// What a round trip does besides its batch ([`LogStore::plan`]).
struct Plan {
    /// Where the read starts: the replica's last entry, inclusive.
    from: Option<StreamId>,
    /// The TTL renewed and the log trimmed.
    upkeep: bool,
    /// Corrections appended again.
    renewed: Vec<Vec<u8>>,
}

/// Trims `KEYS[1]` to the entries of the last `ARGV[1]` ms of Redis's clock.
const TRIM: &str = "local t = redis.call('TIME') \
    local ms = tonumber(t[1]) * 1000 - tonumber(ARGV[1]) \
    if ms <= 0 then return 0 end \
    return redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%.0f', ms))";

pub use crate::store::entry::StreamId;

/// One entry of a read: its id, its bytes (its seal checked and cut off,
/// empty when the seal is wrong) and who wrote it.
pub(crate) type Read = (StreamId, Vec<u8>, Option<Ident>);

/// Entries of an `XRANGE` reply, in order, their seals under `key`
/// checked and cut off ([`open`]).
fn entries(v: Value, key: &[u8; 32]) -> Result<Vec<Read>, StoreError> {
    let bad = || -> StoreError { BadStream::Xrange.into() };
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Array(parts) = item else {
            return Err(bad());
        };
        let mut parts = parts.into_iter();
        let (Some(Value::BulkString(id)), Some(Value::Array(fields)), None) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let id = StreamId::parse(&id)?;
        // Fields: "i", the entry with who wrote it under its seal ("o",
        // without, from builds before 2026-12-07). Another shape is kept as
        // an empty entry, which does not decode: it is skipped like any bad
        // entry.
        let (bytes, ident) = match <[Value; 2]>::try_from(fields) {
            Ok([Value::BulkString(f), Value::BulkString(b)]) if f == b"i" => {
                match Ident::split(open(key, b)) {
                    Some((bytes, ident)) => (bytes, Some(ident)),
                    None => (Vec::new(), None),
                }
            }
            Ok([Value::BulkString(f), Value::BulkString(b)]) if f == b"o" => (open(key, b), None),
            _ => (Vec::new(), None),
        };
        out.push((id, bytes, ident));
    }
    Ok(out)
}

fn stream_id(v: &Value) -> Result<StreamId, StoreError> {
    match v {
        Value::BulkString(b) => StreamId::parse(b),
        Value::SimpleString(s) => StreamId::parse(s.as_bytes()),
        _ => Err(BadStream::XaddId.into()),
    }
}

fn too_short() -> StoreError {
    BadStream::ShortPipeline.into()
}

/// The answer for the message of entry `id`, sent at `now`, once the
/// replica has read the log as far as it could.
fn answer(r: &Replica, now: UnixSecs, id: StreamId) -> Logged {
    if r.last.is_none_or(|l| l < id) {
        return Logged::CatchingUp(CatchUp::Behind {
            applied: r.last,
            entry: id,
        });
    }
    if too_far_ahead(now, id) {
        let ahead = now.0 - id.0 / 1000;
        tracing::warn!(
            ahead_secs = ahead,
            "redis log: this host's clock is ahead of Redis's; its messages are not shared"
        );
        return Logged::CatchingUp(CatchUp::ClockAhead { ahead_secs: ahead });
    }
    r.outcome(id)
        .map_or_else(|| Logged::CatchingUp(CatchUp::OutcomeGone), Logged::Outcome)
}

/// What [`LogStore::record_logged`] found.
#[derive(Debug)]
pub enum Logged {
    /// The message's outcome, from the replica.
    Outcome(Outcome),
    /// Redis answered, but the replica has not applied the message's entry
    /// (it is reading the log after a start or a rebuild): the local
    /// verdict stands. Not an outage.
    CatchingUp(CatchUp),
}

/// A message's log entry, and the time it was judged at.
struct Entry {
    bytes: Vec<u8>,
    now: UnixSecs,
}

/// A message waiting for its round trip.
struct Pending {
    seq: u64,
    entry: Entry,
    /// Wakes the call that waits for this message (with the queue's lock):
    /// when its answer is in, or when it is its turn to send.
    wake: Arc<Condvar>,
}

/// Messages waiting to be sent, and answers for the calls that wait.
#[derive(Default)]
struct Queue {
    next: u64,
    waiting: Vec<Pending>,
    /// Calls sending a batch (round trips out).
    sending: usize,
    /// Answers for calls whose messages another call sent.
    done: HashMap<u64, Result<Logged, StoreError>>,
    /// Calls that stopped waiting: their answers are not kept.
    gone: HashSet<u64>,
}

/// Ends a call's turn at sending, also if it panics: the first call still
/// waiting is woken to send next.
struct Turn<'a>(&'a LogStore);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.0.queue.lock() {
            q.sending = q.sending.saturating_sub(1);
            if let Some(next) = q.waiting.first() {
                next.wake.notify_one();
            }
        }
    }
}

/// A writer id for this run: random (the hasher's keys come from the
/// system's randomness), mixed with the process id and the time.
fn writer_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// The Redis store. `&self` methods may be called from
/// many threads at once.
///
/// Up to `pool_size` calls have their round trips out at once. Beyond
/// that, concurrent calls share round trips (group commit): the messages
/// that arrive while every trip is out wait, and the next pipeline carries
/// them all (at most [`MAX_BATCH`]), one `XADD` each and one `XRANGE`. So
/// a message costs at most one round trip, and under load far less of
/// Redis's time and the host's. Trips out at once read overlapping parts
/// of the log; whichever comes back first applies them, and the others
/// apply only what follows the replica's last entry.
pub struct LogStore {
    /// Connections.
    pool: Pool,
    key: String,
    /// The key that seals and opens the log's entries ([`log_key`]).
    log_key: [u8; 32],
    cfg: Config,
    /// How long entries are kept, in milliseconds.
    keep_ms: u64,
    replica: Mutex<Replica>,
    queue: Mutex<Queue>,
    /// Most round trips out at once (`pool_size`).
    senders: usize,
    /// When the replica was last copied into a fallback engine, and how
    /// many entries it had applied then ([`LogStore::copy_due`]).
    copied: Mutex<Option<(Instant, u64)>>,
    /// How long a call waits for other calls' round trips to carry its
    /// message: the one out when it came and its own.
    wait: Duration,
    /// Round trips sent and messages they carried.
    trips: AtomicU64,
    carried: AtomicU64,
    /// `XRANGE` calls after a round trip's own (catching up).
    reads: AtomicU64,
    /// This host's writer id for this run ([`Ident`]), and the number of
    /// its last entry.
    writer: u64,
    seq: AtomicU64,
    /// What the reads found of the shared state's integrity.
    pub integrity: Integrity,
    /// The head's key, and the newest head this host verified
    /// ([`crate::store::head`]).
    head_key: String,
    head: Mutex<Head>,
    /// When the head was last read by a round trip (Unix seconds; 0:
    /// never), [`LogStore::sync_head_when_due`].
    head_read_at: AtomicU64,
}

/// The file in the state directory that keeps the newest head verified.
pub const HEAD_FILE: &str = "head.bin";
/// How often the log's round trips read the head too (the daemon reads it
/// every 10 s besides, with the domain allowances).
const HEAD_EVERY_SECS: u64 = 60;

/// Sets `key` to `new` if it holds `old` (or is missing, for `None`).
const CAS: &str = "local v = redis.call('GET', KEYS[1]) \
    if (v == false and ARGV[1] == '') or v == ARGV[1] then \
    redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0";

/// Compare-and-set of the head ([`CAS`]).
fn cas(conn: &mut Conn, key: &str, old: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
    let done: i64 = redis::cmd("EVAL")
        .arg(CAS)
        .arg(1)
        .arg(key)
        .arg(old.unwrap_or_default())
        .arg(new)
        .query(conn.like())
        .map_err(|e| err("head write", e))?;
    Ok(done == 1)
}

/// Seconds since the Unix epoch, from the system clock.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The head a host kept in its state directory, when it is there, sealed
/// with the site's key, and reads as one.
fn kept_head(cfg: &Config, key: &[u8; 32]) -> Head {
    let path = cfg.state.state_dir.join(HEAD_FILE);
    crate::file::read_regular(&path, MAX_HEAD_BYTES as u64, crate::file::Links::Refuse)
        .ok()
        .map(|b| open(key, b))
        .filter(|b| !b.is_empty())
        .and_then(|b| Head::decode(&b).ok())
        .unwrap_or_default()
}

/// What this host found of the shared state's integrity (issue 64):
/// counters for metrics, and when each warning was last logged.
#[derive(Debug, Default)]
pub struct Integrity {
    /// Log entries not sealed with this host's key, skipped.
    pub unsealed: AtomicU64,
    /// Times the replica's last entry was no longer in the log.
    pub cuts: AtomicU64,
    /// Entries met again and not applied (copies, replays).
    pub again: AtomicU64,
    /// Entries missing from their writer's numbers (removed, or lost).
    pub missing: AtomicU64,
    /// Times the sealed head was older than one verified, or missing or
    /// unsealed ([`crate::store::head`]).
    pub rollbacks: AtomicU64,
    /// Times this host wrote the head it verified back.
    pub repairs: AtomicU64,
    cut_said: AtomicU64,
    gaps_said: AtomicU64,
    head_said: AtomicU64,
}

impl Integrity {
    /// Whether a warning last said at `at` (Unix seconds) may be said
    /// again now (once a minute), and notes it.
    fn may_say(&self, at: &AtomicU64) -> bool {
        let now = unix_now();
        let last = at.load(Ordering::Relaxed);
        now >= last + 60
            && at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore").field("key", &self.key).finish()
    }
}

impl LogStore {
    /// A log store for `cfg.store.redis`; connects lazily, as
    /// [`Pool::open`].
    pub fn open(cfg: &Config) -> Result<LogStore, StoreError> {
        let pool = Pool::open(cfg)?;
        let head_key = format!("{}:head", pool.key_base());
        // The head this host verified before it stopped: its corrections
        // stand in the replica before the log's (a withdrawal whose entry
        // was removed stays withdrawn across a restart).
        let head = kept_head(cfg, &log_key(cfg));
        let mut replica = Replica::new(cfg);
        replica.apply_head(&head);
        Ok(LogStore {
            key: format!("{}:log", pool.key_base()),
            log_key: log_key(cfg),
            pool,
            cfg: cfg.clone(),
            keep_ms: (cfg.window.window.as_secs() + MARGIN_SECS).saturating_mul(1000),
            replica: Mutex::new(replica),
            queue: Mutex::new(Queue::default()),
            senders: cfg.store.redis.pool_size.max(1),
            copied: Mutex::new(None),
            wait: cfg.store.redis.timeout.saturating_mul(2),
            trips: AtomicU64::new(0),
            carried: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            writer: writer_id(),
            seq: AtomicU64::new(0),
            integrity: Integrity::default(),
            head_key,
            head: Mutex::new(head),
            head_read_at: AtomicU64::new(0),
        })
    }

    /// The connection pool, for [`Pool::clear`] and
    /// [`Pool::key_base`].
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The stream's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The replica, locked. A call that panicked while holding it may have
    /// left it half applied: it is made anew (and reads the log again)
    /// rather than every later call failing until a restart.
    fn replica(&self) -> Result<MutexGuard<'_, Replica>, StoreError> {
        Ok(self.replica.lock().unwrap_or_else(|poisoned| {
            tracing::error!(
                "redis log: a call panicked while applying the log; rebuilding the replica"
            );
            self.replica.clear_poison();
            let mut r = poisoned.into_inner();
            *r = Replica::new(&self.cfg);
            r
        }))
    }

    fn queue(&self) -> Result<MutexGuard<'_, Queue>, StoreError> {
        self.queue.lock().map_err(|_| StoreError::Poisoned("queue"))
    }

    /// [`LogStore::record_logged`], with a replica still catching up as an
    /// error.
    pub fn record_shared(&self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        match self.record_logged(obs, now)? {
            Logged::Outcome(out) => Ok(out),
            Logged::CatchingUp(why) => Err(why.into()),
        }
    }

    /// Appends the message to the log, applies what is new and returns the
    /// message's outcome, or that the replica has not reached the message's
    /// entry yet. Either that or an error (Redis down or slow) leaves the
    /// message to the local verdict.
    ///
    /// When fewer than `pool_size` round trips are out, this call sends its
    /// message and those waiting; else it waits (at most twice the Redis
    /// timeout) for the answer that another call's round trip brings it.
    pub fn record_logged(&self, obs: &Observation, now: UnixSecs) -> Result<Logged, StoreError> {
        let wake = Arc::new(Condvar::new());
        let entry = encode(obs, now);
        let mut q = self.queue()?;
        let seq = q.next;
        q.next = q.next.wrapping_add(1);
        q.waiting.push(Pending {
            seq,
            entry: Entry { bytes: entry, now },
            wake: Arc::clone(&wake),
        });
        let deadline = Instant::now() + self.wait;
        loop {
            if let Some(answer) = q.done.remove(&seq) {
                return answer;
            }
            // (Nothing waits, this call's message included, only when a
            // call that took it panicked: then this call waits it out.)
            if q.sending < self.senders && !q.waiting.is_empty() {
                q.sending += 1;
                let turn = Turn(self);
                let n = q.waiting.len().min(MAX_BATCH);
                let (mut calls, batch): (Vec<_>, Vec<Entry>) = q
                    .waiting
                    .drain(..n)
                    .map(|p| ((p.seq, p.wake), p.entry))
                    .unzip();
                drop(q);
                let sent = self.send(&batch);
                q = self.queue()?;
                let answers: Vec<Result<Logged, StoreError>> = match sent {
                    Ok(answers) => answers.into_iter().map(Ok).collect(),
                    Err(e) => {
                        let e = Arc::new(e);
                        // The messages that came meanwhile would wait for
                        // a Redis that just failed: they fail with these.
                        calls.extend(q.waiting.drain(..).map(|p| (p.seq, p.wake)));
                        calls
                            .iter()
                            .map(|_| Err(StoreError::Batch(Arc::clone(&e))))
                            .collect()
                    }
                };
                for ((seq, wake), answer) in calls.iter().zip(answers) {
                    if !q.gone.remove(seq) {
                        q.done.insert(*seq, answer);
                        wake.notify_one();
                    }
                }
                // Ends the turn and wakes the call to send next (the lock
                // is taken again there).
                drop(q);
                drop(turn);
                q = self.queue()?;
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Not an outage: Redis answers, but other calls' round
                // trips (a replica reading the log) take long.
                if let Some(i) = q.waiting.iter().position(|p| p.seq == seq) {
                    q.waiting.remove(i);
                } else {
                    q.gone.insert(seq);
                }
                return Ok(Logged::CatchingUp(CatchUp::HeldByOthers {
                    waited_ms: self.wait.as_millis(),
                }));
            }
            q = wake
                .wait_timeout(q, left)
                .map_err(|_| StoreError::Poisoned("queue"))?
                .0;
        }
    }

    /// Records `msgs` in one round trip (one per [`MAX_BATCH`] messages)
    /// and returns an answer for each, in order: what
    /// [`LogStore::record_logged`] does for the messages that wait, for a
    /// caller that holds several at once. It does not wait for calls of
    /// other threads (their round trips and this one may overlap; each
    /// entry is still applied once, in the log's order).
    pub fn record_batch(
        &self,
        msgs: &[(&Observation, UnixSecs)],
    ) -> Result<Vec<Logged>, StoreError> {
        let mut answers = Vec::with_capacity(msgs.len());
        for chunk in msgs.chunks(MAX_BATCH) {
            let batch: Vec<Entry> = chunk
                .iter()
                .map(|(obs, now)| Entry {
                    bytes: encode(obs, *now),
                    now: *now,
                })
                .collect();
            answers.extend(self.send(&batch)?);
        }
        Ok(answers)
    }

    /// Appends an operator's correction to the log, for every replica
    /// (this one included, in the same round trip). Answers the live
    /// campaign's id as this daemon's replica knows it; `None`, and nothing
    /// appended, when it knows no live campaign of that id.
    ///
    /// # Errors
    /// Redis failed, or the replica has not read the log up to this
    /// daemon's messages yet.
    pub fn correct(&self, c: Correction, now: UnixSecs) -> Result<Option<CampaignId>, StoreError> {
        self.refresh()?;
        let id = c.id();
        let live = {
            let r = self.replica()?;
            if !r.answered {
                return Err(CatchUp::Reading.into());
            }
            r.engine.live_id(id)
        };
        let Some(live) = live else {
            return Ok(None);
        };
        self.send(&[Entry {
            bytes: encode_correction(c, now),
            now,
        }])?;
        // The head keeps it too: a replica that misses the log's entry
        // (removed, or cut with the log) learns it there.
        if let Err(e) = self.update_head(|h| h.correct(c, now.0)) {
            tracing::warn!(error = %e, campaign = %id, "redis head: the correction is in the log but not in the head");
        }
        Ok(Some(live))
    }

    /// Reads what the site appended since the replica's last entry and
    /// applies it (at most [`MAX_READS_PER_CALL`] + 1 chunks), without
    /// appending: an idle daemon's view (`/campaigns`, `bulkwatch
    /// campaigns`) is otherwise as old as its last message.
    ///
    /// # Errors
    /// Redis failed or answered what bulkwatch cannot read.
    pub fn refresh(&self) -> Result<(), StoreError> {
        self.sync_head_when_due();
        let mut conn = self.pool.take()?;
        let mut skipped = 0;
        for _ in 0..=MAX_READS_PER_CALL {
            let from = self.replica()?.last;
            let read = entries(
                self.read_from(from)
                    .query(conn.like())
                    .map_err(|e| err("log read", e))?,
                &self.log_key,
            )?;
            let got = read.len();
            let mut r = self.replica()?;
            self.note_read(&r, from, &read);
            skipped += r.apply(read);
            self.note_applied(&r);
            if got <= CHUNK {
                // Read to the log's end: the replica is the site's view.
                r.answered = true;
                break;
            }
        }
        self.pool.give_back(conn);
        if skipped > 0 {
            tracing::warn!(
                entries = skipped,
                "redis log: skipped entries that do not decode, are not sealed with this host's key (every host of a site needs the same fingerprint.hash_key) or are dated past Redis's clock"
            );
        }
        Ok(())
    }

    /// The campaigns that turned bulk in entries the replica applied since
    /// the last call (any host's, the latest 64), so that a host can
    /// alert for a crossing another host judged ([`crate::milter::alert`]).
    pub fn take_crossings(&self) -> Vec<Crossing> {
        self.replica()
            .map(|mut r| r.crossings.drain(..).collect())
            .unwrap_or_default()
    }

    /// Claims the alert for campaign `id` for this host: true for the
    /// first host to ask (a key `<base>:alerted:<id>`, `SET NX` with a
    /// lifetime of `ttl`, its value the claim's tag under the site's key),
    /// false when another host has. A key there whose value is not that
    /// tag was not written by a host of the site: this host alerts (every
    /// host that finds it does: an alert twice rather than none).
    ///
    /// # Errors
    /// Redis failed.
    pub fn claim_alert(
        &self,
        id: CampaignId,
        own: bool,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.pool.take()?;
        // Its own mail's alert is claimed apart from its inbound one.
        let (what, tag) = if own {
            ("alerted-own", "alert-own")
        } else {
            ("alerted", "alert")
        };
        let key = format!("{}:{what}:{id}", self.pool.key_base());
        let claim = hex_tag(&self.log_key, &format!("{tag}\0{id}"));
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(&claim)
            .arg("NX")
            .arg("EX")
            .arg(ttl.as_secs().max(1))
            .query(conn.like())
            .map_err(|e| err("alert claim", e))?;
        let first = match set {
            Some(_) => true,
            None => {
                let held: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(&key)
                    .query(conn.like())
                    .map_err(|e| err("alert claim", e))?;
                held.is_none_or(|h| !same(&h, claim.as_bytes()))
            }
        };
        self.pool.give_back(conn);
        Ok(first)
    }

    /// Allows `domain` until `until` (Unix seconds; `u64::MAX`: until
    /// withdrawn), or withdraws it (`None`), in the site's head
    /// ([`crate::store::head`]): a new version, compared and set.
    ///
    /// # Errors
    /// Redis failed, or other hosts changed the head at every try.
    pub fn set_domain_allowance(&self, domain: &str, until: Option<u64>) -> Result<(), StoreError> {
        self.update_head(|h| h.set_domain(domain, until))
    }

    /// The site's domain allowances running now, from the head verified
    /// ([`LogStore::sync_head`]): at most
    /// [`MAX_DOMAINS`](crate::engine::allowance::MAX_DOMAINS).
    ///
    /// # Errors
    /// Redis failed.
    pub fn domain_allowances(&self) -> Result<Vec<(String, u64)>, StoreError> {
        use crate::engine::allowance::domain;
        let head = self.sync_head()?;
        Ok(head
            .domains_at(unix_now())
            .into_iter()
            .filter_map(|(d, u)| Some((domain(&d)?, u)))
            .collect())
    }

    /// Reads the site's head: its raw value (none when missing) and what
    /// it holds when its seal is the site's and it reads as a head.
    fn read_head(&self, conn: &mut Conn) -> Result<(Option<Vec<u8>>, Option<Head>), StoreError> {
        let raw: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.head_key)
            .query(conn.like())
            .map_err(|e| err("head read", e))?;
        let head = raw
            .as_ref()
            .filter(|r| r.len() <= MAX_HEAD_BYTES)
            .map(|r| open(&self.log_key, r.clone()))
            .filter(|b| !b.is_empty())
            .and_then(|b| Head::decode(&b).ok());
        Ok((raw, head))
    }

    /// Brings this host's head up to the site's and answers it: a newer
    /// version (sealed with the site's key) is adopted, kept in the state
    /// directory and applied to the replica; an older one, a missing one or
    /// one not sealed with the key is a rollback: said, counted, and the
    /// head this host verified is written back.
    ///
    /// # Errors
    /// Redis failed.
    pub fn sync_head(&self) -> Result<Head, StoreError> {
        let mut conn = self.pool.take()?;
        let (raw, found) = self.read_head(&mut conn)?;
        let known = self.known_head();
        let out = match found {
            Some(h) if h.version > known.version => {
                self.adopt(h.clone());
                h
            }
            Some(h) if h.version == known.version => known,
            _ if known.version == 0 && raw.is_none() => known,
            _ => {
                self.integrity.rollbacks.fetch_add(1, Ordering::Relaxed);
                if self.integrity.may_say(&self.integrity.head_said) {
                    tracing::warn!(
                        verified = known.version,
                        found = ?found.as_ref().map(|h| h.version),
                        sealed = found.is_some() || raw.is_none(),
                        "redis head: the site's corrections and domain allowances in Redis are \
                         older than what this host verified, missing, or not sealed with the \
                         site's key (rewritten or deleted by whoever may write to Redis): \
                         keeping what it verified and writing it back"
                    );
                }
                if known.version > 0 {
                    let sealed = seal(&self.log_key, &known.encode());
                    if cas(&mut conn, &self.head_key, raw.as_deref(), &sealed)? {
                        self.integrity.repairs.fetch_add(1, Ordering::Relaxed);
                    }
                }
                known
            }
        };
        self.pool.give_back(conn);
        Ok(out)
    }

    /// [`LogStore::sync_head`] at the first round trip and at most once
    /// a [`HEAD_EVERY_SECS`] after: a host that starts learns the
    /// corrections in force before it applies the log. A failure is left
    /// to the log's round trip to meet and count.
    fn sync_head_when_due(&self) {
        let now = unix_now().max(1);
        let last = self.head_read_at.load(Ordering::Relaxed);
        let due = last == 0 || now >= last + HEAD_EVERY_SECS;
        if due
            && self
                .head_read_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            if let Err(e) = self.sync_head() {
                tracing::debug!(error = %e, "redis head: not read");
            }
        }
    }

    /// Changes the head: read, `change` applied to the newest verified,
    /// its version one more, compared and set (a few tries when another
    /// host changes it meanwhile).
    fn update_head(&self, change: impl Fn(&mut Head)) -> Result<(), StoreError> {
        let mut conn = self.pool.take()?;
        for _ in 0..8 {
            let (raw, found) = self.read_head(&mut conn)?;
            let known = self.known_head();
            let mut next = match found {
                Some(h) if h.version >= known.version => h,
                _ => known,
            };
            change(&mut next);
            next.version += 1;
            let now = unix_now();
            next.written_at = now;
            next.prune(now, self.keep_ms / 1000 + 3600);
            let sealed = seal(&self.log_key, &next.encode());
            if cas(&mut conn, &self.head_key, raw.as_deref(), &sealed)? {
                self.pool.give_back(conn);
                self.adopt(next);
                return Ok(());
            }
        }
        self.pool.give_back(conn);
        Err(StoreError::Stream(BadStream::HeadContended))
    }

    /// The newest head this host verified.
    fn known_head(&self) -> Head {
        self.head
            .lock()
            .map_or_else(|p| p.into_inner().clone(), |h| h.clone())
    }

    /// Takes `h` as the newest verified: in memory, in the state directory
    /// (so that a restart remembers it) and in the replica.
    ///
    /// A state directory that does not exist (a `replay` or a command run
    /// away from the daemon's) keeps nothing: such a store remembers the
    /// head for as long as it runs.
    fn adopt(&self, h: Head) {
        let dir = &self.cfg.state.state_dir;
        if dir.is_dir() {
            let sealed = seal(&self.log_key, &h.encode());
            if let Err(e) = crate::file::write_atomic(dir, HEAD_FILE, &sealed, 0o600) {
                tracing::warn!(error = %e, "redis head: cannot keep the verified head in the state directory");
            }
        }
        if let Ok(mut r) = self.replica() {
            r.apply_head(&h);
        }
        match self.head.lock() {
            Ok(mut k) => *k = h,
            Err(p) => *p.into_inner() = h,
        }
    }

    /// Round trips sent so far, and the messages they carried.
    pub fn round_trips(&self) -> (u64, u64) {
        (
            self.trips.load(Ordering::Relaxed),
            self.carried.load(Ordering::Relaxed),
        )
    }

    /// Calls `f` with the replica's engine once the replica has read the
    /// log up to its daemon's messages (it gave an outcome since it was
    /// made); `None` before.
    pub fn with_ready_replica<R>(&self, f: impl FnOnce(&Engine) -> R) -> Option<R> {
        let r = self.replica().ok()?;
        r.answered.then(|| f(&r.engine))
    }

    /// Whether a copy of the replica for the fallback engine is due: the
    /// replica has read the log up to its daemon's messages, applied
    /// entries since its last copy, and that copy is at least `every` old
    /// (a copy costs time and memory in proportion to the window; `every`
    /// bounds how often Redis trouble makes the daemon pay that). Never
    /// waits: a replica held by a round trip or a copy is not due now.
    pub fn copy_due(&self, every: Duration) -> bool {
        let Ok(r) = self.replica.try_lock() else {
            return false;
        };
        let Ok(copied) = self.copied.lock() else {
            return false;
        };
        r.answered
            && match *copied {
                None => r.applied > 0,
                Some((at, applied)) => r.applied != applied && at.elapsed() >= every,
            }
    }

    /// Forgets the last copy (it was dropped unused): the next outage may
    /// copy at once.
    pub fn forget_copy(&self) {
        if let Ok(mut copied) = self.copied.lock() {
            *copied = None;
        }
    }

    /// A copy of the replica's engine (`None` if a thread panicked while
    /// holding it). The replica is held meanwhile: about 0.08 s for a
    /// window of 10^5 entries and 0.5 s for 10^6 on this project's machine
    /// (`cargo bench --bench store`).
    pub fn copy(&self) -> Option<Engine> {
        let r = self.replica().ok()?;
        let copy = r.engine.clone();
        if let Ok(mut copied) = self.copied.lock() {
            *copied = Some((Instant::now(), r.applied));
        }
        Some(copy)
    }

    /// `XRANGE` calls made after round trips' own, to catch up: reading
    /// the log after a start, or past a chunk. Round trips out at the same
    /// time need none.
    pub fn catch_up_reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// One round trip for `batch` (not empty) on a pooled connection; an
    /// answer per message, in order. When the log's key holds a value of
    /// another type, it is deleted and the round trip made once more.
    fn send(&self, batch: &[Entry]) -> Result<Vec<Logged>, StoreError> {
        self.sync_head_when_due();
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.carried
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let mut conn = self.pool.take()?;
        let wrongtype = Cell::new(false);
        let mut result = self.exchange(&mut conn, batch, &wrongtype);
        if result.is_err() && wrongtype.get() {
            // (The connection read every reply of the pipeline.)
            self.repair(&mut conn)?;
            result = self.exchange(&mut conn, batch, &Cell::new(false));
        }
        // After an error the connection may hold a late reply: dropped.
        if result.is_ok() {
            self.pool.give_back(conn);
        }
        result
    }

    /// Deletes the log's key if it holds anything but a stream (checked
    /// and deleted in one step: another daemon may have repaired it and
    /// appended to a new log since), and counts it if it did.
    fn repair(&self, conn: &mut Conn) -> Result<(), StoreError> {
        let deleted: i64 = redis::Script::new(REPAIR)
            .key(&self.key)
            .invoke(conn.like())
            .map_err(|e| err("log repair", e))?;
        if deleted > 0 {
            self.pool.repaired(&self.key);
        }
        Ok(())
    }

    /// One batch's round trip and what follows it, on `conn`.
    ///
    /// Reads start at the replica's last entry, inclusive: finding that
    /// entry first proves nothing after it was trimmed away (a stream is
    /// trimmed from its front), without a second read.
    ///
    /// `wrongtype` is set when Redis answered that the log's key holds a
    /// value of another type.
    fn exchange(
        &self,
        conn: &mut Conn,
        batch: &[Entry],
        wrongtype: &Cell<bool>,
    ) -> Result<Vec<Logged>, StoreError> {
        let fail = |e: redis::RedisError| {
            if needs_repair(&e) {
                wrongtype.set(true);
            }
            err("log", e)
        };
        let Plan {
            mut from,
            upkeep,
            renewed,
        } = self.plan()?;
        let cmds = self.commands(batch, &renewed, from, upkeep);
        let mut reply = conn.pipeline(cmds).map_err(fail)?.into_iter();
        let own = batch
            .iter()
            .map(|_| {
                reply
                    .next()
                    .map_or_else(|| Err(too_short()), |v| stream_id(&v))
            })
            .collect::<Result<Vec<StreamId>, StoreError>>()?;
        for _ in &renewed {
            reply.next().ok_or_else(too_short)?;
        }
        let (Some(newest), Some(first)) = (own.iter().max().copied(), reply.next()) else {
            return Err(too_short());
        };
        let mut first = entries(first, &self.log_key)?;
        if self.made_anew_below(from, &first, newest)? {
            from = None;
            first.clear();
        }
        let skipped = match self.catch_up(conn, first, &mut from, newest, &fail)? {
            Some(skipped) => skipped,
            // Not even the newest message's entry is left: trimmed already.
            None => {
                return Ok(batch
                    .iter()
                    .map(|_| Logged::CatchingUp(CatchUp::Trimmed { entry: newest }))
                    .collect())
            }
        };
        if skipped > 0 {
            tracing::warn!(
                entries = skipped,
                "redis log: skipped entries that do not decode, are not sealed with this host's key (every host of a site needs the same fingerprint.hash_key) or are dated past Redis's clock"
            );
        }
        let mut r = self.replica()?;
        let answers: Vec<Logged> = batch
            .iter()
            .zip(own)
            .map(|(e, id)| answer(&r, e.now, id))
            .collect();
        r.answered |= answers.iter().any(|a| matches!(a, Logged::Outcome(_)));
        Ok(answers)
    }

    /// Whether the log was made anew below the replica's position: the
    /// read from `from` (the replica's last entry, inclusive) does not hold
    /// it, and this round trip's own entry `newest` is older than it. Ids
    /// go up with Redis's clock, so only a log whose ids someone put in the
    /// future, deleted since (and repaired, see [`REPAIR`]), does that. The
    /// replica then reads the new log from its start, keeping its counts
    /// (entries name their writer: what it applied is not applied again).
    fn made_anew_below(
        &self,
        from: Option<StreamId>,
        read: &[Read],
        newest: StreamId,
    ) -> Result<bool, StoreError> {
        let Some(l) = from else { return Ok(false) };
        if newest >= l || read.first().is_some_and(|e| e.0 == l) {
            return Ok(false);
        }
        let mut r = self.replica()?;
        if r.last == Some(l) {
            r.last = None;
            r.last_ident = None;
            tracing::warn!(
                last = %l,
                "redis log: the log was made anew below this daemon's last entry (ids put in \
                 the future by whoever may write to Redis, then the log deleted): reading it \
                 from its start, keeping the counts"
            );
        }
        Ok(true)
    }

    /// What this round trip does besides the batch: where the read
    /// starts (the replica's last entry), whether it is time for upkeep
    /// (once a minute of this host's clock), and the corrections to append
    /// again before the log's trim drops them.
    fn plan(&self) -> Result<Plan, StoreError> {
        let mut r = self.replica()?;
        let upkeep = r
            .upkeep_at
            .is_none_or(|at| at.elapsed() >= Duration::from_millis(UPKEEP_MS));
        if upkeep {
            r.upkeep_at = Some(Instant::now());
        }
        let renewed = if upkeep {
            r.corrections_to_renew(self.keep_ms / 2)
        } else {
            Vec::new()
        };
        Ok(Plan {
            from: r.last,
            upkeep,
            renewed,
        })
    }

    /// The pipeline of one round trip: the batch's entries, then
    /// corrections about to be trimmed with the log while their campaigns
    /// live, appended again (see Replica::corrections_to_renew); the read
    /// from `from`; and, at upkeep, the TTL and the trim.
    fn commands(
        &self,
        batch: &[Entry],
        renewed: &[Vec<u8>],
        from: Option<StreamId>,
        upkeep: bool,
    ) -> Vec<redis::Cmd> {
        let mut cmds: Vec<redis::Cmd> = batch
            .iter()
            .map(|e| e.bytes.as_slice())
            .chain(renewed.iter().map(Vec::as_slice))
            .map(|bytes| self.append(bytes))
            .collect();
        cmds.push(self.read_from(from));
        if upkeep {
            // Once a minute: the TTL (the window plus a margin) and the
            // entries older than that by Redis's own clock (`TIME`, not the
            // entries' ids, which whoever may write to Redis can put in the
            // future).
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(&self.key).arg(self.keep_ms);
            cmds.push(expire);
            let mut trim = redis::cmd("EVAL");
            trim.arg(TRIM).arg(1).arg(&self.key).arg(self.keep_ms);
            cmds.push(trim);
        }
        cmds
    }

    /// Applies `read` (the pipeline's read) and further reads from `from`
    /// until the replica holds `newest`: at most [`MAX_READS_PER_CALL`]
    /// more reads, or [`MAX_READS_FLOODED`] through chunks mostly skipped
    /// while half the Redis timeout lasts. Returns the entries skipped as undecodable, or `None`
    /// when a read came back empty: the log was trimmed past `newest`.
    fn catch_up(
        &self,
        conn: &mut Conn,
        mut read: Vec<Read>,
        from: &mut Option<StreamId>,
        newest: StreamId,
        fail: &dyn Fn(redis::RedisError) -> StoreError,
    ) -> Result<Option<usize>, StoreError> {
        let mut skipped = 0;
        let started = std::time::Instant::now();
        let budget = self.cfg.store.redis.timeout / 2;
        // Past MAX_READS_PER_CALL, only through chunks mostly skipped (a
        // flood of junk costs Redis and this host little to read; a log
        // of genuine entries, after a start, costs applying them).
        let mut flooded = false;
        for reads in 0..=MAX_READS_FLOODED {
            if reads > MAX_READS_PER_CALL && (!flooded || started.elapsed() >= budget) {
                break;
            }
            if reads > 0 {
                self.reads.fetch_add(1, Ordering::Relaxed);
                read = entries(
                    self.read_from(*from).query(conn.like()).map_err(fail)?,
                    &self.log_key,
                )?;
                if read.is_empty() {
                    return Ok(None);
                }
            }
            let mut r = self.replica()?;
            // Another round trip out at the same time may have moved the
            // replica since this one was sent: what it applied is applied
            // once (entries say who wrote them) or skipped by its place
            // (entries of older builds). A read that does not hold the
            // replica's last entry, when nothing moved it, means the entry
            // left the log: the replica keeps its counts and applies what
            // the log holds that it has not (it never starts over).
            self.note_read(&r, *from, &read);
            let got = read.len();
            let bad = r.apply(std::mem::take(&mut read));
            flooded = bad * 2 > got;
            skipped += bad;
            self.note_applied(&r);
            *from = r.last;
            if from.is_some_and(|l| l >= newest) {
                break;
            }
        }
        Ok(Some(skipped))
    }

    /// `XADD` of one entry, the log trimmed to `window.max_entries`: the
    /// entry, this host's writer id and the entry's number among its own
    /// ([`Ident`]), sealed.
    fn append(&self, bytes: &[u8]) -> redis::Cmd {
        let ident = Ident {
            writer: self.writer,
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
        };
        let mut entry = Vec::with_capacity(bytes.len() + IDENT_LEN);
        entry.extend_from_slice(bytes);
        entry.extend_from_slice(&ident.to_bytes());
        let mut c = redis::cmd("XADD");
        c.arg(&self.key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.cfg.window.max_entries)
            .arg("*")
            .arg("i")
            .arg(seal(&self.log_key, &entry));
        c
    }

    /// Notes what applying found: entries met again (not applied) and
    /// writers' entries missing, said at most once a minute.
    fn note_applied(&self, r: &Replica) {
        let i = &self.integrity;
        i.again.store(r.writers.again, Ordering::Relaxed);
        let before = i.missing.swap(r.writers.missing, Ordering::Relaxed);
        if r.writers.missing > before && i.may_say(&i.gaps_said) {
            tracing::warn!(
                missing = r.writers.missing,
                "redis log: entries are missing from the numbers their hosts gave them \
                 (removed from the log by whoever may write to Redis, or lost with a round \
                 trip that failed halfway)"
            );
        }
    }

    /// Notes what a read from `from` shows of the log's integrity: entries
    /// not sealed with this host's key (a writer without the site's key:
    /// skipped), and, when the replica still stands at `from`, whether its
    /// last entry left the log (trimmed while it was behind, or cut or
    /// deleted by a writer): said and counted, never a reason to start
    /// over ([`Integrity`]).
    fn note_read(&self, r: &Replica, from: Option<StreamId>, read: &[Read]) {
        // (The read starts at the replica's last entry, read before.)
        let unsealed = read
            .iter()
            .filter(|e| e.1.is_empty() && Some(e.0) != from)
            .count() as u64;
        if unsealed > 0 {
            self.integrity
                .unsealed
                .fetch_add(unsealed, Ordering::Relaxed);
        }
        let cut = from.is_some_and(|l| r.last == Some(l) && read.first().is_none_or(|e| e.0 != l));
        if cut {
            self.integrity.cuts.fetch_add(1, Ordering::Relaxed);
            if self.integrity.may_say(&self.integrity.cut_said) {
                tracing::warn!(
                    last = %from.map_or_else(String::new, |l| l.to_string()),
                    "redis log: this daemon's last entry is no longer in the log (trimmed while \
                     it was behind, or cut or deleted by whoever may write to Redis): keeping \
                     its counts and applying what the log holds that it has not"
                );
            }
        }
    }

    /// `XRANGE` from `from` inclusive (or from the log's start), one chunk
    /// past it.
    fn read_from(&self, from: Option<StreamId>) -> redis::Cmd {
        let mut c = redis::cmd("XRANGE");
        c.arg(&self.key)
            .arg(from.map_or_else(|| "-".to_owned(), |l| l.to_string()))
            .arg("+")
            .arg("COUNT")
            .arg(CHUNK + 1);
        c
    }
}

impl Store for LogStore {
    fn record(&mut self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        self.record_shared(obs, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::entry::tests::obs;
    use crate::store::seal::tag;

    proptest::proptest! {
        /// Whatever bytes a log entry holds, decoding answers, never
        /// panics; and a valid entry with bytes appended is refused.
        #[test]
        fn any_bytes_decode_or_fail_cleanly(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            start_valid in proptest::bool::ANY,
        ) {
            let input = if start_valid {
                let mut e = encode(&obs(), UnixSecs(9));
                e.extend_from_slice(&bytes);
                e
            } else {
                bytes.clone()
            };
            let r = decode(&input);
            if start_valid && !bytes.is_empty() {
                proptest::prop_assert!(r.is_err());
            }
        }
    }

    /// An entry is applied only with the tag of the site's key: a forged
    /// correction (the right format, written by whoever may write to
    /// Redis) or an entry changed in one byte reads as empty, which every
    /// replica skips as a bad entry; the tag is HMAC-SHA256 (RFC 4231's
    /// first vector, cut).
    #[test]
    fn only_entries_sealed_with_the_sites_key_are_read() {
        let cfg = Config::default();
        let key = log_key(&cfg);
        let mut other = cfg.clone();
        other.fingerprint.hash_key = (1, 2);
        assert_ne!(log_key(&other), key);
        let forged = encode_correction(
            Correction::Allow {
                id: CampaignId(7),
                until: u64::MAX,
            },
            UnixSecs(5),
        );
        let sealed = seal(&key, &forged);
        assert_eq!(open(&key, sealed.clone()), forged);
        assert!(open(&log_key(&other), sealed.clone()).is_empty());
        assert!(open(&key, forged.clone()).is_empty(), "no seal");
        assert!(open(&key, Vec::new()).is_empty());
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(open(&key, bad).is_empty(), "byte {i}");
        }
        let reply = |bytes: Vec<u8>| {
            Value::Array(vec![Value::Array(vec![
                Value::BulkString(b"5-1".to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"o".to_vec()),
                    Value::BulkString(bytes),
                ]),
            ])])
        };
        assert_eq!(entries(reply(sealed), &key).unwrap()[0].1, forged);
        assert!(entries(reply(forged.clone()), &key).unwrap()[0]
            .1
            .is_empty());
        // Under "i" the entry ends in who wrote it, under the seal.
        let who = Ident { writer: 3, seq: 9 };
        let mut with = forged.clone();
        with.extend(who.to_bytes());
        let reply_i = |bytes: Vec<u8>| {
            Value::Array(vec![Value::Array(vec![
                Value::BulkString(b"5-1".to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"i".to_vec()),
                    Value::BulkString(bytes),
                ]),
            ])])
        };
        let read = entries(reply_i(seal(&key, &with)), &key).unwrap();
        assert_eq!((&read[0].1, read[0].2), (&forged, Some(who)));
        let read = entries(reply_i(seal(&key, &forged[..3])), &key).unwrap();
        assert_eq!((read[0].1.is_empty(), read[0].2), (true, None), "too short");
        // RFC 4231, test case 1, under a 32-byte key of 0x0b.
        let mut k = [0u8; 32];
        k[..20].fill(0x0b);
        let t = tag(&k, b"Hi There");
        let rfc_20_byte_key = [0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53];
        assert_eq!(t[..8], rfc_20_byte_key);
    }

    #[test]
    fn malformed_xrange_replies_are_errors() {
        assert!(entries(Value::Nil, &[0; 32]).is_err());
        assert!(entries(Value::Array(vec![Value::Int(1)]), &[0; 32]).is_err());
        let bad_id = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"x-1".to_vec()),
            Value::Array(vec![]),
        ])]);
        assert!(entries(bad_id, &[0; 32]).is_err());
        // A well-formed reply with an entry of another shape: kept, empty.
        let odd = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"5-1".to_vec()),
            Value::Array(vec![Value::Int(3)]),
        ])]);
        assert_eq!(
            entries(odd, &[0; 32]).unwrap(),
            vec![(StreamId(5, 1), Vec::new(), None)]
        );
    }

    #[test]
    fn stream_ids_order_as_redis_orders_them() {
        assert!(StreamId::parse(b"10-0").unwrap() > StreamId::parse(b"9-99").unwrap());
        assert!(StreamId::parse(b"10-2").unwrap() > StreamId::parse(b"10-1").unwrap());
        assert_eq!(StreamId(3, 4).to_string(), "3-4");
        assert!(StreamId::parse(b"10").is_err());
    }
}
