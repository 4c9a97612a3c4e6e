-- The fixed window, decided as trickle's core decides it (src/algorithms/fixed.rs).
--
-- The hash holds current (the tokens spent in the window of `counted`), counted (the time
-- of the last spend) and seen (the latest time any request brought).
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the counter
-- alone and writes at most `seen`, and only when its time is later than any seen before:
-- the core reads a clock that went backwards as the latest time seen. The core rolls its
-- counter on every request; rolling here only when spending decides the same, because a
-- request that spends nothing in a later window finds the counter empty either way.
--
-- A reservation's tokens count while its window lasts; its pending record expires at the
-- window's end (plus the grace).

local keys_per_limit = 1

local function open(keys, tokens, window)
    local key = keys[1]
    local stored = redis.call('HMGET', key, 'current', 'counted', 'seen')
    local current = tonumber(stored[1]) or 0
    local counted = tonumber(stored[2]) or 0
    local seen = tonumber(stored[3]) or 0

    local at, ahead = decided_at(seen)

    -- The counter belongs to the window of `counted`; in any later window it is empty.
    local elapsed = math.fmod(at, window)
    if counted < at - elapsed then
        current = 0
    end

    -- used × W = current × W: at most N × W after hits, at most 2^53 after records.
    local used = current * window

    -- The counter stops counting when the window of `at` ends, W − e from now.
    local function keep()
        expire(key, window - elapsed, ahead)
    end

    local function save()
        redis.call('HSET', key, 'current', int(current), 'counted', int(at), 'seen', int(at))
        keep()
    end

    local function charge(more)
        current = current + more
        used = current * window
        save()
    end

    local bucket = {at = at, ahead = ahead, holds = window - elapsed}

    function bucket.judge(c)
        return judge(tokens, window, used, c)
    end

    -- Nothing comes back before the window ends, and then everything does.
    function bucket.wait()
        return window - elapsed
    end

    function bucket.used()
        return used
    end

    bucket.spend = charge
    bucket.record = charge

    function bucket.note()
        note(key, seen, at, keep)
    end

    -- current × W stays exact.
    function bucket.fits(more)
        return more <= floor_div(EXACT, window) - current
    end

    function bucket.counts()
        return reserved_at >= at - elapsed
    end

    function bucket.adjust(sign, amount)
        current = changed(current, sign, amount)
        used = current * window
        save()
    end

    function bucket.reply(outcome, wait)
        return {outcome, used, at, wait, now, 0, 0, 0, 0}
    end

    return bucket
end
