//! Selectors as a browser reads them, for a document that streams past
//! (there is no tree to walk): each compound is matched against one
//! element, with what it needs of the element's ancestors and earlier
//! siblings carried as bits (`super::Sheet::open`).
//!
//! Written here rather than taken from a crate: simplecss (which parses
//! the declarations) reads CSS 2.1 selectors only (no `~`, `:not()`,
//! `:nth-child()`, escapes), and the `selectors` crate matches against a
//! tree it can walk in every direction, which a streaming reader does not
//! have. The grammar is small (Selectors Level 4 without namespaces) and
//! every input is bounded by the rule's length (`super::MAX_RULE_BYTES`).
//!
//! Three outcomes: a selector this module matches; one a browser reads but
//! this module does not evaluate ([`Parsed::Unsupported`]: `:has()`, a
//! form's state; the rule is left out for that selector, so text it would
//! hide counts); and one a browser
//! rejects ([`Parsed::Invalid`]: the whole rule is dropped, as a browser
//! drops it, so a sender cannot hide from this reader what a person sees).

use super::{ElemInfo, Pseudo};

/// Most compounds of one selector evaluated (a longer one is not: cut
/// short, it would reach elements a browser's does not).
pub const MAX_COMPOUNDS: usize = 32;
/// Most selectors of one `:is()` list read (the rest are left out: it
/// reaches fewer elements, never more); a longer `:not()` or `:has()`
/// list is not evaluated.
const MAX_LIST: usize = 8;
/// Deepest nesting of `:not()` and `:is()`.
const MAX_NESTING: usize = 3;
/// Most conditions of one compound, those nested in `:not()` and `:is()`
/// included: matching an element against a compound costs at most this
/// many tests, however the sheet is written. A heavier compound is not
/// evaluated (its rule is left out).
pub const MAX_WEIGHT: usize = 16;

/// The number of a class before the sheet numbers it.
pub const NO_CLASS: u32 = u32::MAX;
/// A compound of `:has()`: how it is reached from the element, it, and
/// its number.
pub type Relative = (Combinator, Compound, u32);

/// The number of a `:has()` compound before the sheet numbers it.
pub const NO_HAS: u32 = u32::MAX;

/// How a compound is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combinator {
    /// ` `: an ancestor.
    Descendant,
    /// `>`: the parent.
    Child,
    /// `+`: the element just before, under the same parent.
    Next,
    /// `~`: any element before, under the same parent.
    Later,
}

/// An attribute selector's test of the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrOp {
    /// `[a]`
    Exists,
    /// `[a=v]`
    Equals,
    /// `[a~=v]`: one of its words.
    Word,
    /// `[a|=v]`: `v` or `v-...`.
    Dash,
    /// `[a^=v]`
    Prefix,
    /// `[a$=v]`
    Suffix,
    /// `[a*=v]`
    Substring,
}

/// One condition of a compound on the element.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `.x`, and its number among the classes the sheet names
    /// (`super::Sheet`; [`NO_CLASS`] until it is numbered).
    Class(String, u32),
    /// `#x`
    Id(String),
    /// `[name op value]`, compared without case.
    Attr {
        name: String,
        op: AttrOp,
        value: String,
    },
    /// `:nth-child(an+b)` (`:first-child` is `0n+1`); among the elements
    /// of its own name when `of_type`.
    Nth { a: i32, b: i32, of_type: bool },
    /// `:nth-last-child(an+b)` (`:last-child` is `0n+1`), counted from the
    /// last; of its type when `of_type`. Known from a first reading of the
    /// page (`super::Ahead`).
    NthLast { a: i32, b: i32, of_type: bool },
    /// `:only-child`, `:only-of-type`.
    Only { of_type: bool },
    /// `:empty`: no element and no text inside.
    Empty,
    /// `:has(...)`: a descendant (` `), a child (`>`), the next element
    /// (`+`) or a later one (`~`) matches the compound; each with its
    /// number among the sheet's (`super::Sheet`; [`NO_HAS`] until it is
    /// numbered). Known from a first reading of the page.
    Has(Vec<Relative>),
    /// `:root`: the `html` element at the top.
    Root,
    /// `:link`, `:any-link`: `a` or `area` with an `href`.
    Link,
    /// A state no reader is in when the message opens (`:hover`,
    /// `:focus`, `:visited`, ...): never met.
    Never,
    /// `:not(...)`: none of them.
    Not(Vec<Compound>),
    /// `:is(...)`, `:where(...)`: one of them.
    Is(Vec<Compound>),
}

/// A compound: its element name (none for `*`) and conditions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compound {
    pub name: Option<String>,
    pub conds: Vec<Cond>,
}

/// A selector read: its compounds, outermost first, each with the
/// combinator that joins it to the one before (the first's is unused).
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub parts: Vec<(Combinator, Compound)>,
    pub pseudo: Option<Pseudo>,
    /// Ids; classes, attributes and pseudo-classes; names.
    pub specificity: [u8; 3],
}

