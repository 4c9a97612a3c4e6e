#!/usr/bin/env node
// The demo page `make demo` serves, written from the docs site's chapter for the same
// readers, docs/src/understanding.md, so that the page for an API's readers exists once: the
// chapter is the content, www/page.html the frame around it (head, header, footer).
//
//   node scripts/consumer-page.mjs OUT     writes the page to OUT (scripts/site.sh runs it)
//
// The chapter is Markdown as mdBook reads it. This renders the part of Markdown the chapter
// uses (headings with an optional {#id}, paragraphs, `-` and `1.` lists, tables, fenced code,
// {{#include FILE}}, and lines of HTML such as the widget's) and stops at anything else with
// the file, the line and what it renders, rather than print it wrong. Each `##` heading
// becomes a <section> and an entry of the page's contents; what comes before the first is
// the header's lede. Links to other chapters become their text, since the page stands alone.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
export const CHAPTER = join(REPO, "docs", "src", "understanding.md");
export const FRAME = join(REPO, "www", "page.html");

/** Input the renderer cannot use: reported as one line and exit status 1, not a stack. */
export class PageError extends Error {}

const RENDERS =
  "it renders headings, paragraphs, - and 1. lists, tables, fenced code, {{#include FILE}} and lines of HTML";

// ---------------------------------------------------------------------------------------------
// Lines, with where each came from, includes spliced in as mdBook does.

/** The lines of `file`, each `{ text, file, n }`, with whole-line includes spliced in. */
export function readLines(file, read = (path) => readFileSync(path, "utf8"), seen = []) {
  if (seen.includes(file)) {
    throw new PageError(`${shown(file)} includes itself (through ${seen.map(shown).join(" → ")})`);
  }
  let text;
  try {
    text = read(file);
  } catch {
    const by = seen.length ? ` (included by ${shown(seen.at(-1))})` : "";
    throw new PageError(`${shown(file)} cannot be read${by}`);
  }
  const lines = [];
  for (const [i, line] of text.replace(/\n$/, "").split("\n").entries()) {
    const include = line.trim().match(/^\{\{#include ([^}\s]+)\}\}$/);
    if (include) {
      if (include[1].includes(":")) {
        throw new PageError(
          `${shown(file)}:${i + 1}: {{#include ${include[1]}}}: only whole files are included, not anchors or line ranges`,
        );
      }
      lines.push(...readLines(join(dirname(file), include[1]), read, [...seen, file]));
    } else {
      lines.push({ text: line, file, n: i + 1 });
    }
  }
  return lines;
}

const shown = (path) => relative(REPO, path) || path;
const where = (line) => `${shown(line.file)}:${line.n}`;

// ---------------------------------------------------------------------------------------------
// Inline text.

/** `&`, `<` and `>` as text, with HTML tags (`<q>`, `<kbd>`) left as they are. */
function escapeText(text) {
  return text
    .split(/(<\/?[a-zA-Z][\w-]*(?:\s[^<>]*)?>)/)
    .map((part, i) =>
      i % 2
        ? part
        : part.replace(/&(?!#?\w+;)/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"),
    )
    .join("");
}

const escapeCode = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttribute = (text) => escapeCode(text).replace(/"/g, "&quot;");

/**
 * Markdown's inline syntax the chapter uses: `code`, **strong**, *emphasis* and
 * [links](target). `link(target)` gives the href to use, or null to keep only the text.
 */
export function inline(text, link = defaultLink) {
  const codes = [];
  const protect = (html) => `\u0000${codes.push(html) - 1}\u0000`;
  let html = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, fence, code) =>
    protect(`<code>${escapeCode(code.replace(/^ (.* )$/, "$1"))}</code>`),
  );
  html = escapeText(html);
  html = html.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, label, target) => {
    const href = link(target.replace(/&amp;/g, "&"));
    return href === null ? label : protect(`<a href="${escapeAttribute(href)}">`) + label + protect("</a>");
  });
  html = html
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s](?:[^*]*[^*\s])?)\*(?![*\w])/g, "$1<em>$2</em>");
  return html.replace(/\u0000(\d+)\u0000/g, (_, n) => codes[Number(n)]);
}

