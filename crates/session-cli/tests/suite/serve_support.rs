//! Helpers of the `session serve` tests: a project pointing at a scripted provider (the HTTP
//! client and the `/event` reader are session-testkit's).

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use session_cli::RuntimeSetup;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// A scripted provider on loopback.
pub async fn provider(script: &str) -> TestServer {
    TestServer::start(Script::from_json(script).unwrap()).await.unwrap()
}

/// A project folder with a config pointing provider `mock` at the provider.
pub fn project(dir: &Path, base_url: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n\nA tiny CLI.\n").unwrap();
    std::fs::write(dir.join("src/app.py"), "print('hello')\n").unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1\n").unwrap();
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

/// The runtime setup of a project under `root` (project in `root/project`, data in
/// `root/data`), with the default model `mock/m`.
pub fn setup(root: &Path, provider: &TestServer) -> RuntimeSetup {
    let cwd = root.join("project");
    project(&cwd, &provider.base_url(Api::OpenAiChat));
    RuntimeSetup {
        cwd,
        home: Some(root.to_path_buf()),
        data_dir: root.join("data"),
        env: HashMap::new(),
        model: Some("mock/m".into()),
        base_url: None,
        db: None,
        store_options: session_store::StoreOptions::default(),
    }
}
