// `make size`'s last step: docs/figures/size.json, from what scripts/size.sh measured (gzip -9
// of each file, as a server would send it) and from the build itself, so that the docs can say
// where the bytes go without anyone measuring by hand:
//
// - each file a page may download, gzip -9 and brotli -11: the widget's module and wasm (what
//   every page pays, and their total against the goal), and each module of a mode fetched on
//   first use (every dist/*.js that is not one of the package's entries: compare, live, and
//   whatever mode is added next), only where a widget asks for it;
// - each source module of the widget's bundle: its minified bytes in the bundle (esbuild's
//   metafile, target/package/meta.json) and the same module minified and gzipped on its own,
//   which says roughly what it adds to the download;
// - the wasm's code and data sections before gzip (its functions and its constant tables),
//   and its code by part (the algorithms, parsing, wasm-bindgen's runtime, …) and by
//   function, from a copy optimised alike that keeps the functions' names
//   (target/package/trickle_bg.named.wasm, which `make wasm` writes).
//
//   node scripts/size-figures.mjs           after scripts/size.sh --json (see the Makefile)
//   node scripts/size-figures.mjs --chunks  the modes' files, one path a line, for the Makefile

import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";

import { write } from "./figures.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PACKAGE = join(ROOT, "target", "package");
const DIST = join(ROOT, "packages", "rate-limit-demo", "dist");

/** What a page with one widget may download at most, gzipped: the goal `make bench` checks. */
export const SIZE_GOAL_BYTES = 20_480;

/** What every page with a widget downloads, as the docs' table names it. */
const ALWAYS = [
  ["rate-limit-demo.js", "`rate-limit-demo.js` (element, limiter, wasm-bindgen's glue, styles)"],
  ["trickle_bg.wasm", "`trickle_bg.wasm`"],
];

/** What a mode's attribute is, where the mode's name alone does not say it. */
const MODE_ATTRIBUTES = {
  live: "`endpoint`",
  "live-policy": "`endpoint` with a policy or `headers`",
  policy: "a `limit` of several limits, or `headers`",
};

/** Files fetched on first use that are no mode, and the widgets that fetch them. */
const NOT_MODES = {
  "algorithms-glue":
    "widgets running the sliding log, the fixed window or the token bucket (`algorithm`, and compare mode), and `load()` of the `./limiter` entry",
  openapi: "widgets with `openapi` (the limit from an OpenAPI document)",
};

/**
 * The modes fetched on first use, each with its files: every dist/*.js that is not one of the
 * package's entries (its manifest's `exports`), and the WebAssembly beside it that the file
 * fetches, where it fetches one (replay and policy mode, trickle_extras_bg.wasm). www/build.mjs
 * makes one file per dynamic import, so a new mode is measured without an edit here.
 */
export function chunks() {
  const manifest = JSON.parse(readFileSync(join(ROOT, "packages", "rate-limit-demo", "package.json"), "utf8"));
  const entries = new Set(
    Object.values(manifest.exports)
      .map((target) => (typeof target === "string" ? target : target.default))
      .map((path) => basename(path)),
  );
  const dist = readdirSync(DIST);
  return dist
    .filter((name) => name.endsWith(".js") && !entries.has(name))
    .sort()
    .map((name) => {
      const mode = name.replace(/\.js$/, "");
      const fetched = readFileSync(join(DIST, name), "utf8").match(/trickle_\w+_bg\.wasm/g) ?? [];
      const wasm = [...new Set(fetched)].filter((file) => file !== "trickle_bg.wasm" && dist.includes(file));
      return { mode, files: [name, ...wasm] };
    });
}

/** The JSON scripts/size.sh wrote for a mode's file (see the Makefile). */
const chunkJson = (mode) => `size-${mode}.json`;

/** What each module of the widget's bundle is. */
const MODULES = {
  "element.js": "the element",
  "single.js": "the formula, gauge and next line of one algorithm",
  "plain.js": "plain mode, the default",
  "modes.js": "the modes, and the loader of the others",
  "detail.js": "the event's detail",
  "algorithms.js": "what the widget calls each algorithm",
  "decision.js": "the decision buffer, read by slot name",
  "timeline.js": "the timeline",
  "styles.css": "the stylesheet",
  "trickle.js": "wasm-bindgen's glue",
  "limiter.js": "the JS `Limiter`: its argument checks",
  "attributes.js": "attribute parsing",
  "format.js": "number and time formatting",
  "gauge.js": "the bar of tokens in use",
  "dom.js": "building the shadow DOM",
  "respond.js": "one request, answered as the server would",
  "define.js": "the entry that defines the element",
};

const number = (value) => value.toLocaleString("en-US");
const bytes = (value) => `${number(value)} B`;

