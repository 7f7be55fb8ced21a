//! Text from mail shown to people: control characters (C0, DEL, C1) and
//! the characters that reorder or hide text (bidirectional controls,
//! zero-width characters) written as `\u{...}`, so that a subject or an
//! address cannot move a terminal's cursor, change its title, or show
//! text in another order than it is stored.

/// `s` with every control, bidirectional or invisible formatting
/// character written as `\u{XXXX}` (and `\` as `\\`, so that what is
/// shown reads back one way).
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if hidden(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// JSON text `json` with every control, bidirectional or invisible
/// formatting character written as a JSON escape (`\u202E`): the same JSON
/// value, shown as it is stored. (serde_json leaves all but C0 controls as
/// they are; they can stand only inside strings, where the escape means
/// the same character.)
pub fn json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if hidden(c) && !c.is_ascii() {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04X}", u));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A character a terminal acts on, or that reorders or hides text.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'                  // ARABIC LETTER MARK
            | '\u{180E}'                // MONGOLIAN VOWEL SEPARATOR
            | '\u{200B}'..='\u{200F}'   // zero-width, LRM, RLM
            | '\u{2028}'..='\u{202E}'   // line/paragraph separators, embeddings, overrides
            | '\u{2060}'..='\u{2069}'   // word joiner, invisible operators, isolates
            | '\u{FEFF}'                // zero-width no-break space
            | '\u{FFF9}'..='\u{FFFB}'   // interlinear annotations
        )
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn json_keeps_its_value_and_shows_no_bidi() {
        let v = serde_json::json!({"subject": "abc\u{202E}gpj.exe \u{9b}[ \u{2066}x", "n": 1});
        let text = super::json(&v.to_string());
        assert!(
            text.contains("abc\\u202Egpj.exe \\u009B[ \\u2066x"),
            "{text}"
        );
        assert!(!text.contains(['\u{202E}', '\u{9b}', '\u{2066}']));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn controls_and_bidi_are_written_out() {
        assert_eq!(printable("plain é 日本"), "plain é 日本");
        assert_eq!(
            printable("\u{1b}]0;owned\u{7}x"),
            "\\u{001B}]0;owned\\u{0007}x"
        );
        assert_eq!(printable("\u{1b}[31mred"), "\\u{001B}[31mred");
        assert_eq!(printable("abc\u{202E}gpj.exe"), "abc\\u{202E}gpj.exe");
        assert_eq!(printable("a\u{2066}b\u{2069}"), "a\\u{2066}b\\u{2069}");
        assert_eq!(printable("a\u{9b}b\u{7f}"), "a\\u{009B}b\\u{007F}");
        assert_eq!(printable("back\\slash"), "back\\\\slash");
        assert!(!printable("\n\r\t").contains(['\n', '\r', '\t']));
    }
}
