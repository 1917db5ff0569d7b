// The session page's writes (control.js, cards.js): a JSON POST carrying the page's
// CSRF token in X-CSRF-Token, answered as {ok, status, data, error}, never thrown.

const panel = document.getElementById("control");

export async function post(url, body) {
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

// Worth sending again: no answer, throttled, or the server (or a proxy) failed.
export function retryable(status) {
  return status === 0 || status === 429 || status >= 500;
}
