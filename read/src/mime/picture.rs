//! Perceptual hashes of attached pictures, so that a campaign that sends
//! one picture with a few pixels changed in each copy (every copy then has
//! its own SHA-256) is one campaign.
//!
//! The hash is a difference hash: the picture in grey, cut into 9 × 8
//! cells, one bit for each pair of neighbouring cells in a row (is the
//! right one brighter by more than two grey levels?). Noise in a few dozen
//! pixels moves a cell's mean by a fraction of a grey level and leaves the
//! bits as they were. The hash takes the place of the picture's SHA-256
//! among the anchors a short message is compared by
//! (`mime::attachment_hash`), and a short message with pictures is
//! compared near by them (`analysis::picture_simhash`).
//!
//! Decoding is hostile-input work; it runs where the rest of reading does
//! (a worker process, the daemon's `worker`) and is bounded before anything is
//! decoded: the encoded size, the dimensions the header declares, the
//! pixels one message may have decoded in all ([`Budget`]), and the
//! decoder's allocations. A picture outside the bounds, one that does not
//! decode, a small one (an icon, a tracking pixel) or one without contrast
//! (its hash would say nothing) keeps its SHA-256 and is compared exactly,
//! as any attachment.
//!
//! What a sender gains by triggering it: pictures of its own that shrink
//! to the grey cells of another campaign's picture join that campaign
//! only when the rest of the short message (its text and subject, its
//! other anchors) is the same too.

use std::io::Cursor;

use image::{ImageFormat, ImageReader, Limits};

/// Largest encoded picture decoded.
pub const MAX_BYTES: usize = 4 << 20;
/// Widest and tallest picture decoded.
pub const MAX_SIDE: u32 = 8192;
/// Pixels one message may have decoded in all (a PNG of 1.3 million
/// pixels of noise took about 4 ms to read on this project's machine);
/// pictures past it keep their SHA-256.
pub const MAX_MESSAGE_PIXELS: u64 = 2_000_000;
/// The decoder's allocations for one picture.
const MAX_ALLOC: u64 = 64 << 20;
/// Narrowest or lowest picture hashed: smaller ones are icons, spacers and
/// tracking pixels.
pub const MIN_SIDE: u32 = 16;
/// Fewest grey levels between the darkest and the brightest cell.
const MIN_CONTRAST: f64 = 16.0;
/// How much brighter (in grey levels) the right cell of a pair must be for
/// its bit to be set. Pictures of text are mostly flat ground, where
/// neighbouring cells are equal: without this margin a few changed pixels
/// would set or clear such a pair's bit at random.
const DEAD_ZONE: f64 = 2.0;

/// Most frames of an animation read; each counts its pixels against the
/// message's ([`MAX_MESSAGE_PIXELS`]).
pub const MAX_FRAMES: usize = 8;

/// Searches for QR codes one message may make (a picture takes one, and
/// up to two more while none is found: `qr_codes`).
pub const MAX_CODE_SEARCHES: usize = 3;
/// A picture is searched for QR codes at this size at most (its longer
/// side, scaled down): a QR code drawn to be scanned from a screen has
/// modules of several pixels at that size, and the search's work is
/// bounded by it whatever the picture's size (it grows with the square of
/// the finder patterns found, at most about one per 49 pixels).
pub const CODE_SIDE: u32 = 512;
/// Most QR codes read from one picture.
pub const MAX_CODES: usize = 4;
/// Most finder-pattern crossings (counted as rqrr would see them: the three squares
/// in a QR code's corners, and the look-alikes in its data) a picture may
/// hold to be searched. rqrr tries the patterns in pairs and copies the
/// picture for each pair it tries, so a picture tiled with patterns took
/// minutes (1,024 of them: 4 s at 256 pixels a side; 4,096: 394 s at
/// 512); 64 tiled patterns take 57 ms at 512, 9 take 8 ms. A QR code of a
/// 250-character URL counts up to 46 (its data holds look-alikes). A
/// picture with more is not searched, and its message says it was read
/// partly.
pub const MAX_FINDERS: usize = 48;
/// Longest QR code content kept (a URL).
const MAX_CODE_CHARS: usize = 2048;

/// What one message may still decode.
#[derive(Debug, Clone)]
pub struct Budget {
    pixels: u64,
    /// Searches for QR codes still to make ([`MAX_CODE_SEARCHES`]).
    code_searches: usize,
    /// Pictures and pixels whose text may still be read
    /// ([`crate::ocr::MAX_PICTURES`], [`crate::ocr::MAX_PIXELS`]).
    ocr_pictures: usize,
    ocr_pixels: u64,
    /// Milliseconds of recognition left ([`crate::ocr::DEADLINE_MS`]).
    ocr_ms: u32,
    /// Whether pictures' text is read, here or elsewhere.
    ocr: Ocr,
    /// A picture's text was left to another process.
    pub wants_ocr: bool,
    /// The recognizer stopped at its deadline on a picture (its text was
    /// not read).
    pub stopped: bool,
    /// A picture was refused for want of pixels, or not searched for QR
    /// codes for its many finder patterns (the message was read partly).
    pub spent: bool,
}

