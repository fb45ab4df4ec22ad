//! The parts of a prompt as OpenCode's clients send them (`{"type": "text", "text"}`,
//! `{"type": "file", "mime", "url", "filename"?}`, ...).
//!
//! The fields are read leniently: a field of the wrong JSON type reads as absent, so that the
//! server, which checks them, names the field in its own words.

use serde::de::{Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize};

/// One part of a prompt, by its `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PromptPart {
    /// Text for the model.
    Text(TextInput),
    /// A file: a `data:` URL, or a `file://` URL the server attaches.
    File(FileInput),
    /// A mention of an agent.
    Agent,
    /// A subtask for an agent.
    Subtask,
    /// A part of a type this runtime does not know.
    #[serde(other)]
    Other,
}

impl PromptPart {
    /// The part's `type`, as sent (`"other"` for an unknown one).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::File(_) => "file",
            Self::Agent => "agent",
            Self::Subtask => "subtask",
            Self::Other => "other",
        }
    }
}

/// A text part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextInput {
    /// The text (absent when not a string).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Set when the client shows the text without sending it to the model.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub ignored: Option<bool>,
}

/// A file part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInput {
    /// Its media type.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// A `data:` or `file://` URL.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The name shown for it.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// A value of type `T`, or anything else (read as absent).
#[derive(Deserialize)]
#[serde(untagged)]
enum Lenient<T> {
    Value(T),
    Other(IgnoredAny),
}

fn lenient<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Ok(match Lenient::<T>::deserialize(deserializer)? {
        Lenient::Value(value) => Some(value),
        Lenient::Other(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn part(value: serde_json::Value) -> PromptPart {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parts_read_by_type_and_unknown_types_are_other() {
        assert_eq!(
            part(json!({"type": "text", "text": "hi", "ignored": true, "synthetic": false})),
            PromptPart::Text(TextInput { text: Some("hi".into()), ignored: Some(true) })
        );
        assert_eq!(
            part(json!({"type": "file", "mime": "image/png", "url": "data:,", "source": {}})),
            PromptPart::File(FileInput {
                mime: Some("image/png".into()),
                url: Some("data:,".into()),
                filename: None
            })
        );
        assert_eq!(part(json!({"type": "agent", "name": "x"})), PromptPart::Agent);
        assert_eq!(part(json!({"type": "subtask", "prompt": "p"})), PromptPart::Subtask);
        assert_eq!(part(json!({"type": "patch", "files": []})), PromptPart::Other);
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        assert_eq!(
            part(json!({"type": "text", "text": 1, "ignored": "yes"})),
            PromptPart::Text(TextInput::default())
        );
        assert_eq!(part(json!({"type": "text"})), PromptPart::Text(TextInput::default()));
        assert!(serde_json::from_value::<PromptPart>(json!({"text": "x"})).is_err());
    }
}
