//! Serves a script on loopback as an Anthropic endpoint, streams one request through
//! session-llm's HTTP provider (a 429 first, which the test server injects), and prints the
//! events and the server's request log.
//!
//! `cargo run -p session-testkit --example serve_script`

use std::sync::Arc;

use futures_util::StreamExt as _;
use session_core::{history::ModelMessage, history::UserContent};
use session_llm::{Api, Fault, FaultKind, HttpProvider, LlmRequest, Provider as _, ReqwestTransport, Script};
use session_testkit::TestServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let script = Script::from_json(r#"{"turns": [{"text": "Hello from the script."}]}"#)?
        .with_fault(Fault::new(1, FaultKind::RateLimited));
    let server = TestServer::start(script).await?;
    println!("serving on {}", server.url());

    let provider = HttpProvider::new(
        server.provider_config("anthropic", Api::Anthropic),
        Arc::new(ReqwestTransport::new()?),
    );
    let request = || LlmRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![ModelMessage::User { content: vec![UserContent::Text { text: "Hi".into() }] }],
        ..LlmRequest::default()
    };
    // The first request meets the injected 429: the error a runtime would retry.
    let mut first = provider.stream(request());
    while let Some(item) = first.next().await {
        if let Err(error) = item {
            println!("first request: {error}");
        }
    }
    // The retry gets the turn.
    let mut events = provider.stream(request());
    while let Some(item) = events.next().await {
        println!("{}", serde_json::to_string(&item?)?);
    }

    for logged in server.requests() {
        println!("request {}: status {:?}, model {:?}", logged.index, logged.status, logged.model);
    }
    server.assert_invariants();
    server.shutdown().await;
    Ok(())
}
