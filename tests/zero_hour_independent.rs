//! Independent cases for zero hour and the Junk button, written from
//! docs/admin/zero-hour.md alone, on the rig of tests/common/dovecot.rs
//! (thresholds bulk 20 / suspect 10, suspect=tag, bulk=reject,
//! reporters=3).
//!
//! Class 1: ordinary mail in the mailboxes a bulk campaign reached stays
//! where it is when the campaign's copies are moved to Junk.
//! Class 2: an attacker's moves against reports (and the copy header)
//! change nothing the document says they cannot.
//! Class 3: campaigns that turn bulk have their delivered copies moved
//! within 60 s (and moved back when allowed).
//!
//! Each test shares one rig among several cases (different campaign texts
//! and subjects) and reports every case by name, passed or failed, before
//! it fails. `ZH_KEEP_LOGS=DIR` keeps the logs of each rig under DIR.

mod common;

use common::dovecot::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// ---------------------------------------------------------------- text

const WORDS: &[&str] = &[
    "account",
    "agenda",
    "answer",
    "april",
    "area",
    "argument",
    "article",
    "aspect",
    "audit",
    "autumn",
    "balance",
    "basket",
    "battery",
    "bicycle",
    "board",
    "border",
    "bridge",
    "budget",
    "building",
    "cabinet",
    "calendar",
    "camera",
    "canal",
    "capacity",
    "carpet",
    "castle",
    "ceiling",
    "chair",
    "channel",
    "chapter",
    "cheese",
    "chimney",
    "circle",
    "client",
    "climate",
    "closet",
    "coffee",
    "collar",
    "column",
    "comment",
    "concert",
    "contract",
    "corner",
    "cotton",
    "council",
    "county",
    "courage",
    "cousin",
    "cradle",
    "crystal",
    "culture",
    "curtain",
    "cushion",
    "customer",
    "danger",
    "debate",
    "decade",
    "delivery",
    "desert",
    "design",
    "detail",
    "device",
    "diamond",
    "dinner",
    "director",
    "distance",
    "doctor",
    "drawer",
    "driver",
    "eagle",
    "editor",
    "effort",
    "elbow",
    "engine",
    "estate",
    "evening",
    "expert",
    "fabric",
    "factory",
    "farmer",
    "feather",
    "fence",
    "festival",
    "finger",
    "flower",
    "forest",
    "fountain",
    "freight",
    "furnace",
    "garage",
    "garden",
    "gallery",
    "ginger",
    "glacier",
    "granite",
    "gravel",
    "guitar",
    "hammer",
    "harbour",
    "harvest",
    "helmet",
    "highway",
    "history",
    "holiday",
    "horizon",
    "hospital",
    "island",
    "jacket",
    "journey",
    "kettle",
    "kitchen",
    "ladder",
    "lantern",
    "lawyer",
    "leather",
    "lemon",
    "library",
    "lighthouse",
    "lizard",
    "lobby",
    "locker",
    "lumber",
    "magnet",
    "manager",
    "marble",
    "market",
    "meadow",
    "medal",
    "memory",
    "method",
    "minute",
    "mirror",
    "module",
    "monkey",
    "morning",
    "mountain",
    "museum",
    "napkin",
    "needle",
    "network",
    "notebook",
    "number",
    "office",
    "onion",
    "orange",
    "orchard",
    "organ",
    "oven",
    "owner",
    "oyster",
    "paddle",
    "palace",
    "pattern",
    "pencil",
    "pepper",
    "picture",
    "pillow",
    "planet",
    "plaster",
    "pocket",
    "poetry",
    "pottery",
    "powder",
    "printer",
    "problem",
    "program",
    "project",
    "pumpkin",
    "puzzle",
    "quarter",
    "rabbit",
    "railway",
    "record",
    "region",
    "report",
    "ribbon",
    "river",
    "rocket",
    "saddle",
    "salmon",
    "sample",
    "school",
    "season",
    "senate",
    "shelter",
    "shoulder",
    "signal",
    "silver",
    "sister",
    "skeleton",
    "sketch",
    "spider",
    "spring",
    "square",
    "stadium",
    "station",
    "statue",
    "stomach",
    "storage",
    "stream",
    "student",
    "studio",
    "summer",
    "supper",
    "surface",
    "sweater",
    "switch",
    "system",
    "table",
    "teacher",
    "temple",
    "theory",
    "thunder",
    "ticket",
    "timber",
    "tomato",
    "tongue",
    "tower",
    "tractor",
    "traffic",
    "trumpet",
    "tunnel",
    "turkey",
    "umbrella",
    "valley",
    "vessel",
    "village",
    "violin",
    "volcano",
    "wagon",
    "walnut",
    "warehouse",
    "weather",
    "whistle",
    "window",
    "winter",
    "wizard",
    "wrench",
    "yacht",
    "zipper",
    "borrows",
    "carries",
    "checks",
    "collects",
    "covers",
    "delivers",
    "describes",
    "drafts",
    "explains",
    "fixes",
    "follows",
    "gathers",
    "handles",
    "imagines",
    "improves",
    "joins",
    "keeps",
    "launches",
    "measures",
    "mentions",
    "moves",
    "notices",
    "offers",
    "orders",
    "paints",
    "places",
    "prepares",
    "promises",
    "reaches",
    "repairs",
    "returns",
    "reviews",
    "shares",
    "shows",
    "sorts",
    "studies",
    "supports",
    "teaches",
    "tests",
    "visits",
    "quiet",
    "bright",
    "narrow",
    "gentle",
    "heavy",
    "hollow",
    "ancient",
    "careful",
    "clever",
    "crooked",
    "distant",
    "eager",
    "early",
    "famous",
    "fragile",
    "generous",
    "honest",
    "humble",
    "lively",
    "lonely",
    "modern",
    "nervous",
    "polite",
    "proud",
    "rapid",
    "rough",
    "rural",
    "silent",
    "simple",
    "sturdy",
    "tender",
    "tidy",
];

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x2545_F491_4F6C_DD1D | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Wraps a paragraph at about 72 columns, CRLF.
fn wrap(p: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in p.split_whitespace() {
        if !line.is_empty() && line.len() + w.len() > 71 {
            out.push_str(&line);
            out.push_str("\r\n");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(&line);
    out
}

/// About `words` words of prose of its own for each seed: sentences of 7
/// to 13 words, a paragraph every four sentences. Two seeds never give
/// near-identical texts.
fn prose(seed: u64, words: usize) -> String {
    let mut r = Rng::new(seed);
    let mut paras = Vec::new();
    let mut para = String::new();
    let (mut n, mut sentences) = (0, 0);
    while n < words {
        let len = 7 + r.below(7);
        let mut s: Vec<String> = (0..len)
            .map(|_| WORDS[r.below(WORDS.len())].to_owned())
            .collect();
        let first = s[0].remove(0).to_ascii_uppercase();
        s[0].insert(0, first);
        if !para.is_empty() {
            para.push(' ');
        }
        para.push_str(&s.join(" "));
        para.push('.');
        n += len;
        sentences += 1;
        if sentences % 4 == 0 {
            paras.push(wrap(&para));
            para.clear();
        }
    }
    if !para.is_empty() {
        paras.push(wrap(&para));
    }
    paras.join("\r\n\r\n")
}

static SEQ: AtomicU64 = AtomicU64::new(1);

fn msgid(domain: &str) -> String {
    format!(
        "<{}.{}@{domain}>",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    )
}

/// A message: `headers` are more header lines (each ending in CRLF).
fn mail(from: &str, to: &[String], subject: &str, id: &str, headers: &str, body: &str) -> String {
    format!(
        "From: {from}\r\nTo: {}\r\nSubject: {subject}\r\nDate: Mon, 07 Dec 2026 10:{:02}:00 +0000\r\n\
         Message-ID: {id}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\
         {headers}\r\n{body}\r\n",
        to.join(", "),
        SEQ.load(Ordering::SeqCst) % 60
    )
}

/// A body quoted under an attribution line.
fn quote(who: &str, body: &str) -> String {
    let q: Vec<String> = body
        .split("\r\n")
        .map(|l| {
            if l.is_empty() {
                ">".to_owned()
            } else {
                format!("> {l}")
            }
        })
        .collect();
    format!(
        "On Mon, 7 Dec 2026 at 09:12, {who} wrote:\r\n{}",
        q.join("\r\n")
    )
}

fn users(r: impl IntoIterator<Item = usize>) -> Vec<String> {
    r.into_iter().map(user).collect()
}

// ---------------------------------------------------------- mailboxes

fn has(r: &Rig, i: usize, mbox: &str, subj: &str) -> bool {
    r.subjects(i, mbox).iter().any(|s| s.contains(subj))
}

fn count(r: &Rig, i: usize, mbox: &str, subj: &str) -> usize {
    r.subjects(i, mbox)
        .iter()
        .filter(|s| s.contains(subj))
        .count()
}

/// The raw message of a user's mailbox whose subject holds `subj`.
fn find(r: &Rig, i: usize, mbox: &str, subj: &str) -> Option<String> {
    r.mailbox(i, mbox).into_iter().find(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("Subject: "))
            .is_some_and(|s| s.contains(subj))
    })
}

