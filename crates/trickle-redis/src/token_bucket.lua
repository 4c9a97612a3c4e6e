-- The token bucket, decided as trickle's core decides it (src/algorithms/token_bucket.rs).
--
-- The hash holds owed (whole tokens taken out), fraction (the part of a token taken out,
-- in 1/W units, below W), refilled (the time they were refilled to) and seen (the latest
-- time any request brought). A missing hash is a full bucket.
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the bucket
-- alone and writes at most `seen`, and only when its time is later than any seen before:
-- the core reads a clock that went backwards as the latest time seen. The core refills on
-- every request; refilling here only when spending decides the same, because refills add
-- up: refilling from t0 to t1 and then to t2 leaves what refilling from t0 to t2 leaves.
--
-- A bucket keeps no times, so a settle takes or gives back its difference at the settle's
-- time (a refund never past full), for W after the reservation; its pending record
-- expires then (plus the grace).

local stored = redis.call('HMGET', KEYS[1], 'owed', 'fraction', 'refilled', 'seen')
local owed = tonumber(stored[1]) or 0
local fraction = tonumber(stored[2]) or 0
local refilled = tonumber(stored[3]) or 0
local seen = tonumber(stored[4]) or 0

local at = decided_at(seen)

-- used × W = owed × W + fraction: at most N × W after hits, at most 2^53 after records.
local used = owed * window + fraction

-- The ms after which N tokens a ms have given back `used` (scaled): the bucket is full.
local function until_full(scaled)
    return ceil_div(scaled, tokens)
end

-- Refill before the check: N × gap tokens (scaled) come back, as whole tokens and 1/W
-- units, borrowing a whole token when the fraction is too small, exactly as the core.
--
-- N × gap can pass 2^53 for a long gap, so the gap is capped first: once gap ≥
-- until_full(used) = ceil(used / N) the bucket is full, as N × gap ≥ used, and the core
-- leaves (0, 0) there too. Otherwise gap ≤ ceil(used / N) − 1 < used / N, so
-- N × gap < used ≤ 2^53 and the product is exact. Then used − N × gap > 0, so the core
-- takes one of its first two branches, never the third (empty): with fraction < part,
-- owed − whole ≥ 1 follows, as otherwise used − N × gap ≤ fraction − part < 0.
local gap = at - refilled
if gap >= until_full(used) then
    owed, fraction = 0, 0
else
    local refill = tokens * gap
    local whole = floor_div(refill, window)
    local part = math.fmod(refill, window)
    owed = owed - whole
    if fraction >= part then
        fraction = fraction - part
    else
        owed = owed - 1
        fraction = fraction + (window - part)
    end
end
used = owed * window + fraction

-- The bucket's state matters until it is full again.
local function keep()
    expire(until_full(used))
end

local function save()
    redis.call('HSET', KEYS[1], 'owed', int(owed), 'fraction', int(fraction),
        'refilled', int(at), 'seen', int(at))
    keep()
end

if op == 'record' then
    -- Charged whatever it is, as long as (owed + cost) × W + fraction stays exact.
    if cost > floor_div(EXACT - fraction, window) - owed then
        return {3, used, at, 0, now, 0, 0, 0, 0}
    end
    owed = owed + cost
    used = used + cost * window
    save()
    return {0, used, at, 0, now, 0, 0, 0, 0}
end

if op == 'settle' then
    local settled = settle(at - reserved_at < window, function(more)
        -- As a record: (owed + more) × W + fraction stays exact.
        return more <= floor_div(EXACT - fraction, window) - owed
    end, function(sign, tokens)
        if sign > 0 or owed >= tokens then
            owed = changed(owed, sign, tokens)
        else
            -- Fewer whole tokens are out than come back: the bucket is full.
            owed, fraction = 0, 0
        end
        used = owed * window + fraction
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
    -- The smallest d ≥ 1 with used − N × d ≤ (N − cost) × W; the excess is positive, as
    -- the request was denied, and at most used.
    wait = ceil_div(used - (tokens - cost) * window, tokens)
end

finish(outcome, seen, at, function()
    owed = owed + cost
    used = used + cost * window
    save()
end, keep, window)

return {outcome, used, at, wait, now, 0, 0, 0, 0}
