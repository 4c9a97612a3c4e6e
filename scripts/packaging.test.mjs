// The packing rules of scripts/packaging.mjs on lists written here, so that a rule that lets
// a stray file through fails in seconds, without packing anything.

import assert from "node:assert/strict";
import test from "node:test";

import { PACKAGE, crateStrays, strays } from "./packaging.mjs";

test("the core packs its source, README, Rust chapter and licences, nothing else", () => {
  const own = ["Cargo.toml", "Cargo.lock", "LICENSE-MIT", "README.md", "docs/src/rust.md", "src/lib.rs", "src/values/limit.rs"];
  assert.deepEqual(crateStrays("trickle-core", own), []);
  const stray = ["www/src/element.js", "tests/settle.rs", "docs/src/redis.md", "crates/trickle-redis/src/lib.rs", "Makefile"];
  assert.deepEqual(crateStrays("trickle-core", [...own, ...stray]), stray);
});

test("a member crate packs only its own source; Lua only for the Redis crate", () => {
  assert.deepEqual(crateStrays("trickle-redis", ["src/lib.rs", "src/floating.lua"]), []);
  assert.deepEqual(crateStrays("trickle-tower", ["src/lib.rs", "src/floating.lua", "README.md"]), [
    "src/floating.lua",
    "README.md",
  ]);
  assert.throws(() => crateStrays("trickle-wasm", []), /not a publishable crate; those are trickle-core/);
});

test("the npm package holds the widget and its types, not its tests or sources", () => {
  const own = ["dist/rate-limit-demo.js", "dist/rate-limit-demo.js.map", "dist/trickle_bg.wasm", "types/index.d.ts", "package.json", "README.md", "custom-elements.json"];
  assert.deepEqual(strays(own, PACKAGE), []);
  const stray = ["dist/sub/x.js", "src/element.js", "dist/element.test.js", "www/src/fakes.js"];
  assert.deepEqual(strays([...own, ...stray], PACKAGE), stray);
});
