//! What an MCP server costs the runtime beyond the server itself, against the reference server
//! (`@modelcontextprotocol/server-everything`, installed by .ci/run; `SESSION_TEST_MCP_DIR` or
//! `~/.cache/session-runtime/npm-mcp`):
//!
//! (a) start-up: a prompt whose one step is a text answer (in-process scripted provider, SQLite
//!     store) on a fresh runtime, with and without the server configured; the difference is
//!     what the server adds before the first request, and minus the server's own start-up (a
//!     direct rmcp connection: spawn, initialize, tools/list) it is the runtime's overhead;
//! (b) per call: `everything_echo` through the executor (validation, permission check, the
//!     McpTool, result conversion) vs. the same `tools/call` made directly with rmcp on an open
//!     connection.
//!
//! Medians are printed; run with `cargo bench -p session-runtime --bench mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use session_core::permission::{Action, PermissionAsk, Reply, Rule};
use session_core::{MessageId, ModelCost, ModelRef, SessionId, overflow::ModelLimit};
use session_llm::{CatalogModel, Provider, Script, ScriptedProvider};
use session_mcp::{LocalServer, McpManager, ServerSpec, Transport};
use session_runtime::{ModelSource, PromptInput, ProviderEntry, Runtime, RuntimeSettings};
use session_store::{SqliteConfig, SqliteStore, StoreOptions};
use session_tools::{
    CallScope, PermissionAnswer, PermissionAsker, PermissionEngine, ProgressSink, ToolExecutor,
    ToolInvocation, Workspace, builtin_registry,
};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 10;
const CALLS: usize = 200;

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

struct Allow;

#[async_trait]
impl PermissionAsker for Allow {
    async fn ask(&self, _: &PermissionAsk) -> Option<PermissionAnswer> {
        Some(PermissionAnswer { reply: Reply::Once, message: None })
    }
}

fn everything() -> PathBuf {
    let dir = std::env::var_os("SESSION_TEST_MCP_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/session-runtime/npm-mcp")
    });
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(entry.exists(), "the MCP reference server is not installed at {} (run .ci/run)", entry.display());
    entry
}

fn spec(dir: &Path) -> ServerSpec {
    ServerSpec {
        name: "everything".into(),
        transport: Transport::Local(LocalServer {
            command: vec!["node".into(), everything().to_string_lossy().into_owned(), "stdio".into()],
            environment: Default::default(),
            cwd: dir.to_path_buf(),
            keep_out: None,
            sandboxed: false,
        }),
        enabled: true,
        timeout: Duration::from_secs(60),
    }
}

async fn executor(dir: &Path, mcp: Option<Arc<McpManager>>) -> ToolExecutor {
    let engine = Arc::new(PermissionEngine::new(Arc::new(Allow)));
    let executor = ToolExecutor::new(builtin_registry().unwrap(), Workspace::new(dir).unwrap(), engine);
    match mcp {
        Some(mcp) => executor.with_source(mcp),
        None => executor,
    }
}

/// One prompt answered in text on a fresh runtime, with or without the server; its duration.
async fn prompt(with_server: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mcp = with_server.then(|| Arc::new(McpManager::new(vec![spec(&work)])));
    let tools = executor(&work, mcp.clone()).await;
    let store = SqliteStore::open(&SqliteConfig::new(dir.path().join("db.sqlite")), StoreOptions::default())
        .await
        .unwrap();
    let script = Script::from_json(r#"{"turns": [{"text": "Done."}]}"#).unwrap();
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(script));
    let model = ModelRef { provider_id: "mock".into(), model_id: "m".into(), variant: None };
    let runtime = Runtime::builder(Arc::new(store), Arc::new(tools), RuntimeSettings::new(model, &work))
        .models(Arc::new(Models(provider)))
        .build();
    let session = runtime.create_session(None).await.unwrap();
    let started = Instant::now();
    let reply =
        runtime.prompt(&session.id, PromptInput { text: "go".into(), ..Default::default() }).await.unwrap();
    let elapsed = started.elapsed();
    assert!(reply.error.is_none(), "{reply:?}");
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    runtime.store().close().await.unwrap();
    elapsed
}

/// The server's own start-up: spawn, initialize and list its tools with rmcp directly.
async fn direct_start(dir: &Path) -> Duration {
    let started = Instant::now();
    let mut command = tokio::process::Command::new("node");
    command.arg(everything()).arg("stdio").current_dir(dir);
    let (transport, _) =
        TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn().unwrap();
    let service = ().serve(transport).await.unwrap();
    let tools = service.list_all_tools().await.unwrap();
    let elapsed = started.elapsed();
    assert!(!tools.is_empty());
    let _ = service.cancel().await;
    elapsed
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        // Warm node's and the OS's caches once.
        direct_start(dir.path()).await;

        let mut without = Vec::new();
        let mut with = Vec::new();
        let mut direct = Vec::new();
        for _ in 0..RUNS {
            without.push(prompt(false).await);
            with.push(prompt(true).await);
            direct.push(direct_start(dir.path()).await);
        }
        let (without, with, direct) = (median(without), median(with), median(direct));
        let added = with.saturating_sub(without);
        println!(
            "mcp start-up: prompt without server {:.2} ms, with {:.2} ms (adds {:.2} ms); the server's own start-up {:.2} ms; runtime overhead {:.2} ms",
            ms(without),
            ms(with),
            ms(added),
            ms(direct),
            ms(added) - ms(direct)
        );

        // (b) per call.
        let mcp = Arc::new(McpManager::new(vec![spec(dir.path())]));
        let executor = executor(dir.path(), Some(mcp.clone())).await;
        executor.refresh_sources().await;
        let scope = CallScope {
            session_id: SessionId::new_unchecked("ses_bench"),
            message_id: MessageId::new_unchecked("msg_bench"),
            agent: "build".into(),
            ruleset: Arc::new(vec![Rule::new("everything_echo", "*", Action::Allow)]),
            abort: CancellationToken::new(),
        };
        let mut input = session_core::JsonObject::new();
        input.insert("message".into(), serde_json::json!("hello"));
        let call = ToolInvocation { call_id: "call".into(), tool: "everything_echo".into(), input: input.clone() };
        let mut through = Vec::new();
        for _ in 0..CALLS {
            let started = Instant::now();
            let result = executor.run(&call, &scope, CancellationToken::new(), ProgressSink::none()).await.unwrap();
            through.push(started.elapsed());
            assert_eq!(result.output, "Echo: hello");
        }
        mcp.shutdown().await;

        let mut command = tokio::process::Command::new("node");
        command.arg(everything()).arg("stdio").current_dir(dir.path());
        let (transport, _) = TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn().unwrap();
        let service = ().serve(transport).await.unwrap();
        let mut raw = Vec::new();
        for _ in 0..CALLS {
            let mut params = CallToolRequestParams::new("echo");
            params.arguments = Some(input.clone());
            let started = Instant::now();
            let result = service.call_tool(params).await.unwrap();
            raw.push(started.elapsed());
            assert!(!result.content.is_empty());
        }
        let _ = service.cancel().await;
        let (through, raw) = (median(through), median(raw));
        println!(
            "mcp per call: through the executor {:.3} ms, direct rmcp {:.3} ms, overhead {:.3} ms",
            ms(through),
            ms(raw),
            ms(through) - ms(raw)
        );
    });
}
