//! Serves the HTTP API over a runtime of its own: a SQLite store in a temporary folder, the
//! built-in tools in a temporary project, and a scripted model (no key, no network).
//!
//! `cargo run -p session-server --example serve -- [PORT]` (default: a free port), then for
//! example `curl -X POST http://127.0.0.1:PORT/session`; Ctrl-C stops it.

use std::sync::Arc;

use session_core::ModelRef;
use session_llm::{Script, ScriptedProvider};
use session_runtime::{ProviderEntry, Runtime, RuntimeSettings, StaticModels};
use session_server::{Access, BusAsker, ConnectionLimits, ServerParts};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_tools::{PermissionEngine, ToolExecutor, Workspace, builtin_registry};

/// The model: reads the README (which asks for no permission), then answers.
const SCRIPT: &str = r#"{
  "turns": [
    {"text": "Reading the README.", "calls": [{"op": "read", "path": "README.md"}]},
    {"text": "The project counts words."}
  ]
}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse().map_err(|error| format!("PORT {port:?}: {error}"))?,
        None => 0,
    };
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
    let models = StaticModels::new().with_provider("scripted", entry);
    // Asks go to `/event` as `permission.asked`; clients answer them over HTTP.
    let asker = Arc::new(BusAsker::new());
    let permissions = Arc::new(PermissionEngine::new(asker.clone()));
    let tools = ToolExecutor::new(builtin_registry()?, Workspace::new(&project)?, permissions.clone());
    let default_model = ModelRef { provider_id: "scripted".into(), model_id: "any".into(), variant: None };
    let runtime = Arc::new(
        Runtime::builder(store.clone(), Arc::new(tools), RuntimeSettings::new(default_model, &project))
            .models(Arc::new(models))
            .build(),
    );
    asker.attach(runtime.bus().clone());

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    // No token: requests naming 127.0.0.1:PORT (or localhost, [::1]) from no web page.
    let parts = ServerParts::new(runtime, store.clone(), permissions, Access::new(addr));
    let shutdown = parts.shutdown.clone();
    let app = session_server::router(parts);
    println!("serving on http://{addr}");
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    session_server::serve(listener, app, ConnectionLimits::default(), shutdown).await?;
    store.close().await?;
    Ok(())
}
