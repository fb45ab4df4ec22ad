//! Symlink races: the `/file`, `/file/content` and `/find` routes while a real flipper thread swaps a
//! project file (or its folder) between the real thing and a symlink to one outside the
//! project. No answer may carry the outside file's content or names. The control runs the
//! routes' old order (resolve the path, check it is inside, read the path) against the same
//! flipper and shows that it does serve the outside file.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use session_tools::Workspace;

use super::support::fixture;

const HELLO: &str = r#"{"turns": [{"text": "Hello there."}]}"#;
const OUTSIDE_TEXT: &str = "OUTSIDE-ORIGINAL secret\n";
const INSIDE_TEXT: &str = "inside line\n";
const ROUNDS: usize = 300;

/// Swaps `path` between the real file (folder) and a symlink to `outside` until stopped.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

fn hold() {
    let until = Instant::now() + Duration::from_micros(20);
    while Instant::now() < until {
        std::thread::yield_now();
    }
}

impl Flipper {
    fn start(path: PathBuf, outside: PathBuf, folder: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let parked = path.with_extension("parked");
        let thread = std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stopping.load(Ordering::Relaxed) {
                if folder {
                    if std::fs::rename(&path, &parked).is_ok() {
                        let _ = symlink(&outside, &path);
                        hold();
                        let _ = std::fs::remove_file(&path);
                        let _ = std::fs::rename(&parked, &path);
                    }
                } else {
                    let _ = std::fs::remove_file(&path);
                    let _ = symlink(&outside, &path);
                    hold();
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::write(&path, INSIDE_TEXT);
                }
                flips += 1;
                hold();
            }
            flips
        });
        Self { stop, thread: Some(thread) }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map(|t| t.join().unwrap()).unwrap_or(0)
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An outside folder holding `target.txt` and a name found only there.
fn outside_folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    std::fs::write(path.join("target.txt"), OUTSIDE_TEXT).unwrap();
    std::fs::write(path.join("outside-only.txt"), "x").unwrap();
    (dir, path)
}

fn seed_project(project: &Path) {
    std::fs::create_dir_all(project.join("dir")).unwrap();
    std::fs::write(project.join("target.txt"), INSIDE_TEXT).unwrap();
    std::fs::write(project.join("dir/target.txt"), INSIDE_TEXT).unwrap();
}

#[tokio::test]
async fn file_content_never_serves_a_file_flipped_to_an_outside_symlink() {
    let fx = fixture(HELLO).await;
    let project = fx.project();
    seed_project(&project);
    let (_keep, outside) = outside_folder();
    let flipper = Flipper::start(project.join("target.txt"), outside.join("target.txt"), false);
    let mut served = 0;
    for _ in 0..ROUNDS {
        let (status, body) = fx.api.call("GET", "/file/content?path=target.txt", None).await;
        assert!(!body.to_string().contains("OUTSIDE-ORIGINAL"), "served the outside file: {body}");
        if status == StatusCode::OK {
            served += 1;
        }
    }
    assert!(flipper.stop() > 0, "the flipper never ran");
    assert!(served > 0, "no request was served at all");
    fx.finish().await;
}

#[tokio::test]
async fn file_content_list_and_find_never_follow_a_folder_flipped_to_an_outside_symlink() {
    let fx = fixture(HELLO).await;
    let project = fx.project();
    seed_project(&project);
    let (_keep, outside) = outside_folder();
    let flipper = Flipper::start(project.join("dir"), outside.clone(), true);
    let mut served = 0;
    for _ in 0..ROUNDS {
        let (status, body) = fx.api.call("GET", "/file/content?path=dir/target.txt", None).await;
        assert!(!body.to_string().contains("OUTSIDE-ORIGINAL"), "served the outside file: {body}");
        served += usize::from(status == StatusCode::OK);
        let (_, body) = fx.api.call("GET", "/file?path=dir", None).await;
        assert!(!body.to_string().contains("outside-only"), "listed the outside folder: {body}");
        let (_, body) = fx.api.call("GET", "/find?pattern=OUTSIDE-ORIGINAL", None).await;
        assert!(!body.to_string().contains("OUTSIDE-ORIGINAL"), "searched the outside folder: {body}");
    }
    assert!(flipper.stop() > 0, "the flipper never ran");
    assert!(served > 0, "no request was served at all");
    fx.finish().await;
}

#[test]
fn control_the_old_resolve_check_then_read_order_serves_the_outside_file() {
    let project_dir = tempfile::tempdir().unwrap();
    let project = project_dir.path().canonicalize().unwrap();
    seed_project(&project);
    let (_keep, outside) = outside_folder();
    let workspace = Workspace::new(&project).unwrap();
    let flipper = Flipper::start(project.join("dir"), outside, true);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut leaked = false;
    while Instant::now() < deadline && !leaked {
        // What the routes did: resolve, refuse outside, then read the path.
        let Ok(resolved) = workspace.resolve("dir/target.txt") else { continue };
        if !resolved.inside {
            continue;
        }
        leaked = std::fs::read_to_string(&resolved.path).is_ok_and(|text| text.contains("OUTSIDE-ORIGINAL"));
    }
    assert!(flipper.stop() > 0);
    assert!(leaked, "the flipper never won the race against the old order: the attack is not exercised");
}
