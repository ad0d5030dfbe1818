from django.urls import path

from scoring import apis

urlpatterns = [path("scoreddata", apis.ScoredDataApi.as_view(), name="scored-data")]
