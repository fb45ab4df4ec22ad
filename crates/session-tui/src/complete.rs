//! `@path` completion over the workspace's files (git-ignored ones left out, as the tools do).

use std::path::Path;

/// The most files listed for completion; a bigger workspace completes over the first ones.
pub const MAX_FILES: usize = 50_000;

/// The workspace's files, relative, with forward slashes, sorted.
pub fn workspace_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = ignore::WalkBuilder::new(root)
        .hidden(true)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            entry.path().strip_prefix(root).ok().map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .take(MAX_FILES)
        .collect();
    files.sort();
    files
}

/// The `@` word the cursor is at the end of, if any: its text after `@` and where the `@` is
/// (a char index into `line`).
pub fn at_word(line: &str, cursor: usize) -> Option<(String, usize)> {
    let before: Vec<char> = line.chars().take(cursor).collect();
    let start = before.iter().rposition(|c| c.is_whitespace()).map_or(0, |i| i + 1);
    let word: String = before[start..].iter().collect();
    word.strip_prefix('@').map(|rest| (rest.to_owned(), start))
}

/// Up to `limit` files matching `query`: those whose name starts with it first, then those
/// whose path contains it (case-insensitive), shorter paths first.
pub fn matches(files: &[String], query: &str, limit: usize) -> Vec<String> {
    let query = query.to_lowercase();
    let mut found: Vec<(u8, usize, &String)> = files
        .iter()
        .filter_map(|f| {
            let lower = f.to_lowercase();
            let name = lower.rsplit('/').next().unwrap_or(&lower);
            if lower.starts_with(&query) || name.starts_with(&query) {
                Some((0, f.len(), f))
            } else if lower.contains(&query) {
                Some((1, f.len(), f))
            } else {
                None
            }
        })
        .collect();
    found.sort();
    found.into_iter().take(limit).map(|(_, _, f)| f.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_at_word_under_the_cursor_is_found() {
        assert_eq!(at_word("look at @src/ma", 15), Some(("src/ma".into(), 8)));
        assert_eq!(at_word("@", 1), Some((String::new(), 0)));
        assert_eq!(at_word("no mention", 10), None);
        assert_eq!(at_word("mail@example", 12), None);
    }

    #[test]
    fn prefix_matches_rank_before_substring_matches() {
        let files: Vec<String> =
            ["src/main.rs", "README.md", "docs/domain.md", "main.c"].map(String::from).into();
        assert_eq!(matches(&files, "main", 10), ["main.c", "src/main.rs", "docs/domain.md"]);
        assert_eq!(matches(&files, "READ", 10), ["README.md"]);
    }

    #[test]
    fn the_workspace_listing_skips_ignored_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join(".ignore"), "target\n").unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out"), "").unwrap();
        assert_eq!(workspace_files(dir.path()), ["src/lib.rs"]);
    }
}
