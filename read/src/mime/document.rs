//! Documents a mail client or a desktop opens from an attachment, read as
//! text: what a campaign that writes "see the attached file" under a
//! one-line body really says.
//!
//! The format is told by the bytes ([`sniff`]), never by the declared type
//! or the file name, which the sender writes. One table of formats
//! ([`Format`]), each with its reader:
//!
//! | format | reader |
//! |---|---|
//! | zip (and what is built on it: Office Open XML, OpenDocument, EPUB, ...) | the `zip` crate; entries read in order, nested to [`MAX_DEPTH`] |
//! | gzip | `flate2`, then the content is sniffed again |
//! | Word, Excel, PowerPoint (`word/document.xml`, `xl/sharedStrings.xml`, `ppt/slides/*.xml`) | [`xml_text`] over the zip's entries |
//! | OpenDocument (`content.xml`) | [`xml_text`] |
//! | SVG and other XML | [`xml_text`] (`quick-xml`) |
//! | RTF | [`rtf_text`] (by hand: see there) |
//! | calendar and contact files (iCalendar, vCard) | [`card_text`] |
//! | HTML, MHTML, attached messages, PDF | the caller's own readers (`mime::html`, the message walk, `mime::pdf`): [`Format::Html`], [`Format::Message`], [`Format::Pdf`] |
//!
//! **Work budget.** Every byte a reader decompresses or parses is taken
//! from the message's document budget ([`WORK_BYTES`], shared by all its
//! attachments and their nested entries): a zip bomb, a gzip of zeros or a
//! thousand entries stop there, and what was read so far is kept (`cut`).
//! At most [`MAX_ENTRIES`] entries of all archives of a message are
//! opened, archives are followed [`MAX_DEPTH`] deep.
//!
//! **Encrypted archives.** A campaign that sends its text in an encrypted
//! zip states the password in the message, or its reader could not open
//! it: an encrypted entry is tried with the passwords the message's own
//! text states ([`stated_passwords`]: at most [`MAX_PASSWORDS`], each tried
//! once per entry, an entry accepted only when it decrypts and inflates
//! without error), with ZipCrypto and AES alike; without one it is
//! skipped, as before.
//!
//! **What a viewer hides.** Word's hidden runs (`w:vanish`), deleted
//! revisions (`w:delText`) and field codes; SVG elements with
//! `display="none"`, `visibility="hidden"` or zero opacity, and SVG's
//! `<title>`, `<desc>`, `<metadata>`, `<style>` and `<script>`. Where this
//! stops: fonts, colours and positions inside documents are not read (a
//! white-on-white run in a Word file is read as text), as a PDF's are not.

use std::io::{Cursor, Read};

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// Bytes of decompressed and parsed document content one message may
/// spend, over all its attachments.
pub const WORK_BYTES: usize = 2 * 1024 * 1024;
/// Most archive entries opened per message.
pub const MAX_ENTRIES: usize = 64;
/// Archives in archives followed this deep (an attachment is depth 0).
pub const MAX_DEPTH: usize = 2;
/// Most bytes of a document looked at to tell its format.
const SNIFF_BYTES: usize = 2048;

/// A document format, told by its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Zip,
    Gzip,
    Pdf,
    Rtf,
    /// SVG or another XML document.
    Xml,
    /// iCalendar or vCard.
    Card,
    Html,
    /// A message: an attached `.eml`, or MHTML (a web page saved as a
    /// message).
    Message,
}

/// The format of `bytes`, or `None` when it is none of [`Format`]'s
/// (a picture, plain text, an executable, ...).
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return Some(Format::Zip);
    }
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Some(Format::Gzip);
    }
    if super::pdf::is_pdf(bytes) {
        return Some(Format::Pdf);
    }
    let head = bytes.get(..SNIFF_BYTES).unwrap_or(bytes);
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head = head.get(start..).unwrap_or_default();
    // (Compared without regard to case, in place: every attachment of a
    // message is sniffed, pictures too.)
    if starts_with_any_case(head, b"{\\rtf") {
        return Some(Format::Rtf);
    }
    if starts_with_any_case(head, b"begin:vcalendar") || starts_with_any_case(head, b"begin:vcard")
    {
        return Some(Format::Card);
    }
    if head.starts_with(b"<") {
        let has = |s: &[u8]| head.windows(s.len()).any(|w| w.eq_ignore_ascii_case(s));
        if has(b"<html") || has(b"<body") || has(b"<!doctype html") {
            return Some(Format::Html);
        }
        if starts_with_any_case(head, b"<?xml") || has(b"<svg") {
            return Some(Format::Xml);
        }
        return None;
    }
    looks_like_message(head).then_some(Format::Message)
}

/// `bytes` start with `prefix`, ASCII case aside.
fn starts_with_any_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes
        .get(..prefix.len())
        .is_some_and(|b| b.eq_ignore_ascii_case(prefix))
}

/// A header section: the first line is a header field, and a field every
/// message or MHTML file has (`From`, `MIME-Version`, `Content-Type`,
/// `Received`, `Subject`) starts a line of the head.
fn looks_like_message(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let field = first
        .iter()
        .position(|&b| b == b':')
        .and_then(|colon| first.get(..colon))
        .is_some_and(|name| {
            !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        });
    field
        && head.split(|&b| b == b'\n').any(|line| {
            [
                &b"from:"[..],
                b"mime-version:",
                b"content-type:",
                b"received:",
                b"subject:",
            ]
            .iter()
            .any(|f| starts_with_any_case(line, f))
        })
}

/// What one message may still spend on documents.
#[derive(Debug)]
pub struct Budget {
    /// The passwords the message states, for its encrypted archives
    /// ([`stated_passwords`]); the one that opened an entry moves first.
    pub passwords: Vec<String>,
    /// Passwords still to try on encrypted entries ([`PASSWORD_TRIES`]).
    pub password_tries: usize,
    /// Bytes still to decompress or parse ([`WORK_BYTES`]).
    pub bytes: usize,
    /// Archive entries still to open ([`MAX_ENTRIES`]).
    pub entries: usize,
    /// A reader stopped at the budget.
    pub cut: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            passwords: Vec::new(),
            password_tries: PASSWORD_TRIES,
            bytes: WORK_BYTES,
            entries: MAX_ENTRIES,
            cut: false,
        }
    }
}

impl Budget {
    /// Takes up to `n` bytes of the budget and says how many it gave
    /// (fewer than `n`: `cut`).
    pub fn take_upto(&mut self, n: usize) -> usize {
        let got = n.min(self.bytes);
        self.bytes -= got;
        self.cut |= got < n;
        got
    }

    /// Takes `n` bytes of the budget; false (and `cut`) when it has fewer.
    pub fn take(&mut self, n: usize) -> bool {
        match self.bytes.checked_sub(n) {
            Some(left) => {
                self.bytes = left;
                true
            }
            None => {
                self.bytes = 0;
                self.cut = true;
                false
            }
        }
    }
}

/// A piece of a document, as its reader gives it to the caller.
#[derive(Debug, PartialEq)]
pub enum Piece {
    /// Text, paragraphs separated by blank lines.
    Text(String),
    /// A link target the document holds (SVG and Office hyperlinks,
    /// calendar and contact URLs).
    Link(String),
    /// Bytes of another document (an archive's entry, a gzip's content),
    /// for the caller to sniff and read at `depth`.
    Inner { bytes: Vec<u8>, depth: usize },
    /// HTML the caller renders (a calendar's `X-ALT-DESC`).
    Html(String),
}

/// Reads a document of `format` (not [`Format::Html`], [`Format::Message`]
/// or [`Format::Pdf`], which the caller reads) at archive depth `depth`,
/// giving its pieces in order. What an archive decompresses is taken from
/// `budget` here, once (an inner document's bytes come charged); the bytes
/// of a document read directly are the caller's to charge.
pub fn read(bytes: &[u8], format: Format, depth: usize, budget: &mut Budget) -> Vec<Piece> {
    let mut out = Vec::new();
    match format {
        Format::Zip if depth <= MAX_DEPTH => read_zip(bytes, depth, budget, &mut out),
        Format::Gzip if depth <= MAX_DEPTH => {
            if let Some(inner) = gunzip(bytes, budget) {
                out.push(Piece::Inner {
                    bytes: inner,
                    depth: depth + 1,
                });
            }
        }
        Format::Xml => xml_text(bytes, &mut out),
        Format::Rtf => out.push(Piece::Text(rtf_text(bytes))),
        Format::Card => card_text(bytes, &mut out),
        _ => {}
    }
    out
}

/// The content of a gzip member, within the budget.
fn gunzip(bytes: &[u8], budget: &mut Budget) -> Option<Vec<u8>> {
    let inner = read_squeezed(flate2::read::GzDecoder::new(bytes), budget);
    (!inner.is_empty()).then_some(inner)
}

/// Longest run of white space kept from decompressed content: a person
/// sees a blank, however long.
const MAX_BLANK: usize = 256;
/// Decompressed bytes read for each byte of the budget at most: white
/// space past [`MAX_BLANK`] is read, not kept, up to this many times the
/// budget.
const RAW_PER_BYTE: usize = 16;

/// Reads `r` (a decompressor) within `budget`: runs of white space are
/// kept to [`MAX_BLANK`] bytes and only what is kept is charged, so a
/// document padded with megabytes of blanks before its text is read
/// (before, 3 MiB of spaces used the budget up and the text was never
/// reached); at most [`RAW_PER_BYTE`] times the budget is decompressed in
/// all (a bomb of blanks stops there, `cut`). Content with a NUL byte in
/// its first 512 is binary (a picture) and kept whole. A broken stream
/// keeps what was read before the damage.
fn read_squeezed(mut r: impl Read, budget: &mut Budget) -> Vec<u8> {
    let room = budget.bytes;
    let mut raw_left = room.saturating_mul(RAW_PER_BYTE);
    let mut out = Vec::new();
    let mut blank = 0usize;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut binary = None;
    loop {
        let want = chunk.len().min(raw_left.max(1));
        let Some(buf) = chunk.get_mut(..want) else {
            break;
        };
        let read = match r.read(buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.get(..n).unwrap_or_default(),
        };
        if raw_left == 0 {
            budget.cut = true;
            break;
        }
        raw_left = raw_left.saturating_sub(read.len());
        let head = read.get(..512).unwrap_or(read);
        if *binary.get_or_insert_with(|| head.contains(&0)) {
            out.extend_from_slice(read);
            if out.len() > room {
                break;
            }
            continue;
        }
        for &b in read {
            if b.is_ascii_whitespace() {
                blank += 1;
                if blank > MAX_BLANK {
                    continue;
                }
            } else {
                blank = 0;
            }
            out.push(b);
        }
        if out.len() > room {
            break;
        }
    }
    if !budget.take(out.len()) {
        out.truncate(room);
    }
    out
}

