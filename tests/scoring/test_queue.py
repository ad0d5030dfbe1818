"""The scoring queue: the oldest answered, unscored call with a recording, held for one scorer."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from calls.models import CallStatus
from scoring.models import ScoringClaim
from scoring.services import score_save, scoring_claim_next, scoring_claim_release
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory, in_role, received

pytestmark = pytest.mark.django_db

NOW = timezone.now()


@pytest.fixture
def account():
    return AccountFactory()


def test_the_queue_offers_the_oldest_scorable_call_first(account):
    scorer = in_role("Scorer", accounts=[account])
    received(NOW - timedelta(hours=1), account=account)
    oldest = received(NOW - timedelta(hours=3), account=account)
    received(NOW - timedelta(hours=5), account=account, status=CallStatus.NOANSWER)
    received(NOW - timedelta(hours=6), account=account, recording_url="")
    received(NOW - timedelta(hours=7))  # another account's
    scored = received(NOW - timedelta(hours=8), account=account)
    score_save(call=scored, scorer=scorer, values={"cat1": True})

    assert scoring_claim_next(scorer=scorer) == oldest


def test_a_held_call_is_not_offered_to_another_scorer_until_the_hold_expires(
    account, settings
):
    settings.SCORING_CLAIM_SECONDS = 300
    first_scorer = in_role("Scorer", accounts=[account])
    second_scorer = in_role("Scorer", accounts=[account])
    older = received(NOW - timedelta(hours=2), account=account)
    newer = received(NOW - timedelta(hours=1), account=account)

    assert scoring_claim_next(scorer=first_scorer) == older
    assert scoring_claim_next(scorer=first_scorer) == older, (
        "the scorer's own hold comes back"
    )
    assert scoring_claim_next(scorer=second_scorer) == newer

    ScoringClaim.objects.filter(call=older).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    third = in_role("Scorer", accounts=[account])
    assert scoring_claim_next(scorer=third) == older


def test_scoring_or_releasing_frees_the_scorer_for_the_next_call(account):
    scorer = in_role("Scorer", accounts=[account])
    first = received(NOW - timedelta(hours=2), account=account)
    second = received(NOW - timedelta(hours=1), account=account)
    assert scoring_claim_next(scorer=scorer) == first
    score_save(call=first, scorer=scorer, values={"wow": True})
    assert not ScoringClaim.objects.filter(call=first).exists()
    assert scoring_claim_next(scorer=scorer) == second
    scoring_claim_release(call=second, scorer=scorer)
    other = in_role("Scorer", accounts=[account])
    assert scoring_claim_next(scorer=other) == second


def test_an_empty_queue_and_a_user_without_the_template_get_nothing(account):
    assert scoring_claim_next(scorer=in_role("Scorer", accounts=[account])) is None
    CallFactory(account=account)
    assert scoring_claim_next(scorer=in_role("Manager", accounts=[account])) is None


@pytest.mark.django_db(transaction=True)
def test_scorers_asking_at_once_never_get_the_same_call():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    account = AccountFactory()
    calls = [received(NOW - timedelta(minutes=n), account=account) for n in range(1, 7)]
    scorers = [in_role("Scorer", accounts=[account]) for _ in range(6)]
    barrier = threading.Barrier(len(scorers))
    got: dict[int, int | None] = {}

    def claim(scorer):
        try:
            barrier.wait()
            call = scoring_claim_next(scorer=scorer)
            got[scorer.pk] = call.pk if call else None
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(s,)) for s in scorers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    claimed = [pk for pk in got.values() if pk is not None]
    assert len(claimed) == len(set(claimed)), f"a call was handed out twice: {got}"
    assert sorted(claimed) == sorted(c.pk for c in calls)
    assert ScoringClaim.objects.count() == 6
