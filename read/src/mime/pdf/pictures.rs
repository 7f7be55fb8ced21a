//! The pictures a PDF's pages draw, as picture files for the picture path
//! (`mime::picture`): what a scanned page is.
//!
//! A page's pictures are found as a viewer finds them: through its
//! resources (inherited from the page tree), references resolved, inside
//! form XObjects too (a scanner's or a converter's wrapping), each entry
//! on its own, so that one malformed entry does not hide the others.
//! Every encoding scanners and converters write is read: JPEG as it is,
//! JPEG 2000 (hayro-jpeg2000), CCITT fax group 3 and 4 (the `fax` crate,
//! which the TIFF decoder brings), and samples raw or deflated (with PNG
//! predictors) of 1, 2, 4, 8 or 16 bits in grey, RGB, CMYK, ICC-based,
//! calibrated, separation and indexed colours, stencil masks included, a
//! `Decode` of `[1 0]` honoured. Each is written as a grey PNG (what the
//! picture path reads: its perceptual hash and its text are taken from the
//! grey picture).
//!
//! Bounds: [`super::MAX_PAGES`] pages, [`super::MAX_PICTURES`] pictures,
//! [`MAX_XOBJECTS`] entries of a resource dictionary, forms
//! [`MAX_FORM_DEPTH`] deep, each picture at most the picture path's
//! pixels a message before it is decoded, its samples inflated to what its
//! size needs and no more.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};

/// Entries of one `XObject` dictionary looked at.
pub const MAX_XOBJECTS: usize = 64;
/// Form XObjects followed this deep.
pub const MAX_FORM_DEPTH: usize = 3;
/// Page tree parents walked for inherited resources.
const MAX_PARENTS: usize = 32;

/// The pictures the first pages of `doc` draw, each once, as picture files.
pub(super) fn pictures(doc: &Document) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (_, page) in doc.get_pages().into_iter().take(super::MAX_PAGES) {
        let Ok(dict) = doc.get_dictionary(page) else {
            continue;
        };
        if let Some(res) = resources(doc, dict) {
            collect(doc, res, 0, &mut seen, &mut out);
        }
        if out.len() >= super::MAX_PICTURES {
            break;
        }
    }
    out
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Object> {
    doc.dereference(o).ok().map(|(_, o)| o)
}

fn dict_of<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Dictionary> {
    match deref(doc, o)? {
        Object::Dictionary(d) => Some(d),
        Object::Stream(s) => Some(&s.dict),
        _ => None,
    }
}

fn int(doc: &Document, d: &Dictionary, key: &[u8]) -> Option<i64> {
    deref(doc, d.get(key).ok()?)?.as_i64().ok()
}

fn name<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a [u8]> {
    deref(doc, o)?.as_name().ok()
}

/// A page's resources, its own or inherited.
fn resources<'a>(doc: &'a Document, mut node: &'a Dictionary) -> Option<&'a Dictionary> {
    for _ in 0..MAX_PARENTS {
        if let Ok(r) = node.get(b"Resources") {
            return dict_of(doc, r);
        }
        node = dict_of(doc, node.get(b"Parent").ok()?)?;
    }
    None
}

fn collect(
    doc: &Document,
    res: &Dictionary,
    depth: usize,
    seen: &mut HashSet<ObjectId>,
    out: &mut Vec<Vec<u8>>,
) {
    let Some(xobjects) = res.get(b"XObject").ok().and_then(|x| dict_of(doc, x)) else {
        return;
    };
    for (_, v) in xobjects.iter().take(MAX_XOBJECTS) {
        if out.len() >= super::MAX_PICTURES {
            return;
        }
        let Ok((id, Object::Stream(stream))) = doc.dereference(v) else {
            continue;
        };
        if id.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        match stream.dict.get(b"Subtype").ok().and_then(|s| name(doc, s)) {
            Some(b"Image") => out.extend(picture_file(doc, &stream.dict, &stream.content)),
            Some(b"Form") if depth < MAX_FORM_DEPTH => {
                if let Some(r) = stream
                    .dict
                    .get(b"Resources")
                    .ok()
                    .and_then(|r| dict_of(doc, r))
                {
                    collect(doc, r, depth + 1, seen, out);
                }
            }
            _ => {}
        }
    }
}