/// How an archive entry is read, by its name: the text parts of Office
/// documents are XML; other entries are sniffed by the caller; an Office
/// document's other parts (styles, settings, pictures) are not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EntryKind {
    /// The text of an Office Open XML or OpenDocument file.
    OfficeText,
    /// A relationships part: its external targets are the links.
    Relations,
    /// Anything else, sniffed.
    Other,
}

/// `name`'s kind; `main` is the package's main part as its relationships
/// name it ([`main_part`]), which Word opens whatever its name.
fn entry_kind(name: &str, main: Option<&str>) -> Option<EntryKind> {
    let lower = name.to_ascii_lowercase();
    let numbered = |prefix: &str| {
        lower.strip_prefix(prefix).is_some_and(|rest| {
            rest.strip_suffix(".xml")
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let office = lower == "word/document.xml"
        || Some(lower.as_str()) == main
        // What Word shows around the body: headers, footers, notes.
        || numbered("word/header")
        || numbered("word/footer")
        || lower == "word/footnotes.xml"
        || lower == "word/endnotes.xml"
        || lower == "xl/sharedstrings.xml"
        // Cells whose text is written in the sheet (inline strings).
        || numbered("xl/worksheets/sheet")
        || (lower.starts_with("ppt/slides/slide") && lower.ends_with(".xml"))
        || lower == "content.xml";
    if office {
        return Some(EntryKind::OfficeText);
    }
    if lower.ends_with(".rels") {
        return lower
            .starts_with("word/_rels/document")
            .then_some(EntryKind::Relations)
            .or_else(|| {
                lower
                    .starts_with("ppt/slides/_rels/")
                    .then_some(EntryKind::Relations)
            });
    }
    // The pictures an Office document shows: read as pictures.
    if ["word/media/", "xl/media/", "ppt/media/"]
        .iter()
        .any(|m| lower.starts_with(m))
    {
        return Some(EntryKind::Other);
    }
    // An Office package's other parts and an EPUB's or ODF's manifests.
    let package_part = lower.starts_with("word/")
        || lower.starts_with("xl/")
        || lower.starts_with("ppt/")
        || lower.starts_with("docprops/")
        || lower.starts_with("meta-inf/")
        || lower.starts_with("_rels/")
        || lower == "[content_types].xml"
        || lower == "mimetype"
        || lower == "styles.xml"
        || lower == "meta.xml"
        || lower == "settings.xml"
        || lower.ends_with('/');
    (!package_part).then_some(EntryKind::Other)
}

/// Most bytes of a package's relationships read for its main part.
const MAX_RELS: usize = 64 * 1024;

/// The main part of an Office package as its relationships name it
/// (`_rels/.rels`, the `officeDocument` relationship's target, lower-case,
/// without a leading `/`): a document whose text is in
/// `word/body1.xml` is opened by Word through it, not by its name.
fn main_part(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, budget: &mut Budget) -> Option<String> {
    let i = (0..archive.len()).find(|&i| {
        archive
            .name_for_index(i)
            .and_then(Result::ok)
            .is_some_and(|n| n.eq_ignore_ascii_case("_rels/.rels"))
    })?;
    let file = archive.by_index(i).ok()?;
    if file.encrypted() {
        return None;
    }
    let mut rels = Vec::new();
    let _ = file.take(MAX_RELS as u64).read_to_end(&mut rels);
    if !budget.take(rels.len()) {
        return None;
    }
    let rels = String::from_utf8_lossy(&rels);
    rels.split('<')
        .filter(|tag| tag.starts_with("Relationship ") || tag.starts_with("Relationship\t"))
        .filter(|tag| tag.contains("/officeDocument\"") || tag.contains("/officeDocument'"))
        .find_map(|tag| {
            let at = tag.find("Target=")? + "Target=".len();
            let rest = tag.get(at..)?;
            let quote = rest.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let target = rest.get(1..)?.split(quote).next()?;
            let target = target.trim_start_matches('/').to_ascii_lowercase();
            (!target.is_empty() && target.ends_with(".xml")).then_some(target)
        })
}

/// A name's order: numbers compared as numbers (`slide10` after `slide9`).
type NaturalKey = Vec<(u64, String)>;

fn natural_key(name: &str) -> NaturalKey {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut number: Option<u64> = None;
    for c in name.chars() {
        match (c.to_digit(10), number) {
            (Some(d), n) => {
                number = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d.into()))
            }
            (None, Some(n)) => {
                key.push((n, std::mem::take(&mut text)));
                number = None;
                text.push(c);
            }
            (None, None) => text.push(c),
        }
    }
    key.push((number.unwrap_or(0), text));
    key
}

fn read_zip(bytes: &[u8], depth: usize, budget: &mut Budget, out: &mut Vec<Piece>) {
    let config = zip::read::Config {
        archive_offset: zip::read::ArchiveOffset::Known(0),
    };
    let Ok(mut archive) = zip::ZipArchive::with_config(config, Cursor::new(bytes)) else {
        return;
    };
    // The entries to read, text parts first (an Office file's), each
    // kind in name order.
    // Every name is looked at (they are in memory already: a thousand
    // junk entries ahead must not hide the document's text).
    let main = main_part(&mut archive, budget);
    let mut chosen: Vec<(EntryKind, NaturalKey, usize)> = (0..archive.len())
        .filter_map(|i| {
            let name = archive.name_for_index(i)?.ok()?;
            let kind = entry_kind(&name, main.as_deref())?;
            Some((kind, natural_key(&name), i))
        })
        .collect();
    chosen.sort();
    if chosen.len() > budget.entries {
        budget.cut = true;
        chosen.truncate(budget.entries);
    }
    for (kind, _, i) in chosen {
        if budget.entries == 0 || budget.bytes == 0 {
            budget.cut = true;
            return;
        }
        budget.entries -= 1;
        let encrypted = match archive.by_index_raw(i) {
            Ok(f) if f.is_dir() => continue,
            Ok(f) => f.encrypted(),
            Err(_) => continue,
        };
        let content = if encrypted {
            match decrypted(&mut archive, i, budget) {
                Some(c) => c,
                None => continue,
            }
        } else {
            let Ok(file) = archive.by_index(i) else {
                continue;
            };
            // A broken or unsupported entry keeps what was read before.
            read_squeezed(file, budget)
        };
        match kind {
            EntryKind::OfficeText => xml_text(&content, out),
            EntryKind::Relations => relation_links(&content, out),
            EntryKind::Other => out.push(Piece::Inner {
                bytes: content,
                depth: depth + 1,
            }),
        }
    }
}

/// Most passwords a message's text states that are tried on its
/// encrypted entries (a wrong one costs ZipCrypto a 12-byte check, AES a
/// key derivation of about half a millisecond).
pub const MAX_PASSWORDS: usize = 32;
/// Passwords tried on one message's encrypted entries in all (an AES
/// entry's key derivation is about half a millisecond each).
pub const PASSWORD_TRIES: usize = 128;
/// Longest password taken from a message's text, in characters.
const MAX_PASSWORD_CHARS: usize = 64;
/// Most bytes of a message's text searched for passwords.
const PASSWORD_SEARCH_BYTES: usize = 64 * 1024;

/// Words that name a password (lowercase, matched as whole words): the
/// strong ones first, tried first, so that "pass", "code" or "pin" strewn
/// before the real statement cannot use up the bound.
const PASSWORD_WORDS: &[&[&str]] = &[
    &[
        "password",
        "passwords",
        "passwort",
        "passcode",
        "passwd",
        "kennwort",
        "mot de passe",
        "contraseña",
        "contrasena",
        "senha",
        "wachtwoord",
        "parola",
        "hasło",
        "haslo",
        "密码",
        "パスワード",
    ],
    &["pass", "pwd", "pw", "code", "pin", "clave", "key"],
];

/// Words between a password's name and the password itself ("the password
/// *is* 1234", "password *for the archive*: 1234"), never taken for one.
const LINKING_WORDS: &[&str] = &[
    "is",
    "ist",
    "est",
    "es",
    "será",
    "the",
    "for",
    "to",
    "open",
    "opening",
    "archive",
    "file",
    "files",
    "document",
    "documents",
    "attachment",
    "attached",
    "zip",
    "of",
    "de",
    "la",
    "le",
    "el",
    "das",
    "der",
    "die",
    "zum",
    "öffnen",
    "für",
    "da",
    "do",
    "van",
    "het",
    "use",
    "enter",
    "with",
    "your",
    "our",
    "this",
    "it",
    "den",
    "del",
    "pour",
    "para",
    "und",
    "and",
    "below",
    "here",
    "a",
    "an",
    "you",
    "will",
    "need",
    "required",
    "requires",
    "please",
    "-",
    "–",
    ":",
    "=",
    "as",
    "follows",
    "ouvrir",
    "fichier",
    "datei",
    "bestand",
];

/// The passwords `text` states for an attachment: the first word after
/// each word that names one ("Password: 4411", "the archive password is
/// \"inv-2231\"", "Passwort für die Datei: abc"), linking words passed
/// over, with and without its quotes and trailing punctuation; those named
/// by a strong word first (`PASSWORD_WORDS`), each group in text
/// order; at most [`MAX_PASSWORDS`], each at most 64 characters.
pub fn stated_passwords(text: &str) -> Vec<String> {
    let text = cut_at(text, PASSWORD_SEARCH_BYTES);
    let lower = text.to_lowercase();
    // The words are taken from the text itself where lowercasing kept its
    // length (almost always), else from the lowercase text.
    let source = if lower.len() == text.len() {
        text
    } else {
        lower.as_str()
    };
    let mut found: Vec<String> = Vec::new();
    for names in PASSWORD_WORDS {
        let mut at: Vec<(usize, usize)> = Vec::new();
        for w in *names {
            let mut from = 0;
            while let Some(i) = lower.get(from..).and_then(|r| r.find(w)) {
                let (start, end) = (from + i, from + i + w.len());
                from = end;
                let before = lower.get(..start).and_then(|b| b.chars().next_back());
                let after = lower.get(end..).and_then(|a| a.chars().next());
                if before.is_none_or(|c| !c.is_alphanumeric())
                    && after.is_none_or(|c| !c.is_alphanumeric())
                {
                    at.push((start, end));
                }
                if at.len() > 4 * MAX_PASSWORDS {
                    break;
                }
            }
        }
        at.sort_unstable();
        at.truncate(4 * MAX_PASSWORDS);
        for (_, end) in at {
            if found.len() >= MAX_PASSWORDS {
                break;
            }
            // The few words after the name: a bounded look, whatever
            // follows.
            let rest = source.get(end..).unwrap_or("");
            let rest = cut_at(rest, 256);
            // The words after the name, linking words passed over: the
            // one after a colon or an equals sign first, then up to three
            // others ("Passwort für das Dokument: 4411").
            let words: Vec<&str> = rest
                .split_whitespace()
                .take(10)
                .filter(|w| {
                    let b = bare(w);
                    !b.is_empty() && !LINKING_WORDS.contains(&b.to_lowercase().as_str())
                })
                .collect();
            let after_colon = rest
                .split_whitespace()
                .take(10)
                .scan(false, |colon, w| {
                    let take = *colon;
                    *colon = w.ends_with([':', '=']);
                    Some((take, w))
                })
                .find(|(take, w)| *take && !bare(w).is_empty())
                .map(|(_, w)| w);
            for word in after_colon.into_iter().chain(words.into_iter().take(3)) {
                for candidate in [bare(word), word.trim_start_matches([':', '='])] {
                    let fits = (1..=MAX_PASSWORD_CHARS).contains(&candidate.chars().count());
                    if fits && found.len() < MAX_PASSWORDS && !found.iter().any(|f| f == candidate)
                    {
                        found.push(candidate.to_owned());
                    }
                }
            }
        }
    }
    found
}

/// A word without the quotes and punctuation around it.
fn bare(word: &str) -> &str {
    word.trim_start_matches(['"', '\'', '«', '“', '‘', '(', '[', '<', '*', ':', '=', '`'])
        .trim_end_matches([
            '"', '\'', '»', '”', '’', ')', ']', '>', '*', '.', ',', ';', ':', '!', '`',
        ])
}

/// Entry `i` of `archive`, encrypted, decrypted with the first of the
/// message's passwords that opens it and inflates it without error, within
/// the budget; `None` when none does.
fn decrypted(
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    i: usize,
    budget: &mut Budget,
) -> Option<Vec<u8>> {
    let passwords = budget.passwords.clone();
    for (k, pw) in passwords.iter().enumerate() {
        if budget.password_tries == 0 {
            budget.cut = true;
            return None;
        }
        budget.password_tries -= 1;
        let Ok(file) = archive.by_index_decrypt(i, pw.as_bytes()) else {
            continue;
        };
        let mut checked = Checked {
            inner: file,
            failed: false,
        };
        let content = read_squeezed(&mut checked, budget);
        if !checked.failed {
            // An archive's entries share their password, mostly.
            let first = budget.passwords.remove(k);
            budget.passwords.insert(0, first);
            return Some(content);
        }
    }
    None
}

/// A reader that remembers whether it failed (a wrong password that passed
/// ZipCrypto's one-byte check fails in the inflater or the checksum).
struct Checked<R> {
    inner: R,
    failed: bool,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let r = self.inner.read(buf);
        self.failed |= r.is_err();
        r
    }
}

