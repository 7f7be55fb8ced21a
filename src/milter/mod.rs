//! The milter adapter: indymilter on tokio, in front of the judge.
//!
//! - [`run`] serves the milter protocol on a listener until `shutdown`
//!   completes (the shape of mini-redis `server::run`), so tests can start
//!   it in-process on `127.0.0.1:0`.
//! - [`State`] is what all connections share: the [`Judge`] (local engine
//!   and optional Redis store; this module adds only what is async: the
//!   message read by a worker process under `engine_timeout`
//!   ([`crate::worker`]), the Redis call under twice its timeout), the live
//!   configuration as an `Arc` swapped on reload, counters for metrics and
//!   the alert queue. A message whose reading failed gets `failure_action`
//!   and is kept in `state_dir/failed/` ([`forensics`]).
//! - `callbacks.rs` wires protocol stages to `session.rs` (per-message
//!   state) and `reply.rs` (the only module that knows milter actions).
//! - `guard.rs` is the listener's guard against floods and idle peers.
//! - `bulkwatch serve` itself (sockets, signals, snapshots, the metrics
//!   listener) is `crate::cli::serve`.

pub mod alert;
pub mod callbacks;
pub mod control;
pub mod doveadm;
pub mod forensics;
pub mod guard;
pub mod later;
pub mod listener;
pub mod metrics;
pub mod origin;
pub mod reply;
pub mod session;
pub mod zerohour;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use crate::config::Config;
use crate::engine::verdict::Verdict;
use crate::engine::{fingerprint, read, read_config, Analysis, Engine, Envelope, UnixSecs};
use crate::store::judge::{Answer, Judge, Late, Step, Warming};
use crate::store::RedisLayer;
pub use listener::Listener;
use metrics::Metrics;
use session::Message;

/// State shared by every connection.
pub struct State {
    /// The local engine and the Redis store when configured; the engine
    /// is locked only while deciding and encoding a snapshot.
    judge: Judge,
    /// The configuration in force, replaced whole on reload. Readers clone
    /// the `Arc` and drop the lock at once.
    config: RwLock<Arc<Config>>,
    /// Counters for `/metrics`.
    pub metrics: Metrics,
    /// Campaigns that just turned bulk, for the alert task (bounded; a full
    /// queue drops the alert rather than delay mail).
    alerts: Option<mpsc::Sender<alert::Alert>>,
    /// The `[alerts]` section the alert task mails with: a reload changes
    /// it live.
    alerts_cfg: Option<tokio::sync::watch::Sender<crate::config::AlertsConfig>>,
    /// What the alert task did (`/metrics`).
    pub alert_counts: Arc<alert::Counts>,
    /// The worker processes that read mail ([`crate::worker`]); `None`
    /// reads in this process (tests of the milter side only: `serve`
    /// always has workers).
    workers: Option<crate::worker::Pool>,
    /// Where messages that killed their reading are kept.
    forensics: Option<forensics::Forensics>,
    /// Recent messages for `bulkwatch campaigns show`, and the file that
    /// keeps the memory store's allowances ([`control`]).
    pub control: control::Control,
    /// The site's own networks (`own.networks`, with Postfix's
    /// `mynetworks` read by `serve`): whose mail is own
    /// ([`origin`]). Replaced whole at each reload.
    own_networks: RwLock<Arc<Vec<ipnet::IpNet>>>,
    /// Messages whose pictures the OCR workers had no time for, to read
    /// later ([`later`]); with workers only.
    later: Option<Arc<later::Later>>,
    /// Delivered copies and users' reports (`[zero_hour]`), when enabled.
    zero_hour: Option<Arc<zerohour::ZeroHour>>,
}

/// A message's verdict, for the reply and the log line.
#[derive(Debug)]
pub struct Decided {
    pub verdict: Verdict,
    /// Time from the end of the message to the verdict.
    pub elapsed: Duration,
    /// The Message-ID, between its brackets, when the message has one.
    pub message_id: Option<String>,
    pub subject: Option<String>,
    /// Why it is the site's own mail, if it is ([`origin`]).
    pub own: Option<origin::OwnReason>,
}

/// Why the engine gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error(transparent)]
    Read(#[from] crate::worker::Failure),
    /// The keyed fingerprint of a worker's reading panicked (a reading
    /// the daemon cannot hash: it distrusts its workers as it does mail).
    #[error("fingerprinting the worker's reading panicked")]
    Fingerprint,
}

