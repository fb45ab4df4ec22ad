//! The `Provider` trait and the HTTP provider that glues a request builder, a transport and a
//! stream parser together.

use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::{Either, select};
use futures_util::{StreamExt, TryStreamExt};
use tokio_util::sync::CancellationToken;

use crate::decode::Api;
use crate::error::{LlmError, api_failure};
use crate::request::{BuiltRequest, LlmRequest};
use crate::stream::{ByteStream, LlmStream, StreamLimits, event_stream};
use crate::transport::{HttpRequest, HttpTransport};
use crate::{anthropic, gemini, openai_chat, openai_responses};

/// The most of an error body that is read (error bodies are small; a proxy's may not be).
const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

/// A model provider: a request in, a stream of events out.
pub trait Provider: Send + Sync {
    /// The wire format this provider speaks.
    fn api(&self) -> Api;

    /// Starts the call. Failures (HTTP errors included) arrive as the stream's one `Err` item;
    /// cancelling `request.cancel` ends the stream with `LlmError::Aborted`.
    fn stream(&self, request: LlmRequest) -> LlmStream;
}

/// Where and how to reach one provider.
#[derive(Clone)]
pub struct ProviderEndpoint {
    /// The provider id (`openai`, `anthropic`, `openrouter`, ...); the error classifier reads it.
    pub provider_id: String,
    /// The wire format.
    pub api: Api,
    /// The base URL, for example `https://api.openai.com/v1`.
    pub base_url: String,
    /// The API key, sent the way the format expects.
    pub api_key: Option<String>,
    /// Extra headers for every request.
    pub headers: Vec<(String, String)>,
    /// Stream limits: idle timeout and event size.
    pub limits: StreamLimits,
}

impl fmt::Debug for ProviderEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs.
        f.debug_struct("ProviderEndpoint")
            .field("provider_id", &self.provider_id)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("limits", &self.limits)
            .finish()
    }
}

impl ProviderEndpoint {
    /// A configuration with the format's public base URL and default limits.
    pub fn new(provider_id: impl Into<String>, api: Api, api_key: Option<String>) -> Self {
        Self {
            provider_id: provider_id.into(),
            api,
            base_url: default_base_url(api).to_owned(),
            api_key,
            headers: Vec::new(),
            limits: StreamLimits::default(),
        }
    }
}

/// The public base URL of each format's reference provider.
pub fn default_base_url(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => "https://api.openai.com/v1",
        Api::Anthropic => "https://api.anthropic.com/v1",
        Api::Gemini => "https://generativelanguage.googleapis.com/v1beta",
    }
}

/// The endpoint of an AI SDK provider package whose catalog entry names none (the package
/// knows it), or `None` for packages that need a configured base URL.
pub fn package_base_url(npm: &str) -> Option<&'static str> {
    Some(match npm {
        "@ai-sdk/xai" => "https://api.x.ai/v1",
        "@ai-sdk/mistral" => "https://api.mistral.ai/v1",
        "@ai-sdk/groq" => "https://api.groq.com/openai/v1",
        "@ai-sdk/togetherai" => "https://api.together.xyz/v1",
        "@ai-sdk/cerebras" => "https://api.cerebras.ai/v1",
        "@ai-sdk/deepseek" => "https://api.deepseek.com/v1",
        "@ai-sdk/deepinfra" => "https://api.deepinfra.com/v1/openai",
        "@ai-sdk/fireworks" => "https://api.fireworks.ai/inference/v1",
        "@ai-sdk/perplexity" => "https://api.perplexity.ai",
        "@openrouter/ai-sdk-provider" => "https://openrouter.ai/api/v1",
        _ => return None,
    })
}

#[cfg(test)]
mod base_url_tests {
    use super::*;

    #[test]
    fn packages_without_a_catalog_endpoint_have_their_own() {
        assert_eq!(package_base_url("@ai-sdk/groq"), Some("https://api.groq.com/openai/v1"));
        assert_eq!(package_base_url("@ai-sdk/xai"), Some("https://api.x.ai/v1"));
        // The first-party packages use the format's default; unknown ones need configuration.
        assert_eq!(package_base_url("@ai-sdk/openai"), None);
        assert_eq!(package_base_url("@ai-sdk/azure"), None);
    }
}

/// The pure request builder of `api`.
pub fn build_request(api: Api, request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    match api {
        Api::OpenAiChat => openai_chat::build_request(request),
        Api::OpenAiResponses => openai_responses::build_request(request),
        Api::Anthropic => anthropic::build_request(request),
        Api::Gemini => gemini::build_request(request),
    }
}

/// The `User-Agent` of provider requests: `session/<version>`.
pub const USER_AGENT: &str = concat!("session/", env!("CARGO_PKG_VERSION"));

/// The headers naming the session a request serves ([`LlmRequest::session_id`]).
pub const SESSION_HEADERS: [&str; 2] = ["x-session-affinity", "x-session-id"];

