from typing import Any

from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "insights"
    verbose_name = "Call insights"

    def ready(self) -> None:
        from calls.signals import recording_stored
        from insights import selftest  # noqa: F401 (the worker's check at start)

        recording_stored.connect(
            _on_recording_stored, dispatch_uid="insights.on_recording_stored"
        )


def _on_recording_stored(sender: Any, *, call_id: int, **kwargs: Any) -> None:
    """A stored recording is transcribed (sent inside the transaction that stored it)."""
    from insights.services import transcription_request

    transcription_request(call_id=call_id)
