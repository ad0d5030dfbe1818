"""config.urls plus click-to-call, until config/urls.py includes clicktocall.urls itself."""

from django.urls import include, path

from config.urls import urlpatterns as root_urlpatterns

urlpatterns = [*root_urlpatterns, path("api/", include("clicktocall.urls"))]
