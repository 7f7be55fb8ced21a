//! Milter callbacks: wiring only. Each handler takes the session (creating
//! it if the MTA skipped a stage), pulls its arguments out without
//! indexing, delegates to [`Session`] or [`reply`], and maps the result to
//! a status. Every stage is registered, so that Postfix sends everything
//! the session collects, and up to the body Postfix is asked not to wait
//! for a reply ([`NO_REPLY`]); over TCP the listener acknowledges each read
//! at once so that Postfix's packets written in a row do not stall (see
//! [`crate::milter::listener`]).

use std::ffi::{CStr, CString};
use std::net::IpAddr;
use std::sync::Arc;

use indymilter::{
    Actions, Callbacks, Context, EomContext, MacroStage, Macros, NegotiateContext, ProtoOpts,
    SocketInfo, Status,
};
use tracing::{error, info, warn, Instrument};

use crate::milter::reply::{self, Decision};
use crate::milter::session::Session;
use crate::milter::{Decided, State};

fn text(s: &CStr) -> String {
    String::from_utf8_lossy(s.to_bytes()).into_owned()
}

fn macro_text(m: &Macros, name: &CStr) -> Option<String> {
    m.get(name).map(text)
}

/// Stages after which bulkwatch never has anything to say but Continue:
/// it asks the MTA (when offered) not to wait for a reply there. Each
/// reply saved is a round trip less for every header, recipient and
/// SMTP command of every message; the body (which may answer Skip) and
/// the end of message still get one.
pub const NO_REPLY: ProtoOpts = ProtoOpts::NOREPLY_CONNECT
    .union(ProtoOpts::NOREPLY_HELO)
    .union(ProtoOpts::NOREPLY_MAIL)
    .union(ProtoOpts::NOREPLY_RCPT)
    .union(ProtoOpts::NOREPLY_DATA)
    .union(ProtoOpts::NOREPLY_UNKNOWN)
    .union(ProtoOpts::NOREPLY_HEADER)
    .union(ProtoOpts::NOREPLY_EOH);

/// What a stage that never has anything to say answers: nothing where the
/// MTA agreed to expect no reply (`stage` in the negotiated
/// [`NO_REPLY`]), else Continue. (Continue where Noreply was agreed is
/// corrected by indymilter, with a warning for every header of every
/// message.)
fn ack(cx: &Context<Session>, stage: ProtoOpts) -> Status {
    if cx.data.as_ref().is_some_and(|s| s.no_reply.contains(stage)) {
        Status::Noreply
    } else {
        Status::Continue
    }
}

/// The callbacks for [`crate::milter::run`].
pub fn callbacks(state: Arc<State>) -> Callbacks<Session> {
    let (s2, s3, s4, s5) = (state.clone(), state.clone(), state.clone(), state);
    Callbacks::new()
        .on_negotiate(|cx, actions, opts| Box::pin(handle_negotiate(cx, actions, opts)))
        .on_connect(|cx, name, info| Box::pin(handle_connect(cx, name, info)))
        .on_helo(|cx, name| Box::pin(handle_helo(cx, name)))
        .on_mail(|cx, args| Box::pin(handle_mail(cx, args)))
        .on_rcpt(|cx, args| Box::pin(handle_rcpt(cx, args)))
        .on_data(|cx| Box::pin(handle_data(cx)))
        .on_header(move |cx, name, value| Box::pin(handle_header(s2.clone(), cx, name, value)))
        .on_eoh(move |cx| Box::pin(handle_eoh(s3.clone(), cx)))
        .on_body(move |cx, chunk| Box::pin(handle_body(s4.clone(), cx, chunk)))
        .on_eom(move |cx| Box::pin(handle_eom(s5.clone(), cx)))
        .on_abort(|cx| Box::pin(handle_abort(cx)))
        .on_close(|cx| Box::pin(handle_close(cx)))
        .on_unknown(|cx, _| Box::pin(async move { ack(cx, ProtoOpts::NOREPLY_UNKNOWN) }))
}

