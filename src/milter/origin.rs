//! Whether a message is the site's own mail (`[own]`), from what Postfix
//! told the milter and nothing the sender wrote: the SASL login
//! (`{auth_authen}`), the SMTP client's address against the site's
//! networks, local submission (a message with no SMTP client: Postfix's
//! `non_smtpd_milters`), and the service (`{daemon_name}`).

use ipnet::IpNet;

use crate::config::OwnConfig;
use crate::engine::party::Origin;
use crate::engine::Envelope;

/// Why a message is the site's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnReason {
    /// The client logged in (`{auth_authen}`).
    Authenticated,
    /// The client's address is in the site's networks.
    Network,
    /// Submitted on the MTA host without SMTP.
    Local,
    /// It came through a service named in `own.daemon_names`.
    Service,
}

impl OwnReason {
    pub fn as_str(self) -> &'static str {
        match self {
            OwnReason::Authenticated => "authenticated",
            OwnReason::Network => "network",
            OwnReason::Local => "local",
            OwnReason::Service => "service",
        }
    }
}

/// How the MTA said the client connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    /// No connect event was seen.
    #[default]
    Unseen,
    /// An SMTP client with an IP address (in the envelope).
    Inet,
    /// A connect without an IP address: Postfix's non-SMTP mail
    /// (`sendmail`, pickup), whose connect names no network client.
    Local,
}

/// Why `env` is own mail under `own` with the site's `networks`
/// (`own.networks` with `mynetworks` read), if it is.
pub fn own_reason(
    own: &OwnConfig,
    networks: &[IpNet],
    client: Client,
    env: &Envelope,
) -> Option<OwnReason> {
    if own.authenticated && env.auth_user.as_deref().is_some_and(|u| !u.is_empty()) {
        return Some(OwnReason::Authenticated);
    }
    if let Some(ip) = env.client_addr {
        let ip = canonical(ip);
        if own.exclude.iter().any(|n| n.contains(&ip)) {
            return None;
        }
        if networks.iter().any(|n| n.contains(&ip)) {
            return Some(OwnReason::Network);
        }
    } else if own.local_submission && client == Client::Local {
        return Some(OwnReason::Local);
    }
    if env
        .daemon_name
        .as_deref()
        .is_some_and(|d| own.daemon_names.iter().any(|x| x == d))
    {
        return Some(OwnReason::Service);
    }
    None
}

/// The origin for [`own_reason`]'s answer.
pub fn origin(reason: Option<OwnReason>) -> Origin {
    if reason.is_some() {
        Origin::Own
    } else {
        Origin::Inbound
    }
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`, as a dual-stack
/// listener reports it) as the IPv4 address it is.
fn canonical(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(addr: Option<&str>, auth: Option<&str>, daemon: Option<&str>) -> Envelope {
        Envelope {
            client_addr: addr.map(|a| a.parse().unwrap()),
            auth_user: auth.map(str::to_owned),
            daemon_name: daemon.map(str::to_owned),
            ..Envelope::default()
        }
    }

    #[test]
    fn own_mail_is_what_postfix_saw() {
        let mut own = OwnConfig::default();
        let nets: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let r = |own: &OwnConfig, c, e: &Envelope| own_reason(own, &nets, c, e);
        assert_eq!(
            r(&own, Client::Inet, &env(Some("10.1.2.3"), None, None)),
            Some(OwnReason::Network)
        );
        assert_eq!(
            r(
                &own,
                Client::Inet,
                &env(Some("::ffff:10.1.2.3"), None, None)
            ),
            Some(OwnReason::Network)
        );
        assert_eq!(
            r(&own, Client::Inet, &env(Some("192.0.2.7"), None, None)),
            None
        );
        assert_eq!(
            r(
                &own,
                Client::Inet,
                &env(Some("192.0.2.7"), Some("ann"), None)
            ),
            Some(OwnReason::Authenticated)
        );
        assert_eq!(
            r(&own, Client::Local, &env(None, None, None)),
            Some(OwnReason::Local)
        );
        assert_eq!(r(&own, Client::Unseen, &env(None, None, None)), None);
        own.exclude = vec!["10.9.0.0/16".parse().unwrap()];
        assert_eq!(
            r(&own, Client::Inet, &env(Some("10.9.1.1"), None, None)),
            None,
            "a relay carrying mail from outside"
        );
        own.daemon_names = vec!["ORIGINATING".into()];
        assert_eq!(
            r(
                &own,
                Client::Inet,
                &env(Some("192.0.2.7"), None, Some("ORIGINATING"))
            ),
            Some(OwnReason::Service)
        );
        own.authenticated = false;
        own.local_submission = false;
        assert_eq!(
            r(
                &own,
                Client::Inet,
                &env(Some("192.0.2.7"), Some("ann"), None)
            ),
            None
        );
        assert_eq!(r(&own, Client::Local, &env(None, None, None)), None);
    }
}
