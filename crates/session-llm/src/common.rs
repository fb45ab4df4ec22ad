//! Helpers shared by the stream parsers: strict JSON parsing that names the event, lenient
//! token counts, provider metadata and the text/reasoning block bookkeeping of providers whose
//! wire format has no block ids.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use session_core::{LlmEvent, ProviderMetadata, Usage};

use crate::error::LlmError;

/// Parses an event's data into its typed form; a failure names the event.
pub(crate) fn parse_event<T: DeserializeOwned>(index: usize, data: &str) -> Result<T, LlmError> {
    serde_json::from_str(data).map_err(|err| LlmError::MalformedEvent { index, message: err.to_string() })
}

/// A token count that tolerates floats and nulls: servers differ, and a count is never worth
/// failing a stream over.
pub(crate) fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        Int(i64),
        Float(f64),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Option::<Num>::deserialize(deserializer)? {
        Some(Num::Int(n)) => Some(n),
        // Truncation is the intent: a fractional token count is a server bug.
        Some(Num::Float(f)) if f.is_finite() => Some(f as i64),
        Some(Num::Float(_) | Num::Other(_)) | None => None,
    })
}

/// The total the AI SDK gives a step (SPEC 1.1): input plus output, a missing one counting 0,
/// absent when both are. A provider's own `total_tokens` is not used, as OpenCode 1.18.34
/// stores this sum whatever the provider reports.
pub(crate) fn sdk_total(input: Option<i64>, output: Option<i64>) -> Option<i64> {
    match (input, output) {
        (None, None) => None,
        // Saturating: counts come from the wire, and no sum may overflow (a panic in debug).
        (input, output) => Some(input.unwrap_or(0).saturating_add(output.unwrap_or(0))),
    }
}

/// `Some(usage)` unless no field is set (SPEC 1.1: an empty usage is absent).
pub(crate) fn non_empty(usage: Usage) -> Option<Usage> {
    (!usage.is_empty()).then_some(usage)
}

/// Provider metadata `{provider: {key: value, ...}}`.
pub(crate) fn metadata<const N: usize>(provider: &str, entries: [(&str, Value); N]) -> ProviderMetadata {
    let mut inner = serde_json::Map::new();
    for (key, value) in entries {
        inner.insert(key.to_owned(), value);
    }
    let mut outer = serde_json::Map::new();
    outer.insert(provider.to_owned(), Value::Object(inner));
    outer
}

/// A tool call's input from its streamed JSON text: empty text is `{}`, text that is not JSON
/// is passed on as a string (the processor wraps non-objects as `{value}`).
pub(crate) fn tool_input(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Which kind of block is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// Visible text.
    Text,
    /// Reasoning text.
    Reasoning,
}

/// The one open text or reasoning block of a provider that sends no block ids; ids are
/// generated as `text-N` / `reasoning-N` (SPEC 1.1).
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    open: Option<(BlockKind, String)>,
    /// Metadata to put on the block's end event (for example the last signature seen).
    end_metadata: Option<ProviderMetadata>,
    counter: usize,
}

impl Blocks {
    /// Appends `text` to a block of `kind`, opening one (and closing another kind) as needed.
    pub(crate) fn delta(
        &mut self,
        kind: BlockKind,
        text: String,
        metadata: Option<ProviderMetadata>,
        out: &mut Vec<LlmEvent>,
    ) {
        let id = self.ensure(kind, metadata.clone(), out);
        if metadata.is_some() {
            self.end_metadata.clone_from(&metadata);
        }
        out.push(match kind {
            BlockKind::Text => LlmEvent::TextDelta { id, text, provider_metadata: metadata },
            BlockKind::Reasoning => LlmEvent::ReasoningDelta { id, text, provider_metadata: metadata },
        });
    }

    /// Opens a block of `kind` unless one is open; returns its id.
    fn ensure(
        &mut self,
        kind: BlockKind,
        metadata: Option<ProviderMetadata>,
        out: &mut Vec<LlmEvent>,
    ) -> String {
        if let Some((open_kind, id)) = &self.open {
            if *open_kind == kind {
                return id.clone();
            }
            self.close(out);
        }
        let id = match kind {
            BlockKind::Text => format!("text-{}", self.counter),
            BlockKind::Reasoning => format!("reasoning-{}", self.counter),
        };
        self.counter += 1;
        out.push(match kind {
            BlockKind::Text => LlmEvent::TextStart { id: id.clone(), provider_metadata: metadata },
            BlockKind::Reasoning => LlmEvent::ReasoningStart { id: id.clone(), provider_metadata: metadata },
        });
        self.open = Some((kind, id.clone()));
        id
    }

    /// Closes the open block, if any.
    pub(crate) fn close(&mut self, out: &mut Vec<LlmEvent>) {
        if let Some((kind, id)) = self.open.take() {
            let provider_metadata = self.end_metadata.take();
            out.push(match kind {
                BlockKind::Text => LlmEvent::TextEnd { id, provider_metadata },
                BlockKind::Reasoning => LlmEvent::ReasoningEnd { id, provider_metadata },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Counts {
        #[serde(default, deserialize_with = "count")]
        a: Option<i64>,
        #[serde(default, deserialize_with = "count")]
        b: Option<i64>,
        #[serde(default, deserialize_with = "count")]
        c: Option<i64>,
        #[serde(default, deserialize_with = "count")]
        d: Option<i64>,
    }

    #[test]
    fn counts_are_lenient() {
        let counts: Counts = serde_json::from_str(r#"{"a":3,"b":2.9,"c":null,"d":"x"}"#).unwrap();
        assert_eq!((counts.a, counts.b, counts.c, counts.d), (Some(3), Some(2), None, None));
    }

    #[test]
    fn the_total_is_input_plus_output() {
        assert_eq!(sdk_total(None, None), None);
        assert_eq!(sdk_total(Some(1000), Some(20)), Some(1020));
        assert_eq!(sdk_total(None, Some(20)), Some(20));
        assert_eq!(sdk_total(Some(i64::MAX), Some(1)), Some(i64::MAX));
    }

    #[test]
    fn tool_inputs() {
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input(r#"{"a":1}"#), json!({"a":1}));
        assert_eq!(tool_input("{\"a"), json!("{\"a"));
    }
}
