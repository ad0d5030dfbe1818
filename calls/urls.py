from django.urls import path

from calls import views

app_name = "calls"
urlpatterns = [
    path("recordings/<str:token>.wav", views.recording, name="recording"),
]
