//! Attacks on `bulkwatch serve` through its sockets, by a local peer with no
//! privilege: idle connections holding every milter slot, a flood of idle
//! connections to the metrics port under a low open-file limit, and a
//! `max_connections` the process's limit cannot hold. Each failed before
//! the guarded listener (`bulkwatch::milter::guard`): the filter stopped
//! serving or the daemon exited.
//!
//! Time bounds here are failure bounds (a hung daemon fails the test
//! instead of hanging it), never measurements.

mod common;

use std::fs;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::daemon::{header, Daemon};
use common::{open_unix, spam, transact};
use indymilter_test::Status;

/// A free loopback port (bound, read, released).
fn free_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn config_text(
    socket: &Path,
    state: &Path,
    metrics: Option<SocketAddr>,
    max_conn: usize,
) -> String {
    let listen = metrics.map_or(String::new(), |a| a.to_string());
    format!(
        "[milter]\nsocket = \"unix:{}\"\nmax_connections = {max_conn}\n\n\
         [state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 3600\n\n\
         [metrics]\nlisten = \"{listen}\"\n\n[thresholds]\nbulk_threshold = 2.0\nsuspect_threshold = 2.0\n\n\
         [window]\nmax_entries = 10000\n\n[exact]\nbloom_items = 10000\n",
        socket.display(),
        state.display()
    )
}

/// One message through the milter, within a failure bound.
async fn deliver(socket: &Path, i: usize) -> (indymilter_test::EomActions, Status) {
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut conn = open_unix(socket).await;
        let r = transact(&mut conn, &spam(&common::name(i), 7000 + i as u32)).await;
        conn.close().await.unwrap();
        r
    })
    .await
    .expect("the milter served no message within 30 s")
}

/// Before: `max_connections` idle connections held every slot, and
/// Postfix's connection waited (until the library's 2-hour timeout) while
/// its mail passed unfiltered. Now a new connection evicts the oldest that
/// never sent a command: mail keeps being filtered, and the evicted client
/// reads EOF.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_at_max_cannot_blind_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 4),
    )
    .unwrap();
    let mut d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    d.wait_log("metrics listening");
    // Twice max_connections idle clients, oldest first.
    let idle: Vec<UnixStream> = (0..8)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    // Two messages of one campaign: both filtered, the second tagged bulk.
    let (_, s) = deliver(&socket, 0).await;
    assert_eq!(s, Status::Accept);
    let (a, s) = deliver(&socket, 1).await;
    assert_eq!(s, Status::Accept);
    let h = header(&a).expect("the second copy is tagged");
    assert!(h.starts_with("bulk"), "{h}");
    // The oldest idle client was evicted: it reads end-of-file.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        first.read(&mut buf).unwrap(),
        0,
        "evicted connection closed"
    );
    let text = metrics_text(metrics);
    let evicted = counter(&text, "bulkwatch_connections_evicted_total");
    assert!(evicted >= 1, "{text}");
    assert!(d
        .log_text()
        .contains("closed a fresh (never sent a command) one"));
    drop(idle);
    assert!(d.stop().success());
}

fn metrics_text(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `/metrics` once the listener answers it, asking again after a refusal
/// (at most 600 times, 50 ms apart).
fn metrics_text_once_answered(addr: SocketAddr) -> String {
    let ask = || -> std::io::Result<String> {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.0\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    };
    for _ in 0..600 {
        match ask() {
            Ok(text) if text.starts_with("HTTP/1.0 200") => return text,
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("/metrics never answered after the flood");
}

fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
}

/// Before: every connection to the metrics port was accepted into a task
/// of its own, so under a limit of 256 open files a few hundred idle HTTP
/// clients used up the descriptors, the next milter accept failed with
/// "Too many open files", and the daemon exited with status 2. Now the
/// metrics listener serves at most 32 at once (closing the oldest idle
/// one to make room), and a failed accept is waited out: the milter keeps
/// filtering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_flood_under_a_low_file_limit_cannot_stop_the_milter() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let log = dir.path().join("daemon.log");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 64),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &log, Some(256));
    d.wait_log("metrics listening");
    d.wait_log("bulkwatch serving");
    // 400 idle HTTP clients (this test process holds them: 400 of its own
    // descriptors).
    let flood: Vec<TcpStream> = (0..400)
        .map(|_| TcpStream::connect(metrics).unwrap())
        .collect();
    // A few messages: each filtered, the daemon still running.
    for i in 0..3 {
        let (a, s) = deliver(&socket, i).await;
        assert_eq!(s, Status::Accept, "message {i}");
        assert_eq!(header(&a).is_some(), i >= 1, "message {i}: {a:?}");
        assert!(d.child.try_wait().unwrap().is_none(), "daemon exited");
    }
    drop(flood);
    // Once the flood is gone, the metrics port answers, and counted it.
    // (The daemon learns that the flood is gone as it reads each closed
    // connection: until then a new one may still be refused, so ask again.)
    let text = metrics_text_once_answered(metrics);
    assert!(counter(&text, "bulkwatch_http_evicted_total") > 0, "{text}");
    assert!(d.stop().success(), "{}", d_log(&log));
}

fn d_log(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_default()
}

/// A `max_connections` the open-file limit cannot hold is refused with the
/// numbers and the fix, instead of failing under load.
#[test]
fn max_connections_beyond_the_file_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), None, 1000),
    )
    .unwrap();
    let d = Daemon::spawn(&config, &dir.path().join("daemon.log"), Some(256));
    let (st, log) = d.wait_exit();
    assert!(!st.success(), "{log}");
    assert!(
        log.contains("milter.max_connections = 1000 needs") && log.contains("LimitNOFILE"),
        "{log}"
    );
}

