// engram's operator dashboard: four pages over the JSON API, with the API
// key kept in this tab's session storage. Everything shown from the server
// goes in as text, never as HTML: records hold what agents wrote.
"use strict";

const KEY = "engram.apiKey";
// As much as the key allows: the server narrows this to the key's grant.
const TRUST = { max_sensitivity: "hyper" };
// A topic page names at most this many neighbours by title (one request each).
const NEIGHBOUR_TITLES = 50;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick" || name === "onsubmit" || name === "onchange") node[name] = value;
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(headers, rows, id) {
  return el("table", { id }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c))))));
}

function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.hidden = !text;
}

async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = "Bearer " + key;
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (data && data.error) || { code: "http_" + response.status, message: response.statusText };
    const failure = new Error(error.code + ": " + error.message);
    failure.status = response.status;
    throw failure;
  }
  return data;
}

function show(...nodes) {
  const page = document.getElementById("page");
  page.replaceChildren(...nodes.flat().filter((node) => node !== null));
}

// Times as the server keeps them, in UTC (the zone job schedules use),
// to the second, zone named.
function when(text) {
  if (!text) return "—";
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? text : at.toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

// Who made a record: the provenance's creator, else its first source's.
function creator(provenance) {
  const sourced = (provenance.sources || []).find((s) => s.created_by);
  return provenance.created_by || (sourced && sourced.created_by) || "—";
}

function gist(record) {
  const p = record.payload || {};
  switch (p.kind) {
    case "semantic": return `${p.subject} ${p.predicate} = ${JSON.stringify(p.object)}`;
    case "working": return `thread ${p.thread_id}: ${p.state}${p.context_summary ? " — " + p.context_summary : ""}`;
    case "competence": return `skill ${p.skill_name}`;
    case "plan_graph": return `plan ${p.plan_id}${p.intent ? ": " + p.intent : ""}`;
    case "episodic": return p.turn ? `${p.turn.speaker}: ${p.turn.text}` : (p.timeline || []).map((e) => `${e.event_kind} ${e.ref}${e.summary ? ": " + e.summary : ""}`)
      .concat((p.tool_graph || []).map((t) => "tool " + t.tool)).join("; ");
    default: return "";
  }
}

// Jobs: schedules (checked by the server), on/off, run now, last runs.
async function jobsPage() {
  const { jobs } = await api("GET", "/v1/jobs");
  const rows = jobs.map((job) => {
    const schedule = el("input", { value: job.schedule, size: 22, "aria-label": job.name + " schedule", "data-job": job.name });
    const enabled = el("input", { type: "checkbox", checked: job.enabled, "aria-label": job.name + " enabled" });
    const status = el("span", { class: "muted", "data-status": job.name });
    const save = el("button", {
      class: "primary", "data-save": job.name,
      onclick: async () => {
        status.className = "muted";
        status.textContent = "saving…";
        try {
          const { job: saved } = await api("PUT", "/v1/jobs/" + job.name, { schedule: schedule.value, enabled: enabled.checked });
          status.className = "ok";
          status.textContent = "saved; next run " + when(saved.next_run);
        } catch (e) {
          status.className = "error";
          status.textContent = e.message;
        }
      },
    }, "Save");
    const run = el("button", {
      "data-run": job.name,
      onclick: async () => {
        status.className = "muted";
        status.textContent = "running…";
        try {
          await api("POST", "/v1/jobs/" + job.name + "/run");
          route();
        } catch (e) {
          status.className = "error";
          status.textContent = e.message;
        }
      },
    }, "Run now");
    return [el("strong", {}, job.name), el("div", {}, schedule, " ", el("label", { class: "inline" }, enabled, " enabled")),
      job.running ? "running" : "idle", when(job.next_run), el("div", {}, save, " ", run, " ", status)];
  });
  const outcome = (r) => (r.error ? el("span", { class: "error" }, "failed: " + r.error)
    : Object.entries(r.result || {}).map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", "));
  const runs = jobs.flatMap((job) => [el("h2", {}, "Recent runs of " + job.name),
    job.recent_runs.length
      ? table(["started", "took", "result"], job.recent_runs.map((r) => [when(r.started_at), r.duration_ms + " ms", outcome(r)]), "runs-" + job.name)
      : el("p", { class: "muted", id: "runs-" + job.name }, "never run")]);
  show(el("h1", {}, "Jobs"),
    el("p", { class: "muted" }, "Schedules are six-field cron (sec min hour day month weekday), in UTC, checked by the server when saved."),
    table(["job", "schedule", "state", "next run", ""], rows, "jobs"), runs);
}

