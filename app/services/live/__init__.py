"""Following a session live: the process's shared wake-ups (`hub`), the normalized
events feed (`events`) and the per-token stream limit (`leases`)."""
