//! A compressed day for several MX hosts: a synthetic stream sent over the
//! milter protocol to several `bulkwatch serve` hosts that share one Redis
//! (or a Redis Cluster), as fast as they take it, campaigns spread over the
//! hosts. Driven by `benches/day.sh`, which starts Redis and the hosts and
//! samples their memory and CPU; this program sends the mail and reports
//! what the hosts answered.
//!
//! The stream: one-off messages (distinct texts from a 12,000-word
//! vocabulary) and campaigns (`--campaigns` texts, their sizes spread as
//! 1/rank, each copy with its own greeting, inserted words and tracking
//! link, its own recipient), `--campaign-share` of the mail. Each message
//! goes to a host drawn at random, on one of `--conns` connections per
//! host, many messages a connection as Postfix sends them.
//!
//! What it reports (JSON on stdout, progress on stderr):
//! - every transaction's outcome: answered with a header, answered without
//!   (clean mail under `policy.clean = "none"`), refused or tempfailed,
//!   or failed (connection error): mail a real MTA would have had to retry;
//! - the end-of-message latency (MAIL to EOM reply), p50, p99, p99.9 and
//!   the largest, overall and in the seconds after `--kill-at`;
//! - per campaign, the campaign ids the hosts gave its copies: how many
//!   campaigns got one id on every host, and how many copies were bulk;
//! - probes: every `--probe-every` messages a fresh text goes to each host
//!   in turn, one copy at a time, each sent as soon as the last was
//!   answered; a host that sees the copies the others answered before
//!   reports `size=` one more than the last: the lag between hosts is then
//!   under one message.
//!
//! With `--kill-at F --kill-cmd CMD`, CMD runs (sh -c) when the fraction F
//! of the stream has been handed out: the Redis master killed mid-run.
//!
//! `cargo run --release --example day -- --hosts 127.0.0.1:7401,127.0.0.1:7402 --messages 100000`

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use indymilter_test::{EomAction, MacroStage, Status, TestConnection};
use testkit::Rng;

struct Args {
    hosts: Vec<SocketAddr>,
    messages: u64,
    conns: usize,
    campaigns: u64,
    campaign_share: f64,
    probe_every: u64,
    kill_at: Option<f64>,
    kill_cmd: String,
    seed: u64,
    mbox: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        hosts: Vec::new(),
        messages: 100_000,
        conns: 4,
        campaigns: 400,
        campaign_share: 0.4,
        probe_every: 5_000,
        kill_at: None,
        kill_cmd: String::new(),
        seed: 1,
        mbox: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--hosts" => {
                for h in v.split(',') {
                    a.hosts.push(h.parse().map_err(|e| bad(&e))?);
                }
            }
            "--messages" => a.messages = v.parse().map_err(|e| bad(&e))?,
            "--conns" => a.conns = v.parse().map_err(|e| bad(&e))?,
            "--campaigns" => a.campaigns = v.parse().map_err(|e| bad(&e))?,
            "--campaign-share" => a.campaign_share = v.parse().map_err(|e| bad(&e))?,
            "--probe-every" => a.probe_every = v.parse().map_err(|e| bad(&e))?,
            "--kill-at" => a.kill_at = Some(v.parse().map_err(|e| bad(&e))?),
            "--kill-cmd" => a.kill_cmd = v,
            "--seed" => a.seed = v.parse().map_err(|e| bad(&e))?,
            "--mbox" => a.mbox = Some(v),
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if (a.hosts.is_empty() && a.mbox.is_none()) || a.campaigns == 0 || a.conns == 0 {
        return Err("--hosts, --campaigns and --conns must not be empty or 0".into());
    }
    Ok(a)
}

/// The `i`th word of the vocabulary: three syllables of 20 × 20 × 30.
fn word(i: u64) -> String {
    const A: [&str; 20] = [
        "ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "qui", "ro", "su",
        "ta", "ve", "wi", "xo", "ze",
    ];
    const B: [&str; 30] = [
        "n", "r", "l", "s", "t", "m", "nd", "rk", "st", "ll", "sh", "ng", "ck", "x", "v", "rt",
        "lm", "nt", "ph", "th", "p", "d", "g", "b", "z", "f", "k", "w", "y", "c",
    ];
    let i = i % 12_000;
    format!(
        "{}{}{}",
        A[(i % 20) as usize],
        A[(i / 20 % 20) as usize],
        B[(i / 400) as usize]
    )
}

