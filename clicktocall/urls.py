from django.urls import path

from clicktocall import apis

app_name = "clicktocall"
urlpatterns = [
    path("clicktocallv2", apis.ClickToCallApi.as_view(), name="click-to-call"),
]
