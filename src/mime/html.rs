//! HTML to visible text, with link targets kept and hidden text dropped.
//!
//! Implementation note: mail-parser's `html_to_text` is not used. It drops
//! every word after a comment that ends in more than two dashes (`<!---->`)
//! up to the next ordinary `-->` (0.11.9), it loses `href` targets, and it
//! keeps text a reader never sees: `display:none`, zero-size, white-on-white
//! text. Spam hides its hash-busters exactly there. This is a small tolerant
//! tokenizer, not an HTML5 parser: it never fails, runs in one pass over the
//! input, and bounds its element stack.
//!
//! Output: paragraphs separated by a blank line (block elements), `<br>` as a
//! newline, link targets written into the text where the link starts (so the
//! normalizer treats them like URLs in plain text) and also returned.

/// Deepest element nesting tracked; deeper elements are treated as text containers.
const MAX_STACK: usize = 256;
/// Most link targets returned per document.
pub const MAX_URLS: usize = 64;

/// Converts HTML to visible text. Appends to `out`, pushes link targets onto
/// `urls` (at most [`MAX_URLS`]) and stops once `out` reaches `limit` bytes.
///
/// Implementation note: tags are read without allocating. Names stay
/// slices of `html` (compared case-insensitively; lower-cased into a
/// stack buffer for the tests on known names) and attribute values are
/// decoded only for the three attributes whose values are read (`style`,
/// `color`, `href`; `hidden` needs none). Copying every tag name and
/// attribute into `String`s made this a fifth of the engine's time on
/// HTML spam.
pub fn to_text(html: &str, out: &mut String, urls: &mut Vec<String>, limit: usize) {
    let mut stack: Vec<(&str, bool)> = Vec::new();
    let mut hidden_depth = 0usize;
    let mut rest = html;
    while !rest.is_empty() && out.len() < limit {
        let Some(lt) = memchr::memchr(b'<', rest.as_bytes()) else {
            if hidden_depth == 0 {
                push_text(out, rest, limit);
            }
            break;
        };
        let (text, tail) = rest.split_at(lt);
        if hidden_depth == 0 {
            push_text(out, text, limit);
        }
        rest = tail;
        if let Some(after) = rest.strip_prefix("<!--") {
            // A comment ends at the first "-->" after "<!--" (HTML5 also ends
            // "<!-->" and "<!--->" at once). `<!---->` and `<!-- x --->` end
            // here too: this is the case mail-parser gets wrong.
            rest = if let Some(a) = after.strip_prefix('>') {
                a
            } else if let Some(a) = after.strip_prefix("->") {
                a
            } else {
                match memchr::memmem::find(after.as_bytes(), b"-->") {
                    Some(end) => after.get(end + 3..).unwrap_or(""),
                    None => "",
                }
            };
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            rest = match memchr::memchr(b'>', rest.as_bytes()) {
                Some(end) => rest.get(end + 1..).unwrap_or(""),
                None => "",
            };
            continue;
        }
        let Some(tag) = parse_tag(rest) else {
            // A '<' that opens no tag is text.
            if hidden_depth == 0 {
                push_text(out, "<", limit);
            }
            rest = rest.get(1..).unwrap_or("");
            continue;
        };
        rest = rest.get(tag.len..).unwrap_or("");
        let mut buf = [0; NAME_BUF];
        let name = lower_name(tag.name, &mut buf);
        if !tag.closing && is_raw_text(name) {
            // Skip the element's content up to its end tag.
            rest = skip_past_end_tag(rest, name);
            continue;
        }
        if tag.closing {
            if let Some(pos) = stack
                .iter()
                .rposition(|(n, _)| n.eq_ignore_ascii_case(tag.name))
            {
                for (_, hidden) in stack.drain(pos..) {
                    if hidden {
                        hidden_depth = hidden_depth.saturating_sub(1);
                    }
                }
            }
            if is_block(name) && hidden_depth == 0 {
                push_break(out, "\n\n");
            }
            continue;
        }
        if name == "br" {
            if hidden_depth == 0 {
                push_break(out, "\n");
            }
            continue;
        }
        if is_block(name) && hidden_depth == 0 {
            push_break(out, "\n\n");
        }
        let hidden = tag.hidden;
        if name == "a" && hidden_depth == 0 && !hidden {
            if let Some(href) = tag.href {
                push_text(out, " ", limit);
                push_text(out, &href, limit);
                push_text(out, " ", limit);
                if urls.len() < MAX_URLS {
                    urls.push(href);
                }
            }
        }
        if is_void(name) || tag.self_closing {
            continue;
        }
        if stack.len() < MAX_STACK {
            if hidden {
                hidden_depth += 1;
            }
            stack.push((tag.name, hidden));
        }
    }
}

