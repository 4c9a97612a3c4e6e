"""Parses RateLimit-Policy and RateLimit field values with http-sf (RFC 9651), a Structured
Fields parser nobody on this project wrote, for crates/trickle-cli/tests/ietf.rs.

Reads a JSON array of field values on stdin; writes, for each, the list it parses to:
[{"name": ITEM, "params": {KEY: VALUE}}], or {"error": MESSAGE} when it does not parse.
"""

import json
import sys

import http_sf


def parsed(value):
    try:
        members = http_sf.parse(value.encode("ascii"), tltype="list")
    except Exception as error:  # http-sf raises ValueError; anything else is a failure too
        return {"error": f"{type(error).__name__}: {error}"}
    out = []
    for item, params in members:
        if isinstance(item, list):
            return {"error": "an inner list, where the field holds items"}
        out.append({"name": item, "params": dict(params)})
    return out


print(json.dumps([parsed(value) for value in json.load(sys.stdin)]))
