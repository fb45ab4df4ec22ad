//! Store benchmarks: part upserts per second on each backend (one writer awaiting each write,
//! and 16 sessions writing at once), and the time to load a 10,000-part session.
//!
//! PostgreSQL is measured at `SESSION_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`) in a schema of its own; when no server answers,
//! its benchmarks are skipped.

#![expect(
    missing_docs,
    clippy::unwrap_used,
    reason = "a benchmark fails loudly on a broken setup, and criterion's macros make undocumented items"
)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rust_decimal::Decimal;
use serde_json::json;
use session_core::{
    AssistantMessage, AssistantTime, CompletedTime, Entropy, IdGenerator, JsonObject, Message, MessageId,
    MessagePath, Part, PartKind, PartTime, ReasoningPart, SessionId, TextPart, TokenUsage, ToolPart,
    ToolState, UserMessage,
};
use session_store::{
    DatabaseConfig, NewSession, PgConfig, SqliteConfig, Store, StoreOptions, WriteBatch, open,
};
use tokio::runtime::Runtime;

const LOAD_PARTS: usize = 10_000;
const WRITERS: usize = 16;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

struct Xorshift(u64);

impl Entropy for Xorshift {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Ids for one session's parts.
struct Ids(IdGenerator, Xorshift);

static SEEDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Ids {
    /// A generator whose random tails differ from every other one's.
    fn new(seed: u64) -> Self {
        let unique =
            SEEDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Self(IdGenerator::new(), Xorshift((seed ^ unique) | 1))
    }

    fn next<T: session_core::Identifier>(&mut self) -> T {
        self.0.next(now_ms(), &mut self.1)
    }
}

/// A part the processor would write: text, reasoning or a finished tool call.
fn part(ids: &mut Ids, session: &SessionId, message: &MessageId, index: usize) -> Part {
    let now = now_ms();
    let kind = match index % 3 {
        0 => PartKind::Text(TextPart {
            text: "The function parses the header, then walks the entries and checks each offset. ".repeat(3),
            time: Some(PartTime { start: now, end: Some(now + 40) }),
            ..TextPart::default()
        }),
        1 => PartKind::Reasoning(ReasoningPart {
            text: "The user wants the parser fixed; read the file first.".into(),
            metadata: None,
            time: PartTime { start: now, end: Some(now + 10) },
        }),
        _ => {
            let mut input = JsonObject::new();
            input.insert("filePath".into(), json!("/work/src/parser.rs"));
            PartKind::Tool(ToolPart {
                call_id: format!("call_{index}"),
                tool: "read".into(),
                state: ToolState::Completed {
                    input,
                    output: "fn parse(input: &str) -> Result<Header, Error> {\n    todo!()\n}\n".repeat(4),
                    title: "src/parser.rs".into(),
                    metadata: JsonObject::new(),
                    time: CompletedTime { start: now, end: now + 3, compacted: None },
                    attachments: None,
                },
                metadata: None,
            })
        }
    };
    Part { id: ids.next(), session_id: session.clone(), message_id: message.clone(), kind }
}

/// A session with a user message and an assistant message to hang parts on.
async fn session(store: &dyn Store, ids: &mut Ids) -> (SessionId, MessageId) {
    let session = store.create_session(NewSession::new("bench", "/work")).await.unwrap().id;
    let user: MessageId = ids.next();
    let answer: MessageId = ids.next();
    let now = now_ms();
    let user_message = Message::User(UserMessage {
        id: user.clone(),
        session_id: session.clone(),
        time: session_core::CreatedTime { created: now },
        format: None,
        summary: None,
        agent: "build".into(),
        model: session_core::ModelRef { provider_id: "p".into(), model_id: "m".into(), variant: None },
        system: None,
        tools: None,
    });
    let assistant = Message::Assistant(AssistantMessage {
        id: answer.clone(),
        session_id: session.clone(),
        time: AssistantTime { created: now, completed: Some(now) },
        error: None,
        parent_id: user,
        model_id: "m".into(),
        provider_id: "p".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/work".into(), root: "/work".into() },
        summary: None,
        cost: Decimal::new(12, 3),
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    });
    store.commit(&WriteBatch::new().message(user_message).message(assistant)).await.unwrap();
    (session, answer)
}

struct Backend {
    name: &'static str,
    store: Arc<dyn Store>,
    /// What to remove afterwards: the SQLite folder or the PostgreSQL schema.
    cleanup: Cleanup,
}

enum Cleanup {
    Folder(std::path::PathBuf),
    Schema(PgConfig),
}

async fn clean(cleanup: Cleanup) {
    match cleanup {
        Cleanup::Folder(dir) => {
            let _ = std::fs::remove_dir_all(dir);
        }
        Cleanup::Schema(config) => {
            let Some(schema) = config.schema else { return };
            if let Ok(pool) = sqlx::PgPool::connect(&config.url).await {
                let drop = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
                let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&pool).await;
                pool.close().await;
            }
        }
    }
}

