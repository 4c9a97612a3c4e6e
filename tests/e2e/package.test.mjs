// The packed tarball, installed as a docs author installs it (`npm install ./rate-limit-demo-
// <version>.tgz`) into a scratch project: what it contains, its entries in Node, its types
// under tsc, its manifest, and a plain page that loads the "." entry from node_modules and
// presses Hit in Chromium. What ships is what is tested.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { REPO, collectEvents, events, open, start, whenReady } from "./harness.mjs";

const run = promisify(execFile);
const TARBALL = (await readFile(join(REPO, "target", "package", "tarball"), "utf8")).trim();
const FIXTURES = join(REPO, "tests", "e2e", "fixtures");
/** A window boundary of 6/8s, late enough that the page has loaded on the fake clock. */
const START = 24_000;

let project;
before(async () => {
  project = await mkdtemp(join(tmpdir(), "trickle-package-"));
  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "docs-site", private: true, type: "module" }),
  );
  await run("npm", ["install", "--no-audit", "--no-fund", "--offline", TARBALL], {
    cwd: project,
  });
});
after(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

const installed = (...path) => join(project, "node_modules", "rate-limit-demo", ...path);

/** Runs `source` as an ES module inside the scratch project and returns what it printed. */
async function inProject(source) {
  const script = join(project, `check-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(script, source);
  try {
    const { stdout } = await run(process.execPath, [script], { cwd: project });
    return JSON.parse(stdout);
  } finally {
    await rm(script);
  }
}

describe("the tarball", () => {
  it("holds exactly the files its manifest lists", async () => {
    const { stdout } = await run("tar", ["-tzf", TARBALL]);
    const files = stdout.trim().split("\n").sort();
    const expected = [
      "package.json",
      "README.md",
      "LICENSE-MIT",
      "LICENSE-APACHE",
      "custom-elements.json",
      ...["rate-limit-demo", "element", "limiter", "algorithms-glue", "compare", "live", "live-policy", "openapi", "policy", "predict", "replay"].flatMap((name) => [
        `dist/${name}.js`,
        `dist/${name}.js.map`,
      ]),
      "dist/trickle_bg.wasm",
      "dist/trickle_extras_bg.wasm",
      "dist/trickle_algorithms_bg.wasm",
      "types/index.d.ts",
      "types/element.d.ts",
      "types/limiter.d.ts",
    ].map((file) => `package/${file}`);
    assert.deepEqual(files, expected.sort());
  });

  it("has the crate's version, its licences and an entry file for every export", async () => {
    const manifest = JSON.parse(await readFile(installed("package.json"), "utf8"));
    const cargo = await readFile(join(REPO, "Cargo.toml"), "utf8");
    assert.equal(manifest.version, cargo.match(/^version = "([^"]+)"/m)[1]);
    assert.equal(manifest.license, "MIT OR Apache-2.0");
    assert.equal(manifest.type, "module");
    for (const licence of ["LICENSE-MIT", "LICENSE-APACHE"]) {
      assert.equal(
        await readFile(installed(licence), "utf8"),
        await readFile(join(REPO, licence), "utf8"),
      );
    }
    assert.deepEqual(Object.keys(manifest.exports), [
      ".",
      "./element",
      "./limiter",
      "./custom-elements.json",
      "./package.json",
    ]);
    for (const [entry, target] of Object.entries(manifest.exports)) {
      const files = typeof target === "string" ? [target] : [target.types, target.default];
      if (entry.endsWith(".json")) continue;
      assert.equal(files.length, 2, `${entry} names its types and its code`);
      for (const file of files) await readFile(installed(file)); // throws when missing
    }
  });
});

describe("its entries in Node", () => {
  it('"." defines nothing and throws nothing where there is no DOM, as in a server-side render', async () => {
    const names = await inProject(
      `const entry = await import("rate-limit-demo");
       console.log(JSON.stringify(Object.keys(entry).sort()));`,
    );
    assert.deepEqual(names, ["CostTable", "Limiter", "RateLimitDemo", "define", "load"]);
  });

  it('"./element" gives the class and define with no side effect', async () => {
    const result = await inProject(
      `const { RateLimitDemo, define } = await import("rate-limit-demo/element");
       console.log(JSON.stringify({
         observed: RateLimitDemo.observedAttributes,
         define: typeof define,
       }));`,
    );
    assert.deepEqual(result, {
      observed: [
        "limit",
        "algorithm",
        "algorithms",
        "cost",
        "costs",
        "compare",
        "endpoint",
        "client-id",
        "predict",
        "replay",
        "headers",
        "openapi",
        "route",
      ],
      define: "function",
    });
  });

  it('"./limiter" decides as the core does: 6 at 6/8s, then a 429 with the exact wait', async () => {
    const result = await inProject(
      `import { load, Limiter, CostTable } from "rate-limit-demo/limiter";
       await load();
       const limiter = new Limiter({ limit: "6/8s" });
       const answers = [];
       for (let n = 0; n < 7; n++) answers.push(limiter.hit(1_000 + n).status);
       const denied = limiter.hit(1_500);
       const esi = new CostTable("esi");
       console.log(JSON.stringify({
         answers,
         retryAfterMs: denied.retryAfterMs,
         retryAfter: denied.retryAfter,
         algorithms: Limiter.algorithms,
         esi: esi.statuses.map((status) => [status, esi.cost(status)]),
       }));`,
    );
    assert.deepEqual(result, {
      answers: [200, 200, 200, 200, 200, 200, 429],
      // Six in the window [0, 8 s): one more fits once 6 × (8000 − e) / 8000 + 1 ≤ 6 in the
      // next, at e = 1334 ms, so at 9334 ms: 7834 ms after 1500.
      retryAfterMs: 7_834,
      retryAfter: 8,
      algorithms: ["floating", "sliding-log", "fixed", "token-bucket"],
      esi: [
        [200, 2],
        [304, 1],
        [404, 5],
        [500, 0],
      ],
    });
  });

  it("custom-elements.json declares the element as the class declares itself", async () => {
    const result = await inProject(
      `import manifest from "rate-limit-demo/custom-elements.json" with { type: "json" };
       const { RateLimitDemo } = await import("rate-limit-demo/element");
       const element = manifest.modules.flatMap((m) => m.declarations ?? [])
         .find((d) => d.customElement);
       console.log(JSON.stringify({
         tagName: element.tagName,
         attributes: element.attributes.map((a) => a.name),
         events: element.events.map((e) => e.name),
         observed: RateLimitDemo.observedAttributes,
         private: element.members.filter((m) => m.privacy === "private" || m.name?.startsWith("#")).length,
       }));`,
    );
    assert.equal(result.tagName, "rate-limit-demo");
    assert.deepEqual(result.attributes.sort(), result.observed.sort());
    assert.deepEqual(result.events, ["rate-limit-decision", "rate-limit-mismatch", "rate-limit-replay"]);
    assert.equal(result.private, 0);
  });
});

describe("its types", () => {
  const tsc = join(REPO, "tests", "e2e", "node_modules", ".bin", "tsc");

  before(async () => {
    for (const file of ["consumer.ts", "consumer-mistakes.ts", "tsconfig.json"]) {
      await cp(join(FIXTURES, file), join(project, file));
    }
  });

  it("check a page script that uses every entry, under strict tsc", async () => {
    const { stdout } = await run(tsc, ["--listFilesOnly", "-p", "."], { cwd: project });
    assert.match(stdout, /node_modules\/rate-limit-demo\/types\/element\.d\.ts/, "tsc reads the shipped types");
    const result = await run(tsc, ["--noEmit", "-p", "."], { cwd: project }).catch((error) => error);
    const reported = result.stdout.split("\n").filter((line) => line.startsWith("consumer.ts"));
    assert.deepEqual(reported, [], "the correct consumer type-checks");
  });

  it("refuse what the API refuses at run time", async () => {
    const result = await run(tsc, ["--noEmit", "-p", "."], { cwd: project }).catch((error) => error);
    const lines = result.stdout
      .split("\n")
      .filter((line) => line.startsWith("consumer-mistakes.ts"))
      .map((line) => Number(line.match(/^consumer-mistakes\.ts\((\d+),/)[1]));
    // An unknown algorithm, a string cost, a record without a cost, a string for compare,
    // `used` read as a string, and a respond without the answer's cost.
    assert.deepEqual([...new Set(lines)], [4, 5, 6, 7, 8, 9]);
  });
});

/** The first ```html block under `heading` in docs/src/embedding.md: the recipe as authors read it. */
async function recipe(heading) {
  const docs = await readFile(join(REPO, "docs", "src", "embedding.md"), "utf8");
  const section = docs.slice(docs.indexOf(`\n## ${heading}\n`));
  const block = section.match(/```html\n([\s\S]*?)```/);
  assert.ok(block, `docs/src/embedding.md has an html block under "${heading}"`);
  return block[1];
}

describe("a plain page loading the package from node_modules, as docs/src/embedding.md says", () => {
  let session;
  before(async () => {
    await writeFile(
      join(project, "index.html"),
      `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>Rate limits</title>
</head>
<body>
${await recipe("Plain HTML, script tag")}
</body>
</html>`,
    );
    session = await start({ root: project });
  });
  after(() => session?.close());

  it("gets 6 × 200, then a 429 with Retry-After, and nothing in the console", async () => {
    const { page, problems, close } = await open(session, { path: "index.html", clock: true });
    await page.clock.pauseAt(START);
    assert.deepEqual(await whenReady(page), [true]);
    await collectEvents(page);
    const hit = page.locator('rate-limit-demo [part~="hit"]');
    for (let n = 0; n < 7; n++) await hit.click();
    const decisions = (await events(page)).map(({ detail }) => detail);
    assert.deepEqual(
      decisions.map(({ status }) => status),
      [200, 200, 200, 200, 200, 200, 429],
    );
    // All six at 24 s, the start of a window: at 32 s they become `previous`, and one more
    // fits once 6 × (8000 − e) / 8000 + 1 ≤ 6, at e = 1334 ms: 9334 ms after the 429.
    const denied = decisions.at(-1);
    assert.equal(denied.retryAfterMs, 9_334);
    assert.equal(denied.retryAfter, 10);
    const answer = await page.locator('rate-limit-demo [part~="answer"]').textContent();
    assert.match(answer, /^429 Too Many Requests · Retry-After: 10 /);
    assert.deepEqual(problems, []);
    await close();
  });
});
