//! A database of an older schema opens, migrates and keeps its data: one made by the first
//! migration alone, with rows written as that version wrote them.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use session_core::{Message, MessageWithParts, Part};
use session_store::{RevertPoint, Session, SessionTime, SessionTokens, WriteBatch};
use sqlx::AssertSqlSafe;

use super::support::{Fx, Kind, TestDb, completed, on_both_backends, pg_url};

/// The crate's migration folder of a backend.
fn migrations(kind: Kind) -> PathBuf {
    let backend = match kind {
        Kind::Sqlite => "sqlite",
        Kind::Postgres => "postgres",
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend)
}

/// Creates the test database with the migrations up to `version` only.
async fn migrate_to(db: &TestDb, version: i64) {
    let migrator = sqlx::migrate::Migrator::new(migrations(db.kind)).await.unwrap();
    match db.kind {
        Kind::Sqlite => {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(db.sqlite_path())
                .create_if_missing(true)
                .foreign_keys(true);
            let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
            migrator.run_to(version, &pool).await.unwrap();
            pool.close().await;
        }
        Kind::Postgres => {
            let create = format!("CREATE SCHEMA \"{}\"", db.schema());
            let pool = sqlx::PgPool::connect(&pg_url()).await.unwrap();
            sqlx::query(AssertSqlSafe(create)).execute(&pool).await.unwrap();
            pool.close().await;
            let options: sqlx::postgres::PgConnectOptions = pg_url().parse().unwrap();
            let options = options.options([("search_path", db.schema())]);
            let pool = sqlx::PgPool::connect_with(options).await.unwrap();
            migrator.run_to(version, &pool).await.unwrap();
            pool.close().await;
        }
    }
}

/// A SQL string literal.
fn text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn money(value: Option<String>) -> String {
    value.map_or_else(|| "NULL".to_owned(), |cost| text(&cost))
}

fn a_session(id: &str, now: u64) -> Session {
    Session {
        id: session_core::SessionId::new_unchecked(id),
        slug: String::new(),
        project_id: "p1".into(),
        directory: "/work".into(),
        path: None,
        parent_id: None,
        summary: None,
        cost: Decimal::ZERO,
        tokens: SessionTokens::default(),
        title: format!("session {id}"),
        agent: None,
        model: None,
        version: "0.1.0".into(),
        time: SessionTime { created: now, updated: now, compacting: None, archived: None },
        permission: Vec::new(),
        revert: None,
        extra: serde_json::Map::new(),
    }
}

/// A session row as the first schema's version wrote it: its document has no slug and no
/// totals.
async fn insert_session(db: &TestDb, session: &Session) {
    let mut document = serde_json::to_value(session).unwrap();
    if let Some(fields) = document.as_object_mut() {
        for newer in ["slug", "cost", "tokens"] {
            fields.remove(newer);
        }
    }
    db.exec(&format!(
        "INSERT INTO sessions (id, project_id, directory, title, time_created, time_updated, data) \
         VALUES ({}, 'p1', '/work', {}, {}, {}, {})",
        text(session.id.as_str()),
        text(&session.title),
        session.time.created,
        session.time.updated,
        text(&document.to_string())
    ))
    .await;
}

async fn insert_message(db: &TestDb, message: &Message, open: bool) {
    let (role, cost) = match message {
        Message::User(_) => ("user", None),
        Message::Assistant(m) => ("assistant", Some(m.cost.to_string())),
    };
    db.exec(&format!(
        "INSERT INTO messages (id, session_id, role, open, cost, data) VALUES ({}, {}, '{role}', {open}, {}, {})",
        text(message.id().as_str()),
        text(message.session_id().as_str()),
        money(cost),
        text(&serde_json::to_string(message).unwrap())
    ))
    .await;
}

/// A part row as the first schema's version wrote it, with the session id it was given.
async fn insert_part(db: &TestDb, part: &Part, session_id: &str, open: bool) {
    let cost = match &part.kind {
        session_core::PartKind::StepFinish(step) => Some(step.cost.to_string()),
        _ => None,
    };
    db.exec(&format!(
        "INSERT INTO parts (id, session_id, message_id, type, open, cost, data) \
         VALUES ({}, {}, {}, {}, {open}, {}, {})",
        text(part.id.as_str()),
        text(session_id),
        text(part.message_id.as_str()),
        text(part.kind.type_name()),
        money(cost),
        text(&serde_json::to_string(part).unwrap())
    ))
    .await;
}

