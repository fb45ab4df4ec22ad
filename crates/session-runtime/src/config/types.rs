//! The typed configuration: OpenCode's keys wherever both have the concept.

use std::fmt;

use indexmap::IndexMap;
use rust_decimal::Decimal;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use session_core::{
    CachePrices, ModelCost, Prices, config::CompactionConfig, overflow::ModelLimit, permission::Ruleset,
    retry::RetryConfig,
};

use session_llm::Api;

use super::error::ConfigError;
use super::package::api_for_package;
use super::permission::{PermissionConfig, rules_of};

/// The whole configuration, after layering.
///
/// Every field is optional: an empty file is a valid configuration, and defaults are decided
/// where the value is used (for example snapshots are on unless `snapshot` is `false`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct Config {
    /// The model to use, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model for small tasks such as titles, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_model: Option<String>,
    /// Providers by id: catalog overrides and custom endpoints.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub provider: IndexMap<String, ProviderConfig>,
    /// Permission rules as written (an action, or rules by tool), in written order; see
    /// [`Config::permission_rules`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionConfig>,
    /// Agents by name: overrides of the built-in agents and new ones.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub agent: IndexMap<String, super::agent::AgentConfig>,
    /// Compaction settings (SPEC 6 and 10).
    #[serde(skip_serializing_if = "is_default")]
    pub compaction: CompactionConfig,
    /// `false` turns off working-tree snapshots; unset means on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<bool>,
    /// Ours: how long and how much of the snapshot store is kept (SPEC 13 housekeeping).
    #[serde(skip_serializing_if = "is_default")]
    pub snapshot_retention: SnapshotRetentionConfig,
    /// Ours: which environment variables the bash tool's commands inherit.
    #[serde(skip_serializing_if = "is_default")]
    pub shell_env: ShellEnvConfig,
    /// Experimental switches.
    #[serde(skip_serializing_if = "is_default")]
    pub experimental: ExperimentalConfig,
    /// A PostgreSQL URL; unset means the embedded SQLite file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// What `session serve` reads of OpenCode's `server` section.
    #[serde(skip_serializing_if = "is_default")]
    pub server: ServerConfig,
    /// The primary agent a prompt runs with when it names none (default `build`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<String>,
    /// Extra instruction files for the system prompt: paths and globs relative to the project,
    /// absolute, or under `~/`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<String>,
    /// Ours: `false` hides the warnings for OpenCode keys that have no effect here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warn_unsupported: Option<bool>,
    /// Commands by name: prompt templates run with `session run --command`.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub command: IndexMap<String, super::command::CommandConfig>,
    /// MCP servers by name (see [`super::mcp::mcp_servers`]).
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub mcp: IndexMap<String, super::mcp::McpServerConfig>,
    /// Ours: how the commands the runtime starts are confined.
    #[serde(skip_serializing_if = "is_default")]
    pub sandbox: super::sandbox::SandboxConfig,
    /// The permission rules of untrusted project layers, which only tighten the others (never
    /// read from a file: [`super::combine`] fills it).
    #[serde(skip)]
    pub restrictions: super::restrict::Restrictions,
}

impl Config {
    /// The top-level permission rules in written order (empty when unset).
    ///
    /// With `home`, patterns starting `~/`, `~` or `$HOME` are expanded.
    /// A typed value cannot fail to give rules; the `Result` is the callers' (kept as it was).
    pub fn permission_rules(&self, home: Option<&str>) -> Result<Ruleset, ConfigError> {
        Ok(rules_of(self.permission.as_ref(), home))
    }

    /// The rules untrusted layers add for `agent`: the top-level ones, then the agent's own;
    /// they go after every trusted rule through [`super::restrict_after`].
    pub fn restriction_rules(&self, agent: &str, home: Option<&str>) -> Result<Ruleset, ConfigError> {
        let agent_values = self.restrictions.agent.get(agent).into_iter().flatten();
        let mut rules = Ruleset::new();
        for value in self.restrictions.permission.iter().chain(agent_values) {
            rules.extend(value.rules(home));
        }
        Ok(rules)
    }

