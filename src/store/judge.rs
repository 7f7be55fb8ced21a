//! The one place that decides where a verdict comes from: the local engine
//! alone, or Redis first with the local engine as its fallback.
//!
//! A [`Judge`] owns the local engine and the optional Redis store
//! ([`RedisLayer`]). Judging is synchronous and comes in two halves so that
//! each caller adds only what is its own around the one call that may
//! block:
//!
//! 1. [`Judge::begin`] decides locally where no Redis is configured and
//!    settles allow-listed and skipped messages; otherwise it hands back
//!    an [`Ask`] for Redis.
//! 2. [`Ask::run`] is the Redis call (blocking, bounded by the store's
//!    socket timeouts). The milter runs it on the blocking pool under a
//!    timeout of its own; the replay runs it in place.
//! 3. [`Judge::complete`] takes the answer ([`Answer`]): Redis's verdict, or
//!    the local one, from the local engine, which is first brought up to
//!    the replica when Redis is down.
//!
//! [`Judge::judge`] does all three in place.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::Config;
use crate::engine::verdict::Verdict;
use crate::engine::{observe, verdict_of, Analysis, Engine, Envelope, Observation, UnixSecs};
use crate::store::{RedisLayer, RedisResult};

/// How the fallback engine is brought up to the replica in
/// an outage (see [`RedisLayer::warm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warming {
    /// Copy in place, holding the engine meanwhile: the same result for
    /// the same input (a replay).
    InPlace,
    /// Copy on a thread of its own while the engine goes on judging (the
    /// daemon: mail never waits for a copy).
    Background,
}

/// Where a verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The local engine, with no Redis configured, or for a message that
    /// no store has a say on (allow-listed, skipped).
    Local,
    /// Redis.
    Redis,
    /// The local engine, because Redis gave no verdict (it failed, waits
    /// out its retry interval, was too slow, or the replica is still
    /// reading the log).
    Fallback,
}

/// A verdict and where it came from.
#[derive(Debug, Clone)]
pub struct Judged {
    pub verdict: Verdict,
    pub source: Source,
}

/// Why an [`Ask`] got no answer in time.
#[derive(Debug, thiserror::Error)]
pub enum Late {
    #[error("no answer in {0:?}")]
    NoAnswerIn(std::time::Duration),
    #[error("the redis task failed")]
    TaskFailed(#[source] tokio::task::JoinError),
}

/// What came back from Redis for an [`Ask`].
#[derive(Debug)]
pub enum Answer {
    /// What [`RedisLayer::record`] said (boxed: an outcome is a few
    /// hundred bytes, a late answer a few).
    Store(Box<RedisResult>),
    /// No answer in the caller's time (the milter's timeout), or the task
    /// that asked failed: judged locally, not an outage.
    Late(Late),
}

/// A message for Redis: what [`Judge::begin`] hands back when Redis has a
/// say.
#[derive(Debug)]
pub struct Ask {
    redis: Arc<RedisLayer>,
    obs: Observation,
    now: UnixSecs,
}

impl Ask {
    /// Asks Redis (blocking, for about the store's timeout at most). Takes
    /// `&self` so that a caller that gives up waiting still holds the ask.
    pub fn run(&self) -> Answer {
        Answer::Store(Box::new(self.redis.record(&self.obs, self.now)))
    }
}

/// What [`Judge::begin`] found.
#[derive(Debug)]
pub enum Step {
    /// Judged already.
    Done(Judged),
    /// Redis has a say: run the ask, then [`Judge::complete`].
    Ask(Ask),
}

/// The local engine and the optional Redis store (module documentation).
#[derive(Debug)]
pub struct Judge {
    /// Locked only while deciding, and never across an `.await`.
    engine: Mutex<Engine>,
    redis: Option<Arc<RedisLayer>>,
    warming: Warming,
}

impl Judge {
    /// A judge over `engine` and, when configured, `redis`.
    pub fn new(engine: Engine, redis: Option<RedisLayer>, warming: Warming) -> Judge {
        Judge {
            engine: Mutex::new(engine),
            redis: redis.map(Arc::new),
            warming,
        }
    }

