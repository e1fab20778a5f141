// engram ui: one page, hash-routed views. Memory text is untrusted: it reaches the DOM only
// through textContent / createTextNode (the el() helper), never through innerHTML.

const main = document.getElementById("main");
const SVG_NS = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "value") node.value = v;
    else if (k === "checked") node.checked = !!v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function toast(message, isError = false) {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.className = "show" + (isError ? " error" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = ""; }, 4000);
}

// The launch's token arrives once, in the link `engram ui` printed. It is kept in this origin's
// localStorage (127.0.0.1:<port>: no page on another port or site can read it) and sent with
// every API call; the session cookie the server set opens only the page itself. A link from a
// new launch replaces it, so a restarted UI works from its new link in the same browser.
const KEY_NAME = "engram_ui_token";
(function takeToken() {
  const url = new URL(location.href);
  const token = url.searchParams.get("token");
  if (token === null) return;
  localStorage.setItem(KEY_NAME, token);
  url.searchParams.delete("token");
  history.replaceState(null, "", url.pathname + url.search + url.hash);  // out of the address bar and history
})();
const token = () => localStorage.getItem(KEY_NAME) || "";

// The project every call is made in: the one `engram ui` started in, unless another is chosen
// in the header (kept in the page's address as ?project=, so a reload stays there).
let project = new URLSearchParams(location.search).get("project") || "";

function inProject(path) {
  if (!project) return path;
  return path + (path.includes("?") ? "&" : "?") + "project=" + encodeURIComponent(project);
}

// Each view owns an AbortController: leaving the view aborts its requests, and an answer that
// still arrives for a view no longer shown is dropped (never painted onto the current one).
let view = new AbortController();
const SLOW_MS = 3000;  // after this without an answer the page says the daemon is slow

class Stale extends Error {}

let lateRequests = 0;  // requests waiting longer than SLOW_MS: the notice shows while any is

function lateness(delta) {
  lateRequests += delta;
  document.getElementById("slow").hidden = lateRequests === 0;
}

async function api(path, { signal = view.signal } = {}) {
  let late = false;
  const timer = setTimeout(() => { late = true; lateness(1); }, SLOW_MS);
  try {
    const r = await fetch(inProject(path), { credentials: "same-origin", signal, headers: { "x-engram-ui": token() } });
    const data = await answer(r);
    if (signal.aborted) throw new Stale("left this view");
    return data;
  } catch (e) {
    if (signal.aborted) throw new Stale("left this view");
    throw e;
  } finally {
    clearTimeout(timer);
    if (late) lateness(-1);
    if (signal === view.signal) for (const n of main.querySelectorAll(".page-loading")) n.remove();
  }
}

async function post(path, body) {
  const r = await fetch(inProject(path), {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-engram-ui": token() },
    body: JSON.stringify(body || {}),
  });
  return answer(r);
}

async function answer(r) {
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const msg = (data && data.error && data.error.message)
      || (r.status === 403 ? "this page's link is from another launch of engram ui: open the link it printed last" : `request failed (${r.status})`);
    throw new Error(msg);
  }
  return data;
}

const shortId = (id) => String(id || "").replace(/^memory:/, "");
// A ULID's first 10 characters are its time (shared by memories made close together), the last
// 16 are random: the last 8 tell memories apart at a glance; the full id stays in the link.
const shortKey = (id) => "…" + shortId(id).slice(-8);
const ZONE_FORMAT = { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
// Local time with its zone (an ISO string or epoch seconds); "" for none.
const when = (t) => {
  if (t === null || t === undefined || t === "") return "";
  const d = typeof t === "number" ? new Date(t * 1000) : new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString(undefined, ZONE_FORMAT);
};
const num = (x, d = 2) => (typeof x === "number" ? x.toFixed(d) : "");
const memoryLink = (id, text) => el("a", { href: `#/memory/${shortId(id)}`, "data-testid": "memory-link", title: shortId(id) }, text || shortKey(id));

function setPage(name) {
  view.abort();  // the previous view's pending answers are dropped
  view = new AbortController();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === name);
  main.replaceChildren(el("p", { class: "muted loading page-loading", "data-testid": "loading" }, "loading…"));
  main.dataset.page = name;
  return view.signal;
}

function failed(e, where = main) {
  if (e instanceof Stale || e.name === "AbortError") return;  // a view left: nothing to say
  const node = el("p", { class: "card error", role: "alert", "data-testid": "error" }, "Could not load: ", e.message);
  if (where === main) main.append(node); else where.replaceChildren(node);
}

function loading(text = "loading…") {
  return el("p", { class: "muted loading", "data-testid": "loading" }, text);
}

function empty(text) {
  return el("p", { class: "card empty", "data-testid": "empty" }, text);
}

// ------------------------------------------------------------------ browse and search
const browseState = { scope: "", session: "", type: "", status: "", tags: "", age: "", q: "", page: 1, explain: false };

// The session scope is one session's own: a browse of it names a live session (the one chosen on
// the Sessions page, else the newest live one with memories of its own).
async function liveSession() {
  const r = await api("/api/sessions");
  const s = r.sessions.find((x) => x.status === "active" && x.session_scope_total);
  return s ? s.session_id : "";
}
const AGES = { "": "any age", "1d": "last day", "7d": "last 7 days", "30d": "last 30 days", "90d+": "older than 90 days" };

function ageBounds(age) {
  if (!age) return {};
  const days = parseInt(age, 10);
  const t = new Date(Date.now() - days * 86400000).toISOString();
  return age.endsWith("+") ? { before: t } : { after: t };
}

function select(name, options, current) {
  return el("select", { name, "data-testid": `filter-${name}` },
    options.map(([v, label]) => el("option", { value: v, selected: v === current }, label)));
}

