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
--   B:c:<id>           hash, a campaign (f l m r s al ns subj names, and
--                      d<sender-domain hash> -> messages for up to 64
--                      domains) or an alias of a merged campaign (a = id)
--   B:c:<id>:l         list, one 9-byte item per message (time, rcpts,
--                      weight, sender), oldest first: counts fall by it
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

-- Campaigns are read once into Lua tables (`camps`), changed there, and
-- written back once at the end (`dirty`): a few calls per message instead
-- of one per counter. Numeric fields: f l m r s al ns; senders are fields
-- d<hash> (up to MAX_SENDERS, counted in ns).
local camps, dirty, gone = {}, {}, {}
local NUMERIC = { 'f', 'l', 'm', 'r', 's', 'al', 'ns' }

local function load(id)
  local v = camps[id]
  if v ~= nil then return v or nil end
  local h = redis.call('HGETALL', ckey(id))
  if #h == 0 then
    camps[id] = false
    return nil
  end
  v = {}
  for i = 1, #h, 2 do v[h[i]] = h[i + 1] end
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

-- Takes what left the window out of a live campaign's counters; deletes
-- the campaign and returns false when nothing of it is left. Once per
-- campaign and call.
local expired = {}
local function expire(id)
  if expired[id] ~= nil then return expired[id] end
  local v = load(id)
  if not v or v.a then return false end
  local l = ckey(id) .. ':l'
  local alive = true
  while true do
    local items = redis.call('LRANGE', l, 0, 63)
    local n = 0
    for _, it in ipairs(items) do
      local t, r, w, s = struct.unpack('>I4HBH', it)
      if t >= cutoff then break end
      n = n + 1
      v.m = v.m - 1
      v.r = v.r - r
      v.s = v.s - r * w
      drop_sender(id, v, s, 1)
    end
    if n > 0 then
      redis.call('LTRIM', l, n, -1)
      dirty[id] = true
    end
    if n < #items then break end
    if #items < 64 then
      redis.call('DEL', ckey(id), l)
      camps[id], dirty[id], gone[id] = false, nil, nil
      alive = false
      break
    end
  end
  expired[id] = alive
  return alive
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
  camps[id] = { f = now, l = now, m = 0, r = 0, s = 0, al = 0, ns = 0 }
  expired[id] = true
  dirty[id] = true
  return id
end

-- Merges the live campaigns `roots` (ids) into the one first seen earliest
-- (ties: lowest id); returns it and the ids merged away.
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
  local tl = ckey(target) .. ':l'
  for _, id in ipairs(roots) do
    if id ~= target then
      local v = camps[id]
      if v.f < tv.f then tv.f = v.f end
      if v.l > tv.l then tv.l = v.l end
      tv.m = tv.m + v.m
      tv.r = tv.r + v.r
      tv.s = tv.s + v.s
      if v.al == 1 then tv.al = 1 end
      for k, x in pairs(v) do
        if string.sub(k, 1, 1) == 'd' then add_sender(tv, string.sub(k, 2), tonumber(x)) end
      end
      if v.names then
        for name in string.gmatch(v.names, '[^\n]+') do add_name(tv, name) end
      end
      if v.subj and not tv.subj then tv.subj = v.subj end
      -- Both lists are in time order; the merged one must be too, so that
      -- expiry takes items from the front.
      local c = ckey(id)
      local a = redis.call('LRANGE', tl, 0, -1)
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
      redis.call('DEL', tl, c, c .. ':l')
      for x = 1, #merged, 1000 do
        redis.call('RPUSH', tl, unpack(merged, x, math.min(x + 999, #merged)))
      end
      redis.call('HSET', c, 'a', target)
      redis.call('EXPIRE', c, ttl)
      camps[id], dirty[id], gone[id] = { a = target }, nil, nil
      absorbed[#absorbed + 1] = id
    end
  end
  dirty[target] = true
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
local trim, newest = {}, {}
local function scan(key, f)
  local r = redis.call('ZREVRANGE', key, 0, MAX_SCAN - 1, 'WITHSCORES')
  if #r >= 2 * MAX_SCAN then trim[key] = true end
  if #r > 0 then newest[key] = tonumber(r[2]) end
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

local v = camps[target]
v.m = v.m + 1
v.r = v.r + rcpts
v.s = v.s + rcpts * weight
if now > v.l then v.l = now end
add_sender(v, sender, 1)
if sender_name ~= '' then add_name(v, sender_name) end
if keep_subjects and subject ~= '' and not v.subj then v.subj = subject end
redis.call('RPUSH', ckey(target) .. ':l', struct.pack('>I4HBH', now, rcpts, weight, sender))
local newly_bulk = 0
if v.s >= bulk_centi and v.al ~= 1 then
  v.al = 1
  newly_bulk = 1
end
dirty[target] = true

-- Write the campaigns back, each in one HSET.
for id in pairs(dirty) do
  local cv = camps[id]
  if cv then
    local c = ckey(id)
    if gone[id] then redis.call('HDEL', c, unpack(gone[id])) end
    local args = {}
    for k, x in pairs(cv) do
      args[#args + 1] = k
      args[#args + 1] = x
    end
    redis.call('HSET', c, unpack(args))
    redis.call('EXPIRE', c, ttl)
    redis.call('EXPIRE', c .. ':l', ttl)
  end
end

-- Record the message.
local seq = redis.call('INCR', KEYS[1]) - 1
redis.call('EXPIRE', KEYS[1], ttl)
if near then
  local member = struct.pack('>dI4I4I4I4c12', seq, sim[1], sim[2], sk[1], sk[2], target)
  -- The TTL is renewed by the first insert of each minute: every item then
  -- outlives its window (the margin is 5 minutes) at one EXPIRE per
  -- bucket and minute, not per insert.
  local function put(key, m)
    redis.call('ZADD', key, now, m)
    if not newest[key] or math.floor(newest[key] / 60) ~= math.floor(now / 60) then
      redis.call('EXPIRE', key, ttl)
    end
    if trim[key] then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. cutoff)
      redis.call('ZREMRANGEBYRANK', key, 0, -(MAX_SCAN + 1))
    end
  end
  for i = 1, ntables do put(B .. ':t:' .. tables[i], member) end
  for j = 1, nbands do
    local key = bands[j]
    put(B .. ':b:' .. (j - 1) .. ':' .. string.sub(key, 1, 4), member .. key)
  end
end
redis.call('SET', xkey, now .. ':' .. target, 'EX', ttl)

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
}
