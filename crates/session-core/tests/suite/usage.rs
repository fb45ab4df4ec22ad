//! `get_usage` and the price shapes (SPEC 5): tables and properties.

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    CachePrices, CacheTokens, ModelCost, Prices, ProviderMetadata, TokenUsage, Usage, usage::get_usage,
};

#[expect(clippy::unwrap_used, reason = "a fixture that does not parse is a test bug")]
fn cost_from(json: Value) -> ModelCost {
    serde_json::from_value(json).unwrap()
}

#[expect(clippy::unwrap_used, reason = "a fixture that does not parse is a test bug")]
fn metadata(json: Value) -> ProviderMetadata {
    serde_json::from_value(json).unwrap()
}

fn usage(input: i64, output: i64) -> Usage {
    Usage { input_tokens: Some(input), output_tokens: Some(output), ..Usage::default() }
}

#[expect(clippy::unwrap_used, reason = "a fixture that does not parse is a test bug")]
fn dec(text: &str) -> Decimal {
    text.parse().unwrap()
}

#[test]
fn cache_write_lookup_chain() {
    let cost = ModelCost::default();
    let cases: &[(&str, Option<i64>, Value, u64)] = &[
        ("usage field wins over metadata", Some(5), json!({"anthropic": {"cacheCreationInputTokens": 9}}), 5),
        ("numeric string is coerced", None, json!({"anthropic": {"cacheCreationInputTokens": "12"}}), 12),
        ("bedrock usage path", None, json!({"bedrock": {"usage": {"cacheWriteInputTokens": 7}}}), 7),
        ("venice usage path", None, json!({"venice": {"usage": {"cacheCreationInputTokens": 4}}}), 4),
        (
            "negative is clamped without falling through",
            None,
            json!({"anthropic": {"cacheCreationInputTokens": -3}, "vertex": {"cacheCreationInputTokens": 2}}),
            0,
        ),
        (
            "NaN is clamped without falling through",
            None,
            json!({"anthropic": {"cacheCreationInputTokens": "x"}, "vertex": {"cacheCreationInputTokens": 2}}),
            0,
        ),
        (
            "non-object provider entry is skipped",
            None,
            json!({"anthropic": "x", "vertex": {"cacheCreationInputTokens": 2}}),
            2,
        ),
        ("nothing anywhere", None, json!({"openai": {"cachedPromptTokens": 3}}), 0),
    ];
    for (name, usage_write, meta, expected) in cases {
        let usage = Usage { cache_write_input_tokens: *usage_write, ..usage(100, 0) };
        let step = get_usage(&cost, &usage, Some(&metadata(meta.clone())));
        assert_eq!(step.tokens.cache.write, *expected, "{name}");
        assert_eq!(step.tokens.input, 100 - expected, "{name}");
    }
}

#[test]
fn tokens_are_net_of_cache_and_reasoning() {
    let usage = Usage {
        input_tokens: Some(1000),
        output_tokens: Some(500),
        total_tokens: Some(1500),
        reasoning_tokens: Some(200),
        cache_read_input_tokens: Some(300),
        cache_write_input_tokens: Some(100),
    };
    let step = get_usage(&ModelCost::default(), &usage, None);
    assert_eq!(
        step.tokens,
        TokenUsage {
            total: Some(1500),
            input: 600,
            output: 300,
            reasoning: 200,
            cache: CacheTokens { read: 300, write: 100 }
        }
    );
    assert_eq!(step.cost, Decimal::ZERO);
}

#[test]
fn prices_are_exact_decimals() {
    // 0.1 + 0.2 in binary floats is 0.30000000000000004; in decimal it is 0.3.
    let cost = cost_from(json!({"input": 0.1, "output": 0.2}));
    let step = get_usage(&cost, &usage(1_000_000, 1_000_000), None);
    assert_eq!(step.cost, dec("0.3"));
    assert_eq!(serde_json::to_value(step).unwrap()["cost"], json!(0.3));
}

#[test]
fn tier_selection() {
    let cost = cost_from(json!({
        "input": 1, "output": 0,
        "tiers": [
            {"tier": {"type": "context", "size": 100}, "input": 2, "output": 0},
            {"tier": {"type": "other", "size": 150}, "input": 9, "output": 0},
            {"tier": {"type": "context", "size": 200}, "input": 3, "output": 0},
            {"tier": {"type": "context", "size": 200}, "input": 4, "output": 0}
        ],
        "experimentalOver200K": {"input": 5, "output": 0}
    }));
    // Input price per token in millionths, by raw input: base, first tier, first of two equal sizes.
    for (raw, price) in [(100, 1), (101, 2), (160, 2), (200, 2), (201, 3)] {
        assert_eq!(cost.prices_for(raw).input, Decimal::from(price), "raw input {raw}");
    }
    let no_tiers = ModelCost { tiers: Vec::new(), ..cost.clone() };
    assert_eq!(no_tiers.prices_for(200_000).input, Decimal::ONE);
    assert_eq!(no_tiers.prices_for(200_001).input, Decimal::from(5));
}

