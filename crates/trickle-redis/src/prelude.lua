-- What every algorithm's script shares; the script's own text follows this one.
--
-- KEYS[1]  the bucket's hash; for a reserve and a settle, the reservation's pending record
--          comes last (see below).
-- ARGV     tokens N, window W (ms), now (ms), cost (a hit's, peek's or reserve's cost above
--          N comes as N + 1, which decides alike; a settle's is the final cost), grace (ms),
--          the operation, and the clock ("caller", or "server" to decide at the server's
--          TIME, ignoring ARGV[3]); for a settle, ARGV[8] the reservation's time and ARGV[9]
--          what it reserved. Each script keeps its key until its state can no longer
--          matter, plus the grace.
--
-- The operations: "hit"; "peek", deciding without spending or writing anything; "record",
-- charging after the fact, whether it fits or not; "reserve", a hit that, when admitted,
-- writes the reservation's pending record; and "settle", charging or refunding the final
-- cost's difference from the reserve, as the core's settle does, but only when it deletes
-- that pending record.
--
-- Lua numbers are doubles, exact for integers up to 2^53. The caller checked the limit
-- against the algorithm's bound and the time against 2^53, so every sum and product the
-- scripts make is an exact integer; divisions go through math.fmod, which is exact, never
-- through a/b rounded. Numbers are written with string.format('%d') and returned as
-- integers, never through tostring, which keeps only 14 digits.
--
-- Every script returns nine integers: {outcome, used × W, at, wait, now, has counters,
-- previous, current, elapsed}. Outcome 0 allowed, 1 denied (then the request fits at
-- at + wait), 2 exceeds the limit, 3 a record or settle that would leave the exact range
-- (nothing written).

local tokens = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local grace = tonumber(ARGV[5])
local op = ARGV[6]
-- A settle's reservation: when it was made (on the clock decisions are made on) and what it
-- holds; 0 for every other operation, where they change nothing below.
local reserved_at = tonumber(ARGV[8] or '0')
local reserved = tonumber(ARGV[9] or '0')

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

-- How far the time decided at is ahead of the clock read now (`decided_at` sets it): a
-- caller whose clock runs behind the bucket's latest time is decided at that latest time
-- until its clock catches up, so a state matters for that much longer in real time.
local ahead = 0

-- `ms` more, the time a state still matters from the time decided at (at most 2^53), how
-- far that time is ahead of the clock, and the grace; held at 2^53 ms, 285,000 years, so
-- that it is written exactly.
local function lasting(ms)
    if ms <= EXACT - grace - ahead then
        return ms + ahead + grace
    end
    return EXACT
end

-- Keeps the bucket for `ms` more and the grace.
local function expire(ms)
    redis.call('PEXPIRE', KEYS[1], int(lasting(ms)))
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
-- the bucket has seen, as in the core, and a settle is never decided before its
-- reservation (the core's settle decides at max(now, latest, reserved_at)).
local function decided_at(seen)
    local at = now
    if seen > at then
        at = seen
    end
    if reserved_at > at then
        at = reserved_at
    end
    ahead = at - now
    return at
end

-- Writes the time a request that spends nothing was decided at, when it is later than
-- any seen before, with `keep` renewing the key's expiry.
local function note(seen, at, keep)
    if at > seen then
        redis.call('HSET', KEYS[1], 'seen', int(at))
        keep()
    end
end

-- The reservation's pending record, for a reserve and a settle: always the last key.
local pending = KEYS[#KEYS]

-- An admitted reserve's pending record, 'at:cost', kept while the reservation's tokens
-- still count, `holds` ms from `at`, and the grace: from then on the core's settle changes
-- nothing, so a settle that finds no record may change nothing either.
local function hold(at, holds)
    redis.call('SET', pending, int(at) .. ':' .. int(cost), 'PX', int(lasting(holds)))
end

-- What a hit, a reserve or a peek leaves in a bucket's hash: a peek nothing (the decision
-- as the core's peek reports it, usage before the cost); an allowed cost what `spend`
-- writes; any other request only its time (`note`). An admitted reserve also writes its
-- pending record (`hold`).
local function finish(outcome, seen, at, spend, keep, holds)
    if op == 'peek' then
        return
    elseif outcome == 0 and cost > 0 then
        spend()
    else
        note(seen, at, keep)
    end
    if op == 'reserve' and outcome == 0 then
        hold(at, holds)
    end
end

-- `counter` changed by a settle's difference: `sign` 1 adds `tokens`, −1 takes them away,
-- stopping at 0 (the core's Difference::applied_to).
local function changed(counter, sign, tokens)
    if sign > 0 then
        return counter + tokens
    elseif tokens >= counter then
        return 0
    end
    return counter - tokens
end

-- A settle, given whether the reservation's tokens still count at the time it is decided
-- at; `fits(more)` says whether charging `more` tokens keeps the bucket within 2^53,
-- `adjust(sign, tokens)` changes the counts and writes them, and `leave()` writes what a
-- request that spends nothing writes. Returns false when the settle is refused, as a
-- record past the exact range is, writing nothing (the pending record stays).
--
-- The settle applies its difference only when it deletes the reservation's pending record.
-- Without it (a copy of a settle already applied, sent again after a timeout; or a settle
-- that reached Redis after the record expired, once the reservation's tokens no longer
-- count) it changes no counts, exactly as the core's settle of a reservation that no
-- longer counts: absence means "nothing to do", never "apply", so no copy of a settle,
-- however late, is applied twice.
local function settle(counts, fits, adjust, leave)
    local sign, tokens = 0, 0
    if counts and cost > reserved then
        sign, tokens = 1, cost - reserved
    elseif counts and cost < reserved then
        sign, tokens = -1, reserved - cost
    end
    if sign > 0 and not fits(tokens) and redis.call('EXISTS', pending) == 1 then
        return false
    end
    -- Deleted whether or not there is a difference: the reservation is settled.
    if redis.call('DEL', pending) == 1 and sign ~= 0 then
        adjust(sign, tokens)
    else
        leave()
    end
    return true
end
