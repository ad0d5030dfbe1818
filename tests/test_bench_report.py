"""``make bench`` prints each part's figures as the part ends and fails when an aim it
printed was missed (bench/report.py's ``Report``), and part 10 judges the service's own
evaluation's figures against the issue's aims (``insights_rows``); nothing is timed here."""

from __future__ import annotations

from typing import Any

from bench.insights import Measured
from bench.report import Report, Row, insights_rows


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


def figures(form: str, **changes: Any) -> dict[str, Any]:
    """A form's figures as ``manage.py insights_eval --json`` prints them."""
    audio = form != "transcript"
    document: dict[str, Any] = {
        "form": form,
        "calls": 20,
        "wer": dict.fromkeys(("agent", "lead", "merged"), 0.1 if audio else None),
        "models_heard": "18/18",
        "names_heard": "36/36",
        "summary": {"right": 49},
        "false_statements": [],
        "appointments": {"right": 8, "wrong": 0, "missed": 0},
        "categories": {"precision": 0.95, "recall": 0.9},
        "call_end_accuracy": 0.95,
        "real_time_factor": 0.05 if audio else None,
    }
    return {**document, **changes}


def measured(changes: dict[str, dict[str, Any]] | None = None) -> dict[str, Measured]:
    """Part 10's passes by key, each aim met unless ``changes`` (by key) say otherwise;
    each set labels 8 appointments."""
    forms = {
        "transcripts": "transcript",
        "16k": "16k",
        "8k": "8k",
        "held back": "transcript",
        "held back 8k": "8k",
    }
    return {
        key: Measured(key, figures(form, **(changes or {}).get(key, {})), 8, 1.0)
        for key, form in forms.items()
    }


def test_part_10_meets_its_aims_when_every_figure_does():
    rows, _ = insights_rows(measured())

    assert [r.measure for r in rows if r.met is False] == []
    assert sum(r.met is True for r in rows) == 9


def test_part_10_fails_on_one_false_statement_in_any_pass_and_lists_it():
    false = ["05-cornelius-wrong-person (8k): the call is a conversation"]
    rows, details = insights_rows(
        measured(
            {
                "held back 8k": {
                    "summary": {"right": 5, "false": 1},
                    "false_statements": false,
                }
            }
        )
    )

    assert [r.measure for r in rows if r.met is False] == [
        "10 summaries: false statements, every pass"
    ]
    assert (
        "  10 false statement, held back 8k: "
        "05-cornelius-wrong-person (8k): the call is a conversation" in details
    )


def test_part_10_counts_appointments_right_against_those_labelled():
    rows, _ = insights_rows(
        measured(
            {
                "transcripts": {"appointments": {"right": 7, "wrong": 1, "missed": 0}},
                "8k": {"appointments": {"right": 4, "wrong": 1, "missed": 3}},
            }
        )
    )
    by_name = {r.measure: r for r in rows}

    assert by_name["10 transcripts: appointments"].figure == "7/8 right"
    assert by_name["10 transcripts: appointments"].met is False  # 7/8 < 90 %
    assert by_name["10 8 kHz telephone: appointments"].figure == "4/8 right"
    assert by_name["10 8 kHz telephone: appointments"].met is True  # 4/8 = 50 %


def test_part_10_misses_the_aims_of_word_errors_speed_and_categories():
    rows, _ = insights_rows(
        measured(
            {
                "transcripts": {"categories": {"precision": 0.95, "recall": 0.6}},
                "16k": {"wer": {"agent": 0.1, "lead": 0.3, "merged": 0.2}},
                "8k": {"real_time_factor": 0.2},
            }
        )
    )

    assert [r.measure for r in rows if r.met is False] == [
        "10 transcripts: categories precision / recall",
        "10 16 kHz: word error rate",
        "10 8 kHz telephone: real-time factor a channel",
    ]


def test_part_10_misses_an_aim_whose_figure_is_missing():
    rows, _ = insights_rows(measured({"8k": {"real_time_factor": None}}))

    assert [r.measure for r in rows if r.met is False] == [
        "10 8 kHz telephone: real-time factor a channel"
    ]
