//! The bearer token check: every request carries `Authorization: Bearer <token>` when the
//! server has a token (always when it binds a non-loopback address).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ServerError;

/// Lets a request through when it carries the token; answers 401 otherwise.
pub(crate) async fn require_token(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(str::trim);
    match given {
        Some(given) if same(given.as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => ServerError::Unauthorized.into_response(),
    }
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_exactly() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
    }
}
