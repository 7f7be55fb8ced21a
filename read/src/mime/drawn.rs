//! Text drawn by the page's own fonts, read as it is drawn.
//!
//! A page may bring its own fonts: an `@font-face` rule of a `<style>`
//! element whose source is written into the message (a `data:` address:
//! TrueType, OpenType, WOFF or WOFF2). Text set in such a font shows the font's
//! drawings, not its code points: a font that draws `q` as `a` (a "font
//! cipher") shows words the code points do not hold, and one that draws
//! letters blank hides them. So such text is read as a person reads it:
//! drawn with its font, and the drawing read by the picture path
//! (`picture::picture_text`: Tesseract, within the message's budget of
//! pictures, pixels and time, and left to an OCR worker where the reading
//! process has none). Where nothing reads pictures the text keeps its code
//! points, as before.
//!
//! The HTML reader marks each run of text set in a page font
//! ([`run`]: [`OPEN`], the font's number, the text, [`CLOSE`]);
//! [`resolve`] replaces the marked runs once the message's parts are read.
//! The marks are characters no sender can place: every text the reader
//! takes from the message is cleared of them ([`clear_marks`]).
//!
//! Which text is set in a page font follows the browser's rule: the first
//! family of `font-family` (or `<font face>`) that is available. A page
//! font counts first; a generic family or a font every client has (Arial,
//! Georgia, ...) ends the search; any other name is skipped (a client
//! without it goes on to the next), so `font-family: nosuchfont, cipher`
//! is drawn with the cipher.
//!
//! Bounds: [`MAX_FONTS`] fonts a message of [`MAX_FONT_BYTES`] each, found
//! within `css::MAX_FACE_CSS` bytes of style; [`MAX_DRAWN_CHARS`] characters
//! drawn a message, on at most [`MAX_LINES`] rows of one picture; a glyph's drawing at most 3 em on a side, and
//! [`MAX_CURVES`] outline curves drawn a message; every font is parsed by
//! ttf-parser, which reads untrusted fonts without panicking or
//! allocating per table.

use std::borrow::Cow;

use ab_glyph::{Font, FontRef, GlyphId, OutlinedGlyph, PxScale};

use super::picture::{self, Budget};

/// Most page fonts read from one message.
pub const MAX_FONTS: usize = 4;
/// Largest font read (decoded, and after WOFF's tables are inflated;
/// four times this after WOFF2's).
pub const MAX_FONT_BYTES: usize = 1 << 20;
/// Largest WOFF2 font read (before Brotli).
pub const MAX_WOFF2_BYTES: usize = 512 << 10;
/// Most characters of a message drawn and read.
pub const MAX_DRAWN_CHARS: usize = 2400;
/// Most lines of one run's picture.
pub const MAX_LINES: u32 = 32;
/// Most outline curves drawn for one message.
pub const MAX_CURVES: usize = 400_000;

/// Starts a run set in a page font; the next character is the font's
/// number (U+F0000 + n).
pub const OPEN: char = '\u{FFF9}';
/// Ends a run set in a page font.
pub const CLOSE: char = '\u{FFFB}';
/// The number of a run's font, after [`OPEN`]: in Unicode's
/// supplementary private use area.
const INDEX_BASE: u32 = 0xF_0000;

/// The em of the drawing, in pixels (Tesseract reads text of this size at
/// the 150 dpi it is told best).
const EM: f32 = 26.0;
const LINE: u32 = 36;
const WIDTH: u32 = 1200;
const MARGIN: u32 = 16;

/// Generic families and fonts every mail client's system has: the search
/// for the font in force ends at them.
const INSTALLED: &[&str] = &[
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "ui-serif",
    "ui-sans-serif",
    "ui-monospace",
    "ui-rounded",
    "emoji",
    "math",
    "fangsong",
    "-apple-system",
    "blinkmacsystemfont",
    "arial",
    "arialblack",
    "helvetica",
    "helveticaneue",
    "times",
    "timesnewroman",
    "georgia",
    "verdana",
    "tahoma",
    "trebuchetms",
    "courier",
    "couriernew",
    "segoeui",
    "calibri",
    "cambria",
    "candara",
    "consolas",
    "garamond",
    "palatino",
    "palatinolinotype",
    "bookantiqua",
    "lucidagrande",
    "lucidasans",
    "lucidasansunicode",
    "impact",
    "comicsansms",
    "geneva",
    "optima",
    "roboto",
    "aptos",
];

