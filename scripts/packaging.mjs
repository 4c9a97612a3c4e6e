// What each published artifact packs, checked the way its registry will see it: every crate
// through `cargo package --list`, the npm package through `npm pack --dry-run --json`. A
// crate packs only its own folder's source and licences (the core also its README and the
// Rust chapter its doc tests include); the npm package only its dist/, types, manifest,
// README and licences. A stray file (the widget in the Rust crate, a test in the tarball)
// fails `make publish-check` with the file's name.
//
//   node scripts/packaging.mjs            check every crate and the package
//
// Cargo.lock, Cargo.toml, Cargo.toml.orig and .cargo_vcs_info.json are what cargo itself
// writes into every package.

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const CARGO_OWN = /^(Cargo\.lock|Cargo\.toml|Cargo\.toml\.orig|\.cargo_vcs_info\.json)$/;
const LICENCES = /^LICENSE-(MIT|APACHE)$/;

/** What each publishable crate may pack, besides cargo's own files and the licences. */
export const CRATES = {
  "trickle-core": [/^src\/.+\.rs$/, /^README\.md$/, /^docs\/src\/rust\.md$/],
  "trickle-redis": [/^src\/.+\.(rs|lua)$/],
  "trickle-tower": [/^src\/.+\.rs$/],
  "trickle-cli": [/^src\/.+\.rs$/],
};

/** What the npm package may pack. */
export const PACKAGE = [
  /^dist\/[\w-]+\.(js|js\.map|wasm)$/,
  /^types\/[\w.-]+\.d\.ts$/,
  /^custom-elements\.json$/,
  /^package\.json$/,
  /^README\.md$/,
  LICENCES,
];

/** The files of `list` that none of `allowed` admits. */
export function strays(list, allowed) {
  return list.filter((file) => !allowed.some((pattern) => pattern.test(file)));
}

/** The files of a crate's package that are not its own. */
export function crateStrays(crate, list) {
  const own = CRATES[crate];
  if (!own) throw new Error(`${crate} is not a publishable crate; those are ${Object.keys(CRATES).join(", ")}`);
  return strays(list, [CARGO_OWN, LICENCES, ...own]);
}

function cargoList(crate) {
  const out = execFileSync("cargo", ["package", "--list", "--locked", "--allow-dirty", "-p", crate], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return out.split("\n").filter(Boolean);
}

function npmList(dir) {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8" });
  return JSON.parse(out)[0].files.map(({ path }) => path);
}

function main() {
  const root = fileURLToPath(new URL("..", import.meta.url));
  process.chdir(root);
  let failed = false;
  for (const crate of Object.keys(CRATES)) {
    const list = cargoList(crate);
    const bad = crateStrays(crate, list);
    console.log(`${crate}: ${list.length} files`);
    for (const file of bad) console.error(`  ${file}: not ${crate}'s own; add it to an exclude, or say why in scripts/packaging.mjs`);
    failed ||= bad.length > 0 || !list.includes("src/lib.rs") && !list.includes("src/main.rs");
  }
  const list = npmList("packages/rate-limit-demo");
  const bad = strays(list, PACKAGE);
  console.log(`rate-limit-demo: ${list.length} files`);
  for (const file of bad) console.error(`  ${file}: not part of the widget's package`);
  failed ||= bad.length > 0 || !list.includes("dist/rate-limit-demo.js") || !list.includes("dist/trickle_bg.wasm");
  if (failed) process.exit(1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
