from typing import Any

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from accounts import schema  # noqa: F401  (registers the OpenAPI auth descriptions)
        from accounts.models import Account, ApiCredential, ApiKey, Organization

        # The services tell the credential cache of what they change; these catch what
        # the admin's forms and deletions change directly (a key edited, a credential,
        # account or organization deleted, a credential's accounts set).
        for model in (ApiKey, ApiCredential, Account, Organization):
            post_delete.connect(_credentials_changed, sender=model)
        post_save.connect(_credentials_changed, sender=ApiKey)
        post_save.connect(_credentials_changed, sender=ApiCredential)
        m2m_changed.connect(_credentials_changed, sender=ApiCredential.accounts.through)


def _credentials_changed(**kwargs: Any) -> None:
    from accounts.selectors import credentials_changed

    credentials_changed()
