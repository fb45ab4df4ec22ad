//! The command sandbox with real commands through the bash tool: writes outside the workspace
//! (shell, python3, find -delete, a symlink, a hard link), `.git/hooks`, TCP and UDP to
//! loopback listeners, all refused under `workspace-write` with a note naming the denial; the
//! same allowed under `off`; `read-only`; `required` on a kernel without support (injected).
//!
//! The workspace and the "outside" folder live under the target dir, not in `/tmp`, which the
//! sandbox leaves writable.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use session_core::{MessageId, SessionId, permission::Action, permission::Rule};
use session_tools::sandbox::Namespaces;
use session_tools::{
    CallScope, Enforcement, KernelSupport, PermissionEngine, ProgressSink, Sandbox, SandboxMode,
    SandboxSettings, ToolError, ToolExecutor, ToolInvocation, ToolSuccess, Workspace, builtin_registry,
};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use super::support::ScriptedAsker;

struct Rig {
    _dirs: (TempDir, TempDir),
    root: PathBuf,
    outside: PathBuf,
    executor: ToolExecutor,
}

fn settings(mode: SandboxMode) -> SandboxSettings {
    SandboxSettings { mode, ..SandboxSettings::default() }
}

fn kernel() -> KernelSupport {
    let support = KernelSupport::probe();
    assert!(
        support.can_confine(),
        "these tests need Landlock ABI 3 or later (Linux 6.2, Landlock enabled); the kernel offers {support:?}"
    );
    support
}

fn make(settings: SandboxSettings, support: KernelSupport) -> Rig {
    make_with(|executor, support| executor.with_sandbox(Sandbox::with_support(settings, support)), support)
}

fn make_with(
    configure: impl FnOnce(ToolExecutor, KernelSupport) -> ToolExecutor,
    support: KernelSupport,
) -> Rig {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    let workspace = tempfile::tempdir_in(base).unwrap();
    let outside = tempfile::tempdir_in(base).unwrap();
    let root = std::fs::canonicalize(workspace.path()).unwrap();
    let outside_path = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    let engine = Arc::new(PermissionEngine::new(ScriptedAsker::rejecting()));
    let executor = ToolExecutor::new(builtin_registry().unwrap(), Workspace::new(&root).unwrap(), engine);
    Rig { _dirs: (workspace, outside), root, outside: outside_path, executor: configure(executor, support) }
}

impl Rig {
    async fn bash_as(&self, agent: &str, command: &str) -> Result<ToolSuccess, ToolError> {
        let scope = CallScope {
            session_id: SessionId::new_unchecked("ses_sandbox"),
            message_id: MessageId::new_unchecked("msg_sandbox"),
            agent: agent.into(),
            ruleset: Arc::new(vec![Rule::new("*", "*", Action::Allow)]),
            abort: CancellationToken::new(),
        };
        let input = json!({"command": command, "description": "Sandbox test"});
        let serde_json::Value::Object(input) = input else { unreachable!() };
        let call = ToolInvocation { call_id: "call_sandbox".into(), tool: "bash".into(), input };
        self.executor.run(&call, &scope, CancellationToken::new(), ProgressSink::none()).await
    }

    async fn bash(&self, command: &str) -> String {
        self.bash_as("build", command).await.unwrap().output
    }

    fn out(&self, name: &str) -> PathBuf {
        self.outside.join(name)
    }
}

fn require_python() {
    let found = Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success());
    assert!(found, "python3 is needed by the sandbox tests: install it (apt-get install python3)");
}

/// Each attempt to write outside, with the path the note must name.
fn outside_writes(b: &Rig) -> Vec<(String, PathBuf)> {
    std::fs::write(b.out("victim"), "keep").unwrap();
    std::fs::create_dir_all(b.out("tree/sub")).unwrap();
    std::fs::write(b.out("tree/sub/file"), "keep").unwrap();
    std::fs::write(b.out("linked"), "keep").unwrap();
    let o = |name: &str| b.out(name).display().to_string();
    vec![
        (format!("echo pwned > {}", o("shell")), b.out("shell")),
        (format!("python3 -c \"open('{}', 'w').write('pwned')\"", o("python")), b.out("python")),
        (format!("find {} -delete", o("tree")), b.out("tree/sub/file")),
        (
            format!("ln -s {} link && echo pwned > link/through-symlink", b.outside.display()),
            b.out("through-symlink"),
        ),
        (format!("ln {} hard; echo pwned >> hard", o("linked")), b.out("linked")),
    ]
}

