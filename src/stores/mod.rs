//! Where the states live: one bucket, a map of them per key, the same map shared by
//! threads, and the `Store` trait that decides over any of them.

pub(crate) mod bucket;
#[cfg(feature = "std")]
pub(crate) mod concurrent;
#[cfg(feature = "std")]
pub(crate) mod keyed;
#[cfg(feature = "std")]
pub(crate) mod keyed_policy;
#[cfg(feature = "std")]
pub(crate) mod packed;
pub(crate) mod policy;
#[cfg(feature = "std")]
pub(crate) mod seeded_hash;
pub(crate) mod store;
