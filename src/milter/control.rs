//! Campaigns at runtime: `bulkwatch campaigns list|show|allow|disallow|forget`
//! talks to the running daemon through a unix socket in the state
//! directory (`control.sock`, mode 0600: only the daemon's user and root
//! can connect; nothing a remote peer can reach).
//!
//! - `allow ID [SECS]`: later messages of the campaign are `allowed` (for
//!   SECS seconds, or while it lives); a merge carries the allowance to the
//!   campaign that absorbs it ([`Engine::allow`]).
//! - `disallow ID`: the allowance is withdrawn (an allow until the epoch).
//! - `forget ID`: the campaign is dropped from every list and nothing joins
//!   it any more; its text starts again from zero ([`Engine::forget`]).
//! - `show ID`: the campaign and a sample of its members (queue id,
//!   sender, subject, time) from the last [`RECENT`] messages this daemon
//!   judged.
//! - `explain KEY ENTRY`: what a message would be to the daemon's window,
//!   recording nothing (`bulkwatch scan`): `ENTRY` is the message's
//!   observation as a log entry ([`crate::store::stream::encode`]) in
//!   Base64, `KEY` the first 16 hex digits of SHA-256 of the sender's
//!   fingerprint key, which must be the daemon's ([`key_tag`]); the answer
//!   is [`explanation_json`].
//!
//! The allowance and the forgetting are part of the store's state, so the
//! verdict is decided in one place ([`crate::engine::verdict_of`]). With the
//! memory store they survive a restart in `control.json` in the state
//! directory, written atomically on every change and applied after the
//! snapshot. With Redis they are the site's: they are appended to the log
//! that every replica applies ([`crate::store::RedisLayer::correct`]), so one
//! command on any host applies to all and survives their restarts.
//!
//! The protocol is one request line, answered by one JSON object, then the
//! connection closes. A request longer than [`MAX_REQUEST`] bytes, or
//! slower than [`READ_TIMEOUT`], is dropped.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::engine::allowance::DomainAllowances;
use crate::engine::campaign::{CampaignId, WHILE_LIVE};
use crate::engine::{Engine, UnixSecs};
use crate::milter::metrics::ControlAction;
use crate::milter::State;
use crate::store::Correction;

/// Messages remembered for `show` (queue id, sender, subject, time).
pub const RECENT: usize = 10_000;
/// Members `show` lists, at most (the newest).
pub const SHOWN: usize = 20;
/// Longest request line (an `explain` line carries a message's
/// observation: a few hundred bytes, more with many recipients).
pub const MAX_REQUEST: usize = 8192;
/// How long a client may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest `control.json` read: its most allowances and forgotten ids
/// ([`MAX_ALLOWED`] each) take far less.
const MAX_FILE: u64 = 4 << 20;

/// Most allowed campaigns written to or read from `control.json` (an
/// allowance leaves with its campaign; this bounds the file either way).
pub const MAX_ALLOWED: usize = 10_000;

/// A message judged, for `show`.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    #[serde(skip)]
    pub seq: Option<u64>,
    #[serde(skip)]
    pub campaign: Option<CampaignId>,
    pub queue_id: String,
    pub sender: String,
    pub subject: Option<String>,
    pub time: u64,
    pub level: &'static str,
}

/// What survives a restart (`control.json`, memory store).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// (campaign id, allowed until: Unix seconds, or none while it lives).
    allowed: Vec<(String, Option<u64>)>,
    forgotten: Vec<String>,
    /// (domain, allowed until: Unix seconds, or none until withdrawn).
    #[serde(default)]
    domains: Vec<(String, Option<u64>)>,
}

/// Most ids of `control.json` that are not live campaigns looked up among
/// merged ones at start (each a scan of the campaign slots).
const MAX_ALIAS_SCANS: usize = 64;

/// Most merges remembered for `show` (a member recorded under a campaign
/// that this daemon saw merged away is shown under the one that absorbed
/// it).
const MAX_ALIASES: usize = 10_000;

