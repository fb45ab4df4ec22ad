//! One backend's load run: N sessions created, prompted at once, followed to idle, read back.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use session_testkit::{SENT_US, TestServer};

use super::events::{Seen, follow_events, quantile, stamps, unstamped};
use super::serve::{create_database, drop_database, serve};
use super::{Backend, LoadOptions, LoadReport, READ_BACK_CONCURRENCY, own_cpu_s, script};
use crate::bench::load_average;

/// How many creates or prompts are in flight at once: enough that 10,000 prompts leave within
/// a second or two, few enough that the driver does not open a connection per session.
const SEND_CONCURRENCY: usize = 256;

/// Raises this process's open-file limit to its hard limit (the server inherits it): at 10,000
/// sessions the provider and the server each hold a socket per streaming session.
fn raise_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(error) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        eprintln!("load: could not raise the open-file limit from {soft} to {hard}: {error}");
    }
}

/// One backend's run: its own provider, server and database.
pub(crate) fn run(binary: &Path, backend: Backend, options: &LoadOptions) -> Result<LoadReport> {
    raise_open_files();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start the driver's runtime")?;
    runtime.block_on(async {
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(create_database(&options.pg_url).await?),
        };
        let result = drive(binary, backend, options, database.as_ref().map(|(url, _)| url.as_str())).await;
        if let Some((_, name)) = &database
            && let Err(error) = drop_database(&options.pg_url, name).await
        {
            eprintln!("load: could not drop database {name}: {error}");
        }
        result
    })
}

/// Answers of the driver's HTTP calls that were not 2xx, with the first few described.
#[derive(Debug, Default)]
struct Failures {
    count: usize,
    problems: Vec<String>,
}

impl Failures {
    fn add(&mut self, problem: String) {
        self.count += 1;
        if self.problems.len() < 10 {
            self.problems.push(problem);
        }
    }
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> Result<(u16, Value), String> {
    let request = http.post(&url).header("content-type", "application/json").body(body.to_string());
    let response = request.send().await.map_err(|error| format!("POST {url}: {error}"))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|error| format!("POST {url}: {error}"))?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
}

