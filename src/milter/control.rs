//! Campaigns at runtime: `bulkwatch campaigns list|show|allow|forget`
//! talks to the running daemon through a unix socket in the state
//! directory (`control.sock`, mode 0600: only the daemon's user and root
//! can connect; nothing a remote peer can reach).
//!
//! - `allow ID [SECS]`: later messages of the campaign are `allowed` (for
//!   SECS seconds, or until forgotten or restart-proof for the window);
//!   a merge carries the allowance to the campaign that absorbs it.
//! - `forget ID`: the campaign is dropped from every list and nothing joins
//!   it any more; its text starts again from zero ([`Engine::forget`]).
//! - `show ID`: the campaign and a sample of its members (queue id,
//!   sender, subject, time) from the last [`RECENT`] messages judged.
//!
//! Both survive a restart: they are kept in `control.json` in the state
//! directory, written atomically on every change. They apply to this
//! daemon: with Redis, run the command on each host (docs/campaigns.md).
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

use crate::engine::campaign::CampaignId;
use crate::engine::verdict::{AllowReason, Level, Verdict};
use crate::engine::Engine;
use crate::milter::State;

/// Messages remembered for `show` (queue id, sender, subject, time).
pub const RECENT: usize = 10_000;
/// Members `show` lists, at most (the newest).
pub const SHOWN: usize = 20;
/// Longest request line.
pub const MAX_REQUEST: usize = 256;
/// How long a client may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most allowed campaigns kept (an allowance past the window is dropped
/// when its campaign leaves; this bounds the file either way).
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

/// What survives a restart (`control.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// (campaign id, allowed until: Unix seconds, or none for the window).
    allowed: Vec<(String, Option<u64>)>,
    forgotten: Vec<String>,
}

