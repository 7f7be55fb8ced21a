//! Line steps: quoted replies, signatures, footers, notices and
//! disclaimers, greetings, and the bound that undoes a cut which would
//! leave too little of the message.

use super::tokens::is_space;
use crate::config::NormalizeConfig;

/// A separator line opens a footer only when at most this many non-empty
/// lines follow it (mailing-list footers, sponsor blocks and disclaimers are
/// short; a campaign's body after a decorative rule is not).
pub(super) const FOOTER_MAX_LINES: usize = 20;
/// Greeting lines are looked for among the first lines that have text.
pub(super) const GREETING_LINES: usize = 3;

#[cfg(test)]
pub(super) fn select_lines<'a>(text: &'a str, cfg: &NormalizeConfig) -> Vec<Line<'a>> {
    select_lines_flagged(text, cfg).0
}

/// [`select_lines`], and whether a quote, footer or disclaimer rule
/// removed any line (greetings aside).
pub(super) fn select_lines_flagged<'a>(
    text: &'a str,
    cfg: &NormalizeConfig,
) -> (Vec<Line<'a>>, bool) {
    let mut removed = false;
    // Room for a line per 32 bytes: most texts then fill it without
    // growing it (it grew six times for a typical message).
    let mut lines: Vec<Line<'_>> = Vec::with_capacity(text.len() / 32 + 4);
    for line in split_lines(text) {
        let t = trim(line);
        if cfg.strip_quotes {
            if is_message_marker(t) {
                removed = true;
                break;
            }
            if is_quote(t) || is_attribution(t) {
                removed = true;
                continue;
            }
        }
        lines.push(Line {
            text: line,
            trimmed: t,
        });
    }
    if cfg.strip_signatures {
        let n = lines.len();
        drop_notices(&mut lines);
        cut_disclaimer(&mut lines);
        cut_footer(&mut lines);
        removed |= lines.len() != n;
    }
    if cfg.strip_greetings {
        cut_greetings(&mut lines);
    }
    (lines, removed)
}

/// A cut must leave at least this many words of the message's own text...
pub const MIN_KEPT_WORDS: usize = 20;
/// ... and at least this share of all its words (1/3: a cut removes at
/// most twice what it keeps): otherwise the cut is undone, one stage at a
/// time ([`bounded_lines`]).
pub(super) const MIN_KEPT_SHARE: usize = 3;

/// The line steps, bounded so that no cutting rule can erase a message.
///
/// Every line a cutting rule removes (quotes, reply and forward headers,
/// signatures, list footers, disclaimers) is text the sender chose, and a
/// sender can dress any text as a quote or a footer. So [`select_lines`]'s
/// cuts stand only when what they leave is substantial: at least
/// [`MIN_KEPT_WORDS`] words and a third of the message's words (the footer
/// and disclaimer cuts bound themselves too: see [`cut_footer`]).
/// Otherwise the cuts are relaxed in two stages: stage 1 when stage 0
/// leaves too little by either bound, stage 2 when stage 1 still leaves
/// fewer than [`MIN_KEPT_WORDS`] words:
///
/// 1. The quoted lines of the shallowest quote depth (their `>` markers
///    removed) and the text after the first `Original Message` or
///    `Forwarded message` line up to the next such line come back; the
///    footer and disclaimer cuts apply to the text so unquoted. A reply that is mostly quote is
///    then fingerprinted as its own text plus the one message it answers,
///    not the whole thread it carries, so the replies of one thread do not
///    become near-identical to each other.
/// 2. Everything but greetings and the header lines of a quoted or
///    forwarded message (`From:`, `Sent:`, `Subject:` ... after a marker).
///
/// A text quoted with `> ` on every line, or put under an `On .. wrote:`,
/// `-----Original Message-----` or `-- ` line, is then fingerprinted as the
/// same words unquoted. Greetings stay cut: they are a line or two at most.
pub(super) fn bounded_lines<'a>(
    text: &'a str,
    cfg: &NormalizeConfig,
) -> (Vec<Line<'a>>, Option<KeptCut>) {
    let (cut, removed) = select_lines_flagged(text, cfg);
    if !removed {
        // Most messages: no quote, footer or disclaimer; nothing to bound.
        return (cut, None);
    }
    let kept = words_in(&cut);
    let words = count_words(text);
    if kept >= MIN_KEPT_WORDS && kept * MIN_KEPT_SHARE >= words {
        return (cut, None);
    }
    let why = KeptCut {
        own_words: u32::try_from(kept).unwrap_or(u32::MAX),
        words: u32::try_from(words).unwrap_or(u32::MAX),
    };
    (relax(text, cfg), Some(why))
}

