//! Finds what some integration tests need from the machine (Postfix and
//! root, redis-server, miltertest, spamassassin, systemd-analyze, Dovecot,
//! Tesseract and a font, the real-mail corpus) and sets a `cfg` for each that is there. A test whose need is missing is
//! compiled as ignored, with the reason, so `cargo test` lists it as
//! `ignored, needs ...` instead of passing it unseen.
//!
//! `.ci/run` installs every tool and sets `BULKWATCH_REQUIRE_ALL=1`: then
//! a missing tool (or root) fails the build, so CI cannot pass by
//! skipping. The corpus stays optional: `.ci/run` sets `BULKWATCH_CORPUS`
//! where the corpus exists on the CI machine.
//!
//! Nothing here changes the library or the daemon.

use std::path::Path;

/// cfg name, files of which one must exist, what to install.
const TOOLS: &[(&str, &[&str], &str)] = &[
    (
        "bulkwatch_postfix",
        &["/usr/sbin/postfix"],
        "apt-get install postfix",
    ),
    (
        "bulkwatch_redis",
        &["/usr/bin/redis-server", "/usr/local/bin/redis-server"],
        "apt-get install redis-server",
    ),
    (
        "bulkwatch_miltertest",
        &["/usr/bin/miltertest", "/usr/sbin/miltertest"],
        "apt-get install miltertest",
    ),
    (
        "bulkwatch_chromium",
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        "apt-get install chromium",
    ),
    (
        "bulkwatch_spamassassin",
        &["/usr/bin/spamassassin", "/usr/local/bin/spamassassin"],
        "apt-get install spamassassin",
    ),
    (
        "bulkwatch_openssl",
        &["/usr/bin/openssl"],
        "apt-get install openssl",
    ),
    (
        "bulkwatch_tesseract",
        &[
            "/usr/share/tesseract-ocr/5/tessdata/eng.traineddata",
            "/usr/share/tesseract-ocr/4.00/tessdata/eng.traineddata",
        ],
        "apt-get install libtesseract5 tesseract-ocr-eng",
    ),
    (
        "bulkwatch_dejavu",
        &["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"],
        "apt-get install fonts-dejavu-core",
    ),
    (
        "bulkwatch_dovecot",
        &["/usr/lib/dovecot/modules/sieve/lib90_sieve_imapsieve_plugin.so"],
        "apt-get install dovecot-imapd dovecot-lmtpd dovecot-sieve",
    ),
    (
        "bulkwatch_systemd_analyze",
        &["/usr/bin/systemd-analyze", "/bin/systemd-analyze"],
        "apt-get install systemd",
    ),
];

fn main() {
    let require = std::env::var_os("BULKWATCH_REQUIRE_ALL").is_some_and(|v| v != "0");
    println!("cargo::rerun-if-env-changed=BULKWATCH_REQUIRE_ALL");
    println!("cargo::rerun-if-env-changed=BULKWATCH_CORPUS");
    println!("cargo::rerun-if-changed=build.rs");
    let mut missing = Vec::new();
    for (cfg, paths, install) in TOOLS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let found: Vec<&&str> = paths.iter().filter(|p| Path::new(p).exists()).collect();
        // Removing the tool found, or installing a missing one (a path
        // that does not exist reruns this script at every build), reruns
        // this script.
        for p in if found.is_empty() {
            paths.iter().collect()
        } else {
            found.clone()
        } {
            println!("cargo::rerun-if-changed={p}");
        }
        if found.is_empty() {
            missing.push(format!("{} ({install})", paths.join(" or ")));
        } else {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    println!("cargo::rustc-check-cfg=cfg(bulkwatch_root)");
    if is_root() {
        println!("cargo::rustc-cfg=bulkwatch_root");
    } else {
        missing.push("root (the Postfix and state-directory fault tests)".into());
    }
    println!("cargo::rustc-check-cfg=cfg(bulkwatch_corpus)");
    // The corpus is optional even in CI (a checkout without it still
    // passes), but a variable that names no directory is a mistake.
    if let Some(dir) = std::env::var_os("BULKWATCH_CORPUS") {
        assert!(
            Path::new(&dir).is_dir(),
            "BULKWATCH_CORPUS={} is not a directory",
            Path::new(&dir).display()
        );
        println!("cargo::rustc-cfg=bulkwatch_corpus");
    }
    if require && !missing.is_empty() {
        panic!(
            "BULKWATCH_REQUIRE_ALL is set, and the tests would skip for want of: {}",
            missing.join("; ")
        );
    }
}

/// The build runs as root (the tests run as the same user).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}
