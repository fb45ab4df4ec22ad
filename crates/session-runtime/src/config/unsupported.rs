//! OpenCode keys this runtime loads but does not act on: each gives one warning at load,
//! naming the key, so that nothing a user wrote is dropped silently; `"warn_unsupported":
//! false` hides them.

/// The unsupported keys; `*` stands for any one key. A pattern covers everything below it.
const UNSUPPORTED: &[&[&str]] = &[
    // The TUI and its looks.
    &["theme"],
    &["keybinds"],
    &["tui"],
    &["layout"],
    &["username"],
    &["logLevel"],
    // Sharing, plugins, skills, editors' helpers and updates.
    &["plugin"],
    &["share"],
    &["autoshare"],
    &["autoupdate"],
    &["skills"],
    &["watcher"],
    &["formatter"],
    &["lsp"],
    &["enterprise"],
    // Older or global switches this runtime has no counterpart for.
    &["mode"],
    &["tools"],
    &["disabled_providers"],
    &["enabled_providers"],
    &["attachment"],
    &["tool_output"],
    &["subagent_depth"],
    &["shell"],
    &["references"],
    &["reference"],
    &["experimental", "hook"],
    &["experimental", "chatMaxRetries"],
    &["experimental", "disable_paste_summary"],
    &["experimental", "batch_tool"],
    &["experimental", "openTelemetry"],
    &["experimental", "primary_tools"],
    &["experimental", "policies"],
    &["experimental", "mcp_timeout"],
    // MCP servers' OAuth (remote servers take `headers`).
    &["mcp", "*", "oauth"],
    &["provider", "*", "whitelist"],
    &["provider", "*", "blacklist"],
    // Price tiers of a configured model: OpenCode 1.18.34 reads them and prices the model at
    // its base prices (SPEC 5 "Configured models").
    &["provider", "*", "models", "*", "cost", "tiers"],
    &["provider", "*", "models", "*", "cost", "context_over_200k"],
];

/// The dotted key of the unsupported pattern `segments` falls under (the pattern's own depth,
/// so a whole `lsp` section is one warning), if any.
pub(crate) fn unsupported_key(segments: &[String]) -> Option<String> {
    UNSUPPORTED.iter().find_map(|pattern| {
        let matches = pattern.len() <= segments.len()
            && pattern.iter().zip(segments).all(|(want, got)| *want == "*" || *want == got.as_str());
        matches.then(|| segments[..pattern.len()].join("."))
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn key(path: &[&str]) -> Option<String> {
        unsupported_key(&path.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn a_section_is_one_key() {
        assert_eq!(key(&["lsp", "rust", "command"]).as_deref(), Some("lsp"));
        assert_eq!(
            key(&["provider", "openai", "whitelist", "0"]).as_deref(),
            Some("provider.openai.whitelist")
        );
        assert_eq!(key(&["agent", "build", "model"]), None);
    }

    #[test]
    fn warn_unsupported_false_hides_them_and_only_them() {
        use serde_json::json;
        let layer = |value| super::super::ConfigLayer::from_value("session.json", value).unwrap();
        let loud = super::super::combine(vec![layer(json!({"theme": "x", "modle": "y"}))]).unwrap();
        assert_eq!(loud.warnings.len(), 2);
        let quiet = super::super::combine(vec![
            layer(json!({"theme": "x", "modle": "y"})),
            layer(json!({"warn_unsupported": false})),
        ])
        .unwrap();
        let keys: Vec<&str> = quiet.warnings.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, ["modle"]);
    }
}