/// Lines the line rules would cut (quoted lines, an attribution, a
/// forwarded message's header, a footer or a disclaimer) that were read
/// as the text, because what the rules left was under
/// [`MIN_KEPT_WORDS`] words or a third of the message's: a short reply is
/// fingerprinted with what it quotes (so that a spam text under a quote
/// line is still that text). Shown in the verdict (`quote=read`) and by
/// `bulkwatch scan`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptCut {
    /// Words the rules would have left.
    pub own_words: u32,
    /// Words of the whole text.
    pub words: u32,
}

/// Stages 1 and 2 of [`bounded_lines`].
pub(super) fn relax<'a>(text: &'a str, cfg: &NormalizeConfig) -> Vec<Line<'a>> {
    let one = relaxed_lines(text, cfg, false);
    // Stage 2 only on the absolute bound: a reply deep in a thread is
    // mostly quote, and with everything back each reply would be nearly
    // the one before it.
    if words_in(&one) >= MIN_KEPT_WORDS {
        return one;
    }
    relaxed_lines(text, cfg, true)
}

/// Words in `s`: runs of non-whitespace that hold an ASCII letter or digit
/// or a non-ASCII character (a URL is one word), read byte by byte; a
/// count for the bounds on cutting.
pub(super) fn count_words(s: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    let mut counted = false;
    for b in s.bytes() {
        if b.is_ascii_whitespace() {
            in_word = false;
            continue;
        }
        if !in_word {
            in_word = true;
            counted = false;
        }
        if !counted && (b.is_ascii_alphanumeric() || b >= 0x80) {
            n += 1;
            counted = true;
        }
    }
    n
}

