"""app.client.spool: the file format, acknowledgements, a torn record after a crash, bad
records, the lock, and the folder's mode."""
import json
import multiprocessing
import os
import re

import pytest

from app.client.spool import Spool
from app.client.spool import SpoolError
from app.client.spool import SpoolLocked
from app.client.spool import load
from app.client.spool import spool_path

S1 = "0b7e6a52-3c1d-4f0e-9a55-2d4c8e1f6a01"
S2 = "0b7e6a52-3c1d-4f0e-9a55-2d4c8e1f6a02"
S9 = "0b7e6a52-3c1d-4f0e-9a55-2d4c8e1f6a09"


def chunk(seq, stream="stdout"):
    return {"seq": seq, "stream": stream, "data": f"line {seq} \u00e9"}


def written(tmp_path, seqs, acked=None):
    spool = Spool.create(tmp_path, S1, "http://server")
    for seq in seqs:
        spool.append(chunk(seq, "stderr" if seq % 3 == 0 else "stdout"))
    spool.sync()
    if acked is not None:
        spool.ack(acked)
    spool.close()
    return spool_path(tmp_path, S1)


def test_the_file_is_a_header_then_one_json_record_a_line(tmp_path):
    path = written(tmp_path, [0, 1], acked=1)
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert records == [{"session": S1, "server": "http://server"},
                       {"seq": 0, "stream": "stderr", "data": "line 0 \u00e9"},
                       {"seq": 1, "stream": "stdout", "data": "line 1 \u00e9"},
                       {"acked": 1}]
    assert path.stat().st_mode & 0o777 == 0o600


def test_resume_gives_the_lines_after_the_last_ack_and_the_next_seq(tmp_path):
    written(tmp_path, range(5), acked=2)
    spool, state = Spool.resume(tmp_path, S1)
    spool.close()
    assert [line["seq"] for line in state.unacked] == [3, 4]
    assert [line["seq"] for line in state.lines] == [0, 1, 2, 3, 4]
    assert state.unacked[0]["stream"] == "stderr"
    assert (state.next_seq, state.acked, state.server) == (5, 2, "http://server")


def test_a_torn_last_record_is_dropped_and_cut_from_the_file(tmp_path):
    path = written(tmp_path, range(3), acked=0)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"seq": 3, "stream": "std')
    spool, state = Spool.resume(tmp_path, S1)
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
    with pytest.raises(SpoolError, match=re.escape(f"{path}: line 2: bad record")):
        load(path)


def test_resuming_a_session_without_a_spool_says_so(tmp_path):
    with pytest.raises(SpoolError, match=f"no spool for session {S9}"):
        Spool.resume(tmp_path, S9)


def test_remove_deletes_the_file_of_a_completed_session(tmp_path):
    spool = Spool.create(tmp_path, S2, "http://server")
    spool.remove()
    assert not spool_path(tmp_path, S2).exists()


@pytest.mark.parametrize("record, words", [
    (b"[1, 2]", "not a JSON object"),
    (b'{"seq": "7", "stream": "stdout", "data": "x"}', "seq"),
    (b'{"seq": -1, "stream": "stdout", "data": "x"}', "seq"),
    (b'{"seq": true, "stream": "stdout", "data": "x"}', "seq"),
    (b'{"seq": 7, "stream": "stdin", "data": "x"}', "stream"),
    (b'{"seq": 7, "stream": "stdout", "data": 5}', "data"),
    (b'{"acked": null}', "acked"),
    (b'{"hello": 1}', "neither a line"),
    (b"[" * 100_000, "not JSON"),
    (b"\xff\xfe", "not JSON"),
])
def test_a_malformed_record_is_a_spool_error_naming_the_file_and_the_line(tmp_path, record, words):
    path = written(tmp_path, range(2))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + record + b"\n" + b"".join(lines[2:]))
    with pytest.raises(SpoolError, match=re.escape(f"{path}: line 3: bad record")) as raised:
        Spool.resume(tmp_path, S1)
    assert words in str(raised.value)


@pytest.mark.parametrize("header", [b'{"session": "../../etc/x", "server": null}',
                                    b'{"server": "http://server"}', b'"just a string"'])
