//! Summary diffs (SPEC 13, 12 step 8, 4 step 8) with real git snapshots: each turn's files on
//! its user message, the session's totals, `session.diff`, and housekeeping claimed at run end.

use pretty_assertions::assert_eq;
use session_core::{FileDiff, FileStatus, Message, MessageWithParts};
use session_runtime::BusEvent;
use session_store::SessionSummary;

use super::support::{Setup, history, rig, say, scripted};

/// Turn 1 creates `new.txt` and rewrites `notes.txt` (`alpha`, `beta` -> `changed`); turn 2
/// appends a line to `notes.txt`.
const TWO_TURNS: &str = r#"{"turns": [
    {"text": "Writing.", "calls": [
        {"op": "write", "path": "new.txt", "content": "fresh\n"},
        {"op": "write", "path": "notes.txt", "content": "changed\n"}]},
    {"text": "Wrote them."},
    {"text": "Appending.", "calls": [{"op": "write", "path": "notes.txt", "content": "changed\nmore\n"}]},
    {"text": "Appended."}]}"#;

fn diff(file: &str, additions: u64, deletions: u64, status: FileStatus) -> FileDiff {
    FileDiff { file: file.into(), additions, deletions, status: Some(status), patch: None }
}

/// A user message's summary diffs without their patch text (checked on its own).
fn user_diffs(message: &MessageWithParts) -> Option<Vec<FileDiff>> {
    user_patches(message)
        .map(|diffs| diffs.into_iter().map(|diff| FileDiff { patch: None, ..diff }).collect())
}

fn user_patches(message: &MessageWithParts) -> Option<Vec<FileDiff>> {
    match &message.info {
        Message::User(user) => user.summary.as_ref().map(|summary| summary.diffs.clone()),
        Message::Assistant(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_13_summary_diff_counts_additions_and_deletions() {
    let mut setup = Setup::new(scripted(TWO_TURNS));
    setup.snapshots = true;
    let rig = rig(setup).await;
    // A new store stamps its creation; set the stamp a year back so that this run's end is due.
    let stamps = || {
        let data = rig.work.parent().unwrap().join("data").join("snapshot");
        std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .map(|dir| dir.path().join("session-housekeeping"))
            .collect::<Vec<_>>()
    };
    let stamp_files = stamps();
    assert_eq!(stamp_files.len(), 1, "the new store stamped its creation");
    std::fs::write(&stamp_files[0], "1000").unwrap();
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    rig.runtime.prompt(&session.id, say("write two files")).await.unwrap();

    // The run waited for its last diff: everything is stored when prompt returns.
    let messages = history(&rig.store, &session.id).await;
    let turn_one =
        vec![diff("new.txt", 1, 0, FileStatus::Added), diff("notes.txt", 1, 2, FileStatus::Modified)];
    assert_eq!(user_diffs(&messages[0]), Some(turn_one.clone()));
    // Each diff carries its patch as OpenCode 1.18.34 stores it on the user message (its
    // `opencode export` showed this text for a created two-line file: `Index:`, the rule,
    // names followed by a tab, every range with its length).
    let patches: Vec<Option<String>> =
        user_patches(&messages[0]).unwrap().into_iter().map(|diff| diff.patch).collect();
    assert_eq!(
        patches,
        vec![
            Some(
                "Index: new.txt\n===================================================================\n\
                 --- new.txt\t\n+++ new.txt\t\n@@ -0,0 +1,1 @@\n+fresh\n"
                    .to_owned()
            ),
            Some(
                "Index: notes.txt\n===================================================================\n\
                 --- notes.txt\t\n+++ notes.txt\t\n@@ -1,2 +1,1 @@\n-alpha\n-beta\n+changed\n"
                    .to_owned()
            ),
        ]
    );
    let stored = rig.store.get_session(&session.id).await.unwrap();
    assert_eq!(stored.summary, Some(SessionSummary { additions: 2, deletions: 2, files: 2, diffs: None }));
    let mut published = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let BusEvent::SessionDiff { session_id, diff } = event {
            assert_eq!(session_id, session.id);
            published.push(diff.into_iter().map(|diff| FileDiff { patch: None, ..diff }).collect::<Vec<_>>());
        }
    }
    assert_eq!(published.last(), Some(&turn_one));

    rig.runtime.prompt(&session.id, say("append a line")).await.unwrap();
    let messages = history(&rig.store, &session.id).await;
    let users: Vec<_> = messages.iter().filter(|m| matches!(m.info, Message::User(_))).collect();
    assert_eq!(users.len(), 2);
    // Each turn has its own files; the first turn's diff is unchanged by the second.
    assert_eq!(user_diffs(users[0]), Some(turn_one));
    assert_eq!(user_diffs(users[1]), Some(vec![diff("notes.txt", 1, 0, FileStatus::Modified)]));
    // The session's summary is the net change since its first step.
    let stored = rig.store.get_session(&session.id).await.unwrap();
    assert_eq!(stored.summary, Some(SessionSummary { additions: 3, deletions: 2, files: 2, diffs: None }));

    // Right after a revert of the second turn, the session's summary counts what the revert
    // took back (OpenCode's revert sets it from the reverted range's diff), and
    // `session.diff` lists those files.
    let mut events = rig.runtime.bus().subscribe();
    let reverted = rig.runtime.revert(&session.id, users[1].info.id(), None).await.unwrap();
    assert_eq!(reverted.summary, Some(SessionSummary { additions: 1, deletions: 0, files: 1, diffs: None }));
    let stored = rig.store.get_session(&session.id).await.unwrap();
    assert_eq!(stored.summary, reverted.summary);
    let mut published = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let BusEvent::SessionDiff { diff, .. } = event {
            published.push(diff.into_iter().map(|diff| FileDiff { patch: None, ..diff }).collect::<Vec<_>>());
        }
    }
    assert_eq!(published, vec![vec![diff("notes.txt", 1, 0, FileStatus::Modified)]]);

    // The end of the run claimed the day's snapshot housekeeping pass.
    rig.runtime.settle().await;
    let stamp = std::fs::read_to_string(&stamp_files[0]).unwrap();
    assert!(stamp.trim().parse::<u64>().unwrap() > 1000, "the pass was not claimed: {stamp}");
}

#[tokio::test]
async fn spec_13_without_snapshots_there_is_no_summary() {
    let rig = rig(Setup::new(scripted(TWO_TURNS))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    rig.runtime.prompt(&session.id, say("write two files")).await.unwrap();
    let messages = history(&rig.store, &session.id).await;
    assert_eq!(user_diffs(&messages[0]), None);
    assert_eq!(rig.store.get_session(&session.id).await.unwrap().summary, None);
}