/// Bytes of a tag name [`lower_name`] lower-cases: more than the longest
/// name any test here knows (`blockquote`).
const NAME_BUF: usize = 16;

/// `name` lower-cased, in `buf`; a name too long for it is returned as it
/// is (it equals none of the known names, in any case).
fn lower_name<'a>(name: &'a str, buf: &'a mut [u8; NAME_BUF]) -> &'a str {
    let Some(dst) = buf.get_mut(..name.len()) else {
        return name;
    };
    dst.copy_from_slice(name.as_bytes());
    dst.make_ascii_lowercase();
    // ASCII lower-casing keeps UTF-8 valid (tag names are ASCII anyway).
    std::str::from_utf8(dst).unwrap_or(name)
}

fn push_text(out: &mut String, text: &str, limit: usize) {
    if text.is_empty() {
        return;
    }
    let room = limit.saturating_sub(out.len());
    decode_entities(text, out, room);
}

fn push_break(out: &mut String, br: &str) {
    if !out.is_empty() && !out.ends_with("\n\n") {
        if br == "\n" || out.ends_with('\n') {
            out.push('\n');
        } else {
            out.push_str(br);
        }
    }
}

struct Tag<'a> {
    /// The name as written (ASCII letters and digits).
    name: &'a str,
    closing: bool,
    self_closing: bool,
    hidden: bool,
    href: Option<String>,
    /// Bytes of input the tag took, '<' to '>' inclusive.
    len: usize,
}

/// Parses a tag at the start of `s` (which begins with '<'). `None` when
/// what follows '<' is not a tag name.
fn parse_tag(s: &str) -> Option<Tag<'_>> {
    let bytes = s.as_bytes();
    let mut i = 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_start = i;
    while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric()) {
        i += 1;
    }
    if i == name_start
        || !bytes
            .get(name_start)
            .is_some_and(|b| b.is_ascii_alphabetic())
    {
        return None;
    }
    let name = s.get(name_start..i)?;
    // Find the closing '>' outside quotes.
    let attrs_start = i;
    let mut quote: Option<u8> = None;
    while let Some(&b) = bytes.get(i) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => break,
            None => {}
        }
        i += 1;
    }
    let attrs = s.get(attrs_start..i.min(s.len())).unwrap_or("");
    let len = (i + 1).min(s.len());
    let self_closing = attrs.trim_end().ends_with('/');
    let mut hidden = false;
    let mut href = None;
    if !closing {
        let is_font = name.eq_ignore_ascii_case("font");
        let is_a = name.eq_ignore_ascii_case("a");
        for_each_attribute(attrs, |key, raw| {
            if key.eq_ignore_ascii_case("style") {
                hidden |= style_hides(&attribute_value(raw));
            } else if key.eq_ignore_ascii_case("hidden") {
                hidden = true;
            } else if is_font && key.eq_ignore_ascii_case("color") {
                hidden |= is_white(attribute_value(raw).trim());
            } else if is_a && key.eq_ignore_ascii_case("href") {
                let value = attribute_value(raw);
                let v = value.trim();
                if !v.is_empty() {
                    href = Some(v.chars().take(2048).collect());
                }
            }
        });
    }
    Some(Tag {
        name,
        closing,
        self_closing,
        hidden,
        href,
        len,
    })
}

/// Most attributes of one tag that are read.
const MAX_ATTRIBUTES: usize = 64;
/// Most bytes of an attribute value, once decoded.
const MAX_VALUE: usize = 4096;