def test_a_header_without_a_session_uuid_is_a_spool_error(tmp_path, header):
    path = spool_path(tmp_path, S1)
    path.write_bytes(header + b"\n")
    with pytest.raises(SpoolError, match=re.escape(f"{path}: line 1: bad record")):
        load(path)


def test_a_spool_whose_header_names_another_session_is_refused(tmp_path):
    path = written(tmp_path, range(1))
    path.rename(spool_path(tmp_path, S2))
    with pytest.raises(SpoolError, match=f"header names session {S1}"):
        Spool.resume(tmp_path, S2)


@pytest.mark.parametrize("bad", ["../x", "../../etc/passwd", "a/b", "", "s1",
                                 S1 + "/../x", S1 + "\n", None])
def test_an_id_that_is_not_a_uuid_never_becomes_a_path(tmp_path, bad):
    with pytest.raises(SpoolError, match="not a session id"):
        spool_path(tmp_path, bad)
    with pytest.raises(SpoolError, match="not a session id"):
        Spool.create(tmp_path / "new", bad, "http://server")
    assert not (tmp_path / "new").exists()


def test_the_folder_and_its_missing_parents_are_created_0700_and_files_0600(tmp_path):
    old = os.umask(0o022)  # a usual umask would leave 0755
    folder = tmp_path / "state" / "turnlog" / "spool"
    try:
        Spool.create(folder, S1, "http://server").close()
    finally:
        os.umask(old)
    for made in (folder, folder.parent, folder.parent.parent):
        assert made.stat().st_mode & 0o777 == 0o700
    assert spool_path(folder, S1).stat().st_mode & 0o777 == 0o600


def _hold_and_die(directory, ready):
    Spool.resume(directory, S1)  # never closed: the process dies holding the lock
    ready.put("held")
    ready.close()
    ready.join_thread()  # the message is out before the process dies
    os._exit(0)


def test_a_second_run_on_a_spool_in_use_is_refused_and_the_lock_dies_with_its_process(tmp_path):
    written(tmp_path, range(2))
    held, _ = Spool.resume(tmp_path, S1)
    with pytest.raises(SpoolLocked, match="in use by another `turnlog run`"):
        Spool.resume(tmp_path, S1)
    held.close()
    context = multiprocessing.get_context("fork")
    ready = context.Queue()
    dying = context.Process(target=_hold_and_die, args=(tmp_path, ready))
    dying.start()
    assert ready.get(timeout=10) == "held"
    dying.join(10)
    Spool.resume(tmp_path, S1)[0].close()  # its lock went with it


def test_a_new_sessions_spool_is_locked_from_its_start(tmp_path):
    fresh = Spool.create(tmp_path, S2, "http://server")
    with pytest.raises(SpoolLocked):
        Spool.resume(tmp_path, S2)
    fresh.close()


def test_an_interactive_runs_records_come_back_on_resume(tmp_path):
    spool = Spool.create(tmp_path, S1, "http://server")
    spool.append(chunk(0))
    spool.record_prompt("p-uuid")
    spool.record_agent_session("claude-1")
    spool.record_command(12)
    spool.record_command(14)
    spool.record_agent_session("claude-2")
    spool.append(chunk(1))
    spool.close()
    resumed, state = Spool.resume(tmp_path, S1)
    resumed.close()
    assert state.commands_done == {12, 14}
    assert state.prompt_sent and state.agent_session_id == "claude-2"
    assert [line["seq"] for line in state.unacked] == [0, 1] and state.next_seq == 2


def test_a_command_record_is_on_disk_before_record_command_returns(tmp_path):
    spool = Spool.create(tmp_path, S1, "http://server")
    spool.record_command(3)
    assert json.loads(spool_path(tmp_path, S1).read_text().splitlines()[-1]) == {"command": 3}
    spool.close()


@pytest.mark.parametrize("record, words", [({"command": -1}, "not a command id"),
                                           ({"command": "7"}, "not a command id"),
                                           ({"prompt": 5}, "\"prompt\" is not a string"),
                                           ({"agent_session": None}, "is not a string")])
def test_a_malformed_interactive_record_is_a_spool_error(tmp_path, record, words):
    path = written(tmp_path, [0])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    with pytest.raises(SpoolError, match=re.escape(words)):
        load(path)
