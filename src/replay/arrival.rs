//! When a message reached the site, from its own headers: the time the
//! replay's arrival clock judges it at.

/// Most header bytes [`arrival_time`] reads, most bytes of one field it
/// keeps, and most `Received` fields it looks at.
const MAX_ARRIVAL_HEADER: usize = 64 * 1024;
const MAX_ARRIVAL_FIELD: usize = 4096;
const MAX_RECEIVED: usize = 8;

/// When a message reached the site, Unix seconds: the date of its topmost
/// `Received` header that is not a local hop, else of its topmost
/// `Received` header, else of its `Date` header (which the sender wrote).
/// `None` when none of them holds a valid RFC 5322 date at or after 1970.
///
/// A local hop is one from the host to itself, which a site's own relays
/// add after the mail arrived (a content filter re-injecting from
/// `[127.0.0.1]`), or a retrieval (`with IMAP`, `with POP3`, fetchmail),
/// which can come days after delivery and give a whole batch of fetched
/// mail one time. The search stops at the first hop that is not
/// local: headers below it were written by other hosts and may be forged.
///
/// Only the first 64 KiB of the header section is read, at most 4 KiB of
/// each field (folded lines included) and at most 8 `Received` fields.
pub fn arrival_time(raw: &[u8]) -> Option<u64> {
    let (received, date) = arrival_fields(raw.get(..MAX_ARRIVAL_HEADER).unwrap_or(raw));
    let date_of = |field: &str| field.rsplit_once(';').and_then(|(_, d)| parse_date(d));
    let top = received.first().and_then(|r| date_of(r));
    received
        .iter()
        .find(|r| !is_local_hop(r))
        .and_then(|r| date_of(r))
        .or(top)
        .or_else(|| date.as_deref().and_then(parse_date))
}

/// An RFC 5322 date as Unix seconds, if valid and not before 1970.
fn parse_date(v: &str) -> Option<u64> {
    let dt = mail_parser::DateTime::parse_rfc822(v.trim())?;
    dt.is_valid()
        .then(|| dt.to_timestamp())
        .and_then(|t| u64::try_from(t).ok())
}

/// A `Received` field a host wrote about a hop from itself to itself, or
/// about fetching the mail from a mailbox (see [`arrival_time`]).
///
/// Only what the receiving host wrote counts, as the sender chooses its
/// HELO name, which the `from` clause also holds: the host is local when
/// the last address literal of the `from` clause that is not the HELO
/// argument (`helo=`, Exim's form) is a loopback address, and the hop is
/// a retrieval when the first word after ` with ` (the protocol, written
/// after ` by `) is IMAP, POP, ETRN or ODMR (fetchmail's).
fn is_local_hop(field: &str) -> bool {
    let trace = field.rsplit_once(';').map_or(field, |(t, _)| t);
    let lower = trace.to_ascii_lowercase();
    let (from, by) = lower.split_once(" by ").unwrap_or((lower.as_str(), ""));
    let protocol = by
        .split_once(" with ")
        .and_then(|(_, w)| w.split_whitespace().next())
        .unwrap_or_default();
    let retrieval = ["imap", "pop", "etrn", "odmr"]
        .iter()
        .any(|p| protocol.starts_with(p));
    retrieval || receiver_address(from).is_some_and(is_loopback)
}

/// The last `[address]` of a `from` clause that does not follow `helo=`.
fn receiver_address(from: &str) -> Option<&str> {
    let mut found = None;
    let mut rest = from;
    let mut offset = 0;
    while let Some(open) = rest.find('[') {
        let after = rest.get(open + 1..).unwrap_or_default();
        let Some(close) = after.find(']') else { break };
        let before = from.get(..offset + open).unwrap_or_default();
        if !before.ends_with("helo=") && !before.ends_with("ehlo=") {
            found = after.get(..close);
        }
        offset += open + 1 + close + 1;
        rest = after.get(close + 1..).unwrap_or_default();
    }
    found
}

/// 127.0.0.0/8 or ::1, as a `Received` field writes them.
fn is_loopback(addr: &str) -> bool {
    let a = addr.trim().trim_start_matches("ipv6:");
    a.starts_with("127.") || a == "::1" || a == "0:0:0:0:0:0:0:1"
}

