//! Contained reading (`bulkwatch::worker`): worker processes of the real
//! binary read mail as the engine does in-process; a worker that aborts,
//! panics or hangs costs one reading, and the next message is read; the
//! sandbox takes files and network away.

#[allow(dead_code)]
#[path = "dressed/dress.rs"]
mod dress;
#[allow(dead_code)]
#[path = "dressed/texts.rs"]
mod texts;

use std::path::Path;
use std::time::Duration;

use bulkwatch::config::Config;
use bulkwatch::engine::{read, read_config, ReadConfig};
use bulkwatch::worker::{Failure, Hooks, OcrOutcome, Pool};

fn program() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bulkwatch"))
}

const LIMIT: Duration = Duration::from_secs(20);

/// A pool of `size` workers of the real binary, without test hooks.
async fn start(cfg: &Config, size: usize) -> Pool {
    Pool::start(program(), cfg, size, Hooks::default())
        .await
        .unwrap()
}

/// The pool's messages left to the OCR workers, by outcome (read,
/// partial, timed out, killed, failed, unavailable).
fn ocr_counts(pool: &Pool) -> [u64; 6] {
    OcrOutcome::ALL.map(|o| pool.stats().ocr(o))
}

fn message(marker: &str) -> Vec<u8> {
    format!(
        "From: Deals <offers@deals.example>\r\nTo: Ann <ann@example.net>\r\nSubject: offer\r\n\
         Content-Type: text/html\r\n\r\n<p>Dear Ann, your account qualifies for our premium \
         savings program {marker}. Act now to claim the discount before the end of the week; \
         see <a href=\"https://t.example/c?u=1\">the offer</a>.</p>\r\n"
    )
    .into_bytes()
}

#[tokio::test]
async fn a_worker_reads_as_the_engine_does() {
    let cfg = Config::default();
    let pool = start(&cfg, 2).await;
    let rcpts = vec!["ann@example.net".to_owned()];
    for m in [message("one"), b"not a message at all".to_vec(), Vec::new()] {
        let got = pool.read(&m, &rcpts, LIMIT).await.unwrap();
        assert_eq!(got, read(&m, &rcpts, &read_config(&cfg)));
    }
    assert!(pool.sandbox().contains("seccomp=on"), "{}", pool.sandbox());
}

