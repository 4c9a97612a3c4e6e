-- The floating window, decided as trickle's core decides it (src/algorithms/floating.rs).
--
-- The hash holds previous, current, counted (the time the counters were last rolled to)
-- and seen (the latest time any request brought).
--
-- A reservation's tokens are in `current` while its window lasts and in `previous` through
-- the next one; from the end of that one on they no longer count, and its pending record
-- expires then (plus the grace).
--
-- A request that spends nothing (denied, too large, cost 0, or a peek) leaves the
-- counters alone and writes at most `seen`, and only when its time is later than any seen
-- before: the core reads a clock that went backwards as the latest time seen, so that
-- time is part of every later decision.

local keys_per_limit = 1

local function open(keys, tokens, window)
    local key = keys[1]
    local stored = redis.call('HMGET', key, 'previous', 'current', 'counted', 'seen')
    local previous = tonumber(stored[1]) or 0
    local current = tonumber(stored[2]) or 0
    local counted = tonumber(stored[3]) or 0
    local seen = tonumber(stored[4]) or 0

    local at, ahead = decided_at(seen)

    -- Roll the counters from the window of `counted` to the window of `at`.
    local elapsed = math.fmod(at, window)
    local start = at - elapsed
    if counted < start then
        if start - counted <= window then
            previous, current = current, 0
        else
            previous, current = 0, 0
        end
    end

    -- used × W = previous × (W − e) + current × W: at most 2 × N × W after hits alone, and
    -- at most (previous + current) × W ≤ 2^53 after records.
    local function scaled()
        return previous * (window - elapsed) + current * window
    end
    local used = scaled()

    -- The counters of the window of `at` count until the end of the window after it, 2W − e
    -- from now (at most 2^53, as W ≤ 2^52); a write of `seen` alone keeps counters of that
    -- window or an earlier one, which stop counting no later.
    local function keep()
        expire(key, 2 * window - elapsed, ahead)
    end

    local function save()
        redis.call('HSET', key, 'previous', int(previous), 'current', int(current),
            'counted', int(at), 'seen', int(at))
        keep()
    end

    local function charge(more)
        current = current + more
        used = used + more * window
        save()
    end

    local bucket = {at = at, ahead = ahead, holds = 2 * window - elapsed}

    function bucket.judge(c)
        return judge(tokens, window, used, c)
    end

    -- The first offset into a window at which `spent` tokens of the window before leave
    -- room for `room` (scaled): W − min(floor(room / spent), W).
    local function first_fit(spent, room)
        local share = floor_div(room, spent)
        if share > window then
            share = window
        end
        return window - share
    end

    function bucket.wait(c)
        if current <= tokens - c then
            local wait = first_fit(previous, (tokens - current - c) * window) - elapsed
            if wait < 0 then
                return 0
            end
            return wait
        end
        return (window - elapsed) + first_fit(current, (tokens - c) * window)
    end

    function bucket.used()
        return used
    end

    bucket.spend = charge
    bucket.record = charge

    function bucket.note()
        note(key, seen, at, keep)
    end

    -- (previous + current) × W stays exact.
    function bucket.fits(more)
        return more <= floor_div(EXACT, window) - previous - current
    end

    -- The counter that holds the reservation's tokens at `at`, if any still does.
    local holds_current = reserved_at >= start
    local holds_previous = not holds_current and start - reserved_at <= window

    function bucket.counts()
        return holds_current or holds_previous
    end

    function bucket.adjust(sign, amount)
        if holds_current then
            current = changed(current, sign, amount)
        else
            previous = changed(previous, sign, amount)
        end
        used = scaled()
        save()
    end

    function bucket.reply(outcome, wait)
        return {outcome, used, at, wait, now, 1, previous, current, elapsed}
    end

    return bucket
end
