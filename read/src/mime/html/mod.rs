//! HTML to the text a reader sees, with link and image targets kept.
//!
//! The markup is read by html5gum, a WHATWG-conformant HTML5 tokenizer, so
//! a document is cut into tags, text, comments and character references
//! exactly where a browser cuts it: a stray quote in an attribute
//! (`<table width="100%"">`), a byte-order mark, an unclosed comment or a
//! `<` that opens nothing never makes the rest of the page disappear, and
//! every character reference (`&#82;`, `&eacute`, `&amp`) is decoded as a
//! browser decodes it. On top of the tokens, this module keeps the part of
//! a browser's tree construction that decides what is shown:
//!
//! - **Inline elements join, block elements break.** `<span>F</span>REE` is
//!   one word; `<p>`, `<div>`, `<tr>`, `<li>` and the other blocks end a
//!   paragraph; `<br>` ends a line; table cells are separated by a space.
//!   Runs of whitespace collapse to one space, as a browser renders them
//!   (blank lines in the source are no paragraph breaks), except in `<pre>`.
//! - **Implied end tags**, as the HTML5 tree builder applies them: a block
//!   start tag closes an open `<p>`; `<li>`, `<dt>`, `<dd>`, `<td>`, `<th>`,
//!   `<tr>` and `<option>` close their open siblings; text or a body
//!   element closes an unclosed `<head>`. Without these, one unclosed
//!   hidden `<p>` would hide every block after it, which a browser shows.
//! - **Never shown:** comments, `<head>` content, and the elements whose
//!   content the tokenizer reads as raw text (`<script>`, `<style>`,
//!   `<title>`, `<iframe>`, `<noembed>`, `<noframes>`), and `<template>`;
//!   a browser shows none of it either, whether closed or not. `<rp>`
//!   (ruby's fallback parentheses) is hidden, as browsers hide it.
//! - **Hidden by the page:** `display:none`, `visibility:hidden`, zero or
//!   1–2 px (or 12% and smaller) fonts, zero opacity, zero size with hidden
//!   overflow, a transparent or zero-alpha colour, a box moved off any
//!   screen (a far negative indent or margin, a far offset of an absolute
//!   or fixed box, a far translation), an empty `clip` or `clip-path`, a
//!   zero scale, the
//!   `hidden` attribute, and text coloured like its background (within a
//!   small distance), backgrounds and colours taken from `bgcolor`, `<font
//!   color>` and inline styles, inherited as a browser inherits them.
//!
//! **Bound on hiding.** Inline styles can be overridden by a `<style>`
//! block with `!important`, which this module does not evaluate, so
//! "hidden" text may be shown to the reader after all. A sender must not
//! be able to blank out a whole message that way: when the text left
//! visible has fewer than [`MIN_VISIBLE_WORDS`] words and the hidden text
//! has more, the hidden text is kept (see [`to_text`]).
//!
//! Output: paragraphs separated by a blank line, link targets written into
//! the text where the link starts (so the normalizer treats them like URLs
//! in plain text) and also returned, image sources returned. Work is
//! bounded: the output by `limit` bytes, the element stack by
//! `MAX_STACK` elements, returned targets by [`MAX_URLS`] and [`MAX_IMAGES`].

pub(crate) mod entities;
mod style;

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Emitter, ForwardingEmitter, Span, Tokenizer};

pub use self::entities::decode_entities;
use self::entities::push_bounded;
use self::style::*;
use super::css::{style_text, Ahead, ElemInfo, Kids, Sheet, MAX_SELECTED_ATTRS};
use super::drawn;
use super::normalize::url_host;

/// Deepest element nesting tracked; deeper elements inherit their parent's
/// state and are not tracked (their end tags then close nothing).
const MAX_STACK: usize = 256;
/// Most link targets returned per document.
pub const MAX_URLS: usize = 64;
/// Most image sources returned per document.
pub const MAX_IMAGES: usize = 64;
/// Most distinct link hosts written into the text per document.
const MAX_LINK_HOSTS: usize = 4;
/// Most characters of a link target or image source kept.
const MAX_TARGET_CHARS: usize = 2048;
/// Most pictures written into a page (`data:` URIs) read.
pub const MAX_DATA_PICTURES: usize = 4;
/// Most characters of `data:` pictures kept from a message, in all (a
/// picture's encoded bytes at most: `picture::MAX_BYTES`, in base64).
pub const MAX_DATA_CHARS: usize = (crate::mime::picture::MAX_BYTES / 3 + 1) * 4 + 64;
/// Most bytes of an attribute value read (longer ones are cut).
const MAX_VALUE: usize = 4096;
/// Most characters of an element's style (its sheet declarations and its
/// inline style) read.
const MAX_STYLE: usize = 16 * 1024;
/// Most bytes of an element name, class or id kept for the sheet.
const MAX_SELECTED: usize = 256;
/// Hidden text is dropped only when at least this many words stay visible.
pub const MIN_VISIBLE_WORDS: usize = 24;
/// Text within this distance (largest difference of one colour channel)
/// of its background is hidden: white on white, `#fdfdfd` on `#ffffff`.
const SAME_COLOUR: u8 = 20;

/// What [`to_text`] found besides the text.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Targets {
    /// `href` of visible links, in order, at most [`MAX_URLS`].
    pub urls: Vec<String>,
    /// `src` of images, in order, at most [`MAX_IMAGES`].
    pub images: Vec<String>,
    /// Shown pictures written into the page (`data:image/...;base64,...`),
    /// whole, at most [`MAX_DATA_PICTURES`] of [`MAX_DATA_CHARS`] in all.
    pub data_pictures: Vec<String>,
    /// Text set in the page's own fonts is marked for
    /// [`drawn::resolve`] (else it is read by
    /// its code points).
    pub drawn: bool,
    /// The page fonts of the message so far (TrueType or OpenType), at most
    /// [`drawn::MAX_FONTS`]: a marked run
    /// names its font by its place here.
    pub fonts: Vec<Vec<u8>>,
}

/// Converts HTML to the text a reader sees and appends it to `out`; pushes
/// link targets and image sources onto `targets`; stops once `out` reaches
/// `limit` bytes. Hidden text (see the module doc) is dropped unless fewer
/// than [`MIN_VISIBLE_WORDS`] words would stay visible and more would be
/// hidden: then every word of the body is kept, hidden or not.
pub fn to_text(html: &str, out: &mut String, targets: &mut Targets, limit: usize) {
    let start = out.len();
    let mut families = Vec::new();
    if targets.drawn {
        for face in drawn::faces(html) {
            if targets.fonts.len() < drawn::MAX_FONTS {
                families.push((face.family, targets.fonts.len()));
                targets.fonts.push(face.bytes);
            }
        }
    }
    let css = style_text(html);
    let sheet = css
        .as_deref()
        .and_then(|css| Sheet::parse_with_fonts(css, !families.is_empty()));
    // A sheet that looks ahead of elements (`:last-child`, `:empty`): a
    // first reading of the page (its text and targets thrown away) tells
    // each element's place from the end.
    let ahead = sheet.as_ref().filter(|s| s.looks_ahead).map(|sheet| {
        let mut scratch = Targets {
            drawn: targets.drawn,
            ..Targets::default()
        };
        // Read to the end (no bound on its text, which is the page's at
        // most): stopped where the page's text fills, it would count too
        // few children for the elements open there.
        let mut first = Renderer::new(
            families.clone(),
            Some(sheet),
            String::new(),
            usize::MAX,
            &mut scratch,
        );
        first.record = Some(Ahead::default());
        first.run(html);
        let mut ahead = first.record.take().unwrap_or_default();
        ahead.finish();
        ahead
    });
    let mut r = Renderer::new(
        families,
        sheet.as_ref(),
        std::mem::take(out),
        limit,
        targets,
    );
    r.ahead = ahead.as_ref();
    r.run(html);
    // (Words are counted only where text was hidden: most documents hide
    // none.)
    *out = match r.all {
        Some(all)
            if r.hidden_words > 0 && {
                let visible = r.visible.get(start..).unwrap_or("");
                let visible_words = count_words_upto(visible, MIN_VISIBLE_WORDS);
                visible_words < MIN_VISIBLE_WORDS && r.hidden_words > visible_words
            } =>
        {
            all
        }
        _ => r.visible,
    };
}

/// The tokenizer's emitter without its parse errors: the renderer ignores
/// them, and validating every character for them was about a twentieth of
/// the time a replay of real mail took.
struct Quiet<E>(E);

impl<E: Emitter> ForwardingEmitter for Quiet<E> {
    type Token = E::Token;

    fn inner(&mut self) -> &mut impl Emitter<Token = Self::Token> {
        &mut self.0
    }

    fn should_emit_errors(&mut self) -> bool {
        false
    }
}

/// Words (runs of letters and digits) in `s`.
pub(crate) fn count_words(s: &str) -> usize {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count()
}

/// [`count_words`], counted up to `n` at most (it reads `s` only as far
/// as its `n`th word).
pub(crate) fn count_words_upto(s: &str, n: usize) -> usize {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(n)
        .count()
}

/// An RGB colour.
type Rgb = [u8; 3];
const BLACK: Rgb = [0, 0, 0];
const WHITE: Rgb = [255, 255, 255];

/// One open element.
#[derive(Debug, Clone, Copy)]
struct Open {
    kind: Kind,
    /// Hash of the lower-cased name, to match end tags of unknown names.
    name: u64,
    /// This element or an ancestor is gone (`display:none`, zero opacity,
    /// off the screen, ...): no descendant can bring it back.
    gone: bool,
    /// `visibility:hidden` in force (inherited; a descendant with
    /// `visibility:visible` is shown).
    invisible: bool,
    /// A tiny font size in force (inherited; a descendant that sets an
    /// absolute size is shown, one with `em` or `%` of it is not).
    tiny: bool,
    /// This element or an ancestor is never shown (script, head, ...).
    never: bool,
    /// Inside `<pre>`: whitespace is kept.
    pre: bool,
    /// `direction: rtl` in force (inherited).
    rtl: bool,
    /// This element or an ancestor shows its text right to left in
    /// reverse order (`unicode-bidi: bidi-override` under `direction:
    /// rtl`, `<bdo dir=rtl>`).
    reversed: bool,
    /// This element starts such a reversed run: where its text starts in
    /// the visible and the full text (reversed, line by line, when it
    /// closes).
    reverse_from: Option<(usize, usize)>,
    fg: Rgb,
    bg: Rgb,
    /// The page font the text is set in (its place in `Targets::fonts`),
    /// inherited.
    font: Option<usize>,
}

impl Open {
    /// Hidden: gone, invisible or in a tiny font.
    fn hidden(&self) -> bool {
        self.gone || self.invisible || self.tiny
    }
}

