//! Serving the router on a TCP listener with limits a slow client cannot wear out.
//!
//! `axum::serve` keeps every accepted connection for as long as the client likes, and hyper
//! waits up to 30 seconds for a request head: 20,000 connections that send one header byte a
//! second held the server until a client with the token timed out (a denial of service). Here:
//!
//! - a connection that has not delivered a complete request head within
//!   [`ConnectionLimits::header_timeout`] is closed (hyper's own header deadline, with tokio's
//!   timer);
//! - at most [`ConnectionLimits::max_connections`] connections are kept, and at most
//!   [`ConnectionLimits::max_per_peer`] from one address. When a new connection would pass a
//!   cap, the oldest connection of that scope that is *waiting* (no request in progress: still
//!   sending its head, or idle between requests) is closed to make room; only when every one
//!   is busy is the new connection refused. On loopback every client is 127.0.0.1, so a cap
//!   that refused new connections would lock the real client out together with the attacker;
//!   shedding the waiting ones lets a client that sends its request promptly in, since a
//!   dripping connection never gets past waiting.
//!
//! A request is in progress from its complete head until its response body is finished or
//! dropped, so a long-lived response (the `/event` streams) is never shed.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long, how many: the limits [`serve`] keeps connections to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a connection may take to deliver a complete request head.
    pub header_timeout: Duration,
    /// How many connections are kept in all.
    pub max_connections: usize,
    /// How many connections are kept from one peer address.
    pub max_per_peer: usize,
}

