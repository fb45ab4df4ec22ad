//! Permission asks from the tools to the UI: each ask goes over a channel with a one-shot
//! sender for its answer; the dialog answers it.

use async_trait::async_trait;
use session_core::permission::{PermissionAsk, Reply};
use session_runtime::permissions::{PermissionAnswer, PermissionAsker};
use tokio::sync::{mpsc, oneshot};

/// An ask and where its answer goes.
pub type Ask = (PermissionAsk, oneshot::Sender<PermissionAnswer>);

/// The asks the UI receives.
pub type AskReceiver = mpsc::UnboundedReceiver<Ask>;

/// Sends every ask to the UI and waits for the dialog's answer.
#[derive(Debug, Clone)]
pub struct TuiAsker {
    asks: mpsc::UnboundedSender<Ask>,
}

/// An asker for the runtime and the receiver the UI reads its asks from.
pub fn asker() -> (TuiAsker, AskReceiver) {
    let (asks, received) = mpsc::unbounded_channel();
    (TuiAsker { asks }, received)
}

#[async_trait]
impl PermissionAsker for TuiAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        let (answer, answered) = oneshot::channel();
        // No UI (it quit) or no answer (the dialog went away): the ask is rejected.
        let reject = PermissionAnswer { reply: Reply::Reject, message: None };
        if self.asks.send((ask.clone(), answer)).is_err() {
            return Some(reject);
        }
        Some(answered.await.unwrap_or(reject))
    }
}
