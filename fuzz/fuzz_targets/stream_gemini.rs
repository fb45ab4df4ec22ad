#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| session_fuzz::check_stream(session_llm::Api::Gemini, data));
