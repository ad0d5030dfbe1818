"""``make bench`` prints each part's figures as the part ends and fails when an aim it
printed was missed (bench/report.py's ``Report``); nothing is timed here."""

from __future__ import annotations

from bench.report import Report, Row


def row(measure: str, met: bool | None) -> Row:
    return Row(measure, "1 ms", "bare view 1 ms", "1.0x", "<= 2x", met)


def test_each_part_is_printed_as_it_ends(capsys):
    report = Report()

    report.add("3", [row("3 parse", True)], ["  a detail"])
    printed = capsys.readouterr().out

    assert "=== part 3" in printed
    assert "3 parse" in printed
    assert "a detail" in printed


def test_the_run_fails_when_an_aim_printed_was_missed(capsys):
    report = Report()
    report.add("1", [row("1 throughput", True), row("1 no aim", None)])
    assert report.summary(seconds=1) == 0
    assert "Aims met: 1 of 1." in capsys.readouterr().out

    report.add("2", [row("2 latency", False)])
    assert report.summary(seconds=1) == 1
    assert "Missed: 2 latency." in capsys.readouterr().out
