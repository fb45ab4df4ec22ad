//! An MCP server (rmcp's server side, on stdio) that misbehaves on request, for the fault
//! tests of session-mcp: a slow start, a crash in the middle of a call, a call that never
//! answers, a huge result, and a tool list that changes.
//!
//! `mcp-fault-server [--slow-start MS]`: with `--slow-start` it sleeps before it reads
//! anything (so the client's start-up timeout passes first).
//!
//! Tools: `pid` (its process id, to see restarts), `crash` (exits mid-call), `hang` (never
//! answers), `huge` (`{"chars": N}` characters of text), `grow` (adds the tool `extra` and
//! sends `notifications/tools/list_changed`), `extra` (present after `grow`), `svg` (an
//! [`SVG_BYTES`] `image/svg+xml` image), `structured` ([`STRUCTURED_CHARS`] characters of
//! structured content) and one tool whose name is [`LONG_NAME_CHARS`] characters long
//! (`long_xxx...`; it answers `long ran`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt as _};

/// The decoded size of the `svg` tool's image (over every provider's image limit).
const SVG_BYTES: usize = 8 * 1024 * 1024;
/// The characters of the `structured` tool's structured content.
const STRUCTURED_CHARS: usize = 3 * 1024 * 1024;
/// The length of the long tool's name (OpenAI-style providers take at most 64).
const LONG_NAME_CHARS: usize = 304;

/// The long tool's name: `long_` and `x`s.
fn long_name() -> String {
    format!("long_{}", "x".repeat(LONG_NAME_CHARS - 5))
}

#[derive(Clone, Default)]
struct Faults {
    grown: Arc<AtomicBool>,
}

fn tool(name: impl Into<String>, description: &'static str, schema: serde_json::Value) -> Tool {
    let schema = match schema {
        serde_json::Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    Tool::new(name.into(), description, Arc::new(schema))
}

fn empty() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl ServerHandler for Faults {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool("pid", "The server's process id", empty()),
            tool("crash", "Exits in the middle of the call", empty()),
            tool("hang", "Never answers", empty()),
            tool(
                "huge",
                "Returns `chars` characters",
                serde_json::json!({"type": "object", "properties": {"chars": {"type": "integer"}}, "required": ["chars"]}),
            ),
            tool("grow", "Adds the tool `extra`", empty()),
            tool("svg", "Returns an 8 MB SVG image", empty()),
            tool("structured", "Returns 3 MB of structured content", empty()),
            tool(long_name(), "Has a 304-character name", empty()),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("extra", "Present after grow", empty()));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            // Base64 of zero bytes: 4 characters per 3 bytes.
            "svg" => {
                let data = "A".repeat(SVG_BYTES.div_ceil(3) * 4);
                return Ok(CallToolResult::success(vec![ContentBlock::image(data, "image/svg+xml")]).into());
            }
            "structured" => {
                let value = serde_json::json!({"data": "s".repeat(STRUCTURED_CHARS)});
                let mut result = CallToolResult::success(vec![ContentBlock::text("structured below")]);
                result.structured_content = Some(value);
                return Ok(result.into());
            }
            name if name == long_name() => {
                return Ok(CallToolResult::success(vec![ContentBlock::text("long ran")]).into());
            }
            _ => {}
        }
        let text = match request.name.as_ref() {
            "pid" => std::process::id().to_string(),
            "crash" => std::process::exit(3),
            "hang" => {
                std::future::pending::<()>().await;
                String::new()
            }
            "huge" => {
                let chars = request.arguments.as_ref().and_then(|a| a.get("chars")).and_then(|c| c.as_u64());
                "x".repeat(usize::try_from(chars.unwrap_or(0)).unwrap_or(0))
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                "grown".to_owned()
            }
            "extra" if self.grown.load(Ordering::SeqCst) => "extra ran".to_owned(),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(ms) = args.iter().position(|a| a == "--slow-start").and_then(|i| args.get(i + 1)) {
        tokio::time::sleep(Duration::from_millis(ms.parse().unwrap_or(0))).await;
    }
    let Ok(service) = Faults::default().serve(rmcp::transport::stdio()).await else {
        std::process::exit(1);
    };
    let _ = service.waiting().await;
}
