//! `[allow]`: mail that is never judged (sender domains, client networks, AUTH).

use ipnet::IpNet;
use std::net::IpAddr;

use super::raw::RawAllow;
use super::ConfigError;

/// Mail that is never judged: solicited bulk, trusted relays, own users.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowConfig {
    /// Lower-case domains; a subdomain matches too.
    pub sender_domains: Vec<String>,
    pub client_networks: Vec<IpNet>,
    /// Mail from SMTP-authenticated clients (`{auth_authen}` set) is allowed.
    pub authenticated: bool,
}

impl Default for AllowConfig {
    fn default() -> Self {
        AllowConfig {
            sender_domains: Vec::new(),
            client_networks: Vec::new(),
            authenticated: true,
        }
    }
}

impl TryFrom<RawAllow> for AllowConfig {
    type Error = ConfigError;

    fn try_from(raw: RawAllow) -> Result<Self, ConfigError> {
        let RawAllow {
            sender_domains,
            client_networks,
            authenticated,
        } = raw;
        let mut c = AllowConfig::default();
        if let Some(v) = sender_domains {
            c.sender_domains = v
                .into_iter()
                .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect();
        }
        if let Some(v) = client_networks {
            let mut nets = Vec::with_capacity(v.len());
            for s in v {
                let net = s
                    .parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        ConfigError::invalid(
                            "allow.client_networks",
                            format!("`{s}` is not an address or CIDR network"),
                        )
                    })?;
                nets.push(net);
            }
            c.client_networks = nets;
        }
        if let Some(v) = authenticated {
            c.authenticated = v;
        }
        Ok(c)
    }
}
