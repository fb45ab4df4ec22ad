//! One configured server: starting it (bounded by its timeout), its state and last error,
//! its tool list (re-read after `notifications/tools/list_changed`), calls, restarts of a dead
//! local server, and its end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt as _;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde::Serialize;
use session_core::JsonObject;
use session_tools::ToolSuccess;
use tokio::sync::Mutex;
use tokio_util::codec::{FramedRead, LinesCodec};

use crate::error::McpError;
use crate::spawn::{SandboxAt, local_command};
use crate::spec::{RemoteServer, ServerSpec, Transport};

/// The longest stderr line of a local server that is logged whole.
const MAX_STDERR_LINE: usize = 8 * 1024;

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Configured and enabled, not started yet (no model request needed tools so far).
    Pending,
    /// Initialized; its tools are offered.
    Connected,
    /// It failed to start or died; see the last error.
    Failed,
    /// Disabled in the config.
    Disabled,
}

impl ServerState {
    /// The status word of OpenCode's `GET /mcp` (`connected`, `failed`, `disabled`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Connected => "connected",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

/// A server's state for `session mcp list` and `GET /mcp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    /// The config key.
    pub name: String,
    /// Where it is.
    pub state: ServerState,
    /// The names its tools are offered under, as last listed.
    pub tools: Vec<String>,
    /// Its last error, if any.
    pub error: Option<String>,
}

/// One tool as the server listed it.
#[derive(Debug, Clone)]
pub(crate) struct ListedTool {
    /// The server's own name for it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub schema: serde_json::Value,
}

/// Notifications from the server: a changed tool list marks the list stale.
#[derive(Clone)]
struct Handler {
    server: String,
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("session-runtime", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "MCP tool list changed");
        self.stale.store(true, Ordering::SeqCst);
    }
}

type Service = RunningService<RoleClient, Handler>;

/// A server's tools with valid schemas, and what was wrong with the others.
struct Listing {
    tools: Vec<ListedTool>,
    problems: Option<String>,
}

#[derive(Default)]
struct Inner {
    service: Option<Arc<Service>>,
    tools: Vec<ListedTool>,
    state: Option<ServerState>,
    error: Option<String>,
}

/// One configured server and its connection, shared by its tools.
pub(crate) struct Server {
    spec: ServerSpec,
    sandbox: Option<Arc<SandboxAt>>,
    stale: Arc<AtomicBool>,
    inner: Mutex<Inner>,
}

