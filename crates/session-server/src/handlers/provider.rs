//! The providers and models clients pick from: OpenCode 1.18's shapes (`GET /config/providers`,
//! `GET /provider`) and its v2 shapes (`GET /api/provider`, `GET /api/model`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;
use serde_json::{Map, Value};

use axum::response::Response;

use super::{Shared, json_response};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Located, LocationQuery, query};
use crate::info::{ClientCost, ClientLimit, ClientModel, ClientProvider, Modalities};
use crate::state::AppState;

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
) -> Result<Response, ServerError> {
    query(q)?;
    let body = ConfigProviders { providers: &state.info.providers, default: defaults(&state) };
    json_response(&body)
}

/// `GET /provider`.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let body = ProviderList {
        all: &state.info.providers,
        default: defaults(&state),
        connected: state.info.providers.iter().map(|p| p.id.as_str()).collect(),
    };
    json_response(&body)
}

/// `GET /provider/auth`: no provider can be signed in to through this server (keys come from
/// the environment and the configuration), so no provider has a method.
pub(crate) async fn auth(
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
pub(crate) async fn list_v2(
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
    Ok(Json(Located::new(state.runtime.worktree(), data)))
}

/// `GET /api/model`.
pub(crate) async fn models_v2(
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
    Ok(Json(Located::new(state.runtime.worktree(), data)))
}
