//! What a running tool gets besides its arguments.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use session_core::{
    JsonObject, MessageId, SessionId, permission::PermissionRequest, permission::Rule, permission::Ruleset,
    permission::ToolCallRef,
};
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::permission::PermissionEngine;
use crate::sandbox::Sandbox;
use crate::shell_env::ShellEnvPolicy;
use crate::todo::TodoStore;
use crate::tool_output::ToolOutputDir;
use crate::workspace::{ResolvedPath, Workspace};

type ProgressFn = dyn Fn(Option<String>, Option<JsonObject>) + Send + Sync;

/// Where a running tool's title and metadata updates go (`ctx.metadata(...)`, SPEC 1.2).
#[derive(Clone, Default)]
pub struct ProgressSink {
    report: Option<Arc<ProgressFn>>,
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink").field("connected", &self.report.is_some()).finish()
    }
}

impl ProgressSink {
    /// A sink that drops every update.
    pub fn none() -> Self {
        Self { report: None }
    }

    /// A sink that calls `report(title, metadata)` for every update.
    pub fn new(report: impl Fn(Option<String>, Option<JsonObject>) + Send + Sync + 'static) -> Self {
        Self { report: Some(Arc::new(report)) }
    }

    /// Reports a new title and/or metadata of the running call.
    pub fn report(&self, title: Option<String>, metadata: Option<JsonObject>) {
        if let Some(report) = &self.report {
            report(title, metadata);
        }
    }
}

/// Whether a path names a file or a directory, for the `external_directory` ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A file: the ask covers its parent folder.
    File,
    /// A directory: the ask covers the directory itself.
    Directory,
}

/// The context of one tool call: who calls, where, how to report, how to ask, how to stop.
#[derive(Clone)]
pub struct ToolContext {
    session_id: SessionId,
    message_id: MessageId,
    call_id: String,
    agent: String,
    workspace: Arc<Workspace>,
    abort: CancellationToken,
    progress: ProgressSink,
    permissions: Arc<PermissionEngine>,
    ruleset: Arc<Ruleset>,
    todos: Arc<dyn TodoStore>,
    shell_env: Arc<ShellEnvPolicy>,
    sandbox: Sandbox,
    tool_output: Option<ToolOutputDir>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .field("agent", &self.agent)
            .field("root", &self.workspace.root())
            .finish_non_exhaustive()
    }
}

/// Everything a [`ToolContext`] is made of.
#[derive(Clone)]
pub struct ContextParts {
    /// The calling session.
    pub session_id: SessionId,
    /// The assistant message holding the call.
    pub message_id: MessageId,
    /// The provider's call id.
    pub call_id: String,
    /// The agent's name.
    pub agent: String,
    /// Where the file tools work.
    pub workspace: Arc<Workspace>,
    /// Cancels the call.
    pub abort: CancellationToken,
    /// Receives title and metadata updates.
    pub progress: ProgressSink,
    /// Answers permission asks.
    pub permissions: Arc<PermissionEngine>,
    /// The agent's rules merged with the session's.
    pub ruleset: Arc<Ruleset>,
    /// The session todo lists.
    pub todos: Arc<dyn TodoStore>,
    /// Which environment variables commands inherit.
    pub shell_env: Arc<ShellEnvPolicy>,
    /// How the commands the tools start are confined (this agent's).
    pub sandbox: Sandbox,
    /// Where whole outputs go when a tool keeps only part of one (none: nowhere).
    pub tool_output: Option<ToolOutputDir>,
}

impl ToolContext {
    /// A context from its parts.
    pub fn new(parts: ContextParts) -> Self {
        let ContextParts {
            session_id,
            message_id,
            call_id,
            agent,
            workspace,
            abort,
            progress,
            permissions,
            ruleset,
            todos,
            shell_env,
            sandbox,
            tool_output,
        } = parts;
        Self {
            session_id,
            message_id,
            call_id,
            agent,
            workspace,
            abort,
            progress,
            permissions,
            ruleset,
            todos,
            shell_env,
            sandbox,
            tool_output,
        }
    }

    /// Where whole outputs go when a tool keeps only part of one.
    pub fn tool_output(&self) -> Option<&ToolOutputDir> {
        self.tool_output.as_ref()
    }

