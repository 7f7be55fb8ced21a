//! Attacks through the content of a message on `bulkwatch serve`: mail
//! built to kill a parser. Before worker processes (`bulkwatch::worker`),
//! one HTML mail of 68 KB with 7,000 attributes on one tag overflowed the
//! HTML tokenizer's stack and aborted the daemon: no snapshot, every later
//! message unfiltered. Now a reading that dies costs that message its
//! verdict (`failure_action`), is logged with the queue id and counted,
//! the message is kept in `state_dir/failed/`, and the next message is
//! judged by the same daemon.
//!
//! Time bounds here are failure bounds, never measurements.

mod common;

use std::fs;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use common::daemon::{header, Daemon};
use common::{open_unix, spam, transact, Mail};
use indymilter_test::Status;

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn config_text(socket: &Path, state: &Path, metrics: SocketAddr, extra: &str) -> String {
    format!(
        "[milter]\nsocket = \"unix:{}\"\nengine_timeout_ms = 1500\n{extra}\n\
         [state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 3600\n\n\
         [metrics]\nlisten = \"{metrics}\"\n\n[policy]\nclean = \"tag\"\n\n\
         [window]\nmax_entries = 10000\n\n[exact]\nbloom_items = 10000\n",
        socket.display(),
        state.display()
    )
}

/// A single start tag with `n` double-quoted attributes.
fn attribute_bomb(n: usize, queue_id: &str) -> Mail {
    let mut body = String::from("<div ");
    for i in 0..n {
        body.push_str(&format!("a{i}=\"x\" "));
    }
    body.push_str(">hi</div>\r\n");
    Mail {
        headers: vec![
            ("From".into(), "a@x.example".into()),
            ("Subject".into(), "t".into()),
            ("Content-Type".into(), "text/html".into()),
        ],
        body,
        rcpt: "<ann@example.net>".into(),
        queue_id: queue_id.into(),
    }
}

/// One message through the milter, within a failure bound.
async fn deliver(socket: &Path, m: &Mail) -> (indymilter_test::EomActions, Status) {
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut conn = open_unix(socket).await;
        let r = transact(&mut conn, m).await;
        conn.close().await.unwrap();
        r
    })
    .await
    .expect("the milter gave no final reply within 60 s")
}

fn metrics(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// The bombs (7,000 attributes, 68 KB; 40,000, 430 KB) each get a
/// final reply under 1024 open files, and the next ordinary message its
/// verdict from the same daemon.
#[tokio::test]
async fn attribute_bombs_get_a_reply_and_the_next_message_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("m.sock");
    let config = dir.path().join("c.toml");
    let addr = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), addr, ""),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("log"), Some(1024));
    d.wait_log("bulkwatch serving");
    let pid = d.child.id();
    for (n, q) in [(7_000, "BOMB7K"), (40_000, "BOMB40K")] {
        let (_, status) = deliver(&socket, &attribute_bomb(n, q)).await;
        assert_eq!(status, Status::Accept, "{n} attributes");
        let (actions, status) = deliver(&socket, &spam("alice", n as u32)).await;
        assert_eq!(status, Status::Accept);
        let h = header(&actions).unwrap_or_default();
        assert!(h.starts_with("clean"), "next message after {n}: {h:?}");
    }
    assert!(
        d.child.try_wait().unwrap().is_none() && d.child.id() == pid,
        "{}",
        d.log_text()
    );
    d.stop();
}

