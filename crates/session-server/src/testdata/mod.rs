//! Data the unit tests share.

pub(crate) mod bus_events;
