from django.urls import path

from appointments import apis

app_name = "appointments-api"
urlpatterns = [
    path("appointments", apis.AppointmentListApi.as_view(), name="list"),
    path(
        "appointments/<int:appointment_id>",
        apis.AppointmentApi.as_view(),
        name="one",
    ),
]
