from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from labeling.models import Campaign


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The campaigns this person belongs to."""
    if request.user.is_superuser:
        campaigns = Campaign.objects.all()
    else:
        campaigns = Campaign.objects.filter(
            memberships__user=request.user, memberships__status="active"
        )
    return render(request, "labeling/home.html", {"campaigns": campaigns})
