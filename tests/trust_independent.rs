//! Independent tests of the trust boundaries (issue 64), written from the
//! descriptions only (docs/admin/security.md, docs/admin/redis.md,
//! docs/admin/solicited.md, CHANGELOG "Unreleased", the public API):
//!
//! 1. `guard_*`: one SMTP client holding many milter connections (idle,
//!    after HELO, in its envelope, in DATA, in its header, in its body)
//!    never gets other clients' sessions refused at `max_connections`; it
//!    loses its own.
//! 2. `redis_*`: a writer to Redis without `fingerprint.hash_key` (copies,
//!    deletions, old heads written back, junk, odd ids) takes nothing
//!    from hosts that applied the log and brings back no withdrawn
//!    allowance.
//! 3. `auth_*`: a forged `Authentication-Results` header, in whatever
//!    legal form or place, does not make an allowed domain's campaign
//!    allowed.
//! 4. `ordinary_*`: ordinary mail in all three areas keeps working.
//!
//! No outcome here is decided by a sleep: the holders' connections are
//! opened with replies at every stage (the MTA offers no `NOREPLY_*`), so
//! each returns once the milter has read that stage; ordinary sessions are
//! Postfix-like (no replies up to the body).

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bulkwatch::config::{Config, StoreBackend};
use bulkwatch::engine::campaign::{CampaignId, WHILE_LIVE};
use bulkwatch::engine::verdict::{AllowReason, Level, LevelKind, Verdict};
use bulkwatch::engine::{Engine, UnixSecs};
use bulkwatch::milter::callbacks::NO_REPLY;
use bulkwatch::milter::State;
use bulkwatch::replay::REPLAY_EPOCH;
use bulkwatch::store::{Correction, RedisLayer};
use common::redis::{judged_on, RedisServer};
use common::{name, Mail, Milter};
use indymilter_test::{EomAction, EomActions, MacroStage, ProtoOpts, Status, TestConnection};

// ---------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------

/// A counter or gauge of `/metrics` for `state`, by its exact name.
fn metric(state: &State, metric_name: &str) -> u64 {
    let text = bulkwatch::milter::metrics::render(state, bulkwatch::milter::unix_now());
    text.lines()
        .find_map(|l| {
            l.strip_prefix(metric_name)
                .and_then(|r| r.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map(|v| v as u64)
        .unwrap_or_else(|| panic!("metric {metric_name} is not rendered:\n{text}"))
}

/// Every verdict the milter counted.
fn verdicts(state: &State) -> u64 {
    LevelKind::ALL
        .iter()
        .map(|k| state.metrics.messages(*k))
        .sum()
}

/// The `X-Bulkwatch` value the milter added, if it added one.
fn tag_of(a: &EomActions) -> Option<String> {
    a.actions.iter().find_map(|x| match x {
        EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
            Some(value.to_string_lossy().into_owned())
        }
        _ => None,
    })
}

// ---------------------------------------------------------------------
// 1. The connection guard
// ---------------------------------------------------------------------

/// A milter with `milter.max_connections = cap`, reading mail in-process.
async fn guarded(cap: usize) -> Milter {
    let mut cfg = common::config();
    cfg.milter.max_connections = cap;
    common::start_state(State::new(Engine::new(&cfg))).await
}

/// Where a holder stops its SMTP session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Connected, said nothing more.
    Connect,
    /// HELO, then nothing.
    Helo,
    /// MAIL and RCPT, then nothing.
    Envelope,
    /// DATA, then nothing (the client never sends its final dot).
    Data,
    /// Part of the header, then nothing.
    Headers,
    /// The header and a first body chunk, then nothing.
    Body,
}

/// A connection of an SMTP client that stops at `at`. The MTA side offers
/// no `NOREPLY_*`, so every stage is answered: when this returns, the
/// milter has read the connect (and the client it names) and every stage
/// up to `at`.
async fn hold(addr: SocketAddr, ip: IpAddr, at: Hold, n: usize) -> TestConnection {
    let ok = Status::Continue;
    let mut c = TestConnection::configure()
        .available_opts(ProtoOpts::all().difference(NO_REPLY))
        .open_tcp(addr)
        .await
        .expect("a holder's new connection is negotiated");
    assert_eq!(
        c.connect("holder.example", (ip, 40_000u16)).await.unwrap(),
        ok
    );
    if at == Hold::Connect {
        return c;
    }
    assert_eq!(c.helo("holder.example").await.unwrap(), ok);
    if at == Hold::Helo {
        return c;
    }
    c.macros(MacroStage::Mail, [("i", format!("H{n}"))])
        .await
        .unwrap();
    assert_eq!(c.mail(["<x@holder.example>"]).await.unwrap(), ok);
    assert_eq!(c.rcpt([format!("<v{n}@example.net>")]).await.unwrap(), ok);
    if at == Hold::Envelope {
        return c;
    }
    assert_eq!(c.data().await.unwrap(), ok);
    if at == Hold::Data {
        return c;
    }
    assert_eq!(
        c.header("From", "Holder <x@holder.example>").await.unwrap(),
        ok
    );
    assert_eq!(c.header("Subject", "never ends").await.unwrap(), ok);
    if at == Hold::Headers {
        return c;
    }
    assert_eq!(c.eoh().await.unwrap(), ok);
    assert_eq!(
        c.body(b"The first line of a message that never ends\r\n".to_vec())
            .await
            .unwrap(),
        ok
    );
    c
}

/// Whether a holder's connection is still served (an unknown SMTP command
/// is answered), or was closed by the milter.
async fn alive(c: &mut TestConnection) -> bool {
    matches!(c.unknown("NOOP").await, Ok(Status::Continue))
}

/// Counts the holders still served.
async fn alive_count(holders: &mut [TestConnection]) -> usize {
    let mut n = 0;
    for c in holders.iter_mut() {
        n += usize::from(alive(c).await);
    }
    n
}

/// An ordinary Postfix session from `ip` up to the first half of `m`'s
/// body (Postfix-like: no replies before the body).
async fn begin_ordinary(addr: SocketAddr, ip: [u8; 4], m: &Mail) -> Result<TestConnection, String> {
    let e = |what: &str| {
        let what = what.to_owned();
        move |err: indymilter_test::TestError| format!("{what}: {err}")
    };
    let mut c = TestConnection::open(addr).await.map_err(e("negotiate"))?;
    c.connect("client.example", (ip, 40_000u16))
        .await
        .map_err(e("connect"))?;
    c.helo("client.example").await.map_err(e("helo"))?;
    c.macros(MacroStage::Mail, [("i", m.queue_id.as_str())])
        .await
        .map_err(e("macros"))?;
    c.mail(["<offers@deals.example>"])
        .await
        .map_err(e("mail"))?;
    c.rcpt([m.rcpt.as_str()]).await.map_err(e("rcpt"))?;
    c.data().await.map_err(e("data"))?;
    for (k, v) in &m.headers {
        c.header(k.as_str(), v.as_str())
            .await
            .map_err(e("header"))?;
    }
    c.eoh().await.map_err(e("eoh"))?;
    let half = m.body.len() / 2;
    match c
        .body(m.body.as_bytes()[..half].to_vec())
        .await
        .map_err(e("body"))?
    {
        Status::Continue => Ok(c),
        other => Err(format!("body: {other:?}")),
    }
}

/// The rest of an ordinary session begun with [`begin_ordinary`].
async fn finish_ordinary(mut c: TestConnection, m: &Mail) -> Result<(EomActions, Status), String> {
    let half = m.body.len() / 2;
    match c
        .body(m.body.as_bytes()[half..].to_vec())
        .await
        .map_err(|e| format!("body: {e}"))?
    {
        Status::Continue => {}
        other => return Err(format!("body: {other:?}")),
    }
    let r = c.eom().await.map_err(|e| format!("eom: {e}"))?;
    c.close().await.map_err(|e| format!("close: {e}"))?;
    Ok(r)
}

/// A whole ordinary session from `ip` carrying `m`.
async fn ordinary(addr: SocketAddr, ip: [u8; 4], m: &Mail) -> Result<(EomActions, Status), String> {
    let c = begin_ordinary(addr, ip, m).await?;
    finish_ordinary(c, m).await
}

/// The `i`th ordinary client: a /24 of its own, far from the holders'.
fn client_ip(i: usize) -> [u8; 4] {
    [172, 16, (i % 250) as u8, 9]
}

/// Sends `count` ordinary messages (copies of one campaign to different
/// people) from `count` different clients, one after the other; each must
/// be judged (accepted with a verdict), and the later ones are bulk.
async fn ordinary_round(m: &Milter, first: usize, count: usize) {
    for i in first..first + count {
        let mail = common::spam(&name(i), i as u32);
        let (actions, status) = ordinary(m.addr, client_ip(i), &mail)
            .await
            .unwrap_or_else(|e| panic!("ordinary session {i} of another client was cut: {e}"));
        assert_eq!(status, Status::Accept, "ordinary session {i}");
        if i >= 6 {
            let tag = tag_of(&actions).unwrap_or_default();
            assert!(
                tag.starts_with("bulk"),
                "copy {i} of the campaign was judged: {tag:?}"
            );
        }
    }
}

/// One SMTP client connects 40 times and says nothing more (cap 16): the
/// next ten ordinary sessions of ten other clients are all judged, none
/// refused, and the holder's connections are what was closed.
#[tokio::test]
async fn guard_sessions_idle_after_connect_do_not_shut_out_other_clients() {
    let m = guarded(16).await;
    let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 66));
    let mut holders = Vec::new();
    for n in 0..40 {
        holders.push(hold(m.addr, ip, Hold::Connect, n).await);
    }
    ordinary_round(&m, 0, 10).await;
    assert_eq!(verdicts(&m.state), 10);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    let left = alive_count(&mut holders).await;
    assert!(left <= 14, "the holder kept {left} of 16 slots");
    assert!(metric(&m.state, "bulkwatch_connections_evicted_total") >= 26);
}

