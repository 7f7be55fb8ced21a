//! Sender-domain allowances set at runtime (`bulkwatch campaigns
//! allow-domain`), and what makes a message's domain authenticated: an
//! `Authentication-Results` header (RFC 8601) of an authserv-id the site
//! trusts (`allow.authserv_ids`: its own OpenDKIM, OpenDMARC or rspamd)
//! saying DKIM or DMARC passed for it.
//!
//! A newsletter's campaign allowance lasts one issue; a domain allowance
//! lasts. Anyone can write `From: news@shop.example`, so a domain
//! allowance is honoured only for a message whose From domain a trusted
//! header authenticates: `dkim=pass` with `header.d` (or `header.i`) the
//! From domain or a parent of it (relaxed alignment, as DMARC has it), or
//! `dmarc=pass` with `header.from` the From domain. A header of a trusted
//! authserv-id arriving from outside would be a forgery. RFC 8601 section
//! 5 has the border MTA remove them; Postfix does so before any milter
//! sees the message (`header_checks`, which `bulkwatch check-config
//! --postfix` checks with every legal form of the header), and bulkwatch
//! trusts a header only where the site's authenticator puts it and only
//! in the plain form that `header_checks` line removes from mail arriving
//! from outside (issue 64):
//!
//! - **position**: the site's block, the headers at the top of the
//!   message before any the SMTP client wrote: a milter that authenticates
//!   inserts its header there (above or right after Postfix's own
//!   `Received`), and a sender cannot write a header above the MTA's
//!   `Received`. A header further down is the sender's, whatever id it
//!   bears ([`SiteBlock`]);
//! - **form**: the authserv-id written plainly first (`Authentication-Results:
//!   mx.example.org; ...`). A comment before it, a quoted id, a fold
//!   inside it are legal RFC 8601 forms an authenticator does not write
//!   and a regular expression may miss: such a header is not trusted
//!   ([`AuthResult::plain`]).
//!
//! Everything here is pure: text in, answers out.

use std::collections::BTreeMap;

/// Most domain allowances kept (a site allows its newsletters: tens).
pub const MAX_DOMAINS: usize = 1000;

/// Longest domain name (RFC 1035: 253 characters).
pub const MAX_DOMAIN_LEN: usize = 253;

/// Longest `Authentication-Results` value read; a longer one is not read
/// (an authenticator writes a few hundred bytes).
pub const MAX_HEADER_LEN: usize = 4096;

/// Most authenticated domains one header contributes.
pub const MAX_PASSES: usize = 8;

/// Most `Authentication-Results` headers of a message read.
pub const MAX_HEADERS: usize = 32;

/// What one `Authentication-Results` header says, as far as bulkwatch
/// reads it: who wrote it, and the domains it says passed DKIM or DMARC.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthResult {
    /// The authserv-id, lower-cased.
    pub authserv_id: String,
    /// The authserv-id was written plainly first: no comment, quote or
    /// fold before or in it.
    pub plain: bool,
    /// The header was in the site's block at the top of the message
    /// ([`SiteBlock`]).
    pub site: bool,
    /// Lower-cased domains with `dkim=pass` (`header.d`, or the domain of
    /// `header.i`) or `dmarc=pass` (`header.from`).
    pub passed: Vec<String>,
}

