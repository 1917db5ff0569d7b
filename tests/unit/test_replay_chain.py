"""The hash chain that names id-less lines by their place, and knows a stream sent again."""
from app.transcript.replay import CAUGHT_UP
from app.transcript.replay import RESTARTED
from app.transcript.replay import ReplayChain


def names(chain, lines, verdicts=None):
    """[(chain id, candidate id, what happened)] for `lines`; a turn ends at each "end"
    line, and `verdicts` says (in order) whether its candidate key was found stored."""
    verdicts = list(verdicts or [])
    out = []
    for line in lines:
        out.append(chain.name(line))
        if line == "end" and verdicts:
            chain.settle(verdicts.pop(0))
    return out


def test_the_same_lines_at_other_places_get_other_names():
    chain = ReplayChain()
    named = names(chain, ["start", "a", "end", "start2", "a", "end"])
    assert len({chain_id for chain_id, _, _ in named}) == 6
    assert all(candidate is None for _, candidate, _ in named)


def test_a_stream_sent_again_retraces_its_names_and_then_goes_on_as_before():
    stream = ["start", "a", "end", "b", "end"]
    first, alone = ReplayChain(), ReplayChain()
    original = [chain_id for chain_id, _, _ in names(first, stream)]
    again = names(first, stream, verdicts=[True])
    assert again[0][2] == RESTARTED and again[-1][2] == CAUGHT_UP
    assert [candidate for _, candidate, _ in again] == original
    assert not first.running
    more = names(first, ["c"])[0][0]
    assert more == names(alone, stream + ["c"])[-1][0]  # as if nothing had been sent again


def test_new_output_that_starts_like_the_stream_drops_the_candidate():
    chain = ReplayChain()
    names(chain, ["start", "a", "end"])
    named = names(chain, ["start", "x", "end"], verdicts=[False])
    assert named[0][2] == RESTARTED and not chain.running
    assert names(chain, ["y"])[0][1] is None


def test_the_state_survives_a_snapshot():
    chain = ReplayChain()
    names(chain, ["start", "a"])
    revived = ReplayChain(chain.snapshot())
    assert names(revived, ["b"]) == names(chain, ["b"])