/// Whether pictures' text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ocr {
    /// Not read.
    Off,
    /// Read here (the process provided a recognizer: [`crate::ocr`]).
    Here,
    /// Read by another process: a reading only says that it holds such a
    /// picture.
    Elsewhere,
}

impl Default for Budget {
    /// A message's budget, without reading pictures' text.
    fn default() -> Budget {
        Budget::new(Ocr::Off)
    }
}

impl Budget {
    /// A message's budget; pictures' text as `ocr` says.
    pub fn new(ocr: Ocr) -> Budget {
        Budget {
            pixels: MAX_MESSAGE_PIXELS,
            code_searches: MAX_CODE_SEARCHES,
            ocr_pictures: if ocr == Ocr::Off {
                0
            } else {
                crate::ocr::MAX_PICTURES
            },
            ocr,
            wants_ocr: false,
            stopped: false,
            ocr_pixels: crate::ocr::MAX_PIXELS,
            ocr_ms: crate::ocr::DEADLINE_MS,
            spent: false,
        }
    }
}

/// What is read from a picture.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Read {
    /// Its difference hash ([`hash`]).
    pub hash: Option<u64>,
    /// The content of the QR codes in it (when asked for): a QR-code
    /// phishing message's link.
    pub codes: Vec<String>,
    /// The text drawn in it (when asked for, and Tesseract is loaded:
    /// [`crate::ocr`]): image spam's text.
    pub text: Option<String>,
}

/// Whether `bytes` are a picture this module reads (by their first
/// bytes): what a shallow reading leaves for the deep one.
pub fn is_picture(bytes: &[u8]) -> bool {
    bytes.len() <= MAX_BYTES && reader(bytes).is_some()
}

/// The formats read: those mail clients show inline (by their first
/// bytes, whatever the part's declared type).
const FORMATS: [ImageFormat; 7] = [
    ImageFormat::Png,
    ImageFormat::Jpeg,
    ImageFormat::Gif,
    ImageFormat::WebP,
    ImageFormat::Bmp,
    ImageFormat::Tiff,
    ImageFormat::Ico,
];

/// The decoders' bounds.
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    limits
}

/// A reader of `bytes` when they are a picture of one of [`FORMATS`],
/// with the bounds set.
fn reader(bytes: &[u8]) -> Option<ImageReader<Cursor<&[u8]>>> {
    let format = image::guess_format(bytes).ok()?;
    if !FORMATS.contains(&format) {
        return None;
    }
    let mut r = ImageReader::with_format(Cursor::new(bytes), format);
    r.limits(limits());
    Some(r)
}

/// The difference hash of the picture in `bytes`, or `None` (see the
/// module documentation for when). The picture's pixels count against
/// `budget` before it is decoded, whether it decodes or not.
pub fn hash(bytes: &[u8], budget: &mut Budget) -> Option<u64> {
    read(bytes, budget, false).hash
}

/// The difference hash of the picture in `bytes` ([`hash`]) and, when
/// `short` (the message's own text is short) and the message's budget has
/// pictures left for it, the QR codes in it ([`MAX_CODE_SEARCHES`]) or,
/// when it holds none, its text ([`crate::ocr`]).
pub fn read(bytes: &[u8], budget: &mut Budget, short: bool) -> Read {
    let frames = decode(bytes, budget);
    // An animation's first frame that has a hash stands for it (a blank
    // first frame says nothing); its codes and text are every frame's
    // that a person would see, each distinct frame once.
    let hashes: Vec<Option<u64>> = frames.iter().map(dhash).collect();
    let hash = hashes.iter().find_map(|h| *h);
    let mut codes = Vec::new();
    // A frame without contrast (blank) shows nothing to search or read:
    // it spends nothing (found by a helper's cases: a blank first frame
    // used the searches up, and one of the pictures read).
    let frames: Vec<(&image::GrayImage, Option<u64>)> = frames
        .iter()
        .zip(hashes)
        .filter(|(f, _)| !blank(f))
        .collect();
    if short {
        for (frame, _) in &frames {
            if budget.code_searches == 0 || !codes.is_empty() {
                break;
            }
            let found = qr_codes(frame, &mut budget.code_searches);
            budget.spent |= found.is_none();
            codes = found.unwrap_or_default();
        }
    }
    let mut text: Option<String> = None;
    if short && codes.is_empty() {
        let mut read: Vec<u64> = Vec::new();
        for &(frame, h) in &frames {
            if h.is_some_and(|h| read.iter().any(|r| (r ^ h).count_ones() <= SAME_FRAME_BITS)) {
                continue;
            }
            read.extend(h);
            if let Some(t) = picture_text(frame, budget) {
                match &mut text {
                    Some(all) => {
                        all.push_str("\n\n");
                        all.push_str(&t);
                    }
                    None => text = Some(t),
                }
            }
        }
    }
    Read { hash, codes, text }
}

/// Frames of an animation whose hashes differ by at most this many bits
/// are the same picture to read.
const SAME_FRAME_BITS: u32 = 4;

