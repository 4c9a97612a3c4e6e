//! The text of `trickle --help`: the whole manual, both commands in one page, since they
//! share the limits, the algorithms and the cost tables.

use trickle_core::Algorithm;

/// The manual, with the algorithms filled in from the core's one list: see [`help`].
const HELP: &str = "\
trickle: would my application have hit this rate limit?

Replays a log of requests against a limit, as if a rate limiter had stood in front of
them, and writes what it would have decided for each request. Or serves a demo API behind
such limits, for a docs page to call (see Serving, below).

Usage:
  trickle replay --limit TOKENS/WINDOW [--algorithm NAME] [--compare NAME] [FILE]
  trickle replay --limit TOKENS/WINDOW [--algorithm NAME] --redis URL [FILE]
  trickle replay --limit TOKENS/WINDOW [--algorithm NAME] --redis-cluster URL[,URL...]
                 [FILE]
  trickle serve --config FILE [--listen ADDRESS]
                [--redis URL | --redis-cluster URL[,URL...]]
                [--on-failure open|closed|fallback] [--fallback-share SHARE]
                [--header-timeout D] [--idle-timeout D] [--max-connections N]
                [--drain-timeout D] [--max-window D] [--max-keys N]
                [--metrics ADDRESS]
  trickle --help | --version