pub(super) fn words_in(lines: &[Line<'_>]) -> usize {
    lines.iter().map(|l| count_words(l.trimmed)).sum()
}

/// A line that starts a quoted or forwarded message in Outlook's, Gmail's
/// or Apple Mail's style.
pub(super) fn is_message_marker(t: &str) -> bool {
    (t.starts_with("-----") || t.starts_with("begin forwarded message"))
        && (t.contains("original message") || t.contains("forwarded message"))
}

/// A header line of a quoted or forwarded message.
pub(super) fn is_header_line(t: &str) -> bool {
    const NAMES: [&str; 7] = [
        "from:",
        "sent:",
        "to:",
        "cc:",
        "date:",
        "subject:",
        "reply-to:",
    ];
    NAMES.iter().any(|n| {
        t.get(..n.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(n))
    })
}

/// The depth of a quoted line (`>` markers, Supercite's `name>` counting
/// as one) and its text after the markers; `None` for other lines.
pub(super) fn quote_depth(t: &str) -> Option<(usize, &str)> {
    if !is_quote(t) {
        return None;
    }
    let mut rest = t;
    if !rest.starts_with('>') {
        // Supercite: `name>` (is_quote checked the name).
        let i = rest.find('>')?;
        rest = rest.get(i..)?;
    }
    let mut depth = 0;
    loop {
        let r = rest.trim_start();
        match r.strip_prefix('>') {
            Some(after) => {
                depth += 1;
                rest = after;
            }
            None => return Some((depth, r)),
        }
    }
}

/// The lines of stage 1 (`all` false) or 2 (`all` true) of
/// [`bounded_lines`].
pub(super) fn relaxed_lines<'a>(text: &'a str, cfg: &NormalizeConfig, all: bool) -> Vec<Line<'a>> {
    let shallowest = split_lines(text)
        .filter_map(|l| quote_depth(trim(l)).map(|(d, _)| d))
        .min()
        .unwrap_or(0);
    let mut lines: Vec<Line<'_>> = Vec::with_capacity(text.len() / 32 + 4);
    let mut markers = 0;
    let mut header_block = false;
    for line in split_lines(text) {
        let t = trim(line);
        if t.is_empty() {
            header_block = false;
        } else if is_message_marker(t) {
            markers += 1;
            if !all && markers >= 2 {
                break;
            }
            header_block = true;
            continue;
        } else if header_block && is_header_line(t) {
            continue;
        } else if is_attribution(t) {
            header_block = false;
            continue;
        } else if let Some((depth, rest)) = quote_depth(t) {
            header_block = false;
            if all || depth == shallowest {
                let rest = trim(rest);
                if !is_header_line(rest) && !is_attribution(rest) {
                    lines.push(Line {
                        text: rest,
                        trimmed: rest,
                    });
                }
            }
            continue;
        } else {
            header_block = false;
        }
        lines.push(Line {
            text: line,
            trimmed: t,
        });
    }
    if !all && cfg.strip_signatures {
        drop_notices(&mut lines);
        cut_disclaimer(&mut lines);
        cut_footer(&mut lines);
    }
    if cfg.strip_greetings {
        cut_greetings(&mut lines);
    }
    lines
}

/// Removes greeting lines among the first [`GREETING_LINES`] lines that
/// have text.
pub(super) fn cut_greetings(lines: &mut Vec<Line<'_>>) {
    let mut seen = 0;
    let mut i = 0;
    while i < lines.len() && seen < GREETING_LINES {
        let t = lines.get(i).map_or("", |l| l.trimmed);
        if t.is_empty() {
            i += 1;
            continue;
        }
        seen += 1;
        if is_greeting(t) {
            lines.remove(i);
        } else {
            i += 1;
        }
    }
}

/// `str::lines`, with the line ends found by the memchr crate's iterator
/// (one search across the text rather than one call per line).
pub(super) fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let len = text.len();
    let mut start = 0;
    memchr::memchr_iter(b'\n', text.as_bytes())
        .chain(std::iter::once(len))
        .filter_map(move |end| {
            let from = start;
            start = end + 1;
            // No line after a final line end.
            if end == len && from == len {
                return None;
            }
            let line = text.get(from..end).unwrap_or("");
            Some(if end < len {
                line.strip_suffix('\r').unwrap_or(line)
            } else {
                line
            })
        })
}

/// A line of the text and the line trimmed: every line step tests the
/// trimmed form, and it is computed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line<'a> {
    pub(super) text: &'a str,
    pub(super) trimmed: &'a str,
}

impl<'a> Line<'a> {
    fn is_blank(&self) -> bool {
        self.trimmed.is_empty()
    }
}

