-- The request against every limit given, all or nothing, as the core's PolicyBucket
-- decides it (src/stores/policy.rs); with one limit, exactly that limit alone.
--
-- Every bucket is read first (`open` writes nothing), so each limit's answer is made
-- before any is written:
--
-- - hit and reserve: spent in every limit if every limit has room. Otherwise in none: a
--   limit that had room is left as it was, not even its time written, and answers what a
--   peek answers; one that refused is written as a refusal writes a limit alone (its time,
--   if later). An admitted reserve writes one pending record for the whole policy.
-- - peek: writes nothing.
-- - record: charged to every limit, or, when any of them would leave the exact range, to
--   none.
-- - settle: each limit's difference, if it deletes the pending record; refused in every
--   limit when one would leave the exact range and the record is still there.

local limits = (#ARGV - 8) / 2
local pending = KEYS[limits * keys_per_limit + 1]

local buckets = {}
for i = 1, limits do
    local keys = {}
    for k = 1, keys_per_limit do
        keys[k] = KEYS[(i - 1) * keys_per_limit + k]
    end
    local tokens, window = tonumber(ARGV[7 + 2 * i]), tonumber(ARGV[8 + 2 * i])
    buckets[i] = open(keys, tokens, window)
    buckets[i].tokens, buckets[i].window = tokens, window
end

local outcomes, waits = {}, {}
for i = 1, limits do
    outcomes[i], waits[i] = 0, 0
end

if op == 'record' then
    local fits = true
    for i, bucket in ipairs(buckets) do
        if not bucket.fits(cost) then
            outcomes[i], fits = 3, false
        end
    end
    if fits then
        for _, bucket in ipairs(buckets) do
            bucket.record(cost)
        end
    end
elseif op == 'settle' then
    local signs, amounts, over = {}, {}, false
    for i, bucket in ipairs(buckets) do
        local sign, amount = 0, 0
        if bucket.counts() and cost > reserved then
            sign, amount = 1, cost - reserved
        elseif bucket.counts() and cost < reserved then
            sign, amount = -1, reserved - cost
        end
        signs[i], amounts[i] = sign, amount
        if sign > 0 and not bucket.fits(amount) then
            outcomes[i], over = 3, true
        end
    end
    -- Refused, writing nothing, while the pending record is there: the reservation may
    -- still be settled at another cost. Without it nothing is charged, so nothing overflows.
    if not (over and redis.call('EXISTS', pending) == 1) then
        -- The settle applies its difference only when it deletes the reservation's pending
        -- record. Without it (a copy of a settle already applied, sent again after a
        -- timeout; or a settle that reached Redis after the record expired, once the
        -- reservation's tokens no longer count in any limit) it changes no counts, exactly
        -- as the core's settle of a reservation that no longer counts: absence means
        -- "nothing to do", never "apply", so no copy of a settle, however late, is applied
        -- twice. Deleted whether or not there is a difference: the reservation is settled.
        local deleted = redis.call('DEL', pending) == 1
        for i, bucket in ipairs(buckets) do
            outcomes[i] = 0
            if deleted and signs[i] ~= 0 then
                bucket.adjust(signs[i], amounts[i])
            else
                bucket.note()
            end
        end
    end
else
    local fit = true
    for i, bucket in ipairs(buckets) do
        outcomes[i] = bucket.judge(cost)
        if outcomes[i] == 1 then
            waits[i] = bucket.wait(cost)
        end
        if outcomes[i] ~= 0 then
            fit = false
        end
    end
    if op ~= 'peek' then
        for i, bucket in ipairs(buckets) do
            if fit and cost > 0 then
                bucket.spend(cost)
            elseif fit or outcomes[i] ~= 0 then
                bucket.note()
            end
        end
    end
    if op == 'reserve' and fit then
        -- Kept while the reservation's tokens still count in some limit, and the grace:
        -- from then on the core's settle changes nothing in any of them, so a settle that
        -- finds no record may change nothing either. Its text, 'at:cost', is for people
        -- reading Redis: the time is the first limit's, the reservation's own.
        local longest = 0
        for _, bucket in ipairs(buckets) do
            local lasts = lasting(bucket.holds, bucket.ahead)
            if lasts > longest then
                longest = lasts
            end
        end
        redis.call('SET', pending, int(buckets[1].at) .. ':' .. int(cost), 'PX', int(longest))
    end
end

-- With a policy, each limit also says when it frees one more whole token than it has left,
-- if nothing more is spent: the wait of a request of one token more than what remains, as
-- the core works it out (PolicyDecision::next_token_ms). None when every token is free.
local function next_token(bucket)
    local free = bucket.tokens * bucket.window - bucket.used()
    local remaining = 0
    if free > 0 then
        remaining = floor_div(free, bucket.window)
    end
    if remaining >= bucket.tokens then
        return 0, 0
    end
    return 1, bucket.wait(remaining + 1)
end

local reply = {}
for i, bucket in ipairs(buckets) do
    for _, number in ipairs(bucket.reply(outcomes[i], waits[i])) do
        reply[#reply + 1] = number
    end
    if report_next then
        local has, ms = next_token(bucket)
        reply[#reply + 1] = has
        reply[#reply + 1] = ms
    end
end
return reply
