//! Model sources: providers and models from the catalog with the configuration laid over it
//! (the HTTP providers `session run` and `session serve` call), and a fixed table for
//! embedders and tests that bring their own provider clients.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use session_llm::{Api, Catalog, CatalogModel, HttpProvider, HttpTransport, ReqwestTransport, StreamLimits};

use super::ComposeError;
use crate::config::{Config, Timeout};
use crate::engine::{ModelSource, ProviderEntry};

/// Key variables by wire format, used when neither the catalog nor the config names one.
fn default_key_vars(api: Api) -> &'static [&'static str] {
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => &["OPENAI_API_KEY"],
        Api::Anthropic => &["ANTHROPIC_API_KEY"],
        Api::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    }
}

/// Everything needed to call one provider.
#[derive(Debug, Clone)]
pub struct ResolvedProvider {
    /// Provider id.
    pub id: String,
    /// Its npm package.
    pub npm: String,
    /// Its wire format.
    pub api: Api,
    /// Where to send requests.
    pub base_url: String,
    /// The key, if one was found (never logged or stored).
    pub api_key: Option<String>,
    /// The variables that were looked at for the key, for the error message.
    pub key_vars: Vec<String>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
}

impl ResolvedProvider {
    /// True for servers on this machine, which need no key.
    pub fn is_local(&self) -> bool {
        self.base_url.contains("://127.0.0.1")
            || self.base_url.contains("://localhost")
            || self.base_url.contains("://[::1]")
    }
}

/// The catalog with the configuration laid over it.
pub struct ConfiguredModels {
    catalog: Catalog,
    config: Config,
    env: HashMap<String, String>,
    base_url_override: Option<(String, String)>,
    /// One HTTP client for every provider: building one loads TLS roots.
    transport: Arc<dyn HttpTransport>,
}

impl ConfiguredModels {
    /// Models from `catalog` and `config`; keys come from `env`; `base_url_override` points one
    /// provider elsewhere (`--base-url`). Fails when no HTTP client can be built.
    pub fn new(
        catalog: Catalog,
        config: Config,
        env: HashMap<String, String>,
        base_url_override: Option<(String, String)>,
    ) -> Result<Self, ComposeError> {
        let transport: Arc<dyn HttpTransport> = Arc::new(ReqwestTransport::new()?);
        Ok(Self { catalog, config, env, base_url_override, transport })
    }

