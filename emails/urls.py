from django.urls import path

from emails import views

app_name = "emails"

urlpatterns = [
    path("opt-out/<str:token>", views.opt_out, name="opt-out"),
]
