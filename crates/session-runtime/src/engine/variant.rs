//! Model variants (OpenCode's `provider/transform.ts` variants): a name such as `high` that a
//! prompt (`--variant`) or an agent (`variant`) chooses, sent as the provider's own reasoning
//! knob: OpenAI's `reasoning_effort`, Anthropic's and Gemini's thinking budget. Only models the
//! catalog marks as reasoning models take one; anything else is a clear error.

use session_llm::{Api, CatalogModel, RequestOptions};

use super::error::RuntimeError;

/// The effort names OpenAI's reasoning models take.
const OPENAI_EFFORTS: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];

/// Anthropic's variants and their thinking budgets, in tokens.
const ANTHROPIC_BUDGETS: [(&str, u32); 4] =
    [("low", 4_000), ("medium", 8_000), ("high", 16_000), ("max", 31_999)];

/// Gemini's variants and their thinking budgets, in tokens.
const GEMINI_BUDGETS: [(&str, u32); 4] =
    [("low", 4_096), ("medium", 8_192), ("high", 16_000), ("max", 24_576)];

/// Sets `variant` on `options` for `model` spoken in `api`.
pub(crate) fn apply_variant(
    options: &mut RequestOptions,
    api: Api,
    model: &CatalogModel,
    variant: &str,
) -> Result<(), RuntimeError> {
    if !model.reasoning {
        return Err(RuntimeError::Variant {
            variant: variant.to_owned(),
            reason: format!(
                "model {} is not a reasoning model (the catalog says so), so it takes no variant",
                model.id
            ),
        });
    }
    let unknown = |names: Vec<&str>| RuntimeError::Variant {
        variant: variant.to_owned(),
        reason: format!("{} models take {}", api.as_str(), names.join(", ")),
    };
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => {
            if !OPENAI_EFFORTS.contains(&variant) {
                return Err(unknown(OPENAI_EFFORTS.to_vec()));
            }
            options.reasoning_effort = Some(variant.to_owned());
        }
        Api::Anthropic => {
            let budget =
                budget(&ANTHROPIC_BUDGETS, variant).ok_or_else(|| unknown(names(&ANTHROPIC_BUDGETS)))?;
            options.thinking_budget = Some(budget);
        }
        Api::Gemini => {
            let budget = budget(&GEMINI_BUDGETS, variant).ok_or_else(|| unknown(names(&GEMINI_BUDGETS)))?;
            options.thinking_budget = Some(budget);
        }
    }
    Ok(())
}

fn budget(table: &[(&str, u32)], variant: &str) -> Option<u32> {
    table.iter().find(|(name, _)| *name == variant).map(|(_, budget)| *budget)
}

fn names<'a>(table: &[(&'a str, u32)]) -> Vec<&'a str> {
    table.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn reasoning() -> CatalogModel {
        CatalogModel { reasoning: true, ..CatalogModel::unknown("r1") }
    }

    #[test]
    fn each_api_gets_its_own_knob() {
        let mut options = RequestOptions::default();
        apply_variant(&mut options, Api::OpenAiResponses, &reasoning(), "high").unwrap();
        assert_eq!(options.reasoning_effort.as_deref(), Some("high"));
        let mut options = RequestOptions::default();
        apply_variant(&mut options, Api::Anthropic, &reasoning(), "max").unwrap();
        assert_eq!(options.thinking_budget, Some(31_999));
        let mut options = RequestOptions::default();
        apply_variant(&mut options, Api::Gemini, &reasoning(), "high").unwrap();
        assert_eq!(options.thinking_budget, Some(16_000));
    }

    #[test]
    fn unknown_variants_and_plain_models_are_errors() {
        let mut options = RequestOptions::default();
        let error =
            apply_variant(&mut options, Api::Anthropic, &reasoning(), "minimal").unwrap_err().to_string();
        assert!(error.contains("low, medium, high, max"), "{error}");
        let error = apply_variant(&mut options, Api::OpenAiChat, &CatalogModel::unknown("plain"), "high")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a reasoning model"), "{error}");
        assert_eq!(options, RequestOptions::default());
    }
}
