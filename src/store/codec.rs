//! Little-endian binary writing and bounded reading, shared by the
//! snapshot file (`crate::store::snapshot`) and the Redis log's entries
//! (`crate::store::stream`).
//!
//! A [`Reader`] never reads past its buffer, refuses counts above a caller's
//! maximum before anything is allocated for them, and names the part it was
//! reading in its errors; it never panics.

/// What a [`Reader`] found wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodecError {
    #[error("truncated in {what}")]
    Truncated { what: &'static str },
    #[error("{what}: {count} exceeds the maximum {max}")]
    TooLarge {
        what: &'static str,
        count: u64,
        max: u64,
    },
    #[error("{what}")]
    Invalid { what: String },
}

/// A growing buffer of little-endian fields.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    /// A byte string: its length (u64), then the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    /// A string of at most `max` bytes, cut on a character boundary: strings
    /// are bounded on write as on read.
    pub fn str(&mut self, s: &str, max: usize) {
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.bytes(s.as_bytes().get(..end).unwrap_or_default());
    }
    /// A tagged section: the tag, then the body as a byte string.
    pub fn section(&mut self, tag: u8, body: Writer) {
        self.u8(tag);
        self.bytes(&body.0);
    }
}

/// Reads what a [`Writer`] wrote.
pub struct Reader<'a> {
    buf: &'a [u8],
    /// The part being read, for errors.
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { buf, what }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.buf.len() {
            return Err(CodecError::Truncated { what: self.what });
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(u8::from_le_bytes(self.array()?))
    }
    pub fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A finite number (NaN and infinities are refused).
    pub fn f64(&mut self) -> Result<f64, CodecError> {
        let x = f64::from_bits(self.u64()?);
        if x.is_finite() {
            Ok(x)
        } else {
            Err(CodecError::Invalid {
                what: format!("{}: number {x}", self.what),
            })
        }
    }
    /// A count, refused above `max` before anything is allocated for it.
    pub fn count(&mut self, max: usize) -> Result<usize, CodecError> {
        let n = self.u64()?;
        if n > max as u64 {
            return Err(CodecError::TooLarge {
                what: self.what,
                count: n,
                max: max as u64,
            });
        }
        // n <= max, a usize.
        Ok(n as usize)
    }
    /// A 16-bit count of `what`, refused above `max` before anything is
    /// allocated for it.
    pub fn count16(&mut self, max: usize, what: &'static str) -> Result<usize, CodecError> {
        let n = usize::from(self.u16()?);
        bounded(n, max, what)
    }

    /// A one-byte count of `what`, refused above `max`.
    pub fn count8(&mut self, max: usize, what: &'static str) -> Result<usize, CodecError> {
        let n = usize::from(self.u8()?);
        bounded(n, max, what)
    }
    /// A count of items of `item_len` bytes each that must fit in what is
    /// left, and under `max`.
    pub fn items(&mut self, max: usize, item_len: usize) -> Result<usize, CodecError> {
        let n = self.count(max)?;
        if n.saturating_mul(item_len) > self.buf.len() {
            return Err(CodecError::Truncated { what: self.what });
        }
        Ok(n)
    }
    /// A byte string of at most `max` bytes.
    pub fn bytes(&mut self, max: usize) -> Result<&'a [u8], CodecError> {
        let n = self.count(max)?;
        self.take(n)
    }
    /// A UTF-8 string of at most `max` bytes.
    pub fn string(&mut self, max: usize) -> Result<String, CodecError> {
        let b = self.bytes(max)?;
        String::from_utf8(b.to_vec()).map_err(|_| CodecError::Invalid {
            what: format!("{}: string is not UTF-8", self.what),
        })
    }
    pub fn bool(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(CodecError::Invalid {
                what: format!("{}: flag {b}", self.what),
            }),
        }
    }
    /// The body of the section tagged `tag`, read as `what`.
    pub fn section(&mut self, tag: u8, what: &'static str) -> Result<Reader<'a>, CodecError> {
        let found = self.u8()?;
        if found != tag {
            return Err(CodecError::Invalid {
                what: format!("expected section {tag} ({what}), found {found}"),
            });
        }
        let len = self.u64()?;
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l <= self.buf.len())
            .ok_or(CodecError::Truncated { what })?;
        Ok(Reader {
            buf: self.take(len)?,
            what,
        })
    }
    /// Everything left, consumed.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
    /// Nothing may be left.
    pub fn finish(&self) -> Result<(), CodecError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(CodecError::Invalid {
                what: format!("{} trailing bytes in {}", self.buf.len(), self.what),
            })
        }
    }
}

/// `n`, or the error of a count of `what` above `max`.
fn bounded(n: usize, max: usize, what: &'static str) -> Result<usize, CodecError> {
    if n > max {
        return Err(CodecError::TooLarge {
            what,
            count: n as u64,
            max: max as u64,
        });
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_cut_input_is_an_error() {
        let mut w = Writer::default();
        w.u8(1);
        w.u16(2);
        w.u32(3);
        w.u64(4);
        w.f64(0.5);
        w.str("héllo", 2);
        let mut r = Reader::new(&w.0, "test");
        assert_eq!(r.u8(), Ok(1));
        assert_eq!(r.u16(), Ok(2));
        assert_eq!(r.u32(), Ok(3));
        assert_eq!(r.u64(), Ok(4));
        assert_eq!(r.f64(), Ok(0.5));
        assert_eq!(r.string(16), Ok("h".into()), "cut on a character boundary");
        assert_eq!(r.finish(), Ok(()));
        for n in 0..w.0.len() {
            let mut r = Reader::new(&w.0[..n], "test");
            let all = (|| {
                r.u8()?;
                r.u16()?;
                r.u32()?;
                r.u64()?;
                r.f64()?;
                r.string(16)
            })();
            assert!(all.is_err(), "cut at {n}");
        }
    }

    #[test]
    fn counts_over_the_maximum_and_odd_numbers_are_refused() {
        let mut w = Writer::default();
        w.u64(1 << 40);
        w.f64(f64::NAN);
        let mut r = Reader::new(&w.0, "test");
        assert!(matches!(r.count(1000), Err(CodecError::TooLarge { .. })));
        assert!(r.f64().is_err());
    }
}
