//! Fonts as a sender dresses them: a real font whose character map is
//! rewritten (a "font cipher": code point `q` drawn as the letter `a`), and
//! the WOFF 1.0 wrapping of a font.

use std::io::Write as _;

/// A substitution: each pair is (written, shown): the code point the
/// message holds and the letter the font draws for it.
pub type Key = Vec<(char, char)>;

/// A random permutation of the ASCII letters and digits (lower case among
/// themselves, upper case and digits likewise), from `seed`.
pub fn cipher_key(seed: u64) -> Key {
    let mut rng = crate::Rng::new(seed);
    let mut key = Vec::new();
    for set in [
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
    ] {
        let shown: Vec<char> = set.chars().collect();
        let mut written = shown.clone();
        for i in (1..written.len()).rev() {
            written.swap(i, rng.below(i + 1));
        }
        key.extend(written.into_iter().zip(shown));
    }
    key
}

/// `text` written so that a font made by [`cipher_font`] with `key` shows
/// it: each shown letter replaced by the code point drawn as it.
pub fn encode(text: &str, key: &Key) -> String {
    text.chars()
        .map(|c| {
            key.iter()
                .find(|(_, shown)| *shown == c)
                .map_or(c, |(written, _)| *written)
        })
        .collect()
}

/// `font` (TrueType) with its character map replaced: each written code
/// point of `key` mapped to the glyph of its shown letter, every other
/// character from U+0020 to U+024F as before. Other tables are copied as
/// they are (their checksums are not rewritten; readers do not check
/// them).
pub fn cipher_font(font: &[u8], key: &Key) -> Vec<u8> {
    let face = ttf_parser::Face::parse(font, 0).expect("a font");
    let mut map: Vec<(u16, u16)> = Vec::new();
    for cp in 0x20u32..=0x24F {
        let Some(c) = char::from_u32(cp) else {
            continue;
        };
        let shown = key
            .iter()
            .find(|(written, _)| *written == c)
            .map_or(c, |(_, s)| *s);
        if let Some(g) = face.glyph_index(shown) {
            map.push((cp as u16, g.0));
        }
    }
    replace_table(font, *b"cmap", &cmap4(&map))
}

/// A `cmap` table with one format 4 subtable (Windows, Unicode BMP): a
/// segment per character of `map` (sorted), and the closing segment.
fn cmap4(map: &[(u16, u16)]) -> Vec<u8> {
    let mut map = map.to_vec();
    map.sort_unstable();
    let seg = map.len() + 1;
    let pow = (seg as u16).next_power_of_two().max(1);
    let (search, selector) = if pow as usize > seg {
        (pow / 2, (pow / 2).trailing_zeros() as u16)
    } else {
        (pow, pow.trailing_zeros() as u16)
    };
    let mut sub = Vec::new();
    let len = (16 + 8 * seg) as u16;
    for v in [
        4u16,
        len,
        0,
        (seg * 2) as u16,
        search * 2,
        selector,
        (seg as u16 * 2) - search * 2,
    ] {
        sub.extend_from_slice(&v.to_be_bytes());
    }
    for &(c, _) in &map {
        sub.extend_from_slice(&c.to_be_bytes());
    }
    sub.extend_from_slice(&0xFFFFu16.to_be_bytes());
    sub.extend_from_slice(&0u16.to_be_bytes());
    for &(c, _) in &map {
        sub.extend_from_slice(&c.to_be_bytes());
    }
    sub.extend_from_slice(&0xFFFFu16.to_be_bytes());
    for &(c, g) in &map {
        sub.extend_from_slice(&g.wrapping_sub(c).to_be_bytes());
    }
    sub.extend_from_slice(&1u16.to_be_bytes());
    for _ in 0..seg {
        sub.extend_from_slice(&0u16.to_be_bytes());
    }
    let mut out = Vec::new();
    for v in [0u16, 1, 3, 1] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(&12u32.to_be_bytes());
    out.extend_from_slice(&sub);
    out
}

/// The tables of an sfnt file: (tag, data).
fn tables(font: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
    let n = u16::from_be_bytes([font[4], font[5]]) as usize;
    (0..n)
        .map(|i| {
            let e = 12 + 16 * i;
            let tag: [u8; 4] = font[e..e + 4].try_into().unwrap();
            let at = u32::from_be_bytes(font[e + 8..e + 12].try_into().unwrap()) as usize;
            let len = u32::from_be_bytes(font[e + 12..e + 16].try_into().unwrap()) as usize;
            (tag, font[at..at + len].to_vec())
        })
        .collect()
}

/// `font` with table `tag` replaced by `data`.
fn replace_table(font: &[u8], tag: [u8; 4], data: &[u8]) -> Vec<u8> {
    let flavor: [u8; 4] = font[..4].try_into().unwrap();
    let mut t = tables(font);
    for (tg, d) in t.iter_mut() {
        if *tg == tag {
            *d = data.to_vec();
        }
    }
    sfnt(flavor, &t)
}

/// An sfnt file of `tables` (sorted by tag).
fn sfnt(flavor: [u8; 4], tables: &[([u8; 4], Vec<u8>)]) -> Vec<u8> {
    let mut t = tables.to_vec();
    t.sort_by_key(|(tag, _)| *tag);
    let n = t.len() as u16;
    let pow = 1u16 << (15 - n.leading_zeros());
    let mut out = Vec::new();
    out.extend_from_slice(&flavor);
    for v in [n, pow * 16, pow.trailing_zeros() as u16, n * 16 - pow * 16] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    let mut at = 12 + 16 * t.len();
    for (tag, d) in &t {
        out.extend_from_slice(tag);
        out.extend_from_slice(&checksum(d).to_be_bytes());
        out.extend_from_slice(&(at as u32).to_be_bytes());
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        at += (d.len() + 3) & !3;
    }
    for (_, d) in &t {
        out.extend_from_slice(d);
        out.resize((out.len() + 3) & !3, 0);
    }
    out
}

