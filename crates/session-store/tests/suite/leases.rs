//! Ownership by lease, the heartbeat, and crash recovery of expired leases.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use session_core::{Message, MessageError, PartKind, SessionId, ToolState, message::TOOL_ABORTED_TEXT};
use session_store::{PartDelta, StoreError, StoreOptions, WriteBatch};

use super::support::{Fx, ShiftedClock, TestDb, completed, new_session, on_both_backends, parts, running};

/// Options of a process that lives `ms` later than this one.
fn later(ms: u64) -> StoreOptions {
    StoreOptions { clock: Arc::new(ShiftedClock(ms)), ..StoreOptions::default() }
}

async fn a_live_lease_keeps_others_out(db: &TestDb) {
    let first = db.open_with(StoreOptions { owner: Some("first".into()), ..StoreOptions::default() }).await;
    let second = db.open_with(StoreOptions { owner: Some("second".into()), ..StoreOptions::default() }).await;
    let session = new_session(first.as_ref()).await;
    assert_eq!(first.lease(&session.id).await.unwrap(), None, "a new session is idle");
    let lease = first.acquire_lease(&session.id).await.unwrap();
    assert_eq!(lease.owner, "first");
    match second.acquire_lease(&session.id).await {
        Err(StoreError::Leased { owner, expires_at, .. }) => {
            assert_eq!(owner, "first");
            assert_eq!(expires_at, lease.expires_at);
        }
        other => panic!("expected Leased, got {other:?}"),
    }
    assert_eq!(second.lease(&session.id).await.unwrap().map(|l| l.owner), Some("first".into()));
    // Taking it again renews it.
    assert!(first.acquire_lease(&session.id).await.unwrap().expires_at >= lease.expires_at);
    first.release_lease(&session.id).await.unwrap();
    assert_eq!(second.acquire_lease(&session.id).await.unwrap().owner, "second");
    // Closing a store gives its leases up.
    second.close().await.unwrap();
    assert_eq!(first.lease(&session.id).await.unwrap(), None);
    assert!(matches!(
        first.acquire_lease(&SessionId::new_unchecked("ses_none")).await,
        Err(StoreError::NotFound { .. })
    ));
    first.close().await.unwrap();
}

async fn the_heartbeat_renews_a_lease(db: &TestDb) {
    let ttl = Duration::from_millis(300);
    let holder = db
        .open_with(StoreOptions { lease_ttl: ttl, owner: Some("holder".into()), ..StoreOptions::default() })
        .await;
    let other = db.open().await;
    let session = new_session(holder.as_ref()).await;
    let first = holder.acquire_lease(&session.id).await.unwrap();
    tokio::time::sleep(ttl * 3).await;
    let renewed = other.lease(&session.id).await.unwrap().expect("still leased");
    assert!(renewed.expires_at > first.expires_at, "{renewed:?} vs {first:?}");
    assert!(matches!(other.acquire_lease(&session.id).await, Err(StoreError::Leased { .. })));
    holder.close().await.unwrap();
    other.close().await.unwrap();
}

async fn recovery_closes_what_a_dead_run_left_open(db: &TestDb) {
    let dead = db.open_with(StoreOptions { owner: Some("dead".into()), ..StoreOptions::default() }).await;
    let session = new_session(dead.as_ref()).await;
    dead.acquire_lease(&session.id).await.unwrap();
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let prompt = fx.text(user.id(), "run ls", false);
    let thinking = fx.reasoning(&answer.id, "hmm", true);
    let pending = fx.tool(&answer.id, "c1", ToolState::pending());
    let mut running_state = running(json!({"cmd": "sleep 9"}), fx.now);
    running_state.update_progress(Some("sleeping".into()), None, fx.now).unwrap();
    let busy = fx.tool(&answer.id, "c2", running_state);
    let done = fx.tool(&answer.id, "c3", completed(json!({"cmd": "ls"}), "a", fx.now));
    let reply = fx.text(&answer.id, "Working", true);
    dead.commit(
        &WriteBatch::new()
            .message(user.clone())
            .message(Message::Assistant(answer.clone()))
            .part(prompt.clone())
            .part(thinking.clone())
            .part(pending.clone())
            .part(busy.clone())
            .part(done.clone())
            .part(reply.clone()),
    )
    .await
    .unwrap();
    dead.append_delta(PartDelta {
        session_id: session.id.clone(),
        message_id: answer.id.clone(),
        part_id: reply.id.clone(),
        field: "text".into(),
        delta: " on it".into(),
    })
    .await
    .unwrap();
    dead.flush().await.unwrap();

    // A process that is alive at the same time leaves the session alone.
    let live = db.open().await;
    assert!(live.recover_expired().await.unwrap().sessions.is_empty());
    assert!(matches!(live.acquire_lease(&session.id).await, Err(StoreError::Leased { .. })));
    live.close().await.unwrap();

    // The process dies: no close, no release; its heartbeat stops with it.
    drop(dead);
    let survivor = db.open_with(later(10 * 60 * 1000)).await;
    assert_eq!(survivor.lease(&session.id).await.unwrap(), None, "recovery on open made the session idle");
    let history = survivor.load_history(&session.id).await.unwrap();
    let Message::Assistant(info) = &history.messages[1].info else { panic!("assistant expected") };
    assert!(info.time.completed.is_some());
    assert_eq!(info.error, Some(MessageError::aborted()));
    let recovered = parts(&history);
    assert_eq!(recovered[0], prompt);
    for part in &recovered {
        match &part.kind {
            PartKind::Tool(_) if part.id == done.id => assert_eq!(part, &done),
            PartKind::Tool(tool) => {
                let ToolState::Error { error, metadata, input, title, .. } = &tool.state else {
                    panic!("tool left open: {part:?}")
                };
                assert_eq!(error, TOOL_ABORTED_TEXT);
                assert_eq!(metadata.as_ref().and_then(|m| m.get("interrupted")), Some(&json!(true)));
                if part.id == busy.id {
                    assert_eq!(input.get("cmd"), Some(&json!("sleep 9")));
                    assert_eq!(title.as_deref(), Some("sleeping"));
                }
            }
            PartKind::Text(text) => assert!(text.time.is_some_and(|t| t.end.is_some())),
            PartKind::Reasoning(reasoning) => assert!(reasoning.time.end.is_some()),
            _ => {}
        }
    }
    let PartKind::Text(text) = &recovered.last().unwrap().kind else { panic!("text expected") };
    assert_eq!(text.text, "Working on it", "the flushed delta survived");
    // Recovery happens once.
    assert!(survivor.recover_expired().await.unwrap().sessions.is_empty());
    survivor.close().await.unwrap();
}

