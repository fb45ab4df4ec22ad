//! The router over real HTTP on loopback: every route's happy path, bad bodies, unknown
//! sessions, and the event stream.

use reqwest::StatusCode;
use serde_json::{Value, json};
use session_server::routes;

use super::support::{first_tool_part, fixture};

/// A well-formed id of no session.
const UNKNOWN: &str = "ses_0000000000000000000000unknown";

fn text(message: &Value) -> String {
    message["data"]["message"].as_str().unwrap_or_default().to_owned()
}

fn assert_bad(status: StatusCode, body: &Value, field: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["name"], "BadRequest", "{body}");
    assert!(text(body).contains(field), "the error should name {field}: {body}");
}

fn assert_not_found(status: StatusCode, body: &Value) {
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["name"], "NotFoundError", "{body}");
}

const HELLO: &str = r#"{"turns": [{"text": "Hello there."}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_created_listed_read_and_deleted() {
    let f = fixture(HELLO).await;
    let (status, created) =
        f.api.call("post", "/session?directory=/anywhere", Some(json!({"title": "first"}))).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["title"], "first");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("ses_"));
    // No body at all is a session with the default title.
    let (status, untitled) = f.api.raw("post", "/session", None).await;
    assert_eq!(status, StatusCode::OK, "{untitled}");
    assert!(untitled["title"].as_str().unwrap().starts_with("New session"), "{untitled}");
    // A child session names its parent.
    let (status, child) = f.api.call("post", "/session", Some(json!({"parentID": id}))).await;
    assert_eq!(status, StatusCode::OK, "{child}");
    assert_eq!(child["parentID"], id.as_str());

    let (status, list) = f.api.call("get", "/session?directory=/anywhere", None).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{list}");
    assert!(ids.contains(&id.as_str()));

    let (status, got) = f.api.call("get", &format!("/session/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    // Every session body carries what its steps cost so far (nothing yet), as stored.
    assert_eq!(got, created);
    assert_eq!(got["cost"], json!(0));
    assert_eq!(
        got["tokens"],
        json!({"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}})
    );

    let (status, deleted) = f.api.call("delete", &format!("/session/{id}"), None).await;
    assert_eq!((status, deleted), (StatusCode::OK, json!(true)));
    let (status, gone) = f.api.call("get", &format!("/session/{id}"), None).await;
    assert_not_found(status, &gone);
    // The child went with its parent.
    let (_, list) = f.api.call("get", "/session", None).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // Bad bodies name the field.
    let (status, body) = f.api.call("post", "/session", Some(json!({"title": 5}))).await;
    assert_bad(status, &body, "title");
    let (status, body) = f.api.call("post", "/session", Some(json!({"titel": "x"}))).await;
    assert_bad(status, &body, "titel");
    let (status, body) = f.api.call("post", "/session", Some(json!({"parentID": UNKNOWN}))).await;
    assert_bad(status, &body, "parentID");
    let (status, body) = f.api.raw("post", "/session", Some("{not json".into())).await;
    assert_bad(status, &body, "JSON");
    // On a connection of its own: the server answers before reading the whole body and then
    // closes the connection, which a pooled client could otherwise pick for the next request.
    let oversized = session_testkit::ApiClient { http: reqwest::Client::new(), ..f.api.clone() };
    let (status, body) =
        oversized.raw("post", "/session", Some(format!(r#"{{"title": "{}"}}"#, "x".repeat(3 << 20)))).await;
    assert_eq!((status, &body["name"]), (StatusCode::PAYLOAD_TOO_LARGE, &json!("PayloadTooLarge")), "{body}");
    let (status, body) = f.api.call("get", "/session/not-an-id", None).await;
    assert_bad(status, &body, "id");

    // Unknown sessions.
    for method in ["get", "delete"] {
        let (status, body) = f.api.call(method, &format!("/session/{UNKNOWN}"), None).await;
        assert_not_found(status, &body);
    }
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answers_with_the_assistant_message_and_its_parts() {
    let f = fixture(HELLO).await;
    let id = f.api.session().await;
    let body =
        json!({"parts": [{"type": "text", "text": "hi"}], "model": {"providerID": "mock", "modelID": "m"}});
    let (status, reply) =
        f.api.call("post", &format!("/session/{id}/message?directory=/x"), Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    assert_eq!(reply["info"]["sessionID"], id.as_str());
    assert_eq!(reply["info"]["providerID"], "mock");
    assert!(reply["info"]["time"]["completed"].is_u64(), "{reply}");
    let texts: Vec<&str> = reply["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Hello there."]);

    let (status, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    assert_eq!(status, StatusCode::OK);
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["info"]["role"], "user");
    assert_eq!(messages[0]["parts"][0]["text"], "hi");
    assert_eq!(messages[1]["info"]["id"], reply["info"]["id"]);
    let (_, newest) = f.api.call("get", &format!("/session/{id}/message?limit=1"), None).await;
    assert_eq!(newest.as_array().unwrap().len(), 1);
    assert_eq!(newest[0]["info"]["role"], "assistant");
    let (status, body) = f.api.call("get", &format!("/session/{id}/message?limit=many"), None).await;
    assert_bad(status, &body, "limit");
    assert_eq!(f.provider.requests().len(), 1);

    // Bad bodies.
    let path = format!("/session/{id}/message");
    // A file part naming a file outside the project is refused, not read.
    let outside = json!({"parts": [{"type": "file", "mime": "text/plain", "url": "file:///etc/passwd"}]});
    let (status, body) = f.api.call("post", &path, Some(outside)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(text(&body).contains("outside the project"), "{body}");
    for (body, field) in [
        (json!({}), "parts"),
        (json!({"parts": []}), "parts"),
        (json!({"parts": [{"type": "text"}]}), "parts[0].text"),
        (json!({"parts": [{"text": "x"}]}), "parts[0].type"),
        (json!({"parts": [{"type": "file", "mime": "x", "url": "y"}]}), "parts[0].url"),
        (json!({"parts": [{"type": "agent", "name": "x"}]}), "parts[0].type"),
        (json!({"parts": "hi"}), "parts"),
        (json!({"parts": [{"type": "text", "text": "x"}], "model": {"providerID": "mock"}}), "model"),
        (
            json!({"parts": [{"type": "text", "text": "x"}], "model": {"providerID": "mock", "modelID": ""}}),
            "model.modelID",
        ),
        (
            json!({"parts": [{"type": "text", "text": "x"}], "model": {"providerID": "nope", "modelID": "m"}}),
            "model",
        ),
        (json!({"parts": [{"type": "text", "text": "x"}], "agent": "nobody"}), "agent"),
        (json!({"parts": [{"type": "text", "text": "x"}], "noReply": true}), "noReply"),
    ] {
        let (status, answer) = f.api.call("post", &path, Some(body.clone())).await;
        assert_bad(status, &answer, field);
    }
    let (status, answer) = f.api.raw("post", &path, None).await;
    assert_bad(status, &answer, "body");
    // Nothing of the bad prompts reached the provider.
    assert_eq!(f.provider.requests().len(), 1);

    // Unknown sessions.
    let good = json!({"parts": [{"type": "text", "text": "x"}]});
    let (status, body) = f.api.call("post", &format!("/session/{UNKNOWN}/message"), Some(good)).await;
    assert_not_found(status, &body);
    let (status, body) = f.api.call("get", &format!("/session/{UNKNOWN}/message"), None).await;
    assert_not_found(status, &body);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_its_template_and_children_are_listed() {
    let f = fixture(HELLO).await;
    let id = f.api.session().await;
    let path = format!("/session/{id}/command");
    let (status, reply) =
        f.api.call("post", &path, Some(json!({"command": "greet", "arguments": "the team"}))).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    assert_eq!(messages[0]["parts"][0]["text"], "Say hello to the team.");
    let (status, body) = f.api.call("post", &path, Some(json!({"command": "nope"}))).await;
    assert_bad(status, &body, "command");
    assert!(text(&body).contains("greet"), "{body}");
    assert_eq!(f.provider.requests().iter().filter(|r| r.kind == session_llm::RequestKind::Main).count(), 1);

    let (status, child) = f.api.call("post", "/session", Some(json!({"parentID": id}))).await;
    assert_eq!(status, StatusCode::OK, "{child}");
    let (status, children) = f.api.call("get", &format!("/session/{id}/children"), None).await;
    assert_eq!(status, StatusCode::OK, "{children}");
    assert_eq!(children.as_array().map(Vec::len), Some(1), "{children}");
    assert_eq!(children[0]["id"], child["id"]);
    assert_eq!(children[0]["parentID"], json!(id));
    let (status, body) = f.api.call("get", &format!("/session/{UNKNOWN}/children"), None).await;
    assert_not_found(status, &body);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_and_the_marked_one_runs_as_a_command() {
    let f = fixture(HELLO).await;
    let (status, skills) = f.api.call("get", "/skill", None).await;
    assert_eq!(status, StatusCode::OK, "{skills}");
    let base = f.project().join(".opencode/skills/pdf");
    assert_eq!(
        skills[0],
        json!({"name": "pdf", "description": "Fills PDF forms", "content": "Steps of pdf.",
            "location": base.join("SKILL.md").display().to_string()})
    );
    assert_eq!(skills[1]["name"], "release");
    let (_, v2) = f.api.call("get", "/api/skill", None).await;
    assert_eq!((v2["data"][0]["slash"].clone(), v2["data"][1]["slash"].clone()), (json!(false), json!(true)));
    // The commands: the configured one, then the marked skill (source `skill`), as OpenCode's
    // clients offer them.
    let (_, commands) = f.api.call("get", "/command", None).await;
    let listed: Vec<(Value, Value)> =
        commands.as_array().unwrap().iter().map(|c| (c["name"].clone(), c["source"].clone())).collect();
    assert_eq!(listed, [(json!("greet"), json!("command")), (json!("release"), json!("skill"))]);
    let (_, v2) = f.api.call("get", "/api/command", None).await;
    assert_eq!(v2["data"][1]["name"], "release");
    let id = f.api.session().await;
    let path = format!("/session/{id}/command");
    let (status, reply) =
        f.api.call("post", &path, Some(json!({"command": "release", "arguments": "v2"}))).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    let text = messages[0]["parts"][0]["text"].as_str().unwrap().to_owned();
    let dir = f.project().join(".opencode/skills/release");
    assert!(
        text.starts_with(&format!("Steps of release.\n\nBase directory for this skill: {}\n", dir.display())),
        "{text}"
    );
    assert!(text.ends_with("\n\nv2"), "{text}");
    // A skill not marked is no command.
    let (status, body) = f.api.call("post", &path, Some(json!({"command": "pdf"}))).await;
    assert_bad(status, &body, "command");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_async_returns_at_once_and_the_events_show_the_run() {
    let f = fixture(r#"{"chunk_chars": 4, "turns": [{"text": "Streaming words here."}]}"#).await;
    let mut events = f.api.events().await;
    let first = events.next().await;
    assert_eq!(first["type"], "server.connected");
    assert_eq!(first["properties"], json!({}));
    assert!(first["id"].as_str().is_some_and(|id| id.starts_with("evt_")), "{first}");
    let id = f.api.session().await;
    events.until("session.created", |p| p["info"]["id"] == id.as_str()).await;

    let body = json!({"parts": [{"type": "text", "text": "go"}]});
    let (status, answer) = f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    assert_eq!((status, answer), (StatusCode::NO_CONTENT, Value::Null));
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let types = events.types();
    for wanted in ["session.status", "message.updated", "message.part.updated"] {
        assert!(types.iter().any(|t| t == wanted), "no {wanted} in {types:?}");
    }
    // OpenCode 1.18's shapes: every event has an id; text grows by message.part.delta, and
    // the deltas add up to the answer.
    assert!(events.seen.iter().all(|e| e["id"].as_str().is_some_and(|id| id.starts_with("evt_"))));
    let streamed: String = events
        .seen
        .iter()
        .filter(|e| e["type"] == "message.part.delta" && e["properties"]["sessionID"] == id.as_str())
        .map(|e| e["properties"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Streaming words here.");
    let part = events.seen.iter().find(|e| e["type"] == "message.part.updated").unwrap();
    assert_eq!(part["properties"]["sessionID"], id.as_str());
    assert!(part["properties"]["time"].is_u64());
    let busy = events.seen.iter().any(|e| {
        e["type"] == "session.status"
            && e["properties"]["status"]["type"] == "busy"
            && e["properties"]["sessionID"] == id.as_str()
    });
    assert!(busy);
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    assert_eq!(messages[1]["parts"].as_array().unwrap().iter().filter(|p| p["type"] == "text").count(), 1);

    let path = format!("/session/{id}/prompt_async");
    let (status, body) =
        f.api.call("post", &path, Some(json!({"parts": [{"type": "text", "text": 1}]}))).await;
    assert_bad(status, &body, "parts[0].text");
    let (status, body) = f
        .api
        .call(
            "post",
            &format!("/session/{UNKNOWN}/prompt_async"),
            Some(json!({"parts": [{"type": "text", "text": "x"}]})),
        )
        .await;
    assert_not_found(status, &body);
    f.finish().await;
}

const ASKS: &str = r#"{"turns": [
    {"calls": [{"op": "read", "path": ".env"}]},
    {"text": "The secret is set."}
]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_ask_is_published_and_answered_over_http() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let body = json!({"parts": [{"type": "text", "text": "read the env"}]});
    let (status, _) = f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let asked = events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let permission = &asked["properties"];
    assert_eq!(permission["permission"], "read");
    assert!(permission["id"].as_str().unwrap().starts_with("per_"));
    assert!(permission["tool"]["messageID"].as_str().unwrap().starts_with("msg_"));
    assert!(permission["tool"]["callID"].is_string());
    assert!(permission["patterns"][0].as_str().unwrap().contains(".env"), "{permission}");
    assert!(permission["always"].is_array());
    let permission_id = permission["id"].as_str().unwrap().to_owned();
    let path = format!("/session/{id}/permissions/{permission_id}");

    // Bad bodies, unknown session, unknown ask.
    let (status, body) = f.api.call("post", &path, Some(json!({"response": "maybe"}))).await;
    assert_bad(status, &body, "response");
    let (status, body) = f.api.call("post", &path, Some(json!({}))).await;
    assert_bad(status, &body, "response");
    let (status, body) = f
        .api
        .call("post", &format!("/session/{id}/permissions/nope"), Some(json!({"response": "once"})))
        .await;
    assert_bad(status, &body, "permissionID");
    let (status, body) = f
        .api
        .call(
            "post",
            &format!("/session/{UNKNOWN}/permissions/{permission_id}"),
            Some(json!({"response": "once"})),
        )
        .await;
    assert_not_found(status, &body);
    let (status, body) = f
        .api
        .call("post", &format!("/session/{id}/permissions/per_unknown"), Some(json!({"response": "once"})))
        .await;
    assert_not_found(status, &body);

    let (status, answer) = f.api.call("post", &path, Some(json!({"response": "once"}))).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    let replied = events.until("permission.replied", |p| p["sessionID"] == id.as_str()).await;
    assert_eq!(replied["properties"], json!({"sessionID": id, "requestID": permission_id, "reply": "once"}));
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    // Answered once: the ask is gone.
    let (status, _) = f.api.call("post", &path, Some(json!({"response": "once"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let tool = first_tool_part(&f.api, &id).await;
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert!(tool["state"]["output"].as_str().unwrap().contains("SECRET=1"));
    assert_eq!(f.provider.requests().len(), 2);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_a_run_waiting_for_an_answer() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let body = json!({"parts": [{"type": "text", "text": "read the env"}]});
    f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let (status, answer) = f.api.call("post", &format!("/session/{id}/abort?directory=/x"), None).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    let assistant = &messages[1]["info"];
    assert_eq!(assistant["error"]["name"], "MessageAbortedError", "{assistant}");
    // Nothing runs now: abort again is still fine.
    let (status, answer) = f.api.call("post", &format!("/session/{id}/abort"), None).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    assert_eq!(f.provider.requests().len(), 1);

    let (status, body) = f.api.call("post", &format!("/session/{UNKNOWN}/abort"), None).await;
    assert_not_found(status, &body);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_records_the_point_and_the_next_prompt_drops_what_follows() {
    let f = fixture(r#"{"turns": [{"text": "One."}, {"text": "Two."}]}"#).await;
    let id = f.api.session().await;
    let prompt = |text: &str| json!({"parts": [{"type": "text", "text": text}]});
    let (status, _) = f.api.call("post", &format!("/session/{id}/message"), Some(prompt("first"))).await;
    assert_eq!(status, StatusCode::OK);
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();

    let path = format!("/session/{id}/revert");
    let (status, session) = f.api.call("post", &path, Some(json!({"messageID": user}))).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session["id"], id.as_str());
    assert_eq!(session["revert"]["messageID"], user.as_str());
    let (_, read) = f.api.call("get", &format!("/session/{id}"), None).await;
    assert_eq!(read["revert"]["messageID"], user.as_str());
    // The next prompt makes the revert final: only it and its answer remain.
    let (status, _) = f.api.call("post", &format!("/session/{id}/message"), Some(prompt("second"))).await;
    assert_eq!(status, StatusCode::OK);
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    assert_eq!(messages.as_array().unwrap().len(), 2, "{messages}");
    assert_eq!(messages[0]["parts"][0]["text"], "second");

    let (status, body) = f.api.call("post", &path, Some(json!({}))).await;
    assert_bad(status, &body, "messageID");
    let (status, body) = f.api.call("post", &path, Some(json!({"messageID": "x"}))).await;
    assert_bad(status, &body, "messageID");
    let (status, body) = f.api.call("post", &path, Some(json!({"messageID": "msg_unknown"}))).await;
    assert_bad(status, &body, "messageID");
    let (status, body) = f.api.call("post", &path, Some(json!({"messageID": user, "partID": 3}))).await;
    assert_bad(status, &body, "partID");
    let (status, body) =
        f.api.call("post", &format!("/session/{UNKNOWN}/revert"), Some(json!({"messageID": user}))).await;
    assert_not_found(status, &body);
    f.finish().await;
}

/// Every route with its placeholders filled.
fn concrete(path: &str) -> String {
    path.replace("{id}", UNKNOWN)
        .replace("{permissionID}", "per_unknown")
        .replace("{requestID}", "per_unknown")
        .replace("{messageID}", "msg_unknown")
        .replace("{partID}", "prt_unknown")
        .replace("{projectID}", "0000")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_every_route() {
    let f = fixture(HELLO).await;
    let (status, doc) = f.api.call("get", "/doc", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    for (method, path) in routes() {
        let operation = &doc["paths"][*path][*method];
        assert!(operation["operationId"].is_string(), "{method} {path} is not documented");
        assert!(operation["responses"].is_object());
    }
    assert_eq!(doc["paths"]["/session/{id}/message"]["post"]["operationId"], "session.prompt");
    assert_eq!(
        doc["paths"]["/session/{id}/message"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["required"],
        json!(["parts"])
    );
    // The refusals of the access checks are documented where they apply.
    let create = &doc["paths"]["/session"]["post"]["responses"];
    for code in ["401", "403", "415", "421"] {
        assert!(create[code].is_object(), "POST /session lacks {code}");
    }
    assert!(doc["paths"]["/session"]["get"]["responses"]["415"].is_null());
    // Each documented route is served: none reaches the fallback, which names the route as
    // not one of this server's.
    for (method, path) in routes() {
        if *path == "/event" || *path == "/global/event" {
            continue; // streams; covered by the event tests
        }
        let (status, body) = f.api.call(method, &concrete(path), None).await;
        assert!(!body.is_null() || status == StatusCode::NO_CONTENT, "{method} {path}: {status}");
        let message = body["data"]["message"].as_str().unwrap_or_default();
        assert!(!message.contains("GET /doc lists"), "{method} {path} is not routed: {body}");
    }
    // Routes of OpenCode's server this one lacks answer 501 with a message; others 404.
    let (status, body) = f.api.call("get", "/pty", None).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert_eq!(body["name"], "UnsupportedError");
    let (status, body) = f.api.call("get", "/nowhere", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["data"]["message"].as_str().unwrap_or_default().contains("/nowhere"));
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_1_18_creates_sessions_with_their_own_rules_and_reads_paths_and_config() {
    let f = fixture(ASKS).await;
    let (status, body) = f
        .api
        .call(
            "post",
            "/session",
            Some(json!({"title": "t", "agent": "build", "model": {"providerID": "mock", "id": "m"},
                "permission": [{"permission": "read", "pattern": "*.env", "action": "deny"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    // The stored record as OpenCode keeps it: a two-word slug, the agent and model the client
    // named, the folder's path in its project, totals of zero.
    assert_eq!(body["slug"].as_str().unwrap().split('-').count(), 2, "{body}");
    assert_eq!(body["agent"], "build");
    assert_eq!(body["model"], json!({"providerID": "mock", "id": "m"}));
    assert_eq!((body["cost"].clone(), body["tokens"]["input"].clone()), (json!(0), json!(0)));
    assert!(body["path"].is_string(), "{body}");
    assert_eq!(body["permission"], json!([{"permission": "read", "pattern": "*.env", "action": "deny"}]));
    let (_, read) = f.api.call("get", &format!("/session/{id}"), None).await;
    assert_eq!(read["slug"], body["slug"]);
    let (status, body) = f.api.call("post", "/session", Some(json!({"agent": "nobody"}))).await;
    assert_bad(status, &body, "agent");
    let (status, body) = f.api.call("post", "/session", Some(json!({"workspaceID": "wrk_1"}))).await;
    assert_bad(status, &body, "workspaceID");

    // The session's rule denies the read its agent would ask for: no ask, the call fails. (A
    // deny of every pattern would leave `read` out of the request, as OpenCode 1.18.34 merges a
    // session's rules into the agent's before it drops fully denied tools.)
    let body = json!({"parts": [{"type": "text", "text": "read the env"}]});
    let (status, reply) = f.api.call("post", &format!("/session/{id}/message"), Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let tool = first_tool_part(&f.api, &id).await;
    assert_eq!(tool["tool"], "read", "{tool}");
    assert_eq!(tool["state"]["status"], "error", "{tool}");
    let main_requests = || {
        f.provider
            .requests()
            .into_iter()
            .filter(|r| r.kind == session_llm::RequestKind::Main)
            .collect::<Vec<_>>()
    };
    let offers_read =
        |request: &session_testkit::RecordedRequest| request.tool_names.iter().any(|n| n == "read");
    assert!(offers_read(&main_requests()[0]), "a rule for some paths keeps the tool in the request");

    // A session that denies every read is not offered the tool at all.
    let denied = json!({"permission": [{"permission": "read", "pattern": "*", "action": "deny"}]});
    let (status, body) = f.api.call("post", "/session", Some(denied)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let closed = body["id"].as_str().unwrap().to_owned();
    let body = json!({"parts": [{"type": "text", "text": "read the env"}]});
    let (status, reply) = f.api.call("post", &format!("/session/{closed}/message"), Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let requests = main_requests();
    let last = requests.last().unwrap();
    assert!(!last.tool_names.is_empty() && !offers_read(last), "{:?}", last.tool_names);

    let (status, path) = f.api.call("get", "/path", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(path["worktree"].as_str().is_some_and(|w| !w.is_empty()), "{path}");
    assert_eq!(path["worktree"], path["directory"]);
    let (status, config) = f.api.call("get", "/config", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(config["share"], "disabled");
    let (status, statuses) = f.api.call("get", "/session/status", None).await;
    assert_eq!((status, statuses), (StatusCode::OK, json!({})));
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_listed_and_answered_by_its_id_with_feedback() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let body = json!({"parts": [{"type": "text", "text": "read the env"}]});
    f.api.call("post", &format!("/session/{id}/prompt_async"), Some(body)).await;
    let asked = events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let request = asked["properties"]["id"].as_str().unwrap().to_owned();
    let (_, pending) = f.api.call("get", "/permission", None).await;
    assert_eq!(pending[0]["id"], request.as_str(), "{pending}");
    let (_, statuses) = f.api.call("get", "/session/status", None).await;
    assert_eq!(statuses[&id]["type"], "busy", "{statuses}");

    let path = format!("/permission/{request}/reply");
    let (status, body) = f.api.call("post", &path, Some(json!({"reply": "maybe"}))).await;
    assert_bad(status, &body, "reply");
    let (status, body) =
        f.api.call("post", "/permission/per_unknown/reply", Some(json!({"reply": "once"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let answer = json!({"reply": "reject", "message": "Use the README instead."});
    let (status, body) = f.api.call("post", &path, Some(answer)).await;
    assert_eq!((status, body), (StatusCode::OK, json!(true)));
    let replied = events.until("permission.replied", |p| p["requestID"] == request.as_str()).await;
    assert_eq!(replied["properties"]["reply"], "reject");
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let tool = first_tool_part(&f.api, &id).await;
    assert!(tool["state"]["error"].as_str().unwrap().contains("Use the README instead."), "{tool}");
    f.finish().await;
}