async fn handle_negotiate(
    cx: &mut NegotiateContext<Session>,
    actions: Actions,
    opts: ProtoOpts,
) -> Status {
    // With SKIP (Postfix offers it) the MTA stops sending the body once
    // max_message_bytes are buffered, instead of sending all of a 50 MB
    // message for nothing.
    cx.data.get_or_insert_with(Session::default).can_skip =
        opts.contains(ProtoOpts::SKIP) && cx.requested_opts.contains(ProtoOpts::SKIP);
    cx.requested_opts |= opts & NO_REPLY;
    cx.data.get_or_insert_with(Session::default).no_reply = opts & NO_REPLY;
    let needed = reply::needed_actions();
    if !actions.contains(needed) {
        // indymilter then refuses the connection; the MTA logs it and
        // applies its milter_default_action.
        error!(offered = ?actions, needed = ?needed, "MTA does not offer the milter actions bulkwatch uses");
    }
    cx.requested_actions = needed;
    // Postfix sends `i` once the queue file exists; ask at every stage
    // where it may appear. `{auth_authen}` comes with MAIL FROM,
    // `{daemon_name}` with the connect (`crate::milter::origin`).
    cx.requested_macros
        .insert(MacroStage::Connect, c"{daemon_name}".into());
    cx.requested_macros
        .insert(MacroStage::Mail, c"i {auth_authen}".into());
    for stage in [
        MacroStage::Rcpt,
        MacroStage::Data,
        MacroStage::Eoh,
        MacroStage::Eom,
    ] {
        cx.requested_macros.insert(stage, c"i".into());
    }
    Status::Continue
}

async fn handle_connect(cx: &mut Context<Session>, name: CString, info: SocketInfo) -> Status {
    let addr: Option<IpAddr> = match info {
        SocketInfo::Inet(sa) => Some(sa.ip()),
        _ => None,
    };
    let daemon = macro_text(&cx.macros, c"{daemon_name}");
    cx.data
        .get_or_insert_with(Session::default)
        .connect(text(&name), addr, daemon);
    ack(cx, ProtoOpts::NOREPLY_CONNECT)
}

async fn handle_helo(cx: &mut Context<Session>, name: CString) -> Status {
    cx.data
        .get_or_insert_with(Session::default)
        .helo(text(&name));
    ack(cx, ProtoOpts::NOREPLY_HELO)
}

async fn handle_mail(cx: &mut Context<Session>, args: Vec<CString>) -> Status {
    let from = args.first().map(|a| text(a)).unwrap_or_default();
    let auth = macro_text(&cx.macros, c"{auth_authen}");
    let queue_id = macro_text(&cx.macros, c"i");
    let s = cx.data.get_or_insert_with(Session::default);
    s.begin_message(&from, auth);
    s.set_queue_id(queue_id);
    ack(cx, ProtoOpts::NOREPLY_MAIL)
}

async fn handle_rcpt(cx: &mut Context<Session>, args: Vec<CString>) -> Status {
    let rcpt = args.first().map(|a| text(a)).unwrap_or_default();
    let queue_id = macro_text(&cx.macros, c"i");
    let s = cx.data.get_or_insert_with(Session::default);
    s.set_queue_id(queue_id);
    s.add_recipient(&rcpt);
    ack(cx, ProtoOpts::NOREPLY_RCPT)
}

async fn handle_data(cx: &mut Context<Session>) -> Status {
    let queue_id = macro_text(&cx.macros, c"i");
    cx.data
        .get_or_insert_with(Session::default)
        .set_queue_id(queue_id);
    ack(cx, ProtoOpts::NOREPLY_DATA)
}

async fn handle_header(
    state: Arc<State>,
    cx: &mut Context<Session>,
    name: CString,
    value: CString,
) -> Status {
    let max = state.config().milter.max_message_bytes;
    cx.data
        .get_or_insert_with(Session::default)
        .add_header(name.as_bytes(), value.as_bytes(), max);
    ack(cx, ProtoOpts::NOREPLY_HEADER)
}

async fn handle_eoh(state: Arc<State>, cx: &mut Context<Session>) -> Status {
    let max = state.config().milter.max_message_bytes;
    cx.data
        .get_or_insert_with(Session::default)
        .end_headers(max);
    ack(cx, ProtoOpts::NOREPLY_EOH)
}

async fn handle_body(
    state: Arc<State>,
    cx: &mut Context<Session>,
    chunk: impl AsRef<[u8]>,
) -> Status {
    let max = state.config().milter.max_message_bytes;
    let session = cx.data.get_or_insert_with(Session::default);
    session.add_body_chunk(chunk.as_ref(), max);
    if session.can_skip && session.message_full() {
        Status::Skip
    } else {
        Status::Continue
    }
}

