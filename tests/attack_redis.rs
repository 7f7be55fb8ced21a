//! Attacks on the shared Redis store: a key of bulkwatch's prefix set to a
//! value of another type must not stop every call, and a message that
//! merges two large campaigns must cost Redis a bounded amount of work.
//!
//! Each test starts its own `redis-server` on a free loopback port and
//! stops it. Without redis-server the tests are ignored, with the reason (CI requires it).

mod common;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bulkwatch::config::{Config, StoreBackend};
use bulkwatch::engine::{Engine, Observation, Outcome, UnixSecs};
use bulkwatch::replay::REPLAY_EPOCH;
use bulkwatch::store::redis::key_base;
use bulkwatch::store::Store;
use bulkwatch::store::{LogStore, RedisLayer, RedisResult};
use common::redis::RedisServer;
use common::synthetic::{observation, random_bits, splitmix, synthetic};

fn redis_config(url: String, prefix: &str) -> Config {
    let mut cfg = Config::default();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![url];
    cfg.store.redis.key_prefix = prefix.into();
    cfg.store.redis.timeout = Duration::from_secs(5);
    cfg
}

/// The outcome of a message Redis must have answered.
fn shared(s: &RedisLayer, obs: &Observation, now: u64) -> Outcome {
    match s.record(obs, UnixSecs(now)) {
        RedisResult::Judged(out) => out,
        other => panic!("Redis did not answer: {other:?}"),
    }
}

fn errors(s: &RedisLayer) -> u64 {
    s.stats.errors.load(Ordering::Relaxed)
}

fn repairs(s: &RedisLayer) -> u64 {
    s.wrongtype_repairs()
}

/// The log's key set to a string is deleted by the round trip
/// that meets it, which is made again; the replica rebuilds from the new
/// log, and the message gets its outcome. Before, every round trip failed
/// until someone deleted the key.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn a_log_key_of_the_wrong_type_is_repaired_not_failed_on() {
    let server = RedisServer::start();
    let cfg = redis_config(server.url(), "wrongtype-log");
    let s = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let key = format!("{}:log", key_base(&cfg.store.redis));
    let t0 = REPLAY_EPOCH;
    for i in 0..3 {
        shared(&s, &synthetic(i, &cfg), t0 + i);
    }
    server.cli(&["SET", &key, "x"]).unwrap();
    let out = shared(&s, &synthetic(1, &cfg), t0 + 5);
    // The old log went with the key: the text is new to the new log.
    assert!(!out.exact);
    assert_eq!(repairs(&s), 1);
    assert_eq!(server.cli(&["TYPE", &key]).unwrap().trim(), "stream");
    let again = shared(&s, &synthetic(1, &cfg), t0 + 6);
    assert!(again.exact);
    // A second daemon reads the new log.
    let other = RedisLayer::from_config(&cfg).unwrap().unwrap();
    assert_eq!(
        shared(&other, &synthetic(1, &cfg), t0 + 7)
            .campaign
            .unwrap()
            .messages,
        3
    );
    assert_eq!(errors(&s) + errors(&other), 0, "no call failed");
    assert_eq!(repairs(&s) + repairs(&other), 1);
}