/// Least scale a picture is read at to fit the message's pixels: text
/// drawn at 15 pixels is still read at three quarters of it.
const MIN_OCR_SCALE: f64 = 0.75;

/// The text of `grey` ([`crate::ocr::Recognizer`]) within the message's
/// budget: a picture larger than the pixels left is read scaled down to
/// them, to [`MIN_OCR_SCALE`] at most, and then, when it is still larger,
/// its top part only, as many whole rows as the pixels allow (the message
/// was read partly). A picture of a long text thus gives its first part,
/// which its copies share.
pub(crate) fn picture_text(grey: &image::GrayImage, budget: &mut Budget) -> Option<String> {
    text_of(grey, budget, false)
}

/// [`picture_text`] of a picture this crate drew (`drawn`: read as it
/// is, [`crate::ocr::Recognizer::recognize_drawn`]).
pub(crate) fn drawn_text(grey: &image::GrayImage, budget: &mut Budget) -> Option<String> {
    text_of(grey, budget, true)
}

fn text_of(grey: &image::GrayImage, budget: &mut Budget, drawn: bool) -> Option<String> {
    if budget.ocr_pictures == 0 || budget.ocr_ms == 0 {
        return None;
    }
    if budget.ocr == Ocr::Elsewhere {
        budget.wants_ocr = true;
        return None;
    }
    let recognizer = crate::ocr::provided()?;
    let (w, h) = grey.dimensions();
    let pixels = u64::from(w) * u64::from(h);
    let mut scaled = None;
    if pixels > budget.ocr_pixels {
        let f = (budget.ocr_pixels as f64 / pixels as f64)
            .sqrt()
            .max(MIN_OCR_SCALE);
        let (sw, sh) = (
            ((f64::from(w) * f) as u32).max(1),
            ((f64::from(h) * f) as u32).max(1),
        );
        let mut s = image::imageops::resize(grey, sw, sh, image::imageops::FilterType::Triangle);
        let rows = budget.ocr_pixels / u64::from(sw);
        if u64::from(sh) > rows {
            budget.spent = true;
            let rows = u32::try_from(rows).unwrap_or(u32::MAX);
            if rows < MIN_SIDE {
                return None;
            }
            s = image::imageops::crop_imm(&s, 0, 0, sw, rows).to_image();
        }
        scaled = Some(s);
    }
    // Light text on a dark ground, as dark on light (Tesseract reads
    // that; it is told not to try each line both ways). The picture is
    // copied only to be inverted.
    let source = scaled.as_ref().unwrap_or(grey);
    let dark = source.pixels().filter(|p| p.0[0] < 128).count();
    let inverted = (dark * 2 > source.as_raw().len()).then(|| {
        let mut copy = source.clone();
        image::imageops::invert(&mut copy);
        copy
    });
    let grey = inverted.as_ref().or(scaled.as_ref()).unwrap_or(grey);
    let (w, h) = grey.dimensions();
    budget.ocr_pictures -= 1;
    budget.ocr_pixels = budget
        .ocr_pixels
        .saturating_sub(u64::from(w) * u64::from(h));
    let started = std::time::Instant::now();
    let read = match drawn {
        true => recognizer.recognize_drawn(grey.as_raw(), w, h, budget.ocr_ms),
        false => recognizer.recognize(grey.as_raw(), w, h, budget.ocr_ms),
    };
    let took = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    budget.ocr_ms = budget.ocr_ms.saturating_sub(took);
    if read.remembered {
        // A picture family read before (a logo, a banner, the same
        // picture of text): paid once, not by every message that shows it.
        budget.ocr_pictures += 1;
        budget.ocr_pixels = budget
            .ocr_pixels
            .saturating_add(u64::from(w) * u64::from(h))
            .min(crate::ocr::MAX_PIXELS);
    }
    budget.spent |= read.stopped;
    budget.stopped |= read.stopped;
    read.text
}

/// The picture in `bytes` in grey, within the bounds (see the module
/// documentation); its pixels count against `budget` before it is
/// decoded.
fn decode(bytes: &[u8], budget: &mut Budget) -> Vec<image::GrayImage> {
    if bytes.len() > MAX_BYTES {
        return Vec::new();
    }
    let Some((w, h)) = reader(bytes).and_then(|r| r.into_dimensions().ok()) else {
        return Vec::new();
    };
    if w < MIN_SIDE || h < MIN_SIDE {
        return Vec::new();
    }
    let pixels = u64::from(w) * u64::from(h);
    let take = |budget: &mut Budget| match budget.pixels.checked_sub(pixels) {
        Some(left) => {
            budget.pixels = left;
            true
        }
        None => {
            budget.spent = true;
            false
        }
    };
    if let Some(frames) = animation(bytes) {
        let mut out = Vec::new();
        for frame in frames.take(MAX_FRAMES) {
            if !take(budget) {
                break;
            }
            let Ok(frame) = frame else {
                break;
            };
            out.push(image::DynamicImage::ImageRgba8(frame.into_buffer()).into_luma8());
        }
        return out;
    }
    if !take(budget) {
        return Vec::new();
    }
    reader(bytes)
        .and_then(|r| r.decode().ok())
        .map(|p| vec![p.into_luma8()])
        .unwrap_or_default()
}

