//! Where whole command outputs go when `bash` keeps only their tail (as OpenCode
//! 1.18.34 does): a `tool-output` folder of the runtime's data folder, never the project.
//!
//! Each output is a new file `tool_<random>` created with `O_EXCL` and mode 0600 in a folder
//! of mode 0700, so its name is the runtime's, never the model's, and no other user reads it.
//! Old outputs are removed when a new one is saved: those older than [`RETENTION`] (OpenCode's
//! seven days) and, past [`MAX_KEPT`] files, the oldest.

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folder's name under the data folder (OpenCode's).
pub const FOLDER: &str = "tool-output";
/// How long a saved output is kept (OpenCode: 7 days).
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// At most this many saved outputs are kept; the oldest go first.
pub const MAX_KEPT: usize = 200;
/// The name every saved output starts with (OpenCode's tool id prefix).
const PREFIX: &str = "tool_";

/// The folder saved outputs go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutputDir {
    dir: PathBuf,
}

impl ToolOutputDir {
    /// Outputs saved in the `tool-output` folder under `data_dir` (created on the first save).
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self { dir: data_dir.join(FOLDER) }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// A new empty output file (mode 0600, a fresh random name), open for writing, and its
    /// path; old outputs are cleaned up first.
    pub fn create(&self) -> io::Result<(std::fs::File, PathBuf)> {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        // A folder swapped for a symlink would send the output, and the clean-up's removals,
        // wherever it points.
        if !std::fs::symlink_metadata(&self.dir)?.file_type().is_dir() {
            return Err(io::Error::other(format!("{} is not a folder", self.dir.display())));
        }
        self.clean_up();
        // tempfile creates with O_EXCL and mode 0600; `keep` stops it deleting the file.
        let file = tempfile::Builder::new().prefix(PREFIX).rand_bytes(16).tempfile_in(&self.dir)?;
        let (file, path) = file.keep().map_err(|error| error.error)?;
        // Whatever the umask, the owner alone reads it.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok((file, path))
    }

    /// Removes saved outputs past [`RETENTION`] and all but the newest [`MAX_KEPT`] − 1 (room
    /// for the one about to be saved). Failures only leave files behind.
    fn clean_up(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let now = SystemTime::now();
        let mut kept: Vec<(SystemTime, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
                continue;
            }
            // `DirEntry::metadata` does not follow symlinks: only our own regular files count.
            let Ok(metadata) = entry.metadata() else { continue };
            if !metadata.is_file() {
                continue;
            }
            let modified = metadata.modified().unwrap_or(now);
            if now.duration_since(modified).unwrap_or_default() > RETENTION {
                let _ = std::fs::remove_file(entry.path());
            } else {
                kept.push((modified, entry.path()));
            }
        }
        if kept.len() >= MAX_KEPT {
            kept.sort();
            for (_, path) in kept.iter().take(kept.len() + 1 - MAX_KEPT) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_file_is_new_private_and_named_by_the_runtime() {
        let data = tempfile::tempdir().unwrap();
        let store = ToolOutputDir::in_data_dir(data.path());
        let (_, first) = store.create().unwrap();
        let (_, second) = store.create().unwrap();
        assert_ne!(first, second);
        for path in [&first, &second] {
            assert_eq!(path.parent(), Some(data.path().join(FOLDER).as_path()));
            assert!(path.file_name().unwrap().to_string_lossy().starts_with("tool_"));
            assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let folder = std::fs::metadata(data.path().join(FOLDER)).unwrap();
        assert_eq!(folder.permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_gets_no_output_and_loses_nothing() {
        let data = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let old = elsewhere.path().join("tool_old_but_not_ours");
        std::fs::write(&old, "keep").unwrap();
        let long_ago = SystemTime::now() - RETENTION - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&old).unwrap().set_modified(long_ago).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), data.path().join(FOLDER)).unwrap();
        let store = ToolOutputDir::in_data_dir(data.path());
        assert!(store.create().is_err());
        assert!(old.exists(), "the clean-up did not follow the symlink");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 1, "nothing was written there");
        // Control: a real folder in its place takes outputs.
        std::fs::remove_file(data.path().join(FOLDER)).unwrap();
        assert!(store.create().is_ok());
    }

    #[test]
    fn old_outputs_and_those_past_the_count_are_removed() {
        let data = tempfile::tempdir().unwrap();
        let store = ToolOutputDir::in_data_dir(data.path());
        let (_, stale) = store.create().unwrap();
        let long_ago = SystemTime::now() - RETENTION - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&stale).unwrap().set_modified(long_ago).unwrap();
        // Not ours: left alone whatever its age.
        let other = data.path().join(FOLDER).join("notes.txt");
        std::fs::write(&other, "x").unwrap();
        std::fs::File::options().write(true).open(&other).unwrap().set_modified(long_ago).unwrap();
        let mut made = Vec::new();
        for _ in 0..MAX_KEPT + 5 {
            made.push(store.create().unwrap().1);
        }
        assert!(!stale.exists(), "an output past the retention is removed");
        assert!(other.exists());
        let count = std::fs::read_dir(data.path().join(FOLDER))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("tool_"))
            .count();
        assert_eq!(count, MAX_KEPT);
        assert!(made.last().unwrap().exists(), "the newest is kept");
    }
}
