//! Fuzz target bodies: each takes arbitrary bytes, must never panic on
//! them, and asserts invariants that are cheap to check.
//!
//! The `fuzz/` crate's targets call these functions and nothing else, and
//! `tests/fuzz_corpus.rs` runs them over the fixtures and over the committed
//! corpus in `fixtures/fuzz/<target>/`, so a crasher found once stays a
//! regression test. A panic here is a finding: either the library panicked
//! on input, or an assertion below caught a broken invariant.
//!
//! - [`message`]: raw bytes through MIME parsing, normalization,
//!   fingerprinting and two engine decisions.
//! - [`milter_session`]: the bytes as a script of milter callbacks on one
//!   [`Session`], compared with a model of what it must buffer.
//! - [`config`]: the bytes as TOML; an accepted file must hold the ranges
//!   the loader promises and give a working engine.
//! - [`snapshot`]: the bytes as a snapshot, and as a snapshot body sealed
//!   with a valid checksum (to get past it); an accepted snapshot must
//!   re-encode to a fixed point and keep working.
//! - [`mbox`]: the bytes as an mbox file, split by [`bulkwatch::replay::mbox`] and by
//!   mail-parser's iterator: the two must give the same messages.
//! - [`arrival`]: the bytes as a header section for the replay's arrival
//!   clock: its LF and CRLF forms must give the same time.
//!
//! Every function works on a small configuration ([`small_config`]) so that
//! one execution costs microseconds, not the megabytes of the default
//! window.

use std::net::IpAddr;

use sha2::{Digest, Sha256};

use bulkwatch::config::{Action, Config, PolicyConfig};
use bulkwatch::engine::simhash::VERSION;
use bulkwatch::engine::verdict::{campaign_level, AllowReason, Level, SkipReason, Verdict};
use bulkwatch::engine::{analyze, Engine, Envelope, UnixSecs};
use bulkwatch::milter::reply;
use bulkwatch::milter::session::{Message, Session, HEADER_NAME, SCORE_HEADER_NAME};

/// Simulated time of the first message of every target.
const T0: u64 = 1_704_067_200;

/// The default configuration with small state (window, Bloom filters,
/// LRU): the same fingerprints, a fraction of the memory.
pub fn small_config() -> Config {
    let mut cfg = Config::default();
    cfg.window.max_entries = 64;
    cfg.exact.bloom_items = 256;
    cfg.exact.lru_capacity = 64;
    cfg
}

/// A message long enough to take part in near matching, for targets that
/// need one after their own input (config, snapshot).
fn probe_message(n: u32) -> String {
    format!(
        "From: Deals <offers@deals.example>\r\nTo: someone@example.net\r\nSubject: offer {n}\r\n\r\n\
         We are pleased to tell you that your account qualifies for our premium savings \
         program. Act now to claim the discount before the end of the week, and visit \
         https://track.deals.example/c/{n} to confirm your details today.\r\n"
    )
}

fn one_recipient() -> Envelope {
    Envelope {
        rcpts: vec!["fuzz@example.net".to_owned()],
        ..Envelope::default()
    }
}

