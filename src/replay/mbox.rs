//! Splits an mbox file into messages, as mail-parser's
//! `mailbox::mbox::MessageIterator` does, in fewer passes.
//!
//! The format, as that iterator reads it: a line that starts with `From `
//! starts a message and is not part of it; lines before the first one are
//! skipped; within a message a line of one or more `>` followed by `From `
//! loses its first `>` (mboxrd quoting); lines keep their line ends, CRLF
//! or LF, and the last line need not have one.
//!
//! Implementation note: mail-parser's iterator reads line by line, copying
//! each line into a buffer and then into the message. This reader takes
//! blocks of [`BLOCK`] bytes, finds message starts with one substring
//! search over them and copies each message once; `cargo bench --bench
//! engine -- stages/mbox_split` times the two. It is written here, not
//! taken from the crate, for that difference. `tests::equals_mail_parser`
//! (reads of 1 to 23 bytes and of [`BLOCK`]) and the `mbox` fuzz target
//! (1 to 64 bytes) compare the two on mbox-shaped input.
//!
//! Differences, on purpose: a read error ends the stream, after the
//! messages read whole before it (mail-parser's iterator reads on after
//! an error); and a message is kept up to a bound ([`read_mbox_bounded`]):
//! the rest of a longer one (a gigabyte on one line) is read past and
//! dropped, so memory stays bounded whatever the file holds.

use std::io::{self, Read};

use memchr::memmem;

/// Bytes read at a time.
pub const BLOCK: usize = 1 << 16;

/// The messages of an mbox, each as its bytes.
pub struct Mbox<R> {
    reader: R,
    block: usize,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    pos: usize,
    /// Where the search for `\nFrom ` resumes, from `pos`.
    scan: usize,
    /// `pos` is a line start whose `From ` test is still to be made.
    line_start: bool,
    /// `pos` is in a message (past its `From ` line).
    in_message: bool,
    eof: bool,
    /// A read error, returned after the messages read before it.
    error: Option<io::Error>,
    failed: bool,
    /// Most bytes kept of one message.
    max_message: usize,
    /// The start of the message being read, moved out of `buf` once it
    /// passed `max_message` bytes (at most that many kept).
    kept: Vec<u8>,
    /// The address of the last `From ` line passed over: the envelope
    /// sender of the message after it ([`from_line_sender`]).
    pending: Option<String>,
    /// The envelope sender of the message last returned.
    sender: Option<String>,
}

/// Most bytes kept of one message by [`read_mbox`]: the Maildir reader's
/// bound (`maildir::MAX_MESSAGE_BYTES`).
pub const MAX_MESSAGE_BYTES: usize = super::maildir::MAX_MESSAGE_BYTES as usize;

/// The messages of the mbox `reader` holds (see the module's notes), each
/// cut at [`MAX_MESSAGE_BYTES`].
pub fn read_mbox<R: Read>(reader: R) -> Mbox<R> {
    read_mbox_bounded(reader, MAX_MESSAGE_BYTES)
}

/// [`read_mbox`], each message cut at `max_message` bytes (a replay keeps
/// what the parser reads, `scan.max_parse_bytes`, and one byte more so
/// that the cut shows).
pub fn read_mbox_bounded<R: Read>(reader: R, max_message: usize) -> Mbox<R> {
    let mut m = Mbox::with_block(reader, BLOCK);
    m.max_message = max_message.max(1);
    m
}

impl<R: Read> Mbox<R> {
    /// A reader that reads `block` bytes at a time (tests and fuzzing
    /// use small blocks to put every boundary between two reads).
    pub fn with_block(reader: R, block: usize) -> Mbox<R> {
        Mbox {
            reader,
            block: block.max(1),
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            line_start: true,
            in_message: false,
            eof: false,
            error: None,
            failed: false,
            max_message: MAX_MESSAGE_BYTES,
            kept: Vec::new(),
            pending: None,
            sender: None,
        }
    }

    /// The envelope sender of the message last returned, from its `From `
    /// line ([`from_line_sender`]): `Some("")` for the null sender
    /// (`MAILER-DAEMON`), `None` when the line names none.
    pub fn sender(&self) -> Option<&str> {
        self.sender.as_deref()
    }