/// Values of a header (any case, unfolded) in a raw message's header section.
fn header_values(raw: &str, name: &str) -> Vec<String> {
    let head = raw
        .replace("\r\n", "\n")
        .split("\n\n")
        .next()
        .unwrap_or("")
        .to_owned();
    let mut out: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for l in head.lines() {
        if l.starts_with(' ') || l.starts_with('\t') {
            if let Some(c) = cur.as_mut() {
                c.push(' ');
                c.push_str(l.trim());
            }
            continue;
        }
        if let Some(c) = cur.take() {
            out.push(c);
        }
        if let Some((n, v)) = l.split_once(':') {
            if n.eq_ignore_ascii_case(name) {
                cur = Some(v.trim().to_owned());
            }
        }
    }
    if let Some(c) = cur.take() {
        out.push(c);
    }
    out
}

fn until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Lets the daemon's 2 s rounds run several times: for what must NOT
/// happen (each such wait is followed by a check that it did not).
fn settle() {
    std::thread::sleep(Duration::from_secs(10));
}

/// Waits until every user has a message `subj` in INBOX (or Junk).
fn arrived(r: &Rig, who: &[usize], subj: &str) -> Result<(), String> {
    if until(30, || {
        who.iter()
            .all(|&i| has(r, i, "INBOX", subj) || has(r, i, "Junk", subj))
    }) {
        Ok(())
    } else {
        let missing: Vec<usize> = who
            .iter()
            .copied()
            .filter(|&i| !has(r, i, "INBOX", subj) && !has(r, i, "Junk", subj))
            .collect();
        Err(format!("{subj:?} never delivered to users {missing:?}"))
    }
}

/// Sends an ordinary message and waits until it is delivered: one more
/// message `subj` in each recipient's INBOX, Junk or Bulk.
fn ordinary(r: &Rig, from: &str, to: &[usize], raw: &str, subj: &str) -> Result<(), String> {
    let all = |i: usize| {
        count(r, i, "INBOX", subj) + count(r, i, "Junk", subj) + count(r, i, "Bulk", subj)
    };
    let before: Vec<usize> = to.iter().map(|&i| all(i)).collect();
    r.send(from, &users(to.iter().copied()), raw)
        .map_err(|e| format!("ordinary mail {subj:?} refused: {e}"))?;
    ensure(
        until(30, || to.iter().zip(&before).all(|(&i, &b)| all(i) > b)),
        || format!("{subj:?} never delivered to all of {to:?}"),
    )
}

/// A campaign: one transaction per group, until one is refused. The
/// users each delivered copy reached (in order, deduplicated), and the
/// index of the refused group. Waits for each accepted copy's delivery.
fn campaign(
    r: &Rig,
    from: &str,
    groups: &[Vec<usize>],
    subj: &str,
    body: impl Fn(usize, &[usize]) -> String,
) -> (Vec<usize>, Option<usize>) {
    let mut reached = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        match r.send(from, &users(g.iter().copied()), &body(k, g)) {
            Ok(()) => {
                arrived(r, g, subj).unwrap();
                for &i in g {
                    if !reached.contains(&i) {
                        reached.push(i);
                    }
                }
            }
            Err(_) => return (reached, Some(k)),
        }
    }
    (reached, None)
}

fn singles(r: std::ops::Range<usize>) -> Vec<Vec<usize>> {
    r.map(|i| vec![i]).collect()
}

/// The users of `who` whose `subj` is not (only) in `mbox`.
fn not_in(r: &Rig, who: &[usize], mbox: &str, subj: &str) -> Vec<usize> {
    let other = if mbox == "INBOX" { "Junk" } else { "INBOX" };
    who.iter()
        .copied()
        .filter(|&i| !has(r, i, mbox, subj) || has(r, i, other, subj))
        .collect()
}

/// Waits up to 60 s until every copy of `subj` of `who` lies in `mbox`.
fn moved(r: &Rig, who: &[usize], mbox: &str, subj: &str) -> Result<(), String> {
    if until(60, || not_in(r, who, mbox, subj).is_empty()) {
        Ok(())
    } else {
        Err(format!(
            "after 60 s, {subj:?} is not (only) in {mbox} for users {:?}",
            not_in(r, who, mbox, subj)
        ))
    }
}

/// Still in INBOX, not in Junk or Bulk.
fn stays(r: &Rig, who: &[usize], subj: &str) -> Result<(), String> {
    let bad: Vec<String> = who
        .iter()
        .filter(|&&i| {
            !has(r, i, "INBOX", subj) || has(r, i, "Junk", subj) || has(r, i, "Bulk", subj)
        })
        .map(|&i| {
            format!(
                "u{i}: INBOX {} Junk {} Bulk {}",
                count(r, i, "INBOX", subj),
                count(r, i, "Junk", subj),
                count(r, i, "Bulk", subj)
            )
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{subj:?} moved: {}", bad.join("; ")))
    }
}

// ------------------------------------------------------------- reports

/// A user's Junk button on the messages of INBOX whose subject holds `subj`.
fn junk_button(r: &Rig, i: usize, subj: &str) {
    Imap::login(r.imap_port, &user(i)).move_subject("INBOX", subj, "Junk");
}

/// `bulkwatch report KIND --user USER < raw`, at host 0's report socket.
fn report_cli(r: &Rig, kind: &str, who: &str, raw: &str) -> Result<String, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["report", kind, "--user", who, "--socket"])
        .arg(r.dir.join("host0/report.sock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(raw.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "report {kind} --user {who}: {}: {text}",
            out.status
        ))
    }
}