/// The daemon's runtime corrections: recent messages for `show`, and the
/// file that keeps the memory store's corrections.
#[derive(Debug, Default)]
pub struct Control {
    recent: Mutex<VecDeque<Member>>,
    /// Campaign ids merged away, and the campaign that absorbed them.
    aliases: Mutex<HashMap<CampaignId, CampaignId>>,
    /// `control.json`; `None`: nothing is saved (tests, no state dir).
    file: Option<PathBuf>,
    /// What `control.json` was last written with.
    written: Mutex<Vec<u8>>,
    /// Sender domains allowed at runtime ([`DomainAllowances`]): with
    /// Redis, the site's, as last read ([`Control::refresh_domains`]).
    domains: Mutex<DomainAllowances>,
}

/// A request to the control socket, parsed ([`Command::parse`]); the
/// HTTP control builds one directly ([`Control::run`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// The campaigns the filter admits.
    List(crate::milter::metrics::Filter),
    Show(CampaignId),
    /// Allowed for `secs` seconds, or while the campaign lives.
    Allow {
        id: CampaignId,
        secs: Option<u64>,
    },
    Disallow(CampaignId),
    Forget(CampaignId),
    /// What recording a message would do (`bulkwatch scan` through the
    /// daemon): the entry's tag and its bytes.
    Explain {
        tag: String,
        entry: String,
    },
    Domains,
    /// Allowed for `secs` seconds, or until withdrawn.
    AllowDomain {
        domain: String,
        secs: Option<u64>,
    },
    DisallowDomain(String),
}

const USAGE: &str = "usage: list | show ID | allow ID [SECONDS] | disallow ID | forget ID | \
     explain KEY ENTRY | domains | allow-domain DOMAIN [SECONDS] | disallow-domain DOMAIN";
const DOMAIN_USAGE: &str =
    "usage: domains | allow-domain DOMAIN [SECONDS] | disallow-domain DOMAIN";

/// A duration in whole seconds above 0, if given.
fn seconds(word: Option<&str>) -> Result<Option<u64>, ()> {
    match word.map(str::parse::<u64>) {
        None => Ok(None),
        Some(Ok(s)) if s > 0 => Ok(Some(s)),
        Some(_) => Err(()),
    }
}

