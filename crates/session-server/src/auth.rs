//! The middleware that applies [`Access`]: browsers first (an `Origin` or `Sec-Fetch-Site`
//! that is not allowed), then CORS for the allowed origins, then the token or, without it,
//! the loopback `Host`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, request::Parts};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowOrigin, AllowPrivateNetwork, CorsLayer};

use crate::access::{Access, check_browser, check_credential};

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// Wraps `router` in the checks of `access`.
pub(crate) fn protect(router: Router, access: Access) -> Router {
    let access = Arc::new(access);
    // Layers added later run first: the browser check, then CORS, then the credential.
    let router = router.layer(from_fn_with_state(access.clone(), require_credential));
    let router = match access.origins.is_empty() {
        // No origin is allowed, so every request with one is refused before CORS matters.
        true => router,
        false => router.layer(cors(access.clone())),
    };
    router.layer(from_fn_with_state(access, refuse_browsers))
}

/// Refuses requests from web pages whose origin is not allowed (403).
async fn refuse_browsers(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    match check_browser(&access, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// Lets a request through with the token, or without it on a loopback `Host` when the token
/// is not required (401 or 421 otherwise).
async fn require_credential(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    match check_credential(&access, request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// CORS for the allowed origins: preflights are answered here (they carry no credential), and
/// answers to allowed origins get `Access-Control-Allow-Origin`.
fn cors(access: Arc<Access>) -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _: &Parts| {
            access.origin_allowed(origin.as_bytes())
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        // The SDK adds headers of its own (x-opencode-directory); an allowed page may send any.
        .allow_headers(AllowHeaders::mirror_request())
        .allow_private_network(AllowPrivateNetwork::yes())
        .max_age(PREFLIGHT_MAX_AGE)
}
