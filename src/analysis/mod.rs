//! What a request log tells: how far an approximation strays from the exact sliding log, and
//! how a replay of a log went.

pub mod compare;
pub mod replay;