/// A page font: its family (as [`family_key`] writes it) and its bytes
/// (TrueType or OpenType).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Face {
    pub family: String,
    pub bytes: Vec<u8>,
}

/// A family name as compared: lower case, without quotes and white space.
pub fn family_key(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The font in force for a `font-family` list (lower case): `Some(Some(i))`
/// for the page font `families[k].1 == i`, `Some(None)` for any other
/// font, `None` for `inherit` and the like (the parent's stays).
pub fn font_in_force(list: &str, families: &[(String, usize)]) -> Option<Option<usize>> {
    let key = family_key(list);
    if matches!(
        key.as_str(),
        "inherit" | "unset" | "revert" | "revert-layer" | ""
    ) {
        return None;
    }
    for name in key.split(',') {
        if let Some((_, i)) = families.iter().find(|(f, _)| f == name) {
            return Some(Some(*i));
        }
        if INSTALLED.contains(&name) {
            return Some(None);
        }
    }
    Some(None)
}

/// The family list of the `font` shorthand's value (lower case, white
/// space kept): what follows its size (`12px`, `1.2em/1.5`, `small`).
pub fn shorthand_family(value: &str) -> Option<&str> {
    const SIZES: &[&str] = &[
        "xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "larger",
        "smaller",
    ];
    const UNITS: &[&str] = &[
        "px", "pt", "pc", "em", "rem", "ex", "ch", "%", "vw", "vh", "vmin", "vmax", "in", "cm",
        "mm", "q", "lh",
    ];
    // A size has a unit (a bare number is a weight: `600`).
    let is_size = |w: &str| {
        SIZES.contains(&w)
            || (w.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                && UNITS.iter().any(|u| w.ends_with(u)))
    };
    let mut rest = value.trim_start();
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        if is_size(word.split('/').next().unwrap_or("")) {
            // A line height after the size (`12px/1.5`, `15px/normal`, or
            // `12px 1.5` as the sheet's reader leaves it): a family never
            // starts with a digit.
            let mut family = tail.trim_start();
            if !word.contains('/') {
                let next = family.split_whitespace().next().unwrap_or("");
                let next = next.trim_start_matches('/');
                if next == "normal" || next.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                    let end = family.find(char::is_whitespace).unwrap_or(family.len());
                    family = family.get(end..).unwrap_or("");
                } else if family.starts_with('/') {
                    family = family.trim_start_matches('/');
                }
            }
            let family = family.trim();
            return (!family.is_empty()).then_some(family);
        }
        rest = tail.trim_start();
    }
    None
}

/// The page fonts of `html`: the `@font-face` rules of its `<style>`
/// elements (comments removed) whose source is a `data:` address of a
/// font this module reads, at most [`MAX_FONTS`].
pub fn faces(html: &str) -> Vec<Face> {
    let mut out = Vec::new();
    if !super::css::mentions_font_face(html.as_bytes()) {
        return out;
    }
    let css = super::css::style_elements(html, super::css::MAX_FACE_CSS, false);
    let css = super::css::strip_comments(&css);
    let mut rest = css.as_str();
    while let Some(at) = super::css::find_font_face(rest.as_bytes()) {
        let block = rest.get(at..).unwrap_or("");
        let Some(open) = block.find('{') else { break };
        let body = block.get(open + 1..).unwrap_or("");
        let close = body.find('}').unwrap_or(body.len());
        let rule = body.get(..close).unwrap_or("");
        rest = body.get(close..).unwrap_or("");
        if out.len() >= MAX_FONTS {
            break;
        }
        if let Some(face) = face_of(rule) {
            out.push(face);
        }
    }
    out
}

