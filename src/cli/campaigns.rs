//! `bulkwatch campaigns list|show|allow|forget`: the running daemon's
//! campaigns, through its control socket (`control.sock` in the
//! configuration's state directory; see `crate::milter::control`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::{load_config, print_stdout, CliError, Exit};
use crate::milter::control::socket_path;

#[derive(Debug, Args)]
pub struct CampaignsArgs {
    #[command(subcommand)]
    pub action: Action,
    /// Configuration of the daemon (its state directory holds the socket).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Print the daemon's JSON answer as it is.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// The active campaigns, largest first.
    List,
    /// One campaign and a sample of its recent members.
    Show { id: String },
    /// Let the campaign's later messages through as `allowed`.
    Allow {
        id: String,
        /// For this many seconds (default: while the campaign lives).
        #[arg(long = "for", value_name = "SECONDS")]
        seconds: Option<u64>,
    },
    /// Drop the campaign: its text starts again from zero.
    Forget { id: String },
}

/// How long the daemon may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends one request and prints the answer.
///
/// # Errors
/// The configuration, the socket or the daemon's answer.
pub fn run(args: CampaignsArgs) -> Result<Exit, CliError> {
    let cfg = load_config(args.config.as_ref())?;
    let path = socket_path(&cfg.state.state_dir);
    let request = match &args.action {
        Action::List => "list".to_owned(),
        Action::Show { id } => format!("show {id}"),
        Action::Allow { id, seconds } => match seconds {
            Some(s) => format!("allow {id} {s}"),
            None => format!("allow {id}"),
        },
        Action::Forget { id } => format!("forget {id}"),
    };
    if request.contains('\n') {
        return Err(CliError::Usage("a campaign id is one word".into()));
    }
    let io = |source: std::io::Error| CliError::Other {
        what: format!(
            "cannot talk to the daemon at {} (is it running, and may this user open its socket?)",
            path.display()
        ),
        source: Box::new(source),
    };
    let mut stream = UnixStream::connect(&path).map_err(io)?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(io)?;
    let mut line = String::new();
    BufReader::new(stream.take_limited())
        .read_line(&mut line)
        .map_err(io)?;
    let answer: serde_json::Value = serde_json::from_str(&line).map_err(|e| CliError::Other {
        what: "the daemon's answer is not JSON".into(),
        source: Box::new(e),
    })?;
    if field(&answer, "ok") == false {
        let why = field(&answer, "error")
            .as_str()
            .unwrap_or("refused")
            .to_owned();
        return Err(CliError::Usage(why));
    }
    let text = if args.json {
        format!("{answer}\n")
    } else {
        human(&args.action, &answer)
    };
    print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// Bounds what is read of the answer (16 MiB).
trait TakeLimited: std::io::Read + Sized {
    fn take_limited(self) -> std::io::Take<Self> {
        self.take(16 << 20)
    }
}
impl TakeLimited for UnixStream {}

/// Unix seconds as `2026-11-26 01:02:03 UTC`.
fn utc(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), by eras
    // of 400 years.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn when(v: &serde_json::Value) -> String {
    v.as_u64().map_or_else(|| "-".into(), utc)
}

fn campaign_line(c: &serde_json::Value) -> String {
    format!(
        "{}  {:<7} recipients {:>6}  messages {:>5}  last {}  {}\n",
        field(c, "id").as_str().unwrap_or("?"),
        field(c, "level").as_str().unwrap_or("?"),
        field(c, "recipients"),
        field(c, "messages"),
        when(field(c, "last_seen")),
        field(c, "sample_subject").as_str().unwrap_or("")
    )
}

fn human(action: &Action, a: &serde_json::Value) -> String {
    match action {
        Action::List => {
            let list = field(a, "campaigns")
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut s = format!("{} active campaigns\n", list.len());
            for c in &list {
                s.push_str(&campaign_line(c));
            }
            s
        }
        Action::Show { id } => {
            let mut s = match field(a, "campaign").is_object() {
                true => campaign_line(field(a, "campaign")),
                false => format!("{id}  (no longer in the window)\n"),
            };
            if field(a, "allowed").is_object() {
                s.push_str("allowed\n");
            }
            s.push_str("recent members (queue id, time, sender, subject):\n");
            for m in field(a, "members").as_array().cloned().unwrap_or_default() {
                s.push_str(&format!(
                    "  {}  {}  {}  {}\n",
                    field(&m, "queue_id").as_str().unwrap_or("-"),
                    when(field(&m, "time")),
                    field(&m, "sender").as_str().unwrap_or("-"),
                    field(&m, "subject").as_str().unwrap_or("")
                ));
            }
            s
        }
        Action::Allow { id, .. } => match field(a, "until").as_u64() {
            Some(u) => format!("{id} allowed until {}\n", utc(u)),
            None => format!("{id} allowed\n"),
        },
        Action::Forget { id } => format!("{id} forgotten: its text starts again from zero\n"),
    }
}

/// A JSON object's field, `Null` when absent (never panics).
fn field<'a>(v: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    v.get(key).unwrap_or(&serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_654_923), "2026-11-26 01:02:03 UTC");
    }
}
