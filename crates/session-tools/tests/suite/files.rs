//! read, write, edit and the todo tools on real files.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use session_tools::{MAX_READ_BYTES, ToolError};

use super::support::Fixture;

#[tokio::test]
async fn read_numbers_lines_and_reports_the_end() {
    let fx = Fixture::new();
    let path = fx.write("src/a.txt", "alpha\r\nbeta\ngamma");
    let result = fx.run("read", json!({"filePath": "src/a.txt"})).await.unwrap();
    let shown = path.display();
    assert_eq!(
        result.output,
        format!(
            "<path>{shown}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n3: gamma\n\n(End of file - total 3 lines)\n</content>"
        )
    );
    assert_eq!(result.title, "src/a.txt");
    assert_eq!(result.metadata["truncated"], json!(false));
    assert_eq!(result.metadata["preview"], json!("alpha\nbeta\ngamma"));
}

#[tokio::test]
async fn read_honours_offset_and_limit() {
    let fx = Fixture::new();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    fx.write("ten.txt", text);
    let result = fx.run("read", json!({"filePath": "ten.txt", "offset": 4, "limit": 2})).await.unwrap();
    assert!(
        result
            .output
            .contains("4: line 4\n5: line 5\n\n(Showing lines 4-5 of 10. Use offset=6 to continue.)")
    );
    assert!(!result.output.contains("3: line 3"));
    assert_eq!(result.metadata["truncated"], json!(true));
}

#[tokio::test]
async fn read_cuts_long_lines_and_caps_output() {
    let fx = Fixture::new();
    let long = "x".repeat(5000);
    fx.write("long.txt", format!("{long}\nshort\n"));
    let result = fx.run("read", json!({"filePath": "long.txt"})).await.unwrap();
    assert!(result.output.contains(&format!("1: {}... (line truncated to 2000 chars)", "x".repeat(2000))));
    assert!(result.output.contains("2: short"));

    let many: String = (0..2000).map(|n| format!("{n:04} {}\n", "y".repeat(100))).collect();
    fx.write("big.txt", many);
    let result = fx.run("read", json!({"filePath": "big.txt"})).await.unwrap();
    // The cap counts the lines themselves; the "N: " prefixes come on top, as in OpenCode.
    assert!(result.output.len() < MAX_READ_BYTES + 4096, "output {} bytes", result.output.len());
    assert!(result.output.contains("(Output capped at 50 KB. Showing lines 1-"));
    assert_eq!(result.metadata["truncated"], json!(true));
}

