-- bulkwatch: look up and record one message in the shared state, atomically
-- (one round trip). The Rust side is src/store/redis.rs; the memory store
-- it mirrors is Engine::record_local in src/engine.rs.
--
-- Every key starts with B = "{<prefix>:v<version>}", so in a Redis Cluster
-- they all hash to one slot (KEYS[1] is B..":seq", for routing).
--   B:seq              counter of recorded messages
--   B:t:<i>:<hex>      zset, permuted block table i, bucket <hex> (score: time)
--   B:b:<j>:<hex4>     zset, MinHash band table j, bucket = first 4 hex digits
--   B:x:<sha256 hex>   "<time>:<campaign id>" of an exact text
--   B:c:<id>           hash, a campaign (f l m r s al subj names) or an
--                      alias of a merged campaign (a = target id)
--   B:c:<id>:l         list, one 9-byte item per message (time, rcpts,
--                      weight, sender), oldest first: counts fall by it
--   B:c:<id>:s         hash, sender-domain hash -> messages (up to 64)
-- Table members pack (seq, simhash, sketch, campaign id) in 36 bytes (band
-- members add the 16-hex band key): under zset-max-listpack-value (64), so
-- small buckets stay compact. Every key gets a TTL of the window plus a
-- margin: Redis needs no cleanup job. Time comes from the caller (ARGV), so
-- replays with simulated time behave like the memory store.

local B = ARGV[1]
local now = tonumber(ARGV[2])
local cutoff = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
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
local ntables = tonumber(ARGV[24])
local nbands = tonumber(ARGV[25])
local tables = {}
for i = 1, ntables do tables[i] = ARGV[25 + i] end
local bands = {}
for j = 1, nbands do bands[j] = ARGV[25 + ntables + j] end

local MAX_SENDERS = 64
local MAX_CHAIN = 64

