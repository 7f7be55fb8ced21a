//! Man pages: `bulkwatch(8)` and one page per command, generated from the
//! command line's clap definitions (clap_mangen), and `bulkwatch.toml(5)`,
//! generated from the shipped, commented `config/bulkwatch.toml`. Written
//! to `man/` and committed; a test here fails when they are out of date.

use std::fmt::Write as _;
use std::path::Path;

use bulkwatch::cli::Cli;
use clap::CommandFactory;

/// Every page: (file name, contents).
pub fn pages(root: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    // (`help` is clap's, not a command of its own with a page.)
    let cmd = Cli::command().disable_help_subcommand(true);
    let mut out = Vec::new();
    let mut main = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section("8")
        .render(&mut main)?;
    out.push(("bulkwatch.8".to_owned(), with_sections(main, MAIN_SECTIONS)));
    command_pages(&cmd, "bulkwatch", &mut out)?;
    let toml = std::fs::read_to_string(root.join("config/bulkwatch.toml"))?;
    let version = cmd.get_version().unwrap_or_default().to_owned();
    out.push((
        "bulkwatch.toml.5".to_owned(),
        config_page(&toml, &version).into_bytes(),
    ));
    Ok(out)
}

/// A page for each command under `cmd` (whose command line starts with
/// `bin`), and for theirs (`bulkwatch campaigns list`).
fn command_pages(
    cmd: &clap::Command,
    bin: &str,
    out: &mut Vec<(String, Vec<u8>)>,
) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let sub = sub.clone().disable_help_subcommand(true);
        let bin = format!("{bin} {}", sub.get_name());
        let name = bin.replace(' ', "-");
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone()).bin_name(bin.clone()))
            .section("8")
            .render(&mut page)?;
        let sections = if name == "bulkwatch-serve" {
            SERVE_SECTIONS
        } else {
            COMMAND_SECTIONS
        };
        out.push((format!("{name}.8"), with_sections(page, sections)));
        command_pages(&sub, &bin, out)?;
    }
    Ok(())
}

/// `page` with `sections` (roff) before its VERSION section, or at its end.
fn with_sections(page: Vec<u8>, sections: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(&page).into_owned();
    let at = text.find(".SH VERSION").unwrap_or(text.len());
    let (head, tail) = text.split_at(at);
    format!("{head}{sections}{tail}").into_bytes()
}

/// The daemon's signals, in bulkwatch(8) and bulkwatch-serve(8).
macro_rules! signals {
    () => {
        r#".SH SIGNALS
.TP
\fBSIGHUP\fR
Reload the configuration. A file with an error is refused, logged with its
key, and the running configuration stays; settings that need a restart are
logged as such, and the reload's log line names the keys it changed.
.TP
\fBSIGTERM\fR, \fBSIGINT\fR
Stop accepting connections, let messages in progress finish, write the
snapshot, remove the unix socket, exit.
"#
    };
}