/// The frames of `bytes` when it is an animation (a GIF, WebP or PNG of
/// more than one frame), each the whole picture as shown then; `None` for
/// a still picture.
fn animation(bytes: &[u8]) -> Option<image::Frames<'_>> {
    use image::codecs::{gif::GifDecoder, png::PngDecoder, webp::WebPDecoder};
    use image::{AnimationDecoder, ImageDecoder};
    match image::guess_format(bytes).ok()? {
        ImageFormat::Gif => {
            let mut d = GifDecoder::new(Cursor::new(bytes)).ok()?;
            d.set_limits(limits()).ok()?;
            Some(d.into_frames())
        }
        ImageFormat::WebP => {
            let mut d = WebPDecoder::new(Cursor::new(bytes)).ok()?;
            if !d.has_animation() {
                return None;
            }
            d.set_limits(limits()).ok()?;
            Some(d.into_frames())
        }
        ImageFormat::Png => {
            let mut d = PngDecoder::new(Cursor::new(bytes)).ok()?;
            if !d.is_apng().ok()? {
                return None;
            }
            d.set_limits(limits()).ok()?;
            Some(d.apng().ok()?.into_frames())
        }
        _ => None,
    }
}

/// The content of the QR codes in `grey` (rqrr), searched at
/// [`CODE_SIDE`] at most; when none is found, again with each pixel the
/// median of its neighbours (a speckle on a module's centre flips the bit
/// rqrr samples there, and one in the format bits loses the code), then
/// at half the size (speckles fade into the modules), while the message
/// has searches left; `None` when it holds more than [`MAX_FINDERS`]
/// finder patterns.
fn qr_codes(grey: &image::GrayImage, searches: &mut usize) -> Option<Vec<String>> {
    let (w, h) = grey.dimensions();
    let half = (w.max(h) / 2).min(CODE_SIDE / 2);
    let tries = [(CODE_SIDE, false), (CODE_SIDE, true)]
        .into_iter()
        .chain((w.max(h) >= 2 * MIN_SIDE).then_some((half, false)));
    let mut found = Vec::new();
    for (side, median) in tries {
        if *searches == 0 {
            break;
        }
        *searches -= 1;
        found = qr_codes_at(grey, side, median)?;
        if !found.is_empty() {
            break;
        }
    }
    Some(found)
}

/// [`qr_codes`] at `side` pixels at most (each pixel the median of its
/// 3 × 3 neighbourhood when `median`), in black and white at the midpoint
/// of its darkest and brightest grey.
fn qr_codes_at(grey: &image::GrayImage, side: u32, median: bool) -> Option<Vec<String>> {
    let (w, h) = grey.dimensions();
    let mut scaled = None;
    if w.max(h) > side {
        let f = f64::from(side) / f64::from(w.max(h));
        let (sw, sh) = (
            ((f64::from(w) * f).round() as u32).max(1),
            ((f64::from(h) * f).round() as u32).max(1),
        );
        scaled = Some(image::imageops::thumbnail(grey, sw, sh));
    }
    if median {
        scaled = Some(median3(scaled.as_ref().unwrap_or(grey)));
    }
    let grey = scaled.as_ref().unwrap_or(grey);
    let (w, h) = grey.dimensions();
    let (lo, hi) = grey
        .pixels()
        .fold((255u8, 0u8), |(lo, hi), p| (lo.min(p.0[0]), hi.max(p.0[0])));
    let mid = (u16::from(lo) + u16::from(hi)) / 2;
    let black = |x: usize, y: usize| {
        grey.get_pixel_checked(x as u32, y as u32)
            .is_some_and(|p| u16::from(p.0[0]) <= mid)
    };
    if finder_patterns(w as usize, h as usize, &black, MAX_FINDERS + 1) > MAX_FINDERS {
        return None;
    }
    let mut prepared = rqrr::PreparedImage::prepare_from_bitmap(w as usize, h as usize, black);
    Some(
        prepared
            .detect_grids()
            .into_iter()
            .take(MAX_CODES)
            .filter_map(|grid| grid.decode().ok())
            .map(|(_, content)| {
                content
                    .trim()
                    .chars()
                    .take(MAX_CODE_CHARS)
                    .collect::<String>()
            })
            .filter(|c| !c.is_empty())
            .collect(),
    )
}

/// `grey` with each pixel the median of its 3 × 3 neighbourhood (the
/// picture's edge repeated).
fn median3(grey: &image::GrayImage) -> image::GrayImage {
    let (w, h) = grey.dimensions();
    image::GrayImage::from_fn(w, h, |x, y| {
        let mut v = [0u8; 9];
        let around = [y.saturating_sub(1), y, (y + 1).min(h - 1)]
            .into_iter()
            .flat_map(|yy| [x.saturating_sub(1), x, (x + 1).min(w - 1)].map(|xx| (xx, yy)));
        for (p, (xx, yy)) in v.iter_mut().zip(around) {
            *p = grey.get_pixel(xx, yy).0[0];
        }
        v.sort_unstable();
        let [_, _, _, _, median, ..] = v;
        image::Luma([median])
    })
}

