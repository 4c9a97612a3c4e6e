//! What a server does with a store: what a response costs by its status, ESI's headers,
//! the reserve-then-settle flow of one request, and the logs of the requests it served, read
//! back for a replay.

pub mod costs;
pub mod esi;
pub mod flow;
pub mod ietf;
pub mod request_log;
