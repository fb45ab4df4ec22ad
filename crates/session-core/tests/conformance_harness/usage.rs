//! Cases of `usage.json`: `get_usage(model.cost, usage, metadata)` against `{tokens, cost}`.

use rust_decimal::Decimal;
use serde_json::{Map, Value};
use session_core::{ModelCost, ProviderMetadata, StepUsage, Usage, usage::get_usage};

use crate::overflow::{object, only_keys, read_exactly};
use crate::{Report, case_name, cases, json_equal};

/// Costs agree when they differ by at most 1e-12 dollars (conformance README).
const COST_TOLERANCE: Decimal = Decimal::from_parts(1, 0, 0, false, 12);

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        let outcome = map_case(case).and_then(|(cost, usage, metadata, expected)| {
            let step = get_usage(&cost, &usage, metadata.as_ref());
            check(&expected, &step)
        });
        report.record(&name, outcome);
    }
}

type Mapped = (ModelCost, Usage, Option<ProviderMetadata>, Value);

/// Turns a case's JSON into the arguments of `get_usage` and the expected object.
fn map_case(case: &Value) -> Result<Mapped, String> {
    let input = object(case.get("input"), "input")?;
    only_keys(input, &["model", "usage", "metadata"], "input")?;
    let model = object(input.get("model"), "input.model")?;
    only_keys(model, &["cost"], "input.model")?;
    let cost = match model.get("cost") {
        None => ModelCost::default(),
        Some(cost) => {
            only_keys(
                object(Some(cost), "model.cost")?,
                &["input", "output", "cache", "tiers", "experimentalOver200K"],
                "model.cost",
            )?;
            serde_json::from_value(cost.clone()).map_err(|e| format!("cannot map model.cost: {e}"))?
        }
    };
    let usage_json = input.get("usage").ok_or("input.usage is missing")?;
    let usage: Usage = read_exactly(usage_json, "input.usage")?;
    let metadata = match input.get("metadata") {
        None => None,
        Some(m) => Some(object(Some(m), "input.metadata")?.clone()),
    };
    let expected = case.get("expected").ok_or("expected is missing")?.clone();
    Ok((cost, usage, metadata, expected))
}

/// Compares the whole expected object, with the cost to [`COST_TOLERANCE`].
fn check(expected: &Value, step: &StepUsage) -> Result<(), String> {
    let actual = serde_json::to_value(step).map_err(|e| e.to_string())?;
    let fail = || Err(format!("expected {expected} actual {actual} (cost {})", step.cost));
    let (Some(exp), Some(act)) = (expected.as_object(), actual.as_object()) else { return fail() };
    // Everything but the cost compares exactly, keys included.
    let without_cost = |o: &Map<String, Value>| {
        Value::Object(o.iter().filter(|(k, _)| *k != "cost").map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    if !json_equal(&without_cost(exp), &without_cost(act)) {
        return fail();
    }
    let Some(expected_cost) = exp.get("cost").and_then(Value::as_f64) else { return fail() };
    // The expected cost enters as decimal text, as prices do, so the difference is exact.
    let Ok(expected_cost) = expected_cost.to_string().parse::<Decimal>() else { return fail() };
    if (expected_cost - step.cost).abs() > COST_TOLERANCE {
        return fail();
    }
    Ok(())
}
