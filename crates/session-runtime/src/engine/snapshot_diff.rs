//! Reading `git diff -z --numstat` and `--name-status` between two snapshot trees into typed
//! per-file diffs (SPEC 13 summary diffs). Pure: the bytes come from the snapshotter.

use std::collections::HashMap;

use session_core::{FileDiff, FileStatus};

/// One `--numstat` record: path, lines added, lines deleted.
pub(super) type Count = (String, u64, u64);

/// The records of `git diff -z --numstat --no-renames`: `added TAB deleted TAB path NUL`, with
/// `-` for both counts of a binary file (read as 0). Records that do not parse are skipped.
pub(super) fn numstat(bytes: &[u8]) -> Vec<Count> {
    bytes
        .split(|byte| *byte == 0)
        .filter(|record| !record.is_empty())
        .filter_map(|record| {
            let record = String::from_utf8_lossy(record);
            let mut fields = record.splitn(3, '\t');
            let additions = count(fields.next()?)?;
            let deletions = count(fields.next()?)?;
            let path = fields.next().filter(|path| !path.is_empty())?;
            Some((path.to_owned(), additions, deletions))
        })
        .collect()
}

/// A numstat count; `-` (a binary file) is 0.
fn count(field: &str) -> Option<u64> {
    if field == "-" { Some(0) } else { field.parse().ok() }
}

/// The records of `git diff -z --name-status --no-renames`: `STATUS NUL path NUL`, by path.
/// `A` is added, `D` deleted, anything else (content, type or mode changes) modified.
pub(super) fn name_status(bytes: &[u8]) -> HashMap<String, FileStatus> {
    let mut fields = bytes.split(|byte| *byte == 0);
    let mut statuses = HashMap::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        if status.is_empty() || path.is_empty() {
            continue;
        }
        let status = match status.first() {
            Some(b'A') => FileStatus::Added,
            Some(b'D') => FileStatus::Deleted,
            _ => FileStatus::Modified,
        };
        statuses.insert(String::from_utf8_lossy(path).into_owned(), status);
    }
    statuses
}

/// The counts with their statuses, in path order.
pub(super) fn file_diffs(mut counts: Vec<Count>, statuses: &HashMap<String, FileStatus>) -> Vec<FileDiff> {
    counts.sort_by(|a, b| a.0.cmp(&b.0));
    counts
        .into_iter()
        .map(|(file, additions, deletions)| FileDiff {
            status: statuses.get(&file).copied(),
            file,
            patch: None,
            additions,
            deletions,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_13_numstat_and_name_status_become_typed_diffs() {
        let counts = numstat(b"3\t1\tsrc/a.rs\x00-\t-\tlogo.png\x000\t12\told.txt\x00garbage\x00");
        let statuses = name_status(b"M\x00src/a.rs\x00A\x00logo.png\x00D\x00old.txt\x00");
        let diffs = file_diffs(counts, &statuses);
        let summary: Vec<(&str, u64, u64, Option<FileStatus>)> =
            diffs.iter().map(|d| (d.file.as_str(), d.additions, d.deletions, d.status)).collect();
        assert_eq!(
            summary,
            [
                ("logo.png", 0, 0, Some(FileStatus::Added)),
                ("old.txt", 0, 12, Some(FileStatus::Deleted)),
                ("src/a.rs", 3, 1, Some(FileStatus::Modified)),
            ]
        );
        // Paths with tabs and newlines survive -z.
        assert_eq!(numstat(b"1\t0\ta\tb\nc\x00"), [("a\tb\nc".to_owned(), 1, 0)]);
        assert!(numstat(b"").is_empty() && name_status(b"M\x00").is_empty());
    }
}
