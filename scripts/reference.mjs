#!/usr/bin/env node
// The widget's reference page, docs/src/reference.md, written from the package's own metadata so
// that it cannot drift from the code: the attributes, members, event, parts and custom
// properties come from custom-elements.json (which `make package` builds from the JSDoc tags in
// www/src/element.js), and the event detail's fields from the hand-written types in
// packages/rate-limit-demo/types/*.d.ts. Nothing in this file knows a fact about the widget.
//
//   node scripts/reference.mjs                                 # the Markdown, on stdout
//   node scripts/reference.mjs --write docs/src/reference.md   # what `make docs` runs
//   node scripts/reference.mjs --readme                        # the attribute table into
//                                                              # the package's README (`make package`)
//
// The same inputs give the same bytes: no date, the .d.ts files read in sorted order, rows in
// the order the sources declare them. A missing input or an empty section exits with status 1
// and a message saying which.

import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const PACKAGE = join(REPO, "packages", "rate-limit-demo");
const MANIFEST = join(PACKAGE, "custom-elements.json");
const TYPES = join(PACKAGE, "types");
const SOURCE = "www/src/element.js";
const COMMAND = "node scripts/reference.mjs --write docs/src/reference.md";
const README = join(PACKAGE, "README.md");
/** Where the package's README holds the attribute table, which `--readme` writes. */
const README_START =
  "<!-- The attribute table below is written by `node scripts/reference.mjs --readme`, the same as the widget reference's; edit the JSDoc, not the table. -->";
const README_END = "<!-- The end of the attribute table. -->";

/** What is wrong with the inputs: reported as one line and exit status 1, not a stack. */
class InputError extends Error {}

function fail(text) {
  throw new InputError(text);
}

const shown = (path) => relative(REPO, path);
const typesShown = () => `${shown(TYPES)}/*.d.ts`;

// ---------------------------------------------------------------------------------------------
// The .d.ts files, read with TypeScript's own parser: the members of each exported interface
// or class with their doc comments, and each exported type alias with its own.

/** TypeScript, from www/'s packages: the repository's root has none. */
function typescript() {
  try {
    return createRequire(join(REPO, "www", "package.json"))("typescript");
  } catch {
    fail("typescript is missing from www/node_modules: run `make setup`");
  }
}

/** A doc comment's text on one line, without the slashes and stars. */
function docText(comment) {
  return comment
    .replace(/^\/\*\*|\*\/$/g, "")
    .split("\n")
    .map((line) => line.replace(/^\s*\*?\s?/, "").trim())
    .filter(Boolean)
    .join(" ");
}

/** Source text on one line, as the tables show it. */
const oneLine = (text) => text.replace(/\s+/g, " ").trim();

/**
 * The doc comment of `node`: the last `/** … *\/` comment before it. `onlyLast`: only when no
 * plain comment comes between it and the node, as for a declaration, whose doc comment is the
 * one right above it.
 */
function docOf(ts, source, node, onlyLast) {
  const text = source.getFullText();
  const comments = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
  const docs = onlyLast ? comments.slice(-1) : comments;
  const doc = docs.filter(({ pos }) => text.startsWith("/**", pos)).at(-1);
  return doc ? docText(text.slice(doc.pos, doc.end)) : null;
}

/** One member: a field (`readonly name?: type`) or a method (`name(…): type`, a constructor). */
function readMember(ts, source, node) {
  const has = (kind) => (node.modifiers ?? []).some((modifier) => modifier.kind === kind);
  const member = {
    name: node.name ? node.name.getText(source) : "constructor",
    doc: docOf(ts, source, node, false),
    static: has(ts.SyntaxKind.StaticKeyword),
    readonly: has(ts.SyntaxKind.ReadonlyKeyword),
  };
  const type = node.type ? oneLine(node.type.getText(source)) : null;
  if (ts.isPropertySignature(node) || ts.isPropertyDeclaration(node)) {
    return { ...member, kind: "field", type: type ?? "" };
  }
  return { ...member, kind: "method", returns: type };
}

