//! The "message judged" log line: what a mail administrator greps for.
//! Absent values are left out (no `distance=-1`), the engine time is
//! rounded to hundredths of a millisecond, and the line carries the
//! queue id, the Message-ID and the sender.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{config, send, spam, start, NAMES};

/// Everything the subscriber writes, shared with the test.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_judged_names_the_message_and_leaves_out_what_is_absent() {
    let buf = Buffer::default();
    let writer = buf.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let m = start(config()).await;
    let mut first = spam(NAMES[0], 1);
    first
        .headers
        .push(("Message-ID".into(), "<first.1@deals.example>".into()));
    send(m.addr, &first).await;
    for (i, name) in NAMES.iter().enumerate().skip(1) {
        send(m.addr, &spam(name, i as u32 + 1)).await;
    }
    // One more, to postmaster@ only: allowed, and the line says why.
    let mut role = spam("grace", 99);
    role.rcpt = "<postmaster@example.net>".into();
    send(m.addr, &role).await;
    m.stop().await;
    let log = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("message judged"))
        .collect();
    assert_eq!(lines.len(), NAMES.len() + 1, "{log}");
    let role = lines[NAMES.len()];
    assert!(
        role.contains("level=\"allowed\"") && role.contains("reason=\"recipient\""),
        "{role}"
    );
    let first = lines[0];
    assert!(first.contains("queue_id=Q1"), "{first}");
    assert!(
        first.contains("message_id=\"first.1@deals.example\""),
        "{first}"
    );
    assert!(first.contains("sender=offers@deals.example"), "{first}");
    assert!(first.contains("level=\"clean\""), "{first}");
    // The first of a campaign matched nothing: no distance.
    assert!(!first.contains("distance="), "{first}");
    assert!(!first.contains("=-1"), "{first}");
    assert!(!first.contains("truncated"), "{first}");
    // Neither allowed, skipped nor list mail: no reason, no list flag.
    assert!(
        !first.contains("reason=") && !first.contains("list="),
        "{first}"
    );
    // The others joined a campaign and say which, and how close.
    let last = lines[NAMES.len() - 1];
    assert!(last.contains("campaign="), "{last}");
    assert!(last.contains("distance="), "{last}");
    for l in &lines {
        let ms = l
            .split("engine_ms=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap();
        let decimals = ms.split('.').nth(1).map_or(0, str::len);
        assert!(decimals <= 2, "engine_ms={ms} in {l}");
    }
}
