//! A private Dovecot (IMAP, LMTP, doveadm's HTTP API, IMAPSieve with the
//! package's report scripts and downstream.md's bulk rule) and hosts of a
//! private Postfix with `bulkwatch serve` as milter and zero-hour on,
//! delivering to it; a user's IMAP session spoken by hand. For the
//! zero-hour tests (`tests/zero_hour.rs` and the independent cases).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls `cond` for at most `secs`: waits on the system under test
/// reporting a state, never on a fixed delay.
pub fn wait_for(
    what: &str,
    secs: u64,
    mut cond: impl FnMut() -> bool,
    detail: impl Fn() -> String,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            detail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The users of the private Dovecot.
pub const USERS: usize = 30;

pub fn user(i: usize) -> String {
    format!("u{i}@example.net")
}

/// A host: a Postfix and its bulkwatch, delivering to the rig's Dovecot.
pub struct Host {
    pub dir: PathBuf,
    pub smtp_port: u16,
    pub bw_config: PathBuf,
    pub bw_log: PathBuf,
    pub daemon: Child,
    pub postfix_up: bool,
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.postfix_up {
            let _ = Command::new("/usr/sbin/postfix")
                .arg("-c")
                .arg(self.dir.join("conf"))
                .arg("stop")
                .output();
        }
        if let Ok(None) = self.daemon.try_wait() {
            let _ = self.daemon.kill();
            let _ = self.daemon.wait();
        }
    }
}

/// The Dovecot every host delivers to, and the hosts (the first one's
/// report socket takes the sieve scripts' reports).
pub struct Rig {
    pub hosts: Vec<Host>,
    pub dir: PathBuf,
    pub imap_port: u16,
    pub dovecot_up: bool,
    pub _tmp: tempfile::TempDir,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.hosts.clear();
        if self.dovecot_up {
            let _ = Command::new("/usr/sbin/dovecot")
                .arg("-c")
                .arg(self.dir.join("dovecot.conf"))
                .arg("stop")
                .output();
        }
    }
}

impl std::ops::Deref for Rig {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.hosts[0]
    }
}

pub const SPAM_SIEVE: &str = include_str!("../../debian/sieve/report-spam.sieve");
pub const HAM_SIEVE: &str = include_str!("../../debian/sieve/report-ham.sieve");
/// The site's rule of docs/admin/downstream.md, before every user's: bulk
/// copies to a folder, unless they are list mail or were held and
/// released.
pub const DOWNSTREAM_SIEVE: &str = "require [\"fileinto\"];\n\
    if allof (header :matches \"X-Bulkwatch\" \"bulk;*\",\n\
              not header :contains \"X-Bulkwatch\" \"list=yes\",\n\
              not header :contains \"X-Bulkwatch\" \"held=yes\") {\n\
        fileinto \"Bulk\";\n    stop;\n}\n";
pub const PIPE: &str = include_str!("../../debian/sieve/bulkwatch-report");

