// The docs' figures (scripts/figures.mjs): a tiny book built by mdbook with the preprocessor
// gets every placeholder replaced by the figure its file holds, and fails to build on a
// placeholder no file holds; the check finds a measured-looking number stated by hand and
// leaves alone what is code, arithmetic or a placeholder. Runs without a browser, after
// `make docs` has put mdbook in place.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";

import { fill, loadFigures, unsourced } from "../../scripts/figures.mjs";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const PREPROCESSOR = join(REPO, "scripts", "figures.mjs");

/** Figure files as the measuring commands write them, small enough to read at a glance. */
const FIXTURE_FIGURES = {
  bench: {
    command: "make bench",
    date: "2026-01-02",
    machine: "2 × Test CPU",
    figures: { "direct.floating.ratio": "0.73×", "tti.ready.ours": "131.2 ms" },
    tables: { benchmarks: "| figure | ours |\n|---|---:|\n| one bucket | 15.0 ns |" },
  },
};

describe("filling placeholders", () => {
  it("puts in each figure, table and source, and reports what no file holds", () => {
    const text = [
      "One bucket: {{fig:bench.direct.floating.ratio}} governor's time.",
      "{{fig-table:bench.benchmarks}}",
      "This table was {{fig-source:bench}}.",
      "Missing: {{fig:bench.direct.nothing}} and {{fig:nofile.key}}.",
    ].join("\n\n");
    const { filled, errors } = fill(text, FIXTURE_FIGURES, "page.md");
    assert.match(filled, /One bucket: 0\.73× governor's time\./);
    assert.match(filled, /\| one bucket \| 15\.0 ns \|/);
    assert.match(filled, /This table was measured by `make bench` on 2026-01-02 \(2 × Test CPU\)\./);
    assert.equal(errors.length, 2, errors.join("\n"));
    assert.match(errors[0], /page\.md: \{\{fig:bench\.direct\.nothing\}\}: .* no figure "direct\.nothing" \(near it: direct\.floating\.ratio\)/);
    assert.match(errors[1], /no figure file docs\/figures\/nofile\.json/);
  });
});

describe("the check for figures stated by hand", () => {
  let pages;
  before(async () => {
    pages = await mkdtemp(join(tmpdir(), "trickle-figures-pages-"));
    await writeFile(
      join(pages, "fixture.md"),
      [
        "A decision takes 15.0 ns, 2.3× governor's, and 44.7% are denied at 1,200 requests/s.",
        "The page weighs 27,120 B and the table 102,760,448 bytes.",
        "",
        "Arithmetic is not a measurement: 4 × 0.625 = 2.5 tokens; a limit of 500 ms is a setting.",
        "Nor is code: `12.5 ms`, or a placeholder: {{fig:bench.tti.ready.ours}}.",
        "",
        "```text",
        "27,120 B in a code block",
        "```",
      ].join("\n"),
    );
  });
  after(() => rm(pages, { recursive: true, force: true }));

  it("finds each measured-looking number in prose, and nothing in code or arithmetic", () => {
    assert.deepEqual(unsourced(pages), [
      "fixture.md:1: 15.0 ns",
      "fixture.md:1: 2.3×",
      "fixture.md:1: 44.7%",
      "fixture.md:1: 1,200 requests/s",
      "fixture.md:2: 27,120 B",
      "fixture.md:2: 102,760,448 bytes",
    ]);
  });

  it("finds nothing on any page of the docs site", () => {
    assert.deepEqual(unsourced(), []);
  });
});

describe("a book built with the preprocessor", () => {
  let scratch;
  const mdbook = process.env.MDBOOK ?? "mdbook";

  /** Writes a one-chapter book whose chapter is `chapter`, builds it; its HTML, or the error. */
  async function build(chapter) {
    const book = await mkdtemp(join(scratch, "book-"));
    await mkdir(join(book, "src"));
    await writeFile(
      join(book, "book.toml"),
      `[book]\ntitle = "figures"\nsrc = "src"\n\n[preprocessor.figures]\ncommand = ${JSON.stringify(`node ${PREPROCESSOR}`)}\n\n[output.html]\n`,
    );
    await writeFile(join(book, "src", "SUMMARY.md"), "# Summary\n\n- [Chapter](chapter.md)\n");
    await writeFile(join(book, "src", "chapter.md"), chapter);
    try {
      await promisify(execFile)(mdbook, ["build", book, "--dest-dir", join(book, "out")]);
    } catch (error) {
      if (error.code === "ENOENT") throw new Error(`${mdbook} is not on PATH: scripts/setup.sh book installs it`);
      return { error: `${error.stderr ?? ""}${error.stdout ?? ""}` };
    }
    return { html: await readFile(join(book, "out", "chapter.html"), "utf8") };
  }

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "trickle-figures-book-"));
  });
  after(() => rm(scratch, { recursive: true, force: true }));

  it("shows the figures of docs/figures/ in place of the placeholders", async () => {
    const bench = loadFigures().bench;
    const { html, error } = await build(
      "# Chapter\n\nOne bucket: {{fig:bench.direct.floating.ratio}} governor's time.\n\n" +
        "{{fig-table:bench.benchmarks}}\n\nThis table was {{fig-source:bench}}.\n",
    );
    assert.equal(error, undefined, error);
    assert.doesNotMatch(html, /\{\{fig/, "a placeholder left in the page");
    assert.ok(html.includes(`One bucket: ${bench.figures["direct.floating.ratio"]} governor`), "the figure");
    assert.match(html, new RegExp(`<td[^>]*>${bench.figures["direct.floating.ours"]}</td>`), "the table, as a table");
    assert.ok(html.includes(`<code>make bench</code> on ${bench.date}`), "the command and the date");
  });

  it("fails to build on a placeholder no figure file holds, naming it", async () => {
    const { html, error } = await build("# Chapter\n\nGone: {{fig:bench.no.such.figure}}.\n");
    assert.equal(html, undefined, "the book was built");
    assert.match(error, /chapter\.md: \{\{fig:bench\.no\.such\.figure\}\}: docs\/figures\/bench\.json has no figure/);
  });
});
