//! What the local Postfix's own settings say, read with `postconf`: the
//! networks of `mynetworks`, which are the site's own clients
//! (`own.networks`, `crate::milter::origin`); and the copies it holds in
//! its hold queue for a campaign (`policy.bulk = "quarantine"`), released
//! or deleted in one step (`bulkwatch campaigns held|release|delete-held`)
//! with `postqueue`, `postcat` and `postsuper`.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ipnet::IpNet;

/// Longest `postconf` is waited for (the daemon asks it at start and at
/// each reload).
const POSTCONF_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a queue tool is waited for (`bulkwatch campaigns held`, ...).
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Most output read from a Postfix tool.
const MAX_OUTPUT: u64 = 64 << 20;

/// Why a Postfix tool gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum PostfixError {
    #[error("cannot run {program} (is Postfix installed and on PATH?)")]
    Run {
        program: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} {args} failed: {stderr}")]
    Failed {
        program: &'static str,
        args: String,
        stderr: String,
    },
    #[error("{program} {args} did not answer within {secs} s")]
    Timeout {
        program: &'static str,
        args: String,
        secs: u64,
    },
}

impl PostfixError {
    /// Postfix is not installed or not configured on this host (no
    /// `postconf`, or no `main.cf`): the milter serves a Postfix elsewhere.
    pub fn no_postfix_here(&self) -> bool {
        match self {
            PostfixError::Run { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
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
    let out = tool(
        "postconf",
        config_dir,
        &["-xh", "mynetworks"],
        None,
        POSTCONF_TIMEOUT,
    )?;
    Ok(parse_networks(&out))
}

/// Runs Postfix's `program ARGS` (with `-c DIR`), `input` on its standard
/// input, bounded in time (`limit`) and output; its standard output.
fn tool(
    program: &'static str,
    config_dir: Option<&Path>,
    args: &[&str],
    input: Option<&[u8]>,
    limit: Duration,
) -> Result<String, PostfixError> {
    let mut cmd = Command::new(program);
    if let Some(d) = config_dir {
        cmd.arg("-c").arg(d);
    }
    let run = |source| PostfixError::Run { program, source };
    let mut child = cmd
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(run)?;
    // Output read while the tool runs (a full pipe would stop it).
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(r) = r {
                let _ = r.take(MAX_OUTPUT).read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    // Its input written beside it, so that a tool that stops reading
    // cannot hold this past the deadline.
    if let (Some(mut w), Some(input)) = (child.stdin.take(), input) {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait().map_err(run)? {
            Some(s) => break s,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PostfixError::Timeout {
                    program,
                    args: args.join(" "),
                    secs: limit.as_secs(),
                });
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(PostfixError::Failed {
            program,
            args: args.join(" "),
            stderr: stderr.trim().to_owned(),
        });
    }
    Ok(stdout)
}

/// A copy of a campaign in Postfix's hold queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub queue_id: String,
    /// Its `X-Bulkwatch` header, as bulkwatch wrote it when it held it.
    pub verdict: String,
    pub subject: Option<String>,
}

/// The copies of campaign `campaign` (its id as the `X-Bulkwatch` header
/// names it: `campaign=ID`) in the hold queue of the Postfix of
/// `config_dir`: the held messages `postqueue -j` lists, each read by
/// `postcat -h` for the header bulkwatch wrote when it held it. A
/// sender's own `X-Bulkwatch` never reaches the queue (the milter
/// deletes it), so the header is this site's verdict.
///
/// # Errors
/// A Postfix tool could not be run, failed or did not answer.
pub fn held_copies(config_dir: Option<&Path>, campaign: &str) -> Result<Vec<Held>, PostfixError> {
    let queue = tool("postqueue", config_dir, &["-j"], None, TOOL_TIMEOUT)?;
    let mut out = Vec::new();
    for line in queue.lines() {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if entry.get("queue_name").and_then(|q| q.as_str()) != Some("hold") {
            continue;
        }
        let Some(id) = entry.get("queue_id").and_then(|q| q.as_str()) else {
            continue;
        };
        if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        // A message removed meanwhile is no longer held: passed over.
        let Ok(head) = tool("postcat", config_dir, &["-h", "-q", id], None, TOOL_TIMEOUT) else {
            continue;
        };
        let headers = unfolded(&head);
        let verdict = headers
            .iter()
            .filter_map(|h| strip_name(h, "x-bulkwatch"))
            .find(|v| names_campaign(v, campaign));
        if let Some(verdict) = verdict {
            out.push(Held {
                queue_id: id.to_owned(),
                verdict: verdict.to_owned(),
                subject: headers
                    .iter()
                    .find_map(|h| strip_name(h, "subject"))
                    .map(str::to_owned),
            });
        }
    }
    Ok(out)
}

/// Releases `ids` from the hold queue (`postsuper -H`) and has Postfix
/// deliver them now (`postqueue -i`).
///
/// # Errors
/// A Postfix tool could not be run, failed or did not answer.
pub fn release(config_dir: Option<&Path>, ids: &[String]) -> Result<(), PostfixError> {
    postsuper(config_dir, &["-H", "-"], ids)?;
    for id in ids {
        // (Delivered meanwhile by a queue run: nothing to do.)
        let _ = tool("postqueue", config_dir, &["-i", id], None, TOOL_TIMEOUT);
    }
    Ok(())
}

/// Deletes `ids` from the hold queue (`postsuper -d - hold`).
///
/// # Errors
/// A Postfix tool could not be run, failed or did not answer.
pub fn delete_held(config_dir: Option<&Path>, ids: &[String]) -> Result<(), PostfixError> {
    postsuper(config_dir, &["-d", "-", "hold"], ids)
}

/// `postsuper ARGS` with `ids` on its standard input, a line each (its
/// `-` argument); nothing when there are none.
fn postsuper(config_dir: Option<&Path>, args: &[&str], ids: &[String]) -> Result<(), PostfixError> {
    if ids.is_empty() {
        return Ok(());
    }
    let list = ids.join("\n") + "\n";
    tool(
        "postsuper",
        config_dir,
        args,
        Some(list.as_bytes()),
        TOOL_TIMEOUT,
    )
    .map(drop)
}

/// The header fields of `postcat -h` output, each on one line.
fn unfolded(head: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in head.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        } else if !line.starts_with("*** ") {
            out.push(line.to_owned());
        }
    }
    out
}

/// The value of header field `h` when it is `name` (ASCII case ignored).
fn strip_name<'a>(h: &'a str, name: &str) -> Option<&'a str> {
    let (n, v) = h.split_once(':')?;
    n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
}

/// Whether an `X-Bulkwatch` value names `campaign` (`campaign=ID`).
fn names_campaign(value: &str, campaign: &str) -> bool {
    value
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("campaign="))
        .any(|id| id.eq_ignore_ascii_case(campaign.trim()))
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
    fn a_held_copy_is_known_by_the_campaign_its_header_names() {
        let head = "*** ENVELOPE RECORDS ***\nSubject: Win\n big\nX-Bulkwatch: bulk; campaign=3fa9c1;\n size=57; held=yes\n";
        let h = unfolded(head);
        let v = h.iter().find_map(|h| strip_name(h, "X-Bulkwatch")).unwrap();
        assert!(names_campaign(v, "3FA9C1"));
        assert!(!names_campaign(v, "3fa9c"));
        assert_eq!(
            h.iter().find_map(|h| strip_name(h, "subject")),
            Some("Win big")
        );
    }

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
