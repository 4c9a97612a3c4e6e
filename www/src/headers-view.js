// The headers view of a widget with the `headers` attribute: the status line and the exact
// rate-limit headers a server in the chosen dialect sends with the answer to the last Hit,
// as ratelimit-fields.js writes them from the core's decision. Policy mode and live mode
// (for the model's answer) show it.

import { html } from "./dom.js";
import { statusLine } from "./format.js";

const TITLES = {
  esi: "ESI's X-Ratelimit-* headers",
  ietf: "the IETF's RateLimit headers",
  both: "ESI's and the IETF's rate-limit headers",
};

export class HeadersView {
  #lines;
  element;

  /** `who` is whose answer it is, for the caption: "the server" or "the model". */
  constructor(dialect, who) {
    this.#lines = html("pre", { part: "header-lines", class: "header-lines" });
    this.element = html(
      "figure",
      { part: "headers", class: "headers", "data-dialect": dialect },
      html("figcaption", {}, `The answer to the last Hit, as ${who} sends it: ${TITLES[dialect]}`),
      this.#lines,
    );
    this.clear();
  }

  /** Shows `status` and `headers` (`[name, value]` pairs) as an HTTP/1.1 answer's head. */
  show(status, headers) {
    this.#lines.textContent = [`HTTP/1.1 ${statusLine(status)}`, ...headers.map(([name, value]) => `${name}: ${value}`)].join("\n");
  }

  clear() {
    this.#lines.textContent = "Press Hit to see the headers of its answer.";
  }
}
