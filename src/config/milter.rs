//! `[milter]`: the socket, limits, timeouts and reply texts of the milter adapter.

use std::path::PathBuf;
use std::time::Duration;

use super::section::*;
use super::{to_usize, ConfigError};

/// Where and how the milter listens.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketSpec {
    Inet(String),
    Unix(PathBuf),
}

/// The file's and Postfix's form: `inet:HOST:PORT` or `unix:PATH`.
impl std::fmt::Display for SocketSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketSpec::Inet(a) => write!(f, "inet:{a}"),
            SocketSpec::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What to do when the engine fails or times out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureAction {
    Accept,
    Tempfail,
}

/// `milter.failure_action`'s words.
const FAILURE_ACTIONS: Words<FailureAction> = &[
    ("accept", FailureAction::Accept),
    ("tempfail", FailureAction::Tempfail),
];

section! {
    /// The milter adapter's settings.
    pub struct MilterConfig in RawMilter as "milter" {
        socket: SocketSpec = SocketSpec::Inet("127.0.0.1:7357".to_owned()),
            file socket: String,
            read |k, v| parse_socket(k, &v),
            write |s| Some(s.to_string()),
            restart LISTENER;
        socket_owner: Option<String> = None,
            file socket_owner: String, read |_, v| Ok(Some(v)), write |v| v.clone(),
            restart LISTENER;
        socket_group: Option<String> = None,
            file socket_group: String, read |_, v| Ok(Some(v)), write |v| v.clone(),
            restart LISTENER;
        socket_mode: u32 = 0o660,
            file socket_mode: String,
            read |k, v| u32::from_str_radix(v.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| ConfigError::invalid(k, "must be an octal mode such as \"0660\"")),
            write |m| Some(format!("{m:04o}")),
            restart LISTENER;
        max_message_bytes: usize = 1024 * 1024,
            file max_message_bytes: u64,
            read |k, v| to_usize(k, v, 1024, 1 << 30),
            write to_u64;
        max_connections: usize = 256,
            file max_connections: u64,
            read |k, v| to_usize(k, v, 1, 100_000),
            write to_u64,
            restart LISTENER;
        /// A connection that sends no complete milter message for this long is
        /// closed (Postfix's own timeouts are shorter: `smtpd_timeout` 300 s).
        idle_timeout: Duration = Duration::from_secs(330),
            file idle_timeout_secs: u64,
            read |k, v| secs_in(k, v, 10, 7210),
            write to_secs,
            restart LISTENER;
        engine_timeout: Duration = Duration::from_millis(2000),
            file engine_timeout_ms: u64,
            read |k, v| millis_in(k, v, 1, 600_000),
            write to_millis;
        /// Longest a message waits for a free worker before its reading
        /// starts (not counted in `engine_timeout`); past it the message
        /// gets `failure_action`, logged and counted as a queue wait.
        queue_timeout: Duration = Duration::from_millis(10_000),
            file queue_timeout_ms: u64,
            read |k, v| millis_in(k, v, 1, 600_000),
            write to_millis;
        /// Worker processes that read mail; 0: one per CPU, at least 2.
        workers: usize = 0,
            file workers: u64,
            read |k, v| to_usize(k, v, 0, 256),
            write to_u64,
            restart WORKERS;
        failure_action: FailureAction = FailureAction::Accept,
            file failure_action: String,
            read |k, v| word(k, &v, FAILURE_ACTIONS),
            write |a| word_of(a, FAILURE_ACTIONS);
        reject_text: String = "Message rejected as bulk mail".to_owned(),
            file reject_text: String, read reply_text;
        tempfail_text: String = "Message deferred, try again later".to_owned(),
            file tempfail_text: String, read reply_text;
    }
}

/// Parses `inet:HOST:PORT`, `inet:PORT@HOST` (sendmail style) or `unix:/path`.
pub fn parse_socket(key: &str, s: &str) -> Result<SocketSpec, ConfigError> {
    if let Some(path) = s.strip_prefix("unix:") {
        if !path.starts_with('/') {
            return Err(ConfigError::invalid(
                key,
                "a unix socket path must be absolute",
            ));
        }
        return Ok(SocketSpec::Unix(PathBuf::from(path)));
    }
    if let Some(rest) = s.strip_prefix("inet:").or_else(|| s.strip_prefix("inet6:")) {
        let addr = match rest.split_once('@') {
            Some((port, host)) => format!("{host}:{port}"),
            None => rest.to_owned(),
        };
        let port_ok = addr
            .rsplit_once(':')
            .map(|(_, p)| p.parse::<u16>().is_ok())
            .unwrap_or(false);
        if !port_ok {
            return Err(ConfigError::invalid(
                key,
                format!("`{s}` has no valid port"),
            ));
        }
        return Ok(SocketSpec::Inet(addr));
    }
    Err(ConfigError::invalid(
        key,
        format!("`{s}` must start with inet: or unix:"),
    ))
}