#[tokio::test]
async fn read_missing_file_suggests_similar_names() {
    let fx = Fixture::new();
    fx.write("config.json", "{}");
    let error = fx.run("read", json!({"filePath": "config"})).await.unwrap_err();
    assert!(matches!(error, ToolError::NotFound { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.starts_with(&format!("File not found: {}", fx.root.join("config").display())), "{text}");
    assert!(text.contains("Did you mean one of these?"), "{text}");
    assert!(text.contains("config.json"), "{text}");
}

#[tokio::test]
async fn read_of_a_directory_lists_entries() {
    let fx = Fixture::new();
    fx.write("dir/b.txt", "b");
    fx.write("dir/A.txt", "a");
    fx.write("dir/sub/c.txt", "c");
    let result = fx.run("read", json!({"filePath": "dir"})).await.unwrap();
    assert!(
        result
            .output
            .contains("<type>directory</type>\n<entries>\nA.txt\nb.txt\nsub/\n\n(3 entries)\n</entries>"),
        "{}",
        result.output
    );
}

#[tokio::test]
async fn read_refuses_binary_files() {
    let fx = Fixture::new();
    fx.write("blob.data", [0u8, 1, 2, 3, 0, 255]);
    let error = fx.run("read", json!({"filePath": "blob.data"})).await.unwrap_err();
    assert!(matches!(error, ToolError::BinaryFile { .. }), "{error:?}");
    assert!(error.to_string().starts_with("Cannot read binary file: "));
    fx.write("archive.zip", "looks like text");
    let error = fx.run("read", json!({"filePath": "archive.zip"})).await.unwrap_err();
    assert!(matches!(error, ToolError::BinaryFile { .. }), "{error:?}");
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let image =
        image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(width, height, image::Rgb([9, 8, 7])));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn attachment_bytes(url: &str) -> Vec<u8> {
    use base64::Engine as _;
    let data = url.split_once(',').map(|(_, data)| data).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.decode(data).unwrap()
}

#[tokio::test]
async fn read_returns_images_as_attachments() {
    let fx = Fixture::new();
    let bytes = png(4, 3);
    fx.write("pic.png", &bytes);
    let result = fx.run("read", json!({"filePath": "pic.png"})).await.unwrap();
    assert_eq!(result.output, "Image read successfully");
    assert_eq!(result.attachments.len(), 1);
    assert_eq!(result.attachments[0].mime, "image/png");
    assert_eq!(attachment_bytes(&result.attachments[0].url), bytes, "a small image is sent as it is");
    // The attachment survives the processor's output derivation.
    let derived = session_core::processor::derive_output("read", result.to_value());
    assert_eq!(derived.attachments.map(|a| a.len()), Some(1));
}

#[tokio::test]
async fn spec_1_2_an_oversized_image_is_scaled_and_a_broken_one_omitted() {
    let fx = Fixture::new();
    fx.write("wide.png", png(session_tools::MAX_IMAGE_SIDE + 1, 4));
    let result = fx.run("read", json!({"filePath": "wide.png"})).await.unwrap();
    let bytes = attachment_bytes(&result.attachments[0].url);
    let scaled = image::load_from_memory(&bytes).unwrap();
    assert_eq!(scaled.width(), session_tools::RESIZED_SIDE);
    assert_eq!(result.output, "Image read successfully");

    fx.write("broken.png", [0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    let result = fx.run("read", json!({"filePath": "broken.png"})).await.unwrap();
    assert!(result.attachments.is_empty());
    assert_eq!(
        result.output,
        "Image read successfully\n\n[1 image omitted: could not be resized below the image size limit.]"
    );
}

#[tokio::test]
async fn read_offset_past_the_end_is_an_error_and_empty_files_are_fine() {
    let fx = Fixture::new();
    fx.write("two.txt", "a\nb\n");
    let error = fx.run("read", json!({"filePath": "two.txt", "offset": 5})).await.unwrap_err();
    assert_eq!(error.to_string(), "Offset 5 is out of range for this file (2 lines)");
    fx.write("empty.txt", "");
    let result = fx.run("read", json!({"filePath": "empty.txt"})).await.unwrap();
    assert!(result.output.contains("(End of file - total 0 lines)"));
}

#[tokio::test]
async fn read_of_an_env_file_asks_under_the_default_rules() {
    let fx = Fixture::new();
    fx.write(".env", "SECRET=1");
    let error = fx.run("read", json!({"filePath": ".env"})).await.unwrap_err();
    assert_eq!(error.to_string(), session_core::permission::PERMISSION_REJECTED_TEXT);
    assert_eq!(fx.asker.permissions(), vec!["read"]);
}

#[tokio::test]
async fn write_creates_folders_and_reports_whether_the_file_existed() {
    let fx = Fixture::new();
    let result = fx.run("write", json!({"filePath": "deep/er/new.txt", "content": "hello\n"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(fx.root.join("deep/er/new.txt")).unwrap(), "hello\n");
    assert_eq!(result.output, "Wrote file successfully.");
    assert_eq!(result.title, "deep/er/new.txt");
    assert_eq!(result.metadata["exists"], json!(false));
    let result = fx.run("write", json!({"filePath": "deep/er/new.txt", "content": "bye\n"})).await.unwrap();
    assert_eq!(result.metadata["exists"], json!(true));
    // As in OpenCode, the diff is the permission ask's, not the result's.
    assert!(result.metadata.get("diff").is_none(), "{:?}", result.metadata);
}

#[tokio::test]
async fn write_asks_with_the_diff_it_will_make() {
    let asker = super::support::ScriptedAsker::new(|_| Some(session_tools::PermissionAnswer::once()));
    let mut rules = super::support::build_rules();
    rules.push(session_core::permission::Rule::new("edit", "*", session_core::permission::Action::Ask));
    let fx = Fixture::with(asker.clone(), rules, None);
    fx.write("a.txt", "hello\n");
    fx.run("write", json!({"filePath": "a.txt", "content": "bye\n"})).await.unwrap();
    let asked = asker.asked();
    let diff = asked[0].request.metadata["diff"].as_str().unwrap();
    assert!(diff.contains("\n-hello\n+bye\n"), "{diff}");
    assert_eq!(std::fs::read_to_string(fx.root.join("a.txt")).unwrap(), "bye\n");
}

#[tokio::test]
async fn write_to_a_directory_is_refused() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root.join("folder")).unwrap();
    let error = fx.run("write", json!({"filePath": "folder", "content": "x"})).await.unwrap_err();
    assert!(matches!(error, ToolError::IsDirectory { .. }), "{error:?}");
}

#[tokio::test]
async fn edit_replaces_a_unique_match_and_puts_a_diff_in_the_metadata() {
    let fx = Fixture::new();
    let path = fx.write("code.rs", "fn main() {\n    println!(\"old\");\n}\n");
    let result = fx
        .run("edit", json!({"filePath": "code.rs", "oldString": "\"old\"", "newString": "\"new\""}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn main() {\n    println!(\"new\");\n}\n");
    assert_eq!(result.output, "Edit applied successfully.");
    let diff = result.metadata["diff"].as_str().unwrap();
    assert!(diff.contains("-    println!(\"old\");") && diff.contains("+    println!(\"new\");"), "{diff}");
    assert_eq!(result.metadata["filediff"]["additions"], json!(1));
    assert_eq!(result.metadata["filediff"]["deletions"], json!(1));
}

#[tokio::test]
async fn edit_requires_a_unique_match_unless_replace_all() {
    let fx = Fixture::new();
    let path = fx.write("dup.txt", "a x a x a");
    let error =
        fx.run("edit", json!({"filePath": "dup.txt", "oldString": "a", "newString": "b"})).await.unwrap_err();
    assert!(matches!(error, ToolError::EditNotUnique { count: 3 }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a x a x a");
    fx.run("edit", json!({"filePath": "dup.txt", "oldString": "a", "newString": "b", "replaceAll": true}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "b x b x b");
}

#[tokio::test]
async fn edit_bad_inputs() {
    let fx = Fixture::new();
    fx.write("f.txt", "content");
    let error = fx
        .run("edit", json!({"filePath": "f.txt", "oldString": "nope", "newString": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::EditNotFound), "{error:?}");
    let error = fx
        .run("edit", json!({"filePath": "f.txt", "oldString": "same", "newString": "same"}))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "No changes to apply: oldString and newString are identical.");
    let error = fx
        .run("edit", json!({"filePath": "gone.txt", "oldString": "a", "newString": "b"}))
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::NotFound { .. }), "{error:?}");
    std::fs::create_dir(fx.root.join("d")).unwrap();
    let error =
        fx.run("edit", json!({"filePath": "d", "oldString": "a", "newString": "b"})).await.unwrap_err();
    assert!(matches!(error, ToolError::IsDirectory { .. }), "{error:?}");
    fx.write("bin.dat", [1u8, 0, 2]);
    let error =
        fx.run("edit", json!({"filePath": "bin.dat", "oldString": "a", "newString": "b"})).await.unwrap_err();
    assert!(matches!(error, ToolError::BinaryFile { .. }), "{error:?}");
}

#[tokio::test]
async fn edit_keeps_crlf_line_endings_and_an_empty_old_string_creates_the_file() {
    let fx = Fixture::new();
    let path = fx.write("win.txt", "one\r\ntwo\r\n");
    fx.run("edit", json!({"filePath": "win.txt", "oldString": "one\ntwo", "newString": "uno\ndos"}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "uno\r\ndos\r\n");
    fx.run("edit", json!({"filePath": "fresh/new.txt", "oldString": "", "newString": "created"}))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(fx.root.join("fresh/new.txt")).unwrap(), "created");
}

#[tokio::test]
async fn todowrite_keeps_the_list_and_answers_with_it() {
    let fx = Fixture::new();
    let todos = json!([
        {"content": "plan", "status": "completed", "priority": "high"},
        {"content": "build", "status": "in_progress", "priority": "medium"}
    ]);
    let written = fx.run("todowrite", json!({"todos": todos})).await.unwrap();
    assert_eq!(written.title, "1 todos");
    assert_eq!(written.metadata["todos"], todos);
    assert_eq!(serde_json::from_str::<Value>(&written.output).unwrap(), todos);
    // OpenCode 1.18.34 has no `todoread`: the list is kept for the session's clients.
    let error = fx.run("todoread", json!({})).await.unwrap_err();
    assert!(matches!(error, ToolError::UnknownTool { .. }), "{error}");
}

#[tokio::test]
async fn read_refuses_a_fifo_at_once_instead_of_hanging() {
    let fx = Fixture::new();
    let fifo = fx.root.join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Nobody writes to the FIFO: a blocking open or read would never return.
    let error = fx.run("read", json!({"filePath": "pipe"})).await.unwrap_err();
    assert!(error.to_string().contains("is not a regular file"), "{error}");
}

#[tokio::test]
async fn read_of_a_huge_single_line_shows_its_cut_start() {
    let fx = Fixture::new();
    let line = "z".repeat(20 * 1024 * 1024);
    fx.write("one-line.txt", format!("{line}\nsecond\n"));
    let result = fx.run("read", json!({"filePath": "one-line.txt"})).await.unwrap();
    assert!(result.output.contains("1: zzzz"), "{}", &result.output[..200]);
    assert!(result.output.contains("... (line truncated to 2000 chars)"));
    assert!(result.output.contains("2: second"));
    assert!(result.output.len() < MAX_READ_BYTES + 1024, "the output stays capped");
}
