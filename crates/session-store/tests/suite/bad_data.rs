//! Rows whose JSON no longer parses are reported with their ids and skipped; the rest loads.

use pretty_assertions::assert_eq;
use session_core::{Message, ToolState};
use session_store::{EntityKind, ListSessions, StoreError, StoreOptions, WriteBatch};

use super::support::{Fx, TestDb, new_session, on_both_backends};

async fn unreadable_rows_are_skipped_and_reported(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let first = fx.user();
    let first_text = fx.text(first.id(), "fine", false);
    let broken = fx.user();
    let broken_text = fx.text(broken.id(), "under a broken message", false);
    let last = fx.user();
    let good = fx.text(last.id(), "still here", false);
    let bad_part = fx.text(last.id(), "to be broken", false);
    let bad_shape = fx.step_finish(last.id(), rust_decimal::Decimal::ONE);
    store
        .commit(
            &WriteBatch::new()
                .message(first.clone())
                .message(broken.clone())
                .message(last.clone())
                .part(first_text.clone())
                .part(broken_text.clone())
                .part(good.clone())
                .part(bad_part.clone())
                .part(bad_shape.clone()),
        )
        .await
        .unwrap();
    db.exec(&format!(
        "UPDATE messages SET data = '{{\"role\": \"user\", \"id\": ' WHERE id = '{}'",
        broken.id()
    ))
    .await;
    db.exec(&format!(
        "UPDATE parts SET data = '{{\"type\": \"text\", \"text\": 5}}' WHERE id = '{}'",
        bad_part.id
    ))
    .await;
    db.exec(&format!(
        "UPDATE parts SET cost = NULL, data = '{{\"type\": \"step-finish\"}}' WHERE id = '{}'",
        bad_shape.id
    ))
    .await;

    let history = store.load_history(&session.id).await.unwrap();
    let ids: Vec<_> = history.messages.iter().map(|m| m.info.id().clone()).collect();
    assert_eq!(ids, vec![first.id().clone(), last.id().clone()]);
    assert_eq!(history.messages[0].parts, vec![first_text]);
    assert_eq!(history.messages[1].parts, vec![good]);
    let mut skipped: Vec<(EntityKind, String, Option<String>)> =
        history.skipped.iter().map(|s| (s.kind, s.id.clone(), s.message_id.clone())).collect();
    skipped.sort_by(|a, b| a.1.cmp(&b.1));
    let mut expected = vec![
        (EntityKind::Message, broken.id().to_string(), None),
        (EntityKind::Part, broken_text.id.to_string(), Some(broken.id().to_string())),
        (EntityKind::Part, bad_part.id.to_string(), Some(last.id().to_string())),
        (EntityKind::Part, bad_shape.id.to_string(), Some(last.id().to_string())),
    ];
    expected.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(skipped, expected);
    assert!(history.skipped.iter().all(|s| s.session_id == session.id.as_str() && !s.reason.is_empty()));
    // The rows are kept, not deleted: export still works on what reads.
    assert_eq!(store.export_session(&session.id).await.unwrap().messages.len(), 2);
    store.close().await.unwrap();
}

async fn an_unreadable_session_is_reported(db: &TestDb) {
    let store = db.open().await;
    let fine = new_session(store.as_ref()).await;
    let broken = new_session(store.as_ref()).await;
    db.exec(&format!("UPDATE sessions SET data = 'not json' WHERE id = '{}'", broken.id)).await;
    assert!(matches!(
        store.get_session(&broken.id).await,
        Err(StoreError::Corrupt { kind: EntityKind::Session, .. })
    ));
    let page = store.list_sessions(&ListSessions::default()).await.unwrap();
    assert_eq!(page.sessions, vec![fine]);
    assert_eq!(page.skipped.len(), 1);
    assert_eq!(page.skipped[0].id, broken.id.as_str());
    store.close().await.unwrap();
}

async fn recovery_survives_unreadable_open_rows(db: &TestDb) {
    let dead = db.open_with(StoreOptions { owner: Some("dead".into()), ..StoreOptions::default() }).await;
    let session = new_session(dead.as_ref()).await;
    dead.acquire_lease(&session.id).await.unwrap();
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let tool = fx.tool(&answer.id, "c1", ToolState::pending());
    let other = fx.tool(&answer.id, "c2", ToolState::pending());
    dead.commit(
        &WriteBatch::new().message(user).message(Message::Assistant(answer)).part(tool.clone()).part(other),
    )
    .await
    .unwrap();
    drop(dead);
    db.exec(&format!("UPDATE parts SET data = '{{garbage' WHERE id = '{}'", tool.id)).await;
    let survivor = db
        .open_with(StoreOptions {
            clock: std::sync::Arc::new(super::support::ShiftedClock(3_600_000)),
            ..StoreOptions::default()
        })
        .await;
    let history = survivor.load_history(&session.id).await.unwrap();
    assert_eq!(history.skipped.len(), 1);
    let parts = &history.messages[1].parts;
    assert_eq!(parts.len(), 1);
    assert!(parts[0].as_tool().is_some_and(|t| t.state.is_interrupted()));
    survivor.close().await.unwrap();
}

on_both_backends!(
    unreadable_rows_are_skipped_and_reported,
    an_unreadable_session_is_reported,
    recovery_survives_unreadable_open_rows,
);
