//! The stream-parser contract: [`StreamParser`], the object-safe face the decoders drive, and
//! [`WireParser`], the typed form each wire format implements. The prologue every format shares
//! (count the event, ignore what follows the end, skip blank data, handle `[DONE]`, parse the
//! JSON, open the step) is written once, in the blanket implementation.

use serde::de::DeserializeOwned;
use session_core::LlmEvent;

use crate::common::parse_event;
use crate::error::LlmError;
use crate::sse::SseEvent;

/// One provider's stream parser: SSE events in, `LlmEvent`s out (a small state machine).
pub trait StreamParser: Send {
    /// Handles the next event; the events it yields are appended to `out`.
    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), LlmError>;
    /// The body ended: yields the closing events, or fails if the terminal event never came.
    fn on_end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError>;
    /// The terminal event was seen, so nothing later in the body matters.
    fn is_done(&self) -> bool;
}

/// What a wire format makes of the data `[DONE]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DoneMarker {
    /// The proper end of the stream ([`WireParser::on_done_marker`] runs).
    Ends,
    /// Skipped like blank data.
    Skipped,
    /// Not special: parsed like any other data (and so malformed).
    Parsed,
}

/// The bookkeeping the shared prologue keeps for a parser.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Events handed to the parser so far, counting skipped ones (error messages name them).
    events_seen: usize,
    started: bool,
}

impl Progress {
    /// Yields the step's `StepStart`, once.
    pub(crate) fn start_step(&mut self, out: &mut Vec<LlmEvent>) {
        if !self.started {
            self.started = true;
            out.push(LlmEvent::StepStart { index: 0 });
        }
    }
}

/// A wire format's parser over typed events; the blanket [`StreamParser`] implementation runs
/// the shared prologue and hands each parsed event to [`WireParser::on_parsed`].
pub(crate) trait WireParser: Send {
    /// The typed form of one event's data.
    type Event: DeserializeOwned;
    /// What the data `[DONE]` means in this format.
    const DONE_MARKER: DoneMarker;
    /// Whether the first parsed event opens the step (else the parser opens it itself).
    const STARTS_STEP_ON_FIRST_EVENT: bool;

    /// The prologue's bookkeeping.
    fn progress(&mut self) -> &mut Progress;
    /// The terminal event was seen.
    fn finished(&self) -> bool;
    /// Handles the data `[DONE]` of a format where it [ends](DoneMarker::Ends) the stream.
    fn on_done_marker(&mut self, _out: &mut Vec<LlmEvent>) {}
    /// Handles one parsed event; `data` is its trimmed text.
    fn on_parsed(&mut self, event: Self::Event, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError>;
    /// The body ended before the parser finished.
    fn on_body_end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError>;
}

impl<P: WireParser> StreamParser for P {
    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        let progress = self.progress();
        progress.events_seen += 1;
        let index = progress.events_seen;
        if self.finished() {
            return Ok(());
        }
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            match P::DONE_MARKER {
                DoneMarker::Ends => {
                    self.on_done_marker(out);
                    return Ok(());
                }
                DoneMarker::Skipped => return Ok(()),
                DoneMarker::Parsed => {}
            }
        }
        let parsed: P::Event = parse_event(index, data)?;
        if P::STARTS_STEP_ON_FIRST_EVENT {
            self.progress().start_step(out);
        }
        self.on_parsed(parsed, data, out)
    }

    fn on_end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if self.finished() { Ok(()) } else { self.on_body_end(out) }
    }

    fn is_done(&self) -> bool {
        self.finished()
    }
}
