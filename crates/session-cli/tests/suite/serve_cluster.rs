//! Two `session serve` processes on one PostgreSQL database: a prompt sent to one runs once
//! and the other's event stream shows it; a permission reply and an abort sent to the other
//! reach the run; killing the running server lets the other take the session over once the
//! lease has expired.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Connection as _, PgConnection};

use session_testkit::{ApiClient, PATIENCE};

use super::serve_support::{project, provider};

/// Where PostgreSQL tests connect unless `SESSION_TEST_PG_URL` says otherwise.
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

fn pg_url() -> String {
    std::env::var("SESSION_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned())
}

/// A database of its own for one test, dropped at the end.
struct TestDatabase {
    name: String,
    url: String,
}

impl TestDatabase {
    async fn create(stem: &str) -> Self {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!("serve_{stem}_{}_{nanos}", std::process::id());
        let mut admin = PgConnection::connect(&pg_url()).await.unwrap();
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
        let base = pg_url();
        let root = base.rsplit_once('/').map_or(base.as_str(), |(root, _)| root).to_owned();
        Self { url: format!("{root}/{name}"), name }
    }

    async fn drop_it(self) {
        let mut admin = PgConnection::connect(&pg_url()).await.unwrap();
        let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        sqlx::query(AssertSqlSafe(drop)).execute(&mut admin).await.unwrap();
        admin.close().await.unwrap();
    }
}

/// A `session serve` child process.
struct Instance {
    child: Child,
    api: ApiClient,
}

impl Instance {
    /// Starts `session serve` in `root/project` with its own data folder, and waits for the
    /// address it prints.
    async fn start(root: &Path, name: &str, db: &str) -> Self {
        let binary = env!("CARGO_BIN_EXE_session");
        let mut child = Command::new(binary)
            .args(["serve", "--port", "0", "--db", db, "--model", "mock/m", "--lease-ttl-ms", "1500"])
            .current_dir(root.join("project"))
            .env("HOME", root)
            .env("XDG_DATA_HOME", root.join(format!("data-{name}")))
            .env_remove("SESSION_CONFIG")
            .env_remove("SESSION_SERVER_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let line = tokio::time::timeout(
            PATIENCE,
            tokio::task::spawn_blocking(move || {
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line).unwrap();
                line
            }),
        )
        .await
        .expect("the server did not start in time")
        .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Self { child, api: ApiClient::new(url) }
    }

    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent steps the provider answered (title requests of new sessions come on the side,
/// at their own pace).
fn main_requests(provider: &session_testkit::TestServer) -> usize {
    provider.requests().iter().filter(|r| r.kind == session_llm::RequestKind::Main).count()
}

fn prompt(text: &str) -> Value {
    json!({"parts": [{"type": "text", "text": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_share_sessions_runs_and_events() {
    let provider = provider(
        r#"{"turns": [
            {"text": "Hello from one server."},
            {"calls": [{"op": "read", "path": ".env"}]},
            {"text": "Read it."},
            {"calls": [{"op": "read", "path": ".env"}]},
            {"calls": [{"op": "read", "path": ".env"}]},
            {"text": "Taken over."}
        ]}"#,
    )
    .await;
    let db = TestDatabase::create("two").await;
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &provider.base_url(session_llm::Api::OpenAiChat));
    let mut a = Instance::start(dir.path(), "a", &db.url).await;
    let b = Instance::start(dir.path(), "b", &db.url).await;
    let mut b_events = b.api.events().await;
    assert_eq!(b_events.next().await["type"], "server.connected");

    // A session made on one server is served by the other.
    let id = a.api.session().await;
    let (status, read) = b.api.call("get", &format!("/session/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    b_events.until("session.created", |p| p["info"]["id"] == id.as_str()).await;

    // A prompt sent to A runs once, and B's stream carries its events.
    let (status, reply) = a.api.call("post", &format!("/session/{id}/message"), Some(prompt("hello"))).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(main_requests(&provider), 1);
    let done = b_events
        .until("message.part.updated", |p| {
            p["part"]["sessionID"] == id.as_str() && p["part"]["text"] == "Hello from one server."
        })
        .await;
    assert_eq!(done["properties"]["part"]["messageID"], reply["info"]["id"]);
    b_events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    for wanted in ["message.updated", "session.status"] {
        assert!(b_events.types().iter().any(|t| t == wanted), "{:?}", b_events.types());
    }
    let (_, messages) = b.api.call("get", &format!("/session/{id}/message"), None).await;
    assert_eq!(messages.as_array().unwrap().len(), 2);

    // A run in A waits for an answer; B sees the ask, and B's reply reaches A.
    let (status, _) =
        a.api.call("post", &format!("/session/{id}/prompt_async"), Some(prompt("read env"))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let asked = b_events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let permission = asked["properties"]["id"].as_str().unwrap().to_owned();
    // While A runs the session, B refuses to run it too.
    let (status, busy) = b.api.call("post", &format!("/session/{id}/message"), Some(prompt("me too"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{busy}");
    let (status, busy) =
        b.api.call("post", &format!("/session/{id}/prompt_async"), Some(prompt("me too"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{busy}");
    let (status, answer) = b
        .api
        .call("post", &format!("/session/{id}/permissions/{permission}"), Some(json!({"response": "once"})))
        .await;
    assert_eq!((status, answer), (StatusCode::OK, json!(true)));
    b_events.until("permission.replied", |p| p["requestID"] == permission.as_str()).await;
    b_events
        .until("message.part.updated", |p| {
            p["part"]["sessionID"] == id.as_str() && p["part"]["text"] == "Read it."
        })
        .await;
    b_events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    assert_eq!(main_requests(&provider), 3);

    // An abort sent to B stops the run in A.
    let (status, _) = a.api.call("post", &format!("/session/{id}/prompt_async"), Some(prompt("again"))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    b_events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    let (status, _) = b.api.call("post", &format!("/session/{id}/abort"), None).await;
    assert_eq!(status, StatusCode::OK);
    // Wait for the aborted message itself: a run publishes idle more than once (the
    // processor's cleanup, then the end of the run), so an idle seen here may be the last
    // run's second one.
    b_events
        .until("message.updated", |p| {
            p["sessionID"] == id.as_str() && p["info"]["error"]["name"] == "MessageAbortedError"
        })
        .await;
    b_events.until("session.idle", |p| p["sessionID"] == id.as_str()).await;
    let (_, messages) = b.api.call("get", &format!("/session/{id}/message"), None).await;
    let last = messages.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["info"]["error"]["name"], "MessageAbortedError", "{last}");
    assert_eq!(main_requests(&provider), 4);

    // A run in A waits for an answer when A dies; B takes the session over once the lease
    // has expired, and the dead run's tool call is closed as interrupted.
    let (status, _) =
        a.api.call("post", &format!("/session/{id}/prompt_async"), Some(prompt("once more"))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    b_events.until("permission.asked", |p| p["sessionID"] == id.as_str()).await;
    assert_eq!(main_requests(&provider), 5);
    a.kill();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let reply = loop {
        let (status, reply) =
            b.api.call("post", &format!("/session/{id}/message"), Some(prompt("take over"))).await;
        match status {
            StatusCode::OK => break reply,
            StatusCode::CONFLICT if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            other => panic!("{other}: {reply}"),
        }
    };
    let text: Vec<&str> = reply["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, ["Taken over."]);
    assert_eq!(main_requests(&provider), 6);
    let (_, messages) = b.api.call("get", &format!("/session/{id}/message"), None).await;
    let messages = messages.as_array().unwrap();
    let dead_run = &messages[messages.len() - 3];
    let tool = dead_run["parts"].as_array().unwrap().iter().find(|p| p["type"] == "tool").unwrap();
    assert_eq!(tool["state"]["status"], "error", "{tool}");
    provider.assert_invariants();

    drop(b);
    drop(a);
    provider.shutdown().await;
    db.drop_it().await;
}
