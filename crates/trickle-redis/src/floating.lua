-- The floating window, decided as trickle's core decides it (src/algorithms/floating.rs).
--
-- The bucket holds previous, current, counted (the time the counters were last rolled to)
-- and seen (the latest time any request brought), in that order.
--
-- A reservation's tokens are in `current` while its window lasts and in `previous` through
-- the next one; from the end of that one on they no longer count, and its pending record
-- expires then (plus the grace).
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the
-- counters alone and writes at most `seen`, and only when its time is later than any seen
-- before: the core reads a clock that went backwards as the latest time seen, so that
-- time is part of every later decision.

local keys_per_limit = 1
local FORMAT, SIZE = '<dddd', 32

local function open(first, tokens, window)
    local key = keys[first]
    local stored_previous, stored_current, counted, seen =
        load(key, FORMAT, SIZE, 'previous', 'current', 'counted', 'seen')
    stored_previous, stored_current = stored_previous or 0, stored_current or 0
    counted, seen = counted or 0, seen or 0

    local at, ahead = decided_at(seen)

    -- Roll the counters from the window of `counted` to the window of `at`.
    local previous, current = stored_previous, stored_current
    local elapsed = fmod(at, window)
    local start = at - elapsed
    if counted < start then
        if start - counted <= window then
            previous, current = current, 0
        else
            previous, current = 0, 0
        end
    end

    -- The counters of the window of `at` count until the end of the window after it, 2W − e
    -- from now (at most 2^53, as W ≤ 2^52); a write of `seen` alone keeps counters of that
    -- window or an earlier one, which stop counting no later. used × W = previous × (W − e)
    -- + current × W: at most 2 × N × W after hits alone, and at most (previous + current) × W
    -- ≤ 2^53 after records.
    return {
        tokens = tokens, window = window, at = at, ahead = ahead, holds = 2 * window - elapsed,
        used = previous * (window - elapsed) + current * window, outcome = 0, waited = 0,
        -- The counters rolled to the window of `at`, how far `at` is into that window, and
        -- as stored, for a write of `seen` alone.
        key = key, previous = previous, current = current, elapsed = elapsed,
        stored_previous = stored_previous, stored_current = stored_current,
        counted = counted, seen = seen,
    }
end

local function save(b)
    local window, elapsed = b.window, b.elapsed
    b.used = b.previous * (window - elapsed) + b.current * window
    store(b.key, b.holds, b.ahead, FORMAT, b.previous, b.current, b.at, b.at)
end

-- The first offset into a window at which `spent` tokens of the window before leave room
-- for `room` (scaled) is W − min(floor(room / spent), W).
local function wait(b, c)
    local tokens, window, elapsed = b.tokens, b.window, b.elapsed
    local current = b.current
    if current <= tokens - c then
        -- The room the previous window's tokens leave, as they slide out.
        local share = floor_div((tokens - current - c) * window, b.previous)
        if share > window then
            share = window
        end
        local ms = window - share - elapsed
        if ms < 0 then
            return 0
        end
        return ms
    end
    -- This window's tokens must first become the previous window's.
    local share = floor_div((tokens - c) * window, current)
    if share > window then
        share = window
    end
    return (window - elapsed) + (window - share)
end

local function spend(b, more)
    b.current = b.current + more
    save(b)
end

local function note(b)
    local at = b.at
    if at > b.seen then
        store(b.key, b.holds, b.ahead, FORMAT, b.stored_previous, b.stored_current,
            b.counted, at)
    end
end

-- What only a record or a settle uses: fits, counts and adjust.

-- (previous + current) × W stays exact.
local function fits(b, more)
    return more <= floor_div(EXACT, b.window) - b.previous - b.current
end

-- The reservation's tokens are in `current` from the start of the window of `at` on, in
-- `previous` through the window before.
local function counts(b)
    local start = b.at - b.elapsed
    return reserved_at >= start or start - reserved_at <= b.window
end

local function adjust(b, sign, amount)
    if reserved_at >= b.at - b.elapsed then
        b.current = changed(b.current, sign, amount)
    else
        b.previous = changed(b.previous, sign, amount)
    end
    save(b)
end

local function counters(b)
    return 1, b.previous, b.current, b.elapsed
end
