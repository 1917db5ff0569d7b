// Follows a session's live output (SSE) and appends the transcript's new bubbles.
//
// The stream only says *when* to look: on each `output` that closes a turn (a Claude
// `result` line) or writes a system row, on `reset`, on `end`, and on every (re)connect,
// the page fetches the server-rendered bubbles after the last message it has read.
// Bubbles are HTML that the server escaped; each carries its message id, so a bubble
// that is already on the page is never added twice.

const RETRY_MS = 3000; // wait before reopening a stream the browser gave up on
const NEAR_BOTTOM_PX = 160; // follow new bubbles only when the reader is at the end

const transcript = document.getElementById("transcript");
const indicator = document.getElementById("connection");
const emptyNotice = document.getElementById("transcript-empty");
const statusBadge = document.getElementById("session-status");

const state = {
  lastMessageId: transcript.dataset.lastMessageId || "0", // a string: ids are 64-bit
  lastEventId: "",
  ended: transcript.dataset.live !== "true",
  source: null,
  fetching: null, // the refresh in flight, if any
  again: false, // another refresh was asked for while one was in flight
};

function show(connection) {
  indicator.dataset.state = connection;
  indicator.textContent = connection;
}

function atBottom() {
  const page = document.scrollingElement;
  return page.scrollHeight - page.scrollTop - page.clientHeight < NEAR_BOTTOM_PX;
}

function append(html) {
  const template = document.createElement("template");
  template.innerHTML = html; // inert: nothing in a template runs or loads
  const follow = atBottom();
  let added = null;
  for (const bubble of template.content.querySelectorAll("article.bubble")) {
    if (document.getElementById(bubble.id)) continue;
    bubble.classList.add("fresh");
    transcript.append(bubble);
    added = bubble;
  }
  if (added) {
    emptyNotice.hidden = true;
    if (follow) added.scrollIntoView({ block: "end" });
  }
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

// Line types after which some provider may have written a row: Claude's result
// and system lines, Codex's turn ends and notes, Gemini's init, result and error.
const ROW_WRITING_TYPES = new Set([
  "result", "system", "turn.completed", "turn.failed", "thread.started", "error", "init",
  "item.completed",
]);

// True for an output event after which the transcript may hold a new row.
function writesRow(data) {
  if (data.stream === "system") return true;
  if (data.stream !== "stdout") return false;
  try {
    const line = JSON.parse(data.payload);
    return line !== null && ROW_WRITING_TYPES.has(line.type);
  } catch {
    return false;
  }
}

function streamUrl() {
  const url = new URL(transcript.dataset.streamUrl, window.location.href);
  if (state.lastEventId) url.searchParams.set("after", state.lastEventId);
  return url;
}

function connect() {
  const source = new EventSource(streamUrl());
  state.source = source;
  source.addEventListener("open", () => {
    show("live");
    refresh(); // catches up on anything written while disconnected
  });
  source.addEventListener("output", (event) => {
    state.lastEventId = event.lastEventId;
    if (writesRow(JSON.parse(event.data))) refresh();
  });
  source.addEventListener("reset", (event) => {
    state.lastEventId = event.lastEventId;
    refresh();
  });
  source.addEventListener("end", (event) => {
    state.ended = true;
    source.close();
    show("ended");
    const { status } = JSON.parse(event.data);
    statusBadge.textContent = status;
    statusBadge.className = `badge status-${status}`;
    refresh();
  });
  source.addEventListener("error", () => {
    if (state.ended) return;
    show("reconnecting");
    // CONNECTING: the browser retries by itself, sending Last-Event-ID.
    // CLOSED: it gave up (e.g. an HTTP error); reopen from the last event id.
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, RETRY_MS);
  });
}

if (!state.ended) connect();