function memoryRow(m, { score = false, live = false } = {}) {
  const tags = (m.tags || []).map((t) => el("span", { class: "tag" }, t));
  const row = el("tr", { class: "mem-row" + (live ? " live" : ""), "data-id": m.id, "data-testid": "memory-row" },
    el("td", {}, memoryLink(m.id), el("div", { class: "muted" }, when(m.created_at))),
    el("td", {}, m.scope, " ", el("div", { class: "muted" }, m.type, m.category ? `/${m.category}` : "")),
    el("td", {}, el("span", { class: `pill ${m.status}` }, m.status)),
    el("td", {}, el("div", { class: "content", "data-testid": "memory-content" }, m.summary || m.content), tags),
    el("td", {}, num(m.strength), score ? el("div", { class: "muted" }, "score ", num(m.score, 3)) : null));
  if (score) {
    const prior = (m.score ?? 0) - (m.relevance_score ?? 0);
    const detail = el("tr", { class: "breakdown-row", hidden: !browseState.explain },
      el("td", { colspan: 5, class: "breakdown", "data-testid": "breakdown" },
        `relevance ${num(m.relevance_score, 3)} · vector similarity ${num(m.similarity, 3)} · priors (scope, importance, recency) ${num(prior, 3)} · score ${num(m.score, 3)}`));
    return [row, detail];
  }
  return [row];
}

async function browse() {
  setPage("browse");
  const s = browseState;
  const form = el("form", { class: "filters", "data-testid": "filters" },
    el("label", {}, "search", el("input", { name: "q", type: "search", value: s.q, placeholder: "query (empty: newest first)", "data-testid": "search-input", size: 32 })),
    el("label", {}, "scope", select("scope", [["", "all"], ["session", "session"], ["project", "project"], ["user", "user"]], s.scope)),
    el("label", {}, "type", select("type", [["", "all"], ["episodic", "episodic"], ["semantic", "semantic"], ["procedural", "procedural"], ["working", "working"]], s.type)),
    el("label", {}, "status", select("status", [["", "recallable"], ["active", "active"], ["created", "created"], ["consolidated", "consolidated"], ["archived", "archived"], ["forgotten", "forgotten"], ["all", "all"]], s.status)),
    el("label", {}, "tag", el("input", { name: "tags", value: s.tags, size: 12, "data-testid": "filter-tag" })),
    el("label", {}, "age", select("age", Object.entries(AGES), s.age)),
    el("button", { type: "submit", "data-testid": "search-button" }, "Show"),
    el("label", {}, "", el("span", {}, el("input", { type: "checkbox", name: "explain", checked: s.explain, "data-testid": "explain" }), " score breakdown")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    Object.assign(s, { q: f.get("q").trim(), scope: f.get("scope"), type: f.get("type"), status: f.get("status"), tags: f.get("tags").trim(), age: f.get("age"), page: 1 });
    if (s.scope !== "session") s.session = "";
    browse();
  });
  form.querySelector("[name=explain]").addEventListener("change", (ev) => {
    s.explain = ev.target.checked;
    for (const r of main.querySelectorAll(".breakdown-row")) r.hidden = !s.explain;
  });
  const body = el("tbody", { "data-testid": "results" });
  const info = el("p", { class: "muted", "data-testid": "result-info" }, "loading…");
  main.append(el("h1", {}, s.q ? "Search" : "Browse"), form, info,
    el("table", {}, el("thead", {}, el("tr", {}, ["memory", "scope", "status", "content", "strength"].map((h) => el("th", {}, h)))), body));
  // Search and browse send the same filters and page: a search is read-only (the server asks
  // recall not to strengthen), with the status filter inside recall's candidates, and pages to
  // the last match.
  const params = new URLSearchParams();
  for (const k of ["scope", "type", "tags", "status"]) if (s[k]) params.set(k, s[k]);
  for (const [k, v] of Object.entries(ageBounds(s.age))) params.set(k, v);
  params.set("page", s.page);
  if (s.q) params.set("q", s.q);
  try {
    if (s.scope === "session") {
      if (s.q) throw new Error("a session's own memories are browsed, not searched: clear the query, or search the project scope");
      if (!s.session) s.session = await liveSession();
      if (!s.session) {
        info.textContent = "0 memories";
        main.append(empty("No live session has memories of its own (session scope) right now. They appear while Claude Code works in this project, until its session ends."));
        return;
      }
      params.set("session", s.session);
    }
    const r = await api(s.q ? `/api/search?${params}` : `/api/list?${params}`);
    for (const m of r.memories) body.append(...memoryRow(m, { score: !!s.q }));
    info.textContent = s.q
      ? `${r.memories.length} shown of ${r.total_is_lower_bound ? "at least " : ""}${r.total_matched} matched · page ${r.page} of ${r.pages} (${r.strategy_used}, ${r.query_time_ms} ms)`
      : `${r.total_matched} memories${s.scope === "session" ? ` of session ${s.session}` : ""} · page ${r.page} of ${r.pages} (${r.query_time_ms} ms)`;
    if (!r.memories.length) {
      main.append(empty(s.q || s.scope || s.type || s.tags || s.age || s.status
        ? "Nothing matches these filters. Widen them (status: all, any age) or try other words."
        : "No memories here yet. They appear as Claude Code sessions in this project store them (or run: engram store \"…\")."));
    }
    main.append(el("div", { class: "pager" },
      el("button", { class: "secondary", disabled: s.page <= 1, "data-testid": "prev-page", on: { click: () => { s.page -= 1; browse(); } } }, s.q ? "‹ better" : "‹ newer"),
      el("span", { class: "muted" }, `page ${r.page} / ${r.pages}`),
      el("button", { class: "secondary", disabled: !r.next_page, "data-testid": "next-page", on: { click: () => { s.page += 1; browse(); } } }, s.q ? "worse ›" : "older ›")));
  } catch (e) { info.textContent = ""; failed(e); }
}

function liveMemory(m) {
  // Prepend to the browse list when it shows the newest page of everything (no query, no filter).
  const s = browseState;
  if (main.dataset.page !== "browse" || s.q || s.page !== 1 || s.scope || s.type || s.tags || s.age || s.status) return;
  const body = main.querySelector("[data-testid=results]");
  if (!body || body.querySelector(`tr[data-id="${CSS.escape(m.id)}"]`)) return;
  body.prepend(...memoryRow(m, { live: true }));
}

