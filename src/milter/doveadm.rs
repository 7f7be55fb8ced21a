//! Dovecot's doveadm HTTP API (`POST /doveadm/v1`, JSON): the commands
//! zero-hour sends to the recipients' mailboxes.
//!
//! Why this API and not IMAP with a master user: one request carries the
//! commands for every recipient of a copy, each naming its user, with no
//! login, session or mailbox selection to keep per user; a search by
//! header finds the copy wherever the user's client left it; and the
//! answer gives each command's exit code (67: no such user, which is a
//! recipient of another server and not retried). The key is Dovecot's
//! `doveadm_api_key`. HTTP/1.1 is hyper's client, one request per
//! connection, bounded in time ([`TIMEOUT`]) and in the answer's size
//! ([`MAX_ANSWER`]).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;

/// A whole request, connection to answer, ends within this.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read (a command's answer to a move is a few bytes).
pub const MAX_ANSWER: usize = 1 << 20;
/// doveadm's exit code for a user the server does not know.
pub const NO_USER: i64 = 67;

/// Where doveadm listens and its key.
#[derive(Debug, Clone)]
pub struct Doveadm {
    pub host: String,
    pub port: u16,
    pub path: String,
    /// `Authorization: X-Dovecot-API <base64 of the key>`.
    auth: String,
}

/// One command's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done; how many items its answer lists (a search: the messages
    /// found).
    Done(usize),
    /// The server does not know the user (another server's recipient).
    NoUser,
    /// It failed (exit code): tried again later.
    Failed(i64),
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum DoveadmError {
    #[error("cannot reach doveadm: {0}")]
    Connect(std::io::Error),
    #[error("doveadm: {0}")]
    Http(String),
    #[error("doveadm answered {0}")]
    Status(u16),
    #[error("no answer from doveadm within {TIMEOUT:?}")]
    Timeout,
    #[error("doveadm's answer is not what was asked: {0}")]
    Answer(String),
}

impl Doveadm {
    /// From `zero_hour.doveadm_url` and the key's text (white space around
    /// it dropped).
    ///
    /// # Errors
    /// The URL is not one `parse_doveadm_url` takes.
    pub fn new(url: &str, key: &str) -> Result<Doveadm, &'static str> {
        use base64::Engine as _;
        let (host, port, path) = crate::config::parse_doveadm_url(url)?;
        Ok(Doveadm {
            host,
            port,
            path,
            auth: format!(
                "X-Dovecot-API {}",
                base64::engine::general_purpose::STANDARD.encode(key.trim())
            ),
        })
    }

    /// Sends `commands` (each `[name, parameters]`, tagged by position) in
    /// one request; their outcomes in the same order.
    ///
    /// # Errors
    /// No answer, or one that does not give every command's outcome.
    pub async fn send(
        &self,
        commands: &[(&str, serde_json::Value)],
    ) -> Result<Vec<Outcome>, DoveadmError> {
        let body: Vec<serde_json::Value> = commands
            .iter()
            .enumerate()
            .map(|(i, (name, params))| serde_json::json!([name, params, format!("c{i}")]))
            .collect();
        let body = serde_json::to_vec(&body).map_err(|e| DoveadmError::Http(e.to_string()))?;
        let answer = tokio::time::timeout(TIMEOUT, self.post(body))
            .await
            .map_err(|_| DoveadmError::Timeout)??;
        outcomes(&answer, commands.len())
    }

    async fn post(&self, body: Vec<u8>) -> Result<Bytes, DoveadmError> {
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(DoveadmError::Connect)?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| DoveadmError::Http(e.to_string()))?;
        let conn = tokio::spawn(conn);
        let req = hyper::Request::post(self.path.as_str())
            .header(hyper::header::HOST, format!("{}:{}", self.host, self.port))
            .header(hyper::header::AUTHORIZATION, self.auth.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| DoveadmError::Http(e.to_string()))?;
        let res = sender
            .send_request(req)
            .await
            .map_err(|e| DoveadmError::Http(e.to_string()))?;
        let status = res.status().as_u16();
        let got = Limited::new(res.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| DoveadmError::Http(e.to_string()))?
            .to_bytes();
        conn.abort();
        if status != 200 {
            return Err(DoveadmError::Status(status));
        }
        Ok(got)
    }
}

/// Each command's outcome from doveadm's answer: `[["doveadmResponse",
/// …, "cN"], ["error", {"exitCode": E}, "cN"], …]`.
fn outcomes(answer: &[u8], n: usize) -> Result<Vec<Outcome>, DoveadmError> {
    let bad = |why: &str| DoveadmError::Answer(why.to_owned());
    let v: serde_json::Value = serde_json::from_slice(answer).map_err(|e| bad(&e.to_string()))?;
    let items = v.as_array().ok_or_else(|| bad("not a list"))?;
    let mut out = vec![None; n];
    for item in items {
        let kind = item.get(0).and_then(|k| k.as_str()).unwrap_or_default();
        let tag = item.get(2).and_then(|t| t.as_str()).unwrap_or_default();
        let Some(i) = tag.strip_prefix('c').and_then(|i| i.parse::<usize>().ok()) else {
            return Err(bad("an answer without its tag"));
        };
        let outcome = match kind {
            "doveadmResponse" => {
                Outcome::Done(item.get(1).and_then(|r| r.as_array()).map_or(0, Vec::len))
            }
            "error" => {
                match item
                    .get(1)
                    .and_then(|e| e.get("exitCode"))
                    .and_then(serde_json::Value::as_i64)
                {
                    Some(NO_USER) => Outcome::NoUser,
                    Some(code) => Outcome::Failed(code),
                    None => Outcome::Failed(-1),
                }
            }
            _ => return Err(bad("an answer of an unknown kind")),
        };
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(outcome);
        }
    }
    out.into_iter()
        .map(|o| o.ok_or_else(|| bad("a command without its answer")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_by_their_tags() {
        let a = br#"[["doveadmResponse",[{"uid":"1"}],"c1"],["error",{"type":"exitCode","exitCode":67},"c0"],["error",{"type":"exitCode","exitCode":75},"c2"]]"#;
        assert_eq!(
            outcomes(a, 3).unwrap(),
            [Outcome::NoUser, Outcome::Done(1), Outcome::Failed(75)]
        );
        assert!(outcomes(br#"[["doveadmResponse",[],"c0"]]"#, 2).is_err());
        assert_eq!(
            outcomes(br#"[["doveadmResponse",[],"c0"]]"#, 1).unwrap(),
            [Outcome::Done(0)]
        );
        assert!(outcomes(b"{}", 1).is_err());
        assert!(outcomes(br#"[["x",[],"c0"]]"#, 1).is_err());
    }
}
