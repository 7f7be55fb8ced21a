//! Mail alerts when a campaign first turns bulk.
//!
//! The milter queues the campaign's summary (bounded, never waiting); this
//! task mails `alerts.to` through `alerts.smtp` (plain SMTP, no TLS, no
//! authentication: a local relay), at most one mail per `min_interval`.
//! Campaigns turning bulk inside the interval are counted and named in the
//! next alert. Failures are logged; mail flow never waits for alerts.

use std::time::{Duration, Instant};

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::mpsc;

use crate::config::AlertsConfig;
use crate::engine::verdict::CampaignSummary;

/// Queue length between the milter and the alert task.
pub const QUEUE: usize = 64;

/// The alert text for one campaign (plus how many others were held back).
pub fn body(c: &CampaignSummary, held_back: usize) -> String {
    let mut s = format!(
        "Campaign {} crossed the bulk threshold.\n\nmessages: {}\nrecipients: {}\nfirst seen: {} (Unix time)\nsample subject: {}\nsenders: {}\n",
        c.id,
        c.messages,
        c.recipients,
        c.first_seen,
        c.sample_subject.as_deref().unwrap_or("-"),
        if c.senders.is_empty() { "-".to_owned() } else { c.senders.join(", ") },
    );
    if held_back > 0 {
        s.push_str(&format!(
            "\n{held_back} more campaigns turned bulk since the last alert (rate limit).\n"
        ));
    }
    s
}

fn build(cfg: &AlertsConfig, c: &CampaignSummary, held_back: usize) -> Result<Message, String> {
    let from: Mailbox = cfg.from.parse().map_err(|e| format!("alerts.from: {e}"))?;
    let mut b = Message::builder()
        .from(from)
        .subject(format!("bulkwatch: bulk campaign {}", c.id));
    for to in &cfg.to {
        b = b.to(to
            .parse::<Mailbox>()
            .map_err(|e| format!("alerts.to `{to}`: {e}"))?);
    }
    b.body(body(c, held_back)).map_err(|e| e.to_string())
}

/// Runs until the sender side is dropped.
pub async fn run(cfg: AlertsConfig, mut rx: mpsc::Receiver<CampaignSummary>) {
    let (host, port) = match cfg
        .smtp
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
    {
        Some(hp) => hp,
        None => (cfg.smtp.clone(), 25),
    };
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(port)
        .timeout(Some(Duration::from_secs(10)))
        .build();
    let mut last: Option<Instant> = None;
    let mut held_back = 0usize;
    while let Some(c) = rx.recv().await {
        if last.is_some_and(|t| t.elapsed() < cfg.min_interval) {
            held_back += 1;
            tracing::info!(campaign = %c.id, "alert rate-limited");
            continue;
        }
        last = Some(Instant::now());
        match build(&cfg, &c, held_back) {
            Ok(msg) => match transport.send(msg).await {
                Ok(_) => tracing::info!(campaign = %c.id, "alert sent"),
                Err(e) => {
                    tracing::warn!(campaign = %c.id, error = %e, smtp = %cfg.smtp, "alert not sent")
                }
            },
            Err(e) => tracing::warn!(campaign = %c.id, error = %e, "alert not built"),
        }
        held_back = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::campaign::CampaignId;

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
        };
        let b = body(&c, 2);
        for part in [
            "000000000abc",
            "recipients: 40",
            "1700000000",
            "Win",
            "a.example, b.example",
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
    }
}