// ------------------------------------------------------------------ one memory
function decayChart(decay) {
  const W = 420, H = 150, P = 30;  // viewBox units; scaled to the card
  const pts = decay.points;
  const maxDay = pts[pts.length - 1].days_from_now;
  const x = (d) => P + (W - 2 * P) * (Math.sqrt(d) / Math.sqrt(maxDay));
  const y = (v) => H - P - (H - 2 * P) * v;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "data-testid": "decay-curve" });
  chart.append(svg("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, class: "axis" }), svg("line", { x1: P, y1: P, x2: P, y2: H - P, class: "axis" }));
  chart.append(svg("polyline", { class: "curve", points: pts.map((p) => `${x(p.days_from_now).toFixed(1)},${y(p.strength).toFixed(1)}`).join(" ") }));
  for (const d of [0, 7, 30, 90, 365]) chart.append(svg("text", { x: x(d) - 6, y: H - P + 14 }, `${d}d`));
  chart.append(svg("text", { x: 2, y: y(1) + 4 }, "1.0"), svg("text", { x: 2, y: y(0) + 4 }, "0"));
  return el("div", {}, chart, el("div", { class: "muted" },
    `${decay.type}: strength ${num(pts[0].strength, 3)} now, ${num(pts.find((p) => p.days_from_now === 30).strength, 3)} in 30 days without a recall`,
    decay.frozen ? " (frozen while its session is live)" : "", ` · last access ${decay.days_since_access} days ago, ${decay.access_count} recalls`));
}

async function memoryPage(id) {
  setPage("memory");
  let m;
  try { m = await api(`/api/memory/${encodeURIComponent(id)}`); } catch (e) { failed(e); return; }
  const reload = () => memoryPage(id);
  const act = async (fn, done) => {
    try { const r = await fn(); toast(typeof done === "function" ? done(r) : done); reload(); } catch (e) { toast(e.message, true); }
  };
  const kv = (pairs) => el("dl", { class: "kv" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  const supersedes = (m.links || []).filter((l) => l.relation === "supersedes");
  main.append(
    el("h1", {}, "Memory ", el("span", { class: "muted", "data-testid": "memory-id" }, m.id), " ", el("span", { class: `pill ${m.status}`, "data-testid": "memory-status" }, m.status)),
    el("div", { class: "card" }, el("div", { class: "memory-content", "data-testid": "memory-full-content" }, m.content),
      m.summary ? el("p", {}, el("b", {}, "summary: "), m.summary) : null),
  );
  const editBox = el("textarea", { "data-testid": "edit-content" }, m.content);
  const importance = el("input", { type: "number", min: 0, max: 1, step: 0.05, value: m.importance, "data-testid": "edit-importance", size: 5 });
  const addTags = el("input", { placeholder: "add tags (comma)", "data-testid": "add-tags", size: 14 });
  const removeTags = el("input", { placeholder: "remove tags", "data-testid": "remove-tags", size: 14 });
  const target = el("select", { "data-testid": "promote-target" }, ["project", "user"].map((s) => el("option", { value: s }, s)));
  const newer = el("input", { placeholder: "newer memory id (or its last 8 characters)", "data-testid": "superseded-by", size: 30 });
  const csv = (v) => v.split(",").map((t) => t.trim()).filter(Boolean);
  main.append(el("div", { class: "card" }, el("h2", {}, "Curate"),
    editBox,
    el("div", { class: "actions" },
      el("button", { "data-testid": "save-content", on: { click: () => act(() => post(`/api/memory/${id}/update`, { content: editBox.value }), "saved: the previous version is in the history") } }, "Save text"),
      el("label", {}, "importance ", importance),
      el("button", { class: "secondary", "data-testid": "save-importance", on: { click: () => {
        const value = parseFloat(importance.value);
        if (!(value >= 0 && value <= 1)) { toast("give an importance from 0 to 1", true); return; }
        act(() => post(`/api/memory/${id}/update`, { importance: value }),
          (r) => ((r.updated_fields || []).includes("importance") ? `importance set to ${value}` : `importance was already ${value}: nothing changed`));
      } } }, "Set"),
      addTags, removeTags,
      el("button", { class: "secondary", "data-testid": "save-tags", on: { click: () => act(() => post(`/api/memory/${id}/update`, { tags: { add: csv(addTags.value), remove: csv(removeTags.value) } }), "tags changed") } }, "Re-tag")),
    el("div", { class: "actions" },
      m.status === "forgotten"
        ? el("button", { "data-testid": "undo-forget", on: { click: () => act(() => post(`/api/memory/${id}/forget`, { undo: true }), "restored") } }, "Undo forget")
        : el("button", { class: "danger", "data-testid": "forget", on: { click: (ev) => {
            // two steps in place: the first click asks, the second forgets (undo stays on this page)
            if (ev.target.dataset.armed !== "1") { ev.target.dataset.armed = "1"; ev.target.textContent = "Click again to forget"; return; }
            act(() => post(`/api/memory/${id}/forget`, { reason: "forgotten in engram ui" }), "forgotten: Undo forget restores it");
          } } }, "Forget…"),
      el("label", {}, "promote to ", target),
      el("button", { class: "secondary", "data-testid": "promote", on: { click: () => act(() => post(`/api/memory/${id}/promote`, { target_scope: target.value }), `promoted to ${target.value}`) } }, "Promote"),
      newer,
      el("button", { class: "secondary", "data-testid": "mark-superseded", on: { click: () => act(() => post(`/api/memory/${encodeURIComponent(shortId(newer.value.trim()))}/update`, { supersedes: m.id }), "marked as superseded") } }, "Mark superseded by"))));
  main.append(el("div", { class: "grid" },
    el("div", { class: "card" }, el("h2", {}, "Metadata"), kv([
      ["scope", m.scope], ["also in", (m.also_in || []).join(", ")], ["type", m.type], ["category", m.category],
      ["importance", num(m.importance)], ["confidence", num(m.confidence)], ["strength", num(m.strength, 3)],
      ["recalls", m.access_count], ["tags", (m.tags || []).join(", ")], ["created", when(m.created_at)], ["updated", when(m.updated_at)],
      ["last recalled", when(m.last_accessed_at)], ["session", m.session_id], ["version", m.version],
      ["origin", m.origin ? [m.origin.kind, ...Object.entries(m.origin).filter(([k]) => k !== "kind").map(([k, v]) => `${k} ${v}`)].join(", ") : ""],
      ["source", m.source && Object.keys(m.source).length ? JSON.stringify(m.source) : ""],
      ["forgotten", m.forgotten_at ? `${when(m.forgotten_at)} (${m.forget_reason || "no reason"})` : ""]])),
    el("div", { class: "card" }, el("h2", {}, "Strength and decay"), decayChart(m.decay)),
    el("div", { class: "card" }, el("h2", {}, "Links and entities"),
      el("ul", { "data-testid": "links" }, (m.links || []).map((l) => el("li", {}, memoryLink(l.from), ` ${l.relation} `, memoryLink(l.to)))),
      supersedes.length ? el("p", { class: "muted" }, "supersedes / superseded: see the links above") : null,
      el("ul", {}, (m.entities || []).map((e) => el("li", {}, el("a", { href: `#/graph/${encodeURIComponent(e.name)}` }, e.name), ` (${e.entity_type}, ${e.relationship})`))),
      (m.promotion_chain || []).length ? el("p", {}, "promoted: ", m.promotion_chain.map((p) => `from ${p.scope} (${p.action})`).join("; ")) : null)));
  const merges = ((m.metadata || {}).merged || []).slice().reverse();
  if (merges.length) {
    main.append(el("div", { class: "card", "data-testid": "merged" }, el("h2", {}, `Merged in by dedup (${merges.length})`),
      el("p", { class: "muted" }, "Text stored later that was a near-duplicate of this memory: instead of a second memory, this one was strengthened and the text kept here."),
      el("ul", {}, merges.map((g) => el("li", { "data-testid": "merged-text" },
        el("div", { class: "memory-content" }, g.content || ""),
        el("div", { class: "muted" }, [when(g.at), g.similarity !== undefined ? `similarity ${num(g.similarity, 3)}` : "", g.origin && g.origin.kind ? `from ${g.origin.kind}` : "", g.session_id ? `session ${g.session_id}` : ""].filter(Boolean).join(" · ")))))));
  }
  main.append(historyCard(m, id, act));
}

// ------------------------------------------------------------------ history: what each change changed
const DIFF_MAX_WORDS = 400;  // a longer text is shown before/after instead of word by word

function wordDiff(before, after) {
  // Word-level longest common subsequence: removed words struck, added ones marked.
  const a = String(before || "").split(/(\s+)/), b = String(after || "").split(/(\s+)/);
  if (a.length > 2 * DIFF_MAX_WORDS || b.length > 2 * DIFF_MAX_WORDS) {
    return [el("del", {}, before), el("br"), el("ins", {}, after)];
  }
  const L = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) {
    L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { out.push(a[i]); i++; j++; }
    else if (i < a.length && (j === b.length || L[i + 1][j] >= L[i][j + 1])) { out.push(el("del", {}, a[i])); i++; }
    else { out.push(el("ins", {}, b[j])); j++; }
  }
  return out;
}

function changes(before, after) {
  // What differs between two versions, field by field, as text a person reads.
  const out = [];
  if ((before.content || "") !== (after.content || "")) out.push(el("div", { class: "memory-content diff", "data-testid": "history-diff" }, wordDiff(before.content, after.content)));
  if ((before.summary || "") !== (after.summary || "")) out.push(el("div", {}, "summary: ", wordDiff(before.summary, after.summary)));
  // an importance missing on either side, or equal once shown, is no change a person can read
  if (typeof before.importance === "number" && typeof after.importance === "number" && num(before.importance) !== num(after.importance)) out.push(el("div", {}, `importance ${num(before.importance)} → ${num(after.importance)}`));
  if ((before.category || "") !== (after.category || "")) out.push(el("div", {}, `category ${before.category || "none"} → ${after.category || "none"}`));
  const bt = new Set(before.tags || []), at = new Set(after.tags || []);
  const added = [...at].filter((t) => !bt.has(t)), removed = [...bt].filter((t) => !at.has(t));
  if (added.length || removed.length) out.push(el("div", {}, "tags ", added.map((t) => el("ins", {}, `+${t} `)), removed.map((t) => el("del", {}, `−${t} `))));
  return out.length ? out : [el("span", { class: "muted" }, "no change to text, summary, importance, category or tags")];
}

function historyCard(m, id, act) {
  const versions = (m.history || []).slice().sort((x, y) => x.version - y.version);
  const rows = versions.map((h, k) => {
    const before = h.snapshot || {};
    const after = k + 1 < versions.length ? versions[k + 1].snapshot || {} : m;
    const restore = () => {
      const current = new Set(m.tags || []), wanted = new Set(before.tags || []);
      const body = { content: before.content, importance: before.importance,
        tags: { add: [...wanted].filter((t) => !current.has(t)), remove: [...current].filter((t) => !wanted.has(t)) } };
      if (before.summary) body.summary = before.summary;
      if (before.category) body.category = before.category;
      return act(() => post(`/api/memory/${id}/update`, body), `restored version ${h.version} (the current one is kept in the history)`);
    };
    return el("tr", { "data-testid": "history-row" },
      el("td", {}, `v${h.version} → v${k + 1 < versions.length ? versions[k + 1].version : m.version}`, el("div", { class: "muted" }, h.change === "merge" ? "merged a near-duplicate" : h.change), el("div", { class: "muted" }, when(h.changed_at))),
      el("td", {}, h.change === "merge" ? el("div", { class: "muted" }, "a near-duplicate was stored: its text is under “Merged in by dedup”") : null, changes(before, after)),
      el("td", {}, before.content ? el("button", { class: "secondary", "data-testid": "restore", on: { click: restore } }, `Restore v${h.version}`) : null));
  }).reverse();  // newest change first
  return el("div", { class: "card" }, el("h2", {}, `History (${versions.length} earlier version${versions.length === 1 ? "" : "s"})`),
    versions.length ? el("div", { class: "scroll" }, el("table", { "data-testid": "history" }, el("tbody", {}, rows))) : el("p", { class: "muted" }, "No earlier versions: every edit keeps the version it replaces here."));
}

// ------------------------------------------------------------------ sessions
function briefList(ids, briefs, testid) {
  if (!ids.length) return el("p", { class: "muted" }, "nothing recorded");
  return el("ul", { class: "briefs", "data-testid": testid }, ids.map((id) => {
    const b = briefs[id];
    return el("li", {}, memoryLink(id), " ", b ? el("span", {}, b.text, el("span", { class: "muted" }, ` · ${b.type}, ${b.scope}${b.status === "forgotten" ? ", forgotten" : ""}`))
      : el("span", { class: "muted" }, "(no longer stored)"));
  }));
}

const quoted = (text) => `“${text}${text.length >= 160 ? "…" : ""}”`;

async function sessionsPage() {
  setPage("sessions");
  main.append(el("h1", {}, "Sessions"));
  let r;
  try { r = await api("/api/sessions"); } catch (e) { failed(e); return; }
  const briefs = r.memories || {};
  main.append(el("p", { class: "muted" }, `${r.total} sessions, newest first. What the hooks injected, and each prompt's first words, are recorded by the running engram daemon (since its start). A live session's own memories (its session scope) are shown with it; the project keeps what was stored there during a session or promoted at its end.`));
  if (!r.sessions.length) main.append(empty("No sessions yet: they appear when Claude Code runs with engram in this project."));
  for (const s of r.sessions) {
    const starts = s.injections.filter((e) => e.kind === "session_start");
    const prompts = s.injections.filter((e) => e.kind === "prompt");
    const steps = s.injections.filter((e) => e.kind === "step");
    const title = s.summary || (s.first_prompt ? quoted(s.first_prompt) : "no summary and no prompt recorded yet");
    const promoted = s.ended_at || s.memories_promoted
      ? el("p", { "data-testid": "promoted" }, `${s.memories_promoted} promoted at its end; ${s.in_project_total} of its memories are in the project now`,
        el("span", { class: "muted" }, " (stored there during the session, or promoted; a promoted memory merged into an older one keeps the older one's id and session)"))
      : null;
    const browseScope = () => { Object.assign(browseState, { q: "", scope: "session", session: s.session_id, type: "", status: "", tags: "", age: "", page: 1 }); location.hash = "#/browse"; };
    main.append(el("div", { class: "card", "data-testid": "session" },
      el("h2", {}, el("span", { class: "session-title", "data-testid": "session-title" }, title), " ", el("span", { class: "pill" }, s.status || "unregistered"),
        s.session_id === r.current_session ? el("span", { class: "pill live" }, "this UI's session") : null),
      el("p", { class: "muted" }, `session ${s.session_id} · started ${when(s.started_at) || "?"}`, s.ended_at ? ` · ended ${when(s.ended_at)}` : ""),
      s.summary && s.first_prompt ? el("p", {}, el("b", {}, "first prompt: "), quoted(s.first_prompt)) : null,
      promoted,
      el("h3", {}, `Injected at start (${new Set(starts.flatMap((e) => e.memory_ids)).size})`),
      briefList([...new Set(starts.flatMap((e) => e.memory_ids))], briefs, "injected-start"),
      el("h3", {}, `Prompts (${prompts.length}) and what each injected`),
      prompts.length ? prompts.map((e) => el("div", { class: "prompt", "data-testid": "prompt" },
        el("div", {}, el("span", { class: "muted" }, `${when(e.at)} · `), e.prompt ? quoted(e.prompt) : el("span", { class: "muted" }, "(prompt not recorded)"),
          el("span", { class: "muted" }, e.memory_ids.length ? ` · ${e.tokens} tokens` : " · nothing cleared the relevance bar")),
        e.memory_ids.length ? briefList(e.memory_ids, briefs, "injected-prompt") : null))
        : el("p", { class: "muted" }, "nothing recorded"),
      steps.length ? [
        el("h3", {}, `After tool steps (${steps.length})`),
        steps.map((e) => el("div", { class: "prompt", "data-testid": "step" },
          el("div", {}, el("span", { class: "muted" }, `${when(e.at)} · after `), el("code", {}, e.prompt || "a step"),
            el("span", { class: "muted" }, ` · ${e.tokens} tokens`)),
          briefList(e.memory_ids, briefs, "injected-step")))] : null,
      s.session_scope_total ? [
        el("h3", {}, `Its own memories, session scope (${s.session_scope_total})`),
        briefList(s.session_scope, briefs, "session-scope"),
        el("button", { class: "secondary", "data-testid": "browse-session", on: { click: browseScope } }, `Browse all ${s.session_scope_total} in Browse`)] : null,
      el("h3", {}, `Its memories now in the project (${s.in_project_total})`),
      briefList(s.in_project.slice(0, 40), briefs, "in-project")));
  }
}

// ------------------------------------------------------------------ consolidation
const consolidateState = { scope: "" };

async function consolidatePage(applied = null) {
  setPage("consolidate");
  const scope = select("scope", [["", "this project"], ["user", "user (all projects)"], ["session", "this session"]], consolidateState.scope);
  scope.setAttribute("data-testid", "plan-scope");
  scope.addEventListener("change", () => { consolidateState.scope = scope.value; consolidatePage(); });
  main.append(el("h1", {}, "Consolidation"), el("p", { class: "muted" }, "The consolidator's plan (a dry run: nothing changes until you apply). Approve or reject each step, then apply the approved ones."),
    el("div", { class: "filters" }, el("label", {}, "scope", scope)));
  if (applied) main.append(applied);
  // Progressive: the summaries of episodes (episodic memories only) come first, in a fraction
  // of the time; duplicates and contradictions, which compare every live memory, follow.
  const base = consolidateState.scope ? `/api/consolidate?scope=${consolidateState.scope}&` : "/api/consolidate?";
  const waiting = loading("planning summaries…");
  main.append(waiting);
  let p;
  try { p = await api(`${base}strategy=summarize`); } catch (e) { waiting.remove(); failed(e); return; }
  waiting.remove();
  const decisions = new Map();
  const steps = [];
  const apply = el("button", { "data-testid": "apply", disabled: true }, "Apply approved steps");
  const refresh = () => {
    const n = [...decisions.values()].filter((v) => v === "approve").length;
    apply.disabled = n === 0;
    apply.textContent = `Apply ${n} approved step${n === 1 ? "" : "s"}`;
    all.textContent = `Approve all ${steps.length}`;
    all.disabled = !steps.length;
  };
  const list = el("div", { class: "card", "data-testid": "plan" });
  const marks = [];
  const all = el("button", { class: "secondary", "data-testid": "approve-all", on: { click: () => marks.forEach((m) => m("approve")) } }, "Approve all");
  const addSteps = (plan) => {
    const fresh = [];
    for (const c of plan.consolidated_memories) fresh.push({ step: c.step, what: `Summarise ${c.derived_from.length} related episodes into a ${c.scope} fact:\n${c.content}`, ids: c.derived_from });
    for (const d of plan.duplicates) fresh.push({ step: d.step, what: `Merge ${d.memory_ids.length} near-duplicates (the first is kept, the others archived)`, ids: d.memory_ids });
    for (const id of plan.archive_candidates) fresh.push({ step: `archive:${id}`, what: "Archive (low importance, never recalled)", ids: [id] });
    for (const s of fresh) {
      if (steps.some((t) => t.step === s.step)) continue;
      steps.push(s);
      const row = el("div", { class: "step", "data-step": s.step, "data-testid": "step" });
      const mark = (v) => { decisions.set(s.step, v); row.className = `step ${v === "approve" ? "approved" : "rejected"}`; refresh(); };
      marks.push(mark);
      row.append(el("div", { class: "what" }, s.what, el("div", {}, s.ids.map((id) => [memoryLink(id), " "]))),
        el("button", { class: "secondary", "data-testid": "approve", on: { click: () => mark("approve") } }, "Approve"),
        el("button", { class: "secondary", "data-testid": "reject", on: { click: () => mark("reject") } }, "Reject"));
      list.append(row);
    }
  };
  addSteps(p);
  apply.addEventListener("click", async () => {
    const approved = [...decisions].filter(([, v]) => v === "approve").map(([k]) => k);
    apply.disabled = true;
    apply.textContent = `Applying ${approved.length}…`;
    try {
      const r = await post("/api/consolidate/apply", { steps: approved, scope: p.scope });
      const a = r.applied;
      toast(`applied ${a.steps.length} steps: ${a.created.length} summaries, ${a.merged} merged, ${a.archived} archived` + (a.not_found.length ? `; ${a.not_found.length} no longer in the plan` : ""));
      // the plan is made again: what was applied is gone from it, what remains is still there
      consolidatePage(el("p", { class: "card", "data-testid": "applied" }, `Applied ${a.steps.length} step(s).`, a.created.map((id) => [" created ", memoryLink(id)])));
    } catch (e) { toast(e.message, true); refresh(); }
  });
  const more = loading("looking for duplicates and contradictions among every live memory…");
  main.append(el("div", { class: "actions" }, all), list, more, apply);
  refresh();
  let full;
  try { full = await api(`${base}strategy=full`); } catch (e) { failed(e, more); return; }
  more.remove();
  addSteps(full);
  if (!steps.length) list.append(el("p", { "data-testid": "empty" }, "Nothing to consolidate in the ", full.scope, " scope."));
  list.dataset.complete = "1";
  for (const c of full.possible_contradictions || []) {
    apply.after(el("div", { class: "card" }, el("b", {}, `Possible contradiction (${c.similarity}): `), "older ", memoryLink(c.older.memory_id), " ", c.older.content, " · newer ", memoryLink(c.newer.memory_id), " ", c.newer.content,
      el("div", { class: "muted" }, "If the newer replaces the older, open the older one and mark it superseded by the newer.")));
  }
  refresh();
}

// ------------------------------------------------------------------ graph
async function graphPage(entity = "") {
  setPage("graph");
  const input = el("input", { value: entity, placeholder: "entity (empty: the most mentioned)", "data-testid": "graph-entity", size: 30 });
  const depth = el("select", { "data-testid": "graph-depth" }, [1, 2, 3].map((d) => el("option", { value: d }, `${d} hop${d > 1 ? "s" : ""}`)));
  const form = el("form", { class: "filters" }, input, depth, el("button", { type: "submit" }, "Show"));
  const area = el("div", { class: "card", "data-testid": "graph" });
  main.append(el("h1", {}, "Graph"), form, area);
  const draw = async () => {
    area.replaceChildren("loading…");
    const params = new URLSearchParams({ depth: depth.value });
    if (input.value.trim()) params.set("entity", input.value.trim());
    let g;
    try { g = await api(`/api/graph?${params}`); } catch (e) { area.replaceChildren(`Could not load: ${e.message}`); return; }
    const asked = input.value.trim();
    const named = g.entities.filter((e) => e.name);
    if (!named.length) {
      area.replaceChildren(empty(asked
        ? `No entity named "${asked}" in this project's memory. Clear the field to see the most connected ones; entities come from the services, tools and people memories name.`
        : "No entities yet: they come from the services, tools and people the memories Claude stores name."));
      return;
    }
    const center = named.find((e) => e.name.toLowerCase() === asked.toLowerCase())?.name || "";
    area.replaceChildren(drawGraph({ ...g, entities: named }, center),
      el("p", { class: "muted" }, `${named.length} entities, ${g.graph_stats.relationships_found} relationships; ${center ? `${g.graph_stats.depth_reached} hop(s) from ${center}` : "the most connected ones"}; arrows point from subject to object; drag to pan, the wheel zooms, a name opens its neighbourhood`));
    if (g.memories.length) area.append(el("h2", {}, "Memories mentioning them"), el("ul", {}, g.memories.slice(0, 20).map((m) => el("li", {}, memoryLink(m.id), " ", m.summary || m.content.slice(0, 160)))));
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); draw(); });
  draw();
}

