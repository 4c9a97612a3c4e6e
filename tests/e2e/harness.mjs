// Shared by the end-to-end tests: the site `make site` lays out from the packed tarball (the
// docs page beside the package's files), served on 127.0.0.1; Debian's Chromium driven by
// playwright-core (which downloads nothing); and test pages that exist only inside the
// browser, so that the site stays the one a docs author would copy.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serve } from "../../scripts/serve.mjs";
import { launch } from "./webdriver.mjs";

export const REPO = fileURLToPath(new URL("../..", import.meta.url));
/** Where tests write what a person may want to look at: screenshots, timings. */
export const ARTIFACTS = join(REPO, "target", "e2e");
/** The docs page beside the packed tarball's files, as `make site` lays them out. */
export const SITE = join(REPO, "target", "site");
const FIXTURES = join(REPO, "tests", "e2e", "fixtures");
/** The CLI `make cli` builds; TRICKLE points the tests at another build of it. */
const TRICKLE = process.env.TRICKLE ?? join(REPO, "target", "release", "trickle");

// Without the background-networking flags, Chromium keeps trying to reach Google's hosts,
// which this machine's closed network refuses.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Starts the server and the browser. Returns a session for `open`; `session.close()` stops
 * both and removes the browser's temporary folders. `headers` go on every response the
 * server sends, such as a Content-Security-Policy; `root` is the folder served (default
 * target/site).
 */
export async function start({ headers, root = SITE } = {}) {
  await mkdir(ARTIFACTS, { recursive: true });
  // Chromium leaves org.chromium.Chromium.* folders in TMPDIR: keep them in our scratch.
  const scratch = await mkdtemp(join(tmpdir(), "trickle-e2e-"));
  const server = await serve(root, 0, { headers });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
    env: { ...process.env, TMPDIR: scratch },
  });
  return {
    url: server.url,
    browser,
    close: async () => {
      await browser.close();
      await server.close();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/**
 * Opens a page in a context of its own (its own clock, routes and colour scheme), recording
 * every console error or warning and every uncaught exception in `problems`, so a test can
 * assert the page stayed clean.
 *
 * - `path`: what to open, relative to the server's root (default: the docs page);
 * - `html`: serve this at `path` from inside the browser instead, for pages only the tests
 *   need; relative URLs in it resolve against the real server;
 * - `clock`: install Playwright's fake clock at 0, so that time, timers and animation frames
 *   move only when the test says so;
 * - `blockWasm`: make every request for the wasm fail;
 * - `routes`: more `[url pattern, handler]` pairs for `context.route`, such as a wasm that
 *   answers 404 or garbage;
 * - `initScript`: a function run in the page before any of its own scripts;
 * - `colorScheme`, `reducedMotion`, `forcedColors`: the reader's preferences (`forcedColors:
 *   "active"` renders with a forced palette, as Windows High Contrast does).
 */
export async function open(session, options = {}) {
  const { path = "", html, clock = false, blockWasm = false, routes = [], initScript } = options;
  const { colorScheme, reducedMotion, forcedColors } = options;
  const context = await session.browser.newContext({
    viewport: { width: 900, height: 900 },
    colorScheme,
    reducedMotion,
    forcedColors,
  });
  const address = new URL(path, session.url).href;
  if (html !== undefined) {
    await context.route(address, (route) =>
      route.fulfill({ contentType: "text/html; charset=utf-8", body: html }),
    );
  }
  if (blockWasm) await context.route("**/*.wasm", (route) => route.abort());
  for (const [pattern, handler] of routes) await context.route(pattern, handler);
  if (initScript) await context.addInitScript(initScript);
  const page = await context.newPage();
  const problems = [];
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") {
      problems.push(`console.${message.type()}: ${message.text()}`);
    }
  });
  page.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
  if (clock) await page.clock.install({ time: 0 });
  await page.goto(address);
  return { page, problems, close: () => context.close() };
}

/**
 * A minimal page around `body`, loading the element from `script`; with `script` null, the
 * body brings its own script tag (a snippet copied from the docs).
 */
