//! `bulkwatch serve` as a child process: started on a config file, its log
//! read for what it reports, stopped with SIGTERM (or killed on drop).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use indymilter_test::EomAction;

/// `bulkwatch campaigns ARGS --config CONFIG` against the daemon that
/// runs on `config`: whether it succeeded, its standard output and error.
pub fn campaigns(config: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .arg("campaigns")
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub struct Daemon {
    pub child: Child,
    log: PathBuf,
}

impl Daemon {
    pub fn start(config: &Path, log: &Path, socket: &Path) -> Daemon {
        let mut d = Daemon::spawn(config, log, None);
        d.wait_log("bulkwatch serving");
        assert!(socket.exists());
        d
    }

    /// Spawns `bulkwatch serve` without waiting for it; with `nofile`, under
    /// that open-file limit (soft and hard, set by the shell's `ulimit -n`).
    pub fn spawn(config: &Path, log: &Path, nofile: Option<u32>) -> Daemon {
        Daemon::spawn_with(config, log, nofile, &[])
    }

    /// [`Daemon::spawn`] with more arguments for `serve`.
    pub fn spawn_with(
        config: &Path,
        log: &Path,
        nofile: Option<u32>,
        args: &[&std::ffi::OsStr],
    ) -> Daemon {
        let _ = fs::remove_file(log);
        let out = fs::File::create(log).unwrap();
        let mut cmd = match nofile {
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_bulkwatch"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_bulkwatch")),
        };
        let child = cmd
            .args(["serve", "--config"])
            .arg(config)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("NOTIFY_SOCKET")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .unwrap();
        Daemon {
            child,
            log: log.to_owned(),
        }
    }

    /// A daemon started by the caller, logging into `log`.
    pub fn adopt(child: Child, log: &Path) -> Daemon {
        Daemon {
            child,
            log: log.to_owned(),
        }
    }

    /// Waits (bounded) for the daemon to exit on its own.
    pub fn wait_exit(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return (st, self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "daemon did not exit:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) for a line in the log: the daemon's own report that
    /// it got there, so nothing depends on how fast it is.
    pub fn wait_log(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log_text().contains(needle) {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "daemon exited ({st}) before `{needle}`:\n{}",
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no `{needle}` in log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    pub fn stop(mut self) -> ExitStatus {
        self.signal("-TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "daemon did not stop:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn header(actions: &indymilter_test::EomActions) -> Option<String> {
    actions.actions.iter().find_map(|a| match a {
        EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
            Some(value.to_string_lossy().into_owned())
        }
        _ => None,
    })
}
