//! The `store_rows` fuzz target's corpus as an ordinary test: every input of
//! `fuzz/corpus/store_rows/` (at the repository root) and every crash input in
//! `tests/fixtures/fuzz/store_rows/` decodes as a stored part or message row without panicking,
//! and what decodes survives the store's round trip (serialise, decode, equal).

use std::path::Path;

use session_core::{Message, Part};

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()))
        .collect();
    out.sort();
    out
}

fn check(name: &str, data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(part) = serde_json::from_str::<Part>(text) {
        let json = serde_json::to_string(&part).unwrap();
        assert_eq!(serde_json::from_str::<Part>(&json).ok(), Some(part), "{name}: part round trip");
    }
    if let Ok(message) = serde_json::from_str::<Message>(text) {
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<Message>(&json).ok(), Some(message), "{name}: message round trip");
    }
    let _ = serde_json::from_str::<serde_json::Value>(text);
}

#[test]
fn the_store_rows_corpus_decodes_and_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = files(&root.join("../../fuzz/corpus/store_rows"));
    assert!(!corpus.is_empty(), "no corpus under fuzz/corpus/store_rows");
    for (name, data) in corpus.iter().chain(&files(&root.join("tests/fixtures/fuzz/store_rows"))) {
        check(name, data);
    }
}
