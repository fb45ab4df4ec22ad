//! What the runtime tells this crate about one configured server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long a server may take to start (spawn or connect, initialize, list its tools) when
/// the config gives no `timeout`: OpenCode's 5 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The config key (`mcp.<name>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// False when the config disables it: it is listed, never started.
    pub enabled: bool,
    /// The bound on start-up (and on the first request's wait for it).
    pub timeout: Duration,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Local(LocalServer),
    /// A server over HTTP (streamable HTTP).
    Remote(RemoteServer),
}

/// A local server: the command and what it runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Variables added to the inherited environment.
    pub environment: BTreeMap<String, String>,
    /// The working directory: the folder the config names, else a private folder of the
    /// runtime's, never an untrusted project: `python3 -m x` and `npx x` look for `x` in
    /// their working directory first. Made (private to the user) at start when missing and
    /// [`Self::keep_out`] is set.
    pub cwd: PathBuf,
    /// The project folder, when the config named no `cwd`: its paths are taken out of the
    /// search-path variables the server inherits (`PATH`, `PYTHONPATH`, `NODE_PATH`, ...), so
    /// that nothing the project holds is found and run in place of the server. `None` when the
    /// config chose the folder: the environment is then inherited as it is.
    pub keep_out: Option<PathBuf>,
    /// Runs under the runtime's command sandbox (`mcp.<name>.sandbox`), as the bash tool's
    /// commands do.
    pub sandboxed: bool,
}

/// A remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteServer {
    /// The endpoint.
    pub url: String,
    /// Headers sent with every request (secrets come in through `{env:}`).
    pub headers: BTreeMap<String, String>,
}
