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
429 (``admin_login``). The counts live in Django's cache (``CACHE_URL``: a file cache under
``var/`` by default, shared by the processes of one machine; Redis for several machines).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
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


class LoginThrottle:
    """Failed-login counts per username and per IP, in sliding windows (``common.throttle``)."""

    def __init__(self, request: HttpRequest, username: str) -> None:
        self.counter = FailureCounter(
            {
                failure_key("user", (username or "").strip().lower()): (
                    settings.STEPWISE_LOGIN_FAILURES
                ),
                failure_key("ip", client_ip(request)): settings.STEPWISE_LOGIN_FAILURES * 5,
            },
            window=settings.STEPWISE_LOGIN_WINDOW,
        )

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


class LoginView(auth_views.LoginView):
    """Django's login view with throttling; a throttled attempt answers 429 with the form."""

    form_class = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {"password_reset": email_configured()}

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
