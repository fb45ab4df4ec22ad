//! The registered tools, their schemas and the validation of arguments against them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;
use session_core::JsonObject;

use crate::error::ToolError;
use crate::tool::Tool;

/// A tool as a model request lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments, shared with the registry: each step's request lists
    /// the tools again, and a schema is copied by its count, not by its contents.
    pub parameters: Arc<Value>,
}

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Arc<Value>,
    /// The compiled schema: set at registration for outside tools, on the first call for
    /// built-in ones (compiling nine schemas before the first request costs start-up time),
    /// which compile as draft 7 ([`compile_builtin`]).
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl Entry {
    fn validator(&self) -> Result<&jsonschema::Validator, ToolError> {
        self.validator
            .get_or_init(|| compile_builtin(self.tool.name(), &self.schema))
            .as_ref()
            .map_err(|message| ToolError::Failed { message: message.clone() })
    }
}

/// Compiles a tool's schema; jsonschema checks it against its meta-schema first.
fn compile(name: &str, schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema)
        .map_err(|error| format!("the schema of tool {name} is invalid: {error}"))
}

/// Compiles a built-in tool's schema as JSON Schema draft 7. Its keywords (`type`,
/// `properties`, `required`, `enum`, `items`, `minimum`, `additionalProperties`) mean the same
/// there as in 2020-12, and the draft-7 meta-schema that the compilation still checks it
/// against is much cheaper to build than 2020-12's, whose `$dynamicRef`s dominate a process's
/// first compilation. The tests check every built-in schema against both meta-schemas.
fn compile_builtin(name: &str, schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft7::new(schema).map_err(|error| format!("the schema of tool {name} is invalid: {error}"))
}

/// The tools a session may call, by name, in registration order.
#[derive(Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").field("tools", &self.names()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool from outside (MCP, plugins, tool sources), replacing one of the same name;
    /// its schema is checked against the meta-schema and compiled now, and a bad one fails here.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let schema = Arc::new(tool.parameters());
        let validator = compile(tool.name(), &schema).map_err(|message| ToolError::Failed { message })?;
        self.insert(Entry { tool, schema, validator: OnceLock::from(Ok(validator)) });
        Ok(())
    }

    /// Adds a tool of the embedding program's own, whose schema compiles on its first call:
    /// for schemas fixed in code that the program's tests check with `jsonschema::meta::validate`
    /// (this crate's built-in tools do), never for schemas from outside (MCP servers,
    /// configuration), which go through [`register`](Self::register) and fail there. The
    /// compilation, as draft 7, still passes the schema through the draft-7 meta-schema
    /// (jsonschema 0.61 has no public way to skip it): the process's first one builds that
    /// meta-schema's validator.
    pub fn register_builtin(&mut self, tool: Arc<dyn Tool>) {
        let schema = Arc::new(tool.parameters());
        self.insert(Entry { tool, schema, validator: OnceLock::new() });
    }

    fn insert(&mut self, entry: Entry) {
        let name = entry.tool.name().to_owned();
        match self.index.get(&name) {
            Some(&position) => {
                if let Some(slot) = self.entries.get_mut(position) {
                    *slot = entry;
                }
            }
            None => {
                self.index.insert(name, self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entry(name).map(|entry| &entry.tool)
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).and_then(|&position| self.entries.get(position))
    }

    /// The names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|entry| entry.tool.name()).collect()
    }

    /// The definitions to send with a model request, leaving out the tools in `disabled`
    /// (see `session_core::permission::disabled_tools`) and the `invalid` tool, which only
    /// answers repaired calls (SPEC 1.1).
    pub fn definitions(&self, disabled: &std::collections::BTreeSet<String>) -> Vec<ToolDefinition> {
        self.entries
            .iter()
            .filter(|entry| {
                let name = entry.tool.name();
                name != session_core::processor::INVALID_TOOL && !disabled.contains(name)
            })
            .map(|entry| ToolDefinition {
                name: entry.tool.name().to_owned(),
                description: entry.tool.description().to_owned(),
                parameters: entry.schema.clone(),
            })
            .collect()
    }

    /// Finds the tool and checks `args` against its schema. A failure names each wrong field
    /// and means the tool must not run.
    pub fn validate(&self, name: &str, args: &JsonObject) -> Result<Arc<dyn Tool>, ToolError> {
        let Some(entry) = self.entry(name) else {
            let offered: Vec<&str> =
                self.names().into_iter().filter(|n| *n != session_core::processor::INVALID_TOOL).collect();
            return Err(ToolError::UnknownTool { name: name.to_owned(), available: offered.join(", ") });
        };
        match schema_error(entry.validator()?, &Value::Object(args.clone())) {
            None => Ok(entry.tool.clone()),
            Some(details) => Err(ToolError::InvalidArguments { tool: name.to_owned(), details }),
        }
    }
}

/// The first way `instance` breaks the schema of `validator`, in the shape OpenCode 1.18.34's
/// schema errors take: `SchemaError(Missing key\n  at ["filePath"])`. A missing key
/// is in its words; other problems keep jsonschema's, with the same `at` path.
fn schema_error(validator: &jsonschema::Validator, instance: &Value) -> Option<String> {
    use jsonschema::error::ValidationErrorKind;
    use jsonschema::paths::LocationSegment;
    let error = validator.iter_errors(instance).next()?;
    let mut at: String = error
        .instance_path()
        .iter()
        .map(|segment| match segment {
            LocationSegment::Property(name) => format!("[{}]", Value::String(name.into_owned())),
            LocationSegment::Index(index) => format!("[{index}]"),
        })
        .collect();
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            at.push_str(&format!("[{property}]"));
            "Missing key".to_owned()
        }
        _ => error.to_string(),
    };
    Some(if at.is_empty() {
        format!("SchemaError({message})")
    } else {
        format!("SchemaError({message}\n  at {at})")
    })
}

/// Each way `instance` breaks the schema of `validator`, led by the dotted path of the field
/// (`options.depth: ...`); empty when it matches.
pub fn schema_problems(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| {
            let field = error.instance_path().as_str().trim_start_matches('/').replace('/', ".");
            if field.is_empty() { error.to_string() } else { format!("{field}: {error}") }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_error_names_the_first_problem_where_opencode_does() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"todos": {"type": "array", "items": {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"]
            }}},
            "required": ["todos"]
        });
        let validator = jsonschema::draft7::new(&schema).unwrap();
        let error = |value| schema_error(&validator, &value);
        assert_eq!(error(serde_json::json!({})).unwrap(), "SchemaError(Missing key\n  at [\"todos\"])");
        assert_eq!(
            error(serde_json::json!({"todos": [{"content": "a"}, {}]})).unwrap(),
            "SchemaError(Missing key\n  at [\"todos\"][1][\"content\"])"
        );
        assert_eq!(
            error(serde_json::json!({"todos": "x"})).unwrap(),
            "SchemaError(\"x\" is not of type \"array\"\n  at [\"todos\"])"
        );
        assert_eq!(error(serde_json::json!({"todos": []})), None);
    }
}
