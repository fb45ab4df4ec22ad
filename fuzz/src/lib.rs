//! The checks behind the fuzz targets, one function per target; the targets in
//! `fuzz_targets/` only hand the input to these.
//!
//! Each check panics on a finding: a panic inside the parser, or a broken invariant (the same
//! bytes decoding differently when they arrive in other chunks, a stored row that does not
//! survive a round trip, a checked config layer that does not merge).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use session_llm::{Api, EventDecoder, Replay, SseDecoder, SseEvent, replay};
use session_runtime::config::{ConfigLayer, Resolver, combine, parse_layer};

/// The chunk sizes every body is also fed in: byte by byte, odd splits, and larger blocks.
pub const CHUNK_SIZES: [usize; 3] = [1, 7, 64];

/// The SSE decoder: whole and chunked input decode to the same events; a small event bound
/// refuses cleanly.
pub fn check_sse(data: &[u8]) {
    let whole = sse_events(data, data.len().max(1), None);
    for size in CHUNK_SIZES {
        assert_eq!(sse_events(data, size, None), whole, "chunks of {size} bytes");
    }
    // A small bound: any chunking may refuse the stream (a partial line counts against the
    // bound too), but none may panic.
    for size in [data.len().max(1), 5] {
        let _ = sse_events(data, size, Some(64));
    }
}

fn sse_events(data: &[u8], chunk: usize, limit: Option<usize>) -> Result<Vec<SseEvent>, String> {
    let mut decoder = limit.map_or_else(SseDecoder::new, SseDecoder::with_max_event_bytes);
    let mut out = Vec::new();
    for piece in data.chunks(chunk) {
        decoder.push(piece, &mut out).map_err(|e| e.to_string())?;
    }
    decoder.finish(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// One wire format's stream parser behind the SSE decoder: `replay` must not panic, and the
/// same body fed in chunks must yield the same events and the same error.
pub fn check_stream(api: Api, data: &[u8]) {
    let whole = replay(api, data);
    // Rendering the outcome must not panic either (the CLI prints both).
    let _ = format!("{whole:?}");
    if let Some(error) = &whole.error {
        let _ = error.to_string();
    }
    for size in CHUNK_SIZES {
        assert_eq!(chunked_replay(api, data, size), whole, "{api}: chunks of {size} bytes");
    }
}

fn chunked_replay(api: Api, data: &[u8], chunk: usize) -> Replay {
    let mut decoder = EventDecoder::new(api);
    let mut events = Vec::new();
    let mut error = None;
    for piece in data.chunks(chunk) {
        if let Err(e) = decoder.push(piece, &mut events) {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        error = decoder.finish(&mut events).err();
    }
    Replay { events, error }
}

/// The fixed outside world of a config layer: a few variables, a home and a few files.
pub struct FakeResolver {
    env: HashMap<&'static str, &'static str>,
    files: HashMap<PathBuf, &'static str>,
}

impl Default for FakeResolver {
    fn default() -> Self {
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

/// The config parser: each NUL-separated part of the input is one layer's text; parsing must
/// not panic, and layers that all pass their checks must merge into a typed config.
pub fn check_config(data: &[u8]) {
    // Config files are read as UTF-8 text; anything else fails before the parser.
    let Ok(text) = std::str::from_utf8(data) else { return };
    let resolver = FakeResolver::default();
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
    if failed {
        return;
    }
    match combine(layers) {
        Ok(loaded) => {
            let _ = format!("{:?}", loaded.config);
        }
        Err(error) => panic!("checked layers failed to merge: {error}"),
    }
}
