from django.urls import path

from consenting import apis

app_name = "consent-api"
urlpatterns = [path("consent", apis.ConsentApi.as_view(), name="consent")]
