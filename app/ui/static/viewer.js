// Follows a session live (GET .../events): the open turn grows in a provisional
// bubble, closed turns arrive as server-rendered bubbles, the header (title, model,
// cwd, counters, cost, Updated) follows.
//
// Each block of the open turn is drawn as its events arrive: text streams in, each
// tool call shows with its result under it, in arrival order. Markdown is rendered by
// the server only: a text or thinking block of the open turn is shown as it is until
// the server has rendered what it holds (POST /ui/markdown, one request at a time, at
// most every RENDER_MS), then as that HTML. When the turn closes, the page fetches the
// server-rendered bubbles after the last message it has read and drops the
// provisional bubble; so it does on `reset`, `end` and every (re)connect. Bubbles
// carry their message id, so none is added twice. Agent text this script writes
// itself goes in text nodes; HTML comes from the server only, escaped there. The
// session's controls (composer, permission cards, Interrupt, Stop) are control.js's;
// it gets the events it follows from here.

import * as control from "./control.js";
import { retitle } from "./cards.js";
import { post } from "./request.js";

const RETRY_MS = 3000; // wait before reopening a stream the browser gave up on
const STALE_CHECK_MS = 30000; // a runner may go silent without a word on /events
const NEAR_BOTTOM_PX = 160; // follow new bubbles only when the reader is at the end
const PREVIEW_KEYS = ["command", "file_path", "path", "pattern", "url", "query", "description"];
const PREVIEW_CHARS = 80;
const RESULT_PREVIEW_CHARS = 80; // of a collapsed result's first and last lines, each
// What arrives from the server: message bubbles and the compact blocks of tool-only turns.
const ARRIVALS = "article.bubble, article.tool-turn";
const THINKING_LABELS = { thinking: "Thinking", reasoning: "Reasoning" };
const RENDER_MS = 100; // a streaming block is rendered again at most this often
const HEADER_MS = 2000; // the header is read again at most this often while events come

const transcript = document.getElementById("transcript");
const indicator = document.getElementById("connection");
const emptyNotice = document.getElementById("transcript-empty");
const statusBadge = document.getElementById("session-status");
const counters = {
  message_count: document.getElementById("count-messages"),
  conversation_turn_count: document.getElementById("count-turns"),
  tokens: document.getElementById("count-tokens"),
  cost: document.getElementById("count-cost"),
};
const renderMaxChars = Number(transcript.dataset.renderMaxChars) || Infinity;

const state = {
  lastMessageId: transcript.dataset.lastMessageId || "0", // a string: ids are 64-bit
  lastEventId: "",
  ended: transcript.dataset.live !== "true",
  stale: transcript.dataset.stale === "true", // running, but its runner is silent
  source: null,
  fetching: null, // the refresh in flight, if any
  again: false, // another refresh was asked for while one was in flight
  resyncing: null, // the open-turn fetch in flight, if any
  resyncTimer: null, // a resync asked for and not yet started
  resyncAgain: false, // a resync was asked for while one was in flight
  header: null, // the header read in flight, if any
  headerAgain: false, // another read was asked for meanwhile
  headerTimer: null, // a read asked for by an event, not yet started
};

function show(connection) {
  indicator.dataset.state = connection;
  indicator.textContent = connection;
}

function showStatus(status) {
  statusBadge.textContent = status;
  statusBadge.className = `badge status-${status}`;
}

function atBottom() {
  const page = document.scrollingElement;
  return page.scrollHeight - page.scrollTop - page.clientHeight < NEAR_BOTTOM_PX;
}

function openTurn() {
  return document.getElementById("open-turn");
}

function noticeContent(follow, node) {
  emptyNotice.hidden = true;
  if (follow && node) node.scrollIntoView({ block: "end" });
}

// Durable bubbles go before the provisional one, which always stays last.
function append(html) {
  const template = document.createElement("template");
  template.innerHTML = html; // server-escaped HTML, inert: nothing in a template runs
  const follow = atBottom();
  const added = [];
  for (const bubble of template.content.querySelectorAll(ARRIVALS)) {
    if (document.getElementById(bubble.id)) continue;
    bubble.classList.add("fresh");
    transcript.insertBefore(bubble, openTurn());
    added.push(bubble);
  }
  control.bubblesAdded(added);
  if (added.length) noticeContent(follow, added[added.length - 1]);
}

