//! Messages and parts: upserts, order, exact money, atomic batches, revert cleanup.

use std::str::FromStr;

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::json;
use session_core::{Message, MessageId, MessageWithParts, PartKind, SessionId, ToolState};
use session_store::{EntityKind, RevertPoint, RevertRecord, SessionPatch, StoreError, WriteBatch};

use super::support::{Fx, TestDb, completed, new_session, on_both_backends, parts, running};

async fn history_loads_in_id_order(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let p1 = fx.text(user.id(), "one", false);
    let p2 = fx.text(user.id(), "two", false);
    let a1 = fx.reasoning(&answer.id, "thinking", false);
    let a2 = fx.text(&answer.id, "reply", false);
    // Written newest first.
    store.upsert_message(&Message::Assistant(answer.clone())).await.unwrap();
    store.upsert_message(&user).await.unwrap();
    for part in [&a2, &p2, &a1, &p1] {
        store.upsert_part(part).await.unwrap();
    }
    let history = store.load_history(&session.id).await.unwrap();
    assert_eq!(
        history.messages,
        vec![
            MessageWithParts { info: user, parts: vec![p1, p2] },
            MessageWithParts { info: Message::Assistant(answer), parts: vec![a1, a2] },
        ]
    );
    assert!(history.unknown_parts.is_empty() && history.skipped.is_empty());
    store.close().await.unwrap();
}

async fn upserts_replace_a_tool_through_its_states(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    store.commit(&WriteBatch::new().message(user).message(Message::Assistant(answer.clone()))).await.unwrap();
    let mut tool = fx.tool(&answer.id, "call_1", ToolState::pending());
    store.upsert_part(&tool).await.unwrap();
    tool.kind = fx.tool(&answer.id, "call_1", running(json!({"cmd": "ls"}), 10)).kind;
    store.upsert_part(&tool).await.unwrap();
    tool.kind = fx.tool(&answer.id, "call_1", completed(json!({"cmd": "ls"}), "a\nb", 10)).kind;
    store.upsert_part(&tool).await.unwrap();
    assert_eq!(parts(&store.load_history(&session.id).await.unwrap()), vec![tool.clone()]);

    // A part id stays with its message.
    let other = fx.user();
    store.upsert_message(&other).await.unwrap();
    let mut moved = tool.clone();
    moved.message_id = other.id().clone();
    assert!(matches!(
        store.upsert_part(&moved).await,
        Err(StoreError::AlreadyExists { kind: EntityKind::Part, .. })
    ));
    store.close().await.unwrap();
}

async fn money_is_exact(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let mut answer = fx.assistant(user.id());
    // More digits than an f64 holds.
    let cost = Decimal::from_str("0.1234567890123456789012345").unwrap();
    answer.cost = cost;
    let step = fx.step_finish(&answer.id, Decimal::from_str("0.0000000000000000000000001").unwrap());
    store
        .commit(&WriteBatch::new().message(user).message(Message::Assistant(answer)).part(step.clone()))
        .await
        .unwrap();
    let history = store.load_history(&session.id).await.unwrap();
    let Message::Assistant(read) = &history.messages[1].info else { panic!("assistant expected") };
    assert_eq!(read.cost.to_string(), "0.1234567890123456789012345");
    assert_eq!(history.messages[1].parts, vec![step]);
    store.close().await.unwrap();
}

async fn a_batch_is_all_or_nothing(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    store
        .commit(&WriteBatch::new().message(user.clone()).message(Message::Assistant(answer.clone())))
        .await
        .unwrap();

    // The step-finish part and the message totals it changes, with a part whose message is missing.
    let mut totals = answer.clone();
    totals.cost = Decimal::new(5, 2);
    let step = fx.step_finish(&answer.id, Decimal::new(5, 2));
    let stray = fx.text(&MessageId::new_unchecked("msg_missing"), "lost", false);
    let result = store
        .commit(&WriteBatch::new().message(Message::Assistant(totals.clone())).part(step.clone()).part(stray))
        .await;
    assert!(matches!(result, Err(StoreError::MissingParent { kind: EntityKind::Part, .. })), "{result:?}");
    let history = store.load_history(&session.id).await.unwrap();
    assert_eq!(history.messages[1].info, Message::Assistant(answer.clone()), "totals were not written");
    assert!(history.messages[1].parts.is_empty(), "the step part was not written");

    store
        .commit(&WriteBatch::new().message(Message::Assistant(totals.clone())).part(step.clone()))
        .await
        .unwrap();
    let history = store.load_history(&session.id).await.unwrap();
    assert_eq!(history.messages[1], MessageWithParts { info: Message::Assistant(totals), parts: vec![step] });

    // Writing into a session that does not exist.
    let mut elsewhere = Fx::new(&SessionId::new_unchecked("ses_nowhere"));
    assert!(matches!(
        store.upsert_message(&elsewhere.user()).await,
        Err(StoreError::MissingParent { kind: EntityKind::Message, .. })
    ));
    store.close().await.unwrap();
}

