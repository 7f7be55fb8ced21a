-- miltertest script, run by tests/miltertest.rs against the built binary:
--   miltertest -D SOCKET=inet:PORT@127.0.0.1 -s tests/miltertest/campaign.lua
-- Six personalized copies of one campaign on one connection, with
-- bulk_threshold 5 and suspect_threshold 3: copies 1-2 untagged, 3-4
-- tagged suspect, 5-6 tagged bulk; a forged X-Bulkwatch header is deleted.
-- Debian's miltertest exits 1 without printing Lua errors: pcall and print.

local function body(name, n)
  return "Dear " .. name .. ",\r\n\r\nWe are pleased to tell you that your account qualifies for our premium " ..
    "savings program. Act now to claim the discount before the end of the week. " ..
    "Visit https://track.deals.example/c/" .. n .. "?u=" .. n .. " to confirm your details.\r\n\r\n" ..
    "Our team reviewed your profile and selected you for an exclusive reward. Reply " ..
    "today and receive free shipping on every order. Ref " .. n .. n .. ".\r\n"
end

local function expect(cond, what)
  if not cond then error(what) end
end

local ok, err = pcall(function()
  local conn = mt.connect(SOCKET, 40, 0.25)
  expect(conn ~= nil, "cannot connect to " .. SOCKET)
  expect(mt.conninfo(conn, "client.example", "192.0.2.7") == nil, "conninfo")
  expect(mt.getreply(conn) == SMFIR_CONTINUE, "conninfo reply")
  expect(mt.helo(conn, "client.example") == nil, "helo")
  local names = { "alice", "bob", "carol", "dave", "erin", "frank" }
  for i, name in ipairs(names) do
    local n = 3000 + i
    mt.macro(conn, SMFIC_MAIL, "i", "MT" .. n)
    expect(mt.mailfrom(conn, "<offers@deals.example>") == nil, "mail")
    expect(mt.getreply(conn) == SMFIR_CONTINUE, "mail reply")
    expect(mt.rcptto(conn, "<" .. name .. "@example.net>") == nil, "rcpt")
    expect(mt.getreply(conn) == SMFIR_CONTINUE, "rcpt reply")
    expect(mt.header(conn, "From", "Deals <offers@deals.example>") == nil, "header")
    expect(mt.header(conn, "To", name .. " <" .. name .. "@example.net>") == nil, "header")
    expect(mt.header(conn, "Subject", "Your offer " .. n) == nil, "header")
    if i == 1 then
      expect(mt.header(conn, "X-Bulkwatch", "clean; forged") == nil, "header")
    end
    expect(mt.eoh(conn) == nil, "eoh")
    expect(mt.bodystring(conn, body(name, n)) == nil, "body")
    expect(mt.eom(conn) == nil, "eom")
    expect(mt.getreply(conn) == SMFIR_ACCEPT, "copy " .. i .. ": not accepted")
    local tagged = mt.eom_check(conn, MT_HDRADD, "X-Bulkwatch")
    if i <= 2 then
      expect(not tagged, "copy " .. i .. " must not be tagged")
    else
      expect(tagged, "copy " .. i .. " must be tagged")
    end
    if i == 1 then
      expect(mt.eom_check(conn, MT_HDRDELETE, "X-Bulkwatch"), "forged header must be deleted")
    end
  end
  mt.disconnect(conn)
end)
if not ok then
  print("miltertest failed: " .. tostring(err))
  os.exit(1)
end
print("miltertest ok")