fn backends(runtime: &Runtime) -> Vec<Backend> {
    let dir = std::env::temp_dir().join(format!("session-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sqlite = DatabaseConfig::Sqlite(SqliteConfig::new(dir.join("bench.db")));
    let mut list = vec![Backend {
        name: "sqlite",
        store: runtime.block_on(open(&sqlite, StoreOptions::default())).unwrap(),
        cleanup: Cleanup::Folder(dir),
    }];
    let url = std::env::var("SESSION_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("bench_{}", std::process::id());
    let mut pg = PgConfig::new(url).with_schema(schema);
    pg.max_connections = 8;
    pg.acquire_timeout = Duration::from_secs(5);
    match runtime.block_on(open(&DatabaseConfig::Postgres(pg.clone()), StoreOptions::default())) {
        Ok(store) => list.push(Backend { name: "postgres", store, cleanup: Cleanup::Schema(pg) }),
        Err(error) => eprintln!("PostgreSQL benchmarks skipped: {error}"),
    }
    list
}

fn upserts(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let backends = backends(&runtime);
    let mut group = c.benchmark_group("upsert_part");
    group.throughput(Throughput::Elements(1)).sample_size(10).measurement_time(Duration::from_secs(5));
    for backend in &backends {
        let store = Arc::clone(&backend.store);
        group.bench_function(BenchmarkId::new(backend.name, "one_writer"), |b| {
            b.to_async(&runtime).iter_custom(|iterations| {
                let store = Arc::clone(&store);
                async move {
                    let mut ids = Ids::new(now_ms());
                    let (session, message) = session(store.as_ref(), &mut ids).await;
                    let parts: Vec<Part> =
                        (0..iterations as usize).map(|i| part(&mut ids, &session, &message, i)).collect();
                    let started = Instant::now();
                    for part in &parts {
                        store.upsert_part(part).await.unwrap();
                    }
                    started.elapsed()
                }
            });
        });
        let store = Arc::clone(&backend.store);
        group.bench_function(BenchmarkId::new(backend.name, format!("{WRITERS}_sessions")), |b| {
            b.to_async(&runtime).iter_custom(|iterations| {
                let store = Arc::clone(&store);
                async move {
                    let per_writer = (iterations as usize).div_ceil(WRITERS);
                    let mut work = Vec::new();
                    for writer in 0..WRITERS {
                        let mut ids = Ids::new(now_ms() ^ (writer as u64) << 32);
                        let (session, message) = session(store.as_ref(), &mut ids).await;
                        let parts: Vec<Part> =
                            (0..per_writer).map(|i| part(&mut ids, &session, &message, i)).collect();
                        work.push(parts);
                    }
                    let started = Instant::now();
                    let tasks: Vec<_> = work
                        .into_iter()
                        .map(|parts| {
                            let store = Arc::clone(&store);
                            tokio::spawn(async move {
                                for part in &parts {
                                    store.upsert_part(part).await.unwrap();
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.unwrap();
                    }
                    // Scaled to the requested count (the last writer may do a few more).
                    started.elapsed().mul_f64(iterations as f64 / (per_writer * WRITERS) as f64)
                }
            });
        });
    }
    group.finish();
    for backend in &backends {
        let stats = backend.store.stats();
        eprintln!(
            "{}: {} rows in {} commits ({:.1} rows per commit)",
            backend.name,
            stats.rows_written,
            stats.commits,
            stats.rows_written as f64 / stats.commits.max(1) as f64
        );
    }

    let mut group = c.benchmark_group("load_history");
    group.throughput(Throughput::Elements(LOAD_PARTS as u64)).sample_size(20);
    for backend in &backends {
        let store = Arc::clone(&backend.store);
        let session = runtime.block_on(async {
            let mut ids = Ids::new(now_ms() ^ 0xdead_beef);
            let (session, message) = session(store.as_ref(), &mut ids).await;
            let parts: Vec<Part> = (0..LOAD_PARTS).map(|i| part(&mut ids, &session, &message, i)).collect();
            for chunk in parts.chunks(500) {
                store.commit(&WriteBatch { messages: Vec::new(), parts: chunk.to_vec() }).await.unwrap();
            }
            session
        });
        group.bench_function(BenchmarkId::new(backend.name, "10000_parts"), |b| {
            b.to_async(&runtime).iter(|| {
                let store = Arc::clone(&store);
                let session = session.clone();
                async move {
                    let history = store.load_history(&session).await.unwrap();
                    assert_eq!(history.messages[1].parts.len(), LOAD_PARTS);
                }
            });
        });
    }
    group.finish();

    runtime.block_on(async {
        for backend in backends {
            backend.store.close().await.unwrap();
            clean(backend.cleanup).await;
        }
    });
}

criterion_group!(benches, upserts);
criterion_main!(benches);
