//! Sessions: create, get, list with paging, update, delete with everything under it, fork.

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::json;
use session_core::permission::{Action, Rule};
use session_core::{CacheTokens, Message, PartKind, SessionId};
use session_store::{
    AgentModel, EntityKind, ListSessions, NewSession, RevertPoint, RevertRecord, SessionModel, SessionPatch,
    SessionSummary, SessionTokens, StoreError, WriteBatch,
};

use super::support::{
    Fx, ManualClock, TestDb, completed, infos, new_session, on_both_backends, options_with_clock, parts,
};

async fn create_get_update_delete(db: &TestDb) {
    let store = db.open().await;
    let created = store.create_session(NewSession::new("p1", "/work")).await.unwrap();
    assert!(created.title.starts_with("New session - "), "{}", created.title);
    assert!(created.id.as_str().starts_with("ses_"));
    assert_eq!(store.get_session(&created.id).await.unwrap(), created);

    let revert = RevertRecord {
        message_id: session_core::MessageId::new_unchecked("msg_1"),
        part_id: None,
        snapshot: Some("abc".into()),
        diff: None,
    };
    let updated = store
        .update_session(
            &created.id,
            SessionPatch {
                title: Some("Fix the parser".into()),
                summary: Some(Some(SessionSummary { additions: 3, deletions: 1, files: 2, diffs: None })),
                revert: Some(Some(revert.clone())),
                ..SessionPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.title, "Fix the parser");
    assert_eq!(updated.revert, Some(revert));
    assert!(updated.time.updated >= created.time.updated);
    assert_eq!(store.get_session(&created.id).await.unwrap(), updated);

    let cleared = store
        .update_session(&created.id, SessionPatch { revert: Some(None), ..SessionPatch::default() })
        .await
        .unwrap();
    assert_eq!(cleared.revert, None);
    assert_eq!(cleared.summary, updated.summary);

    assert_eq!(store.delete_session(&created.id).await.unwrap(), vec![created.id.clone()]);
    assert!(matches!(
        store.get_session(&created.id).await,
        Err(StoreError::NotFound { kind: EntityKind::Session, .. })
    ));
    assert!(matches!(store.delete_session(&created.id).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(
        store.update_session(&created.id, SessionPatch::default()).await,
        Err(StoreError::NotFound { .. })
    ));
    store.close().await.unwrap();
}

async fn a_taken_id_is_refused(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let again = NewSession { id: Some(session.id.clone()), ..NewSession::new("p1", "/work") };
    assert!(matches!(
        store.create_session(again).await,
        Err(StoreError::AlreadyExists { kind: EntityKind::Session, .. })
    ));
    let orphan = NewSession {
        parent_id: Some(SessionId::new_unchecked("ses_missing")),
        ..NewSession::new("p1", "/w")
    };
    assert!(matches!(store.create_session(orphan).await, Err(StoreError::NotFound { .. })));
    store.close().await.unwrap();
}

async fn lists_page_by_page_newest_first(db: &TestDb) {
    let clock = ManualClock::at(1_000_000);
    let store = db.open_with(options_with_clock(clock.clone())).await;
    let mut made = Vec::new();
    for i in 0..25u64 {
        // Pairs of sessions share an update time, so the id breaks ties.
        clock.set(1_000_000 + (i / 2) * 10);
        let directory = if i % 5 == 0 { "/other" } else { "/work" };
        made.push(store.create_session(NewSession::new("p1", directory)).await.unwrap());
    }
    let child = store
        .create_session(NewSession { parent_id: Some(made[0].id.clone()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    assert!(child.title.starts_with("Child session - "));

    let mut query = ListSessions { limit: 10, ..ListSessions::default() };
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.list_sessions(&query).await.unwrap();
        assert!(page.skipped.is_empty());
        pages += 1;
        seen.extend(page.sessions);
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 26);
    let mut expected: Vec<_> = made.iter().chain([&child]).cloned().collect();
    expected.sort_by(|a, b| b.time.updated.cmp(&a.time.updated).then(a.id.cmp(&b.id)));
    let ids = |list: &[session_store::Session]| list.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&seen), ids(&expected));

    let others = store
        .list_sessions(&ListSessions { directory: Some("/other".into()), ..ListSessions::default() })
        .await
        .unwrap();
    assert_eq!(others.sessions.len(), 5);
    let roots = store
        .list_sessions(&ListSessions { roots_only: true, limit: 100, ..ListSessions::default() })
        .await
        .unwrap();
    assert_eq!(roots.sessions.len(), 25);
    assert!(roots.next.is_none());
    store.close().await.unwrap();
}

async fn message_writes_touch_the_session(db: &TestDb) {
    let clock = ManualClock::at(5_000);
    let store = db.open_with(options_with_clock(clock.clone())).await;
    let session = new_session(store.as_ref()).await;
    assert_eq!(session.time.updated, 5_000);
    clock.set(9_000);
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    store.upsert_message(&user).await.unwrap();
    assert_eq!(store.get_session(&session.id).await.unwrap().time.updated, 9_000);
    // Writing the message again (an update, the trigger's other path) moves it on too...
    clock.set(12_000);
    store.upsert_message(&user).await.unwrap();
    assert_eq!(store.get_session(&session.id).await.unwrap().time.updated, 12_000);
    // ...but never back, and a commit of messages with parts touches it as well.
    clock.set(7_000);
    store.upsert_message(&user).await.unwrap();
    assert_eq!(store.get_session(&session.id).await.unwrap().time.updated, 12_000);
    clock.set(15_000);
    let answer = fx.assistant(user.id());
    let part = fx.text(&answer.id, "an answer", false);
    store.commit(&WriteBatch::new().message(Message::Assistant(answer)).part(part)).await.unwrap();
    assert_eq!(store.get_session(&session.id).await.unwrap().time.updated, 15_000);
    store.close().await.unwrap();
}

async fn delete_takes_children_and_history(db: &TestDb) {
    let store = db.open().await;
    let parent = new_session(store.as_ref()).await;
    let child = store
        .create_session(NewSession { parent_id: Some(parent.id.clone()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    let grandchild = store
        .create_session(NewSession { parent_id: Some(child.id.clone()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    let unrelated = new_session(store.as_ref()).await;
    for session in [&parent, &child, &grandchild, &unrelated] {
        let mut fx = Fx::new(&session.id);
        let user = fx.user();
        let text = fx.text(user.id(), "hello", false);
        store.commit(&WriteBatch::new().message(user).part(text)).await.unwrap();
    }
    let mut deleted = store.delete_session(&parent.id).await.unwrap();
    deleted.sort();
    let mut expected = vec![parent.id.clone(), child.id.clone(), grandchild.id.clone()];
    expected.sort();
    assert_eq!(deleted, expected);
    for gone in &expected {
        assert!(matches!(store.load_history(gone).await, Err(StoreError::NotFound { .. })));
    }
    assert_eq!(store.load_history(&unrelated.id).await.unwrap().messages.len(), 1);
    store.close().await.unwrap();
}

async fn fork_copies_the_messages_before_a_point(db: &TestDb) {
    let store = db.open().await;
    let source = store
        .create_session(NewSession { title: Some("Refactor".into()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    let mut fx = Fx::new(&source.id);
    let mut users = Vec::new();
    for turn in 0..3 {
        let user = fx.user();
        let prompt = fx.text(user.id(), &format!("turn {turn}"), false);
        let mut answer = fx.assistant(user.id());
        answer.cost = Decimal::new(125, 4);
        answer.time.completed = Some(fx.now);
        let tool = fx.tool(&answer.id, &format!("call{turn}"), completed(json!({"cmd": "ls"}), "ok", fx.now));
        let reply = fx.text(&answer.id, &format!("done {turn}"), false);
        users.push(user.id().clone());
        store
            .commit(
                &WriteBatch::new()
                    .message(user)
                    .message(Message::Assistant(answer))
                    .part(prompt)
                    .part(tool)
                    .part(reply),
            )
            .await
            .unwrap();
    }
    let before = store.load_history(&source.id).await.unwrap();

    let fork = store.fork_session(&source.id, Some(&users[1])).await.unwrap();
    assert_eq!(fork.title, "Refactor (fork #1)");
    assert_eq!(fork.parent_id.as_ref(), Some(&source.id));
    assert_eq!(fork.directory, source.directory);
    let copied = store.load_history(&fork.id).await.unwrap();
    assert_eq!(copied.messages.len(), 2, "only the first turn is before the fork point");
    let (user, answer) = (&copied.messages[0], &copied.messages[1]);
    assert_ne!(user.info.id(), before.messages[0].info.id());
    let Message::Assistant(answer_info) = &answer.info else { panic!("second message is the answer") };
    assert_eq!(&answer_info.parent_id, user.info.id(), "the answer points at the copied prompt");
    assert_eq!(answer_info.cost, Decimal::new(125, 4));
    assert_eq!(answer.parts.len(), 2);
    for part in parts(&copied) {
        assert_eq!(part.session_id, fork.id);
        assert!(before.messages.iter().flat_map(|m| &m.parts).all(|old| old.id != part.id));
    }
    // The kinds and contents are the same apart from ids.
    let strip = |list: Vec<session_core::Part>| list.into_iter().map(|p| p.kind).collect::<Vec<_>>();
    assert_eq!(
        strip(parts(&copied)),
        strip(before.messages[..2].iter().flat_map(|m| m.parts.clone()).collect())
    );

    let whole = store.fork_session(&fork.id, None).await.unwrap();
    assert_eq!(whole.title, "Refactor (fork #2)");
    assert_eq!(store.load_history(&whole.id).await.unwrap().messages.len(), 2);

    assert_eq!(store.load_history(&source.id).await.unwrap(), before, "the source is unchanged");
    let missing = session_core::MessageId::new_unchecked("msg_nope");
    assert!(matches!(
        store.fork_session(&source.id, Some(&missing)).await,
        Err(StoreError::NotFound { kind: EntityKind::Message, .. })
    ));
    assert_eq!(infos(&store.load_history(&source.id).await.unwrap()).len(), 6);
    store.close().await.unwrap();
}

/// SPEC 12 step 3: a generated title replaces only the default one, checked where it is written.
async fn spec_12_3_a_generated_title_never_replaces_a_given_one(db: &TestDb) {
    let store = db.open().await;
    let generated = |title: &str| SessionPatch {
        title: Some(title.into()),
        title_only_if_default: true,
        ..SessionPatch::default()
    };
    let fresh = store.create_session(NewSession::new("p1", "/work")).await.unwrap();
    assert!(fresh.has_default_title());
    let titled = store.update_session(&fresh.id, generated("Fix the parser")).await.unwrap();
    assert_eq!(titled.title, "Fix the parser");
    assert!(!titled.has_default_title());
    // Once titled, a second generated title (a race, or a later run) changes nothing.
    let again = store.update_session(&fresh.id, generated("Something else")).await.unwrap();
    assert_eq!(again.title, "Fix the parser");

    let given = store
        .create_session(NewSession { title: Some("My title".into()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    assert!(!given.has_default_title());
    assert_eq!(store.update_session(&given.id, generated("Generated")).await.unwrap().title, "My title");
    // A rename is a plain title change, and after it the generated title stays out too.
    let renamed = store
        .update_session(&fresh.id, SessionPatch { title: Some("Renamed".into()), ..SessionPatch::default() })
        .await
        .unwrap();
    assert_eq!(renamed.title, "Renamed");
    assert_eq!(store.update_session(&fresh.id, generated("Generated")).await.unwrap().title, "Renamed");
    let empty = store
        .create_session(NewSession { title: Some(String::new()), ..NewSession::new("p1", "/work") })
        .await
        .unwrap();
    assert_eq!(store.update_session(&empty.id, generated("Filled")).await.unwrap().title, "Filled");
}

#[test]
fn session_json_uses_opencode_names() {
    let session = session_store::Session {
        id: SessionId::new_unchecked("ses_1"),
        slug: "brisk-heron".into(),
        project_id: "p1".into(),
        directory: "/work".into(),
        path: Some("sub".into()),
        parent_id: Some(SessionId::new_unchecked("ses_0")),
        summary: Some(SessionSummary { additions: 1, deletions: 2, files: 3, diffs: None }),
        cost: Decimal::new(105, 4),
        tokens: SessionTokens { input: 1, output: 2, reasoning: 3, cache: CacheTokens { read: 4, write: 5 } },
        title: "T".into(),
        agent: Some("build".into()),
        model: Some(SessionModel {
            id: "m".into(),
            provider_id: "p".into(),
            variant: Some("default".into()),
        }),
        version: "0.1.0".into(),
        time: session_store::SessionTime { created: 1, updated: 2, compacting: None, archived: None },
        permission: vec![Rule::new("question", "*", Action::Deny)],
        revert: Some(RevertRecord {
            message_id: session_core::MessageId::new_unchecked("msg_1"),
            part_id: Some(session_core::PartId::new_unchecked("prt_1")),
            snapshot: None,
            diff: None,
        }),
        extra: serde_json::Map::new(),
    };
    assert_eq!(
        serde_json::to_value(&session).unwrap(),
        json!({"id": "ses_1", "slug": "brisk-heron", "projectID": "p1", "directory": "/work", "path": "sub",
               "parentID": "ses_0", "summary": {"additions": 1, "deletions": 2, "files": 3}, "cost": 0.0105,
               "tokens": {"input": 1, "output": 2, "reasoning": 3, "cache": {"read": 4, "write": 5}},
               "title": "T", "agent": "build", "model": {"id": "m", "providerID": "p", "variant": "default"},
               "version": "0.1.0", "time": {"created": 1, "updated": 2},
               "permission": [{"permission": "question", "pattern": "*", "action": "deny"}],
               "revert": {"messageID": "msg_1", "partID": "prt_1"}})
    );
    // OpenCode's own record reads whole: the fields this version types, and the rest (share,
    // metadata) kept as they were.
    let foreign = json!({"id": "ses_2", "slug": "calm-fox", "projectID": "p", "directory": "/", "path": "",
                         "cost": 0.5, "tokens": {"input": 9, "output": 8, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                         "title": "x", "agent": "plan", "model": {"id": "m", "providerID": "p"},
                         "version": "1.18.34", "share": {"url": "https://x"}, "metadata": {"k": 1},
                         "time": {"created": 1, "updated": 1}});
    let read: session_store::Session = serde_json::from_value(foreign.clone()).unwrap();
    assert_eq!(read.slug, "calm-fox");
    assert_eq!(read.cost, Decimal::new(5, 1));
    assert_eq!(read.agent.as_deref(), Some("plan"));
    assert_eq!(serde_json::to_value(&read).unwrap(), foreign);
}

/// A new session gets a slug of two words, its folder's path, agent and model as created,
/// and totals of zero.
async fn a_new_session_has_a_slug_and_zero_totals(db: &TestDb) {
    let store = db.open().await;
    let model = SessionModel { id: "m".into(), provider_id: "p".into(), variant: None };
    let created = store
        .create_session(NewSession {
            path: Some(String::new()),
            agent: Some("plan".into()),
            model: Some(model.clone()),
            ..NewSession::new("p1", "/work")
        })
        .await
        .unwrap();
    assert_eq!(created.slug.split('-').count(), 2, "{}", created.slug);
    assert_eq!((created.cost, created.tokens), (Decimal::ZERO, SessionTokens::default()));
    let read = store.get_session(&created.id).await.unwrap();
    assert_eq!(read, created);
    assert_eq!(read.path.as_deref(), Some(""));
    assert_eq!(read.model, Some(model));
    store.close().await.unwrap();
}

/// A prompt's agent and model are written when they change, dated by the prompt; the same
/// pair again (a missing variant being `default`) writes nothing.
async fn the_agent_and_model_change_with_a_prompt(db: &TestDb) {
    let clock = ManualClock::at(1_000);
    let store = db.open_with(options_with_clock(clock.clone())).await;
    let session = new_session(store.as_ref()).await;
    let named = |agent: &str, variant: Option<&str>, time: u64| SessionPatch {
        agent_model: Some(AgentModel {
            agent: agent.into(),
            model: SessionModel {
                id: "m".into(),
                provider_id: "p".into(),
                variant: variant.map(str::to_owned),
            },
            time,
        }),
        ..SessionPatch::default()
    };
    clock.set(5_000);
    let first = store.update_session(&session.id, named("build", Some("default"), 4_000)).await.unwrap();
    assert_eq!(first.agent.as_deref(), Some("build"));
    assert_eq!(first.time.updated, 4_000);
    clock.set(9_000);
    let same = store.update_session(&session.id, named("build", None, 8_000)).await.unwrap();
    assert_eq!(same, first, "the same agent and model write nothing");
    let other = store.update_session(&session.id, named("plan", None, 8_500)).await.unwrap();
    assert_eq!((other.agent.as_deref(), other.time.updated), (Some("plan"), 8_500));
    assert_eq!(store.get_session(&session.id).await.unwrap(), other);
    store.close().await.unwrap();
}

/// The totals are the sums of the session's step-finish parts: each written part adds its
/// own, a part written again replaces what it added, and a revert takes back what it removes.
async fn totals_follow_the_step_finish_parts(db: &TestDb) {
    let store = db.open().await;
    let session = new_session(store.as_ref()).await;
    let mut fx = Fx::new(&session.id);
    let user = fx.user();
    let answer = fx.assistant(user.id());
    let answer_id = answer.id.clone();
    let first = fx.step_finish(&answer_id, Decimal::new(105, 4));
    let second = fx.step_finish(&answer_id, Decimal::new(2, 3));
    let batch =
        WriteBatch::new().message(user.clone()).message(Message::Assistant(answer)).part(first.clone());
    store.commit(&batch).await.unwrap();
    store.commit(&WriteBatch::new().part(second.clone())).await.unwrap();
    let totals = |s: &session_store::Session| (s.cost, s.tokens.input, s.tokens.output);
    let read = store.get_session(&session.id).await.unwrap();
    assert_eq!(totals(&read), (Decimal::new(125, 4), 20, 40));
    // The same part again, with other numbers, replaces its own share.
    let mut again = second.clone();
    if let PartKind::StepFinish(step) = &mut again.kind {
        step.cost = Decimal::new(3, 3);
        step.tokens.input = 1;
    }
    store.upsert_part(&again).await.unwrap();
    let read = store.get_session(&session.id).await.unwrap();
    assert_eq!(totals(&read), (Decimal::new(135, 4), 11, 40));
    // The list carries them too.
    let listed = store.list_sessions(&ListSessions::default()).await.unwrap();
    assert_eq!(listed.sessions.iter().find(|s| s.id == session.id).map(totals), Some(totals(&read)));
    // A fork adds up what it copies; a revert takes back what it removes.
    let fork = store.fork_session(&session.id, None).await.unwrap();
    assert_eq!(totals(&fork), totals(&read));
    assert_eq!(totals(&store.get_session(&fork.id).await.unwrap()), totals(&read));
    let point = RevertPoint { message_id: answer_id.clone(), part_id: Some(second.id.clone()) };
    store.remove_from(&session.id, &point).await.unwrap();
    let read = store.get_session(&session.id).await.unwrap();
    assert_eq!(totals(&read), (Decimal::new(105, 4), 10, 20));
    // An export carries them; an import sums the parts it stores, whatever the record says.
    let mut document = store.export_session(&session.id).await.unwrap();
    assert_eq!(totals(&document.info), totals(&read));
    store.delete_session(&session.id).await.unwrap();
    document.info.cost = Decimal::new(99, 0);
    let imported = store.import_session(&document).await.unwrap();
    assert_eq!(totals(&imported), totals(&read));
    assert_eq!(totals(&store.get_session(&session.id).await.unwrap()), totals(&read));
    store.close().await.unwrap();
}

on_both_backends!(
    a_new_session_has_a_slug_and_zero_totals,
    the_agent_and_model_change_with_a_prompt,
    totals_follow_the_step_finish_parts,
    create_get_update_delete,
    a_taken_id_is_refused,
    lists_page_by_page_newest_first,
    message_writes_touch_the_session,
    delete_takes_children_and_history,
    fork_copies_the_messages_before_a_point,
    spec_12_3_a_generated_title_never_replaces_a_given_one,
);
