//! The terminal's modes: raw input, the alternate screen, mouse reports and bracketed paste
//! on entry; all of it undone on every way out: a normal return, an error (the guard's drop)
//! and a panic (a hook that restores before the panic message prints).

use std::io::{Stdout, Write};
use std::sync::Once;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The terminal, put back as it was when dropped.
pub struct TerminalGuard {
    /// The ratatui terminal drawing on stdout.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// Puts the terminal back: raw mode off, the main screen, the cursor shown, mouse and paste
/// reports off. Safe to call more than once.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = out.flush();
}

/// Installs (once per process) a panic hook that restores the terminal first, so the panic's
/// message is readable and the shell is usable after it.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

impl TerminalGuard {
    /// Enters the UI's modes on stdout.
    pub fn enter() -> std::io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = std::io::stdout();
        // A failure halfway leaves nothing behind.
        if let Err(error) =
            crossterm::execute!(out, EnterAlternateScreen, EnableMouseCapture, EnableBracketedPaste)
        {
            restore();
            return Err(error);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(Self { terminal }),
            Err(error) => {
                restore();
                Err(error)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}
