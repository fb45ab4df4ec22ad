//! The status line under the streamed answer: a spinner while the model works, and the
//! countdown to the next attempt while a retry waits. Drawn on stderr, and only when stderr
//! is a terminal: pipes and files get the plain lines of the renderer.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use session_core::PartKind;
use session_runtime::BusEvent;
use session_runtime::sessions::SessionStatus;

/// A retry being waited for.
#[derive(Debug, Clone, PartialEq)]
struct Waiting {
    attempt: u32,
    message: String,
    next_ms: u64,
}

/// The drawn line, shared with whatever else writes to the terminal (a permission ask).
#[derive(Debug, Default)]
struct Shared {
    bar: Option<ProgressBar>,
    /// Set while something else owns the terminal: nothing is drawn.
    paused: bool,
}

/// Lets a permission ask take the terminal from the status line, and give it back.
#[derive(Debug, Clone, Default)]
pub struct StatusPause(Arc<Mutex<Shared>>);

impl StatusPause {
    /// Clears the line and draws nothing until [`StatusPause::resume`].
    pub fn pause(&self) {
        let mut shared = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shared.paused = true;
        if let Some(bar) = shared.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Lets the line be drawn again (at the next event).
    pub fn resume(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).paused = false;
    }
}

/// The spinner and retry countdown of `session run`.
///
/// The line is drawn only while the output stands at the start of a line: indicatif clears the
/// whole terminal line it drew on, so a spinner drawn after half a streamed sentence would wipe
/// that half (or split a word) when it goes.
#[derive(Debug)]
pub struct StatusLine {
    enabled: bool,
    shared: StatusPause,
    retry: Option<Waiting>,
    /// What the line says when it may be drawn (none: nothing to show).
    wanted: Option<String>,
    /// Whether the output last stood at the start of a line.
    at_line_start: bool,
}

impl StatusLine {
    /// A status line; a disabled one draws nothing.
    pub fn new(enabled: bool) -> Self {
        Self { enabled, shared: StatusPause::default(), retry: None, wanted: None, at_line_start: true }
    }

    /// The handle a permission ask uses to take the terminal.
    pub fn pause_handle(&self) -> StatusPause {
        self.shared.clone()
    }

    /// Clears the line for good (a question takes the terminal), until [`StatusPause::resume`].
    pub fn pause(&self) {
        self.shared.pause();
    }

    /// Lets the line be drawn again, and draws it if it may be.
    pub fn resume(&mut self) {
        self.shared.resume();
        self.draw();
    }

    /// Runs `write` (output to stdout) with the line cleared; `write` returns the output's
    /// state afterwards (true: at the start of a line), and the line comes back only then.
    pub fn suspend<E>(&mut self, write: impl FnOnce() -> Result<bool, E>) -> Result<(), E> {
        self.clear();
        let result = write();
        if let Ok(at_line_start) = &result {
            self.at_line_start = *at_line_start;
        }
        self.draw();
        result.map(|_| ())
    }

    /// Follows one bus event: busy shows the spinner, a retry the countdown, streamed text
    /// hides the line (the text is the progress), idle clears it.
    pub fn event(&mut self, event: &BusEvent, now_ms: u64) {
        match event {
            BusEvent::SessionStatus { status, .. } => match status {
                SessionStatus::Busy => {
                    self.retry = None;
                    self.wanted = Some("working".to_owned());
                }
                SessionStatus::Retry { attempt, message, next } => {
                    self.retry =
                        Some(Waiting { attempt: *attempt, message: message.clone(), next_ms: *next });
                    self.wanted = Some(countdown(
                        &Waiting { attempt: *attempt, message: message.clone(), next_ms: *next },
                        now_ms,
                    ));
                }
                SessionStatus::Idle => {
                    self.retry = None;
                    self.wanted = None;
                }
            },
            BusEvent::PartDelta { .. } => self.wanted = None,
            BusEvent::PartUpdated { part } => {
                if let PartKind::Tool(tool) = &part.kind {
                    self.wanted = Some(format!("running {}", tool.tool));
                }
            }
            _ => return,
        }
        self.draw();
    }

