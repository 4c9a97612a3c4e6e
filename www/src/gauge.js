// The bar of tokens in use, in the single widget and in each row of compare mode.

import { html } from "./dom.js";
import { formatTokens } from "./format.js";

/** A meter of `tokens` tokens: one segment per token while they are few enough to count. */
export function createGauge(tokens, attributes) {
  const fill = html("div", { class: "fill" });
  const element = html(
    "div",
    {
      class: "gauge",
      role: "meter",
      "aria-valuemin": "0",
      "aria-valuemax": String(tokens),
      ...attributes,
    },
    fill,
  );
  element.style.setProperty("--tokens", String(tokens));
  element.classList.toggle("segmented", tokens <= 30);
  return { element, fill, tokens };
}

/**
 * Shows `used` of the gauge's tokens, full (in the denied colour) when `cost` more would not
 * fit. `used` may pass the limit after a cost table charges a response; the bar stops at full.
 */
export function showGauge({ element, fill, tokens }, used, remaining, cost) {
  fill.style.width = `${Math.min(used / tokens, 1) * 100}%`;
  element.classList.toggle("full", remaining < cost);
  element.setAttribute("aria-valuenow", String(Math.min(used, tokens)));
  element.setAttribute("aria-valuetext", `${formatTokens(used)} of ${tokens} tokens in use`);
}
