//! The runtime's own cost per step: the in-process scripted provider with no delay, a script
//! of N tool steps (`list`, a cheap built-in tool) and a final answer, a real SQLite store in a
//! temp directory, no snapshots. Criterion reports the wall time of one prompt; the CPU time
//! of the whole process per step (every thread: the runtime, the store's writer, SQLite) is
//! printed once at the end, from `/proc/self/stat` on Linux.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use session_core::{ModelCost, ModelRef, overflow::ModelLimit, permission::PermissionAsk, permission::Reply};
use session_llm::{CatalogModel, Provider, Script, ScriptedProvider};
use session_runtime::{ModelSource, PromptInput, ProviderEntry, Runtime, RuntimeSettings, Sleeper};
use session_store::{SqliteConfig, SqliteStore, StoreOptions};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};

struct Models(Arc<dyn Provider>);

impl ModelSource for Models {
    fn provider(&self, _: &str) -> Option<ProviderEntry> {
        Some(ProviderEntry { client: self.0.clone(), npm: "@ai-sdk/openai-compatible".into(), retry: None })
    }

    fn model(&self, _: &str, model_id: &str) -> Option<CatalogModel> {
        let mut model = CatalogModel::unknown(model_id);
        model.limit = ModelLimit { context: 1_000_000, input: None, output: 8_000 };
        model.cost =
            serde_json::from_value::<ModelCost>(serde_json::json!({"input": 1, "output": 2})).unwrap();
        Some(model)
    }
}

struct NoSleep;

#[async_trait]
impl Sleeper for NoSleep {
    async fn sleep(&self, _: Duration) {}
}

struct Allow;

#[async_trait]
impl PermissionAsker for Allow {
    async fn ask(&self, _: &PermissionAsk) -> Option<PermissionAnswer> {
        Some(PermissionAnswer { reply: Reply::Always, message: None })
    }
}

fn script(steps: usize) -> Script {
    let mut turns: Vec<serde_json::Value> =
        (0..steps).map(|_| serde_json::json!({"calls": [{"op": "list", "path": "."}]})).collect();
    turns.push(serde_json::json!({"text": "Done."}));
    Script::from_json(&serde_json::json!({ "turns": turns }).to_string()).unwrap()
}

async fn runtime(dir: &Path, steps: usize) -> Runtime {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(work.join(name), "x\n").unwrap();
    }
    let store =
        SqliteStore::open(&SqliteConfig::new(dir.join("db.sqlite")), StoreOptions::default()).await.unwrap();
    let tools = ToolExecutor::new(
        builtin_registry().unwrap(),
        Workspace::new(&work).unwrap(),
        Arc::new(PermissionEngine::new(Arc::new(Allow))),
    );
    let default_model = ModelRef { provider_id: "mock".into(), model_id: "mock-model".into(), variant: None };
    let mut settings = RuntimeSettings::new(default_model, work);
    settings.output_token_max = 32_000;
    Runtime::builder(Arc::new(store), Arc::new(tools), settings)
        .models(Arc::new(Models(Arc::new(ScriptedProvider::new(script(steps))))))
        .sleeper(Arc::new(NoSleep))
        .build()
}

/// One prompt of `steps` tool steps plus the answer, on a fresh runtime in a temp directory
/// (under `parent` when given); returns its duration.
async fn one_prompt(steps: usize, parent: Option<&Path>) -> Duration {
    let dir = match parent {
        Some(parent) => tempfile::tempdir_in(parent).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let runtime = runtime(dir.path(), steps).await;
    let session = runtime.create_session(None).await.unwrap();
    let started = Instant::now();
    let reply =
        runtime.prompt(&session.id, PromptInput { text: "go".into(), ..Default::default() }).await.unwrap();
    let elapsed = started.elapsed();
    assert!(reply.error.is_none(), "{reply:?}");
    runtime.store().close().await.unwrap();
    elapsed
}

/// User plus system CPU time of this process so far (Linux; `None` elsewhere).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which ends with the last ')'): utime is 14th, stime 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux configuration this runs on.
    Some(Duration::from_millis(ticks * 10))
}

fn steps(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut group = c.benchmark_group("prompt");
    group.sample_size(10);
    for steps in [10usize, 40] {
        // Model requests per prompt: the tool steps and the final answer.
        group.throughput(Throughput::Elements(steps as u64 + 1));
        group.bench_with_input(BenchmarkId::new("tool_steps", steps), &steps, |b, &steps| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += one_prompt(steps, None).await;
                }
                total
            });
        });
    }
    group.finish();

    // CPU time per step, over whole prompts (setup included, so an upper bound): with the
    // database in the temp directory, and in memory-backed /dev/shm when there is one, where
    // SQLite's fsyncs cost nothing, which leaves the runtime's (and the store's) own work.
    let shm = Path::new("/dev/shm");
    let places: Vec<(&str, Option<&Path>)> = [("temp dir", None), ("/dev/shm", Some(shm))]
        .into_iter()
        .filter(|(_, p)| p.is_none_or(|p| p.is_dir()))
        .collect();
    for (name, parent) in places {
        let (prompts, steps) = (10u32, 40usize);
        let requests = prompts * (steps as u32 + 1);
        let before = process_cpu();
        let started = Instant::now();
        let mut wall = Duration::ZERO;
        for _ in 0..prompts {
            wall += rt.block_on(one_prompt(steps, parent));
        }
        let total_wall = started.elapsed();
        if let (Some(before), Some(after)) = (before, process_cpu()) {
            eprintln!(
                "[{name}] cpu per step: {:.0} µs (process CPU over {prompts} prompts of {} steps, setup \
                 included); wall per step: {:.0} µs in the prompt, {:.0} µs with setup",
                (after - before).as_secs_f64() * 1e6 / f64::from(requests),
                steps + 1,
                wall.as_secs_f64() * 1e6 / f64::from(requests),
                total_wall.as_secs_f64() * 1e6 / f64::from(requests),
            );
        }
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