impl Command {
    /// Reads a request line (module notes).
    ///
    /// # Errors
    /// What is wrong with the line, in words (the usage when the command
    /// is unknown).
    pub fn parse(line: &str) -> Result<Command, String> {
        let mut words = line.split_whitespace();
        let (cmd, arg, extra) = (words.next(), words.next(), words.next());
        if cmd == Some("list") {
            // `list [level=…] [min_recipients=…] [q=…] [limit=…]`
            let pairs = line
                .split_whitespace()
                .skip(1)
                .map(|w| {
                    let (k, v) = w.split_once('=').unwrap_or((w, ""));
                    let decoded = crate::milter::metrics::query_pairs(&format!("v={v}"))
                        .pop()
                        .map_or_else(String::new, |(_, v)| v);
                    (k, decoded)
                })
                .collect::<Vec<_>>();
            return crate::milter::metrics::Filter::parse(pairs)
                .map(Command::List)
                .map_err(|e| format!("list: {e}"));
        }
        if let Some(c @ ("domains" | "allow-domain" | "disallow-domain")) = cmd {
            if words.next().is_some() {
                return Err(DOMAIN_USAGE.to_owned());
            }
            return match (c, arg) {
                ("domains", None) => Ok(Command::Domains),
                ("allow-domain", Some(d)) => Ok(Command::AllowDomain {
                    domain: d.to_owned(),
                    secs: seconds(extra).map_err(|()| {
                        "allow-domain: the duration is whole seconds above 0".to_owned()
                    })?,
                }),
                ("disallow-domain", Some(d)) => Ok(Command::DisallowDomain(d.to_owned())),
                _ => Err(DOMAIN_USAGE.to_owned()),
            };
        }
        match (cmd, arg.map(campaign_id)) {
            (Some("show"), Some(Ok(id))) => Ok(Command::Show(id)),
            (Some("allow"), Some(Ok(id))) => Ok(Command::Allow {
                id,
                secs: seconds(extra)
                    .map_err(|()| "allow: the duration is whole seconds above 0".to_owned())?,
            }),
            (Some("disallow"), Some(Ok(id))) => Ok(Command::Disallow(id)),
            (Some("forget"), Some(Ok(id))) => Ok(Command::Forget(id)),
            (Some("explain"), Some(Err(_))) => match (arg, extra) {
                (Some(tag), Some(entry)) => Ok(Command::Explain {
                    tag: tag.to_owned(),
                    entry: entry.to_owned(),
                }),
                _ => Err("usage: explain KEY ENTRY".to_owned()),
            },
            (Some(_), Some(Err(refusal))) => Err(refusal),
            _ => Err(USAGE.to_owned()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A campaign id as an operator writes it (12 hex digits), or the
/// refusal they see.
///
/// # Errors
/// `s` is not 12 hex digits.
pub fn campaign_id(s: &str) -> Result<CampaignId, String> {
    CampaignId::from_hex(s).ok_or_else(|| format!("not a campaign id: {s:?} (12 hex digits)"))
}

impl Control {
    /// Corrections saved in `file` (read now, written on each change),
    /// applied to `engine`: allowances of campaigns that left the window
    /// are dropped. An unreadable or malformed file is logged and ignored:
    /// a daemon must start.
    pub fn open(file: PathBuf, engine: &mut Engine) -> Control {
        // A regular file of bounded size only: a FIFO there must not hang
        // the start, nor a link to /dev/zero fill memory.
        match crate::file::read_regular(&file, MAX_FILE, crate::file::Links::Refuse) {
            Ok(bytes) => match serde_json::from_slice::<Saved>(&bytes) {
                Ok(saved) => {
                    // (The file is written with each snapshot, so its ids
                    // are live ones; an id merged away since costs a scan
                    // of the campaign slots, done for a few at most.)
                    let mut scans = MAX_ALIAS_SCANS;
                    let mut known = |e: &Engine, id: CampaignId| {
                        e.is_live(id) || {
                            scans = scans.saturating_sub(1);
                            scans > 0
                        }
                    };
                    for (id, until) in saved.allowed.iter().take(MAX_ALLOWED) {
                        if let Some(id) = CampaignId::from_hex(id).filter(|id| known(engine, *id)) {
                            engine.allow(id, *until);
                        }
                    }
                    for id in saved.forgotten.iter().take(MAX_ALLOWED) {
                        if let Some(id) = CampaignId::from_hex(id).filter(|id| known(engine, *id)) {
                            engine.forget(id);
                        }
                    }
                    let mut d = DomainAllowances::default();
                    for (domain, until) in &saved.domains {
                        // (A name that is no domain, or one too many, is
                        // dropped: the file is the daemon's own.)
                        let _ = d.allow(domain, until.unwrap_or(u64::MAX));
                    }
                    return Control {
                        file: Some(file),
                        domains: Mutex::new(d),
                        ..Control::default()
                    };
                }
                Err(e) => {
                    tracing::warn!(file = %file.display(), error = %e, "control file unreadable, ignored");
                }
            },
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "control file unreadable, ignored");
            }
        }
        Control {
            file: Some(file),
            ..Control::default()
        }
    }

    /// Remembers a judged message for `show`, and the campaigns it merged.
    pub fn note(&self, m: Member, merged: &[CampaignId]) {
        if let (Some(target), false) = (m.campaign, merged.is_empty()) {
            let mut a = lock(&self.aliases);
            if a.len() + merged.len() > MAX_ALIASES {
                a.clear();
            }
            for id in merged {
                a.insert(*id, target);
            }
        }
        let mut r = lock(&self.recent);
        if r.len() >= RECENT {
            r.pop_front();
        }
        r.push_back(m);
    }

    /// The campaign `id` was merged into, as far as this daemon saw.
    fn alias(&self, mut id: CampaignId) -> CampaignId {
        let a = lock(&self.aliases);
        for _ in 0..crate::engine::campaign::MAX_CHAIN {
            match a.get(&id) {
                Some(t) if *t != id => id = *t,
                _ => break,
            }
        }
        id
    }

    /// The memory store's corrections in `engine`, as `control.json`
    /// holds them (built under the engine's lock; written outside it by
    /// [`Control::write`]). `None` when nothing is saved.
    pub fn saved(&self, engine: &Engine) -> Option<Vec<u8>> {
        let path = self.file.as_ref()?;
        let saved = Saved {
            allowed: engine
                .allowances()
                .take(MAX_ALLOWED)
                .map(|(id, until)| (id.to_string(), (until < WHILE_LIVE).then_some(until)))
                .collect(),
            forgotten: engine.forgotten().map(|id| id.to_string()).collect(),
            domains: lock(&self.domains)
                .iter()
                .map(|(d, until)| (d.to_owned(), (until < u64::MAX).then_some(until)))
                .collect(),
        };
        // (No file for a daemon that was never corrected.)
        if saved.allowed.is_empty()
            && saved.forgotten.is_empty()
            && saved.domains.is_empty()
            && !path.exists()
        {
            return None;
        }
        serde_json::to_vec(&saved).ok()
    }

    /// Writes `bytes` ([`Control::saved`]) to `control.json` (atomically:
    /// a temporary file renamed over it), unless the file already holds
    /// them. Called on each correction and with each snapshot, so that the
    /// ids in the file follow merges as the snapshot's do.
    pub fn write(&self, bytes: &[u8]) {
        let Some(path) = self.file.as_deref() else {
            return;
        };
        let mut last = lock(&self.written);
        if *last == bytes {
            return;
        }
        // A new temporary file created exclusively, renamed over the old:
        // never written through a link planted in the state directory.
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return;
        };
        let result = crate::file::write_atomic(dir, name, bytes, 0o600);
        match result {
            Ok(_) => bytes.clone_into(&mut last),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot save the control file");
            }
        }
    }

