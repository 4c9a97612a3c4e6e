// The module that runs all four algorithms, trickle_algorithms_bg.wasm (`make
// wasm-algorithms`), and what limiter.js calls of its wasm-bindgen glue: a file of its own,
// which www/build.mjs bundles apart, so that a page imports it (and fetches the module) only
// once a widget or a caller asks for the sliding log, the fixed window or the token bucket, or
// for a cost table.

import * as glue from "../pkg/trickle_algorithms.js";

/** Beside this file in the package, as the default module is beside limiter.js. */
export const WASM_URL = new URL("./trickle_algorithms_bg.wasm", import.meta.url);

/** Named one by one, so that the bundle leaves out the glue's own loader. */
export const calls = {
  initSync: glue.initSync,
  decision_buffer: glue.decision_buffer,
  error: glue.error,
  limiter_new: glue.limiter_new,
  limiter_free: glue.limiter_free,
  limiter_hit: glue.limiter_hit,
  limiter_peek: glue.limiter_peek,
  limiter_record: glue.limiter_record,
  limiter_respond: glue.limiter_respond,
  limiter_reset: glue.limiter_reset,
  limiter_limit: glue.limiter_limit,
  limiter_tokens: glue.limiter_tokens,
  limiter_window_ms: glue.limiter_window_ms,
  cost_table_new: glue.cost_table_new,
  cost_table_cost: glue.cost_table_cost,
  cost_table_statuses: glue.cost_table_statuses,
  cost_table_free: glue.cost_table_free,
};