/// SMTP reply text: printable ASCII, no CR/LF, bounded.
fn reply_text(key: &str, v: String) -> Result<String, ConfigError> {
    if v.is_empty() || v.len() > 200 || !v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(ConfigError::invalid(
            key,
            "must be 1 to 200 printable ASCII characters",
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    #[test]
    fn sockets_parse() {
        assert_eq!(
            parse_socket("k", "inet:127.0.0.1:7357").unwrap(),
            SocketSpec::Inet("127.0.0.1:7357".into())
        );
        assert_eq!(
            parse_socket("k", "inet:7357@localhost").unwrap(),
            SocketSpec::Inet("localhost:7357".into())
        );
        assert_eq!(
            parse_socket("k", "unix:/run/bw.sock").unwrap(),
            SocketSpec::Unix("/run/bw.sock".into())
        );
        assert!(parse_socket("k", "tcp:1").is_err());
        assert!(parse_socket("k", "unix:rel").is_err());
    }

    fn raw(set: fn(&mut RawMilter)) -> RawMilter {
        let mut r = RawMilter::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            MilterConfig::try_from(RawMilter::default()).unwrap(),
            MilterConfig::default()
        );
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        let mode = "must be an octal mode such as \"0660\"";
        for (raw, key, message) in [
            (
                raw(|r| r.socket = Some("tcp:7357".to_owned())),
                "milter.socket",
                "`tcp:7357` must start with inet: or unix:",
            ),
            (
                raw(|r| r.socket = Some("unix:run/bw.sock".to_owned())),
                "milter.socket",
                "a unix socket path must be absolute",
            ),
            (
                raw(|r| r.socket = Some("inet:localhost".to_owned())),
                "milter.socket",
                "`inet:localhost` has no valid port",
            ),
            (
                raw(|r| r.socket = Some("inet:70000@localhost".to_owned())),
                "milter.socket",
                "`inet:70000@localhost` has no valid port",
            ),
            (
                raw(|r| r.socket_mode = Some("0999".to_owned())),
                "milter.socket_mode",
                mode,
            ),
            (
                raw(|r| r.socket_mode = Some("1777".to_owned())),
                "milter.socket_mode",
                mode,
            ),
            (
                raw(|r| r.socket_mode = Some("rw-rw----".to_owned())),
                "milter.socket_mode",
                mode,
            ),
            (
                raw(|r| r.max_message_bytes = Some(1023)),
                "milter.max_message_bytes",
                "1023 is outside 1024..=1073741824",
            ),
            (
                raw(|r| r.max_connections = Some(0)),
                "milter.max_connections",
                "0 is outside 1..=100000",
            ),
            (
                raw(|r| r.max_connections = Some(100_001)),
                "milter.max_connections",
                "100001 is outside 1..=100000",
            ),
            (
                raw(|r| r.idle_timeout_secs = Some(9)),
                "milter.idle_timeout_secs",
                "9 is outside 10..=7210",
            ),
            (
                raw(|r| r.idle_timeout_secs = Some(7211)),
                "milter.idle_timeout_secs",
                "7211 is outside 10..=7210",
            ),
            (
                raw(|r| r.engine_timeout_ms = Some(0)),
                "milter.engine_timeout_ms",
                "0 is outside 1..=600000",
            ),
            (
                raw(|r| r.engine_timeout_ms = Some(600_001)),
                "milter.engine_timeout_ms",
                "600001 is outside 1..=600000",
            ),
            (
                raw(|r| r.failure_action = Some("reject".to_owned())),
                "milter.failure_action",
                "`reject` is not accept or tempfail",
            ),
        ] {
            assert_eq!(
                refusal(MilterConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn bad_reply_texts_are_refused_naming_their_key() {
        let text = "must be 1 to 200 printable ASCII characters";
        for (raw, key, message) in [
            (
                raw(|r| r.reject_text = Some(String::new())),
                "milter.reject_text",
                text,
            ),
            (
                raw(|r| r.reject_text = Some("Rejected\r\n550 5.7.1 more".to_owned())),
                "milter.reject_text",
                text,
            ),
            (
                raw(|r| r.reject_text = Some("x".repeat(201))),
                "milter.reject_text",
                text,
            ),
            (
                raw(|r| r.tempfail_text = Some("Später".to_owned())),
                "milter.tempfail_text",
                text,
            ),
        ] {
            assert_eq!(
                refusal(MilterConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn values_in_range_are_read() {
        let c = MilterConfig::try_from(RawMilter {
            socket: Some("unix:/run/bw.sock".to_owned()),
            socket_owner: Some("postfix".to_owned()),
            socket_group: Some("mail".to_owned()),
            socket_mode: Some("0o640".to_owned()),
            max_message_bytes: Some(1024),
            max_connections: Some(100_000),
            idle_timeout_secs: Some(10),
            engine_timeout_ms: Some(600_000),
            queue_timeout_ms: Some(1),
            workers: Some(256),
            failure_action: Some("tempfail".to_owned()),
            reject_text: Some("x".repeat(200)),
            tempfail_text: Some("Later".to_owned()),
        })
        .unwrap();
        assert_eq!(
            c,
            MilterConfig {
                socket: SocketSpec::Unix("/run/bw.sock".into()),
                socket_owner: Some("postfix".to_owned()),
                socket_group: Some("mail".to_owned()),
                socket_mode: 0o640,
                max_message_bytes: 1024,
                max_connections: 100_000,
                idle_timeout: Duration::from_secs(10),
                engine_timeout: Duration::from_millis(600_000),
                queue_timeout: Duration::from_millis(1),
                workers: 256,
                failure_action: FailureAction::Tempfail,
                reject_text: "x".repeat(200),
                tempfail_text: "Later".to_owned(),
            }
        );
        let plain = MilterConfig::try_from(raw(|r| r.socket_mode = Some("777".to_owned())));
        assert_eq!(plain.unwrap().socket_mode, 0o777);
    }
}
