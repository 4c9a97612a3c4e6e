// The README's way in before the first release, followed from its own code blocks: a docs
// author installs the tarball `make package` built and gets the widget working on a plain
// page; a Rust developer depends on the core by path and runs the README's example. Each
// block is read from README.md, so a README that drifts from what works fails here.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { REPO, collectEvents, events, open, pageWith, start, whenReady } from "./harness.mjs";

const run = promisify(execFile);
const README = await readFile(join(REPO, "README.md"), "utf8");
/** Where the README's commands assume the clone is, relative to the reader's project. */
const CLONE = "./trickle/";

/** The code blocks of `lang` in the README section that starts with `heading`. */
function blocks(heading, lang) {
  const start = README.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README.md has a section "${heading}"`);
  const end = README.indexOf("\n## ", start + 1);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);
}

let project;
before(async () => {
  project = await mkdtemp(join(tmpdir(), "trickle-readme-"));
});
after(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe("a docs author following the README before the release", () => {
  let session;
  before(async () => {
    const [commands] = blocks("For a docs author", "sh");
    assert.match(commands, /make -C trickle package/, "the README builds the package from the clone");
    const install = commands.split("\n").find((line) => line.startsWith("npm install "));
    assert.ok(install, "the README's sh block installs the tarball");
    const tarball = install.slice("npm install ".length).trim();
    assert.ok(tarball.startsWith(CLONE), `${tarball} is inside the clone`);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "docs-site", private: true }));
    await run("npm", ["install", "--no-audit", "--no-fund", "--offline", join(REPO, tarball.slice(CLONE.length))], {
      cwd: project,
    });
    const [snippet] = blocks("For a docs author", "html");
    await writeFile(join(project, "index.html"), pageWith(snippet, null));
    session = await start({ root: project });
  });
  after(() => session?.close());

  it("gets the widget on a plain page: 6 × 200, then a 429", async () => {
    const { page, problems, close } = await open(session, { path: "index.html", clock: true });
    await page.clock.pauseAt(24_000);
    assert.deepEqual(await whenReady(page), [true]);
    await collectEvents(page);
    const hit = page.locator('rate-limit-demo [part~="hit"]');
    for (let n = 0; n < 7; n++) await hit.click();
    const statuses = (await events(page)).map(({ detail }) => detail.status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429]);
    assert.deepEqual(problems, []);
    await close();
  });
});

describe("a Rust developer following the README before the release", () => {
  it("compiles and runs the README's example against the core, by path", async () => {
    const [manifest] = blocks("For a Rust developer", "toml");
    const [example] = blocks("For a Rust developer", "rust");
    assert.ok(manifest && example, "the README has the dependency and the example");
    const dependency = manifest.match(/^trickle-core = \{ path = "([^"]+)" \}$/m);
    assert.ok(dependency, `the README's dependency is a path one: ${manifest}`);
    const crate = join(project, "app");
    await mkdir(join(crate, "src"), { recursive: true });
    await writeFile(
      join(crate, "Cargo.toml"),
      `[package]\nname = "app"\nversion = "0.0.0"\nedition = "2021"\n\n[workspace]\n\n` +
        manifest.replace(dependency[1], REPO),
    );
    await writeFile(join(crate, "src", "main.rs"), `fn main() {\n${example}}\n`);
    const { stdout, stderr } = await run("cargo", ["run", "--quiet", "--offline"], {
      cwd: crate,
      env: { ...process.env, CARGO_TARGET_DIR: join(REPO, "target", "readme-example") },
    }).catch((error) => assert.fail(`cargo run failed:\n${error.stderr}`));
    assert.equal(stdout, "", stderr);
  });
});