async function fetchNewBubbles() {
  for (;;) {
    const url = new URL(transcript.dataset.bubblesUrl, window.location.href);
    url.searchParams.set("after", state.lastMessageId);
    const response = await fetch(url, { cache: "no-store", headers: { Accept: "text/html" } });
    if (!response.ok) throw new Error(`bubbles: HTTP ${response.status}`);
    append(await response.text());
    const last = response.headers.get("X-Last-Message-Id");
    if (last) state.lastMessageId = last;
    if (!response.headers.get("X-Next-Cursor")) return;
  }
}

// One refresh at a time; asks made meanwhile collapse into one more pass.
function refresh() {
  if (state.fetching) {
    state.again = true;
    return state.fetching;
  }
  state.fetching = (async () => {
    do {
      state.again = false;
      try {
        await fetchNewBubbles();
      } catch (err) {
        console.warn(err);
        setTimeout(refresh, RETRY_MS);
        return;
      }
    } while (state.again);
  })().finally(() => {
    state.fetching = null;
  });
  return state.fetching;
}

// A session that failed while the page was open: its exit code and stderr, server-rendered.
async function showFailure() {
  const slot = document.getElementById("failure-slot");
  if (!slot || !transcript.dataset.failureUrl) return;
  try {
    const response = await fetch(transcript.dataset.failureUrl, { cache: "no-store" });
    if (!response.ok) throw new Error(`failure: HTTP ${response.status}`);
    const template = document.createElement("template");
    template.innerHTML = await response.text(); // server-escaped HTML, inert
    slot.replaceChildren(template.content);
  } catch (err) {
    console.warn(err);
  }
}

function when(iso) {
  return iso ? `${iso.slice(0, 19).replace("T", " ")} UTC` : "";
}

// The title and the line under it (id, model, cwd), as templates/ui/_title.html draws them.
function showHeading(figures) {
  if (typeof figures.title !== "string") return;
  const title = document.getElementById("session-title");
  title.textContent = figures.title;
  title.classList.toggle("untitled", Boolean(figures.untitled));
  retitle(figures.title);
  const meta = [];
  for (const [cls, value] of figures.meta || []) {
    if (meta.length) meta.push(" · ");
    meta.push(el("code", cls, value));
  }
  const slot = document.getElementById("session-meta");
  if (!meta.length) {
    slot.replaceChildren();
    return;
  }
  const line = slot.querySelector(".session-meta") || el("span", "session-meta");
  line.replaceChildren(...meta);
  if (!line.isConnected) slot.append(line);
}

function showFigures(figures) {
  for (const [name, node] of Object.entries(counters)) {
    if (node && figures[name] !== undefined) node.textContent = String(figures[name]);
  }
  if (figures.tokens_title) document.getElementById("tokens-fact").title = figures.tokens_title;
  const updated = document.getElementById("updated-at");
  if (figures.updated_at && updated.dateTime !== figures.updated_at) {
    updated.dateTime = figures.updated_at;
    updated.textContent = when(figures.updated_at);
  }
  if (figures.status) showStatus(figures.status);
  const stale = figures.status === "stale";
  if (stale !== state.stale && !state.ended && indicator.dataset.state !== "reconnecting") {
    state.stale = stale;
    show(stale ? "stale" : "live");
  }
  showHeading(figures);
}

// One read of the header at a time; asks made meanwhile collapse into one more.
function refreshCounters() {
  if (state.header) {
    state.headerAgain = true;
    return state.header;
  }
  state.header = (async () => {
    do {
      state.headerAgain = false;
      try {
        const response = await fetch(transcript.dataset.countersUrl, { cache: "no-store" });
        if (!response.ok) throw new Error(`counters: HTTP ${response.status}`);
        showFigures(await response.json());
      } catch (err) {
        console.warn(err);
      }
    } while (state.headerAgain);
  })().finally(() => {
    state.header = null;
  });
  return state.header;
}

// Any event may come with a write the header shows (a title's row, "Updated"): read
// it again once the events have been coming for HEADER_MS, not once per event.
function counterSoon() {
  if (state.headerTimer) return;
  state.headerTimer = setTimeout(() => {
    state.headerTimer = null;
    refreshCounters();
  }, HEADER_MS);
}

