//! What the caller passes in besides the bytes: the SMTP envelope and the
//! time.

use std::net::IpAddr;

/// Seconds since the Unix epoch, as passed in by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct UnixSecs(pub u64);

/// RCPT TO addresses kept per message: what normalization reads to remove
/// personalization (it reads 64 names and addresses at most). The others
/// are counted, not kept.
pub const MAX_KEPT_RCPTS: usize = 64;

/// What the MTA knows about a message besides its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    pub client_addr: Option<IpAddr>,
    pub helo: Option<String>,
    /// MAIL FROM address without angle brackets; empty for the null sender.
    pub mail_from: Option<String>,
    /// RCPT TO addresses, the first [`MAX_KEPT_RCPTS`] (the rest are only
    /// counted, in `more_rcpts`).
    pub rcpts: Vec<String>,
    /// RCPT TO addresses beyond those kept in `rcpts`.
    pub more_rcpts: u32,
    /// The hashes of the first of those beyond `rcpts`
    /// ([`crate::engine::party::address_hash`]), so that whom a message
    /// reached is known for up to
    /// [`MAX_MESSAGE_RCPTS`](crate::engine::party::MAX_MESSAGE_RCPTS)
    /// recipients (counted in `more_rcpts` too).
    pub rcpt_hashes: Vec<u64>,
    /// `{auth_authen}`: set when the client authenticated.
    pub auth_user: Option<String>,
    /// `{daemon_name}`: the Postfix service the mail came through.
    pub daemon_name: Option<String>,
    pub queue_id: Option<String>,
    /// Where the mail came from, as the MTA saw it (the milter decides,
    /// `crate::milter::origin`; a replayed message is inbound).
    pub origin: crate::engine::party::Origin,
}

impl Envelope {
    /// Recipients the message counts for: the RCPT TO count, at least 1,
    /// at most 65,535.
    pub fn recipient_count(&self) -> u16 {
        let n = self.rcpts.len().saturating_add(self.more_rcpts as usize);
        u16::try_from(n.max(1)).unwrap_or(u16::MAX)
    }
}
