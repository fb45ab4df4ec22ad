//! The Linux sandbox: Landlock (the `landlock` crate) for files, a seccomp filter
//! (`seccompiler`) for sockets, and a private mount namespace (`nix`) for a read-only `.git`.
//!
//! Soundness of the `pre_exec` hook: between `fork` and `exec` only async-signal-safe work is
//! allowed (another thread of the runtime may have held the allocator's lock at the fork).
//! Everything that allocates or opens paths — the Landlock ruleset and its rules, the path
//! fds, the BPF program, the C strings of the mount targets and id maps, the mount flags — is
//! built in the parent by [`install`]. The hook ([`ChildSetup::apply`]) only makes system
//! calls on that prepared data: `unshare`, `open`/`write`/`close` of `/proc/self/*_map`,
//! `mount`, `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` and `seccomp`. It runs in the
//! child's copy of memory, so taking the ruleset there leaves the parent's copy intact for the
//! next spawn of the same command.
//!
//! Every command, confined or not, also loses `CAP_SYS_PTRACE` before `exec`
//! ([`withhold_ptrace`]): the runtime is non-dumpable ([`make_undumpable`]), so its
//! `/proc/<pid>/environ` (the environment it was started with, keys included) and `mem` open
//! only to a process holding that capability, which a command run as root would otherwise have.

// `pre_exec` is unsafe; this module is the workspace's one exception to `unsafe_code`.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;
use nix::sys::statvfs::FsFlags;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::{Confined, KernelSupport, Namespaces, REQUIRED_LANDLOCK_ABI};
use crate::error::ToolError;

/// The ABI whose file access rights the sandbox handles.
const ABI_USED: ABI = ABI::V3;

