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

/// What one message may still decode.
#[derive(Debug, Clone)]
pub struct Budget {
    pixels: u64,
    /// A picture was refused for want of pixels (the message was read
    /// partly).
    pub spent: bool,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            pixels: MAX_MESSAGE_PIXELS,
            spent: false,
        }
    }
}

/// Whether `bytes` are a picture this module reads (by their first
/// bytes): what a shallow reading leaves for the deep one.
pub fn is_picture(bytes: &[u8]) -> bool {
    bytes.len() <= MAX_BYTES && reader(bytes).is_some()
}

/// A reader of `bytes` when they are a PNG, JPEG or GIF picture (by their
/// first bytes, whatever the part's declared type), with the bounds set.
fn reader(bytes: &[u8]) -> Option<ImageReader<Cursor<&[u8]>>> {
    let format = image::guess_format(bytes).ok()?;
    if !matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif
    ) {
        return None;
    }
    let mut r = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    r.limits(limits);
    Some(r)
}

/// The difference hash of the picture in `bytes`, or `None` (see the
/// module documentation for when). The picture's pixels count against
/// `budget` before it is decoded, whether it decodes or not.
pub fn hash(bytes: &[u8], budget: &mut Budget) -> Option<u64> {
    if bytes.len() > MAX_BYTES {
        return None;
    }
    let (w, h) = reader(bytes)?.into_dimensions().ok()?;
    if w < MIN_SIDE || h < MIN_SIDE {
        return None;
    }
    let pixels = u64::from(w) * u64::from(h);
    let Some(left) = budget.pixels.checked_sub(pixels) else {
        budget.spent = true;
        return None;
    };
    budget.pixels = left;
    let picture = reader(bytes)?.decode().ok()?;
    // (A GIF's first frame.)
    let grey = picture.into_luma8();
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

    /// A picture with shapes and gradients, as a PNG, JPEG or GIF.
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
        DynamicImage::ImageRgb8(img)
            .write_to(&mut Cursor::new(&mut out), format)
            .expect("encodes");
        out
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
