//! Raw message bytes to [`BodyText`]: the only user of mail-parser.
//!
//! Input: the RFC 5322 message as received. Output: the visible text of every
//! text/plain and text/html body part (transfer encodings and charsets
//! decoded, HTML rendered by [`html::to_text`]), the Subject, link targets,
//! a hash of each attachment (perceptual for pictures: [`picture`]), and
//! the header facts normalization needs (recipient names). Work is bounded
//! by `max_parse_bytes` of input and `max_scan_bytes` of text. This module
//! never panics on input and never fails: a message mail-parser cannot read
//! becomes [`MimeOutcome::Unparsed`].

mod css;
pub mod document;
pub mod drawn;
pub mod html;
pub mod normalize;
pub mod pdf;
pub mod picture;

use base64::Engine as _;
use mail_parser::decoders::charsets::map::charset_decoder;
use mail_parser::{
    Encoding, HeaderName, Message, MessageParser, MessagePart, MimeHeaders, PartType,
};
use sha2::{Digest, Sha256};
use std::borrow::Cow;

use crate::config::ScanConfig;

/// Most attachments hashed per message.
pub const MAX_ATTACHMENTS: usize = 32;

/// Message-IDs of `In-Reply-To` and `References` a message is looked up
/// by (the sender writes them, any number: the first of `In-Reply-To` and
/// the last of `References` are the ones a reply names).
pub const MAX_ANSWERS: usize = 8;
/// Nested message/rfc822 parts followed this deep.
const MAX_NESTED: usize = 3;

/// What the engine needs from one message, before normalization.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyText {
    /// Visible text of the body parts, parts separated by blank lines.
    pub text: String,
    pub subject: Option<String>,
    /// Link targets found in HTML parts (plain-text URLs stay in `text`).
    pub urls: Vec<String>,
    /// Image sources of HTML parts (`<img src>`), in order.
    pub images: Vec<String>,
    /// Shown pictures written into HTML parts (`data:` URIs), read as
    /// attached pictures are once the parts are walked.
    pub data_pictures: Vec<String>,
    /// A hash of each attachment, in MIME order: of a picture's perceptual
    /// hash ([`picture`]) when it has one, else SHA-256 of its decoded
    /// bytes.
    pub attachments: Vec<[u8; 32]>,
    /// The perceptual hash of each attached picture that has one
    /// ([`picture`]), in MIME order: a short message is compared near by
    /// them (the daemon's `engine::analysis`).
    pub pictures: Vec<u64>,
    /// Display names and addresses of To/Cc, for stripping personalization.
    pub recipients: Vec<String>,
    pub from_domain: Option<String>,
    pub message_id: Option<String>,
    /// The Message-IDs it answers (`In-Reply-To`, `References`): the parties of a
    /// conversation (`engine::party`).
    pub answers: Vec<String>,
    /// The message's own header section says it comes from a mailing list
    /// or is bulk: List-Id, List-Post, List-Unsubscribe, or Precedence:
    /// list or bulk.
    pub list: bool,
    /// It has a List-Id field (RFC 2919): the mark of a list's post, which
    /// with an envelope sender counts as one delivery however many
    /// transactions it takes (`engine::decide::observe`).
    pub list_id: bool,
    /// A reply or a forward: an `In-Reply-To` or `References` field, or a
    /// subject that starts with a reply or forward prefix
    /// ([`reply_subject`]). Such a message quotes: the containment rule
    /// holds it to stricter bounds (`engine::link::Rule::contains`).
    pub reply: bool,
    /// Text or input was cut at a configured bound.
    pub truncated: bool,
    /// A reader stopped at its share of the message's work budget (the
    /// PDFs' pages, [`pdf::WORK_BYTES`]): what it read so far is kept, and
    /// the verdict says the message was read partly.
    pub partial: bool,
    /// A shallow reading ([`Depth::Shallow`]) left a PDF or a picture to
    /// the deep one.
    pub deferred: bool,
    /// A picture's text was left to another process
    /// ([`ScanConfig::ocr_elsewhere`]).
    pub wants_ocr: bool,
    /// The recognizer stopped at its deadline on a picture.
    pub ocr_stopped: bool,
    /// mail-parser reported a decoding problem in some part.
    pub encoding_problem: bool,
}

/// Result of reading a message.
// (Made once per message and taken apart at once: boxing the body would
// only add an allocation.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MimeOutcome {
    Parsed(BodyText),
    /// mail-parser found no message in the bytes (empty, or no header block).
    Unparsed,
}

/// `raw` in wire form, every bare LF made CRLF (RFC 5322 section 2.3), cut
/// at `max` bytes; and whether anything was cut. Borrowed when `raw`
/// already has CRLF line ends.
///
/// Implementation note: mail-parser 0.11 misreads some LF-only messages:
/// a date ending in a two-letter zone (`UT`) takes the LF with it, so the
/// next header, or the blank line and the first body paragraph, become
/// part of the date. Parsing what the MTA would send
/// avoids it, and gives an mbox message (LF) the same fingerprint as the
/// same message from the milter (CRLF) by construction.
fn wire_form(raw: &[u8], max: usize) -> (Cow<'_, [u8]>, bool) {
    // Every input byte gives at least one output byte, so the first `max`
    // input bytes are all that the bound can use: copy no more than them,
    // however large the message.
    let head = raw.get(..max).unwrap_or(raw);
    let is_bare = |i: &usize| *i == 0 || raw.get(i - 1) != Some(&b'\r');
    let mut bare = memchr::memchr_iter(b'\n', head).filter(is_bare).peekable();
    if bare.peek().is_none() {
        return (Cow::Borrowed(head), head.len() < raw.len());
    }
    let mut out = Vec::with_capacity(head.len() + head.len() / 32 + 16);
    let mut start = 0;
    for i in bare {
        out.extend_from_slice(head.get(start..i).unwrap_or_default());
        out.extend_from_slice(b"\r\n");
        start = i + 1;
    }
    out.extend_from_slice(head.get(start..).unwrap_or_default());
    // A CRLF made at the bound may overshoot it.
    let cut = head.len() < raw.len() || out.len() > max;
    out.truncate(max);
    (Cow::Owned(out), cut)
}

/// The parser `extract` uses: the headers it reads (MIME, Subject,
/// Message-ID, In-Reply-To, References, From, To, Cc) parsed, every other
/// header skipped. Parsing
/// Received and Date headers it never reads cost about a tenth of the
/// engine's time on real mail.
fn parser() -> &'static MessageParser {
    static PARSER: std::sync::OnceLock<MessageParser> = std::sync::OnceLock::new();
    PARSER.get_or_init(|| {
        MessageParser::new()
            .with_mime_headers()
            .header_text(HeaderName::Subject)
            .header_id(HeaderName::MessageId)
            .header_id(HeaderName::InReplyTo)
            .header_id(HeaderName::References)
            .header_address(HeaderName::From)
            .header_address(HeaderName::To)
            .header_address(HeaderName::Cc)
            .default_header_ignore()
    })
}

