//! The crash test. A helper process writes a long scripted session through the store and is
//! killed with SIGKILL at random moments; after each kill the store reopens (recovering the
//! expired lease), every part and message the helper reported written is there, nothing is
//! left pending, running or unfinished, text streamed more than a flush interval before the
//! kill survived, and the next helper goes on writing.
//!
//! The helper is this test binary itself: each crash test starts itself again (`--exact` on
//! its own name) with an environment variable that makes it run [`crash_helper`] instead. No
//! second binary to build and link, and it always exists when the test runs.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rust_decimal::Decimal;
use serde_json::json;
use session_core::{FinishReason, Message, Part, PartKind, PartTime, SessionId, ToolState};
use session_store::{
    DatabaseConfig, NewSession, PartDelta, PgConfig, SqliteConfig, Store, StoreError, StoreOptions,
    WriteBatch,
};

use super::support::{Fx, Kind, TestDb, completed, pg_url, running};

/// Tells the helper test to run, and where: `sqlite:PATH` or `postgres:SCHEMA`.
const HELPER_ENV: &str = "SESSION_STORE_CRASH_HELPER";
const SESSION_ENV: &str = "SESSION_STORE_CRASH_SESSION";
/// Steps to write before exiting normally; absent writes until killed.
const STEPS_ENV: &str = "SESSION_STORE_CRASH_STEPS";
/// The helper's lease time-to-live in milliseconds; absent means [`LEASE_TTL`].
const TTL_ENV: &str = "SESSION_STORE_CRASH_TTL_MS";

const LEASE_TTL: Duration = Duration::from_millis(400);
/// A delta reported this long before the kill must have been flushed (flush interval 200 ms,
/// plus scheduling slack on a loaded 2-core machine).
const DELTA_GRACE_MS: u64 = 700;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn emit(line: String) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn is_open(part: &Part) -> bool {
    match &part.kind {
        PartKind::Tool(tool) => tool.state.is_open(),
        PartKind::Text(text) => text.time.is_some_and(|t| t.end.is_none()),
        PartKind::Reasoning(reasoning) => reasoning.time.end.is_none(),
        _ => false,
    }
}

fn text_of(part: &Part) -> Option<&str> {
    match &part.kind {
        PartKind::Text(text) => Some(&text.text),
        PartKind::Reasoning(reasoning) => Some(&reasoning.text),
        _ => None,
    }
}

/// The helper's part, when this process was started as a crash test's helper.
fn helper_target() -> Option<String> {
    std::env::var(HELPER_ENV).ok()
}