function panAndZoom(s, W, H) {
  // The wheel zooms around the pointer, dragging pans: the viewBox moves, the drawing stays.
  let box = { x: 0, y: 0, w: W, h: H };
  const show = () => s.setAttribute("viewBox", `${box.x} ${box.y} ${box.w} ${box.h}`);
  const at = (ev) => { const r = s.getBoundingClientRect(); return [box.x + ((ev.clientX - r.left) / r.width) * box.w, box.y + ((ev.clientY - r.top) / r.height) * box.h]; };
  s.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const [px, py] = at(ev), f = Math.min(4, Math.max(0.25, Math.exp(ev.deltaY * 0.0015)));
    const w = Math.min(W * 4, Math.max(W / 8, box.w * f)), k = w / box.w;
    box = { x: px - (px - box.x) * k, y: py - (py - box.y) * k, w, h: box.h * k };
    show();
  }, { passive: false });
  let drag = null;
  s.addEventListener("pointerdown", (ev) => { if (ev.target.closest("a")) return; drag = at(ev); s.setPointerCapture(ev.pointerId); });
  s.addEventListener("pointermove", (ev) => { if (!drag) return; const [px, py] = at(ev); box = { ...box, x: box.x + drag[0] - px, y: box.y + drag[1] - py }; show(); });
  s.addEventListener("pointerup", () => { drag = null; });
  s.setAttribute("data-zoomable", "1");
}

