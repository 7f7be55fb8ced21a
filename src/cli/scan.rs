//! `bulkwatch scan [FILE|-]`: one message, explained.

use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use super::{load_config, print_stdout, CliError, Exit};
use crate::config::Config;
use crate::engine::simhash::hex;
use crate::engine::verdict::Verdict;
use crate::engine::{analyze, fingerprint, Analysis, Envelope, UnixSecs};

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Configuration file (TOML); without it, /etc/bulkwatch/bulkwatch.toml
    /// when that exists, else the built-in defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Judge the message against this state snapshot file instead of the
    /// running daemon. Without it, the daemon of the configuration is
    /// asked (its control socket, which only its user and root may open)
    /// and, when it does not answer, its snapshot in `state.state_dir`.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Only read and fingerprint the message: ask no daemon, read no
    /// snapshot.
    #[arg(long, conflicts_with = "state")]
    pub offline: bool,
    /// The envelope sender (MAIL FROM). Default: the message's
    /// Return-Path field, which the delivering MTA writes.
    #[arg(long, value_name = "ADDRESS")]
    pub from: Option<String>,
    /// An envelope recipient (RCPT TO); repeat for several. Default: the
    /// message's Delivered-To and X-Original-To fields, which the
    /// delivering MTA writes; none: one recipient of whom nothing is
    /// known.
    #[arg(long, value_name = "ADDRESS")]
    pub to: Vec<String>,
    /// Characters of normalized text to show: the text as the
    /// fingerprints read it (lower case, signs and digits that stand for
    /// letters read as letters, and every `l` as `i`, since `1` stands
    /// for both).
    #[arg(long, default_value_t = 400)]
    pub show: usize,
    /// The message (RFC 5322); `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
}

pub fn run(args: ScanArgs) -> Result<Exit, CliError> {
    let cfg = load_config(args.config.as_ref())?;
    let mut raw = Vec::new();
    match args.file.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            // What the parser reads of a message, and one byte more (it
            // then knows the message was cut): a huge file or a device is
            // not read to its end.
            std::fs::File::open(p)
                .and_then(|f| {
                    f.take(cfg.scan.max_parse_bytes as u64 + 1)
                        .read_to_end(&mut raw)
                })
                .map_err(|source| CliError::Read {
                    path: p.clone(),
                    source,
                })?;
        }
        None => {
            std::io::stdin()
                .take(cfg.scan.max_parse_bytes as u64 + 1)
                .read_to_end(&mut raw)
                .map_err(|source| CliError::Read {
                    path: "stdin".into(),
                    source,
                })?;
        }
    }
    let env = envelope_of(&raw, args.from.as_deref(), &args.to);
    // Read in a worker process, as the daemon reads: a message that kills
    // its parser is reported, not a crash of this command.
    let a = match super::read_in_workers()? {
        crate::replay::ReadIn::Workers { program, hooks } => {
            let worker =
                crate::worker::Local::start(&program, &cfg, hooks).map_err(CliError::Workers)?;
            let reading = worker
                .read(&raw, &env.rcpts, cfg.milter.engine_timeout)
                .map_err(CliError::Unread)?;
            fingerprint(reading, &cfg)
        }
        crate::replay::ReadIn::ThisProcess => {
            crate::worker::provide_ocr_here(&cfg);
            analyze(&raw, &env, &cfg)
        }
    };
    let judged = if args.offline {
        None
    } else {
        Some(judge(&cfg, &a, &env, args.state.as_ref())?)
    };
    // Writing to a String cannot fail.
    let text = render(&a, &cfg, args.show, judged.as_ref()).unwrap_or_default();
    print_stdout(&text)?;
    let bulk = judged.as_ref().is_some_and(|j| match &j.answer {
        Answer::Explained(x) => x.get("level").and_then(|l| l.as_str()) == Some("bulk"),
        Answer::Decided(_) | Answer::Unjudged(_) => false,
    });
    Ok(if bulk { Exit::BulkFound } else { Exit::Ok })
}

