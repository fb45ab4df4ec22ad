//! Per-file change counts between two snapshots (SPEC 13 summary diffs), with the field names of
//! OpenCode's `SnapshotFileDiff`.

use serde::{Deserialize, Serialize};

/// How a file changed between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// The file is new.
    Added,
    /// The file is gone.
    Deleted,
    /// The file's content (or mode) changed.
    Modified,
}

/// One changed file: its worktree-relative path and the lines added and deleted.
///
/// Binary files count 0 added and 0 deleted and have no `patch`; OpenCode's clients show the
/// unified `patch` text of the others (see [`two_files_patch`](super::two_files_patch)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    /// Path relative to the worktree, forward slashes (empty when a record lacks it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// The unified diff in OpenCode's form (none for a binary or very large file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Lines added.
    pub additions: u64,
    /// Lines deleted.
    pub deletions: u64,
    /// How the file changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FileStatus>,
}

/// The totals of a list of file diffs: lines added, lines deleted, files changed.
pub fn diff_totals(diffs: &[FileDiff]) -> (u64, u64, u64) {
    diffs.iter().fold((0, 0, 0), |(additions, deletions, files), diff| {
        (
            additions.saturating_add(diff.additions),
            deletions.saturating_add(diff.deletions),
            files.saturating_add(1),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_diffs_use_opencodes_names_and_omit_what_is_unset() {
        let diff = FileDiff {
            file: "src/app.rs".into(),
            additions: 3,
            deletions: 1,
            status: Some(FileStatus::Modified),
            ..FileDiff::default()
        };
        let value = serde_json::to_value(&diff).unwrap_or_default();
        assert_eq!(
            value,
            json!({"file": "src/app.rs", "additions": 3, "deletions": 1, "status": "modified"})
        );
        // OpenCode's older records carry `before` and `after`; they read (and are dropped).
        let older: FileDiff = serde_json::from_value(
            json!({"file": "a", "before": "x", "after": "y", "additions": 1, "deletions": 0}),
        )
        .unwrap_or_default();
        assert_eq!(older.file, "a");
        assert_eq!(older.status, None);
        assert_eq!(diff_totals(&[diff, older]), (4, 1, 2));
    }
}