    /// Refreshes the countdown; call it a few times a second while a retry waits.
    pub fn tick(&mut self, now_ms: u64) {
        if let Some(waiting) = &self.retry {
            self.wanted = Some(countdown(waiting, now_ms));
            self.draw();
        }
    }

    /// True while a retry countdown is shown (the caller ticks only then).
    pub fn counting_down(&self) -> bool {
        self.enabled && self.retry.is_some()
    }

    /// Draws the wanted line when it may be drawn, else clears it.
    fn draw(&mut self) {
        let Some(message) = self.wanted.clone().filter(|_| self.enabled && self.at_line_start) else {
            self.clear();
            return;
        };
        let mut shared = self.shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        if shared.paused {
            return;
        }
        let bar = shared.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        bar.set_message(message);
    }

    fn clear(&mut self) {
        let bar = self.shared.0.lock().unwrap_or_else(PoisonError::into_inner).bar.take();
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.clear();
    }
}

/// "retrying in 3 s (attempt 2): <message>", the message cut to one short line.
fn countdown(waiting: &Waiting, now_ms: u64) -> String {
    let seconds = waiting.next_ms.saturating_sub(now_ms).div_ceil(1000);
    let first_line = waiting.message.lines().next().unwrap_or_default();
    let message = if first_line.chars().count() > 100 {
        format!("{}...", first_line.chars().take(97).collect::<String>())
    } else {
        first_line.to_owned()
    };
    format!("retrying in {seconds} s (attempt {}): {message}", waiting.attempt)
}

#[cfg(test)]
mod tests {
    use session_core::Identifier as _;

    use super::*;

    #[test]
    fn the_countdown_rounds_up_and_shortens_the_message() {
        let waiting = Waiting { attempt: 2, message: "rate limited\nmore".into(), next_ms: 10_500 };
        assert_eq!(countdown(&waiting, 8_000), "retrying in 3 s (attempt 2): rate limited");
        assert_eq!(countdown(&waiting, 20_000), "retrying in 0 s (attempt 2): rate limited");
        let long = Waiting { attempt: 1, message: "x".repeat(300), next_ms: 0 };
        assert_eq!(countdown(&long, 0).chars().count(), "retrying in 0 s (attempt 1): ".len() + 100);
    }

    #[test]
    fn the_line_is_not_drawn_while_the_output_stands_mid_line() {
        let id = session_core::SessionId::parse("ses_dd6625676ffenvG7tTSo20Q3Ko").unwrap();
        let mut line = StatusLine::new(true);
        line.event(&BusEvent::SessionStatus { session_id: id.clone(), status: SessionStatus::Busy }, 0);
        assert!(line.shared.0.lock().unwrap().bar.is_some(), "drawn at the start of a line");
        // Half a sentence went out: the line goes before, and stays away.
        line.suspend(|| Ok::<bool, ()>(false)).unwrap();
        assert!(line.shared.0.lock().unwrap().bar.is_none());
        line.event(&BusEvent::SessionStatus { session_id: id.clone(), status: SessionStatus::Busy }, 0);
        assert!(line.shared.0.lock().unwrap().bar.is_none(), "not drawn after half a line");
        line.suspend(|| Ok::<bool, ()>(true)).unwrap();
        assert!(line.shared.0.lock().unwrap().bar.is_some(), "back once the line ended");
        line.pause();
        line.event(&BusEvent::SessionStatus { session_id: id, status: SessionStatus::Busy }, 0);
        assert!(line.shared.0.lock().unwrap().bar.is_none(), "nothing drawn while a question waits");
        line.resume();
        assert!(line.shared.0.lock().unwrap().bar.is_some());
    }

    #[test]
    fn a_disabled_line_draws_nothing_and_never_counts_down() {
        let mut line = StatusLine::new(false);
        line.event(
            &BusEvent::SessionStatus {
                session_id: session_core::SessionId::parse("ses_dd6625676ffenvG7tTSo20Q3Ko").unwrap(),
                status: SessionStatus::Retry { attempt: 1, message: "x".into(), next: 5_000 },
            },
            0,
        );
        assert!(line.shared.0.lock().unwrap().bar.is_none());
        assert!(!line.counting_down());
        assert_eq!(line.suspend(|| Ok::<bool, ()>(true)), Ok(()));
    }
}
