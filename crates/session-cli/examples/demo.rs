//! Runs `session demo` through the library half of the binary: the whole runtime offline, a
//! scripted model, real tools in a temporary project, the summary the command prints last.
//!
//! `cargo run -p session-cli --example demo`

use session_cli::{OutputFormat, run_demo};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let summary = run_demo(dir.path(), OutputFormat::Text, std::io::sink()).await?;
    println!(
        "{} tool calls completed, {} tokens in, {} out, ${} at the priced model's rates",
        summary.tools_completed, summary.input_tokens, summary.output_tokens, summary.cost
    );
    println!("answer: {}", summary.answer);
    Ok(())
}
