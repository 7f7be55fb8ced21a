//! Spellings a reader still reads, mapped to what is read: a word written
//! backwards inside a right-to-left override (which every client shows the
//! right way round), capitals separated by single spaces (`U P D A T E`),
//! letters separated by a sign (`s.e.c.u.r.e`), and digits or signs for
//! letters (`acc0unt`, `p@yment`, `$ecure`).
//!
//! Each rule has a bound a sender cannot move, and none drops text:
//! - an override is undone up to its pop, the end of its line or the
//!   next override, whichever comes first;
//! - spaced letters join only when they are three capitals or more (`a D
//!   E V I C E` keeps its article); separated letters only when they are
//!   three single letters or digits or more, two of them letters, with one
//!   and the same sign between each two (`e.g.` and `1.2.3` stay);
//! - digits and signs become letters only inside a word of ASCII letters
//!   of three characters or more with a letter at least and at most two
//!   substitutes a letter and one more a sign (`7h3`, `$7@7emen7`), that
//!   does not start with two digits (`10am`; one digit before a letter is
//!   read: `7he`, `4ccount`), holds no run of three digits but beside a
//!   sign (`$3771ng$`) and none of five, has a substitute between two
//!   letters, opens with a sign or a digit (`$ecure`, `7ime`) or ends in
//!   one sign or digit (`thi$`, `th3`), and reads as a word (no four
//!   consonants in a row). Two digits or more
//!   after the last letter (`win10`, `covid19`) count only with a
//!   substitute inside; a word of eight characters or more with a single
//!   digit is not read (`b7ypeang` is a hash-buster as often as `secur1ty`
//!   is a word). Ordinary numbers, versions and random identifiers keep
//!   their digits, which later steps fold to `#` or drop.
//!
//! UTS #39's skeleton (in [`super::fold`]) leaves ASCII alone, so these
//! rules are the project's own. [`before_fold`] runs on the text as
//! written (case and bidi controls are gone after folding),
//! [`read_spellings`] on the folded text, [`fold_l`] on the normalized one.

use std::borrow::Cow;

/// Right-to-left override and pop directional formatting.
const RLO: char = '\u{202e}';
const PDF: char = '\u{202c}';

/// The readings that need the text before it is folded: spaced capitals
/// joined ([`join_capitals`]), overrides undone ([`unreverse`]).
pub(super) fn before_fold(text: &str) -> Cow<'_, str> {
    match join_capitals(text) {
        Cow::Borrowed(t) => unreverse(t),
        Cow::Owned(t) if t.contains(RLO) => Cow::Owned(unreverse(&t).into_owned()),
        owned => owned,
    }
}