    /// Reads one more block after the unconsumed bytes; sets `eof` at the
    /// end of the input, and at a read error, which it keeps for
    /// [`Mbox::next_message`] (the bytes read before the error are kept).
    fn fill(&mut self) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        // `take` + `read_to_end` reads into spare capacity without zeroing
        // it first, and retries on `Interrupted`.
        match (&mut self.reader)
            .take(self.block as u64)
            .read_to_end(&mut self.buf)
        {
            Ok(n) => self.eof = n == 0,
            Err(e) => {
                self.error = Some(e);
                self.eof = true;
            }
        }
    }

    fn rest(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// The offset from `pos` of the next line that starts with `From `,
    /// reading as needed; None when the input ends first. With `keep`
    /// false the bytes searched are dropped on the way (before the first
    /// message), so junk before it takes no memory.
    fn find_from(&mut self, keep: bool) -> Option<usize> {
        loop {
            let len = self.rest().len();
            if self.line_start && (len >= 5 || self.eof) {
                self.line_start = false;
                if self.rest().starts_with(b"From ") {
                    return Some(0);
                }
            }
            if !self.line_start {
                let from = self.rest().get(self.scan..).unwrap_or_default();
                if let Some(i) = memmem::find(from, b"\nFrom ") {
                    return Some(self.scan + i + 1);
                }
                // A match may begin in the last 5 bytes and end in the
                // next block.
                self.scan = self.scan.max(len.saturating_sub(5));
                if !keep {
                    self.pos += self.scan;
                    self.scan = 0;
                } else if self.scan > self.max_message {
                    // Past the bound: keep the message's first bytes and
                    // read the rest without keeping it.
                    let room = self.max_message.saturating_sub(self.kept.len());
                    let rest = self.buf.get(self.pos..).unwrap_or_default();
                    let searched = rest.get(..self.scan).unwrap_or_default();
                    let take = searched.get(..room).unwrap_or(searched);
                    self.kept.extend_from_slice(take);
                    self.pos += self.scan;
                    self.scan = 0;
                }
            }
            if self.eof {
                return None;
            }
            self.fill();
        }
    }

    /// Moves `pos` past the line at `pos` (a `From ` line), reading as
    /// needed and keeping none of it but the address it names (see
    /// [`from_line_sender`]).
    fn skip_line(&mut self) {
        // The address is in the line's first bytes; a longer line is read
        // past.
        while self.rest().len() < FROM_LINE_READ
            && !self.eof
            && memchr::memchr(b'\n', self.rest()).is_none()
        {
            self.fill();
        }
        let head = self.rest();
        let head = head
            .get(..FROM_LINE_READ.min(head.len()))
            .unwrap_or_default();
        let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
        self.pending = from_line_sender(line);
        loop {
            if let Some(nl) = memchr::memchr(b'\n', self.rest()) {
                self.pos += nl + 1;
                return;
            }
            self.pos = self.buf.len();
            if self.eof {
                return;
            }
            self.fill();
        }
    }

    /// The next message; at the end of the input None; after a read error
    /// the error, once the messages wholly read before it are out (the one
    /// it cut short is not returned: its end is unknown).
    fn next_message(&mut self) -> io::Result<Option<Vec<u8>>> {
        if !self.in_message {
            let Some(at) = self.find_from(false) else {
                self.pos = self.buf.len();
                return self.error.take().map_or(Ok(None), Err);
            };
            self.pos += at;
            self.skip_line();
            self.in_message = true;
            self.scan = 0;
            self.line_start = true;
        }
        self.sender = self.pending.take();
        // The message runs to the next `From ` line or the end.
        let msg = match self.find_from(true) {
            Some(at) => {
                let msg = self.message(at);
                self.pos += at;
                self.skip_line();
                self.scan = 0;
                self.line_start = true;
                msg
            }
            None => {
                let cut_short = self.error.take();
                let msg = self.message(self.rest().len());
                self.pos = self.buf.len();
                self.scan = 0;
                self.line_start = false;
                self.in_message = false;
                if let Some(e) = cut_short {
                    return Err(e);
                }
                msg
            }
        };
        Ok(Some(msg))
    }
}

