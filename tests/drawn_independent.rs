//! Independent cases for reading what a person sees (issue 65): SVG text
//! read where it is drawn (class S) and pictures inside documents read
//! through the one picture path (class P), written from the classes'
//! descriptions alone, without the authors' tests or the reader's code.
//!
//! Class S, attack cases (campaigns that must turn bulk, all 7 copies one
//! campaign, the drawn text read in the order a viewer shows it):
//!
//! 1. a mailbox-quota lure, one `<text>` a line at an absolute y, the
//!    lines in another shuffled source order in every copy;
//! 2. a billing lure drawn with a different technique in every copy:
//!    absolute y, `dy` tspans, words placed one by one with x, nested
//!    translated groups, matrix transforms, a `<foreignObject>`, a mix;
//! 3. a prize lure whose every word is placed by x, the words of each line
//!    and the lines in shuffled source order (tspans or one `<text>` a
//!    word);
//! 4. a bank lure in nested translated groups and matrix/translate
//!    transforms, shuffled, each copy with its own decoy text (about 150
//!    random words) hidden by display=none, visibility=hidden, opacity 0,
//!    hidden ancestor groups, `<desc>`, `<metadata>` and bare character
//!    data outside `<text>`: the decoys must not be read;
//! 5. a parcel lure opening "Dear <recipient>", the name varying, `dy`
//!    tspans and shuffled nested groups alternating.
//!
//! Class S, ordinary cases (must stay clean and apart):
//!
//! 1. five companies' SVG logos under their own messages;
//! 2. five different bar charts with labels, the same subject and body;
//! 3. five different ~100-word notices drawn with the same template and
//!    the same technique (shuffled absolute y), the same subject and body;
//! 4. five diagrams (flow chart, org chart, network, timeline, floor plan)
//!    from different senders;
//! 5. five SVGs exported from one tool with an identical hidden template
//!    layer (~100 words) and identical `<desc>`, different visible text:
//!    the hidden layer must not be read nor link them.
//!
//! Class P, attack cases:
//!
//! 1. (no OCR) the same scanned lure page in a PDF (one DCTDecode grey
//!    picture), re-encoded per copy at JPEG quality 92 to 50 with its own
//!    scanner noise: compared by perceptual hash;
//! 2. (no OCR) a Word document whose only content is a picture in
//!    `word/media/` (a "protected document" preview), per-copy noise;
//! 3. (no OCR) a `.txt` file inside a zip, a ~100-word tax-refund lure
//!    with per-copy name, amount, reference and entry name;
//! 4. (OCR) a lure drawn with ab_glyph and DejaVu Sans into an RGB picture,
//!    in a PDF as FlateDecode samples, each copy drawn at another size and
//!    place with its own name and reference;
//! 5. (no OCR) a flyer picture (JPEG) inside a zip archive, re-encoded per
//!    copy with its own noise.
//!
//! Class P, ordinary cases:
//!
//! 1. five different scanned documents (letter, form, table as DCTDecode;
//!    receipt, floor plan as FlateDecode grey) from five offices' scanners,
//!    the same subject and body: apart;
//! 2. three invoice PDFs with a real text layer from different vendors:
//!    read by their text, apart;
//! 3. five Word documents carrying the same letterhead logo in
//!    `word/media/` with different text (short and long): apart;
//! 4. zip archives of different photos, and of different text notes, from
//!    different people: apart;
//! 5. four PowerPoint decks with different chart pictures in `ppt/media/`,
//!    the same subject and body: apart.
//!
//! Each case replays raw RFC 5322 messages (CRLF) through the public
//! replay API with `common::config()` (suspect at 3, bulk at 5), one
//! recipient a copy.
//!
//! Results. As first written, 15 of the 20 passed (the OCR case ran:
//! Tesseract and DejaVu Sans are installed here) and 5 failed; two of the
//! failures were the cases' own mistakes, mended:
//!
//! - S ordinary 1 checked that a logo's text was read under a body of 27
//!   words; attachments are read only under a short body (fewer than 24
//!   words, docs/admin/evasion.md), so that body is now a short one;
//! - S ordinary 2 wanted every chart clean; one was `Skipped(TooShort)`,
//!   which marks nothing, and the ordinary check now takes it as clean.
//!
//! Words placed one by one were first placed at 8 px a character and a
//! 5 px space, a rough width; they are now placed at Helvetica's (Arial's)
//! own advances and one space between words, where a viewer or an
//! exporter puts them. So written, 16 pass and 4 fail, all, we believe,
//! the product's:
//!
//! - S attack 3 (words placed by x): the campaign forms, but the text is
//!   not read as shown: a word whose letters are narrow ("billing",
//!   "email", "selected", "this", "with") is glued to the next one
//!   ("emaiiaddress", "seiectedas", "witha"), and a run glued past the
//!   longest token ("billing"+"information"+"through") is dropped. The
//!   reader seems to guess a word's width from its number of characters:
//!   "mmmm iiii wwww" at true advances reads "mmmm iiiiwwww", and "your
//!   billing information" needs 3 px more than a space to read apart;
//! - S attack 2 (a technique a copy): for the same reason the copy whose
//!   words are placed by x reads 72 features against the others' 91 and
//!   falls into a campaign of its own (the other six are one campaign);
//! - P attacks 2 (a picture in `word/media/` of a .docx) and 5 (a JPEG in
//!   a zip): the pictures are read (their perceptual hashes equal or one
//!   bit apart), but each copy is a campaign of its own and stays clean.
//!   The container's own SHA-256 stays among the message's exact anchors
//!   beside the picture's, and so in the mask of the picture simhash: the
//!   re-encoded picture changes the container's bytes, so every copy's
//!   simhash is about 32 bits from the others'. A scanned PDF (P attack 1)
//!   is anchored by its picture alone and passes.
//!
//! Mended (all 20 pass): a run's end is measured by the standard metrics
//! of the face its `font-family` names (Helvetica's, Times-Roman's or a
//! fixed pitch) and a gap of an eighth of the font size is a space; a
//! document that gave pictures stands for itself as one that gave text
//! does, without the container's own hash beside them.

mod common;

use std::io::Write;

use bulkwatch::engine::verdict::Level;
use common::{config, replay, Fed, Msg};
use image::{GrayImage, ImageEncoder, Luma, Rgb, RgbImage};
use testkit::documents::{xml_escape, zip};
use testkit::Rng;

// ---------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------

/// An attachment: file name, content type and bytes.
struct Attachment {
    name: String,
    ctype: &'static str,
    bytes: Vec<u8>,
}

/// One message as a sender writes it: a plain-text body and at most one
/// attachment.
struct Mail {
    from: String,
    to: String,
    subject: String,
    body: String,
    attachment: Option<Attachment>,
}

const SVG: &str = "image/svg+xml";
const PDF: &str = "application/pdf";
const ZIP: &str = "application/zip";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const PPTX: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";

fn attach(name: &str, ctype: &'static str, bytes: Vec<u8>) -> Option<Attachment> {
    Some(Attachment {
        name: name.into(),
        ctype,
        bytes,
    })
}

impl Mail {
    /// The raw message (CRLF line ends), `n` making its Message-ID.
    fn raw(&self, n: usize) -> Vec<u8> {
        let boundary = format!("=_drawn_{n}_boundary");
        let sender = self
            .from
            .rsplit('<')
            .next()
            .unwrap_or(&self.from)
            .trim_end_matches('>')
            .to_owned();
        let domain = sender
            .rsplit('@')
            .next()
            .unwrap_or("example.org")
            .to_owned();
        let mut s = String::new();
        s.push_str(&format!("Return-Path: <{sender}>\r\n"));
        s.push_str(&format!("From: {}\r\n", self.from));
        s.push_str(&format!("To: {}\r\n", self.to));
        s.push_str(&format!("Subject: {}\r\n", self.subject));
        s.push_str(&format!(
            "Date: Wed, 13 Mar 2024 09:{:02}:{:02} +0100\r\n",
            n / 60 % 60,
            n % 60
        ));
        s.push_str(&format!(
            "Message-ID: <drawn.{n}.{}@{domain}>\r\n",
            n * 7907
        ));
        s.push_str("MIME-Version: 1.0\r\n");
        let text = self.body.replace("\r\n", "\n").replace('\n', "\r\n");
        match &self.attachment {
            None => {
                s.push_str("Content-Type: text/plain; charset=utf-8\r\n");
                s.push_str("Content-Transfer-Encoding: 8bit\r\n\r\n");
                s.push_str(&text);
                s.push_str("\r\n");
            }
            Some(a) => {
                s.push_str(&format!(
                    "Content-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n"
                ));
                s.push_str("This is a multi-part message in MIME format.\r\n");
                s.push_str(&format!("--{boundary}\r\n"));
                s.push_str("Content-Type: text/plain; charset=utf-8\r\n");
                s.push_str("Content-Transfer-Encoding: 8bit\r\n\r\n");
                s.push_str(&text);
                s.push_str("\r\n");
                s.push_str(&format!("--{boundary}\r\n"));
                s.push_str(&format!(
                    "Content-Type: {}; name=\"{}\"\r\n",
                    a.ctype, a.name
                ));
                s.push_str(&format!(
                    "Content-Disposition: attachment; filename=\"{}\"\r\n",
                    a.name
                ));
                s.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
                s.push_str(&testkit::base64_lines(&a.bytes).replace('\n', "\r\n"));
                s.push_str(&format!("--{boundary}--\r\n"));
            }
        }
        s.into_bytes()
    }
}

fn msg(group: &'static str, n: usize, m: &Mail) -> Msg {
    Msg {
        group,
        raw: m.raw(n),
    }
}

/// Pictures' text is read here as the replayer reads it (OCR where
/// Tesseract is installed).
fn provide_ocr() {
    static OCR: std::sync::Once = std::sync::Once::new();
    OCR.call_once(|| bulkwatch::worker::provide_ocr_here(&config()));
}

/// The reading of `raw` (the test config).
fn reading_of(raw: &[u8]) -> bulkwatch::engine::Reading {
    provide_ocr();
    let cfg = config();
    let rc = bulkwatch::engine::read_config(&cfg);
    let reading = bulkwatch::engine::read(raw, &[], &rc);
    assert!(reading.parsed, "message not parsed");
    reading
}

/// The normalized text the reader makes of `raw`.
fn text_of(raw: &[u8]) -> String {
    reading_of(raw).normalized.text
}

