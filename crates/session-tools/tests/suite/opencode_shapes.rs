//! The tool results OpenCode's clients read (title, output, metadata), each checked against
//! what OpenCode 1.18.34 produced for the same call on the same files: every expected snapshot
//! below was taken from the tool part's state in that version's `opencode export`, run offline
//! against a scripted model, with the project folder written as `<root>`.

use serde_json::{Value, json};

use super::support::Fixture;

/// The files of the project OpenCode ran in.
fn project() -> Fixture {
    let fx = Fixture::new();
    // util.py first: glob lists the newest first, and OpenCode listed app.py first.
    fx.write("src/util.py", "x = \"hello\"\n");
    fx.write("src/app.py", "def main():\n    print(\"hello world\")\n\n# hello again\n");
    fx.write("README.md", "# readme\n");
    let long: String = (1..=30).map(|n| format!("line {n}\n")).collect();
    fx.write("long.txt", long);
    fx
}

/// Runs `tool` with `input` (`<root>` standing for the project folder) and renders the result
/// as the export shows it, the project folder written back as `<root>`.
async fn shape(fx: &Fixture, tool: &str, input: Value) -> String {
    let root = fx.root.to_string_lossy().into_owned();
    let input: Value = serde_json::from_str(&input.to_string().replace("<root>", &root)).unwrap();
    let result = fx.run(tool, input).await.unwrap();
    let mut shown = serde_json::Map::new();
    shown.insert("title".into(), Value::String(result.title));
    shown.insert("output".into(), Value::String(result.output));
    shown.insert("metadata".into(), Value::Object(result.metadata.into_iter().collect()));
    serde_json::to_string_pretty(&Value::Object(shown)).unwrap().replace(&root, "<root>")
}

