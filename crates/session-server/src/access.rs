//! Who may send requests: the token, the loopback names a request without it must use, and
//! the browser origins allowed.
//!
//! A web page can reach a server on loopback: directly (a cross-site request, which carries
//! `Origin` or `Sec-Fetch-Site`) or by rebinding its own DNS name to 127.0.0.1 (a same-origin
//! request to the page's own name, which only the `Host` header gives away). The checks here
//! decide on those headers and on the credential; the middleware in `auth.rs` applies them.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr as _;

use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine as _;

use crate::error::ServerError;

/// Who may send requests to the router: the token, the address it is bound to, and the
/// browser origins allowed.
#[derive(Clone)]
pub struct Access {
    /// The token requests may carry, as `Authorization: Bearer <token>` or as the password of
    /// `Authorization: Basic` (OpenCode's clients send `opencode:<password>`). A request with
    /// it may name any `Host`.
    pub token: Option<String>,
    /// Refuse every request without the token, even on loopback.
    pub require_token: bool,
    /// The address the listener is bound to. A request without the token must name its port on
    /// a loopback host (`127.0.0.1`, `localhost`, `[::1]`); off loopback, every request needs
    /// the token (and without a token configured none is accepted).
    pub bound: SocketAddr,
    /// Browser origins that may send requests (answered with CORS headers). A request with
    /// any other `Origin`, or marked cross-site by `Sec-Fetch-Site`, is refused.
    pub origins: Vec<AllowedOrigin>,
}

impl Access {
    /// Requests to `bound` without a token, from no browser.
    pub fn new(bound: SocketAddr) -> Self {
        Self { token: None, require_token: false, bound, origins: Vec::new() }
    }

    /// Whether a request without the token is refused whatever its `Host`.
    pub(crate) fn token_required(&self) -> bool {
        self.require_token || !self.bound.ip().is_loopback()
    }

    /// Whether `origin` (an `Origin` header's value) is allowed.
    pub(crate) fn origin_allowed(&self, origin: &[u8]) -> bool {
        self.origins.iter().any(|allowed| allowed.0.as_bytes().eq_ignore_ascii_case(origin))
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("require_token", &self.require_token)
            .field("bound", &self.bound)
            .field("origins", &self.origins)
            .finish()
    }
}

/// A browser origin allowed to send requests: `scheme://host[:port]`, as browsers write it
/// in `Origin` (lower case, no default port, no path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedOrigin(String);

impl AllowedOrigin {
    /// Checks and normalises `value` (`https://app.example.com`, `http://localhost:5173`).
    pub fn parse(value: &str) -> Result<Self, OriginError> {
        let error = |reason: &str| OriginError { value: value.to_owned(), reason: reason.to_owned() };
        let trimmed = value.trim();
        if trimmed == "*" {
            return Err(error("a wildcard would let every web page drive the server; list the origins"));
        }
        let (scheme, rest) =
            trimmed.split_once("://").ok_or_else(|| error("expected scheme://host[:port]"))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
            return Err(error("the scheme is not valid"));
        }
        // A trailing slash is how origins are often pasted; a path is not part of an origin.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(error("an origin is scheme://host[:port], without a path, query or user"));
        }
        let authority = Authority::from_str(rest).map_err(|_| error("the host is not valid"))?;
        if authority.host().is_empty() {
            return Err(error("the host is missing"));
        }
        let host = authority.host().to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        let origin = match authority.port_u16() {
            Some(port) if Some(port) != default_port => format!("{scheme}://{host}:{port}"),
            _ => format!("{scheme}://{host}"),
        };
        Ok(Self(origin))
    }

    /// The origin as browsers send it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A browser origin that cannot be allowed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("origin {value:?}: {reason}")]
pub struct OriginError {
    /// The value given.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The credential a request presents.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// No `Authorization` header.
    None,
    /// A bearer token, or the password of Basic authentication.
    Token(String),
    /// An `Authorization` header this server cannot read.
    Unreadable(&'static str),
}

/// Reads `Authorization`: `Bearer <token>`, or `Basic base64(user:token)` with any user name
/// (OpenCode's clients send `opencode` unless `OPENCODE_SERVER_USERNAME` says otherwise).
pub(crate) fn credential(headers: &HeaderMap) -> Credential {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Credential::None;
    };
    let Ok(value) = value.to_str() else {
        return Credential::Unreadable("the Authorization header is not ASCII");
    };
    let (scheme, rest) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Credential::Token(rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(rest) else {
            return Credential::Unreadable("the Basic credentials are not base64");
        };
        let Ok(decoded) = String::from_utf8(decoded) else {
            return Credential::Unreadable("the Basic credentials are not UTF-8");
        };
        return match decoded.split_once(':') {
            Some((_user, password)) => Credential::Token(password.to_owned()),
            None => Credential::Unreadable("the Basic credentials are not user:password"),
        };
    }
    Credential::Unreadable("the Authorization scheme is neither Bearer nor Basic")
}

/// Whether `host` (a `Host` header's value) names `port` on loopback: `localhost` or a
/// loopback address. Such names cannot be a rebound DNS name: browsers resolve `localhost`
/// to loopback themselves, and an address is not resolved at all.
pub(crate) fn loopback_host(host: &[u8], port: u16) -> bool {
    // A Host is a name and a port; user information there is no browser's doing.
    let Some(Ok(authority)) =
        std::str::from_utf8(host).ok().filter(|host| !host.contains('@')).map(Authority::from_str)
    else {
        return false;
    };
    let name = authority.host();
    let is_loopback = name.eq_ignore_ascii_case("localhost")
        || name
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(name)
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    // Without a port the client means the default one.
    is_loopback && authority.port_u16().unwrap_or(80) == port
}