/// What one selector of a list is to this module.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Read(Selector),
    /// Valid CSS this module does not evaluate.
    Unsupported,
    /// Not a selector a browser reads.
    Invalid,
}

/// The selectors of `list` (lower case, `a, b > c`), each read, with its
/// text (blanks collapsed).
pub fn parse_list(list: &str) -> Vec<(String, Parsed)> {
    split_top(list, ',')
        .map(|t| (t.split_whitespace().collect::<Vec<_>>().join(" "), parse(t)))
        .collect()
}

/// `s` cut at each `sep` outside brackets, parentheses and quotes.
fn split_top(s: &str, sep: char) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0usize;
    let mut pieces = Vec::new();
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[') => depth += 1,
            (None, ')' | ']') => depth = depth.saturating_sub(1),
            (None, c) if c == sep && depth == 0 => {
                pieces.push(s.get(start..i).unwrap_or(""));
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    pieces.push(s.get(start..).unwrap_or(""));
    pieces.into_iter()
}

/// Reads one selector.
pub fn parse(text: &str) -> Parsed {
    let chars: Vec<char> = text.trim().chars().collect();
    let mut p = Parser { s: &chars, at: 0 };
    p.selector(0)
}

/// A cursor over a selector's characters.
struct Parser<'a> {
    s: &'a [char],
    at: usize,
}

