//! The command sandbox: what the operating system lets a command the runtime starts on the
//! model's behalf do, whatever the command line says.
//!
//! Permission patterns see only the text of a command; `python3 -c ...`, `find -delete` or
//! `xargs rm` do what they like once allowed. The sandbox confines the child process itself,
//! after `fork` and before `exec`, so the runtime is never confined:
//!
//! - **files** (Landlock, ABI 3 or later): reads everywhere the user could already read;
//!   writes only inside the workspace, the temp dirs and the configured `writable` paths
//!   (`workspace-write`), or nowhere (`read-only`); hard links and renames may not move a file
//!   into a place where it gains write access;
//! - **`.git`** inside the workspace stays read-only (a read-only bind mount in a private mount
//!   namespace, through a user namespace when the runtime is not root), unless `git_writable`;
//! - **network** (a seccomp filter): no socket other than a Unix socket, unless `network`.
//!
//! [`Sandbox::confine_std`] and [`Sandbox::confine_tokio`] confine any command (the `bash`
//! tool uses them; so can the spawner of local MCP servers). [`KernelSupport::probe`] says
//! what the kernel offers; where Landlock (or the ABI a mode needs) is missing,
//! [`Enforcement::BestEffort`] runs commands unconfined after one warning and
//! [`Enforcement::Required`] refuses to run them. On systems other than Linux there is no
//! sandbox: the probe answers "unsupported".

mod denial;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod unsupported;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use session_core::permission::wildcard_match;

pub use denial::denial_note;

use crate::error::ToolError;
use crate::shell::{Analysis, Step};

#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(not(target_os = "linux"))]
use unsupported as platform;

/// The Landlock ABI a confining mode needs: 3 (Linux 6.2), the first that also controls
/// `truncate`, so a command cannot empty a file it may not write.
pub const REQUIRED_LANDLOCK_ABI: u8 = 3;

/// The temp dirs commands may write under `workspace-write`, besides `TMPDIR`.
pub const SYSTEM_TEMP_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// What commands may do (config `sandbox.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No confinement.
    Off,
    /// Reads everywhere; no writes at all (but `/dev/null` and the like); no network.
    ReadOnly,
    /// Reads everywhere; writes in the workspace, the temp dirs and `writable`; no network.
    #[default]
    WorkspaceWrite,
}

