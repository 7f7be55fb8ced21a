//! Mail alerts when a campaign first turns bulk.
//!
//! The milter queues an [`Alert`]: the campaign's summary, the message that
//! made it bulk and the commands that show it (bounded, never waiting); this
//! task mails `alerts.to` through `alerts.smtp` (plain SMTP, no TLS, no
//! authentication: a local relay), at most one mail per `min_interval`.
//! Campaigns turning bulk inside the interval are counted and named in the
//! next alert. Failures are logged; mail flow never waits for alerts.
//!
//! With Redis ([`Site`]), the site alerts once per campaign, whichever host
//! judged the message that made it bulk and whichever hosts have
//! `alerts.to`: every host that alerts also reads the campaigns that turned
//! bulk in the log (other hosts' messages, [`crate::store::stream::Crossing`]),
//! and before mailing claims the campaign's alert in Redis (`SET NX`); the
//! first claim mails, the others log that another host has it. A host
//! claims another host's crossing only after [`Site::grace`], so the host
//! that judged the message, which can name it, goes first when it alerts.
//! When the claim fails (Redis down), a host mails its own crossings and
//! drops the others': two alerts rather than none for its own mail, and no
//! alert for another host's (that host mails its own).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::mpsc;

use crate::config::AlertsConfig;
use crate::engine::campaign::CampaignId;
use crate::engine::verdict::CampaignSummary;
use crate::store::RedisLayer;

/// Queue length between the milter and the alert task.
pub const QUEUE: usize = 64;

/// A campaign that just turned bulk, and what an operator needs to find it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub campaign: CampaignSummary,
    /// Unix seconds of the message that made the campaign bulk.
    pub at: u64,
    /// That message's Message-ID (without angle brackets), if it had one.
    pub message_id: Option<String>,
    /// That message's queue id (Postfix macro `i`), if known.
    pub queue_id: Option<String>,
    /// `metrics.listen` when the alert was queued: where `/campaigns` is.
    pub metrics_listen: Option<String>,
    /// This host judged that message (else another host of the site did,
    /// and its Message-ID and queue id are in that host's log).
    pub judged_here: bool,
    /// Where this daemon's log lines go: what the alert says to search.
    pub logs: LogPlace,
    /// The campaign is the site's own mail that turned bulk on its own
    /// tally (`[own]`): who sent it from inside, as Postfix saw it. Its
    /// alert is claimed apart from the same campaign's inbound one.
    pub inside: Option<Inside>,
    /// This host puts the campaign's bulk copies on hold (`policy.bulk =
    /// "quarantine"`): the alert says how to release or delete them.
    pub held: bool,
}

/// Who sent a campaign from inside the site, as Postfix saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inside {
    /// Why it is own mail (`None`: another host judged it; its log says).
    pub reason: Option<crate::milter::origin::OwnReason>,
    /// `{auth_authen}`, when the client logged in.
    pub login: Option<String>,
    /// The SMTP client's address.
    pub client: Option<String>,
    /// The envelope sender.
    pub sender: Option<String>,
}

/// Where the daemon's log lines go (`serve --log-format`, and whether
/// systemd's journal keeps its standard error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogPlace {
    /// The journal (`JOURNAL_STREAM` names the daemon's stderr).
    #[default]
    Journal,
    /// The syslog daemon, under this facility (`mail`: mail.log on
    /// Debian).
    Syslog(&'static str),
    /// Standard error, kept by whatever supervises the daemon.
    Stderr,
}

static LOG_PLACE: std::sync::OnceLock<LogPlace> = std::sync::OnceLock::new();

impl LogPlace {
    /// Where this process logs, as `serve` set it at start (the journal
    /// when it did not).
    pub fn current() -> LogPlace {
        LOG_PLACE.get().copied().unwrap_or_default()
    }

    /// Set once, by `serve`, when its logging starts.
    pub fn set(place: LogPlace) {
        let _ = LOG_PLACE.set(place);
    }
}

/// The site's hosts share Redis: alert once per site (module docs).
#[derive(Debug, Clone)]
pub struct Site {
    pub redis: Arc<RedisLayer>,
    /// How often the log is read for crossings.
    pub every: Duration,
    /// How long another host's crossing waits before this host claims it.
    pub grace: Duration,
    /// Lifetime of a claim in Redis (the window: a campaign id is not
    /// reused within it).
    pub ttl: Duration,
}

