//! Zero hour: the copies of a campaign delivered before it turned bulk,
//! acted on in the recipients' mailboxes, and the users' reports.
//!
//! With `zero_hour.enabled`, a copy delivered to mailboxes (clean or
//! suspect, in a campaign that is neither list mail, the site's own mail,
//! nor allowed) carries `X-Bulkwatch-Copy: n=NONCE; c=CAMPAIGN; t=TIME;
//! r=MACS; s=SEAL`, and this host keeps it in its ledger: the nonce,
//! the recipients' Dovecot users and the queue id. Every
//! [`EVERY`] the task looks up where the ledger's campaigns stand in the
//! view (this host's engine, or the site's replica on Redis, so a campaign
//! that turned bulk through another host counts): a campaign now bulk, or
//! reported as spam by `zero_hour.reporters` distinct recipients, has its
//! copies moved to Junk (`zero_hour.action`) through doveadm
//! ([`super::doveadm`]), found by their nonce; an allowed one has the
//! copies it moved moved back. Conversations, list mail and allowed
//! campaigns are never touched. Each copy is in the ledger of the one host
//! that delivered it and is acted on once (a failed request is tried
//! [`MAX_TRIES`] times, further apart each time).
//!
//! **The header cannot be forged**: the milter deletes every
//! `X-Bulkwatch-Copy` a message arrives with, the nonce is random, and the
//! seal is an HMAC under a key made from `fingerprint.hash_key` (every
//! host of a site has it). `r=` holds an HMAC of each recipient's user
//! (the first [`MAX_USERS`]), so a report proves that its reporter
//! received the copy without naming the other recipients.
//!
//! **Reports** (`bulkwatch report spam|ham` over the report socket, which
//! `control::serve` serves with `Scope::Reports`; the Dovecot sieve scripts of
//! docs/admin/zero-hour.md): a user's report counts only with a copy that
//! was delivered to that user. Spam reports are weighed by distinct
//! reporters, never by count: one user can move nothing but their own
//! copies, whatever they report. A ham report lets that recipient's later
//! copies of the campaign through, and keeps theirs out of the moves.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::config::{Config, UserName, ZeroHourAction};
use crate::engine::campaign::CampaignId;
use crate::engine::verdict::{campaign_level, AllowReason, Level, Verdict};
use crate::engine::Standing;
use crate::milter::doveadm::{Doveadm, Outcome};
use crate::milter::reply::Decision;
use crate::milter::State;

/// The header a delivered copy carries.
pub const HEADER: &str = crate::milter::session::COPY_HEADER_NAME;
/// Recipients of a copy acted on and able to report it (the first ones).
pub const MAX_USERS: usize = 48;
/// Copies kept in the ledger; the oldest go first.
pub const MAX_COPIES: usize = 200_000;
/// Copies of one campaign kept (a campaign that large turned bulk long
/// before: its later copies were refused or tagged).
pub const MAX_PER_CAMPAIGN: usize = 5_000;
/// Tries of one copy's request before it is given up (logged).
pub const MAX_TRIES: u32 = 5;
/// How often the ledger's campaigns are looked up.
pub const EVERY: Duration = Duration::from_secs(2);
/// Most copies acted on in one round (the rest wait for the next).
pub const MAX_ROUND: usize = 256;
/// Campaigns with reports kept; reporters kept a campaign.
const MAX_REPORTED: usize = 10_000;
const MAX_REPORTERS: usize = 1_000;
/// Recipients' ham reports kept.
const MAX_HAM: usize = 100_000;
/// Events kept for `/zero-hour`.
const MAX_EVENTS: usize = 200;

/// The key of the copies' seals and recipients' HMACs.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// Made from the site's log key (so from `fingerprint.hash_key`).
    pub fn new(cfg: &Config) -> Key {
        Key(Sha256::new()
            .chain_update(b"bulkwatch copy key 1\0")
            .chain_update(crate::store::stream::log_key(cfg))
            .finalize()
            .into())
    }

    fn mac(&self, parts: &[&[u8]], bytes: usize) -> String {
        let mut msg = Vec::new();
        for p in parts {
            msg.extend_from_slice(&(p.len() as u32).to_le_bytes());
            msg.extend_from_slice(p);
        }
        let t = crate::store::seal::tag(&self.0, &msg);
        crate::engine::simhash::hex(t.get(..bytes).unwrap_or(&t))
    }

    /// A recipient user's HMAC in a copy of nonce `nonce`.
    fn user_mac(&self, nonce: &str, user: &str) -> String {
        self.mac(&[b"r", nonce.as_bytes(), user.as_bytes()], 5)
    }

    /// A reporter's number, the same for every copy (distinct reporters).
    fn reporter(&self, user: &str) -> u64 {
        let h = self.mac(&[b"u", user.as_bytes()], 8);
        u64::from_str_radix(&h, 16).unwrap_or(0)
    }
}

