//! `session demo`: the whole runtime offline. A bundled script plays the model; everything
//! else is real: the embedded SQLite store, the tools in a temporary workspace, snapshots,
//! the loop, the bus.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use async_trait::async_trait;
use rust_decimal::Decimal;
use session_core::{Message, ModelRef, PartKind, permission::PermissionAsk, permission::Reply};
use session_llm::{Catalog, CatalogModel, Script, ScriptedProvider};
use session_runtime::snapshot::{GitSnapshotter, NoSnapshots, Snapshotter};
use session_runtime::{PromptInput, ProviderEntry, Runtime, RuntimeSettings, StaticModels};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};

use crate::render::{OutputFormat, Renderer};

/// The demo's provider id and model id.
const DEMO_PROVIDER: &str = "demo";
const DEMO_MODEL: &str = "scripted";
/// The catalog model whose prices the demo shows, so the cost line means something.
const PRICED_LIKE: &str = "anthropic/claude-sonnet-4-5";

/// What the demo run produced.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    /// Input tokens over all steps.
    pub input_tokens: u64,
    /// Output tokens over all steps.
    pub output_tokens: u64,
    /// Total cost in US dollars.
    pub cost: Decimal,
    /// Tool calls that completed.
    pub tools_completed: usize,
    /// The final answer's text.
    pub answer: String,
}

/// The demo runs in a throwaway folder, so every ask is answered "once".
struct AllowInDemo;

#[async_trait]
impl PermissionAsker for AllowInDemo {
    async fn ask(&self, _ask: &PermissionAsk) -> Option<PermissionAnswer> {
        Some(PermissionAnswer { reply: Reply::Once, message: None })
    }
}

fn write_sample_project(root: &Path) -> Result<()> {
    std::fs::create_dir_all(root.join("src"))?;
    std::fs::write(
        root.join("README.md"),
        "# tally\n\nA tiny command-line tool that counts words in its input.\n\nRun it with `tally < file.txt`.\n",
    )?;
    std::fs::write(
        root.join("src/main.rs"),
        "use std::io::Read;\n\nfn main() {\n    let mut text = String::new();\n    // TODO: report read errors instead of ignoring them\n    let _ = std::io::stdin().read_to_string(&mut text);\n    println!(\"{}\", text.split_whitespace().count());\n}\n",
    )?;
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )?;
    Ok(())
}

/// Runs the demo in `dir` (a fresh folder), writing what happens to `out`.
pub async fn run_demo(
    dir: &Path,
    format: OutputFormat,
    out: impl Write + Send + 'static,
) -> Result<DemoSummary> {
    let workspace = dir.join("project");
    let data = dir.join("data");
    write_sample_project(&workspace).context("writing the sample project")?;
    std::fs::create_dir_all(&data)?;

    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&SqliteConfig::new(data.join("session.db")), StoreOptions::default())
            .await
            .context("opening the embedded store")?,
    );
    let script = Script::demo().with_workdir(&workspace);
    let limit = session_core::overflow::ModelLimit {
        context: script.model.context,
        input: None,
        output: script.model.output,
    };
    let prompt = script.prompt.clone().unwrap_or_else(|| "Show me around this project.".to_owned());
    let provider = Arc::new(ScriptedProvider::new(script).with_provider_id(DEMO_PROVIDER));
    let catalog = Catalog::embedded()?;
    let mut model = CatalogModel::unknown(DEMO_MODEL);
    model.limit = limit;
    if let Some(priced) = catalog.lookup(PRICED_LIKE) {
        model.cost = priced.cost.clone();
    }
    let entry =
        ProviderEntry { client: provider, npm: session_llm::OPENAI_COMPATIBLE_NPM.to_owned(), retry: None };
    let models = Arc::new(StaticModels::new().with_provider(DEMO_PROVIDER, entry).with_model(
        DEMO_PROVIDER,
        DEMO_MODEL,
        model,
    ));

    // The sample project becomes a repository in process (libgit2: no git binary, no hooks
    // from a template); should that fail, the demo runs on without patch parts.
    let git_ok = session_runtime::git::init_repository(&workspace).is_ok();
    let snapshots: Arc<dyn Snapshotter> = match git_ok {
        true => match GitSnapshotter::open(&workspace, &data).await {
            Some(git) => Arc::new(git),
            None => Arc::new(NoSnapshots),
        },
        false => Arc::new(NoSnapshots),
    };
    let permissions = Arc::new(PermissionEngine::new(Arc::new(AllowInDemo)));
    let tools = Arc::new(ToolExecutor::new(builtin_registry()?, Workspace::new(&workspace)?, permissions));
    let default_model =
        ModelRef { provider_id: DEMO_PROVIDER.into(), model_id: DEMO_MODEL.into(), variant: None };
    let runtime = Arc::new(
        Runtime::builder(store.clone(), tools, RuntimeSettings::new(default_model, workspace.clone()))
            .models(models)
            .snapshots(snapshots)
            .build(),
    );

    let session = runtime.create_session(Some("demo".to_owned())).await?;
    let mut events = runtime.bus().subscribe();
    let mut renderer = Renderer::new(out, format);
    if format == OutputFormat::Text {
        renderer.totals(&format!(
            "session demo: a scripted model works in {}\n> {prompt}",
            workspace.display()
        ))?;
    }
    let mut run = {
        let runtime = runtime.clone();
        let id = session.id.clone();
        tokio::spawn(async move {
            runtime.prompt(&id, PromptInput { text: prompt, ..PromptInput::default() }).await
        })
    };
    let cancel = {
        let runtime = runtime.clone();
        let id = session.id.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                runtime.cancel(&id);
            }
        })
    };
    let result = loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Ok(event) => renderer.event(&event)?,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the terminal fell behind; some events were not shown");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break (&mut run).await,
            },
            finished = &mut run => {
                while let Ok(event) = events.try_recv() {
                    renderer.event(&event)?;
                }
                break finished;
            }
        }
    };
    cancel.abort();
    let reply = result.context("the demo run stopped unexpectedly")??;

    let history = store.load_history(&session.id).await?.messages;
    let mut summary = DemoSummary {
        input_tokens: 0,
        output_tokens: 0,
        cost: Decimal::ZERO,
        tools_completed: 0,
        answer: String::new(),
    };
    for message in &history {
        if let Message::Assistant(assistant) = &message.info {
            summary.cost += assistant.cost;
        }
        for part in &message.parts {
            match &part.kind {
                PartKind::StepFinish(step) => {
                    summary.input_tokens +=
                        step.tokens.input + step.tokens.cache.read + step.tokens.cache.write;
                    summary.output_tokens += step.tokens.output + step.tokens.reasoning;
                }
                PartKind::Tool(tool) if tool.state.status() == session_core::ToolStatus::Completed => {
                    summary.tools_completed += 1;
                }
                PartKind::Text(text) if message.info.id() == &reply.id => {
                    summary.answer.clone_from(&text.text)
                }
                _ => {}
            }
        }
    }
    renderer.totals(&format!(
        "tokens: {} in, {} out | cost: ${} (priced like {PRICED_LIKE}) | {} tool calls | store: {}",
        summary.input_tokens,
        summary.output_tokens,
        summary.cost.round_dp(6).normalize(),
        summary.tools_completed,
        data.join("session.db").display(),
    ))?;
    store.close().await?;
    if let Some(error) = reply.error {
        anyhow::bail!("the demo ended with an error: {}", error.message());
    }
    Ok(summary)
}
