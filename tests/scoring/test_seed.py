"""The scoring seed step, run through ``manage.py seed_demo`` as `make run` does."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallStatus
from insights.selectors import summary_evidence_of
from scoring.models import Score, ScoreRevision
from scoring.selectors import accounts_scorable_by, scoring_queue
from users.models import User

pytestmark = pytest.mark.django_db

TRANSCRIPT_LINE = re.compile(r"^(.+) \((\d\d:\d\d)-(\d\d:\d\d)\): \S.*$")


def seed() -> str:
    err = StringIO()
    call_command("seed_demo", stdout=StringIO(), stderr=err)
    return err.getvalue()


def test_every_account_has_a_scorecard_with_ten_named_categories_and_lists():
    seed()
    for account in Account.objects.all():
        scorecard = account.scorecard
        names = list(
            scorecard.categories.order_by("slot").values_list("name", flat=True)
        )
        assert len(names) == 10
        assert all(names)
        kinds = set(scorecard.choices.values_list("kind", flat=True))
        assert kinds == {"call_end", "alert", "department"}


def test_most_past_calls_are_scored_by_the_organizations_scorer():
    seed()
    for account in Account.objects.all():
        calls = Call.objects.filter(account=account)
        scores = Score.objects.filter(call__account=account)
        assert scores.count() * 2 > calls.count()
        scorers = User.objects.filter(scores__in=scores).distinct()
        assert scorers.count() == 1
        scorer = scorers.get()
        assert scorer.groups.filter(name="Scorer").exists()
        assert account in accounts_scorable_by(scorer)
        assert set(scores.values_list("scorer_name", flat=True)) == {
            scorer.get_full_name()
        }
        # Every score has its first revision and the scorecard it was scored under.
        assert (
            ScoreRevision.objects.filter(score__in=scores, kind="score").count()
            == scores.count()
        )
        assert all(
            any(names) for names in scores.values_list("category_names", flat=True)
        )


def test_scores_vary_and_some_are_coached_by_the_accounts_manager():
    seed()
    scores = Score.objects.select_related("call__account")
    applied = {tuple(score.applied) for score in scores}
    assert len(applied) > 5
    assert scores.filter(wow=False).exists()
    assert scores.filter(appointment_date__isnull=False).exists()
    assert scores.filter(appointment_date__isnull=True).exists()
    assert len(set(scores.values_list("call_end", flat=True))) > 2
    coached = scores.filter(coached_at__isnull=False)
    assert 0 < coached.count() < scores.count()
    for score in coached:
        assert score.coach_notes
        assert score.coach is not None
        assert score.coached_at is not None
        assert score.coach.groups.filter(name="Manager").exists()
        assert score.call.account in score.coach.accounts.all()
        assert score.scored_at < score.coached_at
        assert score.call.received_at < score.scored_at


def test_the_scoring_queue_has_work_in_the_demo():
    seed()
    for account in Account.objects.all():
        scorer = User.objects.filter(scores__call__account=account).distinct().get()
        queued = scoring_queue(scorer=scorer).filter(account=account)
        assert queued.exists()
        assert not queued.filter(score__isnull=False).exists()


def test_a_few_calls_have_a_transcription_in_the_documented_format_and_a_summary():
    seed()
    transcribed = Call.objects.exclude(transcription="")
    assert transcribed.exists()
    for call in transcribed:
        assert call.status == CallStatus.ANSWER
        assert call.summary
        lines = call.transcription.split("\n")
        assert len(lines) > 3
        matches = [m for line in lines if (m := TRANSCRIPT_LINE.match(line))]
        assert len(matches) == len(lines), lines
        # CONTRACT.md's format: each side by its full name, times within the call.
        speakers = {m.group(1) for m in matches}
        assert call.agent is not None
        assert speakers == {
            call.agent.get_full_name(),
            f"{call.first_name} {call.last_name}",
        }
        last_end = matches[-1].group(3)
        assert call.duration is not None
        assert int(last_end[:2]) * 60 + int(last_end[3:]) <= call.duration
        assert len(call.transcript_turns) == len(lines)  # the page seeks by them
        # The summary tells what the transcript says.
        booked = re.search(r"I have you down for (\w+ at [\w ]+)\.", call.transcription)
        set_for = re.search(r" was set for (\w+), \w+ \d+ at ", call.summary)
        if booked:
            # The day said, as a date: "Saturday, December 5 at 9:30 AM".
            assert set_for is not None, call.summary
            assert set_for.group(1) == booked.group(1).split()[0]
        else:
            assert set_for is None, call.summary
        # Each sentence with the lines it was written from (the page's hover), in English.
        assert call.transcript_language == "en"
        evidence = summary_evidence_of(call=call)
        assert " ".join(item["sentence"] for item in evidence) == call.summary
        assert any(item["lines"] for item in evidence)
    # Some in the queue, some scored.
    assert transcribed.filter(score__isnull=False).exists()
    assert transcribed.filter(score__isnull=True).exists()


def test_a_second_run_scores_nothing_again():
    first = seed()
    assert "calls scored" in first
    before = (
        Score.objects.count(),
        ScoreRevision.objects.count(),
        list(Call.objects.order_by("pk").values_list("transcription", flat=True)),
    )

    second = seed()

    assert "calls scored" not in second
    after = (
        Score.objects.count(),
        ScoreRevision.objects.count(),
        list(Call.objects.order_by("pk").values_list("transcription", flat=True)),
    )
    assert after == before


def a_users_call(account: Account, *, days_ago: float, status: str) -> Call:
    """A call as the people trying the demo make one (a lead's, not the demo's history)."""
    received_at = timezone.now() - timedelta(days=days_ago)
    answered = status == CallStatus.ANSWER
    return Call.objects.create(
        account=account,
        status=status,
        received_at=received_at,
        ended_at=received_at + timedelta(minutes=2) if answered else None,
        phone="+13035550188",
        first_name="Sam",
        last_name="Reader",
        agent=User.objects.filter(accounts=account, phone_number__gt="").first(),
        duration=90 if answered else None,
    )


def as_left(call: Call) -> tuple:
    call.refresh_from_db()
    score = Score.objects.filter(call=call).first()
    return (
        call.transcription,
        call.summary,
        score and (score.scored_at, score.coach_notes, score.coached_at),
        ScoreRevision.objects.filter(score__call=call).count(),
    )


def test_a_second_run_leaves_the_calls_it_did_not_make_alone():
    seed()
    north = Account.objects.get(name="Demo Motors North")
    demo_calls = Call.objects.filter(account=north, is_demo=True).count()
    # Answered days ago (among the calls the demo scores), two answered just now (the
    # queue's newest, which the demo transcribes) and one still waiting for its agent.
    calls = [
        a_users_call(north, days_ago=10, status=CallStatus.ANSWER),
        a_users_call(north, days_ago=0.02, status=CallStatus.ANSWER),
        a_users_call(north, days_ago=0.01, status=CallStatus.ANSWER),
        a_users_call(north, days_ago=0, status=CallStatus.QUEUED),
    ]
    before = [as_left(call) for call in calls]
    assert before == [("", "", None, 0)] * len(calls)

    seed()
    seed()

    assert [as_left(call) for call in calls] == before
    assert not Call.objects.filter(pk__in=[c.pk for c in calls], is_demo=True).exists()
    assert Call.objects.filter(account=north, is_demo=True).count() == demo_calls