    /// Applies a correction: to the site's state with Redis (and, where it
    /// knows the campaign, to the local fallback engine), else to the
    /// engine, saved in `control.json`. Answers the live campaign's id.
    fn correct(&self, state: &State, c: Correction, now: u64) -> Result<CampaignId, String> {
        let missing = || format!("no live campaign {}", c.id());
        match state.redis() {
            Some(shared) => {
                let site = shared
                    .correct(c, UnixSecs(now))
                    .map_err(|e| format!("the site's state: {e}"))?;
                state.engine().correct(c);
                site.ok_or_else(missing)
            }
            None => {
                let (live, saved) = {
                    let mut e = state.engine();
                    let live = e.correct(c).ok_or_else(missing)?;
                    (live, self.saved(&e))
                };
                if let Some(bytes) = saved {
                    self.write(&bytes);
                }
                Ok(live)
            }
        }
    }

    /// The domain allowance that lets a message through at `now`, if one
    /// does ([`DomainAllowances::allows`]).
    pub fn domain_allowance(
        &self,
        from_domain: Option<&str>,
        authenticated: &[String],
        now: u64,
    ) -> Option<String> {
        if authenticated.is_empty() {
            return None;
        }
        lock(&self.domains)
            .allows(from_domain, authenticated, now)
            .map(str::to_owned)
    }

    /// The domain allowances in force at `now`: (domain, until; `None`
    /// until withdrawn).
    pub fn domain_allowances(&self, now: u64) -> Vec<(String, Option<u64>)> {
        lock(&self.domains)
            .iter()
            .filter(|(_, until)| *until > now)
            .map(|(d, until)| (d.to_owned(), (until < u64::MAX).then_some(until)))
            .collect()
    }

    /// Allows `domain` until `until` (`u64::MAX`: until withdrawn), or
    /// withdraws its allowance (`until` 0): in the site's Redis when there
    /// is one (every daemon reads it, [`Control::refresh_domains`]), and
    /// here, saved in `control.json`. Answers the domain as kept.
    fn set_domain(
        &self,
        state: &State,
        domain: &str,
        until: u64,
        now: u64,
    ) -> Result<String, String> {
        let d = crate::engine::allowance::domain(domain).ok_or_else(|| {
            crate::engine::allowance::AllowanceError::NotADomain(domain.chars().take(80).collect())
                .to_string()
        })?;
        {
            let mut mine = lock(&self.domains);
            mine.expire(now);
            if until == 0 {
                if !mine.withdraw(&d) && state.redis().is_none() {
                    return Err(format!("{d} is not allowed"));
                }
            } else {
                mine.allow(&d, until).map_err(|e| e.to_string())?;
            }
        }
        if let Some(shared) = state.redis() {
            shared
                .set_domain_allowance(&d, (until > 0).then_some(until))
                .map_err(|e| format!("the site's state: {e}"))?;
        }
        let saved = self.saved(&state.engine());
        if let Some(bytes) = saved {
            self.write(&bytes);
        }
        Ok(d)
    }