/// What a copy's header says, its seal checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub nonce: String,
    pub campaign: CampaignId,
    pub at: u64,
    macs: Vec<String>,
}

/// The header value of a copy.
pub fn header_value(
    key: &Key,
    nonce: &str,
    campaign: CampaignId,
    at: u64,
    users: &[String],
) -> String {
    let macs: Vec<String> = users
        .iter()
        .take(MAX_USERS)
        .map(|u| key.user_mac(nonce, u))
        .collect();
    let body = format!("n={nonce}; c={campaign}; t={at}; r={}", macs.join(","));
    let seal = key.mac(&[body.as_bytes()], 12);
    format!("{body}; s={seal}")
}

impl Stamp {
    /// The stamp in `value` if its seal is right.
    pub fn read(key: &Key, value: &str) -> Option<Stamp> {
        let value: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
        let (body, seal) = value.rsplit_once("; s=")?;
        if !crate::store::seal::same(seal.as_bytes(), key.mac(&[body.as_bytes()], 12).as_bytes()) {
            return None;
        }
        let mut fields = body.split("; ").filter_map(|f| f.split_once('='));
        let mut next = |name: &str| fields.next().filter(|(k, _)| *k == name).map(|(_, v)| v);
        let nonce = next("n")?.to_owned();
        let campaign = CampaignId::from_hex(next("c")?)?;
        let at = next("t")?.parse().ok()?;
        let macs = next("r")?
            .split(',')
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect();
        Some(Stamp {
            nonce,
            campaign,
            at,
            macs,
        })
    }

    /// Whether the copy was delivered to `user`.
    pub fn received_by(&self, key: &Key, user: &str) -> bool {
        let mine = key.user_mac(&self.nonce, &user.to_lowercase());
        self.macs.contains(&mine)
    }
}

/// The Dovecot users of envelope recipients: lower-cased, the first
/// [`MAX_USERS`] distinct ones.
pub fn users_of(rcpts: &[String], how: UserName) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rcpts {
        let a = r.trim_matches(|c| c == '<' || c == '>').to_lowercase();
        let u = match how {
            UserName::Address => a,
            UserName::LocalPart => a.rsplit_once('@').map_or(a.clone(), |(l, _)| l.to_owned()),
        };
        if !u.is_empty() && !out.contains(&u) && out.len() < MAX_USERS {
            out.push(u);
        }
    }
    out
}

/// Where a copy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// As delivered.
    Delivered,
    /// Acted on (moved to Junk, flagged, or logged).
    Acted,
    /// Tried [`MAX_TRIES`] times and given up.
    GivenUp,
}

#[derive(Debug, Clone)]
struct Copy {
    nonce: String,
    users: Vec<String>,
    /// The users whose copy zero-hour moved (found where it was
    /// delivered): what an allowance moves back, and nothing else.
    moved: Vec<String>,
    queue_id: String,
    at: u64,
    place: Place,
    tries: u32,
    /// Not tried again before this (Unix seconds).
    next_try: u64,
}

/// What a round does to one copy.
#[derive(Debug, Clone)]
pub struct Job {
    campaign: CampaignId,
    live: CampaignId,
    nonce: String,
    queue_id: String,
    users: Vec<String>,
    /// Toward Junk (else back to the inbox).
    junk: bool,
}

/// What the task did (`/metrics`).
#[derive(Debug, Default)]
pub struct Counts {
    pub recorded: AtomicU64,
    /// Copies acted on toward Junk, by user.
    pub junked: AtomicU64,
    /// Copies moved back (an allowance), by user.
    pub restored: AtomicU64,
    /// Requests that failed (tried again), and copies given up.
    pub failed: AtomicU64,
    pub given_up: AtomicU64,
    pub spam_reports: AtomicU64,
    pub ham_reports: AtomicU64,
    /// Reports without a copy delivered to their reporter.
    pub refused_reports: AtomicU64,
}

/// One thing done, for `/zero-hour`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    pub at: u64,
    pub campaign: String,
    pub what: &'static str,
    pub queue_id: Option<String>,
    pub users: usize,
}

#[derive(Debug, Default)]
struct Inner {
    copies: HashMap<CampaignId, Vec<Copy>>,
    /// (time, campaign) of every copy, oldest first, for the bounds.
    order: VecDeque<(u64, CampaignId)>,
    /// Distinct spam reporters by live campaign, and when last reported.
    spam: HashMap<CampaignId, (u64, HashSet<u64>)>,
    /// (live campaign, reporter) of ham reports.
    ham: HashSet<(CampaignId, u64)>,
    events: VecDeque<Event>,
}

