//! `[zero_hour]`: the copies of a campaign delivered before it turned
//! bulk, acted on in the recipients' mailboxes (Dovecot), and the users'
//! reports from their Junk button.

use std::path::PathBuf;

use super::section::*;
use super::ConfigError;

/// What is done to a delivered copy when its campaign turns bulk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroHourAction {
    /// Moved from the inbox to the Junk mailbox.
    Junk,
    /// Given the `$Junk` keyword where it lies (clients show it as junk).
    Flag,
    /// Nothing in the mailbox: a log line per copy.
    Log,
}

const ACTIONS: Words<ZeroHourAction> = &[
    ("junk", ZeroHourAction::Junk),
    ("flag", ZeroHourAction::Flag),
    ("log", ZeroHourAction::Log),
];

/// How a recipient address names its Dovecot user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserName {
    /// The whole address, lower-cased (`user@example.org`).
    Address,
    /// The part before the `@`, lower-cased.
    LocalPart,
}

const USER_NAMES: Words<UserName> = &[
    ("address", UserName::Address),
    ("localpart", UserName::LocalPart),
];

section! {
    /// Zero-hour action on delivered copies, and reports from users.
    pub struct ZeroHourConfig in RawZeroHour as "zero_hour" {
        /// Off unless turned on: every copy that may later belong to a
        /// bulk campaign then carries an `X-Bulkwatch-Copy` header.
        enabled: bool = false, file enabled: bool;
        /// Dovecot's doveadm HTTP API (`service doveadm { inet_listener
        /// http }`): `http://host:port/doveadm/v1`.
        doveadm_url: String = "http://127.0.0.1:8080/doveadm/v1".to_owned(),
            file doveadm_url: String,
            read |k, v| parse_url(&v).map(|_| v).map_err(|why| ConfigError::invalid(k, why));
        /// A file holding Dovecot's `doveadm_api_key` (read at start).
        doveadm_key_file: PathBuf = PathBuf::from("/etc/bulkwatch/doveadm.key"),
            file doveadm_key_file: String,
            read |_, v| Ok(PathBuf::from(v)),
            write |p| Some(p.display().to_string()),
            restart KEYFILE;
        action: ZeroHourAction = ZeroHourAction::Junk,
            file action: String,
            read |k, v| word(k, &v, ACTIONS),
            write |a| word_of(a, ACTIONS);
        junk_mailbox: String = "Junk".to_owned(),
            file junk_mailbox: String,
            read |k, v| mailbox(k, v);
        inbox: String = "INBOX".to_owned(),
            file inbox: String,
            read |k, v| mailbox(k, v);
        user: UserName = UserName::Address,
            file user: String,
            read |k, v| word(k, &v, USER_NAMES),
            write |u| word_of(u, USER_NAMES);
        /// Distinct recipients of a campaign whose reports of spam make it
        /// bulk.
        reporters: usize = 3,
            file reporters: u64,
            read |k, v| super::to_usize(k, v, 1, 1000),
            write to_u64;
        /// The socket that takes users' reports (`bulkwatch report`, the
        /// Dovecot sieve scripts); empty: none.
        report_socket: String = String::new(),
            file report_socket: String,
            restart LISTENER;
        /// The group given the report socket (mode 0660): the user
        /// Dovecot's sieve scripts run as; empty: the daemon's group.
        report_group: String = String::new(),
            file report_group: String,
            restart LISTENER;
    }
}

/// Why `doveadm_key_file` waits for a restart.
const KEYFILE: &str = "the key is read at start";

/// A mailbox name as doveadm takes it: 1 to 255 bytes, no control
/// characters.
fn mailbox(key: &str, v: String) -> Result<String, ConfigError> {
    if v.is_empty() || v.len() > 255 || v.chars().any(char::is_control) {
        return Err(ConfigError::invalid(
            key,
            "a mailbox name of 1 to 255 bytes without control characters",
        ));
    }
    Ok(v)
}

/// `http://host:port/path` as (host, port, path); why not, otherwise. Only
/// plain HTTP: doveadm's listener has no TLS of its own, and the key
/// crosses only a loopback or the site's own network.
///
/// # Errors
/// What is wrong with `v`.
pub fn parse_url(v: &str) -> Result<(String, u16, String), &'static str> {
    let rest = v
        .strip_prefix("http://")
        .ok_or("the doveadm URL starts with http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/doveadm/v1"),
    };
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL's path has white space or control characters");
    }
    let (host, port) = super::parse_relay(authority)?;
    let port = if authority.ends_with(']') || !authority.contains(':') {
        80
    } else {
        port
    };
    Ok((host.to_owned(), port, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            ZeroHourConfig::try_from(RawZeroHour::default()).unwrap(),
            ZeroHourConfig::default()
        );
        assert!(!ZeroHourConfig::default().enabled);
    }

    #[test]
    fn urls_are_plain_http_with_a_host() {
        assert_eq!(
            parse_url("http://127.0.0.1:8080/doveadm/v1").unwrap(),
            ("127.0.0.1".to_owned(), 8080, "/doveadm/v1".to_owned())
        );
        assert_eq!(
            parse_url("http://dovecot.example.org").unwrap(),
            (
                "dovecot.example.org".to_owned(),
                80,
                "/doveadm/v1".to_owned()
            )
        );
        for bad in ["https://x/", "127.0.0.1:8080", "http:///x", "http://a b/"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
        let (key, _) = refusal(ZeroHourConfig::try_from(RawZeroHour {
            junk_mailbox: Some(String::new()),
            ..RawZeroHour::default()
        }));
        assert_eq!(key, "zero_hour.junk_mailbox");
    }
}
