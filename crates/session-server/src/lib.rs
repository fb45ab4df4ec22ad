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
mod asker;
mod auth;
mod body;
mod cluster;
mod error;
mod events;
mod extract;
mod handlers;
mod info;
mod listen;
mod notice;
mod openapi;
mod routes;
mod session_info;
mod state;
#[cfg(test)]
mod testdata;

use std::sync::Arc;

use axum::Router;
use session_runtime::Runtime;
use session_runtime::mcp::McpManager;
use session_runtime::permissions::PermissionEngine;
use session_runtime::sessions::Store;
use tokio_util::sync::CancellationToken;

pub use access::{Access, AllowedOrigin, OriginError};
pub use asker::BusAsker;
pub use cluster::ClusterLink;
pub use error::ServerError;
pub use info::{ClientConfig, ClientModel, ClientProvider, ProviderSource, ServerInfo, ShareMode};
pub use listen::{ConnectionLimits, serve};
pub use notice::{Notice, NoticeBody, Permission, PermissionTime};

/// Every route the server answers, as (lower-case method, path with `{param}` placeholders).
pub fn routes() -> &'static [(&'static str, &'static str)] {
    routes::methods_and_paths()
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

/// The router over `parts`. It starts the tasks that carry bus events (and the other
/// instances' notices) to `/event` until `parts.shutdown`, so it must be called inside a Tokio
/// runtime.
pub fn router(parts: ServerParts) -> Router {
    let ServerParts { runtime, store, permissions, access, cluster, shutdown, mcp, info } = parts;
    let state = state::AppState::start(runtime, store, permissions, cluster, shutdown, mcp, info);
    auth::protect(routes::router(state), access)
}
