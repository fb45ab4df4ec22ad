//! Revert and unrevert (SPEC 13) in a temp git repository with real snapshots.

use std::sync::Arc;

use serde_json::json;
use session_core::{LlmEvent, Message, PartKind};
use session_runtime::{BusEvent, RuntimeError};

use super::support::{Hanging, Setup, eventually, history, is_user, rig, say, scripted, text_of};

const WRITES: &str = r#"{"turns": [
    {"text": "Writing.", "calls": [
        {"op": "write", "path": "new.txt", "content": "fresh\n"},
        {"op": "write", "path": "notes.txt", "content": "changed\n"}]},
    {"text": "Wrote them."}]}"#;

fn read(rig: &super::support::Rig, name: &str) -> Option<String> {
    std::fs::read_to_string(rig.work.join(name)).ok()
}

#[tokio::test]
async fn revert_restores_the_files_and_unrevert_puts_the_changes_back() {
    let mut setup = Setup::new(scripted(WRITES));
    setup.snapshots = true;
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("write two files")).await.unwrap();
    assert_eq!(read(&rig, "new.txt").as_deref(), Some("fresh\n"));
    assert_eq!(read(&rig, "notes.txt").as_deref(), Some("changed\n"));
    let messages = history(&rig.store, &session.id).await;
    let patches =
        messages.iter().flat_map(|m| &m.parts).filter(|p| matches!(p.kind, PartKind::Patch(_))).count();
    assert_eq!(patches, 1);

    // Reverting the first assistant message reverts its whole turn, from the user message.
    let user_id = messages[0].info.id().clone();
    let assistant_id = messages[1].info.id().clone();
    let reverted = rig.runtime.revert(&session.id, &assistant_id, None).await.unwrap();
    let record = reverted.revert.clone().expect("a revert record");
    assert_eq!(record.message_id, user_id);
    assert!(record.snapshot.is_some());
    // The record's diff goes from the tree before the revert to the tree after it.
    let diff = record.diff.clone().expect("a revert diff");
    assert!(diff.contains("--- a/new.txt") && diff.contains("-fresh"), "{diff}");
    assert!(diff.contains("-changed") && diff.contains("+alpha"), "{diff}");
    assert_eq!(read(&rig, "new.txt"), None, "a file the step created is removed");
    assert_eq!(read(&rig, "notes.txt").as_deref(), Some("alpha\nbeta\n"), "a changed file is restored");
    // The messages stay until the session moves on.
    assert_eq!(history(&rig.store, &session.id).await.len(), messages.len());
    assert_eq!(rig.store.get_session(&session.id).await.unwrap().revert, Some(record));

    let unreverted = rig.runtime.unrevert(&session.id).await.unwrap();
    assert_eq!(unreverted.revert, None);
    assert_eq!(read(&rig, "new.txt").as_deref(), Some("fresh\n"));
    assert_eq!(read(&rig, "notes.txt").as_deref(), Some("changed\n"));
}

#[tokio::test]
async fn the_next_prompt_deletes_what_follows_the_revert_point() {
    let mut setup = Setup::new(scripted(WRITES));
    setup.snapshots = true;
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("write two files")).await.unwrap();
    let before = history(&rig.store, &session.id).await;
    // A revert at the first part of the last message (nothing useful before it: the whole
    // turn), then a revert over that revert, from the first assistant message.
    let last = before.last().unwrap();
    let text_part = last.parts.iter().find(|p| matches!(p.kind, PartKind::Text(_))).unwrap();
    let first = rig.runtime.revert(&session.id, last.info.id(), Some(&text_part.id)).await.unwrap();
    assert_eq!(first.revert.as_ref().map(|r| &r.message_id), Some(before[0].info.id()));
    assert_eq!(first.revert.as_ref().and_then(|r| r.part_id.as_ref()), None);
    let second = rig.runtime.revert(&session.id, before[1].info.id(), None).await.unwrap();
    assert_eq!(second.revert.as_ref().map(|r| &r.snapshot), first.revert.as_ref().map(|r| &r.snapshot));
    assert_eq!(read(&rig, "new.txt"), None);

    let mut events = rig.runtime.bus().subscribe();
    rig.runtime.prompt(&session.id, say("do something else")).await.unwrap();
    let after = history(&rig.store, &session.id).await;
    assert!(is_user(&after[0]));
    assert_eq!(text_of(&after[0]), "do something else", "the reverted turn is gone");
    assert!(after.iter().all(|m| before.iter().all(|b| b.info.id() != m.info.id())));
    assert_eq!(rig.store.get_session(&session.id).await.unwrap().revert, None);
    let mut removed = 0;
    while let Ok(event) = events.try_recv() {
        removed += usize::from(matches!(event, BusEvent::MessageRemoved { .. }));
    }
    assert_eq!(removed, before.len());
}

