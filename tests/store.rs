//! The store contract: the memory store and the Redis store (one server and
//! a 3-node cluster) give the same verdicts for the same stream; two
//! daemons sharing one Redis see one campaign; a Redis outage costs no
//! verdict and sharing resumes after it.
//!
//! Each test starts its own `redis-server` on free loopback ports and stops
//! it. Without redis-server the tests are ignored, with the reason (CI requires it).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use bulkwatch::config::{Config, StoreBackend};
use bulkwatch::engine::campaign::CampaignId;
use bulkwatch::engine::verdict::{AllowReason, Level, Verdict};
use bulkwatch::engine::{analyze, verdict_of, Engine, Envelope, Observation, UnixSecs};
use bulkwatch::replay::{read_mbox, REPLAY_EPOCH};
use bulkwatch::store::{
    Correction, LogStore, Logged, Pool, RedisLayer, RedisResult, Store, StoreError,
};
use common::redis::{judged_on, RedisCluster, RedisServer};
use common::spam_bytes as spam;
use common::synthetic::{observation, random_bits, splitmix, synthetic};

fn fixture_messages(name: &str) -> Vec<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/mbox")
        .join(name);
    let f = std::fs::File::open(p).unwrap();
    read_mbox(std::io::BufReader::new(f))
        .map(Result::unwrap)
        .collect()
}

fn redis_config(urls: Vec<String>, prefix: &str) -> Config {
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 3.0;
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = urls;
    cfg.store.redis.key_prefix = prefix.into();
    cfg.store.redis.timeout = Duration::from_secs(5);
    cfg
}

/// The shared layer on `server` under `prefix`, trying Redis again at
/// every call after a failure (no retry interval), and its settings.
fn retrying_layer(server: &RedisServer, prefix: &str) -> (Config, std::sync::Arc<RedisLayer>) {
    let mut cfg = redis_config(vec![server.url()], prefix);
    cfg.store.redis.retry_interval = Duration::ZERO;
    let shared = std::sync::Arc::new(RedisLayer::from_config(&cfg).unwrap().unwrap());
    (cfg, shared)
}

/// Envelope of message `i`: recipient counts vary, and the sender domain
/// changes every 40 messages, so a long campaign loses old domains as its
/// messages leave the window.
fn envelope(i: usize) -> Envelope {
    Envelope {
        mail_from: Some(format!("bounce{}@sender{}.example", i, (i / 40) % 5)),
        // Other people each message (recipients are counted once a
        // campaign).
        rcpts: (0..1 + i % 3)
            .map(|r| format!("user{i}-{r}@example.net"))
            .collect(),
        ..Envelope::default()
    }
}

/// Campaign as seen: id, messages, recipients, score in hundredths, first
/// seen, sender domains, sample subject.
type SeenCampaign = (String, u32, u64, u64, u64, usize, Option<String>);

/// What must be equal whichever store judged the message.
#[derive(Debug, PartialEq)]
struct Seen {
    level: Level,
    exact: bool,
    distance: Option<u32>,
    resemblance: Option<String>,
    campaign: Option<SeenCampaign>,
    merged: Vec<String>,
    newly_bulk: bool,
    corroborating: u32,
    /// Near miss: campaign, distance, sketch difference.
    near: Option<(String, u32, u32)>,
}

fn seen(v: &Verdict) -> Seen {
    let mut merged: Vec<String> = v.merged.iter().map(|m| m.to_string()).collect();
    merged.sort();
    Seen {
        level: v.level,
        exact: v.exact,
        distance: v.distance,
        resemblance: v.resemblance.map(|r| format!("{r:.4}")),
        campaign: v.campaign.as_ref().map(|c| {
            (
                c.id.to_string(),
                c.messages,
                c.recipients,
                (c.score * 100.0).round() as u64,
                c.first_seen,
                c.sender_domains,
                c.sample_subject.clone(),
            )
        }),
        merged,
        newly_bulk: v.newly_bulk,
        corroborating: v.corroborating,
        near: v
            .near_miss
            .map(|m| (m.campaign.to_string(), m.distance, m.sketch_diff)),
    }
}

/// Feeds `msgs` to `store`, `step` simulated seconds apart.
/// A whole decision against any store: observe, record, finish (what
/// `Judge` does around the store it holds).
fn decide_with(
    store: &mut dyn Store,
    cfg: &Config,
    a: &bulkwatch::engine::Analysis,
    env: &Envelope,
    now: UnixSecs,
) -> Result<Verdict, StoreError> {
    match bulkwatch::engine::observe(cfg, a, env) {
        Err(v) => Ok(*v),
        Ok(obs) => {
            let out = store.record(&obs, now)?;
            Ok(bulkwatch::engine::verdict_of(cfg, &obs, out))
        }
    }
}

fn run(store: &mut dyn Store, cfg: &Config, msgs: &[Vec<u8>], step: u64) -> Vec<Seen> {
    msgs.iter()
        .enumerate()
        .map(|(i, raw)| {
            let env = envelope(i);
            let a = analyze(raw, &env, cfg);
            let now = UnixSecs(REPLAY_EPOCH + i as u64 * step);
            seen(&decide_with(store, cfg, &a, &env, now).unwrap())
        })
        .collect()
}

fn assert_same(memory: &[Seen], redis: &[Seen]) {
    assert_eq!(memory.len(), redis.len());
    for (i, (m, r)) in memory.iter().zip(redis).enumerate() {
        assert_eq!(m, r, "message {i}: memory and redis stores disagree");
    }
}

/// Keys of `prefix` and how many of them lack a TTL of at most `max`
/// seconds: Redis must need no cleanup job.
fn keys_without_ttl(server: &RedisServer, prefix: &str, max: u64) -> (usize, usize) {
    const SCRIPT: &str = "local bad = 0 \
        local keys = redis.call('KEYS', ARGV[1]) \
        for _, k in ipairs(keys) do \
          local t = redis.call('TTL', k) \
          if t < 0 or t > tonumber(ARGV[2]) then bad = bad + 1 end \
        end \
        return {#keys, bad}";
    let out = server
        .cli(&[
            "EVAL",
            SCRIPT,
            "0",
            &format!("{{{prefix}:v*"),
            &max.to_string(),
        ])
        .unwrap();
    let n: Vec<usize> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    (n[0], n[1])
}

fn stream() -> Vec<Vec<u8>> {
    let mut msgs = fixture_messages("campaigns.mbox");
    let ham = fixture_messages("ham.mbox");
    // Interleave ham into the campaigns, as real traffic would.
    for (i, h) in ham.into_iter().enumerate() {
        let at = (i * 6 + 3).min(msgs.len());
        msgs.insert(at, h);
    }
    msgs
}

/// The Redis store `cfg` configures.
fn open_store(cfg: &Config) -> Box<dyn Store> {
    Box::new(LogStore::open(cfg).unwrap())
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_on_the_fixture_stream() {
    agree_on_the_fixture_stream();
}

fn agree_on_the_fixture_stream() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "contract");
    let msgs = stream();
    let memory = run(&mut Engine::new(&cfg), &cfg, &msgs, 1);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 1);
    assert_same(&memory, &shared);
    // The stream has what the contract is about: bulk, merges, exact hits.
    assert!(memory.iter().filter(|s| s.level == Level::Bulk).count() > 500);
    assert!(memory.iter().any(|s| !s.merged.is_empty()));
    assert!(memory.iter().any(|s| s.exact));
    assert!(memory.iter().any(|s| s.newly_bulk));
    // ... and the linking rule's three outcomes besides a strong join: a
    // join on weak evidence, and a near miss (src/engine/link.rs).
    assert!(memory.iter().any(|s| s.corroborating > 0));
    assert!(memory.iter().any(|s| s.near.is_some()));
    // One key, the log, with the window plus 5 minutes to live,
    // and one entry per message that reached the store.
    let (keys, bad) = keys_without_ttl(&server, "contract", 21_600 + 300);
    assert_eq!((keys, bad), (1, 0));
    let key = format!(
        "{}:log",
        bulkwatch::store::redis::key_base(&cfg.store.redis)
    );
    let len = server.cli(&["XLEN", &key]).unwrap();
    let recorded = memory.iter().filter(|s| s.campaign.is_some()).count();
    assert_eq!(len.trim(), recorded.to_string());
}

