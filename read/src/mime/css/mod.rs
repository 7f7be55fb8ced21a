//! The page's own style sheets (`<style>` elements), as far as they hide
//! text: a campaign that hides its hash-buster words with
//! `<style>.x{display:none}</style>` and `<span class="x">` is read as the
//! reader sees it, as with an inline `style="display:none"`.
//!
//! The sheets are parsed by `simplecss` (CSS 2.1 rules and selectors;
//! at-rules such as `@media` are skipped). Only rules that set a property
//! `html::style::apply_style` reads (display, visibility, sizes, colours,
//! positions, ...) are kept. An element gets the declarations of the rules
//! whose selector matches it, in the cascade's order: the sheet's normal
//! declarations by specificity, then its inline `style`, then the sheet's
//! `!important` ones.
//!
//! Selectors are read as a browser reads them (`selector`: any number
//! of compounds, every combinator, attributes, escapes, the pseudo-classes
//! a page shows alike to every reader when it opens) and matched while the
//! document streams past: what a compound needs of the element's
//! ancestors and earlier siblings is carried as bits (the selector's
//! leading parts matched by the parent, by any ancestor, by the element
//! just before and by any before it), so an element costs at most a few
//! dozen compound matches however deep or long the page is. Selectors
//! that look ahead of the element (`:last-child`, `:empty`) read what a
//! first reading of the page recorded of it ([`Ahead`]); `:has()` is left
//! out; a rule with a selector no browser reads is dropped whole, as a
//! browser drops it.
//!
//! Bounds, so a crafted sheet costs little: [`MAX_CSS_BYTES`] of sheet
//! text, [`MAX_RULES`] rules kept, at most [`MAX_PER_KEY`] rules for one
//! class, id or tag name, [`MAX_CLASSES`] classes of an element looked up,
//! [`MAX_CONTEXT_BITS`] leading compounds across the sheet,
//! [`selector::MAX_COMPOUNDS`] compounds a selector. A sheet that hides
//! text this module does not see (a selector it leaves out) leaves that
//! text counted, as before sheets were read; one that hides text a reader
//! sees is bounded like any hiding (`html::MIN_VISIBLE_WORDS`).

mod selector;

use selector::{Combinator, Compound, Cond, Selector, NO_CLASS, NO_HAS};

use std::collections::{HashMap, HashSet};

use simplecss::StyleSheet;

/// Most bytes of sheet text read per document.
pub const MAX_CSS_BYTES: usize = 64 * 1024;
/// Most rules kept per document.
pub const MAX_RULES: usize = 1024;
/// Most leading compounds (all but the last of a selector) kept across
/// the sheet: each has a bit in the sets of [`ElemInfo`].
pub const MAX_CONTEXT_BITS: usize = 128;
/// Longest rule read (its selectors and declarations).
pub const MAX_RULE_BYTES: usize = 2048;
/// Most rules kept for one key (class, id, tag name or universal) of
/// their last part, and of each of their leading parts.
pub const MAX_PER_KEY: usize = 32;
/// Most class names of one element looked up (of those the sheet names).
pub const MAX_CLASSES: usize = 16;
/// Most attributes of one element kept for attribute selectors (of those
/// the sheet names).
pub const MAX_SELECTED_ATTRS: usize = 16;
/// Most distinct compounds of `:has()` across the sheet (each a bit of
/// what the first reading records of an element).
const MAX_HAS: usize = 64;
/// Most element names of one parent counted for `:nth-of-type()` (an
/// element of another name has no place then: such a rule does not match).
const MAX_TYPES: usize = 32;
/// Longest declaration value kept (hiding values are short).
const MAX_DECL_VALUE: usize = 256;

/// Properties that can hide text or set its colour (`html::style::apply_style`).
const READ: &[&str] = &[
    "display",
    "visibility",
    "font-size",
    "opacity",
    "color",
    "-webkit-text-fill-color",
    "background",
    "background-color",
    "text-indent",
    "margin-left",
    "margin-top",
    "left",
    "top",
    "right",
    "bottom",
    "position",
    "clip",
    "clip-path",
    "transform",
    "filter",
    "overflow",
    "height",
    "max-height",
    "width",
    "max-width",
    "line-height",
    "direction",
    "unicode-bidi",
    "content",
    "order",
    "flex-direction",
    // The page's own fonts (`drawn`).
    "font-family",
    "font",
    // What sets flex and grid items apart (`html::style::apply_spacing`).
    "gap",
    "grid-gap",
    "column-gap",
    "grid-column-gap",
    "justify-content",
    "margin",
    "padding",
    "margin-right",
    "margin-inline",
    "margin-inline-start",
    "margin-inline-end",
    "padding-left",
    "padding-right",
    "padding-inline",
    "padding-inline-start",
    "padding-inline-end",
];

/// A pseudo-element whose generated content (`content`) is shown before
/// or after an element's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pseudo {
    Before,
    After,
}

/// The text of a `content` value: its strings, joined, with CSS escapes
/// (`\201C`, `\"`) read; `None` for `none`, `normal` or no string.
pub fn content_text(value: &str, attrs: &[(String, String)]) -> Option<String> {
    let mut out = String::new();
    let mut chars = value.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        // `attr(name)`, `attr(name type, "fallback")`: the element's
        // attribute (a name from `attrs`, the element's kept ones), else
        // the fallback.
        if c.eq_ignore_ascii_case(&'a') {
            let rest: String = chars.clone().take(4).collect();
            if rest.eq_ignore_ascii_case("ttr(") {
                chars.nth(3);
                let mut name = String::new();
                while let Some(d) = chars.next_if(|d| *d != ')' && *d != ',') {
                    name.push(d);
                }
                let name = name
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                if let Some((_, v)) = attrs.iter().find(|(n, _)| *n == name) {
                    out.push_str(v);
                    any = true;
                    // The fallback is not shown: skip to the end.
                    while chars.next_if(|d| *d != ')').is_some() {}
                }
                // Else the fallback, a string, is read on as one.
                if chars.peek() == Some(&',') {
                    chars.next();
                }
                continue;
            }
        }
        if c == ')' {
            continue;
        }
        if c != '"' && c != '\'' {
            continue;
        }
        any = true;
        while let Some(d) = chars.next() {
            match d {
                '\\' => {
                    let mut hex = String::new();
                    while hex.len() < 6 && chars.peek().is_some_and(char::is_ascii_hexdigit) {
                        hex.extend(chars.next());
                    }
                    if hex.is_empty() {
                        out.extend(chars.next().filter(|c| *c != '\n'));
                    } else {
                        if chars.peek() == Some(&' ') {
                            chars.next();
                        }
                        out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
                    }
                }
                d if d == c => break,
                d => out.push(d),
            }
        }
    }
    any.then_some(out)
}

