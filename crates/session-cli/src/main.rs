//! The `session` binary.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use session_llm::Api;

mod tui;

/// The agent session runtime on the command line.
#[derive(Debug, Parser)]
#[command(name = "session", version, about, propagate_version = true)]
struct Cli {
    /// Log level of the diagnostics written to stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogLevel::Warn)]
    log_level: LogLevel,
    /// Append the diagnostics to this file instead of stderr (never stdout).
    #[arg(long, global = true, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// Colour the diagnostics: auto (a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, default_value_t = session_cli::ColorChoice::Auto)]
    color: session_cli::ColorChoice,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Opens the interactive terminal UI (what `session` alone does on a terminal).
    Tui(tui::TuiArgs),
    /// Runs the whole runtime offline: a scripted model, real tools in a temporary project,
    /// the embedded SQLite store.
    Demo {
        /// Output format: readable text, or the bus events as JSON lines.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Keep the temporary project and database instead of deleting them.
        #[arg(long)]
        keep: bool,
    },
    /// Runs one prompt against a real provider, streaming to the terminal.
    Run {
        /// The prompt, its words joined by spaces (read from stdin when absent); with
        /// --command, the command's arguments.
        prompt: Vec<String>,
        /// The model, as provider/model.
        #[arg(long, short)]
        model: Option<String>,
        /// The agent (default: the config's default_agent, else build).
        #[arg(long)]
        agent: Option<String>,
        /// Run this command (`command.<name>` or a markdown command) with the prompt words as
        /// its arguments.
        #[arg(long)]
        command: Option<String>,
        /// The model variant (reasoning effort), such as high; for reasoning models.
        #[arg(long)]
        variant: Option<String>,
        /// Continue this session.
        #[arg(long)]
        session: Option<String>,
        /// Continue the latest session of this folder.
        #[arg(long = "continue", short = 'c', conflicts_with = "session")]
        continue_latest: bool,
        /// Continue a copy of the session (--session or --continue), leaving it as it was.
        #[arg(long)]
        fork: bool,
        /// The session's title (else one is generated from the first prompt).
        #[arg(long)]
        title: Option<String>,
        /// Attach a file to the prompt: text is inlined, images and PDFs are sent as files
        /// (repeatable).
        #[arg(long = "file", short = 'f', value_name = "PATH")]
        files: Vec<PathBuf>,
        /// Send the model's provider requests to this base URL (a local server, a proxy).
        #[arg(long)]
        base_url: Option<String>,
        /// PostgreSQL URL of the session database (default: the embedded SQLite file).
        #[arg(long)]
        db: Option<String>,
        /// Output format: readable text; json, the JSON lines of `opencode run --format json`
        /// (step_start, text, reasoning, tool_use, step_finish, error); or events, every bus
        /// event as a JSON line.
        #[arg(long, value_enum, default_value_t = RunFormatArg::Text)]
        format: RunFormatArg,
        /// Include the model's reasoning in --format json (reasoning lines, as OpenCode's
        /// --thinking; the text format always shows it).
        #[arg(long)]
        thinking: bool,
        /// Answer permission asks "once" without asking.
        #[arg(long, conflicts_with = "deny")]
        yes: bool,
        /// Reject permission asks without asking.
        #[arg(long)]
        deny: bool,
    },
    /// Lists, shows, exports, imports, deletes, reverts or unreverts stored sessions.
    Sessions {
        /// PostgreSQL URL of the session database (default: the embedded SQLite file).
        #[arg(long, global = true)]
        db: Option<String>,
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Serves the HTTP API OpenCode's clients speak (sessions, prompts, events).
    Serve(ServeArgs),
    /// Trusts a project folder (its git root), so its session.json applies in full: provider
    /// endpoints, keys and headers, allow rules, the database. Untrusted folders' configs are
    /// applied without those.
    Trust {
        /// The folder (default: the current one).
        path: Option<PathBuf>,
        /// Stop trusting the folder instead.
        #[arg(long, conflicts_with = "list")]
        remove: bool,
        /// Print the trusted folders.
        #[arg(long)]
        list: bool,
    },
    /// Lists the skills the model is offered (`list`): where each came from, the files skipped.
    Skills(session_cli::skills::SkillsArgs),
    /// Lists the configured MCP servers (state, tools, last error) or calls one tool.
    Mcp {
        #[command(subcommand)]
        action: session_cli::mcp::McpAction,
    },
    /// The command sandbox (Landlock and seccomp): `check` prints what the kernel supports
    /// and what the current config would do.
    Sandbox {
        #[command(subcommand)]
        action: session_cli::sandbox::SandboxAction,
    },
    /// Lists the models `session run` can use: the catalog with your config laid over it, the
    /// local servers' presets, and (marked) the providers `run` cannot call.
    Models {
        /// Only this provider's models.
        #[arg(long)]
        provider: Option<String>,
    },
    /// Prints the shell completion script for bash, zsh, fish or powershell (elvish too).
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Prints the man page (roff); `cargo xtask release` puts it in the archive.
    #[command(hide = true)]
    Man,
    /// Sessions, tokens and cost per model and per day, from the store.
    Stats {
        /// PostgreSQL URL of the session database (default: the embedded SQLite file).
        #[arg(long)]
        db: Option<String>,
    },
    /// Checks the configuration: the files `run` reads, where each key came from, every warning.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Replays a recorded provider stream through the adapter and the processor (no tools run).
    Replay {
        /// The wire format of the recording.
        #[arg(long, value_enum)]
        api: ApiArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The model to price the steps with, as provider/model (unknown: cost 0).
        #[arg(long)]
        model: Option<String>,
        /// The recorded SSE body.
        file: PathBuf,
    },
}

/// Flags of `session serve`.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// The port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 4096)]
    port: u16,
    /// The address to bind; anything but loopback requires a token.
    #[arg(long, default_value = "127.0.0.1")]
    hostname: String,
    /// The token every request must carry (default: $SESSION_SERVER_TOKEN, else
    /// $OPENCODE_SERVER_PASSWORD; without either, on loopback, the one in the data folder's
    /// server.token, which requests on loopback may leave out).
    #[arg(long)]
    token: Option<String>,
    /// Refuse requests without the token even on loopback.
    #[arg(long)]
    require_token: bool,
    /// A browser origin allowed to send requests: scheme, host and port as a browser sends
    /// them in Origin (repeatable; added to the configuration's server.cors).
    #[arg(long = "cors", value_name = "ORIGIN")]
    cors: Vec<String>,
    /// PostgreSQL URL of the session database (default: the embedded SQLite file); several
    /// servers on one PostgreSQL database serve the same sessions.
    #[arg(long)]
    db: Option<String>,
    /// The default model, as provider/model (prompts may name another).
    #[arg(long, short)]
    model: Option<String>,
    /// Send the default model's provider requests to this base URL.
    #[arg(long)]
    base_url: Option<String>,
    /// How long a running session's lease lasts without a heartbeat, in milliseconds; after a
    /// server dies, another takes its sessions over once this has passed.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    lease_ttl_ms: u64,
    #[command(flatten)]
    limits: session_cli::serve::LimitArgs,
}