/// The face of one `@font-face` block's declarations.
fn face_of(rule: &str) -> Option<Face> {
    let lower = rule.to_ascii_lowercase();
    let fam = lower.find("font-family")?;
    let value = lower.get(fam + "font-family".len()..)?.trim_start();
    let value = value.strip_prefix(':')?;
    let end = value.find([';', '}']).unwrap_or(value.len());
    let family = family_key(value.get(..end)?);
    if family.is_empty() || family.contains(',') {
        return None;
    }
    // Every `url(...)` of the block, in order: the first a client can use
    // is the one it shows (a remote one is not read here).
    // (`lower` has `rule`'s byte offsets: ASCII case only.)
    let mut at = 0;
    while let Some(u) = lower.get(at..).and_then(|r| r.find("url(")) {
        let inner = rule.get(at + u + 4..)?;
        let end = inner.find(')').unwrap_or(inner.len());
        let url = inner
            .get(..end)?
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .trim();
        at += u + 4 + end;
        if !url
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("data:"))
        {
            return None;
        }
        if url.len() > MAX_FONT_BYTES / 3 * 4 + 256 {
            continue;
        }
        if let Some(bytes) = super::data_uri_bytes(url).and_then(font_bytes) {
            return Some(Face { family, bytes });
        }
    }
    None
}

/// `bytes` as a TrueType or OpenType font this module draws with: as they
/// are, or a WOFF or WOFF2 font's tables restored; `None` for anything
/// else.
pub fn font_bytes(bytes: Vec<u8>) -> Option<Vec<u8>> {
    if bytes.len() > MAX_FONT_BYTES {
        return None;
    }
    let sfnt = if bytes.starts_with(b"wOFF") {
        woff(&bytes)?
    } else if bytes.starts_with(b"wOF2") {
        // wuff refuses more than a hundred times its input; the input's
        // bound keeps that to 50 MiB.
        if bytes.len() > MAX_WOFF2_BYTES {
            return None;
        }
        let sfnt = wuff::decompress_woff2(&bytes).ok()?;
        (sfnt.len() <= MAX_FONT_BYTES * 4).then_some(sfnt)?
    } else {
        bytes
    };
    let font = FontRef::try_from_slice(&sfnt).ok()?;
    usable(&font).then_some(sfnt)
}

/// A font whose em and outlines can be scaled to a drawing.
fn usable(font: &FontRef<'_>) -> bool {
    let upem = font.units_per_em().unwrap_or(0.0);
    let height = font.height_unscaled();
    (16.0..=16384.0).contains(&upem) && height.is_finite() && height > 0.0
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A WOFF 1.0 font's TrueType or OpenType file: its table directory
/// written as the sfnt's and each table inflated (zlib) where it is
/// compressed, within [`MAX_FONT_BYTES`].
fn woff(b: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let flavor = be32(b, 4)?;
    let tables = usize::from(be16(b, 12)?);
    if tables == 0 || tables > 64 {
        return None;
    }
    let head = 12 + 16 * tables;
    let mut dir = Vec::with_capacity(tables);
    let mut offset = head;
    for t in 0..tables {
        let e = 44 + 20 * t;
        let tag = be32(b, e)?;
        let (at, comp, orig) = (
            be32(b, e + 4)? as usize,
            be32(b, e + 8)? as usize,
            be32(b, e + 12)? as usize,
        );
        let checksum = be32(b, e + 16)?;
        if orig > MAX_FONT_BYTES || comp > orig || offset + orig > MAX_FONT_BYTES {
            return None;
        }
        let data = b.get(at..at.checked_add(comp)?)?;
        dir.push((tag, checksum, offset, orig, data));
        offset += (orig + 3) & !3;
    }
    let mut out = vec![0u8; offset];
    out.get_mut(..4)?.copy_from_slice(&flavor.to_be_bytes());
    out.get_mut(4..6)?
        .copy_from_slice(&u16::try_from(tables).ok()?.to_be_bytes());
    for (t, (tag, checksum, at, orig, data)) in dir.into_iter().enumerate() {
        let e = 12 + 16 * t;
        out.get_mut(e..e + 4)?.copy_from_slice(&tag.to_be_bytes());
        out.get_mut(e + 4..e + 8)?
            .copy_from_slice(&checksum.to_be_bytes());
        out.get_mut(e + 8..e + 12)?
            .copy_from_slice(&u32::try_from(at).ok()?.to_be_bytes());
        out.get_mut(e + 12..e + 16)?
            .copy_from_slice(&u32::try_from(orig).ok()?.to_be_bytes());
        let slot = out.get_mut(at..at + orig)?;
        if data.len() == orig {
            slot.copy_from_slice(data);
        } else {
            let mut z = flate2::read::ZlibDecoder::new(data).take(orig as u64);
            z.read_exact(slot).ok()?;
        }
    }
    Some(out)
}

/// Whether `c` is one of the marks of a run.
pub fn is_mark(c: char) -> bool {
    matches!(c, '\u{FFF9}'..='\u{FFFB}')
}

/// `s` without the marks of runs ([`is_mark`]): what a sender writes can
/// never open or close one.
pub fn clear_marks(s: &str) -> Cow<'_, str> {
    // The marks are U+FFF9..U+FFFB, encoded EF BF B9..BB: most text has
    // no EF byte at all.
    if memchr::memchr(0xEF, s.as_bytes()).is_none() || !s.contains(is_mark) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().filter(|c| !is_mark(*c)).collect())
}

