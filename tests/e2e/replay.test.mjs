// Replay mode in Debian's Chromium, against the replay CLI: the same log through the
// widget (pasted, picked, or typed with the keyboard) and through `trickle replay` gives the
// same summary line, on every example log, on 20 seeded random logs and on a HAR Chromium
// records here against a local server that answers some 429s; a malformed row gets the CLI's
// message and line; 100,000 rows play without a long task over 200 ms, read from Chromium's
// own performance timeline; the panel is axe clean; and a page of plain widgets never
// downloads replay mode or its WebAssembly.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, REPO, open, pageWith, start, whenReady } from "./harness.mjs";

/** The CLI the Makefile's e2e target builds; TRICKLE points the test at another build of it. */
const CLI = process.env.TRICKLE ?? join(REPO, "target", "release", "trickle");
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`make cli\` first, or set TRICKLE`);

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
const NO_HANG = { timeout: 300_000 };

const scratch = mkdtempSync(join(tmpdir(), "trickle-replay-"));
let session;
before(async () => {
  session = await start();
});
after(async () => {
  await session?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** `trickle replay`'s verdict on `text`: its summary line, or its error without `trickle: `. */
function cli(text, { limit, algorithm }, name = "log") {
  const file = join(scratch, name);
  writeFileSync(file, text);
  const { status, stderr } = spawnSync(CLI, ["replay", "--limit", limit, "--algorithm", algorithm, file], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  const line = stderr.trim();
  if (status === 0) return { summary: line, error: null };
  assert.equal(status, 1, stderr);
  return { summary: null, error: line.replace(/^trickle: /, "") };
}

/** A page with one replay widget, ready. */
async function openReplay(attributes = 'limit="6/8s"') {
  const opened = await open(session, {
    path: "replay-fixture.html",
    html: pageWith(`<main><h1>Replay</h1><rate-limit-demo replay ${attributes}></rate-limit-demo></main>`),
  });
  assert.deepEqual(await whenReady(opened.page), [true]);
  return opened;
}

/** Pastes `text` into the widget with `limit` and `algorithm`, plays it; the event's detail. */
function playInWidget(page, text, { limit, algorithm }) {
  return page.evaluate(
    async ({ text, limit, algorithm }) => {
      const element = document.querySelector("rate-limit-demo");
      element.setAttribute("limit", limit);
      element.setAttribute("algorithm", algorithm);
      const root = element.shadowRoot;
      // The first widget of the page to run the sliding log, the fixed window or the token
      // bucket fetches their module before it rebuilds.
      while (!root.querySelector('[part="replay-input"]')) await new Promise((wake) => setTimeout(wake, 10));
      root.querySelector('[part="replay-input"]').value = text;
      const played = new Promise((resolve) =>
        element.addEventListener("rate-limit-replay", ({ detail }) => resolve(detail), { once: true }),
      );
      root.querySelector('[part="replay-play"]').click();
      const detail = await played;
      return { ...detail, shown: root.querySelector('[part="replay-summary"]').textContent };
    },
    { text, limit, algorithm },
  );
}

/**
 * Listens for the next `rate-limit-replay` event before anything is pressed; resolves to a
 * function that waits for its detail, or fails after 30 s rather than hang.
 */
async function nextReplay(page) {
  await page.evaluate(() => {
    window.__replay = new Promise((resolve, reject) => {
      document
        .querySelector("rate-limit-demo")
        .addEventListener("rate-limit-replay", ({ detail }) => resolve(detail), { once: true });
      setTimeout(() => reject(new Error("no rate-limit-replay event in 30 s")), 30_000);
    });
  });
  return () => page.evaluate(() => window.__replay);
}

/** The seeded generator the random logs come from. */
function generator(seed) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const ALGORITHMS = ["floating", "sliding-log", "fixed", "token-bucket"];
const STATUSES = [200, 200, 200, 201, 304, 404, 429, 500, 503];

/**
 * A log of either kind, with bursts, pauses, costs 0 to above N, extra columns (some quoted)
 * and blank lines.
 */
function randomLog(seed) {
  const random = generator(seed);
  const byStatus = random() < 0.5;
  const rows = [byStatus ? "t_ms,status,path" : "path,t_ms,cost"];
  let t = Math.floor(random() * 5_000);
  const count = 20 + Math.floor(random() * 400);
  for (let i = 0; i < count; i++) {
    t += random() < 0.1 ? Math.floor(random() * 12_000) : Math.floor(random() * 300);
    // Now and then a quoted field, with a comma or a doubled quote inside, as CSV writers quote.
    const path = random() < 0.1 ? `"/r,${i} ""q"""` : `/r${i}`;
    const time = random() < 0.05 ? `"${t}"` : String(t);
    if (byStatus) rows.push(`${time},${STATUSES[Math.floor(random() * STATUSES.length)]},${path}`);
    else rows.push(`${path},${time},${random() < 0.05 ? 9 : Math.floor(random() * 4)}`);
    if (random() < 0.02) rows.push("");
  }
  return `${rows.join(random() < 0.3 ? "\r\n" : "\n")}\n`;
}

describe("replay mode gives trickle replay's summary for the same log", () => {
  let opened;
  before(async () => {
    opened = await openReplay();
  });
  after(() => opened?.close());

  const examples = readdirSync(join(REPO, "examples")).filter((name) => /\.(csv|har)$/.test(name));
  assert.ok(examples.length > 0);
  for (const name of examples) {
    for (const algorithm of ALGORITHMS) {
      it(`examples/${name}, ${algorithm}`, async () => {
        const text = readFileSync(join(REPO, "examples", name), "utf8");
        const options = { limit: "6/8s", algorithm };
        const expected = cli(text, options, name);
        const widget = await playInWidget(opened.page, text, options);
        assert.equal(expected.error, null);
        assert.equal(widget.summary, expected.summary);
        assert.equal(widget.shown, expected.summary);
        assert.match(widget.summary, /first 429 at request \d+/, "the example meets the limit");
      });
    }
  }

  it("20 random logs, every algorithm, limits from 1/1s to 30/1m", NO_HANG, async () => {
    const limits = ["1/1s", "3/2s", "6/8s", "10/5s", "30/1m"];
    for (let seed = 1; seed <= 20; seed++) {
      const text = randomLog(seed * 7_919);
      const options = { limit: limits[seed % limits.length], algorithm: ALGORITHMS[seed % 4] };
      const expected = cli(text, options, `random-${seed}.csv`);
      const widget = await playInWidget(opened.page, text, options);
      assert.deepEqual(
        { summary: widget.summary, error: widget.error },
        expected,
        `seed ${seed * 7_919}, ${options.limit} ${options.algorithm}`,
      );
      const counts = widget.summary.match(/(\d+) allowed, (\d+) denied, (\d+) never fit/).slice(1).map(Number);
      assert.deepEqual([widget.allowed, widget.denied, widget.neverFit], counts);
    }
  });

  it("a malformed row stops both with the CLI's message and its line", async () => {
    const options = { limit: "6/8s", algorithm: "floating" };
    const logs = [
      "t_ms,cost\n0,1\n100,one\n",
      "t_ms,status\n0,200\n\n50,101\n",
      "t_ms,cost\n500,1\n400,1\n",
      "t_ms,cost\n0\n",
      "when,cost\n0,1\n",
      "",
      '{"log": {"entries": [{"startedDateTime": "yesterday", "response": {"status": 200}}]}}',
      '{"log": {}}',
    ];
    for (const text of logs) {
      const expected = cli(text, options, "bad.csv");
      assert.notEqual(expected.error, null, text);
      const widget = await playInWidget(opened.page, text, options);
      assert.equal(widget.error, expected.error, JSON.stringify(text));
      assert.equal(widget.summary, null);
      const shown = await opened.page.evaluate(
        () => document.querySelector("rate-limit-demo").shadowRoot.querySelector('[part="replay-error"]').textContent,
      );
      assert.equal(shown, expected.error);
    }
    assert.match(cli(logs[0], options).error, /^line 3: cost "one"/);
  });
});

/** A server on 127.0.0.1 that answers every fourth request 429 and every seventh 404. */
async function flakyServer() {
  let served = 0;
  const server = createServer((request, response) => {
    served++;
    const status = served % 4 === 0 ? 429 : served % 7 === 0 ? 404 : 200;
    response.writeHead(status, { "content-type": "text/plain", "access-control-allow-origin": "*" });
    response.end(String(status));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) };
}

describe("a HAR that Chromium records", () => {
  it("replays in the widget as trickle replay replays it", NO_HANG, async () => {
    const api = await flakyServer();
    const harPath = join(scratch, "session.har");
    const context = await session.browser.newContext({ recordHar: { path: harPath } });
    try {
      const page = await context.newPage();
      await page.goto(api.url);
      await page.evaluate(async (url) => {
        for (let i = 0; i < 40; i++) {
          await fetch(`${url}?n=${i}`).catch(() => {});
          await new Promise((resolve) => setTimeout(resolve, i % 10 === 9 ? 400 : 15));
        }
      }, api.url);
    } finally {
      await context.close();
      await api.close();
    }
    const har = readFileSync(harPath, "utf8");
    const statuses = JSON.parse(har).log.entries.map((entry) => entry.response.status);
    assert.ok(statuses.includes(429) && statuses.includes(200) && statuses.length >= 40, String(statuses));

    const opened = await openReplay();
    try {
      for (const options of [
        { limit: "10/1s", algorithm: "floating" },
        { limit: "20/2s", algorithm: "sliding-log" },
      ]) {
        const expected = cli(har, options, "session.har");
        assert.equal(expected.error, null);
        const widget = await playInWidget(opened.page, har, options);
        assert.equal(widget.summary, expected.summary);
      }
      // Dropped on the file input, as a reader picks it.
      const played = await nextReplay(opened.page);
      await opened.page.locator('rate-limit-demo [part="replay-file"]').setInputFiles(harPath);
      assert.equal((await played()).summary, cli(har, { limit: "20/2s", algorithm: "sliding-log" }).summary);
    } finally {
      await opened.close();
    }
  });
});

describe("a large log", () => {
  it("100,000 rows play without a long task over 200 ms", NO_HANG, async () => {
    const random = generator(100_003);
    const rows = ["t_ms,status"];
    let t = 0;
    for (let i = 0; i < 100_000; i++) {
      t += Math.floor(random() * 40);
      rows.push(`${t},${STATUSES[Math.floor(random() * STATUSES.length)]}`);
    }
    const text = `${rows.join("\n")}\n`;
    const options = { limit: "150/15m", algorithm: "floating" };
    const expected = cli(text, options, "large.csv");
    const opened = await openReplay('limit="150/15m"');
    try {
      await opened.page.evaluate(() => {
        window.__longTasks = [];
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
        }).observe({ type: "longtask" });
      });
      // Picked as a file, as a reader brings a large log (pasting 1.5 MB into a text area
      // is the browser's own long task, before any replay).
      const played = await nextReplay(opened.page);
      await opened.page.locator('rate-limit-demo [part="replay-file"]').setInputFiles(join(scratch, "large.csv"));
      assert.equal((await played()).summary, expected.summary);
      // Long tasks arrive a little after they end.
      await opened.page.waitForTimeout(500);
      const longTasks = await opened.page.evaluate(() => window.__longTasks);
      const longest = Math.max(0, ...longTasks);
      console.log(`# 100,000 rows: ${longTasks.length} long tasks (${longTasks.map(Math.round).join(", ")} ms)`);
      assert.ok(longest <= 200, `a long task of ${longest} ms`);
    } finally {
      await opened.close();
    }
  });
});

describe("the replay panel", () => {
  it("plays a log typed with the keyboard alone, and is axe clean", async () => {
    const opened = await openReplay();
    try {
      const { page } = opened;
      // The file input, the text area, then Play, in the order Tab reaches them.
      await page.locator('rate-limit-demo [part="replay-file"]').focus();
      await page.keyboard.press("Tab");
      assert.equal(
        await page.evaluate(() => document.querySelector("rate-limit-demo").shadowRoot.activeElement?.getAttribute("part")),
        "replay-input",
      );
      await page.keyboard.insertText("t_ms,cost\n0,3\n10,3\n20,3\n");
      await page.keyboard.press("Tab");
      const played = await nextReplay(page);
      await page.keyboard.press("Enter");
      const detail = await played();
      assert.deepEqual(
        [detail.allowed, detail.denied, detail.firstRefused, detail.longestWaitMs],
        // The third 3 fits once 6 × (8000 − e)/8000 + 3 ≤ 6, at e = 4000 of the next window.
        [2, 1, { request: 3, tMs: 20 }, 12_000 - 20],
      );
      assert.equal(detail.summary, cli("t_ms,cost\n0,3\n10,3\n20,3\n", { limit: "6/8s", algorithm: "floating" }).summary);

      await page.addScriptTag({ path: AXE });
      const violations = await page.evaluate(async () => {
        const { violations } = await window.axe.run(document);
        return violations.map((rule) => `${rule.id}: ${rule.nodes.map((node) => node.target.join(" >>> ")).join(", ")}`);
      });
      assert.deepEqual(violations, []);
      assert.deepEqual(opened.problems, []);
    } finally {
      await opened.close();
    }
  });

  it("plays a file dropped on it, and draws the first 429", async () => {
    const opened = await openReplay();
    try {
      const { page } = opened;
      const text = readFileSync(join(REPO, "examples", "esi-burst.csv"), "utf8");
      const played = await nextReplay(page);
      const dropped = await page.evaluateHandle((text) => {
        const transfer = new DataTransfer();
        transfer.items.add(new File([text], "esi-burst.csv", { type: "text/csv" }));
        return transfer;
      }, text);
      await page.locator('rate-limit-demo [part="replay"]').dispatchEvent("drop", { dataTransfer: dropped });
      const detail = await played();
      assert.equal(detail.summary, cli(text, { limit: "6/8s", algorithm: "floating" }).summary);
      const timeline = page.locator('rate-limit-demo [part="replay-timeline"]');
      assert.match(await timeline.getAttribute("aria-label"), /^Timeline of 20 requests over 46000 ms: 17 allowed, 3 refused; the first 429 at 300 ms$/);
      assert.equal(await page.locator("rate-limit-demo .replay-first").getAttribute("hidden"), null);
      await page.locator('rate-limit-demo [part="panel"]').screenshot({ path: join(ARTIFACTS, "replay.png") });
    } finally {
      await opened.close();
    }
  });

  it("is refused beside compare or endpoint", async () => {
    const opened = await open(session, {
      path: "refused-fixture.html",
      html: pageWith(
        '<rate-limit-demo replay compare></rate-limit-demo><rate-limit-demo replay endpoint="/api"></rate-limit-demo>',
      ),
    });
    try {
      assert.deepEqual(await whenReady(opened.page), [false, false]);
      const errors = await opened.page.evaluate(() =>
        [...document.querySelectorAll("rate-limit-demo")].map(
          (element) => element.shadowRoot.querySelector('[part="error"]').textContent,
        ),
      );
      assert.match(errors[0], /^replay cannot be used with compare/);
      assert.match(errors[1], /^replay cannot be used with endpoint/);
    } finally {
      await opened.close();
    }
  });

  it("the replay property turns it on and off", async () => {
    const opened = await open(session, {
      path: "property-fixture.html",
      html: pageWith("<rate-limit-demo></rate-limit-demo>"),
    });
    try {
      assert.deepEqual(await whenReady(opened.page), [true]);
      const panel = opened.page.locator('rate-limit-demo [part="replay"]');
      assert.equal(await panel.count(), 0);
      await opened.page.evaluate(() => {
        document.querySelector("rate-limit-demo").replay = "";
      });
      await panel.waitFor();
      // The replay's WebAssembly waits for a log to play.
      const requested = [];
      opened.page.on("request", (request) => requested.push(new URL(request.url()).pathname));
      const played = await nextReplay(opened.page);
      await opened.page.locator('rate-limit-demo [part="replay-play"]').click();
      assert.equal((await played()).error, "the input is empty; expected a CSV header line, t_ms,cost or t_ms,status, then one line per request");
      assert.deepEqual(requested, ["/trickle_extras_bg.wasm"]);
      assert.equal(await opened.page.evaluate(() => document.querySelector("rate-limit-demo").getAttribute("replay")), "");
      await opened.page.evaluate(() => {
        document.querySelector("rate-limit-demo").replay = null;
      });
      await panel.waitFor({ state: "detached" });
    } finally {
      await opened.close();
    }
  });

  it("a page of plain widgets never fetches replay mode or its WebAssembly", async () => {
    const opened = await open(session, {
      path: "plain-fixture.html",
      html: pageWith('<rate-limit-demo></rate-limit-demo><rate-limit-demo replay="false"></rate-limit-demo>'),
    });
    try {
      const requested = [];
      opened.page.on("request", (request) => requested.push(new URL(request.url()).pathname));
      await opened.page.reload();
      assert.deepEqual(await whenReady(opened.page), [true, true]);
      assert.ok(requested.includes("/trickle_bg.wasm"), String(requested));
      assert.deepEqual(
        requested.filter((path) => path.includes("replay")),
        [],
        "the page fetched replay mode",
      );
    } finally {
      await opened.close();
    }
  });
});
