-- What every algorithm's script shares. The algorithm's own text follows this one and
-- defines how one limit's bucket is read and written; decide.lua comes last and decides the
-- request against every limit it is given: one for a RedisLimiter, each of a policy's for a
-- RedisPolicyLimiter, all or nothing, in this one script call.
--
-- KEYS     each limit's keys in the policy's order (the bucket; for the sliding log also
--          the list of its entries), then, for a reserve and a settle, the reservation's
--          pending record, last.
-- ARGV     the operation; the clock ("caller", or "server" to decide at the server's TIME,
--          ignoring the time given); "1" to answer, for each limit, when it frees its next
--          token (a policy's answer), else "0"; then the numbers, as little-endian doubles
--          in one string: now (ms); the cost (a hit's, peek's or reserve's cost above every
--          limit's N comes as the largest N + 1, which decides alike; a record's or
--          settle's is what it charges); the grace (ms); a settle's reservation: its time
--          and what it reserved (0 and 0 for every other operation); then each limit's
--          tokens N and window W (ms), in the policy's order. Each bucket is kept until its
--          state can no longer matter, plus the grace.
--
-- The operations: "hit"; "peek", deciding without spending or writing anything; "record",
-- charging after the fact, whether it fits or not; "reserve", a hit that, when admitted,
-- writes the reservation's pending record; and "settle", charging or refunding the final
-- cost's difference from the reserve, as the core's settle does, but only when it deletes
-- that pending record.
--
-- Numbers cross as little-endian doubles (struct.pack('<dd…')), in and out, and a bucket is
-- one string of them, read with one GET and written with one SET … PX, which sets its
-- expiry in the same command. Each integer is at most 2^53, where a double is exact, so
-- they cross exactly; and one struct call packs or unpacks them all, where turning each
-- number into text and back (tonumber, string.format) costs more than the arithmetic of a
-- decision. A bucket written as a hash (trickle-redis 0.2 and before) is read from its
-- fields and replaced by the string at its next write.
--
-- Lua numbers are doubles, exact for integers up to 2^53. The caller checked every limit
-- against the algorithm's bound and the time against 2^53, so every sum and product the
-- scripts make is an exact integer; divisions go through math.fmod, which is exact, never
-- through a/b rounded. Numbers are written as text with string.format('%d'), or given to
-- redis.call as numbers (Redis writes an integer-valued one as an integer), and returned
-- as integers; never through tostring, which keeps only 14 digits.
--
-- Each limit answers nine integers: {outcome, used × W, at, wait, now, has counters,
-- previous, current, elapsed}, and with ARGV[3] = "1" two more, {has a next token, ms until
-- it}; the answer is all of them, packed as the arguments are. Outcome 0 allowed, 1 denied (then the request fits at at + wait), 2 exceeds the
-- limit, 3 a record or settle that would leave the exact range (then nothing was written,
-- in any limit).
--
-- The text is a library: what it defines is made once, when Redis loads it as a Redis
-- Function library (FUNCTION LOAD, called with FCALL), and `decide` (decide.lua) runs each
-- call. Making a closure or a table costs a call more than its arithmetic, so every
-- function is defined here, at the top, never inside `decide`; each call's arguments are
-- kept in the locals below, which `decide` sets first (Redis runs one call at a time), and
-- the algorithms keep a bucket's state in one plain table that their functions take as an
-- argument, rather than each bucket carrying closures. Where Redis has no Functions (before
-- 7.0) the same text runs as a script (EVALSHA), ending `return decide(KEYS, ARGV)`: then
-- all of it is made again on each call, as any script's locals are.

-- The call's KEYS and its arguments (ARGV), as read from them; set by `decide`.
local keys, op, report_next, numbers
-- A settle's reservation: when it was made (on the clock decisions are made on) and what it
-- holds; 0 for every other operation, where they change nothing below.
local now, cost, grace, reserved_at, reserved

-- 2^53, the largest integer below which every integer is a double.
local EXACT = 9007199254740992

-- math.fmod: a library's text cannot reach the standard libraries while Redis loads it,
-- so `decide` sets it at each call.
local fmod

-- floor(a / b) for integers 0 ≤ a, 0 < b, both exact: a − fmod(a, b) is a multiple of b,
-- so the division has an exact result and IEEE division returns it.
local function floor_div(a, b)
    return (a - fmod(a, b)) / b
end

-- floor(a / b) + (1 if b does not divide a): a + b − 1 could pass 2^53, so not that way.
local function ceil_div(a, b)
    local rest = fmod(a, b)
    if rest > 0 then
        return (a - rest) / b + 1
    end
    return a / b
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

-- The bucket's integers stored in `key` by `format` (`size` bytes), as many as the format
-- has; none when there is no bucket. `...` names the same integers as the fields of the
-- hash a bucket was before 0.3, read when the key holds one. Any other value was written
-- by another program: a WRONGTYPE error, as a command on it would answer.
local function load(key, format, size, ...)
    local stored = redis.pcall('GET', key)
    if type(stored) == 'string' and #stored == size then
        return struct.unpack(format, stored)
    elseif not stored then
        return
    elseif type(stored) == 'table' and redis.call('TYPE', key).ok == 'hash' then
        local fields = redis.call('HMGET', key, ...)
        for i = 1, #fields do
            fields[i] = tonumber(fields[i]) or 0
        end
        return unpack(fields)
    end
    error({err = 'WRONGTYPE the key ' .. key .. ' holds a value that is not a bucket of this algorithm'})
end

-- Writes the bucket's integers into `key` by `format`, kept for `ms` more, `ahead` and the
-- grace (`lasting`): one SET, which replaces a hash of the old layout too.
local function store(key, ms, ahead, format, ...)
    redis.call('SET', key, struct.pack(format, ...), 'PX', lasting(ms, ahead))
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
-- these functions:
--
--   open(first, tokens, window)
--                    reads the bucket of a limit of `tokens` per `window` whose keys start
--                    at KEYS[first], and works out, writing nothing yet, what it holds at
--                    the time the request is decided at. Returns the bucket `b`, one table
--                    made by one constructor (so at its size at once) holding tokens,
--                    window, at and ahead (the time decided at, and how far it is ahead of
--                    the clock), holds (how long from b.at a reservation made now keeps
--                    counting), used (the tokens in use × W, as it stands, kept so by every
--                    write), outcome and waited (0, for decide.lua's answer), and the
--                    algorithm's own state;
--   wait(b, c)       for a denied request of c tokens, the ms from b.at until it fits;
--   spend(b, c)      charges c tokens (an admitted request's, or a record's after `fits`),
--                    and writes the bucket;
--   note(b)          writes what a request that spends nothing writes (its time, if later);
--   fits(b, more)    whether charging `more` tokens keeps the bucket within 2^53;
--   counts(b)        whether the settle's reservation still counts at b.at;
--   adjust(b, s, n)  applies a settle's difference (`changed`), and writes the bucket;
--   counters(b)      for the reply: 1 and the floating window's previous, current and
--                    elapsed, or 0, 0, 0, 0.
--
-- It may also set `hit_alone(key, tokens, window)`: a hit against one limit whose bucket
-- is KEYS[1], decided and written as open, the judge in decide.lua, spend and note would,
-- in straight-line code with no table, returning the reply decide.lua would pack; or nil,
-- having written nothing, when the key holds anything but a bucket of the current layout,
-- for decide.lua to decide as usual. One limit's hit is the call made most (every
-- RedisLimiter::hit), and the tables and calls of the general path cost as much as its
-- arithmetic and GET. The parity tests hold the straight-line hit to the core, the policy
-- and settle tests the general path, and floating_window.rs the fallback from one to the
-- other.
local hit_alone
