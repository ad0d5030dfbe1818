from django.urls import path

from leads import apis

urlpatterns = [path("nl", apis.LeadReceiveApi.as_view(), name="lead-receive")]