#[test]
fn chosen_entry_without_cache_prices_prices_cache_at_zero() {
    let cost = cost_from(json!({
        "input": 1, "output": 1, "cache": {"read": 1, "write": 1},
        "tiers": [{"tier": {"type": "context", "size": 10}, "input": 1, "output": 1}]
    }));
    let u = Usage { cache_read_input_tokens: Some(5), ..usage(20, 0) };
    // Only the 15 net input tokens are priced; the cache read costs nothing in the tier.
    assert_eq!(get_usage(&cost, &u, None).cost, dec("0.000015"));
}

#[test]
fn catalog_mapping() {
    let catalog = json!({
        "input": 3, "output": 15, "cache_read": 0.3, "reasoning": 99,
        "tiers": [
            {"tier": {"size": 200000}, "input": 6, "output": 22.5, "cache_write": 7.5},
            {"tier": {"size": 100000, "type": "image"}, "input": 50, "output": 50}
        ],
        "context_over_200k": {"input": 7, "output": 30}
    });
    let expected = cost_from(json!({
        "input": 3, "output": 15, "cache": {"read": 0.3, "write": 0},
        "tiers": [
            {"tier": {"type": "context", "size": 200000}, "input": 6, "output": 22.5, "cache": {"read": 0, "write": 7.5}},
            {"tier": {"type": "image", "size": 100000}, "input": 50, "output": 50, "cache": {"read": 0, "write": 0}}
        ],
        "experimentalOver200K": {"input": 7, "output": 30, "cache": {"read": 0, "write": 0}}
    }));
    assert_eq!(ModelCost::from_catalog(&catalog).unwrap(), expected);
    assert_eq!(ModelCost::from_catalog(&Value::Null).unwrap(), ModelCost::default());
    // The image tier is kept but never priced, and reasoning bills at the output rate (15).
    let u = Usage { reasoning_tokens: Some(1000), ..usage(150_000, 1000) };
    assert_eq!(get_usage(&expected, &u, None).cost, dec("0.465"));
}

#[test]
fn model_cost_serializes_in_the_core_shape() {
    let json = json!({
        "input": 0.1, "output": 1.25, "cache": {"read": 0.01, "write": 0},
        "tiers": [{"tier": {"type": "context", "size": 200000}, "input": 0.2, "output": 2.5, "cache": {"read": 0.02, "write": 0}}],
        "experimentalOver200K": {"input": 0.3, "output": 3, "cache": {"read": 0, "write": 0}}
    });
    assert_eq!(serde_json::to_value(cost_from(json.clone())).unwrap(), json);
    assert_eq!(
        serde_json::to_value(ModelCost::default()).unwrap(),
        json!({"input": 0, "output": 0, "cache": {"read": 0, "write": 0}})
    );
}

/// A usage count as adapters report it: absent, negative or a plausible size.
fn count() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![Just(None), (-1000i64..0).prop_map(Some), (0i64..2_000_000_000).prop_map(Some)]
}

fn any_usage() -> impl Strategy<Value = Usage> {
    (count(), count(), count(), count(), count(), count()).prop_map(|(i, o, t, r, cr, cw)| Usage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: t,
        reasoning_tokens: r,
        cache_read_input_tokens: cr,
        cache_write_input_tokens: cw,
    })
}

/// A price in thousandths of a dollar per million tokens, as (JSON number, exact decimal).
fn price(min_millis: i64) -> impl Strategy<Value = (f64, Decimal)> {
    (min_millis..10_000_000i64).prop_map(|m| (m as f64 / 1000.0, Decimal::new(m, 3)))
}

fn clamp(value: Option<i64>) -> i128 {
    i128::from(value.unwrap_or(0).max(0))
}

