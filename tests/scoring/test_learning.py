"""Suggestions that learn from the scorers (scoring/learning.py, scoring/learnt.py): a model
is put in force for a member only where it measures better than the phrase rule on the
newest scores, an account with too few scores learns from its own organization's only,
and a learnt suggestion keeps the suggestion's shape with the line that weighed most."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from scoring import learning
from scoring.learnt import (
    learnt_suggestions_apply,
    scorecard_rules,
    suggesters_learn,
    suggesters_learn_all,
)
from scoring.models import CallSuggestions, LearntSuggester, Scorecard
from scoring.services import call_suggestions_make
from scoring.suggestions import suggest
from scoring.tasks import suggestions_learn_task
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory
from tests.scoring.learnt_calls import conversation, scored_calls

START = dt.datetime(2026, 9, 1, 15, 0, tzinfo=dt.UTC)
TRADE = "cat4"  # "Asked about a trade-in"
GREETED = "cat1"  # "Greeted the customer by name"


def rows(account) -> dict[str, LearntSuggester]:
    return {row.member: row for row in LearntSuggester.objects.filter(account=account)}


def turns(*said: tuple[str, str]) -> list[dict]:
    return [
        {"side": side, "start": 1.0 + 5 * i, "end": 5.0 + 5 * i, "text": text}
        for i, (side, text) in enumerate(said)
    ]


@pytest.fixture
def organization(db):
    return OrganizationFactory(name="North Group")


@pytest.fixture
def north(organization):
    return AccountFactory(organization=organization, name="North")


def test_a_model_that_beats_a_weak_rule_is_put_in_force_with_both_measures(north):
    scored_calls(north, 100, seed=1, start=START)

    suggesters_learn(account=north)

    trade = rows(north)[TRADE]
    assert trade.name == "Asked about a trade-in"
    assert trade.source == "learnt"
    assert (trade.examples, trade.held_out, trade.accounts) == (100, 20, 1)
    assert trade.rule_f1 is not None
    assert trade.learnt_f1 is not None
    assert trade.learnt_f1 > trade.rule_f1 + learning.MARGIN
    assert trade.learnt_precision is not None
    assert trade.learnt_recall is not None
    assert trade.weights is not None
    assert trade.weights["version"] == 1
    assert trade.reason == ""
    # No default rule listens for "Hot lead": the scorers' tag is learnt.
    assert rows(north)["alert:Hot lead"].source == "learnt"


def test_where_the_rule_measures_as_well_the_rule_stays(north):
    scored_calls(north, 100, seed=2, start=START)

    suggesters_learn(account=north)

    greeted = rows(north)[GREETED]
    # The scorers tick it exactly when the rule hears the name: the rule cannot be beaten.
    assert greeted.rule_f1 == 1.0
    assert greeted.source == "rule"
    assert greeted.weights is None
    assert greeted.reason.startswith("The phrase rule measures as well")


def test_too_few_scores_keep_every_rule(north):
    scored_calls(north, learning.MIN_EXAMPLES - 1, seed=3, start=START)

    suggesters_learn(account=north)

    learnt = rows(north)
    assert {row.source for row in learnt.values()} == {"rule"}
    assert learnt[TRADE].examples == 0
    assert learnt[TRADE].rule_f1 is None
    assert learnt[TRADE].reason.startswith("Too few scored calls")


def test_an_in_force_model_replaces_the_rule_s_suggestions(north):
    scored_calls(north, 100, seed=4, start=START)
    suggesters_learn(account=north)
    asked = CallFactory(
        account=north,
        first_name="Pat",
        transcript_turns=turns(
            ("agent", "Hello, Jordan calling from North Motors about your request."),
            ("lead", "Is it still available?"),
            ("agent", "What are you driving now?"),
        ),
    )
    unasked = CallFactory(
        account=north,
        first_name="Pat",
        transcript_turns=turns(
            ("agent", "Hi Pat, this is Avery from North Motors."),
            ("agent", "That price is without a trade-in, just so you know."),
        ),
    )

    call_suggestions_make(call_id=asked.pk)
    call_suggestions_make(call_id=unasked.pk)

    members = CallSuggestions.objects.get(call=asked).members
    assert members[TRADE] == {
        "value": 1,
        "line": 2,
        "text": "Agent (00:11-00:15): What are you driving now?",
        "at": 11.0,
        "source": "learnt",
    }
    assert GREETED not in members
    members = CallSuggestions.objects.get(call=unasked).members
    # The rule hears "trade-in"; the model knows the scorers do not count it.
    assert TRADE not in members
    # The rule stays in force for the greeting: its suggestion is the rule's own.
    assert members[GREETED]["value"] == 1
    assert "source" not in members[GREETED]


def test_a_learnt_alert_tag_is_suggested_with_its_line(north):
    scored_calls(north, 100, seed=5, start=START)
    suggesters_learn(account=north)
    call = CallFactory(
        account=north,
        transcript_turns=turns(
            ("agent", "Hi there, this is Avery from North Motors."),
            ("lead", "I am ready to sign this afternoon."),
        ),
    )

    found = learnt_suggestions_apply(call=call, members={})

    assert found["alert"]["value"] == "Hot lead"
    assert found["alert"]["line"] == 1
    assert found["alert"]["source"] == "learnt"


def test_an_account_with_too_few_scores_learns_from_its_organization_only(
    organization, north
):
    south = AccountFactory(organization=organization, name="South")
    elsewhere = AccountFactory(name="Elsewhere")  # another organization, same scorecard
    scored_calls(north, 10, seed=6, start=START)
    scored_calls(south, 80, seed=7, start=START)
    scored_calls(elsewhere, 200, seed=8, start=START)

    suggesters_learn(account=north)

    trade = rows(north)[TRADE]
    assert (trade.examples, trade.accounts) == (90, 2)
    assert trade.source == "learnt"


def test_learning_never_borrows_another_organization_s_scores(north):
    elsewhere = AccountFactory(name="Elsewhere")
    scored_calls(north, 10, seed=9, start=START)
    scored_calls(elsewhere, 200, seed=10, start=START)

    suggesters_learn(account=north)

    assert {row.source for row in rows(north).values()} == {"rule"}
    assert {row.examples for row in rows(north).values()} == {0}


def test_a_category_scored_under_another_name_is_not_learnt_from(north):
    scored_calls(north, 100, seed=11, start=START)
    north.scorecard.categories.filter(slot=4).update(name="Asked about financing")

    suggesters_learn(account=north)

    assert rows(north)["cat4"].examples == 0
    assert rows(north)["cat4"].name == "Asked about financing"


def test_learning_again_replaces_the_verdicts(north):
    scored_calls(north, 100, seed=12, start=START)
    suggesters_learn(account=north)
    north.scorecard.choices.filter(kind="alert", name="Poor audio").delete()

    suggesters_learn(account=north)

    assert "alert:Poor audio" not in rows(north)
    assert LearntSuggester.objects.filter(account=north, member=TRADE).count() == 1


def test_the_prediction_is_scikit_learn_s_own():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    rng = random.Random(13)
    documents, labels = [], []
    for _ in range(60):
        said, scored = conversation(rng, name="Pat")
        lines = [
            learning.line_features(side=t["side"], text=t["text"], first_name="Pat")
            for t in said
        ]
        documents.append(lines)
        labels.append(scored["Asked about a trade-in"])
    weights = learning.fit(documents, labels)
    vectorizer = TfidfVectorizer(
        analyzer=learning.flatten,
        min_df=learning.MIN_CALLS_PER_FEATURE,
        max_features=learning.MOST_FEATURES,
        sublinear_tf=True,
    )
    model = LogisticRegression(class_weight="balanced", max_iter=1000)
    model.fit(vectorizer.fit_transform(documents), labels)
    expected = model.predict_proba(vectorizer.transform(documents))[:, 1]

    for document, probability in zip(documents, expected, strict=True):
        answer = learning.predict(weights, document)
        mine = answer.probability if answer.value else 1 - answer.probability
        assert mine == pytest.approx(probability, abs=1e-4)


def test_measures_count_only_matching_suggestions():
    measured = learning.measure(
        ["Callback requested", "", "Not interested", "Callback requested"],
        ["Callback requested", "Information given", "Information given", ""],
    )
    assert (measured.precision, measured.recall, measured.calls) == (1 / 3, 1 / 3, 4)
    assert measured.f1 == pytest.approx(1 / 3)


def test_the_rules_learnt_against_are_call_suggestions_make_s(north):
    call = CallFactory(
        account=north,
        first_name="Pat",
        transcript_turns=turns(
            ("agent", "Hi Pat, this is Avery from North Motors."),
            ("agent", "Are you trading in a car? Can you come in Saturday at 10?"),
            ("lead", "Not interested, it's too expensive. Call me back."),
        ),
    )
    made = call_suggestions_make(call_id=call.pk)
    assert made is not None
    scorecard = Scorecard.objects.get(account=north)

    ruled = suggest(
        turns=call.transcript_turns,
        rules=scorecard_rules(scorecard),
        names={"agent": "Agent", "lead": "Pat Rivera"},
        first_name="Pat",
        received_on=dt.date(2026, 9, 1),
        called_on={},
        current={},
    )

    def kept(members):
        return {
            m: s["value"] for m, s in members.items() if m[:3] in {"cat", "cal", "ale"}
        }

    assert kept(ruled) == kept(made.members)
    assert len(kept(ruled)) >= 6


def test_the_command_prints_each_member_s_verdict(north):
    scored_calls(north, 100, seed=14, start=START)
    out = io.StringIO()

    call_command("learn_suggestions", account=north.pk, stdout=out)

    printed = out.getvalue().splitlines()
    assert printed[0] == f"North (#{north.pk}):"
    trade = next(line for line in printed if line.startswith("  cat4 "))
    assert trade.startswith(
        "  cat4 (Asked about a trade-in): learnt in force (F1 rule "
    )
    assert trade.endswith("; 100 examples, 20 held out)")
    assert "  cat1 (Greeted the customer by name): rule in force" in out.getvalue()
    assert "  alert:Poor audio (Poor audio): rule stays, too few examples" in printed
    assert printed[-1] == "Done: 1 accounts learnt."


def test_the_command_refuses_an_unknown_account(db):
    with pytest.raises(CommandError, match="No account with id 999999"):
        call_command("learn_suggestions", account=999999, stdout=io.StringIO())


def test_learning_every_account_covers_the_accounts_with_scores(north):
    idle = AccountFactory(organization=north.organization)
    scored_calls(north, 5, seed=15, start=START)

    assert suggesters_learn_all() == 1
    assert rows(north)
    assert not rows(idle)


def test_the_scheduler_learns_every_night():
    entry = settings.CELERY_BEAT_SCHEDULE["learn-suggestions"]
    assert entry["task"] == suggestions_learn_task.name
    assert entry["schedule"].hour == {3}
    assert entry["schedule"].minute == {30}
