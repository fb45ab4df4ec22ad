//! A runtime from a project folder, the user's folders and an environment map: the
//! configuration layers, the default model, the store, the tools, snapshots and agents. This is
//! what `session run` and `session serve` build; an embedder with its own config does the same
//! with one call.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_core::ModelRef;
use session_core::permission::Rule;
use session_llm::Catalog;
use session_mcp::{McpManager, SandboxAt};
use session_store::{DatabaseConfig, PgConfig, SqliteConfig, Store, StoreOptions};
use session_tools::{
    PermissionAsker, PermissionEngine, QuestionTool, Sandbox, SkillTool, ToolExecutor, ToolOutputDir,
    Workspace, builtin_registry,
};

use super::ComposeError;
use super::agents::{configured_agents_with, default_agent};
use super::instructions::{InstructionSources, instruction_files, instructions_text};
use super::models::ConfiguredModels;
use crate::config::WarningReason;
use crate::config::{
    ConfigSources, ConfigWarning, FsResolver, LoadedConfig, ServerConfig, ServerFolders, SkillSearch,
    SkillSet, TrustList, discover_from, load, mcp_servers, skill_folders, user_config_dir,
};
use crate::engine::{
    GitSnapshotter, ModelSource, NoSnapshots, PromptInput, Questions, RequestAhead, RequestSources, Runtime,
    RuntimeSettings, Snapshotter, SystemClock, TaskTool, parse_model_ref,
};

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
    pub model: ModelRef,
    /// The database setting in effect (`--db`, else the config's `database`; none: SQLite).
    pub database: Option<String>,
    /// The configuration's `server` section (read by `session serve`).
    pub server: ServerConfig,
    /// What the configuration had that was ignored (unknown keys), for the user to see.
    pub warnings: Vec<ConfigWarning>,
    /// The configured MCP servers (a tool source of the runtime); end them with
    /// [`McpManager::shutdown`] before the process exits.
    pub mcp: Arc<McpManager>,
    /// The one warning about a sandbox this kernel cannot enforce as configured.
    pub sandbox_warning: Option<String>,
    /// The first request of the prompt passed to [`assemble_sending`], already sent; pass it
    /// to [`Runtime::prompt_with`] for the new session.
    pub ahead: Option<RequestAhead>,
}

impl std::fmt::Debug for Assembled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembled").field("model", &self.model).finish_non_exhaustive()
    }
}

/// Opens the store `database` names (a PostgreSQL URL), or the embedded SQLite file in
/// `data_dir`.
pub async fn open_store(
    database: Option<&str>,
    data_dir: &Path,
    options: StoreOptions,
) -> Result<Arc<dyn Store>, ComposeError> {
    let config = match database {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            DatabaseConfig::Postgres(PgConfig::new(url))
        }
        Some(other) => return Err(ComposeError::NotPostgres(other.to_owned())),
        None => DatabaseConfig::Sqlite(SqliteConfig::new(data_dir.join("session.db"))),
    };
    session_store::open(&config, options).await.map_err(ComposeError::Store)
}

/// The user's config folder: `$XDG_CONFIG_HOME/session` when that is set, else
/// `~/.config/session`.
pub fn user_dir(env: &HashMap<String, String>, home: Option<&Path>) -> Option<PathBuf> {
    env.get("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(|dir| PathBuf::from(dir).join("session"))
        .or_else(|| home.map(user_config_dir))
}

/// The project folder a run in `cwd` belongs to, as trust sees it: the git root above `cwd`,
/// else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    crate::config::trust_root(cwd)
}

/// Loads the configuration a runtime of `setup` reads: the user, project and `SESSION_CONFIG`
/// layers, the project's applied in full only when trusted. `session models` and
/// `session run` read the same layers through this.
pub fn load_config(setup: &RuntimeSetup) -> Result<LoadedConfig, ComposeError> {
    let (sources, resolver) = config_sources(setup);
    Ok(load(&sources, &resolver)?)
}

/// The configuration files a runtime of `setup` reads (trust applied), and the resolver of
/// their substitutions.
pub fn config_sources(setup: &RuntimeSetup) -> (ConfigSources, FsResolver) {
    // The user layer lives in $XDG_CONFIG_HOME/session when that is set, else ~/.config/session.
    let user_dir = user_dir(&setup.env, setup.home.as_deref());
    let mut sources = discover_from(
        &setup.cwd,
        setup.home.as_deref(),
        user_dir.as_deref(),
        setup.env.get("SESSION_CONFIG").map(PathBuf::from),
    );
    // A project layer applies in full only in a folder the user trusted (`session trust`).
    let trust = user_dir.as_deref().map(TrustList::load).unwrap_or_default();
    sources.trusted = trust.trusted;
    let resolver = FsResolver::new(setup.env.clone(), setup.home.clone());
    (sources, resolver)
}

