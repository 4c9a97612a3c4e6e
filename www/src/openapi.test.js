// The limit from an OpenAPI document, read without a server: documents served by a fake
// fetch, one row per way a document, a route or an x-rate-limit can be wrong, each with the
// message the widget shows; the server chapter's own examples read back as the policies it
// says they are; and an ESI-shaped document, templates and all.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import { TIMEOUT_MS, readRateLimit, readRoute, readSpec, samePolicy } from "./openapi.js";

const CORE = readFileSync(new URL("../../src/values/policy.rs", import.meta.url), "utf8");
const SERVER_DOCS = readFileSync(new URL("../../docs/src/server.md", import.meta.url), "utf8");

const BASE = "https://docs.example.com/guide/limits.html";

/** A document whose one route, GET /markets/prices, carries `extension` as its x-rate-limit. */
const withLimit = (extension) => ({
  openapi: "3.1.0",
  paths: { "/markets/prices": { get: { summary: "prices", "x-rate-limit": extension } } },
});

/** A fetch that answers every request with `body` (JSON unless a string) and `status`. */
function serving(body, { status = 200 } = {}) {
  const calls = [];
  const fetch = async (url, options) => {
    calls.push({ url: String(url), mode: options.mode });
    return new Response(typeof body === "string" ? body : JSON.stringify(body), { status });
  };
  return Object.assign(fetch, { calls });
}

/** A fetch that fails as the browser fails a request: `reachable`, the server answers no-cors requests. */
function failing({ reachable }) {
  return async (url, { mode }) => {
    if (mode === "no-cors" && reachable) return new Response(null, { status: 200 });
    throw new TypeError("Failed to fetch");
  };
}

let documents = 0;
/** A URL no other test has used: the module keeps each document once per page. */
const freshUrl = () => `https://api.example.com/v${++documents}/openapi.json`;

/** readSpec for `route` on a fresh URL served by `fetch`. */
const read = (fetch, route = "GET /markets/prices", more = {}) =>
  readSpec({ openapi: freshUrl(), route, base: BASE, fetch, ...more });

test("MAX_LIMITS and MAX_NAME_LEN are the core's", async () => {
  const max = Number(CORE.match(/pub const MAX_LIMITS: usize = (\d+);/)[1]);
  const longest = Number(CORE.match(/pub const MAX_NAME_LEN: usize = (\d+);/)[1]);
  const limits = (count) => Array.from({ length: count }, (_, index) => ({ "window-size": `${index + 1}s`, "max-tokens": 1 }));
  assert.equal(readRateLimit(limits(max), "here").policy.split(" ").length, max);
  assert.throws(() => readRateLimit(limits(max + 1), "here"), new RegExp(`more than the ${max} a policy may hold`));
  const named = (name) => [{ name, "window-size": "1s", "max-tokens": 1 }, { "window-size": "1h", "max-tokens": 9 }];
  assert.equal(readRateLimit(named("a".repeat(longest)), "here").policy, `${"a".repeat(longest)}=1/1s 9/1h`);
  assert.throws(() => readRateLimit(named("a".repeat(longest + 1)), "here"), /at most 32 characters/);
});

test("the server chapter's examples of x-rate-limit read back as the policies it says", () => {
  const section = SERVER_DOCS.split("### The OpenAPI document")[1].split("\n### ")[0];
  const examples = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map(([, json]) => JSON.parse(`{${json}}`)["x-rate-limit"]);
  assert.equal(examples.length, 2, "docs/src/server.md shows one limit and a policy");
  assert.deepEqual(readRateLimit(examples[0], "here"), { policy: "6/8s", group: "fitting" });
  // The chapter writes the config's `limit = "burst=2/1s 6/1h"`: the same text back.
  assert.match(section, /`limit = "burst=2\/1s 6\/1h"`/);
  assert.deepEqual(readRateLimit(examples[1], "here"), { policy: "burst=2/1s 6/1h", group: "pair" });
});

