//! What a worker process gives up before it reads any mail: everything but
//! reading its standard input, writing its standard output and using
//! memory.
//!
//! - **Resource limits:** address space (an allocation past it fails, and
//!   the worker aborts: contained), no core files (they would hold the
//!   mail), no file growth.
//! - **Landlock** (Linux 5.13 and later, where the kernel has it enabled):
//!   no file may be opened, created or executed, no TCP port bound or
//!   connected (6.7), no abstract Unix socket reached and no process
//!   signalled outside the worker (6.12). Best effort: what the running
//!   kernel lacks is reported, not fatal.
//! - **A seccomp system call filter** (and with it `no_new_privs`): an
//!   allow-list of the calls reading and normalizing need (read, write,
//!   memory, futexes, signals to itself, exit). Any other call (`openat`,
//!   `socket`, `connect`, `execve`, `ptrace`, `process_vm_readv`, `kill`
//!   ...) fails with `EPERM`: a parser bug taken over by a sender can
//!   neither read the state, the configuration (hash key, control token,
//!   Redis password) nor reach the network, and the worker was never
//!   given any of them (its environment is empty, its settings are the
//!   reading ones only, see [`crate::worker::wire::Hello`]).
//!
//! A worker that cannot install the filter still runs (a kernel without
//! seccomp), and says so: the daemon logs what its workers report at
//! start ([`Status`]).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::engine::ReadConfig;

/// What [`apply`] could take away, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The system call filter is installed.
    pub seccomp: Result<(), String>,
    /// Landlock's enforcement: `full`, `partial` (an older kernel: some
    /// rights could not be taken) or `none` (not enabled in this kernel).
    pub landlock: String,
    /// The address space limit, in bytes (`None`: not set).
    pub memory: Option<u64>,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.seccomp {
            Ok(()) => write!(f, "seccomp=on")?,
            Err(e) => write!(f, "seccomp=off ({e})")?,
        }
        write!(f, " landlock={}", self.landlock)?;
        match self.memory {
            Some(m) => write!(f, " memory_limit_mb={}", m >> 20),
            None => write!(f, " memory_limit_mb=none"),
        }
    }
}

/// CPU seconds a worker may use in its life.
const CPU_SECS: u64 = 300;

/// Address space a worker may use: room for the program and the parser's
/// work, plus 32 times the largest message it is given.
pub fn memory_limit(cfg: &ReadConfig) -> u64 {
    (1u64 << 30).saturating_add((cfg.scan.max_parse_bytes as u64).saturating_mul(32))
}

/// Sandboxes the calling process (its one thread): see the module
/// documentation. Call it once, after the settings are read and before
/// the first message.
pub fn apply(cfg: &ReadConfig) -> Status {
    let memory = limit_resources(cfg);
    let landlock = landlock();
    let seccomp = seccomp();
    Status {
        seccomp,
        landlock,
        memory,
    }
}

fn limit_resources(cfg: &ReadConfig) -> Option<u64> {
    use rlimit::Resource;
    let _ = Resource::CORE.set(0, 0);
    let _ = Resource::FSIZE.set(0, 0);
    // A worker that spins (or was left behind by a daemon killed with
    // SIGKILL) ends by itself; a worker is replaced long before it has
    // used that much on real mail (MAX_USES messages).
    let _ = Resource::CPU.set(CPU_SECS, CPU_SECS + 10);
    let want = memory_limit(cfg);
    let (_, hard) = Resource::AS.get().ok()?;
    let limit = want.min(hard);
    Resource::AS.set(limit, limit).ok().map(|()| limit)
}

fn landlock() -> String {
    use landlock::{Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetStatus, Scope, ABI};
    let abi = ABI::V6;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self());
    match status {
        Ok(s) => match s.ruleset {
            RulesetStatus::FullyEnforced => "full".into(),
            RulesetStatus::PartiallyEnforced => "partial".into(),
            _ => "none".into(),
        },
        Err(e) => format!("none ({e})"),
    }
}

/// The system calls a worker makes after it is sandboxed.
fn allowed() -> Vec<i64> {
    vec![
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_futex,
        libc::SYS_sched_yield,
        libc::SYS_getrandom,
        libc::SYS_clock_gettime,
        libc::SYS_gettid,
        libc::SYS_getpid,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigaction,
        libc::SYS_sigaltstack,
        libc::SYS_exit,
        libc::SYS_exit_group,
    ]
}

/// The filter: [`allowed`], and `tgkill` to this process only (an abort
/// raises SIGABRT at itself); anything else fails with `EPERM`.
fn filter() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        allowed().into_iter().map(|s| (s, Vec::new())).collect();
    let own = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        u64::from(std::process::id()),
    )
    .and_then(|c| SeccompRule::new(vec![c]))
    .map_err(|e| e.to_string())?;
    rules.insert(libc::SYS_tgkill, vec![own]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

fn seccomp() -> Result<(), String> {
    let prog = filter()?;
    seccompiler::apply_filter(&prog).map_err(|e| e.to_string())
}
