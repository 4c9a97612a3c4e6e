import assert from "node:assert/strict";
import { test } from "node:test";

import { binOutcomes, checkReplay, harEntries, isHar, lineChunks } from "./replay-log.js";

test("a log is a HAR when it starts with {, as the CLI decides", () => {
  assert.equal(isHar('{"log":{}}'), true);
  assert.equal(isHar(' \n\t{"log":{}}'), true);
  assert.equal(isHar("t_ms,cost\n0,1"), false);
  assert.equal(isHar(""), false);
});

test("chunks hold whole lines, and joined back give the text", () => {
  const text = "t_ms,cost\n0,1\n\n5,1\r\n9,2\n";
  for (const lines of [1, 2, 3, 100]) {
    const chunks = [...lineChunks(text, lines)];
    assert.equal(chunks.join("\n"), text.slice(0, -1), `${lines} a chunk`);
    for (const chunk of chunks.slice(0, -1)) assert.equal(chunk.split("\n").length, lines);
  }
  assert.deepEqual([...lineChunks("a\nb", 1)], ["a", "b"]);
  // No final line break: the last line is still read; nothing: one empty line, which the
  // core calls an empty input.
  assert.deepEqual([...lineChunks("", 5)], [""]);
  assert.deepEqual([...lineChunks("\n", 5)], [""]);
});

test("a HAR's entries give their start and status, whatever is missing", () => {
  const har = JSON.stringify({
    log: {
      entries: [
        { startedDateTime: "2026-12-04T10:00:00.000Z", response: { status: 200 } },
        { startedDateTime: 5, response: {} },
        {},
      ],
    },
  });
  const entries = harEntries(har);
  assert.deepEqual(entries[0], { started: "2026-12-04T10:00:00.000Z", status: 200 });
  assert.equal(entries[1].started, undefined);
  assert.ok(Number.isNaN(entries[1].status));
  assert.equal(entries.length, 3);
});

test("JSON that is no HAR gets the CLI's message", () => {
  assert.throws(() => harEntries('{"log": {}}'), /has no log\.entries list/);
  assert.throws(() => harEntries("{ nope"), /starts with \{ but is not JSON/);
});

test("outcomes fall into equal bins of the log's span", () => {
  const times = [0, 10, 50, 99, 100];
  const codes = [0, 1, 0, 2, 0];
  const { allowed, refused } = binOutcomes(times, codes, 5, 100, 2);
  assert.deepEqual([...allowed], [1, 2]);
  assert.deepEqual([...refused], [1, 1]);
  // Only the first `length` requests count; a log at one instant fills the first bin.
  assert.deepEqual([...binOutcomes(times, codes, 2, 0, 3).refused], [1, 0, 0]);
});

test("replay is a boolean attribute, and not beside compare or endpoint", () => {
  const alone = { compare: false, endpoint: null };
  for (const replay of ["", "true", "replay"]) checkReplay({ ...alone, replay });
  assert.throws(() => checkReplay({ ...alone, replay: "yes" }), /replay="yes" is not allowed/);
  assert.throws(() => checkReplay({ replay: "", compare: true, endpoint: null }), /cannot be used with compare/);
  assert.throws(() => checkReplay({ replay: "", compare: false, endpoint: "/api" }), /cannot be used with endpoint/);
});