/// Calls `f(key, raw value)` for each `key=value` pair of a tag's attribute
/// text (at most [`MAX_ATTRIBUTES`]), key as written, value without its
/// quotes and not yet decoded (see [`attribute_value`]); a key without a
/// value has the value "".
fn for_each_attribute<'a>(attrs: &'a str, mut f: impl FnMut(&'a str, &'a str)) {
    let b = attrs.as_bytes();
    let mut i = 0;
    let mut seen = 0;
    while i < b.len() && seen < MAX_ATTRIBUTES {
        while b
            .get(i)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b'/')
        {
            i += 1;
        }
        let ks = i;
        while b
            .get(i)
            .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'=' && *c != b'/')
        {
            i += 1;
        }
        if i == ks {
            i += 1;
            continue;
        }
        let key = attrs.get(ks..i).unwrap_or("");
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        let mut raw = "";
        if b.get(i) == Some(&b'=') {
            i += 1;
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            raw = match b.get(i) {
                Some(&q) if q == b'"' || q == b'\'' => {
                    let vs = i + 1;
                    let ve = b
                        .get(vs..)
                        .and_then(|r| memchr::memchr(q, r))
                        .map_or(b.len(), |p| vs + p);
                    i = ve + 1;
                    attrs.get(vs..ve).unwrap_or("")
                }
                _ => {
                    let vs = i;
                    while b.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
                        i += 1;
                    }
                    attrs.get(vs..i).unwrap_or("")
                }
            };
        }
        seen += 1;
        f(key, raw);
    }
}

/// An attribute value with its character references decoded, at most
/// [`MAX_VALUE`] bytes; borrowed when there is nothing to decode or cut.
fn attribute_value(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.len() <= MAX_VALUE && memchr::memchr(b'&', raw.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(raw);
    }
    let mut value = String::new();
    decode_entities(raw, &mut value, MAX_VALUE);
    std::borrow::Cow::Owned(value)
}

/// Does an inline style make its element invisible? Covers the forms spam
/// uses: display:none, visibility:hidden, zero or 1-2 px fonts, zero
/// opacity, zero height with hidden overflow, and white text.
fn style_hides(style: &str) -> bool {
    let s: String = style
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let mut overflow_hidden = false;
    let mut zero_height = false;
    for decl in s.split(';') {
        let Some((prop, val)) = decl.split_once(':') else {
            continue;
        };
        let val = val.trim_end_matches("!important");
        match prop {
            "display" if val == "none" => return true,
            "visibility" if val == "hidden" || val == "collapse" => return true,
            "font-size" if tiny_length(val) => return true,
            "opacity" if val.parse::<f32>().is_ok_and(|o| o < 0.1) => return true,
            "color" if is_white(val) => return true,
            "overflow" if val == "hidden" => overflow_hidden = true,
            "height" | "max-height" | "width" | "max-width" if tiny_length(val) => {
                zero_height = true
            }
            _ => {}
        }
    }
    overflow_hidden && zero_height
}

/// A length of at most 2px/1pt, or zero in any unit.
fn tiny_length(val: &str) -> bool {
    let num: String = val
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let unit = &val[num.len().min(val.len())..];
    let Ok(n) = num.parse::<f32>() else {
        return false;
    };
    n == 0.0
        || (unit == "px" && n <= 2.0)
        || (unit == "pt" && n <= 1.5)
        || (unit == "em" && n < 0.2)
}

fn is_white(val: &str) -> bool {
    matches!(
        val.to_ascii_lowercase().as_str(),
        "#fff" | "#ffffff" | "white" | "#fefefe" | "rgb(255,255,255)" | "transparent"
    )
}

fn is_raw_text(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "head" | "title" | "noscript" | "template" | "xml" | "object" | "svg"
    )
}

fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "table"
            | "tr"
            | "li"
            | "ul"
            | "ol"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "blockquote"
            | "hr"
            | "pre"
            | "center"
            | "form"
            | "dl"
            | "dt"
            | "dd"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "body"
            | "html"
            | "address"
    )
}

/// Skips to just past `</name>` (case-insensitive); to the end if absent.
fn skip_past_end_tag<'a>(s: &'a str, name: &str) -> &'a str {
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(p) = bytes.get(i..).and_then(|r| memchr::memmem::find(r, b"</")) {
        let start = i + p + 2;
        let end = start + name.len();
        if bytes
            .get(start..end)
            .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            && !bytes.get(end).is_some_and(|c| c.is_ascii_alphanumeric())
        {
            return match s.get(end..).and_then(|r| r.find('>')) {
                Some(gt) => s.get(end + gt + 1..).unwrap_or(""),
                None => "",
            };
        }
        i = start;
    }
    ""
}