async fn drive(
    binary: &Path,
    backend: Backend,
    options: &LoadOptions,
    database: Option<&str>,
) -> Result<LoadReport> {
    let provider =
        TestServer::start(script(options.chunks, options.delay)?).await.context("start the test server")?;
    let mut served = serve(binary, &provider.url(), database)?;
    let http =
        reqwest::Client::builder().no_proxy().timeout(options.timeout).build().context("an HTTP client")?;
    let events =
        reqwest::Client::builder().no_proxy().build()?.get(format!("{}/event", served.url)).send().await?;
    if !events.status().is_success() {
        bail!("GET /event answered {}", events.status());
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let follower = tokio::spawn(follow_events(events, seen.clone()));
    // The stream is live once server.connected arrived.
    while seen.lock().unwrap_or_else(PoisonError::into_inner).events == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let load_before = load_average();
    let driver_cpu_before = own_cpu_s();
    let mut failures = Failures::default();

    let creates = (0..options.sessions).map(|index| {
        post(&http, format!("{}/session", served.url), json!({"title": format!("load {index}")}))
    });
    let mut sessions = Vec::new();
    let mut creates = futures_util::stream::iter(creates).buffer_unordered(SEND_CONCURRENCY);
    while let Some(answer) = creates.next().await {
        match answer {
            Ok((200, session)) => match session["id"].as_str() {
                Some(id) => sessions.push(id.to_owned()),
                None => failures.add(format!("POST /session answered no id: {session}")),
            },
            Ok((status, body)) => failures.add(format!("POST /session: {status} {body}")),
            Err(error) => failures.add(error),
        }
    }
    drop(creates);

    let started = Instant::now();
    let prompts = sessions.iter().map(|id| {
        let body = json!({"parts": [{"type": "text", "text": format!("Stream for {id}.")}]});
        post(&http, format!("{}/session/{id}/prompt_async", served.url), body)
    });
    let mut prompts = futures_util::stream::iter(prompts).buffer_unordered(SEND_CONCURRENCY);
    while let Some(answer) = prompts.next().await {
        match answer {
            Ok((status, _)) if (200..300).contains(&status) => {}
            Ok((status, body)) => failures.add(format!("prompt_async: {status} {body}")),
            Err(error) => failures.add(error),
        }
    }
    drop(prompts);
    let deadline = started + options.timeout;
    let mut wall = None;
    while Instant::now() < deadline {
        let idle = seen.lock().unwrap_or_else(PoisonError::into_inner).idle.len();
        if idle >= sessions.len() {
            wall = Some(started.elapsed());
            break;
        }
        if matches!(served.child.try_wait(), Ok(Some(_))) {
            failures.add(format!("session serve exited: {}", served.stderr_tail()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let wall = wall.unwrap_or_else(|| started.elapsed());
    let load_after = load_average();
    let peak_rss_mib = served.peak_rss_mib();
    let server_cpu_s = served.cpu_s();
    let driver_cpu_s = own_cpu_s() - driver_cpu_before;

    // Read every session back: the stored truth.
    let templates = format!("{SENT_US} ").repeat(options.chunks);
    let mut reads = futures_util::stream::iter(sessions.iter().map(|id| {
        let http = http.clone();
        let url = format!("{}/session/{id}/message", served.url);
        async move {
            let response = http.get(&url).send().await.map_err(|error| format!("GET {url}: {error}"))?;
            let status = response.status().as_u16();
            let text = response.text().await.map_err(|error| format!("GET {url}: {error}"))?;
            if status != 200 {
                return Err(format!("GET {url}: {status} {text}"));
            }
            serde_json::from_str::<Value>(&text).map_err(|error| format!("GET {url}: {error}"))
        }
    }))
    .buffered(READ_BACK_CONCURRENCY);
    let mut histories = Vec::new();
    while let Some(answer) = reads.next().await {
        match answer {
            Ok(history) => histories.push(history),
            Err(problem) => failures.add(problem),
        }
    }
    drop(reads);
    served.stop();
    follower.abort();
    let warnings = served.warnings();
    if let Some(logs) = &options.logs {
        let kept = logs.join(format!("load-{}.stderr", backend.name()));
        std::fs::copy(served.dir.path().join("serve.stderr"), &kept)
            .with_context(|| format!("keep the server's log as {}", kept.display()))?;
    }
    let requests = provider.requests();
    provider.shutdown().await;

    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    let mut problems = failures.problems.clone();
    let mut note = |problem: String| {
        if problems.len() < 10 {
            problems.push(problem);
        }
    };
    let (mut complete, mut lost_parts, mut unfinished, mut deltas_sent, mut delivered) = (0, 0, 0, 0, 0);
    for history in &histories {
        let messages = history.as_array().map_or(&[][..], Vec::as_slice);
        let assistant = messages.iter().rev().find(|m| m["info"]["role"] == "assistant");
        let Some(assistant) = assistant else {
            lost_parts += 1;
            note(format!("a session has no assistant message: {history}"));
            continue;
        };
        let info = &assistant["info"];
        let finished = info["time"]["completed"].is_u64() && info["error"].is_null();
        let text_part =
            assistant["parts"].as_array().and_then(|parts| parts.iter().find(|part| part["type"] == "text"));
        let text = text_part.and_then(|part| part["text"].as_str()).unwrap_or_default();
        let ended = text_part.is_some_and(|part| part["time"]["end"].is_u64());
        deltas_sent += stamps(text).count();
        if let Some(part_id) = text_part.and_then(|part| part["id"].as_str())
            && seen.part_text.get(part_id).is_some_and(|streamed| streamed == text)
        {
            delivered += 1;
        }
        let whole = unstamped(text) == templates && ended;
        if !whole {
            lost_parts += 1;
            note(format!("session {}: stored text {text:?}", info["sessionID"]));
        }
        if !finished {
            unfinished += 1;
            note(format!("session {}: assistant message not finished: {info}", info["sessionID"]));
        }
        if whole && finished {
            complete += 1;
        }
    }
    // A session whose history could not be read counts as lost.
    lost_parts += sessions.len().saturating_sub(histories.len());
    let provider_faults =
        requests.iter().filter(|r| r.status != Some(200) || !r.violations.is_empty()).count();
    for warning in warnings.iter().take(3) {
        note(format!("session serve: {warning}"));
    }
    for error in seen.errors.iter().take(3) {
        note(format!("session.error: {error}"));
    }
    if delivered < histories.len() {
        note(format!("{} of {} parts reached the event client whole", delivered, histories.len()));
    }
    let mut latencies = seen.latencies_us.clone();
    latencies.sort_by(f64::total_cmp);
    let ms = |us: f64| us / 1000.0;
    let mut command =
        format!("cargo xtask bench --load --sessions {} --db {}", options.sessions, backend.name());
    if options.chunks != LoadOptions::default().chunks || options.delay != LoadOptions::default().delay {
        let _ = write!(command, " --chunks {} --delay-ms {}", options.chunks, options.delay.as_millis());
    }
    Ok(LoadReport {
        backend,
        sessions: options.sessions,
        chunks: options.chunks,
        delay_ms: u64::try_from(options.delay.as_millis()).unwrap_or(u64::MAX),
        complete,
        lost_parts,
        unfinished,
        http_errors: failures.count,
        session_errors: seen.errors.len(),
        provider_requests: requests.len(),
        provider_faults,
        deltas_sent,
        deltas_received: latencies.len(),
        idle: seen.idle.len(),
        latency_p50_ms: ms(quantile(&latencies, 0.50)),
        latency_p99_ms: ms(quantile(&latencies, 0.99)),
        latency_max_ms: ms(latencies.last().copied().unwrap_or(0.0)),
        peak_rss_mib,
        wall_s: wall.as_secs_f64(),
        load: (load_before, load_after),
        server_warnings: warnings.len(),
        server_cpu_s,
        driver_cpu_s,
        problems,
        command,
    })
}