/// IMAP APPEND of a message into the user's Junk (LITERAL+): what a
/// client does when its user drags a message from elsewhere into Junk.
fn append_junk(r: &Rig, i: usize, raw: &str) {
    let data = raw.replace("\r\n", "\n").replace('\n', "\r\n");
    let mut s = Imap::login(r.imap_port, &user(i));
    s.cmd(&format!("APPEND Junk {{{}+}}\r\n{data}", data.len()));
}

fn mark_seen(r: &Rig, i: usize, subj: &str) {
    let mut s = Imap::login(r.imap_port, &user(i));
    s.cmd("SELECT INBOX");
    let found = s.cmd(&format!("UID SEARCH SUBJECT \"{subj}\""));
    let uids: Vec<String> = found
        .iter()
        .filter_map(|l| l.strip_prefix("* SEARCH"))
        .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    assert!(!uids.is_empty(), "no {subj:?} in u{i}'s INBOX");
    s.cmd(&format!("UID STORE {} +FLAGS (\\Seen)", uids.join(",")));
}

fn report_lines(r: &Rig) -> usize {
    r.log().lines().filter(|l| l.contains("reported")).count()
}

// ---------------------------------------------------------------- cases

/// Named cases of one rig, each with what went wrong.
struct Cases {
    names: Vec<(&'static str, &'static str)>,
    errors: BTreeMap<&'static str, Vec<String>>,
}

impl Cases {
    fn new(names: &[(&'static str, &'static str)]) -> Cases {
        Cases {
            names: names.to_vec(),
            errors: BTreeMap::new(),
        }
    }

    /// One step of a case; a failure (or a panic) is the case's.
    fn step(&mut self, case: &'static str, f: impl FnOnce() -> Result<(), String>) {
        assert!(self.names.iter().any(|(n, _)| *n == case), "{case}");
        let res = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
            Err(p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panic".to_owned()))
        });
        if let Err(e) = res {
            eprintln!("[{case}] {e}");
            self.errors.entry(case).or_default().push(e);
        }
    }

    fn finish(self, r: &Rig, test: &str) {
        if let Ok(dir) = std::env::var("ZH_KEEP_LOGS") {
            let d = std::path::Path::new(&dir).join(test);
            let _ = std::fs::create_dir_all(&d);
            let _ = std::fs::write(d.join("all.log"), r.all_logs());
        }
        let mut summary = String::new();
        for (n, what) in &self.names {
            match self.errors.get(n) {
                None => summary.push_str(&format!("CASE {n} passed: {what}\n")),
                Some(e) => summary.push_str(&format!(
                    "CASE {n} FAILED: {what}\n    {}\n",
                    e.join("\n    ")
                )),
            }
        }
        eprintln!("{summary}");
        if !self.errors.is_empty() {
            let log = r.log();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "--- last lines of bulkwatch's log\n{}\n--- cases\n{summary}",
                tail.join("\n")
            );
        }
    }
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

/// The partner's signature and disclaimer, shared by its staff's ordinary
/// mail and by the campaign sent from its compromised accounts.
fn partner_footer(name: &str) -> String {
    format!(
        "-- \r\n{name}\r\nAccounts and Logistics\r\nPartner Holdings Ltd | 12 Harbour Road | Bristol BS1 4QA\r\n\
         Tel +44 117 496 0000 | www.partner.example\r\n\r\n\
         {}",
        wrap(
            "CONFIDENTIALITY NOTICE: This email and any attachments are confidential and \
             intended solely for the use of the individual or entity to whom they are \
             addressed. If you have received this email in error please notify the sender \
             immediately and delete it from your system. Any views or opinions presented \
             are solely those of the author and do not necessarily represent those of \
             Partner Holdings Ltd. Partner Holdings Ltd accepts no liability for any damage \
             caused by any virus transmitted by this email. Partner Holdings Ltd is \
             registered in England and Wales under company number 01234567, registered \
             office 12 Harbour Road, Bristol. Please consider the environment before \
             printing this email."
        )
    )
}

// ============================================================== class 1

