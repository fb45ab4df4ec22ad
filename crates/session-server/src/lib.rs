//! The HTTP API OpenCode's clients speak, as an [`axum::Router`] over a runtime the caller
//! already has.
//!
//! Paths, JSON bodies and event names follow OpenCode's server API as its v1 client
//! (`@opencode-ai/sdk`) sends and expects them, for the operations both have (sessions,
//! messages, prompts, abort, revert, permission replies, `GET /event`); `GET /doc` is the
//! OpenAPI document. [`Access`] says who may send requests: with the token any client; without
//! it only one that names the bound loopback address in `Host` (so a page that rebinds its DNS
//! name to 127.0.0.1 is refused), and no web page whose origin is not allowed. Bodies read as
//! JSON must be declared `application/json`. On PostgreSQL several
//! instances serve the same sessions: a run holds the session's lease in one instance, and
//! notices between instances ([`ClusterLink`], [`Notice`]) carry every event to every
//! `/event` stream.
//!
//! The runtime's bus is the only source of client events: the permission engine's asker
//! ([`BusAsker`]) publishes asks and replies there, and the server translates bus events to
//! its wire JSON. Binding a listener, choosing when a token is needed, and signals belong to
//! the caller (the `session serve` command).

mod access;
mod agents;
mod asker;
mod auth;
mod body;
mod cluster;
mod commands;
mod compat;
mod error;
mod events;
mod features;
mod files;
mod listen;
mod mcp;
mod notice;
mod openapi;
mod project;
mod prompt_files;
mod providers;
mod routes;
mod session_extra;
mod session_info;
#[cfg(test)]
mod testdata;

use std::sync::Arc;

use axum::Router;
use axum::routing::{delete, get, post};
use session_mcp::McpManager;
use session_runtime::Runtime;
use session_store::Store;
use session_tools::PermissionEngine;
use tokio_util::sync::CancellationToken;

pub use access::{Access, AllowedOrigin, OriginError};
pub use asker::BusAsker;
pub use cluster::ClusterLink;
pub use compat::{ClientConfig, ServerInfo, ShareMode};
pub use error::ServerError;
pub use events::{Permission, PermissionTime};
pub use listen::{ConnectionLimits, serve};
pub use notice::{Notice, NoticeBody};
pub use providers::{ClientModel, ClientProvider, ProviderSource};

/// Every route the server answers, as (lower-case method, path with `{param}` placeholders).
pub fn routes() -> &'static [(&'static str, &'static str)] {
    openapi::all_routes()
}

/// What the router serves: a runtime with its store and permission engine, and options.
pub struct ServerParts {
    /// The engine prompts run in.
    pub runtime: Arc<Runtime>,
    /// The runtime's store.
    pub store: Arc<dyn Store>,
    /// The runtime's permission engine; its asker should be a [`BusAsker`] attached to the
    /// runtime's bus, or asks never reach `/event`.
    pub permissions: Arc<PermissionEngine>,
    /// Who may send requests: the token, the bound address, the browser origins allowed.
    pub access: Access,
    /// The other instances on the same PostgreSQL database, if any.
    pub cluster: Option<ClusterLink>,
    /// Cancelled to end the event streams and the background tasks (the caller also passes
    /// it to its graceful shutdown).
    pub shutdown: CancellationToken,
    /// The runtime's MCP servers, for `GET /mcp` (none by default).
    pub mcp: Arc<McpManager>,
    /// Folders and configuration shown to clients.
    pub info: ServerInfo,
}

impl ServerParts {
    /// Parts with `access`, without other instances, with a fresh shutdown token.
    pub fn new(
        runtime: Arc<Runtime>,
        store: Arc<dyn Store>,
        permissions: Arc<PermissionEngine>,
        access: Access,
    ) -> Self {
        Self {
            runtime,
            store,
            permissions,
            access,
            cluster: None,
            shutdown: CancellationToken::new(),
            mcp: Arc::new(McpManager::new(Vec::new())),
            info: ServerInfo::default(),
        }
    }
}

impl std::fmt::Debug for ServerParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerParts")
            .field("access", &self.access)
            .field("cluster", &self.cluster.is_some())
            .finish_non_exhaustive()
    }
}

/// What every handler shares.
pub(crate) struct AppState {
    runtime: Arc<Runtime>,
    store: Arc<dyn Store>,
    permissions: Arc<PermissionEngine>,
    hub: events::Hub,
    statuses: events::Statuses,
    cluster: Option<Arc<cluster::Outbox>>,
    shutdown: CancellationToken,
    mcp: Arc<McpManager>,
    info: ServerInfo,
}

