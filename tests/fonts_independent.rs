//! Independent cases for two reading classes of issue 65's fifth round
//! (docs/admin/evasion.md): letters drawn by the page's own font (class F,
//! a font cipher) and scanned PDF pages in every encoding (class P),
//! written from the classes' descriptions alone, without the authors'
//! tests or the reader's code.
//!
//! Class F, attack cases (all copies one campaign, the last two bulk, each
//! copy read as a person reads it):
//!
//! 1. a password lure set in DejaVu Sans Mono (TrueType) by a class
//!    selector, a personalised greeting, each copy its own key; two plain
//!    copies among them;
//! 2. a parcel lure whose long words only are ciphered, each in an inline
//!    `font-family` list opening with an unknown name; DejaVu Serif WOFF;
//!    two plain copies among them;
//! 3. an invoice lure in upper case and digits, each word its own
//!    `<font face>` (an unknown name first), DejaVu Sans Mono Bold WOFF2;
//! 4. an investment lure set by the `font` shorthand with a line height and
//!    `!important` under an id and descendant selector, each copy another
//!    base font (Serif, Sans Bold, Mono, Condensed...) and flavour;
//! 5. a prize lure whose words are cut into spans of one to three letters,
//!    every other span ciphered, DejaVu Serif Bold TrueType, quoted-printable;
//!    two plain copies among them.
//!
//! Class F, ordinary cases (each clean, none sharing a campaign):
//!
//! 1. five newsletters embedding the same honest brand font (same bytes);
//! 2. five messages set in a remote web font (`@import` and an https
//!    `@font-face`): read by their code points;
//! 3. five different texts in one cipher font (one key, same bytes);
//! 4. five messages in an honest embedded font (TTF, WOFF, WOFF2): each
//!    reads as the same page without the font;
//! 5. five messages declaring a cipher font they do not use (no rule, a
//!    rule matching nothing, after Arial, `sans-serif`, `serif` or `Times
//!    New Roman`): each reads as written;
//! 6. (added) five newsletters with a one-word heading ("Prize", "Prime",
//!    "Pride", "Price", "Probe") in an honest display font: each reads as
//!    written.
//!
//! Class P, attack cases (a scanned lure page under a short body, each
//! copy with its own name, place, size and speckles, read by OCR):
//!
//! 1. 1-bit FlateDecode grey, half the copies inverted with `/Decode [1
//!    0]`, resources on the page, inherited from the page tree or
//!    referenced;
//! 2. CCITT fax, group 4 and group 3 (1-D), `BlackIs1` true and false;
//! 3. indexed colour (2, 4 and 8 bits, a palette a copy) inside one or two
//!    form XObjects;
//! 4. a colour encoding a copy: CMYK, ICC-based, 16-bit CalGray, CalRGB,
//!    Separation, 4-bit grey, 16-bit RGB;
//! 5. a stencil mask painted in a colour, two forms deep, beside broken
//!    siblings at every level (a corrupt stream, a missing object).
//!
//! Class P, ordinary cases (each clean, none sharing a campaign):
//!
//! 1. five different letters from one office scanner (same sender,
//!    subject and body), CCITT group 4;
//! 2. five different letters on one letterhead template, 1-bit Flate;
//! 3. five different colour notices, each in another colour encoding;
//! 4. five different scans that carry the same logo XObject;
//! 5. five pictures without text (charts, shapes), 16-bit RGB and
//!    Separation.
//!
//! JPEG 2000 is not tried (no encoder at test time). All cases but F
//! ordinary 2 need Tesseract and DejaVu and are ignored without them.
//! Messages are kept under the milter's default 1 MiB buffer (a font a
//! sender wants read fits in it), so the larger DejaVu faces go as WOFF.
//!
//! Results (2-core machine, Tesseract 5 and DejaVu installed): 21 cases,
//! 17 passed as written, 4 failed, each the product's:
//!
//! - F attack 4: no copy's font was applied (every copy read by its code
//!   points, a clean campaign of its own): a selector of three compounds
//!   is not matched (`#offer-0 .content p`, `div div p`, `#a > .b > p`;
//!   one or two are), and the shorthands `font: normal 600 15px/22px "F"`
//!   and `font: 15px/normal "F"` lost the family. The shorthands are
//!   mended (a bare number is a weight, `normal` a line height); three
//!   compounds were ignored as a known gap until the selector reader
//!   (2026-12-07, later): now it passes.
//! - F attack 5: spans inside words are drawn one run at a time, apart
//!   from the letters beside them, so words come out cut ("y ha be siet as
//!   wir our ua seyu"): ignored, a known gap (the page's other letters
//!   would need a font of the reader's own to be drawn beside them).
//! - F ordinary 6 (added after probing): the heading "Prime" in an honest
//!   embedded font read "prize", the heading of the message before it: the
//!   OCR workers' memory of picture families answered a drawn page with
//!   the reading of one that only looked alike. Mended: a page the reader
//!   draws is recognized every time (`Recognizer::recognize_drawn`).
//! - P attack 2: CCITT group 3 without EOL markers (`/K 0`, the PDF
//!   default) gives no picture (`fax::decoder::decode_g3` needs EOLs); the
//!   group 4 copies are read and join: ignored, a known gap.
//!
//! Now 19 of 21 pass; F attack 5 and P attack 2 stay ignored.

mod common;

use std::io::Write as _;

use bulkwatch::engine::verdict::Level;
use common::{config, replay, Fed, Msg};
use image::{GrayImage, Luma};
use testkit::fonts::{cipher_font, cipher_key, encode, woff, woff2, Key};
use testkit::Rng;

// ---------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------

/// What a message carries.
enum Body {
    /// An HTML page, base64 transfer encoding.
    Html(String),
    /// An HTML page, quoted-printable.
    HtmlQp(String),
    /// A short plain text and a PDF attachment.
    Pdf(String, Vec<u8>),
}

struct Mail {
    from: String,
    to: String,
    subject: String,
    body: Body,
}

impl Mail {
    /// The raw message (CRLF line ends), `n` making its Message-ID.
    fn raw(&self, n: usize) -> Vec<u8> {
        let sender = self
            .from
            .rsplit('<')
            .next()
            .unwrap_or("")
            .trim_end_matches('>');
        let domain = sender.rsplit('@').next().unwrap_or("example.org");
        let mut s = format!(
            "Return-Path: <{sender}>\r\nFrom: {}\r\nTo: {}\r\nSubject: {}\r\n\
             Date: Thu, 14 Mar 2024 10:{:02}:{:02} +0100\r\nMessage-ID: <fonts.{n}.{}@{domain}>\r\n\
             MIME-Version: 1.0\r\n",
            self.from,
            self.to,
            self.subject,
            n / 60 % 60,
            n % 60,
            n * 7919
        );
        let b64 = |b: &[u8]| testkit::base64_lines(b).replace('\n', "\r\n");
        match &self.body {
            Body::Html(h) => {
                s.push_str("Content-Type: text/html; charset=utf-8\r\n");
                s.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
                s.push_str(&b64(h.as_bytes()));
            }
            Body::HtmlQp(h) => {
                s.push_str("Content-Type: text/html; charset=utf-8\r\n");
                s.push_str("Content-Transfer-Encoding: quoted-printable\r\n\r\n");
                s.push_str(&quoted_printable(h));
            }
            Body::Pdf(text, pdf) => {
                let bd = format!("=_scan_{n}");
                s.push_str(&format!(
                    "Content-Type: multipart/mixed; boundary=\"{bd}\"\r\n\r\n--{bd}\r\n\
                     Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n--{bd}\r\n\
                     Content-Type: application/pdf; name=\"scan.pdf\"\r\n\
                     Content-Disposition: attachment; filename=\"scan.pdf\"\r\n\
                     Content-Transfer-Encoding: base64\r\n\r\n{}--{bd}--\r\n",
                    b64(pdf)
                ));
            }
        }
        s.into_bytes()
    }
}

