//! Hostile mail (fixtures/hostile/messages.rs) through the engine and
//! through the whole daemon: every message gets a verdict or the failure
//! action within a bounded time, the daemon keeps serving, and its resident
//! memory stays under a bound with 100 hostile messages in flight.

mod common;

#[path = "../fixtures/hostile/messages.rs"]
mod hostile;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bulkwatch::config::Config;
use bulkwatch::engine::verdict::{Level, SkipReason};
use bulkwatch::engine::{Engine, Envelope, UnixSecs};
use common::daemon::{header, Daemon};
use hostile::Hostile;
use indymilter_test::{EomActions, MacroStage, Status, TestConnection};

/// Peak resident memory the daemon may reach with 100 hostile messages in
/// flight (docs/admin/limits.md). Measured: see the test's output.
const RSS_BOUND_MB: u64 = 256;
/// Time allowed for one hostile conversation. Generous for a debug build on
/// a loaded 2-core machine; a stall would take forever, not this long.
const PER_MESSAGE: Duration = Duration::from_secs(120);

/// What the engine makes of each hostile message and of a second copy of
/// it. Most of them carry too little varying text to be a campaign once
/// numbers are normalized ("part 17 text" times 10,000) and are skipped as
/// too short; those with real text must be found again when sent twice,
/// so the hostile structure around the text hides nothing. (`nul_bytes`,
/// `word0` to `word9999`, has ten: `word1` to `word9` read as words.)
fn expected(name: &str) -> Level {
    match name {
        "charsets" | "body_50mb" | "nul_bytes" => Level::Clean,
        "parts_10000"
        | "nested_1000"
        | "header_line_1mb"
        | "header_lines_100k"
        | "broken_b64_qp"
        | "one_word_10mb"
        | "html_nested_100k"
        | "rule_lines_85k"
        | "recipient_names_40k"
        | "style_sheet_1mb"
        | "attributes_40k" => Level::Skipped(SkipReason::TooShort),
        other => panic!("{other}: a new hostile message needs its expected verdict here"),
    }
}

#[test]
fn every_hostile_message_gets_its_expected_verdict_from_the_engine() {
    let cfg = Config::default();
    let mut engine = Engine::new(&cfg);
    for h in hostile::all() {
        let raw = hostile::raw(&h);
        let want = expected(h.name);
        let first = engine.process(&raw, &Envelope::default(), UnixSecs(1_700_000_000));
        assert_eq!(first.level, want, "{}: first copy {first:?}", h.name);
        assert_eq!(
            first.distance, None,
            "{}: matched another hostile message",
            h.name
        );
        let second = engine.process(&raw, &Envelope::default(), UnixSecs(1_700_000_001));
        assert_eq!(second.level, want, "{}: second copy {second:?}", h.name);
        if want.skip_reason().is_none() {
            assert!(
                second.exact,
                "{}: its copy was not found: {second:?}",
                h.name
            );
            assert_eq!(second.distance, Some(0), "{}", h.name);
        }
    }
}

/// One conversation as an MTA would hold it. `Err` when the milter closed
/// the connection (the MTA then applies milter_default_action).
async fn deliver(socket: &Path, h: &Hostile, n: usize) -> Result<(EomActions, Status), String> {
    let e = |e: indymilter_test::TestError| e.to_string();
    let mut conn = TestConnection::configure()
        .open_unix(socket)
        .await
        .map_err(|e| e.to_string())?;
    conn.connect("client.example", ([192, 0, 2, 9], 4000))
        .await
        .map_err(e)?;
    conn.helo("client.example").await.map_err(e)?;
    let qid = format!("H{n}");
    conn.macros(MacroStage::Mail, [("i", qid.as_str())])
        .await
        .map_err(e)?;
    conn.mail(["<mallory@hostile.example>"]).await.map_err(e)?;
    conn.rcpt(["<victim@example.net>"]).await.map_err(e)?;
    conn.data().await.map_err(e)?;
    for (k, v) in &h.headers {
        let st = conn.header(k.as_str(), v.as_str()).await.map_err(e)?;
        if st != Status::Noreply {
            return Err(format!("header: {st:?}"));
        }
    }
    conn.eoh().await.map_err(e)?;
    for chunk in h.body.chunks(65_535) {
        match conn.body(chunk.to_vec()).await.map_err(e)? {
            Status::Continue => {}
            Status::Skip => break,
            other => return Err(format!("body: {other:?}")),
        }
    }
    let r = conn.eom().await.map_err(e)?;
    let _ = conn.close().await;
    Ok(r)
}

fn peak_rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        / 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_mail_through_the_daemon_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    std::fs::write(
        &config,
        format!(
            "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\n\n[metrics]\nlisten = \"\"\n",
            socket.display(),
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let daemon = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    let pid = daemon.child.id();
    let suite: Arc<Vec<Hostile>> = Arc::new(hostile::all());

    // One at a time: each is answered.
    for (i, h) in suite.iter().enumerate() {
        let r = tokio::time::timeout(PER_MESSAGE, deliver(&socket, h, i)).await;
        let r = r.unwrap_or_else(|_| panic!("{}: no answer within {PER_MESSAGE:?}", h.name));
        let (actions, status) = r.unwrap_or_else(|e| panic!("{}: {e}", h.name));
        assert_eq!(status, Status::Accept, "{}", h.name);
        // Each is the first of its kind here and none is a campaign: no
        // header (the header is added for suspect and bulk mail only).
        assert_eq!(header(&actions), None, "{}: {actions:?}", h.name);
    }

    // 100 in flight, all at once: the suite over and over (8 or 9 of each).
    let mut tasks = Vec::new();
    for i in 0..100 {
        let (suite, socket) = (Arc::clone(&suite), socket.clone());
        tasks.push(tokio::spawn(async move {
            let h = &suite[i % suite.len()];
            let r = tokio::time::timeout(PER_MESSAGE, deliver(&socket, h, 100 + i)).await;
            (h.name, r)
        }));
    }
    for t in tasks {
        let (name, r) = t.await.unwrap();
        let r = r.unwrap_or_else(|_| panic!("{name}: no answer within {PER_MESSAGE:?}"));
        let (_, status) = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(status, Status::Accept, "{name}");
    }
    let peak = peak_rss_mb(pid);
    println!("daemon peak resident memory with 100 hostile messages in flight: {peak} MB");
    assert!(
        peak < RSS_BOUND_MB,
        "peak RSS {peak} MB over {RSS_BOUND_MB} MB"
    );

    // Still serving ordinary mail.
    let mut conn = common::open_unix(&socket).await;
    let (_, st) = common::transact(&mut conn, &common::spam("alice", 1)).await;
    assert_eq!(st, Status::Accept);
    conn.close().await.unwrap();
    let log = daemon.log_text();
    assert!(!log.contains("panicked"), "{log}");
    // CSS is the sender's: its parser's warnings stay out of the log.
    assert!(!log.contains("simplecss"), "{log}");
    let timeouts = log.matches("timed out").count();
    println!(
        "engine timeouts (failure action applied): {timeouts} of {} messages",
        suite.len() + 101
    );
    assert!(daemon.stop().success());
}
