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
--
-- With a policy, each limit also says when it frees one more whole token than it has left,
-- if nothing more is spent: the wait of a request of one token more than what remains, as
-- the core works it out (PolicyDecision::next_token_ms). None when every token is free.
local function next_token(b)
    local tokens, window = b.tokens, b.window
    local free = tokens * window - b.used
    local remaining = 0
    if free > 0 then
        remaining = floor_div(free, window)
    end
    if remaining >= tokens then
        return 0, 0
    end
    return 1, wait(b, remaining + 1)
end

-- One call: KEYS and ARGV as the head of prelude.lua lays them out.
local function decide(call_keys, args)
    keys, op, report_next, numbers = call_keys, args[1], args[3] == '1', args[4]
    now, cost, grace, reserved_at, reserved = struct.unpack('<ddddd', numbers)
    fmod = math.fmod
    if args[2] == 'server' then
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

    -- Five numbers, then two for each limit, eight bytes each.
    local limits = (#numbers / 8 - 5) / 2
    local pending = keys[limits * keys_per_limit + 1]

    -- One limit's hit, the call made most, in straight-line code where the algorithm has
    -- it (prelude.lua, hit_alone).
    if limits == 1 and op == 'hit' and not report_next and hit_alone then
        local tokens, window = struct.unpack('<dd', numbers, 25 + 16 * 1)
        local reply = hit_alone(keys[1], tokens, window)
        if reply then
            return reply
        end
    end

    local buckets = {}
    for i = 1, limits do
        local tokens, window = struct.unpack('<dd', numbers, 25 + 16 * i)
        buckets[i] = open((i - 1) * keys_per_limit + 1, tokens, window)
    end

    if op == 'record' then
        local fit = true
        for i = 1, limits do
            local b = buckets[i]
            if not fits(b, cost) then
                b.outcome, fit = 3, false
            end
        end
        if fit then
            for i = 1, limits do
                spend(buckets[i], cost)
            end
        end
    elseif op == 'settle' then
        local signs, amounts, over = {}, {}, false
        for i = 1, limits do
            local b = buckets[i]
            local sign, amount = 0, 0
            if counts(b) then
                if cost > reserved then
                    sign, amount = 1, cost - reserved
                elseif cost < reserved then
                    sign, amount = -1, reserved - cost
                end
            end
            signs[i], amounts[i] = sign, amount
            if sign > 0 and not fits(b, amount) then
                b.outcome, over = 3, true
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
            for i = 1, limits do
                local b = buckets[i]
                b.outcome = 0
                if deleted and signs[i] ~= 0 then
                    adjust(b, signs[i], amounts[i])
                else
                    note(b)
                end
            end
        end
    else
        -- The rule every algorithm shares (the core's `judge`), in each limit: 0 allowed (a
        -- cost of 0 always fits), 2 never fits (a cost above N), otherwise allowed iff
        -- used + cost ≤ N, compared × W, else 1, denied.
        local fit = true
        for i = 1, limits do
            local b = buckets[i]
            local tokens = b.tokens
            if cost > tokens then
                b.outcome, fit = 2, false
            elseif cost > 0 and b.used > (tokens - cost) * b.window then
                b.outcome, b.waited, fit = 1, wait(b, cost), false
            end
        end
        if op ~= 'peek' then
            for i = 1, limits do
                local b = buckets[i]
                if fit and cost > 0 then
                    spend(b, cost)
                elseif fit or b.outcome ~= 0 then
                    note(b)
                end
            end
        end
        if op == 'reserve' and fit then
            -- Kept while the reservation's tokens still count in some limit, and the grace:
            -- from then on the core's settle changes nothing in any of them, so a settle that
            -- finds no record may change nothing either. Its text, 'at:cost', is for people
            -- reading Redis: the time is the first limit's, the reservation's own.
            local longest = 0
            for i = 1, limits do
                local b = buckets[i]
                local lasts = lasting(b.holds, b.ahead)
                if lasts > longest then
                    longest = lasts
                end
            end
            redis.call('SET', pending, string.format('%d:%d', buckets[1].at, cost), 'PX', longest)
        end
    end

    -- One limit without its next token, the most common call, answers without a table.
    if limits == 1 and not report_next then
        local b = buckets[1]
        local has, previous, current, elapsed = counters(b)
        return struct.pack('<ddddddddd', b.outcome, b.used, b.at, b.waited, now, has, previous,
            current, elapsed)
    end

    local reply, n = {}, 0
    for i = 1, limits do
        local b = buckets[i]
        local has, previous, current, elapsed = counters(b)
        reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
            b.outcome, b.used, b.at, b.waited, now
        reply[n + 6], reply[n + 7], reply[n + 8], reply[n + 9] = has, previous, current, elapsed
        n = n + 9
        if report_next then
            reply[n + 1], reply[n + 2] = next_token(b)
            n = n + 2
        end
    end
    return struct.pack('<' .. string.rep('d', n), unpack(reply))
end
