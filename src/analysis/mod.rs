//! What a request log tells: how far an approximation strays from the exact sliding log, and
//! how a replay of a log went, read with one set of rules.

pub mod compare;
pub mod replay;
pub mod request_log;
