//! `bulkwatch report spam|ham --user USER`: a user's report of the message
//! on standard input, sent to the daemon's report socket
//! (`zero_hour.report_socket`). Dovecot's sieve scripts run it when a user
//! moves a message into or out of Junk (docs/admin/zero-hour.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{print_stdout, CliError, Exit, UsageError};
use crate::milter::zerohour::HEADER;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// The user moved it into Junk.
    Spam,
    /// The user moved it out of Junk.
    Ham,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    pub kind: Kind,
    /// The reporting user, as Dovecot names them (`${username}`).
    #[arg(long)]
    pub user: String,
    /// The daemon's report socket.
    #[arg(long, default_value = "/run/bulkwatch/report.sock")]
    pub socket: PathBuf,
}

/// Most of the message read: its header section is enough.
const MAX_READ: u64 = 256 * 1024;

/// The `X-Bulkwatch-Copy` value in a message's header section (unfolded),
/// if there is one.
pub fn copy_header(message: &[u8]) -> Option<String> {
    let head = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| message.windows(2).position(|w| w == b"\n\n"))
        .map_or(message, |end| message.get(..end).unwrap_or(message));
    let text = String::from_utf8_lossy(head).replace("\r\n", "\n");
    let mut found: Option<String> = None;
    let mut in_it = false;
    for line in text.split('\n') {
        if line.starts_with([' ', '\t']) {
            if in_it {
                if let Some(f) = found.as_mut() {
                    f.push(' ');
                    f.push_str(line.trim());
                }
            }
            continue;
        }
        in_it = false;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case(HEADER) && found.is_none() {
                found = Some(value.trim().to_owned());
                in_it = true;
            }
        }
    }
    found
}

/// # Errors
/// No copy header on standard input, the socket cannot be reached, or the
/// daemon refused the report.
pub fn run(a: ReportArgs) -> Result<Exit, CliError> {
    let mut message = Vec::new();
    std::io::stdin()
        .take(MAX_READ)
        .read_to_end(&mut message)
        .map_err(|source| CliError::Read {
            path: "stdin".into(),
            source,
        })?;
    let Some(value) = copy_header(&message) else {
        return Err(UsageError::NoCopyHeader.into());
    };
    let kind = match a.kind {
        Kind::Spam => "spam",
        Kind::Ham => "ham",
    };
    let line = format!("report {kind} {} {value}\n", a.user.trim());
    let answer = exchange(&a.socket, &line).map_err(|source| CliError::Read {
        path: a.socket.clone(),
        source,
    })?;
    let ok = serde_json::from_str::<serde_json::Value>(&answer)
        .ok()
        .and_then(|v| v.get("ok").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    if !ok {
        return Err(CliError::Refused {
            error: answer.trim().to_owned(),
        });
    }
    print_stdout(&answer)?;
    Ok(Exit::Ok)
}

fn exchange(socket: &std::path::Path, line: &str) -> std::io::Result<String> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(15)))?;
    s.set_write_timeout(Some(Duration::from_secs(15)))?;
    s.write_all(line.as_bytes())?;
    let mut answer = String::new();
    BufReader::new(s.take(64 * 1024)).read_line(&mut answer)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::copy_header;

    #[test]
    fn the_copy_header_is_found_unfolded_in_the_header_section_only() {
        let m = b"Subject: x\r\nX-Bulkwatch-Copy: n=1; c=2;\r\n\tr=3; s=4\r\nTo: a\r\n\r\nX-Bulkwatch-Copy: body\r\n";
        assert_eq!(copy_header(m).as_deref(), Some("n=1; c=2; r=3; s=4"));
        assert_eq!(copy_header(b"Subject: x\n\nX-Bulkwatch-Copy: y\n"), None);
    }
}
