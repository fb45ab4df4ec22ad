//! The runtime's own cost per step: the in-process scripted provider with no delay, a script
//! of N tool steps (`glob`, a cheap built-in tool) and a final answer, a real SQLite store in a
//! temp directory, no snapshots. Criterion reports the wall time of one prompt; the CPU time
//! of the whole process per step (every thread: the runtime, the store's writer, SQLite) is
//! printed once at the end, from `/proc/self/stat` on Linux.
//!
//! Then the tool start latency (SPEC 1.1): a Chat response over real HTTP from the loopback
//! test server whose one tool call's arguments are complete early, after which the stream goes
//! on (text deltas, 10 ms apart) before its `finish_reason`. The server stamps the chunk that
//! carries the last argument bytes with the time it hands it to the connection (`{sent_us}`);
//! the tool notes when its `execute` is entered. The median gap is printed once.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use session_core::JsonObject;
use session_core::{ModelCost, ModelRef, overflow::ModelLimit, permission::PermissionAsk, permission::Reply};
use session_llm::{Api, CatalogModel, HttpProvider, Provider, ReqwestTransport, Script, ScriptedProvider};
use session_runtime::clock::Sleeper;
use session_runtime::{ModelSource, PromptInput, ProviderEntry, Runtime, RuntimeSettings};
use session_store::{SqliteConfig, SqliteStore, StoreOptions};
use session_testkit::{SENT_US, TestServer};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, Tool, ToolContext, ToolError, ToolExecutor,
    ToolSuccess, Workspace, builtin_registry,
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
        (0..steps).map(|_| serde_json::json!({"calls": [{"op": "glob", "pattern": "*"}]})).collect();
    turns.push(serde_json::json!({"text": "Done."}));
    Script::from_json(&serde_json::json!({ "turns": turns }).to_string()).unwrap()
}

async fn runtime(dir: &Path, steps: usize) -> Runtime {
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(script(steps)));
    runtime_with(dir, provider, None).await
}

/// A runtime over `provider` in `dir`, with the built-in tools and `extra` besides.
async fn runtime_with(dir: &Path, provider: Arc<dyn Provider>, extra: Option<Arc<dyn Tool>>) -> Runtime {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(work.join(name), "x\n").unwrap();
    }
    let store =
        SqliteStore::open(&SqliteConfig::new(dir.join("db.sqlite")), StoreOptions::default()).await.unwrap();
    let mut registry = builtin_registry().unwrap();
    if let Some(tool) = extra {
        registry.register(tool).unwrap();
    }
    let tools = ToolExecutor::new(
        registry,
        Workspace::new(&work).unwrap(),
        Arc::new(PermissionEngine::new(Arc::new(Allow))),
    );
    let default_model = ModelRef { provider_id: "mock".into(), model_id: "mock-model".into(), variant: None };
    let mut settings = RuntimeSettings::new(default_model, work);
    settings.output_token_max = 32_000;
    Runtime::builder(Arc::new(store), Arc::new(tools), settings)
        .models(Arc::new(Models(provider)))
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

    tool_start_latency(&rt);
}

/// The wall clock in Unix microseconds, the clock the test server stamps chunks with.
fn unix_us() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()).unwrap()
}

/// A tool that notes how long after its argument's stamp its `execute` was entered.
#[derive(Default)]
struct Probe {
    latencies_us: Mutex<Vec<u64>>,
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn description(&self) -> &str {
        "Notes when it starts."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {"sent": {"type": "string"}}, "required": ["sent"]})
    }

    async fn execute(&self, args: JsonObject, _: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let entered = unix_us();
        let sent: u64 = args["sent"].as_str().unwrap().parse().unwrap();
        self.latencies_us.lock().unwrap().push(entered.saturating_sub(sent));
        Ok(ToolSuccess::new("probe", "ok", JsonObject::new()))
    }
}

/// Text deltas the stream goes on with after the call's arguments are complete.
const TAIL_DELTAS: usize = 10;
/// The server's pause before each chunk.
const CHUNK_PAUSE: Duration = Duration::from_millis(10);

/// A Chat response whose `probe` call is complete at its third chunk; the chunk with the last
/// argument bytes carries the server's stamp, and the stream goes on for `TAIL_DELTAS` text
/// deltas, the finish chunk, the usage chunk and `[DONE]`.
fn probe_stream() -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let value = serde_json::json!({"id": "chatcmpl-probe", "object": "chat.completion.chunk", "created": 0,
            "model": "mock-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {value}\n\n")
    };
    let arguments =
        |text: &str| serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]});
    let mut body = chunk(serde_json::json!({"role": "assistant", "content": ""}), None);
    body += &chunk(
        serde_json::json!({"tool_calls": [{"index": 0, "id": "call_probe", "type": "function",
                                           "function": {"name": "probe", "arguments": ""}}]}),
        None,
    );
    body += &chunk(arguments("{\"sent\":\""), None);
    body += &chunk(arguments(&format!("{SENT_US}\"}}")), None);
    for n in 0..TAIL_DELTAS {
        body += &chunk(serde_json::json!({"content": format!("still streaming {n}. ")}), None);
    }
    body += &chunk(serde_json::json!({}), Some("tool_calls"));
    body += "data: {\"id\":\"chatcmpl-probe\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n";
    body += "data: [DONE]\n\n";
    body
}

/// Runs prompts whose first step is [`probe_stream`] over loopback HTTP and prints the median
/// time from the write of the call's last argument bytes to the tool's `execute`.
fn tool_start_latency(rt: &tokio::runtime::Runtime) {
    const PROMPTS: usize = 10;
    let probe = Arc::new(Probe::default());
    rt.block_on(async {
        let mut script = Script::from_json(r#"{"turns": [{}, {"text": "Done."}]}"#).unwrap();
        script.turns[0].recorded = Some(probe_stream().into());
        script.turns[0].chunk_delay = Some(CHUNK_PAUSE);
        for _ in 0..PROMPTS {
            let server = TestServer::start(script.clone()).await.unwrap();
            let config = server.provider_config("mock", Api::OpenAiChat);
            let provider: Arc<dyn Provider> =
                Arc::new(HttpProvider::new(config, Arc::new(ReqwestTransport::new().unwrap())));
            let dir = tempfile::tempdir().unwrap();
            let runtime = runtime_with(dir.path(), provider, Some(probe.clone())).await;
            let session = runtime.create_session(None).await.unwrap();
            let input = PromptInput { text: "go".into(), ..Default::default() };
            let reply = runtime.prompt(&session.id, input).await.unwrap();
            assert!(reply.error.is_none(), "{reply:?}");
            runtime.store().close().await.unwrap();
            server.assert_invariants();
            server.shutdown().await;
        }
    });
    let mut latencies = probe.latencies_us.lock().unwrap().clone();
    assert_eq!(latencies.len(), PROMPTS, "one probe call per prompt");
    latencies.sort_unstable();
    let tail = CHUNK_PAUSE * u32::try_from(TAIL_DELTAS + 3).unwrap();
    eprintln!(
        "tool start latency: median {} µs (min {}, max {}) over {PROMPTS} calls, from the write of \
         the last argument bytes to the tool's execute; the stream went on for {} ms after them",
        latencies[PROMPTS / 2],
        latencies[0],
        latencies[PROMPTS - 1],
        tail.as_millis(),
    );
}

criterion_group!(benches, steps);
criterion_main!(benches);
