//! Google Gemini `streamGenerateContent?alt=sse` (the Gemini API and Vertex AI).

mod request;
mod stream;

pub use request::build_request;
pub use stream::GeminiParser;
