//! Counters, Prometheus text and a tiny HTTP/1.0 server for them.
//!
//! `GET /metrics` answers the Prometheus text format; `GET /campaigns` the
//! live campaigns as JSON. The server is hand-written on a tokio
//! `TcpListener`: one request per connection, at most 8 KiB of request
//! read, 2 s to send it, then the connection is closed. Anything else gets
//! 404, 405 or 400.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::engine::verdict::{AllowReason, Level, LevelKind, Verdict};
use crate::engine::{Engine, EngineStats};
use crate::milter::State;
use crate::store::RedisLayer;
use crate::worker::Pool;

/// Upper bounds of the engine latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// An operator's correction, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlAction {
    Allow,
    Disallow,
    Forget,
}

/// Counters updated by the milter, read by `/metrics`.
#[derive(Debug)]
pub struct Metrics {
    by_level: [AtomicU64; LevelKind::ALL.len()],
    /// Allowed messages by reason (`AllowReason::ALL`'s order).
    by_allow: [AtomicU64; AllowReason::ALL.len()],
    /// Messages of the list class (any level).
    list: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    engine_micros: AtomicU64,
    engine_count: AtomicU64,
    /// Unix seconds of the last snapshot written or loaded; the start time
    /// until there is one.
    last_snapshot: AtomicU64,
    accept_errors: AtomicU64,
    evictions: AtomicU64,
    refusals: AtomicU64,
    http_refused: AtomicU64,
    http_evicted: AtomicU64,
    allows: AtomicU64,
    disallows: AtomicU64,
    forgets: AtomicU64,
}

impl Metrics {
    pub fn new(now: u64) -> Metrics {
        Metrics {
            by_level: Default::default(),
            by_allow: Default::default(),
            list: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            buckets: Default::default(),
            engine_micros: AtomicU64::new(0),
            engine_count: AtomicU64::new(0),
            last_snapshot: AtomicU64::new(now),
            accept_errors: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            http_refused: AtomicU64::new(0),
            http_evicted: AtomicU64::new(0),
            allows: AtomicU64::new(0),
            disallows: AtomicU64::new(0),
            forgets: AtomicU64::new(0),
        }
    }