/// The helper: writes steps of a scripted session, reporting each acknowledged write.
async fn crash_helper(target: String) {
    let session = SessionId::new_unchecked(std::env::var(SESSION_ENV).unwrap());
    let steps: Option<usize> = std::env::var(STEPS_ENV).ok().map(|s| s.parse().unwrap());
    let config = match target.split_once(':') {
        Some(("sqlite", path)) => DatabaseConfig::Sqlite(SqliteConfig::new(path)),
        Some(("postgres", schema)) => DatabaseConfig::Postgres(PgConfig::new(pg_url()).with_schema(schema)),
        _ => panic!("bad {HELPER_ENV}: {target}"),
    };
    let ttl = std::env::var(TTL_ENV).ok().map_or(LEASE_TTL, |ms| Duration::from_millis(ms.parse().unwrap()));
    let options = StoreOptions { lease_ttl: ttl, ..StoreOptions::default() };
    let store = session_store::open(&config, options).await.unwrap();
    loop {
        match store.acquire_lease(&session).await {
            Ok(_) => break,
            Err(StoreError::Leased { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(error) => panic!("{error}"),
        }
    }
    let history = store.load_history(&session).await.unwrap();
    let mut step = history.messages.iter().filter(|m| matches!(m.info, Message::User(_))).count();
    emit(format!("READY {step}"));
    let mut written = 0;
    while steps.is_none_or(|limit| written < limit) {
        write_step(store.as_ref(), &session, step).await;
        step += 1;
        written += 1;
    }
    store.release_lease(&session).await.unwrap();
    store.close().await.unwrap();
    emit("DONE".to_owned());
}

async fn write_step(store: &dyn Store, session: &SessionId, step: usize) {
    let mut fx = Fx::new(session);
    let report_part = |part: &Part| emit(format!("P {}", serde_json::to_string(part).unwrap()));
    let report_message = |message: &Message| emit(format!("M {}", serde_json::to_string(message).unwrap()));

    let user = fx.user();
    let prompt = fx.text(user.id(), &format!("prompt {step}"), false);
    store.commit(&WriteBatch::new().message(user.clone()).part(prompt.clone())).await.unwrap();
    report_message(&user);
    report_part(&prompt);

    let mut answer = fx.assistant(user.id());
    store.upsert_message(&Message::Assistant(answer.clone())).await.unwrap();
    report_message(&Message::Assistant(answer.clone()));

    // The text streams for well over a flush interval, so kills land while it streams.
    for (kind, chunks) in [("reasoning", 15), ("text", 250)] {
        let mut part = match kind {
            "reasoning" => fx.reasoning(&answer.id, "", true),
            _ => fx.text(&answer.id, "", true),
        };
        store.upsert_part(&part).await.unwrap();
        report_part(&part);
        let mut full = String::new();
        for chunk in 0..chunks {
            let delta = format!("{kind}{step}.{chunk} ");
            full.push_str(&delta);
            store
                .append_delta(PartDelta {
                    session_id: session.clone(),
                    message_id: answer.id.clone(),
                    part_id: part.id.clone(),
                    field: "text".into(),
                    delta,
                })
                .await
                .unwrap();
            emit(format!("D {} {} {}", part.id, full.len(), now_ms()));
            tokio::time::sleep(Duration::from_millis(4)).await;
        }
        let end = Some(now_ms());
        match &mut part.kind {
            PartKind::Reasoning(r) => {
                r.text = full;
                r.time.end = end;
            }
            PartKind::Text(t) => {
                t.text = full;
                t.time = Some(PartTime { start: fx.now, end });
            }
            _ => {}
        }
        store.upsert_part(&part).await.unwrap();
        report_part(&part);
    }

    let input = json!({"command": format!("echo {step}")});
    let mut tool = fx.tool(&answer.id, &format!("call_{step}"), ToolState::pending());
    for state in
        [None, Some(running(input.clone(), now_ms())), Some(completed(input.clone(), "ok", now_ms()))]
    {
        if let (Some(state), PartKind::Tool(t)) = (state, &mut tool.kind) {
            t.state = state;
        }
        store.upsert_part(&tool).await.unwrap();
        report_part(&tool);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let finish = fx.step_finish(&answer.id, Decimal::new(15, 4));
    answer.cost = Decimal::new(15, 4);
    answer.tokens = session_core::TokenUsage { input: 100, output: 20, ..Default::default() };
    store
        .commit(&WriteBatch::new().message(Message::Assistant(answer.clone())).part(finish.clone()))
        .await
        .unwrap();
    report_part(&finish);
    report_message(&Message::Assistant(answer.clone()));

    answer.time.completed = Some(now_ms());
    answer.finish = Some(FinishReason::Stop);
    store.upsert_message(&Message::Assistant(answer.clone())).await.unwrap();
    report_message(&Message::Assistant(answer));
}

/// What a helper run reported before it died.
#[derive(Default)]
struct Reported {
    ready: bool,
    parts: HashMap<String, Part>,
    messages: HashMap<String, Message>,
    /// Part id, text length, when.
    deltas: Vec<(String, usize, u64)>,
    lines: usize,
}

fn parse(lines: &[String]) -> Reported {
    let mut reported = Reported::default();
    for line in lines {
        if let Some(json) = line.strip_prefix("P ") {
            // A line cut by the kill is not a report.
            if let Ok(part) = serde_json::from_str::<Part>(json) {
                reported.parts.insert(part.id.to_string(), part);
                reported.lines += 1;
            }
        } else if let Some(json) = line.strip_prefix("M ") {
            if let Ok(message) = serde_json::from_str::<Message>(json) {
                reported.messages.insert(message.id().to_string(), message);
                reported.lines += 1;
            }
        } else if let Some(rest) = line.strip_prefix("D ") {
            let fields: Vec<&str> = rest.split(' ').collect();
            if let [id, len, at] = fields[..]
                && let (Ok(len), Ok(at)) = (len.parse(), at.parse())
            {
                reported.deltas.push((id.to_owned(), len, at));
            }
        } else if line.contains("READY") {
            reported.ready = true;
        }
    }
    reported
}

/// A helper process that is killed when the test lets go of it, even when the test fails.
/// (Its libtest header shares a line with the first report, so markers are searched, not
/// matched at line start.)
struct Helper {
    child: Child,
    /// Reads the helper's reports until its end of the pipe.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Helper {
    /// SIGKILL, wait for the end, and for every report written before it to be read.
    fn kill(&mut self) {
        let _ = self.child.kill();
        self.wait();
    }

    /// Waits for the helper to exit and its reports to be read; true when it exited 0.
    fn wait(&mut self) -> bool {
        let success = self.child.wait().is_ok_and(|status| status.success());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        success
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the helper: the test named `test` (its full libtest path) in a child process.
fn spawn_helper(
    test: &str,
    db: &TestDb,
    session: &SessionId,
    steps: Option<usize>,
) -> (Helper, Arc<Mutex<Vec<String>>>) {
    spawn_helper_with(test, db, session, steps, None)
}

fn spawn_helper_with(
    test: &str,
    db: &TestDb,
    session: &SessionId,
    steps: Option<usize>,
    ttl: Option<Duration>,
) -> (Helper, Arc<Mutex<Vec<String>>>) {
    let target = match db.kind {
        Kind::Sqlite => format!("sqlite:{}", db.sqlite_path().display()),
        Kind::Postgres => format!("postgres:{}", db.schema()),
    };
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(HELPER_ENV, target)
        .env(SESSION_ENV, session.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if let Some(steps) = steps {
        command.env(STEPS_ENV, steps.to_string());
    }
    if let Some(ttl) = ttl {
        command.env(TTL_ENV, ttl.as_millis().to_string());
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Helper { child, reader: None };
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    child.reader = Some(std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => sink.lock().unwrap().push(line),
                Err(_) => break,
            }
        }
    }));
    (child, lines)
}

async fn wait_for(lines: &Arc<Mutex<Vec<String>>>, prefix: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if lines.lock().unwrap().iter().any(|l| l.contains(prefix)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Checks the reopened store against what the killed helper reported; returns how many
/// deltas of parts still streaming at the kill were old enough to be checked.
async fn verify(store: &dyn Store, session: &SessionId, reported: &Reported, killed_at: u64) -> usize {
    let history = store.load_history(session).await.unwrap();
    assert!(history.skipped.is_empty(), "{:?}", history.skipped);
    let mut parts: HashMap<String, Part> = HashMap::new();
    let mut messages: HashMap<String, Message> = HashMap::new();
    for message in &history.messages {
        if let Message::Assistant(info) = &message.info {
            assert!(info.time.completed.is_some(), "assistant {} left unfinished", info.id);
        }
        messages.insert(message.info.id().to_string(), message.info.clone());
        for part in &message.parts {
            assert!(!is_open(part), "part left open: {part:?}");
            parts.insert(part.id.to_string(), part.clone());
        }
    }
    for (id, sent) in &reported.parts {
        let stored = parts.get(id).unwrap_or_else(|| panic!("part {id} was reported written and is gone"));
        if !is_open(sent) {
            assert_eq!(stored, sent, "a finished part changed");
            continue;
        }
        match &sent.kind {
            PartKind::Tool(_) => {
                let tool = stored.as_tool().unwrap();
                assert!(
                    tool.state.is_interrupted() || tool.state.status() == session_core::ToolStatus::Completed,
                    "{stored:?}"
                );
            }
            _ => {
                let (before, after) = (text_of(sent).unwrap(), text_of(stored).unwrap());
                assert!(after.starts_with(before), "streamed text went backwards: {before:?} -> {after:?}");
            }
        }
    }
    for (id, sent) in &reported.messages {
        let stored =
            messages.get(id).unwrap_or_else(|| panic!("message {id} was reported written and is gone"));
        match sent {
            Message::Assistant(a) if a.time.completed.is_none() => {}
            _ => assert_eq!(stored, sent, "a finished message changed"),
        }
    }
    // Deltas of parts still streaming at the kill: only the periodic flush can have saved them.
    let mut checked = 0;
    for (id, len, at) in &reported.deltas {
        let streaming = reported.parts.get(id).is_some_and(is_open);
        if streaming && at + DELTA_GRACE_MS <= killed_at {
            let stored = parts.get(id).unwrap_or_else(|| panic!("streaming part {id} is gone"));
            let text = text_of(stored).unwrap();
            assert!(text.len() >= *len, "part {id} lost text streamed {}ms before the kill", killed_at - at);
            checked += 1;
        }
    }
    checked
}

async fn crash_cycles(test: &str, db: &TestDb, kills: usize) {
    let store = db.open().await;
    let session = store.create_session(NewSession::new("p1", "/crash")).await.unwrap().id;
    store.close().await.unwrap();
    let mut seed = now_ms() | 1;
    eprintln!("crash test on {:?}: seed {seed}", db.kind);
    let mut random = move |low: u64, high: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        low + seed % (high - low)
    };
    let (mut checked_deltas, mut reports) = (0, 0);
    for round in 0..kills {
        let (mut child, lines) = spawn_helper(test, db, &session, None);
        assert!(
            wait_for(&lines, "READY", Duration::from_secs(60)).await,
            "round {round}: the helper did not start: {:?}",
            lines.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(random(20, 1800))).await;
        let killed_at = now_ms();
        child.kill();
        let reported = parse(&lines.lock().unwrap());
        assert!(reported.ready);
        reports += reported.lines;
        // The dead helper's lease expires; opening the store recovers the session.
        tokio::time::sleep(LEASE_TTL + Duration::from_millis(150)).await;
        let reopened = db.open().await;
        checked_deltas += verify(reopened.as_ref(), &session, &reported, killed_at).await;
        reopened.close().await.unwrap();
    }
    // Writing goes on after the last kill: a helper finishes two more steps and exits.
    let (child, lines) = spawn_helper(test, db, &session, Some(2));
    let success = tokio::task::spawn_blocking(move || {
        let mut child = child;
        child.wait()
    })
    .await
    .unwrap();
    assert!(success, "the last helper failed");
    assert!(lines.lock().unwrap().iter().any(|l| l.contains("DONE")));
    let reported = parse(&lines.lock().unwrap());
    let store = db.open().await;
    verify(store.as_ref(), &session, &reported, 0).await;
    let history = store.load_history(&session).await.unwrap();
    let users = history.messages.iter().filter(|m| matches!(m.info, Message::User(_))).count();
    eprintln!(
        "crash test on {:?}: {kills} kills, {reports} writes reported and found, {checked_deltas} deltas checked, \
         {users} steps, {} parts",
        db.kind,
        history.messages.iter().map(|m| m.parts.len()).sum::<usize>()
    );
    assert!(users >= 2 && reports > kills, "the helpers made progress");
    assert!(checked_deltas > 0, "some kills landed while text streamed");
    assert_eq!(store.lease(&session).await.unwrap(), None);
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_sigkill() {
    if let Some(target) = helper_target() {
        return crash_helper(target).await;
    }
    let db = TestDb::new(Kind::Sqlite, "crash").await;
    crash_cycles("suite::crash::sqlite_survives_sigkill", &db, 24).await;
    db.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_sigkill() {
    if let Some(target) = helper_target() {
        return crash_helper(target).await;
    }
    let db = TestDb::new(Kind::Postgres, "crash").await;
    crash_cycles("suite::crash::postgres_survives_sigkill", &db, 20).await;
    db.finish().await;
}

/// A run killed on this machine frees its session at once: the next store to open sees that
/// the lease's owner is dead and recovers the session without waiting out the lease's 60 s.
#[cfg(target_os = "linux")]
async fn a_killed_local_owner_is_recovered_without_waiting(test: &str, db: &TestDb) {
    let store = db.open().await;
    let session = store.create_session(NewSession::new("p1", "/crash")).await.unwrap().id;
    store.close().await.unwrap();
    let (mut child, lines) = spawn_helper_with(test, db, &session, None, Some(Duration::from_secs(60)));
    assert!(wait_for(&lines, "P ", Duration::from_secs(60)).await, "{:?}", lines.lock().unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed_at = now_ms();
    child.kill();
    let reported = parse(&lines.lock().unwrap());
    // Opened at once, with the default 30 s time-to-live: nothing has expired.
    let reopened = db.open_with(StoreOptions::default()).await;
    assert_eq!(reopened.lease(&session).await.unwrap(), None, "a dead owner holds no lease");
    verify(reopened.as_ref(), &session, &reported, killed_at).await;
    assert_eq!(reopened.acquire_lease(&session).await.unwrap().owner, reopened.owner());
    reopened.release_lease(&session).await.unwrap();
    reopened.close().await.unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_local_owner_is_recovered_without_waiting_on_sqlite() {
    if let Some(target) = helper_target() {
        return crash_helper(target).await;
    }
    let db = TestDb::new(Kind::Sqlite, "crash_dead_owner").await;
    let test = "suite::crash::a_killed_local_owner_is_recovered_without_waiting_on_sqlite";
    a_killed_local_owner_is_recovered_without_waiting(test, &db).await;
    db.finish().await;
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_local_owner_is_recovered_without_waiting_on_postgres() {
    if let Some(target) = helper_target() {
        return crash_helper(target).await;
    }
    let db = TestDb::new(Kind::Postgres, "crash_dead_owner").await;
    let test = "suite::crash::a_killed_local_owner_is_recovered_without_waiting_on_postgres";
    a_killed_local_owner_is_recovered_without_waiting(test, &db).await;
    db.finish().await;
}
