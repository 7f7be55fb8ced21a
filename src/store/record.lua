-- bulkwatch: look up and record one message in the shared state, atomically
-- (one round trip). The Rust side is src/store/redis.rs; the memory store
-- it mirrors is Engine::record_local in src/engine.rs.
--
-- Every key starts with B = "{<prefix>:v<version>}", so in a Redis Cluster
-- they all hash to one slot (KEYS[1] is the current slice, for routing).
--   B:s:<n>            hash, slice n of time (`slice` seconds, half a
--                      window): what was recorded while now/slice = n:
--     n                  the next message number (seq)
--     x<hash>            "<time>:<campaign id>" of an exact text (first
--                        128 bits of its SHA-256, hex)
--     t<i>:<hex>         permuted block table i, bucket <hex>
--     b<j>:<hex4>        MinHash band table j, bucket = first 4 hex digits
--   B:c:<id>           hash, a campaign (f l m r s al ns o e j subj names,
--                      and d<sender-domain hash> -> messages for up to 64
--                      domains; w: allowed until, x: forgotten, set by an
--                      operator) or an alias of a merged campaign (a = id)
--   B:top              sorted set, the campaigns of two messages or more
--                      by recipients (at most MAX_TOP): what every daemon
--                      lists as the site's campaigns
--   B:c:<id>:l         list, one 9-byte item per message (time, rcpts,
--                      weight, sender), oldest first: counts fall by it
--   B:c:<id>:r         sorted set, the campaigns merged into this one (j =
--                      1), each a node: its list and sorted set renamed to
--                      B:c:<node>:l and :r at the merge (node = <id>.<time
--                      hex>.<seq hex>, never reused), scored by the time of
--                      the oldest item under it. A merge moves no item:
--                      it renames two keys and adds one member, whatever
--                      the sizes, and expiry walks the nodes whose score
--                      has left the window (expire_node).
-- A bucket is a string of packed items, oldest first: time, seq, simhash,
-- sketch and campaign id in 40 bytes (band items add the 8-byte band key),
-- at most MAX_SCAN of them per slice. A lookup reads the window's slices
-- (at most three) with one HMGET each, and the message is written with one
-- HSET: the call count per message does not grow with the number of
-- tables. A slice expires as a whole (TTL: a slice plus the window plus a
-- margin), campaign keys by a TTL renewed at most once a minute (field e),
-- the keys of a merged campaign's node two TTLs after the merge:
-- Redis needs no cleanup job. Time comes from the caller (ARGV), so replays
-- with simulated time behave like the memory store.
--
-- A key of the prefix that holds a value of another type (WRONGTYPE: set
-- by hand, or by another program) would fail every call that reads it:
-- every Redis call goes through rcall, which deletes such a key, makes the
-- call again on the missing key and names the key in the reply (its last
-- field), for the daemon to count and log. Losing that key's content is
-- all it costs: it did not hold bulkwatch's data any more.