/// A step of the parser that fails: with what the selector is then.
type Step<T> = Result<T, Parsed>;

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.at).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.s.get(self.at + n).copied()
    }

    fn blanks(&mut self) -> bool {
        let from = self.at;
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
        self.at > from
    }

    /// A whole selector: compounds joined by combinators, maybe a
    /// pseudo-element at the end. `nesting` is how deep inside `:not()`
    /// and `:is()` it is (there, only one compound is read).
    fn selector(&mut self, nesting: usize) -> Parsed {
        match self.selector_parts(nesting) {
            Ok(sel) => Parsed::Read(sel),
            Err(p) => p,
        }
    }

    fn selector_parts(&mut self, nesting: usize) -> Step<Selector> {
        let mut parts: Vec<(Combinator, Compound)> = Vec::new();
        let mut spec = [0u8; 3];
        let mut comb = Combinator::Descendant;
        let pseudo;
        loop {
            let (compound, pe) = self.compound(nesting, &mut spec)?;
            parts.push((comb, compound));
            let blank = self.blanks();
            if pe.is_some() || self.peek().is_none() {
                pseudo = pe;
                if self.peek().is_some() {
                    // A pseudo-element ends the selector.
                    return Err(Parsed::Invalid);
                }
                break;
            }
            comb = match self.peek() {
                Some('>') => Combinator::Child,
                Some('+') => Combinator::Next,
                Some('~') => Combinator::Later,
                Some(_) if blank => Combinator::Descendant,
                _ => return Err(Parsed::Invalid),
            };
            if comb != Combinator::Descendant {
                self.at += 1;
                self.blanks();
            }
            if self.peek().is_none() {
                return Err(Parsed::Invalid);
            }
        }
        if pseudo.is_some() {
            spec[2] = spec[2].saturating_add(1);
        }
        if parts.len() > MAX_COMPOUNDS {
            return Err(Parsed::Unsupported);
        }
        Ok(Selector {
            parts,
            pseudo,
            specificity: spec,
        })
    }

    /// One compound, and the pseudo-element that ends it, if any.
    fn compound(&mut self, nesting: usize, spec: &mut [u8; 3]) -> Step<(Compound, Option<Pseudo>)> {
        let mut c = Compound::default();
        let mut any = false;
        if self.peek() == Some('*') {
            self.at += 1;
            any = true;
        } else if self.ident_starts() {
            c.name = Some(self.ident()?);
            spec[2] = spec[2].saturating_add(1);
            any = true;
        }
        if self.peek() == Some('|') {
            // Namespaces: valid, not read here.
            return Err(Parsed::Unsupported);
        }
        loop {
            let cond = match self.peek() {
                Some('.') => {
                    self.at += 1;
                    spec[1] = spec[1].saturating_add(1);
                    Cond::Class(self.ident()?, NO_CLASS)
                }
                Some('#') => {
                    self.at += 1;
                    spec[0] = spec[0].saturating_add(1);
                    Cond::Id(self.name()?)
                }
                Some('[') => {
                    self.at += 1;
                    spec[1] = spec[1].saturating_add(1);
                    self.attribute()?
                }
                Some(':') if self.peek_at(1) == Some(':') => {
                    self.at += 2;
                    let pseudo = self.pseudo_element()?;
                    if c.weight() > MAX_WEIGHT {
                        return Err(Parsed::Unsupported);
                    }
                    return Ok((c, Some(pseudo)));
                }
                Some(':') => {
                    self.at += 1;
                    match self.pseudo_class(nesting, spec)? {
                        PseudoRead::Cond(cond) => cond,
                        PseudoRead::Element(_) if c.weight() > MAX_WEIGHT => {
                            return Err(Parsed::Unsupported)
                        }
                        PseudoRead::Element(p) => return Ok((c, Some(p))),
                    }
                }
                _ => break,
            };
            any = true;
            // Bounded by MAX_WEIGHT below (a compound is at most a rule's
            // length, MAX_RULE_BYTES, in any case).
            c.conds.push(cond);
            if c.conds.len() > MAX_WEIGHT {
                return Err(Parsed::Unsupported);
            }
        }
        match any {
            true if c.weight() > MAX_WEIGHT => Err(Parsed::Unsupported),
            true => Ok((c, None)),
            false => Err(Parsed::Invalid),
        }
    }

    fn pseudo_element(&mut self) -> Step<Pseudo> {
        let name = self.ident()?;
        if self.peek() == Some('(') {
            // `::part()`, `::slotted()`, `::highlight()`.
            self.at += 1;
            self.arguments()?;
            return Err(Parsed::Unsupported);
        }
        match name.as_str() {
            "before" => Ok(Pseudo::Before),
            "after" => Ok(Pseudo::After),
            n if OTHER_ELEMENTS.contains(&n)
                || n.starts_with("-webkit-")
                || n.starts_with("-moz-") =>
            {
                Err(Parsed::Unsupported)
            }
            // A browser drops the rule.
            _ => Err(Parsed::Invalid),
        }
    }

    fn pseudo_class(&mut self, nesting: usize, spec: &mut [u8; 3]) -> Step<PseudoRead> {
        let name = self.ident()?;
        if self.peek() == Some('(') {
            self.at += 1;
            let args = self.arguments()?;
            return self.functional(&name, &args, nesting, spec);
        }
        let cond = match name.as_str() {
            // CSS 2's one-colon pseudo-elements.
            "before" => return Ok(PseudoRead::Element(Pseudo::Before)),
            "after" => return Ok(PseudoRead::Element(Pseudo::After)),
            "first-line" | "first-letter" => return Err(Parsed::Unsupported),
            "first-child" => Cond::Nth {
                a: 0,
                b: 1,
                of_type: false,
            },
            "first-of-type" => Cond::Nth {
                a: 0,
                b: 1,
                of_type: true,
            },
            "last-child" => Cond::NthLast {
                a: 0,
                b: 1,
                of_type: false,
            },
            "last-of-type" => Cond::NthLast {
                a: 0,
                b: 1,
                of_type: true,
            },
            "only-child" => Cond::Only { of_type: false },
            "only-of-type" => Cond::Only { of_type: true },
            "empty" => Cond::Empty,
            "root" => Cond::Root,
            "link" | "any-link" => Cond::Link,
            "hover" | "focus" | "focus-within" | "focus-visible" | "active" | "visited"
            | "target" | "target-within" => Cond::Never,
            n if LOOKS_AHEAD_OR_STATE.contains(&n) => return Err(Parsed::Unsupported),
            n if n.starts_with("-webkit-") || n.starts_with("-moz-") || n.starts_with("-ms-") => {
                // A vendor's own: valid in its browser, never evaluated here.
                return Err(Parsed::Unsupported);
            }
            _ => return Err(Parsed::Invalid),
        };
        spec[1] = spec[1].saturating_add(1);
        Ok(PseudoRead::Cond(cond))
    }

    /// `:name(args)`.
    fn functional(
        &mut self,
        name: &str,
        args: &str,
        nesting: usize,
        spec: &mut [u8; 3],
    ) -> Step<PseudoRead> {
        let cond = match name {
            "nth-child" | "nth-of-type" => {
                let (a, b) = nth(args)?;
                spec[1] = spec[1].saturating_add(1);
                Cond::Nth {
                    a,
                    b,
                    of_type: name == "nth-of-type",
                }
            }
            "nth-last-child" | "nth-last-of-type" => {
                let (a, b) = nth(args)?;
                spec[1] = spec[1].saturating_add(1);
                Cond::NthLast {
                    a,
                    b,
                    of_type: name == "nth-last-of-type",
                }
            }
            "not" | "is" | "where" | "matches" | "-webkit-any" | "-moz-any" => {
                if nesting >= MAX_NESTING {
                    return Err(Parsed::Unsupported);
                }
                let (list, inner) = inner_list(args, nesting + 1, name == "not")?;
                if name != "where" {
                    for (s, i) in spec.iter_mut().zip(inner) {
                        *s = s.saturating_add(i);
                    }
                }
                match name {
                    "not" => Cond::Not(list),
                    _ => Cond::Is(list),
                }
            }
            "has" => {
                if nesting >= MAX_NESTING {
                    return Err(Parsed::Unsupported);
                }
                let (list, inner) = relative_list(args, nesting + 1)?;
                for (s, i) in spec.iter_mut().zip(inner) {
                    *s = s.saturating_add(i);
                }
                Cond::Has(list)
            }
            "lang" | "dir" | "host" | "host-context" | "state" => return Err(Parsed::Unsupported),
            n if n.starts_with("-webkit-") || n.starts_with("-moz-") => {
                return Err(Parsed::Unsupported)
            }
            _ => return Err(Parsed::Invalid),
        };
        Ok(PseudoRead::Cond(cond))
    }

    /// The text up to the `)` that closes the one just read.
    fn arguments(&mut self) -> Step<String> {
        let mut depth = 1usize;
        let mut out = String::new();
        let mut quote = None;
        while let Some(c) = self.peek() {
            self.at += 1;
            match (quote, c) {
                (_, '\\') => {
                    out.push(c);
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.at += 1;
                    }
                    continue;
                }
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(out);
                    }
                }
                _ => {}
            }
            out.push(c);
        }
        Err(Parsed::Invalid)
    }

    fn attribute(&mut self) -> Step<Cond> {
        self.blanks();
        let name = self.ident()?;
        if self.peek() == Some('|') && self.peek_at(1) != Some('=') {
            return Err(Parsed::Unsupported);
        }
        self.blanks();
        let op = match (self.peek(), self.peek_at(1)) {
            (Some(']'), _) => {
                self.at += 1;
                return Ok(Cond::Attr {
                    name,
                    op: AttrOp::Exists,
                    value: String::new(),
                });
            }
            (Some('='), _) => AttrOp::Equals,
            (Some('~'), Some('=')) => AttrOp::Word,
            (Some('|'), Some('=')) => AttrOp::Dash,
            (Some('^'), Some('=')) => AttrOp::Prefix,
            (Some('$'), Some('=')) => AttrOp::Suffix,
            (Some('*'), Some('=')) => AttrOp::Substring,
            _ => return Err(Parsed::Invalid),
        };
        self.at += if op == AttrOp::Equals { 1 } else { 2 };
        self.blanks();
        let value = match self.peek() {
            Some(q @ ('"' | '\'')) => {
                self.at += 1;
                self.string(q)?
            }
            _ => self.ident()?,
        };
        self.blanks();
        // The case flags: every value is compared without case here.
        if matches!(self.peek(), Some('i' | 's')) {
            self.at += 1;
            self.blanks();
        }
        if self.peek() != Some(']') {
            return Err(Parsed::Invalid);
        }
        self.at += 1;
        Ok(Cond::Attr { name, op, value })
    }

    /// A quoted string's value, after its opening quote `q`.
    fn string(&mut self, q: char) -> Step<String> {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                c if c == q => return Ok(out.to_lowercase()),
                '\\' => match self.peek() {
                    // An escaped line break continues the string.
                    Some('\n') => self.at += 1,
                    Some(_) => out.push(self.escape()),
                    None => {}
                },
                '\n' => return Err(Parsed::Invalid),
                c => out.push(c),
            }
        }
        Err(Parsed::Invalid)
    }

    fn ident_starts(&self) -> bool {
        let first = |c: Option<char>| {
            c.is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || !c.is_ascii())
                || c == Some('\\')
        };
        match self.peek() {
            Some('-') => first(self.peek_at(1)) || self.peek_at(1) == Some('-'),
            c => first(c),
        }
    }

    /// An identifier (escapes decoded, lower case).
    fn ident(&mut self) -> Step<String> {
        if !self.ident_starts() {
            return Err(Parsed::Invalid);
        }
        self.name()
    }

    /// The characters of a name; one that starts with a digit is not a
    /// selector (CSS wants it escaped: `#\31 23`), as in a browser.
    fn name(&mut self) -> Step<String> {
        if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(Parsed::Invalid);
        }
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == '\\' {
                self.at += 1;
                if self.peek().is_none_or(|n| n == '\n') {
                    return Err(Parsed::Invalid);
                }
                out.push(self.escape());
            } else if c.is_ascii_alphanumeric() || c == '-' || c == '_' || !c.is_ascii() {
                self.at += 1;
                out.push(c);
            } else {
                break;
            }
        }
        if out.is_empty() {
            return Err(Parsed::Invalid);
        }
        Ok(out.to_lowercase())
    }

    /// The character of an escape, after its `\`: up to six hex digits
    /// and one blank after them, or the next character as it is.
    fn escape(&mut self) -> char {
        let mut code = 0u32;
        let mut digits = 0;
        while digits < 6 {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    code = code * 16 + d;
                    digits += 1;
                    self.at += 1;
                }
                None => break,
            }
        }
        if digits == 0 {
            let c = self.peek().unwrap_or('\u{FFFD}');
            self.at += 1;
            return c;
        }
        if self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
        match code {
            0 => '\u{FFFD}',
            c => char::from_u32(c).unwrap_or('\u{FFFD}'),
        }
    }
}