impl Server {
    pub(crate) fn new(spec: ServerSpec, sandbox: Option<Arc<SandboxAt>>) -> Self {
        Self { spec, sandbox, stale: Arc::new(AtomicBool::new(false)), inner: Mutex::new(Inner::default()) }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// The server's state, tools and last error, without waiting for a start under way.
    pub(crate) fn status(&self) -> ServerStatus {
        let (state, tools, error) = match self.inner.try_lock() {
            Ok(inner) => (
                self.state_of(&inner),
                inner.tools.iter().map(|tool| crate::name::tool_name(&self.spec.name, &tool.name)).collect(),
                inner.error.clone(),
            ),
            // A start is under way.
            Err(_) => (ServerState::Pending, Vec::new(), None),
        };
        ServerStatus { name: self.spec.name.clone(), state, tools, error }
    }

    fn state_of(&self, inner: &Inner) -> ServerState {
        if !self.spec.enabled {
            return ServerState::Disabled;
        }
        match (&inner.service, inner.state) {
            (Some(service), _) if service.is_closed() => ServerState::Failed,
            (_, Some(state)) => state,
            (_, None) => ServerState::Pending,
        }
    }

    /// The tools to offer: the first time, the server starts (at most its timeout); a server
    /// that failed to start offers nothing and is not retried here; a dead one keeps its
    /// last list (a call restarts it); a stale list is read again.
    pub(crate) async fn listed(&self) -> Vec<ListedTool> {
        if !self.spec.enabled {
            return Vec::new();
        }
        let mut inner = self.inner.lock().await;
        match &inner.service {
            None if inner.state.is_none() => {
                if let Err(error) = self.start(&mut inner).await {
                    self.fail(&mut inner, &error);
                }
            }
            // Reported once, when the death is first seen.
            Some(service) if service.is_closed() && inner.state == Some(ServerState::Connected) => {
                let error = McpError::NotRunning {
                    name: self.spec.name.clone(),
                    reason: "the server exited".to_owned(),
                };
                self.fail(&mut inner, &error);
            }
            Some(service) if service.is_closed() => {}
            Some(service) if self.stale.swap(false, Ordering::SeqCst) => {
                let service = service.clone();
                match self.list(&service).await {
                    Ok(listing) => {
                        inner.tools = listing.tools;
                        inner.error = listing.problems;
                    }
                    Err(error) => tracing::warn!(server = %self.spec.name, %error, "MCP tools/list failed"),
                }
            }
            _ => {}
        }
        inner.tools.clone()
    }

    fn fail(&self, inner: &mut Inner, error: &McpError) {
        // Reported once: the state stays failed until a restart succeeds.
        tracing::warn!(server = %self.spec.name, %error, "MCP server failed");
        inner.state = Some(ServerState::Failed);
        inner.error = Some(error.to_string());
    }

    /// Connects (spawning a local server), initializes and lists the tools, all within the
    /// timeout; on success the server is connected.
    async fn start(&self, inner: &mut Inner) -> Result<(), McpError> {
        let timeout = self.spec.timeout;
        let started = tokio::time::timeout(timeout, async {
            let service = Arc::new(self.connect().await?);
            let tools = self.list(&service).await?;
            Ok::<_, McpError>((service, tools))
        })
        .await;
        let (service, tools) = match started {
            Ok(result) => result?,
            Err(_) => {
                return Err(McpError::StartTimeout {
                    name: self.spec.name.clone(),
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
        };
        self.stale.store(false, Ordering::SeqCst);
        inner.service = Some(service);
        inner.tools = tools.tools;
        inner.state = Some(ServerState::Connected);
        inner.error = tools.problems;
        Ok(())
    }

    async fn connect(&self) -> Result<Service, McpError> {
        let name = &self.spec.name;
        let handler = Handler { server: name.clone(), stale: self.stale.clone() };
        let protocol = |error: rmcp::service::ClientInitializeError| McpError::Protocol {
            name: name.clone(),
            reason: error.to_string(),
        };
        match &self.spec.transport {
            Transport::Local(local) => {
                let command = local_command(name, local, self.sandbox.as_deref())?;
                let (transport, stderr) = TokioChildProcess::builder(command)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|error| McpError::Spawn { name: name.clone(), reason: error.to_string() })?;
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(name.clone(), stderr));
                }
                handler.serve(transport).await.map_err(protocol)
            }
            Transport::Remote(remote) => {
                let headers = remote_headers(name, remote)?;
                let config = StreamableHttpClientTransportConfig::with_uri(remote.url.clone())
                    .custom_headers(headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
                let transport = StreamableHttpClientTransport::from_config(config);
                let streamable = match handler.clone().serve(transport).await {
                    Ok(service) => return Ok(service),
                    Err(error) => protocol(error),
                };
                // A server that offers only the older HTTP+SSE transport.
                tracing::debug!(server = %name, error = %streamable, "streamable HTTP failed; trying SSE");
                match crate::sse::connect(name, remote, headers).await {
                    Ok(transport) => handler.serve(transport).await.map_err(protocol),
                    Err(sse) => Err(McpError::Protocol {
                        name: name.clone(),
                        reason: format!("{streamable} (and over SSE: {sse})"),
                    }),
                }
            }
        }
    }

    async fn list(&self, service: &Service) -> Result<Listing, McpError> {
        let tools = service.list_all_tools().await.map_err(|error| McpError::Protocol {
            name: self.spec.name.clone(),
            reason: error.to_string(),
        })?;
        let mut listed = Vec::with_capacity(tools.len());
        let mut invalid = Vec::new();
        for tool in tools {
            let schema = serde_json::Value::Object((*tool.input_schema).clone());
            // A schema that does not compile is reported, never sent to a model.
            if let Err(error) = jsonschema::validator_for(&schema) {
                tracing::warn!(server = %self.spec.name, tool = %tool.name, %error, "MCP tool has an invalid schema; left out");
                invalid.push(format!("tool {:?} has an invalid input schema: {error}", tool.name));
                continue;
            }
            listed.push(ListedTool {
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
                schema,
            });
        }
        Ok(Listing { tools: listed, problems: (!invalid.is_empty()).then(|| invalid.join("; ")) })
    }

    /// Calls `tool` (the server's own name) with `arguments`. A server that is not running is
    /// started again first (a dead local server restarts on the next call).
    pub(crate) async fn call(&self, tool: &str, arguments: JsonObject) -> Result<ToolSuccess, McpError> {
        if !self.spec.enabled {
            return Err(McpError::Disabled { name: self.spec.name.clone() });
        }
        let service = self.running().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        // Dropping this future (an abort) sends `notifications/cancelled` to the server.
        let result = match service.call_tool(params).await {
            Ok(result) => result,
            Err(error) if service.is_closed() || matches!(error, rmcp::ServiceError::TransportClosed) => {
                // The server died: the next call starts it again.
                let error = McpError::NotRunning {
                    name: self.spec.name.clone(),
                    reason: format!("the server exited during the call ({error})"),
                };
                self.forget(&service, &error).await;
                return Err(error);
            }
            Err(error) => {
                return Err(McpError::Protocol { name: self.spec.name.clone(), reason: error.to_string() });
            }
        };
        crate::result::to_success(&self.spec.name, tool, result)
    }

    /// Drops `service` (if it is still the current connection) after it died.
    async fn forget(&self, service: &Arc<Service>, error: &McpError) {
        let mut inner = self.inner.lock().await;
        if inner.service.as_ref().is_some_and(|current| Arc::ptr_eq(current, service)) {
            if let Some(dead) = inner.service.take() {
                end(dead).await;
            }
            self.fail(&mut inner, error);
        }
    }

    /// The live connection, restarting the server when it is not running.
    async fn running(&self) -> Result<Arc<Service>, McpError> {
        let mut inner = self.inner.lock().await;
        if let Some(service) = &inner.service
            && !service.is_closed()
        {
            return Ok(service.clone());
        }
        if let Some(service) = inner.service.take() {
            end(service).await;
        }
        match self.start(&mut inner).await {
            Ok(()) => inner.service.clone().ok_or_else(|| McpError::NotRunning {
                name: self.spec.name.clone(),
                reason: "no connection".to_owned(),
            }),
            Err(error) => {
                self.fail(&mut inner, &error);
                Err(McpError::NotRunning { name: self.spec.name.clone(), reason: error.to_string() })
            }
        }
    }

    /// Ends the connection (and a local server's process).
    pub(crate) async fn shutdown(&self) {
        let mut inner = self.inner.lock().await;
        if let Some(service) = inner.service.take() {
            end(service).await;
        }
    }
}

/// Closes a connection; a local server's child is killed with it.
async fn end(service: Arc<Service>) {
    match Arc::try_unwrap(service) {
        Ok(service) => {
            let _ = service.cancel().await;
        }
        // A call still holds it: cancelling its token closes the transport all the same.
        Err(shared) => shared.cancellation_token().cancel(),
    }
}

fn remote_headers(name: &str, remote: &RemoteServer) -> Result<reqwest::header::HeaderMap, McpError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (key, value) in &remote.headers {
        let invalid = || McpError::InvalidHeader { name: name.to_owned(), header: key.clone() };
        let header = reqwest::header::HeaderName::from_bytes(key.as_bytes()).map_err(|_| invalid())?;
        let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| invalid())?;
        headers.insert(header, value);
    }
    Ok(headers)
}

/// Copies a local server's stderr to the log, line by line (long lines cut).
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(MAX_STDERR_LINE));
    while let Some(line) = lines.next().await {
        match line {
            Ok(line) => tracing::info!(target: "session_mcp::stderr", server = %server, "{line}"),
            Err(error) => tracing::debug!(server = %server, %error, "MCP server stderr line skipped"),
        }
    }
}
