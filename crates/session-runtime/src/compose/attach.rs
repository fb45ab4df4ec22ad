//! Files attached to a prompt as parts of the user message, as OpenCode attaches them: a text
//! file is inlined as a synthetic text part (the model reads it) beside its `text/plain` file
//! part (which records the attachment and is not sent again); an image or a PDF is a file part
//! holding its bytes as a `data:` URL, images fitted to the providers' limits. `session run
//! -f` and the server's `file://` prompt parts both attach through here.

use std::path::Path;

use base64::Engine as _;
use session_core::{FilePart, PartKind, TextPart};

/// The largest file attached, in bytes.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// Why a file cannot be attached; `shown` is the path as the user gave it.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The file cannot be read.
    #[error("{shown}: cannot read it: {source}")]
    Unreadable {
        /// The path as given.
        shown: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Not a regular file.
    #[error("{shown}: not a regular file")]
    NotAFile {
        /// The path as given.
        shown: String,
    },
    /// Larger than [`MAX_ATTACHMENT_BYTES`].
    #[error("{shown}: {size} bytes, more than the {MAX_ATTACHMENT_BYTES} attached at most")]
    TooLarge {
        /// The path as given.
        shown: String,
        /// Its size.
        size: u64,
    },
    /// An image that cannot be decoded or brought under the size limit.
    #[error("{shown}: the image cannot be read or brought under the size limit")]
    BadImage {
        /// The path as given.
        shown: String,
    },
    /// Neither UTF-8 text, nor an image, nor a PDF.
    #[error("{shown}: not text (UTF-8), an image or a PDF")]
    NotText {
        /// The path as given.
        shown: String,
    },
}

/// The parts that attach the file at `full` (`shown` names it in the text and in errors).
pub fn attach_file(full: &Path, shown: &str) -> Result<Vec<PartKind>, AttachError> {
    let unreadable = |source| AttachError::Unreadable { shown: shown.to_owned(), source };
    let file = open_nonblocking(full).map_err(unreadable)?;
    attach_opened(file, full, shown)
}

/// Opens `path` read-only without blocking on a FIFO or a device.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(nix::libc::O_NONBLOCK);
    }
    options.open(path)
}

/// The parts that attach the already opened `file` (found at `full`; `shown` names it): what
/// it is (a regular file) and its size are checked on the handle, so the caller decides where
/// the bytes come from by how it opened it.
pub fn attach_opened(file: std::fs::File, full: &Path, shown: &str) -> Result<Vec<PartKind>, AttachError> {
    use std::io::Read as _;
    let unreadable = |source| AttachError::Unreadable { shown: shown.to_owned(), source };
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(AttachError::NotAFile { shown: shown.to_owned() });
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        return Err(AttachError::TooLarge { shown: shown.to_owned(), size: meta.len() });
    }
    let mut bytes = Vec::new();
    file.take(MAX_ATTACHMENT_BYTES).read_to_end(&mut bytes).map_err(unreadable)?;
    let filename = full.file_name().map(|name| name.to_string_lossy().into_owned());
    if let Some(mime) = media_type(full) {
        let url = format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(&bytes));
        let file = FilePart { mime: mime.to_owned(), filename, url, source: None };
        let (mut kept, omitted) = session_tools::fit_images(vec![file]);
        return match kept.pop() {
            Some(file) if omitted == 0 => Ok(vec![PartKind::File(file)]),
            _ => Err(AttachError::BadImage { shown: shown.to_owned() }),
        };
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(AttachError::NotText { shown: shown.to_owned() });
    };
    let url = format!("file://{}", full.canonicalize().unwrap_or_else(|_| full.to_path_buf()).display());
    Ok(vec![
        PartKind::Text(TextPart {
            text: format!("The user attached the file {shown}:\n\n{text}"),
            synthetic: Some(true),
            ..TextPart::default()
        }),
        PartKind::File(FilePart { mime: "text/plain".to_owned(), filename, url, source: None }),
    ])
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