pub fn dovecot_conf(d: &Path, imap: u16, lmtp: u16, doveadm: u16) -> String {
    let d = d.display();
    format!(
        "base_dir = {d}/dovecot-run\ninstance_name = bw-test-{imap}\nprotocols = imap lmtp\n\
         listen = 127.0.0.1\nlog_path = {d}/dovecot.log\nssl = no\ndisable_plaintext_auth = no\n\
         auth_mechanisms = plain\nfirst_valid_uid = 1\nmail_uid = nobody\nmail_gid = nogroup\n\
         mail_location = maildir:{d}/mail/%u\n\
         passdb {{\n  driver = passwd-file\n  args = {d}/users\n}}\n\
         userdb {{\n  driver = passwd-file\n  args = {d}/users\n  default_fields = uid=nobody gid=nogroup home={d}/mail/%u\n}}\n\
         namespace inbox {{\n  inbox = yes\n  mailbox Junk {{\n    auto = create\n    special_use = \\Junk\n  }}\n}}\n\
         doveadm_api_key = test-key\n\
         service imap-login {{\n  inet_listener imap {{\n    port = {imap}\n  }}\n}}\n\
         service lmtp {{\n  inet_listener lmtp {{\n    address = 127.0.0.1\n    port = {lmtp}\n  }}\n}}\n\
         service doveadm {{\n  inet_listener http {{\n    port = {doveadm}\n  }}\n}}\n\
         protocol imap {{\n  mail_plugins = $mail_plugins imap_sieve\n}}\n\
         protocol lmtp {{\n  mail_plugins = $mail_plugins sieve\n}}\nlda_mailbox_autocreate = yes\n\
         plugin {{\n  sieve_plugins = sieve_imapsieve sieve_extprograms\n\
         imapsieve_mailbox1_name = Junk\n  imapsieve_mailbox1_causes = COPY APPEND\n\
         imapsieve_mailbox1_before = file:{d}/sieve/report-spam.sieve\n\
         imapsieve_mailbox2_name = *\n  imapsieve_mailbox2_from = Junk\n\
         imapsieve_mailbox2_causes = COPY\n\
         imapsieve_mailbox2_before = file:{d}/sieve/report-ham.sieve\n\
         sieve_pipe_bin_dir = {d}/sieve-bin\n  sieve_before = {d}/sieve/downstream.sieve\n\
         sieve_global_extensions = +vnd.dovecot.pipe +vnd.dovecot.environment\n}}\n"
    )
}

pub fn main_cf(d: &Path, lmtp: u16, milter: u16) -> String {
    let d = d.display();
    format!(
        "compatibility_level = 3.6\nqueue_directory = {d}/queue\ndata_directory = {d}/data\n\
         mail_owner = postfix\nmyhostname = mx.test.example\nmydestination =\n\
         relay_domains = example.net\nrelay_transport = lmtp:inet:127.0.0.1:{lmtp}\n\
         mynetworks = 127.0.0.1/32\n\
         smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination\n\
         local_transport = error:local delivery disabled\nalias_maps =\nalias_database =\n\
         inet_interfaces = 127.0.0.1\ninet_protocols = ipv4\nsmtp_dns_support_level = disabled\n\
         smtpd_peername_lookup = no\nmaillog_file = {d}/maillog\nmaillog_file_prefixes = {d}\n\
         smtpd_milters = inet:127.0.0.1:{milter}\nmilter_protocol = 6\n\
         milter_default_action = tempfail\nqueue_run_delay = 2s\nminimal_backoff_time = 2s\n\
         maximal_backoff_time = 4s\n"
    )
}

pub const MASTER_CF: &[&str] = &[
    "pickup unix n - n 60 1 pickup",
    "cleanup unix n - n - 0 cleanup",
    "qmgr unix n - n 300 1 qmgr",
    "rewrite unix - - n - - trivial-rewrite",
    "bounce unix - - n - 0 bounce",
    "defer unix - - n - 0 bounce",
    "trace unix - - n - 0 bounce",
    "verify unix - - n - 1 verify",
    "flush unix n - n 1000? 0 flush",
    "proxymap unix - - n - - proxymap",
    "smtp unix - - n - - smtp",
    "relay unix - - n - - smtp",
    "lmtp unix - - n - - lmtp",
    "showq unix n - n - - showq",
    "error unix - - n - - error",
    "retry unix - - n - - error",
    "discard unix - - n - - discard",
    "local unix - n n - - local",
    "anvil unix - - n - 1 anvil",
    "scache unix - - n - 1 scache",
    "postlog unix-dgram n - n - 1 postlogd",
];

/// A host's daemon configuration: zero-hour on, the rig's doveadm.
pub fn config_text(d: &Path, milter: u16, doveadm: u16, extra: &str) -> String {
    let d = d.display();
    format!(
        "[milter]\nsocket = \"inet:127.0.0.1:{milter}\"\n\n[state]\nstate_dir = \"{d}/state\"\n\n\
         [metrics]\nlisten = \"\"\n\n[thresholds]\nbulk_threshold = 20.0\nsuspect_threshold = 10.0\n\n\
         [own]\nnetworks = []\n\n[policy]\nsuspect = \"tag\"\nbulk = \"reject\"\n\n\
         [zero_hour]\nenabled = true\ndoveadm_url = \"http://127.0.0.1:{doveadm}/doveadm/v1\"\n\
         doveadm_key_file = \"{d}/../doveadm.key\"\nreport_socket = \"{d}/report.sock\"\n\
         report_group = \"nogroup\"\n{extra}"
    )
}

