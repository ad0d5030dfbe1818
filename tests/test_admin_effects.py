"""Where failed side effects and set-aside sweep items are seen, and sent again: the
support overview counts them and links to their lists, each row with its reason."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Effect, EffectStatus, SetAside
from core.outbox import effect, effect_record, effect_run
from core.sweeps import SET_ASIDE_AFTER, each
from tests.admin_pages import sign_in_support
from tests.handover import hold_hand_overs
from tests.test_admin_overview import INDEX, counts, listed, overview_rows

pytestmark = [pytest.mark.django_db, pytest.mark.outbox]

BROKEN = [True]


@effect("tests.admin_probe")
def admin_probe(**params: object) -> None:
    if BROKEN[0]:
        raise ValueError("All strings must be XML compatible")


def failed_effect(capture, monkeypatch) -> Effect:
    hold_hand_overs(monkeypatch, "core.tasks.effect_run_task")
    with capture(execute=True):
        effect_record(kind="tests.admin_probe", key="admin:1", about="call 9")
    row = Effect.objects.get(key="admin:1")
    BROKEN[0] = True
    assert effect_run(effect_id=row.pk) == "failed"
    return row


def poisoned_sweep_item() -> None:
    def handle(item: int) -> None:
        if item == 13:
            raise KeyError("poison")

    for _ in range(SET_ASIDE_AFTER):
        each(sweep="tests.sweep", items=range(10, 16), handle=handle)


def test_the_overview_counts_failed_effects_and_items_set_aside_and_links_them(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    sign_in_support(client)
    row = failed_effect(django_capture_on_commit_callbacks, monkeypatch)
    poisoned_sweep_item()

    rows = overview_rows(client.get(INDEX), "overview-effects")

    assert counts(rows) == {
        "Effects failed, last 24 hours": 1,
        "Effects waiting": 0,
        "Sweep items set aside": 1,
    }
    assert [listed(client, link) for _, _, link in rows] == [1, 0, 1]
    page = client.get(reverse("admin:core_effect_change", args=[row.pk]))
    assert "ValueError: All strings must be XML compatible" in page.content.decode()


def test_support_sends_a_failed_effect_and_an_item_set_aside_again(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    sign_in_support(client)
    row = failed_effect(django_capture_on_commit_callbacks, monkeypatch)
    poisoned_sweep_item()
    aside = SetAside.objects.get(sweep="tests.sweep")
    assert (aside.item, aside.failures, aside.set_aside) == (
        "13",
        SET_ASIDE_AFTER,
        True,
    )
    assert aside.error == "KeyError: 'poison'"

    BROKEN[0] = False
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:core_effect_changelist"),
            {"action": "send_again", "_selected_action": [row.pk]},
        )
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.status, row.tries) == (EffectStatus.PENDING, 0)
    assert effect_run(effect_id=row.pk) == "done"

    response = client.post(
        reverse("admin:core_setaside_changelist"),
        {"action": "sweep_again", "_selected_action": [aside.pk]},
    )
    assert response.status_code == 302
    assert not SetAside.objects.exists()
