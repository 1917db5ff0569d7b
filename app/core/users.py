"""How a user id is compared: one user under every spelling."""


def user_key(user_id):
    """The spelling a user is counted and compared under (quotas, open sessions, stream
    leases): whitespace stripped, case folded; None for no user."""
    if user_id is None:
        return None
    return user_id.strip().casefold()
