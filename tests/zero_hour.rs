//! Zero hour through a real Postfix and a real Dovecot: a private Postfix
//! whose milter is `bulkwatch serve` delivers over LMTP to a private
//! Dovecot (its own configuration, ports and mail directory), whose
//! doveadm HTTP API zero-hour uses, and whose IMAPSieve runs `bulkwatch
//! report` when a user moves a message into or out of Junk (the sieve
//! scripts the package ships, `debian/sieve`). The users' moves are made
//! by an IMAP client spoken by hand here.
//!
//! Needs root, Postfix and Dovecot (imapd, lmtpd, sieve); ignored, with
//! the reason, otherwise.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn run(cmd: &mut Command) -> String {
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
fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool, detail: impl Fn() -> String) {
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
const USERS: usize = 30;

fn user(i: usize) -> String {
    format!("u{i}@example.net")
}

/// A host: a Postfix and its bulkwatch, delivering to the rig's Dovecot.
struct Host {
    dir: PathBuf,
    smtp_port: u16,
    bw_config: PathBuf,
    bw_log: PathBuf,
    daemon: Child,
    postfix_up: bool,
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
struct Rig {
    hosts: Vec<Host>,
    dir: PathBuf,
    imap_port: u16,
    dovecot_up: bool,
    _tmp: tempfile::TempDir,
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

const SPAM_SIEVE: &str = include_str!("../debian/sieve/report-spam.sieve");
const HAM_SIEVE: &str = include_str!("../debian/sieve/report-ham.sieve");
/// The site's rule of docs/admin/downstream.md, before every user's: bulk
/// copies to a folder, unless they are list mail or were held and
/// released.
const DOWNSTREAM_SIEVE: &str = "require [\"fileinto\"];\n\
    if allof (header :matches \"X-Bulkwatch\" \"bulk;*\",\n\
              not header :contains \"X-Bulkwatch\" \"list=yes\",\n\
              not header :contains \"X-Bulkwatch\" \"held=yes\") {\n\
        fileinto \"Bulk\";\n    stop;\n}\n";
const PIPE: &str = include_str!("../debian/sieve/bulkwatch-report");

fn dovecot_conf(d: &Path, imap: u16, lmtp: u16, doveadm: u16) -> String {
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

fn main_cf(d: &Path, lmtp: u16, milter: u16) -> String {
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

const MASTER_CF: &[&str] = &[
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
fn config_text(d: &Path, milter: u16, doveadm: u16, extra: &str) -> String {
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

fn start_daemon(config: &Path, log: &Path) -> Child {
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
fn rig_of(hosts: usize, extra: &str) -> Rig {
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

fn rig(extra: &str) -> Rig {
    rig_of(1, extra)
}

/// A Postfix delivering over LMTP on `lmtp`, and its bulkwatch.
fn host(dir: &Path, lmtp: u16, doveadm: u16, extra: &str) -> Host {
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
    fn log(&self) -> String {
        fs::read_to_string(&self.bw_log).unwrap_or_default()
    }

    fn maillog(&self) -> String {
        fs::read_to_string(self.dir.join("maillog")).unwrap_or_default()
    }

    /// Sends one message over SMTP; `Err` holds the refusal.
    fn send(&self, from: &str, rcpts: &[String], raw: &str) -> Result<(), String> {
        smtp(self.smtp_port, from, rcpts, raw)
    }

    fn bulkwatch(&self, args: &[&str]) -> String {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bulkwatch"));
        c.args(args).arg("--config").arg(&self.bw_config);
        run(&mut c)
    }
}

impl Rig {
    fn dovecot_log(&self) -> String {
        fs::read_to_string(self.dir.join("dovecot.log")).unwrap_or_default()
    }

    fn all_logs(&self) -> String {
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
    fn mailbox(&self, i: usize, name: &str) -> Vec<String> {
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
    fn subjects(&self, i: usize, name: &str) -> Vec<String> {
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
fn smtp(port: u16, from: &str, rcpts: &[String], raw: &str) -> Result<(), String> {
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
struct Imap {
    out: TcpStream,
    input: BufReader<TcpStream>,
    n: u32,
}

impl Imap {
    fn login(port: u16, who: &str) -> Imap {
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
    fn cmd(&mut self, c: &str) -> Vec<String> {
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
    fn move_subject(&mut self, from: &str, subject: &str, to: &str) {
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

/// Copy `i` of a phishing campaign: per-recipient name, link and
/// reference, from its own sender domain.
fn campaign_copy(i: usize) -> (String, String) {
    let from = format!("billing@pay{i}.example");
    let raw = format!(
        "From: Billing <{from}>\r\nTo: {to}\r\nSubject: Invoice overdue {i}\r\n\
         Message-ID: <inv{i}@pay{i}.example>\r\n\r\n\
         Dear customer u{i},\r\n\r\nyour mailbox storage plan expires today and incoming \
         messages will be held until the account is verified. Confirm your password at \
         https://verify{i}.example/login?id={i} within twenty four hours to keep your mail, \
         your contacts and your shared calendars. Reference number {i}{i}{i}.\r\n\r\n\
         Thank you for choosing our service,\r\nThe Accounts Team\r\n",
        to = user(i)
    );
    (from, raw)
}

/// A newsletter post to every user in one transaction, and a personal
/// note to each: the ordinary mail that must stay where it is.
fn ordinary_mail(r: &Rig) {
    let all: Vec<String> = (0..USERS).map(user).collect();
    let letter = "From: News <news@club.example>\r\nTo: members@club.example\r\n\
        Subject: Club newsletter\r\nList-Id: <news.club.example>\r\n\
        Message-ID: <letter@club.example>\r\n\r\nDear members,\r\n\r\nthe spring meeting is on \
        the third saturday of march in the old library; bring your reports and the photos of \
        the autumn walk. The committee thanks everyone who helped with the garden.\r\n";
    r.send("news@club.example", &all, letter)
        .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    // Each note its own words: personal mail shares no text.
    const WORDS: &[&str] = &[
        "garden",
        "tomatoes",
        "frost",
        "budget",
        "thursday",
        "finance",
        "lyon",
        "maps",
        "hike",
        "tickets",
        "kitchen",
        "train",
        "bakery",
        "corner",
        "piano",
        "lesson",
        "cousin",
        "wedding",
        "harbour",
        "ferry",
        "museum",
        "painting",
        "bicycle",
        "repair",
        "invoice",
        "plumber",
        "roof",
        "gutter",
        "recipe",
        "lemon",
        "cake",
        "birthday",
        "hospital",
        "visit",
        "grandma",
        "football",
        "match",
        "tuesday",
        "library",
        "novel",
        "chapter",
        "holiday",
        "mountains",
        "cabin",
        "firewood",
        "dentist",
        "appointment",
        "moving",
        "boxes",
        "neighbour",
        "dog",
        "walk",
        "river",
        "bridge",
        "concert",
        "violin",
        "rehearsal",
        "school",
        "report",
        "exam",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..USERS {
        let words: Vec<&str> = (0..40)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                WORDS[(seed >> 33) as usize % WORDS.len()]
            })
            .collect();
        let note = format!(
            "From: friend{i}@home{i}.example\r\nTo: {u}\r\nSubject: Note for u{i}\r\n\
             Message-ID: <note{i}@home{i}.example>\r\n\r\nHi,\r\n\r\n{}.\r\n",
            words.join(" "),
            u = user(i),
        );
        r.send(&format!("friend{i}@home{i}.example"), &[user(i)], &note)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
}

fn delivered(r: &Rig, users: impl Iterator<Item = usize>, mailbox: &str, subject: &str) -> bool {
    let users: Vec<usize> = users.collect();
    users.iter().all(|i| {
        r.subjects(*i, mailbox)
            .iter()
            .any(|s| s.starts_with(subject))
    })
}

/// The campaign id of the bulk verdicts in the daemon's log.
fn bulk_campaign(log: &str) -> String {
    log.lines()
        .filter(|l| l.contains("level=\"bulk\""))
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("campaign="))
                .map(|c| c.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("no bulk verdict in\n{log}"))
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn copies_delivered_before_the_campaign_turned_bulk_go_to_junk_and_come_back_when_allowed() {
    let r = rig("");
    ordinary_mail(&r);
    wait_for(
        "ordinary mail",
        60,
        || delivered(&r, 0..USERS, "INBOX", "Note"),
        || r.all_logs(),
    );
    // Copies until the first refusal: the campaign turned bulk there.
    let mut sent = 0;
    while sent < USERS {
        let (from, raw) = campaign_copy(sent);
        match r.send(&from, &[user(sent)], &raw) {
            Ok(()) => sent += 1,
            Err(e) => {
                assert!(e.contains("550"), "{e}");
                break;
            }
        }
    }
    assert!(
        (10..USERS).contains(&sent),
        "{sent} copies delivered\n{}",
        r.all_logs()
    );
    // Within 60 s every delivered copy is in its recipient's Junk.
    wait_for(
        "the delivered copies in Junk",
        60,
        || delivered(&r, 0..sent, "Junk", "Invoice overdue"),
        || r.all_logs(),
    );
    // Nothing else moved: the newsletter and the notes are in the inboxes,
    // Junk holds the copy alone.
    for i in 0..USERS {
        let want_junk: Vec<String> = if i < sent {
            vec![format!("Invoice overdue {i}")]
        } else {
            vec![]
        };
        assert_eq!(r.subjects(i, "Junk"), want_junk, "{}", user(i));
        assert_eq!(
            r.subjects(i, "INBOX"),
            ["Club newsletter".to_owned(), format!("Note for u{i}")],
            "{}",
            user(i)
        );
    }
    let log = r.log();
    assert!(log.contains("zero-hour: copy moved to junk"), "{log}");
    // An allowance moves them back.
    let id = bulk_campaign(&log);
    r.bulkwatch(&["campaigns", "allow", &id]);
    wait_for(
        "the copies back in the inbox",
        60,
        || {
            delivered(&r, 0..sent, "INBOX", "Invoice overdue")
                && (0..sent).all(|i| r.subjects(i, "Junk").is_empty())
        },
        || r.all_logs(),
    );
    assert!(r.log().contains("zero-hour: copy moved back"));
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn the_junk_button_reports_by_distinct_recipients_and_one_user_alone_changes_nothing() {
    // Counts alone would not make this campaign bulk: only reports do.
    let r = rig("reporters = 3\n");
    let raise = fs::read_to_string(&r.bw_config)
        .unwrap()
        .replace("bulk_threshold = 20.0", "bulk_threshold = 200.0")
        .replace("suspect_threshold = 10.0", "suspect_threshold = 100.0");
    fs::write(&r.bw_config, raise).unwrap();
    run(Command::new("kill").args(["-HUP", &r.daemon.id().to_string()]));
    wait_for(
        "reload",
        30,
        || r.log().contains("configuration reloaded"),
        || r.log(),
    );
    // A colleague's thread to four users, and eight copies of a campaign.
    let team: Vec<String> = (20..24).map(user).collect();
    let thread = "From: Marco <marco@supplier.example>\r\nTo: team@example.net\r\n\
        Subject: Order Q3\r\nMessage-ID: <order@supplier.example>\r\n\r\nHello all,\r\n\r\n\
        please find below the confirmation of your order for the third quarter: forty units \
        of the R7 controller and twelve spare power supplies, delivered to Verona on the \
        fourteenth. Invoices follow the usual terms.\r\n";
    r.send("marco@supplier.example", &team, thread).unwrap();
    for i in 0..8 {
        let (from, raw) = campaign_copy(i);
        r.send(&from, &[user(i)], &raw)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
    wait_for(
        "delivery",
        60,
        || delivered(&r, 0..8, "INBOX", "Invoice") && delivered(&r, 20..24, "INBOX", "Order Q3"),
        || r.all_logs(),
    );

    // One user reports the thread, ten times: nothing changes for the others.
    for _ in 0..2 {
        let mut s = Imap::login(r.imap_port, &user(20));
        s.move_subject("INBOX", "Order Q3", "Junk");
        s.move_subject("Junk", "Order Q3", "INBOX");
    }
    let mut s = Imap::login(r.imap_port, &user(20));
    s.move_subject("INBOX", "Order Q3", "Junk");
    wait_for(
        "the report",
        30,
        || r.log().contains("reported spam by a recipient"),
        || r.all_logs(),
    );
    wait_for(
        "the thread's reports",
        30,
        || r.log().matches("reported spam by a recipient").count() >= 3,
        || r.all_logs(),
    );
    // The thread goes on for the others: Marco sends it again to two more.
    let more: Vec<String> = (24..26).map(user).collect();
    r.send(
        "marco@supplier.example",
        &more,
        &thread.replace("<order@", "<order2@"),
    )
    .unwrap_or_else(|e| panic!("one user's reports refused a colleague's thread: {e}"));
    // Two users report the campaign, one of them over and over: not yet
    // three reporters.
    for _ in 0..2 {
        let mut s = Imap::login(r.imap_port, &user(0));
        s.move_subject("INBOX", "Invoice", "Junk");
        s.move_subject("Junk", "Invoice", "INBOX");
    }
    for i in 0..2 {
        Imap::login(r.imap_port, &user(i)).move_subject("INBOX", "Invoice", "Junk");
    }
    wait_for(
        "the campaign's reports",
        30,
        || r.log().matches("reported spam by a recipient").count() >= 7,
        || r.all_logs(),
    );
    assert!(
        delivered(&r, 2..8, "INBOX", "Invoice"),
        "two reporters moved nothing\n{}",
        r.all_logs()
    );
    // A user who got no copy cannot report it: the header proves who got it.
    let copy = r.mailbox(0, "Junk").pop().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["report", "spam", "--user", &user(25), "--socket"])
        .arg(r.dir.join("report.sock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(copy.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        !out.status.success(),
        "a report from a user who got no copy was taken"
    );
    // The third recipient: the campaign is bulk; every delivered copy goes
    // to Junk, and the next copy is refused.
    Imap::login(r.imap_port, &user(2)).move_subject("INBOX", "Invoice", "Junk");
    wait_for(
        "the other copies in Junk",
        60,
        || delivered(&r, 0..8, "Junk", "Invoice"),
        || r.all_logs(),
    );
    let (from, raw) = campaign_copy(9);
    let refused = r.send(&from, &[user(9)], &raw);
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("550")),
        "{refused:?}"
    );
    // The colleague's thread stayed with the others.
    assert!(
        delivered(&r, 21..24, "INBOX", "Order Q3"),
        "{}",
        r.all_logs()
    );
    // A move out of Junk reports ham: that user's later copies pass.
    Imap::login(r.imap_port, &user(5)).move_subject("Junk", "Invoice", "INBOX");
    wait_for(
        "the ham report",
        30,
        || r.log().contains("reported ham by a recipient"),
        || r.all_logs(),
    );
    let (from, raw) = campaign_copy(5);
    r.send(&from, &[user(5)], &raw.replace("inv5@", "inv5b@"))
        .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    let (from, raw) = campaign_copy(10);
    assert!(
        r.send(&from, &[user(10)], &raw).is_err(),
        "others' copies are still refused"
    );
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_redis, bulkwatch_root)),
    ignore = "needs root, Postfix, Dovecot and redis-server (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve redis-server)"
)]
#[test]
fn two_hosts_on_one_redis_act_once_per_copy() {
    let server = common::redis::RedisServer::start();
    let r = rig_of(
        2,
        &format!(
            "\n[store]\nbackend = \"redis\"\n\n[store.redis]\nurls = [\"{}\"]\nkey_prefix = \"zero-hour\"\n",
            server.url()
        ),
    );
    // Copies go in through both hosts, turn about, until one refuses.
    let mut by_host = [0usize; 2];
    let mut sent = 0;
    while sent < USERS {
        let (from, raw) = campaign_copy(sent);
        match r.hosts[sent % 2].send(&from, &[user(sent)], &raw) {
            Ok(()) => {
                by_host[sent % 2] += 1;
                sent += 1;
            }
            Err(e) => {
                assert!(e.contains("550"), "{e}");
                break;
            }
        }
    }
    assert!(
        (10..USERS).contains(&sent),
        "{sent} copies delivered\n{}",
        r.all_logs()
    );
    wait_for(
        "every delivered copy in Junk",
        60,
        || delivered(&r, 0..sent, "Junk", "Invoice overdue"),
        || r.all_logs(),
    );
    // Each host moved the copies it delivered, the host whose message did
    // not make the campaign bulk included; each copy was moved once.
    for (n, h) in r.hosts.iter().enumerate() {
        let moved = h.log().matches("zero-hour: copy moved to junk").count();
        assert_eq!(moved, by_host[n], "host {n}\n{}", r.all_logs());
    }
    let dovecot = r.dovecot_log();
    for i in 0..sent {
        let moves = dovecot
            .matches(&format!("Executing command 'move' as '{}'", user(i)))
            .count();
        assert_eq!(moves, 1, "{}\n{dovecot}", user(i));
    }
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn a_campaigns_held_copies_released_in_one_command_reach_the_inbox_not_the_bulk_folder() {
    let r = rig("");
    let held = fs::read_to_string(&r.bw_config)
        .unwrap()
        .replace("bulk = \"reject\"", "bulk = \"quarantine\"");
    fs::write(&r.bw_config, held).unwrap();
    run(Command::new("kill").args(["-HUP", &r.daemon.id().to_string()]));
    wait_for(
        "reload",
        30,
        || r.log().contains("configuration reloaded"),
        || r.log(),
    );
    for i in 0..USERS {
        let (from, raw) = campaign_copy(i);
        r.send(&from, &[user(i)], &raw)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
    let log = r.log();
    let id = bulk_campaign(&log);
    let held: Vec<usize> = (0..USERS)
        .filter(|i| {
            log.lines().any(|l| {
                l.contains(&format!("inv{i}@pay{i}.example")) && l.contains("action=\"quarantine\"")
            })
        })
        .collect();
    assert!(held.len() >= 5, "{held:?}\n{log}");
    let conf = r.hosts[0].dir.join("conf");
    let conf = conf.to_str().unwrap();
    wait_for(
        "the held copies in the hold queue",
        60,
        || {
            r.bulkwatch(&["campaigns", "held", &id, "--postfix-config", conf])
                .lines()
                .count()
                >= held.len()
        },
        || r.all_logs(),
    );
    r.bulkwatch(&["campaigns", "release", &id, "--postfix-config", conf]);
    wait_for(
        "the released copies delivered",
        60,
        || delivered(&r, held.iter().copied(), "INBOX", "Invoice overdue"),
        || r.all_logs(),
    );
    for i in &held {
        assert!(
            r.subjects(*i, "Bulk").is_empty(),
            "{}: filed as bulk",
            user(*i)
        );
        let copy = r
            .mailbox(*i, "INBOX")
            .into_iter()
            .find(|m| m.contains("Invoice overdue"))
            .unwrap();
        assert!(copy.contains("held=yes"), "{copy}");
    }
}
