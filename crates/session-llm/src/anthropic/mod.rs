//! Anthropic Messages.

mod request;
mod stream;

pub use request::{ANTHROPIC_VERSION, build_request};
pub use stream::AnthropicParser;
