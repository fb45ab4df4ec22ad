//! The model catalog: a models.dev snapshot embedded in the binary, plus presets for local
//! OpenAI-compatible servers that the snapshot lacks.

use std::{collections::BTreeMap, sync::OnceLock};

use serde::Deserialize;
use serde_json::Value;
use session_core::{ModelCost, overflow::ModelLimit};

/// The models.dev snapshot this build carries (`data/models.json`).
/// The embedded snapshot's providers, (id, JSON text), split by build.rs.
const EMBEDDED_PROVIDERS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/catalog_providers.rs"));

/// The whole snapshot, for the tests that compare the split with an eager parse.
#[cfg(test)]
const EMBEDDED: &str = include_str!("../data/models.json");

/// The npm package of providers that speak OpenAI Chat Completions.
pub const OPENAI_COMPATIBLE_NPM: &str = "@ai-sdk/openai-compatible";

/// Local servers missing from the catalog: (id, name, base URL).
const LOCAL_PRESETS: [(&str, &str, &str); 4] = [
    ("ollama", "Ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("vllm", "vLLM", "http://127.0.0.1:8000/v1"),
    ("llama.cpp", "llama.cpp", "http://127.0.0.1:8080/v1"),
];

/// The catalog could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The catalog JSON did not parse.
    #[error("model catalog is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    /// A provider's entry did not fit the models.dev shape.
    #[error("model catalog: bad entry for provider {provider}: {source}")]
    BadProvider {
        /// Provider id.
        provider: String,
        /// The parse failure.
        source: serde_json::Error,
    },
    /// A model's price object did not fit the models.dev shape.
    #[error("model catalog: bad cost for {provider}/{model}: {source}")]
    BadCost {
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
        /// The parse failure.
        source: serde_json::Error,
    },
}

/// One model of the catalog, mapped to session-core's limits and prices.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogModel {
    /// Model id, as sent to the provider.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Context, input and output limits (context 0 turns compaction off).
    pub limit: ModelLimit,
    /// Prices per million tokens (SPEC 5's mapping from the models.dev cost object).
    pub cost: ModelCost,
    /// Whether the model reasons.
    pub reasoning: bool,
    /// Whether the model calls tools.
    pub tool_call: bool,
    /// Whether the model takes attachments.
    pub attachment: bool,
    /// Whether the model takes a temperature.
    pub temperature: bool,
    /// Release status (`alpha`, `beta`, `deprecated`), when not stable.
    pub status: Option<String>,
    /// Whether the model answers in text (models.dev's `modalities.output` has `text`, or the
    /// catalog does not say); image, audio and embedding models do not.
    pub text_output: bool,
}

impl CatalogModel {
    /// A model the catalog does not know, on an OpenAI-compatible provider: no limits (so no
    /// compaction), no prices (cost 0), tools assumed.
    pub fn unknown(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            name: id.to_owned(),
            limit: ModelLimit::default(),
            cost: ModelCost::default(),
            reasoning: false,
            tool_call: true,
            attachment: false,
            temperature: true,
            status: None,
            text_output: true,
        }
    }
}

/// One provider of the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogProvider {
    /// Provider id, such as `anthropic`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Environment variables that may hold the API key, in order.
    pub env: Vec<String>,
    /// The AI SDK package that names the wire format.
    pub npm: Option<String>,
    /// Base URL, when the provider is not at its package's default address.
    pub api: Option<String>,
    /// Models by id.
    pub models: BTreeMap<String, CatalogModel>,
}

impl CatalogProvider {
    /// True when the provider speaks OpenAI Chat Completions through the compatible package,
    /// so models missing from the catalog still work with defaults.
    pub fn is_openai_compatible(&self) -> bool {
        self.npm.as_deref() == Some(OPENAI_COMPATIBLE_NPM)
    }
}

/// The model catalog: providers and their models.
///
/// The embedded snapshot is large (hundreds of models with decimal prices), and a run needs one
/// or two providers of it, so [`Catalog::embedded`] only splits the text into providers and each
/// provider's models are parsed the first time it is asked for.
#[derive(Clone, Default)]
pub struct Catalog {
    providers: BTreeMap<String, Slot>,
}

