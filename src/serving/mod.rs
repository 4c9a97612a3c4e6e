//! What a server does with a store: what a response costs by its status, ESI's headers,
//! and the reserve-then-settle flow of one request.

pub mod costs;
pub mod esi;
pub mod flow;