/// `str::trim`, with a fast path: ASCII whitespace (`char::is_whitespace`
/// on ASCII, vertical tab included) is trimmed byte by byte, and only an
/// end that is then a non-ASCII character is left to `str::trim`.
pub(super) fn trim(line: &str) -> &str {
    let bytes = line.as_bytes();
    let start = bytes
        .iter()
        .position(|b| !is_space(*b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_space(*b))
        .map_or(start, |i| i + 1);
    // ASCII bytes are character boundaries.
    let t = line.get(start..end.max(start)).unwrap_or("");
    let b = t.as_bytes();
    if b.first().is_some_and(|c| !c.is_ascii()) || b.last().is_some_and(|c| !c.is_ascii()) {
        t.trim()
    } else {
        t
    }
}

/// A quoted line: `> text`, or Supercite's `Tim> text` (a short name, then
/// `>` and a space, another `>` or nothing).
pub(super) fn is_quote(t: &str) -> bool {
    if t.starts_with('>') {
        return true;
    }
    // Not at 0: that is a `>` quote, taken above.
    let Some(i) = t.bytes().take(9).position(|b| b == b'>') else {
        return false;
    };
    let (name, rest) = t.split_at(i);
    name.bytes().all(|b| b.is_ascii_alphanumeric())
        && name.bytes().any(|b| b.is_ascii_alphabetic())
        && matches!(rest.as_bytes().get(1), None | Some(b' ' | b'>' | b'\t'))
}

/// "On Tue, 3 Sep 2002, Jane Doe wrote:" and its many variants.
pub(super) fn is_attribution(t: &str) -> bool {
    t.len() < 200 && (t.ends_with("wrote:") || t.ends_with("writes:") || t.ends_with("schrieb:"))
}

/// A line that opens a signature or footer block: the signature delimiter
/// (RFC 3676 section 4.3), or a rule of one repeated character (`_-=*~#`)
/// that may carry a label, as list software writes them
/// (`------ Yahoo! Groups Sponsor ------~-->`).
pub(super) fn is_separator(line: &Line<'_>) -> bool {
    if line.text == "-- " || line.text == "--" {
        return true;
    }
    let t = line.trimmed;
    let Some(first) = t.chars().next() else {
        return false;
    };
    if t.len() < 10 || !matches!(first, '_' | '-' | '=' | '*' | '~' | '#') {
        return false;
    }
    let lead = t.chars().take_while(|c| *c == first).count();
    let rule = t
        .chars()
        .filter(|c| matches!(c, '_' | '-' | '=' | '*' | '~' | '#'))
        .count();
    lead >= 4 && rule * 2 >= t.chars().count()
}

/// Cuts at the first separator line that has some text before it, at most
/// [`FOOTER_MAX_LINES`] non-empty lines after it, and a small tail of words
/// after it ([`small_tail`]): a footer ends a message, it is not most of
/// it. A rule line put above a text (or in its middle) by a sender who
/// wants the text cut away is passed over, and a footer further down is
/// still cut.
pub(super) fn cut_footer(lines: &mut Vec<Line<'_>>) {
    // Separators after the first line with a word: most messages have
    // none, and then no word is counted.
    let Some(first_text) = lines.iter().position(|l| count_words(l.trimmed) > 0) else {
        return;
    };
    let Some(first_rule) = lines
        .iter()
        .skip(first_text + 1)
        .position(is_separator)
        .map(|p| p + first_text + 1)
    else {
        return;
    };
    // Non-empty lines and words after each line, counted once from the
    // end: counting them again at every separator made a message of rule
    // lines (`--`) quadratic, seconds for one 250 kB message.
    let mut after = vec![(0usize, 0usize); lines.len()];
    let (mut n, mut w) = (0, 0);
    for (a, line) in after.iter_mut().zip(lines.iter()).rev() {
        *a = (n, w);
        if !line.is_blank() {
            n += 1;
            w += count_words(line.trimmed);
        }
    }
    let total = w;
    for (i, (line, (a, wa))) in lines.iter().zip(&after).enumerate().skip(first_rule) {
        let words_before = total - wa - count_words(line.trimmed);
        if words_before > 0
            && *a <= FOOTER_MAX_LINES
            && is_separator(line)
            && (small_tail(*wa, words_before) || holds_marker(lines.get(i + 1..).unwrap_or(&[])))
        {
            lines.truncate(i);
            return;
        }
    }
}

/// Most non-empty lines of a boxed notice ([`drop_notices`]).
pub(super) const NOTICE_MAX_LINES: usize = 3;

/// Removes boxed notices: at most [`NOTICE_MAX_LINES`] non-empty lines
/// between two separator lines, or between the start of the message and
/// the first one, that hold a list-footer or disclaimer phrase ("If you no
/// longer wish to receive these emails, unsubscribe here"). Newsletters put
/// them above their text; so do senders who hope a footer rule cuts the
/// text below. Only the notice goes; the text after it stays.
pub(super) fn drop_notices(lines: &mut Vec<Line<'_>>) {
    let separators: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| is_separator(l))
        .map(|(i, _)| i)
        .take(64)
        .collect();
    let Some(&first) = separators.first() else {
        return;
    };
    let mut drop = Vec::new();
    let blocks = std::iter::once((0, first)).chain(separators.windows(2).filter_map(|w| match w {
        [a, b] => Some((a + 1, *b)),
        _ => None,
    }));
    let mut text = String::with_capacity(256);
    for (start, end) in blocks {
        let Some(block) = lines.get(start..end) else {
            continue;
        };
        let filled = block.iter().filter(|l| !l.is_blank()).count();
        if filled == 0 || filled > NOTICE_MAX_LINES {
            continue;
        }
        text.clear();
        for l in block {
            text.push_str(l.trimmed);
            text.push(' ');
        }
        if markers_in(&text) != 0 {
            drop.push((start, end));
        }
    }
    if drop.is_empty() {
        return;
    }
    let mut n = 0;
    lines.retain(|_| {
        let keep = !drop.iter().any(|(a, b)| (*a..*b).contains(&n));
        n += 1;
        keep
    });
}