impl<R: Read> Mbox<R> {
    /// The message whose last bytes are the first `end` of `rest`, cut at
    /// `max_message`, with its quoting undone.
    fn message(&mut self, end: usize) -> Vec<u8> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let tail = rest.get(..end).unwrap_or_default();
        if self.kept.is_empty() {
            let tail = tail.get(..self.max_message).unwrap_or(tail);
            return unquote(tail);
        }
        let mut whole = std::mem::take(&mut self.kept);
        let room = self.max_message.saturating_sub(whole.len());
        whole.extend_from_slice(tail.get(..room).unwrap_or(tail));
        unquote(&whole)
    }
}

impl<R: Read> Iterator for Mbox<R> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_message() {
            Ok(m) => m.map(Ok),
            Err(e) => {
                // The error ends the stream (mail-parser's iterator reads
                // on after one, which on a reader that keeps failing never
                // ends).
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Bytes of a `From ` line read for its address.
const FROM_LINE_READ: usize = 1024;

/// The envelope sender a `From ` line names: its first word after
/// `From ` (`From sender@example.org  Thu Aug 22 12:36:23 2002`), as
/// delivery agents write it; `Some("")` for `MAILER-DAEMON` or `<>` (the
/// null sender of a bounce); `None` for a line without an address (a word
/// without `@`, such as `-` or `???`).
pub fn from_line_sender(line: &[u8]) -> Option<String> {
    let rest = line.strip_prefix(b"From ")?;
    let word = rest
        .split(|b| b.is_ascii_whitespace())
        .find(|w| !w.is_empty())?;
    let word = std::str::from_utf8(word).ok()?;
    let word = word.trim_start_matches('<').trim_end_matches('>');
    if word.is_empty() || word.eq_ignore_ascii_case("MAILER-DAEMON") {
        return Some(String::new());
    }
    (word.contains('@') && word.len() <= 512).then(|| word.to_owned())
}

/// A message's bytes with mboxrd quoting undone: a line of `>`s followed
/// by `From ` loses its first `>`.
fn unquote(msg: &[u8]) -> Vec<u8> {
    let quoted = |line_start: usize| {
        let line = msg.get(line_start..).unwrap_or_default();
        let gts = line.iter().take_while(|b| **b == b'>').count();
        gts > 0 && line.get(gts..).is_some_and(|r| r.starts_with(b"From "))
    };
    let starts = std::iter::once(0).chain(memmem::find_iter(msg, b"\n>").map(|i| i + 1));
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    for s in starts.filter(|s| quoted(*s)) {
        let o = out.get_or_insert_with(|| Vec::with_capacity(msg.len()));
        o.extend_from_slice(msg.get(copied..s).unwrap_or_default());
        copied = s + 1;
    }
    match out {
        None => msg.to_vec(),
        Some(mut o) => {
            o.extend_from_slice(msg.get(copied..).unwrap_or_default());
            o
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mail_parser::mailbox::mbox::MessageIterator;
    use proptest::prelude::*;

    fn ours(input: &[u8], block: usize) -> Vec<Vec<u8>> {
        Mbox::with_block(input, block)
            .map(|m| m.expect("in memory"))
            .collect()
    }

    fn theirs(input: &[u8]) -> Vec<Vec<u8>> {
        MessageIterator::new(input)
            .map(|m| m.expect("in memory").unwrap_contents())
            .collect()
    }

    /// Each message's envelope sender is its `From ` line's address, read
    /// at any block size; the null sender and a line without one are told
    /// apart.
    #[test]
    fn from_lines_give_each_message_its_sender() {
        let long = "y".repeat(5000);
        let mbox = format!(
            "junk\nFrom a@x.example  Thu Aug 22 12:36:23 2002\nSubject: 1\n\none\n\
             From MAILER-DAEMON Fri Aug 23 00:00:00 2002\nSubject: 2\n\ntwo\n\
             From -  Sat Aug 24 00:00:00 2002\nSubject: 3\n\nthree\n\
             From <b@y.example> {long}\nSubject: 4\n\nfour\n"
        );
        for block in [1, 3, 7, 64, BLOCK] {
            let mut m = Mbox::with_block(mbox.as_bytes(), block);
            let mut got = Vec::new();
            while let Some(msg) = m.next() {
                assert!(msg.is_ok());
                got.push(m.sender().map(str::to_owned));
            }
            assert_eq!(
                got,
                [
                    Some("a@x.example".to_owned()),
                    Some(String::new()),
                    None,
                    Some("b@y.example".to_owned())
                ],
                "block {block}"
            );
        }
        assert_eq!(from_line_sender(b"From "), None);
        assert_eq!(from_line_sender(b"From <>"), Some(String::new()));
    }

    /// A message past the bound is cut there and read past; the messages
    /// after it are whole; the buffer never holds much more than the bound
    /// and a block.
    #[test]
    fn a_long_message_is_cut_and_read_past() {
        let long = "x".repeat(300_000);
        let mbox = format!("From a\nSubject: 1\n\n{long}\nFrom b\nshort\nFrom c\n{long}");
        for block in [1, 7, 4096, BLOCK] {
            let mut m = Mbox::with_block(mbox.as_bytes(), block);
            m.max_message = 100;
            let mut got = Vec::new();
            while let Some(msg) = m.next() {
                got.push(msg.unwrap());
                assert!(m.buf.capacity() < 4 * BLOCK + 1000, "block {block}");
            }
            let first = format!("Subject: 1\n\n{long}");
            assert_eq!(got.len(), 3, "block {block}");
            assert_eq!(got[0], first.as_bytes()[..100], "block {block}");
            assert_eq!(got[1], b"short\n", "block {block}");
            assert_eq!(got[2], long.as_bytes()[..100], "block {block}");
        }
    }

    #[test]
    fn messages_quoting_and_ends() {
        let mbox = b"junk\nFrom a Mon\nSubject: x\n\n>From here\n>>From there\n>Fromage\nFrom b\r\nbody\r\nFrom c";
        let want: Vec<Vec<u8>> = vec![
            b"Subject: x\n\nFrom here\n>From there\n>Fromage\n".to_vec(),
            b"body\r\n".to_vec(),
            Vec::new(),
        ];
        for block in [1, 2, 3, 7, 64, BLOCK] {
            assert_eq!(ours(mbox, block), want, "block {block}");
        }
        assert_eq!(theirs(mbox), want);
        assert!(ours(b"", 4).is_empty());
        assert!(ours(b"no from line\n", 4).is_empty());
    }

    /// A reader that fails after some bytes ends the stream with the error.
    #[test]
    fn a_read_error_ends_the_stream() {
        /// `b"From x\nab\n"` repeated, then an error after `.0` bytes.
        struct Failing(usize, usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.0 - self.1);
                if n == 0 {
                    return Err(io::Error::other("disk"));
                }
                for b in buf.iter_mut().take(n) {
                    *b = b"From x\nab\n"[self.1 % 10];
                    self.1 += 1;
                }
                Ok(n)
            }
        }
        // 25 bytes: two whole messages, then a `From ` line cut short.
        for block in [4, BLOCK] {
            let got: Vec<io::Result<Vec<u8>>> = Mbox::with_block(Failing(25, 0), block).collect();
            assert_eq!(got.len(), 3, "block {block}");
            assert_eq!(got[0].as_ref().ok(), Some(&b"ab\n".to_vec()));
            assert_eq!(got[1].as_ref().ok(), Some(&b"ab\n".to_vec()));
            assert!(got[2].is_err());
        }
        // Cut inside a message: that message is not returned.
        let got: Vec<io::Result<Vec<u8>>> = Mbox::with_block(Failing(23, 0), BLOCK).collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok() && got[1].is_err());
    }

    fn piece() -> impl Strategy<Value = &'static [u8]> {
        prop::sample::select(vec![
            &b"From "[..],
            b"From x y\n",
            b">",
            b">From ",
            b"\n",
            b"\r\n",
            b"a",
            b"Fro",
            b"m ",
            b" ",
            b"\nFrom",
        ])
    }

    proptest! {
        #[test]
        fn equals_mail_parser(pieces in prop::collection::vec(piece(), 0..60), block in 1usize..24) {
            let input: Vec<u8> = pieces.concat();
            prop_assert_eq!(ours(&input, block), theirs(&input));
            prop_assert_eq!(ours(&input, BLOCK), theirs(&input));
        }
    }
}
