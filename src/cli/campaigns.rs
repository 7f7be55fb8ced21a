//! `bulkwatch campaigns list|show|allow|disallow|forget|allow-domain|
//! disallow-domain|domains`: the running daemon's campaigns and
//! corrections, through its control socket (`control.sock` in the
//! configuration's state directory; see `crate::milter::control`). And
//! `held|release|delete-held`: a campaign's copies in this host's Postfix
//! hold queue (`policy.bulk = "quarantine"`), through Postfix's own tools
//! (`crate::postfix`), without the daemon.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::{load_config, print_stdout, CliError, Exit, UsageError};
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

/// `campaigns list`'s filter (`crate::milter::metrics::Filter`).
#[derive(Debug, Args, Default)]
pub struct ListArgs {
    /// Only campaigns at these levels (bulk, suspect, clean, allowed);
    /// repeat or separate with commas.
    #[arg(long, value_delimiter = ',', value_parser = ["bulk", "suspect", "clean", "allowed"])]
    pub level: Vec<String>,
    /// Only campaigns with at least this many recipients.
    #[arg(long, value_name = "N")]
    pub min_recipients: Option<u64>,
    /// At most this many (default 500, at most 10000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub limit: Option<u64>,
    /// Only campaigns whose sample subject or a sender domain holds this
    /// text (without regard to case).
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
}

impl ListArgs {
    /// The control socket's request line.
    fn request(&self) -> String {
        let mut r = String::from("list");
        if !self.level.is_empty() {
            r.push_str(&format!(" level={}", self.level.join(",")));
        }
        if let Some(n) = self.min_recipients {
            r.push_str(&format!(" min_recipients={n}"));
        }
        if let Some(n) = self.limit {
            r.push_str(&format!(" limit={n}"));
        }
        if let Some(q) = &self.search {
            r.push_str(&format!(" q={}", percent_encoded(q)));
        }
        r
    }
}

/// `s` with every byte but letters, digits and `-._~` written as `%XX`
/// (one word of a request line, whatever it holds).
fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[derive(Debug, Subcommand)]
pub enum Action {
    /// The active campaigns: bulk first, then suspect, clean and allowed
    /// ones, the most recipients first within each; the first 500 unless
    /// --limit says otherwise, and how many there are in all.
    List(ListArgs),
    /// One campaign and a sample of its recent members.
    Show { id: String },
    /// Let the campaign's later messages through as `allowed`.
    Allow {
        id: String,
        /// For this many seconds (default: while the campaign lives).
        #[arg(long = "for", value_name = "SECONDS")]
        seconds: Option<u64>,
    },
    /// Withdraw an allowance: the campaign's later messages are judged
    /// again.
    Disallow { id: String },
    /// Drop the campaign: its text starts again from zero.
    Forget { id: String },
    /// Let a sender domain's mail through as `allowed`, campaign after
    /// campaign (a newsletter's next issue too), and its subdomains'; only
    /// mail whose From domain the site's own authenticators say passed
    /// DKIM or DMARC (an Authentication-Results header of one of
    /// allow.authserv_ids), since anyone can write a From. Shared by every
    /// daemon of a Redis store.
    AllowDomain {
        domain: String,
        /// For this many seconds (default: until withdrawn).
        #[arg(long = "for", value_name = "SECONDS")]
        seconds: Option<u64>,
    },
    /// Withdraw a domain allowance.
    DisallowDomain { domain: String },
    /// The domain allowances in force, and the authserv-ids trusted.
    Domains,
    /// The campaign's copies held in this host's Postfix hold queue
    /// (policy.bulk = "quarantine"): queue id and subject. Run as root
    /// (or the Postfix admin), on each MX host.
    Held {
        id: String,
        #[command(flatten)]
        postfix: PostfixArgs,
    },
    /// Release the campaign's held copies: delivered now, their
    /// X-Bulkwatch header saying held=yes (downstream.md's rule delivers
    /// them to the inbox). Allow the campaign too if its next copies should
    /// not be held.
    Release {
        id: String,
        #[command(flatten)]
        postfix: PostfixArgs,
    },
    /// Delete the campaign's held copies from the hold queue.
    DeleteHeld {
        id: String,
        #[command(flatten)]
        postfix: PostfixArgs,
    },
}