/// A recipient flood through the milter protocol. Before, each `RCPT TO`
/// counted against `max_message_bytes` (and the whole list was summed at
/// every callback), so 8,000 recipients of 40 bytes filled a 64 KiB bound:
/// the headers and body were dropped and the message went unjudged. Now
/// recipients are counted apart: the message is judged, and counts for
/// every recipient.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recipient_flood_cannot_push_the_body_out() {
    let mut cfg = common::config();
    cfg.milter.max_message_bytes = 64 * 1024;
    let m = common::start(cfg).await;
    let mut conn = common::open(m.addr).await;
    let mail = spam("alice", 1);
    assert_eq!(
        conn.mail(["<offers@deals.example>"]).await.unwrap(),
        Status::Noreply
    );
    for i in 0..8_000 {
        let rcpt = format!("<{}{i}@example.net>", "r".repeat(30));
        assert_eq!(conn.rcpt([rcpt.as_str()]).await.unwrap(), Status::Noreply);
    }
    assert_eq!(conn.data().await.unwrap(), Status::Noreply);
    for (k, v) in &mail.headers {
        assert_eq!(
            conn.header(k.as_str(), v.as_str()).await.unwrap(),
            Status::Noreply
        );
    }
    assert_eq!(conn.eoh().await.unwrap(), Status::Noreply);
    let _ = conn.body(mail.body.as_bytes().to_vec()).await.unwrap();
    let (actions, status) = conn.eom().await.unwrap();
    assert_eq!(status, Status::Accept);
    let h = header(&actions).expect("the message was judged and tagged");
    assert!(h.contains("size=8000"), "{h}");
    conn.close().await.unwrap();
    m.stop().await;
}

