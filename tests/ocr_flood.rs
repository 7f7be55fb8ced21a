//! Pictures read later (issue 65, `milter::later`): a picture campaign's
//! copies that arrive while the OCR workers have no time for them are
//! judged at once without their pictures' text and say so
//! (`pictures=unread`), are read again when the workers are free, and
//! their campaign counts them then; a flood of picture mail from one
//! client cannot keep a 24-domain picture campaign from bulk. And a
//! message's pictures of text are paid once per family: a picture an OCR
//! worker remembers costs a message none of its four pictures.

mod common;
#[allow(dead_code)]
#[path = "dressed/dress.rs"]
mod dress;
#[allow(dead_code)]
#[path = "dressed/texts.rs"]
mod texts;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bulkwatch::config::{Action, Config};
use bulkwatch::engine::Engine;
use bulkwatch::milter::State;
use common::{Client, Mail};

/// A message's bytes as the MTA hands them over.
fn mail(raw: &[u8], queue_id: &str) -> Mail {
    let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").expect("a header section");
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.split('\n') {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = headers.last_mut() {
                last.1.push_str("\r\n");
                last.1.push_str(line);
            }
        } else if let Some((k, v)) = line.split_once(':') {
            headers.push((k.to_owned(), v.trim_start().to_owned()));
        }
    }
    Mail {
        headers,
        body: body.replace('\n', "\r\n"),
        rcpt: String::new(),
        queue_id: queue_id.to_owned(),
    }
}

/// The shipped thresholds (suspect 5, bulk 20), the message's time 5 s,
/// clean mail tagged.
fn config() -> Config {
    let mut cfg = Config::default();
    cfg.window.max_entries = 10_000;
    cfg.exact.bloom_items = 10_000;
    cfg.milter.engine_timeout = Duration::from_secs(5);
    cfg.policy.clean = Action::Tag;
    cfg
}

/// The campaign: one text drawn in a picture, each copy drawn anew (font
/// size, width, margins, colours), under a short line of random words
/// (image spam's hash buster): without the picture's text the copies
/// share nothing.
fn campaign_copy(i: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "amber", "basil", "cedar", "dune", "ember", "fjord", "grove", "harbor", "island", "jasper",
        "knoll", "lagoon", "meadow", "nectar", "orchid", "prairie", "quartz", "river", "summit",
        "thistle", "umber", "valley", "willow", "yarrow",
    ];
    let text = texts::OWN[1].1.join("\n\n");
    let raw = String::from_utf8(dress::text_picture_message(&text, i)).unwrap();
    let mut st = i as u64 + 1;
    let buster: Vec<&str> = (0..6)
        .map(|_| WORDS[(testkit::splitmix(&mut st) % WORDS.len() as u64) as usize])
        .collect();
    let buster = buster.join(" ");
    let mut out = raw;
    for cover in [
        "Please see the picture below.",
        "If you cannot see this offer, turn on pictures.",
        "Details inside.",
    ] {
        out = out.replace(cover, &buster);
    }
    out.into_bytes()
}

/// Copy `i` of the campaign from domain `i` through client network
/// 198.18.`i`.0/24, to its own recipient; the X-Bulkwatch header back.
async fn send_copy(addr: SocketAddr, i: usize) -> String {
    let m = mail(&campaign_copy(i), &format!("C{i:04}"));
    let (actions, _) = common::send_from(
        addr,
        Client::At([198, 18, u8::try_from(i).unwrap(), 1]),
        &m,
        &format!("<news@shop{i}.example>"),
        &[format!("user{i}@example.net")],
    )
    .await;
    common::daemon::header(&actions).unwrap_or_default()
}

