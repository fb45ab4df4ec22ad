//! The `session` binary.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use session_core::Entropy;
use session_llm::Api;

/// The agent session runtime on the command line.
#[derive(Debug, Parser)]
#[command(name = "session", version, about, propagate_version = true)]
struct Cli {
    /// Log level of the diagnostics written to stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogLevel::Warn)]
    log_level: LogLevel,
    #[command(subcommand)]
    command: Command,
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

/// Ids get their random characters from the standard library's randomly seeded hasher: good
/// enough for uniqueness, and no extra crate.
struct HashEntropy {
    state: std::collections::hash_map::RandomState,
    counter: u64,
}

impl Entropy for HashEntropy {
    fn next_u64(&mut self) -> u64 {
        use std::hash::BuildHasher as _;
        self.counter = self.counter.wrapping_add(1);
        self.state.hash_one(self.counter)
    }
}

/// The catalog entry `--model` names; an unknown model is priced at 0 with a warning.
fn replay_model(reference: &str) -> Result<Option<session_cli::ReplayModel>> {
    let Some((provider, model)) = session_llm::split_model_ref(reference) else {
        anyhow::bail!(
            "--model must be provider/model, for example anthropic/claude-sonnet-4-5; got {reference:?}"
        );
    };
    let catalog = session_llm::Catalog::embedded()?;
    match catalog.resolve(provider, model) {
        Some(found) => Ok(Some(session_cli::ReplayModel {
            provider_id: provider.to_owned(),
            model_id: found.id,
            cost: found.cost,
            limit: found.limit,
        })),
        None => {
            tracing::warn!("{reference} is not in the model catalog; the replay's cost is 0");
            Ok(Some(session_cli::ReplayModel {
                provider_id: provider.to_owned(),
                model_id: model.to_owned(),
                ..Default::default()
            }))
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn main() -> ExitCode {
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
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("session: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Replay { api, format, model, file } => {
            let body = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let model = match model {
                Some(reference) => replay_model(&reference)?,
                None => None,
            };
            let entropy = Box::new(HashEntropy { state: Default::default(), counter: 0 });
            let output = session_cli::replay(api.into(), &body, model.as_ref(), &mut now_ms, entropy);
            let mut stdout = std::io::stdout().lock();
            match format {
                Format::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&output.to_json())?)?,
                Format::Text => write!(stdout, "{}", output.render_text())?,
            }
            if let Some(error) = &output.error {
                eprintln!("session: replay ended with {}: {}", error.name, error.message);
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