/// Appends `text` with HTML character references decoded, at most `room` bytes.
pub fn decode_entities(text: &str, out: &mut String, room: usize) {
    let limit = out.len() + room;
    let mut rest = text;
    while let Some(amp) = memchr::memchr(b'&', rest.as_bytes()) {
        let (before, after) = rest.split_at(amp);
        push_bounded(out, before, limit);
        if out.len() >= limit {
            return;
        }
        let semi = after.get(1..).and_then(|a| {
            a.char_indices()
                .take(12)
                .find(|(_, c)| *c == ';')
                .map(|(i, _)| i + 1)
        });
        let decoded = semi
            .and_then(|end| decode_entity(after.get(1..end).unwrap_or("")).map(|c| (c, end + 1)));
        match decoded {
            Some((c, used)) => {
                if out.len() + c.len_utf8() <= limit {
                    out.push(c);
                }
                rest = after.get(used..).unwrap_or("");
            }
            None => {
                push_bounded(out, "&", limit);
                rest = after.get(1..).unwrap_or("");
            }
        }
    }
    push_bounded(out, rest, limit);
}

fn push_bounded(out: &mut String, s: &str, limit: usize) {
    if out.len() + s.len() <= limit {
        out.push_str(s);
    } else {
        let room = limit.saturating_sub(out.len());
        let mut end = room.min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(s.get(..end).unwrap_or(""));
    }
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = if let Some(hex) = num.strip_prefix('x').or_else(|| num.strip_prefix('X')) {
            u32::from_str_radix(hex, 16).ok()?
        } else {
            num.parse::<u32>().ok()?
        };
        return Some(
            char::from_u32(code)
                .filter(|c| *c != '\0')
                .unwrap_or('\u{FFFD}'),
        );
    }
    let c = match name {
        "nbsp" | "ensp" | "emsp" | "thinsp" => ' ',
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "shy" | "zwnj" | "zwj" | "lrm" | "rlm" => '\u{AD}',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "bull" => '•',
        "middot" => '·',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "deg" => '°',
        "plusmn" => '±',
        "times" => '×',
        "divide" => '÷',
        "iexcl" => '¡',
        "iquest" => '¿',
        "szlig" => 'ß',
        _ => return latin1_letter(name),
    };
    Some(c)
}

