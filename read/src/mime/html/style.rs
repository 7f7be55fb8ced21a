//! Inline styles and the CSS values that hide text: `display`,
//! `visibility`, sizes, offsets, clips, scales and colours, as
//! [`apply_style`] reads them onto a start tag.

use super::*;

/// The values of `display` (CSS Display 3 and the legacy keywords); any
/// other value is invalid and leaves the earlier one in force.
pub(super) const DISPLAY: &[&str] = &[
    "none",
    "block",
    "inline",
    "inline-block",
    "flex",
    "inline-flex",
    "grid",
    "inline-grid",
    "flow-root",
    "list-item",
    "contents",
    "table",
    "inline-table",
    "table-row",
    "table-cell",
    "table-row-group",
    "table-header-group",
    "table-footer-group",
    "table-column",
    "table-column-group",
    "table-caption",
    "run-in",
    "ruby",
    "ruby-base",
    "ruby-text",
    "ruby-base-container",
    "ruby-text-container",
    "inherit",
    "initial",
    "unset",
    "revert",
    "revert-layer",
    "-webkit-box",
    "-webkit-inline-box",
    "-ms-flexbox",
    "-ms-inline-flexbox",
    "blockflow",
    "flow",
    "math",
];

/// Applies an inline style: hiding declarations, `color`, `background`.
pub(super) fn apply_style(style: &str, tag: &mut StartTag) {
    apply_spacing(style, tag);
    apply_family(style, tag);
    let s: String = style
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .take(MAX_STYLE)
        .collect();
    // The last valid declaration of display, visibility and font-size
    // wins, unless an earlier one is `!important` and it is not (the
    // sheet's come before the inline style, its `!important` ones after).
    let mut display_none: Option<(bool, bool)> = None;
    let mut display_flex: Option<(bool, bool)> = None;
    let mut visibility_hidden: Option<(bool, bool)> = None;
    let mut font_tiny: Option<(Option<bool>, bool)> = None;
    fn set<T>(slot: &mut Option<(T, bool)>, value: T, important: bool) {
        if important || !slot.as_ref().is_some_and(|(_, i)| *i) {
            *slot = Some((value, important));
        }
    }
    let mut overflow_hidden = false;
    let mut zero_size = false;
    let mut positioned = false;
    let mut far_offset = false;
    for decl in s.split(';') {
        let Some((prop, val)) = decl.split_once(':') else {
            continue;
        };
        let important = val.ends_with("!important");
        let val = val.trim_end_matches("!important");
        match prop {
            "display" if DISPLAY.contains(&val) => {
                set(&mut display_none, val == "none", important);
                let flex = matches!(val, "flex" | "inline-flex" | "grid" | "inline-grid");
                set(&mut display_flex, flex, important);
            }
            "order" => {
                if let Ok(n) = val.parse::<i32>() {
                    tag.order = Some(n);
                }
            }
            "flex-direction"
                if matches!(val, "row" | "column" | "row-reverse" | "column-reverse") =>
            {
                tag.flex_reverse = Some(val.ends_with("-reverse"))
            }
            "visibility" if matches!(val, "visible" | "hidden" | "collapse") => {
                set(&mut visibility_hidden, val != "visible", important)
            }
            "font-size" if !val.is_empty() => set(&mut font_tiny, font_size_tiny(val), important),
            "opacity" if val.parse::<f32>().is_ok_and(|o| o < 0.1) => tag.hidden = true,
            "color" | "-webkit-text-fill-color" if invisible_colour(val) => tag.hidden = true,
            // Moved off the page: far negative indent or margin, or a far
            // offset of a positioned box.
            "text-indent" | "margin-left" | "margin-top" if far_length(val, true) => {
                tag.hidden = true
            }
            "left" | "top" | "right" | "bottom" if off_page(prop, val) => far_offset = true,
            "position" if val == "absolute" || val == "fixed" => positioned = true,
            "clip" if empty_rect(val) => tag.hidden = true,
            "clip-path" if clipped_away(val) => tag.hidden = true,
            "transform" if zero_scale(val) || far_translation(val) => tag.hidden = true,
            "filter" if zero_scale_in(val, "opacity(") => tag.hidden = true,
            "color" => tag.fg = parse_colour(val).or(tag.fg),
            "background-color" => tag.bg = parse_colour(val).or(tag.bg),
            "background" => {
                if let Some(c) = val.split(',').next().and_then(parse_colour) {
                    tag.bg = Some(c);
                }
            }
            "overflow" if val == "hidden" => overflow_hidden = true,
            "direction" if val == "rtl" || val == "ltr" => tag.rtl = Some(val == "rtl"),
            "unicode-bidi" => {
                tag.bidi_override = Some(matches!(val, "bidi-override" | "isolate-override"))
            }
            "height" | "max-height" | "width" | "max-width" | "line-height" if tiny_length(val) => {
                zero_size = true
            }
            _ => {}
        }
    }
    if (overflow_hidden && zero_size)
        || (positioned && far_offset)
        || display_none.is_some_and(|(none, _)| none)
    {
        tag.hidden = true;
    }
    if let Some((f, _)) = display_flex {
        tag.flex = Some(f);
    }
    if let Some((v, _)) = visibility_hidden {
        tag.visibility = Some(v);
    }
    if let Some((t, _)) = font_tiny {
        tag.tiny = t;
    }
}