/// The ledger, the reports and the counts; held by the state.
#[derive(Debug)]
pub struct ZeroHour {
    key: Key,
    inner: Mutex<Inner>,
    pub counts: Counts,
    secret: [u8; 32],
    serial: AtomicU64,
    wake: tokio::sync::Notify,
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ZeroHour {
    pub fn new(cfg: &Config) -> ZeroHour {
        let mut secret = [0u8; 32];
        let mut seed = Sha256::new();
        if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
            use std::io::Read;
            let _ = f.read_exact(&mut secret);
        }
        // (Without /dev/urandom, the time and pid still keep nonces apart.)
        seed.update(secret);
        seed.update(format!(
            "{:?} {}",
            std::time::SystemTime::now(),
            std::process::id()
        ));
        ZeroHour {
            key: Key::new(cfg),
            inner: Mutex::new(Inner::default()),
            counts: Counts::default(),
            secret: seed.finalize().into(),
            serial: AtomicU64::new(0),
            wake: tokio::sync::Notify::new(),
        }
    }

    pub fn key(&self) -> &Key {
        &self.key
    }

    fn nonce(&self) -> String {
        let n = self.serial.fetch_add(1, Ordering::Relaxed);
        let h = Sha256::new()
            .chain_update(self.secret)
            .chain_update(n.to_le_bytes())
            .finalize();
        crate::engine::simhash::hex(h.get(..12).unwrap_or_default())
    }

    /// The header for a message about to be delivered with `decision`,
    /// when it is a copy zero-hour may act on later (module docs), and
    /// the copy recorded.
    pub fn stamp(
        &self,
        cfg: &Config,
        verdict: &Verdict,
        decision: &Decision,
        rcpts: &[String],
        queue_id: &str,
        now: u64,
    ) -> Option<String> {
        let c = verdict.campaign.as_ref()?;
        let delivered = matches!(decision, Decision::Accept | Decision::Tag(_));
        let eligible = matches!(verdict.level, Level::Clean | Level::Suspect)
            && !verdict.list
            && !verdict.own
            && !talk(c);
        if !(delivered && eligible) {
            return None;
        }
        let users = users_of(rcpts, cfg.zero_hour.user);
        if users.is_empty() {
            return None;
        }
        let nonce = self.nonce();
        let value = header_value(&self.key, &nonce, c.id, now, &users);
        self.record(
            c.id,
            Copy {
                nonce,
                users,
                moved: Vec::new(),
                queue_id: queue_id.to_owned(),
                at: now,
                place: Place::Delivered,
                tries: 0,
                next_try: 0,
            },
        );
        Some(value)
    }

    fn record(&self, campaign: CampaignId, copy: Copy) {
        let mut g = lock(&self.inner);
        let list = g.copies.entry(campaign).or_default();
        if list.len() >= MAX_PER_CAMPAIGN {
            return;
        }
        let at = copy.at;
        list.push(copy);
        g.order.push_back((at, campaign));
        self.counts.recorded.fetch_add(1, Ordering::Relaxed);
        while g.order.len() > MAX_COPIES {
            drop_oldest(&mut g);
        }
    }

