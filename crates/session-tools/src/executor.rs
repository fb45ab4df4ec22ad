//! Running one tool call: validation, the context, cancellation.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use session_core::{JsonObject, MessageId, SessionId, permission::Ruleset, processor::Effect};
use tokio_util::sync::CancellationToken;

use crate::context::{ContextParts, ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::permission::PermissionEngine;
use crate::registry::{ToolDefinition, ToolRegistry};
use crate::sandbox::{Sandbox, SandboxMode};
use crate::shell_env::ShellEnvPolicy;
use crate::source::{ToolSource, source_registry};
use crate::todo::{MemoryTodos, TodoStore};
use crate::tool::{Tool, ToolSuccess};
use crate::tool_output::ToolOutputDir;
use crate::tools::blocking;
use crate::workspace::Workspace;

/// How long a cancelled tool may take to return on its own (with its partial output) before
/// the executor drops it.
pub const ABORT_GRACE: Duration = Duration::from_secs(2);

/// One call the model made (the fields of `Effect::ExecuteTool` that execution needs).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInvocation {
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The normalized input.
    pub input: JsonObject,
}

impl ToolInvocation {
    /// The call of an `Effect::ExecuteTool`, or `None` for any other effect.
    pub fn from_effect(effect: &Effect) -> Option<Self> {
        match effect {
            Effect::ExecuteTool { call_id, tool, input, .. } => {
                Some(Self { call_id: call_id.clone(), tool: tool.clone(), input: JsonObject::clone(input) })
            }
            _ => None,
        }
    }
}

/// Who calls and under which rules: the same for every call of one processor run.
#[derive(Debug, Clone)]
pub struct CallScope {
    /// The calling session.
    pub session_id: SessionId,
    /// The assistant message holding the calls.
    pub message_id: MessageId,
    /// The agent's name.
    pub agent: String,
    /// The agent's rules merged with the session's (what `ctx.ask` evaluates).
    pub ruleset: Arc<Ruleset>,
    /// Cancels every call of the scope (the user interrupted).
    pub abort: CancellationToken,
}

/// Runs calls of registered tools in a workspace, with a permission engine.
pub struct ToolExecutor {
    registry: ToolRegistry,
    workspace: Arc<Workspace>,
    permissions: Arc<PermissionEngine>,
    todos: Arc<dyn TodoStore>,
    continue_loop_on_deny: bool,
    shell_env: Arc<ShellEnvPolicy>,
    sources: Vec<Arc<dyn ToolSource>>,
    // The sources' tools as of the last `refresh_sources` (swapped whole, read per call).
    sourced: RwLock<Arc<ToolRegistry>>,
    sandbox: Sandbox,
    /// Agents whose commands run at least this strictly, with their sandbox built.
    agent_sandboxes: Vec<(String, SandboxMode, Sandbox)>,
    /// Sessions whose commands run at least this strictly (a subagent's: its parent's mode).
    session_sandboxes: Mutex<HashMap<SessionId, SandboxMode>>,
    tool_output: Option<ToolOutputDir>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("registry", &self.registry)
            .field("root", &self.workspace.root())
            .field("continue_loop_on_deny", &self.continue_loop_on_deny)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor for `registry`'s tools confined to `workspace`, asking through `permissions`;
    /// todo lists are kept in memory.
    pub fn new(registry: ToolRegistry, workspace: Workspace, permissions: Arc<PermissionEngine>) -> Self {
        Self {
            registry,
            workspace: Arc::new(workspace),
            permissions,
            todos: Arc::new(MemoryTodos::default()),
            continue_loop_on_deny: false,
            shell_env: Arc::new(ShellEnvPolicy::default()),
            sources: Vec::new(),
            sourced: RwLock::new(Arc::new(ToolRegistry::new())),
            sandbox: Sandbox::off(),
            agent_sandboxes: Vec::new(),
            session_sandboxes: Mutex::new(HashMap::new()),
            tool_output: None,
        }
    }

    /// Saves the whole output of a command whose tail alone the model gets in `tool-output`
    /// under `data_dir` (see [`ToolOutputDir`]); without it only the tail is kept.
    pub fn with_tool_output_in(mut self, data_dir: &std::path::Path) -> Self {
        self.tool_output = Some(ToolOutputDir::in_data_dir(data_dir));
        self
    }

    /// Adds a source of tools that can change while the process runs (MCP servers).
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Asks every source for its current tools (starting what it needs); the next
    /// [`ToolExecutor::definitions`] and calls see them. Does nothing without sources.
    pub async fn refresh_sources(&self) {
        if self.sources.is_empty() {
            return;
        }
        let lists = futures_util::future::join_all(self.sources.iter().map(|source| source.tools())).await;
        let registry = source_registry(lists.into_iter().flatten().collect(), &self.registry);
        if let Ok(mut sourced) = self.sourced.write() {
            *sourced = Arc::new(registry);
        }
    }

    fn sourced(&self) -> Arc<ToolRegistry> {
        self.sourced.read().map(|sourced| sourced.clone()).unwrap_or_default()
    }

    /// The names of every tool offered: the registry's, then the sources'.
    pub fn tool_names(&self) -> Vec<String> {
        let sourced = self.sourced();
        self.registry.names().into_iter().chain(sourced.names()).map(str::to_owned).collect()
    }

    /// The definitions to send with a model request (the registry's, then the sources'),
    /// leaving out the tools in `disabled`; see [`ToolRegistry::definitions`].
    pub fn definitions(&self, disabled: &BTreeSet<String>) -> Vec<ToolDefinition> {
        let mut definitions = self.registry.definitions(disabled);
        definitions.extend(self.sourced().definitions(disabled));
        definitions
    }

