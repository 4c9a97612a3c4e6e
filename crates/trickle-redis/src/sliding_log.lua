-- The sliding log, decided as trickle's core decides it (src/algorithms/sliding_log.rs).
--
-- Each limit has two keys:
--
-- the bucket total (the sum of the logged costs) and seen (the latest time any request
--           brought), in that order;
-- the log   a list of 'ms:cost' entries, one per millisecond with spending, oldest first.
--           Hits and records log at the latest time seen, so the list is sorted as it
--           grows: its head is always the next entry to expire, expiry is trimming a
--           prefix, and a second spend in the same millisecond merges into the tail. A
--           sorted set would pay a score and an index per entry for that order. A settle
--           changes its reservation's own entry, found from the tail (it is recent), and
--           inserts one in time order when a reserve of 0 left none.
--
-- A reservation's pending record expires W after the reservation (plus the grace), when
-- its entry stops counting; both keys are kept until the newest entry stops counting,
-- plus the grace.
--
-- Tokens spent at s count while at − s < W and come back at exactly s + W. Every write
-- drops the entries that no longer count, so the log holds at most one window's worth of
-- milliseconds. A peek writes nothing. A hit that spends nothing (denied, too large or
-- cost 0) changes the log only by that pruning, and writes at all only when its time is
-- later than any seen before: the core reads a clock that went backwards as the latest
-- time seen, so that time is part of every later decision.
--
-- A write logs first and prunes after, and nothing touches the log once it is empty: an
-- empty list is a deleted key, and on a Redis Cluster node moving the slot away
-- (MIGRATING) a script may not touch a key that is not there, not even one it deleted
-- itself ("Script attempted to access a non local key"); the script would stop halfway,
-- its writes so far kept.

local keys_per_limit = 2
local FORMAT, SIZE = '<dd', 16

local function parse(entry)
    local colon = string.find(entry, ':', 1, true)
    return tonumber(string.sub(entry, 1, colon - 1)), tonumber(string.sub(entry, colon + 1))
end

-- Calls visit(spent_at, spent) on the entries of b's log from index `first` on, oldest
-- first, until it returns true; returns the index of that entry, or the log's length. Reads
-- in chunks that double from one, so a hit whose oldest entry still counts reads that
-- entry alone.
local function walk(b, first, visit)
    local index, size = first, 1
    while true do
        local entries = redis.call('LRANGE', b.log, index, index + size - 1)
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

local function open(first, tokens, window)
    local bucket, log = keys[first], keys[first + 1]
    local total, seen = load(bucket, FORMAT, SIZE, 'total', 'seen')
    total, seen = total or 0, seen or 0

    local at, ahead = decided_at(seen)
    local b = {
        tokens = tokens, window = window, at = at, ahead = ahead, holds = window, used = 0,
        outcome = 0, waited = 0,
        -- Its two keys; its total and latest time as stored; the tokens that still count at
        -- `at` (`used` is that × W); how many entries at the log's head no longer count; and
        -- the log's length, kept up to date by every write, so that an emptied log is never
        -- touched again.
        key = bucket, log = log, total = total, seen = seen, total_used = 0, expired = 0,
        length = redis.call('LLEN', log),
    }

    -- The entries that no longer count at `at` are a prefix of the log: how many, and
    -- their cost. at − s is exact, where s + W could pass 2^53.
    local gone = 0
    b.expired = walk(b, 0, function(spent_at, spent)
        if at - spent_at < window then
            return true
        end
        gone = gone + spent
        return false
    end)
    b.total_used = total - gone
    b.used = b.total_used * window
    return b
end

-- Drops the entries that no longer count, once: the last thing done to the log but
-- for keeping it, which `keep` leaves alone when this emptied it.
local function prune(b)
    if b.expired > 0 then
        redis.call('LTRIM', b.log, b.expired, -1)
        b.length = b.length - b.expired
        b.expired = 0
    end
end

