"""The pages: call browser and call page (with the lead's texts and replies, and its
appointments), scoring workspace, speed-to-lead dashboard, the coaching queue, a day's
appointments, the suggestions' accuracy and the agent's own page."""

from django.urls import path

from pages import (
    views,
    views_appointments,
    views_cadence,
    views_coaching,
    views_consent,
    views_learnt,
    views_thread,
)

app_name = "pages"

urlpatterns = [
    path("", views.home, name="home"),
    path("calls/", views.call_list, name="call-list"),
    path("calls/export.csv", views.call_export, name="call-export"),
    path("calls/<int:call_id>/", views.call_detail, name="call-detail"),
    path("calls/<int:call_id>/coaching", views.call_coach, name="call-coach"),
    path(
        "calls/<int:call_id>/texts",
        views_thread.call_text_reply,
        name="call-text-reply",
    ),
    path(
        "calls/<int:call_id>/texts/opt-out/<str:decision>",
        views_thread.call_possible_opt_out,
        name="call-possible-opt-out",
    ),
    path(
        "calls/<int:call_id>/do-not-call",
        views_consent.call_do_not_call,
        name="call-do-not-call",
    ),
    path(
        "calls/<int:call_id>/spoken-revocation/<str:decision>",
        views_consent.call_spoken_revocation,
        name="call-spoken-revocation",
    ),
    path(
        "calls/<int:call_id>/follow-up/stop",
        views_cadence.call_cadence_stop,
        name="call-cadence-stop",
    ),
    path(
        "calls/<int:call_id>/coaching/read",
        views.call_coaching_read,
        name="call-coaching-read",
    ),
    path(
        "calls/<int:call_id>/appointments",
        views_appointments.call_appointment_set,
        name="call-appointment-set",
    ),
    path(
        "calls/<int:call_id>/appointments/<int:appointment_id>/<str:to>",
        views_appointments.call_appointment_change,
        name="call-appointment-change",
    ),
    path("scoring/", views.scoring_home, name="scoring-home"),
    path("scoring/next", views.scoring_next, name="scoring-next"),
    path("scoring/calls/<int:call_id>/", views.scoring_call, name="scoring-call"),
    path("scoring/calls/<int:call_id>/skip", views.scoring_skip, name="scoring-skip"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("coaching/", views_coaching.coaching, name="coaching"),
    path("appointments/", views_appointments.appointments_day, name="appointments"),
    path(
        "appointments/<int:appointment_id>/<str:to>",
        views_appointments.appointment_mark,
        name="appointment-mark",
    ),
    path(
        "suggestions/accuracy/",
        views_learnt.suggestion_accuracy,
        name="suggestion-accuracy",
    ),
    path("me/", views_coaching.agent_home, name="agent-home"),
]
