"""The staff pages: the call page, the call browser, the scoring workspace, the dashboard,
coaching, the lead's thread and the agent's own page. They read every app below them;
nothing imports them."""

from django.apps import AppConfig


class PagesConfig(AppConfig):
    name = "pages"