/// XML elements whose content a viewer never shows.
const NOT_SHOWN: &[&str] = &[
    "title",
    "desc",
    "metadata",
    "style",
    "script",
    "delText",
    "instrText",
    "defs",
];
/// XML elements that end a paragraph or a line of text: Word's,
/// PowerPoint's and OpenDocument's paragraphs and headings, Excel's shared
/// strings, table rows, SVG's text lines.
const BREAKS: &[&str] = &[
    "p",
    "h",
    "si",
    "tr",
    "text",
    "br",
    "cr",
    "line-break",
    "li",
    "div",
];
/// XML elements that stand for a space (tabs, table cells, OpenDocument's
/// `text:s`).
const SPACES: &[&str] = &["ta", "tc", "s", "td", "table-cell"];

/// The text of an XML document (Office parts, SVG), paragraphs separated
/// by blank lines, with its links, what a viewer hides left out (see the
/// module doc). Reading stops at the first XML error, keeping the text
/// before it.
pub fn xml_text(bytes: &[u8], out: &mut Vec<Piece>) {
    let mut reader = Reader::from_reader(bytes);
    let config = reader.config_mut();
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    let mut text = String::new();
    // Depth inside a hidden element (0: shown), and whether the current
    // Word run is hidden (`w:vanish`).
    let mut hidden_depth = 0usize;
    let mut hidden_run = false;
    let mut links = 0usize;
    // An SVG picture's text is read where it is drawn ([`Placed`]).
    let mut placed = root_is_svg(bytes).then(Placed::default);
    loop {
        let event = match reader.read_event() {
            Ok(Event::Eof) | Err(_) => break,
            Ok(e) => e,
        };
        if let Some(p) = placed.as_mut().filter(|_| hidden_depth == 0) {
            match &event {
                Event::Start(e) if hides(e) => hidden_depth += 1,
                _ => p.event(&event, &mut links, out),
            }
            continue;
        }
        match event {
            Event::Start(e) => {
                if hidden_depth > 0 || hides(&e) {
                    hidden_depth += 1;
                    continue;
                }
                let name = e.local_name();
                let name = name.as_ref();
                if name == "r" {
                    hidden_run = false;
                }
                if name == "tspan" && starts_a_line(&e) {
                    line_break(&mut text);
                }
                link_of(&e, &mut links, out);
            }
            Event::Empty(e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if hidden_depth > 0 {
                    continue;
                }
                if name == "vanish" || name == "webHidden" {
                    hidden_run = !attributes(&e).flatten().any(|a| {
                        a.key.local_name().as_ref() == "val"
                            && matches!(a.value.as_ref(), "0" | "false" | "off")
                    });
                } else if BREAKS.contains(&name) {
                    line_break(&mut text);
                } else if SPACES.contains(&name) {
                    text.push(' ');
                }
                link_of(&e, &mut links, out);
            }
            Event::End(e) => {
                if hidden_depth > 0 {
                    hidden_depth -= 1;
                    continue;
                }
                let name = e.local_name();
                let name = name.as_ref();
                if matches!(name, "p" | "h" | "si" | "text") {
                    paragraph_break(&mut text);
                } else if BREAKS.contains(&name) {
                    line_break(&mut text);
                } else if SPACES.contains(&name) {
                    text.push(' ');
                } else if name == "r" {
                    hidden_run = false;
                }
            }
            Event::Text(t) if hidden_depth == 0 && !hidden_run => {
                push_collapsed(&mut text, &t.xml10_content());
            }
            Event::CData(t) if hidden_depth == 0 && !hidden_run => {
                push_collapsed(&mut text, &t.xml10_content());
            }
            Event::GeneralRef(r) if hidden_depth == 0 && !hidden_run => {
                text.extend(referenced(&r));
            }
            _ => {}
        }
    }
    if let Some(p) = placed {
        text = p.text();
    }
    let text = text.trim();
    if !text.is_empty() {
        out.push(Piece::Text(text.to_owned()));
    }
}

/// Whether the XML document's first element is `svg`.
fn root_is_svg(bytes: &[u8]) -> bool {
    let mut reader = Reader::from_reader(bytes);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => return e.local_name().as_ref() == "svg",
            Ok(Event::Eof) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// The character an XML reference stands for (`&#233;`, `&amp;`, ...).
fn referenced(r: &quick_xml::events::BytesRef<'_>) -> Option<char> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => Some(c),
        _ => match r.as_ref() {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => None,
        },
    }
}

/// Font size where none is given (CSS's `medium`).
const DEFAULT_FONT_SIZE: f32 = 16.0;
/// The kind of face a run is drawn in, as far as widths go: what
/// `font-family` names (a browser draws SVG text without one in its
/// default face, here taken as a sans-serif one, which campaigns name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Face {
    #[default]
    Sans,
    Serif,
    Mono,
}

impl Face {
    /// The face a `font-family` list names (its first generic or known
    /// family).
    fn of(family: &str) -> Face {
        let f = family.to_ascii_lowercase();
        if ["mono", "courier", "consolas", "menlo"]
            .iter()
            .any(|m| f.contains(m))
        {
            Face::Mono
        } else if f.contains("sans") {
            Face::Sans
        } else if [
            "serif", "times", "georgia", "garamond", "cambria", "palatino", "book",
        ]
        .iter()
        .any(|m| f.contains(m))
        {
            Face::Serif
        } else {
            Face::Sans
        }
    }
}

/// Advances of the printable ASCII characters, in thousandths of the
/// font size: Helvetica's and Times-Roman's standard metrics (Arial and
/// Times New Roman share them).
const SANS: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
const SERIF: [u16; 95] = [
    250, 333, 408, 500, 500, 833, 778, 180, 333, 333, 500, 564, 250, 333, 250, 278, 500, 500, 500,
    500, 500, 500, 500, 500, 500, 500, 278, 278, 564, 564, 564, 444, 921, 722, 667, 667, 722, 611,
    556, 722, 722, 333, 389, 722, 611, 889, 722, 722, 556, 722, 667, 556, 611, 722, 722, 944, 722,
    722, 611, 333, 278, 333, 469, 500, 333, 444, 500, 444, 500, 444, 333, 500, 500, 278, 278, 500,
    278, 778, 500, 500, 500, 500, 333, 389, 278, 500, 500, 722, 500, 500, 444, 480, 200, 480, 541,
];

/// A glyph's advance as a share of the font size in `face` (for where a
/// run of text ends): the standard metrics for ASCII, a wide character's
/// em, an average for the rest.
fn advance(c: char, face: Face) -> f32 {
    let table = match face {
        Face::Mono => return if c.is_ascii() { 0.6 } else { 1.0 },
        Face::Sans => &SANS,
        Face::Serif => &SERIF,
    };
    match u32::from(c) {
        n @ 32..=126 => table
            .get((n - 32) as usize)
            .map_or(0.55, |w| f32::from(*w) / 1000.0),
        0x1100..=0x11ff | 0x2e80..=0xa4cf | 0xac00..=0xd7a3 | 0xf900..=0xfaff | 0xff00..=0xff60 => {
            1.0
        }
        _ => 0.55,
    }
}

/// Where a run of `text` at `x` in `size` and `face` ends.
fn run_end(x: f32, text: &str, size: f32, face: Face) -> f32 {
    x + text.chars().map(|c| advance(c, face)).sum::<f32>() * size
}
/// Most runs of text kept from one SVG picture.
const MAX_RUNS: usize = 20_000;

/// An SVG picture's text as it is drawn: each run (a `<text>`, a
/// `<tspan>` or a `<foreignObject>` placed by `x`, `y`, `dx`, `dy` and
/// the `transform` translations around it) at its position, read line by
/// line from the top and each line from the left, whatever the source's
/// order. Text outside those elements is not drawn and not read; what a
/// viewer hides is left out as in [`xml_text`]. Rotations and scales are
/// not followed (a translation is the matrix's last two numbers).
#[derive(Debug, Default)]
struct Placed {
    /// Per open element, what its content inherits.
    open: Vec<Frame>,
    /// Where the next glyph goes.
    pen: (f32, f32),
    runs: Vec<Run>,
}