// Memory: counts, salience histogram, recent activity.
async function memoryPage() {
  const stats = await api("GET", "/v1/metrics");
  const counts = (title, map) => el("div", { class: "card" }, el("h2", {}, title),
    table(["", "records"], Object.entries(map).map(([k, v]) => [k, String(v)])));
  const most = Math.max(1, ...Object.values(stats.salience_distribution));
  const histogram = table(["salience", "records", ""], Object.entries(stats.salience_distribution).map(([range, n]) =>
    [range, String(n), el("div", { class: "bar", style: `width:${Math.round((n / most) * 300)}px` })]), "salience");
  show(el("h1", {}, "Memory"),
    el("div", { class: "grid" },
      el("div", { class: "card" }, el("div", { class: "muted" }, "records"), el("div", { class: "big", id: "total-records" }, String(stats.total_records))),
      el("div", { class: "card" }, el("div", { class: "muted" }, "average salience"), el("div", { class: "big" }, stats.avg_salience.toFixed(3))),
      el("div", { class: "card" }, el("div", { class: "muted" }, "audit entries"), el("div", { class: "big" }, String(stats.total_audit_entries))),
      el("div", { class: "card" }, el("div", { class: "muted" }, "new in 24 h"), el("div", { class: "big" }, (stats.growth_rate * 100).toFixed(1) + "%"))),
    el("div", { class: "grid" }, counts("By type", stats.records_by_type), counts("By sensitivity", stats.records_by_sensitivity),
      counts("By status", stats.records_by_status)),
    el("h2", {}, "Salience"), histogram,
    el("h2", {}, "Recent activity"),
    table(["when", "action", "actor", "record"], stats.recent_activity.map((a) => [when(a.at), a.action, a.actor, `${a.type} (${a.sensitivity})`]), "activity"));
}

// Records: search with the retrieval filters, a page at a time, each
// record with how it scored; a record with its tags, provenance, relations,
// audit log and revision chain.
const PAGE_SIZES = [20, 50, 100];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function recordLink(id) {
  return el("a", { href: "#/records/" + encodeURIComponent(id), class: "id" }, id);
}

function score(value) {
  return value === null || value === undefined ? "—" : value.toFixed(3);
}

