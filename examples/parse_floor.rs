//! The floor of reading mail: mail-parser alone splits the mbox files
//! given (its own `MessageIterator`), parses every message and extracts
//! the text of every body part, on one thread, and prints the number of
//! bytes of text. What any filter that reads the text pays; the speed
//! benchmarks (`benches/replay_floor.sh`, docs/dev/performance.md) give
//! bulkwatch's cost as a ratio to this, measured in the same run.
//!
//! `cargo run --release --example parse_floor -- MBOX...`

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::MessageParser;

fn main() -> std::io::Result<()> {
    let mut n = 0usize;
    let parser = MessageParser::default();
    for path in std::env::args_os().skip(1) {
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
                }
            }
        }
    }
    println!("{n}");
    Ok(())
}
