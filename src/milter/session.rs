//! Per-connection and per-message state, filled by the callbacks and
//! emptied at end of message and at abort.
//!
//! A [`Session`] lives as long as one MTA connection (one SMTP session,
//! possibly many messages). It collects the client address and name and
//! the HELO name; per message the envelope (MAIL FROM, every RCPT TO, queue
//! id, `{auth_authen}`) and the header and body bytes, up to
//! `max_message_bytes` in all. Beyond that bound nothing more is buffered
//! and the message is scanned as far as it was kept. No analysis happens
//! here: [`Session::finish_message`] hands the collected [`Message`] over.

use std::net::IpAddr;

use crate::engine::party::{address_hash, MAX_MESSAGE_RCPTS};
use crate::engine::{Envelope, MAX_KEPT_RCPTS};
use crate::milter::origin::Client;

/// Longest RCPT TO address kept (RFC 5321 §4.5.3.1: 256 octets for a path).
pub const MAX_ADDRESS_BYTES: usize = 320;

/// The header this milter writes; copies arriving with a message are removed.
pub const HEADER_NAME: &str = "X-Bulkwatch";

/// The score header written beside [`HEADER_NAME`]; copies arriving with a
/// message are removed too.
pub const SCORE_HEADER_NAME: &str = "X-Bulkwatch-Score";

/// The header of a delivered copy zero-hour may act on later
/// (`crate::milter::zerohour`).
pub const COPY_HEADER_NAME: &str = "X-Bulkwatch-Copy";

/// State of one MTA connection.
#[derive(Debug, Default)]
pub struct Session {
    pub client_addr: Option<IpAddr>,
    pub client_name: Option<String>,
    /// How the MTA said the client connected ([`Client`]).
    pub client: Client,
    /// `{daemon_name}` at connect: the Postfix service.
    pub daemon_name: Option<String>,
    pub helo: Option<String>,
    /// The MTA accepts `Status::Skip` for the rest of the body.
    pub can_skip: bool,
    /// Stages for which the MTA agreed to expect no reply (a subset of
    /// `callbacks::NO_REPLY`): their callbacks answer `Status::Noreply`.
    pub no_reply: indymilter::ProtoOpts,
    message: Message,
}

/// Copies of the milter's headers that arrived with a message (each is
/// removed at end of message, see `reply::apply`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forged {
    /// `X-Bulkwatch`.
    pub headers: usize,
    /// `X-Bulkwatch-Score`.
    pub scores: usize,
    /// `X-Bulkwatch-Copy` ([`COPY_HEADER_NAME`]).
    pub copies: usize,
}

/// What was collected for one message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Message {
    pub envelope: Envelope,
    /// Header section and body as received (CRLF line ends), cut at the
    /// byte bound.
    pub raw: Vec<u8>,
    /// Copies of this milter's headers that arrived with the message.
    pub forged: Forged,
    /// What its `Authentication-Results` headers say (the first
    /// [`MAX_HEADERS`](crate::engine::allowance::MAX_HEADERS)); whether
    /// to trust them is the configuration's
    /// ([`crate::engine::allowance::authenticated`]).
    pub auth_results: Vec<crate::engine::allowance::AuthResult>,
    /// Bytes offered beyond the bound and dropped.
    pub dropped_bytes: usize,
    /// How the client connected (for `crate::milter::origin`).
    pub client: Client,
    /// Where the headers read so far stand against the site's block of
    /// authentication headers (`allowance::SiteBlock`).
    pub site_block: crate::engine::allowance::SiteBlock,
}

impl Message {
    /// The queue id for logs, `NOQUEUE` when the MTA sent none.
    pub fn queue_id(&self) -> &str {
        self.envelope.queue_id.as_deref().unwrap_or("NOQUEUE")
    }

    /// More was offered than kept.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
    }
}

