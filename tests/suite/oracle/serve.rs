//! One case through one agent's HTTP server: `opencode serve` or `session serve` started with
//! the same home, env and config as `run`, then `POST /session`, `POST /session/{id}/message`
//! and maybe `POST /session/{id}/revert`, then the session exported as for `run`. Both servers
//! answer loopback callers without a token when none is configured.

use std::io::{Read as _, Seek as _};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::agents::Runner;
use super::cases::ServeSteps;

/// How long a server may take to answer its first request (OpenCode starts in seconds).
const START: Duration = Duration::from_secs(60);

/// How long one request of a case may take (a whole scripted run answers in seconds): a server
/// that hangs fails the case with its standard error instead of hanging the suite.
const REQUEST: Duration = Duration::from_secs(120);

/// A server child, killed when dropped however the case ends.
struct Server {
    child: Child,
    stderr: std::fs::File,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn stderr(&mut self) -> String {
        let mut text = String::new();
        let _ = self.stderr.rewind();
        let _ = self.stderr.read_to_string(&mut text);
        text
    }
}

/// Runs `steps` with `prompt` through `runner`'s server: the JSON of each response (with its
/// HTTP status), the exported session and the servers' standard error.
pub(crate) async fn drive(runner: &Runner, prompt: &str, steps: &ServeSteps) -> (Vec<Value>, Value, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let stderr = tempfile::tempfile().unwrap();
    let mut command = runner.command();
    command
        .args(["serve", "--port", &port.to_string(), "--hostname", "127.0.0.1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr.try_clone().unwrap());
    let mut server = Server { child: command.spawn().unwrap(), stderr };
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().timeout(REQUEST).build().unwrap();
    let started = Instant::now();
    // A short deadline per probe: a connection accepted while the server still starts may
    // never be answered.
    let probe = |client: &reqwest::Client| {
        client.get(format!("{url}/session")).timeout(Duration::from_secs(2)).send()
    };
    while probe(&client).await.is_err() {
        assert!(started.elapsed() < START, "{:?} serve did not start: {}", runner.agent, server.stderr());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let post = |path: String, body: Value| {
        let request = client
            .post(format!("{url}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string());
        async move {
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) => return json!({"status": 0, "body": format!("no answer: {error}")}),
            };
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            let body = serde_json::from_str(&text).unwrap_or(Value::from(text));
            json!({"status": status, "body": body})
        }
    };
    let created = post("/session".to_owned(), json!({})).await;
    let id = created["body"]["id"].as_str().unwrap_or_default().to_owned();
    let mut message = json!({"parts": [{"type": "text", "text": prompt}]});
    if let (Some(body), Some(extra)) = (message.as_object_mut(), steps.message.as_object()) {
        body.extend(extra.clone());
    }
    let answered = post(format!("/session/{id}/message"), message).await;
    let mut printed = vec![answered.clone()];
    if steps.revert {
        let user = answered["body"]["info"]["parentID"].clone();
        printed.push(post(format!("/session/{id}/revert"), json!({"messageID": user})).await);
    }

    let mut log = String::new();
    let stored = if id.is_empty() {
        log.push_str(&format!("[{:?} serve] no session: {created}\n", runner.agent));
        Value::Null
    } else {
        tokio::task::block_in_place(|| runner.export(&id, &mut log))
    };
    let _ = server.child.kill();
    let _ = server.child.wait();
    log.push_str(&format!("[{:?} serve]\n{}\n", runner.agent, server.stderr()));
    (printed, stored, log)
}
