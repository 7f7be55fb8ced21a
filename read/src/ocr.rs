//! Pictures of text: the reader asks, the process provides.
//!
//! This crate does no I/O, so it loads no OCR engine. A process that reads
//! pictures' text (the daemon's OCR workers, before their sandbox closes;
//! a replay in one process) loads one and hands it here once with
//! [`provide`]; a picture under a short text is then read with it
//! ([`crate::mime::picture`]), within the message's budget below. Without
//! one, pictures are read as with OCR off (their perceptual hash and QR
//! codes).

use std::sync::OnceLock;

/// Pictures of one message whose text is read by the recognizer (a
/// reading remembered from another message is not counted): the pixels
/// ([`MAX_PIXELS`]) and the time ([`DEADLINE_MS`]) bound what they cost
/// together.
pub const MAX_PICTURES: usize = 4;
/// Pixels one message may have read, in all (a larger picture is read
/// scaled down to them, or its top part).
pub const MAX_PIXELS: u64 = 1_500_000;
/// Longest the recognitions of one message may run in all, by the
/// recognizer's own clock, in milliseconds: a backstop under the daemon's
/// `engine_timeout_ms`, whose clock kills a worker that overruns it (a
/// recognizer may not look at its clock in every phase of its work).
pub const DEADLINE_MS: u32 = 1500;

/// What a recognizer read in a picture.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recognized {
    /// The text, when the recognizer is sure enough of it.
    pub text: Option<String>,
    /// Recognition was stopped at its deadline (nothing is kept).
    pub stopped: bool,
    /// The text is a reading of the same picture remembered from before
    /// (a picture family, paid once): it costs the message none of its
    /// pictures, pixels or time.
    pub remembered: bool,
}

/// An OCR engine a process provides.
pub trait Recognizer: Send + Sync {
    /// The text of the grey picture of `w` × `h` pixels (`pixels`, a row
    /// after another; dark text on a light ground; at most
    /// [`MAX_PIXELS`]), stopped after `deadline_ms`.
    fn recognize(&self, pixels: &[u8], w: u32, h: u32, deadline_ms: u32) -> Recognized;

    /// [`Recognizer::recognize`] of a picture the reader drew itself (a
    /// page's text in its own fonts, `mime::drawn`): read as it is, never
    /// answered with the reading of a picture that only looks alike (two
    /// pages of different words drawn in one font look alike when small).
    fn recognize_drawn(&self, pixels: &[u8], w: u32, h: u32, deadline_ms: u32) -> Recognized {
        self.recognize(pixels, w, h, deadline_ms)
    }
}

static PROVIDED: OnceLock<&'static dyn Recognizer> = OnceLock::new();

/// Makes `r` this process's recognizer; false when one was provided
/// already (the first stays).
pub fn provide(r: &'static dyn Recognizer) -> bool {
    PROVIDED.set(r).is_ok()
}

/// This process's recognizer, if one was provided.
pub fn provided() -> Option<&'static dyn Recognizer> {
    PROVIDED.get().copied()
}
