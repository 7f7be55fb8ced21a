//! `bulkwatch check-config [FILE] [--postfix]`: validate and print the
//! effective settings as TOML, with the file's key names and units; with
//! `--postfix`, also check that the local Postfix sends its mail to this
//! configuration's socket ([`postfix_problems`]). Suspicious values that
//! load all the same are warned on stderr with their lines. The secrets
//! (`fingerprint.hash_key`, `metrics.control_token`) are masked unless
//! `--show-secrets` asks for them: the output is pasted into tickets and
//! chats.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{print_stdout, CliError, Exit};
use crate::config::Config;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check (default: /etc/bulkwatch/bulkwatch.toml, the
    /// file `serve` reads without --config).
    pub file: Option<PathBuf>,
    /// Print nothing when the file is valid (warnings still go to
    /// stderr): for scripts and the systemd unit's ExecReload.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print fingerprint.hash_key and metrics.control_token as they are
    /// (masked by default).
    #[arg(long)]
    pub show_secrets: bool,
    /// Also check the local Postfix's settings (read with `postconf`):
    /// that smtpd_milters and non_smtpd_milters name this file's socket,
    /// that a chrooted smtpd or cleanup can reach it, the milter
    /// protocol and default action, and that bulkwatch answers on the
    /// socket (it connects, as Postfix will). Problems make the exit
    /// status 2.
    #[arg(long)]
    pub postfix: bool,
    /// Postfix's configuration directory for --postfix (postconf -c);
    /// default: Postfix's own.
    #[arg(long, value_name = "DIR", requires = "postfix")]
    pub postfix_config: Option<PathBuf>,
}

/// The keys whose values `check-config` masks.
const SECRETS: &[&str] = &["hash_key", "control_token"];