/// The holder stops after HELO on 40 connections, each from another
/// address of its /24 (one client), interleaved with ordinary sessions
/// of other clients: every ordinary session is judged.
#[tokio::test]
async fn guard_sessions_stopped_after_helo_from_a_whole_slash24() {
    let m = guarded(16).await;
    let mut holders = Vec::new();
    let mut sent = 0;
    for n in 0..40 {
        let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 1 + n as u8));
        holders.push(hold(m.addr, ip, Hold::Helo, n).await);
        if n % 4 == 3 {
            ordinary_round(&m, sent, 1).await;
            sent += 1;
        }
    }
    ordinary_round(&m, sent, 4).await;
    assert_eq!(verdicts(&m.state), sent as u64 + 4);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    assert!(alive_count(&mut holders).await <= 14);
}

/// The holder opens 40 transactions to MAIL and RCPT and keeps adding a
/// recipient now and then (a trickle): ordinary sessions of other clients
/// after each trickle are judged.
#[tokio::test]
async fn guard_envelopes_held_with_a_trickle_of_rcpt() {
    let m = guarded(16).await;
    let ip = IpAddr::V4(Ipv4Addr::new(198, 18, 7, 7));
    let mut holders = Vec::new();
    for n in 0..40 {
        holders.push(hold(m.addr, ip, Hold::Envelope, n).await);
    }
    for round in 0..3 {
        for (k, c) in holders.iter_mut().enumerate() {
            // (A closed one fails: that is the holder's loss.)
            let _ = c.rcpt([format!("<t{round}x{k}@example.net>")]).await;
        }
        ordinary_round(&m, round * 3, 3).await;
    }
    assert_eq!(verdicts(&m.state), 9);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
}

/// The audited attack at `max_connections = 32`: while six ordinary
/// sessions of six clients are in the middle of their bodies, one client
/// opens 80 sessions and holds each after DATA. The six finish and are
/// judged (none of them was closed), ten more ordinary sessions are
/// judged, and only the holder's sessions were closed.
#[tokio::test]
async fn guard_sessions_held_in_data_lose_their_own_not_sessions_in_flight() {
    let m = guarded(32).await;
    let mut in_flight = Vec::new();
    for i in 0..6 {
        let mail = common::spam(&name(i), i as u32);
        let c = begin_ordinary(m.addr, client_ip(i), &mail)
            .await
            .unwrap_or_else(|e| panic!("ordinary session {i}: {e}"));
        in_flight.push((c, mail));
    }
    let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 99));
    let mut holders = Vec::new();
    for n in 0..80 {
        holders.push(hold(m.addr, ip, Hold::Data, n).await);
    }
    for (i, (c, mail)) in in_flight.into_iter().enumerate() {
        let (_, status) = finish_ordinary(c, &mail)
            .await
            .unwrap_or_else(|e| panic!("session {i} in flight was cut by the holder: {e}"));
        assert_eq!(status, Status::Accept);
    }
    ordinary_round(&m, 6, 10).await;
    assert_eq!(verdicts(&m.state), 16);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    let left = alive_count(&mut holders).await;
    assert!(left <= 28, "the holder kept {left} of 32 slots");
    assert!(metric(&m.state, "bulkwatch_connections_evicted_total") >= 52);
}

/// The holder's sessions stall in the middle of their bodies, each from
/// another address of one IPv6 /64: other clients are still judged.
#[tokio::test]
async fn guard_sessions_stalled_mid_body_from_one_ipv6_slash64() {
    let m = guarded(16).await;
    let mut holders = Vec::new();
    for n in 0..40 {
        let ip = IpAddr::V6(Ipv6Addr::new(
            0x2001,
            0xdb8,
            0xbad,
            0x1,
            n as u16,
            0x99,
            0,
            1 + n as u16,
        ));
        holders.push(hold(m.addr, ip, Hold::Body, n).await);
    }
    ordinary_round(&m, 0, 10).await;
    assert_eq!(verdicts(&m.state), 10);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    assert!(alive_count(&mut holders).await <= 14);
}

/// The holder stops in the middle of its header, half of its sessions
/// named as IPv4 addresses of its /24 and half as the same addresses
/// mapped into IPv6 (`::ffff:a.b.c.d`): it is one client, and other
/// clients are judged.
#[tokio::test]
async fn guard_header_holds_mixing_ipv4_and_ipv4_mapped_ipv6() {
    let m = guarded(16).await;
    let mut holders = Vec::new();
    for n in 0..40 {
        let v4 = Ipv4Addr::new(192, 0, 2, 10 + n as u8);
        let ip = if n % 2 == 0 {
            IpAddr::V4(v4)
        } else {
            IpAddr::V6(v4.to_ipv6_mapped())
        };
        holders.push(hold(m.addr, ip, Hold::Headers, n).await);
    }
    ordinary_round(&m, 0, 10).await;
    assert_eq!(verdicts(&m.state), 10);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    assert!(alive_count(&mut holders).await <= 14);
}

/// The holder has two networks and holds sessions at every stage from
/// both (30 each): other clients are judged between its bursts.
#[tokio::test]
async fn guard_holder_spread_over_two_networks_at_every_stage() {
    let m = guarded(16).await;
    let stages = [
        Hold::Connect,
        Hold::Helo,
        Hold::Envelope,
        Hold::Data,
        Hold::Headers,
        Hold::Body,
    ];
    let mut holders = Vec::new();
    let mut sent = 0;
    for n in 0..60 {
        let ip = if n % 2 == 0 {
            IpAddr::V4(Ipv4Addr::new(203, 0, 113, (n % 200) as u8 + 1))
        } else {
            IpAddr::V4(Ipv4Addr::new(198, 51, 100, (n % 200) as u8 + 1))
        };
        holders.push(hold(m.addr, ip, stages[n % stages.len()], n).await);
        if n % 10 == 9 {
            ordinary_round(&m, sent, 2).await;
            sent += 2;
        }
    }
    assert_eq!(verdicts(&m.state), sent as u64);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
    assert!(alive_count(&mut holders).await <= 14);
}

// ---------------------------------------------------------------------
// 4a. Ordinary sessions and the guard
// ---------------------------------------------------------------------

/// Six clients with two sessions each (12, under a cap of 16), all in the
/// middle of their messages at once: every one is judged and no
/// connection is closed or refused.
#[tokio::test]
async fn ordinary_concurrent_sessions_under_the_cap_are_all_judged() {
    let m = guarded(16).await;
    let mut open = Vec::new();
    for i in 0..12 {
        let mail = common::spam(&name(i), i as u32);
        let c = begin_ordinary(m.addr, client_ip(i / 2), &mail)
            .await
            .unwrap_or_else(|e| panic!("session {i}: {e}"));
        open.push((c, mail));
    }
    for (i, (c, mail)) in open.into_iter().enumerate() {
        let (_, status) = finish_ordinary(c, &mail)
            .await
            .unwrap_or_else(|e| panic!("session {i} was cut: {e}"));
        assert_eq!(status, Status::Accept);
    }
    assert_eq!(verdicts(&m.state), 12);
    assert_eq!(metric(&m.state, "bulkwatch_connections_evicted_total"), 0);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
}

