// `make bench`'s last step: reads what the benchmarks wrote (criterion's estimates under
// target/criterion/, the others under target/bench/) and prints one Markdown table, each
// figure against its baseline from the same run, its goal, and the command that measures it.
//
// `node benches/report.mjs` after the benchmarks have run; with `--json`, it also writes
// docs/figures/bench.json, where the docs read every figure from (scripts/figures.mjs):
// each row's numbers by its id (`tower.c8.p50.ratio`), and the table itself.

import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { write } from "../scripts/figures.mjs";
import { SIZE_GOAL_BYTES } from "../scripts/size-figures.mjs";

const TARGET = join(fileURLToPath(new URL("..", import.meta.url)), "target");

/** Reads a file a benchmark wrote, or stops saying which command writes it. */
function read(path, command) {
  try {
    return readFileSync(join(TARGET, path), "utf8");
  } catch {
    throw new Error(`target/${path} is missing: run \`${command}\` (or \`make bench\`) first`);
  }
}

/** Criterion's median time per iteration, in ns; every benchmark times one decision per iteration. */
function criterionNs(group, bench, command) {
  const estimates = JSON.parse(read(`criterion/${group}/${bench}/new/estimates.json`, command));
  return estimates.median.point_estimate;
}

/** The heap_per_key example's CSV, by number of keys (the concurrent limiter's columns last). */
function bytesPerKey(command) {
  const [, ...rows] = read("bench/bytes-per-key.csv", command).trim().split("\n");
  return Object.fromEntries(
    rows.map((row) => {
      const [keys, ours, governor, , concurrent] = row.split(",").map(Number);
      return [keys, { ours, governor, concurrent }];
    }),
  );
}

const rows = [];
/** Every row's numbers as the table writes them, by `ID.ours`, `ID.baseline`, `ID.ratio`,
 * `ID.goal` and `ID.verdict`, and a few more a page quotes. */
const figures = {};

/** A row comparing ours with a baseline: lower is better, the goal a largest ratio. */
function compare(id, figure, ours, baseline, unit, goal, command) {
  const ratio = ours / baseline;
  const verdict = goal === undefined ? "" : ratio <= goal ? "met" : `missed: ${overGoal(ratio / goal)} the goal`;
  Object.assign(figures, {
    [`${id}.ours`]: `${format(ours)} ${unit}`,
    [`${id}.baseline`]: `${format(baseline)} ${unit}`,
    [`${id}.ratio`]: formatRatio(ratio),
    [`${id}.goal`]: goal === undefined ? "none" : `≤ ${goal.toFixed(1)}×`,
    [`${id}.verdict`]: verdict || "no goal",
  });
  rows.push([
    figure,
    `${format(ours)} ${unit}`,
    `${format(baseline)} ${unit}`,
    formatRatio(ratio),
    goal === undefined ? "none" : `≤ ${goal.toFixed(1)}×`,
    verdict,
    `\`${command}\``,
  ]);
}

/** A row with a figure of its own and a largest value for a goal. */
function absolute(id, figure, value, unit, goal, command) {
  const verdict = value <= goal ? "met" : `missed by ${format(value - goal)} ${unit}`;
  const target = goal === 0 ? `${goal} ${unit}` : `≤ ${format(goal)} ${unit}`;
  Object.assign(figures, {
    [`${id}.ours`]: `${format(value)} ${unit}`,
    [`${id}.goal`]: target,
    [`${id}.verdict`]: verdict,
  });
  rows.push([figure, `${format(value)} ${unit}`, "", "", target, verdict, `\`${command}\``]);
}

