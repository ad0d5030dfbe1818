"""Suggestions learnt from the scorers: pure functions over transcript lines and labels.

A call is read as the words of its lines, each word and each pair of neighbouring words
of a line tagged with its side (``a:`` the agent, ``l:`` the lead), the lead's first name
read as ``NAME`` (so "Hi Pat" and "Hi Dana" teach the same thing). TF-IDF over those
features and a logistic regression with balanced class weights (the scorers' rare
categories count as much as their common ones) learn one member: a category or an alert
tag (two classes), or the call end (one class per reason, "" for none).

A trained model is kept as plain data (``weights``: each feature's IDF and coefficients,
the intercepts, the classes), never as a pickle: loading a pickle from the database runs
whatever it holds, and the data reads the same under any scikit-learn release. Predicting
reads that data without scikit-learn (``predict``), with the vectorizer's own arithmetic
(sublinear term frequency, IDF, L2 norm), so the web and the workers never import it;
only training does.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

# Too few examples learn the handful of calls seen, not the category: a model is trained
# only from this many scored calls with transcripts, with this many of each class (a
# category applied and not applied; a call-end reason to be learnt at all). Below that
# the phrase rule stays.
MIN_EXAMPLES = 30
MIN_PER_CLASS = 5
# The newest share of the examples is held out to measure rule and model on the same
# calls (time-ordered: a model is judged on calls scored after those it learnt from), at
# most this many: the accuracy page's "last N confirmed scores".
HELD_OUT_SHARE = 0.2
HELD_OUT_MOST = 200
# A learnt model replaces the rule only when its F1 on the held-out calls beats the
# rule's by this much: on a few dozen held-out calls one call moves F1 by several points,
# and the source should not flip back and forth from night to night on noise.
MARGIN = 0.05
# Features seen in fewer calls are names and slips of the transcription; the most
# frequent few thousand carry what the scorers listen for and keep a model's data small
# (some 100 KB as JSON).
MIN_CALLS_PER_FEATURE = 2
MOST_FEATURES = 3000
# A binary model suggests its member from this probability on.
THRESHOLD = 0.5
WEIGHTS_VERSION = 1

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SIDE_TAG = {"agent": "a", "lead": "l"}


def line_features(*, side: str, text: str, first_name: str) -> list[str]:
    """One line's features: its words and neighbouring pairs, tagged with its side."""
    name = first_name.strip().lower()
    words = ["NAME" if word == name else word for word in _WORD.findall(text.lower())]
    tag = _SIDE_TAG.get(side, "x")
    grams = [f"{tag}:{word}" for word in words]
    grams += [f"{tag}:{one} {two}" for one, two in pairwise(words)]
    return grams


def call_features(
    lines: Iterable[Mapping[str, Any]], *, first_name: str
) -> list[list[str]]:
    """Each transcript line's features (``transcript_lines``' entries, in order)."""
    return [
        line_features(side=line["side"], text=line["text"], first_name=first_name)
        for line in lines
    ]


def flatten(lines: Sequence[Sequence[str]]) -> list[str]:
    """A call's features, its lines run together (the vectorizer's analyzer)."""
    return [feature for line in lines for feature in line]


@dataclass(frozen=True)
class Measure:
    """How well suggestions matched the scores: precision, recall, F1 and the calls."""

    precision: float
    recall: float
    f1: float
    calls: int


def _measure(correct: int, suggested: int, actual: int, calls: int) -> Measure:
    """Zero where nothing was suggested or nothing was there to find (as scikit-learn's
    ``zero_division=0``): a member never suggested helps no scorer."""
    precision = correct / suggested if suggested else 0.0
    recall = correct / actual if actual else 0.0
    total = precision + recall
    f1 = 2 * precision * recall / total if total else 0.0
    return Measure(precision, recall, f1, calls)


def measure(suggested: Sequence[Any], actual: Sequence[Any]) -> Measure:
    """Suggestions against the scorers' values, call by call. A falsy value is no
    suggestion (and no value scored); a suggestion counts where it equals the score's."""
    correct = sum(1 for s, a in zip(suggested, actual, strict=True) if s and s == a)
    return _measure(
        correct,
        sum(1 for s in suggested if s),
        sum(1 for a in actual if a),
        len(actual),
    )


def enough(labels: Sequence[Any]) -> bool:
    """Whether ``labels`` are enough to learn from (``MIN_EXAMPLES``, ``MIN_PER_CLASS``):
    two classes for a flag, two reasons at least (none counts as one) for a list."""
    if len(labels) < MIN_EXAMPLES:
        return False
    counts = Counter(labels)
    if {type(label) for label in labels} == {bool}:
        return counts[True] >= MIN_PER_CLASS and counts[False] >= MIN_PER_CLASS
    return sum(1 for n in counts.values() if n >= MIN_PER_CLASS) >= 2