/// The start tag being read.
struct StartTag {
    kind: Kind,
    name: u64,
    /// Gone (see [`Open::gone`]).
    hidden: bool,
    /// `visibility` set: hidden (`Some(true)`) or visible.
    visibility: Option<bool>,
    /// `font-size` set: tiny (`Some(true)`) or an absolute size that is
    /// not; `None` also for sizes relative to the parent's.
    tiny: Option<bool>,
    fg: Option<Rgb>,
    bg: Option<Rgb>,
    /// `direction` set by CSS: rtl (`Some(true)`) or ltr.
    rtl: Option<bool>,
    /// The `dir` attribute: rtl or ltr (CSS's `direction` comes first).
    dir: Option<bool>,
    /// `unicode-bidi` set: an override (`Some(true)`) or not; `<bdo>` is one.
    bidi_override: Option<bool>,
    /// `display` set: a flex or grid container (`Some(true)`) or not.
    flex: Option<bool>,
    /// `flex-direction` set: reversed (`Some(true)`) or not.
    flex_reverse: Option<bool>,
    /// `order` set (a flex or grid item's place among its siblings).
    order: Option<i32>,
    /// The family list of `font-family` (or of the `font` shorthand), lower
    /// case, as set last.
    family: Option<String>,
    /// The `face` of `<font>`.
    face: Option<String>,
    /// A flex or grid container sets its items apart (`gap`,
    /// `column-gap`, `justify-content: space-*`) or not.
    flex_gap: Option<bool>,
    /// An item sets itself apart from its neighbours (a horizontal margin
    /// or padding of a few pixels, or `auto`) or not.
    spaced: Option<bool>,
    href: Option<String>,
    src: Option<String>,
    /// An image's `src` when it is the picture itself (`data:image/...`),
    /// whole ([`MAX_DATA_CHARS`] at most).
    data_src: Option<String>,
    /// An image's `alt` text, or the `value` or `placeholder` of a form
    /// field (`input`): text shown in its place.
    alt: Option<String>,
    /// Which of `input` and `meta` it is (their attributes are read).
    special: Special,
    /// A `meta` element's `http-equiv` is `refresh`.
    refresh: bool,
    attributes: usize,
    /// With a sheet that generates content: the attributes `attr()` may
    /// name ([`MAX_KEPT_ATTRIBUTES`], each value [`MAX_VALUE`] at most).
    attrs: Vec<(String, String)>,
    /// With a sheet: the inline style (applied with the sheet's
    /// declarations when the tag closes) and what selectors see.
    style: Option<String>,
    info: Option<ElemInfo>,
    /// A `style` attribute was read.
    seen_style: bool,
    /// The text the sheet generates before and after its content
    /// (`::before` and `::after`), with the pseudo-element's own style.
    generated: [Option<(String, String)>; 2],
}

impl Default for StartTag {
    fn default() -> Self {
        StartTag {
            kind: Kind::Other,
            name: 0,
            hidden: false,
            visibility: None,
            tiny: None,
            fg: None,
            bg: None,
            rtl: None,
            dir: None,
            bidi_override: None,
            flex: None,
            flex_reverse: None,
            order: None,
            family: None,
            face: None,
            flex_gap: None,
            spaced: None,
            href: None,
            src: None,
            data_src: None,
            alt: None,
            special: Special::None,
            refresh: false,
            attributes: 0,
            attrs: Vec::new(),
            style: None,
            seen_style: false,
            generated: [None, None],
            info: None,
        }
    }
}

/// Elements whose attributes show text or a link.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Special {
    None,
    /// `<input>`: its `value` or `placeholder` is shown.
    Input,
    /// `<meta>`: `http-equiv="refresh"` sends the reader to its `content`'s
    /// URL.
    Meta,
}

/// Which attribute's value comes next.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Attr {
    Style,
    Hidden,
    Color,
    BgColor,
    Href,
    Src,
    Alt,
    HttpEquiv,
    Content,
    Dir,
    Class,
    Id,
    Face,
    Other,
}

/// Most attributes of one tag that are read.
const MAX_ATTRIBUTES: usize = 64;
/// Most attributes of one tag kept for `attr()` in generated content.
const MAX_KEPT_ATTRIBUTES: usize = 16;

struct Renderer<'t, 's> {
    /// The page fonts' families, each with its place in `Targets::fonts`.
    families: Vec<(String, usize)>,
    /// The document's style sheet rules that hide, if any.
    sheet: Option<&'s Sheet>,
    /// With a sheet: what selectors see of each element of `stack`.
    infos: Vec<ElemInfo>,
    /// With a sheet: what selectors see of the elements at the top.
    top_kids: Kids,
    /// With a sheet: elements opened so far (each one's number).
    opened: u32,
    /// What a first reading told of each element (selectors that look
    /// ahead), or what this reading records, when it is the first.
    ahead: Option<&'s Ahead>,
    record: Option<Ahead>,
    /// The attribute value next is kept for the sheet's attribute
    /// selectors (the last of `ElemInfo::attrs`).
    select_value: bool,
    /// The visible text.
    visible: String,
    /// Visible and hidden text, for the bound on hiding; `None` while no
    /// text has been hidden (it would equal `visible`), so documents
    /// without hidden text are written once.
    all: Option<String>,
    /// Reused buffer for a text run with its whitespace collapsed.
    scratch: String,
    limit: usize,
    stack: Vec<Open>,
    /// Elements opened past [`MAX_STACK`] and not yet closed.
    untracked: usize,
    tag: Option<StartTag>,
    attr: Attr,
    /// The attribute value next is kept for `attr()` (the last of
    /// `StartTag::attrs`).
    keep_value: bool,
    targets: &'t mut Targets,
    hidden_words: usize,
    /// Hosts of the links written into the text so far.
    link_hosts: Vec<String>,
    /// Text generated after open elements (`::after`): the element's depth
    /// in `stack`, the text, and whether it is shown.
    after: Vec<(usize, String, bool)>,
    /// Open flex and grid containers whose items are put in their `order`
    /// when they close.
    flex: Vec<Flex>,
}

/// Most flex or grid containers tracked at once (nested); deeper ones
/// show their items in source order.
const MAX_FLEX: usize = 32;
/// Most items of one container placed by `order`; later ones keep their
/// place in the source.
const MAX_FLEX_ITEMS: usize = 256;

/// An open flex or grid container: where its text starts in the visible
/// text, and each item's `order` and span of it.
struct Flex {
    depth: usize,
    start: usize,
    reverse: bool,
    /// Its items are set apart (`gap`, `justify-content: space-*`).
    gap: bool,
    /// The last item opened was set apart by its own margin or padding.
    last_spaced: bool,
    items: Vec<(i32, usize, usize)>,
    /// An item has an order other than 0 (else nothing moves).
    ordered: bool,
}

impl<'t, 's> Renderer<'t, 's> {
    fn new(
        families: Vec<(String, usize)>,
        sheet: Option<&'s Sheet>,
        visible: String,
        limit: usize,
        targets: &'t mut Targets,
    ) -> Self {
        Renderer {
            families,
            sheet,
            infos: Vec::new(),
            top_kids: Kids::default(),
            opened: 0,
            ahead: None,
            record: None,
            select_value: false,
            visible,
            all: None,
            limit,
            stack: Vec::new(),
            untracked: 0,
            tag: None,
            attr: Attr::Other,
            keep_value: false,
            targets,
            hidden_words: 0,
            scratch: String::new(),
            link_hosts: Vec::new(),
            after: Vec::new(),
            flex: Vec::new(),
        }
    }

    /// Reads `html` through, then ends the elements left open with the
    /// document (a reversed run among them is put in order).
    fn run(&mut self, html: &str) {
        let mut emitter =
            CallbackEmitter::new(|event: CallbackEvent<'_>, _: Span<()>| self.on(event));
        emitter.naively_switch_states(true);
        for stop in Tokenizer::new_with_emitter(html, Quiet(emitter)) {
            if stop.is_ok() {
                break;
            }
        }
        self.truncate(0);
    }
}

impl Renderer<'_, '_> {
    /// Handles one tokenizer event; `Some` stops the tokenizer (the text
    /// is full).
    fn on(&mut self, event: CallbackEvent<'_>) -> Option<()> {
        match event {
            CallbackEvent::OpenStartTag { name } => {
                let kind = Kind::of(name);
                self.tag = Some(StartTag {
                    kind,
                    name: name_hash(name),
                    // Ruby's fallback parentheses: `display: none` in
                    // every browser's own style sheet. Hidden, not never
                    // shown: an unclosed one is bounded like any hiding.
                    hidden: name == b"rp",
                    bidi_override: (name == b"bdo").then_some(true),
                    special: match name {
                        b"input" => Special::Input,
                        b"meta" => Special::Meta,
                        _ => Special::None,
                    },
                    info: self.sheet.map(|_| ElemInfo {
                        name: selected(name),
                        ..ElemInfo::default()
                    }),
                    ..StartTag::default()
                });
                self.attr = Attr::Other;
            }
            CallbackEvent::AttributeName { name } => {
                self.attr = Attr::Other;
                self.keep_value = false;
                self.select_value = false;
                if let Some(tag) = self.tag.as_mut() {
                    tag.attributes += 1;
                    // Only a sheet with attribute selectors keeps attributes
                    // (most name none: no name is copied then).
                    let selecting = self.sheet.filter(|s| s.selects_attributes());
                    if let (Some(sheet), Some(info)) = (selecting, tag.info.as_mut()) {
                        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
                        if info.attrs.len() < MAX_SELECTED_ATTRS
                            && sheet.names_attribute(&name)
                            && info.attrs.iter().all(|(n, _)| *n != name)
                        {
                            info.attrs.push((name, String::new()));
                            self.select_value = true;
                        }
                    }
                    if tag.attributes <= MAX_ATTRIBUTES {
                        self.attr = match (tag.special, name) {
                            (Special::Input, b"value" | b"placeholder") => Attr::Alt,
                            (Special::Meta, b"http-equiv") => Attr::HttpEquiv,
                            (Special::Meta, b"content") => Attr::Content,
                            _ => attr_of(name, tag.kind),
                        };
                        if self.attr == Attr::Hidden {
                            tag.hidden = true;
                        }
                        let generates = self.sheet.is_some_and(|s| s.generates);
                        if generates && tag.attrs.len() < MAX_KEPT_ATTRIBUTES {
                            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
                            tag.attrs.push((name, String::new()));
                            self.keep_value = true;
                        }
                    }
                }
            }
            CallbackEvent::AttributeValue { value } => self.attribute_value(value),
            CallbackEvent::CloseStartTag { self_closing } => {
                if let Some(tag) = self.tag.take() {
                    self.start_tag(tag, self_closing);
                }
            }
            CallbackEvent::EndTag { name } => {
                self.tag = None;
                self.end_tag(Kind::of(name), name_hash(name));
            }
            CallbackEvent::String { value } => match std::str::from_utf8(value) {
                Ok(text) => self.text(text),
                Err(_) => self.text(&String::from_utf8_lossy(value)),
            },
            CallbackEvent::Comment { .. }
            | CallbackEvent::Doctype { .. }
            | CallbackEvent::Error(_) => {}
        }
        let all_full = self.all.as_ref().is_none_or(|a| a.len() >= self.limit);
        (self.visible.len() >= self.limit && all_full).then_some(())
    }