-- Bits set in a 32-bit value (SWAR; LuaBitOp works on 32-bit integers).
local band, bor, bxor, rshift = bit.band, bit.bor, bit.bxor, bit.rshift
local function pop32(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  x = x + rshift(x, 16)
  return band(x, 0x3F)
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

local function touch(id)
  local c = ckey(id)
  redis.call('EXPIRE', c, ttl)
  redis.call('EXPIRE', c .. ':l', ttl)
  redis.call('EXPIRE', c .. ':s', ttl)
end

-- The live campaign an id forwards to, or nil.
local function resolve_uncached(id)
  for _ = 1, MAX_CHAIN do
    local t = redis.call('HGET', ckey(id), 'a')
    if not t then
      if redis.call('EXISTS', ckey(id)) == 1 then return id end
      return nil
    end
    id = t
  end
  return nil
end

-- Members of one big campaign name the same few ids: resolve each once.
local resolved = {}
local function resolve(id)
  local r = resolved[id]
  if r == nil then
    r = resolve_uncached(id) or false
    resolved[id] = r
  end
  return r or nil
end

local function drop_sender(c, s, n)
  local sk_ = c .. ':s'
  if redis.call('HEXISTS', sk_, s) == 1 then
    if redis.call('HINCRBY', sk_, s, -n) <= 0 then redis.call('HDEL', sk_, s) end
  end
end

local function add_sender(c, s, n)
  local sk_ = c .. ':s'
  if redis.call('HEXISTS', sk_, s) == 1 or redis.call('HLEN', sk_) < MAX_SENDERS then
    redis.call('HINCRBY', sk_, s, n)
  end
end

-- Takes what left the window out of a live campaign's counters; deletes
-- the campaign and returns false when nothing of it is left.
local function expire(id)
  local c = ckey(id)
  local l = c .. ':l'
  while true do
    local head = redis.call('LINDEX', l, 0)
    if not head then break end
    local t, r, w, s = struct.unpack('>I4HBH', head)
    if t >= cutoff then break end
    redis.call('LPOP', l)
    redis.call('HINCRBY', c, 'm', -1)
    redis.call('HINCRBY', c, 'r', -r)
    redis.call('HINCRBY', c, 's', -(r * w))
    drop_sender(c, s, 1)
  end
  if redis.call('LLEN', l) == 0 then
    redis.call('DEL', c, l, c .. ':s')
    return false
  end
  return true
end

local function hex48(n)
  return string.format('%06x%06x', math.floor(n / 16777216), n % 16777216)
end

local function create()
  local id = first_id
  for _ = 1, 1024 do
    local c = ckey(id)
    if redis.call('EXISTS', c) == 0 then break end
    if not redis.call('HGET', c, 'a') and not expire(id) then break end
    id = hex48((tonumber(id, 16) + 1) % 281474976710656)
  end
  redis.call('HSET', ckey(id), 'f', now, 'l', now, 'm', 0, 'r', 0, 's', 0, 'al', 0)
  return id
end

-- Merges the live campaigns `roots` (ids) into the one first seen earliest
-- (ties: lowest id); returns it and the ids merged away.
local function merge(roots)
  local target, tf = nil, nil
  for _, id in ipairs(roots) do
    local f = tonumber(redis.call('HGET', ckey(id), 'f'))
    if not target or f < tf or (f == tf and id < target) then
      target, tf = id, f
    end
  end
  local absorbed = {}
  local tc = ckey(target)
  for _, id in ipairs(roots) do
    if id ~= target then
      local c = ckey(id)
      local h = redis.call('HGETALL', c)
      local v = {}
      for i = 1, #h, 2 do v[h[i]] = h[i + 1] end
      if tonumber(v.f) < tf then
        redis.call('HSET', tc, 'f', v.f)
        tf = tonumber(v.f)
      end
      if tonumber(v.l) > tonumber(redis.call('HGET', tc, 'l')) then
        redis.call('HSET', tc, 'l', v.l)
      end
      redis.call('HINCRBY', tc, 'm', v.m)
      redis.call('HINCRBY', tc, 'r', v.r)
      redis.call('HINCRBY', tc, 's', v.s)
      if v.al == '1' then redis.call('HSET', tc, 'al', 1) end
      local senders = redis.call('HGETALL', c .. ':s')
      for i = 1, #senders, 2 do add_sender(tc, senders[i], tonumber(senders[i + 1])) end
      if v.names then
        local names = redis.call('HGET', tc, 'names') or ''
        local n = 0
        for _ in string.gmatch(names, '[^\n]+') do n = n + 1 end
        for name in string.gmatch(v.names, '[^\n]+') do
          if n < 5 and not string.find('\n' .. names .. '\n', '\n' .. name .. '\n', 1, true) then
            names = (names == '' and name) or (names .. '\n' .. name)
            n = n + 1
          end
        end
        redis.call('HSET', tc, 'names', names)
      end
      if v.subj and not redis.call('HGET', tc, 'subj') then
        redis.call('HSET', tc, 'subj', v.subj)
      end
      -- Both lists are in time order; the merged one must be too, so that
      -- expiry takes items from the front.
      local a = redis.call('LRANGE', tc .. ':l', 0, -1)
      local b = redis.call('LRANGE', c .. ':l', 0, -1)
      local merged, i, j = {}, 1, 1
      while i <= #a or j <= #b do
        local take_a = j > #b or (i <= #a and struct.unpack('>I4', a[i]) <= struct.unpack('>I4', b[j]))
        if take_a then
          merged[#merged + 1] = a[i]; i = i + 1
        else
          merged[#merged + 1] = b[j]; j = j + 1
        end
      end
      redis.call('DEL', tc .. ':l', c, c .. ':l', c .. ':s')
      for x = 1, #merged, 1000 do
        redis.call('RPUSH', tc .. ':l', unpack(merged, x, math.min(x + 999, #merged)))
      end
      redis.call('HSET', c, 'a', target)
      redis.call('EXPIRE', c, ttl)
      absorbed[#absorbed + 1] = id
    end
  end
  return target, absorbed
end

-- Exact: a text seen in the window whose campaign is still live.
local exact = false
local found, found_set = {}, {}
local function add_found(id)
  local root = resolve(id)
  if root and not found_set[root] and expire(root) then
    found_set[root] = true
    found[#found + 1] = root
  end
end
local xkey = B .. ':x:' .. exact_hex
local xv = redis.call('GET', xkey)
if xv then
  local sep = string.find(xv, ':', 1, true)
  if sep and tonumber(string.sub(xv, 1, sep - 1)) >= cutoff then
    local root = resolve(string.sub(xv, sep + 1))
    if root and expire(root) then
      exact = true
      found_set[root] = true
      found[#found + 1] = root
    end
  end
end

-- Near: block tables (distance <= k) and band tables (second stage).
-- As in the memory store (src/index): at most MAX_SCAN of the newest items
-- of a bucket are read, and at most MAX_MATCHES matches kept, the closest,
-- so a flood of one text costs bounded work per message.
local MAX_SCAN = 1024
local MAX_MATCHES = 256
local best_d, best_sd, near_seq = nil, nil, nil
if exact then best_d, best_sd = 0, 0 end
local matches = {}
local seen = {}
-- A near entry is in all k+1 block tables that its blocks share with the
-- query: unpack and measure it once.
local checked = {}
local function consider(m, shares_band)
  if not shares_band then
    if checked[m] then return end
    checked[m] = true
  elseif checked[string.sub(m, 1, 36)] and seen[struct.unpack('>d', m)] then
    return
  end
  local seq, h1, h2, k1, k2, cid = struct.unpack('>dI4I4I4I4c12', m)
  if seen[seq] then return end
  local d = hamming(h1, h2)
  local sd = sketch_diff(k1, k2)
  if d <= k or (shares_band and sd <= max_sd and d <= max_mh) then
    seen[seq] = true
    matches[#matches + 1] = { sd, d, seq, cid }
  end
end

-- One read per bucket, newest first, with scores: items older than the
-- window are skipped here and trimmed when this message is added (only
-- then), as are items beyond the newest MAX_SCAN.
local trim = {}
local function scan(key, f)
  local r = redis.call('ZREVRANGE', key, 0, MAX_SCAN - 1, 'WITHSCORES')
  if #r >= 2 * MAX_SCAN then trim[key] = true end
  for i = 1, #r, 2 do
    if tonumber(r[i + 1]) >= cutoff then f(r[i]) else trim[key] = true end
  end
end
if near then
  for i = 1, ntables do
    scan(B .. ':t:' .. tables[i], function(m) consider(m, false) end)
  end
  for j = 1, nbands do
    local key = bands[j]
    scan(B .. ':b:' .. (j - 1) .. ':' .. string.sub(key, 1, 4), function(m)
      if string.sub(m, 37) == key then consider(m, true) end
    end)
  end
end
table.sort(matches, function(x, y)
  if x[1] ~= y[1] then return x[1] < y[1] end
  if x[2] ~= y[2] then return x[2] < y[2] end
  return x[3] < y[3]
end)
for i = 1, math.min(#matches, MAX_MATCHES) do
  local m = matches[i]
  if i == 1 then near_seq = m[3] end
  if not best_d or m[2] < best_d then best_d = m[2] end
  if not best_sd or m[1] < best_sd then best_sd = m[1] end
  add_found(m[4])
end

-- Campaign: create, join or merge.
local target, absorbed
if #found == 0 then
  target, absorbed = create(), {}
elseif #found == 1 then
  target, absorbed = found[1], {}
else
  target, absorbed = merge(found)
end

local strong = exact or (best_d and best_d <= strong_d) or (best_sd and best_sd <= strong_sd)
local weight = 100
if best_d and not strong then weight = weak_pct end

local c = ckey(target)
redis.call('HINCRBY', c, 'm', 1)
redis.call('HINCRBY', c, 'r', rcpts)
local score = redis.call('HINCRBY', c, 's', rcpts * weight)
if now > tonumber(redis.call('HGET', c, 'l')) then redis.call('HSET', c, 'l', now) end
add_sender(c, sender, 1)
if sender_name ~= '' then
  local names = redis.call('HGET', c, 'names') or ''
  local n = 0
  for _ in string.gmatch(names, '[^\n]+') do n = n + 1 end
  if n < 5 and not string.find('\n' .. names .. '\n', '\n' .. sender_name .. '\n', 1, true) then
    redis.call('HSET', c, 'names', (names == '' and sender_name) or (names .. '\n' .. sender_name))
  end
end
if keep_subjects and subject ~= '' and not redis.call('HGET', c, 'subj') then
  redis.call('HSET', c, 'subj', subject)
end
redis.call('RPUSH', c .. ':l', struct.pack('>I4HBH', now, rcpts, weight, sender))
local newly_bulk = 0
if score >= bulk_centi and redis.call('HGET', c, 'al') ~= '1' then
  redis.call('HSET', c, 'al', 1)
  newly_bulk = 1
end
touch(target)

-- Record the message.
local seq = redis.call('INCR', KEYS[1]) - 1
redis.call('EXPIRE', KEYS[1], ttl)
if near then
  local member = struct.pack('>dI4I4I4I4c12', seq, sim[1], sim[2], sk[1], sk[2], target)
  local function put(key, m)
    redis.call('ZADD', key, now, m)
    if trim[key] then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. cutoff)
      redis.call('ZREMRANGEBYRANK', key, 0, -(MAX_SCAN + 1))
    end
    redis.call('EXPIRE', key, ttl)
  end
  for i = 1, ntables do put(B .. ':t:' .. tables[i], member) end
  for j = 1, nbands do
    local key = bands[j]
    put(B .. ':b:' .. (j - 1) .. ':' .. string.sub(key, 1, 4), member .. key)
  end
end
redis.call('SET', xkey, now .. ':' .. target, 'EX', ttl)

local h = redis.call('HGETALL', c)
local v = {}
for i = 1, #h, 2 do v[h[i]] = h[i + 1] end
return {
  exact and 1 or 0,
  best_d or -1,
  best_sd or -1,
  near_seq or -1,
  seq,
  target,
  tonumber(v.f),
  tonumber(v.l),
  tonumber(v.m),
  tonumber(v.r),
  tonumber(v.s),
  redis.call('HLEN', c .. ':s'),
  v.subj or '',
  v.subj and 1 or 0,
  v.names or '',
  table.concat(absorbed, ','),
  newly_bulk,
}