/// A legitimately slow client sends a 400 KB message in 400 body chunks
/// while another client keeps opening sessions it holds after DATA (60 of
/// them, cap 16): the slow message is judged, not cut off.
#[tokio::test]
async fn ordinary_slow_large_message_in_many_chunks_is_judged_amid_a_flood() {
    let m = guarded(16).await;
    let mut c = TestConnection::open(m.addr).await.unwrap();
    c.connect("slow.example", ([100, 64, 3, 3], 40_000u16))
        .await
        .unwrap();
    c.helo("slow.example").await.unwrap();
    c.macros(MacroStage::Mail, [("i", "SLOW1")]).await.unwrap();
    c.mail(["<reports@slow.example>"]).await.unwrap();
    c.rcpt(["<alice@example.net>"]).await.unwrap();
    c.data().await.unwrap();
    for (k, v) in [
        ("From", "Reports <reports@slow.example>"),
        ("To", "alice@example.net"),
        ("Subject", "The quarterly figures, in full"),
    ] {
        c.header(k, v).await.unwrap();
    }
    c.eoh().await.unwrap();
    let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 5));
    let mut holders = Vec::new();
    for chunk in 0..400 {
        let mut text = String::new();
        while text.len() < 1000 {
            text.push_str(&format!(
                "Line {chunk}-{} of the quarterly report: revenue by region and product.\r\n",
                text.len()
            ));
        }
        let st = c
            .body(text.into_bytes())
            .await
            .unwrap_or_else(|e| panic!("the slow client was cut at chunk {chunk}: {e}"));
        assert_eq!(st, Status::Continue, "chunk {chunk}");
        if chunk % 20 == 19 {
            for _ in 0..3 {
                let n = holders.len();
                holders.push(hold(m.addr, ip, Hold::Data, n).await);
            }
        }
    }
    let (_, status) = c.eom().await.expect("the slow message gets its verdict");
    assert_eq!(status, Status::Accept);
    assert_eq!(verdicts(&m.state), 1);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
}

/// A client sends three messages on one connection while another client
/// holds sessions after MAIL: all three are judged.
#[tokio::test]
async fn ordinary_several_messages_on_one_connection_amid_held_envelopes() {
    let m = guarded(16).await;
    let mut c = common::open(m.addr).await;
    let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 77));
    let mut holders = Vec::new();
    for k in 0..3 {
        for _ in 0..15 {
            let n = holders.len();
            holders.push(hold(m.addr, ip, Hold::Envelope, n).await);
        }
        let mail = common::spam(&name(k), k as u32);
        let (_, status) = common::transact(&mut c, &mail).await;
        assert_eq!(status, Status::Accept, "message {k}");
    }
    c.close().await.unwrap();
    assert_eq!(verdicts(&m.state), 3);
    assert_eq!(metric(&m.state, "bulkwatch_connections_refused_total"), 0);
}

// ---------------------------------------------------------------------
// 2. Redis against a writer without the site's key
// ---------------------------------------------------------------------

/// The site's key (not the built-in one, which seals nothing).
const SITE_KEY: (u64, u64) = (0x5eed_1234_abcd_0001, 0x0bad_cafe_4321_0002);

/// A host's configuration: the site's Redis, key and prefix, its own
/// state directory.
fn host_cfg(server: &RedisServer, prefix: &str, dir: &Path) -> Config {
    let mut cfg = common::config();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![server.url()];
    cfg.store.redis.key_prefix = prefix.into();
    cfg.store.redis.timeout = Duration::from_secs(5);
    cfg.fingerprint.hash_key = SITE_KEY;
    cfg.state.state_dir = dir.to_path_buf();
    cfg
}

fn layer(cfg: &Config) -> RedisLayer {
    RedisLayer::from_config(cfg).unwrap().unwrap()
}

/// A host: its configuration and its store.
struct Host {
    cfg: Config,
    store: RedisLayer,
}

impl Host {
    fn new(server: &RedisServer, prefix: &str, dir: &Path) -> Host {
        let cfg = host_cfg(server, prefix, dir);
        Host {
            store: layer(&cfg),
            cfg,
        }
    }

    /// Spam copy `n` judged here through Redis.
    fn judge(&self, n: u32) -> Verdict {
        judged_on(&self.store, &self.cfg, n)
    }

    fn again(&self) -> u64 {
        self.store.integrity().again.load(Ordering::Relaxed)
    }
}

fn messages(v: &Verdict) -> u32 {
    v.campaign.as_ref().map_or(0, |c| c.messages)
}

fn recipients(v: &Verdict) -> u64 {
    v.campaign.as_ref().map_or(0, |c| c.recipients)
}

fn campaign_id(v: &Verdict) -> CampaignId {
    v.campaign.as_ref().expect("a campaign").id
}

/// A connection of the writer without the key.
fn raw(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

fn log_key(l: &RedisLayer) -> String {
    format!("{}:log", l.pool().key_base())
}

fn head_key(l: &RedisLayer) -> String {
    format!("{}:head", l.pool().key_base())
}

/// An entry of the log: its id and its fields (names and values).
type RawEntry = (String, Vec<Vec<u8>>);

fn xrange(con: &mut redis::Connection, key: &str) -> Vec<RawEntry> {
    let v: redis::Value = redis::cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .query(con)
        .unwrap();
    let redis::Value::Array(items) = v else {
        panic!("XRANGE: {v:?}")
    };
    items
        .into_iter()
        .map(|item| {
            let redis::Value::Array(mut parts) = item else {
                panic!("entry")
            };
            let fields = parts.pop().unwrap();
            let id = parts.pop().unwrap();
            let id = match id {
                redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
                redis::Value::SimpleString(s) => s,
                other => panic!("id {other:?}"),
            };
            let redis::Value::Array(fields) = fields else {
                panic!("fields")
            };
            let fields = fields
                .into_iter()
                .map(|f| match f {
                    redis::Value::BulkString(b) => b,
                    redis::Value::SimpleString(s) => s.into_bytes(),
                    other => panic!("field {other:?}"),
                })
                .collect();
            (id, fields)
        })
        .collect()
}

/// `XADD key id fields...` by the writer without the key.
fn xadd(con: &mut redis::Connection, key: &str, id: &str, fields: &[Vec<u8>]) -> String {
    let mut c = redis::cmd("XADD");
    c.arg(key).arg(id);
    for f in fields {
        c.arg(f.as_slice());
    }
    c.query(con).unwrap()
}

/// Waits (bounded) until Redis's own clock (`TIME`) is past the newest
/// id in the log, so that a log made anew after a `DEL` gets ids of its
/// own. This is a condition Redis reports, not a sleep that decides an
/// outcome: without it, a new entry appended in the same millisecond as
/// a host's last one may reuse its id (see
/// `redis_a_log_made_anew_at_a_hosts_last_id_changes_no_count`).
fn clock_past_log(con: &mut redis::Connection, key: &str) {
    let v: redis::Value = redis::cmd("XREVRANGE")
        .arg(key)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query(con)
        .unwrap();
    let redis::Value::Array(items) = v else {
        return;
    };
    let Some(redis::Value::Array(parts)) = items.into_iter().next() else {
        return;
    };
    let id = match parts.into_iter().next() {
        Some(redis::Value::BulkString(b)) => String::from_utf8(b).unwrap(),
        Some(redis::Value::SimpleString(s)) => s,
        _ => return,
    };
    let last_ms: u64 = id.split('-').next().unwrap().parse().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
        if secs * 1000 + micros / 1000 > last_ms {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Redis's clock did not pass {id}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn del(con: &mut redis::Connection, key: &str) {
    let _: i64 = redis::cmd("DEL").arg(key).query(con).unwrap();
}

fn get(con: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(con).unwrap()
}

fn set(con: &mut redis::Connection, key: &str, value: &[u8]) {
    let _: () = redis::cmd("SET").arg(key).arg(value).query(con).unwrap();
}

fn is_campaign_allowed(v: &Verdict) -> bool {
    v.level == Level::Allowed(AllowReason::Campaign)
}

fn dirs<const N: usize>() -> [tempfile::TempDir; N] {
    std::array::from_fn(|_| tempfile::tempdir().unwrap())
}

/// A genuine entry appended again 25 times (the same sealed bytes) counts
/// once: on the host that wrote it, on another running host and on a host
/// that starts afterwards; `bulkwatch_redis_entries_again_total` counts
/// the copies.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_copied_entry_counts_once_on_every_host() {
    let server = RedisServer::start();
    let [da, db, dc] = dirs();
    let a = Host::new(&server, "copies", da.path());
    let b_cfg = host_cfg(&server, "copies", db.path());
    let b_state = State::new(Engine::new(&b_cfg)).with_redis(layer(&b_cfg));
    let b = b_state.redis().unwrap();
    for n in 1..=3 {
        a.judge(n);
    }
    assert_eq!(messages(&judged_on(b, &b_cfg, 4)), 4);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let log = xrange(&mut con, &key);
    assert_eq!(log.len(), 4);
    for _ in 0..25 {
        xadd(&mut con, &key, "*", &log[1].1);
    }
    let v = a.judge(5);
    assert_eq!((messages(&v), recipients(&v)), (5, 5), "on the writer");
    assert_eq!(v.level, Level::Bulk);
    let v = judged_on(b, &b_cfg, 6);
    assert_eq!(messages(&v), 6, "on another running host");
    let c = Host::new(&server, "copies", dc.path());
    assert_eq!(messages(&c.judge(7)), 7, "on a host that starts after");
    assert!(a.again() >= 25, "again: {}", a.again());
    assert!(b.integrity().again.load(Ordering::Relaxed) >= 25);
    assert!(c.again() >= 25);
    assert!(metric(&b_state, "bulkwatch_redis_entries_again_total") >= 25);
}

/// Genuine entries saved, the log deleted, and the saved copies appended
/// again much later (after more mail): the hosts that applied them keep
/// their counts and count the copies as nothing.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_copy_appended_after_the_log_was_deleted_counts_once() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "later", da.path());
    let b = Host::new(&server, "later", db.path());
    for n in 1..=3 {
        a.judge(n);
    }
    assert_eq!(messages(&b.judge(4)), 4);
    // a reads b's message before the log goes.
    a.store.site().unwrap();
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let saved = xrange(&mut con, &key);
    clock_past_log(&mut con, &key);
    del(&mut con, &key);
    assert_eq!(messages(&a.judge(5)), 5);
    assert_eq!(messages(&b.judge(6)), 6);
    for round in 0..3 {
        for e in &saved {
            xadd(&mut con, &key, "*", &e.1);
        }
        let v = a.judge(7 + 2 * round);
        assert_eq!(messages(&v), 7 + 2 * round, "round {round} on a");
        let v = b.judge(8 + 2 * round);
        assert_eq!(messages(&v), 8 + 2 * round, "round {round} on b");
    }
    for h in [&a, &b] {
        assert!(h.store.integrity().cuts.load(Ordering::Relaxed) >= 1);
        assert!(h.again() >= 12, "again {}", h.again());
    }
}