/// Strips the angle brackets around an SMTP path (`<a@b>` → `a@b`).
fn bare_address(arg: &str) -> String {
    let a = arg.trim();
    let a = a.strip_prefix('<').unwrap_or(a);
    a.strip_suffix('>').unwrap_or(a).to_owned()
}

impl Session {
    /// The connect event: the client's name and address (none for
    /// Postfix's non-SMTP mail), and `{daemon_name}`.
    pub fn connect(&mut self, name: String, addr: Option<IpAddr>, daemon_name: Option<String>) {
        self.client_name = Some(name);
        self.client_addr = addr;
        self.client = if addr.is_some() {
            Client::Inet
        } else {
            Client::Local
        };
        self.daemon_name = daemon_name.filter(|d| !d.is_empty());
    }

    /// The current message reached the byte bound: more is dropped.
    pub fn message_full(&self) -> bool {
        self.message.truncated()
    }

    pub fn helo(&mut self, name: String) {
        self.helo = Some(name);
    }

    /// MAIL FROM: a new message starts (whatever was collected is dropped).
    pub fn begin_message(&mut self, from: &str, auth_user: Option<String>) {
        self.message = Message {
            client: self.client,
            ..Message::default()
        };
        self.message.envelope = Envelope {
            client_addr: self.client_addr,
            helo: self.helo.clone(),
            mail_from: Some(bare_address(from)),
            rcpts: Vec::new(),
            auth_user: auth_user.filter(|u| !u.is_empty()),
            daemon_name: self.daemon_name.clone(),
            queue_id: None,
            ..Envelope::default()
        };
    }

