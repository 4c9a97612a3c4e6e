// What <rate-limit-demo> costs a page in Debian's headless Chromium, on the real clock:
//
// - script time per animation frame while tokens trickle back: six hits on a 6/8s widget,
//   then a few seconds of the frames that redraw the formula, gauge and timeline; and the
//   same on a compare-mode widget of all four algorithms, whose frames redraw four rows.
//   Each frame's time is that of Chromium's own `FireAnimationFrame` trace event (the
//   devtools.timeline category, what the Performance panel shows as "Animation frame
//   fired"): the element's requestAnimationFrame callback, its wasm `peek` and DOM writes
//   included, timed by the browser to the microsecond rather than by `performance.now()`,
//   which pages only get to 100 µs. Style, layout and paint come after and are not script.
//   The event carries two durations: the renderer thread's CPU time (`tdur`), which the
//   figures report as the other benchmarks do, since on a shared machine the wall clock
//   also counts the time other processes held the core; and the wall time (`dur`), kept
//   beside it.
// - animation frames requested while idle: on a 2/1s widget, counted with the harness's
//   `framesRequested` for a few seconds before any hit, and again once a hit has come back
//   and slid off the timeline.
//
// Needs the release build and Chromium (`make wasm setup-browser`). `node
// benches/widget-frames.mjs` prints the figures and writes target/bench/widget-frames.json.

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { framesRequested, open, pageWith, REPO, start, whenReady } from "../tests/e2e/harness.mjs";

const TRICKLE_MS = 6_000;
const IDLE_MS = 3_000;

/** A page holding one widget with `attributes`, ready to use. */
async function widgetPage(session, attributes) {
  const opened = await open(session, {
    path: "bench.html",
    html: pageWith(`<rate-limit-demo ${attributes}></rate-limit-demo>`),
  });
  await whenReady(opened.page);
  return opened;
}

function hit(page, times = 1) {
  return page.evaluate((times) => {
    const element = document.querySelector("rate-limit-demo");
    for (let n = 0; n < times; n++) element.hit();
  }, times);
}

/** The animation frame callbacks Chromium traced. */
function frameEvents(trace) {
  return JSON.parse(trace.toString()).traceEvents.filter(
    (event) => event.name === "FireAnimationFrame" && event.ph === "X",
  );
}

function percentile(sorted, share) {
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))];
}

/** p50, p95 and max of durations in µs, in ms. */
function summary(durations) {
  const times = durations.map((us) => us / 1000).sort((a, b) => a - b);
  return {
    p50Ms: percentile(times, 0.5),
    p95Ms: percentile(times, 0.95),
    maxMs: times[times.length - 1],
  };
}

/** Script time per frame while six tokens of 6/8s trickle back, on a widget `attributes`. */
async function trickle(session, attributes) {
  const { page, close } = await widgetPage(session, attributes);
  await session.browser.startTracing(page, { categories: ["devtools.timeline"] });
  await hit(page, 6);
  await page.waitForTimeout(TRICKLE_MS);
  const events = frameEvents(await session.browser.stopTracing());
  await close();
  if (events.length === 0) throw new Error("no animation frame was traced while tokens trickled back");
  if (events.some((event) => event.tdur === undefined)) {
    throw new Error("Chromium traced a frame without its thread time (tdur)");
  }
  return {
    frames: events.length,
    seconds: TRICKLE_MS / 1000,
    cpu: summary(events.map((event) => event.tdur)),
    wall: summary(events.map((event) => event.dur)),
  };
}

/** Frames requested while nothing changes: before any hit, and after one has settled. */
async function idle(session) {
  const { page, close } = await widgetPage(session, `limit="2/1s"`);
  await framesRequested(page);
  await page.waitForTimeout(IDLE_MS);
  const beforeHit = await framesRequested(page);
  await hit(page);
  // The hit's token is back after 2 s at most, and it slides off the two-window timeline
  // 2 s after it was made.
  await page.waitForTimeout(2_500);
  const settled = await framesRequested(page);
  await page.waitForTimeout(IDLE_MS);
  const afterHit = (await framesRequested(page)) - settled;
  await close();
  return { seconds: (2 * IDLE_MS) / 1000, frames: beforeHit + afterHit, activeFrames: settled - beforeHit };
}

const session = await start();
let result;
try {
  result = {
    trickle: await trickle(session, `limit="6/8s"`),
    compare: await trickle(session, `limit="6/8s" compare`),
    idle: await idle(session),
  };
} finally {
  await session.close();
}
if (result.idle.activeFrames === 0) {
  throw new Error("the widget asked for no frame even while its token came back: nothing was measured");
}

await mkdir(join(REPO, "target", "bench"), { recursive: true });
await writeFile(join(REPO, "target", "bench", "widget-frames.json"), `${JSON.stringify(result, null, 2)}\n`);
/** "p50 0.123 ms, p95 0.456 ms, max 0.789 ms". */
function percentiles({ p50Ms, p95Ms, maxMs }) {
  return `p50 ${p50Ms.toFixed(3)} ms, p95 ${p95Ms.toFixed(3)} ms, max ${maxMs.toFixed(3)} ms`;
}

for (const [name, frames] of [
  ["one widget", result.trickle],
  ["compare mode, four algorithms", result.compare],
]) {
  console.log(
    `script time per frame while tokens trickle back, ${name}, over ${frames.frames} frames in ` +
      `${frames.seconds} s: CPU ${percentiles(frames.cpu)}; wall ${percentiles(frames.wall)}`,
  );
}
const quiet = result.idle;
console.log(`frames requested while idle: ${quiet.frames} in ${quiet.seconds} s`);