/// What a selector sees of an element: its name, `class` and `id`, lower
/// case and cut, the attributes the sheet names and its place among its
/// siblings; and, once it is open, the leading compounds it and its
/// ancestors match, and what its children so far matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ElemInfo {
    pub name: String,
    pub class: String,
    pub id: String,
    /// The numbers of its classes the sheet names (at most
    /// [`MAX_CLASSES`]), set by [`Sheet::open`].
    pub classes: Vec<u32>,
    /// Attributes a selector of the sheet names (lower case), at most
    /// [`MAX_SELECTED_ATTRS`].
    pub attrs: Vec<(String, String)>,
    /// Its place among its parent's elements (1 the first), and among
    /// those of its name (0: not counted).
    pub index: u32,
    pub type_index: u32,
    /// Its place counted from the last of its parent's elements (1 the
    /// last), and from the last of those of its name (0: not known), and
    /// whether it holds nothing: known from a first reading of the page
    /// ([`Ahead`]) when the sheet looks ahead.
    pub from_end: u32,
    pub from_end_of_type: u32,
    pub empty: bool,
    /// Its number in the order elements open.
    pub number: u32,
    /// The first reading told its places from the end ([`Ahead::fill`]).
    pub ahead_known: bool,
    /// Every place a rule of the sheet reads is known (its place among
    /// those of its name, its places from the end): else a compound that
    /// reads one is not matched, even under `:not()`.
    pub known: bool,
    /// The `:has()` compounds (bit by number) that a descendant, a child,
    /// the next element and a later one match ([`Ahead`]).
    pub has: [u64; 4],
    /// The `html` element at the top.
    pub root: bool,
    /// Bit i: leading compound i matches this element.
    pub own: u128,
    /// Bit i: leading compound i matches this element or an ancestor.
    pub any: u128,
    /// Its children so far.
    pub kids: Kids,
}

impl ElemInfo {
    /// The value of attribute `name`, if the element has it (and it was
    /// kept).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the elements opened so far under one parent matched: how sibling
/// combinators and `:nth-child()` see them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kids {
    count: u32,
    /// Bits of the last one's `own`, and of every one's.
    last: u128,
    earlier: u128,
    /// How many of each name (with `:nth-of-type()` in the sheet).
    types: Vec<(String, u32)>,
}

/// What a first reading of a page tells of each element, by its place in
/// the order elements open, for the selectors that look ahead of it.
#[derive(Debug, Default)]
pub struct Ahead {
    /// Each element's parent (`u32::MAX` at the top), a hash of its name,
    /// and whether text was read inside it, as the first reading opens
    /// them.
    seen: Vec<(u32, u64, bool)>,
    /// The `:has()` compounds each element matches.
    matches: Vec<u64>,
    /// Per element: from the end among its parent's elements, among those
    /// of its name, and whether it holds nothing.
    facts: Vec<(u32, u32, bool)>,
    /// Per element: [`ElemInfo::has`].
    has: Vec<[u64; 4]>,
}

impl Ahead {
    /// Most elements recorded: those after are not known (a rule that
    /// looks ahead does not match them).
    pub const MAX_ELEMENTS: usize = 1 << 18;

    /// The first reading opens the next element (numbered by the count
    /// so far) under `parent`; `name_hash` is the hash of its name the
    /// HTML reader keeps (`StartTag::name`).
    pub fn opened(&mut self, parent: Option<u32>, name_hash: u64) {
        if self.seen.len() < Ahead::MAX_ELEMENTS {
            self.seen
                .push((parent.unwrap_or(u32::MAX), name_hash, false));
            self.matches.push(0);
        }
    }

    /// The `:has()` compounds element `number` matches.
    pub fn matched(&mut self, number: u32, m: u64) {
        if let Some(at) = usize::try_from(number)
            .ok()
            .and_then(|n| self.matches.get_mut(n))
        {
            *at = m;
        }
    }

    /// The first reading read text inside element `number`.
    pub fn text_in(&mut self, number: u32) {
        if let Some(e) = usize::try_from(number)
            .ok()
            .and_then(|n| self.seen.get_mut(n))
        {
            e.2 = true;
        }
    }

    /// Ends the first reading: each element's places from the end.
    pub fn finish(&mut self) {
        let mut kids: HashMap<u32, u32> = HashMap::new();
        let mut typed: HashMap<(u32, u64), u32> = HashMap::new();
        let mut places = Vec::with_capacity(self.seen.len());
        for (parent, name, _) in &self.seen {
            let k = kids.entry(*parent).or_default();
            *k += 1;
            let t = typed.entry((*parent, *name)).or_default();
            *t += 1;
            places.push((*k, *t));
        }
        self.facts = self
            .seen
            .iter()
            .zip(places)
            .enumerate()
            .map(|(n, ((parent, name, text), (k, t)))| {
                let all = kids.get(parent).copied().unwrap_or(0);
                let of_name = typed.get(&(*parent, *name)).copied().unwrap_or(0);
                let has_kids = u32::try_from(n).is_ok_and(|n| kids.contains_key(&n));
                (all - k + 1, of_name - t + 1, !text && !has_kids)
            })
            .collect();
        if self.matches.iter().any(|m| *m != 0) {
            self.has = self.relatives();
        }
    }

    /// For each element, the `:has()` compounds matched by a descendant,
    /// a child, the next element and a later one (elements are numbered
    /// in the order they open, so a parent's number is below its
    /// children's).
    fn relatives(&self) -> Vec<[u64; 4]> {
        let n = self.seen.len();
        let mut has = vec![[0u64; 4]; n];
        let parent_of = |e: usize| {
            self.seen
                .get(e)
                .and_then(|(p, _, _)| usize::try_from(*p).ok())
                .filter(|p| *p < n)
        };
        let m = |e: usize| self.matches.get(e).copied().unwrap_or(0);
        // The next element: the one opened after under the same parent.
        let mut last_kid: HashMap<u32, usize> = HashMap::new();
        for (e, (p, _, _)) in self.seen.iter().enumerate() {
            if let Some(before) = last_kid.insert(*p, e) {
                if let Some(h) = has.get_mut(before) {
                    h[2] = m(e);
                }
            }
        }
        // Descendants, children and later elements: from the last opened
        // back, so each is done before its parent and earlier siblings.
        let mut later: HashMap<u32, u64> = HashMap::new();
        for e in (0..n).rev() {
            let own = has.get(e).copied().unwrap_or_default();
            let Some((p, _, _)) = self.seen.get(e) else {
                continue;
            };
            let acc = later.entry(*p).or_default();
            if let Some(h) = has.get_mut(e) {
                h[3] = *acc;
            }
            *acc |= m(e);
            if let Some(h) = parent_of(e).and_then(|p| has.get_mut(p)) {
                h[0] |= m(e) | own[0];
                h[1] |= m(e);
            }
        }
        has
    }

    /// Sets what the first reading told of element `number` on `info`;
    /// nothing when it stopped at its bound (a parent open there would
    /// have too few children counted).
    pub fn fill(&self, number: u32, info: &mut ElemInfo) {
        if self.seen.len() >= Ahead::MAX_ELEMENTS {
            return;
        }
        if let Some(&(from_end, of_type, empty)) =
            usize::try_from(number).ok().and_then(|n| self.facts.get(n))
        {
            info.from_end = from_end;
            info.from_end_of_type = of_type;
            info.empty = empty;
            info.ahead_known = true;
        }
        if let Some(has) = usize::try_from(number).ok().and_then(|n| self.has.get(n)) {
            info.has = *has;
        }
    }
}

/// A declaration kept: the property (its place in [`READ`]), the value,
/// and whether it is `!important`.
#[derive(Debug, Clone, PartialEq)]
struct Decl {
    prop: usize,
    value: String,
    important: bool,
}

/// One kept rule: its selector's compounds, and its declarations.
struct Kept {
    /// The pseudo-element the rule styles, if any: its declarations
    /// (`content`) are the generated text, not the element's style.
    pseudo: Option<Pseudo>,
    /// Outermost first; each with the combinator that joins it to the one
    /// before and, but the last, its bit in `ElemInfo::own`.
    parts: Vec<Part>,
    /// Its declarations of properties in [`READ`], the last of each.
    declarations: Vec<Decl>,
}

struct Part {
    compound: Compound,
    comb: Combinator,
    bit: u8,
    /// It reads a place not always known ([`ElemInfo::known`]).
    places: bool,
}

impl Kept {
    fn last(&self) -> Option<&Compound> {
        self.parts.last().map(|p| &p.compound)
    }
}