async function recordsPage() {
  const field = (label, input) => el("label", {}, label, input);
  const input = (name, attrs) => el("input", Object.assign({ name }, attrs));
  const types = ["working", "semantic", "competence", "plan_graph", "episodic"];
  const typeBoxes = types.map((t) => el("label", { class: "inline" }, el("input", { type: "checkbox", name: "type", value: t }), t));
  const results = el("div", { id: "results" });
  // The search being paged through, and the cursor each page was asked
  // with: "previous" asks again with the one before.
  let search = null;
  let cursors = [];

  // Errors show below the form, but not those of the list the page opens
  // with (`opening`): the page as a whole says why it could not be drawn.
  async function showPage(cursor, opening) {
    const body = cursor ? Object.assign({}, search, { cursor }) : search;
    try {
      const found = await api("POST", "/v1/retrieve", body);
      const first = cursors.length === 0;
      cursors.push(cursor);
      const page = cursors.length;
      const scored = new Map(found.scores.map((s) => [s.id, s]));
      const previous = el("button", { type: "button", id: "page-previous", disabled: first,
        onclick: () => { cursors.pop(); showPage(cursors.pop()); } }, "← Previous");
      const next = el("button", { type: "button", id: "page-next", disabled: !found.next_cursor,
        onclick: () => showPage(found.next_cursor) }, "Next →");
      const shown = found.records.length;
      results.replaceChildren(
        el("div", { class: "pager" }, previous, " ", next, " ",
          el("span", { class: "muted", id: "page-state" }, `page ${page} · ${shown} record${shown === 1 ? "" : "s"}${found.next_cursor ? " · more follow" : ""}`)),
        table(["id", "type", "status", "score", "text", "vector", "salience", "what it says"], found.records.map((r) => {
          const s = scored.get(r.id) || {};
          return [recordLink(r.id), r.type, r.status, el("strong", {}, score(s.score)), score(s.text), score(s.vector), score(s.salience), gist(r)];
        }), "records"),
        el("p", { class: "muted" }, "score: what the records are ranked by; text and vector: the query's relevance in [0, 1] (— when not asked); salience: the record's, now."));
      document.body.dataset.ready = "records/page-" + page;
    } catch (e) {
      if (opening) throw e;
      results.replaceChildren(el("p", { class: "error" }, e.message));
    }
  }

  const form = el("form", {
    class: "search",
    onsubmit: async (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const list = (name) => (data.get(name) || "").split(",").map((s) => s.trim()).filter(Boolean);
      const body = { trust: TRUST, limit: Number(data.get("limit")) || 1000, page_size: Number(data.get("page_size")) || PAGE_SIZES[0] };
      if (data.get("task")) body.task_descriptor = data.get("task");
      const chosen = data.getAll("type");
      if (chosen.length) body.memory_types = chosen;
      if (list("tags").length) body.tags = list("tags");
      if (list("sources").length) body.sources = list("sources");
      for (const name of ["thread_id", "subject"]) if (data.get(name)) body[name] = data.get(name);
      for (const name of ["created_after", "created_before"]) if (data.get(name)) body[name] = new Date(data.get(name)).toISOString();
      if (data.get("include_retracted")) body.include_retracted = true;
      search = body;
      cursors = [];
      await showPage(undefined);
    },
  },
  field("task text", input("task", { placeholder: "what the task needs" })),
  field("tags (comma)", input("tags")), field("sources (comma)", input("sources")),
  field("thread id", input("thread_id")), field("subject", input("subject")),
  field("created after", input("created_after", { type: "datetime-local" })),
  field("created before", input("created_before", { type: "datetime-local" })),
  field("at most", input("limit", { type: "number", value: 1000, min: 1 })),
  field("per page", el("select", { name: "page_size" }, PAGE_SIZES.map((n) => el("option", { value: n }, String(n))))),
  el("fieldset", {}, el("legend", {}, "types (none: all)"), typeBoxes),
  el("label", { class: "inline" }, el("input", { type: "checkbox", name: "include_retracted", value: "1" }), "include retracted"),
  el("div", {}, el("button", { class: "primary", type: "submit" }, "Search")));
  show(el("h1", {}, "Records"), form,
    el("p", { class: "muted", id: "records-default" }, "Without a search: every record the key may see, highest salience first, newest first among equals."),
    results);
  // Opened, the page lists records at once: the search with no text.
  search = { trust: TRUST, limit: 1000, page_size: PAGE_SIZES[0] };
  await showPage(undefined, true);
}

// A relation's other end: a link when it names a record, else the
// reference as given (a contest may cite any evidence).
function target(id) {
  return UUID.test(id) ? recordLink(id) : el("code", {}, id);
}

// A turn of a conversation, among the turns of its session the key may
// see (the first 200).
async function sessionOf(record) {
  const turn = record.payload && record.payload.turn;
  if (!turn) return null;
  const body = { trust: TRUST, session_id: turn.session_id, page_size: 200 };
  if (record.scope) body.scope = record.scope;
  const { sessions } = await api("POST", "/v1/conversations/" + encodeURIComponent(turn.conversation_id) + "/turns", body);
  const turns = sessions.flatMap((s) => s.turns);
  return [el("h2", {}, "Conversation"),
    el("p", { class: "muted" }, "turn ", String(turn.index), " of ", el("strong", {}, turn.conversation_id),
      ", session ", el("code", {}, turn.session_id)),
    table(["when", "speaker", "said"], turns.map((t) => {
      const said = t.payload.turn;
      const words = t.id === record.id ? el("strong", {}, said.text) : el("a", { href: "#/records/" + encodeURIComponent(t.id) }, said.text);
      return [when(said.at), said.speaker, words];
    }), "session")];
}

