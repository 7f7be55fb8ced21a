//! Stores behind the engine's window, exact set and campaign counts.
//!
//! The [`crate::engine::Store`] trait is the interface; the memory store is
//! the [`crate::engine::Engine`] itself (the default, with the snapshot
//! file), and Redis shares the state of several MX hosts in one of two
//! layouts (`store.redis.layout`): [`redis::RedisStore`] keeps the window
//! and campaigns in Redis and looks up with a script; [`log::LogStore`]
//! keeps only a log there, which every daemon applies to its own replica.
//!
//! With Redis configured, every host keeps a memory store of its own as
//! well, the fallback: [`Shared`] asks Redis first and, when Redis fails or
//! is slower than `store.redis.timeout_ms`, the local verdict stands. With
//! the script layout the daemon records each message in its fallback
//! engine too. With the log layout it does not: the replica already holds
//! the site's window, and the first message that falls back copies it into
//! the fallback engine ([`Shared::warm`]), so that a Redis outage starts
//! from what the whole site saw. After a failure Redis is left alone for
//! `retry_secs`, so an outage costs one timeout, not one per message; then
//! it is tried again and sharing resumes by itself. A message is never held
//! or rejected because Redis is down.

pub mod log;
pub mod redis;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::{Config, RedisLayout, StoreBackend};
use crate::engine::{Engine, Observation, Outcome, StoreError, UnixSecs};

pub use self::log::{LogStore, Logged};
pub use self::redis::RedisStore;

/// Counters of the shared store, for metrics and replay summaries.
#[derive(Debug, Default)]
pub struct SharedStats {
    /// Messages recorded in Redis.
    pub ok: AtomicU64,
    /// Calls that failed (connect, timeout, script or reply error).
    pub errors: AtomicU64,
    /// Messages judged from the local window instead (errors included).
    pub fallbacks: AtomicU64,
    /// Times Redis went from up to down.
    pub outages: AtomicU64,
    /// Redis answered the last call.
    pub up: AtomicBool,
}

/// What [`Shared::record`] did.
#[derive(Debug)]
pub enum SharedResult {
    /// Redis recorded the message: use this outcome.
    Shared(Outcome),
    /// Redis failed now: use the local verdict (the error is for the log).
    Failed(StoreError),
    /// Redis failed recently and is not tried until the retry time.
    Skipped,
    /// Redis answered, but this daemon's replica (log layout) is still
    /// reading the log: use the local verdict. Not an outage.
    CatchingUp(String),
}

/// The Redis store in the configured layout.
#[derive(Debug)]
enum Layout {
    Script(Box<RedisStore>),
    Log(Box<LogStore>),
}

/// Least time between two copies of the replica into the fallback engine
/// ([`Shared::warm`]): a copy costs in proportion to the window, and a
/// Redis that keeps failing now and then must not make the daemon copy
/// for every message.
pub const WARM_EVERY: Duration = Duration::from_secs(60);

/// The shared store with its failure handling.
#[derive(Debug)]
pub struct Shared {
    layout: Layout,
    retry: Duration,
    retry_at: Mutex<Option<Instant>>,
    /// The replica (log layout) gave the last verdict: it, not the
    /// fallback engine, holds the daemon's view.
    replica_current: AtomicBool,
    pub stats: SharedStats,
}

impl Shared {
    /// The shared store `cfg` asks for, if any.
    pub fn from_config(cfg: &Config) -> Result<Option<Shared>, StoreError> {
        match cfg.store.backend {
            StoreBackend::Memory => Ok(None),
            StoreBackend::Redis => Ok(Some(Shared {
                layout: match cfg.store.redis.layout {
                    RedisLayout::Script => Layout::Script(Box::new(RedisStore::open(cfg)?)),
                    RedisLayout::Log => Layout::Log(Box::new(LogStore::open(cfg)?)),
                },
                retry: cfg.store.redis.retry_interval,
                retry_at: Mutex::new(None),
                replica_current: AtomicBool::new(false),
                stats: SharedStats {
                    up: AtomicBool::new(true),
                    ..SharedStats::default()
                },
            })),
        }
    }

