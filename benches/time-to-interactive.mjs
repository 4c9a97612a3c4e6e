// Time to interactive: from navigation start to the first widget's `ready` on the docs page
// (the `rate-limit-demo:ready` mark), as the median of 5 loads, beside the same page without
// the widget's module (to its load event) in the same run, so that the ratio says what the
// widget adds whatever the machine's speed. Served on 127.0.0.1 from target/site (`make
// site`) in Debian's Chromium, with a fresh cache for every load.
//
// `node benches/time-to-interactive.mjs` prints the figures and writes
// target/bench/time-to-interactive.json for `make bench`'s table.

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO, SITE, open, start, whenReady } from "../tests/e2e/harness.mjs";

const LOADS = 5;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const page = await readFile(join(SITE, "index.html"), "utf8");
// The page as it would be without the widget: no module, no preload of its wasm, and no
// elements to upgrade.
const bare = page
  .replace(/<script type="module"[^>]*><\/script>\n?/g, "")
  .replace(/<link rel="preload"[^>]*trickle_bg\.wasm[^>]*>\n?/g, "")
  .replace(/<rate-limit-demo[^>]*><\/rate-limit-demo>/g, "");

const session = await start();
const samples = { widget: [], widgetLoad: [], resourcesDone: [], bare: [] };
try {
  for (let load = 0; load < LOADS; load++) {
    const withWidget = await open(session, { path: "index.html" });
    await whenReady(withWidget.page);
    const [ready, loaded, resourcesDone] = await withWidget.page.evaluate(() => [
      performance.getEntriesByName("rate-limit-demo:ready")[0]?.startTime,
      performance.getEntriesByType("navigation")[0].loadEventEnd,
      // When the last of the widget's two files (its module and its wasm) had arrived.
      Math.max(
        ...performance
          .getEntriesByType("resource")
          .filter((entry) => /rate-limit-demo\.js$|trickle_bg\.wasm$/.test(entry.name))
          .map((entry) => entry.responseEnd),
      ),
    ]);
    samples.widget.push(ready);
    samples.widgetLoad.push(loaded);
    samples.resourcesDone.push(resourcesDone);
    await withWidget.close();

    const without = await open(session, { path: "bare.html", html: bare });
    await without.page.waitForLoadState("load");
    samples.bare.push(
      await without.page.evaluate(() => performance.getEntriesByType("navigation")[0].loadEventEnd),
    );
    await without.close();
  }
} finally {
  await session.close();
}

const result = {
  loads: LOADS,
  readyMs: median(samples.widget),
  pageLoadMs: median(samples.widgetLoad),
  resourcesDoneMs: median(samples.resourcesDone),
  bareLoadMs: median(samples.bare),
  samples,
};
result.ratio = result.readyMs / result.bareLoadMs;
await mkdir(join(REPO, "target", "bench"), { recursive: true });
await writeFile(
  join(REPO, "target", "bench", "time-to-interactive.json"),
  `${JSON.stringify(result, null, 2)}\n`,
);
console.log(
  `docs page: first widget ready ${result.readyMs.toFixed(0)} ms after navigation (load event ` +
    `${result.pageLoadMs.toFixed(0)} ms; its files in by ${result.resourcesDoneMs.toFixed(0)} ms); ` +
    `without the widget, load event ${result.bareLoadMs.toFixed(0)} ms ` +
    `(medians of ${LOADS} loads)`,
);
