from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from labeling import campaign_views
from stepwise import observability, security
from stepwise.security import LoginView, ThrottledAdminAuthenticationForm, throttled_admin_login

admin.site.login_form = ThrottledAdminAuthenticationForm
admin.site.login = throttled_admin_login(admin.site.login)

urlpatterns = [
    path("", campaign_views.home, name="home"),
    path("healthz", observability.healthz, name="healthz"),
    path("readyz", observability.readyz, name="readyz"),
    path("metrics", observability.metrics, name="metrics"),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", security.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password/changed/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("password/reset/", security.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password/reset/sent/",
        security.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        security.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/complete/",
        security.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("admin/", admin.site.urls),
    path("campaigns/<slug:slug>/imports/", include("imports.urls")),
    path("campaigns/<slug:slug>/machines/", include("machines.urls")),
    path("campaigns/<slug:slug>/exports/", include("exports.urls")),
    path("campaigns/<slug:slug>/active-learning/", include("learning.urls")),
    path("api/", include("stepwise.api_urls")),
    path("", include("labeling.urls")),
    path("", include("annotators.urls")),
]

handler400 = "common.api.handler400"
handler403 = "common.api.handler403"
handler404 = "common.api.handler404"
handler500 = "common.api.handler500"
