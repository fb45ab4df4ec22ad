//! Integration tests of session-core's public API, one module per area.