/// The rules of a document's sheets that matter here.
pub struct Sheet {
    /// In the sheet's specificity order.
    rules: Vec<Kept>,
    /// Rules by the key of their last part.
    by_last: HashMap<String, Vec<usize>>,
    /// Leading parts (rule, part), by their keys.
    by_part: HashMap<String, Vec<(usize, usize)>>,
    /// Every class name a kept rule names, numbered: only these of an
    /// element's classes are looked up (so classes put first as decoys
    /// cannot push the one a rule names past [`MAX_CLASSES`]).
    classes: HashMap<String, u32>,
    /// Every attribute name an attribute selector names.
    attributes: HashSet<String>,
    /// Some rule counts elements by name (`:nth-of-type()`).
    of_type: bool,
    /// Some rule needs what comes after an element (`:last-child`,
    /// `:empty`): the page is read twice ([`Ahead`]).
    pub looks_ahead: bool,
    /// The compounds of `:has()` rules, by their number.
    has: Vec<Compound>,
    /// A kept rule is a pseudo-element's (generated content).
    /// Some rule generates content (`::before`, `::after`).
    pub generates: bool,
}

/// A rule as parsed, before the bounds: its selector (and specificity),
/// place in the sheet and declarations of properties read here.
struct Parsed {
    selector: Selector,
    order: usize,
    declarations: Vec<Decl>,
}

/// Every rule of `css` that sets a property read here, one per selector.
/// Each rule is parsed on its own: simplecss finds the line and column of
/// every error by counting from the start of its text, which over a whole
/// sheet of broken rules is quadratic.
fn parse_rules(css: &str, fonts: bool) -> Vec<Parsed> {
    let mut parsed: Vec<Parsed> = Vec::new();
    let mut same: HashMap<(Option<Pseudo>, String), usize> = HashMap::new();
    for (order, chunk) in rule_texts(css).enumerate() {
        let chunk = match fonts {
            true => font_shorthand_unslashed(&chunk),
            false => chunk,
        };
        parse_chunk(&chunk, order, fonts, &mut parsed, &mut same);
    }
    parsed
}

/// `rule` with the `/` of its `font` shorthands (`12px/1.5 family`)
/// written as a space: simplecss ends a value at a `/`, which would leave
/// the family out.
fn font_shorthand_unslashed(rule: &str) -> std::borrow::Cow<'_, str> {
    if !rule.contains('/') || !rule.contains("font") {
        return rule.into();
    }
    let mut out = String::with_capacity(rule.len());
    let mut rest = rule;
    while let Some(i) = rest.find("font") {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        let starts = before
            .chars()
            .next_back()
            .is_none_or(|c| c == '{' || c == ';' || c.is_whitespace());
        let after = at.get(4..).unwrap_or("").trim_start();
        if starts && after.starts_with(':') {
            let end = at.find([';', '}']).unwrap_or(at.len());
            out.push_str(&at.get(..end).unwrap_or("").replace('/', " "));
            rest = at.get(end..).unwrap_or("");
        } else {
            out.push_str("font");
            rest = at.get(4..).unwrap_or("");
        }
    }
    out.push_str(rest);
    out.into()
}

/// The rules of one rule text ([`parse_rules`]): one per selector of its
/// list that is read; none when a browser would drop the rule (a selector
/// it does not read, a rule without a block, an at-rule).
fn parse_chunk(
    chunk: &str,
    order: usize,
    fonts: bool,
    parsed: &mut Vec<Parsed>,
    same: &mut HashMap<(Option<Pseudo>, String), usize>,
) {
    let Some((list, block)) = chunk.split_once('{') else {
        return;
    };
    let Some(list) = prelude(list) else {
        return;
    };
    let selectors = selector::parse_list(list);
    if selectors
        .iter()
        .any(|(_, s)| *s == selector::Parsed::Invalid)
    {
        return;
    }
    let block = block.rsplit_once('}').map_or(block, |(b, _)| b);
    // The declarations as simplecss reads them (a broken one skipped).
    let text = format!("x{{{block}}}");
    let sheet = StyleSheet::parse(&text);
    let Some(rule) = sheet.rules.first() else {
        return;
    };
    let read = |pseudo: bool| -> Vec<Decl> {
        rule.declarations
            .iter()
            .filter(|d| {
                // A `;` or brace in a value would split it again in
                // `html::style::apply_style`: such a value is not CSS.
                d.value.len() <= MAX_DECL_VALUE && !d.value.contains([';', '{', '}'])
            })
            // `content` is a pseudo-element's, never an element's.
            .filter(|d| d.name != "content" || pseudo)
            // Fonts only where the page brings its own (`drawn`).
            .filter(|d| fonts || !matches!(d.name, "font-family" | "font"))
            .filter_map(|d| {
                Some(Decl {
                    prop: READ.iter().position(|p| *p == d.name)?,
                    value: d.value.to_owned(),
                    important: d.important,
                })
            })
            .collect()
    };
    for (text, sel) in selectors {
        let selector::Parsed::Read(sel) = sel else {
            continue;
        };
        let declarations = read(sel.pseudo.is_some());
        if declarations.is_empty() {
            continue;
        }
        // One rule per selector: a later one with the same selector adds
        // to it (and takes its place in the order), so repeating a
        // selector cannot crowd out a rule below.
        let at = *same.entry((sel.pseudo, text.clone())).or_insert_with(|| {
            parsed.push(Parsed {
                selector: sel,
                order,
                declarations: Vec::new(),
            });
            parsed.len() - 1
        });
        if let Some(p) = parsed.get_mut(at) {
            p.order = order;
            for d in declarations {
                p.declarations.retain(|k| k.prop != d.prop);
                p.declarations.push(d);
            }
        }
    }
}

/// The selectors of a rule's text before its block, without the
/// statements that end with `;` before it (`@import url(x);`,
/// `@charset "utf-8";`) and the `<!--` and `-->` a sheet may be wrapped in
/// (both skipped by a browser); `None` for an at-rule with a block.
fn prelude(list: &str) -> Option<&str> {
    let mut rest = list;
    loop {
        let t = rest.trim_start();
        if let Some(r) = t.strip_prefix("<!--").or_else(|| t.strip_prefix("-->")) {
            rest = r;
            continue;
        }
        if !t.starts_with('@') {
            return Some(t);
        }
        // The `;` that ends the statement, outside quotes and parentheses.
        let mut depth = 0usize;
        let mut quote = None;
        let mut end = None;
        for (i, c) in t.char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => depth = depth.saturating_sub(1),
                (None, ';') if depth == 0 => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        rest = t.get(end? + 1..)?;
    }
}

/// A leading compound that every element of a page's body is under
/// (`html`, `body`, `:root`, `*`, joined by a descendant combinator): a
/// page need not write those elements (`<body>` is implied), and this
/// reader's tree holds only those written.
fn of_every_page(part: &(Combinator, Compound), next: Option<&(Combinator, Compound)>) -> bool {
    let (_, c) = part;
    next.is_some_and(|(comb, _)| *comb == Combinator::Descendant)
        && c.name.as_deref().is_none_or(|n| n == "html" || n == "body")
        && c.conds.iter().all(|cond| *cond == Cond::Root)
}

