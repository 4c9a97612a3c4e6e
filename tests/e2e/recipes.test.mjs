// The embedding recipes of docs/src/embedding.md, each built for real: a plain page with an
// import map, a VitePress site, a Docusaurus site, MkDocs with Material, Sphinx, and Astro
// Starlight. Each site is laid out in a scratch folder from its fixture (tests/recipes/<tool>/:
// package.json, its lockfile, and what the docs do not show, such as the rest of a minimal
// site) plus the files the docs page gives in code blocks titled with a file name, so that
// the docs and what is tested cannot drift apart. Then `npm ci`, `npm install --no-save` of
// the packed tarball (what ships, not the source), the shell commands the docs' section gives
// (copying the package's files where the tool wants them; its `npm install rate-limit-demo`
// is what the tarball stands for), the tool's build, the output served on 127.0.0.1 and read
// in Chromium: the widget is ready, answers six 200s then a 429 with its Retry-After, nothing
// is logged, and the tool's page around it keeps working, through its own navigation too.
//
// The npm tools come from each fixture's lockfile; MkDocs, Material and Sphinx from
// tests/recipes/.venv, which scripts/setup.sh makes from tests/recipes/requirements.txt.
// Installing and building take a minute or two (Docusaurus most): when a fixture's own
// node_modules is already installed from its lockfile (stamped as scripts/setup.sh stamps
// its installs), it is hard-linked in place of `npm ci`. Every step is bounded, and the time
// each took is written to target/e2e/recipes-timings.json. RECIPE=vitepress runs one recipe.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, REPO, collectEvents, events, open, start, whenReady, widgetLook } from "./harness.mjs";

const DOC = join(REPO, "docs", "src", "embedding.md");
const FIXTURES = join(REPO, "tests", "recipes");
/** The Python recipes' tools, installed by scripts/setup.sh from tests/recipes/requirements.txt. */
const VENV = join(FIXTURES, ".venv", "bin");
/** A window boundary of 6/8s, late enough that every site has loaded on the fake clock. */
const START = 24_000;
const MINUTE = 60_000;
/** Each test's bound: a page that never settles fails the test instead of hanging the run. */
const BOUNDED = { timeout: 2 * MINUTE };

/**
 * The recipes: the docs' section and the fixture; how to build and what to serve; the page
 * with the widget; where the wasm is loaded from (the package's own file, or the copy the
 * bundler put in the build); the packages whose versions the docs' table must name (`tools`
 * from npm, `python` from the virtualenv); for a site that must be read at the address it
 * was built for, that address (`origin`, from the docs' files) and what else its pages ask
 * for; for a site with its own navigation, the page (`home`) whose link (`link`) leads to
 * the widget's; and for a site with a dark mode switch, how to pick a scheme with it.
 */
