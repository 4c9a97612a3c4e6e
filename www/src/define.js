// The package's main entry: importing it defines <rate-limit-demo>, so that a page needs only
//   <script type="module" src="…/rate-limit-demo.js"></script>
// The class, without this side effect, is the "./element" entry.

import { RateLimitDemo } from "./element.js";

export { RateLimitDemo, define } from "./element.js";
export { CostTable, Limiter, load } from "./limiter.js";

// Where there is no DOM (a docs site rendering on its server), there is nothing to define.
if (globalThis.customElements) RateLimitDemo.define();