pub fn start_daemon(config: &Path, log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["serve", "--config"])
        .arg(config)
        .env("RUST_LOG", "info")
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Dovecot with `hosts` hosts, each configured with `extra` after its
/// `[zero_hour]` keys (more keys of that section, then other sections).
pub fn rig_of(hosts: usize, extra: &str) -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    for d in ["mail", "sieve", "sieve-bin", "bin"] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    run(Command::new("chown")
        .arg("nobody:nogroup")
        .arg(dir.join("mail")));
    let users: String = (0..USERS)
        .map(|i| format!("{}:{{PLAIN}}pw::::::\n", user(i)))
        .collect();
    fs::write(dir.join("users"), users).unwrap();
    fs::write(dir.join("doveadm.key"), "test-key\n").unwrap();
    // The sieve scripts and their pipe program, as the package ships them,
    // run by Dovecot as the mail user: the binary is copied where that
    // user can run it (the build directory may be mode 0700).
    fs::write(dir.join("sieve/report-spam.sieve"), SPAM_SIEVE).unwrap();
    fs::write(dir.join("sieve/report-ham.sieve"), HAM_SIEVE).unwrap();
    fs::write(dir.join("sieve/downstream.sieve"), DOWNSTREAM_SIEVE).unwrap();
    fs::copy(env!("CARGO_BIN_EXE_bulkwatch"), dir.join("bin/bulkwatch")).unwrap();
    let pipe = dir.join("sieve-bin/bulkwatch-report");
    fs::write(
        &pipe,
        PIPE.replace(
            "/usr/bin/bulkwatch",
            &format!("{}/bin/bulkwatch", dir.display()),
        )
        .replace(
            "/run/bulkwatch/report.sock",
            &format!("{}/host0/report.sock", dir.display()),
        ),
    )
    .unwrap();
    fs::set_permissions(&pipe, fs::Permissions::from_mode(0o755)).unwrap();
    let (imap, lmtp, doveadm) = (free_port(), free_port(), free_port());
    let conf = dir.join("dovecot.conf");
    fs::write(&conf, dovecot_conf(&dir, imap, lmtp, doveadm)).unwrap();
    for s in ["report-spam", "report-ham", "downstream"] {
        run(Command::new("/usr/bin/sievec")
            .arg("-c")
            .arg(&conf)
            .arg(dir.join(format!("sieve/{s}.sieve"))));
    }
    let mut rig = Rig {
        hosts: Vec::new(),
        dir: dir.clone(),
        imap_port: imap,
        dovecot_up: false,
        _tmp: tmp,
    };
    // (Its master goes to the background holding whatever output it was
    // given: none, or `output()` would wait for it.)
    let started = Command::new("/usr/sbin/dovecot")
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    rig.dovecot_up = started.success();
    assert!(
        started.success(),
        "dovecot did not start\n{}",
        rig.dovecot_log()
    );
    wait_for(
        "dovecot",
        30,
        || TcpStream::connect(("127.0.0.1", imap)).is_ok(),
        || rig.dovecot_log(),
    );
    for n in 0..hosts {
        let h = host(&dir.join(format!("host{n}")), lmtp, doveadm, extra);
        rig.hosts.push(h);
    }
    rig
}

pub fn rig(extra: &str) -> Rig {
    rig_of(1, extra)
}