impl Site {
    /// Reads every 2 s, claims other hosts' crossings after 5 s, keeps
    /// claims for the window and an hour.
    pub fn new(redis: Arc<RedisLayer>, window: Duration) -> Site {
        Site {
            redis,
            every: Duration::from_secs(2),
            grace: Duration::from_secs(5),
            ttl: window + Duration::from_secs(3600),
        }
    }
}

/// What the alert task did, by campaign.
#[derive(Debug, Default)]
pub struct Counts {
    /// Alert mails sent. (Campaigns held back by `min_interval` are named
    /// in the next mail and counted in none of these.)
    pub sent: AtomicU64,
    /// Crossings another host of the site claimed.
    pub elsewhere: AtomicU64,
    /// Alerts that could not be built or mailed.
    pub failed: AtomicU64,
}

impl Alert {
    /// The commands that show the campaign: `bulkwatch campaigns show`
    /// (its counts and recent members, while it is in the window), its
    /// entry in `/campaigns` and its log lines.
    pub fn show_commands(&self) -> Vec<String> {
        let id = self.campaign.id;
        let mut out = vec![format!("bulkwatch campaigns show {id}")];
        if let Some(listen) = &self.metrics_listen {
            out.push(format!(
                "curl -s http://{listen}/campaigns \\\n    | grep -o '{{\"id\":\"{id}\"[^}}]*}}'"
            ));
        }
        out.push(match self.logs {
            LogPlace::Journal => format!("journalctl -u bulkwatch | grep {id}"),
            LogPlace::Syslog("mail") => format!("grep {id} /var/log/mail.log"),
            LogPlace::Syslog(f) => {
                format!("grep {id} in the syslog daemon's file for facility {f}")
            }
            LogPlace::Stderr => {
                format!("grep {id} in the daemon's standard error (its supervisor's log)")
            }
        });
        out
    }
}