    /// With Redis: replaces the domain allowances with the site's (read
    /// bounded, [`crate::store::RedisLayer::domain_allowances`]). Blocks for
    /// a round trip: call it off the runtime.
    pub fn refresh_domains(&self, state: &State, now: u64) {
        let Some(shared) = state.redis() else {
            return;
        };
        match shared.domain_allowances() {
            Ok(list) => {
                let mut d = DomainAllowances::default();
                for (domain, until) in list {
                    if until > now {
                        let _ = d.allow(&domain, until);
                    }
                }
                *lock(&self.domains) = d;
            }
            Err(e) => {
                tracing::debug!(error = %e, "redis: domain allowances not read, kept as they were")
            }
        }
    }

    /// The allowances of sender domains: what `domains`, `allow-domain`
    /// and `disallow-domain` answer.
    fn domain_command(&self, state: &State, cmd: Command, now: u64) -> serde_json::Value {
        let trusted = state.config().allow.authserv_ids.clone();
        let note = if trusted.is_empty() {
            "allow.authserv_ids is empty: no Authentication-Results header is trusted, so \
             no message is allowed by its domain until it names this site's authenticators"
                .to_owned()
        } else {
            format!(
                "honoured for mail whose From domain an Authentication-Results header of {} \
                 says passed DKIM or DMARC",
                trusted.join(", ")
            )
        };
        match cmd {
            Command::AllowDomain { domain, secs } => {
                let until = secs.map_or(u64::MAX, |s| now.saturating_add(s));
                match self.set_domain(state, &domain, until, now) {
                    Err(e) => error(&format!("allow-domain: {e}")),
                    Ok(d) => {
                        state.metrics.record_control(ControlAction::Allow);
                        tracing::info!(domain = %d, seconds = secs, "sender domain allowed");
                        serde_json::json!({
                            "ok": true,
                            "domain": d,
                            "until": (until < u64::MAX).then_some(until),
                            "note": note,
                        })
                    }
                }
            }
            Command::DisallowDomain(domain) => match self.set_domain(state, &domain, 0, now) {
                Err(e) => error(&format!("disallow-domain: {e}")),
                Ok(d) => {
                    state.metrics.record_control(ControlAction::Disallow);
                    tracing::info!(domain = %d, "sender domain allowance withdrawn");
                    serde_json::json!({"ok": true, "domain": d})
                }
            },
            _ => serde_json::json!({
                "ok": true,
                "domains": self
                    .domain_allowances(now)
                    .into_iter()
                    .map(|(d, until)| serde_json::json!({"domain": d, "until": until}))
                    .collect::<Vec<_>>(),
                "authserv_ids": trusted,
                "note": note,
            }),
        }
    }

    /// Answers one request line (module notes). Blocks for a Redis round
    /// trip at most (its timeouts) with Redis: call it off the runtime.
    pub fn handle(&self, state: &State, line: &str, now: u64) -> serde_json::Value {
        if let Some(rest) = line.strip_prefix("report ") {
            return report(state, rest, now);
        }
        match Command::parse(line) {
            Ok(cmd) => self.run(state, cmd, now),
            Err(e) => error(&e),
        }
    }