    /// Which environment variables commands inherit.
    pub fn shell_env(&self) -> &ShellEnvPolicy {
        &self.shell_env
    }

    /// How the commands the tools start are confined.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The calling session.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The assistant message holding the call.
    pub fn message_id(&self) -> &MessageId {
        &self.message_id
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The workspace the file tools are confined to.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// Fires when the call is cancelled (the user interrupted, or cleanup gave up on it).
    pub fn abort(&self) -> &CancellationToken {
        &self.abort
    }

    /// The session todo lists.
    pub fn todos(&self) -> &dyn TodoStore {
        self.todos.as_ref()
    }

    /// Updates the running part's title and/or metadata (SPEC 1.2 `ctx.metadata`).
    pub fn metadata(&self, title: Option<String>, metadata: Option<JsonObject>) {
        self.progress.report(title, metadata);
    }

    /// Asks a permission under the call's ruleset; returns when allowed.
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), ToolError> {
        let tool = ToolCallRef { message_id: self.message_id.clone(), call_id: self.call_id.clone() };
        self.permissions.ask(&self.session_id, request, Some(tool), &self.ruleset, &self.abort).await
    }

    /// Asks for `request` even when the rules allow it (a deny still refuses): for a call
    /// whose patterns cannot be trusted to describe what it would do.
    pub async fn ask_anyway(&self, request: PermissionRequest) -> Result<(), ToolError> {
        let tool = ToolCallRef { message_id: self.message_id.clone(), call_id: self.call_id.clone() };
        self.permissions.ask_anyway(&self.session_id, request, Some(tool), &self.ruleset, &self.abort).await
    }

    /// Fails as a deny would when the call's rules deny any pattern of `request`; asks nothing.
    pub fn check_denied(&self, request: &PermissionRequest) -> Result<(), ToolError> {
        self.permissions.check_denied(&self.session_id, request, &self.ruleset)
    }

    /// The rule that decides `pattern` under `permission` for this call, if any.
    pub fn deciding_rule(&self, permission: &str, pattern: &str) -> Option<Rule> {
        self.permissions.deciding_rule(&self.session_id, permission, pattern, &self.ruleset)
    }

    /// Asks `permission` for `patterns`, with `always` patterns and metadata.
    pub async fn ask_for(
        &self,
        permission: &str,
        patterns: Vec<String>,
        always: Vec<String>,
        metadata: JsonObject,
    ) -> Result<(), ToolError> {
        self.ask(PermissionRequest { permission: permission.to_owned(), patterns, always, metadata }).await
    }

    /// Resolves a path for a file tool; a path outside the workspace asks the
    /// `external_directory` permission first and is refused when that is denied or rejected.
    pub async fn resolve_path(&self, requested: &str, kind: PathKind) -> Result<ResolvedPath, ToolError> {
        let resolved = self.workspace.resolve(requested)?;
        self.check_external(&resolved.path, kind).await?;
        Ok(resolved)
    }

    /// Asks `external_directory` for `path` when it lies outside the workspace.
    pub async fn check_external(&self, path: &Path, kind: PathKind) -> Result<(), ToolError> {
        match self.external_request(path, kind) {
            Some(request) => self.ask(request).await,
            None => Ok(()),
        }
    }

    /// The `external_directory` ask for `path` (its folder, for a file), or `None` when it
    /// lies inside the workspace.
    pub fn external_request(&self, path: &Path, kind: PathKind) -> Option<PermissionRequest> {
        if self.workspace.contains(path) {
            return None;
        }
        let dir = match kind {
            PathKind::Directory => path.to_path_buf(),
            PathKind::File => path.parent().map_or_else(|| path.to_path_buf(), Path::to_path_buf),
        };
        let dir_text = dir.to_string_lossy().replace('\\', "/");
        let glob = if dir_text.ends_with('/') { format!("{dir_text}*") } else { format!("{dir_text}/*") };
        let mut metadata = JsonObject::new();
        metadata.insert("filepath".into(), Value::String(path.to_string_lossy().into_owned()));
        metadata.insert("parentDir".into(), Value::String(dir_text));
        Some(PermissionRequest {
            permission: "external_directory".into(),
            patterns: vec![glob.clone()],
            always: vec![glob],
            metadata,
        })
    }
}
