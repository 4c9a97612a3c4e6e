// The opt-in modes' WebAssembly module, trickle_extras_bg.wasm (`make wasm-extras`): the
// core's replay of a request log (replay mode) and its policies of several limits (policy
// mode), which the default module leaves out so that a page of plain widgets never downloads
// them. Imported only by those modes' files, each of which the build makes self-contained:
// a page that shows both modes compiles the module once for each.

import init from "../pkg/trickle_extras.js";

/** Beside the mode's file in the package, and wherever a bundler copies it. */
const WASM_URL = new URL("./trickle_extras_bg.wasm", import.meta.url);

let loading = null;

/**
 * Fetches and compiles the module once; resolves to its exports. A failure is not kept, so
 * that the next widget (or the next play) tries again; it rejects with an Error naming
 * `what` needed the module.
 */
export function loadExtras(what) {
  loading ??= init({ module_or_path: fetch(WASM_URL) }).catch((error) => {
    loading = null;
    throw new Error(`the ${what}'s WebAssembly (${WASM_URL}) could not load: ${error.message}`);
  });
  return loading;
}