impl Default for ConnectionLimits {
    /// 10 seconds for a head; 512 connections (under the usual 1,024 open files), 256 from
    /// one address.
    fn default() -> Self {
        Self { header_timeout: Duration::from_secs(10), max_connections: 512, max_per_peer: 256 }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` fires, then stops accepting,
/// lets every connection finish its request in progress, and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let registry = Arc::new(Registry::new(limits));
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // listener itself is fine. A pause keeps an exhausted process from spinning.
                tracing::debug!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(admitted) = registry.admit(peer.ip()) else {
            tracing::debug!(%peer, "connection refused: every kept connection is busy");
            continue;
        };
        let connection =
            Connection { registry: registry.clone(), admitted, peer, shutdown: shutdown.clone() };
        connections.spawn(connection.run(stream, router.clone(), limits.header_timeout));
    }
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// One accepted connection and what the registry knows of it.
struct Connection {
    registry: Arc<Registry>,
    admitted: Admitted,
    peer: SocketAddr,
    shutdown: CancellationToken,
}

impl Connection {
    async fn run(self, stream: TcpStream, router: Router, header_timeout: Duration) {
        let Admitted { id, busy, shed } = &self.admitted;
        let service =
            Counted { inner: TowerToHyperService::new(router), busy: busy.clone(), peer: self.peer };
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        let mut closing = false;
        loop {
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, peer = %self.peer, "connection ended");
                    }
                    break;
                }
                // Dropping the connection closes it at once.
                () = shed.cancelled() => break,
                () = self.shutdown.cancelled(), if !closing => {
                    // A connection with no request in progress has nothing to finish.
                    if busy.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    closing = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
        self.registry.remove(*id);
    }
}

/// The router as a hyper service that counts its requests in progress on `busy` (the head is
/// in, the response body not yet finished) and gives handlers the peer address.
#[derive(Clone)]
struct Counted {
    inner: TowerToHyperService<Router>,
    busy: Arc<AtomicUsize>,
    peer: SocketAddr,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Counted {
    type Response = hyper::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        let in_progress = InProgress::start(self.busy.clone());
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            // The count drops with the body: when it is sent, or the connection goes.
            Ok(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &in_progress;
                    frame
                }))
            }))
        })
    }
}

/// One request in progress on a connection's counter, until dropped.
struct InProgress(Arc<AtomicUsize>);

impl InProgress {
    fn start(busy: Arc<AtomicUsize>) -> Self {
        busy.fetch_add(1, Ordering::SeqCst);
        Self(busy)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection the registry admitted: its id, its in-progress counter, and the token that
/// sheds it.
struct Admitted {
    id: u64,
    busy: Arc<AtomicUsize>,
    shed: CancellationToken,
}

/// What the registry keeps of a connection.
struct Kept {
    peer: IpAddr,
    busy: Arc<AtomicUsize>,
    shed: CancellationToken,
}

/// The connections kept, oldest first, and how many come from each peer.
struct Registry {
    limits: ConnectionLimits,
    state: Mutex<RegistryState>,
}

#[derive(Default)]
struct RegistryState {
    next_id: u64,
    kept: BTreeMap<u64, Kept>,
    per_peer: HashMap<IpAddr, usize>,
}

impl Registry {
    fn new(limits: ConnectionLimits) -> Self {
        Self { limits, state: Mutex::new(RegistryState::default()) }
    }

    /// Makes room for a new connection from `peer` by shedding the oldest waiting one of each
    /// full scope (the peer's, then all); `None` when a scope is full of busy connections.
    fn admit(&self, peer: IpAddr) -> Option<Admitted> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.per_peer.get(&peer).copied().unwrap_or(0) >= self.limits.max_per_peer.max(1) {
            state.shed_oldest_waiting(Some(peer))?;
        }
        if state.kept.len() >= self.limits.max_connections.max(1) {
            state.shed_oldest_waiting(None)?;
        }
        let id = state.next_id;
        state.next_id += 1;
        let busy = Arc::new(AtomicUsize::new(0));
        let shed = CancellationToken::new();
        state.kept.insert(id, Kept { peer, busy: busy.clone(), shed: shed.clone() });
        *state.per_peer.entry(peer).or_default() += 1;
        Some(Admitted { id, busy, shed })
    }

    /// Forgets a connection that ended (or was shed).
    fn remove(&self, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.forget(id);
    }

    #[cfg(test)]
    fn kept(&self) -> Vec<u64> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.kept.keys().copied().collect()
    }
}

impl RegistryState {
    /// Sheds the oldest connection without a request in progress, of `peer` or of anyone.
    fn shed_oldest_waiting(&mut self, peer: Option<IpAddr>) -> Option<()> {
        let id = self
            .kept
            .iter()
            .find(|(_, kept)| peer.is_none_or(|p| kept.peer == p) && kept.busy.load(Ordering::SeqCst) == 0)
            .map(|(id, _)| *id)?;
        if let Some(kept) = self.kept.get(&id) {
            kept.shed.cancel();
        }
        self.forget(id);
        Some(())
    }

    fn forget(&mut self, id: u64) {
        let Some(kept) = self.kept.remove(&id) else { return };
        if let Some(count) = self.per_peer.get_mut(&kept.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_peer.remove(&kept.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max_connections: usize, max_per_peer: usize) -> Registry {
        Registry::new(ConnectionLimits {
            header_timeout: Duration::from_secs(1),
            max_connections,
            max_per_peer,
        })
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_full_peer_sheds_its_oldest_waiting_connection_not_the_new_one() {
        let registry = registry(10, 2);
        let first = registry.admit(A).unwrap();
        let second = registry.admit(A).unwrap();
        let other = registry.admit(B).unwrap();
        first.busy.fetch_add(1, Ordering::SeqCst);
        // The busy first connection stays; the waiting second goes.
        let third = registry.admit(A).unwrap();
        assert!(!first.shed.is_cancelled());
        assert!(second.shed.is_cancelled());
        assert!(!other.shed.is_cancelled());
        assert_eq!(registry.kept(), vec![first.id, other.id, third.id]);
    }

    #[test]
    fn a_full_server_sheds_across_peers_and_refuses_only_when_all_are_busy() {
        let registry = registry(2, 2);
        let a = registry.admit(A).unwrap();
        let b = registry.admit(B).unwrap();
        let c = registry.admit(A).unwrap();
        assert!(a.shed.is_cancelled(), "the oldest waiting connection makes room");
        b.busy.fetch_add(1, Ordering::SeqCst);
        c.busy.fetch_add(1, Ordering::SeqCst);
        assert!(registry.admit(B).is_none(), "every kept connection is busy");
        c.busy.fetch_sub(1, Ordering::SeqCst);
        let d = registry.admit(B).unwrap();
        assert!(c.shed.is_cancelled());
        assert_eq!(registry.kept(), vec![b.id, d.id]);
    }

    #[test]
    fn an_ended_connection_frees_its_place() {
        let registry = registry(1, 1);
        let a = registry.admit(A).unwrap();
        a.busy.fetch_add(1, Ordering::SeqCst);
        assert!(registry.admit(A).is_none());
        registry.remove(a.id);
        assert!(registry.admit(A).is_some());
    }
}
