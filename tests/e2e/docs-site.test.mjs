// The docs site (`make docs`, an mdBook in docs/ built into target/docs/) and the README, as a
// reader follows them: every link between pages lands on a page and an anchor that exist,
// every link into the repository names a file that exists, the README stays short, and
// every widget on every page of the site becomes interactive with no console error.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { REPO, open, start, whenReady } from "./harness.mjs";

const DOCS = join(REPO, "target", "docs");
const SOURCES = join(REPO, "docs", "src");
const README_MOST_LINES = 250;

/**
 * The site's pages, relative to target/docs/: mdBook's own 404 page, print page (every
 * chapter again) and table of contents (the sidebar, for readers without JavaScript) aside.
 */
async function pages() {
  if (!existsSync(join(DOCS, "index.html"))) {
    throw new Error("target/docs/index.html is missing: run `make docs` first");
  }
  const entries = await readdir(DOCS, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".html"))
    .map((entry) => entry.name)
    .filter((name) => !["404.html", "print.html", "toc.html"].includes(name))
    .sort();
}

/** The ids a page's elements carry: the anchors a link may point at. */
function ids(html) {
  return new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => match[1]));
}

/** The `href`s of the links in a page's content (mdBook's own navigation is mdBook's). */
function contentLinks(html) {
  const main = html.match(/<main>([\s\S]*)<\/main>/);
  assert.ok(main, "the page has a <main>");
  return [...main[1].matchAll(/<a\s[^>]*href="([^"]+)"/g)].map((match) =>
    match[1].replaceAll("&amp;", "&"),
  );
}

/** Markdown links `[text](target)` outside code blocks and inline code. */
function markdownLinks(markdown) {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
}

const external = (target) => /^[a-z][a-z+.-]*:/i.test(target);

/**
 * Issue and pull request numbers (`#156`) cited in prose without a link to them: every other
 * project's issue the docs cite must be a link a reader can follow and check.
 */
function unlinkedIssues(markdown) {
  const prose = markdown
    .replace(/```[\s\S]*?```/g, "")
    .replace(/`[^`\n]*`/g, "")
    .replace(/\[[^\]]*#\d+[^\]]*\]\(https?:\/\/[^)\s]+\)/g, "");
  return [...prose.matchAll(/(?<![\w/&])#\d+\b/g)].map((match) =>
    prose.slice(Math.max(0, match.index - 30), match.index + match[0].length).replace(/\s+/g, " "),
  );
}

describe("the docs site", () => {
  it("links only to pages and anchors that exist", async () => {
    const broken = [];
    const names = await pages();
    const anchors = new Map();
    for (const name of names) anchors.set(name, ids(await readFile(join(DOCS, name), "utf8")));
    for (const name of names) {
      const html = await readFile(join(DOCS, name), "utf8");
      for (const href of contentLinks(html)) {
        if (external(href)) continue;
        const [path, anchor] = href.split("#");
        if (path.startsWith("../../")) continue; // into the repository: checked from the sources
        const target = path === "" ? name : relative(DOCS, resolve(DOCS, dirname(name), path));
        if (!anchors.has(target)) {
          broken.push(`${name}: ${href} (no page ${target})`);
        } else if (anchor && !anchors.get(target).has(anchor)) {
          broken.push(`${name}: ${href} (no #${anchor} in ${target})`);
        }
      }
    }
    assert.deepEqual(broken, [], "broken links in target/docs");
    assert.ok(names.length >= 10, `the site has its chapters: ${names.join(", ")}`);
  });

  it("names only files of the repository that exist", async () => {
    const broken = [];
    const files = (await readdir(SOURCES)).filter((name) => name.endsWith(".md"));
    for (const file of files) {
      for (const target of markdownLinks(await readFile(join(SOURCES, file), "utf8"))) {
        if (external(target) || target.startsWith("#")) continue;
        const path = target.split("#")[0];
        if (!existsSync(resolve(SOURCES, path))) broken.push(`docs/src/${file}: ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it("cites other projects' issues only as links", async () => {
    const unlinked = [];
    const files = (await readdir(SOURCES, { recursive: true })).filter((name) => name.endsWith(".md"));
    for (const file of files) {
      for (const cited of unlinkedIssues(await readFile(join(SOURCES, file), "utf8"))) {
        unlinked.push(`docs/src/${file}: …${cited}`);
      }
    }
    assert.deepEqual(unlinked, []);
    assert.deepEqual(unlinkedIssues("see upstash #157"), ["see upstash #157"], "the check finds a bare reference");
  });

  it("shows the measured figures of docs/figures/, with no placeholder left", async () => {
    const left = [];
    for (const name of await pages()) {
      if ((await readFile(join(DOCS, name), "utf8")).includes("{{fig")) left.push(name);
    }
    assert.deepEqual(left, [], "pages with a {{fig…}} placeholder not filled in");
    const bench = JSON.parse(await readFile(join(REPO, "docs", "figures", "bench.json"), "utf8"));
    const performance = await readFile(join(DOCS, "performance.html"), "utf8");
    assert.ok(
      performance.includes(`<code>make bench</code> on ${bench.date}`),
      "performance.html names the command and the date of the run",
    );
    const floating = bench.figures["direct.floating.ours"];
    assert.match(performance, new RegExp(`<td[^>]*>${floating}</td>`), "the benchmark table, from bench.json");
  });

  describe("in Chromium", () => {
    let session;
    before(async () => {
      session = await start({ root: DOCS });
    });
    after(() => session?.close());

    it("brings every widget on every page to ready, with no console error", async () => {
      let widgets = 0;
      for (const name of await pages()) {
        const { page, problems, close } = await open(session, { path: name });
        // A page without the widget never defines it: nothing to wait for there.
        const ready = (await page.locator("rate-limit-demo").count()) > 0 ? await whenReady(page) : [];
        widgets += ready.length;
        assert.ok(
          ready.every((value) => value === true),
          `${name}: every widget ready, got ${JSON.stringify(ready)}`,
        );
        assert.deepEqual(problems, [], `${name}: console`);
        await close();
      }
      assert.ok(widgets >= 5, `the site shows the widget on its pages (${widgets} found)`);
    });
  });
});

describe("the README", () => {
  it(`is at most ${README_MOST_LINES} lines`, async () => {
    const lines = (await readFile(join(REPO, "README.md"), "utf8")).split("\n").length;
    assert.ok(lines <= README_MOST_LINES, `README.md has ${lines} lines`);
  });

  it("cites other projects' issues only as links", async () => {
    assert.deepEqual(unlinkedIssues(await readFile(join(REPO, "README.md"), "utf8")), []);
  });

  it("links only to files and chapters that exist", async () => {
    const readme = await readFile(join(REPO, "README.md"), "utf8");
    const broken = markdownLinks(readme)
      .filter((target) => !external(target) && !target.startsWith("#"))
      .filter((target) => !existsSync(join(REPO, target.split("#")[0])));
    assert.deepEqual(broken, []);
  });
});
