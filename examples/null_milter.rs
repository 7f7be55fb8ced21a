//! A do-nothing milter for benchmarks: every stage registered, every answer
//! Continue (Accept at end of message), on the same listener as bulkwatch
//! (TCP_NODELAY and quick ACKs on accepted sockets).
//!
//! By default it answers every stage, as a milter written plainly does.
//! With `--no-reply` it negotiates what bulkwatch negotiates (no reply
//! where the answer is always Continue, see
//! `bulkwatch::milter::callbacks::NO_REPLY`), so it pays bulkwatch's
//! protocol costs and nothing else.
//!
//! `cargo run --release --example null_milter -- 127.0.0.1:7358 [--no-reply]`
//! (or `unix:/path`). Stops on SIGTERM or SIGINT.

use bulkwatch::milter::callbacks::NO_REPLY;
use bulkwatch::milter::Listener;
use indymilter::{Callbacks, Config, Status};
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut addr = "127.0.0.1:7358".to_owned();
    let mut no_reply = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-reply" => no_reply = true,
            _ => addr = arg,
        }
    }
    let listener: Listener = match addr.strip_prefix("unix:") {
        Some(path) => {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::remove_file(path);
            let l = UnixListener::bind(path)?;
            // Postfix connects as user postfix.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
            Listener::Unix(l)
        }
        None => Listener::Tcp(TcpListener::bind(&addr).await?),
    };
    let mut callbacks: Callbacks<()> = Callbacks::new();
    if no_reply {
        callbacks = callbacks.on_negotiate(|cx, _, opts| {
            Box::pin(async move {
                // What indymilter asks without a negotiate callback, plus
                // no replies; no actions, as without one.
                cx.requested_actions = indymilter::Actions::empty();
                cx.requested_opts.remove(indymilter::ProtoOpts::SKIP);
                cx.requested_opts |= opts & NO_REPLY;
                Status::Continue
            })
        });
    }
    let callbacks = callbacks
        .on_connect(|_, _, _| Box::pin(async { Status::Continue }))
        .on_helo(|_, _| Box::pin(async { Status::Continue }))
        .on_mail(|_, _| Box::pin(async { Status::Continue }))
        .on_rcpt(|_, _| Box::pin(async { Status::Continue }))
        .on_data(|_| Box::pin(async { Status::Continue }))
        .on_header(|_, _, _| Box::pin(async { Status::Continue }))
        .on_eoh(|_| Box::pin(async { Status::Continue }))
        .on_body(|_, _| Box::pin(async { Status::Continue }))
        .on_eom(|_| Box::pin(async { Status::Accept }))
        .on_abort(|_| Box::pin(async { Status::Continue }))
        .on_close(|_| Box::pin(async { Status::Continue }))
        .on_unknown(|_, _| Box::pin(async { Status::Continue }));
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    eprintln!("null milter on {addr}");
    indymilter::run(listener, callbacks, Config::default(), shutdown).await
}