test("a limit's name is written only when it is not the limit's own text", () => {
  const policy = (entries) => readRateLimit(entries, "here").policy;
  assert.equal(policy([{ name: "2/1s", "window-size": "1s", "max-tokens": 2 }, { name: "6/1h", "window-size": "1h", "max-tokens": 6 }]), "2/1s 6/1h");
  assert.equal(policy([{ name: "hourly", "window-size": "1h", "max-tokens": 150 }]), "hourly=150/1h");
  // ESI's object carries no name: the limit, named by its text.
  assert.equal(policy({ group: "market", "window-size": "15m", "max-tokens": 150 }), "150/15m");
  assert.equal(policy({ "window-size": "1500ms", "max-tokens": 7 }), "7/1500ms");
});

test("a route is read from the document, its method, its limit, and where it came from", async () => {
  const fetch = serving({
    openapi: "3.1.0",
    paths: {
      "/markets/prices": {
        get: { "x-rate-limit": { group: "market", "window-size": "15m", "max-tokens": 150 } },
        post: { "x-rate-limit": [
          { group: "market", name: "burst", "window-size": "1s", "max-tokens": 2 },
          { group: "market", name: "6/1h", "window-size": "1h", "max-tokens": 6 },
        ] },
      },
    },
  });
  const openapi = "../openapi.json";
  const spec = await readSpec({ openapi, route: "GET /markets/prices", base: BASE, fetch });
  assert.deepEqual(
    { ...spec, url: spec.url.href },
    { limit: "150/15m", group: "market", route: "GET /markets/prices", url: "https://docs.example.com/openapi.json", differs: false },
  );
  assert.deepEqual(fetch.calls, [{ url: "https://docs.example.com/openapi.json", mode: "cors" }]);
  // Methods in any case; the document, once for the page.
  const policy = await readSpec({ openapi, route: "post /markets/prices", base: BASE, fetch });
  assert.equal(policy.limit, "burst=2/1s 6/1h");
  assert.equal(policy.route, "POST /markets/prices");
  assert.equal(fetch.calls.length, 1, "fetched once for both widgets");
});

test("limit beside openapi is checked: the same limits, whatever their names, order or units", async () => {
  const document = withLimit([
    { name: "burst", "window-size": "1s", "max-tokens": 2 },
    { name: "6/1h", "window-size": "1h", "max-tokens": 6 },
  ]);
  for (const [limit, differs] of [
    [null, false],
    ["burst=2/1s 6/1h", false],
    ["2/1s 6/1h", false],
    ["6/60m 2/1000ms", false],
    ["short=2/1s, long=6/1h", false],
    ["2/1s", true],
    ["2/1s 6/1h 100/1h", true],
    ["3/1s 6/1h", true],
    ["burst=2/1s 6/1d", true],
    ["six per hour", true],
    ["", true],
  ]) {
    const spec = await read(serving(document), "GET /markets/prices", { limit });
    assert.equal(spec.differs, differs, `limit=${JSON.stringify(limit)}`);
  }
  assert.equal(samePolicy("6/8s", "6/8000ms"), true);
  assert.equal(samePolicy("6/8s", "6/8s 6/8s"), false);
});

