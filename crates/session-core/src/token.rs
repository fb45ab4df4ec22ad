//! Filled in by its issue work.