    /// Resolves a provider, or says clearly why it cannot be used.
    pub fn resolve_provider(&self, id: &str) -> Result<ResolvedProvider, ComposeError> {
        let listed = self.catalog.provider(id);
        let configured = self.config.provider.get(id);
        if listed.is_none() && configured.is_none() {
            return Err(ComposeError::UnknownProvider(id.to_owned()));
        }
        let npm = configured
            .and_then(|p| p.npm.clone())
            .or_else(|| listed.and_then(|p| p.npm.clone()))
            .unwrap_or_else(|| session_llm::OPENAI_COMPATIBLE_NPM.to_owned());
        let api = crate::config::api_for_package(id, &npm)?;
        let base_url = match &self.base_url_override {
            Some((provider, url)) if provider == id => url.clone(),
            _ => configured
                .and_then(|p| p.base_url().map(str::to_owned))
                .or_else(|| listed.and_then(|p| p.api.clone()))
                .or_else(|| session_llm::package_base_url(&npm).map(str::to_owned))
                .unwrap_or_else(|| session_llm::default_base_url(api).to_owned()),
        };
        let mut key_vars: Vec<String> = configured
            .and_then(|p| p.env.clone())
            .or_else(|| listed.map(|p| p.env.clone()).filter(|vars| !vars.is_empty()))
            .unwrap_or_default();
        if key_vars.is_empty() {
            key_vars = default_key_vars(api).iter().map(|v| (*v).to_owned()).collect();
        }
        // An empty key (an unset `{env:VAR}` substitutes as "") is no key: never sent.
        let api_key = configured
            .and_then(|p| p.options.api_key.clone())
            .filter(|key| !key.trim().is_empty())
            .or_else(|| key_vars.iter().find_map(|var| self.env.get(var).filter(|v| !v.is_empty()).cloned()));
        let headers = configured
            .map(|p| p.options.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        Ok(ResolvedProvider { id: id.to_owned(), npm, api, base_url, api_key, key_vars, headers })
    }

    /// Resolves a model of a provider with the config's limits and prices laid over the catalog's.
    pub fn resolve_model(&self, provider: &str, model: &str) -> Option<CatalogModel> {
        let configured = self.config.provider.get(provider).and_then(|p| p.models.get(model));
        let mut found = self.catalog.resolve(provider, model).or_else(|| {
            // A provider only the config knows works like an OpenAI-compatible one, with the
            // models the config declares under it.
            configured.is_some().then(|| CatalogModel::unknown(model))
        })?;
        if let Some(config) = configured {
            if let Some(limit) = &config.limit {
                found.limit = limit.resolve(Some(&found.limit));
            }
            // Every configured model gets its base prices only, even one without a `cost`
            // (SPEC 5 "Configured models").
            found.cost = config.cost.clone().unwrap_or_default().resolve(Some(&found.cost));
            if let Some(id) = &config.id {
                found.id.clone_from(id);
            }
            // The capability flags a config sets win over the catalog's (a custom model is a
            // reasoning model only when its config says so).
            found.reasoning = config.reasoning.unwrap_or(found.reasoning);
            found.attachment = config.attachment.unwrap_or(found.attachment);
            found.temperature = config.temperature.unwrap_or(found.temperature);
            found.tool_call = config.tool_call.unwrap_or(found.tool_call);
        }
        Some(found)
    }
}

/// The stream limits of a provider: `options.chunkTimeout` is the idle timeout between two
/// streamed chunks (milliseconds; `false` for practically none), else the default.
fn stream_limits(chunk_timeout: Option<Timeout>) -> StreamLimits {
    let idle_timeout = match chunk_timeout {
        None => return StreamLimits::default(),
        Some(Timeout::Millis(ms)) => Duration::from_millis(ms),
        // Not unbounded: the reader adds the timeout to the current instant.
        Some(Timeout::Disabled) => Duration::from_secs(u64::from(u32::MAX)),
    };
    StreamLimits { idle_timeout, ..StreamLimits::default() }
}

/// A fixed table of providers and models: for embedders and tests whose provider clients are
/// their own (a scripted model, a test double). A provider listed without models answers
/// every model id with an unknown model (no limits, no prices).
#[derive(Debug, Clone, Default)]
pub struct StaticModels {
    providers: HashMap<String, (ProviderEntry, HashMap<String, CatalogModel>)>,
}

impl StaticModels {
    /// An empty table: every provider unknown (a runtime that never calls a model).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the provider `id` served by `entry`.
    pub fn with_provider(mut self, id: impl Into<String>, entry: ProviderEntry) -> Self {
        self.providers.insert(id.into(), (entry, HashMap::new()));
        self
    }

    /// Adds `model` (looked up by `model_id`) to the provider `provider_id` added before.
    pub fn with_model(mut self, provider_id: &str, model_id: impl Into<String>, model: CatalogModel) -> Self {
        if let Some((_, models)) = self.providers.get_mut(provider_id) {
            models.insert(model_id.into(), model);
        }
        self
    }
}

impl ModelSource for StaticModels {
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry> {
        self.providers.get(provider_id).map(|(entry, _)| entry.clone())
    }

    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel> {
        let (_, models) = self.providers.get(provider_id)?;
        if models.is_empty() {
            return Some(CatalogModel::unknown(model_id));
        }
        models.get(model_id).cloned()
    }

    fn small_model(&self, provider_id: &str) -> Option<String> {
        let (_, models) = self.providers.get(provider_id)?;
        session_llm::small_model(models.iter().map(|(id, model)| (id.as_str(), model))).map(str::to_owned)
    }
}

impl ModelSource for ConfiguredModels {
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry> {
        let resolved = self.resolve_provider(provider_id).ok()?;
        let retry = self.config.provider.get(provider_id).and_then(|p| p.options.retry.clone());
        let chunk_timeout = self.config.provider.get(provider_id).and_then(|p| p.options.chunk_timeout);
        let client = HttpProvider::new(
            session_llm::ProviderEndpoint {
                provider_id: resolved.id.clone(),
                api: resolved.api,
                base_url: resolved.base_url.clone(),
                api_key: resolved.api_key.clone(),
                headers: resolved.headers.clone(),
                limits: stream_limits(chunk_timeout),
            },
            self.transport.clone(),
        );
        Some(ProviderEntry { client: Arc::new(client), npm: resolved.npm, retry })
    }

    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel> {
        self.resolve_model(provider_id, model_id)
    }