/** gzip -9 of `text` from stdin, as scripts/size.sh measures a file. */
function gzipBytes(text) {
  const gzip = spawnSync("gzip", ["-9"], { input: text, maxBuffer: 1 << 26 });
  if (gzip.status !== 0) throw new Error(`gzip failed: ${gzip.stderr}`);
  return gzip.stdout.length;
}

/** scripts/size.sh's JSON, or a message naming the command that writes it. */
function measured(name) {
  try {
    return JSON.parse(readFileSync(join(PACKAGE, name), "utf8"));
  } catch {
    throw new Error(`target/package/${name} is missing: run \`make size\``);
  }
}

/** The widget's bundle, module by module: minified in the bundle, and gzipped on its own. */
async function modules() {
  const esbuild = createRequire(join(ROOT, "www", "package.json"))("esbuild");
  const metafiles = JSON.parse(readFileSync(join(PACKAGE, "meta.json"), "utf8"));
  const output = metafiles
    .flatMap((meta) => Object.entries(meta.outputs))
    .find(([path]) => path.endsWith("/rate-limit-demo.js"));
  if (!output) throw new Error("target/package/meta.json has no rate-limit-demo.js: run `make package`");
  const rows = [];
  for (const [path, { bytesInOutput }] of Object.entries(output[1].inputs)) {
    const source = readFileSync(join(ROOT, path), "utf8");
    const loader = path.endsWith(".css") ? "css" : "js";
    const { code } = await esbuild.transform(source, { loader, minify: true, target: "es2022", format: loader === "js" ? "esm" : undefined });
    rows.push({ path, name: basename(path), bundled: bytesInOutput, gzip: gzipBytes(code) });
  }
  return rows.sort((a, b) => b.gzip - a.gzip);
}

