//! Many sessions written at once, through several stores on one database (as several
//! processes or instances would), with bounded pools: all complete, nothing is lost, and no
//! write fails with `database is locked`.

use std::sync::Arc;
use std::time::Instant;

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::json;
use session_core::{Message, PartKind, PartTime, SessionId, TextPart, ToolState};
use session_store::{NewSession, PartDelta, Store, StoreOptions, WriteBatch};
use tokio::task::JoinSet;

use super::support::{Fx, Kind, TestDb, completed, new_session, on_both_backends, parts, running};

const SESSIONS: usize = 200;
const STEPS: usize = 3;
const DELTAS: usize = 20;

/// One session's run: a prompt, then steps of text streamed by deltas, a tool call through its
/// states, and a step-finish committed with the message totals.
async fn run_session(store: Arc<dyn Store>, index: usize) -> SessionId {
    let session = store.create_session(NewSession::new("p1", format!("/work/{index}"))).await.unwrap();
    store.acquire_lease(&session.id).await.unwrap();
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let prompt = fx.text(user.id(), &format!("prompt {index}"), false);
    store.commit(&WriteBatch::new().message(user.clone()).part(prompt)).await.unwrap();
    for step in 0..STEPS {
        let mut answer = fx.assistant(user.id());
        store.upsert_message(&Message::Assistant(answer.clone())).await.unwrap();
        let mut text = fx.text(&answer.id, "", true);
        store.upsert_part(&text).await.unwrap();
        let mut full = String::new();
        for chunk in 0..DELTAS {
            let delta = format!("s{step}c{chunk} ");
            full.push_str(&delta);
            store
                .append_delta(PartDelta {
                    session_id: session.id.clone(),
                    message_id: answer.id.clone(),
                    part_id: text.id.clone(),
                    field: "text".into(),
                    delta,
                })
                .await
                .unwrap();
            if chunk % 5 == 0 {
                tokio::task::yield_now().await;
            }
        }
        text.kind = PartKind::Text(TextPart {
            text: full,
            time: Some(PartTime { start: fx.now, end: Some(fx.now + 1) }),
            ..TextPart::default()
        });
        store.upsert_part(&text).await.unwrap();
        let mut tool = fx.tool(&answer.id, &format!("call{step}"), ToolState::pending());
        store.upsert_part(&tool).await.unwrap();
        if let PartKind::Tool(t) = &mut tool.kind {
            t.state = running(json!({"i": index}), fx.now);
        }
        store.upsert_part(&tool).await.unwrap();
        if let PartKind::Tool(t) = &mut tool.kind {
            t.state = completed(json!({"i": index}), "done", fx.now);
        }
        store.upsert_part(&tool).await.unwrap();
        answer.cost = Decimal::new(1, 3);
        answer.time.completed = Some(fx.now + 2);
        let finish = fx.step_finish(&answer.id, Decimal::new(1, 3));
        store.commit(&WriteBatch::new().message(Message::Assistant(answer)).part(finish)).await.unwrap();
    }
    store.release_lease(&session.id).await.unwrap();
    session.id
}

async fn two_hundred_sessions_at_once(db: &TestDb) {
    // Several stores share the database, as several processes (SQLite) or instances
    // (PostgreSQL) would; PostgreSQL pools stay small (the server allows 100 connections).
    let instances = match db.kind {
        Kind::Sqlite => 4,
        Kind::Postgres => 3,
    };
    let mut stores = Vec::new();
    for _ in 0..instances {
        stores.push(db.open_with(StoreOptions::default()).await);
    }
    let started = Instant::now();
    let mut runs = JoinSet::new();
    for index in 0..SESSIONS {
        let store = Arc::clone(&stores[index % instances]);
        runs.spawn(run_session(store, index));
    }
    let mut sessions = Vec::new();
    while let Some(done) = runs.join_next().await {
        sessions.push(done.unwrap());
    }
    eprintln!("{:?}: {SESSIONS} sessions written in {:?}", db.kind, started.elapsed());
    assert_eq!(sessions.len(), SESSIONS);

    let reader = &stores[0];
    for session in &sessions {
        let history = reader.load_history(session).await.unwrap();
        assert!(history.skipped.is_empty());
        assert_eq!(history.messages.len(), 1 + STEPS);
        for (step, message) in history.messages[1..].iter().enumerate() {
            let Message::Assistant(info) = &message.info else { panic!("assistant expected") };
            assert_eq!(info.cost, Decimal::new(1, 3));
            assert_eq!(message.parts.len(), 3, "text, tool and step-finish");
            let PartKind::Text(text) = &message.parts[0].kind else { panic!("text first") };
            let expected: String = (0..DELTAS).map(|c| format!("s{step}c{c} ")).collect();
            assert_eq!(text.text, expected);
            assert!(
                message.parts[1]
                    .as_tool()
                    .is_some_and(|t| t.state.status() == session_core::ToolStatus::Completed)
            );
        }
        assert_eq!(reader.lease(session).await.unwrap(), None);
    }
    for store in stores {
        store.close().await.unwrap();
    }
}

/// Sixteen sessions upserting parts at once, each awaiting its write, as the runtime does: the
/// writer commits them in groups (fewer commits than writes), every write lands, and a write
/// that fails (a part of a message that does not exist) fails alone, its group's other writes
/// still committed.
async fn grouped_writes_all_land_and_a_failure_stays_alone(db: &TestDb) {
    const WRITERS: usize = 16;
    const PARTS: usize = 20;
    let store = db.open().await;
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let session = new_session(store.as_ref()).await;
        let mut fx = Fx::new(&session.id);
        let user = fx.user();
        let answer = fx.assistant(user.id());
        store
            .commit(&WriteBatch::new().message(user).message(Message::Assistant(answer.clone())))
            .await
            .unwrap();
        writers.push((session.id, fx, answer.id));
    }
    let before = store.stats();
    let mut runs = JoinSet::new();
    for (index, (session, mut fx, message)) in writers.into_iter().enumerate() {
        let store = Arc::clone(&store);
        runs.spawn(async move {
            let mut written = Vec::new();
            let mut failed = 0;
            for step in 0..PARTS {
                // Every fourth writer sends every fifth part to a message that does not exist.
                let orphan = index % 4 == 0 && step % 5 == 0;
                let target = if orphan { fx.message_id() } else { message.clone() };
                let part = fx.text(&target, &format!("w{index} p{step}"), false);
                match store.upsert_part(&part).await {
                    Ok(()) => {
                        assert!(!orphan, "a part of a missing message was accepted");
                        written.push(part);
                    }
                    Err(error) => {
                        assert!(orphan, "a valid write failed: {error}");
                        failed += 1;
                    }
                }
            }
            (session, written, failed)
        });
    }
    let mut landed = 0;
    let mut failures = 0;
    while let Some(done) = runs.join_next().await {
        let (session, written, failed) = done.unwrap();
        assert_eq!(parts(&store.load_history(&session).await.unwrap()), written);
        landed += written.len();
        failures += failed;
    }
    assert_eq!(failures, WRITERS / 4 * PARTS / 5);
    assert_eq!(landed, WRITERS * PARTS - failures);
    let stats = store.stats();
    assert_eq!(stats.rows_written - before.rows_written, landed as u64);
    assert!(
        stats.commits - before.commits < landed as u64,
        "no two writes shared a commit: {before:?} -> {stats:?}"
    );
    store.close().await.unwrap();
}

on_both_backends!(two_hundred_sessions_at_once, grouped_writes_all_land_and_a_failure_stays_alone);
