"""app.client.spool: the file format, acknowledgements, and a torn record after a crash."""
import json

import pytest

from app.client.spool import Spool
from app.client.spool import SpoolError
from app.client.spool import load
from app.client.spool import spool_path


def chunk(seq, stream="stdout"):
    return {"seq": seq, "stream": stream, "data": f"line {seq} \u00e9"}


def written(tmp_path, seqs, acked=None):
    spool = Spool.create(tmp_path, "s1", "http://server")
    for seq in seqs:
        spool.append(chunk(seq, "stderr" if seq % 3 == 0 else "stdout"))
    spool.sync()
    if acked is not None:
        spool.ack(acked)
    spool.close()
    return spool_path(tmp_path, "s1")


def test_the_file_is_a_header_then_one_json_record_a_line(tmp_path):
    path = written(tmp_path, [0, 1], acked=1)
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert records == [{"session": "s1", "server": "http://server"},
                       {"seq": 0, "stream": "stderr", "data": "line 0 \u00e9"},
                       {"seq": 1, "stream": "stdout", "data": "line 1 \u00e9"},
                       {"acked": 1}]
    assert path.stat().st_mode & 0o777 == 0o600


def test_resume_gives_the_lines_after_the_last_ack_and_the_next_seq(tmp_path):
    written(tmp_path, range(5), acked=2)
    spool, state = Spool.resume(tmp_path, "s1")
    spool.close()
    assert [line["seq"] for line in state.unacked] == [3, 4]
    assert [line["seq"] for line in state.lines] == [0, 1, 2, 3, 4]
    assert state.unacked[0]["stream"] == "stderr"
    assert (state.next_seq, state.acked, state.server) == (5, 2, "http://server")


def test_a_torn_last_record_is_dropped_and_cut_from_the_file(tmp_path):
    path = written(tmp_path, range(3), acked=0)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"seq": 3, "stream": "std')
    spool, state = Spool.resume(tmp_path, "s1")
    assert [line["seq"] for line in state.unacked] == [1, 2]
    assert state.next_seq == 3
    assert path.read_bytes() == whole
    spool.append(chunk(3))
    spool.sync()
    spool.close()
    assert [line["seq"] for line in load(path)[0].unacked] == [1, 2, 3]


def test_a_complete_last_record_without_its_newline_counts_as_torn(tmp_path):
    path = written(tmp_path, range(2))
    path.write_bytes(path.read_bytes() + b'{"acked": 1}')
    assert [line["seq"] for line in load(path)[0].unacked] == [0, 1]


def test_a_bad_record_before_the_end_is_an_error_not_a_guess(tmp_path):
    path = written(tmp_path, range(2))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"garbage\n" + b"".join(lines[1:]))
    with pytest.raises(SpoolError, match="bad record"):
        load(path)


def test_resuming_a_session_without_a_spool_says_so(tmp_path):
    with pytest.raises(SpoolError, match="no spool for session s9"):
        Spool.resume(tmp_path, "s9")


def test_remove_deletes_the_file_of_a_completed_session(tmp_path):
    spool = Spool.create(tmp_path, "s2", "http://server")
    spool.remove()
    assert not spool_path(tmp_path, "s2").exists()
