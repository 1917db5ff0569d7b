// Drives a live session from its page (docs/viewer.md): the composer, the bubbles of
// prompts on their way, the permission cards, Interrupt and Stop.
//
// The server draws all of it as it is when the page loads (templates/ui/_control.html);
// this module keeps it so from /events (viewer.js passes the events on) and from
// GET /sessions/<id>/controls, read again while something sent is on its way and every
// few seconds otherwise, since a runner may come or go without a word on /events.
// Every write is a POST with the page's CSRF token in X-CSRF-Token. A prompt keeps the
// client_message_id it was first sent under, so a retry after a failed request finds the
// input the first one queued and never sends it twice. Everything this module writes
// itself is text nodes.

const POLL_BUSY_MS = 1000; // while a prompt or an answer is on its way
const POLL_IDLE_MS = 5000; // otherwise
const RESOLVED_SHOWN_MS = 8000; // a resolved card stays this long once the page is seen
const ALERT_TITLE = /^\(\d+\) Permission needed · /;
const NOTIFY_ASKED_KEY = "turnlog.notifications-asked";
const LABELS = { send: "Send", permissions: "Answers", interrupt: "Interrupt", stop: "Stop" };
const STATE_LABELS = {
  sending: "sending…", queued: "queued", delivered: "delivered", applied: "applied",
  failed: "failed", unsent: "not sent", refused: "refused",
};
const WAITING = new Set(["sending", "queued", "delivered", "applied"]);

const panel = document.getElementById("control");
const outbox = document.getElementById("outbox");
const cardsBox = document.getElementById("permissions");
const composer = document.getElementById("composer");
const textarea = document.getElementById("composer-text");
const note = document.getElementById("control-note");
const statusLine = document.getElementById("control-status");
const stopDialog = document.getElementById("stop-dialog");
const favicon = document.getElementById("favicon");
const baseTitle = document.title.replace(ALERT_TITLE, "");

const state = {
  refreshTranscript: async () => {},
  ended: true,
  timer: null,
  reading: null, // the controls read in flight, if any
  readAgain: false,
  cardsReading: null,
  cardsAgain: false,
  notices: new Map(), // request_id -> the Notification shown for it
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.append(document.createTextNode(String(text)));
  return node;
}

function when(iso) {
  return iso ? `${iso.slice(0, 19).replace("T", " ")} UTC` : "";
}

// --- Requests ---

async function post(url, body) {
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (panel.dataset.csrfToken) headers["X-CSRF-Token"] = panel.dataset.csrfToken;
  let response;
  try {
    response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body),
                                  cache: "no-store" });
  } catch (err) {
    return { ok: false, status: 0, data: null, error: "the request failed (no answer)" };
  }
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    data = null;
  }
  const error = data?.error?.message || `HTTP ${response.status}`;
  return { ok: response.ok, status: response.status, data, error };
}

function retryable(status) {
  return status === 0 || status === 429 || status >= 500;
}

