#!/usr/bin/env python3
"""A polite API client: it sends COUNT requests to URL at a steady pace, and when the server
answers 429 Too Many Requests it waits as long as Retry-After says before sending the same
request again. Standard library only: python3 client.py URL [COUNT]"""

import email.utils
import random
import sys
import time
import urllib.error
import urllib.request

PACE_S = 1  # one request a second: set it well below your API's limit
MAX_ATTEMPTS = 5  # a server still refusing after this many is not coming back soon
BACKOFF_BASE_S = 1  # without Retry-After, wait 1 s, then 2 s, 4 s, ...
BACKOFF_CAP_S = 8  # ... never more than 8 s, each plus up to half again at random
MAX_WAIT_S = 60  # a client asked to wait longer would look hung: stop and say so


def parse_retry_after(value):
    """Retry-After in seconds: either whole seconds ("120") or an HTTP date; None if absent
    or garbled."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return int(value)
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, date.timestamp() - time.time())


def backoff(attempt):
    """Exponential backoff plus a random part, so that clients refused together spread out."""
    step = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))
    return step + random.random() * step / 2


def send(url):
    """Sends one GET (safe to repeat) until it succeeds or there is no point trying again.
    Returns whether it succeeded, and what happened."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        retry_after = None
        try:
            # A request that hangs is retried like one that failed.
            with urllib.request.urlopen(url, timeout=10) as response:
                return True, f"{response.status} on attempt {attempt}"
        except urllib.error.HTTPError as error:  # urllib raises on any status but 2XX
            error.close()
            # 429 and 5XX may pass later; any other 4XX is our mistake and would fail again.
            if error.code != 429 and error.code < 500:
                return False, f"{error.code}, not retried"
            last = error.code
            retry_after = parse_retry_after(error.headers.get("Retry-After"))
        except OSError as error:
            # The network failed, not the server: like a 5XX, try again later.
            last = getattr(error, "reason", error)
        wait = backoff(attempt) if retry_after is None else retry_after
        if wait > MAX_WAIT_S:
            return False, "gave up, Retry-After is too long"
        if attempt < MAX_ATTEMPTS:
            time.sleep(wait)
    return False, f"gave up after {MAX_ATTEMPTS} attempts: {last}"


def main(args):
    url = args[0] if args else ""
    count = args[1] if len(args) == 2 else "8"
    usable = url.startswith(("http://", "https://")) and count.isdecimal() and int(count) >= 1
    if not usable or len(args) > 2:
        print("usage: python3 client.py URL [COUNT]", file=sys.stderr)
        sys.exit(2)
    count = int(count)
    all_ok = True
    for n in range(1, count + 1):
        if n > 1:
            time.sleep(PACE_S)
        ok, line = send(url)
        all_ok = all_ok and ok
        print(f"request {n}: {line}", flush=True)
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
