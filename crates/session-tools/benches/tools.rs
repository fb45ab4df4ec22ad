//! `grep` and `glob` over a generated tree of 50,000 files (made in a temp dir at bench time),
//! beside `rg` when it is installed, the call tracker's cost per call, and what the command
//! sandbox adds to one `bash` call (`true` with the sandbox off, in `workspace-write`, and in
//! `workspace-write` with a read-only `.git` bind).
//!
//! Both searches are chosen to match fewer than 100 results, so every run walks the whole
//! tree (neither side stops early). The `rg` side is skipped, with a note, when `rg` is not
//! on the PATH.

#![expect(clippy::unwrap_used, reason = "a bench whose setup fails has nothing to measure")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, Throughput};
use serde_json::{Value, json};
use session_core::{JsonObject, MessageId, SessionId, permission::Action, permission::Rule};
use session_tools::{
    CallScope, CallTracker, PermissionEngine, ProgressSink, ReplyLater, Sandbox, SandboxMode,
    SandboxSettings, Tool, ToolContext, ToolError, ToolExecutor, ToolInvocation, ToolSuccess, ToolUpdate,
    Workspace, builtin_registry,
};
use tokio_util::sync::CancellationToken;

const TOP: usize = 50;
const MIDDLE: usize = 20;
const LEAVES: usize = 50;
const FILES: usize = TOP * MIDDLE * LEAVES;
const NEEDLE: &str = "NEEDLE_7f3a";

/// 50,000 small source files; one in 1,000 holds the needle, one in 1,250 is a `.toml`.
fn generate(root: &Path) {
    let mut n = 0usize;
    for top in 0..TOP {
        for middle in 0..MIDDLE {
            let dir = root.join(format!("pkg{top:02}/mod{middle:02}"));
            std::fs::create_dir_all(&dir).unwrap();
            for leaf in 0..LEAVES {
                n += 1;
                let (name, extra) = if n.is_multiple_of(1250) {
                    (format!("f{leaf:02}.toml"), String::new())
                } else if n.is_multiple_of(1000) {
                    (format!("f{leaf:02}.rs"), format!("    let marker = \"{NEEDLE}\";\n"))
                } else {
                    (format!("f{leaf:02}.rs"), String::new())
                };
                let body = format!(
                    "// file {n}\nuse std::collections::HashMap;\n\nfn item_{n}(map: &mut HashMap<u32, u32>) -> u32 {{\n{extra}    map.insert({n}, {n});\n    map.len() as u32\n}}\n"
                );
                std::fs::write(dir.join(name), body).unwrap();
            }
        }
    }
    std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
}

fn executor(root: &Path) -> Arc<ToolExecutor> {
    let mut registry = builtin_registry().unwrap();
    registry.register(Arc::new(Noop)).unwrap();
    let engine = Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    Arc::new(ToolExecutor::new(registry, Workspace::new(root).unwrap(), engine))
}

fn scope() -> CallScope {
    CallScope {
        session_id: SessionId::new_unchecked("ses_bench"),
        message_id: MessageId::new_unchecked("msg_bench"),
        agent: "build".into(),
        ruleset: Arc::new(vec![Rule::new("*", "*", Action::Allow)]),
        abort: CancellationToken::new(),
    }
}

fn call(tool: &str, input: Value) -> ToolInvocation {
    let Value::Object(input) = input else { unreachable!() };
    ToolInvocation { call_id: "c".into(), tool: tool.into(), input }
}

fn run_tool(rt: &tokio::runtime::Runtime, executor: &ToolExecutor, call: &ToolInvocation) -> ToolSuccess {
    rt.block_on(executor.run(call, &scope(), CancellationToken::new(), ProgressSink::none())).unwrap()
}