/// One provider of the catalog: its JSON text until first use, then the parsed entry.
#[derive(Clone)]
struct Slot {
    /// The provider's JSON, borrowed from the embedded snapshot; `None` once given parsed.
    raw: Option<&'static str>,
    /// The parsed provider; `None` inside when its JSON did not fit (warned about and skipped).
    parsed: OnceLock<Option<CatalogProvider>>,
}

impl Slot {
    fn lazy(raw: &'static str) -> Self {
        Self { raw: Some(raw), parsed: OnceLock::new() }
    }

    fn parsed(provider: CatalogProvider) -> Self {
        Self { raw: None, parsed: OnceLock::from(Some(provider)) }
    }

    /// The provider under `key`, parsed on first use; a malformed entry is skipped with a
    /// warning so that one bad provider of the snapshot does not take the others down.
    fn get(&self, key: &str) -> Option<&CatalogProvider> {
        self.parsed
            .get_or_init(|| match parse_provider(key, self.raw?) {
                Ok(provider) => Some(provider),
                Err(error) => {
                    tracing::warn!(provider = key, %error, "skipping a malformed catalog provider");
                    None
                }
            })
            .as_ref()
    }

    /// Like [`Slot::get`], for changing the entry in place.
    fn get_mut(&mut self, key: &str) -> Option<&mut CatalogProvider> {
        self.get(key);
        self.parsed.get_mut()?.as_mut()
    }
}

impl std::fmt::Debug for Catalog {
    /// Shows what is parsed so far: printing must not force the whole snapshot to parse.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (key, slot) in &self.providers {
            match slot.parsed.get() {
                Some(parsed) => map.entry(key, parsed),
                None => map.entry(key, &format_args!("<not parsed yet>")),
            };
        }
        map.finish()
    }
}

impl PartialEq for Catalog {
    /// Equal when the same keys hold the same providers, whether parsed yet or not.
    fn eq(&self, other: &Self) -> bool {
        self.providers.len() == other.providers.len()
            && self
                .providers
                .iter()
                .zip(&other.providers)
                .all(|((key_a, a), (key_b, b))| key_a == key_b && a.get(key_a) == b.get(key_b))
    }
}

#[derive(Deserialize)]
struct RawProvider {
    id: String,
    name: String,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    npm: Option<String>,
    #[serde(default)]
    api: Option<String>,
    #[serde(default)]
    models: BTreeMap<String, RawModel>,
}

#[derive(Deserialize)]
struct RawModel {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    limit: ModelLimit,
    #[serde(default)]
    cost: Value,
    #[serde(default)]
    reasoning: bool,
    #[serde(default)]
    tool_call: bool,
    #[serde(default)]
    attachment: bool,
    #[serde(default)]
    temperature: bool,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    modalities: Option<RawModalities>,
}

#[derive(Deserialize)]
struct RawModalities {
    #[serde(default)]
    output: Option<Vec<String>>,
}

impl Catalog {
    /// The catalog embedded in this build, with the local-server presets added. Providers are
    /// parsed on first use; one whose entry does not fit is skipped with a warning then.
    pub fn embedded() -> Result<Self, CatalogError> {
        let providers =
            EMBEDDED_PROVIDERS.iter().map(|(key, raw)| ((*key).to_owned(), Slot::lazy(raw))).collect();
        Ok(Self::with_presets(providers))
    }

    /// A catalog over `text` that splits it into providers now and parses each one later.
    #[cfg(test)]
    fn lazy(text: &'static str) -> Result<Self, CatalogError> {
        let raw: BTreeMap<String, &'static serde_json::value::RawValue> = serde_json::from_str(text)?;
        let providers = raw.into_iter().map(|(key, raw)| (key, Slot::lazy(raw.get()))).collect();
        Ok(Self::with_presets(providers))
    }

