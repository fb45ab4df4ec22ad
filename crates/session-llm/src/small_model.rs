//! The catalog's cheap model of a provider, for small side requests such as titles (SPEC 12
//! step 3) when the configuration names no `small_model`.
//!
//! The rule, over the provider's models:
//! 1. only stable models (no `alpha`, `beta` or `deprecated` status) that answer in text;
//! 2. only models with a listed output price: an embedding model bills no output, and a price
//!    the catalog does not list cannot be compared;
//! 3. the lowest input + output price per million tokens (base prices, tiers aside) wins;
//! 4. on a tie, a model that does not reason first (reasoning spends tokens and time before a
//!    one-line answer), then the model id in byte order (so `x` comes before `x-20250101`).
//!
//! On the embedded snapshot this picks `openai/gpt-5-nano`, `anthropic/claude-haiku-4-5` and
//! `google/gemini-2.5-flash-lite`. Tools play no part: a title request offers none.

use crate::catalog::{CatalogModel, CatalogProvider};

/// The key of the cheapest usable model among `models` (key, model) by the rule above, or
/// `None` when none qualifies.
pub fn small_model<'a, I>(models: I) -> Option<&'a str>
where
    I: IntoIterator<Item = (&'a str, &'a CatalogModel)>,
{
    models
        .into_iter()
        .filter(|(_, model)| {
            model.status.is_none()
                && model.text_output
                && model.cost.output.is_sign_positive()
                && !model.cost.output.is_zero()
        })
        .min_by(|(a_key, a), (b_key, b)| {
            (a.cost.input + a.cost.output, a.reasoning, *a_key).cmp(&(
                b.cost.input + b.cost.output,
                b.reasoning,
                *b_key,
            ))
        })
        .map(|(key, _)| key)
}

impl CatalogProvider {
    /// This provider's cheap model for side requests (see the module's rule), by catalog key.
    pub fn small_model(&self) -> Option<&str> {
        small_model(self.models.iter().map(|(key, model)| (key.as_str(), model)))
    }
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use crate::catalog::Catalog;

    fn priced(input: i64, output: i64, reasoning: bool) -> CatalogModel {
        let mut model = CatalogModel::unknown("x");
        model.cost.input = Decimal::new(input, 2);
        model.cost.output = Decimal::new(output, 2);
        model.reasoning = reasoning;
        model
    }

    #[test]
    fn spec_12_3_the_cheapest_stable_text_model_with_a_price_wins() {
        let cheap = priced(10, 40, false);
        let cheaper_but_beta = CatalogModel { status: Some("beta".into()), ..priced(1, 1, false) };
        let embedding = priced(2, 0, false);
        let image = CatalogModel { text_output: false, ..priced(1, 2, false) };
        let big = priced(300, 1500, true);
        let models = [
            ("big", &big),
            ("cheap", &cheap),
            ("beta", &cheaper_but_beta),
            ("embed", &embedding),
            ("image", &image),
        ];
        assert_eq!(small_model(models), Some("cheap"));
        assert_eq!(small_model([("embed", &embedding), ("image", &image)]), None);
        assert_eq!(small_model(std::iter::empty()), None);
    }

    #[test]
    fn spec_12_3_ties_prefer_models_that_do_not_reason_then_the_id() {
        let thinking = priced(10, 40, true);
        let plain = priced(10, 40, false);
        assert_eq!(small_model([("a-thinking", &thinking), ("b-plain", &plain)]), Some("b-plain"));
        assert_eq!(small_model([("m-20250101", &plain), ("m", &plain)]), Some("m"));
    }

    #[test]
    fn spec_12_3_the_embedded_catalog_gives_the_expected_small_models() {
        let catalog = Catalog::embedded().unwrap_or_default();
        let pick = |provider: &str| catalog.provider(provider).and_then(CatalogProvider::small_model);
        assert_eq!(pick("openai"), Some("gpt-5-nano"));
        assert_eq!(pick("anthropic"), Some("claude-haiku-4-5"));
        assert_eq!(pick("google"), Some("gemini-2.5-flash-lite"));
        // A local server lists no models: the caller falls back to the session's model.
        assert_eq!(pick("ollama"), None);
    }
}