/// Parses `raw` and extracts its text, bounded by `scan`.
pub fn extract(raw: &[u8], scan: &ScanConfig) -> MimeOutcome {
    extract_to(raw, scan, Depth::Deep)
}

/// How far [`extract_to`] reads attachments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Everything: the text of PDFs under a short body, the perceptual
    /// hash of pictures.
    Deep,
    /// What cannot take long or fail: headers, text and HTML parts, and
    /// every attachment hashed by its bytes. What the deep readers would
    /// read is noted ([`BodyText::deferred`]).
    Shallow,
}

/// [`extract`] to `depth`: a worker reads a message shallow first, then
/// deep when it has something the deep readers read, so that a deep
/// reading that dies or hangs still leaves the message judged on the
/// rest (the daemon's `worker`).
pub fn extract_to(raw: &[u8], scan: &ScanConfig, depth: Depth) -> MimeOutcome {
    let (input, truncated) = wire_form(raw, scan.max_parse_bytes);
    let Some(message) = parser().parse(&input[..]) else {
        return MimeOutcome::Unparsed;
    };
    if message.headers().is_empty() && message.parts.len() <= 1 && message.raw_message.is_empty() {
        return MimeOutcome::Unparsed;
    }
    let (list, list_id, reply) = header_marks(&message);
    let mut body = BodyText {
        subject: message.subject().map(|s| at_most_chars(s, 512)),
        message_id: message_id(&message),
        answers: answers(&message),
        list,
        list_id,
        reply: reply || message.subject().is_some_and(reply_subject),
        truncated,
        ..BodyText::default()
    };
    for addr in message
        .to()
        .into_iter()
        .chain(message.cc())
        .flat_map(|a| a.iter())
        .take(64)
    {
        if let Some(name) = &addr.name {
            body.recipients.push(name.to_string());
        }
        if let Some(address) = &addr.address {
            body.recipients.push(address.to_string());
        }
    }
    body.from_domain = message
        .from()
        .and_then(|a| a.first())
        .and_then(|a| a.address.as_deref())
        .and_then(|a| a.rsplit_once('@'))
        .map(|(_, d)| d.trim_end_matches('>').to_ascii_lowercase());
    let deep = depth == Depth::Deep;
    // The recognizer is the process's (`crate::ocr::provide`): this crate
    // loads none.
    let ocr = match &scan.ocr {
        _ if !deep => picture::Ocr::Off,
        Some(_) if scan.ocr_elsewhere => picture::Ocr::Elsewhere,
        Some(_) if crate::ocr::provided().is_some() => picture::Ocr::Here,
        _ => picture::Ocr::Off,
    };
    let mut spend = Spend {
        deep,
        pictures: picture::Budget::new(ocr),
        ..Spend::default()
    };
    collect(&message, scan.max_scan_bytes, &mut body, &mut spend, 0);
    body.partial |= spend.pictures.spent;
    body.wants_ocr = spend.pictures.wants_ocr;
    body.ocr_stopped = spend.pictures.stopped;
    body.deferred = spend.deferred;
    MimeOutcome::Parsed(body)
}

/// The Message-ID as written between its angle brackets, unfolded: no
/// CR, LF or other whitespace (a long id folded over two lines is one id),
/// at most 512 characters. mail-parser's reading when it has one, else the
/// raw field's value (an id mail-parser cannot read is still the id an
/// operator searches the logs for).
fn message_id(message: &Message<'_>) -> Option<String> {
    let raw = match message.message_id() {
        Some(id) => id.to_owned(),
        None => {
            let field = message
                .headers()
                .iter()
                .find(|h| h.name == HeaderName::MessageId)?;
            let value = message
                .raw_message
                .get(field.offset_start as usize..field.offset_end as usize)?;
            String::from_utf8_lossy(value).into_owned()
        }
    };
    let unfolded: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    let id = unfolded.trim_start_matches('<').trim_end_matches('>');
    (!id.is_empty()).then(|| at_most_chars(id, 512))
}

