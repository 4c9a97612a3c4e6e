//! One phase of a load benchmark: every connection makes its requests at once, each on its
//! own thread, started together, each request timed on its own.

use std::sync::Barrier;
use std::time::Instant;

/// What a phase measured: every request's latency, the time from the first thread's first
/// request to the last one's last answer, and how many requests were admitted.
pub struct Phase {
    pub latencies_ns: Vec<u64>,
    pub seconds: f64,
    pub allowed: u64,
}

/// Each of `connections` makes `count` requests on a thread of its own; `request(conn,
/// thread, i)` makes the `i`th request of thread `thread` and says whether it was admitted.
pub fn run<C: Send>(
    connections: &mut [C],
    count: usize,
    request: &(dyn Fn(&mut C, usize, usize) -> Result<bool, String> + Sync),
) -> Result<Phase, String> {
    let start = Barrier::new(connections.len());
    let runs = std::thread::scope(|scope| {
        let threads: Vec<_> = connections
            .iter_mut()
            .enumerate()
            .map(|(thread, conn)| {
                let start = &start;
                scope.spawn(move || {
                    let mut latencies_ns = Vec::with_capacity(count);
                    let mut allowed = 0;
                    start.wait();
                    let began = Instant::now();
                    for i in 0..count {
                        let before = Instant::now();
                        let admitted = request(conn, thread, i)?;
                        let elapsed = before.elapsed().as_nanos();
                        latencies_ns.push(u64::try_from(elapsed).unwrap_or(u64::MAX));
                        allowed += u64::from(admitted);
                    }
                    Ok::<_, String>((latencies_ns, allowed, began, Instant::now()))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a load thread panicked"))
            .collect::<Result<Vec<_>, String>>()
    })?;
    let began = runs.iter().map(|run| run.2).min().expect("threads");
    let ended = runs.iter().map(|run| run.3).max().expect("threads");
    let mut phase = Phase {
        latencies_ns: Vec::with_capacity(count * runs.len()),
        seconds: ended.duration_since(began).as_secs_f64(),
        allowed: 0,
    };
    for (latencies_ns, allowed, _, _) in runs {
        phase.latencies_ns.extend(latencies_ns);
        phase.allowed += allowed;
    }
    Ok(phase)
}