/// A genuine entry's sealed bytes appended under another field name (the
/// older format's "o"), with a field added, or with a byte changed: no
/// host applies them.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_copy_under_another_field_or_shape_counts_nothing() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "shapes", da.path());
    let b = Host::new(&server, "shapes", db.path());
    a.judge(1);
    a.judge(2);
    assert_eq!(messages(&b.judge(3)), 3);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let log = xrange(&mut con, &key);
    let value = log[0].1[1].clone();
    for _ in 0..5 {
        xadd(&mut con, &key, "*", &[b"o".to_vec(), value.clone()]);
        xadd(
            &mut con,
            &key,
            "*",
            &[b"i".to_vec(), value.clone(), b"x".to_vec(), b"1".to_vec()],
        );
        xadd(&mut con, &key, "*", &[b"I".to_vec(), value.clone()]);
        let mut flipped = value.clone();
        flipped[3] ^= 1;
        xadd(&mut con, &key, "*", &[b"i".to_vec(), flipped]);
    }
    assert_eq!(messages(&a.judge(4)), 4);
    assert_eq!(messages(&b.judge(5)), 5);
    assert!(a.store.integrity().unsealed.load(Ordering::Relaxed) >= 5);
}

/// Entries deleted one by one (`XDEL`) after the hosts applied them take
/// nothing from them; an entry deleted before a host read it is counted
/// as missing once its writer is far enough past it.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_deleted_entries_take_nothing_from_running_hosts() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "xdel", da.path());
    let b = Host::new(&server, "xdel", db.path());
    for n in 1..=3 {
        a.judge(n);
    }
    b.judge(4);
    assert_eq!(messages(&a.judge(5)), 5);
    // b reads a's last message before the entries go.
    b.store.site().unwrap();
    let mut con = raw(&server);
    let key = log_key(&a.store);
    for (id, _) in xrange(&mut con, &key) {
        let _: i64 = redis::cmd("XDEL")
            .arg(&key)
            .arg(&id)
            .query(&mut con)
            .unwrap();
    }
    let v = b.judge(6);
    assert_eq!((messages(&v), v.level), (6, Level::Bulk));
    assert_eq!(messages(&a.judge(7)), 7);
    assert_eq!(messages(&b.judge(8)), 8);
    // One of a's entries removed before b reads it, then a goes on far
    // past it (4,200 entries): b counts it missing.
    a.judge(9);
    let last = xrange(&mut con, &key).pop().unwrap().0;
    let _: i64 = redis::cmd("XDEL")
        .arg(&key)
        .arg(&last)
        .query(&mut con)
        .unwrap();
    let env = bulkwatch::engine::Envelope {
        rcpts: vec!["filler@example.net".into()],
        ..Default::default()
    };
    let an = bulkwatch::engine::analyze(&common::spam_bytes(1000), &env, &a.cfg);
    let obs = bulkwatch::engine::observe(&a.cfg, &an, &env).unwrap();
    for k in 0..4200u64 {
        let _ = a.store.record(&obs, UnixSecs(REPLAY_EPOCH + 10 + k / 100));
    }
    for _ in 0..20 {
        b.store.site().unwrap();
    }
    let missing = b.store.integrity().missing.load(Ordering::Relaxed);
    assert!(missing >= 1, "missing: {missing}");
}

/// The log deleted (`DEL`) after every second message: both hosts keep
/// counting the one campaign and say the log was cut.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_deleting_the_log_again_and_again_keeps_counts() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "dels", da.path());
    let b = Host::new(&server, "dels", db.path());
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let mut last = None;
    for n in 1..=12u32 {
        let h = if n % 2 == 0 { &b } else { &a };
        let v = h.judge(n);
        assert_eq!(messages(&v), n, "message {n}");
        if n % 2 == 0 {
            // a reads b's message first: what a host applied is what it
            // must keep.
            a.store.site().unwrap();
            clock_past_log(&mut con, &key);
            del(&mut con, &key);
        }
        last = Some(v);
    }
    assert_eq!(last.unwrap().level, Level::Bulk);
    for h in [&a, &b] {
        assert!(h.store.integrity().cuts.load(Ordering::Relaxed) >= 2);
    }
}

/// A domain allowance set, then withdrawn; the writer without the key
/// writes the head that allowed it back: neither running host allows the
/// domain again, a host restarted with its state directory does not
/// either, and the newer head is written back (`head_rollbacks`,
/// `head_repairs`).
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_an_old_head_written_back_does_not_restore_a_withdrawn_domain() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "oldhead", da.path());
    let b = Host::new(&server, "oldhead", db.path());
    let domain = "news.shop.example";
    let has = |h: &Host| {
        h.store
            .domain_allowances()
            .unwrap()
            .iter()
            .any(|(d, _)| d == domain)
    };
    a.store
        .set_domain_allowance(domain, Some(u64::MAX))
        .unwrap();
    assert!(has(&b), "b sees the allowance");
    let mut con = raw(&server);
    let hk = head_key(&a.store);
    let allowed_head = get(&mut con, &hk).expect("a head");
    a.store.set_domain_allowance(domain, None).unwrap();
    assert!(!has(&b), "b sees the withdrawal");
    set(&mut con, &hk, &allowed_head);
    assert!(!has(&b), "an old head does not allow it again on b");
    assert!(!has(&a), "nor on a");
    let i = b.store.integrity();
    assert!(i.rollbacks.load(Ordering::Relaxed) >= 1);
    assert!(
        i.repairs.load(Ordering::Relaxed) + a.store.integrity().repairs.load(Ordering::Relaxed)
            >= 1
    );
    assert_ne!(get(&mut con, &hk).as_deref(), Some(&allowed_head[..]));
    // b restarts with its state directory, the old head written back
    // again meanwhile.
    drop(b);
    set(&mut con, &hk, &allowed_head);
    let b2 = Host::new(&server, "oldhead", db.path());
    assert!(!has(&b2), "a restarted host remembers the withdrawal");
    assert!(!has(&a));
}