// The evidence panel is server-rendered; a closed turn may have added commands to it.
async function refreshEvidence() {
  const slot = document.getElementById("evidence-slot");
  if (!slot) return;
  try {
    const response = await fetch(transcript.dataset.evidenceUrl, { cache: "no-store" });
    if (!response.ok) throw new Error(`evidence: HTTP ${response.status}`);
    const wasOpen = Boolean(document.getElementById("evidence")?.open);
    const template = document.createElement("template");
    template.innerHTML = await response.text(); // server-escaped HTML, inert
    slot.replaceChildren(template.content);
    const panel = document.getElementById("evidence");
    if (panel && wasOpen) panel.open = true;
  } catch (err) {
    console.warn(err);
  }
}

// --- The provisional bubble, built from DOM nodes and text nodes only ---

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.append(document.createTextNode(String(text)));
  return node;
}

function label(text) {
  return el("span", "label", text);
}

function preview(input) {
  if (!input || typeof input !== "object") return "";
  for (const key of PREVIEW_KEYS) {
    const value = input[key];
    if (typeof value === "string" && value.trim()) {
      const line = value.trim().split("\n")[0];
      return line.length <= PREVIEW_CHARS ? line : `${line.slice(0, PREVIEW_CHARS - 1)}…`;
    }
  }
  return "";
}

// A tool result's content as text: a string as it is, a list's text parts joined
// (anything else as JSON), as app/formats/tool_text.py does for the durable row.
function resultText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && part.type === "text" && typeof part.text === "string"
        ? part.text : JSON.stringify(part)))
      .join("\n");
  }
  return JSON.stringify(content);
}

function thinkingText(block) {
  for (const key of ["thinking", "reasoning", "text", "summary"]) {
    let value = block[key];
    if (Array.isArray(value)) value = value.map((p) => (p && p.text) || "").join("\n\n");
    if (typeof value === "string" && value.trim()) return value.trim();
  }
  return "";
}

function createOpenTurn(turnId, startedAt) {
  const bubble = el("article", "bubble role-assistant provisional fresh");
  bubble.id = "open-turn";
  bubble.dataset.turnId = turnId;
  bubble.setAttribute("aria-busy", "true");
  const head = el("header", "bubble-head");
  head.append(el("span", "role", "assistant"));
  const time = el("time", null, startedAt ? `${startedAt.slice(0, 19).replace("T", " ")} UTC` : "");
  if (startedAt) time.dateTime = startedAt;
  head.append(time);
  bubble.append(head);
  transcript.append(bubble);
  return bubble;
}

// The provisional bubble of `turnId`, made if need be (replacing one of another turn).
function ensureOpenTurn(turnId, startedAt) {
  const current = openTurn();
  if (current && current.dataset.turnId === turnId) return current;
  if (current) current.remove();
  return createOpenTurn(turnId, startedAt);
}

function blockNode(bubble, blockId) {
  for (const node of bubble.querySelectorAll("[data-block-id]")) {
    if (node.dataset.blockId === blockId) return node;
  }
  return null;
}

// The element a new block of `kind` is drawn in, placed in arrival order; a result
// goes under the call it answers when that call is in this bubble.
function startBlock(bubble, data) {
  let node;
  if (data.kind === "text") {
    node = el("div", "markdown streaming raw");
  } else if (data.kind in THINKING_LABELS) {
    node = el("details", "block thinking");
    const summary = el("summary");
    summary.append(label(THINKING_LABELS[data.kind]));
    node.append(summary, el("div", "thinking-text markdown raw"));
  } else if (data.kind === "tool_use") {
    node = el("details", "block tool-use");
    const summary = el("summary");
    summary.append(label("Tool"), " ", el("span", "tool-name", data.tool_name || "tool"));
    const pre = el("pre", "json");
    pre.append(el("code"));
    node.append(summary, pre);
    const call = el("div", "tool-call");
    call.dataset.callId = data.call_id || "";
    call.append(node);
    node.dataset.blockId = data.block_id;
    bubble.append(call);
    return node;
  } else if (data.kind === "tool_result") {
    node = el("details", "block tool-result"); // collapsed until its outcome is known
    const summary = el("summary");
    summary.append(label("Result"), " ", el("span", "tool-link", data.call_id || "tool"));
    node.append(summary, el("pre", "output"));
    node.dataset.blockId = data.block_id;
    const call = [...bubble.querySelectorAll(".tool-call")]
      .reverse().find((c) => data.call_id && c.dataset.callId === data.call_id);
    (call || bubble).append(node);
    return node;
  } else {
    node = el("details", "block other");
    const summary = el("summary");
    summary.append(label(data.kind || "block"));
    const pre = el("pre", "json");
    pre.append(el("code"));
    node.append(summary, pre);
  }
  node.dataset.blockId = data.block_id;
  bubble.append(node);
  return node;
}

