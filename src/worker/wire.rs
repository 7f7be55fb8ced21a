//! What the daemon and a worker process say to each other over the
//! worker's standard input and output: frames of a 32-bit length (little
//! endian) and a body, written with [`crate::store::codec`]. The framing
//! is here and only here: each kind of frame is built whole, its length
//! sealed in its head ([`Hello::frame`], [`Request::frame_into`], …), and
//! a reader learns a body's length, bounded, from [`body_len`].
//!
//! - The daemon opens with a [`Hello`]: the protocol version and the
//!   reading settings (nothing secret). The worker answers [`Ready`], with
//!   what its sandbox could take away, once it is sandboxed.
//! - Then one [`Request`] (recipients and the raw message) at a time, each
//!   answered by one [`Reply`].
//!
//! Both sides trust nothing of the other's bytes: every count and length
//! is bounded before anything is allocated for it, and a frame that does
//! not decode ends the worker (worker side) or is that worker's failure
//! (daemon side).

use std::os::unix::ffi::OsStrExt as _;

use crate::engine::mime::normalize::{KeptCut, Normalized};
use crate::engine::mime::MAX_ATTACHMENTS;
use crate::engine::party::MAX_ANSWERS;
use crate::engine::{ReadConfig, Reading, MAX_KEPT_RCPTS};
use crate::store::codec::{CodecError, Reader, Writer};

use bulkwatch_read::config::{NormalizeConfig, OcrConfig, ScanConfig};

/// Changes with any change to the frames below. A worker of another
/// build (the binary was replaced under a running daemon) is refused.
pub const VERSION: u32 = 8;
const MAGIC: &[u8; 4] = b"BWRK";

/// Longest recipient address sent.
const MAX_RCPT: usize = 1024;
/// Longest string of a reply besides the normalized text.
const MAX_FIELD: usize = 4096;
/// Most image anchors in a reply.
const MAX_IMAGES: usize = 64;
/// Longest panic message reported.
pub const MAX_PANIC: usize = 512;

/// The largest frame a worker accepts: the raw message as `max_parse_bytes`
/// cuts it (a longer one is cut before it is sent), with its recipients.
pub fn max_request(cfg: &ReadConfig) -> usize {
    cfg.scan
        .max_parse_bytes
        .saturating_add(MAX_KEPT_RCPTS * (MAX_RCPT + 8))
        .saturating_add(64)
}

/// The largest reply the daemon accepts. The normalized text is at most a
/// few times the scanned text (each character of it becomes at most a
/// few bytes, and separators), the rest is bounded by the constants here.
pub fn max_reply(cfg: &ReadConfig) -> usize {
    max_text(cfg).saturating_mul(2).saturating_add(1024 * 1024)
}

/// Longest normalized text or subject accepted.
fn max_text(cfg: &ReadConfig) -> usize {
    cfg.scan
        .max_scan_bytes
        .saturating_mul(4)
        .saturating_add(4096)
}

/// Test hooks of debug builds: a worker that meets one of these byte
/// strings in a message aborts, or spins until it is killed. Release builds
/// neither send nor obey them (`cfg!(debug_assertions)`), so no sender can
/// use them to switch analysis off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub abort_on: Vec<u8>,
    pub hang_on: Vec<u8>,
    /// Abort or spin in the deep reading, after the shallow one was sent.
    pub abort_deep_on: Vec<u8>,
    pub hang_deep_on: Vec<u8>,
}

/// The first frame, daemon to worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub read: ReadConfig,
    pub hooks: Hooks,
}

/// The worker's answer to [`Hello`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// What the sandbox took away, for the daemon's log
    /// ([`crate::worker::sandbox::Status`]).
    pub sandbox: String,
}

/// One message to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub rcpts: Vec<&'a str>,
    pub raw: &'a [u8],
}

/// The worker's answer to a [`Request`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Read(Box<Reading>),
    /// The shallow reading of a message that has something for the deep
    /// readers (`mime::Depth`): the final [`Reply::Read`] follows. If the
    /// worker dies or hangs before it, the daemon judges the message on
    /// this one.
    Early(Box<Reading>),
    /// Reading panicked, after which the worker exits.
    Panicked {
        /// The panic's message, cut at `MAX_PANIC` bytes.
        message: String,
    },
}

/// Bytes of a frame's head: the body's length.
pub const HEAD: usize = 4;

