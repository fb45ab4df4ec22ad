//! `read`: a file with line numbers (offset and limit, long lines cut, output capped), a
//! directory's entries, or an image/PDF as an attachment. Binary files are refused.

use std::io::{BufRead, BufReader, Read, Seek as _, SeekFrom};
use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::{FilePart, JsonObject};

use super::{blocking, cut_chars, object};
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::pinned::{Opened, PinnedPath};
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "read";
const DEFAULT_READ_LIMIT: u64 = 2000;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_LENGTH: usize = 2000;
/// The output of one read stops after this many bytes of content.
pub const MAX_READ_BYTES: usize = 50 * 1024;
/// Images and PDFs larger than this are refused rather than attached.
const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

const DESCRIPTION: &str = "Reads a file or directory from the local filesystem. The filePath may be absolute or \
relative to the workspace root. By default it returns up to 2000 lines from the start of the file; use offset \
(1-indexed line number) and limit to read further. Each line is prefixed with its line number as `N: `. Lines \
longer than 2000 characters are truncated, and output stops after 50 KB. Images and PDFs are returned as \
attachments; other binary files cannot be read. Reading a directory lists its entries.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadArgs {
    /// The absolute path to the file or directory to read
    file_path: String,
    /// The line number to start reading from (1-indexed)
    // No minimum: OpenCode 1.18.34 accepts `offset: 0` (read from the start), so do we.
    offset: Option<u64>,
    /// The maximum number of lines to read (defaults to 2000)
    // Minimum 0, as OpenCode 1.18.34 offers it; a 0 reads one line, like 1.
    limit: Option<u64>,
}

/// The `read` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

#[async_trait]
impl TypedTool for ReadTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = ReadArgs;

    async fn run(&self, args: ReadArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let resolved = ctx.workspace().resolve(&args.file_path)?;
        let pinned = PinnedPath::open(ctx.workspace(), resolved)?;
        let path = pinned.resolved().path.clone();
        let shown = pinned.shown();
        // The ask covers what the handle holds: the folder itself, or the file's folder.
        let is_folder = match pinned.name() {
            None => true,
            Some(name) => {
                pinned.folder().exists()
                    && pinned.folder().dir().symlink_metadata(name).is_ok_and(|meta| meta.is_dir())
            }
        };
        let kind = if is_folder { PathKind::Directory } else { PathKind::File };
        ctx.check_external(&path, kind).await?;
        ctx.ask_for(NAME, vec![shown.clone()], vec!["*".into()], JsonObject::new()).await?;
        let title = pinned.resolved().display(ctx.workspace());
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
        let opened = blocking(move || pinned.open_existing()).await?;
        let (mut file, meta) = match opened {
            None => return Err(ToolError::NotFound { suggestions: suggestions(&path), path: shown }),
            Some(Opened::Folder(dir)) => {
                return blocking(move || list_directory(&dir, &shown, &title, offset, limit)).await;
            }
            Some(Opened::File { file, metadata }) => (file, metadata),
        };
        if !meta.is_file() {
            // A FIFO, socket or device would block the read or never end.
            return Err(not_regular(&shown));
        }
        if let Some(mime) = attachment_mime(&path) {
            if meta.len() > MAX_ATTACHMENT_BYTES {
                return Err(ToolError::invalid(format!(
                    "File is too large to attach ({} bytes, the limit is {MAX_ATTACHMENT_BYTES}): {shown}",
                    meta.len()
                )));
            }
            let bytes = {
                let shown = shown.clone();
                blocking(move || {
                    let mut bytes = Vec::new();
                    (&mut file)
                        .take(MAX_ATTACHMENT_BYTES)
                        .read_to_end(&mut bytes)
                        .map_err(|e| ToolError::io("read", &shown, e))?;
                    Ok(bytes)
                })
                .await?
            };
            let message =
                if mime == "application/pdf" { "PDF read successfully" } else { "Image read successfully" };
            let url =
                format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes));
            let mut result = ToolSuccess::new(
                title,
                message,
                object([
                    ("preview", Value::String(message.into())),
                    ("truncated", Value::Bool(false)),
                    ("loaded", Value::Array(Vec::new())),
                ]),
            );
            let filename = path.file_name().map(|n| n.to_string_lossy().into_owned());
            result.attachments.push(FilePart { mime: mime.into(), filename, url, source: None });
            return Ok(result);
        }
        blocking(move || read_lines(file, &path, &shown, &title, offset, limit)).await
    }
}