/// What `bulkwatch(8)` says beyond the options: how Postfix uses it, its
/// files, signals, exit status, environment and examples.
const MAIN_SECTIONS: &str = concat!(
    r#".SH POSTFIX
Add to \fI/etc/postfix/main.cf\fR, then run \fBpostfix reload\fR:
.PP
.nf
smtpd_milters = inet:127.0.0.1:7357
non_smtpd_milters = $smtpd_milters
milter_protocol = 6
milter_default_action = accept
milter_connect_timeout = 10s
milter_command_timeout = 10s
milter_content_timeout = 30s
.fi
.PP
The address is the \fBsocket\fR of \fBbulkwatch.toml\fR(5).
\fBmilter_default_action = accept\fR lets mail through while the daemon is
down, as the daemon itself does when it cannot judge a message.
Debian runs \fBsmtpd\fR and \fBcleanup\fR (which \fBnon_smtpd_milters\fR
uses for mail from \fBsendmail\fR) chrooted in \fI/var/spool/postfix\fR,
where a socket under \fI/run\fR cannot be reached: keep the inet socket, or
put the unix socket inside the chroot. \fBbulkwatch check\-config \-\-postfix\fR
reads Postfix's settings with \fBpostconf\fR and says what would let mail
pass unfiltered.
.PP
With \fBquarantine\fR as a level's action in \fB[policy]\fR (e.g.
\fBbulk = "quarantine"\fR), Postfix holds the message:
\fBmailq\fR lists it (marked \fB!\fR) and the log line of its verdict names
its queue id and its campaign. A campaign's held copies, on this host, in
one step (as root):
.PP
.nf
bulkwatch campaigns held \fIcampaign\fR
bulkwatch campaigns release \fIcampaign\fR
bulkwatch campaigns delete\-held \fIcampaign\fR
.fi
.PP
A release delivers them now, their \fBX\-Bulkwatch\fR header ending in
\fBheld=yes\fR (a downstream rule then knows an operator released it).
One message, by hand:
.PP
.nf
postsuper \-H \fIqueue_id\fR
postqueue \-i \fIqueue_id\fR
.fi
.PP
\fBpostsuper \-H\fR moves it from the hold queue to the deferred queue,
where it would wait for the queue manager's next scan of that queue (up to
\fBqueue_run_delay\fR, and longer for a message long in the queue);
\fBpostqueue \-i\fR delivers it now. \fBpostsuper \-d\fR \fIqueue_id\fR
deletes it instead.
.SH FILES
.TP
\fI/etc/bulkwatch/bulkwatch.toml\fR
The configuration (\fBbulkwatch.toml\fR(5)), read by every command given
no \fB\-\-config\fR; without it, the built\-in defaults. Relative paths in
it are read from its directory.
.TP
\fI/var/lib/bulkwatch/state/\fR
The \fBstate_dir\fR: \fIstate.bin\fR (the window and campaigns, written
periodically and at shutdown, read at start; one the daemon cannot use is
moved aside as \fIstate.bin.corrupt\-\fR\fItime\fR), \fIcontrol.sock\fR
(for \fBbulkwatch campaigns\fR), \fIfailed/\fR (copies of messages whose
reading failed, mode 0600, at most 16).
"#,
    signals!(),
    r#".SH EXIT STATUS
.TP
0
Success; for \fBscan\fR and \fBreplay\fR, no bulk mail found.
.TP
1
\fBscan\fR or \fBreplay\fR found bulk mail.
.TP
2
An error (a bad configuration, an unreadable input, a daemon that cannot
start or could not write its snapshot at shutdown), said on standard error.
.SH ENVIRONMENT
.TP
\fBBULKWATCH_CONFIG\fR
The file commands read when given no \fB\-\-config\fR, in place of
\fI/etc/bulkwatch/bulkwatch.toml\fR (a container's mounted file, say); as
for that one, a name that does not exist means the built\-in defaults.
.TP
\fBRUST_LOG\fR
The daemon's log filter (\fBtracing\fR's syntax, e.g. \fBinfo\fR,
\fBbulkwatch=debug\fR); \fBinfo\fR when unset.
.SH EXAMPLES
.nf
bulkwatch check\-config /etc/bulkwatch/bulkwatch.toml
bulkwatch replay \-\-format jsonl /var/mail/archive.mbox
bulkwatch scan message.eml
bulkwatch campaigns list
bulkwatch campaigns allow 4f4b2704f8fb
.fi
.SH SEE ALSO
\fBbulkwatch.toml\fR(5), \fBpostconf\fR(5), \fBpostsuper\fR(1),
\fI/usr/share/doc/bulkwatch/README.md\fR
"#
);