local B = ARGV[1]
local now = tonumber(ARGV[2])
local cutoff = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
-- ARGV[5] is the radius k when recording a message, or the name of an
-- operator's request (`mode`, see the end of the functions): 'allow',
-- 'forget' or 'list', whose arguments follow.
local mode = ARGV[5]
local k = tonumber(ARGV[5])
local max_sd = tonumber(ARGV[6])
local max_mh = tonumber(ARGV[7])
local strong_d = tonumber(ARGV[8])
local strong_sd = tonumber(ARGV[9])
local weak_pct = tonumber(ARGV[10])
local bulk_centi = tonumber(ARGV[11])
local near = ARGV[12] == '1'
local exact_hex = ARGV[13]
local first_id = ARGV[14]
local rcpts = tonumber(ARGV[15])
local sender = tonumber(ARGV[16])
local sender_name = ARGV[17]
local subject = ARGV[18]
local keep_subjects = ARGV[19] == '1'
-- Simhash and sketch as 32-bit halves (high, low).
local sim = { tonumber(ARGV[20]), tonumber(ARGV[21]) }
local sk = { tonumber(ARGV[22]), tonumber(ARGV[23]) }
local ntables = tonumber(ARGV[24]) or 0
local nbands = tonumber(ARGV[25]) or 0
local slice = tonumber(ARGV[26]) or 1
local tables = {}
for i = 1, ntables do tables[i] = ARGV[26 + i] end
local bands = {}
for j = 1, nbands do bands[j] = ARGV[26 + ntables + j] end
-- Corroboration (window.corroborating_*): least entries of one campaign
-- (0: off), their largest sketch difference and distance.
local corr_min = tonumber(ARGV[27 + ntables + nbands]) or 0
local corr_sd = tonumber(ARGV[28 + ntables + nbands]) or max_sd
local corr_d = tonumber(ARGV[29 + ntables + nbands]) or max_mh
-- thresholds.single_transaction_recipients: a campaign of one message is
-- bulk only above this many recipients (0, or absent: any).
local single_rcpts = tonumber(ARGV[30 + ntables + nbands]) or 0

local MAX_SENDERS = 64

