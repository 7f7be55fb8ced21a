//! Independent cases for one part of a reading class of
//! docs/admin/evasion.md, "Which element a style rule reaches": the
//! pseudo-classes that look ahead of the element (`:last-child`,
//! `:nth-last-child()`, `:last-of-type`, `:nth-last-of-type()`,
//! `:only-child`, `:only-of-type`, `:empty`, and `:has()` over relative
//! compounds: `:has(.x)`, `:has(> .x)`, `:has(+ .x)`, `:has(~ .x)`),
//! combined with the other selector features (descendant, child and
//! sibling combinators, classes, ids, attributes, `:not()`, `:is()`, CSS
//! escapes). Written from the description alone, without the reader's
//! code, its unit tests or the other cases of the class.
//!
//! Every page is read with `bulkwatch_read::mime::html::to_text` and
//! judged by its words (lower case, split at anything not a letter or a
//! digit): a visible line must come out as one run of words, a hidden
//! junk word must not come out at all. Junk words are made up per copy
//! (7 to 10 letters, consonant and vowel in turn), class names too.
//!
//! Attack cases (each page keeps 50+ words visible; seven variants, one
//! per copy, each its own class names, structure and hiding property):
//!
//! 1. per-line junk in the last element of each line: `p span:last-child`,
//!    `.k > em:nth-last-child(1)` (class written as a CSS escape),
//!    `div.k p > span:nth-last-child(2)` (a `<br>` after the junk),
//!    `#id td span:last-child`, `ul.k li b:last-child` (white on white),
//!    `:is(p, li) > span:last-child:not(.keep)`, `p > *:last-child`
//!    (off-screen); text after the junk stays a visible tail. Also seven
//!    copies through `common::replay`: one campaign, the last two bulk.
//! 2. junk blocks that are an only child / only of their type:
//!    `.w > div:only-child`, `section p:only-of-type` (an `<hr>` beside),
//!    `td > span:only-child` (visible cells with two spans),
//!    `div:not(.keep) > p:only-child` (escaped class; kept only-children
//!    stay), `aside :only-child`, `ul.k li:only-of-type`,
//!    `.w i:only-child:only-of-type`. Also seven copies through replay.
//! 3. containers hidden by `:has()` of a descendant or a child, the marker
//!    mostly after the junk: `div:has(> i.m)` (a visible `i.m` grandchild
//!    elsewhere), `section:has(.m)` (a visible `.mx` beside),
//!    `p:has(> span[data-x])` (a visible grandchild span), `tr:has(> td.m)`,
//!    `li:has(s)` (white on white), `.k div:has(> u.m) p` (a marked div
//!    outside `.k` stays), `article:has(> .m) > div:nth-child(2)`. Two
//!    seeds.
//! 4. an element before a marker hidden by `:has(+ …)` / `:has(~ …)`:
//!    `b:has(+ u.m)`, `em:has(+ br.m)`, `span:has(~ i.m)` (spans after the
//!    marker stay), `p:has(+ hr.m)` (paragraphs before a plain `<hr>`
//!    stay), `li:has(+ li.m)` (the marked items are the lure),
//!    `span:not(.k):has(+ span.m)`, `.k > div:has(~ div.m)` (off-screen).
//!    Also seven copies through replay.
//! 5. `:empty`, `:last-of-type`, `:nth-last-of-type()`,
//!    `:nth-last-child(-n+2)`: `i:empty + span`, `p:nth-last-of-type(2)`,
//!    `div > span:last-of-type` (a `<b>` after it), `ol li:nth-last-child(-n+2)`,
//!    `td:empty ~ td`, `div.k > div:nth-last-of-type(odd)`, `u:empty ~ span`.
//!    Two seeds.
//!
//! Ordinary cases (three pages each, every word a browser shows must be
//! read; the words a browser hides are named and must not be):
//!
//! 1. tables: `td:last-child`, `tr:last-child td`, `tr:nth-last-child(-n+2)`,
//!    `td:only-child`, `td:last-child a:hover` (white, never applies),
//!    white text on a blue last row, `td:empty{display:none}` on empty
//!    spacer cells, `tbody tr:nth-last-child(odd)`, `td:nth-last-of-type(1)`.
//! 2. lists: `li:last-child{border:none}`, `li:only-child`,
//!    `li:not(:last-child)::after` separators, generated text on the last
//!    item (`li:last-child::after`, `li:last-of-type::before`: read),
//!    `li:nth-last-of-type(-n+3)`, `li:last-child > p:last-child`.
//! 3. `:empty`: `p:empty{display:none}` on truly empty spacers, a text-only
//!    `.note` under `.note:empty{display:none}` (shown), a menu hidden only
//!    when empty (`.menu:empty`, and `.menu:not(:has(a))`, which hides the
//!    heading "Shortcuts panel" of a menu without links), icon spans
//!    `.icon:empty + span`, `td:empty{font-size:0}` spacer cells.
//! 4. `:has()`: `.card:has(img)`, `.card:has(> .badge)`, `h2:has(+ p)`,
//!    `.row:has(~ .row)`, `.item:has(+ .sold-out){opacity:.5}`,
//!    `li:has(> a[href^=…])`, `dt:has(+ dd)`, `blockquote:has(cite)`,
//!    `p:has(> strong:first-child)`, `tr:has(+ tr.total) td`; and
//!    `.promo:has(> .expired){display:none}`, which hides the expired
//!    promotions ("clearance", "wool coats", "lanterns", ...) while a promo
//!    with a `.expired` grandchild stays.
//! 5. footers: `p:only-child`, `p:last-of-type`, `p:nth-last-of-type(2)`,
//!    `a:last-of-type`, `a:only-of-type`, `address:only-of-type`, a dark
//!    footer of white text that is `:last-child`, `:is(p, div):last-child`,
//!    `td:only-child`, `small:only-of-type`.
//!
//! Results (2026-12-07, run after `:has()` was built; the file compiled
//! as written): 10 of 10. With `:has()`'s relatives left unrecorded,
//! attacks 3 and 4 and ordinary cases 3 and 4 fail (checked).

mod common;

use std::collections::HashSet;

use bulkwatch::engine::verdict::Level;
use bulkwatch_read::mime::html::{to_text, Targets};
use common::{replay, Fed, Msg};
use testkit::Rng;

// ---------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------

/// What `html` reads as.
fn read(html: &str) -> String {
    let mut out = String::new();
    let mut targets = Targets::default();
    to_text(html, &mut out, &mut targets, 1 << 20);
    out
}

/// Words of `s`: lower case, split at anything not a letter or digit.
fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A page of an attack: the lines a person sees, the junk hidden from
/// them.
struct Page {
    html: String,
    shown: Vec<String>,
    junk: Vec<String>,
}

