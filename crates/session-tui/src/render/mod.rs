//! Turning messages into styled, wrapped lines.

pub mod highlight;
pub mod markdown;
pub mod parts;
pub mod wrap;
