//! The names MCP tools are offered under: `<server>_<tool>`, each part sanitised as OpenCode
//! does (every character outside `[A-Za-z0-9_-]` becomes `_`).

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The name the model calls `tool` of `server` by.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{}_{}", sanitize(server), sanitize(tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_the_sanitised_server_and_tool() {
        assert_eq!(tool_name("everything", "echo"), "everything_echo");
        assert_eq!(tool_name("my server", "get-tiny.image"), "my_server_get-tiny_image");
        assert_eq!(tool_name("gh", "issue/list é"), "gh_issue_list__");
    }
}
