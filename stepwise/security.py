"""Security pieces Django 5.2 does not ship: a Content Security Policy and login throttling.

**CSP.** Every response gets a ``Content-Security-Policy`` header: scripts, styles, fonts,
images and requests only from this site, no inline script or ``on*=`` handler, no inline
``<style>`` or ``style=""`` markup, no plugins, no framing, forms post only here. The pages were
written for it: scripts are static files that read ``data-`` attributes, htmx's indicator styles
are off (``htmx-config`` meta tag, ``stepwise.css`` has them), KaTeX sets styles through the DOM
(which CSP allows) and loads its fonts from ``static/``. ``STEPWISE_CSP_REPORT_ONLY=true`` sends
the same policy as ``Content-Security-Policy-Report-Only`` (to try a change on a live site).

**Login throttling.** After ``STEPWISE_LOGIN_FAILURES`` failed logins for one username, or five
times that from one IP address, within ``STEPWISE_LOGIN_WINDOW`` seconds, logins from there (or
for that name) are refused with 429 and a message saying when to try again, without checking the
password, so guessing stops. Windows slide (``common.throttle``): failures age out gradually
instead of all being forgiven when a fixed window turns over. The admin's login answers the same
429 (``admin_login``), and so does the password-change form for wrong old passwords, on the same
count (a guesser cannot switch doors). The counts live in Django's cache (``CACHE_URL``: a file
cache under ``var/`` by default, shared by the processes of one machine; Redis for several).

**Device cookies** (OWASP's answer to lock-out by guessers): a browser that has logged in as a
user gets a signed cookie naming that user. Its attempts for that user are counted on a count of
their own, not on the username's or the address's, so a guesser elsewhere (or behind the same
proxy, where every client shares an address) cannot lock the user out; a stolen cookie still
gets only ``STEPWISE_LOGIN_FAILURES`` guesses per window.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.core import signing
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse

from common.throttle import FailureCounter, client_ip, failure_key

# --- Content Security Policy -------------------------------------------------------------------

POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}


def policy_header() -> str:
    return "; ".join(f"{name} {value}" for name, value in POLICY.items())


class ContentSecurityPolicyMiddleware:
    """Adds the policy to every response that does not set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.header = (
            "Content-Security-Policy-Report-Only"
            if getattr(settings, "STEPWISE_CSP_REPORT_ONLY", False)
            else "Content-Security-Policy"
        )
        self.value = policy_header()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.header not in response:
            response[self.header] = self.value
        return response


# --- Login throttling --------------------------------------------------------------------------


DEVICE_COOKIE = "stepwise_device"
DEVICE_SALT = "stepwise.security.device"
DEVICE_MAX_AGE = 365 * 24 * 3600