    /// A catalog from models.dev JSON text (`{provider id: {id, name, env, npm, api, models}}`),
    /// with the local-server presets added where the text lacks them. Unlike
    /// [`Catalog::embedded`], every provider is parsed now, so any bad entry is an error.
    pub fn from_json(text: &str) -> Result<Self, CatalogError> {
        let raw: BTreeMap<String, RawProvider> = serde_json::from_str(text)?;
        let mut providers = BTreeMap::new();
        for (key, provider) in raw {
            let provider = convert_provider(&key, provider)?;
            providers.insert(key, Slot::parsed(provider));
        }
        Ok(Self::with_presets(providers))
    }

    fn with_presets(mut providers: BTreeMap<String, Slot>) -> Self {
        for (id, name, url) in LOCAL_PRESETS {
            providers.entry(id.to_owned()).or_insert_with(|| {
                Slot::parsed(CatalogProvider {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    env: Vec::new(),
                    npm: Some(OPENAI_COMPATIBLE_NPM.to_owned()),
                    api: Some(url.to_owned()),
                    models: BTreeMap::new(),
                })
            });
        }
        Self { providers }
    }

    /// Parses every provider not parsed yet and returns the first one that does not fit, so a
    /// caller (or a test) can insist on a clean catalog instead of skipped entries.
    pub fn check(&self) -> Result<(), CatalogError> {
        for (key, slot) in &self.providers {
            if slot.get(key).is_none()
                && let Some(raw) = slot.raw
            {
                parse_provider(key, raw)?;
            }
        }
        Ok(())
    }

    /// Every provider, by id.
    pub fn providers(&self) -> impl Iterator<Item = &CatalogProvider> {
        self.providers.iter().filter_map(|(key, slot)| slot.get(key))
    }

    /// One provider.
    pub fn provider(&self, id: &str) -> Option<&CatalogProvider> {
        self.providers.get(id)?.get(id)
    }

    /// One model of one provider, as the catalog lists it.
    pub fn model(&self, provider: &str, model: &str) -> Option<&CatalogModel> {
        self.provider(provider)?.models.get(model)
    }

    /// A model by `provider/model` (the model id may itself hold slashes, as OpenRouter's do).
    pub fn lookup(&self, reference: &str) -> Option<&CatalogModel> {
        let (provider, model) = split_model_ref(reference)?;
        self.model(provider, model)
    }

    /// The model to use for `provider/model`: the catalog's entry, or the stated defaults of
    /// [`CatalogModel::unknown`] on an OpenAI-compatible provider; `None` otherwise.
    pub fn resolve(&self, provider: &str, model: &str) -> Option<CatalogModel> {
        let entry = self.provider(provider)?;
        match entry.models.get(model) {
            Some(found) => Some(found.clone()),
            None if entry.is_openai_compatible() => Some(CatalogModel::unknown(model)),
            None => None,
        }
    }

    /// Adds or replaces a provider (config entries for providers the catalog lacks).
    pub fn insert_provider(&mut self, provider: CatalogProvider) {
        self.providers.insert(provider.id.clone(), Slot::parsed(provider));
    }

    /// Adds or replaces one model of an existing provider.
    pub fn insert_model(&mut self, provider: &str, model: CatalogModel) -> bool {
        match self.providers.get_mut(provider).and_then(|slot| slot.get_mut(provider)) {
            Some(entry) => {
                entry.models.insert(model.id.clone(), model);
                true
            }
            None => false,
        }
    }
}

/// Parses one provider's JSON text (the value under `key` of the snapshot).
fn parse_provider(key: &str, text: &str) -> Result<CatalogProvider, CatalogError> {
    let raw: RawProvider = serde_json::from_str(text)
        .map_err(|source| CatalogError::BadProvider { provider: key.to_owned(), source })?;
    convert_provider(key, raw)
}

