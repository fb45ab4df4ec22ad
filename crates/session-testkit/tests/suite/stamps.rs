//! `{sent_us}` in a script's text: every streamed chunk carries the moment it was sent.

use std::time::{SystemTime, UNIX_EPOCH};

use session_llm::Api;
use session_testkit::{SENT_US, TestServer};

use super::support::{collect, http_provider, request, script, text_of, user};

fn unix_us() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()).unwrap()
}

#[tokio::test]
async fn each_chunk_is_stamped_when_sent_in_every_format() {
    // Ten characters a chunk: each text chunk is one placeholder and a space.
    let text = format!("{SENT_US} ").repeat(4);
    let body = serde_json::json!({"turns": [{"text": text}], "chunk_chars": 10, "chunk_delay": 0.002});
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini] {
        let server = TestServer::start(script(&body.to_string()).with_api(api)).await.unwrap();
        let before = unix_us();
        let (events, error) = collect(&http_provider(&server, api), request(vec![user("go")])).await;
        let after = unix_us();
        assert!(error.is_none(), "{api:?}: {error:?}");
        let streamed = text_of(&events);
        let stamps: Vec<u64> = streamed.split_whitespace().map(|stamp| stamp.parse().unwrap()).collect();
        assert_eq!(stamps.len(), 4, "{api:?}: {streamed:?}");
        assert!(streamed.split_whitespace().all(|stamp| stamp.len() == 16), "{api:?}: {streamed:?}");
        // Sent during the request, in order (the clock's order, not a speed check).
        assert!(stamps.windows(2).all(|pair| pair[0] <= pair[1]), "{api:?}: {stamps:?}");
        assert!(before <= stamps[0] && stamps[3] <= after, "{api:?}: {before} {stamps:?} {after}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn text_without_the_placeholder_is_sent_as_scripted() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "{sent} us {sent_u}"}]}"#)).await.unwrap();
    let (events, error) = collect(&http_provider(&server, Api::OpenAiChat), request(vec![user("go")])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "{sent} us {sent_u}");
    server.shutdown().await;
}