/// Longest hello or ready frame (their strings are bounded far below).
pub const MAX_HELLO: usize = 64 * 1024;

/// A writer for a frame in `out` (cleared first), its head left for
/// [`seal`].
fn begin(out: &mut Vec<u8>) -> Writer {
    out.clear();
    out.extend_from_slice(&[0; HEAD]);
    Writer(std::mem::take(out))
}

/// Writes the body's length into the head and hands the frame back in
/// `out`. No frame built here passes `u32::MAX` (each is bounded by the
/// configuration, at most 1 GiB); one that did would be announced as
/// `u32::MAX`, which every reader refuses ([`body_len`]).
fn seal(w: Writer, out: &mut Vec<u8>) {
    *out = w.0;
    let len = u32::try_from(out.len() - HEAD).unwrap_or(u32::MAX);
    if let Some(head) = out.get_mut(..HEAD) {
        head.copy_from_slice(&len.to_le_bytes());
    }
}

/// The length of the body a frame's `head` announces, refused past `max`
/// (before anything is allocated for it).
///
/// # Errors
/// The announced length passes `max`.
pub fn body_len(head: [u8; HEAD], max: usize) -> std::io::Result<usize> {
    let len = u32::from_le_bytes(head) as usize;
    if len > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, at most {max} expected"),
        ));
    }
    Ok(len)
}

fn invalid(what: impl Into<String>) -> CodecError {
    CodecError::Invalid { what: what.into() }
}

fn normalize_bits(n: &NormalizeConfig) -> u16 {
    [
        n.nfkc,
        n.case_fold,
        n.strip_markup,
        n.urls_to_host,
        n.fold_digits,
        n.drop_random_tokens,
        n.strip_greetings,
        n.strip_recipient,
        n.strip_quotes,
        n.strip_signatures,
        n.stop_words,
        n.read_spellings,
    ]
    .iter()
    .enumerate()
    .fold(0u16, |acc, (i, b)| acc | (u16::from(*b) << i))
}

fn normalize_of(bits: u16) -> NormalizeConfig {
    let on = |i: u16| bits & (1 << i) != 0;
    NormalizeConfig {
        nfkc: on(0),
        case_fold: on(1),
        strip_markup: on(2),
        urls_to_host: on(3),
        fold_digits: on(4),
        drop_random_tokens: on(5),
        strip_greetings: on(6),
        strip_recipient: on(7),
        strip_quotes: on(8),
        strip_signatures: on(9),
        stop_words: on(10),
        read_spellings: on(11),
    }
}

fn header(w: &mut Writer) {
    w.0.extend_from_slice(MAGIC);
    w.u32(VERSION);
}

fn check_header(r: &mut Reader<'_>) -> Result<(), CodecError> {
    let magic = r.take(4)?;
    let version = r.u32()?;
    if magic != MAGIC || version != VERSION {
        return Err(invalid(format!(
            "worker protocol version {version}, this build speaks {VERSION} (was the \
             binary replaced under a running daemon? restart it)"
        )));
    }
    Ok(())
}

impl Hello {
    /// The hello frame, sealed.
    pub fn frame(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = begin(&mut out);
        header(&mut w);
        w.u64(self.read.scan.max_scan_bytes as u64);
        w.u64(self.read.scan.max_parse_bytes as u64);
        w.u16(normalize_bits(&self.read.normalize));
        let ocr = self.read.scan.ocr.as_ref();
        w.u8(u8::from(ocr.is_some()) | (u8::from(self.read.scan.ocr_elsewhere) << 1));
        let data = ocr.and_then(|o| o.data.as_ref());
        w.bytes(data.map_or(&b""[..], |d| d.as_os_str().as_encoded_bytes()));
        w.bytes(ocr.map_or(&b""[..], |o| o.languages.as_bytes()));
        w.bytes(&self.hooks.abort_on);
        w.bytes(&self.hooks.hang_on);
        w.bytes(&self.hooks.abort_deep_on);
        w.bytes(&self.hooks.hang_deep_on);
        seal(w, &mut out);
        out
    }

