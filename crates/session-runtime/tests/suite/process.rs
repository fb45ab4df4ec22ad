//! One run per session across processes, through the store's lease; and a process killed
//! mid-step whose session a new process picks up.
//!
//! The SIGKILL test re-executes itself, in this test binary, as its own child: with an
//! environment variable set on the child's command only, the same test runs the child's part
//! instead. That costs no extra binary to build or link, unlike an `[[example]]`, and the
//! child runs the very same rig as the parent.

use std::io::BufRead as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use session_core::{FinishReason, LlmEvent, Message, MessageError, PartKind, ToolState};
use session_runtime::{BusEvent, RuntimeError};
use session_store::StoreOptions;
use session_testkit::TestServer;

use super::support::{Hanging, Setup, eventually, history, http, rig_at, say, script, scripted};

fn ev(value: serde_json::Value) -> LlmEvent {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn a_second_runtime_over_the_same_database_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let hanging = Arc::new(Hanging(vec![ev(json!({"type": "step-start", "index": 0}))]));
    let first = Arc::new(rig_at(dir.path(), Setup::new(hanging)).await);
    let session = first.runtime.create_session(None).await.unwrap();
    let runner = {
        let first = first.clone();
        let id = session.id.clone();
        tokio::spawn(async move { first.runtime.prompt(&id, say("hang")).await })
    };
    let store = first.store.clone();
    let id = session.id.clone();
    // The lease is taken before the user message, the assistant message comes after it.
    eventually("the first run's assistant message", async || history(&store, &id).await.len() == 2).await;
    assert!(store.lease(&id).await.unwrap().is_some());

    // Another runtime with its own store over the same file: another process, as far as the
    // lease is concerned.
    let second = rig_at(dir.path(), Setup::new(scripted(r#"{"turns": [{"text": "Mine now."}]}"#))).await;
    let refused = second.runtime.prompt(&session.id, say("me too")).await;
    let error = refused.expect_err("refused while the first runs");
    assert!(
        matches!(&error, RuntimeError::LeasedElsewhere { owner, .. } if owner == first.store.owner()),
        "{error:?}"
    );
    assert!(error.to_string().contains("running in another process"), "{error}");
    assert_eq!(history(&second.store, &session.id).await.len(), 2, "nothing written by the refused prompt");

    assert!(first.runtime.cancel(&session.id));
    runner.await.unwrap().unwrap();
    let reply = second.runtime.prompt(&session.id, say("me too")).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop), "{reply:?}");
}

/// Set on the child's command only: the directory the child runs in.
const CHILD_DIR: &str = "SESSION_RUNTIME_SIGKILL_CHILD_DIR";

fn short_lease() -> StoreOptions {
    StoreOptions { lease_ttl: Duration::from_millis(600), ..StoreOptions::default() }
}

/// The child's part of the SIGKILL test: starts a prompt whose provider hangs mid-step with a
/// tool running, prints `READY <session id>` and waits to be killed.
async fn sigkill_child(dir: std::ffi::OsString) {
    let hanging = Arc::new(Hanging(vec![
        ev(json!({"type": "step-start", "index": 0})),
        ev(json!({"type": "text-start", "id": "t"})),
        ev(json!({"type": "text-delta", "id": "t", "text": "Let me wait "})),
        ev(json!({"type": "tool-input-start", "id": "b1", "name": "bash"})),
        ev(
            json!({"type": "tool-call", "id": "b1", "name": "bash", "input": {"command": "sleep 10", "description": "wait"}}),
        ),
    ]));
    let mut setup = Setup::new(hanging);
    setup.store = short_lease();
    let rig = Arc::new(rig_at(std::path::Path::new(&dir), setup).await);
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    let runner = {
        let rig = rig.clone();
        let id = session.id.clone();
        tokio::spawn(async move { rig.runtime.prompt(&id, say("wait for it")).await })
    };
    while let Ok(event) = events.recv().await {
        if let BusEvent::PartUpdated { part } = &event
            && let PartKind::Tool(tool) = &part.kind
            && matches!(tool.state, ToolState::Running { .. })
        {
            break;
        }
    }
    rig.store.flush().await.unwrap();
    println!("READY {}", session.id);
    let _ = runner.await;
}

#[tokio::test]
async fn sigkill_mid_step_then_a_new_process_continues_the_session() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        return sigkill_child(dir).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::process::sigkill_mid_step_then_a_new_process_continues_the_session",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // The line may begin with libtest's "test ... " prefix.
    let ready = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.find("READY ").map(|at| line[at + "READY ".len()..].trim().to_owned()))
    });
    // A safety net only: the child is normally ready in well under a second.
    let ready = tokio::time::timeout(Duration::from_secs(60), ready).await;
    child.kill().unwrap(); // SIGKILL: no cleanup runs in the child
    child.wait().unwrap();
    let session_id = ready.expect("the child got ready").unwrap().expect("the child printed its session");
    let session_id: session_core::SessionId = serde_json::from_value(json!(session_id)).unwrap();

    let server =
        TestServer::start(script(r#"{"turns": [{"text": "unused"}, {"text": "Picked up again."}]}"#))
            .await
            .unwrap();
    let mut setup = Setup::new(http(&server));
    setup.store = short_lease();
    setup.seed_files = false;
    let rig = rig_at(dir.path(), setup).await;
    // The dead run's lease expires; recovery then closes what it left open.
    let store = rig.store.clone();
    let id = session_id.clone();
    eventually("the dead run's recovery", async || {
        store.recover_expired().await.unwrap();
        store.lease(&id).await.unwrap().is_none()
            && history(&store, &id)
                .await
                .iter()
                .any(|m| matches!(&m.info, Message::Assistant(a) if a.time.completed.is_some()))
    })
    .await;
    let messages = history(&rig.store, &session_id).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    let Message::Assistant(killed) = &messages[1].info else { panic!("{messages:?}") };
    assert!(matches!(killed.error, Some(MessageError::MessageAbortedError { .. })), "{killed:?}");
    let tool = messages[1]
        .parts
        .iter()
        .find_map(|p| match &p.kind {
            PartKind::Tool(tool) => Some(tool.clone()),
            _ => None,
        })
        .expect("the tool part");
    assert!(tool.state.is_interrupted(), "{:?}", tool.state);

    let reply = rig.runtime.prompt(&session_id, say("go on")).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop), "{reply:?}");
    assert!(reply.error.is_none());
    assert_eq!(server.requests().len(), 1);
    server.assert_invariants();
    server.shutdown().await;
}
