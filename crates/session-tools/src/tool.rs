//! The `Tool` trait, what a tool returns, and the schema helpers tools use.

use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use session_core::{FilePart, JsonObject, ToolOutput, ToolResultKind, ToolResultValue};

use crate::context::ToolContext;
use crate::error::ToolError;

/// A tool the model can call.
///
/// The executor validates the arguments against [`Tool::parameters`] before it calls
/// [`Tool::execute`]; arguments that fail never reach the tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;
    /// The JSON schema of the arguments (an object schema).
    fn parameters(&self) -> Value;
    /// Runs one call with validated arguments.
    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolSuccess, ToolError>;
}

/// A built-in tool written against its typed arguments: the blanket [`Tool`] implementation
/// supplies the name, the description, the schema (from [`schema_for`]) and the parsing of
/// the validated arguments.
#[async_trait]
pub(crate) trait TypedTool: Send + Sync {
    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;
    /// The arguments; their schema is what the model sees.
    type Input: DeserializeOwned + JsonSchema + Send;
    /// Runs one call with parsed arguments.
    async fn run(&self, input: Self::Input, ctx: &ToolContext) -> Result<ToolSuccess, ToolError>;
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<T::Input>()
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let input = parse_args(T::NAME, args)?;
        self.run(input, ctx).await
    }
}

/// What a successful call produced (`{output, title, metadata, attachments?}`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSuccess {
    /// A short title for the part.
    pub title: String,
    /// The text the model reads.
    pub output: String,
    /// Details for clients (diffs, counts, exit codes, ...).
    pub metadata: JsonObject,
    /// Files returned to the model (images read, ...).
    pub attachments: Vec<FilePart>,
}

impl ToolSuccess {
    /// The result with its image attachments fitted to the size limits (SPEC 1.2); images
    /// that cannot be fitted are dropped and the output says how many.
    pub fn with_fitted_images(mut self) -> Self {
        let (attachments, omitted) = crate::image::fit_images(std::mem::take(&mut self.attachments));
        self.attachments = attachments;
        if omitted > 0 {
            self.output.push_str(&crate::image::omitted_suffix(omitted));
        }
        self
    }

    /// A result with a title, an output and metadata, and no attachments.
    pub fn new(title: impl Into<String>, output: impl Into<String>, metadata: JsonObject) -> Self {
        Self { title: title.into(), output: output.into(), metadata, attachments: Vec::new() }
    }

    /// The completed state's output, typed (what SPEC 1.2's derivation gives for
    /// [`ToolSuccess::to_value`]).
    pub fn into_output(self) -> ToolOutput {
        ToolOutput {
            title: self.title,
            output: self.output,
            metadata: self.metadata,
            attachments: (!self.attachments.is_empty()).then_some(self.attachments),
        }
    }

    /// The JSON value the processor derives the completed state from (SPEC 1.2): `{"output",
    /// "title", "metadata", "attachments"?}` of kind json.
    pub fn to_value(&self) -> ToolResultValue {
        let mut value = JsonObject::new();
        value.insert("output".to_owned(), Value::String(self.output.clone()));
        value.insert("title".to_owned(), Value::String(self.title.clone()));
        value.insert("metadata".to_owned(), Value::Object(self.metadata.clone()));
        if !self.attachments.is_empty() {
            let files = self.attachments.iter().filter_map(|file| serde_json::to_value(file).ok()).collect();
            value.insert("attachments".to_owned(), Value::Array(files));
        }
        ToolResultValue { kind: ToolResultKind::Json, value: Value::Object(value) }
    }
}

/// The argument schema of `T` as tools publish it: draft 2020-12, subschemas inlined, no
/// `$schema` or `title`, optional fields without a `null` type, and no integer `format`s
/// (providers reject several of those keywords).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut value {
        root.remove("$schema");
        root.remove("title");
    }
    tidy_schema(&mut value);
    value
}

fn tidy_schema(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    object.insert("type".to_owned(), single);
                }
            }
            let numeric_format = matches!(object.get("format"), Some(Value::String(f))
                if f.starts_with("int") || f.starts_with("uint") || f == "float" || f == "double");
            if numeric_format {
                object.remove("format");
            }
            object.values_mut().for_each(tidy_schema);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy_schema),
        _ => {}
    }
}

/// Deserializes validated arguments into a tool's argument type.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|error| ToolError::InvalidArguments { tool: tool.to_owned(), details: error.to_string() })
}