/// A Postfix delivering over LMTP on `lmtp`, and its bulkwatch.
pub fn host(dir: &Path, lmtp: u16, doveadm: u16, extra: &str) -> Host {
    for d in ["conf", "queue", "data"] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    run(Command::new("chown").arg("postfix").arg(dir.join("data")));
    let (smtp, milter) = (free_port(), free_port());
    let bw_config = dir.join("bulkwatch.toml");
    fs::write(&bw_config, config_text(dir, milter, doveadm, extra)).unwrap();
    let bw_log = dir.join("bulkwatch.log");
    let daemon = start_daemon(&bw_config, &bw_log);
    let mut h = Host {
        dir: dir.to_owned(),
        smtp_port: smtp,
        bw_config,
        bw_log,
        daemon,
        postfix_up: false,
    };
    wait_for(
        "bulkwatch to serve",
        60,
        || h.log().contains("bulkwatch serving"),
        || h.log(),
    );
    fs::write(dir.join("conf/main.cf"), main_cf(dir, lmtp, milter)).unwrap();
    let mut services = vec![format!("127.0.0.1:{smtp} inet n - n - - smtpd")];
    services.extend(MASTER_CF.iter().map(|s| (*s).to_owned()));
    fs::write(dir.join("conf/master.cf"), services.join("\n") + "\n").unwrap();
    run(Command::new("/usr/sbin/postfix")
        .arg("-c")
        .arg(dir.join("conf"))
        .arg("start"));
    h.postfix_up = true;
    wait_for(
        "postfix",
        30,
        || TcpStream::connect(("127.0.0.1", smtp)).is_ok(),
        || h.maillog(),
    );
    h
}

impl Host {
    pub fn log(&self) -> String {
        fs::read_to_string(&self.bw_log).unwrap_or_default()
    }

    pub fn maillog(&self) -> String {
        fs::read_to_string(self.dir.join("maillog")).unwrap_or_default()
    }

    /// Stops the daemon (SIGTERM, as a service manager does) and starts
    /// it again on the same configuration, its log appended to.
    pub fn restart(&mut self) {
        run(Command::new("kill").args(["-TERM", &self.daemon.id().to_string()]));
        let _ = self.daemon.wait();
        let before = self.log().matches("bulkwatch serving").count();
        let log = fs::OpenOptions::new()
            .append(true)
            .open(&self.bw_log)
            .unwrap();
        self.daemon = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
            .args(["serve", "--config"])
            .arg(&self.bw_config)
            .env("RUST_LOG", "info")
            .env_remove("NOTIFY_SOCKET")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_for(
            "bulkwatch to serve again",
            60,
            || self.log().matches("bulkwatch serving").count() > before,
            || self.log(),
        );
    }

    /// Sends one message over SMTP; `Err` holds the refusal.
    pub fn send(&self, from: &str, rcpts: &[String], raw: &str) -> Result<(), String> {
        smtp(self.smtp_port, from, rcpts, raw)
    }

    pub fn bulkwatch(&self, args: &[&str]) -> String {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bulkwatch"));
        c.args(args).arg("--config").arg(&self.bw_config);
        run(&mut c)
    }
}

impl Rig {
    pub fn dovecot_log(&self) -> String {
        fs::read_to_string(self.dir.join("dovecot.log")).unwrap_or_default()
    }

    pub fn all_logs(&self) -> String {
        let mut out = String::new();
        for (n, h) in self.hosts.iter().enumerate() {
            out.push_str(&format!(
                "--- bulkwatch {n}\n{}\n--- postfix {n}\n{}\n",
                h.log(),
                h.maillog()
            ));
        }
        out + "--- dovecot\n" + &self.dovecot_log()
    }

    /// The messages in a user's mailbox (`INBOX` or `Junk`), read from the
    /// maildir.
    pub fn mailbox(&self, i: usize, name: &str) -> Vec<String> {
        let base = self.dir.join("mail").join(user(i));
        let base = if name == "INBOX" {
            base
        } else {
            base.join(format!(".{name}"))
        };
        let mut out = Vec::new();
        for sub in ["new", "cur"] {
            if let Ok(rd) = fs::read_dir(base.join(sub)) {
                for e in rd.flatten() {
                    if let Ok(t) = fs::read_to_string(e.path()) {
                        out.push(t);
                    }
                }
            }
        }
        out
    }

    /// Subjects in a user's mailbox, sorted.
    pub fn subjects(&self, i: usize, name: &str) -> Vec<String> {
        let mut s: Vec<String> = self
            .mailbox(i, name)
            .iter()
            .filter_map(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("Subject: "))
                    .map(str::to_owned)
            })
            .collect();
        s.sort();
        s
    }
}

