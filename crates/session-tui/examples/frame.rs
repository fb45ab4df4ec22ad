//! Renders one frame of a sample session (a question, reasoning, a read, an edit with its
//! diff, a patch summary and a markdown answer) on ratatui's test backend and prints it.
//!
//! `cargo run -p session-tui --example frame`

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use session_tui::fixtures::{self, NOW};
use session_tui::{App, Status, Theme, Transcript};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut transcript = Transcript::new(fixtures::session_id(), fixtures::root());
    transcript.load(fixtures::sample_history(), None);
    let status = Status {
        model: "mock/m".into(),
        context_limit: Some(32_000),
        agent: "build".into(),
        title: "Fix the answer".into(),
        ..Status::default()
    };
    let mut app = App::new(Theme { color: false }, transcript, status);
    let mut terminal = Terminal::new(TestBackend::new(80, 36))?;
    terminal.draw(|frame| session_tui::view::draw(frame, &mut app, NOW))?;
    println!("{}", terminal.backend());
    Ok(())
}
