//! `session serve` over real HTTP: off loopback, every route requires the token; on loopback
//! without one, the server makes a private token file whose token authenticates, and loopback
//! clients without it are let in only by their `Host`.

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
        require_token: false,
        cors: Vec::new(),
        limits: Default::default(),
    })
    .await
    .unwrap_err();
    assert!(format!("{refused:#}").contains("token"), "{refused:#}");

    let server = start(ServeOptions {
        setup: setup(dir.path(), &provider),
        hostname: "0.0.0.0".into(),
        port: 0,
        token: Some("s3cret".into()),
        require_token: false,
        cors: Vec::new(),
        limits: Default::default(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_a_private_token_file_is_made_and_authenticates() {
    let provider = provider(HELLO).await;
    let dir = tempfile::tempdir().unwrap();
    let options = |require_token: bool| ServeOptions {
        setup: setup(dir.path(), &provider),
        hostname: "127.0.0.1".into(),
        port: 0,
        token: None,
        require_token,
        cors: vec!["http://localhost:5173".into()],
        limits: Default::default(),
    };
    let server = start(options(false)).await.unwrap();
    let file = server.token_file().unwrap().to_owned();
    assert_eq!(file, dir.path().join("data/server.token"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let token = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert!(token.len() >= 32, "{token}");

    let api = ApiClient::new(server.url());
    let rebound = format!("attacker.example:{}", server.addr().port());
    // Without the token: loopback names pass, a rebound name does not.
    let (status, _) = api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = ApiClient::send(api.request("post", "/session").header("host", &rebound)).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    // The file's token, the way OpenCode's clients send it, lets any Host in.
    let basic = api.request("get", "/session").header("host", &rebound).basic_auth("opencode", Some(&token));
    let (status, _, body) = ApiClient::send(basic).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, _) = ApiClient::send(api.request("get", "/session").bearer_auth("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The configured origin is allowed, any other refused.
    let (status, headers, _) =
        ApiClient::send(api.request("get", "/session").header("origin", "http://localhost:5173")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["access-control-allow-origin"], "http://localhost:5173");
    let (status, _, _) =
        ApiClient::send(api.request("get", "/session").header("origin", "https://evil.example")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    server.stop().await.unwrap();

    // The next server keeps the token; asked to, it refuses loopback clients without it.
    let server = start(options(true)).await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    let mut api = ApiClient::new(server.url());
    let (status, body) = api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    api.token = Some(token);
    let (status, _) = api.call("get", "/session", None).await;
    assert_eq!(status, StatusCode::OK);
    server.stop().await.unwrap();

    // A token given by flag is required on loopback too, and no file is involved.
    let mut given = options(false);
    given.token = Some("s3cret".into());
    given.cors = vec!["not an origin".into()];
    let refused = start(given.clone()).await.unwrap_err();
    assert!(format!("{refused:#}").contains("--cors"), "{refused:#}");
    given.cors = Vec::new();
    let server = start(given).await.unwrap();
    assert!(server.token_file().is_none());
    let (status, _) = ApiClient::new(server.url()).call("get", "/session", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    server.stop().await.unwrap();
    provider.shutdown().await;
}