#[tokio::test]
async fn workspace_write_refuses_writes_outside_and_names_them() {
    require_python();
    let b = make(settings(SandboxMode::WorkspaceWrite), kernel());
    for (command, path) in outside_writes(&b) {
        let output = b.bash(&command).await;
        assert!(
            output.contains("(Sandbox: this command ran in the workspace-write sandbox"),
            "{command}: {output}"
        );
        assert!(output.contains("Refused: write to "), "{command}: {output}");
        match std::fs::read_to_string(&path) {
            Ok(text) => assert_eq!(text, "keep", "{command} changed {}", path.display()),
            Err(error) => assert_eq!(error.kind(), ErrorKind::NotFound, "{command}: {error}"),
        }
    }
    // The note names the paths the messages name.
    let output = b.bash(&format!("echo pwned > {}", b.out("named").display())).await;
    assert!(output.contains(&format!("Refused: write to {}.", b.out("named").display())), "{output}");
}

/// The probe tries the mount namespace without touching the caller's: as root it enters one
/// in a throwaway thread, which must leave this thread's (and the process's) namespace as it
/// was, and must agree with what a real child finds.
#[test]
fn the_namespace_probe_leaves_the_callers_mount_namespace_alone() {
    let namespace = |path: &str| std::fs::read_link(path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let (thread_before, process_before) =
        (namespace("/proc/thread-self/ns/mnt"), namespace("/proc/self/ns/mnt"));
    let support = KernelSupport::probe();
    assert_eq!(namespace("/proc/thread-self/ns/mnt"), thread_before);
    assert_eq!(namespace("/proc/self/ns/mnt"), process_before);
    if nix::unistd::geteuid().is_root() {
        // A child that unshares its mount namespace as the sandbox does.
        let child = Command::new("unshare").args(["--mount", "--propagation", "private", "true"]).status();
        if child.is_ok_and(|status| status.success()) {
            assert_eq!(support.namespaces, Namespaces::Mount, "{support:?}");
        } else {
            assert_eq!(support.namespaces, Namespaces::Unavailable, "{support:?}");
        }
    }
}

#[tokio::test]
async fn workspace_write_keeps_git_read_only_through_both_namespace_kinds() {
    let real = kernel();
    for namespaces in [Namespaces::Mount, Namespaces::UserAndMount] {
        let b = make(settings(SandboxMode::WorkspaceWrite), KernelSupport { namespaces, ..real });
        let output = b.bash("echo evil > .git/hooks/pre-commit").await;
        assert!(output.contains("Read-only file system"), "{namespaces:?}: {output}");
        assert!(output.contains(".git/hooks/pre-commit"), "{namespaces:?}: {output}");
        assert!(!b.root.join(".git/hooks/pre-commit").exists(), "{namespaces:?}");
        // The rest of the workspace stays writable, and the bind did not leak out.
        let output = b.bash("echo ok > inside && cat inside").await;
        assert_eq!(output.trim(), "ok", "{namespaces:?}");
        std::fs::write(b.root.join(".git/hooks/from-runtime"), "runtime").unwrap();
    }
}

#[tokio::test]
async fn git_writable_lets_commands_write_git() {
    let settings = SandboxSettings { git_writable: true, ..settings(SandboxMode::WorkspaceWrite) };
    let b = make(settings, kernel());
    b.bash("echo hook > .git/hooks/pre-commit").await;
    assert_eq!(std::fs::read_to_string(b.root.join(".git/hooks/pre-commit")).unwrap(), "hook\n");
}

fn listeners() -> (TcpListener, UdpSocket) {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    (tcp, udp)
}

fn network_commands(tcp: &TcpListener, udp: &UdpSocket) -> [String; 3] {
    let tcp_port = tcp.local_addr().unwrap().port();
    let udp_port = udp.local_addr().unwrap().port();
    [
        format!("echo hi > /dev/tcp/127.0.0.1/{tcp_port}"),
        format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {tcp_port}))\""),
        format!("echo hi > /dev/udp/127.0.0.1/{udp_port}"),
    ]
}