    /// Whether working-tree snapshots are taken (anything but an explicit `false`).
    pub fn snapshot_enabled(&self) -> bool {
        self.snapshot != Some(false)
    }

    /// The snapshot store's retention: `snapshot_retention` over the defaults (7 days, 1 GiB).
    pub fn snapshot_retention(&self) -> crate::engine::SnapshotRetention {
        let mut retention = crate::engine::SnapshotRetention::default();
        if let Some(days) = self.snapshot_retention.max_age_days {
            retention.max_age = std::time::Duration::from_secs(u64::from(days) * 86_400);
        }
        if let Some(megabytes) = self.snapshot_retention.max_size_mb {
            retention.max_bytes = megabytes.saturating_mul(1024 * 1024);
        }
        retention
    }

    /// Whether the loop goes on after a denied tool call (`experimental.continue_loop_on_deny`).
    pub fn continue_loop_on_deny(&self) -> bool {
        self.experimental.continue_loop_on_deny == Some(true)
    }
}

/// `snapshot_retention` (ours): how much of the snapshot store housekeeping keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct SnapshotRetentionConfig {
    /// Snapshots of sessions active within this many days are kept (default 7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age_days: Option<u32>,
    /// The snapshot store's size bound in MiB (default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_size_mb: Option<u64>,
}

/// `shell_env` (ours): variables whose names match `exclude` (after the default patterns for
/// keys, secrets, tokens and passwords) are not passed to commands; `include` keeps a variable
/// whatever the excludes say. Patterns use `*` and ignore case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ShellEnvConfig {
    /// Name patterns to drop besides the defaults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Name patterns to keep even when an exclude matches.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
}

impl ShellEnvConfig {
    /// The policy the bash tool applies.
    pub fn policy(&self) -> session_tools::ShellEnvPolicy {
        session_tools::ShellEnvPolicy {
            exclude: self.exclude.clone(),
            include: self.include.clone(),
            default_excludes: true,
        }
    }
}

/// The `server` keys `session serve` reads; OpenCode's `port`, `hostname`, `mdns` and
/// `mdnsDomain` are accepted and ignored (the command's flags say where to listen).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ServerConfig {
    /// Browser origins allowed to send requests, `scheme://host[:port]`, besides `--cors`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cors: Vec<String>,
}

/// `experimental` switches that this runtime reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ExperimentalConfig {
    /// `true` keeps the agent loop going when a tool call is denied; unset means it halts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_loop_on_deny: Option<bool>,
}

/// `provider.<id>`: how to reach a provider and what its models are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ProviderConfig {
    /// The AI SDK package OpenCode would load; it picks the wire API ([`ProviderConfig::api`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Base URL as models.dev states it; `options.baseURL` wins over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Environment variables that may hold the API key, in order (read by the binary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<String>>,
    /// Connection options.
    #[serde(skip_serializing_if = "is_default")]
    pub options: ProviderOptions,
    /// Models by id: additions to the catalog and overrides of its entries.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ModelConfig>,
}

impl ProviderConfig {
    /// The wire API named by `npm`; `None` when `npm` is unset (the catalog then decides).
    pub fn api(&self, provider: &str) -> Result<Option<Api>, ConfigError> {
        self.npm.as_deref().map(|package| api_for_package(provider, package)).transpose()
    }

    /// The base URL: `options.baseURL`, else `api`.
    pub fn base_url(&self) -> Option<&str> {
        self.options.base_url.as_deref().or(self.api.as_deref())
    }
}