Options:
  --limit TOKENS/WINDOW  The limit: TOKENS per WINDOW, the window a whole number with a
                         unit ms, s, m or h, as ESI writes it: 6/8s, 150/15m, 7/1500ms.
                         Required. --limit=6/8s works too. Several limits in quotes are
                         a policy, decided all or nothing: \"10/1s 1000/1h\", a name
                         before a limit naming it: \"burst=10/1s 1000/1h\" (see Policies).
  --algorithm NAME       {ALGORITHM_NAMES}.
  --compare NAME         Also decide every request with a second algorithm, the
                         reference (usually sliding-log, the exact one), and count where
                         the two disagree. See Comparing, below.
  --redis URL            Decide every request with the Redis scripts (trickle-redis)
                         on the server at URL, redis://HOST:PORT/ or
                         redis+unix:///PATH, instead of in process: the same rows, from
                         buckets a fleet of servers could share. Each run decides in a
                         key of its own, trickle-replay:PID-TIME, which expires by
                         itself; the log's times are the clock.
  --redis-cluster URL[,URL...]
                         The same on a Redis Cluster, found from these of its nodes
                         (redis://HOST:PORT/, one reachable is enough): each script runs
                         on the master of its key's slot, and a slot moved between
                         masters is followed. Not with --redis.
  FILE                   The request log; stdin when absent or `-`.
  -h, --help             This text.
  -V, --version          The version.

Input: CSV with a header line, then one line per request, sorted by time
  t_ms,cost     t_ms is the request's time in whole milliseconds (from any start);
                cost the tokens it spends, a whole number.
  t_ms,status   the HTTP status it was answered with instead of a cost: each request
                costs what ESI charges for its status (table below).
  The header needs t_ms and exactly one of cost or status. Columns may come in any
  order and other columns (path, user agent, ...) are ignored. Spaces around names and
  values, blank lines and CRLF line endings are fine. Times may repeat but must not
  go backwards. Line numbers in error messages count the header as line 1.
Or a HAR, the JSON a browser's network panel exports (its first character is `{`):
  each entry of log.entries is a request at its startedDateTime, in ms after the
  earliest, costing what ESI charges for its response.status; replayed in time order.
  An entry without a response (status 0) is left out; errors name the entry, from 1.

ESI's cost table (for a status column):
  2XX  2 tokens     3XX  1 token     4XX  5 tokens (but 429: 0)     5XX  0 tokens
  Anything else (1XX, below 100, above 599) is an error.

Output: CSV on stdout, one line per request, with this header:
  t_ms,cost,allowed,used,remaining,retry_after_ms
  t_ms, cost      the request's time and cost (from its status, for a status log).
  allowed         true or false. A denied request spends nothing.
  used            tokens in use after the decision (with its cost when allowed), exact
                  to 3 decimals: the floating window and the token bucket count
                  fractions of a token.
  remaining       whole tokens left.
  retry_after_ms  empty when allowed; when denied, the wait after which the same
                  request fits if nothing else is spent; `never` when the cost is
                  larger than the whole limit.
  Rows are written as the log is read, so a large log streams through, and a bad line
  stops the replay after the rows before it. A one-line summary goes to stderr at the
  end, so stdout stays pure CSV: the requests allowed, denied and never fitting, where
  the first 429 came (the request's place in the log, from 1, and its t_ms), and the
  longest retry_after_ms of a denial:
  replayed 120 requests against 6/8s (floating): 100 allowed, 20 denied, 0 never fit;
  first 429 at request 7, t_ms 2100; longest wait 5900 ms

Policies (--limit with several limits):
  A request is allowed only if every limit has room; a denied one spends in none, and
  waits until all of them have room. used, remaining and retry_after_ms are those of
  the limit nearest to refusing (the one that refused, else the one with fewest tokens
  left); then answered_by names the limit that refused (empty when allowed), and each
  limit adds used:NAME, remaining:NAME and next_token_ms:NAME, the wait until it frees
  one more whole token (empty when all are free). Not with --compare or --redis.
  $ trickle replay --limit \"burst=2/1s 1000/1h\" log.csv

Comparing (--compare NAME):
  Every request goes to both limiters, each with its own state: each answers from what
  it has itself allowed. The rows gain three columns:
  reference_allowed,reference_used,disagreement
  reference_allowed  the reference's answer, true or false.
  reference_used     tokens in use in the reference after its decision.
  disagreement       empty when both agree; wrongly-allowed when --algorithm allowed
                     a request the reference denied; wrongly-limited the other way.
  A second line on stderr sums it up: the disagreements of each kind and their share
  of all requests, and the most tokens --algorithm allowed within any WINDOW ms, as a
  multiple of TOKENS (N), with the reference's own figure after it. A client that
  reacts to 429s would have reacted to --algorithm's answers: the log is what it sent.
  Once the two have spent differently, later answers can differ too: one disagreement
  echoes. A third line counts without echoes, on the reference's history: each request
  also asked of --algorithm as if it had spent exactly what the reference allowed.

  With tokens spent at 900 and 950 ms under 2/1s, the floating window takes them as
  spread evenly over its first window, so at 1500 ms it counts 2 x 0.5 = 1 and allows
  a third; the sliding log holds both until 1900 ms and denies it:
  $ printf 't_ms,cost\\n900,1\\n950,1\\n1500,1\\n' > late.csv
  $ trickle replay --limit 2/1s --compare sliding-log late.csv
  t_ms,cost,allowed,used,remaining,retry_after_ms,reference_allowed,reference_used,disagreement
  900,1,true,1.000,1,,true,1.000,
  950,1,true,2.000,0,,true,2.000,
  1500,1,true,2.000,0,,false,2.000,wrongly-allowed
  replayed 3 requests against 2/1s (floating): 3 allowed, 0 denied, 0 never fit; no 429
  floating against sliding-log: 3 requests, 1 wrongly allowed (33.333%), 0 wrongly
  limited (0.000%), at most 3 tokens in any 1000 ms = 1.50 x N (sliding-log: 2 = 1.00 x N)
  floating judged on sliding-log's history: 1 wrongly allowed (33.333%), 0 wrongly
  limited (0.000%)
  900, 950 and 1500 all lie within [900, 1900): 3 tokens in 1000 ms where N is 2.

Algorithms (every one allows a request of cost c iff used + c <= TOKENS):
{ALGORITHMS}
Example:
  $ printf 't_ms,status\\n0,200\\n1000,200\\n2000,404\\n2500,429\\n13000,200\\n' > log.csv
  $ trickle replay --limit 6/8s log.csv
  t_ms,cost,allowed,used,remaining,retry_after_ms
  0,2,true,2.000,4,
  1000,2,true,4.000,2,
  2000,5,false,4.000,2,12000
  2500,0,true,4.000,2,
  13000,2,true,3.500,2,
  replayed 5 requests against 6/8s (floating): 4 allowed, 1 denied, 0 never fit; first
  429 at request 3, t_ms 2000; longest wait 12000 ms
  The 404 costs 5 and 4 + 5 > 6; it would fit at 14000 ms, when 4 x 2/8 of the first
  window's tokens still count: 1 + 5 <= 6. At 13000 ms, 4 x 3/8 + 2 = 3.5 are in use.

Serving (trickle serve):
  A demo API: each route of the config file answers GET (and HEAD) with a small JSON
  body, {\"group\":\"fitting\",\"route\":\"/fittings\",\"status\":200}, behind the rate limit of
  its group, with ESI's flow: a 429 with Retry-After when not 1 token is free, otherwise
  the answer, charged by its status under the group's cost table, and X-Ratelimit-Limit,
  -Remaining, -Used and -Group on every answer of a limited request. GET /openapi.json,
  never charged, describes every route, its answers and its group's limit (OpenAPI 3.1,
  the limit in ESI's x-rate-limit extension: one object, or an array for several limits).

  --config FILE          The TOML file of route groups and CORS origins (below).
                         Required.
  --listen ADDRESS       The IP address and port to listen on; 127.0.0.1:8080 unless
                         given; port 0 picks a free one. The first line on stdout is
                         `listening on http://ADDRESS` with the port bound; logs go to
                         stderr. SIGTERM or SIGINT (Ctrl-C) stops the server: new
                         connections are refused, those without a request in flight
                         are closed at once, and the process exits when the requests in
                         flight are answered (at once if there are none), within
                         --drain-timeout; a second signal exits at once.
  --redis URL            Keep the buckets on the Redis server at URL instead of in
                         process, so that several servers on one Redis share them:
                         keys {trickle-serve:GROUP:CLIENT}:ALGORITHM, CLIENT with %, {, }
                         and : written %25, %7B, %7D and %3A, decided on Redis's clock.
                         Redis must be up when serve starts, or serve exits with code 1.
  --redis-cluster URL[,URL...]
                         The same on a Redis Cluster, found from these of its nodes
                         (redis://HOST:PORT/, one reachable is enough), each key on the
                         master of its slot, decided on that master's clock; the config
                         file's redis_cluster when neither flag is given. Not with
                         --redis. A decision waits through a moved slot, and fails
                         within seconds while a master is down (until its replica takes
                         over), when --on-failure decides it.
  --on-failure open|closed|fallback
                         What a request gets while Redis cannot decide it (down, or no
                         answer within 1 s): open, the default, lets it through
                         uncharged; closed answers 503 with Retry-After: 1; fallback
                         decides it in this process with --fallback-share of the limit.
                         Either way a warning is logged. Only matters with Redis. A
                         Redis that answers with an error about the request's own key (a
                         key of the wrong type) is no outage: 500, and an error logged.
  --fallback-share SHARE
                         With --on-failure fallback, required: the part of each group's
                         limit this server admits on its own while Redis is away, as
                         1/N (or 0.5), rounded down to whole tokens, so that N servers
                         at 1/N never admit more than the limit together. After 3
                         failures in a row Redis is no longer waited on; one request
                         every 2 s checks whether it is back, and then decisions are
                         Redis's again. A share leaving a group no token is refused.

  --metrics ADDRESS      Also serve the rate limiter's counters for Prometheus at
                         http://ADDRESS/metrics, on a listener of their own (off unless
                         given; port 0 picks a free one, announced on a second stdout
                         line, `metrics on http://ADDRESS/metrics`). An address that
                         cannot be had stops serve at startup, exit code 1. Per group:
                         trickle_decisions_total, trickle_admitted_total,
                         trickle_refused_total{reason=limit|free_runs},
                         trickle_would_refuse_total{reason} (shadow mode),
                         trickle_failures_total{op=reserve|settle,kind=outage|data},
                         trickle_fallback_decisions_total{op},
                         trickle_store_duration_seconds{op} (a histogram) and
                         trickle_live_keys (in process, counted at each scrape).
  Connections (each D a whole number and a unit ms, s, m or h, as 500ms or 10s, from 1ms
  to 24h; --max-window up to 8784h):
  --header-timeout D     How long a client has to send a whole request head, from when
                         it connects, or from its first byte after an idle spell; 10s
                         unless given. A connection that has not is closed, unanswered.
  --idle-timeout D       How long a kept-alive connection may wait between requests
                         before it is closed; 30s unless given. Behind a proxy, set it
                         above the proxy's own idle timeout.
  --max-connections N    How many connections may be open at once, 1 to 1000000; 512
                         unless given. Beyond it, new connections wait unanswered in the
                         kernel's listen queue until one closes; they are not refused.
  --drain-timeout D      After SIGTERM or SIGINT, how long the requests in flight may
                         take to finish; 10s unless given.
  --max-window D         The longest window a group's limit may have; 744h (31 days)
                         unless given. A client's bucket is kept until two windows pass
                         without its requests, so this bounds how long a client that
                         never returns costs memory; a longer window is a config error.
  --max-keys N           How many clients each group keeps a bucket for in this process,
                         1 to 100000000; 100000 unless given (a few MB a group). Past it,
                         a new client's request gets 503 with Retry-After until buckets
                         go idle (none that still counts is ever dropped: that would
                         forget its charges); known clients are decided as ever.

  Requests:
    X-Client-Id: ID     Required: the client's bucket within the route's group, 1 to 64
                        visible ASCII characters. Missing or invalid: 400 with
                        {\"error\": \"...\"}, uncharged.
    ?status=NNN         The status the demo answers with, 200 to 599 (200 without it),
                        to try what each costs: ?status=404 costs 5 under ESI's table.
                        Anything else: 400, uncharged.
    ?delay_ms=N         Wait N ms, 0 to 1000, before answering (after the limit has
                        admitted the request): a slow handler, to try the timeouts and
                        a stop with a request in flight. Anything else: 400, uncharged.
  A path no group lists is a 404, uncharged. Request headers past 8192 bytes in all get a
  431. Preflights (OPTIONS) are answered by CORS and never charged.

  The config file (examples/serve.toml is one):
    cors_origins = [\"*\"]      # optional, [\"*\"] by default: the origins whose pages may
                              # call the API and read its rate-limit headers, as
                              # browsers send them: [\"https://docs.example.com\"]
    headers = \"esi\"           # optional: esi (X-Ratelimit-*, the default), ietf
                              # (RateLimit-Policy and RateLimit) or both
    redis_cluster = [\"redis://10.0.0.1:6379/\"]
                              # optional: the buckets on this Redis Cluster, as
                              # --redis-cluster, unless --redis or --redis-cluster
                              # is given
    [[group]]                 # one or more
    name = \"fitting\"          # sent back in X-Ratelimit-Group
    limit = \"6/8s\"            # TOKENS/WINDOW, or a policy, as --limit; each window
                              # at most --max-window, 744h unless given
    algorithm = \"floating\"    # optional, as --algorithm; floating by default
    costs = \"esi\"             # optional: STATUS:COST entries for statuses 100 to 599
                              # or classes 1xx to 5xx, as \"2xx:2 3xx:1 4xx:5 429:0
                              # 5xx:0\", or esi (that table), the default
    routes = [\"/fittings\"]    # each in one group only
    shadow = false            # optional: true decides and counts every request but
                              # refuses none, to try a new limit before enforcing it:
                              # a request the limit would refuse runs the handler,
                              # charged nothing, its answer marked X-Ratelimit-Shadow:
                              # would-refuse;reason=limit;retry-after=N (no Retry-After)
    free_runs = \"20/1m\"       # optional, none by default: at most 20 answers per
                              # minute that cost nothing (under ESI's table a 5XX or a
                              # 429) per client; once spent, every request of that
                              # client gets 429 with Retry-After until one fades, as
                              # which answer will be free is known only afterwards.
                              # Kept in each server's memory, also with --redis.
  Any other key is an error. CORS allows GET and HEAD, the request header X-Client-Id,
  and exposes X-Ratelimit-Limit, -Remaining, -Used, -Group, -Shadow and Retry-After to
  the page.

  $ trickle serve --config examples/serve.toml --listen 127.0.0.1:8080
  listening on http://127.0.0.1:8080
  $ curl -i -H 'X-Client-Id: me' http://127.0.0.1:8080/fittings

Exit codes:
  0  the log was replayed (denied requests are an answer, not a failure), or stdout
     was closed early (as by `| head`); the server stopped on SIGTERM or SIGINT
  1  the input could not be read or is malformed: the message names the line and what
     was expected; the config file could not be read or is malformed (the message names
     the file, the line and what is allowed); the server could not start (the address is
     taken, the --metrics address is taken, Redis is unreachable)
  2  the command line is wrong: an unknown option, a missing or malformed --limit, an
     unknown --algorithm or --compare, a missing --config, a malformed --listen, --redis,
     --redis-cluster (or both given),
     --on-failure, --fallback-share (or one that leaves a group no token),
     --header-timeout, --idle-timeout, --max-connections, --drain-timeout, --max-window,
     --max-keys or --metrics
";

/// How wide the help's lines may be.
const WIDTH: usize = 90;
/// Where an algorithm's summary starts, after its name.
const SUMMARY_COLUMN: usize = 16;

/// Printed for `--help` / `-h`, at the top level and after `replay`. The algorithms' names
/// and summaries come from [`Algorithm::ALL`], so that a new algorithm appears here by
/// itself.
pub fn help() -> String {
    HELP.replace("{ALGORITHM_NAMES}", &algorithm_names())
        .replace("{ALGORITHMS}", &algorithm_summaries())
}

/// "floating (the default), sliding-log, fixed or token-bucket".
fn algorithm_names() -> String {
    let count = Algorithm::ALL.len();
    let mut names = String::new();
    for (i, algorithm) in Algorithm::ALL.iter().enumerate() {
        if i > 0 {
            names.push_str(if i + 1 == count { " or " } else { ", " });
        }
        names.push_str(algorithm.name());
        if *algorithm == Algorithm::default() {
            names.push_str(" (the default)");
        }
    }
    names
}

/// One entry per algorithm: its name, then its summary wrapped under itself.
fn algorithm_summaries() -> String {
    let mut text = String::new();
    for algorithm in Algorithm::ALL {
        let mut line = format!("  {:<width$}", algorithm.name(), width = SUMMARY_COLUMN - 2);
        for word in algorithm.summary().split_whitespace() {
            if line.len() > SUMMARY_COLUMN && line.len() + 1 + word.len() > WIDTH {
                text.push_str(line.trim_end());
                text.push('\n');
                line = " ".repeat(SUMMARY_COLUMN);
            } else if line.len() > SUMMARY_COLUMN {
                line.push(' ');
            }
            line.push_str(word);
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use trickle_core::costs::CostTable;

    /// The help restates ESI's table for readers of a terminal; the core's preset is what
    /// `replay` charges, so the two must say the same.
    #[test]
    fn the_esi_line_states_what_the_core_charges() {
        let help = super::help();
        let line = help
            .lines()
            .skip_while(|line| !line.starts_with("ESI's cost table"))
            .nth(1)
            .expect("the help has ESI's cost table");
        let esi = CostTable::esi();
        for (class, status) in [("2XX", 200), ("3XX", 300), ("4XX", 400), ("5XX", 500)] {
            let cost = esi.cost(status).unwrap();
            let unit = if cost == 1 { "token" } else { "tokens" };
            let stated = format!("{class}  {cost} {unit}");
            assert!(line.contains(&stated), "{line:?} should say {stated:?}");
        }
        let stated = format!("(but 429: {})", esi.cost(429).unwrap());
        assert!(line.contains(&stated), "{line:?} should say {stated:?}");
    }
}