impl AnalysisError {
    /// The cause as a metric label ([`crate::worker::Failure::label`]).
    pub fn label(&self) -> &'static str {
        match self {
            AnalysisError::Read(f) => f.label(),
            AnalysisError::Fingerprint => "fingerprint",
        }
    }
}

/// Whom a message counts against for a fair share of the workers and
/// their OCR (`worker::fair`): what the client cannot choose, its SMTP
/// client's network as the MTA saw it (an IPv4 address's /24, an IPv6
/// address's /64: a sender holding a block of addresses is one client),
/// else (Postfix's non-SMTP mail) the local submission. Never the
/// envelope sender, which the client writes: a flood rotating sender
/// domains is still one client.
fn fair_key(env: &Envelope, client: origin::Client) -> String {
    match env.client_addr {
        Some(ip) => client_network(ip),
        None => match client {
            origin::Client::Local => "local".to_owned(),
            origin::Client::Inet | origin::Client::Unseen => "unknown".to_owned(),
        },
    }
}

/// An SMTP client's network as shares count it: an IPv4 address's /24
/// (an IPv4 address written as IPv6 too), an IPv6 address's /64. A sender
/// holding a block of addresses is one client.
pub fn client_network(ip: std::net::IpAddr) -> String {
    let v4 = match ip {
        std::net::IpAddr::V4(a) => Some(a),
        std::net::IpAddr::V6(a) => a.to_ipv4_mapped(),
    };
    match (v4, ip) {
        (Some(a), _) => {
            let [x, y, z, _] = a.octets();
            format!("{x}.{y}.{z}.0/24")
        }
        (None, std::net::IpAddr::V6(a)) => {
            let [s0, s1, s2, s3, ..] = a.segments();
            format!("{s0:x}:{s1:x}:{s2:x}:{s3:x}::/64")
        }
        (None, std::net::IpAddr::V4(a)) => a.to_string(),
    }
}

