//! The event streams: `GET /event` (server-sent events, `server.connected` first) and `GET
//! /global/event` (the same events wrapped the way OpenCode's terminal UI reads them).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::events::Hub;

/// `GET /event`: server-sent events, `server.connected` first, then every event.
pub(crate) async fn stream(State(state): Shared) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    sse(&state.hub, state.shutdown.clone(), None)
}

/// `GET /global/event`: the same events, each wrapped as `{"directory", "payload"}` the way
/// OpenCode's terminal UI reads them.
pub(crate) async fn global_stream(
    State(state): Shared,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let directory = serde_json::to_string(state.hub.directory()).unwrap_or_else(|_| "\"\"".to_owned());
    sse(&state.hub, state.shutdown.clone(), Some(directory))
}

/// The event stream of `hub` until `shutdown`; `wrap` is the JSON string of the directory
/// each event is wrapped with, for `/global/event`.
fn sse(
    hub: &Hub,
    shutdown: CancellationToken,
    wrap: Option<String>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let receiver = hub.subscribe();
    let connected = hub.connected();
    let shape = move |data: &str| match &wrap {
        Some(directory) => format!(r#"{{"directory":{directory},"payload":{data}}}"#),
        None => data.to_owned(),
    };
    let events = futures_util::stream::unfold(
        (Some(connected), receiver, shutdown, shape),
        |(first, mut receiver, shutdown, shape)| async move {
            if let Some(first) = first {
                let event = Event::default().data(shape(&first));
                return Some((Ok(event), (None, receiver, shutdown, shape)));
            }
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => return None,
                    next = receiver.recv() => next,
                };
                match next {
                    Ok(data) => {
                        let event = Event::default().data(shape(&data));
                        return Some((Ok(event), (None, receiver, shutdown, shape)));
                    }
                    Err(broadcast::error::RecvError::Lagged(lost)) => {
                        // Lost events are not replayed: say so where an operator will see it.
                        tracing::warn!(lost, "an event stream client fell behind and lost events");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}
