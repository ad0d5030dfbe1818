"""profilePicture through the User API: downloaded from a local HTTPS server, stored with
Django's storage, served as imageUrl, replaced, cleared and deleted with the user."""

import pytest
from django.core.files.storage import default_storage

from tests.users.picture_server import JPEG, PNG, PictureServer
from tests.users.test_user_api import created, post_user
from users.models import User

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = PictureServer(tmp_path_factory.mktemp("picture-server"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def picture_settings(settings, server, tmp_path):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = ["127.0.0.1"]
    settings.PROFILE_PICTURE_CA_BUNDLE = str(server.cert)
    settings.MEDIA_ROOT = tmp_path / "media"


def stored_name(user_body):
    prefix = "https://leads.example.test/media/"
    assert user_body["imageUrl"].startswith(prefix)
    return user_body["imageUrl"].removeprefix(prefix)


def test_create_downloads_and_stores_the_picture(tenant, server):
    user = created(tenant, profilePicture=server.url("/picture.png"))

    name = stored_name(user)
    assert name.startswith("profile-pictures/")
    assert name.endswith(".png")
    with default_storage.open(name) as stored:
        assert stored.read() == PNG
    assert User.objects.get(pk=user["id"]).profile_picture.name == name


def test_update_replaces_the_picture_and_removes_the_old_copy(
    tenant, server, django_capture_on_commit_callbacks
):
    user = created(tenant, profilePicture=server.url("/picture.png"))
    old = stored_name(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{user['id']}",
            {"profilePicture": server.url("/picture.jpg")},
            format="json",
        )

    new = stored_name(response.json()["user"])
    assert new.endswith(".jpg")
    assert new != old
    with default_storage.open(new) as stored:
        assert stored.read() == JPEG
    assert not default_storage.exists(old)


def test_update_with_null_clears_the_picture(
    tenant, server, django_capture_on_commit_callbacks
):
    user = created(tenant, profilePicture=server.url("/picture.png"))
    old = stored_name(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{user['id']}", {"profilePicture": None}, format="json"
        )

    assert response.json()["user"]["imageUrl"] is None
    assert not default_storage.exists(old)


def test_delete_removes_the_stored_picture(
    tenant, server, django_capture_on_commit_callbacks
):
    user = created(tenant, profilePicture=server.url("/picture.png"))
    name = stored_name(user)

    with django_capture_on_commit_callbacks(execute=True):
        assert tenant.client().delete(f"/api/users/{user['id']}").status_code == 200

    assert not default_storage.exists(name)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/picture.txt-missing", "The profile picture could not be downloaded."),
        ("/text-labelled-png", "The profile picture must be an image."),
        ("/large", "The profile picture may not be larger than 5 MiB."),
        ("/redirect/other-loopback", "The profile picture address is not allowed."),
    ],
)
def test_a_picture_that_cannot_be_fetched_is_a_422_and_creates_nothing(
    tenant, server, path, message
):
    response = post_user(tenant, profilePicture=server.url(path))

    assert response.status_code == 422
    assert response.json() == {
        "message": "The given data was invalid.",
        "errors": {"profilePicture": [message]},
    }
    assert not User.objects.exists()


def test_a_failed_update_keeps_the_old_picture(tenant, server):
    user = created(tenant, profilePicture=server.url("/picture.png"))

    response = tenant.client().put(
        f"/api/users/{user['id']}",
        {"profilePicture": server.url("/bomb.png")},
        format="json",
    )

    assert response.status_code == 422
    assert default_storage.exists(stored_name(user))
    assert (
        tenant.client().get(f"/api/users/{user['id']}").json()["user"]["imageUrl"]
        == user["imageUrl"]
    )


def test_a_picture_on_a_private_address_is_refused_without_the_test_exemption(
    tenant, server, settings
):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = []

    response = post_user(tenant, profilePicture=server.url("/picture.png"))

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "profilePicture": ["The profile picture address is not allowed."]
    }
