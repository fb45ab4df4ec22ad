//! The permission engine: session-core's pure rules and pending-ask bookkeeping, plus the
//! waiting, the per-session "always" answers and the asker that shows asks to a person.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use session_core::{
    IdSource, PermissionId, SessionId, SplitMix, permission::Action, permission::AskOutcome,
    permission::PermissionAsk, permission::PermissionAsks, permission::PermissionError,
    permission::PermissionRequest, permission::Reply, permission::Resolution, permission::Rule,
    permission::Ruleset, permission::ToolCallRef,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;

/// A person's answer to an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAnswer {
    /// once, always or reject.
    pub reply: Reply,
    /// Feedback given with a reject (turns it into a correction).
    pub message: Option<String>,
}

impl PermissionAnswer {
    /// Go ahead this time.
    pub fn once() -> Self {
        Self { reply: Reply::Once, message: None }
    }
    /// Go ahead and remember the ask's `always` patterns for the session.
    pub fn always() -> Self {
        Self { reply: Reply::Always, message: None }
    }
    /// Refuse.
    pub fn reject() -> Self {
        Self { reply: Reply::Reject, message: None }
    }
    /// Refuse and tell the model what to do instead.
    pub fn correct(feedback: impl Into<String>) -> Self {
        Self { reply: Reply::Reject, message: Some(feedback.into()) }
    }
}

/// Shows asks to whoever answers them: the terminal, the HTTP API, a test.
#[async_trait]
pub trait PermissionAsker: Send + Sync {
    /// An ask is pending (publish `permission.asked`). Return the answer, or `None` when answers
    /// arrive another way, through [`PermissionEngine::reply`] (an HTTP route, for example).
    /// The future is dropped when the ask is settled elsewhere first.
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer>;

    /// An ask was settled (publish `permission.replied`).
    fn replied(&self, _resolution: &Resolution) {}
}

/// An asker that never answers: asks wait for [`PermissionEngine::reply`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyLater;

#[async_trait]
impl PermissionAsker for ReplyLater {
    async fn ask(&self, _ask: &PermissionAsk) -> Option<PermissionAnswer> {
        None
    }
}

type Waiter = oneshot::Sender<Result<(), PermissionError>>;

#[derive(Default)]
struct SessionState {
    asks: PermissionAsks,
    waiters: HashMap<PermissionId, Waiter>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

/// A randomly seeded generator for permission ids (the std's per-process random hash keys and
/// the time). The tools crate sits beside session-store, whose `random_entropy` the rest of the
/// workspace uses, not above it.
fn random_entropy() -> SplitMix {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(now_ms());
    SplitMix::new(hasher.finish())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Pending asks and "always" answers of every session, and the waiting around them.
///
/// [`PermissionEngine::ask`] evaluates the rules (deny fails at once, allow goes ahead) and
/// otherwise waits for the asker's answer or a [`PermissionEngine::reply`]. A reject also
/// rejects the session's other pending asks; an "always" approves the ask's `always` patterns
/// for the session and settles its other asks those now allow.
pub struct PermissionEngine {
    sessions: Mutex<HashMap<SessionId, SessionState>>,
    asker: Arc<dyn PermissionAsker>,
    ids: IdSource,
}

impl std::fmt::Debug for PermissionEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionEngine")
            .field("sessions", &lock(&self.sessions).len())
            .finish_non_exhaustive()
    }
}

/// Forgets an ask whose waiting future was dropped before it was settled.
struct PendingGuard<'a> {
    engine: &'a PermissionEngine,
    session_id: SessionId,
    id: Option<PermissionId>,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.engine.forget(&self.session_id, &id);
        }
    }
}

impl PermissionEngine {
    /// An engine whose asks are shown through `asker`.
    pub fn new(asker: Arc<dyn PermissionAsker>) -> Self {
        Self { sessions: Mutex::new(HashMap::new()), asker, ids: IdSource::new(random_entropy()) }
    }