fn checksum(d: &[u8]) -> u32 {
    d.chunks(4).fold(0u32, |s, c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        s.wrapping_add(u32::from_be_bytes(w))
    })
}

/// `font` (an sfnt file) as a WOFF 1.0 file, each table deflated.
pub fn woff(font: &[u8]) -> Vec<u8> {
    let flavor: [u8; 4] = font[..4].try_into().unwrap();
    let mut t = tables(font);
    t.sort_by_key(|(tag, _)| *tag);
    let mut data = Vec::new();
    let mut dir = Vec::new();
    let mut at = 44 + 20 * t.len();
    for (tag, d) in &t {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(d).unwrap();
        let z = z.finish().unwrap();
        let stored = if z.len() < d.len() { z } else { d.clone() };
        dir.extend_from_slice(tag);
        dir.extend_from_slice(&(at as u32).to_be_bytes());
        dir.extend_from_slice(&(stored.len() as u32).to_be_bytes());
        dir.extend_from_slice(&(d.len() as u32).to_be_bytes());
        dir.extend_from_slice(&checksum(d).to_be_bytes());
        at += (stored.len() + 3) & !3;
        data.extend_from_slice(&stored);
        data.resize((data.len() + 3) & !3, 0);
    }
    let total_sfnt = 12 + 16 * t.len() + t.iter().map(|(_, d)| (d.len() + 3) & !3).sum::<usize>();
    let mut out = Vec::new();
    out.extend_from_slice(b"wOFF");
    out.extend_from_slice(&flavor);
    out.extend_from_slice(&((44 + dir.len() + data.len()) as u32).to_be_bytes());
    out.extend_from_slice(&(t.len() as u16).to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&(total_sfnt as u32).to_be_bytes());
    out.extend_from_slice(&[0u8; 24]);
    out.extend_from_slice(&dir);
    out.extend_from_slice(&data);
    out
}

/// `font` (an sfnt file) as a WOFF2 file: every table without a
/// transform (`glyf` and `loca` with the null transform), the tables in
/// one Brotli stream of stored (uncompressed) meta-blocks.
pub fn woff2(font: &[u8]) -> Vec<u8> {
    let flavor: [u8; 4] = font[..4].try_into().unwrap();
    let mut t = tables(font);
    t.sort_by_key(|(tag, _)| *tag);
    // `loca` right after `glyf`.
    if let Some(l) = t.iter().position(|(tag, _)| tag == b"loca") {
        let loca = t.remove(l);
        let g = t
            .iter()
            .position(|(tag, _)| tag == b"glyf")
            .map_or(t.len(), |g| g + 1);
        t.insert(g, loca);
    }
    let mut dir = Vec::new();
    let mut stream = Vec::new();
    for (tag, d) in &t {
        let null = if tag == b"glyf" || tag == b"loca" {
            3 << 6
        } else {
            0
        };
        dir.push(63 | null);
        dir.extend_from_slice(tag);
        base128(d.len() as u32, &mut dir);
        stream.extend_from_slice(d);
    }
    let compressed = brotli_stored(&stream);
    let total_sfnt = 12 + 16 * t.len() + t.iter().map(|(_, d)| (d.len() + 3) & !3).sum::<usize>();
    let mut out = Vec::new();
    out.extend_from_slice(b"wOF2");
    out.extend_from_slice(&flavor);
    let length = (48 + dir.len() + compressed.len() + 3) & !3;
    out.extend_from_slice(&(length as u32).to_be_bytes());
    out.extend_from_slice(&(t.len() as u16).to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&(total_sfnt as u32).to_be_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&[0u8; 20]);
    out.extend_from_slice(&dir);
    out.extend_from_slice(&compressed);
    out.resize(length, 0);
    out
}

/// WOFF2's UIntBase128: seven bits a byte, most significant first.
fn base128(v: u32, out: &mut Vec<u8>) {
    let mut groups = vec![(v & 0x7F) as u8];
    let mut rest = v >> 7;
    while rest > 0 {
        groups.push((rest & 0x7F) as u8 | 0x80);
        rest >>= 7;
    }
    out.extend(groups.into_iter().rev());
}

/// `data` as a Brotli stream of stored meta-blocks (RFC 7932: a window of
/// 2^16, each block at most 65,536 bytes, then an empty last block).
fn brotli_stored(data: &[u8]) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u32,
        n: u32,
    }
    impl Bits {
        fn put(&mut self, v: u32, bits: u32) {
            self.acc |= v << self.n;
            self.n += bits;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        fn align(&mut self) {
            if self.n > 0 {
                self.put(0, 8 - self.n);
            }
        }
    }
    let mut b = Bits {
        out: Vec::new(),
        acc: 0,
        n: 0,
    };
    b.put(0, 1); // WBITS: 16
    for chunk in data.chunks(65536) {
        b.put(0, 1); // ISLAST
        b.put(0, 2); // MNIBBLES: 4
        b.put(chunk.len() as u32 - 1, 16); // MLEN - 1
        b.put(1, 1); // ISUNCOMPRESSED
        b.align();
        b.out.extend_from_slice(chunk);
    }
    b.put(1, 1); // ISLAST
    b.put(1, 1); // ISLASTEMPTY
    b.align();
    b.out
}