-- Writes the total and the latest time, and keeps both keys until the newest entry
-- stops counting, plus the grace (within 2^53: a bucket kept for 285,000 years loses
-- nothing by going a millisecond early). b.total_used is the total from here on.
local function keep(b)
    local at, window = b.at, b.window
    local counts = 0
    if b.length > 0 then
        local newest = redis.call('LINDEX', b.log, -1)
        if newest then
            counts = window - (at - parse(newest))
        end
    end
    if counts > EXACT - grace then
        counts = EXACT - grace
    end
    redis.call('SET', b.key, struct.pack(FORMAT, b.total, at), 'PX', counts + grace)
    if b.length > 0 then
        redis.call('PEXPIRE', b.log, counts + grace)
    end
    b.total_used = b.total
    b.used = b.total * window
end

-- Logs `more` at b.at (merged into the newest entry when that is at b.at too; an
-- expired newest entry is older), drops the expired entries, and keeps both keys.
local function spend(b, more)
    local at = b.at
    b.total = b.total_used + more
    if more > 0 then
        local newest = redis.call('LINDEX', b.log, -1)
        local newest_at, newest_cost
        if newest then
            newest_at, newest_cost = parse(newest)
        end
        if newest_at == at then
            redis.call('LSET', b.log, -1, string.format('%d:%d', at, newest_cost + more))
        else
            redis.call('RPUSH', b.log, string.format('%d:%d', at, more))
            b.length = b.length + 1
        end
    end
    prune(b)
    keep(b)
end

-- The newest entry of b's log logged at or before `ms`: its index from the head, its time,
-- its cost and its text; nil when every entry is later. Read from the tail in chunks that
-- double from one, as a settle's reservation is usually among the newest entries.
local function newest_until(b, ms)
    local last, size = b.length - 1, 1
    while last >= 0 do
        local first = last - size + 1
        if first < 0 then
            first = 0
        end
        local entries = redis.call('LRANGE', b.log, first, last)
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

-- Oldest first until enough has come back; the entry that frees it returns at s + W.
-- Some entry always does: once all are back, used = 0 ≤ N − c.
local function wait(b, c)
    local at, window = b.at, b.window
    local fits, left, ms = b.tokens - c, b.total_used, 1
    walk(b, b.expired, function(spent_at, spent)
        left = left - spent
        if left <= fits then
            ms = window - (at - spent_at)
            return true
        end
        return false
    end)
    return ms
end

local function note(b)
    if b.at > b.seen then
        spend(b, 0)
    end
end

-- What only a record or a settle uses: fits, counts and adjust.

-- The total × W stays exact.
local function fits(b, more)
    return more <= floor_div(EXACT, b.window) - b.total_used
end

-- The reservation's entry counts while at − reserved_at < W (at ≥ reserved_at).
local function counts(b)
    return b.at - reserved_at < b.window
end

-- A settle's difference on its reservation's entry, as the core's settle: more is
-- logged at the reservation's time (in time order, merged into that millisecond's
-- entry); a refund takes back at most what that entry holds, and drops it once empty.
-- Before the pruning, which leaves every index this uses in place: the reservation
-- still counts (at − reserved_at < W), so its own entry and any written after it are
-- not expired, and every expired entry is older than it.
local function adjust(b, sign, amount)
    local log = b.log
    local index, spent_at, spent, entry = newest_until(b, reserved_at)
    local own = spent_at == reserved_at
    if sign > 0 then
        local logged = string.format('%d:%d', reserved_at, amount)
        if own then
            redis.call('LSET', log, index, string.format('%d:%d', reserved_at, spent + amount))
        elseif index then
            redis.call('LINSERT', log, 'AFTER', entry, logged)
            b.length = b.length + 1
        else
            redis.call('LPUSH', log, logged)
            b.length = b.length + 1
        end
        b.total = b.total_used + amount
    elseif own then
        local taken = spent
        if amount < spent then
            taken = amount
        end
        if taken == spent then
            -- One entry per millisecond, so its text is unique in the log.
            redis.call('LREM', log, 1, entry)
            b.length = b.length - 1
        else
            redis.call('LSET', log, index, string.format('%d:%d', reserved_at, spent - taken))
        end
        b.total = b.total_used - taken
    else
        b.total = b.total_used
    end
    prune(b)
    keep(b)
end

local function counters()
    return 0, 0, 0, 0
end