/// The rules kept, within [`MAX_RULES`], [`MAX_PER_KEY`] and
/// [`MAX_CONTEXT_BITS`], in the cascade's order.
fn keep(mut parsed: Vec<Parsed>) -> Vec<Kept> {
    // The cascade's order: specificity, then the sheet's order.
    parsed.sort_by_key(|p| (p.selector.specificity, p.order));
    // Kept from the highest precedence down, so rules put before a
    // hiding rule cannot crowd it out of a key's list.
    let mut kept: Vec<Kept> = Vec::new();
    let mut per_key: HashMap<String, usize> = HashMap::new();
    let mut bits = 0usize;
    for p in parsed.into_iter().rev() {
        if kept.len() >= MAX_RULES {
            break;
        }
        let mut parts = p.selector.parts;
        while parts
            .first()
            .is_some_and(|f| of_every_page(f, parts.get(1)))
        {
            parts.remove(0);
        }
        // A rule that can never match here (`:hover`) is not kept: it
        // must not crowd out one that can.
        if parts.is_empty() || parts.iter().any(|(_, c)| c.never()) {
            continue;
        }
        let lead = parts.len() - 1;
        // The keys it is listed under: its last part's, and each leading
        // part's (`l` and `p` keep the two lists apart).
        let keys: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(j, (_, c))| format!("{}{}", if j == lead { 'l' } else { 'p' }, c.key()))
            .collect();
        let full = |k: &String| per_key.get(k).is_some_and(|n| *n >= MAX_PER_KEY);
        if bits + lead > MAX_CONTEXT_BITS || keys.iter().any(full) {
            continue;
        }
        for k in keys {
            *per_key.entry(k).or_default() += 1;
        }
        let parts = parts
            .into_iter()
            .map(|(comb, compound)| {
                let bit = bits as u8;
                bits += 1;
                Part {
                    places: compound.reads_places(),
                    compound,
                    comb,
                    bit,
                }
            })
            .collect::<Vec<_>>();
        // The last part's bit is not used.
        bits -= 1;
        kept.push(Kept {
            pseudo: p.selector.pseudo,
            parts,
            declarations: p.declarations,
        });
    }
    kept.reverse();
    kept
}

impl Sheet {
    /// The rules of `css` (lower case, at most [`MAX_CSS_BYTES`]) that set
    /// a property read here; `None` when there is none.
    #[cfg(test)]
    pub fn parse(css: &str) -> Option<Sheet> {
        Sheet::parse_with_fonts(css, false)
    }

    /// [`Sheet::parse`], with the rules that set `font-family` or `font`
    /// when `fonts` (the page brings its own fonts: `drawn`).
    pub fn parse_with_fonts(css: &str, fonts: bool) -> Option<Sheet> {
        Sheet::index(keep(parse_rules(css, fonts)))
    }

    /// The sheet of the kept rules, listed by the keys of their parts.
    fn index(kept: Vec<Kept>) -> Option<Sheet> {
        let mut sheet = Sheet {
            rules: Vec::new(),
            by_last: HashMap::new(),
            by_part: HashMap::new(),
            classes: HashMap::new(),
            attributes: HashSet::new(),
            of_type: false,
            looks_ahead: false,
            has: Vec::new(),
            generates: false,
        };
        for mut rule in kept {
            for part in &mut rule.parts {
                part.compound.each_cond(&mut |c| match c {
                    Cond::Class(v, number) => {
                        let next = u32::try_from(sheet.classes.len()).unwrap_or(NO_CLASS);
                        *number = *sheet.classes.entry(v.clone()).or_insert(next);
                    }
                    Cond::Attr { name, .. } => {
                        sheet.attributes.insert(name.clone());
                    }
                    Cond::Link => {
                        sheet.attributes.insert("href".to_owned());
                    }
                    Cond::Nth { of_type: true, .. }
                    | Cond::NthLast { of_type: true, .. }
                    | Cond::Only { of_type: true } => sheet.of_type = true,
                    _ => {}
                });
            }
            // The compounds of `:has()`, numbered once their classes are: a
            // rule past MAX_HAS of them is left out.
            if !sheet.number_has(&mut rule) {
                continue;
            }
            let i = sheet.rules.len();
            let n = rule.parts.len();
            for (j, part) in rule.parts.iter().enumerate() {
                let key = part.compound.key();
                match j + 1 == n {
                    true => sheet.by_last.entry(key).or_default().push(i),
                    false => sheet.by_part.entry(key).or_default().push((i, j)),
                }
            }
            sheet.generates |= rule.pseudo.is_some();
            sheet.looks_ahead |= rule.parts.iter().any(|p| p.compound.looks_ahead());
            sheet.rules.push(rule);
        }
        (!sheet.rules.is_empty()).then_some(sheet)
    }

    /// Numbers the `:has()` compounds of `rule` among the sheet's (equal
    /// ones alike); false when there is no number left for one.
    fn number_has(&mut self, rule: &mut Kept) -> bool {
        let mut numbered = true;
        for part in &mut rule.parts {
            part.compound.each_cond(&mut |c| {
                let Cond::Has(list) = c else {
                    return;
                };
                for (_, compound, n) in list.iter_mut() {
                    match self.has.iter().position(|h| h == compound) {
                        Some(at) => *n = u32::try_from(at).unwrap_or(NO_HAS),
                        None if self.has.len() < MAX_HAS => {
                            *n = u32::try_from(self.has.len()).unwrap_or(NO_HAS);
                            self.has.push(compound.clone());
                        }
                        None => numbered = false,
                    }
                }
            });
        }
        numbered
    }

    /// The `:has()` compounds (by number) that `cur` matches, for the
    /// first reading ([`Ahead::matched`]).
    pub fn has_matches(&self, cur: &ElemInfo) -> u64 {
        self.has
            .iter()
            .enumerate()
            .filter(|(_, c)| c.matches(cur))
            .fold(0, |m, (i, _)| m | 1u64.checked_shl(i as u32).unwrap_or(0))
    }

    /// Some attribute selector (or `:link`) is in the sheet.
    pub fn selects_attributes(&self) -> bool {
        !self.attributes.is_empty()
    }

    /// An attribute selector of the sheet names attribute `name`: its
    /// value is kept in [`ElemInfo::attrs`].
    pub fn names_attribute(&self, name: &str) -> bool {
        self.attributes.contains(name)
    }