/// The Message-IDs a message answers, as [`message_id`] keeps its own:
/// those of `In-Reply-To`, then the last ones of `References` (the
/// messages it most likely answers), at most
/// [`MAX_ANSWERS`] in all, each once. The sender
/// writes them: they only make a message that reaches new people a
/// forward instead of a copy (the daemon's `engine::party`).
fn answers(message: &Message<'_>) -> Vec<String> {
    let replied = message.in_reply_to().as_text_list().unwrap_or_default();
    let references = message.references().as_text_list().unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for id in replied
        .iter()
        .take(MAX_ANSWERS)
        .chain(references.iter().rev().take(MAX_ANSWERS))
    {
        let unfolded: String = id.chars().filter(|c| !c.is_whitespace()).collect();
        let id = at_most_chars(unfolded.trim_start_matches('<').trim_end_matches('>'), 512);
        if out.len() >= MAX_ANSWERS {
            break;
        }
        if !id.is_empty() && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The message's own header section says it was sent by a mailing list or
/// as bulk: a `List-Id`, `List-Post` or `List-Unsubscribe` field (RFC 2919,
/// RFC 2369), or `Precedence: list` or `bulk` (a convention list managers
/// and bulk senders keep; RFC 3834 section 2 mentions it); and whether a
/// `List-Id` is among them ([`BodyText::list_id`]); and whether an
/// `In-Reply-To` or `References` field is ([`BodyText::reply`]). One pass
/// over the fields. Any sender can write these fields: the list class only
/// changes the action taken, never whether the message counts (see
/// `engine::verdict_of`), a list post counts as one delivery only up to
/// the recipients one transaction may have, and a reply is only held to
/// stricter bounds.
fn header_marks(message: &Message<'_>) -> (bool, bool, bool) {
    let (mut list, mut list_id, mut reply) = (false, false, false);
    for h in message.headers() {
        let mark = match &h.name {
            HeaderName::InReplyTo | HeaderName::References => {
                reply = true;
                false
            }
            HeaderName::ListId => {
                list_id = true;
                true
            }
            HeaderName::ListPost | HeaderName::ListUnsubscribe => true,
            HeaderName::Other(name) if name.eq_ignore_ascii_case("precedence") => message
                .raw_message
                .get(h.offset_start as usize..h.offset_end as usize)
                .is_some_and(|v| {
                    let v = String::from_utf8_lossy(v);
                    let v = v.trim();
                    v.eq_ignore_ascii_case("list") || v.eq_ignore_ascii_case("bulk")
                }),
            _ => false,
        };
        list |= mark;
    }
    (list, list_id, reply)
}

/// Whether a subject starts with a reply or forward prefix (`Re:`,
/// `Fwd:`, `AW:`, `SV:`, `WG:`, `Re[2]:` ...), after any `[list]` tags.
pub fn reply_subject(subject: &str) -> bool {
    let mut s = subject.trim_start();
    // At most a few tags: the subject is the sender's, any length.
    for _ in 0..4 {
        match s.strip_prefix('[').and_then(|t| t.split_once(']')) {
            Some((_, rest)) => s = rest.trim_start(),
            None => break,
        }
    }
    let Some((word, _)) = s.split_once(':') else {
        return false;
    };
    // `Re[2]`, `Re^2`: the count of some clients.
    let word = word.split(['[', '^']).next().unwrap_or_default().trim();
    const PREFIXES: &[&str] = &[
        "re", "fw", "fwd", "aw", "wg", "sv", "vs", "antw", "tr", "rv",
    ];
    PREFIXES.iter().any(|p| word.eq_ignore_ascii_case(p))
}

/// The first `n` characters of `s` (all of it when its bytes are no more:
/// a character is at least one byte).
fn at_most_chars(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_owned();
    }
    s.chars().take(n).collect()
}

/// PDFs read per message, the first ones: each costs up to tens of
/// milliseconds within its bounds ([`pdf`]), and a campaign gains nothing
/// by attaching more.
pub const MAX_PDFS: usize = 2;

/// What one message may still spend on reading attachments: its work
/// budget, shared by every part (nested messages included).
#[derive(Debug)]
struct Spend {
    pictures: picture::Budget,
    pdfs: usize,
    /// Bytes of PDF page content and font maps still to parse
    /// ([`pdf::WORK_BYTES`]).
    pdf_work: usize,
    /// Documents' share ([`document::Budget`]).
    docs: document::Budget,
    /// PDFs, documents and pictures are read ([`Depth::Deep`]); else they
    /// are hashed and `deferred` says one was there.
    deep: bool,
    deferred: bool,
    /// The page fonts of the message's HTML so far ([`drawn`]).
    fonts: Vec<Vec<u8>>,
}

impl Default for Spend {
    fn default() -> Self {
        Spend {
            pictures: picture::Budget::default(),
            pdfs: 0,
            pdf_work: pdf::WORK_BYTES,
            docs: document::Budget::default(),
            deep: true,
            deferred: false,
            fonts: Vec::new(),
        }
    }
}

/// Adds the text, URLs and attachment hashes of `message` to `body`;
/// `spend` is what the whole message may still spend on attachments.
fn collect(
    message: &Message<'_>,
    limit: usize,
    body: &mut BodyText,
    spend: &mut Spend,
    depth: usize,
) {
    let before = body.text.len();
    for &id in &message.html_body {
        if let Some(part) = message.parts.get(id as usize) {
            add_part(message, part, limit, body, spend);
        }
    }
    // Some broken messages (a missing closing boundary, odd content types)
    // leave html_body empty although text parts exist: take every text part.
    let every_text_part = body.text.len() == before;
    // Attached text is read only under a body too short to be the message
    // (fewer words than HTML's visible bound): otherwise an attached file
    // of junk, or a text part no client shows, would dilute the text.
    // (Counted only when there is such an attachment.)
    let text_attachment = message.attachments.iter().any(|&id| {
        message
            .parts
            .get(id as usize)
            .is_some_and(|p| match &p.body {
                PartType::Text(_) | PartType::Html(_) => true,
                PartType::Binary(b) | PartType::InlineBinary(b) => document::sniff(b).is_some(),
                _ => false,
            })
    });
    // (Words are counted only when there are attachments.)
    let short_text = !message.attachments.is_empty() && {
        let own = body.text.get(before..).unwrap_or("");
        html::count_words_upto(own, html::MIN_VISIBLE_WORDS) < html::MIN_VISIBLE_WORDS
    };
    let short_body = text_attachment && short_text;
    if every_text_part {
        // (Not again the ones read above, which gave no text but may have
        // given pictures and links: found by a helper's cases, a page of
        // pictures counted each picture twice.)
        for (i, part) in message.parts.iter().enumerate() {
            let read_above = message.html_body.iter().any(|&id| id as usize == i);
            if !read_above && matches!(part.body, PartType::Text(_) | PartType::Html(_)) {
                add_part(message, part, limit, body, spend);
            }
        }
    }
    // The passwords the message states, for its encrypted archives
    // (`document::stated_passwords`): its own text's, then its subject's.
    if short_body && spend.docs.passwords.len() < document::MAX_PASSWORDS {
        let own = body.text.get(before..).unwrap_or("");
        let subject = if depth == 0 {
            message.subject().unwrap_or("")
        } else {
            ""
        };
        for pw in document::stated_passwords(own)
            .into_iter()
            .chain(document::stated_passwords(subject))
        {
            if spend.docs.passwords.len() < document::MAX_PASSWORDS
                && !spend.docs.passwords.contains(&pw)
            {
                spend.docs.passwords.push(pw);
            }
        }
    }
    let read = Reading {
        limit,
        short_text,
        short_body: short_body && !every_text_part,
        depth,
    };
    for &id in &message.attachments {
        let Some(part) = message.parts.get(id as usize) else {
            continue;
        };
        add_attachment(message, part, &read, body, spend);
        body.encoding_problem |= part.is_encoding_problem;
    }
    add_data_pictures(before, limit, body, spend);
    for part in &message.parts {
        body.encoding_problem |= part.is_encoding_problem;
    }
}

/// What [`add_attachment`] needs of the message around the attachment.
struct Reading {
    limit: usize,
    /// The message's own text is short: its pictures are searched for QR
    /// codes.
    short_text: bool,
    /// Its body is too short to be the message: attached documents and
    /// pages are read as the body.
    short_body: bool,
    /// Nesting of the message the attachment is in.
    depth: usize,
}

/// Reads or hashes one attachment of `message` (see [`collect`]).
fn add_attachment(
    message: &Message<'_>,
    part: &MessagePart<'_>,
    read: &Reading,
    body: &mut BodyText,
    spend: &mut Spend,
) {
    let (limit, short_text, depth) = (read.limit, read.short_text, read.depth);
    match &part.body {
        // A document (a PDF, an archive, an Office file, a page, ...:
        // [`document`]) under a short body is read as the body is, as
        // an attached page is (below); one without text is hashed.
        PartType::Binary(b) | PartType::InlineBinary(b)
            if read.short_body && add_document(b, limit, body, spend, 0, depth) => {}
        PartType::Binary(b) | PartType::InlineBinary(b)
            if body.attachments.len() < MAX_ATTACHMENTS && !b.is_empty() =>
        {
            add_picture(
                b,
                attachment_sha256(part, b),
                short_text,
                limit,
                body,
                spend,
            );
        }
        // A text or HTML attachment under a short body is read as the
        // body is: a campaign must not hide its text in an attached page
        // under a one-line body ("see the attached invoice"). Its text
        // follows the body's, within the same `max_scan_bytes`. Only
        // text/plain and text/html: a client shows those.
        PartType::Text(t) | PartType::Html(t) if read.short_body && plain_or_html(part) => {
            add_part(message, part, limit, body, spend);
            if spend.deep {
                add_smuggled(t, limit, body, spend);
            }
        }
        // Other attached text a client or desktop opens (a calendar
        // invitation, a vCard, an SVG or RTF declared as text), told by
        // its bytes.
        PartType::Text(t)
            if read.short_body && add_document(t.as_bytes(), limit, body, spend, 0, depth) => {}
        PartType::Message(inner) if depth < MAX_NESTED => {
            collect(inner, limit, body, spend, depth + 1)
        }
        _ => {}
    }
}

/// An attached picture or one written into the page (`bytes`; `exact`:
/// its hash as any attachment's): its anchor among the attachments, its
/// perceptual hash, and under a short text (`short`) its QR codes or its
/// text ([`picture::read`]). A shallow reading leaves it to the deep one.
fn add_picture(
    bytes: &[u8],
    exact: [u8; 32],
    short: bool,
    limit: usize,
    body: &mut BodyText,
    spend: &mut Spend,
) {
    let (hash, picture) = if spend.deep {
        let read = picture::read(bytes, &mut spend.pictures, short);
        let (hash, picture) = match read.hash {
            Some(h) => (picture_anchor(h), Some(h)),
            None => (exact, None),
        };
        if let Some(text) = read.text {
            // A picture of text (image spam) is its text: it is compared
            // as the body is.
            new_paragraph(body);
            push_plain(&text, limit, body);
        }
        if read.codes.is_empty() {
            (hash, picture)
        } else {
            // A QR code is compared by what it says, not by its pixels
            // (each copy draws its own link).
            let anchor = code_anchor(&read.codes);
            add_codes(read.codes, limit, body);
            (anchor, None)
        }
    } else {
        spend.deferred |= picture::is_picture(bytes);
        (exact, None)
    };
    body.attachments.push(hash);
    body.pictures.extend(picture);
}

/// The pictures written into the message's HTML (`data:image/...;base64,`)
/// read as attached ones, after them; under a short text (the words of the
/// body from `before`) their QR codes or text too. One that is not base64
/// or not a picture counts as nothing.
fn add_data_pictures(before: usize, limit: usize, body: &mut BodyText, spend: &mut Spend) {
    let data = std::mem::take(&mut body.data_pictures);
    if data.is_empty() {
        return;
    }
    let own = body.text.get(before..).unwrap_or("");
    let short = html::count_words_upto(own, html::MIN_VISIBLE_WORDS) < html::MIN_VISIBLE_WORDS;
    for uri in data {
        if body.attachments.len() >= MAX_ATTACHMENTS {
            break;
        }
        let Some(bytes) = data_uri_bytes(&uri) else {
            continue;
        };
        let exact: [u8; 32] = Sha256::digest(&bytes).into();
        add_picture(&bytes, exact, short, limit, body, spend);
    }
}

/// The bytes of a `data:` URI written in base64 (`data:image/png;base64,`),
/// white space in the payload skipped.
pub(crate) fn data_uri_bytes(uri: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let (head, payload) = uri.split_once(',')?;
    if !head.to_ascii_lowercase().ends_with(";base64") {
        return None;
    }
    let clean: Vec<u8> = payload
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(clean).ok()
}

fn add_part(
    message: &Message<'_>,
    part: &MessagePart<'_>,
    limit: usize,
    body: &mut BodyText,
    spend: &mut Spend,
) {
    if body.text.len() >= limit {
        body.truncated = true;
        return;
    }
    if !body.text.is_empty() {
        body.text.push_str("\n\n");
    }
    // On a failed decode mail-parser keeps the raw text and resets
    // `encoding`, so the header says what it was.
    let declared_base64 = part
        .content_transfer_encoding()
        .is_some_and(|e| e.trim().eq_ignore_ascii_case("base64"));
    let redecoded =
        if part.is_encoding_problem && (part.encoding == Encoding::Base64 || declared_base64) {
            lenient_base64_text(message, part)
        } else {
            None
        };
    let content: Option<(bool, &str)> = match (&redecoded, &part.body) {
        (Some(t), PartType::Html(_)) => Some((true, t.as_ref())),
        (Some(t), _) => Some((false, t.as_ref())),
        (None, PartType::Html(h)) => Some((true, h.as_ref())),
        (None, PartType::Text(t)) => Some((false, t.as_ref())),
        _ => None,
    };
    // Real spam declares HTML as text/plain; a reader's client renders it.
    let content = content.map(|(is_html, t)| (is_html || looks_like_html(t), t));
    match content {
        Some((true, html)) => add_html(html, limit, body, spend),
        Some((false, text)) => push_plain(text, limit, body),
        _ => {}
    }
    if body.text.len() >= limit {
        body.truncated = true;
    }
}

/// Renders `html` onto the body's text, its links and pictures onto the
/// body's; text set in the page's own fonts is read as they draw it
/// ([`drawn`]; in the deep reading).
fn add_html(html: &str, limit: usize, body: &mut BodyText, spend: &mut Spend) {
    let start = body.text.len();
    let mut targets = html::Targets {
        urls: std::mem::take(&mut body.urls),
        images: std::mem::take(&mut body.images),
        data_pictures: std::mem::take(&mut body.data_pictures),
        drawn: true,
        fonts: std::mem::take(&mut spend.fonts),
    };
    html::to_text(html, &mut body.text, &mut targets, limit);
    body.urls = targets.urls;
    body.images = targets.images;
    body.data_pictures = targets.data_pictures;
    spend.fonts = targets.fonts;
    let runs = drawn::resolve(
        &mut body.text,
        start,
        &spend.fonts,
        &mut spend.pictures,
        spend.deep,
    );
    spend.deferred |= runs && !spend.deep;
    if body.text.len() > limit {
        let mut cut = limit;
        while !body.text.is_char_boundary(cut) {
            cut -= 1;
        }
        body.text.truncate(cut);
        body.truncated = true;
    }
}

/// Renders the pages smuggled in an attached page
/// ([`document::smuggled`]), as its browser would show them, and those
/// smuggled in them, two deep.
fn add_smuggled(page: &str, limit: usize, body: &mut BodyText, spend: &mut Spend) {
    let mut pages = document::smuggled(page, &mut spend.docs);
    for round in 0..2 {
        let mut inner = Vec::new();
        for p in &pages {
            new_paragraph(body);
            if p.trim_start().starts_with('<') {
                add_html(p, limit, body, spend);
            } else {
                push_plain(p, limit, body);
            }
            if round == 0 {
                inner.extend(document::smuggled(p, &mut spend.docs));
            }
        }
        pages = inner;
    }
    body.partial |= spend.docs.cut;
}

/// Ends the body's text with a paragraph break, unless it is empty or
/// already ends with one: what a document's text starts with.
fn new_paragraph(body: &mut BodyText) {
    if !body.text.is_empty() && !body.text.ends_with("\n\n") {
        body.text.push_str("\n\n");
    }
}

/// Appends `text` to the body's, cut at `limit`.
fn push_plain(text: &str, limit: usize, body: &mut BodyText) {
    let room = limit.saturating_sub(body.text.len());
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        body.truncated = true;
    }
    body.text.push_str(text.get(..end).unwrap_or(""));
}

