// Builds the rate-limit-demo package (packages/rate-limit-demo/) from the element's source
// (www/src/) and the WebAssembly build (www/pkg/, `make wasm`), then packs it with npm:
//
//   node www/build.mjs      writes packages/rate-limit-demo/{dist/,custom-elements.json,
//                           LICENSE-*}, the attribute table of its README.md, and
//                           target/package/rate-limit-demo-<version>.tgz
//
// esbuild bundles and minifies three entries, "." (defines the element), "./element" and
// "./limiter", with each mode but the plain one (modes.js) split off behind a dynamic import
// so that a page of plain widgets never downloads them. The stylesheets go in as minified text.

import { execFileSync } from "node:child_process";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { readme } from "../scripts/reference.mjs";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const WWW = join(REPO, "www");
const PACKAGE = join(REPO, "packages", "rate-limit-demo");
const DIST = join(PACKAGE, "dist");
const OUT = join(REPO, "target", "package");
const WASM = join(WWW, "pkg", "trickle_bg.wasm");

/** The package's version is the crate's: one release, one number. */
async function checkVersion() {
  const cargo = await readFile(join(REPO, "Cargo.toml"), "utf8");
  const crate = cargo.match(/^\[package\][^[]*?^version\s*=\s*"([^"]+)"/ms)?.[1];
  const manifest = JSON.parse(await readFile(join(PACKAGE, "package.json"), "utf8"));
  if (manifest.version !== crate) {
    throw new Error(
      `packages/rate-limit-demo/package.json has version ${manifest.version}, the crate ${crate}: make them equal`,
    );
  }
  return manifest;
}

/** `import styles from "./styles.css"` gives the stylesheet as minified text. */
const cssAsText = {
  name: "css-as-text",
  setup(build) {
    build.onLoad({ filter: /\.css$/ }, async ({ path }) => {
      const { code } = await esbuild.transform(await readFile(path, "utf8"), {
        loader: "css",
        minify: true,
      });
      return { contents: `export default ${JSON.stringify(code.trim())};`, loader: "js" };
    });
  },
};

/**
 * custom-elements.json from the element's JSDoc (@attr, @csspart, @cssprop, @fires), with
 * private members left out and paths pointing at what the package ships.
 */
async function writeManifest() {
  const scratch = join(REPO, "target", "cem");
  execFileSync(
    join(WWW, "node_modules", ".bin", "cem"),
    ["analyze", "--config", "custom-elements-manifest.config.mjs", "--quiet"],
    { cwd: WWW, stdio: "inherit" },
  );
  const manifest = JSON.parse(await readFile(join(scratch, "custom-elements.json"), "utf8"));
  for (const module of manifest.modules) {
    module.path = "dist/element.js";
    for (const declaration of module.declarations ?? []) {
      declaration.members = declaration.members?.filter(
        (member) => member.privacy !== "private" && !member.name?.startsWith("#"),
      );
    }
    for (const exported of module.exports ?? []) {
      if (exported.declaration) exported.declaration.module = "dist/element.js";
    }
  }
  await writeFile(join(PACKAGE, "custom-elements.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}

const manifest = await checkVersion();
await rm(DIST, { recursive: true, force: true });
await mkdir(OUT, { recursive: true });
/**
 * Each entry is one self-contained file, so that a page's requests are never deeper than page
 * → module → (WebAssembly, and a mode's module when a widget asks for it): shared chunks
 * would put another round trip before the WebAssembly is even asked for. A page uses one of
 * the three public entries; "." re-exports the other two's names. The modes fetched on first
 * use (modes.js) are files of their own, each with its own copy of the few helpers it shares,
 * and are found, not listed: every `import("./x.js")` the entries make becomes an entry too.
 */
const ENTRIES = {
  "rate-limit-demo": "define.js",
  element: "element.js",
  limiter: "limiter.js",
};

/** Leaves each `import("./x.js")` for the browser (or the page's bundler) to resolve. */
const modesApart = {
  name: "modes-apart",
  setup(build) {
    build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, ({ kind, path }) =>
      kind === "dynamic-import" ? { path, external: true } : undefined,
    );
  },
};

const metafiles = [];
const queue = Object.entries(ENTRIES);
const built = new Set(Object.values(ENTRIES));
while (queue.length) {
  const [name, source] = queue.shift();
  const result = await esbuild.build({
    entryPoints: { [name]: join(WWW, "src", source) },
    outdir: DIST,
    bundle: true,
    format: "esm",
    // What the package promises: the engines the tests run (Chromium, Firefox ESR, WebKit)
    // and Node 20 for the limiter; class fields, private methods, `??=`.
    target: ["es2022"],
    minify: true,
    sourcemap: true,
    legalComments: "none",
    metafile: true,
    plugins: [cssAsText, modesApart],
    logLevel: "warning",
  });
  metafiles.push(result.metafile);
  for (const output of Object.values(result.metafile.outputs)) {
    for (const { path, kind, external } of output.imports) {
      const file = path.replace(/^\.\//, "");
      if (kind !== "dynamic-import" || !external || built.has(file)) continue;
      built.add(file);
      queue.push([file.replace(/\.js$/, ""), file]);
    }
  }
}
await writeFile(join(OUT, "meta.json"), JSON.stringify(metafiles));
await copyFile(WASM, join(DIST, "trickle_bg.wasm"));
// The opt-in modes' own module, fetched by dist/replay.js and dist/policy.js alone (`make
// wasm-extras`).
await copyFile(join(WWW, "pkg", "trickle_extras_bg.wasm"), join(DIST, "trickle_extras_bg.wasm"));
// The module of all four algorithms, fetched by limiter.js (through dist/algorithms-glue.js)
// the first time a page asks for the sliding log, the fixed window or the token bucket (`make
// wasm-algorithms`).
await copyFile(join(WWW, "pkg", "trickle_algorithms_bg.wasm"), join(DIST, "trickle_algorithms_bg.wasm"));
for (const license of ["LICENSE-MIT", "LICENSE-APACHE"]) {
  await copyFile(join(REPO, license), join(PACKAGE, license));
}
await writeManifest();
// The README npm shows lists the attributes: the reference page's table, from the manifest
// just written, so that it has the JSDoc as its one source.
await writeFile(join(PACKAGE, "README.md"), readme());

const packed = execFileSync("npm", ["pack", "--pack-destination", OUT, "--json"], {
  cwd: PACKAGE,
  encoding: "utf8",
});
const [{ filename, size, unpackedSize, files }] = JSON.parse(packed);
console.log(
  `${join("target", "package", filename)}: ${files.length} files, ${size} B packed, ${unpackedSize} B unpacked (${manifest.name} ${manifest.version})`,
);
await writeFile(join(OUT, "tarball"), `${join(OUT, filename)}\n`);