/// Pictures of text are read through the pool as in-process: the readers
/// leave them to the OCR workers, which load Tesseract before their
/// sandbox closes and recognize inside it (one thread, no files).
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[tokio::test]
async fn a_worker_reads_pictures_of_text_in_its_sandbox() {
    let cfg = Config::default();
    // This process reads in itself too, to compare.
    bulkwatch::worker::provide_ocr_here(&cfg);
    let pool = start(&cfg, 1).await;
    let rcpts = vec!["ann@example.net".to_owned()];
    let text = texts::OWN[0].1.join("\n\n");
    for copy in 0..2 {
        let m = dress::text_picture_message(&text, copy);
        let got = pool.read(&m, &rcpts, LIMIT).await.unwrap();
        assert_eq!(got, read(&m, &rcpts, &read_config(&cfg)));
        assert!(got.normalized.tokens > 60, "{:?}", got.normalized.text);
        // In a batch (replay) too.
        let plain = message("plain");
        let many = pool.read_many(&[&m[..], &plain[..]], LIMIT).await;
        assert_eq!(
            many[0].as_ref().unwrap(),
            &read(&m, &[], &read_config(&cfg))
        );
    }
    // The readers do not load Tesseract; the OCR workers do, sandboxed.
    let status = pool.sandbox();
    let (readers, ocr) = status.split_once("; OCR workers: ").expect(&status);
    assert!(
        readers.contains("seccomp=on") && readers.contains("ocr=in the OCR workers"),
        "{status}"
    );
    assert!(
        ocr.contains("seccomp=on") && ocr.contains("ocr=on"),
        "{status}"
    );
    // Counted for the metrics: 4 messages read by the OCR workers (2
    // alone, 2 in batches), by workers started for them.
    assert_eq!(ocr_counts(&pool), [4, 0, 0, 0, 0, 0]);
    let started = &pool.ocr_stats().expect("started").started;
    assert!(started.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

/// Paid once per picture family (issue 65): the same picture of text in
/// two messages, or twice in one, is read by Tesseract once and its text
/// reused, to the same reading; another picture is read.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn a_picture_family_is_read_once() {
    let cfg = Config::default();
    bulkwatch::worker::provide_ocr_here(&cfg);
    let rcpts = vec!["ann@example.net".to_owned()];
    let text = texts::OWN[2].1.join("\n\n");
    let m = dress::text_picture_message(&text, 3);
    let (before, reused) = bulkwatch::worker::ocr_readings();
    let first = read(&m, &rcpts, &read_config(&cfg));
    let second = read(&m, &rcpts, &read_config(&cfg));
    assert_eq!(first, second);
    assert!(first.normalized.tokens > 40, "{:?}", first.normalized.text);
    let (after, reused_after) = bulkwatch::worker::ocr_readings();
    assert_eq!((after - before, reused_after - reused), (1, 1));
    let other = dress::text_picture_message(&texts::OWN[3].1.join("\n\n"), 3);
    read(&other, &rcpts, &read_config(&cfg));
    assert_eq!(
        bulkwatch::worker::ocr_readings().0 - after,
        1,
        "another picture is read"
    );
}

/// A picture of dense text (7-pixel glyphs, lines 8 pixels apart, 1,200
/// × 900 pixels) under a short text: Tesseract's layout analysis of it
/// runs past its own deadline, which it does not look at there.
fn dense_picture_message() -> Vec<u8> {
    let (w, h) = (1200u32, 900u32);
    let mut img = image::GrayImage::from_pixel(w, h, image::Luma([250]));
    let mut st = 7u64;
    let mut next = || testkit::splitmix(&mut st);
    let mut y = 2;
    while y + 7 < h {
        let mut x = 2;
        while x + 7 < w {
            for _ in 0..1 + next() % 8 {
                let gw = 3 + (next() % 4) as u32;
                let shape = next();
                for dy in 0..7 {
                    for dx in 0..gw {
                        if (shape >> ((dx * 5 + dy * 3) % 16)) & 1 == 1 || dx == 0 {
                            if let Some(p) = img.get_pixel_mut_checked(x + dx, y + dy) {
                                p.0[0] = 10;
                            }
                        }
                    }
                }
                x += gw + 1;
            }
            x += 4;
        }
        y += 8;
    }
    let mut png = Vec::new();
    image::DynamicImage::ImageLuma8(img)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    format!(
        "From: Deals <offers@deals.example>\r\nTo: ann@example.net\r\nSubject: see\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n\
         --B\r\nContent-Type: text/plain\r\n\r\nDetails inside.\r\n\
         --B\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n\
         --B--\r\n",
        testkit::base64_lines(&png)
    )
    .into_bytes()
}

/// OCR is bounded by the daemon's clock (issue 64): an OCR worker still
/// reading a picture at the message's deadline (`limit` from when a reader
/// took it, the first reading's time included) is killed, the first
/// reading stands, and it is counted as killed, with the OCR workers'
/// timeout failure. Before, the OCR workers had a `limit` of their own
/// after the readers', and such messages were counted as read.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[tokio::test]
async fn a_picture_slow_to_read_is_bounded_by_the_daemons_clock() {
    let cfg = Config::default();
    let pool = start(&cfg, 1).await;
    let rcpts = vec!["ann@example.net".to_owned()];
    // The OCR workers started (and Tesseract made ready) with an ordinary
    // picture first, so that the limit below is the reading's alone.
    let text = texts::OWN[0].1.join("\n\n");
    let plain = dress::text_picture_message(&text, 0);
    pool.read(&plain, &rcpts, LIMIT).await.unwrap();
    assert_eq!(ocr_counts(&pool)[0], 1);
    let m = dense_picture_message();
    let limit = Duration::from_millis(300);
    let got = pool.read(&m, &rcpts, limit).await.unwrap();
    assert!(got.wants_ocr, "the readers' reading stood");
    assert_eq!(ocr_counts(&pool), [1, 0, 0, 1, 0, 0]);
    let ocr = pool.ocr_stats().unwrap();
    let timeouts = ocr.failures("timeout") + ocr.partial_failures("timeout");
    assert_eq!(timeouts, 1, "the OCR workers count the kill");
}

/// Where Tesseract is missing (here: its data named where there is
/// none), a picture under a short text is read as with OCR off: the OCR
/// workers say why they read nothing, and the readers' mark is cleared.
#[tokio::test]
async fn without_tesseract_a_picture_is_read_as_with_ocr_off() {
    let mut missing = Config::default();
    missing.scan.ocr = "/nonexistent/tessdata".into();
    let mut off = Config::default();
    off.scan.ocr = "off".into();
    let a = start(&missing, 1).await;
    let b = start(&off, 1).await;
    let rcpts = vec!["ann@example.net".to_owned()];
    let text = texts::OWN[1].1.join("\n\n");
    let m = dress::picture_message(&text, 0, 40);
    let (ra, rb) = (
        a.read(&m, &rcpts, LIMIT).await.unwrap(),
        b.read(&m, &rcpts, LIMIT).await.unwrap(),
    );
    assert_eq!(ra, rb);
    assert!(!ra.wants_ocr && !ra.pictures.is_empty());
    let status = a.sandbox();
    assert!(
        status.contains("; OCR workers: ") && status.contains("ocr=unavailable"),
        "{status}"
    );
    assert!(!b.sandbox().contains("OCR workers"), "{}", b.sandbox());
    // Counted as unavailable, where OCR is on but has no Tesseract.
    assert_eq!(
        (ocr_counts(&a), ocr_counts(&b)),
        ([0, 0, 0, 0, 0, 1], [0; 6])
    );
    assert!(a.ocr_stats().is_none());
}

#[tokio::test]
async fn an_abort_costs_one_reading_and_the_next_message_is_read() {
    let cfg = Config::default();
    let hooks = Hooks {
        abort_on: b"ABORT-HERE".to_vec(),
        hang_on: b"HANG-HERE".to_vec(),
        ..Hooks::default()
    };
    let pool = Pool::start(program(), &cfg, 1, hooks).await.unwrap();
    let rcpts = Vec::new();
    let e = pool
        .read(&message("ABORT-HERE"), &rcpts, LIMIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Failure::Died { cause } if cause.contains("SIGABRT")),
        "{e}"
    );
    let ok = pool.read(&message("fine"), &rcpts, LIMIT).await.unwrap();
    assert!(ok.parsed && ok.normalized.text.contains("premium"));
    let e = pool
        .read(&message("HANG-HERE"), &rcpts, Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(e, Failure::Timeout(_)), "{e}");
    let ok = pool.read(&message("fine"), &rcpts, LIMIT).await.unwrap();
    assert!(ok.parsed);
    assert_eq!(pool.stats().failures("died"), 1);
    assert_eq!(pool.stats().failures("timeout"), 1);
}

