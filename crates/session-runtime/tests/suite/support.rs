//! A configurable rig for the engine tests that talk to a real provider: the loopback test
//! server through `HttpProvider`, or the in-process `ScriptedProvider`; a real SQLite store in
//! a temp directory (shareable between two runtimes), real tools and an injected sleeper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use session_core::{
    FileDiff, Message, MessageWithParts, ModelCost, ModelRef, PartKind, SessionId, ToolStatus,
    overflow::ModelLimit, permission::AgentPaths, permission::PermissionAsk, permission::Reply,
    permission::Rule,
};
use session_llm::{Api, CatalogModel, HttpProvider, Provider, ReqwestTransport};
use session_runtime::agents::Agent;
use session_runtime::clock::{Clock, Sleeper, SystemClock};
use session_runtime::questions::{QuestionTool, Questions};
use session_runtime::snapshot::{HousekeepingReport, NoSnapshots, Snapshotter};
use session_runtime::{ModelSource, ProviderEntry, Runtime, RuntimeSettings};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_testkit::TestServer;
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};

/// The provider id the rig configures (the error classifier reads it).
pub const PROVIDER: &str = "openai";

/// A real HTTP provider (OpenAI Chat Completions) pointed at the loopback server.
pub fn http(server: &TestServer) -> Arc<dyn Provider> {
    let config = server.provider_config(PROVIDER, Api::OpenAiChat);
    Arc::new(HttpProvider::new(config, Arc::new(ReqwestTransport::new().unwrap())))
}

/// A script from JSON text.
pub fn script(text: &str) -> session_llm::Script {
    session_llm::Script::from_json(text).unwrap()
}

struct Models {
    provider: Arc<dyn Provider>,
    limit: ModelLimit,
}

impl ModelSource for Models {
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry> {
        (provider_id == PROVIDER).then(|| ProviderEntry {
            client: self.provider.clone(),
            npm: "@ai-sdk/openai-compatible".into(),
            retry: None,
        })
    }

    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel> {
        (provider_id == PROVIDER).then(|| {
            let mut model = CatalogModel::unknown(model_id);
            model.limit = self.limit;
            model.cost = serde_json::from_value::<ModelCost>(
                json!({"input": 1, "output": 2, "cache": {"read": 0, "write": 0}}),
            )
            .unwrap();
            model
        })
    }
}

/// Records how long the runtime asked to sleep, and returns at once.
#[derive(Default)]
pub struct RecordingSleeper(pub Mutex<Vec<Duration>>);

#[async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, duration: Duration) {
        self.0.lock().unwrap().push(duration);
    }
}

impl RecordingSleeper {
    /// The sleeps asked for so far.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// A clock stopped at one instant.
#[derive(Debug)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

/// Answers every permission ask with a fixed reply and records the permissions asked.
pub struct FixedAsker {
    pub reply: Reply,
    pub asked: Mutex<Vec<String>>,
    /// The tool call of each ask, in the same order (`None` for an ask of no call).
    pub asked_calls: Mutex<Vec<Option<String>>>,
}

#[async_trait]
impl PermissionAsker for FixedAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        self.asked.lock().unwrap().push(ask.request.permission.clone());
        self.asked_calls.lock().unwrap().push(ask.tool.as_ref().map(|call| call.call_id.clone()));
        Some(PermissionAnswer { reply: self.reply, message: None })
    }
}

/// How to build a rig.
pub struct Setup {
    pub provider: Arc<dyn Provider>,
    pub limit: ModelLimit,
    pub reply: Reply,
    /// Rules appended to the build agent's ruleset.
    pub rules: Vec<Rule>,
    pub continue_loop_on_deny: bool,
    /// Snapshots in a git repository initialised in the worktree.
    pub snapshots: bool,
    pub clock: Arc<dyn Clock>,
    pub store: StoreOptions,
    /// Write `notes.txt` into the worktree.
    pub seed_files: bool,
    /// The build agent's step limit.
    pub steps: Option<u32>,
    /// The compaction agent's model.
    pub compaction_model: Option<ModelRef>,
    /// Register the `question` tool, asking through the runtime's question table.
    pub questions: bool,
}

pub const BIG: ModelLimit = ModelLimit { context: 200_000, input: None, output: 8_000 };

impl Setup {
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            limit: BIG,
            reply: Reply::Once,
            rules: Vec::new(),
            continue_loop_on_deny: false,
            snapshots: false,
            clock: Arc::new(SystemClock),
            store: StoreOptions::default(),
            seed_files: true,
            steps: None,
            compaction_model: None,
            questions: false,
        }
    }
}

/// A runtime with its handles.
pub struct Rig {
    pub runtime: Runtime,
    pub store: Arc<dyn Store>,
    pub sleeper: Arc<RecordingSleeper>,
    pub asker: Arc<FixedAsker>,
    pub work: PathBuf,
    /// How many times the runtime staged the worktree for a snapshot.
    pub snapshot_tracks: Arc<AtomicUsize>,
    _dir: Option<tempfile::TempDir>,
}

/// A rig in a fresh temp directory.
pub async fn rig(setup: Setup) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let mut rig = rig_at(dir.path(), setup).await;
    rig._dir = Some(dir);
    rig
}

