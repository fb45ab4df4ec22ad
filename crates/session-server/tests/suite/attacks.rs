//! Attacks of a web page on a server bound to loopback, and the credentials that let real
//! clients in.
//!
//! The page either rebinds its own DNS name to 127.0.0.1 (to the browser its requests are then
//! same-origin; only `Host` gives them away), sends cross-origin requests (they carry `Origin`
//! or `Sec-Fetch-Site`), or sends CORS "simple requests" (`text/plain`, forms) that need no
//! preflight. Each attack checks the answer and that nothing was created or run: no session,
//! no message, no request to the model, no file written by a tool.

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use session_server::AllowedOrigin;
use session_store::ListSessions;
use session_testkit::ApiClient;

use super::support::{Fixture, first_tool_part, fixture, fixture_with};

/// The name the attacker's page rebinds to 127.0.0.1.
const ATTACKER: &str = "attacker.example";

/// What a successful attack would make the model do: run a command that leaves a file.
const PWN: &str = r#"{"turns": [
    {"calls": [{"op": "bash", "command": "echo owned > pwned.txt", "description": "Pwn"}]},
    {"text": "Done."}
]}"#;

/// The model reads `.env`, which asks for permission.
const ASKS: &str = r#"{"turns": [
    {"calls": [{"op": "read", "path": ".env"}]},
    {"text": "The secret is set."}
]}"#;

const HELLO: &str = r#"{"turns": [{"text": "Hello there."}]}"#;

const PROMPT: &str = r#"{"parts": [{"type": "text", "text": "run it"}]}"#;

fn message(body: &Value) -> String {
    body["data"]["message"].as_str().unwrap_or_default().to_owned()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|value| value.to_str().unwrap())
}

/// The `Host` of a page at the attacker's name, on the server's port.
fn rebound(f: &Fixture) -> String {
    format!("{ATTACKER}:{}", f.port)
}