/// Up to three entries of the missing file's folder whose names resemble it.
fn suggestions(path: &Path) -> Vec<String> {
    let (Some(dir), Some(base)) = (path.parent(), path.file_name()) else { return Vec::new() };
    let base = base.to_string_lossy().to_lowercase();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_lowercase();
            (name.contains(&base) || base.contains(&name))
                .then(|| entry.path().to_string_lossy().into_owned())
        })
        .collect();
    found.sort();
    found.truncate(3);
    found
}

fn list_directory(
    dir: &cap_std::fs::Dir,
    shown: &str,
    title: &str,
    offset: u64,
    limit: u64,
) -> Result<ToolSuccess, ToolError> {
    let entries = dir.entries().map_err(|e| ToolError::io("list", shown, e))?;
    let mut items: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name();
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir())
                // A symlink to a folder shows as a folder, as in OpenCode (followed beneath the
                // listed folder's handle only).
                || dir.metadata(&name).is_ok_and(|meta| meta.is_dir());
            let name = name.to_string_lossy().into_owned();
            if is_dir { format!("{name}/") } else { name }
        })
        .collect();
    items.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)));
    let start = usize::try_from(offset.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    let sliced: Vec<&String> = items.iter().skip(start).take(take).collect();
    let truncated = start.saturating_add(sliced.len()) < items.len();
    let listing = sliced.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n");
    let footer = if truncated {
        format!(
            "\n(Showing {} of {} entries. Use 'offset' parameter to read beyond entry {})",
            sliced.len(),
            items.len(),
            offset.saturating_add(sliced.len() as u64)
        )
    } else {
        format!("\n({} entries)", items.len())
    };
    let output = [
        "<path>".to_owned() + shown + "</path>",
        "<type>directory</type>".into(),
        "<entries>".into(),
        listing,
        footer,
        "</entries>".into(),
    ]
    .join("\n");
    let preview = sliced.iter().take(20).map(|s| s.as_str()).collect::<Vec<_>>().join("\n");
    // What OpenCode's clients draw the listing from, in its key order.
    let display = object([
        ("type", Value::String("directory".into())),
        ("path", Value::String(shown.to_owned())),
        ("entries", Value::Array(sliced.iter().map(|entry| Value::String((*entry).clone())).collect())),
        ("offset", Value::from(offset)),
        ("totalEntries", Value::from(items.len())),
        ("truncated", Value::Bool(truncated)),
    ]);
    Ok(ToolSuccess::new(
        title,
        output,
        object([
            ("preview", Value::String(preview)),
            ("truncated", Value::Bool(truncated)),
            ("loaded", Value::Array(Vec::new())),
            ("display", Value::Object(display)),
        ]),
    ))
}

/// The mime type of files returned as attachments (images other than SVG, and PDF).
fn attachment_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_string_lossy().to_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "tif" | "tiff" => "image/tiff",
        "avif" => "image/avif",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

const BINARY_EXTENSIONS: [&str; 29] = [
    "zip", "tar", "gz", "exe", "dll", "so", "class", "jar", "war", "7z", "doc", "docx", "xls", "xlsx", "ppt",
    "pptx", "odt", "ods", "odp", "bin", "dat", "obj", "o", "a", "lib", "wasm", "pyc", "pyo", "dylib",
];