#[test]
#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot"
)]
fn class1_ordinary_mail_stays_when_a_campaign_is_moved() {
    let r = rig("");
    let mut c = Cases::new(&[
        ("1a", "a thread (message to 4, two answers to all, the sender's follow-up) in campaign recipients' mailboxes stays in INBOX"),
        ("1b", "a quote, an answer to all and a forward of it to two new colleagues stay in INBOX"),
        ("1c", "a poll to 8 and five answers to all stay in INBOX"),
        ("1d", "a List-Id post sent one copy per member to 25, and a List-Unsubscribe promo that itself turns bulk (list=yes), stay in INBOX"),
        ("1e", "five notes from the campaign's company (one from the very sender account) sharing its long signature/disclaimer stay in INBOX"),
    ]);
    let camp_subj = "[P1] Outstanding invoice 4471";
    let camp_body = |k: usize, g: &[usize]| {
        let from = format!("accounts{}@partner.example", k % 3);
        mail(
            &from,
            &users(g.iter().copied()),
            camp_subj,
            &msgid("partner.example"),
            "",
            &format!(
                "Hello,\r\n\r\n{}\r\n\r\nPlease settle the attached balance through our new payment\r\n\
                 portal at https://pay-partner.example/settle before Friday to avoid\r\n\
                 suspension of your account and late fees on every open order.\r\n\r\n{}",
                prose(1001, 60),
                partner_footer("Mary Jones")
            ),
        )
    };
    // The campaign's first twelve copies (the 10th to 12th are suspect).
    let groups = singles(0..20);
    let (first, refused) = campaign(
        &r,
        "accounts0@partner.example",
        &groups[..12],
        camp_subj,
        camp_body,
    );
    assert!(
        refused.is_none(),
        "campaign refused early at copy {refused:?}\n{}",
        r.log()
    );
    assert_eq!(first.len(), 12);

    // 1a: a thread.
    let s1a = "[1a] Delivery schedule for March";
    let ann0 = prose(1101, 70);
    let id0 = msgid("supplier.example");
    c.step("1a", || {
        ordinary(
            &r,
            "ann@supplier.example",
            &[5, 6, 7, 8],
            &mail(
                "Ann <ann@supplier.example>",
                &users([5, 6, 7, 8]),
                s1a,
                &id0,
                "",
                &format!("Hi all,\r\n\r\n{ann0}\r\n\r\nAnn"),
            ),
            s1a,
        )?;
        let id1 = msgid("example.net");
        let r1 = format!(
            "Hi Ann,\r\n\r\n{}\r\n\r\nu6\r\n\r\n{}",
            prose(1102, 45),
            quote("Ann", &ann0)
        );
        ordinary(
            &r,
            &user(6),
            &[5, 7, 8],
            &mail(
                &user(6),
                &users([5, 7, 8]),
                &format!("Re: {s1a}"),
                &id1,
                &format!("In-Reply-To: {id0}\r\nReferences: {id0}\r\n"),
                &r1,
            ),
            s1a,
        )?;
        let id2 = msgid("example.net");
        let r2 = format!("Thursday works for me.\r\n\r\n{}", quote("Ann", &ann0));
        ordinary(
            &r,
            &user(7),
            &[5, 6, 8],
            &mail(
                &user(7),
                &users([5, 6, 8]),
                &format!("Re: {s1a}"),
                &id2,
                &format!("In-Reply-To: {id0}\r\nReferences: {id0}\r\n"),
                &r2,
            ),
            s1a,
        )?;
        let id3 = msgid("supplier.example");
        let r3 = format!(
            "Thanks both, confirmed for Thursday.\r\n\r\n{}",
            quote(&user(7), &r2)
        );
        ordinary(
            &r,
            "ann@supplier.example",
            &[5, 6, 7, 8],
            &mail(
                "Ann <ann@supplier.example>",
                &users([5, 6, 7, 8]),
                &format!("Re: {s1a}"),
                &id3,
                &format!("In-Reply-To: {id2}\r\nReferences: {id0} {id2}\r\n"),
                &r3,
            ),
            s1a,
        )?;
        ensure(count(&r, 5, "INBOX", s1a) == 4, || {
            format!("u5 has {} thread messages", count(&r, 5, "INBOX", s1a))
        })
    });

    // 1b: a quote, an answer to all, a forward.
    let s1b = "[1b] Quote for the new printers";
    let bob = prose(1201, 80);
    let idb = msgid("vendor.example");
    c.step("1b", || {
        ordinary(&r, "bob@vendor.example", &[9, 10, 11],
            &mail("Bob <bob@vendor.example>", &users([9, 10, 11]), s1b, &idb, "", &format!("Dear team,\r\n\r\n{bob}\r\n\r\nBob")), s1b)?;
        let r1 = format!("Bob, all,\r\n\r\n{}\r\n\r\n{}", prose(1202, 40), quote("Bob", &bob));
        ordinary(&r, &user(9), &[10, 11],
            &mail(&user(9), &users([10, 11]), &format!("Re: {s1b}"), &msgid("example.net"), &format!("In-Reply-To: {idb}\r\nReferences: {idb}\r\n"), &r1), s1b)?;
        let fwd = format!(
            "FYI, see Bob's quote below; can you check the budget?\r\n\r\n---------- Forwarded message ---------\r\n\
             From: Bob <bob@vendor.example>\r\nSubject: {s1b}\r\n\r\n{bob}\r\n\r\nBob"
        );
        ordinary(&r, &user(10), &[12, 13],
            &mail(&user(10), &users([12, 13]), &format!("Fwd: {s1b}"), &msgid("example.net"), "", &fwd), s1b)
    });

    // 1c: a poll and its answers.
    let s1c = "[1c] Poll: which date for the offsite";
    let poll = format!(
        "Hello everyone,\r\n\r\n{}\r\n\r\nPlease answer with A (12 March), B (19 March) or C (26 March).\r\n\r\nCarol",
        prose(1301, 50)
    );
    let idp = msgid("events.example");
    let voters: Vec<usize> = (12..20).collect();
    c.step("1c", || {
        ordinary(
            &r,
            "carol@events.example",
            &voters,
            &mail(
                "Carol <carol@events.example>",
                &users(voters.iter().copied()),
                s1c,
                &idp,
                "",
                &poll,
            ),
            s1c,
        )?;
        for (n, &v) in voters[..5].iter().enumerate() {
            let others: Vec<usize> = voters.iter().copied().filter(|&o| o != v).collect();
            let ans = format!(
                "{} for me.\r\n\r\n{}",
                ["A", "B", "B", "C", "A"][n],
                quote("Carol", &poll)
            );
            ordinary(
                &r,
                &user(v),
                &others,
                &mail(
                    &user(v),
                    &users(others.iter().copied()),
                    &format!("Re: {s1c}"),
                    &msgid("example.net"),
                    &format!("In-Reply-To: {idp}\r\nReferences: {idp}\r\n"),
                    &ans,
                ),
                s1c,
            )?;
        }
        Ok(())
    });

    // 1d: a list post one copy per member; a promo with list headers.
    let s1d = "[1d] Harbour Cycling Club news, December";
    let s1d2 = "[1d] Winter sale at Shop Example";
    let news = format!(
        "Dear member,\r\n\r\n{}\r\n\r\nThe committee",
        prose(1401, 120)
    );
    let promo = format!("Hello,\r\n\r\n{}\r\n\r\nShop Example", prose(1402, 90));
    c.step("1d", || {
        let id = msgid("lists.example.org");
        for i in 0..25 {
            let raw = mail("Harbour Cycling Club <news@lists.example.org>", &[user(i)], s1d, &id,
                "List-Id: Club news <news.lists.example.org>\r\nList-Unsubscribe: <mailto:news-leave@lists.example.org>\r\nList-Post: NO\r\nPrecedence: list\r\n",
                &news);
            r.send(&format!("news-bounces+u{i}=example.net@lists.example.org"), &[user(i)], &raw)
                .map_err(|e| format!("list post to u{i} refused: {e}"))?;
        }
        arrived(&r, &(0..25).collect::<Vec<_>>(), s1d)?;
        for i in 0..25 {
            let raw = mail("Shop Example <promo@shop.example>", &[user(i)], s1d2, &msgid("shop.example"),
                "List-Unsubscribe: <https://shop.example/unsubscribe>\r\nPrecedence: bulk\r\n", &promo);
            r.send("bounce@shop.example", &[user(i)], &raw)
                .map_err(|e| format!("promo to u{i} refused: {e}"))?;
        }
        arrived(&r, &(0..25).collect::<Vec<_>>(), s1d2)?;
        let last = find(&r, 24, "INBOX", s1d2).unwrap_or_default();
        eprintln!("[1d] promo's last copy: {:?}", header_values(&last, "X-Bulkwatch"));
        Ok(())
    });

    // 1e: the partner's staff's own notes, with the same footer.
    let s1e = "[1e] Note from Partner Holdings";
    let staff = [
        "accounts0@partner.example",
        "john@partner.example",
        "priya@partner.example",
        "liam@partner.example",
        "sofia@partner.example",
    ];
    c.step("1e", || {
        for (n, from) in staff.iter().enumerate() {
            let body = format!(
                "Hi u{n},\r\n\r\n{}\r\n\r\nBest regards,\r\n\r\n{}",
                prose(1501 + n as u64, 60),
                partner_footer(from)
            );
            ordinary(
                &r,
                from,
                &[n],
                &mail(
                    from,
                    &[user(n)],
                    &format!("{s1e} {n}"),
                    &msgid("partner.example"),
                    "",
                    &body,
                ),
                s1e,
            )?;
        }
        Ok(())
    });

    // The campaign's remaining copies: bulk at the 20th.
    let (rest, refused) = campaign(
        &r,
        "accounts0@partner.example",
        &groups[12..],
        camp_subj,
        camp_body,
    );
    let mut reached = first.clone();
    reached.extend(rest);
    let precondition = (|| {
        ensure(refused.is_some(), || {
            format!("the campaign never turned bulk (reached {reached:?})")
        })?;
        moved(&r, &reached, "Junk", camp_subj)
    })();
    settle();
    for case in ["1a", "1b", "1c", "1d", "1e"] {
        if let Err(e) = &precondition {
            c.step(case, || {
                Err(format!("precondition: campaign copies not moved: {e}"))
            });
        }
    }
    c.step("1a", || stays(&r, &[5, 6, 7, 8], s1a));
    c.step("1a", || {
        ensure(count(&r, 5, "INBOX", s1a) == 4, || {
            "u5 lost thread messages".into()
        })
    });
    c.step("1b", || stays(&r, &[9, 10, 11, 12, 13], s1b));
    c.step("1b", || {
        ensure(
            count(&r, 10, "INBOX", s1b) == 2 && count(&r, 11, "INBOX", s1b) == 2,
            || "u10/u11 lost messages".into(),
        )
    });
    c.step("1c", || stays(&r, &voters, s1c));
    c.step("1c", || {
        ensure(
            voters.iter().all(|&v| count(&r, v, "INBOX", s1c) >= 5),
            || "a voter lost poll messages".into(),
        )
    });
    c.step("1d", || stays(&r, &(0..25).collect::<Vec<_>>(), s1d));
    c.step("1d", || stays(&r, &(0..25).collect::<Vec<_>>(), s1d2));
    c.step("1e", || {
        for n in 0..staff.len() {
            stays(&r, &[n], &format!("{s1e} {n}"))?;
        }
        Ok(())
    });
    c.finish(&r, "class1");
}

