//! Turns a recorded SSE body into `LlmEvent`s and prints them as JSON lines.
//!
//! ```text
//! cargo run -p session-llm --example replay_fixture -- anthropic tests/fixtures/providers/anthropic/text-sonnet45.sse
//! ```
//!
//! Without arguments it replays a bundled Anthropic fixture.

use std::process::ExitCode;

use session_llm::{Api, replay};

const DEFAULT: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/providers/anthropic/text-sonnet45.sse");

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let api = args.next().unwrap_or_else(|| "anthropic".to_owned());
    let path = args.next().unwrap_or_else(|| DEFAULT.to_owned());
    let api: Api = match api.parse() {
        Ok(api) => api,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let body = match std::fs::read(&path) {
        Ok(body) => body,
        Err(err) => {
            eprintln!("cannot read {path}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = replay(api, &body);
    for event in &result.events {
        match serde_json::to_string(event) {
            Ok(line) => println!("{line}"),
            Err(err) => eprintln!("cannot serialise an event: {err}"),
        }
    }
    match result.error {
        Some(err) => {
            eprintln!("{}: {err}", err.name());
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}
