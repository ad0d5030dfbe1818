from django.conf import settings
from django.conf.urls.static import static
from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/", include("users.urls")),
    path("api/", include("leads.urls")),
    path("api/", include("clicktocall.urls")),
    path("api/", include("scoring.urls")),
    path("api/", include("appointments.urls")),
    path("api/", include("consenting.urls")),
    path("calls/twilio/", include("calls.telephony.twilio_callback_urls")),
    path("calls/", include("calls.urls")),
    path("texts/twilio/", include("texting.twilio_callback_urls")),
    path("healthz", healthz),
    # Pages for scorers, managers and agents, and their sign-in.
    path("", include("users.page_urls")),
    path("", include("pages.urls")),
    path("alerts/", include("notify.page_urls")),
    path("emails/", include("emails.urls")),
]
if settings.DEBUG:
    urlpatterns += static(settings.MEDIA_URL, document_root=settings.MEDIA_ROOT)

handler404 = "core.middleware.not_found"
handler500 = "core.middleware.server_error"