    /// Carries out one command ([`Control::handle`] without the line):
    /// what the HTTP control calls.
    pub fn run(&self, state: &State, cmd: Command, now: u64) -> serde_json::Value {
        match cmd {
            Command::List(filter) => self.list(state, &filter),
            Command::Show(id) => self.show(state, id),
            Command::Allow { id, secs } => {
                let until = secs.map_or(WHILE_LIVE, |s| now.saturating_add(s).min(WHILE_LIVE));
                match self.correct(state, Correction::Allow { id, until }, now) {
                    Err(e) => error(&format!("allow: {e}")),
                    Ok(live) => {
                        state.metrics.record_control(ControlAction::Allow);
                        tracing::info!(campaign = %live, seconds = secs, "campaign allowed");
                        let until = (until < WHILE_LIVE).then_some(until);
                        serde_json::json!({"ok": true, "campaign": live.to_string(), "until": until})
                    }
                }
            }
            // An allowance withdrawn: allowed until the epoch, which is
            // no allowance (and travels the Redis log as any allow does).
            Command::Disallow(id) => {
                match self.correct(state, Correction::Allow { id, until: 0 }, now) {
                    Err(e) => error(&format!("disallow: {e}")),
                    Ok(live) => {
                        state.metrics.record_control(ControlAction::Disallow);
                        tracing::info!(campaign = %live, "campaign allowance withdrawn");
                        serde_json::json!({"ok": true, "campaign": live.to_string()})
                    }
                }
            }
            Command::Forget(id) => match self.correct(state, Correction::Forget { id }, now) {
                Err(e) => error(&format!("forget: {e}")),
                Ok(live) => {
                    state.metrics.record_control(ControlAction::Forget);
                    tracing::info!(campaign = %live, "campaign forgotten");
                    serde_json::json!({"ok": true, "campaign": live.to_string()})
                }
            },
            Command::Explain { tag, entry } => explain(state, &tag, &entry, now),
            cmd @ (Command::Domains | Command::AllowDomain { .. } | Command::DisallowDomain(_)) => {
                self.domain_command(state, cmd, now)
            }
        }
    }

    /// `list` through `filter`: the campaigns, how many are live and how
    /// many the filter admits.
    fn list(&self, state: &State, filter: &crate::milter::metrics::Filter) -> serde_json::Value {
        let list = crate::milter::metrics::campaigns_filtered(state, filter);
        let allowed: Vec<String> = list
            .campaigns
            .iter()
            .filter(|c| c.allowed)
            .map(|c| c.id.clone())
            .collect();
        serde_json::json!({
            "campaigns": list.campaigns,
            "allowed": allowed,
            "view": list.view.as_str(),
            "active": list.active,
            "matched": list.matched,
        })
    }

    fn show(&self, state: &State, id: CampaignId) -> serde_json::Value {
        let key = id.to_string();
        let campaign = crate::milter::metrics::campaigns(state)
            .campaigns
            .into_iter()
            .find(|c| c.id == key);
        // Window sequence numbers name this daemon's messages only where
        // the view is the engine that numbered them: the memory store.
        let by_seq = state.redis().is_none();
        let members: Vec<Member> = {
            let recent = lock(&self.recent);
            state.with_view(|e| {
                recent
                    .iter()
                    .rev()
                    .filter(|m| {
                        let of_seq = m.seq.filter(|_| by_seq).and_then(|s| e.campaign_of_seq(s));
                        of_seq.or(m.campaign.map(|c| self.alias(c))) == Some(id)
                    })
                    .take(SHOWN)
                    .cloned()
                    .collect()
            })
        };
        // A forgotten campaign lives on, counted for nothing, until its
        // messages leave the window: say so, not that it has left.
        let forgotten = campaign.is_none()
            && state.with_view(|e| e.root_id(id).is_some_and(|r| e.forgotten().any(|f| f == r)));
        match campaign {
            None if members.is_empty() && !forgotten => {
                error(&format!("show: no live campaign {id}"))
            }
            _ => {
                let allowed = campaign
                    .as_ref()
                    .filter(|c| c.allowed)
                    .map(|c| serde_json::json!({"until": c.allowed_until}));
                serde_json::json!({
                    "campaign": campaign,
                    "allowed": allowed,
                    "forgotten": forgotten,
                    "members": members,
                })
            }
        }
    }
}

/// `report spam|ham USER VALUE`: a user's report, as the report socket
/// takes it ([`crate::milter::zerohour`]).
fn report(state: &State, rest: &str, now: u64) -> serde_json::Value {
    let Some(z) = state.zero_hour() else {
        return error("report: zero-hour is off (zero_hour.enabled)");
    };
    match crate::milter::zerohour::parse_report(rest) {
        Err(e) => error(&format!("report: {e}")),
        Ok((spam, user, value)) => {
            let resolve = |c| state.with_view(|e| e.live_id(c));
            z.report(&state.config(), spam, user, value, resolve, now)
        }
    }
}