/// What an open SVG element's content inherits.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Its translation, its ancestors' included.
    ox: f32,
    oy: f32,
    size: f32,
    face: Face,
    /// Text in it is drawn (it is in a `<text>` or `<foreignObject>`).
    drawn: bool,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            ox: 0.0,
            oy: 0.0,
            size: DEFAULT_FONT_SIZE,
            face: Face::default(),
            drawn: false,
        }
    }
}

#[derive(Debug)]
struct Run {
    x: f32,
    y: f32,
    size: f32,
    face: Face,
    text: String,
}

impl Placed {
    /// Follows one event (the caller skips what is hidden).
    fn event(&mut self, event: &Event<'_>, links: &mut usize, out: &mut Vec<Piece>) {
        match event {
            Event::Start(e) => {
                link_of(e, links, out);
                self.start(e);
            }
            Event::Empty(e) => link_of(e, links, out),
            Event::End(_) => {
                self.open.pop();
            }
            Event::Text(t) => self.push(&t.xml10_content()),
            Event::CData(t) => self.push(&t.xml10_content()),
            Event::GeneralRef(r) => {
                if let Some(c) = referenced(r) {
                    self.push(c.encode_utf8(&mut [0; 4]));
                }
            }
            _ => {}
        }
    }

    fn start(&mut self, e: &BytesStart<'_>) {
        let mut f = self.open.last().copied().unwrap_or_default();
        let mut at = [None::<f32>; 4];
        for a in attributes(e).flatten() {
            let v: &str = a.value.as_ref();
            let first = || first_number(v);
            match a.key.local_name().as_ref() {
                "transform" => {
                    let (tx, ty) = translation(v);
                    (f.ox, f.oy) = (f.ox + tx, f.oy + ty);
                }
                "font-size" => f.size = first().filter(|s| *s > 0.0).unwrap_or(f.size),
                "font-family" => f.face = Face::of(v),
                "style" => {
                    for d in v.split(';') {
                        match d.split_once(':').map(|(k, v)| (k.trim(), v)) {
                            Some(("font-size", v)) => {
                                f.size = first_number(v).filter(|s| *s > 0.0).unwrap_or(f.size);
                            }
                            Some(("font-family", v)) => f.face = Face::of(v),
                            _ => {}
                        }
                    }
                }
                "x" => at[0] = first(),
                "y" => at[1] = first(),
                "dx" => at[2] = first(),
                "dy" => at[3] = first(),
                _ => {}
            }
        }
        let name = e.local_name();
        let starts = matches!(name.as_ref(), "text" | "foreignObject");
        f.drawn |= starts;
        self.open.push(f);
        if !f.drawn {
            return;
        }
        let (ox, oy, size, face) = (f.ox, f.oy, f.size, f.face);
        if starts {
            self.pen = (ox + at[0].unwrap_or(0.0), oy + at[1].unwrap_or(0.0));
        } else {
            if let Some(x) = at[0] {
                self.pen.0 = ox + x;
            }
            if let Some(y) = at[1] {
                self.pen.1 = oy + y;
            }
        }
        self.pen.0 += at[2].unwrap_or(0.0);
        self.pen.1 += at[3].unwrap_or(0.0);
        if (starts || at.iter().any(Option::is_some)) && self.runs.len() < MAX_RUNS {
            self.runs.push(Run {
                x: self.pen.0,
                y: self.pen.1,
                size,
                face,
                text: String::new(),
            });
        }
    }

    /// Text drawn at the pen, which it moves on.
    fn push(&mut self, s: &str) {
        let Some(f) = self.open.last().copied().filter(|f| f.drawn) else {
            return;
        };
        if self.runs.is_empty() {
            self.runs.push(Run {
                x: self.pen.0,
                y: self.pen.1,
                size: f.size,
                face: f.face,
                text: String::new(),
            });
        }
        if let Some(run) = self.runs.last_mut() {
            push_collapsed(&mut run.text, s);
            self.pen.0 = run_end(self.pen.0, s, f.size, f.face);
        }
    }

    /// The runs read line by line from the top, each line from the left:
    /// a run within half its font size of a line's height is on it; a gap
    /// of more than an eighth of the font size between where a run ends
    /// (by the metrics of its face, [`advance`]) and the next begins is a
    /// space (a space's advance is a quarter of it and more); lines
    /// further apart than one and a half font sizes are paragraphs.
    fn text(mut self) -> String {
        self.runs.retain(|r| !r.text.trim().is_empty());
        let key = |f: f32| if f.is_finite() { f } else { 0.0 };
        self.runs.sort_by(|a, b| {
            key(a.y)
                .total_cmp(&key(b.y))
                .then(key(a.x).total_cmp(&key(b.x)))
        });
        let mut lines: Vec<Vec<Run>> = Vec::new();
        for run in self.runs {
            match lines.last_mut() {
                Some(line)
                    if line.first().is_some_and(|f| {
                        (key(run.y) - key(f.y)).abs() <= f.size.max(run.size) / 2.0
                    }) =>
                {
                    line.push(run);
                }
                _ => lines.push(vec![run]),
            }
        }
        let mut text = String::new();
        let mut last_y: Option<(f32, f32)> = None;
        for mut line in lines {
            line.sort_by(|a, b| key(a.x).total_cmp(&key(b.x)));
            let (y, size) = line
                .first()
                .map_or((0.0, DEFAULT_FONT_SIZE), |r| (key(r.y), r.size));
            if let Some((ly, _)) = last_y {
                if y - ly > 1.5 * size {
                    paragraph_break(&mut text);
                } else {
                    line_break(&mut text);
                }
            }
            last_y = Some((y, size));
            let mut end: Option<f32> = None;
            for run in line {
                let t = run.text.trim();
                if end.is_some_and(|e| key(run.x) - e > run.size / 8.0) {
                    text.push(' ');
                }
                text.push_str(t);
                end = Some(run_end(key(run.x), t, run.size, run.face));
            }
        }
        text
    }
}

/// The first number of an SVG length or list ("12", "12.5px 30", "1e2").
fn first_number(v: &str) -> Option<f32> {
    let v = v.trim_start();
    let b = v.as_bytes();
    let digits = |from: usize| {
        b.get(from..).map_or(0, |r| {
            r.iter()
                .take_while(|c| c.is_ascii_digit() || **c == b'.')
                .count()
        })
    };
    let mut end = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    end += digits(end);
    // An exponent only when digits follow ("1e2", not the "e" of "1.5em").
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(end + 1), Some(b'-' | b'+')));
        if b.get(end + 1 + sign).is_some_and(u8::is_ascii_digit) {
            end += 1 + sign;
            end += digits(end);
        }
    }
    v.get(..end)?.parse::<f32>().ok().filter(|f| f.is_finite())
}

/// The translation of an SVG `transform` ("translate(10 20)",
/// "matrix(a b c d e f)": its e and f), summed over its functions.
fn translation(v: &str) -> (f32, f32) {
    let mut total = (0.0, 0.0);
    for f in v.split(')').take(16) {
        let Some((name, args)) = f.split_once('(') else {
            continue;
        };
        let nums: Vec<f32> = args
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|a| !a.is_empty())
            .take(6)
            .filter_map(first_number)
            .collect();
        let (tx, ty) = match (name.trim(), nums.as_slice()) {
            ("translate", [x]) => (*x, 0.0),
            ("translate", [x, y, ..]) => (*x, *y),
            ("matrix", [_, _, _, _, e, f]) => (*e, *f),
            _ => (0.0, 0.0),
        };
        total = (total.0 + tx, total.1 + ty);
    }
    total
}

/// An element a viewer does not show, with its content: one of
/// [`NOT_SHOWN`], or one hidden by its attributes (SVG's `display`,
/// `visibility`, `opacity`).
fn hides(e: &BytesStart<'_>) -> bool {
    let name = e.local_name();
    if NOT_SHOWN.contains(&name.as_ref()) {
        return true;
    }
    attributes(e).flatten().any(|a| {
        let v = a.value.as_ref();
        match a.key.local_name().as_ref() {
            "display" => v.trim().eq_ignore_ascii_case("none"),
            "visibility" => v.trim().eq_ignore_ascii_case("hidden"),
            "opacity" | "fill-opacity" => v.trim().parse::<f32>().is_ok_and(|o| o < 0.1),
            "style" => {
                let s: String = v
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .map(|c| c.to_ascii_lowercase())
                    .collect();
                s.contains("display:none") || s.contains("visibility:hidden") || {
                    s.split(';').any(|d| {
                        d.strip_prefix("opacity:")
                            .and_then(|o| o.parse::<f32>().ok())
                            .is_some_and(|o| o < 0.1)
                    })
                }
            }
            _ => false,
        }
    })
}

/// Most attributes of one element looked at.
const MAX_ATTRIBUTES: usize = 64;

/// The first [`MAX_ATTRIBUTES`] attributes of `e`, without quick-xml's
/// check for repeated names (which compares each name with every earlier
/// one past 32: quadratic in a tag of a hundred thousand attributes).
fn attributes<'a>(
    e: &'a BytesStart<'_>,
) -> std::iter::Take<quick_xml::events::attributes::Attributes<'a>> {
    let mut a = e.attributes();
    a.with_checks(false);
    a.take(MAX_ATTRIBUTES)
}

/// An SVG `<tspan>` placed on a line of its own (`x`, `y` or `dy`).
fn starts_a_line(e: &BytesStart<'_>) -> bool {
    attributes(e)
        .flatten()
        .any(|a| matches!(a.key.local_name().as_ref(), "x" | "y" | "dy"))
}

/// Most links taken from one XML document.
const MAX_LINKS: usize = 16;

/// A hyperlink's target on an element (SVG `<a href>`, `xlink:href`).
fn link_of(e: &BytesStart<'_>, links: &mut usize, out: &mut Vec<Piece>) {
    if e.local_name().as_ref() != "a" || *links >= MAX_LINKS {
        return;
    }
    for a in attributes(e).flatten() {
        if a.key.local_name().as_ref() == "href" {
            if let Ok(v) = a.normalized_value(quick_xml::XmlVersion::Implicit1_0) {
                *links += 1;
                out.push(Piece::Link(v.trim().to_owned()));
                return;
            }
        }
    }
}