/// Corroboration (`window.corroborating_*`) through the Redis log: with
/// narrow match bounds and containment off, many messages of the fixture
/// campaigns match no entry and join on corroboration; both stores agree
/// on every verdict. With containment on, many join as copies instead,
/// and the stores agree too.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_redis_stores_agree_on_corroborated_joins() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "corroboration");
    cfg.window.max_sketch_diff = 3;
    cfg.window.max_minhash_distance = 8;
    cfg.window.corroborating_matches = 2;
    cfg.window.corroborating_sketch_diff = 12;
    cfg.window.corroborating_distance = 24;
    let msgs: Vec<Vec<u8>> = stream().into_iter().take(600).collect();
    let contained = run(&mut Engine::new(&cfg), &cfg, &msgs, 1);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 1);
    assert_same(&contained, &shared);
    cfg.window.containment = false;
    cfg.store.redis.key_prefix = "corroboration-only".into();
    let memory = run(&mut Engine::new(&cfg), &cfg, &msgs, 1);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 1);
    assert_same(&memory, &shared);
    assert_ne!(memory, contained, "containment joined some");
    // Corroboration changed verdicts: without it, more messages start a
    // campaign of their own.
    let mut off = cfg.clone();
    off.window.corroborating_matches = 0;
    assert!(memory.iter().filter(|s| s.corroborating > 0).count() > 20);
    let alone = |v: &[Seen]| {
        v.iter()
            .filter(|s| s.campaign.as_ref().is_some_and(|c| c.1 == 1))
            .count()
    };
    let without = run(&mut Engine::new(&off), &off, &msgs, 1);
    assert!(
        alone(&memory) + 20 < alone(&without),
        "{} alone with corroboration, {} without",
        alone(&memory),
        alone(&without)
    );
}

/// `links + 1` simhashes, seeds, 2k apart one from the next (no match)
/// and more than 3k from all others, and the `links` bridges between
/// consecutive seeds, each k from both.
fn merge_chain(cfg: &Config, links: usize, st: &mut u64) -> (Vec<u64>, Vec<u64>) {
    let k = cfg.window.max_distance;
    let mut seeds = vec![splitmix(st)];
    let mut bridges = Vec::new();
    while seeds.len() <= links {
        let last = *seeds.last().unwrap();
        let step = random_bits(2 * k, st);
        let next = last ^ step;
        let far = seeds
            .iter()
            .rev()
            .skip(1)
            .all(|s| (s ^ next).count_ones() > 3 * k);
        if far {
            let mut half = step;
            while half.count_ones() > k {
                half &= half - 1;
            }
            seeds.push(next);
            bridges.push(last ^ half);
        }
    }
    (seeds, bridges)
}

/// A campaign merged into an older one, that one into an older one, and
/// so on, 80 times: the first campaign's entries reach the oldest
/// campaign through 80 aliases. A message like the first campaign's
/// joins the oldest in both stores. (The retired Lua copy of the rule once
/// gave up after 64 aliases, and such a message started a campaign of its
/// own there.)
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_on_long_merge_chains() {
    agree_on_long_merge_chains();
}

fn agree_on_long_merge_chains() {
    const LINKS: usize = 80;
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "chain");
    // Single link: one bridge merges two campaigns (the merge machinery is
    // what is tested here, not the linking rule).
    cfg.window.corroborating_matches = 0;
    let mut st = 11;
    let (seeds, bridges) = merge_chain(&cfg, LINKS, &mut st);
    // Campaigns oldest first, then the bridges newest first: each merges
    // the chain so far into the next older campaign.
    let mut obs: Vec<Observation> = seeds
        .iter()
        .map(|s| observation(&cfg, *s, &mut st))
        .collect();
    obs.extend(bridges.iter().rev().map(|b| observation(&cfg, *b, &mut st)));
    obs.push(observation(&cfg, seeds[LINKS], &mut st));
    let feed = |store: &mut dyn Store| -> Vec<Seen> {
        obs.iter()
            .enumerate()
            .map(|(i, o)| {
                let now = UnixSecs(REPLAY_EPOCH + i as u64);
                seen(&verdict_of(&cfg, o, store.record(o, now).unwrap()))
            })
            .collect()
    };
    let memory = feed(&mut Engine::new(&cfg));
    let shared = feed(open_store(&cfg).as_mut());
    assert_same(&memory, &shared);
    // The last message joined the oldest campaign, which holds them all.
    let last = memory.last().and_then(|s| s.campaign.as_ref()).unwrap();
    let first = memory.first().and_then(|s| s.campaign.as_ref()).unwrap();
    assert_eq!((&last.0, last.1), (&first.0, obs.len() as u32));
}

/// A chain of merges, then the chain's messages leave a short window
/// while copies of its texts keep coming: the counts must fall as in
/// memory, level by level, until the whole campaign has left and its
/// first text starts it again.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_as_merged_campaigns_leave_the_window() {
    agree_as_merged_campaigns_leave_the_window();
}

fn agree_as_merged_campaigns_leave_the_window() {
    const LINKS: usize = 12;
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "nested");
    // Single link, as above.
    cfg.window.corroborating_matches = 0;
    cfg.window.window = Duration::from_secs(600);
    let mut st = 29;
    let (seeds, bridges) = merge_chain(&cfg, LINKS, &mut st);
    let texts: Vec<Observation> = seeds
        .iter()
        .chain(bridges.iter().rev())
        .map(|s| observation(&cfg, *s, &mut st))
        .collect();
    // (text, time): three copies of each seed 30 s apart, the bridges
    // newest first (each merges the chain so far into the next older
    // campaign: 12 levels), copies of the seeds every 7 s for 1,050 s (the
    // seeds' first copies leave the window meanwhile), and after a quiet
    // window the first seed again.
    let mut stream: Vec<(usize, u64)> = Vec::new();
    for i in 0..=LINKS {
        for c in 0..3 {
            stream.push((i, 30 * i as u64 + c));
        }
    }
    for j in 0..LINKS {
        stream.push((LINKS + 1 + j, 400 + j as u64));
    }
    for n in 0..150u64 {
        stream.push(((n as usize * 5) % (LINKS + 1), 420 + 7 * n));
    }
    stream.push((0, 2200));
    let feed = |store: &mut dyn Store| -> Vec<Seen> {
        stream
            .iter()
            .map(|(i, at)| {
                let o = &texts[*i];
                let now = UnixSecs(REPLAY_EPOCH + at);
                seen(&verdict_of(&cfg, o, store.record(o, now).unwrap()))
            })
            .collect()
    };
    let memory = feed(&mut Engine::new(&cfg));
    let shared = feed(open_store(&cfg).as_mut());
    assert_same(&memory, &shared);
    // The chain merged into one campaign, whose counts fell as its first
    // messages left, and which started again after the quiet window.
    let size = |s: &Seen| s.campaign.as_ref().unwrap().1;
    let merged = memory.iter().filter(|s| !s.merged.is_empty()).count();
    assert_eq!(merged, LINKS);
    let peak = memory.iter().map(size).max().unwrap();
    let before_quiet = size(&memory[memory.len() - 2]);
    assert!(
        peak > before_quiet,
        "counts fell: {peak}, then {before_quiet}"
    );
    assert_eq!(size(&memory[memory.len() - 1]), 1);
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_as_messages_leave_the_window() {
    agree_as_messages_leave_the_window();
}

fn agree_as_messages_leave_the_window() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "window");
    cfg.window.window = Duration::from_secs(600);
    // 400 messages 7 s apart: the window holds about 85 of them.
    let msgs: Vec<Vec<u8>> = stream().into_iter().take(400).collect();
    let memory = run(&mut Engine::new(&cfg), &cfg, &msgs, 7);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 7);
    assert_same(&memory, &shared);
    // Counts fell: no campaign holds more than the window's messages.
    let most = memory
        .iter()
        .filter_map(|s| s.campaign.as_ref().map(|c| c.1))
        .max()
        .unwrap();
    assert!(most <= 86, "largest campaign {most}");
    let (keys, bad) = keys_without_ttl(&server, "window", 2 * (600 + 300));
    assert_eq!(bad, 0, "{bad} of {keys} keys have no TTL");
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_redis_cluster_log_store_agrees_with_memory() {
    cluster_agrees_with_memory();
}

fn cluster_agrees_with_memory() {
    let cluster = RedisCluster::start();
    let mut cfg = redis_config(cluster.urls(), "cluster");
    cfg.store.redis.cluster = true;
    let msgs: Vec<Vec<u8>> = stream().into_iter().take(300).collect();
    let memory = run(&mut Engine::new(&cfg), &cfg, &msgs, 1);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 1);
    assert_same(&memory, &shared);
    // Every key sits in the slot of the hash tag, on one node.
    let per_node: Vec<(u16, usize)> = cluster
        .nodes
        .iter()
        .map(|n| {
            let keys = n.cli(&["--scan", "--pattern", "{cluster:v*"]).unwrap();
            (n.port, keys.lines().count())
        })
        .collect();
    let tagged = per_node.iter().filter(|(_, c)| *c > 0).count();
    assert_eq!(
        tagged, 1,
        "keys of one prefix must live on one node: (port, keys) {per_node:?}"
    );
}

