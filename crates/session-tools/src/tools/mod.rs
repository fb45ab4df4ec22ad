//! The built-in tools, with OpenCode's names and parameter names.

mod bash;
mod edit;
mod files;
mod glob;
mod grep;
mod invalid;
mod question;
mod read;
mod search;
mod skill;
mod todo;
mod write;

use std::sync::Arc;

use serde_json::Value;
use session_core::JsonObject;

use crate::error::ToolError;
use crate::registry::ToolRegistry;
use crate::tool::Tool;

pub use bash::{
    BashTool, DEFAULT_TIMEOUT_MS, KILL_GRACE, MAX_OUTPUT_BYTES, MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES,
    MAX_TIMEOUT_MS,
};
pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use invalid::InvalidTool;
pub use question::{
    QUESTION_TOOL, QuestionAnswer, QuestionAsk, QuestionAsker, QuestionOption, QuestionPrompt, QuestionTool,
    question_output, question_title,
};
pub use read::{MAX_LINE_LENGTH, MAX_READ_BYTES, ReadTool};
pub use search::{RESULT_LIMIT, walk_project};
pub use skill::{
    SKILL_FILE, SKILL_FILES_LISTED, SKILL_TOOL, Skill, SkillTool, available_skills, skill_output,
    skills_prompt,
};
pub use todo::TodoWriteTool;
pub use write::WriteTool;

/// Every built-in tool: read, write, edit, glob, grep, bash, todowrite, and `invalid`, which
/// answers calls of unknown tools and is never offered. OpenCode 1.18.34 offers neither `list`
/// nor `todoread` (its registry has no such tools), so neither is here.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(GlobTool),
        Arc::new(GrepTool),
        Arc::new(BashTool::new()),
        Arc::new(TodoWriteTool),
        Arc::new(InvalidTool),
    ]
}

/// A registry holding every built-in tool (their schemas compile on first use; the tests below
/// check each against the meta-schema, so the start of a run skips that pass).
pub fn builtin_registry() -> Result<ToolRegistry, ToolError> {
    let mut registry = ToolRegistry::new();
    for tool in builtin_tools() {
        registry.register_builtin(tool);
    }
    Ok(registry)
}

/// Builds a JSON object from key/value pairs.
pub(crate) fn object<const N: usize>(pairs: [(&str, Value); N]) -> JsonObject {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

/// Runs blocking filesystem work off the async threads.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ToolError::Failed { message: format!("a blocking task failed: {error}") })?
}

/// Truncates `text` to at most `max` characters; returns whether it was cut.
pub(crate) fn cut_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((index, _)) => (&text[..index], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_schema_fits_the_meta_schema_and_compiles() {
        // The registry no longer checks built-in schemas at start, so this is where they are.
        for tool in builtin_tools() {
            let schema = tool.parameters();
            if let Err(error) = jsonschema::meta::validate(&schema) {
                panic!("the schema of {} breaks the meta-schema: {error}", tool.name());
            }
            // The registry compiles them as draft 7 (`compile_builtin`).
            if let Err(error) = jsonschema::draft7::meta::validate(&schema) {
                panic!("the schema of {} breaks the draft-7 meta-schema: {error}", tool.name());
            }
            assert!(jsonschema::validator_for(&schema).is_ok(), "{}", tool.name());
            assert!(jsonschema::draft7::new(&schema).is_ok(), "{}", tool.name());
        }
    }

    /// A schema with each `description` text replaced, as the differential suite compares them.
    fn without_descriptions(value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (key, item) in object.iter_mut() {
                    if key == "description" && item.is_string() {
                        *item = Value::String("<description>".into());
                    } else {
                        without_descriptions(item);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(without_descriptions),
            _ => {}
        }
    }

    #[test]
    fn the_offered_schemas_are_opencodes() {
        // OpenCode 1.18.34's, as the differential suite captured them, but for its
        // `$schema` and `maximum` (SPEC 17: "Tool schema notation"): bash has no `description`
        // and a positive integer `timeout`, read's `limit` has minimum 0, and the todo item
        // has no description of its own.
        let offered: Vec<String> = builtin_tools()
            .iter()
            .filter(|tool| ["bash", "read", "todowrite"].contains(&tool.name()))
            .map(|tool| {
                let mut schema = tool.parameters();
                without_descriptions(&mut schema);
                format!("{}: {}", tool.name(), serde_json::to_string_pretty(&schema).unwrap_or_default())
            })
            .collect();
        insta::assert_snapshot!("offered_schemas", offered.join("\n"));
    }

    #[test]
    fn the_schemas_take_what_opencode_takes() {
        let registry = builtin_registry().expect("registry");
        let args = |value: Value| match value {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        };
        let takes = |tool: &str, value: Value| registry.validate(tool, &args(value)).is_ok();
        assert!(takes("bash", serde_json::json!({"command": "ls", "timeout": 1})));
        assert!(takes("bash", serde_json::json!({"command": "ls", "description": "Lists"})));
        assert!(!takes("bash", serde_json::json!({"command": "ls", "timeout": 0})), "a positive integer");
        assert!(!takes("bash", serde_json::json!({"command": "ls", "timeout": 1.5})));
        assert!(takes("read", serde_json::json!({"filePath": "a", "offset": 0, "limit": 0})));
        assert!(!takes("read", serde_json::json!({"filePath": "a", "limit": -1})));
    }

    #[test]
    fn builtin_tools_validate_on_first_call() {
        let registry = builtin_registry().expect("registry");
        let error = registry.validate("read", &JsonObject::new()).err().expect("filePath is required");
        assert!(matches!(error, ToolError::InvalidArguments { .. }), "{error}");
    }
}
