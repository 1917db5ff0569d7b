// Drives a live session from its page (docs/viewer.md): the composer, the bubbles of
// prompts on their way, Interrupt and Stop, and each control off with its reason; the
// permission cards are cards.js's.
//
// The server draws all of it as it is when the page loads (templates/ui/_control.html);
// this module keeps it so from /events (viewer.js passes the events on) and from
// GET /sessions/<id>/controls, read again while something sent is on its way and every
// few seconds otherwise, since a runner may come or go without a word on /events.
// Every write is a POST with the page's CSRF token (request.js). A prompt keeps the
// client_message_id it was first sent under, so a retry after a failed request finds the
// input the first one queued and never sends it twice. Everything this module writes
// itself is text nodes.

import * as cards from "./cards.js";
import { post } from "./request.js";
import { retryable } from "./request.js";

const POLL_BUSY_MS = 1000; // while a prompt or an answer is on its way
const POLL_IDLE_MS = 5000; // otherwise
const LABELS = { interrupt: "Interrupt", stop: "Stop" };
const STATE_LABELS = {
  sending: "sending…", queued: "queued", delivered: "delivered", applied: "applied",
  failed: "failed", unsent: "not sent", refused: "refused",
};
const WAITING = new Set(["sending", "queued", "delivered", "applied"]);

const panel = document.getElementById("control");
const outbox = document.getElementById("outbox");
const composer = document.getElementById("composer");
const textarea = document.getElementById("composer-text");
const note = document.getElementById("control-note");
const statusLine = document.getElementById("control-status");
const stopDialog = document.getElementById("stop-dialog");

const state = {
  refreshTranscript: async () => {},
  ended: true,
  timer: null,
  reading: null, // the controls read in flight, if any
  readAgain: false,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.append(document.createTextNode(String(text)));
  return node;
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

function enable(node, on, reason) {
  node.disabled = !on;
  if (on) node.removeAttribute("title");
  else node.title = reason || "";
}

// `note` is the server's line saying what is off and why (app/ui/controls.py).
function showControls(controls, noteLine) {
  const reasons = controls.reasons || {};
  for (const button of composer.querySelectorAll("button[data-control]")) {
    const name = button.dataset.control;
    enable(button, Boolean(controls[name]), reasons[name]);
  }
  textarea.disabled = !controls.send;
  cards.enableAnswers(Boolean(controls.permissions), reasons.permissions);
  note.textContent = noteLine || "";
  note.hidden = !note.textContent;
}

// --- Reading the controls' state ---

function busy() {
  return outgoing().some((b) => WAITING.has(b.dataset.state))
    || cards.answering();
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
        showControls(view.controls || {}, view.note);
        showInputs(view.inputs || []);
        if (view.status !== "running") state.ended = true;
        const pending = new Set(view.pending_permissions || []);
        const shown = cards.pendingCards().map((c) => c.dataset.requestId);
        if (shown.some((id) => !pending.has(id)) || [...pending].some((id) => !shown.includes(id))) {
          cards.readCards();
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
    cards.readCards();
    cards.notify(data);
  },
  "permission.resolved": (data) => {
    const card = cards.cardOf(data.request_id);
    if (card) cards.showResolved(card, data);
  },
  // A prompt's row is written just before the turn that answers it starts.
  "turn.started": () => {
    if (outgoing().length) readSoon();
  },
  "turn.completed": () => readSoon(),
  "session.completed": () => readSoon(),
  reset: () => {
    cards.readCards();
    readSoon();
  },
};

// On every (re)connect: whatever changed meanwhile.
export function resync() {
  cards.readCards();
  readSoon();
}

export function start({ live, refreshTranscript }) {
  if (!panel) return;
  state.refreshTranscript = refreshTranscript;
  state.ended = !live;
  outbox.addEventListener("click", onOutgoingAction);
  wireComposer();
  wireButtons();
  for (const bubble of outgoing()) showInputState(bubble, bubble.dataset.state,
                                                  bubble.querySelector(".input-problem").textContent);
  cards.start();
  if (live) {
    cards.offerNotifications();
    schedule(POLL_IDLE_MS);
  }
}
