//! Work a run forks and does not wait for (titles, snapshot housekeeping): tracked so that a
//! short-lived process can wait for it before exiting, and cancelled together.

use std::future::Future;
use std::sync::Mutex;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::runs::lock;

/// The runtime's background tasks.
#[derive(Debug, Default)]
pub(super) struct Background {
    tasks: Mutex<Vec<JoinHandle<()>>>,
    cancel: CancellationToken,
}

impl Background {
    /// Runs `task` on its own; finished tasks are forgotten as new ones come, so a long-lived
    /// server keeps only the handles of tasks still running.
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = lock(&self.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(tokio::spawn(task));
    }

    /// The token background tasks stop at.
    pub(super) fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Cancels every background task (they end at their next await).
    pub(super) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits until every task spawned so far, and every task those spawned, has ended.
    pub(super) async fn settle(&self) {
        loop {
            let tasks = std::mem::take(&mut *lock(&self.tasks));
            if tasks.is_empty() {
                return;
            }
            for task in tasks {
                if let Err(error) = task.await
                    && error.is_panic()
                {
                    tracing::warn!(%error, "a background task panicked");
                }
            }
        }
    }
}