    /// The same judge with `redis` as its Redis store.
    pub fn with_redis(mut self, redis: RedisLayer) -> Judge {
        self.redis = Some(Arc::new(redis));
        self
    }

    /// The local engine, locked.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        // A panic while deciding poisons the lock; each step leaves the
        // engine consistent, and refusing all later mail would be worse.
        self.engine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The Redis store, if configured.
    pub fn redis(&self) -> Option<&RedisLayer> {
        self.redis.as_deref()
    }

    /// The Redis store, shared.
    pub fn redis_shared(&self) -> Option<Arc<RedisLayer>> {
        self.redis.clone()
    }

    /// Calls `f` with the engine that holds the daemon's view: the
    /// replica while Redis is up and the replica has read the log
    /// up to its messages, else the local engine (see [`RedisLayer::view`]).
    pub fn with_view<R>(&self, f: impl Fn(&Engine) -> R) -> R {
        if let Some(r) = self.redis.as_ref().and_then(|s| s.view(&f)) {
            return r;
        }
        f(&self.engine())
    }

    /// The first half (module documentation). The message is observed
    /// once, here; every engine and store below works from that.
    pub fn begin(&self, cfg: &Config, a: &Analysis, env: &Envelope, now: UnixSecs) -> Step {
        let obs = match observe(cfg, a, env) {
            Ok(obs) => obs,
            // Allow-listed or skipped: no engine or store has a say.
            Err(v) => {
                return Step::Done(Judged {
                    verdict: *v,
                    source: Source::Local,
                })
            }
        };
        let Some(redis) = &self.redis else {
            return Step::Done(Judged {
                verdict: self.engine().decide_observed(&obs, now),
                source: Source::Local,
            });
        };
        // The replica holds the window; the local engine is brought up
        // to it when a message falls back.
        Step::Ask(Ask {
            redis: Arc::clone(redis),
            obs,
            now,
        })
    }

    /// The second half (module documentation).
    pub fn complete(&self, cfg: &Config, ask: &Ask, answer: Answer) -> Judged {
        let answer = match answer {
            Answer::Store(r) => Ok(*r),
            Answer::Late(l) => Err(l),
        };
        let outage = match answer {
            Ok(RedisResult::Judged(out)) => {
                return Judged {
                    verdict: verdict_of(cfg, &ask.obs, out),
                    source: Source::Redis,
                }
            }
            Ok(RedisResult::Failed(e)) => {
                tracing::warn!(error = %e, "redis unavailable; judged from the local window");
                true
            }
            Ok(RedisResult::Skipped) => true,
            Ok(RedisResult::CatchingUp(why)) => {
                tracing::info!(%why, "judged from the local window");
                false
            }
            Err(why) => {
                ask.redis
                    .stats
                    .fallbacks
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(%why, "redis gave no verdict in time; judged from the local window");
                false
            }
        };
        let source = Source::Fallback;
        let (verdict, replaced) = {
            let mut local = self.engine();
            let replaced = match self.warming {
                Warming::InPlace => {
                    ask.redis.warm(&mut local, outage);
                    None
                }
                Warming::Background => ask.redis.warm_in_background(&mut local, outage),
            };
            let verdict = local.decide_observed(&ask.obs, ask.now);
            // Still holding the engine: a copy that took over between the
            // decision and the report would miss the message.
            ask.redis.judged_locally(&ask.obs, ask.now);
            (verdict, replaced)
        };
        if let Some(old) = replaced {
            // Freeing a large window takes a while: not on mail's path.
            let _ = std::thread::Builder::new()
                .name("bulkwatch-free".into())
                .spawn(move || drop(old));
        }
        Judged { verdict, source }
    }

    /// Both halves and the Redis call in between, in place.
    pub fn judge(&self, cfg: &Config, a: &Analysis, env: &Envelope, now: UnixSecs) -> Judged {
        match self.begin(cfg, a, env, now) {
            Step::Done(j) => j,
            Step::Ask(ask) => {
                let answer = ask.run();
                self.complete(cfg, &ask, answer)
            }
        }
    }
}
