//! `session run -f PATH`: files attached to the prompt as parts of the user message (see
//! [`session_runtime::files::attach_file`] for how each kind of file is attached).

use std::path::{Path, PathBuf};

use anyhow::Result;
use session_core::PartKind;

pub use session_runtime::files::MAX_ATTACHMENT_BYTES;

/// The parts of the files at `paths` (relative ones start at `cwd`), in order.
pub fn attachments(paths: &[PathBuf], cwd: &Path) -> Result<Vec<PartKind>> {
    let mut parts = Vec::new();
    for path in paths {
        let shown = path.display().to_string();
        let attached = session_runtime::files::attach_file(&cwd.join(path), &shown)
            .map_err(|error| anyhow::anyhow!("--file {error}"))?;
        parts.extend(attached);
    }
    Ok(parts)
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