async fn handle_eom(state: Arc<State>, cx: &mut EomContext<Session>) -> Status {
    let queue_id = macro_text(&cx.macros, c"i");
    let session = cx.data.get_or_insert_with(Session::default);
    session.set_queue_id(queue_id);
    let msg = session.finish_message();
    let queue_id = msg.queue_id().to_owned();
    let forged = msg.forged;
    let truncated = msg.truncated();
    let cfg = state.config();
    // Lines logged inside the engine step (alerts) carry the queue id too.
    let span = tracing::info_span!("message", queue_id = %queue_id);
    let sender = msg.envelope.mail_from.clone().unwrap_or_default();
    let rcpts = match state.zero_hour() {
        Some(_) => msg.envelope.rcpts.clone(),
        None => Vec::new(),
    };
    let mut copy = None;
    let decision = match state.judge_message(&cfg, msg).instrument(span).await {
        Ok(Decided {
            verdict,
            elapsed,
            message_id,
            subject,
            own,
        }) => {
            state.control.note(
                crate::milter::control::Member {
                    seq: verdict.seq,
                    campaign: verdict.campaign.as_ref().map(|c| c.id),
                    queue_id: queue_id.clone(),
                    sender: sender.clone(),
                    subject,
                    time: crate::milter::unix_now(),
                    level: verdict.level.as_str(),
                },
                &verdict.merged,
            );
            let decision = reply::decision_for(&verdict, &cfg.policy);
            copy = state.zero_hour().and_then(|z| {
                let now = crate::milter::unix_now();
                z.stamp(&cfg, &verdict, &decision, &rcpts, &queue_id, now)
            });
            log_judged(&Judged {
                queue_id: &queue_id,
                message_id: message_id.as_deref(),
                sender: &sender,
                verdict: &verdict,
                own,
                elapsed,
                decision: &decision,
                truncated,
            });
            decision
        }
        Err(e) => {
            state.metrics.record_error();
            let decision = reply::failure(&cfg.milter);
            warn!(
                queue_id = %queue_id,
                cause = e.label(),
                error = %e,
                action = decision.as_str(),
                "message not judged: reading it failed; failure_action applied"
            );
            decision
        }
    };
    match reply::apply(
        &cx.actions,
        &mut cx.reply,
        &cfg.milter,
        &decision,
        forged,
        copy.as_deref(),
    )
    .await
    {
        Ok(status) => status,
        Err(e) => {
            state.metrics.record_error();
            error!(queue_id = %queue_id, error = %e, "milter action failed");
            match reply::failure(&cfg.milter) {
                Decision::Tempfail => Status::Tempfail,
                _ => Status::Accept,
            }
        }
    }
}

/// What the "message judged" line says.
struct Judged<'a> {
    queue_id: &'a str,
    message_id: Option<&'a str>,
    sender: &'a str,
    verdict: &'a crate::engine::verdict::Verdict,
    own: Option<crate::milter::origin::OwnReason>,
    elapsed: std::time::Duration,
    decision: &'a Decision,
    truncated: bool,
}

/// The line logged for every judged message.
fn log_judged(j: &Judged<'_>) {
    let (queue_id, sender, verdict, own, elapsed, decision, truncated) = (
        j.queue_id,
        j.sender,
        j.verdict,
        j.own,
        j.elapsed,
        j.decision,
        j.truncated,
    );
    let message_id = j.message_id;
    // Absent values are left out rather than written as -1 or "".
    let campaign = verdict.campaign.as_ref();
    info!(
        queue_id = %queue_id,
        message_id = message_id.map(crate::escape::printable),
        sender = %crate::escape::printable(sender),
        level = verdict.level.as_str(),
        reason = verdict.level.reason(),
        list = verdict.list.then_some(true),
        own = own.map(|r| r.as_str()),
        campaign = campaign.map(|c| tracing::field::display(c.id)),
        size = campaign.map(|c| if verdict.own {
            u64::from(c.own)
        } else {
            c.recipients
        }),
        distance = verdict.distance,
        corroborating = (verdict.corroborating > 0).then_some(verdict.corroborating),
        conversation = campaign
            .filter(|c| c.conversation && c.messages > 1)
            .map(|_| true),
        step = verdict.step.map(|m| m.kind.as_str()),
        added = verdict.step.map(|m| m.added),
        quote = verdict.kept_cut.map(|_| "read"),
        read = verdict.partial.then_some("partial"),
        pictures = verdict.unread.then_some("unread"),
        engine_ms = (elapsed.as_secs_f64() * 100_000.0).round() / 100.0,
        action = decision.as_str(),
        truncated = truncated.then_some(true),
        "message judged"
    );
}

async fn handle_abort(cx: &mut Context<Session>) -> Status {
    if let Some(s) = cx.data.as_mut() {
        s.abort_message();
    }
    Status::Continue
}

async fn handle_close(cx: &mut Context<Session>) -> Status {
    cx.data = None;
    Status::Continue
}