    /// The connections and keys (both layouts), for `clear`, the key
    /// prefix and memory figures.
    pub fn store(&self) -> &RedisStore {
        match &self.layout {
            Layout::Script(s) => s,
            Layout::Log(l) => l.pool(),
        }
    }

    /// In the log layout, the round trips sent so far and the messages
    /// they carried ([`LogStore::round_trips`]).
    pub fn log_round_trips(&self) -> Option<(u64, u64)> {
        match &self.layout {
            Layout::Script(_) => None,
            Layout::Log(l) => Some(l.round_trips()),
        }
    }

    /// Whether the daemon records every message in its fallback engine as
    /// well (the script layout). With the log layout the replica holds the
    /// window, and [`Shared::warm`] brings the fallback engine up to it
    /// before a message falls back.
    pub fn records_locally(&self) -> bool {
        matches!(self.layout, Layout::Script(_))
    }

    /// Call before the fallback engine `local` judges a message that Redis
    /// did not: with the log layout, copies the replica into `local` when
    /// the replica moved since its last copy (at most once per
    /// [`WARM_EVERY`]), and makes `local` the daemon's view again. Nothing
    /// with the script layout.
    pub fn warm(&self, local: &mut Engine) {
        if let Layout::Log(l) = &self.layout {
            self.replica_current.store(false, Ordering::Relaxed);
            if l.copy_into(local, WARM_EVERY) {
                tracing::info!("redis log: fallback engine brought up to the replica");
            }
        }
    }

    /// Calls `f` with the engine that holds the daemon's view when that is
    /// the replica (log layout, and the replica gave the last verdict);
    /// `None` when it is the local engine. For snapshots, metrics and the
    /// campaign list.
    pub fn view<R>(&self, f: impl FnOnce(&Engine) -> R) -> Option<R> {
        match &self.layout {
            Layout::Log(l) if self.replica_current.load(Ordering::Relaxed) => l.with_replica(f),
            _ => None,
        }
    }

    /// Records the message in Redis unless Redis failed less than
    /// `retry_secs` ago. Blocks for at most about the configured timeout.
    pub fn record(&self, obs: &Observation, now: UnixSecs) -> SharedResult {
        let waiting = self
            .retry_at
            .lock()
            .ok()
            .and_then(|g| *g)
            .is_some_and(|t| Instant::now() < t);
        if waiting {
            self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
            return SharedResult::Skipped;
        }
        let result = match &self.layout {
            Layout::Script(s) => s.record_shared(obs, now).map(Logged::Outcome),
            Layout::Log(l) => l.record_logged(obs, now),
        };
        match result {
            Ok(Logged::CatchingUp(why)) => {
                self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
                SharedResult::CatchingUp(why)
            }
            Ok(Logged::Outcome(out)) => {
                self.stats.ok.fetch_add(1, Ordering::Relaxed);
                self.replica_current
                    .store(matches!(self.layout, Layout::Log(_)), Ordering::Relaxed);
                if !self.stats.up.swap(true, Ordering::Relaxed) {
                    tracing::info!("redis: shared state reachable again");
                }
                if let Ok(mut g) = self.retry_at.lock() {
                    *g = None;
                }
                SharedResult::Shared(out)
            }
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                self.stats.fallbacks.fetch_add(1, Ordering::Relaxed);
                if self.stats.up.swap(false, Ordering::Relaxed) {
                    self.stats.outages.fetch_add(1, Ordering::Relaxed);
                }
                if let Ok(mut g) = self.retry_at.lock() {
                    *g = Some(Instant::now() + self.retry);
                }
                SharedResult::Failed(e)
            }
        }
    }
}