export function pageWith(body, script = "/rate-limit-demo.js") {
  const tag = script === null ? "" : `<script type="module" src="${script}"></script>\n`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>fixture</title>
${tag}</head>
<body>
${body}
</body>
</html>`;
}

/** Waits until every `<rate-limit-demo>` on the page has settled; returns their `ready` values. */
export function whenReady(page) {
  return page.evaluate(async () => {
    await customElements.whenDefined("rate-limit-demo");
    return Promise.all([...document.querySelectorAll("rate-limit-demo")].map((el) => el.ready));
  });
}

/**
 * Starts collecting `rate-limit-decision` events at the document (they bubble and cross the
 * shadow boundary); `events(page)` returns them in order, each with the id of its widget.
 */
export async function collectEvents(page) {
  await page.evaluate(() => {
    window.__decisions = [];
    document.addEventListener("rate-limit-decision", (event) => {
      window.__decisions.push({ widget: event.target.id, detail: event.detail });
    });
  });
}

export function events(page) {
  return page.evaluate(() => window.__decisions);
}

/** The text of `part` inside the widget matched by `selector`. */
export function partText(page, selector, part) {
  return page.evaluate(
    ([selector, part]) =>
      document.querySelector(selector)?.shadowRoot.querySelector(`[part~="${part}"]`)?.textContent,
    [selector, part],
  );
}

/**
 * How many animation frames the page has asked for since the first call, which starts the
 * count by wrapping `requestAnimationFrame` (the element looks it up on every call).
 */
export function framesRequested(page) {
  return page.evaluate(() => {
    if (!window.__frames) {
      window.__frames = { count: 0 };
      const original = window.requestAnimationFrame.bind(window);
      window.requestAnimationFrame = (callback) => {
        window.__frames.count++;
        return original(callback);
      };
    }
    return window.__frames.count;
  });
}

/**
 * The page's JS heap in bytes once a full garbage collection has run, as DevTools reports
 * it: what the page still holds, not garbage that has yet to be collected.
 */
export async function heapAfterGC(page) {
  const devtools = await page.context().newCDPSession(page);
  try {
    await devtools.send("HeapProfiler.collectGarbage");
    return (await devtools.send("Runtime.getHeapUsage")).usedSize;
  } finally {
    await devtools.detach();
  }
}

/**
 * The widget's card as drawn: its colour scheme, and the Rec. 709 luma of its background from
 * 0 (black) to 255 (white), enough to tell a dark card from a light one.
 */
export function widgetLook(page, selector = "rate-limit-demo") {
  return page.locator(selector).evaluate((element) => {
    const panel = element.shadowRoot.querySelector('[part~="panel"]');
    const [red, green, blue] = getComputedStyle(panel).backgroundColor.match(/\d+/g).map(Number);
    return {
      colorScheme: getComputedStyle(element).colorScheme,
      luma: 0.2126 * red + 0.7152 * green + 0.0722 * blue,
    };
  });
}

/**
 * Starts `trickle serve --config fixtures/<config>` on a free loopback port and resolves to
 * `{ url, log, stop }` once its first line says where it listens.
 */
export async function serveApi(config) {
  if (!existsSync(TRICKLE)) throw new Error(`${TRICKLE} is missing: run \`make cli\` first`);
  const child = spawn(
    TRICKLE,
    ["serve", "--config", join(FIXTURES, config), "--listen", "127.0.0.1:0"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stderr.on("data", (chunk) => (log += chunk));
  const exited = new Promise((done) => child.once("exit", done));
  const first = await Promise.race([
    new Promise((done) => createInterface({ input: child.stdout }).once("line", done)),
    exited.then((code) => {
      throw new Error(`trickle serve exited (${code}) before listening:\n${log}`);
    }),
    new Promise((_, fail) => setTimeout(() => fail(new Error(`trickle serve did not start:\n${log}`)), 10_000)),
  ]).catch((error) => {
    child.kill();
    throw error;
  });
  const url = first.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)?.[1];
  if (!url) {
    child.kill();
    throw new Error(`trickle serve's first line is not "listening on http://…": ${first}`);
  }
  return {
    url,
    log: () => log,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * The site as `make site` lays it out, with `pages` (file name → HTML) beside it, served
 * over HTTP from a copy in a temporary folder: for engines that load pages by URL.
 * Resolves to `{ url, close }`; `close` stops the server and removes the copy.
 */
export async function serveSiteWith(prefix, pages) {
  const root = await mkdtemp(join(tmpdir(), prefix));
  await cp(SITE, root, { recursive: true });
  for (const [name, html] of Object.entries(pages)) await writeFile(join(root, name), html);
  const server = await serve(root, 0);
  return {
    url: server.url,
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * `engine` over WebDriver for the tests of `test`, its driver's log in
 * target/e2e/TEST-ENGINE.log, allowing 30 s for a page load or a script.
 */
export async function launchEngine(engine, test) {
  const log = join(ARTIFACTS, `${test}-${engine.name.toLowerCase().replace(/\W+/g, "-")}.log`);
  const browser = await launch(engine, log);
  await browser.driver.manage().setTimeouts({ script: 30_000, pageLoad: 30_000 });
  return browser;
}