/// Words a footer may always have after its rule or first paragraph: a
/// signature, a list's address and archive link.
pub(super) const FOOTER_WORDS: usize = 10;

/// May a footer cut remove `after` words when `before` stay? At most
/// [`FOOTER_WORDS`], or a quarter of what stays (a long signature under a
/// long message): a sender who puts a rule or a disclaimer above the last
/// part of a text can hide no more than that.
pub(super) fn small_tail(after: usize, before: usize) -> bool {
    after <= FOOTER_WORDS.max(before / 4)
}

/// Phrases of legal disclaimers (lower case, as after folding).
pub(super) const DISCLAIMER_MARKERS: [&str; 10] = [
    "confidential",
    "intended recipient",
    "intended only for",
    "if you have received this",
    "received this e-mail in error",
    "received this email in error",
    "privileged",
    "unauthorized",
    "any attachments",
    "notify the sender",
];

/// Phrases of mailing-list footers that stand without a rule line above
/// them, as Yahoo! Groups wrote them ("To unsubscribe from this group, send
/// an email to ..."): two in one tail paragraph make a footer, as two
/// disclaimer phrases make a disclaimer. (Not one of each: the one text of
/// many image-only spams is "... received this email in error ... click
/// here to unsubscribe", and cutting it leaves them nothing to match on.)
pub(super) const LIST_FOOTER_MARKERS: [&str; 13] = [
    "unsubscribe",
    "mailing list",
    "this group",
    "groups is subject to",
    "listinfo",
    "stop receiving",
    "subscribed to",
    "you are receiving",
    "receive these emails",
    "opt out",
    "opt-out",
    "email preferences",
    "manage your subscription",
];