/// An attack page reads every visible line (as one run of words) and no
/// junk word.
fn expect_attack(case: &str, p: &Page) {
    let shown_words: HashSet<String> = p.shown.iter().flat_map(|l| tokens(l)).collect();
    let visible: usize = p.shown.iter().map(|l| tokens(l).len()).sum();
    assert!(visible >= 30, "{case}: test bug: {visible} visible words");
    assert!(!p.junk.is_empty(), "{case}: test bug: no junk");
    for j in &p.junk {
        assert!(
            !shown_words.contains(j),
            "{case}: test bug: junk word {j:?} is also visible"
        );
    }
    let out = read(&p.html);
    let toks = tokens(&out);
    let joined = format!(" {} ", toks.join(" "));
    let have: HashSet<&str> = toks.iter().map(String::as_str).collect();
    let mut problems = Vec::new();
    for line in &p.shown {
        let run = format!(" {} ", tokens(line).join(" "));
        if !joined.contains(&run) {
            problems.push(format!("lacks the visible line {line:?}"));
        }
    }
    let read_junk: Vec<&str> = p
        .junk
        .iter()
        .map(String::as_str)
        .filter(|j| have.contains(j))
        .collect();
    if !read_junk.is_empty() {
        problems.push(format!(
            "reads {} of {} hidden junk words: {read_junk:?}",
            read_junk.len(),
            p.junk.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "{case}:\n{}\n--- read:\n{out}\n--- page:\n{}",
        problems.join("\n"),
        p.html
    );
}

/// The text of `html`'s body (or of a fragment) with its tags taken out.
fn strip(html: &str) -> String {
    let body = html.split_once("<body>").map_or(html, |(_, b)| b);
    let mut out = String::new();
    let mut rest = body;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        out.push(' ');
        let after = &rest[i..];
        let end = if after.starts_with("<!--") {
            after.find("-->").map(|e| e + 3)
        } else {
            after.find('>').map(|e| e + 1)
        };
        match end {
            Some(e) => rest = &after[e..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out.replace("&nbsp;", " ").replace("&amp;", "&")
}

/// Ordinary mail: every word of the page outside `hidden` (fragments of
/// the page a browser does not show) is read, no word only found in
/// `hidden` is, and the words of `generated` (text a rule adds) are.
fn expect_ordinary(case: &str, html: &str, hidden: &[&str], generated: &[&str]) {
    let mut shown_src = html.to_owned();
    for h in hidden {
        assert!(html.contains(h), "{case}: test bug: {h:?} not in the page");
        shown_src = shown_src.replace(h, " ");
    }
    let shown = tokens(&strip(&shown_src));
    assert!(
        shown.len() >= 30,
        "{case}: test bug: {} visible words",
        shown.len()
    );
    let shown_set: HashSet<&str> = shown.iter().map(String::as_str).collect();
    let out = read(html);
    let toks = tokens(&out);
    let have: HashSet<&str> = toks.iter().map(String::as_str).collect();
    let mut problems = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for w in &shown {
        if !have.contains(w.as_str()) && !missing.contains(&w.as_str()) {
            missing.push(w);
        }
    }
    if !missing.is_empty() {
        problems.push(format!("lacks shown words {missing:?}"));
    }
    for h in hidden {
        let read_hidden: Vec<String> = tokens(&strip(h))
            .into_iter()
            .filter(|w| !shown_set.contains(w.as_str()) && have.contains(w.as_str()))
            .collect();
        if !read_hidden.is_empty() {
            problems.push(format!(
                "reads {read_hidden:?}, which a browser hides ({h:?})"
            ));
        }
    }
    for g in generated {
        for w in tokens(g) {
            if !have.contains(w.as_str()) {
                problems.push(format!("lacks generated word {w:?} (of {g:?})"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{case}:\n{}\n--- read:\n{out}\n--- page:\n{html}",
        problems.join("\n")
    );
}

/// A whole HTML page.
fn page(style: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n\
         <style type=\"text/css\">\n{style}\n</style></head>\n<body>\n{body}\n</body></html>\n"
    )
}

/// Made-up words and names of one copy.
struct Gen {
    rng: Rng,
    junk: Vec<String>,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng::new(seed),
            junk: Vec::new(),
        }
    }

    /// A pronounceable made-up word of 7 to 10 letters.
    fn word(&mut self) -> String {
        const C: &[u8] = b"bcdfghjklmnprstvwz";
        const V: &[u8] = b"aeiou";
        let n = self.rng.range(7, 10);
        let mut w = String::new();
        for i in 0..n {
            let set = if i % 2 == 0 { C } else { V };
            w.push(char::from(*self.rng.pick(set)));
        }
        w
    }

    /// `lo..=hi` junk words, remembered as junk.
    fn junk(&mut self, lo: usize, hi: usize) -> String {
        let n = self.rng.range(lo, hi);
        let words: Vec<String> = (0..n).map(|_| self.word()).collect();
        self.junk.extend(words.iter().cloned());
        words.join(" ")
    }

    /// A class, id or attribute name of this copy: a letter, then digits.
    fn ident(&mut self) -> String {
        let first = char::from(b'a' + self.rng.below(26) as u8);
        format!("{first}{}", 10_000 + self.rng.below(90_000))
    }
}

/// `ident` as a CSS escape of its first letter (`.\6b 12345`).
fn esc(ident: &str) -> String {
    let mut c = ident.chars();
    let first = c.next().unwrap();
    format!("\\{:x} {}", first as u32, c.as_str())
}

/// A line cut into three runs of words.
fn thirds(line: &str) -> [String; 3] {
    let w: Vec<&str> = line.split_whitespace().collect();
    let (a, b) = (w.len() / 3, 2 * w.len() / 3);
    [w[..a].join(" "), w[a..b].join(" "), w[b..].join(" ")]
}

/// `lines` with NAME replaced by `name` (capitalised).
fn lure(lines: &[&str], name: &str) -> Vec<String> {
    let mut c = name.chars();
    let cap: String = c
        .next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect());
    lines.iter().map(|l| l.replace("NAME", &cap)).collect()
}

/// Each line after the greeting as `f(index, a, b, c, junk)`, its three
/// runs and a junk run of `lo..=hi` words of its own.
fn each_line(
    g: &mut Gen,
    lines: &[String],
    lo: usize,
    hi: usize,
    f: impl Fn(usize, &str, &str, &str, &str) -> String,
) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate().skip(1) {
        let [a, b, c] = thirds(l);
        let j = g.junk(lo, hi);
        s.push_str(&f(i, a.as_str(), b.as_str(), c.as_str(), j.as_str()));
        s.push('\n');
    }
    s
}

/// Each line (the greeting included) as `vis(index, line)`, a junk block
/// `junk(words)` of `lo..=hi` words after every second one.
fn blocks(
    g: &mut Gen,
    lines: &[String],
    lo: usize,
    hi: usize,
    vis: impl Fn(usize, &str) -> String,
    junk: impl Fn(&str) -> String,
) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        s.push_str(&vis(i, l.as_str()));
        s.push('\n');
        if i % 2 == 1 {
            let j = g.junk(lo, hi);
            s.push_str(&junk(j.as_str()));
            s.push('\n');
        }
    }
    s
}

/// `lines` in groups of two, the last of three when they are odd.
fn groups(lines: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = lines.chunks(2).map(<[String]>::to_vec).collect();
    if out.len() > 1 && out.last().is_some_and(|g| g.len() == 1) {
        let last = out.pop().unwrap();
        out.last_mut().unwrap().extend(last);
    }
    out
}

// --- replay --------------------------------------------------------------

const PEOPLE: [&str; 8] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
];

/// One message of a case.
struct Mailed {
    group: &'static str,
    from: String,
    to: String,
    subject: String,
    html: String,
}

fn raw_mail(n: usize, m: &Mailed) -> Vec<u8> {
    let sender = m
        .from
        .rsplit('<')
        .next()
        .unwrap_or("")
        .trim_end_matches('>');
    let domain = sender.rsplit('@').next().unwrap_or("example.org");
    let mut s = format!(
        "Return-Path: <{sender}>\r\nFrom: {}\r\nTo: {}\r\nSubject: {}\r\n\
         Date: Thu, 14 Mar 2024 11:{:02}:{:02} +0100\r\n\
         Message-ID: <lookahead.{n}.{}@{domain}>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n",
        m.from,
        m.to,
        m.subject,
        n / 60 % 60,
        n % 60,
        n * 7919
    );
    s.push_str(&testkit::base64_lines(m.html.as_bytes()).replace('\n', "\r\n"));
    s.into_bytes()
}

/// An unrelated newsletter, to sit beside a campaign.
fn bystander() -> Mailed {
    Mailed {
        group: "other",
        from: "Nora Field <nora@gardenclub.example>".into(),
        to: "Peter <peter@example.net>".into(),
        subject: "Allotment meeting on Saturday".into(),
        html: page(
            "p { margin: 0 0 12px }",
            "<p>Hello Peter,</p>\n<p>the allotment committee meets on Saturday at ten in the \
             community hall to plan the spring planting and the seed swap.</p>\n<p>Please bring \
             your spare seedlings, a cup for tea and any ideas for the new herb border near the \
             gate. We will also vote on the date of the summer open day.</p>\n<p>See you there, \
             Nora</p>",
        ),
    }
}

