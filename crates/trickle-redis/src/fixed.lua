-- The fixed window, decided as trickle's core decides it (src/algorithms/fixed.rs).
--
-- The bucket holds current (the tokens spent in the window of `counted`), counted (the time
-- of the last spend) and seen (the latest time any request brought), in that order.
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the counter
-- alone and writes at most `seen`, and only when its time is later than any seen before:
-- the core reads a clock that went backwards as the latest time seen. The core rolls its
-- counter on every request; rolling here only when spending decides the same, because a
-- request that spends nothing in a later window finds the counter empty either way.
--
-- A reservation's tokens count while its window lasts; its pending record expires at the
-- window's end (plus the grace).

local keys_per_limit = 1
local FORMAT, SIZE = '<ddd', 24

local function open(first, tokens, window)
    local key = keys[first]
    local stored_current, counted, seen = load(key, FORMAT, SIZE, 'current', 'counted', 'seen')
    stored_current, counted, seen = stored_current or 0, counted or 0, seen or 0

    local at, ahead = decided_at(seen)

    -- The counter belongs to the window of `counted`; in any later window it is empty.
    local current = stored_current
    local elapsed = fmod(at, window)
    if counted < at - elapsed then
        current = 0
    end

    -- The counter stops counting when the window of `at` ends, W − e from now. used × W =
    -- current × W: at most N × W after hits, at most 2^53 after records.
    return {
        tokens = tokens, window = window, at = at, ahead = ahead, holds = window - elapsed,
        used = current * window, outcome = 0, waited = 0,
        -- The counter in the window of `at`, when that window started, and as stored, for a
        -- write of `seen` alone.
        key = key, current = current, start = at - elapsed,
        stored_current = stored_current, counted = counted, seen = seen,
    }
end

local function save(b)
    b.used = b.current * b.window
    store(b.key, b.holds, b.ahead, FORMAT, b.current, b.at, b.at)
end

-- Nothing comes back before the window ends, and then everything does.
local function wait(b)
    return b.holds
end

local function spend(b, more)
    b.current = b.current + more
    save(b)
end

local function note(b)
    local at = b.at
    if at > b.seen then
        store(b.key, b.holds, b.ahead, FORMAT, b.stored_current, b.counted, at)
    end
end

-- What only a record or a settle uses: fits, counts and adjust.

-- current × W stays exact.
local function fits(b, more)
    return more <= floor_div(EXACT, b.window) - b.current
end

local function counts(b)
    return reserved_at >= b.start
end

local function adjust(b, sign, amount)
    b.current = changed(b.current, sign, amount)
    save(b)
end

local function counters()
    return 0, 0, 0, 0
end
