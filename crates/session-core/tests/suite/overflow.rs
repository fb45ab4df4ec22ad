//! `max_output_tokens`, `usable` and `is_overflow` (SPEC 6): tables and properties.

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use session_core::{
    CacheTokens, TokenUsage, config::CompactionConfig, overflow::COMPACTION_BUFFER, overflow::ModelLimit,
    overflow::OUTPUT_TOKEN_MAX, overflow::is_overflow, overflow::max_output_tokens, overflow::usable,
};

fn limit(context: u64, input: Option<u64>, output: u64) -> ModelLimit {
    ModelLimit { context, input, output }
}

fn tokens(input: u64, output: u64, read: u64, write: u64) -> TokenUsage {
    TokenUsage { total: None, input, output, reasoning: 0, cache: CacheTokens { read, write } }
}

#[test]
fn constants() {
    assert_eq!((COMPACTION_BUFFER, OUTPUT_TOKEN_MAX), (20_000, 32_000));
}

#[test]
fn usable_table() {
    let reserved = |r| CompactionConfig { reserved: Some(r), ..CompactionConfig::default() };
    let default = CompactionConfig::default();
    let cases: &[(&str, &CompactionConfig, ModelLimit, u64, u64)] = &[
        ("no context", &default, limit(0, Some(100_000), 8_000), OUTPUT_TOKEN_MAX, 0),
        ("context minus max output", &default, limit(128_000, None, 64_000), OUTPUT_TOKEN_MAX, 96_000),
        ("input minus buffer", &default, limit(400_000, Some(272_000), 128_000), OUTPUT_TOKEN_MAX, 252_000),
        ("input minus small output", &default, limit(32_000, Some(30_000), 4_096), OUTPUT_TOKEN_MAX, 25_904),
        ("input 0 is no input limit", &default, limit(100_000, Some(0), 0), 16_000, 84_000),
        ("reserved above input", &reserved(50_000), limit(100_000, Some(40_000), 0), OUTPUT_TOKEN_MAX, 0),
        (
            "reserved ignored without input",
            &reserved(90_000),
            limit(100_000, None, 0),
            OUTPUT_TOKEN_MAX,
            68_000,
        ),
        ("configured max 0 keeps nothing free", &default, limit(100_000, None, 8_000), 0, 100_000),
    ];
    for (name, cfg, lim, max, expected) in cases {
        assert_eq!(usable(cfg, lim, *max), *expected, "{name}");
    }
}

#[test]
fn max_output_tokens_table() {
    for (output, max, expected) in
        [(0, 32_000, 32_000), (8_192, 32_000, 8_192), (64_000, 32_000, 32_000), (64_000, 100_000, 64_000)]
    {
        assert_eq!(max_output_tokens(&limit(1, None, output), max), expected, "output {output}, max {max}");
    }
}

#[test]
fn is_overflow_table() {
    let off = CompactionConfig { auto: Some(false), ..CompactionConfig::default() };
    let on = CompactionConfig { auto: Some(true), ..CompactionConfig::default() };
    let lim = limit(100_000, None, 32_000); // usable 68_000
    let total = |t| TokenUsage { total: Some(t), ..tokens(0, 0, 0, 0) };
    let cases: &[(&str, &CompactionConfig, TokenUsage, bool)] = &[
        ("cache write counts", &on, tokens(60_000, 0, 0, 8_000), true),
        ("total wins over parts", &on, TokenUsage { total: Some(10), ..tokens(99_000, 0, 0, 0) }, false),
        ("total reaches usable", &on, total(68_000), true),
        (
            "negative total is taken as is",
            &on,
            TokenUsage { total: Some(-1), ..tokens(99_000, 0, 0, 0) },
            false,
        ),
        ("auto off", &off, total(1_000_000), false),
    ];
    for (name, cfg, t, expected) in cases {
        assert_eq!(is_overflow(cfg, t, &lim, OUTPUT_TOKEN_MAX), *expected, "{name}");
    }
}

fn any_cfg() -> impl Strategy<Value = CompactionConfig> {
    (proptest::option::of(any::<bool>()), proptest::option::of(0u64..300_000))
        .prop_map(|(auto, reserved)| CompactionConfig { auto, reserved, ..CompactionConfig::default() })
}

fn any_limit() -> impl Strategy<Value = ModelLimit> {
    (0u64..1_000_000, proptest::option::of(0u64..1_000_000), 0u64..200_000)
        .prop_map(|(c, i, o)| limit(c, i, o))
}

proptest! {
    #[test]
    fn more_tokens_never_turn_overflow_off(
        cfg in any_cfg(),
        lim in any_limit(),
        max in 0u64..200_000,
        parts in proptest::array::uniform4(0u64..1_000_000),
        reasoning in 0u64..1_000_000,
        extra in 0u64..1_000_000,
        which in 0usize..4,
    ) {
        let before = TokenUsage { reasoning, ..tokens(parts[0], parts[1], parts[2], parts[3]) };
        let mut grown = parts;
        grown[which] += extra;
        let after = TokenUsage { reasoning, ..tokens(grown[0], grown[1], grown[2], grown[3]) };
        if is_overflow(&cfg, &before, &lim, max) {
            prop_assert!(is_overflow(&cfg, &after, &lim, max));
        }
    }

    #[test]
    fn a_larger_positive_total_never_turns_overflow_off(
        cfg in any_cfg(),
        lim in any_limit(),
        max in 0u64..200_000,
        total in 1i64..2_000_000,
        extra in 0i64..2_000_000,
    ) {
        let at = |t| TokenUsage { total: Some(t), ..tokens(0, 0, 0, 0) };
        if is_overflow(&cfg, &at(total), &lim, max) {
            prop_assert!(is_overflow(&cfg, &at(total + extra), &lim, max));
        }
    }

    #[test]
    fn reasoning_never_changes_the_answer(
        cfg in any_cfg(),
        lim in any_limit(),
        parts in proptest::array::uniform4(0u64..1_000_000),
        reasoning in 0u64..1_000_000,
    ) {
        let plain = tokens(parts[0], parts[1], parts[2], parts[3]);
        let with = TokenUsage { reasoning, ..plain };
        prop_assert_eq!(is_overflow(&cfg, &plain, &lim, OUTPUT_TOKEN_MAX), is_overflow(&cfg, &with, &lim, OUTPUT_TOKEN_MAX));
    }
}
