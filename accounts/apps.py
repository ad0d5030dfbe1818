from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        from accounts import schema  # noqa: F401  (registers the OpenAPI auth descriptions)
        from accounts.models import Account, ApiCredential, ApiKey
        from accounts.selectors import api_keys

        # A key edited or deleted, a credential or account deleted (an organization's
        # deletion reaches its credentials), a credential's accounts set.
        api_keys.watch(ApiKey, ApiCredential, Account, ApiCredential.accounts.through)