    /// Reads a hello frame's body.
    ///
    /// # Errors
    /// Another version, or a malformed frame.
    pub fn decode(buf: &[u8]) -> Result<Hello, CodecError> {
        let mut r = Reader::new(buf, "worker hello");
        check_header(&mut r)?;
        let size = |v: u64| usize::try_from(v).map_err(|_| invalid("size too large"));
        let max_scan_bytes = size(r.u64()?)?;
        let max_parse_bytes = size(r.u64()?)?;
        let normalize = normalize_of(r.u16()?);
        let ocr_bits = r.u8()?;
        let (ocr_on, ocr_elsewhere) = (ocr_bits & 1 != 0, ocr_bits & 2 != 0);
        let data = r.bytes(4096)?;
        let data =
            (!data.is_empty()).then(|| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(data)));
        let languages = std::str::from_utf8(r.bytes(256)?)
            .map_err(|_| invalid("OCR languages not UTF-8"))?
            .to_owned();
        let ocr = ocr_on.then_some(OcrConfig { data, languages });
        let abort_on = r.bytes(256)?.to_vec();
        let hang_on = r.bytes(256)?.to_vec();
        let abort_deep_on = r.bytes(256)?.to_vec();
        let hang_deep_on = r.bytes(256)?.to_vec();
        r.finish()?;
        Ok(Hello {
            read: ReadConfig {
                scan: ScanConfig {
                    max_scan_bytes,
                    max_parse_bytes,
                    ocr,
                    ocr_elsewhere,
                },
                normalize,
            },
            hooks: Hooks {
                abort_on,
                hang_on,
                abort_deep_on,
                hang_deep_on,
            },
        })
    }
}

impl Ready {
    /// The ready frame, sealed.
    pub fn frame(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = begin(&mut out);
        header(&mut w);
        w.str(&self.sandbox, MAX_FIELD);
        seal(w, &mut out);
        out
    }

    /// Reads a ready frame's body.
    ///
    /// # Errors
    /// Another version, or a malformed frame.
    pub fn decode(buf: &[u8]) -> Result<Ready, CodecError> {
        let mut r = Reader::new(buf, "worker ready");
        check_header(&mut r)?;
        let sandbox = r.string(MAX_FIELD)?;
        r.finish()?;
        Ok(Ready { sandbox })
    }
}

impl<'a> Request<'a> {
    /// Writes the request frame, sealed, into `out` (cleared first),
    /// recipients cut to what the worker accepts.
    pub fn frame_into(&self, out: &mut Vec<u8>) {
        let mut w = begin(out);
        let rcpts = self.rcpts.iter().take(MAX_KEPT_RCPTS);
        w.u16(rcpts.len() as u16);
        for r in rcpts {
            w.str(r, MAX_RCPT);
        }
        w.0.extend_from_slice(self.raw);
        seal(w, out);
    }

    /// Reads a request frame's body.
    ///
    /// # Errors
    /// A malformed frame.
    pub fn decode(buf: &'a [u8]) -> Result<Request<'a>, CodecError> {
        let mut r = Reader::new(buf, "worker request");
        let n = usize::from(r.u16()?);
        if n > MAX_KEPT_RCPTS {
            return Err(invalid(format!("{n} recipients")));
        }
        let mut rcpts = Vec::with_capacity(n);
        for _ in 0..n {
            let b = r.bytes(MAX_RCPT)?;
            rcpts.push(std::str::from_utf8(b).map_err(|_| invalid("recipient not UTF-8"))?);
        }
        let raw = r.rest();
        Ok(Request { rcpts, raw })
    }
}

const READ: u8 = 1;
const PANICKED: u8 = 2;
const EARLY: u8 = 3;

impl Reply {
    /// Writes the reply frame, sealed, into `out` (cleared first).
    pub fn frame_into(&self, out: &mut Vec<u8>) {
        let mut w = begin(out);
        match self {
            Reply::Read(r) | Reply::Early(r) => {
                w.u8(if matches!(self, Reply::Early(_)) {
                    EARLY
                } else {
                    READ
                });
                w.bool(r.parsed);
                w.str(&r.normalized.text, usize::MAX);
                w.str(&r.normalized.subject, usize::MAX);
                w.u64(r.normalized.tokens as u64);
                let attachments = r.attachments.iter().take(MAX_ATTACHMENTS);
                w.u64(attachments.len() as u64);
                for a in attachments {
                    w.0.extend_from_slice(a);
                }
                let pictures = r.pictures.iter().take(MAX_ATTACHMENTS);
                w.u64(pictures.len() as u64);
                for p in pictures {
                    w.u64(*p);
                }
                let images = r.images.iter().take(MAX_IMAGES);
                w.u64(images.len() as u64);
                for i in images {
                    w.str(i, MAX_FIELD);
                }
                w.bool(r.has_link);
                for s in [&r.message_id, &r.subject, &r.from_domain] {
                    w.bool(s.is_some());
                    w.str(s.as_deref().unwrap_or(""), MAX_FIELD);
                }
                w.bool(r.list);
                w.bool(r.list_id);
                w.bool(r.reply);
                w.bool(r.truncated);
                let answers = r.answers.iter().take(MAX_ANSWERS);
                w.u64(answers.len() as u64);
                for a in answers {
                    w.str(a, MAX_FIELD);
                }
                w.bool(r.partial);
                w.bool(r.wants_ocr);
                w.bool(r.ocr_stopped);
                w.bool(r.normalized.kept_cut.is_some());
                let kept = r.normalized.kept_cut.unwrap_or_default();
                w.u32(kept.own_words);
                w.u32(kept.words);
            }
            Reply::Panicked { message: m } => {
                w.u8(PANICKED);
                w.str(m, MAX_PANIC);
            }
        }
        seal(w, out);
    }