/// How a picture's samples are coloured.
#[derive(Debug, Clone, PartialEq)]
enum Space {
    Gray,
    Rgb,
    Cmyk,
    /// A separation or DeviceN tint: more ink is darker.
    Tint,
    /// Indices into a table of colours of the base space.
    Indexed(Box<Space>, Vec<u8>),
}

impl Space {
    fn components(&self) -> usize {
        match self {
            Space::Gray | Space::Tint | Space::Indexed(..) => 1,
            Space::Rgb => 3,
            Space::Cmyk => 4,
        }
    }

    /// The grey of one pixel's components (each 0..=255).
    fn grey(&self, c: &[u8]) -> u8 {
        let at = |i: usize| u32::from(c.get(i).copied().unwrap_or(0));
        match self {
            Space::Gray => at(0) as u8,
            Space::Tint => 255 - at(0) as u8,
            Space::Rgb => ((at(0) * 299 + at(1) * 587 + at(2) * 114) / 1000) as u8,
            Space::Cmyk => {
                let ink = (at(0) * 30 + at(1) * 59 + at(2) * 11) / 100 + at(3);
                255 - ink.min(255) as u8
            }
            Space::Indexed(base, table) => {
                let n = base.components();
                let i = at(0) as usize * n;
                base.grey(table.get(i..i + n).unwrap_or(&[0, 0, 0, 0]))
            }
        }
    }
}

