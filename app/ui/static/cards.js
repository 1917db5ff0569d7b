// The permission cards of the session page (docs/viewer.md): Allow, or Deny with a
// message; how each request was resolved, by whom, wherever it was answered; the
// page's title and icon while one is pending, and a notification for a reader in
// another tab. The server draws the cards (templates/ui/_permissions.html); this module
// adds the ones /events announces and answers them, writing text nodes only.

import { post } from "./request.js";

const RESOLVED_SHOWN_MS = 8000; // a resolved card stays this long once the page is seen
const ALERT_TITLE = /^\(\d+\) Permission needed · /;
const NOTIFY_ASKED_KEY = "turnlog.notifications-asked";

const panel = document.getElementById("control");
const cardsBox = document.getElementById("permissions");
const favicon = document.getElementById("favicon");
let baseTitle = document.title.replace(ALERT_TITLE, "");
const TITLE_END = " · turnlog"; // templates/ui/session.html

const state = {
  reading: null, // the cards read in flight, if any
  again: false,
  notices: new Map(), // request_id -> the Notification shown for it
};

function when(iso) {
  return iso ? `${iso.slice(0, 19).replace("T", " ")} UTC` : "";
}

export function pendingCards() {
  return [...cardsBox.querySelectorAll('article.permission-card[data-state="pending"]')];
}

export function cardOf(requestId) {
  return [...cardsBox.querySelectorAll("article.permission-card")]
    .find((card) => card.dataset.requestId === requestId) || null;
}

// The server's cards of the requests pending now: those this page lacks are added; one
// shown as pending that the server no longer lists was resolved unseen (its
// permission.resolved event, when it comes, says how).
export function readCards() {
  if (state.reading) {
    state.again = true;
    return state.reading;
  }
  state.reading = (async () => {
    do {
      state.again = false;
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
    } while (state.again);
  })().finally(() => {
    state.reading = null;
    showAlert();
  });
  return state.reading;
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
export function showResolved(card, resolution) {
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

// The session's title changed (viewer.js reads it again while the session runs).
export function retitle(title) {
  if (baseTitle === `${title}${TITLE_END}`) return;
  baseTitle = `${title}${TITLE_END}`;
  showAlert();
}

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
export function offerNotifications() {
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

export function notify(data) {
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

// Whether an answer of this page is on its way.
export function answering() {
  return cardsBox.querySelector('article.permission-card[data-answering="true"]') !== null;
}

// Allow and Deny on or off as the session's `controls` say, with the reason.
export function enableAnswers(on, reason) {
  for (const card of pendingCards()) {
    for (const node of card.querySelectorAll(".permission-actions button, .permission-actions input")) {
      node.disabled = !on;
      if (on) node.removeAttribute("title");
      else node.title = reason || "";
    }
  }
}

export function start() {
  cardsBox.addEventListener("click", onCardClick);
  cardsBox.addEventListener("keydown", onCardKey);
  showAlert();
}
