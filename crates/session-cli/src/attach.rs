//! `session run -f PATH`: files attached to the prompt as parts of the user message, as
//! OpenCode attaches them. A text file is inlined as a synthetic text part (the model reads
//! it) beside its `text/plain` file part (which records the attachment and is not sent again);
//! an image or a PDF is a file part holding its bytes as a `data:` URL, images fitted to the
//! providers' limits.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use session_core::{FilePart, PartKind, TextPart};

/// The largest file attached, in bytes.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// The parts of the files at `paths` (relative ones start at `cwd`), in order.
pub fn attachments(paths: &[PathBuf], cwd: &Path) -> Result<Vec<PartKind>> {
    let mut parts = Vec::new();
    for path in paths {
        let full = cwd.join(path);
        let shown = path.display().to_string();
        let meta = std::fs::metadata(&full).with_context(|| format!("--file {shown}: cannot read it"))?;
        if !meta.is_file() {
            bail!("--file {shown}: not a regular file");
        }
        if meta.len() > MAX_ATTACHMENT_BYTES {
            bail!(
                "--file {shown}: {} bytes, more than the {MAX_ATTACHMENT_BYTES} attached at most",
                meta.len()
            );
        }
        let bytes = std::fs::read(&full).with_context(|| format!("--file {shown}: cannot read it"))?;
        let filename = full.file_name().map(|name| name.to_string_lossy().into_owned());
        match media_type(&full) {
            Some(mime) => {
                let url = format!(
                    "data:{mime};base64,{}",
                    base64::engine::general_purpose::STANDARD.encode(&bytes)
                );
                let file = FilePart { mime: mime.to_owned(), filename, url, source: None };
                let (mut kept, omitted) = session_tools::fit_images(vec![file]);
                match kept.pop() {
                    Some(file) if omitted == 0 => parts.push(PartKind::File(file)),
                    _ => bail!("--file {shown}: the image cannot be read or brought under the size limit"),
                }
            }
            None => {
                let Ok(text) = String::from_utf8(bytes) else {
                    bail!("--file {shown}: not text (UTF-8), an image or a PDF");
                };
                parts.push(PartKind::Text(TextPart {
                    text: format!("The user attached the file {shown}:\n\n{text}"),
                    synthetic: Some(true),
                    ..TextPart::default()
                }));
                let url = format!("file://{}", full.canonicalize().unwrap_or(full.clone()).display());
                parts.push(PartKind::File(FilePart {
                    mime: "text/plain".to_owned(),
                    filename,
                    url,
                    source: None,
                }));
            }
        }
    }
    Ok(parts)
}

/// The media type of a file sent as bytes (raster images and PDF), by its extension.
fn media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_string_lossy().to_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_inlined_and_other_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "remember the milk\n").unwrap();
        std::fs::write(dir.path().join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
        let parts = attachments(&[PathBuf::from("notes.txt")], dir.path()).unwrap();
        assert!(
            matches!(&parts[0], PartKind::Text(text) if text.text.contains("remember the milk") && text.synthetic == Some(true))
        );
        assert!(
            matches!(&parts[1], PartKind::File(file) if file.mime == "text/plain" && file.url.starts_with("file://"))
        );
        let error = attachments(&[PathBuf::from("blob.bin")], dir.path()).unwrap_err().to_string();
        assert!(error.contains("not text"), "{error}");
        let error = attachments(&[PathBuf::from("missing.txt")], dir.path()).unwrap_err().to_string();
        assert!(error.contains("--file missing.txt"), "{error}");
        let error = attachments(&[PathBuf::from(".")], dir.path()).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }
}
