"""The manager's, reviewer's and invitee's pages; mounted at the site root by stepwise/urls.py."""

from __future__ import annotations

from django.urls import path

from annotators import views
from annotators.review import views as review_views

app_name = "annotators"

campaign = "campaigns/<slug:slug>/"
urlpatterns = [
    path(campaign + "members/", views.member_list, name="members"),
    path(campaign + "members/<int:pk>/", views.member_detail, name="member"),
    path(campaign + "invitations/", views.invitation_list, name="invitations"),
    path(
        campaign + "invitations/<int:pk>/revoke/",
        views.invitation_revoke,
        name="invitation-revoke",
    ),
    path(campaign + "gold/", views.gold_list, name="gold"),
    path(campaign + "gold/<int:pk>/", views.gold_edit, name="gold-edit"),
    path(campaign + "dashboard/", views.dashboard, name="dashboard"),
    path(campaign + "figures/refresh/", views.snapshot_refresh, name="snapshot-refresh"),
    path(campaign + "agreement/", views.agreement, name="agreement"),
    path(campaign + "reviews/", review_views.review_list, name="reviews"),
    path(campaign + "reviews/<int:pk>/", review_views.review_detail, name="review"),
    path(campaign + "my-reviews/", review_views.my_reviews, name="my-reviews"),
    path(campaign + "adjudication/", review_views.adjudication_list, name="adjudications"),
    path(
        campaign + "adjudication/<int:pk>/", review_views.adjudication_detail, name="adjudication"
    ),
    path("join/<str:token>/", views.join, name="join"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
]