    /// Notes the queue id when the MTA sends it (at MAIL, RCPT or EOM).
    pub fn set_queue_id(&mut self, id: Option<String>) {
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            self.message.envelope.queue_id = Some(id);
        }
    }

    pub fn queue_id(&self) -> &str {
        self.message.queue_id()
    }

    /// One RCPT TO, in constant time. The first [`MAX_KEPT_RCPTS`]
    /// addresses are kept (at most [`MAX_ADDRESS_BYTES`] each), the others
    /// counted, and of those up to [`MAX_MESSAGE_RCPTS`] in all a hash is
    /// kept (8 bytes), so that whom the message reached is known: recipients
    /// have a bound of their own and never take room from the header and
    /// body (before, they counted against `max_message_bytes`, were summed
    /// again at every callback, and enough of them pushed the body out so
    /// that the message went unjudged).
    pub fn add_recipient(&mut self, rcpt: &str) {
        let env = &mut self.message.envelope;
        if env.rcpts.len() >= MAX_KEPT_RCPTS
            && env.rcpts.len() + env.rcpt_hashes.len() < MAX_MESSAGE_RCPTS
        {
            let r = bare_address(rcpt);
            env.rcpt_hashes.push(address_hash(&r));
        }
        if env.rcpts.len() < MAX_KEPT_RCPTS {
            let mut r = bare_address(rcpt);
            if r.len() > MAX_ADDRESS_BYTES {
                let mut end = MAX_ADDRESS_BYTES;
                while !r.is_char_boundary(end) {
                    end -= 1;
                }
                r.truncate(end);
            }
            env.rcpts.push(r);
        } else {
            env.more_rcpts = env.more_rcpts.saturating_add(1);
        }
    }

    fn used(&self) -> usize {
        self.message.raw.len()
    }

    fn append(&mut self, bytes: &[u8], max_bytes: usize) {
        let room = max_bytes.saturating_sub(self.used());
        let keep = bytes.len().min(room);
        self.message
            .raw
            .extend_from_slice(bytes.get(..keep).unwrap_or_default());
        self.message.dropped_bytes += bytes.len() - keep;
    }

    /// One header field, as `name: value` plus CRLF (RFC 5322 §2.2).
    pub fn add_header(&mut self, name: &[u8], value: &[u8], max_bytes: usize) {
        let in_site_block = self.message.site_block.next(name);
        if name.eq_ignore_ascii_case(HEADER_NAME.as_bytes()) {
            self.message.forged.headers += 1;
        } else if name.eq_ignore_ascii_case(SCORE_HEADER_NAME.as_bytes()) {
            self.message.forged.scores += 1;
        } else if name.eq_ignore_ascii_case(COPY_HEADER_NAME.as_bytes()) {
            self.message.forged.copies += 1;
        } else if name.eq_ignore_ascii_case(b"Authentication-Results")
            && self.message.auth_results.len() < crate::engine::allowance::MAX_HEADERS
            && value.len() <= crate::engine::allowance::MAX_HEADER_LEN
        {
            if let Some(mut r) = crate::engine::allowance::parse(&String::from_utf8_lossy(value)) {
                r.site = in_site_block;
                self.message.auth_results.push(r);
            }
        }
        let mut line = Vec::with_capacity(name.len() + value.len() + 4);
        line.extend_from_slice(name);
        line.extend_from_slice(b": ");
        line.extend_from_slice(value);
        line.extend_from_slice(b"\r\n");
        self.append(&line, max_bytes);
    }

    /// End of headers: the empty line that separates the body.
    pub fn end_headers(&mut self, max_bytes: usize) {
        self.append(b"\r\n", max_bytes);
    }

    pub fn add_body_chunk(&mut self, chunk: &[u8], max_bytes: usize) {
        self.append(chunk, max_bytes);
    }

    /// End of message: hands over what was collected and resets for the
    /// next message on this connection.
    pub fn finish_message(&mut self) -> Message {
        let next = Message {
            client: self.client,
            ..Message::default()
        };
        std::mem::replace(&mut self.message, next)
    }

    /// The MTA aborted the message: forget it.
    pub fn abort_message(&mut self) {
        self.message = Message {
            client: self.client,
            ..Message::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_envelope_headers_and_body() {
        let mut s = Session::default();
        s.connect("mx.example".into(), "192.0.2.1".parse().ok(), None);
        s.helo("mx.example".into());
        s.begin_message("<a@b.example>", Some(String::new()));
        s.set_queue_id(Some("4Xq1".into()));
        s.add_recipient("<c@d.example>");
        s.add_header(b"Subject", b"hi", 1000);
        s.add_header(b"x-bulkwatch", b"clean", 1000);
        s.end_headers(1000);
        s.add_body_chunk(b"body\r\n", 1000);
        let m = s.finish_message();
        assert_eq!(m.envelope.mail_from.as_deref(), Some("a@b.example"));
        assert_eq!(m.envelope.rcpts, vec!["c@d.example"]);
        assert_eq!(m.envelope.auth_user, None);
        assert_eq!(m.queue_id(), "4Xq1");
        assert_eq!(m.forged.headers, 1);
        assert_eq!(m.raw, b"Subject: hi\r\nx-bulkwatch: clean\r\n\r\nbody\r\n");
        assert_eq!(
            s.finish_message(),
            Message {
                client: Client::Inet,
                ..Message::default()
            },
            "reset after end of message"
        );
        assert_eq!(
            s.helo.as_deref(),
            Some("mx.example"),
            "connection state stays"
        );
    }

    #[test]
    fn bytes_beyond_the_bound_are_dropped() {
        let mut s = Session::default();
        s.begin_message("<>", None);
        s.add_header(b"Subject", b"x", 20);
        s.end_headers(20);
        s.add_body_chunk(&[b'a'; 100], 20);
        let m = s.finish_message();
        assert_eq!(m.raw.len(), 20);
        assert!(m.truncated());
        assert_eq!(m.envelope.mail_from.as_deref(), Some(""));
    }

    #[test]
    fn abort_forgets_the_message() {
        let mut s = Session::default();
        s.begin_message("<a@b>", None);
        s.add_body_chunk(b"x", 100);
        s.abort_message();
        assert_eq!(s.finish_message(), Message::default());
    }
}
