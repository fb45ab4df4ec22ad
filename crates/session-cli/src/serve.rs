//! `session serve`: the HTTP API of `session-server` over the runtime the configuration
//! describes, on a listener of its own.
//!
//! This module owns what the library leaves to its caller: the address to bind (127.0.0.1
//! unless told otherwise), the token policy (any address off loopback requires a token given
//! by flag or environment; on loopback one is made and kept in the data folder when none is
//! given), the browser origins allowed, the link to the other instances on PostgreSQL, the
//! connection limits, and stopping on Ctrl-C or SIGTERM.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use session_runtime::Runtime;
use session_runtime::setup::user_dir;
use session_server::{
    Access, AllowedOrigin, BusAsker, ClientConfig, ClusterLink, ConnectionLimits, ServerInfo, ServerParts,
};
use session_store::{PgConfig, Store};
use tokio_util::sync::CancellationToken;

use crate::run::{RuntimeSetup, assemble};

/// Every route the server answers, as (lower-case method, path with `{param}` placeholders).
pub fn routes() -> &'static [(&'static str, &'static str)] {
    session_server::routes()
}

/// The environment variable holding the token when `--token` is absent.
pub const TOKEN_ENV: &str = "SESSION_SERVER_TOKEN";

/// OpenCode's variable for its server's password, read after [`TOKEN_ENV`]: OpenCode's
/// clients (`opencode attach`, `opencode run --attach`) send it as the Basic password, so the
/// same variable set for both makes them work together.
pub const OPENCODE_PASSWORD_ENV: &str = "OPENCODE_SERVER_PASSWORD";

/// Everything `session serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How to build the runtime (project, model, database, lease time).
    pub setup: RuntimeSetup,
    /// The address or host name to bind (default 127.0.0.1).
    pub hostname: String,
    /// The port (0 picks a free one).
    pub port: u16,
    /// The token requests may carry; required off loopback. Without it, on loopback, the
    /// token of the data folder's `server.token` is used (made when missing).
    pub token: Option<String>,
    /// Refuse requests without the token, even on loopback (always so with a `token` given).
    pub require_token: bool,
    /// Browser origins allowed to send requests (`--cors`), besides the configuration's
    /// `server.cors`.
    pub cors: Vec<String>,
    /// The header deadline and connection caps (defaults: [`ConnectionLimits::default`]).
    pub limits: ConnectionLimits,
}

/// The hidden flags of `session serve` that set [`ConnectionLimits`] (tests shorten and lower
/// them; the defaults are the library's).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// How long a connection may take to send a complete request head, in milliseconds.
    #[arg(long, hide = true, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..))]
    header_timeout_ms: u64,
    /// How many connections are kept in all.
    #[arg(long, hide = true, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// How many connections are kept from one address.
    #[arg(long, hide = true, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_peer: u64,
}

impl LimitArgs {
    /// The limits these flags describe.
    pub fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: std::time::Duration::from_millis(self.header_timeout_ms),
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            max_per_peer: usize::try_from(self.max_connections_per_peer).unwrap_or(usize::MAX),
        }
    }
}

