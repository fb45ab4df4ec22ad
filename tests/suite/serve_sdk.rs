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
    for file in ["package.json", "package-lock.json", "sdk-e2e.mjs"] {
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
