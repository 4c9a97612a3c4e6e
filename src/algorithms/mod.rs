//! The algorithms: each one's per-key state (one file each), the rule they share
//! (`state`), reservations, and the one dispatch over them (`any`).

pub(crate) mod any;
pub(crate) mod fixed;
pub(crate) mod floating;
pub mod reservation;
pub(crate) mod sliding_log;
pub(crate) mod state;
pub(crate) mod token_bucket;
