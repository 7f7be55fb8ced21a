//! Real mail: the SpamAssassin corpus, read in place from the directory named
//! by `BULKWATCH_CORPUS` (CI sets it; nothing from it is
//! copied into the repository). Without the variable these tests are
//! ignored, with the reason (`build.rs` sets `bulkwatch_corpus`), so
//! `cargo test` works anywhere.

use std::path::PathBuf;

use bulkwatch::config::Config;
use bulkwatch::engine::campaign::CampaignId;
use bulkwatch::engine::verdict::{Level, SkipReason};
use bulkwatch::replay::{
    arrival_time, read_mbox, replay_files, Clock, ReplayOptions, ReplaySummary,
};
use mail_parser::MessageParser;

/// A file of the corpus; a missing one fails the test (the directory was
/// there when the tests were built).
fn corpus(name: &str) -> PathBuf {
    let dir = std::env::var_os("BULKWATCH_CORPUS").expect("BULKWATCH_CORPUS was set at build time");
    let p = PathBuf::from(dir).join(name);
    assert!(p.exists(), "{} missing from BULKWATCH_CORPUS", p.display());
    p
}

fn run(paths: &[PathBuf], cfg: &Config) -> ReplaySummary {
    replay_files(paths, cfg, ReplayOptions::default(), |_| {}).expect("replay")
}

#[test]
#[cfg_attr(
    not(bulkwatch_corpus),
    ignore = "needs the corpus: set BULKWATCH_CORPUS"
)]
fn ham_is_never_bulk_at_default_thresholds() {
    let (easy, hard) = (corpus("sa-easy-ham.mbox"), corpus("sa-hard-ham.mbox"));
    let s = run(&[easy, hard], &Config::default());
    assert_eq!(s.records.len(), 2750);
    assert_eq!(s.read_errors, 0);
    let bulk: Vec<_> = s
        .records
        .iter()
        .filter(|r| r.level == Level::Bulk)
        .map(|r| &r.message_id)
        .collect();
    assert!(bulk.is_empty(), "ham flagged bulk: {bulk:?}");
}

/// At bulk_threshold 5 real bulk that is not spam (a daily newsletter, feed
/// items) replayed one second apart may be flagged; a discussion thread must
/// not be: replies quote each other, and quotes are not fingerprinted.
#[test]
#[cfg_attr(
    not(bulkwatch_corpus),
    ignore = "needs the corpus: set BULKWATCH_CORPUS"
)]
fn no_discussion_thread_is_flagged_at_threshold_5() {
    let (easy, hard) = (corpus("sa-easy-ham.mbox"), corpus("sa-hard-ham.mbox"));
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 5.0;
    let paths = [easy, hard];
    let s = run(&paths, &cfg);
    let mut raws = Vec::new();
    for p in &paths {
        let f = std::fs::File::open(p).expect("open");
        raws.extend(read_mbox(std::io::BufReader::new(f)).map(|m| m.expect("read")));
    }
    assert_eq!(raws.len(), s.records.len());
    let mut flagged = 0;
    for (r, raw) in s.records.iter().zip(&raws) {
        if r.level != Level::Bulk {
            continue;
        }
        flagged += 1;
        let m = MessageParser::default().parse(raw).expect("parses");
        let is_reply = m.in_reply_to().as_text().is_some()
            || m.references().as_text().is_some()
            || m.references().as_text_list().is_some()
            || m.subject()
                .is_some_and(|s| s.trim_start().to_ascii_lowercase().starts_with("re:"));
        assert!(
            !is_reply,
            "thread message flagged: {:?} {:?}",
            r.message_id, r.subject
        );
    }
    // The flagged ones are the newsletter and feed items; there are few.
    assert!(flagged <= 20, "{flagged} flagged");
}

/// The same sets with the spam, merged and judged at the times they
/// arrived (their top Received headers, from January to December 2002):
/// the newsletter's issues and the feed items arrive days apart and never
/// share a 6-hour window, so at bulk_threshold 5 no ham message is flagged.
/// On the simulated clock, one second apart, the newsletter is (above).
#[test]
#[cfg_attr(
    not(bulkwatch_corpus),
    ignore = "needs the corpus: set BULKWATCH_CORPUS"
)]
fn at_arrival_times_no_ham_is_flagged_at_threshold_5() {
    let (spam, easy, hard) = (
        corpus("sa-spam.mbox"),
        corpus("sa-easy-ham.mbox"),
        corpus("sa-hard-ham.mbox"),
    );
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 5.0;
    let opts = ReplayOptions {
        clock: Clock::Arrival,
        ..ReplayOptions::default()
    };
    let paths = [spam, easy, hard];
    let s = replay_files(&paths, &cfg, opts, |_| {}).expect("replay");
    assert_eq!(s.records.len(), 3250);
    // Each message judged at its own arrival time (every one has a date),
    // and so in order of arrival, whatever the order of the files.
    let mut own = std::collections::HashMap::new();
    for p in &paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let f = std::fs::File::open(p).expect("open");
        for (i, m) in read_mbox(std::io::BufReader::new(f)).enumerate() {
            own.insert((name.to_owned(), i + 1), arrival_time(&m.expect("read")));
        }
    }
    for r in &s.records {
        let t = own.get(&(r.mbox.clone(), r.index)).copied().flatten();
        assert_eq!(Some(r.time), t, "{} #{}", r.mbox, r.index);
    }
    // The easy-ham file is in the order its owner fetched it, not of
    // arrival at the MX: judged by arrival, its messages come out of file
    // order.
    let easy: Vec<usize> = s
        .records
        .iter()
        .filter(|r| r.mbox == "sa-easy-ham.mbox")
        .map(|r| r.index)
        .collect();
    assert!(easy.windows(2).any(|w| w[0] > w[1]));
    let merged: Vec<&str> = s.records.iter().map(|r| r.mbox.as_str()).collect();
    assert!(
        merged
            .windows(2)
            .any(|w| w[0] == "sa-easy-ham.mbox" && w[1] != w[0]),
        "the files are interleaved"
    );
    let ham_bulk = |s: &ReplaySummary| -> Vec<(String, usize, Option<CampaignId>)> {
        s.records
            .iter()
            .filter(|r| r.mbox != "sa-spam.mbox" && r.level == Level::Bulk)
            .map(|r| (r.mbox.clone(), r.index, r.campaign))
            .collect()
    };
    assert_eq!(ham_bulk(&s), [], "ham flagged at arrival times");
    // The same replay on the simulated clock flags the daily newsletters
    // (two of them since fingerprint v4: a short issue under a long footer
    // keeps its footer, as no cut may leave under 20 words): the clock,
    // not the thresholds, makes the difference.
    let simulated = replay_files(&paths, &cfg, ReplayOptions::default(), |_| {}).expect("replay");
    let flagged = ham_bulk(&simulated);
    assert!(!flagged.is_empty());
    let campaigns: std::collections::HashSet<_> = flagged.iter().map(|f| f.2).collect();
    assert!(campaigns.len() <= 2, "{campaigns:?}");
}

#[test]
#[cfg_attr(
    not(bulkwatch_corpus),
    ignore = "needs the corpus: set BULKWATCH_CORPUS"
)]
fn spam_replays_without_errors() {
    let spam = corpus("sa-spam.mbox");
    let s = run(&[spam], &Config::default());
    assert_eq!(s.records.len(), 500);
    assert_eq!(s.read_errors, 0);
    let unparsed = s
        .records
        .iter()
        .filter(|r| r.level == Level::Skipped(SkipReason::Unparsed))
        .count();
    assert_eq!(unparsed, 0);
}