/// Calls per command since the last `CONFIG RESETSTAT`
/// (`INFO commandstats`), and the microseconds they took in all.
fn command_calls(server: &RedisServer) -> (HashMap<String, u64>, u64) {
    let info = server.cli(&["INFO", "commandstats"]).unwrap();
    let mut calls = HashMap::new();
    let mut usec = 0;
    for line in info.lines() {
        let Some((name, stats)) = line.trim().split_once(':') else {
            continue;
        };
        let Some(cmd) = name.strip_prefix("cmdstat_") else {
            continue;
        };
        let field = |f: &str| {
            stats
                .split(',')
                .find_map(|kv| kv.strip_prefix(f))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        calls.insert(cmd.to_owned(), field("calls="));
        if cmd != "config" {
            usec += field("usec=");
        }
    }
    (calls, usec)
}

/// Two campaigns of 50,000 messages each, and one message close to both:
/// Redis holds only the log, so the merging message costs it what any
/// message costs (an append and a read of what is new), whatever the
/// campaigns' sizes; the merge happens in each daemon's replica. (The
/// retired script layout once read both campaigns' lists whole and wrote
/// the merged one back.) Verdicts and counts stay the memory store's,
/// and the log's one key expires.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[test]
fn merging_two_large_campaigns_costs_redis_bounded_work() {
    const MEMBERS: u64 = 50_000;
    let server = RedisServer::start();
    let mut cfg = redis_config(server.url(), "bigmerge");
    // Single link: the bridge, one match in each campaign, merges them
    // (the merge's cost is tested, not the linking rule).
    cfg.window.corroborating_matches = 0;
    let k = cfg.window.max_distance;
    let window = cfg.window.window.as_secs();
    let mut st = 5;
    let sim_a = splitmix(&mut st);
    let step = random_bits(2 * k, &mut st);
    let sim_b = sim_a ^ step;
    let mut half = step;
    while half.count_ones() > k {
        half &= half - 1;
    }
    let a = observation(&cfg, sim_a, &mut st);
    let b = observation(&cfg, sim_b, &mut st);
    let bridge = observation(&cfg, sim_a ^ half, &mut st);
    // Each campaign: its first message in the near tables, then exact
    // repeats (cheap for both stores to record).
    let repeat = |o: &Observation| Observation {
        near: false,
        ..o.clone()
    };
    let (ra, rb) = (repeat(&a), repeat(&b));
    let t0 = REPLAY_EPOCH;
    let mut stream: Vec<(&Observation, u64)> = Vec::new();
    for i in 0..MEMBERS {
        stream.push((if i == 0 { &a } else { &ra }, t0 + i / 20));
    }
    let tb = t0 + MEMBERS / 20;
    for i in 0..MEMBERS {
        stream.push((if i == 0 { &b } else { &rb }, tb + i / 20));
    }
    let tm = tb + MEMBERS / 20;
    let mut memory = Engine::new(&cfg);
    let mut redis = LogStore::open(&cfg).unwrap();
    for (i, (o, now)) in stream.iter().enumerate() {
        let m = memory.record(o, UnixSecs(*now)).unwrap();
        let r = redis.record(o, UnixSecs(*now)).unwrap();
        if i + 1 == MEMBERS as usize || i + 1 == stream.len() {
            assert_eq!(m, r, "message {i}: memory and redis stores disagree");
            assert_eq!(r.campaign.unwrap().messages, MEMBERS as u32);
        }
    }

    server.cli(&["CONFIG", "RESETSTAT"]).unwrap();
    let m = memory.record(&bridge, UnixSecs(tm)).unwrap();
    let r = redis.record(&bridge, UnixSecs(tm)).unwrap();
    let (calls, usec) = command_calls(&server);
    assert_eq!(m, r, "the merge: memory and redis stores disagree");
    assert_eq!(r.merged.len(), 1);
    assert_eq!(r.campaign.unwrap().messages, 2 * MEMBERS as u32 + 1);
    let total: u64 = calls
        .iter()
        .filter(|(c, _)| !c.starts_with("config"))
        .map(|(_, n)| n)
        .sum();
    println!("the merging call: {usec} µs of Redis, calls {calls:?}");
    assert_eq!(calls.get("xadd").copied(), Some(1), "{calls:?}");
    assert!(total <= 4, "{total} Redis calls for one message: {calls:?}");

    // The merged campaign's messages leave the window as in memory: half
    // of A, then A and half of B, then all but the last ones.
    for at in [
        t0 + window + MEMBERS / 40,
        tb + window + MEMBERS / 40,
        tm + window - 1,
        tm + window + 100,
    ] {
        let m = memory.record(&bridge, UnixSecs(at)).unwrap();
        let r = redis.record(&bridge, UnixSecs(at)).unwrap();
        assert_eq!(m, r, "at {at}: memory and redis stores disagree");
    }
    // What is left: the bridge's messages, and no key without a TTL.
    let keys = server
        .cli(&["--scan", "--pattern", "{bigmerge:v*"])
        .unwrap();
    for key in keys.lines() {
        let ttl: i64 = server.cli(&["TTL", key]).unwrap().trim().parse().unwrap();
        assert!(ttl > 0, "{key} has no TTL");
    }
}