/// What was read of each message and how it was judged, for a failure.
fn explain(name: &str, fed: &[Fed]) -> String {
    let mut s = format!("case {name}:\n");
    for (i, f) in fed.iter().enumerate() {
        let reading = reading_of(&f.raw);
        let text: String = reading.normalized.text.chars().take(240).collect();
        let pictures: Vec<String> = reading
            .pictures
            .iter()
            .map(|p| format!("{p:016x}"))
            .collect();
        s.push_str(&format!(
            "  #{:<2} {:<8} campaign={:?} level={:?} score={} exact={} dist={:?} feat={} \
             simhash={:?} nearest={:?} near_campaign={:?}/{:?}\n      attachments={} \
             pictures={:?} partial={} text={:?}\n",
            i + 1,
            f.group,
            f.rec.campaign.map(|c| c.0),
            f.rec.level,
            f.rec.score,
            f.rec.exact,
            f.rec.distance,
            f.rec.features,
            f.rec.simhash.map(|h| format!("{h:016x}")),
            f.rec.nearest,
            f.rec.near_campaign.map(|c| c.0),
            f.rec.near_distance,
            reading.attachments.len(),
            pictures,
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
                "{group}: copy #{} is {:?}, not bulk",
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

/// Ordinary mail: every message clean (or skipped as too short to judge,
/// which marks nothing), with a campaign of its own (or none), shared
/// with no other message of the test.
fn expect_apart(name: &str, fed: &[Fed]) {
    let mut problems = Vec::new();
    for (i, f) in fed.iter().enumerate() {
        if !matches!(f.rec.level, Level::Clean | Level::Skipped(_)) {
            problems.push(format!("#{} ({}) is {:?}", i + 1, f.group, f.rec.level));
        }
        if let Some(c) = f.rec.campaign {
            for (j, g) in fed.iter().enumerate() {
                if j != i && g.rec.campaign == Some(c) {
                    problems.push(format!(
                        "#{} ({}) shares a campaign with #{} ({})",
                        i + 1,
                        f.group,
                        j + 1,
                        g.group
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        explain(name, fed)
    );
}

/// `phrase` as the reader normalizes text (case, look-alike letters).
fn normalized(phrase: &str) -> String {
    let m = Mail {
        from: "Probe <probe@probe.example>".into(),
        to: to(0),
        subject: "probe".into(),
        body: phrase.into(),
        attachment: None,
    };
    text_of(&m.raw(0))
}

/// Each copy of `group` reads `phrases`, in this order (the order a
/// viewer shows them).
fn expect_read_in_order(name: &str, fed: &[Fed], group: &str, phrases: &[&str]) {
    let wanted: Vec<String> = phrases.iter().map(|p| normalized(p)).collect();
    for f in fed.iter().filter(|f| f.group == group) {
        let text = text_of(&f.raw);
        let mut at = 0;
        for p in &wanted {
            match text[at..].find(p.as_str()) {
                Some(k) => at += k + p.len(),
                None => panic!(
                    "case {name}: #{} ({group}) lacks {p:?} (in order, after byte {at}); \
                     text: {text:?}",
                    f.rec.n
                ),
            }
        }
    }
}

/// No copy of `group` reads any of `words` (hidden or undrawn text).
fn expect_unread(name: &str, fed: &[Fed], group: &str, words: &[String]) {
    for f in fed.iter().filter(|f| f.group == group) {
        let text = text_of(&f.raw);
        let padded = format!(" {text} ");
        for w in words {
            let w = normalized(w);
            assert!(
                !padded.contains(&format!(" {w} ")),
                "case {name}: #{} ({group}) read the hidden {w:?}; text: {text:?}",
                f.rec.n
            );
        }
    }
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
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// An unrelated ordinary message, to sit beside a campaign.
fn bystander() -> Mail {
    Mail {
        from: "Nora Field <nora@gardenclub.example>".into(),
        to: "Peter <peter@example.net>".into(),
        subject: "Allotment meeting on Saturday".into(),
        body: "Hi Peter,\n\nthe allotment committee meets on Saturday at ten in the shed behind \
               the greenhouse. We will talk about the new water butts, the compost rota for \
               the summer and whether to buy a second wheelbarrow. Bring your seed list if \
               you want to join the bulk order of beans and squash.\n\nSee you there,\nNora\n"
            .into(),
        attachment: None,
    }
}

/// A four-word run of plain words from each line (in the lines' order),
/// to check the order the text is read in.
fn key_phrases(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines {
        let words: Vec<&str> = l.split_whitespace().collect();
        let plain = |w: &&str| w.chars().all(|c| c.is_ascii_alphabetic());
        if let Some(run) = words.windows(4).skip(1).find(|ws| ws.iter().all(plain)) {
            out.push(run.join(" "));
        }
    }
    out
}

fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
    v
}

// ---------------------------------------------------------------------
// SVG drawing
// ---------------------------------------------------------------------

const X0: i32 = 24;
const Y0: i32 = 40;
const LH: i32 = 20;
/// The font size of drawn lines, px.
const SIZE: f64 = 14.0;

/// A character's advance in Helvetica (Arial has the same widths), in
/// thousandths of the font size: the AFM widths, as an exporter placing
/// words one by one computes them.
fn helvetica(c: char) -> u32 {
    match c {
        'f' | 't' | 'I' | ' ' | ',' | '.' | '!' | ':' | ';' => 278,
        'i' | 'j' | 'l' | '\'' => 222,
        'r' | '-' | '(' | ')' => 333,
        'c' | 'k' | 's' | 'v' | 'x' | 'y' | 'z' | 'J' => 500,
        'm' | 'M' => 833,
        'w' => 722,
        'A' | 'B' | 'E' | 'K' | 'P' | 'S' | 'V' | 'X' | 'Y' => 667,
        'C' | 'D' | 'H' | 'N' | 'R' | 'U' => 722,
        'F' | 'T' | 'Z' => 611,
        'G' | 'O' | 'Q' => 778,
        'L' => 556,
        'W' => 944,
        _ => 556,
    }
}

/// The advance of `s` at [`SIZE`], px.
fn advance(s: &str) -> f64 {
    s.chars().map(helvetica).sum::<u32>() as f64 * SIZE / 1000.0
}
const FONT: &str = "font-family=\"Arial, Helvetica, sans-serif\" font-size=\"14\" fill=\"#1a1a1a\"";

fn svg_file(width: i32, height: i32, inner: &str) -> Vec<u8> {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{inner}</svg>\n"
    )
    .into_bytes()
}

/// How a copy places its lines.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// One `<text>` a line at an absolute x and y, shuffled.
    Absolute,
    /// One `<text>`, a `<tspan>` a line moved down by `dy`.
    DyTspans,
    /// A `<text>` a line, a `<tspan x>` a word, words and lines shuffled.
    WordTspans,
    /// A `<text x y>` a word, all words shuffled.
    WordTexts,
    /// Lines in nested groups translated into place, shuffled.
    Nested,
    /// Lines placed by matrix() and translate() on the text or a group,
    /// shuffled.
    Matrix,
    /// One `<foreignObject>` holding an XHTML paragraph a line.
    Foreign,
    /// Absolute, nested and matrix lines mixed, shuffled.
    Mixed,
}

fn y_of(i: usize) -> i32 {
    Y0 + LH * i as i32
}

fn absolute_line(i: usize, line: &str) -> String {
    format!(
        "<text x=\"{X0}\" y=\"{}\" {FONT}>{}</text>\n",
        y_of(i),
        xml_escape(line)
    )
}

fn nested_line(i: usize, line: &str) -> String {
    // The outer group (translate(12,30)) is written by the caller.
    let l = xml_escape(line);
    let dy = LH * i as i32;
    if i.is_multiple_of(2) {
        format!("<g transform=\"translate(12 {dy})\"><text y=\"10\" {FONT}>{l}</text></g>\n")
    } else {
        format!(
            "<g transform=\"translate(2,{})\"><g transform=\"translate(10 5)\">\
             <text x=\"0\" y=\"10\" {FONT}>{l}</text></g></g>\n",
            dy - 5
        )
    }
}

fn matrix_line(i: usize, line: &str) -> String {
    let l = xml_escape(line);
    let y = y_of(i);
    match i % 3 {
        0 => format!("<text transform=\"matrix(1 0 0 1 {X0} {y})\" {FONT}>{l}</text>\n"),
        1 => format!(
            "<g transform=\"matrix(1,0,0,1,4,{})\"><text x=\"20\" y=\"10\" {FONT}>{l}</text></g>\n",
            y - 10
        ),
        _ => format!("<text x=\"4\" transform=\"translate(20,{y})\" {FONT}>{l}</text>\n"),
    }
}

/// The x of each word of `line` drawn from `X0`, one Helvetica space
/// between words, as the line drawn whole puts them.
fn word_xs(line: &str) -> Vec<(String, &str)> {
    let mut x = f64::from(X0);
    line.split_whitespace()
        .map(|w| {
            let at = format!("{x:.2}");
            x += advance(w) + advance(" ");
            (at, w)
        })
        .collect()
}

/// The markup drawing `lines` as `layout` places them, `seed` choosing the
/// source order.
fn draw(lines: &[String], layout: Layout, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let order = shuffled(lines.len(), &mut rng);
    let mut s = String::new();
    match layout {
        Layout::Absolute => {
            for &i in &order {
                s.push_str(&absolute_line(i, &lines[i]));
            }
        }
        Layout::DyTspans => {
            s.push_str(&format!("<text x=\"{X0}\" y=\"{Y0}\" {FONT}>"));
            for (i, l) in lines.iter().enumerate() {
                let dy = if i == 0 { 0 } else { LH };
                s.push_str(&format!(
                    "<tspan x=\"{X0}\" dy=\"{dy}\">{}</tspan>",
                    xml_escape(l)
                ));
            }
            s.push_str("</text>\n");
        }
        Layout::WordTspans => {
            for &i in &order {
                let words = word_xs(&lines[i]);
                let perm = shuffled(words.len(), &mut rng);
                s.push_str(&format!("<text y=\"{}\" {FONT}>", y_of(i)));
                for k in perm {
                    let (x, w) = &words[k];
                    s.push_str(&format!("<tspan x=\"{x}\">{}</tspan>", xml_escape(w)));
                }
                s.push_str("</text>\n");
            }
        }
        Layout::WordTexts => {
            let mut all = Vec::new();
            for (i, l) in lines.iter().enumerate() {
                for (x, w) in word_xs(l) {
                    all.push((x, y_of(i), w));
                }
            }
            for k in shuffled(all.len(), &mut rng) {
                let (x, y, w) = &all[k];
                s.push_str(&format!(
                    "<text x=\"{x}\" y=\"{y}\" {FONT}>{}</text>\n",
                    xml_escape(w)
                ));
            }
        }
        Layout::Nested => {
            s.push_str("<g transform=\"translate(12,30)\">\n");
            for &i in &order {
                s.push_str(&nested_line(i, &lines[i]));
            }
            s.push_str("</g>\n");
        }
        Layout::Matrix => {
            for &i in &order {
                s.push_str(&matrix_line(i, &lines[i]));
            }
        }
        Layout::Foreign => {
            s.push_str(&format!(
                "<foreignObject x=\"20\" y=\"24\" width=\"720\" height=\"{}\">\
                 <div xmlns=\"http://www.w3.org/1999/xhtml\" style=\"font: 14px Arial\">",
                LH * lines.len() as i32 + 20
            ));
            for l in lines {
                s.push_str(&format!("<p style=\"margin:0\">{}</p>", xml_escape(l)));
            }
            s.push_str("</div></foreignObject>\n");
        }
        Layout::Mixed => {
            for &i in &order {
                match i % 3 {
                    0 => s.push_str(&absolute_line(i, &lines[i])),
                    1 => s.push_str(&format!(
                        "<g transform=\"translate(12,30)\">{}</g>\n",
                        nested_line(i, &lines[i]).trim_end()
                    )),
                    _ => s.push_str(&matrix_line(i, &lines[i])),
                }
            }
        }
    }
    s
}

fn svg_of(lines: &[String], layout: Layout, seed: u64, extra: &str) -> Vec<u8> {
    let h = Y0 + LH * lines.len() as i32 + 40;
    let mut inner = draw(lines, layout, seed);
    inner.push_str(extra);
    svg_file(760, h, &inner)
}

fn owned(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| (*l).to_owned()).collect()
}

const VOCAB: [&str; 64] = [
    "harbor", "velvet", "quartz", "meadow", "lantern", "pickle", "orbit", "saffron", "tundra",
    "walnut", "zephyr", "cobalt", "falcon", "glacier", "hazel", "juniper", "kettle", "lagoon",
    "marble", "nectar", "oyster", "pepper", "quiver", "raven", "sorrel", "thistle", "umber",
    "violet", "willow", "yarrow", "bramble", "cinder", "dapple", "ember", "fennel", "garnet",
    "hollow", "indigo", "jasper", "kelp", "lichen", "mango", "nutmeg", "opal", "parsley", "quince",
    "russet", "sable", "tamarind", "urchin", "vesper", "wombat", "yonder", "zinnia", "anchor",
    "biscuit", "cactus", "dolphin", "easel", "fjord", "goblet", "hammock", "iguana", "jigsaw",
];

fn random_words(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n).map(|_| (*rng.pick(&VOCAB)).to_owned()).collect()
}

/// Per-copy decoy text that a viewer does not show: hidden elements,
/// hidden groups, description, metadata and character data outside
/// `<text>`, at the y of the visible lines. Returns the markup and the
/// decoy words.
fn decoys(seed: u64, lines: usize) -> (String, Vec<String>) {
    let mut rng = Rng::new(seed);
    let mut words = Vec::new();
    let mut s = String::new();
    let mut take = |rng: &mut Rng, n: usize| {
        let w = random_words(rng, n);
        let t = w.join(" ");
        words.extend(w);
        t
    };
    let y = |k: usize| y_of(k % lines.max(1));
    s.push_str(&format!(
        "<desc>{}</desc>\n<metadata>{}</metadata>\n",
        take(&mut rng, 15),
        take(&mut rng, 15)
    ));
    s.push_str(&format!(
        "<text x=\"{X0}\" y=\"{}\" display=\"none\" {FONT}>{}</text>\n",
        y(1),
        take(&mut rng, 20)
    ));
    s.push_str(&format!(
        "<text x=\"{X0}\" y=\"{}\" visibility=\"hidden\" {FONT}>{}</text>\n",
        y(3),
        take(&mut rng, 20)
    ));
    s.push_str(&format!(
        "<text x=\"{X0}\" y=\"{}\" opacity=\"0\" {FONT}>{}</text>\n",
        y(5),
        take(&mut rng, 20)
    ));
    s.push_str(&format!(
        "<g display=\"none\"><text x=\"{X0}\" y=\"{}\" {FONT}>{}</text></g>\n",
        y(2),
        take(&mut rng, 20)
    ));
    s.push_str(&format!(
        "<g opacity=\"0\"><text x=\"{X0}\" y=\"{}\" {FONT}>{}</text></g>\n",
        y(6),
        take(&mut rng, 20)
    ));
    s.push_str(&format!(
        "<g transform=\"translate(0,0)\">{}<rect x=\"0\" y=\"0\" width=\"4\" height=\"4\" \
         fill=\"#ffffff\"/></g>\n",
        take(&mut rng, 20)
    ));
    (s, words)
}

// ---------------------------------------------------------------------
// Class S: attack cases
// ---------------------------------------------------------------------

const MAILBOX: [&str; 9] = [
    "Mailbox storage warning for your email account",
    "Your mailbox has reached ninety eight percent of its storage limit and",
    "incoming messages are now being held on our server until you act.",
    "To release the held messages and avoid the suspension of your account,",
    "sign in to the storage portal and confirm your current password today.",
    "Accounts that are not confirmed within twenty four hours will be closed",
    "and every message stored in them will be permanently deleted.",
    "The upgrade of your storage plan is free of charge for existing users.",
    "Thank you for your cooperation, the email administration team.",
];

/// S attack 1: shuffled line order, absolute y.
#[test]
fn svg_attack_shuffled_lines_absolute_y() {
    let lines = owned(&MAILBOX);
    let mut msgs = vec![msg("other", 100, &bystander())];
    for i in 0..7 {
        let m = Mail {
            from: format!("Mail Admin <admin@mailhost{i}.example>"),
            to: to(i),
            subject: format!("Storage warning {}", 310 + i * 7),
            body: "Please read the attached notice from your mail administrator.".into(),
            attachment: attach(
                "storage_notice.svg",
                SVG,
                svg_of(&lines, Layout::Absolute, 11 + i as u64, ""),
            ),
        };
        msgs.push(msg("mailbox", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("S attack 1", &fed, "mailbox");
    let keys = key_phrases(&MAILBOX);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    expect_read_in_order("S attack 1", &fed, "mailbox", &keys);
}

const BILLING: [&str; 9] = [
    "Payment confirmation required for your subscription",
    "We were unable to process the automatic payment for your subscription",
    "because the card details on file have expired or were declined by the bank.",
    "Your streaming service will be interrupted at the end of the billing cycle",
    "unless you update your billing information through the secure link below.",
    "Updating takes less than two minutes and no additional fees will be charged.",
    "If you have already updated your payment method, please ignore this notice.",
    "Customer support is available around the clock for any further questions.",
    "Kind regards, the billing department of your streaming service.",
];

/// S attack 2: each copy another placement technique.
#[test]
fn svg_attack_technique_per_copy() {
    let lines = owned(&BILLING);
    let layouts = [
        Layout::Absolute,
        Layout::DyTspans,
        Layout::WordTspans,
        Layout::Nested,
        Layout::Matrix,
        Layout::Foreign,
        Layout::Mixed,
    ];
    let mut msgs = vec![msg("other", 200, &bystander())];
    for (i, layout) in layouts.iter().enumerate() {
        let m = Mail {
            from: format!("Billing <billing@stream-pay{i}.example>"),
            to: to(i + 2),
            subject: format!("Payment declined - action {}", 40 + i),
            body: "Your billing notice is attached.".into(),
            attachment: attach(
                &format!("billing_{}.svg", 880 + i),
                SVG,
                svg_of(&lines, *layout, 21 + i as u64, ""),
            ),
        };
        msgs.push(msg("billing", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("S attack 2", &fed, "billing");
    let keys = key_phrases(&BILLING);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    expect_read_in_order("S attack 2", &fed, "billing", &keys);
}

const PRIZE: [&str; 8] = [
    "Congratulations, you have been selected as this month's lucky winner!",
    "Your email address was drawn in our annual customer loyalty raffle and",
    "you are entitled to receive a brand new smartphone with a premium case.",
    "To claim your reward you only need to cover the small shipping charge",
    "and confirm the delivery address where the parcel should be sent to.",
    "The offer remains valid for three days, after which the prize passes",
    "to the next participant on the reserve list chosen by our jury.",
    "Claim your gift now and enjoy the newest model before anyone else.",
];

/// S attack 3: every word placed by x, words and lines shuffled.
#[test]
fn svg_attack_words_placed_by_x() {
    let lines = owned(&PRIZE);
    let mut msgs = vec![msg("other", 300, &bystander())];
    for i in 0..7usize {
        let layout = if i.is_multiple_of(2) {
            Layout::WordTspans
        } else {
            Layout::WordTexts
        };
        let m = Mail {
            from: format!("Rewards <win@loyalty-club{i}.example>"),
            to: to(i + 4),
            subject: format!("You won! Ticket {}", 7000 + i * 13),
            body: "Open the attached certificate to claim your prize.".into(),
            attachment: attach(
                "certificate.svg",
                SVG,
                svg_of(&lines, layout, 31 + i as u64, ""),
            ),
        };
        msgs.push(msg("prize", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("S attack 3", &fed, "prize");
    let keys = key_phrases(&PRIZE);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    expect_read_in_order("S attack 3", &fed, "prize", &keys);
}

const BANK: [&str; 10] = [
    "Security alert from your online banking service",
    "We detected an unusual sign in attempt on your online banking profile",
    "from a device that has not been used with your account before.",
    "For your protection we have temporarily limited outgoing transfers",
    "until you verify your identity through our secure verification form.",
    "Please have your card number, expiry date and security code ready,",
    "as the form will ask you to confirm them before access is restored.",
    "If the verification is not completed within forty eight hours,",
    "your card will be blocked and a new one must be ordered at a branch.",
    "We apologise for any inconvenience, your banking security team.",
];

/// S attack 4: nested groups and matrix transforms, with per-copy hidden
/// decoy text.
#[test]
fn svg_attack_transforms_with_hidden_decoys() {
    let lines = owned(&BANK);
    let mut msgs = vec![msg("other", 400, &bystander())];
    let mut all_decoys = Vec::new();
    for i in 0..7 {
        let layout = [Layout::Nested, Layout::Matrix, Layout::Mixed][i % 3];
        let (extra, words) = decoys(4100 + i as u64, lines.len());
        all_decoys.extend(words);
        let m = Mail {
            from: format!("Online Banking <security@bank-alerts{i}.example>"),
            to: to(i + 1),
            subject: format!("Security alert {}", 5500 + i * 3),
            body: "Important security information is attached.".into(),
            attachment: attach(
                "security_alert.svg",
                SVG,
                svg_of(&lines, layout, 41 + i as u64, &extra),
            ),
        };
        msgs.push(msg("bank", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("S attack 4", &fed, "bank");
    let keys = key_phrases(&BANK);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    expect_read_in_order("S attack 4", &fed, "bank", &keys);
    all_decoys.sort();
    all_decoys.dedup();
    expect_unread("S attack 4", &fed, "bank", &all_decoys);
}

const PARCEL: [&str; 9] = [
    "Dear NAME,",
    "your parcel could not be delivered today because the customs fee",
    "of two euros and ninety nine cents has not been paid by the recipient.",
    "The parcel is now stored at our regional distribution centre and will",
    "be returned to the sender if the fee is not settled within five days.",
    "To schedule a new delivery, confirm your home address and pay the",
    "outstanding amount using the payment page linked in this notice.",
    "We thank you for choosing our express courier service.",
    "Customer service team, international parcel logistics.",
];

/// S attack 5: the recipient's name varying, dy tspans and nested groups.
#[test]
fn svg_attack_recipient_name_varies() {
    let mut msgs = vec![msg("other", 500, &bystander())];
    for i in 0..7 {
        let name = capital(PEOPLE[(i + 5) % PEOPLE.len()]);
        let lines: Vec<String> = PARCEL.iter().map(|l| l.replace("NAME", &name)).collect();
        let layout = if i.is_multiple_of(2) {
            Layout::DyTspans
        } else {
            Layout::Nested
        };
        let m = Mail {
            from: format!("Express Courier <notice@courier-desk{i}.example>"),
            to: to(i + 5),
            subject: format!("Delivery attempt failed #{}", 66_120 + i * 9),
            body: "Details of your delivery are in the attached notice.".into(),
            attachment: attach(
                "delivery.svg",
                SVG,
                svg_of(&lines, layout, 51 + i as u64, ""),
            ),
        };
        msgs.push(msg("parcel", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("S attack 5", &fed, "parcel");
    let keys = key_phrases(&PARCEL);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    expect_read_in_order("S attack 5", &fed, "parcel", &keys);
}

// ---------------------------------------------------------------------
// Class S: ordinary cases
// ---------------------------------------------------------------------

/// S ordinary 1: five companies' logos under their own messages.
#[test]
fn svg_ordinary_logos_apart() {
    let logos = [
        (
            "Northwind Traders <orders@northwind.example>",
            "Order 4471 shipped",
            "Hello, your order of six ceramic bowls left our warehouse this morning and \
             should arrive on Thursday. Our logo is attached for your shop listing.",
            "<circle cx=\"40\" cy=\"40\" r=\"30\" fill=\"#0a6\"/>\
             <text x=\"85\" y=\"50\" font-family=\"Georgia\" font-size=\"28\" font-weight=\"bold\">Northwind</text>\
             <text x=\"85\" y=\"70\" font-size=\"12\">Traders since 1987</text>",
        ),
        (
            "Blue Heron Yoga <hello@blueheron.example>",
            "New class schedule",
            "Dear members, from next week the evening class moves to seven o'clock. Please \
             find our new logo for the notice board attached.",
            "<path d=\"M10 70 Q40 10 70 70 Z\" fill=\"#36c\"/>\
             <text x=\"80\" y=\"45\" font-size=\"26\" fill=\"#36c\">BLUE HERON</text>\
             <text x=\"80\" y=\"65\" font-size=\"14\" fill=\"#555\">yoga and pilates studio</text>",
        ),
        (
            "Kessler and Sons <office@kessler-sons.example>",
            "Quote for the roof repair",
            "Dear Mrs. Lang, the quote follows by post. Our new logo is attached.",
            "<rect x=\"5\" y=\"5\" width=\"60\" height=\"60\" fill=\"#a33\"/>\
             <text x=\"20\" y=\"48\" font-size=\"36\" fill=\"#fff\">K</text>\
             <text x=\"75\" y=\"40\" font-size=\"22\">Kessler &amp; Sons</text>\
             <text x=\"75\" y=\"60\" font-size=\"12\">Roofing and carpentry</text>",
        ),
        (
            "Apex Dental Care <reception@apexdental.example>",
            "Your appointment",
            "Hi Tom, this confirms your check-up on Monday at nine. Please arrive ten \
             minutes early. Attached is our logo for your calendar entry.",
            "<polygon points=\"35,5 65,65 5,65\" fill=\"#2a9\"/>\
             <text x=\"75\" y=\"42\" font-size=\"24\">Apex Dental Care</text>",
        ),
        (
            "Oakridge Library <events@oakridge-lib.example>",
            "Reading club in May",
            "Dear readers, the May reading club discusses a novel about a lighthouse \
             keeper. Tea and biscuits are provided. Our new logo is attached.",
            "<circle cx=\"35\" cy=\"30\" r=\"22\" fill=\"#6a4\"/><rect x=\"31\" y=\"48\" \
             width=\"8\" height=\"20\" fill=\"#642\"/>\
             <text x=\"70\" y=\"40\" font-size=\"24\">Oakridge Public Library</text>",
        ),
    ];
    let groups = ["northwind", "heron", "kessler", "apex", "oakridge"];
    let mut msgs = Vec::new();
    for (i, (from, subject, body, art)) in logos.iter().enumerate() {
        let m = Mail {
            from: (*from).into(),
            to: to(i),
            subject: (*subject).into(),
            body: (*body).into(),
            attachment: attach("logo.svg", SVG, svg_file(360, 80, art)),
        };
        msgs.push(msg(groups[i], i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read_in_order("S ordinary 1", &fed, "kessler", &["roofing and carpentry"]);
    expect_apart("S ordinary 1", &fed);
}

/// A bar chart with a title, an axis label and a label and value a bar.
fn bar_chart(title: &str, axis: &str, bars: &[(&str, u32)]) -> Vec<u8> {
    let mut s = format!(
        "<text x=\"20\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>\n\
         <line x1=\"40\" y1=\"260\" x2=\"460\" y2=\"260\" stroke=\"#000\"/>\n\
         <line x1=\"40\" y1=\"40\" x2=\"40\" y2=\"260\" stroke=\"#000\"/>\n\
         <text transform=\"translate(16,200) rotate(-90)\" font-size=\"11\">{}</text>\n",
        xml_escape(title),
        xml_escape(axis)
    );
    let max = bars.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    for (k, (label, v)) in bars.iter().enumerate() {
        let x = 60 + k as u32 * 80;
        let h = v * 200 / max;
        s.push_str(&format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"50\" height=\"{h}\" fill=\"#48c\"/>\n\
             <text x=\"{}\" y=\"{}\" font-size=\"11\">{v}</text>\n\
             <text x=\"{x}\" y=\"276\" font-size=\"11\">{}</text>\n",
            260 - h,
            x + 12,
            255 - h,
            xml_escape(label)
        ));
    }
    svg_file(480, 290, &s)
}

/// S ordinary 2: five different charts, the same subject and body.
#[test]
fn svg_ordinary_charts_apart() {
    let charts = [
        (
            "Helga <helga@bakery.example>",
            bar_chart(
                "Loaves sold per weekday",
                "loaves",
                &[
                    ("Mon", 120),
                    ("Tue", 95),
                    ("Wed", 130),
                    ("Thu", 88),
                    ("Fri", 170),
                ],
            ),
        ),
        (
            "Ravi <ravi@solar-coop.example>",
            bar_chart(
                "Solar yield per month in kWh",
                "kilowatt hours",
                &[
                    ("Jan", 210),
                    ("Feb", 340),
                    ("Mar", 560),
                    ("Apr", 720),
                    ("May", 810),
                ],
            ),
        ),
        (
            "Ines <ines@swimclub.example>",
            bar_chart(
                "Members by age group",
                "members",
                &[
                    ("under 10", 44),
                    ("10-17", 61),
                    ("18-39", 38),
                    ("40-64", 52),
                    ("65+", 19),
                ],
            ),
        ),
        (
            "Marco <marco@logistics.example>",
            bar_chart(
                "Late deliveries by depot",
                "late parcels",
                &[
                    ("Leeds", 12),
                    ("York", 7),
                    ("Hull", 19),
                    ("Bath", 3),
                    ("Kent", 9),
                ],
            ),
        ),
        (
            "Yuki <yuki@school-pta.example>",
            bar_chart(
                "Funds raised at the summer fair",
                "pounds",
                &[
                    ("Cakes", 310),
                    ("Raffle", 540),
                    ("Books", 120),
                    ("Games", 260),
                    ("Plants", 90),
                ],
            ),
        ),
    ];
    let groups = ["bakery", "solar", "swim", "depot", "fair"];
    let mut msgs = Vec::new();
    for (i, (from, svg)) in charts.into_iter().enumerate() {
        let m = Mail {
            from: from.into(),
            to: to(i + 3),
            subject: "Quarterly figures".into(),
            body: "Chart attached.".into(),
            attachment: attach("chart.svg", SVG, svg),
        };
        msgs.push(msg(groups[i], i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read_in_order("S ordinary 2", &fed, "solar", &["solar yield per month"]);
    expect_apart("S ordinary 2", &fed);
}

const NOTICES: [[&str; 8]; 5] = [
    [
        "Garden club newsletter for the spring season",
        "The seed swap takes place on the first Saturday of April in the church hall.",
        "Bring seeds in labelled envelopes and take home as many as you brought.",
        "Our talk this month is about growing tomatoes in cold greenhouses,",
        "given by a retired nurseryman who has won prizes at the county show.",
        "Membership fees for the year can be paid at the door or by transfer.",
        "Volunteers are needed to water the community beds during the holidays.",
        "Happy gardening from the committee of the village garden club.",
    ],
    [
        "Recipe of the week: lentil soup with smoked paprika",
        "Soften two chopped onions and a carrot in olive oil for ten minutes,",
        "then stir in a teaspoon of smoked paprika and a pinch of cumin seeds.",
        "Add two hundred grams of red lentils and a litre of vegetable stock",
        "and let everything simmer gently until the lentils fall apart.",
        "Blend half of the soup for a creamy texture and season with lemon.",
        "Serve with crusty bread and a spoon of yoghurt on top of each bowl.",
        "The soup keeps for three days in the fridge and freezes very well.",
    ],
    [
        "School trip to the science museum for the fourth grade classes",
        "On the twelfth of May the children visit the science museum in town.",
        "The coach leaves the school gate at half past eight and returns at four.",
        "Please pack a lunch, a drink and a rain jacket for your child that day.",
        "The museum has prepared a workshop about magnets and simple circuits,",
        "followed by a visit to the planetarium show about the solar system.",
        "Return the signed consent form to the class teacher by the end of April.",
        "Thank you for your support, the teachers of the fourth grade.",
    ],
    [
        "Notice to tenants about the water supply in building C",
        "The water supply will be shut off on Tuesday between nine and one",
        "while the plumbers replace the main valve in the basement of building C.",
        "Please fill a few bottles with drinking water the evening before",
        "and keep the taps closed during the work to avoid air in the pipes.",
        "After the work the water may look brown for a few minutes at first;",
        "let it run until it is clear again before using it for cooking.",
        "We apologise for the disruption, the housing association management.",
    ],
    [
        "New opening hours of the town library from the first of June",
        "The library will open at ten instead of nine on weekday mornings",
        "and will stay open until eight in the evening on Thursdays.",
        "On Saturdays the children's corner offers a story hour at eleven",
        "and the study rooms on the upper floor can be booked online.",
        "Returns can still be made at any time through the slot by the door,",
        "and overdue fines are waived for the whole month of June.",
        "We look forward to welcoming you, the staff of the town library.",
    ],
];

/// S ordinary 3: five different notices, one template, one technique, the
/// same subject and body.
#[test]
fn svg_ordinary_same_technique_different_texts() {
    let senders = [
        "Garden Club <club@village-garden.example>",
        "Cook Corner <recipes@cookcorner.example>",
        "Hillside School <office@hillside-school.example>",
        "Housing Association <service@housing-c.example>",
        "Town Library <info@town-library.example>",
    ];
    let groups = ["garden", "recipe", "school", "tenants", "library"];
    let mut msgs = Vec::new();
    for (i, text) in NOTICES.iter().enumerate() {
        let lines = owned(text);
        let m = Mail {
            from: senders[i].into(),
            to: to(i + 6),
            subject: "Notice".into(),
            body: "Please see the attached notice.".into(),
            attachment: attach(
                "notice.svg",
                SVG,
                svg_of(&lines, Layout::Absolute, 61 + i as u64, ""),
            ),
        };
        msgs.push(msg(groups[i], i + 1, &m));
    }
    let fed = replay(msgs);
    for (i, g) in groups.iter().enumerate() {
        let keys = key_phrases(&NOTICES[i]);
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        expect_read_in_order("S ordinary 3", &fed, g, &keys);
    }
    expect_apart("S ordinary 3", &fed);
}

/// A box with a centred label.
fn boxed(x: i32, y: i32, w: i32, label: &str) -> String {
    format!(
        "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"34\" rx=\"4\" fill=\"#eef\" stroke=\"#335\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
        x + w / 2,
        y + 21,
        xml_escape(label)
    )
}

fn arrow(x1: i32, y1: i32, x2: i32, y2: i32) -> String {
    format!("<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" stroke=\"#335\"/>\n")
}

/// S ordinary 4: five diagrams from different senders.
#[test]
fn svg_ordinary_diagrams_apart() {
    let flow = [
        boxed(20, 20, 160, "Customer places order"),
        arrow(100, 54, 100, 80),
        boxed(20, 80, 160, "Check stock level"),
        arrow(180, 97, 240, 97),
        boxed(240, 80, 160, "Reorder from supplier"),
        arrow(100, 114, 100, 140),
        boxed(20, 140, 160, "Pack and ship parcel"),
    ]
    .concat();
    let org = [
        boxed(170, 10, 140, "Managing director"),
        arrow(240, 44, 240, 70),
        boxed(20, 70, 130, "Head of sales"),
        boxed(175, 70, 130, "Head of finance"),
        boxed(330, 70, 130, "Head of production"),
        boxed(20, 130, 130, "Field sales team"),
        boxed(330, 130, 130, "Night shift crew"),
    ]
    .concat();
    let net = [
        boxed(180, 10, 120, "Internet uplink"),
        arrow(240, 44, 240, 70),
        boxed(180, 70, 120, "Firewall appliance"),
        boxed(20, 140, 120, "Office switch"),
        boxed(180, 140, 120, "Guest wireless"),
        boxed(340, 140, 120, "Backup server"),
    ]
    .concat();
    let timeline = [
        arrow(20, 60, 460, 60),
        boxed(20, 80, 100, "Kick-off in March"),
        boxed(130, 20, 100, "Design review"),
        boxed(240, 80, 100, "Pilot in July"),
        boxed(350, 20, 110, "Launch in October"),
    ]
    .concat();
    let plan = [
        "<rect x=\"10\" y=\"10\" width=\"460\" height=\"220\" fill=\"none\" stroke=\"#000\" stroke-width=\"4\"/>\n",
        "<line x1=\"200\" y1=\"10\" x2=\"200\" y2=\"230\" stroke=\"#000\" stroke-width=\"3\"/>\n",
        "<text x=\"60\" y=\"110\" font-size=\"14\">Living room 24 m2</text>\n",
        "<text x=\"260\" y=\"80\" font-size=\"14\">Kitchen 12 m2</text>\n",
        "<text x=\"260\" y=\"180\" font-size=\"14\">Bathroom 6 m2</text>\n",
    ]
    .concat();
    let items = [
        (
            "Lars <lars@webshop.example>",
            "Order process",
            "Here is the order flow we agreed on in the workshop, please check the reorder step.",
            flow,
        ),
        (
            "Maria <maria@factory.example>",
            "New structure",
            "The organisation chart after the merger; the night shift now reports to production.",
            org,
        ),
        (
            "Tobias <it@lawfirm.example>",
            "Network layout",
            "For the auditors: our network layout with the new firewall and the backup server.",
            net,
        ),
        (
            "Priya <priya@agency.example>",
            "Project timeline",
            "Draft timeline for the rebranding project, launch planned for October.",
            timeline,
        ),
        (
            "Jonas <jonas@homes.example>",
            "Floor plan of the flat",
            "The floor plan of the flat you asked about, the kitchen was renovated last year.",
            plan,
        ),
    ];
    let groups = ["flow", "org", "net", "timeline", "plan"];
    let mut msgs = Vec::new();
    for (i, (from, subject, body, art)) in items.iter().enumerate() {
        let m = Mail {
            from: (*from).into(),
            to: to(i + 1),
            subject: (*subject).into(),
            body: (*body).into(),
            attachment: attach("diagram.svg", SVG, svg_file(480, 240, art)),
        };
        msgs.push(msg(groups[i], i + 1, &m));
    }
    msgs.push(msg("other", 9, &bystander()));
    let fed = replay(msgs);
    expect_read_in_order("S ordinary 4", &fed, "net", &["firewall appliance"]);
    expect_apart("S ordinary 4", &fed);
}

const TEMPLATE_LAYER: &str = "Template guide layer. Place the headline in the upper third of \
the card and keep a margin of at least twelve millimetres on every side. Body copy is set in \
the house sans serif at eleven points with a line spacing of fourteen points. Photographs \
should bleed off the right edge and be exported at three hundred dots per inch. Replace this \
placeholder text with your own message before printing, check the spelling twice and export \
the final card as a flattened file for the print shop. Colours follow the brand palette of \
the card designer application.";

/// S ordinary 5: one tool's exports with the same hidden template layer,
/// different visible text.
#[test]
fn svg_ordinary_shared_hidden_layer_apart() {
    let cards = [
        [
            "You are invited to Emma's seventh birthday party",
            "on Saturday afternoon at the adventure playground by the river.",
            "There will be a treasure hunt, pizza and a chocolate cake.",
            "Please let us know by Wednesday whether Leo can come along.",
        ],
        [
            "Farewell drinks for Gerhard after thirty one years at the plant",
            "on Friday from five o'clock in the canteen of the main building.",
            "Colleagues who want to contribute to the present can see Anke",
            "in the purchasing office before Thursday lunchtime.",
        ],
        [
            "Spring concert of the St. Mary's chamber choir",
            "with works by Brahms, Elgar and a new piece by a local composer.",
            "Sunday evening at seven in the parish church, admission free,",
            "donations for the restoration of the organ are welcome.",
        ],
        [
            "Book club meeting at the corner cafe next Tuesday",
            "We discuss the detective novel set on a Scottish island,",
            "so please finish the last three chapters before we meet.",
            "Hot chocolate is on the club this time to celebrate our fifth year.",
        ],
        [
            "Beginners' yoga course starting in the community centre",
            "eight Monday evenings of gentle stretching and breathing exercises,",
            "mats are provided but please bring a blanket and comfortable clothes.",
            "Places are limited to twelve, so register at the front desk soon.",
        ],
    ];
    let senders = [
        "Sophie <sophie@familymail.example>",
        "Works Council <council@plant.example>",
        "Choir Secretary <choir@stmarys.example>",
        "Book Club <books@cornercafe.example>",
        "Community Centre <desk@community.example>",
    ];
    let groups = ["party", "farewell", "concert", "books", "yoga"];
    let hidden = format!(
        "<desc>Exported by CardDesigner 4.2, template Elegant Card, layers Guide and Content</desc>\n\
         <g id=\"guide\" display=\"none\"><text x=\"24\" y=\"40\" {FONT}>{0}</text></g>\n\
         <text x=\"24\" y=\"120\" visibility=\"hidden\" {FONT}>{0}</text>\n",
        xml_escape(TEMPLATE_LAYER)
    );
    let mut msgs = Vec::new();
    for (i, card) in cards.iter().enumerate() {
        let lines = owned(card);
        let m = Mail {
            from: senders[i].into(),
            to: to(i + 7),
            subject: "Invitation".into(),
            body: "Please find the invitation attached.".into(),
            attachment: attach(
                "invitation.svg",
                SVG,
                svg_of(&lines, Layout::DyTspans, 71 + i as u64, &hidden),
            ),
        };
        msgs.push(msg(groups[i], i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read_in_order(
        "S ordinary 5",
        &fed,
        "concert",
        &["chamber choir", "parish church"],
    );
    for g in groups {
        expect_unread(
            "S ordinary 5",
            &fed,
            g,
            &[
                "placeholder".into(),
                "millimetres".into(),
                "flattened".into(),
            ],
        );
    }
    expect_apart("S ordinary 5", &fed);
}

// ---------------------------------------------------------------------
// Pictures
// ---------------------------------------------------------------------

const PW: u32 = 480;
const PH: u32 = 640;

fn rect(img: &mut GrayImage, x: u32, y: u32, w: u32, h: u32, v: u8) {
    for yy in y..(y + h).min(img.height()) {
        for xx in x..(x + w).min(img.width()) {
            img.put_pixel(xx, yy, Luma([v]));
        }
    }
}

fn frame(img: &mut GrayImage, x: u32, y: u32, w: u32, h: u32, t: u32, v: u8) {
    rect(img, x, y, w, t, v);
    rect(img, x, y + h - t, w, t, v);
    rect(img, x, y, t, h, v);
    rect(img, x + w - t, y, t, h, v);
}

fn disc(img: &mut GrayImage, cx: i32, cy: i32, r: i32, v: u8) {
    for y in (cy - r).max(0)..(cy + r).min(img.height() as i32) {
        for x in (cx - r).max(0)..(cx + r).min(img.width() as i32) {
            if (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r {
                img.put_pixel(x as u32, y as u32, Luma([v]));
            }
        }
    }
}

/// A row of word-shaped blocks, as printed text looks in a scan.
fn text_row(img: &mut GrayImage, rng: &mut Rng, x: u32, y: u32, width: u32, h: u32, v: u8) {
    let mut cx = x;
    while cx + 6 < x + width {
        let w = (rng.range(10, 46) as u32).min(x + width - cx);
        rect(img, cx, y, w, h, v);
        cx += w + rng.range(5, 8) as u32;
    }
}

/// Rows of text blocks; returns the y below them.
fn paragraph(img: &mut GrayImage, rng: &mut Rng, x: u32, y: u32, width: u32, rows: u32) -> u32 {
    let mut y = y;
    for r in 0..rows {
        let w = if r + 1 == rows {
            width * rng.range(30, 80) as u32 / 100
        } else {
            width
        };
        text_row(img, rng, x, y, w, 7, 45);
        y += 14;
    }
    y + 12
}

fn blank() -> GrayImage {
    GrayImage::from_pixel(PW, PH, Luma([246]))
}

/// The lure page of P attack 1: a dark letterhead, a large title, text,
/// a table and a big "pay now" button.
fn lure_invoice() -> GrayImage {
    let mut rng = Rng::new(9001);
    let mut img = blank();
    rect(&mut img, 0, 0, PW, 70, 40);
    disc(&mut img, 50, 35, 24, 230);
    text_row(&mut img, &mut rng, 100, 28, 200, 14, 230);
    text_row(&mut img, &mut rng, 40, 100, 260, 18, 20);
    let mut y = paragraph(&mut img, &mut rng, 40, 140, 400, 5);
    frame(&mut img, 40, y, 400, 120, 2, 60);
    for r in 1..4 {
        rect(&mut img, 40, y + r * 30, 400, 2, 60);
    }
    rect(&mut img, 300, y, 2, 120, 60);
    for r in 0..4 {
        text_row(&mut img, &mut rng, 50, y + 11 + r * 30, 220, 7, 45);
        text_row(&mut img, &mut rng, 320, y + 11 + r * 30, 90, 7, 45);
    }
    y += 150;
    rect(&mut img, 120, y, 240, 60, 25);
    text_row(&mut img, &mut rng, 160, y + 22, 160, 16, 235);
    y += 90;
    paragraph(&mut img, &mut rng, 40, y, 400, 4);
    img
}

/// The "protected document" preview of P attack 2: faint blurred text all
/// over and a dark box with a button in the middle.
fn lure_preview() -> GrayImage {
    let mut rng = Rng::new(9002);
    let mut img = blank();
    let mut y = 30;
    while y < PH - 30 {
        text_row(&mut img, &mut rng, 30, y, 420, 8, 190);
        y += 16;
    }
    rect(&mut img, 70, 220, 340, 200, 50);
    disc(&mut img, 240, 270, 28, 235);
    text_row(&mut img, &mut rng, 110, 320, 260, 12, 230);
    rect(&mut img, 140, 355, 200, 40, 200);
    text_row(&mut img, &mut rng, 170, 370, 140, 10, 40);
    img
}

/// The flyer of P attack 5: big shapes and a price burst.
fn lure_flyer() -> RgbImage {
    let mut rng = Rng::new(9005);
    let mut g = blank();
    rect(&mut g, 0, 0, PW, 200, 70);
    disc(&mut g, 360, 300, 90, 30);
    text_row(&mut g, &mut rng, 40, 60, 300, 30, 240);
    text_row(&mut g, &mut rng, 40, 120, 220, 20, 230);
    text_row(&mut g, &mut rng, 310, 290, 100, 24, 240);
    paragraph(&mut g, &mut rng, 40, 420, 400, 6);
    rect(&mut g, 40, 540, 400, 60, 90);
    let mut img = image::DynamicImage::ImageLuma8(g).to_rgb8();
    for p in img.pixels_mut() {
        let v = p.0[0];
        if v < 100 {
            *p = Rgb([v.saturating_add(150), v / 2, v / 3]);
        }
    }
    img
}

/// A business letter: logo, address block, paragraphs, signature.
fn doc_letter() -> GrayImage {
    let mut rng = Rng::new(7001);
    let mut img = blank();
    disc(&mut img, 60, 60, 26, 60);
    for r in 0..4 {
        text_row(&mut img, &mut rng, 300, 40 + r * 14, 140, 7, 50);
    }
    for r in 0..4 {
        text_row(&mut img, &mut rng, 40, 140 + r * 14, 180, 7, 50);
    }
    let mut y = 230;
    for rows in [4, 6, 5, 3] {
        y = paragraph(&mut img, &mut rng, 40, y, 400, rows);
    }
    for k in 0..60 {
        let x = 60 + k * 2;
        let yy = (y as i32 + 20 + ((k as f64 / 5.0).sin() * 8.0) as i32) as u32;
        rect(&mut img, x, yy, 3, 3, 30);
    }
    img
}

/// A form: a grid of labelled boxes.
fn doc_form() -> GrayImage {
    let mut rng = Rng::new(7002);
    let mut img = blank();
    text_row(&mut img, &mut rng, 140, 30, 200, 14, 30);
    for r in 0..8u32 {
        for c in 0..2u32 {
            let x = 30 + c * 215;
            let y = 80 + r * 66;
            frame(&mut img, x, y, 205, 56, 2, 70);
            text_row(&mut img, &mut rng, x + 6, y + 6, 80, 5, 90);
        }
    }
    img
}

/// A receipt: a narrow column of short rows and a thick total.
fn doc_receipt() -> GrayImage {
    let mut rng = Rng::new(7003);
    let mut img = GrayImage::from_pixel(PW, PH, Luma([120]));
    rect(&mut img, 150, 20, 180, 600, 250);
    text_row(&mut img, &mut rng, 190, 40, 100, 12, 30);
    let mut y = 80;
    for _ in 0..22 {
        text_row(&mut img, &mut rng, 160, y, 90, 6, 50);
        text_row(&mut img, &mut rng, 280, y, 40, 6, 50);
        y += 16;
    }
    rect(&mut img, 160, y + 10, 160, 2, 40);
    rect(&mut img, 160, y + 24, 160, 16, 20);
    img
}

/// A table: a dark header and striped rows in columns.
fn doc_table() -> GrayImage {
    let mut rng = Rng::new(7004);
    let mut img = blank();
    rect(&mut img, 20, 20, 440, 36, 30);
    for r in 0..20u32 {
        let y = 60 + r * 26;
        if r.is_multiple_of(2) {
            rect(&mut img, 20, y, 440, 26, 215);
        }
        for c in 0..4u32 {
            text_row(&mut img, &mut rng, 28 + c * 110, y + 9, 70, 7, 50);
        }
    }
    for c in 1..4u32 {
        rect(&mut img, 20 + c * 110, 56, 1, 520, 120);
    }
    img
}

/// A floor plan: thick walls, rooms, a few labels.
fn doc_plan() -> GrayImage {
    let mut rng = Rng::new(7005);
    let mut img = blank();
    frame(&mut img, 30, 60, 420, 520, 8, 20);
    rect(&mut img, 240, 60, 6, 300, 20);
    rect(&mut img, 30, 360, 300, 6, 20);
    rect(&mut img, 330, 360, 6, 220, 20);
    disc(&mut img, 400, 470, 30, 160);
    text_row(&mut img, &mut rng, 90, 200, 80, 8, 60);
    text_row(&mut img, &mut rng, 300, 200, 80, 8, 60);
    text_row(&mut img, &mut rng, 120, 470, 80, 8, 60);
    text_row(&mut img, &mut rng, 150, 20, 180, 14, 30);
    img
}

/// `img` with scanner noise of `amp` and a brightness `shift`, by `seed`.
fn scanned(img: &GrayImage, seed: u64, amp: i32, shift: i32) -> GrayImage {
    let mut rng = Rng::new(seed);
    let mut out = img.clone();
    for p in out.pixels_mut() {
        let n = rng.below((2 * amp + 1) as usize) as i32 - amp;
        p.0[0] = (i32::from(p.0[0]) + n + shift).clamp(0, 255) as u8;
    }
    out
}

fn scanned_rgb(img: &RgbImage, seed: u64, amp: i32, shift: i32) -> RgbImage {
    let mut rng = Rng::new(seed);
    let mut out = img.clone();
    for p in out.pixels_mut() {
        for c in p.0.iter_mut() {
            let n = rng.below((2 * amp + 1) as usize) as i32 - amp;
            *c = (i32::from(*c) + n + shift).clamp(0, 255) as u8;
        }
    }
    out
}

fn jpeg_gray(img: &GrayImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::L8,
        )
        .unwrap();
    out
}

fn jpeg_rgb(img: &RgbImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    out
}

fn png_gray(img: &GrayImage) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::L8,
        )
        .unwrap();
    out
}

fn png_rgb(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(
            img.as_raw(),
            img.width(),
            img.height(),
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    out
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// A scanned page: a PDF whose page is `img` as JPEG (DCTDecode).
fn scan_pdf_jpeg(img: &GrayImage, quality: u8) -> Vec<u8> {
    testkit::pdf_of_picture(
        img.width(),
        img.height(),
        "DCTDecode",
        "DeviceGray",
        &jpeg_gray(img, quality),
    )
}

/// A scanned page: a PDF whose page is `img` as FlateDecode grey samples.
fn scan_pdf_flate(img: &GrayImage) -> Vec<u8> {
    testkit::pdf_of_picture(
        img.width(),
        img.height(),
        "FlateDecode",
        "DeviceGray",
        &zlib(img.as_raw()),
    )
}

const W_NS: &str = "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" \
xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\" \
xmlns:wp=\"http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing\" \
xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" \
xmlns:pic=\"http://schemas.openxmlformats.org/drawingml/2006/picture\"";

fn drawing_xml(rid: &str, name: &str) -> String {
    format!(
        "<a:graphic><a:graphicData uri=\"http://schemas.openxmlformats.org/drawingml/2006/picture\">\
         <pic:pic><pic:nvPicPr><pic:cNvPr id=\"1\" name=\"{name}\"/><pic:cNvPicPr/></pic:nvPicPr>\
         <pic:blipFill><a:blip r:embed=\"{rid}\"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>\
         <pic:spPr><a:xfrm><a:off x=\"0\" y=\"0\"/><a:ext cx=\"4572000\" cy=\"6096000\"/></a:xfrm>\
         <a:prstGeom prst=\"rect\"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic>"
    )
}

/// A Word document: `paragraphs` of text and then the picture `png` (in
/// `word/media/`), as Word writes an inline picture.
fn docx_with_picture(paragraphs: &[&str], media_name: &str, png: &[u8]) -> Vec<u8> {
    let mut body = String::new();
    for p in paragraphs {
        body.push_str(&format!(
            "<w:p><w:r><w:t xml:space=\"preserve\">{}</w:t></w:r></w:p>",
            xml_escape(p)
        ));
    }
    body.push_str(&format!(
        "<w:p><w:r><w:drawing><wp:inline distT=\"0\" distB=\"0\" distL=\"0\" distR=\"0\">\
         <wp:extent cx=\"4572000\" cy=\"6096000\"/><wp:docPr id=\"1\" name=\"Picture 1\"/>{}\
         </wp:inline></w:drawing></w:r></w:p>",
        drawing_xml("rId7", media_name)
    ));
    let doc = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
         <w:document {W_NS}><w:body>{body}<w:sectPr/></w:body></w:document>"
    );
    let types = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
<Default Extension=\"xml\" ContentType=\"application/xml\"/>\
<Default Extension=\"png\" ContentType=\"image/png\"/>\
<Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/>\
</Types>";
    let rels = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/>\
</Relationships>";
    let doc_rels = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId7\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/image\" Target=\"media/{media_name}\"/>\
</Relationships>"
    );
    let media = format!("word/media/{media_name}");
    zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", doc.as_bytes()),
        ("word/_rels/document.xml.rels", doc_rels.as_bytes()),
        (&media, png),
    ])
}

/// A PowerPoint deck of one slide: a title and the picture `png` (in
/// `ppt/media/`).
fn pptx_with_picture(title: &str, png: &[u8]) -> Vec<u8> {
    let slide = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<p:sld xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" \
xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\" \
xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\"><p:cSld><p:spTree>\
<p:sp><p:txBody><a:bodyPr/><a:p><a:r><a:rPr lang=\"en-US\"/><a:t>{}</a:t></a:r></a:p></p:txBody></p:sp>\
<p:pic><p:nvPicPr><p:cNvPr id=\"4\" name=\"Picture 3\"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>\
<p:blipFill><a:blip r:embed=\"rId2\"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>\
<p:spPr><a:xfrm><a:off x=\"914400\" y=\"1371600\"/><a:ext cx=\"4572000\" cy=\"3429000\"/></a:xfrm>\
<a:prstGeom prst=\"rect\"><a:avLst/></a:prstGeom></p:spPr></p:pic>\
</p:spTree></p:cSld></p:sld>",
        xml_escape(title)
    );
    let types = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
<Default Extension=\"xml\" ContentType=\"application/xml\"/>\
<Default Extension=\"png\" ContentType=\"image/png\"/>\
<Override PartName=\"/ppt/presentation.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml\"/>\
<Override PartName=\"/ppt/slides/slide1.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.presentationml.slide+xml\"/>\
</Types>";
    let rels = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"ppt/presentation.xml\"/>\
</Relationships>";
    let slide_rels = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId2\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/image\" Target=\"../media/image1.png\"/>\
</Relationships>";
    zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", rels.as_bytes()),
        (
            "ppt/presentation.xml",
            b"<p:presentation xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\"/>",
        ),
        ("ppt/slides/slide1.xml", slide.as_bytes()),
        ("ppt/slides/_rels/slide1.xml.rels", slide_rels.as_bytes()),
        ("ppt/media/image1.png", png),
    ])
}

// ---------------------------------------------------------------------
// Class P: attack cases
// ---------------------------------------------------------------------

/// P attack 1: one scanned page, JPEG re-encoded per copy, in a PDF.
#[test]
fn picture_attack_scanned_pdf_jpeg_reencoded() {
    let page = lure_invoice();
    let qualities = [92, 85, 78, 71, 64, 57, 50];
    let mut msgs = vec![msg("other", 1100, &bystander())];
    for (i, q) in qualities.iter().enumerate() {
        let img = scanned(&page, 100 + i as u64, 3, i as i32 - 3);
        let m = Mail {
            from: format!("Accounts <billing@invoice-desk{i}.example>"),
            to: to(i),
            subject: "Outstanding invoice".into(),
            body: "Please find your invoice attached.".into(),
            attachment: attach("Invoice.pdf", PDF, scan_pdf_jpeg(&img, *q)),
        };
        msgs.push(msg("scan", i + 1, &m));
    }
    let fed = replay(msgs);
    for f in fed.iter().filter(|f| f.group == "scan") {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P attack 1: #{} has no picture read from its scanned PDF\n{}",
            f.rec.n,
            explain("P attack 1", &fed)
        );
    }
    expect_campaign("P attack 1", &fed, "scan");
}

/// P attack 2: a Word document whose content is one picture in
/// `word/media/`, per-copy noise.
#[test]
fn picture_attack_docx_media_picture() {
    let page = lure_preview();
    let mut msgs = vec![msg("other", 1200, &bystander())];
    for i in 0..7 {
        let img = scanned(&page, 200 + i as u64, 4, 2 - i as i32);
        let doc = docx_with_picture(&[], "image1.png", &png_gray(&img));
        let m = Mail {
            from: format!("Shared Documents <share@docs-portal{i}.example>"),
            to: to(i + 2),
            subject: "Shared document".into(),
            body: "A document was shared with you, see attachment.".into(),
            attachment: attach("Document.docx", DOCX, doc),
        };
        msgs.push(msg("docx", i + 1, &m));
    }
    let fed = replay(msgs);
    for f in fed.iter().filter(|f| f.group == "docx") {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P attack 2: #{} has no picture read from word/media\n{}",
            f.rec.n,
            explain("P attack 2", &fed)
        );
    }
    expect_campaign("P attack 2", &fed, "docx");
}

const TAX_TXT: &str = "Notice of tax refund\r\n\r\nDear NAME,\r\n\r\n\
after the annual calculation of your fiscal activity we have determined that you are \
eligible to receive a tax refund of AMOUNT euros. The refund could not be transferred \
automatically because the bank details in our records are incomplete.\r\n\r\n\
To receive the refund, open the attached form, fill in your full name, date of birth \
and card details, and return it within five working days. Requests received after this \
period will be cancelled and the amount will be retained by the treasury.\r\n\r\n\
Reference number: REF\r\nRefund department, national revenue office\r\n";

/// P attack 3: a .txt inside a zip, its text varying slightly per copy.
#[test]
fn picture_attack_text_file_in_zip() {
    let entries = [
        "refund_notice.txt",
        "Refund.txt",
        "notice.txt",
        "tax_refund_2024.txt",
        "README.txt",
        "refund-form.txt",
        "NOTICE.TXT",
    ];
    let mut msgs = vec![msg("other", 1300, &bystander())];
    for i in 0..7 {
        let text = TAX_TXT
            .replace("NAME", &capital(PEOPLE[(i + 3) % PEOPLE.len()]))
            .replace("AMOUNT", &format!("{}.{:02}", 180 + i * 17, 13 + i * 11))
            .replace("REF", &format!("TR-{}", 448_120 + i * 37));
        let z = zip(&[(entries[i], text.as_bytes())]);
        let m = Mail {
            from: format!("Revenue Office <refunds@revenue-office{i}.example>"),
            to: to(i + 3),
            subject: format!("Tax refund notification {}", 19 + i),
            body: "Your refund notice is in the attached archive.".into(),
            attachment: attach(&format!("refund_{}.zip", 300 + i), ZIP, z),
        };
        msgs.push(msg("refund", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("P attack 3", &fed, "refund");
    expect_read_in_order(
        "P attack 3",
        &fed,
        "refund",
        &[
            "eligible to receive a tax refund",
            "retained by the treasury",
            "national revenue office",
        ],
    );
}

const DEJAVU: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// `lines` drawn in DejaVu Sans at `size` px from (`x0`, `y0`) on a
/// white RGB picture.
fn draw_text_picture(lines: &[String], size: f32, x0: f32, y0: f32, w: u32, h: u32) -> RgbImage {
    use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
    let data = std::fs::read(DEJAVU).expect("DejaVu Sans");
    let font = FontRef::try_from_slice(&data).expect("a font");
    let scale = PxScale::from(size);
    let sf = font.as_scaled(scale);
    let mut img = RgbImage::from_pixel(w, h, Rgb([252, 252, 250]));
    let mut baseline = y0 + sf.ascent();
    for line in lines {
        let mut x = x0;
        let mut prev = None;
        for c in line.chars() {
            let id = sf.glyph_id(c);
            if let Some(p) = prev {
                x += sf.kern(p, id);
            }
            let glyph = id.with_scale_and_position(scale, point(x, baseline));
            x += sf.h_advance(id);
            prev = Some(id);
            if let Some(og) = font.outline_glyph(glyph) {
                let b = og.px_bounds();
                og.draw(|gx, gy, cov| {
                    let px = b.min.x as i32 + gx as i32;
                    let py = b.min.y as i32 + gy as i32;
                    if px >= 0 && py >= 0 && (px as u32) < w && (py as u32) < h {
                        let v = (255.0 * (1.0 - cov.clamp(0.0, 1.0))) as u8;
                        let p = img.get_pixel_mut(px as u32, py as u32);
                        for ch in p.0.iter_mut() {
                            *ch = (*ch).min(v);
                        }
                    }
                });
            }
        }
        baseline += sf.height() + sf.line_gap() + size * 0.35;
    }
    img
}

const SUSPENDED: [&str; 12] = [
    "Dear NAME,",
    "your account has been suspended because we",
    "noticed unusual activity during the last week.",
    "Please verify your account details within",
    "twenty four hours using the secure form,",
    "otherwise all services will remain blocked",
    "and your stored files will be deleted forever.",
    "We take the security of your data seriously",
    "and apologise for any inconvenience caused",
    "by this temporary measure on your account.",
    "Reference: REF",
    "Customer protection department",
];

/// P attack 4 (OCR): a lure drawn into a picture, drawn anew per copy, in
/// a PDF as FlateDecode RGB samples.
#[test]
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font"
)]
fn picture_attack_ocr_drawn_text_in_pdf() {
    let mut msgs = vec![msg("other", 1400, &bystander())];
    for i in 0..7 {
        let lines: Vec<String> = SUSPENDED
            .iter()
            .map(|l| {
                l.replace("NAME", &capital(PEOPLE[(i + 1) % PEOPLE.len()]))
                    .replace("REF", &format!("AC-{}", 70_310 + i * 29))
            })
            .collect();
        let size = 22.0 + i as f32 * 0.8;
        let (w, h) = (900, 640);
        let img = draw_text_picture(
            &lines,
            size,
            30.0 + i as f32 * 7.0,
            24.0 + i as f32 * 5.0,
            w,
            h,
        );
        let img = scanned_rgb(&img, 1400 + i as u64, 2, 0);
        let pdf = testkit::pdf_of_picture(w, h, "FlateDecode", "DeviceRGB", &zlib(img.as_raw()));
        let m = Mail {
            from: format!("Account Protection <protect@acct-safety{i}.example>"),
            to: to(i + 1),
            subject: format!("Account suspended {}", 900 + i),
            body: "See the attached letter.".into(),
            attachment: attach("letter.pdf", PDF, pdf),
        };
        msgs.push(msg("ocr", i + 1, &m));
    }
    let fed = replay(msgs);
    expect_campaign("P attack 4", &fed, "ocr");
    expect_read_in_order(
        "P attack 4",
        &fed,
        "ocr",
        &[
            "your account has been suspended",
            "verify your account details",
        ],
    );
}

/// P attack 5: a flyer picture inside a zip archive, re-encoded per copy.
#[test]
fn picture_attack_picture_in_zip() {
    let flyer = lure_flyer();
    let mut msgs = vec![msg("other", 1500, &bystander())];
    for i in 0..7 {
        let img = scanned_rgb(&flyer, 500 + i as u64, 3, 1 - i as i32);
        let z = zip(&[("flyer.jpg", &jpeg_rgb(&img, 90 - 6 * i as u8))]);
        let m = Mail {
            from: format!("Mega Deals <deals@mega-offers{i}.example>"),
            to: to(i + 5),
            subject: "Exclusive offer".into(),
            body: "Our new offer is attached.".into(),
            attachment: attach("offer.zip", ZIP, z),
        };
        msgs.push(msg("flyer", i + 1, &m));
    }
    let fed = replay(msgs);
    for f in fed.iter().filter(|f| f.group == "flyer") {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P attack 5: #{} has no picture read from its zip\n{}",
            f.rec.n,
            explain("P attack 5", &fed)
        );
    }
    expect_campaign("P attack 5", &fed, "flyer");
}

// ---------------------------------------------------------------------
// Class P: ordinary cases
// ---------------------------------------------------------------------

/// P ordinary 1: five different scanned documents from five offices'
/// scanners, the same subject and body.
#[test]
fn picture_ordinary_different_scans_apart() {
    let docs: [(&'static str, Vec<u8>); 5] = [
        (
            "letter",
            scan_pdf_jpeg(&scanned(&doc_letter(), 1, 3, 0), 85),
        ),
        ("form", scan_pdf_jpeg(&scanned(&doc_form(), 2, 3, 0), 80)),
        ("receipt", scan_pdf_flate(&scanned(&doc_receipt(), 3, 3, 0))),
        ("table", scan_pdf_jpeg(&scanned(&doc_table(), 4, 3, 0), 90)),
        ("plan", scan_pdf_flate(&scanned(&doc_plan(), 5, 3, 0))),
    ];
    let mut msgs = Vec::new();
    for (i, (g, pdf)) in docs.into_iter().enumerate() {
        let m = Mail {
            from: format!("Office Scanner <scanner@office-{g}.example>"),
            to: to(i + 1),
            subject: "Scanned document".into(),
            body: "Scanned with the office multifunction printer.".into(),
            attachment: attach("scan0001.pdf", PDF, pdf),
        };
        msgs.push(msg(g, i + 1, &m));
    }
    let fed = replay(msgs);
    for f in &fed {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P ordinary 1: #{} has no picture read from its scan\n{}",
            f.rec.n,
            explain("P ordinary 1", &fed)
        );
    }
    expect_apart("P ordinary 1", &fed);
}

/// P ordinary 2: invoice PDFs with a real text layer, read by their text.
#[test]
fn picture_ordinary_text_layer_invoices_apart() {
    let invoices: [(&str, &str, Vec<&str>); 3] = [
        (
            "Fenwick Office Supply <accounts@fenwick.example>",
            "fenwick",
            vec![
                "Fenwick Office Supply - Invoice 2024-118",
                "Delivered to the accounts department on the fourth of March.",
                "Ten boxes of printer paper, two toner cartridges for the laser printer,",
                "a pack of ring binders and three desk lamps with warm white bulbs.",
                "Payment within thirty days to the account shown on our letterhead.",
            ],
        ),
        (
            "Greenfield Catering <billing@greenfield.example>",
            "catering",
            vec![
                "Greenfield Catering - Invoice 5531",
                "Lunch buffet for forty guests at the annual volunteers' meeting,",
                "including vegetarian quiche, roasted vegetables and fruit salad,",
                "coffee and tea service in the afternoon and the hire of table linen.",
                "Please transfer the amount within fourteen days of the event.",
            ],
        ),
        (
            "Brightline Electrical <office@brightline.example>",
            "electrician",
            vec![
                "Brightline Electrical - Invoice 0907",
                "Replacement of the fuse box in the basement of the workshop,",
                "installation of four new sockets in the garage and testing of",
                "all circuits with a certificate for the insurance company.",
                "Labour six hours, materials as listed on the attached sheet.",
            ],
        ),
    ];
    let mut msgs = Vec::new();
    for (i, (from, g, lines)) in invoices.iter().enumerate() {
        let m = Mail {
            from: (*from).into(),
            to: to(i + 8),
            subject: "Invoice".into(),
            body: "Please find our invoice attached.".into(),
            attachment: attach("invoice.pdf", PDF, testkit::pdf(lines, "")),
        };
        msgs.push(msg(g, i + 1, &m));
    }
    msgs.push(msg("other", 9, &bystander()));
    let fed = replay(msgs);
    expect_read_in_order(
        "P ordinary 2",
        &fed,
        "fenwick",
        &["ten boxes of printer paper", "three desk lamps"],
    );
    expect_read_in_order(
        "P ordinary 2",
        &fed,
        "catering",
        &["lunch buffet for forty"],
    );
    expect_read_in_order(
        "P ordinary 2",
        &fed,
        "electrician",
        &["replacement of the fuse box"],
    );
    expect_apart("P ordinary 2", &fed);
}

/// The letterhead logo of P ordinary 3.
fn company_logo() -> Vec<u8> {
    let mut rng = Rng::new(8100);
    let mut g = GrayImage::from_pixel(240, 80, Luma([255]));
    disc(&mut g, 40, 40, 30, 30);
    disc(&mut g, 40, 40, 14, 255);
    text_row(&mut g, &mut rng, 84, 26, 140, 16, 40);
    text_row(&mut g, &mut rng, 84, 52, 100, 6, 120);
    png_gray(&g)
}

/// P ordinary 3: the same letterhead logo in different Word documents.
#[test]
fn picture_ordinary_same_logo_different_documents() {
    let logo = company_logo();
    let docs: [(&str, &str, &str, Vec<&str>); 5] = [
        (
            "Anna Weber <anna@stonebridge.example>",
            "Meeting notes",
            "notes",
            vec![
                "Minutes of the project meeting on Monday.",
                "The supplier confirmed delivery of the steel beams for week twelve. The \
                 crane must be booked two days in advance, and the site office will move to \
                 the north gate while the foundations of the second hall are poured.",
            ],
        ),
        (
            "Ben Okafor <ben@stonebridge.example>",
            "Holiday request",
            "holiday",
            vec!["Holiday request: 14 to 25 August. Cover arranged with Tim."],
        ),
        (
            "Clara Hoff <clara@stonebridge.example>",
            "Offer for the warehouse extension",
            "offer",
            vec![
                "Offer for the extension of the warehouse in Rotterdam.",
                "We propose a steel frame hall of two thousand square metres with a \
                 loading dock for four lorries, insulated roof panels and a sprinkler \
                 system. Construction time is estimated at seven months.",
            ],
        ),
        (
            "Dev Patel <dev@stonebridge.example>",
            "Safety briefing",
            "safety",
            vec!["Safety briefing on Thursday 8:00 in the canteen. Attendance mandatory."],
        ),
        (
            "Eva Lind <eva@stonebridge.example>",
            "Reference letter",
            "reference",
            vec![
                "Reference letter for Mr. Jonas Berg.",
                "Mr. Berg worked with us as a site engineer for four years. He supervised \
                 the concrete works of three office buildings, trained our apprentices and \
                 was always reliable, calm under pressure and liked by the crews.",
            ],
        ),
    ];
    let mut msgs = Vec::new();
    for (i, (from, subject, g, paras)) in docs.iter().enumerate() {
        let m = Mail {
            from: (*from).into(),
            to: to(i + 2),
            subject: (*subject).into(),
            body: "Please see the attached document.".into(),
            attachment: attach(
                &format!("{g}.docx"),
                DOCX,
                docx_with_picture(paras, "image1.png", &logo),
            ),
        };
        msgs.push(msg(g, i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read_in_order("P ordinary 3", &fed, "offer", &["steel frame hall"]);
    expect_apart("P ordinary 3", &fed);
}

/// A photo-like picture of one of five scenes.
fn photo(scene: usize, seed: u64) -> RgbImage {
    let mut rng = Rng::new(seed);
    let (w, h) = (320u32, 240u32);
    let mut img = RgbImage::new(w, h);
    for y in 0..h {
        for x in 0..w {
            let t = y as f32 / h as f32;
            let p = match scene {
                // Beach: sky over sea over sand.
                0 => {
                    if t < 0.45 {
                        Rgb([120, 170, (230.0 - 60.0 * t) as u8])
                    } else if t < 0.65 {
                        Rgb([30, 90, 150])
                    } else {
                        Rgb([220, 200, 150])
                    }
                }
                // Forest: dark trunks on green.
                1 => {
                    if (x / 20).is_multiple_of(3) {
                        Rgb([70, 45, 25])
                    } else {
                        Rgb([40, (120.0 + 60.0 * t) as u8, 40])
                    }
                }
                // City at night: lit windows in dark blocks.
                2 => {
                    let block = (x / 40).is_multiple_of(2) && y > 80 + (x / 40 % 3) * 20;
                    if block && (x % 10 < 4) && (y % 12 < 5) {
                        Rgb([250, 220, 90])
                    } else if block {
                        Rgb([30, 30, 40])
                    } else {
                        Rgb([10, 10, (40.0 + 40.0 * t) as u8])
                    }
                }
                // Portrait: a face on grey.
                3 => {
                    let dx = x as f32 - 160.0;
                    let dy = y as f32 - 110.0;
                    if dx * dx / 3600.0 + dy * dy / 6400.0 < 1.0 {
                        Rgb([225, 180, 150])
                    } else if y > 190 {
                        Rgb([60, 60, 120])
                    } else {
                        Rgb([150, 150, 150])
                    }
                }
                // Snow: white slopes under grey peaks.
                _ => {
                    let peak = 120.0 - ((x as f32 / 50.0).sin() * 50.0).abs();
                    if (y as f32) < peak {
                        Rgb([190, 200, 215])
                    } else if (y as f32) < peak + 30.0 {
                        Rgb([110, 110, 120])
                    } else {
                        Rgb([245, 245, 250])
                    }
                }
            };
            img.put_pixel(x, y, p);
        }
    }
    scanned_rgb(&img, rng.next_u64(), 6, 0)
}

/// P ordinary 4: zips of different photos, and of different notes, from
/// different people.
#[test]
fn picture_ordinary_zips_of_photos_and_notes_apart() {
    let photos_a = zip(&[
        ("IMG_2041.jpg", &jpeg_rgb(&photo(0, 1), 88)),
        ("IMG_2042.jpg", &jpeg_rgb(&photo(1, 2), 88)),
    ]);
    let photos_b = zip(&[
        ("DSC0107.jpg", &jpeg_rgb(&photo(2, 3), 82)),
        ("DSC0108.jpg", &jpeg_rgb(&photo(3, 4), 82)),
    ]);
    let photos_c = zip(&[("snow.jpg", &jpeg_rgb(&photo(4, 5), 90))]);
    let notes_a = zip(&[(
        "minutes.txt",
        b"Minutes of the residents' meeting. The bicycle shed will be repaired in May, \
          the new bins arrive next week and the summer party is planned for the last \
          Saturday of June in the courtyard. Volunteers for the grill please contact Ahmed."
            .as_slice(),
    )]);
    let notes_b = zip(&[(
        "notes.txt",
        b"Packing list for the camping trip: two tents, the big cool box, head torches, \
          the camping stove with spare gas, rain ponchos and the first aid kit. Kai brings \
          the canoe, we meet at the car park at seven on Friday morning."
            .as_slice(),
    )]);
    let items = [
        (
            "Lea <lea@familymail.example>",
            "Photos from the weekend",
            "beach",
            photos_a,
        ),
        (
            "Omar <omar@mailbox.example>",
            "Photos from the weekend",
            "city",
            photos_b,
        ),
        (
            "Ruth <ruth@alpine.example>",
            "Ski holiday",
            "snow",
            photos_c,
        ),
        (
            "Ahmed <ahmed@residents.example>",
            "Meeting minutes",
            "minutes",
            notes_a,
        ),
        (
            "Kai <kai@outdoors.example>",
            "Camping trip",
            "camping",
            notes_b,
        ),
    ];
    let mut msgs = Vec::new();
    for (i, (from, subject, g, z)) in items.into_iter().enumerate() {
        let m = Mail {
            from: from.into(),
            to: to(i + 4),
            subject: subject.into(),
            body: "Here you go, see the attached archive.".into(),
            attachment: attach(&format!("{g}.zip"), ZIP, z),
        };
        msgs.push(msg(g, i + 1, &m));
    }
    let fed = replay(msgs);
    expect_read_in_order(
        "P ordinary 4",
        &fed,
        "camping",
        &["packing list for the camping trip"],
    );
    expect_read_in_order(
        "P ordinary 4",
        &fed,
        "minutes",
        &["bicycle shed will be repaired"],
    );
    expect_apart("P ordinary 4", &fed);
}

/// A chart picture: bars, a pie or a line, by `kind`.
fn chart_picture(kind: usize) -> Vec<u8> {
    let (w, h) = (400u32, 300u32);
    let mut img = RgbImage::from_pixel(w, h, Rgb([255, 255, 255]));
    let mut put = |x: u32, y: u32, c: Rgb<u8>| {
        if x < w && y < h {
            img.put_pixel(x, y, c);
        }
    };
    match kind {
        0 => {
            for (k, v) in [120u32, 200, 80, 250].iter().enumerate() {
                for x in 40 + k as u32 * 90..100 + k as u32 * 90 {
                    for y in 280 - v..280 {
                        put(x, y, Rgb([40, 90, 200]));
                    }
                }
            }
        }
        1 => {
            for y in 0..h {
                for x in 0..w {
                    let dx = x as f32 - 200.0;
                    let dy = y as f32 - 150.0;
                    if dx * dx + dy * dy < 110.0 * 110.0 {
                        let a = dy.atan2(dx);
                        let c = if a < -1.0 {
                            Rgb([220, 60, 60])
                        } else if a < 1.2 {
                            Rgb([60, 180, 90])
                        } else {
                            Rgb([240, 190, 40])
                        };
                        put(x, y, c);
                    }
                }
            }
        }
        2 => {
            for x in 20..380u32 {
                let y = 150.0 + 100.0 * ((x as f32) / 60.0).sin();
                for t in 0..5 {
                    put(x, y as u32 + t, Rgb([200, 30, 30]));
                }
            }
            for x in 20..380 {
                put(x, 280, Rgb([0, 0, 0]));
            }
        }
        _ => {
            for (k, v) in [300u32, 220, 140, 60].iter().enumerate() {
                for y in 30 + k as u32 * 65..80 + k as u32 * 65 {
                    for x in 50..50 + v {
                        put(x, y, Rgb([120, 60, 160]));
                    }
                }
            }
        }
    }
    png_rgb(&img)
}

/// P ordinary 5: four decks with different chart pictures in
/// `ppt/media/`, the same subject and body.
#[test]
fn picture_ordinary_decks_with_different_charts_apart() {
    let decks = [
        ("Nina <nina@retailco.example>", "sales", "Sales by region"),
        (
            "Paul <paul@charity.example>",
            "budget",
            "Where donations went",
        ),
        (
            "Rosa <rosa@weather-lab.example>",
            "temps",
            "Temperature over the year",
        ),
        (
            "Sven <sven@hr-dept.example>",
            "hiring",
            "Open positions by team",
        ),
    ];
    let mut msgs = Vec::new();
    for (i, (from, g, title)) in decks.iter().enumerate() {
        let m = Mail {
            from: (*from).into(),
            to: to(i + 9),
            subject: "Slides for Monday".into(),
            body: "Slides attached.".into(),
            attachment: attach(
                "slides.pptx",
                PPTX,
                pptx_with_picture(title, &chart_picture(i)),
            ),
        };
        msgs.push(msg(g, i + 1, &m));
    }
    msgs.push(msg("other", 9, &bystander()));
    let fed = replay(msgs);
    for f in fed.iter().filter(|f| f.group != "other") {
        assert!(
            !reading_of(&f.raw).pictures.is_empty(),
            "P ordinary 5: #{} has no picture read from ppt/media\n{}",
            f.rec.n,
            explain("P ordinary 5", &fed)
        );
    }
    expect_apart("P ordinary 5", &fed);
}
