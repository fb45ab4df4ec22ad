//! Text and reasoning deltas: coalesced, flushed within the interval and at part end.

use std::time::Duration;

use pretty_assertions::assert_eq;
use session_core::{Message, Part, PartKind, PartTime};
use session_store::{PartDelta, StoreError, StoreOptions, WriteBatch};

use super::support::{Fx, TestDb, new_session, on_both_backends, parts};

fn delta(part: &Part, text: &str) -> PartDelta {
    PartDelta {
        session_id: part.session_id.clone(),
        message_id: part.message_id.clone(),
        part_id: part.id.clone(),
        field: "text".into(),
        delta: text.into(),
    }
}

fn text_of(part: &Part) -> &str {
    match &part.kind {
        PartKind::Text(text) => &text.text,
        PartKind::Reasoning(reasoning) => &reasoning.text,
        _ => "",
    }
}

const INTERVAL: Duration = Duration::from_millis(100);

fn options() -> StoreOptions {
    StoreOptions { flush_interval: INTERVAL, ..StoreOptions::default() }
}

async fn deltas_are_coalesced_and_flushed_within_the_interval(db: &TestDb) {
    let store = db.open_with(options()).await;
    // A second store on the same database sees only what is durable.
    let observer = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let text = fx.text(&answer.id, "", true);
    store
        .commit(&WriteBatch::new().message(user).message(Message::Assistant(answer)).part(text.clone()))
        .await
        .unwrap();
    let written = store.stats().rows_written;
    for _ in 0..1000 {
        store.append_delta(delta(&text, "x")).await.unwrap();
    }
    tokio::time::sleep(INTERVAL * 4).await;
    let durable = parts(&observer.load_history(&session.id).await.unwrap());
    assert_eq!(text_of(&durable[0]).len(), 1000, "the buffer was flushed without a part end");
    let stats = store.stats();
    assert_eq!(stats.deltas, 1000);
    assert!(stats.delta_flushes >= 1 && stats.delta_flushes <= 10, "{stats:?}");
    assert!(stats.rows_written - written <= 10, "deltas are not written one by one: {stats:?}");
    store.close().await.unwrap();
    observer.close().await.unwrap();
}

async fn the_part_end_replaces_the_buffer(db: &TestDb) {
    let store = db.open_with(options()).await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let mut reasoning = fx.reasoning(&answer.id, "", true);
    store
        .commit(&WriteBatch::new().message(user).message(Message::Assistant(answer)).part(reasoning.clone()))
        .await
        .unwrap();
    for chunk in ["let ", "me ", "think"] {
        store.append_delta(delta(&reasoning, chunk)).await.unwrap();
    }
    // The processor's end upsert carries the whole text.
    reasoning.kind = PartKind::Reasoning(session_core::ReasoningPart {
        text: "let me think".into(),
        metadata: None,
        time: PartTime { start: fx.now, end: Some(fx.now + 1) },
    });
    // A late delta queued right behind the end (one writer group) is dropped: the part is
    // not reopened by a stale copy.
    let (ended, late) =
        tokio::join!(store.upsert_part(&reasoning), store.append_delta(delta(&reasoning, " more")));
    ended.unwrap();
    late.unwrap();
    // And one sent after the end was committed too.
    store.append_delta(delta(&reasoning, " more")).await.unwrap();
    tokio::time::sleep(INTERVAL * 3).await;
    assert_eq!(parts(&store.load_history(&session.id).await.unwrap()), vec![reasoning]);
    store.close().await.unwrap();
}

async fn reads_see_buffered_deltas(db: &TestDb) {
    // A long interval: only the read's own flush can make the text visible.
    let store = db
        .open_with(StoreOptions { flush_interval: Duration::from_secs(60), ..StoreOptions::default() })
        .await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let text = fx.text(user.id(), "", true);
    store.commit(&WriteBatch::new().message(user).part(text.clone())).await.unwrap();
    store.append_delta(delta(&text, "hello ")).await.unwrap();
    store.append_delta(delta(&text, "world")).await.unwrap();
    let history = store.load_history(&session.id).await.unwrap();
    assert_eq!(text_of(&history.messages[0].parts[0]), "hello world");
    assert!(matches!(
        store.append_delta(PartDelta { field: "title".into(), ..delta(&text, "x") }).await,
        Err(StoreError::UnsupportedDelta { .. })
    ));
    store.close().await.unwrap();
}

async fn a_part_written_by_another_store_can_stream(db: &TestDb) {
    let first = db.open().await;
    let second = db.open_with(options()).await;
    let session = new_session(first.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let text = fx.text(user.id(), "start ", true);
    first.commit(&WriteBatch::new().message(user).part(text.clone())).await.unwrap();
    second.append_delta(delta(&text, "and more")).await.unwrap();
    second.flush().await.unwrap();
    let history = first.load_history(&session.id).await.unwrap();
    assert_eq!(text_of(&history.messages[0].parts[0]), "start and more");
    first.close().await.unwrap();
    second.close().await.unwrap();
}

async fn closing_writes_the_buffer(db: &TestDb) {
    let store = db
        .open_with(StoreOptions { flush_interval: Duration::from_secs(60), ..StoreOptions::default() })
        .await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let text = fx.text(user.id(), "", true);
    store.commit(&WriteBatch::new().message(user).part(text.clone())).await.unwrap();
    store.append_delta(delta(&text, "kept")).await.unwrap();
    store.close().await.unwrap();
    assert!(matches!(store.flush().await, Err(StoreError::Closed)));
    let reopened = db.open().await;
    assert_eq!(text_of(&parts(&reopened.load_history(&session.id).await.unwrap())[0]), "kept");
    reopened.close().await.unwrap();
}

on_both_backends!(
    deltas_are_coalesced_and_flushed_within_the_interval,
    the_part_end_replaces_the_buffer,
    reads_see_buffered_deltas,
    a_part_written_by_another_store_can_stream,
    closing_writes_the_buffer,
);