/// `s` (cleared of marks) as a run set in page font `font`.
pub fn run(font: usize, s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 10);
    out.push(OPEN);
    out.push(char::from_u32(INDEX_BASE + font as u32).unwrap_or(OPEN));
    out.push_str(&clear_marks(s));
    out.push(CLOSE);
    out
}

/// A piece of a text with runs: as written, or set in a page font.
enum Piece {
    Plain(String),
    Drawn(usize, String),
}

/// Cuts `text` at the marks of its runs; a run left open at the end (the
/// text was cut at its bound) runs to the end, stray marks are dropped.
fn pieces(text: &str) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let mut cur = String::new();
    let mut font: Option<usize> = None;
    let mut chars = text.chars();
    let flush = |out: &mut Vec<Piece>, cur: &mut String, font: Option<usize>| {
        if cur.is_empty() {
            return;
        }
        let s = std::mem::take(cur);
        match (font, out.last_mut()) {
            // Runs of one font with only white space between them are
            // one run (a page set in its font is one picture).
            (Some(f), Some(Piece::Drawn(g, prev))) if *g == f => prev.push_str(&s),
            (Some(f), _) => {
                let gap = match out.last() {
                    Some(Piece::Plain(p)) if p.trim().is_empty() => out.len().checked_sub(1),
                    _ => None,
                };
                let joined = gap.and_then(|i| {
                    let before = i.checked_sub(1)?;
                    matches!(out.get(before), Some(Piece::Drawn(g, _)) if *g == f).then_some(i)
                });
                if let Some(i) = joined {
                    if let Some(Piece::Plain(ws)) = out.pop() {
                        if let Some(Piece::Drawn(_, prev)) = out.get_mut(i - 1) {
                            prev.push_str(&ws);
                            prev.push_str(&s);
                        }
                    }
                } else {
                    out.push(Piece::Drawn(f, s));
                }
            }
            (None, Some(Piece::Plain(prev))) => prev.push_str(&s),
            (None, _) => out.push(Piece::Plain(s)),
        }
    };
    while let Some(c) = chars.next() {
        match c {
            OPEN => {
                flush(&mut out, &mut cur, font);
                let n = chars
                    .next()
                    .map_or(u32::MAX, |c| (c as u32).wrapping_sub(INDEX_BASE));
                font = (n < MAX_FONTS as u32).then_some(n as usize);
            }
            CLOSE => {
                flush(&mut out, &mut cur, font);
                font = None;
            }
            '\u{FFFA}' => {}
            c => cur.push(c),
        }
    }
    flush(&mut out, &mut cur, font);
    out
}