/** The byte sizes of a WebAssembly module's code (10) and data (11) sections. */
function wasmSections(file) {
  const wasm = readFileSync(file);
  const sizes = { code: 0, data: 0 };
  let at = 8; // magic and version
  while (at < wasm.length) {
    const id = wasm[at++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = wasm[at++];
      size |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    if (id === 10) sizes.code += size;
    if (id === 11) sizes.data += size;
    at += size;
  }
  return sizes;
}

/** The functions of a WebAssembly module with a name section: `{ name, bytes }` each. */
function wasmFunctions(file) {
  const wasm = readFileSync(file);
  let at = 8;
  const leb = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = wasm[at++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  const skipName = () => {
    const length = leb();
    at += length;
  };
  let imported = 0;
  const bodies = [];
  const names = new Map();
  while (at < wasm.length) {
    const id = wasm[at++];
    const size = leb();
    const end = at + size;
    if (id === 2) {
      for (let count = leb(); count > 0; count--) {
        skipName();
        skipName();
        const kind = wasm[at++];
        if (kind === 0) {
          imported++;
          leb();
        } else if (kind === 1 || kind === 2) {
          if (kind === 1) at++; // a table's element type
          const flags = leb();
          leb();
          if (flags & 1) leb();
        } else {
          at += 2;
        }
      }
    } else if (id === 10) {
      for (let count = leb(); count > 0; count--) {
        // A function's bytes: its body and the number before it that gives its length.
        const start = at;
        const body = leb();
        at += body;
        bodies.push(at - start);
      }
    } else if (id === 0) {
      const length = leb();
      const section = wasm.subarray(at, at + length).toString();
      at += length;
      while (section === "name" && at < end) {
        const kind = wasm[at++];
        const length = leb();
        const next = at + length;
        if (kind === 1) {
          for (let count = leb(); count > 0; count--) {
            const index = leb();
            const length = leb();
            names.set(index, wasm.subarray(at, at + length).toString());
            at += length;
          }
        }
        at = next;
      }
    }
    at = end;
  }
  return bodies.map((bytes, index) => ({ name: names.get(index + imported) ?? `#${index + imported}`, bytes }));
}

/** The part of the module a function belongs to, from its (mangled) name; the first match. */
const WASM_PARTS = [
  ["the exports (each with what the compiler inlined into it)", /^(limiter_\w+|cost_table_\w+|algorithms|decision_buffer|error)( multivalue shim)?$/],
  ["wasm-bindgen's runtime (externref table, strings in and out)", /wasm_bindgen|wbindgen|externref/],
  ["the algorithms and the bucket that dispatches over them", /trickle_core.*(algorithms|stores)/],
  ["limits, algorithm names and cost tables: parsing and messages", /trickle_core/],
  ["the binding's own: the decision buffer's writer, the allocator", /trickle_wasm/],
  ["128-bit arithmetic (compiler builtins)", /compiler_builtins|^__(multi3|udivti3|umodti3|ashlti3|lshrti3)/],
  ["Rust's alloc and core: strings, vectors, UTF-8", /./],
];

/** A function's name as a reader wants it: without the hashes that tell apart copies. */
function readable(name) {
  return name.replace(/::h[0-9a-f]{16}\b/g, "").replace(/\[[0-9a-f]{16}\]/g, "").replace(/\.\d+$/, "");
}

export async function sizeFigures() {
  const files = {};
  // A file several modes fetch (the opt-in modes' WebAssembly) is one row, naming them all.
  const users = new Map();
  for (const { mode, files } of chunks()) {
    for (const name of files) users.set(name, [...(users.get(name) ?? []), mode]);
  }
  const lazy = [...users].map(([name, modes]) => {
    const [mode] = modes;
    const which =
      modes.length > 1
        ? `${modes.slice(0, -1).join(", ")} and ${modes.at(-1)} modes`
        : (NOT_MODES[mode] ?? `${mode} mode${MODE_ATTRIBUTES[mode] ? ` (${MODE_ATTRIBUTES[mode]})` : ""}`);
    return [name, `\`${name}\`, only for ${which}`, chunkJson(modes[0])];
  });
  for (const [name, , json] of [...ALWAYS.map(([name, label]) => [name, label, "size.json"]), ...lazy]) {
    const row = measured(json).files.find((file) => file.file === name);
    if (!row) throw new Error(`target/package/${json} does not measure ${name}`);
    files[name] = row;
  }
  const total = files["rate-limit-demo.js"].gzip + files["trickle_bg.wasm"].gzip;
  const totalBrotli = files["rate-limit-demo.js"].brotli + files["trickle_bg.wasm"].brotli;
  const figures = {
    "total.gzip": bytes(total),
    "total.brotli": bytes(totalBrotli),
    goal: bytes(SIZE_GOAL_BYTES),
    verdict: total <= SIZE_GOAL_BYTES ? "met" : `missed by ${bytes(total - SIZE_GOAL_BYTES)}`,
  };
  for (const [name, { bytes: raw, gzip, brotli }] of Object.entries(files)) {
    figures[`${name}.bytes`] = bytes(raw);
    figures[`${name}.gzip`] = bytes(gzip);
    figures[`${name}.brotli`] = bytes(brotli);
  }
  const sections = wasmSections(join(DIST, "trickle_bg.wasm"));
  figures["wasm.code"] = bytes(sections.code);
  figures["wasm.data"] = bytes(sections.data);

  const functions = wasmFunctions(join(PACKAGE, "trickle_bg.named.wasm")).sort((a, b) => b.bytes - a.bytes);
  const parts = WASM_PARTS.map(([label, pattern]) => ({ label, pattern, bytes: 0, count: 0 }));
  for (const { name, bytes } of functions) {
    const part = parts.find(({ pattern }) => pattern.test(name));
    part.bytes += bytes;
    part.count++;
  }

  const bundle = await modules();
  for (const { name, bundled, gzip } of bundle) {
    figures[`module.${name}.bundled`] = bytes(bundled);
    figures[`module.${name}.gzip`] = bytes(gzip);
  }

  const row = ([name, label]) =>
    `| ${label} | ${number(files[name].bytes)} | ${number(files[name].gzip)} | ${number(files[name].brotli)} |`;
  const filesTable = [
    "| file | bytes | gzip -9 | brotli -11 |",
    "|---|---:|---:|---:|",
    ...ALWAYS.map(row),
    `| total, what every page with a widget downloads | | **${number(total)}** | **${number(totalBrotli)}** |`,
    ...lazy.map(row),
  ].join("\n");
  const modulesTable = [
    "| module of `rate-limit-demo.js` | what it is | minified, in the bundle | gzip -9 on its own |",
    "|---|---|---:|---:|",
    ...bundle.map(({ path, name, bundled, gzip }) => `| \`${path}\` | ${MODULES[name] ?? ""} | ${number(bundled)} | ${number(gzip)} |`),
  ].join("\n");
  const wasmPartsTable = [
    "| part of `trickle_bg.wasm`'s code | functions | bytes |",
    "|---|---:|---:|",
    ...parts.filter(({ count }) => count > 0).map(({ label, count, bytes }) => `| ${label} | ${count} | ${number(bytes)} |`),
  ].join("\n");
  const wasmFunctionsTable = [
    "| largest functions of `trickle_bg.wasm` | bytes |",
    "|---|---:|",
    ...functions.slice(0, 15).map(({ name, bytes }) => `| \`${readable(name)}\` | ${number(bytes)} |`),
  ].join("\n");
  return {
    figures,
    tables: { files: filesTable, modules: modulesTable, wasmParts: wasmPartsTable, wasmFunctions: wasmFunctionsTable },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "--chunks") {
  for (const { mode, files } of chunks()) console.log(mode, ...files.map((name) => join(DIST, name)));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  write("size", "make size", await sizeFigures());
  console.log("wrote docs/figures/size.json");
}