/// The `Host` a request names: the header, else the authority of an absolute request URI.
pub(crate) fn request_host<'a>(headers: &'a HeaderMap, uri: &'a axum::http::Uri) -> Option<&'a [u8]> {
    headers
        .get(header::HOST)
        .map(HeaderValue::as_bytes)
        .or_else(|| uri.authority().map(|authority| authority.as_str().as_bytes()))
}

/// Refuses a request that a browser sent from a page of another origin: an `Origin` that is
/// not allowed, or, without `Origin`, `Sec-Fetch-Site: cross-site` or `same-site`.
pub(crate) fn check_browser(access: &Access, headers: &HeaderMap) -> Result<(), ServerError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        if access.origin_allowed(origin.as_bytes()) {
            return Ok(());
        }
        return Err(ServerError::Forbidden(format!(
            "requests from web pages are refused: origin {} is not allowed (allow it with --cors or server.cors)",
            shown(origin.as_bytes())
        )));
    }
    let site = headers.get("sec-fetch-site").map(HeaderValue::as_bytes);
    if site.is_some_and(|site| {
        site.eq_ignore_ascii_case(b"cross-site") || site.eq_ignore_ascii_case(b"same-site")
    }) {
        return Err(ServerError::Forbidden(
            "requests from web pages of other sites are refused (Sec-Fetch-Site); allow an origin with --cors or server.cors".into(),
        ));
    }
    Ok(())
}

/// Lets a request through when it carries the token, or when it needs none and names a
/// loopback host with the bound port.
pub(crate) fn check_credential(
    access: &Access,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
) -> Result<(), ServerError> {
    if let Some(token) = &access.token {
        match credential(headers) {
            Credential::Token(given) if same(given.as_bytes(), token.as_bytes()) => return Ok(()),
            Credential::Token(_) => return Err(ServerError::Unauthorized("the token is wrong".into())),
            Credential::Unreadable(why) => return Err(ServerError::Unauthorized(why.into())),
            Credential::None => {}
        }
    }
    if access.token_required() {
        return Err(ServerError::Unauthorized("this server requires the token".into()));
    }
    let port = access.bound.port();
    match request_host(headers, uri) {
        Some(host) if loopback_host(host, port) => Ok(()),
        Some(host) => Err(ServerError::Misdirected(format!(
            "Host {} is not this server: without the token, requests must name 127.0.0.1:{port}, \
             localhost:{port} or [::1]:{port}",
            shown(host)
        ))),
        None => Err(ServerError::Misdirected(format!(
            "the request names no Host: without the token, requests must name 127.0.0.1:{port}, \
             localhost:{port} or [::1]:{port}"
        ))),
    }
}

/// A header value as it may be quoted back in an error: at most 100 characters.
fn shown(value: &[u8]) -> String {
    let text = String::from_utf8_lossy(value);
    let cut: String = text.chars().take(100).collect();
    format!("{cut:?}")
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
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        assert!(same(b"secret", b"secret"));
        assert!(!same(b"secret", b"secreT"));
        assert!(!same(b"secret", b"secret2"));
        assert!(!same(b"", b"x"));
    }

    #[test]
    fn origins_are_normalised_and_checked() {
        let ok = |value: &str| AllowedOrigin::parse(value).map(|o| o.0);
        assert_eq!(ok("https://App.Example.com/").as_deref(), Ok("https://app.example.com"));
        assert_eq!(ok("https://app.example.com:443").as_deref(), Ok("https://app.example.com"));
        assert_eq!(ok("http://localhost:5173").as_deref(), Ok("http://localhost:5173"));
        assert_eq!(ok("http://[::1]:8080").as_deref(), Ok("http://[::1]:8080"));
        assert_eq!(ok("tauri://localhost").as_deref(), Ok("tauri://localhost"));
        for bad in
            ["*", "example.com", "https://", "https://a.example/path", "https://u@a.example", "://x", ""]
        {
            assert!(AllowedOrigin::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn loopback_hosts_need_the_bound_port() {
        for good in ["127.0.0.1:4096", "localhost:4096", "LOCALHOST:4096", "[::1]:4096", "127.0.0.2:4096"] {
            assert!(loopback_host(good.as_bytes(), 4096), "{good}");
        }
        for bad in [
            "attacker.example:4096",
            "127.0.0.1:4097",
            "127.0.0.1",
            "localhost.attacker.example:4096",
            "127.0.0.1.nip.io:4096",
            "10.0.0.1:4096",
            "[::1]",
            "",
            "127.0.0.1:4096:1",
            "attacker.example@127.0.0.1:4096",
        ] {
            assert!(!loopback_host(bad.as_bytes(), 4096), "{bad}");
        }
        assert!(loopback_host(b"localhost", 80));
        assert!(!loopback_host(&[0xff, b':', b'1'], 1));
    }

    #[test]
    fn credentials_are_read_from_bearer_and_basic() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            headers
        };
        let token = |s: &str| Credential::Token(s.to_owned());
        assert_eq!(credential(&HeaderMap::new()), Credential::None);
        assert_eq!(credential(&with("Bearer abc")), token("abc"));
        assert_eq!(credential(&with("bearer  abc ")), token("abc"));
        // opencode:pw, and a user name of the client's choosing.
        assert_eq!(credential(&with("Basic b3BlbmNvZGU6cHc=")), token("pw"));
        assert_eq!(credential(&with("Basic Ym9iOnA6dw==")), token("p:w"));
        assert!(matches!(credential(&with("Basic !!!")), Credential::Unreadable(_)));
        assert!(matches!(credential(&with("Basic bm9jb2xvbg==")), Credential::Unreadable(_)));
        assert!(matches!(credential(&with("Digest x")), Credential::Unreadable(_)));
    }
}