const GRAPH_NODES_MAX = 40;  // with no entity chosen: the most connected ones, laid out by force

function forceLayout(names, links, W, H, center) {
  // Fruchterman-Reingold with a pull to the middle (components stay together), deterministic
  // (nodes start on a circle), then scaled to fill the drawing; labels get room on the right.
  const n = names.length, at = new Map(names.map((x, i) => [x, i]));
  const P = names.map((_, i) => [Math.cos((2 * Math.PI * i) / n) * 100, Math.sin((2 * Math.PI * i) / n) * 100]);
  const E = links.map(([a, b]) => [at.get(a), at.get(b)]).filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  // k: the spring length; the drawing is scaled to fit afterwards, so only the forces' ratios
  // matter: a strong pull to the middle (measured: separate groups stay beside each other, and
  // the closest two of 17 nodes are 80 units apart in a 900 x 520 drawing, not 21)
  const k = 60, GRAVITY = 1.5, ROUNDS = 300;
  const pinned = center ? at.get(center) : undefined;
  for (let it = 0; it < ROUNDS; it++) {
    const heat = 30 * (1 - it / ROUNDS) + 1;
    const D = P.map(([x, y]) => [-x * GRAVITY, -y * GRAVITY]);
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      const dx = P[i][0] - P[j][0], dy = P[i][1] - P[j][1], d = Math.hypot(dx, dy) || 0.01, f = (k * k) / d / d;
      D[i][0] += dx * f; D[i][1] += dy * f; D[j][0] -= dx * f; D[j][1] -= dy * f;
    }
    for (const [a, b] of E) {
      const dx = P[a][0] - P[b][0], dy = P[a][1] - P[b][1], d = Math.hypot(dx, dy) || 0.01, f = d / k;
      D[a][0] -= dx * f; D[a][1] -= dy * f; D[b][0] += dx * f; D[b][1] += dy * f;
    }
    for (let i = 0; i < n; i++) {
      const d = Math.hypot(D[i][0], D[i][1]) || 1, step = Math.min(d, heat);
      P[i][0] += (D[i][0] / d) * step; P[i][1] += (D[i][1] / d) * step;
    }
    if (pinned !== undefined) P[pinned] = [0, 0];
  }
  const xs = P.map((p) => p[0]), ys = P.map((p) => p[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const [L, R, T, B] = [40, 150, 30, 30];  // margins: labels are written right of their node
  const sx = (W - L - R) / Math.max(x1 - x0, 1), sy = (H - T - B) / Math.max(y1 - y0, 1);
  const pos = new Map();
  names.forEach((name, i) => pos.set(name, [n === 1 ? W / 2 : L + (P[i][0] - x0) * sx, n === 1 ? H / 2 : T + (P[i][1] - y0) * sy]));
  return pos;
}

function drawGraph(g, center) {
  const W = 900, H = 520;
  // the most connected first: with no entity chosen only GRAPH_NODES_MAX are drawn
  const degree = new Map();
  const bump = (name, by) => degree.set(name, (degree.get(name) || 0) + by);
  for (const e of g.entities) { bump(e.name, e.relationships.length + (e.memory_count || 0)); for (const r of e.relationships) if (r.target) bump(r.target, 1); }
  let names = [...degree.keys()].sort((a, b) => degree.get(b) - degree.get(a) || a.localeCompare(b));
  if (center) names = [center, ...names.filter((x) => x !== center)];
  names = names.slice(0, GRAPH_NODES_MAX);
  const links = g.entities.flatMap((e) => e.relationships.filter((r) => r.direction === "outgoing" && r.target).map((r) => [e.name, r.target]));
  const pos = forceLayout(names, links, W, H, center);
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "data-testid": "graph-svg" });
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }));
  const defs = svg("defs");
  defs.append(marker);
  s.append(defs);
  for (const e of g.entities) for (const r of e.relationships) {
    if (r.direction !== "outgoing" || !pos.has(e.name) || !pos.has(r.target)) continue;
    const [x1, y1] = pos.get(e.name), [x2, y2] = pos.get(r.target);
    const len = Math.hypot(x2 - x1, y2 - y1) || 1, stop = 9 / len;  // end at the target's circle, not its centre
    s.append(svg("line", { x1, y1, x2: x2 - (x2 - x1) * stop, y2: y2 - (y2 - y1) * stop, class: "edge", "marker-end": "url(#arrow)", "data-testid": "graph-edge" }),
      svg("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3, class: "edge-label" }, r.type));
  }
  for (const [n, [x, y]] of pos) {
    const a = document.createElementNS(SVG_NS, "a");
    a.setAttribute("href", `#/graph/${encodeURIComponent(n)}`);
    a.append(svg("circle", { cx: x, cy: y, r: 7, class: n === center ? "node center" : "node", "data-testid": "graph-node" }), svg("text", { x: x + 10, y: y + 4 }, n));
    s.append(a);
  }
  panAndZoom(s, W, H);
  return s;
}

// ------------------------------------------------------------------ health
async function healthPage() {
  const signal = setPage("health");
  main.append(el("h1", {}, "Health"));
  let r;
  try { r = await api("/api/health"); } catch (e) { failed(e); return; }
  const q = r.quality;
  const pct = (n, of) => `${n} (${of ? ((100 * n) / of).toFixed(1) : "0.0"}%)`;
  const rows = Object.entries(q.scopes).map(([scope, qs]) => el("tr", { "data-testid": `health-${scope}` }, el("td", {}, scope), el("td", {}, qs.total),
    el("td", {}, Object.entries(qs.by_type).map(([k, v]) => `${k} ${v}`).join(", ")),
    el("td", {}, Object.entries(qs.by_status).map(([k, v]) => `${k} ${v}`).join(", ")),
    el("td", {}, qs.database_size_bytes ? `${(qs.database_size_bytes / 1e6).toFixed(1)} MB` : "in memory"),
    // near-duplicates are looked for among the newest checked, so the ratio is out of those
    el("td", { title: `among the ${qs.duplicates_checked} newest live memories` }, `${pct(qs.near_duplicates, qs.duplicates_checked)} of ${qs.duplicates_checked} checked`),
    el("td", {}, pct(qs.never_recalled, qs.live)), el("td", {}, pct(qs.superseded_but_active, qs.live)), el("td", {}, pct(qs.not_recalled_90d, qs.live))));
  for (const w of q.warnings || []) rows.push(el("tr", {}, el("td", { colspan: 9, class: "error" }, w.message)));
  main.append(el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, ["scope", "memories", "by type", "by status", "disk", "near-duplicates", "never recalled", "superseded but live", "not recalled in 90 days"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))),
    el("p", { class: "muted" }, `Ratios are out of the live memories (created, active, consolidated), near-duplicates (cosine ≥ ${q.duplicate_similarity}) out of the newest checked; computed in ${q.query_time_ms} ms.`));
  const engine = el("div", { class: "card", "data-testid": "engine" }, el("h2", {}, "Write queue and engine"), loading());
  main.append(engine);
  let st;
  try { st = await api("/api/status", { signal }); } catch (e) { failed(e, engine); return; }
  const wq = st.write_queue || {};
  engine.replaceChildren(el("h2", {}, "Write queue"),
    el("p", { "data-testid": "write-queue" }, `${wq.pending ?? 0} queued writes, ${wq.rejected ?? 0} rejected`, (wq.blocked_by || []).length ? `; waiting for: ${wq.blocked_by.join("; ")}` : ""),
    el("h2", {}, "Engine"), el("p", {}, `${st.connection.status} (${st.connection.mode}), model ${st.embedding.model} (${st.embedding.dimensions}-d)`, st.embedding.error ? ` ERROR ${st.embedding.error}` : ""),
    Object.entries(st.scopes).filter(([, i]) => i.status !== "connected").map(([scope, i]) => el("p", { class: "error" }, `${scope}: ${i.status} ${i.message || ""}`)));
}

