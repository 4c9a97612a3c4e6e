// docs/src/reference.md, the widget's reference page, against what it is generated from and
// what it describes: the committed page, and the attribute table of the package's README,
// are what scripts/reference.mjs writes today; every
// attribute the element observes has a row, and no other; the `Decision` table lists exactly
// the fields a decision of the limiter carries; and the generator stops with a message naming
// the input to fix rather than writing a page with a hole in it. No browser is needed: the
// package's element.js and limiter.js both load under Node.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const PAGE = join(REPO, "docs", "src", "reference.md");
const GENERATOR = join(REPO, "scripts", "reference.mjs");
const PACKAGE = join(REPO, "packages", "rate-limit-demo");
const DIST = join(PACKAGE, "dist");
const STALE =
  "docs/src/reference.md is stale: run `node scripts/reference.mjs --write docs/src/reference.md`";
const README = join(PACKAGE, "README.md");

for (const file of ["custom-elements.json", "dist/element.js", "dist/limiter.js"]) {
  if (!existsSync(join(PACKAGE, file))) {
    throw new Error(`packages/rate-limit-demo/${file} is missing: run \`make package\` first`);
  }
}

/** The lines from `heading` to the next heading of the same level or above. */
function section(markdown, heading) {
  const lines = markdown.split("\n");
  const start = lines.indexOf(heading);
  assert.notEqual(start, -1, `docs/src/reference.md has no heading "${heading}"`);
  const level = heading.match(/^#+/)[0].length;
  const end = lines.findIndex(
    (line, i) => i > start && /^#+ /.test(line) && line.match(/^#+/)[0].length <= level,
  );
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The names in the first column of the section's table: `a`, `b` gives both. */
function firstColumn(markdown, heading) {
  const rows = section(markdown, heading).filter((line) => line.startsWith("|"));
  return rows.slice(2).flatMap((row) => {
    const [first] = row.slice(1, -1).split(/(?<!\\)\|/);
    return [...first.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
  });
}

/** Fails unless `listed` and `actual` hold the same names, saying which differ and the fix. */
function assertSameNames(listed, actual, fix) {
  const missing = actual.filter((name) => !listed.includes(name));
  const extra = listed.filter((name) => !actual.includes(name));
  assert.ok(
    missing.length === 0 && extra.length === 0,
    `${fix} (missing from the page: ${missing.join(", ") || "none"}; ` +
      `on the page only: ${extra.join(", ") || "none"})`,
  );
}

async function generate(script = GENERATOR) {
  return run(process.execPath, [script], { maxBuffer: 1 << 24 });
}

describe("docs/src/reference.md", async () => {
  const page = await readFile(PAGE, "utf8");

  it("is what scripts/reference.mjs writes from the package as built", async () => {
    const { stdout } = await generate();
    assert.ok(page === stdout, STALE);
  });

  it("holds the attribute table the package's README shows, which has no copy of its own", async () => {
    const { readme } = await import(pathToFileURL(GENERATOR).href);
    const current = await readFile(README, "utf8");
    assert.ok(
      current === readme(current),
      "packages/rate-limit-demo/README.md's attribute table is stale: run `node scripts/reference.mjs --readme` (`make package` does)",
    );
    const marked = current.slice(current.indexOf("<!-- The attribute table"), current.indexOf("<!-- The end of the attribute table"));
    const shown = marked.split("\n").filter((line) => line.startsWith("|"));
    assert.ok(shown.length > 2, "the README shows the attribute table between its markers");
    assert.deepEqual(shown, section(page, "## Attributes").filter((line) => line.startsWith("|")));
  });

  it("has a row for every attribute the element observes, and for no other", async () => {
    // element.js touches no DOM until an element is made, so Node can read the class.
    const { RateLimitDemo } = await import(pathToFileURL(join(DIST, "element.js")).href);
    assertSameNames(
      firstColumn(page, "## Attributes"),
      [...RateLimitDemo.observedAttributes],
      "the Attributes table and RateLimitDemo.observedAttributes differ: give each observed " +
        "attribute an @attr tag in www/src/element.js, run `make package`, regenerate the page",
    );
  });

  it("lists under `Decision` exactly the fields a decision of the limiter has", async () => {
    const { load, Limiter } = await import(pathToFileURL(join(DIST, "limiter.js")).href);
    await load();
    const limiter = new Limiter({ limit: "6/8s" });
    const decision = limiter.hit(0);
    limiter.free();
    assertSameNames(
      firstColumn(page, "### From `Decision`"),
      Object.keys(decision),
      "the Decision table and the fields of Limiter#hit's decision differ: fix the Decision " +
        "interface in packages/rate-limit-demo/types/limiter.d.ts, regenerate the page",
    );
  });
});

describe("scripts/reference.mjs, given inputs it cannot use, exits 1 and names the fix", () => {
  /** Each row breaks one input of a copy of the generator and its package. */
  // prettier-ignore
  const cases = [
    ["no manifest", async (dir) => rm(join(dir, "custom-elements.json")), /custom-elements\.json is missing: run `make package`/],
    ["no CSS parts", (dir) => editManifest(dir, (element) => delete element.cssParts), /no CSS parts .*@csspart/],
    ["no events", (dir) => editManifest(dir, (element) => (element.events = [])), /no events .*@fires/],
    ["no Decision interface", async (dir) => rm(join(dir, "types", "limiter.d.ts")), /interface Decision not found/],
  ];

  async function editManifest(dir, change) {
    const path = join(dir, "custom-elements.json");
    const manifest = JSON.parse(await readFile(path, "utf8"));
    const declarations = manifest.modules.flatMap((module) => module.declarations);
    change(declarations.find((declaration) => declaration.customElement));
    await writeFile(path, JSON.stringify(manifest));
  }

  for (const [name, breakIt, message] of cases) {
    it(name, async () => {
      const scratch = await mkdtemp(join(tmpdir(), "trickle-reference-"));
      try {
        const copy = join(scratch, "packages", "rate-limit-demo");
        await cp(GENERATOR, join(scratch, "scripts", "reference.mjs"));
        // The generator reads the types with www/'s TypeScript.
        await mkdir(join(scratch, "www"));
        await symlink(join(REPO, "www", "node_modules"), join(scratch, "www", "node_modules"));
        await cp(join(PACKAGE, "custom-elements.json"), join(copy, "custom-elements.json"));
        await cp(join(PACKAGE, "types"), join(copy, "types"), { recursive: true });
        await breakIt(copy);
        const error = await generate(join(scratch, "scripts", "reference.mjs")).then(
          () => assert.fail("the generator succeeded"),
          (error) => error,
        );
        assert.equal(error.code, 1);
        assert.match(error.stderr, new RegExp(`^reference: .*${message.source}`, "m"));
        assert.equal(error.stdout, "");
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    });
  }
});
