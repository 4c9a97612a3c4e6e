-- The token bucket, decided as trickle's core decides it (src/algorithms/token_bucket.rs).
--
-- The bucket holds owed (whole tokens taken out), fraction (the part of a token taken out,
-- in 1/W units, below W), refilled (the time they were refilled to) and seen (the latest
-- time any request brought), in that order. No bucket is a full bucket.
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
local FORMAT, SIZE = '<dddd', 32

local function open(first, tokens, window)
    local key = keys[first]
    local stored_owed, stored_fraction, refilled, seen =
        load(key, FORMAT, SIZE, 'owed', 'fraction', 'refilled', 'seen')
    stored_owed, stored_fraction = stored_owed or 0, stored_fraction or 0
    refilled, seen = refilled or 0, seen or 0

    local at, ahead = decided_at(seen)

    -- used × W = owed × W + fraction: at most N × W after hits, at most 2^53 after records.
    local owed, fraction = stored_owed, stored_fraction
    local used = owed * window + fraction

    -- Refill before the check: N × gap tokens (scaled) come back, as whole tokens and 1/W
    -- units, borrowing a whole token when the fraction is too small, exactly as the core.
    --
    -- N × gap can pass 2^53 for a long gap, so the gap is capped first: once gap ≥
    -- ceil(used / N), the time until full, the bucket is full, as N × gap ≥ used, and the
    -- core leaves (0, 0) there too. Otherwise gap ≤ ceil(used / N) − 1 < used / N, so
    -- N × gap < used ≤ 2^53 and the product is exact. Then used − N × gap > 0, so the core
    -- takes one of its first two branches, never the third (empty): with fraction < part,
    -- owed − whole ≥ 1 follows, as otherwise used − N × gap ≤ fraction − part < 0.
    local gap = at - refilled
    if gap >= ceil_div(used, tokens) then
        owed, fraction = 0, 0
    else
        local refill = tokens * gap
        local part = fmod(refill, window)
        owed = owed - (refill - part) / window
        if fraction >= part then
            fraction = fraction - part
        else
            owed = owed - 1
            fraction = fraction + (window - part)
        end
    end

    return {
        tokens = tokens, window = window, at = at, ahead = ahead, holds = window,
        used = owed * window + fraction, outcome = 0, waited = 0,
        -- What is taken out once refilled to `at`, and as stored, for a write of `seen` alone.
        key = key, owed = owed, fraction = fraction,
        stored_owed = stored_owed, stored_fraction = stored_fraction,
        refilled = refilled, seen = seen,
    }
end

-- The bucket's state matters until it is full again: the ms after which N tokens a ms
-- have given back used × W.
local function save(b)
    local used = b.owed * b.window + b.fraction
    b.used = used
    store(b.key, ceil_div(used, b.tokens), b.ahead, FORMAT, b.owed, b.fraction, b.at, b.at)
end

-- The smallest d ≥ 1 with used − N × d ≤ (N − c) × W; the excess is positive, as the
-- request was denied, and at most used.
local function wait(b, c)
    local tokens = b.tokens
    return ceil_div(b.used - (tokens - c) * b.window, tokens)
end

local function spend(b, more)
    b.owed = b.owed + more
    save(b)
end

local function note(b)
    local at = b.at
    if at > b.seen then
        store(b.key, ceil_div(b.used, b.tokens), b.ahead, FORMAT, b.stored_owed,
            b.stored_fraction, b.refilled, at)
    end
end

-- What only a record or a settle uses: fits, counts and adjust.

-- (owed + more) × W + fraction stays exact.
local function fits(b, more)
    return more <= floor_div(EXACT - b.fraction, b.window) - b.owed
end

local function counts(b)
    return b.at - reserved_at < b.window
end

local function adjust(b, sign, amount)
    if sign > 0 or b.owed >= amount then
        b.owed = changed(b.owed, sign, amount)
    else
        -- Fewer whole tokens are out than come back: the bucket is full.
        b.owed, b.fraction = 0, 0
    end
    save(b)
end

local function counters()
    return 0, 0, 0, 0
end