    /// The catalog's rule over the provider's models with the configuration laid over them
    /// (a configured price counts), models only the configuration declares included.
    fn small_model(&self, provider_id: &str) -> Option<String> {
        let mut ids: Vec<&str> = self
            .catalog
            .provider(provider_id)
            .map(|provider| provider.models.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if let Some(configured) = self.config.provider.get(provider_id) {
            ids.extend(configured.models.keys().map(String::as_str));
        }
        let resolved: Vec<(&str, CatalogModel)> =
            ids.into_iter().filter_map(|id| Some((id, self.resolve_model(provider_id, id)?))).collect();
        session_llm::small_model(resolved.iter().map(|(id, model)| (*id, model))).map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_timeout_sets_the_idle_timeout() {
        assert_eq!(stream_limits(None), StreamLimits::default());
        assert_eq!(stream_limits(Some(Timeout::Millis(300))).idle_timeout, Duration::from_millis(300));
        assert!(stream_limits(Some(Timeout::Disabled)).idle_timeout > Duration::from_secs(86_400 * 365));
    }

    #[test]
    fn an_empty_configured_key_is_no_key_and_the_environment_is_asked() {
        let config: Config = serde_json::from_value(serde_json::json!({"provider": {
            "openai": {"options": {"apiKey": ""}},
            "mine": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://x.test/v1", "apiKey": " "}}
        }}))
        .unwrap();
        let env = HashMap::from([("OPENAI_API_KEY".to_owned(), "sk-env".to_owned())]);
        let models = ConfiguredModels::new(Catalog::embedded().unwrap(), config.clone(), env, None).unwrap();
        assert_eq!(models.resolve_provider("openai").unwrap().api_key.as_deref(), Some("sk-env"));
        let models =
            ConfiguredModels::new(Catalog::embedded().unwrap(), config, HashMap::new(), None).unwrap();
        assert_eq!(models.resolve_provider("mine").unwrap().api_key, None);
    }

    #[test]
    fn a_model_the_config_lists_loses_its_price_tiers() {
        // SPEC 5 "Configured models": OpenCode 1.18.34 prices a listed model at its base prices.
        let catalog = Catalog::from_json(
            r#"{"p": {"id": "p", "name": "P", "env": [], "npm": "@ai-sdk/openai-compatible", "models": {
                "tiered": {"id": "tiered", "name": "T", "cost": {"input": 3, "output": 15,
                    "tiers": [{"tier": {"size": 1000}, "input": 9, "output": 9}],
                    "context_over_200k": {"input": 6, "output": 22.5}}},
                "listed": {"id": "listed", "name": "L", "cost": {"input": 3, "output": 15,
                    "context_over_200k": {"input": 6, "output": 22.5}}}}}}"#,
        )
        .unwrap();
        let config: Config = serde_json::from_value(serde_json::json!({"provider": {"p": {"models": {
            "listed": {"name": "Listed"},
            "mine": {"cost": {"input": 1, "context_over_200k": {"input": 2, "output": 2}}}
        }}}}))
        .unwrap();
        let models = ConfiguredModels::new(catalog, config, HashMap::new(), None).unwrap();
        let cost = |id: &str| models.resolve_model("p", id).unwrap().cost;
        assert_eq!(cost("tiered").tiers.len(), 1, "a catalog model the config does not list keeps them");
        assert!(cost("tiered").experimental_over_200k.is_some());
        let flat = |input: i64, output: i64| {
            session_core::ModelCost::flat(session_core::Prices {
                input: input.into(),
                output: output.into(),
                cache: session_core::CachePrices::default(),
            })
        };
        assert_eq!(cost("listed"), flat(3, 15));
        assert_eq!(cost("mine"), flat(1, 0));
    }

    #[test]
    fn catalog_providers_without_an_endpoint_use_their_packages() {
        let models =
            ConfiguredModels::new(Catalog::embedded().unwrap(), Config::default(), HashMap::new(), None)
                .unwrap();
        assert_eq!(models.resolve_provider("groq").unwrap().base_url, "https://api.groq.com/openai/v1");
        assert_eq!(models.resolve_provider("xai").unwrap().base_url, "https://api.x.ai/v1");
        assert_eq!(models.resolve_provider("openai").unwrap().base_url, "https://api.openai.com/v1");
    }
}