/// Appends the text of the document in `bytes` ([`document`]: its format
/// told by its bytes) to the body, within `limit` and the message's work
/// budget in `spend`; false when it is no document or gave neither text
/// nor pictures. `depth` is the archive depth, `nested` the message depth.
fn add_document(
    bytes: &[u8],
    limit: usize,
    body: &mut BodyText,
    spend: &mut Spend,
    depth: usize,
    nested: usize,
) -> bool {
    let Some(format) = document::sniff(bytes) else {
        return false;
    };
    if !spend.deep {
        spend.deferred = true;
        return false;
    }
    // A document read as it is (not a PDF, which has its own share, nor
    // an archive, whose content is taken as it is decompressed) takes its
    // bytes from the budget, once, cut to what is left: an archive's entry
    // comes charged ([`document::read`]).
    let bytes = match format {
        _ if depth > 0 => bytes,
        document::Format::Pdf | document::Format::Zip | document::Format::Gzip => bytes,
        _ => {
            let n = spend.docs.take_upto(bytes.len());
            body.partial |= spend.docs.cut;
            bytes.get(..n).unwrap_or_default()
        }
    };
    if bytes.is_empty() {
        return false;
    }
    if body.text.len() >= limit {
        body.truncated = true;
        return true;
    }
    let before = body.text.len();
    let pictures_before = body.attachments.len();
    match format {
        document::Format::Pdf => {
            return spend.pdfs < MAX_PDFS && add_pdf_text(bytes, limit, body, spend);
        }
        document::Format::Html => {
            new_paragraph(body);
            let page = String::from_utf8_lossy(bytes);
            add_html(&page, limit, body, spend);
            add_smuggled(&page, limit, body, spend);
        }
        document::Format::Message if nested < MAX_NESTED => {
            if let Some(inner) = parser().parse(bytes) {
                collect(&inner, limit, body, spend, nested + 1);
            }
        }
        _ => {
            for piece in document::read(bytes, format, depth, &mut spend.docs) {
                match piece {
                    document::Piece::Text(t) => {
                        new_paragraph(body);
                        push_plain(&t, limit, body);
                    }
                    document::Piece::Html(h) => {
                        new_paragraph(body);
                        add_html(&h, limit, body, spend);
                    }
                    document::Piece::Link(u) => {
                        if body.urls.len() < html::MAX_URLS {
                            body.urls.push(u.chars().take(2048).collect());
                        }
                    }
                    document::Piece::Inner { bytes, depth } => {
                        add_inner(&bytes, limit, body, spend, depth, nested);
                    }
                }
            }
        }
    }
    body.partial |= spend.docs.cut;
    if body.text.len() >= limit {
        body.truncated = true;
    }
    let read = body.text.get(before..).unwrap_or("");
    read.trim().is_empty().then(|| body.text.truncate(before));
    // Its pictures read (a document that is one picture) stand for it as
    // its text would: the container's own bytes, which change with every
    // copy's picture, are not an anchor beside them (found by a helper's
    // cases: a picture in a zip or a Word file kept each copy apart).
    body.text.len() > before || body.attachments.len() > pictures_before
}

