//! `[allow]`: mail that is never judged (sender domains, client networks,
//! AUTH, role recipients).

use ipnet::IpNet;
use std::net::IpAddr;

use super::section::*;
use super::ConfigError;

section! {
    /// Mail that is never judged: solicited bulk, trusted relays, own users.
    pub struct AllowConfig in RawAllow as "allow" {
        /// Lower-case domains; a subdomain matches too.
        sender_domains: Vec<String> = Vec::new(),
            file sender_domains: Vec<String>,
            read |_, v| Ok(v
                .into_iter()
                .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect());
        client_networks: Vec<IpNet> = Vec::new(),
            file client_networks: Vec<String>,
            read |k, v| v.iter().map(|s| network(k, s)).collect(),
            write |v| Some(v.iter().map(ToString::to_string).collect());
        /// Lower-case authserv-ids of this site's authenticators (OpenDKIM,
        /// OpenDMARC, rspamd), whose Authentication-Results headers say for
        /// which domains DKIM or DMARC passed: a domain allowance
        /// (`campaigns allow-domain`) is honoured only for mail they
        /// authenticate. Postfix must remove such headers arriving from
        /// outside (header_checks; `check-config --postfix` checks it).
        authserv_ids: Vec<String> = Vec::new(),
            file authserv_ids: Vec<String>,
            read |k, v| v.into_iter().map(|r| authserv_id(k, r)).collect();
        /// Mail from SMTP-authenticated clients (`{auth_authen}` set) is
        /// allowed: never judged nor recorded. Off by default: such mail is
        /// the site's own (`own.authenticated`), counted apart and never
        /// refused, and its Message-IDs make answers from outside known as
        /// answers.
        authenticated: bool = false, file authenticated: bool;
        /// Lower-case recipients whose mail is never judged: `local@` (that
        /// local part at any domain) or `local@domain`. A transaction is
        /// allowed only when every recipient is one of them.
        recipients: Vec<String> = vec!["postmaster@".to_owned(), "abuse@".to_owned()],
            file recipients: Vec<String>,
            read |k, v| v.into_iter().map(|r| recipient(k, r)).collect();
    }
}

/// An address or a CIDR network.
fn network(key: &str, s: &str) -> Result<IpNet, ConfigError> {
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| ConfigError::invalid(key, format!("`{s}` is not an address or CIDR network")))
}

/// An authserv-id: one word, lower-cased (RFC 8601 compares them without
/// regard to case).
fn authserv_id(key: &str, id: String) -> Result<String, ConfigError> {
    let id = id.trim().to_ascii_lowercase();
    if id.is_empty()
        || id.len() > 255
        || !id
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b';' | b'(' | b')' | b'"' | b'\\'))
    {
        return Err(ConfigError::invalid(
            key,
            format!(
                "`{id}` is not an authserv-id (one word, as in Authentication-Results: ID; ...)"
            ),
        ));
    }
    Ok(id)
}

/// `local@` or `local@domain`, lower-cased.
fn recipient(key: &str, r: String) -> Result<String, ConfigError> {
    let r = r.trim().to_ascii_lowercase();
    let ok = r.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && !domain.contains('@')
            && !r.contains(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | ','))
    });
    if !ok {
        return Err(ConfigError::invalid(
            key,
            format!("`{r}` is neither `local@` nor `local@domain`"),
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;
    use crate::config::Config;

    #[test]
    fn empty_section_gives_defaults() {
        let c = AllowConfig::try_from(RawAllow::default()).unwrap();
        assert_eq!(c, AllowConfig::default());
        assert!(!c.authenticated);
    }

    #[test]
    fn what_is_no_network_is_refused() {
        for bad in ["10.0.0.0/33", "example.com", "10.0.0", ""] {
            let raw = RawAllow {
                client_networks: Some(vec!["192.0.2.0/24".to_owned(), bad.to_owned()]),
                ..RawAllow::default()
            };
            assert_eq!(
                refusal(AllowConfig::try_from(raw)),
                (
                    "allow.client_networks".to_owned(),
                    format!("`{bad}` is not an address or CIDR network")
                )
            );
        }
    }

    #[test]
    fn empty_domains_are_dropped() {
        let c = AllowConfig::try_from(RawAllow {
            sender_domains: Some(vec![
                " ".to_owned(),
                ".".to_owned(),
                "Example.ORG ".to_owned(),
            ]),
            client_networks: Some(vec!["2001:db8::1".to_owned()]),
            authenticated: Some(false),
            recipients: Some(vec!["Abuse@".to_owned(), " Ops@Example.ORG".to_owned()]),
            authserv_ids: Some(vec![" MX.Example.ORG ".to_owned()]),
        })
        .unwrap();
        assert_eq!(c.sender_domains, vec!["example.org"]);
        assert_eq!(
            c.client_networks,
            vec!["2001:db8::1/128".parse::<IpNet>().unwrap()]
        );
        assert!(!c.authenticated);
        assert_eq!(c.recipients, vec!["abuse@", "ops@example.org"]);
        assert_eq!(c.authserv_ids, vec!["mx.example.org"]);
    }

    #[test]
    fn recipients_default_to_postmaster_and_abuse_and_need_a_local_part() {
        assert_eq!(
            AllowConfig::default().recipients,
            vec!["postmaster@", "abuse@"]
        );
        for bad in ["postmaster", "@example.org", "a@b@c", "a b@c", ""] {
            let raw = RawAllow {
                recipients: Some(vec![bad.to_owned()]),
                ..RawAllow::default()
            };
            assert_eq!(
                refusal(AllowConfig::try_from(raw)),
                (
                    "allow.recipients".to_owned(),
                    format!("`{bad}` is neither `local@` nor `local@domain`")
                )
            );
        }
    }

    #[test]
    fn networks_and_domains_normalize() {
        let c = Config::from_toml_str(
            "[allow]\nsender_domains = [\".News.Example.COM\"]\nclient_networks = [\"10.0.0.0/8\", \"::1\"]\n",
        )
        .unwrap();
        assert_eq!(c.allow.sender_domains, vec!["news.example.com"]);
        assert_eq!(c.allow.client_networks.len(), 2);
    }
}
