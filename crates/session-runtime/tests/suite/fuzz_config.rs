//! The config fuzzer's findings as ordinary tests: every input of the committed corpus
//! (`fuzz/corpus/config/` at the repository root) and every crash input
//! (`tests/fixtures/fuzz/config/`) runs through the config parser with the fuzz target's own
//! checks: no panic, and layers that pass their checks merge into a typed config.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use session_runtime::config::{ConfigLayer, Resolver, combine, parse_layer};

/// The fuzz target's outside world: a few variables, a home and a few files.
struct FakeResolver {
    env: HashMap<&'static str, &'static str>,
    files: HashMap<PathBuf, &'static str>,
}

impl FakeResolver {
    fn new() -> Self {
        Self {
            env: HashMap::from([
                ("KEY", "sk-1"),
                ("EMPTY", ""),
                ("NUM", "42"),
                ("OBJ", "{\"a\": [1, 2]}"),
                ("QUOTE", "\"}{\\"),
                ("DIR", "prompts"),
            ]),
            files: HashMap::from([
                (PathBuf::from("/proj/prompts/build.txt"), "  line one\n\"quoted\"\tend\n\n"),
                (PathBuf::from("/home/me/key"), "sk-file\n"),
                (PathBuf::from("/abs/key"), "{env:KEY} \u{1F600} \\u0000"),
            ]),
        }
    }
}

impl Resolver for FakeResolver {
    fn env_var(&self, name: &str) -> Option<String> {
        self.env.get(name).map(|v| (*v).to_owned())
    }

    fn home_dir(&self) -> Option<PathBuf> {
        Some(PathBuf::from("/home/me"))
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.files.get(path).map(|v| (*v).to_owned()).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

/// Every file of `dir` (none if it does not exist), sorted by name.
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

/// The fuzz target's check: each NUL-separated part (at most three) is one layer's text.
fn check(name: &str, data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let resolver = FakeResolver::new();
    let mut layers: Vec<ConfigLayer> = Vec::new();
    let mut failed = false;
    for (i, part) in text.split('\0').take(3).enumerate() {
        let path = PathBuf::from(if i == 0 { "/proj/session.json" } else { "/proj/sub/session.jsonc" });
        match parse_layer(part, &path, &resolver) {
            Ok(layer) => {
                for warning in &layer.warnings {
                    let _ = warning.to_string();
                }
                layers.push(layer);
            }
            Err(error) => {
                let _ = error.to_string();
                failed = true;
            }
        }
    }
    if !failed && let Err(error) = combine(layers) {
        panic!("{name}: checked layers failed to merge: {error}");
    }
}

#[test]
fn the_config_corpus_and_crash_inputs_parse_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = files(&root.join("../../fuzz/corpus/config"));
    assert!(!corpus.is_empty(), "no config corpus under fuzz/corpus/config");
    for (name, data) in corpus.iter().chain(&files(&root.join("tests/fixtures/fuzz/config"))) {
        check(name, data);
    }
}