/// OpenCode's test: a known binary extension, a NUL byte in the first 4 KiB, or more than 30%
/// control characters there.
fn is_binary(path: &Path, file: &mut std::fs::File) -> std::io::Result<bool> {
    if let Some(ext) = path.extension() {
        let ext = ext.to_string_lossy().to_lowercase();
        if BINARY_EXTENSIONS.contains(&ext.as_str()) {
            return Ok(true);
        }
    }
    let mut sample = [0u8; 4096];
    let mut filled = 0;
    while filled < sample.len() {
        let n = file.read(&mut sample[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    let sample = &sample[..filled];
    if sample.is_empty() {
        return Ok(false);
    }
    if sample.contains(&0) {
        return Ok(true);
    }
    let control = sample.iter().filter(|&&b| b < 9 || (b > 13 && b < 32)).count();
    Ok(control * 10 > sample.len() * 3)
}

/// The most bytes of one line kept for display: enough for [`MAX_LINE_LENGTH`] characters of
/// any UTF-8 text and the cut marker's decision, so a single huge line is never held whole.
const MAX_LINE_BYTES: usize = MAX_LINE_LENGTH * 4 + 4;

/// The error for a path that is not a regular file or a directory.
fn not_regular(shown: &str) -> ToolError {
    ToolError::invalid(format!("Cannot read {shown}: it is not a regular file (a FIFO, socket or device)"))
}

/// Reads one line (through its `\n`) and appends at most `keep` bytes of it to `buffer`,
/// skipping the rest; returns the bytes consumed (0 at the end of the input).
fn read_line_capped(reader: &mut impl BufRead, buffer: &mut Vec<u8>, keep: usize) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let room = keep.saturating_sub(buffer.len());
        buffer.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        consumed += used;
        if done {
            return Ok(consumed);
        }
    }
}

fn read_lines(
    mut file: std::fs::File,
    path: &Path,
    shown: &str,
    title: &str,
    offset: u64,
    limit: u64,
) -> Result<ToolSuccess, ToolError> {
    if is_binary(path, &mut file).map_err(|e| ToolError::io("read", shown, e))? {
        return Err(ToolError::BinaryFile { path: shown.to_owned() });
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| ToolError::io("read", shown, e))?;
    let mut reader = BufReader::new(file);
    let mut raw: Vec<String> = Vec::new();
    let mut bytes = 0usize;
    let mut count = 0u64;
    let (mut cut, mut more) = (false, false);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        // Lines not shown are only counted; a shown one keeps at most what its cut can show.
        let shown_line = count.saturating_add(1) >= offset && (raw.len() as u64) < limit;
        let keep = if shown_line { MAX_LINE_BYTES } else { 0 };
        let n =
            read_line_capped(&mut reader, &mut buffer, keep).map_err(|e| ToolError::io("read", shown, e))?;
        if n == 0 {
            break;
        }
        count += 1;
        if count < offset {
            continue;
        }
        if raw.len() as u64 >= limit {
            more = true;
            continue;
        }
        let mut text = &buffer[..];
        if let Some(stripped) = text.strip_suffix(b"\n") {
            text = stripped;
        }
        if let Some(stripped) = text.strip_suffix(b"\r") {
            text = stripped;
        }
        let text = String::from_utf8_lossy(text);
        let (head, long) = cut_chars(&text, MAX_LINE_LENGTH);
        let line = if long {
            format!("{head}... (line truncated to {MAX_LINE_LENGTH} chars)")
        } else {
            head.to_owned()
        };
        let size = line.len() + usize::from(!raw.is_empty());
        if bytes + size > MAX_READ_BYTES {
            cut = true;
            more = true;
            break;
        }
        bytes += size;
        raw.push(line);
    }
    if count < offset && !(count == 0 && offset == 1) {
        return Err(ToolError::invalid(format!(
            "Offset {offset} is out of range for this file ({count} lines)"
        )));
    }
    let mut output = format!("<path>{shown}</path>\n<type>file</type>\n<content>\n");
    let numbered: Vec<String> = raw
        .iter()
        .enumerate()
        .map(|(i, line)| format!("{}: {line}", offset.saturating_add(i as u64)))
        .collect();
    output.push_str(&numbered.join("\n"));
    let last = offset.saturating_add(raw.len() as u64).saturating_sub(1);
    let next = last.saturating_add(1);
    if cut {
        output.push_str(&format!(
            "\n\n(Output capped at {} KB. Showing lines {offset}-{last}. Use offset={next} to continue.)",
            MAX_READ_BYTES / 1024
        ));
    } else if more {
        output.push_str(&format!(
            "\n\n(Showing lines {offset}-{last} of {count}. Use offset={next} to continue.)"
        ));
    } else {
        output.push_str(&format!("\n\n(End of file - total {count} lines)"));
    }
    output.push_str("\n</content>");
    let preview = raw.iter().take(20).cloned().collect::<Vec<_>>().join("\n");
    // What OpenCode's clients draw the file from, in its key order: the lines shown, where
    // they start and end, and how many lines were counted.
    let display = object([
        ("type", Value::String("file".into())),
        ("path", Value::String(shown.to_owned())),
        ("text", Value::String(raw.join("\n"))),
        ("lineStart", Value::from(offset)),
        ("lineEnd", Value::from(last)),
        ("totalLines", Value::from(count)),
        ("truncated", Value::Bool(more || cut)),
    ]);
    Ok(ToolSuccess::new(
        title,
        output,
        object([
            ("preview", Value::String(preview)),
            ("truncated", Value::Bool(more || cut)),
            ("loaded", Value::Array(Vec::new())),
            ("display", Value::Object(display)),
        ]),
    ))
}
