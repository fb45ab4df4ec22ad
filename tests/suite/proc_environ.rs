//! The runtime's own environment through `/proc`: a model's command reads
//! `/proc/$PPID/environ` (the runtime, started with a provider key) and walks every
//! `/proc/<pid>/environ` it can open, under `workspace-write`, `sandbox: off` and for a command
//! `sandbox.exclude` lets out; the key reaches neither the model, nor the store, nor an export.
//! The control: a same-user process the test starts itself, without the runtime's guard, is
//! read by the same walk (and by the test).
//!
//! Run as root (CI), the walk also runs as `nobody` (through `setpriv`), so both a root
//! runtime and an ordinary user's are attacked; the project has a `.git`, so a confined
//! command of an ordinary user goes through the user namespace that keeps `.git` read-only.

use std::path::Path;
use std::process::{Child, Command};

use serde_json::json;
use session_e2e::session_binary;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// The walk: the parent's environment, every process's, and the command's own, kept to the
/// lines that matter so no truncation of a long output can hide one.
const WALK: &str = "cat /proc/$PPID/environ /proc/[0-9]*/environ /proc/self/environ 2>/dev/null \
                    | tr '\\0' '\\n' | grep -a -e canary- -e sibling-visible- -e VISIBLE_SETTING=";

/// Who runs the runtime: this test's user, or (when that is root) `nobody`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    Same,
    Nobody,
}

/// `nobody`'s ids.
const NOBODY: u32 = 65_534;

/// `program` run as `identity`.
fn command_as(identity: Identity, program: &Path) -> Command {
    match identity {
        Identity::Same => Command::new(program),
        Identity::Nobody => {
            let mut command = Command::new("setpriv");
            command
                .args(["--reuid", &NOBODY.to_string(), "--regid", &NOBODY.to_string(), "--clear-groups"])
                .arg(program);
            command
        }
    }
}

/// A sleeping process of the runtime's user, started without any guard, holding `mark` in
/// its environment; killed when dropped.
struct Sibling(Child);

impl Sibling {
    fn start(mark: &str, identity: Identity) -> Self {
        let sleep = Path::new("/bin/sleep");
        let child = command_as(identity, sleep).arg("120").env("SIBLING_MARK", mark).spawn().unwrap();
        Self(child)
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn session(root: &Path, identity: Identity, args: &[&str], canary: &str) -> std::process::Output {
    // `nobody` cannot reach the build's binary under root's home: it runs a copy.
    let binary = match identity {
        Identity::Same => session_binary().unwrap(),
        Identity::Nobody => root.join("session"),
    };
    command_as(identity, &binary)
        .args(args)
        .current_dir(root.join("project"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SESSION_CONFIG")
        .env("OPENAI_API_KEY", canary)
        .env("VISIBLE_SETTING", "plain-value")
        .output()
        .unwrap()
}

/// Runs the walk as the model's command under `sandbox`; returns what reached the model, the
/// store's bytes and the export.
async fn walk_under(
    sandbox: serde_json::Value,
    identity: Identity,
    canary: &str,
) -> (String, String, String) {
    let script = json!({"turns": [
        {"text": "Looking.", "calls": [{"op": "bash", "command": WALK, "description": "Read environs"}]},
        {"text": "Seen."}]});
    let server = TestServer::start(Script::from_json(&script.to_string()).unwrap()).await.unwrap();
    // `nobody` must be able to reach the folder: not under root's home.
    let dir = match identity {
        Identity::Same => {
            let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
            std::fs::create_dir_all(base).unwrap();
            tempfile::tempdir_in(base).unwrap()
        }
        Identity::Nobody => tempfile::tempdir().unwrap(),
    };
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut extra = serde_json::Map::new();
    extra.insert("sandbox".to_owned(), sandbox);
    let project = root.join("project");
    session_e2e::mock_project_with(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000, extra)
        .unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    if identity == Identity::Nobody {
        std::fs::copy(session_binary().unwrap(), root.join("session")).unwrap();
        let owner = format!("{NOBODY}:{NOBODY}");
        assert!(Command::new("chown").arg("-R").arg(owner).arg(&root).status().unwrap().success());
    }
    let canary_owned = canary.to_owned();
    let (out, export) = tokio::task::spawn_blocking(move || {
        let run = ["run", "--model", "mock/m", "--yes", "read the environs"];
        let out = session(&root, identity, &run, &canary_owned);
        let list = session(&root, identity, &["sessions", "list"], &canary_owned);
        let id = String::from_utf8_lossy(&list.stdout).split('\t').next().unwrap_or_default().to_owned();
        let export = session(&root, identity, &["sessions", "export", &id], &canary_owned);
        assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
        let db = std::fs::read(root.join("data/session/session.db")).unwrap();
        (
            out,
            (String::from_utf8_lossy(&export.stdout).into_owned(), String::from_utf8_lossy(&db).into_owned()),
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent: String = server.requests().iter().map(|r| r.body.to_string()).collect();
    server.shutdown().await;
    let (export, db) = export;
    (sent, db, export)
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}{}-{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_cannot_read_the_runtimes_environment_through_proc() {
    let identities = match nix::unistd::geteuid().is_root() {
        true => vec![Identity::Same, Identity::Nobody],
        false => vec![Identity::Same],
    };
    for identity in identities {
        walks_find_no_key(identity).await;
    }
}

async fn walks_find_no_key(identity: Identity) {
    let canary = unique("canary-");
    let mark = unique("sibling-visible-");
    let sibling = Sibling::start(&mark, identity);
    // Control: a plain process is readable through /proc (once it has reached `exec`).
    let path = format!("/proc/{}/environ", sibling.0.id());
    let readable = (0..100).any(|_| {
        let environ = std::fs::read(&path).unwrap_or_default();
        let found = String::from_utf8_lossy(&environ).contains(&mark);
        if !found {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        found
    });
    assert!(readable, "the test cannot read its own child");

    let modes = [
        ("workspace-write", json!({"mode": "workspace-write"})),
        ("off", json!({"mode": "off"})),
        ("excluded", json!({"mode": "workspace-write", "exclude": ["cat *", "tr *", "grep *"]})),
    ];
    for (name, sandbox) in modes {
        let name = format!("{name} as {identity:?}");
        let (sent, db, export) = walk_under(sandbox, identity, &canary).await;
        // The command ran and read environments: at least its own.
        assert!(sent.contains("VISIBLE_SETTING=plain-value"), "{name}: the walk did not run: {sent}");
        if !name.starts_with("workspace-write") {
            // Control: unconfined, the same walk reads a guard-less process of the same user
            // (Landlock keeps a confined command away from every process outside its domain).
            assert!(sent.contains(&mark), "{name}: the walk did not reach the sibling: {sent}");
        }
        assert!(!sent.contains(&canary), "{name}: the runtime's key reached the model: {sent}");
        assert!(!db.contains(&canary), "{name}: the runtime's key reached the store");
        assert!(!export.contains(&canary), "{name}: the runtime's key reached the export");
    }
}
