from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotators.permissions import campaigns_visible_to


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The campaigns this person belongs to."""
    return render(request, "labeling/home.html", {"campaigns": campaigns_visible_to(request.user)})
