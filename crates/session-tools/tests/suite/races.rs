//! A path swapped for a symlink between the tool's check and its use. A real flipper
//! thread swaps `target.txt` (or its folder) between a regular file (folder) and a symlink to
//! one outside the workspace while `write`, `edit` and `read` run again and again; nothing
//! outside may change, appear or be read. The controls run the same flipper against a naive
//! check-then-use on the path and show that it does reach the outside file.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;
use session_tools::PermissionAnswer;

use super::support::{Fixture, ScriptedAsker, build_rules};

const OUTSIDE_TEXT: &str = "OUTSIDE-ORIGINAL\n";
const INSIDE_TEXT: &str = "inside line\n";
/// How many calls of each tool run against the flipper.
const ROUNDS: usize = 300;

/// A thread that keeps swapping `path` between the real thing and a symlink to `outside`.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

/// What is swapped: a file, or the folder holding it.
#[derive(Clone, Copy)]
enum Flip {
    File,
    Folder,
}

/// Keeps the current state for a few microseconds, long enough for a tool's step to see it.
fn hold() {
    let until = Instant::now() + Duration::from_micros(20);
    while Instant::now() < until {
        std::thread::yield_now();
    }
}

impl Flipper {
    fn start(path: PathBuf, outside: PathBuf, flip: Flip) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let parked = path.with_extension("parked");
        let thread = std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stopping.load(Ordering::Relaxed) {
                match flip {
                    Flip::File => {
                        let _ = std::fs::remove_file(&path);
                        let _ = symlink(&outside, &path);
                        hold();
                        let _ = std::fs::remove_file(&path);
                        let _ = std::fs::write(&path, INSIDE_TEXT);
                    }
                    Flip::Folder => {
                        // The real folder is parked aside while a symlink to the outside folder
                        // takes its name, then comes back.
                        if std::fs::rename(&path, &parked).is_ok() {
                            let _ = symlink(&outside, &path);
                            hold();
                            let _ = std::fs::remove_file(&path);
                            let _ = std::fs::rename(&parked, &path);
                        }
                    }
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

/// The workspace (edits allowed, `external_directory` asks rejected) and an outside folder
/// holding `target.txt`.
fn setup() -> Fixture {
    let fx = Fixture::with(ScriptedAsker::rejecting(), build_rules(), None);
    fx.write_outside("target.txt", OUTSIDE_TEXT);
    fx.write("target.txt", INSIDE_TEXT);
    fx.write("dir/target.txt", INSIDE_TEXT);
    fx
}

/// The outside folder holds exactly `target.txt`, unchanged.
fn assert_outside_untouched(outside: &Path) {
    assert_eq!(std::fs::read_to_string(outside.join("target.txt")).unwrap(), OUTSIDE_TEXT);
    let names: Vec<String> = std::fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["target.txt"], "a file appeared outside");
}

/// Runs `write` and `edit` on `relative` ROUNDS times each against the flipper.
async fn hammer_writes(fx: &Fixture, relative: &str, flipper: Flipper) -> (usize, u64) {
    let mut written = 0;
    for round in 0..ROUNDS {
        let content = format!("inside line\nround {round}\n");
        if fx.run("write", json!({"filePath": relative, "content": content})).await.is_ok() {
            written += 1;
        }
        let edit = json!({"filePath": relative, "oldString": "inside line", "newString": format!("inside line {round}")});
        if fx.run("edit", edit).await.is_ok() {
            written += 1;
        }
    }
    (written, flipper.stop())
}

#[tokio::test]
async fn write_and_edit_never_follow_a_file_flipped_to_an_outside_symlink() {
    let fx = setup();
    let flipper = Flipper::start(fx.root.join("target.txt"), fx.outside.join("target.txt"), Flip::File);
    let (written, flips) = hammer_writes(&fx, "target.txt", flipper).await;
    assert!(flips > 0, "the flipper never ran");
    assert!(written > 0, "no write went through at all: the test did not exercise the tools");
    assert_outside_untouched(&fx.outside);
}

#[tokio::test]
async fn write_and_edit_never_follow_a_folder_flipped_to_an_outside_symlink() {
    let fx = setup();
    let flipper = Flipper::start(fx.root.join("dir"), fx.outside.clone(), Flip::Folder);
    let (written, flips) = hammer_writes(&fx, "dir/target.txt", flipper).await;
    assert!(flips > 0, "the flipper never ran");
    assert!(written > 0, "no write went through at all: the test did not exercise the tools");
    assert_outside_untouched(&fx.outside);
}

/// Runs `read` on `relative` ROUNDS times against the flipper; returns how many reads returned
/// the inside text.
async fn hammer_reads(fx: &Fixture, relative: &str, flipper: Flipper) -> usize {
    let mut inside = 0;
    for _ in 0..ROUNDS {
        if let Ok(result) = fx.run("read", json!({"filePath": relative})).await {
            assert!(
                !result.output.contains("OUTSIDE-ORIGINAL"),
                "read served the outside file: {}",
                result.output
            );
            if result.output.contains("inside line") {
                inside += 1;
            }
        }
    }
    assert!(flipper.stop() > 0, "the flipper never ran");
    inside
}

#[tokio::test]
async fn read_never_returns_a_file_flipped_to_an_outside_symlink() {
    let fx = setup();
    let flipper = Flipper::start(fx.root.join("target.txt"), fx.outside.join("target.txt"), Flip::File);
    let inside = hammer_reads(&fx, "target.txt", flipper).await;
    assert!(inside > 0, "no read went through at all");
}

#[tokio::test]
async fn read_never_returns_a_file_whose_folder_flipped_to_an_outside_symlink() {
    let fx = setup();
    let flipper = Flipper::start(fx.root.join("dir"), fx.outside.clone(), Flip::Folder);
    let inside = hammer_reads(&fx, "dir/target.txt", flipper).await;
    assert!(inside > 0, "no read went through at all");
}

/// The naive order the tools had: check the path (not a symlink, inside), then write the path.
/// Returns true once the outside file changed.
fn naive_check_then_write(path: &Path, outside_file: &Path, check: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let is_link = std::fs::symlink_metadata(check).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link && std::fs::symlink_metadata(check).is_ok() {
            let _ = std::fs::write(path, "PWNED\n");
        }
        if std::fs::read_to_string(outside_file).is_ok_and(|text| text != OUTSIDE_TEXT) {
            return true;
        }
    }
    false
}

#[test]
fn control_a_naive_check_then_write_reaches_the_outside_file_through_the_file_flip() {
    let fx = setup();
    let target = fx.root.join("target.txt");
    let outside_file = fx.outside.join("target.txt");
    let flipper = Flipper::start(target.clone(), outside_file.clone(), Flip::File);
    let reached = naive_check_then_write(&target, &outside_file, &target);
    assert!(flipper.stop() > 0);
    assert!(reached, "the flipper never won the race against a naive write: the attack is not exercised");
}

#[test]
fn control_a_naive_check_then_write_reaches_the_outside_file_through_the_folder_flip() {
    let fx = setup();
    let folder = fx.root.join("dir");
    let outside_file = fx.outside.join("target.txt");
    let flipper = Flipper::start(folder.clone(), fx.outside.clone(), Flip::Folder);
    let reached = naive_check_then_write(&folder.join("target.txt"), &outside_file, &folder);
    assert!(flipper.stop() > 0);
    assert!(reached, "the flipper never won the race against a naive write: the attack is not exercised");
}

/// The same swap made at the worst moment, while the permission ask is open: the asker swaps
/// the folder (or file) and then allows.
fn swap_during_ask(
    permission: &'static str,
    from: PathBuf,
    parked: PathBuf,
    to: PathBuf,
) -> Arc<ScriptedAsker> {
    ScriptedAsker::new(move |ask| {
        if ask.request.permission == permission && std::fs::symlink_metadata(&parked).is_err() {
            std::fs::rename(&from, &parked).unwrap();
            symlink(&to, &from).unwrap();
        }
        Some(PermissionAnswer::once())
    })
}

#[tokio::test]
async fn an_outside_folder_swapped_while_external_directory_is_asked_gets_the_write_it_was_asked_about() {
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let (asked, elsewhere) = (outside.join("asked"), outside.join("elsewhere"));
    std::fs::create_dir_all(&asked).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let asker =
        swap_during_ask("external_directory", asked.clone(), outside.join("asked-moved"), elsewhere.clone());
    let fx = Fixture::with(asker, build_rules(), None);
    let target = asked.join("new.txt");
    fx.run("write", json!({"filePath": target.to_string_lossy(), "content": "hello\n"})).await.unwrap();
    assert_eq!(fx.asker.permissions(), vec!["external_directory"]);
    assert!(!elsewhere.join("new.txt").exists(), "the write followed the swapped folder");
    assert_eq!(std::fs::read_to_string(outside.join("asked-moved/new.txt")).unwrap(), "hello\n");
    // Control: a write by path after the ask lands in the folder the symlink now names.
    std::fs::write(&target, "by path\n").unwrap();
    assert_eq!(std::fs::read_to_string(elsewhere.join("new.txt")).unwrap(), "by path\n");
}

#[tokio::test]
async fn a_file_swapped_for_an_outside_symlink_while_edit_is_asked_is_replaced_not_followed() {
    let mut rules = build_rules();
    rules.push(session_core::permission::Rule::new("edit", "*", session_core::permission::Action::Ask));
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    std::fs::write(outside.join("target.txt"), OUTSIDE_TEXT).unwrap();
    let asker = ScriptedAsker::new(|_| Some(PermissionAnswer::once()));
    let fx = Fixture::with(asker, rules, None);
    fx.write("target.txt", INSIDE_TEXT);
    let (file, parked, to) =
        (fx.root.join("target.txt"), fx.root.join("parked.txt"), outside.join("target.txt"));
    fx.asker.set(move |ask| {
        if ask.request.permission == "edit" && std::fs::symlink_metadata(&parked).is_err() {
            std::fs::rename(&file, &parked).unwrap();
            symlink(&to, &file).unwrap();
        }
        Some(PermissionAnswer::once())
    });
    let edit = json!({"filePath": "target.txt", "oldString": "inside line", "newString": "edited line"});
    fx.run("edit", edit).await.unwrap();
    assert_outside_untouched(&outside);
    assert_eq!(std::fs::read_to_string(fx.root.join("target.txt")).unwrap(), "edited line\n");
    // Control: a write by path now would follow the symlink out.
    assert!(std::fs::symlink_metadata(fx.root.join("parked.txt")).is_ok());
    std::fs::remove_file(fx.root.join("target.txt")).unwrap();
    symlink(outside.join("target.txt"), fx.root.join("target.txt")).unwrap();
    std::fs::write(fx.root.join("target.txt"), "by path\n").unwrap();
    assert_eq!(std::fs::read_to_string(outside.join("target.txt")).unwrap(), "by path\n");
}
