"""The Redis transport's guard (config/broker.py): an acknowledgement that fails because
the broker's connection is gone is logged and given up, never raised into the worker."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from kombu.transport import redis

from config.broker import QoS


def _qos() -> QoS:
    channel = SimpleNamespace(connection_errors=(ConnectionError,), do_restore=False)
    qos = QoS(channel, prefetch_count=1)
    qos._delivered["tag-1"] = ("message", "exchange", "key")
    return qos


@pytest.mark.parametrize(
    "failure",
    [
        # kombu 5.7.0 reads the cleared connection: ``None.client``.
        AttributeError("'NoneType' object has no attribute 'client'"),
        ConnectionError("Connection refused"),
    ],
)
def test_an_ack_after_the_broker_is_gone_is_logged_and_forgotten(
    monkeypatch, caplog, failure
):
    def lost(self, delivery_tag):
        raise failure

    monkeypatch.setattr(redis.QoS, "ack", lost)
    qos = _qos()
    with caplog.at_level(logging.WARNING, logger="config.broker"):
        qos.ack("tag-1")  # does not raise: the worker keeps running
    assert "could not acknowledge a message" in caplog.text
    qos._flush()
    assert "tag-1" not in qos._delivered  # nothing of it left to restore later


def test_any_other_error_of_an_ack_still_raises(monkeypatch):
    def broken(self, delivery_tag):
        raise ValueError("a bug, not a lost broker")

    monkeypatch.setattr(redis.QoS, "ack", broken)
    with pytest.raises(ValueError, match="a bug"):
        _qos().ack("tag-1")