/// `text` without RFC 5322 comments (parenthesized, nested, with quoted
/// pairs), quoted strings kept as they are. Bounded by the text's length.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    for c in text.chars() {
        if escaped {
            escaped = false;
            if depth == 0 {
                out.push(c);
            }
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                if depth == 0 {
                    out.push(c);
                }
            }
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => {
                depth -= 1;
                // A comment separates what is on either side of it.
                if depth == 0 {
                    out.push(' ');
                }
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// A domain as allowances and results hold it: lower case, without a
/// leading `@` or dot or a trailing dot; `None` when it is no domain name
/// (empty, too long, a label of other characters than letters, digits,
/// `-` and `_`, or a single label).
pub fn domain(text: &str) -> Option<String> {
    let d = text
        .trim()
        .trim_matches('"')
        .trim_start_matches('@')
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let ok = !d.is_empty()
        && d.len() <= MAX_DOMAIN_LEN
        && d.contains('.')
        && d.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    ok.then_some(d)
}

/// Reads one `Authentication-Results` value. `None` for a value too long
/// or without an authserv-id.
pub fn parse(value: &str) -> Option<AuthResult> {
    if value.len() > MAX_HEADER_LEN {
        return None;
    }
    let text = without_comments(value);
    let plain = plain_id(value);
    let mut parts = text.split(';');
    // authserv-id [version]
    let authserv_id = parts
        .next()?
        .split_whitespace()
        .next()?
        .trim_matches('"')
        .to_ascii_lowercase();
    if authserv_id.is_empty() {
        return None;
    }
    let mut passed = Vec::new();
    for resinfo in parts {
        let mut words = resinfo.split_whitespace();
        let Some((method, result)) = words.next().and_then(|w| w.split_once('=')) else {
            continue;
        };
        // `dkim/1=pass`: a method may carry a version.
        let method = method.split('/').next().unwrap_or("").to_ascii_lowercase();
        if !result.eq_ignore_ascii_case("pass") {
            continue;
        }
        let wanted: &[&str] = match method.as_str() {
            "dkim" => &["header.d", "header.i"],
            "dmarc" => &["header.from"],
            _ => continue,
        };
        for w in words {
            let Some((prop, val)) = w.split_once('=') else {
                continue;
            };
            if !wanted.iter().any(|p| prop.eq_ignore_ascii_case(p)) {
                continue;
            }
            // header.i is an identity, `[local]@domain`.
            let val = val.rsplit_once('@').map_or(val, |(_, d)| d);
            if let Some(d) = domain(val) {
                if passed.len() < MAX_PASSES && !passed.contains(&d) {
                    passed.push(d);
                }
            }
        }
    }
    Some(AuthResult {
        plain: plain.is_some_and(|p| p.eq_ignore_ascii_case(&authserv_id)),
        authserv_id,
        passed,
        site: false,
    })
}

/// The authserv-id of a header value written plainly: optional spaces or
/// tabs (no fold), then a token of the characters an id is made of, then a
/// space, a tab or `;`. `None` for a comment, a quote or a fold first.
fn plain_id(value: &str) -> Option<&str> {
    let v = value.trim_start_matches([' ', '\t']);
    let end = v.find([';', ' ', '\t', '\r', '\n']).unwrap_or(v.len());
    let id = v.get(..end)?;
    let next = v.get(end..)?.chars().next();
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'(' | b')' | b'"' | b'\\' | b';'))
        && matches!(next, Some(';' | ' ' | '\t'));
    ok.then_some(id)
}

/// Where the site's authenticators put their headers: the block at the
/// top of the message before anything the SMTP client wrote. Fed each
/// header in order; the block is the leading `Authentication-Results`
/// headers, with at most one `Received` among them (Postfix's own, which
/// a milter inserting at index 0 puts below its header and one inserting
/// at 1 above); any other header, or a second `Received`, ends it.
#[derive(Debug, Clone, Default)]
pub struct SiteBlock {
    received: bool,
    closed: bool,
}

