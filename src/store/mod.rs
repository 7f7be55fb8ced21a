//! Stores behind the engine's window, exact set and campaign counts.
//!
//! The memory store is the [`crate::engine::Engine`] itself (the default,
//! with the snapshot file). Redis shares the state of several MX hosts as
//! a log ([`stream::LogStore`]): every daemon appends its messages and
//! applies the site's log, in order, to its own engine, a replica, so the
//! rule that links messages exists once, in Rust. The [`Store`] trait is
//! what the contract suite (`tests/store.rs`) holds both to.
//!
//! With Redis configured, every host keeps a memory store of its own as
//! well, the fallback: [`RedisLayer`] asks Redis first and, when Redis fails or
//! is slower than `store.redis.timeout_ms`, the local verdict stands. The
//! daemon does not record shared messages in its fallback engine: the
//! replica already holds the site's window, and when Redis goes down a
//! copy of the replica replaces the fallback engine ([`RedisLayer::warm`];
//! in the milter made on a thread of its own), so that an outage starts
//! from what the whole site saw. After a failure Redis is left alone for
//! `retry_secs`, so an outage costs one timeout, not one per message; then
//! it is tried again and sharing resumes by itself. A message is never held
//! or rejected because Redis is down.

pub mod codec;
pub mod entry;
pub mod head;
pub mod judge;
pub mod redis;
pub(crate) mod replica;
pub mod seal;
pub mod snapshot;
pub mod stream;
pub mod writers;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{Config, StoreBackend};
use crate::engine::campaign::CampaignId;
use crate::engine::{Engine, Observation, Outcome, UnixSecs};

pub use self::redis::Pool;
pub use self::stream::{LogStore, Logged};
pub use crate::engine::Correction;

