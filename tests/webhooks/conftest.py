import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webhooks.receiver import Receiver
from webhooks import tasks
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_delivery_send

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "integrators-guide.md"


@pytest.fixture(scope="session")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    server = Receiver(tmp_path_factory.mktemp("webhook-receiver"))
    yield server
    server.stop()


@pytest.fixture
def hooks(settings: Any, receiver: Receiver) -> Receiver:
    """Deliveries may reach the local receiver (127.0.0.1, its own certificate)."""
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    settings.WEBHOOK_CA_BUNDLE = str(receiver.cert)
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    receiver.clear()
    return receiver


class Broker:
    """What the services hand to the broker, recorded instead of published: (delivery id,
    countdown). ``deliver()`` plays a worker: it sends each recorded delivery once it is due."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, float | None]] = []
        self.down = False

    def apply_async(
        self,
        *,
        kwargs: dict[str, Any],
        countdown: float | None = None,
        retry: bool = True,
        **options: Any,
    ) -> None:
        if self.down:
            raise ConnectionError("the broker is down")
        self.sent.append((kwargs["delivery_id"], countdown))

    def take(self) -> list[int]:
        ids, self.sent = [delivery_id for delivery_id, _ in self.sent], []
        return ids

    def deliver(self, capture: Callable[..., Any], *, rounds: int = 50) -> list[str]:
        """Send what was handed over, and what that hands over, at each delivery's due time."""
        outcomes: list[str] = []
        for _ in range(rounds):
            ids = self.take()
            if not ids:
                return outcomes
            for delivery_id in ids:
                due = (
                    WebhookDelivery.objects.filter(pk=delivery_id)
                    .values_list("next_attempt_at", flat=True)
                    .first()
                )
                with capture(execute=True):
                    outcomes.append(
                        webhook_delivery_send(delivery_id=delivery_id, now=due)
                    )
        raise AssertionError("deliveries did not settle")


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Broker:
    fake = Broker()
    monkeypatch.setattr(tasks.webhook_deliver_task, "apply_async", fake.apply_async)
    return fake


def guide_examples() -> dict[str, dict[str, Any]]:
    """The example event of each type in the integrator's guide."""
    import json

    text = GUIDE.read_text()
    found = re.findall(r"^#### `(\w+)`\n\n```json\n(.*?)\n```", text, re.M | re.S)
    return {name: json.loads(body) for name, body in found}


def guide_verifier() -> Callable[..., bool]:
    """``verify_webhook`` exactly as the guide prints it."""
    text = GUIDE.read_text()
    section = text[text.index("### Verifying a delivery") :]
    block = re.search(r"```python\n(.*?)\n```", section, re.S)
    assert block is not None, "the guide has no verify_webhook example"
    code = block.group(1)
    namespace: dict[str, Any] = {}
    exec(compile(code, "integrators-guide.md", "exec"), namespace)
    return namespace["verify_webhook"]


def keys(value: object) -> object:
    """The member names of a JSON value, nested (lists by their first item)."""
    if isinstance(value, dict):
        return {name: keys(item) for name, item in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return None