/// Which Postfix holds the copies.
#[derive(Debug, Args, Default)]
pub struct PostfixArgs {
    /// The Postfix configuration directory (`postqueue -c`; default:
    /// own.postfix_config_dir, else Postfix's own).
    #[arg(long, value_name = "DIR")]
    pub postfix_config: Option<PathBuf>,
}

/// How long the daemon may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends one request and prints the answer.
///
/// # Errors
/// The configuration, the socket or the daemon's answer.
pub fn run(args: CampaignsArgs) -> Result<Exit, CliError> {
    if let Action::AllowDomain { domain, .. } | Action::DisallowDomain { domain } = &args.action {
        if crate::engine::allowance::domain(domain).is_none() {
            return Err(UsageError::NotADomain(domain.clone()).into());
        }
    }
    let cfg = load_config(args.config.as_ref())?;
    if let Action::Held { id, postfix }
    | Action::Release { id, postfix }
    | Action::DeleteHeld { id, postfix } = &args.action
    {
        return hold_queue(&args.action, id, postfix, &cfg, args.json);
    }
    let request = match &args.action {
        Action::List(l) => l.request(),
        Action::Show { id } => format!("show {id}"),
        Action::Allow { id, seconds } => match seconds {
            Some(s) => format!("allow {id} {s}"),
            None => format!("allow {id}"),
        },
        Action::Disallow { id } => format!("disallow {id}"),
        Action::Forget { id } => format!("forget {id}"),
        Action::AllowDomain { domain, seconds } => match seconds {
            Some(s) => format!("allow-domain {domain} {s}"),
            None => format!("allow-domain {domain}"),
        },
        Action::DisallowDomain { domain } => format!("disallow-domain {domain}"),
        Action::Domains => "domains".to_owned(),
        Action::Held { .. } | Action::Release { .. } | Action::DeleteHeld { .. } => String::new(),
    };
    if request.contains('\n') {
        return Err(UsageError::CampaignIdOneWord.into());
    }
    let answer = ask(&cfg, &request)?;
    let text = if args.json {
        // The same JSON, its bidirectional and control characters escaped
        // (a subject's U+202E shown, not obeyed, in a terminal).
        format!("{}\n", crate::escape::json(&answer.to_string()))
    } else {
        human(&args.action, &answer)
    };
    print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// Sends one request line to the daemon of `cfg` (its control socket)
/// and answers its JSON answer; a refusal (`"ok": false`) is an error.
///
/// # Errors
/// The socket (no daemon, no permission), an answer that is not JSON, or
/// the daemon's refusal.
pub fn ask(cfg: &crate::config::Config, request: &str) -> Result<serde_json::Value, CliError> {
    let path = socket_path(&cfg.state.state_dir);
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
    BufReader::new(std::io::Read::take(stream, MAX_ANSWER))
        .read_line(&mut line)
        .map_err(io)?;
    let answer: serde_json::Value = serde_json::from_str(&line).map_err(|e| CliError::Other {
        what: "the daemon's answer is not JSON".into(),
        source: Box::new(e),
    })?;
    if field(&answer, "ok") == false {
        let why = shown(field(&answer, "error"), "refused");
        return Err(CliError::Refused { error: why });
    }
    Ok(answer)
}

/// Most bytes read of the daemon's answer.
const MAX_ANSWER: u64 = 16 << 20;

fn when(v: &serde_json::Value) -> String {
    v.as_u64()
        .map_or_else(|| "-".into(), crate::milter::alert::rfc5322_date)
}

fn campaign_line(c: &serde_json::Value) -> String {
    // An allowed campaign's messages are allowed, whatever its size (as
    // the dashboard shows it).
    let level = if field(c, "allowed").as_bool() == Some(true) {
        "allowed"
    } else {
        field(c, "level").as_str().unwrap_or("?")
    };
    // A list's post (`list=yes`): its action is `policy.list` at most.
    let level = if field(c, "list").as_bool() == Some(true) {
        format!("{level} list")
    } else {
        level.to_owned()
    };
    format!(
        "{}  {:<12} recipients {:>6}  messages {:>5}  last {}  {}\n",
        shown(field(c, "id"), "?"),
        level,
        field(c, "recipients"),
        field(c, "messages"),
        when(field(c, "last_seen")),
        shown(field(c, "sample_subject"), "")
    )
}

/// A string of the answer as a terminal may show it: a sender's subject
/// or address with its control and bidirectional characters written out
/// (`crate::escape`); `missing` when it is not a string.
fn shown(v: &serde_json::Value, missing: &str) -> String {
    v.as_str()
        .map_or_else(|| missing.to_owned(), crate::escape::printable)
}

fn human(action: &Action, a: &serde_json::Value) -> String {
    match action {
        Action::Held { .. } | Action::Release { .. } | Action::DeleteHeld { .. } => String::new(),
        Action::List(_) => {
            let list = field(a, "campaigns")
                .as_array()
                .cloned()
                .unwrap_or_default();
            let active = field(a, "active").as_u64().unwrap_or(list.len() as u64);
            let matched = field(a, "matched").as_u64().unwrap_or(active);
            // "500 of 618 active campaigns", never a cut list called the
            // total; "(12 match the filter)" when one was given.
            let mut counts = if list.len() as u64 == active {
                format!("{active} active campaigns")
            } else {
                format!("{} of {active} active campaigns", list.len())
            };
            if matched != active {
                counts.push_str(&format!(" ({matched} match the filter)"));
            }
            let mut s = match field(a, "view").as_str() {
                Some(v) if v.contains("unavailable") => format!(
                    "{counts} of this host only: Redis did not answer, the site's are not shown\n"
                ),
                _ => format!("{counts}\n"),
            };
            for c in &list {
                s.push_str(&campaign_line(c));
            }
            s
        }
        Action::Show { id } => {
            let mut s = if field(a, "campaign").is_object() {
                campaign_line(field(a, "campaign"))
            } else if field(a, "forgotten").as_bool() == Some(true) {
                format!(
                    "{id}  forgotten: nothing joins it; its messages leave the window in time\n"
                )
            } else {
                format!("{id}  (no longer in the window)\n")
            };
            if field(a, "allowed").is_object() {
                s.push_str("allowed\n");
            }
            s.push_str("recent members (queue id, time, sender, subject):\n");
            for m in field(a, "members").as_array().cloned().unwrap_or_default() {
                s.push_str(&format!(
                    "  {}  {}  {}  {}\n",
                    shown(field(&m, "queue_id"), "-"),
                    when(field(&m, "time")),
                    shown(field(&m, "sender"), "-"),
                    shown(field(&m, "subject"), "")
                ));
            }
            s
        }
        Action::Allow { id, .. } => match field(a, "until").as_u64() {
            Some(u) => format!(
                "{id} allowed until {}\n",
                crate::milter::alert::rfc5322_date(u)
            ),
            None => format!("{id} allowed\n"),
        },
        Action::Disallow { id } => {
            format!("{id} no longer allowed: its messages are judged again\n")
        }
        Action::Forget { id } => format!("{id} forgotten: its text starts again from zero\n"),
        Action::AllowDomain { .. } => {
            let d = shown(field(a, "domain"), "?");
            let until = match field(a, "until").as_u64() {
                Some(u) => format!(" until {}", crate::milter::alert::rfc5322_date(u)),
                None => String::new(),
            };
            format!("{d} allowed{until}: {}\n", shown(field(a, "note"), ""))
        }
        Action::DisallowDomain { .. } => format!(
            "{} no longer allowed: its mail is judged again\n",
            shown(field(a, "domain"), "?")
        ),
        Action::Domains => {
            let list = field(a, "domains").as_array().cloned().unwrap_or_default();
            let mut s = format!(
                "{} allowed domains; {}\n",
                list.len(),
                shown(field(a, "note"), "")
            );
            for d in &list {
                let until = match field(d, "until").as_u64() {
                    Some(u) => format!("until {}", crate::milter::alert::rfc5322_date(u)),
                    None => "until withdrawn".to_owned(),
                };
                s.push_str(&format!("  {}  {until}\n", shown(field(d, "domain"), "?")));
            }
            s
        }
    }
}

/// `held`, `release` and `delete-held` of campaign `id` in the hold queue
/// of the Postfix `postfix` names (or the configuration's).
fn hold_queue(
    action: &Action,
    id: &str,
    postfix: &PostfixArgs,
    cfg: &crate::config::Config,
    json: bool,
) -> Result<Exit, CliError> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(UsageError::CampaignIdOneWord.into());
    }
    let dir = postfix.postfix_config.clone().or_else(|| {
        let d = &cfg.own.postfix_config_dir;
        (!d.is_empty()).then(|| PathBuf::from(d))
    });
    let held = crate::postfix::held_copies(dir.as_deref(), id)?;
    let ids: Vec<String> = held.iter().map(|h| h.queue_id.clone()).collect();
    let done = match action {
        Action::Release { .. } => {
            crate::postfix::release(dir.as_deref(), &ids)?;
            "released"
        }
        Action::DeleteHeld { .. } => {
            crate::postfix::delete_held(dir.as_deref(), &ids)?;
            "deleted"
        }
        _ => "held",
    };
    let text = if json {
        let copies: Vec<serde_json::Value> = held
            .iter()
            .map(|h| serde_json::json!({"queue_id": h.queue_id, "subject": h.subject}))
            .collect();
        format!(
            "{}\n",
            crate::escape::json(&serde_json::json!({"campaign": id, done: copies}).to_string())
        )
    } else {
        let mut s = format!("{} copies of campaign {id} {done}\n", held.len());
        for h in &held {
            s.push_str(&format!(
                "  {}  {}\n",
                h.queue_id,
                crate::escape::printable(h.subject.as_deref().unwrap_or(""))
            ));
        }
        s
    };
    print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// A JSON object's field, `Null` when absent (never panics).