#[tokio::test]
async fn workspace_write_refuses_tcp_and_udp_and_says_so() {
    require_python();
    let b = make(settings(SandboxMode::WorkspaceWrite), kernel());
    let (tcp, udp) = listeners();
    for command in network_commands(&tcp, &udp) {
        let output = b.bash(&command).await;
        assert!(output.contains("Refused: a network socket."), "{command}: {output}");
        assert!(output.contains("network sockets are off"), "{command}: {output}");
    }
    assert_eq!(tcp.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock);
    let mut buffer = [0u8; 16];
    assert_eq!(udp.recv(&mut buffer).unwrap_err().kind(), ErrorKind::WouldBlock);
    // Unix sockets stay allowed.
    let output =
        b.bash("python3 -c \"import socket; socket.socketpair(socket.AF_UNIX); print('unix ok')\"").await;
    assert_eq!(output.trim(), "unix ok");
}

#[tokio::test]
async fn network_true_allows_loopback_connections() {
    require_python();
    let settings = SandboxSettings { network: true, ..settings(SandboxMode::WorkspaceWrite) };
    let b = make(settings, kernel());
    let (tcp, udp) = listeners();
    let [shell_tcp, _, shell_udp] = network_commands(&tcp, &udp);
    b.bash(&shell_tcp).await;
    b.bash(&shell_udp).await;
    assert!(tcp.accept().is_ok());
    let mut buffer = [0u8; 16];
    assert_eq!(udp.recv(&mut buffer).unwrap(), 3);
}

#[tokio::test]
async fn off_allows_the_same_commands() {
    require_python();
    let b = make(settings(SandboxMode::Off), kernel());
    for (command, path) in outside_writes(&b) {
        let output = b.bash(&command).await;
        assert!(!output.contains("Sandbox:"), "{command}: {output}");
        match std::fs::read_to_string(&path) {
            Ok(text) => assert!(text.contains("pwned"), "{command}: {text}"),
            // find -delete removed it.
            Err(error) => assert_eq!(error.kind(), ErrorKind::NotFound, "{command}"),
        }
    }
    assert!(!b.out("tree").exists());
    b.bash("echo evil > .git/hooks/pre-commit").await;
    assert!(b.root.join(".git/hooks/pre-commit").exists());
    let (tcp, udp) = listeners();
    let [shell_tcp, _, shell_udp] = network_commands(&tcp, &udp);
    b.bash(&shell_tcp).await;
    b.bash(&shell_udp).await;
    assert!(tcp.accept().is_ok());
    let mut buffer = [0u8; 16];
    assert_eq!(udp.recv(&mut buffer).unwrap(), 3);
}

#[tokio::test]
async fn workspace_and_temp_dirs_stay_writable() {
    let b = make(settings(SandboxMode::WorkspaceWrite), kernel());
    let temp = tempfile::tempdir_in("/tmp").unwrap();
    let output = b
        .bash(&format!(
            "mkdir -p sub && echo in > sub/file && mv sub/file moved && echo tmp > {0}/file && cat moved {0}/file \
             && echo quiet > /dev/null",
            temp.path().display()
        ))
        .await;
    assert_eq!(output, "in\ntmp\n");
}

#[tokio::test]
async fn read_only_refuses_a_workspace_write() {
    let b = make(settings(SandboxMode::ReadOnly), kernel());
    std::fs::write(b.root.join("readme"), "text").unwrap();
    let output = b.bash("cat readme; echo x > new-file").await;
    assert!(output.starts_with("text"), "{output}");
    assert!(output.contains("ran in the read-only sandbox; it may not write any file"), "{output}");
    assert!(!b.root.join("new-file").exists());
}

#[tokio::test]
async fn the_plan_agent_runs_read_only() {
    let b = make_with(
        |executor, support| {
            executor
                .with_agent_sandbox("plan", SandboxMode::ReadOnly)
                .with_sandbox(Sandbox::with_support(settings(SandboxMode::WorkspaceWrite), support))
        },
        kernel(),
    );
    let output = b.bash_as("plan", "echo x > planned").await.unwrap().output;
    assert!(output.contains("read-only sandbox"), "{output}");
    assert!(!b.root.join("planned").exists());
    b.bash_as("build", "echo x > built").await.unwrap();
    assert!(b.root.join("built").exists());
}