const RECIPES = [
  {
    name: "import map",
    heading: "Plain HTML, import map",
    fixture: "importmap",
    build: null,
    output: ".",
    page: "index.html",
    wasm: /^\/node_modules\/rate-limit-demo\/dist\/trickle_bg\.wasm$/,
    tools: {},
  },
  {
    name: "VitePress",
    heading: "VitePress",
    fixture: "vitepress",
    build: ["node_modules/.bin/vitepress", ["build", "docs"]],
    output: "docs/.vitepress/dist",
    page: "rate-limits.html",
    wasm: /^\/assets\/trickle_bg\.[\w-]+\.wasm$/,
    tools: { vitepress: "vitepress", vue: "Vue" },
    home: "index.html",
    // A toggle: each click switches to the other scheme.
    scheme: (page) => page.locator(".VPNavBarAppearance button").click(),
  },
  {
    name: "Docusaurus",
    heading: "Docusaurus",
    fixture: "docusaurus",
    build: ["node_modules/.bin/docusaurus", ["build"]],
    output: "build",
    page: "rate-limits",
    wasm: /^\/[0-9a-f]+\.wasm$/,
    tools: { "@docusaurus/core": "@docusaurus/core", react: "React" },
    home: "",
    scheme: (page) => page.getByRole("button", { name: /dark and light mode/i }).click(),
    // A page whose widget is written with JSX's compare={true}.
    compare: "compare",
  },
  {
    name: "MkDocs with Material",
    heading: "MkDocs with Material",
    fixture: "mkdocs",
    build: [join(VENV, "mkdocs"), ["build", "--strict"]],
    output: "site",
    page: "rate-limits/",
    wasm: /^\/rate-limit-demo\/trickle_bg\.wasm$/,
    tools: {},
    python: { mkdocs: "mkdocs", "mkdocs-material": "mkdocs-material" },
    // Material's instant navigation follows only links to the pages its sitemap lists, at
    // site_url's port: the site is read at that address, answered from the local server.
    origin: (files) => files.get("mkdocs.yml").match(/^site_url: (\S+)$/m)?.[1],
    // Material's fonts come from Google Fonts, which this machine cannot reach; a reader's
    // browser does. Answered empty, the page falls back to system fonts, without an error.
    routes: [["https://fonts.googleapis.com/**", (route) => route.fulfill({ contentType: "text/css" })]],
    home: "",
    // Material's navigation sits inside <main> too: the link in the page's own text.
    link: (page) => page.locator("article").getByRole("link", { name: "Rate limits", exact: true }),
  },
  {
    name: "Sphinx",
    heading: "Sphinx",
    fixture: "sphinx",
    // Warnings are errors: the page, its raw HTML and the settings build cleanly.
    build: [join(VENV, "sphinx-build"), ["-W", "--keep-going", "-q", "-b", "html", "docs", "build"]],
    output: "build",
    page: "rate-limits.html",
    wasm: /^\/_static\/trickle_bg\.wasm$/,
    tools: {},
    python: { sphinx: "Sphinx", alabaster: "alabaster" },
  },
  {
    name: "Astro Starlight",
    heading: "Astro Starlight",
    fixture: "starlight",
    build: ["node_modules/.bin/astro", ["build"]],
    output: "dist",
    page: "rate-limits/",
    wasm: /^\/_astro\/trickle_bg\.[\w-]+\.wasm$/,
    tools: { "@astrojs/starlight": "@astrojs/starlight", astro: "Astro" },
    // A <select> of dark, light and auto, in the header at this width.
    scheme: (page, scheme) =>
      page.locator("starlight-theme-select select:visible").selectOption(scheme),
  },
];

/** The text of the docs' section `## heading`, up to the next. */
function sectionOf(markdown, heading) {
  const sections = markdown.split(/^## /m);
  const section = sections.find((text) => text.split("\n", 1)[0].trim() === heading);
  assert.ok(section, `docs/src/embedding.md has a section "## ${heading}"`);
  return section;
}

/**
 * The files a section of the docs gives: every fenced code block whose info string names a
 * file, as in ```js title="docs/.vitepress/config.mjs"```, keyed by that name.
 */
function filesIn(markdown, heading) {
  const section = sectionOf(markdown, heading);
  const files = new Map();
  for (const [, path, body] of section.matchAll(/^```\w*\s+title="([^"]+)"\n([\s\S]*?)^```$/gm)) {
    files.set(path, body);
  }
  assert.ok(files.size > 0, `"## ${heading}" gives at least one file in a titled code block`);
  return files;
}

/** The install a section's commands start with; the test installs the packed tarball instead. */
const INSTALL = /^npm install rate-limit-demo$/;

/**
 * The shell commands a section of the docs gives (its ```sh blocks), one script, but the
 * `npm install rate-limit-demo` a reader runs first, which the packed tarball stands for.
 */
function commandsIn(markdown, heading) {
  const section = sectionOf(markdown, heading);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .flatMap(([, body]) => body.split("\n"))
    .filter((line) => line.trim() !== "" && !INSTALL.test(line.trim()))
    .join("\n");
}

/** The version of a Python package installed in tests/recipes/.venv. */
async function pythonVersion(name) {
  const python = join(VENV, "python");
  const script = "import importlib.metadata, sys; print(importlib.metadata.version(sys.argv[1]))";
  return new Promise((resolve, reject) => {
    execFile(python, ["-c", script, name], (error, stdout, stderr) => {
      if (error?.code === "ENOENT") {
        reject(new Error(`${python} is missing: scripts/setup.sh test makes the virtualenv`));
      } else if (error) {
        reject(new Error(`${name} is not installed in ${python}: ${stderr.trim()}`));
      } else {
        resolve(stdout.trim());
      }
    });
  });
}

/** The versions the docs' table says were tested, as one line of text per recipe. */
function testedVersions(markdown, heading) {
  const row = markdown.split("\n").find((line) => line.startsWith(`| ${heading} |`));
  assert.ok(row, `the docs' table has a row for ${heading}`);
  return row.split("|")[2].trim();
}

/** A command's output, trimmed to what fits in a failure message. */
const tail = (text, lines = 40) =>
  String(text ?? "").trimEnd().split("\n").slice(-lines).join("\n");

/**
 * Runs `command args` in `cwd` within `timeout` ms; resolves to how long it took (ms). A
 * failure says which step failed, how, and the end of its stderr and stdout.
 */
function run(step, command, args, { cwd, timeout }) {
  const began = performance.now();
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd,
        timeout,
        killSignal: "SIGKILL",
        maxBuffer: 64 * 1024 * 1024,
        // No update check, no colours in the messages a failure quotes, no telemetry (this
        // machine's network is closed anyway).
        env: {
          ...process.env,
          NO_UPDATE_NOTIFIER: "1",
          NO_COLOR: "1",
          FORCE_COLOR: "0",
          CI: "1",
          ASTRO_TELEMETRY_DISABLED: "1",
        },
      },
      (error, stdout, stderr) => {
        if (!error) return resolve(Math.round(performance.now() - began));
        const how = error.killed
          ? `timed out after ${timeout / 1000} s`
          : error.code === "ENOENT"
            ? `${command} not found (scripts/setup.sh test installs the recipes' tools)`
            : `exit code ${error.code}`;
        reject(
          new Error(
            `${step} failed (${how}): ${command} ${args.join(" ")} in ${cwd}\n` +
              `--- stderr ---\n${tail(stderr)}\n--- stdout ---\n${tail(stdout)}`,
          ),
        );
      },
    );
  });
}

