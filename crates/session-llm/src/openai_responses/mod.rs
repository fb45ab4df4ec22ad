//! OpenAI Responses.

mod request;
mod stream;

pub use request::build_request;
pub use stream::ResponsesParser;