/// Bare LF line ends made CRLF (input without any CR only).
fn lf_to_crlf(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 16);
    for &b in raw {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// What holds for any verdict of an engine without allow-lists.
fn check_verdict(v: &Verdict, env: &Envelope, cfg: &Config) {
    match v.level {
        Level::Allowed(_) => {}
        Level::Skipped(_) => {
            assert!(v.campaign.is_none() && v.seq.is_none(), "{v:?}");
        }
        Level::Clean | Level::Suspect | Level::Bulk => {
            let c = v.campaign.as_ref();
            assert!(c.is_some(), "judged without a campaign: {v:?}");
            if let Some(c) = c {
                assert_eq!(v.level, campaign_level(c, &cfg.thresholds), "{v:?}");
                assert!(c.messages >= 1, "{v:?}");
                // Recipients are counted once a campaign: a campaign of
                // one message counts its recipients (at least one); a
                // later message only those new to the campaign.
                assert!(
                    c.messages > 1 || c.recipients >= 1,
                    "a campaign of one counts its recipients: {v:?} ({} RCPT)",
                    env.recipient_count()
                );
                assert!(c.first_seen <= c.last_seen, "{v:?}");
            }
            assert!(v.seq.is_some(), "{v:?}");
        }
    }
    if let Some(d) = v.distance {
        assert!(d <= 64, "{v:?}");
    }
    if let Some(r) = v.resemblance {
        assert!((0.0..=1.0).contains(&r), "{v:?}");
    }
    let header = v.header_value();
    assert!(
        header.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "header value must be printable ASCII: {header:?}"
    );
}

fn check_message(raw: &[u8], env: &Envelope, cfg: &Config) {
    let a = analyze(raw, env, cfg);
    assert_eq!(a, analyze(raw, env, cfg), "analyze is deterministic");
    if let Some(fp) = a.fingerprint {
        assert_eq!(fp.version, VERSION);
        assert_eq!(fp.features as usize, a.features);
    }
    // Line ends do not matter (mail arrives with CRLF from the MTA and LF
    // from mbox files). Only for input without CR, where the conversion is
    // unambiguous, and not when a byte bound cut the input.
    if !a.truncated && raw.contains(&b'\n') && !raw.contains(&b'\r') {
        let crlf = lf_to_crlf(raw);
        if crlf.len() <= cfg.scan.max_parse_bytes {
            let c = analyze(&crlf, env, cfg);
            assert_eq!(
                a.fingerprint, c.fingerprint,
                "LF and CRLF versions have different fingerprints"
            );
        }
    }

    let mut engine = Engine::new(cfg);
    let v1 = engine.decide(&a, env, UnixSecs(T0));
    check_verdict(&v1, env, cfg);
    assert!(
        !matches!(v1.level, Level::Allowed(_)),
        "no allow-list is configured"
    );
    if a.fingerprint.is_none() {
        assert_eq!(v1.level, Level::Skipped(SkipReason::Unparsed));
    }
    // The same bytes again: an exact match in the same campaign.
    let v2 = engine.process(raw, env, UnixSecs(T0 + 1));
    check_verdict(&v2, env, cfg);
    let stats = engine.stats();
    if let Level::Skipped(_) = v1.level {
        assert_eq!(v2.level, v1.level);
        assert_eq!(stats.window_entries, 0);
    } else {
        assert_eq!(v1.level, Level::Clean, "a first message is clean: {v1:?}");
        assert!(v2.exact, "a repeated message matches exactly: {v2:?}");
        assert_eq!(v2.distance, Some(0));
        assert_eq!(
            v1.campaign.as_ref().map(|c| c.id),
            v2.campaign.as_ref().map(|c| c.id),
            "a repeated message joins its campaign"
        );
        assert_eq!(v2.campaign.as_ref().map(|c| c.messages), Some(2));
        assert_eq!(stats.window_entries, 2);
        assert_eq!(stats.campaigns, 1);
    }
}

/// Raw bytes through the whole message pipeline: [`analyze`] (MIME,
/// normalization, fingerprint) and [`Engine::decide`] /
/// [`Engine::process`], twice. The input is also tried as the body of a
/// minimal message (plain text for even lengths, HTML for odd), so random
/// bytes reach the text and HTML paths, not only the header parser.
///
/// # Panics
/// On a bug: a panic inside the library, or a broken invariant (analysis
/// not deterministic, LF and CRLF fingerprints differ, a repeated message
/// not matched exactly, a verdict level that does not follow from its
/// campaign).
pub fn message(data: &[u8]) {
    let cfg = small_config();
    let env = one_recipient();
    check_message(data, &env, &cfg);
    let head: &[u8] = if data.len().is_multiple_of(2) {
        b"Subject: fuzz\nContent-Type: text/plain; charset=utf-8\n\n"
    } else {
        b"Subject: fuzz\nContent-Type: text/html\n\n"
    };
    let mut wrapped = Vec::with_capacity(head.len() + data.len());
    wrapped.extend_from_slice(head);
    wrapped.extend_from_slice(data);
    check_message(&wrapped, &env, &cfg);
}

// ------------------------------------------------------------- milter

/// Reads the fuzz input as a script.
struct Script<'a> {
    data: &'a [u8],
}

