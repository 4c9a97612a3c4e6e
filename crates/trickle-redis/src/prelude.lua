-- What every algorithm's script shares; the script's own text follows this one.
--
-- KEYS[1]  the bucket's hash.
-- ARGV     tokens N, window W (ms), now (ms), cost (a hit's or peek's cost above N comes
--          as N + 1, which decides alike), grace (ms), the operation ("hit",
--          "peek": decide without spending or writing anything, "record": charge after
--          the fact, whether it fits or not), and the clock ("caller", or "server" to
--          decide at the server's TIME, ignoring ARGV[3]). Each script keeps its key
--          until its state can no longer matter, plus the grace.
--
-- Lua numbers are doubles, exact for integers up to 2^53. The caller checked the limit
-- against the algorithm's bound and the time against 2^53, so every sum and product the
-- scripts make is an exact integer; divisions go through math.fmod, which is exact, never
-- through a/b rounded. Numbers are written with string.format('%d') and returned as
-- integers, never through tostring, which keeps only 14 digits.
--
-- Every script returns nine integers: {outcome, used × W, at, wait, now, has counters,
-- previous, current, elapsed}. Outcome 0 allowed, 1 denied (then the request fits at
-- at + wait), 2 exceeds the limit, 3 a record that would leave the exact range (nothing
-- written).

local tokens = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local grace = tonumber(ARGV[5])
local op = ARGV[6]

-- 2^53, the largest integer below which every integer is a double.
local EXACT = 9007199254740992

if ARGV[7] == 'server' then
    -- Before Redis 5 a script that reads TIME must replicate its effects, not itself;
    -- from Redis 7 that is the only way and this call does nothing. TIME stays the same
    -- for the whole script, which is what a decision needs.
    if redis.replicate_commands then
        redis.replicate_commands()
    end
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- floor(a / b) for integers 0 ≤ a, 0 < b, both exact: a − fmod(a, b) is a multiple of b,
-- so the division has an exact result and IEEE division returns it.
local function floor_div(a, b)
    return (a - math.fmod(a, b)) / b
end

local function int(n)
    return string.format('%d', n)
end

-- floor(a / b) + (1 if b does not divide a): a + b − 1 could pass 2^53, so not that way.
local function ceil_div(a, b)
    local quotient = floor_div(a, b)
    if math.fmod(a, b) > 0 then
        quotient = quotient + 1
    end
    return quotient
end

-- Keeps the bucket for `ms` more, the time its state still matters (at most 2^53), and the
-- grace. The sum is held at 2^53 ms, 285,000 years, so that it is written exactly.
local function expire(ms)
    local total = EXACT
    if ms <= EXACT - grace then
        total = ms + grace
    end
    redis.call('PEXPIRE', KEYS[1], int(total))
end

-- The rule every algorithm shares (the core's `judge`), given `used_scaled`, the tokens in
-- use × W: 0 allowed (a cost of 0 always fits), 2 never fits (a cost above N), otherwise
-- allowed iff used + cost ≤ N, else 1, denied.
local function judge(used_scaled)
    if cost == 0 then
        return 0
    elseif cost > tokens then
        return 2
    elseif used_scaled <= (tokens - cost) * window then
        return 0
    end
    return 1
end

-- The time a request is decided at: a clock that went backwards reads as the latest time
-- the bucket has seen, as in the core.
local function decided_at(seen)
    if seen > now then
        return seen
    end
    return now
end

-- What a hit or a peek leaves in a bucket's hash: a peek nothing (the decision as the
-- core's peek reports it, usage before the cost); an allowed cost what `spend` writes; any
-- other request only its time, when later than any seen before, with `keep` renewing the
-- key's expiry.
local function settle(outcome, seen, at, spend, keep)
    if op == 'peek' then
        return
    elseif outcome == 0 and cost > 0 then
        spend()
    elseif at > seen then
        redis.call('HSET', KEYS[1], 'seen', int(at))
        keep()
    end
end