// ============================================================== class 2

#[test]
#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot"
)]
fn class2_reports_and_copy_headers_resist_an_attacker() {
    let r = rig("");
    let mut c = Cases::new(&[
        ("2a", "a sender forging X-Bulkwatch-Copy (a real copy's value, lower-case name, folded) into ordinary mail: header replaced, mail not moved when that campaign turns bulk"),
        ("2b", "one recipient with 3 copies reporting them 7 times (CLI x4 + Junk button on all 3): no copy moved, next copy accepted; (control: 2 more reporters make it bulk, copies moved)"),
        ("2c", "reports by non-recipients (IMAP APPEND of a colleague's copy into own Junk; CLI report with another's copy) + 2 recipients: not bulk; (control: a 3rd recipient makes it bulk)"),
        ("2d", "three recipients of a colleague's thread press Junk on it: others' thread mail stays, the next answer is delivered to INBOX"),
        ("2e", "one recipient of a copy delivered to a group of 4 reports it: group's and later recipients' copies stay, next copy accepted"),
        ("2f", "a recipient reports the campaign as ham: the campaign still turns bulk for the others and their copies are moved; only the reporter's copy stays"),
        ("2g", "after a campaign is moved, one recipient takes its copy out of Junk (ham): the others' copies stay in Junk, a new copy to another user is still refused"),
        ("2h", "the campaign's copies reuse the Message-ID of the recipients' ordinary thread (2d): the thread stays when the campaign is moved"),
    ]);
    // 2d's thread, whose Message-ID 2h's campaign copies reuse.
    let st = "[2d] Site visit agenda";
    let dave = prose(2401, 80);
    let idt = msgid("partner2.example");
    let thread_to: Vec<usize> = (10..16).collect();

    // --- 2a: the campaign whose copy headers the attacker reuses.
    let sf = "[F2] Your mailbox quota is full";
    let fbody = |k: usize, g: &[usize]| {
        mail(
            "IT Helpdesk <helpdesk@quota-alerts.example>",
            &users(g.iter().copied()),
            sf,
            &if (10..16).contains(&g[0]) {
                idt.clone()
            } else {
                msgid("quota-alerts.example")
            },
            "",
            &format!(
                "Dear user,\r\n\r\n{}\r\n\r\nReference {}\r\nIT Helpdesk",
                prose(2001, 70),
                70000 + k
            ),
        )
    };
    let fgroups = singles(0..20);
    let (mut freached, frefused) = campaign(
        &r,
        "helpdesk@quota-alerts.example",
        &fgroups[..10],
        sf,
        fbody,
    );
    let forged = "[2a] Lunch on Friday";
    c.step("2a", || {
        for (n, i) in [0usize, 1, 2].into_iter().enumerate() {
            let copy = find(&r, i, "INBOX", sf).ok_or("no F copy")?;
            let v = header_values(&copy, "X-Bulkwatch-Copy");
            ensure(v.len() == 1, || {
                format!(
                    "u{i}'s campaign copy has {} X-Bulkwatch-Copy headers",
                    v.len()
                )
            })?;
            let value = v[0].clone();
            let hdr = match n {
                0 => format!("X-Bulkwatch-Copy: {value}\r\n"),
                1 => format!("x-bulkwatch-copy: {value}\r\n"),
                _ => match value.split_once(' ') {
                    Some((a, b)) => format!("X-Bulkwatch-Copy: {a}\r\n {b}\r\n"),
                    None => format!("X-Bulkwatch-Copy:\r\n {value}\r\n"),
                },
            };
            let body = format!(
                "Hi u{i},\r\n\r\n{}\r\n\r\nMallory",
                prose(2101 + n as u64, 50)
            );
            let subj = format!("{forged} {n}");
            ordinary(
                &r,
                "mallory@attacker.example",
                &[i],
                &mail(
                    "Mallory <mallory@attacker.example>",
                    &[user(i)],
                    &subj,
                    &msgid("attacker.example"),
                    &hdr,
                    &body,
                ),
                &subj,
            )?;
            let got = find(&r, i, "INBOX", &subj).ok_or("forged mail not in INBOX")?;
            let hv = header_values(&got, "X-Bulkwatch-Copy");
            ensure(
                !hv.iter()
                    .any(|h| h.replace(' ', "") == value.replace(' ', "")),
                || format!("u{i}: the forged value was delivered: {hv:?}"),
            )?;
            ensure(hv.len() <= 1, || {
                format!("u{i}: {} copy headers delivered: {hv:?}", hv.len())
            })?;
        }
        Ok(())
    });

    // --- 2b: one user, many reports.
    let sm = "[M2] Claim your loyalty reward";
    let mbody = |k: usize, g: &[usize]| {
        mail(
            "Rewards <rewards@points.example>",
            &users(g.iter().copied()),
            sm,
            &msgid("points.example"),
            "",
            &format!(
                "Hello,\r\n\r\n{}\r\n\r\nCode {}\r\nRewards team",
                prose(2201, 70),
                500 + k
            ),
        )
    };
    let (mreached, mref) = campaign(&r, "rewards@points.example", &singles(20..28), sm, mbody);
    c.step("2b", || {
        ensure(mref.is_none() && mreached.len() == 8, || {
            format!("setup: {mreached:?} {mref:?}")
        })?;
        // u20 gets two more copies of it (other transactions, other codes).
        for k in [30, 31] {
            r.send("rewards@points.example", &[user(20)], &mbody(k, &[20]))
                .map_err(|e| format!("a further copy to u20 was refused: {e}"))?;
        }
        ensure(until(30, || count(&r, 20, "INBOX", sm) == 3), || {
            "u20's three copies not delivered".into()
        })?;
        let copy = find(&r, 20, "INBOX", sm).ok_or("no copy for u20")?;
        report_cli(&r, "spam", &user(20), &copy)?;
        for _ in 0..3 {
            // (Whether a repeated report is answered as an error or not,
            // the document does not say: either way it must count once.)
            let again = report_cli(&r, "spam", &user(20), &copy);
            eprintln!("[2b] repeated report: {again:?}");
        }
        junk_button(&r, 20, sm);
        Ok(())
    });

    // --- 2c: reports by people who did not receive the copy.
    let sn = "[N2] Package delivery attempt failed";
    let nbody = |k: usize, g: &[usize]| {
        mail(
            "Courier <noreply@courier-track.example>",
            &users(g.iter().copied()),
            sn,
            &msgid("courier-track.example"),
            "",
            &format!(
                "Dear customer,\r\n\r\n{}\r\n\r\nTracking {}",
                prose(2301, 70),
                880000 + k
            ),
        )
    };
    let (nreached, nref) = campaign(
        &r,
        "noreply@courier-track.example",
        &singles(0..8),
        sn,
        nbody,
    );
    c.step("2c", || {
        ensure(nref.is_none() && nreached.len() == 8, || {
            format!("setup: {nreached:?} {nref:?}")
        })?;
        let c1 = find(&r, 1, "INBOX", sn).ok_or("no copy for u1")?;
        let c2 = find(&r, 2, "INBOX", sn).ok_or("no copy for u2")?;
        append_junk(&r, 8, &c1); // u8 never received it
                                 // Nor did u9; the answers may be errors: they must not count.
        eprintln!(
            "[2c] u9's report: {:?}",
            report_cli(&r, "spam", &user(9), &c2)
        );
        eprintln!(
            "[2c] u8's report: {:?}",
            report_cli(&r, "spam", &user(8), &c2)
        );
        junk_button(&r, 1, sn);
        junk_button(&r, 2, sn);
        Ok(())
    });

    // --- 2d: a colleague's thread reported by three of its recipients.
    c.step("2d", || {
        ordinary(
            &r,
            "dave@partner2.example",
            &thread_to,
            &mail(
                "Dave <dave@partner2.example>",
                &users(thread_to.iter().copied()),
                st,
                &idt,
                "",
                &format!("Hello all,\r\n\r\n{dave}\r\n\r\nDave"),
            ),
            st,
        )?;
        for (n, v) in [11usize, 12].into_iter().enumerate() {
            let others: Vec<usize> = thread_to.iter().copied().filter(|&o| o != v).collect();
            let ans = format!(
                "{}\r\n\r\n{}",
                [
                    "Sounds good, I will bring the drawings.",
                    "I can join after lunch."
                ][n],
                quote("Dave", &dave)
            );
            ordinary(
                &r,
                &user(v),
                &others,
                &mail(
                    &user(v),
                    &users(others.iter().copied()),
                    &format!("Re: {st}"),
                    &msgid("example.net"),
                    &format!("In-Reply-To: {idt}\r\nReferences: {idt}\r\n"),
                    &ans,
                ),
                st,
            )?;
        }
        let ans = format!("Great, see you there.\r\n\r\n{}", quote("Dave", &dave));
        ordinary(
            &r,
            "dave@partner2.example",
            &thread_to,
            &mail(
                "Dave <dave@partner2.example>",
                &users(thread_to.iter().copied()),
                &format!("Re: {st}"),
                &msgid("partner2.example"),
                &format!("In-Reply-To: {idt}\r\nReferences: {idt}\r\n"),
                &ans,
            ),
            st,
        )?;
        for v in [10, 13, 14] {
            junk_button(&r, v, st);
        }
        Ok(())
    });

    // --- 2e: one recipient of a copy to a group.
    let sg = "[G2] Invitation: exclusive webinar seats";
    let gbody = |_k: usize, g: &[usize]| {
        mail(
            "Events <events@webinar-hub.example>",
            &users(g.iter().copied()),
            sg,
            &msgid("webinar-hub.example"),
            "",
            &format!("Hi there,\r\n\r\n{}\r\n\r\nEvents team", prose(2501, 70)),
        )
    };
    let (greached, gref) = campaign(
        &r,
        "events@webinar-hub.example",
        &[vec![16, 17, 18, 19], vec![20], vec![21]],
        sg,
        gbody,
    );
    c.step("2e", || {
        ensure(gref.is_none() && greached.len() == 6, || {
            format!("setup: {greached:?} {gref:?}")
        })?;
        junk_button(&r, 16, sg);
        Ok(())
    });

    // All reports in; the daemon's rounds run.
    let before = report_lines(&r);
    eprintln!("report lines in the log: {before}");
    settle();

    c.step("2b", || {
        let extra = mbody(8, &[28]);
        r.send("rewards@points.example", &[user(28)], &extra)
            .map_err(|e| format!("a copy after one user's 5 reports was refused: {e}"))?;
        arrived(&r, &[28], sm)?;
        stays(&r, &[21, 22, 23, 24, 25, 26, 27, 28], sm)
    });
    c.step("2c", || {
        let extra = nbody(8, &[10]);
        r.send("noreply@courier-track.example", &[user(10)], &extra)
            .map_err(|e| {
                format!("a copy after 2 recipients' + 2 outsiders' reports was refused: {e}")
            })?;
        arrived(&r, &[10], sn)?;
        stays(&r, &[0, 3, 4, 5, 6, 7, 10], sn)
    });
    c.step("2d", || {
        stays(&r, &[11, 12, 15], st)?;
        ensure(count(&r, 15, "INBOX", st) == 4, || {
            format!("u15 has {} thread messages", count(&r, 15, "INBOX", st))
        })?;
        let ans = format!(
            "One more thing: parking is behind the warehouse.\r\n\r\n{}",
            quote("Dave", &dave)
        );
        r.send(
            "dave@partner2.example",
            &users(thread_to.iter().copied()),
            &mail(
                "Dave <dave@partner2.example>",
                &users(thread_to.iter().copied()),
                &format!("Re: {st} (parking)"),
                &msgid("partner2.example"),
                &format!("In-Reply-To: {idt}\r\nReferences: {idt}\r\n"),
                &ans,
            ),
        )
        .map_err(|e| format!("the thread's next answer was refused: {e}"))?;
        arrived(&r, &[11, 12, 15], "(parking)")?;
        stays(&r, &[11, 12, 15], "(parking)")
    });
    c.step("2e", || {
        let extra = gbody(3, &[22]);
        r.send("events@webinar-hub.example", &[user(22)], &extra)
            .map_err(|e| format!("a copy after one group member's report was refused: {e}"))?;
        arrived(&r, &[22], sg)?;
        settle();
        stays(&r, &[17, 18, 19, 20, 21, 22], sg)
    });

    // Controls: enough distinct recipients do make 2b and 2c bulk.
    c.step("2b", || {
        junk_button(&r, 21, sm);
        junk_button(&r, 22, sm);
        moved(&r, &[23, 24, 25, 26, 27, 28], "Junk", sm)
            .map_err(|e| format!("control (3 reporters): {e}"))
    });
    c.step("2c", || {
        junk_button(&r, 3, sn);
        moved(&r, &[0, 4, 5, 6, 7, 10], "Junk", sn)
            .map_err(|e| format!("control (3rd recipient): {e}"))
    });

    // --- 2a, end: the campaign turns bulk; the forged mail stays.
    let (frest, frefused2) = campaign(
        &r,
        "helpdesk@quota-alerts.example",
        &fgroups[10..],
        sf,
        fbody,
    );
    freached.extend(frest);
    c.step("2a", || {
        ensure(frefused.is_none() && frefused2.is_some(), || {
            format!("campaign F never turned bulk: {freached:?}")
        })?;
        moved(&r, &freached, "Junk", sf)?;
        settle();
        for n in 0..3 {
            stays(&r, &[n], &format!("{forged} {n}"))?;
        }
        Ok(())
    });
    c.step("2h", || {
        ensure(not_in(&r, &freached, "Junk", sf).is_empty(), || {
            "precondition: campaign F not moved".into()
        })?;
        stays(&r, &[11, 12, 15], st)?;
        ensure(count(&r, 15, "INBOX", st) == 5, || {
            format!(
                "u15 has {} thread messages in INBOX",
                count(&r, 15, "INBOX", st)
            )
        })
    });

    // --- 2g: one recipient takes the moved copy back out of Junk.
    c.step("2g", || {
        ensure(not_in(&r, &freached, "Junk", sf).is_empty(), || {
            "precondition: campaign F not moved".into()
        })?;
        Imap::login(r.imap_port, &user(3)).move_subject("Junk", sf, "INBOX");
        if r.send(
            "helpdesk@quota-alerts.example",
            &[user(25)],
            &fbody(40, &[25]),
        )
        .is_ok()
        {
            return Err(
                "after one recipient's ham, a new copy to another user was accepted".into(),
            );
        }
        // The reporter's own later copy is let through (reason=reported_ham).
        r.send(
            "helpdesk@quota-alerts.example",
            &[user(3)],
            &fbody(41, &[3]),
        )
        .map_err(|e| format!("the ham reporter's later copy was refused: {e}"))?;
        ensure(until(30, || count(&r, 3, "INBOX", sf) == 2), || {
            "the ham reporter's later copy not delivered".into()
        })?;
        settle();
        let others: Vec<usize> = freached.iter().copied().filter(|&i| i != 3).collect();
        ensure(not_in(&r, &others, "Junk", sf).is_empty(), || {
            format!(
                "copies left Junk after one user's ham: {:?}",
                not_in(&r, &others, "Junk", sf)
            )
        })?;
        ensure(
            count(&r, 3, "INBOX", sf) == 2 && count(&r, 3, "Junk", sf) == 0,
            || {
                format!(
                    "u3: INBOX {} Junk {}",
                    count(&r, 3, "INBOX", sf),
                    count(&r, 3, "Junk", sf)
                )
            },
        )
    });

    // --- 2f: a ham report by one recipient.
    let sh = "[H2] Verify your payroll details";
    let hbody = |k: usize, g: &[usize]| {
        mail(
            "Payroll <payroll@hr-portal.example>",
            &users(g.iter().copied()),
            sh,
            &msgid("hr-portal.example"),
            "",
            &format!(
                "Dear employee,\r\n\r\n{}\r\n\r\nCase {}\r\nPayroll",
                prose(2601, 70),
                3000 + k
            ),
        )
    };
    let hgroups = singles(0..21);
    let (mut hreached, href) = campaign(&r, "payroll@hr-portal.example", &hgroups[..5], sh, hbody);
    c.step("2f", || {
        ensure(href.is_none(), || "refused early".into())?;
        let copy = find(&r, 0, "INBOX", sh).ok_or("no copy for u0")?;
        report_cli(&r, "ham", &user(0), &copy)?;
        let (rest, refused) = campaign(&r, "payroll@hr-portal.example", &hgroups[5..], sh, hbody);
        hreached.extend(rest);
        ensure(refused.is_some(), || {
            format!("after one ham report the campaign never turned bulk: {hreached:?}")
        })?;
        let others: Vec<usize> = hreached.iter().copied().filter(|&i| i != 0).collect();
        moved(&r, &others, "Junk", sh)?;
        settle();
        stays(&r, &[0], sh)
    });
    c.finish(&r, "class2");
}