/// The first 16 hex digits of SHA-256 of a fingerprint key: what
/// `explain` compares to know that the message was fingerprinted with the
/// daemon's key (the key itself never crosses the socket).
pub fn key_tag(key: (u64, u64)) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"bulkwatch key tag\0");
    h.update(key.0.to_le_bytes());
    h.update(key.1.to_le_bytes());
    let digest = h.finalize();
    crate::engine::simhash::hex(digest.get(..8).unwrap_or_default())
}

/// `explain KEY ENTRY` (module notes): the daemon's thresholds, its view
/// (the replica with Redis), nothing recorded.
fn explain(state: &State, tag: &str, entry: &str, now: u64) -> serde_json::Value {
    use base64::Engine as _;
    let cfg = state.config();
    if tag != key_tag(cfg.fingerprint.hash_key) {
        return error(
            "explain: the message was fingerprinted with another fingerprint.hash_key than \
             the daemon's (scan with the daemon's configuration)",
        );
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(entry) else {
        return error("explain: the entry is not Base64");
    };
    let mut obs = match crate::store::stream::decode(&bytes) {
        Ok((obs, _)) => obs,
        Err(e) => return error(&format!("explain: {e}")),
    };
    obs.thresholds = cfg.thresholds.clone();
    let x = state.with_view(|e| e.explain(&obs, UnixSecs(now)));
    let mut answer = explanation_json(&x);
    if let Some(o) = answer.as_object_mut() {
        o.insert("ok".into(), true.into());
        o.insert(
            "store".into(),
            if state.redis().is_some() {
                "the site's shared window (Redis)"
            } else {
                "the daemon's window"
            }
            .into(),
        );
    }
    answer
}

/// An explanation as JSON (the `explain` answer; `scan` prints it).
pub fn explanation_json(x: &crate::engine::Explanation) -> serde_json::Value {
    let campaign = |c: &crate::engine::verdict::CampaignSummary| {
        serde_json::json!({
            "id": c.id.to_string(),
            "messages": c.messages,
            "recipients": c.recipients,
            "score": c.score,
            "sender_domains": c.sender_domains,
            "senders": c.senders,
            "sample_subject": c.sample_subject,
            "list_post": c.list_post,
            "conversation": c.conversation,
            "first_seen": c.first_seen,
            "last_seen": c.last_seen,
        })
    };
    let joined_by = if x.before.is_none() {
        "nothing: a campaign of its own"
    } else if x.exact {
        "the same text"
    } else if x.contained {
        "containment: it holds a text of the campaign whole"
    } else if x.weak_texts > 0 {
        "corroboration: several texts of the campaign match it weakly"
    } else {
        "a strong near match"
    };
    serde_json::json!({
        "level": x.level.as_str(),
        "joined_by": joined_by,
        "exact": x.exact,
        "distance": x.distance,
        "resemblance": x.sketch_diff.map(crate::engine::minhash::jaccard_estimate),
        "corroborating": x.weak_texts,
        "merges": x.merges,
        "campaign_before": x.before.as_ref().map(campaign),
        "campaign_after": campaign(&x.after),
        "move": x.step.kind.as_str(),
        "added_recipients": x.step.added,
        "own_mail": x.step.own,
        "answers_own_mail": x.step.answers_own,
        "near_miss": x.near_miss.map(|m| serde_json::json!({
            "campaign": m.campaign.to_string(),
            "distance": m.distance,
            "resemblance": crate::engine::minhash::jaccard_estimate(m.sketch_diff),
        })),
    })
}

pub fn error(msg: &str) -> serde_json::Value {
    serde_json::json!({"ok": false, "error": msg})
}

/// Most control connections served at once; more wait in the socket's
/// backlog. The socket is mode 0600: only the daemon's user (and root)
/// can connect.
pub const MAX_CONTROL_CONNECTIONS: usize = 8;

/// Longest a whole control exchange may take, the answer's writing
/// included.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a socket served by [`serve`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every command (`control.sock`, mode 0600).
    All,
    /// `report …` lines only: zero-hour's report socket, which the mail
    /// user Dovecot's sieve scripts run as may reach.
    Reports,
}

