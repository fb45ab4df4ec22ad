//! Argument validation before a tool runs, unknown tools, schemas, result values and the
//! failure kinds the processor sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use session_core::{JsonObject, ToolFailure, permission::PermissionError, processor::derive_output};
use session_tools::{
    PermissionEngine, ReplyLater, Tool, ToolCompletion, ToolContext, ToolError, ToolExecutor, ToolRegistry,
    ToolSuccess, Workspace, builtin_registry, parse_args, schema_for,
};

use super::support::{Fixture, obj};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CountArgs {
    /// A file
    file_path: String,
    /// How many
    count: Option<u32>,
}

struct Counting(Arc<AtomicUsize>);

#[async_trait]
impl Tool for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn description(&self) -> &str {
        "Counts its runs"
    }
    fn parameters(&self) -> Value {
        schema_for::<CountArgs>()
    }
    async fn execute(&self, args: JsonObject, _ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let args: CountArgs = parse_args("counting", args)?;
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolSuccess::new(args.file_path, format!("ran {:?}", args.count), JsonObject::new()))
    }
}

#[tokio::test]
async fn arguments_failing_the_schema_never_reach_the_tool() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(Counting(runs.clone()))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let executor = ToolExecutor::new(
        registry,
        Workspace::new(dir.path()).unwrap(),
        Arc::new(PermissionEngine::new(Arc::new(ReplyLater))),
    );
    let fx = Fixture::new();
    let scope = fx.scope();
    let run = |input: Value| {
        let call =
            session_tools::ToolInvocation { call_id: "c".into(), tool: "counting".into(), input: obj(input) };
        let executor = &executor;
        let scope = scope.clone();
        async move {
            executor.run(&call, &scope, tokio_util::sync::CancellationToken::new(), Default::default()).await
        }
    };
    let missing = run(json!({"count": 1})).await.unwrap_err();
    assert!(matches!(missing, ToolError::InvalidArguments { .. }));
    let text = missing.to_string();
    assert!(text.starts_with("The counting tool was called with invalid arguments: "), "{text}");
    // OpenCode 1.18.34's words for a missing key.
    assert!(text.contains("invalid arguments: SchemaError(Missing key\n  at [\"filePath\"])."), "{text}");
    assert!(text.ends_with("Please rewrite the input so it satisfies the expected schema."), "{text}");
    let wrong = run(json!({"filePath": "a", "count": "three"})).await.unwrap_err();
    assert!(
        wrong.to_string().contains("SchemaError(\"three\" is not of type \"integer\"\n  at [\"count\"])"),
        "{wrong}"
    );
    let negative = run(json!({"filePath": "a", "count": -1})).await.unwrap_err();
    assert!(negative.to_string().contains("\n  at [\"count\"])"), "{negative}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    run(json!({"filePath": "a", "count": 2})).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(missing.failure(), ToolFailure::Other);
}

#[tokio::test]
async fn an_unknown_tool_is_an_error_naming_the_available_ones() {
    let fx = Fixture::new();
    let error = fx.run("teleport", json!({})).await.unwrap_err();
    assert!(matches!(error, ToolError::UnknownTool { .. }));
    assert_eq!(
        error.to_string(),
        // Every tool a model may call, `invalid` among them, in code-unit order (OpenCode 1.18.34).
        "Model tried to call unavailable tool 'teleport'. Available tools: bash, edit, glob, grep, invalid, read, todowrite, write."
    );
}

#[tokio::test]
async fn every_result_says_whether_its_output_was_cut() {
    let fx = Fixture::new();
    // Tools that say nothing about it get `truncated: false`, as OpenCode's wrapper gives it.
    let todos = json!([{"content": "plan", "status": "pending", "priority": "high"}]);
    let written = fx.run("todowrite", json!({"todos": todos})).await.unwrap();
    assert_eq!(written.metadata.get("truncated"), Some(&json!(false)));
    let invalid = fx.run("invalid", json!({"tool": "teleport", "error": "no such tool"})).await.unwrap();
    assert_eq!(Value::Object(invalid.metadata), json!({"truncated": false}), "no `tool` of its own");
    // A tool that says it keeps its word.
    fx.write("notes.txt", "one\n");
    let read = fx.run("read", json!({"filePath": "notes.txt"})).await.unwrap();
    assert_eq!(read.metadata.get("truncated"), Some(&json!(false)));
}

#[tokio::test]
async fn builtin_schemas_use_opencode_parameter_names() {
    let registry = builtin_registry().unwrap();
    let definitions = registry.definitions(&Default::default());
    let read = definitions.iter().find(|d| d.name == "read").unwrap();
    assert_eq!(
        *read.parameters,
        json!({
            "type": "object",
            "properties": {
                "filePath": {"description": "The absolute path to the file or directory to read", "type": "string"},
                "offset": {"description": "The line number to start reading from (1-indexed)", "type": "integer", "minimum": 0},
                "limit": {"description": "The maximum number of lines to read (defaults to 2000)", "type": "integer", "minimum": 0}
            },
            "required": ["filePath"]
        })
    );
    let names = |tool: &str| -> Vec<String> {
        let definition = definitions.iter().find(|d| d.name == tool).unwrap();
        definition.parameters["properties"].as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(names("edit"), vec!["filePath", "oldString", "newString", "replaceAll"]);
    assert_eq!(names("write"), vec!["content", "filePath"]);
    assert_eq!(names("grep"), vec!["pattern", "path", "include"]);
    assert_eq!(names("glob"), vec!["pattern", "path"]);
    // OpenCode 1.18.34 offers no `description` (a call may still send one).
    assert_eq!(names("bash"), vec!["command", "timeout", "workdir"]);
    assert_eq!(names("todowrite"), vec!["todos"]);
    let disabled = session_core::permission::disabled_tools(
        registry.names(),
        &[session_core::permission::Rule::new("edit", "*", session_core::permission::Action::Deny)],
    );
    let left: Vec<String> = registry.definitions(&disabled).into_iter().map(|d| d.name).collect();
    assert_eq!(left, vec!["read", "glob", "grep", "bash", "todowrite"]);
}

#[test]
fn results_and_errors_become_the_events_the_processor_reads() {
    let mut metadata = JsonObject::new();
    metadata.insert("exit".into(), json!(0));
    let result = ToolSuccess::new("title", "out", metadata.clone());
    assert_eq!(result.to_value().value, json!({"output": "out", "title": "title", "metadata": {"exit": 0}}));
    let derived = derive_output("bash", result.to_value());
    assert_eq!(
        (derived.title.as_str(), derived.output.as_str(), derived.metadata),
        ("title", "out", metadata)
    );

    let event = ToolCompletion {
        call_id: "c1".into(),
        tool: "edit".into(),
        result: Err(ToolError::Permission(PermissionError::Rejected)),
    }
    .into_event();
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"type": "tool-error", "id": "c1", "name": "edit", "message": session_core::permission::PERMISSION_REJECTED_TEXT, "error": "permission-rejected"})
    );
    let corrected = ToolError::Permission(PermissionError::Corrected { feedback: "no".into() });
    assert_eq!(corrected.failure(), ToolFailure::Other);
    assert_eq!(
        ToolError::QuestionRejected(session_core::permission::QuestionRejectedError).failure(),
        ToolFailure::QuestionRejected
    );
}