fn field<'a>(v: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    v.get(key).unwrap_or(&serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_says_when_it_is_this_host_s_only() {
        let answer = |view: &str| serde_json::json!({"campaigns": [], "allowed": [], "view": view});
        let list = Action::List(ListArgs::default());
        assert_eq!(human(&list, &answer("site")), "0 active campaigns\n");
        assert!(human(&list, &answer("host; redis unavailable"))
            .starts_with("0 active campaigns of this host only: Redis did not answer"));
        // A list cut at its limit says so.
        let cut = serde_json::json!({
            "campaigns": [], "allowed": [], "view": "host", "active": 618, "matched": 618
        });
        assert!(human(&list, &cut).starts_with("0 of 618 active campaigns\n"));
        let filtered = serde_json::json!({
            "campaigns": [], "allowed": [], "view": "host", "active": 618, "matched": 12
        });
        assert!(
            human(&list, &filtered).starts_with("0 of 618 active campaigns (12 match the filter)")
        );
        let args = ListArgs {
            level: vec!["bulk".into(), "suspect".into()],
            min_recipients: Some(10),
            limit: Some(20),
            search: Some("your offer".into()),
        };
        assert_eq!(
            args.request(),
            "list level=bulk,suspect min_recipients=10 limit=20 q=your%20offer"
        );
    }

    #[test]
    fn show_says_forgotten_rather_than_gone() {
        let show = Action::Show {
            id: "4f4b2704f8fb".to_owned(),
        };
        let a = serde_json::json!({"campaign": null, "forgotten": true, "members": []});
        assert!(
            human(&show, &a).starts_with("4f4b2704f8fb  forgotten: "),
            "{}",
            human(&show, &a)
        );
        let a = serde_json::json!({"campaign": null, "forgotten": false, "members": []});
        assert!(human(&show, &a).contains("(no longer in the window)"));
    }
}
