//! Test databases, fixtures and the macro that runs a case on both backends.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rust_decimal::Decimal;
use session_core::{
    AssistantMessage, AssistantTime, CreatedTime, Entropy, IdGenerator, JsonObject, Message, MessageId,
    MessagePath, ModelRef, Part, PartId, PartKind, PartTime, ReasoningPart, SessionId, StepFinishPart,
    TextPart, TokenUsage, ToolPart, ToolState, UserMessage,
};
use session_store::{
    Clock, DatabaseConfig, NewSession, PgConfig, Session, SqliteConfig, Store, StoreOptions, SystemClock,
};
use sqlx::AssertSqlSafe;

/// Where PostgreSQL tests connect unless `SESSION_TEST_PG_URL` says otherwise.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The PostgreSQL server the tests use.
pub fn pg_url() -> String {
    std::env::var("SESSION_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned())
}

/// The backend of a test database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// A database of one test: a SQLite file in a fresh folder, or a PostgreSQL schema of its own.
#[derive(Debug)]
pub struct TestDb {
    pub kind: Kind,
    dir: PathBuf,
    schema: String,
}

impl TestDb {
    pub async fn new(kind: Kind, name: &str) -> Self {
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("session-store-{name}-{pid}"));
        let mut schema = format!("st_{name}_{pid}").to_lowercase();
        schema.truncate(63);
        let db = Self { kind, dir, schema };
        match kind {
            Kind::Sqlite => {
                let _ = std::fs::remove_dir_all(&db.dir);
                std::fs::create_dir_all(&db.dir).unwrap();
            }
            Kind::Postgres => db.exec(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", db.schema)).await,
        }
        db
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.dir.join("sessions.db")
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    pub fn config(&self) -> DatabaseConfig {
        match self.kind {
            Kind::Sqlite => DatabaseConfig::Sqlite(SqliteConfig::new(self.sqlite_path())),
            Kind::Postgres => {
                let mut config = PgConfig::new(pg_url()).with_schema(self.schema.clone());
                config.max_connections = 6;
                DatabaseConfig::Postgres(config)
            }
        }
    }

    pub async fn open(&self) -> Arc<dyn Store> {
        self.open_with(StoreOptions::default()).await
    }

    pub async fn open_with(&self, options: StoreOptions) -> Arc<dyn Store> {
        session_store::open(&self.config(), options).await.unwrap()
    }

    /// Runs one statement on the test database, beside the store.
    pub async fn exec(&self, sql: &str) {
        match self.kind {
            Kind::Sqlite => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(self.sqlite_path())
                    .create_if_missing(true)
                    .busy_timeout(Duration::from_secs(10));
                let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
                sqlx::query(AssertSqlSafe(sql.to_owned())).execute(&pool).await.unwrap();
                pool.close().await;
            }
            Kind::Postgres => {
                let options: sqlx::postgres::PgConnectOptions = pg_url().parse().unwrap();
                let options = options.options([("search_path", self.schema.as_str())]);
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .unwrap();
                sqlx::query(AssertSqlSafe(sql.to_owned())).execute(&pool).await.unwrap();
                pool.close().await;
            }
        }
    }

    /// Removes the database (a failed test leaves it for inspection).
    pub async fn finish(self) {
        match self.kind {
            Kind::Sqlite => {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            Kind::Postgres => self.exec(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema)).await,
        }
    }
}

/// Runs each named `async fn(&TestDb)` as two tests, `sqlite::NAME` and `postgres::NAME`.
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::suite::support::TestDb::new(
                        crate::suite::support::Kind::Sqlite, stringify!($name)).await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = crate::suite::support::TestDb::new(
                        crate::suite::support::Kind::Postgres, stringify!($name)).await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )+
        }
    };
}
pub(crate) use on_both_backends;

/// A clock the test sets.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn at(ms: u64) -> Arc<Self> {
        Arc::new(Self(AtomicU64::new(ms)))
    }

    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The system clock shifted by an offset: a process that lives later.
#[derive(Debug)]
pub struct ShiftedClock(pub u64);

impl Clock for ShiftedClock {
    fn now_ms(&self) -> u64 {
        SystemClock.now_ms() + self.0
    }
}

/// Options with a clock.
pub fn options_with_clock(clock: Arc<dyn Clock>) -> StoreOptions {
    StoreOptions { clock, ..StoreOptions::default() }
}

struct Lcg(u64);

impl Entropy for Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
}