    /// The value of the attribute [`Renderer::attr`] names, onto the tag.
    fn attribute_value(&mut self, value: &[u8]) {
        if let Some(tag) = self.tag.as_mut() {
            // A picture's `src` may be the picture itself (`data:`): kept
            // to its own bound, one past it so that a longer one is known.
            let cap = if self.attr == Attr::Src {
                MAX_DATA_CHARS + 1
            } else {
                MAX_VALUE
            };
            let value = value.get(..cap).unwrap_or(value);
            let value = String::from_utf8_lossy(value);
            if std::mem::take(&mut self.keep_value) {
                if let Some((_, kept)) = tag.attrs.last_mut() {
                    value.as_ref().clone_into(kept);
                }
            }
            if std::mem::take(&mut self.select_value) {
                let kept = tag.info.as_mut().and_then(|i| i.attrs.last_mut());
                if let Some((_, kept)) = kept {
                    *kept = selected(value.as_bytes());
                }
            }
            match self.attr {
                // A repeated attribute is dropped, as HTML5's
                // tokenizer drops it: the first one counts.
                Attr::Style if tag.seen_style => {}
                Attr::Style if tag.info.is_some() => {
                    tag.seen_style = true;
                    tag.style = Some(value.into_owned());
                }
                Attr::Style => {
                    tag.seen_style = true;
                    apply_style(&value, tag);
                }
                Attr::Class => {
                    if let Some(info) = tag.info.as_mut() {
                        info.class = selected(value.as_bytes());
                    }
                }
                Attr::Id => {
                    if let Some(info) = tag.info.as_mut() {
                        info.id = selected(value.trim().as_bytes());
                    }
                }
                Attr::Color => tag.fg = tag.fg.or(parse_colour(value.trim())),
                Attr::BgColor => tag.bg = parse_colour(value.trim()).or(tag.bg),
                Attr::Href => set_target(&mut tag.href, &value),
                Attr::Dir => match value.trim().to_ascii_lowercase().as_str() {
                    "rtl" => tag.dir = Some(true),
                    "ltr" => tag.dir = Some(false),
                    _ => {}
                },
                Attr::Src => set_src(tag, &value),
                Attr::Alt => set_target(&mut tag.alt, &value),
                Attr::HttpEquiv => tag.refresh = value.trim().eq_ignore_ascii_case("refresh"),
                Attr::Content => set_target(&mut tag.href, &value),
                Attr::Face => tag.face = Some(value.to_lowercase()),
                Attr::Hidden | Attr::Other => {}
            }
        }
        self.attr = Attr::Other;
    }

    fn top(&self) -> Open {
        self.stack.last().copied().unwrap_or(Open {
            kind: Kind::Other,
            name: 0,
            gone: false,
            invisible: false,
            tiny: false,
            never: false,
            pre: false,
            rtl: false,
            reversed: false,
            reverse_from: None,
            fg: BLACK,
            bg: WHITE,
            font: None,
        })
    }

    fn start_tag(&mut self, mut tag: StartTag, self_closing: bool) {
        let kind = tag.kind;
        // An unclosed <head> ends where the body's content starts.
        if !kind.in_head() {
            self.close_head();
        }
        self.imply_end_tags(kind);
        self.apply_sheet(&mut tag);
        let parent = self.top();
        let gone = parent.gone || tag.hidden;
        let invisible = tag.visibility.unwrap_or(parent.invisible);
        let tiny = tag.tiny.unwrap_or(parent.tiny);
        let hidden = gone || invisible || tiny;
        let never = parent.never || kind.never_shown();
        let shown = !hidden && !never;
        match kind {
            // A line break inside invisible or tiny text still breaks the
            // line the visible text is on; inside a box that is gone it
            // does not.
            Kind::Br => self.push_break("\n", !gone && !never),
            Kind::Td => self.push_space(),
            Kind::Img => self.image(&mut tag, shown, never),
            _ if tag.special != Special::None => self.special(&mut tag, shown),
            _ if kind.is_block() => self.push_break("\n\n", !never),
            _ => {}
        }
        if kind == Kind::A && shown {
            if let Some(href) = tag.href.take() {
                self.link(href);
            }
        }
        if kind.is_void() || (self_closing && kind.may_self_close()) {
            return;
        }
        if self.stack.len() >= MAX_STACK {
            self.untracked += 1;
            return;
        }
        if let Some(info) = tag.info.take() {
            self.infos.push(info);
        }
        let font = self.font_of(&tag, parent.font);
        let own_direction = tag.rtl.or(tag.dir);
        let rtl = own_direction.unwrap_or(parent.rtl);
        let reverses = !parent.reversed && rtl && tag.bidi_override == Some(true);
        // Inside a reversed run, a block (a paragraph of its own, which
        // the override does not reach) or an element set left to right
        // (an isolate) is shown in its own order: its text is turned back
        // when it closes, and the run's turn puts it right.
        let turns_back = parent.reversed && (kind.is_block() || own_direction == Some(false));
        let reverse_from = (reverses || turns_back).then(|| {
            let v = self.visible.len();
            (v, self.all.as_ref().map_or(v, String::len))
        });
        self.stack.push(Open {
            kind,
            name: tag.name,
            gone,
            invisible,
            tiny,
            never,
            pre: parent.pre || kind == Kind::Pre,
            rtl,
            reversed: parent.reversed || reverses,
            reverse_from,
            fg: tag.fg.unwrap_or(parent.fg),
            bg: tag.bg.unwrap_or(parent.bg),
            font,
        });
        self.open_flex(&tag);
        // Generated content is shown as the element's own text is.
        let shown = shown && !same_colour(tag.fg.unwrap_or(parent.fg), tag.bg.unwrap_or(parent.bg));
        let [before, after] = tag.generated;
        if let Some((before, style)) = before {
            let shown = shown && !hides(&style);
            self.generated_text(&before, shown);
        }
        if let Some((after, style)) = after {
            let shown = shown && !hides(&style);
            self.after.push((self.stack.len() - 1, after, shown));
        }
    }

    /// With a sheet: its rules for `tag`'s element (under its real parent,
    /// once the implied end tags are applied), then its inline style; the
    /// element joins its parent's children as the sheet sees them.
    fn apply_sheet(&mut self, tag: &mut StartTag) {
        if let (Some(sheet), Some(mut info)) = (self.sheet, tag.info.take()) {
            let parent = self.infos.last();
            info.number = self.opened;
            self.opened = self.opened.saturating_add(1);
            if let Some(record) = self.record.as_mut() {
                record.opened(parent.map(|p| p.number), tag.name);
            }
            if let Some(ahead) = self.ahead {
                ahead.fill(info.number, &mut info);
            }
            let kids = parent.map_or(&self.top_kids, |p| &p.kids);
            if let Some(record) = self.record.as_mut() {
                // A first reading: where the element is and what `:has()`
                // compounds it matches; its style is not needed.
                sheet.place(parent, kids, &mut info);
                record.matched(info.number, sheet.has_matches(&info));
            } else {
                let matched = sheet.open(parent, kids, &mut info);
                let inline = tag.style.take().unwrap_or_default();
                let style = sheet.style_for(&matched, &inline);
                if !style.is_empty() {
                    apply_style(&style, tag);
                }
                tag.generated = sheet.generated(&matched, &tag.attrs);
            }
            let kids = match self.infos.last_mut() {
                Some(p) => &mut p.kids,
                None => &mut self.top_kids,
            };
            sheet.add_kid(kids, &info);
            tag.info = Some(info);
        }
    }

    /// The page font in force for `tag` under a parent whose font is
    /// `parent`: CSS's `font-family` (or `font`), then the `<font face>`
    /// hint.
    fn font_of(&self, tag: &StartTag, parent: Option<usize>) -> Option<usize> {
        match tag.family.as_deref().or(tag.face.as_deref()) {
            Some(list) if !self.families.is_empty() => {
                drawn::font_in_force(list, &self.families).unwrap_or(parent)
            }
            _ => parent,
        }
    }

    /// A picture: its source among the targets, and the text a client
    /// shows in place of a remote one it does not load (most block them),
    /// its `alt`, read as hidden text is, so it counts only when the
    /// visible text is short (the bound on hiding, see `to_text`), as in a
    /// message that is a column of pictures.
    /// One written into the page (`data:`) is kept for the picture reader
    /// when shown.
    fn image(&mut self, tag: &mut StartTag, shown: bool, never: bool) {
        if let Some(data) = tag.data_src.take().filter(|_| shown) {
            self.data_picture(data);
        }
        let src = tag.src.take();
        if let Some(alt) = tag.alt.as_deref().filter(|_| shown) {
            let remote = src.as_deref().is_some_and(|s| {
                let s = s.trim_start().to_ascii_lowercase();
                s.starts_with("http:") || s.starts_with("https:") || s.starts_with("//")
            });
            if remote {
                self.stand_in(alt);
            }
        }
        if let Some(src) = src {
            if !never && self.targets.images.len() < MAX_IMAGES {
                self.targets.images.push(src);
            }
        }
    }

    /// A picture written into the page (`data:image/...`), kept whole for
    /// the picture reader: at most [`MAX_DATA_PICTURES`] a message, of
    /// [`MAX_DATA_CHARS`] in all.
    fn data_picture(&mut self, data: String) {
        let t = &mut self.targets;
        let used: usize = t.data_pictures.iter().map(String::len).sum();
        if t.data_pictures.len() < MAX_DATA_PICTURES && used + data.len() <= MAX_DATA_CHARS {
            t.data_pictures.push(data);
        }
    }

    /// A form field's text stands in its place, read as alt text is (only
    /// under a short visible text); `<meta http-equiv=refresh
    /// content="0;url=...">` sends the reader on at once (a phishing
    /// page's redirect): its target is the page's link.
    fn special(&mut self, tag: &mut StartTag, shown: bool) {
        match tag.special {
            Special::Input => {
                if let Some(value) = tag.alt.as_deref().filter(|_| shown) {
                    self.stand_in(value);
                }
            }
            Special::Meta if tag.refresh => {
                if let Some(url) = tag.href.take().as_deref().and_then(refresh_url) {
                    self.link(url);
                }
            }
            _ => {}
        }
    }

    /// Text shown in place of something (a picture's alt text, a form
    /// field's value): read as hidden text is, so it counts only when the
    /// visible text is short.
    fn stand_in(&mut self, text: &str) {
        if text.chars().any(char::is_alphanumeric) {
            self.push_space_in(false);
            self.push_text(text, false);
            self.push_space_in(false);
            self.hidden_words += count_words(text);
        }
    }