/// Reads what sets flex and grid items apart (their values are lists, so
/// from the style as written, not with its white space taken out): a
/// container's `gap`, `column-gap` or `justify-content: space-*`, an
/// item's horizontal margin or padding. The last declaration wins, but a
/// side set by its own property adds to the other side.
/// `font-family` and the family of the `font` shorthand (the last one
/// set, unless an earlier one is `!important`), read with their white
/// space (the shorthand's parts are apart by it).
fn apply_family(style: &str, tag: &mut StartTag) {
    if !style.contains("font") {
        return;
    }
    let mut important = false;
    for decl in style.split(';').take(MAX_STYLE / 8) {
        let Some((prop, val)) = decl.split_once(':') else {
            continue;
        };
        let prop = prop.trim().to_ascii_lowercase();
        let val = val.trim().to_lowercase();
        let (val, imp) = match val.strip_suffix("!important") {
            Some(v) => (v.trim_end().to_owned(), true),
            None => (val, false),
        };
        let family = match prop.as_str() {
            "font-family" => Some(val.as_str()),
            "font" => drawn::shorthand_family(&val),
            _ => None,
        };
        if let Some(f) = family.filter(|f| !f.is_empty() && f.len() <= 512) {
            if imp || !important {
                tag.family = Some(f.to_owned());
                important |= imp;
            }
        }
    }
}

fn apply_spacing(style: &str, tag: &mut StartTag) {
    let end = style
        .char_indices()
        .nth(MAX_STYLE)
        .map_or(style.len(), |(i, _)| i);
    for decl in style[..end].split(';') {
        let Some((prop, val)) = decl.split_once(':') else {
            continue;
        };
        let prop = prop.trim().to_ascii_lowercase();
        let val = val.trim().to_ascii_lowercase();
        let val = val.trim_end_matches("!important").trim_end();
        let vals: Vec<&str> = val.split_whitespace().take(4).collect();
        let wide_at = |i: usize| vals.get(i).is_some_and(|v| sets_apart(v));
        match prop.as_str() {
            // `gap: <row> <column>`: the column gap sets a row's items apart.
            "gap" | "grid-gap" => tag.flex_gap = Some(wide_at(vals.len().min(2).saturating_sub(1))),
            "column-gap" | "grid-column-gap" => tag.flex_gap = Some(wide_at(0)),
            "justify-content" => {
                tag.flex_gap = Some(matches!(
                    val,
                    "space-between" | "space-around" | "space-evenly"
                ))
            }
            // Shorthands: one value for all sides; with two or three, the
            // second is left and right; with four, the second and fourth.
            "margin" | "padding" => {
                tag.spaced = Some(match vals.len() {
                    0 => false,
                    1 => wide_at(0),
                    2 | 3 => wide_at(1),
                    _ => wide_at(1) || wide_at(3),
                })
            }
            "margin-left"
            | "margin-right"
            | "margin-inline"
            | "margin-inline-start"
            | "margin-inline-end"
            | "padding-left"
            | "padding-right"
            | "padding-inline"
            | "padding-inline-start"
            | "padding-inline-end" => {
                tag.spaced = Some(tag.spaced == Some(true) || vals.iter().any(|v| sets_apart(v)))
            }
            _ => {}
        }
    }
}

/// A length that sets two boxes of text apart as a space does: `auto`
/// (an auto margin takes the free room), or about a quarter of a letter's
/// height and more (3 px); a negative one draws them together.
fn sets_apart(val: &str) -> bool {
    if val == "auto" {
        return true;
    }
    let num_len = val
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.' || *c == b'+')
        .count();
    let (num, unit) = val.split_at(num_len);
    let Ok(n) = num.parse::<f32>() else {
        return false;
    };
    match unit {
        "px" | "" => n >= 3.0,
        "pt" => n >= 2.25,
        "em" | "rem" | "ch" | "ex" | "lh" => n >= 0.2,
        "%" | "vw" | "vh" | "vmin" | "vmax" => n >= 0.5,
        "cm" => n >= 0.08,
        "mm" => n >= 0.8,
        "in" | "pc" => n >= 0.03,
        _ => false,
    }
}