/** Every `export interface`, `export class` and `export type X =` in types/*.d.ts, by name. */
function readTypes() {
  if (!existsSync(TYPES)) fail(`${shown(TYPES)} is missing`);
  const files = readdirSync(TYPES)
    .filter((file) => file.endsWith(".d.ts"))
    .sort();
  if (files.length === 0) fail(`${shown(TYPES)} holds no .d.ts file`);
  const ts = typescript();
  const declarations = new Map();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(join(TYPES, file), "utf8"), ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      const exported = (statement.modifiers ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      const kind = ts.isInterfaceDeclaration(statement)
        ? "interface"
        : ts.isClassDeclaration(statement)
          ? "class"
          : ts.isTypeAliasDeclaration(statement)
            ? "type"
            : null;
      if (!exported || !kind || !statement.name) continue;
      const name = statement.name.text;
      const declaration = { name, kind, doc: docOf(ts, source, statement, true) };
      if (kind === "type") {
        declaration.type = oneLine(statement.type.getText(source));
      } else {
        declaration.extends = (statement.heritageClauses ?? [])
          .filter((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword)
          .flatMap((clause) => clause.types.map((base) => oneLine(base.getText(source))));
        declaration.members = statement.members.map((member) => readMember(ts, source, member));
      }
      if (!declarations.has(name)) declarations.set(name, declaration);
    }
  }
  return declarations;
}

// ---------------------------------------------------------------------------------------------
// Markdown.

/** Inline code, with a longer fence when the text holds a backtick. */
function code(text) {
  const fence = text.includes("`") ? "``" : "`";
  return `${fence}${text}${fence}`;
}

/** `a`, `a and b`, `a, b and c`, or with `or`. */
function words(list, conjunction = "and") {
  if (list.length < 2) return list.join("");
  return `${list.slice(0, -1).join(", ")} ${conjunction} ${list.at(-1)}`;
}

/** A manifest description, its lines joined into one. */
function prose(text) {
  return (text ?? "").replace(/\s*\n\s*/g, " ").trim();
}

/**
 * One table cell: on one line, `|` escaped (GitHub and mdBook read `\|` as a pipe inside
 * inline code too), and `<` outside inline code escaped so that prose is never taken for HTML.
 */
