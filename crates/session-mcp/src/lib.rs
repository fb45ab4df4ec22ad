//! MCP servers as a tool source for the session runtime, on the official Rust SDK (`rmcp`,
//! client side only).
//!
//! - [`ServerSpec`]: one configured server, local (a child process on stdio) or remote
//!   (streamable HTTP), with its start-up timeout;
//! - [`local_command`]: the ONE place a local server's `tokio::process::Command` is built
//!   (a sandbox confines local servers by wrapping it);
//! - remote servers over streamable HTTP, falling back to the older HTTP+SSE transport when
//!   the server offers only that;
//! - [`McpManager`]: every configured server of the process, started concurrently the first
//!   time a model request needs tools, each server's state for `session mcp list` and
//!   `GET /mcp`, and the end of every child at shutdown; it is a
//!   [`session_tools::ToolSource`], so its tools run through the same executor, tracker,
//!   permission engine and abort as the built-in ones;
//! - the tools themselves, offered as `<server>_<tool>` ([`tool_name`]).
//!
//! It does not read configuration files or environment variables: the runtime turns the
//! `mcp` config key into [`ServerSpec`]s.

mod error;
mod manager;
mod name;
mod result;
mod server;
mod spawn;
mod spec;
mod sse;
mod tool;

pub use error::McpError;
pub use manager::McpManager;
pub use name::{MAX_TOOL_NAME_CHARS, sanitize, tool_name};
pub use result::{MAX_RESULT_CHARS, to_success};
pub use server::{ServerState, ServerStatus};
pub use spawn::{SandboxAt, local_command};
pub use spec::{DEFAULT_TIMEOUT, LocalServer, RemoteServer, ServerSpec, Transport};
pub use tool::McpTool;
