//! Tests of the command's library half.

mod replay;
