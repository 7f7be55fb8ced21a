//! The worker process: `bulkwatch worker`, started by the daemon (and by
//! `scan`, `replay` and `tune`) with an empty environment and pipes for
//! standard input and output; not a command for people.
//!
//! It reads the [`Hello`], warms its parsers up on a small message (so that
//! their tables are built before the sandbox), sandboxes itself
//! ([`sandbox::apply`]), answers [`Ready`], then reads one [`Request`] at
//! a time and answers each with a [`Reply`]. It ends at end of input, on a
//! frame that does not decode, or after reporting a panic. Whatever kills
//! it (a stack overflow, an allocation past its limit, an abort in a
//! dependency) kills it alone: the daemon answers that message with its
//! `failure_action` and starts another worker.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use super::sandbox;
use super::wire::{body_len, Hello, Ready, Reply, Request, HEAD, MAX_HELLO};
use crate::engine::mime::Depth;
use crate::engine::{read, read_to, ReadConfig};

/// Bytes read or written at a time on the pipes.
const IO_BUFFER: usize = 256 * 1024;

/// Reads one frame's body into `buf`: `Ok(false)` at a clean end of input.
fn read_frame(input: &mut impl Read, buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    let mut head = [0u8; HEAD];
    match input.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = body_len(head, max)?;
    buf.clear();
    buf.resize(len, 0);
    input.read_exact(buf)?;
    Ok(true)
}

thread_local! {
    /// The message of the last panic, taken by [`run`] (the default hook
    /// would print it, with the mail's bytes in it, into the daemon's log).
    static PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The worker's `main`; see the module documentation.
pub fn run() -> ExitCode {
    let served = serve();
    bulkwatch_ocr::stop();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}

fn serve() -> io::Result<()> {
    // Standard input and output as plain files with large buffers (the
    // standard output handle is line buffered, and replies hold
    // newlines). Replies are flushed when no more requests are waiting:
    // one at a time for the daemon, in bulk for a replay's batch.
    let mut input = io::BufReader::with_capacity(
        IO_BUFFER,
        std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?),
    );
    let mut out = io::BufWriter::with_capacity(
        IO_BUFFER,
        std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?),
    );
    let mut buf = Vec::new();
    if !read_frame(&mut input, &mut buf, MAX_HELLO)? {
        return Ok(());
    }
    let hello = Hello::decode(&buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    std::panic::set_hook(Box::new(|info| {
        let msg = match (
            info.payload().downcast_ref::<&str>(),
            info.payload().downcast_ref::<String>(),
        ) {
            (Some(s), _) => (*s).to_owned(),
            (None, Some(s)) => s.clone(),
            (None, None) => "panic".to_owned(),
        };
        let at = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
    }));
    // Tesseract's library and data are files: loaded before the sandbox.
    let ocr = match &hello.read.scan.ocr {
        Some(_) if hello.read.scan.ocr_elsewhere => "in the OCR workers".to_owned(),
        Some(o) => super::provide_ocr(o).to_string(),
        None => "off".to_owned(),
    };
    warm_up(&hello.read);
    let status = sandbox::apply(&hello.read);
    let ready = Ready {
        sandbox: format!("{status} ocr={ocr}"),
    }
    .frame();
    out.write_all(&ready)?;
    out.flush()?;
    let max = super::wire::max_request(&hello.read);
    let mut reply = Vec::new();
    while read_frame(&mut input, &mut buf, max)? {
        let req =
            Request::decode(&buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if cfg!(debug_assertions) {
            test_hooks(&hello.hooks.abort_on, &hello.hooks.hang_on, req.raw);
        }
        let rcpts: Vec<String> = req.rcpts.iter().map(|r| (*r).to_owned()).collect();
        let cfg = &hello.read;
        let raw = req.raw;
        // Shallow first: what cannot take long or fail. When the message
        // has nothing for the deep readers (most mail) that is its
        // reading; else it goes out first, flushed, and the deep reading
        // follows: if that dies or hangs, the daemon judges the message on
        // the shallow one.
        let shallow = std::panic::catch_unwind(|| read_to(raw, &rcpts, cfg, Depth::Shallow));
        let result = match shallow {
            Ok((r, false)) => Ok(r),
            Ok((early, true)) => {
                Reply::Early(Box::new(early)).frame_into(&mut reply);
                out.write_all(&reply)?;
                out.flush()?;
                if cfg!(debug_assertions) {
                    test_hooks(&hello.hooks.abort_deep_on, &hello.hooks.hang_deep_on, raw);
                }
                std::panic::catch_unwind(|| read(raw, &rcpts, cfg))
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(r) => {
                Reply::Read(Box::new(r)).frame_into(&mut reply);
                out.write_all(&reply)?;
                if input.buffer().is_empty() {
                    out.flush()?;
                }
            }
            Err(_) => {
                let msg = PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| "panic".into());
                Reply::Panicked { message: msg }.frame_into(&mut reply);
                // A panic may have left a parser's shared state half
                // built: report it and end; the daemon starts another.
                out.write_all(&reply)?;
                return out.flush();
            }
        }
    }
    Ok(())
}

/// Reads a small message of each kind once, so that the parsers' tables
/// and the allocator's arenas are set up before the sandbox.
fn warm_up(cfg: &ReadConfig) {
    let msg = b"From: a@example.org\r\nTo: b@example.net\r\nSubject: warm up\r\n\
        MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n\
        --b\r\nContent-Type: text/plain\r\n\r\nHello, see https://www.example.org/x today.\r\n\
        --b\r\nContent-Type: text/html\r\n\r\n<html><head><style>.x{display:none}</style></head>\
        <body><p class=x>hi</p><a href=\"https://example.org\">Read &amp; go</a></body></html>\r\n\
        --b--\r\n";
    let _ = std::panic::catch_unwind(|| read(msg, &["b@example.net".to_owned()], cfg));
}

/// Debug builds only: the test hooks of [`super::wire::Hooks`].
fn test_hooks(abort_on: &[u8], hang_on: &[u8], raw: &[u8]) {
    let has = |needle: &[u8]| !needle.is_empty() && memchr::memmem::find(raw, needle).is_some();
    if has(abort_on) {
        std::process::abort();
    }
    if has(hang_on) {
        loop {
            std::hint::spin_loop();
        }
    }
}
