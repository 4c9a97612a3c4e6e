// The demo page is written from one source: scripts/consumer-page.mjs renders the docs site's
// chapter docs/src/understanding.md into www/page.html's frame, and `make site` serves the
// result as target/site/index.html. This checks that the page served is the chapter as it
// stands, section for section, and that the renderer stops, naming the file and the line, at
// Markdown it does not render rather than print it wrong. No browser is needed.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  CHAPTER,
  PageError,
  fill,
  inline,
  page,
  readLines,
  renderChapter,
} from "../../scripts/consumer-page.mjs";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const SERVED = join(REPO, "target", "site", "index.html");

/** Lines of a Markdown text as if read from docs/src/test.md, with `files` to include. */
function linesOf(text, files = {}) {
  const root = join(REPO, "docs", "src");
  const all = { "test.md": text, ...files };
  return readLines(join(root, "test.md"), (path) => {
    const name = path.slice(root.length + 1);
    if (!(name in all)) throw new Error("no such file");
    return all[name];
  });
}

const renderError = (text, files) => {
  try {
    renderChapter(linesOf(text, files));
  } catch (error) {
    if (error instanceof PageError) return error.message;
    throw error;
  }
  assert.fail("the renderer accepted it");
};

describe("the demo page", () => {
  it("is what docs/src/understanding.md gives now (run `make site` after editing it)", async () => {
    if (!existsSync(SERVED)) throw new Error("target/site/index.html is missing: run `make site` first");
    assert.ok((await readFile(SERVED, "utf8")) === page(), "target/site/index.html is stale: run `make site`");
  });

  it("has a section for each ## heading of the chapter, in its order, and no other", async () => {
    const chapter = await readFile(CHAPTER, "utf8");
    const headings = [...chapter.matchAll(/^## (.*?)(?: \{#[\w-]+\})?$/gm)].map(([, title]) =>
      title.replace(/`/g, ""),
    );
    const served = page();
    const sections = [...served.matchAll(/<h2 id="[\w-]+-title">(.*?)<\/h2>/g)].map(([, html]) =>
      html.replace(/<[^>]*>/g, ""),
    );
    assert.ok(headings.length >= 5, `the chapter has its sections: ${headings}`);
    assert.deepEqual(sections, headings);
  });
});

describe("scripts/consumer-page.mjs", () => {
  it("renders the Markdown the chapter uses", () => {
    const { title, lede, sections } = renderChapter(
      linesOf(
        [
          "# A `title`",
          "",
          "The lede, *emphasised*,",
          "over two lines.",
          "",
          "## First {#first}",
          "",
          "Text with **strong**, `a | pipe` and [a link](https://example.com/?a=1&b=2) and",
          "[a chapter](other.md#x) and [an anchor](#first); 6.5 > 6 & <q>quoted</q>.",
          "",
          "1. one,",
          "   continued",
          "2. two",
          "",
          "| a | b |",
          "|---|--:|",
          "| `x \\| y` | 2 |",
          "",
          "```rust,ignore",
          "{{#include code.rs}}",
          "```",
          "",
          '<script type="module" src="rate-limit-demo.js"></script>',
          "",
          '<rate-limit-demo limit="6/8s"></rate-limit-demo>',
          "",
          "### Sub heading",
          "",
          "{{#include part.md}}",
        ].join("\n"),
        { "code.rs": "fn main() {}\nlet a = 1 < 2;\n", "part.md": "- an\n- included list\n" },
      ),
    );
    assert.equal(title, "A <code>title</code>");
    assert.equal(lede, '<p class="lede">The lede, <em>emphasised</em>, over two lines.</p>');
    assert.equal(sections.length, 1);
    assert.equal(sections[0].id, "first");
    assert.deepEqual(sections[0].html, [
      '<p>Text with <strong>strong</strong>, <code>a | pipe</code> and <a href="https://example.com/?a=1&amp;b=2">a link</a> and a chapter and <a href="#first">an anchor</a>; 6.5 &gt; 6 &amp; <q>quoted</q>.</p>',
      "<ol>\n  <li>one, continued</li>\n  <li>two</li>\n</ol>",
      [
        '<div class="table-wrap" role="region" aria-label="First (table)" tabindex="0">',
        "  <table>",
        '    <thead><tr><th scope="col">a</th><th scope="col" class="num">b</th></tr></thead>',
        "    <tbody>",
        '      <tr><td><code>x | y</code></td><td class="num">2</td></tr>',
        "    </tbody>",
        "  </table>",
        "</div>",
      ].join("\n"),
      '<pre tabindex="0"><code class="language-rust">fn main() {}\nlet a = 1 &lt; 2;</code></pre>',
      '<figure class="demo">\n<rate-limit-demo limit="6/8s"></rate-limit-demo>\n</figure>',
      '<h3 id="sub-heading">Sub heading</h3>',
      "<ul>\n  <li>an</li>\n  <li>included list</li>\n</ul>",
    ]);
  });

  it("keeps a line starting with a number as part of its paragraph, as CommonMark does", () => {
    const { sections } = renderChapter(linesOf("# T\n\n## S\n\nthe 5 tokens do not apply to a\n429. The 0 is ours.\n"));
    assert.deepEqual(sections[0].html, ["<p>the 5 tokens do not apply to a 429. The 0 is ours.</p>"]);
  });

  it("links out and within the page, and keeps only the text of links to other chapters", () => {
    assert.equal(inline("[x](algorithms.md#a)"), "x");
    assert.equal(inline("[x](https://a.example/)"), '<a href="https://a.example/">x</a>');
    assert.equal(inline("[x](#a)"), '<a href="#a">x</a>');
  });

  // prettier-ignore
  const refused = [
    ["a block quote", "# T\n\n## S\n\n> quoted\n", /^docs\/src\/test\.md:5: a block quote is not something scripts\/consumer-page\.mjs renders; it renders headings/],
    ["a horizontal rule", "# T\n\n## S\n\n---\n", /^docs\/src\/test\.md:5: a horizontal rule is not something/],
    ["an indented code block", "# T\n\n## S\n\n    code\n", /^docs\/src\/test\.md:5: an indented code block is not something/],
    ["a list inside a list", "# T\n\n## S\n\n- a\n  - b\n", /^docs\/src\/test\.md:6: a list inside a list is not something/],
    ["a code block never closed", "# T\n\n## S\n\n```js\nx\n", /^docs\/src\/test\.md:5: this code block is never closed/],
    ["a table row of the wrong width", "# T\n\n## S\n\n| a | b |\n|---|---|\n| 1 |\n", /^docs\/src\/test\.md:7: this table row has 1 cells, the header 2/],
    ["no title", "## S\n\ntext\n", /^docs\/src\/test\.md:1: the chapter must start with its # title/],
    ["two headings with one id", "# T\n\n## S {#s}\n\n## S again {#s}\n", /^docs\/src\/test\.md:5: a second heading with the id "s"/],
    ["an include of a file that is not there", "# T\n\n## S\n\n{{#include gone.md}}\n", /^docs\/src\/gone\.md cannot be read \(included by docs\/src\/test\.md\)/],
    ["an include of part of a file", "# T\n\n## S\n\n{{#include code.rs:main}}\n", /^docs\/src\/test\.md:5: \{\{#include code\.rs:main\}\}: only whole files are included/],
  ];
  for (const [name, text, message] of refused) {
    it(`stops at ${name}, naming the file and the line`, () => {
      assert.match(renderError(text), message);
    });
  }

  it("fills every part of the frame, and stops at a frame missing one or naming another", () => {
    const parts = { title: "T", lede: "", sections: [{ id: "s", title: "S", html: ["<p>x</p>"] }] };
    const frame = "{{title}} {{heading}} {{lede}} {{contents}} {{sections}}";
    assert.equal(
      fill(frame, parts),
      'T T  <li><a href="#s">S</a></li> <section id="s" aria-labelledby="s-title">\n<h2 id="s-title">S</h2>\n<p>x</p>\n</section>',
    );
    assert.throws(() => fill("{{title}} {{heading}} {{lede}} {{contents}}", parts), /www\/page\.html has no place for \{\{sections\}\}/);
    assert.throws(() => fill(`${frame} {{footer}}`, parts), /\{\{footer\}\} is not a part of the page/);
  });
});
