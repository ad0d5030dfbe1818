from django.urls import path

from notify import views

app_name = "alerts"

urlpatterns = [
    path("", views.alert_preferences, name="preferences"),
]