/// Why a store could not record a message. The caller falls back (the
/// milter to its local window); a message is never lost over it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A call to Redis failed: connection, timeout, error reply.
    #[error("redis: {context}: {source}")]
    Redis {
        /// What the call was for.
        context: &'static str,
        #[source]
        source: ::redis::RedisError,
    },
    /// The log held what bulkwatch cannot read.
    #[error("redis log: {0}")]
    Stream(#[from] BadStream),
    /// `store.redis.urls` names no address.
    #[error("redis: no address in store.redis.urls")]
    NoAddress,
    /// `store.redis.tls_ca_file` could not be read.
    #[error("redis: store.redis.tls_ca_file {}: {source}", path.display())]
    CaFile {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Redis failed recently and is not tried until its retry time.
    #[error("redis: Redis is down or being retried; try again")]
    Down,
    /// A lock of the store was poisoned by a panic.
    #[error("redis: the {0} lock was poisoned")]
    Poisoned(&'static str),
    /// This daemon's replica has not reached this message (not an
    /// outage).
    #[error(transparent)]
    CatchingUp(#[from] CatchUp),
    /// The round trip that carried this message with others failed.
    #[error("{0}")]
    Batch(Arc<StoreError>),
}

/// A reply or entry of the log bulkwatch cannot read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadStream {
    #[error("bad entry id `{id}`")]
    EntryId { id: String },
    #[error("bad entry: {0}")]
    Entry(#[from] crate::store::codec::CodecError),
    #[error("unexpected XRANGE reply")]
    Xrange,
    #[error("XADD did not answer an id")]
    XaddId,
    #[error("pipeline reply too short")]
    ShortPipeline,
    #[error("the site's head changed under every try to change it")]
    HeadContended,
}

/// Why the replica gave no outcome for a message although
/// Redis answered: the local verdict stands. Not an outage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatchUp {
    #[error("redis log: catching up (applied up to {}, this message is {entry})", applied.map_or_else(|| "nothing".to_owned(), |a| a.to_string()))]
    Behind {
        applied: Option<stream::StreamId>,
        entry: stream::StreamId,
    },
    #[error("redis log: this host's clock is {ahead_secs} s ahead of Redis's")]
    ClockAhead { ahead_secs: u64 },
    #[error("redis log: this message's outcome is no longer kept")]
    OutcomeGone,
    #[error("redis log: other calls' round trips held this message past {waited_ms} ms")]
    HeldByOthers { waited_ms: u128 },
    #[error("redis log: entry {entry} left the log before it was read")]
    Trimmed { entry: stream::StreamId },
    #[error("redis log: the replica is still reading the log")]
    Reading,
}

/// The contract every store meets: the same [`Outcome`] for the same
/// stream, whether the window, the exact set and the campaign counts live
/// in this process ([`Engine`]) or in a replica of the log in Redis; the contract
/// suite (`tests/store.rs`) runs against each through this trait.
/// Production does not: the milter and the replay judge through
/// [`judge::Judge`], which holds the engine and the [`RedisLayer`].
pub trait Store {
    /// Looks the message up, joins or merges campaigns and records it, all
    /// at time `now`: the window is what arrived in `(now - window, now]`.
    fn record(&mut self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError>;
}

impl Store for Engine {
    fn record(&mut self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        Ok(self.record_local(obs, now))
    }
}

/// Counters of the shared store, for metrics and replay summaries.
#[derive(Debug, Default)]
pub struct RedisStats {
    /// Messages recorded in Redis.
    pub ok: AtomicU64,
    /// Calls that failed (connect, timeout, error reply).
    pub errors: AtomicU64,
    /// Messages judged from the local window instead (errors included).
    pub fallbacks: AtomicU64,
    /// Times Redis went from up to down.
    pub outages: AtomicU64,
    /// Copies of the replica that took over the fallback engine.
    pub fallback_copies: AtomicU64,
    /// Redis answered the last call.
    pub up: AtomicBool,
}

/// What [`RedisLayer::record`] did.
#[derive(Debug)]
pub enum RedisResult {
    /// Redis recorded the message: use this outcome.
    Judged(Outcome),
    /// Redis failed now: use the local verdict (the error is for the log).
    Failed(StoreError),
    /// Redis failed recently and is not tried until the retry time.
    Skipped,
    /// Redis answered, but this daemon's replica is still
    /// reading the log: use the local verdict. Not an outage.
    CatchingUp(CatchUp),
}

/// Least time between two copies of the replica into the fallback engine
/// ([`RedisLayer::warm`]): a copy costs in proportion to the window, and a
/// Redis that keeps failing now and then must not make the daemon copy
/// for every message.
pub const WARM_EVERY: Duration = Duration::from_secs(60);

/// Most messages judged by the fallback engine while a copy of the replica
/// is being made ([`RedisLayer::warm_in_background`]) that are applied to the
/// copy when it takes over (under the engine's lock, a few microseconds
/// each); a copy takes under a second at 10^6 entries, so this many only
/// under a flood.
const MAX_JUDGED_WHILE_COPYING: usize = 10_000;

/// A copy of the replica being made on another thread, and the messages
/// the fallback engine judged meanwhile.
#[derive(Debug, Default)]
struct Copying {
    thread: Option<JoinHandle<Option<Engine>>>,
    judged: Vec<(Observation, UnixSecs)>,
}

/// The Redis layer: the log with its failure handling (retry interval,
/// outage counts) and the warming of the local fallback engine from the
/// replica.
#[derive(Debug)]
pub struct RedisLayer {
    log: Arc<LogStore>,
    retry: Duration,
    retry_at: Mutex<Option<Instant>>,
    copying: Mutex<Copying>,
    /// When the replica's last read of the log for a view of the site's
    /// campaigns began ([`RedisLayer::site`]).
    site: Mutex<Option<Instant>>,
    pub stats: RedisStats,
}

impl RedisLayer {
    /// The shared store `cfg` asks for, if any.
    pub fn from_config(cfg: &Config) -> Result<Option<RedisLayer>, StoreError> {
        match cfg.store.backend {
            StoreBackend::Memory => Ok(None),
            StoreBackend::Redis => Ok(Some(RedisLayer {
                log: Arc::new(LogStore::open(cfg)?),
                retry: cfg.store.redis.retry_interval,
                retry_at: Mutex::new(None),
                copying: Mutex::new(Copying::default()),
                site: Mutex::new(None),
                stats: RedisStats {
                    up: AtomicBool::new(true),
                    ..RedisStats::default()
                },
            })),
        }
    }

    /// The connections and keys, for `clear`, the key prefix and memory
    /// figures.
    pub fn pool(&self) -> &Pool {
        self.log.pool()
    }

    /// Keys of the prefix deleted because they held a value of another
    /// type (`WRONGTYPE`; [`Pool::wrongtype_repairs`]): the calls that met
    /// them went on, so these are not errors.
    pub fn wrongtype_repairs(&self) -> u64 {
        self.pool().wrongtype_repairs()
    }

    /// The round trips sent so far and the messages they carried
    /// ([`LogStore::round_trips`]).
    pub fn log_round_trips(&self) -> (u64, u64) {
        self.log.round_trips()
    }

    /// What the log and the head showed of writers other than the site's
    /// hosts ([`stream::Integrity`]).
    pub fn integrity(&self) -> &stream::Integrity {
        &self.log.integrity
    }

    /// Call before the fallback engine `local` judges a message that Redis
    /// did not, saying whether Redis is down (a call failed, or the retry
    /// interval runs): in an outage, copies the
    /// replica into `local` when the replica has read the log up to its
    /// messages and moved since its last copy (at most once per
    /// [`WARM_EVERY`]). A message that Redis answered too late for its
    /// caller (past twice the timeout, or while the replica reads the log)
    /// is judged by `local` as it is: a copy would hold the replica, and
    /// with it the round trips of every other message, for as long as it
    /// takes.
    ///
    /// The copy is made here, holding `local` for as long as it takes (see
    /// [`LogStore::copy`]): for a replay. The milter uses
    /// [`RedisLayer::warm_in_background`].
    pub fn warm(&self, local: &mut Engine, outage: bool) {
        let l = &self.log;
        if outage && l.copy_due(WARM_EVERY) {
            if let Some(copy) = l.copy() {
                adopt(local, copy, &[]);
                self.stats.fallback_copies.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// [`RedisLayer::warm`] without the wait: the copy is made on a thread of
    /// its own while `local` goes on judging, and takes over at the first
    /// call after it is done, with the messages `local` judged meanwhile
    /// (reported by [`RedisLayer::judged_locally`]) applied to it. The thread
    /// makes no copy if Redis answered again meanwhile. Returns the engine
    /// it replaced, to be dropped outside the caller's lock (freeing a
    /// large window takes time too). Never waits for the replica.
    pub fn warm_in_background(
        self: &Arc<Self>,
        local: &mut Engine,
        outage: bool,
    ) -> Option<Engine> {
        let l = &self.log;
        let mut c = self.copying.lock().ok()?;
        if let Some(thread) = c.thread.take_if(|t| t.is_finished()) {
            let judged = std::mem::take(&mut c.judged);
            let copy = thread.join().ok().flatten()?;
            tracing::info!(
                judged_meanwhile = judged.len(),
                "redis log: fallback engine brought up to the replica"
            );
            self.stats.fallback_copies.fetch_add(1, Ordering::Relaxed);
            return Some(adopt(local, copy, &judged));
        }
        if c.thread.is_none() && outage && l.copy_due(WARM_EVERY) {
            let shared = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("bulkwatch-copy".into())
                .spawn(move || shared.copy_while_down());
            match spawned {
                Ok(t) => c.thread = Some(t),
                Err(e) => tracing::warn!(error = %e, "redis log: cannot copy the replica"),
            }
        }
        None
    }

    /// A copy of the replica, unless Redis answers again (then the copy
    /// would only hold up the round trips).
    fn copy_while_down(&self) -> Option<Engine> {
        if self.stats.up.load(Ordering::Relaxed) {
            return None;
        }
        self.log.copy()
    }

    /// Reports a message the fallback engine judged (and recorded), so
    /// that a copy of the replica being made takes it too. Call it while
    /// still holding the fallback engine: a copy that takes over meanwhile
    /// would miss the message.
    pub fn judged_locally(&self, obs: &Observation, now: UnixSecs) {
        if let Ok(mut c) = self.copying.lock() {
            if c.thread.is_some() && c.judged.len() < MAX_JUDGED_WHILE_COPYING {
                c.judged.push((obs.clone(), now));
            }
        }
    }

    /// A copy of the replica is done and waits for the next fallback
    /// ([`RedisLayer::warm_in_background`]).
    pub fn copy_ready(&self) -> bool {
        self.copying
            .lock()
            .is_ok_and(|c| c.thread.as_ref().is_some_and(JoinHandle::is_finished))
    }

    /// Drops a copy of the replica that was made for an outage that ended
    /// before a fallback took it: it would hold a third engine until the
    /// next outage. The next outage may copy at once. (Freed on a thread
    /// of its own: that takes a while.)
    fn discard_copy(&self, l: &LogStore) {
        let Ok(mut c) = self.copying.try_lock() else {
            return;
        };
        let Some(thread) = c.thread.take_if(|t| t.is_finished()) else {
            return;
        };
        c.judged.clear();
        drop(c);
        l.forget_copy();
        let _ = std::thread::Builder::new()
            .name("bulkwatch-free".into())
            .spawn(move || drop(thread.join()));
    }

    /// Calls `f` with the engine that holds the daemon's view when that is
    /// the replica (Redis up, and the replica has read the log
    /// up to its messages); `None` when it is the local engine. For
    /// metrics, the campaign list and the snapshot at shutdown.
    pub fn view<R>(&self, f: impl FnOnce(&Engine) -> R) -> Option<R> {
        if !self.stats.up.load(Ordering::Relaxed) {
            return None;
        }
        self.log.with_ready_replica(f)
    }

    /// Records the message in Redis unless Redis failed less than
    /// `retry_secs` ago. Blocks for at most about the configured timeout.
    pub fn record(&self, obs: &Observation, now: UnixSecs) -> RedisResult {
        let waiting = self
            .retry_at
            .lock()
            .ok()
            .and_then(|g| *g)
            .is_some_and(|t| Instant::now() < t);
        if waiting {
            self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
            return RedisResult::Skipped;
        }
        match self.log.record_logged(obs, now) {
            Ok(Logged::CatchingUp(why)) => {
                self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
                RedisResult::CatchingUp(why)
            }
            Ok(Logged::Outcome(out)) => {
                self.stats.ok.fetch_add(1, Ordering::Relaxed);
                self.discard_copy(&self.log);
                if !self.stats.up.swap(true, Ordering::Relaxed) {
                    tracing::info!("redis: shared state reachable again");
                }
                if let Ok(mut g) = self.retry_at.lock() {
                    *g = None;
                }
                RedisResult::Judged(out)
            }
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
                // The retry must meet a new connection, not the next of
                // those opened to the server that just failed.
                self.pool().forget_idle();
                if self.stats.up.swap(false, Ordering::Relaxed) {
                    self.stats.outages.fetch_add(1, Ordering::Relaxed);
                }
                if let Ok(mut g) = self.retry_at.lock() {
                    *g = Some(Instant::now() + self.retry);
                }
                RedisResult::Failed(e)
            }
        }
    }
}

impl RedisLayer {
    /// Applies an operator's correction to the site's state through the
    /// log. Answers the live campaign's id, or `None` when the site has no
    /// live campaign of that id.
    ///
    /// # Errors
    /// Redis failed or is being retried, or the replica is still reading
    /// the log.
    pub fn correct(
        &self,
        c: Correction,
        now: UnixSecs,
    ) -> Result<Option<crate::engine::campaign::CampaignId>, StoreError> {
        if !self.stats.up.load(Ordering::Relaxed) {
            return Err(StoreError::Down);
        }
        let done = self.log.correct(c, now);
        self.site_changed();
        done
    }

    /// Sets or withdraws a domain allowance in the site's state
    /// ([`LogStore::set_domain_allowance`]).
    ///
    /// # Errors
    /// Redis is down or failed.
    pub fn set_domain_allowance(&self, domain: &str, until: Option<u64>) -> Result<(), StoreError> {
        if !self.stats.up.load(Ordering::Relaxed) {
            return Err(StoreError::Down);
        }
        self.log.set_domain_allowance(domain, until)
    }

    /// The site's domain allowances ([`LogStore::domain_allowances`]).
    ///
    /// # Errors
    /// Redis is down or failed.
    pub fn domain_allowances(&self) -> Result<Vec<(String, u64)>, StoreError> {
        if !self.stats.up.load(Ordering::Relaxed) {
            return Err(StoreError::Down);
        }
        self.log.domain_allowances()
    }

    /// Brings this daemon's view of the site's campaigns up to now: has the
    /// replica read the log (an idle daemon's replica is otherwise as old
    /// as its last message); then [`RedisLayer::view`] shows the site,
    /// every message any host judged before this call included.
    ///
    /// Requests that come together share a read: one reads at a time, and
    /// a read that began after a request came answers it (a request that
    /// came during a read waits for the next). So however many requests
    /// come, one read of what is new is out at a time, and none is answered
    /// from a read older than itself: a host's list never misses the
    /// message another host judged just before (a read limited to once a
    /// second did, when another reader had just read).
    ///
    /// # Errors
    /// Redis failed or is being retried: show the local view.
    pub fn site(&self) -> Result<(), StoreError> {
        if !self.stats.up.load(Ordering::Relaxed) {
            return Err(StoreError::Down);
        }
        let asked = Instant::now();
        let mut last = self
            .site
            .lock()
            .map_err(|_| StoreError::Poisoned("site view"))?;
        if last.is_some_and(|began| began > asked) {
            return Ok(());
        }
        let began = Instant::now();
        self.log.refresh()?;
        *last = Some(began);
        Ok(())
    }

    /// Campaigns that turned bulk in the log since the last call
    /// ([`LogStore::take_crossings`]).
    pub fn take_crossings(&self) -> Vec<stream::Crossing> {
        self.log.take_crossings()
    }

    /// Claims campaign `id`'s alert for this host
    /// ([`LogStore::claim_alert`]).
    ///
    /// # Errors
    /// Redis failed.
    pub fn claim_alert(
        &self,
        id: CampaignId,
        own: bool,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.log.claim_alert(id, own, ttl)
    }

    /// Forgets when the log was last read: the next [`RedisLayer::site`]
    /// reads it (after a correction, whose effect should show at once).
    pub fn site_changed(&self) {
        if let Ok(mut last) = self.site.lock() {
            *last = None;
        }
    }
}

/// Puts `copy` (of the replica) in place of the fallback engine `local`,
/// with `local`'s settings (those that change live), and records `judged`
/// in it; returns the engine it replaced.
fn adopt(local: &mut Engine, mut copy: Engine, judged: &[(Observation, UnixSecs)]) -> Engine {
    copy.reconfigure(local.config());
    for (obs, now) in judged {
        let _ = Store::record(&mut copy, obs, *now);
    }
    std::mem::replace(local, copy)
}
