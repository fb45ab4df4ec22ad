//! Structured output (SPEC 12 steps 7 and 10): a `json_schema` format on the user message adds
//! the `StructuredOutput` tool, whose validated input becomes the assistant message's
//! `structured` value.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use session_core::processor::ToolSettlement;
use session_core::{JsonObject, MessageError, OutputFormat, ToolFailure};
use session_llm::ToolSpec;
use session_tools::{ToolSuccess, schema_problems};

use super::error::RuntimeError;
use super::runs::lock;

/// The name of the tool the model answers through when a schema is requested.
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// The system instruction added while a schema is requested.
pub const STRUCTURED_OUTPUT_INSTRUCTION: &str = "The user asked for the answer as structured data. Do the \
work the request needs with the other tools first, then give the final answer by calling the \
StructuredOutput tool exactly once, with the answer as its input. Its input must match the tool's schema; \
a reply in plain text is not accepted.";

const TOOL_DESCRIPTION: &str = "Returns the final answer as JSON matching the requested schema. Call it \
once, when the answer is complete; the call ends the task.";

/// What the model reads after a valid call, in OpenCode 1.18.34's words (a client shows it).
const CAPTURED: &str = "Structured output captured successfully.";

/// The error a finished reply without structured output gets (SPEC 12 step 10).
pub fn missing_output_error() -> MessageError {
    MessageError::StructuredOutputError {
        message: "Model did not produce structured output".to_owned(),
        retries: 0,
    }
}

/// One step's structured-output state: the schema's validator and what the model sent.
pub(super) struct StructuredOutput {
    schema: Arc<Value>,
    validator: jsonschema::Validator,
    captured: Mutex<Option<Value>>,
}

impl StructuredOutput {
    /// The state for `schema`, or the schema's own error when it is not a valid JSON schema.
    pub(super) fn new(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema).map_err(|error| error.to_string())?;
        Ok(Self { schema: Arc::new(schema.clone()), validator, captured: Mutex::new(None) })
    }

    /// The state a message's answer `format` asks for: `None` for plain text, an error for a
    /// schema that is not a valid JSON schema.
    pub(super) fn for_format(format: Option<&OutputFormat>) -> Result<Option<Self>, RuntimeError> {
        match format {
            Some(OutputFormat::JsonSchema { schema, .. }) => {
                Self::new(schema).map(Some).map_err(RuntimeError::InvalidSchema)
            }
            Some(OutputFormat::Text) | None => Ok(None),
        }
    }

    /// The tool the model is offered.
    pub(super) fn tool(&self) -> ToolSpec {
        ToolSpec {
            name: STRUCTURED_OUTPUT_TOOL.to_owned(),
            description: TOOL_DESCRIPTION.to_owned(),
            input_schema: self.schema.clone(),
        }
    }

    /// Takes one call of the tool: a valid input is kept (the last valid call wins) and
    /// answered with a result; an invalid one is answered with an error naming each wrong
    /// field, so the model can call again within the step loop.
    pub(super) fn capture(&self, call_id: String, input: JsonObject) -> ToolSettlement {
        let value = Value::Object(input);
        let problems = schema_problems(&self.validator, &value);
        if problems.is_empty() {
            *lock(&self.captured) = Some(value);
            // OpenCode's title and `valid` flag, which its clients read.
            let mut metadata = JsonObject::new();
            metadata.insert("valid".to_owned(), Value::Bool(true));
            let output = ToolSuccess::new("Structured Output", CAPTURED, metadata).into_output();
            ToolSettlement::Completed { call_id, output }
        } else {
            let message = format!(
                "The StructuredOutput input does not match the schema: {}. Call the tool again with a \
                 corrected input.",
                problems.join("; ")
            );
            ToolSettlement::Failed { call_id, message, failure: Some(ToolFailure::Other) }
        }
    }

    /// What the model sent, once a call was valid.
    pub(super) fn take(&self) -> Option<Value> {
        lock(&self.captured).take()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn a_valid_call_is_captured_and_answered() {
        let output = StructuredOutput::new(&json!({
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
        }))
        .unwrap();
        match output.capture("c1".into(), object(json!({"answer": 42}))) {
            ToolSettlement::Completed { call_id, output } => {
                assert_eq!((call_id.as_str(), output.title.as_str()), ("c1", "Structured Output"))
            }
            other => panic!("expected a result, got {other:?}"),
        }
        assert_eq!(output.take(), Some(json!({"answer": 42})));
        assert_eq!(output.take(), None);
    }

    #[test]
    fn an_invalid_call_names_the_field_and_keeps_nothing() {
        let output = StructuredOutput::new(&json!({
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
        }))
        .unwrap();
        match output.capture("c1".into(), object(json!({"answer": "many"}))) {
            ToolSettlement::Failed { message, .. } => assert!(message.contains("answer:"), "{message}"),
            other => panic!("expected an error, got {other:?}"),
        }
        assert_eq!(output.take(), None);
    }

    #[test]
    fn an_invalid_schema_is_refused() {
        assert!(StructuredOutput::new(&json!({"type": 12})).is_err());
    }
}
