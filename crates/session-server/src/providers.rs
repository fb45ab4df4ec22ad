//! The providers and models clients pick from, in OpenCode 1.18's `Provider` and `Model`
//! shapes (`GET /config/providers`, `GET /provider`) and its v2 shapes (`GET /api/provider`,
//! `GET /api/model`). The caller (the `session serve` command) lists the providers this
//! server can call, from the catalog with the configuration laid over it.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::{Map, Value};
use session_llm::CatalogModel;

use crate::AppState;
use crate::error::ServerError;
use crate::project::{Located, LocationQuery};
use crate::routes::{DirectoryQuery, query};

type Shared = State<Arc<AppState>>;

/// A provider this server can call, with its models, as a client lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientProvider {
    /// The provider id (`openai`, or a configured one).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Where its setup comes from.
    pub source: ProviderSource,
    /// The environment variables its key is read from.
    pub env: Vec<String>,
    /// Provider options; never the key or headers, so always empty here.
    pub options: Map<String, Value>,
    /// Its models by id.
    pub models: BTreeMap<String, ClientModel>,
}

/// Where a provider's setup comes from, in OpenCode's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderSource {
    /// Its key is in the environment.
    Env,
    /// The configuration sets it up.
    Config,
    /// Only the configuration knows it.
    Custom,
}

/// A model in OpenCode 1.18's `Model` shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientModel {
    id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    api: ModelApi,
    name: String,
    capabilities: Capabilities,
    cost: ClientCost,
    limit: ClientLimit,
    status: String,
    options: Map<String, Value>,
    headers: BTreeMap<String, String>,
    #[serde(rename = "release_date")]
    release_date: String,
    /// Reasoning efforts a prompt may ask for (`variant`); empty objects, as OpenCode's
    /// variants carry provider options this server derives itself.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    variants: BTreeMap<String, Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ModelApi {
    id: String,
    url: String,
    npm: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Capabilities {
    temperature: bool,
    reasoning: bool,
    attachment: bool,
    toolcall: bool,
    input: Modalities,
    output: Modalities,
    interleaved: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct Modalities {
    text: bool,
    audio: bool,
    image: bool,
    video: bool,
    pdf: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ClientCost {
    input: f64,
    output: f64,
    cache: CacheCost,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct CacheCost {
    read: f64,
    write: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ClientLimit {
    context: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<u64>,
    output: u64,
}

/// The reasoning efforts this server sends for a reasoning model (see the runtime's variants).
const VARIANTS: [&str; 3] = ["low", "medium", "high"];

fn price(value: Decimal) -> f64 {
    // The decimal's own text parses to the nearest f64.
    f64::from_str(&value.to_string()).unwrap_or(0.0)
}

impl ClientModel {
    /// Lists the model under `id` (the id a client sends back), keeping how it is called.
    pub fn set_id(&mut self, id: &str) {
        id.clone_into(&mut self.id);
    }

    /// `model` of `provider_id`, called at `url` with the AI SDK package `npm`.
    pub fn new(provider_id: &str, npm: &str, url: &str, model: &CatalogModel) -> Self {
        let text_only = Modalities { text: true, audio: false, image: false, video: false, pdf: false };
        let input = Modalities { image: model.attachment, pdf: model.attachment, ..text_only };
        let output = Modalities { text: model.text_output, ..text_only };
        let variants = if model.reasoning {
            VARIANTS.iter().map(|v| ((*v).to_owned(), Map::new())).collect()
        } else {
            BTreeMap::new()
        };
        Self {
            id: model.id.clone(),
            provider_id: provider_id.to_owned(),
            api: ModelApi { id: model.id.clone(), url: url.to_owned(), npm: npm.to_owned() },
            name: model.name.clone(),
            capabilities: Capabilities {
                temperature: model.temperature,
                reasoning: model.reasoning,
                attachment: model.attachment,
                toolcall: model.tool_call,
                input,
                output,
                interleaved: false,
            },
            cost: ClientCost {
                input: price(model.cost.input),
                output: price(model.cost.output),
                cache: CacheCost { read: price(model.cost.cache.read), write: price(model.cost.cache.write) },
            },
            limit: ClientLimit {
                context: model.limit.context,
                input: model.limit.input,
                output: model.limit.output,
            },
            status: model.status.clone().unwrap_or_else(|| "active".to_owned()),
            options: Map::new(),
            headers: BTreeMap::new(),
            release_date: String::new(),
            variants,
        }
    }
}

/// `GET /config/providers` and `GET /provider` answer the same list with the default model
/// of each provider (the configured default for its provider, else its first model).
#[derive(Debug, Serialize)]
pub(crate) struct ConfigProviders<'a> {
    providers: &'a [ClientProvider],
    default: BTreeMap<&'a str, &'a str>,
}

/// `GET /provider`: every provider this server can call is connected; the catalog's others
/// need a key this server cannot be given over HTTP, so they are not offered.
#[derive(Debug, Serialize)]
pub(crate) struct ProviderList<'a> {
    all: &'a [ClientProvider],
    default: BTreeMap<&'a str, &'a str>,
    connected: Vec<&'a str>,
}

fn defaults(state: &AppState) -> BTreeMap<&str, &str> {
    let configured = state.info.client_config.model.as_deref().and_then(|m| m.split_once('/'));
    state
        .info
        .providers
        .iter()
        .filter_map(|provider| {
            let model = match configured {
                Some((id, model)) if id == provider.id && provider.models.contains_key(model) => Some(model),
                _ => provider.models.keys().next().map(String::as_str),
            };
            model.map(|model| (provider.id.as_str(), model))
        })
        .collect()
}

/// `GET /config/providers`.
pub(crate) async fn config_providers(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let body = ConfigProviders { providers: &state.info.providers, default: defaults(&state) };
    serde_json::to_value(body).map(Json).map_err(|e| ServerError::Internal(e.to_string()))
}

/// `GET /provider`.
pub(crate) async fn provider_list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let body = ProviderList {
        all: &state.info.providers,
        default: defaults(&state),
        connected: state.info.providers.iter().map(|p| p.id.as_str()).collect(),
    };
    serde_json::to_value(body).map(Json).map_err(|e| ServerError::Internal(e.to_string()))
}

/// `GET /provider/auth`: no provider can be signed in to through this server (keys come from
/// the environment and the configuration), so no provider has a method.
pub(crate) async fn provider_auth(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, Vec<Value>>>, ServerError> {
    query(q)?;
    Ok(Json(BTreeMap::new()))
}

/// The v2 `ProviderV2Info`.
#[derive(Debug, Serialize)]
pub(crate) struct ProviderV2 {
    id: String,
    name: String,
    api: V2Api,
    request: V2Request,
}

/// How a provider or model is called, in the v2 shape (always through an AI SDK package).
#[derive(Debug, Serialize)]
struct V2Api {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(rename = "type")]
    kind: &'static str,
    package: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
}

#[derive(Debug, Default, Serialize)]
struct V2Request {
    headers: BTreeMap<String, String>,
    body: Map<String, Value>,
}

/// The v2 `ModelV2Info`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelV2 {
    id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    name: String,
    api: V2Api,
    capabilities: V2Capabilities,
    request: V2Request,
    variants: Vec<V2Variant>,
    time: V2Time,
    cost: Vec<ClientCost>,
    status: String,
    enabled: bool,
    limit: ClientLimit,
}