async fn taking_over_a_dead_run_recovers_it(db: &TestDb) {
    let dead = db.open_with(StoreOptions { owner: Some("dead".into()), ..StoreOptions::default() }).await;
    let session = new_session(dead.as_ref()).await;
    dead.acquire_lease(&session.id).await.unwrap();
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let tool = fx.tool(&answer.id, "c1", ToolState::pending());
    dead.commit(&WriteBatch::new().message(user).message(Message::Assistant(answer)).part(tool))
        .await
        .unwrap();
    drop(dead);
    let next = db.open_with(StoreOptions { recover_on_open: false, ..later(10 * 60 * 1000) }).await;
    let lease = next.acquire_lease(&session.id).await.unwrap();
    assert_eq!(lease.owner, next.owner());
    let history = next.load_history(&session.id).await.unwrap();
    let tool = parts(&history).into_iter().find_map(|p| match p.kind {
        PartKind::Tool(tool) => Some(tool),
        _ => None,
    });
    assert!(tool.is_some_and(|t| t.state.is_interrupted()));
    next.close().await.unwrap();
}

on_both_backends!(
    a_live_lease_keeps_others_out,
    the_heartbeat_renews_a_lease,
    recovery_closes_what_a_dead_run_left_open,
    taking_over_a_dead_run_recovers_it,
);

/// PostgreSQL only: SQLite has one writer at a time, so no row lock can be held beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_heartbeat_skips_a_row_a_writer_holds_and_renews_it_at_the_next_beat() {
    use sqlx::Connection as _;
    let db = TestDb::new(super::support::Kind::Postgres, "heartbeat_skips_locked").await;
    let ttl = Duration::from_millis(600);
    let holder = db
        .open_with(StoreOptions { lease_ttl: ttl, owner: Some("holder".into()), ..StoreOptions::default() })
        .await;
    let locked = new_session(holder.as_ref()).await;
    let free = new_session(holder.as_ref()).await;
    holder.acquire_lease(&locked.id).await.unwrap();
    holder.acquire_lease(&free.id).await.unwrap();

    // Another transaction holds the row of `locked`, as a writer's would.
    let options: sqlx::postgres::PgConnectOptions = super::support::pg_url().parse().unwrap();
    let options = options.options([("search_path", db.schema())]);
    let mut writer = sqlx::PgConnection::connect_with(&options).await.unwrap();
    // `Store::lease` reads for update, which would wait on the held row: read it plainly.
    let mut reader = sqlx::PgConnection::connect_with(&options).await.unwrap();
    let mut expiry = async |id: &SessionId| -> i64 {
        sqlx::query_scalar("SELECT lease_expires FROM sessions WHERE id = $1")
            .bind(id.as_str())
            .fetch_one(&mut reader)
            .await
            .unwrap()
    };
    let mut transaction = writer.begin().await.unwrap();
    sqlx::query("SELECT id FROM sessions WHERE id = $1 FOR UPDATE")
        .bind(locked.id.as_str())
        .execute(&mut *transaction)
        .await
        .unwrap();
    let held = expiry(&locked.id).await;
    let free_before = expiry(&free.id).await;
    // Two beats (a third of the lease each) while the row is held.
    tokio::time::sleep(ttl).await;
    assert!(expiry(&free.id).await > free_before, "the free row is renewed");
    assert_eq!(expiry(&locked.id).await, held, "the held row is skipped, not waited for");

    transaction.commit().await.unwrap();
    tokio::time::sleep(ttl / 2).await;
    assert!(expiry(&locked.id).await > held, "renewed at the next beat once free");
    holder.close().await.unwrap();
    reader.close().await.unwrap();
    writer.close().await.unwrap();
    db.finish().await;
}