/// What `bulkwatch serve`'s page says beyond its options: how it is
/// started and stopped, its signals and exit status.
const SERVE_SECTIONS: &str = concat!(
    r#".SH STARTING AND STOPPING
The daemon runs in the foreground and never forks. The Debian package
starts it with systemd (\fBbulkwatch.service\fR) or, on a host without
systemd, with \fI/etc/init.d/bulkwatch\fR (\fBservice bulkwatch
start\fR): that script runs it as the user \fBbulkwatch\fR in
\fI/var/lib/bulkwatch\fR with \fB\-\-log\-format syslog\fR, and waits for
it to say it is ready, so a daemon that cannot start fails the start,
naming the reason. It says it is ready (and why it stopped, as ERRNO=)
through \fBNOTIFY_SOCKET\fR when that is set (\fBsd_notify\fR(3)).
"#,
    signals!(),
    r#".SH EXIT STATUS
0 after a clean stop; 2 when it could not start (a bad configuration, a
state directory another daemon holds, a socket in use) or could not write
its snapshot at shutdown, said on standard error and, with
\fB\-\-log\-format syslog\fR, to syslog.
.SH FILES
\fI/etc/bulkwatch/bulkwatch.toml\fR, read when no \fB\-\-config\fR is
given (\fBbulkwatch.toml\fR(5)); \fI/etc/init.d/bulkwatch\fR, the init
script; \fI/etc/default/bulkwatch\fR, read by it (\fBDAEMON_OPTS\fR:
more options, \fBCONF\fR: another file).
.SH SEE ALSO
\fBbulkwatch\fR(8), \fBbulkwatch.toml\fR(5), \fBbulkwatch\-check\-config\fR(8),
\fBstart\-stop\-daemon\fR(8)
"#
);

/// What every command's page says beyond its options.
const COMMAND_SECTIONS: &str = r#".SH EXIT STATUS
0 on success (for \fBscan\fR and \fBreplay\fR: no bulk mail found), 1 when
\fBscan\fR or \fBreplay\fR found bulk mail, 2 on an error, said on
standard error.
.SH FILES
\fI/etc/bulkwatch/bulkwatch.toml\fR, read when no \fB\-\-config\fR is
given (\fBbulkwatch.toml\fR(5)).
.SH SEE ALSO
\fBbulkwatch\fR(8), \fBbulkwatch.toml\fR(5)
"#;

/// Writes every page under `dir`.
pub fn run(root: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, bytes) in pages(root)? {
        std::fs::write(dir.join(&name), bytes)?;
        eprintln!("{}", dir.join(name).display());
    }
    Ok(())
}