impl Script<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(*b)
    }

    /// Up to `max` bytes, length first.
    fn bytes(&mut self, max: u8) -> Vec<u8> {
        let n = usize::from(self.byte().unwrap_or(0) % max.max(1));
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head.to_vec()
    }

    /// Bytes as the milter library hands them over: C strings, no NUL.
    fn c_bytes(&mut self, max: u8) -> Vec<u8> {
        let mut b = self.bytes(max);
        b.retain(|&c| c != 0);
        b
    }

    /// A C string made text as the callbacks do (lossy UTF-8).
    fn text(&mut self, max: u8) -> String {
        String::from_utf8_lossy(&self.c_bytes(max)).into_owned()
    }

    fn addr(&mut self) -> Option<IpAddr> {
        match self.byte()? % 3 {
            0 => None,
            1 => {
                let b = self.bytes(5);
                let mut o = [0u8; 4];
                o.iter_mut().zip(&b).for_each(|(x, y)| *x = *y);
                Some(IpAddr::from(o))
            }
            _ => {
                let b = self.bytes(17);
                let mut o = [0u8; 16];
                o.iter_mut().zip(&b).for_each(|(x, y)| *x = *y);
                Some(IpAddr::from(o))
            }
        }
    }
}

/// `<a@b>` -> `a@b`, as the session documents it.
fn model_bare(arg: &str) -> String {
    let a = arg.trim();
    let a = a.strip_prefix('<').unwrap_or(a);
    a.strip_suffix('>').unwrap_or(a).to_owned()
}

/// What a [`Session`] must hold, kept by the simplest code that could.
#[derive(Default)]
struct Model {
    client_name: Option<String>,
    client_addr: Option<IpAddr>,
    client: bulkwatch::milter::origin::Client,
    helo: Option<String>,
    msg: Message,
    /// Largest bound in force since the message began (a reload can
    /// change the bound mid-message).
    max_seen: usize,
    /// Bytes offered to the current message (headers and body; recipients
    /// have a bound of their own).
    offered: usize,
}

impl Model {
    fn used(&self) -> usize {
        self.msg.raw.len()
    }

    fn append(&mut self, bytes: &[u8], max: usize) {
        self.offered += bytes.len();
        let keep = bytes.len().min(max.saturating_sub(self.used()));
        self.msg
            .raw
            .extend_from_slice(bytes.get(..keep).unwrap_or_default());
        self.msg.dropped_bytes += bytes.len() - keep;
    }

    fn reset_message(&mut self, max: usize) {
        self.msg = Message {
            client: self.client,
            ..Message::default()
        };
        self.max_seen = max;
        self.offered = 0;
    }
}

/// Runs what the milter runs at end of message and checks the outcome.
fn judge(engine: &mut Engine, m: &Message, now: UnixSecs) {
    let cfg = engine.config().clone();
    let v = engine.process(&m.raw, &m.envelope, now);
    check_verdict(&v, &m.envelope, &cfg);
    // The default allows mail whose recipients are all postmaster@ or
    // abuse@; nothing else (authenticated clients' mail is the site's
    // own, judged apart: `[own]`).
    if let Level::Allowed(r) = v.level {
        assert_eq!(r, AllowReason::Recipient, "{v:?}");
    }
    let policy = PolicyConfig {
        clean: Action::Tag,
        suspect: Action::Quarantine,
        bulk: Action::Tag,
        list: Action::Tag,
        own: Action::None,
    };
    match reply::decision_for(&v, &policy) {
        reply::Decision::Tag(t) | reply::Decision::Quarantine(t) => {
            assert!(matches!(
                v.level,
                Level::Clean | Level::Suspect | Level::Bulk
            ));
            assert!(!t.value.contains(['\r', '\n']), "header value {t:?}");
            let score = t.score_text();
            assert!(
                score.parse::<f64>().is_ok_and(|s| s >= 0.0),
                "score {score}"
            );
        }
        d => assert_eq!(d, reply::Decision::Accept, "{v:?}"),
    }
}