    /// Copies kept now.
    pub fn len(&self) -> usize {
        lock(&self.inner).order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Recent events, newest first.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.inner).events.iter().rev().cloned().collect()
    }

    fn event(&self, g: &mut Inner, e: Event) {
        if g.events.len() >= MAX_EVENTS {
            g.events.pop_front();
        }
        g.events.push_back(e);
    }

    /// Reports applied to a verdict: a campaign reported as spam by
    /// `zero_hour.reporters` distinct recipients is bulk; a message whose
    /// every recipient reported its campaign as ham is allowed.
    pub fn amend(&self, cfg: &Config, verdict: &mut Verdict, rcpts: &[String]) {
        let Some(c) = verdict.campaign.as_ref() else {
            return;
        };
        if !matches!(verdict.level, Level::Clean | Level::Suspect | Level::Bulk) {
            return;
        }
        let g = lock(&self.inner);
        // (Most messages: no report at all, nothing to read.)
        if g.spam.is_empty() && g.ham.is_empty() {
            return;
        }
        let users = users_of(rcpts, cfg.zero_hour.user);
        if !users.is_empty()
            && !g.ham.is_empty()
            && users
                .iter()
                .all(|u| g.ham.contains(&(c.id, self.key.reporter(u))))
        {
            verdict.level = Level::Allowed(AllowReason::Reported);
            return;
        }
        let reported = g.spam.get(&c.id).map_or(0, |(_, r)| r.len());
        if reported >= cfg.zero_hour.reporters && !talk(c) && !verdict.list {
            verdict.level = Level::Bulk;
        }
    }

    /// A user's report of the copy whose header is `value`: what the
    /// reporter sees.
    pub fn report(
        &self,
        cfg: &Config,
        spam: bool,
        user: &str,
        value: &str,
        resolve: impl FnOnce(CampaignId) -> Option<CampaignId>,
        now: u64,
    ) -> serde_json::Value {
        let user = user.trim().to_lowercase();
        let stamp = Stamp::read(&self.key, value).filter(|s| s.received_by(&self.key, &user));
        let Some(stamp) = stamp else {
            self.counts.refused_reports.fetch_add(1, Ordering::Relaxed);
            return serde_json::json!({"ok": false, "error": "no copy of this message was delivered to this user by bulkwatch"});
        };
        let live = resolve(stamp.campaign).unwrap_or(stamp.campaign);
        let who = self.key.reporter(&user);
        let mut g = lock(&self.inner);
        let reporters = if spam {
            self.counts.spam_reports.fetch_add(1, Ordering::Relaxed);
            g.ham.remove(&(live, who));
            if g.spam.len() >= MAX_REPORTED && !g.spam.contains_key(&live) {
                let oldest = g.spam.iter().min_by_key(|(_, (t, _))| *t).map(|(k, _)| *k);
                if let Some(k) = oldest {
                    g.spam.remove(&k);
                }
            }
            let (t, set) = g.spam.entry(live).or_default();
            *t = now;
            if set.len() < MAX_REPORTERS {
                set.insert(who);
            }
            set.len()
        } else {
            self.counts.ham_reports.fetch_add(1, Ordering::Relaxed);
            if let Some((_, set)) = g.spam.get_mut(&live) {
                set.remove(&who);
            }
            if g.ham.len() < MAX_HAM {
                g.ham.insert((live, who));
            }
            g.spam.get(&live).map_or(0, |(_, s)| s.len())
        };
        let what = if spam {
            "reported spam"
        } else {
            "reported ham"
        };
        self.event(
            &mut g,
            Event {
                at: now,
                campaign: live.to_string(),
                what,
                queue_id: None,
                users: 1,
            },
        );
        drop(g);
        tracing::info!(campaign = %live, reporters, threshold = cfg.zero_hour.reporters, "{what} by a recipient");
        self.wake.notify_one();
        serde_json::json!({"ok": true, "campaign": live.to_string(), "spam_reporters": reporters})
    }

    /// The campaigns of the ledger.
    fn campaigns(&self) -> Vec<CampaignId> {
        lock(&self.inner).copies.keys().copied().collect()
    }

    /// This round's jobs, from where the ledger's campaigns stand.
    fn plan(
        &self,
        cfg: &Config,
        ids: &[CampaignId],
        standing: &[Option<Standing>],
        now: u64,
    ) -> Vec<Job> {
        let mut g = lock(&self.inner);
        while g
            .order
            .front()
            .is_some_and(|(t, _)| t.saturating_add(cfg.window.window.as_secs()) < now)
        {
            drop_oldest(&mut g);
        }
        g.spam
            .retain(|_, (t, _)| t.saturating_add(cfg.window.window.as_secs()) >= now);
        let mut jobs = Vec::new();
        for (id, st) in ids.iter().zip(standing) {
            let Some(st) = st else { continue };
            let s = &st.summary;
            let reported = g.spam.get(&s.id).map_or(0, |(_, r)| r.len()) >= cfg.zero_hour.reporters;
            let bulk = campaign_level(s, &cfg.thresholds) == Level::Bulk || reported;
            let junk = if st.allowed {
                false
            } else if bulk && !talk(s) && !s.list_post {
                true
            } else {
                continue;
            };
            let inner = &mut *g;
            let Some(list) = inner.copies.get_mut(id) else {
                continue;
            };
            // The campaign's ham reporters, gathered only when a copy is
            // due (most rounds find none).
            let mut ham: Option<Vec<u64>> = None;
            for copy in list.iter_mut() {
                let due = if junk {
                    copy.place == Place::Delivered
                } else {
                    copy.place == Place::Acted
                };
                if !due || copy.next_try > now || jobs.len() >= MAX_ROUND {
                    continue;
                }
                let ham = ham.get_or_insert_with(|| {
                    inner
                        .ham
                        .iter()
                        .filter(|(c, _)| *c == s.id)
                        .map(|(_, u)| *u)
                        .collect()
                });
                // Toward Junk: every recipient but those who said it is
                // not spam; back: only those whose copy was moved.
                let users: Vec<String> = if junk {
                    copy.users
                        .iter()
                        .filter(|u| !ham.contains(&self.key.reporter(u)))
                        .cloned()
                        .collect()
                } else {
                    copy.moved.clone()
                };
                jobs.push(Job {
                    campaign: *id,
                    live: s.id,
                    nonce: copy.nonce.clone(),
                    queue_id: copy.queue_id.clone(),
                    users,
                    junk,
                });
            }
        }
        jobs
    }

    /// A job's result: done, or tried again later, or given up.
    fn settle(
        &self,
        action: ZeroHourAction,
        job: &Job,
        done: Result<Vec<String>, String>,
        now: u64,
    ) {
        let mut g = lock(&self.inner);
        let Some(copy) = g
            .copies
            .get_mut(&job.campaign)
            .and_then(|l| l.iter_mut().find(|c| c.nonce == job.nonce))
        else {
            return;
        };
        let mut users = job.users.len();
        let what = match done {
            Ok(acted) => {
                copy.place = if job.junk {
                    Place::Acted
                } else {
                    Place::Delivered
                };
                copy.tries = 0;
                // (Moved back: not moved again while the allowance holds;
                // should it end, the copy is moved again.)
                users = acted.len();
                copy.moved = if job.junk && action != ZeroHourAction::Log {
                    acted
                } else {
                    Vec::new()
                };
                if users == 0 {
                    // Not where it was delivered for anyone (the users
                    // moved or deleted it themselves): nothing was done.
                    return;
                }
                let n = users as u64;
                if job.junk {
                    self.counts.junked.fetch_add(n, Ordering::Relaxed);
                } else {
                    self.counts.restored.fetch_add(n, Ordering::Relaxed);
                }
                match (action, job.junk) {
                    (ZeroHourAction::Junk, true) => "moved to junk",
                    (ZeroHourAction::Junk, false) => "moved back",
                    (ZeroHourAction::Flag, true) => "flagged as junk",
                    (ZeroHourAction::Flag, false) => "junk flag removed",
                    (ZeroHourAction::Log, true) => "would be moved to junk (action = log)",
                    (ZeroHourAction::Log, false) => "would be moved back (action = log)",
                }
            }
            Err(e) => {
                copy.tries += 1;
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
                if copy.tries >= MAX_TRIES {
                    copy.place = Place::GivenUp;
                    self.counts.given_up.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(queue_id = %job.queue_id, campaign = %job.live, error = %e, tries = copy.tries, "zero-hour: copy given up");
                    "given up"
                } else {
                    copy.next_try = now + (EVERY.as_secs() << copy.tries);
                    tracing::warn!(queue_id = %job.queue_id, campaign = %job.live, error = %e, tries = copy.tries, "zero-hour: request failed; tried again later");
                    return;
                }
            }
        };
        if what != "given up" {
            tracing::info!(queue_id = %job.queue_id, campaign = %job.live, users, "zero-hour: copy {what}");
        }
        self.event(
            &mut g,
            Event {
                at: now,
                campaign: job.live.to_string(),
                what,
                queue_id: Some(job.queue_id.clone()),
                users,
            },
        );
    }
}