/// A daemon that starts after others have filled the log reads it before
/// it judges: its outcome is the one a daemon that saw everything gives.
/// Far behind, it judges locally for a few messages while it reads.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_daemon_that_starts_late_reads_the_log_first() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "late");
    let msgs: Vec<Vec<u8>> = stream().into_iter().take(200).collect();
    let a = LogStore::open(&cfg).unwrap();
    let mut all = Engine::new(&cfg);
    let record = |store: &LogStore, all: &mut Engine, i: usize, raw: &[u8]| {
        let env = envelope(i);
        let an = analyze(raw, &env, &cfg);
        // Skipped and allowed messages reach no store.
        let obs = bulkwatch::engine::observe(&cfg, &an, &env).ok()?;
        let now = UnixSecs(REPLAY_EPOCH + i as u64);
        let want = Store::record(all, &obs, now).unwrap();
        Some((store.record_shared(&obs, now), want))
    };
    for (i, raw) in msgs.iter().enumerate().take(150) {
        if let Some((got, want)) = record(&a, &mut all, i, raw) {
            assert_eq!(got.unwrap(), want);
        }
    }
    let b = LogStore::open(&cfg).unwrap();
    let mut judged_by_b = 0;
    for (i, raw) in msgs.iter().enumerate().skip(150) {
        let store = if i % 2 == 0 { &a } else { &b };
        if let Some((got, want)) = record(store, &mut all, i, raw) {
            assert_eq!(got.unwrap(), want, "message {i}");
            judged_by_b += i % 2;
        }
    }
    assert!(judged_by_b > 10);

    // Far behind: more entries than one message may read (1,024 with the
    // append, then MAX_READS_PER_CALL more reads of 1,024).
    let far = 1024 * (1 + bulkwatch::store::stream::MAX_READS_PER_CALL) as u64 + 500;
    for i in 0..far {
        a.record_shared(&synthetic(i, &cfg), UnixSecs(REPLAY_EPOCH + 200 + i / 50))
            .unwrap();
    }
    // A new daemon: Redis answers, so reading the log is no outage and
    // the next message tries again at once.
    let c = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let now = UnixSecs(REPLAY_EPOCH + 200 + far / 50);
    let RedisResult::CatchingUp(why) = c.record(&synthetic(far, &cfg), now) else {
        panic!("still reading the log");
    };
    assert!(
        matches!(why, bulkwatch::store::CatchUp::Behind { .. }),
        "{why}"
    );
    // Its fallback engine (here with one message, as from a snapshot)
    // keeps what it has: a replica that is still reading holds only the
    // log's oldest part.
    let mut local = Engine::new(&cfg);
    Store::record(&mut local, &synthetic(far + 100, &cfg), now).unwrap();
    c.warm(&mut local, true);
    assert_eq!(local.stats().window_entries, 1);
    let RedisResult::Judged(second) = c.record(&synthetic(far + 1, &cfg), now) else {
        panic!("caught up");
    };
    // Once the replica gives verdicts, a fallback starts from it.
    let site = c.view(|e| e.stats().window_entries).unwrap();
    assert!(site > 5000, "{site}");
    // Not for a message Redis answered late (a copy holds the replica),
    // but in an outage.
    c.warm(&mut local, false);
    assert_eq!(local.stats().window_entries, 1);
    c.warm(&mut local, true);
    assert_eq!(local.stats().window_entries, site);
    let third = a.record_shared(&synthetic(far + 2, &cfg), now).unwrap();
    assert_eq!(second.seq + 1, third.seq, "both replicas count alike");
    let stats = &c.stats;
    assert_eq!(stats.outages.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(
        stats.fallbacks.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

/// Calls from several threads of one daemon: up to `pool_size` (3) round
/// trips are out at once, and the calls beyond share round trips (a call
/// whose message arrives while every round trip is out waits for the next
/// one, which carries every waiting message). Each entry is applied once,
/// in the log's order, so the replica equals one built afterwards from the
/// log alone; each call gets its own message's answer: every message has
/// its own recipient count, and a message's campaign grew by exactly that
/// count over the message recorded just before it. And round trips out at
/// the same time need no second read: each applies what its read holds
/// past the replica's last entry.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn concurrent_calls_apply_each_entry_once() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "threads");
    cfg.store.redis.pool_size = 3;
    let store = std::sync::Arc::new(LogStore::open(&cfg).unwrap());
    let (threads, each) = (8u32, 25u32);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (store, cfg) = (std::sync::Arc::clone(&store), cfg.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for n in 0..each {
                    let k = t * each + n;
                    let env = Envelope::default();
                    let an = analyze(&spam(k), &env, &cfg);
                    let mut obs = bulkwatch::engine::observe(&cfg, &an, &env).unwrap();
                    obs.parties = bulkwatch::engine::party::Parties::anonymous(k + 1);
                    let out = store
                        .record_shared(&obs, UnixSecs(REPLAY_EPOCH + u64::from(n)))
                        .unwrap();
                    got.push((u64::from(k + 1), out));
                }
                got
            })
        })
        .collect();
    let mut all: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let total = u64::from(threads * each);
    assert_eq!(store.round_trips().1, total, "every message sent once");
    assert_eq!(store.catch_up_reads(), 0);
    all.sort_by_key(|(_, out)| out.seq);
    let mut before = 0;
    for (i, (recipients, out)) in all.iter().enumerate() {
        let campaign = out.campaign.as_ref().unwrap();
        assert_eq!(campaign.messages as usize, i + 1);
        assert_eq!(
            campaign.recipients - before,
            *recipients,
            "the answer of the message with {recipients} recipients"
        );
        before = campaign.recipients;
    }
    let env = Envelope::default();
    let an = analyze(&spam(999), &env, &cfg);
    let obs = bulkwatch::engine::observe(&cfg, &an, &env).unwrap();
    let now = UnixSecs(REPLAY_EPOCH + 60);
    let out = store.record_shared(&obs, now).unwrap();
    assert_eq!(
        u64::from(out.campaign.as_ref().unwrap().messages),
        total + 1
    );
    let fresh = LogStore::open(&cfg).unwrap();
    let again = fresh.record_shared(&obs, now).unwrap();
    assert_eq!(u64::from(again.campaign.unwrap().messages), total + 2);
    assert_eq!(again.seq, out.seq + 1);
}

/// Several messages in one round trip get the answers that recording them
/// one by one gives, each its own, in order.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_batch_gets_each_message_its_own_answer() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "batch");
    let store = LogStore::open(&cfg).unwrap();
    let mut memory = Engine::new(&cfg);
    let mut obs = Vec::new();
    for (i, raw) in stream().iter().enumerate().take(120) {
        let env = envelope(i);
        let an = analyze(raw, &env, &cfg);
        if let Ok(o) = bulkwatch::engine::observe(&cfg, &an, &env) {
            obs.push((o, UnixSecs(REPLAY_EPOCH + i as u64)));
        }
    }
    let (mut sent, mut near) = (0, 0);
    for chunk in obs.chunks(9) {
        let batch: Vec<_> = chunk.iter().map(|(o, now)| (o, *now)).collect();
        let answers = store.record_batch(&batch).unwrap();
        assert_eq!(answers.len(), chunk.len());
        for ((o, now), answer) in chunk.iter().zip(answers) {
            let want = Store::record(&mut memory, o, *now).unwrap();
            let Logged::Outcome(got) = answer else {
                panic!("caught up: {answer:?}");
            };
            near += usize::from(want.distance.is_some());
            assert_eq!(got, want, "message {sent}");
            sent += 1;
        }
    }
    assert!(near > 20, "the stream holds campaigns ({near} matches)");
    assert_eq!(store.round_trips(), (obs.len().div_ceil(9) as u64, sent));
}

/// When the log loses entries (here: deleted, as whoever may write to
/// Redis can), a replica keeps what it applied and applies what the log
/// holds that it has not (issue 64: before, it started again from the
/// log, and one `DEL` every 19 messages kept any campaign below bulk). It
/// says so and counts it.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_replica_keeps_its_counts_when_the_log_is_deleted() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "gap");
    let (a, b) = (LogStore::open(&cfg).unwrap(), LogStore::open(&cfg).unwrap());
    let at = |i: u64| UnixSecs(REPLAY_EPOCH + i);
    for i in 0..20 {
        b.record_shared(&synthetic(i, &cfg), at(i)).unwrap();
    }
    server.cli(&["DEL", b.key()]).unwrap();
    a.record_shared(&synthetic(100, &cfg), at(100)).unwrap();
    a.record_shared(&synthetic(101, &cfg), at(101)).unwrap();
    // b had 20 entries the log no longer holds, and did not read 100, 101.
    let out = b.record_shared(&synthetic(0, &cfg), at(102)).unwrap();
    let mut whole = Engine::new(&cfg);
    for (i, t) in (0..20).map(|i| (i, i)).chain([(100, 100), (101, 101)]) {
        Store::record(&mut whole, &synthetic(i, &cfg), at(t)).unwrap();
    }
    let want = Store::record(&mut whole, &synthetic(0, &cfg), at(102)).unwrap();
    assert_eq!(
        out, want,
        "the replica is what it applied and what came after"
    );
    assert!(out.exact, "entry 0 is still counted");
    assert!(b.integrity.cuts.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

/// Entries that do not decode (another writer, a newer format) are
/// skipped alike by every replica, and the message still gets its outcome.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn entries_that_do_not_decode_are_skipped() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "junk");
    let a = LogStore::open(&cfg).unwrap();
    a.record_shared(&synthetic(1, &cfg), UnixSecs(REPLAY_EPOCH))
        .unwrap();
    server.cli(&["XADD", a.key(), "*", "o", "garbage"]).unwrap();
    server
        .cli(&["XADD", a.key(), "*", "x", "y", "z", "w"])
        .unwrap();
    let out = a
        .record_shared(&synthetic(1, &cfg), UnixSecs(REPLAY_EPOCH + 1))
        .unwrap();
    assert!(out.exact, "the good entries before and after still count");
    let b = LogStore::open(&cfg).unwrap();
    let out_b = b
        .record_shared(&synthetic(1, &cfg), UnixSecs(REPLAY_EPOCH + 2))
        .unwrap();
    assert_eq!(out_b.campaign.unwrap().messages, 3);
}