// ------------------------------------------------------------------ live feed and routing
async function projectPicker() {
  const input = document.getElementById("project");
  // its own signal: the first view, routed right after, must not abort it
  try { input.placeholder = (await api("/api/info", { signal: new AbortController().signal })).project; } catch (e) { /* shown by the page's own call */ }
  input.value = project;
  input.addEventListener("change", () => {
    const params = new URLSearchParams(location.search);
    if (input.value.trim()) params.set("project", input.value.trim()); else params.delete("project");
    location.search = params.toString();  // a reload: every view and the live feed follow it
  });
}

// The live feed is a short request every LIVE_POLL_MS while the tab is visible: no connection
// is held between polls, so any number of tabs stays within the browser's six per host, and a
// hidden tab asks nothing. A failed poll says so in the header (the daemon is down or slow).
const LIVE_POLL_MS = 2000;
const live = { seen: null, timer: null, busy: false };

async function pollLive() {
  const state = document.getElementById("live-state");
  live.timer = null;
  if (document.hidden || live.busy) return;
  live.busy = true;
  try {
    const r = await api("/api/live", { signal: new AbortController().signal });
    const fresh = live.seen ? r.memories.filter((m) => !live.seen.has(m.id)).reverse() : [];
    live.seen = new Set([...(live.seen || []), ...r.memories.map((m) => m.id)]);
    for (const m of fresh) liveMemory(m);
    state.textContent = "live";
    state.classList.remove("down");
  } catch (e) {
    state.textContent = `not live: ${e.message}`;
    state.classList.add("down");
  } finally {
    live.busy = false;
    scheduleLive();
  }
}

function scheduleLive() {
  if (live.timer === null && !document.hidden) live.timer = setTimeout(pollLive, LIVE_POLL_MS);
}

function connectLive() {
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) { clearTimeout(live.timer); live.timer = null; } else pollLive();
  });
  pollLive();
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const [page, arg] = [parts[0] || "browse", decodeURIComponent(parts.slice(1).join("/"))];
  if (page === "memory" && arg) return memoryPage(arg);
  if (page === "sessions") return sessionsPage();
  if (page === "consolidate") return consolidatePage();
  if (page === "graph") return graphPage(arg);
  if (page === "health") return healthPage();
  return browse();
}

window.addEventListener("hashchange", route);
projectPicker();
connectLive();
route();