/// An archive's entry, as a desktop opens it: a document ([`add_document`]),
/// a picture (read as an attached one: a document's pictures, a scan in a
/// zip), or plain text (a `.txt` in a zip: Notepad shows it).
fn add_inner(
    bytes: &[u8],
    limit: usize,
    body: &mut BodyText,
    spend: &mut Spend,
    depth: usize,
    nested: usize,
) {
    if document::sniff(bytes).is_some() {
        add_document(bytes, limit, body, spend, depth, nested);
    } else if picture::is_picture(bytes) {
        if body.attachments.len() < MAX_ATTACHMENTS {
            let exact: [u8; 32] = Sha256::digest(bytes).into();
            add_picture(bytes, exact, true, limit, body, spend);
        }
    } else if let Some(text) = plain_text(bytes) {
        new_paragraph(body);
        push_plain(&text, limit, body);
    }
}

/// `bytes` as plain text when they are: UTF-8 (or, failing that, Windows
/// Latin-1 as Notepad reads it) without NUL, nine in ten characters
/// printable or white space. Junk entries are not text.
fn plain_text(bytes: &[u8]) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    let (mut shown, mut all) = (0usize, 0usize);
    for c in text.chars() {
        all += 1;
        shown += usize::from(!c.is_control() || c.is_whitespace());
    }
    (all > 0 && shown * 10 >= all * 9 && text.split_whitespace().next().is_some()).then_some(text)
}

/// Appends the text of the PDF in `bytes` ([`pdf`]) to the body, within
/// `limit` and the PDF work left in `spend`; false when it is no PDF or
/// has no text. A PDF read counts in `spend.pdfs`, text or not.
fn add_pdf_text(bytes: &[u8], limit: usize, body: &mut BodyText, spend: &mut Spend) -> bool {
    if !pdf::is_pdf(bytes) {
        return false;
    }
    if !spend.deep {
        spend.deferred = true;
        return false;
    }
    spend.pdfs += 1;
    if body.text.len() >= limit {
        body.truncated = true;
        return true;
    }
    let room = limit.saturating_sub(body.text.len() + 2);
    let read = pdf::text(bytes, room, &mut spend.pdf_work);
    body.partial |= read.cut;
    let Some(text) = read.text else {
        // A page without text is a picture (a scan, or a picture of text
        // put there to be read by a person): its pictures are read as
        // attached ones, after the message's own.
        let before = (body.text.len(), body.attachments.len());
        for p in read.pictures {
            if body.attachments.len() >= MAX_ATTACHMENTS {
                break;
            }
            let exact: [u8; 32] = Sha256::digest(&p).into();
            add_picture(&p, exact, true, limit, body, spend);
        }
        return (body.text.len(), body.attachments.len()) != before;
    };
    if !body.text.is_empty() {
        body.text.push_str("\n\n");
    }
    body.text.push_str(&text);
    if body.text.len() >= limit {
        body.truncated = true;
    }
    true
}

/// A part declared `text/plain` or `text/html` (or without a type).
fn plain_or_html(part: &MessagePart<'_>) -> bool {
    part.content_type().is_none_or(|ct| {
        ct.ctype().eq_ignore_ascii_case("text")
            && ct
                .subtype()
                .is_none_or(|s| s.eq_ignore_ascii_case("plain") || s.eq_ignore_ascii_case("html"))
    })
}

/// The exact anchor of a picture of QR codes: the hosts of their links
/// (the rest of a link is the recipient's number as often as not), or the
/// content of a code that holds no link.
fn code_anchor(codes: &[String]) -> [u8; 32] {
    let mut d = Sha256::new();
    d.update(b"bulkwatch qr code 1\0");
    for code in codes {
        let host = normalize::url_host(code).filter(|_| code.contains("://"));
        d.update(host.unwrap_or(code).to_ascii_lowercase().as_bytes());
        d.update(b"\0");
    }
    d.finalize().into()
}

