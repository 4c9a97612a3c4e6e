// The widget's words for each algorithm against the core's list of them.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import { TABLES, algorithmLabel, algorithmMeaning, algorithmNote } from "./algorithms.js";

const ANY = readFileSync(new URL("../../src/algorithms/any.rs", import.meta.url), "utf8");

/** The names `Algorithm::name` gives, and the variants `Algorithm::summary` describes. */
function rustAlgorithms() {
  const body = (fn) => ANY.match(new RegExp(`pub fn ${fn}\\(&self\\)[^{]*\\{([\\s\\S]*?)\\n    \\}`))?.[1] ?? "";
  const names = [...body("name").matchAll(/Algorithm::(\w+) => "([^"]+)"/g)];
  const summarised = new Set([...body("summary").matchAll(/Algorithm::(\w+) =>/g)].map(([, variant]) => variant));
  return names.map(([, variant, name]) => ({ variant, name, summarised: summarised.has(variant) }));
}

test("every algorithm the core names, and summarises, has a label, a note and a meaning", () => {
  const rust = rustAlgorithms();
  assert.ok(rust.length >= 4, "src/algorithms/any.rs: Algorithm::name read");
  for (const { variant, name, summarised } of rust) {
    assert.ok(summarised, `Algorithm::summary does not describe ${variant}`);
    for (const [table, entries] of Object.entries(TABLES)) {
      assert.ok(Object.hasOwn(entries, name), `algorithms.js: ${table} has no ${name}`);
    }
  }
});

test("no table describes an algorithm the core does not have", () => {
  const names = new Set(rustAlgorithms().map(({ name }) => name));
  for (const [table, entries] of Object.entries(TABLES)) {
    assert.deepEqual(Object.keys(entries).filter((name) => !names.has(name)), [], table);
  }
});

test("N and W are filled in with the limit's numbers, as whole words only", () => {
  assert.equal(algorithmNote("token-bucket", 6, "8 s"), "refills 6 every 8 s, evenly");
  assert.equal(algorithmNote("sliding-log", 6, "8 s"), "exact: every request of the last 8 s");
  assert.equal(
    algorithmMeaning("token-bucket", 150, "15 min"),
    "the bucket refills 150 tokens every 15 min, evenly",
  );
  assert.equal(algorithmMeaning("floating", 6, "8 s"), null, "the formula shows its terms");
});

test("an algorithm the core gains before these tables do is shown by its name", () => {
  assert.equal(algorithmLabel("leaky-bucket"), "leaky bucket");
  assert.equal(algorithmNote("leaky-bucket", 6, "8 s"), "");
  assert.equal(algorithmMeaning("leaky-bucket", 6, "8 s"), null);
});