    /// Reads a reply frame's body.
    ///
    /// # Errors
    /// A malformed frame, or one past the bounds `cfg` implies.
    pub fn decode(buf: &[u8], cfg: &ReadConfig) -> Result<Reply, CodecError> {
        let mut r = Reader::new(buf, "worker reply");
        let reply = match r.u8()? {
            kind @ (READ | EARLY) => {
                let parsed = r.bool()?;
                let text = r.string(max_text(cfg))?;
                let subject = r.string(max_text(cfg))?;
                let tokens = usize::try_from(r.u64()?).map_err(|_| invalid("token count"))?;
                // Nothing is sized from a worker's number unchecked: a text
                // holds fewer tokens than bytes.
                if tokens > text.len() {
                    return Err(invalid(format!(
                        "{tokens} tokens in a text of {} bytes",
                        text.len()
                    )));
                }
                let n = r.items(MAX_ATTACHMENTS, 32)?;
                let mut attachments = Vec::with_capacity(n);
                for _ in 0..n {
                    attachments.push(r.array::<32>()?);
                }
                let n = r.items(MAX_ATTACHMENTS, 8)?;
                let mut pictures = Vec::with_capacity(n);
                for _ in 0..n {
                    pictures.push(r.u64()?);
                }
                let n = r.items(MAX_IMAGES, 8)?;
                let mut images = Vec::with_capacity(n);
                for _ in 0..n {
                    images.push(r.string(MAX_FIELD)?);
                }
                let has_link = r.bool()?;
                let mut opt = || -> Result<Option<String>, CodecError> {
                    let some = r.bool()?;
                    let s = r.string(MAX_FIELD)?;
                    Ok(some.then_some(s))
                };
                let (message_id, subject_header, from_domain) = (opt()?, opt()?, opt()?);
                let list = r.bool()?;
                let list_id = r.bool()?;
                let reply = r.bool()?;
                let truncated = r.bool()?;
                let n = r.items(MAX_ANSWERS, 8)?;
                let mut answers = Vec::with_capacity(n);
                for _ in 0..n {
                    answers.push(r.string(MAX_FIELD)?);
                }
                let partial = r.bool()?;
                let wants_ocr = r.bool()?;
                let ocr_stopped = r.bool()?;
                let some_cut = r.bool()?;
                let kept = KeptCut {
                    own_words: r.u32()?,
                    words: r.u32()?,
                };
                let reading = Box::new(Reading {
                    parsed,
                    normalized: Normalized {
                        text,
                        subject,
                        tokens,
                        kept_cut: some_cut.then_some(kept),
                    },
                    attachments,
                    pictures,
                    images,
                    has_link,
                    message_id,
                    answers,
                    subject: subject_header,
                    from_domain,
                    list,
                    list_id,
                    reply,
                    truncated,
                    partial,
                    wants_ocr,
                    ocr_stopped,
                    deep_failure: None,
                });
                if kind == EARLY {
                    Reply::Early(reading)
                } else {
                    Reply::Read(reading)
                }
            }
            PANICKED => Reply::Panicked {
                message: r.string(MAX_PANIC)?,
            },
            k => return Err(invalid(format!("worker reply kind {k}"))),
        };
        r.finish()?;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's body, after checking that its head says its length.
    fn body(frame: &[u8]) -> &[u8] {
        let head: [u8; HEAD] = frame[..HEAD].try_into().unwrap();
        assert_eq!(body_len(head, usize::MAX).unwrap(), frame.len() - HEAD);
        &frame[HEAD..]
    }

    fn reading() -> Reading {
        Reading {
            parsed: true,
            normalized: Normalized {
                text: "hello world\nsecond sentence".into(),
                subject: "offer".into(),
                tokens: 4,
                kept_cut: Some(KeptCut {
                    own_words: 5,
                    words: 80,
                }),
            },
            attachments: vec![[7; 32], [9; 32]],
            pictures: vec![0x0123_4567_89ab_cdef],
            images: vec!["img.example/#.png".into()],
            has_link: true,
            message_id: Some("a@b".into()),
            answers: vec!["first@b".into(), "root@b".into()],
            subject: None,
            from_domain: Some("deals.example".into()),
            list: true,
            list_id: true,
            reply: true,
            truncated: false,
            partial: true,
            wants_ocr: true,
            ocr_stopped: true,
            deep_failure: None,
        }
    }

    #[test]
    fn frames_read_back() {
        let cfg = ReadConfig::default();
        let hello = Hello {
            read: ReadConfig {
                scan: ScanConfig {
                    max_scan_bytes: 10,
                    max_parse_bytes: 20,
                    ocr: Some(OcrConfig {
                        data: Some("/opt/tessdata".into()),
                        languages: "eng+deu".into(),
                    }),
                    ocr_elsewhere: true,
                },
                normalize: NormalizeConfig {
                    stop_words: true,
                    nfkc: false,
                    ..NormalizeConfig::default()
                },
            },
            hooks: Hooks {
                abort_on: b"x".to_vec(),
                hang_on: Vec::new(),
                abort_deep_on: b"y".to_vec(),
                hang_deep_on: b"z".to_vec(),
            },
        };
        assert_eq!(Hello::decode(body(&hello.frame())), Ok(hello));
        let ready = Ready {
            sandbox: "seccomp".into(),
        };
        assert_eq!(Ready::decode(body(&ready.frame())), Ok(ready));
        let req = Request {
            rcpts: vec!["a@x", "b@y"],
            raw: b"Subject: t\r\n\r\nbody",
        };
        let mut buf = Vec::new();
        req.frame_into(&mut buf);
        assert_eq!(Request::decode(body(&buf)), Ok(req));
        for reply in [
            Reply::Read(Box::new(reading())),
            Reply::Read(Box::default()),
            Reply::Panicked {
                message: "index out of bounds".into(),
            },
        ] {
            reply.frame_into(&mut buf);
            assert_eq!(Reply::decode(body(&buf), &cfg), Ok(reply));
        }
    }

    #[test]
    fn cut_or_padded_frames_and_other_versions_are_refused() {
        let cfg = ReadConfig::default();
        let mut buf = Vec::new();
        Reply::Read(Box::new(reading())).frame_into(&mut buf);
        buf.drain(..HEAD);
        for n in 0..buf.len() {
            assert!(Reply::decode(&buf[..n], &cfg).is_err(), "cut at {n}");
        }
        buf.push(0);
        assert!(Reply::decode(&buf, &cfg).is_err(), "trailing byte");
        let mut hello = Hello {
            read: cfg.clone(),
            hooks: Hooks::default(),
        }
        .frame();
        hello[HEAD + 4] ^= 1;
        let e = Hello::decode(&hello[HEAD..]).unwrap_err().to_string();
        assert!(e.contains("worker protocol version"), "{e}");
    }

    #[test]
    fn a_reply_past_the_bounds_is_refused() {
        let cfg = ReadConfig {
            scan: ScanConfig {
                max_scan_bytes: 16,
                max_parse_bytes: 64,
                ocr: None,
                ocr_elsewhere: false,
            },
            ..ReadConfig::default()
        };
        let mut r = reading();
        r.normalized.text = "x".repeat(max_text(&cfg) + 1);
        let mut buf = Vec::new();
        Reply::Read(Box::new(r)).frame_into(&mut buf);
        assert!(matches!(
            Reply::decode(body(&buf), &cfg),
            Err(CodecError::TooLarge { .. })
        ));
        let mut w = Writer::default();
        w.u8(READ);
        w.bool(true);
        w.bytes(&[0xff, 0xfe]);
        assert!(Reply::decode(&w.0, &cfg).is_err(), "text not UTF-8");
    }
}