def device_of(request: HttpRequest, username: str) -> str | None:
    """The id of this browser's device cookie when it was given for ``username``, else None."""
    value = request.COOKIES.get(DEVICE_COOKIE)
    if not value:
        return None
    try:
        data = signing.loads(value, salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("u") != _name(username):
        return None
    return str(data.get("d") or "") or None


def device_cookie_set(response: HttpResponse, username: str) -> None:
    """Mark this browser as one that logged in as ``username`` (after a successful login)."""
    value = signing.dumps({"u": _name(username), "d": secrets.token_urlsafe(16)}, salt=DEVICE_SALT)
    response.set_cookie(
        DEVICE_COOKIE,
        value,
        max_age=DEVICE_MAX_AGE,
        httponly=True,
        secure=getattr(settings, "SESSION_COOKIE_SECURE", False),
        samesite="Lax",
    )


def _name(username: str) -> str:
    return (username or "").strip().lower()


class LoginThrottle:
    """Failed-login counts per username and per IP, in sliding windows (``common.throttle``);
    for a browser with a device cookie of that user, per device instead."""

    def __init__(self, request: HttpRequest, username: str) -> None:
        limit = settings.STEPWISE_LOGIN_FAILURES
        device = device_of(request, username)
        if device:
            limits = {failure_key("device", device): limit}
        else:
            limits = {
                failure_key("user", _name(username)): limit,
                failure_key("ip", client_ip(request)): limit * 5,
            }
        self.counter = FailureCounter(limits, window=settings.STEPWISE_LOGIN_WINDOW)

    def blocked_for(self) -> int | None:
        """Seconds until logins are accepted again, or None when they are now."""
        return self.counter.blocked_for()

    def failed(self) -> None:
        self.counter.failed()


THROTTLED = "Too many failed logins. Try again in %(minutes)s minute(s)."


class ThrottleMixin:
    """For a login form: refuse early (without checking the password) once throttled."""

    throttled = False

    def clean(self):
        username = self.data.get("username", "")
        throttle = LoginThrottle(self.request, username)
        if (wait := throttle.blocked_for()) is not None:
            self.throttled = True
            raise self.get_throttled_error(wait)
        try:
            return super().clean()
        except ValidationError:
            throttle.failed()
            raise

    def get_throttled_error(self, wait: int) -> ValidationError:
        return ValidationError(
            THROTTLED, code="throttled", params={"minutes": max(1, (wait + 59) // 60)}
        )


class ThrottledAuthenticationForm(ThrottleMixin, AuthenticationForm):
    """The site's login form."""


class ThrottledAdminAuthenticationForm(ThrottleMixin, AdminAuthenticationForm):
    """The admin's login form (same counts: a guesser cannot switch doors)."""


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """Django's password change, with wrong old passwords counted as failed logins of the user
    (the same count and limit): a stolen session cannot guess the password at speed."""

    throttled = False

    def __init__(self, user, *args, request: HttpRequest, **kwargs) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self):
        throttle = LoginThrottle(self.request, self.user.get_username())
        if (wait := throttle.blocked_for()) is not None:
            self.throttled = True
            raise ValidationError(
                THROTTLED_PASSWORD, code="throttled", params={"minutes": max(1, (wait + 59) // 60)}
            )
        try:
            return super().clean_old_password()
        except ValidationError:
            throttle.failed()
            raise


THROTTLED_PASSWORD = "Too many wrong passwords. Try again in %(minutes)s minute(s)."


class LoginView(auth_views.LoginView):
    """Django's login view with throttling; a throttled attempt answers 429 with the form."""

    form_class = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {
            "password_reset": email_configured(),
            # Sent here by an action whose session had ended (labeling.views): say so.
            "session_ended": self.request.GET.get("session") == "ended",
        }

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response

    def form_valid(self, form):
        response = super().form_valid(form)
        device_cookie_set(response, form.get_user().get_username())
        return response


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change with the login throttle on the old password (429 when
    throttled, the form with its message)."""

    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self):
        return super().get_form_kwargs() | {"request": self.request}

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response


def throttled_admin_login(login: Callable) -> Callable:
    """The admin site's login view, answering 429 when its (throttled) form refused the attempt."""

    def view(request: HttpRequest, extra_context=None) -> HttpResponse:
        response = login(request, extra_context)
        form = (getattr(response, "context_data", None) or {}).get("form")
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response

    return view


# --- Passwords ---------------------------------------------------------------------------------
# Changing one's password: Django's view, linked from the profile. An operator resets anyone's
# with ``manage.py changepassword USER``; with email configured (``EMAIL_HOST``), people reset
# their own through Django's reset-by-email views, which are 404 otherwise.


def email_configured() -> bool:
    return bool(getattr(settings, "EMAIL_HOST", ""))


class _NeedsEmail:
    def dispatch(self, request, *args, **kwargs):
        if not email_configured():
            raise Http404("Password reset by email is not configured on this site.")
        return super().dispatch(request, *args, **kwargs)


class PasswordResetView(_NeedsEmail, auth_views.PasswordResetView):
    pass


class PasswordResetDoneView(_NeedsEmail, auth_views.PasswordResetDoneView):
    pass


class PasswordResetConfirmView(_NeedsEmail, auth_views.PasswordResetConfirmView):
    pass


class PasswordResetCompleteView(_NeedsEmail, auth_views.PasswordResetCompleteView):
    pass