    /// Restores a session's rules approved by earlier "always" answers (for example from the
    /// store); they come after any approved already.
    /// Pending asks of the session that the added rules allow are settled as allowed.
    pub fn load_approved(&self, session_id: &SessionId, rules: impl IntoIterator<Item = Rule>) {
        let mut settled = Vec::new();
        {
            let mut sessions = lock(&self.sessions);
            let state = sessions.entry(session_id.clone()).or_default();
            let mut approved = state.asks.approved().to_vec();
            approved.extend(rules);
            let pending = state.asks.pending().to_vec();
            let mut asks = PermissionAsks::new(approved);
            asks.set_bounds(state.asks.bounds().to_vec());
            // Re-record the pending asks under "ask everything", so only the approved rules can
            // let one through.
            let ask_all = [Rule::new("*", "*", Action::Ask)];
            for ask in pending {
                let (id, session) = (ask.id.clone(), ask.session_id.clone());
                if state.asks.is_insisted(&id) {
                    // Only a reply settles it; the approved rules do not.
                    let _ = asks.ask_anyway(ask.id, ask.session_id, ask.request, ask.tool, &ask_all);
                    continue;
                }
                if let Ok(AskOutcome::Allowed) =
                    asks.ask(ask.id, ask.session_id, ask.request, ask.tool, &ask_all)
                {
                    settled.push(Resolution {
                        request_id: id,
                        session_id: session,
                        reply: Reply::Always,
                        result: Ok(()),
                    });
                }
            }
            state.asks = asks;
            deliver(state, &settled);
        }
        for resolution in &settled {
            self.asker.replied(resolution);
        }
    }

    /// Bounds every later decision for `session_id` by `bounds` (a subagent's session: its
    /// parent's rules), so that the session may never do what one of them denies or asks
    /// about, whatever its own ruleset says; replaces earlier bounds.
    pub fn set_bounds(&self, session_id: &SessionId, bounds: Vec<Ruleset>) {
        lock(&self.sessions).entry(session_id.clone()).or_default().asks.set_bounds(bounds);
    }

    /// The rulesets bounding a session's decisions (see [`PermissionEngine::set_bounds`]).
    pub fn bounds(&self, session_id: &SessionId) -> Vec<Ruleset> {
        lock(&self.sessions).get(session_id).map(|s| s.asks.bounds().to_vec()).unwrap_or_default()
    }

    /// The rules a session's "always" answers approved, oldest first.
    pub fn approved(&self, session_id: &SessionId) -> Ruleset {
        lock(&self.sessions).get(session_id).map(|s| s.asks.approved().to_vec()).unwrap_or_default()
    }

    /// The asks waiting for an answer, of one session or of all, oldest first.
    pub fn pending(&self, session_id: Option<&SessionId>) -> Vec<PermissionAsk> {
        let sessions = lock(&self.sessions);
        let mut asks: Vec<PermissionAsk> = sessions
            .iter()
            .filter(|(id, _)| session_id.is_none_or(|wanted| *id == wanted))
            .flat_map(|(_, state)| state.asks.pending().iter().cloned())
            .collect();
        asks.sort_by(|a, b| a.id.cmp(&b.id));
        asks
    }

    fn next_id(&self) -> PermissionId {
        self.ids.next(now_ms())
    }

    /// Asks for `request` on behalf of `session_id` under `ruleset` (for a tool: the agent's
    /// rules merged with the session's; for `doom_loop`: the agent's alone) followed by the
    /// session's approved rules. Returns when allowed; fails with the permission error when
    /// denied, rejected or corrected, and with [`ToolError::Aborted`] when `abort` fires first.
    pub async fn ask(
        &self,
        session_id: &SessionId,
        request: PermissionRequest,
        tool: Option<ToolCallRef>,
        ruleset: &[Rule],
        abort: &CancellationToken,
    ) -> Result<(), ToolError> {
        self.ask_with(session_id, request, tool, ruleset, abort, false).await
    }

    /// Like [`PermissionEngine::ask`], but asks even when the rules allow every pattern (a
    /// deny still refuses at once); an "always" answer to another ask does not settle it.
    pub async fn ask_anyway(
        &self,
        session_id: &SessionId,
        request: PermissionRequest,
        tool: Option<ToolCallRef>,
        ruleset: &[Rule],
        abort: &CancellationToken,
    ) -> Result<(), ToolError> {
        self.ask_with(session_id, request, tool, ruleset, abort, true).await
    }

    /// Fails with the permission error a deny gives when `ruleset` followed by the session's
    /// approved rules denies any of the request's patterns; asks nothing.
    pub fn check_denied(
        &self,
        session_id: &SessionId,
        request: &PermissionRequest,
        ruleset: &[Rule],
    ) -> Result<(), ToolError> {
        let sessions = lock(&self.sessions);
        match sessions.get(session_id) {
            Some(state) => state.asks.check_denied(request, ruleset),
            None => PermissionAsks::default().check_denied(request, ruleset),
        }
        .map_err(ToolError::from)
    }