function newClientId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // (randomUUID needs a secure context; getRandomValues does not)
  return [...crypto.getRandomValues(new Uint8Array(16))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

function say(text) {
  statusLine.textContent = text;
}

// --- The bubbles of prompts on their way ---

function outgoing() {
  return [...outbox.querySelectorAll("article.outgoing")];
}

function outgoingBubble(clientId, content) {
  const bubble = el("article", "bubble role-user outgoing fresh");
  bubble.dataset.clientId = clientId;
  const head = el("header", "bubble-head");
  head.append(el("span", "role", "user"), el("span", "input-state"));
  const problem = el("p", "input-problem");
  problem.hidden = true;
  const action = el("button", "input-action");
  action.type = "button";
  action.hidden = true;
  bubble.append(head, el("div", "input-text", content), problem, action);
  return bubble;
}

// `state` is an input's (queued, delivered, applied, failed) or the page's own:
// sending, unsent (the request failed: Retry), refused (the server said no: Edit).
function showInputState(bubble, inputState, reason) {
  bubble.dataset.state = inputState;
  bubble.querySelector(".input-state").textContent = STATE_LABELS[inputState] || inputState;
  const problem = bubble.querySelector(".input-problem");
  problem.textContent = reason || "";
  problem.hidden = !reason;
  const action = bubble.querySelector(".input-action");
  action.hidden = !(inputState === "unsent" || inputState === "refused");
  action.textContent = inputState === "unsent" ? "Retry" : "Edit";
}

async function deliver(bubble) {
  showInputState(bubble, "sending");
  const sent = await post(panel.dataset.messagesUrl, {
    content: bubble.querySelector(".input-text").textContent,
    client_message_id: bubble.dataset.clientId,
  });
  if (sent.ok) {
    const { input } = sent.data;
    bubble.dataset.inputId = String(input.input_id);
    if (bubble.dataset.state === "sending") showInputState(bubble, input.state);
  } else {
    showInputState(bubble, retryable(sent.status) ? "unsent" : "refused", sent.error);
  }
  readSoon();
}

function sendPrompt(content) {
  const bubble = outgoingBubble(newClientId(), content);
  outbox.append(bubble);
  document.getElementById("transcript-empty").hidden = true;
  bubble.scrollIntoView({ block: "end" });
  deliver(bubble);
}

function onOutgoingAction(event) {
  const button = event.target.closest("button.input-action");
  if (!button) return;
  const bubble = button.closest("article.outgoing");
  if (bubble.dataset.state === "unsent") {
    deliver(bubble); // the same client_message_id: the server queues it at most once
  } else {
    textarea.value = bubble.querySelector(".input-text").textContent;
    bubble.remove();
    textarea.focus();
  }
}

function rowOf(uuid) {
  return [...document.querySelectorAll("#transcript article.bubble[data-input-uuid]")]
    .find((row) => row.dataset.inputUuid === uuid) || null;
}

// The transcript now holds these bubbles (viewer.js): a prompt's row replaces its
// sent bubble.
export function bubblesAdded(nodes) {
  for (const node of nodes) {
    const uuid = node.dataset.inputUuid;
    if (!uuid) continue;
    outgoing().find((b) => b.dataset.uuid === uuid)?.remove();
  }
}

// Inputs the server still lists move on; one it no longer lists was applied (its row
// is written), so the transcript is read again and the bubble gives way to the row.
function showInputs(inputs) {
  const byClient = new Map(inputs.map((input) => [input.client_message_id, input]));
  const known = new Set(outgoing().map((b) => b.dataset.clientId));
  for (const input of inputs) { // sent from another tab, the terminal or the API
    if (known.has(input.client_message_id) || rowOf(input.uuid)) continue;
    const bubble = outgoingBubble(input.client_message_id, input.content);
    bubble.dataset.inputId = String(input.input_id);
    outbox.append(bubble);
  }
  let applied = false;
  for (const bubble of outgoing()) {
    const input = byClient.get(bubble.dataset.clientId);
    if (input) {
      bubble.dataset.inputId = String(input.input_id);
      bubble.dataset.uuid = input.uuid;
      if (rowOf(input.uuid)) bubble.remove();
      else if (bubble.dataset.state !== "sending") showInputState(bubble, input.state, input.reason);
    } else if (bubble.dataset.inputId && bubble.dataset.state !== "applied") {
      showInputState(bubble, "applied");
      applied = true;
    }
  }
  if (applied) {
    state.refreshTranscript().then(() => {
      for (const bubble of outgoing()) if (bubble.dataset.state === "applied") bubble.remove();
    });
  }
}

// --- Buttons and why they are off ---

function noteText(reasons, stoppedBy) {
  const entries = Object.entries(reasons || {});
  let text = "";
  const distinct = new Set(entries.map(([, why]) => why));
  if (distinct.size === 1 && entries.length === Object.keys(LABELS).length) {
    text = `Unavailable: ${entries[0][1]}.`;
  } else if (entries.length) {
    text = `${entries.map(([name, why]) => `${LABELS[name] || name}: ${why}`).join("; ")}.`;
  }
  return stoppedBy ? `${text} Stopped by ${stoppedBy}.`.trim() : text;
}

function enable(node, on, reason) {
  node.disabled = !on;
  if (on) node.removeAttribute("title");
  else node.title = reason || "";
}

function showControls(controls, stoppedBy) {
  const reasons = controls.reasons || {};
  for (const button of composer.querySelectorAll("button[data-control]")) {
    const name = button.dataset.control;
    enable(button, Boolean(controls[name]), reasons[name]);
  }
  textarea.disabled = !controls.send;
  for (const card of cardsBox.querySelectorAll('article.permission-card[data-state="pending"]')) {
    for (const input of card.querySelectorAll("button, input")) {
      enable(input, Boolean(controls.permissions), reasons.permissions);
    }
  }
  note.textContent = noteText(reasons, stoppedBy);
  note.hidden = !note.textContent;
}

// --- Reading the controls' state ---

function busy() {
  return outgoing().some((b) => WAITING.has(b.dataset.state))
    || cardsBox.querySelector('article.permission-card[data-answering="true"]') !== null;
}

function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = null;
  if (!state.ended) state.timer = setTimeout(readState, ms);
}

// At once, also after the session ended (one last read shows everything off).
function readSoon() {
  clearTimeout(state.timer);
  state.timer = setTimeout(readState, 0);
}

