//! What an MCP tool's answer becomes: the text the model reads, images as attachments, and
//! the structured content kept in the metadata.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;
use session_core::{FilePart, JsonObject};
use session_tools::{MAX_IMAGE_BYTES, ToolSuccess};

use crate::error::McpError;

/// The most characters of text a result keeps; the rest is cut with a note (a server's answer
/// is untrusted and may be any size).
pub const MAX_RESULT_CHARS: usize = 30_000;

/// The result of `tool` (the server's own name for it) on `server`: text blocks joined by blank
/// lines, each image (or image resource) an attachment, audio and binary resources named but
/// not sent, resource links as their URI, and the structured content under the metadata's
/// `structuredContent` (and as the output when there is no text). A result flagged as an
/// error is the server's tool error.
pub fn to_success(server: &str, tool: &str, result: CallToolResult) -> Result<ToolSuccess, McpError> {
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            ContentBlock::Image(image) => match image_part(&image.mime_type, &image.data) {
                Ok(part) => attachments.push(part),
                Err(note) => texts.push(note),
            },
            ContentBlock::Audio(audio) => {
                texts.push(format!("[audio of type {} not shown]", audio.mime_type))
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push(text),
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => match mime_type {
                    Some(mime) if mime.starts_with("image/") => match image_part(&mime, &blob) {
                        Ok(part) => attachments.push(part),
                        Err(note) => texts.push(note),
                    },
                    mime => texts.push(format!(
                        "[resource {uri} of type {} not shown]",
                        mime.as_deref().unwrap_or("unknown")
                    )),
                },
                other => tracing::debug!(?other, "an MCP resource of an unknown kind is skipped"),
            },
            ContentBlock::ResourceLink(link) => texts.push(format!("Resource: {} ({})", link.name, link.uri)),
            other => tracing::debug!(?other, "an MCP content block of an unknown kind is skipped"),
        }
    }
    let mut output = texts.join("\n\n");
    if output.is_empty()
        && let Some(structured) = &result.structured_content
    {
        output = serde_json::to_string_pretty(structured).unwrap_or_default();
    }
    if result.is_error == Some(true) {
        return Err(McpError::ToolFailed { message: cut(output).0 });
    }
    let (output, cut_chars) = cut(output);
    let mut metadata = JsonObject::new();
    metadata.insert("server".to_owned(), Value::String(server.to_owned()));
    metadata.insert("tool".to_owned(), Value::String(tool.to_owned()));
    if cut_chars > 0 {
        metadata.insert("truncated".to_owned(), Value::Bool(true));
    }
    if let Some(structured) = result.structured_content {
        metadata.insert("structuredContent".to_owned(), cut_structured(structured));
    }
    Ok(ToolSuccess { title: tool.to_owned(), output, metadata, attachments })
}

/// An image as an attachment. A raster image over the size limit is scaled down (or dropped
/// with a note) later, as every tool's attachments are; a vector one (SVG) cannot be, so one
/// over [`MAX_IMAGE_BYTES`] is refused here with the note the model reads instead.
fn image_part(mime: &str, base64: &str) -> Result<FilePart, String> {
    let essence = mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase();
    // Base64 holds 3 bytes in 4 characters.
    let bytes = base64.trim().len() / 4 * 3;
    if essence == "image/svg+xml" && bytes > MAX_IMAGE_BYTES {
        return Err(format!(
            "[image of type {mime} ({bytes} bytes) not shown: over the {} MB image size limit]",
            MAX_IMAGE_BYTES / (1024 * 1024)
        ));
    }
    Ok(FilePart {
        mime: mime.to_owned(),
        filename: None,
        url: format!("data:{mime};base64,{base64}"),
        source: None,
    })
}

/// The structured content as kept in the metadata: as it came, or, when its JSON is longer
/// than [`MAX_RESULT_CHARS`], that JSON as text cut with the same note as a text result (the
/// metadata is stored with the message and sent to every client).
fn cut_structured(structured: Value) -> Value {
    match cut(serde_json::to_string(&structured).unwrap_or_default()) {
        (_, 0) => structured,
        (text, _) => Value::String(text),
    }
}

/// `text` cut to [`MAX_RESULT_CHARS`] characters with a note, and how many were cut.
fn cut(mut text: String) -> (String, usize) {
    let Some((end, _)) = text.char_indices().nth(MAX_RESULT_CHARS) else {
        return (text, 0);
    };
    let cut_chars = text[end..].chars().count();
    text.truncate(end);
    text.push_str(&format!("\n\n(output truncated: {cut_chars} more characters)"));
    (text, cut_chars)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn result(content: Vec<ContentBlock>, structured: Option<Value>, is_error: bool) -> CallToolResult {
        let mut result = CallToolResult::success(content);
        result.structured_content = structured;
        result.is_error = Some(is_error);
        result
    }

    #[test]
    fn text_images_and_structured_content_are_kept() {
        let answer = result(
            vec![ContentBlock::text("a"), ContentBlock::image("AAAA", "image/png"), ContentBlock::text("b")],
            Some(serde_json::json!({"n": 1})),
            false,
        );
        let success = to_success("s", "t", answer).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(success.output, "a\n\nb");
        assert_eq!(success.attachments.len(), 1);
        assert_eq!(success.attachments[0].url, "data:image/png;base64,AAAA");
        assert_eq!(success.metadata.get("structuredContent"), Some(&serde_json::json!({"n": 1})));
    }

    #[test]
    fn structured_content_alone_is_the_output() {
        let answer = result(Vec::new(), Some(serde_json::json!({"n": 1})), false);
        let success = to_success("s", "t", answer).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(success.output, "{\n  \"n\": 1\n}");
    }

    #[test]
    fn an_error_result_is_a_tool_error() {
        let answer = result(vec![ContentBlock::text("bad input")], None, true);
        assert_eq!(
            to_success("s", "t", answer),
            Err(McpError::ToolFailed { message: "bad input".to_owned() })
        );
    }

    #[test]
    fn a_huge_text_is_cut_with_a_note() {
        let answer = result(vec![ContentBlock::text("é".repeat(MAX_RESULT_CHARS + 5))], None, false);
        let success = to_success("s", "t", answer).unwrap_or_else(|error| panic!("{error}"));
        assert!(success.output.ends_with("(output truncated: 5 more characters)"));
        assert_eq!(success.metadata.get("truncated"), Some(&Value::Bool(true)));
    }

    #[test]
    fn an_svg_over_the_image_limit_is_a_note_and_a_small_one_is_kept() {
        let big = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let answer = result(
            vec![ContentBlock::image(big, "image/svg+xml"), ContentBlock::image("AAAA", "image/svg+xml")],
            None,
            false,
        );
        let success = to_success("s", "t", answer).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(success.attachments.len(), 1, "only the small svg is attached");
        assert!(success.output.contains("not shown: over the 5 MB image size limit"), "{}", success.output);
    }

    #[test]
    fn a_huge_structured_content_is_kept_cut_with_a_note() {
        let answer = result(Vec::new(), Some(serde_json::json!({"x": "y".repeat(MAX_RESULT_CHARS)})), false);
        let success = to_success("s", "t", answer).unwrap_or_else(|error| panic!("{error}"));
        let kept = success.metadata.get("structuredContent").and_then(Value::as_str).unwrap_or_default();
        assert!(kept.starts_with("{\"x\":\"yyy"), "{}", &kept[..20]);
        assert!(kept.ends_with("(output truncated: 8 more characters)"), "{}", &kept[kept.len() - 60..]);
    }
}
