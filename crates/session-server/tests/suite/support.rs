//! A served router for tests: a project with a `.env`, a runtime whose model `mock/m` is a
//! scripted provider on loopback, the SQLite store in a temporary folder, and the router on
//! `127.0.0.1:0`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use session_core::{ModelRef, overflow::ModelLimit, permission::AgentPaths};
use session_llm::{Api, CatalogModel, HttpProvider, ReqwestTransport, Script};
use session_runtime::agents::Agent;
use session_runtime::config::{Config, LoadedSkill, Skill, SkillScope, SkillSet};
use session_runtime::questions::{QuestionTool, Questions};
use session_runtime::snapshot::{GitSnapshotter, NoSnapshots, Snapshotter};
use session_runtime::{ModelSource, ProviderEntry, Runtime, RuntimeSettings};
use session_server::{Access, BusAsker, ServerParts};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_testkit::{ApiClient, TestServer};
use session_tools::{PermissionEngine, ToolExecutor, Workspace, builtin_registry};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A scripted provider on loopback.
pub async fn provider(script: &str) -> TestServer {
    TestServer::start(Script::from_json(script).unwrap()).await.unwrap()
}

/// A project folder: a README, a source file, and a `.env` (reading it asks).
pub fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n\nA tiny CLI.\n").unwrap();
    std::fs::write(dir.join("src/app.py"), "print('hello')\n").unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1\n").unwrap();
}

/// Provider `mock` (OpenAI-compatible, at the test server) with its model `m`.
struct MockModels {
    provider: ProviderEntry,
}

impl ModelSource for MockModels {
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry> {
        (provider_id == "mock").then(|| self.provider.clone())
    }

    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel> {
        (provider_id == "mock" && model_id == "m").then(|| CatalogModel {
            limit: ModelLimit { context: 32_000, input: None, output: 4_000 },
            ..CatalogModel::unknown(model_id)
        })
    }
}

/// A runtime over the project in `root/project` and data in `root/data`, and its parts.
async fn runtime(root: &Path, provider: &TestServer, access: Access) -> ServerParts {
    let cwd = root.join("project");
    let data = root.join("data");
    project(&cwd);
    std::fs::create_dir_all(&data).unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&SqliteConfig::new(data.join("session.db")), StoreOptions::default())
            .await
            .unwrap(),
    );
    let client = HttpProvider::new(
        session_llm::ProviderEndpoint {
            provider_id: "mock".into(),
            api: Api::OpenAiChat,
            base_url: provider.base_url(Api::OpenAiChat),
            api_key: Some("test-key".into()),
            headers: Vec::new(),
            limits: session_llm::StreamLimits::default(),
        },
        Arc::new(ReqwestTransport::new().unwrap()),
    );
    let models = MockModels {
        provider: ProviderEntry {
            client: Arc::new(client),
            npm: session_llm::OPENAI_COMPATIBLE_NPM.to_owned(),
            retry: None,
        },
    };
    let asker = Arc::new(BusAsker::new());
    let permissions = Arc::new(PermissionEngine::new(asker.clone()));
    let workspace = Workspace::new(&cwd).unwrap().with_home(root);
    // As `session serve` assembles it: the `question` tool asks through the runtime's table.
    let questions = Questions::new();
    let mut registry = builtin_registry().unwrap();
    registry.register_builtin(Arc::new(QuestionTool::new(questions.clone())));
    let tools = ToolExecutor::new(registry, workspace, permissions.clone());
    let snapshots: Arc<dyn Snapshotter> = match GitSnapshotter::open(&cwd, &data).await {
        Some(git) => Arc::new(git),
        None => Arc::new(NoSnapshots),
    };
    let config = Config::default();
    let home = root.to_string_lossy().into_owned();
    let rules = config.permission_rules(Some(&home)).unwrap();
    let paths = AgentPaths::default();
    let mut agents = BTreeMap::new();
    for agent in [Agent::build(&rules, &paths), Agent::plan(&rules, &paths)] {
        agents.insert(agent.name.clone(), agent);
    }
    let default_model = ModelRef { provider_id: "mock".into(), model_id: "m".into(), variant: None };
    let mut settings = RuntimeSettings::new(default_model, cwd.clone());
    settings.compaction = config.compaction.clone();
    settings.commands.insert(
        "greet".to_owned(),
        session_runtime::config::CommandConfig {
            template: "Say hello to $ARGUMENTS.".to_owned(),
            ..Default::default()
        },
    );
    settings.skills = Arc::new(skills(&cwd));
    let runtime = Arc::new(
        Runtime::builder(store.clone(), Arc::new(tools), settings)
            .models(Arc::new(models))
            .snapshots(snapshots)
            .agents(agents)
            .questions(questions)
            .build(),
    );
    asker.attach(runtime.bus().clone());
    ServerParts::new(runtime, store, permissions, access)
}

/// Two skills of the project: `release`, marked as a slash command, and `pdf`.
fn skills(cwd: &Path) -> SkillSet {
    let skill = |name: &str, description: &str, slash| LoadedSkill {
        skill: Skill {
            name: name.to_owned(),
            description: description.to_owned(),
            location: cwd.join(".opencode/skills").join(name).join("SKILL.md"),
            content: format!("Steps of {name}.").into(),
        },
        scope: SkillScope::Project,
        license: None,
        allowed_tools: Vec::new(),
        metadata: Default::default(),
        slash,
    };
    SkillSet::new(
        vec![skill("release", "Cuts a release", true), skill("pdf", "Fills PDF forms", false)],
        Vec::new(),
    )
}

/// A served router with its provider and a client.
/// The first tool part of a session's stored messages, as `GET /session/{id}/message` answers
/// them.
pub async fn first_tool_part(api: &ApiClient, session: &str) -> serde_json::Value {
    let (_, messages) = api.call("get", &format!("/session/{session}/message"), None).await;
    messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .find(|p| p["type"] == "tool")
        .unwrap()
        .clone()
}

pub struct Fixture {
    dir: TempDir,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The runtime's store.
    pub store: Arc<dyn Store>,
    /// The port the server listens on.
    pub port: u16,
    /// The scripted provider.
    pub provider: TestServer,
    /// A client of the server.
    pub api: ApiClient,
}

/// Serves a runtime whose model follows `script`, without a token and from no web page.
pub async fn fixture(script: &str) -> Fixture {
    fixture_with(script, |_| {}).await
}

/// Serves a runtime whose model follows `script`, with the access `configure` sets.
pub async fn fixture_with(script: &str, configure: impl FnOnce(&mut Access)) -> Fixture {
    let provider = provider(script).await;
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut access = Access::new(addr);
    configure(&mut access);
    let parts = runtime(dir.path(), &provider, access).await;
    let shutdown = parts.shutdown.clone();
    let store = parts.store.clone();
    let app = session_server::router(parts);
    let api = ApiClient::new(format!("http://{addr}"));
    let graceful = shutdown.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { graceful.cancelled().await }).await
    });
    Fixture { dir, shutdown, server, store, port: addr.port(), provider, api }
}

impl Fixture {
    /// The project folder the runtime's tools work in.
    pub fn project(&self) -> std::path::PathBuf {
        self.dir.path().join("project")
    }

    /// Stops the server, closes the store and the provider.
    pub async fn finish(self) {
        self.shutdown.cancel();
        self.server.await.unwrap().unwrap();
        self.store.close().await.unwrap();
        self.provider.shutdown().await;
    }
}
