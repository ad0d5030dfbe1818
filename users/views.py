"""Sign-in pages for scorers, managers and agents: Django's auth views with our templates,
the sign-in throttled as the admin's is (per address and per username)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm

from core.throttling import ThrottledSignInMixin


class SignInForm(ThrottledSignInMixin, AuthenticationForm):
    """Username and password, refused for a while after too many failures."""


class SignInView(auth_views.LoginView):
    form_class = SignInForm
    template_name = "auth/login.html"
    redirect_authenticated_user = True