/// Replays a bystander and `copies` of `group`: every copy in one
/// campaign, its last two bulk, the bystander apart.
fn expect_campaign(case: &str, group: &str, copies: Vec<Mailed>) {
    let mut mails = vec![bystander()];
    mails.extend(copies);
    let msgs: Vec<Msg> = mails
        .iter()
        .enumerate()
        .map(|(i, m)| Msg {
            group: m.group,
            raw: raw_mail(i + 1, m),
        })
        .collect();
    let fed: Vec<Fed> = replay(msgs);
    let members: Vec<&Fed> = fed.iter().filter(|f| f.group == group).collect();
    assert!(members.len() >= 7, "{case}: too few copies");
    let first = members[0].rec.campaign;
    let mut problems = Vec::new();
    if first.is_none() {
        problems.push(format!("{group}: first copy has no campaign"));
    }
    for (i, f) in members.iter().enumerate() {
        if f.rec.campaign != first {
            problems.push(format!("{group}: copy {} in another campaign", i + 1));
        }
    }
    for f in &members[members.len() - 2..] {
        if !matches!(f.rec.level, Level::Bulk) {
            problems.push(format!(
                "{group}: #{} is {:?}, not bulk",
                f.rec.n, f.rec.level
            ));
        }
    }
    for f in fed.iter().filter(|f| f.group != group) {
        if first.is_some() && f.rec.campaign == first {
            problems.push(format!("{}: #{} joined {group}", f.group, f.rec.n));
        }
    }
    if !problems.is_empty() {
        let mut s = String::new();
        for (f, m) in fed.iter().zip(&mails) {
            let text: String = read(&m.html).chars().take(300).collect();
            s.push_str(&format!(
                "  #{:<2} {:<8} campaign={:?} level={:?} dist={:?}\n      text={:?}\n",
                f.rec.n,
                f.group,
                f.rec.campaign.map(|c| c.0),
                f.rec.level,
                f.rec.distance,
                text.replace('\n', " / "),
            ));
        }
        panic!("{case}:\n{}\n{s}", problems.join("\n"));
    }
}

/// Seven copies of an attack to PEOPLE, copy `i` being `page_of(i, seed)`.
fn copies(
    group: &'static str,
    sender: &str,
    subject: &str,
    page_of: impl Fn(usize, u64, &str) -> Page,
) -> (Vec<Mailed>, Vec<Page>) {
    let mut mails = Vec::new();
    let mut pages = Vec::new();
    for (i, person) in PEOPLE.iter().take(7).enumerate() {
        let p = page_of(i, 1000 + i as u64, person);
        mails.push(Mailed {
            group,
            from: format!("{sender} <notice@{group}-desk{i}.example>"),
            to: format!("{person} <{person}@example.net>"),
            subject: format!("{subject} {}", 4100 + i * 37),
            html: p.html.clone(),
        });
        pages.push(p);
    }
    (mails, pages)
}

// ---------------------------------------------------------------------
// Lures
// ---------------------------------------------------------------------

const MAILBOX: [&str; 7] = [
    "Dear NAME,",
    "your mailbox has reached its storage limit and incoming messages are now on hold",
    "to release them you must confirm your account on our secure portal today",
    "accounts that are not confirmed within twenty four hours will be suspended",
    "and all saved messages, contacts and calendar entries will be deleted",
    "confirming takes less than a minute and keeps your address active",
    "thank you for your prompt attention, the mail support team",
];

const PARCEL: [&str; 7] = [
    "Hello NAME,",
    "we attempted to deliver your parcel this morning but nobody was home",
    "your package is now waiting at our regional depot for collection",
    "a small redelivery fee of two dollars must be paid before it can leave",
    "please pay the fee within forty eight hours using the link below",
    "parcels that are not claimed are returned to the sender without refund",
    "kind regards, express courier customer service",
];

const PRIZE: [&str; 7] = [
    "Congratulations NAME,",
    "your address was drawn as a winner in our annual loyalty survey",
    "your reward is a brand new tablet with free delivery to your door",
    "to claim it answer three short questions and pay the small handling charge",
    "only ten rewards remain and the offer closes at midnight tonight",
    "do not miss this chance, thousands of members have already claimed theirs",
    "best wishes from the rewards department",
];

const INVOICE: [&str; 7] = [
    "Dear customer NAME,",
    "your subscription renewal payment of eighty nine dollars was declined by your bank",
    "to avoid interruption of your antivirus protection please update your billing details",
    "the protection on all of your devices will stop at the end of the day",
    "our billing desk is open around the clock to help you with the renewal",
    "reply to this notice or call the number below to keep your plan active",
    "sincerely, the customer billing centre",
];

const ROBOT: [&str; 7] = [
    "Good morning NAME,",
    "our trading robot doubled the savings of its members during the last month",
    "you can start with a deposit of only two hundred and fifty dollars",
    "and watch your balance grow every single day without any effort at all",
    "thousands of ordinary people have already left their jobs thanks to it",
    "places in the programme are limited and registration closes on sunday",
    "register your free account today and claim your welcome bonus",
];

// ---------------------------------------------------------------------
// Attack 1: junk in the last element of each line
// ---------------------------------------------------------------------

fn attack_1_page(v: usize, seed: u64, name: &str) -> Page {
    let mut g = Gen::new(seed);
    let lines = lure(&MAILBOX, name);
    let greeting = lines[0].clone();
    let (cls, id, keep) = (g.ident(), g.ident(), g.ident());
    let (style, body) = match v % 7 {
        0 => (
            "p span:last-child { display: none }".to_string(),
            format!(
                "<div>\n<p>{greeting}</p>\n{}</div>",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <span>{b}</span> <span>{j}</span> {c}</p>"
                ))
            ),
        ),
        1 => (
            format!(
                ".{} > em:nth-last-child(1) {{ visibility: hidden }}",
                esc(&cls)
            ),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p class=\"{cls}\">{a} <em>{b}</em> {c} <em>{j}</em></p>"
                ))
            ),
        ),
        2 => (
            format!("div.{cls} p > span:nth-last-child(2) {{ font-size: 0 }}"),
            format!(
                "<div class=\"{cls}\">\n<p>{greeting}</p>\n{}</div>",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <span>{b}</span> {c} <span>{j}</span><br></p>"
                ))
            ),
        ),
        3 => (
            format!("#{id} td span:last-child {{ opacity: 0 }}"),
            format!(
                "<table id=\"{id}\">\n<tr><td>{greeting}</td></tr>\n{}</table>",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<tr><td>{a} <span>{b}</span> {c} <span>{j}</span></td></tr>"
                ))
            ),
        ),
        4 => (
            format!(
                "body {{ background: #ffffff; color: #222222 }}\n\
                 ul.{cls} li b:last-child {{ color: #ffffff; background-color: #ffffff }}"
            ),
            format!(
                "<p>{greeting}</p>\n<ul class=\"{cls}\">\n{}</ul>",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<li>{a} <b>{b}</b> {c} <b>{j}</b></li>"
                ))
            ),
        ),
        5 => (
            format!(":is(p, li) > span:last-child:not(.{keep}) {{ display: none }}"),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |i, a, b, c, j| if i % 2 == 1 {
                    format!("<p>{a} <span>{b}</span> <span>{j}</span> {c}</p>")
                } else {
                    format!("<p>{a} {b} <span class=\"{keep}\">{c}</span></p>")
                })
            ),
        ),
        _ => (
            "p > *:last-child { position: absolute; left: -9999px }".to_string(),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <i>{b}</i> {c} <small>{j}</small></p>"
                ))
            ),
        ),
    };
    Page {
        html: page(&style, &body),
        shown: lines,
        junk: g.junk,
    }
}