// Where a block's streamed text goes.
function textTarget(node) {
  return node.querySelector(".thinking-text, pre.output, pre code") || node;
}

function appendText(node, text) {
  const target = textTarget(node);
  if (target.classList.contains("markdown")) {
    // The text so far; a node the server drew (a snapshot's) is known by its text only.
    sourceSoon(target, (sources.get(target) ?? target.textContent) + text, text);
  } else {
    target.append(document.createTextNode(text));
  }
}

function setText(target, text) {
  target.replaceChildren(document.createTextNode(text));
}

function clip(line) {
  return line.length <= RESULT_PREVIEW_CHARS ? line : `${line.slice(0, RESULT_PREVIEW_CHARS - 1)}…`;
}

// A result's first and last non-blank lines in its summary, as app/ui/transcript.py
// writes them for the closed bubble.
function showPreview(summary, text) {
  summary.querySelector(".result-preview")?.remove();
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  if (!lines.length) return;
  const shown = el("span", "result-preview");
  shown.append(el("code", "result-head", clip(lines[0])));
  if (lines.length > 1) {
    shown.append(el("span", "result-gap", " … "), el("code", "result-tail", clip(lines[lines.length - 1])));
  }
  summary.append(shown);
}

// --- Markdown of the open turn, rendered by the server as the rows are ---
//
// `sources` holds each text or thinking node's text so far; a node whose text changed
// is `dirty` until the server has rendered it. One render is in flight at a time, the
// next starts a frame after it ends and RENDER_MS after the one before: a long text
// streaming fast costs a render per RENDER_MS, never one per delta. A text longer
// than the server renders (RENDER_MAX_CHARS) is shown as the row will show it:
// preformatted, as it is.

const sources = new WeakMap();
const dirty = new Set();
const render = { pending: false, lastAt: -Infinity };

// `node`'s text is `text` now (`added` to what it was, when it grew).
function sourceSoon(node, text, added) {
  sources.set(node, text);
  if (node.classList.contains("raw")) { // nothing rendered yet: shown as it is
    if (added !== undefined) node.append(document.createTextNode(added));
    else setText(node, text);
  }
  dirty.add(node);
  renderSoon();
}

function renderSoon() {
  if (render.pending) return;
  render.pending = true;
  const wait = Math.max(0, render.lastAt + RENDER_MS - performance.now());
  setTimeout(() => requestAnimationFrame(renderDirty), wait);
}

async function renderDirty() {
  render.lastAt = performance.now();
  const nodes = [...dirty];
  dirty.clear();
  for (const node of nodes) {
    if (node.isConnected) await renderNode(node);
  }
  render.pending = false;
  if (dirty.size) renderSoon();
}

async function renderNode(node) {
  const text = sources.get(node) ?? "";
  const thinking = node.classList.contains("thinking-text");
  if (text.length > renderMaxChars) {
    node.replaceChildren(el("pre", "long-text", text));
    node.classList.remove("raw");
    return;
  }
  const answer = await post(transcript.dataset.markdownUrl,
                            { text, kind: thinking ? "thinking" : "text" });
  if (!node.isConnected) return;
  if (!answer.ok || typeof answer.data?.html !== "string") {
    console.warn(`markdown: ${answer.error}`); // shown as it is; the next change tries again
    node.classList.add("raw");
    setText(node, sources.get(node) ?? text);
    return;
  }
  const template = document.createElement("template");
  template.innerHTML = answer.data.html; // server-escaped HTML, inert
  node.replaceChildren(template.content);
  node.classList.remove("raw");
  if (thinking) showThinkingTitle(node.closest("details"), answer.data.title || "");
}