/// Whoever may write to Redis but has not the site's key cannot add what
/// every host applies: copies of a text in the log's own format, unsealed
/// or sealed under another key, count for nothing; the same copies sealed
/// under the site's key count (docs/admin/redis.md, "Who may write to it").
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn entries_without_the_sites_seal_are_not_applied() {
    use bulkwatch::store::stream::{encode, log_key, seal};
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "seal");
    let a = LogStore::open(&cfg).unwrap();
    let text = synthetic(1, &cfg);
    a.record_shared(&text, UnixSecs(REPLAY_EPOCH)).unwrap();
    let mut raw = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut other = cfg.clone();
    other.fingerprint.hash_key = (1, 2);
    let forge = |raw: &mut redis::Connection, bytes: Vec<u8>| {
        let _: String = redis::cmd("XADD")
            .arg(a.key())
            .arg("*")
            .arg("o")
            .arg(bytes)
            .query(raw)
            .unwrap();
    };
    for i in 0..5 {
        let entry = encode(&text, UnixSecs(REPLAY_EPOCH + 1 + i));
        forge(&mut raw, entry.clone());
        forge(&mut raw, seal(&log_key(&other), &entry));
    }
    let out = a.record_shared(&text, UnixSecs(REPLAY_EPOCH + 10)).unwrap();
    assert_eq!(out.campaign.unwrap().messages, 2, "forged copies skipped");
    let b = LogStore::open(&cfg).unwrap();
    let out = b.record_shared(&text, UnixSecs(REPLAY_EPOCH + 11)).unwrap();
    assert_eq!(out.campaign.unwrap().messages, 3, "and by every host");
    forge(
        &mut raw,
        seal(&log_key(&cfg), &encode(&text, UnixSecs(REPLAY_EPOCH + 12))),
    );
    let out = a.record_shared(&text, UnixSecs(REPLAY_EPOCH + 13)).unwrap();
    assert_eq!(out.campaign.unwrap().messages, 5, "sealed with the key");
}

/// An alert claim is its tag under the site's key: a claim key another
/// writer left does not silence the alert (each host that finds it
/// alerts), while a host's real claim does for the others.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_forged_alert_claim_does_not_silence_the_alert() {
    let server = RedisServer::start();
    let (cfg, a, b) = two_hosts(server.url(), "claims");
    let base = bulkwatch::store::redis::key_base(&cfg.store.redis);
    let ttl = Duration::from_secs(60);
    for forged in ["1", "00ff"] {
        let id = CampaignId(if forged == "1" { 41 } else { 42 });
        server
            .cli(&["SET", &format!("{base}:alerted:{id}"), forged])
            .unwrap();
        assert!(a.claim_alert(id, false, ttl).unwrap(), "{forged}");
        assert!(b.claim_alert(id, false, ttl).unwrap(), "{forged}");
    }
    let id = CampaignId(43);
    assert!(a.claim_alert(id, false, ttl).unwrap());
    assert!(!b.claim_alert(id, false, ttl).unwrap());
}

/// An entry dated far ahead of Redis's clock (a host with a wrong clock)
/// is skipped: otherwise every replica's time would jump to it, and
/// nothing would leave the window any more.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn an_entry_from_a_clock_far_ahead_does_not_stop_time() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "clock");
    cfg.window.window = Duration::from_secs(600);
    let (a, b) = (LogStore::open(&cfg).unwrap(), LogStore::open(&cfg).unwrap());
    let year_2100 = UnixSecs(4_102_444_800);
    let err = a.record_shared(&synthetic(1, &cfg), year_2100).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::CatchingUp(bulkwatch::store::CatchUp::ClockAhead { .. })
        ),
        "{err}"
    );
    let t0 = REPLAY_EPOCH;
    assert!(
        !b.record_shared(&synthetic(2, &cfg), UnixSecs(t0))
            .unwrap()
            .exact
    );
    b.record_shared(&synthetic(3, &cfg), UnixSecs(t0 + 1000))
        .unwrap();
    // Entry 2 left the window 1,000 s later: not an exact repeat.
    let again = b
        .record_shared(&synthetic(2, &cfg), UnixSecs(t0 + 1001))
        .unwrap();
    assert!(!again.exact, "time moved on");
    assert_eq!(again.campaign.unwrap().messages, 1);
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn two_daemons_sharing_a_redis_log_see_one_campaign() {
    two_daemons_see_one_campaign();
}

fn two_daemons_see_one_campaign() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "pair");
    cfg.thresholds.bulk_threshold = 10.0;
    cfg.thresholds.suspect_threshold = 20.0;
    // Each daemon: its own local engine plus the shared store.
    let a = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let b = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let mut local = [Engine::new(&cfg), Engine::new(&cfg)];
    let mut last = Vec::new();
    for n in 0..10u32 {
        let i = (n % 2) as usize;
        let env = Envelope {
            rcpts: vec![format!("r{n}@example.net")],
            ..Envelope::default()
        };
        let raw = spam(n);
        let an = analyze(&raw, &env, &cfg);
        let now = UnixSecs(REPLAY_EPOCH + u64::from(n));
        let lv = local[i].decide(&an, &env, now);
        let obs = bulkwatch::engine::observe(&cfg, &an, &env).unwrap();
        let store = if i == 0 { &a } else { &b };
        let RedisResult::Judged(out) = store.record(&obs, now) else {
            panic!("redis failed");
        };
        let v = bulkwatch::engine::verdict_of(&cfg, &obs, out);
        // Alone, neither daemon gets past half the campaign.
        assert_ne!(lv.level, Level::Bulk);
        assert!(lv.campaign.unwrap().recipients <= 5);
        let c = v.campaign.clone().unwrap();
        assert_eq!(c.recipients, u64::from(n) + 1, "shared size is the sum");
        last.push((v.level, c.id, v.newly_bulk));
    }
    let ids: std::collections::HashSet<_> = last.iter().map(|x| x.1).collect();
    assert_eq!(ids.len(), 1, "one campaign id for both daemons");
    assert_eq!(last[9].0, Level::Bulk);
    assert!(last[..9].iter().all(|x| x.0 != Level::Bulk));
    assert_eq!(last.iter().filter(|x| x.2).count(), 1, "one alert in all");
}

/// A store that takes operators' corrections.
enum Corrected {
    Memory(Box<Engine>),
    Log(Box<LogStore>),
}

impl Corrected {
    fn open(cfg: &Config, memory: bool) -> Corrected {
        if memory {
            Corrected::Memory(Box::new(Engine::new(cfg)))
        } else {
            Corrected::Log(Box::new(LogStore::open(cfg).unwrap()))
        }
    }

    fn store(&mut self) -> &mut dyn Store {
        match self {
            Corrected::Memory(e) => e.as_mut(),
            Corrected::Log(l) => l.as_mut(),
        }
    }

    fn correct(&mut self, c: Correction, now: UnixSecs) -> Option<CampaignId> {
        match self {
            Corrected::Memory(e) => e.correct(c),
            Corrected::Log(l) => l.correct(c, now).unwrap(),
        }
    }
}