/// Attack 1: per-copy junk words in the last element of each line, hidden
/// by `:last-child` / `:nth-last-child()` rules (with descendant, child,
/// id, class, escaped class, `:is()`, `:not()`, `*`; a `<br>` counting as
/// the last child; text after the junk not counting) under display,
/// visibility, font-size 0, opacity 0, white on white and off-screen.
#[test]
fn attack_1_last_child_hides_per_line_junk() {
    for seed in [1u64, 2] {
        for (v, person) in PEOPLE.iter().enumerate().take(7) {
            let p = attack_1_page(v, seed * 77 + v as u64, person);
            expect_attack(&format!("attack 1 variant {v} seed {seed}"), &p);
        }
    }
    let (mails, pages) = copies(
        "mailbox",
        "Mail Support",
        "Mailbox storage notice",
        attack_1_page,
    );
    for (i, p) in pages.iter().enumerate() {
        expect_attack(&format!("attack 1 copy {}", i + 1), p);
    }
    expect_campaign("attack 1", "mailbox", mails);
}

// ---------------------------------------------------------------------
// Attack 2: junk blocks that are an only child or only of their type
// ---------------------------------------------------------------------

fn attack_2_page(v: usize, seed: u64, name: &str) -> Page {
    let mut g = Gen::new(seed);
    let lines = lure(&PARCEL, name);
    let (w, keep, cls) = (g.ident(), g.ident(), g.ident());
    let gs = groups(&lines);
    let n = gs.len();
    let mut body = String::new();
    let style = match v % 7 {
        0 => format!(".{w} > div:only-child {{ display: none }}"),
        1 => "section p:only-of-type { visibility: hidden }".to_string(),
        2 => "td > span:only-child { font-size: 0 }".to_string(),
        3 => format!(
            "div:not(.{}) > p:only-child {{ position: absolute; left: -9999px }}",
            esc(&keep)
        ),
        4 => "aside :only-child { opacity: 0 }".to_string(),
        5 => format!("ul.{cls} li:only-of-type {{ display: none }}"),
        _ => format!(".{w} i:only-child:only-of-type {{ visibility: hidden }}"),
    };
    if v % 7 == 2 {
        body.push_str("<table>\n");
    }
    for (k, group) in gs.iter().enumerate() {
        let vis: String = match v % 7 {
            0 => format!(
                "<div class=\"{w}\">{}</div>",
                group
                    .iter()
                    .map(|l| format!("<div>{l}</div>"))
                    .collect::<String>()
            ),
            1 => format!(
                "<section>{}</section>",
                group
                    .iter()
                    .map(|l| format!("<p>{l}</p>"))
                    .collect::<String>()
            ),
            2 => group
                .iter()
                .enumerate()
                .map(|(j, l)| {
                    if j % 2 == 0 {
                        format!("<tr><td>{l}</td></tr>\n")
                    } else {
                        let [a, b, c] = thirds(l);
                        format!("<tr><td><span>{a}</span> <span>{b} {c}</span></td></tr>\n")
                    }
                })
                .collect(),
            3 => {
                if k + 1 == n {
                    group
                        .iter()
                        .map(|l| format!("<div class=\"note {keep}\"><p>{l}</p></div>\n"))
                        .collect()
                } else {
                    format!(
                        "<div>{}</div>",
                        group
                            .iter()
                            .map(|l| format!("<p>{l}</p>"))
                            .collect::<String>()
                    )
                }
            }
            4 => format!(
                "<aside>{}</aside>",
                group
                    .iter()
                    .map(|l| format!("<p>{l}</p>"))
                    .collect::<String>()
            ),
            5 => format!(
                "<ul class=\"{cls}\">{}</ul>",
                group
                    .iter()
                    .map(|l| format!("<li>{l}</li>"))
                    .collect::<String>()
            ),
            _ => {
                if k == 0 {
                    format!(
                        "<div class=\"{w}\">{}</div>",
                        group
                            .iter()
                            .map(|l| format!("<p>{l}</p>"))
                            .collect::<String>()
                    )
                } else {
                    group
                        .iter()
                        .map(|l| {
                            let [a, b, c] = thirds(l);
                            format!("<div class=\"{w}\"><i>{a} {b}</i> <i>{c}</i></div>\n")
                        })
                        .collect()
                }
            }
        };
        body.push_str(&vis);
        body.push('\n');
        let j = g.junk(10, 16);
        let junk = match v % 7 {
            0 => format!("<div class=\"{w}\"><div>{j}</div></div>"),
            1 => format!("<section><p>{j}</p><hr></section>"),
            2 => format!("<tr><td><span>{j}</span></td></tr>"),
            3 => format!("<div class=\"note\"><p>{j}</p></div>"),
            4 => format!("<aside><div><span>{j}</span></div></aside>"),
            5 => format!("<ul class=\"{cls}\"><li>{j}</li></ul>"),
            _ => format!("<div class=\"{w}\"><i>{j}</i></div>"),
        };
        body.push_str(&junk);
        body.push('\n');
    }
    if v % 7 == 2 {
        body.push_str("</table>\n");
    }
    Page {
        html: page(&style, &body),
        shown: lines,
        junk: g.junk,
    }
}

/// Attack 2: whole per-copy junk blocks that are the only child (or only
/// element of their type) of a wrapper, hidden by `:only-child` /
/// `:only-of-type` (with child and descendant combinators, `:not()` of an
/// escaped class, a bare `:only-child` under `aside`, two pseudo-classes
/// chained), beside visible wrappers of two or more children.
#[test]
fn attack_2_only_child_hides_junk_blocks() {
    for seed in [1u64, 2] {
        for (v, person) in PEOPLE.iter().enumerate().take(7) {
            let p = attack_2_page(v, seed * 91 + v as u64, person);
            expect_attack(&format!("attack 2 variant {v} seed {seed}"), &p);
        }
    }
    let (mails, pages) = copies(
        "parcel",
        "Express Courier",
        "Delivery attempt",
        attack_2_page,
    );
    for (i, p) in pages.iter().enumerate() {
        expect_attack(&format!("attack 2 copy {}", i + 1), p);
    }
    expect_campaign("attack 2", "parcel", mails);
}

// ---------------------------------------------------------------------
// Attack 3: containers hidden by :has() of a descendant or a child
// ---------------------------------------------------------------------