/// The external targets of an Office relationships part: its hyperlinks.
fn relation_links(bytes: &[u8], out: &mut Vec<Piece>) {
    let mut reader = Reader::from_reader(bytes);
    let mut links = 0;
    while links < MAX_LINKS {
        let e = match reader.read_event() {
            Ok(Event::Empty(e)) | Ok(Event::Start(e)) => e,
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => continue,
        };
        let mut target = None;
        let mut external = false;
        for a in attributes(&e).flatten() {
            match a.key.local_name().as_ref() {
                "Target" => {
                    target = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .ok()
                        .map(|v| v.into_owned())
                }
                "TargetMode" => external = a.value.as_ref() == "External",
                _ => {}
            }
        }
        if let (Some(t), true) = (target, external) {
            links += 1;
            out.push(Piece::Link(t));
        }
    }
}

/// Appends `s` with its runs of whitespace as one space, and none at the
/// start of a line (the layout of the XML source is no text).
fn push_collapsed(text: &mut String, s: &str) {
    for c in s.chars() {
        if c.is_whitespace() {
            if !text.is_empty() && !text.ends_with([' ', '\n']) {
                text.push(' ');
            }
        } else {
            text.push(c);
        }
    }
}

fn line_break(text: &mut String) {
    while text.ends_with(' ') {
        text.pop();
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

fn paragraph_break(text: &mut String) {
    line_break(text);
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push('\n');
    }
}

/// RTF destinations whose text is not the document's (font and colour
/// tables, style sheets, document information, pictures, headers' field
/// instructions).
const RTF_SKIPPED: &[&[u8]] = &[
    b"fonttbl",
    b"colortbl",
    b"stylesheet",
    b"info",
    b"pict",
    b"object",
    b"fldinst",
    b"themedata",
    b"colorschememapping",
    b"datastore",
    b"latentstyles",
    b"listtable",
    b"listoverridetable",
    b"rsidtbl",
    b"generator",
    b"xmlnstbl",
    b"header",
    b"footer",
];

/// The text of an RTF document: text outside the skipped destinations
/// (`RTF_SKIPPED`, and every `{\*...}` one), `\par` and `\line` as line
/// breaks, `\'hh` as a Windows-1252 character, `\uN` as a Unicode one
/// (its fallback character skipped), hidden text (`\v`) left out.
///
/// Written by hand: the crates that read RTF build a document model with
/// styles for an editor; this needs only its text, in one bounded pass
/// (linear in the input, group depth capped) that cannot fail.
pub fn rtf_text(bytes: &[u8]) -> String {
    /// Deepest group tracked.
    const MAX_GROUPS: usize = 256;
    let mut text = String::new();
    // Per open group: skipped, hidden (`\v`).
    // Per open group: skipped, hidden (`\v`), and the number of fallback
    // characters after a `\u` (`\ucN`, 1 by default).
    let mut groups: Vec<(bool, bool, u8)> = vec![(false, false, 1)];
    let mut skip_fallback = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (skipped, hidden, uc) = groups.last().copied().unwrap_or((false, false, 1));
        i += 1;
        match b {
            b'{' => {
                if groups.len() < MAX_GROUPS {
                    groups.push((skipped, hidden, uc));
                }
            }
            b'}' => {
                if groups.len() > 1 {
                    groups.pop();
                }
            }
            b'\\' => {
                let (word, param, next) = control_word(bytes, i);
                i = next;
                let quiet = skipped || hidden;
                match (word, param) {
                    (b"*", _) => set_top(&mut groups, |g| g.0 = true),
                    (w, _) if RTF_SKIPPED.contains(&w) => set_top(&mut groups, |g| g.0 = true),
                    (b"v", p) => set_top(&mut groups, |g| g.1 = p != Some(0)),
                    (b"plain", _) => set_top(&mut groups, |g| g.1 = false),
                    (b"uc", Some(n)) => set_top(&mut groups, |g| {
                        g.2 = u8::try_from(n.clamp(0, 8)).unwrap_or(1)
                    }),
                    (b"par" | b"line" | b"sect" | b"page" | b"row", _) if !quiet => {
                        line_break(&mut text)
                    }
                    (b"tab" | b"cell", _) if !quiet => text.push(' '),
                    (b"'", _) => {
                        let hex = bytes
                            .get(i..i + 2)
                            .and_then(|h| std::str::from_utf8(h).ok());
                        if let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                            i += 2;
                            if !quiet && skip_fallback == 0 {
                                text.push(windows_1252(byte));
                            }
                        }
                        skip_fallback = skip_fallback.saturating_sub(1);
                    }
                    (b"u", Some(n)) => {
                        let code = if n < 0 { n + 65536 } else { n };
                        if !quiet {
                            text.extend(u32::try_from(code).ok().and_then(char::from_u32));
                        }
                        skip_fallback = usize::from(uc);
                    }
                    // An escaped symbol: `\\`, `\{`, `\}`, `\~`.
                    ([b'~'], _) if !quiet => text.push(' '),
                    ([c @ (b'\\' | b'{' | b'}')], _) if !quiet => text.push(char::from(*c)),
                    _ => {}
                }
            }
            b'\r' | b'\n' => {}
            _ => {
                if skip_fallback > 0 {
                    skip_fallback -= 1;
                } else if !skipped && !hidden {
                    text.push(char::from(b));
                }
            }
        }
    }
    text.trim().to_owned()
}

fn set_top(groups: &mut [(bool, bool, u8)], f: impl FnOnce(&mut (bool, bool, u8))) {
    if let Some(g) = groups.last_mut() {
        f(g);
    }
}

/// The control word at `i` (just after a backslash): its letters (or one
/// symbol), its numeric parameter, and where the text after it starts.
fn control_word(bytes: &[u8], i: usize) -> (&[u8], Option<i32>, usize) {
    let letters = run(bytes, i, 32, u8::is_ascii_alphabetic);
    if letters == 0 {
        let sym = bytes.get(i..i + 1).unwrap_or_default();
        return (sym, None, i + sym.len());
    }
    let word = bytes.get(i..i + letters).unwrap_or_default();
    let mut j = i + letters;
    let neg = bytes.get(j) == Some(&b'-');
    if neg {
        j += 1;
    }
    let digits = run(bytes, j, 10, u8::is_ascii_digit);
    let param = std::str::from_utf8(bytes.get(j..j + digits).unwrap_or_default())
        .ok()
        .and_then(|d| d.parse::<i64>().ok())
        .map(|n| if neg { -n } else { n })
        .and_then(|n| i32::try_from(n).ok());
    if digits == 0 && neg {
        j -= 1;
    }
    j += digits;
    // One space ends a control word and is part of it.
    if bytes.get(j) == Some(&b' ') {
        j += 1;
    }
    (word, param, j)
}

/// How many bytes from `from` on, `max` at most, meet `class`.
fn run(bytes: &[u8], from: usize, max: usize, class: fn(&u8) -> bool) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    rest.iter().take(max).take_while(|b| class(b)).count()
}

/// A Windows-1252 byte as a character (RTF's `\'hh` under `\ansi`).
fn windows_1252(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9f => HIGH.get(usize::from(b - 0x80)).copied().unwrap_or('?'),
        _ => char::from(b),
    }
}

/// Decodes a smuggled blob.
type Decoder = fn(&str) -> Option<Vec<u8>>;

/// Most smuggled documents taken from one page.
const MAX_SMUGGLED: usize = 4;
/// Shortest encoded blob looked at (a page's worth; shorter ones are
/// tracking tokens and icons).
const MIN_SMUGGLED: usize = 64;

/// Documents smuggled in an attached page (HTML smuggling): what a browser
/// shows when the page is opened, though its source holds none of it as
/// text: a string decoded by script (`atob("...")`, `unescape("%3C...")`,
/// `decodeURIComponent(...)`, string pieces joined by `+`), a `data:`
/// URL of a page (`data:text/html;base64,...`), and any string of a
/// script that decodes to text however the script reaches it (through a
/// variable, `TextDecoder`, an array joined: `script_strings`). Each
/// decoded document that is text (UTF-8 without control bytes) is
/// returned once for the caller to render; the decoded bytes count
/// against `budget`. Script is not run: what it computes otherwise (keys,
/// XOR, fetched content) is not seen.
pub fn smuggled(html: &str, budget: &mut Budget) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut out = called(html, &lower, budget);
    if out.len() < MAX_SMUGGLED && !budget.cut {
        for text in script_strings(html, &lower, budget) {
            if out.len() >= MAX_SMUGGLED {
                break;
            }
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    out
}

/// [`smuggled`]'s documents decoded where the page names their decoding.
fn called(html: &str, lower: &str, budget: &mut Budget) -> Vec<String> {
    let mut out = Vec::new();
    let calls: [(&str, Decoder); 4] = [
        ("atob(", base64_blob),
        ("unescape(", percent_blob),
        ("decodeuricomponent(", percent_blob),
        ("data:text/html;base64,", base64_blob),
    ];
    for (marker, decode) in calls {
        let mut from = 0;
        while let Some(at) = lower.get(from..).and_then(|l| l.find(marker)) {
            let start = from + at + marker.len();
            if out.len() >= MAX_SMUGGLED {
                return out;
            }
            let rest = html.get(start..).unwrap_or("");
            let (encoded, used) = if marker.starts_with("data:") {
                let run = rest
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
                    .count();
                (rest.get(..run).unwrap_or("").to_owned(), run)
            } else {
                string_literals(rest)
            };
            // The next call is looked for after this one's argument: each
            // byte is read once, however the calls nest.
            from = start + used;
            if encoded.len() < MIN_SMUGGLED {
                continue;
            }
            let Some(bytes) = decode(&encoded) else {
                continue;
            };
            if !budget.take(bytes.len()) {
                return out;
            }
            if let Ok(text) = String::from_utf8(bytes) {
                if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) {
                    out.push(text);
                }
            }
        }
    }
    out
}

/// Most bytes of script read for [`script_strings`] in one page.
const MAX_SCRIPT_BYTES: usize = 4 << 20;

/// The texts a page's scripts hold encoded, whatever code decodes them:
/// each run of string literals joined by `+` or listed in an array (`"ab"
/// + 'cd'`, `["ab", "cd"]`) and each `String.fromCharCode(...)` list,
/// of [`MIN_SMUGGLED`] characters or more, decoded as base64 (also
/// written backwards), hex, percent escapes, or as its own JavaScript
/// escapes (`"\x3c\x70..."`) when those hide markup. What decodes to text
/// is a document. Each byte of script is read once, at most
/// [`MAX_SCRIPT_BYTES`] a page.
fn script_strings(html: &str, lower: &str, budget: &mut Budget) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    let mut read = 0;
    while let Some(open) = lower.get(from..).and_then(|l| l.find("<script")) {
        let start = lower[from + open..]
            .find('>')
            .map_or(lower.len(), |i| from + open + i + 1);
        let end = lower
            .get(start..)
            .and_then(|l| l.find("</script"))
            .map_or(lower.len(), |i| start + i);
        from = end;
        let Some(script) = html.get(start..end) else {
            break;
        };
        let script = cut_at(script, MAX_SCRIPT_BYTES.saturating_sub(read));
        read += script.len();
        for (run, escaped) in literal_runs(script) {
            if out.len() >= MAX_SMUGGLED {
                return out;
            }
            if run.chars().count() < MIN_SMUGGLED {
                continue;
            }
            let Some(text) = decoded_text(&run, escaped, budget) else {
                continue;
            };
            if !out.contains(&text) {
                out.push(text);
            }
        }
        if read >= MAX_SCRIPT_BYTES || budget.cut {
            break;
        }
    }
    out
}