-- Keys repaired (deleted for holding another type) in this call.
local repaired = {}
-- redis.call, but a WRONGTYPE error on a key of the prefix deletes the key
-- and makes the call again (see the top). A campaign's hash takes its own
-- list and sorted set with it: a campaign later made under the same id
-- must not inherit their items. Other errors are raised as redis.call
-- raises them.
local function rcall(cmd, key, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) ~= 'WRONGTYPE' or string.sub(key, 1, #B) ~= B then
      error(r)
    end
    repaired[#repaired + 1] = key
    if string.find(string.sub(key, #B + 1), '^:c:%x+$') then
      redis.call('UNLINK', key, key .. ':l', key .. ':r')
    else
      redis.call('UNLINK', key)
    end
    r = redis.call(cmd, key, ...)
  end
  return r
end

-- As in the memory store (campaign::MAX_CHAIN): a message must reach the
-- same campaign through the same aliases in both (64 here once sent a
-- message whose campaign had been merged 65 times into a campaign of its
-- own).
local MAX_CHAIN = 1024

-- Bits set in a 32-bit value, 16 bits at a time from a table filled as
-- values come (a campaign's near copies differ in few bits, so few do):
-- LuaBitOp's functions are C calls, and these run for every item scanned.
local band, bor, bxor, rshift = bit.band, bit.bor, bit.bxor, bit.rshift
local P16 = {}
local function fill(v)
  local c, x = 0, v
  while x > 0 do
    local r = x % 2
    c = c + r
    x = (x - r) / 2
  end
  P16[v] = c
  return c
end
local function pop32(x)
  local a, b = band(x, 0xFFFF), rshift(x, 16)
  return (P16[a] or fill(a)) + (P16[b] or fill(b))
end

local function hamming(hi, lo)
  return pop32(bxor(hi, sim[1])) + pop32(bxor(lo, sim[2]))
end

-- Differing 2-bit values of two sketches.
local function sdiff32(a, b)
  local x = bxor(a, b)
  return pop32(band(bor(x, rshift(x, 1)), 0x55555555))
end

local function sketch_diff(hi, lo)
  return sdiff32(hi, sk[1]) + sdiff32(lo, sk[2])
end

local function ckey(id) return B .. ':c:' .. id end
local TOP = B .. ':top'
-- Most campaigns in B:top (the site's list shows far fewer).
local MAX_TOP = 10000

-- Campaigns are read once into Lua tables (`camps`), changed there, and
-- written back once at the end (`dirty`): a few calls per message instead
-- of one per counter. Numeric fields: f l m r s al ns, o (time of the
-- list's first item) and e (when the TTLs were last renewed); senders are
-- fields d<hash> (up to MAX_SENDERS, counted in ns).
local camps, dirty, gone = {}, {}, {}
-- Fields as read (strings), so that only changed ones are written back: a
-- campaign with many senders has dozens of fields, a message changes few.
local stored = {}
local NUMERIC = { 'f', 'l', 'm', 'r', 's', 'al', 'ns', 'o', 'e' }
-- This message's number (set once the slices are read; names merge nodes).
local seq = 0

local function load(id)
  local v = camps[id]
  if v ~= nil then return v or nil end
  local h = rcall('HGETALL', ckey(id))
  if #h == 0 then
    camps[id] = false
    return nil
  end
  v = {}
  local st = {}
  for i = 1, #h, 2 do
    v[h[i]] = h[i + 1]
    st[h[i]] = h[i + 1]
  end
  stored[id] = st
  if not v.a then
    for _, f in ipairs(NUMERIC) do v[f] = tonumber(v[f]) or 0 end
  end
  camps[id] = v
  return v
end

-- The live campaign an id forwards to, or nil.
local function resolve(id)
  for _ = 1, MAX_CHAIN do
    local v = load(id)
    if not v then return nil end
    if not v.a then return id end
    id = v.a
  end
  return nil
end

local function add_sender(v, s, n)
  local f = 'd' .. s
  local cur = tonumber(v[f])
  if cur then
    v[f] = cur + n
  elseif v.ns < MAX_SENDERS then
    v[f] = n
    v.ns = v.ns + 1
  end
end

local function drop_sender(id, v, s, n)
  local f = 'd' .. s
  local cur = tonumber(v[f])
  if cur then
    if cur - n <= 0 then
      v[f] = nil
      v.ns = v.ns - 1
      gone[id] = gone[id] or {}
      table.insert(gone[id], f)
    else
      v[f] = cur - n
    end
  end
end

local function add_name(v, name)
  local names = v.names or ''
  local n = 0
  for _ in string.gmatch(names, '[^\n]+') do n = n + 1 end
  if n < 5 and not string.find('\n' .. names .. '\n', '\n' .. name .. '\n', 1, true) then
    v.names = (names == '' and name) or (names .. '\n' .. name)
  end
end

-- Takes the items older than the window out of node `node` into the
-- counters v of live campaign `id`: from the front of its list, then from
-- the nodes merged into it whose oldest item left the window, as far down
-- as they hold such items (`deep` levels, nil: none, for a campaign that
-- never merged another). Returns the time of the oldest item left under
-- the node, or nil when none is left (its keys are then gone: Redis drops
-- an emptied list or sorted set). Each item is read once when it leaves,
-- as from one list; a node costs two calls more when it is visited.
local function expire_node(id, v, node, deep)
  local base = ckey(node)
  local l = base .. ':l'
  local head = nil
  while true do
    local items = rcall('LRANGE', l, 0, 63)
    local n = 0
    for _, it in ipairs(items) do
      local t, r, w, s = struct.unpack('>I4HBH', it)
      if t >= cutoff then
        head = t
        break
      end
      n = n + 1
      v.m = v.m - 1
      v.r = v.r - r
      v.s = v.s - r * w
      drop_sender(id, v, s, 1)
    end
    if n > 0 then rcall('LTRIM', l, n, -1) end
    if head or #items < 64 then break end
  end
  if deep then
    local set = base .. ':r'
    if deep > 0 then
      for _, child in ipairs(rcall('ZRANGEBYSCORE', set, '-inf', '(' .. cutoff)) do
        local h = expire_node(id, v, child, deep - 1)
        if h then rcall('ZADD', set, h, child) else rcall('ZREM', set, child) end
      end
    end
    local first = rcall('ZRANGE', set, 0, 0, 'WITHSCORES')
    local t = tonumber(first[2])
    if t and (not head or t < head) then head = t end
  end
  return head
end

-- Takes what left the window out of a live campaign's counters; deletes
-- the campaign and returns false when nothing of it is left. Once per
-- campaign and call; its items are read only when the oldest (o) is older
-- than the window.
local expired = {}
local function expire(id)
  if expired[id] ~= nil then return expired[id] end
  local v = load(id)
  if not v or v.a then return false end
  if v.o >= cutoff then
    expired[id] = true
    return true
  end
  local head = expire_node(id, v, id, v.j and MAX_CHAIN or nil)
  dirty[id] = true
  if head then
    v.o = head
  else
    redis.call('DEL', ckey(id), ckey(id) .. ':l', ckey(id) .. ':r')
    rcall('ZREM', TOP, id)
    camps[id], dirty[id], gone[id] = false, nil, nil
  end
  expired[id] = head ~= nil
  return expired[id]
end

local function hex48(n)
  return string.format('%06x%06x', math.floor(n / 16777216), n % 16777216)
end

local function create()
  local id = first_id
  for _ = 1, 1024 do
    local v = load(id)
    if not v then break end
    if not v.a and not expire(id) then break end
    id = hex48((tonumber(id, 16) + 1) % 281474976710656)
  end
  camps[id] = { f = now, l = now, m = 0, r = 0, s = 0, al = 0, ns = 0, o = now, e = 0 }
  -- Written whole: an earlier campaign of this id may have been deleted
  -- (expired) in this call.
  stored[id] = nil
  expired[id] = true
  dirty[id] = true
  return id
end

-- Merges the live campaigns `roots` (ids) into the one first seen earliest
-- (ties: lowest id); returns it and the ids merged away. The items of a
-- campaign merged away stay where they are: its list and sorted set are
-- renamed to a node of the target (see the top), so a merge costs a few
-- calls per campaign, whatever their sizes.
local function merge(roots)
  local target, tf = nil, nil
  for _, id in ipairs(roots) do
    local f = camps[id].f
    if not target or f < tf or (f == tf and id < target) then
      target, tf = id, f
    end
  end
  local absorbed = {}
  local tv = camps[target]
  local set = ckey(target) .. ':r'
  for _, id in ipairs(roots) do
    if id ~= target then
      local v = camps[id]
      if v.f < tv.f then tv.f = v.f end
      if v.o < tv.o then tv.o = v.o end
      if v.l > tv.l then tv.l = v.l end
      tv.m = tv.m + v.m
      tv.r = tv.r + v.r
      tv.s = tv.s + v.s
      if v.al == 1 then tv.al = 1 end
      local w = tonumber(v.w)
      if w and (not tonumber(tv.w) or w > tonumber(tv.w)) then tv.w = w end
      for k, x in pairs(v) do
        if string.sub(k, 1, 1) == 'd' then add_sender(tv, string.sub(k, 2), tonumber(x)) end
      end
      if v.names then
        for name in string.gmatch(v.names, '[^\n]+') do add_name(tv, name) end
      end
      if v.subj and not tv.subj then tv.subj = v.subj end
      -- The node outlives its items by a window and a TTL: a campaign
      -- whose TTL was renewed just before they left the window may be
      -- read once more until its own TTL runs out, and its expiry then
      -- takes them out of the counts.
      local c = ckey(id)
      local node = string.format('%s.%x.%x', id, now, seq)
      local nb = ckey(node)
      for _, suffix in ipairs({ ':l', ':r' }) do
        if redis.call('EXISTS', c .. suffix) == 1 then
          redis.call('RENAME', c .. suffix, nb .. suffix)
          redis.call('EXPIRE', nb .. suffix, 2 * ttl)
        end
      end
      rcall('ZADD', set, v.o, node)
      rcall('ZREM', TOP, id)
      redis.call('DEL', c)
      rcall('HSET', c, 'a', target)
      redis.call('EXPIRE', c, ttl)
      camps[id], dirty[id], gone[id] = { a = target }, nil, nil
      absorbed[#absorbed + 1] = id
    end
  end
  -- The sorted set may be new: it gets its TTL with the campaign's.
  tv.j = 1
  tv.e = 0
  dirty[target] = true
  return target, absorbed
end

-- Writes the campaigns back, each in one HSET; their TTLs are renewed at
-- most once a minute (the margin is 5 minutes), and at once for new keys.
-- A campaign of two messages or more is ranked in B:top by recipients.
local function flush()
  local ranked = false
  for id in pairs(dirty) do
    local cv = camps[id]
    if cv then
      local c = ckey(id)
      local renew = cv.e == 0 or now - cv.e >= 60 or cv.e > now
      if renew then cv.e = now end
      if gone[id] then rcall('HDEL', c, unpack(gone[id])) end
      local st = stored[id] or {}
      local args = {}
      for k, x in pairs(cv) do
        -- Counts are whole numbers, which Redis stores as tostring writes
        -- them (both print every digit below 10^14).
        if st[k] ~= tostring(x) then
          args[#args + 1] = k
          args[#args + 1] = x
        end
      end
      if #args > 0 then rcall('HSET', c, unpack(args)) end
      if renew then
        redis.call('EXPIRE', c, ttl)
        redis.call('EXPIRE', c .. ':l', ttl)
        if cv.j then redis.call('EXPIRE', c .. ':r', ttl) end
      end
      if not cv.a and cv.m >= 2 and not cv.x then
        local added = rcall('ZADD', TOP, cv.r, id)
        ranked = true
        -- (A new member may have made the key: it gets its TTL now.)
        if renew or added > 0 then redis.call('EXPIRE', TOP, ttl) end
      elseif not cv.a and stored[id] then
        -- (A campaign new in this call was never ranked.)
        rcall('ZREM', TOP, id)
      end
    end
  end
  if ranked and seq % 64 == 0 then rcall('ZREMRANGEBYRANK', TOP, 0, -(MAX_TOP + 1)) end
end

-- An operator's request instead of a message (ARGV[5]):
--   allow  <id> <until>: the live campaign of <id> (or the one it was
--          merged into) is allowed until <until> (Unix seconds)
--   forget <id>: nothing joins that campaign any more, lists hide it
--   list   <n>: the n largest live campaigns, each as 10 fields (id f l
--          m r s ns subj names w), their counts brought up to now
-- allow and forget answer the live id, or '' when there is none.
if mode == 'allow' or mode == 'forget' then
  local root = resolve(ARGV[6])
  if not root or camps[root].x or not expire(root) then
    flush()
    return ''
  end
  local v = camps[root]
  if mode == 'allow' then
    v.w = tonumber(ARGV[7])
  else
    v.x = 1
    if v.w then
      v.w = nil
      gone[root] = gone[root] or {}
      table.insert(gone[root], 'w')
    end
  end
  dirty[root] = true
  flush()
  return root
elseif mode == 'list' then
  local out = {}
  local want = tonumber(ARGV[6]) or 0
  if want < 1 then return out end
  for _, id in ipairs(rcall('ZREVRANGE', TOP, 0, want - 1)) do
    local root = resolve(id)
    if root ~= id or not expire(id) or camps[id].x or camps[id].m < 2 then
      -- Merged, expired, forgotten, or an id reused by a campaign of one
      -- message since: not one of the site's campaigns any more.
      rcall('ZREM', TOP, id)
    else
      local v = camps[id]
      out[#out + 1] = id
      for _, f in ipairs({ 'f', 'l', 'm', 'r', 's', 'ns' }) do out[#out + 1] = v[f] end
      out[#out + 1] = v.subj or ''
      out[#out + 1] = v.names or ''
      out[#out + 1] = tonumber(v.w) or 0
    end
  end
  flush()
  return out
end

-- The window's slices, newest first, each read with one HMGET of the
-- fields this message needs.
local cur = math.floor(now / slice)
local oldest = math.max(math.floor(cutoff / slice), cur - 8)
local function skey(n) return B .. ':s:' .. n end
local xfield = 'x' .. string.sub(exact_hex, 1, 32)
local fields = { 'n', xfield }
local tfield, bfield, bkey = {}, {}, {}
if near then
  for i = 1, ntables do
    tfield[i] = 't' .. tables[i]
    fields[#fields + 1] = tfield[i]
  end
  for j = 1, nbands do
    bfield[j] = 'b' .. (j - 1) .. ':' .. string.sub(bands[j], 1, 4)
    bkey[j] = { tonumber(string.sub(bands[j], 1, 8), 16), tonumber(string.sub(bands[j], 9, 16), 16) }
    fields[#fields + 1] = bfield[j]
  end
end
local got = {}
for n = cur, oldest, -1 do
  got[#got + 1] = rcall('HMGET', skey(n), unpack(fields))
end
-- This message's number: the highest next number of the window's slices.
for _, g in ipairs(got) do
  local n = tonumber(g[1])
  if n and n > seq then seq = n end
end

-- Exact: a text seen in the window whose campaign is still live (the
-- newest slice that has it holds its last sighting).
local exact = false
local exact_root = nil
for _, g in ipairs(got) do
  local xv = g[2]
  if xv then
    local sep = string.find(xv, ':', 1, true)
    if sep and tonumber(string.sub(xv, 1, sep - 1)) >= cutoff then
      local root = resolve(string.sub(xv, sep + 1))
      if root and not camps[root].x and expire(root) then
        exact = true
        exact_root = root
      end
    end
    break
  end
end

-- Near: block tables (distance <= k) and band tables (second stage).
-- As in the memory store (src/index): at most MAX_SCAN of the newest items
-- of a bucket are read, and at most MAX_MATCHES matches kept, the closest,
-- so a flood of one text costs bounded work per message.
local MAX_SCAN = 256
local MAX_MATCHES = 256
local ITEM, BAND_ITEM = 40, 48
local ITEM_FMT = '>I4dI4I4I4I4c12'
local best_d, best_sd, near_seq = nil, nil, nil
if exact then best_d, best_sd = 0, 0 end
local matches, match_cid, match_text = {}, {}, {}
-- Band candidates within the corroboration bounds only; keys and
-- campaigns as for matches.
local corr, corr_cid, corr_text = {}, {}, {}
local seen = {}
-- Sort keys pack (sketch difference, distance, seq); see below.
local SEQ = 1099511627776
-- A near entry is in all the block tables that its blocks share with the
-- query: measure it once (a band may still make it match).
local checked = {}
local unpack_ts, unpack_rest = '>I4d', '>I4I4I4I4c12'
-- Field `pos` of every slice, newest first, at most MAX_SCAN items; those
-- older than the window are skipped (their slice expires later). One loop
-- without calls but struct's: this runs for every item of a busy bucket.
local function scan(pos, band_key)
  local size = band_key and BAND_ITEM or ITEM
  local b1, b2 = 0, 0
  if band_key then b1, b2 = band_key[1], band_key[2] end
  local left = MAX_SCAN
  for _, g in ipairs(got) do
    local s = g[pos]
    if s and left > 0 then
      local last = #s - size + 1
      local first = math.max(1, last - (left - 1) * size)
      left = left - (last - first) / size - 1
      for p = last, first, -size do
        local shares = true
        if band_key then
          local x1, x2 = struct.unpack('>I4I4', s, p + ITEM)
          shares = x1 == b1 and x2 == b2
        end
        if shares then
          -- Time and number first: most items of a busy bucket were
          -- measured already.
          local t, seq = struct.unpack(unpack_ts, s, p)
          if t >= cutoff and not seen[seq] and (band_key or not checked[seq]) then
            if not band_key then checked[seq] = true end
            local h1, h2, k1, k2, cid = struct.unpack(unpack_rest, s, p + 12)
            local d = hamming(h1, h2)
            local sd = sketch_diff(k1, k2)
            if d <= k or (band_key and sd <= max_sd and d <= max_mh) then
              seen[seq] = true
              -- One number that sorts like (sd, d, seq): sd <= 32 and
              -- d <= 64 fit in 13 bits, seq below 2^40, all exact in a
              -- double.
              local key = (sd * 128 + d) * SEQ + seq
              matches[#matches + 1] = key
              match_cid[key] = cid
              match_text[key] = k1 .. ':' .. k2
            elseif band_key and corr_min > 0 and sd <= corr_sd and d <= corr_d then
              -- The same in every band that finds it: measured once.
              seen[seq] = true
              local key = (sd * 128 + d) * SEQ + seq
              corr[#corr + 1] = key
              corr_cid[key] = cid
              corr_text[key] = k1 .. ':' .. k2
            end
          end
        end
      end
    end
  end
end
if near then
  for i = 1, ntables do scan(2 + i, nil) end
  for j = 1, nbands do scan(2 + ntables + j, bkey[j]) end
end
-- The linking rule, as in the memory store (src/engine/link.rs, which
-- explains it): the matches closest first, then the corroborating
-- entries closest first, at most MAX_MATCHES in all (NearIndex::query);
-- per live campaign, its distinct strong texts and its distinct weak ones.
table.sort(matches)
table.sort(corr)
local list = {}
for i = 1, math.min(#matches, MAX_MATCHES) do
  local key = matches[i]
  list[#list + 1] = { key, match_cid[key], false, match_text[key] }
end
for i = 1, math.min(#corr, MAX_MATCHES - #list) do
  local key = corr[i]
  list[#list + 1] = { key, corr_cid[key], true, corr_text[key] }
end
local function parts(key)
  local s = key % SEQ
  local rest = (key - s) / SEQ
  local d = rest % 128
  return (rest - d) / 128, d, s
end
local per, roots = {}, {}
local function evidence(root)
  local e = per[root]
  if not e then
    e = { root = root, exact = false, strong = {}, ns = 0, weak = {}, nw = 0, spos = math.huge }
    per[root] = e
    roots[#roots + 1] = root
  end
  return e
end
local function live(id)
  local root = resolve(id)
  if root and not camps[root].x and expire(root) then return root end
  return nil
end
if exact_root then
  local e = evidence(exact_root)
  e.exact = true
  e.spos = 0
end
for pos, it in ipairs(list) do
  local root = live(it[2])
  if root then
    local e = evidence(root)
    if not e.first then e.first = pos end
    local sd, d = parts(it[1])
    local strong = not it[3] and (corr_min == 0 or d <= strong_d or sd <= strong_sd)
    if strong then
      if not e.strong[it[4]] then
        e.strong[it[4]] = true
        e.ns = e.ns + 1
      end
      if not e.first_strong then
        e.first_strong = pos
        if not e.exact then e.spos = pos end
      end
    elseif not e.weak[it[4]] then
      e.weak[it[4]] = true
      e.nw = e.nw + 1
    end
  end
end
local function nstrong(e) return e.ns + (e.exact and 1 or 0) end
local chosen = nil
for _, root in ipairs(roots) do
  local e = per[root]
  local n = nstrong(e)
  if n > 0 and (not chosen or n > nstrong(chosen) or (n == nstrong(chosen) and e.spos < chosen.spos)) then
    chosen = e
  end
end
local join, joined = {}, {}
local corroborating = 0
local closest = nil
if chosen then
  join[1] = chosen.root
  for _, root in ipairs(roots) do
    local e = per[root]
    if root ~= chosen.root and nstrong(e) > 0 then
      join[#join + 1] = root
    end
  end
  for _, root in ipairs(join) do
    joined[root] = true
    local e = per[root]
    if e.exact then best_d, best_sd = 0, 0 end
    if e.first_strong then
      local sd, d = parts(list[e.first_strong][1])
      if not best_d or d < best_d then best_d = d end
      if not best_sd or sd < best_sd then best_sd = sd end
      if not closest or e.first_strong < closest then closest = e.first_strong end
    end
  end
elseif corr_min > 0 then
  local pick = nil
  for _, root in ipairs(roots) do
    local e = per[root]
    if e.nw >= corr_min and (not pick or e.nw > pick.nw or (e.nw == pick.nw and e.first < pick.first)) then
      pick = e
    end
  end
  if pick then
    join[1] = pick.root
    joined[pick.root] = true
    corroborating = pick.nw
    closest = pick.first
    best_sd, best_d = parts(list[closest][1])
  end
end
if closest then
  local _, _, s = parts(list[closest][1])
  near_seq = s
end
-- The closest match in a campaign not joined: a near miss.
local miss = nil
for _, root in ipairs(roots) do
  local e = per[root]
  if not joined[root] and e.first and (not miss or e.first < miss) then miss = e.first end
end
local miss_id, miss_d, miss_sd, miss_seq = '', -1, -1, -1
if miss then
  miss_sd, miss_d, miss_seq = parts(list[miss][1])
  miss_id = live(list[miss][2])
end

-- Campaign: create, join or merge.
local target, absorbed
if #join == 0 then
  target, absorbed = create(), {}
elseif #join == 1 then
  target, absorbed = join[1], {}
else
  target, absorbed = merge(join)
end

local strong = exact or (best_d and best_d <= strong_d) or (best_sd and best_sd <= strong_sd)
local weight = 100
if corroborating > 0 or (best_d and not strong) then weight = weak_pct end

local v = camps[target]
v.m = v.m + 1
v.r = v.r + rcpts
v.s = v.s + rcpts * weight
if now > v.l then v.l = now end
add_sender(v, sender, 1)
if sender_name ~= '' then add_name(v, sender_name) end
if keep_subjects and subject ~= '' and not v.subj then v.subj = subject end
rcall('RPUSH', ckey(target) .. ':l', struct.pack('>I4HBH', now, rcpts, weight, sender))
local newly_bulk = 0
-- The rule of engine::verdict::campaign_level.
local alone = v.m <= 1 and v.r <= single_rcpts
if v.s >= bulk_centi and v.al ~= 1 and not alone then
  v.al = 1
  newly_bulk = 1
end
dirty[target] = true

flush()

-- Record the message in the current slice: one HSET of the next number,
-- the exact text and every bucket with the new item appended (a bucket
-- keeps its newest MAX_SCAN items).
local now_g = got[1]
local set = { 'n', seq + 1, xfield, now .. ':' .. target }
if near then
  local item = struct.pack(ITEM_FMT, now, seq, sim[1], sim[2], sk[1], sk[2], target)
  local function put(field, old, it, size)
    local v = (old or '') .. it
    if #v > MAX_SCAN * size then v = string.sub(v, -MAX_SCAN * size) end
    set[#set + 1] = field
    set[#set + 1] = v
  end
  for i = 1, ntables do put(tfield[i], now_g[2 + i], item, ITEM) end
  for j = 1, nbands do
    put(bfield[j], now_g[2 + ntables + j], item .. struct.pack('>I4I4', bkey[j][1], bkey[j][2]), BAND_ITEM)
  end
end
rcall('HSET', skey(cur), unpack(set))
if not now_g[1] then redis.call('EXPIRE', skey(cur), slice + ttl) end

return {
  exact and 1 or 0,
  best_d or -1,
  best_sd or -1,
  near_seq or -1,
  seq,
  target,
  v.f,
  v.l,
  v.m,
  v.r,
  v.s,
  v.ns,
  v.subj or '',
  v.subj and 1 or 0,
  v.names or '',
  table.concat(absorbed, ','),
  newly_bulk,
  corroborating,
  miss_id,
  miss_d,
  miss_sd,
  miss_seq,
  (tonumber(v.w) and tonumber(v.w) > now) and 1 or 0,
  repaired,
}