/// The colour space `o` names or describes.
fn space(doc: &Document, o: &Object, indexed_ok: bool) -> Option<Space> {
    match deref(doc, o)? {
        Object::Name(n) => match n.as_slice() {
            b"DeviceGray" | b"G" | b"CalGray" => Some(Space::Gray),
            b"DeviceRGB" | b"RGB" | b"CalRGB" => Some(Space::Rgb),
            b"DeviceCMYK" | b"CMYK" => Some(Space::Cmyk),
            _ => None,
        },
        Object::Array(a) => {
            let family = a.first().and_then(|f| name(doc, f))?;
            match family {
                b"ICCBased" => {
                    let stream = dict_of(doc, a.get(1)?)?;
                    match int(doc, stream, b"N")? {
                        1 => Some(Space::Gray),
                        3 => Some(Space::Rgb),
                        4 => Some(Space::Cmyk),
                        _ => None,
                    }
                }
                b"CalGray" => Some(Space::Gray),
                b"CalRGB" | b"Lab" => Some(Space::Rgb),
                b"Separation" | b"DeviceN" => Some(Space::Tint),
                b"Indexed" | b"I" if indexed_ok => {
                    let base = space(doc, a.get(1)?, false)?;
                    let hival = usize::try_from(deref(doc, a.get(2)?)?.as_i64().ok()?).ok()?;
                    let want = (hival.min(255) + 1) * base.components();
                    let table = match deref(doc, a.get(3)?)? {
                        Object::String(s, _) => s.clone(),
                        Object::Stream(s) => s
                            .decompressed_content()
                            .unwrap_or_else(|_| s.content.clone()),
                        _ => return None,
                    };
                    let table = table.get(..want.min(table.len()))?.to_vec();
                    Some(Space::Indexed(Box::new(base), table))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// One picture as a picture file: a JPEG as it is, anything else a grey
/// PNG; `None` for what is past the bounds or not read.
fn picture_file(doc: &Document, dict: &Dictionary, content: &[u8]) -> Option<Vec<u8>> {
    let w = u32::try_from(int(doc, dict, b"Width")?).ok()?;
    let h = u32::try_from(int(doc, dict, b"Height")?).ok()?;
    if w == 0 || h == 0 || u64::from(w) * u64::from(h) > super::super::picture::MAX_MESSAGE_PIXELS {
        return None;
    }
    let filters: Vec<&[u8]> = match dict.get(b"Filter").ok().and_then(|f| deref(doc, f)) {
        Some(Object::Name(n)) => vec![n.as_slice()],
        Some(Object::Array(a)) => a.iter().filter_map(|f| name(doc, f)).collect(),
        _ => Vec::new(),
    };
    let parms = match dict.get(b"DecodeParms").ok().and_then(|p| deref(doc, p)) {
        Some(Object::Dictionary(d)) => Some(d),
        Some(Object::Array(a)) => a.last().and_then(|p| dict_of(doc, p)),
        _ => None,
    };
    let mask = dict
        .get(b"ImageMask")
        .ok()
        .and_then(|m| deref(doc, m))
        .and_then(|m| m.as_bool().ok())
        == Some(true);
    let inverted = match dict.get(b"Decode").ok().and_then(|d| deref(doc, d)) {
        Some(Object::Array(a)) => {
            let first = a
                .first()
                .and_then(|v| deref(doc, v))
                .and_then(|v| v.as_float().ok());
            first.is_some_and(|v| v > 0.5)
        }
        _ => false,
    };
    let grey = match filters.as_slice() {
        [b"DCTDecode" | b"DCT"] => return Some(content.to_vec()),
        [b"JPXDecode"] => jpx(content, w, h)?,
        [b"CCITTFaxDecode" | b"CCF"] => {
            let bits = ccitt(content, w, h, parms.map(|p| (doc, p)))?;
            // Stencil masks paint where a sample is 0; a grey sample of 0
            // is black: either way, 0 is ink.
            bits.into_iter()
                .map(|b| if b ^ inverted { 255 } else { 0 })
                .collect()
        }
        [] | [b"FlateDecode" | b"Fl"] => {
            let space = if mask {
                Space::Gray
            } else {
                space(doc, dict.get(b"ColorSpace").ok()?, true)?
            };
            let bpc = match (mask, int(doc, dict, b"BitsPerComponent")) {
                (true, _) => 1,
                (false, Some(b @ (1 | 2 | 4 | 8 | 16))) => b as usize,
                _ => return None,
            };
            let predictor = parms.and_then(|p| int(doc, p, b"Predictor")).unwrap_or(1);
            samples(content, !filters.is_empty(), w, h, bpc, &space, predictor)?
                .into_iter()
                .map(|g| if inverted { 255 - g } else { g })
                .collect()
        }
        _ => return None,
    };
    let mut png = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut png),
        &grey,
        w,
        h,
        image::ExtendedColorType::L8,
    )
    .ok()?;
    Some(png)
}

/// The grey pixels of samples `bpc` bits a component in `space`, rows
/// padded to a byte, deflated when `deflated`, with PNG predictors when
/// `predictor` is 10 or more.
fn samples(
    content: &[u8],
    deflated: bool,
    w: u32,
    h: u32,
    bpc: usize,
    space: &Space,
    predictor: i64,
) -> Option<Vec<u8>> {
    let comps = space.components();
    let row = (w as usize * comps * bpc).div_ceil(8);
    let png_rows = match predictor {
        1 => false,
        p if p >= 10 => true,
        _ => return None,
    };
    let size = row * h as usize;
    let want = if png_rows { size + h as usize } else { size };
    let raw = if deflated {
        use std::io::Read;
        let mut raw = Vec::with_capacity(want);
        flate2::read::ZlibDecoder::new(content)
            .take(want as u64)
            .read_to_end(&mut raw)
            .ok()?;
        raw
    } else {
        content.get(..want)?.to_vec()
    };
    let raw = if png_rows {
        let bpp = (comps * bpc).div_ceil(8).max(1);
        super::unpredicted(&raw, row, bpp)?
    } else {
        raw
    };
    if raw.len() < size {
        return None;
    }
    let indexed = matches!(space, Space::Indexed(..));
    let max = (1u32 << bpc.min(8)) - 1;
    let mut out = Vec::with_capacity(w as usize * h as usize);
    let mut px = [0u8; 4];
    for r in raw.chunks(row).take(h as usize) {
        for x in 0..w as usize {
            for (c, slot) in px.iter_mut().enumerate().take(comps) {
                let i = x * comps + c;
                let v = match bpc {
                    16 => u32::from(r.get(2 * i).copied().unwrap_or(0)),
                    8 => u32::from(r.get(i).copied().unwrap_or(0)),
                    b => {
                        let bit = i * b;
                        let byte = u32::from(r.get(bit / 8).copied().unwrap_or(0));
                        (byte >> (8 - b - bit % 8)) & max
                    }
                };
                *slot = match (indexed, bpc) {
                    (true, _) | (_, 8 | 16) => v.min(255) as u8,
                    _ => (v * 255 / max) as u8,
                };
            }
            out.push(space.grey(px.get(..comps).unwrap_or(&px)));
        }
    }
    Some(out)
}

/// A JPEG 2000 picture's grey pixels, when it is `w` × `h` as its
/// dictionary says (checked before it is decoded).
fn jpx(content: &[u8], w: u32, h: u32) -> Option<Vec<u8>> {
    if !jpx_within_bounds(content) {
        return None;
    }
    let settings = hayro_jpeg2000::DecodeSettings::default();
    let image = hayro_jpeg2000::Image::new(content, &settings).ok()?;
    if image.width() != w || image.height() != h {
        return None;
    }
    let space = match image.color_space() {
        hayro_jpeg2000::ColorSpace::Gray => Space::Gray,
        hayro_jpeg2000::ColorSpace::RGB => Space::Rgb,
        hayro_jpeg2000::ColorSpace::CMYK => Space::Cmyk,
        other => match other.num_channels() {
            1 => Space::Gray,
            3 => Space::Rgb,
            4 => Space::Cmyk,
            _ => return None,
        },
    };
    let stride = space.components() + usize::from(image.has_alpha());
    let mut ctx = hayro_jpeg2000::DecoderContext::default();
    let decoded = image.decode(&mut ctx).ok()?;
    if decoded.components().len() != stride {
        return None;
    }
    let data = decoded.data_u8();
    if data.len() != w as usize * h as usize * stride {
        return None;
    }
    Some(
        data.chunks(stride)
            .map(|p| space.grey(p.get(..space.components()).unwrap_or(p)))
            .collect(),
    )
}

/// Most components of a JPEG 2000 picture (grey, RGB or CMYK, and alpha).
const MAX_JPX_COMPONENTS: u32 = 5;
/// Most tiles of a JPEG 2000 picture.
const MAX_JPX_TILES: u64 = 4096;

/// A JPEG 2000 picture's size marker (`SIZ`, the codestream's first,
/// which the decoder sizes its work by) asks for few components and
/// tiles: a codestream of 16,000 components or a million tiles of one
/// pixel is refused before it is decoded.
fn jpx_within_bounds(content: &[u8]) -> bool {
    let Some(soc) = memchr::memmem::find(content, b"\xFF\x4F\xFF\x51") else {
        return false;
    };
    let siz = soc + 2;
    let be32 = |at: usize| -> Option<u64> {
        Some(u64::from(u32::from_be_bytes(
            content.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    let fields = || -> Option<(u64, u64, u64, u64, u64)> {
        let x = be32(siz + 6)?;
        let y = be32(siz + 10)?;
        let (xo, yo) = (be32(siz + 14)?, be32(siz + 18)?);
        let (xt, yt) = (be32(siz + 22)?, be32(siz + 26)?);
        let (xto, yto) = (be32(siz + 30)?, be32(siz + 34)?);
        let c = u16::from_be_bytes(content.get(siz + 38..siz + 40)?.try_into().ok()?);
        x.checked_sub(xo.max(xto))?;
        y.checked_sub(yo.max(yto))?;
        Some((
            x.checked_sub(xto)?,
            y.checked_sub(yto)?,
            xt,
            yt,
            u64::from(c),
        ))
    };
    let Some((tw, th, xt, yt, c)) = fields() else {
        return false;
    };
    if xt == 0 || yt == 0 || c == 0 || c > u64::from(MAX_JPX_COMPONENTS) {
        return false;
    }
    tw.div_ceil(xt).saturating_mul(th.div_ceil(yt)) <= MAX_JPX_TILES
}

/// A fax-coded picture's samples as bits (`true`: a 1 bit, which is
/// white unless `BlackIs1`), `w` × `h`.
fn ccitt(
    content: &[u8],
    w: u32,
    h: u32,
    parms: Option<(&Document, &Dictionary)>,
) -> Option<Vec<bool>> {
    let get = |k: &[u8]| parms.and_then(|(doc, p)| int(doc, p, k));
    let k = get(b"K").unwrap_or(0);
    let columns = get(b"Columns").unwrap_or(1728);
    let black_is_1 = parms
        .and_then(|(doc, p)| deref(doc, p.get(b"BlackIs1").ok()?))
        .and_then(|b| b.as_bool().ok())
        == Some(true);
    if columns != i64::from(w) {
        return None;
    }
    let width = u16::try_from(w).ok()?;
    let rows = u16::try_from(h).ok()?;
    let mut out: Vec<bool> = Vec::with_capacity(w as usize * h as usize);
    let mut line = |transitions: &[u16]| {
        if out.len() < w as usize * h as usize {
            out.extend(fax::decoder::pels(transitions, width).map(|c| {
                let black = c == fax::Color::Black;
                black == black_is_1
            }));
        }
    };
    let input = content.iter().copied();
    if k < 0 {
        fax::decoder::decode_g4(input, width, Some(rows), &mut line)?;
    } else {
        // A stream that ends early still gives the rows it holds.
        let _ = fax::decoder::decode_g3(input, &mut line);
    }
    out.resize(w as usize * h as usize, !black_is_1);
    Some(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // (helpers drawing test pictures)
mod tests {
    use super::super::{text, WORK_BYTES};
    use crate::mime::picture;

    /// A page of text-like stripes, `w` × `h`: dark where `ink(x, y)`.
    fn ink(x: u32, y: u32) -> bool {
        (y / 6).is_multiple_of(3) && !(x / 4).is_multiple_of(5)
    }

    fn pictures_of(pdf: &[u8]) -> Vec<Vec<u8>> {
        let mut budget = WORK_BYTES;
        text(pdf, 1 << 16, &mut budget).pictures
    }

    /// The picture file's grey pixels.
    fn grey(file: &[u8]) -> image::GrayImage {
        image::load_from_memory(file).expect("a picture").to_luma8()
    }

    fn deflate(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    /// 1-bit rows (1 white), padded to a byte.
    fn bits(w: u32, h: u32, set: impl Fn(u32, u32) -> bool) -> Vec<u8> {
        let row = w.div_ceil(8) as usize;
        let mut out = vec![0u8; row * h as usize];
        for y in 0..h {
            for x in 0..w {
                if set(x, y) {
                    out[y as usize * row + x as usize / 8] |= 0x80 >> (x % 8);
                }
            }
        }
        out
    }

    fn assert_shows_ink(file: &[u8], w: u32, h: u32, label: &str) {
        let g = grey(file);
        assert_eq!(g.dimensions(), (w, h), "{label}");
        let wrong = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| (g.get_pixel(x, y).0[0] < 128) != ink(x, y))
            .count();
        assert!(
            wrong * 100 <= (w * h) as usize,
            "{label}: {wrong} pixels wrong"
        );
    }

    /// The stripes page as CCITT group 4.
    fn g4(w: u32, h: u32) -> Vec<u8> {
        let mut e = fax::encoder::Encoder::new(fax::VecWriter::new());
        for y in 0..h {
            let line = (0..w).map(|x| match ink(x, y) {
                true => fax::Color::Black,
                false => fax::Color::White,
            });
            e.encode_line(line, w as u16).unwrap();
        }
        e.finish().unwrap().finish()
    }

    /// (label, picture dictionary, stream, the page's XObjects, objects 6 on)
    type Case = (&'static str, String, Vec<u8>, String, Vec<Vec<u8>>);

    /// The stripes page of `w` × `h` in every encoding read (the JPEG 2000
    /// files are of 120 × 60).
    fn encoding_cases(w: u32, h: u32) -> Vec<Case> {
        let white_bits = bits(w, h, |x, y| !ink(x, y));
        let ink_bits = bits(w, h, ink);
        let grey8: Vec<u8> = (0..h)
            .flat_map(|y| (0..w).map(move |x| if ink(x, y) { 20 } else { 235 }))
            .collect();
        // Indices into a table: 0 dark blue, 1 white.
        let index4: Vec<u8> = (0..h)
            .flat_map(|y| {
                (0..w).step_by(2).map(move |x| {
                    let a = u8::from(!ink(x, y));
                    let b = u8::from(!ink(x + 1, y));
                    (a << 4) | b
                })
            })
            .collect();
        let g4 = g4(w, h);
        vec![
            (
                "1-bit grey, deflated",
                "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode".into(),
                deflate(&white_bits),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "stencil mask, raw",
                "/ImageMask true".into(),
                white_bits.clone(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "1-bit grey inverted by Decode",
                "/ColorSpace /DeviceGray /BitsPerComponent 1 /Decode [1 0] /Filter /FlateDecode".into(),
                deflate(&ink_bits),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "4-bit indexed, the table a string, the space a reference",
                "/ColorSpace 6 0 R /BitsPerComponent 4 /Filter /FlateDecode".into(),
                deflate(&index4),
                "/Im1 5 0 R".into(),
                vec![b"[/Indexed /DeviceRGB 1 <102060FFFFFF>]".to_vec()],
            ),
            (
                "ICC-based grey in a form XObject, beside a broken entry",
                "/ColorSpace [/ICCBased 7 0 R] /BitsPerComponent 8 /Filter /FlateDecode".into(),
                deflate(&grey8),
                "/Bad 99 0 R /Broken 8 0 R /Fm1 6 0 R".into(),
                vec![
                    b"<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /Im1 5 0 R >> >> /Length 0 >>\nstream\n\nendstream".to_vec(),
                    b"<< /N 1 /Length 0 >>\nstream\n\nendstream".to_vec(),
                    b"<< /Subtype /Image /Width (x) >>".to_vec(),
                ],
            ),
            (
                "CMYK separation tint",
                "/ColorSpace [/Separation /Black /DeviceCMYK 9 0 R] /BitsPerComponent 8".into(),
                grey8.iter().map(|g| 255 - g).collect(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "CCITT group 4",
                format!("/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns {w} /Rows {h} >>"),
                g4.clone(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "CCITT group 4, BlackIs1 and Decode [1 0]",
                format!("/ColorSpace /DeviceGray /BitsPerComponent 1 /Decode [1 0] /Filter [/CCITTFaxDecode] /DecodeParms [<< /K -1 /Columns {w} /BlackIs1 true >>]"),
                g4.clone(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "JPEG 2000 codestream",
                "/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /JPXDecode".into(),
                include_bytes!("../../../testdata/stripes.j2k").to_vec(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
            (
                "JP2 file",
                "/Filter /JPXDecode".into(),
                include_bytes!("../../../testdata/stripes.jp2").to_vec(),
                "/Im1 5 0 R".into(),
                vec![],
            ),
        ]
    }

    #[test]
    fn scanned_pages_in_every_encoding_are_read() {
        let (w, h) = (120u32, 60u32);
        let cases = encoding_cases(w, h);
        for (label, dict, data, xobjects, more) in cases {
            let pdf = testkit::pdf_with_picture(w, h, &dict, &data, &xobjects, &more);
            let files = pictures_of(&pdf);
            assert_eq!(files.len(), 1, "{label}");
            assert_shows_ink(&files[0], w, h, label);
            let mut b = picture::Budget::default();
            assert!(picture::hash(&files[0], &mut b).is_some(), "{label}");
        }
    }

    /// The stripes codestream with its size marker rewritten: `w` × `h`
    /// in tiles of `tw` × `th`, `c` components.
    fn jpx_siz(w: u32, h: u32, tw: u32, th: u32, c: u16) -> Vec<u8> {
        let mut j = include_bytes!("../../../testdata/stripes.j2k").to_vec();
        let siz = 2;
        for (at, v) in [(6, w), (10, h), (22, tw), (26, th)] {
            j[siz + at..siz + at + 4].copy_from_slice(&v.to_be_bytes());
        }
        j[siz + 38..siz + 40].copy_from_slice(&c.to_be_bytes());
        j
    }

    #[test]
    fn jpeg_2000_size_markers_are_bounded() {
        assert!(super::jpx_within_bounds(include_bytes!(
            "../../../testdata/stripes.j2k"
        )));
        assert!(super::jpx_within_bounds(include_bytes!(
            "../../../testdata/stripes.jp2"
        )));
        assert!(!super::jpx_within_bounds(&jpx_siz(128, 128, 1, 1, 1)));
        assert!(!super::jpx_within_bounds(&jpx_siz(64, 64, 64, 64, 16000)));
        assert!(!super::jpx_within_bounds(&jpx_siz(64, 64, 0, 64, 1)));
        assert!(!super::jpx_within_bounds(b"\xFF\x4F\xFF\x51\x00"));
    }

    #[test]
    fn hostile_pictures_are_refused_within_bounds() {
        let cases: Vec<(String, Vec<u8>)> = vec![
            // More pixels than a message may decode.
            (
                "/ColorSpace /DeviceGray /BitsPerComponent 8 /Width 100000 /Height 100000".into(),
                vec![0; 16],
            ),
            // Samples short of the size.
            ("/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode".into(), deflate(&[1, 2, 3])),
            // Not JPEG 2000, not fax.
            ("/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /JPXDecode".into(), vec![0xFF; 4096]),
            (
                "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns 7 >>".into(),
                vec![0; 64],
            ),
            // An index table of a space that is itself indexed.
            (
                "/ColorSpace [/Indexed [/Indexed /DeviceRGB 0 <000000>] 0 <00>] /BitsPerComponent 8".into(),
                vec![0; 64 * 64],
            ),
            ("/ColorSpace /Pattern /BitsPerComponent 8".into(), vec![0; 64 * 64]),
            // JPEG 2000 asking for thousands of components, or of tiles.
            ("/Filter /JPXDecode".into(), jpx_siz(128, 128, 1, 1, 3)),
            ("/Filter /JPXDecode".into(), jpx_siz(64, 64, 64, 64, 4000)),
            ("/ColorSpace /DeviceGray /BitsPerComponent 3".into(), vec![0; 64 * 64]),
        ];
        for (dict, data) in cases {
            let pdf = testkit::pdf_with_picture(64, 64, &dict, &data, "/Im1 5 0 R", &[]);
            for file in pictures_of(&pdf) {
                // What is given is a picture within the bounds.
                let g = grey(&file);
                assert!(
                    u64::from(g.width()) * u64::from(g.height()) <= picture::MAX_MESSAGE_PIXELS
                );
            }
        }
        // Forms that draw each other are followed a few deep, once each.
        let pdf = testkit::pdf_with_picture(
            8,
            8,
            "/ColorSpace /DeviceGray /BitsPerComponent 8",
            &[128; 64],
            "/Fm1 6 0 R",
            &[b"<< /Subtype /Form /Resources << /XObject << /A 6 0 R /B 7 0 R >> >> /Length 0 >>\nstream\n\nendstream".to_vec(),
              b"<< /Subtype /Form /Resources << /XObject << /A 6 0 R /B 7 0 R /I 5 0 R >> >> /Length 0 >>\nstream\n\nendstream".to_vec()],
        );
        assert_eq!(pictures_of(&pdf).len(), 1);
    }
}