/// `provider.<id>.options`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ProviderOptions {
    /// The endpoint, for example `http://127.0.0.1:11434/v1`.
    #[serde(rename = "baseURL", skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key (often `{env:VAR}` or `{file:path}`).
    #[serde(rename = "apiKey", skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Extra HTTP headers sent with every request.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// The provider's retry policy (SPEC 7.3); its mere presence changes the retry rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryConfig>,
    /// Timeout of a whole request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Timeout>,
    /// Timeout until the response headers arrive.
    #[serde(rename = "headerTimeout", skip_serializing_if = "Option::is_none")]
    pub header_timeout: Option<Timeout>,
    /// Timeout between two streamed chunks.
    #[serde(rename = "chunkTimeout", skip_serializing_if = "Option::is_none")]
    pub chunk_timeout: Option<Timeout>,
    /// Every other option, as written: OpenCode hands them to the SDK, so any key is valid.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A timeout option: milliseconds, or `false` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// Give up after this many milliseconds.
    Millis(u64),
    /// Never time out.
    Disabled,
}

impl Serialize for Timeout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Timeout::Millis(ms) => serializer.serialize_u64(*ms),
            Timeout::Disabled => serializer.serialize_bool(false),
        }
    }
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TimeoutVisitor;

        impl Visitor<'_> for TimeoutVisitor {
            type Value = Timeout;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number of milliseconds or false")
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Timeout, E> {
                if v { Err(E::invalid_value(de::Unexpected::Bool(v), &self)) } else { Ok(Timeout::Disabled) }
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Timeout, E> {
                if v == 0 {
                    Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
                } else {
                    Ok(Timeout::Millis(v))
                }
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Timeout, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
                }
            }
        }

        deserializer.deserialize_any(TimeoutVisitor)
    }
}

/// `provider.<id>.models.<id>`: a model in models.dev's shape; every field is optional so that
/// an entry can override single fields of the catalog's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ModelConfig {
    /// The id sent to the API, when it differs from the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Token limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<ModelLimitConfig>,
    /// Prices in USD per million tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<ModelCostConfig>,
    /// Whether the model accepts file attachments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attachment: Option<bool>,
    /// Whether the model reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Whether the model accepts a temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<bool>,
    /// Whether the model calls tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<bool>,
    /// Provider options sent with requests for this model.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Extra HTTP headers for this model.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
}

/// `limit` of a configured model; unset fields keep the catalog's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ModelLimitConfig {
    /// Context window in tokens; 0 disables compaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// Separate input limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Maximum output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
}

impl ModelLimitConfig {
    /// These limits over `base` (the catalog's), field by field; without a base, unset means 0.
    pub fn resolve(&self, base: Option<&ModelLimit>) -> ModelLimit {
        let base = base.copied().unwrap_or_default();
        ModelLimit {
            context: self.context.unwrap_or(base.context),
            input: self.input.or(base.input),
            output: self.output.unwrap_or(base.output),
        }
    }
}

/// `cost` of a configured model, in models.dev's shape; unset fields keep the catalog's value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct ModelCostConfig {
    /// Price of an input token.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub input: Option<Decimal>,
    /// Price of an output token (reasoning is billed at this rate).
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub output: Option<Decimal>,
    /// Price of a token read from the cache.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<Decimal>,
    /// Price of a token written to the cache.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<Decimal>,
    /// Prices above context sizes, in models.dev's shape: read and checked, but without
    /// effect (a warning says so), as in OpenCode 1.18.34 (see [`ModelCostConfig::resolve`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<CostTierConfig>>,
    /// Prices above 200K input tokens: read and checked, but without effect, like `tiers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_over_200k: Option<PricesConfig>,
}

/// One set of prices in models.dev's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct PricesConfig {
    /// Price of an input token.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub input: Option<Decimal>,
    /// Price of an output token.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub output: Option<Decimal>,
    /// Price of a token read from the cache.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<Decimal>,
    /// Price of a token written to the cache.
    #[serde(with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<Decimal>,
}