    /// A shown link: its target among the targets, and in the text once
    /// per host for at most [`MAX_LINK_HOSTS`] hosts (a link on every
    /// word, each to its own query or host, would otherwise outweigh the
    /// text).
    fn link(&mut self, href: String) {
        let host = (self.link_hosts.len() < MAX_LINK_HOSTS)
            .then(|| url_host(&href).unwrap_or(&href).to_ascii_lowercase())
            .filter(|h| !self.link_hosts.contains(h));
        if let Some(host) = host {
            self.link_hosts.push(host);
            self.push_text(" ", true);
            self.push_text(&href, true);
            self.push_text(" ", true);
        }
        if self.targets.urls.len() < MAX_URLS {
            self.targets.urls.push(href);
        }
    }

    fn end_tag(&mut self, kind: Kind, name: u64) {
        if self.untracked > 0 {
            self.untracked -= 1;
            return;
        }
        if kind == Kind::Br {
            // `</br>` is read as `<br>` (HTML5 tree construction).
            let top = self.top();
            self.push_break("\n", !top.gone && !top.never);
            return;
        }
        // The element the end tag closes. An inline end tag closes nothing
        // across a block, and no end tag but a table's own reaches out of
        // a table (HTML5: "any other end tag" stops at a special element).
        let mut close = None;
        for (i, open) in self.stack.iter().enumerate().rev() {
            if open.name == name {
                close = Some(i);
                break;
            }
            if (kind.is_inline() && !open.kind.is_inline())
                || (open.kind == Kind::Table && kind != Kind::Table)
            {
                break;
            }
        }
        if let Some(pos) = close {
            self.truncate(pos);
        }
        if kind.is_block() {
            let never = self.top().never;
            self.push_break("\n\n", !never);
        } else if kind == Kind::Td {
            self.push_space();
        }
    }

    /// Closes the open elements from `len` on; a reversed run among them
    /// is put in the order it is shown.
    fn truncate(&mut self, len: usize) {
        for depth in (len..self.stack.len()).rev() {
            while let Some((_, text, shown)) = self.after.pop_if(|(d, _, _)| *d >= depth) {
                self.generated_text(&text, shown);
            }
            self.close_flex(depth);
            if let Some((visible, all)) = self.stack.get(depth).and_then(|o| o.reverse_from) {
                reverse_lines(&mut self.visible, visible);
                if let Some(a) = self.all.as_mut() {
                    reverse_lines(a, all);
                }
            }
        }
        self.stack.truncate(len);
        self.infos.truncate(len);
    }

    /// Called when `tag`'s element was pushed on the stack: it starts a
    /// flex item (of its `order`) of the container it is in, or a
    /// container (its items shown reversed, set apart by a gap).
    ///
    /// Items set apart (by the container's gap or their own margin or
    /// padding) are words apart, as a person sees them, even with no white
    /// space between them in the source; items that touch are read
    /// touching, as they are shown (`<span>Vi</span><span>agra</span>`).
    fn open_flex(&mut self, tag: &StartTag) {
        let depth = self.stack.len() - 1;
        let spaced = tag.spaced == Some(true);
        let apart = self
            .flex
            .last_mut()
            .filter(|f| f.depth + 1 == depth)
            .is_some_and(|f| {
                let apart = !f.items.is_empty() && (f.gap || spaced || f.last_spaced);
                f.last_spaced = spaced;
                apart
            });
        if apart && !self.top().gone && !self.top().never {
            self.push_space();
        }
        let at = self.visible.len();
        if let Some(f) = self.flex.last_mut().filter(|f| f.depth + 1 == depth) {
            if f.items.len() < MAX_FLEX_ITEMS {
                let order = tag.order.unwrap_or(0);
                f.ordered |= order != 0;
                f.items.push((order, at, usize::MAX));
            }
        }
        if tag.flex == Some(true) && self.flex.len() < MAX_FLEX {
            self.flex.push(Flex {
                depth,
                start: at,
                reverse: tag.flex_reverse == Some(true),
                gap: tag.flex_gap == Some(true),
                last_spaced: false,
                items: Vec::new(),
                ordered: false,
            });
        }
    }

    /// Called when the element at `depth` closes: it ends a flex item, or
    /// a container, whose items are then put in the order shown
    /// (`order`, then the source; reversed for `flex-direction: *-reverse`).
    /// The full text keeps the source order.
    fn close_flex(&mut self, depth: usize) {
        // A container closes (its items put in order) before it ends an
        // item of the container it is in.
        if self.flex.last().is_some_and(|f| f.depth == depth) {
            if let Some(f) = self.flex.pop().filter(|f| f.ordered || f.reverse) {
                if let Some(shown) = flex_order(&self.visible, &f) {
                    self.visible.truncate(f.start);
                    self.visible.push_str(&shown);
                }
            }
        }
        let at = self.visible.len();
        if let Some(f) = self.flex.last_mut().filter(|f| f.depth + 1 == depth) {
            if let Some(item) = f.items.last_mut().filter(|i| i.2 == usize::MAX) {
                item.2 = at;
            }
        }
    }

    /// Pops an open `<head>` (with anything left open inside it).
    fn close_head(&mut self) {
        if let Some(pos) = self.stack.iter().rposition(|o| o.kind == Kind::Head) {
            self.truncate(pos);
        }
    }

    /// The end tags HTML5 tree construction implies before a start tag of
    /// `kind`: open paragraphs before a block, open list items, cells, rows
    /// and options before another of theirs.
    fn imply_end_tags(&mut self, kind: Kind) {
        if kind.closes_p() {
            self.close_within(&[Kind::P], Kind::is_scope_boundary);
        }
        match kind {
            Kind::Li => self.close_within(&[Kind::Li], |k| {
                k.is_scope_boundary() || matches!(k, Kind::List)
            }),
            Kind::Dd => self.close_within(&[Kind::Dd], Kind::is_scope_boundary),
            Kind::Td => self.close_within(&[Kind::Td], |k| k == Kind::Table || k == Kind::Tr),
            Kind::Tr => self.close_within(&[Kind::Td, Kind::Tr], |k| k == Kind::Table),
            Kind::Option => self.close_within(&[Kind::Option], |k| k == Kind::Select),
            _ => {}
        }
    }

    /// Pops up to and including the nearest open element of one of `kinds`,
    /// looking no deeper than the first element for which `boundary`
    /// holds.
    fn close_within(&mut self, kinds: &[Kind], boundary: impl Fn(Kind) -> bool) {
        for i in (0..self.stack.len()).rev() {
            let Some(k) = self.stack.get(i).map(|o| o.kind) else {
                return;
            };
            if kinds.contains(&k) {
                self.truncate(i);
                return;
            }
            if boundary(k) {
                return;
            }
        }
    }

    fn text(&mut self, raw: &str) {
        if let (Some(record), Some(info)) = (self.record.as_mut(), self.infos.last()) {
            record.text_in(info.number);
        }
        let top = self.top();
        if top.kind == Kind::Head && raw.bytes().any(|b| !b.is_ascii_whitespace()) {
            // Text in <head> starts the body.
            self.close_head();
            return self.text(raw);
        }
        if top.never {
            return;
        }
        let shown = !top.hidden() && !same_colour(top.fg, top.bg);
        if !shown && !top.gone && !top.tiny && raw.bytes().any(|b| b.is_ascii_whitespace()) {
            // Invisible text still takes its place on the line: the
            // visible words around it stay apart.
            self.push_space_in(true);
        }
        if top.pre {
            self.push_text(raw, shown);
            return;
        }
        // Collapse whitespace as a browser renders it: the words joined by
        // one space, a space before and after where the run has whitespace
        // there.
        let bytes = raw.as_bytes();
        let lead = bytes.first().is_some_and(u8::is_ascii_whitespace);
        let trail = bytes.last().is_some_and(u8::is_ascii_whitespace);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut start = None;
        for (i, b) in bytes
            .iter()
            .enumerate()
            .chain(std::iter::once((bytes.len(), &b' ')))
        {
            match (b.is_ascii_whitespace(), start) {
                (false, None) => start = Some(i),
                (true, Some(st)) => {
                    if !scratch.is_empty() {
                        scratch.push(' ');
                    }
                    // Word boundaries are ASCII bytes: character boundaries.
                    scratch.push_str(raw.get(st..i).unwrap_or(""));
                    start = None;
                }
                _ => {}
            }
        }
        if lead || scratch.is_empty() {
            self.push_space_in(shown);
        }
        if !scratch.is_empty() {
            self.push_text(&scratch, shown);
            if trail {
                self.push_space_in(shown);
            }
        }
        self.scratch = scratch;
        if !shown {
            self.hidden_words += count_words(raw);
        }
    }

    /// Text generated by the sheet (`content`), where its element puts it.
    fn generated_text(&mut self, text: &str, shown: bool) {
        if text.is_empty() {
            return;
        }
        self.push_text(text, shown);
        if !shown {
            self.hidden_words += count_words(text);
        }
    }

    /// The full text, created from the visible text when something is
    /// first hidden.
    fn all(&mut self) -> &mut String {
        let visible = &self.visible;
        self.all.get_or_insert_with(|| visible.clone())
    }

    /// Appends `s` to the full text, and to the visible text when `shown`;
    /// as a run of its page font where one is in force
    /// ([`drawn::run`]). The marks of runs are cleared from what the
    /// sender wrote.
    fn push_text(&mut self, s: &str, shown: bool) {
        let lim = self.limit;
        let run;
        let s = match self.stack.last().and_then(|o| o.font) {
            Some(font) => {
                run = drawn::run(font, s);
                std::borrow::Cow::Borrowed(run.as_str())
            }
            None => drawn::clear_marks(s),
        };
        let s = s.as_ref();
        if shown {
            push_bounded(&mut self.visible, s, lim);
            if let Some(all) = self.all.as_mut() {
                push_bounded(all, s, lim);
            }
        } else {
            push_bounded(self.all(), s, lim);
        }
    }

    /// A word break: one space, unless the text already ends in whitespace.
    fn push_space(&mut self) {
        self.push_space_in(true);
    }

    fn push_space_in(&mut self, shown: bool) {
        let lim = self.limit;
        let add = |s: &mut String| {
            if !s.is_empty() && !s.ends_with([' ', '\n']) && s.len() < lim {
                s.push(' ');
            }
        };
        if shown {
            add(&mut self.visible);
            if let Some(all) = self.all.as_mut() {
                add(all);
            }
        } else {
            add(self.all());
        }
    }

