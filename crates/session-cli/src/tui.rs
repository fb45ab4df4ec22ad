//! `session tui [DIR]`, and `session` alone on a terminal: the flags, the checks (a terminal
//! on both ends, else the help and exit code 2) and the handoff to session-tui, with the
//! runtime assembled the way `session run` does it (trust question and warnings first).

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};

/// Flags of `session tui`.
#[derive(Debug, Default, clap::Args)]
pub struct TuiArgs {
    /// The project folder (default: the current one).
    pub dir: Option<PathBuf>,
    /// The model, as provider/model.
    #[arg(long, short)]
    pub model: Option<String>,
    /// The agent (default: the config's default_agent, else build).
    #[arg(long)]
    pub agent: Option<String>,
    /// Open this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Open the latest session of the folder.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_latest: bool,
    /// Send the model's provider requests to this base URL (a local server, a proxy).
    #[arg(long)]
    pub base_url: Option<String>,
    /// PostgreSQL URL of the session database (default: the embedded SQLite file).
    #[arg(long)]
    pub db: Option<String>,
}

/// Where the diagnostics go while the UI owns the terminal (unless `--log-file` says): a file
/// in the data folder, since lines on stderr would be drawn over.
pub fn default_log_file(tui: bool) -> Option<PathBuf> {
    if !tui || !on_a_terminal() {
        return None;
    }
    let env = session_cli::process_env::vars().clone();
    let home = env.get("HOME").map(PathBuf::from);
    session_cli::process_env::data_dir(&env, home.as_deref()).ok().map(|dir| dir.join("tui.log"))
}

/// True when stdin and stdout are both terminals.
fn on_a_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Opens the UI; without a terminal prints `help` and returns exit code 2.
pub fn run(args: TuiArgs, help: impl FnOnce()) -> Result<ExitCode> {
    if !on_a_terminal() {
        help();
        eprintln!("session: the interactive UI needs a terminal; use `session run` for one prompt");
        return Ok(ExitCode::from(2));
    }
    let env = session_cli::process_env::vars().clone();
    let home = env.get("HOME").map(PathBuf::from);
    let cwd = match args.dir {
        Some(dir) => {
            dir.canonicalize().with_context(|| format!("cannot open the folder {}", dir.display()))?
        }
        None => std::env::current_dir().context("cannot read the working directory")?,
    };
    let setup = session_cli::RuntimeSetup {
        cwd,
        data_dir: session_cli::process_env::data_dir(&env, home.as_deref())?,
        home,
        model: args.model.clone(),
        base_url: args.base_url,
        db: args.db,
        store_options: session_store::StoreOptions::default(),
        env: env.clone(),
    };
    let options = session_tui::TuiOptions {
        setup: setup.clone(),
        session: args.session,
        continue_latest: args.continue_latest,
        model: args.model,
        agent: args.agent,
        no_color: env.get("NO_COLOR").cloned(),
    };
    let code = crate::async_runtime()?.block_on(async move {
        let (asker, asks) = session_tui::asker();
        let assembled = session_cli::assemble(&setup, Arc::new(asker)).await?;
        session_tui::run(assembled, asks, options).await
    })?;
    Ok(ExitCode::from(code))
}
