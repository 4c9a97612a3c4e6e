-- The sliding log, decided as trickle's core decides it (src/algorithms/sliding_log.rs).
--
-- KEYS[1]  the bucket's hash: total (the sum of the logged costs) and seen (the latest
--          time any request brought).
-- KEYS[2]  the log: a list of 'ms:cost' entries, one per millisecond with spending,
--          oldest first. Hits and records log at the latest time seen, so the list is
--          sorted as it grows: its head is always the next entry to expire, expiry is
--          trimming a prefix, and a second spend in the same millisecond merges into the
--          tail. A sorted set would pay a score and an index per entry for that order.
--          A settle changes its reservation's own entry, found from the tail (it is
--          recent), and inserts one in time order when a reserve of 0 left none.
-- KEYS[3]  for a reserve and a settle, the reservation's pending record, which expires
--          W after the reservation (plus the grace), when its entry stops counting.
-- ARGV[5]  as for every script, the grace added to how long the newest entry still counts.
--
-- Tokens spent at s count while at − s < W and come back at exactly s + W. Every write
-- drops the entries that no longer count, so the log holds at most one window's worth of
-- milliseconds. A peek writes nothing. A hit that spends nothing (denied, too large or
-- cost 0) changes the log only by that pruning, and writes at all only when its time is
-- later than any seen before: the core reads a clock that went backwards as the latest
-- time seen, so that time is part of every later decision.

local bucket, log = KEYS[1], KEYS[2]
local stored = redis.call('HMGET', bucket, 'total', 'seen')
local total = tonumber(stored[1]) or 0
local seen = tonumber(stored[2]) or 0

local at = decided_at(seen)

local function parse(entry)
    local colon = string.find(entry, ':', 1, true)
    return tonumber(string.sub(entry, 1, colon - 1)), tonumber(string.sub(entry, colon + 1))
end

-- Calls visit(spent_at, cost) on the entries from index `first` on, oldest first, until
-- it returns true; returns the index of that entry, or the log's length. Reads in chunks
-- that double from one, so a hit whose oldest entry still counts reads that entry alone.
local function walk(first, visit)
    local index, size = first, 1
    while true do
        local entries = redis.call('LRANGE', log, index, index + size - 1)
        for _, entry in ipairs(entries) do
            if visit(parse(entry)) then
                return index
            end
            index = index + 1
        end
        if #entries < size then
            return index
        end
        if size < 256 then
            size = size * 2
        end
    end
end

-- The entries that no longer count at `at` are a prefix of the log: how many, and
-- their cost. at − s is exact, where s + W could pass 2^53.
local gone = 0
local expired = walk(0, function(spent_at, cost)
    if at - spent_at < window then
        return true
    end
    gone = gone + cost
    return false
end)
local used = total - gone

-- Drops the entries that no longer count, once.
local function prune()
    if expired > 0 then
        redis.call('LTRIM', log, expired, -1)
        expired = 0
    end
end

-- Writes the total and the latest time, and keeps both keys until the newest entry stops
-- counting, plus the grace (within 2^53: a bucket kept for 285,000 years loses nothing by
-- going a millisecond early).
local function keep()
    redis.call('HSET', bucket, 'total', int(total), 'seen', int(at))
    local newest = redis.call('LINDEX', log, -1)
    local counts = 0
    if newest then
        local newest_at = parse(newest)
        counts = window - (at - newest_at)
    end
    if counts > EXACT - grace then
        counts = EXACT - grace
    end
    redis.call('PEXPIRE', bucket, int(counts + grace))
    redis.call('PEXPIRE', log, int(counts + grace))
end