/// The fixture stream with corrections on the way: a campaign allowed for
/// 300 s at message 210, one forgotten at 410, one allowed for good at 610
/// (each the campaign of the last bulk message). Returns what was seen and
/// what each correction answered.
fn run_corrected(
    store: &mut Corrected,
    cfg: &Config,
    msgs: &[Vec<u8>],
) -> (Vec<Seen>, Vec<Option<String>>) {
    let mut seen_all: Vec<Seen> = Vec::new();
    let mut answers = Vec::new();
    let mut last_campaign = None;
    for (i, raw) in msgs.iter().enumerate() {
        let now = UnixSecs(REPLAY_EPOCH + i as u64);
        let c = last_campaign.map(|id| match i {
            210 => Some(Correction::Allow {
                id,
                until: now.0 + 300,
            }),
            410 => Some(Correction::Forget { id }),
            610 => Some(Correction::Allow {
                id,
                until: bulkwatch::engine::campaign::WHILE_LIVE,
            }),
            _ => None,
        });
        if let Some(Some(c)) = c {
            answers.push(store.correct(c, now).map(|id| id.to_string()));
        }
        let env = envelope(i);
        let a = analyze(raw, &env, cfg);
        let v = decide_with(store.store(), cfg, &a, &env, now).unwrap();
        if v.level == Level::Bulk {
            last_campaign = v.campaign.as_ref().map(|c| c.id);
        }
        seen_all.push(seen(&v));
    }
    (seen_all, answers)
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_on_corrections() {
    agree_on_corrections();
}

fn agree_on_corrections() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "corrections");
    let msgs = stream();
    let (memory, m_answers) = run_corrected(&mut Corrected::open(&cfg, true), &cfg, &msgs);
    let (shared, s_answers) = run_corrected(&mut Corrected::open(&cfg, false), &cfg, &msgs);
    assert_eq!(m_answers, s_answers);
    assert!(m_answers.iter().all(Option::is_some), "{m_answers:?}");
    assert_same(&memory, &shared);
    // The corrections did something: allowed copies, first while the
    // allowance of 300 s runs, then for good.
    let allowed = |r: std::ops::Range<usize>| {
        memory[r]
            .iter()
            .filter(|s| matches!(s.level, Level::Allowed(_)))
            .count()
    };
    assert!(
        allowed(0..210) == 0 && allowed(210..510) > 0 && allowed(510..610) == 0,
        "{}",
        allowed(210..510)
    );
    assert!(allowed(610..memory.len()) > 0);
    // The forgotten campaign was alive: copies of its text came after.
    let forgotten = m_answers[1].clone().unwrap();
    assert!(memory[..410]
        .iter()
        .any(|s| s.campaign.as_ref().is_some_and(|c| c.0 == forgotten)));
    assert!(memory[410..]
        .iter()
        .all(|s| s.campaign.as_ref().is_none_or(|c| c.0 != forgotten)));
}

/// Corrections and the campaign list are the site's: a campaign fed
/// through one daemon is listed with its counts by the other, idle one;
/// allowed there, its next copy through the first is allowed; forgotten
/// through the first, its next copy through the second starts from zero.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
/// Two hosts on one Redis at `url` under `prefix`: bulk at 3 deliveries,
/// suspect at 2.
fn two_hosts(url: String, prefix: &str) -> (Config, RedisLayer, RedisLayer) {
    let mut cfg = redis_config(vec![url], prefix);
    cfg.thresholds.bulk_threshold = 3.0;
    cfg.thresholds.suspect_threshold = 2.0;
    let a = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let b = RedisLayer::from_config(&cfg).unwrap().unwrap();
    (cfg, a, b)
}

#[test]
fn two_daemons_share_corrections_and_the_campaign_list() {
    {
        let server = RedisServer::start();
        let (cfg, a, b) = two_hosts(server.url(), "site");
        let judge = |layer: &RedisLayer, n: u32| judged_on(layer, &cfg, n);
        let mut last = None;
        for n in 0..4 {
            last = Some(judge(&a, n));
        }
        let v = last.unwrap();
        assert_eq!(v.level, Level::Bulk);
        let id = v.campaign.unwrap().id;
        let now = UnixSecs(REPLAY_EPOCH + 10);
        let listed = |layer: &RedisLayer| -> Vec<(CampaignId, u32)> {
            layer.site().unwrap();
            layer
                .view(|e| e.campaigns().map(|c| (c.id, c.messages)).collect())
                .expect("the replica read the log")
        };
        assert_eq!(listed(&b), [(id, 4)], "the idle daemon lists the site's");
        // A message the other host judged just after that read is listed
        // at once: a list is never answered from a read older than itself.
        judge(&a, 100);
        assert_eq!(listed(&b), [(id, 5)], "the message just judged on a");

        let until = bulkwatch::engine::campaign::WHILE_LIVE;
        assert_eq!(
            b.correct(Correction::Allow { id, until }, now).unwrap(),
            Some(id)
        );
        let v = judge(&a, 4);
        assert_eq!(v.level, Level::Allowed(AllowReason::Campaign));
        assert_eq!(
            b.correct(
                Correction::Allow {
                    id: CampaignId(7),
                    until
                },
                now
            )
            .unwrap(),
            None,
            "no such campaign"
        );

        assert_eq!(a.correct(Correction::Forget { id }, now).unwrap(), Some(id));
        let v = judge(&b, 5);
        let c = v.campaign.unwrap();
        assert_ne!(c.id, id);
        assert_eq!((c.messages, v.level), (1, Level::Clean), "from zero");
        assert!(listed(&a).iter().all(|(i, _)| *i != id), "not listed");
        assert_eq!(a.correct(Correction::Forget { id }, now).unwrap(), None);
    }
}

/// The least-privilege user docs/admin/redis.md tells sites to create
/// (its `ACL SETUSER bulkwatch` line, read from the page) is enough for
/// everything a daemon does: two hosts share a campaign, the idle one
/// lists it, a correction applies, an alert is claimed once, a domain
/// allowance is set and read. A user without those commands is refused,
/// so the ACL is enforced, not ignored.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_least_privilege_acl_user_is_enough() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/admin/redis.md"),
    )
    .unwrap();
    let line = doc
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ACL SETUSER bulkwatch "))
        .expect("redis.md gives the ACL line");
    let server = RedisServer::start();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        server.cli(&words).as_deref().map(str::trim),
        Some("OK"),
        "{line}"
    );
    let url = format!("redis://bulkwatch:CHANGE-ME@127.0.0.1:{}/0", server.port);
    // The documented prefix, so that the line's key pattern applies.
    let (cfg, a, b) = two_hosts(url.clone(), "bulkwatch");
    let judge = |layer: &RedisLayer, n: u32| judged_on(layer, &cfg, n);
    let mut last = None;
    for n in 0..4 {
        last = Some(judge(if n % 2 == 0 { &a } else { &b }, n));
    }
    let v = last.unwrap();
    assert_eq!(v.level, Level::Bulk);
    let id = v.campaign.unwrap().id;
    b.site().unwrap();
    let listed: Vec<(CampaignId, u32)> = b
        .view(|e| e.campaigns().map(|c| (c.id, c.messages)).collect())
        .unwrap();
    assert_eq!(listed, [(id, 4)]);
    let now = UnixSecs(REPLAY_EPOCH + 10);
    let until = bulkwatch::engine::campaign::WHILE_LIVE;
    assert_eq!(
        b.correct(Correction::Allow { id, until }, now).unwrap(),
        Some(id)
    );
    assert_eq!(judge(&a, 4).level, Level::Allowed(AllowReason::Campaign));
    assert!(a.claim_alert(id, false, Duration::from_secs(60)).unwrap());
    assert!(!b.claim_alert(id, false, Duration::from_secs(60)).unwrap());
    a.set_domain_allowance("news.example", Some(u64::MAX))
        .unwrap();
    assert_eq!(
        b.domain_allowances().unwrap(),
        [("news.example".to_owned(), u64::MAX)]
    );
    // A user without the commands is refused: the ACL is in force.
    let bare = "ACL SETUSER bare on >x resetkeys ~* -@all +ping";
    let words: Vec<&str> = bare.split_whitespace().collect();
    assert_eq!(server.cli(&words).as_deref().map(str::trim), Some("OK"));
    let bare = redis_config(
        vec![format!("redis://bare:x@127.0.0.1:{}/0", server.port)],
        "bulkwatch",
    );
    let c = RedisLayer::from_config(&bare).unwrap().unwrap();
    assert!(c.set_domain_allowance("other.example", None).is_err());
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_redis_log_outage_costs_no_verdict_and_sharing_resumes() {
    an_outage_costs_no_verdict();
}

fn an_outage_costs_no_verdict() {
    let mut server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "outage");
    cfg.store.redis.timeout = Duration::from_millis(200);
    cfg.store.redis.retry_interval = Duration::from_secs(1);
    let mut r = bulkwatch::replay::Replayer::new(&cfg, Default::default());
    let msg = |n: u32| spam(n);
    for n in 0..5 {
        r.feed("a", n as usize, &msg(n));
    }
    assert_eq!(r.summary.redis_ok, 5);
    server.kill();
    for n in 5..15 {
        let v = r.feed("a", n as usize, &msg(n));
        assert!(
            !matches!(v.level, Level::Skipped(_)),
            "every message gets a verdict"
        );
        assert!(v.campaign.is_some());
    }
    assert_eq!(r.summary.redis_ok, 5);
    assert_eq!(r.summary.redis_fallbacks, 10);
    {
        let stats = &r.redis().unwrap().stats;
        assert_eq!(stats.outages.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(!stats.up.load(std::sync::atomic::Ordering::Relaxed));
    }
    server.restart();
    // Sharing resumes by itself once the retry interval has passed.
    let mut n = 15;
    common::redis::wait_for(
        || {
            n += 1;
            r.feed("a", n as usize, &msg(n));
            r.summary.redis_ok > 5
        },
        "sharing to resume",
    );
    let stats = &r.redis().unwrap().stats;
    assert!(stats.up.load(std::sync::atomic::Ordering::Relaxed));
}