/** RECIPE=vitepress (a fixture's name, or several, comma-separated) runs only those. */
const ONLY = process.env.RECIPE?.split(",").map((name) => name.trim().toLowerCase());

const timings = {};

/**
 * When the fixture's own node_modules is installed from its current lockfile (stamped as
 * scripts/setup.sh's npm_install stamps it: node_modules/.installed-from-lock, a copy of the
 * lockfile), hard-links it into `project` instead of running `npm ci` there: the same files,
 * in under a second instead of most of a minute. Returns the time taken, or null when the
 * fixture is not installed (or cannot be linked here) and `npm ci` must run.
 */
async function linkInstalled(fixture, project) {
  const installed = join(fixture, "node_modules");
  const lock = await readFile(join(fixture, "package-lock.json"), "utf8");
  const stamp = await readFile(join(installed, ".installed-from-lock"), "utf8").catch(() => null);
  if (stamp !== lock) return null;
  const modules = join(project, "node_modules");
  try {
    const took = await run("linking node_modules", "cp", ["-al", installed, modules], {
      cwd: project,
      timeout: MINUTE,
    });
    // npm rewrites its record of the tree in place, which would write through a hard link
    // into the fixture's own: the copy drops it (and the stamp), so npm writes a new file.
    await rm(join(modules, ".package-lock.json"), { force: true });
    await rm(join(modules, ".installed-from-lock"), { force: true });
    return took;
  } catch {
    await rm(modules, { recursive: true, force: true });
    return null;
  }
}

after(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, "recipes-timings.json");
  await writeFile(file, JSON.stringify(timings, null, 2) + "\n");
});