/// `text` (TOML from `Config::to_toml`) with the value of every secret
/// key replaced by a placeholder that says it is set.
fn mask_secrets(text: &str) -> String {
    text.lines()
        .map(|line| {
            let key = line.split(" = ").next().unwrap_or("");
            // An empty value is no secret (an unset control token).
            if SECRETS.contains(&key) && line.contains(" = ") && !line.ends_with(" = \"\"") {
                format!("{key} = \"<set, not shown: --show-secrets>\"")
            } else if line.contains("://") {
                // A Redis address's password (store.redis.urls): each
                // quoted URL of the line printed without it.
                line.split('"')
                    .enumerate()
                    .map(|(i, part)| {
                        if i % 2 == 1 {
                            crate::config::redacted_url(part)
                        } else {
                            part.to_owned()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\"")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

pub fn run(args: CheckConfigArgs) -> Result<Exit, CliError> {
    let file = args.file.unwrap_or_else(super::system_config);
    let (cfg, warnings) = Config::load_with_warnings(&file)?;
    if let Some(w) = super::keygen::public_key_warning(&cfg) {
        eprintln!("bulkwatch: warning: {w}");
    }
    for w in warnings {
        eprintln!("bulkwatch: warning: {w}");
    }
    // Zero-hour stays off (the daemon says so) without its doveadm key.
    if cfg.zero_hour.enabled {
        if let Err(e) = crate::milter::zerohour::client(&cfg) {
            eprintln!("bulkwatch: warning: zero-hour would stay off: {e}");
        }
    }
    let postfix = if args.postfix {
        Some(check_postfix(&cfg, args.postfix_config.as_deref())?)
    } else {
        None
    };
    if args.quiet && postfix.is_none() {
        return Ok(Exit::Ok);
    }
    if let Some(report) = postfix {
        print_stdout(&report.text)?;
        if report.problems > 0 {
            let unfiltered = report.problems - report.forgeable;
            let source = match (unfiltered, report.forgeable) {
                (0, _) => "mail is filtered, but a sender can write the Authentication-Results \
                           a domain allowance trusts, and so claim that allowance: add the \
                           header_checks line given above"
                    .to_owned(),
                (_, 0) => "until they are fixed, mail passes Postfix unfiltered".to_owned(),
                (u, f) => format!(
                    "{u} let mail pass Postfix unfiltered; {f} let a sender claim a domain \
                     allowance (add the header_checks line given above)"
                ),
            };
            return Err(CliError::Other {
                what: format!(
                    "{} problem(s) between Postfix and bulkwatch, each on a \"# postfix: \
                     problem:\" line above (postconf itself ran fine)",
                    report.problems
                ),
                source: source.into(),
            });
        }
        if args.quiet {
            return Ok(Exit::Ok);
        }
    }
    let (text, note) = if args.show_secrets {
        (cfg.to_toml(), "")
    } else {
        (
            mask_secrets(&cfg.to_toml()),
            " (secrets masked:\n# add --show-secrets to print them)",
        )
    };
    print_stdout(&format!(
        "# {}: OK. Effective settings (defaults filled in), as TOML that\n\
         # reads back as the same configuration{note}:\n{text}",
        file.display(),
    ))?;
    Ok(Exit::Ok)
}

/// Authentication-Results headers of authserv-id `id` in the legal forms
/// RFC 8601 allows (RFC 5322 CFWS before the id, a quoted id, folding,
/// case): what `header_checks` must drop from mail arriving from outside.
pub fn auth_results_forms(id: &str) -> Vec<String> {
    let upper = id.to_ascii_uppercase();
    [
        format!("Authentication-Results: {id}; dkim=pass header.d=example.com"),
        format!("Authentication-Results:{id};dkim=pass header.d=example.com"),
        format!("Authentication-Results: (comment) {id}; dkim=pass header.d=example.com"),
        format!("Authentication-Results: (a (nested) comment)\n\t{id}; dkim=pass"),
        format!("Authentication-Results: \"{id}\"; dkim=pass header.d=example.com"),
        format!("Authentication-Results:\n\t{id};\n\tdkim=pass header.d=example.com"),
        format!("authentication-results: {upper} 1; dkim=pass header.d=example.com"),
    ]
    .into()
}

/// `text` with the characters a Postfix regexp table reads specially
/// written with a backslash.
fn regex_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\.^$*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What `postconf` says of the settings the milter depends on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostfixSettings {
    pub smtpd_milters: String,
    pub non_smtpd_milters: String,
    pub milter_protocol: String,
    pub milter_default_action: String,
    pub queue_directory: String,
    /// The `header_checks` tables (their `type:name`s).
    pub header_checks: Vec<String>,
    /// master.cf services whose command is smtpd or cleanup and that run
    /// chrooted (`y` in the chroot column).
    pub chrooted: Vec<String>,
}

impl PostfixSettings {
    /// From `postconf -x NAME...` (`name = value` lines) and `postconf -M`
    /// (master.cf's columns).
    pub fn parse(main: &str, master: &str) -> PostfixSettings {
        let mut s = PostfixSettings::default();
        for line in main.lines() {
            let Some((name, value)) = line
                .split_once(" = ")
                .or_else(|| line.strip_suffix(" =").map(|n| (n, "")))
            else {
                continue;
            };
            let value = value.trim().to_owned();
            match name.trim() {
                "smtpd_milters" => s.smtpd_milters = value,
                "non_smtpd_milters" => s.non_smtpd_milters = value,
                "milter_protocol" => s.milter_protocol = value,
                "milter_default_action" => s.milter_default_action = value,
                "queue_directory" => s.queue_directory = value,
                "header_checks" => {
                    s.header_checks = value
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect();
                }
                _ => {}
            }
        }
        for line in master.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let [service, _, _, _, chroot, _, _, command, ..] = f.as_slice() {
                if *chroot == "y" && matches!(*command, "smtpd" | "cleanup") {
                    s.chrooted.push(format!("{service} ({command})"));
                }
            }
        }
        s
    }
}

/// Whether a Postfix milter list names `socket`: an entry equal to it, or
/// for an inet socket bound to every address, one on its port.
fn names_socket(list: &str, socket: &crate::config::SocketSpec) -> bool {
    use crate::config::SocketSpec;
    list.split(|c: char| c == ',' || c.is_whitespace() || c == '{' || c == '}')
        .filter(|e| !e.is_empty() && !e.contains('='))
        .any(|e| match socket {
            SocketSpec::Unix(path) => e
                .strip_prefix("unix:")
                .is_some_and(|p| Path::new(p) == path.as_path()),
            SocketSpec::Inet(addr) => e.strip_prefix("inet:").is_some_and(|p| {
                let port = |a: &str| a.rsplit(':').next().map(str::to_owned);
                let host = addr.rsplit_once(':').map_or("", |(h, _)| h);
                p == addr
                    || (matches!(host, "0.0.0.0" | "[::]" | "::" | "*" | "")
                        && port(p) == port(addr))
            }),
        })
}

/// The problems (mail that would pass unfiltered) and notes of Postfix's
/// `settings` for a milter on `socket`.
pub fn postfix_problems(
    socket: &crate::config::SocketSpec,
    settings: &PostfixSettings,
) -> (Vec<String>, Vec<String>) {
    use crate::config::SocketSpec;
    let spec = socket.to_string();
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    if !names_socket(&settings.smtpd_milters, socket) {
        problems.push(format!(
            "smtpd_milters = {:?} does not name {spec}: mail received by SMTP is not filtered",
            settings.smtpd_milters
        ));
    }
    if !names_socket(&settings.non_smtpd_milters, socket) {
        problems.push(format!(
            "non_smtpd_milters = {:?} does not name {spec}: mail from sendmail and the \
             pickup queue is not filtered (set non_smtpd_milters = $smtpd_milters)",
            settings.non_smtpd_milters
        ));
    }
    if let SocketSpec::Unix(path) = socket {
        let queue = Path::new(&settings.queue_directory);
        if !settings.chrooted.is_empty()
            && (settings.queue_directory.is_empty() || !path.starts_with(queue))
        {
            problems.push(format!(
                "{} run chrooted in {} (master.cf), where the unix socket {} cannot be \
                 reached: use the inet socket, a socket under the queue directory, or set \
                 their chroot column to n",
                settings.chrooted.join(", "),
                settings.queue_directory,
                path.display()
            ));
        }
    }
    match settings.milter_protocol.trim().parse::<u32>() {
        Ok(p) if p >= 6 => {}
        _ => notes.push(format!(
            "milter_protocol = {:?}: 6 is recommended (bulkwatch negotiates it, and \
             skips the stages it does not need)",
            settings.milter_protocol
        )),
    }
    if settings.milter_default_action.trim() != "accept" {
        notes.push(format!(
            "milter_default_action = {:?}: while bulkwatch is down or unreachable Postfix \
             does not accept mail; \"accept\" lets it through, as bulkwatch itself does",
            settings.milter_default_action
        ));
    }
    (problems, notes)
}

/// The report of `--postfix`.
struct PostfixReport {
    text: String,
    problems: usize,
    /// Of the problems, those that let a sender write what a domain
    /// allowance trusts: mail is filtered meanwhile.
    forgeable: usize,
}

/// Connects to the milter socket, as Postfix will, and hangs up: an error
/// when nothing listens (or answers within two seconds).
fn probe_socket(socket: &crate::config::SocketSpec) -> std::io::Result<()> {
    use crate::config::SocketSpec;
    use std::net::ToSocketAddrs;
    const WAIT: std::time::Duration = std::time::Duration::from_secs(2);
    match socket {
        SocketSpec::Unix(path) => std::os::unix::net::UnixStream::connect(path).map(drop),
        SocketSpec::Inet(addr) => {
            let mut last = std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the address resolves to nothing",
            );
            for a in addr.to_socket_addrs()? {
                match std::net::TcpStream::connect_timeout(&a, WAIT) {
                    Ok(_) => return Ok(()),
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
    }
}

/// Runs `postconf` and reports what [`postfix_problems`] finds.
fn check_postfix(cfg: &Config, dir: Option<&Path>) -> Result<PostfixReport, CliError> {
    let run = |args: &[&str]| -> Result<String, CliError> {
        let mut cmd = std::process::Command::new("postconf");
        if let Some(d) = dir {
            cmd.arg("-c").arg(d);
        }
        let out = cmd.args(args).output().map_err(|e| CliError::Other {
            what: "cannot run postconf (is Postfix installed and on PATH?)".to_owned(),
            source: Box::new(e),
        })?;
        if !out.status.success() {
            return Err(CliError::Other {
                what: format!(
                    "postconf {} failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                source: "postconf".into(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let main = run(&[
        "-x",
        "smtpd_milters",
        "non_smtpd_milters",
        "milter_protocol",
        "milter_default_action",
        "queue_directory",
        "header_checks",
    ])?;
    let master = run(&["-M"])?;
    let settings = PostfixSettings::parse(&main, &master);
    let (mut problems, mut notes) = postfix_problems(&cfg.milter.socket, &settings);
    // Each trusted authserv-id: a header of it arriving from outside must
    // be dropped before any milter (and bulkwatch) sees the message, or a
    // sender could write the pass that a domain allowance asks for.
    let before = problems.len();
    for id in &cfg.allow.authserv_ids {
        problems.extend(auth_results_kept(id, &settings.header_checks, dir));
    }
    let forgeable = problems.len() - before;
    if let Err(e) = probe_socket(&cfg.milter.socket) {
        problems.push(format!(
            "nothing answers on {} ({e}): bulkwatch serve is not running there, so Postfix \
             applies milter_default_action = {} to every message (start it: systemctl start \
             bulkwatch, or /etc/init.d/bulkwatch start)",
            cfg.milter.socket,
            if settings.milter_default_action.is_empty() {
                "tempfail"
            } else {
                &settings.milter_default_action
            }
        ));
    }
    notes.push(own_note(cfg, dir));
    let mut text = String::new();
    for p in &problems {
        text.push_str(&format!("# postfix: problem: {p}\n"));
    }
    for n in &notes {
        text.push_str(&format!("# postfix: note: {n}\n"));
    }
    if problems.is_empty() {
        text.push_str(
            "# postfix: OK: smtpd_milters and non_smtpd_milters name this socket, \
             and bulkwatch answers on it\n",
        );
    }
    Ok(PostfixReport {
        text,
        problems: problems.len(),
        forgeable,
    })
}

/// The problem, if any, of trusted authserv-id `id`: some legal form of an
/// Authentication-Results header of it (RFC 8601: plain, a comment before
/// the id, the id quoted, folded, in other cases) that no table of
/// `header_checks` drops (`postmap -q`, as Postfix reads the tables).
fn auth_results_kept(id: &str, header_checks: &[String], dir: Option<&Path>) -> Option<String> {
    let dropped = |sample: &str| {
        header_checks.iter().any(|table| {
            let mut cmd = std::process::Command::new("postmap");
            if let Some(d) = dir {
                cmd.arg("-c").arg(d);
            }
            cmd.arg("-q")
                .arg(sample)
                .arg(table)
                .output()
                .is_ok_and(|o| {
                    o.status.success()
                        && String::from_utf8_lossy(&o.stdout)
                            .trim_start()
                            .to_ascii_uppercase()
                            .starts_with("IGNORE")
                })
        })
    };
    let missed: Vec<String> = auth_results_forms(id)
        .into_iter()
        .filter(|sample| !dropped(sample))
        .collect();
    let first = missed.first()?;
    Some(format!(
        "allow.authserv_ids trusts {id}, but header_checks (= {:?}) does not drop \
         every Authentication-Results header of {id} arriving from outside ({} of \
         its legal forms pass, e.g. {first:?}): a sender could write one. (bulkwatch \
         trusts only the plain form at the top, but other readers of the header may \
         not.) The line below matches the id anywhere in the header, folded or not, \
         in any case. Add to a header_checks table: \
         /^Authentication-Results:.*{}/ IGNORE",
        header_checks.join(", "),
        missed.len(),
        regex_escaped(id)
    ))
}

/// What is the site's own mail (`[own]`), as `serve` will read it: the
/// client networks (with Postfix's `mynetworks` read from `dir`, or from
/// `own.postfix_config_dir`), logins, local submission and services.
fn own_note(cfg: &Config, dir: Option<&Path>) -> String {
    let own = &cfg.own;
    let dir = dir.or_else(|| {
        (!own.postfix_config_dir.is_empty()).then(|| Path::new(own.postfix_config_dir.as_str()))
    });
    let (postfix, left) = if own.reads_mynetworks() {
        match crate::postfix::mynetworks(dir) {
            Ok((nets, other)) if other.is_empty() => (nets, String::new()),
            Ok((nets, other)) => (
                nets,
                format!(
                    " (left out of mynetworks, not networks: {}; list their networks in \
                     own.networks)",
                    other.join(" ")
                ),
            ),
            Err(e) => (Vec::new(), format!(" (mynetworks not read: {e})")),
        }
    } else {
        (Vec::new(), String::new())
    };
    let nets = own.networks_with(&postfix);
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(" ")
        }
    };
    format!(
        "the site's own mail (counted apart; policy.own = {}): clients in {}{left}{}{}{}{}; \
         a gateway or backup MX in mynetworks that relays mail from outside belongs in \
         own.exclude",
        cfg.policy.own.as_str(),
        list(nets.iter().map(ToString::to_string).collect()),
        if own.exclude.is_empty() {
            String::new()
        } else {
            format!(
                " but {}",
                list(own.exclude.iter().map(ToString::to_string).collect())
            )
        },
        if own.authenticated {
            ", SASL logins"
        } else {
            ""
        },
        if own.local_submission {
            ", local submission (sendmail)"
        } else {
            ""
        },
        if own.daemon_names.is_empty() {
            String::new()
        } else {
            format!(", services {}", own.daemon_names.join(" "))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SocketSpec;

    const MASTER: &str = "smtp       inet  n       -       y       -       -       smtpd\n\
                          pickup     unix  n       -       y       60      1       pickup\n\
                          cleanup    unix  n       -       y       -       0       cleanup\n";

    fn settings(smtpd: &str, non_smtpd: &str, master: &str) -> PostfixSettings {
        PostfixSettings::parse(
            &format!(
                "smtpd_milters = {smtpd}\nnon_smtpd_milters = {non_smtpd}\n\
                 milter_protocol = 6\nmilter_default_action = accept\n\
                 queue_directory = /var/spool/postfix\n"
            ),
            master,
        )
    }

    #[test]
    fn postfix_settings_that_reach_the_socket_pass() {
        let inet = SocketSpec::Inet("127.0.0.1:7357".into());
        let s = settings("inet:127.0.0.1:7357", "inet:127.0.0.1:7357", MASTER);
        assert_eq!(s.chrooted, ["smtp (smtpd)", "cleanup (cleanup)"]);
        assert_eq!(postfix_problems(&inet, &s), (vec![], vec![]));
        // Per-milter settings in braces, other milters beside it.
        let s = settings(
            "{ inet:127.0.0.1:7357, connect_timeout=10s }, unix:/run/other.sock",
            "inet:127.0.0.1:7357",
            MASTER,
        );
        assert!(postfix_problems(&inet, &s).0.is_empty());
        // A daemon on every address, Postfix on localhost.
        let any = SocketSpec::Inet("0.0.0.0:7357".into());
        let s = settings("inet:127.0.0.1:7357", "inet:127.0.0.1:7357", MASTER);
        assert!(postfix_problems(&any, &s).0.is_empty());
    }

    /// Issue 41 item 6: with the unix socket on Debian, cleanup (which
    /// runs non_smtpd_milters) is chrooted and mail from sendmail passed
    /// unfiltered; a missing non_smtpd_milters did the same.
    #[test]
    fn what_lets_mail_pass_unfiltered_is_a_problem() {
        let unix = SocketSpec::Unix("/run/bulkwatch/bulkwatch.sock".into());
        let s = settings(
            "unix:/run/bulkwatch/bulkwatch.sock",
            "unix:/run/bulkwatch/bulkwatch.sock",
            MASTER,
        );
        let (problems, _) = postfix_problems(&unix, &s);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("cleanup (cleanup)") && problems[0].contains("chroot"));
        // Not chrooted: fine.
        let s = settings(
            "unix:/run/bulkwatch/bulkwatch.sock",
            "unix:/run/bulkwatch/bulkwatch.sock",
            &MASTER.replace(" y ", " n "),
        );
        assert!(postfix_problems(&unix, &s).0.is_empty());
        let inet = SocketSpec::Inet("127.0.0.1:7357".into());
        let s = settings("inet:127.0.0.1:7357", "", MASTER);
        let (problems, _) = postfix_problems(&inet, &s);
        assert!(problems[0].contains("non_smtpd_milters"), "{problems:?}");
        let s = settings("inet:127.0.0.1:7358", "inet:127.0.0.1:7357", MASTER);
        assert!(postfix_problems(&inet, &s).0[0].contains("smtpd_milters"));
        // Protocol and default action are notes, not problems.
        let mut s = settings("inet:127.0.0.1:7357", "inet:127.0.0.1:7357", MASTER);
        s.milter_protocol = "2".into();
        s.milter_default_action = "tempfail".into();
        let (problems, notes) = postfix_problems(&inet, &s);
        assert!(problems.is_empty());
        assert_eq!(notes.len(), 2, "{notes:?}");
    }

    #[test]
    fn secrets_are_masked_and_the_rest_is_kept() {
        let mut cfg = Config::default();
        cfg.metrics.control_token = Some("a-token-of-twenty-chars-or-more".into());
        let text = cfg.to_toml();
        assert!(text.contains("a-token-of-twenty-chars-or-more"));
        let masked = mask_secrets(&text);
        assert!(
            !masked.contains("a-token-of-twenty-chars-or-more"),
            "{masked}"
        );
        let key = crate::config::format_hash_key(cfg.fingerprint.hash_key);
        assert!(text.contains(&key) && !masked.contains(&key), "{masked}");
        assert_eq!(masked.matches("<set, not shown").count(), 2);
        assert_eq!(masked.lines().count(), text.lines().count());
    }
}