async function recordPage(id) {
  const { record } = await api("POST", "/v1/retrieve/" + encodeURIComponent(id), { trust: TRUST });
  const { chain, erased } = await api("POST", "/v1/records/" + encodeURIComponent(id) + "/history", { trust: TRUST });
  const session = await sessionOf(record);
  // The current version: the newest of the chain, unless it was retracted.
  const newest = chain[chain.length - 1];
  const current = newest && newest.status !== "retracted" ? newest.id : null;
  const provenance = record.provenance || { sources: [] };
  show(el("h1", {}, "Record ", el("code", {}, record.id), record.id === current && chain.length > 1 ? el("span", { class: "badge" }, "current version") : null),
    table(["type", "sensitivity", "scope", "status", "salience", "confidence", "created", "updated"],
      [[record.type, record.sensitivity, record.scope || "—", record.status, record.salience.toFixed(3), String(record.confidence), when(record.created_at), when(record.updated_at)]]),
    el("p", {}, gist(record)),
    session,
    el("h2", {}, "Tags"),
    record.tags.length ? el("p", { id: "tags" }, record.tags.map((t) => el("span", { class: "tag" }, t))) : el("p", { class: "muted", id: "tags" }, "no tags"),
    el("h2", {}, "Provenance"),
    el("p", { class: "muted" }, "created by ", el("strong", { id: "created-by" }, creator(provenance))),
    provenance.sources.length
      ? table(["kind", "reference", "by", "when"], provenance.sources.map((p) =>
        [p.kind, target(p.ref), p.created_by || "—", when(p.timestamp)]), "provenance")
      : el("p", { class: "muted", id: "provenance" }, "no sources"),
    el("h2", {}, "Relations"),
    record.relations.length
      ? table(["relation", "to", "weight", "since"], record.relations.map((r) =>
        [r.predicate, target(r.target_id), String(r.weight), when(r.created_at)]), "relations")
      : el("p", { class: "muted", id: "relations" }, "no relations"),
    el("h2", {}, "Payload"), el("pre", {}, JSON.stringify(record.payload, null, 2)),
    el("h2", {}, "Audit log"),
    table(["when", "action", "actor", "rationale"], record.audit_log.map((a) => [when(a.timestamp), a.action, a.actor, a.rationale]), "audit"),
    el("h2", {}, "Revision chain"),
    table(["", "id", "status", "what it says", ""], withErased(chain, erased).map((r, i) =>
      r.erased_at
        ? [String(i + 1), el("code", { class: "id" }, r.id), "erased",
          el("span", { class: "muted" }, `erased ${when(r.erased_at)} by ${r.actor}: ${r.rationale}`), ""]
        : [String(i + 1), r.id === record.id ? el("strong", { class: "id" }, r.id) : recordLink(r.id), r.status, gist(r),
          r.id === current ? el("span", { class: "badge" }, "current") : ""]), "chain"));
}

// The chain with its erased versions where they stood: before the version
// that superseded one, else after the one it superseded.
function withErased(chain, erased) {
  const versions = chain.slice();
  for (const gone of erased || []) {
    const newer = versions.findIndex((v) => v.id === gone.newer_id);
    const older = versions.findIndex((v) => v.id === gone.older_id);
    if (newer >= 0) versions.splice(newer, 0, gone);
    else if (older >= 0) versions.splice(older + 1, 0, gone);
    else versions.push(gone);
  }
  return versions;
}

// Topics: find one; its fields, each field's history, its neighbours.
async function topicsPage() {
  const results = el("div", { id: "results" });
  const text = el("input", { name: "text", placeholder: "words of a title, summary or value", size: 40 });
  let searches = 0;
  // Without text, the topics changed most recently.
  async function find(opening) {
    try {
      const { topics } = await api("POST", "/v1/topics/query", { trust: TRUST, text: text.value || null, limit: 20 });
      results.replaceChildren(table(["topic", "kind", "score", "fields"], topics.map((hit) =>
        [el("a", { href: "#/topics/" + encodeURIComponent(hit.topic.id) }, hit.topic.title), hit.topic.kind || "—", hit.score.toFixed(2),
          Object.entries(hit.topic.fields).map(([k, f]) => `${k} = ${JSON.stringify(f.value)}`).join(", ")])));
    } catch (e) {
      if (opening) throw e;
      results.replaceChildren(el("p", { class: "error" }, e.message));
    }
  }
  const form = el("form", {
    class: "search",
    onsubmit: async (event) => {
      event.preventDefault();
      await find();
      searches += 1;
      document.body.dataset.ready = "topics/search-" + searches;
    },
  }, el("label", {}, "text", text), el("div", {}, el("button", { class: "primary", type: "submit" }, "Find")));
  show(el("h1", {}, "Topics"), form,
    el("p", { class: "muted" }, "Without text: the topics changed most recently."), results);
  await find(true);
}

