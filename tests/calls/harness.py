"""A deterministic stand-in for the broker and the clock: what the pipeline would hand to
Celery (dispatches, dials, simulated provider callbacks) is queued here in virtual time
and delivered in order through the same services the tasks call."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from calls import services
from calls.models import Call, CallAttempt, CallStatus, Leg, SimulatedLeg
from calls.pipeline import broker
from calls.telephony import simulator
from calls.telephony.simulator import SimulatorProvider
from providers.telephony import Event
from tests.users.factories import agent


def agent_leg(account: Any, **fields: Any) -> CallAttempt:
    """An agent's simulator leg, dial requested, of a new call from +13035550123 that
    is dialing its first round."""
    taker = agent(account, phone="+13035550140")
    call = Call.objects.create(
        account=account,
        phone="+13035550123",
        received_at=timezone.now(),
        status=CallStatus.DIALING,
        rounds=1,
    )
    return CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=taker,
        number=taker.phone_number,
        provider="simulator",
        dial_requested_at=timezone.now(),
        **fields,
    )


def dials_of(attempt_id: int) -> int:
    """How many times the simulated switch dialed a leg (the fault tests' witness: never twice)."""
    record = SimulatedLeg.objects.filter(attempt_id=attempt_id).first()
    return record.dials if record else 0


@dataclass(order=True)
class Pending:
    at: float
    seq: int
    what: str = field(compare=False)
    payload: Any = field(compare=False)


class World:
    def __init__(self, monkeypatch, capture_on_commit) -> None:
        self.now = 0.0
        self.queue: list[Pending] = []
        self.seq = itertools.count()
        self.capture = capture_on_commit
        self.delivered: list[Event] = []
        self.instructions: list[tuple[Event, Any]] = []
        self.dials: list[int] = []
        self.requeued_for: list[Any] = []
        monkeypatch.setattr(simulator, "_at", self._at)
        monkeypatch.setattr(broker, "dispatch_setup", self._dispatch)
        monkeypatch.setattr(broker, "dispatch_dial", self._dial_later)
        original = SimulatorProvider.dial_agent

        def counting_dial(provider, dial):
            self.dials.append(dial.attempt_id)
            return original(provider, dial)

        monkeypatch.setattr(SimulatorProvider, "dial_agent", counting_dial)

    def _push(self, delay: float, what: str, payload: Any) -> None:
        heapq.heappush(
            self.queue, Pending(self.now + delay, next(self.seq), what, payload)
        )

    def _at(self, seconds: float, *events: Event, webhook: bool = False) -> None:
        for event in events:
            self._push(seconds, "event", event)

    def _dispatch(self, call_id: int, at=None, **_) -> None:
        if at is not None:
            self.requeued_for.append(at)
        self._push(0, "setup", call_id)

    def _dial_later(self, attempt_id: int, **_) -> None:
        self._push(0, "dial", attempt_id)

    def step(self) -> Pending:
        item = heapq.heappop(self.queue)
        self.now = max(self.now, item.at)
        with self.capture(execute=True):
            if item.what == "event":
                self.delivered.append(item.payload)
                instruction = services.call_event(item.payload)
                self.instructions.append((item.payload, instruction))
                SimulatorProvider().follow(
                    attempt_id=item.payload.attempt_id, instruction=instruction
                )
            elif item.what == "setup":
                Call.objects.filter(
                    pk=item.payload, next_attempt_at__isnull=False
                ).update(next_attempt_at=None)
                services.call_setup(call_id=item.payload)
            else:
                services.attempt_dial(attempt_id=item.payload)
        return item

    def run(self, max_steps: int = 500) -> None:
        """Deliver everything queued (retries become due at once), until nothing is left."""
        for _ in range(max_steps):
            if not self.queue and not self._sweep():
                return
            self.step()
        raise AssertionError("the pipeline did not settle")

    def run_until(
        self, condition: Callable[[Pending], bool], max_steps: int = 500
    ) -> Pending:
        """Deliver what is queued, as ``run`` does, until the next item meets ``condition``;
        returns that item, not delivered."""
        for _ in range(max_steps):
            if not self.queue and not self._sweep():
                raise AssertionError("the pipeline settled first")
            if condition(self.queue[0]):
                return self.queue[0]
            self.step()
        raise AssertionError("the pipeline did not settle")

    def _sweep(self) -> bool:
        """What the periodic sweep does for retries left to it: dispatch calls waiting to be due."""
        waiting = list(
            Call.objects.filter(status="QUEUED", next_attempt_at__isnull=False)
        )
        for call in waiting:
            self.requeued_for.append(call.next_attempt_at)
            self._push(0, "setup", call.pk)
        return bool(waiting)

    def queue_call(self, **kwargs) -> Call:
        with self.capture(execute=True):
            return services.call_queue(**kwargs)