impl SandboxMode {
    /// The config spelling: `off`, `read-only` or `workspace-write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
        }
    }

    /// The stricter of two modes.
    pub fn stricter(self, other: Self) -> Self {
        let rank = |mode: Self| match mode {
            Self::Off => 0,
            Self::WorkspaceWrite => 1,
            Self::ReadOnly => 2,
        };
        if rank(other) > rank(self) { other } else { self }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens where the kernel cannot confine (config `sandbox.enforcement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// Commands run unconfined, after one warning.
    #[default]
    BestEffort,
    /// Commands are refused.
    Required,
}

impl Enforcement {
    /// The config spelling: `best-effort` or `required`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BestEffort => "best-effort",
            Self::Required => "required",
        }
    }
}

/// The sandbox settings, as configured (config `sandbox`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    /// What commands may do.
    pub mode: SandboxMode,
    /// What happens where the kernel cannot confine.
    pub enforcement: Enforcement,
    /// True lets commands open network sockets.
    pub network: bool,
    /// Absolute paths writable besides the workspace and the temp dirs.
    pub writable: Vec<PathBuf>,
    /// Permission wildcards of commands that run outside the sandbox (`git push*`).
    pub exclude: Vec<String>,
    /// True leaves the workspace's `.git` writable.
    pub git_writable: bool,
}

/// What the kernel offers the sandbox; probed once, or injected by tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version, 0 when Landlock is missing or disabled.
    pub landlock_abi: u8,
    /// Whether seccomp filters can be installed (network confinement).
    pub seccomp: bool,
    /// How `.git` can be made read-only: a mount namespace, through a user namespace or not.
    pub namespaces: Namespaces,
}

/// Which namespaces the sandbox can enter to bind `.git` read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespaces {
    /// A plain mount namespace (the runtime has `CAP_SYS_ADMIN`, as root does).
    Mount,
    /// A user namespace, then a mount namespace (an unprivileged runtime).
    UserAndMount,
    /// Neither: `.git` stays as writable as the workspace.
    Unavailable,
}

impl KernelSupport {
    /// Asks the kernel (Landlock's ABI through the `landlock` crate, seccomp, and a throwaway
    /// child that tries the namespaces). Costs one short-lived process.
    pub fn probe() -> Self {
        platform::probe()
    }

    /// A kernel with nothing: how another operating system answers.
    pub fn unsupported() -> Self {
        Self { landlock_abi: 0, seccomp: false, namespaces: Namespaces::Unavailable }
    }

    /// Whether a confining mode can be enforced.
    pub fn can_confine(&self) -> bool {
        self.landlock_abi >= REQUIRED_LANDLOCK_ABI
    }
}

/// Where one command runs: what `workspace-write` lets it write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxTarget {
    /// The workspace root (writable under `workspace-write`).
    pub workspace: PathBuf,
    /// The command's `TMPDIR`, if it has one (writable besides [`SYSTEM_TEMP_DIRS`]).
    pub tmpdir: Option<PathBuf>,
}

/// What confining one command came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// The command runs confined.
    Confined(Confined),
    /// The command runs unconfined, for this reason (mode off, an excluded command, or a
    /// kernel without support under best effort).
    Unconfined(String),
}

/// How a confined command is confined, for the denial note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// The mode applied.
    pub mode: SandboxMode,
    /// The folders the command may write.
    pub writable: Vec<PathBuf>,
    /// Whether network sockets are allowed.
    pub network: bool,
    /// The read-only `.git` folder, if one was bound.
    pub git_read_only: Option<PathBuf>,
}

/// The sandbox of a runtime: settings plus what the kernel offers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    settings: Arc<SandboxSettings>,
    /// Probed on first use (or by [`Sandbox::probe_in_background`]), shared by the clones: the
    /// probe starts a process, which a command that never runs a shell should not wait for.
    support: Arc<OnceLock<KernelSupport>>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::off()
    }
}

impl Sandbox {
    /// A sandbox with `settings` on this kernel (probed when first needed).
    pub fn new(settings: SandboxSettings) -> Self {
        if settings.mode == SandboxMode::Off {
            return Self::with_support(settings, KernelSupport::unsupported());
        }
        Self { settings: Arc::new(settings), support: Arc::new(OnceLock::new()) }
    }

    /// A sandbox with `settings` on a kernel that offers `support` (tests inject it).
    pub fn with_support(settings: SandboxSettings, support: KernelSupport) -> Self {
        Self { settings: Arc::new(settings), support: Arc::new(OnceLock::from(support)) }
    }

    /// Probes the kernel on a thread of its own when that is still to do, so that start-up
    /// goes on meanwhile; the first use waits for it.
    pub fn probe_in_background(&self) {
        if self.support.get().is_some() {
            return;
        }
        let support = Arc::clone(&self.support);
        let spawned = std::thread::Builder::new().name("sandbox-probe".to_owned()).spawn(move || {
            support.get_or_init(KernelSupport::probe);
        });
        if let Err(error) = spawned {
            // The first use probes instead.
            tracing::debug!(%error, "the sandbox probe thread did not start");
        }
    }

    /// No sandbox: every command runs unconfined.
    pub fn off() -> Self {
        Self::with_support(
            SandboxSettings { mode: SandboxMode::Off, ..SandboxSettings::default() },
            KernelSupport::unsupported(),
        )
    }

    /// The settings.
    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// What the kernel offers (probed now when nothing probed it yet).
    pub fn support(&self) -> KernelSupport {
        *self.support.get_or_init(KernelSupport::probe)
    }

    /// This sandbox with at least `mode`'s strictness (the plan agent's commands run
    /// read-only). It never loosens the configured mode, and a sandbox the user turned off
    /// stays off.
    pub fn at_least(&self, mode: SandboxMode) -> Self {
        let stricter = self.settings.mode.stricter(mode);
        if self.settings.mode == SandboxMode::Off || stricter == self.settings.mode {
            return self.clone();
        }
        let mut settings = (*self.settings).clone();
        settings.mode = stricter;
        Self { settings: Arc::new(settings), support: Arc::clone(&self.support) }
    }

    /// The one warning to show at start when the configuration cannot be enforced as written,
    /// or `None` when it can.
    pub fn warning(&self) -> Option<String> {
        if self.settings.mode == SandboxMode::Off {
            return None;
        }
        if !self.support().can_confine() {
            let consequence = match self.settings.enforcement {
                Enforcement::BestEffort => "commands run unconfined (sandbox.enforcement \"best-effort\")",
                Enforcement::Required => "commands are refused (sandbox.enforcement \"required\")",
            };
            return Some(format!(
                "sandbox {}: {}; {consequence}",
                self.settings.mode,
                self.unsupported_reason()
            ));
        }
        if !self.settings.git_writable && self.support().namespaces == Namespaces::Unavailable {
            return Some(format!(
                "sandbox {}: no mount namespace is available (unprivileged user namespaces are off), so the \
                 workspace's .git stays writable to commands",
                self.settings.mode
            ));
        }
        None
    }

    fn unsupported_reason(&self) -> String {
        if !cfg!(target_os = "linux") {
            return "there is no sandbox on this operating system".to_owned();
        }
        match self.support().landlock_abi {
            0 => "the kernel has no Landlock (or it is disabled)".to_owned(),
            abi => format!(
                "the kernel's Landlock ABI is {abi}, the sandbox needs {REQUIRED_LANDLOCK_ABI} (Linux 6.2)"
            ),
        }
    }

    /// Whether every command of `analysis` matches a `sandbox.exclude` pattern, so the line
    /// runs outside the sandbox. A line that cannot be fully analysed never does.
    pub fn excludes(&self, analysis: &Analysis) -> bool {
        if self.settings.exclude.is_empty() || !analysis.unanalysable.is_empty() {
            return false;
        }
        let mut runs = analysis.steps.iter().filter_map(|step| match step {
            Step::Run(run) => Some(run),
            _ => None,
        });
        let matches =
            |pattern: String| self.settings.exclude.iter().any(|exclude| wildcard_match(&pattern, exclude));
        let mut any = false;
        let all = runs.all(|run| {
            any = true;
            run.known && matches(run.pattern())
        });
        any && all
    }

    /// What confining a command in `target` comes to, without touching a command: the
    /// refusal under `required` on a kernel without support, else the confinement.
    pub fn decide(&self, target: &SandboxTarget, excluded: bool) -> Result<Confinement, ToolError> {
        if self.settings.mode == SandboxMode::Off {
            return Ok(Confinement::Unconfined("sandbox is off".to_owned()));
        }
        if excluded {
            return Ok(Confinement::Unconfined("the command matches sandbox.exclude".to_owned()));
        }
        if !self.support().can_confine() {
            return match self.settings.enforcement {
                Enforcement::Required => Err(ToolError::Sandbox {
                    reason: format!(
                        "{}, and sandbox.enforcement is \"required\": the command was not run",
                        self.unsupported_reason()
                    ),
                }),
                Enforcement::BestEffort => Ok(Confinement::Unconfined(self.unsupported_reason())),
            };
        }
        let writable = match self.settings.mode {
            SandboxMode::WorkspaceWrite => {
                let mut paths = vec![target.workspace.clone()];
                paths.extend(SYSTEM_TEMP_DIRS.iter().map(PathBuf::from));
                paths.extend(target.tmpdir.iter().cloned());
                paths.extend(self.settings.writable.iter().cloned());
                let mut unique: Vec<PathBuf> = Vec::new();
                for path in paths.into_iter().filter(|path| path.is_absolute() && path.exists()) {
                    if !unique.contains(&path) {
                        unique.push(path);
                    }
                }
                unique
            }
            SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
        };
        let git = target.workspace.join(".git");
        let git_read_only = (self.settings.mode == SandboxMode::WorkspaceWrite
            && !self.settings.git_writable
            && self.support().namespaces != Namespaces::Unavailable
            && git.is_dir())
        .then_some(git);
        Ok(Confinement::Confined(Confined {
            mode: self.settings.mode,
            writable,
            network: self.settings.network,
            git_read_only,
        }))
    }

    /// Confines `command` as [`Sandbox::decide`] says: everything (the Landlock ruleset, the
    /// seccomp program, the paths) is prepared here, in the parent; the child only makes the
    /// restricting calls between `fork` and `exec`.
    pub fn confine_std(
        &self,
        command: &mut std::process::Command,
        target: &SandboxTarget,
        excluded: bool,
    ) -> Result<Confinement, ToolError> {
        let confinement = self.decide(target, excluded)?;
        // Whatever the mode: the runtime's `/proc` files stay closed even to a root command.
        platform::withhold_ptrace(command);
        if let Confinement::Confined(confined) = &confinement {
            platform::install(command, confined, self.support())?;
        }
        Ok(confinement)
    }

    /// [`Sandbox::confine_std`] for a tokio command.
    pub fn confine_tokio(
        &self,
        command: &mut tokio::process::Command,
        target: &SandboxTarget,
        excluded: bool,
    ) -> Result<Confinement, ToolError> {
        self.confine_std(command.as_std_mut(), target, excluded)
    }
}

/// Keeps the environment the calling process was started with (provider keys included) from
/// being read back through `/proc/<pid>/environ` or `/proc/<pid>/mem` by the commands it runs.
/// On Linux (nothing elsewhere):
///
/// - every variable is copied to the heap and the original block is zeroed, so `environ`
///   shows names with no values, to any reader, root included, whatever the kernel's ptrace
///   rules; the process and what it starts still see every variable;
/// - the process is made non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): its `/proc/<pid>` files
///   then belong to root and its memory opens only with `CAP_SYS_PTRACE`, which every command
///   the sandbox spawns loses (see [`Sandbox::confine_std`]).
///
/// Call it first thing in `main`, before any thread starts: it fails, changing nothing, when
/// the process already has a second thread. Side effects: no core dumps; a debugger of the
/// same user cannot attach (`gdb -p`, `strace -p` need root or `CAP_SYS_PTRACE`); `ps e` and
/// `/proc/<pid>/environ` show the process's variables without values.
pub fn guard_runtime_process() -> std::io::Result<()> {
    platform::move_environment_off_the_block()?;
    platform::make_undumpable()
}

/// The `TMPDIR` of an environment about to be given to a command.
pub fn tmpdir_of<'a, K, V>(env: impl IntoIterator<Item = &'a (K, V)>) -> Option<PathBuf>
where
    K: AsRef<std::ffi::OsStr> + 'a,
    V: AsRef<std::ffi::OsStr> + 'a,
{
    env.into_iter()
        .find(|(key, _)| key.as_ref() == "TMPDIR")
        .map(|(_, value)| Path::new(value.as_ref()).to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyse;

    fn sandbox(exclude: &[&str]) -> Sandbox {
        Sandbox::with_support(
            SandboxSettings {
                exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
                ..Default::default()
            },
            KernelSupport { landlock_abi: 6, seccomp: true, namespaces: Namespaces::Mount },
        )
    }

    #[test]
    fn a_line_is_excluded_only_when_every_command_matches() {
        let sandbox = sandbox(&["git push*"]);
        assert!(sandbox.excludes(&analyse("git push origin main")));
        assert!(!sandbox.excludes(&analyse("git push && rm -rf /")));
        assert!(!sandbox.excludes(&analyse("git status")));
        assert!(!sandbox.excludes(&analyse("$CMD push")));
        assert!(!Sandbox::default().excludes(&analyse("git push")));
    }

    #[test]
    fn stricter_modes_win_and_never_loosen() {
        assert_eq!(SandboxMode::Off.stricter(SandboxMode::ReadOnly), SandboxMode::ReadOnly);
        assert_eq!(SandboxMode::ReadOnly.stricter(SandboxMode::WorkspaceWrite), SandboxMode::ReadOnly);
        let sandbox = sandbox(&[]).at_least(SandboxMode::ReadOnly);
        assert_eq!(sandbox.settings().mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn required_without_support_refuses_and_best_effort_warns() {
        let target = SandboxTarget { workspace: PathBuf::from("/"), tmpdir: None };
        let old = KernelSupport { landlock_abi: 2, seccomp: true, namespaces: Namespaces::Mount };
        let required = Sandbox::with_support(
            SandboxSettings { enforcement: Enforcement::Required, ..Default::default() },
            old,
        );
        let error = required.decide(&target, false).unwrap_err().to_string();
        assert!(error.contains("Landlock ABI is 2"), "{error}");
        let best = Sandbox::with_support(SandboxSettings::default(), old);
        assert!(matches!(best.decide(&target, false), Ok(Confinement::Unconfined(_))));
        assert!(best.warning().is_some_and(|w| w.contains("unconfined")));
    }
}