/// A colour nobody sees: `transparent`, or `rgba()`/`hsla()` or 8- or
/// 4-digit hex with an alpha below 0.1.
pub(super) fn invisible_colour(val: &str) -> bool {
    if val == "transparent" {
        return true;
    }
    if let Some(args) = val
        .strip_prefix("rgba(")
        .or_else(|| val.strip_prefix("hsla("))
        .or_else(|| val.strip_prefix("rgb("))
        .or_else(|| val.strip_prefix("hsl("))
    {
        // rgba(r,g,b,a) or the space form with a slash (whitespace is
        // gone here: "rgb(000/0)").
        let args = args.trim_end_matches(')');
        let alpha = args.rsplit_once('/').map(|(_, a)| a).or_else(|| {
            (args.split(',').count() == 4)
                .then(|| args.rsplit(',').next())
                .flatten()
        });
        return alpha.is_some_and(|a| match a.strip_suffix('%') {
            Some(p) => p.parse::<f32>().is_ok_and(|p| p < 10.0),
            None => a.parse::<f32>().is_ok_and(|a| a < 0.1),
        });
    }
    let hex = val.strip_prefix('#').unwrap_or("");
    let digit = |i: usize| {
        hex.as_bytes()
            .get(i)
            .and_then(|b| (*b as char).to_digit(16))
    };
    match hex.len() {
        8 if hex.bytes().all(|b| b.is_ascii_hexdigit()) => digit(6).is_some_and(|d| d == 0),
        4 if hex.bytes().all(|b| b.is_ascii_hexdigit()) => digit(3).is_some_and(|d| d == 0),
        _ => false,
    }
}

/// An offset of a positioned box that puts it off the page: left or up
/// by [`far_length`]'s 500 pixels, a whole width (100%), or three times
/// 500 pixels either way (a box 600 pixels right of its container's edge
/// is on a reading pane, and read; one 1,500 pixels away is past any).
fn off_page(prop: &str, val: &str) -> bool {
    let back = matches!(prop, "left" | "top");
    // A share of the container or the screen: past its whole width.
    let relative = val.ends_with('%') || val.ends_with("vw") || val.ends_with("vh");
    (back && far_length(val, true)) || far_length_times(val, if relative { 1.0 } else { 3.0 })
}

/// A length far enough to put text off any screen: 500px, 375pt, 30em or
/// 100% (or vw/vh) and more; only negative ones with `negative_only`.
pub(super) fn far_length(val: &str, negative_only: bool) -> bool {
    if negative_only && !val.starts_with('-') {
        return false;
    }
    far_length_times(val, 1.0)
}

/// [`far_length`] `k` times over, either way.
fn far_length_times(val: &str, k: f32) -> bool {
    let v = val
        .strip_prefix('-')
        .or_else(|| val.strip_prefix('+'))
        .unwrap_or(val);
    let num_len = v
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.')
        .count();
    let (num, unit) = v.split_at(num_len);
    let Ok(n) = num.parse::<f32>() else {
        return false;
    };
    let n = n / k;
    match unit {
        "px" | "" => n >= 500.0,
        "pt" => n >= 375.0,
        "em" | "rem" | "ch" | "ex" => n >= 30.0,
        "%" | "vw" | "vh" => n >= 100.0,
        "cm" => n >= 13.0,
        "mm" => n >= 130.0,
        "in" => n >= 5.0,
        _ => false,
    }
}

/// The numbers in `s`, in order (signs kept, units dropped).
pub(super) fn numbers(s: &str) -> Vec<f32> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars().chain([' ']) {
        if c.is_ascii_digit() || c == '.' || (c == '-' && cur.is_empty()) {
            cur.push(c);
        } else if !cur.is_empty() {
            if let Ok(n) = cur.parse() {
                out.push(n);
            }
            cur.clear();
        }
    }
    out
}

/// `clip: rect(top, right, bottom, left)` that leaves nothing: bottom not
/// below top or right not past left, or all zero however written.
pub(super) fn empty_rect(val: &str) -> bool {
    let Some(args) = val.strip_prefix("rect(") else {
        return false;
    };
    match numbers(args).as_slice() {
        [top, right, bottom, left] => bottom <= top || right <= left,
        all => !all.is_empty() && all.iter().all(|n| *n == 0.0),
    }
}

/// `clip-path` that leaves nothing: `inset()` of 50% or more, or a circle
/// or ellipse of radius zero.
pub(super) fn clipped_away(val: &str) -> bool {
    if let Some(args) = val.strip_prefix("inset(") {
        return args.starts_with(|c: char| c.is_ascii_digit())
            && args.contains('%')
            && numbers(args).first().is_some_and(|n| *n >= 50.0);
    }
    ["circle(", "ellipse("].iter().any(|f| {
        val.strip_prefix(f)
            .is_some_and(|a| numbers(a).first().is_some_and(|n| *n == 0.0))
    })
}

