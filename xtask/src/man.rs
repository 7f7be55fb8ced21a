//! Man pages: `bulkwatch(8)` and one page per command, generated from the
//! command line's clap definitions (clap_mangen), and `bulkwatch.toml(5)`,
//! generated from the shipped, commented `config/bulkwatch.toml`. Written
//! to `man/` and committed; a test here fails when they are out of date.

use std::fmt::Write as _;
use std::path::Path;

use bulkwatch::cli::Cli;
use clap::CommandFactory;

/// Every page: (file name, contents).
pub fn pages(root: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    let mut main = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section("8")
        .render(&mut main)?;
    out.push(("bulkwatch.8".to_owned(), main));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("bulkwatch-{}", sub.get_name());
        let mut page = Vec::new();
        let bin = format!("bulkwatch {}", sub.get_name());
        clap_mangen::Man::new(sub.clone().name(name.clone()).bin_name(bin))
            .section("8")
            .render(&mut page)?;
        out.push((format!("{name}.8"), page));
    }
    let toml = std::fs::read_to_string(root.join("config/bulkwatch.toml"))?;
    let version = cmd.get_version().unwrap_or_default().to_owned();
    out.push((
        "bulkwatch.toml.5".to_owned(),
        config_page(&toml, &version).into_bytes(),
    ));
    Ok(out)
}

/// Writes every page under `dir`.
pub fn run(root: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, bytes) in pages(root)? {
        std::fs::write(dir.join(&name), bytes)?;
        eprintln!("{}", dir.join(name).display());
    }
    Ok(())
}

/// Text for roff: backslashes escaped, and a line may not start with a
/// control character.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// `bulkwatch.toml(5)` from the shipped file: its opening comment is the
/// description, each `[table]` a subsection, each key with its default
/// and the comments above it and beside it.
///
/// Comments above a key describe it, unless the key has a comment beside
/// it: then those above describe the keys that follow (a paragraph).
pub fn config_page(toml: &str, version: &str) -> String {
    let mut page = String::new();
    page.push_str(".TH BULKWATCH.TOML 5 \"\" \"bulkwatch ");
    page.push_str(version);
    page.push_str(
        "\" \"File Formats\"\n.SH NAME\nbulkwatch.toml \\- configuration of the bulkwatch milter\n",
    );
    page.push_str(".SH DESCRIPTION\n");
    let mut pending: Vec<String> = Vec::new();
    let mut in_tables = false;
    for line in toml.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix('#') {
            let c = c.strip_prefix(' ').unwrap_or(c);
            if !in_tables && c.starts_with("    ") {
                // An indented example line of the opening comment.
                let _ = writeln!(page, ".IP\n.nf\n{}\n.fi\n.PP", roff(c.trim()));
            } else if !in_tables {
                if c.is_empty() {
                    page.push_str(".PP\n");
                } else {
                    let _ = writeln!(page, "{}", roff(c));
                }
            } else if !c.is_empty() {
                pending.push(c.to_owned());
            }
        } else if t.starts_with('[') {
            if !in_tables {
                page.push_str(".SH KEYS\n");
                in_tables = true;
            }
            let _ = writeln!(page, ".SS {}", roff(t));
            if !pending.is_empty() {
                let _ = writeln!(page, "{}", roff(&pending.join(" ")));
                pending.clear();
            }
        } else if let Some((key, rest)) = t.split_once('=') {
            let (value, beside) = match rest.split_once(" #") {
                Some((v, c)) => (v.trim(), Some(c.trim())),
                None => (rest.trim(), None),
            };
            if beside.is_some() && !pending.is_empty() {
                let _ = writeln!(page, ".PP\n{}", roff(&pending.join(" ")));
                pending.clear();
            }
            let _ = writeln!(page, ".TP\n\\fB{}\\fR = {}", roff(key.trim()), roff(value));
            pending.extend(beside.map(str::to_owned));
            if !pending.is_empty() {
                let _ = writeln!(page, "{}", roff(&pending.join(" ")));
            }
            pending.clear();
        }
    }
    page.push_str(
        ".SH FILES\n.TP\n\\fI/etc/bulkwatch/bulkwatch.toml\\fR\n\
         Read by every command given no \\fB\\-\\-config\\fR (when it exists; else the \
         built\\-in defaults). The Debian package installs it as a conffile, readable by \
         root and the group \\fBbulkwatch\\fR only, with a secret \\fBhash_key\\fR made \
         on first install.\n",
    );
    page.push_str(".SH SEE ALSO\n\\fBbulkwatch\\fR(8), \\fBbulkwatch\\-check\\-config\\fR(8), \\fBbulkwatch\\-keygen\\fR(8)\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// The committed pages are what the code and the shipped file make:
    /// run `cargo xtask man` after changing either.
    #[test]
    fn committed_pages_are_up_to_date() {
        for (name, bytes) in pages(root()).unwrap() {
            let path = root().join("man").join(&name);
            let committed = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask man`", path.display()));
            assert!(
                committed == bytes,
                "{} is out of date: run `cargo xtask man`",
                path.display()
            );
        }
    }

    #[test]
    fn every_key_of_the_shipped_file_has_an_entry() {
        let toml = std::fs::read_to_string(root().join("config/bulkwatch.toml")).unwrap();
        let page = config_page(&toml, "0");
        for line in toml
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
        {
            let key = line.split(" = ").next().unwrap().trim();
            let entry = format!("\\fB{}\\fR = ", roff(key));
            assert!(page.contains(&entry), "{key} missing");
        }
        assert!(page.contains(".SS [store.redis]"));
        assert!(
            page.contains("bulkwatch keygen"),
            "the key's comment is kept"
        );
    }
}
