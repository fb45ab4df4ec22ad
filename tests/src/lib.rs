//! End-to-end tests of the session runtime, run through the real `session` binary.
//!
//! The binary arrives with the CLI issues; until then this package holds no tests.
