"""The session header's figures, the same in the page and in its counters JSON. Pure.

Two token figures, each labelled for what it counts: the usage reports a runner
posted (`total_tokens`), and what the agent itself reported for the closed turns
(`transcript_usage`), which the contract keeps independent.
"""


def header_figures(session):
    """{name: figure} of the header's counters (the ones viewer.js updates)."""
    usage = session.transcript_usage
    return {
        "message_count": session.message_count,
        "conversation_turn_count": session.conversation_turn_count,
        "total_tokens": session.total_tokens,
        "transcript_tokens": usage["input_tokens"] + usage["output_tokens"],
        "transcript_cache_tokens": usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"],
        "transcript_cost": cost_text(usage["total_cost_usd"]),
    }


def cost_text(cost_usd):
    """"$0.0123", or "n/a" when no cost was reported (Codex and Gemini never report one,
    and a Claude turn that cost nothing reports none): "$0.0000" would claim it was free."""
    return f"${cost_usd:.4f}" if cost_usd else "n/a"