/// The first [`MAX_RECEIVED`] `Received` fields (topmost first) and the
/// first `Date` field of a header section, unfolded, each cut at the last
/// line that fits in [`MAX_ARRIVAL_FIELD`] bytes.
fn arrival_fields(head: &[u8]) -> (Vec<String>, Option<String>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Field {
        Received,
        Date,
        Other,
    }
    let mut received: Vec<String> = Vec::new();
    let mut date: Option<String> = None;
    let mut field = Field::Other;
    // The current field stopped growing (a line did not fit).
    let mut full = false;
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let value = if line.starts_with(b" ") || line.starts_with(b"\t") {
            // A folded line continues the field before it.
            line
        } else {
            let Some(colon) = memchr::memchr(b':', line) else {
                field = Field::Other;
                continue;
            };
            let name = line.get(..colon).unwrap_or_default().trim_ascii_end();
            field = if name.eq_ignore_ascii_case(b"received") && received.len() < MAX_RECEIVED {
                received.push(String::new());
                Field::Received
            } else if name.eq_ignore_ascii_case(b"date") && date.is_none() {
                date = Some(String::new());
                Field::Date
            } else {
                Field::Other
            };
            full = false;
            line.get(colon + 1..).unwrap_or_default()
        };
        let slot = match field {
            Field::Received => received.last_mut(),
            Field::Date => date.as_mut(),
            Field::Other => None,
        };
        let Some(s) = slot else { continue };
        if full {
            continue;
        }
        let text = String::from_utf8_lossy(value.trim_ascii());
        if s.len() + 1 + text.len() > MAX_ARRIVAL_FIELD {
            full = true;
            continue;
        }
        s.push(' ');
        s.push_str(&text);
    }
    (received, date)
}

