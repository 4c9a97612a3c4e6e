// The docs' measured figures, from the files the measuring commands write (docs/figures/*.json),
// never copied by hand: a page writes `{{fig:bench.tower.c8.p50.ratio}}` where a figure goes,
// `{{fig-table:bench.benchmarks}}` where a whole table goes, and `{{fig-source:bench}}` for
// the command, date and machine of the run; this script puts the values in.
//
//   node scripts/figures.mjs                       as an mdBook preprocessor (book.toml)
//   node scripts/figures.mjs check                 every placeholder in docs/src resolves
//   node scripts/figures.mjs record NAME COMMAND IN.json   docs/figures/NAME.json from a
//                                                  benchmark's own JSON (figures flattened)
//   node scripts/figures.mjs record-csv NAME COMMAND IN.csv  a CSV a command printed, as a
//                                                  table and its cells
//   node scripts/figures.mjs record-table NAME COMMAND IN.md [CELLS.json]
//                                                  docs/figures/NAME.json holding a Markdown
//                                                  table a command printed, and its cells
//
// A figure file is { command, date, machine, figures: { KEY: "text" }, tables: { KEY: "md" } }:
// the figures already written as a page shows them ("1.05×", "88.1 µs"), so that a page and
// the benchmark's own table never round one number two ways.

