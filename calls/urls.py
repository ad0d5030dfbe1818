from django.urls import path

from calls import views

urlpatterns = [
    path("recordings/<str:token>.wav", views.recording, name="call-recording"),
]