/// The full HTTP request for `request`: URL, format headers, authentication, extra headers.
pub fn http_request(config: &ProviderEndpoint, request: &LlmRequest) -> Result<HttpRequest, LlmError> {
    let cannot =
        |err: serde_json::Error| LlmError::InvalidRequest(format!("cannot serialise the request: {err}"));
    let (path, format_headers, body) = match config.api {
        // Serialised from the borrowed body, without a `Value` tree in between.
        Api::OpenAiChat => {
            let body = serde_json::to_vec(&openai_chat::body(request)?).map_err(cannot)?;
            (openai_chat::PATH.to_owned(), openai_chat::headers(), body)
        }
        api => {
            let built = build_request(api, request)?;
            (built.path, built.headers, serde_json::to_vec(&built.body).map_err(cannot)?)
        }
    };
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        // Providers see who calls them, as OpenCode's `opencode/<version>` tells them;
        // a configured `user-agent` header replaces it.
        ("user-agent".to_owned(), USER_AGENT.to_owned()),
    ];
    headers.extend(format_headers);
    if let Some(key) = &config.api_key {
        headers.push(match config.api {
            Api::OpenAiChat | Api::OpenAiResponses => ("authorization".to_owned(), format!("Bearer {key}")),
            Api::Anthropic => ("x-api-key".to_owned(), key.clone()),
            Api::Gemini => ("x-goog-api-key".to_owned(), key.clone()),
        });
    }
    if let Some(session_id) = &request.session_id {
        // OpenCode 1.18.34 names the session on every request of it (the agent's steps and the
        // title alike), so a provider or proxy can route and cache a session's requests together.
        for name in SESSION_HEADERS {
            headers.push((name.to_owned(), session_id.clone()));
        }
    }
    // A configured header replaces ours of the same name.
    headers.retain(|(name, _)| {
        !config.headers.iter().any(|(configured, _)| configured.eq_ignore_ascii_case(name))
    });
    headers.extend(config.headers.iter().cloned());
    Ok(HttpRequest {
        url: format!("{}{}", config.base_url.trim_end_matches('/'), path),
        headers,
        body: Bytes::from(body),
    })
}

/// The thin async call: sends the request and returns the event stream, or the classified
/// `ProviderApiError` of a non-2xx answer.
pub async fn call(
    transport: &dyn HttpTransport,
    config: &ProviderEndpoint,
    request: &LlmRequest,
) -> Result<LlmStream, LlmError> {
    let http = http_request(config, request)?;
    let url = http.url.clone();
    let cancel = request.cancel.clone();
    let response = {
        let cancelled = pin!(cancel.cancelled());
        let sent = pin!(transport.post(http));
        match select(cancelled, sent).await {
            Either::Left(_) => return Err(LlmError::Aborted),
            Either::Right((response, _)) => response?,
        }
    };
    if !(200..300).contains(&response.status) {
        let body = read_error_body(response.body, config.limits, &cancel).await?;
        return Err(api_failure(&config.provider_id, response.status, response.headers, body, Some(url)));
    }
    Ok(event_stream(config.api, response.body, config.limits, cancel))
}

/// Reads an error body, bounded in size and by the idle timeout, as text.
async fn read_error_body(
    mut body: ByteStream,
    limits: StreamLimits,
    cancel: &CancellationToken,
) -> Result<Option<String>, LlmError> {
    let mut bytes = Vec::new();
    loop {
        let next = {
            let cancelled = pin!(cancel.cancelled());
            let chunk = pin!(tokio::time::timeout(limits.idle_timeout, body.next()));
            match select(cancelled, chunk).await {
                Either::Left(_) => return Err(LlmError::Aborted),
                Either::Right((chunk, _)) => chunk,
            }
        };
        match next {
            Err(_elapsed) => return Err(LlmError::IdleTimeout { after: limits.idle_timeout }),
            Ok(None) => break,
            Ok(Some(chunk)) => {
                let chunk = chunk?;
                let room = MAX_ERROR_BODY_BYTES.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if bytes.len() >= MAX_ERROR_BODY_BYTES {
                    break;
                }
            }
        }
    }
    Ok((!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned()))
}

/// A provider over HTTP: any of the four formats, any transport.
#[derive(Clone)]
pub struct HttpProvider {
    config: Arc<ProviderEndpoint>,
    transport: Arc<dyn HttpTransport>,
}

impl fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider for `config` over `transport`.
    pub fn new(config: ProviderEndpoint, transport: Arc<dyn HttpTransport>) -> Self {
        Self { config: Arc::new(config), transport }
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderEndpoint {
        &self.config
    }
}

impl Provider for HttpProvider {
    fn api(&self) -> Api {
        self.config.api
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        let config = Arc::clone(&self.config);
        let transport = Arc::clone(&self.transport);
        futures_util::stream::once(async move { call(transport.as_ref(), &config, &request).await })
            .try_flatten()
            .boxed()
    }
}

#[cfg(test)]
mod header_tests {
    use super::*;

    fn header<'a>(http: &'a HttpRequest, name: &str) -> Vec<&'a str> {
        http.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    fn request(session_id: Option<&str>) -> LlmRequest {
        LlmRequest { model: "m".into(), session_id: session_id.map(str::to_owned), ..LlmRequest::default() }
    }

    #[test]
    fn every_format_names_the_session_in_both_headers() {
        for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini] {
            let config = ProviderEndpoint::new("p", api, Some("key".into()));
            let http = http_request(&config, &request(Some("ses_abc"))).unwrap();
            for name in SESSION_HEADERS {
                assert_eq!(header(&http, name), ["ses_abc"], "{api:?} {name}");
            }
        }
    }

    #[test]
    fn a_request_of_no_session_names_none() {
        let config = ProviderEndpoint::new("p", Api::OpenAiChat, None);
        let http = http_request(&config, &request(None)).unwrap();
        for name in SESSION_HEADERS {
            assert!(header(&http, name).is_empty(), "{name}: {:?}", http.headers);
        }
    }

    #[test]
    fn a_configured_header_replaces_ours_and_is_sent_once() {
        let mut config = ProviderEndpoint::new("p", Api::OpenAiChat, None);
        config.headers = vec![("X-Session-Id".into(), "mine".into()), ("User-Agent".into(), "me".into())];
        let http = http_request(&config, &request(Some("ses_abc"))).unwrap();
        assert_eq!(header(&http, "x-session-id"), ["mine"]);
        assert_eq!(header(&http, "user-agent"), ["me"]);
        // The control: the header not configured is still ours.
        assert_eq!(header(&http, "x-session-affinity"), ["ses_abc"]);
    }
}