/// A reading forced to abort (the debug builds' test hook): the message
/// gets failure_action, one log line with its queue id and the cause,
/// a counter, a copy in state_dir/failed/; the next message is judged.
#[tokio::test]
async fn a_reading_that_aborts_costs_one_verdict() {
    for action in ["accept", "tempfail"] {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("m.sock");
        let config = dir.path().join("c.toml");
        let state = dir.path().join("state");
        let addr = free_port();
        fs::write(
            &config,
            config_text(
                &socket,
                &state,
                addr,
                &format!("failure_action = \"{action}\"\n"),
            ),
        )
        .unwrap();
        let log = dir.path().join("log");
        let mut d = {
            // Only the child's environment: the hook is read by the daemon
            // at start and handed to its workers.
            let out = fs::File::create(&log).unwrap();
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
                .args(["serve", "--config"])
                .arg(&config)
                .env("RUST_LOG", "info")
                .env("BULKWATCH_TEST_ABORT_ON", "KILL-MY-READER")
                .env("BULKWATCH_TEST_HANG_ON", "HANG-MY-READER")
                .env_remove("NOTIFY_SOCKET")
                .stderr(out)
                .spawn()
                .unwrap();
            common::daemon::Daemon::adopt(child, &log)
        };
        d.wait_log("bulkwatch serving");
        for (marker, queue_id) in [("KILL-MY-READER", "QABORT1"), ("HANG-MY-READER", "QHANG1")] {
            let mut m = spam("bob", 1);
            m.body.push_str(marker);
            m.queue_id = queue_id.into();
            let (actions, status) = deliver(&socket, &m).await;
            match (action, &status) {
                ("accept", Status::Accept) | ("tempfail", Status::Tempfail { .. }) => {}
                _ => panic!("{marker} under {action}: {status:?}"),
            }
            assert_eq!(header(&actions), None);
            let (actions, status) = deliver(&socket, &spam("carol", 2)).await;
            assert_eq!(status, Status::Accept);
            assert!(header(&actions).is_some_and(|h| h.starts_with("clean")));
        }
        d.wait_log("queue_id=QHANG1");
        let text = d.log_text();
        let line = text
            .lines()
            .find(|l| l.contains("queue_id=QABORT1") && l.contains("not judged"))
            .unwrap_or_else(|| panic!("no log line for the abort:\n{text}"));
        assert!(
            line.contains("cause=\"died\"") || line.contains("cause=died"),
            "{line}"
        );
        assert!(line.contains("SIGABRT"), "{line}");
        assert!(text.lines().any(|l| l.contains("queue_id=QHANG1")
            && l.contains("not judged")
            && l.contains("timeout")));
        let m = metrics(addr);
        assert!(
            m.contains("bulkwatch_analysis_failures_total{cause=\"died\"} 1"),
            "{m}"
        );
        assert!(
            m.contains("bulkwatch_analysis_failures_total{cause=\"timeout\"} 1"),
            "{m}"
        );
        let kept: Vec<String> = fs::read_dir(state.join("failed"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(kept.iter().any(|n| n.ends_with("-QABORT1.eml")), "{kept:?}");
        d.stop();
    }
}

/// The mail: a short text and two small PDFs whose 16 pages share
/// one 512 KiB FlateDecode content stream of `[[]]` (7.6 KB in all), sent
/// to ten recipients in each of three transactions. It took 2.2 s of CPU
/// to read, past `engine_timeout_ms`: the three copies were "not judged"
/// and the campaign invisible. Now the shared stream is read once and the
/// second file stops at the budget: every copy is judged (read partly, as
/// the header says) and the campaign counts its thirty recipients.
fn slow_pdf_mail(n: usize) -> Mail {
    use base64::Engine as _;
    let junk = "[[]]".repeat(128 * 1024);
    let pdf = testkit::pdf_shared_pages(16, junk.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(&pdf);
    let mut body = String::from(
        "--B\r\nContent-Type: text/plain\r\n\r\nYour invoice is attached, please pay today.\r\n",
    );
    for f in 0..2 {
        body.push_str(&format!(
            "--B\r\nContent-Type: application/pdf; name=\"invoice{f}.pdf\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{b64}\r\n"
        ));
    }
    body.push_str("--B--\r\n");
    Mail {
        headers: vec![
            ("From".into(), "billing@invoices.example".into()),
            ("Subject".into(), "Invoice".into()),
            ("MIME-Version".into(), "1.0".into()),
            ("Content-Type".into(), "multipart/mixed; boundary=B".into()),
        ],
        body,
        rcpt: String::new(),
        queue_id: format!("QPDF{n}"),
    }
}

#[tokio::test]
async fn a_campaign_of_slow_pdfs_is_judged_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("m.sock");
    let config = dir.path().join("c.toml");
    let addr = free_port();
    fs::write(
        &config,
        config_text(&socket, &dir.path().join("state"), addr, ""),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("log"), None);
    d.wait_log("bulkwatch serving");
    let mut headers = Vec::new();
    for n in 0..3 {
        let m = slow_pdf_mail(n);
        let rcpts: Vec<String> = (0..10).map(|r| format!("<u{n}-{r}@example.net>")).collect();
        let (actions, status) = tokio::time::timeout(Duration::from_secs(60), async {
            let mut conn = open_unix(&socket).await;
            let r = common::transact_envelope(&mut conn, &m, "<billing@invoices.example>", &rcpts)
                .await;
            conn.close().await.unwrap();
            r
        })
        .await
        .expect("a final reply");
        assert_eq!(status, Status::Accept);
        headers.push(header(&actions).unwrap_or_default());
    }
    assert!(
        headers[0].starts_with("clean"),
        "{headers:?}\n{}",
        d.log_text()
    );
    // The first transaction is one delivery (ten recipients, measured as
    // one); the second counts its ten (suspect), the third its ten more.
    assert!(
        headers[1].starts_with("suspect") && headers[2].starts_with("bulk"),
        "{headers:?}"
    );
    assert!(
        headers.iter().all(|h| h.contains("read=partial")),
        "{headers:?}"
    );
    assert!(headers[2].contains("size=30"), "{headers:?}");
    let m = metrics(addr);
    assert!(
        m.contains("bulkwatch_analysis_failures_total{cause=\"timeout\"} 0"),
        "{m}"
    );
    d.stop();

    // scan reads it too (it exited 2, the reading timed out).
    let file = dir.path().join("pdf.eml");
    let m = slow_pdf_mail(9);
    let mut raw = String::new();
    for (k, v) in &m.headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    raw.push_str(&m.body);
    fs::write(&file, raw).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["scan", "--offline"])
        .arg(&file)
        .env("BULKWATCH_CONFIG", "/nonexistent/bulkwatch.toml")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("simhash:"));
}