proptest! {
    #[test]
    fn cost_is_the_sum_of_priced_components(
        usage in any_usage(),
        meta_write in count(),
        (pi, di) in price(0), (po, d_o) in price(0), (pr, dr) in price(0), (pw, dw) in price(0),
    ) {
        let cost = cost_from(json!({"input": pi, "output": po, "cache": {"read": pr, "write": pw}}));
        let meta = metadata(json!({"anthropic": {"cacheCreationInputTokens": meta_write}}));
        let step = get_usage(&cost, &usage, Some(&meta));

        let write = match usage.cache_write_input_tokens {
            Some(v) => clamp(Some(v)),
            None => clamp(meta_write),
        };
        let read = clamp(usage.cache_read_input_tokens);
        let input = (clamp(usage.input_tokens) - read - write).max(0);
        let reasoning = clamp(usage.reasoning_tokens);
        let output = (clamp(usage.output_tokens) - reasoning).max(0);
        let to_dec = |n: i128| Decimal::from_i128_with_scale(n, 0);
        let expected = (to_dec(input) * di + to_dec(output) * d_o + to_dec(read) * dr + to_dec(write) * dw
            + to_dec(reasoning) * d_o) / Decimal::from(1_000_000);

        prop_assert_eq!(step.cost, expected);
        prop_assert!(step.cost >= Decimal::ZERO);
        let as_u64 = |n: i128| u64::try_from(n).unwrap();
        prop_assert_eq!(step.tokens, TokenUsage {
            total: usage.total_tokens,
            input: as_u64(input),
            output: as_u64(output),
            reasoning: as_u64(reasoning),
            cache: CacheTokens { read: as_u64(read), write: as_u64(write) },
        });
    }

    #[test]
    fn cost_is_never_negative(
        usage in any_usage(),
        prices in proptest::collection::vec(price(-10_000_000), 12),
        sizes in proptest::collection::vec(0u64..3_000_000_000, 2),
    ) {
        let p: Vec<f64> = prices.iter().map(|(f, _)| *f).collect();
        let cost = cost_from(json!({
            "input": p[0], "output": p[1], "cache": {"read": p[2], "write": p[3]},
            "tiers": [
                {"tier": {"type": "context", "size": sizes[0]}, "input": p[4], "output": p[5], "cache": {"read": p[6], "write": p[7]}},
                {"tier": {"type": "context", "size": sizes[1]}, "input": p[8], "output": p[9]}
            ],
            "experimentalOver200K": {"input": p[10], "output": p[11]}
        }));
        prop_assert!(get_usage(&cost, &usage, None).cost >= Decimal::ZERO);
    }

    #[test]
    fn the_chosen_entry_prices_the_whole_step(
        usage in any_usage(),
        tiers in proptest::collection::vec((any::<bool>(), 0u64..2_500_000_000, price(0), price(0)), 0..4),
        over in proptest::option::of((price(0), price(0))),
        (bi, _) in price(0), (bo, _) in price(0),
    ) {
        let tier_json: Vec<Value> = tiers.iter().map(|(context, size, (i, _), (o, _))| json!({
            "tier": {"type": if *context { "context" } else { "other" }, "size": size},
            "input": i, "output": o, "cache": {"read": i, "write": o}
        })).collect();
        let mut cost_json = json!({"input": bi, "output": bo, "cache": {"read": bi, "write": bo}, "tiers": tier_json});
        if let Some(((i, _), (o, _))) = over {
            cost_json["experimentalOver200K"] = json!({"input": i, "output": o, "cache": {"read": i, "write": o}});
        }
        let cost = cost_from(cost_json);

        // Independent choice: the first of the largest context sizes strictly below the raw input.
        let raw = u64::try_from(clamp(usage.input_tokens)).unwrap();
        let mut chosen: Option<(u64, Decimal, Decimal)> = None;
        for (context, size, (_, i), (_, o)) in &tiers {
            if *context && raw > *size && chosen.is_none_or(|(best, _, _)| *size > best) {
                chosen = Some((*size, *i, *o));
            }
        }
        let (input, output) = match (chosen, over) {
            (Some((_, i, o)), _) => (i, o),
            (None, Some(((_, i), (_, o)))) if raw > 200_000 => (i, o),
            _ => (cost.input, cost.output),
        };
        let flat = ModelCost {
            input,
            output,
            cache: CachePrices { read: input, write: output },
            ..ModelCost::default()
        };
        prop_assert_eq!(cost.prices_for(raw), Prices { input, output, cache: flat.cache });
        prop_assert_eq!(get_usage(&cost, &usage, None), get_usage(&flat, &usage, None));
    }

    /// A configured model's cost (SPEC 5 "Configured models"): its base prices price every
    /// step, however large, whatever tiers or over-200K set the catalog had.
    #[test]
    fn a_flat_cost_prices_every_step_at_the_base_prices(
        usage in any_usage(),
        (bi, di) in price(0), (bo, d_o) in price(0), (br, dr) in price(0), (bw, dw) in price(0),
        (ti, _) in price(0), size in 0u64..400_000, (oi, _) in price(0),
    ) {
        let priced = cost_from(json!({
            "input": bi, "output": bo, "cache": {"read": br, "write": bw},
            "tiers": [{"tier": {"type": "context", "size": size}, "input": ti, "output": ti}],
            "experimentalOver200K": {"input": oi, "output": oi}
        }));
        let flat = ModelCost::flat(priced.base());
        prop_assert!(flat.tiers.is_empty() && flat.experimental_over_200k.is_none());
        prop_assert_eq!(flat.base(), Prices { input: di, output: d_o, cache: CachePrices { read: dr, write: dw } });
        let step = get_usage(&flat, &usage, None);
        let tokens = step.tokens;
        let to_dec = |n: u64| Decimal::from(n);
        let expected = (to_dec(tokens.input) * di + to_dec(tokens.output) * d_o + to_dec(tokens.cache.read) * dr
            + to_dec(tokens.cache.write) * dw + to_dec(tokens.reasoning) * d_o) / Decimal::from(1_000_000);
        prop_assert_eq!(step.cost, expected.normalize());
        // The tokens do not depend on the prices.
        prop_assert_eq!(tokens, get_usage(&priced, &usage, None).tokens);
    }
}