/// The bytes as a script of milter callbacks on one [`Session`]: connect,
/// HELO, MAIL, RCPT, headers, end of headers, body chunks, end of message,
/// abort, close, and changes of `max_message_bytes` (a reload), in any
/// order, as a confused or hostile MTA might send them. A model tracks
/// what the session must hold; at every end of message the collected
/// [`Message`] must equal it, hold at most the bound in bytes, account for
/// every byte offered, and the session must be empty afterwards. The first
/// few finished messages go through the engine and the reply mapping;
/// returns how many did. [`milter_script`] writes a script for a message.
///
/// # Panics
/// On a bug (see [`message`]).
pub fn milter_session(data: &[u8]) -> usize {
    const MAX_OPS: usize = 512;
    const MAX_JUDGED: usize = 4;
    let mut script = Script { data };
    let mut session = Session::default();
    let mut model = Model::default();
    let mut max: usize = 1024;
    model.max_seen = max;
    let mut engine: Option<Engine> = None;
    let mut judged = 0usize;
    let mut ops = 0usize;
    while let Some(op) = script.byte() {
        ops += 1;
        if ops > MAX_OPS {
            break;
        }
        match op % 12 {
            op::CONNECT => {
                let name = script.text(64);
                let addr = script.addr();
                session.connect(name.clone(), addr, None);
                model.client_name = Some(name);
                model.client_addr = addr;
                model.client = if addr.is_some() {
                    bulkwatch::milter::origin::Client::Inet
                } else {
                    bulkwatch::milter::origin::Client::Local
                };
            }
            op::HELO => {
                let name = script.text(64);
                session.helo(name.clone());
                model.helo = Some(name);
            }
            op::MAIL => {
                let from = script.text(64);
                let auth = match script.byte() {
                    Some(b) if b % 2 == 1 => Some(script.text(16)),
                    _ => None,
                };
                session.begin_message(&from, auth.clone());
                model.reset_message(max);
                model.msg.envelope = Envelope {
                    client_addr: model.client_addr,
                    helo: model.helo.clone(),
                    mail_from: Some(model_bare(&from)),
                    rcpts: Vec::new(),
                    auth_user: auth.filter(|u| !u.is_empty()),
                    queue_id: None,
                    ..Envelope::default()
                };
            }
            op::QUEUE_ID => {
                let id = match script.byte() {
                    Some(b) if b % 4 != 0 => Some(script.text(16)),
                    _ => None,
                };
                session.set_queue_id(id.clone());
                if let Some(id) = id.filter(|i| !i.is_empty()) {
                    model.msg.envelope.queue_id = Some(id);
                }
                assert_eq!(session.queue_id(), model.msg.queue_id());
            }
            op::RCPT => {
                let rcpt = script.text(64);
                session.add_recipient(&rcpt);
                let r = model_bare(&rcpt);
                let env = &model.msg.envelope;
                if env.rcpts.len() >= bulkwatch::engine::MAX_KEPT_RCPTS
                    && env.rcpts.len() + env.rcpt_hashes.len()
                        < bulkwatch::engine::party::MAX_MESSAGE_RCPTS
                {
                    let h = bulkwatch::engine::party::address_hash(&r);
                    model.msg.envelope.rcpt_hashes.push(h);
                }
                if model.msg.envelope.rcpts.len() < bulkwatch::engine::MAX_KEPT_RCPTS {
                    model.msg.envelope.rcpts.push(r);
                } else {
                    model.msg.envelope.more_rcpts += 1;
                }
            }
            op::HEADER => {
                let name = script.c_bytes(32);
                let value = script.c_bytes(128);
                session.add_header(&name, &value, max);
                if name.eq_ignore_ascii_case(HEADER_NAME.as_bytes()) {
                    model.msg.forged.headers += 1;
                } else if name.eq_ignore_ascii_case(SCORE_HEADER_NAME.as_bytes()) {
                    model.msg.forged.scores += 1;
                }
                let mut line = name;
                line.extend_from_slice(b": ");
                line.extend_from_slice(&value);
                line.extend_from_slice(b"\r\n");
                model.append(&line, max);
            }
            op::EOH => {
                session.end_headers(max);
                model.append(b"\r\n", max);
            }
            op::BODY => {
                // A chunk repeated: small inputs reach large bodies.
                let repeat = usize::from(script.byte().unwrap_or(0) % 64) + 1;
                let chunk = script.bytes(128).repeat(repeat);
                session.add_body_chunk(&chunk, max);
                model.append(&chunk, max);
            }
            op::EOM => {
                let m = session.finish_message();
                let kept = m.raw.len();
                assert!(m.envelope.rcpts.len() <= bulkwatch::engine::MAX_KEPT_RCPTS);
                assert!(
                    kept <= model.max_seen,
                    "{kept} bytes kept, bound {}",
                    model.max_seen
                );
                assert_eq!(kept + m.dropped_bytes, model.offered, "every byte counted");
                assert_eq!(m.truncated(), m.dropped_bytes > 0);
                assert_eq!(m, model.msg, "session holds what was sent");
                assert_eq!(
                    session.finish_message(),
                    Message {
                        client: model.client,
                        ..Message::default()
                    },
                    "empty after end of message"
                );
                model.reset_message(max);
                if judged < MAX_JUDGED && !m.raw.is_empty() {
                    judged += 1;
                    let e = engine.get_or_insert_with(|| Engine::new(&small_config()));
                    judge(e, &m, UnixSecs(T0 + judged as u64));
                }
            }
            op::ABORT => {
                session.abort_message();
                model.reset_message(max);
                assert_eq!(
                    session.finish_message(),
                    Message {
                        client: model.client,
                        ..Message::default()
                    }
                );
            }
            op::LIMIT => {
                let hi = script.byte().unwrap_or(0);
                let lo = script.byte().unwrap_or(0);
                max = usize::from(u16::from_be_bytes([hi, lo]));
                model.max_seen = model.max_seen.max(max);
            }
            _ => {
                // Close: the callbacks drop the session; the next stage
                // starts a fresh one.
                session = Session::default();
                model = Model::default();
                model.max_seen = max;
            }
        }
        assert_eq!(session.client_name, model.client_name);
        assert_eq!(session.client_addr, model.client_addr);
        assert_eq!(session.client, model.client);
        assert_eq!(session.helo, model.helo);
    }
    judged
}

