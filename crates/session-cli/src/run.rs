//! `session run`: one prompt against a real provider, streamed to the terminal.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use async_trait::async_trait;
use session_core::{AgentPaths, Identifier as _, PermissionAsk, Reply, SessionId};
use session_llm::Catalog;
use session_runtime::{
    Agent, Clock as _, FsResolver, GitSnapshotter, NoSnapshots, PromptInput, Runtime, RuntimeParts,
    RuntimeSettings, Snapshotter, SystemClock, TokioSleeper, discover_in, load, parse_model_ref,
    user_config_dir,
};
use session_store::{DatabaseConfig, PgConfig, SqliteConfig, Store, StoreOptions};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};
use tokio::sync::mpsc;

use crate::models::ConfiguredModels;
use crate::render::{OutputFormat, Renderer};
use crate::status_line::{StatusLine, StatusPause};

/// Exit code of a run interrupted by the user.
pub const EXIT_INTERRUPTED: u8 = 130;

/// How permission asks are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskMode {
    /// Ask on the terminal.
    Terminal,
    /// Answer "once" (`--yes`).
    Yes,
    /// Reject (`--deny`).
    Deny,
    /// No terminal and no flag: an ask fails the run.
    Fail,
}

/// Everything `session run` needs, gathered by `main` from flags and the environment.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The prompt.
    pub prompt: String,
    /// `--model provider/model`.
    pub model: Option<String>,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--session`: continue this session.
    pub session: Option<String>,
    /// `--base-url` for the model's provider.
    pub base_url: Option<String>,
    /// `--db`: a PostgreSQL URL overriding the config's `database`.
    pub db: Option<String>,
    /// Output format.
    pub format: OutputFormat,
    /// How asks are answered.
    pub ask: AskMode,
    /// Draw the spinner and the retry countdown on stderr (only when it is a terminal).
    pub status_line: bool,
    /// The working directory (the workspace).
    pub cwd: PathBuf,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// Where data lives (the SQLite file, snapshots).
    pub data_dir: PathBuf,
    /// The environment, for config substitutions and API keys.
    pub env: HashMap<String, String>,
}

/// Answers asks as the flags and the terminal allow; never a silent allow.
struct CliAsker {
    mode: AskMode,
    failures: mpsc::UnboundedSender<String>,
    /// The status line gives up the terminal while a question waits there.
    status: StatusPause,
}

#[async_trait]
impl PermissionAsker for CliAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        let what = format!("{} {}", ask.request.permission, ask.request.patterns.join(", "));
        match self.mode {
            AskMode::Yes => Some(PermissionAnswer { reply: Reply::Once, message: None }),
            AskMode::Deny => Some(PermissionAnswer { reply: Reply::Reject, message: None }),
            AskMode::Fail => {
                let _ = self.failures.send(format!(
                    "the model asked for permission ({what}) and there is no terminal to ask: rerun with --yes to allow such asks once, or --deny to reject them"
                ));
                Some(PermissionAnswer { reply: Reply::Reject, message: None })
            }
            AskMode::Terminal => {
                let question =
                    format!("\npermission: {what}\n  allow [o]nce, [a]lways, [r]eject, or type feedback: ");
                self.status.pause();
                let answer = tokio::task::spawn_blocking(move || {
                    let mut stderr = std::io::stderr();
                    let _ = write!(stderr, "{question}");
                    let _ = stderr.flush();
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map(|_| line)
                })
                .await;
                self.status.resume();
                let line = match answer {
                    Ok(Ok(line)) => line.trim().to_owned(),
                    _ => String::new(),
                };
                Some(match line.as_str() {
                    "o" | "once" | "y" | "yes" => PermissionAnswer { reply: Reply::Once, message: None },
                    "a" | "always" => PermissionAnswer { reply: Reply::Always, message: None },
                    "" | "r" | "reject" | "n" | "no" => {
                        PermissionAnswer { reply: Reply::Reject, message: None }
                    }
                    feedback => PermissionAnswer { reply: Reply::Reject, message: Some(feedback.to_owned()) },
                })
            }
        }
    }
}

/// Opens the store the config or `--db` names, or the embedded SQLite file.
pub async fn open_store(database: Option<&str>, data_dir: &Path) -> Result<Arc<dyn Store>> {
    open_store_with(database, data_dir, StoreOptions::default()).await
}

/// Opens the store like [`open_store`], with the given store options (lease time, owner).
pub async fn open_store_with(
    database: Option<&str>,
    data_dir: &Path,
    options: StoreOptions,
) -> Result<Arc<dyn Store>> {
    let config = match database {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            DatabaseConfig::Postgres(PgConfig::new(url))
        }
        Some(other) => bail!(
            "database {other:?} is not a PostgreSQL URL (postgres://...); leave it unset for the embedded SQLite file"
        ),
        None => DatabaseConfig::Sqlite(SqliteConfig::new(data_dir.join("session.db"))),
    };
    session_store::open(&config, options).await.map_err(|error| {
        anyhow!(
            "cannot open the session database: {error}; check the --db URL or \"database\" in your config"
        )
    })
}

/// Where and how to build a runtime: the project, the user's folders, the model and store.
#[derive(Debug, Clone)]
pub struct RuntimeSetup {
    /// The working directory (the workspace).
    pub cwd: PathBuf,
    /// The user's home.
    pub home: Option<PathBuf>,
    /// Where data lives (the SQLite file, snapshots).
    pub data_dir: PathBuf,
    /// The environment, for config substitutions and API keys.
    pub env: HashMap<String, String>,
    /// The default model as provider/model (else the config's `model`).
    pub model: Option<String>,
    /// A base URL for the default model's provider.
    pub base_url: Option<String>,
    /// A PostgreSQL URL overriding the config's `database`.
    pub db: Option<String>,
    /// Lease time and other store settings.
    pub store_options: StoreOptions,
}

/// A runtime ready for prompts, with the handles around it.
pub struct Assembled {
    /// The engine.
    pub runtime: Arc<Runtime>,
    /// Its store.
    pub store: Arc<dyn Store>,
    /// Its permission engine (asks wait here for replies).
    pub permissions: Arc<PermissionEngine>,
    /// The default model.
    pub model: session_core::ModelRef,
    /// The database setting in effect (`--db`, else the config's `database`; none: SQLite).
    pub database: Option<String>,
}

impl std::fmt::Debug for Assembled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembled").field("model", &self.model).finish_non_exhaustive()
    }
}

/// Builds the runtime `session run` and `session serve` use: configuration, model, store,
/// tools with `asker` answering permission asks, snapshots and agents.
pub async fn assemble(setup: &RuntimeSetup, asker: Arc<dyn PermissionAsker>) -> Result<Assembled> {
    // The user layer lives in $XDG_CONFIG_HOME/session when that is set, else ~/.config/session.
    let user_dir = setup
        .env
        .get("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(|dir| PathBuf::from(dir).join("session"))
        .or_else(|| setup.home.as_deref().map(user_config_dir));
    let sources =
        discover_in(&setup.cwd, user_dir.as_deref(), setup.env.get("SESSION_CONFIG").map(PathBuf::from));
    let resolver = FsResolver::new(setup.env.clone(), setup.home.clone());
    let loaded = load(&sources, &resolver)?;
    for warning in &loaded.warnings {
        eprintln!("session: warning: {warning}");
    }
    let config = loaded.config;
    let reference = setup
        .model
        .clone()
        .or_else(|| config.model.clone())
        .ok_or_else(|| anyhow!("no model chosen: pass --model provider/model (for example anthropic/claude-sonnet-4-5) or set \"model\" in your config"))?;
    let model = parse_model_ref(&reference).ok_or_else(|| {
        anyhow!("--model must be provider/model, for example openai/gpt-4.1; got {reference:?}")
    })?;
    let base_url = setup.base_url.clone().map(|url| (model.provider_id.clone(), url));
    let models = ConfiguredModels::new(Catalog::embedded()?, config.clone(), setup.env.clone(), base_url)?;
    let provider = models.resolve_provider(&model.provider_id)?;
    if provider.api_key.is_none() && !provider.is_local() {
        bail!(
            "no API key for {}: set {} or provider.{}.options.apiKey in your config",
            provider.id,
            provider.key_vars.join(" or "),
            provider.id
        );
    }
    if models.resolve_model(&model.provider_id, &model.model_id).is_none() {
        bail!(
            "unknown model {reference}: it is not in the catalog; run `session models --provider {}` or add it under provider.{}.models",
            model.provider_id,
            model.provider_id
        );
    }

    std::fs::create_dir_all(&setup.data_dir)
        .with_context(|| format!("cannot create the data folder {}", setup.data_dir.display()))?;
    let store = open_store_with(
        setup.db.as_deref().or(config.database.as_deref()),
        &setup.data_dir,
        setup.store_options.clone(),
    )
    .await?;
    let permissions = Arc::new(PermissionEngine::new(asker));
    let workspace = Workspace::new(&setup.cwd)?;
    let workspace = match &setup.home {
        Some(home) => workspace.with_home(home),
        None => workspace,
    };
    let tools = Arc::new(
        ToolExecutor::new(builtin_registry()?, workspace, permissions.clone())
            .with_continue_loop_on_deny(config.continue_loop_on_deny()),
    );
    let snapshots: Arc<dyn Snapshotter> = match config.snapshot_enabled() {
        true => match GitSnapshotter::open(&setup.cwd, &setup.data_dir).await {
            Some(git) => Arc::new(git),
            None => Arc::new(NoSnapshots),
        },
        false => Arc::new(NoSnapshots),
    };
    let home = setup.home.as_ref().map(|h| h.to_string_lossy().into_owned());
    let user_rules = config.permission_rules(home.as_deref())?;
    let paths = AgentPaths::default();
    let mut agents = BTreeMap::new();
    let mut build = Agent::build(&user_rules, &paths);
    let mut plan = Agent::plan(&user_rules, &paths);
    for agent in [&mut build, &mut plan] {
        if let Some(configured) = config.agent.get(&agent.name) {
            if let Some(prompt) = &configured.prompt {
                agent.prompt.clone_from(prompt);
            }
            agent.model.clone_from(&configured.model);
            agent.steps = configured.steps.map(std::num::NonZero::get);
            agent.ruleset.extend(configured.permission_rules(home.as_deref())?);
        }
    }
    agents.insert(build.name.clone(), build);
    agents.insert(plan.name.clone(), plan);
    let instructions = std::fs::read_to_string(setup.cwd.join("AGENTS.md")).ok();
    let runtime = Arc::new(Runtime::new(RuntimeParts {
        store: store.clone(),
        models: Arc::new(models),
        tools,
        snapshots,
        clock: Arc::new(SystemClock),
        sleeper: Arc::new(TokioSleeper),
        agents,
        settings: RuntimeSettings {
            compaction: config.compaction.clone(),
            continue_loop_on_deny: config.continue_loop_on_deny(),
            output_token_max: session_core::OUTPUT_TOKEN_MAX,
            default_model: model.clone(),
            worktree: setup.cwd.clone(),
            instructions,
        },
    }));
    let database = setup.db.clone().or_else(|| config.database.clone()).filter(|d| !d.trim().is_empty());
    Ok(Assembled { runtime, store, permissions, model, database })
}

/// What to do about a run's final error, when the error itself does not say.
fn hint(error: &session_core::MessageError) -> &'static str {
    let message = error.message();
    let unreachable = ["ECONNREFUSED", "tcp connect error", "dns error", "error sending request"]
        .iter()
        .any(|sign| message.contains(sign));
    if unreachable {
        " (is the provider's server running? check its address: --base-url, or provider.<id>.options.baseURL in your config)"
    } else {
        ""
    }
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM: both abort the run cleanly (SPEC 8).
async fn interrupt_signal() {
    #[cfg(unix)]
    if let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        return;
    }
    // Without a way to listen, never resolve: a failed listener must not abort the run.
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs one prompt; returns the process exit code.
pub async fn run_prompt(options: RunOptions, out: impl Write + Send + 'static) -> Result<u8> {
    let setup = RuntimeSetup {
        cwd: options.cwd.clone(),
        home: options.home.clone(),
        data_dir: options.data_dir.clone(),
        env: options.env.clone(),
        model: options.model.clone(),
        base_url: options.base_url.clone(),
        db: options.db.clone(),
        store_options: StoreOptions::default(),
    };
    let (failures, mut failed) = mpsc::unbounded_channel();
    let mut status = StatusLine::new(options.status_line && options.format == OutputFormat::Text);
    let asker = CliAsker { mode: options.ask, failures, status: status.pause_handle() };
    let Assembled { runtime, store, model, .. } = assemble(&setup, Arc::new(asker)).await?;
    let session_id = match &options.session {
        Some(id) => {
            let id = SessionId::parse(id).map_err(|error| anyhow!("--session: {error}"))?;
            store.get_session(&id).await.map_err(|error| anyhow!("--session {id}: {error}"))?.id
        }
        None => runtime.create_session(None).await?.id,
    };
    let mut events = runtime.bus().subscribe();
    let mut renderer = Renderer::new(out, options.format);
    let mut run = {
        let runtime = runtime.clone();
        let id = session_id.clone();
        let input = PromptInput {
            text: options.prompt.clone(),
            agent: options.agent.clone(),
            model: Some(model),
            ..PromptInput::default()
        };
        tokio::spawn(async move { runtime.prompt(&id, input).await })
    };
    let mut interrupted = false;
    // One listener for the whole run, so a signal between two loop turns is not missed.
    let interrupt = interrupt_signal();
    tokio::pin!(interrupt);
    let mut ask_failure = None;
    let mut countdown = tokio::time::interval(std::time::Duration::from_millis(250));
    let result = loop {
        tokio::select! {
            biased;
            () = &mut interrupt, if !interrupted => {
                interrupted = true;
                eprintln!("\nsession: interrupting (press Ctrl-C again to quit at once)");
                runtime.cancel(&session_id);
                tokio::spawn(async {
                    interrupt_signal().await;
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                });
            }
            message = failed.recv(), if ask_failure.is_none() => {
                if let Some(message) = message {
                    ask_failure = Some(message);
                    runtime.cancel(&session_id);
                }
            }
            _ = countdown.tick(), if status.counting_down() => status.tick(SystemClock.now_ms()),
            event = events.recv() => match event {
                Ok(event) => {
                    status.suspend(|| renderer.event(&event))?;
                    status.event(&event, SystemClock.now_ms());
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break (&mut run).await,
            },
            finished = &mut run => {
                while let Ok(event) = events.try_recv() {
                    status.suspend(|| renderer.event(&event))?;
                }
                break finished;
            }
        }
    };
    drop(status);
    let reply = result.context("the run stopped unexpectedly")??;
    let tokens = reply.tokens;
    renderer.totals(&format!(
        "tokens: {} in, {} out | cost: ${} | session: {}",
        tokens.input + tokens.cache.read + tokens.cache.write,
        tokens.output + tokens.reasoning,
        reply.cost.round_dp(6).normalize(),
        session_id,
    ))?;
    store.close().await?;
    if let Some(message) = ask_failure {
        eprintln!("session: {message}");
        return Ok(1);
    }
    if interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(error) = reply.error {
        eprintln!("session: {}: {}{}", error.name(), error.message(), hint(&error));
        return Ok(1);
    }
    Ok(0)
}