/// Pseudo-classes a browser reads and this module does not: they read a
/// state of a form or of the client.
const LOOKS_AHEAD_OR_STATE: &[&str] = &[
    "checked",
    "disabled",
    "enabled",
    "required",
    "optional",
    "valid",
    "invalid",
    "user-valid",
    "user-invalid",
    "in-range",
    "out-of-range",
    "read-only",
    "read-write",
    "placeholder-shown",
    "default",
    "indeterminate",
    "autofill",
    "scope",
    "defined",
    "fullscreen",
    "modal",
    "popover-open",
    "local-link",
    "playing",
    "paused",
    "current",
    "past",
    "future",
    "blank",
    "host",
];

/// Pseudo-elements a browser reads besides `::before` and `::after`.
const OTHER_ELEMENTS: &[&str] = &[
    "first-line",
    "first-letter",
    "marker",
    "placeholder",
    "selection",
    "backdrop",
    "file-selector-button",
    "cue",
    "grammar-error",
    "spelling-error",
    "target-text",
];

/// A pseudo-class read: a condition, or a CSS 2 pseudo-element.
enum PseudoRead {
    Cond(Cond),
    Element(Pseudo),
}

/// The compounds of a `:not()` or `:is()` list and the specificity of the
/// most specific. A selector of more than one compound inside is not
/// evaluated here. `strict` (`:not()`): any selector not read makes the
/// whole one unread; `:is()` forgives: the others are read (it then
/// reaches fewer elements, never more).
fn inner_list(args: &str, nesting: usize, strict: bool) -> Step<(Vec<Compound>, [u8; 3])> {
    let mut list = Vec::new();
    let mut most = [0u8; 3];
    for item in split_top(args, ',') {
        let chars: Vec<char> = item.trim().chars().collect();
        let mut p = Parser { s: &chars, at: 0 };
        match p.selector(nesting) {
            Parsed::Read(mut sel) if sel.parts.len() == 1 && sel.pseudo.is_none() => {
                most = most.max(sel.specificity);
                if list.len() >= MAX_LIST && strict {
                    return Err(Parsed::Unsupported);
                }
                if list.len() < MAX_LIST {
                    if let Some((_, c)) = sel.parts.pop() {
                        list.push(c);
                    }
                }
            }
            Parsed::Invalid if strict => return Err(Parsed::Invalid),
            _ if strict => return Err(Parsed::Unsupported),
            _ => {}
        }
    }
    if list.is_empty() {
        return Err(Parsed::Unsupported);
    }
    Ok((list, most))
}