// A reasoning summary's bold first line is its block's title (app/ui/transcript.py).
function showThinkingTitle(details, title) {
  const summary = details.querySelector("summary");
  let shown = summary.querySelector(".thinking-title");
  if (!title) {
    shown?.remove();
    return;
  }
  if (!shown) {
    shown = el("span", "thinking-title");
    summary.append(" ", shown);
  }
  shown.textContent = title;
}

// A block's final state, from `block.completed`.
function completeBlock(node, kind, block) {
  if (kind === "text") {
    node.classList.remove("streaming");
    sourceSoon(node, typeof block.text === "string" ? block.text : "");
  } else if (kind in THINKING_LABELS) {
    sourceSoon(node.querySelector(".thinking-text"), thinkingText(block));
  } else if (kind === "tool_use") {
    const summary = node.querySelector("summary");
    summary.querySelector(".tool-name").textContent = String(block.name || "tool");
    summary.querySelector(".preview")?.remove();
    const shown = preview(block.input);
    if (shown) summary.append(" ", el("code", "preview", shown));
    setText(node.querySelector("pre code"), JSON.stringify(block.input ?? {}, null, 2));
    if (block.id) node.parentElement.dataset.callId = String(block.id);
  } else if (kind === "tool_result") {
    const text = resultText(block.content);
    if (block.is_error) {
      node.classList.add("is-error");
      node.querySelector(".label").textContent = "Error";
    }
    const call = node.closest(".tool-call");
    const name = call?.querySelector(".tool-name")?.textContent;
    const link = node.querySelector(".tool-link");
    link.textContent = `${name || "tool"}${block.tool_use_id ? ` · ${block.tool_use_id}` : ""}`;
    setText(node.querySelector("pre.output"), text);
    showPreview(node.querySelector("summary"), text);
    node.open = Boolean(block.is_error); // as the closed bubble: a failure open, others collapsed
  } else {
    setText(node.querySelector("pre code"), JSON.stringify(block, null, 2));
  }
}

// A provisional bubble the server rendered (first render, or fetched again) is a
// snapshot: it holds the turn's whole blocks, without their live block ids, and not
// the block still streaming. So in a snapshot, streamed text is drawn as it comes,
// and each `block.completed` fetches the server's bubble again (at most every
// RESYNC_MS), which replaces the snapshot wholesale: the page never guesses which of
// its blocks an event names, and any block drawn twice is gone at the next completion.
const RESYNC_MS = 250;

function resyncSoon() {
  if (state.resyncTimer) return;
  state.resyncTimer = setTimeout(() => {
    state.resyncTimer = null;
    resyncOpenTurn();
  }, RESYNC_MS);
}

function resyncOpenTurn() {
  if (state.resyncing) {
    state.resyncAgain = true;
    return state.resyncing;
  }
  state.resyncing = (async () => {
    do {
      state.resyncAgain = false;
      try {
        const response = await fetch(transcript.dataset.openTurnUrl, { cache: "no-store" });
        if (!response.ok) throw new Error(`open turn: HTTP ${response.status}`);
        const template = document.createElement("template");
        template.innerHTML = await response.text(); // server-escaped HTML, inert
        const fresh = template.content.querySelector("article#open-turn");
        openTurn()?.remove();
        if (fresh) {
          transcript.append(fresh);
          emptyNotice.hidden = true;
        }
      } catch (err) {
        console.warn(err);
      }
    } while (state.resyncAgain);
  })().finally(() => {
    state.resyncing = null;
  });
  return state.resyncing;
}

function onBlockEvent(name, data) {
  const follow = atBottom();
  const bubble = ensureOpenTurn(data.turn_id, null);
  if (name === "block.completed" && bubble.dataset.snapshot === "true") {
    resyncSoon();
    return;
  }
  let node = blockNode(bubble, data.block_id);
  if (!node) {
    // A block that started before this page looked: its streamed text is still shown.
    const block = data.block || {};
    const guessed = name === "block.delta";
    node = startBlock(bubble, { ...data, kind: guessed ? "text" : data.kind,
                                tool_name: data.tool_name ?? block.name,
                                call_id: data.call_id ?? (block.id || block.tool_use_id) });
    if (guessed) node.dataset.guessed = "true";
  }
  if (name === "block.delta") appendText(node, data.text || "");
  if (name === "block.completed") {
    if (node.dataset.guessed === "true" && data.kind !== "text") {
      // Its kind is known now: draw it as what it is, in the same place.
      const drawn = startBlock(bubble, data);
      const holder = data.kind === "tool_use" ? drawn.parentElement : drawn;
      if (data.kind !== "tool_result" || holder.parentElement === bubble) node.replaceWith(holder);
      else node.remove();
      node = drawn;
    }
    delete node.dataset.guessed;
    completeBlock(node, data.kind, data.block || {});
  }
  noticeContent(follow, bubble);
}

