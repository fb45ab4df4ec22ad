//! The export format: a whole session as one versioned JSON document.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_core::{Message, Part};

use crate::model::{RawPart, Session};

/// The document version this build writes and the newest it reads.
pub const DOCUMENT_VERSION: u32 = 1;

fn version_one() -> u32 {
    1
}

/// A whole session: `{"version": 1, "info": Session, "messages": [{"info", "parts"}]}`.
///
/// The shape is OpenCode's `export` output plus `version`; a document without `version` (as
/// OpenCode writes it) reads as version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionDocument {
    /// Format version.
    #[serde(default = "version_one")]
    pub version: u32,
    /// The session record.
    pub info: Session,
    /// Messages oldest first.
    pub messages: Vec<DocumentMessage>,
}

/// One message of a document with its parts in id order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentMessage {
    /// The message.
    pub info: Message,
    /// Its parts.
    pub parts: Vec<DocumentPart>,
}

/// A part of a document: a kind this version knows, or any other part object kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DocumentPart {
    /// A part this version reads.
    Known(Box<Part>),
    /// A part of another kind or shape, kept as its JSON object.
    Raw(Value),
}

impl DocumentPart {
    /// The part's id, whichever form it has.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::Known(part) => Some(part.id.as_str()),
            Self::Raw(value) => value.get("id").and_then(Value::as_str),
        }
    }
}

impl From<Part> for DocumentPart {
    fn from(part: Part) -> Self {
        Self::Known(Box::new(part))
    }
}

impl From<RawPart> for DocumentPart {
    fn from(raw: RawPart) -> Self {
        Self::Raw(raw.json)
    }
}