/// Script operations of [`milter_session`] (the op byte modulo 12).
mod op {
    pub const CONNECT: u8 = 0;
    pub const HELO: u8 = 1;
    pub const MAIL: u8 = 2;
    pub const QUEUE_ID: u8 = 3;
    pub const RCPT: u8 = 4;
    pub const HEADER: u8 = 5;
    pub const EOH: u8 = 6;
    pub const BODY: u8 = 7;
    pub const EOM: u8 = 8;
    pub const ABORT: u8 = 9;
    /// A new `max_message_bytes` (a reload).
    pub const LIMIT: u8 = 10;
    // 11: close (the callbacks drop the session).
}

fn push_text(out: &mut Vec<u8>, s: &[u8], max: u8) {
    let s = s.get(..usize::from(max - 1)).unwrap_or(s);
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// A [`milter_session`] script that delivers `raw` the way an MTA does:
/// connect, HELO, MAIL, one RCPT, each header field (unfolded; names and
/// values longer than a script allows are cut), end of headers, the body
/// in chunks, end of message. Seeds the milter target with real mail.
pub fn milter_script(raw: &[u8]) -> Vec<u8> {
    let mut out = vec![op::CONNECT];
    push_text(&mut out, b"mx.example.net", 64);
    out.extend([1, 4, 192, 0, 2, 1]);
    out.push(op::HELO);
    push_text(&mut out, b"mx.example.net", 64);
    out.push(op::MAIL);
    push_text(&mut out, b"<sender@example.org>", 64);
    out.push(0);
    out.push(op::RCPT);
    push_text(&mut out, b"<fuzz@example.net>", 64);
    // Header section: up to the first empty line (RFC 5322 section 2.1).
    let mut rest = raw;
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
        let (line, tail) = rest.split_at(pos);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        rest = tail.get(1..).unwrap_or_default();
        if line.is_empty() {
            break;
        }
        match (line.first(), fields.last_mut()) {
            (Some(b' ' | b'\t'), Some((_, value))) => {
                value.extend_from_slice(b"\r\n");
                value.extend_from_slice(line);
            }
            _ => {
                let (name, value) = match line.iter().position(|&b| b == b':') {
                    Some(i) => line.split_at(i),
                    None => (line, &b":"[..]),
                };
                let value = value.get(1..).unwrap_or_default();
                let value = value.strip_prefix(b" ").unwrap_or(value);
                fields.push((name.to_vec(), value.to_vec()));
            }
        }
    }
    for (name, value) in &fields {
        out.push(op::HEADER);
        push_text(&mut out, name, 32);
        push_text(&mut out, value, 128);
    }
    out.push(op::EOH);
    for chunk in rest.chunks(127) {
        out.extend([op::BODY, 0]);
        push_text(&mut out, chunk, 128);
    }
    out.push(op::EOM);
    out
}

// ------------------------------------------------------------- config