#[derive(Debug, Serialize)]
struct V2Capabilities {
    tools: bool,
    input: Vec<&'static str>,
    output: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct V2Variant {
    id: String,
    headers: BTreeMap<String, String>,
    body: Map<String, Value>,
}

#[derive(Debug, Serialize)]
struct V2Time {
    released: u64,
}

fn modalities(m: &Modalities) -> Vec<&'static str> {
    [(m.text, "text"), (m.audio, "audio"), (m.image, "image"), (m.video, "video"), (m.pdf, "pdf")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
}

fn v2_api(model: &ClientModel, with_id: bool) -> V2Api {
    V2Api {
        id: with_id.then(|| model.api.id.clone()),
        kind: "aisdk",
        package: model.api.npm.clone(),
        url: model.api.url.clone(),
    }
}

/// `GET /api/provider`.
pub(crate) async fn v2_providers(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<ProviderV2>>>, ServerError> {
    query(q)?;
    let data = state
        .info
        .providers
        .iter()
        .map(|provider| ProviderV2 {
            id: provider.id.clone(),
            name: provider.name.clone(),
            api: match provider.models.values().next() {
                Some(model) => v2_api(model, false),
                None => V2Api { id: None, kind: "aisdk", package: String::new(), url: String::new() },
            },
            request: V2Request::default(),
        })
        .collect();
    Ok(Json(Located::new(&state, data)))
}

/// `GET /api/model`.
pub(crate) async fn v2_models(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<ModelV2>>>, ServerError> {
    query(q)?;
    let data = state
        .info
        .providers
        .iter()
        .flat_map(|provider| provider.models.values())
        .map(|model| ModelV2 {
            id: model.id.clone(),
            provider_id: model.provider_id.clone(),
            name: model.name.clone(),
            api: v2_api(model, true),
            capabilities: V2Capabilities {
                tools: model.capabilities.toolcall,
                input: modalities(&model.capabilities.input),
                output: modalities(&model.capabilities.output),
            },
            request: V2Request::default(),
            variants: model
                .variants
                .keys()
                .map(|id| V2Variant { id: id.clone(), headers: BTreeMap::new(), body: Map::new() })
                .collect(),
            time: V2Time { released: 0 },
            cost: vec![model.cost.clone()],
            status: model.status.clone(),
            enabled: true,
            limit: model.limit.clone(),
        })
        .collect();
    Ok(Json(Located::new(&state, data)))
}
