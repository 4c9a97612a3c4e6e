//! The clock the layer decides on: the wall clock read once, then moved on by a monotonic one.
//!
//! A limiter shared by a server's threads keeps the latest time any request brought and
//! decides no request before it (the core reads a clock that went back as the latest time
//! seen). On the wall clock that turns a step into a freeze: stepped an hour forward, then
//! back (an NTP correction, an operator's `date -s`), every bucket is decided at the hour
//! ahead until the wall clock catches up, and nothing comes back for that hour. Anchoring
//! to the wall clock once and counting on with a monotonic clock keeps the epoch alignment
//! every process shares (windows start where a second server's, and a docs page's, start)
//! and makes steps harmless; the monotonic clock is slewed by NTP as the wall clock is, so
//! the two drift apart only by the steps.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as the wall clock read them at the anchor, plus the
/// monotonic time since.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    wall_ms: u64,
    monotonic: Duration,
}

impl Anchor {
    /// An anchor of `wall_ms` (ms since the Unix epoch) at `monotonic` (any monotonic
    /// reading: its origin does not matter).
    pub fn new(wall_ms: u64, monotonic: Duration) -> Anchor {
        Anchor { wall_ms, monotonic }
    }

    /// The time at the monotonic reading `monotonic`: the wall time of the anchor, moved on
    /// by the monotonic time since. A reading before the anchor's reads as the anchor.
    pub fn ms_at(&self, monotonic: Duration) -> u64 {
        let since = monotonic.saturating_sub(self.monotonic).as_millis();
        self.wall_ms
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }
}

/// The wall clock now, in ms since the Unix epoch; a clock before 1970 reads as 1970, as the
/// core takes no negative time.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// This process's monotonic clock, from a start of its own.
fn monotonic() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// The clock a layer decides on unless given another
/// ([`RateLimitLayer::clock`](crate::RateLimitLayer::clock)): ms since the Unix epoch, the
/// wall clock read the first time this is called and moved on by the monotonic clock after
/// (see the module's documentation). A server that sweeps its
/// [`InProcess`](crate::InProcess) buckets should sweep on the same clock.
pub fn system_ms() -> u64 {
    static ANCHOR: OnceLock<Anchor> = OnceLock::new();
    let now = monotonic();
    ANCHOR
        .get_or_init(|| Anchor::new(wall_ms(), now))
        .ms_at(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_moves_on_by_the_monotonic_time_only() {
        let anchor = Anchor::new(1_700_000_000_000, Duration::from_secs(50));
        assert_eq!(anchor.ms_at(Duration::from_secs(50)), 1_700_000_000_000);
        assert_eq!(
            anchor.ms_at(Duration::from_millis(51_234)),
            1_700_000_001_234
        );
        // Before the anchor: the anchor.
        assert_eq!(anchor.ms_at(Duration::from_secs(10)), 1_700_000_000_000);
        assert_eq!(
            Anchor::new(u64::MAX - 1, Duration::ZERO).ms_at(Duration::MAX),
            u64::MAX
        );
    }

    #[test]
    fn the_system_clock_starts_at_the_wall_clock_and_never_goes_back() {
        let before = wall_ms();
        let first = system_ms();
        let after = wall_ms();
        // Both whole milliseconds, truncated: a millisecond either way.
        assert!(
            first + 1 >= before && first <= after + 1,
            "{before} {first} {after}"
        );
        let mut last = first;
        for _ in 0..1_000 {
            let now = system_ms();
            assert!(now >= last);
            last = now;
        }
    }
}