/// One SMTP transaction spoken by hand; `Err` holds the server's refusal.
pub fn smtp(port: u16, from: &str, rcpts: &[String], raw: &str) -> Result<(), String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut out = stream.try_clone().map_err(|e| e.to_string())?;
    let mut input = BufReader::new(stream);
    let mut expect = |cmd: &str, code: char| -> Result<(), String> {
        if !cmd.is_empty() {
            out.write_all(cmd.as_bytes()).map_err(|e| e.to_string())?;
        }
        let mut all = String::new();
        loop {
            let mut line = String::new();
            if input.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("connection closed after {all:?}"));
            }
            all.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                break;
            }
        }
        if all.starts_with(code) {
            Ok(())
        } else {
            Err(format!("{}: {}", cmd.trim(), all.trim()))
        }
    };
    expect("", '2')?;
    expect("EHLO client.test\r\n", '2')?;
    expect(&format!("MAIL FROM:<{from}>\r\n"), '2')?;
    for r in rcpts {
        expect(&format!("RCPT TO:<{r}>\r\n"), '2')?;
    }
    expect("DATA\r\n", '3')?;
    let mut data = String::new();
    for line in raw.split("\r\n") {
        if line.starts_with('.') {
            data.push('.');
        }
        data.push_str(line);
        data.push_str("\r\n");
    }
    data.push_str(".\r\n");
    expect(&data, '2')?;
    let _ = out.write_all(b"QUIT\r\n");
    Ok(())
}

/// A user's IMAP session, spoken by hand: what a mail client does when
/// its user presses the Junk button (MOVE), or takes a message out of Junk.
pub struct Imap {
    pub out: TcpStream,
    pub input: BufReader<TcpStream>,
    pub n: u32,
}

impl Imap {
    pub fn login(port: u16, who: &str) -> Imap {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut input = BufReader::new(stream.try_clone().unwrap());
        let mut greeting = String::new();
        input.read_line(&mut greeting).unwrap();
        assert!(greeting.starts_with("* OK"), "{greeting}");
        let mut s = Imap {
            out: stream,
            input,
            n: 0,
        };
        s.cmd(&format!("LOGIN \"{who}\" \"pw\""));
        s
    }

    /// Sends a command; its untagged lines (the tagged line must be OK).
    pub fn cmd(&mut self, c: &str) -> Vec<String> {
        self.n += 1;
        let tag = format!("t{}", self.n);
        self.out
            .write_all(format!("{tag} {c}\r\n").as_bytes())
            .unwrap();
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                self.input.read_line(&mut line).unwrap() > 0,
                "closed after {c}"
            );
            if let Some(rest) = line.strip_prefix(&format!("{tag} ")) {
                assert!(rest.starts_with("OK"), "{c}: {rest}");
                return lines;
            }
            lines.push(line);
        }
    }

    /// Moves the messages of `from` whose subject holds `subject` to `to`.
    pub fn move_subject(&mut self, from: &str, subject: &str, to: &str) {
        self.cmd(&format!("SELECT {from}"));
        let found = self.cmd(&format!("UID SEARCH SUBJECT \"{subject}\""));
        let uids: Vec<String> = found
            .iter()
            .filter_map(|l| l.strip_prefix("* SEARCH"))
            .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .collect();
        assert!(!uids.is_empty(), "no message {subject:?} in {from}");
        self.cmd(&format!("UID MOVE {} {to}", uids.join(",")));
    }
}

pub fn delivered(
    r: &Rig,
    users: impl Iterator<Item = usize>,
    mailbox: &str,
    subject: &str,
) -> bool {
    let users: Vec<usize> = users.collect();
    users.iter().all(|i| {
        r.subjects(*i, mailbox)
            .iter()
            .any(|s| s.starts_with(subject))
    })
}

/// The campaign id of the bulk verdicts in the daemon's log.
pub fn bulk_campaign(log: &str) -> String {
    log.lines()
        .filter(|l| l.contains("level=\"bulk\""))
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("campaign="))
                .map(|c| c.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("no bulk verdict in\n{log}"))
}