fn attack_3_page(v: usize, seed: u64, name: &str) -> Page {
    let mut g = Gen::new(seed);
    let lines = lure(&PRIZE, name);
    let (m, at, cls) = (g.ident(), g.ident(), g.ident());
    let (style, body) = match v % 7 {
        0 => (
            format!("div:has(> i.{m}) {{ display: none }}"),
            blocks(
                &mut g,
                &lines,
                10,
                16,
                |i, l| {
                    if i == 3 {
                        let [a, b, c] = thirds(l);
                        format!("<div><p>{a} <i class=\"{m}\">{b}</i> {c}</p></div>")
                    } else {
                        format!("<div><p>{l}</p></div>")
                    }
                },
                |j| format!("<div><p>{j}</p><i class=\"{m}\"></i></div>"),
            ),
        ),
        1 => (
            format!("section:has(.{}) {{ visibility: hidden }}", esc(&m)),
            blocks(
                &mut g,
                &lines,
                10,
                16,
                |i, l| {
                    if i == 2 {
                        let [a, b, c] = thirds(l);
                        format!("<section><p>{a} <b class=\"{m}x\">{b}</b> {c}</p></section>")
                    } else {
                        format!("<section><p>{l}</p></section>")
                    }
                },
                |j| format!("<section><div><p>{j}<b class=\"{m}\"></b></p></div></section>"),
            ),
        ),
        2 => (
            format!("p:has(> span[data-{at}]) {{ font-size: 0 }}"),
            blocks(
                &mut g,
                &lines,
                10,
                16,
                |i, l| {
                    if i == 4 {
                        let [a, b, c] = thirds(l);
                        format!("<p>{a} <b><span data-{at}=\"on\">{b}</span></b> {c}</p>")
                    } else {
                        format!("<p>{l}</p>")
                    }
                },
                |j| format!("<p>{j} <span data-{at}=\"on\"></span></p>"),
            ),
        ),
        3 => (
            format!("tr:has(> td.{m}) {{ display: none }}"),
            format!(
                "<table>\n{}</table>",
                blocks(
                    &mut g,
                    &lines,
                    10,
                    16,
                    |i, l| {
                        if i == 5 {
                            let [a, b, c] = thirds(l);
                            format!("<tr><td>{a} <span class=\"{m}\">{b}</span> {c}</td></tr>")
                        } else {
                            format!("<tr><td>{l}</td></tr>")
                        }
                    },
                    |j| format!("<tr><td>{j}</td><td class=\"{m}\"></td></tr>"),
                )
            ),
        ),
        4 => (
            "body { background: #ffffff; color: #222222 }\n\
             li:has(s) { color: #ffffff; background-color: #ffffff }"
                .to_string(),
            format!(
                "<ul>\n{}</ul>",
                blocks(
                    &mut g,
                    &lines,
                    10,
                    16,
                    |i, l| {
                        if i == 3 {
                            let [a, b, c] = thirds(l);
                            format!("<li>{a} <del>{b}</del> {c}</li>")
                        } else {
                            format!("<li>{l}</li>")
                        }
                    },
                    |j| format!("<li>{j}<s></s></li>"),
                )
            ),
        ),
        5 => (
            format!(".{cls} div:has(> u.{m}) p {{ display: none }}"),
            format!(
                "{}</div>",
                blocks(
                    &mut g,
                    &lines,
                    10,
                    16,
                    |i, l| {
                        if i == 0 {
                            // Marked, but outside `.cls`: stays.
                            format!(
                                "<div><p>{l}</p><u class=\"{m}\"></u></div>\n<div class=\"{cls}\">"
                            )
                        } else {
                            format!("<div><p>{l}</p></div>")
                        }
                    },
                    |j| format!("<div><p>{j}</p><u class=\"{m}\"></u></div>"),
                )
            ),
        ),
        _ => (
            format!("article:has(> .{m}) > div:nth-child(2) {{ display: none }}"),
            blocks(
                &mut g,
                &lines,
                10,
                16,
                |i, l| {
                    if i % 2 == 1 {
                        // Its second child is a div, but it has no marker.
                        let [a, b, c] = thirds(l);
                        format!("<article><div>{a} {b}</div><div>{c}</div></article>")
                    } else {
                        format!("<article><div>{l}</div></article>")
                    }
                },
                |j| format!("<article><b></b><div>{j}</div><span class=\"{m}\"></span></article>"),
            ),
        ),
    };
    Page {
        html: page(&style, &body),
        shown: lines,
        junk: g.junk,
    }
}

/// Attack 3: junk blocks in containers hidden by `:has()` over a child
/// (`> i.m`, `> span[data-x]`, `> td.m`, `> u.m`, `> .m`) or a
/// descendant (`.m`, `s`), the marker mostly after the junk, in the
/// subject or the middle of a selector (`.k div:has(> u.m) p`,
/// `article:has(> .m) > div:nth-child(2)`); visible look-alikes (a marker
/// as grandchild, `.mx`, a marked div outside the context) stay.
#[test]
fn attack_3_has_hides_marked_containers() {
    for seed in [1u64, 2] {
        for (v, person) in PEOPLE.iter().enumerate().take(7) {
            let p = attack_3_page(v, seed * 131 + v as u64, person);
            expect_attack(&format!("attack 3 variant {v} seed {seed}"), &p);
        }
    }
}

// ---------------------------------------------------------------------
// Attack 4: an element before a marker, :has(+ …) and :has(~ …)
// ---------------------------------------------------------------------

fn attack_4_page(v: usize, seed: u64, name: &str) -> Page {
    let mut g = Gen::new(seed);
    let lines = lure(&INVOICE, name);
    let greeting = lines[0].clone();
    let (m, k, cls) = (g.ident(), g.ident(), g.ident());
    let (style, body) = match v % 7 {
        0 => (
            format!("b:has(+ u.{m}) {{ display: none }}"),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <b>{j}</b><u class=\"{m}\"></u> {b} <b>{c}</b></p>"
                ))
            ),
        ),
        1 => (
            format!("em:has(+ br.{m}) {{ visibility: hidden }}"),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <em>{j}</em><br class=\"{m}\">{b} <em>{c}</em><br></p>"
                ))
            ),
        ),
        2 => (
            format!("span:has(~ i.{m}) {{ font-size: 0 }}"),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <span>{j}</span><i class=\"{m}\"></i> <span>{b}</span> {c}</p>"
                ))
            ),
        ),
        3 => (
            format!("p:has(+ hr.{m}) {{ opacity: 0 }}"),
            blocks(
                &mut g,
                &lines,
                10,
                16,
                |i, l| {
                    if i == 2 || i == 5 {
                        format!("<p>{l}</p><hr>")
                    } else {
                        format!("<p>{l}</p>")
                    }
                },
                |j| format!("<p>{j}</p><hr class=\"{m}\">"),
            ),
        ),
        4 => (
            format!("li:has(+ li.{m}) {{ display: none }}"),
            format!(
                "<p>{greeting}</p>\n<ul>\n{}</ul>",
                each_line(&mut g, &lines, 3, 5, |_, a, b, c, j| format!(
                    "<li>{j}</li><li class=\"{m}\">{a} {b} {c}</li>"
                ))
            ),
        ),
        5 => (
            format!("span:not(.{k}):has(+ span.{m}) {{ visibility: hidden }}"),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <span class=\"{k}\">{b}</span><span class=\"{m}\"></span> {c} \
                     <span>{j}</span><span class=\"{m}\"></span></p>"
                ))
            ),
        ),
        _ => {
            let junk: String = (0..3)
                .map(|_| format!("<div>{}</div>\n", g.junk(10, 16)))
                .collect();
            let shown: String = lines[1..]
                .iter()
                .map(|l| format!("<div>{l}</div>\n"))
                .collect();
            (
                format!(
                    ".{cls} > div:has(~ div.{m}) {{ position: absolute; left: -9999px }}"
                ),
                format!(
                    "<div>{greeting}</div>\n<div class=\"{cls}\">\n{junk}<div class=\"{m}\"></div>\n{shown}</div>"
                ),
            )
        }
    };
    Page {
        html: page(&style, &body),
        shown: lines,
        junk: g.junk,
    }
}

/// Attack 4: per-copy junk in the element just before a marker
/// (`:has(+ u.m)`, `:has(+ br.m)`, `:has(+ hr.m)`, `:has(+ li.m)`,
/// `:not(.k):has(+ span.m)`) or before a later one (`:has(~ i.m)`,
/// `.k > div:has(~ div.m)`), under display, visibility, font-size 0,
/// opacity 0 and off-screen; elements after the marker, or before an
/// unmarked sibling, stay.
#[test]
fn attack_4_has_sibling_hides_junk_before_marker() {
    for seed in [1u64, 2] {
        for (v, person) in PEOPLE.iter().enumerate().take(7) {
            let p = attack_4_page(v, seed * 173 + v as u64, person);
            expect_attack(&format!("attack 4 variant {v} seed {seed}"), &p);
        }
    }
    let (mails, pages) = copies(
        "invoice",
        "Billing Centre",
        "Payment declined",
        attack_4_page,
    );
    for (i, p) in pages.iter().enumerate() {
        expect_attack(&format!("attack 4 copy {}", i + 1), p);
    }
    expect_campaign("attack 4", "invoice", mails);
}

// ---------------------------------------------------------------------
// Attack 5: :empty, :last-of-type, :nth-last-of-type(), :nth-last-child()
// ---------------------------------------------------------------------

