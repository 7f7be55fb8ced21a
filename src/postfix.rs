//! What the local Postfix's own settings say, read with `postconf`: the
//! networks of `mynetworks`, which are the site's own clients
//! (`own.networks`, `crate::milter::origin`).

use std::io::Read;
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ipnet::IpNet;

/// Longest `postconf` is waited for.
const POSTCONF_TIMEOUT: Duration = Duration::from_secs(10);
/// Most output read from `postconf`.
const MAX_OUTPUT: u64 = 1 << 20;

/// Why Postfix's settings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PostfixError {
    #[error("cannot run postconf (is Postfix installed and on PATH?)")]
    Run(#[source] std::io::Error),
    #[error("postconf {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("postconf {args} did not answer within {secs} s")]
    Timeout { args: String, secs: u64 },
}

impl PostfixError {
    /// Postfix is not installed or not configured on this host (no
    /// `postconf`, or no `main.cf`): the milter serves a Postfix elsewhere.
    pub fn no_postfix_here(&self) -> bool {
        match self {
            PostfixError::Run(e) => e.kind() == std::io::ErrorKind::NotFound,
            PostfixError::Failed { stderr, .. } => stderr.contains("No such file or directory"),
            PostfixError::Timeout { .. } => false,
        }
    }
}

/// The networks of Postfix's `mynetworks` (`postconf -xh mynetworks`, in
/// `config_dir` when given), and the entries that are not networks
/// (host names, files, lookup tables, negations), which are left out.
///
/// # Errors
/// `postconf` could not be run, failed or did not answer.
pub fn mynetworks(config_dir: Option<&Path>) -> Result<(Vec<IpNet>, Vec<String>), PostfixError> {
    let out = postconf(config_dir, &["-xh", "mynetworks"])?;
    Ok(parse_networks(&out))
}

/// Runs `postconf ARGS` (with `-c DIR`), bounded in time and output.
fn postconf(config_dir: Option<&Path>, args: &[&str]) -> Result<String, PostfixError> {
    let mut cmd = Command::new("postconf");
    if let Some(d) = config_dir {
        cmd.arg("-c").arg(d);
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(PostfixError::Run)?;
    let deadline = Instant::now() + POSTCONF_TIMEOUT;
    let status = loop {
        match child.try_wait().map_err(PostfixError::Run)? {
            Some(s) => break s,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PostfixError::Timeout {
                    args: args.join(" "),
                    secs: POSTCONF_TIMEOUT.as_secs(),
                });
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let read = |r: Option<&mut dyn Read>| {
        let mut s = String::new();
        if let Some(r) = r {
            let _ = r.take(MAX_OUTPUT).read_to_string(&mut s);
        }
        s
    };
    let stdout = read(child.stdout.as_mut().map(|r| r as &mut dyn Read));
    let stderr = read(child.stderr.as_mut().map(|r| r as &mut dyn Read));
    if !status.success() {
        return Err(PostfixError::Failed {
            args: args.join(" "),
            stderr: stderr.trim().to_owned(),
        });
    }
    Ok(stdout)
}

/// The networks of a `mynetworks` value: `a.b.c.d`, `a.b.c.d/n`,
/// `[v6]`, `[v6]/n` (and `v6/n`), separated by white space or commas;
/// the other entries, as written, apart.
pub fn parse_networks(value: &str) -> (Vec<IpNet>, Vec<String>) {
    let mut nets = Vec::new();
    let mut other = Vec::new();
    for item in value
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
    {
        match network(item) {
            Some(n) => nets.push(n),
            None => other.push(item.to_owned()),
        }
    }
    (nets, other)
}

fn network(item: &str) -> Option<IpNet> {
    let (addr, len) = match item.split_once('/') {
        Some((a, l)) if !a.is_empty() => (a, Some(l)),
        Some(_) => return None,
        None => (item, None),
    };
    let addr = addr
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(addr);
    let ip: IpAddr = addr.parse().ok()?;
    match len {
        Some(l) => IpNet::new(ip, l.parse().ok()?).ok().map(|n| n.trunc()),
        None => Some(IpNet::from(ip)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mynetworks_values_read_as_postfix_writes_them() {
        let (nets, other) = parse_networks(
            "127.0.0.0/8 192.0.2.7, [::1]/128 [fd00::]/64\n 10.1.2.3/16 host.example /etc/postfix/net \
             cidr:/etc/postfix/net.cidr !192.0.2.9 [2001:db8::5]",
        );
        let want: Vec<IpNet> = [
            "127.0.0.0/8",
            "192.0.2.7/32",
            "::1/128",
            "fd00::/64",
            "10.1.0.0/16",
            "2001:db8::5/128",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        assert_eq!(nets, want);
        assert_eq!(
            other,
            vec![
                "host.example",
                "/etc/postfix/net",
                "cidr:/etc/postfix/net.cidr",
                "!192.0.2.9"
            ]
        );
        assert_eq!(parse_networks("").0, Vec::<IpNet>::new());
        assert_eq!(parse_networks("10.0.0.0/33").1, vec!["10.0.0.0/33"]);
    }
}