/// How many finder patterns the picture of `w` × `h` pixels (`black`)
/// may hold, counted up to `stop`: at least as many as rqrr finds in it.
/// A row crosses a pattern's middle as black, white, black (three times
/// as long), white, black; rqrr looks for a pattern only where a row
/// does, with the tolerance written here. Rows that cross the middle block
/// of one pattern are counted once: a crossing is merged with one on the
/// row above whose middle block overlaps its own (the same black region).
/// Counted by linked crossings, never fewer than rqrr's patterns, each of
/// which has its own middle block.
fn finder_patterns(
    w: usize,
    h: usize,
    black: &impl Fn(usize, usize) -> bool,
    stop: usize,
) -> usize {
    let mut count = 0;
    // The middle blocks crossed on the row above and on this row.
    let mut above: Vec<(usize, usize)> = Vec::new();
    let mut here: Vec<(usize, usize)> = Vec::new();
    for y in 0..h {
        here.clear();
        // Lengths of the last five runs, the colour and length of the
        // current one (a virtual white pixel ends the row).
        let mut runs = [0usize; 5];
        let mut colour = black(0, y);
        let mut run = 1;
        let mut changes = 0usize;
        for x in 1..=w {
            let c = x < w && black(x, y);
            if c == colour {
                run += 1;
                continue;
            }
            colour = c;
            runs.rotate_left(1);
            runs[4] = run;
            run = 1;
            changes += 1;
            if !c && changes >= 5 && crossing(&runs) {
                let start = x - runs[4] - runs[3] - runs[2];
                here.push((start, start + runs[2]));
                let linked = above.iter().any(|&(a, b)| a < start + runs[2] && start < b);
                if !linked {
                    count += 1;
                    if count >= stop {
                        return count;
                    }
                }
            }
        }
        std::mem::swap(&mut above, &mut here);
    }
    count
}

/// Five runs in the ratio 1:1:3:1:1 within rqrr's tolerance (a quarter of
/// the mean run on either side, three quarters of it wide).
fn crossing(runs: &[usize; 5]) -> bool {
    let avg = (runs[0] + runs[1] + runs[3] + runs[4]) / 4;
    let err = avg * 3 / 4;
    runs.iter()
        .zip([1usize, 1, 3, 1, 1])
        .all(|(&r, k)| r + err >= k * avg && r <= k * avg + err)
}

/// The difference hash of `grey` (see the module documentation), or
/// `None` when it has too little contrast.
/// The difference hash (`dhash`) of a grey picture given as its `w` × `h` pixels, a row
/// after another (what a recognizer gets: `crate::ocr::Recognizer`).
pub fn grey_hash(pixels: &[u8], w: u32, h: u32) -> Option<u64> {
    let grey = image::GrayImage::from_raw(w, h, pixels.to_vec())?;
    dhash(&grey)
}

