//! Token accounting and cost of one model step (SPEC 5, OpenCode's `getUsage`).
//!
//! Prices are USD per million tokens and live as [`Decimal`]s: a price read from JSON is
//! converted from the shortest decimal text of its `f64`, so `0.1` is exactly one tenth and
//! never the binary float next to it. The cost is computed exactly in decimal.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{ProviderMetadata, Usage};

/// Cache token counts of a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheTokens {
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written to the cache.
    pub write: u64,
}

/// Token counts of a step after `get_usage` (SPEC 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// The provider's total, unclamped; absent when the provider gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// Prompt tokens net of cache reads and writes.
    pub input: u64,
    /// Output tokens net of reasoning.
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Cache reads and writes.
    pub cache: CacheTokens,
}

/// Raw inclusive input above which `experimentalOver200K` prices apply.
const OVER_200K_THRESHOLD: u64 = 200_000;

/// The tier type that `get_usage` prices; tiers of other types never match.
pub const CONTEXT_TIER: &str = "context";

/// Cache prices in USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachePrices {
    /// Price of a token read from the cache.
    #[serde(default, with = "price")]
    pub read: Decimal,
    /// Price of a token written to the cache.
    #[serde(default, with = "price")]
    pub write: Decimal,
}

/// One set of prices in USD per million tokens: the base, a tier or the over-200K set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prices {
    /// Price of an input token (net of cache).
    #[serde(default, with = "price")]
    pub input: Decimal,
    /// Price of an output token; reasoning tokens are billed at this rate too.
    #[serde(default, with = "price")]
    pub output: Decimal,
    /// Cache read and write prices.
    #[serde(default)]
    pub cache: CachePrices,
}

/// The condition under which a [`CostTier`] applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierBound {
    /// The tier type; only [`CONTEXT_TIER`] tiers are ever priced.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tier applies when the raw inclusive input is strictly above this many tokens.
    pub size: u64,
}

/// Prices that replace the base prices above a context size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostTier {
    /// When the tier applies.
    pub tier: TierBound,
    /// Price of an input token (net of cache).
    #[serde(default, with = "price")]
    pub input: Decimal,
    /// Price of an output token.
    #[serde(default, with = "price")]
    pub output: Decimal,
    /// Cache read and write prices.
    #[serde(default)]
    pub cache: CachePrices,
}

/// A model's prices in the core shape (OpenCode's `model.cost`).
///
/// A missing price field counts as 0; a missing object (`ModelCost::default()`) prices
/// everything at 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCost {
    /// Price of an input token (net of cache).
    #[serde(default, with = "price")]
    pub input: Decimal,
    /// Price of an output token; reasoning tokens are billed at this rate too.
    #[serde(default, with = "price")]
    pub output: Decimal,
    /// Cache read and write prices.
    #[serde(default)]
    pub cache: CachePrices,
    /// Context-size tiers; the largest one below the raw input wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<CostTier>,
    /// Prices above 200K raw input tokens, used when no tier matches.
    #[serde(default, rename = "experimentalOver200K", skip_serializing_if = "Option::is_none")]
    pub experimental_over_200k: Option<Prices>,
}

impl ModelCost {
    /// The base prices, ignoring tiers and the over-200K set.
    pub fn base(&self) -> Prices {
        Prices { input: self.input, output: self.output, cache: self.cache }
    }

    /// `prices` alone, without tiers or an over-200K set: the cost OpenCode 1.18.34 builds for
    /// a model the user's config lists (SPEC 5 "Configured models").
    pub fn flat(prices: Prices) -> Self {
        Self { input: prices.input, output: prices.output, cache: prices.cache, ..Self::default() }
    }

    /// The prices that apply to a step whose raw inclusive input is `raw_input` tokens.
    pub fn prices_for(&self, raw_input: u64) -> Prices {
        // Among equal sizes the first listed tier wins, as OpenCode's stable sort keeps it first.
        let mut best: Option<&CostTier> = None;
        for tier in &self.tiers {
            if tier.tier.kind == CONTEXT_TIER
                && raw_input > tier.tier.size
                && best.is_none_or(|b| tier.tier.size > b.tier.size)
            {
                best = Some(tier);
            }
        }
        if let Some(tier) = best {
            return Prices { input: tier.input, output: tier.output, cache: tier.cache };
        }
        match self.experimental_over_200k {
            Some(over) if raw_input > OVER_200K_THRESHOLD => over,
            _ => self.base(),
        }
    }

