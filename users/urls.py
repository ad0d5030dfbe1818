from django.urls import path

from users import apis

urlpatterns = [
    path("", apis.UserCreateApi.as_view(), name="user-create"),
    path("/find/email", apis.UserFindByEmailApi.as_view(), name="user-find-email"),
    path("/find/phone", apis.UserFindByPhoneApi.as_view(), name="user-find-phone"),
    path("/find/available-user-code", apis.UserCodeAvailableApi.as_view(), name="user-code-available"),
    path("/<int:user_id>", apis.UserDetailApi.as_view(), name="user-detail"),
]