/// A deep reading that dies after the shallow one came (the debug builds'
/// hook in the deep reading): the message is judged on the shallow one,
/// read partly, counted by cause; the next message is judged too.
#[tokio::test]
async fn a_deep_reading_that_dies_leaves_the_message_judged() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("m.sock");
    let config = dir.path().join("c.toml");
    let state = dir.path().join("state");
    let addr = free_port();
    fs::write(&config, config_text(&socket, &state, addr, "")).unwrap();
    let log = dir.path().join("log");
    let mut d = {
        let out = fs::File::create(&log).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
            .args(["serve", "--config"])
            .arg(&config)
            .env("RUST_LOG", "info")
            .env("BULKWATCH_TEST_ABORT_DEEP_ON", "KILL-MY-DEEP-READER")
            .env_remove("NOTIFY_SOCKET")
            .stderr(out)
            .spawn()
            .unwrap();
        common::daemon::Daemon::adopt(child, &log)
    };
    d.wait_log("bulkwatch serving");
    // A PDF under a short body: something for the deep reader.
    let mut m = slow_pdf_mail(0);
    m.body = m
        .body
        .replace("please pay today.", "please pay today. KILL-MY-DEEP-READER");
    m.queue_id = "QDEEP1".into();
    let (actions, status) = deliver(&socket, &m).await;
    assert_eq!(status, Status::Accept);
    let h = header(&actions).unwrap_or_default();
    assert!(
        h.starts_with("clean") && h.contains("read=partial"),
        "{h}\n{}",
        d.log_text()
    );
    let (actions, _) = deliver(&socket, &spam("dora", 3)).await;
    assert!(header(&actions).is_some_and(|h| h.starts_with("clean")));
    let m = metrics(addr);
    assert!(
        m.contains("bulkwatch_partial_readings_total{cause=\"died\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("bulkwatch_analysis_failures_total{cause=\"died\"} 0"),
        "{m}"
    );
    d.stop();
}

/// Two slow mails a second (the PDF above, from one sender) beside
/// ordinary mail: with two workers and the wait for a worker counted
/// apart (and fairly: the flooder's next mail waits behind others), every
/// ordinary message is judged within `engine_timeout_ms` (1.5 s here, a
/// failure bound), none gets `failure_action`. Before, half of ordinary
/// mail went unjudged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_slow_mail_leaves_ordinary_mail_judged() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("m.sock");
    let config = dir.path().join("c.toml");
    let addr = free_port();
    fs::write(
        &config,
        config_text(
            &socket,
            &dir.path().join("state"),
            addr,
            "queue_timeout_ms = 1500\nworkers = 2\n",
        ),
    )
    .unwrap();
    let mut d = Daemon::spawn(&config, &dir.path().join("log"), None);
    d.wait_log("bulkwatch serving");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let (socket, stop) = (socket.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            let mut sent = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let socket = socket.clone();
                sent.push(tokio::spawn(async move {
                    let m = slow_pdf_mail(100 + n);
                    let rcpts = vec![format!("<f{n}@example.net>")];
                    let mut conn = open_unix(&socket).await;
                    let r = common::transact_envelope(
                        &mut conn,
                        &m,
                        "<billing@invoices.example>",
                        &rcpts,
                    )
                    .await;
                    let _ = conn.close().await;
                    r
                }));
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            for s in sent {
                let _ = s.await;
            }
            n
        })
    };
    let mut unjudged = Vec::new();
    for i in 0..12 {
        let (actions, status) = deliver(&socket, &spam(&common::name(i), 500 + i as u32)).await;
        if status != Status::Accept || header(&actions).is_none() {
            unjudged.push(i);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let slow = flood.await.unwrap();
    assert!(slow >= 6, "{slow} slow mails");
    assert!(
        unjudged.is_empty(),
        "not judged: {unjudged:?}\n{}",
        d.log_text()
    );
    let m = metrics(addr);
    for cause in ["timeout", "queue"] {
        assert!(
            m.contains(&format!(
                "bulkwatch_analysis_failures_total{{cause=\"{cause}\"}} 0"
            )),
            "{m}"
        );
    }
    d.stop();
}