/// Text for roff: backslashes escaped, and a line may not start with a
/// control character.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// `bulkwatch.toml(5)` from the shipped file: its opening comment is the
/// description, each `[table]` a subsection, each key with its default
/// and the comments above it and beside it.
///
/// Comments above a key describe it, unless the key has a comment beside
/// it: then those above describe the keys that follow (a paragraph).
pub fn config_page(toml: &str, version: &str) -> String {
    let mut page = String::new();
    page.push_str(".TH BULKWATCH.TOML 5 \"\" \"bulkwatch ");
    page.push_str(version);
    page.push_str(
        "\" \"File Formats\"\n.SH NAME\nbulkwatch.toml \\- configuration of the bulkwatch milter\n",
    );
    page.push_str(".SH DESCRIPTION\n");
    let mut pending: Vec<String> = Vec::new();
    let mut in_tables = false;
    for line in toml.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix('#') {
            let c = c.strip_prefix(' ').unwrap_or(c);
            if !in_tables && c.starts_with("    ") {
                // An indented example line of the opening comment.
                let _ = writeln!(page, ".IP\n.nf\n{}\n.fi\n.PP", roff(c.trim()));
            } else if !in_tables {
                if c.is_empty() {
                    page.push_str(".PP\n");
                } else {
                    let _ = writeln!(page, "{}", roff(c));
                }
            } else if !c.is_empty() {
                pending.push(c.to_owned());
            }
        } else if t.starts_with('[') {
            if !in_tables {
                page.push_str(".SH KEYS\n");
                in_tables = true;
            }
            let _ = writeln!(page, ".SS {}", roff(t));
            if !pending.is_empty() {
                let _ = writeln!(page, "{}", roff(&pending.join(" ")));
                pending.clear();
            }
        } else if let Some((key, rest)) = t.split_once('=') {
            let (value, beside) = match rest.split_once(" #") {
                Some((v, c)) => (v.trim(), Some(c.trim())),
                None => (rest.trim(), None),
            };
            if beside.is_some() && !pending.is_empty() {
                let _ = writeln!(page, ".PP\n{}", roff(&pending.join(" ")));
                pending.clear();
            }
            let _ = writeln!(page, ".TP\n\\fB{}\\fR = {}", roff(key.trim()), roff(value));
            pending.extend(beside.map(str::to_owned));
            if !pending.is_empty() {
                let _ = writeln!(page, "{}", roff(&pending.join(" ")));
            }
            pending.clear();
        }
    }
    page.push_str(
        ".SH FILES\n.TP\n\\fI/etc/bulkwatch/bulkwatch.toml\\fR\n\
         Read by every command given no \\fB\\-\\-config\\fR (when it exists; else the \
         built\\-in defaults). The Debian package installs it as a conffile, readable by \
         root and the group \\fBbulkwatch\\fR only, with a secret \\fBhash_key\\fR made \
         on first install.\n",
    );
    page.push_str(".SH SEE ALSO\n\\fBbulkwatch\\fR(8), \\fBbulkwatch\\-check\\-config\\fR(8), \\fBbulkwatch\\-keygen\\fR(8)\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// The committed pages are what the code and the shipped file make:
    /// run `cargo xtask man` after changing either.
    #[test]
    fn committed_pages_are_up_to_date() {
        for (name, bytes) in pages(root()).unwrap() {
            let path = root().join("man").join(&name);
            let committed = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask man`", path.display()));
            assert!(
                committed == bytes,
                "{} is out of date: run `cargo xtask man`",
                path.display()
            );
        }
    }

    /// bulkwatch(8) says how to use it, not only its options; no page
    /// names one that does not exist.
    #[test]
    fn pages_have_their_sections() {
        let pages = pages(root()).unwrap();
        let names: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
        let main = pages.iter().find(|(n, _)| n == "bulkwatch.8").unwrap();
        let main = String::from_utf8_lossy(&main.1);
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "SUBCOMMANDS",
            "POSTFIX",
            "FILES",
            "SIGNALS",
            "EXIT STATUS",
            "ENVIRONMENT",
            "EXAMPLES",
            "SEE ALSO",
        ] {
            assert!(
                main.contains(&format!(".SH {section}\n")),
                "bulkwatch(8) lacks {section}"
            );
        }
        assert!(main.contains("non_smtpd_milters"));
        assert!(main.contains("postsuper \\-H") && main.contains("postqueue \\-i"));
        assert!(main.contains("bulkwatch campaigns release"));
        let serve = pages
            .iter()
            .find(|(n, _)| n == "bulkwatch-serve.8")
            .unwrap();
        let serve = String::from_utf8_lossy(&serve.1);
        for section in ["SIGNALS", "EXIT STATUS", "STARTING AND STOPPING"] {
            assert!(
                serve.contains(&format!(".SH {section}\n")),
                "bulkwatch-serve(8) lacks {section}"
            );
        }
        for (name, page) in &pages {
            let page = String::from_utf8_lossy(page);
            for line in page
                .lines()
                .filter(|l| l.starts_with("bulkwatch\\-") && l.ends_with("(8)"))
            {
                let target = format!("{}.8", line.trim_end_matches("(8)").replace("\\-", "-"));
                assert!(names.contains(&target), "{name} names {target}");
            }
            if name.ends_with(".8") && name != "bulkwatch.8" {
                assert!(page.contains(".SH EXIT STATUS"), "{name}");
            }
        }
    }

    #[test]
    fn every_key_of_the_shipped_file_has_an_entry() {
        let toml = std::fs::read_to_string(root().join("config/bulkwatch.toml")).unwrap();
        let page = config_page(&toml, "0");
        for line in toml
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
        {
            let key = line.split(" = ").next().unwrap().trim();
            let entry = format!("\\fB{}\\fR = ", roff(key));
            assert!(page.contains(&entry), "{key} missing");
        }
        assert!(page.contains(".SS [store.redis]"));
        assert!(
            page.contains("bulkwatch keygen"),
            "the key's comment is kept"
        );
    }
}