    /// The core prices of a models.dev catalog `cost` object (SPEC 5 "Catalog mapping").
    ///
    /// `Value::Null` (a model without a cost object) gives all-zero prices.
    pub fn from_catalog(cost: &Value) -> Result<Self, serde_json::Error> {
        if cost.is_null() {
            return Ok(Self::default());
        }
        CatalogCost::deserialize(cost).map(Self::from)
    }
}

/// Prices of a models.dev catalog tier or `context_over_200k` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CatalogPrices {
    /// Input price.
    #[serde(default, with = "price")]
    pub input: Decimal,
    /// Output price.
    #[serde(default, with = "price")]
    pub output: Decimal,
    /// Cache read price; absent means 0.
    #[serde(default, with = "price")]
    pub cache_read: Decimal,
    /// Cache write price; absent means 0.
    #[serde(default, with = "price")]
    pub cache_write: Decimal,
}

impl From<&CatalogPrices> for Prices {
    fn from(p: &CatalogPrices) -> Self {
        Prices {
            input: p.input,
            output: p.output,
            cache: CachePrices { read: p.cache_read, write: p.cache_write },
        }
    }
}

/// The condition of a models.dev catalog tier.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogTierBound {
    /// Tier size in tokens.
    pub size: u64,
    /// Tier type; absent means a context tier.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// One tier of a models.dev catalog cost object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogTier {
    /// When the tier applies.
    pub tier: CatalogTierBound,
    /// The tier's prices.
    #[serde(flatten)]
    pub prices: CatalogPrices,
}

/// A models.dev catalog `cost` object (USD per million tokens).
///
/// The catalog's separate `reasoning` price is deliberately not read: reasoning tokens are
/// billed at the output rate (SPEC 5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CatalogCost {
    /// The base prices.
    #[serde(flatten)]
    pub base: CatalogPrices,
    /// Context-size tiers.
    #[serde(default)]
    pub tiers: Vec<CatalogTier>,
    /// Prices above 200K input tokens.
    #[serde(default)]
    pub context_over_200k: Option<CatalogPrices>,
}

impl From<&CatalogCost> for ModelCost {
    fn from(cost: &CatalogCost) -> Self {
        let base = Prices::from(&cost.base);
        ModelCost {
            input: base.input,
            output: base.output,
            cache: base.cache,
            tiers: cost
                .tiers
                .iter()
                .map(|t| {
                    let prices = Prices::from(&t.prices);
                    CostTier {
                        tier: TierBound {
                            kind: t.tier.kind.clone().unwrap_or_else(|| CONTEXT_TIER.to_owned()),
                            size: t.tier.size,
                        },
                        input: prices.input,
                        output: prices.output,
                        cache: prices.cache,
                    }
                })
                .collect(),
            experimental_over_200k: cost.context_over_200k.as_ref().map(Prices::from),
        }
    }
}

impl From<CatalogCost> for ModelCost {
    fn from(cost: CatalogCost) -> Self {
        Self::from(&cost)
    }
}

/// The tokens and cost of one step, as `get_usage` returns them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUsage {
    /// Token counts, net of cache and reasoning where SPEC 5 says so.
    pub tokens: TokenUsage,
    /// Cost in USD, never negative.
    #[serde(with = "price")]
    pub cost: Decimal,
}

