//! State is bounded by the TOML caps, whatever the mail: a flood of
//! distinct messages (a flood of distinct campaigns) keeps the window, the
//! campaign slots, the LRU and the Bloom filters at their configured
//! sizes; a flood of copies of one text (all of them in one bucket of every
//! index table) is one campaign and keeps its counts right although a
//! lookup reads only the newest items of a bucket (the work bound itself
//! is counted in `index`'s unit tests); the milter session keeps at most
//! `max_message_bytes`; and the loader refuses caps beyond its ranges.

use bulkwatch::config::Config;
use bulkwatch::engine::verdict::Level;
use bulkwatch::engine::{Engine, Envelope, UnixSecs};
use bulkwatch::milter::session::Session;

const T0: u64 = 1_704_067_200;

/// Caps set the way an operator sets them: in the TOML file.
fn capped(max_entries: usize, lru: usize) -> Config {
    Config::from_toml_str(&format!(
        "[window]\nmax_entries = {max_entries}\n\
         [exact]\nbloom_items = {}\nlru_capacity = {lru}\n",
        max_entries * 2
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// One recipient, another person each call: a campaign's copies reach
/// different people (recipients are counted once a campaign).
fn env() -> Envelope {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Envelope {
        rcpts: vec![format!("x{n}@example.net")],
        ..Envelope::default()
    }
}

/// SplitMix64: reproducible word choices.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pronounceable word (so normalization keeps it), from the state.
fn word(state: &mut u64) -> String {
    const SYL: [&str; 24] = [
        "ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "ri", "so", "tu",
        "va", "we", "xi", "yo", "za", "bra", "cle", "dri", "sto",
    ];
    let n = 2 + next(state) % 2;
    (0..n)
        .map(|_| SYL[(next(state) % SYL.len() as u64) as usize])
        .collect()
}

/// A message of 60 random words: unlike any other.
fn distinct_message(i: u64) -> String {
    let mut st = i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xDEAD_BEEF;
    let mut body = String::new();
    for s in 0..6 {
        let words: Vec<String> = (0..10).map(|_| word(&mut st)).collect();
        body.push_str(&words.join(" "));
        body.push_str(if s % 2 == 0 { ".\n" } else { ". " });
    }
    format!("From: s{i}@sender.example\nSubject: note {i}\n\n{body}")
}

#[test]
fn a_flood_of_distinct_messages_stays_within_the_toml_caps() {
    let cfg = capped(1000, 300);
    let mut e = Engine::new(&cfg);
    let bloom_at_start = e.stats().bloom_bytes;
    let mut heap_when_full = 0;
    for i in 0..5000u64 {
        let v = e.process(distinct_message(i).as_bytes(), &env(), UnixSecs(T0 + i));
        assert_eq!(v.level, Level::Clean, "message {i}: {v:?}");
        assert_eq!(v.campaign.as_ref().map(|c| c.messages), Some(1), "{i}");
        let s = e.stats();
        assert!(s.window_entries <= 1000, "{i}: {s:?}");
        assert!(s.campaigns <= 1000, "{i}: {s:?}");
        assert!(s.campaign_slots <= 2 * 1000, "{i}: {s:?}");
        assert!(s.lru_entries <= 300, "{i}: {s:?}");
        // At most `generations` filters of fixed size.
        assert!(
            s.bloom_bytes <= cfg.exact.generations * bloom_at_start,
            "{i}: {s:?}"
        );
        if i == 1999 {
            heap_when_full = s.window_heap_bytes;
        }
    }
    let s = e.stats();
    assert_eq!(s.window_entries, 1000);
    assert_eq!(s.campaigns, 1000, "one campaign per message in the window");
    // Once full, the window and its tables stop growing.
    assert!(
        s.window_heap_bytes <= heap_when_full + heap_when_full / 4,
        "{} bytes after 5000 messages, {heap_when_full} after 2000",
        s.window_heap_bytes
    );
}

/// The same offer to many recipients: names, numbers and tracking links
/// differ, and normalization removes them, so every copy has the same
/// fingerprint and lands in the same bucket of every table.
fn copy(name: &str, n: u64) -> String {
    format!(
        "From: Deals <offers@deals.example>\nTo: {name} <{name}@example.net>\nSubject: Your offer {n}\n\n\
         Dear {name},\n\nWe are pleased to tell you that your account qualifies for our premium \
         savings program. Act now to claim the discount before the end of the week. \
         Visit https://track.deals.example/c/{n}?u={n} to confirm your details.\n\n\
         Our team reviewed your profile and selected you for an exclusive reward. Reply \
         today and receive free shipping on every order. Ref {n}{n}.\n"
    )
}

#[test]
fn a_flood_of_one_text_is_one_campaign_and_stays_within_the_caps() {
    // Larger than the 256 items a lookup reads from one bucket, so the
    // bound is exercised: counts must still cover the whole window.
    let max = 3000;
    let cfg = capped(max, 1000);
    let mut e = Engine::new(&cfg);
    let mut first_id = None;
    for i in 0..(2 * max as u64) {
        let name = format!("user{}", word(&mut i.clone()));
        let v = e.process(copy(&name, 1000 + i).as_bytes(), &env(), UnixSecs(T0 + i));
        let c = v.campaign.as_ref().expect("judged");
        first_id.get_or_insert(c.id);
        assert_eq!(Some(c.id), first_id, "message {i} joins the one campaign");
        assert_eq!(u64::from(c.messages), (i + 1).min(max as u64), "{i}");
        if i > 0 {
            assert_eq!(v.distance, Some(0), "{i}");
        }
        if i >= 20 {
            assert_eq!(v.level, Level::Bulk, "{i}");
        }
    }
    let s = e.stats();
    assert_eq!(s.window_entries, max);
    assert_eq!((s.campaigns, s.campaign_slots), (1, 1));
}

#[test]
fn a_session_keeps_at_most_max_message_bytes() {
    let cfg = Config::from_toml_str("[milter]\nmax_message_bytes = 4096\n").expect("config");
    let max = cfg.milter.max_message_bytes;
    let mut s = Session::default();
    s.begin_message("<a@example.org>", None);
    for i in 0..10_000 {
        s.add_recipient(&format!("<rcpt{i}@example.net>"));
    }
    for _ in 0..1000 {
        s.add_header(b"X-Filler", &[b'a'; 900], max);
    }
    s.end_headers(max);
    for _ in 0..1000 {
        s.add_body_chunk(&[b'b'; 65_535], max);
    }
    let m = s.finish_message();
    assert!(m.raw.len() <= max, "{} bytes kept", m.raw.len());
    assert!(m.raw.len() > max - 1000, "the bound is used, not undercut");
    assert!(m.truncated());
    // Recipients have a bound of their own: 64 kept, every one counted.
    assert_eq!(m.envelope.rcpts.len(), bulkwatch::engine::MAX_KEPT_RCPTS);
    assert_eq!(m.envelope.recipient_count(), 10_000);
}

/// Before: every RCPT counted against max_message_bytes (the whole list
/// summed again at each callback: 2.4 s of CPU for 80,000), so a recipient
/// flood pushed the headers and body out and the message went unjudged.
/// Now the header and body keep all their room.
#[test]
fn recipients_never_crowd_out_the_body() {
    let max = 4096;
    let mut s = Session::default();
    s.begin_message("<a@example.org>", None);
    for i in 0..200_000 {
        s.add_recipient(&format!("<{}{i}@example.net>", "r".repeat(40)));
    }
    s.add_header(b"Subject", b"hello", max);
    s.end_headers(max);
    s.add_body_chunk(&b"body text ".repeat(100), max);
    let m = s.finish_message();
    assert!(!m.truncated(), "nothing dropped");
    assert!(m.raw.ends_with(b"body text "), "the body is kept whole");
    assert_eq!(m.envelope.recipient_count(), u16::MAX, "counted, capped");
    assert_eq!(m.envelope.more_rcpts, 200_000 - 64);
    // An address longer than any SMTP path is kept cut.
    let mut s = Session::default();
    s.begin_message("<a@example.org>", None);
    s.add_recipient(&format!("<{}@example.net>", "é".repeat(1000)));
    let m = s.finish_message();
    assert!(m.envelope.rcpts[0].len() <= bulkwatch::milter::session::MAX_ADDRESS_BYTES);
}

#[test]
fn caps_beyond_their_ranges_are_refused_by_key() {
    for (toml, key) in [
        ("[window]\nmax_entries = 1073741825\n", "window.max_entries"),
        ("[window]\nmax_entries = 15\n", "window.max_entries"),
        ("[exact]\nbloom_items = 4294967297\n", "exact.bloom_items"),
        ("[exact]\nlru_capacity = 268435457\n", "exact.lru_capacity"),
        ("[exact]\ngenerations = 17\n", "exact.generations"),
        ("[scan]\nmax_scan_bytes = 67108865\n", "scan.max_scan_bytes"),
        (
            "[scan]\nmax_parse_bytes = 1073741825\n",
            "scan.max_parse_bytes",
        ),
        (
            "[milter]\nmax_message_bytes = 1073741825\n",
            "milter.max_message_bytes",
        ),
        (
            "[milter]\nmax_connections = 100001\n",
            "milter.max_connections",
        ),
        // The LRU allocates its table up front.
        ("[exact]\nlru_capacity = 16777217\n", "exact.lru_capacity"),
        // Each setting in range, together about 30 GiB of Bloom filters.
        (
            "[exact]\nbloom_items = 4294967296\nbloom_fp_rate = 1e-9\n",
            "exact.bloom_items",
        ),
        // A rate that would make each item's filter bits huge.
        ("[exact]\nbloom_fp_rate = 1e-300\n", "exact.bloom_fp_rate"),
    ] {
        let err = Config::from_toml_str(toml).expect_err(toml);
        assert_eq!(err.key(), Some(key), "{toml}");
    }
}

/// Peak resident memory of a live process, in kB (`VmHWM`).
fn peak_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// `bulkwatch replay -` fed an mbox whose second message is one line of
/// 256 MiB. Before, the reader kept the whole message and a copy (2.1 GB
/// peak for a 1 GB line); now it keeps what the parser reads of a message
/// (`max_parse_bytes`), reads past the rest, and judges the messages
/// around it.
#[test]
fn a_line_of_256_mib_is_read_past_in_bounded_memory() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    // The built-in defaults, never the host's /etc/bulkwatch.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["replay", "--jobs", "1", "--format", "jsonl", "--config"])
        .arg(&config)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"From a\nSubject: one\n\nfirst message\nFrom b\nSubject: two\n\n")
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..256 {
        stdin.write_all(&chunk).unwrap();
    }
    stdin
        .write_all(b"\nFrom c\nSubject: three\n\nthird message\n")
        .unwrap();
    stdin.flush().unwrap();
    // Everything written has been read (a pipe holds 64 KiB): the peak
    // of the reading is in.
    let peak = peak_kb(pid);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() || out.status.code() == Some(1));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(lines, 3, "three messages judged");
    assert!(peak > 0 && peak < 128 * 1024, "peak {peak} kB");
}
