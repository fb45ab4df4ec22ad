//! Unified diffs in the text form OpenCode's clients read: the `patch` of a summary diff and
//! the `diff` of an `edit`, as the `diff` package's `createTwoFilesPatch` writes them
//! (an `Index:` line, a rule, `---`/`+++` headers, and every hunk range with its length).

use similar::{ChangeTag, DiffOp, TextDiff};

/// Lines of unchanged context around each change.
const CONTEXT_LINES: usize = 3;

/// The rule under the `Index:` line.
const RULE: &str = "===================================================================";

/// A unified diff of `old` to `new` for the file `name`. `header` is written after a tab on
/// the `---` and `+++` lines when given (OpenCode's summary diffs give an empty one, its
/// `edit` none).
pub fn two_files_patch(name: &str, old: &str, new: &str, header: Option<&str>) -> String {
    let tail = header.map(|header| format!("\t{header}")).unwrap_or_default();
    let mut out = format!("Index: {name}\n{RULE}\n--- {name}{tail}\n+++ {name}{tail}\n");
    let diff = TextDiff::from_lines(old, new);
    for group in diff.grouped_ops(CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            range_start(&old_range),
            old_range.len(),
            range_start(&new_range),
            new_range.len()
        ));
        for op in &group {
            push_op(&mut out, &diff, op);
        }
    }
    out
}

/// The 1-based first line of a hunk's side, 0 for an empty side at the start (as `diff`
/// writes `-0,0` for a new file).
fn range_start(range: &std::ops::Range<usize>) -> usize {
    if range.is_empty() { range.start } else { range.start + 1 }
}

fn push_op(out: &mut String, diff: &TextDiff<'_, '_, '_, str>, op: &DiffOp) {
    for change in diff.iter_changes(op) {
        let sign = match change.tag() {
            ChangeTag::Equal => ' ',
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
        };
        let text = change.value();
        out.push(sign);
        match text.strip_suffix('\n') {
            Some(line) => {
                out.push_str(line);
                out.push('\n');
            }
            None => {
                out.push_str(text);
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Taken from the `summary.diffs` of an `opencode export` (OpenCode 1.18.34) after a
    /// `write` created `new.txt`.
    #[test]
    fn a_new_file_reads_as_opencodes_summary_patch() {
        assert_eq!(
            two_files_patch("new.txt", "", "one\ntwo\n", Some("")),
            "Index: new.txt\n===================================================================\n\
             --- new.txt\t\n+++ new.txt\t\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
    }

    /// Taken from the same export: one line changed in a four-line file, and a line added
    /// to a one-line file (OpenCode writes the length even when it is 1).
    #[test]
    fn changed_lines_read_as_opencodes_summary_patch() {
        let old = "def main():\n    print(\"hello world\")\n\n# hello again\n";
        let new = "def main():\n    print(\"howdy world\")\n\n# hello again\n";
        assert_eq!(
            two_files_patch("src/app.py", old, new, Some("")),
            "Index: src/app.py\n===================================================================\n\
             --- src/app.py\t\n+++ src/app.py\t\n@@ -1,4 +1,4 @@\n def main():\n-    print(\"hello world\")\n\
             +    print(\"howdy world\")\n \n # hello again\n"
        );
        assert_eq!(
            two_files_patch("README.md", "# readme\n", "# readme\nmore\n", Some("")),
            "Index: README.md\n===================================================================\n\
             --- README.md\t\n+++ README.md\t\n@@ -1,1 +1,2 @@\n # readme\n+more\n"
        );
    }

    /// Taken from an `edit`'s `metadata.diff` in the same export: no header after the names.
    #[test]
    fn an_edit_patch_has_no_header_tab() {
        let patch = two_files_patch("/p/a.py", "x\n", "y\n", None);
        assert!(patch.starts_with("Index: /p/a.py\n===="), "{patch}");
        assert!(patch.contains("\n--- /p/a.py\n+++ /p/a.py\n@@ -1,1 +1,1 @@\n-x\n+y\n"), "{patch}");
    }

    #[test]
    fn a_missing_final_newline_is_marked() {
        let patch = two_files_patch("a", "one", "one\ntwo", None);
        assert!(
            patch.ends_with("-one\n\\ No newline at end of file\n+one\n+two\n\\ No newline at end of file\n"),
            "{patch}"
        );
    }
}
