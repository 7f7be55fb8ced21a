//! Where a key sits in the file: the line a validation error or a
//! warning points at, as a TOML parse error points at its own.
//!
//! Validation runs on the deserialized values, which have lost their
//! positions; the key path an error names (`window.max_distance`) is
//! looked up again in the text's spanned form.

use toml::de::{DeTable, DeValue};

/// The 1-based line of `key` (a dotted path) in `text`: of the key itself
/// when the file has it, else of the deepest table on its path that the
/// file has (`[window]` for a missing `window.max_distance`), else none.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut offset = None;
    for part in key.split('.') {
        let Some((k, v)) = table.get_key_value(part) else {
            break;
        };
        offset = Some(k.span().start);
        match v.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    offset.map(|o| line_at(text, o))
}

/// The 1-based line holding byte `offset` of `text`.
fn line_at(text: &str, offset: usize) -> usize {
    let head = text.get(..offset).unwrap_or(text);
    head.bytes().filter(|&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::line_of_key;

    const TEXT: &str =
        "# comment\n[window]\nwindow_secs = 60\n\nmax_distance = 40\n\n[store.redis]\nurls = []\n";

    #[test]
    fn a_key_is_found_on_its_line() {
        assert_eq!(line_of_key(TEXT, "window.max_distance"), Some(5));
        assert_eq!(line_of_key(TEXT, "window.window_secs"), Some(3));
        assert_eq!(line_of_key(TEXT, "store.redis.urls"), Some(8));
    }

    #[test]
    fn a_missing_key_points_at_its_table_and_a_missing_table_nowhere() {
        assert_eq!(line_of_key(TEXT, "window.max_entries"), Some(2));
        assert_eq!(line_of_key(TEXT, "thresholds.bulk_threshold"), None);
        assert_eq!(line_of_key("not toml [", "window.max_distance"), None);
    }

    #[test]
    fn dotted_and_inline_keys_are_found() {
        let text = "window.max_distance = 9\nthresholds = { bulk_threshold = 2.0 }\n";
        assert_eq!(line_of_key(text, "window.max_distance"), Some(1));
        assert_eq!(line_of_key(text, "thresholds.bulk_threshold"), Some(2));
    }
}
