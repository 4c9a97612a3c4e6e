//! What every layer speaks in: a limit, a policy of limits, token counts, a decision, and the
//! text of messages.

pub(crate) mod decision;
pub(crate) mod limit;
pub(crate) mod policy;
pub(crate) mod text;
pub(crate) mod tokens;