/// The router over `parts`. It starts the tasks that carry bus events (and the other
/// instances' notices) to `/event` until `parts.shutdown`, so it must be called inside a Tokio
/// runtime.
pub fn router(parts: ServerParts) -> Router {
    let ServerParts { runtime, store, permissions, access, cluster, shutdown, mcp, info } = parts;
    let hub = events::Hub::new(&runtime.worktree().to_string_lossy());
    let statuses = events::Statuses::default();
    let outbox = cluster.map(|link| {
        let receiver = cluster::Receiver {
            runtime: runtime.clone(),
            store: store.clone(),
            permissions: permissions.clone(),
            hub: hub.clone(),
            statuses: statuses.clone(),
            streamed: std::sync::Mutex::default(),
        };
        cluster::start(link, store.owner().to_owned(), receiver, &shutdown)
    });
    events::spawn_translator(
        runtime.bus().subscribe(),
        hub.clone(),
        statuses.clone(),
        outbox.clone(),
        shutdown.clone(),
    );
    let state = Arc::new(AppState {
        runtime,
        store,
        permissions,
        hub,
        statuses,
        cluster: outbox,
        shutdown,
        mcp,
        info,
    });
    let router = Router::new()
        .route("/doc", get(routes::doc))
        .route("/event", get(events::stream))
        .route("/global/event", get(events::global_stream))
        .route("/path", get(compat::path))
        .route("/config", get(compat::config))
        .route("/permission", get(compat::pending_permissions))
        .route("/permission/{requestID}/reply", post(compat::reply))
        .route("/mcp", get(mcp::status))
        .route("/config/providers", get(providers::config_providers))
        .route("/provider", get(providers::provider_list))
        .route("/provider/auth", get(providers::provider_auth))
        .route("/agent", get(agents::agents))
        .route("/command", get(agents::commands))
        .route("/skill", get(agents::skills))
        .route("/project", get(project::list))
        .route("/project/current", get(project::current))
        .route("/project/{projectID}/directories", get(project::directories))
        .route("/vcs", get(project::vcs))
        .route("/lsp", get(features::none))
        .route("/formatter", get(features::none))
        .route("/question", get(features::none))
        .route("/question/{requestID}/reply", post(features::no_question))
        .route("/question/{requestID}/reject", post(features::no_question))
        .route("/experimental/capabilities", get(features::capabilities))
        .route("/experimental/console", get(features::console))
        .route("/experimental/resource", get(features::resources))
        .route("/experimental/workspace", get(features::none))
        .route("/experimental/workspace/status", get(features::none))
        .route("/file", get(files::list))
        .route("/file/content", get(files::content))
        .route("/file/status", get(files::status))
        .route("/find", get(files::find_text))
        .route("/find/file", get(files::find_file))
        .route("/find/symbol", get(files::find_symbol))
        .route("/api/location", get(project::location))
        .route("/api/agent", get(agents::v2_agents))
        .route("/api/command", get(agents::v2_commands))
        .route("/api/skill", get(agents::v2_skills))
        .route("/api/provider", get(providers::v2_providers))
        .route("/api/model", get(providers::v2_models))
        .route("/api/integration", get(features::v2_none))
        .route("/api/reference", get(features::v2_none))
        .route("/session", get(routes::list_sessions).post(routes::create_session))
        .route("/session/status", get(compat::session_status))
        .route(
            "/session/{id}",
            get(routes::get_session).delete(routes::delete_session).patch(session_extra::update),
        )
        .route("/session/{id}/message", get(routes::messages).post(routes::prompt))
        .route(
            "/session/{id}/message/{messageID}",
            get(session_extra::message).delete(session_extra::edit_history),
        )
        .route(
            "/session/{id}/message/{messageID}/part/{partID}",
            delete(session_extra::edit_history).patch(session_extra::edit_history),
        )
        .route("/session/{id}/prompt_async", post(routes::prompt_async))
        .route("/session/{id}/abort", post(routes::abort))
        .route("/session/{id}/command", post(commands::command))
        .route("/session/{id}/children", get(commands::children))
        .route("/session/{id}/todo", get(session_extra::todo))
        .route("/session/{id}/diff", get(session_extra::diff))
        .route("/session/{id}/fork", post(session_extra::fork))
        .route("/session/{id}/share", post(session_extra::share).delete(session_extra::share))
        .route("/session/{id}/summarize", post(session_extra::summarize))
        .route("/session/{id}/init", post(session_extra::init))
        .route("/session/{id}/shell", post(session_extra::shell))
        .route("/session/{id}/revert", post(routes::revert))
        .route("/session/{id}/unrevert", post(session_extra::unrevert))
        .route("/session/{id}/permissions/{permissionID}", post(routes::reply_permission))
        .fallback(features::fallback)
        .with_state(state);
    auth::protect(router, access)
}