    /// A milter accept failed (and was waited out).
    pub fn record_accept_error(&self) {
        self.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A milter connection was closed to make room for a new one.
    pub fn record_eviction(&self) {
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    /// A new milter connection was closed at once: all were active.
    pub fn record_refusal(&self) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
    }

    /// An operator's correction (`bulkwatch campaigns`, the dashboard).
    pub fn record_control(&self, action: ControlAction) {
        match action {
            ControlAction::Allow => &self.allows,
            ControlAction::Disallow => &self.disallows,
            ControlAction::Forget => &self.forgets,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// A new HTTP connection was closed unanswered: every open one had
    /// sent its request.
    pub fn record_http_refused(&self) {
        self.http_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// An HTTP connection that had not sent its request was closed to make
    /// room for a new one.
    pub fn record_http_evicted(&self) {
        self.http_evicted.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_verdict(&self, level: Level, elapsed: Duration) {
        if let Some(c) = self.by_level.get(level.kind().index()) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let secs = elapsed.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            if let Some(c) = self.buckets.get(i) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.engine_micros.fetch_add(
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.engine_count.fetch_add(1, Ordering::Relaxed);
    }

    /// What a verdict says besides its level: why it was allowed, and
    /// whether it is list mail.
    pub fn record_class(&self, v: &Verdict) {
        if let Some(r) = v.level.allow_reason() {
            let i = AllowReason::ALL.iter().position(|x| *x == r).unwrap_or(0);
            if let Some(c) = self.by_allow.get(i) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        if v.list {
            self.list.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Messages allowed for `reason`.
    pub fn allowed(&self, reason: AllowReason) -> u64 {
        AllowReason::ALL
            .iter()
            .position(|x| *x == reason)
            .and_then(|i| self.by_allow.get(i))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Messages of the list class.
    pub fn list_messages(&self) -> u64 {
        self.list.load(Ordering::Relaxed)
    }

    /// An engine failure, timeout or action error.
    pub fn record_error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    pub fn messages(&self, level: LevelKind) -> u64 {
        self.by_level
            .get(level.index())
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    pub fn snapshot_written(&self, at: u64) {
        self.last_snapshot.store(at, Ordering::Relaxed);
    }
}

/// The Prometheus text exposition of `state` at `now`.
pub fn render(state: &State, now: u64) -> String {
    let m = &state.metrics;
    let mut s = String::new();
    render_verdicts(&mut s, m);
    render_state(&mut s, &state.with_view(Engine::stats), m, now);
    render_errors(&mut s, m);
    if let Some(w) = state.workers() {
        render_workers(&mut s, w);
    }
    if let Some(l) = state.later() {
        render_later(&mut s, l);
    }
    render_engine_time(&mut s, m);
    render_alerts(&mut s, &state.alert_counts);
    if let Some(z) = state.zero_hour() {
        render_zero_hour(&mut s, z);
    }
    if let Some(sh) = state.redis() {
        render_redis(&mut s, sh);
    }
    s
}

/// Messages by level, allowed by reason, list mail.
fn render_verdicts(s: &mut String, m: &Metrics) {
    let _ = writeln!(
        s,
        "# HELP bulkwatch_messages_total Messages judged, by verdict level."
    );
    let _ = writeln!(s, "# TYPE bulkwatch_messages_total counter");
    for l in LevelKind::ALL {
        let _ = writeln!(
            s,
            "bulkwatch_messages_total{{level=\"{}\"}} {}",
            l.as_str(),
            m.messages(l)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_allowed_total Messages allowed without judging, by reason.\n\
         # TYPE bulkwatch_allowed_total counter"
    );
    for r in AllowReason::ALL {
        let _ = writeln!(
            s,
            "bulkwatch_allowed_total{{reason=\"{}\"}} {}",
            r.as_str(),
            m.allowed(r)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_list_messages_total Messages judged as mailing-list mail \
         (list headers, one sender domain), at any level.\n\
         # TYPE bulkwatch_list_messages_total counter\nbulkwatch_list_messages_total {}",
        m.list_messages()
    );
}

/// What the alert task did ([`crate::milter::alert::Counts`]).
fn render_alerts(s: &mut String, c: &crate::milter::alert::Counts) {
    use std::sync::atomic::Ordering::Relaxed;
    let _ = writeln!(
        s,
        "# HELP bulkwatch_alerts_total Alerts by what this host's alert task did: mailed \
         (sent), left to another host of the site that claimed it (elsewhere), or failed; \
         campaigns held back by alerts.min_interval are named in the next mail.\n\
         # TYPE bulkwatch_alerts_total counter"
    );
    for (outcome, n) in [
        ("sent", c.sent.load(Relaxed)),
        ("elsewhere", c.elsewhere.load(Relaxed)),
        ("failed", c.failed.load(Relaxed)),
    ] {
        let _ = writeln!(s, "bulkwatch_alerts_total{{outcome=\"{outcome}\"}} {n}");
    }
}

/// Gauges of the engine's state and the snapshot's age.
fn render_state(s: &mut String, stats: &EngineStats, m: &Metrics, now: u64) {
    let gauges = [
        (
            "bulkwatch_campaigns_active",
            "Live campaigns in the window.",
            stats.campaigns as f64,
        ),
        (
            "bulkwatch_window_entries",
            "Messages in the window.",
            stats.window_entries as f64,
        ),
        (
            "bulkwatch_bloom_fill_ratio",
            "Fraction of bits set in the newest Bloom generation.",
            stats.bloom_fill,
        ),
        (
            "bulkwatch_snapshot_age_seconds",
            "Seconds since the last state snapshot (since start when none yet).",
            now.saturating_sub(m.last_snapshot.load(Ordering::Relaxed)) as f64,
        ),
    ];
    for (name, help, v) in gauges {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
    }
}

/// Engine and action errors, connection and HTTP guards, operators'
/// corrections.
fn render_errors(s: &mut String, m: &Metrics) {
    let _ = writeln!(
        s,
        "# HELP bulkwatch_errors_total Engine failures, timeouts and milter action errors."
    );
    let _ = writeln!(
        s,
        "# TYPE bulkwatch_errors_total counter\nbulkwatch_errors_total {}",
        m.errors()
    );
    let counters = [
        (
            "bulkwatch_accept_errors_total",
            "Milter accepts that failed (out of file descriptors, ...) and were waited out.",
            m.accept_errors.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_connections_evicted_total",
            "Milter connections closed to make room at max_connections (fresh ones that \
             never sent a command, then quiet and stalled ones).",
            m.evictions.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_connections_refused_total",
            "New milter connections closed at once: max_connections were open and active.",
            m.refusals.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_http_refused_total",
            "HTTP connections closed unanswered: the most were open, each with its request.",
            m.http_refused.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_http_evicted_total",
            "HTTP connections closed before their request arrived, to make room (slow or \
             idle clients).",
            m.http_evicted.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_campaign_allows_total",
            "Campaigns allowed at runtime (bulkwatch campaigns allow).",
            m.allows.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_campaign_disallows_total",
            "Allowances withdrawn at runtime (bulkwatch campaigns disallow).",
            m.disallows.load(Ordering::Relaxed),
        ),
        (
            "bulkwatch_campaign_forgets_total",
            "Campaigns forgotten at runtime (bulkwatch campaigns forget).",
            m.forgets.load(Ordering::Relaxed),
        ),
    ];
    for (name, help, v) in counters {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
    }
}

/// Reading failures by cause and workers started.
fn render_workers(s: &mut String, w: &Pool) {
    let st = w.stats();
    let _ = writeln!(
        s,
        "# HELP bulkwatch_analysis_failures_total Messages not judged because reading \
         them failed, by cause (the worker died, timed out, panicked, answered \
         malformed, none could be started, or none was free within \
         milter.queue_timeout_ms: queue); each got failure_action.\n\
         # TYPE bulkwatch_analysis_failures_total counter"
    );
    for l in crate::worker::Failure::LABELS {
        let _ = writeln!(
            s,
            "bulkwatch_analysis_failures_total{{cause=\"{l}\"}} {}",
            st.failures(l)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_partial_readings_total Messages judged on their shallow \
         reading because the deep one (attached PDFs, pictures) failed after it, by \
         cause; each was judged, read partly (read=partial).\n\
         # TYPE bulkwatch_partial_readings_total counter"
    );
    for l in crate::worker::Failure::LABELS {
        let _ = writeln!(
            s,
            "bulkwatch_partial_readings_total{{cause=\"{l}\"}} {}",
            st.partial(l)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_workers_died_idle_total Workers found dead while idle, \
         replaced before a message was given to them.\n\
         # TYPE bulkwatch_workers_died_idle_total counter\nbulkwatch_workers_died_idle_total {}\n\
         # HELP bulkwatch_worker_restarts_throttled_total Worker restarts held back \
         after repeated deaths.\n\
         # TYPE bulkwatch_worker_restarts_throttled_total counter\n\
         bulkwatch_worker_restarts_throttled_total {}",
        st.died_idle.load(Ordering::Relaxed),
        st.throttled.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        s,
        "# HELP bulkwatch_workers_started_total Worker processes started (at start, \
         after a failure, and every {} messages).\n\
         # TYPE bulkwatch_workers_started_total counter\nbulkwatch_workers_started_total {}",
        crate::worker::MAX_USES,
        st.started.load(Ordering::Relaxed)
    );
    render_ocr(s, w);
}

/// What the OCR workers did: messages by outcome, their starts and
/// failures (0 until they started: at the first picture of text).
fn render_ocr(s: &mut String, w: &Pool) {
    let _ = writeln!(
        s,
        "# HELP bulkwatch_ocr_messages_total Messages with a picture under a short \
         text, read again by the OCR workers: their reading counted (read), without \
         a picture Tesseract stopped at its own deadline (partial); no OCR worker \
         free in the message's time (timed_out), the OCR worker killed at the \
         message's deadline (killed) or another failure (failed), the first \
         reading standing; or no Tesseract installed (unavailable).\n\
         # TYPE bulkwatch_ocr_messages_total counter"
    );
    for o in crate::worker::OcrOutcome::ALL {
        let (l, n) = (o.label(), w.stats().ocr(o));
        let _ = writeln!(s, "bulkwatch_ocr_messages_total{{outcome=\"{l}\"}} {n}");
    }
    let ocr = w.ocr_stats();
    let _ = writeln!(
        s,
        "# HELP bulkwatch_ocr_workers_started_total OCR worker processes started.\n\
         # TYPE bulkwatch_ocr_workers_started_total counter\n\
         bulkwatch_ocr_workers_started_total {}",
        ocr.map_or(0, |o| o.started.load(Ordering::Relaxed))
    );
    let _ = writeln!(
        s,
        "# HELP bulkwatch_ocr_failures_total OCR readings that failed, by cause \
         (as bulkwatch_analysis_failures_total, the OCR worker's own first answer \
         included; the message kept its first reading).\n\
         # TYPE bulkwatch_ocr_failures_total counter"
    );
    for l in crate::worker::Failure::LABELS {
        let n = ocr.map_or(0, |o| o.failures(l) + o.partial_failures(l));
        let _ = writeln!(s, "bulkwatch_ocr_failures_total{{cause=\"{l}\"}} {n}");
    }
}

/// The messages read later, their pictures' text (`milter::later`).
fn render_later(s: &mut String, l: &crate::milter::later::Later) {
    let c = &l.counts;
    let _ = writeln!(
        s,
        "# HELP bulkwatch_ocr_later_total Messages judged without their pictures' text \
         (pictures=unread) and queued to be read later: queued, read and counted in their \
         campaign (read), dropped from a full queue, the largest client's first (dropped), \
         not read again (failed).\n\
         # TYPE bulkwatch_ocr_later_total counter"
    );
    for (l, n) in [
        ("queued", &c.queued),
        ("read", &c.read),
        ("dropped", &c.dropped),
        ("failed", &c.failed),
    ] {
        let _ = writeln!(
            s,
            "bulkwatch_ocr_later_total{{outcome=\"{l}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_ocr_later_waiting Messages waiting to be read later.\n\
         # TYPE bulkwatch_ocr_later_waiting gauge\nbulkwatch_ocr_later_waiting {}",
        l.len()
    );
}

/// Zero-hour's copies and reports (`milter::zerohour`).
fn render_zero_hour(s: &mut String, z: &crate::milter::zerohour::ZeroHour) {
    let c = &z.counts;
    let _ = writeln!(
        s,
        "# HELP bulkwatch_zero_hour_copies_total Delivered copies zero-hour recorded (recorded), \
         acted on in a recipient's mailbox when their campaign turned bulk, by recipient (junk), \
         moved back when it was allowed (back), requests that failed and were tried again \
         (failed), copies given up after their last try (given_up).\n\
         # TYPE bulkwatch_zero_hour_copies_total counter"
    );
    for (l, n) in [
        ("recorded", &c.recorded),
        ("junk", &c.junked),
        ("back", &c.restored),
        ("failed", &c.failed),
        ("given_up", &c.given_up),
    ] {
        let _ = writeln!(
            s,
            "bulkwatch_zero_hour_copies_total{{outcome=\"{l}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_zero_hour_reports_total Users' reports: spam, ham, and refused \
         (no copy delivered to the reporter).\n\
         # TYPE bulkwatch_zero_hour_reports_total counter"
    );
    for (l, n) in [
        ("spam", &c.spam_reports),
        ("ham", &c.ham_reports),
        ("refused", &c.refused_reports),
    ] {
        let _ = writeln!(
            s,
            "bulkwatch_zero_hour_reports_total{{kind=\"{l}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_zero_hour_recorded Copies in the zero-hour ledger now.\n\
         # TYPE bulkwatch_zero_hour_recorded gauge\nbulkwatch_zero_hour_recorded {}",
        z.len()
    );
}

/// The engine time histogram.
fn render_engine_time(s: &mut String, m: &Metrics) {
    let _ = writeln!(
        s,
        "# HELP bulkwatch_engine_seconds Engine time per message (analyze and decide)."
    );
    let _ = writeln!(s, "# TYPE bulkwatch_engine_seconds histogram");
    let mut cumulative = 0;
    for (b, c) in BUCKETS.iter().zip(&m.buckets) {
        cumulative += c.load(Ordering::Relaxed);
        let _ = writeln!(
            s,
            "bulkwatch_engine_seconds_bucket{{le=\"{b}\"}} {cumulative}"
        );
    }
    let count = m.engine_count.load(Ordering::Relaxed);
    let _ = writeln!(s, "bulkwatch_engine_seconds_bucket{{le=\"+Inf\"}} {count}");
    let _ = writeln!(
        s,
        "bulkwatch_engine_seconds_sum {}",
        m.engine_micros.load(Ordering::Relaxed) as f64 / 1e6
    );
    let _ = writeln!(s, "bulkwatch_engine_seconds_count {count}");
}

/// Redis: up, calls, fallbacks, repairs, the log's round trips.
fn render_redis(s: &mut String, sh: &RedisLayer) {
    let st = &sh.stats;
    let up = u8::from(st.up.load(Ordering::Relaxed));
    let _ = writeln!(
        s,
        "# HELP bulkwatch_redis_up 1 when the last Redis call succeeded.\n\
         # TYPE bulkwatch_redis_up gauge\nbulkwatch_redis_up {up}"
    );
    let counters = [
        (
            "bulkwatch_redis_messages_total",
            "Messages judged by the shared Redis store.",
            &st.ok,
        ),
        (
            "bulkwatch_redis_errors_total",
            "Failed Redis calls (connect, timeout, reply).",
            &st.errors,
        ),
        (
            "bulkwatch_redis_fallbacks_total",
            "Messages judged from the local window instead of Redis.",
            &st.fallbacks,
        ),
        (
            "bulkwatch_redis_outages_total",
            "Times Redis went from reachable to unreachable.",
            &st.outages,
        ),
        (
            "bulkwatch_redis_fallback_copies_total",
            "Copies of the replica that took over the fallback engine.",
            &st.fallback_copies,
        ),
    ];
    for (name, help, c) in counters {
        let _ = writeln!(
            s,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
            c.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bulkwatch_redis_wrongtype_repairs_total Keys of bulkwatch's prefix deleted \
         for holding a value of another type (WRONGTYPE) or a log that took no entry; the calls went on.\n\
         # TYPE bulkwatch_redis_wrongtype_repairs_total counter\n\
         bulkwatch_redis_wrongtype_repairs_total {}",
        sh.wrongtype_repairs()
    );
    let (trips, carried) = sh.log_round_trips();
    let _ = writeln!(
        s,
        "# HELP bulkwatch_redis_log_round_trips_total Round trips to the Redis log \
         (one carries every message that waited for it).\n\
         # TYPE bulkwatch_redis_log_round_trips_total counter\n\
         bulkwatch_redis_log_round_trips_total {trips}\n\
         # HELP bulkwatch_redis_log_appends_total Messages appended to the Redis log.\n\
         # TYPE bulkwatch_redis_log_appends_total counter\n\
         bulkwatch_redis_log_appends_total {carried}"
    );
    render_integrity(s, sh.integrity());
}

/// What the log and the head showed of writers without the site's key or
/// of changes made to them (docs/admin/redis.md, "Who may write to it").
fn render_integrity(s: &mut String, i: &crate::store::stream::Integrity) {
    let counters = [
        (
            "bulkwatch_redis_unsealed_entries_total",
            "Log entries without this site's seal, skipped.",
            &i.unsealed,
        ),
        (
            "bulkwatch_redis_log_cuts_total",
            "Times entries this host had read were gone from the log (deleted or trimmed).",
            &i.cuts,
        ),
        (
            "bulkwatch_redis_entries_again_total",
            "Sealed entries met again (copies, replays), not applied twice.",
            &i.again,
        ),
        (
            "bulkwatch_redis_entries_missing_total",
            "Entries missing from a host's sequence (removed from the log, or lost).",
            &i.missing,
        ),
        (
            "bulkwatch_redis_head_rollbacks_total",
            "Times the head (allowances, corrections) was older than one this host verified, \
             missing or unsealed.",
            &i.rollbacks,
        ),
        (
            "bulkwatch_redis_head_repairs_total",
            "Times this host wrote back the head it had verified.",
            &i.repairs,
        ),
    ];
    for (name, help, c) in counters {
        let _ = writeln!(
            s,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
            c.load(Ordering::Relaxed)
        );
    }
}

/// One campaign in `/campaigns`.
#[derive(Debug, Serialize)]
pub struct CampaignJson {
    pub id: String,
    /// `clean`, `suspect` or `bulk`: the level its messages get from its
    /// size (as verdicts are: a campaign of one message within
    /// `thresholds.single_transaction_recipients` is clean); see `allowed`.
    pub level: &'static str,
    pub messages: u32,
    pub recipients: u64,
    /// Weighted recipients, what the thresholds compare.
    pub score: f64,
    pub first_seen: u64,
    pub last_seen: u64,
    pub sender_domains: Vec<String>,
    pub sample_subject: Option<String>,
    /// Its messages in the window by arrival, [`ARRIVAL_BUCKETS`] equal
    /// parts of the window ending now, oldest first.
    pub arrivals: Vec<u32>,
    /// An operator allowed it (`bulkwatch campaigns allow`) and the
    /// allowance runs.
    pub allowed: bool,
    /// When the allowance ends (Unix seconds); absent while it lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_until: Option<u64>,
    /// Every message of it was a list's post from one sender domain: mail
    /// of a list (`list=yes`, `policy.list`).
    pub list: bool,
    /// What its level is measured on: its weighted recipients less its
    /// largest single delivery and its replies' (`engine::party`).
    pub measure: f64,
    /// Recipients of the site's own mail in it (`[own]`), counted apart.
    pub own: u32,
    /// The level of its own mail on that tally.
    pub own_level: &'static str,
}

/// Parts of the window in a campaign's `arrivals`.
pub const ARRIVAL_BUCKETS: usize = 24;
/// Campaigns a list shows unless asked for another number (`limit`).
pub const MAX_LISTED: usize = 500;
/// The most any list shows: the answer stays bounded whatever the window
/// holds.
pub const MAX_LIMIT: usize = 10_000;

/// The `key=value` pairs of a URL query, decoded (`%XX`, `+` for a
/// space); at most 16 pairs of 256 bytes (a filter holds four).
pub fn query_pairs(query: &str) -> Vec<(&str, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .take(16)
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k, percent_decoded(v.get(..256).unwrap_or(v)))
        })
        .collect()
}

/// `s` with `%XX` decoded and `+` read as a space (bytes that do not make
/// UTF-8 are replaced).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| b.get(j).and_then(|h| (*h as char).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Which campaigns a list shows (`/campaigns?…`, `campaigns list …`): by
/// level, by recipients, by a text in the subject or a sender domain, and
/// how many. Lists are in order of concern: bulk, then suspect, then
/// clean, then allowed ones; the most recipients first within each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Levels shown (`bulk`, `suspect`, `clean`, `allowed`); empty: all.
    pub levels: Vec<String>,
    pub min_recipients: u64,
    /// Shown when the subject or a sender domain holds it (without
    /// regard to case).
    pub search: Option<String>,
    /// At most this many ([`MAX_LIMIT`] at most).
    pub limit: usize,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            levels: Vec::new(),
            min_recipients: 0,
            search: None,
            limit: MAX_LISTED,
        }
    }
}

impl Filter {
    /// A filter from `key=value` pairs (a URL's query, the control
    /// socket's words): `level` (comma-separated), `min_recipients`,
    /// `q`, `limit`. Unknown keys are errors, as are values that do not
    /// read.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> Result<Filter, String> {
        let mut f = Filter::default();
        for (k, v) in pairs {
            match k {
                "level" => {
                    for l in v.split(',').filter(|l| !l.is_empty()) {
                        let l = l.to_ascii_lowercase();
                        if !["bulk", "suspect", "clean", "allowed"].contains(&l.as_str()) {
                            return Err(format!("level `{l}`: bulk, suspect, clean or allowed"));
                        }
                        f.levels.push(l);
                    }
                }
                "min_recipients" => {
                    f.min_recipients = v
                        .parse()
                        .map_err(|_| format!("min_recipients `{v}`: a whole number"))?;
                }
                "limit" => {
                    let n: usize = v
                        .parse()
                        .map_err(|_| format!("limit `{v}`: a whole number"))?;
                    f.limit = n.clamp(1, MAX_LIMIT);
                }
                "q" => f.search = Some(v).filter(|s| !s.is_empty()),
                _ => {
                    return Err(format!(
                        "unknown filter `{k}` (level, min_recipients, q, limit)"
                    ))
                }
            }
        }
        Ok(f)
    }

    fn admits(&self, c: &CampaignJson) -> bool {
        let shown_level = if c.allowed { "allowed" } else { c.level };
        (self.levels.is_empty() || self.levels.iter().any(|l| l == shown_level))
            && c.recipients >= self.min_recipients
            && self.search.as_ref().is_none_or(|q| {
                let q = q.to_lowercase();
                c.sample_subject
                    .as_deref()
                    .is_some_and(|s| s.to_lowercase().contains(&q))
                    || c.sender_domains
                        .iter()
                        .any(|d| d.to_lowercase().contains(&q))
            })
    }
}

/// A campaign's place in a list: bulk, suspect, clean, then allowed.
fn concern(c: &CampaignJson) -> u8 {
    match (c.allowed, c.level) {
        (true, _) => 3,
        (_, "bulk") => 0,
        (_, "suspect") => 1,
        _ => 2,
    }
}

/// Whose campaigns a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The memory store: this host's campaigns, which are all there is.
    Host,
    /// The site's campaigns, from Redis (every host's messages).
    Site,
    /// Redis is configured but did not answer: this host's own campaigns
    /// only, which may be far smaller than the site's.
    HostRedisUnavailable,
}

impl View {
    /// The `X-Bulkwatch-View` header's value and the control socket's
    /// `view`.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Host => "host",
            View::Site => "site",
            View::HostRedisUnavailable => "host; redis unavailable",
        }
    }
}

/// The campaigns a list shows, whose they are, and how many there are.
pub struct CampaignList {
    pub view: View,
    pub campaigns: Vec<CampaignJson>,
    /// Live campaigns in all.
    pub active: usize,
    /// Those the filter admits (of which `campaigns` are the first).
    pub matched: usize,
}

/// The live campaigns as JSON ([`Filter::default`]), and whose they are.
pub fn campaigns_json(state: &State) -> (String, View) {
    campaigns_json_at(state, crate::milter::unix_now())
}

fn campaigns_json_at(state: &State, now: u64) -> (String, View) {
    let list = campaigns_at(state, now, &Filter::default());
    let body = crate::escape::json(
        &serde_json::to_string(&list.campaigns).unwrap_or_else(|_| "[]".to_owned()),
    );
    (body, list.view)
}

/// The live campaigns `filter` admits, in order of concern, at most its
/// limit (what `/campaigns` and the control socket show).
pub fn campaigns(state: &State) -> CampaignList {
    campaigns_filtered(state, &Filter::default())
}

/// [`campaigns`] through `filter`.
pub fn campaigns_filtered(state: &State, filter: &Filter) -> CampaignList {
    campaigns_at(state, crate::milter::unix_now(), filter)
}

fn campaigns_at(state: &State, now: u64, filter: &Filter) -> CampaignList {
    use crate::engine::campaign::{Campaign, WHILE_LIVE};
    let thresholds = state.config().thresholds.clone();
    let json = |c: &Campaign, arrivals: Vec<u32>| {
        let allowed = c.allowed_until.is_some_and(|u| u.get() > now);
        let summary = crate::engine::verdict::CampaignSummary::from(c);
        CampaignJson {
            id: c.id.to_string(),
            level: crate::engine::verdict::campaign_level(&summary, &thresholds).as_str(),
            measure: c.measure(thresholds.single_transaction_recipients),
            own: c.own,
            own_level: crate::engine::verdict::own_level(&summary, &thresholds).as_str(),
            messages: c.messages,
            recipients: c.recipients,
            score: c.score(),
            first_seen: c.first_seen.into(),
            last_seen: c.last_seen.into(),
            sender_domains: c.texts.names_vec(),
            sample_subject: c.texts.subject().map(str::to_owned),
            arrivals,
            allowed,
            allowed_until: c
                .allowed_until
                .map(std::num::NonZeroU64::get)
                .filter(|u| allowed && *u < WHILE_LIVE),
            list: c.list_post && c.sender_domains() <= 1,
        }
    };
    // With Redis, the site's campaigns: the replica brought up to now.
    // When Redis fails, this daemon's own view.
    let site = state.redis().map(crate::store::RedisLayer::site);
    let view = match &site {
        None => View::Host,
        Some(Ok(())) => View::Site,
        Some(Err(e)) => {
            tracing::debug!(error = %e, "campaign list: redis unavailable, local view shown");
            View::HostRedisUnavailable
        }
    };
    // A campaign whose last message left the window is gone, though the
    // engine drops it only at its next expiry (the next message): it was
    // listed as active meanwhile (issue 66's frictions).
    let window = state.config().window.window.as_secs();
    let mut list: Vec<CampaignJson> = state.with_view(|e| {
        let mut arrivals = e.arrivals(crate::engine::UnixSecs(now), ARRIVAL_BUCKETS);
        e.campaigns()
            .filter(|c| u64::from(c.last_seen).saturating_add(window) >= now)
            .map(|c| {
                let a = arrivals
                    .remove(&c.id)
                    .unwrap_or_else(|| vec![0; ARRIVAL_BUCKETS]);
                json(&c, a)
            })
            .collect()
    });
    let active = list.len();
    list.retain(|c| filter.admits(c));
    let matched = list.len();
    list.sort_by(|a, b| {
        concern(a)
            .cmp(&concern(b))
            .then_with(|| b.recipients.cmp(&a.recipients))
            .then_with(|| a.id.cmp(&b.id))
    });
    list.truncate(filter.limit.clamp(1, MAX_LIMIT));
    CampaignList {
        view,
        campaigns: list,
        active,
        matched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::Engine;

    #[test]
    fn metrics_text_has_every_family() {
        let state = State::new(Engine::new(&Config::default()));
        state
            .metrics
            .record_verdict(Level::Bulk, Duration::from_millis(3));
        state.metrics.record_error();
        let mut v = Verdict::allowed(AllowReason::Recipient);
        state.metrics.record_class(&v);
        v.list = true;
        state.metrics.record_class(&v);
        // A campaign the operator allowed counts under its own reason (it
        // once fell through to sender_domain).
        state
            .metrics
            .record_class(&Verdict::allowed(AllowReason::Campaign));
        let text = render(&state, crate::milter::unix_now());
        for name in [
            "bulkwatch_messages_total{level=\"bulk\"} 1",
            "bulkwatch_campaigns_active 0",
            "bulkwatch_window_entries 0",
            "bulkwatch_bloom_fill_ratio",
            "bulkwatch_engine_seconds_bucket{le=\"0.005\"} 1",
            "bulkwatch_engine_seconds_count 1",
            "bulkwatch_errors_total 1",
            "bulkwatch_snapshot_age_seconds",
            "bulkwatch_accept_errors_total 0",
            "bulkwatch_connections_evicted_total 0",
            "bulkwatch_http_refused_total 0",
            "bulkwatch_http_evicted_total 0",
            "bulkwatch_campaign_allows_total 0",
            "bulkwatch_campaign_forgets_total 0",
            "bulkwatch_allowed_total{reason=\"recipient\"} 2",
            "bulkwatch_allowed_total{reason=\"sender_domain\"} 0",
            "bulkwatch_allowed_total{reason=\"campaign\"} 1",
            "bulkwatch_list_messages_total 1",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
    }

    #[test]
    fn campaigns_carry_their_level_and_arrivals() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 3.0;
        cfg.thresholds.suspect_threshold = 2.0;
        let mut engine = Engine::new(&cfg);
        for i in 0..3 {
            engine.process(
                crate::engine::testutil::spam("bob", i).as_bytes(),
                &crate::engine::Envelope::default(),
                crate::engine::UnixSecs(10_000 + u64::from(i)),
            );
        }
        let (body, view) = campaigns_json_at(&State::new(engine), 10_002);
        assert_eq!(view, View::Host);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let c = &v[0];
        assert_eq!(c["level"], "bulk");
        assert_eq!(c["messages"], 3);
        let arrivals: Vec<u64> = c["arrivals"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(serde_json::Value::as_u64)
            .collect();
        assert_eq!(arrivals.len(), ARRIVAL_BUCKETS);
        assert_eq!(arrivals.last(), Some(&3), "all three just arrived");
    }

    /// Lists come in order of concern (bulk first, whatever the sizes),
    /// say how many there are when cut, and filter by level, size and a
    /// text of the subject or a sender (issue 52: "500 active campaigns"
    /// while 618 were, a clean list post above a bulk campaign).
    #[test]
    fn lists_put_bulk_first_say_how_many_and_filter() {
        let mut cfg = Config::default();
        cfg.thresholds.bulk_threshold = 3.0;
        cfg.thresholds.suspect_threshold = 2.0;
        let mut engine = Engine::new(&cfg);
        let to = |n: usize, tag: &str| crate::engine::Envelope {
            rcpts: (0..n).map(|i| format!("{tag}{i}@example.net")).collect(),
            ..crate::engine::Envelope::default()
        };
        // A bulk campaign of three copies, one recipient each.
        for i in 0..3 {
            engine.process(
                crate::engine::testutil::spam("bob", i).as_bytes(),
                &to(1, &format!("b{i}-")),
                crate::engine::UnixSecs(10_000 + u64::from(i)),
            );
        }
        // Ten ham messages, alone, the largest to 40 people in one
        // transaction (clean: one delivery).
        const WORDS: [&str; 40] = [
            "tomatoes", "bicycle", "harbour", "violin", "glacier", "lantern", "orchard", "tunnel",
            "meadow", "compass", "pepper", "window", "castle", "rabbit", "forest", "marble",
            "candle", "ribbon", "saddle", "pillow", "anchor", "basket", "copper", "dragon",
            "engine", "falcon", "garlic", "hammer", "island", "jacket", "kettle", "ladder",
            "mirror", "needle", "oyster", "pencil", "quiver", "rocket", "silver", "tulip",
        ];
        for i in 0..10u64 {
            let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let w: Vec<&str> = (0..30)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    WORDS[(x % 40) as usize]
                })
                .collect();
            let raw = format!(
                "From: f{i}@friends.example\nSubject: garden notes {}\n\n{}.\n",
                WORDS[i as usize],
                w.join(" ")
            );
            let n = if i == 0 { 40 } else { 1 };
            engine.process(
                raw.as_bytes(),
                &to(n, &format!("h{i}-")),
                crate::engine::UnixSecs(10_010),
            );
        }
        let state = State::new(engine);
        let all = campaigns_at(&state, 10_020, &Filter::default());
        assert_eq!((all.active, all.matched, all.campaigns.len()), (11, 11, 11));
        assert_eq!(all.campaigns[0].level, "bulk", "bulk first");
        assert_eq!(
            all.campaigns[1].recipients, 40,
            "then the largest clean one"
        );
        let cut = campaigns_at(
            &state,
            10_020,
            &Filter {
                limit: 4,
                ..Filter::default()
            },
        );
        assert_eq!((cut.active, cut.matched, cut.campaigns.len()), (11, 11, 4));
        let parse = |q: &str| Filter::parse(query_pairs(q)).unwrap();
        let bulk = campaigns_at(&state, 10_020, &parse("level=bulk"));
        assert_eq!((bulk.matched, bulk.campaigns[0].level), (1, "bulk"));
        let big = campaigns_at(&state, 10_020, &parse("min_recipients=10"));
        assert_eq!(big.matched, 1);
        let q = campaigns_at(&state, 10_020, &parse("q=GARDEN+notes+VIOLIN"));
        assert_eq!(q.matched, 1);
        let q = campaigns_at(
            &state,
            10_020,
            &parse("q=friends.example&level=clean&limit=2"),
        );
        assert_eq!((q.matched, q.campaigns.len()), (10, 2));
        assert!(Filter::parse(query_pairs("level=loud")).is_err());
        assert!(Filter::parse(query_pairs("color=red")).is_err());
        assert_eq!(parse("limit=999999").limit, MAX_LIMIT);
        // Past the window, with no message since: nothing is active.
        let later = 10_020 + state.config().window.window.as_secs() + 100;
        let gone = campaigns_at(&state, later, &Filter::default());
        assert_eq!((gone.active, gone.campaigns.len()), (0, 0));
    }

    /// The views give a campaign the level its message got: one list post
    /// sent in one transaction to 25 recipients was delivered clean, and
    /// the dashboard called it bulk (its size is over the threshold).
    #[test]
    fn a_single_transaction_campaign_shows_the_level_its_message_got() {
        let cfg = Config::default();
        let mut engine = Engine::new(&cfg);
        let env = crate::engine::Envelope {
            rcpts: (0..25).map(|i| format!("m{i}@example.net")).collect(),
            ..crate::engine::Envelope::default()
        };
        let v = engine.process(
            crate::engine::testutil::spam("list", 1).as_bytes(),
            &env,
            crate::engine::UnixSecs(10_000),
        );
        assert_eq!(v.level, Level::Clean);
        let (body, _) = campaigns_json_at(&State::new(engine), 10_001);
        let c: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (c[0]["recipients"].as_u64(), c[0]["level"].as_str()),
            (Some(25), Some("clean"))
        );
    }

    /// `/campaigns` shows a sample subject only when `keep_subjects` is on;
    /// it never shows message text. The endpoint binds loopback by default.
    #[test]
    fn campaigns_show_subjects_only_when_kept() {
        use crate::engine::{Envelope, UnixSecs};
        let body = |keep: bool| {
            let mut cfg = Config::default();
            cfg.campaign.keep_subjects = keep;
            let mut engine = Engine::new(&cfg);
            // (Now: `/campaigns` lists what is in the window by the clock.)
            let now = crate::milter::unix_now();
            for n in 0..3 {
                let raw = crate::engine::testutil::spam("alice", n);
                engine.process(
                    raw.as_bytes(),
                    &Envelope::default(),
                    UnixSecs(now - 10 + u64::from(n)),
                );
            }
            campaigns_json(&State::new(engine)).0
        };
        let with = body(true);
        assert!(with.contains("Your offer"), "{with}");
        let without = body(false);
        assert!(
            !without.contains("Your offer") && !without.contains("premium"),
            "{without}"
        );
        let listen: std::net::SocketAddr =
            Config::default().metrics.listen.unwrap().parse().unwrap();
        assert!(listen.ip().is_loopback());
    }
}