/// Seconds since the Unix epoch, from the system clock.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl State {
    /// State around `engine`, with the engine's configuration in force.
    pub fn new(engine: Engine) -> State {
        let config = Arc::new(engine.config().clone());
        State {
            judge: Judge::new(engine, None, Warming::Background),
            config: RwLock::new(config),
            metrics: Metrics::new(unix_now()),
            alerts: None,
            alerts_cfg: None,
            alert_counts: Arc::default(),
            workers: None,
            forensics: None,
            control: control::Control::default(),
            own_networks: RwLock::new(Arc::new(Vec::new())),
            later: None,
            zero_hour: None,
        }
    }

    /// Records delivered copies and takes users' reports ([`zerohour`]).
    pub fn with_zero_hour(mut self, z: Arc<zerohour::ZeroHour>) -> State {
        self.zero_hour = Some(z);
        self
    }

    /// The zero-hour ledger and reports, when `zero_hour.enabled`.
    pub fn zero_hour(&self) -> Option<&Arc<zerohour::ZeroHour>> {
        self.zero_hour.as_ref()
    }

    /// Sets the site's own networks (`own.networks` with `mynetworks`
    /// read): whose mail is own from the next message on.
    pub fn set_own_networks(&self, nets: Vec<ipnet::IpNet>) {
        match self.own_networks.write() {
            Ok(mut n) => *n = Arc::new(nets),
            Err(p) => *p.into_inner() = Arc::new(nets),
        }
    }

    /// The site's own networks in force.
    pub fn own_networks(&self) -> Arc<Vec<ipnet::IpNet>> {
        match self.own_networks.read() {
            Ok(n) => Arc::clone(&n),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// With the runtime corrections `control` (see [`control::Control::open`]).
    pub fn with_control(mut self, control: control::Control) -> State {
        self.control = control;
        self
    }

    /// Reads mail in `workers` instead of this process.
    pub fn with_workers(mut self, workers: crate::worker::Pool) -> State {
        self.workers = Some(workers);
        self.later = Some(Arc::new(later::Later::new()));
        self
    }

    /// The messages waiting to be read later ([`later`]), with workers.
    pub fn later(&self) -> Option<&later::Later> {
        self.later.as_deref()
    }

    /// Keeps messages that killed their reading in `f`'s directory.
    pub fn with_forensics(mut self, f: forensics::Forensics) -> State {
        self.forensics = Some(f);
        self
    }

    /// The worker pool, if mail is read in workers.
    pub fn workers(&self) -> Option<&crate::worker::Pool> {
        self.workers.as_ref()
    }

    /// Judges with `shared` first and the local engine as the fallback.
    pub fn with_redis(mut self, shared: RedisLayer) -> State {
        self.judge = self.judge.with_redis(shared);
        self
    }

    /// The shared store, if configured.
    pub fn redis(&self) -> Option<&RedisLayer> {
        self.judge.redis()
    }

    /// The shared store, if configured, for a task of its own (alerts).
    pub fn redis_shared(&self) -> Option<std::sync::Arc<RedisLayer>> {
        self.judge.redis_shared()
    }

    /// Sends campaigns that turn bulk to `tx` (see [`alert`]), and the
    /// `[alerts]` section of each reload to `cfg`.
    pub fn with_alerts(
        mut self,
        tx: mpsc::Sender<alert::Alert>,
        cfg: tokio::sync::watch::Sender<crate::config::AlertsConfig>,
    ) -> State {
        self.alerts = Some(tx);
        self.alerts_cfg = Some(cfg);
        self
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        // A poisoned lock still holds a whole Arc: a writer only swaps it.
        match self.config.read() {
            Ok(c) => Arc::clone(&c),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// Calls `f` with the engine that holds the daemon's view (see
    /// [`Judge::with_view`]): for metrics, the campaign list and the
    /// snapshot at shutdown.
    pub fn with_view<R>(&self, f: impl Fn(&Engine) -> R) -> R {
        self.judge.with_view(f)
    }

    /// The local engine, locked. Do not hold the guard across `.await`.
    pub fn engine(&self) -> MutexGuard<'_, Engine> {
        self.judge.engine()
    }

    /// Applies a reloaded configuration ([`Config::reloaded`]: what
    /// changes live and what waits for a restart). Returns the keys whose
    /// new values wait for a restart, and the keys whose values changed
    /// now.
    pub fn reload(&self, new: &Config) -> (Vec<crate::config::Restart>, Vec<String>) {
        let old = self.config();
        let (merged, keys) = old.reloaded(new);
        let changed = old.changed_keys(&merged);
        self.engine().reconfigure(&merged);
        if let Some(tx) = &self.alerts_cfg {
            tx.send_replace(merged.alerts.clone());
        }
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(merged),
            Err(p) => *p.into_inner() = Arc::new(merged),
        }
        (keys, changed)
    }

    /// Reads a message (in a worker process when the state has workers,
    /// bounded by `engine_timeout`), fingerprints it, then decides under
    /// the engine lock at the current time. A message whose reading failed
    /// is kept for forensics ([`forensics`]).
    ///
    /// # Errors
    /// The reading failed: the worker died, panicked or timed out.
    pub async fn judge_message(
        &self,
        cfg: &Arc<Config>,
        msg: Message,
    ) -> Result<Decided, AnalysisError> {
        let start = Instant::now();
        let mut env = msg.envelope;
        let own = origin::own_reason(&cfg.own, &self.own_networks(), msg.client, &env);
        env.origin = origin::origin(own);
        let raw = msg.raw;
        let authenticated =
            crate::engine::allowance::authenticated(&msg.auth_results, &cfg.allow.authserv_ids);
        // Whose turn the reading takes (and a reading done later).
        let sender = fair_key(&env, msg.client);
        let reading = match &self.workers {
            Some(pool) => {
                let wait = cfg.milter.queue_timeout;
                match pool
                    .read_as(&raw, &env.rcpts, &sender, wait, cfg.milter.engine_timeout)
                    .await
                {
                    Ok(r) => r,
                    Err(e) => {
                        // A wait for a worker says nothing of the message:
                        // no copy is kept.
                        if let Some(f) = self.forensics.as_ref().filter(|_| e.in_reading()) {
                            f.keep(env.queue_id.as_deref(), raw).await;
                        }
                        return Err(e.into());
                    }
                }
            }
            None => read(&raw, &env.rcpts, &read_config(cfg)),
        };
        if let Some(cause) = reading.deep_failure {
            tracing::warn!(
                cause,
                "the deep reading (attached PDFs, pictures) failed: judged on the rest of \
                 the message, read partly"
            );
            if let Some(f) = &self.forensics {
                f.keep(env.queue_id.as_deref(), raw.clone()).await;
            }
        }
        // Hashing a worker's reading is guarded as reading is: a panic
        // costs this message its verdict, not the connection.
        // A picture the OCR workers had no time for (or failed on): the
        // readers' reading stands, and the message is read again later.
        let unread = reading.wants_ocr;
        let analysis =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fingerprint(reading, cfg)))
                .map_err(|_| AnalysisError::Fingerprint)?;
        let (mut verdict, elapsed) = self
            .judge_analysis(cfg, &analysis, &env, &authenticated, start, own)
            .await;
        self.metrics.record_verdict(verdict.level, elapsed);
        self.metrics.record_class(&verdict);
        verdict.unread = unread;
        if unread && !matches!(verdict.level, crate::engine::verdict::Level::Allowed(_)) {
            if let (Some(later), Some(_)) = (&self.later, &self.workers) {
                later.push(later::Pending {
                    key: sender,
                    raw,
                    env,
                    authenticated,
                    own,
                    queued: Instant::now(),
                });
            }
        }
        Ok(Decided {
            verdict,
            elapsed,
            message_id: analysis.message_id,
            subject: analysis.subject,
            own,
        })
    }

    /// Reads `p` again with its pictures' text and judges that reading as
    /// a copy of the message: its campaign counts it ([`later`]). The
    /// message was delivered; the verdict is logged, not applied.
    async fn read_later(&self, later: &later::Later, p: later::Pending) {
        let Some(pool) = &self.workers else {
            return;
        };
        let cfg = self.config();
        let queue_id = p.env.queue_id.as_deref().unwrap_or("NOQUEUE").to_owned();
        let age = p.queued.elapsed();
        let answer = match later::MAX_WAIT.checked_sub(age) {
            Some(wait) => {
                pool.read_later(
                    &p.raw,
                    &p.env.rcpts,
                    &p.key,
                    wait,
                    cfg.milter.engine_timeout.min(later::MAX_READING),
                )
                .await
            }
            None => Some(Err(crate::worker::Failure::Queue(age))),
        };
        let reading = match answer {
            Some(Ok(r)) if !r.wants_ocr && r.deep_failure.is_none() => r,
            other => {
                later
                    .counts
                    .failed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let cause = match &other {
                    Some(Err(f)) => f.label(),
                    Some(Ok(_)) => "picture",
                    None => "no OCR workers",
                };
                tracing::warn!(
                    queue_id = %queue_id,
                    cause,
                    "picture not read later either: the message stays counted as first read"
                );
                return;
            }
        };
        let Ok(analysis) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fingerprint(reading, &cfg)))
        else {
            later
                .counts
                .failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        let (verdict, _) = self
            .judge_analysis(
                &cfg,
                &analysis,
                &p.env,
                &p.authenticated,
                Instant::now(),
                p.own,
            )
            .await;
        later
            .counts
            .read
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let campaign = verdict.campaign.as_ref();
        tracing::info!(
            queue_id = %queue_id,
            level = verdict.level.as_str(),
            campaign = campaign.map(|c| tracing::field::display(c.id)),
            size = campaign.map(|c| if verdict.own { u64::from(c.own) } else { c.recipients }),
            "picture read later: the message counted in its campaign (delivered already)"
        );
    }

    /// Judges an analysis at the current time ([`Judge`]): the Redis call,
    /// when there is one, on the blocking pool and bounded by twice the
    /// store's timeout (the blocking call ends by its own socket
    /// timeouts). Queues an alert; the caller counts the verdict.
    async fn judge_analysis(
        &self,
        cfg: &Arc<Config>,
        analysis: &Analysis,
        env: &Envelope,
        authenticated: &[String],
        start: Instant,
        own: Option<origin::OwnReason>,
    ) -> (Verdict, Duration) {
        let now = UnixSecs(unix_now());
        // A sender domain the operator allowed, authenticated by the
        // site's own authenticators: no store has a say, as for the
        // configuration's allow-lists.
        let allowed =
            self.control
                .domain_allowance(analysis.from_domain.as_deref(), authenticated, now.0);
        let judged = match allowed {
            Some(_) => Step::Done(crate::store::judge::Judged {
                verdict: Verdict::allowed(crate::engine::verdict::AllowReason::Domain),
                source: crate::store::judge::Source::Local,
            }),
            None => self.judge.begin(cfg, analysis, env, now),
        };
        let judged = match judged {
            Step::Done(j) => j,
            Step::Ask(ask) => {
                let ask = Arc::new(ask);
                let task_ask = Arc::clone(&ask);
                let task = tokio::task::spawn_blocking(move || task_ask.run());
                let limit = cfg.store.redis.timeout.saturating_mul(2);
                let answer = match tokio::time::timeout(limit, task).await {
                    Ok(Ok(answer)) => answer,
                    Ok(Err(e)) => Answer::Late(Late::TaskFailed(e)),
                    Err(_) => Answer::Late(Late::NoAnswerIn(limit)),
                };
                self.judge.complete(cfg, &ask, answer)
            }
        };
        let mut verdict = judged.verdict;
        if let Some(z) = &self.zero_hour {
            z.amend(cfg, &mut verdict, &env.rcpts);
        }
        let elapsed = start.elapsed();
        if verdict.newly_bulk && (!verdict.own || cfg.own.alert) {
            if let (Some(tx), Some(c)) = (&self.alerts, &verdict.campaign) {
                let a = alert::Alert {
                    campaign: c.clone(),
                    at: now.0,
                    message_id: analysis.message_id.clone(),
                    queue_id: env.queue_id.clone(),
                    metrics_listen: cfg.metrics.listen.clone(),
                    judged_here: true,
                    logs: alert::LogPlace::current(),
                    inside: own.map(|reason| alert::Inside {
                        reason: Some(reason),
                        login: env.auth_user.clone(),
                        client: env.client_addr.map(|a| a.to_string()),
                        sender: env.mail_from.clone(),
                    }),
                    held: (if own.is_some() {
                        cfg.policy.own
                    } else {
                        cfg.policy.bulk
                    }) == crate::config::Action::Quarantine,
                };
                if tx.try_send(a).is_err() {
                    tracing::warn!(campaign = %c.id, "alert queue full, alert dropped");
                }
            }
        }
        (verdict, elapsed)
    }

    /// The snapshot bytes of the local engine: copied under its lock,
    /// encoded outside it (call it off the runtime's threads: the encoding
    /// takes about 0.5 s at 10^6 entries). The lock, which every message's
    /// decision takes, is held for the copy only (0.10 s at 10^6 entries
    /// against 0.47 s to encode under it: `examples/snapshot_stall.rs`);
    /// the copy costs the engine's memory again for as long as the
    /// encoding runs.
    ///
    /// With Redis that is the fallback engine, as of the last copy
    /// of the replica and the messages it judged since, not the replica:
    /// holding the replica would hold every message's round trip meanwhile.
    /// The log in Redis keeps the window across restarts; the snapshot
    /// serves the fallback while a restarted replica reads it.
    pub fn snapshot_bytes(&self) -> Vec<u8> {
        let copy = self.engine().clone();
        crate::store::snapshot::encode(&copy, unix_now())
    }

    /// The snapshot bytes of the engine that holds the daemon's view (see
    /// [`State::with_view`]): for the snapshot at shutdown, when no message
    /// waits for the replica any more. With Redis, a restart's
    /// fallback engine then starts from what the site saw, for the messages
    /// it judges while the new replica reads the log.
    pub fn view_snapshot_bytes(&self) -> Vec<u8> {
        let now = unix_now();
        self.with_view(|e| crate::store::snapshot::encode(e, now))
    }
}

