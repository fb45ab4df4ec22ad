//! The names MCP tools are offered under: `<server>_<tool>`, each part sanitised as OpenCode
//! does (every character outside `[A-Za-z0-9_-]` becomes `_`), and at most
//! [`MAX_TOOL_NAME_CHARS`] long.

use sha2::{Digest as _, Sha256};

/// The longest name a tool is offered under: OpenAI-style providers refuse a request whose
/// tool names are longer.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Hex digits of the hash that ends a shortened name.
const HASH_CHARS: usize = 8;

/// `text` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The name the model calls `tool` of `server` by. A name longer than
/// [`MAX_TOOL_NAME_CHARS`] is cut and ends with `_` and a hash of the server's and tool's real
/// names, so two long names sharing their start stay apart; the tool keeps its real name for
/// the call.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name = format!("{}_{}", sanitize(server), sanitize(tool));
    if name.len() <= MAX_TOOL_NAME_CHARS {
        return name;
    }
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let hash: String = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    // Sanitised names are ASCII: any byte index is a character boundary.
    let kept = MAX_TOOL_NAME_CHARS - HASH_CHARS - 1;
    format!("{}_{}", &name[..kept], &hash[..HASH_CHARS])
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

    #[test]
    fn a_long_name_is_cut_to_the_limit_and_stays_unique_and_stable() {
        let exact = "t".repeat(MAX_TOOL_NAME_CHARS - 2);
        assert_eq!(tool_name("s", &exact), format!("s_{exact}"));
        let (a, b) = (format!("{}a", "t".repeat(300)), format!("{}b", "t".repeat(300)));
        let (name_a, name_b) = (tool_name("server", &a), tool_name("server", &b));
        assert_eq!(name_a.len(), MAX_TOOL_NAME_CHARS);
        assert_eq!(name_b.len(), MAX_TOOL_NAME_CHARS);
        assert_ne!(name_a, name_b);
        assert!(name_a.starts_with("server_ttt"), "{name_a}");
        assert_eq!(name_a, tool_name("server", &a), "the same name every time");
        // Names that sanitise alike but differ really get different hashes.
        assert_ne!(
            tool_name("s", &format!("{}.", "t".repeat(80))),
            tool_name("s", &format!("{}_", "t".repeat(80)))
        );
    }
}
