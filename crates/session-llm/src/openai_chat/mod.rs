//! OpenAI Chat Completions, also spoken by Ollama, vLLM, llama.cpp, LM Studio, OpenRouter,
//! DeepSeek, Groq and xAI.

mod request;
mod stream;

pub use request::build_request;
pub(crate) use request::{PATH, body, headers};
pub use stream::ChatParser;