/// The head deleted, or replaced by junk: no host that saw the withdrawal
/// allows the domain again, and the head is written back.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_deleted_or_junk_head_does_not_restore_a_withdrawn_domain() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "junkhead", da.path());
    let b = Host::new(&server, "junkhead", db.path());
    let kept = "kept.example";
    let gone = "gone.example";
    let domains = |h: &Host| -> Vec<String> {
        h.store
            .domain_allowances()
            .unwrap()
            .into_iter()
            .map(|(d, _)| d)
            .collect()
    };
    a.store.set_domain_allowance(kept, Some(u64::MAX)).unwrap();
    a.store.set_domain_allowance(gone, Some(u64::MAX)).unwrap();
    assert!(domains(&b).contains(&gone.to_owned()));
    b.store.set_domain_allowance(gone, None).unwrap();
    assert_eq!(domains(&a), vec![kept.to_owned()]);
    let mut con = raw(&server);
    let hk = head_key(&a.store);
    del(&mut con, &hk);
    assert_eq!(domains(&a), vec![kept.to_owned()], "after DEL");
    assert!(get(&mut con, &hk).is_some(), "the head is written back");
    set(&mut con, &hk, b"BWHD\x01 junk that is not sealed");
    assert_eq!(domains(&b), vec![kept.to_owned()], "after junk");
    assert_ne!(
        get(&mut con, &hk).as_deref(),
        Some(&b"BWHD\x01 junk that is not sealed"[..])
    );
    let rollbacks = a.store.integrity().rollbacks.load(Ordering::Relaxed)
        + b.store.integrity().rollbacks.load(Ordering::Relaxed);
    assert!(rollbacks >= 2, "rollbacks {rollbacks}");
}

/// What the campaign-allowance tests share: hosts a and b, a campaign of
/// 6 copies (bulk), allowed by a at E+100 (b then allows copy 7) and
/// withdrawn by a at E+200 (b then judges copy 8 bulk, and reads the head
/// as the daemon does every 10 s). Returns the hosts, the campaign, the
/// sealed head that allowed it, the allow entry and the withdrawal's id.
struct Withdrawn {
    a: Host,
    b: Host,
    allowed_head: Vec<u8>,
    allow_entry: RawEntry,
    withdrawal_id: String,
}

fn allowed_then_withdrawn(server: &RedisServer, prefix: &str, da: &Path, db: &Path) -> Withdrawn {
    let a = Host::new(server, prefix, da);
    let b = Host::new(server, prefix, db);
    for n in 1..=5 {
        a.judge(n);
    }
    let v = b.judge(6);
    assert_eq!(v.level, Level::Bulk);
    let id = campaign_id(&v);
    let mut con = raw(server);
    let key = log_key(&a.store);
    let before = xrange(&mut con, &key).len();
    a.store
        .correct(
            Correction::Allow {
                id,
                until: WHILE_LIVE,
            },
            UnixSecs(REPLAY_EPOCH + 100),
        )
        .unwrap()
        .expect("a live campaign");
    let log = xrange(&mut con, &key);
    assert_eq!(log.len(), before + 1, "one allow entry");
    let allow_entry = log[before].clone();
    let allowed_head = get(&mut con, &head_key(&a.store)).expect("a head");
    assert!(is_campaign_allowed(&b.judge(7)), "b honours the allowance");
    a.store
        .correct(
            Correction::Allow { id, until: 0 },
            UnixSecs(REPLAY_EPOCH + 200),
        )
        .unwrap()
        .expect("a live campaign");
    let log = xrange(&mut con, &key);
    let withdrawal_id = log.last().unwrap().0.clone();
    let v = b.judge(8);
    assert!(!is_campaign_allowed(&v), "b sees the withdrawal: {v:?}");
    // The daemon reads the head every 10 s (with the domain allowances).
    b.store.domain_allowances().unwrap();
    assert!(
        db.join("head.bin").is_file(),
        "b keeps the head it verified"
    );
    Withdrawn {
        a,
        b,
        allowed_head,
        allow_entry,
        withdrawal_id,
    }
}

/// A campaign allowance withdrawn; the writer without the key deletes the
/// withdrawal's entry, appends the allow entry again and writes the old
/// head back: the running hosts never allow the campaign again.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_withdrawn_campaign_allowance_stays_withdrawn_on_running_hosts() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let w = allowed_then_withdrawn(&server, "running", da.path(), db.path());
    let mut con = raw(&server);
    let key = log_key(&w.a.store);
    let _: i64 = redis::cmd("XDEL")
        .arg(&key)
        .arg(&w.withdrawal_id)
        .query(&mut con)
        .unwrap();
    for _ in 0..3 {
        xadd(&mut con, &key, "*", &w.allow_entry.1);
    }
    set(&mut con, &head_key(&w.a.store), &w.allowed_head);
    let v = w.b.judge(9);
    assert!(!is_campaign_allowed(&v), "b allowed it again: {v:?}");
    w.b.store.domain_allowances().unwrap();
    for (h, n) in [(&w.b, 10), (&w.a, 11), (&w.b, 12)] {
        let v = h.judge(n);
        assert!(!is_campaign_allowed(&v), "copy {n} allowed again: {v:?}");
        assert_eq!(v.level, Level::Bulk);
    }
    assert!(w.b.again() >= 3);
    let rb = w.a.store.integrity().rollbacks.load(Ordering::Relaxed)
        + w.b.store.integrity().rollbacks.load(Ordering::Relaxed);
    assert!(rb >= 1, "the old head is a rollback");
}

/// A campaign allowance withdrawn; while host b is stopped, the writer
/// without the key deletes only the withdrawal's log entry (the head is
/// left as it is). A host that starts new (no head.bin) learns the
/// withdrawal from the head; b, restarted with its state directory
/// (head.bin holds the withdrawal), must not allow the campaign again.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_withdrawn_campaign_allowance_stays_withdrawn_after_a_restart() {
    let server = RedisServer::start();
    let [da, db, dc] = dirs();
    let w = allowed_then_withdrawn(&server, "restart", da.path(), db.path());
    let Withdrawn {
        a,
        b,
        withdrawal_id,
        ..
    } = w;
    drop(b);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let _: i64 = redis::cmd("XDEL")
        .arg(&key)
        .arg(&withdrawal_id)
        .query(&mut con)
        .unwrap();
    let c = Host::new(&server, "restart", dc.path());
    let v = c.judge(9);
    assert!(!is_campaign_allowed(&v), "a new host allowed it: {v:?}");
    let b2 = Host::new(&server, "restart", db.path());
    let v = b2.judge(10);
    assert!(
        !is_campaign_allowed(&v),
        "b, restarted with the head that withdrew it, allowed it again: {v:?}"
    );
    assert!(!is_campaign_allowed(&a.judge(11)));
}

/// As above, and the writer without the key also writes the head that
/// allowed it back and appends the allow entry again: b, restarted with
/// its state directory, must not allow the campaign again.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_restarted_host_ignores_an_old_head_and_a_copied_allow() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let w = allowed_then_withdrawn(&server, "restart2", da.path(), db.path());
    let Withdrawn {
        a,
        b,
        allowed_head,
        allow_entry,
        withdrawal_id,
    } = w;
    drop(b);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let _: i64 = redis::cmd("XDEL")
        .arg(&key)
        .arg(&withdrawal_id)
        .query(&mut con)
        .unwrap();
    xadd(&mut con, &key, "*", &allow_entry.1);
    set(&mut con, &head_key(&a.store), &allowed_head);
    let b2 = Host::new(&server, "restart2", db.path());
    let v = b2.judge(9);
    assert!(
        !is_campaign_allowed(&v),
        "b, restarted with the head that withdrew it, allowed it again: {v:?}"
    );
    assert!(b2.store.integrity().rollbacks.load(Ordering::Relaxed) >= 1);
    assert_ne!(
        get(&mut con, &head_key(&a.store)).as_deref(),
        Some(&allowed_head[..]),
        "the newer head is written back"
    );
}

