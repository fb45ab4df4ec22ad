//! Helpers of the `session serve` tests: a project pointing at a scripted provider, JSON
//! requests, and a reader of the `/event` stream.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt as _;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use session_cli::RuntimeSetup;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// How long a test waits for an event before failing (a bound on hangs, not a speed check).
pub const PATIENCE: Duration = Duration::from_secs(60);

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

/// A JSON client of one server.
#[derive(Clone)]
pub struct Api2 {
    pub base: String,
    pub http: reqwest::Client,
    pub token: Option<String>,
}

impl Api2 {
    pub fn new(base: impl Into<String>) -> Self {
        Self { base: base.into(), http: reqwest::Client::new(), token: None }
    }

    /// Sends a request with an optional JSON body; returns the status and the JSON answer
    /// (`null` when empty).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.raw(method, path, body.map(|b| b.to_string())).await
    }

    /// Sends a request with a raw body.
    pub async fn raw(&self, method: &str, path: &str, body: Option<String>) -> (StatusCode, Value) {
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"))
        };
        (status, value)
    }

    /// Creates a session and returns its id.
    pub async fn session(&self) -> String {
        let (status, session) = self.call("post", "/session", Some(json!({"title": "test"}))).await;
        assert_eq!(status, StatusCode::OK, "{session}");
        session["id"].as_str().unwrap().to_owned()
    }

    /// Opens the event stream.
    pub async fn events(&self) -> Events {
        let mut request = self.http.get(format!("{}/event", self.base));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"),
            "{:?}",
            response.headers()
        );
        Events { stream: Box::pin(response.bytes_stream()), buffer: String::new(), seen: Vec::new() }
    }
}

type ByteStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// The `/event` stream of one client, parsed into `{"type", "properties"}` values.
pub struct Events {
    stream: ByteStream,
    buffer: String,
    /// Every event read so far, in order.
    pub seen: Vec<Value>,
}

impl Events {
    /// The next event (fails the test after [`PATIENCE`]).
    pub async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let chunk: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = chunk
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let event: Value = serde_json::from_str(&data.join("\n")).unwrap();
                self.seen.push(event.clone());
                return event;
            }
            let chunk = tokio::time::timeout(PATIENCE, self.stream.next())
                .await
                .unwrap_or_else(|_| panic!("no event in time; seen: {:#?}", self.types()))
                .expect("the event stream ended")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Reads until an event of `kind` for which `matches` holds, and returns it.
    pub async fn until(&mut self, kind: &str, matches: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self.next().await;
            if event["type"] == kind && matches(&event["properties"]) {
                return event;
            }
        }
    }

    /// The types seen so far.
    pub fn types(&self) -> Vec<String> {
        self.seen.iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
    }
}