function onTurnCompleted(data) {
  refreshCounters();
  refreshEvidence();
  refresh().then(() => {
    const current = openTurn();
    if (current && current.dataset.turnId === data.turn_id) current.remove();
    if (!transcript.querySelector(ARRIVALS)) emptyNotice.hidden = false;
  });
}

const HANDLERS = {
  "turn.started": (data) => noticeContent(atBottom(), ensureOpenTurn(data.turn_id, data.started_at)),
  "block.started": (data) => onBlockEvent("block.started", data),
  "block.delta": (data) => onBlockEvent("block.delta", data),
  "block.completed": (data) => onBlockEvent("block.completed", data),
  usage: () => refreshCounters(),
  "turn.completed": onTurnCompleted,
  "session.completed": (data) => {
    if (data.status) showStatus(data.status);
    refreshCounters();
  },
  reset: () => {
    refresh();
    resyncOpenTurn();
    refreshCounters();
    refreshEvidence();
  },
};

function eventsUrl() {
  const url = new URL(transcript.dataset.eventsUrl, window.location.href);
  if (state.lastEventId) url.searchParams.set("after", state.lastEventId);
  return url;
}

function connect() {
  const source = new EventSource(eventsUrl());
  state.source = source;
  source.addEventListener("open", () => {
    show(state.stale ? "stale" : "live"); // connected; stale: no runner is writing
    refresh(); // catches up on anything written while disconnected
    control.resync();
  });
  for (const name of new Set([...Object.keys(HANDLERS), ...Object.keys(control.HANDLERS)])) {
    source.addEventListener(name, (event) => {
      state.lastEventId = event.lastEventId;
      counterSoon();
      const data = JSON.parse(event.data);
      HANDLERS[name]?.(data);
      control.HANDLERS[name]?.(data);
    });
  }
  source.addEventListener("end", (event) => {
    state.ended = true;
    source.close();
    show("ended");
    const { status } = JSON.parse(event.data);
    if (status) showStatus(status);
    if (status === "failed") showFailure();
    refresh().then(() => openTurn()?.remove());
    refreshCounters();
    refreshEvidence();
    control.readState();
  });
  source.addEventListener("error", () => {
    if (state.ended) return;
    show("reconnecting");
    // CONNECTING: the browser retries by itself, sending Last-Event-ID.
    // CLOSED: it gave up (e.g. an HTTP error); reopen from the last event id.
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, RETRY_MS);
  });
}

// A long transcript opens at its newest page; "Load older messages" puts the page
// before it above, keeping the reader's place.
async function loadOlder(event) {
  event.preventDefault();
  const link = event.currentTarget;
  if (link.dataset.loading) return;
  link.dataset.loading = "true";
  try {
    const response = await fetch(link.href, { cache: "no-store", headers: { Accept: "text/html" } });
    if (!response.ok) throw new Error(`older bubbles: HTTP ${response.status}`);
    const template = document.createElement("template");
    template.innerHTML = await response.text(); // server-escaped HTML, inert
    const page = document.scrollingElement;
    const fromBottom = page.scrollHeight - page.scrollTop;
    // Every message of this page is older than all shown: they go, in order, right
    // under the link.
    const shownFirst = link.nextSibling;
    for (const bubble of template.content.querySelectorAll(ARRIVALS)) {
      if (!document.getElementById(bubble.id)) transcript.insertBefore(bubble, shownFirst);
    }
    page.scrollTop = page.scrollHeight - fromBottom;
    const next = response.headers.get("X-Prev-Url");
    if (next) link.href = next;
    else link.remove();
  } catch (err) {
    console.warn(err);
  } finally {
    delete link.dataset.loading;
  }
}

document.getElementById("load-older")?.addEventListener("click", loadOlder);

control.start({ live: !state.ended, refreshTranscript: refresh });
if (!state.ended) {
  connect();
  setInterval(() => state.ended || refreshCounters(), STALE_CHECK_MS);
}
