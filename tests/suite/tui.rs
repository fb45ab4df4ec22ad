//! The interactive UI through the real binary on a pseudo-terminal, against the
//! loopback scripted provider: the screen is read back with a terminal emulator (vt100).

use std::io::{Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use session_e2e::{mock_project_with, session_binary};
use session_llm::{Api, Script};
use session_testkit::TestServer;

const ROWS: u16 = 40;
const COLS: u16 = 120;

/// `session ARGS` on a pseudo-terminal of its own (no controlling terminal of the test's, so
/// the size it reads is the pty's), with everything it wrote kept and the screen emulated.
pub(crate) struct Tui {
    child: std::process::Child,
    master: std::fs::File,
    raw: Arc<Mutex<Vec<u8>>>,
    screen: Arc<Mutex<vt100::Parser>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Tui {
    pub(crate) fn start(root: &Path, args: &[&str]) -> Self {
        let size = nix::pty::Winsize { ws_row: ROWS, ws_col: COLS, ws_xpixel: 0, ws_ypixel: 0 };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        // `setsid` leaves the test's controlling terminal behind: the UI only sees the pty.
        let mut command = Command::new("setsid");
        command
            .arg("-w")
            .arg(session_binary().unwrap())
            .args(args)
            .current_dir(root.join("project"))
            .env("HOME", root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env("TERM", "xterm-256color")
            .env_remove("SESSION_CONFIG")
            .env_remove("NO_COLOR")
            .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
            .stderr(Stdio::from(pty.slave));
        let child = command.spawn().unwrap();
        drop(command);
        let master = std::fs::File::from(pty.master);
        let raw = Arc::new(Mutex::new(Vec::new()));
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).unwrap(),
            std::num::NonZeroU16::new(COLS).unwrap(),
            0,
        )));
        let reader = {
            let (raw, screen) = (raw.clone(), screen.clone());
            let mut master = master.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 8192];
                while let Ok(read) = master.read(&mut buffer) {
                    if read == 0 {
                        break;
                    }
                    raw.lock().unwrap().extend_from_slice(&buffer[..read]);
                    screen.lock().unwrap().process(&buffer[..read]);
                }
            })
        };
        Self { child, master, raw, screen, reader: Some(reader) }
    }

    pub(crate) fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows `text`; fails with the screen after 60 s.
    pub(crate) fn wait_for(&self, text: &str) {
        let start = Instant::now();
        loop {
            let contents = self.contents();
            if contents.contains(text) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never showed {text:?}; the screen:\n{contents}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn type_keys(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for the exit (60 s at most); returns the code and everything written.
    pub(crate) fn finish(mut self) -> (Option<i32>, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("the UI did not exit; the screen:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Raw mode is off again: the line discipline echoes and edits lines.
        let termios = nix::sys::termios::tcgetattr(self.master.as_fd()).unwrap();
        let flags = termios.local_flags;
        assert!(
            flags.contains(nix::sys::termios::LocalFlags::ICANON)
                && flags.contains(nix::sys::termios::LocalFlags::ECHO),
            "the terminal was left in raw mode: {flags:?}"
        );
        drop(self.master);
        if let Some(reader) = self.reader.take() {
            // The reader ends when the pty closes; it is not waited for beyond that.
            let _ = reader.join();
        }
        let raw = String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned();
        (status.code(), raw)
    }
}

pub(crate) fn project(root: &Path, server: &TestServer) {
    let extra = json!({"model": "mock/m", "permission": {"edit": "ask"}});
    let serde_json::Value::Object(extra) = extra else { unreachable!() };
    let project = root.join("project");
    mock_project_with(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000, extra).unwrap();
    let git = Command::new("git").args(["init", "--quiet"]).current_dir(&project).output().unwrap();
    assert!(git.status.success());
}

/// The terminal was handed back: the alternate screen left after it was entered, the cursor
/// shown, mouse reports off.
fn assert_restored(raw: &str) {
    let entered = raw.find("\u{1b}[?1049h").expect("the alternate screen was entered");
    let left = raw.rfind("\u{1b}[?1049l").expect("the alternate screen was left");
    assert!(left > entered);
    assert!(
        raw[left..].contains("\u{1b}[?25h") || raw.rfind("\u{1b}[?25h").is_some_and(|shown| shown > entered),
        "cursor shown"
    );
    assert!(raw.contains("\u{1b}[?1000l"), "mouse reports off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_24_prompt_answer_permission_undo_interrupt_and_quit_on_a_terminal() {
    let script = json!({"title": "Notes", "turns": [
        {"text": "I will write the notes.", "calls": [{"op": "write", "path": "NOTES.md", "content": "one\ntwo\n"}]},
        {"text": "## Done\n\nWrote **NOTES.md** with:\n\n- one\n- two\n"},
        {"text": "too slow", "delay": 60}
    ]});
    let server = TestServer::start(Script::from_json(&script.to_string()).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, raw) = tokio::task::spawn_blocking(move || {
        // `session` alone on a terminal opens the UI.
        let mut tui = Tui::start(&root, &[]);
        tui.wait_for("Type a prompt");
        tui.type_keys(b"write the notes\r");
        tui.wait_for("Allow edit?");
        tui.wait_for("[o]nce");
        tui.type_keys(b"o");
        tui.wait_for("Wrote NOTES.md with:");
        let screen = tui.contents();
        assert!(screen.contains("> write the notes"), "{screen}");
        assert!(screen.contains("✓ write NOTES.md"), "{screen}");
        assert!(screen.contains("## Done") && screen.contains("• one"), "{screen}");
        // As OpenCode's TUI, a write shows the content it wrote (its metadata holds no diff).
        assert!(
            screen.contains("✓ write NOTES.md") && screen.contains("    one"),
            "the write shows what it wrote: {screen}"
        );
        assert!(screen.contains("mock/m"), "the status line names the model: {screen}");
        let notes = root.join("project/NOTES.md");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\ntwo\n");

        // The answer shows before the step settles: undo once the run is over (while it
        // runs, undo is refused as busy).
        tui.wait_for("│ idle");
        tui.type_keys(b"/undo\r");
        tui.wait_for("undone:");
        assert!(!notes.exists(), "undo took the write back");
        // The undone prompt is back in the editor; Ctrl-C clears it.
        assert!(!tui.contents().contains("Ask anything"), "the editor holds the undone prompt");
        tui.type_keys(b"\x03");
        tui.wait_for("Ask anything");

        tui.type_keys(b"take your time\r");
        tui.wait_for("working");
        tui.type_keys(b"\x1b");
        tui.wait_for("interrupted");

        tui.type_keys(b"\x03");
        tui.wait_for("press Ctrl-C again to quit");
        tui.type_keys(b"\x03");
        tui.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{raw}");
    assert_restored(&raw);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_24_without_a_terminal_the_ui_prints_help_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::task::spawn_blocking({
        let root = dir.path().to_path_buf();
        move || {
            std::fs::create_dir_all(root.join("project")).unwrap();
            Command::new(session_binary().unwrap())
                .current_dir(root.join("project"))
                .env("HOME", &root)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("Usage:") && stdout.contains("tui"), "{stdout}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
}
