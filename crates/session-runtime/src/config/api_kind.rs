//! Which wire API a configured provider speaks, from its `npm` package name.

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The wire API of a provider; session-llm maps each kind to one adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKind {
    /// OpenAI Chat Completions, also every OpenAI-compatible server.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
}

/// The `npm` packages OpenCode users name that an adapter here speaks, with their API.
pub const SUPPORTED_PACKAGES: [(&str, ApiKind); 7] = [
    ("@ai-sdk/openai-compatible", ApiKind::OpenAiChat),
    ("@ai-sdk/groq", ApiKind::OpenAiChat),
    ("@ai-sdk/xai", ApiKind::OpenAiChat),
    ("@openrouter/ai-sdk-provider", ApiKind::OpenAiChat),
    ("@ai-sdk/openai", ApiKind::OpenAiResponses),
    ("@ai-sdk/anthropic", ApiKind::Anthropic),
    ("@ai-sdk/google", ApiKind::Gemini),
];

impl ApiKind {
    /// The API an `npm` package name stands for, if an adapter speaks it.
    pub fn from_package(package: &str) -> Option<Self> {
        SUPPORTED_PACKAGES.iter().find(|(name, _)| *name == package).map(|(_, kind)| *kind)
    }
}

/// The API of provider `provider` configured with `npm` package `package`.
///
/// An unknown package is an error naming both, never a silent fallback to Chat Completions:
/// another SDK's wire format would fail later with a far less clear message.
pub fn api_kind(provider: &str, package: &str) -> Result<ApiKind, ConfigError> {
    ApiKind::from_package(package).ok_or_else(|| ConfigError::UnsupportedProviderPackage {
        provider: provider.to_owned(),
        package: package.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn packages_map_to_their_wire_api() {
        let cases = [
            ("@ai-sdk/openai-compatible", ApiKind::OpenAiChat),
            ("@ai-sdk/groq", ApiKind::OpenAiChat),
            ("@ai-sdk/xai", ApiKind::OpenAiChat),
            ("@openrouter/ai-sdk-provider", ApiKind::OpenAiChat),
            ("@ai-sdk/openai", ApiKind::OpenAiResponses),
            ("@ai-sdk/anthropic", ApiKind::Anthropic),
            ("@ai-sdk/google", ApiKind::Gemini),
        ];
        for (package, kind) in cases {
            assert_eq!(api_kind("p", package).unwrap(), kind, "{package}");
        }
    }

    #[test]
    fn other_packages_are_a_clear_error() {
        let error = api_kind("bedrock", "@ai-sdk/amazon-bedrock").unwrap_err();
        assert_eq!(
            error.to_string(),
            "provider \"bedrock\": unsupported provider package \"@ai-sdk/amazon-bedrock\" (supported: \
             @ai-sdk/openai-compatible, @ai-sdk/groq, @ai-sdk/xai, @openrouter/ai-sdk-provider, @ai-sdk/openai, \
             @ai-sdk/anthropic, @ai-sdk/google)"
        );
        assert!(ApiKind::from_package("@AI-SDK/OPENAI").is_none(), "names are exact");
    }
}