/// One message whose MTA pauses 0.3 s before each command, as Postfix
/// does when its SMTP client is slow: the milter connection is silent in
/// the middle of a transaction. `Err`: the step that failed.
async fn slow_session(socket: &Path, i: usize) -> Result<(), String> {
    use indymilter_test::{MacroStage, TestConnection};
    let pause = || tokio::time::sleep(Duration::from_millis(300));
    let step = |what: &'static str| move |e: indymilter_test::TestError| format!("{what}: {e}");
    let m = spam(&common::name(i), 9000 + i as u32);
    // The flood may fill the listen queue for a moment: a connect that
    // finds it full is tried again (the guard's business is what happens
    // to accepted connections).
    let mut conn = None;
    for _ in 0..3000 {
        match TestConnection::configure().open_unix(socket).await {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    let mut conn = conn.ok_or("connect: the listen queue stayed full")?;
    pause().await;
    conn.connect("client.example", ([192, 0, 2, 7], 40000))
        .await
        .map_err(step("connect"))?;
    pause().await;
    conn.helo("client.example").await.map_err(step("helo"))?;
    pause().await;
    conn.macros(MacroStage::Mail, [("i", m.queue_id.as_str())])
        .await
        .map_err(step("macros"))?;
    conn.mail(["<offers@deals.example>"])
        .await
        .map_err(step("mail"))?;
    pause().await;
    conn.rcpt([m.rcpt.as_str()]).await.map_err(step("rcpt"))?;
    pause().await;
    conn.data().await.map_err(step("data"))?;
    for (k, v) in &m.headers {
        pause().await;
        conn.header(k.as_str(), v.as_str())
            .await
            .map_err(step("header"))?;
    }
    pause().await;
    conn.eoh().await.map_err(step("eoh"))?;
    pause().await;
    conn.body(m.body.as_bytes().to_vec())
        .await
        .map_err(step("body"))?;
    pause().await;
    let (_, status) = conn.eom().await.map_err(step("eom"))?;
    let _ = conn.close().await;
    (status == Status::Accept)
        .then_some(())
        .ok_or_else(|| format!("eom: {status:?}"))
}

/// Before: at max_connections the longest-idle connection was closed, and
/// a flood of fresh, empty connections is always younger than a Postfix
/// session waiting 0.3 s on its SMTP client: all 10 such sessions were cut
/// (their mail passed unfiltered). Now fresh connections that never sent a
/// command go first: every session completes and is judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_churn_of_fresh_connections_never_cuts_a_slow_session() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 16),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("daemon.log"), Some(1024));
    d.wait_log("bulkwatch serving");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (socket, done) = (socket.clone(), done.clone());
        std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            let mut opened = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(s) = UnixStream::connect(&socket) {
                    held.push_back(s);
                    opened += 1;
                }
                if held.len() > 64 {
                    held.pop_front();
                }
            }
            opened
        })
    };
    let sessions: Vec<_> = (0..10)
        .map(|i| {
            let socket = socket.clone();
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(120), slow_session(&socket, i))
                    .await
                    .unwrap_or_else(|_| Err("no answer in 120 s".into()))
            })
        })
        .collect();
    let mut cut = Vec::new();
    for s in sessions {
        if let Err(e) = s.await.unwrap() {
            cut.push(e);
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let opened = churn.join().unwrap();
    assert!(
        cut.is_empty(),
        "sessions cut by the churn ({opened} connections): {cut:?}\n{}",
        d.log_text()
    );
    assert!(opened > 16, "the churn went past max_connections");
    let text = metrics_text(metrics);
    assert!(
        counter(&text, "bulkwatch_connections_evicted_total") > 0,
        "{text}"
    );
    assert!(d.stop().success());
}

/// Slowloris on the metrics port: 40 clients that each send a request
/// head a byte at a time and reconnect when closed. Before, they held the
/// 32 slots and 16 of 20 `/metrics` requests failed. Now a new connection
/// closes the oldest one that has not sent its whole head: every request
/// that arrives whole is answered. And a `Host` naming another site is
/// refused (DNS rebinding).
#[test]
fn slowloris_cannot_starve_the_metrics_port() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 16),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("daemon.log"), Some(1024));
    d.wait_log("bulkwatch serving");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow: Vec<_> = (0..40)
        .map(|_| {
            let done = done.clone();
            std::thread::spawn(move || {
                let head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ";
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut s) = TcpStream::connect(metrics) else {
                        continue;
                    };
                    for b in head.iter().cycle() {
                        if done.load(std::sync::atomic::Ordering::Relaxed)
                            || std::io::Write::write_all(&mut s, &[*b]).is_err()
                        {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
        })
        .collect();
    // Let the slow clients fill the slots.
    std::thread::sleep(Duration::from_millis(500));
    let mut answered = 0;
    for _ in 0..20 {
        let Ok(mut s) = TcpStream::connect(metrics) else {
            continue;
        };
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ =
            std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        if out.starts_with("HTTP/1.1 200") && out.contains("bulkwatch_messages_total") {
            answered += 1;
        }
    }
    let mut s = TcpStream::connect(metrics).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    std::io::Write::write_all(
        &mut s,
        b"GET /campaigns HTTP/1.1\r\nHost: rebind.attacker.example:9357\r\n\r\n",
    )
    .unwrap();
    let mut rebound = String::new();
    let _ = s.read_to_string(&mut rebound);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in slow {
        t.join().unwrap();
    }
    assert_eq!(answered, 20, "requests answered under slowloris");
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    assert!(d.stop().success());
}

/// The issue's hold: a local client opens `max_connections` (32) milter
/// connections, sends MAIL once and then one RCPT a second, forever. Its
/// transactions were never silent long enough to be evicted, and 75 of
/// 75 ordinary sessions were refused at connect. Now a transaction still
/// in its envelope two seconds after its MAIL may be evicted when the
/// server is full: ten ordinary sessions, once the holds are that old,
/// are judged (at least nine, the issue's bar; here all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_transactions_trickling_rcpt_cannot_keep_postfix_out() {
    use indymilter_test::{MacroStage, TestConnection};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 32),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("daemon.log"), Some(1024));
    d.wait_log("bulkwatch serving");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut holds = Vec::new();
    for i in 0..32 {
        let (socket, stop) = (socket.clone(), stop.clone());
        holds.push(tokio::spawn(async move {
            let Ok(mut c) = TestConnection::configure().open_unix(&socket).await else {
                return;
            };
            let _ = c
                .connect("attacker.local", ([127, 0, 0, 1], 40000 + i))
                .await;
            let _ = c.helo("attacker.local").await;
            let _ = c.macros(MacroStage::Mail, [("i", "HOLD")]).await;
            let _ = c.mail(["<x@attacker.example>"]).await;
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                if c.rcpt([format!("<v{n}@example.net>")]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }));
    }
    // The holds are all in their envelope, past the bound.
    tokio::time::sleep(guard_envelope_stall() + Duration::from_millis(500)).await;
    let mut judged = 0;
    for i in 0..10 {
        let r = tokio::time::timeout(Duration::from_secs(30), async {
            let mut conn = TestConnection::configure().open_unix(&socket).await.ok()?;
            conn.connect("mx.example", ([192, 0, 2, 7], 40000))
                .await
                .ok()?;
            conn.helo("mx.example").await.ok()?;
            let m = spam(&common::name(100 + i), 300 + i as u32);
            let rcpts = vec![m.rcpt.clone()];
            let (_, status) =
                common::transact_envelope(&mut conn, &m, "<offers@deals.example>", &rcpts).await;
            let _ = conn.close().await;
            Some(status)
        })
        .await;
        if matches!(r, Ok(Some(Status::Accept))) {
            judged += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in holds {
        let _ = h.await;
    }
    assert!(judged >= 9, "{judged} of 10 judged\n{}", d.log_text());
    let text = metrics_text(metrics);
    assert!(
        counter(&text, "bulkwatch_connections_evicted_total") >= 1,
        "{text}"
    );
    assert!(d.stop().success());
}

/// The audit's hold (issue 64): one SMTP client keeps 28 sessions of the
/// 32 `max_connections` in DATA (MAIL, RCPT, DATA, then nothing, as
/// Postfix hands a session whose client has not sent its final dot), all
/// young, renewed: every Postfix session shares one milter peer, so at
/// the peer's cap 75 of 75 ordinary sessions were refused. Now one SMTP
/// client holding more than its share loses its own sessions first: 75
/// ordinary sessions from other clients, while the holds stand, are all
/// judged, with no wait on any clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_held_in_data_cannot_keep_other_clients_out() {
    use indymilter_test::{MacroStage, TestConnection};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let metrics = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), Some(metrics), 32),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("daemon.log"), Some(1024));
    d.wait_log("bulkwatch serving");
    // Each hold opens, goes to DATA and waits; when the guard closes it,
    // it opens another, as the attacker renews its sessions.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let renewed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut holds = Vec::new();
    for i in 0..28u16 {
        let (socket, stop, renewed) = (socket.clone(), stop.clone(), renewed.clone());
        holds.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(mut c) = TestConnection::configure().open_unix(&socket).await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = c
                    .connect("bad.example", ([203, 0, 113, 9], 40000 + i))
                    .await;
                let _ = c.helo("bad.example").await;
                let _ = c.macros(MacroStage::Mail, [("i", "HOLD")]).await;
                let _ = c.mail(["<x@attacker.example>"]).await;
                let _ = c.rcpt(["<v@example.net>"]).await;
                let _ = c.data().await;
                // In DATA: nothing more for a while, then a new session in
                // its place, as the attacker renews its holds before any
                // clock could close them.
                tokio::time::sleep(Duration::from_secs(2)).await;
                drop(c);
                renewed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    // The 28 are in DATA before the ordinary sessions start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut judged = 0;
    for i in 0..75u8 {
        let r = tokio::time::timeout(Duration::from_secs(30), async {
            let mut conn = TestConnection::configure().open_unix(&socket).await.ok()?;
            conn.connect("mx.example", ([198, 51, i, 7], 25))
                .await
                .ok()?;
            conn.helo("mx.example").await.ok()?;
            let m = spam(&common::name(200 + usize::from(i)), 900 + u32::from(i));
            let rcpts = vec![m.rcpt.clone()];
            let (_, status) =
                common::transact_envelope(&mut conn, &m, "<offers@deals.example>", &rcpts).await;
            let _ = conn.close().await;
            Some(status)
        })
        .await;
        if matches!(r, Ok(Some(Status::Accept))) {
            judged += 1;
        } else {
            eprintln!("ordinary {i}: {r:?}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in holds {
        h.abort();
    }
    assert_eq!(judged, 75, "{judged} of 75 judged\n{}", d.log_text());
    let text = metrics_text(metrics);
    assert!(
        counter(&text, "bulkwatch_connections_evicted_total") >= 1,
        "{text}"
    );
    assert!(d.stop().success());
}

fn guard_envelope_stall() -> Duration {
    bulkwatch::milter::guard::ENVELOPE_STALL
}
