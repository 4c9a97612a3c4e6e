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

-- The counters as stored at `counted`, rolled to the window of `at`, and how far `at` is
-- into that window.
local function roll(at, window, counted, previous, current)
    local elapsed = fmod(at, window)
    local start = at - elapsed
    if counted < start then
        if start - counted <= window then
            return current, 0, elapsed
        end
        return 0, 0, elapsed
    end
    return previous, current, elapsed
end

local function open(first, tokens, window)
    local key = keys[first]
    local stored_previous, stored_current, counted, seen =
        load(key, FORMAT, SIZE, 'previous', 'current', 'counted', 'seen')
    stored_previous, stored_current = stored_previous or 0, stored_current or 0
    counted, seen = counted or 0, seen or 0

    local at, ahead = decided_at(seen)
    local previous, current, elapsed = roll(at, window, counted, stored_previous, stored_current)

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
-- for `room` (scaled) is W − min(floor(room / spent), W). The ms from `elapsed` into the
-- window until a request of c tokens fits, under the rolled counters.
local function wait_of(tokens, window, elapsed, previous, current, c)
    if current <= tokens - c then
        -- The room the previous window's tokens leave, as they slide out.
        local share = floor_div((tokens - current - c) * window, previous)
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

local function wait(b, c)
    return wait_of(b.tokens, b.window, b.elapsed, b.previous, b.current, c)
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

-- One limit's hit, as open, the judge, spend and note decide and write it (prelude.lua).
hit_alone = function(key, tokens, window)
    local stored = redis.pcall('GET', key)
    local stored_previous, stored_current, counted, seen = 0, 0, 0, 0
    if type(stored) == 'string' and #stored == SIZE then
        stored_previous, stored_current, counted, seen = struct.unpack(FORMAT, stored)
    elseif stored then
        return nil
    end
    local at, ahead = decided_at(seen)
    local previous, current, elapsed = roll(at, window, counted, stored_previous, stored_current)
    local used = previous * (window - elapsed) + current * window
    local holds = 2 * window - elapsed
    local outcome, waited = 0, 0
    if cost > tokens then
        outcome = 2
    elseif cost > 0 and used > (tokens - cost) * window then
        outcome, waited = 1, wait_of(tokens, window, elapsed, previous, current, cost)
    end
    if outcome == 0 and cost > 0 then
        current = current + cost
        used = used + cost * window
        store(key, holds, ahead, FORMAT, previous, current, at, at)
    elseif at > seen then
        store(key, holds, ahead, FORMAT, stored_previous, stored_current, counted, at)
    end
    return struct.pack('<ddddddddd', outcome, used, at, waited, now, 1, previous, current,
        elapsed)
end