    fn validate(&self, call: &ToolInvocation) -> Result<Arc<dyn Tool>, ToolError> {
        if self.registry.get(&call.tool).is_none() {
            let sourced = self.sourced();
            if sourced.get(&call.tool).is_some() {
                return sourced.validate(&call.tool, &call.input);
            }
        }
        self.registry.validate(&call.tool, &call.input).map_err(|error| match error {
            ToolError::UnknownTool { name, .. } => {
                // Every tool a model may call, `invalid` among them, in code-unit order, as
                // OpenCode 1.18.34 lists them.
                let mut callable = self.tool_names();
                callable.sort_unstable();
                callable.dedup();
                ToolError::UnknownTool { name, available: callable.join(", ") }
            }
            other => other,
        })
    }

    /// Keeps todo lists in `todos` instead of memory.
    pub fn with_todos(mut self, todos: Arc<dyn TodoStore>) -> Self {
        self.todos = todos;
        self
    }

    /// Sets which environment variables commands inherit (config `shell_env`).
    pub fn with_shell_env(mut self, policy: ShellEnvPolicy) -> Self {
        self.shell_env = Arc::new(policy);
        self
    }

    /// Sets the sandbox of the commands the tools start (config `sandbox`).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        for (_, mode, built) in &mut self.agent_sandboxes {
            *built = sandbox.at_least(*mode);
        }
        self.sandbox = sandbox;
        self
    }

    /// Runs `agent`'s commands at least as strictly as `mode` (the plan agent: read-only).
    pub fn with_agent_sandbox(mut self, agent: impl Into<String>, mode: SandboxMode) -> Self {
        let built = self.sandbox.at_least(mode);
        self.agent_sandboxes.push((agent.into(), mode, built));
        self
    }

    /// The sandbox of the executor's commands (before per-agent modes).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Runs `session`'s commands at least as strictly as `mode`, whatever its agent (a
    /// subagent's session: the mode its parent's commands run in); replaces an earlier one.
    pub fn set_session_sandbox(&self, session: &SessionId, mode: SandboxMode) {
        let mut sessions = self.session_sandboxes.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.insert(session.clone(), mode);
    }

    fn sandbox_for(&self, agent: &str, session: &SessionId) -> Sandbox {
        let by_agent = self
            .agent_sandboxes
            .iter()
            .find(|(name, _, _)| name == agent)
            .map_or_else(|| self.sandbox.clone(), |(_, _, built)| built.clone());
        let floor =
            self.session_sandboxes.lock().unwrap_or_else(PoisonError::into_inner).get(session).copied();
        match floor {
            Some(mode) => by_agent.at_least(mode),
            None => by_agent,
        }
    }

    /// Sets `experimental.continue_loop_on_deny` (see [`ToolError::blocks_loop`]).
    pub fn with_continue_loop_on_deny(mut self, continue_loop_on_deny: bool) -> Self {
        self.continue_loop_on_deny = continue_loop_on_deny;
        self
    }

    /// The registered tools.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The permission engine.
    pub fn permissions(&self) -> &Arc<PermissionEngine> {
        &self.permissions
    }

    /// The todo lists.
    pub fn todos(&self) -> &Arc<dyn TodoStore> {
        &self.todos
    }

    /// `experimental.continue_loop_on_deny`.
    pub fn continue_loop_on_deny(&self) -> bool {
        self.continue_loop_on_deny
    }

    /// True when `error` stops the agent loop under this executor's configuration.
    pub fn blocks_loop(&self, error: &ToolError) -> bool {
        error.blocks_loop(self.continue_loop_on_deny)
    }

    /// Runs one call to its end: the arguments are validated first (the tool never sees bad
    /// ones), then the tool runs with a context carrying `abort` and `progress`. A cancelled
    /// tool gets [`ABORT_GRACE`] to return its partial result before it is dropped.
    pub async fn run(
        &self,
        call: &ToolInvocation,
        scope: &CallScope,
        abort: CancellationToken,
        progress: ProgressSink,
    ) -> Result<ToolSuccess, ToolError> {
        let tool = self.validate(call)?;
        if abort.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let ctx = ToolContext::new(ContextParts {
            session_id: scope.session_id.clone(),
            message_id: scope.message_id.clone(),
            call_id: call.call_id.clone(),
            agent: scope.agent.clone(),
            workspace: self.workspace.clone(),
            abort: abort.clone(),
            progress,
            permissions: self.permissions.clone(),
            ruleset: scope.ruleset.clone(),
            todos: self.todos.clone(),
            shell_env: self.shell_env.clone(),
            sandbox: self.sandbox_for(&scope.agent, &scope.session_id),
            tool_output: self.tool_output.clone(),
        });
        let execution = tool.execute(call.input.clone(), &ctx);
        tokio::pin!(execution);
        let result = tokio::select! {
            biased;
            result = &mut execution => result,
            () = abort.cancelled() => {
                match tokio::time::timeout(ABORT_GRACE, &mut execution).await {
                    Ok(result) => result,
                    Err(_) => Err(ToolError::Aborted),
                }
            }
        };
        let success = match result {
            Ok(success) if success.attachments.iter().any(crate::image::is_inline_image) => {
                // Decoding and scaling are CPU work: off the async threads.
                blocking(move || Ok(success.with_fitted_images())).await?
            }
            other => other?,
        };
        // Every result says whether its output was cut, as OpenCode's tool wrapper makes it.
        if !crate::truncate::may_cut(&success) {
            let mut success = success;
            crate::truncate::settle(&mut success, None, &[]);
            return Ok(success);
        }
        let saved_in = self.tool_output.clone();
        let rules = Arc::clone(&scope.ruleset);
        blocking(move || {
            let mut success = success;
            crate::truncate::settle(&mut success, saved_in.as_ref(), &rules);
            Ok(success)
        })
        .await
    }
}
