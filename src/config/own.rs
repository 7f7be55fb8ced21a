//! `[own]`: which mail is the site's own, from what Postfix saw (issue 63).
//!
//! The site's own mail (its users' and machines' submissions) is counted
//! apart from mail from outside and never refused unless `policy.own`
//! says so. What makes a message own is what the MTA observed, never what
//! the sender wrote: a SASL login (`{auth_authen}`), the SMTP client's
//! address in the site's networks (Postfix's `mynetworks` by default),
//! local submission (no SMTP client at all), or the service it came
//! through (`{daemon_name}`). `crate::milter::origin` applies it.

use ipnet::IpNet;

use super::section::*;
use super::{in_range, to_usize, ConfigError};

/// One entry of `own.networks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnNetwork {
    /// The value of Postfix's `mynetworks`, read with `postconf` at start
    /// and at each reload.
    Mynetworks,
    /// An address or a CIDR network.
    Net(IpNet),
}

impl std::fmt::Display for OwnNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OwnNetwork::Mynetworks => f.write_str(MYNETWORKS),
            OwnNetwork::Net(n) => write!(f, "{n}"),
        }
    }
}

/// The word in `own.networks` for Postfix's `mynetworks`.
pub const MYNETWORKS: &str = "mynetworks";

/// Default `own.thread_secs`: two weeks, longer than any window.
pub const THREAD_SECS: u64 = 14 * 86_400;

section! {
    /// The site's own mail: counted apart and never refused unless
    /// `policy.own` says so.
    pub struct OwnConfig in RawOwn as "own" {
        /// Client networks whose mail is own: addresses, CIDR networks and
        /// the word `mynetworks` (Postfix's setting, read with `postconf`
        /// at start and at each reload; unreadable, it adds nothing and
        /// says so in the log).
        networks: Vec<OwnNetwork> = vec![OwnNetwork::Mynetworks],
            file networks: Vec<String>,
            read |k, v| v.iter().map(|s| own_network(k, s)).collect(),
            write |v| Some(v.iter().map(ToString::to_string).collect());
        /// Networks whose mail is never own, even inside `networks`: relays
        /// that carry mail from outside (a backup MX, a gateway or a
        /// content filter that hands mail back to Postfix).
        exclude: Vec<IpNet> = Vec::new(),
            file exclude: Vec<String>,
            read |k, v| v.iter().map(|s| network(k, s)).collect(),
            write |v| Some(v.iter().map(ToString::to_string).collect());
        /// Postfix's configuration directory for `postconf -c` (empty:
        /// Postfix's default, /etc/postfix).
        postfix_config_dir: String = String::new(),
            file postfix_config_dir: String;
        /// Mail from SMTP-authenticated clients (`{auth_authen}` set) is own.
        authenticated: bool = true, file authenticated: bool;
        /// Mail submitted on the MTA host without SMTP (Postfix's sendmail
        /// command and pickup, which reach `non_smtpd_milters`) is own.
        local_submission: bool = true, file local_submission: bool;
        /// Values of Postfix's `{daemon_name}` macro whose mail is own: a
        /// submission service given its own name in master.cf
        /// (`-o milter_macro_daemon_name=ORIGINATING`).
        daemon_names: Vec<String> = Vec::new(),
            file daemon_names: Vec<String>,
            read |_, v| Ok(v.into_iter().map(|d| d.trim().to_owned()).filter(|d| !d.is_empty()).collect());
        /// How long our users' Message-IDs are kept, so that an answer from
        /// outside quoting one is known as an answer (seconds).
        thread_secs: u64 = THREAD_SECS,
            file thread_secs: u64, read |k, v| in_range(k, v, 0, 365 * 86_400);
        /// Most of our users' Message-IDs kept (about 40 bytes each); the
        /// oldest go first.
        max_threads: usize = 100_000,
            file max_threads: u64,
            read |k, v| to_usize(k, v, 0, 10_000_000),
            write to_u64;
        /// Alert (the `[alerts]` mail and log line) when the site's own
        /// mail turns bulk: a campaign sent from inside, with the login
        /// and the client that sent it.
        alert: bool = true, file alert: bool;
    }
}

/// An address, a CIDR network or [`MYNETWORKS`].
fn own_network(key: &str, s: &str) -> Result<OwnNetwork, ConfigError> {
    if s.trim() == MYNETWORKS {
        return Ok(OwnNetwork::Mynetworks);
    }
    network(key, s).map(OwnNetwork::Net).map_err(|_| {
        ConfigError::invalid(
            key,
            format!("`{s}` is not an address, a CIDR network or `{MYNETWORKS}`"),
        )
    })
}

/// An address or a CIDR network.
fn network(key: &str, s: &str) -> Result<IpNet, ConfigError> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
        .map_err(|_| ConfigError::invalid(key, format!("`{s}` is not an address or CIDR network")))
}

impl OwnConfig {
    /// The configured networks, with `mynetworks` replaced by `postfix`'s
    /// (what `postconf` said; empty when it could not be read).
    pub fn networks_with(&self, postfix: &[IpNet]) -> Vec<IpNet> {
        let mut out = Vec::new();
        for n in &self.networks {
            match n {
                OwnNetwork::Net(n) => out.push(*n),
                OwnNetwork::Mynetworks => out.extend_from_slice(postfix),
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// `own.networks` names Postfix's `mynetworks`.
    pub fn reads_mynetworks(&self) -> bool {
        self.networks.contains(&OwnNetwork::Mynetworks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    #[test]
    fn empty_section_gives_defaults() {
        let c = OwnConfig::try_from(RawOwn::default()).unwrap();
        assert_eq!(c, OwnConfig::default());
        assert!(c.reads_mynetworks() && c.authenticated && c.local_submission);
    }

    #[test]
    fn networks_are_addresses_cidrs_or_mynetworks() {
        let c = OwnConfig::try_from(RawOwn {
            networks: Some(vec![
                "10.0.0.0/8".into(),
                "mynetworks".into(),
                "2001:db8::1".into(),
            ]),
            ..RawOwn::default()
        })
        .unwrap();
        let pf: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let all = c.networks_with(&pf);
        assert_eq!(all.len(), 3);
        assert!(all.contains(&"127.0.0.0/8".parse().unwrap()));
        let raw = RawOwn::from(&c);
        assert_eq!(
            raw.networks.unwrap(),
            vec!["10.0.0.0/8", "mynetworks", "2001:db8::1/128"]
        );
        assert_eq!(
            refusal(OwnConfig::try_from(RawOwn {
                networks: Some(vec!["office".into()]),
                ..RawOwn::default()
            })),
            (
                "own.networks".to_owned(),
                "`office` is not an address, a CIDR network or `mynetworks`".to_owned()
            )
        );
    }
}
