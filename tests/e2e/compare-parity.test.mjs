// Compare mode counts in JS (www/src/tally.js) what src/analysis/compare.rs counts for the
// replay CLI's `--compare`: which presses the floating window answered differently from the
// exact sliding log (wrongly allowed, wrongly limited), and the tokens each algorithm let in
// during the last W, whose largest value is the CLI's "at most … tokens in any W ms". It stays
// in JS so that the WebAssembly every page downloads carries no comparison; this test keeps
// the two definitions one. The same seeded request log goes through `trickle replay
// --compare sliding-log` and through the package's own limiters (dist/limiter.js, under
// Node) with the widget's Tally, and every row and total must agree. No browser is needed.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
/** The CLI `make cli` builds; TRICKLE points the test at another build of it. */
const CLI = process.env.TRICKLE ?? join(REPO, "target", "release", "trickle");
const LIMITER = join(REPO, "packages", "rate-limit-demo", "dist", "limiter.js");
for (const [file, make] of [
  [CLI, "make cli"],
  [LIMITER, "make package"],
]) {
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`${make}\` first`);
}

const { load, Limiter } = await import(LIMITER);
const { Tally, disagreement } = await import(join(REPO, "www", "src", "tally.js"));
await load();

/**
 * A request log that meets the limit often, with bursts around window boundaries, where the
 * algorithms part: `count` requests from a seeded generator, times in ms, costs 1 to 3.
 */
function requestLog(seed, count, windowMs) {
  let state = seed;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const rows = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    // Mostly quick presses, now and then a pause of up to a window and a half.
    t += random() < 0.15 ? Math.floor(random() * windowMs * 1.5) : Math.floor(random() * 120);
    rows.push({ t, cost: random() < 0.8 ? 1 : 2 + Math.floor(random() * 2) });
  }
  return rows;
}

const scratch = mkdtempSync(join(tmpdir(), "trickle-parity-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The CLI's rows (allowed, the reference's, the disagreement) and its summary's totals. */
function replay(log, limit, algorithm) {
  const file = join(scratch, `${algorithm}.csv`);
  writeFileSync(file, `t_ms,cost\n${log.map(({ t, cost }) => `${t},${cost}`).join("\n")}\n`);
  const { status, stdout, stderr: summary } = spawnSync(
    CLI,
    ["replay", "--limit", limit, "--algorithm", algorithm, "--compare", "sliding-log", file],
    { encoding: "utf8" },
  );
  assert.equal(status, 0, summary);
  const [header, ...lines] = stdout.trim().split("\n");
  const columns = header.split(",");
  const rows = lines.map((line) => Object.fromEntries(line.split(",").map((v, i) => [columns[i], v])));
  const totals = summary.match(
    /(\d+) requests, (\d+) wrongly allowed .*?, (\d+) wrongly limited .*?, at most (\d+) tokens in any \d+ ms .*?\(sliding-log: (\d+) =/s,
  );
  assert.ok(totals, `the CLI's summary did not read as expected:\n${summary}`);
  const [, requests, wronglyAllowed, wronglyLimited, worst, referenceWorst] = totals.map(Number);
  return { rows, requests, wronglyAllowed, wronglyLimited, worst, referenceWorst };
}

/** The same log through the widget's limiters and Tally, as compare mode runs them. */
function widget(log, limit, algorithm) {
  const limiters = [new Limiter({ limit, algorithm }), new Limiter({ limit, algorithm: "sliding-log" })];
  const tally = new Tally(Limiter, [algorithm, "sliding-log"], limiters[0].windowMs);
  try {
    let worst = 0;
    let referenceWorst = 0;
    let verdict = null;
    const rows = log.map(({ t, cost }) => {
      const decisions = limiters.map((limiter) => limiter.hit(t, cost));
      verdict = tally.add(decisions, t);
      worst = Math.max(worst, tally.admitted(0, t));
      referenceWorst = Math.max(referenceWorst, tally.admitted(1, t));
      return {
        allowed: String(decisions[0].allowed),
        reference_allowed: String(decisions[1].allowed),
        disagreement: disagreement(decisions[0], decisions[1]) ?? "",
      };
    });
    return { rows, verdict, presses: tally.presses, worst, referenceWorst };
  } finally {
    tally.free();
    for (const limiter of limiters) limiter.free();
  }
}

describe("compare mode counts as `trickle replay --compare sliding-log` does", () => {
  const limit = "5/1s";
  const log = requestLog(20_261_203, 600, 1000);

  it("the floating window: every answer, the disagreements and their counts", () => {
    const cli = replay(log, limit, "floating");
    const js = widget(log, limit, "floating");
    const pick = ({ allowed, reference_allowed, disagreement }) => ({ allowed, reference_allowed, disagreement });
    assert.deepEqual(js.rows, cli.rows.map(pick));
    assert.ok(cli.wronglyAllowed + cli.wronglyLimited > 0, "a log in which they never disagree tests nothing");
    assert.deepEqual(
      { presses: js.presses, wronglyAllowed: js.verdict.wronglyAllowed, wronglyLimited: js.verdict.wronglyLimited },
      { presses: cli.requests, wronglyAllowed: cli.wronglyAllowed, wronglyLimited: cli.wronglyLimited },
    );
  });

  for (const algorithm of ["floating", "fixed", "token-bucket"]) {
    it(`${algorithm}: the most tokens let in within W, and the sliding log's`, () => {
      const cli = replay(log, limit, algorithm);
      const js = widget(log, limit, algorithm);
      assert.equal(js.worst, cli.worst);
      assert.equal(js.referenceWorst, cli.referenceWorst);
      assert.ok(cli.referenceWorst <= 5, "the sliding log never lets in more than N");
      if (algorithm !== "token-bucket") {
        assert.ok(cli.worst > 5, "a log that never lets a window-based algorithm past N tests little");
      }
    });
  }
});
