//! Runs the miltertest (Debian package) Lua scripts in tests/miltertest/
//! against the built binary. Skipped with a note when miltertest is absent.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
#[cfg_attr(
    not(bulkwatch_miltertest),
    ignore = "needs miltertest (apt-get install miltertest)"
)]
fn campaign_script_passes() {
    let Some(mt) = ["/usr/bin/miltertest", "/usr/sbin/miltertest"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        panic!("miltertest was installed when the tests were built, and is not now");
    };
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.path().join("bulkwatch.toml");
    fs::write(
        &config,
        format!(
            "[milter]\nsocket = \"inet:127.0.0.1:{port}\"\n[state]\nstate_dir = \"{}\"\n[metrics]\nlisten = \"\"\n\
             [thresholds]\nbulk_threshold = 5.0\nsuspect_threshold = 3.0\n",
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let log = dir.path().join("daemon.log");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["serve", "--config"])
        .arg(&config)
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("bulkwatch serving")
    {
        assert!(Instant::now() < deadline, "daemon did not start");
        assert!(daemon.try_wait().unwrap().is_none(), "daemon exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/miltertest/campaign.lua");
    let out = Command::new(mt)
        .args(["-D", &format!("SOCKET=inet:{port}@127.0.0.1"), "-s", script])
        .output()
        .unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status();
    let status = daemon.wait().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("miltertest ok"),
        "miltertest: {text}\nlog:\n{}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(status.success());
}