/// 20,000 junk entries of every shape (wrong seals, wrong field names,
/// extra fields, empty values) appended between two messages: the next
/// message on each host still gets Redis's answer (not the local
/// verdict), the counts go on, and the junk is counted as unsealed.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_junk_flood_still_gets_redis_answer() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let mk = |d: &Path| {
        let mut cfg = host_cfg(&server, "junk", d);
        cfg.window.max_entries = 50_000;
        Host {
            store: layer(&cfg),
            cfg,
        }
    };
    let a = mk(da.path());
    let b = mk(db.path());
    a.judge(1);
    b.judge(2);
    a.judge(3);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let mut p = redis::pipe();
    for k in 0..20_000u32 {
        let junk: Vec<u8> = (0..60u32).map(|j| (k.wrapping_mul(31) ^ j) as u8).collect();
        let c = p.cmd("XADD").arg(&key).arg("*");
        match k % 5 {
            0 => c.arg("i").arg(junk),
            1 => c.arg("o").arg(junk),
            2 => c.arg("i").arg(junk).arg("j").arg("x"),
            3 => c.arg("i").arg(""),
            _ => c.arg("z").arg(junk),
        };
        c.ignore();
    }
    let _: () = p.query(&mut con).unwrap();
    let v = b.judge(4);
    assert_eq!(messages(&v), 4);
    let v = a.judge(5);
    assert_eq!((messages(&v), v.level), (5, Level::Bulk));
    assert!(b.store.integrity().unsealed.load(Ordering::Relaxed) >= 4_000);
}

/// Entries with odd ids: a junk entry and a genuine entry's copy dated
/// days in the future, the log deleted after them (new ids below the
/// hosts' last), an entry with the largest id there is, the log's key
/// replaced by a string: each host still gets Redis's answer and counts on.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_entries_with_odd_ids_change_no_count() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "ids", da.path());
    let b = Host::new(&server, "ids", db.path());
    a.judge(1);
    assert_eq!(messages(&b.judge(2)), 2);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let genuine = xrange(&mut con, &key)[0].1.clone();
    let future = (bulkwatch::milter::unix_now() + 10 * 86_400) * 1000;
    xadd(
        &mut con,
        &key,
        &format!("{future}-0"),
        &[b"i".to_vec(), b"junk".to_vec()],
    );
    xadd(&mut con, &key, &format!("{future}-5"), &genuine);
    assert_eq!(messages(&a.judge(3)), 3, "after future ids, on a");
    assert_eq!(messages(&b.judge(4)), 4, "after future ids, on b");
    a.store.site().unwrap();
    del(&mut con, &key);
    assert_eq!(messages(&a.judge(5)), 5, "the log made anew below a's last");
    assert_eq!(messages(&b.judge(6)), 6, "the log made anew below b's last");
    a.store.site().unwrap();
    clock_past_log(&mut con, &key);
    xadd(
        &mut con,
        &key,
        "18446744073709551615-18446744073709551615",
        &[b"i".to_vec(), b"junk".to_vec()],
    );
    assert_eq!(messages(&a.judge(7)), 7, "after the largest id");
    assert_eq!(messages(&b.judge(8)), 8);
    a.store.site().unwrap();
    clock_past_log(&mut con, &key);
    del(&mut con, &key);
    set(&mut con, &key, b"not a stream");
    assert_eq!(messages(&b.judge(9)), 9, "after WRONGTYPE");
    let v = a.judge(10);
    assert_eq!((messages(&v), v.level), (10, Level::Bulk));
    assert!(a.store.wrongtype_repairs() + b.store.wrongtype_repairs() >= 2);
}

/// The writer without the key puts the log's ids days in the future (a
/// junk entry), lets the hosts append after it, then deletes the log and
/// writes one junk entry just below the hosts' last id: the next genuine
/// entry gets exactly that last id. Each host must still count that
/// message once and answer for it (not with the outcome of the entry that
/// held the id before).
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_log_made_anew_at_a_hosts_last_id_changes_no_count() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "reuse", da.path());
    let b = Host::new(&server, "reuse", db.path());
    a.judge(1);
    assert_eq!(messages(&b.judge(2)), 2);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let future = (bulkwatch::milter::unix_now() + 10 * 86_400) * 1000;
    xadd(
        &mut con,
        &key,
        &format!("{future}-0"),
        &[b"i".to_vec(), b"junk".to_vec()],
    );
    assert_eq!(messages(&a.judge(3)), 3);
    assert_eq!(messages(&b.judge(4)), 4);
    a.store.site().unwrap();
    let last = xrange(&mut con, &key).pop().unwrap().0;
    let (ms, seq) = last.split_once('-').unwrap();
    let seq: u64 = seq.parse().unwrap();
    assert!(seq >= 1, "{last}");
    del(&mut con, &key);
    xadd(
        &mut con,
        &key,
        &format!("{ms}-{}", seq - 1),
        &[b"i".to_vec(), b"junk".to_vec()],
    );
    let v = a.judge(5);
    assert_eq!(
        (messages(&v), recipients(&v)),
        (5, 5),
        "a's message 5 in a log made anew at a's last id ({last})"
    );
    let v = b.judge(6);
    assert_eq!((messages(&v), v.level), (6, Level::Bulk), "on b");
}

/// A genuine entry saved by the writer without the key and appended again
/// after 1,100 other host starts (each start is a new writer): the host
/// that applied it long ago still counts it once.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn redis_a_copy_replayed_after_many_host_starts_counts_once() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "starts", da.path());
    let b = Host::new(&server, "starts", db.path());
    for n in 1..=4 {
        a.judge(n);
    }
    assert_eq!(messages(&b.judge(5)), 5);
    let mut con = raw(&server);
    let key = log_key(&a.store);
    let saved = xrange(&mut con, &key)[1].1.clone();
    let nowhere = da.path().join("no-such-dir");
    for k in 0..1_100u64 {
        clock_past_log(&mut con, &key);
        del(&mut con, &key);
        let mut cfg = host_cfg(&server, "starts", &nowhere);
        cfg.window.max_entries = 1_000;
        cfg.exact.bloom_items = 1_000;
        let other = layer(&cfg);
        let obs = common::synthetic::synthetic(k, &cfg);
        // (Dated as the site's clock stands: no later than b's next.)
        let _ = other.record(&obs, UnixSecs(REPLAY_EPOCH + 5));
        b.store.site().unwrap();
    }
    clock_past_log(&mut con, &key);
    del(&mut con, &key);
    xadd(&mut con, &key, "*", &saved);
    let v = b.judge(6);
    assert_eq!(
        messages(&v),
        6,
        "a copy of an entry b applied long ago counted again"
    );
}

// ---------------------------------------------------------------------
// 4b. Ordinary Redis sharing
// ---------------------------------------------------------------------

/// Two hosts sharing Redis, no attacker: they take turns, see one
/// campaign with one id and the same counts, and a third host that starts
/// later agrees.
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn ordinary_two_hosts_agree_on_one_campaign() {
    let server = RedisServer::start();
    let [da, db, dc] = dirs();
    let a = Host::new(&server, "plain", da.path());
    let b = Host::new(&server, "plain", db.path());
    let mut id = None;
    for n in 1..=8u32 {
        let h = if n % 2 == 0 { &b } else { &a };
        let v = h.judge(n);
        if n > 1 || v.campaign.is_some() {
            assert_eq!((messages(&v), recipients(&v)), (n, u64::from(n)));
        }
        if n > 1 {
            let this = campaign_id(&v);
            assert_eq!(*id.get_or_insert(this), this, "one campaign id");
        }
        let want = match n {
            1..=2 => Level::Clean,
            3..=4 => Level::Suspect,
            _ => Level::Bulk,
        };
        assert_eq!(v.level, want, "message {n}");
    }
    let c = Host::new(&server, "plain", dc.path());
    let v = c.judge(9);
    assert_eq!((messages(&v), campaign_id(&v)), (9, id.unwrap()));
    for h in [&a, &b, &c] {
        let i = h.store.integrity();
        assert_eq!(i.again.load(Ordering::Relaxed), 0);
        assert_eq!(i.cuts.load(Ordering::Relaxed), 0);
        assert_eq!(i.unsealed.load(Ordering::Relaxed), 0);
        assert_eq!(i.rollbacks.load(Ordering::Relaxed), 0);
    }
}