    /// The rule that decides `pattern` under `permission` for a session: the last match in
    /// `ruleset` followed by the session's approved rules.
    pub fn deciding_rule(
        &self,
        session_id: &SessionId,
        permission: &str,
        pattern: &str,
        ruleset: &[Rule],
    ) -> Option<Rule> {
        let sessions = lock(&self.sessions);
        match sessions.get(session_id) {
            Some(state) => state.asks.deciding_rule(permission, pattern, ruleset).cloned(),
            None => PermissionAsks::default().deciding_rule(permission, pattern, ruleset).cloned(),
        }
    }

    async fn ask_with(
        &self,
        session_id: &SessionId,
        request: PermissionRequest,
        tool: Option<ToolCallRef>,
        ruleset: &[Rule],
        abort: &CancellationToken,
        anyway: bool,
    ) -> Result<(), ToolError> {
        if abort.is_cancelled() {
            return Err(ToolError::Aborted);
        }
        let id = self.next_id();
        let (sender, receiver) = oneshot::channel();
        let ask = {
            let mut sessions = lock(&self.sessions);
            let state = sessions.entry(session_id.clone()).or_default();
            let outcome = if anyway {
                state.asks.ask_anyway(id.clone(), session_id.clone(), request, tool, ruleset)?
            } else {
                state.asks.ask(id.clone(), session_id.clone(), request, tool, ruleset)?
            };
            match outcome {
                AskOutcome::Allowed => return Ok(()),
                AskOutcome::Pending => {}
            }
            state.waiters.insert(id.clone(), sender);
            state.asks.pending().iter().find(|ask| ask.id == id).cloned()
        };
        let Some(ask) = ask else { return Err(ToolError::Failed { message: "permission ask lost".into() }) };
        let mut guard = PendingGuard { engine: self, session_id: session_id.clone(), id: Some(id.clone()) };
        let mut receiver = receiver;
        let answered = tokio::select! {
            biased;
            settled = &mut receiver => Some(settled),
            () = abort.cancelled() => None,
            answer = self.asker.ask(&ask) => {
                if let Some(answer) = answer {
                    self.reply(&id, answer.reply, answer.message.as_deref());
                    Some((&mut receiver).await)
                } else {
                    tokio::select! {
                        settled = &mut receiver => Some(settled),
                        () = abort.cancelled() => None,
                    }
                }
            }
        };
        match answered {
            Some(Ok(result)) => {
                guard.id = None;
                result.map_err(ToolError::from)
            }
            // The engine dropped the waiter without an answer: treat as a rejection.
            Some(Err(_)) => {
                guard.id = None;
                Err(ToolError::Permission(PermissionError::Rejected))
            }
            None => Err(ToolError::Aborted),
        }
    }

    /// Applies an answer to the pending ask `request_id` and settles every ask it decides
    /// (a reject rejects the session's other asks; an "always" may allow others). Returns the
    /// resolutions; an unknown id settles nothing.
    pub fn reply(&self, request_id: &PermissionId, reply: Reply, message: Option<&str>) -> Vec<Resolution> {
        let resolutions = {
            let mut sessions = lock(&self.sessions);
            let Some(state) = sessions
                .values_mut()
                .find(|state| state.asks.pending().iter().any(|ask| &ask.id == request_id))
            else {
                return Vec::new();
            };
            let resolutions = state.asks.reply(request_id, reply, message);
            deliver(state, &resolutions);
            resolutions
        };
        for resolution in &resolutions {
            self.asker.replied(resolution);
        }
        resolutions
    }

    /// Rejects every pending ask of a session (it was cancelled).
    pub fn reject_session(&self, session_id: &SessionId) -> Vec<Resolution> {
        let resolutions = {
            let mut sessions = lock(&self.sessions);
            let Some(state) = sessions.get_mut(session_id) else { return Vec::new() };
            let resolutions = state.asks.reject_session(session_id);
            deliver(state, &resolutions);
            resolutions
        };
        for resolution in &resolutions {
            self.asker.replied(resolution);
        }
        resolutions
    }

    fn forget(&self, session_id: &SessionId, id: &PermissionId) {
        let mut sessions = lock(&self.sessions);
        if let Some(state) = sessions.get_mut(session_id) {
            state.asks.cancel(id);
            state.waiters.remove(id);
        }
    }
}

fn deliver(state: &mut SessionState, resolutions: &[Resolution]) {
    for resolution in resolutions {
        if let Some(waiter) = state.waiters.remove(&resolution.request_id) {
            // The waiter may be gone (its call was cancelled); nothing to do then.
            let _ = waiter.send(resolution.result.clone());
        }
    }
}
