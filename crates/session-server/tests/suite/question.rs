//! The `question` tool over HTTP: the scripted model asks, the test lists the waiting request
//! with `GET /question`, answers it with `POST /question/{id}/reply` (or dismisses it), and the
//! run finishes with the answer in the model's next request.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::support::{first_tool_part, fixture};

const ASKS: &str = r#"{"turns": [
    {"calls": [{"name": "question", "arguments": {"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "SQLite", "description": "one file"},
                     {"label": "PostgreSQL", "description": "a server"}]}]}}]},
    {"text": "SQLite it is."}
]}"#;

const OUTPUT: &str = "User has answered your questions: \"Which database?\"=\"SQLite\". You can now continue with the user's answers in mind.";

fn assert_status(status: StatusCode, body: &Value, expected: StatusCode) {
    assert_eq!(status, expected, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_listed_answered_over_http_and_reaches_the_model() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let body = json!({"parts": [{"type": "text", "text": "set up storage"}]});
    let (status, _) = f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let asked = events.until("question.asked", |p| p["sessionID"] == id.as_str()).await;
    let request = asked["properties"].clone();
    let request_id = request["id"].as_str().unwrap().to_owned();
    assert!(request_id.starts_with("que_"), "{request}");
    assert_eq!(request["questions"][0]["header"], "Database");
    assert!(request["tool"]["messageID"].as_str().unwrap().starts_with("msg_"));

    let (status, listed) = f.api.call("get", "/question", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed, json!([request]));

    // Bad bodies and unknown ids.
    let reply = format!("/question/{request_id}/reply");
    let (status, body) = f.api.call("post", &reply, Some(json!({}))).await;
    assert_status(status, &body, StatusCode::BAD_REQUEST);
    let (status, body) = f.api.call("post", &reply, Some(json!({"answers": "SQLite"}))).await;
    assert_status(status, &body, StatusCode::BAD_REQUEST);
    let (status, body) = f.api.call("post", "/question/per_1/reply", Some(json!({"answers": []}))).await;
    assert_status(status, &body, StatusCode::BAD_REQUEST);
    let (status, body) =
        f.api.call("post", "/question/que_unknown/reply", Some(json!({"answers": []}))).await;
    assert_status(status, &body, StatusCode::NOT_FOUND);

    let (status, answer) = f.api.call("post", &reply, Some(json!({"answers": [["SQLite"]]}))).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    let replied = events.until("question.replied", |p| p["sessionID"] == id.as_str()).await;
    assert_eq!(
        replied["properties"],
        json!({"sessionID": id, "requestID": request_id, "answers": [["SQLite"]]})
    );
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let (status, listed) = f.api.call("get", "/question", None).await;
    assert_eq!((status, listed), (StatusCode::OK, json!([])));
    let (status, body) = f.api.call("post", &reply, Some(json!({"answers": [["SQLite"]]}))).await;
    assert_status(status, &body, StatusCode::NOT_FOUND);

    let tool = first_tool_part(&f.api, &id).await;
    assert_eq!(tool["tool"], "question");
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert_eq!(tool["state"]["title"], "Asked 1 question");
    assert_eq!(tool["state"]["output"], OUTPUT);
    assert_eq!(tool["state"]["metadata"]["answers"], json!([["SQLite"]]));
    let requests = f.provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].tool_names.iter().any(|name| name == "question"), "{:?}", requests[0].tool_names);
    let escaped = serde_json::to_string(OUTPUT).unwrap();
    assert!(requests[1].body.to_string().contains(&escaped[1..escaped.len() - 1]));
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_dismissed_over_http_fails_the_call_and_ends_the_run() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let body = json!({"parts": [{"type": "text", "text": "set up storage"}]});
    f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    let asked = events.until("question.asked", |p| p["sessionID"] == id.as_str()).await;
    let request_id = asked["properties"]["id"].as_str().unwrap().to_owned();
    let reject = format!("/question/{request_id}/reject");
    let (status, answer) = f.api.call("post", &reject, None).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    let rejected = events.until("question.rejected", |p| p["sessionID"] == id.as_str()).await;
    assert_eq!(rejected["properties"], json!({"sessionID": id, "requestID": request_id}));
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let (status, body) = f.api.call("post", &reject, None).await;
    assert_status(status, &body, StatusCode::NOT_FOUND);
    let tool = first_tool_part(&f.api, &id).await;
    assert_eq!(tool["state"]["status"], "error", "{tool}");
    assert_eq!(tool["state"]["error"], "The user dismissed this question");
    assert_eq!(f.provider.requests().len(), 1, "a dismissal stops the loop");
    f.finish().await;
}
