"""The error responses of the API (docs/api.md, Errors): one envelope, a status per cause."""

# Every operation takes a token and a rate-limit slot, and may find the database busy.
COMMON = {
    401: "`missing_token`, `invalid_authorization` or `invalid_token`"
         " (with `WWW-Authenticate: Bearer`)",
    403: "`wrong_token_kind`, or the token may not do this (`not_permitted`)",
    429: "`rate_limited`: too many requests for this token; wait `Retry-After` seconds",
    503: "`database_busy`: retry after `Retry-After` seconds",
}
NOT_FOUND = {404: "`session_not_found`: no such session, or one the token may not see or"
                  " write (the same answer: no machine or owner named)"}
# Every write reads a JSON object body.
BODY = {
    413: "`request_entity_too_large`: the body is over MAX_CONTENT_LENGTH",
    422: "`invalid_json` (no JSON object) or `validation_error` (`details.fields`"
         " names each bad field)",
}


def error_responses(*groups):
    """{status: description} of the COMMON errors plus each group's, later groups winning."""
    merged = dict(COMMON)
    for group in groups:
        merged.update(group)
    return merged
