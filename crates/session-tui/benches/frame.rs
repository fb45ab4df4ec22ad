//! The UI's costs: one frame of a 10,000-line transcript (laid out once, then only the
//! visible rows copied; and after a streamed delta, which lays out the growing message again),
//! and the real binary's CPU while it sits idle on a pseudo-terminal.

#![expect(clippy::unwrap_used, reason = "a bench whose setup fails has nothing to measure")]
#![expect(missing_docs, reason = "criterion_group! generates public functions that cannot carry docs")]

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use session_runtime::BusEvent;
use session_tui::fixtures::{self, NOW};
use session_tui::{App, Status, Theme, Transcript};

fn long_app() -> App {
    let mut transcript = Transcript::new(fixtures::session_id(), fixtures::root());
    transcript.load(fixtures::long_history(10_000), None);
    let status = Status { model: "mock/m".into(), agent: "build".into(), ..Status::default() };
    App::new(Theme { color: true }, transcript, status)
}

fn frames(c: &mut Criterion) {
    let mut app = long_app();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    // The first frame lays every message out; later ones reuse it.
    terminal.draw(|f| session_tui::view::draw(f, &mut app, NOW)).unwrap();
    let mut group = c.benchmark_group("tui");
    group.bench_function("frame_10k_lines", |b| {
        b.iter(|| {
            terminal.draw(|f| session_tui::view::draw(f, &mut app, NOW)).unwrap();
        });
    });
    group.bench_function("frame_10k_lines_scrolled", |b| {
        app.scroll = 5_000;
        b.iter(|| {
            terminal.draw(|f| session_tui::view::draw(f, &mut app, NOW)).unwrap();
        });
        app.scroll = 0;
    });
    // A streamed delta on the last answer: that message is laid out again, nothing else.
    let last = fixtures::long_history(10_000).pop().unwrap();
    let text_part = last.parts[0].clone();
    group.bench_function("frame_10k_lines_after_delta", |b| {
        b.iter(|| {
            app.bus(&BusEvent::PartDelta {
                session_id: fixtures::session_id(),
                message_id: text_part.message_id.clone(),
                part_id: text_part.id.clone(),
                field: "text".to_owned(),
                delta: " more".to_owned(),
            });
            terminal.draw(|f| session_tui::view::draw(f, &mut app, NOW)).unwrap();
        });
    });
    group.sample_size(10);
    group.bench_function("first_layout_10k_lines", |b| {
        b.iter_with_setup(long_app, |mut app| {
            let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
            terminal.draw(|f| session_tui::view::draw(f, &mut app, NOW)).unwrap();
        });
    });
    group.finish();
}

/// The `session` binary next to this bench's build (release or debug), if built.
fn session_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    ["release/session", "debug/session"].iter().map(|p| target.join(p)).find(|p| p.is_file())
}

/// User plus system CPU time of process `pid`, from /proc (clock ticks at 100 Hz).
fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The CPU the real UI uses per idle second: `session tui` on a pseudo-terminal with nothing
/// to do, over ten seconds.
fn idle_cpu(c: &mut Criterion) {
    let Some(binary) = session_binary() else {
        eprintln!(
            "tui/idle_cpu: no session binary built next to this bench (cargo build -p session-cli); skipped"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = r#"{"model": "mock/m", "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "k"}, "models": {"m": {}}}}}"#;
    std::fs::write(project.join("session.json"), config).unwrap();
    session_testkit::trust_folder(dir.path(), &project).unwrap();
    let size = nix::pty::Winsize { ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let mut child = std::process::Command::new("setsid")
        .arg(&binary)
        .current_dir(&project)
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env_remove("SESSION_CONFIG")
        .stdin(std::process::Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(std::process::Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    // Drain the screen so that the UI never blocks on a full pty.
    let mut master = std::fs::File::from(pty.master);
    let mut reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        while let Ok(n) = std::io::Read::read(&mut reader, &mut buffer) {
            if n == 0 {
                break;
            }
        }
    });
    // Started and drawn: from here on it only waits.
    std::thread::sleep(Duration::from_secs(2));
    let pid = child.id();
    // Measured directly, not by criterion: an idle UI uses no CPU tick at all, which criterion
    // refuses as a time. /proc counts in 10 ms ticks.
    let _ = c;
    let seconds = 10;
    let before = cpu_of(pid).unwrap_or_default();
    std::thread::sleep(Duration::from_secs(seconds));
    let used = cpu_of(pid).unwrap_or_default().saturating_sub(before);
    eprintln!(
        "tui/idle_cpu: {} ms of CPU over {seconds} s idle ({:.3}% of one core; /proc resolution 10 ms)",
        used.as_millis(),
        used.as_secs_f64() * 100.0 / seconds as f64
    );
    // Ctrl-C twice quits.
    let _ = std::io::Write::write_all(&mut master, b"\x03");
    std::thread::sleep(Duration::from_millis(200));
    let _ = std::io::Write::write_all(&mut master, b"\x03");
    if child.wait_timeout_or_kill() {
        eprintln!("tui/idle_cpu: the UI quit on Ctrl-C twice");
    }
}

trait WaitOrKill {
    fn wait_timeout_or_kill(&mut self) -> bool;
}

impl WaitOrKill for std::process::Child {
    /// Waits up to 10 s for the exit; kills the process after that. True when it exited.
    fn wait_timeout_or_kill(&mut self) -> bool {
        for _ in 0..200 {
            if let Ok(Some(_)) = self.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.kill();
        let _ = self.wait();
        false
    }
}

criterion_group!(benches, frames, idle_cpu);
criterion_main!(benches);
