//! What every layer speaks in: a limit, token counts, a decision, and the text of messages.

pub(crate) mod decision;
pub(crate) mod limit;
pub(crate) mod text;
pub(crate) mod tokens;