/// A server accepting requests until stopped.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    store: Arc<dyn Store>,
    runtime: Arc<Runtime>,
    token_file: Option<PathBuf>,
    mcp: Arc<session_mcp::McpManager>,
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

    /// The file holding the token, when the server made or reused one (no token was given).
    pub fn token_file(&self) -> Option<&Path> {
        self.token_file.as_deref()
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
        // Every MCP server the server started ends with it.
        self.mcp.shutdown().await;
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

/// Checks `values` as browser origins; `source` names where they come from in errors.
fn origins(values: &[String], source: &str) -> Result<Vec<AllowedOrigin>> {
    values
        .iter()
        .map(|value| AllowedOrigin::parse(value).map_err(|error| anyhow!("{source}: {error}")))
        .collect()
}

/// Builds the runtime, binds, and starts serving; returns once requests are accepted.
pub async fn start(options: ServeOptions) -> Result<RunningServer> {
    let addr = bind_address(&options.hostname, options.port).await?;
    let given = options.token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && given.is_none() {
        bail!("binding {addr} (not a loopback address) requires a token: pass --token or set {TOKEN_ENV}");
    }
    let mut allowed = origins(&options.cors, "--cors")?;
    let asker = Arc::new(BusAsker::new());
    let assembled = assemble(&options.setup, asker.clone()).await?;
    let runtime = assembled.runtime;
    let store = assembled.store;
    asker.attach(runtime.bus().clone());
    for origin in origins(&assembled.server.cors, "server.cors")? {
        if !allowed.contains(&origin) {
            allowed.push(origin);
        }
    }
    let (token, token_file) = match given {
        Some(token) => (token, None),
        None => {
            let path = crate::token::token_path(&options.setup.data_dir);
            (crate::token::load_or_create(&path)?, Some(path))
        }
    };

    let mut cluster = None;
    if let Some(url) =
        assembled.database.as_deref().filter(|_| store.backend() == session_store::BackendKind::Postgres)
    {
        let link = ClusterLink::connect(&PgConfig::new(url))
            .await
            .map_err(|error| anyhow!("cannot listen for the other instances: {error}"))?;
        cluster = Some(link);
    }
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    // A token the user gave is required, as it always was; the one made here lets loopback
    // clients without it in unless --require-token says otherwise.
    let require_token = options.require_token || token_file.is_none();
    let access = Access { token: Some(token), require_token, bound: addr, origins: allowed };
    let shutdown = CancellationToken::new();
    let mcp = assembled.mcp;
    let mut parts = ServerParts::new(runtime.clone(), store.clone(), assembled.permissions, access);
    let home = options.setup.home.clone().unwrap_or_default();
    parts.info = ServerInfo {
        config: user_dir(&options.setup.env, Some(&home)).unwrap_or_default(),
        home,
        state: options.setup.data_dir.clone(),
        client_config: ClientConfig {
            model: Some(format!("{}/{}", assembled.model.provider_id, assembled.model.model_id)),
            ..ClientConfig::default()
        },
        providers: crate::models::client_providers(&options.setup, &assembled.model)?,
    };
    parts.cluster = cluster;
    parts.mcp = mcp.clone();
    parts.shutdown = shutdown.clone();
    let app = session_server::router(parts);
    // Not axum::serve: a slow client must not hold connections (see session_server::serve).
    let server = tokio::spawn(session_server::serve(listener, app, options.limits, shutdown.clone()));
    Ok(RunningServer { addr, shutdown, server, store, runtime, token_file, mcp })
}

/// `session serve`: serves until Ctrl-C (or SIGTERM), printing the address first.
pub async fn serve(options: ServeOptions) -> Result<()> {
    use std::io::Write as _;
    let server = start(options).await?;
    let mut banner = format!("session serve listening on {}\n", server.url());
    // Where the token is, never the token: this line may end up in a log.
    if let Some(file) = server.token_file() {
        banner.push_str(&format!(
            "session serve: the token is in {} (send it as Authorization: Bearer, or as the Basic \
             password: OPENCODE_SERVER_PASSWORD for opencode's clients)\n",
            file.display()
        ));
    }
    {
        // One write: a reader that stops after the first line has the rest already, and is
        // not answered with a broken pipe.
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(banner.as_bytes())?;
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

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Flags {
        #[command(flatten)]
        limits: LimitArgs,
    }

    #[test]
    fn the_hidden_flags_default_to_the_librarys_limits_and_set_them() {
        let defaults = Flags::try_parse_from(["serve"]).unwrap();
        assert_eq!(defaults.limits.limits(), ConnectionLimits::default());
        let set = Flags::try_parse_from([
            "serve",
            "--header-timeout-ms",
            "2000",
            "--max-connections",
            "9",
            "--max-connections-per-peer",
            "3",
        ])
        .unwrap();
        let expected = ConnectionLimits {
            header_timeout: std::time::Duration::from_secs(2),
            max_connections: 9,
            max_per_peer: 3,
        };
        assert_eq!(set.limits.limits(), expected);
        assert!(Flags::try_parse_from(["serve", "--header-timeout-ms", "5"]).is_err());
    }
}
