//! The floors of reading mail. By default mail-parser alone splits the
//! mbox files given (its own `MessageIterator`), parses every message and
//! extracts the text of every body part, on one thread, and prints the
//! number of bytes of text: what any filter that reads the text pays.
//! With `--html` first, every text/html part is also run through html5gum's
//! tokenizer, every token read: the reader's floor, what a filter that
//! reads HTML as a reader sees it cannot avoid. The speed benchmarks
//! (`benches/replay_floor.sh`, docs/dev/performance.md) give bulkwatch's
//! cost as a ratio to both, measured in the same run.
//!
//! `cargo run --release --example parse_floor -- [--html] MBOX...`

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::{MessageParser, PartType};

fn main() -> std::io::Result<()> {
    let mut args: Vec<_> = std::env::args_os().skip(1).collect();
    let html = args.first().is_some_and(|a| a == "--html");
    if html {
        args.remove(0);
    }
    let mut n = 0usize;
    let mut tokens = 0usize;
    let parser = MessageParser::default();
    for path in args {
        let bytes = std::fs::read(&path)?;
        for m in MessageIterator::new(&bytes[..]) {
            let Ok(m) = m else { continue };
            let raw = m.unwrap_contents();
            if let Some(msg) = parser.parse(&raw) {
                for i in 0..msg.text_body.len() {
                    n += msg.body_text(i).map_or(0, |t| t.len());
                }
                for i in 0..msg.html_body.len() {
                    n += msg.body_html(i).map_or(0, |t| t.len());
                    // The parts that are HTML (not text parts that
                    // mail-parser would render as HTML).
                    let part = u32::try_from(i).ok().and_then(|i| msg.html_part(i));
                    if let (true, Some(PartType::Html(h))) = (html, part.map(|p| &p.body)) {
                        tokens += html5gum::Tokenizer::new(h.as_ref()).count();
                    }
                }
            }
        }
    }
    println!("{n} {tokens}");
    Ok(())
}