/// The relative compounds of a `:has()` list (`.x`, `> .x`, `+ .x`,
/// `~ .x`) and the specificity of the most specific. One that is more
/// than a compound, or looks ahead itself, is not evaluated here; one a
/// browser rejects makes the whole selector rejected.
fn relative_list(args: &str, nesting: usize) -> Step<(Vec<Relative>, [u8; 3])> {
    let mut list = Vec::new();
    let mut most = [0u8; 3];
    for item in split_top(args, ',') {
        let item = item.trim();
        let (comb, rest) = match item.chars().next() {
            Some('>') => (Combinator::Child, item.get(1..).unwrap_or("")),
            Some('+') => (Combinator::Next, item.get(1..).unwrap_or("")),
            Some('~') => (Combinator::Later, item.get(1..).unwrap_or("")),
            _ => (Combinator::Descendant, item),
        };
        let chars: Vec<char> = rest.trim().chars().collect();
        let mut p = Parser { s: &chars, at: 0 };
        match p.selector(nesting) {
            Parsed::Read(mut sel) if sel.parts.len() == 1 && sel.pseudo.is_none() => {
                most = most.max(sel.specificity);
                let Some((_, c)) = sel.parts.pop() else {
                    return Err(Parsed::Invalid);
                };
                if c.looks_ahead() || list.len() >= MAX_LIST {
                    return Err(Parsed::Unsupported);
                }
                list.push((comb, c, NO_HAS));
            }
            Parsed::Invalid => return Err(Parsed::Invalid),
            _ => return Err(Parsed::Unsupported),
        }
    }
    Ok((list, most))
}