-- Drops the expired entries, logs `cost` at `at` (merged into the newest entry when that
-- is at `at` too), and keeps both keys.
local function save(cost)
    prune()
    total = used + cost
    if cost > 0 then
        local newest = redis.call('LINDEX', log, -1)
        local newest_at, newest_cost
        if newest then
            newest_at, newest_cost = parse(newest)
        end
        if newest_at == at then
            redis.call('LSET', log, -1, int(at) .. ':' .. int(newest_cost + cost))
        else
            redis.call('RPUSH', log, int(at) .. ':' .. int(cost))
        end
    end
    keep()
end

-- The newest entry logged at or before `ms` in the pruned log: its index from the head, its
-- time, its cost and its text; nil when every entry is later. Read from the tail in chunks
-- that double from one, as a settle's reservation is usually among the newest entries.
local function newest_until(ms)
    local last, size = redis.call('LLEN', log) - 1, 1
    while last >= 0 do
        local first = last - size + 1
        if first < 0 then
            first = 0
        end
        local entries = redis.call('LRANGE', log, first, last)
        for i = #entries, 1, -1 do
            local spent_at, spent = parse(entries[i])
            if spent_at <= ms then
                return first + i - 1, spent_at, spent, entries[i]
            end
        end
        last = first - 1
        if size < 256 then
            size = size * 2
        end
    end
    return nil
end

-- A settle's difference on its reservation's entry, as the core's settle: more is logged
-- at the reservation's time (in time order, merged into that millisecond's entry); a
-- refund takes back at most what that entry holds, and drops it once empty.
local function adjust(sign, tokens)
    prune()
    local index, spent_at, spent, entry = newest_until(reserved_at)
    local own = spent_at == reserved_at
    if sign > 0 then
        local logged = int(reserved_at) .. ':' .. int(tokens)
        if own then
            redis.call('LSET', log, index, int(reserved_at) .. ':' .. int(spent + tokens))
        elseif index then
            redis.call('LINSERT', log, 'AFTER', entry, logged)
        else
            redis.call('LPUSH', log, logged)
        end
        total = used + tokens
    elseif own then
        local taken = spent
        if tokens < spent then
            taken = tokens
        end
        if taken == spent then
            -- One entry per millisecond, so its text is unique in the log.
            redis.call('LREM', log, 1, entry)
        else
            redis.call('LSET', log, index, int(reserved_at) .. ':' .. int(spent - taken))
        end
        total = used - taken
    else
        total = used
    end
    keep()
end

if op == 'record' then
    -- Charged whatever it is, as long as the total × W stays exact.
    if cost > floor_div(EXACT, window) - used then
        return {3, used * window, at, 0, now, 0, 0, 0, 0}
    end
    save(cost)
    return {0, total * window, at, 0, now, 0, 0, 0, 0}
end

if op == 'settle' then
    -- The reservation's entry counts while at − reserved_at < W (at ≥ reserved_at).
    local settled = settle(at - reserved_at < window, function(more)
        -- As a record: the total × W stays exact.
        return more <= floor_div(EXACT, window) - used
    end, adjust, function()
        if at > seen then
            save(0)
        end
    end)
    if not settled then
        return {3, used * window, at, 0, now, 0, 0, 0, 0}
    end
    return {0, total * window, at, 0, now, 0, 0, 0, 0}
end

-- The core's rule, used × W ≤ (N − cost) × W, divided by W: the same for whole tokens.
local outcome, wait = judge(used * window), 0
if outcome == 1 then
    -- Oldest first until enough has come back; the entry that frees it returns at s + W.
    -- Some entry always does: once all are back, used = 0 ≤ N − cost.
    local fits, left = tokens - cost, used
    wait = 1
    walk(expired, function(spent_at, spent)
        left = left - spent
        if left <= fits then
            wait = window - (at - spent_at)
            return true
        end
        return false
    end)
end

if op ~= 'peek' then
    if outcome == 0 and cost > 0 then
        save(cost)
        used = total
    elseif at > seen then
        save(0)
    end
    if op == 'reserve' and outcome == 0 then
        hold(at, window)
    end
end

return {outcome, used * window, at, wait, now, 0, 0, 0, 0}
