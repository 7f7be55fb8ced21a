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
/// that meets it, which is made again; the replica keeps what it applied
/// and reads the new log, and the message gets its outcome. Before, every
/// round trip failed until someone deleted the key.
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
    // The old log went with the key; the replica still counts it.
    assert!(out.exact);
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

/// What whoever may write to Redis without the site's key can do to the
/// allowances and corrections (issue 64): write back a genuine, sealed
/// older value, delete it, or write junk. None of it brings back an
/// allowance a host has seen withdrawn.
mod writers_without_the_key {
    use super::*;
    use bulkwatch::engine::campaign::WHILE_LIVE;
    use bulkwatch::engine::verdict::{AllowReason, Level};
    use bulkwatch::store::writers::REORDER;
    use bulkwatch::store::Correction;
    use common::redis::judged_on;
    use std::path::Path;

    fn host(url: &str, prefix: &str, state: &Path) -> (Config, RedisLayer) {
        let mut cfg = redis_config(url.to_owned(), prefix);
        cfg.thresholds.bulk_threshold = 3.0;
        cfg.thresholds.suspect_threshold = 2.0;
        cfg.state.state_dir = state.to_owned();
        let layer = RedisLayer::from_config(&cfg).unwrap().unwrap();
        (cfg, layer)
    }

    fn raw(server: &RedisServer) -> redis::Connection {
        redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    fn get(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
        redis::cmd("GET").arg(key).query(c).unwrap()
    }

    fn set(c: &mut redis::Connection, key: &str, v: &[u8]) {
        let _: () = redis::cmd("SET").arg(key).arg(v).query(c).unwrap();
    }

    /// Entries as `XRANGE` answers them: id, then field and value pairs.
    type Entries = Vec<(String, Vec<(String, Vec<u8>)>)>;

    /// The log's newest entry: its id and its field's value.
    fn newest(c: &mut redis::Connection, key: &str) -> (String, Vec<u8>) {
        let v: Entries = redis::cmd("XREVRANGE")
            .arg(key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query(c)
            .unwrap();
        let (id, mut fields) = v.into_iter().next().unwrap();
        (id, fields.remove(0).1)
    }

    fn xdel(c: &mut redis::Connection, key: &str, id: &str) {
        let n: u64 = redis::cmd("XDEL").arg(key).arg(id).query(c).unwrap();
        assert_eq!(n, 1);
    }

    fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    fn domains(l: &RedisLayer) -> Vec<String> {
        let d = l.domain_allowances().unwrap();
        d.into_iter().map(|(d, _)| d).collect()
    }

    /// A domain allowance withdrawn stays withdrawn for every host that
    /// saw the withdrawal, and for a restart of one: the head written
    /// back as it was (sealed, genuine), deleted or replaced by junk is a
    /// rollback, counted, and the host writes back what it verified.
    /// Before, the allowances were a hash whose old sealed values could be
    /// written back at will.
    #[cfg_attr(
        not(bulkwatch_redis),
        ignore = "needs redis-server (apt-get install redis-server)"
    )]
    #[test]
    fn a_withdrawn_domain_allowance_stays_withdrawn() {
        let server = RedisServer::start();
        let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (cfg, a) = host(&server.url(), "dom", sa.path());
        let (_, b) = host(&server.url(), "dom", sb.path());
        let head = format!("{}:head", key_base(&cfg.store.redis));
        let mut c = raw(&server);
        a.set_domain_allowance("news.example", Some(u64::MAX))
            .unwrap();
        let allowed = get(&mut c, &head).expect("the head holds it");
        assert_eq!(domains(&b), ["news.example"]);
        a.set_domain_allowance("news.example", None).unwrap();
        assert!(domains(&b).is_empty());
        let withdrawn = get(&mut c, &head).unwrap();

        // The old value, sealed with the site's key, written back.
        set(&mut c, &head, &allowed);
        assert!(domains(&b).is_empty(), "b verified the withdrawal");
        assert_eq!(count(&b.integrity().rollbacks), 1);
        assert_eq!(count(&b.integrity().repairs), 1);
        assert_eq!(get(&mut c, &head).unwrap(), withdrawn, "written back");
        assert!(domains(&a).is_empty());
        assert_eq!(count(&a.integrity().rollbacks), 0, "nothing to see");

        // Deleted, or junk: the same.
        let _: () = redis::cmd("DEL").arg(&head).query(&mut c).unwrap();
        assert!(domains(&a).is_empty());
        set(&mut c, &head, b"junk");
        assert!(domains(&a).is_empty());
        assert_eq!(count(&a.integrity().repairs), 2);
        assert_eq!(get(&mut c, &head).unwrap(), withdrawn);

        // A restart remembers what it verified (the state directory).
        set(&mut c, &head, &allowed);
        drop(b);
        let (_, b) = host(&server.url(), "dom", sb.path());
        assert!(domains(&b).is_empty(), "after a restart");
        assert_eq!(count(&b.integrity().repairs), 1);

        // The bound: a host that never verified the withdrawal (new, its
        // state lost) takes the old value while it is there, until a host
        // that did writes the head back.
        set(&mut c, &head, &allowed);
        let blank = tempfile::tempdir().unwrap();
        let (_, new) = host(&server.url(), "dom", blank.path());
        assert_eq!(domains(&new), ["news.example"]);
        assert!(domains(&a).is_empty());
        assert!(domains(&new).is_empty(), "the next read is the site's");
    }