/// The daemon's runtime corrections.
#[derive(Debug, Default)]
pub struct Control {
    allowed: Mutex<HashMap<CampaignId, Option<u64>>>,
    recent: Mutex<VecDeque<Member>>,
    /// `control.json`; `None`: nothing is saved (tests, no state dir).
    file: Option<PathBuf>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn parse_id(s: &str) -> Option<CampaignId> {
    (s.len() == 12 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(s, 16).ok().map(CampaignId))
        .flatten()
}

impl Control {
    /// Corrections saved in `file` (read now, written on each change).
    /// An unreadable or malformed file is logged and ignored: a daemon
    /// must start.
    pub fn open(file: PathBuf, engine: &mut Engine) -> Control {
        let c = Control {
            file: Some(file),
            ..Control::default()
        };
        let Some(path) = c.file.as_deref() else {
            return c;
        };
        match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<Saved>(&bytes) {
                Ok(saved) => {
                    let mut allowed = lock(&c.allowed);
                    for (id, until) in saved.allowed.iter().take(MAX_ALLOWED) {
                        if let Some(id) = parse_id(id) {
                            allowed.insert(id, *until);
                        }
                    }
                    drop(allowed);
                    for id in saved.forgotten.iter().filter_map(|s| parse_id(s)) {
                        engine.forget(id);
                    }
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "control file unreadable, ignored");
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "control file unreadable, ignored");
            }
        }
        c
    }

    /// Makes `v` allowed when its campaign is: allowed until a time not yet
    /// passed, or merged from an allowed campaign (the allowance moves).
    pub fn apply(&self, v: &mut Verdict, now: u64) {
        let Some(id) = v.campaign.as_ref().map(|c| c.id) else {
            return;
        };
        let mut allowed = lock(&self.allowed);
        if allowed.is_empty() {
            return;
        }
        allowed.retain(|_, until| until.is_none_or(|u| u > now));
        let mut moved = false;
        for m in &v.merged {
            if let Some(until) = allowed.remove(m) {
                allowed.entry(id).or_insert(until);
                moved = true;
            }
        }
        if allowed.contains_key(&id) && v.level != Level::Allowed {
            v.level = Level::Allowed;
            v.allow = Some(AllowReason::Campaign);
        }
        drop(allowed);
        if moved {
            self.save(None);
        }
    }

    /// Remembers a judged message for `show`.
    pub fn note(&self, m: Member) {
        let mut r = lock(&self.recent);
        if r.len() >= RECENT {
            r.pop_front();
        }
        r.push_back(m);
    }

    /// Writes `control.json` (atomically: a temporary file renamed over
    /// it). `forgotten`: the engine's list, when the caller holds it.
    fn save(&self, forgotten: Option<Vec<CampaignId>>) {
        let Some(path) = self.file.as_deref() else {
            return;
        };
        let mut saved = read_saved(path);
        saved.allowed = lock(&self.allowed)
            .iter()
            .map(|(id, until)| (id.to_string(), *until))
            .collect();
        if let Some(f) = forgotten {
            saved.forgotten = f.iter().map(ToString::to_string).collect();
        }
        let tmp = path.with_extension("json.tmp");
        let result = serde_json::to_vec(&saved)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = result {
            tracing::warn!(file = %path.display(), error = %e, "cannot save the control file");
        }
    }

    /// Answers one request line (module notes).
    pub fn handle(&self, state: &State, line: &str, now: u64) -> serde_json::Value {
        let mut words = line.split_whitespace();
        let (cmd, arg, extra) = (words.next(), words.next(), words.next());
        let id = arg.map(|a| parse_id(a).ok_or(a));
        match (cmd, id) {
            (Some("list"), None) => serde_json::json!({
                "campaigns": crate::milter::metrics::campaigns(state),
                "allowed": lock(&self.allowed).keys().map(ToString::to_string).collect::<Vec<_>>(),
            }),
            (Some("show"), Some(Ok(id))) => self.show(state, id),
            (Some("allow"), Some(Ok(id))) => {
                let secs = match extra.map(str::parse::<u64>) {
                    None => None,
                    Some(Ok(s)) if s > 0 => Some(s),
                    Some(_) => return error("allow: the duration is whole seconds above 0"),
                };
                {
                    let mut allowed = lock(&self.allowed);
                    if allowed.len() >= MAX_ALLOWED && !allowed.contains_key(&id) {
                        return error("allow: too many allowed campaigns");
                    }
                    allowed.insert(id, secs.map(|s| now.saturating_add(s)));
                }
                self.save(None);
                state.metrics.record_control("allow");
                tracing::info!(campaign = %id, seconds = secs, "campaign allowed");
                serde_json::json!({"ok": true, "campaign": id.to_string(), "until": secs.map(|s| now.saturating_add(s))})
            }
            (Some("forget"), Some(Ok(id))) => {
                if state.shared().is_some() {
                    return error("forget: not with a Redis store (the site's state is in Redis); allow the campaign instead");
                }
                let (found, forgotten) = {
                    let mut e = state.engine();
                    let found = e.forget(id);
                    (found, e.forgotten().collect::<Vec<_>>())
                };
                if !found {
                    return error(&format!("forget: no live campaign {id}"));
                }
                lock(&self.allowed).remove(&id);
                self.save(Some(forgotten));
                state.metrics.record_control("forget");
                tracing::info!(campaign = %id, "campaign forgotten");
                serde_json::json!({"ok": true, "campaign": id.to_string()})
            }
            (Some(_), Some(Err(bad))) => {
                error(&format!("not a campaign id: {bad:?} (12 hex digits)"))
            }
            _ => error("usage: list | show ID | allow ID [SECONDS] | forget ID"),
        }
    }

    fn show(&self, state: &State, id: CampaignId) -> serde_json::Value {
        let key = id.to_string();
        let campaign = crate::milter::metrics::campaigns(state)
            .into_iter()
            .find(|c| c.id == key);
        let members: Vec<Member> = {
            let recent = lock(&self.recent);
            state.with_view(|e| {
                recent
                    .iter()
                    .rev()
                    .filter(|m| m.seq.and_then(|s| e.campaign_of_seq(s)).or(m.campaign) == Some(id))
                    .take(SHOWN)
                    .cloned()
                    .collect()
            })
        };
        match campaign {
            None if members.is_empty() => error(&format!("show: no live campaign {id}")),
            _ => serde_json::json!({
                "campaign": campaign,
                "allowed": lock(&self.allowed).get(&id).map(|u| serde_json::json!({"until": u})),
                "members": members,
            }),
        }
    }
}

fn read_saved(path: &Path) -> Saved {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn error(msg: &str) -> serde_json::Value {
    serde_json::json!({"ok": false, "error": msg})
}

/// Serves the control socket until the task is dropped: one connection at
/// a time (a request is a line; the answer is small).
pub async fn serve(listener: UnixListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (read, mut write) = stream.into_split();
        let mut line = String::new();
        let got = tokio::time::timeout(READ_TIMEOUT, async {
            BufReader::new(read.take(MAX_REQUEST as u64))
                .read_line(&mut line)
                .await
        })
        .await;
        let answer =
            match got {
                Ok(Ok(_)) if line.ends_with('\n') || line.len() < MAX_REQUEST => state
                    .control
                    .handle(&state, line.trim(), crate::milter::unix_now()),
                Ok(Ok(_)) => error("request too long"),
                _ => continue,
            };
        let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
        let _ = write.shutdown().await;
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