async fn a_database_of_the_first_schema_migrates_and_keeps_its_data(db: &TestDb) {
    migrate_to(db, 1).await;
    let now = 1_700_000_000_000;
    let (first, second) = (a_session("ses_first", now), a_session("ses_second", now + 1));
    insert_session(db, &first).await;
    insert_session(db, &second).await;

    let mut fx = Fx::new(&first.id);
    let user = fx.user();
    let mut answer = fx.assistant(user.id());
    answer.cost = Decimal::new(5, 2);
    let answer_id = answer.id.clone();
    let answer = Message::Assistant(answer);
    let parts = vec![
        fx.text(&answer_id, "the answer", false),
        fx.reasoning(&answer_id, "still thinking", true),
        fx.tool(&answer_id, "call_1", completed(serde_json::json!({"command": "ls"}), "a\nb", now)),
        fx.step_finish(&answer_id, Decimal::new(5, 2)),
    ];
    insert_message(db, &user, false).await;
    insert_message(db, &answer, true).await;
    for part in &parts {
        insert_part(db, part, first.id.as_str(), is_open(part)).await;
    }

    // The second session's message, with a part that names the first session: the first
    // schema accepted it (unreadable in both sessions); it moves to its message's session.
    let mut other = Fx::new(&second.id);
    let question = other.user();
    let stray = other.text(question.id(), "written with another session's id", false);
    insert_message(db, &question, false).await;
    insert_part(db, &stray, first.id.as_str(), false).await;

    let store = db.open().await;
    let history = store.load_history(&first.id).await.unwrap();
    assert_eq!(
        history.messages,
        vec![
            MessageWithParts { info: user.clone(), parts: Vec::new() },
            MessageWithParts { info: answer.clone(), parts: parts.clone() },
        ]
    );
    assert!(history.skipped.is_empty(), "{:?}", history.skipped);
    let history = store.load_history(&second.id).await.unwrap();
    assert_eq!(
        history.messages,
        vec![MessageWithParts { info: question.clone(), parts: vec![stray.clone()] }]
    );
    // The session reads with the slug its id gives and the totals of its step-finish part.
    let migrated = store.get_session(&first.id).await.unwrap();
    let totals = |s: &Session| (s.cost, s.tokens.input, s.tokens.output);
    assert_eq!(migrated.slug, "first");
    assert_eq!(totals(&migrated), (Decimal::new(5, 2), 10, 20));
    assert_eq!(
        Session { slug: String::new(), cost: Decimal::ZERO, tokens: SessionTokens::default(), ..migrated },
        first
    );
    assert_eq!(totals(&store.get_session(&second.id).await.unwrap()), (Decimal::ZERO, 0, 0));

    // Writes, reverts and deletes work on the migrated tables.
    let late = fx.text(&answer_id, "written after the migration", false);
    store.commit(&WriteBatch::new().part(late.clone())).await.unwrap();
    let point = RevertPoint { message_id: answer_id.clone(), part_id: Some(parts[2].id.clone()) };
    let removed = store.remove_from(&first.id, &point).await.unwrap();
    assert_eq!(removed.parts, vec![parts[2].id.clone(), parts[3].id.clone(), late.id.clone()]);
    let history = store.load_history(&first.id).await.unwrap();
    assert_eq!(history.messages[1].parts, parts[..2].to_vec());
    assert_eq!(totals(&store.get_session(&first.id).await.unwrap()), (Decimal::ZERO, 0, 0));
    store.delete_session(&second.id).await.unwrap();
    store.close().await.unwrap();

    // Reopened: migrated once, nothing lost.
    let store = db.open().await;
    let history = store.load_history(&first.id).await.unwrap();
    assert_eq!(history.messages[1].parts, parts[..2].to_vec());
    store.close().await.unwrap();
}

/// True while a part is unfinished, as the store decides it (for the `open` column).
fn is_open(part: &Part) -> bool {
    match &part.kind {
        session_core::PartKind::Text(text) => text.time.is_some_and(|t| t.end.is_none()),
        session_core::PartKind::Reasoning(reasoning) => reasoning.time.end.is_none(),
        session_core::PartKind::Tool(tool) => tool.state.is_open(),
        _ => false,
    }
}

on_both_backends!(a_database_of_the_first_schema_migrates_and_keeps_its_data);
