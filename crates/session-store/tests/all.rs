//! The one integration test binary of session-store: every case runs against a temp-file
//! SQLite database and against the PostgreSQL server at `SESSION_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), each PostgreSQL case in a schema of its own.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions may unwrap: a failure there is a failed test"
)]

mod suite;