/// Waits (bounded) until the later queue has read or given up on every
/// message queued; returns how many it read.
async fn drained(state: &State) -> u64 {
    let later = state.later().expect("workers");
    let c = &later.counts;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let queued = c.queued.load(Ordering::Relaxed);
        let done = c.read.load(Ordering::Relaxed) + c.failed.load(Ordering::Relaxed);
        if later.is_empty() && done >= queued {
            return c.read.load(Ordering::Relaxed);
        }
        assert!(
            Instant::now() < deadline,
            "the later queue did not drain: {queued} queued, {done} done"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The OCR workers held busy (as by a long reading) while 24 copies
/// arrive from 24 domains: each is judged at once, says its picture was
/// not read, and is not bulk (without their text the copies differ). Once
/// the workers are free the copies are read later and counted: the 25th
/// copy is bulk. Without the later reading the campaign stays clean.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_whose_pictures_were_not_read_are_read_later_and_counted() {
    let cfg = config();
    let pool = common::workers(&cfg).await;
    let held = pool
        .hold_ocr_worker("203.0.113.0/24")
        .await
        .expect("OCR workers read pictures");
    let m = common::start_state(State::new(Engine::new(&cfg)).with_workers(pool)).await;
    let sends: Vec<_> = (0..24)
        .map(|i| tokio::spawn(send_copy(m.addr, i)))
        .collect();
    for (i, s) in sends.into_iter().enumerate() {
        let h = s.await.unwrap();
        assert!(h.contains("pictures=unread"), "copy {i}: {h}");
        assert!(!h.starts_with("bulk"), "copy {i}: {h}");
    }
    let counts = &m.state.later().unwrap().counts;
    assert_eq!(counts.queued.load(Ordering::Relaxed), 24);
    assert_eq!(
        counts.read.load(Ordering::Relaxed),
        0,
        "none read while held"
    );
    drop(held);
    assert_eq!(drained(&m.state).await, 24);
    let h = send_copy(m.addr, 24).await;
    assert!(h.starts_with("bulk"), "{h}");
    assert!(!h.contains("pictures=unread"), "{h}");
    assert!(h.contains("size=25"), "{h}");
    m.stop().await;
}

/// A flood: picture mail from one client, each picture another text, sent
/// faster than the one OCR worker reads, while the campaign's 24 copies
/// arrive from 24 domains among it. Whatever the OCR worker had time for
/// at once, once it caught up the campaign holds all 24 and its next copy
/// is bulk; and the flood is read at one client's share.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_picture_mail_cannot_keep_a_campaign_from_bulk() {
    let mut cfg = config();
    cfg.milter.engine_timeout = Duration::from_secs(2);
    let pool = common::workers(&cfg).await;
    assert!(pool.start_ocr().await, "OCR workers read pictures");
    let m = Arc::new(common::start_state(State::new(Engine::new(&cfg)).with_workers(pool)).await);
    let flood: Vec<_> = (0..48)
        .map(|i| {
            let m = Arc::clone(&m);
            tokio::spawn(async move {
                let text = texts::OWN[(i % 4) + 2].1.join("\n\n");
                let raw = dress::text_picture_message(&text, 100 + i);
                let mail = mail(&raw, &format!("F{i:04}"));
                common::send_from(
                    m.addr,
                    Client::At([203, 0, 113, 9]),
                    &mail,
                    &format!("<x{i}@flood{i}.example>"),
                    &[format!("user{i}@example.net")],
                )
                .await;
            })
        })
        .collect();
    let sends: Vec<_> = (0..24)
        .map(|i| tokio::spawn(send_copy(m.addr, i)))
        .collect();
    for s in sends {
        s.await.unwrap();
    }
    for f in flood {
        f.await.unwrap();
    }
    drained(&m.state).await;
    let h = send_copy(m.addr, 24).await;
    assert!(h.starts_with("bulk"), "{h}");
    let m = Arc::into_inner(m).expect("the sends are done");
    m.stop().await;
}

/// A message of `pngs` attached under one short line.
fn pictures_message(pngs: &[Vec<u8>]) -> Vec<u8> {
    let mut m = String::from(
        "From: Deals <offers@deals.example>\r\nTo: ann@example.net\r\nSubject: see\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n\
         --B\r\nContent-Type: text/plain\r\n\r\nDetails inside.\r\n",
    );
    for (i, png) in pngs.iter().enumerate() {
        m.push_str(&format!(
            "--B\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=p{i}.png\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n",
            testkit::base64_lines(png)
        ));
    }
    m.push_str("--B--\r\n");
    m.into_bytes()
}

/// The share of the words of `part`'s reading found in `whole`'s.
fn share_read(part: &bulkwatch::engine::Reading, whole: &bulkwatch::engine::Reading) -> f64 {
    let words: Vec<&str> = part.normalized.text.split_whitespace().collect();
    let found = words
        .iter()
        .filter(|w| whole.normalized.text.contains(*w))
        .count();
    found as f64 / words.len().max(1) as f64
}

/// Decoys ahead of the picture of text (issue 65: two pictures a message
/// were read, so two pictures ahead kept the third from being read): the
/// third and the fourth pictures are read; and pictures an OCR worker
/// read before cost nothing, so a fifth picture behind four remembered
/// ones is read too.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn pictures_behind_decoys_and_remembered_ones_are_read() {
    use bulkwatch::engine::{read, read_config};
    let cfg = Config::default();
    bulkwatch::worker::provide_ocr_here(&cfg);
    let rcpts = vec!["ann@example.net".to_owned()];
    let rc = read_config(&cfg);
    let pngs: Vec<Vec<u8>> = (4..9)
        .map(|t| dress::text_picture_png(&texts::OWN[t].1.join("\n\n"), 7))
        .collect();
    let four = read(&pictures_message(&pngs[..4]), &rcpts, &rc);
    let five = read(&pictures_message(&pngs), &rcpts, &rc);
    // Each picture alone, after (remembered, or read once for the fifth).
    let alone: Vec<_> = pngs
        .iter()
        .map(|p| read(&pictures_message(std::slice::from_ref(p)), &rcpts, &rc))
        .collect();
    for (i, a) in alone.iter().enumerate().take(4) {
        assert!(
            a.normalized.tokens > 20,
            "picture {i}: {:?}",
            a.normalized.text
        );
        let share = share_read(a, &four);
        assert!(share > 0.9, "picture {i} of 4: {share:.2}");
    }
    let share = share_read(&alone[4], &five);
    assert!(share > 0.9, "the fifth behind four remembered: {share:.2}");
}