#[tokio::test]
async fn grep_shows_a_blank_line_after_each_match_line() {
    let fx = project();
    let shown = shape(&fx, "grep", json!({"pattern": "hello"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "hello",
  "output": "Found 3 matches\n<root>/src/app.py:\n  Line 2:     print(\"hello world\")\n\n  Line 4: # hello again\n\n\n<root>/src/util.py:\n  Line 1: x = \"hello\"\n",
  "metadata": {
    "matches": 3,
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn glob_over_the_worktree_has_an_empty_title() {
    let fx = project();
    let shown = shape(&fx, "glob", json!({"pattern": "**/*.py"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "",
  "output": "<root>/src/app.py\n<root>/src/util.py",
  "metadata": {
    "count": 2,
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn read_of_a_file_has_opencodes_display() {
    let fx = project();
    let shown = shape(&fx, "read", json!({"filePath": "<root>/src/app.py"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "src/app.py",
  "output": "<path><root>/src/app.py</path>\n<type>file</type>\n<content>\n1: def main():\n2:     print(\"hello world\")\n3: \n4: # hello again\n\n(End of file - total 4 lines)\n</content>",
  "metadata": {
    "preview": "def main():\n    print(\"hello world\")\n\n# hello again",
    "truncated": false,
    "loaded": [],
    "display": {
      "type": "file",
      "path": "<root>/src/app.py",
      "text": "def main():\n    print(\"hello world\")\n\n# hello again",
      "lineStart": 1,
      "lineEnd": 4,
      "totalLines": 4,
      "truncated": false
    }
  }
}
    "##);
}

#[tokio::test]
async fn write_of_a_new_file_has_opencodes_metadata_keys() {
    let fx = project();
    let shown = shape(&fx, "write", json!({"filePath": "<root>/new.txt", "content": "one\ntwo\n"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "new.txt",
  "output": "Wrote file successfully.",
  "metadata": {
    "diagnostics": {},
    "filepath": "<root>/new.txt",
    "exists": false,
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn edit_has_opencodes_metadata_and_patch_text() {
    let fx = project();
    let shown = shape(
        &fx,
        "edit",
        json!({"filePath": "<root>/src/app.py", "oldString": "hello world", "newString": "howdy world"}),
    )
    .await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "src/app.py",
  "output": "Edit applied successfully.",
  "metadata": {
    "diagnostics": {},
    "diff": "Index: <root>/src/app.py\n===================================================================\n--- <root>/src/app.py\n+++ <root>/src/app.py\n@@ -1,4 +1,4 @@\n def main():\n-    print(\"hello world\")\n+    print(\"howdy world\")\n \n # hello again\n",
    "filediff": {
      "file": "<root>/src/app.py",
      "patch": "Index: <root>/src/app.py\n===================================================================\n--- <root>/src/app.py\n+++ <root>/src/app.py\n@@ -1,4 +1,4 @@\n def main():\n-    print(\"hello world\")\n+    print(\"howdy world\")\n \n # hello again\n",
      "additions": 1,
      "deletions": 1
    },
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn glob_in_a_folder_is_titled_with_that_folder() {
    let fx = project();
    let shown = shape(&fx, "glob", json!({"pattern": "*.py", "path": "<root>/src"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "src",
  "output": "<root>/src/app.py\n<root>/src/util.py",
  "metadata": {
    "count": 2,
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn read_of_a_range_has_opencodes_display() {
    let fx = project();
    let shown = shape(&fx, "read", json!({"filePath": "<root>/long.txt", "offset": 5, "limit": 10})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "long.txt",
  "output": "<path><root>/long.txt</path>\n<type>file</type>\n<content>\n5: line 5\n6: line 6\n7: line 7\n8: line 8\n9: line 9\n10: line 10\n11: line 11\n12: line 12\n13: line 13\n14: line 14\n\n(Showing lines 5-14 of 30. Use offset=15 to continue.)\n</content>",
  "metadata": {
    "preview": "line 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14",
    "truncated": true,
    "loaded": [],
    "display": {
      "type": "file",
      "path": "<root>/long.txt",
      "text": "line 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14",
      "lineStart": 5,
      "lineEnd": 14,
      "totalLines": 30,
      "truncated": true
    }
  }
}
    "##);
}

#[tokio::test]
async fn read_of_a_folder_has_opencodes_display() {
    let fx = project();
    let shown = shape(&fx, "read", json!({"filePath": "<root>/src"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "src",
  "output": "<path><root>/src</path>\n<type>directory</type>\n<entries>\napp.py\nutil.py\n\n(2 entries)\n</entries>",
  "metadata": {
    "preview": "app.py\nutil.py",
    "truncated": false,
    "loaded": [],
    "display": {
      "type": "directory",
      "path": "<root>/src",
      "entries": [
        "app.py",
        "util.py"
      ],
      "offset": 1,
      "totalEntries": 2,
      "truncated": false
    }
  }
}
    "##);
}

#[tokio::test]
async fn write_over_a_file_has_opencodes_metadata_keys() {
    let fx = project();
    let shown =
        shape(&fx, "write", json!({"filePath": "<root>/README.md", "content": "# readme\nmore\n"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "README.md",
  "output": "Wrote file successfully.",
  "metadata": {
    "diagnostics": {},
    "filepath": "<root>/README.md",
    "exists": true,
    "truncated": false
  }
}
    "##);
}

#[tokio::test]
async fn grep_without_a_match_reads_as_opencodes() {
    let fx = project();
    let shown = shape(&fx, "grep", json!({"pattern": "zzzz"})).await;
    insta::assert_snapshot!(shown, @r##"
{
  "title": "zzzz",
  "output": "No files found",
  "metadata": {
    "matches": 0,
    "truncated": false
  }
}
    "##);
}

/// OpenCode 1.18.34 printed `  Line 2: second hello` with no blank line after it: the file's
/// last line has no line break, so nothing follows the match.
#[tokio::test]
async fn grep_adds_no_blank_line_after_a_last_line_without_a_break() {
    let fx = project();
    fx.write("noeol.txt", "hello there\nsecond hello");
    let result = fx.run("grep", json!({"pattern": "second", "include": "noeol.txt"})).await.unwrap();
    let root = fx.root.to_string_lossy().into_owned();
    assert_eq!(
        result.output.replace(&root, "<root>"),
        "Found 1 matches\n<root>/noeol.txt:\n  Line 2: second hello"
    );
}