    /// The lists of `map` that `cur` is under: its name's, its id's, its
    /// classes' (`named`, distinct) and `*`'s.
    fn listed<'m, T>(
        map: &'m HashMap<String, Vec<T>>,
        cur: &ElemInfo,
        named: &[&str],
    ) -> Vec<&'m [T]> {
        let mut lists = Vec::new();
        if map.is_empty() {
            return lists;
        }
        let mut key = String::with_capacity(64);
        let id = (!cur.id.is_empty()).then_some(("i:", cur.id.as_str()));
        let keys = [("t:", cur.name.as_str())]
            .into_iter()
            .chain(id)
            .chain(named.iter().map(|c| ("c:", *c)))
            .chain([("*", "")]);
        for (prefix, v) in keys {
            key.clear();
            key.push_str(prefix);
            key.push_str(v);
            if let Some(list) = map.get(key.as_str()) {
                lists.push(list.as_slice());
            }
        }
        lists
    }

    /// Whether part `j` of `rule` is in context for an element under
    /// `parent` after the siblings `kids`: the part before it matched
    /// where the combinator looks.
    fn in_context(rule: &Kept, j: usize, parent: Option<&ElemInfo>, kids: &Kids) -> bool {
        let Some(before) = j.checked_sub(1).and_then(|b| rule.parts.get(b)) else {
            return true;
        };
        let Some(part) = rule.parts.get(j) else {
            return false;
        };
        let bit = 1u128 << before.bit;
        let (own, any) = parent.map_or((0, 0), |p| (p.own, p.any));
        let set = match part.comb {
            Combinator::Descendant => any,
            Combinator::Child => own,
            Combinator::Next => kids.last,
            Combinator::Later => kids.earlier,
        };
        set & bit != 0
    }

    /// Opens `cur` under `parent` (`None` at the top) after the siblings
    /// `kids`: sets its place and the leading compounds it matches, and
    /// gives the rules whose selector matches it, in the cascade's order.
    /// Then add it to `kids` ([`Sheet::add_kid`]).
    pub fn open(&self, parent: Option<&ElemInfo>, kids: &Kids, cur: &mut ElemInfo) -> Vec<usize> {
        self.open_with(parent, kids, cur, true)
    }

    /// [`Sheet::open`] without the rules: what a first reading needs
    /// (the element's place, its classes, for `:has()`).
    pub fn place(&self, parent: Option<&ElemInfo>, kids: &Kids, cur: &mut ElemInfo) {
        self.open_with(parent, kids, cur, false);
    }

    fn open_with(
        &self,
        parent: Option<&ElemInfo>,
        kids: &Kids,
        cur: &mut ElemInfo,
        rules: bool,
    ) -> Vec<usize> {
        cur.index = kids.count.saturating_add(1);
        cur.type_index = match self.of_type {
            true => match kids.types.iter().find(|(n, _)| *n == cur.name) {
                Some((_, k)) => k.saturating_add(1),
                None if kids.types.len() < MAX_TYPES => 1,
                None => 0,
            },
            false => 0,
        };
        cur.root = parent.is_none() && cur.name == "html";
        cur.known = (!self.of_type || cur.type_index > 0) && (!self.looks_ahead || cur.ahead_known);
        // The classes the sheet names, distinct, at most MAX_CLASSES.
        let mut named: Vec<&str> = Vec::new();
        cur.classes.clear();
        for c in cur.class.split_ascii_whitespace() {
            if cur.classes.len() >= MAX_CLASSES {
                break;
            }
            if let Some(&n) = self.classes.get(c) {
                if !cur.classes.contains(&n) {
                    cur.classes.push(n);
                    named.push(c);
                }
            }
        }
        if !rules {
            return Vec::new();
        }
        let mut own = 0u128;
        for list in Sheet::listed(&self.by_part, cur, &named) {
            for &(i, j) in list {
                let Some(rule) = self.rules.get(i) else {
                    continue;
                };
                if let Some(part) = rule.parts.get(j) {
                    // The context first: a test of one bit.
                    if own & (1 << part.bit) == 0
                        && (cur.known || !part.places)
                        && Sheet::in_context(rule, j, parent, kids)
                        && part.compound.matches(cur)
                    {
                        own |= 1 << part.bit;
                    }
                }
            }
        }
        // The rules whose last part matches, as a set of their places (in
        // the cascade's order, each once).
        let mut hits = [0u64; MAX_RULES / 64];
        for list in Sheet::listed(&self.by_last, cur, &named) {
            for &i in list {
                if let Some(word) = hits.get_mut(i / 64) {
                    *word |= 1 << (i % 64);
                }
            }
        }
        cur.own = own;
        cur.any = own | parent.map_or(0, |p| p.any);
        let mut matched = Vec::new();
        for (w, mut word) in hits.into_iter().enumerate() {
            while word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let Some(rule) = self.rules.get(i) else {
                    continue;
                };
                let last = rule.parts.len().saturating_sub(1);
                let places = rule.parts.last().is_some_and(|p| p.places);
                if (cur.known || !places)
                    && Sheet::in_context(rule, last, parent, kids)
                    && rule.last().is_some_and(|c| c.matches(cur))
                {
                    matched.push(i);
                }
            }
        }
        matched
    }

    /// Adds `cur` (opened with [`Sheet::open`]) to its parent's `kids`.
    pub fn add_kid(&self, kids: &mut Kids, cur: &ElemInfo) {
        kids.count = kids.count.saturating_add(1);
        kids.last = cur.own;
        kids.earlier |= cur.own;
        if self.of_type && cur.type_index > 0 {
            match kids.types.iter_mut().find(|(n, _)| *n == cur.name) {
                Some((_, k)) => *k = cur.type_index,
                None => kids.types.push((cur.name.clone(), cur.type_index)),
            }
        }
    }

    /// The text generated before and after an element whose matching
    /// rules are `matched` ([`Sheet::open`]): the `content` of its
    /// `::before` and `::after` rules in force, `!important` last.
    pub fn generated(
        &self,
        matched: &[usize],
        attrs: &[(String, String)],
    ) -> [Option<(String, String)>; 2] {
        if !self.generates {
            return [None, None];
        }
        let mut out: [Option<(bool, &str)>; 2] = [None, None];
        // The pseudo-elements' other declarations, in cascade order
        // (normal, then `!important`), as a style text.
        let mut styles: [(String, String); 2] = Default::default();
        for &i in matched {
            let Some(rule) = self.rules.get(i) else {
                continue;
            };
            let Some(pseudo) = rule.pseudo else {
                continue;
            };
            let after = pseudo == Pseudo::After;
            let [before_slot, after_slot] = &mut out;
            let slot = if after { after_slot } else { before_slot };
            let [before_style, after_style] = &mut styles;
            let (normal, important) = if after { after_style } else { before_style };
            for d in &rule.declarations {
                let Some(name) = READ.get(d.prop) else {
                    continue;
                };
                if *name != "content" {
                    let to = if d.important {
                        &mut *important
                    } else {
                        &mut *normal
                    };
                    to.push_str(name);
                    to.push(':');
                    to.push_str(&d.value);
                    to.push_str(if d.important { "!important;" } else { ";" });
                } else if d.important || !slot.is_some_and(|(important, _)| important) {
                    *slot = Some((d.important, d.value.as_str()));
                }
            }
        }
        let [b, a] = out;
        let [(bn, bi), (an, ai)] = styles;
        [(b, bn + &bi), (a, an + &ai)].map(|(v, style)| {
            v.and_then(|(_, value)| content_text(value, attrs))
                .map(|text| (text, style))
        })
    }

    /// The declarations of the rules `matched` ([`Sheet::open`]) with the
    /// element's inline style, as one style text in cascade order.
    pub fn style_for(&self, matched: &[usize], inline: &str) -> String {
        if matched.is_empty() {
            return inline.to_owned();
        }
        // The value in force for each property read: a later rule (higher
        // specificity) replaces an earlier one's.
        let mut normal: [Option<&str>; READ.len()] = [None; READ.len()];
        let mut important: [Option<&str>; READ.len()] = [None; READ.len()];
        for &i in matched {
            let Some(rule) = self.rules.get(i) else {
                continue;
            };
            if rule.pseudo.is_some() {
                continue;
            }
            for d in &rule.declarations {
                let table = if d.important {
                    &mut important
                } else {
                    &mut normal
                };
                if let Some(slot) = table.get_mut(d.prop) {
                    *slot = Some(d.value.as_str());
                }
            }
        }
        let mut out = String::new();
        let write = |out: &mut String, table: &[Option<&str>]| {
            for (name, value) in READ.iter().zip(table) {
                if let Some(v) = value {
                    out.push_str(name);
                    out.push(':');
                    out.push_str(v);
                    out.push(';');
                }
            }
        };
        write(&mut out, &normal);
        out.push(';');
        out.push_str(inline);
        out.push(';');
        write(&mut out, &important);
        out
    }
}

/// The top-level rules of `css`, each `selectors { declarations }` (or an
/// at-rule), cut where a `}` closes the outermost block; comments and
/// quoted strings are skipped over, so a brace inside them does not cut.
/// Rules longer than [`MAX_RULE_BYTES`] are left out. A block left open
/// at the end is closed, as a browser closes it.
fn rule_texts(css: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    rule_texts_with_comments(css)
        .map(|r| match r.contains("/*") {
            // Comments go before the length bound: padding a rule with one
            // must not push it past the bound.
            true => std::borrow::Cow::Owned(strip_comments(&r)),
            false => r,
        })
        .filter(|r| r.len() <= MAX_RULE_BYTES)
}

