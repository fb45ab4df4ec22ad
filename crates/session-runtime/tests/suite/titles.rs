//! Session titles (SPEC 12 step 3) over the loopback provider: the title request goes to the
//! small model, the title lands on the session, a failing request leaves the run alone, and a
//! title the user gave is kept.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use session_core::{ModelCost, ModelRef, title::TITLE_INSTRUCTION};
use session_llm::{
    Api, CatalogModel, HttpProvider, LlmError, LlmRequest, LlmStream, Provider, RequestKind, ReqwestTransport,
};
use session_runtime::models::title_model;
use session_runtime::{BusEvent, ProviderEntry, Runtime, RuntimeSettings, StaticModels};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_testkit::TestServer;
use session_tools::{PermissionEngine, ToolExecutor, Workspace, builtin_registry};

use super::support::{FixedAsker, history, say, script, scripted};

const PROVIDER: &str = "openai";

fn priced(id: &str, input: u32, output: u32) -> CatalogModel {
    let mut model = CatalogModel::unknown(id);
    model.cost =
        serde_json::from_value::<ModelCost>(json!({"input": input, "output": output})).unwrap_or_default();
    model
}

fn model(id: &str) -> ModelRef {
    ModelRef { provider_id: PROVIDER.into(), model_id: id.into(), variant: None }
}

/// One provider with an expensive model (`big`, the session's) and a cheap one (`small`, sent
/// as `small-1`).
fn models(client: Arc<dyn Provider>) -> StaticModels {
    let entry = ProviderEntry { client, npm: "@ai-sdk/openai-compatible".into(), retry: None };
    StaticModels::new()
        .with_provider(PROVIDER, entry)
        .with_model(PROVIDER, "big", priced("big-1", 3, 15))
        .with_model(PROVIDER, "small", priced("small-1", 1, 2))
}

struct TitleRig {
    runtime: Runtime,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

async fn title_rig(models: StaticModels) -> TitleRig {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&SqliteConfig::new(dir.path().join("db.sqlite")), StoreOptions::default())
            .await
            .unwrap(),
    );
    let asker = Arc::new(FixedAsker {
        reply: session_core::permission::Reply::Once,
        asked: Default::default(),
        asked_calls: Default::default(),
    });
    let tools = Arc::new(ToolExecutor::new(
        builtin_registry().unwrap(),
        Workspace::new(&work).unwrap(),
        Arc::new(PermissionEngine::new(asker)),
    ));
    let mut settings = RuntimeSettings::new(model("big"), &work);
    settings.titles = true;
    let runtime = Runtime::builder(store.clone(), tools, settings).models(Arc::new(models)).build();
    TitleRig { runtime, store, _dir: dir }
}

const ANSWER: &str = r#"{"title": "\"Fix the flaky login test.\"", "turns": [{"text": "Fixed it."}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_12_3_title_from_first_message_with_small_model() {
    let server = TestServer::start(script(ANSWER)).await.unwrap();
    let client = Arc::new(HttpProvider::new(
        server.provider_config(PROVIDER, Api::OpenAiChat),
        Arc::new(ReqwestTransport::new().unwrap()),
    ));
    let rig = title_rig(models(client)).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    let reply =
        rig.runtime.prompt(&session.id, say("The login test fails now and then; fix it")).await.unwrap();
    assert_eq!(reply.error, None);
    rig.runtime.settle().await;

    let stored = rig.store.get_session(&session.id).await.unwrap();
    assert_eq!(stored.title, "Fix the flaky login test");
    let mut published = None;
    while let Ok(event) = events.try_recv() {
        if let BusEvent::SessionUpdated { info } = event {
            published = Some(info.title);
        }
    }
    assert_eq!(published.as_deref(), Some("Fix the flaky login test"));

    let requests = server.requests();
    let titles: Vec<_> = requests.iter().filter(|r| r.kind == RequestKind::Title).collect();
    assert_eq!(titles.len(), 1);
    let title = titles[0];
    assert_eq!(title.model.as_deref(), Some("small-1"), "the title goes to the cheap model");
    assert!(title.tool_names.is_empty());
    let main: Vec<_> = requests.iter().filter(|r| r.kind == RequestKind::Main).collect();
    assert_eq!(main.len(), 1);
    assert_eq!(main[0].model.as_deref(), Some("big-1"));
    insta::assert_json_snapshot!("title_request_body", title.body);

    // A second prompt is not the first message any more: no second title request.
    rig.runtime.prompt(&session.id, say("and the signup test")).await.unwrap();
    rig.runtime.settle().await;
    assert_eq!(server.requests().iter().filter(|r| r.kind == RequestKind::Title).count(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn spec_12_3_title_model_choice() {
    let models = models(scripted(ANSWER));
    // The configured small model when it can be called ...
    assert_eq!(title_model(Some(&model("big")), &models, &model("big")), model("big"));
    // ... else the provider's cheapest model ...
    assert_eq!(title_model(Some(&model("missing")), &models, &model("big")), model("small"));
    let elsewhere = ModelRef { provider_id: "nobody".into(), ..model("x") };
    assert_eq!(title_model(Some(&elsewhere), &models, &model("big")), model("small"));
    assert_eq!(title_model(None, &models, &model("big")), model("small"));
    // ... else the session's model (a provider whose models the source does not list).
    let bare = StaticModels::new().with_provider(
        PROVIDER,
        ProviderEntry { client: scripted(ANSWER), npm: "@ai-sdk/openai-compatible".into(), retry: None },
    );
    assert_eq!(title_model(None, &bare, &model("big")), model("big"));
}

/// Answers the agent from a script and fails every title request.
struct FailingTitles(Arc<dyn Provider>);

impl Provider for FailingTitles {
    fn api(&self) -> Api {
        self.0.api()
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        use futures_util::StreamExt as _;
        if request.system.iter().any(|part| part == TITLE_INSTRUCTION) {
            let error = LlmError::Stream { message: "the title model is down".into() };
            return futures_util::stream::once(async move { Err(error) }).boxed();
        }
        self.0.stream(request)
    }
}

#[tokio::test]
async fn spec_12_3_a_failing_title_request_does_not_fail_the_run() {
    let rig = title_rig(models(Arc::new(FailingTitles(scripted(ANSWER))))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let reply = rig.runtime.prompt(&session.id, say("fix the login test")).await.unwrap();
    assert_eq!(reply.error, None);
    rig.runtime.settle().await;
    let stored = rig.store.get_session(&session.id).await.unwrap();
    assert!(stored.has_default_title(), "{}", stored.title);
    assert_eq!(history(&rig.store, &session.id).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_12_3_a_user_title_is_kept() {
    let server = TestServer::start(script(ANSWER)).await.unwrap();
    let client = Arc::new(HttpProvider::new(
        server.provider_config(PROVIDER, Api::OpenAiChat),
        Arc::new(ReqwestTransport::new().unwrap()),
    ));
    let rig = title_rig(models(client)).await;
    let session = rig.runtime.create_session(Some("Login flakiness".into())).await.unwrap();
    rig.runtime.prompt(&session.id, say("fix the login test")).await.unwrap();
    rig.runtime.settle().await;
    assert_eq!(rig.store.get_session(&session.id).await.unwrap().title, "Login flakiness");
    // The given title is seen before any model is asked.
    assert!(server.requests().iter().all(|r| r.kind == RequestKind::Main));
    server.shutdown().await;
}
