// No tracked file holds a path of the machine it was built on (/work/main/…, /home/me/…,
// /tmp/…): such a path works on one machine and breaks, or leaks a user name, everywhere
// else. A file that must name one (an example of a temporary folder, say) goes in ALLOWED
// with the reason.
//
//   node --test scripts      (make js-unit)

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** The roots of a build machine's own folders, at the start of a path. */
const MACHINE_PATH = /(?<![\w.~-])(?:\/(?:work|home|tmp|root|Users)\/|[A-Z]:\\Users\\)[^\s"'`)]*/g;

/** Tracked files that may hold such a path, each with why. */
const ALLOWED = {
  "scripts/machine-paths.test.mjs": "names the folders it looks for",
};

function trackedFiles() {
  return execFileSync("git", ["ls-files", "-z"], { cwd: REPO, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
}

test("no tracked file holds an absolute path of the machine it was made on", () => {
  const found = [];
  for (const file of trackedFiles()) {
    if (Object.hasOwn(ALLOWED, file)) continue;
    let text;
    try {
      text = readFileSync(join(REPO, file), "utf8");
    } catch {
      continue; // listed but absent: a file deleted and not yet staged
    }
    if (text.includes("\0")) continue; // binary
    text.split("\n").forEach((line, index) => {
      for (const [path] of line.matchAll(MACHINE_PATH)) found.push(`${file}:${index + 1}: ${path}`);
    });
  }
  assert.deepEqual(found, [], "write these relative to the repository, or pass them in");
});

test("the pattern finds the paths it is for, and not URLs or relative paths", () => {
  const match = (text) => [...text.matchAll(MACHINE_PATH)].map(([path]) => path);
  assert.deepEqual(match('"customElements": "/work/main/target/cem/custom-elements.json"'), [
    "/work/main/target/cem/custom-elements.json",
  ]);
  assert.deepEqual(match("cd /home/ci/src && ls /tmp/x"), ["/home/ci/src", "/tmp/x"]);
  assert.deepEqual(match("https://example.com/work/a ../tmp/b ~/work/c target/tmp/d"), []);
});