test("an ESI-shaped document: templates, routes it does not limit yet, and its old trailing slashes", async () => {
  // As ESI's own document is laid out: servers, shared parameters by $ref, a compatibility
  // date, x-rate-limit on the operations it limits and none on the others.
  const esi = {
    openapi: "3.1.0",
    info: { title: "EVE Stable Infrastructure (ESI)", version: "2025-08-26" },
    servers: [{ url: "https://esi.evetech.net" }],
    paths: {
      "/markets/prices": {
        get: {
          operationId: "GetMarketsPrices",
          parameters: [{ $ref: "#/components/parameters/CompatibilityDate" }],
          responses: { 200: { description: "A list of prices" } },
          "x-compatibility-date": "2025-08-26",
          "x-rate-limit": { group: "market", "max-tokens": 150, "window-size": "15m" },
        },
      },
      "/markets/{region_id}/orders": {
        get: {
          operationId: "GetMarketsRegionIdOrders",
          parameters: [{ name: "region_id", in: "path", required: true, schema: { type: "integer" } }],
          "x-rate-limit": { group: "market", "max-tokens": 150, "window-size": "15m" },
        },
      },
      "/status": { get: { operationId: "GetStatus", responses: { 200: { description: "status" } } } },
    },
    components: { parameters: { CompatibilityDate: { name: "X-Compatibility-Date", in: "header" } } },
  };
  const spec = await read(serving(esi), "GET /markets/10000002/orders");
  assert.deepEqual([spec.limit, spec.group, spec.route], ["150/15m", "market", "GET /markets/{region_id}/orders"]);
  assert.equal((await read(serving(esi), "GET /markets/{region_id}/orders")).limit, "150/15m");
  await assert.rejects(read(serving(esi), "GET /status"), /GET \/status in https:\/\/\S+ has no x-rate-limit: the document does not say this route's limit/);
  await assert.rejects(read(serving(esi), "GET /markets/prices/"), /has no path \/markets\/prices\/: did you mean \/markets\/prices\?/);
  // Swagger 2.0, as ESI's older document: every path with a trailing slash.
  const old = { swagger: "2.0", basePath: "/latest", paths: { "/markets/prices/": esi.paths["/markets/prices"] } };
  assert.equal((await read(serving(old), "GET /markets/prices/")).limit, "150/15m");
  await assert.rejects(read(serving(old), "GET /markets/prices"), /did you mean \/markets\/prices\/\?/);
});

/**
 * Every way the widget's spec can be wrong, one a row: the attributes or the document, and
 * the message the widget shows in place of itself.
 */
const OK = { group: "market", "window-size": "15m", "max-tokens": 150 };
const BAD = [
  // The attributes.
  ["route without openapi", { openapi: null }, /^route="GET \/markets\/prices" needs openapi, the URL of the API's OpenAPI document: write the URL/],
  ["openapi without route", { route: null }, /needs route, the operation whose limit to show: write a method and a path of the document, as in route="GET \/markets\/prices"$/],
  ["an empty openapi", { openapi: " " }, /^openapi=" " is not a URL the widget can fetch: write the URL of the API's OpenAPI document in JSON/],
  ["openapi not http", { openapi: "javascript:alert(1)" }, /^openapi="javascript:alert\(1\)" is not a URL the widget can fetch/],
  ["openapi ftp", { openapi: "ftp://api.example.com/openapi.json" }, /is not a URL the widget can fetch/],
  ["a route without a method", { route: "/markets/prices" }, /^route="\/markets\/prices" is not a route: .*; for a GET, route="GET \/markets\/prices"$/],
  ["a route with two paths", { route: "GET /a /b" }, /^route="GET \/a \/b" is not a route/],
  ["an empty route", { route: "" }, /^route="" is not a route/],
  ["a method OpenAPI has not", { route: "FETCH /markets/prices" }, /"FETCH" is not an HTTP method .*; use one of GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH, TRACE/],
  ["a path without its slash", { route: "GET markets/prices" }, /"markets\/prices" is not a path of the document: start it with \//],
  ["a path with a query", { route: "GET /markets/prices?region=1" }, /leave out any \?query/],
  // Fetching it.
  ["a server that is down", { fetch: failing({ reachable: false }) }, /could not be fetched \(Failed to fetch\): is the server running and the address right, and does this page's Content-Security-Policy allow it in connect-src\?$/],
  ["a server that refuses the page's origin", { fetch: failing({ reachable: true }) }, /^https:\/\/api\.example\.com answered, but not to this page's origin: the server must allow it with Access-Control-Allow-Origin \(CORS\)/],
  ["a 404", { fetch: serving("not here", { status: 404 }) }, /could not be read: the server answered 404\. write the URL/],
  ["a 500", { fetch: serving({}, { status: 500 }) }, /the server answered 500/],
  // The document.
  ["an HTML page", { fetch: serving("<!doctype html><title>Docs</title>") }, /^The OpenAPI document at \S+ is HTML, not JSON: write the URL .*, such as trickle serve's \/openapi\.json$/],
  ["YAML", { fetch: serving("openapi: 3.1.0\npaths: {}\n") }, /is YAML; the widget reads JSON: /],
  ["an empty body", { fetch: serving("") }, /is empty: /],
  ["broken JSON", { fetch: serving('{"openapi": "3.1.0", "paths": {') }, /is not JSON \(.+\): /],
  ["JSON without paths", { fetch: serving({ openapi: "3.1.0", info: {} }) }, /is JSON but not an OpenAPI document: it has no "paths" object \(it is an object with "openapi", "info"\)/],
  ["a JSON array", { fetch: serving([1, 2]) }, /no "paths" object \(it is an array\)/],
  ["paths that are an array", { fetch: serving({ paths: ["/markets/prices"] }) }, /no "paths" object/],
  ["JSON null", { fetch: serving("null") }, /no "paths" object \(it is null\)/],
  ["no paths at all", { fetch: serving({ paths: {} }) }, /has no path \/markets\/prices: it lists no paths at all$/],
  ["no such path", { fetch: serving({ paths: { "/a": {}, "/b": {} } }) }, /has no path \/markets\/prices: its paths are \/a, \/b$/],
  ["no such path among many", { fetch: serving({ paths: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`/p${i}`, {}])) }) }, /its paths are \/p0, \/p1, \/p2, \/p3, \/p4, \/p5, … \(9 in all\)$/],
  ["no such method", { route: "POST /markets/prices", fetch: serving(withLimit(OK)) }, /has no POST operation on \/markets\/prices: it has GET$/],
  ["a path with no operation", { fetch: serving({ paths: { "/markets/prices": { summary: "x" } } }) }, /has no GET operation on \/markets\/prices: it has no operation at all$/],
  ["no x-rate-limit", { fetch: serving(withLimit(undefined)) }, /^GET \/markets\/prices in \S+ has no x-rate-limit: .* as ESI's object \{"group": "market", "window-size": "15m", "max-tokens": 150\}, or for several limits an array .*; or write the limit in limit, without openapi and route$/],
  // The x-rate-limit.
  ["x-rate-limit as prose", { fetch: serving(withLimit("10/min per IP")) }, /: x-rate-limit is a string \("10\/min per IP"\); expected ESI's object/],
  ["x-rate-limit null", { fetch: serving(withLimit(null)) }, /: x-rate-limit is null; expected ESI's object/],
  ["x-rate-limit a number", { fetch: serving(withLimit(150)) }, /: x-rate-limit is a number \(150\); expected/],
  ["an empty array", { fetch: serving(withLimit([])) }, /: x-rate-limit is an empty array; expected/],
  ["an array holding a string", { fetch: serving(withLimit([OK, "150/15m"])) }, /: x-rate-limit is an array holding a string; expected/],
  ["nine limits", { fetch: serving(withLimit(Array.from({ length: 9 }, (_, i) => ({ ...OK, name: `l${i}` })))) }, /x-rate-limit is an array of 9 limits, more than the 8 a policy may hold/],
  ["max-tokens missing", { fetch: serving(withLimit({ group: "market", "window-size": "15m" })) }, /: x-rate-limit's max-tokens is missing; expected a whole number of tokens from 1 to 9007199254740991, as in "max-tokens": 150$/],
  ["max-tokens a string", { fetch: serving(withLimit({ ...OK, "max-tokens": "150" })) }, /x-rate-limit's max-tokens is "150"; expected a whole number/],
  ["max-tokens 0", { fetch: serving(withLimit({ ...OK, "max-tokens": 0 })) }, /max-tokens is 0; expected a whole number of tokens from 1/],
  ["max-tokens negative", { fetch: serving(withLimit({ ...OK, "max-tokens": -5 })) }, /max-tokens is -5;/],
  ["max-tokens a fraction", { fetch: serving(withLimit({ ...OK, "max-tokens": 1.5 })) }, /max-tokens is 1\.5;/],
  ["max-tokens past 2^53", { fetch: serving('{"paths": {"/markets/prices": {"get": {"x-rate-limit": {"window-size": "1s", "max-tokens": 9007199254740993}}}}}') }, /max-tokens is 9007199254740992; expected a whole number of tokens from 1 to 9007199254740991/],
  ["window-size missing", { fetch: serving(withLimit({ group: "market", "max-tokens": 150 })) }, /x-rate-limit's window-size is missing; expected a window as a limit writes it, a whole number from 1 and ms, s, m or h, as in "window-size": "15m"$/],
  ["window-size in seconds as a number", { fetch: serving(withLimit({ ...OK, "window-size": 900 })) }, /window-size is 900; expected a window/],
  ["window-size in ISO 8601", { fetch: serving(withLimit({ ...OK, "window-size": "PT15M" })) }, /window-size is "PT15M"; expected/],
  ["window-size in words", { fetch: serving(withLimit({ ...OK, "window-size": "15 min" })) }, /window-size is "15 min"; expected/],
  ["window-size in days", { fetch: serving(withLimit({ ...OK, "window-size": "1d" })) }, /window-size is "1d"; expected/],
  ["window-size 0", { fetch: serving(withLimit({ ...OK, "window-size": "0s" })) }, /window-size is "0s"; expected/],
  ["window-size past 2^53 ms", { fetch: serving(withLimit({ ...OK, "window-size": "9007199254741h" })) }, /window-size is "9007199254741h"; expected/],
  ["a bad entry of several", { fetch: serving(withLimit([OK, { ...OK, name: "daily", "max-tokens": "lots" }])) }, /x-rate-limit\[1\]'s max-tokens is "lots";/],
  ["a name the core refuses", { fetch: serving(withLimit([{ ...OK, name: "Burst" }, { ...OK, "window-size": "1h" }])) }, /x-rate-limit\[0\]'s name is "Burst"; expected the limit's own text \(150\/15m\) or a name of a-z, 0-9, _, - and \., starting with a letter, at most 32 characters$/],
  ["a name that is no string", { fetch: serving(withLimit([{ ...OK, name: 7 }, { ...OK, "window-size": "1h" }])) }, /x-rate-limit\[0\]'s name is 7;/],
  ["two limits of one name", { fetch: serving(withLimit([{ ...OK, name: "burst" }, { ...OK, name: "burst", "window-size": "1h" }])) }, /x-rate-limit has two limits named "burst"; each limit of a policy needs a name of its own$/],
  ["two alike, unnamed", { fetch: serving(withLimit([OK, OK])) }, /two limits named "150\/15m"/],
];

for (const [name, { fetch = serving(withLimit(OK)), ...attributes }, message] of BAD) {
  test(`a bad spec is explained, never thrown: ${name}`, async () => {
    const spec = read(fetch, "GET /markets/prices", attributes);
    await assert.rejects(spec, (error) => {
      assert.ok(error instanceof Error, "an Error");
      assert.match(error.message, message);
      return true;
    });
  });
}

test("a document that never comes is given up on after TIMEOUT_MS, and the next widget asks again", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let asked = 0;
  const hanging = (url, { signal }) => {
    asked++;
    return new Promise((_, fail) => signal.addEventListener("abort", () => fail(new DOMException("aborted", "AbortError"))));
  };
  const openapi = freshUrl();
  const spec = readSpec({ openapi, route: "GET /markets/prices", base: BASE, fetch: hanging });
  await Promise.resolve();
  t.mock.timers.tick(TIMEOUT_MS);
  await assert.rejects(spec, /did not come within 10 s: is the server up\?$/);
  // A failure is not kept: the next widget on the page fetches again, and may succeed.
  const later = await readSpec({ openapi, route: "GET /markets/prices", base: BASE, fetch: serving(withLimit(OK)) });
  assert.equal(later.limit, "150/15m");
  assert.equal(asked, 1);
});

test("readRoute takes a method and a path", () => {
  assert.deepEqual(readRoute("GET /markets/prices"), { method: "get", path: "/markets/prices" });
  assert.deepEqual(readRoute("  patch   /a/{id}  "), { method: "patch", path: "/a/{id}" });
});