fn attack_5_page(v: usize, seed: u64, name: &str) -> Page {
    let mut g = Gen::new(seed);
    let lines = lure(&ROBOT, name);
    let greeting = lines[0].clone();
    let cls = g.ident();
    let (style, body) = match v % 7 {
        0 => (
            "i:empty + span { display: none }".to_string(),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <i>{b}</i> <span>{c}</span> <i></i><span>{j}</span></p>"
                ))
            ),
        ),
        1 => {
            let mut s = String::new();
            for group in groups(&lines) {
                let (last, before) = group.split_last().unwrap();
                s.push_str("<div>");
                for l in before {
                    s.push_str(&format!("<p>{l}</p>"));
                }
                s.push_str(&format!(
                    "<p>{}</p><p>{last}</p><span></span></div>\n",
                    g.junk(8, 12)
                ));
            }
            ("p:nth-last-of-type(2) { display: none }".to_string(), s)
        }
        2 => (
            "div > span:last-of-type { visibility: hidden }".to_string(),
            format!(
                "<div>{greeting}</div>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<div>{a} <span>{b}</span> <span>{j}</span> <b>{c}</b></div>"
                ))
            ),
        ),
        3 => {
            let mut s = String::new();
            for group in groups(&lines) {
                s.push_str("<ol>");
                for l in &group {
                    s.push_str(&format!("<li>{l}</li>"));
                }
                s.push_str(&format!(
                    "<li>{}</li><li>{}</li></ol>\n",
                    g.junk(4, 6),
                    g.junk(4, 6)
                ));
            }
            ("ol li:nth-last-child(-n+2) { font-size: 0 }".to_string(), s)
        }
        4 => (
            "td:empty ~ td { opacity: 0 }".to_string(),
            format!(
                "<table>\n<tr><td>{greeting}</td></tr>\n{}</table>",
                each_line(&mut g, &lines, 3, 5, |_, a, b, c, j| format!(
                    "<tr><td>{a} {b} {c}</td><td></td><td>{j}</td></tr>"
                ))
            ),
        ),
        5 => {
            let mut s = format!("<div class=\"{cls}\">\n");
            for l in &lines {
                s.push_str(&format!("<div>{l}</div><div>{}</div>\n", g.junk(3, 5)));
            }
            s.push_str("</div>");
            (
                format!(
                    "div.{cls} > div:nth-last-of-type(odd) {{ position: absolute; left: -9999px }}"
                ),
                s,
            )
        }
        _ => (
            "u:empty ~ span { display: none }".to_string(),
            format!(
                "<p>{greeting}</p>\n{}",
                each_line(&mut g, &lines, 2, 4, |_, a, b, c, j| format!(
                    "<p>{a} <span>{b}</span> {c} <u></u> <span>{j}</span></p>"
                ))
            ),
        ),
    };
    Page {
        html: page(&style, &body),
        shown: lines,
        junk: g.junk,
    }
}

/// Attack 5: per-copy junk after an empty element (`i:empty + span`,
/// `u:empty ~ span`, `td:empty ~ td`) or at a place counted from the end
/// (`p:nth-last-of-type(2)`, `div > span:last-of-type` with a `<b>` after
/// it, `ol li:nth-last-child(-n+2)`, `div.k > div:nth-last-of-type(odd)`);
/// non-empty look-alikes and elements before the empty one stay.
#[test]
fn attack_5_empty_and_counted_from_end_hide_junk() {
    for seed in [1u64, 2] {
        for (v, person) in PEOPLE.iter().enumerate().take(7) {
            let p = attack_5_page(v, seed * 211 + v as u64, person);
            expect_attack(&format!("attack 5 variant {v} seed {seed}"), &p);
        }
    }
}

// ---------------------------------------------------------------------
// Ordinary 1: tables
// ---------------------------------------------------------------------

/// Ordinary 1: tables styled by `td:last-child`, `tr:last-child td`,
/// `tr:nth-last-child(-n+2) td`, `td:only-child`, `td:last-child a:hover`
/// (white, never applies), a white-on-blue `tr:last-child`,
/// `th:last-of-type`, `td:nth-last-child(2)`, `td:empty{display:none}` on
/// empty spacer cells, `tbody tr:nth-last-child(odd)`,
/// `td:nth-last-of-type(1)`, `tr:only-child td`: every word shown.
#[test]
fn ordinary_1_tables_styled_from_the_end() {
    let order = page(
        "body { font-family: Arial, sans-serif; color: #222222; background: #ffffff }\n\
         table.order { width: 100%; border-collapse: collapse }\n\
         table.order td { padding: 6px 12px; border-bottom: 1px solid #e5e5e5 }\n\
         table.order td:last-child { padding-right: 0; text-align: right }\n\
         table.order tr:last-child td { border-bottom: none; color: #666666 }\n\
         table.order tr:nth-last-child(-n+2) td { background: #f4f4f4; font-weight: bold }\n\
         table.order td:only-child { text-align: center }\n\
         table.order td:last-child a:hover { color: #ffffff }",
        "<p>Hello Martin, thank you for your order from Hillside Books. We have packed your \
         parcel and it will leave our warehouse tomorrow morning.</p>\n\
         <table class=\"order\">\n\
         <tr><td>The Shipping News, paperback</td><td>9.99</td></tr>\n\
         <tr><td>A Field Guide to Garden Birds</td><td>14.50</td></tr>\n\
         <tr><td>Notebook, dotted, blue cover</td><td>4.25</td></tr>\n\
         <tr><td>Delivery</td><td>free</td></tr>\n\
         <tr><td>Total paid</td><td><a href=\"https://hillsidebooks.example/orders/5521\">28.74</a></td></tr>\n\
         <tr><td colspan=\"2\">Questions about your order? Just reply to this email.</td></tr>\n\
         </table>\n<p>Happy reading from everyone at the shop.</p>",
    );
    expect_ordinary("ordinary 1 order", &order, &[], &[]);

    let timetable = page(
        "body { background: #ffffff; color: #202124 }\n\
         .times { border-collapse: collapse }\n\
         .times td, .times th { padding: 4px 8px }\n\
         .times tr:nth-child(even) td { background: #f7f7f7 }\n\
         .times th:last-of-type { text-align: right }\n\
         .times td:nth-last-child(2) { font-style: italic }\n\
         .times tr:last-child td { color: #ffffff; background-color: #1a73e8; font-weight: bold }",
        "<h1>Summer pool timetable</h1>\n\
         <p>Dear members, the outdoor pool opens on the first of June. Here are the sessions \
         for the first month; lanes are shared and no booking is needed.</p>\n\
         <table class=\"times\">\n\
         <tr><th>Day</th><th>Session</th><th>Time</th></tr>\n\
         <tr><td>Monday</td><td>Early lengths</td><td>06:30</td></tr>\n\
         <tr><td>Wednesday</td><td>Aqua aerobics</td><td>18:00</td></tr>\n\
         <tr><td>Friday</td><td>Junior lessons</td><td>16:15</td></tr>\n\
         <tr><td>Sunday</td><td>Family splash hour</td><td>10:00</td></tr>\n\
         </table>\n<p>See you at the water, the leisure centre team.</p>",
    );
    expect_ordinary("ordinary 1 timetable", &timetable, &[], &[]);

    let statement = page(
        ".stmt { width: 100% }\n\
         .stmt td:empty { display: none }\n\
         .stmt tbody tr:nth-last-child(odd) td { background: #fafafa }\n\
         .stmt td:nth-last-of-type(1) { text-align: right; white-space: nowrap }\n\
         .stmt tr:only-child td { font-size: 13px }\n\
         .summary td:last-child { font-weight: bold }",
        "<p>Your March statement for the Riverside Allotment Society account is ready. \
         Below are the movements recorded since the last meeting.</p>\n\
         <table class=\"stmt\"><tbody>\n\
         <tr><td>Seed order from Greenway</td><td></td><td>minus 42.10</td></tr>\n\
         <tr><td>Plot fees, twelve members</td><td></td><td>plus 180.00</td></tr>\n\
         <tr><td>Water rates, quarter one</td><td></td><td>minus 37.80</td></tr>\n\
         <tr><td>Raffle at the spring fair</td><td></td><td>plus 64.00</td></tr>\n\
         </tbody></table>\n\
         <table class=\"summary\"><tr><td>Closing balance</td><td>1,204.55</td></tr></table>\n\
         <p>Any questions go to the treasurer, Helen, before the April meeting.</p>",
    );
    expect_ordinary("ordinary 1 statement", &statement, &[], &[]);
}

