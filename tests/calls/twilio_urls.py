"""The project's URLs plus Twilio's webhooks, mounted where config/urls.py will mount them."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("calls/twilio/", include("calls.webhook_urls")),
    *project_urlpatterns,
]