/// The envelope scan judges the message with: `--from` and `--to`, else
/// what the delivering MTA wrote into the header (Return-Path,
/// Delivered-To, X-Original-To).
fn envelope_of(raw: &[u8], from: Option<&str>, to: &[String]) -> Envelope {
    let fields = header_fields(raw);
    let value = |name: &str| -> Vec<String> {
        fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| {
                v.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
            .filter(|v| !v.is_empty())
            .collect()
    };
    let mail_from = from
        .map(str::to_owned)
        .or_else(|| value("Return-Path").into_iter().next());
    let mut rcpts: Vec<String> = if to.is_empty() {
        value("Delivered-To")
            .into_iter()
            .chain(value("X-Original-To"))
            .collect()
    } else {
        to.to_vec()
    };
    rcpts.dedup();
    rcpts.truncate(crate::engine::MAX_KEPT_RCPTS);
    Envelope {
        mail_from,
        rcpts,
        ..Envelope::default()
    }
}

/// The header section's fields (name, unfolded value), read up to the
/// first empty line; at most 1,000 fields.
fn header_fields(raw: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(raw);
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim_end_matches('\r').is_empty() || out.len() >= 1000 {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = out.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else if let Some((n, v)) = line.split_once(':') {
            out.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    out
}

/// Where a verdict came from, and what it said.
struct Judged {
    source: String,
    answer: Answer,
}

enum Answer {
    /// The daemon's or a snapshot's explanation
    /// (`milter::control::explanation_json`).
    Explained(serde_json::Value),
    /// Not judged: allow-listed or skipped, by the configuration alone.
    Decided(Box<Verdict>),
    /// No daemon answered and it left no snapshot: why.
    Unjudged(String),
}

/// Asks the daemon (or reads the snapshot) what the message would be.
fn judge(
    cfg: &Config,
    a: &Analysis,
    env: &Envelope,
    state: Option<&PathBuf>,
) -> Result<Judged, CliError> {
    use base64::Engine as _;
    let obs = match crate::engine::observe(cfg, a, env) {
        Ok(obs) => obs,
        Err(v) => {
            return Ok(Judged {
                source: "the configuration".into(),
                answer: Answer::Decided(v),
            })
        }
    };
    let now = crate::milter::unix_now();
    if state.is_none() {
        let entry = crate::store::stream::encode(&obs, UnixSecs(now));
        let request = format!(
            "explain {} {}",
            crate::milter::control::key_tag(cfg.fingerprint.hash_key),
            base64::engine::general_purpose::STANDARD.encode(entry)
        );
        match super::campaigns::ask(cfg, &request) {
            Ok(answer) => {
                let store = answer
                    .get("store")
                    .and_then(|s| s.as_str())
                    .unwrap_or("the daemon's window")
                    .to_owned();
                return Ok(Judged {
                    source: format!("the running daemon ({store})"),
                    answer: Answer::Explained(answer),
                });
            }
            // The daemon answered and refused: say why, do not guess.
            Err(e @ CliError::Refused { .. }) => return Err(e),
            Err(_) => {}
        }
    }
    let (path, fallback) = match state {
        Some(p) => (p.clone(), false),
        None => (
            cfg.state.state_dir.join(crate::store::snapshot::FILE_NAME),
            true,
        ),
    };
    let socket = crate::milter::control::socket_path(&cfg.state.state_dir);
    if fallback && !path.exists() {
        return Ok(Judged {
            source: "nothing".into(),
            answer: Answer::Unjudged(format!(
                "no daemon answered on {} and there is no snapshot {} (with --state FILE, \
                 judge against a snapshot)",
                socket.display(),
                path.display()
            )),
        });
    }
    let (engine, loaded) =
        crate::store::snapshot::load(&path, cfg).map_err(|e| CliError::Other {
            what: if fallback {
                format!(
                    "the daemon did not answer on {}, and its snapshot {} cannot be used",
                    socket.display(),
                    path.display()
                )
            } else {
                format!("cannot use state {}", path.display())
            },
            source: Box::new(e),
        })?;
    // The snapshot's present: when it was written, or its last message.
    let at = UnixSecs(loaded.saved_at.max(engine.latest_time().map_or(0, |t| t.0)));
    let x = engine.explain(&obs, at);
    let age = now.saturating_sub(loaded.saved_at);
    Ok(Judged {
        source: format!(
            "{}the snapshot {}, written {} ago",
            if fallback {
                "the daemon did not answer: "
            } else {
                ""
            },
            path.display(),
            age_words(age)
        ),
        answer: Answer::Explained(crate::milter::control::explanation_json(&x)),
    })
}

/// "3 h 5 min", "42 s".
fn age_words(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

fn render(
    a: &Analysis,
    cfg: &Config,
    show: usize,
    judged: Option<&Judged>,
) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    let shown: String = a.normalized.text.chars().take(show).collect();
    writeln!(
        out,
        "message-id:  {}",
        a.message_id.as_deref().unwrap_or("-")
    )?;
    writeln!(out, "subject:     {}", a.subject.as_deref().unwrap_or("-"))?;
    writeln!(
        out,
        "features:    {} (min_features {})",
        a.features, cfg.fingerprint.min_features
    )?;
    writeln!(out, "tokens:      {}", a.normalized.tokens)?;
    match &a.fingerprint {
        Some(fp) => {
            writeln!(out, "simhash:     {:016x}", fp.simhash)?;
            writeln!(out, "sha256:      {}", hex(&fp.exact))?;
            writeln!(out, "version:     {}", fp.version)?;
        }
        None => writeln!(out, "simhash:     - (message could not be parsed)")?,
    }
    writeln!(
        out,
        "normalized:\n{}{}",
        shown,
        if a.normalized.text.chars().count() > show {
            "\n[...]"
        } else {
            ""
        }
    )?;
    if let Some(k) = a.normalized.kept_cut {
        writeln!(
            out,
            "quote:       read as the text: what the quote, attribution, footer and \
             disclaimer rules leave is {} of {} words, under {} words or a third, so the \
             message is fingerprinted with what they would cut (a short reply is compared \
             with the message it quotes)",
            k.own_words,
            k.words,
            crate::engine::mime::normalize::MIN_KEPT_WORDS
        )?;
    }
    if let Some(j) = judged {
        writeln!(out, "judged by:   {}", j.source)?;
        match &j.answer {
            Answer::Decided(v) => writeln!(out, "verdict:     {}", v.header_value())?,
            Answer::Explained(x) => explained(&mut out, x)?,
            Answer::Unjudged(why) => writeln!(out, "verdict:     - ({why})")?,
        }
    }
    Ok(out)
}

/// The lines of an explanation (`milter::control::explanation_json`).
fn explained(out: &mut String, x: &serde_json::Value) -> std::fmt::Result {
    let f = |v: &serde_json::Value, k: &str| v.get(k).cloned().unwrap_or_default();
    let text = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => crate::escape::printable(&s),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    let c = f(x, "campaign_after");
    let conversation = f(&c, "conversation").as_bool() == Some(true)
        && f(&c, "messages").as_u64().unwrap_or(0) > 1;
    writeln!(
        out,
        "verdict:     {}; campaign={}; size={}{} (as the window stands; nothing recorded)",
        text(f(x, "level")),
        text(f(&c, "id")),
        f(&c, "recipients"),
        if conversation {
            "; conversation=yes"
        } else {
            ""
        }
    )?;
    writeln!(out, "joined by:   {}", text(f(x, "joined_by")))?;
    if let Some(d) = x.get("distance").and_then(serde_json::Value::as_u64) {
        writeln!(
            out,
            "match:       simhash distance {d}, resemblance {:.2}{}",
            f(x, "resemblance").as_f64().unwrap_or(0.0),
            match f(x, "corroborating").as_u64() {
                Some(n) if n > 0 => format!(", {n} texts corroborating"),
                _ => String::new(),
            }
        )?;
    }
    writeln!(
        out,
        "campaign:    {} {}",
        text(f(&c, "id")),
        if x.get("campaign_before").is_some_and(|b| !b.is_null()) {
            "(an existing campaign)"
        } else {
            "(new: this message alone)"
        }
    )?;
    writeln!(
        out,
        "counted:     {} messages, {} distinct recipients (weighted {}), {} sender domains{}",
        f(&c, "messages"),
        f(&c, "recipients"),
        f(&c, "score"),
        f(&c, "sender_domains"),
        if conversation {
            "; a conversation: no copy but its first delivery and replies"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "this move:   {} (adds {} recipients new to the campaign; the site's own mail: {}; \
         answers our own users' mail: {})",
        text(f(x, "move")),
        f(x, "added_recipients"),
        yes(f(x, "own_mail").as_bool()),
        yes(f(x, "answers_own_mail").as_bool())
    )?;
    if f(x, "merges").as_u64().unwrap_or(0) > 0 {
        writeln!(out, "merges:      {} other campaigns", f(x, "merges"))?;
    }
    if let Some(m) = x.get("near_miss").filter(|m| !m.is_null()) {
        writeln!(
            out,
            "near miss:   campaign {} (distance {}, resemblance {:.2}): matched, not joined",
            text(f(m, "campaign")),
            f(m, "distance"),
            f(m, "resemblance").as_f64().unwrap_or(0.0)
        )?;
    }
    Ok(())
}

fn yes(b: Option<bool>) -> &'static str {
    if b == Some(true) {
        "yes"
    } else {
        "no"
    }
}