/// Replaces the runs set in page fonts in `text` from `from` with what
/// their drawing reads (runs with `fonts[n]`), all of a message's runs in
/// one picture (one recognition, however many runs); a run that cannot be
/// read (no recognizer, budget spent, a font not drawn) keeps its code
/// points. `deep`: drawing is left to the deep reading when false. True
/// when `text` held runs.
pub fn resolve(
    text: &mut String,
    from: usize,
    fonts: &[Vec<u8>],
    budget: &mut Budget,
    deep: bool,
) -> bool {
    let Some(tail) = text.get(from..) else {
        return false;
    };
    if !tail.contains(is_mark) {
        return false;
    }
    let mut pieces = pieces(tail);
    let runs = pieces.iter().any(|p| matches!(p, Piece::Drawn(..)));
    if deep && runs {
        let faces: Vec<Option<FontRef<'_>>> = fonts
            .iter()
            .map(|b| FontRef::try_from_slice(b).ok().filter(usable))
            .collect();
        if let Some(readings) = read_runs(&pieces, &faces, budget) {
            for (piece, reading) in pieces.iter_mut().zip(readings) {
                if let (Piece::Drawn(_, s), Some(r)) = (piece, reading) {
                    *s = r;
                }
            }
        }
    }
    let mut out = String::with_capacity(tail.len());
    for piece in pieces {
        let (Piece::Plain(s) | Piece::Drawn(_, s)) = piece;
        out.push_str(&s);
    }
    text.truncate(from);
    text.push_str(&out);
    runs
}

/// The readings of the drawn pieces (`None` for a piece not drawn, or not
/// a drawn one): the first [`MAX_DRAWN_CHARS`] characters of the runs
/// with a usable font, drawn into one picture, each line of a run a block
/// of its own, and the recognizer's blocks given back to the lines in
/// order. When as many blocks come back as lines were drawn, each line
/// gets its block; else the first run drawn gets every block, a line
/// each. `None` when nothing was read.
fn read_runs(
    pieces: &[Piece],
    faces: &[Option<FontRef<'_>>],
    budget: &mut Budget,
) -> Option<Vec<Option<String>>> {
    let mut chars_left = MAX_DRAWN_CHARS;
    let mut chosen: Vec<(usize, &FontRef<'_>, String)> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let Piece::Drawn(f, s) = p else { continue };
        let Some(Some(font)) = faces.get(*f) else {
            continue;
        };
        if chars_left == 0 {
            budget.spent = true;
            break;
        }
        let take: String = s.chars().take(chars_left).collect();
        chars_left -= take.chars().count();
        if take.len() < s.len() {
            budget.spent = true;
        }
        chosen.push((i, font, take));
    }
    let segments: Vec<(&FontRef<'_>, &str)> =
        chosen.iter().map(|(_, f, t)| (*f, t.as_str())).collect();
    let mut curves_left = MAX_CURVES;
    let (picture, rows) = draw_runs(&segments, &mut curves_left)?;
    let text = picture::drawn_text(&picture, budget)?;
    // The recognizer gives a line a row drawn: when as many came back as
    // rows were inked, each goes back to the line of the run it drew.
    let read: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    let mut out: Vec<Option<String>> = vec![None; pieces.len()];
    if read.len() != rows.len() {
        budget.spent |= !rows.is_empty() && read.is_empty();
        for (k, (i, _, _)) in chosen.iter().enumerate() {
            if let Some(slot) = out.get_mut(*i) {
                *slot = Some(match k {
                    0 => format!(" {} ", read.join("\n")),
                    _ => String::new(),
                });
            }
        }
        return Some(out);
    }
    // (run, line of the run) of each inked row, in order.
    let mut lines: std::collections::BTreeMap<(usize, usize), Vec<String>> =
        std::collections::BTreeMap::new();
    for (owner, text) in rows.into_iter().zip(read) {
        lines.entry(owner).or_default().push(text);
    }
    for (k, (i, _, take)) in chosen.iter().enumerate() {
        let text: Vec<String> = take
            .split('\n')
            .enumerate()
            .map(|(n, _)| lines.remove(&(k, n)).unwrap_or_default().join(" "))
            .collect();
        // Words apart from the text around them, as the run was.
        let lead = if take.starts_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        let trail = if take.ends_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        if let Some(slot) = out.get_mut(*i) {
            *slot = Some(format!("{lead}{}{trail}", text.join("\n")));
        }
    }
    Some(out)
}

/// A line as drawn: a rule of one sign repeated (`*****`, `= = =`) is
/// left blank, and so is a run of four or more of one ASCII sign in a
/// word (a person sees a line, not words, and the recognizer reads such a
/// drawing as stray letters). Only repeats of one code point are left
/// out: a text whose letters a font draws for signs is drawn.
fn without_rules(line: &str) -> Cow<'_, str> {
    let sign = |c: char| c.is_ascii_punctuation();
    let repeated = |w: &[u8]| w.iter().all(|b| Some(b) == w.first());
    let mut signs = line.chars().filter(|c| !c.is_whitespace());
    if let Some(first) = signs.next() {
        if sign(first) && signs.clone().all(|c| c == first) && signs.next().is_some() {
            return Cow::Borrowed("");
        }
    }
    if !line
        .as_bytes()
        .windows(4)
        .any(|w| repeated(w) && w.first().is_some_and(u8::is_ascii_punctuation))
    {
        return Cow::Borrowed(line);
    }
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let run = chars
            .get(i..)
            .map_or(0, |r| r.iter().take_while(|&&d| d == c).count());
        if sign(c) && run >= 4 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n(c, run.max(1)));
        }
        i += run.max(1);
    }
    Cow::Owned(out)
}