/** Three significant decimals for small values, one below 1,000, none above. */
function format(value) {
  const decimals = Number.isInteger(value) ? 0 : value < 10 ? 3 : value < 1000 ? 1 : 0;
  return value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

function formatRatio(ratio) {
  return `${ratio.toLocaleString("en-US", { maximumFractionDigits: ratio < 100 ? 2 : 0 })}×`;
}

/** How far past its goal a ratio is: with a third decimal where two would round it to the
 * goal itself, so that a miss never reads "missed: 1× the goal". */
function overGoal(times) {
  const shown = formatRatio(times);
  return shown === "1×" ? `${times.toFixed(3)}×` : shown;
}

/** A share, as the docs write it: "55.2%". */
function percent(share) {
  return `${(100 * share).toFixed(1)}%`;
}

const DIRECT = "cargo bench --bench decisions";
const governorDirect = criterionNs("direct", "governor", DIRECT);
for (const [bench, name, goal] of [
  ["floating", "floating window `hit`", 1.0],
  ["token_bucket", "token bucket `hit`", undefined],
  ["sliding_log", "sliding log `hit`", undefined],
  ["fixed_window", "fixed window `hit`", undefined],
]) {
  compare(`direct.${bench}`, `${name} vs governor \`check\`, one bucket`, criterionNs("direct", bench, DIRECT), governorDirect, "ns", goal, DIRECT);
}

const KEYED = "cargo bench --bench keyed";
for (const keys of [10_000, 1_000_000]) {
  const group = `keyed_${keys}`;
  compare(
    `keyed.k${keys}`,
    `keyed floating window vs governor \`check_key\` (DashMap), ${format(keys)} keys`,
    criterionNs(group, "floating", KEYED),
    criterionNs(group, "governor", KEYED),
    "ns",
    1.0,
    KEYED,
  );
}

// Shared by threads: CPU time per decision summed over the threads, so contention counts.
for (const threads of [1, 2]) {
  const group = "threads_10000";
  compare(
    `concurrent.t${threads}`,
    `concurrent keyed floating window vs governor \`check_key\` (DashMap), shared by ${threads} thread${threads === 1 ? "" : "s"}, 10,000 keys, CPU time per decision`,
    criterionNs(group, `concurrent_${threads}`, KEYED),
    criterionNs(group, `governor_${threads}`, KEYED),
    "ns",
    1.0,
    KEYED,
  );
}

// What share of each stream each limiter allowed (the benchmarks write it before timing), so
// that the docs can say both sides of a ratio decide a similar mix: `allowed.direct.governor`.
const SHARES = `${DIRECT} --bench keyed`;
read("bench/allowed/direct.governor.json", SHARES);
for (const name of readdirSync(join(TARGET, "bench", "allowed"))) {
  const { allowed, requests } = JSON.parse(read(`bench/allowed/${name}`, SHARES));
  const id = name.replace(/\.json$/, "");
  figures[`allowed.${id}`] = percent(allowed / requests);
  figures[`denied.${id}`] = percent(1 - allowed / requests);
}

const HEAP = "cargo run --release --example heap_per_key";
for (const [keys, { ours, governor, concurrent }] of Object.entries(bytesPerKey(HEAP))) {
  compare(`heap.keyed.k${keys}`, `heap bytes per key vs governor (DashMap), ${format(Number(keys))} keys`, ours, governor, "B", 1.0, HEAP);
  compare(`heap.concurrent.k${keys}`, `concurrent keyed limiter's heap bytes per key vs governor (DashMap), ${format(Number(keys))} keys`, concurrent, governor, "B", 1.0, HEAP);
}

// A decision on Redis is a round trip plus the server running the script, so the baseline is
// the cheapest round trip that changes a key, on the same connections in the same run.
const REDIS = "cargo bench -p trickle-redis --bench load";
const redisLoad = JSON.parse(read("bench/redis-load.json", REDIS));
const redisLoadShape = `${redisLoad.connections} connections × ${format(redisLoad.decisionsPerConnection)} decisions on one key`;
const redisSetup = `${redisLoadShape}, median of ${redisLoad.rounds} rounds`;
for (const [percentile, key] of [
  ["p50", "p50Us"],
  ["p99", "p99Us"],
]) {
  compare(`redis.script.${percentile}`, `Redis floating window script vs \`INCRBY\`, ${percentile} latency per decision, ${redisSetup}`, redisLoad.script[key], redisLoad.incrby[key], "µs", 1.5, REDIS);
}
compare(
  "redis.script.throughput",
  `Redis floating window script vs \`INCRBY\`, throughput (higher is better), ${redisSetup}`,
  redisLoad.script.perSecond,
  redisLoad.incrby.perSecond,
  "decisions/s",
  undefined,
  REDIS,
);
// A request that reserves before its handler and settles after it runs two scripts, two
// round trips; the same INCRBY round trip is the baseline.
for (const [percentile, key] of [
  ["p50", "p50Us"],
  ["p99", "p99Us"],
]) {
  compare(
    `redis.reserveSettle.${percentile}`,
    `Redis reserve + settle (two scripts, two round trips) vs \`INCRBY\`, ${percentile} latency per request, ${redisSetup}, limit ${redisLoad.reserveSettleLimit}`,
    redisLoad.reserveSettle[key],
    redisLoad.incrby[key],
    "µs",
    undefined,
    REDIS,
  );
}
// Any script at all against INCRBY: what the call costs before the decision's own work.
compare(
  "redis.emptyScript.p50",
  `Redis script \`return 1\` (\`EVALSHA\`, touching no key) vs \`INCRBY\`, p50 latency, ${redisSetup}`,
  redisLoad.emptyScript.p50Us,
  redisLoad.incrby.p50Us,
  "µs",
  undefined,
  REDIS,
);
const misadmitted = Math.max(...redisLoad.allowed.map((allowed) => Math.abs(allowed - redisLoad.expectedAllowed)));
absolute(
  "redis.misadmitted",
  `Redis admissions off the core's count, ${redisLoadShape} at a frozen clock, each of ${redisLoad.rounds} rounds, limit ${redisLoad.limit} (admitted ${redisLoad.allowed.map(format).join(", ")} of ${format(redisLoad.connections * redisLoad.decisionsPerConnection)}; the core ${format(redisLoad.expectedAllowed)})`,
  misadmitted,
  "decisions",
  0,
  REDIS,
);

// Keys spread over many buckets, on one node and on a three-master cluster: each layout's
// script against its own INCRBY, and the cluster's decisions per second against one node's.
const SPREAD = "cargo bench -p trickle-redis --features cluster --bench spread";
const spread = JSON.parse(read("bench/redis-spread.json", SPREAD));
const spreadSetup = `${spread.connections} connections × ${format(spread.decisionsPerConnection)} decisions over ${format(spread.keys)} keys, limit ${spread.limit} a key, median of ${spread.rounds} rounds`;
for (const [layout, name] of [
  ["single", "one node"],
  ["cluster", `Redis Cluster of ${spread.masters} masters`],
]) {
  for (const [percentile, key] of [
    ["p50", "p50Us"],
    ["p99", "p99Us"],
  ]) {
    compare(
      `redis.spread.${layout}.${percentile}`,
      `Redis floating window script vs \`INCRBY\`, ${percentile} latency, ${name}, ${spreadSetup}`,
      spread[layout].script[key],
      spread[layout].incrby[key],
      "µs",
      undefined,
      SPREAD,
    );
  }
  compare(
    `redis.spread.${layout}.throughput`,
    `Redis floating window script vs \`INCRBY\`, throughput (higher is better), ${name}, ${spreadSetup}`,
    spread[layout].script.perSecond,
    spread[layout].incrby.perSecond,
    "decisions/s",
    undefined,
    SPREAD,
  );
}
// The server's own time per call (INFO commandstats), which the clients sharing this
// machine's cores do not stretch: Redis runs scripts on one thread, so one node decides at
// most 1 s / that time a second. Deployments are sized on paper from it, at half that load.
compare(
  "redis.spread.serverTime",
  `Redis server's own time per call, floating window script vs \`INCRBY\` (\`INFO commandstats\`), one node, ${spreadSetup}`,
  spread.serverUsPerScript,
  spread.serverUsPerIncrby,
  "µs",
  undefined,
  SPREAD,
);
const nodeCapacity = 1e6 / spread.serverUsPerScript;
figures["redis.sizing.nodeCapacity"] = `${format(Math.round(nodeCapacity / 1000) * 1000)} decisions/s`;
figures["redis.sizing.halfCapacity"] = `${format(Math.round(nodeCapacity / 2000) * 1000)} decisions/s`;
for (const [name, target] of [
  ["k10", 1e4],
  ["k100", 1e5],
  ["m1", 1e6],
]) {
  figures[`redis.sizing.${name}`] = String(Math.max(1, Math.ceil(target / (nodeCapacity / 2))));
}
compare(
  "redis.spread.clusterVsSingle.throughput",
  `Redis floating window decisions/s, cluster of ${spread.masters} masters vs one node, both on this machine's cores (higher is better), ${spreadSetup}`,
  spread.cluster.script.perSecond,
  spread.single.script.perSecond,
  "decisions/s",
  undefined,
  SPREAD,
);

// The tower layer over real HTTP on 127.0.0.1: a trivial handler with and without it, the
// same load from the same client in the same run.
const HTTP = "cargo bench -p trickle-tower --features redis --bench http_load";
const httpLoad = JSON.parse(read("bench/http-load.json", HTTP));
for (const shape of httpLoad.shapes) {
  const setup = `${shape.connections} keep-alive connection${shape.connections === 1 ? "" : "s"}, ${format(httpLoad.requests)} requests, median of ${httpLoad.rounds} rounds`;
  const c = `tower.c${shape.connections}`;
  compare(`${c}.inProcess.p50`, `tower layer in process vs no layer, p50 latency of a trivial handler, ${setup}`, shape.inProcess.p50Us, shape.bare.p50Us, "µs", 1.1, HTTP);
  compare(`${c}.inProcess.p99`, `tower layer in process vs no layer, p99 latency, ${setup}`, shape.inProcess.p99Us, shape.bare.p99Us, "µs", undefined, HTTP);
  compare(`${c}.redis.p50`, `tower layer on Redis vs no layer, p50 latency (two script round trips a request), ${setup}`, shape.redis.p50Us, shape.bare.p50Us, "µs", undefined, HTTP);
  for (const variant of ["inProcess", "redis"]) {
    compare(
      `${c}.${variant}.throughput`,
      `tower layer ${variant === "redis" ? "on Redis" : "in process"} vs no layer, throughput (higher is better), ${setup}`,
      shape[variant].perSecond,
      shape.bare.perSecond,
      "requests/s",
      undefined,
      HTTP,
    );
  }
}

// The layer's own CPU work per request, without a network: the axum service called in a loop.
const LAYER = "cargo run --release -p trickle-tower --example layer_cost";
const layerCost = JSON.parse(read("bench/layer-cost.json", LAYER));
figures["tower.layerCost"] = `${format(layerCost.addedUs)} µs`;

// A flood of new client ids against `trickle serve`, with the key cap and without one (every
// id a bucket, as before the cap): how much the server's resident memory grew.
const FLOOD = "cargo test --release -p trickle-cli --test attacks -- --ignored rss_under_a_flood_of_distinct_client_ids";
const flood = JSON.parse(read("bench/flood.json", FLOOD));
const grownKB = ({ rssBefore, rssAfter }) => (rssAfter - rssBefore) / 1e3;
compare(
  "flood.rss",
  `\`trickle serve\`'s resident memory grown by ${format(flood.requests)} requests, each a new client id, with \`--max-keys ${flood.capped.maxKeys}\` vs no cap (${format(flood.uncapped.admitted)} buckets)`,
  grownKB(flood.capped),
  grownKB(flood.uncapped),
  "kB",
  undefined,
  FLOOD,
);
for (const run of ["capped", "uncapped"]) {
  figures[`flood.${run}.admitted`] = format(flood[run].admitted);
  figures[`flood.${run}.full`] = format(flood[run].full);
}
// Without a cap every id is a bucket: what one costs the server, all told.
figures["flood.uncapped.perId"] = `${format(Math.round((grownKB(flood.uncapped) * 1e3) / flood.uncapped.admitted))} B`;

// The million keys through a KeyedLimiter at four paces: its table's size, against the table
// holding all of them at once (the first row).
const KEYED_LOAD = "cargo run --release --example keyed_load";
const [, oneWindow, ...paces] = read("bench/keyed-load.csv", KEYED_LOAD)
  .trim()
  .split("\n")
  .map((row) => row.split(",").map(Number));
figures["keyedMemory.oneWindow.keys"] = format(oneWindow[0]);
figures["keyedMemory.oneWindow.tableBytes"] = `${format(oneWindow[2])} bytes`;
const keyedMemory = [
  "| new keys per window | most buckets held | most table bytes | at the end | of the million-key table |",
  "|---:|---:|---:|---:|---:|",
  ...paces.map(([perWindow, buckets, most, end]) => {
    figures[`keyedMemory.k${perWindow}.mostTableBytes`] = `${format(most)} bytes`;
    return `| ${format(perWindow)} | ${format(buckets)} | ${format(most)} | ${format(end)} | 1/${format(Math.round(oneWindow[2] / most))} |`;
  }),
].join("\n");

// The 30,000 routes of the hostile-connections script's config, until `listening on`.
const ROUTES = "node scripts/hostile-connections.mjs --routes-only target/release/trickle";
const routes = JSON.parse(read("bench/routes.json", ROUTES));
figures["routes.listening"] = `${format(routes.routesListeningMs)} ms`;

const WASM = "node benches/wasm-hit.mjs";
const wasm = JSON.parse(read("bench/wasm-hit.json", WASM));
compare("wasm.hit", "wasm `Limiter.hit` in Node vs the same formula in plain JS", wasm.wasmNsPerHit, wasm.plainNsPerHit, "ns", 2.0, WASM);

const WIDGET = "node benches/widget-frames.mjs";
const widget = JSON.parse(read("bench/widget-frames.json", WIDGET));
for (const [name, frames] of [
  ["one widget", widget.trickle],
  ["compare mode", widget.compare],
]) {
  const { cpu, wall } = frames;
  absolute(
    `frames.${name === "one widget" ? "one" : "compare"}`,
    `widget script CPU time per frame, ${name}, p95 of ${frames.frames} frames (p50 ${format(cpu.p50Ms)}, max ${format(cpu.maxMs)} ms; wall p95 ${format(wall.p95Ms)} ms)`,
    cpu.p95Ms,
    "ms",
    1,
    WIDGET,
  );
}
absolute("frames.idle", `animation frames requested in ${widget.idle.seconds} s idle`, widget.idle.frames, "frames", 0, WIDGET);

const TTI = "node benches/time-to-interactive.mjs";
const tti = JSON.parse(read("bench/time-to-interactive.json", TTI));
figures["tti.interactive"] = `${format(tti.interactiveMs)} ms`;
figures["tti.bareInteractive"] = `${format(tti.bareInteractiveMs)} ms`;
figures["tti.ready"] = `${format(tti.readyMs)} ms`;
figures["tti.resourcesDone"] = `${format(tti.resourcesDoneMs)} ms`;
figures["tti.paint"] = `${format(tti.paintMs)} ms`;
figures["tti.barePaint"] = `${format(tti.barePaintMs)} ms`;
figures["tti.load"] = `${format(tti.pageLoadMs)} ms`;
figures["tti.bareLoad"] = `${format(tti.barePageLoadMs)} ms`;
absolute(
  "tti.added",
  `docs page: what the widget adds to the time to interactive (painted, load event ended and first widget \`ready\`), the median of ${tti.loads} alternating pairs of loads with and without it (medians ${format(tti.interactiveMs)} ms and ${format(tti.bareInteractiveMs)} ms)`,
  tti.addedMs,
  "ms",
  40,
  TTI,
);

const SIZE = "make size";
const size = JSON.parse(read("package/size.json", SIZE));
for (const { file, gzip } of size.files) figures[`size.${file}`] = `${format(gzip)} B`;
absolute(
  "size.total",
  `what a page downloads for one widget, gzip -9 (${size.files.map(({ file, gzip }) => `${file} ${format(gzip)}`).join(", ")}; brotli -11: ${format(size.totalBrotli)} B)`,
  size.total,
  "B",
  SIZE_GOAL_BYTES,
  SIZE,
);

// How long `make bench` took, from its first benchmark to this report (the Makefile stamps
// both ends), builds of the benchmarks included.
try {
  const stamp = (name) => Number(readFileSync(join(TARGET, "bench", name), "utf8"));
  const minutes = (stamp("finished") - stamp("started")) / 60;
  if (minutes > 0) figures["run.minutes"] = `${minutes.toFixed(1)} minutes`;
} catch {
  // Run on its own, not by `make bench`: no duration to give.
}

const header = ["figure", "ours", "baseline", "ratio", "goal", "", "command"];
const table = [
  `| ${header.join(" | ")} |`,
  `|${header.map((_, n) => (n >= 1 && n <= 3 ? "---:" : "---")).join("|")}|`,
  ...rows.map((row) => `| ${row.join(" | ")} |`),
].join("\n");
console.log(table);
if (process.argv.includes("--json")) {
  write("bench", "make bench", { figures, tables: { benchmarks: table, keyedMemory } });
  console.log("wrote docs/figures/bench.json");
}