    /// A line (`"\n"`) or paragraph (`"\n\n"`) break, in the full text and,
    /// when `shown`, in the visible text.
    fn push_break(&mut self, br: &str, shown: bool) {
        let lim = self.limit;
        let add = |s: &mut String| {
            if s.is_empty() || s.ends_with("\n\n") {
                return;
            }
            while s.ends_with(' ') {
                s.pop();
            }
            let piece = if br == "\n" || s.ends_with('\n') {
                "\n"
            } else {
                br
            };
            // Found by the html fuzz target: a paragraph break one byte
            // short of the bound overshot it.
            if s.len() + piece.len() <= lim {
                s.push_str(piece);
            }
        };
        if shown {
            add(&mut self.visible);
            if let Some(all) = self.all.as_mut() {
                add(all);
            }
        } else {
            add(self.all());
        }
    }
}

/// The text of the flex container `f` (from `f.start` of `text`) with its
/// items in the order shown (`order`, then the source; reversed for a
/// reversed direction), put into the items' places: the text between
/// items (breaks, spaces) stays where it is. `None` when a span is out of
/// the text (cut at the bound).
fn flex_order(text: &str, f: &Flex) -> Option<String> {
    let tail = text.get(f.start..)?;
    let mut gaps: Vec<&str> = Vec::new();
    let mut items: Vec<(i32, &str)> = Vec::new();
    let mut pos = f.start;
    // Where the gap before the next item starts: an item that shows no
    // text (hidden, or only breaks) is part of the gap around it, so the
    // breaks it stood between stay between the items shown.
    let mut gap_from = f.start;
    for &(order, start, end) in &f.items {
        let end = if end == usize::MAX { text.len() } else { end };
        if start < pos || end < start {
            return None;
        }
        let item = text.get(start..end)?;
        pos = end;
        if item.trim().is_empty() {
            continue;
        }
        gaps.push(text.get(gap_from..start)?);
        items.push((order, item));
        gap_from = end;
    }
    gaps.push(text.get(gap_from..)?);
    items.sort_by_key(|i| i.0);
    if f.reverse {
        items.reverse();
    }
    let mut out = String::with_capacity(tail.len());
    for (gap, (_, item)) in gaps.iter().zip(&items) {
        out.push_str(gap);
        out.push_str(item);
    }
    out.push_str(gaps.last()?);
    Some(out)
}

/// The URL of a refresh's `content` (`5; url=https://...`, quotes
/// allowed), if it names one.
fn refresh_url(content: &str) -> Option<String> {
    let at = content.to_ascii_lowercase().find("url")?;
    let rest = content
        .get(at + 3..)?
        .trim_start()
        .strip_prefix('=')?
        .trim();
    let url = rest.trim_matches(|c| c == '\'' || c == '"').trim();
    (!url.is_empty()).then(|| url.to_owned())
}

/// A pseudo-element's own style hides its content (`display: none`,
/// `visibility: hidden`, a tiny font, no opacity, a transparent colour,
/// ...: what hides an element).
fn hides(style: &str) -> bool {
    if style.is_empty() {
        return false;
    }
    let mut tag = StartTag::default();
    apply_style(style, &mut tag);
    tag.hidden || tag.visibility == Some(true) || tag.tiny == Some(true)
}

/// Reverses the characters of each line of `text` from byte `from` on
/// (from the start of the line `from` is in, when it is no character
/// boundary): text shown right to left in reverse order
/// (`bidi-override`), lines kept top to bottom.
fn reverse_lines(text: &mut String, mut from: usize) {
    while from > 0 && !text.is_char_boundary(from) {
        from -= 1;
    }
    let Some(tail) = text.get(from..) else {
        return;
    };
    if tail.is_empty() {
        return;
    }
    let reversed: Vec<String> = tail
        .split('\n')
        .map(|line| line.chars().rev().collect())
        .collect();
    text.truncate(from);
    text.push_str(&reversed.join("\n"));
}

/// Keeps the first non-empty value of a link or image attribute, cut to
/// [`MAX_TARGET_CHARS`].
/// An image's `src`: among the targets (cut), and whole when it is the
/// picture itself (`data:image/...`, at most [`MAX_DATA_CHARS`]).
fn set_src(tag: &mut StartTag, value: &str) {
    set_target(&mut tag.src, value);
    let v = value.trim();
    let data = v
        .get(..11)
        .is_some_and(|p| p.eq_ignore_ascii_case("data:image/"));
    if data && v.len() <= MAX_DATA_CHARS && tag.data_src.is_none() {
        tag.data_src = Some(v.to_owned());
    }
}

fn set_target(slot: &mut Option<String>, value: &str) {
    let v = value.trim();
    if slot.is_none() && !v.is_empty() {
        *slot = Some(v.chars().take(MAX_TARGET_CHARS).collect());
    }
}

/// FNV-1a of a (lower-cased, as html5gum gives it) tag name.
/// A name, class or id as selectors compare it: lower case, at most
/// [`MAX_SELECTED`] bytes.
fn selected(v: &[u8]) -> String {
    String::from_utf8_lossy(v.get(..MAX_SELECTED).unwrap_or(v)).to_lowercase()
}

fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3)
    })
}

fn attr_of(name: &[u8], kind: Kind) -> Attr {
    match name {
        b"style" => Attr::Style,
        b"hidden" => Attr::Hidden,
        b"color" if kind == Kind::Font => Attr::Color,
        b"face" if kind == Kind::Font => Attr::Face,
        b"bgcolor" => Attr::BgColor,
        b"href" if kind == Kind::A => Attr::Href,
        b"dir" => Attr::Dir,
        b"src" if kind == Kind::Img => Attr::Src,
        b"alt" if kind == Kind::Img => Attr::Alt,
        b"class" => Attr::Class,
        b"id" => Attr::Id,
        _ => Attr::Other,
    }
}

/// The element kinds whose behaviour differs; every other name is
/// [`Kind::Other`] (an inline element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    A,
    Br,
    Img,
    Font,
    P,
    Pre,
    /// `ul`, `ol`, `menu`, `dir`.
    List,
    Li,
    /// `dd` and `dt`.
    Dd,
    Table,
    Tr,
    /// `td` and `th`.
    Td,
    Select,
    Option,
    Head,
    /// Void elements of `<head>` (meta, link, base, ...).
    HeadContent,
    /// Content never shown: script, style, title, template, ...
    Never,
    /// Void elements with no special meaning (`hr` is a block).
    Void,
    Hr,
    /// Block elements that close an open `<p>`.
    Block,
    /// Block elements that do not close `<p>` (`tbody`, `caption`, ...)
    /// or that are scope boundaries (`html`, `body`).
    OtherBlock,
    Other,
}

impl Kind {
    fn of(name: &[u8]) -> Kind {
        match name {
            b"a" => Kind::A,
            b"br" => Kind::Br,
            b"img" | b"image" => Kind::Img,
            b"font" => Kind::Font,
            b"p" => Kind::P,
            b"pre" | b"listing" | b"xmp" | b"plaintext" => Kind::Pre,
            b"ul" | b"ol" | b"menu" | b"dir" => Kind::List,
            b"li" => Kind::Li,
            b"dd" | b"dt" => Kind::Dd,
            b"table" => Kind::Table,
            b"tr" => Kind::Tr,
            b"td" | b"th" => Kind::Td,
            b"select" => Kind::Select,
            b"option" => Kind::Option,
            b"head" => Kind::Head,
            b"meta" | b"link" | b"base" | b"basefont" | b"bgsound" => Kind::HeadContent,
            // The tokenizer reads the content of these as raw text up to
            // their end tag, as a browser's does; none of it is shown.
            b"script" | b"style" | b"title" | b"template" | b"iframe" | b"noembed"
            | b"noframes" => Kind::Never,
            b"area" | b"col" | b"embed" | b"input" | b"param" | b"source" | b"track" | b"wbr"
            | b"keygen" => Kind::Void,
            b"hr" => Kind::Hr,
            b"div" | b"address" | b"article" | b"aside" | b"blockquote" | b"center"
            | b"details" | b"dialog" | b"dl" | b"fieldset" | b"figcaption" | b"figure"
            | b"footer" | b"form" | b"h1" | b"h2" | b"h3" | b"h4" | b"h5" | b"h6" | b"header"
            | b"hgroup" | b"main" | b"nav" | b"section" | b"summary" => Kind::Block,
            b"html" | b"body" | b"caption" | b"tbody" | b"thead" | b"tfoot" | b"legend"
            | b"textarea" | b"button" | b"marquee" | b"applet" => Kind::OtherBlock,
            _ => Kind::Other,
        }
    }

    fn is_block(self) -> bool {
        self.closes_p() || matches!(self, Kind::Tr | Kind::OtherBlock)
    }

    fn closes_p(self) -> bool {
        matches!(
            self,
            Kind::P
                | Kind::Pre
                | Kind::List
                | Kind::Li
                | Kind::Dd
                | Kind::Table
                | Kind::Hr
                | Kind::Block
        )
    }

    /// Ends the search for an element to close (HTML5's "scope").
    fn is_scope_boundary(self) -> bool {
        matches!(
            self,
            Kind::Table | Kind::Td | Kind::OtherBlock | Kind::Never
        )
    }

    fn is_void(self) -> bool {
        matches!(
            self,
            Kind::Br | Kind::Img | Kind::Void | Kind::Hr | Kind::HeadContent
        )
    }

    /// `<x/>` is an element without content only for names HTML does not
    /// know (foreign content: svg's `<path/>`); on HTML's own elements the
    /// slash is ignored, as browsers ignore it (and the tokenizer reads
    /// `<script/>`'s content as script).
    fn may_self_close(self) -> bool {
        self == Kind::Other
    }

    /// Inline elements: their end tag closes nothing across a block.
    fn is_inline(self) -> bool {
        matches!(self, Kind::A | Kind::Font | Kind::Other)
    }

    fn never_shown(self) -> bool {
        matches!(self, Kind::Never | Kind::Head | Kind::HeadContent)
    }

