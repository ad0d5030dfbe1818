from django.urls import path

from leads import apis

app_name = "leads"
urlpatterns = [path("nl", apis.LeadReceiveApi.as_view(), name="lead-receive")]
