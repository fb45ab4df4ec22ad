//! `session serve` driven by OpenCode's own v1 client, `@opencode-ai/sdk@1.19.3`, installed by
//! npm from the committed lockfile (`tests/sdk/`) into a folder under the target directory.
//! The server runs with `--require-token` and the token it makes; the client sends it the way
//! OpenCode's own clients send `OPENCODE_SERVER_PASSWORD` (Basic, user `opencode`). The test
//! fails, and does not skip, when node, npm or the registry is unavailable.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use session_e2e::start_serve;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// The committed package files and script.
fn sdk_sources() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sdk")
}

/// Installs the SDK with `npm ci` into a cache folder, once per lockfile content.
fn install_sdk() -> PathBuf {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("opencode-sdk-e2e");
    std::fs::create_dir_all(&cache).unwrap();
    let lock = std::fs::read(sdk_sources().join("package-lock.json")).unwrap();
    let installed_lock = cache.join(".installed-lock.json");
    let installed = std::fs::read(&installed_lock).is_ok_and(|previous| previous == lock)
        && cache.join("node_modules/@opencode-ai/sdk/package.json").exists();
    for file in ["package.json", "package-lock.json", "sdk-e2e.mjs", "sdk-v2.mjs"] {
        std::fs::copy(sdk_sources().join(file), cache.join(file)).unwrap();
    }
    if !installed {
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&cache)
            .output()
            .unwrap_or_else(|error| panic!("cannot run npm (it is required for this test): {error}"));
        assert!(
            output.status.success(),
            "npm ci failed (the registry must be reachable):\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(&installed_lock, &lock).unwrap();
    }
    let version: Value = serde_json::from_slice(
        &std::fs::read(cache.join("node_modules/@opencode-ai/sdk/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(version["version"], "1.19.3");
    cache
}

fn project(dir: &Path, base_url: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(dir.join("README.md"), "# app\n").unwrap();
    let config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}, "cost": {"input": 1, "output": 2}}}
        }}
    });
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config).unwrap()).unwrap();
    // The tests run with HOME one level above the project; the project's config is trusted.
    session_testkit::trust_folder(dir.parent().unwrap(), dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opencode_sdk_drives_session_serve() {
    let sdk = tokio::task::spawn_blocking(install_sdk).await.unwrap();
    let provider = TestServer::start(
        Script::from_json(
            r#"{"chunk_chars": 5, "turns": [
                {"calls": [{"op": "read", "path": ".env"}]},
                {"text": "The env file sets SECRET."}
            ]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, &provider.base_url(Api::OpenAiChat));

    let server = tokio::task::spawn_blocking({
        let (project_dir, home) = (project_dir.clone(), dir.path().to_owned());
        move || start_serve(&project_dir, &home, &["--model", "mock/m", "--require-token"])
    })
    .await
    .unwrap()
    .unwrap();
    let (url, token_line) = (server.url.clone(), server.token_line.clone());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // The second line says where the token is, and does not show it.
    let token_file = dir.path().join("data/session/server.token");
    assert!(token_line.contains(&token_file.display().to_string()), "{token_line}");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    assert!(!token_line.contains(&token), "the token was printed: {token_line}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let output = {
        let sdk = sdk.clone();
        let project_dir = project_dir.clone();
        tokio::task::spawn_blocking(move || {
            Command::new("node")
                .arg("sdk-e2e.mjs")
                .current_dir(&sdk)
                .env("SESSION_URL", &url)
                .env("SESSION_TOKEN", &token)
                .env("PROJECT_DIR", &project_dir)
                .output()
                .unwrap_or_else(|error| panic!("cannot run node (it is required for this test): {error}"))
        })
        .await
        .unwrap()
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDK script failed:\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["permission"], "read");
    assert_eq!(summary["text"], "The env file sets SECRET.");
    assert_eq!(provider.requests().len(), 2);
    provider.assert_invariants();
    drop(server);
    provider.shutdown().await;
}

/// OpenCode 1.18.34's own OpenAPI document (reference data, `tests/fixtures/`).
fn opencode_document() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/opencode-1.18.34/openapi.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The problems of `body` against the 200 answer OpenCode's document gives `method path`.
fn contract_problems(document: &Value, method: &str, path: &str, body: &Value) -> Vec<String> {
    let response =
        &document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"];
    assert!(response.is_object(), "OpenCode's document has no 200 JSON answer for {method} {path}");
    // The answer's schema beside the document's components, so that its references resolve.
    let schema = json!({"allOf": [response], "components": document["components"]});
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(body)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .take(5)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v2_sdk_reads_every_route_the_terminal_ui_uses_in_opencodes_shapes() {
    let sdk = tokio::task::spawn_blocking(install_sdk).await.unwrap();
    let provider = TestServer::start(
        Script::from_json(
            r#"{"chunk_chars": 5, "title": "Readme reading", "turns": [
                {"calls": [{"op": "read", "path": "README.md"}]},
                {"text": "The readme names the app."}
            ]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, &provider.base_url(Api::OpenAiChat));
    let server = tokio::task::spawn_blocking({
        let (project_dir, home) = (project_dir.clone(), dir.path().to_owned());
        move || start_serve(&project_dir, &home, &["--model", "mock/m", "--require-token"])
    })
    .await
    .unwrap()
    .unwrap();
    let token =
        std::fs::read_to_string(dir.path().join("data/session/server.token")).unwrap().trim().to_owned();
    let output = {
        let (url, project_dir) = (server.url.clone(), project_dir.clone());
        tokio::task::spawn_blocking(move || {
            Command::new("node")
                .arg("sdk-v2.mjs")
                .current_dir(&sdk)
                .env("SESSION_URL", &url)
                .env("SESSION_TOKEN", &token)
                .env("PROJECT_DIR", &project_dir)
                .output()
                .unwrap_or_else(|error| panic!("cannot run node (it is required for this test): {error}"))
        })
        .await
        .unwrap()
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(summary["ok"], true, "{summary:#}");
    let document = opencode_document();
    // The check is live: a wrong type and a missing required field are both caught.
    assert!(!contract_problems(&document, "get", "/vcs", &json!({"branch": 5})).is_empty());
    let session_without_slug = json!({"id": "ses_1", "projectID": "p", "directory": "/w", "title": "t",
        "version": "1", "time": {"created": 1, "updated": 1}});
    assert!(!contract_problems(&document, "get", "/session/{sessionID}", &session_without_slug).is_empty());
    let calls = summary["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 48, "every call ran");
    let mut problems = Vec::new();
    for call in calls {
        let (method, path) = (call["method"].as_str().unwrap(), call["path"].as_str().unwrap());
        for problem in contract_problems(&document, method, path, &call["body"]) {
            problems.push(format!("{method} {path}: {problem}"));
        }
    }
    assert!(
        problems.is_empty(),
        "bodies that do not match OpenCode 1.18.34's schemas:\n{}",
        problems.join("\n")
    );
    // The prompt ran: its tool read the readme and the model answered.
    let reply =
        calls.iter().find(|c| c["path"] == "/session/{sessionID}/message" && c["method"] == "post").unwrap();
    assert_eq!(reply["body"]["parts"].as_array().unwrap().iter().filter(|p| p["type"] == "text").count(), 1);
    let renamed = calls.iter().rev().find(|c| c["path"] == "/session/{sessionID}").unwrap();
    assert_eq!(renamed["body"]["title"], "Renamed");
    assert!(renamed["body"]["tokens"]["input"].as_u64().unwrap_or_default() > 0, "{:#}", renamed["body"]);
    drop(server);
    provider.shutdown().await;
}