/// A conversation of several messages (a campaign of one message counts
/// as a conversation in the engine, and is what every first copy is).
fn talk(c: &crate::engine::verdict::CampaignSummary) -> bool {
    c.conversation && c.messages > 1
}

/// The file in the state directory that keeps the ledger and the reports
/// between runs (written with each snapshot and at shutdown).
pub const FILE: &str = "zero-hour.json";
/// Largest such file read at start.
pub const MAX_FILE: u64 = 64 << 20;

#[derive(serde::Serialize, serde::Deserialize)]
struct SavedCopy {
    c: String,
    n: String,
    u: Vec<String>,
    q: String,
    t: u64,
    /// 0 delivered, 1 acted on, 2 given up.
    p: u8,
    /// The users whose copy was moved.
    #[serde(default)]
    m: Vec<String>,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Saved {
    copies: Vec<SavedCopy>,
    /// (campaign, last report, reporters).
    spam: Vec<(String, u64, Vec<u64>)>,
    ham: Vec<(String, u64)>,
}

impl ZeroHour {
    /// The ledger and reports as [`FILE`] holds them.
    pub fn saved(&self) -> Vec<u8> {
        let g = lock(&self.inner);
        let mut out = Saved::default();
        for (c, list) in &g.copies {
            for copy in list {
                out.copies.push(SavedCopy {
                    c: c.to_string(),
                    n: copy.nonce.clone(),
                    u: copy.users.clone(),
                    q: copy.queue_id.clone(),
                    t: copy.at,
                    m: copy.moved.clone(),
                    p: match copy.place {
                        Place::Delivered => 0,
                        Place::Acted => 1,
                        Place::GivenUp => 2,
                    },
                });
            }
        }
        out.copies.sort_by_key(|c| c.t);
        out.spam = g
            .spam
            .iter()
            .map(|(c, (t, r))| (c.to_string(), *t, r.iter().copied().collect()))
            .collect();
        out.ham = g.ham.iter().map(|(c, u)| (c.to_string(), *u)).collect();
        drop(g);
        serde_json::to_vec(&out).unwrap_or_default()
    }