/// A Redis that comes back (a restart, a Cluster replica promoted) is
/// used by the first message after the retry interval, however many
/// connections the pool held to the server that went away: they are
/// dropped at the first failure. Each used to fail one more message and
/// start another interval of local verdicts (8 pooled: 40 seconds after a
/// failover that took 4).
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn after_an_outage_the_first_retry_meets_a_new_connection() {
    let mut server = RedisServer::start();
    let (cfg, shared) = retrying_layer(&server, "stalepool");
    // Messages from several threads at once, until the pool keeps several
    // connections open.
    let mut i = 0u64;
    common::redis::wait_for(
        || {
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    let (shared, cfg) = (std::sync::Arc::clone(&shared), cfg.clone());
                    std::thread::spawn(move || {
                        for k in 0..20 {
                            let obs = synthetic(i * 1000 + t * 20 + k, &cfg);
                            shared.record(&obs, UnixSecs(REPLAY_EPOCH));
                        }
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            i += 1;
            shared.pool().idle() >= 3
        },
        "the pool to hold 3 connections",
    );
    server.kill();
    server.restart();
    let now = UnixSecs(REPLAY_EPOCH + 1);
    assert!(matches!(
        shared.record(&synthetic(1 << 40, &cfg), now),
        RedisResult::Failed(_)
    ));
    assert_eq!(shared.pool().idle(), 0, "the stale connections are dropped");
    // Redis answers the next message (an empty Redis: the replica may
    // first read the log again, a verdict from Redis all the same).
    let next = shared.record(&synthetic(1 << 41, &cfg), now);
    assert!(
        matches!(next, RedisResult::Judged(_) | RedisResult::CatchingUp(_)),
        "{next:?}"
    );
}

/// With Redis a daemon does not record shared messages in its
/// fallback engine; the first message that falls back copies the replica
/// into it. So an outage starts from what the whole site saw: daemon B,
/// which saw 4 of a campaign's 10 messages (A saw 6), judges the next copy
/// during the outage as the 11th of the same campaign, not the 5th.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_log_outage_starts_from_what_the_site_saw() {
    let mut server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "sitewide");
    cfg.store.redis.timeout = Duration::from_millis(200);
    cfg.store.redis.retry_interval = Duration::from_secs(60);
    let mut a = bulkwatch::replay::Replayer::new(&cfg, Default::default());
    let mut b = bulkwatch::replay::Replayer::new(&cfg, Default::default());
    let mut shared_id = None;
    for n in 0..10u32 {
        let r = if n < 6 { &mut a } else { &mut b };
        let v = r.feed("x", n as usize, &spam(n));
        let c = v.campaign.unwrap();
        assert_eq!(c.recipients, u64::from(n) + 1);
        shared_id = Some(c.id);
    }
    assert_eq!((a.summary.redis_ok, b.summary.redis_ok), (6, 4));
    // Nothing recorded locally while the replica answered; the daemon's
    // view is the replica's.
    assert_eq!(b.engine().stats().window_entries, 0);
    let shared = b.redis().unwrap();
    assert_eq!(shared.view(|e| e.stats().window_entries), Some(10));
    server.kill();
    let v = b.feed("x", 10, &spam(10));
    assert_eq!(b.summary.redis_fallbacks, 1);
    let c = v.campaign.unwrap();
    assert_eq!(c.recipients, 11, "the site's 10 and this one");
    assert_eq!(Some(c.id), shared_id);
    // The fallback engine is the view now, and it goes on counting.
    assert_eq!(b.redis().unwrap().view(|_| ()), None);
    let v = b.feed("x", 11, &spam(11));
    assert_eq!(v.campaign.unwrap().recipients, 12);
    assert_eq!(b.engine().stats().window_entries, 12);
}

/// A copy of the replica made for an outage that ended before any message
/// fell back again is dropped when Redis answers: it would hold a third
/// engine until the next outage, and the fallback engine must not take an
/// old copy then. The next outage makes a copy of its own at once.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_copy_the_outage_did_not_need_is_dropped() {
    let mut server = RedisServer::start();
    let (cfg, shared) = retrying_layer(&server, "dropcopy");
    let now = UnixSecs(REPLAY_EPOCH);
    assert!(matches!(
        shared.record(&synthetic(1, &cfg), now),
        RedisResult::Judged(_)
    ));
    // An outage: a call fails, and the fallback starts a copy.
    server.kill();
    assert!(matches!(
        shared.record(&synthetic(2, &cfg), now),
        RedisResult::Failed(_)
    ));
    let mut local = Engine::new(&cfg);
    assert!(shared.warm_in_background(&mut local, true).is_none());
    common::redis::wait_for(|| shared.copy_ready(), "the copy");
    // Redis is back (an empty one) before any message fell back again.
    server.restart();
    assert!(matches!(
        shared.record(&synthetic(3, &cfg), now),
        RedisResult::Judged(_)
    ));
    assert!(!shared.copy_ready());
    assert!(shared.warm_in_background(&mut local, false).is_none());
    assert_eq!(local.stats().window_entries, 0);
    // The next outage copies at once: the dropped copy does not count
    // against the one-a-minute bound.
    server.kill();
    assert!(matches!(
        shared.record(&synthetic(4, &cfg), now),
        RedisResult::Failed(_)
    ));
    assert!(shared.warm_in_background(&mut local, true).is_none());
    common::redis::wait_for(|| shared.copy_ready(), "the second copy");
    assert!(shared.warm_in_background(&mut local, true).is_some());
    // The replica kept message 1 across the empty Redis (it never starts
    // over), and message 3 came after.
    assert_eq!(local.stats().window_entries, 2);
}

/// A copy of the replica holds it, and with it every round trip, for as
/// long as it takes: the thread makes none when Redis answers by the time
/// it starts (here Redis never stopped answering).
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn no_copy_is_made_once_redis_answers_again() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "nocopy");
    let shared = std::sync::Arc::new(RedisLayer::from_config(&cfg).unwrap().unwrap());
    assert!(matches!(
        shared.record(&synthetic(1, &cfg), UnixSecs(REPLAY_EPOCH)),
        RedisResult::Judged(_)
    ));
    let mut local = Engine::new(&cfg);
    // A caller that took Redis for down starts a copy...
    assert!(shared.warm_in_background(&mut local, true).is_none());
    common::redis::wait_for(|| shared.copy_ready(), "the copy thread");
    // ...which found Redis up and made nothing to take over.
    assert!(shared.warm_in_background(&mut local, true).is_none());
    assert_eq!(local.stats().window_entries, 0);
    assert_eq!(
        shared
            .stats
            .fallback_copies
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn replay_uses_a_private_store_unless_told_to_use_the_sites() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("redis.toml");
    std::fs::write(
        &conf,
        format!(
            "[thresholds]\nbulk_threshold = 5.0\nsuspect_threshold = 3.0\n\n\
             [store]\nbackend = \"redis\"\n\n[store.redis]\nurls = [\"{}\"]\nkey_prefix = \"cli\"\n",
            server.url()
        ),
    )
    .unwrap();
    let mbox = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mbox/campaigns.mbox");
    let keys = || server.cli(&["--scan", "--pattern", "{cli:*"]).unwrap();
    // Without --store site: a private memory store, and not one key in the
    // site's Redis (a replay once grew a live campaign there).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["replay", "--format", "jsonl", "--config"])
        .arg(&conf)
        .arg(&mbox)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("store: a private memory store"), "{err}");
    assert_eq!(keys().trim(), "", "the replay wrote into the site's Redis");
    let replay = |conf: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
            .args(["replay", "--store", "site", "--format", "jsonl", "--config"])
            .arg(conf)
            .arg(&mbox)
            .output()
            .unwrap();
        assert!(out.status.code() == Some(1), "bulk found: exit 1");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (first, err) = replay(&conf);
    assert!(err.contains("1030 messages judged by Redis"), "{err}");
    // The same replay again finds the state it warmed: everything is now
    // an exact repeat of a campaign already past the threshold.
    let (second, _) = replay(&conf);
    let levels = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["level"].to_string())
            .collect()
    };
    assert_ne!(levels(&first), levels(&second));
    assert!(second.lines().all(|l| l.contains("\"exact\":true")));
}

