//! The operations of the project's files and searches over them.

use serde_json::json;

use super::*;

/// `GET /file`.
pub(crate) fn list() -> Operation {
    read(
        "file.list",
        "A project folder's entries (outside the project: 403)",
        vec![query("path", true, string())],
        array(reference("FileNode")),
        true,
    )
}

/// `GET /file/content`.
pub(crate) fn content() -> Operation {
    read(
        "file.read",
        "A project file: text, or base64 (outside the project: 403)",
        vec![query("path", true, string())],
        json!({"type": "object", "required": ["type", "content"]}),
        true,
    )
}

/// `GET /file/status`.
pub(crate) fn status() -> Operation {
    read(
        "file.status",
        "The files git sees changed against HEAD",
        vec![],
        array(json!({"type": "object", "required": ["path", "added", "removed", "status"]})),
        false,
    )
}

/// `GET /find`.
pub(crate) fn find_text() -> Operation {
    read(
        "find.text",
        "Lines matching a regular expression (at most 200)",
        vec![query("pattern", true, string())],
        array(json!({"type": "object"})),
        false,
    )
}

/// `GET /find/file`.
pub(crate) fn find_file() -> Operation {
    read(
        "find.files",
        "Paths whose letters contain the query in order, shortest first",
        vec![
            query("query", true, string()),
            query("dirs", false, json!({"enum": ["true", "false"]})),
            query("type", false, json!({"enum": ["file", "directory"]})),
            query("limit", false, json!({"type": "integer"})),
        ],
        array(string()),
        false,
    )
}

/// `GET /find/symbol`.
pub(crate) fn find_symbol() -> Operation {
    read(
        "find.symbols",
        "Symbols: none (no language server here)",
        vec![query("query", true, string())],
        array(json!({"type": "object"})),
        false,
    )
}