/// Unix seconds as an RFC 5322 date-time (section 3.3) in UTC, the form
/// of a Date header: `Tue, 14 Nov 2023 22:13:20 +0000`.
pub fn rfc5322_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (the proleptic Gregorian
    // calendar, counted in 400-year eras from 0000-03-01).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        DAYS.get((days % 7) as usize).copied().unwrap_or("Thu"),
        day,
        MONTHS.get((month - 1) as usize).copied().unwrap_or("Jan"),
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The alert text for one campaign (plus how many others were held back).
/// Lines stay short, so that the mail goes out as plain 7-bit text (a long
/// line makes lettre encode the body as quoted-printable); a long
/// Message-ID still may.
pub fn body(a: &Alert, held_back: usize) -> String {
    let c = &a.campaign;
    let which = if a.judged_here {
        format!(
            "The message that made it bulk:\n  Message-ID: <{}>\n  queue id: {}\n",
            a.message_id.as_deref().unwrap_or("-"),
            a.queue_id.as_deref().unwrap_or("-"),
        )
    } else {
        "Another host of the site judged the message that made it bulk:\n\
         its log names it with the campaign.\n"
            .to_owned()
    };
    let inside = match &a.inside {
        Some(i) => format!(
            "It was sent from inside the site (its own mail, counted apart from mail\n\
             from outside; policy.own decides what is done with it):\n  \
             why own: {}\n  login: {}\n  client: {}\n  envelope sender: {}\n\
             A compromised account or machine sends such campaigns; an announcement\n\
             to many colleagues does too. To stop these alerts for it:\n  \
             bulkwatch campaigns allow {}\n\n",
            i.reason
                .map_or("(in the log of the host that judged it)", |r| r.as_str()),
            crate::escape::printable(i.login.as_deref().unwrap_or("-")),
            i.client.as_deref().unwrap_or("-"),
            crate::escape::printable(i.sender.as_deref().unwrap_or("-")),
            c.id,
        ),
        None => String::new(),
    };
    let mut s = format!(
        "Campaign {} turned bulk on {}.\n\n{inside}{which}\n\
         messages: {}\nrecipients: {}\nfirst seen: {}\nlast seen: {}\n\
         sample subject: {}\nsenders: {}\n\nShow the campaign:\n",
        c.id,
        rfc5322_date(a.at),
        c.messages,
        if a.inside.is_some() {
            u64::from(c.own)
        } else {
            c.recipients
        },
        rfc5322_date(c.first_seen),
        rfc5322_date(c.last_seen),
        c.sample_subject.as_deref().unwrap_or("-"),
        if c.senders.is_empty() {
            "-".to_owned()
        } else {
            c.senders.join(", ")
        },
    );
    for cmd in a.show_commands() {
        s.push_str("  ");
        s.push_str(&cmd);
        s.push('\n');
    }
    if a.held {
        s.push_str(&format!(
            "\nIts copies judged bulk are held in Postfix's hold queue\n\
             (policy.bulk = \"quarantine\"), not delivered. On each MX host,\n\
             list, release (delivered, marked held=yes) or delete them:\n  \
             bulkwatch campaigns held {id}\n  \
             bulkwatch campaigns release {id}\n  \
             bulkwatch campaigns delete-held {id}\n",
            id = c.id
        ));
    }
    if held_back > 0 {
        s.push_str(&format!(
            "\n{held_back} more campaigns turned bulk since the last alert (rate limit).\n"
        ));
    }
    s
}

fn build(cfg: &AlertsConfig, a: &Alert, held_back: usize) -> Result<Message, String> {
    let c = &a.campaign;
    let from: Mailbox = cfg.from.parse().map_err(|e| format!("alerts.from: {e}"))?;
    let mut b = Message::builder().from(from).subject(format!(
        "bulkwatch: bulk campaign {}{}",
        c.id,
        if a.inside.is_some() {
            " sent from inside"
        } else {
            ""
        }
    ));
    for to in &cfg.to {
        b = b.to(to
            .parse::<Mailbox>()
            .map_err(|e| format!("alerts.to `{to}`: {e}"))?);
    }
    b.body(body(a, held_back)).map_err(|e| e.to_string())
}

/// Campaign ids alerted lately, so that a campaign seen both in this
/// host's verdict and in the log is claimed once.
const REMEMBERED: usize = 1024;

/// The transport to `cfg.smtp`, with STARTTLS as `cfg.tls` says; why
/// not, when TLS is required and cannot be set up for the relay's name
/// (then no alert goes out in clear text instead).
fn transport(cfg: &AlertsConfig) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    use crate::config::AlertTls;
    use lettre::transport::smtp::client::{Tls, TlsParameters};
    // (Checked when the configuration was loaded.)
    let (host, port) = crate::config::parse_relay(&cfg.smtp)
        .map_or_else(|_| (cfg.smtp.clone(), 25), |(h, p)| (h.to_owned(), p));
    let params = |checked: bool| {
        TlsParameters::builder(host.clone())
            .dangerous_accept_invalid_certs(!checked)
            .dangerous_accept_invalid_hostnames(!checked)
            .build_rustls()
            .map_err(|e| format!("TLS to {}: {e}", cfg.smtp))
    };
    let tls = match cfg.tls {
        AlertTls::None => Tls::None,
        // As Postfix's `may`: plain when TLS cannot be had.
        AlertTls::May => params(false).map_or(Tls::None, Tls::Opportunistic),
        AlertTls::Encrypt => Tls::Required(params(false)?),
        AlertTls::Verify => Tls::Required(params(true)?),
    };
    Ok(
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
            .port(port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(10)))
            .build(),
    )
}

