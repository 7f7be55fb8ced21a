//! HTML character references (`&amp;`, `&#82;`, `&eacute`) in text that is
//! not parsed as HTML: the markup remnants of plain-text parts
//! (normalization). In HTML parts the tokenizer decodes them itself.

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

pub(super) fn push_bounded(out: &mut String, s: &str, limit: usize) {
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

pub(super) fn decode_entity(name: &str) -> Option<char> {
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
pub(super) fn latin1_letter(name: &str) -> Option<char> {
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