/// Two readings are alike whatever their place: the block is bookkeeping
/// of the reading (what each header was is in its [`AuthResult::site`]).
impl PartialEq for SiteBlock {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SiteBlock {}

impl SiteBlock {
    /// Whether the header `name`, next in order, is in the site's block.
    pub fn next(&mut self, name: &[u8]) -> bool {
        if self.closed {
            return false;
        }
        if name.eq_ignore_ascii_case(b"Authentication-Results") {
            return true;
        }
        if name.eq_ignore_ascii_case(b"Received") && !self.received {
            self.received = true;
            return false;
        }
        self.closed = true;
        false
    }
}

/// The domains the trusted headers among `results` authenticate: those of
/// a trusted authserv-id, written plainly, in the site's block.
pub fn authenticated(results: &[AuthResult], trusted: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results {
        if r.plain && r.site && trusted.contains(&r.authserv_id) {
            for d in &r.passed {
                if !out.contains(d) {
                    out.push(d.clone());
                }
            }
        }
    }
    out
}

/// `d` is `parent` or a subdomain of it.
fn within(d: &str, parent: &str) -> bool {
    d == parent
        || (d.len() > parent.len()
            && d.ends_with(parent)
            && d.as_bytes().get(d.len() - parent.len() - 1) == Some(&b'.'))
}

/// The runtime domain allowances: domain -> allowed until (Unix seconds;
/// `u64::MAX`: until withdrawn).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainAllowances {
    map: BTreeMap<String, u64>,
}

/// Why an allowance cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowanceError {
    #[error("`{0}` is not a domain name (letters, digits, '-', '_', two labels at least)")]
    NotADomain(String),
    #[error("{MAX_DOMAINS} domains are allowed already: withdraw one first")]
    Full,
}

impl DomainAllowances {
    /// Allows `domain` (and its subdomains) until `until`.
    ///
    /// # Errors
    /// Not a domain name, or [`MAX_DOMAINS`] other domains allowed.
    pub fn allow(&mut self, domain_text: &str, until: u64) -> Result<String, AllowanceError> {
        let d = domain(domain_text)
            .ok_or_else(|| AllowanceError::NotADomain(domain_text.chars().take(80).collect()))?;
        if !self.map.contains_key(&d) && self.map.len() >= MAX_DOMAINS {
            return Err(AllowanceError::Full);
        }
        self.map.insert(d.clone(), until);
        Ok(d)
    }

    /// Withdraws the allowance of `domain`; whether there was one.
    pub fn withdraw(&mut self, domain_text: &str) -> bool {
        domain(domain_text).is_some_and(|d| self.map.remove(&d).is_some())
    }

    /// Drops the allowances that ran out at `now`.
    pub fn expire(&mut self, now: u64) {
        self.map.retain(|_, until| *until > now);
    }