/// Checks that the attacks left only the `sessions` created legitimately, without messages,
/// and that the model was never asked and no tool ran.
async fn assert_nothing_ran(f: &Fixture, sessions: usize) {
    let page = f.store.list_sessions(&ListSessions { limit: 100, ..ListSessions::default() }).await.unwrap();
    assert_eq!(page.sessions.len(), sessions, "sessions: {:?}", page.sessions);
    for session in &page.sessions {
        let history = f.store.load_history(&session.id).await.unwrap();
        assert!(history.messages.is_empty(), "session {} has messages", session.id);
    }
    assert!(f.provider.requests().is_empty(), "the model was asked");
    assert!(!f.project().join("pwned.txt").exists(), "a tool ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebinding_page_cannot_create_or_list_sessions() {
    let f = fixture(PWN).await;
    let host = rebound(&f);
    let create = || {
        f.api
            .request("post", "/session")
            .header("content-type", "application/json")
            .body(r#"{"title": "pwn"}"#)
    };
    // A tool without a browser, or a page whose browser sent no Origin: only Host tells.
    let (status, _, body) = ApiClient::send(create().header("host", &host)).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    assert_eq!(body["name"], "MisdirectedRequest");
    assert!(message(&body).contains(&format!("127.0.0.1:{}", f.port)), "{body}");
    // What a browser sends with a POST from the rebound page: its own origin too.
    let (status, _, body) =
        ApiClient::send(create().header("host", &host).header("origin", format!("http://{host}"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["name"], "Forbidden");
    // Reading is refused as well, and so are names that only look like loopback.
    let port = f.port;
    for host in [
        host.clone(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("localhost.{ATTACKER}:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        "127.0.0.1".to_owned(),
    ] {
        let request =
            f.api.request("get", "/session").header("host", &host).header("sec-fetch-site", "same-origin");
        let (status, _, body) = ApiClient::send(request).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}: {body}");
        let (status, _, body) = ApiClient::send(create().header("host", &host)).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}: {body}");
    }
    assert_nothing_ran(&f, 0).await;

    // The loopback names of the bound port still work.
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")] {
        let (status, _, body) = ApiClient::send(f.api.request("get", "/session").header("host", &host)).await;
        assert_eq!(status, StatusCode::OK, "{host}: {body}");
    }
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_is_refused_to_a_rebinding_host() {
    let f = fixture(HELLO).await;
    let request = f
        .api
        .request("get", "/event")
        .header("host", rebound(&f))
        .header("accept", "text/event-stream")
        .header("sec-fetch-site", "same-origin");
    let (status, headers, body) = ApiClient::send(request).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    // A cross-origin EventSource is refused too.
    let request = f.api.request("get", "/event").header("origin", "https://evil.example");
    let (status, headers, _) = ApiClient::send(request).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    // The real client's stream is unaffected.
    let mut events = f.api.events().await;
    assert_eq!(events.next().await["type"], "server.connected");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebinding_page_cannot_answer_a_permission_ask() {
    let f = fixture(ASKS).await;
    let mut events = f.api.events().await;
    let id = f.api.session().await;
    let (status, _) = f
        .api
        .call(
            "post",
            &format!("/session/{id}/prompt_async"),
            Some(json!({"parts": [{"type": "text", "text": "env?"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let asked = events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let permission = asked["properties"]["id"].as_str().unwrap().to_owned();
    let path = format!("/session/{id}/permissions/{permission}");

    let host = rebound(&f);
    let reply = || {
        f.api
            .request("post", &path)
            .header("host", &host)
            .header("content-type", "application/json")
            .body(r#"{"response": "always"}"#)
    };
    let (status, _, body) = ApiClient::send(reply()).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    let (status, _, body) = ApiClient::send(reply().header("origin", format!("http://{host}"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, body) = ApiClient::send(
        f.api
            .request("post", &format!("/session/{id}/message"))
            .header("host", &host)
            .header("content-type", "application/json")
            .body(PROMPT),
    )
    .await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");

    // The ask still waits for the real client, which rejects it.
    let (status, answer) = f.api.call("post", &path, Some(json!({"response": "reject"}))).await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let tool = first_tool_part(&f.api, &id).await;
    assert_eq!(tool["state"]["status"], "error", "{tool}");
    let (_, messages) = f.api.call("get", &format!("/session/{id}/message"), None).await;
    assert!(!messages.to_string().contains("SECRET=1"), "the file was read: {messages}");
    assert_eq!(f.provider.requests().len(), 1);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_origin_page_is_refused() {
    let f = fixture(PWN).await;
    let id = f.api.session().await;
    let evil = "https://evil.example";
    let json_post = |path: &str, body: &'static str| {
        f.api.request("post", path).header("content-type", "application/json").body(body)
    };
    let (status, _, body) = ApiClient::send(json_post("/session", "{}").header("origin", evil)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["name"], "Forbidden");
    assert!(message(&body).contains("evil.example"), "{body}");
    let (status, _, _) = ApiClient::send(
        f.api
            .request("post", "/session")
            .header("origin", evil)
            .header("content-type", "text/plain")
            .body("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let prompt = format!("/session/{id}/prompt_async");
    let (status, _, _) = ApiClient::send(json_post(&prompt, PROMPT).header("origin", evil)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) =
        ApiClient::send(f.api.request("delete", &format!("/session/{id}")).header("origin", evil)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // An opaque origin (a sandboxed frame, a file) and pages that send only Sec-Fetch-Site.
    let (status, _, _) = ApiClient::send(json_post("/session", "{}").header("origin", "null")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for site in ["cross-site", "same-site"] {
        let (status, _, body) =
            ApiClient::send(f.api.request("get", "/session").header("sec-fetch-site", site)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{site}: {body}");
        let (status, _, _) = ApiClient::send(json_post(&prompt, PROMPT).header("sec-fetch-site", site)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{site}");
    }
    // With no origin allowed, a preflight is refused and says nothing of CORS.
    let preflight = f
        .api
        .request("options", "/session")
        .header("origin", evil)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type");
    let (status, headers, _) = ApiClient::send(preflight).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for name in
        ["access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers"]
    {
        assert_eq!(header(&headers, name), None, "{name}");
    }
    assert_nothing_ran(&f, 1).await;

    // A user typing the address (`none`) and the server's own pages (`same-origin`) pass.
    for site in ["none", "same-origin"] {
        let (status, _, _) =
            ApiClient::send(f.api.request("get", "/session").header("sec-fetch-site", site)).await;
        assert_eq!(status, StatusCode::OK, "{site}");
    }
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_requests_without_the_json_content_type_create_and_run_nothing() {
    let f = fixture(PWN).await;
    let post = |path: &str, content_type: Option<&str>, body: &'static str| {
        let request = f.api.request("post", path).body(body);
        match content_type {
            Some(content_type) => request.header("content-type", content_type),
            None => request,
        }
    };
    let kinds = [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ];
    for kind in kinds {
        let (status, _, body) = ApiClient::send(post("/session", kind, r#"{"title": "pwn"}"#)).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{kind:?}: {body}");
        assert_eq!(body["name"], "UnsupportedMediaType");
        assert!(message(&body).contains("application/json"), "{body}");
    }
    // A declared type that is not JSON is refused even without a body.
    let (status, _, _) = ApiClient::send(post("/session", Some("text/plain"), "")).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let id = f.api.session().await;
    for path in [format!("/session/{id}/message"), format!("/session/{id}/prompt_async")] {
        for kind in kinds {
            let (status, _, body) = ApiClient::send(post(&path, kind, PROMPT)).await;
            assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path} {kind:?}: {body}");
        }
    }
    let (status, _, _) = ApiClient::send(post(
        &format!("/session/{id}/permissions/per_x"),
        Some("text/plain"),
        r#"{"response": "always"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, _, _) = ApiClient::send(post(
        &format!("/session/{id}/revert"),
        Some("text/plain"),
        r#"{"messageID": "msg_x"}"#,
    ))
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_nothing_ran(&f, 1).await;

    // JSON with a charset is JSON.
    let (status, _, body) =
        ApiClient::send(post("/session", Some("application/json; charset=utf-8"), r#"{"title": "ok"}"#))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "ok");
    f.finish().await;
}

const APP: &str = "http://localhost:5173";

async fn with_allowed_origin() -> Fixture {
    fixture_with(HELLO, |access| access.origins = vec![AllowedOrigin::parse(APP).unwrap()]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_origin_gets_the_cors_headers() {
    let f = with_allowed_origin().await;
    let preflight = f
        .api
        .request("options", "/session")
        .header("origin", APP)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type,x-opencode-directory")
        .header("access-control-request-private-network", "true");
    let (status, headers, _) = ApiClient::send(preflight).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));
    assert!(header(&headers, "access-control-allow-methods").unwrap().contains("POST"), "{headers:?}");
    let allowed = header(&headers, "access-control-allow-headers").unwrap();
    assert!(allowed.contains("content-type") && allowed.contains("x-opencode-directory"), "{allowed}");
    assert_eq!(header(&headers, "access-control-allow-private-network"), Some("true"));
    assert!(header(&headers, "access-control-max-age").is_some());
    assert!(header(&headers, "vary").unwrap().contains("origin"), "{headers:?}");
    assert_eq!(header(&headers, "access-control-allow-credentials"), None);

    let create = f
        .api
        .request("post", "/session")
        .header("origin", APP)
        .header("sec-fetch-site", "same-site")
        .header("content-type", "application/json")
        .body(r#"{"title": "from the app"}"#);
    let (status, headers, body) = ApiClient::send(create).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "from the app");
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));
    // The page can read errors too.
    let missing = f.api.request("get", "/session/ses_0000000000000000000000unknown").header("origin", APP);
    let (status, headers, _) = ApiClient::send(missing).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));
    // Another port of the same host is another origin.
    let (status, _, _) =
        ApiClient::send(f.api.request("get", "/session").header("origin", "http://localhost:5174")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preflight_from_a_disallowed_origin_gets_no_cors_headers() {
    let f = with_allowed_origin().await;
    for origin in ["https://evil.example", "http://localhost:5173.evil.example", "null"] {
        let preflight = f
            .api
            .request("options", "/session")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type");
        let (status, headers, body) = ApiClient::send(preflight).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(body["name"], "Forbidden");
        for name in
            ["access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers"]
        {
            assert_eq!(header(&headers, name), None, "{origin}: {name}");
        }
    }
    assert_nothing_ran(&f, 0).await;
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_lets_any_host_in_as_bearer_or_basic() {
    let f = fixture_with(HELLO, |access| access.token = Some("s3cret".into())).await;
    let host = rebound(&f);
    let basic = |user: &str, password: &str| {
        f.api.request("get", "/session").header("host", &host).basic_auth(user, Some(password))
    };
    // A remote client names the server however it reaches it; the token is what counts.
    let (status, _, _) =
        ApiClient::send(f.api.request("get", "/session").header("host", &host).bearer_auth("s3cret")).await;
    assert_eq!(status, StatusCode::OK);
    // OpenCode's clients: Basic, user `opencode` (or OPENCODE_SERVER_USERNAME), the password.
    for user in ["opencode", "someone"] {
        let (status, _, body) = ApiClient::send(basic(user, "s3cret")).await;
        assert_eq!(status, StatusCode::OK, "{user}: {body}");
    }
    let (status, _, body) = ApiClient::send(basic("opencode", "wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["name"], "Unauthorized");
    // A wrong token is refused even where no token is needed.
    for authorization in ["Bearer wrong", "Digest x", "Basic !!"] {
        let request = f.api.request("get", "/session").header("authorization", authorization);
        let (status, headers, body) = ApiClient::send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{authorization}: {body}");
        assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
    }
    // Without the token: loopback names pass, the rebound name does not.
    let (status, _) = f.api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = ApiClient::send(f.api.request("get", "/session").header("host", &host)).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    // The token does not make a web page of another origin welcome.
    let request =
        f.api.request("get", "/session").bearer_auth("s3cret").header("origin", "https://evil.example");
    let (status, _, _) = ApiClient::send(request).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_tokens_and_remote_binds_refuse_requests_without_the_token() {
    let f = fixture_with(HELLO, |access| {
        access.token = Some("s3cret".into());
        access.require_token = true;
    })
    .await;
    let (status, body) = f.api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(message(&body).contains("requires the token"), "{body}");
    let (status, _, _) = ApiClient::send(f.api.request("get", "/session").bearer_auth("s3cret")).await;
    assert_eq!(status, StatusCode::OK);
    f.finish().await;

    // Told it is bound off loopback without a token, the router lets nobody in.
    let f = fixture_with(HELLO, |access| access.bound.set_ip([0, 0, 0, 0].into())).await;
    let (status, body) = f.api.call("post", "/session", Some(json!({}))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_nothing_ran(&f, 0).await;
    f.finish().await;
}
