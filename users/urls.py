from django.urls import path

from users import apis

app_name = "users-api"

urlpatterns = [
    path("users", apis.UserCreateApi.as_view(), name="user-create"),
    path("users/find/email", apis.UserFindByEmailApi.as_view(), name="user-find-email"),
    path("users/find/phone", apis.UserFindByPhoneApi.as_view(), name="user-find-phone"),
    path(
        "users/find/available-user-code",
        apis.UserCodeAvailableApi.as_view(),
        name="user-code-available",
    ),
    path("users/<int:user_id>", apis.UserDetailApi.as_view(), name="user-detail"),
]