/// The skills a runtime of `setup` loads (see [`crate::config::skill_folders`]): the user's
/// folders (ours, OpenCode's `~/.config/opencode`, `~/.claude/skills`, `~/.agents/skills`) and
/// the project's, these under the trust rules of the project folder.
pub fn load_skills(setup: &RuntimeSetup) -> SkillSet {
    let (sources, _) = config_sources(setup);
    skills_of(setup, &sources)
}

fn skills_of(setup: &RuntimeSetup, sources: &ConfigSources) -> SkillSet {
    let opencode_dir = setup
        .env
        .get("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(|dir| PathBuf::from(dir).join("opencode"))
        .or_else(|| setup.home.as_ref().map(|home| home.join(".config").join("opencode")));
    let user_dirs: Vec<PathBuf> =
        opencode_dir.into_iter().chain(user_dir(&setup.env, setup.home.as_deref())).collect();
    let search = SkillSearch {
        cwd: &setup.cwd,
        project_root: sources.project_root.as_deref().unwrap_or(&setup.cwd),
        home: setup.home.as_deref(),
        user_dirs: &user_dirs,
        // `is_trusted` takes a file of the folder.
        trusted: sources.is_trusted(&setup.cwd.join("session.json")),
    };
    SkillSet::load(&skill_folders(&search))
}

/// The MCP servers the configuration of `setup`'s project names, none started (for
/// `session mcp list` and `session mcp call`, which need no model).
pub fn mcp_manager(setup: &RuntimeSetup) -> Result<McpManager, ComposeError> {
    let (sources, resolver) = config_sources(setup);
    let loaded = load(&sources, &resolver)?;
    let (_, at) = sandbox_of(&loaded.config, setup);
    Ok(McpManager::confined(mcp_specs(&loaded.config, setup, &sources)?, at))
}

/// The folder under the data folder that local MCP servers without a `cwd` start in.
const MCP_FOLDER: &str = "mcp-cwd";

/// The configured MCP servers of `setup`'s project: a local one starts in its config's `cwd`
/// (inside the project only when the project is trusted), else in [`MCP_FOLDER`] under the
/// data folder, never in the model-written project by default.
fn mcp_specs(
    config: &crate::config::Config,
    setup: &RuntimeSetup,
    sources: &ConfigSources,
) -> Result<Vec<session_mcp::ServerSpec>, ComposeError> {
    let private = setup.data_dir.join(MCP_FOLDER);
    let folders = ServerFolders {
        project: &setup.cwd,
        private: &private,
        // `is_trusted` takes a file of the folder.
        project_trusted: sources.is_trusted(&setup.cwd.join("session.json")),
    };
    Ok(mcp_servers(&config.mcp, folders)?)
}

/// The command sandbox `config` sets for `setup`'s project, and the same sandbox laid over the
/// project for the local MCP servers that ask for it.
fn sandbox_of(config: &crate::config::Config, setup: &RuntimeSetup) -> (Sandbox, SandboxAt) {
    let sandbox = Sandbox::new(config.sandbox.settings(&setup.cwd, setup.home.as_deref()));
    let at = SandboxAt { sandbox: sandbox.clone(), workspace: setup.cwd.clone() };
    (sandbox, at)
}

/// Builds the runtime of a project: configuration, model, store, tools with `asker` answering
/// permission asks, snapshots and agents.
pub async fn assemble(
    setup: &RuntimeSetup,
    asker: Arc<dyn PermissionAsker>,
) -> Result<Assembled, ComposeError> {
    assemble_sending(setup, asker, None, &[]).await
}

/// [`assemble`], and with `first` (the first prompt of a session about to be created with
/// `session_rules`) its first step's request sent while the store opens ([`Assembled::ahead`]). Nothing is sent
/// when an untrusted project's config was cut down (the caller may load it again in full),
/// nor when the prompt would fail before it is stored.
///
/// The request leaves before the store is known to open: when it then fails to, the early
/// request is dropped unread, though its provider may already have counted it.
pub async fn assemble_sending(
    setup: &RuntimeSetup,
    asker: Arc<dyn PermissionAsker>,
    first: Option<&PromptInput>,
    session_rules: &[Rule],
) -> Result<Assembled, ComposeError> {
    let (sources, resolver) = config_sources(setup);
    let loaded = load(&sources, &resolver)?;
    let config = loaded.config;
    let reference = setup.model.clone().or_else(|| config.model.clone()).ok_or(ComposeError::NoModel)?;
    let model = parse_model_ref(&reference).ok_or_else(|| ComposeError::BadModelRef(reference.clone()))?;
    let base_url = setup.base_url.clone().map(|url| (model.provider_id.clone(), url));
    let models = ConfiguredModels::new(Catalog::embedded()?, config.clone(), setup.env.clone(), base_url)?;
    let provider = models.resolve_provider(&model.provider_id)?;
    // What the user named comes first: a key does not help a model that does not exist.
    if models.resolve_model(&model.provider_id, &model.model_id).is_none() {
        return Err(ComposeError::UnknownModel { reference, provider: model.provider_id.clone() });
    }
    if provider.api_key.is_none() && !provider.is_local() {
        let vars = provider.key_vars.join(" or ");
        let configured_empty = config
            .provider
            .get(&provider.id)
            .and_then(|p| p.options.api_key.as_deref())
            .is_some_and(|key| key.trim().is_empty());
        return Err(match configured_empty {
            true => ComposeError::EmptyApiKey {
                provider: provider.id,
                vars,
                unset: match resolver.unset_variables() {
                    unset if unset.is_empty() => "it is set to an empty string".to_owned(),
                    unset => format!("unset in your environment: {}", unset.join(", ")),
                },
            },
            false => ComposeError::NoApiKey { provider: provider.id, vars },
        });
    }

    // The sandbox's kernel probe (a short-lived process) runs while the store opens.
    let (sandbox, at) = sandbox_of(&config, setup);
    sandbox.probe_in_background();
    let probed = sandbox.clone();
    std::fs::create_dir_all(&setup.data_dir)
        .map_err(|source| ComposeError::DataDir { path: setup.data_dir.display().to_string(), source })?;
    // The store opens (for a new SQLite file: creation and migrations, most of a fresh run's
    // start) on a thread of tokio's blocking pool while this one builds the tools, agents and
    // instructions, so the two overlap; nothing below needs it until the runtime is built.
    let opening = {
        let database = setup.db.clone().or_else(|| config.database.clone());
        let data_dir = setup.data_dir.clone();
        let options = setup.store_options.clone();
        beside(async move { open_store(database.as_deref(), &data_dir, options).await })
    };
    // The snapshot repository opens (for a new one: its creation) beside the store, off the
    // first request's path: the request sent ahead does not need it.
    let snapshot_opening = config.snapshot_enabled().then(|| {
        let (cwd, data_dir) = (setup.cwd.clone(), setup.data_dir.clone());
        beside(async move { GitSnapshotter::open(&cwd, &data_dir).await })
    });
    let permissions = Arc::new(PermissionEngine::new(asker));
    let workspace = Workspace::new(&setup.cwd)?;
    let workspace = match &setup.home {
        Some(home) => workspace.with_home(home),
        None => workspace,
    };
    let home = setup.home.as_ref().map(|h| h.to_string_lossy().into_owned());
    // As OpenCode 1.18.34's agents do, every agent reads and greps the outputs saved in the
    // data folder without an `external_directory` ask (bash names them when it cuts one).
    let tool_output = ToolOutputDir::in_data_dir(&setup.data_dir);
    let skills = Arc::new(skills_of(setup, &sources));
    // So do they read the folders of the skills (their scripts and references).
    let paths = session_core::permission::AgentPaths {
        tool_output_glob: Some(format!("{}/*", tool_output.path().display())),
        skill_globs: skills.folder_globs(),
        ..Default::default()
    };
    let agents = configured_agents_with(&config, home.as_deref(), &paths)?;
    let mut registry = builtin_registry()?;
    let task = Arc::new(TaskTool::new(&agents));
    // Their schemas are fixed in code and tested against the meta-schema (engine/task.rs,
    // session-tools' skill tool).
    registry.register_builtin(task.clone());
    registry.register_builtin(Arc::new(SkillTool::new(skills.tool_skills())));
    // Questions wait in the runtime's table until a client answers (the server's routes, the
    // terminal UI, `session run` on a terminal); the agents' `question` rule turns the tool
    // off where nobody would (`session run` without a terminal denies it).
    let questions = Questions::new();
    registry.register_builtin(Arc::new(QuestionTool::new(questions.clone())));
    // MCP servers start when the first model request needs tools, not here.
    // Local servers whose config says `sandbox: true` run under the same sandbox.
    let mcp = Arc::new(McpManager::confined(mcp_specs(&config, setup, &sources)?, at));
    let mut executor = ToolExecutor::new(registry, workspace, permissions.clone())
        .with_continue_loop_on_deny(config.continue_loop_on_deny())
        .with_shell_env(config.shell_env.policy())
        .with_sandbox(sandbox)
        // Whole outputs of long commands go to the data folder, never the project, where they
        // would show among the user's changes.
        .with_tool_output_in(&setup.data_dir)
        // The plan agent studies the project: its commands may not change it.
        .with_agent_sandbox("plan", session_tools::SandboxMode::ReadOnly);
    if !mcp.is_empty() {
        executor = executor.with_source(mcp.clone());
    }
    let tools = Arc::new(executor);
    let mut settings = RuntimeSettings::new(model.clone(), setup.cwd.clone());
    settings.compaction = config.compaction.clone();
    settings.continue_loop_on_deny = config.continue_loop_on_deny();
    settings.default_agent = Some(default_agent(&config, &agents)?);
    settings.commands = config.command.clone();
    settings.skills = skills.clone();
    let root = project_root(&setup.cwd);
    let user_dir = user_dir(&setup.env, setup.home.as_deref());
    let instruction_sources = InstructionSources {
        cwd: &setup.cwd,
        root: &root,
        user_dir: user_dir.as_deref(),
        home: setup.home.as_deref(),
        instructions: &config.instructions,
    };
    let files = instruction_files(&instruction_sources);
    settings.instructions = instructions_text(&files, &instruction_sources)?;
    settings.compaction_model =
        config.agent.get("compaction").and_then(|agent| agent.model.as_deref()).and_then(parse_model_ref);
    settings.titles = true;
    settings.small_model = match &config.small_model {
        Some(reference) => {
            Some(parse_model_ref(reference).ok_or_else(|| ComposeError::BadModelRef(reference.clone()))?)
        }
        None => None,
    };
    let models: Arc<dyn ModelSource> = Arc::new(models);
    let untrusted = loaded.warnings.iter().any(|warning| warning.reason == WarningReason::Untrusted);
    let ahead = match first.filter(|_| !untrusted) {
        Some(input) => {
            let sources = RequestSources {
                models: models.as_ref(),
                tools: tools.as_ref(),
                agents: &agents,
                settings: &settings,
                clock: &SystemClock,
            };
            // A prompt that cannot be sent fails the same way when the run stores it.
            RequestAhead::send(sources, input, session_rules).await.ok()
        }
        None => None,
    };
    let snapshots: Arc<dyn Snapshotter> = match snapshot_opening {
        Some(opening) => match joined(opening).await.flatten() {
            Some(git) => Arc::new(git.with_retention(config.snapshot_retention())),
            None => Arc::new(NoSnapshots),
        },
        None => Arc::new(NoSnapshots),
    };
    let store = joined(opening).await.ok_or(ComposeError::Store(session_store::StoreError::Closed))??;
    let runtime = Runtime::builder(store.clone(), tools, settings)
        .models(models)
        .snapshots(snapshots)
        .agents(agents)
        .questions(questions)
        .build();
    let runtime = Arc::new(runtime);
    task.attach(&runtime);
    let database = setup.db.clone().or_else(|| config.database.clone()).filter(|d| !d.trim().is_empty());
    // Last: by now the probe started before the store opened has most likely finished.
    let sandbox_warning = probed.warning();
    Ok(Assembled {
        runtime,
        store,
        permissions,
        model,
        database,
        server: config.server.clone(),
        warnings: loaded.warnings.into_iter().chain(skills.warnings()).collect(),
        mcp,
        sandbox_warning,
        ahead,
    })
}

/// Runs `future` on a thread of tokio's blocking pool, beside the calling task: work that
/// blocks (SQLite's file, libgit2) and that the caller needs only later.
fn beside<T: Send + 'static>(
    future: impl std::future::Future<Output = T> + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || handle.block_on(future))
}

/// What `task` returned, its panic passed on; `None` when the async runtime stopped it (only
/// when it shuts down under the assembly).
async fn joined<T>(task: tokio::task::JoinHandle<T>) -> Option<T> {
    match task.await {
        Ok(value) => Some(value),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => None,
    }
}
