//! The HTTP transport: a trait that knows no provider, and its reqwest implementation.

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;
use futures_util::StreamExt;

use crate::error::TransportError;
use crate::stream::ByteStream;

/// A POST request, fully built.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// The absolute URL.
    pub url: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

/// A response whose body is read as it arrives.
pub struct HttpResponse {
    /// The HTTP status.
    pub status: u16,
    /// Response headers, names lower-cased (repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body, chunk by chunk.
    pub body: ByteStream,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// Sends HTTP requests; implemented over reqwest, and by tests over anything.
#[async_trait::async_trait]
pub trait HttpTransport: Send + Sync {
    /// POSTs `request` and returns as soon as the response headers are in.
    async fn post(&self, request: HttpRequest) -> Result<HttpResponse, TransportError>;
}

/// The reqwest transport (rustls).
#[derive(Debug, Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
}

impl ReqwestTransport {
    /// A transport with a default client, whose platform certificates are read on its first
    /// TLS handshake (a plain `http://` provider never reads them).
    pub fn new() -> Result<Self, TransportError> {
        let tls = crate::tls::lazy_platform_config()
            .map_err(|err| TransportError::new(format!("cannot configure TLS: {err}")))?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .build()
            .map_err(|err| TransportError::new(format!("cannot build the HTTP client: {err}")))?;
        Ok(Self { client })
    }

    /// A transport over a client configured by the caller (proxies, timeouts, certificates).
    pub fn with_client(client: reqwest::Client) -> Self {
        Self { client }
    }
}

/// The error's text with its sources, which is where reqwest puts the useful part, followed
/// by the Node error code of an underlying socket error.
fn describe(err: &reqwest::Error) -> String {
    describe_chain(err)
}

/// The text of an error and its sources. A socket error among them adds its Node code
/// (`ECONNRESET`, ...): SPEC 7.2 retries by those names (OpenCode sees them from Node), while
/// Rust's own texts ("Connection reset by peer") match no retryable pattern. Without the code,
/// a connection reset after the response began was a fatal error instead of a retry.
fn describe_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut code = node_code(err);
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        code = code.or_else(|| node_code(cause));
        source = cause.source();
    }
    if let Some(code) = code {
        text.push_str(" (");
        text.push_str(code);
        text.push(')');
    }
    text
}

/// Node's code for a socket error, for an `std::io::Error`.
fn node_code(err: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    use std::io::ErrorKind;
    Some(match err.downcast_ref::<std::io::Error>()?.kind() {
        ErrorKind::ConnectionReset => "ECONNRESET",
        ErrorKind::ConnectionRefused => "ECONNREFUSED",
        ErrorKind::ConnectionAborted => "ECONNABORTED",
        ErrorKind::TimedOut => "ETIMEDOUT",
        ErrorKind::BrokenPipe => "EPIPE",
        _ => return None,
    })
}

/// True when a socket error in the chain is a refused connection.
fn is_refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(error) = cause {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// True when `url`'s host is this machine or the local network: `localhost`, a loopback,
/// private (RFC 1918, IPv6 unique local) or link-local address.
pub(crate) fn is_local_url(url: &str) -> bool {
    use std::net::IpAddr;
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else {
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        return name == "localhost" || name.ends_with(".localhost");
    };
    match ip {
        IpAddr::V4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified(),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
            None => {
                ip.is_loopback() || ip.is_unspecified() || ip.is_unique_local() || ip.is_unicast_link_local()
            }
        },
    }
}

#[async_trait::async_trait]
impl HttpTransport for ReqwestTransport {
    async fn post(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let mut builder = self.client.post(&request.url).body(request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let response = builder.send().await.map_err(|err| {
            let text = describe(&err);
            if is_refused(&err) && is_local_url(&request.url) {
                TransportError::refused_locally(text)
            } else {
                TransportError::new(text)
            }
        })?;
        let status = response.status().as_u16();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in response.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_ascii_lowercase())
                .and_modify(|existing| {
                    existing.push_str(", ");
                    existing.push_str(&value);
                })
                .or_insert(value);
        }
        let body =
            response.bytes_stream().map(|chunk| chunk.map_err(|err| TransportError::new(describe(&err))));
        Ok(HttpResponse { status, headers, body: body.boxed() })
    }
}

#[cfg(test)]
mod describe_tests {
    use std::io;

    use super::*;
    use crate::error::LlmError;

    /// An error wrapping another, as hyper and reqwest wrap socket errors.
    #[derive(Debug)]
    struct Wrapper(io::Error);

    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error reading a body from connection")
        }
    }

    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn local_addresses_are_told_from_remote_ones() {
        for local in [
            "http://127.0.0.1:11434/v1",
            "http://localhost:8080/v1",
            "http://[::1]:1234/v1",
            "http://10.1.2.3/v1",
            "http://192.168.0.5:8000",
            "http://172.16.0.1",
            "http://169.254.1.1",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert!(is_local_url(local), "{local}");
        }
        for remote in ["https://api.openai.com/v1", "http://8.8.8.8/", "http://[2001:db8::1]/", "not a url"] {
            assert!(!is_local_url(remote), "{remote}");
        }
    }

    #[test]
    fn a_local_refusal_is_final_and_a_remote_one_is_retried() {
        let refused = Wrapper(io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused"));
        assert!(is_refused(&refused));
        assert!(!is_refused(&Wrapper(io::Error::other("x"))));
        let text = describe_chain(&refused);
        assert!(text.ends_with("(ECONNREFUSED)"), "{text}");
        let local = LlmError::Transport(TransportError::refused_locally(text.clone())).to_message_error();
        assert_eq!(session_core::retry::retryable(&local, None), None, "{local:?}");
        assert!(local.message().contains("ECONNREFUSED"), "the text still says what happened");
        let remote = LlmError::Transport(TransportError::new(text)).to_message_error();
        assert!(session_core::retry::retryable(&remote, None).is_some(), "{remote:?}");
    }

    #[tokio::test]
    async fn a_closed_loopback_port_is_refused_locally() {
        // Bind, learn the port, close: nothing listens there afterwards.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let transport = ReqwestTransport::new().unwrap();
        let request = HttpRequest {
            url: format!("http://127.0.0.1:{port}/v1/chat/completions"),
            headers: Vec::new(),
            body: Bytes::from_static(b"{}"),
        };
        let error = transport.post(request).await.unwrap_err();
        assert!(error.refused_locally, "{error:?}");
    }

    #[test]
    fn socket_errors_carry_their_node_code_and_are_retried() {
        let reset = Wrapper(io::Error::new(io::ErrorKind::ConnectionReset, "Connection reset by peer"));
        let text = describe_chain(&reset);
        assert_eq!(text, "error reading a body from connection: Connection reset by peer (ECONNRESET)");
        let error = LlmError::Transport(TransportError::new(text)).to_message_error();
        assert!(session_core::retry::retryable(&error, None).is_some(), "{error:?}");
        let other = Wrapper(io::Error::other("something else"));
        assert_eq!(describe_chain(&other), "error reading a body from connection: something else");
    }
}
