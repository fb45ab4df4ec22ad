//! What the file tools share about the path they act on: pinning it by handle, the
//! `external_directory` ask on the pinned folder, and the refusal to write inside `.git`.

use std::io::Read as _;

use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::pinned::{Opened, PinnedPath, in_git_folder};

/// Most bytes of an existing file `write` and `edit` read for their diff.
const MAX_OLD_BYTES: u64 = 64 * 1024 * 1024;

/// Resolves `requested`, opens its folder by handle, asks `external_directory` when that folder
/// lies outside the workspace (the handle is what was asked about: the write goes there even if
/// the folder is swapped afterwards) and refuses a path inside a `.git` folder unless a rule
/// names it explicitly.
pub(crate) async fn pin_for_write(ctx: &ToolContext, requested: &str) -> Result<PinnedPath, ToolError> {
    let resolved = ctx.workspace().resolve(requested)?;
    let pinned = PinnedPath::open(ctx.workspace(), resolved)?;
    refuse_git(ctx, &pinned)?;
    ctx.check_external(&pinned.resolved().path, PathKind::File).await?;
    Ok(pinned)
}

/// Refuses writing inside a `.git` folder (a repository's config and hooks run programs at the
/// user's next `git` command) unless the deciding `edit` rule names such a path: a pattern
/// other than the catch-all `*`.
fn refuse_git(ctx: &ToolContext, pinned: &PinnedPath) -> Result<(), ToolError> {
    let resolved = pinned.resolved();
    if !in_git_folder(&resolved.path) {
        return Ok(());
    }
    let pattern = resolved.display(ctx.workspace());
    let named =
        ctx.deciding_rule("edit", &pattern).is_some_and(|rule| !rule.pattern.chars().all(|c| c == '*'));
    if named {
        return Ok(());
    }
    Err(ToolError::Failed {
        message: format!(
            "Refusing to write {pattern}: it is inside a .git folder, whose config and hooks run programs \
             when git next runs. The file tools do not write there unless an edit permission rule names \
             the path (for example \".git/**\")."
        ),
    })
}

/// The text of the existing file at `pinned` (empty when there is none), read from its handle:
/// a folder, a FIFO, socket or device, a file over 64 MiB, or one that is not UTF-8 text (when
/// `text` is set) is refused.
pub(crate) fn old_text(pinned: &PinnedPath, text: bool) -> Result<Option<String>, ToolError> {
    let shown = pinned.shown();
    match pinned.open_existing()? {
        None => Ok(None),
        Some(Opened::Folder(_)) => Err(ToolError::IsDirectory { path: shown }),
        Some(Opened::File { file, metadata }) => {
            if !metadata.is_file() {
                return Err(ToolError::invalid(format!(
                    "Cannot write {shown}: it is not a regular file (a FIFO, socket or device)"
                )));
            }
            if metadata.len() > MAX_OLD_BYTES {
                return Err(ToolError::invalid(format!(
                    "Cannot change {shown}: it is larger than {MAX_OLD_BYTES} bytes"
                )));
            }
            let mut bytes = Vec::new();
            file.take(MAX_OLD_BYTES).read_to_end(&mut bytes).map_err(|e| ToolError::io("read", &shown, e))?;
            if !text {
                return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
            }
            if bytes.contains(&0) {
                return Err(ToolError::BinaryFile { path: shown });
            }
            String::from_utf8(bytes).map(Some).map_err(|_| ToolError::BinaryFile { path: shown })
        }
    }
}