/// One price tier in models.dev's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an object")]
pub struct CostTierConfig {
    /// When the tier applies.
    pub tier: TierConfig,
    /// Price of an input token.
    #[serde(default, with = "price", skip_serializing_if = "Option::is_none")]
    pub input: Option<Decimal>,
    /// Price of an output token.
    #[serde(default, with = "price", skip_serializing_if = "Option::is_none")]
    pub output: Option<Decimal>,
    /// Price of a token read from the cache.
    #[serde(default, with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<Decimal>,
    /// Price of a token written to the cache.
    #[serde(default, with = "price", skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<Decimal>,
}

/// The condition of a price tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an object")]
pub struct TierConfig {
    /// The tier applies above this many input tokens.
    pub size: u64,
    /// The tier type; unset means a context tier.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl ModelCostConfig {
    /// The cost of a model the config lists: these prices over `base` (the catalog's) field by
    /// field, unset ones 0 without a base, and nothing else. OpenCode 1.18.34 builds a
    /// configured model's cost from `input`, `output`, `cache_read` and `cache_write` alone,
    /// so neither these `tiers` and `context_over_200k` nor the catalog's ever apply to it
    /// (SPEC 5 "Configured models").
    pub fn resolve(&self, base: Option<&ModelCost>) -> ModelCost {
        let base = base.map(ModelCost::base).unwrap_or_default();
        ModelCost::flat(Prices {
            input: self.input.unwrap_or(base.input),
            output: self.output.unwrap_or(base.output),
            cache: CachePrices {
                read: self.cache_read.unwrap_or(base.cache.read),
                write: self.cache_write.unwrap_or(base.cache.write),
            },
        })
    }

    /// The keys under this cost that have no effect (see [`ModelCostConfig::resolve`]).
    pub fn ineffective_keys(&self) -> impl Iterator<Item = &'static str> {
        [(self.tiers.is_some(), "tiers"), (self.context_over_200k.is_some(), "context_over_200k")]
            .into_iter()
            .filter_map(|(set, key)| set.then_some(key))
    }
}

/// Configured prices as JSON numbers: read like the catalog's (an `f64`'s shortest decimal
/// text, so `0.1` is exactly one tenth), written back as the nearest `f64`.
mod price {
    use std::fmt;
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Decimal>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            // Parsing the decimal text gives the correctly rounded f64.
            Some(price) => serializer
                .serialize_f64(f64::from_str(&price.to_string()).map_err(serde::ser::Error::custom)?),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Decimal>, D::Error> {
        Ok(Option::<Price>::deserialize(deserializer)?.map(|price| price.0))
    }

    struct Price(Decimal);

