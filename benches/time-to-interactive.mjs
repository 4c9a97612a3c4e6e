// Time to interactive: what the widget adds to the docs page. The page with the widget and
// the same page without it (no module, no preload of its wasm, no elements) are loaded
// alternately, LOADS times each, in one run, so that whatever else the machine does falls on
// both alike. Both are measured to the same point, the moment the page is interactive: it
// has painted (its first contentful paint), its load event has ended and, where there is
// one, the first widget is `ready` (the `rate-limit-demo:ready` mark), whichever comes last.
// The paint counts for both because a page is not interactive before a reader sees it
// (Lighthouse's time to interactive starts there too), and because the bare page's load event
// fires before its first layout and paint while the widget's page lays out and paints before
// its module runs: measured to the load event alone, the bare page would be spared the
// page's own rendering that the widget's page is charged with.
// The widget's cost is the median of the differences of each pair (a load with the widget,
// then one without): a pair falls in one moment of the machine's load, so the other work of
// a shared machine mostly cancels out, where the difference of the two medians (reported
// beside it) takes the slow moments of either side. Served on 127.0.0.1 from
// target/site (`make site`), both pages from the same server and from disk, in Debian's
// Chromium, with a fresh cache for every load.
//
// `node benches/time-to-interactive.mjs` prints the figures and writes
// target/bench/time-to-interactive.json for `make bench`'s table.

import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO, SITE, open, start, whenReady } from "../tests/e2e/harness.mjs";

const LOADS = 31;
/** The bare page, written beside the real one for the run so that both are served alike. */
const BARE = "tti-bare.html";

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const page = await readFile(join(SITE, "index.html"), "utf8");
const bare = page
  .replace(/<script type="module"[^>]*><\/script>\n?/g, "")
  .replace(/<link rel="preload"[^>]*trickle_bg\.wasm[^>]*>\n?/g, "")
  .replace(/<rate-limit-demo[^>]*><\/rate-limit-demo>/g, "");
if (bare === page) throw new Error("target/site/index.html has no widget to take out");

/** One load of `path`: when it became interactive, and its parts, in ms from navigation. */
async function measure(session, path, widget) {
  const opened = await open(session, { path });
  try {
    await opened.page.waitForLoadState("load");
    if (widget) await whenReady(opened.page);
    // loadEventEnd is set just after the load handlers return, and the paint entry once
    // the frame is presented: wait for both.
    await opened.page.waitForFunction(
      () =>
        performance.getEntriesByType("navigation")[0].loadEventEnd > 0 &&
        performance.getEntriesByName("first-contentful-paint").length > 0,
    );
    const [ready, loaded, painted, resourcesDone] = await opened.page.evaluate(() => [
      performance.getEntriesByName("rate-limit-demo:ready")[0]?.startTime ?? 0,
      performance.getEntriesByType("navigation")[0].loadEventEnd,
      performance.getEntriesByName("first-contentful-paint")[0].startTime,
      // When the last of the widget's two files (its module and its wasm) had arrived.
      Math.max(
        0,
        ...performance
          .getEntriesByType("resource")
          .filter((entry) => /rate-limit-demo\.js$|trickle_bg\.wasm$/.test(entry.name))
          .map((entry) => entry.responseEnd),
      ),
    ]);
    if (widget && !ready) throw new Error("the widget page never marked rate-limit-demo:ready");
    return { interactive: Math.max(loaded, painted, ready), ready, loaded, painted, resourcesDone };
  } finally {
    await opened.close();
  }
}

await writeFile(join(SITE, BARE), bare);
const session = await start();
const samples = {
  widget: [],
  bare: [],
  added: [],
  ready: [],
  widgetLoad: [],
  bareLoad: [],
  widgetPaint: [],
  barePaint: [],
  resourcesDone: [],
};
try {
  // One load of each first, not counted: the server's and the browser's first requests.
  await measure(session, BARE, false);
  await measure(session, "index.html", true);
  for (let load = 0; load < LOADS; load++) {
    const withWidget = await measure(session, "index.html", true);
    samples.widget.push(withWidget.interactive);
    samples.ready.push(withWidget.ready);
    samples.widgetLoad.push(withWidget.loaded);
    samples.widgetPaint.push(withWidget.painted);
    samples.resourcesDone.push(withWidget.resourcesDone);
    const without = await measure(session, BARE, false);
    samples.bare.push(without.interactive);
    samples.bareLoad.push(without.loaded);
    samples.barePaint.push(without.painted);
    samples.added.push(samples.widget.at(-1) - samples.bare.at(-1));
  }
} finally {
  await session.close();
  await rm(join(SITE, BARE), { force: true });
}

const result = {
  loads: LOADS,
  interactiveMs: median(samples.widget),
  bareInteractiveMs: median(samples.bare),
  readyMs: median(samples.ready),
  pageLoadMs: median(samples.widgetLoad),
  barePageLoadMs: median(samples.bareLoad),
  paintMs: median(samples.widgetPaint),
  barePaintMs: median(samples.barePaint),
  resourcesDoneMs: median(samples.resourcesDone),
  samples,
};
result.addedMs = median(samples.added);
result.mediansDifferenceMs = result.interactiveMs - result.bareInteractiveMs;
await mkdir(join(REPO, "target", "bench"), { recursive: true });
await writeFile(
  join(REPO, "target", "bench", "time-to-interactive.json"),
  `${JSON.stringify(result, null, 2)}\n`,
);
console.log(
  `docs page: interactive ${result.interactiveMs.toFixed(0)} ms after navigation with the widget, ` +
    `${result.bareInteractiveMs.toFixed(0)} ms without: the widget adds ${result.addedMs.toFixed(0)} ms, ` +
    `the median of the ${LOADS} pairs' differences ` +
    `(first widget ready ${result.readyMs.toFixed(0)} ms; load event ${result.pageLoadMs.toFixed(0)} ms ` +
    `and ${result.barePageLoadMs.toFixed(0)} ms without; first paint ${result.paintMs.toFixed(0)} ms ` +
    `and ${result.barePaintMs.toFixed(0)} ms without; ` +
    `its files in by ${result.resourcesDoneMs.toFixed(0)} ms; medians of ${LOADS} alternating loads of each)`,
);
