"""What the terminal's driving commands (`turnlog send`, `approve`, `interrupt`, `stop`,
`attach`) share: which failed requests they try again, and the one line that explains
a refusal.

A request is repeated only when repeating it cannot do the thing twice. A send carries
its `client_message_id`, so the server finds the input queued by an earlier try; an
answer to a permission cannot win twice (the first answer wins); a second stop is
acknowledged `failed` by the runner. An interrupt queued twice could cut the next turn
short, so it is repeated only when the server certainly did not take the first try.
"""
import time
from dataclasses import dataclass

from app.client.backoff import Backoff
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable

RETRY_SECONDS = 30.0
USER_TOKEN_HINT = ("these commands need a user token (tlu_..., the session owner's or an"
                   " admin's: turnlog create-user-token --user U)")


def retryable(error, repeatable):
    """Whether to try again after `error`. Not reached (no connection), 503 (busy) and
    429 (slow down): the server did not act, so any request may go again. A 5xx, or no
    answer after the request went out: the server may have acted, so only a
    `repeatable` request goes again."""
    if isinstance(error, Unreachable):
        return repeatable or not error.reached
    if isinstance(error, ApiError):
        if error.status in (429, 503):
            return True
        return repeatable and error.status >= 500
    return False


@dataclass
class Tries:
    """What happened before the last try: how many failed, and whether one may have
    reached the server (then a 409 can be this command's own earlier success)."""

    failed: int = 0
    maybe_acted: bool = False


def with_retries(call, repeatable, *, budget=RETRY_SECONDS, on_retry=None, tries=None,
                 sleep=time.sleep, clock=time.monotonic, backoff=None):
    """`call()`, tried again (backoff, at least Retry-After) while the failure is
    `retryable` and `budget` seconds are not spent; the last failure is raised.
    `on_retry(error, delay)` is told of each wait."""
    backoff = backoff or Backoff()
    tries = tries if tries is not None else Tries()
    deadline = clock() + budget
    while True:
        try:
            return call()
        except (ApiError, Unreachable) as error:
            if not retryable(error, repeatable):
                raise
            delay = backoff.next_delay(getattr(error, "retry_after", None))
            if clock() + delay > deadline:
                raise
            tries.failed += 1
            tries.maybe_acted = tries.maybe_acted or _maybe_acted(error)
            if on_retry is not None:
                on_retry(error, delay)
            sleep(delay)


def answer_once(client, session_id, request_id, behavior, message=None, *, budget=RETRY_SECONDS,
                on_retry=None):
    """Answer a permission, repeating as `with_retries` does: `{"permission"}`. When a
    repeat finds it resolved as asked after a try that may have reached the server, that
    try is taken to be the one that won (the answer that won is returned); any other
    already_resolved is raised, naming the winner."""
    tries = Tries()
    try:
        return with_retries(
            lambda: client.answer_permission(session_id, request_id, behavior, message),
            True, budget=budget, on_retry=on_retry, tries=tries)
    except ApiError as error:
        won = error.details.get("permission") or {}
        wanted = "allowed" if behavior == "allow" else "denied"
        if error.code == "already_resolved" and tries.maybe_acted and won.get("state") == wanted:
            return {"permission": won}
        raise


def _maybe_acted(error):
    if isinstance(error, Unreachable):
        return error.reached
    return error.status >= 500 and error.status != 503


def explain(error, session_id):
    """One line saying why a driving request failed and, where there is one, what to do."""
    if isinstance(error, (Unreachable, Misconfigured)):
        return str(error)  # it names the server and the request (Misconfigured: the fix)
    handler = _BY_CODE.get(error.code) or _BY_STATUS.get(error.status)
    if handler is not None:
        return handler(error, session_id)
    return f"{error.status} {error.code}: {error.message}"


def resolution_text(permission):
    """How a permission was resolved, in words: `allowed by alice at T`, `expired
    (denied: no one answered in time)`, `cancelled (the agent withdrew it)`."""
    state = permission.get("state")
    by, at = permission.get("resolved_by"), permission.get("resolved_at")
    if state == "expired":
        text = "expired (denied: no one answered in time)"
    elif state == "cancelled":
        text = "cancelled (the agent withdrew it)"
    else:
        text = f"{state}{f' by {by}' if by else ''}"
    if at:
        text += f" at {at}"
    message = permission.get("message")
    if message and state in ("allowed", "denied"):
        text += f" ({message})"
    return text


def _already_resolved(error, _session_id):
    won = error.details.get("permission") or {}
    return (f"permission {won.get('request_id', '')} was answered before, and the first answer"
            f" wins: {resolution_text(won)}")


def _not_supported(error, session_id):
    offered = error.details.get("controls")
    more = f" (it offers: {', '.join(offered) or 'nothing'})" if offered is not None else ""
    return f"session {session_id} cannot take this now: {error.message}{more}"


def _completed(error, session_id):
    status = error.details.get("status", "completed")
    return f"session {session_id} is {status}: it takes no more prompts or commands"


def _not_found(error, session_id):
    if error.code == "permission_not_found":
        return f"{error.message} (see the pending ones with turnlog attach {session_id})"
    if error.code != "session_not_found":  # no such route: an older server, say
        return f"{error.status} {error.code}: {error.message}"
    return (f"no session {session_id} for this token (it does not exist, or it is another"
            " user's: a user token sees its own sessions, an admin's all)")


def _unauthorized(error, _session_id):
    return f"the server refused the token ({error.code}: {error.message}); {USER_TOKEN_HINT}"


def _forbidden(error, _session_id):
    kind = error.details.get("token_kind")
    which = f"a {kind} token" if kind else "this token"
    return (f"{which} cannot drive a session (an agent must not prompt or approve itself);"
            f" {USER_TOKEN_HINT}")


def _too_large(error, _session_id):
    return f"the prompt is too large: {error.message}"


_BY_CODE = {"already_resolved": _already_resolved, "not_supported": _not_supported,
            "session_completed": _completed, "input_too_large": _too_large}
_BY_STATUS = {401: _unauthorized, 403: _forbidden, 404: _not_found, 413: _too_large}