/// A picture of one grey, near enough ([`MIN_CONTRAST`] between its
/// darkest and brightest pixel): nothing in it to search or read. (Its
/// cells' contrast is not the test: a small code or line of text on a
/// large blank ground changes no cell's mean by that much.)
fn blank(grey: &image::GrayImage) -> bool {
    let (lo, hi) = grey
        .as_raw()
        .iter()
        .fold((u8::MAX, u8::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
    f64::from(hi.saturating_sub(lo)) < MIN_CONTRAST
}

fn dhash(grey: &image::GrayImage) -> Option<u64> {
    let (w, h) = grey.dimensions();
    // Each cell's mean grey level, from whole sums: no rounding of a
    // cell to a level that one changed pixel could tip.
    let mut sums = [[0u64; 9]; 8];
    let mut counts = [[0u64; 9]; 8];
    for (y, row) in grey.rows().enumerate() {
        let cy = (y as u64 * 8 / u64::from(h)) as usize;
        for (x, p) in row.enumerate() {
            let cx = (x as u64 * 9 / u64::from(w)) as usize;
            if let (Some(s), Some(c)) = (
                sums.get_mut(cy).and_then(|r| r.get_mut(cx)),
                counts.get_mut(cy).and_then(|r| r.get_mut(cx)),
            ) {
                *s += u64::from(p[0]);
                *c += 1;
            }
        }
    }
    let mut means = [[0f64; 9]; 8];
    for ((m, s), c) in means
        .iter_mut()
        .flatten()
        .zip(sums.iter().flatten())
        .zip(counts.iter().flatten())
    {
        *m = *s as f64 / (*c).max(1) as f64;
    }
    let (min, max) = means
        .iter()
        .flatten()
        .fold((f64::MAX, 0f64), |(lo, hi), m| (lo.min(*m), hi.max(*m)));
    if max - min < MIN_CONTRAST {
        return None;
    }
    let mut bits = 0u64;
    for row in &means {
        for (left, right) in row.iter().zip(row.iter().skip(1)) {
            bits = (bits << 1) | u64::from(right - left > DEAD_ZONE);
        }
    }
    Some(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{DynamicImage, Rgb, RgbImage};

    const PINNED: u64 = 0xbb6e_dfbf_7fff_7efd;

    /// A picture with shapes and gradients, in `format`.
    pub(crate) fn encoded(w: u32, h: u32, seed: u32, format: ImageFormat) -> Vec<u8> {
        let img = RgbImage::from_fn(w, h, |x, y| {
            let band = (x / 37 + y / 23 + seed) % 3;
            Rgb([
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                [30, 140, 230][band as usize],
            ])
        });
        let mut out = Vec::new();
        let img = DynamicImage::ImageRgb8(img);
        // (An icon's PNG is RGBA, as icon readers ask.)
        let img = if format == ImageFormat::Ico {
            DynamicImage::ImageRgba8(img.into_rgba8())
        } else {
            img
        };
        img.write_to(&mut Cursor::new(&mut out), format)
            .expect("encodes");
        out
    }

    /// `data` as a QR code drawn `scale` pixels a module at (`dx`, `dy`) on
    /// a `w` × `h` grey picture, with `speckles` random dark pixels, PNG.
    pub(crate) fn qr_png(
        data: &str,
        w: u32,
        h: u32,
        scale: u32,
        dx: u32,
        dy: u32,
        speckles: u32,
    ) -> Vec<u8> {
        let code = qrcode::QrCode::new(data.as_bytes()).expect("encodes");
        let modules = code.width() as u32;
        let colors = code.to_colors();
        let mut state = u64::from(speckles) * 7919 + u64::from(dx);
        let mut img = image::GrayImage::from_pixel(w, h, image::Luma([250]));
        for y in 0..modules * scale {
            for x in 0..modules * scale {
                let i = ((y / scale) * modules + x / scale) as usize;
                if colors[i] == qrcode::Color::Dark && x + dx < w && y + dy < h {
                    img.put_pixel(x + dx, y + dy, image::Luma([20]));
                }
            }
        }
        for _ in 0..speckles {
            let r = testkit::splitmix(&mut state);
            img.put_pixel(
                (r % u64::from(w)) as u32,
                ((r >> 32) % u64::from(h)) as u32,
                image::Luma([90]),
            );
        }
        let mut out = Vec::new();
        DynamicImage::ImageLuma8(img)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .expect("encodes");
        out
    }

    #[test]
    fn qr_codes_are_read_when_asked_within_the_bound() {
        let url = "https://login.example.net/verify?u=48213&t=9f2c";
        // Drawn large (scaled down before the search), offset, speckled.
        let big = qr_png(url, 1400, 1000, 16, 300, 120, 400);
        let mut b = Budget::default();
        assert_eq!(read(&big, &mut b, true).codes, vec![url.to_owned()]);
        let small = qr_png(url, 300, 300, 5, 20, 40, 50);
        assert_eq!(read(&small, &mut b, true).codes, vec![url.to_owned()]);
        // Not asked: not searched; past the message's searches
        // (MAX_CODE_SEARCHES, one used by each picture so far): not
        // searched.
        assert!(read(&small, &mut Budget::default(), false).codes.is_empty());
        assert_eq!(read(&small, &mut b, true).codes.len(), 1);
        assert!(read(&small, &mut b, true).codes.is_empty());
        // The hash is the same whether codes are searched or not.
        assert_eq!(
            read(&small, &mut Budget::default(), true).hash,
            hash(&small, &mut Budget::default())
        );
    }

    #[test]
    fn a_picture_full_of_finder_patterns_is_searched_within_its_bound() {
        // The QR finder pattern (a 7-module ring around a 3-module block)
        // tiled over a picture at the smallest size the search sees: the
        // worst case of its grouping of patterns.
        let mut img = image::GrayImage::from_pixel(CODE_SIDE, CODE_SIDE, image::Luma([255]));
        for (x, y, p) in img.enumerate_pixels_mut() {
            let (mx, my) = (x % 8, y % 8);
            let ring = mx < 7 && my < 7 && (mx == 0 || mx == 6 || my == 0 || my == 6);
            let block = (2..=4).contains(&mx) && (2..=4).contains(&my);
            if ring || block {
                *p = image::Luma([0]);
            }
        }
        let mut png = Vec::new();
        DynamicImage::ImageLuma8(img)
            .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
            .expect("encodes");
        let mut budget = Budget::default();
        let read = read(&png, &mut budget, true);
        assert!(read.codes.is_empty());
        assert!(budget.spent, "not searched, and said so");
        // A real code's three patterns are counted as three, however
        // large it is drawn.
        let grey = image::load_from_memory(&qr_png("https://a.example/", 512, 512, 16, 10, 10, 0))
            .expect("decodes")
            .into_luma8();
        let black = |x: usize, y: usize| grey.get_pixel(x as u32, y as u32).0[0] < 128;
        let found = finder_patterns(512, 512, &black, 1000);
        assert!((3..=MAX_FINDERS).contains(&found), "{found}");
    }

    #[test]
    fn the_same_picture_in_three_formats_hashes_alike() {
        let mut b = Budget::default();
        let png = hash(&encoded(300, 200, 1, ImageFormat::Png), &mut b).expect("png");
        let jpg = hash(&encoded(300, 200, 1, ImageFormat::Jpeg), &mut b).expect("jpeg");
        let gif = hash(&encoded(300, 200, 1, ImageFormat::Gif), &mut b).expect("gif");
        assert!((png ^ jpg).count_ones() <= 4, "{png:016x} {jpg:016x}");
        assert!((png ^ gif).count_ones() <= 8, "{png:016x} {gif:016x}");
        let other = hash(&encoded(300, 200, 2, ImageFormat::Png), &mut b).expect("png");
        assert!((png ^ other).count_ones() >= 8, "{png:016x} {other:016x}");
    }

    /// Every format a client shows inline is read, to the same hash.
    #[test]
    fn every_format_a_client_shows_hashes_alike() {
        let mut b = Budget::default();
        let png = hash(&encoded(256, 200, 1, ImageFormat::Png), &mut b).expect("png");
        for format in [
            ImageFormat::WebP,
            ImageFormat::Bmp,
            ImageFormat::Tiff,
            ImageFormat::Ico,
        ] {
            let mut b = Budget::default();
            let h = hash(&encoded(256, 200, 1, format), &mut b);
            let h = h.unwrap_or_else(|| panic!("{format:?} not read"));
            assert!(
                (png ^ h).count_ones() <= 4,
                "{format:?}: {png:016x} {h:016x}"
            );
        }
    }

    /// An animation is read as a person sees it: a blank first frame does
    /// not stand for it, and each distinct frame counts; its frames are
    /// bounded ([`MAX_FRAMES`]) and paid for in pixels.
    #[test]
    fn an_animations_frames_are_read() {
        use image::codecs::gif::GifEncoder;
        use image::{Delay, Frame, RgbaImage};
        let (w, h) = (200, 120);
        let shapes = image::load_from_memory(&encoded(w, h, 1, ImageFormat::Png))
            .expect("decodes")
            .into_rgba8();
        let blank = RgbaImage::from_pixel(w, h, image::Rgba([250, 250, 250, 255]));
        let gif = |frames: Vec<RgbaImage>| {
            let mut out = Vec::new();
            {
                let mut e = GifEncoder::new(&mut out);
                e.encode_frames(
                    frames
                        .into_iter()
                        .map(|f| Frame::from_parts(f, 0, 0, Delay::from_numer_denom_ms(500, 1))),
                )
                .expect("encodes");
            }
            out
        };
        let still = hash(&gif(vec![shapes.clone()]), &mut Budget::default()).expect("still");
        let mut b = Budget::default();
        let late = hash(&gif(vec![blank.clone(), shapes.clone()]), &mut b).expect("frame 2");
        assert!((still ^ late).count_ones() <= 4, "{still:016x} {late:016x}");
        assert_eq!(
            MAX_MESSAGE_PIXELS - b.pixels,
            2 * u64::from(w * h),
            "two frames paid"
        );
        let mut b = Budget::default();
        let many: Vec<RgbaImage> = (0..40).map(|_| blank.clone()).collect();
        assert_eq!(hash(&gif(many), &mut b), None);
        assert_eq!(
            MAX_MESSAGE_PIXELS - b.pixels,
            MAX_FRAMES as u64 * u64::from(w * h),
            "at most MAX_FRAMES frames"
        );
    }

    /// What a sender can write into each format's header: dimensions past
    /// the bounds, truncation, junk after the signature. Refused without a
    /// panic, and declared sizes before anything is decoded.
    #[test]
    fn hostile_pictures_of_every_format_are_refused() {
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Gif,
            ImageFormat::WebP,
            ImageFormat::Bmp,
            ImageFormat::Tiff,
            ImageFormat::Ico,
        ] {
            let whole = encoded(200, 200, 1, format);
            let mut b = Budget::default();
            for cut in [8, 32, whole.len() / 3, whole.len() - 1] {
                let _ = hash(&whole[..cut.min(whole.len())], &mut b);
            }
            let mut junk = whole.clone();
            for (i, byte) in junk.iter_mut().enumerate().skip(16) {
                *byte = (i as u8).wrapping_mul(151);
            }
            let _ = hash(&junk, &mut Budget::default());
        }
        // A BMP that declares 100,000 × 100,000 pixels.
        let mut bmp = encoded(64, 64, 1, ImageFormat::Bmp);
        bmp[18..22].copy_from_slice(&100_000i32.to_le_bytes());
        bmp[22..26].copy_from_slice(&100_000i32.to_le_bytes());
        let mut b = Budget::default();
        assert_eq!(hash(&bmp, &mut b), None);
        assert_eq!(b.pixels, MAX_MESSAGE_PIXELS, "refused at the header");
    }

    #[test]
    fn bounds_are_kept_before_decoding() {
        // A header that declares more pixels than the bound.
        let mut b = Budget::default();
        let mut png = encoded(64, 64, 1, ImageFormat::Png);
        assert!(hash(&png, &mut b).is_some());
        // IHDR's width and height, and its CRC made to match.
        png[16..20].copy_from_slice(&100_000u32.to_be_bytes());
        png[20..24].copy_from_slice(&100_000u32.to_be_bytes());
        let crc = crc32(&png[12..29]);
        png[29..33].copy_from_slice(&crc.to_be_bytes());
        let before = b.pixels;
        assert_eq!(hash(&png, &mut b), None);
        assert_eq!(b.pixels, before, "refused at the header, nothing spent");
        // The budget: pictures past it keep their SHA-256.
        let big = encoded(1500, 1000, 1, ImageFormat::Png);
        let mut b = Budget::default();
        assert!(hash(&big, &mut b).is_some());
        assert_eq!(hash(&big, &mut b), None);
        // Small, flat, truncated, not a picture, too large.
        let mut b = Budget::default();
        assert_eq!(hash(&encoded(12, 40, 1, ImageFormat::Png), &mut b), None);
        let flat = {
            let mut out = Vec::new();
            DynamicImage::ImageRgb8(RgbImage::from_pixel(100, 100, Rgb([9, 9, 9])))
                .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
                .expect("encodes");
            out
        };
        assert_eq!(hash(&flat, &mut b), None);
        let whole = encoded(200, 200, 1, ImageFormat::Png);
        assert_eq!(hash(&whole[..whole.len() / 2], &mut b), None);
        assert_eq!(hash(b"%PDF-1.4 not a picture", &mut b), None);
        let mut huge = whole.clone();
        huge.resize(MAX_BYTES + 1, 0);
        assert_eq!(hash(&huge, &mut b), None);
    }

    /// The hash of a fixed picture, pinned: a change is a fingerprint
    /// version change (`simhash::VERSION`).
    #[test]
    fn the_hash_is_pinned() {
        let h = hash(
            &encoded(300, 200, 1, ImageFormat::Png),
            &mut Budget::default(),
        );
        assert_eq!(h, Some(PINNED), "{h:016x?}");
    }

    /// A message of 8 pictures of a million pixels each: two are decoded
    /// (the message's budget), the others keep their SHA-256, and every
    /// one is still an anchor.
    #[test]
    fn a_message_decodes_at_most_its_budget() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(encoded(
            1000,
            1000,
            1,
            ImageFormat::Png,
        ));
        let mut raw = String::from(
            "From: a@shop.example\nSubject: many\nMIME-Version: 1.0\n\
             Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nSee.\n",
        );
        for _ in 0..8 {
            raw.push_str("--B\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\n");
            raw.push_str(&b64);
            raw.push('\n');
        }
        raw.push_str("--B--\n");
        let scan = crate::config::ScanConfig {
            max_parse_bytes: 2 * raw.len(),
            ..Default::default()
        };
        let crate::mime::MimeOutcome::Parsed(body) = crate::mime::extract(raw.as_bytes(), &scan)
        else {
            panic!("parsed");
        };
        assert_eq!(body.attachments.len(), 8);
        assert_eq!(body.pictures.len(), 2);
    }

    /// Pictures written into the page (`data:` URIs) are read as attached
    /// ones, in every format, when shown; a hidden one, one that is not
    /// base64 or not a picture counts for nothing; their number is bounded.
    #[test]
    fn pictures_written_into_the_page_are_read() {
        use base64::Engine as _;
        let b64 = |f| base64::engine::general_purpose::STANDARD.encode(encoded(300, 200, 1, f));
        let (png, webp) = (b64(ImageFormat::Png), b64(ImageFormat::WebP));
        let html = format!(
            "<p>See below.</p><img src=\"data:image/png;base64,{png}\">\
             <img style=\"display:none\" src=\"data:image/png;base64,{png}\">\
             <img src=\"DATA:image/webp;base64,{webp}\">\
             <img src=\"data:image/png,not-base64\"><img src=\"data:image/png;base64,AAAA\">"
        );
        let raw = format!(
            "From: a@shop.example\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html\n\n{html}\n"
        );
        let scan = crate::config::ScanConfig {
            max_parse_bytes: 2 * raw.len(),
            ..Default::default()
        };
        let crate::mime::MimeOutcome::Parsed(body) = crate::mime::extract(raw.as_bytes(), &scan)
        else {
            panic!("parsed");
        };
        assert_eq!(body.pictures.len(), 2, "the shown PNG and WebP");
        assert!((body.pictures[0] ^ PINNED).count_ones() == 0);
        assert!((body.pictures[1] ^ PINNED).count_ones() <= 4);
        assert_eq!(
            body.attachments.len(),
            3,
            "and the AAAA bytes, as any attachment"
        );
        // At most MAX_DATA_PICTURES.
        let many = format!("<img src=\"data:image/png;base64,{png}\">").repeat(9);
        let raw = format!(
            "From: a@shop.example\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html\n\n{many}\n"
        );
        let scan = crate::config::ScanConfig {
            max_parse_bytes: 2 * raw.len(),
            ..Default::default()
        };
        let crate::mime::MimeOutcome::Parsed(body) = crate::mime::extract(raw.as_bytes(), &scan)
        else {
            panic!("parsed");
        };
        assert!(body.attachments.len() <= crate::mime::html::MAX_DATA_PICTURES);
    }

    /// CRC-32 of PNG chunks (ISO 3309), bit by bit.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
}
