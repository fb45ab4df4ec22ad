//! The one error type of this crate.

/// Why an MCP server or one of its calls failed. Its `Display` text is what the model reads
/// when a call fails and what `session mcp list` shows as a server's last error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// No server of that name is configured.
    #[error("no MCP server named {name:?} is configured")]
    UnknownServer {
        /// The name asked for.
        name: String,
    },
    /// The server is disabled in the config.
    #[error("MCP server {name:?} is disabled")]
    Disabled {
        /// The server.
        name: String,
    },
    /// A local server's command is empty.
    #[error("MCP server {name:?}: `command` is empty")]
    EmptyCommand {
        /// The server.
        name: String,
    },
    /// A local server could not be spawned.
    #[error("MCP server {name:?} could not be started: {reason}")]
    Spawn {
        /// The server.
        name: String,
        /// The operating system's answer.
        reason: String,
    },
    /// A remote server's header is not a valid HTTP header.
    #[error("MCP server {name:?}: invalid header {header:?}")]
    InvalidHeader {
        /// The server.
        name: String,
        /// The header name.
        header: String,
    },
    /// The server did not finish starting (initialize and list its tools) in its timeout.
    #[error("MCP server {name:?} did not start within {timeout_ms} ms")]
    StartTimeout {
        /// The server.
        name: String,
        /// The configured timeout.
        timeout_ms: u64,
    },
    /// The MCP handshake or a request failed.
    #[error("MCP server {name:?}: {reason}")]
    Protocol {
        /// The server.
        name: String,
        /// What the SDK reported.
        reason: String,
    },
    /// The server is not running (it failed to start, or died and could not be restarted).
    #[error("MCP server {name:?} is not running: {reason}")]
    NotRunning {
        /// The server.
        name: String,
        /// Its last error.
        reason: String,
    },
    /// The server answered a call with a tool error.
    #[error("{message}")]
    ToolFailed {
        /// The server's error text.
        message: String,
    },
    /// The arguments given on the command line are not a JSON object.
    #[error("the arguments must be a JSON object: {reason}")]
    InvalidArguments {
        /// Why they were refused.
        reason: String,
    },
}