/// `s` cut to at most `n` bytes, at a character's boundary.
fn cut_at(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The runs of string literals of `script` (joined where `+`, `,` or
/// white space is all that stands between two) and the lists of
/// `String.fromCharCode`, each with whether it was written in escapes.
fn literal_runs(script: &str) -> Vec<(String, bool)> {
    let mut runs = Vec::new();
    let mut run = String::new();
    let mut escaped = false;
    let mut chars = script.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                let (text, esc) = literal(&mut chars, c);
                run.push_str(&text);
                escaped |= esc;
                // Joined to the next literal when only these stand between.
                while chars
                    .peek()
                    .is_some_and(|(_, c)| c.is_whitespace() || matches!(c, '+' | ','))
                {
                    chars.next();
                }
                if !chars
                    .peek()
                    .is_some_and(|(_, c)| matches!(c, '"' | '\'' | '`'))
                {
                    runs.push((std::mem::take(&mut run), std::mem::take(&mut escaped)));
                }
            }
            'f' | 'F'
                if script
                    .get(i..i + 13)
                    .is_some_and(|w| w.eq_ignore_ascii_case("fromcharcode(")) =>
            {
                let mut text = String::new();
                let mut number = String::new();
                for (_, c) in chars.by_ref() {
                    match c {
                        '0'..='9' => number.push(c),
                        ',' | ')' => {
                            if let Some(ch) = number.parse::<u32>().ok().and_then(char::from_u32) {
                                text.push(ch);
                            }
                            number.clear();
                            if c == ')' {
                                break;
                            }
                        }
                        c if c.is_whitespace() || c.is_ascii_alphabetic() || c == '(' => {}
                        _ => break,
                    }
                }
                runs.push((text, true));
            }
            // A comment: what it holds is not code.
            '/' if chars.peek().is_some_and(|(_, c)| *c == '/') => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    if !run.is_empty() {
        runs.push((run, escaped));
    }
    runs
}

/// One JavaScript string literal after its opening `quote`: its value
/// (`\xHH`, `\uHHHH` and `\u{H...}` read; another escaped character
/// kept) and whether escapes of characters wrote any of it.
fn literal(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
    quote: char,
) -> (String, bool) {
    let mut out = String::new();
    let mut escaped = false;
    while let Some((_, c)) = chars.next() {
        match c {
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    break;
                };
                let code = match e {
                    'x' => hex_digits(chars, 2),
                    'u' if chars.peek().is_some_and(|(_, c)| *c == '{') => {
                        chars.next();
                        let mut v = 0u32;
                        let mut ok = true;
                        for (_, c) in chars.by_ref() {
                            match c.to_digit(16) {
                                Some(d) if v < 0x11_0000 => v = v * 16 + d,
                                _ if c == '}' => break,
                                _ => ok = false,
                            }
                        }
                        ok.then_some(v)
                    }
                    'u' => hex_digits(chars, 4),
                    'n' => Some(u32::from('\n')),
                    't' => Some(u32::from('\t')),
                    _ => {
                        out.push(e);
                        continue;
                    }
                };
                if let Some(ch) = code.and_then(char::from_u32) {
                    escaped |= e == 'x' || e == 'u';
                    out.push(ch);
                }
            }
            c if c == quote => break,
            c => out.push(c),
        }
    }
    (out, escaped)
}

/// The value of the next `n` hex digits of `chars`, or `None` (and the
/// digits there were taken) when fewer follow.
fn hex_digits(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>, n: usize) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..n {
        let d = chars.peek().and_then(|(_, c)| c.to_digit(16))?;
        chars.next();
        v = v * 16 + d;
    }
    Some(v)
}

/// The text `run` holds: decoded as base64 (forwards, then written
/// backwards), hex or percent escapes, or, written in escapes, itself when
/// it holds markup. `None` when no decoding gives text.
fn decoded_text(run: &str, escaped: bool, budget: &mut Budget) -> Option<String> {
    let trimmed = run.trim();
    let base64 = |s: &str| {
        s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\n' | b'\r'))
            .then(|| base64_blob(s))
            .flatten()
    };
    let hex = |s: &str| {
        (s.len().is_multiple_of(2) && s.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| {
                (0..s.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .flatten()
    };
    let reversed: String = trimmed.chars().rev().collect();
    let tries: [&dyn Fn() -> Option<Vec<u8>>; 4] = [
        &|| hex(trimmed),
        &|| base64(trimmed),
        &|| base64(&reversed),
        &|| {
            trimmed
                .contains('%')
                .then(|| percent_blob(trimmed))
                .flatten()
        },
    ];
    for decode in tries {
        let Some(bytes) = decode() else {
            continue;
        };
        if let Some(text) = text_of(&bytes) {
            return budget.take(bytes.len()).then_some(text);
        }
    }
    (escaped && trimmed.contains('<') && trimmed.contains('>'))
        .then(|| text_of(trimmed.as_bytes()))
        .flatten()
        .filter(|_| budget.take(trimmed.len()))
}

/// `bytes` as text a page shows: UTF-8 without control characters, nine
/// in ten of its characters letters, digits, white space or ASCII signs.
fn text_of(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return None;
    }
    let plain = text
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace() || c.is_ascii_punctuation())
        .count();
    (plain * 10 >= text.chars().count() * 9).then(|| text.to_owned())
}

/// The string literals at the start of `s` (a call's argument), joined
/// (`"ab" + 'cd'` is `abcd`; a backslash keeps the character after it),
/// and the bytes of `s` they take.
fn string_literals(s: &str) -> (String, usize) {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    let mut used = 0;
    loop {
        while chars
            .peek()
            .is_some_and(|(_, c)| c.is_whitespace() || *c == '+')
        {
            chars.next();
        }
        let Some((_, quote)) = chars.next_if(|(_, c)| matches!(c, '"' | '\'' | '`')) else {
            return (out, used);
        };
        used = s.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => out.extend(chars.next().map(|(_, c)| c)),
                c if c == quote => {
                    used = i + 1;
                    break;
                }
                c => out.push(c),
            }
        }
    }
}

fn base64_blob(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(clean.trim_end_matches('=')).ok()
}

