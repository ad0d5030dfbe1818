"""The project's URLs plus Twilio's callbacks, mounted where config/urls.py mounts them."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("calls/twilio/", include("calls.telephony.twilio_callback_urls")),
    *project_urlpatterns,
]
