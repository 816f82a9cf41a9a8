"""``Authorization: Token <key>``: how scripts authenticate against the API with their keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from annotators.models import ApiToken
from common.throttle import FailureCounter, client_ip, failure_key

# A token's last use is written at most this often: the time is for people ("used today"), and
# one write per request would double what authentication costs.
LAST_USED_EVERY = timedelta(minutes=1)


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>`` against the sha256 of the user's API tokens.

    Every request of every annotator starts here, so the lookup is one plain query (DRF's ORM
    lookup costs about twice the rest of authentication on a small machine); the last-used time
    costs a second, small write at most once a minute per token. A revoked key is refused.
    """

    model = ApiToken

    def authenticate(self, request):
        """A valid token is always served: throttling counts only wrong ones, per client
        address, and answers them 429 past the limit (five times ``STEPWISE_LOGIN_FAILURES`` in
        ``STEPWISE_LOGIN_WINDOW``, as for logins), so a guesser's requests are refused as such
        while the scripts behind the same address (a NAT, or a proxy the app is not told about)
        keep working. Keys are 256 random bits: what guessing can find is nothing; the
        throttle keeps the noise bounded and visible."""
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            failures = _token_failures(request)
            throttled = failures.blocked_for() is not None  # before this one is counted
            failures.failed()
            if throttled:
                raise exceptions.Throttled(
                    wait=failures.blocked_for(),
                    detail="Too many requests with invalid tokens from this address.",
                ) from None
            raise

    def authenticate_credentials(self, key: str):
        User = get_user_model()
        user = next(
            iter(
                User.objects.raw(
                    f"SELECT u.*, t.id AS api_token_id, t.last_used_at AS api_token_used"
                    f" FROM {User._meta.db_table} u"
                    f" JOIN {ApiToken._meta.db_table} t ON t.user_id = u.id"
                    " WHERE t.key_hash = %s AND t.revoked_at IS NULL",
                    [ApiToken.hash_key(key)],
                )
            ),
            None,
        )
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        used = user.api_token_used
        # SQLite hands raw() extra columns back as text or naive datetimes (UTC).
        if isinstance(used, str):
            used = datetime.fromisoformat(used)
        if used is not None and timezone.is_naive(used):
            used = used.replace(tzinfo=UTC)
        if used is None or now - used > LAST_USED_EVERY:
            ApiToken.objects.filter(pk=user.api_token_id).update(last_used_at=now)
        return user, ApiToken(pk=user.api_token_id, user=user, last_used_at=now)


def _token_failures(request) -> FailureCounter:
    limit = settings.STEPWISE_LOGIN_FAILURES * 5
    key = failure_key("token-ip", client_ip(request))
    return FailureCounter({key: limit}, window=settings.STEPWISE_LOGIN_WINDOW)


class TokenScheme(OpenApiAuthenticationExtension):
    target_class = "annotators.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>`; create keys on your profile page or with "
            "`manage.py create_api_token USER`.",
        }
