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

local function open(b, first)
    local key = KEYS[first]
    local previous, current, counted, seen =
        load(key, FORMAT, SIZE, 'previous', 'current', 'counted', 'seen')
    previous, current, counted, seen = previous or 0, current or 0, counted or 0, seen or 0
    -- As stored, for a write of `seen` alone.
    b.key, b.stored_previous, b.stored_current, b.counted, b.seen =
        key, previous, current, counted, seen

    local window = b.window
    local at, ahead = decided_at(seen)

    -- Roll the counters from the window of `counted` to the window of `at`.
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
    -- window or an earlier one, which stop counting no later.
    b.at, b.ahead, b.holds = at, ahead, 2 * window - elapsed
    b.previous, b.current, b.elapsed, b.start = previous, current, elapsed, start
    -- used × W = previous × (W − e) + current × W: at most 2 × N × W after hits alone, and
    -- at most (previous + current) × W ≤ 2^53 after records.
    b.used = previous * (window - elapsed) + current * window
end

local function save(b)
    b.used = b.previous * (b.window - b.elapsed) + b.current * b.window
    store(b.key, b.holds, b.ahead, FORMAT, b.previous, b.current, b.at, b.at)
end

-- The first offset into a window at which `spent` tokens of the window before leave
-- room for `room` (scaled): W − min(floor(room / spent), W).
local function first_fit(window, spent, room)
    local share = floor_div(room, spent)
    if share > window then
        share = window
    end
    return window - share
end

local function wait(b, c)
    local tokens, window, current = b.tokens, b.window, b.current
    if current <= tokens - c then
        local ms = first_fit(window, b.previous, (tokens - current - c) * window) - b.elapsed
        if ms < 0 then
            return 0
        end
        return ms
    end
    return (window - b.elapsed) + first_fit(window, current, (tokens - c) * window)
end

local function spend(b, more)
    b.current = b.current + more
    save(b)
end

local function note(b)
    if b.at > b.seen then
        store(b.key, b.holds, b.ahead, FORMAT, b.stored_previous, b.stored_current, b.counted, b.at)
    end
end

-- (previous + current) × W stays exact.
local function fits(b, more)
    return more <= floor_div(EXACT, b.window) - b.previous - b.current
end

-- The reservation's tokens are in `current` from the start of the window of `at` on, in
-- `previous` through the window before.
local function counts(b)
    return reserved_at >= b.start or b.start - reserved_at <= b.window
end

local function adjust(b, sign, amount)
    if reserved_at >= b.start then
        b.current = changed(b.current, sign, amount)
    else
        b.previous = changed(b.previous, sign, amount)
    end
    save(b)
end

local function counters(b)
    return 1, b.previous, b.current, b.elapsed
end
