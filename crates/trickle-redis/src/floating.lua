-- The floating window's hit, decided as trickle's core decides it (src/floating.rs).
--
-- KEYS[1]  the bucket's hash: previous, current, counted (the time the counters were
--          last rolled to), seen (the latest time any request brought).
-- ARGV     tokens N, window W (ms), now (ms), cost (at most N + 1), ttl (ms), and "peek"
--          to decide without spending or writing anything (the core's peek).
--
-- Lua numbers are doubles, exact for integers up to 2^53. The caller checked that
-- 2 × N × W ≤ 2^53 and now ≤ 2^53, so every sum and product below is an exact integer;
-- divisions go through math.fmod, which is exact, and never through a/b rounded.
-- Numbers are written with string.format('%d') and returned as integers, never through
-- tostring, which keeps only 14 digits.
--
-- A request that spends nothing (denied, too large, or cost 0) leaves the counters alone
-- and writes at most `seen`, and only when its time is later than any seen before: the
-- core reads a clock that went backwards as the latest time seen, so that time is part
-- of every later decision.
--
-- Returns {outcome, used × W, previous, current, elapsed, at, wait}, outcome 0 allowed,
-- 1 denied (then wait is the core's wait_ms), 2 exceeds the limit.

local tokens = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttl = ARGV[5]
local peek = ARGV[6] == 'peek'

local stored = redis.call('HMGET', KEYS[1], 'previous', 'current', 'counted', 'seen')
local previous = tonumber(stored[1]) or 0
local current = tonumber(stored[2]) or 0
local counted = tonumber(stored[3]) or 0
local seen = tonumber(stored[4]) or 0

-- floor(a / b) for integers 0 ≤ a, 0 < b, both exact: a − fmod(a, b) is a multiple of b,
-- so the division has an exact result and IEEE division returns it.
local function floor_div(a, b)
    return (a - math.fmod(a, b)) / b
end

local function int(n)
    return string.format('%d', n)
end

-- The effective time: a clock that went backwards reads as the latest time seen.
local at = now
if seen > at then
    at = seen
end

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

-- used × W = previous × (W − e) + current × W, at most 2 × N × W.
local used = previous * (window - elapsed) + current * window

local outcome, wait = 0, 0
if cost == 0 then
    outcome = 0
elseif cost > tokens then
    outcome = 2
elseif used <= (tokens - cost) * window then
    outcome = 0
else
    outcome = 1
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

if peek then
    -- Nothing changes: the decision as the core's peek reports it, usage before the cost.
elseif outcome == 0 and cost > 0 then
    current = current + cost
    used = used + cost * window
    redis.call('HSET', KEYS[1], 'previous', int(previous), 'current', int(current),
        'counted', int(at), 'seen', int(at))
    redis.call('PEXPIRE', KEYS[1], ttl)
elseif at > seen then
    redis.call('HSET', KEYS[1], 'seen', int(at))
    redis.call('PEXPIRE', KEYS[1], ttl)
end

return {outcome, used, previous, current, elapsed, at, wait}
