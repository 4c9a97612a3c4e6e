// Parses RateLimit-Policy and RateLimit field values with npm's structured-headers (RFC 9651),
// a Structured Fields parser nobody on this project wrote, for crates/trickle-cli/tests/ietf.rs (beside its node_modules).
//
// Reads a JSON array of field values on stdin; writes, for each, the list it parses to:
// [{"name": ITEM, "params": {KEY: VALUE}}], or {"error": MESSAGE} when it does not parse.
import { parseList } from 'structured-headers';

const parsed = (value) => {
  let members;
  try {
    members = parseList(value);
  } catch (error) {
    return { error: `${error.name}: ${error.message}` };
  }
  const out = [];
  for (const [item, params] of members) {
    if (Array.isArray(item)) return { error: 'an inner list, where the field holds items' };
    out.push({ name: item, params: Object.fromEntries(params) });
  }
  return out;
};

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
process.stdout.write(JSON.stringify(JSON.parse(input).map(parsed)));
