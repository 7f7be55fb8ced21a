//! Redis store vs memory store, in one run: `cargo bench --bench store`.
//!
//! Starts its own `redis-server` on a free loopback port, then replays the
//! same stream (the SpamAssassin spam and easy-ham sets when
//! `BULKWATCH_CORPUS` names the corpus directory, else the fixtures) with 4
//! messages in flight (4 threads, as the milter's blocking pool would run
//! them), in 5 rounds of one run per backend, each backend on a fresh key
//! prefix:
//! - memory: analyze, then decide under the engine lock;
//! - floor: the same, then one round trip that does nothing on the server
//!   (`EVAL "return 1" 0`): what any design with a round trip per message
//!   could reach at best on this machine, where Redis and the replay share
//!   the cores.
//! - log: the Redis store, as the milter runs it: analyze, then one pipeline that appends the observation and
//!   reads what is new, applied to the store's replica, which gives the
//!   verdict (up to `pool_size`, here 4, pipelines out at once; messages
//!   beyond share the next one). The local engine decides only for
//!   messages that fall back (none here).
//!
//! `BULKWATCH_BENCH_ONLY=memory|floor|log` runs that backend alone, 8
//! times, for a profiler.
//!
//! Prints, for each, the median round's throughput and its ratio to the
//! memory run of the same round (this host's speed drifts within minutes),
//! with the lowest and highest; per-message latency (p50, p99) over all
//! rounds and what Redis adds to it; CPU time per message of this process
//! and of redis-server, and the cores they kept busy; messages per round
//! trip; the Redis memory per fingerprint measured on 100,000 distinct
//! synthetic fingerprints (INFO used_memory before and after); and what
//! the fallback copy of the replica costs at 10^5 and 10^6 entries
//! (clone, and snapshot encoding for comparison).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bulkwatch::config::{Config, StoreBackend};
use bulkwatch::engine::{analyze, observe, Engine, Envelope, UnixSecs};
use bulkwatch::replay::{read_mbox, REPLAY_EPOCH};
use bulkwatch::store::{LogStore, Pool, RedisLayer, RedisResult};

#[allow(dead_code)] // the store tests use more of it
#[path = "../tests/common/synthetic.rs"]
mod synthetic;
use synthetic::synthetic;

const IN_FLIGHT: usize = 4;
/// Rounds of runs (one per backend each).
const ROUNDS: usize = 5;

fn inputs() -> Vec<Vec<u8>> {
    let files: Vec<PathBuf> = match std::env::var_os("BULKWATCH_CORPUS") {
        Some(d) => ["sa-spam.mbox", "sa-easy-ham.mbox"]
            .iter()
            .map(|f| PathBuf::from(&d).join(f))
            .collect(),
        None => ["campaigns.mbox", "ham.mbox"]
            .iter()
            .map(|f| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("fixtures/mbox")
                    .join(f)
            })
            .collect(),
    };
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        eprintln!("input: {}", f.display());
        out.extend(read_mbox(&bytes[..]).filter_map(Result::ok));
    }
    out
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis(dir: &std::path::Path) -> Option<(Server, u16)> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--loglevel", "warning", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some((server, port))
}

/// `BULKWATCH_BENCH_ONLY=memory|floor|log`: 8 replays of that backend
/// alone and nothing else, for a profiler (`perf record -g` of the bench
/// binary).
fn profile_one(cfg: &Config, msgs: &Arc<Vec<Vec<u8>>>, only: &str) {
    let mut c = cfg.clone();
    for i in 0..8 {
        c.store.redis.key_prefix = format!("only{i}");
        let shared = Arc::new(RedisLayer::from_config(&c).unwrap().unwrap());
        let then = match only {
            "memory" => Then::Nothing,
            "floor" => Then::Floor(cfg.store.redis.urls[0].clone()),
            "log" => Then::Store(Arc::clone(&shared)),
            other => panic!("BULKWATCH_BENCH_ONLY: no backend {other} (memory, floor, log)"),
        };
        let (secs, _) = replay(&c, msgs, &then);
        println!("{only}: {:.0} msg/s", msgs.len() as f64 / secs);
        shared.pool().clear().unwrap();
    }
}

/// One measured replay.
#[derive(Clone)]
struct Run {
    secs: f64,
    lat: Vec<Duration>,
    /// CPU seconds of this process and of redis-server during the run.
    client_cpu: f64,
    redis_cpu: f64,
}

/// CPU seconds this process has used (user and system).
fn self_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// CPU seconds redis-server has used (INFO cpu, user and system).
fn redis_cpu(port: u16) -> f64 {
    info(port, "cpu")
        .lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_sys:")
                .or_else(|| l.strip_prefix("used_cpu_user:"))
        })
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum()
}

/// Median, lowest and highest of `v` (zeros when empty).
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |i: usize| v.get(i).copied().unwrap_or_default();
    (at(v.len() / 2), at(0), at(v.len().saturating_sub(1)))
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