// ---------------------------------------------------------------------
// Ordinary 2: lists
// ---------------------------------------------------------------------

/// Ordinary 2: lists styled by `li:last-child{border:none}`,
/// `li:only-child`, `li:not(:last-child)::after` separators, generated
/// text on the last item (`li:last-child::after`, `li:last-of-type::before`:
/// read), `li:nth-last-child(n+2)`, `li:nth-last-of-type(-n+3)`,
/// `ol > li:only-of-type`, `li:last-child > p:last-child`: every word shown.
#[test]
fn ordinary_2_lists_styled_from_the_end() {
    let club = page(
        ".nav { margin: 0; padding: 0 }\n\
         .nav li { display: inline; padding: 0 8px; border-right: 1px solid #cccccc }\n\
         .nav li:last-child { border-right: none; padding-right: 0 }\n\
         .news li { margin-bottom: 12px; border-bottom: 1px dotted #dddddd }\n\
         .news li:last-child { border: none; margin-bottom: 0 }\n\
         .single li:only-child { list-style: none; font-style: italic }",
        "<ul class=\"nav\"><li><a href=\"https://club.example/\">Home</a></li> \
         <li><a href=\"https://club.example/events\">Events</a></li> \
         <li><a href=\"https://club.example/join\">Membership</a></li> \
         <li><a href=\"https://club.example/contact\">Contact</a></li></ul>\n\
         <h2>Club news for April</h2>\n\
         <ul class=\"news\">\n\
         <li>The clubhouse roof has been repaired thanks to the working party.</li>\n\
         <li>Junior coaching restarts on Tuesday evenings from the ninth.</li>\n\
         <li>Our annual dinner sold out in two days; a waiting list is open.</li>\n\
         </ul>\n\
         <ul class=\"single\"><li>Reminder: subscriptions are due by the end of the month.</li></ul>",
    );
    expect_ordinary("ordinary 2 club", &club, &[], &[]);

    let course = page(
        ".tags { padding: 0 }\n\
         .tags li { display: inline }\n\
         .tags li:not(:last-child)::after { content: \", \" }\n\
         .tags li:last-child::after { content: \" plus seasonal extras\" }\n\
         ol.steps li:nth-last-child(n+2) { margin-bottom: 6px }\n\
         ol.steps li:last-of-type::before { content: \"Finally: \" }",
        "<p>Thank you for signing up for the weekend bread course at the mill kitchen. \
         This is what the two days will cover.</p>\n\
         <ul class=\"tags\"><li>sourdough</li><li>rye loaves</li><li>focaccia</li><li>flatbreads</li></ul>\n\
         <p>Before you come, please do the following:</p>\n\
         <ol class=\"steps\">\n\
         <li>bring an apron and a large mixing bowl</li>\n\
         <li>tell us about any allergies by Thursday</li>\n\
         <li>arrive by nine so we can start the first dough together</li>\n\
         </ol>",
    );
    expect_ordinary(
        "ordinary 2 course",
        &course,
        &[],
        &["plus seasonal extras", "Finally"],
    );

    let faq = page(
        ".faq li:nth-last-of-type(-n+3) { color: #555555 }\n\
         .faq li:last-child > p:last-child { margin-bottom: 0 }\n\
         ol > li:only-of-type { list-style: none }\n\
         .faq li:last-child { border-bottom: 0 }",
        "<h2>Questions we hear often</h2>\n\
         <ul class=\"faq\">\n\
         <li><p>Can I change my delivery day? Yes, up to two days before the box leaves us.</p></li>\n\
         <li><p>Are the vegetables organic? Most are, and each box lists the farm it came from.</p></li>\n\
         <li><p>Can I pause my order? Pause as often as you like from your account page.</p></li>\n\
         <li><p>What about the packaging?</p><p>Return the cardboard box to the driver and we reuse it.</p></li>\n\
         </ul>\n\
         <ol><li>Still stuck? Our growers answer the phone every weekday morning.</li></ol>",
    );
    expect_ordinary("ordinary 2 faq", &faq, &[], &[]);
}

// ---------------------------------------------------------------------
// Ordinary 3: :empty
// ---------------------------------------------------------------------

/// Ordinary 3: `p:empty{display:none}` on truly empty spacers, a
/// text-only `.note` under `.note:empty{display:none}` (shown: text is
/// content), `div.spacer:empty`, a menu hidden only when empty
/// (`.menu:empty`; `.menu:not(:has(a))`, which hides the heading
/// "Shortcuts panel" of a menu without links), `.icon:empty + span`,
/// `td:empty{font-size:0}` spacer cells, `p:empty + p`.
#[test]
fn ordinary_3_empty_spacers_and_empty_menus() {
    let spacers = page(
        "p:empty { display: none }\n\
         p:empty + p { margin-top: 0 }\n\
         div.spacer:empty { height: 20px; line-height: 20px }\n\
         .note:empty { display: none }\n\
         .note { background: #fff8e1; padding: 8px }",
        "<p>Dear parents,</p>\n<p></p>\n\
         <p>the school trip to the science museum is confirmed for Thursday the twelfth. \
         The coach leaves the front gate at half past eight and returns by four.</p>\n\
         <div class=\"spacer\"></div>\n\
         <div class=\"note\">Please pack a labelled lunch and a raincoat.</div>\n\
         <div class=\"note\"></div>\n<p></p>\n\
         <p>Children who need medicine during the day should bring it in a sealed bag \
         handed to the class teacher.</p>\n<p>Many thanks, Mrs Okafor</p>",
    );
    expect_ordinary("ordinary 3 spacers", &spacers, &[], &[]);

    let menus = page(
        ".menu:empty { display: none }\n\
         .menu:not(:has(a)) { display: none }\n\
         .menu a { margin-right: 12px }\n\
         .menu a:last-child { margin-right: 0 }",
        "<div class=\"menu\"><a href=\"https://shop.example/\">Home</a> \
         <a href=\"https://shop.example/offers\">Offers</a> \
         <a href=\"https://shop.example/account\">Account</a></div>\n\
         <div class=\"menu\"></div>\n\
         <nav class=\"menu\"><h4>Shortcuts panel</h4></nav>\n\
         <p>Hi Sam, your loyalty card has collected enough stamps for a free coffee. Show \
         this email at the counter of any of our coffee shops before the end of May and the \
         barista will scan the code on your receipt.</p>\n<p>Enjoy, the Corner Coffee team</p>",
    );
    expect_ordinary(
        "ordinary 3 menus",
        &menus,
        &["<nav class=\"menu\"><h4>Shortcuts panel</h4></nav>"],
        &[],
    );

    let icons = page(
        ".icon { display: inline-block; width: 16px; height: 16px }\n\
         .icon:empty + span { padding-left: 6px }\n\
         td:empty { font-size: 0; line-height: 0 }\n\
         .perks td:last-child { color: #333333 }",
        "<h2>Why members stay with us</h2>\n\
         <table class=\"perks\">\n\
         <tr><td></td><td><span class=\"icon\"></span><span>Free returns within thirty days</span></td></tr>\n\
         <tr><td></td><td><span class=\"icon\"></span><span>Next day delivery on orders before noon</span></td></tr>\n\
         <tr><td></td><td><span class=\"icon\"></span><span>Price match on any identical product</span></td></tr>\n\
         </table>\n\
         <p>Your membership renews automatically on the first of next month; nothing \
         needs to be done unless you want to change your plan.</p>",
    );
    expect_ordinary("ordinary 3 icons", &icons, &[], &[]);
}

// ---------------------------------------------------------------------
// Ordinary 4: :has()
// ---------------------------------------------------------------------