fn quoted_printable(s: &str) -> String {
    let mut out = String::new();
    for line in s.split('\n') {
        let mut col = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let blank_end = (b == b' ' || b == b'\t') && i + 1 == bytes.len();
            let piece = if blank_end || b == b'=' || !(32..127).contains(&b) {
                format!("={b:02X}")
            } else {
                char::from(b).to_string()
            };
            if col + piece.len() > 75 {
                out.push_str("=\r\n");
                col = 0;
            }
            out.push_str(&piece);
            col += piece.len();
        }
        out.push_str("\r\n");
    }
    out
}

/// A message of `group`; under the 1 MiB a milter buffers by default
/// (`milter.max_message_bytes`), as a sender who wants it read keeps it.
fn msg(group: &'static str, n: usize, m: &Mail) -> Msg {
    let raw = m.raw(n);
    assert!(raw.len() < 1 << 20, "{group} #{n}: {} bytes", raw.len());
    Msg { group, raw }
}

fn provide_ocr() {
    static OCR: std::sync::Once = std::sync::Once::new();
    OCR.call_once(|| bulkwatch::worker::provide_ocr_here(&config()));
}

fn reading_of(raw: &[u8]) -> bulkwatch::engine::Reading {
    provide_ocr();
    let rc = bulkwatch::engine::read_config(&config());
    let reading = bulkwatch::engine::read(raw, &[], &rc);
    assert!(reading.parsed, "message not parsed");
    reading
}

fn text_of(raw: &[u8]) -> String {
    reading_of(raw).normalized.text
}

/// What was read of each message and how it was judged, for a failure.
fn explain(name: &str, fed: &[Fed]) -> String {
    let mut s = format!("case {name}:\n");
    for (i, f) in fed.iter().enumerate() {
        let reading = reading_of(&f.raw);
        let text: String = reading.normalized.text.chars().take(300).collect();
        let pictures: Vec<String> = reading
            .pictures
            .iter()
            .map(|p| format!("{p:016x}"))
            .collect();
        s.push_str(&format!(
            "  #{:<2} {:<8} campaign={:?} level={:?} dist={:?} feat={} near={:?}/{:?} \
             pictures={pictures:?} partial={}\n      text={:?}\n",
            i + 1,
            f.group,
            f.rec.campaign.map(|c| c.0),
            f.rec.level,
            f.rec.distance,
            f.rec.features,
            f.rec.near_campaign.map(|c| c.0),
            f.rec.near_distance,
            reading.partial,
            text.replace('\n', " / "),
        ));
    }
    s
}

/// An attack: every copy of `group` in one campaign, its last two copies
/// bulk; no message of another group in that campaign.
fn expect_campaign(name: &str, fed: &[Fed], group: &str) {
    let members: Vec<&Fed> = fed.iter().filter(|f| f.group == group).collect();
    assert!(members.len() >= 7, "case {name}: too few copies");
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
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        explain(name, fed)
    );
}

