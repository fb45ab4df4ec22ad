//! Provider streaming for the session runtime.
//!
//! This crate will own the `Provider` trait, the OpenAI Chat Completions, OpenAI Responses,
//! Anthropic Messages and Google Gemini adapters, the SSE decoder and the embedded model
//! catalog (issues 3 and 4). It holds no code yet: nothing here pretends to work.
