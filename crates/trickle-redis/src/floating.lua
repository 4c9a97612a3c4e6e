-- The floating window, decided as trickle's core decides it (src/algorithms/floating.rs).
--
-- The hash holds previous, current, counted (the time the counters were last rolled to)
-- and seen (the latest time any request brought).
--
-- A reservation's tokens are in `current` while its window lasts and in `previous` through
-- the next one; from the end of that one on they no longer count, and its pending record
-- expires then (plus the grace).
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the
-- counters alone and writes at most `seen`, and only when its time is later than any seen
-- before: the core reads a clock that went backwards as the latest time seen, so that
-- time is part of every later decision.

local stored = redis.call('HMGET', KEYS[1], 'previous', 'current', 'counted', 'seen')
local previous = tonumber(stored[1]) or 0
local current = tonumber(stored[2]) or 0
local counted = tonumber(stored[3]) or 0
local seen = tonumber(stored[4]) or 0

local at = decided_at(seen)

-- Roll the counters from the window of `counted` to the window of `at`.
local elapsed = math.fmod(at, window)
local start = at - elapsed
if counted < start then
    if start - counted <= window then
        previous, current = current, 0
    else
        previous, current = 0, 0
    end
end

-- used × W = previous × (W − e) + current × W: at most 2 × N × W after hits alone, and
-- at most (previous + current) × W ≤ 2^53 after records.
local used = previous * (window - elapsed) + current * window

-- The counters of the window of `at` count until the end of the window after it, 2W − e
-- from now (at most 2^53, as W ≤ 2^52); a write of `seen` alone keeps counters of that
-- window or an earlier one, which stop counting no later.
local function keep()
    expire(2 * window - elapsed)
end

local function save()
    redis.call('HSET', KEYS[1], 'previous', int(previous), 'current', int(current),
        'counted', int(at), 'seen', int(at))
    keep()
end

if op == 'record' then
    -- Charged whatever it is, as long as (previous + current) × W stays exact.
    if cost > floor_div(EXACT, window) - previous - current then
        return {3, used, at, 0, now, 1, previous, current, elapsed}
    end
    current = current + cost
    used = used + cost * window
    save()
    return {0, used, at, 0, now, 1, previous, current, elapsed}
end

if op == 'settle' then
    -- The counter that holds the reservation's tokens at `at`, if any still does.
    local holds_current = reserved_at >= start
    local holds_previous = not holds_current and start - reserved_at <= window
    local settled = settle(holds_current or holds_previous, function(more)
        -- As a record: (previous + current) × W stays exact.
        return more <= floor_div(EXACT, window) - previous - current
    end, function(sign, tokens)
        if holds_current then
            current = changed(current, sign, tokens)
        else
            previous = changed(previous, sign, tokens)
        end
        used = previous * (window - elapsed) + current * window
        save()
    end, function()
        note(seen, at, keep)
    end)
    if not settled then
        return {3, used, at, 0, now, 1, previous, current, elapsed}
    end
    return {0, used, at, 0, now, 1, previous, current, elapsed}
end

local outcome, wait = judge(used), 0
if outcome == 1 then
    -- The first offset into a window at which `spent` tokens of the window before leave
    -- room for `room` (scaled): W − min(floor(room / spent), W).
    local function first_fit(spent, room)
        local share = floor_div(room, spent)
        if share > window then
            share = window
        end
        return window - share
    end
    if current <= tokens - cost then
        wait = first_fit(previous, (tokens - current - cost) * window) - elapsed
        if wait < 0 then
            wait = 0
        end
    else
        wait = (window - elapsed) + first_fit(current, (tokens - cost) * window)
    end
end

finish(outcome, seen, at, function()
    current = current + cost
    used = used + cost * window
    save()
end, keep, 2 * window - elapsed)

return {outcome, used, at, wait, now, 1, previous, current, elapsed}