// ============================================================== class 3

#[test]
#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot"
)]
fn class3_zero_hour_moves_the_copies_of_campaigns_that_turn_bulk() {
    let r = rig("");
    let mut c = Cases::new(&[
        ("3a", "copies to 3 recipients each: bulk at the 8th transaction, the 21 delivered copies moved to Junk within 60 s"),
        ("3b", "single copies with per-recipient greeting/reference, the later ones tagged suspect: all delivered copies moved within 60 s"),
        ("3c", "a campaign to 8 made bulk by three recipients' Junk button: the other 5 copies moved within 60 s, its next copy refused"),
        ("3d", "allow of a moved campaign (3b): its copies back in INBOX within 60 s, its next copy delivered and left there; another campaign's (3a) stay in Junk"),
        ("3e", "copies already read (\\Seen) and recipients with two copies (a reminder): every copy moved within 60 s"),
        ("3f", "allow of the campaign made bulk by reporters (3c): the 5 copies bulkwatch moved come back within 60 s, the reporters' own copies stay in Junk"),
    ]);

    // 3b first: single copies, tagged suspect from the 10th.
    let sb = "[B3] Security alert: unusual sign-in";
    let bbody = |k: usize, g: &[usize]| {
        mail(
            "Security <security@signin-check.example>",
            &users(g.iter().copied()),
            sb,
            &msgid("signin-check.example"),
            "",
            &format!(
                "Hello u{},\r\n\r\n{}\r\n\r\nReference {}\r\nSecurity team",
                g[0],
                prose(3201, 70),
                41000 + 7 * k
            ),
        )
    };
    let (breached, bref) = campaign(
        &r,
        "security@signin-check.example",
        &singles(0..30),
        sb,
        bbody,
    );
    let mut bcampaign = String::new();
    c.step("3b", || {
        ensure(bref.is_some(), || {
            format!("never turned bulk: {breached:?}")
        })?;
        let suspect: Vec<String> = breached
            .iter()
            .filter_map(|&i| find(&r, i, "INBOX", sb).or_else(|| find(&r, i, "Junk", sb)))
            .flat_map(|m| header_values(&m, "X-Bulkwatch"))
            .filter(|h| h.starts_with("suspect"))
            .collect();
        ensure(!suspect.is_empty(), || "no copy was tagged suspect".into())?;
        bcampaign = suspect[0]
            .split(';')
            .find_map(|p| p.trim().strip_prefix("campaign="))
            .unwrap_or_default()
            .to_owned();
        eprintln!(
            "[3b] {} suspect copies, campaign {bcampaign}, {} delivered",
            suspect.len(),
            breached.len()
        );
        moved(&r, &breached, "Junk", sb)
    });

    // 3a: copies to three recipients each.
    let sa = "[A3] Invoice overdue notice";
    let abody = |k: usize, g: &[usize]| {
        mail(
            "Billing <billing@invoice-desk.example>",
            &users(g.iter().copied()),
            sa,
            &msgid("invoice-desk.example"),
            "",
            &format!(
                "Dear customer,\r\n\r\n{}\r\n\r\nInvoice {}\r\nBilling",
                prose(3101, 70),
                9100 + k
            ),
        )
    };
    let agroups: Vec<Vec<usize>> = (0..10).map(|k| vec![3 * k, 3 * k + 1, 3 * k + 2]).collect();
    let (areached, aref) = campaign(&r, "billing@invoice-desk.example", &agroups, sa, abody);
    c.step("3a", || {
        ensure(aref.is_some(), || {
            format!("never turned bulk: {areached:?}")
        })?;
        eprintln!(
            "[3a] refused at transaction {aref:?}, {} recipients delivered",
            areached.len()
        );
        moved(&r, &areached, "Junk", sa)
    });

    // 3c: three reporters.
    let sc = "[C3] Your parcel is waiting for customs";
    let cbody = |k: usize, g: &[usize]| {
        mail(
            "Customs <customs@clearance-fee.example>",
            &users(g.iter().copied()),
            sc,
            &msgid("clearance-fee.example"),
            "",
            &format!(
                "Hello,\r\n\r\n{}\r\n\r\nParcel {}",
                prose(3301, 70),
                600 + k
            ),
        )
    };
    let (creached, cref) = campaign(
        &r,
        "customs@clearance-fee.example",
        &singles(20..28),
        sc,
        cbody,
    );
    c.step("3c", || {
        ensure(cref.is_none() && creached.len() == 8, || {
            format!("setup: {creached:?} {cref:?}")
        })?;
        let before = report_lines(&r);
        for v in [20, 21, 22] {
            junk_button(&r, v, sc);
        }
        eprintln!("[3c] report lines: {} -> {}", before, report_lines(&r));
        moved(&r, &[23, 24, 25, 26, 27], "Junk", sc)?;
        // "judged bulk from then on": the next copy is refused (reject).
        ensure(
            r.send(
                "customs@clearance-fee.example",
                &[user(28)],
                &cbody(8, &[28]),
            )
            .is_err(),
            || "a copy after three reporters was accepted".into(),
        )
    });

    // 3e: read copies and two copies per recipient.
    let se = "[E3] Parcel held at depot";
    let ebody = |k: usize, g: &[usize]| {
        let subj = if g.len() > 1 {
            format!("{se} (reminder)")
        } else {
            se.to_owned()
        };
        mail(
            "Depot <depot@parcel-hold.example>",
            &users(g.iter().copied()),
            &subj,
            &msgid("parcel-hold.example"),
            "",
            &format!(
                "Dear customer,\r\n\r\n{}\r\n\r\nDepot reference {}",
                prose(3501, 70),
                120 + k
            ),
        )
    };
    let (mut ereached, eref) =
        campaign(&r, "depot@parcel-hold.example", &singles(0..10), se, ebody);
    c.step("3e", || {
        ensure(eref.is_none(), || "refused early".into())?;
        for i in 0..5 {
            mark_seen(&r, i, se);
        }
        let (_, rr) = campaign(
            &r,
            "depot@parcel-hold.example",
            &[vec![0, 1, 2]],
            se,
            |_, g| ebody(99, g),
        );
        ensure(rr.is_none(), || "the reminder was refused".into())?;
        ensure(
            until(30, || (0..3).all(|i| count(&r, i, "INBOX", se) == 2)),
            || "reminders not delivered".into(),
        )?;
        let (rest, refused) =
            campaign(&r, "depot@parcel-hold.example", &singles(10..30), se, ebody);
        ereached.extend(rest);
        ensure(refused.is_some(), || {
            format!("never turned bulk: {ereached:?}")
        })?;
        moved(&r, &ereached, "Junk", se)?;
        ensure((0..3).all(|i| count(&r, i, "Junk", se) == 2), || {
            format!(
                "the two copies of u0..u2: {:?}",
                (0..3)
                    .map(|i| (count(&r, i, "INBOX", se), count(&r, i, "Junk", se)))
                    .collect::<Vec<_>>()
            )
        })
    });

    // 3d: allow 3b's campaign.
    c.step("3d", || {
        ensure(!bad_id(&bcampaign), || "no campaign id for 3b".into())?;
        let out = r.bulkwatch(&["campaigns", "allow", &bcampaign]);
        eprintln!("[3d] allow {bcampaign}: {}", out.trim());
        moved(&r, &breached, "INBOX", sb)?;
        // The allowed campaign's later copy is delivered and left alone.
        r.send(
            "security@signin-check.example",
            &[user(25)],
            &bbody(50, &[25]),
        )
        .map_err(|e| format!("a copy after allow was refused: {e}"))?;
        arrived(&r, &[25], sb)?;
        settle();
        stays(&r, &[25], sb)?;
        ensure(not_in(&r, &breached, "INBOX", sb).is_empty(), || {
            format!(
                "3b's copies left INBOX again for {:?}",
                not_in(&r, &breached, "INBOX", sb)
            )
        })?;
        ensure(not_in(&r, &areached, "Junk", sa).is_empty(), || {
            format!(
                "3a's copies left Junk for {:?}",
                not_in(&r, &areached, "Junk", sa)
            )
        })
    });

    // 3f: allow the campaign the reporters made bulk.
    c.step("3f", || {
        let log = r.log();
        let id = log
            .lines()
            .filter(|l| l.contains("reported spam by a recipient"))
            .filter_map(|l| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix("campaign="))
            })
            .next_back()
            .map(|c| c.trim_matches('"').to_owned())
            .ok_or("no report line naming 3c's campaign")?;
        let out = r.bulkwatch(&["campaigns", "allow", &id]);
        eprintln!("[3f] allow {id}: {}", out.trim());
        moved(&r, &[23, 24, 25, 26, 27], "INBOX", sc)?;
        settle();
        ensure(not_in(&r, &[20, 21, 22], "Junk", sc).is_empty(), || {
            format!(
                "the reporters' own moves to Junk were undone for {:?}",
                not_in(&r, &[20, 21, 22], "Junk", sc)
            )
        })
    });
    c.finish(&r, "class3");
}

fn bad_id(id: &str) -> bool {
    id.len() != 12
}
