//! The permission asker of a server: it publishes asks and replies on the runtime's bus and
//! leaves the answer to the HTTP reply route ([`PermissionEngine::reply`]).
//!
//! [`PermissionEngine::reply`]: session_runtime::permissions::PermissionEngine::reply

use std::sync::OnceLock;

use async_trait::async_trait;
use session_core::{permission::PermissionAsk, permission::Resolution};
use session_runtime::permissions::{PermissionAnswer, PermissionAsker};
use session_runtime::{Bus, BusEvent};

/// Publishes `permission.asked` and `permission.replied` on a runtime's bus.
///
/// The permission engine needs its asker before the runtime (and so its bus) exists: build
/// the engine with this asker, then [`attach`](Self::attach) the runtime's bus.
#[derive(Debug, Default)]
pub struct BusAsker {
    bus: OnceLock<Bus>,
}

impl BusAsker {
    /// An asker with no bus yet: asks raised before [`attach`](Self::attach) reach nobody.
    pub fn new() -> Self {
        Self::default()
    }

    /// Publishes on `bus` from now on (the first bus attached stays).
    pub fn attach(&self, bus: Bus) {
        if self.bus.set(bus).is_err() {
            tracing::debug!("the permission asker already publishes on a bus");
        }
    }

    fn publish(&self, event: BusEvent) {
        match self.bus.get() {
            Some(bus) => bus.publish(event),
            None => tracing::warn!(
                event = event.name(),
                "a permission event before the server's bus was attached"
            ),
        }
    }
}

#[async_trait]
impl PermissionAsker for BusAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        self.publish(BusEvent::PermissionAsked(Box::new(ask.clone())));
        // The answer comes through `PermissionEngine::reply` (the HTTP route).
        None
    }

    fn replied(&self, resolution: &Resolution) {
        self.publish(BusEvent::replied(resolution));
    }
}