/// An allowance set on one host, not withdrawn, is honoured by the other:
/// a campaign allowance (the next copy judged there is allowed) and a
/// domain allowance (the other host's list holds it, and still does after
/// a restart).
#[test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
fn ordinary_allowances_set_on_one_host_are_honoured_by_the_other() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let a = Host::new(&server, "allow", da.path());
    let b = Host::new(&server, "allow", db.path());
    for n in 1..=5 {
        a.judge(n);
    }
    let v = b.judge(6);
    assert_eq!(v.level, Level::Bulk);
    a.store
        .correct(
            Correction::Allow {
                id: campaign_id(&v),
                until: WHILE_LIVE,
            },
            UnixSecs(REPLAY_EPOCH + 50),
        )
        .unwrap()
        .expect("live");
    assert!(is_campaign_allowed(&b.judge(7)));
    assert!(is_campaign_allowed(&a.judge(8)));
    a.store
        .set_domain_allowance("news.shop.example", Some(u64::MAX))
        .unwrap();
    let has = |h: &Host| {
        h.store
            .domain_allowances()
            .unwrap()
            .iter()
            .any(|(d, _)| d == "news.shop.example")
    };
    assert!(has(&b));
    drop(b);
    let b2 = Host::new(&server, "allow", db.path());
    assert!(has(&b2));
    assert!(is_campaign_allowed(&b2.judge(9)), "after a restart");
}

// ---------------------------------------------------------------------
// 3. Forged Authentication-Results
// ---------------------------------------------------------------------

const SITE: &str = "mx.site.example";

fn auth_config() -> Config {
    let mut cfg = common::config();
    cfg.allow.authserv_ids = vec![SITE.to_owned()];
    cfg
}

/// A milter that trusts `mx.site.example` and allows `shop.example`
/// through the control API.
async fn with_allowed_domain(domain: &str) -> Milter {
    let m = common::start_state(State::new(Engine::new(&auth_config()))).await;
    let answer = m.state.control.handle(
        &m.state,
        &format!("allow-domain {domain}"),
        bulkwatch::milter::unix_now(),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    m
}

fn h(k: &str, v: &str) -> (String, String) {
    (k.to_owned(), v.to_owned())
}

/// Postfix's own Received header for copy `i`.
fn postfix_received(i: usize) -> (String, String) {
    h(
        "Received",
        &format!(
            "from mta.shop.example (mta.shop.example [198.51.100.20])\n\tby {SITE} (Postfix) \
             with ESMTP id Q{i}\n\tfor <{}@example.net>; Mon, 1 Apr 2024 10:00:{:02} +0000",
            name(i),
            i % 60
        ),
    )
}

/// Copy `i` of Shop Example's newsletter with `top` headers above the
/// sender's header and `below` after it.
fn newsletter(i: usize, top: Vec<(String, String)>, below: Vec<(String, String)>) -> Mail {
    let who = name(i);
    let mut headers = top;
    headers.extend([
        h("From", "Shop Example <news@shop.example>"),
        h("To", &format!("{who} <{who}@example.net>")),
        h("Subject", "Shop Example: the April issue"),
        h("Date", "Mon, 1 Apr 2024 10:00:00 +0000"),
        h("Message-ID", &format!("<april.{i}@news.shop.example>")),
    ]);
    headers.extend(below);
    Mail {
        headers,
        body: format!(
            "Hello {who},\r\n\r\nThis month at Shop Example: the spring collection is here, with \
             new colours for the garden chairs and a recipe for rhubarb cake from our kitchen \
             team. Members get ten percent off everything until the end of the month, and \
             delivery is free on orders above fifty euros.\r\n\r\nRead the whole issue at \
             https://news.shop.example/2024/04?u={i}. To stop receiving this newsletter, follow \
             https://news.shop.example/unsubscribe?u={i}.\r\n"
        ),
        rcpt: format!("<{who}@example.net>"),
        queue_id: format!("Q{i}"),
    }
}

/// Sends `copies` copies of the newsletter, copy `i` with the headers
/// `headers(i)` gives (above the sender's, below it); answers each copy's
/// `X-Bulkwatch` value.
async fn send_newsletters(
    m: &Milter,
    copies: usize,
    headers: impl Fn(usize) -> (Vec<(String, String)>, Vec<(String, String)>),
) -> Vec<Option<String>> {
    let mut tags = Vec::new();
    for i in 0..copies {
        let (top, below) = headers(i);
        let mail = newsletter(i, top, below);
        let (actions, status) = common::send_from(
            m.addr,
            common::Client::At([198, 51, 100, 20]),
            &mail,
            "<bounce@shop.example>",
            std::slice::from_ref(&mail.rcpt),
        )
        .await;
        assert_eq!(status, Status::Accept, "copy {i}");
        tags.push(tag_of(&actions));
    }
    tags
}

/// The campaign was judged as any other: no copy allowed by the domain,
/// the last ones bulk.
fn assert_not_allowed(m: &Milter, tags: &[Option<String>]) {
    assert_eq!(
        m.state.metrics.allowed(AllowReason::Domain),
        0,
        "forged headers let copies through as the allowed domain's: {tags:?}"
    );
    let last = tags.last().unwrap().clone().unwrap_or_default();
    assert!(
        last.starts_with("bulk"),
        "the last copy: {last:?}; all: {tags:?}"
    );
}

/// The allowed domain's copies were all allowed, untagged.
fn assert_all_allowed(m: &Milter, tags: &[Option<String>]) {
    assert_eq!(
        m.state.metrics.allowed(AllowReason::Domain),
        tags.len() as u64,
        "{tags:?}"
    );
    assert!(tags.iter().all(Option::is_none), "{tags:?}");
}

/// A forged header at the top of the message whose authserv-id follows a
/// comment (`(x) mx.site.example; dkim=pass ...`, comments of several
/// shapes): not trusted.
#[tokio::test]
async fn auth_forged_comment_before_the_authserv_id() {
    let m = with_allowed_domain("shop.example").await;
    let forms = [
        format!("(x) {SITE}; dkim=pass header.d=shop.example"),
        format!("(mx (nested) comment) {SITE}; dkim=pass header.d=shop.example"),
        format!("(){SITE}; dmarc=pass header.from=shop.example"),
        format!("(\\) ) {SITE}; dkim=pass header.i=@shop.example"),
        format!(" (a;b) {SITE} ; dkim=pass header.d=shop.example"),
    ];
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h("Authentication-Results", &forms[i % forms.len()]),
            ],
            vec![],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// A forged header at the top whose authserv-id is quoted (RFC 8601
/// allows a quoted-string value): not trusted.
#[tokio::test]
async fn auth_forged_quoted_authserv_id() {
    let m = with_allowed_domain("shop.example").await;
    let forms = [
        format!("\"{SITE}\"; dkim=pass header.d=shop.example"),
        format!("\"{SITE}\" 1; dmarc=pass header.from=shop.example"),
        "\"mx.site\\.example\"; dkim=pass header.d=shop.example".to_string(),
        format!(
            "  \"{}\";dkim=pass header.d=shop.example",
            SITE.to_uppercase()
        ),
    ];
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h("Authentication-Results", &forms[i % forms.len()]),
            ],
            vec![],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// A forged header at the top folded over lines before, inside or right
/// after its authserv-id (LF and CRLF folds, tabs and spaces): not
/// trusted.
#[tokio::test]
async fn auth_forged_folded_header() {
    let m = with_allowed_domain("shop.example").await;
    let forms = [
        format!("\n\t{SITE}; dkim=pass header.d=shop.example"),
        format!("\r\n {SITE};\r\n\tdkim=pass header.d=shop.example"),
        format!("{SITE}\n\t; dkim=pass header.d=shop.example"),
        format!("{SITE}\r\n ;\r\n dmarc=pass header.from=shop.example"),
        format!("  \n  {SITE}; dkim=pass header.d=shop.example"),
    ];
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h("Authentication-Results", &forms[i % forms.len()]),
            ],
            vec![],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// A forged header in the plain form, but below the sender's own header
/// fields, in other letter case and with extra whitespace: not trusted.
#[tokio::test]
async fn auth_forged_plain_header_below_the_senders_headers_in_any_case() {
    let m = with_allowed_domain("shop.example").await;
    let forms = [
        (
            "Authentication-Results",
            format!("{SITE}; dkim=pass header.d=shop.example"),
        ),
        (
            "AUTHENTICATION-RESULTS",
            format!("{}; DKIM=PASS HEADER.D=SHOP.EXAMPLE", SITE.to_uppercase()),
        ),
        (
            "authentication-results",
            format!("\t {SITE}  ;  dkim = pass  header.d = shop.example"),
        ),
        (
            "Authentication-Results",
            format!("{SITE} 1; dmarc=pass header.from=shop.example"),
        ),
    ];
    let tags = send_newsletters(&m, 8, |i| {
        let (k, v) = &forms[i % forms.len()];
        (vec![postfix_received(i)], vec![h(k, v)])
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// A forged plain header placed after a Received line the sender wrote
/// (a second Received: the site's block has ended), several of them:
/// not trusted.
#[tokio::test]
async fn auth_forged_header_below_a_senders_received_line() {
    let m = with_allowed_domain("shop.example").await;
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h(
                    "Received",
                    "from [10.0.0.5] by mta.shop.example with ESMTP; Mon, 1 Apr 2024 09:59:00 +0000",
                ),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=pass header.d=shop.example"),
                ),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dmarc=pass header.from=shop.example"),
                ),
            ],
            vec![],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// The site's own header at the top says dkim=fail (or none); the sender
/// adds passing ones: right beneath it in the block in non-plain forms,
/// and plain ones further down. Not allowed.
#[tokio::test]
async fn auth_site_header_failing_at_top_with_forged_passing_ones() {
    let m = with_allowed_domain("shop.example").await;
    let tags = send_newsletters(&m, 8, |i| {
        let site = if i % 2 == 0 {
            format!("{SITE}; dkim=fail (bad signature) header.d=shop.example; dmarc=fail header.from=shop.example")
        } else {
            format!("{SITE}; dkim=none; dmarc=none header.from=shop.example")
        };
        (
            vec![
                postfix_received(i),
                h("Authentication-Results", &site),
                h(
                    "Authentication-Results",
                    &format!("(forged) {SITE}; dkim=pass header.d=shop.example"),
                ),
                h(
                    "Authentication-Results",
                    &format!("\"{SITE}\"; dmarc=pass header.from=shop.example"),
                ),
            ],
            vec![
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=pass header.d=shop.example"),
                ),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dmarc=pass header.from=shop.example"),
                ),
            ],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

/// The site's own header passes, but for another domain than the From
/// domain (the sender's own signature, a look-alike, a parent of the
/// allowed domain, a domain inside a comment): not allowed.
#[tokio::test]
async fn auth_site_header_passing_for_another_domain() {
    let m = with_allowed_domain("shop.example").await;
    let forms = [
        format!("{SITE}; dkim=pass header.d=bulk-sender.example"),
        format!("{SITE}; dkim=pass header.d=shop.example.bulk-sender.example"),
        format!("{SITE}; dkim=pass header.d=evilshop.example"),
        format!("{SITE}; dkim=pass (header.d=shop.example) header.d=mailer.example"),
        format!("{SITE}; spf=pass smtp.mailfrom=shop.example"),
        format!("{SITE}; dmarc=pass header.from=bulk-sender.example"),
    ];
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h("Authentication-Results", &forms[i % forms.len()]),
            ],
            vec![],
        )
    })
    .await;
    assert_not_allowed(&m, &tags);
}