/// `s` without its `/* ... */` comments (an unclosed one runs to the end).
pub(crate) fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("/*") {
        out.push_str(rest.get(..i).unwrap_or(""));
        rest = match rest.get(i + 2..).and_then(|r| r.find("*/").map(|e| (r, e))) {
            Some((r, e)) => r.get(e + 2..).unwrap_or(""),
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// [`rule_texts`] with comments left in (the bound applies after).
fn rule_texts_with_comments(css: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    let bytes = css.as_bytes();
    let mut start = 0usize;
    let mut i = 0usize;
    let mut depth = 0usize;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes.get(i).copied().unwrap_or(0);
            match b {
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = css
                        .get(i + 2..)
                        .and_then(|r| r.find("*/"))
                        .map_or(bytes.len(), |e| i + 2 + e + 2);
                    continue;
                }
                b'"' | b'\'' => {
                    let close = css
                        .get(i + 1..)
                        .and_then(|r| r.find(b as char))
                        .map_or(bytes.len(), |e| i + 1 + e + 1);
                    i = close;
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        let rule = css.get(start..=i).unwrap_or("");
                        i += 1;
                        start = i;
                        return Some(rule.into());
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let rest = css.get(start..).unwrap_or("");
        start = bytes.len();
        (depth > 0).then(|| {
            depth = 0;
            format!("{rest}{}", "}".repeat(rest.matches('{').count())).into()
        })
    })
}

/// The text of a document's `<style>` elements, lower case, at most
/// [`MAX_CSS_BYTES`]; `None` when it has none. Read with the same
/// tokenizer as the text, so a `<style>` inside a comment or an attribute
/// is not one.
pub fn style_text(html: &str) -> Option<String> {
    let css = if mentions_font_face(html.as_bytes()) {
        // A font written into the sheet (`url(data:...)`, hundreds of
        // kilobytes) must not push the rules after it past the bound.
        let raw = style_elements(html, MAX_FACE_CSS, false);
        let mut css: String = without_data_urls(&raw)
            .chars()
            .flat_map(char::to_lowercase)
            .take(MAX_CSS_BYTES)
            .collect();
        while css.len() > MAX_CSS_BYTES {
            css.pop();
        }
        css
    } else {
        style_elements(html, MAX_CSS_BYTES, true)
    };
    (!css.trim().is_empty()).then_some(unwrap_at_rules(&css))
}

/// Most bytes of `<style>` searched for `@font-face` (a font written into
/// the page is large: it does not fit the sheet's own bound).
pub const MAX_FACE_CSS: usize = 6 << 20;

/// `@font-face`, in any case, is in `bytes`.
pub(crate) fn mentions_font_face(bytes: &[u8]) -> bool {
    find_font_face(bytes).is_some()
}

/// Where the first `@font-face` (in any case) of `bytes` starts.
pub(crate) fn find_font_face(bytes: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'@', bytes).find(|&i| {
        bytes
            .get(i + 1..i + 10)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"font-face"))
    })
}

/// `css` with every `url(data:...)` written `url()`.
fn without_data_urls(css: &str) -> std::borrow::Cow<'_, str> {
    let lower = css.to_ascii_lowercase();
    if !lower.contains("data:") {
        return css.into();
    }
    let mut out = String::with_capacity(css.len().min(1 << 16));
    let mut at = 0;
    while let Some(u) = lower.get(at..).and_then(|r| r.find("url(")) {
        let open = at + u + 4;
        let inner = lower.get(open..).unwrap_or("");
        let lead = inner.len() - inner.trim_start_matches([' ', '"', '\'']).len();
        out.push_str(css.get(at..open).unwrap_or(""));
        if inner.get(lead..).is_some_and(|r| r.starts_with("data:")) {
            let end = inner.find(')').map_or(lower.len(), |e| open + e);
            at = end;
        } else {
            at = open;
        }
    }
    out.push_str(css.get(at..).unwrap_or(""));
    out.into()
}

/// The text of a document's `<style>` elements as written (lower case
/// when `lower`), at most `max` bytes (a few more where a character is cut
/// short of it).
pub(crate) fn style_elements(html: &str, max: usize, lower: bool) -> String {
    use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
    use html5gum::{Span, Tokenizer};
    let bytes = html.as_bytes();
    let last = |pat: &[u8]| {
        memchr::memrchr_iter(b'<', bytes).find(|&i| {
            bytes
                .get(i..i + pat.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(pat))
        })
    };
    let Some(last_open) = last(b"<style") else {
        return String::new();
    };
    // Sheets sit in the head, before most of the page: the tokenizer reads
    // up to the last `</style>` (all of the page when a `<style>` is left
    // open after it).
    let end = match last(b"</style") {
        Some(close) if close > last_open => bytes
            .get(close..)
            .and_then(|r| r.iter().position(|b| *b == b'>'))
            .map_or(html.len(), |gt| close + gt + 1),
        _ => html.len(),
    };
    let html = html.get(..end).unwrap_or(html);
    let mut css = String::new();
    let mut inside = false;
    let mut emitter = CallbackEmitter::new(|event: CallbackEvent<'_>, _: Span<()>| {
        match event {
            CallbackEvent::OpenStartTag { name } => inside = name == b"style",
            CallbackEvent::EndTag { name } if name == b"style" => {
                inside = false;
                css.push('\n');
            }
            CallbackEvent::String { value } if inside => {
                let room = max.saturating_sub(css.len());
                let text = String::from_utf8_lossy(value.get(..room).unwrap_or(value));
                if lower {
                    css.extend(text.chars().flat_map(char::to_lowercase));
                } else {
                    css.push_str(&text);
                }
            }
            _ => {}
        }
        (css.len() >= max).then_some(())
    });
    emitter.naively_switch_states(true);
    for stop in Tokenizer::new_with_emitter(html, emitter) {
        if stop.is_ok() {
            break;
        }
    }
    css
}