#[derive(Debug, Subcommand)]
enum SessionsAction {
    /// Lists sessions, newest first.
    List,
    /// Shows a session's messages.
    Show {
        /// Session id.
        id: String,
    },
    /// Writes a session as one JSON document to stdout.
    Export {
        /// Session id.
        id: String,
    },
    /// Stores a session from an exported JSON document.
    Import {
        /// The exported file.
        file: PathBuf,
    },
    /// Deletes a session and everything under it.
    Delete {
        /// Session id.
        id: String,
    },
    /// Takes back the file changes the session made after a message (git worktrees only).
    Revert {
        /// Session id.
        id: String,
        /// The message to revert to: its changes and everything after it are undone.
        message: String,
        /// Revert from this part of the message instead of the whole message.
        #[arg(long)]
        part: Option<String>,
    },
    /// Undoes the session's pending revert.
    Unrevert {
        /// Session id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Loads the layers; prints each file, each key's origin and every warning; fails on an error.
    Check,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ApiArg {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl From<ApiArg> for Api {
    fn from(value: ApiArg) -> Self {
        match value {
            ApiArg::OpenaiChat => Api::OpenAiChat,
            ApiArg::OpenaiResponses => Api::OpenAiResponses,
            ApiArg::Anthropic => Api::Anthropic,
            ApiArg::Gemini => Api::Gemini,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// `session run --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RunFormatArg {
    Text,
    Json,
    Events,
}

impl From<RunFormatArg> for session_cli::RunFormat {
    fn from(value: RunFormatArg) -> Self {
        match value {
            RunFormatArg::Text => Self::Text,
            RunFormatArg::Json => Self::Json,
            RunFormatArg::Events => Self::Events,
        }
    }
}

fn main() -> ExitCode {
    // First, before any thread: the environment this process was started with (provider keys
    // among it) must not be readable back through /proc/<pid>/environ by the commands it runs.
    if let Err(error) = session_tools::sandbox::guard_runtime_process() {
        eprintln!("session: cannot make the process non-dumpable: {error}");
        return ExitCode::FAILURE;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let level = match cli.log_level {
        LogLevel::Error => tracing::Level::ERROR,
        LogLevel::Warn => tracing::Level::WARN,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Debug => tracing::Level::DEBUG,
        LogLevel::Trace => tracing::Level::TRACE,
    };
    use std::io::IsTerminal as _;
    let log_file = cli
        .log_file
        .clone()
        .or_else(|| tui::default_log_file(matches!(cli.command, None | Some(Command::Tui(_)))));
    match &log_file {
        Some(path) => {
            let opened = path
                .parent()
                .filter(|dir| !dir.as_os_str().is_empty())
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(path));
            match opened {
                Ok(file) => tracing_subscriber::fmt()
                    .with_max_level(level)
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .init(),
                Err(error) => {
                    eprintln!("session: cannot open the log file {}: {error}", path.display());
                    return ExitCode::from(2);
                }
            }
        }
        None => tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(cli.color.enabled(
                session_cli::process_env::vars().get("NO_COLOR").map(String::as_str),
                std::io::stderr().is_terminal(),
            ))
            .with_writer(std::io::stderr)
            .init(),
    }
    let command = cli.command.unwrap_or_else(|| Command::Tui(tui::TuiArgs::default()));
    match run(command) {
        Ok(code) => code,
        Err(error) => {
            // A closed stdout (`session demo | head`) is the reader's choice, not a failure.
            let broken_pipe = error.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("session: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The setup of a command in the working directory, from the process environment.
fn setup_here(db: Option<String>) -> Result<session_cli::RuntimeSetup> {
    let env = session_cli::process_env::vars().clone();
    let home = env.get("HOME").map(PathBuf::from);
    Ok(session_cli::RuntimeSetup {
        cwd: std::env::current_dir().context("cannot read the working directory")?,
        data_dir: session_cli::process_env::data_dir(&env, home.as_deref())?,
        home,
        env,
        model: None,
        base_url: None,
        db,
        store_options: session_store::StoreOptions::default(),
    })
}

fn async_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The runtime of `session run`: one thread. A run is one session's loop; on worker threads
/// every store reply and stream chunk woke another thread (most of a run's CPU was
/// the kernel's futex and scheduler work of those hand-offs). Blocking work still goes to
/// tokio's blocking pool and the store's own threads.
fn run_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Tui(args) => tui::run(args, || {
            use clap::CommandFactory as _;
            let _ = Cli::command().print_help();
        }),
        Command::Run {
            prompt,
            model,
            agent,
            command,
            variant,
            session,
            continue_latest,
            fork,
            title,
            files,
            base_url,
            db,
            format,
            thinking,
            yes,
            deny,
        } => {
            use std::io::{IsTerminal as _, Read as _};
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            let prompt = match prompt.is_empty() {
                false => prompt.join(" "),
                // A command's arguments may be none.
                true if command.is_some() => String::new(),
                true if !std::io::stdin().is_terminal() => {
                    let mut text = String::new();
                    std::io::stdin().read_to_string(&mut text).context("reading the prompt from stdin")?;
                    text
                }
                true => anyhow::bail!("no prompt: pass it as an argument or on stdin"),
            };
            if prompt.trim().is_empty() && command.is_none() {
                anyhow::bail!("the prompt is empty");
            }
            let env = session_cli::process_env::vars().clone();
            let home = env.get("HOME").map(PathBuf::from);
            let ask = if yes {
                session_cli::AskMode::Yes
            } else if deny {
                session_cli::AskMode::Deny
            } else if interactive {
                session_cli::AskMode::Terminal
            } else {
                session_cli::AskMode::Fail
            };
            let options = session_cli::RunOptions {
                prompt,
                model,
                agent,
                command,
                variant,
                session,
                continue_latest,
                fork,
                title,
                files,
                base_url,
                db,
                format: format.into(),
                thinking,
                ask,
                status_line: std::io::stderr().is_terminal(),
                questions: interactive,
                cwd: std::env::current_dir().context("cannot read the working directory")?,
                data_dir: session_cli::process_env::data_dir(&env, home.as_deref())?,
                home,
                env,
            };
            let code = run_runtime()?.block_on(session_cli::run_prompt(options, std::io::stdout()))?;
            Ok(ExitCode::from(code))
        }
        Command::Sessions { db, action } => {
            let env = session_cli::process_env::vars().clone();
            let home = env.get("HOME").map(PathBuf::from);
            let data = session_cli::process_env::data_dir(&env, home.as_deref())?;
            std::fs::create_dir_all(&data).with_context(|| format!("cannot create {}", data.display()))?;
            async_runtime()?.block_on(async move {
                let store = session_cli::open_store(db.as_deref(), &data).await?;
                let mut stdout = std::io::stdout().lock();
                match action {
                    SessionsAction::List => session_cli::sessions::list(store.as_ref(), &mut stdout).await?,
                    SessionsAction::Show { id } => {
                        session_cli::sessions::show(store.as_ref(), &data, &id, &mut stdout).await?
                    }
                    SessionsAction::Export { id } => {
                        session_cli::sessions::export(store.as_ref(), &id, &mut stdout).await?;
                    }
                    SessionsAction::Import { file } => {
                        let id = session_cli::sessions::import(store.as_ref(), &file).await?;
                        writeln!(stdout, "{id}")?;
                    }
                    SessionsAction::Delete { id } => {
                        for deleted in session_cli::sessions::delete(store.as_ref(), &id).await? {
                            writeln!(stdout, "deleted {deleted}")?;
                        }
                    }
                    SessionsAction::Revert { id, message, part } => {
                        let store = store.clone();
                        let cwd = std::env::current_dir().context("cannot read the working directory")?;
                        session_cli::sessions::revert(
                            store,
                            &data,
                            &cwd,
                            &id,
                            &message,
                            part.as_deref(),
                            &mut stdout,
                        )
                        .await?;
                    }
                    SessionsAction::Unrevert { id } => {
                        let cwd = std::env::current_dir().context("cannot read the working directory")?;
                        session_cli::sessions::unrevert(store.clone(), &data, &cwd, &id, &mut stdout).await?;
                    }
                }
                store.close().await?;
                anyhow::Ok(ExitCode::SUCCESS)
            })
        }
        Command::Serve(args) => {
            let env = session_cli::process_env::vars().clone();
            let home = env.get("HOME").map(PathBuf::from);
            let from_env = |name: &str| env.get(name).filter(|value| !value.trim().is_empty()).cloned();
            let token = args
                .token
                .or_else(|| from_env(session_cli::serve::TOKEN_ENV))
                .or_else(|| from_env(session_cli::serve::OPENCODE_PASSWORD_ENV));
            let store_options = session_store::StoreOptions {
                lease_ttl: std::time::Duration::from_millis(args.lease_ttl_ms),
                ..session_store::StoreOptions::default()
            };
            let setup = session_cli::RuntimeSetup {
                cwd: std::env::current_dir().context("cannot read the working directory")?,
                data_dir: session_cli::process_env::data_dir(&env, home.as_deref())?,
                home,
                env,
                model: args.model,
                base_url: args.base_url,
                db: args.db,
                store_options,
            };
            let options = session_cli::serve::ServeOptions {
                setup,
                hostname: args.hostname,
                port: args.port,
                token,
                require_token: args.require_token,
                cors: args.cors,
                limits: args.limits.limits(),
            };
            async_runtime()?.block_on(session_cli::serve::serve(options))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Trust { path, remove, list } => {
            let env = session_cli::process_env::vars().clone();
            let home = env.get("HOME").map(PathBuf::from);
            let here = || std::env::current_dir().context("cannot read the working directory");
            let folder = path.map_or_else(here, Ok)?;
            let action = if list {
                session_cli::trust::TrustAction::List
            } else if remove {
                session_cli::trust::TrustAction::Remove(folder)
            } else {
                session_cli::trust::TrustAction::Add(folder)
            };
            session_cli::trust::trust(&action, &env, home.as_deref(), &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Skills(args) => {
            session_cli::skills::main(&setup_here(None)?, args, &mut std::io::stdout().lock())
        }
        Command::Mcp { action } => {
            let setup = setup_here(None)?;
            async_runtime()?.block_on(session_cli::mcp::main(&setup, action, std::io::stdout().lock()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sandbox { action: session_cli::sandbox::SandboxAction::Check } => {
            let env = session_cli::process_env::vars().clone();
            let home = env.get("HOME").map(PathBuf::from);
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            session_cli::sandbox::check(&cwd, &env, home.as_deref(), &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Models { provider } => {
            let setup = setup_here(None)?;
            session_cli::models::list(&setup, provider.as_deref(), &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completion { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(shell, &mut Cli::command(), "session", &mut std::io::stdout().lock());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            use clap::CommandFactory as _;
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { db } => {
            let setup = setup_here(db)?;
            std::fs::create_dir_all(&setup.data_dir)
                .with_context(|| format!("cannot create {}", setup.data_dir.display()))?;
            async_runtime()?.block_on(async move {
                let store = session_cli::open_store(setup.db.as_deref(), &setup.data_dir).await?;
                session_cli::stats::stats(store.as_ref(), &mut std::io::stdout().lock()).await?;
                store.close().await?;
                anyhow::Ok(ExitCode::SUCCESS)
            })
        }
        Command::Config { action: ConfigAction::Check } => {
            let setup = setup_here(None)?;
            session_cli::config_check::check(&setup, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { format, keep } => {
            let dir = tempfile::Builder::new()
                .prefix("session-demo-")
                .tempdir()
                .context("creating a temporary folder")?;
            let format = match format {
                Format::Text => session_cli::OutputFormat::Text,
                Format::Json => session_cli::OutputFormat::Json,
            };
            let result =
                async_runtime()?.block_on(session_cli::run_demo(dir.path(), format, std::io::stdout()));
            if keep {
                let kept = dir.keep();
                eprintln!("session: kept the demo project and database in {}", kept.display());
            }
            result?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay { api, format, model, file } => {
            let body = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let model = match model {
                Some(reference) => session_cli::replay_model(&reference)?,
                None => None,
            };
            let entropy = Box::new(session_runtime::clock::random_entropy(0));
            let output = session_cli::replay(
                api.into(),
                &body,
                model.as_ref(),
                &mut || session_runtime::clock::Clock::now_ms(&session_runtime::clock::SystemClock),
                entropy,
            );
            let mut stdout = std::io::stdout().lock();
            match format {
                Format::Json => {
                    for event in output.to_events() {
                        writeln!(
                            stdout,
                            "{}",
                            serde_json::to_string(&session_runtime::wire::Event::bus(&event))?
                        )?;
                    }
                }
                Format::Text => write!(stdout, "{}", session_cli::terminal::clean(&output.render_text()))?,
            }
            if let Some(error) = &output.error {
                eprintln!("session: replay ended with {}: {}", error.name, error.message);
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
