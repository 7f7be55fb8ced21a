//! What the measuring examples share: the `--keys N` argument.

/// `--keys N` (when it comes first) and the arguments after it; `default`
/// keys without it.
pub fn keys_and_args(default: u64) -> Result<(u64, Vec<String>), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut keys = default;
    if args.first().map(String::as_str) == Some("--keys") {
        keys = args.get(1).ok_or("--keys needs a number")?.parse()?;
        args.drain(..2);
    }
    Ok((keys, args))
}