/// The ranges [`Config::from_toml_str`] promises for an accepted file.
fn check_config(c: &Config) {
    let t = &c.thresholds;
    for (name, v) in [
        ("bulk_threshold", t.bulk_threshold),
        ("suspect_threshold", t.suspect_threshold),
        ("weak_match_weight", t.weak_match_weight),
    ] {
        assert!(v.is_finite(), "thresholds.{name} = {v} accepted");
    }
    assert!((1.0..=1e9).contains(&t.bulk_threshold));
    assert!((1.0..=1e9).contains(&t.suspect_threshold));
    assert!(t.suspect_threshold <= t.bulk_threshold);
    assert!((0.0..=1.0).contains(&t.weak_match_weight));
    assert!(t.strong_distance <= 7 && t.strong_sketch_diff <= 32);
    let w = &c.window;
    assert!((60..=30 * 86400).contains(&w.window.as_secs()));
    assert!((16..=1 << 30).contains(&w.max_entries));
    assert!(w.max_distance <= 7);
    assert!(w.minhash_bands <= bulkwatch::engine::minhash::MAX_BANDS);
    assert!(w.max_sketch_diff <= 32 && w.max_minhash_distance <= 64);
    assert!(w.corroborating_matches <= 256);
    assert!(w.corroborating_sketch_diff <= 32 && w.corroborating_distance <= 64);
    let e = &c.exact;
    assert!(e.bloom_fp_rate > 0.0 && e.bloom_fp_rate < 0.5);
    assert!((16..=1 << 32).contains(&e.bloom_items));
    assert!((2..=16).contains(&e.generations));
    assert!(e.lru_capacity >= 1);
    let f = &c.fingerprint;
    assert!((1..=8).contains(&f.shingle_words));
    assert!((1..=64).contains(&f.sample_modulus));
    assert!(f.min_features >= 1);
    assert!(c.scan.max_scan_bytes >= 1024 && c.scan.max_parse_bytes >= 1024);
    let m = &c.milter;
    assert!(m.max_message_bytes >= 1024 && m.max_connections >= 1);
    assert!(m.socket_mode <= 0o777);
    for text in [&m.reject_text, &m.tempfail_text] {
        assert!(!text.is_empty() && text.bytes().all(|b| (0x20..0x7f).contains(&b)));
    }
    assert!(c.allow.sender_domains.iter().all(|d| !d.is_empty()));
    assert!(
        c.restart_needed(c).is_empty(),
        "a config differs from itself"
    );
}

/// The bytes as a configuration file (lossy UTF-8, as an editor would save
/// it). A refused file must say why; an accepted one must hold every range
/// the loader promises, parse the same twice, and work: as a reload of a
/// running engine, and (when its state is small enough to build here) as a
/// fresh engine judging a message.
///
/// # Panics
/// On a bug (see [`message`]).
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let c = match Config::from_toml_str(&text) {
        Ok(c) => c,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    check_config(&c);
    let again = Config::from_toml_str(&text);
    assert!(
        again.as_ref().is_ok_and(|a| *a == c),
        "parsing is deterministic"
    );
    let env = one_recipient();
    let msg = probe_message(1);
    // A reload: state-shaping keys keep their running values.
    let mut running = Engine::new(&small_config());
    running.process(msg.as_bytes(), &env, UnixSecs(T0));
    running.reconfigure(&c);
    let v = running.process(msg.as_bytes(), &env, UnixSecs(T0 + 1));
    check_verdict(&v, &env, running.config());
    // A fresh engine, when building it here is cheap.
    if c.window.max_entries <= 1 << 12
        && c.exact.bloom_items <= 1 << 14
        && c.exact.bloom_fp_rate >= 1e-9
        && c.exact.lru_capacity <= 1 << 14
    {
        let mut e = Engine::new(&c);
        for i in 0..2 {
            let v = e.process(msg.as_bytes(), &env, UnixSecs(T0 + i));
            check_verdict(&v, &env, &c);
        }
    }
}

// ------------------------------------------------------------- snapshot

/// The body with its checksum appended, as a snapshot writer seals it.
pub fn seal_snapshot(body: &[u8]) -> Vec<u8> {
    let mut v = body.to_vec();
    v.extend_from_slice(&Sha256::digest(body));
    v
}

