//! A prompt's body as clients send it (`POST /session/{id}/message` and `prompt_async`),
//! checked and turned into the runtime's input. File parts (`{"type": "file", "mime", "url",
//! "filename"?}`), as OpenCode's clients send `@file` mentions and pasted images: a `data:` URL
//! is kept as the file part it is; a `file://` URL must name a file inside the project, which
//! is attached as `session run -f` attaches it (text inlined, images and PDFs as data).

use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use session_core::{FilePart, Identifier as _, MessageId, ModelRef, PartKind};
use session_runtime::PromptInput;
use session_runtime::wire::{FileInput, PromptPart};

use super::file::project_path;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;

/// The model a prompt names.
#[derive(Debug, Deserialize)]
struct ModelBody {
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(rename = "modelID")]
    model_id: String,
}

/// `POST /session/{id}/message` and `prompt_async` body.
#[derive(Debug, Default, Deserialize)]
struct PromptBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(default)]
    model: Option<ModelBody>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(rename = "noReply", default)]
    no_reply: Option<bool>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    tools: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    format: Option<session_core::OutputFormat>,
    parts: Vec<BodyPart>,
}

/// A part as it arrives: typed by its `type`, or without a (string) `type` at all.
#[derive(Debug)]
enum BodyPart {
    /// A part with a type.
    Typed(PromptPart),
    /// Anything else: refused, naming the missing type.
    Untyped,
}

impl<'de> Deserialize<'de> for BodyPart {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// A `type` that is not a string: serde would read a number as a variant's index.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum NotText {
            Flag(#[expect(dead_code, reason = "only the shape is checked")] bool),
            Number(#[expect(dead_code, reason = "only the shape is checked")] serde_json::Number),
            List(#[expect(dead_code, reason = "only the shape is checked")] Vec<IgnoredAny>),
            Object(
                #[expect(dead_code, reason = "only the shape is checked")]
                std::collections::BTreeMap<String, IgnoredAny>,
            ),
            Null,
        }
        /// A part whose `type` is there but not a string.
        #[derive(Deserialize)]
        struct BadType {
            #[serde(rename = "type")]
            #[expect(dead_code, reason = "only the shape is checked")]
            kind: NotText,
        }
        /// Every shape, tried in order; the untyped one takes whatever the others do not.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            BadType(#[expect(dead_code, reason = "only the shape is checked")] BadType),
            Typed(PromptPart),
            Untyped(IgnoredAny),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Typed(part) => Self::Typed(part),
            Either::BadType(_) | Either::Untyped(_) => Self::Untyped,
        })
    }
}

/// Checks a prompt body and turns it into the runtime's input; `worktree` is where `file://`
/// parts must point.
pub(crate) fn prompt_input(body: &JsonBody, worktree: &std::path::Path) -> Result<PromptInput, ServerError> {
    let body: PromptBody = parse_body(body, true)?;
    if body.no_reply == Some(true) {
        return Err(ServerError::body(
            "noReply: storing a message without a reply is not supported by this server",
        ));
    }
    if body.system.is_some() || body.tools.is_some() {
        tracing::debug!("ignoring system and tools of a prompt: this server does not use them");
    }
    let message_id = body
        .message_id
        .as_deref()
        .map(MessageId::parse)
        .transpose()
        .map_err(|error| ServerError::body(format!("messageID: {error}")))?;
    if body.variant.as_deref().is_some_and(|v| v.trim().is_empty()) {
        return Err(ServerError::body("variant: must not be empty"));
    }
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for (index, part) in body.parts.iter().enumerate() {
        let BodyPart::Typed(part) = part else {
            return Err(ServerError::body(format!("parts[{index}].type: a part needs a type (\"text\")")));
        };
        match part {
            PromptPart::Text(text) => {
                let Some(content) = &text.text else {
                    return Err(ServerError::body(format!(
                        "parts[{index}].text: a text part needs a string text"
                    )));
                };
                if text.ignored != Some(true) {
                    texts.push(content.clone());
                }
            }
            PromptPart::File(file) => attachments.extend(file_part(file, index, worktree)?),
            PromptPart::Agent | PromptPart::Subtask => {
                let kind = part.kind();
                return Err(ServerError::body(format!(
                    "parts[{index}].type: {kind:?} parts are not supported by this server; send text and file \
                     parts"
                )));
            }
            PromptPart::Other => tracing::debug!("skipping a prompt part of an unknown type"),
        }
    }
    if texts.is_empty() && attachments.is_empty() {
        return Err(ServerError::body("parts: at least one text or file part is required"));
    }
    let model = match body.model {
        Some(model) => {
            if model.provider_id.trim().is_empty() {
                return Err(ServerError::body("model.providerID: must not be empty"));
            }
            if model.model_id.trim().is_empty() {
                return Err(ServerError::body("model.modelID: must not be empty"));
            }
            Some(ModelRef { provider_id: model.provider_id, model_id: model.model_id, variant: None })
        }
        None => None,
    };
    if body.agent.as_deref().is_some_and(|a| a.trim().is_empty()) {
        return Err(ServerError::body("agent: must not be empty"));
    }
    Ok(PromptInput {
        text: texts.join("\n"),
        agent: body.agent,
        model,
        variant: body.variant,
        attachments,
        format: body.format,
        message_id,
    })
}

