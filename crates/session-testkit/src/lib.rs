//! Test support for the session runtime (not published).
//!
//! This crate will hold the scripted provider server on loopback that speaks the providers'
//! wire formats, injects faults and checks request invariants (issue 4). It holds no code yet.
