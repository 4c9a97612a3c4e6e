// Building and updating the shadow DOM. Text always goes in as text nodes, never parsed as
// HTML, so an attribute value shown in an error message cannot inject markup.

export const SVG_NS = "http://www.w3.org/2000/svg";

/** An HTML element; `children` are nodes or plain text. */
export function html(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

/** An SVG element; see html. */
export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

export function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
}

/**
 * Sets `element`'s text unless it reads so already. While tokens come back the widget is
 * redrawn on every animation frame, and most frames change few of its numbers: each write
 * skipped is script and style work the frame does not do.
 */
export function updateText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

/** Sets an attribute unless it holds `value` already; see updateText. */
export function updateAttribute(element, name, value) {
  const text = String(value);
  if (element.getAttribute(name) !== text) element.setAttribute(name, text);
}

/**
 * A constructable stylesheet shared by every element on the page, made on first use: one
 * parse for any number of widgets, no request, no flash of unstyled content, and nothing a
 * Content-Security-Policy's style-src has to allow.
 */
export function sharedSheet(cssText) {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(cssText);
  return sheet;
}