/// Maps a deserialized provider to the catalog's types (prices become decimals here).
fn convert_provider(key: &str, provider: RawProvider) -> Result<CatalogProvider, CatalogError> {
    let mut models = BTreeMap::new();
    for (model_key, model) in provider.models {
        let cost = ModelCost::from_catalog(&model.cost).map_err(|source| CatalogError::BadCost {
            provider: key.to_owned(),
            model: model_key.clone(),
            source,
        })?;
        let id = model.id.unwrap_or_else(|| model_key.clone());
        models.insert(
            model_key,
            CatalogModel {
                name: model.name.unwrap_or_else(|| id.clone()),
                id,
                limit: model.limit,
                cost,
                reasoning: model.reasoning,
                tool_call: model.tool_call,
                attachment: model.attachment,
                temperature: model.temperature,
                status: model.status,
                text_output: model
                    .modalities
                    .and_then(|m| m.output)
                    .is_none_or(|output| output.iter().any(|kind| kind == "text")),
            },
        );
    }
    Ok(CatalogProvider {
        id: provider.id,
        name: provider.name,
        env: provider.env,
        npm: provider.npm,
        api: provider.api,
        models,
    })
}

/// Splits `provider/model` at the first slash; both halves must be non-empty.
pub fn split_model_ref(reference: &str) -> Option<(&str, &str)> {
    let (provider, model) = reference.split_once('/')?;
    (!provider.is_empty() && !model.is_empty()).then_some((provider, model))
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;
    use session_core::{StepUsage, Usage, usage::get_usage};

    use super::*;

    fn catalog() -> Catalog {
        Catalog::embedded().expect("embedded catalog parses")
    }

    #[test]
    fn known_models_have_their_limits_and_prices() {
        let catalog = catalog();
        let sonnet = catalog.lookup("anthropic/claude-3-5-sonnet-20240620").expect("listed");
        assert_eq!(sonnet.limit, ModelLimit { context: 200_000, input: None, output: 8192 });
        assert_eq!(sonnet.cost.input, Decimal::from(3));
        assert_eq!(sonnet.cost.output, Decimal::from(15));
        assert_eq!(sonnet.cost.cache.read, Decimal::new(3, 1));
        assert_eq!(sonnet.cost.cache.write, Decimal::new(375, 2));
        assert!(sonnet.tool_call);
    }

    #[test]
    fn openrouter_ids_keep_their_slashes() {
        let catalog = catalog();
        let provider = catalog.provider("openrouter").expect("openrouter");
        let (id, _) = provider.models.iter().find(|(id, _)| id.contains('/')).expect("a slashed id");
        assert!(catalog.lookup(&format!("openrouter/{id}")).is_some());
    }

    #[test]
    fn tiered_prices_go_through_get_usage() {
        let catalog = catalog();
        let tiered = catalog
            .providers()
            .flat_map(|p| p.models.values())
            .find(|m| m.cost.tiers.iter().any(|t| t.tier.kind == "context"))
            .expect("a model with a context tier");
        let tier = tiered.cost.tiers.iter().find(|t| t.tier.kind == "context").expect("tier");
        let above = i64::try_from(tier.tier.size).expect("size") + 1;
        let usage = Usage { input_tokens: Some(above), output_tokens: Some(0), ..Usage::default() };
        let StepUsage { cost, .. } = get_usage(&tiered.cost, &usage, None);
        let expected = Decimal::from(above) * tier.input / Decimal::from(1_000_000);
        assert_eq!(cost, expected, "{}", tiered.id);
    }

    #[test]
    fn local_presets_accept_any_model_with_defaults() {
        let catalog = catalog();
        for (id, url) in [
            ("ollama", "http://127.0.0.1:11434/v1"),
            ("lmstudio", "http://127.0.0.1:1234/v1"),
            ("vllm", "http://127.0.0.1:8000/v1"),
            ("llama.cpp", "http://127.0.0.1:8080/v1"),
        ] {
            let provider = catalog.provider(id).expect("preset");
            assert!(provider.is_openai_compatible());
            if id != "lmstudio" {
                assert_eq!(provider.api.as_deref(), Some(url));
            }
            let model = catalog.resolve(id, "qwen2.5-coder:7b").expect("defaults");
            assert_eq!(model.limit.context, 0, "context 0 disables compaction");
            assert_eq!(model.cost, ModelCost::default());
        }
        assert!(catalog.resolve("anthropic", "no-such-model").is_none());
        assert!(catalog.resolve("nobody", "x").is_none());
    }

    #[test]
    fn bad_references_and_bad_json_are_errors_not_panics() {
        assert_eq!(split_model_ref("anthropic"), None);
        assert_eq!(split_model_ref("/x"), None);
        assert_eq!(split_model_ref("a/b/c"), Some(("a", "b/c")));
        assert!(Catalog::from_json("{").is_err());
        assert!(
            Catalog::from_json(r#"{"p": {"id": "p", "name": "P", "models": {"m": {"cost": "free"}}}}"#)
                .is_err()
        );
    }

    #[test]
    fn the_lazy_catalog_matches_the_eager_parse_for_every_provider() {
        let eager = Catalog::from_json(EMBEDDED).expect("eager parse");
        let lazy = catalog();
        assert!(lazy.providers.values().any(|slot| slot.parsed.get().is_none()), "nothing parsed yet");
        lazy.check().expect("every embedded provider parses");
        let keys: Vec<&String> = eager.providers.keys().collect();
        assert_eq!(keys, lazy.providers.keys().collect::<Vec<_>>());
        for key in keys {
            let one = catalog();
            assert_eq!(one.provider(key), eager.provider(key), "{key}");
        }
        assert_eq!(lazy.providers().collect::<Vec<_>>(), eager.providers().collect::<Vec<_>>());
        assert_eq!(lazy, eager);
    }

    #[test]
    fn asking_for_one_provider_parses_only_that_one() {
        let catalog = catalog();
        assert!(catalog.lookup("anthropic/claude-3-5-sonnet-20240620").is_some());
        let parsed: Vec<&str> = catalog
            .providers
            .iter()
            .filter(|(_, slot)| slot.raw.is_some() && slot.parsed.get().is_some())
            .map(|(key, _)| key.as_str())
            .collect();
        assert_eq!(parsed, ["anthropic"]);
    }

    #[test]
    fn a_malformed_lazy_provider_is_skipped_and_reported() {
        const TEXT: &str = r#"{
            "good": {"id": "good", "name": "Good", "models": {"m": {"cost": {"input": 1, "output": 2}}}},
            "badcost": {"id": "badcost", "name": "Bad", "models": {"m": {"cost": "free"}}},
            "badshape": {"name": 3}
        }"#;
        let mut catalog = Catalog::lazy(TEXT).expect("the top level is fine");
        assert!(catalog.lookup("good/m").is_some());
        assert!(catalog.provider("badcost").is_none());
        assert!(catalog.resolve("badshape", "m").is_none());
        assert!(!catalog.insert_model("badshape", CatalogModel::unknown("m")));
        let ids: Vec<&str> = catalog.providers().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["good", "llama.cpp", "lmstudio", "ollama", "vllm"]);
        let error = catalog.check().expect_err("a bad entry");
        assert!(matches!(error, CatalogError::BadCost { .. } | CatalogError::BadProvider { .. }), "{error}");
        assert!(Catalog::lazy("[1]").is_err());
        assert!(Catalog::lazy("{").is_err());
    }

    #[test]
    fn inserts_work_on_unparsed_providers() {
        let mut catalog = catalog();
        assert!(catalog.insert_model("anthropic", CatalogModel::unknown("mine")));
        assert!(catalog.model("anthropic", "mine").is_some());
        assert!(catalog.lookup("anthropic/claude-3-5-sonnet-20240620").is_some(), "the rest stays");
        let mut custom = catalog.provider("openai").expect("openai").clone();
        custom.models.clear();
        catalog.insert_provider(custom);
        assert!(catalog.provider("openai").is_some_and(|p| p.models.is_empty()));
        assert!(!catalog.insert_model("nobody", CatalogModel::unknown("x")));
        assert!(format!("{catalog:?}").contains("not parsed yet"));
    }
}
