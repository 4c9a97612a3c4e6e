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

local keys_per_limit = 1

local function open(keys, tokens, window)
    local key = keys[1]
    local stored = redis.call('HMGET', key, 'owed', 'fraction', 'refilled', 'seen')
    local owed = tonumber(stored[1]) or 0
    local fraction = tonumber(stored[2]) or 0
    local refilled = tonumber(stored[3]) or 0
    local seen = tonumber(stored[4]) or 0

    local at, ahead = decided_at(seen)

    -- used × W = owed × W + fraction: at most N × W after hits, at most 2^53 after records.
    local used = owed * window + fraction

    -- The ms after which N tokens a ms have given back `scaled` tokens × W: the bucket is
    -- full.
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
        expire(key, until_full(used), ahead)
    end

    local function save()
        redis.call('HSET', key, 'owed', int(owed), 'fraction', int(fraction),
            'refilled', int(at), 'seen', int(at))
        keep()
    end

    local function charge(more)
        owed = owed + more
        used = used + more * window
        save()
    end

    local bucket = {at = at, ahead = ahead, holds = window}

    function bucket.judge(c)
        return judge(tokens, window, used, c)
    end

    -- The smallest d ≥ 1 with used − N × d ≤ (N − c) × W; the excess is positive, as the
    -- request was denied, and at most used.
    function bucket.wait(c)
        return ceil_div(used - (tokens - c) * window, tokens)
    end

    function bucket.used()
        return used
    end

    bucket.spend = charge
    bucket.record = charge

    function bucket.note()
        note(key, seen, at, keep)
    end

    -- (owed + more) × W + fraction stays exact.
    function bucket.fits(more)
        return more <= floor_div(EXACT - fraction, window) - owed
    end

    function bucket.counts()
        return at - reserved_at < window
    end

    function bucket.adjust(sign, amount)
        if sign > 0 or owed >= amount then
            owed = changed(owed, sign, amount)
        else
            -- Fewer whole tokens are out than come back: the bucket is full.
            owed, fraction = 0, 0
        end
        used = owed * window + fraction
        save()
    end

    function bucket.reply(outcome, wait)
        return {outcome, used, at, wait, now, 0, 0, 0, 0}
    end

    return bucket
end
