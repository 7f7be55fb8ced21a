// bulkwatch dashboard: polls /campaigns and draws one row per campaign.
// Every text comes from mail senders (subjects, domains), so it is only
// ever set as textContent, never parsed as HTML.
"use strict";

const REFRESH_MS = 5000;
// Set when the daemon has a control token (metrics.control_token): each
// row then gets allow (disallow, once allowed) and forget buttons, sent with
// the token typed here.
let controlEnabled = false;

// `kind` is "campaigns" (id: a campaign) or "domains" (id: a sender
// domain, allowed with allow/disallow).
async function act(id, action, kind = "campaigns") {
  const result = document.getElementById("result");
  const token = document.getElementById("token").value;
  try {
    const r = await fetch("/" + kind + "/" + encodeURIComponent(id) + "/" + action, {
      method: "POST",
      headers: { Authorization: "Bearer " + token },
    });
    const answer = await r.json();
    result.textContent = answer.ok ? id + ": " + action + " done" : id + ": " + answer.error;
  } catch (e) {
    result.textContent = id + ": " + e.message;
  }
  refresh();
}

function button(label, id, action, kind) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", () => act(id, action, kind));
  return b;
}

// The domain allowances (GET /domains): each with a disallow button.
async function refreshDomains() {
  try {
    const r = await fetch("/domains", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const a = await r.json();
    const list = document.getElementById("domain-list");
    const items = (a.domains || []).map((d) => {
      const li = document.createElement("li");
      li.dataset.domain = d.domain;
      const name = document.createElement("span");
      name.className = "mail";
      name.textContent = shown(d.domain);
      li.appendChild(name);
      li.appendChild(document.createTextNode(
        d.until ? " until " + when(d.until) : " until withdrawn"));
      if (controlEnabled) li.appendChild(button("disallow", d.domain, "disallow", "domains"));
      return li;
    });
    list.replaceChildren(...items);
    document.getElementById("domains-note").textContent =
      (items.length ? "" : "None. ") + (a.note || "");
  } catch (e) {
    document.getElementById("domains-note").textContent = "cannot read /domains: " + e.message;
  }
}

// Directional formatting characters (U+202A-U+202E, U+2066-U+2069, the
// marks U+200E, U+200F, U+061C) in a sender's text would reorder what is
// shown ("\u202eevil.example" reads "elpmaxe.live"): each is shown as its
// code point instead, and the cell is isolated (CSS unicode-bidi).
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function shown(text) {
  return text.replace(BIDI, (c) => "[U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "]");
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = shown(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

// Text from mail: shown, and isolated from its neighbours.
function mailCell(row, text) {
  const td = cell(row, text, "mail");
  td.dir = "auto";
  return td;
}

function when(secs) {
  return secs ? new Date(secs * 1000).toLocaleString() : "-";
}

// A bar per bucket of the window, oldest on the left.
function chart(counts) {
  const ns = "http://www.w3.org/2000/svg";
  const w = 120, h = 24;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  const title = document.createElementNS(ns, "title");
  title.textContent = "messages per " + counts.length + "th of the window: " + counts.join(", ");
  svg.appendChild(title);
  const base = document.createElementNS(ns, "line");
  base.setAttribute("x1", 0); base.setAttribute("x2", w);
  base.setAttribute("y1", h - 0.5); base.setAttribute("y2", h - 0.5);
  svg.appendChild(base);
  const max = Math.max(1, ...counts);
  const bw = w / Math.max(1, counts.length);
  counts.forEach((c, i) => {
    if (c === 0) return;
    const bh = Math.max(1, Math.round((c / max) * (h - 2)));
    const r = document.createElementNS(ns, "rect");
    r.setAttribute("x", (i * bw + 0.5).toFixed(1));
    r.setAttribute("y", h - 1 - bh);
    r.setAttribute("width", Math.max(1, bw - 1).toFixed(1));
    r.setAttribute("height", bh);
    svg.appendChild(r);
  });
  return svg;
}

// The filter of the page (its form), as `/campaigns` reads it and as the
// page's own address keeps it (a filtered view can be bookmarked).
const FILTER = ["level", "min_recipients", "q", "limit"];

function filterParams() {
  const p = new URLSearchParams();
  for (const name of FILTER) {
    const v = document.querySelector('#filter [name="' + name + '"]').value.trim();
    if (v !== "") p.set(name, v);
  }
  return p;
}

function filterFromAddress() {
  const p = new URLSearchParams(window.location.search);
  for (const name of FILTER) {
    const v = p.get(name);
    if (v !== null) document.querySelector('#filter [name="' + name + '"]').value = v;
  }
}

function render(list, view, total, matched) {
  const body = document.querySelector("#campaigns tbody");
  const rows = list.map((c) => {
    const tr = document.createElement("tr");
    tr.dataset.campaign = c.id;
    const lv = document.createElement("span");
    lv.textContent = c.allowed ? "allowed" : c.level;
    lv.className = "level level-" + (c.allowed ? "allowed" : c.level);
    const td = document.createElement("td");
    td.appendChild(lv);
    if (c.list) {
      // A list's post: its action is policy.list at most (list=yes).
      const ls = document.createElement("span");
      ls.textContent = "list";
      ls.className = "list";
      ls.title = "mail of a list (list=yes): policy.list applies";
      td.appendChild(ls);
    }
    tr.appendChild(td);
    cell(tr, c.id, "id");
    cell(tr, String(c.recipients), "num");
    cell(tr, String(c.messages), "num");
    mailCell(tr, (c.sender_domains || []).join(", "));
    cell(tr, when(c.first_seen));
    cell(tr, when(c.last_seen));
    mailCell(tr, c.sample_subject || "");
    cell(tr, "").appendChild(chart(c.arrivals || []));
    if (controlEnabled) {
      const td = cell(tr, "", "actions");
      const a = c.allowed ? "disallow" : "allow";
      td.appendChild(button(a, c.id, a));
      td.appendChild(button("forget", c.id, "forget"));
      // A campaign of one sender domain (a newsletter): allow the domain,
      // for its next issues too (honoured for authenticated mail only).
      const domains = c.sender_domains || [];
      if (domains.length === 1) {
        td.appendChild(button("allow domain", domains[0], "allow", "domains"));
      }
    }
    return tr;
  });
  body.replaceChildren(...rows);
  const bulk = list.filter((c) => c.level === "bulk" && !c.allowed).length;
  // X-Bulkwatch-View: "site" (Redis, every host), "host", or "host;
  // redis unavailable" (this host's campaigns only, for now).
  const partial = (view || "").indexOf("unavailable") >= 0;
  // "500 of 618 campaigns": a list cut at its limit never reads as all.
  const shownCount = total !== null && total !== list.length
    ? list.length + " of " + total + " campaigns in the window"
    : list.length + " campaigns in the window";
  const filtered = matched !== null && total !== null && matched !== total
    ? " (" + matched + " match the filter)" : "";
  document.getElementById("status").textContent =
    (partial ? "Redis did not answer: this host's campaigns only. " : "") +
    shownCount + filtered + ", " + bulk + " bulk shown; updated " +
    new Date().toLocaleTimeString();
  document.getElementById("status").classList.toggle("partial", partial);
}

// Zero hour (GET /zero-hour), when it is on: what was moved and reported,
// newest first.
async function refreshZeroHour() {
  try {
    const r = await fetch("/zero-hour", { cache: "no-store" });
    if (!r.ok) return;
    const z = await r.json();
    document.getElementById("zero-hour").hidden = !z.enabled;
    if (!z.enabled) return;
    document.getElementById("zero-hour-note").textContent =
      z.copies + " delivered copies remembered; moved to junk " + z.moved +
      ", moved back " + z.moved_back + ", given up " + z.given_up +
      "; reports: spam " + z.spam_reports + ", ham " + z.ham_reports +
      ", refused " + z.refused_reports + ".";
    const items = (z.events || []).slice(0, 20).map((e) => {
      const li = document.createElement("li");
      li.textContent = when(e.at) + " campaign " + e.campaign + ": " + e.what +
        (e.queue_id ? " (queue id " + e.queue_id + ", " + e.users + " users)" : "");
      return li;
    });
    document.getElementById("zero-hour-events").replaceChildren(...items);
  } catch (e) {
    document.getElementById("zero-hour-note").textContent = "cannot read /zero-hour: " + e.message;
  }
}

async function refresh() {
  try {
    const q = filterParams().toString();
    const r = await fetch("/campaigns" + (q ? "?" + q : ""), { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status + ": " + (await r.text()).trim());
    const count = (h) => {
      const v = r.headers.get(h);
      return v === null ? null : Number(v);
    };
    render(await r.json(), r.headers.get("X-Bulkwatch-View"),
      count("X-Bulkwatch-Total"), count("X-Bulkwatch-Matched"));
  } catch (e) {
    document.getElementById("status").textContent = "cannot read /campaigns: " + e.message;
  }
  refreshDomains();
  refreshZeroHour();
}

async function start() {
  try {
    const r = await fetch("/control", { cache: "no-store" });
    controlEnabled = r.ok && (await r.json()).enabled === true;
  } catch (e) {
    controlEnabled = false;
  }
  filterFromAddress();
  document.getElementById("filter").addEventListener("input", () => {
    const q = filterParams().toString();
    window.history.replaceState(null, "", q ? "?" + q : window.location.pathname);
    refresh();
  });
  document.getElementById("filter").addEventListener("submit", (e) => e.preventDefault());
  document.getElementById("control").hidden = !controlEnabled;
  document.querySelectorAll("th.actions").forEach((th) => { th.hidden = !controlEnabled; });
  refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