/// Runs until the sender side is dropped: mails the alerts of `rx`, and
/// with `site`, other hosts' crossings, once per site. `cfg` is the
/// `[alerts]` section in force, which a reload changes live: with no
/// `alerts.to` nothing is mailed (and no crossing of the site is claimed,
/// so that a host that does mail them sends them).
pub async fn run(
    mut cfg: tokio::sync::watch::Receiver<AlertsConfig>,
    mut rx: mpsc::Receiver<Alert>,
    site: Option<Site>,
    metrics_listen: Option<String>,
    counts: Arc<Counts>,
) {
    let log_place = LogPlace::current();
    let first = cfg.borrow_and_update().clone();
    let mut cfg_open = true;
    let mut mailer = Mailer {
        transport: transport(&first),
        cfg: first,
        last: None,
        held_back: 0,
        counts,
        recent: VecDeque::new(),
    };
    let mut tick =
        tokio::time::interval(site.as_ref().map_or(Duration::from_secs(3600), |s| s.every));
    let mut waiting: VecDeque<(Instant, Alert)> = VecDeque::new();
    loop {
        tokio::select! {
            changed = cfg.changed(), if cfg_open => {
                if changed.is_err() {
                    // (The state is gone: no reload will come.)
                    cfg_open = false;
                    continue;
                }
                let new = cfg.borrow_and_update().clone();
                if new.smtp != mailer.cfg.smtp {
                    mailer.transport = transport(&new);
                }
                mailer.cfg = new;
            }
            a = rx.recv() => match a {
                Some(a) => mailer.deliver(a, site.as_ref()).await,
                None => break,
            },
            _ = tick.tick(), if site.is_some() => {
                let Some(site) = site.as_ref() else { continue };
                let redis = Arc::clone(&site.redis);
                let crossings = tokio::task::spawn_blocking(move || {
                    // (An outage is logged by the mail path; the replica
                    // then stands still and brings nothing new.)
                    let _ = redis.site();
                    redis.take_crossings()
                })
                .await
                .unwrap_or_default();
                let at = Instant::now() + site.grace;
                for c in crossings {
                    waiting.push_back((at, Alert {
                        campaign: c.campaign,
                        at: c.at,
                        message_id: None,
                        queue_id: None,
                        metrics_listen: metrics_listen.clone(),
                        judged_here: false,
                        logs: log_place,
                        // Another host judged it: that host's log has who.
                        inside: c.own.then_some(Inside {
                            reason: None,
                            login: None,
                            client: None,
                            sender: None,
                        }),
                        held: false,
                    }));
                }
                while waiting.front().is_some_and(|(t, _)| *t <= Instant::now()) {
                    if let Some((_, a)) = waiting.pop_front() {
                        mailer.deliver(a, Some(site)).await;
                    }
                }
            }
        }
    }
}

/// The mailing half of [`run`].
struct Mailer {
    cfg: AlertsConfig,
    transport: Result<AsyncSmtpTransport<Tokio1Executor>, String>,
    last: Option<Instant>,
    held_back: usize,
    counts: Arc<Counts>,
    recent: VecDeque<(CampaignId, bool)>,
}

impl Mailer {
    /// Sends `msg` through the relay.
    async fn send(&self, msg: lettre::Message) -> Result<(), String> {
        let transport = self.transport.as_ref().map_err(Clone::clone)?;
        transport
            .send(msg)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Claims `a` for this host when the site shares Redis, then mails it
    /// (or holds it back under the rate limit).
    async fn deliver(&mut self, a: Alert, site: Option<&Site>) {
        let id = a.campaign.id;
        let own = a.inside.is_some();
        if self.cfg.to.is_empty() {
            // Alerts off (`alerts.to` empty): nothing mailed, nothing
            // claimed from the site's other hosts.
            return;
        }
        if self.recent.contains(&(id, own)) {
            return;
        }
        if self.recent.len() == REMEMBERED {
            self.recent.pop_front();
        }
        self.recent.push_back((id, own));
        if let Some(site) = site {
            let (redis, ttl) = (Arc::clone(&site.redis), site.ttl);
            let claim = tokio::task::spawn_blocking(move || redis.claim_alert(id, own, ttl)).await;
            match claim {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    self.counts.elsewhere.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(campaign = %id, "alert: another host of the site sends it");
                    return;
                }
                Ok(Err(e)) if a.judged_here => {
                    tracing::warn!(campaign = %id, error = %e, "alert: cannot claim it in redis; sending it");
                }
                Ok(Err(e)) => {
                    tracing::warn!(campaign = %id, error = %e, "alert: cannot claim another host's crossing in redis; that host sends its own");
                    return;
                }
                Err(e) => {
                    tracing::warn!(campaign = %id, error = %e, "alert: the claim failed");
                    if !a.judged_here {
                        return;
                    }
                }
            }
        }
        if self
            .last
            .is_some_and(|t| t.elapsed() < self.cfg.min_interval)
        {
            self.held_back += 1;
            tracing::info!(campaign = %id, "alert rate-limited");
            return;
        }
        self.last = Some(Instant::now());
        match build(&self.cfg, &a, self.held_back) {
            Ok(msg) => match self.send(msg).await {
                Ok(_) => {
                    self.counts.sent.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(campaign = %id, "alert sent");
                }
                Err(e) => {
                    self.counts.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(campaign = %id, error = %e, smtp = %self.cfg.smtp, "alert not sent");
                }
            },
            Err(e) => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(campaign = %id, error = %e, "alert not built");
            }
        }
        self.held_back = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::campaign::CampaignId;