/** On the page alone: links out and within the page stay, links to other chapters do not. */
function defaultLink(target) {
  if (/^[a-z][a-z+.-]*:/i.test(target) || target.startsWith("#")) return target;
  return null;
}

/** A heading's text as mdBook makes its id: lower case, letters, digits, `-` and `_`. */
export function slug(text) {
  return text
    .replace(/<[^>]*>/g, "")
    .replace(/`/g, "")
    .trim()
    .toLowerCase()
    .replace(/\s+/g, "-")
    .replace(/[^\p{L}\p{N}_-]/gu, "");
}

const plain = (html) => html.replace(/<[^>]*>/g, "").replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">");

// ---------------------------------------------------------------------------------------------
// Blocks.

const FENCE = /^```(.*)$/;
const HEADING = /^(#{1,6}) +(.*?)(?: +\{#([\w-]+)\})?\s*$/;
const BULLET = /^- +(.*)$/;
const NUMBERED = /^\d+\. +(.*)$/;
const DELIMITER = /^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

const startsBlock = (text, next) =>
  FENCE.test(text) ||
  HEADING.test(text) ||
  BULLET.test(text) ||
  NUMBERED.test(text) ||
  text.startsWith("<") ||
  (text.startsWith("|") && next !== undefined && DELIMITER.test(next));

/** As in CommonMark, a numbered list interrupts a paragraph only when it starts at 1. */
const interrupts = (text, next) => (NUMBERED.test(text) ? /^1\. /.test(text) : startsBlock(text, next));

/** A table row's cells: split at `|` outside inline code, `\|` kept as a pipe. */
function cells(text) {
  const row = text.trim().replace(/^\|/, "").replace(/\|$/, "");
  const parts = [];
  let current = "";
  let inCode = false;
  for (let i = 0; i < row.length; i++) {
    if (row[i] === "\\" && row[i + 1] === "|") {
      current += "|";
      i++;
    } else if (row[i] === "`") {
      inCode = !inCode;
      current += "`";
    } else if (row[i] === "|" && !inCode) {
      parts.push(current.trim());
      current = "";
    } else {
      current += row[i];
    }
  }
  parts.push(current.trim());
  return parts;
}

/**
 * The chapter as blocks: `{ kind, ... }` with kind heading, paragraph, list, table, code or
 * html, each holding the line it started on.
 */
export function blocks(lines) {
  const out = [];
  let i = 0;
  const unsupported = (line, what) => {
    throw new PageError(`${where(line)}: ${what} is not something scripts/consumer-page.mjs renders; ${RENDERS}`);
  };
  while (i < lines.length) {
    const line = lines[i];
    const text = line.text;
    if (text.trim() === "") {
      i++;
    } else if (FENCE.test(text)) {
      const info = text.match(FENCE)[1].trim();
      const body = [];
      i++;
      while (i < lines.length && !/^```\s*$/.test(lines[i].text)) body.push(lines[i++].text);
      if (i === lines.length) throw new PageError(`${where(line)}: this code block is never closed with \`\`\``);
      i++;
      out.push({ kind: "code", line, language: info.split(/[\s,]/)[0], code: body.join("\n") });
    } else if (HEADING.test(text)) {
      const [, hashes, title, id] = text.match(HEADING);
      out.push({ kind: "heading", line, level: hashes.length, title, id: id ?? null });
      i++;
    } else if (text.startsWith("|") && DELIMITER.test(lines[i + 1]?.text ?? "")) {
      const head = cells(text);
      const align = cells(lines[i + 1].text).map((cell) => (/-:$/.test(cell) ? "num" : null));
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].text.startsWith("|")) rows.push(cells(lines[i++].text));
      for (const [r, row] of rows.entries()) {
        if (row.length !== head.length) {
          throw new PageError(
            `${where(lines[i - rows.length + r])}: this table row has ${row.length} cells, the header ${head.length}`,
          );
        }
      }
      out.push({ kind: "table", line, head, align, rows });
    } else if (BULLET.test(text) || NUMBERED.test(text)) {
      const ordered = NUMBERED.test(text);
      const marker = ordered ? NUMBERED : BULLET;
      const items = [];
      while (i < lines.length) {
        const current = lines[i].text;
        if (marker.test(current)) {
          items.push([current.match(marker)[1]]);
          i++;
        } else if (current.trim() === "") {
          // A blank line ends the list unless the next item follows it.
          if (marker.test(lines[i + 1]?.text ?? "")) i++;
          else break;
        } else if (/^\s+\S/.test(current)) {
          if (/^\s+(- |\d+\. )/.test(current)) unsupported(lines[i], "a list inside a list");
          items.at(-1).push(current.trim());
          i++;
        } else if (!interrupts(current, lines[i + 1]?.text)) {
          items.at(-1).push(current.trim());
          i++;
        } else {
          break;
        }
      }
      out.push({ kind: "list", line, ordered, items: items.map((item) => item.join(" ")) });
    } else if (text.startsWith("<")) {
      const html = [];
      while (i < lines.length && lines[i].text.trim() !== "") html.push(lines[i++].text);
      out.push({ kind: "html", line, html: html.join("\n") });
    } else if (/^\s{4}|^\t/.test(text)) {
      unsupported(line, "an indented code block");
    } else if (/^>/.test(text)) {
      unsupported(line, "a block quote");
    } else if (/^(\*\s*){3,}$|^(-\s*){3,}$|^(_\s*){3,}$/.test(text)) {
      unsupported(line, "a horizontal rule");
    } else {
      const paragraph = [];
      while (
        i < lines.length &&
        lines[i].text.trim() !== "" &&
        (paragraph.length === 0 || !interrupts(lines[i].text, lines[i + 1]?.text))
      ) {
        paragraph.push(lines[i++].text.trim());
      }
      out.push({ kind: "paragraph", line, text: paragraph.join(" ") });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The page.

/**
 * The chapter as the page's parts: its `title`, the `lede` before the first `##`, and one
 * `{ id, title, html }` per `##` section.
 */
export function renderChapter(lines, link = defaultLink) {
  const parsed = blocks(lines);
  const first = parsed[0];
  if (first?.kind !== "heading" || first.level !== 1) {
    throw new PageError(`${shown(lines[0]?.file ?? CHAPTER)}:1: the chapter must start with its # title`);
  }
  const title = inline(first.title, link);
  const lede = [];
  const sections = [];
  const ids = new Set();
  let labels = new Map();
  let heading = plain(title);
  const unique = (id, line) => {
    if (ids.has(id)) throw new PageError(`${where(line)}: a second heading with the id "${id}"`);
    ids.add(id);
    return id;
  };
  for (const block of parsed.slice(1)) {
    const into = sections.length ? sections.at(-1).html : lede;
    switch (block.kind) {
      case "heading": {
        if (block.level === 1) throw new PageError(`${where(block.line)}: a second # title`);
        const html = inline(block.title, link);
        const id = unique(block.id ?? slug(html), block.line);
        heading = plain(html);
        labels = new Map();
        if (block.level === 2) {
          sections.push({ id, title: html, html: [] });
        } else if (!sections.length) {
          throw new PageError(`${where(block.line)}: a ${"#".repeat(block.level)} heading before the first ## one`);
        } else {
          into.push(`<h${block.level} id="${id}">${html}</h${block.level}>`);
        }
        break;
      }
      case "paragraph":
        into.push(sections.length ? `<p>${inline(block.text, link)}</p>` : `<p class="lede">${inline(block.text, link)}</p>`);
        break;
      case "list": {
        const tag = block.ordered ? "ol" : "ul";
        const items = block.items.map((item) => `  <li>${inline(item, link)}</li>`);
        into.push(`<${tag}>\n${items.join("\n")}\n</${tag}>`);
        break;
      }
      case "code": {
        const language = block.language ? ` class="language-${escapeAttribute(block.language)}"` : "";
        // Reachable from the keyboard, since a long line scrolls it sideways.
        into.push(`<pre tabindex="0"><code${language}>${escapeCode(block.code)}</code></pre>`);
        break;
      }
      case "table": {
        // A region that scrolls sideways on a narrow screen, reachable from the keyboard, and
        // named after its heading (and its number when a heading has several), but not as
        // the section is, since each landmark's name must be its own.
        const count = (labels.get(heading) ?? 0) + 1;
        labels.set(heading, count);
        const label = `${heading} (table${count > 1 ? ` ${count}` : ""})`;
        const cell = (tag, text, column, scope = "") =>
          `<${tag}${scope}${block.align[column] ? ' class="num"' : ""}>${inline(text, link)}</${tag}>`;
        const head = block.head.map((text, column) => cell("th", text, column, ' scope="col"')).join("");
        const rows = block.rows.map((row) => `      <tr>${row.map((text, column) => cell("td", text, column)).join("")}</tr>`);
        into.push(
          [
            `<div class="table-wrap" role="region" aria-label="${escapeAttribute(label)}" tabindex="0">`,
            "  <table>",
            `    <thead><tr>${head}</tr></thead>`,
            "    <tbody>",
            ...rows,
            "    </tbody>",
            "  </table>",
            "</div>",
          ].join("\n"),
        );
        break;
      }
      case "html":
        // The frame loads the module itself; a widget stands in a figure of its own.
        if (/^<script\b[^>]*><\/script>$/.test(block.html.trim())) break;
        into.push(/^<rate-limit-demo\b/.test(block.html) ? `<figure class="demo">\n${block.html}\n</figure>` : block.html);
        break;
    }
  }
  if (sections.length === 0) throw new PageError(`${shown(CHAPTER)}: the chapter has no ## section`);
  return { title, lede: lede.join("\n"), sections };
}

/** The frame with the chapter in it: every `{{name}}` of the frame must be filled. */
export function fill(frame, { title, lede, sections }) {
  const parts = {
    title: plain(title),
    heading: title,
    lede,
    contents: sections.map(({ id, title }) => `<li><a href="#${id}">${title}</a></li>`).join("\n"),
    sections: sections
      .map(
        ({ id, title, html }) =>
          `<section id="${id}" aria-labelledby="${id}-title">\n<h2 id="${id}-title">${title}</h2>\n${html.join("\n")}\n</section>`,
      )
      .join("\n\n"),
  };
  const used = new Set();
  const page = frame.replace(/\{\{(\w+)\}\}/g, (whole, name) => {
    if (!(name in parts)) throw new PageError(`${shown(FRAME)}: {{${name}}} is not a part of the page; the parts are ${Object.keys(parts).join(", ")}`);
    used.add(name);
    return parts[name];
  });
  const missing = Object.keys(parts).filter((name) => !used.has(name));
  if (missing.length) throw new PageError(`${shown(FRAME)} has no place for ${missing.map((name) => `{{${name}}}`).join(", ")}`);
  return page;
}

/** The page, from the chapter and the frame on disk. */
export function page() {
  return fill(readFileSync(FRAME, "utf8"), renderChapter(readLines(CHAPTER)));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.argv[2];
  if (!out || process.argv.length > 3) {
    console.error("usage: node scripts/consumer-page.mjs OUT");
    process.exit(2);
  }
  try {
    writeFileSync(out, page());
  } catch (error) {
    if (!(error instanceof PageError)) throw error;
    console.error(`consumer-page: ${error.message}`);
    process.exit(1);
  }
}