/// A rig over `root` (its `db.sqlite`, `work` and `data`); two rigs over one root share the
/// database file as two processes would.
pub async fn rig_at(root: &Path, setup: Setup) -> Rig {
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    if setup.seed_files {
        std::fs::write(work.join("notes.txt"), "alpha\nbeta\n").unwrap();
    }
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&SqliteConfig::new(root.join("db.sqlite")), setup.store).await.unwrap());
    let asker =
        Arc::new(FixedAsker { reply: setup.reply, asked: Mutex::default(), asked_calls: Mutex::default() });
    let permissions = Arc::new(PermissionEngine::new(asker.clone()));
    let questions = Questions::new();
    let mut registry = builtin_registry().unwrap();
    if setup.questions {
        registry.register_builtin(Arc::new(QuestionTool::new(questions.clone())));
    }
    let tools = Arc::new(ToolExecutor::new(registry, Workspace::new(&work).unwrap(), permissions));
    let sleeper = Arc::new(RecordingSleeper::default());
    let snapshot_tracks = Arc::new(AtomicUsize::new(0));
    let snapshots: Arc<dyn Snapshotter> = if setup.snapshots {
        if !work.join(".git").exists() {
            git(&work, &["init", "--quiet"]);
        }
        let git = session_runtime::snapshot::GitSnapshotter::open(&work, &root.join("data"))
            .await
            .expect("git snapshots");
        Arc::new(Counted { inner: git, tracks: snapshot_tracks.clone() })
    } else {
        Arc::new(NoSnapshots)
    };
    let mut build = Agent::build(&[], &AgentPaths::default());
    for rule in setup.rules {
        build.ruleset.push(rule);
    }
    build.steps = setup.steps;
    let mut agents = BTreeMap::new();
    agents.insert("build".to_owned(), build);
    let mut settings = RuntimeSettings::new(
        ModelRef { provider_id: PROVIDER.into(), model_id: "mock-model".into(), variant: None },
        work.clone(),
    );
    settings.continue_loop_on_deny = setup.continue_loop_on_deny;
    settings.output_token_max = 32_000;
    settings.compaction_model = setup.compaction_model;
    let runtime = Runtime::builder(store.clone(), tools, settings)
        .models(Arc::new(Models { provider: setup.provider, limit: setup.limit }))
        .snapshots(snapshots)
        .clock(setup.clock)
        .sleeper(sleeper.clone())
        .agents(agents)
        .questions(questions)
        .build();
    Rig { runtime, store, sleeper, asker, work, snapshot_tracks, _dir: None }
}

/// Real snapshots, counting how often the worktree is staged.
struct Counted {
    inner: session_runtime::snapshot::GitSnapshotter,
    tracks: Arc<AtomicUsize>,
}

#[async_trait]
impl Snapshotter for Counted {
    async fn track(&self) -> Option<String> {
        self.tracks.fetch_add(1, Ordering::SeqCst);
        self.inner.track().await
    }
    async fn patch(&self, hash: &str) -> Vec<String> {
        self.inner.patch(hash).await
    }
    async fn patch_between(&self, from: &str, to: &str) -> Vec<String> {
        self.inner.patch_between(from, to).await
    }
    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        self.inner.restore(hash, files).await
    }
    async fn check_restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        self.inner.check_restore(hash, files).await
    }
    async fn diff(&self, hash: &str) -> Option<String> {
        self.inner.diff(hash).await
    }
    async fn diff_trees(&self, from: &str, to: &str) -> Option<Vec<FileDiff>> {
        self.inner.diff_trees(from, to).await
    }
    async fn claim_housekeeping(&self, now_ms: u64) -> Option<u64> {
        self.inner.claim_housekeeping(now_ms).await
    }
    async fn housekeep(&self, keep: &[String]) -> Result<HousekeepingReport, String> {
        self.inner.housekeep(keep).await
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success());
}

/// A prompt with this text.
pub fn say(text: &str) -> session_runtime::PromptInput {
    session_runtime::PromptInput { text: text.to_owned(), ..Default::default() }
}

pub async fn history(store: &Arc<dyn Store>, session: &SessionId) -> Vec<MessageWithParts> {
    store.load_history(session).await.unwrap().messages
}

pub fn tool_states(messages: &[MessageWithParts]) -> Vec<(String, ToolStatus)> {
    messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Tool(t) => Some((t.tool.clone(), t.state.status())),
            _ => None,
        })
        .collect()
}

/// The text parts of a message, joined.
pub fn text_of(message: &MessageWithParts) -> String {
    message
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

pub fn is_user(message: &MessageWithParts) -> bool {
    matches!(message.info, Message::User(_))
}

/// A provider that sends `events` and then nothing, until the request is cancelled.
pub struct Hanging(pub Vec<session_core::LlmEvent>);

impl Provider for Hanging {
    fn api(&self) -> Api {
        Api::OpenAiChat
    }

    fn stream(&self, request: session_llm::LlmRequest) -> session_llm::LlmStream {
        use futures_util::StreamExt as _;
        let cancel = request.cancel.clone();
        futures_util::stream::iter(self.0.clone().into_iter().map(Ok))
            .chain(futures_util::stream::once(async move {
                cancel.cancelled().await;
                Err(session_llm::LlmError::Aborted)
            }))
            .boxed()
    }
}

/// The in-process scripted provider.
pub fn scripted(text: &str) -> Arc<dyn Provider> {
    Arc::new(session_llm::ScriptedProvider::new(script(text)))
}

/// Waits (with a safety timeout) until `check` holds.
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A provider that records each request and passes it on.
pub struct Recording {
    inner: Arc<dyn Provider>,
    requests: Mutex<Vec<session_llm::LlmRequest>>,
}

impl Recording {
    pub fn new(inner: Arc<dyn Provider>) -> Arc<Self> {
        Arc::new(Self { inner, requests: Mutex::default() })
    }

    /// The requests so far, oldest first.
    pub fn requests(&self) -> Vec<session_llm::LlmRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for Recording {
    fn api(&self) -> Api {
        self.inner.api()
    }

    fn stream(&self, request: session_llm::LlmRequest) -> session_llm::LlmStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request)
    }
}