    /// A campaign allowance withdrawn stays withdrawn when the
    /// withdrawal's log entry is deleted and the allowance's entry
    /// (sealed, genuine) moved after it: the host that applied both
    /// applies the copy once (it names its writer and number), and a host
    /// that starts afterwards learns the withdrawal from the head before
    /// it reads the log. Before, the second host allowed the campaign.
    #[cfg_attr(
        not(bulkwatch_redis),
        ignore = "needs redis-server (apt-get install redis-server)"
    )]
    #[test]
    fn a_withdrawn_campaign_allowance_stays_withdrawn_when_its_entry_is_deleted() {
        let server = RedisServer::start();
        let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (cfg, a) = host(&server.url(), "camp", sa.path());
        let log = format!("{}:log", key_base(&cfg.store.redis));
        let mut c = raw(&server);
        let mut last = None;
        for n in 0..4 {
            last = Some(judged_on(&a, &cfg, n));
        }
        let id = last.unwrap().campaign.unwrap().id;
        let at = |n: u64| UnixSecs(REPLAY_EPOCH + n);
        let allow = Correction::Allow {
            id,
            until: WHILE_LIVE,
        };
        assert_eq!(a.correct(allow, at(4)).unwrap(), Some(id));
        let (allow_id, allow_entry) = newest(&mut c, &log);
        assert_eq!(
            judged_on(&a, &cfg, 4).level,
            Level::Allowed(AllowReason::Campaign)
        );
        let withdraw = Correction::Allow { id, until: 0 };
        assert_eq!(a.correct(withdraw, at(5)).unwrap(), Some(id));
        let (withdraw_id, _) = newest(&mut c, &log);

        xdel(&mut c, &log, &withdraw_id);
        xdel(&mut c, &log, &allow_id);
        let _: String = redis::cmd("XADD")
            .arg(&log)
            .arg("*")
            .arg("i")
            .arg(&allow_entry)
            .query(&mut c)
            .unwrap();

        assert_eq!(judged_on(&a, &cfg, 5).level, Level::Bulk);
        assert!(count(&a.integrity().again) >= 1, "the copy was met");
        let (_, b) = host(&server.url(), "camp", sb.path());
        assert_eq!(judged_on(&b, &cfg, 6).level, Level::Bulk, "a new host");
    }

    /// Entries deleted one by one are counted missing by every host that
    /// reads past them, and copies of genuine entries count once: a host
    /// that applied the log keeps its counts. The bound: a host that
    /// starts afterwards counts what the log still holds.
    #[cfg_attr(
        not(bulkwatch_redis),
        ignore = "needs redis-server (apt-get install redis-server)"
    )]
    #[test]
    fn deleted_entries_are_counted_and_copies_count_once() {
        let server = RedisServer::start();
        let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (cfg, a) = host(&server.url(), "gaps", sa.path());
        let log = format!("{}:log", key_base(&cfg.store.redis));
        let mut c = raw(&server);
        let mut ids = Vec::new();
        for n in 0..10 {
            judged_on(&a, &cfg, n);
            ids.push(newest(&mut c, &log));
        }
        for (id, _) in &ids[2..7] {
            xdel(&mut c, &log, id);
        }
        for (_, entry) in &ids[7..10] {
            let _: String = redis::cmd("XADD")
                .arg(&log)
                .arg("*")
                .arg("i")
                .arg(entry)
                .query(&mut c)
                .unwrap();
        }
        let v = judged_on(&a, &cfg, 10);
        assert_eq!(v.campaign.unwrap().messages, 11, "a keeps its counts");
        assert_eq!(count(&a.integrity().again), 3);
        // A number skipped is missing once its writer is REORDER past it
        // (round trips of one host in flight together land in any order).
        for i in 0..=REORDER {
            shared(&a, &synthetic(i, &cfg), REPLAY_EPOCH + 10);
        }
        let (_, b) = host(&server.url(), "gaps", sb.path());
        let v = judged_on(&b, &cfg, 11);
        assert_eq!(v.campaign.unwrap().messages, 7, "10 - 5 + 1 + 1");
        assert_eq!(count(&b.integrity().missing), 5);
        assert_eq!(count(&b.integrity().again), 3);
    }

    /// An entry with an id of the future (ids are the writer's choice)
    /// moves no trim: the log is trimmed by Redis's own clock, so a host
    /// that starts later still reads the window. One with the largest id
    /// there is, after which no `XADD` succeeds, is met by deleting the
    /// log: the round trip goes on, and the running host keeps its
    /// counts. Before, the first cut the log at the next upkeep and the
    /// second left every host judging alone until someone deleted it.
    #[cfg_attr(
        not(bulkwatch_redis),
        ignore = "needs redis-server (apt-get install redis-server)"
    )]
    #[test]
    fn ids_of_the_future_cut_nothing_and_stop_nothing() {
        let server = RedisServer::start();
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let (cfg, a) = host(&server.url(), "ids", dirs[0].path());
        let log = format!("{}:log", key_base(&cfg.store.redis));
        let mut c = raw(&server);
        for n in 0..3 {
            judged_on(&a, &cfg, n);
        }
        let _: String = redis::cmd("XADD")
            .arg(&log)
            .arg("9999999999999-0")
            .arg("x")
            .arg("y")
            .query(&mut c)
            .unwrap();
        let (_, b) = host(&server.url(), "ids", dirs[1].path());
        for n in 3..6 {
            judged_on(&b, &cfg, n);
        }
        let (_, new) = host(&server.url(), "ids", dirs[2].path());
        let v = judged_on(&new, &cfg, 6);
        assert_eq!(v.campaign.unwrap().messages, 7, "nothing was cut");

        judged_on(&a, &cfg, 7);
        let _: String = redis::cmd("XADD")
            .arg(&log)
            .arg("18446744073709551615-18446744073709551615")
            .arg("x")
            .arg("y")
            .query(&mut c)
            .unwrap();
        let v = judged_on(&a, &cfg, 8);
        assert_eq!(v.campaign.unwrap().messages, 9, "a keeps its counts");
        assert_eq!(a.wrongtype_repairs(), 1);
        // b had not read 6 and 7, which went with the log.
        let v = judged_on(&b, &cfg, 9);
        assert_eq!(v.campaign.unwrap().messages, 8);
    }

    /// A log flooded with entries to skip (20,000 of 300 bytes, as fast as
    /// one connection writes them) is read through by the next message
    /// of a host that was up to date, which gets Redis's answer; the
    /// entries are counted. Before, a message read at most 5 × 1,024
    /// entries and every host judged alone until they had read past it.
    #[cfg_attr(
        not(bulkwatch_redis),
        ignore = "needs redis-server (apt-get install redis-server)"
    )]
    #[test]
    fn a_log_flooded_with_junk_is_read_through() {
        let server = RedisServer::start();
        let (sa, sb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (cfg, a) = host(&server.url(), "flood", sa.path());
        let (_, b) = host(&server.url(), "flood", sb.path());
        let log = format!("{}:log", key_base(&cfg.store.redis));
        let mut c = raw(&server);
        for n in 0..3 {
            judged_on(if n % 2 == 0 { &a } else { &b }, &cfg, n);
        }
        let junk = vec![b'j'; 300];
        let mut p = redis::pipe();
        for _ in 0..20_000 {
            p.cmd("XADD")
                .arg(&log)
                .arg("*")
                .arg("i")
                .arg(&junk)
                .ignore();
        }
        let _: () = p.query(&mut c).unwrap();
        let v = judged_on(&b, &cfg, 3);
        assert_eq!(v.campaign.unwrap().messages, 4);
        assert_eq!(count(&b.integrity().unsealed), 20_000);
        let v = judged_on(&a, &cfg, 4);
        assert_eq!(v.campaign.unwrap().messages, 5);
    }
}