/// Do the first [`NOTICE_MAX_LINES`] non-empty lines of `lines` hold a
/// disclaimer or list-footer phrase? A footer cut may then remove more
/// than [`small_tail`] allows: what it starts with says what it is. (Only
/// its start: most spam ends in an opt-out line of its own, and a rule
/// put in the middle of a text must not reach down to it.)
pub(super) fn holds_marker(lines: &[Line<'_>]) -> bool {
    let mut text = String::with_capacity(512);
    for l in lines
        .iter()
        .filter(|l| !l.is_blank())
        .take(NOTICE_MAX_LINES)
    {
        text.push_str(l.trimmed);
        text.push(' ');
    }
    markers_in(&text) != 0
}

/// Cuts company disclaimers and list footers: paragraphs that hold at least
/// two disclaimer phrases or two list-footer phrases. The first such
/// paragraph after some text, within the last [`FOOTER_MAX_LINES`]
/// non-empty lines and with a small tail of words after it
/// ([`small_tail`]), is cut with everything after it (the footer block of a list or
/// company); one elsewhere (on top, in the middle of a text) is removed by
/// itself, so a disclaimer put above or inside a text does not change its
/// fingerprint and cannot cut it short, unless the paragraphs so removed
/// hold more than twice the words of the rest (then none is: that is the
/// text itself). Disclaimers often
/// have no rule line above them, and a 90-word disclaimer under a two-line
/// message would otherwise make all of a company's mail look alike.
pub(super) fn cut_disclaimer(lines: &mut Vec<Line<'_>>) {
    // Index of the first line of the tail: the last FOOTER_MAX_LINES
    // non-empty lines.
    let mut tail_start = lines.len();
    let mut seen = 0;
    while tail_start > 0 && seen < FOOTER_MAX_LINES {
        tail_start -= 1;
        if !lines.get(tail_start).is_some_and(Line::is_blank) {
            seen += 1;
        }
    }
    let blank = |i: usize, lines: &[Line<'_>]| lines.get(i).is_some_and(Line::is_blank);
    // Paragraph boundaries: a paragraph starts at a non-empty line after an
    // empty line (or at the tail's start if that begins a paragraph).
    let mut i = 0;
    let mut para = String::with_capacity(256);
    // Paragraphs removed by themselves, as [start, end) line ranges.
    let mut removed: Vec<(usize, usize)> = Vec::new();
    // Words of the lines before `i` that stay, counted only when a
    // disclaimer is found in the tail (seldom).
    let words_before = |i: usize, lines: &[Line<'_>], removed: &[(usize, usize)]| {
        lines
            .iter()
            .take(i)
            .enumerate()
            .filter(|(n, _)| !removed.iter().any(|(a, b)| (*a..*b).contains(n)))
            .map(|(_, l)| count_words(l.trimmed))
            .sum::<usize>()
    };
    while i < lines.len() {
        let starts_para = !blank(i, lines) && (i == 0 || blank(i - 1, lines));
        if !starts_para {
            i += 1;
            continue;
        }
        let end = (i..lines.len())
            .find(|j| blank(*j, lines))
            .unwrap_or(lines.len());
        para.clear();
        for (n, l) in lines.get(i..end).unwrap_or(&[]).iter().enumerate() {
            if n > 0 {
                para.push(' ');
            }
            para.push_str(l.text);
        }
        let found = markers_in(&para);
        let disclaimer = (found & DISCLAIMER_BITS).count_ones() >= 2;
        let footer = (found & !DISCLAIMER_BITS).count_ones() >= 2;
        // A paragraph longer than any footer or disclaimer is text, whatever
        // phrases it holds (a survey spam's "opt-out ... unsubscribe").
        let short = count_words(&para) <= PARA_MAX_WORDS;
        if (disclaimer || footer) && short {
            if i >= tail_start {
                let before = words_before(i, lines, &removed);
                let after = lines.get(end..).map_or(0, words_in);
                let rest = lines.get(end..).unwrap_or(&[]);
                if before > 0
                    && ((small_tail(after, before) && !holds_prose(rest)) || holds_marker(rest))
                {
                    lines.truncate(i);
                    break;
                }
            }
            removed.push((i, end));
        }
        i = end;
    }
    if removed.is_empty() {
        return;
    }
    // Paragraphs removed by themselves may hold at most twice the words
    // that stay (the bound of every cut: `MIN_KEPT_SHARE`). A sender who
    // writes two footer phrases into his text's paragraph ("opt-out",
    // "unsubscribe") and a line of junk words above and below it had the
    // text removed and the junk fingerprinted; the line steps' own bound
    // did not stop it, since the junk alone made its 20 words.
    let gone: usize = removed
        .iter()
        .map(|(a, b)| lines.get(*a..*b).map_or(0, words_in))
        .sum();
    if gone > words_in(lines).saturating_sub(gone) * (MIN_KEPT_SHARE - 1) {
        return;
    }
    let mut n = 0;
    lines.retain(|_| {
        let keep = !removed.iter().any(|(a, b)| (*a..*b).contains(&n));
        n += 1;
        keep
    });
}

/// Most words of a paragraph [`cut_disclaimer`] takes for a footer or a
/// disclaimer (the longest legal notices seen run to about 100).
pub(super) const PARA_MAX_WORDS: usize = 120;

/// Does `lines` hold a paragraph of prose: [`PROSE_WORDS`] words or more,
/// a line of which ends in `.`, `!` or `?` (a sign-off may follow it). The text of a message, not a footer's
/// address block or links: a disclaimer put above the last paragraph of a
/// text is removed by itself and the paragraph stays, as it does anywhere
/// else in the text.
pub(super) fn holds_prose(lines: &[Line<'_>]) -> bool {
    lines.split(Line::is_blank).any(|para| {
        words_in(para) >= PROSE_WORDS && para.iter().any(|l| l.trimmed.ends_with(['.', '!', '?']))
    })
}

/// Words of a paragraph of prose ([`holds_prose`]).
pub(super) const PROSE_WORDS: usize = 8;

/// Bits of [`markers_in`] that are disclaimer phrases (the first ten).
pub(super) const DISCLAIMER_BITS: u32 = (1 << DISCLAIMER_MARKERS.len()) - 1;

/// Which of the disclaimer and list-footer phrases `text` holds, as bits
/// (disclaimer phrases first, then list-footer phrases, in their order):
/// a vectorized search for any phrase, then, where one occurs, one pass of
/// an Aho-Corasick automaton over the text (testing each phrase with
/// `contains` read it fifteen times). Overlapping matches count ("if you
/// have received this email in error" holds two phrases).
pub(super) fn markers_in(text: &str) -> u32 {
    static MARKERS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(DISCLAIMER_MARKERS.iter().chain(&LIST_FOOTER_MARKERS))
                .ok()
        });
    // Whether any phrase occurs, answered by a leftmost-first automaton:
    // for these it uses a vectorized prefilter (Teddy), several times
    // faster than the DFA's byte-by-byte walk, and most paragraphs hold no
    // phrase. The DFA then finds the overlapping matches of the rest.
    static ANY: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .build(DISCLAIMER_MARKERS.iter().chain(&LIST_FOOTER_MARKERS))
                .ok()
        });
    let (Some(ac), Some(any)) = (MARKERS.as_ref(), ANY.as_ref()) else {
        // Not reached: the phrases are fixed and valid.
        return 0;
    };
    if !any.is_match(text) {
        return 0;
    }
    ac.find_overlapping_iter(text)
        .fold(0, |found, m| found | 1 << m.pattern().as_u32())
}

/// "Dear John Smith,", "Hello jane@example.com!", "Hi Maria", "John,".
pub(super) fn is_greeting(t: &str) -> bool {
    let words = t.split_whitespace().count();
    if words > 8 {
        return false;
    }
    const OPENERS: [&str; 12] = [
        "dear",
        "hello",
        "hi",
        "hey",
        "greetings",
        "good morning",
        "good afternoon",
        "good evening",
        "attn",
        "attention",
        "howdy",
        "bonjour",
    ];
    let starts = OPENERS.iter().any(|o| {
        t.strip_prefix(o)
            .is_some_and(|r| r.is_empty() || r.starts_with(|c: char| !c.is_alphanumeric()))
    });
    starts || (words <= 3 && t.ends_with(',') && t.chars().any(char::is_alphabetic))
}