function cell(text) {
  return prose(text)
    .split(/(`+[^`]*`+)/)
    .map((part, i) => (i % 2 ? part : part.replace(/</g, "&lt;")))
    .join("")
    .replace(/\|/g, "\\|");
}

function table(headings, rows) {
  const line = (cells) => `| ${cells.map(cell).join(" | ")} |`;
  return [line(headings), line(headings.map(() => "---")), ...rows.map(line)].join("\n");
}

/** A section of one table; a section with no rows is an error, `empty` says what to fix. */
function section(title, intro, headings, rows, empty) {
  if (rows.length === 0) fail(empty);
  return [`## ${title}`, intro, table(headings, rows)].filter(Boolean).join("\n\n");
}

/** A column of defaults, only when the manifest gives one for some row. */
function defaults(list) {
  if (!list.some((item) => item.default !== undefined)) return null;
  return (item) => (item.default === undefined ? "" : code(item.default));
}

// ---------------------------------------------------------------------------------------------
// The sections.

function attributes(element) {
  const list = element.attributes ?? [];
  const byDefault = defaults(list);
  const rows = list.map((attribute) => [
    code(attribute.name),
    attribute.type?.text ? code(attribute.type.text) : "",
    prose(attribute.description),
    ...(byDefault ? [byDefault(attribute)] : []),
  ]);
  return section(
    "Attributes",
    null,
    ["Attribute", "Type", "Sets", ...(byDefault ? ["Default"] : [])],
    rows,
    `the manifest lists no attributes for <${element.tagName}>: add \`@attr\` tags to ${SOURCE}`,
  );
}

function signature(element, member, declaration) {
  const parameters = (member.parameters ?? []).map((parameter) => {
    const optional = parameter.optional && parameter.default === undefined ? "?" : "";
    const type = parameter.type?.text ? `: ${parameter.type.text}` : "";
    const value = parameter.default === undefined ? "" : ` = ${parameter.default}`;
    return `${parameter.name}${optional}${type}${value}`;
  });
  const returns = member.return?.type?.text ?? declaration.returns;
  const owner = member.static ? `${element.name}.` : "";
  return `${owner}${member.name}(${parameters.join(", ")})${returns ? `: ${returns}` : ""}`;
}

/**
 * The element's public members: those the manifest lists and the published types declare.
 * The analyzer also lists what it mistakes for members (a `#private` getter, with no name; a
 * property of the shadow root set in the constructor). The types are the public contract, so
 * a member they leave out is named on stderr and left out here. A description or a type the
 * JSDoc lacks is taken from the types' declaration of the same member.
 */
function members(element, types) {
  const declared = types.get(element.name);
  if (declared?.kind !== "class") fail(`class ${element.name} not found in ${typesShown()}`);
  const typed = new Map(declared.members.map((member) => [member.name, member]));
  const rows = [];
  for (const member of element.members ?? []) {
    if (!member.name || /^[#_]/.test(member.name)) continue;
    if (member.privacy === "private" || member.privacy === "protected") continue;
    const declaration = typed.get(member.name);
    if (!declaration) {
      console.error(
        `reference: left out ${element.name}.${member.name}: the manifest lists it, ` +
          `${typesShown()} does not declare it`,
      );
      continue;
    }
    const description = prose(member.description) || declaration.doc || "";
    if (member.kind === "method") {
      const kind = member.static ? "static method" : "method";
      const call = code(signature(element, member, declaration));
      rows.push([code(member.name), kind, call, description]);
    } else {
      const type = member.type?.text ?? declaration.type ?? "";
      const modifiers = [member.static && "static", member.readonly && "read-only"];
      const kind = [...modifiers.filter(Boolean), "property"].join(" ");
      rows.push([code(member.name), kind, type ? code(type) : "", description]);
    }
  }
  return section(
    "Properties and methods",
    null,
    ["Name", "Kind", "Type or signature", "Description"],
    rows,
    `the manifest lists no public member of ${element.name} that ${typesShown()} declares`,
  );
}

/** `CustomEvent<X>` → `X`. */
function detailType(event) {
  const text = event.type?.text ?? "";
  return text.match(/^CustomEvent<(.+)>$/)?.[1].trim() ?? text;
}

function events(element) {
  const rows = (element.events ?? []).map((event) => [
    code(event.name),
    detailType(event) ? code(detailType(event)) : "",
    prose(event.description),
  ]);
  return section(
    "Events",
    null,
    ["Event", "Detail type", "Description"],
    rows,
    `the manifest lists no events for <${element.tagName}>: add \`@fires\` tags to ${SOURCE}`,
  );
}

/** An interface's fields, those it inherits first, each with the interface declaring it. */
function fieldsOf(name, types) {
  const declaration = types.get(name);
  if (declaration?.kind !== "interface") fail(`interface ${name} not found in ${typesShown()}`);
  const inherited = declaration.extends.flatMap((base) => fieldsOf(base, types));
  const own = declaration.members
    .filter((member) => member.kind === "field")
    .map((member) => ({ ...member, from: name }));
  return [...inherited, ...own];
}

/**
 * The types document some fields as a group: a field with no doc comment shares the one
 * before it (`wronglyAllowed` and `wronglyLimited`), and a comment that ends in `,`, `;` or
 * `:` runs on into the next field's (the floating window's `previous`, `current`, `overlap`
 * and `elapsedMs` are one sentence). Each group is one row, as the types read.
 */
function groupFields(fields) {
  const runsOn = (doc) => /[,;:]$/.test(doc ?? "");
  const rows = [];
  for (const field of fields) {
    const last = rows.at(-1);
    if (last && (field.doc === null || runsOn(last.doc))) {
      last.fields.push(field);
      if (field.doc !== null) last.doc = `${last.doc} ${field.doc}`;
    } else {
      rows.push({ fields: [field], doc: field.doc });
    }
  }
  return rows;
}

/**
 * A row's meaning: its doc comment or, for an undocumented field of a documented type alias
 * (`algorithm: Algorithm`), the alias's doc comment and the values it allows.
 */
function meaning(row, types) {
  const alias = types.get(row.fields[0].type);
  if (row.doc !== null || alias?.kind !== "type") return row.doc ?? "";
  if (row.fields.some((field) => field.type !== alias.name)) return "";
  const literals = alias.type.split("|").map((value) => value.trim());
  const values = literals.every((value) => /^"[^"]*"$/.test(value))
    ? words(literals.map(code), "or")
    : code(alias.type);
  return `${alias.doc ?? ""} ${code(alias.name)} is ${values}.`.trim();
}

function fieldTable(fields, types) {
  const rows = groupFields(fields).map((row) => {
    const distinct = [...new Set(row.fields.map((field) => field.type))];
    const shownTypes = distinct.length === 1 ? distinct : row.fields.map((field) => field.type);
    return [
      row.fields.map((field) => code(field.name)).join(", "),
      shownTypes.map(code).join(", "),
      meaning(row, types),
    ];
  });
  return table(["Field", "Type", "Meaning"], rows);
}

/**
 * The event detail's fields: a table for each interface that declares some, inherited ones
 * first. For the widget, `Decision` (what the limiter returns too) and what the event adds.
 */
function detailFields(element, types) {
  const details = [...new Set((element.events ?? []).map(detailType).filter(Boolean))];
  if (details.length === 0) fail(`no event of <${element.tagName}> names its detail's type`);
  const blocks = ["## Event detail"];
  for (const detail of details) {
    const fields = fieldsOf(detail, types);
    if (fields.length === 0) fail(`interface ${detail} in ${typesShown()} declares no field`);
    const { doc, extends: bases } = types.get(detail);
    const returning = [...types.values()]
      .filter((type) => type.kind === "class")
      .flatMap((type) =>
        type.members
          .filter((member) => member.kind === "method" && bases.includes(member.returns))
          .map((member) => code(`${type.name}.${member.name}`)),
      );
    const also = returning.length ? `, which ${words(returning)} also return` : "";
    blocks.push(
      [
        `${code(detail)}${doc ? `: ${doc.replace(/^The /, "the ")}` : "."}`,
        bases.length ? ` It extends ${words(bases.map(code))}${also}.` : "",
        " Fields listed together share one description in the types.",
      ].join(""),
    );
    for (const from of new Set(fields.map((field) => field.from))) {
      const inherited = from !== detail;
      const title = `${inherited ? "From" : bases.length ? "Added by" : "Fields of"} ${code(from)}`;
      const own = fields.filter((field) => field.from === from);
      blocks.push(`### ${title}`, fieldTable(own, types));
    }
  }
  return blocks.join("\n\n");
}

function cssParts(element) {
  const rows = (element.cssParts ?? []).map((part) => [code(part.name), prose(part.description)]);
  return section(
    "CSS parts",
    `Style them from the page with ${code(`${element.tagName}::part(name)`)}.`,
    ["Part", "What it is"],
    rows,
    `the manifest lists no CSS parts for <${element.tagName}>: add \`@csspart\` tags to ${SOURCE}`,
  );
}

function cssProperties(element) {
  const list = element.cssProperties ?? [];
  const byDefault = defaults(list);
  const rows = list.map((property) => [
    code(property.name),
    prose(property.description),
    ...(byDefault ? [byDefault(property)] : []),
  ]);
  const example = list[0] ? ` e.g. ${code(`${element.tagName} { ${list[0].name}: … }`)}` : "";
  return section(
    "CSS custom properties",
    `Set them on the element or any ancestor,${example}.`,
    ["Property", "Used for", ...(byDefault ? ["Default"] : [])],
    rows,
    `the manifest lists no CSS custom properties for <${element.tagName}>: ` +
      `add \`@cssprop\` tags to ${SOURCE}`,
  );
}

// ---------------------------------------------------------------------------------------------

function readManifest() {
  if (!existsSync(MANIFEST)) fail(`${shown(MANIFEST)} is missing: run \`make package\``);
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(MANIFEST, "utf8"));
  } catch (error) {
    fail(`${shown(MANIFEST)} is not JSON (${error.message}): run \`make package\` again`);
  }
  const elements = (manifest.modules ?? [])
    .flatMap((module) => module.declarations ?? [])
    .filter((declaration) => declaration.customElement && declaration.tagName);
  if (elements.length !== 1) {
    fail(`${shown(MANIFEST)} declares ${elements.length} custom elements; this page is for one`);
  }
  return elements[0];
}

/** The reference page's Markdown. */
export function reference() {
  const element = readManifest();
  const types = readTypes();
  const summary = prose(element.summary || element.description);
  return `${[
    "# Widget reference",
    [
      `Generated by ${code(COMMAND)} (run by ${code("make docs")}) from`,
      `${code(shown(MANIFEST))}, which ${code("make package")} builds from the JSDoc in`,
      `${code(SOURCE)}, and from the types in ${code(typesShown())}. Edit those, not this page.`,
    ].join("\n"),
    `${code(`<${element.tagName}>`)} (class ${code(element.name)}): ${summary}`,
    attributes(element),
    members(element, types),
    events(element),
    detailFields(element, types),
    cssParts(element),
    cssProperties(element),
  ].join("\n\n")}\n`;
}

/**
 * The package's README, `text`, with the reference page's attribute table between its two
 * markers: npm shows the README, and the table has one source, the JSDoc.
 */
export function readme(text = readFileSync(README, "utf8")) {
  const start = text.indexOf(README_START);
  const end = text.indexOf(README_END);
  if (start < 0 || end < start) {
    fail(`${shown(README)} has no place for the attribute table: put the two marker comments of scripts/reference.mjs where it goes`);
  }
  const table = attributes(readManifest()).replace(/^## Attributes\n\n/, "");
  return `${text.slice(0, start + README_START.length)}\n\n${table}\n\n${text.slice(end)}`;
}

function main(args) {
  let output = null;
  let toReadme = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--write" && args[i + 1]) output = args[++i];
    else if (args[i] === "--readme") toReadme = true;
    else fail(`unexpected argument ${args[i]}: pass nothing for stdout, --write FILE, or --readme`);
  }
  if (toReadme) {
    writeFileSync(README, readme());
    return;
  }
  const markdown = reference();
  if (output) writeFileSync(output, markdown);
  else process.stdout.write(markdown);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    console.error(`reference: ${error.message}`);
    process.exit(1);
  }
}
