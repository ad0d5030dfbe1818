from django.urls import path

from scoring import apis

app_name = "scoring-api"
urlpatterns = [path("scoreddata", apis.ScoredDataApi.as_view(), name="scored-data")]
