//! `session serve` over real HTTP: off loopback, every route requires the bearer token.

use reqwest::StatusCode;
use serde_json::json;
use session_cli::serve::{ServeOptions, routes, start};
use session_testkit::ApiClient;

use super::serve_support::{provider, setup};

/// A well-formed id of no session.
const UNKNOWN: &str = "ses_0000000000000000000000unknown";

const HELLO: &str = r#"{"turns": [{"text": "Hello there."}]}"#;

/// Every route with its placeholders filled.
fn concrete(path: &str) -> String {
    path.replace("{id}", UNKNOWN).replace("{permissionID}", "per_unknown")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_every_route_requires_the_token() {
    let provider = provider(HELLO).await;
    let dir = tempfile::tempdir().unwrap();
    let refused = start(ServeOptions {
        setup: setup(dir.path(), &provider),
        hostname: "0.0.0.0".into(),
        port: 0,
        token: None,
    })
    .await
    .unwrap_err();
    assert!(format!("{refused:#}").contains("token"), "{refused:#}");

    let server = start(ServeOptions {
        setup: setup(dir.path(), &provider),
        hostname: "0.0.0.0".into(),
        port: 0,
        token: Some("s3cret".into()),
    })
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{}", server.addr().port());
    let mut anonymous = ApiClient::new(base.clone());
    for (method, path) in routes() {
        let (status, body) = anonymous.call(method, &concrete(path), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert_eq!(body["name"], "Unauthorized");
    }
    anonymous.token = Some("wrong".into());
    let (status, _) = anonymous.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let mut api = ApiClient::new(base);
    api.token = Some("s3cret".into());
    let (status, _) = api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::OK);
    let id = api.session().await;
    let (status, reply) = api
        .call(
            "post",
            &format!("/session/{id}/message"),
            Some(json!({"parts": [{"type": "text", "text": "hi"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let mut events = api.events().await;
    assert_eq!(events.next().await["type"], "server.connected");
    server.stop().await.unwrap();
    provider.shutdown().await;
}
