//! The systemd unit stays sandboxed (`systemd-analyze security` must rate
//! it 2.0 or lower; ignored where systemd-analyze is absent) and its reload
//! checks the file before signalling the daemon. The Debian package's unit
//! (`debian/bulkwatch.service`) is the same unit with the package's paths
//! and user, and a test keeps it so.

use std::path::Path;
use std::process::Command;

fn analyze_binary() -> Option<&'static str> {
    ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// The number in "Overall exposure level for bulkwatch.service: 1.1 OK".
fn exposure(output: &str) -> Option<f64> {
    let line = output
        .lines()
        .find(|l| l.contains("Overall exposure level"))?;
    line.rsplit_once(": ")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
#[cfg_attr(
    not(bulkwatch_systemd_analyze),
    ignore = "needs systemd-analyze (apt-get install systemd)"
)]
fn unit_exposure_is_at_most_2() {
    let Some(bin) = analyze_binary() else {
        panic!("systemd-analyze was installed when the tests were built, and is not now");
    };
    for unit in [
        concat!(env!("CARGO_MANIFEST_DIR"), "/systemd/bulkwatch.service"),
        concat!(env!("CARGO_MANIFEST_DIR"), "/debian/bulkwatch.service"),
    ] {
        let out = Command::new(bin)
            .args(["security", "--offline=true", unit])
            .output()
            .expect("run systemd-analyze");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let score =
            exposure(&text).unwrap_or_else(|| panic!("no exposure level in output:\n{text}"));
        assert!(score <= 2.0, "{unit}: exposure {score} > 2.0:\n{text}");
    }
}

/// The Debian package's unit made from the shipped one: the package's
/// paths (`/usr`, not `/usr/local`) and the system user its postinst
/// creates, which owns `/var/lib/bulkwatch` and reads the configuration
/// (mode 0640) through its group, where the shipped unit has a dynamic
/// user.
fn packaged_unit(shipped: &str) -> String {
    let body = shipped
        .replace("/usr/local/", "/usr/")
        .replace("DynamicUser=yes\n", "User=bulkwatch\nGroup=bulkwatch\n");
    format!(
        "# The Debian package's unit: systemd/bulkwatch.service with the package's\n\
         # paths and its system user (tests/systemd_unit.rs makes it; do not edit).\n{body}"
    )
}

#[test]
fn packaged_unit_is_the_shipped_one_with_the_package_paths_and_user() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let shipped = std::fs::read_to_string(format!("{dir}/systemd/bulkwatch.service")).unwrap();
    let expected = packaged_unit(&shipped);
    let path = format!("{dir}/debian/bulkwatch.service");
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let packaged = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        packaged == expected,
        "{path} is out of date: run UPDATE_FIXTURES=1 cargo test --test systemd_unit"
    );
    for line in [
        "ExecStart=/usr/bin/bulkwatch serve --config /etc/bulkwatch/bulkwatch.toml",
        "ExecReload=/usr/bin/bulkwatch check-config --quiet /etc/bulkwatch/bulkwatch.toml",
        "User=bulkwatch",
        "Group=bulkwatch",
        "StateDirectory=bulkwatch",
    ] {
        assert!(packaged.lines().any(|l| l == line), "missing {line}");
    }
    assert!(!packaged.contains("DynamicUser"));
}

#[test]
fn unit_has_the_required_settings() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/systemd/bulkwatch.service"
    ))
    .unwrap();
    for line in [
        "Type=notify",
        "ExecStart=/usr/local/bin/bulkwatch serve --config /etc/bulkwatch/bulkwatch.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "DynamicUser=yes",
        "StateDirectory=bulkwatch",
        "RuntimeDirectory=bulkwatch",
        "WorkingDirectory=%S/bulkwatch",
        "Restart=on-failure",
        "After=network-online.target",
        "Wants=network-online.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    assert!(unit.lines().any(|l| l.starts_with("Documentation=")));
}

#[test]
fn exposure_line_parses() {
    assert_eq!(
        exposure("x\n→ Overall exposure level for bulkwatch.service: 1.1 OK 🙂\n"),
        Some(1.1)
    );
}

#[test]
fn reload_checks_the_file_it_serves_before_signalling() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/systemd/bulkwatch.service"
    ))
    .expect("read the unit");
    let value = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(key))
            .map(str::to_owned)
            .collect()
    };
    let start = value("ExecStart=");
    let config = start[0]
        .split_once("--config ")
        .map(|(_, c)| c.trim().to_owned())
        .expect("ExecStart names its --config");
    let reload = value("ExecReload=");
    assert_eq!(reload.len(), 2, "{reload:?}");
    // systemd runs them in order and stops at the first that fails.
    assert!(
        reload[0].contains("bulkwatch check-config --quiet") && reload[0].ends_with(&config),
        "{reload:?}"
    );
    assert_eq!(reload[1], "/bin/kill -HUP $MAINPID");
}