export function readState() {
  if (state.reading) {
    state.readAgain = true;
    return state.reading;
  }
  state.reading = (async () => {
    do {
      state.readAgain = false;
      try {
        const response = await fetch(panel.dataset.controlsUrl,
                                     { cache: "no-store", headers: { Accept: "application/json" } });
        if (!response.ok) throw new Error(`controls: HTTP ${response.status}`);
        const view = await response.json();
        showControls(view.controls || {}, view.stopped_by);
        showInputs(view.inputs || []);
        if (view.status !== "running") state.ended = true;
        const pending = new Set(view.pending_permissions || []);
        const shown = pendingCards().map((c) => c.dataset.requestId);
        if (shown.some((id) => !pending.has(id)) || [...pending].some((id) => !shown.includes(id))) {
          readCards();
        }
      } catch (err) {
        console.warn(err);
      }
    } while (state.readAgain);
  })().finally(() => {
    state.reading = null;
    schedule(busy() ? POLL_BUSY_MS : POLL_IDLE_MS);
  });
  return state.reading;
}

// --- Permission cards ---

function pendingCards() {
  return [...cardsBox.querySelectorAll('article.permission-card[data-state="pending"]')];
}

function cardOf(requestId) {
  return [...cardsBox.querySelectorAll("article.permission-card")]
    .find((card) => card.dataset.requestId === requestId) || null;
}

// The server's cards of the requests pending now: those this page lacks are added; one
// shown as pending that the server no longer lists was resolved unseen (its
// permission.resolved event, when it comes, says how).
function readCards() {
  if (state.cardsReading) {
    state.cardsAgain = true;
    return state.cardsReading;
  }
  state.cardsReading = (async () => {
    do {
      state.cardsAgain = false;
      try {
        const response = await fetch(panel.dataset.permissionsUrl, { cache: "no-store" });
        if (!response.ok) throw new Error(`permissions: HTTP ${response.status}`);
        const template = document.createElement("template");
        template.innerHTML = await response.text(); // server-escaped HTML, inert
        const fresh = [...template.content.querySelectorAll("article.permission-card")];
        const ids = new Set(fresh.map((card) => card.dataset.requestId));
        for (const card of fresh) {
          if (!cardOf(card.dataset.requestId)) {
            card.classList.add("fresh");
            cardsBox.append(card);
          }
        }
        for (const card of pendingCards()) {
          if (!ids.has(card.dataset.requestId)) showResolved(card, { state: "resolved" });
        }
      } catch (err) {
        console.warn(err);
      }
    } while (state.cardsAgain);
  })().finally(() => {
    state.cardsReading = null;
    showAlert();
  });
  return state.cardsReading;
}

function outcomeText(resolution) {
  const by = resolution.resolved_by ? ` by ${resolution.resolved_by}` : "";
  const at = resolution.resolved_at ? ` at ${when(resolution.resolved_at)}` : "";
  const message = resolution.message ? `: “${resolution.message}”` : "";
  switch (resolution.state) {
    case "allowed": return `Allowed${by}${at}.`;
    case "denied": return `Denied${by}${at}${message}.`;
    case "expired": return `Denied: no one answered in time${at}.`;
    case "cancelled": return `Withdrawn by the agent${at}.`;
    default: return "No longer pending.";
  }
}

// A resolved card shows how, by whom, then goes once the reader had time to see it.
// ("resolved" is the page's guess when the server no longer lists a request; the
// permission.resolved event that follows says how.)
function showResolved(card, resolution) {
  const guessed = card.dataset.state === "resolved";
  if (card.dataset.state !== "pending" && !guessed) return;
  card.dataset.state = resolution.state;
  delete card.dataset.answering;
  card.querySelector(".permission-actions")?.remove();
  const outcome = card.querySelector(".permission-outcome");
  outcome.textContent = outcomeText(resolution);
  outcome.hidden = false;
  state.notices.get(card.dataset.requestId)?.close();
  state.notices.delete(card.dataset.requestId);
  showAlert();
  if (guessed) return; // its removal is on its way
  const clear = () => setTimeout(() => card.remove(), RESOLVED_SHOWN_MS);
  if (!document.hidden) clear();
  else document.addEventListener("visibilitychange", clear, { once: true });
}

async function answer(card, behavior) {
  if (card.dataset.answering === "true") return;
  card.dataset.answering = "true";
  const buttons = [...card.querySelectorAll(".permission-actions button, .permission-actions input")];
  for (const node of buttons) node.disabled = true;
  const body = { behavior };
  const message = card.querySelector(".deny-message")?.value.trim();
  if (behavior === "deny" && message) body.message = message;
  const answered = await post(card.dataset.answerUrl, body);
  const outcome = card.querySelector(".permission-outcome");
  if (answered.ok) {
    showResolved(card, answered.data.permission);
  } else if (answered.data?.error?.code === "already_resolved") {
    showResolved(card, answered.data.error.details.permission); // someone else was first
  } else {
    delete card.dataset.answering;
    for (const node of buttons) node.disabled = false;
    outcome.textContent = `Not answered: ${answered.error}`;
    outcome.hidden = false;
  }
}

