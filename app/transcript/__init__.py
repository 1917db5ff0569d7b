"""Pure turn logic: events from the providers -> an open turn -> a closed turn -> what is stored.

No I/O and no Flask: the accumulator folds `StreamEvent`s into turns, a closed turn
is normalized once into a `TranscriptTurn`, and the flush policy decides what it
persists for the session's kind.
"""