/// Tokens and cost of one step from the provider's usage report (SPEC 5).
pub fn get_usage(cost: &ModelCost, usage: &Usage, metadata: Option<&ProviderMetadata>) -> StepUsage {
    let input = safe_i64(usage.input_tokens);
    let output = safe_i64(usage.output_tokens);
    let reasoning = safe_i64(usage.reasoning_tokens);
    let cache_read = safe_i64(usage.cache_read_input_tokens);
    let cache_write = cache_write_tokens(usage, metadata);

    let tokens = TokenUsage {
        total: usage.total_tokens,
        // Providers report input inclusive of cache reads and writes, so both come off here.
        input: input.saturating_sub(cache_read).saturating_sub(cache_write),
        output: output.saturating_sub(reasoning),
        reasoning,
        cache: CacheTokens { read: cache_read, write: cache_write },
    };

    // Tier selection looks at the raw inclusive input, not the adjusted count.
    let p = cost.prices_for(input);
    // Saturating, not panicking: only absurd counts at absurd prices pass Decimal's ~7.9e28.
    let sum = [
        (tokens.input, p.input),
        (tokens.output, p.output),
        (tokens.cache.read, p.cache.read),
        (tokens.cache.write, p.cache.write),
        (tokens.reasoning, p.output),
    ]
    .into_iter()
    .fold(Decimal::ZERO, |acc, (count, price)| {
        acc.saturating_add(Decimal::from(count).saturating_mul(price))
    });
    // Dividing by a non-zero constant cannot fail; the fallback only spares an `unwrap`.
    let cost = sum.checked_div(Decimal::from(1_000_000u32)).unwrap_or(Decimal::ZERO);
    // Negative prices are the only way to a negative sum; like OpenCode's `safe`, clamp to 0.
    StepUsage { tokens, cost: cost.max(Decimal::ZERO).normalize() }
}

/// `safe` of a usage count: missing or negative is 0.
fn safe_i64(value: Option<i64>) -> u64 {
    value.and_then(|v| u64::try_from(v).ok()).unwrap_or(0)
}

/// `safe` of a JS number: non-finite or negative is 0.
///
/// Token counts are whole, so a fractional value is truncated; values beyond `u64` saturate.
fn safe_f64(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        // `as` truncates toward zero and saturates, which is what is wanted here.
        value as u64
    } else {
        0
    }
}

/// The cache write count: the first non-null value of the lookup chain, through JS `Number()`.
fn cache_write_tokens(usage: &Usage, metadata: Option<&ProviderMetadata>) -> u64 {
    if let Some(v) = usage.cache_write_input_tokens {
        return safe_i64(Some(v));
    }
    let Some(metadata) = metadata else { return 0 };
    // Provider metadata is untyped, so each path may be missing, null or of any JSON type.
    let paths: [&[&str]; 4] = [
        &["anthropic", "cacheCreationInputTokens"],
        &["vertex", "cacheCreationInputTokens"],
        &["bedrock", "usage", "cacheWriteInputTokens"],
        &["venice", "usage", "cacheCreationInputTokens"],
    ];
    paths
        .iter()
        .find_map(|path| {
            let (first, rest) = path.split_first()?;
            let value = rest.iter().try_fold(metadata.get(*first)?, |v, key| v.get(key))?;
            (!value.is_null()).then_some(value)
        })
        .map_or(0, |value| safe_f64(js_number(value)))
}

/// JavaScript's `Number(value)` for a JSON value.
fn js_number(value: &Value) -> f64 {
    match value {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => js_string_to_number(s),
        // An array converts through its comma-joined text: empty is "", two or more
        // elements always contain a comma (NaN), one element is that element's text.
        Value::Array(items) => match items.as_slice() {
            [] => 0.0,
            [Value::Null] => 0.0,
            [Value::Bool(_)] => f64::NAN,
            [only] => js_number(only),
            _ => f64::NAN,
        },
        Value::Object(_) => f64::NAN,
    }
}