/// The content of QR codes read from a picture, as a link the message
/// shows: in the text, a line each, and among the links.
fn add_codes(codes: Vec<String>, limit: usize, body: &mut BodyText) {
    for code in codes {
        if !body.text.is_empty() {
            body.text.push_str("\n\n");
        }
        push_plain(&code, limit, body);
        if body.urls.len() < html::MAX_URLS && code.contains("://") {
            body.urls.push(code);
        }
    }
}

/// The exact anchor of a picture with perceptual hash `h`.
pub fn picture_anchor(h: u64) -> [u8; 32] {
    let mut d = Sha256::new();
    d.update(b"bulkwatch picture dhash 1\0");
    d.update(h.to_le_bytes());
    d.finalize().into()
}

/// SHA-256 of an attachment's decoded bytes. Base64 carries bytes exactly;
/// every other transfer encoding (7bit, 8bit, quoted-printable, or none
/// declared) is made of lines, which end in CRLF on the wire and in LF in
/// an mbox file (RFC 2045 section 2.10, RFC 5322 section 2.3), so CRLF is
/// hashed as LF: the same attachment gives the same hash from the MTA and
/// from a file.
fn attachment_sha256(part: &MessagePart<'_>, bytes: &[u8]) -> [u8; 32] {
    if part.encoding == Encoding::Base64 {
        return Sha256::digest(bytes).into();
    }
    let mut h = Sha256::new();
    let mut rest = bytes;
    while let Some(cr) = rest.windows(2).position(|w| w == b"\r\n") {
        let (line, tail) = rest.split_at(cr);
        h.update(line);
        // Drop the CR; the LF starts the next piece.
        rest = tail.get(1..).unwrap_or_default();
    }
    h.update(rest);
    h.finalize().into()
}

/// A text part that is really an HTML document.
fn looks_like_html(text: &str) -> bool {
    let text = text.trim_start();
    // Most text parts are text: no copy of their head for them.
    if !text.starts_with('<') {
        return false;
    }
    let head: String = text
        .chars()
        .take(512)
        .collect::<String>()
        .to_ascii_lowercase();
    head.contains("<html") || head.contains("<body") || head.contains("<!doctype html")
}

