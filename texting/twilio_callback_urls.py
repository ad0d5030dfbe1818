"""Twilio Messaging's callbacks, mounted at ``texts/twilio/``: configure the number's (or
Messaging Service's) inbound webhook as ``<PUBLIC_BASE_URL>/texts/twilio/inbound``."""

from django.urls import path

from texting import twilio_callbacks

app_name = "texting-twilio"
urlpatterns = [
    path("inbound", twilio_callbacks.inbound, name="inbound"),
    path("<int:text_id>/status", twilio_callbacks.status, name="status"),
]