// ---------------------------------------------------------------------
// 4c. Ordinary allowed newsletters
// ---------------------------------------------------------------------

/// The site's authenticator's header at the top (right below Postfix's
/// Received), plain, dkim=pass for the From domain: every copy of the
/// allowed domain's newsletter is allowed, untagged.
#[tokio::test]
async fn ordinary_newsletter_with_the_sites_genuine_pass_header_is_allowed() {
    let m = with_allowed_domain("shop.example").await;
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h(
                    "Authentication-Results",
                    &format!(
                        "{SITE};\n\tdkim=pass (2048-bit key; unprotected) header.d=shop.example \
                         header.i=@shop.example header.a=rsa-sha256 header.s=s1 header.b=AbCd"
                    ),
                ),
            ],
            vec![],
        )
    })
    .await;
    assert_all_allowed(&m, &tags);
}

/// Two authenticators of the site: OpenDKIM's header above Postfix's
/// Received (a milter inserting at 0) says fail, OpenDMARC's below it says
/// dmarc=pass: allowed. The allowance names news.shop.example; mail from
/// its subdomain signed by shop.example (relaxed alignment) is allowed.
#[tokio::test]
async fn ordinary_genuine_headers_of_two_authenticators_around_postfix_received() {
    let m = with_allowed_domain("news.shop.example").await;
    let mut tags = Vec::new();
    for i in 0..6 {
        let mut mail = newsletter(
            i,
            vec![
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=fail header.d=news.shop.example"),
                ),
                postfix_received(i),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dmarc=pass (p=none dis=none) header.from=news.shop.example"),
                ),
            ],
            vec![],
        );
        if i % 2 == 1 {
            mail.headers = newsletter(
                i,
                vec![
                    postfix_received(i),
                    h(
                        "Authentication-Results",
                        &format!("{SITE} 1; dkim=pass header.d=shop.example"),
                    ),
                ],
                vec![],
            )
            .headers;
            for (k, v) in mail.headers.iter_mut() {
                if k == "From" {
                    *v = "Shop Example <news@eu.news.shop.example>".into();
                }
            }
        } else {
            for (k, v) in mail.headers.iter_mut() {
                if k == "From" {
                    *v = "Shop Example <letters@news.shop.example>".into();
                }
            }
        }
        let (actions, status) = common::send_from(
            m.addr,
            common::Client::At([198, 51, 100, 20]),
            &mail,
            "<bounce@news.shop.example>",
            std::slice::from_ref(&mail.rcpt),
        )
        .await;
        assert_eq!(status, Status::Accept);
        tags.push(tag_of(&actions));
    }
    assert_all_allowed(&m, &tags);
}

/// A genuine passing header at the top, and the sender's forged ones of
/// every form below: the newsletter is still allowed (forgeries spoil
/// nothing).
#[tokio::test]
async fn ordinary_genuine_header_is_not_spoiled_by_forged_ones_below() {
    let m = with_allowed_domain("shop.example").await;
    let tags = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(i),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=pass header.d=shop.example; dmarc=pass header.from=shop.example"),
                ),
            ],
            vec![
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=fail header.d=shop.example"),
                ),
                h(
                    "Authentication-Results",
                    &format!("(x) {SITE}; dkim=pass header.d=other.example"),
                ),
            ],
        )
    })
    .await;
    assert_all_allowed(&m, &tags);
}

/// A domain allowance set on host a through Redis reaches host b's milter
/// (as its 10-second refresh reads it): b lets the newsletter with the
/// site's genuine header through, and still judges forged copies.
#[tokio::test]
#[cfg_attr(not(bulkwatch_redis), ignore = "needs redis-server")]
async fn ordinary_domain_allowance_through_redis_reaches_the_other_hosts_milter() {
    let server = RedisServer::start();
    let [da, db] = dirs();
    let mut cfg_a = host_cfg(&server, "milter", da.path());
    cfg_a.allow.authserv_ids = vec![SITE.to_owned()];
    let mut cfg_b = host_cfg(&server, "milter", db.path());
    cfg_b.allow.authserv_ids = vec![SITE.to_owned()];
    let a = layer(&cfg_a);
    a.set_domain_allowance("shop.example", Some(u64::MAX))
        .unwrap();
    let m = common::start_state(State::new(Engine::new(&cfg_b)).with_redis(layer(&cfg_b))).await;
    let state = std::sync::Arc::clone(&m.state);
    tokio::task::spawn_blocking(move || {
        state
            .control
            .refresh_domains(&state, bulkwatch::milter::unix_now())
    })
    .await
    .unwrap();
    let genuine = send_newsletters(&m, 4, |i| {
        (
            vec![
                postfix_received(i),
                h(
                    "Authentication-Results",
                    &format!("{SITE}; dkim=pass header.d=shop.example"),
                ),
            ],
            vec![],
        )
    })
    .await;
    assert_all_allowed(&m, &genuine);
    let forged = send_newsletters(&m, 8, |i| {
        (
            vec![
                postfix_received(100 + i),
                h(
                    "Authentication-Results",
                    &format!("(x) {SITE}; dkim=pass header.d=shop.example"),
                ),
            ],
            vec![],
        )
    })
    .await;
    assert_eq!(m.state.metrics.allowed(AllowReason::Domain), 4);
    assert!(
        forged
            .last()
            .unwrap()
            .as_deref()
            .unwrap_or("")
            .starts_with("bulk"),
        "{forged:?}"
    );
}