/// Serves the milter protocol on `listener` until `shutdown` completes,
/// then stops accepting and lets the callbacks in progress finish.
///
/// # Errors
/// The listener failed.
pub async fn run(listener: Listener, state: Arc<State>, shutdown: impl Future) -> io::Result<()> {
    let cfg = state.config();
    let cap = cfg.milter.max_connections;
    fd_budget(cap)?;
    let config = indymilter::Config {
        // The guard keeps `cap` live connections; the library's own bound
        // only leaves room for evicted ones that are still closing.
        max_connections: cap + EVICTION_HEADROOM,
        actions: reply::needed_actions(),
        connection_timeout: cfg.milter.idle_timeout,
    };
    let listener = guard::Guarded::new(listener, cap, Arc::clone(&state));
    let later = tokio::spawn(later::run(Arc::clone(&state)));
    let served = indymilter::run(listener, callbacks::callbacks(state), config, shutdown).await;
    later.abort();
    served
}

/// Connections beyond `max_connections` the milter library admits: evicted
/// connections still closing. Past it, a new connection waits in the
/// kernel's backlog until one has closed.
const EVICTION_HEADROOM: usize = 16;

/// Descriptors the daemon needs besides its milter connections: the
/// listeners, metrics connections ([`crate::http::MAX_HTTP_CONNECTIONS`]),
/// snapshot and state files, Redis connections, the runtime, stdio.
const FD_RESERVE: u64 = 128;