/// `text` with the characters between each right-to-left override and
/// its pop (or the end of the line, or the next override) in the order a
/// reader sees them. Borrowed when there is no override.
fn unreverse(text: &str) -> Cow<'_, str> {
    if !text.contains(RLO) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(RLO) {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let inner = &after[RLO.len_utf8()..];
        let end = inner.find([PDF, '\n', RLO]).unwrap_or(inner.len());
        let (reversed, tail) = inner.split_at(end);
        out.extend(reversed.chars().rev());
        rest = tail.strip_prefix(PDF).unwrap_or(tail);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// `text` with each run of three or more single capital letters one
/// space apart joined into a word (`U P D A T E`, and `E.` may end it),
/// before case is folded: `a D E V I C E` is `a DEVICE`. Borrowed when
/// there is none.
fn join_capitals(text: &str) -> Cow<'_, str> {
    let capital = |w: &str| {
        let mut c = w.chars();
        c.next().is_some_and(|x| x.is_uppercase() && is_spelled(x))
            && c.all(|x| matches!(x, '.' | ',' | '!' | '?' | ';' | ':'))
    };
    let bare = |w: &str| w.chars().count() == 1;
    let b = text.as_bytes();
    // `X Y ` somewhere, found from the spaces (a word apart).
    let upper = |i: usize| b.get(i).is_some_and(u8::is_ascii_uppercase);
    let hint = memchr::memchr_iter(b' ', b)
        .any(|p| p > 0 && upper(p - 1) && upper(p + 1) && b.get(p + 2) == Some(&b' '));
    if !hint {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let pieces: Vec<&str> = line.split(' ').collect();
        let mut i = 0;
        let mut first = true;
        while i < pieces.len() {
            // A run: bare capitals, the last of which may carry punctuation.
            let mut j = i;
            while pieces.get(j).is_some_and(|w| capital(w)) {
                let last = !bare(pieces.get(j).copied().unwrap_or(""));
                j += 1;
                if last {
                    break;
                }
            }
            let run = pieces.get(i..j).unwrap_or_default();
            if !first {
                out.push(' ');
            }
            first = false;
            if run.len() >= 3 {
                out.push_str(&run.concat());
                changed = true;
                i = j;
            } else {
                out.push_str(pieces.get(i).copied().unwrap_or(""));
                i += 1;
            }
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` (folded) with the spellings of the module's rules read; `None`
/// when no word changes (most text).
pub(super) fn read_spellings(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut done = 0;
    let mut line_buf = String::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len())) {
        let whole = text.get(start..end).unwrap_or("");
        // (A CRLF line's `\r` stays where it is.)
        let line = whole.strip_suffix('\r').unwrap_or(whole);
        if may_change(line) {
            line_buf.clear();
            if read_line(line, &mut line_buf) {
                line_buf.push_str(&whole[line.len()..]);
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(text.get(done..start).unwrap_or(""));
                o.push_str(&line_buf);
                done = end;
            }
        }
        start = end + 1;
    }
    let mut o = out?;
    o.push_str(text.get(done..).unwrap_or(""));
    Some(o)
}

/// Cheap test before the word-by-word pass, on the bytes: a digit or
/// `@ $ |` right after a letter (`c0`, `p@`), `!` between two letters
/// (`cl!ck`), a sign before a letter that opens a word (`$e`), or the
/// start of separated letters (`s.e.c`: a letter opening a word, the same
/// sign twice). Most lines of ordinary mail have none of these.
fn may_change(line: &str) -> bool {
    let b = line.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(b' ');
    let alpha = |x: u8| x.is_ascii_alphabetic();
    let opens = |i: usize| i == 0 || !at(i - 1).is_ascii_alphanumeric();
    // Only digits and signs are looked at (letters and spaces, most of
    // the bytes, are skipped at once).
    b.iter().enumerate().any(|(i, &y)| {
        if alpha(y) || y == b' ' {
            return false;
        }
        let prev = if i == 0 { b' ' } else { at(i - 1) };
        let next = at(i + 1);
        (is_substitute(y) && alpha(prev) && (y != b'!' || alpha(next)))
            || (y == b'|' && alpha(prev) && alpha(next))
            || (is_opening_sign(y) && opens(i) && alpha(next))
            || (is_separator(y)
                && i > 0
                && alpha(prev)
                && opens(i - 1)
                && alpha(next)
                && at(i + 2) == y
                && alpha(at(i + 3)))
    })
}

/// Reads one line into `out`; false when nothing changed.
fn read_line(line: &str, out: &mut String) -> bool {
    // Each piece between two spaces, read.
    let words: Vec<Cow<'_, str>> = line.split(' ').map(read_piece).collect();
    if !words.iter().any(|w| matches!(w, Cow::Owned(_))) {
        return false;
    }
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
    true
}

/// A character that can stand for a letter in a spelled-out word: a
/// letter of an alphabetic script that writes words with spaces (not
/// CJK, whose characters are words of their own), or an ASCII digit.
fn is_spelled(c: char) -> bool {
    c.is_ascii_digit() || (c.is_alphabetic() && (c as u32) < 0x0600)
}

/// One piece of a line (no spaces): separated letters joined, then
/// digits and signs read as letters.
fn read_piece(piece: &str) -> Cow<'_, str> {
    let lead = piece
        .find(|c: char| !matches!(c, '(' | '"' | '\'' | '['))
        .unwrap_or(piece.len());
    let trail = piece
        .rfind(|c: char| {
            !matches!(
                c,
                '.' | ',' | ';' | ':' | '!' | '?' | ')' | '"' | '\'' | ']'
            )
        })
        .map_or(lead, |i| {
            i + piece[i..].chars().next().map_or(1, char::len_utf8)
        });
    if trail <= lead {
        return Cow::Borrowed(piece);
    }
    let core = &piece[lead..trail];
    let read = match join_separated(core) {
        Some(joined) => Some(read_substitutes(&joined).unwrap_or(joined)),
        None => read_substitutes(core),
    };
    match read {
        Some(r) => Cow::Owned(format!("{}{r}{}", &piece[..lead], &piece[trail..])),
        None => Cow::Borrowed(piece),
    }
}

/// Signs that separate the letters of a spelled-out word.
fn is_separator(b: u8) -> bool {
    matches!(
        b,
        b'.' | b'-' | b'_' | b'*' | b'/' | b'+' | b'~' | b'=' | b'^' | b'|' | b':'
    )
}

/// `s.e.c.u.r.e` read as `secure`: single letters or digits (three or
/// more, two of them letters), each two separated by the same sign.
fn join_separated(core: &str) -> Option<String> {
    let mut chars = core.chars();
    let first = chars.next()?;
    if !is_spelled(first) {
        return None;
    }
    let mut joined = String::from(first);
    let mut sep = None;
    let mut letters = usize::from(first.is_alphabetic());
    while let Some(s) = chars.next() {
        if !s.is_ascii() || !is_separator(s as u8) || sep.is_some_and(|x| x != s) {
            return None;
        }
        sep = Some(s);
        let c = chars.next().filter(|c| is_spelled(*c))?;
        letters += usize::from(c.is_alphabetic());
        joined.push(c);
    }
    (joined.chars().count() >= 3 && letters >= 2).then_some(joined)
}

/// Digits and signs that stand for letters.
fn is_substitute(b: u8) -> bool {
    matches!(
        b,
        b'0' | b'1' | b'3' | b'4' | b'5' | b'7' | b'8' | b'9' | b'@' | b'$' | b'!'
    )
}

/// `acc0unt` read as `account`, within the bounds of the module's docs;
/// `None` when the word is not such a spelling. A chunk of several words
/// (`part-fu1l`, `m0dels.details`, `24-h0ur`) is read word by word; an
/// address or a URL is left as it is, for the token steps to reduce to
/// its host.
fn read_substitutes(core: &str) -> Option<String> {
    if core.contains("://")
        || core.starts_with("www.")
        || core.find('@').is_some_and(|at| core[at..].contains('.'))
    {
        return None;
    }
    // (`/` and `+` are Base64's: a chunk that holds them is one word, as
    // a hash-buster is.)
    let is_word_byte = |b: u8| {
        b.is_ascii_alphanumeric() || matches!(b, b'$' | b'@' | b'!' | b'|' | b'\'' | b'/' | b'+')
    };
    if core.bytes().all(is_word_byte) {
        return read_word(core);
    }
    let mut out = String::with_capacity(core.len());
    let mut changed = false;
    let mut rest = core;
    while !rest.is_empty() {
        let end = rest
            .bytes()
            .position(|b| !is_word_byte(b))
            .unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        match read_word(word) {
            Some(r) => {
                out.push_str(&r);
                changed = true;
            }
            None => out.push_str(word),
        }
        let sep = tail.chars().next().map_or(0, char::len_utf8);
        out.push_str(&tail[..sep]);
        rest = &tail[sep..];
    }
    changed.then_some(out)
}

/// Signs that open a word for a letter (`$ecure`, `@ccount`, `!nfo`,
/// `|ater`).
fn is_opening_sign(b: u8) -> bool {
    matches!(b, b'$' | b'@' | b'!' | b'|')
}

/// [`read_substitutes`] of one word (no separator inside).
fn read_word(word: &str) -> Option<String> {
    let b = word.as_bytes();
    // A word may open with one digit before a letter (`7he`, `4ccount`),
    // never with two (`10am`, `2026th`).
    match b {
        [] => return None,
        [d, l, ..] if d.is_ascii_digit() && !l.is_ascii_lowercase() => return None,
        _ => {}
    }
    let (mut letters, mut subs, mut run) = (0usize, 0usize, 0usize);
    let mut longest_run = 0usize;
    let mut hex_letters = true;
    for (i, &c) in b.iter().enumerate() {
        // `|` stands for a letter only between two (`he|p`).
        let pipe = c == b'|'
            && i > 0
            && b.get(i - 1).is_some_and(u8::is_ascii_lowercase)
            && b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        if c.is_ascii_lowercase() {
            letters += 1;
            hex_letters &= c <= b'f';
            run = 0;
        } else if is_substitute(c) || pipe {
            subs += 1;
            run = if c.is_ascii_digit() { run + 1 } else { 0 };
            longest_run = longest_run.max(run);
        } else if c != b'\'' {
            return None;
        }
    }
    // (Hex identifiers are long; `fac3` is a word.)
    let hex = hex_letters && b.len() >= 6;
    // Up to two substitutes a letter, and one more a sign (`7h3`, `n07`,
    // `$7@y`, `$7@7emen7`); a word of three characters or more with one
    // letter at least. Random identifiers of that shape read as runs of
    // consonants (below).
    let signs = b.iter().filter(|c| matches!(c, b'$' | b'@' | b'!')).count();
    let too_many = subs > 2 * letters + signs;
    // Three digits in a row are a number (`mp3`, `a380`), but beside a
    // sign a word's letters (`$3771ng$`); five never.
    if longest_run >= 5 || (longest_run >= 3 && signs == 0) {
        return None;
    }
    if subs == 0 || letters == 0 || b.len() < 3 || too_many || hex {
        return None;
    }
    // A long word with a single digit (`b7ypeang`) is as likely a random
    // identifier, which the random token step drops, as a spelling.
    if b.len() >= 8 && subs == 1 && b.iter().any(u8::is_ascii_digit) {
        return None;
    }
    // Substitutes between letters (`acc0unt`), a sign opening the word
    // (`$ecure`, `$3cure`) or one closing it (`th3`, `thi$`); more digits
    // after the last letter (`win10`, `covid19`) are a number, unless the
    // word has a substitute inside as well.
    let first_letter = b.iter().position(u8::is_ascii_lowercase)?;
    let last_letter = b.iter().rposition(u8::is_ascii_lowercase)?;
    let inside = b
        .get(first_letter..last_letter)
        .is_some_and(|m| m.iter().any(|c| is_substitute(*c) || *c == b'|'));
    // Substitutes before the first letter: one sign or digit (`$ecure`,
    // `7he`), or a run of them that opens with a sign (`$3cure`,
    // `$7@7emen7`), five at most.
    let lead = b.get(..first_letter).unwrap_or_default();
    let opening = match lead {
        [] => false,
        [c] if is_opening_sign(*c) || c.is_ascii_digit() => true,
        [c, rest @ ..]
            if lead.len() <= 5 && is_opening_sign(*c) && rest.iter().all(|r| is_substitute(*r)) =>
        {
            true
        }
        _ => return None,
    };
    let trailing = b.get(last_letter + 1..).unwrap_or_default();
    // One sign or digit closing the word (`th3`, `insuranc3`, `thi$`):
    // after letters, a lone digit is a letter more often than a number
    // (`word1` reads as `wordi`, the same in every copy).
    let closing = matches!(trailing, [c] if *c != b'!');
    // Some substitute in its place, and nothing after the last letter
    // but a closing one.
    let placed = inside || opening || closing;
    if !placed || !(trailing.is_empty() || inside || closing) {
        return None;
    }
    let read: String = b.iter().map(|&c| letter_of(c)).collect();
    // What is read must look like a word: random identifiers (`xk9mq3pl`)
    // read as runs of consonants, and keep their digits for the random
    // token step to drop.
    (longest_consonant_run(&read) <= MAX_CONSONANTS).then_some(read)
}

/// The letter a substitute stands for (a letter stands for itself).
fn letter_of(c: u8) -> char {
    match c {
        b'0' => 'o',
        // `1` and `|` are an `i` or an `l`: read as `i`, and every `l` of
        // the text is read as `i` too ([`fold_l`]).
        b'1' | b'!' | b'|' => 'i',
        b'3' => 'e',
        b'4' | b'@' => 'a',
        b'5' | b'$' => 's',
        b'7' => 't',
        b'8' => 'b',
        b'9' => 'g',
        c => char::from(c),
    }
}

/// Most consonants in a row in a word read from substitutes (`strength`
/// has four: it is one of the few words left alone).
const MAX_CONSONANTS: usize = 3;

/// Reads every `l` of normalized `text` as `i`: `1` and `|` stand for
/// both letters, and only a dictionary could tell which (`p1ace`,
/// `c1ick`), so the two are one letter in fingerprints. No two words a
/// reader tells apart differ only there, or hardly any (`lick`, `iick`).
pub(super) fn fold_l(text: &mut String) {
    if memchr::memchr(b'l', text.as_bytes()).is_none() {
        return;
    }
    let mut bytes = std::mem::take(text).into_bytes();
    for b in &mut bytes {
        if *b == b'l' {
            *b = b'i';
        }
    }
    // ASCII for ASCII: still UTF-8.
    *text = String::from_utf8(bytes).unwrap_or_default();
}

/// The longest run of ASCII letters other than `a e i o u y`.
fn longest_consonant_run(w: &str) -> usize {
    let (mut run, mut longest) = (0, 0);
    for b in w.bytes() {
        if matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y') {
            run = 0;
        } else {
            run += 1;
            longest = longest.max(run);
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> String {
        read_spellings(s).unwrap_or_else(|| s.to_owned())
    }

    #[test]
    fn overrides_are_read_as_shown() {
        assert_eq!(
            before_fold("your \u{202e}tnuocca\u{202c} is"),
            "your account is"
        );
        // To the end of the line when the pop is missing.
        assert_eq!(before_fold("a \u{202e}cba\nnext"), "a abc\nnext");
        assert!(matches!(before_fold("plain"), Cow::Borrowed(_)));
        // Both readings before folding, in one text.
        assert_eq!(before_fold("U P D A T E \u{202e}won\u{202c}"), "UPDATE now");
    }

    /// What a fingerprint sees: read, then `l` folded into `i`.
    fn seen(s: &str) -> String {
        let mut t = read(s);
        fold_l(&mut t);
        t
    }

    #[test]
    fn substitutes_are_read_as_letters() {
        for (dressed, plain) in [
            ("verify your acc0unt p@yment", "verify your account payment"),
            (
                "$ecure s3cur1ty he11o cl!ck p|ace",
                "secure security hello click place",
            ),
            ("your y0ur, acc0unt.", "your your, account."),
            (
                "th3 @nd wi1l c1ick w1ll thi$",
                "the and will click will this",
            ),
            (
                "d0n't 24-h0ur !nc0me $3cure fac3",
                "don't 24-hour income secure face",
            ),
            ("x wi7h\r\nnext", "x with\r\nnext"),
            // Every a, s and t a sign, at the start of a word too.
            // (`n07` stays: two digits closing a word are a number, as in
            // `win10`.)
            (
                "7he $7@7emen7 7h@n @r3 $7@y $3771ng$ 7w0 @cc0un7",
                "the statement than are stay settings two account",
            ),
        ] {
            assert_eq!(seen(dressed), seen(plain), "{dressed}");
        }
        // Chunks of words are read word by word (addresses and URLs are
        // not: `numbers_addresses_and_identifiers_stay`).
        assert_eq!(
            seen("part-fu1l m0dels.details @rea(fr0m typist,m@nager fr3e*."),
            seen("part-full models.details area(from typist,manager free*."),
        );
    }

    #[test]
    fn numbers_addresses_and_identifiers_stay() {
        for s in [
            "info@acc0unt.example",
            "http://acc0unt.example/p@y",
            "www.acc0unt.example",
            "on the 4th at 10am for 3days",
            "version 1.2.3 of win10 and covid19",
            "order abc1234 or a7f3k9x2",
            "pay $100 or 50$ now",
            "mail me at joe@example.com",
            "e.g. i.e. a.m.",
            "fa9c3e1b xk9mq3pl word12 item34 5fv6/gq4l8ezt b7ypeang",
        ] {
            assert_eq!(read(s), s, "{s}");
        }
    }

    #[test]
    fn separated_letters_are_joined() {
        assert_eq!(read("your s.e.c.u.r.i.t.y code"), "your security code");
        assert_eq!(read("u-p-d-a-t-e now"), "update now");
        assert_eq!(read("made in the u.s.a."), "made in the usa.");
        // Mixed separators are not one word.
        assert_eq!(read("a.b-c"), "a.b-c");
        // Joined, then read: `s.3.c.u.r.e`.
        assert_eq!(read("s.3.c.u.r.e"), "secure");
    }

    #[test]
    fn spaced_capitals_are_joined() {
        let join = |s: &str| join_capitals(s).into_owned();
        assert_eq!(join("please U P D A T E your"), "please UPDATE your");
        // (The second space stays; later steps collapse spaces.)
        assert_eq!(join("U P D A T E  Y O U R"), "UPDATE  YOUR");
        assert_eq!(join("end U P D A T E. Next"), "end UPDATE. Next");
        // An article before a spelled-out word stays a word.
        assert_eq!(join("from a D E V I C E"), "from a DEVICE");
        // Two single-letter words are text, and so are lower-case letters.
        assert_eq!(join("Plan A or I go"), "Plan A or I go");
        assert_eq!(join("a b c d"), "a b c d");
    }

    /// The whole normalization, as the engine runs it: a dressed line and
    /// its plain text give the same normalized text.
    #[test]
    fn dressed_text_normalizes_as_plain_text() {
        let cfg = crate::config::NormalizeConfig::default();
        let norm = |t: &str| {
            let body = super::super::super::BodyText {
                text: t.to_owned(),
                ..Default::default()
            };
            super::super::normalize(&body, &[], &cfg).text
        };
        assert_eq!(
            norm("Your acc0unt needs a s.e.c.u.r.i.t.y U P D A T E: \u{202e}kcilc\u{202c} here and c1aim it."),
            norm("Your account needs a security update: click here and claim it."),
        );
    }

    #[test]
    fn unchanged_text_is_not_copied() {
        assert!(read_spellings("an ordinary line of text\nand another").is_none());
    }
}
