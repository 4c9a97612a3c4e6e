//! A polite API client: it sends COUNT requests to URL at a steady pace, and when the server
//! answers 429 Too Many Requests it waits as long as Retry-After says before sending the same
//! request again. Run it with `cargo run -- URL [COUNT]`.

use std::time::{Duration, SystemTime};
use std::{env, process, thread};

/// One request a second: a steady pace well below your API's limit, not a burst it refuses.
const PACE: Duration = Duration::from_secs(1);
/// A server still refusing after this many tries is not coming back soon.
const MAX_ATTEMPTS: u32 = 5;
/// Without Retry-After, wait 1 s, then 2 s, 4 s, ... never more than 8 s, each plus up to
/// half again at random.
const BACKOFF_BASE: Duration = Duration::from_secs(1);
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// A client asked to wait longer than this would look hung: better to stop and say so.
const MAX_WAIT: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some((url, count)) = parse_args(&args) else {
        eprintln!("usage: polite-client URL [COUNT]");
        process::exit(2);
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        // A 429 or a 503 is an answer to read (its headers say when to come back), not an Err.
        .http_status_as_error(false)
        // A request that hangs is retried like one that failed.
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut all_ok = true;
    for n in 1..=count {
        if n > 1 {
            thread::sleep(PACE);
        }
        let result = send(&agent, url);
        all_ok &= result.is_ok();
        println!("request {n}: {}", result.unwrap_or_else(|failure| failure));
    }
    process::exit(if all_ok { 0 } else { 1 });
}

/// `URL [COUNT]`: an http or https URL, and how many requests, 8 if left out.
fn parse_args(args: &[String]) -> Option<(&str, u32)> {
    let (url, count) = match args {
        [url] => (url, 8),
        [url, count] => (url, count.parse().ok()?),
        _ => return None,
    };
    let http = url.starts_with("http://") || url.starts_with("https://");
    (http && count >= 1).then_some((url, count))
}

/// Sends one GET (safe to repeat) until it succeeds or there is no point trying again.
fn send(agent: &ureq::Agent, url: &str) -> Result<String, String> {
    let mut last = String::new();
    for attempt in 1..=MAX_ATTEMPTS {
        let retry_after = match agent.get(url).call() {
            Ok(response) => {
                let status = response.status().as_u16();
                if response.status().is_success() {
                    return Ok(format!("{status} on attempt {attempt}"));
                }
                // 429 and 5XX may pass later; any other 4XX is our mistake and would fail again.
                if status != 429 && status < 500 {
                    return Err(format!("{status}, not retried"));
                }
                last = status.to_string();
                let header = response.headers().get("retry-after");
                header.and_then(|value| parse_retry_after(value.to_str().ok()?))
            }
            // The network failed, not the server: like a 5XX, try again later.
            Err(error) => {
                last = error.to_string();
                None
            }
        };
        let wait = retry_after.unwrap_or_else(|| backoff(attempt));
        if wait > MAX_WAIT {
            return Err("gave up, Retry-After is too long".to_string());
        }
        if attempt < MAX_ATTEMPTS {
            thread::sleep(wait);
        }
    }
    Err(format!("gave up after {MAX_ATTEMPTS} attempts: {last}"))
}

/// Retry-After is either whole seconds ("120") or an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT").
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit()) {
        // Too many digits for a u64 is a very long wait, not a reason to retry early.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(SystemTime::now()).unwrap_or_default())
}

/// Exponential backoff plus a random part, so that clients refused together spread out.
fn backoff(attempt: u32) -> Duration {
    let step = BACKOFF_CAP.min(BACKOFF_BASE * 2u32.pow(attempt - 1));
    step + step.mul_f64(fastrand::f64()) / 2
}
