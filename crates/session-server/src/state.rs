//! What every handler shares, and the tasks that carry bus events (and the other instances'
//! notices) to `/event` while the server runs.

use std::sync::Arc;

use session_runtime::mcp::McpManager;
use session_runtime::permissions::PermissionEngine;
use session_runtime::sessions::Store;
use session_runtime::{BusEvent, Runtime};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::cluster::{self, ClusterLink, Outbox};
use crate::events::{Hub, Statuses};
use crate::info::ServerInfo;

/// What every handler shares.
pub(crate) struct AppState {
    /// The engine prompts run in.
    pub(crate) runtime: Arc<Runtime>,
    /// The runtime's store.
    pub(crate) store: Arc<dyn Store>,
    /// The runtime's permission engine.
    pub(crate) permissions: Arc<PermissionEngine>,
    /// The events every `/event` client receives.
    pub(crate) hub: Hub,
    /// The sessions that are not idle, and the asks waiting.
    pub(crate) statuses: Statuses,
    /// The notices to the other instances, when there are any.
    pub(crate) cluster: Option<Arc<Outbox>>,
    /// Cancelled when the server stops.
    pub(crate) shutdown: CancellationToken,
    /// The runtime's MCP servers.
    pub(crate) mcp: Arc<McpManager>,
    /// Folders and configuration shown to clients.
    pub(crate) info: ServerInfo,
}

impl AppState {
    /// The shared state of a server; starts the tasks that carry bus events (and the other
    /// instances' notices) to `/event` until `shutdown`, so it must be called inside a Tokio
    /// runtime.
    pub(crate) fn start(
        runtime: Arc<Runtime>,
        store: Arc<dyn Store>,
        permissions: Arc<PermissionEngine>,
        cluster: Option<ClusterLink>,
        shutdown: CancellationToken,
        mcp: Arc<McpManager>,
        info: ServerInfo,
    ) -> Arc<Self> {
        let hub = Hub::new(&runtime.worktree().to_string_lossy());
        let statuses = Statuses::default();
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
        spawn_translator(
            runtime.bus().subscribe(),
            hub.clone(),
            statuses.clone(),
            outbox.clone(),
            shutdown.clone(),
        );
        Arc::new(Self { runtime, store, permissions, hub, statuses, cluster: outbox, shutdown, mcp, info })
    }
}

/// Carries the runtime's bus to the hub (and to the other instances) until shutdown.
fn spawn_translator(
    mut bus: broadcast::Receiver<BusEvent>,
    hub: Hub,
    statuses: Statuses,
    cluster: Option<Arc<Outbox>>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => break,
                event = bus.recv() => event,
            };
            match event {
                Ok(event) => {
                    statuses.observe(&event);
                    hub.publish_bus(&event);
                    if let Some(cluster) = &cluster {
                        cluster.forward(&event);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(lost)) => {
                    tracing::warn!(lost, "the event translator fell behind; events were lost");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    })
}