/// `&eacute;`, `&Ouml;` and the other Latin-1 letters.
fn latin1_letter(name: &str) -> Option<char> {
    const ACCENTS: [(&str, &str, &str); 8] = [
        ("grave", "aeiou", "àèìòù"),
        ("acute", "aeiouy", "áéíóúý"),
        ("circ", "aeiou", "âêîôû"),
        ("tilde", "ano", "ãñõ"),
        ("uml", "aeiouy", "äëïöüÿ"),
        ("ring", "a", "å"),
        ("cedil", "c", "ç"),
        ("slash", "o", "ø"),
    ];
    let mut chars = name.chars();
    let first = chars.next()?;
    let suffix = chars.as_str();
    let lower = first.to_ascii_lowercase();
    for (accent, bases, accented) in ACCENTS {
        if suffix == accent {
            let i = bases.chars().position(|b| b == lower)?;
            let c = accented.chars().nth(i)?;
            return Some(if first.is_ascii_uppercase() {
                c.to_uppercase().next().unwrap_or(c)
            } else {
                c
            });
        }
    }
    match name {
        "aelig" => Some('æ'),
        "AElig" => Some('Æ'),
        "eth" => Some('ð'),
        "thorn" => Some('þ'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> (String, Vec<String>) {
        let mut out = String::new();
        let mut urls = Vec::new();
        to_text(html, &mut out, &mut urls, 1 << 20);
        (out, urls)
    }

    #[test]
    fn comments_with_extra_dashes_do_not_eat_text() {
        assert_eq!(text("va<!---->lued customer").0, "valued customer");
        assert_eq!(text("a<!-- x --->b c").0, "ab c");
        assert_eq!(text("a<!-->b").0, "ab");
    }

    #[test]
    fn hidden_text_is_dropped() {
        let (t, _) = text(
            "buy <span style=\"display: none\">zebra</span>now \
             <font color=\"#FFFFFF\">quux</font><span style='font-size:0px'>x1</span>\
             <div style=\"color:white\">wh</div><p style=\"background-color:#fff\">seen</p>",
        );
        assert!(
            t.contains("buy") && t.contains("now") && t.contains("seen"),
            "{t}"
        );
        assert!(
            !t.contains("zebra") && !t.contains("quux") && !t.contains("x1") && !t.contains("wh"),
            "{t}"
        );
    }

    #[test]
    fn links_are_kept_and_written_into_text() {
        let (t, urls) = text("<a href=\"https://t.example/c/123?u=9\">click here</a>");
        assert_eq!(urls, vec!["https://t.example/c/123?u=9"]);
        assert!(t.contains("https://t.example/c/123?u=9") && t.contains("click here"));
    }

    /// Names and attribute keys in any case; closing tags match their
    /// opening tag in another case; a name longer than any known one is an
    /// element like others.
    #[test]
    fn tags_are_read_in_any_case() {
        let (t, urls) = text(
            "<P>one</p><SPAN Style='DISPLAY:NONE'>x</Span>two<FONT COLOR=White>y</FONT>\
             <A HREF=\"http://h.example/&amp;\">three</A><Script>z</SCRIPT>\
             <Averyveryverylongname hidden>w</AVERYVERYVERYLONGNAME>four",
        );
        assert_eq!(t, "one\n\ntwo http://h.example/& threefour");
        assert_eq!(urls, vec!["http://h.example/&"]);
    }

    /// What the attribute reader keeps from the code it replaced (each
    /// expectation was that code's output): entities decoded in the values
    /// read, `>` inside quotes, the last non-empty `href`, a value cut at
    /// 4096 bytes and a link at 2048 characters, and attributes past the
    /// 64th ignored.
    #[test]
    fn attributes_are_read_as_before() {
        assert_eq!(text("<span style=\"display&#58;none\">x</span>y").0, "y");
        assert_eq!(text("<font color=\"&#35;fff\">x</font>y").0, "y");
        let (t, urls) = text("<a href=\"http://h.example/?a=1&amp;b=>2\">t</a>");
        assert_eq!(t, " http://h.example/?a=1&b=>2 t");
        assert_eq!(urls, vec!["http://h.example/?a=1&b=>2"]);
        let (t, urls) = text("<a href=\"http://one.example/\" href=\"http://two.example/\">t</a>");
        assert_eq!((t.as_str(), urls.len()), (" http://two.example/ t", 1));
        let (_, urls) = text("<a href=\"http://one.example/\" href=\"\">t</a>");
        assert_eq!(urls, vec!["http://one.example/"]);
        assert_eq!(
            text("<p title=\"a>b\">c</p><p title='d>e'>f</p>").0,
            "c\n\nf\n\n"
        );
        let long = format!("<a href=\"http://h.example/{}\">t</a>", "a".repeat(5000));
        let (t, urls) = text(&long);
        assert_eq!((t.len(), urls.first().map(String::len)), (2051, Some(2048)));
        let hidden_after = |n: usize| {
            text(&format!(
                "<span{} style=\"display:none\">x</span>y",
                " a=1".repeat(n)
            ))
            .0
        };
        assert_eq!(
            (hidden_after(63).as_str(), hidden_after(64).as_str()),
            ("y", "xy")
        );
    }

    #[test]
    fn entities_decode() {
        assert_eq!(
            text("caf&eacute; &#86;&#x49;agra &amp; &bogus;").0,
            "café VIagra & &bogus;"
        );
    }

    #[test]
    fn scripts_styles_and_head_are_skipped() {
        let (t, _) =
            text("<head><title>T</title></head><style>p{}</style><script>x<y</script>body");
        assert_eq!(t.trim(), "body");
    }

    #[test]
    fn unterminated_constructs_do_not_panic() {
        for s in [
            "<",
            "<a href=\"",
            "<!--",
            "<!",
            "<p",
            "&",
            "&#xFFFFFFFF;",
            "<script>",
            "</",
        ] {
            let _ = text(s);
        }
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let html = "<div>".repeat(100_000) + "x" + &"</div>".repeat(100_000);
        assert!(text(&html).0.contains('x'));
    }

    #[test]
    fn output_is_bounded() {
        let mut out = String::new();
        to_text(&"word ".repeat(10_000), &mut out, &mut Vec::new(), 100);
        assert!(out.len() <= 100);
    }
}
