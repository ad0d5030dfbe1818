"""Support sees the transcription backlog and failures on the overview, and sends failed
transcriptions again from the list."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from insights.models import Transcription, TranscriptionStatus
from insights.tasks import transcription_task
from tests.admin_pages import sign_in_support
from tests.scoring.factories import CallFactory
from tests.test_admin_overview import INDEX, counts, listed, overview_rows

pytestmark = pytest.mark.django_db


def transcription(status, *, age=timedelta(0), **fields):
    job = Transcription.objects.create(call=CallFactory(), status=status, **fields)
    Transcription.objects.filter(pk=job.pk).update(created_at=timezone.now() - age)
    return job


def test_overview_shows_the_backlog_and_the_days_failures_with_links(client):
    sign_in_support(client)
    transcription(TranscriptionStatus.PENDING, age=timedelta(minutes=42))
    transcription(TranscriptionStatus.PENDING, age=timedelta(minutes=3))
    transcription(TranscriptionStatus.DONE)
    transcription(TranscriptionStatus.FAILED, finished_at=timezone.now(), reason="x")
    transcription(
        TranscriptionStatus.FAILED,
        finished_at=timezone.now() - timedelta(days=2),
        reason="old",
    )

    rows = overview_rows(client.get(INDEX), "overview-transcriptions")

    assert counts(rows) == {
        "Waiting": 2,
        "Oldest waiting, minutes": 42,
        "Failed, last 24 hours": 1,
    }
    links = {label: link for label, _, link in rows}
    assert listed(client, links["Waiting"]) == 2
    assert (
        listed(client, links["Failed, last 24 hours"]) == 2
    )  # the list: every failure


def test_transcribe_again_queues_failed_ones_and_leaves_the_others(
    client, monkeypatch, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    sent = []
    monkeypatch.setattr(
        transcription_task,
        "apply_async",
        lambda *, kwargs, **options: sent.append(kwargs["call_id"]),
    )
    failed = transcription(TranscriptionStatus.FAILED, tries=3, reason="gave up")
    done = transcription(TranscriptionStatus.DONE, tries=1)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:insights_transcription_changelist"),
            {"action": "transcribe_again", "_selected_action": [failed.pk, done.pk]},
            follow=True,
        )

    assert response.status_code == 200
    assert [str(m) for m in response.context["messages"]] == [
        "1 transcription queued again. 1 not failed, left alone."
    ]
    failed.refresh_from_db()
    assert (failed.status, failed.tries, failed.reason) == ("pending", 0, "")
    done.refresh_from_db()
    assert done.status == TranscriptionStatus.DONE
    assert sent == [failed.call_id]
