//! `[alerts]`: mail sent when a campaign first turns bulk.

use std::time::Duration;

use super::section::*;
use super::ConfigError;

/// STARTTLS to the alert relay (`alerts.tls`), as Postfix's
/// `smtp_tls_security_level` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertTls {
    /// Plain SMTP.
    None,
    /// STARTTLS when the relay offers it; its certificate not checked.
    May,
    /// STARTTLS required; the certificate not checked.
    Encrypt,
    /// STARTTLS required; the certificate checked against the system's
    /// roots and the relay's name.
    Verify,
}

/// `alerts.tls`'s words.
const ALERT_TLS: Words<AlertTls> = &[
    ("none", AlertTls::None),
    ("may", AlertTls::May),
    ("encrypt", AlertTls::Encrypt),
    ("verify", AlertTls::Verify),
];

section! {
    /// Mail alerts when a campaign first turns bulk.
    pub struct AlertsConfig in RawAlerts as "alerts" {
        to: Vec<String> = Vec::new(),
            file to: Vec<String>,
            read |k, v| {
                for (i, addr) in v.iter().enumerate() {
                    mailbox(&format!("{k}[{i}]"), addr)?;
                }
                Ok(v)
            };
        from: String = "bulkwatch@localhost".to_owned(),
            file from: String,
            read |k, v| mailbox(k, &v).map(|()| v);
        /// `host:port` of an SMTP relay that accepts mail without authentication.
        smtp: String = "127.0.0.1:25".to_owned(),
            file smtp: String,
            read |k, v| relay(k, &v).map(|()| v);
        /// STARTTLS to the relay.
        tls: AlertTls = AlertTls::May,
            file tls: String,
            read |k, v| word(k, &v, ALERT_TLS),
            write |t| word_of(t, ALERT_TLS);
        min_interval: Duration = Duration::from_secs(600),
            file min_interval_secs: u64,
            read |_, v| Ok(Duration::from_secs(v)),
            write to_secs;
    }
}

/// An alert address must be one a mail can be sent to: checked when the
/// configuration is loaded (so check-config refuses it), not when the first
/// alert fails. lettre's parser (RFC 5322 mailbox, optional display name)
/// refuses CR, LF and anything else that is no address.
fn mailbox(key: &str, v: &str) -> Result<(), ConfigError> {
    if v.contains(['\r', '\n']) {
        return Err(ConfigError::invalid(key, "contains a line break"));
    }
    v.parse::<lettre::message::Mailbox>()
        .map(|_| ())
        .map_err(|e| ConfigError::invalid(key, format!("`{v}` is not a mail address ({e})")))
}

/// `host` or `host:port` (a name or an IPv4 address; an IPv6 address in
/// brackets, `[::1]:25`) as the host to connect to (brackets removed) and
/// the port (25 when none); why not, for anything else.
///
/// # Errors
/// What is wrong with `v`.
pub fn parse_relay(v: &str) -> Result<(&str, u16), &'static str> {
    let (host, port) = match v.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) => match p.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return Err("expected [address]:port"),
            },
            None => return Err("an opening bracket without a closing one"),
        },
        None => match v.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("an IPv6 address goes in brackets: [address]:port")
            }
            Some((h, p)) => (h, Some(p)),
            None => (v, None),
        },
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("expected host or host:port");
    }
    let port = match port {
        None => 25,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err("the port is a number from 1 to 65535"),
        },
    };
    Ok((host, port))
}

/// [`parse_relay`] as a configuration error naming `key`. Anything the
/// alert task could not connect to would fail every alert at run time, so
/// it is refused at load.
fn relay(key: &str, v: &str) -> Result<(), ConfigError> {
    parse_relay(v)
        .map(|_| ())
        .map_err(|why| ConfigError::invalid(key, format!("`{v}`: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;
    use crate::config::Config;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            AlertsConfig::try_from(RawAlerts::default()).unwrap(),
            AlertsConfig::default()
        );
    }

    #[test]
    fn what_is_no_mailbox_is_refused_naming_its_key() {
        let (key, message) = refusal(AlertsConfig::try_from(RawAlerts {
            to: Some(vec!["ops@example.org".to_owned(), "ops".to_owned()]),
            ..RawAlerts::default()
        }));
        assert_eq!(key, "alerts.to[1]");
        assert!(
            message.starts_with("`ops` is not a mail address ("),
            "{message}"
        );
        for (raw, key, message) in [
            (
                RawAlerts {
                    to: Some(vec!["ops@example.org\r\nBcc: x@y".to_owned()]),
                    ..RawAlerts::default()
                },
                "alerts.to[0]",
                "contains a line break",
            ),
            (
                RawAlerts {
                    from: Some("bulkwatch@localhost\n".to_owned()),
                    ..RawAlerts::default()
                },
                "alerts.from",
                "contains a line break",
            ),
        ] {
            assert_eq!(
                refusal(AlertsConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    /// `smtp`, `tls` and `min_interval_secs` are taken as written.
    #[test]
    fn relay_and_interval_are_read_as_written() {
        let c = AlertsConfig::try_from(RawAlerts {
            to: Some(vec!["Mail Team <mail@example.org>".to_owned()]),
            from: Some("bw@example.org".to_owned()),
            smtp: Some("relay.example.org:587".to_owned()),
            tls: Some("verify".to_owned()),
            min_interval_secs: Some(0),
        })
        .unwrap();
        assert_eq!(
            c,
            AlertsConfig {
                to: vec!["Mail Team <mail@example.org>".to_owned()],
                from: "bw@example.org".to_owned(),
                smtp: "relay.example.org:587".to_owned(),
                tls: AlertTls::Verify,
                min_interval: Duration::ZERO,
            }
        );
    }

    /// A relay the alert task could not connect to is refused.
    #[test]
    fn the_relay_is_host_or_host_port() {
        for ok in [
            "127.0.0.1:25",
            "relay.example.org",
            "relay.example.org:587",
            "[::1]:25",
            "[::1]",
        ] {
            assert!(relay("alerts.smtp", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "relay:abc",
            "relay:0",
            "relay:70000",
            ":25",
            "relay :25",
            "[::1",
            "[::1]25",
            "relay\n:25",
        ] {
            assert!(relay("alerts.smtp", bad).is_err(), "{bad:?}");
        }
        let err = Config::from_toml_str("[alerts]\nsmtp = \"relay:smtp\"\n").unwrap_err();
        assert!(err.to_string().contains("alerts.smtp"), "{err}");
    }

    /// Alerts that could never be sent are refused when the file is
    /// loaded, naming the key (before: accepted, and every alert failed).
    #[test]
    fn alert_addresses_must_be_addresses() {
        for (toml, key) in [
            ("[alerts]\nto = [\"not an address\"]\n", "alerts.to[0]"),
            (
                "[alerts]\nto = [\"ops@example.org\", \"a@b\\r\\nBcc: x@y\"]\n",
                "alerts.to[1]",
            ),
            (
                "[alerts]\nto = [\"ops@example.org\"]\nfrom = \"bw@example.org\\n\"\n",
                "alerts.from",
            ),
            ("[alerts]\nfrom = \"@\"\n", "alerts.from"),
        ] {
            let err = Config::from_toml_str(toml).unwrap_err();
            assert_eq!(err.key(), Some(key), "{toml}: {err}");
        }
        let ok = Config::from_toml_str(
            "[alerts]\nto = [\"ops@example.org\", \"Mail Team <mail@example.org>\"]\nfrom = \"bulkwatch@localhost\"\n",
        )
        .unwrap();
        assert_eq!(ok.alerts.to.len(), 2);
    }
}