    fn in_head(self) -> bool {
        matches!(self, Kind::Head | Kind::HeadContent | Kind::Never)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(html: &str) -> (String, Targets) {
        let mut out = String::new();
        let mut targets = Targets::default();
        to_text(html, &mut out, &mut targets, 1 << 20);
        (out, targets)
    }

    fn text(html: &str) -> String {
        render(html).0
    }

    /// Words of `s`, for comparisons that do not depend on line breaks.
    fn words(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    /// Enough visible words that hidden text is dropped.
    const FILLER: &str = "one two three four five six seven eight nine ten eleven twelve \
        thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty \
        twentyone twentytwo twentythree twentyfour twentyfive";

    /// A tag of many double-quoted attributes. html5gum 0.9.0 nested one
    /// set of stack frames per attribute: 7,000 overflowed a 2 MiB stack
    /// and aborted the process (vendor/html5gum/PATCH.md). Read on a
    /// 256 KiB stack: a million attributes (7 MB), as any other tag, and
    /// the text after it is there.
    #[test]
    fn a_million_attributes_on_one_tag_fit_a_small_stack() {
        let mut html = String::from("<div ");
        for i in 0..1_000_000 {
            html.push('a');
            html.push_str(&i.to_string());
            html.push_str("=\"x\" ");
        }
        html.push_str(">hello after the tag</div><p b=\"1\" c='2' d=3>and more</p>");
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || text(&html))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(words(&t), ["hello", "after", "the", "tag", "and", "more"]);
    }

    /// The issue's cases: a stray quote in an attribute and a byte-order
    /// mark with a malformed tag next to it made the old scanner drop
    /// everything after them; a browser shows every word.
    #[test]
    fn malformed_attributes_do_not_hide_the_rest() {
        let t = text("<table width=\"100%\"\"><tr><td>Your account is locked</td></tr></table><p>Verify now</p>");
        assert_eq!(
            words(&t),
            ["Your", "account", "is", "locked", "Verify", "now"]
        );
        let t = text("\u{feff}<p class=\">Dear customer</p><div style=\"color:#000\"\">please confirm your details</div>");
        assert!(t.contains("please confirm your details"), "{t:?}");
        let t = text("<p title='a>b'>c</p><p title=\"d>e\">f</p>");
        assert_eq!(words(&t), ["c", "f"]);
    }

    #[test]
    fn inline_elements_comments_and_references_do_not_split_words() {
        assert_eq!(
            text("<span>F</span><span>R</span>EE <b>of</b><i>fer</i>"),
            "FREE offer"
        );
        assert_eq!(
            text("F&#82;EE &#x4f;FFER caf&eacute; caf&eacute &amp;"),
            "FREE OFFER café café &"
        );
        assert_eq!(
            text("FR<!-- x -->EE va<!---->lued a<!-->b"),
            "FREE valued ab"
        );
        assert_eq!(text("lo<wbr>ng wo<font color=red>rd</font>"), "long word");
    }

    #[test]
    fn blocks_break_and_whitespace_collapses() {
        assert_eq!(
            text("<p>one\n\n\ntwo</p><p>three</p>"),
            "one two\n\nthree\n\n"
        );
        assert_eq!(text("a<br>b<br/>c</br>d"), "a\nb\nc\nd");
        assert_eq!(
            text("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"),
            "a b\n\nc\n\n"
        );
        assert_eq!(text("<pre>x\n  y</pre>"), "x\n  y\n\n");
    }

    #[test]
    fn hidden_text_is_dropped() {
        let t = text(&format!(
            "{FILLER} buy <span style=\"display: none\">zebra</span>now \
             <font color=\"#FFFFFF\">quux</font><span style='font-size:0px'>x1</span>\
             <div style=\"color:white\">wh</div><p style=\"background-color:#fff\">seen</p>\
             <span hidden>hid</span><span style=\"visibility:hidden\">vis</span>\
             <div style=\"max-height:0;overflow:hidden\">pre</div>"
        ));
        for w in ["buy", "now", "seen"] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in ["zebra", "quux", "x1", "wh", "hid", "vis", "pre"] {
            assert!(!t.contains(w), "{w}: {t}");
        }
    }

    /// Text moved off the page, clipped or scaled away, or drawn in a
    /// colour without alpha is hidden; the same properties with values
    /// that leave it on the page are not.
    #[test]
    fn text_moved_clipped_or_transparent_is_hidden() {
        let hidden = [
            "color:transparent",
            "color: rgba(255, 255, 255, 0)",
            "color: rgb(0 0 0 / 0%)",
            "color:#ffffff00",
            "-webkit-text-fill-color: transparent",
            "position:absolute; left:-9999px",
            "position: fixed; top: -5000px",
            "position:absolute; right: 100vw",
            "position:absolute; left: 2000px",
            "position:absolute; top: -600px",
            "text-indent:-10000px",
            "margin-left: -999em",
            "position:absolute; clip: rect(0 0 0 0)",
            "position:absolute; clip: rect(1px, 1px, 1px, 1px)",
            "clip-path: inset(50%)",
            "clip-path: circle(0)",
            "transform: scale(0)",
            "transform: translateX(-9999px)",
            "font-size: 1%",
            "filter: opacity(0)",
        ];
        for style in hidden {
            let t = text(&format!("{FILLER} <span style=\"{style}\">zebra</span>"));
            assert!(!t.contains("zebra"), "{style}: {t}");
        }
        let shown = [
            "color: rgba(0, 0, 0, 0.8)",
            "color:#000000ff",
            "left:-9999px",
            "position:absolute; left: 20px",
            // On a reading pane: far from the origin is not off the page.
            "position:absolute; left: 620px; top: 40px",
            "position:absolute; top: 900px",
            "position:absolute; right: 700px",
            "position:relative; top:-3px",
            "text-indent: 2em",
            "margin-left: 9999px",
            "clip: rect(0, 100px, 20px, 0)",
            "clip: rect(auto, auto, auto, auto)",
            "clip-path: inset(10%)",
            "transform: scale(1.5)",
            "transform: translateX(10px)",
            "font-size: 90%",
            "filter: opacity(0.9)",
        ];
        for style in shown {
            let t = text(&format!("{FILLER} <span style=\"{style}\">zebra</span>"));
            assert!(t.contains("zebra"), "{style}: {t}");
        }
    }

    /// The page's style sheet hides as an inline style does, in the
    /// cascade's order, and within the same bound.
    #[test]
    fn text_hidden_by_the_style_sheet_is_hidden() {
        let t = text(&format!(
            "<html><head><style>.x {{ display: none }} #k {{ font-size: 0 }}\
             div em {{ visibility: hidden }} .w {{ color: #fff }}\
             .y {{ display: none !important }}</style></head><body>\
             <p>{FILLER}</p><span class=\"a x\">zebra</span><b id=k>quux</b>\
             <div><em>emu</em></div><em>seen</em><span class=w>wh</span>\
             <span class=x style=\"display:inline\">shown</span>\
             <span class=y style=\"display:inline\">yak</span></body></html>"
        ));
        for w in ["seen", "shown", "twelve"] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in ["zebra", "quux", "emu", "wh", "yak"] {
            assert!(!t.contains(w), "{w}: {t}");
        }
        // A sheet that hides the whole text is bounded like any hiding.
        let all = text(&format!(
            "<style>p{{display:none}}</style><p>{FILLER}</p><p>seen</p>"
        ));
        assert!(all.contains("twelve") && all.contains("seen"), "{all}");
        // A `<style>` in a comment is no sheet.
        let commented = text(&format!(
            "<!-- <style>.x{{display:none}}</style> --><p>{FILLER}</p><span class=x>zebra</span>"
        ));
        assert!(commented.contains("zebra"), "{commented}");
    }

    /// A rule reaches the elements a browser's selector reaches: long
    /// selectors, sibling combinators, places, attributes and escapes; and
    /// no more: a rule a browser drops, or one that looks ahead, hides
    /// nothing.
    #[test]
    fn the_sheet_reaches_what_a_browsers_selector_reaches() {
        let t = text(&format!(
            "<style>#o .c p span{{display:none}} h3+p{{font-size:0}} h4~i{{color:#fff}}\
             .list li:nth-child(2n+1){{visibility:hidden}} [data-j$=\"nk\"]{{display:none}}\
             .\\6a unk{{display:none}} p:not(.keep)>u{{display:none}}\
             b:is(.q1,.q2)::after{{content:\" gen\"}} td:first-of-type{{opacity:0}}</style>\
             <p class=keep>{FILLER}</p>\
             <div id=o><div class=c><p><span>aardvark</span>visible1</p></div></div>\
             <h3>head</h3><p>badger</p><p>visible2</p>\
             <h4>h</h4><br><i>cobra</i>\
             <ul class=list><li>dingo</li><li>visible3</li><li>eland</li></ul>\
             <em data-j=jUNK>ferret</em><em data-j=junky>visible4</em>\
             <s class=junk>gecko</s><p><u>heron</u></p><p class=keep><u>visible5</u></p>\
             <b class=q2>x</b><table><tr><td>ibis</td><td>visible6</td></tr></table>"
        ));
        for w in [
            "visible1", "visible2", "visible3", "visible4", "visible5", "visible6",
        ] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in [
            "aardvark", "badger", "cobra", "dingo", "eland", "ferret", "gecko", "heron", "ibis",
        ] {
            assert!(!t.contains(w), "{w}: {t}");
        }
        assert!(t.contains("gen"), "{t}");
        // A list with a selector no browser reads is dropped whole; one
        // this reader does not evaluate (`:has()` of two compounds) hides
        // nothing.
        let t = text(&format!(
            "<style>p:bogus,.a{{display:none}} li:has(p b){{display:none}}</style>\
             <p>{FILLER}</p><span class=a>jackal</span><ul><li><b>kiwi</b></li></ul>"
        ));
        assert!(t.contains("jackal") && t.contains("kiwi"), "{t}");
    }

    /// Selectors that look ahead of the element (its later siblings, its
    /// content) reach what a browser's reach: the page is read twice.
    #[test]
    fn selectors_that_look_ahead_reach_what_a_browsers_reach() {
        let t = text(&format!(
            "<style>li:last-child{{display:none}} td:nth-last-child(2){{font-size:0}}\
             p span:only-child{{visibility:hidden}} i:empty+b{{display:none}}\
             em:last-of-type{{display:none}} div.k:only-of-type{{opacity:0}}</style>\
             <p>{FILLER}</p><ul><li>seen1</li><li>seen2</li><li>lark</li>\n</ul>\
             <table><tr><td>seen3</td><td>mole</td><td>seen4</td></tr></table>\
             <p><span>newt</span></p><p><span>seen5</span><span>seen6</span></p>\
             <p><i></i><b>owl</b><i> </i><b>seen7</b></p>\
             <p><em>seen8</em><u>x</u><em>puma</em><u>seen9</u></p>\
             <section><div class=k>quail</div><p>y</p></section>"
        ));
        for w in [
            "seen1", "seen2", "seen3", "seen4", "seen5", "seen6", "seen7", "seen8", "seen9",
        ] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in ["lark", "mole", "newt", "owl", "puma", "quail"] {
            assert!(!t.contains(w), "{w}: {t}");
        }
        // `:has()`: a descendant, a child, the next element, a later one.
        let t = text(&format!(
            "<style>div:has(i.m){{display:none}} p:has(> b.m){{font-size:0}}\
             span:has(+ u.m){{visibility:hidden}} em:has(~ s.m){{display:none}}\
             section:not(:has(img)){{opacity:0}}</style><p>{FILLER}</p>\
             <div><p>rook <span><i class=m></i></span></p></div><div><p>seen1 <i>x</i></p></div>\
             <p>swan <b class=m>!</b></p><p>seen2 <span><b class=m>!</b></span></p>\
             <p><span>tern</span><u class=m></u><span>seen3</span><u></u></p>\
             <p><em>urchin</em><a>seen4</a><s class=m></s><em>seen5</em></p>\
             <section>vole</section><section><img src=x.png>seen6</section>"
        ));
        for w in ["seen1", "seen2", "seen3", "seen4", "seen5", "seen6"] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in ["rook", "swan", "tern", "urchin", "vole"] {
            assert!(!t.contains(w), "{w}: {t}");
        }
    }

    /// What a review found a sender could write: statements and comment
    /// markers before the first rule, a page without `<body>`, a first
    /// reading stopped where the text fills, places not known past the
    /// bounds, attribute names repeated, selectors cut short.
    #[test]
    fn the_sheet_holds_where_a_review_pushed() {
        // Each hides `junk` in a browser.
        for sheet in [
            "@import url(\"x;y.css\"); @charset \"utf-8\"; .j{display:none}",
            "<!-- .j{display:none} -->",
            "body .j{display:none}",
            "html body :root .j{display:none}",
            "[data-a][data-x=junk]{display:none}",
        ] {
            let t = text(&format!(
                "<style>{sheet}</style><p>{FILLER}</p><span class=j {} data-x=junk>junk</span>",
                "data-a=1 ".repeat(20)
            ));
            assert!(!t.contains("junk"), "{sheet}: {t}");
        }
        // The text of a first reading does not stop it: the last child
        // after a page's worth of hidden words is known.
        let long = "w ".repeat(600_000);
        let t = text(&format!(
            "<style>.h{{display:none}} .w:last-child{{display:none}}</style><p>{FILLER}</p>\
             <div><div class=w><span class=h>{long}</span> shown</div><div></div></div>"
        ));
        assert!(t.contains("shown"), "{}", t.len());
        // Past the bound of the first reading, no place from the end is
        // known: `:not(:last-child)` does not match.
        let t = text(&format!(
            "<style>div:not(:last-child){{display:none}}</style><p>{FILLER}</p>{}\
             <div>seen</div><div>last</div>",
            "<br>".repeat(Ahead::MAX_ELEMENTS)
        ));
        assert!(t.contains("seen"), "{}", t.len());
        // Cut short, these would reach more than a browser's.
        let t = text(&format!(
            "<style>.a.a.a.a.a.a.a.a.nope{{display:none}} p:not(.b,.c,.d,.e,.f,.g,.h,.i,.keep){{display:none}}\
             .nope div div div div div div div p{{display:none}}</style>\
             <p>{FILLER}</p><p class=\"a keep\"><span>kept</span></p>"
        ));
        assert!(t.contains("kept"), "{t}");
    }

    /// A page of more elements than a first reading records, deep and
    /// wide, under a sheet that looks ahead: read, the elements past the
    /// bound not reached by the rules that look ahead.
    #[test]
    fn a_first_reading_is_bounded() {
        let n = Ahead::MAX_ELEMENTS + 1000;
        let page = format!(
            "<style>i:last-child{{display:none}} b:has(> i){{color:red}}</style>\
             <p>{FILLER}</p>{}<u>{}<i>tail</i></u>",
            "<b><i></i>".repeat(1000),
            "<i>x</i>".repeat(n)
        );
        let t = text(&page);
        assert!(t.contains("twelve") && t.contains("tail"), "{}", t.len());
    }

    /// `<rp>` text is hidden as browsers hide it; an unclosed `<rp>` is
    /// bounded like any hiding, so it cannot blank out a message.
    #[test]
    fn text_shown_right_to_left_by_an_override_is_read_in_the_order_shown() {
        let inline = "<p>Dear <span style=\"direction:rtl;unicode-bidi:bidi-override\">tnuocca ruoy</span> is locked</p>";
        assert_eq!(shown(inline), "Dear your account is locked");
        let sheet = "<style>.r{direction: rtl; unicode-bidi: bidi-override}</style><div class=r>enil tsrif<br>enil dnoces</div><p>after</p>";
        assert_eq!(shown(sheet), "first line\nsecond line\n\nafter");
        assert_eq!(shown("<bdo dir=rtl>olleh</bdo> world"), "hello world");
        // Unclosed, and nested: the outermost run is reversed once.
        assert_eq!(
            shown("<p dir=rtl style='unicode-bidi:bidi-override'>cba <b dir=rtl style='unicode-bidi:bidi-override'>fed"),
            "def abc"
        );
        // Right to left without an override is logical order (Hebrew,
        // Arabic): kept as written.
        assert_eq!(shown("<p dir=rtl>shalom</p>"), "shalom");
        assert_eq!(shown("<bdo>olleh</bdo>"), "olleh");
    }

    #[test]
    fn alt_text_of_remote_pictures_counts_under_a_short_text() {
        let pictures = "<p><img src=\"https://cdn.example/1.png\" alt=\"Your mailbox is full\"><br>\
            <img src=\"http://cdn.example/2.png\" alt=\"Click below to keep your messages\"></p>\
            <img src=\"cid:logo\" alt=\"attached logo\"><img style=\"display:none\" src=\"https://x/y\" alt=\"gone\">";
        let shown = text(pictures);
        let words = words_of(&shown);
        assert_eq!(
            words,
            "Your mailbox is full Click below to keep your messages"
                .split(' ')
                .collect::<Vec<_>>()
        );
        // Beside a text long enough to be the message, alt text is not read.
        let long = format!("<p>{}</p>{pictures}", "word ".repeat(40));
        assert!(!text(&long).contains("mailbox"));
    }

    #[test]
    fn text_generated_by_the_sheet_is_read_where_it_is_shown() {
        let page = "<style>.a::before{content:\"Your account \"} .a:after{content:'is locked' !important}\
            p > b::after {content: \"\\2014 act now\"} .h::before{content:\"hidden words\"} .h{display:none}\
            .n::before{content:none}</style>\
            <p><span class=a> today </span><b>Sign in</b><i class=h>x</i><i class=n>y</i></p>";
        // (The sheet is read in lower case, as every text is later.)
        assert_eq!(
            shown(page),
            "your account today is lockedSign in\u{2014}act nowy"
        );
        // Reversed with its element.
        let rtl = "<style>.r{direction:rtl;unicode-bidi:bidi-override}.r::after{content:'cba'}</style><p class=r>fed</p>";
        assert_eq!(shown(rtl), "abcdef");
        // The element's own attributes, named by `attr()`, with a
        // fallback when it has none.
        let attrs = "<style>i::before{content: attr(data-w) \" \"} i::after{content:attr(title)}\
            b::before{content: attr(data-none string, \"fallback\")}</style>\
            <p><i data-w=\"Verify\" title=\"now\"></i> <i DATA-W=\"your\"></i> <b></b></p>";
        assert_eq!(
            words_of(&text(attrs)),
            ["Verify", "now", "your", "fallback"]
        );
    }

    #[test]
    fn flex_items_are_read_in_their_order() {
        let page = "<div style=\"display:flex\"><div style=\"order:3\">third</div>\
            <div style=\"order:1\">first</div><div style=\"order:2\">second</div></div><p>after</p>";
        assert_eq!(words_of(&text(page)), ["first", "second", "third", "after"]);
        // From the sheet, inline items, and a reversed direction.
        let sheet = "<style>.f{display:inline-flex;flex-direction:row-reverse}.a{order:-1}</style>\
            <span class=f><span>c</span> <span>b</span> <span class=a>x</span></span>";
        assert_eq!(words_of(&text(sheet)), ["b", "c", "x"]);
        // Not a container: source order.
        let plain = "<div><div style=\"order:2\">one</div><div style=\"order:1\">two</div></div>";
        assert_eq!(words_of(&text(plain)), ["one", "two"]);
        // A hidden item between two block items: they stay apart.
        let hidden = "<div style=\"display:flex\"><div style=\"order:2\">alpha</div>\n\
            <div style=\"display:none\">junk</div>\n<div style=\"order:1\">beta</div></div>";
        assert_eq!(words_of(&text(hidden)), ["beta", "alpha"]);
    }

    /// Items with no white space between them in the source: set apart
    /// (a gap, a margin, padding, spread), they are words; touching, one.
    #[test]
    fn flex_items_set_apart_are_words() {
        let apart = [
            "<div style=\"display:flex;gap:6px\">",
            "<div style=\"display:flex; column-gap: 0.5em\">",
            "<div style=\"display:flex;gap:0 8px\">",
            "<div style=\"display:inline-flex;justify-content:space-between\">",
            "<style>.f{display:flex;gap:1ch}</style><div class=f>",
        ];
        for open in apart {
            let page = format!(
                "{open}<span style=\"order:3\">now</span><span style=\"order:1\">verify</span>\
                 <span style=\"order:2\">account</span></div>"
            );
            assert_eq!(
                words_of(&text(&page)),
                ["verify", "account", "now"],
                "{open}"
            );
        }
        let margins = [
            "margin-right:4px",
            "margin:0 5px",
            "padding: 0 0 0 6px",
            "margin-inline:auto",
            "padding:3px",
        ];
        for m in margins {
            let page = format!(
                "<div style=\"display:flex\"><b style=\"{m};order:2\">account</b>\
                 <b style=\"{m};order:1\">verify</b></div>"
            );
            assert_eq!(words_of(&text(&page)), ["verify", "account"], "{m}");
        }
        // Touching: what a person sees is one word.
        for style in [
            "",
            "gap:0",
            "gap:1px",
            "margin:4px 0",
            "justify-content:center",
        ] {
            let page = format!(
                "<div style=\"display:flex;{style}\"><span style=\"order:2\">gra</span>\
                 <span style=\"order:1\">Via</span></div>"
            );
            assert_eq!(words_of(&text(&page)), ["Viagra"], "{style}");
        }
        // From a sheet that pads every item.
        let sheet = "<style>.f{display:flex}.f>i{padding:0 4px}</style>\
            <div class=f><i>one</i><i>two</i><i>three</i></div>";
        assert_eq!(words_of(&text(sheet)), ["one", "two", "three"]);
    }

    #[test]
    fn review_findings_hold() {
        // Generated content hidden by its own style is hidden.
        let hidden = format!(
            "<style>.x::before{{content:\"qz7 junk\";display:none}}</style><p class=x>{}</p>",
            "word ".repeat(30)
        );
        assert!(!text(&hidden).contains("junk"));
        // An element set left to right inside an override, and a block in
        // it, are shown in their own order.
        assert_eq!(
            shown("<bdo dir=rtl>cba <span dir=ltr>forward</span></bdo>"),
            "forward abc"
        );
        assert_eq!(
            shown("<div style=\"direction:rtl;unicode-bidi:bidi-override\"><p>forward</p></div>"),
            "forward"
        );
        // CSS's direction comes before the dir attribute.
        assert_eq!(
            shown("<span style=\"direction:ltr;unicode-bidi:bidi-override\" dir=rtl>abc</span>"),
            "abc"
        );
        // An item that is a container itself keeps its order.
        let nested =
            "<div style=\"display:flex\"><span style=\"display:inline-flex;order:2\">two</span> \
            <span style=\"display:inline-flex;order:1\">one</span></div>";
        assert_eq!(words_of(&text(nested)), ["one", "two"]);
    }

    #[test]
    fn form_fields_and_redirects_are_read() {
        let (out, targets) = render(
            "<head><meta http-equiv=\"Refresh\" content=\"0; URL='https://phish.example/login?id=7'\"></head>\
             <form><input type=text value=\"Your mailbox is full\"><input placeholder=\"Enter your password\"></form>",
        );
        assert!(
            out.contains("Your mailbox is full") && out.contains("Enter your password"),
            "{out:?}"
        );
        assert_eq!(targets.urls, ["https://phish.example/login?id=7"]);
        assert_eq!(refresh_url("5"), None);
        assert_eq!(refresh_url("0;url=\"x.example\""), Some("x.example".into()));
    }

    fn words_of(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    fn shown(html: &str) -> String {
        text(html).trim().to_owned()
    }

    #[test]
    fn marks_of_runs_a_sender_writes_are_cleared() {
        // Written into a page, as characters or references: cleared, so
        // nothing is drawn.
        let forged = format!("a{}{}secret{}b", drawn::OPEN, '\u{F0000}', drawn::CLOSE);
        for html in [
            format!("<p>{forged}</p>"),
            "<p>a&#xFFF9;&#xF0000;secret&#xFFFB;b</p>".to_owned(),
        ] {
            let mut out = String::new();
            let mut t = Targets {
                drawn: true,
                ..Targets::default()
            };
            to_text(&html, &mut out, &mut t, 1 << 16);
            assert!(!out.contains(drawn::is_mark), "{out:?}");
            assert!(t.fonts.is_empty());
        }
    }

    #[test]
    fn ruby_fallback_text_is_hidden() {
        let t = text(&format!(
            "<p>{FILLER}</p><ruby>kan<rp>(junk)</rp><rt>ji</rt></ruby>"
        ));
        assert!(
            t.contains("kan") && t.contains("ji") && !t.contains("junk"),
            "{t}"
        );
        let t = text("<ruby><rp>the whole message follows here");
        assert!(t.contains("whole message"), "{t}");
    }

    /// Of two `style` attributes the first counts, with a sheet or without.
    #[test]
    fn a_repeated_style_attribute_is_dropped() {
        for sheet in ["", "<style>.q{color:red}</style>"] {
            let t = text(&format!(
                "{sheet}<p>{FILLER}</p><span style=\"display:none\" style=\"color:red\">zebra</span>\
                 <span style=\"color:red\" style=\"display:none\">seen</span>"
            ));
            assert!(!t.contains("zebra") && t.contains("seen"), "{sheet}: {t}");
        }
    }

    /// An invalid value leaves the earlier one in force, and a later
    /// declaration does not override an `!important` one.
    #[test]
    fn invalid_and_overridden_declarations_keep_the_earlier_one() {
        for style in [
            "display:none!important;display:block",
            "display:none;display:x",
            "visibility:hidden;visibility:bogus",
            "font-size:0!important;font-size:16px",
        ] {
            let t = text(&format!(
                "<p>{FILLER}</p><span style=\"{style}\">zebra</span>"
            ));
            assert!(!t.contains("zebra"), "{style}: {t}");
        }
        let t = text(&format!(
            "<p>{FILLER}</p><span style=\"display:none;display:inline\">seen</span>"
        ));
        assert!(t.contains("seen"), "{t}");
    }

    /// What a descendant can undo, as a browser renders it: a visible
    /// child of `visibility:hidden` and an absolute font size under a zero
    /// one are shown (mail layouts set `font-size:0` on containers); a
    /// child of `display:none`, or `200%` of a zero font, is not.
    #[test]
    fn descendants_undo_visibility_and_font_size_but_not_display() {
        let t = text(&format!(
            "<p>{FILLER}</p>\
             <div style=\"visibility:hidden\">vjunk <span style=\"visibility:visible\">vshown</span></div>\
             <div style=\"font-size:0\">fjunk <span style=\"font-size:14px\">fshown</span>\
             <span style=\"font-size:200%\">fdouble</span></div>\
             <div style=\"display:none\"><span style=\"display:block;visibility:visible\">djunk</span></div>"
        ));
        for w in ["vshown", "fshown"] {
            assert!(t.contains(w), "{w}: {t}");
        }
        for w in ["vjunk", "fjunk", "fdouble", "djunk"] {
            assert!(!t.contains(w), "{w}: {t}");
        }
    }

    /// Colour is hidden against the background the page sets, not only
    /// white on white: black on black is hidden, white on black is shown.
    #[test]
    fn text_coloured_like_its_background_is_hidden() {
        let t = text(&format!(
            "<body bgcolor=\"#000000\"><p style=\"color:#ffffff\">{FILLER} shown</p>\
             <p><font color=\"#020202\">black</font></p>\
             <table bgcolor=white><tr><td><span style=\"color:rgb(250,250,250)\">pale</span>dark</td></tr></table></body>"
        ));
        assert!(t.contains("shown") && t.contains("dark"), "{t}");
        assert!(!t.contains("black") && !t.contains("pale"), "{t}");
    }

    /// A sender cannot hide a whole message: when fewer than
    /// MIN_VISIBLE_WORDS words stay visible and more are hidden, every
    /// word is kept (a `<style>` block with `!important` can show what an
    /// inline style hides).
    #[test]
    fn hiding_cannot_blank_out_a_message() {
        let html = "<style>.x{display:block!important}</style>\
            <div class=x style=\"display:none\">your parcel is waiting at the depot, confirm the \
            delivery address and pay the small customs fee today</div>hi";
        let t = text(html);
        assert!(t.contains("your parcel is waiting"), "{t}");
        assert!(t.contains("hi") && !t.contains("important"), "{t}");
        // With enough visible text, hidden junk is dropped.
        let t = text(&format!(
            "<p>{FILLER}</p><span style=\"display:none\">junk words here</span>"
        ));
        assert!(!t.contains("junk"), "{t}");
    }

    /// An unclosed hidden `<p>` ends at the next block, as in a browser:
    /// it cannot hide the blocks after it.
    #[test]
    fn implied_end_tags_follow_html5() {
        let t = text(&format!(
            "<p style=\"display:none\">junk<div>{FILLER} visible</div>"
        ));
        assert!(t.contains("visible") && !t.contains("junk"), "{t}");
        let t = text("<ul><li style=\"display:none\">a<li>b<li>c</ul>");
        assert_eq!(words(&t), ["b", "c"]);
        let t = text("<table><tr><td style=\"display:none\">x<td>y<tr><td>z</table>");
        assert_eq!(words(&t), ["y", "z"]);
        // An inline end tag does not close across a block.
        let t = text(&format!(
            "<span style=\"display:none\"><div>hidden</span> still hidden</div></span>{FILLER}"
        ));
        assert!(!t.contains("hidden"), "{t}");
    }

    #[test]
    fn head_scripts_and_styles_are_never_shown() {
        let t = text("<head><title>T</title><meta charset=utf-8><style>p{}</style></head><script>x<y</script>body<template>tpl</template>");
        assert_eq!(t.trim(), "body");
        // Text in an unclosed head starts the body, as in a browser.
        let t = text("<head><meta name=x>Hello there<p>friend</p>");
        assert_eq!(words(&t), ["Hello", "there", "friend"]);
        // A stray meta in the body hides nothing.
        assert_eq!(words(&text("<p>a<meta name=y>b</p>")), ["ab"]);
    }

    #[test]
    fn links_and_images_are_kept() {
        let (t, tg) = render("<a href=\"https://t.example/c/123?u=9&amp;x=1\">click here</a><img src=\"http://img.example/a.gif\">");
        assert_eq!(tg.urls, vec!["https://t.example/c/123?u=9&x=1"]);
        assert_eq!(tg.images, vec!["http://img.example/a.gif"]);
        assert!(t.contains("https://t.example/c/123?u=9&x=1") && t.contains("click here"));
        let long = format!("<a href=\"http://h.example/{}\">t</a>", "a".repeat(5000));
        let (_, tg) = render(&long);
        assert_eq!(
            tg.urls.first().map(|u| u.chars().count()),
            Some(MAX_TARGET_CHARS)
        );
        let many = "<a href=\"http://h.example/\">x</a><img src=\"i\">".repeat(100);
        let (_, tg) = render(&many);
        assert_eq!((tg.urls.len(), tg.images.len()), (MAX_URLS, MAX_IMAGES));
    }

    #[test]
    fn tags_and_attributes_are_read_in_any_case() {
        let t = text(&format!(
            "<P>one</p><SPAN Style='DISPLAY:NONE'>x</Span>two<FONT COLOR=White>y</FONT>\
             <A HREF=\"http://h.example/&amp;\">three</A><Script>z</SCRIPT>four {FILLER}"
        ));
        assert!(
            t.starts_with("one\n\ntwo http://h.example/& threefour"),
            "{t}"
        );
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
            "<svg><path/>x",
            "<table><td>",
            "</p></p></div>",
            "<plaintext><b>x",
            "\u{feff}<",
        ] {
            let _ = text(s);
        }
        assert_eq!(text("&#0;x&#xD800;").chars().count(), 3);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let html = "<div>".repeat(100_000) + "x" + &"</div>".repeat(100_000) + "y";
        let t = text(&html);
        assert!(t.contains('x') && t.contains('y'));
        let html = "<span>".repeat(100_000) + "x" + &"</span>".repeat(100_000) + "y";
        assert_eq!(text(&html), "xy");
    }

    #[test]
    fn output_is_bounded() {
        let mut out = String::new();
        to_text(
            &"word ".repeat(10_000),
            &mut out,
            &mut Targets::default(),
            100,
        );
        assert!(out.len() <= 100);
        let mut out = String::new();
        let hidden = format!("<div style=display:none>{}</div>", "w ".repeat(10_000));
        to_text(&hidden, &mut out, &mut Targets::default(), 100);
        assert!(out.len() <= 100 && out.starts_with('w'), "{out:?}");
    }

    /// Found by the html fuzz target (fixtures/fuzz/html/crash-break-at-bound):
    /// a block break when one byte of room was left went past the bound.
    #[test]
    fn breaks_stay_within_the_bound() {
        for limit in 1..12 {
            let mut out = String::new();
            to_text(
                "abcdefghij<p>k</p><div>l</div>",
                &mut out,
                &mut Targets::default(),
                limit,
            );
            assert!(out.len() <= limit, "{limit}: {out:?}");
        }
    }

    #[test]
    fn appends_after_existing_text() {
        let mut out = String::from("plain part");
        to_text("<p>html part</p>", &mut out, &mut Targets::default(), 1000);
        assert!(
            out.starts_with("plain part") && out.contains("html part"),
            "{out:?}"
        );
    }

    #[test]
    fn entities_decode_in_plain_text_remnants() {
        let mut out = String::new();
        decode_entities("caf&eacute; &#86;&#x49;agra &amp; &bogus;", &mut out, 100);
        assert_eq!(out, "café VIagra & &bogus;");
    }
}