fn check_snapshot(bytes: &[u8], cfg: &Config) {
    let Ok((mut engine, loaded)) = bulkwatch::store::snapshot::decode(bytes, cfg) else {
        return;
    };
    let stats = engine.stats();
    assert!(stats.window_entries <= cfg.window.max_entries);
    // Re-encoding reaches a fixed point after one round.
    let once = bulkwatch::store::snapshot::encode(&engine, loaded.saved_at);
    let (again, l2) = match bulkwatch::store::snapshot::decode(&once, cfg) {
        Ok(x) => x,
        Err(e) => panic!("a re-encoded snapshot does not load: {e}"),
    };
    assert_eq!(l2.saved_at, loaded.saved_at);
    assert_eq!(
        bulkwatch::store::snapshot::encode(&again, loaded.saved_at),
        once,
        "encode(decode(encode(s))) == encode(s)"
    );
    // The loaded state keeps working: messages join, and everything
    // leaves the window when its time is over (when the loaded window is in
    // time order, as a real one is: eviction stops at the first entry that
    // is still young).
    let times: Vec<u32> = engine.window().iter().map(|(_, e)| e.time).collect();
    let in_order = times.windows(2).all(|w| w.first() <= w.get(1));
    let env = one_recipient();
    let now = engine
        .latest_time()
        .map_or(T0, |t| t.0.max(loaded.saved_at))
        .min(u64::from(u32::MAX) / 2);
    for i in 0..2 {
        let v = engine.process(probe_message(7).as_bytes(), &env, UnixSecs(now + i));
        check_verdict(&v, &env, cfg);
    }
    let later = now + cfg.window.window.as_secs() + 10;
    let v = engine.process(probe_message(8).as_bytes(), &env, UnixSecs(later));
    check_verdict(&v, &env, cfg);
    let s = engine.stats();
    assert!(s.window_entries <= cfg.window.max_entries);
    if in_order && times.last().is_none_or(|t| u64::from(*t) <= now) {
        assert_eq!(s.window_entries, 1, "everything older left the window");
    }
}

/// The bytes as a snapshot for [`small_config`]: once as they are (the
/// checksum must refuse nearly everything), and once as a body sealed with
/// a valid checksum, as a hostile or buggy writer would produce, to reach
/// the parser behind the checksum. A refused snapshot must give an error,
/// never a panic or a huge allocation; an accepted one must re-encode to a
/// fixed point, stay within the configured bounds and keep working.
///
/// # Panics
/// On a bug (see [`message`]).
pub fn snapshot(data: &[u8]) {
    let cfg = small_config();
    check_snapshot(data, &cfg);
    check_snapshot(&seal_snapshot(data), &cfg);
}

/// A snapshot body (without checksum) of an engine fed `messages` under
/// [`small_config`]: the seed format of the snapshot target.
pub fn snapshot_seed<'a>(messages: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let cfg = small_config();
    let mut e = Engine::new(&cfg);
    let env = one_recipient();
    for (i, m) in messages.into_iter().enumerate() {
        e.process(m, &env, UnixSecs(T0 + i as u64));
    }
    let mut bytes = bulkwatch::store::snapshot::encode(&e, T0);
    bytes.truncate(bytes.len().saturating_sub(32));
    bytes
}

/// The first byte picks a read block of 1 to 64 bytes, the rest is an
/// mbox file: bulkwatch's splitter must give the messages mail-parser's
/// gives, whatever the block size (see [`bulkwatch::replay::mbox`]).
pub fn mbox(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let block = usize::from(first % 64) + 1;
    let ours: Vec<Vec<u8>> = bulkwatch::replay::mbox::Mbox::with_block(input, block)
        .map(|m| m.unwrap_or_else(|e| panic!("in-memory read failed: {e}")))
        .collect();
    let theirs: Vec<Vec<u8>> = mail_parser::mailbox::mbox::MessageIterator::new(input)
        .map(|m| {
            m.unwrap_or_else(|e| panic!("in-memory read failed: {e}"))
                .unwrap_contents()
        })
        .collect();
    assert_eq!(ours, theirs, "block of {block} bytes");
}

// ------------------------------------------------------------- arrival