function onCardClick(event) {
  const button = event.target.closest("button[data-behavior]");
  if (button) answer(button.closest("article.permission-card"), button.dataset.behavior);
}

function onCardKey(event) {
  // Enter in a deny message denies with it.
  if (event.key === "Enter" && event.target.classList.contains("deny-message")) {
    event.preventDefault();
    answer(event.target.closest("article.permission-card"), "deny");
  }
}

// --- Telling a reader in another tab: title, icon, notification ---

function showAlert() {
  const count = pendingCards().length;
  document.title = count ? `(${count}) Permission needed · ${baseTitle}` : baseTitle;
  favicon.href = count ? panel.dataset.faviconAlert : panel.dataset.favicon;
}

function notificationsAsked() {
  try {
    return window.localStorage.getItem(NOTIFY_ASKED_KEY) === "1";
  } catch (err) {
    return false;
  }
}

// Offered once: the browser asks only on a click, and never again after an answer.
function offerNotifications() {
  const button = document.getElementById("notify");
  if (!("Notification" in window) || Notification.permission !== "default" || notificationsAsked()) {
    return;
  }
  button.hidden = false;
  button.addEventListener("click", async () => {
    button.hidden = true;
    try {
      window.localStorage.setItem(NOTIFY_ASKED_KEY, "1");
    } catch (err) {
      // (storage refused: the browser's own answer still keeps it from asking again)
    }
    await Notification.requestPermission();
  }, { once: true });
}

function notify(data) {
  if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
  const input = data.input || {};
  const shown = typeof input.command === "string" ? input.command : JSON.stringify(input);
  const notice = new Notification(`Permission needed: ${data.tool_name}`,
                                  { body: `${shown.slice(0, 200)}\n${baseTitle}`,
                                    tag: `turnlog-${data.request_id}` });
  notice.addEventListener("click", () => {
    window.focus();
    notice.close();
  });
  state.notices.set(data.request_id, notice);
}

// --- Interrupt and Stop ---

async function control(kind, url, done) {
  say(`${LABELS[kind]}…`);
  const queued = await post(url, {});
  if (queued.ok) {
    say(queued.data.runner_attached ? done : `${done} No runner is attached: it waits for one.`);
  } else {
    say(`${LABELS[kind]} failed: ${queued.error}`);
  }
  readSoon();
}

function wireButtons() {
  document.getElementById("control-interrupt").addEventListener("click", () => {
    control("interrupt", panel.dataset.interruptUrl, "Interrupt sent: the agent's turn stops.");
  });
  document.getElementById("control-stop").addEventListener("click", () => stopDialog.showModal());
  document.getElementById("stop-cancel").addEventListener("click", () => stopDialog.close());
  document.getElementById("stop-confirm").addEventListener("click", () => {
    stopDialog.close();
    control("stop", panel.dataset.stopUrl, "Stop sent: the agent is being ended.");
  });
}

function wireComposer() {
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = textarea.value;
    if (!content.trim() || textarea.disabled) return;
    textarea.value = "";
    sendPrompt(content);
  });
  textarea.addEventListener("keydown", (event) => {
    // Enter sends, Shift+Enter is a new line; Enter that ends an IME composition is neither.
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    composer.requestSubmit();
  });
}

// --- What viewer.js calls ---

// Events of /events this module follows (viewer.js calls them beside its own).
export const HANDLERS = {
  "permission.requested": (data) => {
    readCards();
    notify(data);
  },
  "permission.resolved": (data) => {
    const card = cardOf(data.request_id);
    if (card) showResolved(card, data);
  },
  // A prompt's row is written just before the turn that answers it starts.
  "turn.started": () => {
    if (outgoing().length) readSoon();
  },
  "turn.completed": () => readSoon(),
  "session.completed": () => readSoon(),
  reset: () => {
    readCards();
    readSoon();
  },
};

// On every (re)connect: whatever changed meanwhile.
export function resync() {
  readCards();
  readSoon();
}

export function start({ live, refreshTranscript }) {
  if (!panel) return;
  state.refreshTranscript = refreshTranscript;
  state.ended = !live;
  outbox.addEventListener("click", onOutgoingAction);
  cardsBox.addEventListener("click", onCardClick);
  cardsBox.addEventListener("keydown", onCardKey);
  wireComposer();
  wireButtons();
  for (const bubble of outgoing()) showInputState(bubble, bubble.dataset.state,
                                                  bubble.querySelector(".input-problem").textContent);
  showAlert();
  if (live) {
    offerNotifications();
    schedule(POLL_IDLE_MS);
  }
}