/// `an+b` of `:nth-child()`: `odd`, `even`, `3`, `-n+3`, `2n + 1`.
fn nth(args: &str) -> Step<(i32, i32)> {
    let tokens: Vec<&str> = args.split_whitespace().collect();
    if tokens.contains(&"of") {
        // `:nth-child(2n of .x)`.
        return Err(Parsed::Unsupported);
    }
    // Blanks only around the sign between `an` and `b` (`2n + 1`): `2 n`
    // and `1 2` are no selector.
    let s = match tokens.as_slice() {
        [one] => (*one).to_owned(),
        [an, sign, b]
            if an.ends_with('n')
                && matches!(*sign, "+" | "-")
                && b.bytes().all(|c| c.is_ascii_digit()) =>
        {
            format!("{an}{sign}{b}")
        }
        [an, b] if an.ends_with('n') && b.starts_with(['+', '-']) => format!("{an}{b}"),
        _ => return Err(Parsed::Invalid),
    };
    let int = |t: &str| -> Step<i32> {
        let t = t.strip_prefix('+').unwrap_or(t);
        let digits = t.strip_prefix('-').unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Parsed::Invalid);
        }
        // Past a few million, no element is reached: clamped.
        Ok(t.parse::<i64>()
            .unwrap_or(if t.starts_with('-') {
                i64::MIN
            } else {
                i64::MAX
            })
            .clamp(-1 << 24, 1 << 24) as i32)
    };
    match s.as_str() {
        "odd" => return Ok((2, 1)),
        "even" => return Ok((2, 0)),
        _ => {}
    }
    let Some((a, b)) = s.split_once('n') else {
        return Ok((0, int(&s)?));
    };
    let a = match a {
        "" | "+" => 1,
        "-" => -1,
        a => int(a)?,
    };
    let b = match b {
        "" => 0,
        b if b.starts_with(['+', '-']) => int(b)?,
        _ => return Err(Parsed::Invalid),
    };
    Ok((a, b))
}

/// Whether the element at `index` (1-based; 0 unknown) is an `an+b`.
fn nth_matches(a: i32, b: i32, index: u32) -> bool {
    if index == 0 {
        return false;
    }
    let (a, b, n) = (i64::from(a), i64::from(b), i64::from(index));
    match a {
        0 => n == b,
        a => (n - b) % a == 0 && (n - b) / a >= 0,
    }
}

impl AttrOp {
    fn matches(self, have: &str, want: &str) -> bool {
        match self {
            AttrOp::Exists => true,
            AttrOp::Equals => have == want,
            AttrOp::Word => {
                !want.is_empty()
                    && !want.contains(char::is_whitespace)
                    && have.split_ascii_whitespace().any(|w| w == want)
            }
            AttrOp::Dash => {
                have == want
                    || have
                        .strip_prefix(want)
                        .is_some_and(|rest| rest.starts_with('-'))
            }
            AttrOp::Prefix => !want.is_empty() && have.starts_with(want),
            AttrOp::Suffix => !want.is_empty() && have.ends_with(want),
            AttrOp::Substring => !want.is_empty() && have.contains(want),
        }
    }
}

impl Cond {
    fn matches(&self, el: &ElemInfo) -> bool {
        match self {
            Cond::Class(_, n) => el.classes.contains(n),
            Cond::Id(v) => el.id == *v,
            Cond::Attr { name, op, value } => el.attr(name).is_some_and(|h| op.matches(h, value)),
            Cond::Nth { a, b, of_type } => {
                nth_matches(*a, *b, if *of_type { el.type_index } else { el.index })
            }
            Cond::NthLast { a, b, of_type } => {
                let from_end = if *of_type {
                    el.from_end_of_type
                } else {
                    el.from_end
                };
                nth_matches(*a, *b, from_end)
            }
            Cond::Only { of_type: false } => el.index == 1 && el.from_end == 1,
            Cond::Only { of_type: true } => el.type_index == 1 && el.from_end_of_type == 1,
            Cond::Empty => el.empty,
            Cond::Has(list) => list.iter().any(|(comb, _, n)| {
                let bit = 1u64.checked_shl(*n).unwrap_or(0);
                let set = match comb {
                    Combinator::Descendant => el.has[0],
                    Combinator::Child => el.has[1],
                    Combinator::Next => el.has[2],
                    Combinator::Later => el.has[3],
                };
                set & bit != 0
            }),
            Cond::Root => el.root,
            Cond::Link => matches!(el.name.as_str(), "a" | "area") && el.attr("href").is_some(),
            Cond::Never => false,
            Cond::Not(list) => !list.iter().any(|c| c.matches(el)),
            Cond::Is(list) => list.iter().any(|c| c.matches(el)),
        }
    }

    /// Every condition nested in this one (itself included), to read.
    fn each_ref(&self, f: &mut dyn FnMut(&Cond)) {
        f(self);
        if let Cond::Not(list) | Cond::Is(list) = self {
            for c in list.iter().flat_map(|c| c.conds.iter()) {
                c.each_ref(f);
            }
        }
        if let Cond::Has(list) = self {
            for c in list.iter().flat_map(|(_, c, _)| c.conds.iter()) {
                c.each_ref(f);
            }
        }
    }

