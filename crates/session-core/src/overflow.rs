//! Context overflow: how much of a model's context a session may fill before it compacts
//! (SPEC 6, OpenCode's `overflow.ts` and `maxOutputTokens`).
//!
//! Two callers ask with different output maxima: the processor's step-finish check passes
//! [`OUTPUT_TOKEN_MAX`] (SPEC 4 step 9), while the prompt loop's pre-check and the request
//! builder pass the configured maximum, which defaults to [`OUTPUT_TOKEN_MAX`] (SPEC 12 step 4).

use serde::{Deserialize, Serialize};

use crate::config::CompactionConfig;
use crate::usage::TokenUsage;

/// Tokens kept free below the input limit when `compaction.reserved` is unset (at most).
pub const COMPACTION_BUFFER: u64 = 20_000;

/// The default cap on output tokens requested from a provider.
pub const OUTPUT_TOKEN_MAX: u64 = 32_000;

/// A model's token limits as the catalog states them; 0 means unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelLimit {
    /// Context window in tokens; 0 disables overflow detection.
    #[serde(default)]
    pub context: u64,
    /// Separate input limit, when the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Maximum output tokens; 0 means unknown.
    #[serde(default)]
    pub output: u64,
}

/// The output token maximum requested from the provider for this model.
///
/// `output_token_max` is [`OUTPUT_TOKEN_MAX`] unless the configured override applies; the
/// processor's step-finish check always passes [`OUTPUT_TOKEN_MAX`] (SPEC 4 step 9).
pub fn max_output_tokens(limit: &ModelLimit, output_token_max: u64) -> u64 {
    // OpenCode's `min(limit.output, max) || max`: an unknown (0) output limit means the cap.
    match limit.output.min(output_token_max) {
        0 => output_token_max,
        capped => capped,
    }
}

/// The number of context tokens a session may use before it must compact (SPEC 6).
///
/// Pass [`OUTPUT_TOKEN_MAX`] from the processor's step-finish check (SPEC 4 step 9) and the
/// configured output maximum from the prompt loop's pre-check (SPEC 12 step 4).
pub fn usable(cfg: &CompactionConfig, limit: &ModelLimit, output_token_max: u64) -> u64 {
    if limit.context == 0 {
        return 0;
    }
    let max_output = max_output_tokens(limit, output_token_max);
    match limit.input {
        Some(input) if input != 0 => {
            let reserved = cfg.reserved.unwrap_or_else(|| COMPACTION_BUFFER.min(max_output));
            input.saturating_sub(reserved)
        }
        // OpenCode ignores `compaction.reserved` here and keeps the whole output maximum free.
        _ => limit.context.saturating_sub(max_output),
    }
}

/// Whether a step's tokens have reached the usable context, so the session must compact.
///
/// Pass [`OUTPUT_TOKEN_MAX`] from the processor's step-finish check (SPEC 4 step 9) and the
/// configured output maximum from the prompt loop's pre-check (SPEC 12 step 4).
pub fn is_overflow(
    cfg: &CompactionConfig,
    tokens: &TokenUsage,
    limit: &ModelLimit,
    output_token_max: u64,
) -> bool {
    if !cfg.auto_enabled() || limit.context == 0 {
        return false;
    }
    // OpenCode's `tokens.total || sum`: a zero or absent total falls back to the parts, and a
    // provider's (even negative) total is taken as is. Reasoning is not part of the sum.
    let count: i128 = match tokens.total {
        Some(total) if total != 0 => i128::from(total),
        _ => [tokens.input, tokens.output, tokens.cache.read, tokens.cache.write]
            .into_iter()
            .map(i128::from)
            .sum(),
    };
    count >= i128::from(usable(cfg, limit, output_token_max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_output_limit_means_the_cap() {
        assert_eq!(max_output_tokens(&ModelLimit { context: 1000, input: None, output: 0 }, 16_000), 16_000);
        assert_eq!(
            max_output_tokens(&ModelLimit { context: 1000, input: None, output: 8_192 }, 16_000),
            8_192
        );
    }

    #[test]
    fn zero_context_never_overflows() {
        let limit = ModelLimit::default();
        let tokens = TokenUsage { total: Some(i64::MAX), ..TokenUsage::default() };
        assert_eq!(usable(&CompactionConfig::default(), &limit, OUTPUT_TOKEN_MAX), 0);
        assert!(!is_overflow(&CompactionConfig::default(), &tokens, &limit, OUTPUT_TOKEN_MAX));
    }
}