/// Two `bulkwatch serve` processes, as on two MX hosts, sharing one Redis:
/// a campaign split half and half between them is flagged once the total
/// reaches the threshold, by whichever daemon sees that message; both list
/// it with the site's counts, and `bulkwatch campaigns allow` or `forget`
/// on one host applies to the other.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_share_one_campaign() {
    use common::daemon::{header, Daemon};
    use common::{open_unix, transact, NAMES};
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut daemons = Vec::new();
    let mut sockets = Vec::new();
    // mx1's file names the retired script layout (a file written for an
    // earlier version): it runs on the log all the same, and shares.
    for (host, layout) in [("mx1", "script"), ("mx2", "log")] {
        let socket = dir.path().join(format!("{host}.sock"));
        let config = dir.path().join(format!("{host}.toml"));
        std::fs::write(
            &config,
            format!(
                "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\n\n\
                 [metrics]\nlisten = \"\"\n\n[thresholds]\nbulk_threshold = 6.0\nsuspect_threshold = 6.0\n\n\
                 [store]\nbackend = \"redis\"\n\n[store.redis]\nurls = [\"{}\"]\nkey_prefix = \"mx\"\n\
                 layout = \"{layout}\"\n",
                socket.display(),
                dir.path().join(host).display(),
                server.url()
            ),
        )
        .unwrap();
        daemons.push(Daemon::start(
            &config,
            &dir.path().join(format!("{host}.log")),
            &socket,
        ));
        sockets.push(socket);
    }
    let mut headers = Vec::new();
    for i in 0..6 {
        let socket = &sockets[i % 2];
        let mut conn = open_unix(socket).await;
        let (a, _) = transact(&mut conn, &common::spam(NAMES[i], 7000 + i as u32)).await;
        conn.close().await.unwrap();
        headers.push(header(&a));
    }
    // Three messages each: neither alone is at 6, together they are.
    assert!(headers[..5].iter().all(Option::is_none), "{headers:?}");
    let h = headers[5].clone().unwrap_or_default();
    assert!(h.starts_with("bulk;") && h.contains("size=6"), "{h}");

    // Each daemon lists the site's campaign with the site's counts.
    let campaigns = |host: &str, args: &[&str]| {
        let (ok, out, err) =
            common::daemon::campaigns(&dir.path().join(format!("{host}.toml")), args);
        assert!(ok, "{out}{err}");
        out
    };
    let mut ids = Vec::new();
    for host in ["mx1", "mx2"] {
        let v: serde_json::Value =
            serde_json::from_str(&campaigns(host, &["list", "--json"])).unwrap();
        assert_eq!(v["campaigns"][0]["messages"], 6, "{host}: {v}");
        ids.push(v["campaigns"][0]["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids[0], ids[1]);
    let id = &ids[0];
    // Allowed through mx2: the next copy through mx1 is allowed.
    campaigns("mx2", &["allow", id]);
    let mut conn = open_unix(&sockets[0]).await;
    let (a, _) = transact(&mut conn, &common::spam(NAMES[0], 7006)).await;
    conn.close().await.unwrap();
    assert_eq!(header(&a), None);
    let log = daemons[0].log_text();
    assert!(log.contains("reason=\"campaign\""), "{log}");
    // ... and said at start that the layout its file names is retired.
    assert!(
        log.contains("store.redis.layout") && log.contains("is retired"),
        "{log}"
    );
    assert!(!daemons[1].log_text().contains("is retired"));
    // Forgotten through mx1: the next copy through mx2 starts from zero.
    campaigns("mx1", &["forget", id]);
    let mut conn = open_unix(&sockets[1]).await;
    transact(&mut conn, &common::spam(NAMES[1], 7007)).await;
    conn.close().await.unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&campaigns("mx2", &["list", "--json"])).unwrap();
    let listed = v["campaigns"].as_array().unwrap();
    assert!(listed.iter().all(|c| c["id"] != id.as_str()), "{v}");
    for d in daemons {
        // The test server runs with Redis's default, eager expiry: each
        // daemon says once that it should be lazy.
        let log = d.log_text();
        assert_eq!(
            log.matches("lazyfree-lazy-expire is off").count(),
            1,
            "{log}"
        );
        assert!(d.stop().success());
    }
}

/// The store reads whether Redis frees expired keys in the background: the
/// log is one large key.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn the_store_reads_the_servers_expiry_setting() {
    let server = RedisServer::start();
    let store = Pool::open(&redis_config(vec![server.url()], "cfg")).unwrap();
    server
        .cli(&["CONFIG", "SET", "lazyfree-lazy-expire", "no"])
        .unwrap();
    assert_eq!(store.lazy_expire().unwrap(), Some(false));
    server
        .cli(&["CONFIG", "SET", "lazyfree-lazy-expire", "yes"])
        .unwrap();
    assert_eq!(store.lazy_expire().unwrap(), Some(true));
    // A Redis that refuses CONFIG does not say.
    server
        .cli(&["ACL", "SETUSER", "default", "-config"])
        .unwrap();
    let fresh = Pool::open(&redis_config(vec![server.url()], "cfg")).unwrap();
    assert_eq!(fresh.lazy_expire().unwrap(), None);
}

/// A milter whose Redis is unreachable judges every message from its local
/// window, accepts it, and says so in its metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_milter_with_redis_down_serves_from_its_local_window() {
    use bulkwatch::milter::State;
    // A port nothing listens on: connections are refused at once.
    let port = common::redis::free_port(false);
    let mut cfg = redis_config(vec![format!("redis://127.0.0.1:{port}/0")], "down");
    cfg.store.redis.timeout = Duration::from_millis(100);
    let shared = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let state = State::new(Engine::new(&cfg)).with_redis(shared);
    let m = common::start_state(state).await;
    let mut last = None;
    for i in 0..5 {
        let (a, st) = common::send(m.addr, &common::spam(common::NAMES[i], 100 + i as u32)).await;
        assert_eq!(st, indymilter_test::Status::Accept);
        last = common::daemon::header(&a);
    }
    // The local window alone counts the campaign to the bulk threshold.
    let h = last.unwrap_or_default();
    assert!(h.starts_with("bulk;") && h.contains("size=5"), "{h}");
    let text = bulkwatch::milter::metrics::render(&m.state, 0);
    assert!(text.contains("bulkwatch_redis_up 0"), "{text}");
    assert!(text.contains("bulkwatch_redis_fallbacks_total 5"), "{text}");
    assert!(text.contains("bulkwatch_redis_outages_total 1"), "{text}");
    m.stop().await;
}

/// A milter on the log layout says in its metrics how many round trips
/// carried its messages (one each here: they come one at a time). Its
/// campaign list and window metrics come from the replica, which judged
/// the messages; the fallback engine recorded none of them. The periodic
/// snapshot holds that engine (encoding the replica would hold every
/// message's round trip); the one at shutdown holds the replica.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_milter_on_the_log_layout_counts_its_round_trips() {
    use bulkwatch::milter::State;
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "trips");
    let shared = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let state = State::new(Engine::new(&cfg)).with_redis(shared);
    let m = common::start_state(state).await;
    for i in 0..5 {
        let (_, st) = common::send(m.addr, &common::spam(common::NAMES[i], 300 + i as u32)).await;
        assert_eq!(st, indymilter_test::Status::Accept);
    }
    let text = bulkwatch::milter::metrics::render(&m.state, 0);
    assert!(text.contains("bulkwatch_redis_messages_total 5"), "{text}");
    assert!(
        text.contains("bulkwatch_redis_log_round_trips_total 5"),
        "{text}"
    );
    assert!(
        text.contains("bulkwatch_redis_log_appends_total 5"),
        "{text}"
    );
    assert!(text.contains("bulkwatch_window_entries 5"), "{text}");
    assert_eq!(m.state.engine().stats().window_entries, 0);
    let (list, view) = bulkwatch::milter::metrics::campaigns_json(&m.state);
    assert!(list.contains("\"messages\":5"), "{list}");
    assert_eq!(view, bulkwatch::milter::metrics::View::Site);
    let (snap, _) = bulkwatch::store::snapshot::decode(&m.state.snapshot_bytes(), &cfg).unwrap();
    assert_eq!(snap.stats().window_entries, 0);
    // At shutdown nothing waits for the replica: that snapshot holds it.
    let (last, _) =
        bulkwatch::store::snapshot::decode(&m.state.view_snapshot_bytes(), &cfg).unwrap();
    assert_eq!(last.stats().window_entries, 5);
    m.stop().await;
}