    /// Every condition nested in this one (itself included).
    fn each(&mut self, f: &mut dyn FnMut(&mut Cond)) {
        f(self);
        if let Cond::Not(list) | Cond::Is(list) = self {
            for c in list.iter_mut().flat_map(|c| c.conds.iter_mut()) {
                c.each(f);
            }
        }
        if let Cond::Has(list) = self {
            for c in list.iter_mut().flat_map(|(_, c, _)| c.conds.iter_mut()) {
                c.each(f);
            }
        }
    }
}

impl Compound {
    pub fn matches(&self, el: &ElemInfo) -> bool {
        self.name.as_ref().is_none_or(|n| *n == el.name) && self.conds.iter().all(|c| c.matches(el))
    }

    /// The lookup key of the compound: `i:ID`, `c:CLASS` (the first),
    /// `t:NAME` or `*`: a condition every element it matches meets.
    pub fn key(&self) -> String {
        let id = self.conds.iter().find_map(|c| match c {
            Cond::Id(v) => Some(format!("i:{v}")),
            _ => None,
        });
        let class = || {
            self.conds.iter().find_map(|c| match c {
                Cond::Class(v, _) => Some(format!("c:{v}")),
                _ => None,
            })
        };
        id.or_else(class)
            .or_else(|| self.name.as_ref().map(|n| format!("t:{n}")))
            .unwrap_or_else(|| "*".to_owned())
    }

    /// How many conditions it tests, nested ones included.
    fn weight(&self) -> usize {
        self.conds
            .iter()
            .map(|c| match c {
                Cond::Not(list) | Cond::Is(list) => {
                    1 + list.iter().map(Compound::weight).sum::<usize>()
                }
                Cond::Has(list) => 1 + list.iter().map(|(_, c, _)| c.weight()).sum::<usize>(),
                _ => 1,
            })
            .sum()
    }

    /// It needs what comes after the element (`:last-child`, `:empty`).
    pub fn looks_ahead(&self) -> bool {
        let mut ahead = false;
        for c in &self.conds {
            c.each_ref(&mut |c| {
                ahead |= matches!(
                    c,
                    Cond::NthLast { .. } | Cond::Only { .. } | Cond::Empty | Cond::Has(_)
                );
            });
        }
        ahead
    }

    /// It reads a place that is not always known: among the elements of
    /// its name (past `super::MAX_TYPES` names), or from the end (past the
    /// first reading's bound).
    pub fn reads_places(&self) -> bool {
        let mut reads = false;
        for c in &self.conds {
            c.each_ref(&mut |c| {
                reads |= matches!(
                    c,
                    Cond::Nth { of_type: true, .. }
                        | Cond::NthLast { .. }
                        | Cond::Only { .. }
                        | Cond::Empty
                        | Cond::Has(_)
                );
            });
        }
        reads
    }

    /// Never met by an element here (a state no reader is in).
    pub fn never(&self) -> bool {
        self.conds.contains(&Cond::Never)
    }