/// Raises the open-file limit to its hard limit and checks that it holds
/// `max_connections` milter connections with their headroom and the
/// daemon's other descriptors: a daemon that runs out of descriptors
/// cannot accept Postfix's connections.
///
/// # Errors
/// The limit is too low, with the numbers and the fix.
pub fn fd_budget(max_connections: usize) -> io::Result<()> {
    // Raise the soft limit to the hard one; keep the limit in force if
    // that is refused, or if the limit cannot be read (then no check).
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else {
        return Ok(());
    };
    let soft = if soft < hard {
        rlimit::Resource::NOFILE
            .set(hard, hard)
            .map_or(soft, |()| hard)
    } else {
        soft
    };
    let need = (max_connections + EVICTION_HEADROOM) as u64 + FD_RESERVE;
    if soft != rlimit::INFINITY && soft < need {
        return Err(io::Error::other(format!(
            "milter.max_connections = {max_connections} needs {need} open files, and this \
             process may open {} (RLIMIT_NOFILE): lower max_connections or raise the limit \
             (LimitNOFILE= in the systemd unit, ulimit -n)",
            soft
        )));
    }
    Ok(())
}

/// A boxed future, for shutdown handles in tests and `serve`.
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

#[cfg(test)]
mod tests {
    use super::*;
    /// Fair shares follow what the client cannot choose: one /24 or /64
    /// is one client whatever its envelope senders; local submission is
    /// one client.
    #[test]
    fn fair_shares_are_keyed_by_the_clients_network() {
        use super::{fair_key, origin::Client};
        let env = |addr: &str, from: &str| crate::engine::Envelope {
            client_addr: addr.parse().ok(),
            mail_from: Some(from.to_owned()),
            ..crate::engine::Envelope::default()
        };
        let a = fair_key(&env("192.0.2.7", "a@one.example"), Client::Inet);
        assert_eq!(a, "192.0.2.0/24");
        assert_eq!(
            fair_key(&env("192.0.2.99", "b@two.example"), Client::Inet),
            a
        );
        assert_eq!(
            fair_key(&env("::ffff:192.0.2.8", "c@x.example"), Client::Inet),
            a
        );
        assert_ne!(
            fair_key(&env("192.0.3.7", "a@one.example"), Client::Inet),
            a
        );
        assert_eq!(
            fair_key(&env("2001:db8:1:2:3:4:5:6", "a@x.example"), Client::Inet),
            "2001:db8:1:2::/64"
        );
        assert_eq!(fair_key(&env("", "a@x.example"), Client::Local), "local");
    }

    use crate::config::{Action, SocketSpec};

    #[test]
    fn reload_applies_live_keys_and_keeps_the_socket() {
        let state = State::new(Engine::new(&Config::default()));
        let mut new = Config::default();
        new.thresholds.bulk_threshold = 7.0;
        new.policy.bulk = Action::Reject;
        new.milter.socket = SocketSpec::Inet("127.0.0.1:1".into());
        let (keys, mut changed) = state.reload(&new);
        let keys: Vec<&str> = keys.iter().map(|r| r.key).collect();
        assert_eq!(keys, vec!["milter.socket"]);
        changed.sort();
        assert_eq!(changed, ["policy.bulk", "thresholds.bulk_threshold"]);
        let cfg = state.config();
        assert_eq!(cfg.thresholds.bulk_threshold, 7.0);
        assert_eq!(cfg.policy.bulk, Action::Reject);
        assert_eq!(cfg.milter.socket, Config::default().milter.socket);
        assert_eq!(state.engine().config().thresholds.bulk_threshold, 7.0);
    }
}