/// Decodes a base64 text part that mail-parser could not decode (seen in
/// real spam: a missing closing boundary, stray characters, bad padding),
/// skipping every byte outside the base64 alphabet, then its charset.
fn lenient_base64_text(message: &Message<'_>, part: &MessagePart<'_>) -> Option<String> {
    let raw = message
        .raw_message
        .get(part.offset_body as usize..part.offset_end as usize)?;
    let mut clean: Vec<u8> = raw
        .iter()
        .copied()
        .filter(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
        .collect();
    clean.truncate(
        clean.len() - clean.len() % 4
            + if clean.len() % 4 >= 2 {
                clean.len() % 4
            } else {
                0
            },
    );
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(&clean).ok()?;
    let decoder = part
        .content_type()
        .and_then(|ct| ct.attribute("charset"))
        .and_then(|c| charset_decoder(c.as_bytes()));
    Some(match decoder {
        Some(d) => d(&bytes),
        None => match String::from_utf8_lossy(&bytes) {
            Cow::Borrowed(s) => s.to_owned(),
            Cow::Owned(s) => s,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan() -> ScanConfig {
        crate::config::ScanConfig::default()
    }

    fn parsed(raw: &str) -> BodyText {
        match extract(raw.as_bytes(), &scan()) {
            MimeOutcome::Parsed(b) => b,
            MimeOutcome::Unparsed => panic!("unparsed"),
        }
    }

    #[test]
    fn alternative_uses_the_html_part() {
        let b = parsed(
            "Subject: hi\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=B\n\n--B\nContent-Type: text/plain\n\nplain words\n--B\nContent-Type: text/html\n\n<p>html words</p>\n--B--\n",
        );
        assert!(
            b.text.contains("html words") && !b.text.contains("plain words"),
            "{}",
            b.text
        );
        assert_eq!(b.subject.as_deref(), Some("hi"));
    }

    #[test]
    fn base64_and_qp_decode_to_same_text() {
        let b64 = parsed("Subject: x\nContent-Transfer-Encoding: base64\n\naGVsbG8gd29ybGQ=\n");
        let qp =
            parsed("Subject: x\nContent-Transfer-Encoding: quoted-printable\n\nhello=20w=\norld\n");
        assert_eq!(b64.text.trim(), "hello world");
        assert_eq!(qp.text.trim(), "hello world");
    }

    /// List headers of the message itself mark it as list mail; a
    /// Precedence other than list or bulk, or list headers inside an
    /// attached message, do not.
    #[test]
    fn list_headers_mark_list_mail() {
        for h in [
            "List-Id: News <news.example.org>",
            "List-Post: <mailto:news@example.org>",
            "list-unsubscribe: <mailto:leave@example.org>",
            "Precedence: bulk",
            "Precedence:  List ",
        ] {
            let b = parsed(&format!("Subject: x\n{h}\n\nhello\n"));
            assert!(b.list, "{h}");
            // Only a List-Id marks a list's post.
            assert_eq!(b.list_id, h.starts_with("List-Id"), "{h}");
        }
        for h in ["Precedence: junk", "X-List: yes", "Subject: List-Id"] {
            assert!(!parsed(&format!("Subject: x\n{h}\n\nhello\n")).list, "{h}");
        }
        let nested = "Subject: fwd\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
                      Content-Type: text/plain\n\nsee below\n--B\nContent-Type: message/rfc822\n\n\
                      List-Id: <a.example.org>\nSubject: inner\n\ninner text\n--B--\n";
        let b = parsed(nested);
        assert!(!b.list && !b.list_id);
    }

    /// In-Reply-To, References and reply or forward prefixes of the
    /// subject mark a reply; a subject that only holds such a word does
    /// not, nor do the fields of an attached message.
    #[test]
    fn reply_fields_and_prefixes_mark_a_reply() {
        for h in [
            "Subject: Re: lunch",
            "Subject: [list] RE: lunch",
            "Subject: [a] [b] Fwd: lunch",
            "Subject: AW: Termin",
            "Subject: Re[2]: lunch",
            "Subject: x\nIn-Reply-To: <a@b.example>",
            "Subject: x\nReferences: <a@b.example> <c@d.example>",
        ] {
            assert!(parsed(&format!("{h}\n\nhello\n")).reply, "{h}");
        }
        for h in [
            "Subject: Regarding: lunch",
            "Subject: re lunch",
            "Subject: [re]: lunch",
            "Subject: Offer ends: today",
        ] {
            assert!(!parsed(&format!("{h}\n\nhello\n")).reply, "{h}");
        }
        let nested = "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
                      Content-Type: text/plain\n\nsee below\n--B\nContent-Type: message/rfc822\n\n\
                      In-Reply-To: <a@b.example>\nSubject: Re: inner\n\ninner text\n--B--\n";
        assert!(!parsed(nested).reply);
    }

    /// The Message-IDs a message answers are read: `In-Reply-To` first,
    /// then the last of `References`, each once, at most `MAX_ANSWERS`
    /// (issue 63: the parser skipped both fields and every answer read as
    /// answering nothing).
    #[test]
    fn the_message_ids_a_message_answers_are_read() {
        let b = parsed(
            "Subject: Re: x\nIn-Reply-To: <p@b.example>\nReferences: <r1@b.example>\n \
             <r2@b.example> <p@b.example>\n\nhello\n",
        );
        assert_eq!(b.answers, ["p@b.example", "r2@b.example", "r1@b.example"]);
        let many: String = (0..5000).map(|i| format!(" <m{i}@x.example>")).collect();
        let b = parsed(&format!("Subject: x\nReferences:{many}\n\nhello\n"));
        assert_eq!(b.answers.len(), MAX_ANSWERS);
        assert_eq!(b.answers[0], "m4999@x.example");
        assert!(parsed("Subject: x\n\nhello\n").answers.is_empty());
    }

    /// A campaign's text in an attached page or text file is read after
    /// the body's, once; an attachment alone is read once too.
    #[test]
    fn text_attachments_are_read() {
        let html = "<html><body><p>Verify your mailbox now</p></body></html>";
        let b64 = base64::engine::general_purpose::STANDARD.encode(html);
        let b = parsed(&format!(
            "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
             Content-Type: text/plain\n\nsee the attached page\n--B\n\
             Content-Type: text/html; name=a.html\nContent-Disposition: attachment; filename=a.html\n\
             Content-Transfer-Encoding: base64\n\n{b64}\n--B\n\
             Content-Type: text/plain; name=b.txt\nContent-Disposition: attachment\n\n\
             second file\n--B--\n"
        ));
        assert_eq!(
            b.text.split_whitespace().collect::<Vec<_>>().join(" "),
            "see the attached page Verify your mailbox now second file"
        );
        assert!(b.attachments.is_empty(), "read as text, not hashed");
        // Under a body long enough to be the message, attached text is not
        // read (a file of junk would dilute it); nor is a text type no
        // client shows.
        let long_body = "word ".repeat(30);
        let b = parsed(&format!(
            "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
             Content-Type: text/plain\n\n{long_body}\n--B\n\
             Content-Type: text/plain; name=b.txt\nContent-Disposition: attachment\n\n\
             junk file\n--B--\n"
        ));
        assert!(!b.text.contains("junk"), "{}", b.text);
        let b = parsed(
            "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
             Content-Type: text/plain\n\nsee\n--B\n\
             Content-Type: text/x-junk\nContent-Disposition: attachment\n\n\
             junk part\n--B--\n",
        );
        assert!(!b.text.contains("junk"), "{}", b.text);
        let alone = parsed(
            "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\
             Content-Type: text/plain; name=b.txt\nContent-Disposition: attachment\n\n\
             only file\n--B--\n",
        );
        assert_eq!(alone.text.trim(), "only file");
    }

    #[test]
    fn attachments_are_hashed() {
        let b = parsed(
            "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee\n--B\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\nAAEC\n--B--\n",
        );
        assert_eq!(b.attachments.len(), 1);
        assert_eq!(
            b.attachments[0],
            <[u8; 32]>::from(Sha256::digest([0u8, 1, 2]))
        );
    }

    /// Found by the `message` fuzz target (fixtures/fuzz/message/
    /// crlf-multipart-without-boundary.eml): the body of a multipart
    /// without boundary is kept as a binary part, and its hash depended on
    /// the line ends, so the same message had two exact hashes.
    #[test]
    fn crlf_and_lf_give_the_same_attachment_hash() {
        let lf = "Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee\n--B\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: 8bit\n\nline one\nline two\n--B--\n";
        let crlf = lf.replace('\n', "\r\n");
        let (a, b) = (parsed(lf), parsed(&crlf));
        assert_eq!(a.attachments.len(), 1);
        assert_eq!(a.attachments, b.attachments);
        let no_boundary = "Subject: x\nContent-Type: multipart/related\n\n--\nContent-Type: text/plain\n\nno boundary here\n----\n";
        let (a, b) = (
            parsed(no_boundary),
            parsed(&no_boundary.replace('\n', "\r\n")),
        );
        assert_eq!(a.attachments.len(), 1);
        assert_eq!(a.attachments, b.attachments);
        // Base64 bytes are hashed as they are, CR included.
        let b64 = parsed("Subject: x\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\nYQ0KYg==\n--B--\n");
        assert_eq!(
            b64.attachments,
            vec![<[u8; 32]>::from(Sha256::digest(b"a\r\nb"))]
        );
    }

    /// Found by the `message` fuzz target on real mail (a list message
    /// whose last header was `Date: Sun, 25 Aug 2002 16:50:54 UT`): with LF
    /// line ends mail-parser read the zone past the line end and lost the
    /// first body paragraph; with CRLF it did not. Minimized by hand:
    /// fixtures/fuzz/message/lf-date-two-letter-zone.eml.
    #[test]
    fn date_with_two_letter_zone_keeps_the_body_with_lf_line_ends() {
        // (A one-letter zone, `Z`, still loses the line end with CRLF too:
        // mail-parser reads two bytes after the zone's first letter.)
        for zone in ["UT", "GMT", "+0000"] {
            let lf = format!("Subject: x\nDate: Sun, 25 Aug 2002 16:50:54 {zone}\n\nfirst line\nsecond line\n\nthird paragraph\n");
            let crlf = lf.replace('\n', "\r\n");
            let a = parsed(&lf);
            assert!(a.text.starts_with("first line"), "{zone}: {:?}", a.text);
            assert_eq!(
                a.text.replace('\r', ""),
                parsed(&crlf).text.replace('\r', "")
            );
        }
        // A header after such a date is kept too.
        let b = parsed(
            "Date: Sun, 25 Aug 2002 16:50:54 UT\nContent-Type: text/html\n\n<p>a <b>b</b></p>\n",
        );
        assert_eq!(b.text.trim(), "a b");
    }

    #[test]
    fn wire_form_makes_bare_lf_crlf_within_the_bound() {
        assert_eq!(
            wire_form(b"a\r\nb\r\n", 100),
            (Cow::Borrowed(&b"a\r\nb\r\n"[..]), false)
        );
        assert_eq!(
            wire_form(b"a\nb\r\nc\n", 100).0.as_ref(),
            b"a\r\nb\r\nc\r\n"
        );
        assert_eq!(wire_form(b"\n\n", 100).0.as_ref(), b"\r\n\r\n");
        // Cut at the same bytes as the CRLF message would be.
        for max in 0..8 {
            let (lf, lf_cut) = wire_form(b"ab\ncd\n", max);
            let (crlf, crlf_cut) = wire_form(b"ab\r\ncd\r\n", max);
            assert_eq!(
                (lf.as_ref(), lf_cut),
                (crlf.as_ref(), crlf_cut),
                "max {max}"
            );
        }
    }

    /// Byte by byte: what `wire_form` must return.
    fn wire_form_by_bytes(raw: &[u8], max: usize) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut used = 0;
        for (i, b) in raw.iter().enumerate() {
            if out.len() >= max {
                break;
            }
            if *b == b'\n' && (i == 0 || raw[i - 1] != b'\r') {
                out.push(b'\r');
            }
            out.push(*b);
            used = i + 1;
        }
        let cut = used < raw.len() || out.len() > max;
        out.truncate(max);
        (out, cut)
    }

    proptest::proptest! {
        #[test]
        fn wire_form_agrees_with_a_byte_by_byte_copy(
            raw in proptest::collection::vec(proptest::sample::select(vec![b'a', b'\r', b'\n']), 0..40),
            max in 0usize..50,
        ) {
            let (got, cut) = wire_form(&raw, max);
            proptest::prop_assert_eq!((got.to_vec(), cut), wire_form_by_bytes(&raw, max));
        }
    }

    #[test]
    fn base64_part_without_closing_boundary_still_gives_text() {
        let b64 = "SGVscCB3YW50ZWQuIFdlIGFyZSBsb29raW5nIGZvciByZXBzLg0K";
        let raw = format!(
            "Subject: x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: base64\n\n{b64}\n!!\n"
        );
        let b = parsed(&raw);
        assert!(
            b.text.contains("Help wanted. We are looking for reps."),
            "{:?}",
            b.text
        );
    }

    #[test]
    fn html_declared_as_plain_text_is_rendered() {
        let b = parsed("Subject: x\nContent-Type: text/plain\n\n<html><body><p>Hello <b>there</b></p></body></html>\n");
        assert_eq!(b.text.trim(), "Hello there");
    }

    /// `replay --format jsonl` and the logs carry the id as written
    /// between the brackets, unfolded.
    #[test]
    fn message_id_is_unfolded_and_kept_as_written() {
        for (raw, want) in [
            (
                "Message-ID: <Ab.C-1@Example.COM>\n\nx\n",
                Some("Ab.C-1@Example.COM"),
            ),
            (
                "Message-ID:\n <folded.1@example.org>\n\nx\n",
                Some("folded.1@example.org"),
            ),
            (
                "Message-ID: <long.part.one\n .two@example.org>\n\nx\n",
                Some("long.part.one.two@example.org"),
            ),
            (
                "Message-ID: no-brackets@example.net\n\nx\n",
                Some("no-brackets@example.net"),
            ),
            (
                "Message-ID: <\"quoted local\"@example.net>\n\nx\n",
                Some("\"quotedlocal\"@example.net"),
            ),
            ("Message-ID:   \n\nx\n", None),
            ("Subject: none\n\nx\n", None),
        ] {
            let b = parsed(raw);
            assert_eq!(b.message_id.as_deref(), want, "{raw:?}");
            let crlf = parsed(&raw.replace('\n', "\r\n"));
            assert_eq!(crlf.message_id.as_deref(), want, "{raw:?} with CRLF");
        }
    }

    #[test]
    fn empty_input_is_unparsed() {
        assert_eq!(extract(b"", &scan()), MimeOutcome::Unparsed);
    }

    #[test]
    fn an_invitation_in_an_alternative_is_read() {
        // Outlook's form: the calendar is an alternative of a short text.
        let raw = "From: a@b.example\r\nTo: c@d.example\r\nSubject: s\r\nMIME-Version: 1.0\r\n\
            Content-Type: multipart/alternative; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n\
            You have been invited.\r\n--B\r\nContent-Type: text/calendar; method=REQUEST\r\n\r\n\
            BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDESCRIPTION:Your payroll account is suspended\\, verify now\r\n\
            END:VEVENT\r\nEND:VCALENDAR\r\n--B--\r\n";
        let text = parsed(raw).text;
        assert!(text.contains("payroll account is suspended"), "{text:?}");
    }

    /// What a desktop opens from an archive: a text file is read, a
    /// document's pictures (Word's `word/media/`) and a PDF page that is
    /// one picture are read as pictures (their perceptual hashes here; their
    /// text with OCR).
    #[test]
    fn an_archives_text_files_and_documents_pictures_are_read() {
        use base64::Engine as _;
        let attached = |bytes: &[u8], ctype: &str| {
            let raw = format!(
                "From: a@b.example\r\nTo: c@d.example\r\nSubject: s\r\nMIME-Version: 1.0\r\n\
                 Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n\
                 See attached.\r\n--B\r\nContent-Type: {ctype}\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--B--\r\n",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
            parsed(&raw)
        };
        let zip = testkit::documents::zip(&[(
            "notice.txt",
            b"Your parcel is held at customs: pay the fee",
        )]);
        assert!(attached(&zip, "application/zip")
            .text
            .contains("held at customs"));
        let junk = testkit::documents::zip(&[("blob.bin", &[0u8, 1, 2, 3, 200, 201][..])]);
        assert!(!attached(&junk, "application/zip").text.contains('\u{1}'));
        let mut img = image::GrayImage::from_pixel(120, 60, image::Luma([240]));
        for x in 10..110 {
            for y in 20..40 {
                img.put_pixel(x, y, image::Luma([if (x / 7) % 2 == 0 { 10 } else { 240 }]));
            }
        }
        let mut png = Vec::new();
        image::DynamicImage::ImageLuma8(img.clone())
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let docx = testkit::documents::zip(&[
            (
                "word/document.xml",
                b"<w:document xmlns:w=\"w\"><w:body/></w:document>",
            ),
            ("word/media/image1.png", &png),
        ]);
        assert_eq!(
            attached(&docx, "application/octet-stream").pictures.len(),
            1
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, img.as_raw()).unwrap();
        let pdf =
            testkit::pdf_of_picture(120, 60, "FlateDecode", "DeviceGray", &z.finish().unwrap());
        assert_eq!(attached(&pdf, "application/pdf").pictures.len(), 1);
    }

    #[test]
    fn an_archived_page_is_charged_once_and_read() {
        use base64::Engine as _;
        // A page of 1.1 MiB (mostly spaces) gzipped: its decompressed bytes
        // are taken from the budget once, and it is read.
        let page = format!(
            "<html><body><p>Your mailbox is full</p>{}</body></html>",
            " ".repeat(1_100_000)
        );
        let gz = testkit::documents::gzip(page.as_bytes());
        let raw = format!(
            "From: a@b.example\r\nTo: c@d.example\r\nSubject: s\r\nMIME-Version: 1.0\r\n\
             Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n\
             See attached.\r\n--B\r\nContent-Type: application/gzip\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--B--\r\n",
            base64::engine::general_purpose::STANDARD.encode(&gz)
        );
        assert!(parsed(&raw).text.contains("Your mailbox is full"));
    }

    #[test]
    fn text_is_bounded() {
        let mut cfg = scan();
        cfg.max_scan_bytes = 1024;
        let raw = format!("Subject: x\n\n{}", "word ".repeat(10_000));
        let MimeOutcome::Parsed(b) = extract(raw.as_bytes(), &cfg) else {
            panic!()
        };
        assert!(b.text.len() <= 1024 && b.truncated);
    }
}