/// A generator state for stream `b` under seed `a`, mixed: SplitMix64
/// steps its state by a constant, so states that differ by a multiple of
/// it (as `c * 0x9E37_79B9_7F4A_7C15` would) give the same words shifted,
/// and campaigns that join.
fn seed_of(a: u64, b: u64) -> Rng {
    let mixed = a.rotate_left(17) ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    Rng::new(Rng::new(mixed).next_u64())
}

fn words(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n).map(|_| word(rng.next_u64())).collect()
}

/// Words as sentences of 6 to 14 words, capitalised, with full stops.
fn prose(ws: &[String], rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut left = 0;
    for w in ws {
        if left == 0 {
            if !out.is_empty() {
                out.push_str(".\n");
            }
            left = rng.range(6, 14);
            let mut c = w.chars();
            out.extend(c.next().map(|f| f.to_ascii_uppercase()));
            out.push_str(c.as_str());
        } else {
            out.push(' ');
            out.push_str(w);
        }
        left -= 1;
    }
    out.push_str(".\n");
    out
}

struct Msg {
    from: String,
    rcpt: String,
    headers: Vec<(&'static str, String)>,
    body: String,
    campaign: Option<u64>,
}

/// The campaign of message `i`, or `None` for a one-off: campaign `c` of
/// `n` is drawn with weight 1/(c+1).
fn campaign_of(rng: &mut Rng, a: &Args, harmonic: f64) -> Option<u64> {
    if !rng.chance(a.campaign_share) {
        return None;
    }
    let mut t = rng.unit() * harmonic;
    for c in 0..a.campaigns {
        t -= 1.0 / (c + 1) as f64;
        if t <= 0.0 {
            return Some(c);
        }
    }
    Some(a.campaigns - 1)
}

fn message(i: u64, a: &Args, harmonic: f64) -> Msg {
    let mut rng = seed_of(a.seed, i);
    let rcpt = format!("user{i}@site.example");
    let campaign = campaign_of(&mut rng, a, harmonic);
    let (from, subject, body) = match campaign {
        Some(c) => campaign_copy(c, a.seed, &mut rng),
        None => {
            let n = rng.range(40, 119);
            let ws = words(&mut rng, n);
            let subject = words(&mut rng, 4).join(" ");
            let from = format!("{}@{}.example", word(rng.next_u64()), word(i % 5_000));
            (from, subject, prose(&ws, &mut rng))
        }
    };
    let headers = vec![
        ("From", format!("<{from}>")),
        ("To", format!("<{rcpt}>")),
        ("Subject", subject),
        ("Message-ID", format!("<day.{i}.{}@day.example>", a.seed)),
        ("Date", "Sun, 29 Nov 2026 12:00:00 +0000".into()),
        ("MIME-Version", "1.0".into()),
        ("Content-Type", "text/plain; charset=utf-8".into()),
    ];
    Msg {
        from,
        rcpt,
        headers,
        body,
        campaign,
    }
}

/// A copy of campaign `c`: its text, a greeting, 2 to 5 words inserted at
/// random and a tracking link of its own.
fn campaign_copy(c: u64, seed: u64, rng: &mut Rng) -> (String, String, String) {
    let mut text = seed_of(seed ^ 0xC0FFEE, c);
    let n = text.range(50, 99);
    let mut ws = words(&mut text, n);
    let subject = words(&mut text, 5).join(" ");
    for _ in 0..rng.range(2, 5) {
        let at = rng.below(ws.len());
        ws.insert(at, word(rng.next_u64()));
    }
    let greeting = format!("Dear {},\n\n", word(rng.next_u64()));
    let link = format!("\nhttps://t{c}.example/c/{:x}\n", rng.next_u64());
    let body = greeting + &prose(&ws, &mut text) + &link;
    (format!("news@c{c}.example"), subject, body)
}

/// What one transaction gave.
struct Answer {
    header: Option<String>,
    refused: bool,
    micros: u64,
}

async fn open(addr: SocketAddr) -> Result<TestConnection, String> {
    let mut conn = TestConnection::configure()
        .read_timeout(Duration::from_secs(60))
        .open_tcp(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    conn.connect("client.day.example", ([192, 0, 2, 9], 40000))
        .await
        .map_err(|e| e.to_string())?;
    conn.helo("client.day.example")
        .await
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

async fn transact(conn: &mut TestConnection, m: &Msg, qid: &str) -> Result<Answer, String> {
    let t = Instant::now();
    let e = |e: indymilter_test::TestError| e.to_string();
    conn.macros(MacroStage::Mail, [("i", qid)])
        .await
        .map_err(e)?;
    conn.mail([format!("<{}>", m.from)]).await.map_err(e)?;
    conn.rcpt([format!("<{}>", m.rcpt)]).await.map_err(e)?;
    conn.data().await.map_err(e)?;
    for (k, v) in &m.headers {
        conn.header(*k, v.as_str()).await.map_err(e)?;
    }
    conn.eoh().await.map_err(e)?;
    let mut refused = false;
    match conn.body(m.body.clone().into_bytes()).await.map_err(e)? {
        Status::Continue | Status::Skip => {}
        _ => refused = true,
    }
    let (actions, status) = conn.eom().await.map_err(e)?;
    refused |= !matches!(status, Status::Accept | Status::Continue);
    let header = actions.actions.iter().find_map(|a| match a {
        EomAction::AddHeader { name, value } | EomAction::InsertHeader { name, value, .. }
            if name.as_bytes() == b"X-Bulkwatch" =>
        {
            Some(value.to_string_lossy().into_owned())
        }
        _ => None,
    });
    Ok(Answer {
        header,
        refused,
        micros: t.elapsed().as_micros() as u64,
    })
}

fn field<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split("; ")
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
}

#[derive(Default)]
struct Tally {
    sent: u64,
    tagged: u64,
    untagged: u64,
    refused: u64,
    failed: u64,
    bulk: u64,
    campaign_bulk: u64,
    latencies: Vec<u32>,
    after_kill: Vec<u32>,
    /// campaign -> host -> ids given.
    ids: HashMap<u64, Vec<HashMap<String, u64>>>,
    probes: u64,
    probes_seen: u64,
    probe_sizes: Vec<String>,
}

struct Shared {
    args: Args,
    harmonic: f64,
    next: AtomicU64,
    /// When the kill command ran (set once).
    killed_at: OnceLock<Instant>,
    start: Instant,
}

fn record(t: &mut Tally, sh: &Shared, host: usize, m: &Msg, r: Result<Answer, String>) {
    t.sent += 1;
    let a = match r {
        Ok(a) => a,
        Err(e) => {
            t.failed += 1;
            if t.failed <= 5 {
                eprintln!("day: transaction failed: {e}");
            }
            return;
        }
    };
    let us = a.micros.min(u32::MAX as u64) as u32;
    t.latencies.push(us);
    if sh
        .killed_at
        .get()
        .is_some_and(|k| k.elapsed() < Duration::from_secs(60))
    {
        t.after_kill.push(us);
    }
    t.refused += a.refused as u64;
    let Some(h) = a.header else {
        t.untagged += 1;
        return;
    };
    t.tagged += 1;
    let bulk = h.starts_with("bulk");
    t.bulk += bulk as u64;
    if let (Some(c), Some(id)) = (m.campaign, field(&h, "campaign")) {
        t.campaign_bulk += bulk as u64;
        let per = t
            .ids
            .entry(c)
            .or_insert_with(|| vec![HashMap::new(); sh.args.hosts.len()]);
        *per[host].entry(id.to_owned()).or_default() += 1;
    }
}

/// A fresh text sent to each host in turn, one copy at a time.
async fn probe(conns: &mut [TestConnection], n: u64, t: &mut Tally, sh: &Shared) {
    let mut rng = seed_of(0x5EED, n);
    let text = prose(&words(&mut rng, 70), &mut rng);
    let mut sizes = Vec::new();
    for (k, conn) in conns.iter_mut().enumerate() {
        let m = Msg {
            from: "probe@probe.example".into(),
            rcpt: format!("probe{n}.{k}@site.example"),
            headers: vec![
                ("From", "<probe@probe.example>".into()),
                ("Subject", format!("probe {n}")),
                ("Message-ID", format!("<probe.{n}.{k}@day.example>")),
            ],
            body: text.clone(),
            campaign: None,
        };
        let r = transact(conn, &m, &format!("P{n}x{k}")).await;
        let size = match &r {
            Ok(a) => a
                .header
                .as_deref()
                .and_then(|h| field(h, "size"))
                .map(str::to_owned),
            Err(_) => None,
        };
        sizes.push(size.unwrap_or_else(|| "-".into()));
        record(t, sh, k, &m, r);
    }
    t.probes += 1;
    let want: Vec<String> = (1..=sizes.len()).map(|s| s.to_string()).collect();
    if sizes == want {
        t.probes_seen += 1;
    } else if t.probe_sizes.len() < 20 {
        t.probe_sizes.push(sizes.join(","));
    }
}

async fn sender(sh: Arc<Shared>) -> Result<Tally, String> {
    let mut conns = Vec::new();
    for h in &sh.args.hosts {
        conns.push(open(*h).await?);
    }
    let mut t = Tally::default();
    let n = sh.args.messages;
    loop {
        let i = sh.next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        progress(&sh, i);
        if sh.args.probe_every > 0 && i.is_multiple_of(sh.args.probe_every) {
            probe(&mut conns, i, &mut t, &sh).await;
        }
        let m = message(i, &sh.args, sh.harmonic);
        let host = Rng::new(i ^ 0x4057).below(conns.len());
        let r = transact(&mut conns[host], &m, &format!("D{i:X}")).await;
        let failed = r.is_err();
        record(&mut t, &sh, host, &m, r);
        if failed {
            // A broken connection is replaced, as an MTA reconnects.
            conns[host] = open(sh.args.hosts[host]).await?;
        }
    }
    Ok(t)
}

fn progress(sh: &Shared, i: u64) {
    let n = sh.args.messages;
    if let Some(f) = sh.args.kill_at {
        // The first sender past the mark sets the time and runs it.
        if i as f64 >= f * n as f64 && sh.killed_at.set(Instant::now()).is_ok() {
            eprintln!("day: {i} handed out, running: {}", sh.args.kill_cmd);
            let st = std::process::Command::new("sh")
                .args(["-c", &sh.args.kill_cmd])
                .status();
            eprintln!("day: kill command: {st:?}");
        }
    }
    if n >= 10 && i.is_multiple_of(n / 10) {
        let s = sh.start.elapsed().as_secs_f64();
        eprintln!(
            "day: {i} of {n} handed out at {s:.0} s ({:.0} msg/s)",
            i as f64 / s.max(1e-3)
        );
    }
}

fn pct(v: &mut [u32], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    let k = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[k] as f64 / 1000.0
}

fn merge(into: &mut Tally, t: Tally) {
    into.sent += t.sent;
    into.tagged += t.tagged;
    into.untagged += t.untagged;
    into.refused += t.refused;
    into.failed += t.failed;
    into.bulk += t.bulk;
    into.campaign_bulk += t.campaign_bulk;
    into.latencies.extend(t.latencies);
    into.after_kill.extend(t.after_kill);
    into.probes += t.probes;
    into.probes_seen += t.probes_seen;
    into.probe_sizes.extend(t.probe_sizes);
    for (c, per) in t.ids {
        let mine = into
            .ids
            .entry(c)
            .or_insert_with(|| vec![HashMap::new(); per.len()]);
        for (h, ids) in per.into_iter().enumerate() {
            for (id, k) in ids {
                *mine[h].entry(id).or_default() += k;
            }
        }
    }
}

/// Campaigns of at least this many copies in the stream get the last
/// copies: a campaign of a few copies may not have become one campaign
/// (a copy whose words differ more than the rule allows starts its own),
/// and a last copy may then join either part, on any host alike.
const LAST_COPIES_MIN: u64 = 50;

/// After the stream, one more copy of every campaign of at least
/// [`LAST_COPIES_MIN`] copies to every host, each with a new recipient:
/// `(campaigns, those given one id on every host, a few that were not)`.
async fn last_copies(sh: &Shared, t: &Tally) -> Result<(u64, u64, Vec<String>), String> {
    let mut conns = Vec::new();
    for h in &sh.args.hosts {
        conns.push(open(*h).await?);
    }
    let (mut n, mut same, mut differ) = (0, 0, Vec::new());
    for c in 0..sh.args.campaigns {
        let copies: u64 = t
            .ids
            .get(&c)
            .map_or(0, |per| per.iter().flat_map(|m| m.values()).sum());
        if copies < LAST_COPIES_MIN {
            continue;
        }
        let mut ids = Vec::new();
        for (k, conn) in conns.iter_mut().enumerate() {
            let mut rng = seed_of(sh.args.seed ^ 0x1A57, c << 8 | k as u64);
            let (from, subject, body) = campaign_copy(c, sh.args.seed, &mut rng);
            let rcpt = format!("last.{c}.{k}@site.example");
            let m = Msg {
                headers: vec![("From", format!("<{from}>")), ("Subject", subject)],
                from,
                rcpt,
                body,
                campaign: Some(c),
            };
            let a = transact(conn, &m, &format!("L{c}x{k}")).await?;
            ids.push(
                a.header
                    .as_deref()
                    .and_then(|h| field(h, "campaign"))
                    .map(str::to_owned),
            );
        }
        n += 1;
        if ids[0].is_some() && ids.iter().all(|i| *i == ids[0]) {
            same += 1;
        } else if differ.len() < 10 {
            differ.push(format!("{c}: {ids:?}"));
        }
    }
    Ok((n, same, differ))
}

fn report(mut t: Tally, secs: f64, last: (u64, u64, Vec<String>)) {
    let (mut one_id, mut seen_everywhere) = (0, 0);
    for per in t.ids.values() {
        let mut all: Vec<&String> = per.iter().flat_map(|m| m.keys()).collect();
        all.sort();
        all.dedup();
        one_id += (all.len() == 1) as u64;
        seen_everywhere += per.iter().all(|m| !m.is_empty()) as u64;
    }
    let lat = |v: &mut Vec<u32>| {
        format!(
            "{{\"n\": {}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"p999_ms\": {:.3}, \"max_ms\": {:.3}}}",
            v.len(),
            pct(v, 0.5),
            pct(v, 0.99),
            pct(v, 0.999),
            pct(v, 1.0)
        )
    };
    println!("{{");
    println!(
        "  \"seconds\": {secs:.1}, \"messages_per_second\": {:.0},",
        t.sent as f64 / secs
    );
    println!(
        "  \"sent\": {}, \"tagged\": {}, \"untagged\": {}, \"refused_or_tempfailed\": {}, \"failed\": {},",
        t.sent, t.tagged, t.untagged, t.refused, t.failed
    );
    println!(
        "  \"bulk\": {}, \"campaign_copies_bulk\": {},",
        t.bulk, t.campaign_bulk
    );
    println!(
        "  \"campaigns_seen\": {}, \"campaigns_seen_on_every_host\": {seen_everywhere}, \"campaigns_one_id_for_every_copy\": {one_id},",
        t.ids.len()
    );
    println!(
        "  \"last_copies\": {{\"campaigns\": {}, \"one_id_on_every_host\": {}, \"otherwise\": {:?}}},",
        last.0, last.1, last.2
    );
    println!("  \"latency\": {},", lat(&mut t.latencies));
    println!("  \"latency_60s_after_kill\": {},", lat(&mut t.after_kill));
    println!(
        "  \"probes\": {}, \"probes_seen_by_the_next_host\": {}, \"probes_otherwise\": {:?}",
        t.probes, t.probes_seen, t.probe_sizes
    );
    println!("}}");
}

/// `--mbox PATH`: the stream written as an mbox instead of sent (for
/// `bulkwatch replay`: one engine's campaign ids for the same stream).
fn write_mbox(path: &str, a: &Args, harmonic: f64) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..a.messages {
        let m = message(i, a, harmonic);
        writeln!(out, "From {} Sun Nov 29 12:00:00 2026", m.from)?;
        for (k, v) in &m.headers {
            writeln!(out, "{k}: {v}")?;
        }
        writeln!(out)?;
        for line in m.body.lines() {
            let quote = if line.starts_with("From ") { ">" } else { "" };
            writeln!(out, "{quote}{line}")?;
        }
        writeln!(out)?;
    }
    out.flush()
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("day: {e}");
            std::process::exit(2);
        }
    };
    let harmonic = (0..args.campaigns).map(|c| 1.0 / (c + 1) as f64).sum();
    if let Some(path) = &args.mbox {
        if let Err(e) = write_mbox(path, &args, harmonic) {
            eprintln!("day: {path}: {e}");
            std::process::exit(1);
        }
        return;
    }
    let conns = args.conns * args.hosts.len();
    let sh = Arc::new(Shared {
        args,
        harmonic,
        next: AtomicU64::new(0),
        killed_at: OnceLock::new(),
        start: Instant::now(),
    });
    let tasks: Vec<_> = (0..conns)
        .map(|_| tokio::spawn(sender(Arc::clone(&sh))))
        .collect();
    let mut total = Tally::default();
    let mut stopped = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(t)) => merge(&mut total, t),
            Ok(Err(e)) => {
                stopped += 1;
                eprintln!("day: a sender stopped: {e}");
            }
            Err(e) => {
                stopped += 1;
                eprintln!("day: a sender panicked: {e}");
            }
        }
    }
    let secs = sh.start.elapsed().as_secs_f64();
    let last = match last_copies(&sh, &total).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("day: the last copies: {e}");
            stopped += 1;
            (0, 0, Vec::new())
        }
    };
    report(total, secs, last);
    if stopped > 0 {
        std::process::exit(1);
    }
}
