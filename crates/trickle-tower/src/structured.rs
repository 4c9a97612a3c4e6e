//! The IETF RateLimit fields written out as Structured Fields (RFC 9651) by `sfv`, from the
//! values the core computes ([`trickle_core::ietf`]).

use sfv::{Integer, KeyRef, ListSerializer, StringRef};
use trickle_core::ietf::{self, QuotaUnit};
use trickle_core::{Policy, PolicyDecision};

/// `RateLimit-Policy` for `policy`: `"burst";q=10;w=1, "1000/1h";q=1000;w=3600`, with
/// `qu="tokens"` when the quotas count tokens. `None` only if a name could not be a
/// Structured Field string, which a policy's names (ASCII letters, digits, `_-./`) always
/// can.
pub fn policy_field(policy: &Policy, unit: QuotaUnit) -> Option<String> {
    let mut list = ListSerializer::new();
    for item in ietf::quota_policies(policy, unit) {
        let mut entry = list.bare_item(StringRef::from_str(item.name).ok()?);
        entry = entry.parameter(key("q"), integer(item.quota));
        if let Some(unit) = item.unit.parameter() {
            entry = entry.parameter(key("qu"), StringRef::from_str(unit).ok()?);
        }
        if let Some(window) = item.window_s {
            entry.parameter(key("w"), integer(window));
        }
    }
    list.finish()
}

/// `RateLimit` after `decision`: `"burst";r=7;t=1, "1000/1h";r=997;t=3600`, `t` left out for
/// a limit with every unit free.
pub fn limit_field(policy: &Policy, decision: &PolicyDecision) -> Option<String> {
    let mut list = ListSerializer::new();
    for item in ietf::service_limits(policy, decision) {
        let entry = list
            .bare_item(StringRef::from_str(item.name).ok()?)
            .parameter(key("r"), integer(item.remaining));
        if let Some(reset) = item.reset_s {
            entry.parameter(key("t"), integer(reset));
        }
    }
    list.finish()
}

fn key(name: &'static str) -> &'static KeyRef {
    KeyRef::constant(name)
}

/// `value` as a Structured Field integer, which holds at most 15 digits: a quota or a wait
/// larger than that (a limit of more than 999 trillion tokens) says the largest it can.
fn integer(value: u64) -> Integer {
    Integer::try_from(value).unwrap_or(Integer::MAX)
}