/// Run in a child process of this test binary (see
/// `the_sandbox_takes_files_and_network_away`): sandboxes this thread as a
/// worker is, then tries what a parser taken over by a sender would.
#[test]
fn sandboxed_probe() {
    let Some(secret) = std::env::var_os("BULKWATCH_SANDBOX_PROBE") else {
        return;
    };
    let port = std::env::var("BULKWATCH_SANDBOX_PORT").unwrap();
    let status = bulkwatch::worker::sandbox::apply(&ReadConfig::default());
    println!("status: {status}");
    match std::fs::read(&secret) {
        Ok(b) => println!("read: allowed {} bytes", b.len()),
        Err(e) => println!("read: denied {e}"),
    }
    match std::net::TcpStream::connect(format!("127.0.0.1:{port}")) {
        Ok(_) => println!("connect: allowed"),
        Err(e) => println!("connect: denied {e}"),
    }
    match std::process::Command::new("/bin/true").status() {
        Ok(_) => println!("exec: allowed"),
        Err(e) => println!("exec: denied {e}"),
    }
}

#[test]
fn the_sandbox_takes_files_and_network_away() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("bulkwatch.toml");
    std::fs::write(&secret, "hash_key = \"00112233445566778899aabbccddeeff\"\n").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "sandboxed_probe",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BULKWATCH_SANDBOX_PROBE", &secret)
        .env("BULKWATCH_SANDBOX_PORT", port.to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("status: seccomp=on"), "{text}");
    assert!(text.contains("read: denied"), "{text}");
    assert!(text.contains("connect: denied"), "{text}");
    assert!(text.contains("exec: denied"), "{text}");
    // Nothing reached the listener.
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err());
}

/// A batch read back to back in one worker: the same readings as one at a
/// time; a message that kills its worker in the middle fails alone, and
/// the messages after it are read by another worker.
#[tokio::test]
async fn a_batch_reads_as_single_messages_and_a_failure_costs_one() {
    let cfg = Config::default();
    let hooks = Hooks {
        abort_on: b"ABORT-HERE".to_vec(),
        hang_on: b"HANG-HERE".to_vec(),
        ..Hooks::default()
    };
    let pool = Pool::start(program(), &cfg, 1, hooks).await.unwrap();
    let msgs: Vec<Vec<u8>> = (0..40)
        .map(|i| match i {
            7 => message("ABORT-HERE"),
            23 => message("HANG-HERE"),
            // One larger than a pipe, so that writing and reading overlap.
            30 => message(&"filler ".repeat(50_000)),
            _ => message(&format!("number {i}")),
        })
        .collect();
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    let got = pool.read_many(&refs, Duration::from_secs(2)).await;
    assert_eq!(got.len(), 40);
    for (i, r) in got.iter().enumerate() {
        match i {
            7 => assert!(
                matches!(r, Err(Failure::Died { cause }) if cause.contains("SIGABRT")),
                "{r:?}"
            ),
            23 => assert!(matches!(r, Err(Failure::Timeout(_))), "{r:?}"),
            _ => assert_eq!(
                r.as_ref().unwrap(),
                &read(&msgs[i], &[], &read_config(&cfg)),
                "message {i}"
            ),
        }
    }
    assert_eq!(pool.stats().failures("died"), 1);
    assert_eq!(pool.stats().failures("timeout"), 1);
}
