//! How far an approximation strays from the exact sliding log.

pub mod compare;
