//! What the caller (the `session serve` command) tells the server to show clients: its
//! folders, the client's view of the configuration, and the providers and models clients pick
//! from, in OpenCode 1.18's `Provider` and `Model` shapes (listed from the catalog with the
//! configuration laid over it; a library reads no environment).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::{Map, Value};
use session_runtime::models::CatalogModel;

/// What the server tells clients about where it keeps things and what it is configured with;
/// the caller (the `session serve` command) fills it, since a library reads no environment.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// The user's home folder.
    pub home: PathBuf,
    /// Where the server keeps its state (the database, the token file).
    pub state: PathBuf,
    /// The user's configuration folder.
    pub config: PathBuf,
    /// The configuration as clients may see it.
    pub client_config: ClientConfig,
    /// The providers this server can call, with their models, for the clients' pickers.
    pub providers: Vec<ClientProvider>,
}

/// The part of the configuration a client reads from `GET /config`: what it needs to choose a
/// model and to know what the server does not do. Keys, headers and endpoints are not in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClientConfig {
    /// The default model, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sharing: this server shares nothing, so always `"disabled"`.
    pub share: ShareMode,
    /// This server never updates itself.
    pub autoupdate: bool,
}

/// OpenCode's `share` setting; only its "disabled" value is ever true here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ShareMode {
    /// Nothing is shared.
    #[default]
    Disabled,
}

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
    pub(crate) id: String,
    #[serde(rename = "providerID")]
    pub(crate) provider_id: String,
    pub(crate) api: ModelApi,
    pub(crate) name: String,
    pub(crate) capabilities: Capabilities,
    pub(crate) cost: ClientCost,
    pub(crate) limit: ClientLimit,
    pub(crate) status: String,
    pub(crate) options: Map<String, Value>,
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(rename = "release_date")]
    pub(crate) release_date: String,
    /// Reasoning efforts a prompt may ask for (`variant`); empty objects, as OpenCode's
    /// variants carry provider options this server derives itself.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) variants: BTreeMap<String, Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ModelApi {
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) npm: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Capabilities {
    pub(crate) temperature: bool,
    pub(crate) reasoning: bool,
    pub(crate) attachment: bool,
    pub(crate) toolcall: bool,
    pub(crate) input: Modalities,
    pub(crate) output: Modalities,
    pub(crate) interleaved: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Modalities {
    pub(crate) text: bool,
    pub(crate) audio: bool,
    pub(crate) image: bool,
    pub(crate) video: bool,
    pub(crate) pdf: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ClientCost {
    pub(crate) input: f64,
    pub(crate) output: f64,
    pub(crate) cache: CacheCost,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CacheCost {
    pub(crate) read: f64,
    pub(crate) write: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ClientLimit {
    pub(crate) context: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<u64>,
    pub(crate) output: u64,
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