/// Ordinary 4: `.card:has(img)`, `.card:has(> .badge)`, `h2:has(+ p)`,
/// `.row:has(~ .row)`, `.item:has(+ .sold-out){opacity:.5}`,
/// `li:has(> a[href^=…])`, `dt:has(+ dd)`, `blockquote:has(cite)`,
/// `p:has(> strong:first-child)`, `tr:has(+ tr.total) td`,
/// `.alert:has(.dismiss)`: every word shown; and
/// `.promo:has(> .expired){display:none}`, which hides the expired
/// promotions (the marker after their text), while a promo with a
/// `.expired` grandchild stays.
#[test]
fn ordinary_4_has_in_cards_and_promos() {
    let expired_a = "<div class=\"promo\"><p>Winter clearance: forty percent off wool coats \
                     and knitted scarves.</p><small class=\"expired\">Ended</small></div>";
    let expired_b = "<div class=\"promo\"><span class=\"expired\"></span><p>Garden lanterns \
                     two for one.</p></div>";
    let shop = page(
        ".card { border: 1px solid #dddddd; padding: 16px }\n\
         .card:has(img) { padding: 0 }\n\
         .card:has(> .badge) { border-color: #d4a017 }\n\
         h2:has(+ p) { margin-bottom: 4px }\n\
         .promo:has(> .expired) { display: none }\n\
         .promo { background: #eef7ee; margin: 8px 0 }",
        &format!(
            "<h2>New this week</h2>\n<p>Fresh arrivals picked by our buyers for early spring.</p>\n\
             <div class=\"card\"><img src=\"https://shop.example/i/boots.jpg\" alt=\"\" width=\"120\">\
             <p>Waterproof walking boots in three colours, sizes four to twelve.</p></div>\n\
             <div class=\"card\"><span class=\"badge\">Bestseller</span>\
             <p>The linen shirt is back, now also in olive green.</p></div>\n\
             {expired_a}\n\
             <div class=\"promo\"><p>Spring bulbs are back in stock; <em class=\"expired\">last \
             year's prices</em> still apply until Easter.</p></div>\n\
             {expired_b}\n\
             <p>Free delivery on every order over fifty pounds.</p>"
        ),
    );
    expect_ordinary("ordinary 4 shop", &shop, &[expired_a, expired_b], &[]);

    let guide = page(
        "li:has(> a[href^=\"https://shop\"]) { font-weight: bold }\n\
         dt:has(+ dd) { cursor: pointer; font-weight: bold }\n\
         blockquote:has(cite) { font-style: italic; border-left: 3px solid #cccccc }\n\
         p:has(> strong:first-child) { background: #f0f4ff }\n\
         .row:has(~ .row) { border-bottom: 1px solid #eeeeee }",
        "<p><strong>Tip:</strong> soak the seeds overnight before sowing them indoors.</p>\n\
         <ul><li><a href=\"https://shop.example/seeds\">Buy tomato seeds</a></li>\
         <li><a href=\"https://blog.example/sowing\">Read the sowing guide</a></li></ul>\n\
         <dl><dt>Germination</dt><dd>Seven to ten days in a warm room.</dd>\
         <dt>Potting on</dt><dd>When two true leaves appear.</dd></dl>\n\
         <blockquote>The best tomatoes are the ones you grew yourself. <cite>Old gardener</cite></blockquote>\n\
         <div class=\"row\">Week one: sow and cover lightly.</div>\
         <div class=\"row\">Week three: move to a sunny windowsill.</div>",
    );
    expect_ordinary("ordinary 4 guide", &guide, &[], &[]);

    let basket = page(
        "tr:has(+ tr.total) td { border-bottom: 2px solid #000000 }\n\
         .alert:has(.dismiss) { padding-right: 40px }\n\
         .item:has(+ .sold-out) { opacity: .5 }\n\
         .opt:has(~ .opt) { border-bottom: 1px solid #eeeeee }",
        "<div class=\"alert\">Your basket will be kept for seven days. \
         <a class=\"dismiss\" href=\"#\">Dismiss</a></div>\n\
         <table><tr><td>Ceramic teapot</td><td>24.00</td></tr>\
         <tr><td>Loose leaf sampler</td><td>12.50</td></tr>\
         <tr class=\"total\"><td>Basket total</td><td>36.50</td></tr></table>\n\
         <div class=\"item\">Matching cups, set of two</div><div class=\"sold-out\">Sold out for now</div>\n\
         <div class=\"opt\">Gift wrap available at checkout</div><div class=\"opt\">Collect in store \
         on Saturday mornings</div>",
    );
    expect_ordinary("ordinary 4 basket", &basket, &[], &[]);
}

// ---------------------------------------------------------------------
// Ordinary 5: footers
// ---------------------------------------------------------------------

/// Ordinary 5: footers styled by `p:only-child`, `p:last-of-type`,
/// `p:nth-last-of-type(2)`, `a:last-of-type`, `a:only-of-type`,
/// `address:only-of-type`, a dark `:last-child` footer of white text,
/// `:is(p, div):last-child`, `td:only-child`, `small:only-of-type`,
/// `div:nth-last-child(1)`: every word shown.
#[test]
fn ordinary_5_footers_only_child_and_last_of_type() {
    let dark = page(
        "body { background: #ffffff; color: #222222 }\n\
         .footer { background: #222222; color: #ffffff; padding: 20px }\n\
         .footer:last-child { margin-bottom: 0 }\n\
         .footer p:last-of-type { margin-bottom: 0; font-size: 12px }\n\
         .footer p:nth-last-of-type(2) { color: #cccccc }\n\
         .footer a { color: #ffffff; margin-right: 10px }\n\
         .footer a:last-of-type { margin-right: 0 }\n\
         .social a:only-of-type { display: block }\n\
         address:only-of-type { font-style: normal }",
        "<p>Hi Ana, your monthly reading list is ready: six long reads about cities, \
         rivers and the people who map them.</p>\n\
         <div class=\"footer\">\n\
         <p>You receive this letter because you subscribed on our website.</p>\n\
         <p><a href=\"https://letters.example/prefs\">Preferences</a> \
         <a href=\"https://letters.example/unsubscribe\">Unsubscribe</a></p>\n\
         <div class=\"social\"><a href=\"https://social.example/letters\">Follow us</a></div>\n\
         <address>Letters Collective, 4 Quay Street, Bristol</address>\n\
         </div>",
    );
    expect_ordinary("ordinary 5 dark", &dark, &[], &[]);

    let signature = page(
        ".sig p:only-child { font-size: 11px; color: #888888 }\n\
         .legal :is(p, div):last-child { margin-bottom: 0 }\n\
         .legal small:only-of-type { font-size: 10px; color: #777777 }\n\
         .wrap > div:nth-last-child(1) { border-top: 1px solid #cccccc }",
        "<div class=\"wrap\">\n\
         <div><p>Dear Mr Lindqvist,</p><p>please find the signed lease for the workshop unit \
         attached. The keys can be collected from reception from Monday.</p></div>\n\
         <div class=\"sig\"><p>Karin Holm, Property Office</p></div>\n\
         <div class=\"legal\"><p>This message is meant for its addressee only.</p>\
         <div><small>Holm and Partners, registered in Uppsala.</small></div></div>\n\
         </div>",
    );
    expect_ordinary("ordinary 5 signature", &signature, &[], &[]);

    let table_footer = page(
        ".foot td:only-child { text-align: center; color: #666666; font-size: 12px }\n\
         .foot a:last-of-type { padding-right: 0 }\n\
         .foot p:nth-last-of-type(1) { margin: 0 }\n\
         .foot tr:last-child td { padding-bottom: 24px }",
        "<table width=\"100%\"><tr><td><p>Good news, Tom: the repair of your bicycle is \
         finished and it is waiting for you at the workshop on Mill Lane.</p>\
         <p>We replaced the chain and both brake pads and trued the rear wheel.</p></td></tr></table>\n\
         <table class=\"foot\" width=\"100%\">\n\
         <tr><td><p>Mill Lane Cycles, open Tuesday to Saturday</p>\
         <p><a href=\"https://cycles.example/\">Website</a> \
         <a href=\"https://cycles.example/map\">Directions</a></p></td></tr>\n\
         <tr><td>Questions? Call us on 0117 555 0142.</td></tr>\n\
         </table>",
    );
    expect_ordinary("ordinary 5 table footer", &table_footer, &[], &[]);
}
