//! The wire formats over HTTP: the same turn in every format, the same events as the
//! in-process provider, pacing, the plain endpoints, recorded turns and cancellation.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use session_core::{FinishReason, LlmEvent};
use session_llm::{Api, LlmError, Provider, Script, ScriptedProvider, Turn};
use session_testkit::TestServer;

use super::support::{
    calls_of, collect, drive, finish_of, http_provider, reasoning_of, request, script, text_of, user,
};

const RICH: &str = r#"{"name": "rich", "chunk_chars": 5, "turns": [
    {"reasoning": "Think first, then act.", "text": "Reading two files.",
     "calls": [{"op": "read", "path": "a.txt"}, {"op": "grep", "pattern": "TODO", "path": "src"}],
     "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 600, "reasoning_tokens": 10}},
    {"text": "Done."}]}"#;

#[tokio::test]
async fn every_format_serves_the_same_turn_as_the_in_process_provider() {
    let server = TestServer::start(script(RICH)).await.unwrap();
    for api in Api::ALL {
        let over_http = collect(&http_provider(&server, api), request(vec![user("go")])).await;
        let in_process =
            collect(&ScriptedProvider::new(script(RICH).with_api(api)), request(vec![user("go")])).await;
        assert_eq!(over_http, in_process, "{api}");
        let (events, error) = over_http;
        assert_eq!(error, None, "{api}");
        assert_eq!(reasoning_of(&events), "Think first, then act.", "{api}");
        assert_eq!(text_of(&events), "Reading two files.", "{api}");
        assert_eq!(
            calls_of(&events),
            vec![
                ("call_0_0".to_owned(), "read".to_owned(), json!({"filePath": "a.txt"})),
                ("call_0_1".to_owned(), "grep".to_owned(), json!({"pattern": "TODO", "path": "src"})),
            ],
            "{api}"
        );
        let (reason, usage) = finish_of(&events).unwrap();
        assert_eq!(reason, FinishReason::ToolCalls);
        let usage = usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens, usage.reasoning_tokens),
            (Some(1000), Some(50), Some(600), Some(10)),
            "{api}"
        );
    }
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        vec![
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/messages",
            "/v1beta/models/mock-model:streamGenerateContent?alt=sse",
        ]
    );
    server.assert_invariants();
}

#[tokio::test]
async fn a_peer_script_runs_to_its_end_in_every_format() {
    let text = r#"{"name": "short", "turns": [
        {"text": "Let me look at the project layout.", "calls": [{"op": "list", "path": "."}]},
        {"calls": [{"op": "read", "path": "README.md"}]},
        {"calls": [{"op": "bash", "command": "wc -l src/*.py && head -5 src/app.py"}]},
        {"text": "The project is a tiny CLI. Done.",
         "usage": {"prompt_tokens": 9000, "completion_tokens": 40, "cached_tokens": 8000}}]}"#;
    for api in Api::ALL {
        let server = TestServer::start(script(text)).await.unwrap();
        let last = drive(&http_provider(&server, api), "Look around.", 10).await.unwrap();
        assert_eq!(text_of(&last), "The project is a tiny CLI. Done.", "{api}");
        let turns: Vec<usize> = server.requests().iter().map(|r| r.turn).collect();
        assert_eq!(turns, vec![0, 1, 2, 3], "{api}");
        server.assert_invariants();
    }
}

#[tokio::test]
async fn chunks_are_paced() {
    let text = r#"{"chunk_delay": 0.03, "chunk_chars": 4, "turns": [{"text": "0123456789abcdef"}]}"#;
    let server = TestServer::start(script(text)).await.unwrap();
    let provider = http_provider(&server, Api::OpenAiChat);
    let started = Instant::now();
    let mut stream = provider.stream(request(vec![user("go")]));
    let mut arrivals = Vec::new();
    while let Some(item) = stream.next().await {
        if let Ok(LlmEvent::TextDelta { .. }) = item {
            arrivals.push(started.elapsed());
        }
    }
    // Role, four text chunks, finish, usage, [DONE]: eight pauses of 30 ms.
    assert!(started.elapsed() >= Duration::from_millis(240), "{:?}", started.elapsed());
    assert_eq!(arrivals.len(), 4);
    // The deltas arrive one by one, not all at the end.
    assert!(arrivals[3] - arrivals[0] >= Duration::from_millis(80), "{arrivals:?}");
}

#[tokio::test]
async fn plain_endpoints_answer() {
    let server = TestServer::start(script(RICH)).await.unwrap();
    let client = reqwest::Client::new();
    let health: Value = serde_json::from_slice(
        &client.get(format!("http://{}/healthz", server.addr())).send().await.unwrap().bytes().await.unwrap(),
    )
    .unwrap();
    assert_eq!(health, json!({"ok": true}));
    let models = client.get(format!("{}/models", server.url())).send().await.unwrap();
    assert_eq!(models.status().as_u16(), 200);
    let missing = client.post(format!("{}/embeddings", server.url())).body("{}").send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);

    // Chat Completions without `stream` answers with one JSON completion.
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "go"}],
                      "tools": [{"type": "function", "function": {"name": "read"}},
                                {"type": "function", "function": {"name": "bash"}}]});
    let answer = client
        .post(format!("{}/chat/completions", server.url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let answer: Value = serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "read");
    assert_eq!(answer["usage"]["prompt_tokens"], 1000);
    let log = server.requests();
    assert_eq!(log.len(), 1, "only model requests are logged");
    assert!(!log[0].stream);
    assert_eq!(log[0].model.as_deref(), Some("m"));
}

#[tokio::test]
async fn recorded_turns_are_served_as_recorded() {
    let recorded = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Recorded hello\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                    data: [DONE]\n\n";
    let mut script = Script::empty();
    script.turns.push(Turn { recorded: Some(Bytes::from_static(recorded.as_bytes())), ..Turn::default() });
    let server = TestServer::start(script).await.unwrap();
    let (events, error) = collect(&http_provider(&server, Api::OpenAiChat), request(vec![user("go")])).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "Recorded hello");
    assert_eq!(events, session_llm::replay(Api::OpenAiChat, recorded.as_bytes()).events);
}

#[tokio::test]
async fn cancelling_a_paced_stream_aborts_it() {
    let text = r#"{"chunk_delay": 0.05, "chunk_chars": 1, "turns": [{"text": "a long, slow answer"}]}"#;
    let server = TestServer::start(script(text)).await.unwrap();
    let provider = http_provider(&server, Api::Anthropic);
    let req = request(vec![user("go")]);
    let cancel = req.cancel.clone();
    let mut stream = provider.stream(req);
    assert!(stream.next().await.unwrap().is_ok());
    cancel.cancel();
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    assert_eq!(last, Some(Err(LlmError::Aborted)));
    server.shutdown().await;
}

#[tokio::test]
async fn a_turn_delay_holds_the_response_head() {
    let text = r#"{"turns": [{"text": "late", "delay": 0.2}]}"#;
    let server = TestServer::start(script(text)).await.unwrap();
    let started = Instant::now();
    let (events, error) = collect(&http_provider(&server, Api::Gemini), request(vec![user("go")])).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "late");
    assert!(started.elapsed() >= Duration::from_millis(200));
}
