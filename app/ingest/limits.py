"""Per-request limits on runner output, read from the app's configuration.

Each is a 413 with its own code and the numbers involved, and each rejects the
whole request before anything of it is stored.
"""
from flask import current_app

from app.errors import ApiError


def check_chunk_count(body):
    """At most MAX_CHUNKS_PER_REQUEST chunks (checked before they are validated)."""
    chunks = body.get("chunks")
    limit = current_app.config["MAX_CHUNKS_PER_REQUEST"]
    if isinstance(chunks, list) and len(chunks) > limit:
        raise ApiError(413, "too_many_chunks",
                       f"at most {limit} chunks per request; split the batch",
                       {"chunks": len(chunks), "limit": limit})


def check_line_lengths(chunks):
    """No line longer than MAX_LINE_LENGTH characters."""
    limit = current_app.config["MAX_LINE_LENGTH"]
    for position, chunk in enumerate(chunks):
        if len(chunk.data) > limit:
            raise ApiError(413, "line_too_long",
                           f"an output line may hold at most {limit} characters",
                           {"index": position, "seq": chunk.seq, "length": len(chunk.data),
                            "limit": limit})