async function topicPage(id) {
  const view = (topicId) => api("POST", "/v1/topics/" + encodeURIComponent(topicId) + "/view", { trust: TRUST });
  const { topic } = await view(id);
  const histories = await Promise.all(Object.keys(topic.fields).map((name) =>
    api("POST", `/v1/topics/${encodeURIComponent(id)}/fields/${encodeURIComponent(name)}/history`, { trust: TRUST })
      .then(({ versions }) => [name, versions])));
  // Edges name the other topic by id: its title is looked up, one view each.
  const others = [...new Set(topic.edges.map((e) => (e.from_topic_id === topic.id ? e.to_topic_id : e.from_topic_id)))];
  const titles = new Map(await Promise.all(others.slice(0, NEIGHBOUR_TITLES).map((other) =>
    view(other).then(({ topic: t }) => [other, t.title], () => [other, other]))));
  show(el("h1", {}, "Topic ", topic.title),
    el("p", { class: "muted" }, `${topic.kind || "no kind"} · ${topic.sensitivity} · salience ${topic.salience.toFixed(3)}${topic.archived ? " · archived" : ""}`),
    topic.summary ? el("p", {}, topic.summary) : null,
    el("h2", {}, "Fields"),
    table(["field", "value", "since"], Object.entries(topic.fields).map(([name, f]) => [name, JSON.stringify(f.value), when(f.valid_from)]), "fields"),
    histories.flatMap(([name, versions]) => [el("h2", {}, "History of " + name),
      table(["value", "from", "to", "why", "source"], versions.map((v) =>
        [JSON.stringify(v.value), when(v.valid_from), when(v.valid_to), v.why_changed || "—", v.source]), "history-" + name)]),
    el("h2", {}, "Neighbours"),
    table(["kind", "direction", "topic"], topic.edges.map((e) => {
      const outgoing = e.from_topic_id === topic.id;
      const other = outgoing ? e.to_topic_id : e.from_topic_id;
      return [e.kind, outgoing ? "to" : "from", el("a", { href: "#/topics/" + encodeURIComponent(other) }, titles.get(other) || other)];
    }), "neighbours"));
}

async function route() {
  const [page, id] = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const current = page || "jobs";
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.page === current);
  notice("");
  try {
    if (current === "jobs") await jobsPage();
    else if (current === "memory") await memoryPage();
    else if (current === "records") await (id ? recordPage(id) : recordsPage());
    else if (current === "topics") await (id ? topicPage(id) : topicsPage());
    else show(el("p", {}, "No such page."));
  } catch (e) {
    show();
    notice(e.status === 401
      ? "This engram needs an API key: paste a key's secret in the box above (an operator makes keys with `engram keys create`)."
      : e.status === 403
        ? "This key may not open this page: it needs a key with the admin role."
        : e.message);
  }
  // Which page is drawn ("records", "records/<id>"), for whoever waits on it.
  document.body.dataset.ready = id ? current + "/" + id : current;
}

function keyState() {
  document.getElementById("key-state").textContent = sessionStorage.getItem(KEY) ? "key set for this tab" : "no key";
}

document.getElementById("key-form").onsubmit = (event) => {
  event.preventDefault();
  const input = document.getElementById("key");
  if (input.value.trim()) sessionStorage.setItem(KEY, input.value.trim());
  input.value = "";
  keyState();
  route();
};
document.getElementById("key-forget").onclick = () => {
  sessionStorage.removeItem(KEY);
  keyState();
  route();
};
window.addEventListener("hashchange", route);
keyState();
route();