/// The latest arrival time the arrival clock believes: a day after this
/// host's clock (more is a forged or broken date), and never past what the
/// engine's u32 seconds hold.
pub(crate) fn latest_arrival() -> u64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    wall.saturating_add(86_400).min(u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_is_the_top_received_date_else_the_date_header() {
        let two = b"Received: from relay.example by mx.example.org;\r\n\
            \tThu, 22 Aug 2002 12:36:23 +0100 (IST)\r\n\
            Received: from a by b; Thu, 22 Aug 2002 10:00:00 +0000\r\n\
            Date: Wed, 21 Aug 2002 09:00:00 +0000\r\n\r\nbody\r\n";
        // 2002-08-22T11:36:23Z, from the folded first Received.
        assert_eq!(arrival_time(two), Some(1_030_016_183));
        let lf = b"Date: Wed, 21 Aug 2002 09:00:00 +0000\nSubject: x\n\nReceived: x; Thu, 22 Aug 2002 10:00:00 +0000\n";
        assert_eq!(
            arrival_time(lf),
            Some(1_029_920_400),
            "no Received: the Date header; the body is not read"
        );
        let undated = b"Received: from a by b with SMTP\nDate: Wed, 21 Aug 2002 09:00:00 +0000\n\n";
        assert_eq!(arrival_time(undated), Some(1_029_920_400));
        for raw in [
            &b""[..],
            b"Subject: no dates\n\nbody",
            b"Date: yesterday\n\n",
            b"Received: x; Thu, 22 Aug 1902 10:00:00 +0000\n\n",
            b"Date: Thu, 32 Aug 2002 10:00:00 +0000\n\n",
            &[0xFF, b':', b'\n', 0xC3, 0x28],
        ] {
            assert_eq!(
                arrival_time(raw),
                None,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn local_hops_are_passed_over_down_to_the_first_relay_of_another_host() {
        // As in the SpamAssassin corpus: a content filter's re-injection,
        // then fetchmail's retrieval (days later), then the site's MX.
        let fetched = b"Received: from localhost (jalapeno [127.0.0.1])\n\tby jmason.org (Postfix) with ESMTP id 471D016F03\n\tfor <jm@localhost>; Tue,  1 Oct 2002 10:34:35 +0100 (IST)\n\
            Received: from jalapeno [127.0.0.1]\n\tby localhost with IMAP (fetchmail-5.9.0)\n\tfor jm@localhost (single-drop); Tue, 01 Oct 2002 10:34:35 +0100 (IST)\n\
            Received: from cpu59.osdn.com (slashdot.org [64.28.67.73]) by\n\tdogma.slashnull.org (8.11.6/8.11.6) with ESMTP id g911xvK26540 for\n\t<jm-use-perl@jmason.org>; Tue, 1 Oct 2002 02:59:59 +0100\n\
            Received: from [10.2.181.14] (helo=perl.org) by cpu59.osdn.com; Mon, 30 Sep 2002 21:57:01 -0400\n\
            Date: Mon, 30 Sep 2002 20:00:00 -0400\n\n";
        // 2002-10-01T01:59:59Z: the MX's own hop, not the fetch, not below.
        assert_eq!(arrival_time(fetched), Some(1_033_437_599));
        // A client that calls itself localhost from a public address is a
        // relay like any other; so is an IPv6 address ending in ::1.
        for from in [
            "localhost.localdomain (unknown [203.0.113.7])",
            "mail.example.net (mail.example.net [2001:db8::1])",
        ] {
            let raw = format!(
                "Received: from {from} by mx.example.org; Tue, 1 Oct 2002 10:00:00 +0000\n\
                 Received: from a by b; Mon, 30 Sep 2002 10:00:00 +0000\n\n"
            );
            assert_eq!(arrival_time(raw.as_bytes()), Some(1_033_466_400), "{from}");
        }
        // All hops local: the topmost. The first foreign hop undated: the
        // topmost, not a hop below it (written by other hosts).
        let local = b"Received: from x ([127.0.0.1]) by y; Tue, 1 Oct 2002 10:00:00 +0000\n\n";
        assert_eq!(arrival_time(local), Some(1_033_466_400));
        let undated = b"Received: from x ([127.0.0.1]) by y; Tue, 1 Oct 2002 10:00:00 +0000\n\
            Received: from relay by y with SMTP\n\
            Received: from a by relay; Mon, 30 Sep 2002 10:00:00 +0000\n\n";
        assert_eq!(arrival_time(undated), Some(1_033_466_400));
    }

    #[test]
    fn a_sender_cannot_make_the_receivers_hop_local() {
        // What the sender controls, its HELO name, names loopback or
        // fetchmail; the address the receiver recorded does not.
        for local_looking in [
            "from [127.0.0.1] (unknown [203.0.113.7]) by mx.example.org (Postfix) with ESMTP",
            "from [203.0.113.7] (helo=[127.0.0.1]) by mx.example.org with esmtp (Exim 4.96)",
            "from fetchmail.example (fetchmail.example [203.0.113.7]) by mx.example.org with ESMTP",
            "from imap.example (imap.example [203.0.113.7]) by mx.example.org with ESMTPS",
        ] {
            assert!(!is_local_hop(local_looking), "{local_looking}");
        }
        for local in [
            "from localhost (localhost [127.0.0.1]) by mx.example.org (Postfix) with ESMTP",
            "from [127.0.0.1] (helo=localhost) by mx.example.org with esmtp (Exim 4.96)",
            "from mx (localhost [IPv6:::1]) by mx.example.org with LMTP",
            "from pop.example.net [198.51.100.1] by localhost with POP3 (fetchmail-6.4.37)",
            "from imap.example.net by localhost with IMAP (fetchmail-5.9.0)",
        ] {
            assert!(is_local_hop(local), "{local}");
        }
        assert_eq!(
            receiver_address("from a ([1.2.3.4] helo=[5.6.7.8]"),
            Some("1.2.3.4")
        );
        assert_eq!(receiver_address("from [1.2.3.4"), None);
    }

    #[test]
    fn arrival_fields_are_bounded() {
        // A Received field folded into megabytes keeps 4 KiB of it, and
        // its first lines.
        let mut raw = b"Received: from a by b".to_vec();
        for _ in 0..100_000 {
            raw.extend_from_slice(b"\n\twith more and more");
        }
        raw.extend_from_slice(b"; Thu, 22 Aug 2002 10:00:00 +0000\n\n");
        let (received, _) = arrival_fields(&raw);
        assert_eq!(received.len(), 1);
        assert!(received.iter().all(|r| r.len() <= MAX_ARRIVAL_FIELD));
        assert!(received.iter().all(|r| r.starts_with(" from a by b")));
        assert_eq!(arrival_time(&raw), None);
        // Invalid UTF-8 grows threefold when replaced: the bound holds on
        // what is kept.
        let mut raw = b"Date: ".to_vec();
        for _ in 0..10_000 {
            raw.extend_from_slice(b"\n\t\xFF\xFE\xFD");
        }
        let (_, date) = arrival_fields(&raw);
        assert!(date.is_some_and(|d| d.len() <= MAX_ARRIVAL_FIELD));
        // Thousands of Received fields: the first 8 are kept.
        let raw =
            "Received: from a ([127.0.0.1]) by b; Tue, 1 Oct 2002 10:00:00 +0000\n".repeat(5000);
        let (received, _) = arrival_fields(raw.as_bytes());
        assert_eq!(received.len(), MAX_RECEIVED);
        assert_eq!(arrival_time(raw.as_bytes()), Some(1_033_466_400));
    }
}