/// The parts that stand for the file part `part` (at `parts[index]`).
pub(crate) fn file_part(
    part: &FileInput,
    index: usize,
    worktree: &Path,
) -> Result<Vec<PartKind>, ServerError> {
    let url = part
        .url
        .as_deref()
        .ok_or_else(|| ServerError::body(format!("parts[{index}].url: a file part needs a URL")))?;
    let mime = part
        .mime
        .as_deref()
        .ok_or_else(|| ServerError::body(format!("parts[{index}].mime: a file part needs a mime")))?;
    let filename = part.filename.clone();
    if let Some(data) = url.strip_prefix("data:") {
        if !data.contains(',') {
            return Err(ServerError::body(format!(
                "parts[{index}].url: a data URL needs a comma before its data"
            )));
        }
        let file = FilePart { mime: mime.to_owned(), filename, url: url.to_owned(), source: None };
        if !mime.starts_with("image/") {
            return Ok(vec![PartKind::File(file)]);
        }
        let (mut kept, omitted) = session_runtime::files::fit_images(vec![file]);
        return match kept.pop() {
            Some(file) if omitted == 0 => Ok(vec![PartKind::File(file)]),
            _ => Err(ServerError::body(format!(
                "parts[{index}].url: the image cannot be read or brought under the size limit"
            ))),
        };
    }
    let Some(path) = url.strip_prefix("file://") else {
        return Err(ServerError::body(format!(
            "parts[{index}].url: only data: and file:// URLs are attached"
        )));
    };
    // `file://` URLs of OpenCode's clients carry the path as it is, a query or fragment aside.
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let field = format!("parts[{index}].url");
    let (pinned, shown) = project_path(worktree, path, &field, ServerError::body)?;
    // The file is opened relative to its folder's handle; what it is and its size are checked
    // on the opened file.
    let file = match pinned.open_existing().map_err(|error| ServerError::body(format!("{field}: {error}")))? {
        Some(session_runtime::files::Opened::File { file, .. }) => file,
        Some(session_runtime::files::Opened::Folder(_)) => {
            return Err(ServerError::body(format!("{field}: {shown} is a folder, not a file")));
        }
        None => return Err(ServerError::body(format!("{field}: {shown} does not exist"))),
    };
    session_runtime::files::attach_opened(file, &pinned.resolved().path, &shown)
        .map_err(|error| ServerError::body(format!("{field}: {error}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn file(value: serde_json::Value) -> FileInput {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn files_inside_the_project_are_attached_and_others_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("notes.md"), "hello").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("file://{}", root.join("notes.md").display());
        let parts = file_part(&file(json!({"type": "file", "mime": "text/plain", "url": url})), 0, &root)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&parts[0], PartKind::Text(t) if t.text.contains("notes.md") && t.text.ends_with("hello"))
        );
        let outside = file_part(
            &file(json!({"type": "file", "mime": "text/plain", "url": "file:///etc/passwd"})),
            1,
            &root,
        );
        assert!(matches!(outside, Err(ServerError::Forbidden(_))), "{outside:?}");
        let other = file_part(
            &file(json!({"type": "file", "mime": "text/plain", "url": "https://example.com/x"})),
            2,
            &root,
        );
        assert!(matches!(other, Err(ServerError::BadRequest { .. })), "{other:?}");
        let data = file_part(
            &file(
                json!({"type": "file", "mime": "application/pdf", "url": "data:application/pdf;base64,AA=="}),
            ),
            3,
            &root,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(&data[0], PartKind::File(f) if f.mime == "application/pdf"));
    }

    #[test]
    fn a_part_whose_type_is_not_a_string_is_refused_as_untyped() {
        for kind in [json!(0), json!(1), json!(true), json!(null), json!(["text"]), json!({"a": 1})] {
            let part: BodyPart =
                serde_json::from_value(json!({"type": kind, "text": "hi"})).unwrap_or_else(|e| panic!("{e}"));
            assert!(matches!(part, BodyPart::Untyped), "{kind}: {part:?}");
        }
        let text: BodyPart =
            serde_json::from_value(json!({"type": "text", "text": "hi"})).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(text, BodyPart::Typed(PromptPart::Text(_))), "{text:?}");
        let missing: BodyPart =
            serde_json::from_value(json!({"text": "hi"})).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(missing, BodyPart::Untyped), "{missing:?}");
    }
}
