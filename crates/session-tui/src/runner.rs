//! The event loop: terminal input, bus events, permission asks and finished background work,
//! each handled and followed by one frame. Nothing is drawn without a reason: a timer runs
//! only while something on screen moves (a run, a running tool's elapsed time).

use std::time::Duration;

use anyhow::{Context as _, Result};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt as _;
use session_runtime::clock::{Clock as _, SystemClock};
use session_runtime::{Assembled, RuntimeSetup};
use tokio::sync::{broadcast, mpsc};

use crate::app::{App, Effect, PickerKind, Status};
use crate::asker::AskReceiver;
use crate::effects::{Done, Handles, load};
use crate::setup::{Choices, choices, open_session};
use crate::terminal::TerminalGuard;
use crate::theme::Theme;

/// How `session tui` was asked to start.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// The setup the runtime was assembled from (the config is read again for the pickers).
    pub setup: RuntimeSetup,
    /// `--session ID`.
    pub session: Option<String>,
    /// `-c/--continue`.
    pub continue_latest: bool,
    /// `--model provider/model`: the model of every prompt.
    pub model: Option<String>,
    /// `--agent`.
    pub agent: Option<String>,
    /// The value of `NO_COLOR`.
    pub no_color: Option<String>,
}

/// Runs the UI until the user quits; returns the exit code. The terminal is restored on every
/// way out, and the runtime's work is stopped and its store closed.
pub async fn run(assembled: Assembled, asks: AskReceiver, options: TuiOptions) -> Result<u8> {
    let Assembled { runtime, model, mcp, .. } = assembled;
    let choices = choices(&options.setup, &runtime)?;
    // Subscribed before the history is read: nothing published in between is lost.
    let events = runtime.bus().subscribe();
    let (session_id, created) =
        open_session(options.session.as_deref(), options.continue_latest, &runtime).await?;
    let root = runtime.worktree().to_path_buf();
    let (session, transcript) = load(&runtime, &session_id, root.clone()).await?;
    let model_name =
        options.model.clone().unwrap_or_else(|| format!("{}/{}", model.provider_id, model.model_id));
    let status = Status {
        context_limit: choices.context_limit(&model_name),
        model: model_name.clone(),
        agent: options.agent.clone().unwrap_or_else(|| choices.default_agent.clone()),
        title: session.title.clone(),
        state: None,
        flash: None,
    };
    let mut app = App::new(Theme::from_no_color(options.no_color.as_deref()), transcript, status);
    app.commands = choices.commands.clone();
    app.skills = choices.skills.clone();
    app.history =
        crate::transcript::user_messages(&app.transcript).into_iter().map(|(_, text)| text).collect();
    let handles = Handles {
        runtime: runtime.clone(),
        root,
        default_model: model_name,
        model_flag: options.model.is_some(),
    };
    let result = {
        let guard = TerminalGuard::enter().context("cannot set up the terminal")?;
        event_loop(guard, &mut app, &handles, &choices, events, asks).await
    };
    // The terminal is back; stop what still runs and close the store.
    let current = app.transcript.session().clone();
    if runtime.is_busy(&current) {
        runtime.cancel(&current);
    }
    runtime.cancel_background();
    mcp.shutdown().await;
    // A session made on opening and never used leaves nothing behind.
    if created
        && runtime.history(&session_id).await.is_ok_and(|h| h.messages.is_empty())
        && let Err(error) = runtime.delete_session(&session_id).await
    {
        tracing::warn!("could not remove the unused session {session_id}: {error}");
    }
    runtime.close_store().await?;
    result
}

/// Resolves on SIGTERM or SIGHUP (the terminal closed): the UI quits cleanly.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut hup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
            tokio::select! {
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await;
}

async fn event_loop(
    mut guard: TerminalGuard,
    app: &mut App,
    handles: &Handles,
    choices: &Choices,
    mut events: broadcast::Receiver<session_runtime::BusEvent>,
    mut asks: AskReceiver,
) -> Result<u8> {
    let mut input = EventStream::new();
    let (done_tx, mut done) = mpsc::unbounded_channel::<Done>();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let terminated = terminated();
    tokio::pin!(terminated);
    let mut dirty = true;
    loop {
        app.prune_asks();
        if dirty {
            let now = SystemClock.now_ms();
            guard.terminal.draw(|frame| crate::view::draw(frame, app, now))?;
            dirty = false;
        }
        let animating = app.animating();
        let effects: Vec<Effect> = tokio::select! {
            () = &mut terminated => return Ok(0),
            event = input.next() => match event {
                Some(Ok(Event::Key(key))) => { dirty = true; app.key(key, &handles.root) }
                Some(Ok(Event::Mouse(mouse))) => { dirty = true; app.mouse(mouse); Vec::new() }
                Some(Ok(Event::Paste(text))) => { dirty = true; app.paste(&text); Vec::new() }
                Some(Ok(Event::Resize(..))) => { dirty = true; guard.terminal.autoresize()?; Vec::new() }
                Some(Ok(_)) => Vec::new(),
                Some(Err(error)) => return Err(error).context("reading the terminal"),
                // The terminal is gone.
                None => return Ok(0),
            },
            event = events.recv() => match event {
                Ok(event) => {
                    dirty |= app.bus(&event);
                    // A burst of deltas makes one frame, not one each.
                    while let Ok(event) = events.try_recv() {
                        dirty |= app.bus(&event);
                    }
                    Vec::new()
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "the UI fell behind the bus; reloading the session");
                    let id = app.transcript.session().clone();
                    let (session, transcript) = load(&handles.runtime, &id, handles.root.clone()).await?;
                    app.show_session(&session, transcript);
                    dirty = true;
                    Vec::new()
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(0),
            },
            Some((ask, answer)) = asks.recv() => {
                app.asks.push_back(crate::app::PendingAsk { ask, answer: Some(answer) });
                dirty = true;
                Vec::new()
            }
            Some(finished) = done.recv() => {
                dirty = true;
                crate::effects::finished(app, finished, handles).await?;
                Vec::new()
            }
            _ = tick.tick(), if animating => { dirty = true; Vec::new() }
        };
        for effect in effects {
            if effect == Effect::Quit {
                return Ok(0);
            }
            if let Effect::Picker(kind) = effect {
                match kind {
                    PickerKind::Models => app.open_picker(kind, choices.models.clone()),
                    PickerKind::Agents => app.open_picker(kind, choices.agents.clone()),
                    PickerKind::Sessions => {
                        crate::effects::spawn(handles, app, Effect::ListSessions, &done_tx)
                    }
                }
                continue;
            }
            crate::effects::spawn(handles, app, effect, &done_tx);
        }
        // A model picked in the picker brings its context window to the status line.
        app.status.context_limit = choices.context_limit(&app.status.model);
    }
}
