"""The session header's figures and heading, the same in the page, in its counters JSON
and (the token figure) in the session list. Pure.

A session has two token counts that the contract keeps apart: what the runner's usage
reports counted (`total_tokens`) and what the agent reported for its closed turns
(`transcript_usage`). The viewer shows one figure, the same everywhere (token_figure):
the usage reports' count when any came, else the turns' own. Both count all input,
read from the cache or not, and output: the runner reports Claude's input with its
cache reads and writes, and Codex's and Gemini's input holds its cached part.
"""

# What the one token figure counts, by its source: the figure's tooltip.
TOKEN_SOURCES = {
    "reported": "input (cached or not) and output tokens counted by the runner's usage reports",
    "transcript": "input (cached or not) and output tokens the agent reported for its"
                  " closed turns (no usage report came)",
}


def token_figure(session):
    """(tokens, source): the session's one token figure and where it comes from.

    The usage reports are the runner's own count, made for this purpose and posted
    as the agent prints them; a session without any (a demo, a transcript posted line
    by line, a runner that reports none) still has what its turns reported, summed
    as the reports sum them (cache reads and writes are input).
    """
    if session.total_tokens > 0:
        return session.total_tokens, "reported"
    usage = session.transcript_usage
    return (usage["input_tokens"] + usage["cache_read_input_tokens"]
            + usage["cache_creation_input_tokens"] + usage["output_tokens"]), "transcript"


def header_figures(session):
    """{name: figure} of the header's counters (the ones viewer.js updates)."""
    tokens, source = token_figure(session)
    return {
        "message_count": session.message_count,
        "conversation_turn_count": session.conversation_turn_count,
        "tokens": tokens,
        "tokens_title": TOKEN_SOURCES[source],
        "cost": cost_text(session.transcript_usage["total_cost_usd"]),
        "updated_at": session.updated_at,
    }


def heading(session, title):
    """The header's title and the line under it, as _title.html draws them: {"title",
    "untitled" (the title is the id), "meta": [[css class, text], ...]}."""
    meta = [["session-id", session.session_id]] if title.text else []
    meta += [[name, value] for name, value in (("model", title.model), ("cwd", title.cwd)) if value]
    return {"title": title.text or session.session_id, "untitled": not title.text, "meta": meta}


def cost_text(cost_usd):
    """"$0.0123", or "n/a" when no cost was reported (Codex and Gemini never report one,
    and a Claude turn that cost nothing reports none): "$0.0000" would claim it was free."""
    return f"${cost_usd:.4f}" if cost_usd else "n/a"