/// Ordinary mail: every message clean (or skipped as too short), sharing
/// no campaign with another message of the case.
fn expect_apart(name: &str, fed: &[Fed]) {
    let mut problems = Vec::new();
    for (i, f) in fed.iter().enumerate() {
        if !matches!(f.rec.level, Level::Clean | Level::Skipped(_)) {
            problems.push(format!("#{} ({}) is {:?}", i + 1, f.group, f.rec.level));
        }
        let shared = fed.iter().enumerate().filter(|(j, g)| {
            *j != i && f.rec.campaign.is_some() && g.rec.campaign == f.rec.campaign
        });
        for (j, g) in shared {
            problems.push(format!(
                "#{} ({}) shares a campaign with #{} ({})",
                i + 1,
                f.group,
                j + 1,
                g.group
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        explain(name, fed)
    );
}

/// `phrase` as the reader normalizes text.
fn normalized(phrase: &str) -> String {
    let m = Mail {
        from: "Probe <probe@probe.example>".into(),
        to: to(0),
        subject: "probe".into(),
        body: Body::Html(format!("<p>{phrase}</p>")),
    };
    text_of(&m.raw(0))
}

/// Four words of `line` from its second: what a copy showing it must read.
fn phrase(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    words[1.min(words.len() - 1)..words.len().min(5)].join(" ")
}

/// Each message of `group` reads a phrase of each of `lines` (as shown).
fn expect_reads(name: &str, fed: &[Fed], group: &str, lines: &[&str]) {
    let wanted: Vec<String> = lines.iter().map(|l| normalized(&phrase(l))).collect();
    let mut problems = Vec::new();
    for f in fed.iter().filter(|f| f.group == group) {
        // Lines as OCR cuts them are not the page's: compared across them.
        let text = text_of(&f.raw).replace('\n', " ");
        for p in wanted.iter().filter(|p| !text.contains(p.as_str())) {
            problems.push(format!("#{} lacks {p:?}; text: {text:?}", f.rec.n));
        }
    }
    assert!(problems.is_empty(), "case {name}:\n{}", problems.join("\n"));
}

const PEOPLE: [&str; 12] = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "oscar",
];

fn to(i: usize) -> String {
    let p = PEOPLE[i % PEOPLE.len()];
    format!("{} <{p}@example.net>", capital(p))
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// An unrelated plain message, to sit beside a campaign.
fn bystander() -> Mail {
    Mail {
        from: "Nora Field <nora@gardenclub.example>".into(),
        to: "Peter <peter@example.net>".into(),
        subject: "Allotment meeting on Saturday".into(),
        body: Body::Html(page("", &paras(&owned(&HAMS[0])))),
    }
}

// ---------------------------------------------------------------------
// Texts
// ---------------------------------------------------------------------

const PASSWORD: [&str; 8] = [
    "Dear NAME,",
    "your mailbox password expires today at midnight.",
    "To keep receiving messages you must confirm your",
    "current password on the secure portal below.",
    "Mailboxes that are not confirmed will be closed",
    "and all stored messages will be removed forever.",
    "Thank you for your patience,",
    "the Mail Administration Team",
];
const PARCEL: [&str; 8] = [
    "Hello NAME,",
    "we tried to deliver your parcel this morning",
    "but nobody was at home to sign for it.",
    "Your package is now held at our local depot.",
    "Please pay the small redelivery fee of two dollars",
    "within forty eight hours or it will be returned",
    "to the sender and your order will be cancelled.",
    "Express Courier Customer Service",
];
const INVOICE: [&str; 7] = [
    "ATTENTION NAME",
    "INVOICE 48213 IS OVERDUE AND PAYMENT IS REQUIRED",
    "AMOUNT DUE 1249 DOLLARS BEFORE FRIDAY 5 PM",
    "Your subscription renewal failed and your card was declined.",
    "Update your billing details today to avoid a late fee",
    "and the suspension of your antivirus protection plan.",
    "CALL OUR BILLING DESK AT 1 800 555 0199 NOW",
];
const CRYPTO: [&str; 7] = [
    "Dear NAME,",
    "our trading robot doubled the savings of our members last month.",
    "Start with a deposit of only two hundred fifty dollars and",
    "watch your balance grow every single day without any effort.",
    "Thousands of ordinary people have already quit their jobs.",
    "Places in the programme are limited and close this Sunday.",
    "Register your free account today and claim the welcome bonus.",
];
const PRIZE: [&str; 6] = [
    "Congratulations NAME!",
    "You have been selected as the winner of our annual survey.",
    "Your reward is a brand new smartphone with free shipping.",
    "To claim the prize simply answer three short questions",
    "and pay the handling charge with your credit card.",
    "The offer expires when the last device has been given away.",
];
const HAMS: [[&str; 6]; 5] = [
    [
        "Hi everyone,",
        "the allotment committee meets on Saturday at ten in the shed.",
        "We will talk about the new water butts and the compost rota,",
        "and whether to buy a second wheelbarrow for the lower plots.",
        "Bring your seed list if you want to join the order of beans.",
        "See you there, Nora",
    ],
    [
        "Dear parents,",
        "the school choir sings its spring concert on Thursday evening.",
        "Doors open at half past six in the main hall and the children",
        "should arrive by six wearing dark trousers and a white shirt.",
        "Cakes for the interval are welcome, please label any nuts.",
        "Many thanks, Mrs Holloway",
    ],
    [
        "Hello readers,",
        "this month the library book club discusses a novel about a",
        "lighthouse keeper on a remote island and his quarrelsome goat.",
        "We meet in the reading room upstairs on the second Tuesday.",
        "Tea and biscuits are provided, newcomers are always welcome.",
        "Warm regards, the library team",
    ],
    [
        "Workshop news",
        "Our volunteer bicycle workshop reopens after the winter break.",
        "Bring a puncture, a squeaky chain or a wobbly wheel and we will",
        "show you how to fix it yourself with the tools on the bench.",
        "Donations of spare inner tubes and old lights help a great deal.",
        "Ride safely, the workshop crew",
    ],
    [
        "To all staff,",
        "the bakery finished the quarter with steady sales of bread",
        "and a welcome rise in orders for birthday cakes and pastries.",
        "The new oven arrives in May, so the early shift will move",
        "to the side kitchen for two days while it is installed.",
        "Thank you all, Margaret",
    ],
];

fn owned(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

/// `lines` with NAME replaced by `name`.
fn lure(lines: &[&str], name: &str) -> Vec<String> {
    lines.iter().map(|l| l.replace("NAME", name)).collect()
}

// ---------------------------------------------------------------------
// Class F: pages with their own fonts
// ---------------------------------------------------------------------

fn dejavu(name: &str) -> Vec<u8> {
    std::fs::read(format!("/usr/share/fonts/truetype/dejavu/{name}.ttf")).expect("DejaVu")
}

#[derive(Clone, Copy)]
enum Flavour {
    Ttf,
    Woff,
    Woff2,
}

/// An `@font-face` rule bringing `font` as `family` in a `data:` URL.
fn face(family: &str, font: &[u8], flavour: Flavour) -> String {
    let (bytes, mime, format) = match flavour {
        Flavour::Ttf => (font.to_vec(), "font/ttf", "truetype"),
        Flavour::Woff => (woff(font), "font/woff", "woff"),
        Flavour::Woff2 => (woff2(font), "font/woff2", "woff2"),
    };
    format!(
        "@font-face {{ font-family: \"{family}\"; font-style: normal;\n  src: url(\"data:{mime};base64,{}\") format(\"{format}\"); }}",
        testkit::base64(&bytes)
    )
}

fn page(style: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Message</title>\n\
         <style type=\"text/css\">\n{style}\n</style></head>\n<body>\n{body}\n</body></html>\n"
    )
}

fn paras(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("<p>{l}</p>"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn coded(lines: &[String], key: &Key) -> Vec<String> {
    lines.iter().map(|l| encode(l, key)).collect()
}

fn html_mail(from: String, i: usize, subject: String, body: Body) -> Mail {
    Mail {
        from,
        to: to(i),
        subject,
        body,
    }
}

/// F attack 1: a class selector, whole text, Mono TrueType, a key a copy.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_attack_class_selector_mono_ttf() {
    let base = dejavu("DejaVuSansMono");
    let mut msgs = vec![msg("other", 100, &bystander())];
    for (i, person) in PEOPLE.iter().take(8).enumerate() {
        let lines = lure(&PASSWORD, &capital(person));
        let html = if i == 2 || i == 5 {
            page(
                ".msg{font-family:Arial}",
                &format!("<div class=\"msg\">{}</div>", paras(&lines)),
            )
        } else {
            let key = cipher_key(1000 + i as u64);
            let style = format!(
                "{}\n.msg {{ font-family: 'Mail Sans', monospace; font-size: 15px; color: #222 }}",
                face("Mail Sans", &cipher_font(&base, &key), Flavour::Ttf)
            );
            page(
                &style,
                &format!("<div class=\"msg\">{}</div>", paras(&coded(&lines, &key))),
            )
        };
        let from = format!("Mail Admin <admin@mailbox-centre{i}.example>");
        let m = html_mail(
            from,
            i,
            format!("Password expiry notice {}", 300 + i),
            Body::Html(html),
        );
        msgs.push(msg("lure", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("F attack 1", &fed, "lure");
    expect_reads("F attack 1", &fed, "lure", &[PASSWORD[3], PASSWORD[5]]);
}

/// F attack 2: only the long words ciphered, each in an inline style with
/// an unknown family first; Serif WOFF.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_attack_long_words_inline_style_serif_woff() {
    let base = dejavu("DejaVuSerif");
    let mut msgs = vec![msg("other", 200, &bystander())];
    for i in 0..8 {
        let lines = lure(&PARCEL, &capital(PEOPLE[i + 1]));
        let body = if i == 1 || i == 4 {
            paras(&lines)
        } else {
            let key = cipher_key(2000 + i as u64);
            let span = |w: &str| {
                if w.chars().filter(char::is_ascii_alphabetic).count() >= 5 {
                    format!(
                        "<span style=\"font-family: 'Segoe Fancy', 'Parcel Serif', Georgia, serif\">{}</span>",
                        encode(w, &key)
                    )
                } else {
                    w.to_owned()
                }
            };
            let lines: Vec<String> = lines
                .iter()
                .map(|l| l.split(' ').map(span).collect::<Vec<_>>().join(" "))
                .collect();
            format!(
                "<style>{}</style>\n{}",
                face("Parcel Serif", &cipher_font(&base, &key), Flavour::Woff),
                paras(&lines)
            )
        };
        let from = format!("Express Courier <noreply@courier-track{i}.example>");
        let m = html_mail(
            from,
            i + 1,
            "Delivery attempt failed".into(),
            Body::Html(page("", &body)),
        );
        msgs.push(msg("parcel", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("F attack 2", &fed, "parcel");
    expect_reads("F attack 2", &fed, "parcel", &[PARCEL[3], PARCEL[4]]);
}

/// F attack 3: upper case and digits, each word its own `<font face>`,
/// an unknown name first; Mono Bold WOFF2.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_attack_font_face_tags_upper_case_digits_woff2() {
    let base = dejavu("DejaVuSansMono-Bold");
    let mut msgs = vec![msg("other", 300, &bystander())];
    for i in 0..7 {
        let key = cipher_key(3000 + i as u64);
        let lines = lure(&INVOICE, &PEOPLE[i + 2].to_uppercase());
        let rows: Vec<String> = coded(&lines, &key)
            .iter()
            .map(|l| {
                let words: Vec<String> = l
                    .split(' ')
                    .map(|w| {
                        format!(
                            "<font face=\"Arial Rounded Pro, Invoice Mono\" size=\"3\">{w}</font>"
                        )
                    })
                    .collect();
                format!("<div>{}</div>", words.join(" "))
            })
            .collect();
        let style = face("Invoice Mono", &cipher_font(&base, &key), Flavour::Woff2);
        let from = format!("Billing <billing@secure-renewals{i}.example>");
        let html = page(&style, &rows.join("\n"));
        let m = html_mail(
            from,
            i + 2,
            format!("INVOICE {} OVERDUE", 48_213 + i),
            Body::Html(html),
        );
        msgs.push(msg("invoice", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("F attack 3", &fed, "invoice");
    expect_reads("F attack 3", &fed, "invoice", &[INVOICE[1], INVOICE[3]]);
}

/// F attack 4: the `font` shorthand with a line height and `!important`
/// under an id and descendant selector; a base font and flavour a copy.
#[test]
fn font_attack_shorthand_important_descendant_any_base_font() {
    let bases = [
        ("DejaVuSerif", Flavour::Ttf, "16px/1.7"),
        ("DejaVuSans-Bold", Flavour::Woff, "normal 600 15px/22px"),
        ("DejaVuSansMono", Flavour::Woff2, "14px/1.5"),
        ("DejaVuSerif-Bold", Flavour::Woff, "italic 16px/24px"),
        ("DejaVuSansCondensed", Flavour::Woff, "15px/normal"),
        ("DejaVuSans", Flavour::Woff, "small-caps 15px/1.6"),
        ("DejaVuSerifCondensed", Flavour::Woff2, "17px/1.4"),
    ];
    let mut msgs = vec![msg("other", 400, &bystander())];
    for (i, (font, flavour, shorthand)) in bases.into_iter().enumerate() {
        let key = cipher_key(4000 + i as u64);
        let lines = lure(&CRYPTO, &capital(PEOPLE[i + 3]));
        let style = format!(
            "{}\n.content p {{ font-family: Arial, sans-serif; }}\n\
             #offer-{i} .content p {{ font: {shorthand} \"Fin Grotesk {i}\", serif !important; }}",
            face(
                &format!("Fin Grotesk {i}"),
                &cipher_font(&dejavu(font), &key),
                flavour
            )
        );
        let body = format!(
            "<div id=\"offer-{i}\"><div class=\"content\">\n{}\n</div></div>",
            paras(&coded(&lines, &key))
        );
        let from = format!("Wealth Club <club@smart-wealth{i}.example>");
        let m = html_mail(
            from,
            i + 3,
            "Double your savings".into(),
            Body::Html(page(&style, &body)),
        );
        msgs.push(msg("crypto", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("F attack 4", &fed, "crypto");
    expect_reads("F attack 4", &fed, "crypto", &[CRYPTO[2], CRYPTO[4]]);
}

/// `line` with its words cut into spans of one to three letters, every
/// other span ciphered with `key` in class `k`.
fn mid_word_spans(line: &str, key: &Key, rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut ciphered = rng.chance(0.5);
    for (wi, word) in line.split(' ').enumerate() {
        if wi > 0 {
            out.push(' ');
        }
        let chars: Vec<char> = word.chars().collect();
        let mut at = 0;
        while at < chars.len() {
            let n = rng.range(1, 3).min(chars.len() - at);
            let piece: String = chars[at..at + n].iter().collect();
            if ciphered {
                out.push_str(&format!("<span class=\"k\">{}</span>", encode(&piece, key)));
            } else {
                out.push_str(&format!("<span>{piece}</span>"));
            }
            ciphered = !ciphered;
            at += n;
        }
    }
    out
}

/// F attack 5: spans of one to three letters, every other one ciphered;
/// Serif Bold TrueType, quoted-printable.
#[test]
#[ignore = "known gap (issue 65): a run set in a page font inside a word is drawn apart from the letters beside it (no fallback font to draw them with)"]
fn font_attack_spans_inside_words() {
    let base = dejavu("DejaVuSerif-Bold");
    let mut msgs = vec![msg("other", 500, &bystander())];
    for i in 0..8 {
        let lines = lure(&PRIZE, &capital(PEOPLE[i + 4]));
        let html = if i == 0 || i == 3 {
            page("p{font-weight:bold}", &paras(&lines))
        } else {
            let key = cipher_key(5000 + i as u64);
            let mut rng = Rng::new(50 + i as u64);
            let rows: Vec<String> = lines
                .iter()
                .map(|l| mid_word_spans(l, &key, &mut rng))
                .collect();
            let style = format!(
                "{}\np {{ font-weight: bold; font-family: Georgia, serif }}\nspan.k {{ font-family: Glyphs }}",
                face("Glyphs", &cipher_font(&base, &key), Flavour::Ttf)
            );
            page(&style, &paras(&rows))
        };
        let from = format!("Survey Team <rewards@survey-prize{i}.example>");
        let m = html_mail(from, i + 4, "You are our winner".into(), Body::HtmlQp(html));
        msgs.push(msg("prize", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("F attack 5", &fed, "prize");
    expect_reads("F attack 5", &fed, "prize", &[PRIZE[1], PRIZE[3]]);
}

/// Five ordinary messages, one a ham text, each page made by `page_of`.
fn five_hams(tag: usize, page_of: impl Fn(usize, &[String]) -> String) -> Vec<Msg> {
    const GROUPS: [&str; 5] = ["garden", "choir", "books", "bikes", "bakery"];
    (0..5)
        .map(|i| {
            let from = format!("{} <news@{}-club.example>", capital(GROUPS[i]), GROUPS[i]);
            let html = page_of(i, &owned(&HAMS[i]));
            let m = html_mail(from, i + 5, "Monthly news".into(), Body::Html(html));
            msg(GROUPS[i], tag + i, &m)
        })
        .collect()
}

/// Each message reads as `plain` (its page without fonts) reads.
fn expect_same_as_plain(name: &str, fed: &[Fed], plain: &[Msg]) {
    for (f, p) in fed.iter().zip(plain) {
        assert_eq!(
            text_of(&f.raw),
            text_of(&p.raw),
            "case {name}: #{} ({})",
            f.rec.n,
            f.group
        );
    }
}

fn plain_hams() -> Vec<Msg> {
    five_hams(90, |_, lines| page("", &paras(lines)))
}

/// F ordinary 1: newsletters in the same honest brand font.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_ordinary_same_brand_font_apart() {
    let brand = face("Brand Serif", &dejavu("DejaVuSerif"), Flavour::Woff);
    let msgs = five_hams(600, |_, lines| {
        let style = format!("{brand}\nbody {{ font-family: 'Brand Serif', Georgia, serif }}");
        page(&style, &paras(lines))
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 1", &fed);
    for (i, f) in fed.iter().enumerate() {
        expect_reads(
            "F ordinary 1",
            std::slice::from_ref(f),
            f.group,
            &[HAMS[i][1], HAMS[i][3]],
        );
    }
}

/// F ordinary 2: a remote web font, not fetched: read by code points.
#[test]
fn font_ordinary_remote_font_read_as_written() {
    let msgs = five_hams(700, |_, lines| {
        let style = "@import url('https://fonts.googleapis.com/css2?family=Roboto&display=swap');\n\
            @font-face { font-family: 'Roboto Web'; src: url(https://fonts.gstatic.com/s/roboto/v30/KFOmCnqEu92Fr1Mu4mxK.woff2) format('woff2'); }\n\
            body { font-family: 'Roboto Web', Roboto, Arial, sans-serif }";
        page(style, &paras(lines))
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 2", &fed);
    expect_same_as_plain("F ordinary 2", &fed, &plain_hams());
}

/// F ordinary 3: different texts in one cipher font (one key, one file).
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_ordinary_one_cipher_font_different_texts_apart() {
    let key = cipher_key(777);
    let font = face(
        "Secret Mono",
        &cipher_font(&dejavu("DejaVuSansMono"), &key),
        Flavour::Ttf,
    );
    let msgs = five_hams(800, |_, lines| {
        let style = format!("{font}\n.t {{ font-family: 'Secret Mono' }}");
        page(
            &style,
            &format!("<div class=\"t\">{}</div>", paras(&coded(lines, &key))),
        )
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 3", &fed);
    for (i, f) in fed.iter().enumerate() {
        expect_reads(
            "F ordinary 3",
            std::slice::from_ref(f),
            f.group,
            &[HAMS[i][1], HAMS[i][4]],
        );
    }
}

/// F ordinary 4: honest embedded fonts read as the page without them.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_ordinary_honest_font_reads_as_without() {
    let fonts = [
        ("DejaVuSerif", Flavour::Ttf),
        ("DejaVuSansMono", Flavour::Woff2),
        ("DejaVuSans", Flavour::Woff),
        ("DejaVuSerif-Italic", Flavour::Woff2),
        ("DejaVuSansMono-Bold", Flavour::Ttf),
    ];
    let msgs = five_hams(900, |i, lines| {
        let (f, flavour) = fonts[i];
        let style = format!(
            "{}\nbody {{ font: 15px/1.5 'House {i}', sans-serif }}",
            face(&format!("House {i}"), &dejavu(f), flavour)
        );
        page(&style, &paras(lines))
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 4", &fed);
    expect_same_as_plain("F ordinary 4", &fed, &plain_hams());
}

/// F ordinary 5: a cipher font declared and not used (no rule, a rule
/// matching nothing, or named after a family every client has).
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_ordinary_declared_unused_font_reads_as_written() {
    let key = cipher_key(555);
    let font = face(
        "Secret",
        &cipher_font(&dejavu("DejaVuSerif"), &key),
        Flavour::Ttf,
    );
    let rules = [
        "",
        ".never-used { font-family: Secret }",
        "p { font-family: Arial, Secret }",
        "body { font-family: sans-serif, 'Secret' }",
        "p { font-family: 'Times New Roman', serif, Secret }",
    ];
    let msgs = five_hams(1000, |i, lines| {
        page(&format!("{font}\n{}", rules[i]), &paras(lines))
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 5", &fed);
    expect_same_as_plain("F ordinary 5", &fed, &plain_hams());
}

// ---------------------------------------------------------------------
// Class P: scanned PDF pages
// ---------------------------------------------------------------------

/// A page's size, px (and PDF units).
const PAGE: (u32, u32) = (1100, 520);

/// `lines` drawn in DejaVu Sans at `size` px from (`x0`, `y0`) on a
/// `w` x `h` page: ink 0, paper 255.
fn draw(lines: &[String], size: f32, x0: f32, y0: f32, (w, h): (u32, u32)) -> GrayImage {
    use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
    let data = dejavu("DejaVuSans");
    let font = FontRef::try_from_slice(&data).expect("a font");
    let scale = PxScale::from(size);
    let sf = font.as_scaled(scale);
    let mut img = GrayImage::from_pixel(w, h, Luma([255]));
    let mut base = y0 + sf.ascent();
    for line in lines {
        let mut x = x0;
        for c in line.chars() {
            let id = sf.glyph_id(c);
            let g = id.with_scale_and_position(scale, point(x, base));
            x += sf.h_advance(id);
            let Some(og) = font.outline_glyph(g) else {
                continue;
            };
            let b = og.px_bounds();
            og.draw(|gx, gy, cov| {
                let (px, py) = (
                    b.min.x as i64 + i64::from(gx),
                    b.min.y as i64 + i64::from(gy),
                );
                if px >= 0 && py >= 0 && px < i64::from(w) && py < i64::from(h) {
                    let v = (255.0 * (1.0 - cov.clamp(0.0, 1.0))) as u8;
                    let p = img.get_pixel_mut(px as u32, py as u32);
                    p.0[0] = p.0[0].min(v);
                }
            });
        }
        base += size * 1.5;
    }
    img
}

/// `img` with `n` specks of ink and `n` of paper (a scanner's dust).
fn speckle(mut img: GrayImage, seed: u64, n: usize) -> GrayImage {
    let mut rng = Rng::new(seed);
    for k in 0..2 * n {
        let (x, y) = (
            rng.below(img.width() as usize),
            rng.below(img.height() as usize),
        );
        img.put_pixel(x as u32, y as u32, Luma([if k % 2 == 0 { 0 } else { 255 }]));
    }
    img
}

/// Copy `i`'s scan of `lines`: its own size, place and dust.
fn scan_of(lines: &[String], i: usize) -> GrayImage {
    let size = 22.0 + (i % 4) as f32;
    let img = draw(
        lines,
        size,
        30.0 + 9.0 * i as f32,
        24.0 + 6.0 * i as f32,
        PAGE,
    );
    speckle(img, 7000 + i as u64, 300)
}

/// MSB-first bits.
struct Bits {
    out: Vec<u8>,
    acc: u8,
    n: u8,
}

impl Bits {
    fn new() -> Bits {
        Bits {
            out: Vec::new(),
            acc: 0,
            n: 0,
        }
    }
    fn put(&mut self, v: u32, n: u32) {
        for i in (0..n).rev() {
            self.acc = self.acc << 1 | (v >> i & 1) as u8;
            self.n += 1;
            if self.n == 8 {
                self.out.push(self.acc);
                (self.acc, self.n) = (0, 0);
            }
        }
    }
    fn code(&mut self, s: &str) {
        for c in s.bytes() {
            self.put(u32::from(c == b'1'), 1);
        }
    }
    fn align(&mut self) {
        while self.n != 0 {
            self.put(0, 1);
        }
    }
}

/// A picture XObject: its stream's dictionary entries (`@X` standing for
/// the number of its first extra object) and data, and the extra objects.
struct Pic {
    w: u32,
    h: u32,
    dict: String,
    data: Vec<u8>,
    extra: Vec<Vec<u8>>,
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// `img` as FlateDecode samples of `bpc` bits in `cs` (`f`: a grey
/// level's components), rows byte-aligned.
fn flate(img: &GrayImage, cs: &str, bpc: u32, f: impl Fn(u8) -> Vec<u32>) -> Pic {
    let mut b = Bits::new();
    for row in img.rows() {
        for p in row {
            for v in f(p.0[0]) {
                b.put(v, bpc);
            }
        }
        b.align();
    }
    Pic {
        w: img.width(),
        h: img.height(),
        dict: format!("/ColorSpace {cs} /BitsPerComponent {bpc} /Filter /FlateDecode"),
        data: zlib(&b.out),
        extra: Vec::new(),
    }
}

/// Ink of colour `ink` at grey level `g` over white, 8 bits a component.
fn tint(g: u8, ink: [u8; 3]) -> Vec<u32> {
    let t = f32::from(255 - g) / 255.0;
    ink.iter()
        .map(|&c| (255.0 - t * f32::from(255 - c)).round() as u32)
        .collect()
}

/// 1-bit grey (paper 1), or inverted under `/Decode [1 0]`.
fn gray1(img: &GrayImage, inverted: bool) -> Pic {
    let mut p = flate(img, "/DeviceGray", 1, |g| {
        vec![u32::from((g >= 160) != inverted)]
    });
    if inverted {
        p.dict.push_str(" /Decode [1 0]");
    }
    p
}

/// A stencil mask (ink 0 is painted), or inverted under `/Decode [1 0]`.
fn stencil(img: &GrayImage, inverted: bool) -> Pic {
    let mut p = gray1(img, inverted);
    p.dict = p.dict.replace("/ColorSpace /DeviceGray", "/ImageMask true");
    p
}

/// `n` (1 to 256) levels from `ink` to white as an indexed colour space.
fn indexed(img: &GrayImage, bpc: u32, ink: [u8; 3]) -> Pic {
    let n = 1u32 << bpc;
    let hex: String = (0..n)
        .flat_map(|j| tint((j * 255 / (n - 1)) as u8, ink))
        .map(|c| format!("{c:02X}"))
        .collect();
    let cs = format!("[/Indexed /DeviceRGB {} <{hex}>]", n - 1);
    flate(img, &cs, bpc, |g| {
        vec![(u32::from(g) * (n - 1) + 127) / 255]
    })
}

/// A small ICC profile header (RGB, no tags): viewers that cannot use it
/// take `/Alternate`.
fn icc_header() -> Vec<u8> {
    let mut p = vec![0u8; 132];
    p[..4].copy_from_slice(&132u32.to_be_bytes());
    p[8] = 2;
    p[12..16].copy_from_slice(b"mntr");
    p[16..20].copy_from_slice(b"RGB ");
    p[20..24].copy_from_slice(b"XYZ ");
    p[36..40].copy_from_slice(b"acsp");
    p
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut o = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    o.extend_from_slice(data);
    o.extend_from_slice(b"\nendstream");
    o
}

/// `img` in colour encoding `j` of seven.
fn colour_pic(img: &GrayImage, j: usize) -> Pic {
    let t = |g: u8| f32::from(255 - g) / 255.0;
    match j % 7 {
        0 => flate(img, "/DeviceCMYK", 8, |g| {
            [0.9, 0.6, 0.05, 0.35].iter().map(|k| (k * t(g) * 255.0) as u32).collect()
        }),
        1 => {
            let mut p = flate(img, "[/ICCBased @X 0 R]", 8, |g| tint(g, [120, 10, 20]));
            p.extra.push(stream("/N 3 /Alternate /DeviceRGB", &icc_header()));
            p
        }
        2 => flate(
            img,
            "[/CalGray << /WhitePoint [0.9505 1 1.089] /Gamma 1.8 >>]",
            16,
            |g| vec![u32::from(g) * 257],
        ),
        3 => flate(
            img,
            "[/CalRGB << /WhitePoint [0.9505 1 1.089] /Gamma [1.8 1.8 1.8] >>]",
            8,
            |g| tint(g, [10, 90, 30]),
        ),
        4 => flate(
            img,
            "[/Separation /Black /DeviceGray << /FunctionType 2 /Domain [0 1] /C0 [1] /C1 [0] /N 1 >>]",
            8,
            |g| vec![255 - u32::from(g)],
        ),
        5 => flate(img, "/DeviceGray", 4, |g| vec![u32::from(g >> 4)]),
        _ => flate(img, "/DeviceRGB", 16, |g| {
            tint(g, [20, 30, 110]).into_iter().map(|c| c * 257).collect()
        }),
    }
}

// CCITT fax (ITU-T T.4 and T.6) codes of white and black runs 0 to 63,
// then the make-up codes of 64 to 1728.
const WHITE: &str = "00110101 000111 0111 1000 1011 1100 1110 1111 10011 10100 00111 01000 \
    001000 000011 110100 110101 101010 101011 0100111 0001100 0001000 0010111 0000011 0000100 \
    0101000 0101011 0010011 0100100 0011000 00000010 00000011 00011010 00011011 00010010 \
    00010011 00010100 00010101 00010110 00010111 00101000 00101001 00101010 00101011 00101100 \
    00101101 00000100 00000101 00001010 00001011 01010010 01010011 01010100 01010101 00100100 \
    00100101 01011000 01011001 01011010 01011011 01001010 01001011 00110010 00110011 00110100 \
    11011 10010 010111 0110111 00110110 00110111 01100100 01100101 01101000 01100111 011001100 \
    011001101 011010010 011010011 011010100 011010101 011010110 011010111 011011000 011011001 \
    011011010 011011011 010011000 010011001 010011010 011000 010011011";
const BLACK: &str = "0000110111 010 11 10 011 0011 0010 00011 000101 000100 0000100 0000101 \
    0000111 00000100 00000111 000011000 0000010111 0000011000 0000001000 00001100111 00001101000 \
    00001101100 00000110111 00000101000 00000010111 00000011000 000011001010 000011001011 \
    000011001100 000011001101 000001101000 000001101001 000001101010 000001101011 000011010010 \
    000011010011 000011010100 000011010101 000011010110 000011010111 000001101100 000001101101 \
    000011011010 000011011011 000001010100 000001010101 000001010110 000001010111 000001100100 \
    000001100101 000001010010 000001010011 000000100100 000000110111 000000111000 000000100111 \
    000000101000 000001011000 000001011001 000000101011 000000101100 000001011010 000001100110 \
    000001100111 0000001111 000011001000 000011001001 000001011011 000000110011 000000110100 \
    000000110101 0000001101100 0000001101101 0000001001010 0000001001011 0000001001100 \
    0000001001101 0000001110010 0000001110011 0000001110100 0000001110101 0000001110110 \
    0000001110111 0000001010010 0000001010011 0000001010100 0000001010101 0000001011010 \
    0000001011011 0000001100100 0000001100101";

/// A run of `n` (under 1792) pixels, black or white.
fn run(b: &mut Bits, black: bool, n: usize) {
    let codes: Vec<&str> = if black { BLACK } else { WHITE }
        .split_whitespace()
        .collect();
    if n >= 64 {
        b.code(codes[63 + n / 64]);
    }
    b.code(codes[n % 64]);
}

/// Where a row changes colour (from white before its first pixel).
fn changes(row: &[bool]) -> Vec<usize> {
    let mut prev = false;
    let mut out = Vec::new();
    for (i, &c) in row.iter().enumerate() {
        if c != prev {
            out.push(i);
            prev = c;
        }
    }
    out
}

/// `rows` (true: black) in CCITT group 3, one-dimensional (K = 0), with
/// the closing RTC.
fn g3(rows: &[Vec<bool>]) -> Vec<u8> {
    let mut b = Bits::new();
    for row in rows {
        let mut at = 0;
        let mut black = false;
        for c in changes(row).into_iter().chain([row.len()]) {
            run(&mut b, black, c - at);
            (at, black) = (c, !black);
        }
    }
    for _ in 0..6 {
        b.code("000000000001");
    }
    b.align();
    b.out
}

/// `rows` (true: black) in CCITT group 4 (T.6), with the closing EOFB.
fn g4(rows: &[Vec<bool>]) -> Vec<u8> {
    const VERTICAL: [&str; 7] = ["0000010", "000010", "010", "1", "011", "000011", "0000011"];
    let mut b = Bits::new();
    let mut reference: Vec<usize> = Vec::new();
    for row in rows {
        let width = row.len();
        let cur = changes(row);
        let (mut a0, mut black) = (-1i64, false);
        while a0 < width as i64 {
            let a1 = cur
                .iter()
                .copied()
                .find(|&p| p as i64 > a0)
                .unwrap_or(width);
            let k =
                (0..reference.len()).find(|&k| reference[k] as i64 > a0 && (k % 2 == 0) != black);
            let b1 = k.map_or(width, |k| reference[k]);
            let b2 = k
                .and_then(|k| reference.get(k + 1).copied())
                .unwrap_or(width);
            if b2 < a1 {
                b.code("0001");
                a0 = b2 as i64;
            } else if (a1 as i64 - b1 as i64).abs() <= 3 {
                b.code(VERTICAL[(a1 as i64 - b1 as i64 + 3) as usize]);
                (a0, black) = (a1 as i64, !black);
            } else {
                let a2 = cur.iter().copied().find(|&p| p > a1).unwrap_or(width);
                b.code("001");
                run(&mut b, black, a1 - a0.max(0) as usize);
                run(&mut b, !black, a2 - a1);
                a0 = a2 as i64;
            }
        }
        reference = cur;
    }
    b.code("000000000001000000000001");
    b.align();
    b.out
}

/// `img` as CCITT fax, group 4 (`k` -1) or group 3 (`k` 0); with
/// `black_is_1` the decoded 1 bits are black and `/Decode [1 0]` shows
/// them so.
fn fax(img: &GrayImage, k: i32, black_is_1: bool) -> Pic {
    let rows: Vec<Vec<bool>> = img
        .rows()
        .map(|r| r.map(|p| p.0[0] < 160).collect())
        .collect();
    let data = if k < 0 { g4(&rows) } else { g3(&rows) };
    let decode = if black_is_1 { " /Decode [1 0]" } else { "" };
    Pic {
        w: img.width(),
        h: img.height(),
        dict: format!(
            "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode \
             /DecodeParms << /K {k} /Columns {} /Rows {} /BlackIs1 {black_is_1} >>{decode}",
            img.width(),
            img.height()
        ),
        data,
        extra: Vec::new(),
    }
}

/// Where a page keeps its picture.
#[derive(Clone, Copy)]
enum Place {
    /// In the page's own resources.
    Page,
    /// In the page tree's (the page has none).
    Inherited,
    /// In a resources dictionary the page refers to.
    Referenced,
    /// Inside this many nested form XObjects.
    Forms(usize),
}

/// What sits beside the picture in every `XObject` dictionary.
enum Sibling {
    None,
    /// A picture whose stream is not Flate, and a missing object, first.
    Broken,
    /// A logo, drawn at the page's top right.
    Logo(Pic),
}

/// A one-page PDF without text showing `pic` over the whole page, placed
/// as `place` says, painted with `paint` (a stencil mask's colour).
fn scan_pdf(pic: &Pic, place: Place, sibling: &Sibling, paint: &str) -> Vec<u8> {
    let (w, h) = (pic.w, pic.h);
    let forms = if let Place::Forms(d) = place { d } else { 0 };
    let (side, res_obj, first_extra) = (6 + forms, 7 + forms, 8 + forms);
    let entries = |target: usize| match sibling {
        Sibling::None => format!("/Im1 {target} 0 R"),
        Sibling::Broken => format!("/Bad {side} 0 R /Gone 999 0 R /Im1 {target} 0 R"),
        Sibling::Logo(_) => format!("/Logo {side} 0 R /Im1 {target} 0 R"),
    };
    let res = format!(
        "<< /XObject << {} >> >>",
        entries(if forms > 0 { 6 } else { 5 })
    );
    let (tree_res, page_res) = match place {
        Place::Inherited => (format!(" /Resources {res}"), String::new()),
        Place::Referenced => (String::new(), format!(" /Resources {res_obj} 0 R")),
        _ => (String::new(), format!(" /Resources {res}")),
    };
    let mut content = format!("q {w} 0 0 {h} 0 0 cm {paint} /Im1 Do Q\n");
    if let Sibling::Logo(_) = sibling {
        content.push_str(&format!(
            "q 240 0 0 80 {} {} cm /Logo Do Q\n",
            w - 270,
            h - 100
        ));
    }
    let image = format!(
        "/Type /XObject /Subtype /Image /Width {w} /Height {h} {}",
        pic.dict
    );
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [3 0 R] /Count 1{tree_res} >>").into_bytes(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Contents 4 0 R{page_res} >>"
        )
        .into_bytes(),
        stream("", content.as_bytes()),
        stream(&image.replace("@X", &first_extra.to_string()), &pic.data),
    ];
    for f in 0..forms {
        let inner = if f + 1 == forms { 5 } else { 7 + f };
        let dict = format!(
            "/Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << {} >> >>",
            entries(inner)
        );
        objects.push(stream(&dict, format!("{paint} /Im1 Do").as_bytes()));
    }
    objects.push(match sibling {
        Sibling::Logo(l) => stream(
            &format!(
                "/Type /XObject /Subtype /Image /Width {} /Height {} {}",
                l.w, l.h, l.dict
            ),
            &l.data,
        ),
        _ => stream(
            "/Type /XObject /Subtype /Image /Width 3000 /Height 3000 /ColorSpace /DeviceRGB \
             /BitsPerComponent 8 /Filter /FlateDecode",
            b"this is not a zlib stream at all, nor anything else",
        ),
    });
    objects.push(res.into_bytes());
    objects.extend(pic.extra.iter().cloned());
    testkit::pdf_file(&objects)
}

fn pdf_mail(from: String, i: usize, subject: &str, text: &str, pdf: Vec<u8>) -> Mail {
    Mail {
        from,
        to: to(i),
        subject: subject.into(),
        body: Body::Pdf(text.into(), pdf),
    }
}

/// An attack of seven scanned copies of `lines` (NAME a copy's own), each
/// made into a PDF by `pdf_of(copy, scan)`.
fn scanned_campaign(
    name: &str,
    lines: &[&str],
    sender: &str,
    pdf_of: impl Fn(usize, &GrayImage) -> Vec<u8>,
) {
    let mut msgs = vec![msg("other", 1, &bystander())];
    for i in 0..7 {
        let img = scan_of(&lure(lines, &capital(PEOPLE[i + 1])), i);
        let from = format!("Notices <notice@{sender}{i}.example>");
        let m = pdf_mail(
            from,
            i + 1,
            "Important notice",
            "Please read the attached notice.",
            pdf_of(i, &img),
        );
        msgs.push(msg("lure", i + 2, &m));
    }
    let fed = replay(msgs);
    expect_campaign(name, &fed, "lure");
    expect_reads(name, &fed, "lure", &[lines[2], lines[4]]);
}

/// P attack 1: 1-bit Flate, half inverted, resources in three places.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_attack_one_bit_flate_decode_inverted() {
    let places = [Place::Page, Place::Inherited, Place::Referenced];
    scanned_campaign("P attack 1", &PASSWORD, "mail-admin", |i, img| {
        scan_pdf(&gray1(img, i % 2 == 1), places[i % 3], &Sibling::None, "")
    });
}

/// P attack 2: CCITT group 4 and group 3, BlackIs1 true and false.
#[test]
#[ignore = "known gap (issue 65): CCITT group 3 without EOL markers (the PDF default) is not decoded by the fax crate"]
fn scan_attack_ccitt_fax() {
    let modes = [(-1, false), (0, false), (-1, true), (0, true)];
    scanned_campaign("P attack 2", &PARCEL, "courier", |i, img| {
        let (k, b) = modes[i % 4];
        scan_pdf(&fax(img, k, b), Place::Inherited, &Sibling::None, "")
    });
}

/// P attack 3: indexed colour (2, 4, 8 bits) in one or two forms.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_attack_indexed_in_forms() {
    let inks = [[0, 0, 0], [120, 0, 0], [0, 40, 110], [30, 30, 30]];
    scanned_campaign("P attack 3", &INVOICE, "billing", |i, img| {
        let pic = indexed(img, [2, 4, 8][i % 3], inks[i % 4]);
        scan_pdf(&pic, Place::Forms(1 + i % 2), &Sibling::None, "")
    });
}

/// P attack 4: a colour encoding a copy.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_attack_colour_encodings() {
    scanned_campaign("P attack 4", &CRYPTO, "wealth", |i, img| {
        scan_pdf(&colour_pic(img, i), Place::Page, &Sibling::None, "")
    });
}

/// P attack 5: a stencil mask two forms deep beside broken siblings.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_attack_stencil_in_forms_with_broken_siblings() {
    scanned_campaign("P attack 5", &PRIZE, "survey", |i, img| {
        let paint = ["0 0 0 rg", "0.1 0.1 0.45 rg", "0.4 0 0 rg"][i % 3];
        scan_pdf(
            &stencil(img, i % 2 == 0),
            Place::Forms(2),
            &Sibling::Broken,
            paint,
        )
    });
}

/// Five scans of the ham texts (`head` above each), each made into a PDF
/// by `pdf_of`, sent by `from(i)`; apart, and each reads its own text.
fn scanned_hams(
    name: &str,
    head: &[&str],
    from: impl Fn(usize) -> String,
    pdf_of: impl Fn(usize, &GrayImage) -> Vec<u8>,
) {
    let mut msgs = Vec::new();
    for (i, ham) in HAMS.iter().enumerate() {
        let lines: Vec<String> = head
            .iter()
            .chain(ham.iter())
            .map(|l| l.to_string())
            .collect();
        let img = scan_of(&lines, i);
        let m = pdf_mail(
            from(i),
            i + 3,
            "Scanned document",
            "Scanned by the office printer.",
            pdf_of(i, &img),
        );
        msgs.push(msg(
            ["garden", "choir", "books", "bikes", "bakery"][i],
            i + 1,
            &m,
        ));
    }
    let fed = replay(msgs);
    expect_apart(name, &fed);
    for (i, f) in fed.iter().enumerate() {
        expect_reads(
            name,
            std::slice::from_ref(f),
            f.group,
            &[HAMS[i][1], HAMS[i][3]],
        );
    }
}

/// P ordinary 1: one office scanner (same sender), CCITT group 4.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_ordinary_one_scanner_ccitt_apart() {
    scanned_hams(
        "P ordinary 1",
        &[],
        |_| "Office Scanner <scanner@office.example>".into(),
        |_, img| scan_pdf(&fax(img, -1, false), Place::Inherited, &Sibling::None, ""),
    );
}

/// P ordinary 2: one letterhead template, 1-bit Flate.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_ordinary_one_letterhead_apart() {
    scanned_hams(
        "P ordinary 2",
        &[
            "RIVERSIDE COMMUNITY TRUST",
            "14 Mill Lane, Riverside, tel 0161 555 0102",
        ],
        |i| format!("Volunteer {i} <volunteer{i}@riverside-trust.example>"),
        |_, img| scan_pdf(&gray1(img, false), Place::Page, &Sibling::None, ""),
    );
}

/// P ordinary 3: colour notices, an encoding each.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_ordinary_colour_notices_apart() {
    scanned_hams(
        "P ordinary 3",
        &["Notice board"],
        |i| format!("Club {i} <secretary@club{i}.example>"),
        |i, img| scan_pdf(&colour_pic(img, i), Place::Referenced, &Sibling::None, ""),
    );
}

/// P ordinary 4: the same logo XObject beside different scans.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_ordinary_shared_logo_apart() {
    let logo_img = draw(&["RIVERSIDE".to_owned()], 40.0, 10.0, 14.0, (240, 80));
    scanned_hams(
        "P ordinary 4",
        &[],
        |i| format!("Staff {i} <staff{i}@riverside-trust.example>"),
        |i, img| {
            let logo = flate(&logo_img, "/DeviceGray", 8, |g| vec![u32::from(g)]);
            scan_pdf(
                &fax(img, -1, false),
                [Place::Page, Place::Forms(1)][i % 2],
                &Sibling::Logo(logo),
                "",
            )
        },
    );
}

/// A picture without text: bars and discs of grey from `seed`.
fn shapes(seed: u64) -> GrayImage {
    let mut rng = Rng::new(seed);
    let (w, h) = PAGE;
    let mut img = GrayImage::from_pixel(w, h, Luma([250]));
    for _ in 0..12 {
        let (cx, cy, r) = (
            rng.below(w as usize) as i64,
            rng.below(h as usize) as i64,
            rng.range(20, 140) as i64,
        );
        let (level, disc) = (rng.below(200) as u8, rng.chance(0.5));
        for y in (cy - r).max(0)..(cy + r).min(i64::from(h)) {
            for x in (cx - r).max(0)..(cx + r).min(i64::from(w)) {
                if !disc || (x - cx).pow(2) + (y - cy).pow(2) < r * r {
                    img.put_pixel(x as u32, y as u32, Luma([level]));
                }
            }
        }
    }
    img
}

/// P ordinary 5: pictures without text, 16-bit RGB and Separation.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn scan_ordinary_pictures_without_text_apart() {
    let mut msgs = Vec::new();
    for i in 0..5 {
        let pic = colour_pic(&shapes(900 + i as u64), [6, 4][i % 2]);
        let pdf = scan_pdf(&pic, Place::Inherited, &Sibling::None, "");
        let from = format!("Traveller {i} <traveller{i}@photos{i}.example>");
        let m = pdf_mail(
            from,
            i + 2,
            "Photos from the trip",
            "Here are the pictures.",
            pdf,
        );
        msgs.push(msg(["p0", "p1", "p2", "p3", "p4"][i], i + 1, &m));
    }
    let fed = replay(msgs);
    expect_apart("P ordinary 5", &fed);
    for f in &fed {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P ordinary 5: #{} no picture\n{}",
            f.rec.n,
            explain("P ordinary 5", &fed)
        );
    }
}

/// F ordinary 6 (added after probing, see the results above): five
/// newsletters whose one-word heading is set in an honest embedded display
/// font, the words alike in length and shape; each reads as written.
// Fails: a product fault (the OCR memo; see the module doc).
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
fn font_ordinary_short_headings_read_as_their_own() {
    const HEADS: [&str; 5] = ["Prize", "Prime", "Pride", "Price", "Probe"];
    let display = face("Display", &dejavu("DejaVuSerif-Bold"), Flavour::Ttf);
    let msgs = five_hams(1100, |i, lines| {
        let body = format!("<h1 class=\"d\">{}</h1>\n{}", HEADS[i], paras(lines));
        page(&format!("{display}\n.d {{ font-family: Display }}"), &body)
    });
    let plain = five_hams(1100, |i, lines| {
        page("", &format!("<h1>{}</h1>\n{}", HEADS[i], paras(lines)))
    });
    let fed = replay(msgs);
    expect_apart("F ordinary 6", &fed);
    expect_same_as_plain("F ordinary 6", &fed, &plain);
}