    /// Takes back what [`ZeroHour::saved`] wrote, leaving out what is older
    /// than the window and anything past the bounds: the copies restored.
    ///
    /// # Errors
    /// The bytes are not such a file.
    pub fn restore(&self, bytes: &[u8], now: u64, window: u64) -> Result<usize, String> {
        let saved: Saved = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let fresh = |t: u64| t.saturating_add(window) >= now;
        let mut n = 0;
        for s in saved.copies.into_iter().filter(|s| fresh(s.t)) {
            let Some(c) = CampaignId::from_hex(&s.c) else {
                continue;
            };
            let mut users = s.u;
            users.truncate(MAX_USERS);
            let place = match s.p {
                0 => Place::Delivered,
                1 => Place::Acted,
                _ => Place::GivenUp,
            };
            let copy = Copy {
                nonce: s.n,
                users,
                moved: s.m,
                queue_id: s.q,
                at: s.t,
                place,
                tries: 0,
                next_try: 0,
            };
            self.record(c, copy);
            n += 1;
        }
        let mut g = lock(&self.inner);
        for (c, t, r) in saved.spam.into_iter().take(MAX_REPORTED) {
            if let (Some(c), true) = (CampaignId::from_hex(&c), fresh(t)) {
                g.spam
                    .insert(c, (t, r.into_iter().take(MAX_REPORTERS).collect()));
            }
        }
        for (c, u) in saved.ham.into_iter().take(MAX_HAM) {
            if let Some(c) = CampaignId::from_hex(&c) {
                g.ham.insert((c, u));
            }
        }
        Ok(n)
    }
}

fn drop_oldest(g: &mut Inner) {
    let Some((_, c)) = g.order.pop_front() else {
        return;
    };
    if let Some(list) = g.copies.get_mut(&c) {
        if !list.is_empty() {
            list.remove(0);
        }
        if list.is_empty() {
            g.copies.remove(&c);
        }
    }
}

/// What finds a job's copy in a user's mailbox where zero-hour acts on
/// it: the inbox (toward Junk) or Junk (back); anywhere, not yet flagged
/// (flag) or flagged (unflag).
fn query(cfg: &Config, job: &Job) -> serde_json::Value {
    let z = &cfg.zero_hour;
    let header = |mut q: Vec<serde_json::Value>| {
        q.extend(["header".into(), HEADER.into(), job.nonce.clone().into()]);
        serde_json::Value::Array(q)
    };
    match (z.action, job.junk) {
        (ZeroHourAction::Flag, true) => header(vec!["unkeyword".into(), "$Junk".into()]),
        (ZeroHourAction::Flag, false) => header(vec!["keyword".into(), "$Junk".into()]),
        (_, true) => header(vec!["mailbox".into(), z.inbox.clone().into()]),
        (_, false) => header(vec!["mailbox".into(), z.junk_mailbox.clone().into()]),
    }
}

/// The doveadm command that acts on a job's copy for `user`.
fn command(cfg: &Config, job: &Job, user: &str) -> (&'static str, serde_json::Value) {
    let z = &cfg.zero_hour;
    let q = query(cfg, job);
    match (z.action, job.junk) {
        (ZeroHourAction::Flag, junk) => (
            if junk { "flagsAdd" } else { "flagsRemove" },
            serde_json::json!({"user": user, "flag": ["$Junk"], "query": q}),
        ),
        (_, junk) => (
            "move",
            serde_json::json!({
                "user": user,
                "destinationMailbox": if junk { &z.junk_mailbox } else { &z.inbox },
                "query": q,
            }),
        ),
    }
}

/// The first failure among `outcomes`, in words.
fn failure(outcomes: &[Outcome]) -> Result<(), String> {
    match outcomes.iter().find(|o| matches!(o, Outcome::Failed(_))) {
        Some(Outcome::Failed(code)) => {
            Err(format!("a doveadm command ended with exit code {code}"))
        }
        _ => Ok(()),
    }
}

/// Carries out one job: the users whose copy was acted on. Toward Junk,
/// a search first finds the recipients whose copy is still where it was
/// delivered (one request), and only those are acted on (a second): a
/// user who filed it themselves is neither counted nor, on an allowance,
/// moved back. With `action = "log"` nothing is sent.
async fn carry_out(client: &Doveadm, cfg: &Config, job: &Job) -> Result<Vec<String>, String> {
    if cfg.zero_hour.action == ZeroHourAction::Log || job.users.is_empty() {
        return Ok(job.users.clone());
    }
    let users: Vec<String> = if job.junk {
        let q = query(cfg, job);
        let search: Vec<(&str, serde_json::Value)> = job
            .users
            .iter()
            .map(|u| ("search", serde_json::json!({"user": u, "query": q})))
            .collect();
        let found = client.send(&search).await.map_err(|e| e.to_string())?;
        failure(&found)?;
        job.users
            .iter()
            .zip(&found)
            .filter(|(_, o)| matches!(o, Outcome::Done(n) if *n > 0))
            .map(|(u, _)| u.clone())
            .collect()
    } else {
        job.users.clone()
    };
    if users.is_empty() {
        return Ok(users);
    }
    let cmds: Vec<(&str, serde_json::Value)> = users.iter().map(|u| command(cfg, job, u)).collect();
    let outcomes = client.send(&cmds).await.map_err(|e| e.to_string())?;
    failure(&outcomes)?;
    Ok(users
        .into_iter()
        .zip(&outcomes)
        .filter(|(_, o)| matches!(o, Outcome::Done(_)))
        .map(|(u, _)| u)
        .collect())
}

/// The doveadm client of `cfg`, its key read from its file.
///
/// # Errors
/// The key file cannot be read or the URL is wrong, in words.
pub fn client(cfg: &Config) -> Result<Doveadm, String> {
    let path = &cfg.zero_hour.doveadm_key_file;
    let key = crate::file::read_regular(path, 4096, crate::file::Links::Follow)
        .map_err(|e| format!("cannot read zero_hour.doveadm_key_file: {e}"))?;
    let key = String::from_utf8_lossy(&key);
    if key.trim().is_empty() {
        return Err(format!(
            "zero_hour.doveadm_key_file {} is empty",
            path.display()
        ));
    }
    Doveadm::new(&cfg.zero_hour.doveadm_url, &key).map_err(str::to_owned)
}

/// The zero-hour task: a round every [`EVERY`] or when a report came.
pub async fn run(state: Arc<State>, z: Arc<ZeroHour>, client: Doveadm) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = z.wake.notified() => {}
        }
        let cfg = state.config();
        let now = crate::milter::unix_now();
        let ids = z.campaigns();
        if ids.is_empty() {
            continue;
        }
        let st = Arc::clone(&state);
        let lookup = ids.clone();
        let standing = tokio::task::spawn_blocking(move || {
            // With Redis, the site's replica brought up to the log first:
            // a campaign that turned bulk through another host is seen.
            if let Some(r) = st.redis() {
                let _ = r.site();
            }
            st.with_view(|e| e.standing(&lookup, now))
        })
        .await
        .unwrap_or_default();
        for job in z.plan(&cfg, &ids, &standing, now) {
            let done = carry_out(&client, &cfg, &job).await;
            z.settle(cfg.zero_hour.action, &job, done, now);
        }
    }
}