    impl<'de> Deserialize<'de> for Price {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_f64(PriceVisitor).map(Price)
        }
    }

    struct PriceVisitor;

    impl Visitor<'_> for PriceVisitor {
        type Value = Decimal;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // The type name the config's error messages translate ("a number").
            f.write_str("f64")
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
            // `{}` prints the shortest text that reads back as `v`, never in exponent form.
            Decimal::from_str(&v.to_string()).map_err(|_| {
                E::invalid_value(de::Unexpected::Float(v), &"a price that fits a decimal number")
            })
        }
    }
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn prices_are_decimals_and_one_no_decimal_holds_is_a_type_error() {
        let cost: ModelCostConfig = serde_json::from_value(json!({"input": 0.1, "output": 2})).unwrap();
        assert_eq!(cost.input, Some(Decimal::new(1, 1)), "0.1 is exactly one tenth");
        assert_eq!(cost.output, Some(Decimal::from(2)));
        let layer = json!({"provider": {"x": {"models": {"m": {"cost": {"input": 1e30}}}}}});
        let error = super::super::ConfigLayer::from_value("session.json", layer).unwrap_err();
        assert_eq!(
            error.to_string(),
            "session.json: provider.x.models.m.cost.input: expected a price that fits a decimal number, found \
             number 1e+30"
        );
    }

    #[test]
    fn snapshot_retention_lays_over_the_defaults() {
        let config: Config =
            serde_json::from_value(json!({"snapshot_retention": {"max_age_days": 3, "max_size_mb": 10}}))
                .unwrap();
        let retention = config.snapshot_retention();
        assert_eq!(retention.max_age, std::time::Duration::from_secs(3 * 86_400));
        assert_eq!(retention.max_bytes, 10 * 1024 * 1024);
        assert_eq!(retention.grace, crate::engine::SnapshotRetention::default().grace);
        assert_eq!(Config::default().snapshot_retention(), crate::engine::SnapshotRetention::default());
        let layer = json!({"snapshot_retention": {"max_age_days": "a week"}});
        assert!(super::super::ConfigLayer::from_value("session.json", layer).is_err());
    }

    #[test]
    fn limits_override_the_catalog_field_by_field() {
        let catalog = ModelLimit { context: 200_000, input: Some(180_000), output: 64_000 };
        let config = ModelLimitConfig { context: None, input: None, output: Some(8_192) };
        assert_eq!(
            config.resolve(Some(&catalog)),
            ModelLimit { context: 200_000, input: Some(180_000), output: 8_192 }
        );
        assert_eq!(config.resolve(None), ModelLimit { context: 0, input: None, output: 8_192 });
    }

    #[test]
    fn unset_prices_keep_the_catalogs() {
        let catalog = ModelCost::from_catalog(&json!({"input": 3, "output": 15, "cache_read": 0.3})).unwrap();
        let config = ModelCostConfig { output: Some(Decimal::from(10)), ..ModelCostConfig::default() };
        let expected =
            ModelCost::from_catalog(&json!({"input": 3, "output": 10, "cache_read": 0.3})).unwrap();
        assert_eq!(config.resolve(Some(&catalog)), expected);
    }

    #[test]
    fn a_configured_model_is_priced_at_its_base_prices_only() {
        // As OpenCode 1.18.34 builds a configured model's cost: the catalog's tiers and
        // over-200K prices go, and the config's own have no effect.
        let catalog = ModelCost::from_catalog(&json!({"input": 3, "output": 15,
            "tiers": [{"tier": {"size": 100000}, "input": 5, "output": 20}],
            "context_over_200k": {"input": 6, "output": 22.5}}))
        .unwrap();
        let config: ModelCostConfig = serde_json::from_value(json!({"cache_read": 0.3,
            "tiers": [{"tier": {"size": 1000}, "input": 9, "output": 9}],
            "context_over_200k": {"input": 6, "output": 22.5}}))
        .unwrap();
        let expected =
            ModelCost::from_catalog(&json!({"input": 3, "output": 15, "cache_read": 0.3})).unwrap();
        assert_eq!(config.resolve(Some(&catalog)), expected);
        assert_eq!(config.ineffective_keys().collect::<Vec<_>>(), ["tiers", "context_over_200k"]);
        assert_eq!(ModelCostConfig::default().ineffective_keys().count(), 0);
    }

    #[test]
    fn timeouts_are_milliseconds_or_false() {
        assert_eq!(serde_json::from_value::<Timeout>(json!(1500)).unwrap(), Timeout::Millis(1500));
        assert_eq!(serde_json::from_value::<Timeout>(json!(false)).unwrap(), Timeout::Disabled);
        for bad in [json!(true), json!(0), json!(-5), json!("1s")] {
            assert!(serde_json::from_value::<Timeout>(bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(serde_json::to_value(Timeout::Disabled).unwrap(), json!(false));
    }

    #[test]
    fn the_base_url_prefers_options_over_the_catalog_api() {
        let mut provider =
            ProviderConfig { api: Some("https://api.example/v1".to_owned()), ..ProviderConfig::default() };
        assert_eq!(provider.base_url(), Some("https://api.example/v1"));
        provider.options.base_url = Some("http://127.0.0.1:8080/v1".to_owned());
        assert_eq!(provider.base_url(), Some("http://127.0.0.1:8080/v1"));
    }
}
