//! Shared test helpers: the vendored fixtures and JSON views of results.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};
use session_llm::{Api, LlmError, Replay};

/// The vendored provider fixtures.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

/// One recorded stream and the wire format it is in.
pub struct StreamFixture {
    pub api: Api,
    /// `dir/file.sse`, relative to the fixtures folder.
    pub name: String,
    pub bytes: Vec<u8>,
}

impl StreamFixture {
    /// A name usable as a snapshot name.
    pub fn snapshot_name(&self) -> String {
        self.name.trim_end_matches(".sse").replace('/', "__")
    }
}

/// Every `.sse` fixture, the in-stream error ones included, sorted by name (read once).
pub fn stream_fixtures() -> &'static [StreamFixture] {
    static FIXTURES: OnceLock<Vec<StreamFixture>> = OnceLock::new();
    FIXTURES.get_or_init(read_stream_fixtures)
}

fn read_stream_fixtures() -> Vec<StreamFixture> {
    let mut out = Vec::new();
    let dirs = [
        ("openai-chat", Api::OpenAiChat),
        ("openai-responses", Api::OpenAiResponses),
        ("anthropic", Api::Anthropic),
        ("gemini", Api::Gemini),
    ];
    for (dir, api) in dirs {
        let mut names: Vec<_> = std::fs::read_dir(fixtures_dir().join(dir))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".sse"))
            .collect();
        names.sort();
        for name in names {
            let bytes = std::fs::read(fixtures_dir().join(dir).join(&name)).unwrap();
            out.push(StreamFixture { api, name: format!("{dir}/{name}"), bytes });
        }
    }
    let name = "errors/openai-chat-in-stream-server-error.sse";
    out.push(StreamFixture {
        api: Api::OpenAiChat,
        name: name.to_owned(),
        bytes: std::fs::read(fixtures_dir().join(name)).unwrap(),
    });
    assert!(out.len() >= 35, "fixtures missing: {}", out.len());
    out
}

/// An error as the snapshots show it: its name, message and, for API errors, the verdict.
pub fn error_json(error: &LlmError) -> Value {
    match error {
        LlmError::Api(api) => json!({
            "name": error.name(),
            "message": error.to_string(),
            "status": api.status,
            "retryable": api.retryable(),
            "providerRetryable": api.provider_retryable,
        }),
        other => json!({"name": other.name(), "message": other.to_string()}),
    }
}

/// A replay as the snapshots show it.
pub fn replay_json(replay: &Replay) -> Value {
    json!({
        "events": replay.events,
        "error": replay.error.as_ref().map(error_json),
    })
}