/// Device files every command may read and write whatever the mode (output sinks and the
/// sources shells use).
const DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// x32 system calls on x86_64 carry this bit; they pass the x86_64 architecture check, so
/// the network calls are also refused under their x32 numbers.
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// `CAP_SYS_PTRACE` (`linux/capability.h`): what opens a non-dumpable process's `/proc` files.
const CAP_SYS_PTRACE: u32 = 19;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets, two words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`: one 32-bit word of each set.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

pub(super) fn make_undumpable() -> io::Result<()> {
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)
}

/// Where the environment block the process was started with lies (`/proc/<pid>/environ`
/// reads exactly these bytes), and how many threads the process has: fields 50, 51 and 20 of
/// `/proc/self/stat`, counted after the parenthesised command name, which may hold spaces.
fn environ_block_and_threads() -> io::Result<(usize, usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let malformed = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/self/stat");
    let (_, after_name) = stat.rsplit_once(')').ok_or_else(malformed)?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Field n (1-based) is at index n - 3 once the pid and the name are cut off.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<usize>().ok()).ok_or_else(malformed);
    Ok((field(50)?, field(51)?, field(20)?))
}

/// Copies every variable of the process environment to the heap (`setenv`) and zeroes the
/// block the process was started with, so `/proc/<pid>/environ` shows no value while the
/// process, and what it starts, still sees every one. Refused once a second thread exists:
/// `setenv` must not race a reader of the environment.
pub(super) fn move_environment_off_the_block() -> io::Result<()> {
    let (start, end, threads) = environ_block_and_threads()?;
    if threads != 1 {
        return Err(io::Error::other(format!(
            "the process already runs {threads} threads; the environment can only be moved before the first starts"
        )));
    }
    if end <= start {
        return Ok(());
    }
    let variables: Vec<(CString, CString)> = std::env::vars_os()
        .filter_map(|(name, value)| {
            Some((CString::new(name.into_vec()).ok()?, CString::new(value.into_vec()).ok()?))
        })
        .collect();
    for (name, value) in &variables {
        // SAFETY: the process has one thread (checked above), so nothing reads the environment
        // while it changes; both strings are NUL-terminated and outlive the call, which copies
        // them.
        if unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: [start, end) is the process's own environment block, on its stack and writable;
    // after the copies above no environment entry the process uses points into it (a second
    // entry of a duplicated name, which `getenv` never returns, becomes an empty string).
    unsafe {
        std::ptr::write_bytes(start as *mut u8, 0, end - start);
    }
    Ok(())
}

pub(super) fn withhold_ptrace(command: &mut std::process::Command) {
    // SAFETY: `drop_ptrace_capability` only makes system calls on stack data (see the module docs).
    unsafe {
        command.pre_exec(drop_ptrace_capability);
    }
}

/// Takes `CAP_SYS_PTRACE` out of the bounding set (`exec` rebuilds a root process's permitted
/// set from it, and a set-user-ID program's) and out of the effective, permitted and
/// inheritable sets (which also clears it from the ambient set). Async-signal-safe: system
/// calls on stack data only. A root process that cannot change its bounding set (no
/// `CAP_SETPCAP`) while the capability is in it fails the spawn: the command would get the
/// capability back at `exec`.
fn drop_ptrace_capability() -> io::Result<()> {
    let capability = libc::c_ulong::from(CAP_SYS_PTRACE);
    // SAFETY: prctl with integer arguments only.
    let dropped = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) } == 0;
    if !dropped {
        // SAFETY: as above.
        let still_bounded = unsafe { libc::prctl(libc::PR_CAPBSET_READ, capability, 0, 0, 0) } == 1;
        if still_bounded && nix::unistd::geteuid().is_root() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
    }
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two `CapData` words for a version-3 header; both live on this stack.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let bit = 1u32 << CAP_SYS_PTRACE;
    let held = &mut data[0];
    if (held.effective | held.permitted | held.inheritable) & bit == 0 {
        return Ok(());
    }
    held.effective &= !bit;
    held.permitted &= !bit;
    held.inheritable &= !bit;
    // SAFETY: capset reads the header and the two words prepared above; lowering sets is
    // always allowed.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn probe() -> KernelSupport {
    KernelSupport { landlock_abi: landlock_abi(), seccomp: seccomp_available(), namespaces: namespaces() }
}

/// The highest Landlock ABI whose rights this kernel handles, asked through the crate: a
/// ruleset that requires the ABI's rights (hard requirement) can be created or not.
fn landlock_abi() -> u8 {
    let candidates = [(6, ABI::V6), (5, ABI::V5), (4, ABI::V4), (3, ABI::V3), (2, ABI::V2), (1, ABI::V1)];
    for (number, abi) in candidates {
        if requirable(abi).is_ok() {
            return number;
        }
    }
    0
}

fn requirable(abi: ABI) -> Result<RulesetCreated, landlock::RulesetError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if !AccessNet::from_all(abi).is_empty() {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if !Scope::from_all(abi).is_empty() {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    ruleset.create()
}

fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|l| l.starts_with("Seccomp:")))
}

/// Which namespaces a child can enter, tried for real. As root, in a throwaway thread: a
/// mount namespace of its own takes only the calling thread's filesystem context (`unshare`
/// of `CLONE_NEWNS` implies `CLONE_FS`, not `CLONE_VM`), and goes when the thread ends, so
/// the runtime's namespace is untouched and no process is started (a fork of the runtime cost
/// about 1.7 ms of a fresh run's first request). Otherwise in a throwaway
/// `/bin/sh -c 'exit 0'`: a user namespace needs a process with one thread.
fn namespaces() -> Namespaces {
    let kind = if nix::unistd::geteuid().is_root() { Namespaces::Mount } else { Namespaces::UserAndMount };
    let Ok(setup) = NamespaceSetup::new(kind, Vec::new()) else { return Namespaces::Unavailable };
    if kind == Namespaces::Mount {
        let entered = std::thread::Builder::new()
            .name("sandbox-ns-probe".to_owned())
            .spawn(move || setup.enter().is_ok())
            .ok()
            .and_then(|probe| probe.join().ok());
        return if entered == Some(true) { kind } else { Namespaces::Unavailable };
    }
    let mut command = std::process::Command::new("/bin/sh");
    command.args(["-c", "exit 0"]).stdin(std::process::Stdio::null());
    // SAFETY: `enter` makes only system calls on data prepared above (see the module docs).
    unsafe {
        command.pre_exec(move || setup.enter().map_err(io::Error::from));
    }
    match command.status() {
        Ok(status) if status.success() => kind,
        _ => Namespaces::Unavailable,
    }
}

pub(super) fn install(
    command: &mut std::process::Command,
    confined: &Confined,
    support: KernelSupport,
) -> Result<(), ToolError> {
    if support.landlock_abi < REQUIRED_LANDLOCK_ABI {
        return Err(ToolError::Sandbox { reason: "the kernel cannot enforce the sandbox".to_owned() });
    }
    let ruleset = ruleset(confined)?;
    let filter = match confined.network {
        true => None,
        false => Some(network_filter().map_err(|e| prepare_error("the network filter", e))?),
    };
    let namespace = match &confined.git_read_only {
        Some(git) => Some(NamespaceSetup::new(support.namespaces, vec![git.as_path()])?),
        None => None,
    };
    let mut setup = ChildSetup { namespace, ruleset: Some(ruleset), filter };
    // SAFETY: `apply` is async-signal-safe: it only makes system calls on data prepared
    // above, in the parent (see the module docs).
    unsafe {
        command.pre_exec(move || setup.apply());
    }
    Ok(())
}

fn prepare_error(what: &str, error: impl std::fmt::Display) -> ToolError {
    ToolError::Sandbox { reason: format!("cannot prepare {what}: {error}") }
}

/// Reads everywhere; all rights under the writable folders; the device files.
fn ruleset(confined: &Confined) -> Result<RulesetCreated, ToolError> {
    let fail = |e: landlock::RulesetError| prepare_error("the Landlock ruleset", e);
    let all = AccessFs::from_all(ABI_USED);
    let file_rights = AccessFs::from_file(ABI_USED);
    let root = PathFd::new("/").map_err(|e| prepare_error("the Landlock ruleset", e))?;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rule(PathBeneath::new(root, AccessFs::from_read(ABI_USED)))
        .map_err(fail)?;
    for path in &confined.writable {
        let rights = if path.is_dir() { all } else { file_rights };
        match PathFd::new(path) {
            Ok(fd) => ruleset = ruleset.add_rule(PathBeneath::new(fd, rights)).map_err(fail)?,
            // A folder removed since the decision is simply not writable.
            Err(error) => tracing::debug!(%error, path = %path.display(), "writable path skipped"),
        }
    }
    let device_rights: BitFlags<AccessFs> = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    for device in DEVICES {
        if let Ok(fd) = PathFd::new(device) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, device_rights)).map_err(fail)?;
        }
    }
    Ok(ruleset)
}

/// Refuses `socket`/`socketpair` of any family but `AF_UNIX`, and `io_uring_setup` (its
/// socket operations would pass beside the filter), with `EPERM`.
fn network_filter() -> Result<BpfProgram, Box<dyn std::error::Error>> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let not_unix = || -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let family =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        Ok(vec![SeccompRule::new(vec![family])?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, not_unix()?);
    rules.insert(libc::SYS_socketpair, not_unix()?);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if matches!(arch, TargetArch::x86_64) {
        for number in [libc::SYS_socket, libc::SYS_socketpair, libc::SYS_io_uring_setup] {
            rules.insert(X32_SYSCALL_BIT | number, Vec::new());
        }
    }
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    Ok(filter.try_into()?)
}

/// What the child does before `exec`, prepared in the parent.
struct ChildSetup {
    namespace: Option<NamespaceSetup>,
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
}

impl ChildSetup {
    /// Namespaces first (mounting is refused once Landlock applies), then Landlock (which sets
    /// `no_new_privs`), then the seccomp filter. Any failure fails the spawn: a command never
    /// runs less confined than decided.
    fn apply(&mut self) -> io::Result<()> {
        if let Some(namespace) = &self.namespace {
            namespace.enter()?;
        }
        let ruleset = self.ruleset.take().ok_or_else(|| io::Error::from_raw_os_error(libc::EPERM))?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == RulesetStatus::FullyEnforced => {}
            _ => return Err(io::Error::from_raw_os_error(libc::EPERM)),
        }
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter).map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

/// A private mount namespace with read-only bind mounts, prepared in the parent.
struct NamespaceSetup {
    user: bool,
    uid_map: CString,
    gid_map: CString,
    binds: Vec<(CString, MsFlags)>,
}

impl NamespaceSetup {
    fn new(kind: Namespaces, read_only: Vec<&Path>) -> Result<Self, ToolError> {
        let user = match kind {
            Namespaces::Mount => false,
            Namespaces::UserAndMount => true,
            Namespaces::Unavailable => {
                return Err(ToolError::Sandbox { reason: "no mount namespace is available".to_owned() });
            }
        };
        // The command keeps its own ids inside the user namespace.
        let map = |id: u32| CString::new(format!("{id} {id} 1\n")).map_err(|e| prepare_error("an id map", e));
        let uid_map = map(nix::unistd::geteuid().as_raw())?;
        let gid_map = map(nix::unistd::getegid().as_raw())?;
        let mut binds = Vec::new();
        for path in read_only {
            let target =
                CString::new(path.as_os_str().as_bytes()).map_err(|e| prepare_error("a mount target", e))?;
            // A remount inside a user namespace must keep the flags the mount is locked with.
            let kept =
                nix::sys::statvfs::statvfs(path).map_err(|e| prepare_error("a mount target", e))?.flags();
            let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
            for (statvfs, mount) in [
                (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
                (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
                (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
                (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
                (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
                (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
            ] {
                if kept.contains(statvfs) {
                    flags |= mount;
                }
            }
            binds.push((target, flags));
        }
        Ok(Self { user, uid_map, gid_map, binds })
    }

    /// Enters the namespaces and binds each target read-only over itself.
    fn enter(&self) -> Result<(), Errno> {
        if self.user {
            nix::sched::unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)?;
            // The child inherits the runtime's non-dumpable flag, which makes its own
            // `/proc/self` files root's: it could not write its id maps. Dumpable for the three
            // writes only (the child still holds a copy of the runtime's memory until `exec`).
            nix::sys::prctl::set_dumpable(true)?;
            let mapped = write_proc(c"/proc/self/setgroups", b"deny")
                .and_then(|()| write_proc(c"/proc/self/uid_map", self.uid_map.as_bytes()))
                .and_then(|()| write_proc(c"/proc/self/gid_map", self.gid_map.as_bytes()));
            nix::sys::prctl::set_dumpable(false)?;
            mapped?;
        } else {
            nix::sched::unshare(CloneFlags::CLONE_NEWNS)?;
        }
        // Private first: the binds must not propagate back to the runtime's namespace.
        nix::mount::mount(
            None::<&CStr>,
            c"/",
            None::<&CStr>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&CStr>,
        )?;
        for (target, flags) in &self.binds {
            let target = target.as_c_str();
            nix::mount::mount(
                Some(target),
                target,
                None::<&CStr>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&CStr>,
            )?;
            nix::mount::mount(None::<&CStr>, target, None::<&CStr>, *flags, None::<&CStr>)?;
        }
        Ok(())
    }
}

fn write_proc(path: &CStr, bytes: &[u8]) -> Result<(), Errno> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let written = nix::unistd::write(&fd, bytes)?;
    if written == bytes.len() { Ok(()) } else { Err(Errno::EIO) }
}
