//! glob and grep over real trees.

use pretty_assertions::assert_eq;
use serde_json::json;
use session_tools::{RESULT_LIMIT, ToolError};

use super::support::Fixture;

fn tree(fx: &Fixture) {
    fx.write(".gitignore", "ignored/\n*.log\nnode_modules/\n");
    fx.write("src/main.rs", "fn main() {\n    let needle = 1;\n}\n");
    fx.write("src/lib.rs", "pub fn needle() {}\n");
    fx.write("src/deep/mod.ts", "const needle = 'x';\n");
    fx.write("ignored/hidden.rs", "needle\n");
    fx.write("debug.log", "needle\n");
    fx.write("node_modules/pkg/index.js", "needle\n");
    fx.write("README.md", "no match here\n");
    fx.write("target/build.txt", "nothing\n");
}

#[tokio::test]
async fn glob_matches_respects_gitignore_and_sorts_newest_first() {
    let fx = Fixture::new();
    tree(&fx);
    let old = fx.root.join("src/lib.rs");
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(past).unwrap();
    let result = fx.run("glob", json!({"pattern": "*.rs"})).await.unwrap();
    let lines: Vec<&str> = result.output.lines().collect();
    assert_eq!(lines, vec![fx.root.join("src/main.rs").to_str().unwrap(), old.to_str().unwrap()]);
    assert_eq!(result.metadata["count"], json!(2));
    let result = fx.run("glob", json!({"pattern": "**/*.ts", "path": "src"})).await.unwrap();
    assert_eq!(result.output, fx.root.join("src/deep/mod.ts").to_str().unwrap());
    let result = fx.run("glob", json!({"pattern": "*.none"})).await.unwrap();
    assert_eq!(result.output, "No files found");
}

#[tokio::test]
async fn glob_is_capped_with_a_notice() {
    let fx = Fixture::new();
    for n in 0..130 {
        fx.write(&format!("g/f{n:03}.txt"), "x");
    }
    let result = fx.run("glob", json!({"pattern": "*.txt"})).await.unwrap();
    assert_eq!(result.metadata["count"], json!(RESULT_LIMIT));
    assert_eq!(result.metadata["truncated"], json!(true));
    assert!(result.output.ends_with(
        "(Results are truncated: showing first 100 results. Consider using a more specific path or pattern.)"
    ));
}

#[tokio::test]
async fn grep_finds_lines_respects_ignores_and_include() {
    let fx = Fixture::new();
    tree(&fx);
    fx.write("src/blob.bin", b"needle\0binary".as_slice());
    let result = fx.run("grep", json!({"pattern": "needle"})).await.unwrap();
    let main = fx.root.join("src/main.rs");
    let lib = fx.root.join("src/lib.rs");
    let ts = fx.root.join("src/deep/mod.ts");
    let expected = format!(
        // Each match line keeps its line break, as OpenCode prints it: a blank line follows.
        "Found 3 matches\n{}:\n  Line 1: const needle = 'x';\n\n\n{}:\n  Line 1: pub fn needle() {{}}\n\n\n{}:\n  Line 2:     let needle = 1;\n",
        ts.display(),
        lib.display(),
        main.display()
    );
    assert_eq!(result.output, expected);
    assert_eq!(result.title, "needle");
    assert_eq!(result.metadata["matches"], json!(3));
    let result = fx.run("grep", json!({"pattern": "need+le", "include": "*.rs"})).await.unwrap();
    assert_eq!(result.metadata["matches"], json!(2));
    let result = fx.run("grep", json!({"pattern": "needle", "path": "src/lib.rs"})).await.unwrap();
    assert_eq!(result.metadata["matches"], json!(1));
    let result = fx.run("grep", json!({"pattern": "absent_word"})).await.unwrap();
    assert_eq!(result.output, "No files found");
}

#[tokio::test]
async fn grep_bad_regex_and_cap() {
    let fx = Fixture::new();
    let error = fx.run("grep", json!({"pattern": "(unclosed"})).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidInput { .. }), "{error:?}");
    assert!(error.to_string().starts_with("Invalid regex pattern"));
    let lines: String = (0..300).map(|n| format!("hit {n}\n")).collect();
    fx.write("hits.txt", lines);
    let result = fx.run("grep", json!({"pattern": "hit"})).await.unwrap();
    assert_eq!(result.metadata["matches"], json!(RESULT_LIMIT));
    assert_eq!(result.metadata["truncated"], json!(true));
    assert!(result.output.starts_with("Found 100 matches (more matches available)"));
    assert!(result.output.ends_with("(Results truncated. Consider using a more specific path or pattern.)"));
    let error = fx.run("grep", json!({"pattern": "x", "path": "nowhere"})).await.unwrap_err();
    assert!(error.to_string().starts_with("Search path not found"), "{error}");
}
