//! `[alerts]`: mail sent when a campaign first turns bulk.

use std::time::Duration;

use super::raw::RawAlerts;
use super::ConfigError;

/// Mail alerts when a campaign first turns bulk.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertsConfig {
    pub to: Vec<String>,
    pub from: String,
    /// `host:port` of an SMTP relay that accepts mail without authentication.
    pub smtp: String,
    pub min_interval: Duration,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            to: Vec::new(),
            from: "bulkwatch@localhost".to_owned(),
            smtp: "127.0.0.1:25".to_owned(),
            min_interval: Duration::from_secs(600),
        }
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

impl TryFrom<RawAlerts> for AlertsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawAlerts) -> Result<Self, ConfigError> {
        let RawAlerts {
            to,
            from,
            smtp,
            min_interval_secs,
        } = raw;
        let mut c = AlertsConfig::default();
        if let Some(v) = to {
            for (i, addr) in v.iter().enumerate() {
                mailbox(&format!("alerts.to[{i}]"), addr)?;
            }
            c.to = v;
        }
        if let Some(v) = from {
            mailbox("alerts.from", &v)?;
            c.from = v;
        }
        if let Some(v) = smtp {
            c.smtp = v;
        }
        if let Some(v) = min_interval_secs {
            c.min_interval = Duration::from_secs(v);
        }
        Ok(c)
    }
}