fn rg_available() -> bool {
    Command::new("rg").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn rg(args: &[&str], root: &Path) -> usize {
    let output = Command::new("rg").args(args).arg(root).output().unwrap();
    output.stdout.iter().filter(|&&b| b == b'\n').count()
}

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    }
    async fn execute(&self, _args: JsonObject, _ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        Ok(ToolSuccess::default())
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..7)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn search(c: &mut Criterion, root: &Path, rt: &tokio::runtime::Runtime) {
    let executor = executor(root);
    let grep = call("grep", json!({"pattern": NEEDLE}));
    let glob = call("glob", json!({"pattern": "*.toml"}));
    let grep_matches = run_tool(rt, &executor, &grep).metadata["matches"].clone();
    let glob_count = run_tool(rt, &executor, &glob).metadata["count"].clone();
    println!("tree: {FILES} files; grep finds {grep_matches} matches, glob {glob_count} files");

    let mut group = c.benchmark_group("search_50k_files");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    group.bench_function("grep_tool", |b| b.iter(|| run_tool(rt, &executor, &grep)));
    group.bench_function("glob_tool", |b| b.iter(|| run_tool(rt, &executor, &glob)));
    let with_rg = rg_available();
    if with_rg {
        group.bench_function("grep_rg", |b| b.iter(|| rg(&[NEEDLE], root)));
        group.bench_function("glob_rg", |b| b.iter(|| rg(&["--files", "--hidden", "-g", "*.toml"], root)));
    }
    group.finish();

    if with_rg {
        let tool_grep = time(|| {
            run_tool(rt, &executor, &grep);
        });
        let rg_grep = time(|| {
            rg(&[NEEDLE], root);
        });
        let tool_glob = time(|| {
            run_tool(rt, &executor, &glob);
        });
        let rg_glob = time(|| {
            rg(&["--files", "--hidden", "-g", "*.toml"], root);
        });
        println!(
            "ratio (median of 7): grep tool {tool_grep:?} vs rg {rg_grep:?} = {:.2}x; glob tool {tool_glob:?} vs rg {rg_glob:?} = {:.2}x",
            tool_grep.as_secs_f64() / rg_grep.as_secs_f64(),
            tool_glob.as_secs_f64() / rg_glob.as_secs_f64()
        );
    } else {
        println!("rg is not installed: the rg side of the search benchmark was skipped");
    }
}

fn tracker(c: &mut Criterion, root: &Path, rt: &tokio::runtime::Runtime) {
    let executor = executor(root);
    let scope = scope();
    let mut group = c.benchmark_group("tracker");
    const CALLS: usize = 1000;
    group.throughput(Throughput::Elements(CALLS as u64));
    group.bench_function("spawn_and_settle_sequential", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut tracker = CallTracker::new();
                for n in 0..CALLS {
                    let call = ToolInvocation { call_id: format!("c{n}"), ..call("noop", json!({"n": n})) };
                    tracker.spawn(executor.clone(), call, scope.clone());
                    while let Some(update) = tracker.next().await {
                        std::hint::black_box(update.into_input());
                    }
                }
            });
        });
    });
    group.bench_function("spawn_and_settle_100_concurrent", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut tracker = CallTracker::new();
                for batch in 0..CALLS / 100 {
                    for n in 0..100 {
                        let call = ToolInvocation {
                            call_id: format!("c{batch}_{n}"),
                            ..call("noop", json!({"n": n}))
                        };
                        tracker.spawn(executor.clone(), call, scope.clone());
                    }
                    while let Some(update) = tracker.next().await {
                        if let ToolUpdate::Finished(done) = update {
                            std::hint::black_box(done.into_event());
                        }
                    }
                }
            });
        });
    });
    group.finish();
}

fn sandbox(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let with_git = root.join("with-git");
    std::fs::create_dir_all(with_git.join(".git")).unwrap();
    let engine = || Arc::new(PermissionEngine::new(Arc::new(ReplyLater)));
    let executor = |root: &Path, mode: SandboxMode| {
        let settings = SandboxSettings { mode, ..SandboxSettings::default() };
        ToolExecutor::new(builtin_registry().unwrap(), Workspace::new(root).unwrap(), engine())
            .with_sandbox(Sandbox::new(settings))
    };
    let off = executor(&root, SandboxMode::Off);
    let confined = executor(&root, SandboxMode::WorkspaceWrite);
    let git = executor(&with_git, SandboxMode::WorkspaceWrite);
    let bash = call("bash", json!({"command": "true", "description": "Nothing"}));
    assert_eq!(run_tool(rt, &confined, &bash).metadata["sandbox"], json!("workspace-write"));
    let mut group = c.benchmark_group("bash_sandbox");
    group.sample_size(30).measurement_time(Duration::from_secs(8));
    group.bench_function("true_off", |b| b.iter(|| run_tool(rt, &off, &bash)));
    group.bench_function("true_workspace_write", |b| b.iter(|| run_tool(rt, &confined, &bash)));
    group.bench_function("true_workspace_write_git_bind", |b| b.iter(|| run_tool(rt, &git, &bash)));
    group.finish();
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let started = Instant::now();
    generate(&root);
    println!("generated {FILES} files in {:?}", started.elapsed());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut c = Criterion::default().configure_from_args();
    sandbox(&mut c, &rt);
    search(&mut c, &root, &rt);
    tracker(&mut c, &root, &rt);
    c.final_summary();
}