/// What each message does after the local engine's verdict.
#[derive(Clone)]
enum Then {
    /// Nothing: the memory backend.
    Nothing,
    /// One round trip to the Redis store (either layout), with the local
    /// decision where the layout wants one.
    Store(Arc<RedisLayer>),
    /// One round trip that does nothing on the server (`EVAL "return 1"`):
    /// the floor under any one-round-trip design on this machine.
    Floor(String),
}

/// Replays `msgs` with IN_FLIGHT threads; returns (seconds, latencies).
fn replay(cfg: &Config, msgs: &Arc<Vec<Vec<u8>>>, then: &Then) -> (f64, Vec<Duration>) {
    let engine = Arc::new(Mutex::new(Engine::new(cfg)));
    let start = Instant::now();
    let handles: Vec<_> = (0..IN_FLIGHT)
        .map(|t| {
            let (engine, msgs, then, cfg) = (
                Arc::clone(&engine),
                Arc::clone(msgs),
                then.clone(),
                cfg.clone(),
            );
            std::thread::spawn(move || {
                // A plain connection for the floor run.
                let mut raw_conn = match &then {
                    Then::Floor(url) => Some(
                        redis::Client::open(url.as_str())
                            .and_then(|c| c.get_connection())
                            .expect("redis connection"),
                    ),
                    _ => None,
                };
                let mut lat = Vec::new();
                for (i, raw) in msgs.iter().enumerate().skip(t).step_by(IN_FLIGHT) {
                    let t0 = Instant::now();
                    let env = Envelope::default();
                    let a = analyze(raw, &env, &cfg);
                    let now = UnixSecs(REPLAY_EPOCH + i as u64);
                    if !matches!(then, Then::Store(_)) {
                        let v = engine.lock().unwrap().decide(&a, &env, now);
                        std::hint::black_box(&v);
                    }
                    if let Ok(obs) = observe(&cfg, &a, &env) {
                        match (&then, raw_conn.as_mut()) {
                            (Then::Store(sh), _) => match sh.record(&obs, now) {
                                RedisResult::Judged(out) => {
                                    std::hint::black_box(out);
                                }
                                other => panic!("redis failed: {other:?}"),
                            },
                            (Then::Floor(_), Some(con)) => {
                                let one: i64 = redis::cmd("EVAL")
                                    .arg("return 1")
                                    .arg(0)
                                    .query(con)
                                    .expect("EVAL");
                                std::hint::black_box(one);
                            }
                            _ => {}
                        }
                    }
                    lat.push(t0.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut all: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let secs = start.elapsed().as_secs_f64();
    all.sort();
    (secs, all)
}

/// `INFO <section>` of the bench's Redis (empty when redis-cli fails).
fn info(port: u16, section: &str) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "INFO", section])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Server-side microseconds per call of `command` (INFO commandstats).
fn command_usec(port: u16, command: &str) -> String {
    info(port, "commandstats")
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{command}:")))
        .and_then(|l| l.split(',').find_map(|f| f.strip_prefix("usec_per_call=")))
        .unwrap_or("?")
        .to_owned()
}

fn used_memory(store: &Pool) -> u64 {
    store.memory_usage().unwrap().0
}

fn main() {
    // `cargo bench` passes --bench; nothing to parse.
    let dir = std::env::temp_dir().join(format!("bulkwatch-store-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let Some((_server, port)) = start_redis(&dir) else {
        eprintln!("redis-server not available: store benchmark skipped");
        return;
    };
    let msgs = Arc::new(inputs());
    let mut cfg = Config::default();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![format!("redis://127.0.0.1:{port}/0")];
    cfg.store.redis.timeout = Duration::from_secs(2);
    cfg.store.redis.pool_size = IN_FLIGHT;
    eprintln!("{} messages, {IN_FLIGHT} in flight", msgs.len());

    // Warm-up (page cache, allocator), then ROUNDS rounds of one run per
    // backend, each against the memory run of its own round: this host's
    // speed drifts by a third over minutes, so a ratio is only fair
    // between runs close in time, and the median of rounds is reported.
    let _ = replay(&cfg, &msgs, &Then::Nothing);
    if let Ok(only) = std::env::var("BULKWATCH_BENCH_ONLY") {
        profile_one(&cfg, &msgs, &only);
        return;
    }
    let names = ["memory", "floor", "log"];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); names.len()];
    let timed = |f: &dyn Fn() -> (f64, Vec<Duration>)| {
        // (redis-cli runs outside this process's measured span.)
        let r0 = redis_cpu(port);
        let c0 = self_cpu();
        let (secs, lat) = f();
        let client_cpu = self_cpu() - c0;
        Run {
            secs,
            lat,
            client_cpu,
            redis_cpu: redis_cpu(port) - r0,
        }
    };
    let mut trips = (0, 0);
    for round in 0..ROUNDS {
        runs[0].push(timed(&|| replay(&cfg, &msgs, &Then::Nothing)));
        let floor = Then::Floor(cfg.store.redis.urls[0].clone());
        runs[1].push(timed(&|| replay(&cfg, &msgs, &floor)));
        let mut c = cfg.clone();
        c.store.redis.key_prefix = format!("logbench{round}");
        let s = Arc::new(RedisLayer::from_config(&c).unwrap().unwrap());
        s.pool().clear().unwrap();
        runs[2].push(timed(&|| replay(&c, &msgs, &Then::Store(Arc::clone(&s)))));
        let (t, m) = s.log_round_trips();
        trips = (trips.0 + t, trips.1 + m);
        s.pool().clear().unwrap();
    }
    let n = msgs.len() as f64;
    let pooled = |k: usize| {
        let mut all: Vec<Duration> = runs[k].iter().flat_map(|r| r.lat.iter().copied()).collect();
        all.sort();
        all
    };
    let mem_lat = pooled(0);
    println!("{ROUNDS} rounds; throughput: median round (lowest-highest); latency: all rounds");
    for (k, name) in names.iter().enumerate() {
        let (mid, low, high) = spread(runs[k].iter().map(|r| n / r.secs).collect());
        let lat = pooled(k);
        println!(
            "{name:<7} {mid:>8.0} msg/s ({low:.0}-{high:.0})   p50 {:>7.3} ms   p99 {:>7.3} ms",
            pct(&lat, 0.5).as_secs_f64() * 1e3,
            pct(&lat, 0.99).as_secs_f64() * 1e3
        );
    }
    println!(
        "log: redis server time per XADD {} us, per XRANGE {} us; {:.2} messages per round trip",
        command_usec(port, "xadd"),
        command_usec(port, "xrange"),
        trips.1 as f64 / trips.0.max(1) as f64
    );
    println!("CPU per message (median round): this process, redis-server; cores busy");
    for (k, name) in names.iter().enumerate() {
        let med = |f: &dyn Fn(&Run) -> f64| spread(runs[k].iter().map(f).collect()).0;
        println!(
            "{name:<7} {:>6.1} us  {:>6.1} us  {:.2} cores",
            med(&|r| r.client_cpu * 1e6 / n),
            med(&|r| r.redis_cpu * 1e6 / n),
            med(&|r| (r.client_cpu + r.redis_cpu) / r.secs),
        );
    }
    for (k, name) in names.iter().enumerate().skip(1) {
        let (mid, low, high) = spread(
            runs[k]
                .iter()
                .zip(&runs[0])
                .map(|(r, m)| 100.0 * m.secs / r.secs)
                .collect(),
        );
        let lat = pooled(k);
        println!(
            "{name}/memory throughput {mid:.1}% ({low:.1}-{high:.1}%)   added latency p50 {:.3} ms, p99 {:.3} ms",
            (pct(&lat, 0.5).as_secs_f64() - pct(&mem_lat, 0.5).as_secs_f64()) * 1e3,
            (pct(&lat, 0.99).as_secs_f64() - pct(&mem_lat, 0.99).as_secs_f64()) * 1e3
        );
    }

    // Memory per fingerprint: 100k distinct fingerprints into an empty
    // prefix; Redis holds one stream entry per fingerprint.
    let count = 100_000u64;
    let mut mcfg = cfg.clone();
    mcfg.store.redis.key_prefix = "logmem".into();
    let mut log = LogStore::open(&mcfg).unwrap();
    log.pool().clear().unwrap();
    let before = used_memory(log.pool());
    for i in 0..count {
        let obs = synthetic(i, &mcfg);
        bulkwatch::store::Store::record(&mut log, &obs, UnixSecs(REPLAY_EPOCH + i / 10)).unwrap();
    }
    let (after, keys) = log.pool().memory_usage().unwrap();
    println!(
        "redis memory: {} fingerprints, {} keys, {:.0} bytes per fingerprint",
        count,
        keys,
        after.saturating_sub(before) as f64 / count as f64,
    );

    // What the fallback pays when Redis goes down: a copy of
    // the replica (on a thread of its own), and what a snapshot of it
    // would cost (why periodic snapshots do not take the replica).
    for n in [100_000u64, 1_000_000] {
        let (clone_ms, encode_ms) = copy_costs(&cfg, n);
        println!(
            "engine of {n} distinct fingerprints: copy {clone_ms:.0} ms, snapshot encode {encode_ms:.0} ms"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Milliseconds to clone, and to encode as a snapshot, an engine holding
/// `n` distinct synthetic fingerprints (each its own campaign, as most
/// mail is).
fn copy_costs(cfg: &Config, n: u64) -> (f64, f64) {
    let mut c = cfg.clone();
    c.window.max_entries = n as usize;
    c.window.window = Duration::from_secs(n);
    let mut e = Engine::new(&c);
    for i in 0..n {
        bulkwatch::store::Store::record(&mut e, &synthetic(i, &c), UnixSecs(REPLAY_EPOCH + i / 10))
            .unwrap();
    }
    let t = Instant::now();
    let copy = e.clone();
    let clone_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let bytes = bulkwatch::store::snapshot::encode(&copy, REPLAY_EPOCH + n);
    let encode_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(bytes.len());
    (clone_ms, encode_ms)
}
