-- The sliding log, decided as trickle's core decides it (src/algorithms/sliding_log.rs).
--
-- Each limit has two keys:
--
-- the hash  total (the sum of the logged costs) and seen (the latest time any request
--           brought);
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

local function parse(entry)
    local colon = string.find(entry, ':', 1, true)
    return tonumber(string.sub(entry, 1, colon - 1)), tonumber(string.sub(entry, colon + 1))
end

local function open(keys, tokens, window)
    local hash, log = keys[1], keys[2]
    local stored = redis.call('HMGET', hash, 'total', 'seen')
    local total = tonumber(stored[1]) or 0
    local seen = tonumber(stored[2]) or 0

    local at, ahead = decided_at(seen)
    -- Kept up to date by every write, so that an emptied log is never touched again.
    local length = redis.call('LLEN', log)

    -- Calls visit(spent_at, spent) on the entries from index `first` on, oldest first,
    -- until it returns true; returns the index of that entry, or the log's length. Reads in
    -- chunks that double from one, so a hit whose oldest entry still counts reads that
    -- entry alone.
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
    local expired = walk(0, function(spent_at, spent)
        if at - spent_at < window then
            return true
        end
        gone = gone + spent
        return false
    end)
    local used = total - gone

    -- Drops the entries that no longer count, once: the last thing done to the log but
    -- for keeping it, which `keep` leaves alone when this emptied it.
    local function prune()
        if expired > 0 then
            redis.call('LTRIM', log, expired, -1)
            length = length - expired
            expired = 0
        end
    end

    -- Writes the total and the latest time, and keeps both keys until the newest entry
    -- stops counting, plus the grace (within 2^53: a bucket kept for 285,000 years loses
    -- nothing by going a millisecond early). `used` is the total from here on.
    local function keep()
        redis.call('HSET', hash, 'total', int(total), 'seen', int(at))
        used = total
        local newest = nil
        if length > 0 then
            newest = redis.call('LINDEX', log, -1)
        end
        local counts = 0
        if newest then
            local newest_at = parse(newest)
            counts = window - (at - newest_at)
        end
        if counts > EXACT - grace then
            counts = EXACT - grace
        end
        redis.call('PEXPIRE', hash, int(counts + grace))
        if length > 0 then
            redis.call('PEXPIRE', log, int(counts + grace))
        end
    end

    -- Logs `more` at `at` (merged into the newest entry when that is at `at` too; an
    -- expired newest entry is older), drops the expired entries, and keeps both keys.
    local function save(more)
        total = used + more
        if more > 0 then
            local newest = redis.call('LINDEX', log, -1)
            local newest_at, newest_cost
            if newest then
                newest_at, newest_cost = parse(newest)
            end
            if newest_at == at then
                redis.call('LSET', log, -1, int(at) .. ':' .. int(newest_cost + more))
            else
                redis.call('RPUSH', log, int(at) .. ':' .. int(more))
                length = length + 1
            end
        end
        prune()
        keep()
    end

    -- The newest entry logged at or before `ms`: its index from the head,
    -- its time, its cost and its text; nil when every entry is later. Read from the tail in
    -- chunks that double from one, as a settle's reservation is usually among the newest
    -- entries.
    local function newest_until(ms)
        local last, size = length - 1, 1
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

    local bucket = {at = at, ahead = ahead, holds = window}

    -- The core's rule, used × W ≤ (N − c) × W, divided by W: the same for whole tokens.
    function bucket.judge(c)
        return judge(tokens, window, used * window, c)
    end

    -- Oldest first until enough has come back; the entry that frees it returns at s + W.
    -- Some entry always does: once all are back, used = 0 ≤ N − c.
    function bucket.wait(c)
        local fits, left, wait = tokens - c, used, 1
        walk(expired, function(spent_at, spent)
            left = left - spent
            if left <= fits then
                wait = window - (at - spent_at)
                return true
            end
            return false
        end)
        return wait
    end

    function bucket.used()
        return used * window
    end

    bucket.spend = save
    bucket.record = save

    function bucket.note()
        if at > seen then
            save(0)
        end
    end

    -- The total × W stays exact.
    function bucket.fits(more)
        return more <= floor_div(EXACT, window) - used
    end

    -- The reservation's entry counts while at − reserved_at < W (at ≥ reserved_at).
    function bucket.counts()
        return at - reserved_at < window
    end

    -- A settle's difference on its reservation's entry, as the core's settle: more is
    -- logged at the reservation's time (in time order, merged into that millisecond's
    -- entry); a refund takes back at most what that entry holds, and drops it once empty.
    -- Before the pruning, which leaves every index this uses in place: the reservation
    -- still counts (at − reserved_at < W), so its own entry and any written after it are
    -- not expired, and every expired entry is older than it.
    function bucket.adjust(sign, amount)
        local index, spent_at, spent, entry = newest_until(reserved_at)
        local own = spent_at == reserved_at
        if sign > 0 then
            local logged = int(reserved_at) .. ':' .. int(amount)
            if own then
                redis.call('LSET', log, index, int(reserved_at) .. ':' .. int(spent + amount))
            elseif index then
                redis.call('LINSERT', log, 'AFTER', entry, logged)
                length = length + 1
            else
                redis.call('LPUSH', log, logged)
                length = length + 1
            end
            total = used + amount
        elseif own then
            local taken = spent
            if amount < spent then
                taken = amount
            end
            if taken == spent then
                -- One entry per millisecond, so its text is unique in the log.
                redis.call('LREM', log, 1, entry)
                length = length - 1
            else
                redis.call('LSET', log, index, int(reserved_at) .. ':' .. int(spent - taken))
            end
            total = used - taken
        else
            total = used
        end
        prune()
        keep()
    end

    function bucket.reply(outcome, wait)
        return {outcome, used * window, at, wait, now, 0, 0, 0, 0}
    end

    return bucket
end
