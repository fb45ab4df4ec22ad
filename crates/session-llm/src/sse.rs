//! A pure, incremental decoder of `text/event-stream` bodies (the WHATWG SSE format).
//!
//! Bytes go in as they arrive, in chunks of any size; whole events come out. The decoder owns
//! no IO and no clock, so it is tested by value and shared by every adapter.

use std::mem;

/// The default bound on one event's size: 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The longest event id kept. Every later event carries the last id, so one huge id line
/// followed by many small events would multiply memory (65 KB of id and 16,384 empty events
/// made 2 GB); a longer id is ignored, as one containing NUL is.
const MAX_ID_BYTES: usize = 1024;

/// The UTF-8 byte order mark, which the SSE format strips once at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct SseEvent {
    /// The `event:` field, absent when the server gave none (the SSE default type "message").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`.
    pub data: String,
    /// The last `id:` seen on the stream so far (ids persist across events, per the format;
    /// ids containing NUL or longer than 1 KiB are ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The `retry:` field of this event, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<u64>,
}

/// The decoder refused the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event grew past the configured bound.
    #[error("server-sent event larger than the limit of {limit} bytes")]
    EventTooLarge {
        /// The configured bound, in bytes.
        limit: usize,
    },
}

/// An incremental SSE decoder: a state machine over bytes, LF, CRLF and CR line ends alike.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// The current line while it has no terminator yet.
    line: Vec<u8>,
    /// The data lines of the current event, each followed by `\n`.
    data: Vec<u8>,
    /// The `event:` field of the current event.
    event: Option<String>,
    /// The `retry:` field of the current event.
    retry: Option<u64>,
    /// The last event id, which persists across events.
    last_id: Option<String>,
    /// The previous chunk ended in CR: a leading LF of the next chunk belongs to it.
    pending_cr: bool,
    /// No line has been completed yet, so a byte order mark may still have to be stripped.
    at_start: bool,
    /// The bound on one event's size.
    max_event_bytes: usize,
    /// Set once the bound was passed; the decoder refuses everything after that.
    failed: Option<SseError>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default event size bound (16 MiB).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder that refuses any event larger than `max_event_bytes`.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            data: Vec::new(),
            event: None,
            retry: None,
            last_id: None,
            pending_cr: false,
            at_start: true,
            max_event_bytes,
            failed: None,
        }
    }

    /// Feeds one chunk of the body; complete events are appended to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let mut rest = chunk;
        if self.pending_cr && !rest.is_empty() {
            // A CR that ended the previous chunk may be the first half of a CRLF.
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while !rest.is_empty() {
            let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.append_partial(rest)?;
                break;
            };
            let terminator = rest[pos];
            if self.line.is_empty() {
                self.process_line(&rest[..pos], out)?;
            } else {
                self.append_partial(&rest[..pos])?;
                // Take the buffer out so that processing may borrow `self`; its allocation
                // is put back for the next partial line.
                let mut line = mem::take(&mut self.line);
                let result = self.process_line(&line, out);
                line.clear();
                self.line = line;
                result?;
            }
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        Ok(())
    }

    /// Ends the stream; an event whose lines were all complete but which lacked the closing
    /// blank line is still dispatched, while a partial last line (a cut connection) is dropped.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        self.pending_cr = false;
        if self.line.is_empty() {
            self.dispatch(out);
        } else {
            self.line.clear();
            self.data.clear();
            self.event = None;
            self.retry = None;
        }
        Ok(())
    }

    /// Appends bytes of a line that has no terminator yet, within the size bound.
    fn append_partial(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.check_size(self.line.len() + bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Fails once the current event would hold more than the bound.
    fn check_size(&mut self, pending_line: usize) -> Result<(), SseError> {
        let event_len = self.event.as_ref().map_or(0, String::len);
        if self.data.len() + event_len + pending_line > self.max_event_bytes {
            let err = SseError::EventTooLarge { limit: self.max_event_bytes };
            self.failed = Some(err.clone());
            self.line.clear();
            self.data.clear();
            return Err(err);
        }
        Ok(())
    }

    /// Interprets one complete line (without its terminator).
    fn process_line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.at_start {
            self.at_start = false;
            if let Some(stripped) = line.strip_prefix(BOM) {
                line = stripped;
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            // A comment: servers send these as keep-alives.
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.check_size(value.len() + 1)?;
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.check_size(value.len())?;
                self.event = if value.is_empty() { None } else { Some(lossy(value)) };
            }
            // The format ignores ids that contain NUL; this decoder also ignores huge ones.
            b"id" if !value.contains(&0) && value.len() <= MAX_ID_BYTES => {
                self.last_id = if value.is_empty() { None } else { Some(lossy(value)) };
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    /// Emits the current event if it has data, then resets the per-event fields.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        let retry = self.retry.take();
        if self.data.is_empty() {
            return;
        }
        self.data.pop();
        let data = match String::from_utf8(mem::take(&mut self.data)) {
            Ok(text) => text,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        };
        out.push(SseEvent { event, data, id: self.last_id.clone(), retry });
    }
}

/// Decodes bytes as UTF-8, replacing invalid sequences as the SSE format says.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn decode(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out).unwrap();
        }
        decoder.finish(&mut out).unwrap();
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned(), id: None, retry: None }
    }

    #[test]
    fn line_ends_are_equivalent() {
        let expected = vec![ev(Some("a"), "1\n2"), ev(None, "3")];
        assert_eq!(decode(&[b"event: a\ndata: 1\ndata: 2\n\ndata: 3\n\n"]), expected);
        assert_eq!(decode(&[b"event: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n"]), expected);
        assert_eq!(decode(&[b"event: a\rdata: 1\rdata: 2\r\rdata: 3\r\r"]), expected);
        assert_eq!(
            decode(&[b"event: a\r", b"\ndata: 1\r", b"\ndata: 2\r\n\r", b"\ndata: 3\r\n\r\n"]),
            expected
        );
    }

    #[test]
    fn comments_fields_and_ids() {
        let out = decode(&[b": keep-alive\nid: 7\nretry: 1500\ndata:x\nfoo: bar\n\ndata\n\n"]);
        assert_eq!(
            out,
            vec![
                SseEvent { event: None, data: "x".into(), id: Some("7".into()), retry: Some(1500) },
                SseEvent { event: None, data: "".into(), id: Some("7".into()), retry: None },
            ]
        );
    }

    #[test]
    fn huge_ids_are_ignored() {
        let long = "x".repeat(MAX_ID_BYTES);
        let body = format!("id: {long}\ndata: a\n\nid: {long}y\ndata: b\n\n");
        let out = decode(&[body.as_bytes()]);
        assert_eq!(out.iter().map(|e| e.id.as_deref()).collect::<Vec<_>>(), [Some(&*long), Some(&*long)]);
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert_eq!(decode(&[b"event: ping\n\n: c\n\n"]), vec![]);
    }

    #[test]
    fn bom_is_stripped_once() {
        assert_eq!(decode(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]), vec![ev(None, "a")]);
    }

    #[test]
    fn complete_lines_at_eof_dispatch_but_partial_lines_do_not() {
        assert_eq!(decode(&[b"data: a\n"]), vec![ev(None, "a")]);
        assert_eq!(decode(&[b"data: a\n\ndata: {\"cut"]), vec![ev(None, "a")]);
    }

    #[test]
    fn oversized_event_is_refused() {
        let mut decoder = SseDecoder::with_max_event_bytes(8);
        let mut out = Vec::new();
        decoder.push(b"data: 1234\n", &mut out).unwrap();
        let err = decoder.push(b"data: 5678", &mut out).unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 8 });
        assert_eq!(err.to_string(), "server-sent event larger than the limit of 8 bytes");
        assert!(decoder.push(b"\n\n", &mut out).is_err());
    }

    #[test]
    fn many_small_events_stay_within_the_bound() {
        let mut decoder = SseDecoder::with_max_event_bytes(16);
        let mut out = Vec::new();
        for _ in 0..100 {
            decoder.push(b"data: 0123456789\n\n", &mut out).unwrap();
        }
        assert_eq!(out.len(), 100);
    }
}
