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
password, so guessing stops. The counts live in Django's cache (``CACHE_URL``: a file cache under
``var/`` by default, shared by the processes of one machine; Redis for several machines).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

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


def _client_ip(request: HttpRequest) -> str:
    """The client's address. Behind a reverse proxy, ``STEPWISE_TRUSTED_PROXY_HOPS`` says how
    many proxies append to ``X-Forwarded-For`` (the client is that many entries from the end);
    without it the header is ignored, since anyone can send one."""
    hops = getattr(settings, "STEPWISE_TRUSTED_PROXY_HOPS", 0)
    if hops:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _key(kind: str, value: str) -> str:
    return "login-fail:" + kind + ":" + hashlib.sha256(value.encode()).hexdigest()[:32]


class LoginThrottle:
    """Failed-login counts per username and per IP in fixed windows of the cache."""

    def __init__(self, request: HttpRequest, username: str) -> None:
        window = settings.STEPWISE_LOGIN_WINDOW
        self.window = window
        self.slot = int(time.time() // window)
        self.limits = {
            _key("user", (username or "").strip().lower()): settings.STEPWISE_LOGIN_FAILURES,
            _key("ip", _client_ip(request)): settings.STEPWISE_LOGIN_FAILURES * 5,
        }

    def _slot_key(self, key: str) -> str:
        return f"{key}:{self.slot}"

    def blocked_for(self) -> int | None:
        """Seconds until logins are accepted again, or None when they are now."""
        counts = cache.get_many([self._slot_key(k) for k in self.limits])
        for key, limit in self.limits.items():
            if counts.get(self._slot_key(key), 0) >= limit:
                return int(self.window - time.time() % self.window) + 1
        return None

    def failed(self) -> None:
        for key in self.limits:
            slot_key = self._slot_key(key)
            cache.add(slot_key, 0, timeout=self.window * 2)
            try:
                cache.incr(slot_key)
            except ValueError:  # expired between add and incr
                cache.set(slot_key, 1, timeout=self.window * 2)


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

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response