/// JavaScript's white space and line terminators, which `Number()` trims.
fn is_js_space(c: char) -> bool {
    // Unicode White_Space minus U+0085, plus the byte order mark.
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// JavaScript's `Number(text)` (StringToNumber).
fn js_string_to_number(text: &str) -> f64 {
    let s = text.trim_matches(is_js_space);
    if s.is_empty() {
        return 0.0;
    }
    match s {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let radix = match s.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 0,
    };
    if radix != 0 {
        let digits = &s[2..];
        if digits.is_empty() {
            return f64::NAN;
        }
        return digits
            .chars()
            .try_fold(0.0f64, |acc, c| c.to_digit(radix).map(|d| acc * f64::from(radix) + f64::from(d)))
            .unwrap_or(f64::NAN);
    }
    if is_js_decimal_literal(s) { f64::from_str(s).unwrap_or(f64::NAN) } else { f64::NAN }
}

/// Whether `s` is a JS StrDecimalLiteral without `Infinity`: `[+-]? (d+ [. d*] | . d+) ([eE] [+-]? d+)?`.
fn is_js_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Serde for prices and costs: JSON numbers in, converted through their shortest decimal text;
/// null is 0 (also for the store's session totals, which clients read as numbers too).
pub mod price {
    use std::fmt;
    use std::str::FromStr;

    use rust_decimal::Decimal;
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    /// Writes the price as the JSON number nearest to it.
    pub fn serialize<S: Serializer>(value: &Decimal, serializer: S) -> Result<S::Ok, S::Error> {
        // Whole prices stay integers (3, not 3.0), as they were in the JSON they came from.
        if value.fract().is_zero()
            && let Ok(whole) = i64::try_from(*value)
        {
            return serializer.serialize_i64(whole);
        }
        // Parsing the decimal text gives the correctly rounded f64.
        let number = f64::from_str(&value.to_string()).map_err(serde::ser::Error::custom)?;
        serializer.serialize_f64(number)
    }

    /// Reads a price from a JSON number (or null, meaning 0).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Decimal, D::Error> {
        deserializer.deserialize_any(PriceVisitor)
    }

    struct PriceVisitor;

    impl Visitor<'_> for PriceVisitor {
        type Value = Decimal;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a price as a JSON number")
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
            // `{}` prints the shortest text that reads back as `v`, never in exponent form.
            Decimal::from_str(&v.to_string()).map_err(|_| E::invalid_value(de::Unexpected::Float(v), &self))
        }

        fn visit_unit<E: de::Error>(self) -> Result<Decimal, E> {
            Ok(Decimal::ZERO)
        }

        fn visit_none<E: de::Error>(self) -> Result<Decimal, E> {
            Ok(Decimal::ZERO)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_number_follows_javascript() {
        let cases: &[(Value, f64)] = &[
            (Value::from("12"), 12.0),
            (Value::from("  7\n"), 7.0),
            (Value::from(""), 0.0),
            (Value::from("0x1A"), 26.0),
            (Value::from("0b101"), 5.0),
            (Value::from("1e3"), 1000.0),
            (Value::from(".5"), 0.5),
            (Value::from("5."), 5.0),
            (Value::from(true), 1.0),
            (Value::from(false), 0.0),
            (serde_json::json!([]), 0.0),
            (serde_json::json!(["8"]), 8.0),
            (serde_json::json!([null]), 0.0),
        ];
        for (value, expected) in cases {
            assert_eq!(js_number(value), *expected, "Number({value})");
        }
        for nan in [
            Value::from("abc"),
            Value::from("inf"),
            Value::from("NaN"),
            Value::from("1_000"),
            Value::from("-0x1"),
            Value::from("0x"),
            Value::from("."),
            Value::from("1e"),
            Value::from("\u{85}1"),
            serde_json::json!([1, 2]),
            serde_json::json!([true]),
            serde_json::json!({}),
        ] {
            assert!(js_number(&nan).is_nan(), "Number({nan}) should be NaN");
        }
        assert_eq!(js_number(&Value::from("-Infinity")), f64::NEG_INFINITY);
    }

    #[test]
    fn safe_f64_clamps_and_truncates() {
        assert_eq!(safe_f64(f64::NAN), 0);
        assert_eq!(safe_f64(f64::INFINITY), 0);
        assert_eq!(safe_f64(-3.0), 0);
        assert_eq!(safe_f64(12.9), 12);
        assert_eq!(safe_f64(1e30), u64::MAX);
    }

    #[test]
    fn prices_read_from_shortest_decimal_text() {
        let cost: ModelCost =
            serde_json::from_value(serde_json::json!({"input": 0.1, "output": null})).unwrap();
        assert_eq!(cost.input, Decimal::new(1, 1));
        assert_eq!(cost.output, Decimal::ZERO);
        assert_eq!(cost.cache, CachePrices::default());
    }
}
