// The widget embedded in a real mdBook, the way docs/src/embedding.md tells a docs author to do
// it: the package's dist/ files copied into the book's src/, its two-line snippet in a chapter,
// `mdbook build`. The book (tests/recipes/mdbook/) is built here into a scratch folder, served on
// 127.0.0.1, and read in Chromium: the widget answers, at the chapter's text size and in the
// colours of mdBook's theme, and mdBook's page around it keeps working.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { ARTIFACTS, REPO, SITE, collectEvents, events, open, start, whenReady, widgetLook } from "./harness.mjs";

const BOOK = join(REPO, "tests", "recipes", "mdbook");
const CHAPTER = "rate-limits.html";
/** What the docs tell authors to copy next to their pages: the package's dist/ files. */
const WIDGET_FILES = ["rate-limit-demo.js", "compare.js", "trickle_bg.wasm"];
/** A window boundary of 6/8s, late enough that the page has loaded on the fake clock. */
const START = 24_000;

let scratch;
let session;
before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "trickle-mdbook-"));
  const book = join(scratch, "book");
  await cp(BOOK, book, { recursive: true });
  for (const file of WIDGET_FILES) {
    await cp(join(SITE, file), join(book, "src", file));
  }
  const site = join(scratch, "site");
  await buildBook(book, site);
  session = await start({ root: site });
});
after(async () => {
  await session?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Runs `mdbook build`, saying how to get mdbook when it is missing. */
async function buildBook(book, site) {
  const mdbook = process.env.MDBOOK ?? "mdbook";
  try {
    await promisify(execFile)(mdbook, ["build", book, "--dest-dir", site]);
  } catch (error) {
    if (error.code === "ENOENT") {
      throw new Error(`${mdbook} is not on PATH: scripts/setup.sh browser installs it`);
    }
    throw new Error(`mdbook build failed:\n${error.stderr ?? error.message}`);
  }
}

/** Picks `theme` from mdBook's own theme menu, as a reader would, and closes the menu. */
async function chooseTheme(page, theme) {
  await page.locator("#mdbook-theme-toggle").click();
  await page.locator(`#mdbook-theme-${theme}`).click();
  await page.keyboard.press("Escape");
  await page.locator("#mdbook-theme-list").waitFor({ state: "hidden" });
  await page.waitForFunction((theme) => document.documentElement.classList.contains(theme), theme);
}

describe("the widget in an mdBook", () => {
  it("the chapter embeds it with docs/src/embedding.md's mdBook snippet", async () => {
    const docs = await readFile(join(REPO, "docs", "src", "embedding.md"), "utf8");
    const section = docs.slice(docs.indexOf("\n## mdBook\n"));
    const snippet = section.match(/```html\n(<script type="module"[^`]*<\/rate-limit-demo>)\n```/)?.[1];
    assert.ok(snippet, "docs/src/embedding.md gives the mdBook snippet in an html code block");
    const chapter = await readFile(join(BOOK, "src", "rate-limits.md"), "utf8");
    assert.ok(chapter.includes(snippet), `the chapter holds exactly:\n${snippet}`);
  });

  it("answers a reader pressing Hit: six 200s, then a 429 with Retry-After", async () => {
    const { page, problems } = await open(session, { path: CHAPTER, clock: true });
    assert.deepEqual(await whenReady(page), [true]);
    await collectEvents(page);
    await page.clock.pauseAt(START);
    const widget = page.locator("rate-limit-demo");
    const hit = widget.locator('[part~="hit"]');
    for (let press = 0; press < 7; press++) await hit.click();

    const statuses = (await events(page)).map(({ detail }) => detail.status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429]);
    // The six slide out of the last 8 s from 32 s on; one token fits once
    // 6 × (8000 − e)/8000 + 1 ≤ 6, at e = 1334 ms: 9334 ms after 24 s, 10 s in the header.
    assert.equal((await events(page)).at(-1).detail.retryAfterMs, 9_334);
    assert.match(
      await widget.locator('[part~="answer"]').textContent(),
      /^429 Too Many Requests · Retry-After: 10\b/,
    );
    await page.screenshot({ path: join(ARTIFACTS, "mdbook-chapter.png"), fullPage: true });
    assert.deepEqual(problems, []);
  });

  it("draws its text at the chapter's text size, though mdBook's root font is 62.5 %", async () => {
    const { page, problems } = await open(session, { path: CHAPTER });
    await whenReady(page);
    const sizes = await page.evaluate(() => {
      const size = (element) => parseFloat(getComputedStyle(element).fontSize);
      const widget = document.querySelector("rate-limit-demo");
      return {
        root: size(document.documentElement),
        prose: size(document.querySelector("#mdbook-content main p")),
        widget: size(widget),
        answer: size(widget.shadowRoot.querySelector('[part~="answer"]')),
      };
    });
    assert.equal(sizes.root, 10, "mdBook sets html { font-size: 62.5% }");
    assert.equal(sizes.widget, sizes.prose, "the widget's text is the chapter's");
    // The answer line is 15/16 of the widget's text, as on any page.
    assert.equal(sizes.answer, sizes.prose * 0.9375);
    assert.deepEqual(problems, []);
  });

  it("leaves mdBook's page working: the contents, the theme menu, the search bar", async () => {
    const { page, problems } = await open(session, { path: CHAPTER });
    await whenReady(page);
    // At this width mdBook starts with its table of contents folded away.
    const contents = page.locator("#mdbook-sidebar").getByRole("link", { name: "Rate limits" });
    assert.equal(await contents.isVisible(), false);
    await page.locator("#mdbook-sidebar-toggle").click();
    await assert.doesNotReject(contents.waitFor(), "the toggle shows the table of contents");
    await chooseTheme(page, "coal");
    await page.locator("#mdbook-search-toggle").click();
    // mdBook searches on keyup, so type rather than fill.
    await page.locator("#mdbook-searchbar").pressSequentially("trickle");
    await assert.doesNotReject(
      page.locator("#mdbook-searchresults").getByRole("link").first().waitFor(),
      "the search finds the chapter",
    );
    assert.deepEqual(problems, []);
  });

  it("turns dark with mdBook's dark themes and light with its light ones", async () => {
    const { page, problems } = await open(session, { path: CHAPTER, colorScheme: "light" });
    await whenReady(page);
    const looks = {};
    for (const theme of ["navy", "light", "coal", "rust", "ayu"]) {
      await chooseTheme(page, theme);
      looks[theme] = await widgetLook(page);
    }
    for (const theme of ["navy", "coal", "ayu"]) {
      assert.equal(looks[theme].colorScheme, "dark", theme);
      assert.ok(looks[theme].luma < 64, `${theme}: a dark card, luma ${looks[theme].luma}`);
    }
    for (const theme of ["light", "rust"]) {
      assert.notEqual(looks[theme].colorScheme, "dark", theme);
      assert.ok(looks[theme].luma > 192, `${theme}: a light card, luma ${looks[theme].luma}`);
    }
    assert.deepEqual(problems, []);
  });

  it("follows the reader's dark setting through mdBook's Auto theme", async () => {
    const { page, problems } = await open(session, { path: CHAPTER, colorScheme: "dark" });
    await whenReady(page);
    const look = await widgetLook(page);
    assert.equal(look.colorScheme, "dark");
    assert.ok(look.luma < 64, `a dark card, luma ${look.luma}`);
    await page.locator("rate-limit-demo").scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, "mdbook-dark.png") });
    assert.deepEqual(problems, []);
  });
});
