//! Tool-call repair (SPEC 1.1): a call whose name matches an offered tool only up to case runs
//! as that tool; a call of a tool that was not offered becomes a call of the `invalid` tool,
//! so the stored history always pairs a call with a tool that answers it.

use serde_json::Value;

use crate::js_json::JsonObject;

/// The tool unknown calls are rewritten to. It is never offered to the model.
pub const INVALID_TOOL: &str = "invalid";

/// What a call becomes after repair.
#[derive(Debug, Clone, PartialEq)]
pub enum RepairedCall {
    /// The name is an offered tool: the call runs as made.
    AsCalled,
    /// The name matches this offered tool up to case: the call runs as it.
    Renamed(String),
    /// No offered tool matches: the call runs as [`INVALID_TOOL`] with this `{tool, error}`
    /// input.
    Invalid(JsonObject),
}

/// The error an unknown call's `invalid` input carries.
pub fn unavailable_tool_error(name: &str, offered: &[String]) -> String {
    format!("Model tried to call unavailable tool '{name}'. Available tools: {}.", offered.join(", "))
}

/// Repairs a call of `name` against the tools offered with the request (SPEC 1.1
/// `experimental_repairToolCall`). The lower-cased name is preferred, as OpenCode does; a
/// name that matches exactly one other offered tool up to case is taken as that tool.
pub fn repair_tool_call(name: &str, offered: &[String]) -> RepairedCall {
    if offered.iter().any(|tool| tool == name) {
        return RepairedCall::AsCalled;
    }
    let lower = name.to_lowercase();
    if offered.contains(&lower) {
        return RepairedCall::Renamed(lower);
    }
    let mut folded = offered.iter().filter(|tool| tool.to_lowercase() == lower);
    if let (Some(tool), None) = (folded.next(), folded.next()) {
        return RepairedCall::Renamed(tool.clone());
    }
    let mut input = JsonObject::new();
    input.insert("tool".to_owned(), Value::String(name.to_owned()));
    input.insert("error".to_owned(), Value::String(unavailable_tool_error(name, offered)));
    RepairedCall::Invalid(input)
}

/// The `invalid` input of a call whose arguments are not JSON (`raw`, as the model streamed
/// them), in OpenCode 1.18.34's words; `None` when they are JSON. The parser's own message
/// follows `Error message:` (OpenCode's comes from JavaScriptCore, ours from serde_json).
pub fn invalid_json_input(tool: &str, raw: &str) -> Option<JsonObject> {
    let error = serde_json::from_str::<Value>(raw).err()?;
    // JavaScriptCore's words where they are known (an object cut short, the common case when a
    // stream ends early); serde_json's otherwise.
    let message = match error.classify() {
        serde_json::error::Category::Eof if error.to_string().starts_with("EOF while parsing an object") => {
            "Expected '}'".to_owned()
        }
        _ => error.to_string(),
    };
    let mut input = JsonObject::new();
    input.insert("tool".to_owned(), Value::String(tool.to_owned()));
    input.insert(
        "error".to_owned(),
        Value::String(format!(
            "Invalid input for tool {tool}: JSON parsing failed: Text: {raw}.\nError message: JSON Parse error: {message}"
        )),
    );
    Some(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<String> {
        ["read", "bash", "webFetch"].iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn repair_table() {
        let rows = [
            ("read", RepairedCall::AsCalled),
            ("Read", RepairedCall::Renamed("read".into())),
            ("BASH", RepairedCall::Renamed("bash".into())),
            ("WEBFETCH", RepairedCall::Renamed("webFetch".into())),
        ];
        for (name, expected) in rows {
            assert_eq!(repair_tool_call(name, &offered()), expected, "{name}");
        }
    }

    #[test]
    fn an_unknown_tool_becomes_a_call_of_invalid_with_the_reason() {
        let RepairedCall::Invalid(input) = repair_tool_call("deploy", &offered()) else {
            unreachable!("deploy is not offered")
        };
        assert_eq!(input.get("tool"), Some(&Value::String("deploy".into())));
        assert_eq!(
            input.get("error"),
            Some(&Value::String(
                "Model tried to call unavailable tool 'deploy'. Available tools: read, bash, webFetch."
                    .into()
            ))
        );
        let keys: Vec<&String> = input.keys().collect();
        assert_eq!(keys, ["tool", "error"], "the input keeps OpenCode's key order");
    }

    #[test]
    fn arguments_that_are_not_json_become_a_call_of_invalid_in_opencodes_words() {
        let Some(input) = invalid_json_input("bash", r#"{"command": "echo hi""#) else {
            unreachable!("the arguments are cut short")
        };
        let keys: Vec<&String> = input.keys().collect();
        assert_eq!(keys, ["tool", "error"]);
        assert_eq!(input.get("tool"), Some(&Value::String("bash".into())));
        let error = input.get("error").and_then(Value::as_str).unwrap_or_default();
        assert_eq!(
            error,
            "Invalid input for tool bash: JSON parsing failed: Text: {\"command\": \"echo hi\".\nError message: JSON Parse error: Expected '}'"
        );
        let Some(input) = invalid_json_input("read", "{filePath: 1}") else { unreachable!("not JSON") };
        let error = input.get("error").and_then(Value::as_str).unwrap_or_default();
        assert!(error.ends_with("JSON Parse error: key must be a string at line 1 column 2"), "{error}");
        // Arguments that are JSON are left to the schema check.
        assert_eq!(invalid_json_input("bash", r#"{"command": "echo hi"}"#), None);
        assert_eq!(invalid_json_input("bash", r#""a string""#), None);
    }

    #[test]
    fn a_name_matching_two_tools_up_to_case_is_not_guessed() {
        let offered = vec!["Grep".to_owned(), "GREP".to_owned()];
        assert!(matches!(repair_tool_call("gRep", &offered), RepairedCall::Invalid(_)));
    }
}