#[tokio::test]
async fn revert_and_unrevert_are_refused_while_a_prompt_runs() {
    let provider = Arc::new(Hanging(vec![
        serde_json::from_value::<LlmEvent>(json!({"type": "step-start", "index": 0})).unwrap(),
    ]));
    let rig = Arc::new(rig(Setup::new(provider)).await);
    let session = rig.runtime.create_session(None).await.unwrap();
    let runner = {
        let rig = rig.clone();
        let id = session.id.clone();
        tokio::spawn(async move { rig.runtime.prompt(&id, say("hang")).await })
    };
    let store = rig.store.clone();
    let id = session.id.clone();
    eventually("the user message", async || !history(&store, &id).await.is_empty()).await;
    let messages = history(&rig.store, &session.id).await;
    let Message::User(user) = &messages[0].info else { panic!("{messages:?}") };
    let revert = rig.runtime.revert(&session.id, &user.id, None).await;
    assert!(matches!(revert, Err(RuntimeError::Busy(_))), "{revert:?}");
    let unrevert = rig.runtime.unrevert(&session.id).await;
    assert!(matches!(unrevert, Err(RuntimeError::Busy(_))), "{unrevert:?}");
    assert!(rig.runtime.cancel(&session.id));
    runner.await.unwrap().unwrap();
    // Idle again: reverting works.
    rig.runtime.revert(&session.id, &user.id, None).await.unwrap();
}

const TWO_WRITING_STEPS: &str = r#"{"turns": [
    {"text": "One.", "calls": [{"op": "write", "path": "one.txt", "content": "1\n"}]},
    {"text": "Two.", "calls": [{"op": "write", "path": "two.txt", "content": "2\n"}]},
    {"text": "Done."}]}"#;

/// Each assistant message's step-start snapshot, step-finish snapshot and patched file names.
type StepSnapshots = (Option<String>, Option<String>, Vec<String>);

fn step_snapshots(message: &session_core::MessageWithParts) -> StepSnapshots {
    let mut out: StepSnapshots = (None, None, Vec::new());
    for part in &message.parts {
        match &part.kind {
            PartKind::StepStart(start) => out.0 = start.snapshot.clone(),
            PartKind::StepFinish(finish) => out.1 = finish.snapshot.clone(),
            PartKind::Patch(patch) => {
                out.2.extend(patch.files.iter().filter_map(|f| f.rsplit('/').next().map(str::to_owned)));
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn spec_13_a_step_the_run_goes_straight_on_to_starts_from_the_last_steps_closing_snapshot() {
    let mut setup = Setup::new(scripted(TWO_WRITING_STEPS));
    setup.snapshots = true;
    let rig = rig(setup).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("write one file per step")).await.unwrap();
    let steps: Vec<StepSnapshots> =
        history(&rig.store, &session.id).await.iter().filter(|m| !is_user(m)).map(step_snapshots).collect();
    assert_eq!(steps.len(), 3);
    for pair in steps.windows(2) {
        assert!(pair[0].1.is_some());
        assert_eq!(pair[1].0, pair[0].1, "a step starts where the one before it closed");
    }
    let patched: Vec<&[String]> = steps.iter().map(|step| step.2.as_slice()).collect();
    assert_eq!(patched, [&["one.txt".to_owned()][..], &["two.txt".to_owned()][..], &[][..]]);
    // One staging before the first step, then one per step boundary (was two per step).
    assert_eq!(rig.snapshot_tracks.load(std::sync::atomic::Ordering::SeqCst), 4);

    // A new prompt is a new run: its first step stages the worktree again, so an edit made
    // between the runs lands in no step's patch.
    std::fs::write(rig.work.join("between.txt"), "by hand\n").unwrap();
    let rig_tracks = rig.snapshot_tracks.load(std::sync::atomic::Ordering::SeqCst);
    rig.runtime.prompt(&session.id, say("anything else?")).await.unwrap();
    let last = history(&rig.store, &session.id).await;
    let (start, _, files) = step_snapshots(last.last().unwrap());
    assert_ne!(start, steps[2].1, "the edit made between the runs is in the new start snapshot");
    assert!(files.is_empty(), "{files:?}");
    assert_eq!(rig.snapshot_tracks.load(std::sync::atomic::Ordering::SeqCst), rig_tracks + 2);
}
