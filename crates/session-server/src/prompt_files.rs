//! File parts of a prompt (`{"type": "file", "mime", "url", "filename"?}`), as OpenCode's
//! clients send `@file` mentions and pasted images: a `data:` URL is kept as the file part it
//! is; a `file://` URL must name a file inside the project, which is attached as `session run
//! -f` attaches it (text inlined, images and PDFs as data).

use std::path::Path;

use serde_json::Value;
use session_core::{FilePart, PartKind};

use crate::error::ServerError;

/// The parts that stand for the file part `part` (at `parts[index]`).
pub(crate) fn file_part(part: &Value, index: usize, worktree: &Path) -> Result<Vec<PartKind>, ServerError> {
    let field = |name: &str| part.get(name).and_then(Value::as_str);
    let url = field("url")
        .ok_or_else(|| ServerError::body(format!("parts[{index}].url: a file part needs a URL")))?;
    let mime = field("mime")
        .ok_or_else(|| ServerError::body(format!("parts[{index}].mime: a file part needs a mime")))?;
    let filename = field("filename").map(str::to_owned);
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
        let (mut kept, omitted) = session_tools::fit_images(vec![file]);
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
    let (pinned, shown) = crate::files::project_path(worktree, path, &field, ServerError::body)?;
    // The file is opened relative to its folder's handle; what it is and its size are checked
    // on the opened file.
    let file = match pinned.open_existing().map_err(|error| ServerError::body(format!("{field}: {error}")))? {
        Some(session_tools::Opened::File { file, .. }) => file,
        Some(session_tools::Opened::Folder(_)) => {
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

    #[test]
    fn files_inside_the_project_are_attached_and_others_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("notes.md"), "hello").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("file://{}", root.join("notes.md").display());
        let parts = file_part(&json!({"type": "file", "mime": "text/plain", "url": url}), 0, &root)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&parts[0], PartKind::Text(t) if t.text.contains("notes.md") && t.text.ends_with("hello"))
        );
        let outside =
            file_part(&json!({"type": "file", "mime": "text/plain", "url": "file:///etc/passwd"}), 1, &root);
        assert!(matches!(outside, Err(ServerError::Forbidden(_))), "{outside:?}");
        let other = file_part(
            &json!({"type": "file", "mime": "text/plain", "url": "https://example.com/x"}),
            2,
            &root,
        );
        assert!(matches!(other, Err(ServerError::BadRequest { .. })), "{other:?}");
        let data = file_part(
            &json!({"type": "file", "mime": "application/pdf", "url": "data:application/pdf;base64,AA=="}),
            3,
            &root,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(&data[0], PartKind::File(f) if f.mime == "application/pdf"));
    }
}