/// The milter on the log layout, when Redis dies: the fallback engine
/// recorded nothing while Redis answered, and a copy of the replica made
/// on another thread takes over from it, with the messages it judged
/// meanwhile. So the campaign goes on counting from what the replica saw:
/// a copy that never came would count 1, 2, 3, and one without those
/// messages would miss them.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_milter_on_the_log_layout_falls_back_to_a_copy_of_its_replica() {
    use bulkwatch::milter::State;
    let mut server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "copy");
    cfg.store.redis.timeout = Duration::from_millis(200);
    cfg.store.redis.retry_interval = Duration::from_secs(60);
    let shared = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let state = State::new(Engine::new(&cfg)).with_redis(shared);
    let m = common::start_state(state).await;
    let mail = |i: usize| common::spam(&common::name(i), 700 + i as u32);
    // The campaign size in the verdict header ("...size=N...").
    let size = |a: &indymilter_test::EomActions| -> Option<u64> {
        let h = common::daemon::header(a)?;
        let rest = &h[h.find("size=")? + 5..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    for i in 0..5u64 {
        let (a, _) = common::send(m.addr, &mail(i as usize)).await;
        // (Tagged from the suspect threshold, 3, on.)
        if i >= 2 {
            assert_eq!(size(&a), Some(i + 1));
        }
    }
    assert_eq!(m.state.engine().stats().window_entries, 0);
    server.kill();
    let mut counted = false;
    for sent in 1..=200u64 {
        let (a, st) = common::send(m.addr, &mail(4 + sent as usize)).await;
        assert_eq!(st, indymilter_test::Status::Accept);
        if size(&a) == Some(5 + sent) {
            counted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(counted, "the fallback never counted the replica's messages");
    let text = bulkwatch::milter::metrics::render(&m.state, 0);
    assert!(
        text.contains("bulkwatch_redis_fallback_copies_total 1"),
        "{text}"
    );
    m.stop().await;
}

/// A text that returns after its campaign left the window starts the
/// campaign again under the same id (the id comes from the text): the old
/// hash is deleted and written anew, every field of it.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_campaign_that_left_the_window_starts_again_from_nothing() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "again");
    cfg.window.window = Duration::from_secs(600);
    let raw = spam(2);
    let env = Envelope::default();
    let obs = bulkwatch::engine::observe(&cfg, &analyze(&raw, &env, &cfg), &env).unwrap();
    let mut memory = Engine::new(&cfg);
    let mut redis = LogStore::open(&cfg).unwrap();
    let mut last = None;
    for (i, at) in [0u64, 601, 602, 603].into_iter().enumerate() {
        let now = UnixSecs(REPLAY_EPOCH + at);
        let m = memory.record(&obs, now).unwrap();
        let r = redis.record(&obs, now).unwrap();
        assert_eq!(m, r, "message {i}: memory and redis stores disagree");
        last = Some(m);
    }
    let c = last.unwrap().campaign.unwrap();
    assert_eq!((c.messages, c.recipients, c.sender_domains), (3, 3, 1));
}

/// More than MAX_MATCHES (256) matches: both stores keep the closest, by
/// sketch difference first. Campaign A's copies differ from the last
/// message in block 0 (200 of them) or block 3 (200), so no bucket holds
/// more than the newest 256 items a lookup reads but together they are
/// 400 matches; A's halves are one campaign through their MinHash bands.
/// Campaign B (50 copies, 4 bits from A: apart, other sketch and bands)
/// matches by simhash only and ranks after A, so the message joins A and
/// does not merge B.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn both_stores_keep_the_same_closest_matches_of_many() {
    let server = RedisServer::start();
    let mut cfg = redis_config(vec![server.url()], "many");
    cfg.window.max_distance = 3;
    let raw = spam(1);
    let env = Envelope::default();
    let base = bulkwatch::engine::observe(&cfg, &analyze(&raw, &env, &cfg), &env).unwrap();
    let obs = |i: u32, simhash: u64, sketch: u64, band: u64| {
        let mut o = base.clone();
        o.exact = [0; 32];
        o.exact[..4].copy_from_slice(&i.to_be_bytes());
        o.simhash = simhash;
        o.sketch = sketch;
        o.bands = o
            .bands
            .iter()
            .enumerate()
            .map(|(j, _)| band ^ j as u64)
            .collect();
        o
    };
    let sim = base.simhash;
    let (sketch_a, sketch_b) = (base.sketch, !base.sketch);
    let mut stream = Vec::new();
    for i in 0..50 {
        stream.push(obs(i, sim ^ (0b11 << 32), sketch_b, 0xB000));
    }
    for i in 50..450 {
        let flip = if i % 2 == 0 { 0b11 } else { 0b11 << 48 };
        stream.push(obs(i, sim ^ flip, sketch_a, 0xA000));
    }
    stream.push(obs(450, sim, sketch_a, 0xC000));
    let mut memory = Engine::new(&cfg);
    let mut redis = LogStore::open(&cfg).unwrap();
    let mut last = None;
    for (i, o) in stream.iter().enumerate() {
        let now = UnixSecs(REPLAY_EPOCH + i as u64);
        let m = memory.record(o, now).unwrap();
        let r = redis.record(o, now).unwrap();
        assert_eq!(m, r, "message {i}: memory and redis stores disagree");
        last = Some(m);
    }
    let last = last.unwrap();
    assert_eq!(last.distance, Some(2));
    assert_eq!(last.sketch_diff, Some(0));
    assert!(last.merged.is_empty(), "merged {:?}", last.merged);
    assert_eq!(last.campaign.unwrap().messages, 401);
}

/// `thresholds.single_transaction_recipients` in every store: a message
/// alone in its campaign with 25 recipients is clean and spends no alert;
/// the copy that matches it is bulk and newly bulk; a message alone with
/// 200 recipients (past the limit of 100) is bulk and newly bulk. The
/// memory store and the Redis log agree.
fn agree_on_single_transactions() {
    let server = RedisServer::start();
    let cfg = redis_config(vec![server.url()], "single");
    let to = |n: usize, p: &str| Envelope {
        mail_from: Some("news@deals.example".into()),
        rcpts: (0..n).map(|i| format!("{p}{i}@example.net")).collect(),
        ..Envelope::default()
    };
    let other = b"Subject: prize\r\n\r\nClaim the prize of our lottery draw today by \
                  sending your bank details and your date of birth to the claims desk \
                  before the office closes on friday afternoon.\r\n"
        .to_vec();
    let msgs = [
        (spam(1), to(25, "a")),
        (spam(2), to(25, "b")),
        (other, to(200, "c")),
    ];
    let judge = |store: &mut dyn Store| -> Vec<Seen> {
        msgs.iter()
            .enumerate()
            .map(|(i, (raw, env))| {
                let a = analyze(raw, env, &cfg);
                let now = UnixSecs(REPLAY_EPOCH + i as u64);
                seen(&decide_with(store, &cfg, &a, env, now).unwrap())
            })
            .collect()
    };
    let memory = judge(&mut Engine::new(&cfg));
    let shared = judge(open_store(&cfg).as_mut());
    assert_same(&memory, &shared);
    let got: Vec<(Level, bool, Option<u64>)> = memory
        .iter()
        .map(|s| (s.level, s.newly_bulk, s.campaign.as_ref().map(|c| c.2)))
        .collect();
    assert_eq!(
        got,
        [
            (Level::Clean, false, Some(25)),
            (Level::Bulk, true, Some(50)),
            (Level::Bulk, true, Some(200)),
        ]
    );
}

#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn memory_and_log_stores_agree_on_single_transactions() {
    agree_on_single_transactions();
}

/// TLS (issue 56, item 2): over `rediss://` with the site's CA in
/// `store.redis.tls_ca_file`, the log store gives the memory store's
/// verdicts; a server whose certificate another CA signed is refused (no
/// verdict from it, no silent plain-text fallback), and so is a plain
/// `redis://` connection to the TLS port.
#[cfg_attr(
    not(all(bulkwatch_redis, bulkwatch_openssl)),
    ignore = "needs redis-server and openssl (apt-get install redis-server openssl)"
)]
#[test]
fn the_log_store_works_over_tls_and_checks_the_certificate() {
    let (server, tls_port) = RedisServer::start_tls();
    let url = format!("rediss://127.0.0.1:{tls_port}/0");
    let mut cfg = redis_config(vec![url.clone()], "tls");
    cfg.store.redis.tls_ca_file = server.cert("ca.pem").display().to_string();
    let msgs: Vec<Vec<u8>> = stream().into_iter().take(300).collect();
    let memory = run(&mut Engine::new(&cfg), &cfg, &msgs, 1);
    let shared = run(open_store(&cfg).as_mut(), &cfg, &msgs, 1);
    assert_same(&memory, &shared);
    assert!(memory.iter().any(|s| s.level == Level::Bulk));
    // The entries are there, read over the plain port.
    let key = format!(
        "{}:log",
        bulkwatch::store::redis::key_base(&cfg.store.redis)
    );
    let len = server.cli(&["XLEN", &key]).unwrap();
    assert_ne!(len.trim(), "0");
    // Another CA: the handshake fails, the call is an error.
    let mut other = cfg.clone();
    other.store.redis.tls_ca_file = server.cert("other-ca.pem").display().to_string();
    let pool = Pool::open(&other).unwrap();
    let e = pool.lazy_expire().unwrap_err();
    assert!(matches!(e, StoreError::Redis { .. }), "{e}");
    // Plain text to the TLS port: an error, not an answer.
    let mut plain = cfg.clone();
    plain.store.redis.urls = vec![format!("redis://127.0.0.1:{tls_port}/0")];
    assert!(Pool::open(&plain).unwrap().lazy_expire().is_err());
    // The right CA, for contrast: an answer.
    assert!(Pool::open(&cfg).unwrap().lazy_expire().is_ok());
    // A CA file that cannot be read is said at open.
    let mut missing = cfg.clone();
    missing.store.redis.tls_ca_file = "/nonexistent/ca.pem".into();
    let e = Pool::open(&missing).unwrap_err().to_string();
    assert!(
        e.contains("tls_ca_file") && e.contains("/nonexistent/ca.pem"),
        "{e}"
    );
}