describe("docs/src/embedding.md", () => {
  it("names the packed version in its CDN address, and the file the wasm sits beside", BOUNDED, async () => {
    const docs = await readFile(DOC, "utf8");
    const { version } = JSON.parse(
      await readFile(join(REPO, "packages", "rate-limit-demo", "package.json"), "utf8"),
    );
    const addresses = docs.match(/https:\/\/cdn\.jsdelivr\.net\/npm\/[^"\s]+/g);
    assert.deepEqual(addresses, [
      `https://cdn.jsdelivr.net/npm/rate-limit-demo@${version}/dist/rate-limit-demo.js`,
    ]);
  });
});

/** Answers the favicon request every page makes: a real site has one, the recipes show none. */
const FAVICON = ["**/favicon.ico", (route) => route.fulfill({ status: 204 })];

/**
 * Presses Hit seven times at one instant, on a page whose fake clock is still short of
 * START; returns the details of the decisions collected since `collectEvents` or the last
 * `forgetEvents`.
 */
async function pressSeven(page) {
  await page.clock.pauseAt(START);
  const hit = page.locator('rate-limit-demo [part~="hit"]');
  for (let press = 0; press < 7; press++) await hit.click();
  return (await events(page)).map(({ detail }) => detail);
}

/** Empties what `events` returns; `collectEvents` adds a listener each call, so once is enough. */
const forgetEvents = (page) => page.evaluate(() => (window.__decisions = []));

/** Six 200s, then a 429 with its Retry-After, as the widget and its answer line say. */
async function assertSixThen429(page, decisions) {
  assert.deepEqual(
    decisions.map(({ status }) => status),
    [200, 200, 200, 200, 200, 200, 429],
  );
  assert.deepEqual(
    decisions.map(({ used }) => used),
    [1, 2, 3, 4, 5, 6, 6],
  );
  const denied = decisions.at(-1);
  assert.equal(denied.allowed, false);
  // The six slide out of the last 8 s from 32 s on; one token fits once
  // 6 × (8000 − e)/8000 + 1 ≤ 6, at e = 1334 ms: 9334 ms after 24 s, 10 s in the header.
  assert.equal(denied.retryAfterMs, 9_334);
  assert.equal(denied.retryAfter, 10);
  assert.match(
    await page.locator('rate-limit-demo [part~="answer"]').textContent(),
    /^429 Too Many Requests · Retry-After: 10\b/,
  );
}

/**
 * A route that answers every request for `origin` (a site's own address) from the local
 * server in `session`, so that a site is read at the address it was built for.
 */
function servedAt(origin, session) {
  return [
    `${origin}**`,
    async (route) => {
      const { pathname, search } = new URL(route.request().url());
      const local = new URL(pathname + search, session.url).href;
      await route.fulfill({ response: await route.fetch({ url: local, maxRedirects: 0 }) });
    },
  ];
}

/** The widget's colour scheme and whether its card is drawn dark. */
async function darkness(page) {
  const { colorScheme, luma } = await widgetLook(page);
  return { colorScheme, dark: luma < 64 };
}

for (const recipe of RECIPES.filter(({ fixture }) => !ONLY || ONLY.includes(fixture))) {
  describe(`the ${recipe.name} recipe of docs/src/embedding.md`, () => {
    let scratch;
    let project;
    let session;
    let docs;
    let origin;
    const took = {};

    /**
     * Opens `path` of the built site as `open` does, at the site's own address when it has
     * one, with the recipe's routes and the favicon's.
     */
    const visit = (options) => {
      const at = origin === undefined ? session : { ...session, url: origin };
      const routes = [
        ...(origin === undefined ? [] : [servedAt(origin, session)]),
        ...(recipe.routes ?? []),
        FAVICON,
      ];
      return open(at, { ...options, routes });
    };

    before(async () => {
      docs = await readFile(DOC, "utf8");
      const tarball = await readFile(join(REPO, "target", "package", "tarball"), "utf8")
        .then((text) => text.trim())
        .then(async (path) => (await readFile(path), path))
        .catch(() => {
          throw new Error("the tarball target/package/tarball names is missing: run make package");
        });
      scratch = await mkdtemp(join(tmpdir(), `trickle-recipe-${recipe.fixture}-`));
      project = join(scratch, recipe.fixture);
      await cp(join(FIXTURES, recipe.fixture), project, {
        recursive: true,
        filter: (source) => !/[/\\](node_modules|build|dist|site|cache|\.docusaurus|\.astro)$/.test(source),
      });
      const files = filesIn(docs, recipe.heading);
      for (const [path, body] of files) {
        await mkdir(dirname(join(project, path)), { recursive: true });
        await writeFile(join(project, path), body);
      }
      if (recipe.origin) {
        origin = recipe.origin(files);
        assert.ok(origin, `the ${recipe.name} recipe's files name the site's address`);
      }
      // The lockfile pins every version, so npm's cache may answer without asking the registry.
      const npm = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
      const linked = await linkInstalled(join(FIXTURES, recipe.fixture), project);
      if (linked !== null) {
        took.linkInstalled = linked;
      } else {
        took.npmCi = await run("npm ci", "npm", ["ci", ...npm], {
          cwd: project,
          timeout: 8 * MINUTE,
        });
      }
      const install = ["install", "--no-save", ...npm, tarball];
      took.installTarball = await run("npm install <tarball>", "npm", install, {
        cwd: project,
        timeout: 2 * MINUTE,
      });
      const commands = commandsIn(docs, recipe.heading);
      if (commands !== "") {
        took.commands = await run("the docs' commands", "bash", ["-euo", "pipefail", "-c", commands], {
          cwd: project,
          timeout: MINUTE,
        });
      }
      if (recipe.build) {
        const [command, args] = recipe.build;
        took.build = await run(`${recipe.name} build`, resolve(project, command), args, {
          cwd: project,
          timeout: 8 * MINUTE,
        });
      }
      timings[recipe.name] = took;
      session = await start({ root: join(project, recipe.output) });
    }, { timeout: 20 * MINUTE });

    after(async () => {
      await session?.close();
      if (scratch) await rm(scratch, { recursive: true, force: true });
    });

    it("was built from the docs' files, the tarball, and the versions the docs name", BOUNDED, async (t) => {
      const install =
        took.npmCi === undefined
          ? `node_modules linked from the fixture ${took.linkInstalled} ms`
          : `npm ci ${took.npmCi} ms`;
      t.diagnostic(`${install}, tarball ${took.installTarball} ms, build ${took.build ?? "-"} ms`);
      const json = async (...path) => JSON.parse(await readFile(join(...path), "utf8"));
      const tree = await json(project, "node_modules", ".package-lock.json");
      const installed = tree.packages["node_modules/rate-limit-demo"];
      assert.match(installed.resolved, /^file:.*\/target\/package\/rate-limit-demo-[^/]+\.tgz$/);
      const packed = await json(REPO, "packages", "rate-limit-demo", "package.json");
      assert.equal(installed.version, packed.version);
      const lock = await json(project, "package-lock.json");
      assert.equal(lock.packages["node_modules/rate-limit-demo"], undefined, "--no-save");
      const row = testedVersions(docs, recipe.heading);
      for (const [name, label] of Object.entries(recipe.tools)) {
        const { version } = await json(project, "node_modules", name, "package.json");
        assert.ok(row.includes(`${label} ${version}`), `the table says ${label} ${version}: ${row}`);
      }
      for (const [name, label] of Object.entries(recipe.python ?? {})) {
        const version = await pythonVersion(name);
        assert.ok(row.includes(`${label} ${version}`), `the table says ${label} ${version}: ${row}`);
      }
    });

    it("answers a reader pressing Hit: six 200s, then a 429 with Retry-After", BOUNDED, async () => {
      const { page, problems } = await visit({ path: recipe.page, clock: true });
      assert.deepEqual(await whenReady(page), [true]);
      await collectEvents(page);
      await assertSixThen429(page, await pressSeven(page));
      const screenshot = join(ARTIFACTS, `recipe-${recipe.fixture}.png`);
      await page.screenshot({ path: screenshot, fullPage: true });
      assert.deepEqual(problems, []);
    });

    it("loads the element's wasm from where the recipe puts it", BOUNDED, async () => {
      const { page, problems } = await visit({ path: recipe.page });
      assert.deepEqual(await whenReady(page), [true]);
      const loaded = await page.evaluate(() =>
        performance.getEntriesByType("resource").map(({ name }) => new URL(name).pathname),
      );
      const wasm = loaded.filter((path) => path.endsWith(".wasm"));
      assert.equal(wasm.length, 1, wasm.join("\n"));
      assert.match(wasm[0], recipe.wasm);
      assert.deepEqual(problems, []);
    });

    if (recipe.compare !== undefined) {
      it(`takes ${recipe.name}'s compare={true} as compare mode`, BOUNDED, async () => {
        const { page, problems } = await visit({ path: recipe.compare });
        assert.deepEqual(await whenReady(page), [true]);
        assert.equal(await page.locator('rate-limit-demo [part~="row"]').count(), 2);
        await collectEvents(page);
        await page.locator('rate-limit-demo [part~="hit"]').click();
        const [{ detail }] = await events(page);
        assert.deepEqual(
          detail.decisions.map(({ algorithm, status }) => [algorithm, status]),
          [
            ["floating", 200],
            ["sliding-log", 200],
          ],
        );
        assert.deepEqual(problems, []);
      });
    }

    if (recipe.home !== undefined) {
      const title = `works when reached by ${recipe.name}'s own navigation, and again after leaving`;
      it(title, BOUNDED, async () => {
        const link =
          recipe.link ??
          ((page) => page.getByRole("main").getByRole("link", { name: "Rate limits", exact: true }));
        // The home page, then the link, in a page of its own: whether the site's router took
        // the click (a client-side route change, not a new document), with what the visit
        // downloaded. A router may not be ready at the load event (Material's instant
        // navigation follows a link only once its sitemap is in, and a busy machine delays
        // that), and a click before it is an ordinary navigation, as a reader's would be: so
        // a visit whose click loaded a new document is tried again, a bounded number of
        // times, and the test fails if the router never takes the link.
        const reach = async () => {
          const visited = await visit({ path: recipe.home, clock: true });
          const { page } = visited;
          await page.waitForLoadState("load");
          // Playwright's network idle runs on real time, whatever the page's fake clock does.
          await page.waitForLoadState("networkidle");
          assert.equal(await page.locator("rate-limit-demo").count(), 0);
          // Marks this document, to tell a client-side route change from a new document.
          await page.evaluate(() => (window.__sameDocument = true));
          await collectEvents(page);
          // Counted from the network, since the fake clock hides the page's resource timings.
          const wasmRequests = [];
          page.on("request", (request) => {
            if (new URL(request.url()).pathname.endsWith(".wasm")) wasmRequests.push(request.url());
          });
          await link(page).click();
          await page.locator("rate-limit-demo").waitFor();
          assert.deepEqual(await whenReady(page), [true]);
          const routed = (await page.evaluate(() => window.__sameDocument)) === true;
          return { ...visited, wasmRequests, routed };
        };
        let visited = await reach();
        for (let attempt = 2; !visited.routed && attempt <= 3; attempt++) {
          await visited.close();
          visited = await reach();
        }
        const { page, problems, wasmRequests } = visited;
        const widget = page.locator("rate-limit-demo");
        assert.equal(visited.routed, true, "the site's router never took the link: each click loaded a new document");
        await widget.locator('[part~="hit"]').click();
        assert.deepEqual(
          (await events(page)).map(({ detail }) => detail.status),
          [200],
        );

        // Back to the first page and forward again by the link: the site's router puts in a
        // new widget, which the element, defined once, upgrades; it starts empty.
        await page.goBack();
        await widget.waitFor({ state: "detached" });
        await link(page).click();
        await widget.waitFor();
        assert.deepEqual(await whenReady(page), [true]);
        assert.equal(await page.evaluate(() => window.__sameDocument), true);
        await forgetEvents(page);
        await assertSixThen429(page, await pressSeven(page));
        // One WebAssembly download for the whole visit, however many widgets came and went.
        assert.equal(wasmRequests.length, 1, wasmRequests.join("\n"));
        assert.deepEqual(problems, []);
      });
    }

    if (recipe.scheme !== undefined) {
      it(`turns dark and back with ${recipe.name}'s dark mode switch`, BOUNDED, async () => {
        const { page, problems } = await visit({ path: recipe.page, colorScheme: "light" });
        // Wide enough that every tool shows its switch in the navigation bar, not a menu.
        await page.setViewportSize({ width: 1400, height: 900 });
        assert.deepEqual(await whenReady(page), [true]);
        assert.equal((await darkness(page)).dark, false, "light at first");
        await recipe.scheme(page, "dark");
        assert.deepEqual(await darkness(page), { colorScheme: "dark", dark: true }, "dark");
        await recipe.scheme(page, "light");
        assert.equal((await darkness(page)).dark, false, "light again");
        assert.deepEqual(problems, []);
      });
    }
  });
}