    /// Every condition of the compound, nested ones included.
    pub fn each_cond(&mut self, f: &mut dyn FnMut(&mut Cond)) {
        for c in &mut self.conds {
            c.each(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Selector {
        match parse(s) {
            Parsed::Read(sel) => sel,
            other => panic!("{s}: {other:?}"),
        }
    }

    /// An element of `class`es, numbered as `number` numbers the
    /// compounds' classes.
    fn el(name: &str, class: &str, index: u32) -> ElemInfo {
        ElemInfo {
            name: name.into(),
            classes: class.split_whitespace().map(number).collect(),
            index,
            type_index: index,
            ..ElemInfo::default()
        }
    }

    fn number(class: &str) -> u32 {
        class.bytes().map(u32::from).sum()
    }

    #[test]
    fn selectors_are_read_as_a_browser_reads_them() {
        let s = read("div.a > p + span ~ em b");
        let combs: Vec<Combinator> = s.parts.iter().map(|p| p.0).collect();
        assert_eq!(
            combs,
            [
                Combinator::Descendant,
                Combinator::Child,
                Combinator::Next,
                Combinator::Later,
                Combinator::Descendant
            ]
        );
        assert_eq!(s.specificity, [0, 1, 5]);
        assert_eq!(read("#a .b:not(#c, .d)").specificity, [2, 1, 0]);
        assert_eq!(read(":where(#a) .b").specificity, [0, 1, 0]);
        assert_eq!(read("p::before").pseudo, Some(Pseudo::Before));
        assert_eq!(read("p:after").pseudo, Some(Pseudo::After));
        // Escapes: `.\68 ide` is `.hide`, `#\31 23` is `#123`.
        assert_eq!(
            read(".\\68 ide").parts[0].1.conds,
            [Cond::Class("hide".into(), NO_CLASS)]
        );
        assert_eq!(read("#\\31 23").parts[0].1.conds, [Cond::Id("123".into())]);
        assert_eq!(
            read(".a\\:b").parts[0].1.conds,
            [Cond::Class("a:b".into(), NO_CLASS)]
        );
        assert_eq!(
            read("[data-x ^= 'Ab' i]").parts[0].1.conds,
            [Cond::Attr {
                name: "data-x".into(),
                op: AttrOp::Prefix,
                value: "ab".into()
            }]
        );
        assert_eq!(read(&["div"; 32].join(" ")).parts.len(), MAX_COMPOUNDS);
        assert_eq!(parse(&["div"; 33].join(" ")), Parsed::Unsupported);
        assert_eq!(parse(&".a".repeat(17)), Parsed::Unsupported);
        let nine = (0..9)
            .map(|i| format!(".a{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(parse(&format!("p:not({nine})")), Parsed::Unsupported);
        assert_eq!(read("p:nth-child(2n + 1)").parts[0].1.conds.len(), 1);
        for bad in [
            "",
            "> p",
            "p >",
            "p ++ q",
            ".",
            "#",
            "p:nosuch",
            "p::before p",
            "[x",
            "[x=]",
            ":not(",
            "p:nth-child(x)",
            "p:nth-child(2n+)",
            "#1x",
            "a,",
            "p:not(:nosuch)",
            "p::bogus",
            "p:nth-child(2 n)",
            "p:nth-child(1 2)",
        ] {
            assert_eq!(parse(bad), Parsed::Invalid, "{bad:?}");
        }
        for unread in [
            "div:has(p .x)",
            "div:has(p:last-child)",
            "p:nth-child(2 of .x)",
            "svg|a",
            "p::first-line",
            ":not(div p)",
            "input::-webkit-input-placeholder",
        ] {
            assert_eq!(parse(unread), Parsed::Unsupported, "{unread:?}");
        }
        assert!(matches!(parse(":is(div p, .x)"), Parsed::Read(_)));
    }

    #[test]
    fn compounds_match_names_classes_attributes_and_places() {
        let c = |s: &str| {
            let mut c = read(s).parts.pop().unwrap().1;
            c.each_cond(&mut |cond| {
                if let Cond::Class(v, n) = cond {
                    *n = number(v);
                }
            });
            c
        };
        let mut e = el("td", "x y", 3);
        e.attrs = vec![
            ("lang".into(), "en-gb".into()),
            ("title".into(), "a b".into()),
        ];
        assert!(c("td.x.y").matches(&e) && !c("td.z").matches(&e));
        assert!(c("[lang|=en]").matches(&e) && c("[title~=b]").matches(&e));
        assert!(c("[title$=' b']").matches(&e) && !c("[title*='']").matches(&e));
        assert!(!c("[href]").matches(&e));
        assert!(c(":nth-child(odd)").matches(&e) && !c(":nth-child(even)").matches(&e));
        assert!(c(":nth-child(-n+3)").matches(&e) && !c(":nth-child(-n+2)").matches(&e));
        assert!(c(":nth-child(3)").matches(&e) && c(":nth-of-type(2n + 1)").matches(&e));
        assert!(!c(":first-child").matches(&e) && c(":not(:first-child)").matches(&e));
        assert!(c(":not(:hover)").matches(&e) && !c("td:hover").matches(&e));
        assert!(c(":is(p, .y)").matches(&e) && !c(":where(p, .z)").matches(&e));
        assert!(c("*").matches(&e) && !c(":root").matches(&e));
        assert!(!nth_matches(2, 1, 0));
        assert!(nth_matches(-2, 5, 1) && !nth_matches(-2, 5, 7));
        assert_eq!(nth("999999999999n+1").unwrap(), (1 << 24, 1));
    }

    /// Hostile selectors: deep nesting, long runs, every character.
    #[test]
    fn hostile_selectors_are_bounded() {
        let deep = format!("{}p{}", ":not(".repeat(500), ")".repeat(500));
        assert_eq!(parse(&deep), Parsed::Unsupported);
        let heavy = format!(":is({})", [".a.b.c"; 6].join(","));
        assert_eq!(parse(&heavy), Parsed::Unsupported);
        let wide = format!(":is({})", vec![".a"; 1000].join(","));
        let Parsed::Read(s) = parse(&wide) else {
            panic!("a wide :is() is read, its first items");
        };
        let Cond::Is(list) = &s.parts[0].1.conds[0] else {
            panic!()
        };
        assert!(list.len() <= MAX_LIST);
        let mut state = 7u64;
        let bits = [
            "p", ".", "#", ":", "(", ")", "[", "]", "=", "~", "+", ">", " ", "\\", "'", "n", "-",
            "2", "not", "is", ",", "*", "|", "é", "\u{0}",
        ];
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..12 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(bits[(state % bits.len() as u64) as usize]);
            }
            let _ = parse_list(&s);
        }
    }
}
