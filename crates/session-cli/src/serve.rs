//! `session serve`: the HTTP API of `session-server` over the runtime the configuration
//! describes, on a listener of its own.
//!
//! This module owns what the library leaves to its caller: the address to bind (127.0.0.1
//! unless told otherwise), the token policy (any address off loopback requires a bearer
//! token), the link to the other instances on PostgreSQL, and stopping on Ctrl-C or SIGTERM.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use session_runtime::Runtime;
use session_server::{BusAsker, ClusterLink, ServerParts};
use session_store::{PgConfig, Store};
use tokio_util::sync::CancellationToken;

use crate::run::{RuntimeSetup, assemble};

/// Every route the server answers, as (lower-case method, path with `{param}` placeholders).
pub fn routes() -> &'static [(&'static str, &'static str)] {
    session_server::routes()
}

/// The environment variable holding the bearer token when `--token` is absent.
pub const TOKEN_ENV: &str = "SESSION_SERVER_TOKEN";

/// Everything `session serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How to build the runtime (project, model, database, lease time).
    pub setup: RuntimeSetup,
    /// The address or host name to bind (default 127.0.0.1).
    pub hostname: String,
    /// The port (0 picks a free one).
    pub port: u16,
    /// The bearer token requests must carry; required off loopback.
    pub token: Option<String>,
}

/// A server accepting requests until stopped.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    store: Arc<dyn Store>,
    runtime: Arc<Runtime>,
}

impl RunningServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://address:port` of the server.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The runtime behind the server.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Waits until the server fails or `stop` fires, then shuts down.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) -> Result<()> {
        let shutdown = self.shutdown.clone();
        tokio::select! {
            () = stop => {}
            () = shutdown.cancelled() => {}
        }
        self.stop().await
    }

    /// Stops accepting requests, ends event streams, and closes the store (releasing this
    /// instance's leases).
    pub async fn stop(self) -> Result<()> {
        self.shutdown.cancel();
        let served = self.server.await;
        self.store.close().await.map_err(|error| anyhow!("closing the session database: {error}"))?;
        match served {
            Ok(result) => result.context("serving HTTP failed"),
            Err(error) => Err(anyhow!("the HTTP server task failed: {error}")),
        }
    }
}

/// The address to bind for a host name: an IP address, `localhost`, or a name to resolve.
async fn bind_address(hostname: &str, port: u16) -> Result<SocketAddr> {
    if hostname.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(ip) = hostname.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    tokio::net::lookup_host((hostname, port))
        .await
        .with_context(|| format!("--hostname {hostname:?}: cannot resolve it"))?
        .next()
        .ok_or_else(|| anyhow!("--hostname {hostname:?}: it resolves to no address"))
}

/// Builds the runtime, binds, and starts serving; returns once requests are accepted.
pub async fn start(options: ServeOptions) -> Result<RunningServer> {
    let addr = bind_address(&options.hostname, options.port).await?;
    let token = options.token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "binding {addr} (not a loopback address) requires a bearer token: pass --token or set {TOKEN_ENV}"
        );
    }
    let asker = Arc::new(BusAsker::new());
    let assembled = assemble(&options.setup, asker.clone()).await?;
    let runtime = assembled.runtime;
    let store = assembled.store;
    asker.attach(runtime.bus().clone());

    let mut cluster = None;
    if let Some(url) =
        assembled.database.as_deref().filter(|_| store.backend() == session_store::BackendKind::Postgres)
    {
        let link = ClusterLink::connect(&PgConfig::new(url))
            .await
            .map_err(|error| anyhow!("cannot listen for the other instances: {error}"))?;
        cluster = Some(link);
    }
    let shutdown = CancellationToken::new();
    let app = session_server::router(ServerParts {
        runtime: runtime.clone(),
        store: store.clone(),
        permissions: assembled.permissions,
        token,
        cluster,
        shutdown: shutdown.clone(),
    });
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let graceful = shutdown.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { graceful.cancelled().await }).await
    });
    Ok(RunningServer { addr, shutdown, server, store, runtime })
}

/// `session serve`: serves until Ctrl-C (or SIGTERM), printing the address first.
pub async fn serve(options: ServeOptions) -> Result<()> {
    use std::io::Write as _;
    let server = start(options).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "session serve listening on {}", server.url())?;
        stdout.flush()?;
    }
    server.run_until(stop_signal()).await
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
