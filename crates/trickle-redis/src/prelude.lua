-- What every algorithm's script shares. The algorithm's own text follows this one and
-- defines `open`, which reads one limit's bucket; decide.lua comes last and decides the
-- request against every limit it is given: one for a RedisLimiter, each of a policy's for a
-- RedisPolicyLimiter, all or nothing, in this one script call.
--
-- KEYS     each limit's keys in the policy's order (the bucket's hash; for the sliding log
--          also the list of its entries), then, for a reserve and a settle, the
--          reservation's pending record, last.
-- ARGV     now (ms); the cost (a hit's, peek's or reserve's cost above every limit's N comes
--          as the largest N + 1, which decides alike; a record's or settle's is what it
--          charges); the grace (ms); the operation; the clock ("caller", or "server" to
--          decide at the server's TIME, ignoring ARGV[1]); a settle's reservation: its time
--          and what it reserved (0 and 0 for every other operation); "1" to answer, for
--          each limit, when it frees its next token (a policy's answer), else "0"; then
--          each limit's tokens N and window W (ms), in the policy's order. Each bucket is
--          kept until its state can no longer matter, plus the grace.
--
-- The operations: "hit"; "peek", deciding without spending or writing anything; "record",
-- charging after the fact, whether it fits or not; "reserve", a hit that, when admitted,
-- writes the reservation's pending record; and "settle", charging or refunding the final
-- cost's difference from the reserve, as the core's settle does, but only when it deletes
-- that pending record.
--
-- Lua numbers are doubles, exact for integers up to 2^53. The caller checked every limit
-- against the algorithm's bound and the time against 2^53, so every sum and product the
-- scripts make is an exact integer; divisions go through math.fmod, which is exact, never
-- through a/b rounded. Numbers are written with string.format('%d') and returned as
-- integers, never through tostring, which keeps only 14 digits.
--
-- Each limit answers nine integers: {outcome, used × W, at, wait, now, has counters,
-- previous, current, elapsed}, and with ARGV[8] = "1" two more, {has a next token, ms until
-- it}. Outcome 0 allowed, 1 denied (then the request fits at at + wait), 2 exceeds the
-- limit, 3 a record or settle that would leave the exact range (then nothing was written,
-- in any limit).

local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local op = ARGV[4]
-- A settle's reservation: when it was made (on the clock decisions are made on) and what it
-- holds; 0 for every other operation, where they change nothing below.
local reserved_at = tonumber(ARGV[6])
local reserved = tonumber(ARGV[7])
local report_next = ARGV[8] == '1'

-- 2^53, the largest integer below which every integer is a double.
local EXACT = 9007199254740992

if ARGV[5] == 'server' then
    -- Before Redis 5 a script that reads TIME must replicate its effects, not itself;
    -- from Redis 7 that is the only way and this call does nothing. TIME stays the same
    -- for the whole script, which is what a decision needs, and every limit of a policy
    -- is decided at it.
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

-- `ms` more, the time a state still matters from the time decided at (at most 2^53), how
-- far that time is `ahead` of the clock read now (a caller whose clock runs behind the
-- bucket's latest time is decided at that latest time until its clock catches up, so a
-- state matters for that much longer in real time), and the grace; held at 2^53 ms,
-- 285,000 years, so that it is written exactly.
local function lasting(ms, ahead)
    if ms <= EXACT - grace - ahead then
        return ms + ahead + grace
    end
    return EXACT
end

-- Keeps `key` for `ms` more, `ahead` and the grace.
local function expire(key, ms, ahead)
    redis.call('PEXPIRE', key, int(lasting(ms, ahead)))
end

-- The rule every algorithm shares (the core's `judge`), given a limit of `tokens` per
-- `window` and `used_scaled`, the tokens in use × W: 0 allowed (a cost of 0 always fits),
-- 2 never fits (a cost above N), otherwise allowed iff used + cost ≤ N, else 1, denied.
local function judge(tokens, window, used_scaled, cost)
    if cost == 0 then
        return 0
    elseif cost > tokens then
        return 2
    elseif used_scaled <= (tokens - cost) * window then
        return 0
    end
    return 1
end

-- The time a request is decided at, and how far that is ahead of the clock: a clock that
-- went backwards reads as the latest time the bucket has `seen`, as in the core, and a
-- settle is never decided before its reservation (the core's settle decides at
-- max(now, latest, reserved_at)).
local function decided_at(seen)
    local at = now
    if seen > at then
        at = seen
    end
    if reserved_at > at then
        at = reserved_at
    end
    return at, at - now
end

-- Writes the time a request that spends nothing was decided at into `key`, when it is
-- later than any seen before, with `keep` renewing the key's expiry.
local function note(key, seen, at, keep)
    if at > seen then
        redis.call('HSET', key, 'seen', int(at))
        keep()
    end
end

-- `counter` changed by a settle's difference: `sign` 1 adds `amount`, −1 takes it away,
-- stopping at 0 (the core's Difference::applied_to).
local function changed(counter, sign, amount)
    if sign > 0 then
        return counter + amount
    elseif amount >= counter then
        return 0
    end
    return counter - amount
end

-- The algorithm's text defines `keys_per_limit`, how many keys one limit's bucket has, and
-- `open(keys, tokens, window)`, which reads the bucket in `keys` and works out, writing
-- nothing yet, what it holds at the time the request is decided at. It returns the bucket:
--
--   at, ahead        the time decided at, and how far it is ahead of the clock;
--   holds            how long from `at` a reservation made now keeps counting;
--   judge(c)         the outcome of a request of c tokens (`judge` above);
--   wait(c)          for a denied request of c tokens, the ms from `at` until it fits;
--   used()           the tokens in use × W, as it stands;
--   spend(c)         spends an admitted request's c > 0 tokens, and writes the bucket;
--   note()           writes what a request that spends nothing writes (its time, if later);
--   fits(more)       whether charging `more` tokens keeps the bucket within 2^53;
--   record(c)        charges c tokens after the fact (after `fits`), and writes the bucket;
--   counts()         whether the settle's reservation still counts at `at`;
--   adjust(sign, n)  applies a settle's difference (`changed`), and writes the bucket;
--   reply(o, wait)   the nine integers of outcome o, as the bucket stands.