#[tokio::test]
async fn required_on_a_kernel_without_landlock_refuses_to_run() {
    let unsupported = KernelSupport { landlock_abi: 0, seccomp: true, namespaces: Namespaces::Unavailable };
    let required =
        SandboxSettings { enforcement: Enforcement::Required, ..settings(SandboxMode::WorkspaceWrite) };
    let b = make(required, unsupported);
    let error = b.bash_as("build", "touch ran").await.unwrap_err().to_string();
    assert!(error.contains("no Landlock") && error.contains("\"required\""), "{error}");
    assert!(!b.root.join("ran").exists());
    // Best effort runs it unconfined.
    let b = make(settings(SandboxMode::WorkspaceWrite), unsupported);
    b.bash(&format!("touch {}", b.out("ran").display())).await;
    assert!(b.out("ran").exists());
}

#[tokio::test]
async fn excluded_commands_run_outside_the_sandbox_only_alone() {
    let settings =
        SandboxSettings { exclude: vec!["touch *".into()], ..settings(SandboxMode::WorkspaceWrite) };
    let b = make(settings, kernel());
    b.bash(&format!("touch {}", b.out("excluded").display())).await;
    assert!(b.out("excluded").exists());
    let output = b.bash(&format!("touch {} && echo done", b.out("mixed").display())).await;
    assert!(output.contains("Refused: write to"), "{output}");
    assert!(!b.out("mixed").exists());
}

#[tokio::test]
async fn the_probe_sees_this_kernel_and_the_metadata_names_the_mode() {
    let support = kernel();
    assert!(support.seccomp);
    let b = make(settings(SandboxMode::WorkspaceWrite), support);
    let result = b.bash_as("build", "true").await.unwrap();
    assert_eq!(result.metadata["sandbox"], json!("workspace-write"));
    let b = make(settings(SandboxMode::Off), support);
    let result = b.bash_as("build", "true").await.unwrap();
    assert_eq!(result.metadata["sandbox"], json!("off"));
}

/// The capability sets a `/proc/<pid>/status` text names, as numbers.
fn capability_sets(status: &str) -> Vec<(String, u64)> {
    status
        .lines()
        .filter_map(|line| line.strip_prefix("Cap"))
        .filter_map(|rest| rest.split_once(":\t"))
        .map(|(set, hex)| (set.to_owned(), u64::from_str_radix(hex.trim(), 16).unwrap()))
        .collect()
}

/// `CAP_SYS_PTRACE`: what opens a non-dumpable runtime's `/proc/<pid>/environ`.
const PTRACE_BIT: u64 = 1 << 19;

#[tokio::test]
async fn commands_lose_cap_sys_ptrace_in_every_mode() {
    // Control: this test process (root in CI) holds the capability; its commands must not.
    let own = capability_sets(&std::fs::read_to_string("/proc/self/status").unwrap());
    let root = nix::unistd::geteuid().is_root();
    if root {
        let bounded = own.iter().any(|(set, bits)| set == "Bnd" && bits & PTRACE_BIT != 0);
        assert!(bounded, "root without CAP_SYS_PTRACE in its bounding set: {own:?}");
    }
    let excluded = SandboxSettings { exclude: vec!["cat *".into()], ..settings(SandboxMode::WorkspaceWrite) };
    for settings in [settings(SandboxMode::Off), settings(SandboxMode::WorkspaceWrite), excluded] {
        let b = make(settings.clone(), kernel());
        let output = b.bash("cat /proc/self/status").await;
        let sets = capability_sets(&output);
        assert_eq!(sets.len(), 5, "{output}");
        for (set, bits) in sets {
            // A non-root runtime cannot change its bounding set; it has nothing to drop there
            // (and no_new_privs or a password stands before a set-user-ID program).
            if set == "Bnd" && !root {
                continue;
            }
            assert_eq!(bits & PTRACE_BIT, 0, "{:?}: Cap{set} still holds CAP_SYS_PTRACE", settings.mode);
        }
    }
}

#[test]
fn the_runtime_guard_refuses_once_threads_run_and_changes_nothing() {
    // The test harness runs this on a thread of its own: `setenv` could race a reader, so the
    // guard refuses and the environment block stays as it was.
    let before = std::fs::read("/proc/self/environ").unwrap();
    assert!(!before.is_empty(), "the test process has an environment");
    let error = session_tools::sandbox::guard_runtime_process().unwrap_err();
    assert!(error.to_string().contains("threads"), "{error}");
    assert_eq!(std::fs::read("/proc/self/environ").unwrap(), before);
}