import { readFileSync, readdirSync, writeFileSync, mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const FIGURES = join(ROOT, "docs", "figures");
export const PAGES = join(ROOT, "docs", "src");

/** `{{fig:FILE.KEY}}`, `{{fig-table:FILE.KEY}}`, `{{fig-source:FILE}}`. */
export const PLACEHOLDER = /\{\{fig(-table|-source)?:([a-z0-9_-]+)(?:\.([A-Za-z0-9_.-]+))?\}\}/g;

/** Every figure file, by name. */
export function loadFigures(dir = FIGURES) {
  const files = {};
  for (const name of readdirSync(dir).filter((name) => name.endsWith(".json"))) {
    files[name.slice(0, -".json".length)] = JSON.parse(readFileSync(join(dir, name), "utf8"));
  }
  return files;
}

/** What a placeholder stands for, or an Error saying what exists instead. */
export function resolve(files, kind, file, key) {
  const figures = files[file];
  if (!figures) {
    return new Error(`no figure file docs/figures/${file}.json (there are: ${Object.keys(files).join(", ")})`);
  }
  if (kind === "-source") {
    return `measured by \`${figures.command}\` on ${figures.date}${figures.machine ? ` (${figures.machine})` : ""}`;
  }
  const store = kind === "-table" ? figures.tables : figures.figures;
  const value = store?.[key];
  if (typeof value !== "string") {
    const near = Object.keys(store ?? {})
      .filter((known) => known.split(".")[0] === key?.split(".")[0])
      .slice(0, 8);
    return new Error(
      `docs/figures/${file}.json has no ${kind === "-table" ? "table" : "figure"} ${JSON.stringify(key)}` +
        (near.length ? ` (near it: ${near.join(", ")})` : ""),
    );
  }
  return value;
}

/** `text` with its placeholders filled in; the errors, each with its place. */
export function fill(text, files, where) {
  const errors = [];
  const filled = text.replace(PLACEHOLDER, (whole, kind = "", file, key) => {
    const value = resolve(files, kind, file, key);
    if (value instanceof Error) {
      errors.push(`${where}: ${whole}: ${value.message}`);
      return whole;
    }
    return value;
  });
  return { filled, errors };
}

/** Runs `visit` on every chapter of an mdBook book (0.5's JSON). */
function chapters(items, visit) {
  for (const item of items ?? []) {
    if (item.Chapter) {
      visit(item.Chapter);
      chapters(item.Chapter.sub_items, visit);
    }
  }
}

function preprocess() {
  const [, book] = JSON.parse(readFileSync(0, "utf8"));
  const files = loadFigures();
  const errors = [];
  chapters(book.items, (chapter) => {
    const { filled, errors: found } = fill(chapter.content, files, chapter.path ?? chapter.name);
    chapter.content = filled;
    errors.push(...found);
  });
  if (errors.length) {
    process.stderr.write(`figures: ${errors.length} placeholder(s) with no figure:\n${errors.join("\n")}\n`);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify(book));
}

/**
 * What a measured figure looks like in prose: a time below a second, or one with a
 * fraction; a size (`27,120 B`, `1,179,648 bytes`); a ratio (`1.05×`, not the product `4 × 0.625`); a percentage;
 * a rate. A page may state such a number only through a placeholder, or list it in
 * docs/figures/not-measured.txt as a number that is no measurement (a limit, a default, a
 * worked example's arithmetic), with why.
 */
const MEASURED = [
  /(?<![\w.\/^])\d[\d,]*(?:\.\d+)?\s?(?:ns|µs|us)\b/g,
  /(?<![\w.\/^])\d[\d,]*\.\d+\s?(?:ms|s)\b/g,
  /(?<![\w.\/^])\d[\d,]*(?:\.\d+)?\s?(?:kB|KB|KiB|MB|MiB|GB|B|bytes?)\b/g,
  /(?<![\w.\/^])\d[\d,]*(?:\.\d+)?\s?×(?!\s*\d)/g,
  /(?<![\w.\/^])\d[\d,]*(?:\.\d+)?\s?%/g,
  /(?<![\w.\/^])\d[\d,]*(?:\.\d+)?\s?(?:requests|decisions|hits)\/s\b/g,
];

/** A page's prose: code, placeholders and comments taken out, lines kept for the report. */
function prose(text) {
  const blank = (match) => match.replace(/[^\n]/g, " ");
  return text
    .replace(/```[\s\S]*?```/g, blank)
    .replace(/<!--[\s\S]*?-->/g, blank)
    .replace(PLACEHOLDER, blank)
    .replace(/`[^`\n]*`/g, blank)
    .replace(/\]\([^)\s]*\)/g, blank);
}

/** docs/figures/not-measured.txt: `PAGE: TEXT — why`, one number a line. */
function notMeasured() {
  const allowed = new Set();
  let text = "";
  try {
    text = readFileSync(join(FIGURES, "not-measured.txt"), "utf8");
  } catch {
    return allowed;
  }
  for (const line of text.split("\n")) {
    const entry = line.match(/^([\w.-]+\.md): (.+?) — \S/);
    if (entry) allowed.add(`${entry[1]}: ${entry[2]}`);
  }
  return allowed;
}

/** Numbers that look measured, by page and line, that no figure file holds. */
export function unsourced(dir = PAGES) {
  const allowed = notMeasured();
  const found = [];
  for (const page of readdirSync(dir).filter((name) => name.endsWith(".md"))) {
    const lines = prose(readFileSync(join(dir, page), "utf8")).split("\n");
    lines.forEach((line, index) => {
      for (const pattern of MEASURED) {
        for (const [match] of line.matchAll(pattern)) {
          if (!allowed.has(`${page}: ${match}`)) found.push(`${page}:${index + 1}: ${match}`);
        }
      }
    });
  }
  return found;
}

/** Every placeholder of every page resolves, and no page states a measured figure of its own. */
function check() {
  const files = loadFigures();
  const errors = [];
  for (const page of readdirSync(PAGES).filter((name) => name.endsWith(".md"))) {
    errors.push(...fill(readFileSync(join(PAGES, page), "utf8"), files, page).errors);
  }
  const stray = unsourced();
  if (stray.length) {
    errors.push(
      `${stray.length} number(s) that look measured, stated by hand (use {{fig:…}}, or list the ` +
        `number in docs/figures/not-measured.txt as PAGE: TEXT — why, if it is no measurement):`,
      ...stray,
    );
  }
  if (errors.length) {
    process.stderr.write(`${errors.join("\n")}\n`);
    process.exit(1);
  }
}

/** Leaves of `value` as KEY.PATH → text, numbers written as they are. */
function flatten(value, prefix = "", into = {}) {
  if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      flatten(inner, prefix ? `${prefix}.${key}` : key, into);
    }
  } else {
    into[prefix] = String(value);
  }
  return into;
}

/** The machine a figure was measured on, as a reader compares it with theirs. */
export function machine() {
  const cores = cpus();
  return `${cores.length} × ${cores[0]?.model.trim() ?? "unknown CPU"}`;
}

/** Writes docs/figures/NAME.json. */
export function write(name, command, { figures = {}, tables = {} }) {
  mkdirSync(FIGURES, { recursive: true });
  const file = {
    command,
    date: new Date().toISOString().slice(0, 10),
    machine: machine(),
    figures,
    tables,
  };
  writeFileSync(join(FIGURES, `${name}.json`), `${JSON.stringify(file, null, 2)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [, , verb, ...rest] = process.argv;
  if (verb === "supports") {
    process.exit(0);
  } else if (verb === undefined) {
    preprocess();
  } else if (verb === "check") {
    check();
  } else if (verb === "record" && rest.length === 3) {
    const [name, command, input] = rest;
    write(name, command, { figures: flatten(JSON.parse(readFileSync(input, "utf8"))) });
  } else if (verb === "record-csv" && rest.length === 3) {
    // A command's CSV (lines before the header ignored): a table, and each cell by
    // `FIRSTCELL.COLUMN`, numbers written with thousands separators as tables write them.
    const [name, command, input] = rest;
    const lines = readFileSync(input, "utf8").trim().split("\n");
    const start = lines.findIndex((line) => line.includes(",") && !/\d/.test(line));
    const [header, ...rows] = lines.slice(start).map((line) => line.split(","));
    const show = (cell) => (/^\d+$/.test(cell) ? Number(cell).toLocaleString("en-US") : cell);
    const figures = {};
    for (const row of rows) {
      header.forEach((column, index) => {
        figures[`${row[0]}.${column}`] = show(row[index]);
      });
    }
    const table = [
      `| ${header.map((column) => column.replaceAll("_", " ")).join(" | ")} |`,
      `|${header.map(() => "---:").join("|")}|`,
      ...rows.map((row) => `| ${row.map(show).join(" | ")} |`),
    ].join("\n");
    write(name, command, { figures, tables: { [name]: table } });
  } else if (verb === "record-table" && (rest.length === 3 || rest.length === 4)) {
    const [name, command, input, cells] = rest;
    const figures = cells ? flatten(JSON.parse(readFileSync(cells, "utf8"))) : {};
    write(name, command, { figures, tables: { [name]: readFileSync(input, "utf8").trim() } });
  } else {
    process.stderr.write(
      "usage: node scripts/figures.mjs [check | record NAME COMMAND IN.json | record-table NAME COMMAND IN.md [CELLS.json]]\n",
    );
    process.exit(2);
  }
}
