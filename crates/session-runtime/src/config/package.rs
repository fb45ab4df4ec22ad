//! Which wire API a configured provider speaks, from its `npm` package name
//! (the table itself is [`session_llm::Api::PACKAGES`]).

use session_llm::Api;

use super::error::ConfigError;

/// The API of provider `provider` configured with `npm` package `package`.
///
/// An unknown package is an error naming both, never a silent fallback to Chat Completions:
/// another SDK's wire format would fail later with a far less clear message.
pub fn api_for_package(provider: &str, package: &str) -> Result<Api, ConfigError> {
    Api::from_npm(package).ok_or_else(|| ConfigError::UnsupportedProviderPackage {
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
            ("@ai-sdk/openai-compatible", Api::OpenAiChat),
            ("@ai-sdk/groq", Api::OpenAiChat),
            ("@ai-sdk/xai", Api::OpenAiChat),
            ("@openrouter/ai-sdk-provider", Api::OpenAiChat),
            ("@ai-sdk/openai", Api::OpenAiResponses),
            ("@ai-sdk/anthropic", Api::Anthropic),
            ("@ai-sdk/google", Api::Gemini),
        ];
        for (package, api) in cases {
            assert_eq!(api_for_package("p", package).unwrap(), api, "{package}");
        }
    }

    #[test]
    fn other_packages_are_a_clear_error() {
        let error = api_for_package("bedrock", "@ai-sdk/amazon-bedrock").unwrap_err();
        assert_eq!(
            error.to_string(),
            "provider \"bedrock\": unsupported provider package \"@ai-sdk/amazon-bedrock\" (supported: \
             @ai-sdk/openai-compatible, @ai-sdk/groq, @ai-sdk/xai, @openrouter/ai-sdk-provider, @ai-sdk/openai, \
             @ai-sdk/anthropic, @ai-sdk/google)"
        );
        assert!(Api::from_npm("@AI-SDK/OPENAI").is_none(), "names are exact");
    }
}
