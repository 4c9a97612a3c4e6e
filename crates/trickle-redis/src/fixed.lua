-- The fixed window, decided as trickle's core decides it (src/algorithms/fixed.rs).
--
-- The hash holds current (the tokens spent in the window of `counted`), counted (the time
-- of the last spend) and seen (the latest time any request brought).
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the counter
-- alone and writes at most `seen`, and only when its time is later than any seen before:
-- the core reads a clock that went backwards as the latest time seen. The core rolls its
-- counter on every request; rolling here only when spending decides the same, because a
-- request that spends nothing in a later window finds the counter empty either way.
--
-- A reservation's tokens count while its window lasts; its pending record expires at the
-- window's end (plus the grace).

local stored = redis.call('HMGET', KEYS[1], 'current', 'counted', 'seen')
local current = tonumber(stored[1]) or 0
local counted = tonumber(stored[2]) or 0
local seen = tonumber(stored[3]) or 0

local at = decided_at(seen)

-- The counter belongs to the window of `counted`; in any later window it is empty.
local elapsed = math.fmod(at, window)
if counted < at - elapsed then
    current = 0
end

-- used × W = current × W: at most N × W after hits, at most 2^53 after records.
local used = current * window

-- The counter stops counting when the window of `at` ends, W − e from now.
local function keep()
    expire(window - elapsed)
end

local function save()
    redis.call('HSET', KEYS[1], 'current', int(current), 'counted', int(at), 'seen', int(at))
    keep()
end

if op == 'record' then
    -- Charged whatever it is, as long as current × W stays exact.
    if cost > floor_div(EXACT, window) - current then
        return {3, used, at, 0, now, 0, 0, 0, 0}
    end
    current = current + cost
    used = current * window
    save()
    return {0, used, at, 0, now, 0, 0, 0, 0}
end

if op == 'settle' then
    local settled = settle(reserved_at >= at - elapsed, function(more)
        -- As a record: current × W stays exact.
        return more <= floor_div(EXACT, window) - current
    end, function(sign, tokens)
        current = changed(current, sign, tokens)
        used = current * window
        save()
    end, function()
        note(seen, at, keep)
    end)
    if not settled then
        return {3, used, at, 0, now, 0, 0, 0, 0}
    end
    return {0, used, at, 0, now, 0, 0, 0, 0}
end

local outcome, wait = judge(used), 0
if outcome == 1 then
    -- Nothing comes back before the window ends, and then everything does.
    wait = window - elapsed
end

finish(outcome, seen, at, function()
    current = current + cost
    used = used + cost * window
    save()
end, keep, window - elapsed)

return {outcome, used, at, wait, now, 0, 0, 0, 0}
