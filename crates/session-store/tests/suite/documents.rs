//! Export and import of a whole session as one versioned JSON document.

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::json;
use session_core::{Message, ToolState};
use session_store::{DOCUMENT_VERSION, DocumentPart, EntityKind, SessionDocument, StoreError, WriteBatch};

use super::support::{Fx, TestDb, completed, new_session, on_both_backends};

async fn export_then_import_gives_the_same_session(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let prompt = fx.text(user.id(), "list files", false);
    let mut answer = fx.assistant(user.id());
    answer.cost = Decimal::new(42, 4);
    answer.time.completed = Some(fx.now + 9);
    let thinking = fx.reasoning(&answer.id, "ls it is", false);
    let tool = fx.tool(&answer.id, "c1", completed(json!({"cmd": "ls"}), "a.rs\nb.rs", fx.now));
    let step = fx.step_finish(&answer.id, Decimal::new(42, 4));
    store
        .commit(
            &WriteBatch::new()
                .message(user)
                .message(Message::Assistant(answer))
                .part(prompt)
                .part(thinking)
                .part(tool)
                .part(step),
        )
        .await
        .unwrap();
    let exported = store.export_session(&session.id).await.unwrap();
    assert_eq!(exported.version, DOCUMENT_VERSION);
    assert_eq!(exported.messages.len(), 2);

    // Through text, as a user would move it between machines.
    let text = serde_json::to_string_pretty(&exported).unwrap();
    let read: SessionDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(read, exported);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["version"], json!(1));

    store.delete_session(&session.id).await.unwrap();
    let imported = store.import_session(&read).await.unwrap();
    assert_eq!(imported, exported.info);
    assert_eq!(store.export_session(&session.id).await.unwrap(), exported);
    assert!(matches!(
        store.import_session(&read).await,
        Err(StoreError::AlreadyExists { kind: EntityKind::Session, .. })
    ));
    store.close().await.unwrap();
}

async fn unknown_part_kinds_are_kept(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let known = fx.tool(user.id(), "c1", ToolState::pending());
    let raw_id = fx.part_id();
    let raw = json!({"id": raw_id, "sessionID": session.id, "messageID": user.id(), "type": "hologram",
                     "depth": {"layers": [1, 2, 3]}});
    let document = SessionDocument {
        version: 1,
        info: session.clone(),
        messages: vec![session_store::DocumentMessage {
            info: user.clone(),
            parts: vec![DocumentPart::from(known.clone()), DocumentPart::Raw(raw.clone())],
        }],
    };
    store.delete_session(&session.id).await.unwrap();
    store.import_session(&document).await.unwrap();
    let history = store.load_history(&session.id).await.unwrap();
    assert_eq!(history.messages[0].parts, vec![known]);
    assert_eq!(history.unknown_parts.len(), 1);
    assert_eq!(history.unknown_parts[0].part_type, "hologram");
    assert_eq!(history.unknown_parts[0].json, raw);
    assert_eq!(store.export_session(&session.id).await.unwrap(), document);
    // A fork keeps it too, under new ids.
    let fork = store.fork_session(&session.id, None).await.unwrap();
    let forked = store.load_history(&fork.id).await.unwrap();
    assert_eq!(forked.unknown_parts[0].json["depth"], raw["depth"]);
    assert_eq!(forked.unknown_parts[0].json["sessionID"], json!(fork.id));
    store.close().await.unwrap();
}

async fn bad_documents_are_refused(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    store.upsert_message(&user).await.unwrap();
    let mut document = store.export_session(&session.id).await.unwrap();
    store.delete_session(&session.id).await.unwrap();

    document.version = DOCUMENT_VERSION + 1;
    assert!(matches!(
        store.import_session(&document).await,
        Err(StoreError::UnsupportedVersion { found: 2, supported: 1 })
    ));
    document.version = 1;
    let mut stranger = Fx::new(&session_core::SessionId::new_unchecked("ses_other"));
    document.messages.push(session_store::DocumentMessage { info: stranger.user(), parts: Vec::new() });
    assert!(matches!(store.import_session(&document).await, Err(StoreError::InvalidDocument(_))));
    document.messages.pop();
    document.messages[0].parts.push(DocumentPart::Raw(json!({"no": "id"})));
    assert!(matches!(store.import_session(&document).await, Err(StoreError::InvalidDocument(_))));
    // Nothing of the refused documents was written.
    assert!(matches!(store.get_session(&session.id).await, Err(StoreError::NotFound { .. })));
    store.close().await.unwrap();
}

#[test]
fn opencode_exports_without_a_version_read_as_version_one() {
    let document: SessionDocument = serde_json::from_value(json!({
        "info": {"id": "ses_1", "projectID": "p", "directory": "/", "title": "t", "version": "1.15.12",
                 "time": {"created": 1, "updated": 2}},
        "messages": [{
            "info": {"id": "msg_1", "sessionID": "ses_1", "role": "user", "time": {"created": 1}, "agent": "build",
                     "model": {"providerID": "p", "modelID": "m"}},
            "parts": [{"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "text", "text": "hi"}]
        }]
    }))
    .unwrap();
    assert_eq!(document.version, 1);
    assert!(matches!(document.messages[0].parts[0], DocumentPart::Known(_)));
}

on_both_backends!(
    export_then_import_gives_the_same_session,
    unknown_part_kinds_are_kept,
    bad_documents_are_refused,
);