async fn revert_cleanup_removes_what_follows(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let mut messages = Vec::new();
    for turn in 0..3 {
        let user = fx.user();
        let a = fx.text(user.id(), &format!("t{turn} a"), false);
        let b = fx.text(user.id(), &format!("t{turn} b"), false);
        let c = fx.text(user.id(), &format!("t{turn} c"), false);
        store.commit(&WriteBatch::new().message(user.clone()).part(a).part(b).part(c)).await.unwrap();
        messages.push(user);
    }
    let before = store.load_history(&session.id).await.unwrap();

    // Inside a message: its parts from the point on go, and every later message.
    let second = &before.messages[1];
    let point =
        RevertPoint { message_id: second.info.id().clone(), part_id: Some(second.parts[1].id.clone()) };
    store
        .update_session(
            &session.id,
            SessionPatch {
                revert: Some(Some(RevertRecord {
                    message_id: point.message_id.clone(),
                    part_id: point.part_id.clone(),
                    snapshot: None,
                    diff: None,
                })),
                ..SessionPatch::default()
            },
        )
        .await
        .unwrap();
    let removed = store.remove_from(&session.id, &point).await.unwrap();
    assert_eq!(removed.parts, vec![second.parts[1].id.clone(), second.parts[2].id.clone()]);
    assert_eq!(removed.messages, vec![before.messages[2].info.id().clone()]);
    let after = store.load_history(&session.id).await.unwrap();
    assert_eq!(after.messages.len(), 2);
    assert_eq!(after.messages[1].parts, vec![second.parts[0].clone()]);
    assert_eq!(
        store.get_session(&session.id).await.unwrap().revert,
        None,
        "cleanup clears the revert record"
    );

    // At a message: it goes with everything after it.
    let point = RevertPoint { message_id: before.messages[1].info.id().clone(), part_id: None };
    let removed = store.remove_from(&session.id, &point).await.unwrap();
    assert_eq!(removed.messages, vec![before.messages[1].info.id().clone()]);
    assert_eq!(store.load_history(&session.id).await.unwrap().messages, before.messages[..1].to_vec());
    store.close().await.unwrap();
}

async fn every_part_kind_round_trips(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let kinds: Vec<PartKind> = serde_json::from_value(json!([
        {"type": "file", "mime": "image/png", "url": "data:image/png;base64,AA==", "filename": "a.png"},
        {"type": "step-start", "snapshot": "h1"},
        {"type": "snapshot", "snapshot": "h2"},
        {"type": "patch", "hash": "h1", "files": ["/work/a.rs"]},
        {"type": "agent", "name": "plan"},
        {"type": "subtask", "prompt": "p", "description": "d", "agent": "general"},
        {"type": "retry", "attempt": 1, "error": {"name": "UnknownError", "data": {"message": "x"}}, "time": {"created": 5}},
        {"type": "compaction", "auto": true, "tail_start_id": "msg_0"},
        {"type": "text", "text": "with \u{0000} nul and ünïcode"},
    ]))
    .unwrap();
    let mut batch = WriteBatch::new().message(user).message(Message::Assistant(answer.clone()));
    for kind in kinds {
        batch = batch.part(fx.part(&answer.id, kind));
    }
    store.commit(&batch).await.unwrap();
    assert_eq!(store.load_history(&session.id).await.unwrap().messages[1].parts, batch.parts);
    store.close().await.unwrap();
}

async fn a_history_tail_is_the_newest_messages_and_the_count_of_all(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let first = fx.assistant(user.id());
    let second = fx.assistant(user.id());
    let u1 = fx.text(user.id(), "question", false);
    let f1 = fx.text(&first.id, "first", false);
    let s1 = fx.text(&second.id, "second", false);
    store
        .commit(
            &WriteBatch::new()
                .message(user.clone())
                .message(Message::Assistant(first.clone()))
                .message(Message::Assistant(second.clone()))
                .part(u1)
                .part(f1.clone())
                .part(s1.clone()),
        )
        .await
        .unwrap();
    let tail = store.load_history_tail(&session.id, &first.id).await.unwrap();
    assert_eq!(
        tail.history.messages,
        vec![
            MessageWithParts { info: Message::Assistant(first), parts: vec![f1] },
            MessageWithParts { info: Message::Assistant(second), parts: vec![s1] },
        ]
    );
    assert_eq!(tail.total_messages, 3, "the count is of the whole session");
    // The whole history is the tail from its first message.
    let whole = store.load_history_tail(&session.id, user.id()).await.unwrap();
    assert_eq!(whole.history, store.load_history(&session.id).await.unwrap());
    // A tail from past the newest message is empty but still counts every message.
    let past = MessageId::new_unchecked("msg_zzzzzzzzzzzzzzzzzzzzzzzzzz");
    let empty = store.load_history_tail(&session.id, &past).await.unwrap();
    assert!(empty.history.messages.is_empty());
    assert_eq!(empty.total_messages, 3);
    assert!(matches!(
        store.load_history_tail(&SessionId::new_unchecked("ses_nosuchsession"), &past).await,
        Err(StoreError::NotFound { .. })
    ));
    store.close().await.unwrap();
}

on_both_backends!(
    a_history_tail_is_the_newest_messages_and_the_count_of_all,
    history_loads_in_id_order,
    upserts_replace_a_tool_through_its_states,
    money_is_exact,
    a_batch_is_all_or_nothing,
    revert_cleanup_removes_what_follows,
    every_part_kind_round_trips,
);