    /// The allowances, by domain.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.map.iter().map(|(d, u)| (d.as_str(), *u))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The allowance that lets a message through at `now`, if one does:
    /// its From domain is an allowed domain or under one, and one of the
    /// `authenticated` domains (from trusted headers, [`authenticated`])
    /// is the From domain or a parent of it with two labels at least.
    pub fn allows(
        &self,
        from_domain: Option<&str>,
        authenticated: &[String],
        now: u64,
    ) -> Option<&str> {
        let from = from_domain?.trim_end_matches('.').to_ascii_lowercase();
        let aligned = authenticated
            .iter()
            .any(|a| a.contains('.') && within(&from, a));
        if !aligned {
            return None;
        }
        self.map
            .iter()
            .find(|(d, until)| **until > now && within(&from, d))
            .map(|(d, _)| d.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn reads_what_opendkim_opendmarc_and_rspamd_write() {
        let r = parse(
            "mx.example.org; dkim=pass (2048-bit key; unprotected) header.d=News.Shop.example \
             header.i=@news.shop.example header.a=rsa-sha256 header.s=s1 header.b=AbCd",
        )
        .unwrap();
        assert_eq!(r.authserv_id, "mx.example.org");
        assert_eq!(r.passed, ids(&["news.shop.example"]));
        let r =
            parse("mx.example.org; dmarc=pass (p=none dis=none) header.from=shop.example").unwrap();
        assert_eq!(r.passed, ids(&["shop.example"]));
        let r = parse(
            "mx.example.org;\r\n\tdkim=pass header.d=a.example header.s=x;\r\n\tspf=pass \
             smtp.mailfrom=b.example;\r\n\tdmarc=pass (policy=reject) header.from=a.example",
        )
        .unwrap();
        assert_eq!(r.passed, ids(&["a.example"]));
        // A version after the id, a method with a version.
        let r = parse("mx.example.org 1; dkim/1=pass header.i=news@c.example").unwrap();
        assert_eq!(r.passed, ids(&["c.example"]));
    }

    #[test]
    fn only_passes_for_dkim_and_dmarc_count() {
        for v in [
            "mx.example.org; dkim=fail header.d=shop.example",
            "mx.example.org; dkim=neutral header.d=shop.example",
            "mx.example.org; spf=pass smtp.mailfrom=shop.example",
            "mx.example.org; dmarc=fail header.from=shop.example",
            "mx.example.org; none",
            // The domain inside a comment is no property.
            "mx.example.org; dkim=pass (header.d=shop.example)",
            "mx.example.org; dkim=pass header.d=com",
        ] {
            assert!(parse(v).unwrap().passed.is_empty(), "{v}");
        }
        assert_eq!(parse(""), None);
        assert_eq!(parse(" ; dkim=pass header.d=shop.example"), None);
        assert_eq!(parse(&"x".repeat(MAX_HEADER_LEN + 1)), None);
    }

    #[test]
    fn comments_hide_nothing_and_confuse_nothing() {
        // A comment holding a ';' does not start a result; a quoted
        // string holding '(' is no comment.
        let r =
            parse("mx.example.org (a;b) ; dkim=pass (x(y)z;) header.d=\"shop.example\"").unwrap();
        assert_eq!(r.authserv_id, "mx.example.org");
        assert_eq!(r.passed, ids(&["shop.example"]));
        // Unbalanced: the rest is a comment.
        let r = parse("mx.example.org; dkim=pass (header.d=shop.example").unwrap();
        assert!(r.passed.is_empty());
        // Many parentheses: linear, bounded by the length.
        let deep = format!("mx.example.org; {}", "(".repeat(MAX_HEADER_LEN - 20));
        assert!(parse(&deep).unwrap().passed.is_empty());
    }

    fn site(v: &str) -> AuthResult {
        AuthResult {
            site: true,
            ..parse(v).unwrap()
        }
    }

    #[test]
    fn only_trusted_authserv_ids_authenticate() {
        let results = vec![
            site("evil.example; dkim=pass header.d=bank.example"),
            site("MX.Example.ORG; dkim=pass header.d=shop.example"),
        ];
        assert_eq!(
            authenticated(&results, &ids(&["mx.example.org"])),
            ids(&["shop.example"])
        );
        assert!(authenticated(&results, &[]).is_empty());
    }

    /// The forms of the audit (issue 64): a comment before the id, the id
    /// quoted, a fold before it: legal RFC 8601, never written by an
    /// authenticator, missed by a regular expression; none is trusted,
    /// nor is a plain one below the site's block.
    #[test]
    fn only_a_plain_header_in_the_sites_block_is_trusted() {
        let trusted = ids(&["mx.site.example"]);
        for v in [
            "(mx) mx.site.example; dkim=pass header.d=news.shop.example",
            "\"mx.site.example\"; dkim=pass header.d=news.shop.example",
            "\r\n\tmx.site.example; dkim=pass header.d=news.shop.example",
            "mx.site.example(x); dkim=pass header.d=news.shop.example",
            "mx.site.example\r\n ; dkim=pass header.d=news.shop.example",
        ] {
            let r = site(v);
            assert_eq!(r.authserv_id, "mx.site.example", "{v:?}");
            assert!(!r.plain, "{v:?}");
            assert!(authenticated(&[r], &trusted).is_empty(), "{v:?}");
        }
        for v in [
            "mx.site.example; dkim=pass header.d=news.shop.example",
            "  MX.site.example 1 ; dkim=pass header.d=news.shop.example",
            "\tmx.site.example;dkim=pass header.d=news.shop.example",
        ] {
            let r = site(v);
            assert!(r.plain, "{v:?}");
            assert_eq!(
                authenticated(std::slice::from_ref(&r), &trusted),
                ids(&["news.shop.example"])
            );
            let below = AuthResult { site: false, ..r };
            assert!(authenticated(&[below], &trusted).is_empty(), "{v:?}");
        }
        // The block: authentication headers at the top, one Received among
        // them; the first other header ends it.
        let mut b = SiteBlock::default();
        let names: [&[u8]; 7] = [
            b"Received",
            b"Authentication-Results",
            b"authentication-results",
            b"Received",
            b"Authentication-Results",
            b"From",
            b"Authentication-Results",
        ];
        let got: Vec<bool> = names.iter().map(|n| b.next(n)).collect();
        assert_eq!(got, [false, true, true, false, false, false, false]);
        let mut b = SiteBlock::default();
        assert!(b.next(b"Authentication-Results"));
        assert!(!b.next(b"Received"));
        assert!(b.next(b"Authentication-Results"));
        assert!(!b.next(b"Subject"));
        assert!(!b.next(b"Authentication-Results"));
    }

    #[test]
    fn an_allowance_needs_the_from_domain_authenticated() {
        let mut a = DomainAllowances::default();
        assert_eq!(
            a.allow("News.Shop.Example.", u64::MAX).unwrap(),
            "news.shop.example"
        );
        let now = 1000;
        let auth = ids(&["news.shop.example"]);
        assert_eq!(
            a.allows(Some("news.shop.example"), &auth, now),
            Some("news.shop.example")
        );
        // A subdomain of the allowed domain, signed by its parent.
        assert_eq!(
            a.allows(Some("eu.news.shop.example"), &ids(&["shop.example"]), now),
            Some("news.shop.example")
        );
        // Not authenticated, or authenticated for another domain.
        assert_eq!(a.allows(Some("news.shop.example"), &[], now), None);
        assert_eq!(
            a.allows(Some("news.shop.example"), &ids(&["mailer.example"]), now),
            None
        );
        // A signature of a subdomain does not vouch for its parent.
        assert_eq!(
            a.allows(
                Some("news.shop.example"),
                &ids(&["x.news.shop.example"]),
                now
            ),
            None
        );
        // Authenticated, but not allowed: the parent of an allowed domain,
        // a look-alike.
        assert_eq!(
            a.allows(Some("shop.example"), &ids(&["shop.example"]), now),
            None
        );
        assert_eq!(
            a.allows(
                Some("evilnews.shop.example"),
                &ids(&["evilnews.shop.example"]),
                now
            ),
            None
        );
        assert_eq!(a.allows(None, &auth, now), None);
        // Runs out, and can be withdrawn.
        a.allow("news.shop.example", 2000).unwrap();
        assert!(a.allows(Some("news.shop.example"), &auth, 1999).is_some());
        assert!(a.allows(Some("news.shop.example"), &auth, 2000).is_none());
        assert!(a.withdraw("NEWS.shop.example"));
        assert!(a.is_empty());
    }

    #[test]
    fn allowances_are_domains_and_bounded() {
        let mut a = DomainAllowances::default();
        for bad in [
            "",
            "com",
            "a b.example",
            "shop..example",
            "x@",
            "*.example",
            &"a".repeat(300),
        ] {
            assert!(
                matches!(a.allow(bad, 1), Err(AllowanceError::NotADomain(_))),
                "{bad}"
            );
        }
        for i in 0..MAX_DOMAINS {
            a.allow(&format!("d{i}.example"), u64::MAX).unwrap();
        }
        assert_eq!(a.allow("one-more.example", 1), Err(AllowanceError::Full));
        // Renewing one that is there is no new one.
        assert!(a.allow("d1.example", 5).is_ok());
        a.expire(10);
        assert_eq!(a.len(), MAX_DOMAINS - 1);
    }
}