/// Reads a report line: (spam, user, header value).
///
/// # Errors
/// What is wrong with it, in words.
pub fn parse_report(line: &str) -> Result<(bool, &str, &str), &'static str> {
    let usage = "usage: spam|ham USER X-BULKWATCH-COPY-VALUE";
    let (kind, rest) = line.trim().split_once(' ').ok_or(usage)?;
    let (user, value) = rest.trim_start().split_once(' ').ok_or(usage)?;
    let spam = match kind {
        "spam" => true,
        "ham" => false,
        _ => return Err(usage),
    };
    if user.is_empty() || user.len() > 320 || user.chars().any(char::is_control) {
        return Err("the user is 1 to 320 characters without control characters");
    }
    Ok((spam, user, value.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::new(&Config::default())
    }

    #[test]
    fn a_stamp_proves_its_recipients_and_nothing_else() {
        let k = key();
        let users = users_of(
            &[
                "Alice@Example.org".to_owned(),
                "<bob@example.org>".to_owned(),
                "alice@example.org".to_owned(),
            ],
            UserName::Address,
        );
        assert_eq!(users, ["alice@example.org", "bob@example.org"]);
        let v = header_value(&k, "00ff", CampaignId(0x1234), 99, &users);
        let s = Stamp::read(&k, &v).expect("sealed");
        assert_eq!((s.campaign, s.at), (CampaignId(0x1234), 99));
        assert!(s.received_by(&k, "alice@example.org"));
        assert!(s.received_by(&k, "BOB@example.org"));
        assert!(!s.received_by(&k, "carol@example.org"));
        assert!(!v.contains("alice"), "recipients are not named: {v}");
        // Folded as a header may be, it still reads.
        assert!(Stamp::read(&k, &v.replace("; r=", ";\r\n\tr=")).is_some());
        // Any change breaks the seal: another campaign, another recipient.
        assert!(Stamp::read(&k, &v.replace("c=00000000123", "c=00000000124")).is_none());
        let other = header_value(
            &k,
            "00ff",
            CampaignId(0x1234),
            99,
            &["carol@example.org".to_owned()],
        );
        let (_, their_seal) = other.rsplit_once("; s=").unwrap();
        let (body, _) = v.rsplit_once("; s=").unwrap();
        let carol_mac = k.user_mac("00ff", "carol@example.org");
        assert!(Stamp::read(&k, &format!("{body},{carol_mac}; s={their_seal}")).is_none());
        // Another site's key reads nothing.
        let mut cfg = Config::default();
        cfg.fingerprint.hash_key = (1, 2);
        assert!(Stamp::read(&Key::new(&cfg), &v).is_none());
    }

    /// The ledger and reports survive a restart through [`FILE`]; what
    /// left the window does not come back.
    #[test]
    fn the_ledger_is_saved_and_restored() {
        let cfg = Config::default();
        let z = ZeroHour::new(&cfg);
        let rcpts = ["a@example.org".to_owned(), "b@example.org".to_owned()];
        let value = z
            .stamp(
                &cfg,
                &verdict(7, Level::Clean),
                &Decision::Accept,
                &rcpts,
                "Q1",
                100,
            )
            .unwrap();
        z.stamp(
            &cfg,
            &verdict(8, Level::Clean),
            &Decision::Accept,
            &rcpts,
            "Q2",
            5,
        )
        .unwrap();
        z.report(&cfg, true, "a@example.org", &value, |_| None, 101);
        let bytes = z.saved();
        let back = ZeroHour::new(&cfg);
        assert_eq!(
            back.restore(&bytes, 200, 150),
            Ok(1),
            "the copy of time 5 left"
        );
        assert_eq!(back.campaigns(), [CampaignId(7)]);
        assert_eq!(
            back.report(&cfg, true, "b@example.org", &value, |_| None, 201)["spam_reporters"],
            2
        );
        assert!(back.restore(b"{", 0, 0).is_err());
    }

    #[test]
    fn report_lines() {
        assert_eq!(
            parse_report("spam a@b n=1; s=2\n"),
            Ok((true, "a@b", "n=1; s=2"))
        );
        assert_eq!(parse_report("ham a@b x"), Ok((false, "a@b", "x")));
        assert!(parse_report("junk a@b x").is_err());
        assert!(parse_report("spam a@b").is_err());
    }

    fn verdict(id: u64, level: Level) -> Verdict {
        let mut v = Verdict::skipped(crate::engine::verdict::SkipReason::TooShort, 0, None);
        v.level = level;
        v.campaign = Some(crate::engine::verdict::CampaignSummary {
            id: CampaignId(id),
            messages: 1,
            recipients: 1,
            score: 1.0,
            first_seen: 0,
            last_seen: 0,
            sender_domains: 1,
            senders: Vec::new(),
            sample_subject: None,
            list_post: false,
            conversation: false,
            largest: 1,
            freed: 0,
            grown: 0,
            own: 0,
            own_largest: 0,
        });
        v
    }

    /// Spam reports count distinct recipients who got a copy: one user
    /// reporting ten times, or a user who got none, moves nothing; three
    /// recipients make the campaign bulk; a ham report lets that
    /// recipient's copies through.
    #[test]
    fn reports_weigh_distinct_recipients_of_a_copy() {
        let cfg = Config::default();
        let z = ZeroHour::new(&cfg);
        let rcpts: Vec<String> = (0..4).map(|i| format!("u{i}@example.org")).collect();
        let v = verdict(7, Level::Clean);
        let value = z
            .stamp(&cfg, &v, &Decision::Accept, &rcpts, "Q1", 10)
            .expect("a copy");
        assert_eq!(z.len(), 1);
        let report = |user: &str, spam: bool| z.report(&cfg, spam, user, &value, |_| None, 11);
        for _ in 0..10 {
            assert_eq!(report("u0@example.org", true)["spam_reporters"], 1);
        }
        assert_eq!(report("mallory@example.org", true)["ok"], false);
        let mut later = verdict(7, Level::Clean);
        z.amend(&cfg, &mut later, &rcpts);
        assert_eq!(later.level, Level::Clean, "one reporter is not enough");
        report("u1@example.org", true);
        assert_eq!(report("u2@example.org", true)["spam_reporters"], 3);
        z.amend(&cfg, &mut later, &rcpts);
        assert_eq!(later.level, Level::Bulk);
        report("u3@example.org", false);
        let mut hers = verdict(7, Level::Bulk);
        z.amend(&cfg, &mut hers, &["u3@example.org".to_owned()]);
        assert_eq!(hers.level, Level::Allowed(AllowReason::Reported));
        // A conversation is never made bulk by reports.
        let mut thread = verdict(7, Level::Clean);
        if let Some(c) = thread.campaign.as_mut() {
            c.conversation = true;
            c.messages = 2;
        }
        z.amend(&cfg, &mut thread, &rcpts);
        assert_eq!(thread.level, Level::Clean);
        // Not recorded: list mail, refused or held copies, bulk ones.
        let mut list = verdict(8, Level::Clean);
        list.list = true;
        assert!(z
            .stamp(&cfg, &list, &Decision::Accept, &rcpts, "Q2", 10)
            .is_none());
        assert!(z
            .stamp(
                &cfg,
                &verdict(9, Level::Bulk),
                &Decision::Accept,
                &rcpts,
                "Q3",
                10
            )
            .is_none());
        assert!(z
            .stamp(
                &cfg,
                &verdict(9, Level::Clean),
                &Decision::Reject,
                &rcpts,
                "Q4",
                10
            )
            .is_none());
    }
}