/// One control connection: a request line in, one answer line out.
async fn exchange(state: Arc<State>, stream: tokio::net::UnixStream, scope: Scope) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let got = tokio::time::timeout(READ_TIMEOUT, async {
        BufReader::new(read.take(MAX_REQUEST as u64))
            .read_line(&mut line)
            .await
    })
    .await;
    let answer = match got {
        Ok(Ok(_)) if scope == Scope::Reports && !line.starts_with("report ") => {
            error("this socket takes reports only: report spam|ham USER VALUE")
        }
        Ok(Ok(_)) if line.ends_with('\n') || line.len() < MAX_REQUEST => {
            // (With Redis, a round trip: off the runtime's threads.)
            let st = Arc::clone(&state);
            tokio::task::spawn_blocking(move || {
                st.control
                    .handle(&st, line.trim(), crate::milter::unix_now())
            })
            .await
            .unwrap_or_else(|_| error("the request failed"))
        }
        Ok(Ok(_)) => error("request too long"),
        _ => return,
    };
    let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
        let _ = write.shutdown().await;
    })
    .await;
}

/// Serves the control socket until the task is dropped: up to
/// [`MAX_CONTROL_CONNECTIONS`] clients at once, each bounded in time (a
/// client that never sends its line, or never reads the answer, holds one
/// slot for a bounded time and never the others).
pub async fn serve(listener: UnixListener, state: Arc<State>, scope: Scope) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONTROL_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            exchange(state, stream, scope).await;
            drop(permit);
        });
    }
}

/// Where the control socket and file live.
pub fn socket_path(state_dir: &Path) -> PathBuf {
    state_dir.join("control.sock")
}

/// See [`socket_path`].
pub fn file_path(state_dir: &Path) -> PathBuf {
    state_dir.join("control.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every request line reads as the command it names, or as the
    /// refusal an operator sees.
    #[test]
    fn request_lines_read_as_commands() {
        let id = CampaignId(0x0123_4567_89ab);
        for (line, want) in [
            ("show 0123456789ab", Ok(Command::Show(id))),
            ("allow 0123456789ab", Ok(Command::Allow { id, secs: None })),
            (
                "allow 0123456789ab 600",
                Ok(Command::Allow {
                    id,
                    secs: Some(600),
                }),
            ),
            ("disallow 0123456789ab", Ok(Command::Disallow(id))),
            ("forget 0123456789ab", Ok(Command::Forget(id))),
            (
                "explain mem AAAA",
                Ok(Command::Explain {
                    tag: "mem".into(),
                    entry: "AAAA".into(),
                }),
            ),
            ("domains", Ok(Command::Domains)),
            (
                "allow-domain news.example 60",
                Ok(Command::AllowDomain {
                    domain: "news.example".into(),
                    secs: Some(60),
                }),
            ),
            (
                "disallow-domain news.example",
                Ok(Command::DisallowDomain("news.example".into())),
            ),
            (
                "allow 0123456789ab 0",
                Err("allow: the duration is whole seconds above 0".to_owned()),
            ),
            (
                "allow-domain news.example soon",
                Err("allow-domain: the duration is whole seconds above 0".to_owned()),
            ),
            ("domains news.example", Err(DOMAIN_USAGE.to_owned())),
            (
                "allow-domain a.example 60 more",
                Err(DOMAIN_USAGE.to_owned()),
            ),
            (
                "forget xyz",
                Err("not a campaign id: \"xyz\" (12 hex digits)".to_owned()),
            ),
            ("explain mem", Err("usage: explain KEY ENTRY".to_owned())),
            ("", Err(USAGE.to_owned())),
            ("frobnicate", Err(USAGE.to_owned())),
        ] {
            assert_eq!(Command::parse(line), want, "{line:?}");
        }
        assert!(matches!(
            Command::parse("list level=bulk limit=5"),
            Ok(Command::List(_))
        ));
        assert!(Command::parse("list level=loud")
            .unwrap_err()
            .starts_with("list: "));
    }
}