/// The arguments of the function `f` (its name and `(`) in `val`, up to
/// its `)`.
pub(super) fn args_of<'a>(val: &'a str, f: &str) -> Option<&'a str> {
    let i = val.find(f)?;
    let args = val.get(i + f.len()..)?;
    args.split(')').next()
}

/// The first argument of `f` in `val` is below 0.1 (as `scale(0)`).
pub(super) fn zero_scale_in(val: &str, f: &str) -> bool {
    args_of(val, f).is_some_and(|args| {
        numbers(args).first().is_some_and(|n| n.abs() < 0.1)
            && !args.starts_with(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
    })
}

/// `transform` scales the box to nothing.
pub(super) fn zero_scale(val: &str) -> bool {
    ["scale(", "scalex(", "scaley(", "scale3d("]
        .iter()
        .any(|f| zero_scale_in(val, f))
}

/// `transform` moves the box off any screen.
pub(super) fn far_translation(val: &str) -> bool {
    ["translate(", "translatex(", "translatey(", "translate3d("]
        .iter()
        .any(|f| args_of(val, f).is_some_and(|args| args.split(',').any(|a| far_length(a, false))))
}

/// What a `font-size` makes of the text: tiny (`Some(true)`), an absolute
/// size that is not (`Some(false)`, a keyword too), or a size relative to
/// the parent's (`None`: 200% of a tiny font is tiny).
pub(super) fn font_size_tiny(val: &str) -> Option<bool> {
    if tiny_length(val) {
        return Some(true);
    }
    let unit = val.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    match unit {
        "px" | "pt" | "pc" | "in" | "cm" | "mm" | "q" | "rem" | "vw" | "vh" => Some(false),
        "xx-small" | "x-small" | "small" | "medium" | "large" | "x-large" | "xx-large"
        | "xxx-large" => Some(false),
        _ => None,
    }
}

/// A length of at most 2px/1.5pt/0.2em, or zero in any unit.
pub(super) fn tiny_length(val: &str) -> bool {
    let num_len = val
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.')
        .count();
    let (num, unit) = val.split_at(num_len);
    let Ok(n) = num.parse::<f32>() else {
        return false;
    };
    n == 0.0
        || (unit == "px" && n <= 2.0)
        || (unit == "pt" && n <= 1.5)
        || ((unit == "em" || unit == "rem") && n < 0.2)
        || (unit == "%" && n <= 12.0)
}

/// Text of colour `fg` on `bg` cannot be read.
pub(super) fn same_colour(fg: Rgb, bg: Rgb) -> bool {
    fg.iter().zip(bg).all(|(a, b)| a.abs_diff(b) <= SAME_COLOUR)
}

/// `#rgb`, `#rrggbb` (with or without `#`, as `bgcolor` is often written),
/// `rgb(r,g,b)`, `rgba(r,g,b,a)` with a visible alpha, and the common
/// names. `None` for anything else (the inherited colour stays).
pub(super) fn parse_colour(v: &str) -> Option<Rgb> {
    let v = v.trim().trim_end_matches("!important").to_ascii_lowercase();
    let hex = v.strip_prefix('#').unwrap_or(&v);
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        let b = hex.as_bytes();
        let byte = |i: usize| Some(nibble(*b.get(i)?)? * 16 + nibble(*b.get(i + 1)?)?);
        return Some([byte(0)?, byte(2)?, byte(4)?]);
    }
    if hex.len() == 3 && v.starts_with('#') && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        let b = hex.as_bytes();
        let one = |i: usize| Some(nibble(*b.get(i)?)? * 17);
        return Some([one(0)?, one(1)?, one(2)?]);
    }
    if let Some(args) = v
        .strip_prefix("rgba(")
        .or_else(|| v.strip_prefix("rgb("))
        .and_then(|a| a.strip_suffix(')'))
    {
        let mut parts = args.split(',').map(str::trim);
        let mut channel = || parts.next()?.parse::<u8>().ok();
        let c = [channel()?, channel()?, channel()?];
        if let Some(alpha) = parts.next() {
            if alpha.parse::<f32>().is_ok_and(|a| a < 0.1) {
                return None;
            }
        }
        return Some(c);
    }
    match v.as_str() {
        "white" | "snow" | "ivory" | "ghostwhite" | "whitesmoke" => Some(WHITE),
        "black" => Some(BLACK),
        "red" => Some([255, 0, 0]),
        "green" => Some([0, 128, 0]),
        "blue" => Some([0, 0, 255]),
        "navy" => Some([0, 0, 128]),
        "gray" | "grey" => Some([128, 128, 128]),
        "silver" => Some([192, 192, 192]),
        "yellow" => Some([255, 255, 0]),
        _ => None,
    }
}