/// A header section for the replay's arrival clock
/// ([`bulkwatch::replay::arrival_time`]): any input gives a time or none, in
/// bounded work, and the same with its bare LFs made CRLF (an mbox
/// message and the same message off the wire).
///
/// # Panics
/// On a bug: a panic inside, or LF and CRLF forms that differ.
pub fn arrival(data: &[u8]) {
    let lf = bulkwatch::replay::arrival_time(data);
    let mut crlf = Vec::with_capacity(data.len() + data.len() / 8);
    for (i, &b) in data.iter().enumerate() {
        if b == b'\n' && (i == 0 || data.get(i - 1) != Some(&b'\r')) {
            crlf.push(b'\r');
        }
        crlf.push(b);
    }
    // Past the 64 KiB the clock reads, the two forms see different bytes.
    if crlf.len() <= 64 * 1024 {
        assert_eq!(
            lf,
            bulkwatch::replay::arrival_time(&crlf),
            "LF and CRLF forms differ"
        );
    }
}

// ---------------------------------------------------------------- html

/// An HTML document through [`bulkwatch::engine::mime::html::to_text`], at a text
/// bound the first byte picks: never a panic, the text and the returned
/// targets within their bounds, the same result twice, and for input
/// without markup (no `<` or `&`) the input's own words.
///
/// # Panics
/// On a bug.
pub fn html(data: &[u8]) {
    use bulkwatch::engine::mime::html::{to_text, Targets, MAX_IMAGES, MAX_URLS};
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let limit = 64 + usize::from(first) * 64;
    let doc = String::from_utf8_lossy(rest);
    let render = || {
        let mut out = String::new();
        let mut targets = Targets::default();
        to_text(&doc, &mut out, &mut targets, limit);
        (out, targets)
    };
    let (out, targets) = render();
    assert!(
        out.len() <= limit,
        "{} bytes past the bound {limit}",
        out.len()
    );
    assert!(targets.urls.len() <= MAX_URLS && targets.images.len() <= MAX_IMAGES);
    assert_eq!(
        (out.clone(), targets.clone()),
        render(),
        "not deterministic"
    );
    if !doc.contains(['<', '&']) && doc.len() < limit / 2 {
        let words = |s: &str| {
            s.split_ascii_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        // U+000C and the other ASCII whitespace collapse; NULs are the
        // tokenizer's to replace.
        if !doc.contains(['\0', '\r']) {
            assert_eq!(words(&out), words(&doc), "text without markup changed");
        }
    }
}

/// Bytes as an attached document (issue 54), through every reader of
/// `mime::document` the first byte picks (and the format the bytes sniff
/// as) and the smuggled-page decoder: never a panic, never more work than
/// the budget, the same result twice.
///
/// # Panics
/// On a bug.
pub fn document(data: &[u8]) {
    use bulkwatch::engine::mime::document::{read, smuggled, sniff, Budget, Format, WORK_BYTES};
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let formats = [
        Format::Zip,
        Format::Gzip,
        Format::Xml,
        Format::Rtf,
        Format::Card,
    ];
    let picked = formats[usize::from(first) % formats.len()];
    for format in [Some(picked), sniff(rest)].into_iter().flatten() {
        let run = || {
            let mut budget = Budget::default();
            let pieces = read(rest, format, usize::from(first >> 6), &mut budget);
            assert!(budget.bytes <= WORK_BYTES);
            format!("{pieces:?} {}", budget.cut)
        };
        assert_eq!(run(), run(), "not deterministic");
    }
    let mut budget = Budget::default();
    let pages = smuggled(&String::from_utf8_lossy(rest), &mut budget);
    let total: usize = pages.iter().map(String::len).sum();
    assert!(
        total <= WORK_BYTES,
        "{total} bytes smuggled past the budget"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_tiny_inputs_pass_every_target() {
        for data in [&b""[..], b"\n", b"\r\n\r\n", b"a", &[0xFF; 3]] {
            message(data);
            milter_session(data);
            config(data);
            snapshot(data);
            mbox(data);
            arrival(data);
            html(data);
        }
    }

    #[test]
    fn a_sealed_seed_loads() {
        let m1 = probe_message(1);
        let m2 = probe_message(2);
        let body = snapshot_seed([m1.as_bytes(), m2.as_bytes(), m1.as_bytes()]);
        let (e, _) = bulkwatch::store::snapshot::decode(&seal_snapshot(&body), &small_config())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.stats().window_entries, 3);
        snapshot(&body);
    }

    #[test]
    fn a_milter_script_reaches_the_engine() {
        let script = milter_script(probe_message(3).as_bytes());
        assert_eq!(milter_session(&script), 1);
        let mut twice = script.clone();
        twice.extend(&script);
        assert_eq!(milter_session(&twice), 2);
    }
}
