"""The scoring seed step, run through ``manage.py seed_demo`` as `make run` does."""

import re
from io import StringIO

import pytest
from django.core.management import call_command

from accounts.models import Account
from calls.models import Call, CallStatus
from scoring.models import Score, ScoreRevision
from scoring.selectors import accounts_scorable_by, scoring_queue
from users.models import User

pytestmark = pytest.mark.django_db

TRANSCRIPT_LINE = re.compile(r"^(Agent|Customer) \(\d\d:\d\d-\d\d:\d\d\): \S.*$")


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
        assert len(names) == 10 and all(names)
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
        assert all(TRANSCRIPT_LINE.match(line) for line in lines), lines
        assert call.first_name in call.transcription
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