    #[test]
    fn dates_are_rfc5322_in_utc() {
        assert_eq!(rfc5322_date(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(
            rfc5322_date(1_700_000_000),
            "Tue, 14 Nov 2023 22:13:20 +0000"
        );
        // A leap day, and the last second of a century year.
        assert_eq!(
            rfc5322_date(1_709_210_096),
            "Thu, 29 Feb 2024 12:34:56 +0000"
        );
        assert_eq!(
            rfc5322_date(4_102_444_799),
            "Thu, 31 Dec 2099 23:59:59 +0000"
        );
    }

    #[test]
    fn alert_names_campaign_size_and_senders() {
        let c = CampaignSummary {
            id: CampaignId(0xabc),
            messages: 21,
            recipients: 40,
            score: 40.0,
            first_seen: 1700000000,
            last_seen: 1700000100,
            sender_domains: 2,
            senders: vec!["a.example".into(), "b.example".into()],
            sample_subject: Some("Win".into()),
            list_post: false,
            conversation: false,
            largest: 0,
            freed: 0,
            grown: 0,
            own: 0,
            own_largest: 0,
        };
        let c = Alert {
            campaign: c,
            at: 1_700_000_100,
            message_id: Some("m1@deals.example".into()),
            queue_id: Some("4XyZ".into()),
            metrics_listen: Some("127.0.0.1:9357".into()),
            judged_here: true,
            logs: LogPlace::Journal,
            inside: None,
            held: false,
        };
        let b = body(&c, 2);
        for part in [
            "000000000abc turned bulk on Tue, 14 Nov 2023 22:15:00 +0000",
            "bulk:\n  Message-ID: <m1@deals.example>\n  queue id: 4XyZ\n",
            "recipients: 40",
            "first seen: Tue, 14 Nov 2023 22:13:20 +0000",
            "Win",
            "a.example, b.example",
            "curl -s http://127.0.0.1:9357/campaigns \\\n    | grep -o '{\"id\":\"000000000abc\"[^}]*}'",
            "journalctl -u bulkwatch | grep 000000000abc",
            "bulkwatch campaigns show 000000000abc",
            "2 more",
        ] {
            assert!(b.contains(part), "{part} in {b}");
        }
        let mut cfg = crate::config::Config::default().alerts;
        cfg.to = vec!["postmaster@example.org".into()];
        cfg.from = "bulkwatch@example.org".into();
        assert!(build(&cfg, &c, 0).is_ok());
        cfg.to = vec!["not an address".into()];
        assert!(build(&cfg, &c, 0).is_err());
        // Another host's crossing names no message of this host.
        let b = body(
            &Alert {
                judged_here: false,
                message_id: None,
                queue_id: None,
                ..c.clone()
            },
            0,
        );
        assert!(b.contains("Another host of the site judged"), "{b}");
        assert!(!b.contains("queue id"), "{b}");
        // Held copies: the alert says so, and how to release them.
        assert!(!b.contains("hold queue"), "{b}");
        let b = body(&Alert { held: true, ..c }, 0);
        assert!(
            b.contains("held in Postfix's hold queue")
                && b.contains("bulkwatch campaigns release 000000000abc"),
            "{b}"
        );
    }

    /// The alert says where to search the log: the journal, mail.log on a
    /// host that logs to syslog under facility mail, or the supervisor's log.
    #[test]
    fn the_log_to_search_is_the_one_the_daemon_writes() {
        let mut a = Alert {
            campaign: crate::engine::verdict::CampaignSummary {
                id: CampaignId(0xabc),
                messages: 2,
                recipients: 40,
                score: 40.0,
                first_seen: 0,
                last_seen: 0,
                sender_domains: 1,
                senders: Vec::new(),
                sample_subject: None,
                list_post: false,
                conversation: false,
                largest: 0,
                freed: 0,
                grown: 0,
                own: 0,
                own_largest: 0,
            },
            at: 0,
            message_id: None,
            queue_id: None,
            metrics_listen: None,
            judged_here: true,
            logs: LogPlace::Syslog("mail"),
            inside: None,
            held: false,
        };
        let last = |a: &Alert| a.show_commands().pop().unwrap_or_default();
        assert_eq!(last(&a), "grep 000000000abc /var/log/mail.log");
        a.logs = LogPlace::Stderr;
        assert!(!last(&a).contains("journalctl"), "{}", last(&a));
        a.logs = LogPlace::Journal;
        assert!(last(&a).starts_with("journalctl -u bulkwatch"));
    }
}