/// Builds messages and parts of one session with ascending ids.
pub struct Fx {
    pub session: SessionId,
    pub now: u64,
    ids: IdGenerator,
    entropy: Lcg,
}

impl Fx {
    pub fn new(session: &SessionId) -> Self {
        let now = SystemClock.now_ms();
        let seed = session.as_str().bytes().fold(now, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        Self { session: session.clone(), now, ids: IdGenerator::new(), entropy: Lcg(seed) }
    }

    pub fn message_id(&mut self) -> MessageId {
        self.ids.next(self.now, &mut self.entropy)
    }

    pub fn part_id(&mut self) -> PartId {
        self.ids.next(self.now, &mut self.entropy)
    }

    pub fn user(&mut self) -> Message {
        Message::User(UserMessage {
            id: self.message_id(),
            session_id: self.session.clone(),
            time: CreatedTime { created: self.now },
            format: None,
            summary: None,
            agent: "build".into(),
            model: ModelRef { provider_id: "test".into(), model_id: "scripted".into(), variant: None },
            system: None,
            tools: None,
        })
    }

    /// An unfinished assistant message answering `parent`.
    pub fn assistant(&mut self, parent: &MessageId) -> AssistantMessage {
        AssistantMessage {
            id: self.message_id(),
            session_id: self.session.clone(),
            time: AssistantTime { created: self.now, completed: None },
            error: None,
            parent_id: parent.clone(),
            model_id: "scripted".into(),
            provider_id: "test".into(),
            mode: "build".into(),
            agent: "build".into(),
            path: MessagePath { cwd: "/work".into(), root: "/work".into() },
            summary: None,
            cost: Decimal::ZERO,
            tokens: TokenUsage::default(),
            structured: None,
            variant: None,
            finish: None,
        }
    }

    pub fn part(&mut self, message: &MessageId, kind: PartKind) -> Part {
        Part { id: self.part_id(), session_id: self.session.clone(), message_id: message.clone(), kind }
    }

    pub fn text(&mut self, message: &MessageId, text: &str, open: bool) -> Part {
        let end = if open { None } else { Some(self.now) };
        self.part(
            message,
            PartKind::Text(TextPart {
                text: text.into(),
                time: Some(PartTime { start: self.now, end }),
                ..TextPart::default()
            }),
        )
    }

    pub fn reasoning(&mut self, message: &MessageId, text: &str, open: bool) -> Part {
        let end = if open { None } else { Some(self.now) };
        self.part(
            message,
            PartKind::Reasoning(ReasoningPart {
                text: text.into(),
                metadata: None,
                time: PartTime { start: self.now, end },
            }),
        )
    }

    pub fn tool(&mut self, message: &MessageId, call: &str, state: ToolState) -> Part {
        self.part(
            message,
            PartKind::Tool(ToolPart { call_id: call.into(), tool: "bash".into(), state, metadata: None }),
        )
    }

    pub fn step_finish(&mut self, message: &MessageId, cost: Decimal) -> Part {
        self.part(
            message,
            PartKind::StepFinish(StepFinishPart {
                reason: session_core::FinishReason::Stop,
                snapshot: None,
                cost,
                tokens: TokenUsage { total: Some(30), input: 10, output: 20, ..TokenUsage::default() },
            }),
        )
    }
}

/// A running tool state with this input.
pub fn running(input: serde_json::Value, start: u64) -> ToolState {
    let mut state = ToolState::pending();
    state.start(session_core::message::normalize_tool_input(input), start).unwrap();
    state
}

/// A completed tool state.
pub fn completed(input: serde_json::Value, output: &str, start: u64) -> ToolState {
    let mut state = running(input, start);
    state
        .complete(
            session_core::ToolOutput {
                title: "ran".into(),
                output: output.into(),
                metadata: JsonObject::new(),
                attachments: None,
            },
            start + 5,
        )
        .unwrap();
    state
}

/// A new session in `/work` of project `p1`.
pub async fn new_session(store: &dyn Store) -> Session {
    store.create_session(NewSession::new("p1", "/work")).await.unwrap()
}

/// The messages of a history as plain values.
pub fn infos(history: &session_store::SessionHistory) -> Vec<Message> {
    history.messages.iter().map(|m| m.info.clone()).collect()
}

/// Every part of a history in order.
pub fn parts(history: &session_store::SessionHistory) -> Vec<Part> {
    history.messages.iter().flat_map(|m| m.parts.iter().cloned()).collect()
}