fn percent_blob(s: &str) -> Option<Vec<u8>> {
    if !s.contains('%') {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (c, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Calendar and contact properties whose values a reader sees.
const CARD_TEXT: &[&str] = &[
    "SUMMARY",
    "DESCRIPTION",
    "LOCATION",
    "COMMENT",
    "CONTACT",
    "FN",
    "ORG",
    "TITLE",
    "NOTE",
    "ROLE",
];
/// Properties whose values are links.
const CARD_LINKS: &[&str] = &["URL", "ATTACH", "SOURCE"];

/// The text of an iCalendar (RFC 5545) or vCard (RFC 6350) file: the
/// values of the properties a calendar or address book shows
/// (`CARD_TEXT`), unfolded and unescaped; `X-ALT-DESC` (HTML) for the
/// caller to render; URLs as links.
pub fn card_text(bytes: &[u8], out: &mut Vec<Piece>) {
    let content = String::from_utf8_lossy(bytes);
    // Unfolding: a line break followed by a space or tab continues the line.
    let unfolded = content
        .replace("\r\n ", "")
        .replace("\r\n\t", "")
        .replace("\n ", "")
        .replace("\n\t", "");
    let mut text = String::new();
    for line in unfolded.lines() {
        let Some((head, value)) = split_property(line) else {
            continue;
        };
        let name = head.split(';').next().unwrap_or("").to_ascii_uppercase();
        let value = unescape_card(value);
        if CARD_TEXT.contains(&name.as_str()) {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(value.trim());
        } else if name == "X-ALT-DESC" {
            out.push(Piece::Html(value));
        } else if CARD_LINKS.contains(&name.as_str()) && value.contains("://") {
            out.push(Piece::Link(value.trim().to_owned()));
        }
    }
    if !text.trim().is_empty() {
        out.insert(0, Piece::Text(text));
    }
}

/// A content line's name and parameters, and its value: split at the
/// first colon outside a quoted parameter value.
fn split_property(line: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ':' if !quoted => return Some((line.get(..i)?, line.get(i + 1..)?)),
            _ => {}
        }
    }
    None
}

fn unescape_card(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'N') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, content) in entries {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(content).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn texts(pieces: &[Piece]) -> String {
        pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    #[test]
    fn formats_are_told_by_their_bytes() {
        assert_eq!(sniff(&zip_of(&[("a.txt", b"x")])), Some(Format::Zip));
        assert_eq!(sniff(b"\x1f\x8b\x08\0"), Some(Format::Gzip));
        assert_eq!(sniff(b"%PDF-1.4\n"), Some(Format::Pdf));
        assert_eq!(sniff(b"{\\rtf1\\ansi hello}"), Some(Format::Rtf));
        assert_eq!(sniff(b"BEGIN:VCALENDAR\r\n"), Some(Format::Card));
        assert_eq!(sniff(b"\xef\xbb\xbf  begin:vcard\n"), Some(Format::Card));
        assert_eq!(sniff(b"<?xml version=\"1.0\"?><svg/>"), Some(Format::Xml));
        assert_eq!(
            sniff(b"<svg xmlns=\"x\"><text>a</text></svg>"),
            Some(Format::Xml)
        );
        assert_eq!(sniff(b"<!DOCTYPE html><p>x"), Some(Format::Html));
        assert_eq!(
            sniff(b"From: a@b\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related\r\n"),
            Some(Format::Message)
        );
        assert_eq!(sniff(b"Hello: this is text\nand more"), None);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(sniff(b"just some words"), None);
    }

    /// An archive of `entries`, each encrypted with `password`: ZipCrypto,
    /// or AES-256 when `aes`.
    fn encrypted_zip_of(entries: &[(&str, &[u8])], password: &str, aes: bool) -> Vec<u8> {
        use zip::unstable::write::FileOptionsExt;
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, content) in entries {
            let options = zip::write::SimpleFileOptions::default();
            let options = if aes {
                options.with_aes_encryption(zip::AesMode::Aes256, password)
            } else {
                options
                    .with_deprecated_encryption(password.as_bytes())
                    .unwrap()
            };
            w.start_file(*name, options).unwrap();
            w.write_all(content).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    /// Passwords as messages state them: after the word that names one,
    /// linking words passed over, quotes taken off; "passed" or
    /// "passport" name none; strong names come first, so that "pass" or
    /// "code" strewn ahead cannot use the bound up.
    #[test]
    fn stated_passwords_are_found_as_a_reader_finds_them() {
        let has = |text: &str, pw: &str| {
            let got = stated_passwords(text);
            assert!(got.iter().any(|g| g == pw), "{text:?}: {got:?}");
        };
        has("Password: 4411", "4411");
        has("The archive password is \"inv-2231\".", "inv-2231");
        has("Passwort für die Datei: Abc#9", "Abc#9");
        has("Mot de passe : X7y-Q", "X7y-Q");
        has("Use PW 8812 to open the attached file", "8812");
        has("Invoice attached (pass: 5521)", "5521");
        has("your code to open it is 7730", "7730");
        let none = stated_passwords("I passed the exam with my passport and a bypass.");
        assert!(none.is_empty(), "{none:?}");
        let stuffed = format!(
            "{} The password is hunter2.",
            "code pin pass key ".repeat(40)
        );
        let got = stated_passwords(&stuffed);
        assert_eq!(got.first().map(String::as_str), Some("hunter2"), "{got:?}");
        assert!(got.len() <= MAX_PASSWORDS);
        let long = format!("password: {}", "x".repeat(200));
        assert!(stated_passwords(&long).is_empty());
    }

    /// An encrypted archive whose password the message states is read
    /// (ZipCrypto and AES); with other passwords it is skipped, as before,
    /// and the tries are bounded.
    #[test]
    fn an_encrypted_archive_is_opened_with_the_stated_password() {
        let doc = b"Your invoice 2231 is overdue: pay at secure-billing now.";
        for aes in [false, true] {
            let z = encrypted_zip_of(&[("invoice.txt", doc), ("more.txt", doc)], "inv-2231", aes);
            let mut budget = Budget {
                passwords: vec!["wrong".into(), "inv-2231".into()],
                ..Budget::default()
            };
            let pieces = read(&z, Format::Zip, 0, &mut budget);
            let inner: Vec<&Vec<u8>> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Inner { bytes, .. } => Some(bytes),
                    _ => None,
                })
                .collect();
            assert_eq!(inner.len(), 2, "aes {aes}");
            assert!(inner.iter().all(|b| b.as_slice() == doc));
            // The one that opened the first entry was tried first on the
            // second: three tries in all.
            assert_eq!(budget.password_tries, PASSWORD_TRIES - 3, "aes {aes}");
            let mut wrong = Budget {
                passwords: (0..MAX_PASSWORDS).map(|i| format!("guess{i}")).collect(),
                password_tries: 40,
                ..Budget::default()
            };
            assert!(read(&z, Format::Zip, 0, &mut wrong).is_empty());
            assert_eq!(wrong.password_tries, 0);
            assert!(wrong.cut, "tries ran out: read partly");
            assert!(read(&z, Format::Zip, 0, &mut Budget::default()).is_empty());
        }
    }

    /// Word opens the part its relationships name, and shows headers and
    /// footers; Excel shows cells written inline in the sheet.
    #[test]
    fn office_text_is_found_as_the_office_finds_it() {
        let rels = br#"<?xml version="1.0"?><Relationships xmlns="r"><Relationship Id="rId1"
 Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
 Target="/word/body7.xml"/></Relationships>"#;
        let body = br#"<w:document xmlns:w="w"><w:body><w:p><w:r><w:t>Wire the payment today</w:t></w:r></w:p></w:body></w:document>"#;
        let header = br#"<w:hdr xmlns:w="w"><w:p><w:r><w:t>Finance department notice</w:t></w:r></w:p></w:hdr>"#;
        let z = zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("_rels/.rels", rels),
            ("word/body7.xml", body),
            ("word/header2.xml", header),
            (
                "word/styles.xml",
                b"<w:styles xmlns:w=\"w\"><w:t>not text</w:t></w:styles>",
            ),
        ]);
        let text = texts(&read(&z, Format::Zip, 0, &mut Budget::default()));
        assert!(text.contains("Wire the payment today"), "{text}");
        assert!(text.contains("Finance department notice"), "{text}");
        assert!(!text.contains("not text"), "{text}");
        let sheet = br#"<worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Claim your refund now</t></is></c></row></sheetData></worksheet>"#;
        let z = zip_of(&[("xl/worksheets/sheet1.xml", sheet)]);
        let text = texts(&read(&z, Format::Zip, 0, &mut Budget::default()));
        assert!(text.contains("Claim your refund now"), "{text}");
    }

    /// The audit's padding: 3 MiB of blanks before a document's text used
    /// the budget up and the text was never read. Blanks are read, not
    /// kept; a bomb of blanks stops at its bound.
    #[test]
    fn a_document_padded_with_blanks_is_read() {
        let pad = " \n\t".repeat(1 << 20);
        let doc = format!(
            "<?xml version=\"1.0\"?><w:document xmlns:w=\"w\"><w:body>{pad}<w:p><w:r>\
             <w:t>Your invoice is overdue</w:t></w:r></w:p></w:body></w:document>"
        );
        let z = zip_of(&[("word/document.xml", doc.as_bytes())]);
        let mut budget = Budget::default();
        let pieces = read(&z, Format::Zip, 0, &mut budget);
        assert!(texts(&pieces).contains("Your invoice is overdue"));
        assert!(!budget.cut);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(doc.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let mut budget = Budget::default();
        let inner = gunzip(&gz, &mut budget).unwrap();
        assert!(inner.len() < 1024, "{}", inner.len());
        // A bomb of blanks: read to its bound, cut.
        let bomb = vec![b' '; RAW_PER_BYTE * WORK_BYTES + 1024 * 1024];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bomb).unwrap();
        let gz = gz.finish().unwrap();
        let mut budget = Budget::default();
        let _ = gunzip(&gz, &mut budget);
        assert!(budget.cut);
        // Binary content (a NUL near its start) is kept as it is.
        let mut picture = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        picture.extend(vec![b' '; 4096]);
        let z = zip_of(&[("media/a.png", &picture)]);
        let mut budget = Budget::default();
        let pieces = read(&z, Format::Zip, 0, &mut budget);
        let kept = pieces.iter().find_map(|p| match p {
            Piece::Inner { bytes, .. } => Some(bytes.len()),
            _ => None,
        });
        assert_eq!(kept, Some(picture.len()));
    }

    #[test]
    fn a_word_document_is_read_without_its_hidden_runs() {
        let doc = br#"<?xml version="1.0"?><w:document xmlns:w="w"><w:body>
<w:p><w:r><w:t>Your account</w:t></w:r><w:r><w:t xml:space="preserve"> is lo</w:t></w:r><w:r><w:t>cked</w:t></w:r></w:p>
<w:p><w:r><w:rPr><w:vanish/></w:rPr><w:t>junk words here</w:t></w:r><w:r><w:t>Call &amp; pay</w:t></w:r></w:p>
<w:p><w:del><w:r><w:delText>deleted</w:delText></w:r></w:del><w:r><w:tab/><w:t>now</w:t></w:r></w:p>
</w:body></w:document>"#;
        let rels = br#"<Relationships><Relationship Id="r1" Target="http://evil.example/x" TargetMode="External"/><Relationship Id="r2" Target="styles.xml"/></Relationships>"#;
        let docx = zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            (
                "word/styles.xml",
                b"<w:styles><w:t>style text</w:t></w:styles>",
            ),
            ("word/_rels/document.xml.rels", rels),
            ("word/document.xml", doc),
        ]);
        let pieces = read(&docx, Format::Zip, 0, &mut Budget::default());
        assert_eq!(
            texts(&pieces),
            "Your account is locked\n\nCall & pay\n\nnow"
        );
        assert!(pieces.contains(&Piece::Link("http://evil.example/x".into())));
        assert_eq!(pieces.len(), 2, "{pieces:?}");
    }

    #[test]
    fn slides_are_read_in_their_order_and_other_entries_handed_back() {
        let slide = |t: &str| format!("<p:sld><a:p><a:r><a:t>{t}</a:t></a:r></a:p></p:sld>");
        let (s2, s10) = (slide("second"), slide("tenth"));
        let z = zip_of(&[
            ("ppt/slides/slide10.xml", s10.as_bytes()),
            ("ppt/slides/slide2.xml", s2.as_bytes()),
            ("page.html", b"<html><p>inner</p>"),
        ]);
        let pieces = read(&z, Format::Zip, 0, &mut Budget::default());
        assert_eq!(texts(&pieces), "second\n\ntenth");
        assert_eq!(
            pieces.last(),
            Some(&Piece::Inner {
                bytes: b"<html><p>inner</p>".to_vec(),
                depth: 1
            })
        );
        // Past the depth, an archive is not opened.
        assert!(read(&z, Format::Zip, MAX_DEPTH + 1, &mut Budget::default()).is_empty());
    }

    #[test]
    fn svg_text_lines_are_read_and_hidden_ones_not() {
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><title>tip</title>
<text x="1" y="10">Claim your</text><text x="1" y="20">prize <tspan>today</tspan></text>
<text display="none">hidden junk</text><g opacity="0"><text>more junk</text></g>
<a href="https://phish.example/">link</a></svg>"#;
        let pieces = read(svg, Format::Xml, 0, &mut Budget::default());
        assert_eq!(texts(&pieces), "Claim your\nprize today");
        assert!(pieces.contains(&Piece::Link("https://phish.example/".into())));
    }

    #[test]
    fn svg_numbers_are_read_as_a_viewer_reads_them() {
        assert_eq!(first_number("1.5em"), Some(1.5));
        assert_eq!(first_number(" -12px 30"), Some(-12.0));
        assert_eq!(first_number("1e2"), Some(100.0));
        assert_eq!(first_number("2E-1x"), Some(0.2));
        assert_eq!(first_number("e"), None);
        assert_eq!(first_number("1e999"), None);
    }

    /// SVG text is read where it is drawn, whatever the source's order:
    /// lines from the top, each from the left, translations followed, a
    /// word drawn letter by letter read as one, text outside `<text>`
    /// (not drawn) not read.
    #[test]
    fn svg_text_is_read_where_it_is_drawn() {
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg">
<text x="10" y="60">unless you confirm</text>
<text x="260" y="40">closed</text>
<g transform="translate(0,20)"><text x="10" y="20">Your account <tspan x="150">will be</tspan></text></g>
<g transform="matrix(1 0 0 1 10 80)"><text font-size="20"><tspan x="0">t</tspan><tspan x="6">o</tspan><tspan x="17">d</tspan><tspan x="28">a</tspan><tspan x="39">y</tspan></text></g>
stray words</svg>"#;
        let pieces = read(svg, Format::Xml, 0, &mut Budget::default());
        assert_eq!(
            texts(&pieces),
            "Your account will be closed\nunless you confirm\ntoday"
        );
    }

    #[test]
    fn calendar_descriptions_are_unfolded_and_unescaped() {
        let ics = b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:123@x\r\nSUMMARY:Payroll upd\r\n ate\r\nDESCRIPTION;LANGUAGE=en:Dear user\\, your\\nmailbox is full\\; act now.\r\nURL:https://x.example/a\r\nX-ALT-DESC;FMTTYPE=text/html:<p>hi</p>\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let pieces = read(ics, Format::Card, 0, &mut Budget::default());
        assert_eq!(
            texts(&pieces),
            "Payroll update\n\nDear user, your\nmailbox is full; act now."
        );
        assert!(pieces.contains(&Piece::Link("https://x.example/a".into())));
        assert!(pieces.contains(&Piece::Html("<p>hi</p>".into())));
    }

    #[test]
    fn rtf_text_skips_tables_hidden_text_and_fallbacks() {
        let rtf = br"{\rtf1\ansi{\fonttbl{\f0 Arial;}}{\colortbl;\red0;}{\*\generator x;}\f0 Dear caf\'e9 owner,\par {\v secret }you won \u8364? 100\par}";
        assert_eq!(rtf_text(rtf), "Dear caf\u{e9} owner,\nyou won \u{20ac} 100");
        // `\ucN`: N fallback characters (none: the next letter is text).
        assert_eq!(
            rtf_text(br"{\rtf1\uc0\u97 ccount \uc2\u98 xxill}"),
            "account bill"
        );
        // Unbalanced and deep groups, stray backslashes: no panic.
        let hostile: Vec<u8> = b"{\\rtf1"
            .iter()
            .chain(&[b'{'; 10_000])
            .chain(b"\\u-99999999999\\'zz\\")
            .copied()
            .collect();
        let _ = rtf_text(&hostile);
    }

    #[test]
    fn a_zip_bomb_stops_at_the_budget() {
        let zeros = vec![0u8; 8 * 1024 * 1024];
        let z = zip_of(&[("a.txt", &zeros), ("b.txt", &zeros)]);
        assert!(z.len() < 100_000);
        let mut budget = Budget::default();
        let pieces = read(&z, Format::Zip, 0, &mut budget);
        assert!(budget.cut);
        let total: usize = pieces
            .iter()
            .map(|p| match p {
                Piece::Inner { bytes, .. } => bytes.len(),
                _ => 0,
            })
            .sum();
        assert!(total <= WORK_BYTES, "{total}");
        // A gzip of zeros too.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&zeros).unwrap();
        let gz = gz.finish().unwrap();
        let mut budget = Budget::default();
        let pieces = read(&gz, Format::Gzip, 0, &mut budget);
        assert!(budget.cut);
        assert!(
            matches!(&pieces[..], [Piece::Inner { bytes, depth: 1 }] if bytes.len() == WORK_BYTES)
        );
    }

    #[test]
    fn thousands_of_entries_open_at_most_the_bound() {
        let names: Vec<String> = (0..5000).map(|i| format!("f{i}.txt")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let z = zip_of(&entries);
        let mut budget = Budget::default();
        let pieces = read(&z, Format::Zip, 0, &mut budget);
        assert_eq!(pieces.len(), MAX_ENTRIES);
        assert!(budget.cut);
    }

    #[test]
    fn smuggled_pages_are_decoded() {
        use base64::Engine as _;
        let page = "<html><body><h1>Your mailbox is full</h1><p>Sign in to keep your messages.</p></body></html>";
        let b64 = base64::engine::general_purpose::STANDARD.encode(page);
        let (a, b) = b64.split_at(b64.len() / 2);
        let atob =
            format!("<html><script>document.write(atob(\"{a}\" +\n '{b}'));</script></html>");
        assert_eq!(
            smuggled(&atob, &mut Budget::default()),
            vec![page.to_owned()]
        );
        let pct: String = page.bytes().map(|c| format!("%{c:02X}")).collect();
        let unescape = format!("<script>document.write(unescape('{pct}'))</script>");
        assert_eq!(
            smuggled(&unescape, &mut Budget::default()),
            vec![page.to_owned()]
        );
        let data = format!("<iframe src=\"data:text/html;base64,{b64}\"></iframe>");
        assert_eq!(
            smuggled(&data, &mut Budget::default()),
            vec![page.to_owned()]
        );
        // Short strings, binaries and broken blobs are not documents.
        assert!(smuggled("<script>atob('aGVsbG8=')</script>", &mut Budget::default()).is_empty());
        let binary = base64::engine::general_purpose::STANDARD.encode([0u8, 1, 2, 3].repeat(40));
        assert!(smuggled(&format!("atob('{binary}')"), &mut Budget::default()).is_empty());
        let _ = smuggled("atob('\\", &mut Budget::default());
        let _ = smuggled(&"atob(".repeat(10_000), &mut Budget::default());
        // Calls nested in one argument are read once (a scan from each
        // call to the argument's end would read 1.4 MB 200,000 times).
        let nested = format!("atob('{}'", "atob('x".repeat(200_000));
        assert!(smuggled(&nested, &mut Budget::default()).is_empty());
    }

    /// The class, not the call: however a script reaches the encoded page
    /// (a variable and `TextDecoder`, an array joined, the string written
    /// backwards, hex, escapes, char codes), a browser shows it.
    #[test]
    fn smuggled_pages_are_decoded_however_the_script_reaches_them() {
        use base64::Engine as _;
        let page = "<html><body><p>Your password expires today. Keep it at the \
            portal below or lose your mail.</p></body></html>";
        let b64 = base64::engine::general_purpose::STANDARD.encode(page);
        let (a, b) = b64.split_at(40);
        let hex: String = page.bytes().map(|c| format!("{c:02x}")).collect();
        let escapes: String = page.bytes().map(|c| format!("\\x{c:02x}")).collect();
        let codes: Vec<String> = page.bytes().map(|c| c.to_string()).collect();
        let reversed: String = b64.chars().rev().collect();
        let scripts = [
            format!("const d = \"{b64}\";\nconst bytes = Uint8Array.from(atob(d), c => c.charCodeAt(0));\n\
                document.body.innerHTML = new TextDecoder().decode(bytes);"),
            format!("var p = ['{a}', '{b}'];\nvar s = p.join('');\ndocument.write(window['at' + 'ob'](s));"),
            format!("let r = `{reversed}`; document.write(atob(r.split('').reverse().join('')));"),
            format!("var h = \"{hex}\"; var out = ''; for (var i = 0; i < h.length; i += 2) \
                out += String.fromCharCode(parseInt(h.substr(i, 2), 16)); document.write(out);"),
            format!("document.write(\"{escapes}\");"),
            format!("document.write(String.fromCharCode({}));", codes.join(", ")),
        ];
        for script in &scripts {
            let html = format!(
                "<html><head><SCRIPT type=\"text/javascript\">{script}</SCRIPT></head></html>"
            );
            assert_eq!(
                smuggled(&html, &mut Budget::default()),
                vec![page.to_owned()],
                "{script}"
            );
        }
        // One page, decoded by a call and held by a variable: read once.
        let both = format!("<script>var d = atob('{b64}'); var e = '{b64}';</script>");
        assert_eq!(smuggled(&both, &mut Budget::default()).len(), 1);
        // Ordinary scripts hold no document.
        let binary =
            base64::engine::general_purpose::STANDARD.encode((0u8..=255).collect::<Vec<_>>());
        let ordinary = [
            "var msg = 'Please enable JavaScript to view this page and go on to your account settings';".to_owned(),
            "var alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';".to_owned(),
            format!("var logo = 'data:image/png;base64,{binary}';"),
            "// don't\nvar id = 'G-1234567890'; gtag('config', id);".to_owned(),
            format!("var k = '{}';", "ab".repeat(100)),
        ];
        for script in &ordinary {
            let html = format!("<script>{script}</script>");
            assert!(
                smuggled(&html, &mut Budget::default()).is_empty(),
                "{script}"
            );
        }
        // Hostile: unterminated literals, escapes, huge scripts; read once.
        let _ = smuggled("<script>'\\u{", &mut Budget::default());
        let _ = smuggled("<script>fromCharCode(", &mut Budget::default());
        let quotes = format!("<script>{}</script>", "'a' + ".repeat(1_000_000));
        let _ = smuggled(&quotes, &mut Budget::default());
        let many = format!("<script>{}", "\"".repeat(3_000_000));
        assert!(smuggled(&many, &mut Budget::default()).is_empty());
    }

    #[test]
    fn review_findings_hold() {
        // A tag of 100,000 attributes with repeated names: read in one
        // pass (quick-xml's check for repeated names was quadratic).
        let mut svg = String::from("<svg><text");
        for i in 0..100_000 {
            svg.push_str(&format!(" a{}=\"\"", i % 50_000));
        }
        svg.push_str(">kept</text></svg>");
        let mut out = Vec::new();
        xml_text(svg.as_bytes(), &mut out);
        assert_eq!(texts(&out), "kept");
        // The Office text after a thousand and more entries is read.
        let names: Vec<String> = (0..1_500).map(|i| format!("junk/{i}.bin")).collect();
        let mut entries: Vec<(&str, &[u8])> =
            names.iter().map(|n| (n.as_str(), &b""[..])).collect();
        entries.push(("word/document.xml", b"<w:p><w:t>late text</w:t></w:p>"));
        let pieces = read(&zip_of(&entries), Format::Zip, 0, &mut Budget::default());
        assert!(texts(&pieces).contains("late text"), "{:?}", texts(&pieces));
    }

    #[test]
    fn broken_inputs_give_what_was_read() {
        let z = zip_of(&[("word/document.xml", b"<w:p><w:t>half a doc</w:t></w:p>")]);
        for cut in [0, 4, 30, z.len() / 2, z.len() - 1] {
            let _ = read(&z[..cut], Format::Zip, 0, &mut Budget::default());
        }
        let mut out = Vec::new();
        xml_text(b"<a><p>kept</p><b attr=\"unclosed></a>", &mut out);
        assert_eq!(texts(&out), "kept");
        let mut out = Vec::new();
        xml_text(&[0xff, 0xfe, b'<', 0], &mut out);
        card_text(b"BEGIN:VCARD\nNOTE:\\", &mut out);
    }
}
