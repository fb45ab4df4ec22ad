//! Embeds the runtime: a SQLite store, the built-in tools in a temporary project, a scripted
//! model (no key, no network), one prompt, and the bus events as they happen.
//!
//! `cargo run -p session-runtime --example embed`

use std::sync::Arc;

use async_trait::async_trait;
use session_core::{ModelRef, permission::PermissionAsk, permission::Reply};
use session_llm::{Script, ScriptedProvider};
use session_runtime::{BusEvent, PromptInput, ProviderEntry, Runtime, RuntimeSettings, StaticModels};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};

/// The model: two turns, a `read` of the project's README, then an answer.
const SCRIPT: &str = r#"{
  "turns": [
    {"text": "Reading the README.", "calls": [{"op": "read", "path": "README.md"}]},
    {"text": "The project counts words."}
  ]
}"#;

/// Answers every permission ask "once"; an application would ask its user.
struct AllowOnce;

#[async_trait]
impl PermissionAsker for AllowOnce {
    async fn ask(&self, _ask: &PermissionAsk) -> Option<PermissionAnswer> {
        Some(PermissionAnswer { reply: Reply::Once, message: None })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("README.md"), "# tally\n\nCounts the words of its input.\n")?;

    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&SqliteConfig::new(dir.path().join("session.db")), StoreOptions::default()).await?,
    );
    let provider = ScriptedProvider::new(Script::from_json(SCRIPT)?.with_workdir(&project));
    let entry = ProviderEntry {
        client: Arc::new(provider),
        npm: session_llm::OPENAI_COMPATIBLE_NPM.to_owned(),
        retry: None,
    };
    // One provider; every model id it is asked for is an unknown model (no limits, no prices).
    let models = StaticModels::new().with_provider("scripted", entry);
    let permissions = Arc::new(PermissionEngine::new(Arc::new(AllowOnce)));
    let tools = ToolExecutor::new(builtin_registry()?, Workspace::new(&project)?, permissions);

    let default_model = ModelRef { provider_id: "scripted".into(), model_id: "any".into(), variant: None };
    let runtime =
        Runtime::builder(store.clone(), Arc::new(tools), RuntimeSettings::new(default_model, &project))
            .models(Arc::new(models))
            .build();

    let session = runtime.create_session(None).await?;
    let mut events = runtime.bus().subscribe();
    let reply = runtime
        .prompt(&session.id, PromptInput { text: "What is this?".into(), ..Default::default() })
        .await?;
    // The events were published as the run went; an application would read them concurrently.
    loop {
        match events.try_recv() {
            Ok(BusEvent::PartDelta { .. }) => {}
            // The JSON `session run --format events` prints for it.
            Ok(event) => println!("{}", serde_json::to_string(&session_runtime::wire::Event::bus(&event))?),
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => {}
            Err(_) => break,
        }
    }
    println!("reply {}: {} output tokens, error: {:?}", reply.id, reply.tokens.output, reply.error);
    store.close().await?;
    Ok(())
}