/// `s` drawn with `font` ([`draw_runs`] of one run).
pub fn draw(font: &FontRef<'_>, s: &str, curves_left: &mut usize) -> Option<image::GrayImage> {
    draw_runs(&[(font, s)], curves_left).map(|(img, _)| img)
}

/// A glyph placed: its run, glyph, x, row, and the line of the run.
type Placed = (usize, GlyphId, f32, u32, usize);

/// Where each glyph of `runs` goes ([`draw_runs`]): its run, glyph, x,
/// row and the line of the run it draws; and the last row.
fn lay_out(runs: &[(&FontRef<'_>, &str)]) -> (Vec<Placed>, u32) {
    // Each glyph: its font's place in `runs`, glyph, x, row, and the line
    // of the run it draws.
    let mut glyphs: Vec<Placed> = Vec::new();
    let mut line = 0u32;
    let mut started = false;
    let right = (WIDTH - MARGIN) as f32;
    'runs: for (r, (font, s)) in runs.iter().enumerate() {
        if !usable(font) {
            continue;
        }
        let Some(upem) = font.units_per_em() else {
            continue;
        };
        let factor = EM / upem;
        let advance = |id: GlyphId, c: char| -> f32 {
            if id.0 == 0 {
                // Not in the font: a client draws it with another font.
                return if c.is_whitespace() {
                    EM * 0.3
                } else {
                    EM * 0.5
                };
            }
            (font.h_advance_unscaled(id) * factor).clamp(0.0, EM * 3.0)
        };
        for (n, hard) in s.split('\n').enumerate() {
            let hard = &*without_rules(hard);
            if hard.trim().is_empty() {
                continue;
            }
            if started {
                line += 1;
            }
            started = true;
            let mut x = MARGIN as f32;
            for (j, word) in hard.split(' ').enumerate() {
                let ids: Vec<(GlyphId, char)> =
                    word.chars().map(|c| (font.glyph_id(c), c)).collect();
                let width: f32 = ids.iter().map(|&(id, c)| advance(id, c)).sum();
                let space = if j > 0 {
                    advance(font.glyph_id(' '), ' ')
                } else {
                    0.0
                };
                if j > 0 && x + space + width > right && x > MARGIN as f32 {
                    line += 1;
                    x = MARGIN as f32;
                } else if j > 0 {
                    glyphs.push((r, font.glyph_id(' '), x, line, n));
                    x += space;
                }
                for (id, c) in ids {
                    let a = advance(id, c);
                    if x + a > right && x > MARGIN as f32 {
                        line += 1;
                        x = MARGIN as f32;
                    }
                    if line >= MAX_LINES {
                        break 'runs;
                    }
                    if id.0 != 0 {
                        glyphs.push((r, id, x, line, n));
                    }
                    x += a;
                }
            }
        }
    }
    (glyphs, line)
}

/// Runs of text drawn each with its font, dark on light, 26 pixels to
/// the em: each line of a run (of its text between line breaks) starts a
/// row of its own; words wrap at 1,200 pixels; at most [`MAX_LINES`] rows.
/// With the rows that hold ink, in order, each as the (run, line of the
/// run) it draws; `None` when nothing was drawn.
pub fn draw_runs(
    runs: &[(&FontRef<'_>, &str)],
    curves_left: &mut usize,
) -> Option<(image::GrayImage, Vec<(usize, usize)>)> {
    let (glyphs, line) = lay_out(runs);
    let rows = (line + 1).min(MAX_LINES);
    let height = rows * LINE + 2 * MARGIN;
    let mut img = image::GrayImage::from_pixel(WIDTH, height, image::Luma([255]));
    let mut outlines: std::collections::HashMap<(usize, GlyphId), Option<ab_glyph::Outline>> =
        std::collections::HashMap::new();
    let mut inked: std::collections::BTreeMap<u32, (usize, usize)> =
        std::collections::BTreeMap::new();
    for (r, id, gx, line, n) in glyphs {
        let Some((font, _)) = runs.get(r) else {
            continue;
        };
        let Some(upem) = font.units_per_em() else {
            continue;
        };
        let outline = outlines
            .entry((r, id))
            .or_insert_with(|| font.outline(id))
            .clone();
        let Some(outline) = outline else { continue };
        if outline.curves.len() > *curves_left {
            break;
        }
        *curves_left -= outline.curves.len();
        let baseline = (MARGIN + line * LINE) as f32 + EM * 0.95;
        let glyph = id.with_scale_and_position(PxScale::from(EM), ab_glyph::point(gx, baseline));
        let factor = ab_glyph::PxScaleFactor {
            horizontal: EM / upem,
            vertical: EM / upem,
        };
        let og = OutlinedGlyph::new(glyph, outline, factor);
        let b = og.px_bounds();
        let (w, h) = (b.width(), b.height());
        if !(w.is_finite() && h.is_finite() && w <= EM * 3.0 && h <= EM * 3.0) {
            continue;
        }
        let (ox, oy) = (b.min.x as i64, b.min.y as i64);
        og.draw(|px, py, c| {
            let (px, py) = (ox + i64::from(px), oy + i64::from(py));
            if let (Ok(px), Ok(py)) = (u32::try_from(px), u32::try_from(py)) {
                if let Some(p) = img.get_pixel_mut_checked(px, py) {
                    let ink = 255 - (c.clamp(0.0, 1.0) * 255.0) as u8;
                    p.0[0] = p.0[0].min(ink);
                }
            }
        });
        // A row with a glyph as big as a letter's part holds ink.
        if w * h >= EM * EM / 100.0 {
            inked.insert(line, (r, n));
        }
    }
    (!inked.is_empty()).then(|| (img, inked.into_values().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_font_in_force_follows_the_browsers_search() {
        let fams = vec![("cipher".to_owned(), 0), ("other".to_owned(), 1)];
        assert_eq!(font_in_force("cipher", &fams), Some(Some(0)));
        assert_eq!(font_in_force("'Cipher', Arial", &fams), Some(Some(0)));
        // A family no client has is skipped; one every client has ends
        // the search.
        assert_eq!(font_in_force("nosuchfont, cipher", &fams), Some(Some(0)));
        assert_eq!(font_in_force("arial, cipher", &fams), Some(None));
        assert_eq!(font_in_force("sans-serif, cipher", &fams), Some(None));
        assert_eq!(font_in_force("\"Other\" , serif", &fams), Some(Some(1)));
        assert_eq!(font_in_force("inherit", &fams), None);
        assert_eq!(font_in_force("georgia", &fams), Some(None));
    }

    #[test]
    fn the_shorthand_gives_its_family() {
        assert_eq!(shorthand_family("16px/1.4 f1, serif"), Some("f1, serif"));
        assert_eq!(shorthand_family("16px 1.4 f1, serif"), Some("f1, serif"));
        assert_eq!(shorthand_family("italic bold 12px f1"), Some("f1"));
        assert_eq!(shorthand_family("small 'my font'"), Some("'my font'"));
        assert_eq!(
            shorthand_family("normal 600 15px 22px \"f\""),
            Some("\"f\"")
        );
        assert_eq!(shorthand_family("15px normal \"f\""), Some("\"f\""));
        assert_eq!(shorthand_family("15px/normal f"), Some("f"));
        assert_eq!(shorthand_family("700 1.2em f, serif"), Some("f, serif"));
        assert_eq!(shorthand_family("bold"), None);
        assert_eq!(shorthand_family("12px"), None);
    }

    #[test]
    fn marks_a_sender_writes_are_cleared() {
        let forged = format!("a{OPEN}\u{F0000}secret{CLOSE}b \u{FFFA}");
        assert_eq!(clear_marks(&forged), "a\u{F0000}secretb ");
        assert!(matches!(clear_marks("plain text"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_run_without_a_readable_font_keeps_its_code_points() {
        let mut text = format!("before {} after", run(0, "xyz qwv"));
        let mut b = Budget::default();
        let runs = resolve(&mut text, 0, &[b"not a font".to_vec()], &mut b, true);
        assert_eq!(text, "before xyz qwv after");
        assert!(runs);
        // Cut at the bound inside a run, and a close with no open.
        let mut cut = format!("a {OPEN}\u{F0001}bc");
        resolve(&mut cut, 0, &[], &mut b, true);
        assert_eq!(cut, "a bc");
        let mut stray = format!("a{CLOSE}b");
        resolve(&mut stray, 0, &[], &mut b, true);
        assert_eq!(stray, "ab");
        // Text before `from` is not looked at.
        let mut kept = format!("{CLOSE}x{}", run(0, "y"));
        resolve(&mut kept, CLOSE.len_utf8(), &[], &mut b, true);
        assert_eq!(kept, format!("{CLOSE}xy"));
    }

    #[test]
    fn rules_of_one_sign_are_not_drawn() {
        assert_eq!(without_rules("**********"), "");
        assert_eq!(without_rules(" = = = = "), "");
        assert_eq!(without_rules("Price: $5 -- now!!!!"), "Price: $5 -- now ");
        assert_eq!(without_rules("===Offer==="), "===Offer===");
        assert_eq!(without_rules("a"), "a");
        assert_eq!(without_rules("*"), "*");
        // Signs that stand for letters are drawn.
        assert_eq!(without_rules("=*+ &^%"), "=*+ &^%");
    }

    #[test]
    fn runs_of_one_font_apart_by_white_space_are_one() {
        let text = format!("{} \n\n{} x {}", run(1, "a"), run(1, "b"), run(1, "c"));
        let p = pieces(&text);
        assert_eq!(p.len(), 3);
        assert!(matches!(&p[0], Piece::Drawn(1, s) if s == "a \n\nb"));
        assert!(matches!(&p[1], Piece::Plain(s) if s == " x "));
        assert!(matches!(&p[2], Piece::Drawn(1, s) if s == "c"));
    }

    #[test]
    fn only_fonts_written_into_a_style_element_are_read() {
        // Not a font, a font in a comment, a font outside <style>, a
        // remote font: none is read, and nothing panics.
        let bogus = "AAAA".repeat(1000);
        for html in [
            format!("<style>@font-face{{font-family:x;src:url(data:font/ttf;base64,{bogus})}}</style>"),
            format!("<style>@font-face{{font-family:x;src:url(data:font/woff;base64,d09GRgAB{bogus})}}</style>"),
            "<style>/* @font-face{font-family:x;src:url(data:font/ttf;base64,AAEAAA==)} */</style>".to_owned(),
            "<p>@font-face{font-family:x;src:url(data:font/ttf;base64,AAEAAA==)}</p>".to_owned(),
            "<style>@font-face{font-family:x;src:url(https://fonts.example/x.woff2)}</style>".to_owned(),
            "<style>@font-face{font-family:x;src:url(data:".to_owned(),
            "<style>@FONT-FACE{".to_owned(),
        ] {
            assert!(faces(&html).is_empty(), "{html:.80}");
        }
    }

    #[test]
    fn hostile_woff_headers_are_refused() {
        let mut w = b"wOFF\0\x01\0\0".to_vec();
        w.extend_from_slice(&[0; 36]);
        assert_eq!(woff(&w), None);
        // A table that claims to inflate past the bound.
        let mut big = w.clone();
        big[12..14].copy_from_slice(&1u16.to_be_bytes());
        let mut entry = b"glyf".to_vec();
        entry.extend_from_slice(&64u32.to_be_bytes());
        entry.extend_from_slice(&8u32.to_be_bytes());
        entry.extend_from_slice(&(u32::MAX).to_be_bytes());
        entry.extend_from_slice(&0u32.to_be_bytes());
        big.extend_from_slice(&entry);
        big.extend_from_slice(&[0; 8]);
        assert_eq!(woff(&big), None);
        assert_eq!(font_bytes(big), None);
    }
}
