"""The child's channel (harness.cell.messages): the lines the cell writes, read back whole,
as they grow, and after a kill cut the last one short."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cell import messages
from harness.cell.messages import ChildStream, Reader


def test_each_message_is_one_line_in_the_format_older_revisions_read():
    """An A/B's base side runs an older tree's reader: the lines keep their fields and order."""
    lines = [
        messages.line(messages.start(1.5)),
        messages.line(messages.sample(1.0, "measure", {"games": 3})),
        messages.line(messages.point(2.0, "loss", 0.5)),
        messages.line(messages.rate("steps")),
        messages.line(messages.result({"games_per_s": 3.0}, ["idle"])),
        messages.line(messages.error("boom", user_error=False, traceback="tb", warnings=[])),
    ]
    assert lines == [
        '{"type": "start", "wall": 1.5}\n',
        '{"type": "sample", "t": 1.0, "phase": "measure", "counters": {"games": 3}}\n',
        '{"type": "point", "t": 2.0, "name": "loss", "value": 0.5}\n',
        '{"type": "rate", "counter": "steps"}\n',
        '{"type": "result", "metrics": {"games_per_s": 3.0}, "warnings": ["idle"]}\n',
        '{"type": "error", "reason": "boom", "user_error": false, "traceback": "tb", "warnings": []}\n',
    ]
    odd = messages.line(messages.result({"where": Path("/tmp/x")}, []))  # a suite's value JSON cannot hold
    assert json.loads(odd)["metrics"] == {"where": "/tmp/x"}


def test_a_line_being_written_waits_for_its_end(tmp_path):
    path = tmp_path / "child.jsonl"
    reader, stream = Reader(path), ChildStream()
    assert reader.read() == []  # the child has not created its file yet
    whole = messages.line(messages.sample(1.0, "warmup", {"steps": 10}))
    with open(path, "w") as fh:
        fh.write(messages.line(messages.start(100.0)) + whole[:20])
    assert stream.add(reader.read()) == [] and stream.start_wall == 100.0
    with open(path, "a") as fh:
        fh.write(whole[20:] + messages.line(messages.rate("steps")))
    new = stream.add(reader.read())
    assert new == [json.loads(whole)] and stream.samples == new
    assert stream.declared == "steps" and stream.final is None
    assert reader.read() == []  # nothing is read twice


def test_a_kill_in_the_middle_of_a_line_leaves_everything_before_it(tmp_path):
    """The runner reads the whole file once the child has ended; a torn last line, and bytes
    that are not text at all, are dropped, not a crash."""
    path = tmp_path / "child.jsonl"
    torn = messages.line(messages.point(3.0, "elo", 1.0))
    path.write_bytes(
        (messages.line(messages.start(5.0)) + messages.line(messages.point(2.0, "loss", 0.5))).encode()
        + b"\xff\xfe\n"
        + torn[:25].encode()
    )
    stream = ChildStream.read(path)
    assert stream.start_wall == 5.0 and [p["name"] for p in stream.points] == ["loss"]
    assert stream.final is None and stream.error_message is None


def test_an_ended_childs_last_line_counts_even_without_its_newline(tmp_path):
    path = tmp_path / "child.jsonl"
    error = messages.error("x", user_error=True, traceback=None, warnings=[])
    path.write_text(messages.line(messages.start(1.0)) + messages.line(error).rstrip("\n"))
    stream = ChildStream.read(path)
    assert stream.error_message == error and stream.final == error
    assert ChildStream.read(tmp_path / "never-written.jsonl") == ChildStream()


def test_the_probe_writes_through_the_constructors():
    from harness.probe import Probe

    seen: list[messages.Message] = []
    clock = iter([0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0]).__next__
    probe = Probe(duration_s=10, sink=seen.append, clock=clock)
    probe.count("games", 2)
    probe.set("loss", 0.25)
    probe.declare_rate("games")
    stream = ChildStream()
    stream.add(seen)
    assert stream.samples[0]["counters"] == {"games": 2} and stream.samples[0]["phase"] == "measure"
    assert stream.points == [messages.point(1.0, "loss", 0.25)]
    assert stream.declared == "games"
