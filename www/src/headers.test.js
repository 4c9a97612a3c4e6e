// Live mode's header names against the servers that send them: a header renamed in Rust
// fails here rather than as "the server answered without X-Ratelimit-… headers" on a page.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import * as headers from "./headers.js";

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const ESI = read("src/serving/esi.rs");
const TOWER = read("crates/trickle-tower/src/answers.rs");
const SERVE = read("crates/trickle-cli/src/cli/serve/request.rs");

/** `pub const NAME: HeaderName = HeaderName::from_static("name");` in `source`. */
function headerConstant(source, name) {
  return source.match(new RegExp(`pub const ${name}: HeaderName = HeaderName::from_static\\("([^"]+)"\\)`))?.[1];
}

test("the X-Ratelimit-* names are the tower layer's constants", () => {
  for (const [js, rust] of [
    ["LIMIT", "X_RATELIMIT_LIMIT"],
    ["REMAINING", "X_RATELIMIT_REMAINING"],
    ["USED", "X_RATELIMIT_USED"],
    ["GROUP", "X_RATELIMIT_GROUP"],
  ]) {
    const sent = headerConstant(TOWER, rust);
    assert.ok(sent, `crates/trickle-tower/src/answers.rs has no ${rust}`);
    // HTTP header names are case-insensitive; the http crate keeps them in lower case.
    assert.equal(headers[js].toLowerCase(), sent, js);
  }
});

test("the names and their case are those src/serving/esi.rs writes", () => {
  const written = new Set([...ESI.matchAll(/\("((?:X-Ratelimit|Retry)-[\w-]+)",/g)].map(([, name]) => name));
  for (const name of [headers.LIMIT, headers.REMAINING, headers.USED, headers.RETRY_AFTER]) {
    assert.ok(written.has(name), `esi::headers writes no ${name}; it writes ${[...written].join(", ")}`);
  }
});

test("the client id is the header `trickle serve` keys its buckets by", () => {
  assert.equal(headers.CLIENT_ID.toLowerCase(), headerConstant(SERVE, "CLIENT_ID"));
});