/// `css` with the blocks of `@media` and `@supports` rules that apply on
/// any screen written out as plain rules (simplecss skips every at-rule,
/// and a sender could wrap hiding rules in `@media screen`), and those
/// that may not (`print`, sizes, orientation, preferences) removed with
/// their rules. Linear: one pass, braces counted.
fn unwrap_at_rules(css: &str) -> String {
    const CONDITIONAL: &[&str] = &[
        "print",
        "width",
        "height",
        "orientation",
        "resolution",
        "hover",
        "pointer",
        "prefers",
        "aspect",
        "not ",
        "speech",
    ];
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    // Depth of braces inside unwrapped blocks whose closing brace is
    // dropped, one entry per open unwrapped block.
    let mut unwrapped: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    while let Some(i) = rest.find(['@', '{', '}']) {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        if let Some(tail) = at.strip_prefix('@') {
            let is_block = ["media", "supports"].iter().any(|k| tail.starts_with(k));
            // The block's `{` or what ends the at-rule first; the search
            // stops at the next `@` or `}`, so a run of `@` stays linear.
            let open = is_block
                .then(|| {
                    tail.get(1..)
                        .and_then(|t| t.find(['{', ';', '@', '}']))
                        .map(|o| o + 1)
                })
                .flatten();
            match (
                is_block,
                open.and_then(|o| tail.get(o..o + 1).map(|c| (o, c))),
            ) {
                (true, Some((o, "{"))) => {
                    let query = tail.get(..o).unwrap_or("");
                    if CONDITIONAL.iter().any(|c| query.contains(c)) {
                        // Skip the whole block.
                        let body = tail.get(o + 1..).unwrap_or("");
                        let mut d = 1usize;
                        let mut end = body.len();
                        for (j, c) in body.char_indices() {
                            match c {
                                '{' => d += 1,
                                '}' => {
                                    d -= 1;
                                    if d == 0 {
                                        end = j + 1;
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                        rest = body.get(end..).unwrap_or("");
                    } else {
                        unwrapped.push(depth);
                        depth += 1;
                        rest = tail.get(o + 1..).unwrap_or("");
                    }
                    continue;
                }
                _ => {
                    out.push('@');
                    rest = tail;
                    continue;
                }
            }
        }
        if let Some(tail) = at.strip_prefix('{') {
            depth += 1;
            out.push('{');
            rest = tail;
            continue;
        }
        let tail = at.get(1..).unwrap_or("");
        depth = depth.saturating_sub(1);
        if unwrapped.last() == Some(&depth) {
            unwrapped.pop();
        } else {
            out.push('}');
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Sheet {
        /// The style of `cur` as the first child of `parent`.
        fn style_under(&self, parent: Option<&ElemInfo>, cur: &ElemInfo, inline: &str) -> String {
            let mut cur = cur.clone();
            let kids = parent.map(|p| p.kids.clone()).unwrap_or_default();
            let matched = self.open(parent, &kids, &mut cur);
            self.style_for(&matched, inline)
        }
    }

    fn info(name: &str, class: &str, id: &str) -> ElemInfo {
        ElemInfo {
            name: name.into(),
            class: class.into(),
            id: id.into(),
            ..ElemInfo::default()
        }
    }

    /// The open elements `chain` (outermost first), opened in the sheet;
    /// the last one is the parent of what is styled next.
    fn opened(sheet: &Sheet, chain: &[ElemInfo]) -> Option<ElemInfo> {
        let mut parent: Option<ElemInfo> = None;
        for e in chain {
            let mut e = e.clone();
            let kids = parent.as_ref().map(|p| p.kids.clone()).unwrap_or_default();
            sheet.open(parent.as_ref(), &kids, &mut e);
            parent = Some(e);
        }
        parent
    }

    #[test]
    fn rules_that_hide_are_found_by_class_id_and_name() {
        let css = ".x{display:none} #j1{font-size:0} p span{color:#fff} div > em{opacity:0} \
                   a{text-decoration:none}";
        let sheet = Sheet::parse(css).unwrap();
        let in_p = opened(
            &sheet,
            &[info("body", "", ""), info("p", "", ""), info("b", "", "")],
        );
        // Both rules: one value per property, in a fixed order.
        assert_eq!(
            sheet.style_under(in_p.as_ref(), &info("span", "y x", ""), ""),
            "display:none;color:#fff;;;"
        );
        // Of two rules setting one property, the more specific wins.
        let s = Sheet::parse("#k{display:inline} span{display:none}").unwrap();
        assert_eq!(
            s.style_under(None, &info("span", "", "k"), ""),
            "display:inline;;;"
        );
        assert!(sheet
            .style_under(in_p.as_ref(), &info("b", "", "j1"), "")
            .contains("font-size:0"));
        // Not under a p: the descendant rule does not match.
        assert_eq!(sheet.style_under(None, &info("span", "", ""), "c:1"), "c:1");
        // A child rule needs the parent itself.
        let div = opened(&sheet, &[info("div", "", "")]);
        let deeper = opened(&sheet, &[info("div", "", ""), info("i", "", "")]);
        assert!(sheet
            .style_under(div.as_ref(), &info("em", "", ""), "")
            .contains("opacity:0"));
        assert!(!sheet
            .style_under(deeper.as_ref(), &info("em", "", ""), "")
            .contains("opacity"));
        // A rule that sets nothing read here is not kept.
        assert_eq!(sheet.style_under(None, &info("a", "", ""), ""), "");
    }

    /// What a sender can write into a sheet to make it crowd out, split
    /// or inject a rule.
    #[test]
    fn crafted_rules_cannot_crowd_out_split_or_inject() {
        // Rules that never match here (pseudo-classes) are not kept, so
        // they cannot crowd a hiding rule out of its key's list.
        let mut css: String = (0..20)
            .map(|i| format!(".j:hover{i}{{color:red}}"))
            .collect();
        css.push_str(".j{display:none}");
        let sheet = Sheet::parse(&css).unwrap();
        assert!(sheet
            .style_under(None, &info("b", "j", ""), "")
            .contains("display:none"));
        // A comment cannot pad a rule past the length bound.
        let padded = format!(".j{{/*{}*/display:none}}", "x".repeat(MAX_RULE_BYTES * 2));
        let sheet = Sheet::parse(&padded).unwrap();
        assert!(sheet
            .style_under(None, &info("b", "j", ""), "")
            .contains("display:none"));
        // A value with a `;` in it is no declaration.
        assert!(
            Sheet::parse(".r{color:x(;display:none;)}").is_none_or(|s| !s
                .style_under(None, &info("b", "r", ""), "")
                .contains("display:none"))
        );
        // A long compound is not evaluated (cut short, it would reach
        // more than a browser's).
        let long = format!(".a{}.nope{{display:none}}", ".a".repeat(200));
        assert!(Sheet::parse(&long).is_none());
        // Many classes before the one a rule names.
        let sheet = Sheet::parse(".a,.b,.c,.d,.e,.f{color:red} .j{display:none}").unwrap();
        let el = info("b", "a b c d e f j", "");
        assert!(sheet.style_under(None, &el, "").contains("display:none"));
        // A run of `@` is read in one pass.
        assert_eq!(unwrap_at_rules(&"@".repeat(1000)), "@".repeat(1000));
    }

    #[test]
    fn decoy_classes_do_not_hide_the_one_a_rule_names() {
        let sheet = Sheet::parse(".x{display:none}").unwrap();
        let decoys = info("span", "a b c d e f g h x", "");
        assert!(sheet
            .style_under(None, &decoys, "")
            .contains("display:none"));
    }

    #[test]
    fn the_cascade_puts_inline_after_the_sheet_and_important_last() {
        let sheet = Sheet::parse(".x{display:none} .y{display:none !important}").unwrap();
        let s = sheet.style_under(None, &info("span", "x", ""), "display:inline");
        assert!(s.find("display:none") < s.find("display:inline"), "{s}");
        let s = sheet.style_under(None, &info("span", "y", ""), "display:inline");
        assert!(s.find("display:inline") < s.find("display:none"), "{s}");
    }

    /// The styles of each element of `doc`, in order: `name.class#id`
    /// opens an element (under the one open), `/` closes the last.
    fn styles(sheet: &Sheet, doc: &str) -> Vec<String> {
        let mut stack: Vec<ElemInfo> = Vec::new();
        let mut top = Kids::default();
        let mut out = Vec::new();
        for tok in doc.split_whitespace() {
            if tok == "/" {
                stack.pop();
                continue;
            }
            let (rest, id) = tok.split_once('#').unwrap_or((tok, ""));
            let (name, class) = rest.split_once('.').unwrap_or((rest, ""));
            let mut e = info(name, &class.replace('.', " "), id);
            let parent = stack.last();
            let kids = parent.map_or(&top, |p| &p.kids);
            let matched = sheet.open(parent, kids, &mut e);
            out.push(sheet.style_for(&matched, ""));
            let kids = match stack.last_mut() {
                Some(p) => &mut p.kids,
                None => &mut top,
            };
            sheet.add_kid(kids, &e);
            stack.push(e);
        }
        out
    }

    #[test]
    fn selectors_of_any_length_and_siblings_reach_their_elements() {
        let sheet = Sheet::parse(
            "#offer .content p span{display:none} h1 + p{opacity:0} h2 ~ p.x{color:red} \
             li:nth-child(2n){font-size:0} ul > li:first-of-type b{left:-9999px} \
             div :not(.keep){visibility:hidden}",
        )
        .unwrap();
        let got = styles(
            &sheet,
            "body div#offer div.content p span / / / / \
             h1 / p / p / h2 / br / p.x / p.y / \
             ul li b / / li b / / / div i.keep / em / /",
        );
        let hidden = |i: usize, what: &str| got.get(i).is_some_and(|s| s.contains(what));
        // Four compounds.
        assert!(
            hidden(4, "display:none") && !hidden(3, "display"),
            "{got:?}"
        );
        // `+`: the p just after the h1, not the one after it.
        assert!(hidden(6, "opacity:0") && !hidden(7, "opacity"), "{got:?}");
        // `~`: a later p.x after an h2, past a `<br>`.
        assert!(hidden(10, "color:red") && !hidden(11, "color"), "{got:?}");
        // `:nth-child(2n)` of the ul's items; `:first-of-type` through `>`.
        assert!(
            !hidden(13, "font-size") && hidden(15, "font-size:0"),
            "{got:?}"
        );
        assert!(hidden(14, "left:-9999px") && !hidden(16, "left"), "{got:?}");
        // `:not()`.
        assert!(
            !hidden(18, "visibility") && hidden(19, "visibility:hidden"),
            "{got:?}"
        );
        // A rule a browser drops whole; one that looks ahead is left out,
        // the others of its list read.
        assert!(Sheet::parse("p:nosuch, .x{display:none}").is_none());
        let part = Sheet::parse("p:has(i b), .x{display:none}").unwrap();
        assert_eq!(part.rules.len(), 1);
        // Attribute selectors see the attributes the sheet names.
        let attr = Sheet::parse("[data-k^=ju i]{display:none}").unwrap();
        assert!(attr.names_attribute("data-k") && !attr.names_attribute("title"));
        let mut e = info("span", "", "");
        e.attrs = vec![("data-k".into(), "junk".into())];
        assert!(attr.style_under(None, &e, "").contains("display:none"));
    }

    #[test]
    fn a_crafted_sheet_is_cut_to_the_bounds() {
        // One selector repeated is one rule.
        let many: String = (0..1000)
            .map(|i| format!(".x{{display:none;z:{i}}}"))
            .collect();
        assert_eq!(Sheet::parse(&many).unwrap().rules.len(), 1);
        // Distinct selectors on one key: the highest precedence are kept,
        // so rules put before a hiding rule cannot crowd it out.
        let mut crowd: String = (0..100).map(|i| format!("b.x.y{i}{{color:red}}")).collect();
        crowd.push_str(".x.z.w{display:none}");
        let sheet = Sheet::parse(&crowd).unwrap();
        assert_eq!(sheet.rules.len(), MAX_PER_KEY);
        assert!(sheet
            .style_under(None, &info("i", "x z w", ""), "")
            .contains("display:none"));
        let spread: String = (0..2000)
            .map(|i| format!(".x{i}{{display:none}}"))
            .collect();
        assert_eq!(Sheet::parse(&spread).unwrap().rules.len(), MAX_RULES);
    }

    /// Sheets made of CSS fragments in random order parse and match
    /// without panicking.
    #[test]
    fn random_sheets_do_not_panic() {
        const BITS: &[&str] = &[
            ".",
            "#",
            ">",
            "+",
            "~",
            "{",
            "}",
            ":",
            ";",
            "[",
            "]",
            "=",
            "|",
            "'",
            "\"",
            "*",
            " ",
            "x",
            "p",
            "display",
            "none",
            "!important",
            "@media",
            "@supports",
            "print",
            "/*",
            "*/",
            "\\",
            "(",
            ")",
            ",",
            "é",
            "\u{0}",
            "class",
            "id",
            "first-child",
            "last-child",
            "nth-last-child(",
            "has(",
            "not(",
            "is(",
            "empty",
            "\\",
            "2n+1",
            "-",
            "0",
            "\n",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let n = (next() % 24) as usize;
            let css: String = (0..n)
                .map(|_| BITS[(next() % BITS.len() as u64) as usize])
                .collect();
            let css = unwrap_at_rules(&css);
            if let Some(sheet) = Sheet::parse(&css) {
                let parent = opened(&sheet, &[info("body", "x", "p"), info("p", "x p", "x")]);
                for cur in [info("p", "x", "x"), info("span", "", "p"), info("", "", "")] {
                    sheet.style_under(parent.as_ref(), &cur, "display:inline");
                }
            }
        }
    }

    #[test]
    fn rules_are_cut_at_the_outer_braces() {
        let texts: Vec<String> = rule_texts("a{b:c}  d{e:'}'} @media x{f{g:h}} i{j:k")
            .map(|c| c.into_owned())
            .collect();
        assert_eq!(
            texts,
            ["a{b:c}", "  d{e:'}'}", " @media x{f{g:h}}", " i{j:k}"]
        );
        // A sheet of broken rules costs time linear in its size.
        let broken = ".{a:b}".repeat(MAX_CSS_BYTES / 6);
        assert_eq!(Sheet::parse(&broken).map(|s| s.rules.len()), None);
        let unclosed = Sheet::parse(".x{display:none").unwrap();
        assert!(unclosed
            .style_under(None, &info("b", "x", ""), "")
            .contains("display:none"));
    }

    #[test]
    fn media_blocks_for_every_screen_are_read() {
        assert_eq!(
            unwrap_at_rules("@media screen { .x{display:none} } p{color:red}"),
            " .x{display:none}  p{color:red}"
        );
        assert_eq!(
            unwrap_at_rules("@media (max-width:600px){.m{display:none}}.y{a:b}"),
            ".y{a:b}"
        );
        assert_eq!(
            unwrap_at_rules("@supports (display:grid){@media all{.z{display:none}}}"),
            ".z{display:none}"
        );
        assert_eq!(
            unwrap_at_rules("@import url(x.css); .a{b:c}"),
            "@import url(x.css); .a{b:c}"
        );
        // Unbalanced input ends where it ends.
        for css in [
            "@media screen {",
            "}}}@media{",
            "@media print {{{",
            "@",
            "@media",
        ] {
            unwrap_at_rules(css);
        }
        let css = unwrap_at_rules("@media screen{.x{display:none}}");
        let sheet = Sheet::parse(&css).unwrap();
        assert!(sheet
            .style_under(None, &info("b", "x", ""), "")
            .contains("display:none"));
    }

    #[test]
    fn style_text_reads_style_elements_only() {
        let html = "<!-- <style>.a{display:none}</style> --><p title=\"<style>\">x</p>\
                    <STYLE>.B{Display:None}</STYLE><style>.c{}</style>";
        let css = style_text(html).unwrap();
        assert!(
            css.contains(".b{display:none}") && css.contains(".c{}"),
            "{css}"
        );
        assert!(!css.contains(".a"), "{css}");
        assert_eq!(style_text("<p>no sheet</p>"), None);
        // Read up to the last sheet's end, or to the end when one is open.
        let two = style_text("<style>.a{b:c}</style><p>x</p><style>.d{e:f}</style><p>y").unwrap();
        assert!(two.contains(".a{b:c}") && two.contains(".d{e:f}"), "{two}");
        let open = style_text("<style>.a{b:c}</style><p>x</p><style>.d{e:f}").unwrap();
        assert!(open.contains(".d{e:f}"), "{open}");
        let big = format!("<style>{}</style>", "x".repeat(MAX_CSS_BYTES * 2));
        assert!(style_text(&big).unwrap().len() <= MAX_CSS_BYTES + 4);
    }
}
