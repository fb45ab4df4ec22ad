//! OpenAI Chat Completions, also spoken by Ollama, vLLM, llama.cpp, LM Studio, OpenRouter,
//! DeepSeek, Groq and xAI.

mod request;
mod stream;

pub(crate) use request::{PATH, body, headers};
pub use request::{build_request, chat_reasoning_field};
pub use stream::ChatParser;