def fit(
    documents: Sequence[Sequence[Sequence[str]]], labels: Sequence[Any]
) -> dict[str, Any]:
    """Train on calls' line features and their labels; the model as plain data
    (``weights``). Classes seen fewer than ``MIN_PER_CLASS`` times are not learnt: their
    calls still teach the other classes what they are not."""
    # Only training needs scikit-learn: importing it costs the web a second and memory.
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    counts = Counter(labels)
    kept = [label for label in labels if counts[label] >= MIN_PER_CLASS]
    rare = "" if any(type(label) is str for label in kept) else False
    targets = [label if counts[label] >= MIN_PER_CLASS else rare for label in labels]
    vectorizer = TfidfVectorizer(
        analyzer=flatten,
        min_df=MIN_CALLS_PER_FEATURE if len(documents) >= 2 * MIN_EXAMPLES else 1,
        max_features=MOST_FEATURES,
        sublinear_tf=True,
    )
    matrix = vectorizer.fit_transform(documents)
    model = LogisticRegression(class_weight="balanced", max_iter=1000)
    model.fit(matrix, targets)
    names = vectorizer.get_feature_names_out()
    coef = model.coef_
    features = {
        str(name): [_round(vectorizer.idf_[i])] + [_round(row[i]) for row in coef]
        for i, name in enumerate(names)
    }
    return {
        "version": WEIGHTS_VERSION,
        "classes": [_plain(label) for label in model.classes_],
        "intercept": [_round(value) for value in model.intercept_],
        "features": features,
    }


def _round(value: float) -> float:
    return float(f"{float(value):.6g}")


def _plain(label: Any) -> Any:
    """A class as JSON keeps it: numpy's bool and str as Python's."""
    return label.item() if hasattr(label, "item") else label


@dataclass(frozen=True)
class Prediction:
    """A model's answer for one call: the class, its probability, and the line that
    weighed most for it (None when no line holds a feature the model knows)."""

    value: Any
    probability: float
    line: int | None


def predict(weights: Mapping[str, Any], lines: Sequence[Sequence[str]]) -> Prediction:
    """What a model (``fit``'s data) says of a call's line features, as scikit-learn's
    ``predict_proba`` would (a flag: True from ``THRESHOLD`` on)."""
    features: Mapping[str, Sequence[float]] = weights["features"]
    counts = Counter(
        feature for line in lines for feature in line if feature in features
    )
    values = {
        feature: (1.0 + math.log(count)) * features[feature][0]
        for feature, count in counts.items()
    }
    norm = math.sqrt(sum(value * value for value in values.values())) or 1.0
    values = {feature: value / norm for feature, value in values.items()}
    rows = len(weights["intercept"])
    decisions = [
        weights["intercept"][row]
        + sum(value * features[f][1 + row] for f, value in values.items())
        for row in range(rows)
    ]
    classes = weights["classes"]
    if rows == 1:
        probability = 1.0 / (1.0 + math.exp(-decisions[0]))
        chosen, row, sign = (
            (classes[1], 0, 1.0) if probability >= THRESHOLD else (classes[0], 0, -1.0)
        )
        shown = probability if sign > 0 else 1.0 - probability
    else:
        top = max(decisions)
        exps = [math.exp(d - top) for d in decisions]
        row = exps.index(max(exps))
        chosen, sign, shown = classes[row], 1.0, exps[row] / sum(exps)

    def weight(feature: str) -> float:
        return sign * values[feature] * features[feature][1 + row] / counts[feature]

    line = _strongest(lines, known=values, weight=weight)
    return Prediction(chosen, shown, line)


def _strongest(
    lines: Sequence[Sequence[str]],
    *,
    known: Mapping[str, float],
    weight: Callable[[str], float],
) -> int | None:
    """The line whose features weigh most for the answer (a feature said on several lines
    shares its weight among them); the first line holding a known feature on a tie."""
    best, best_weight = None, -math.inf
    for index, line in enumerate(lines):
        held = [feature for feature in line if feature in known]
        if not held:
            continue
        total = sum(weight(feature) for feature in held)
        if total > best_weight:
            best, best_weight = index, total
    return best


@dataclass(frozen=True)
class Verdict:
    """One member learnt and measured: the rule's and the model's measures on the same
    held-out calls (the model's None when too few calls were left to learn from), and the
    model trained on every example when it is put in force."""

    in_force: bool
    rule: Measure
    learnt: Measure | None
    examples: int
    weights: dict[str, Any] | None


def trainable(labels: Sequence[Any]) -> bool:
    """Two classes with ``MIN_PER_CLASS`` calls each: what a model needs to learn at all."""
    return sum(1 for n in Counter(labels).values() if n >= MIN_PER_CLASS) >= 2


def judge(
    documents: Sequence[Sequence[Sequence[str]]],
    labels: Sequence[Any],
    ruled: Sequence[Any],
) -> Verdict:
    """Learn one member from examples ordered oldest first (``labels`` the scorers',
    ``ruled`` what the phrase rule suggests) and decide which source it takes: the model
    only where its F1 on the newest calls beats the rule's by ``MARGIN``."""
    held = min(HELD_OUT_MOST, max(1, round(len(labels) * HELD_OUT_SHARE)))
    cut = len(labels) - held
    rule = measure(ruled[cut:], labels[cut:])
    if not trainable(labels[:cut]):
        return Verdict(False, rule, None, len(labels), None)
    model = fit(documents[:cut], labels[:cut])
    answers = [predict(model, document).value for document in documents[cut:]]
    learnt = measure(answers, labels[cut:])
    in_force = learnt.f1 > rule.f1 + MARGIN
    weights = fit(documents, labels) if in_force else None
    return Verdict(in_force, rule, learnt, len(labels), weights)
