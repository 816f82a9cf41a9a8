"""Every route of the site x every kind of visitor x their own campaign or another one.

The routes are read from the URL resolver, so a new view or API endpoint without an entry in
``ROUTES`` fails ``test_every_route_has_an_entry``: whoever adds a route decides who may use it.
Visitors: a manager, a reviewer and an annotator of campaign "own" (and of nothing else), an
outsider (a member of no campaign), a site admin (superuser, member of nothing) and an anonymous
visitor. Each visits the URLs built with campaign "own"'s objects and with campaign "other"'s.

Expected statuses by access level, for a visitor who may not:
- outsiders of the campaign (and anyone in "other"): 404, so a campaign's existence does not leak;
- members whose role is not enough: 403;
- anonymous visitors: a redirect to the login page (web pages), 401 (API).
Every request runs in a transaction that is rolled back, so one visitor's POST changes nothing
for the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http.cookies import SimpleCookie

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotators.models import CampaignSnapshot
from annotators.services import api_token_create, invitation_create
from exports.models import Export
from imports.models import ImportJob
from labeling.models import Membership, SolutionBulkAction
from labeling.queue import assignment_next
from learning.models import ActiveLearningRun
from machines.models import EvidenceJob, GenerationJob, Phase1Sampling, ScoringJob
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db

VISITORS = ["manager", "reviewer", "annotator", "outsider", "site admin", "anonymous"]
CAMPAIGN_ROLES = {"manager", "reviewer", "annotator"}


@dataclass(frozen=True)
class Route:
    """Who may use a route, and the status a permitted visitor gets for each method.

    ``level``: ``manage`` / ``review`` / ``label`` (campaign roles, site admins pass),
    ``login`` (anyone logged in), ``staff`` (site staff only, 404 for everyone else, anonymous
    visitors too), ``public`` (each also as ``api-...``: 401, not a redirect,
    for anonymous visitors), ``api-member`` (a member of the campaign, site
    admins included only if they are members), ``holder`` / ``api-holder`` (the annotator
    holding the assignment; ``admin_ok``: what site admins get instead). ``kwargs`` names the
    objects that fill the URL; ``data`` is posted (empty: the form is invalid, which still
    proves the visitor got past the permission check).
    """

    level: str
    ok: dict[str, int]
    kwargs: tuple[str, ...] = ()
    data: dict = field(default_factory=dict)
    admin_ok: dict[str, int] | None = None


ROUTES: dict[str, Route] = {
    # labeling
    "home": Route("login", {"GET": 200}),
    # Operations (stepwise/observability.py): liveness and readiness for any probe (no worker
    # runs here: not ready), the metrics for staff only (404 to everyone else).
    "healthz": Route("public", {"GET": 200}),
    "readyz": Route("public", {"GET": 503}),
    "metrics": Route("staff", {"GET": 200}),
    "login": Route("public", {"GET": 200}),
    "logout": Route("public", {"POST": 302}),
    # Passwords: one's own (an empty form: refused, past the login check); reset by email is
    # off (404) unless EMAIL_HOST is set.
    "password_change": Route("login", {"GET": 200, "POST": 200}),
    "password_change_done": Route("login", {"GET": 200}),
    "password_reset": Route("public", {"GET": 404, "POST": 404}),
    "password_reset_done": Route("public", {"GET": 404}),
    "password_reset_confirm": Route("public", {"GET": 404}, ("uidb64", "reset_token")),
    "password_reset_complete": Route("public", {"GET": 404}),
    "labeling:label": Route("label", {"GET": 200}, ("slug",)),
    # The labelling page's actions: only the assignment's holder (an empty form: back to the page).
    "labeling:rate": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:undo": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:flag": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:submit": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:skip": Route("holder", {"POST": 302}, ("slug", "assignment")),
    # Phase 1 mode's actions (labeling.queue.phase1): the holder's, like the drafts above.
    "labeling:candidate-rate": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:candidate-choose": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:step-write": Route("holder", {"POST": 302}, ("slug", "assignment")),
    "labeling:candidate-undo": Route("holder", {"POST": 302}, ("slug", "assignment")),
    # My work: every member's own list; one piece of work only for the annotator who did it
    # (an empty amendment: refused, past the permission check).
    "labeling:my-work": Route("label", {"GET": 200}, ("slug",)),
    "labeling:my-work-item": Route("holder", {"GET": 200, "POST": 400}, ("slug", "my_work")),
    # active learning: the manager's page and "Retrain now"
    "learning:page": Route("manage", {"GET": 200}, ("slug",)),
    "learning:retrain": Route("manage", {"POST": 302}, ("slug",)),
    # "Score with the served PRM": none is chosen here, refused with a message, back to the page.
    "learning:score": Route("manage", {"POST": 302}, ("slug",)),
    # annotators
    "labeling:campaigns": Route("login", {"GET": 200}),
    "labeling:campaign-create": Route("login", {"GET": 200, "POST": 400}),
    "labeling:campaign": Route("label", {"GET": 200}, ("slug",)),
    "labeling:campaign-settings": Route("manage", {"GET": 200, "POST": 400}, ("slug",)),
    "labeling:campaign-pause": Route("manage", {"POST": 302}, ("slug",), {"paused": "1"}),
    "imports:list": Route("manage", {"GET": 200, "POST": 400}, ("slug",)),
    # Deleting a failed import (this one is pending: refused with a message, back to the list).
    "imports:delete": Route("manage", {"POST": 302}, ("slug", "import_job")),
    "imports:preview": Route("manage", {"POST": 400}, ("slug",)),
    "machines:generations": Route("manage", {"GET": 200, "POST": 400}, ("slug",)),
    # A pending job cannot be resumed: refused with a message, back to the list.
    "machines:generation-resume": Route("manage", {"POST": 302}, ("slug", "generation_job")),
    # Machine evidence: the jobs list; an empty request is refused past the permission check.
    "machines:evidence": Route("manage", {"GET": 200, "POST": 400}, ("slug",)),
    "annotators:members": Route("manage", {"GET": 200}, ("slug",)),
    "annotators:member": Route("manage", {"GET": 200, "POST": 400}, ("slug", "membership")),
    "annotators:invitations": Route("manage", {"GET": 200, "POST": 400}, ("slug",)),
    "annotators:invitation-revoke": Route("manage", {"POST": 302}, ("slug", "invitation")),
    "annotators:gold": Route("manage", {"GET": 200}, ("slug",)),
    "annotators:gold-edit": Route("manage", {"GET": 200, "POST": 400}, ("slug", "solution")),
    "annotators:dashboard": Route("manage", {"GET": 200}, ("slug",)),
    # The data browser: reviewers and managers browse (annotators never: it shows everyone's
    # labels); only managers act (an empty form: refused, past the permission check).
    "labeling:browser": Route("review", {"GET": 200}, ("slug",)),
    "labeling:browser-item": Route("review", {"GET": 200}, ("slug", "solution")),
    "labeling:browser-action": Route("manage", {"POST": 400}, ("slug",)),
    "labeling:browser-item-action": Route("manage", {"POST": 400}, ("slug", "solution")),
    # The one status view of every kind of job: who may see it is the kind's (JOB_KINDS below).
    "labeling:job-status": Route("manage", {"GET": 302}, ("slug", "job_kind", "import_job")),
    "annotators:snapshot-refresh": Route("review", {"POST": 302}, ("slug",)),
    "annotators:agreement": Route("review", {"GET": 200}, ("slug",)),
    "annotators:reviews": Route("review", {"GET": 200}, ("slug",)),
    "annotators:review": Route("review", {"GET": 200, "POST": 400}, ("slug", "assignment")),
    "annotators:my-reviews": Route("label", {"GET": 200}, ("slug",)),
    "annotators:adjudications": Route("review", {"GET": 200}, ("slug",)),
    "annotators:adjudication": Route(
        "review", {"GET": 200, "POST": 400}, ("slug", "disputed_step")
    ),
    "annotators:join": Route("public", {"GET": 200}, ("token",)),
    # exports
    "exports:list": Route("manage", {"GET": 200, "POST": 400}, ("slug",), {"format": "nope"}),
    "exports:download": Route("manage", {"GET": 200}, ("slug", "export", "file")),
    # Who is behind each pseudonym in the exports: the campaign's managers only.
    "exports:annotators": Route("manage", {"GET": 200}, ("slug",)),
    # API
    "api-campaign-next": Route("api-member", {"POST": 200}, ("slug",)),
    "api-assignment": Route("api-holder", {"GET": 200}, ("assignment",), admin_ok={"GET": 200}),
    "api-assignment-submit": Route(
        "api-holder", {"POST": 400}, ("assignment",), {"submission_key": "k-1"}
    ),
    "api-assignment-skip": Route("api-holder", {"POST": 200}, ("assignment",)),
    "api-campaigns": Route("api-login", {"GET": 200, "POST": 400}),
    "api-campaign": Route("api-label", {"GET": 200}, ("slug",)),
    "api-imports": Route("api-manage", {"GET": 200, "POST": 400}, ("slug",)),
    "api-import": Route("api-manage", {"GET": 200}, ("slug", "import_job")),
    "api-generations": Route("api-manage", {"GET": 200, "POST": 400}, ("slug",)),
    "api-generation-endpoints": Route("api-manage", {"GET": 200}, ("slug",)),
    "api-generation": Route("api-manage", {"GET": 200}, ("slug", "generation_job")),
    "api-generation-resume": Route("api-manage", {"POST": 409}, ("slug", "generation_job")),
    "api-evidence-jobs": Route("api-manage", {"GET": 200, "POST": 400}, ("slug",)),
    "api-evidence-job": Route("api-manage", {"GET": 200}, ("slug", "evidence_job")),
    # POST: the campaign names no served PRM here, so it is refused (400) after the role check.
    "api-scoring-jobs": Route("api-manage", {"GET": 200, "POST": 400}, ("slug",)),
    "api-scoring-job": Route("api-manage", {"GET": 200}, ("slug", "scoring_job")),
    "api-problems": Route("api-review", {"GET": 200}, ("slug",)),
    "api-problem": Route("api-review", {"GET": 200}, ("slug", "problem")),
    "api-solutions": Route("api-review", {"GET": 200}, ("slug",)),
    "api-solution": Route("api-review", {"GET": 200}, ("slug", "solution")),
    "api-labels": Route("api-review", {"GET": 200}, ("slug",)),
    "api-exports": Route("api-manage", {"GET": 200, "POST": 400}, ("slug",)),
    "api-export": Route("api-manage", {"GET": 200}, ("slug", "export")),
    "api-export-file": Route("api-manage", {"GET": 200}, ("slug", "export", "file")),
    "api-prm-models": Route("api-manage", {"GET": 200}, ("slug",)),
    "api-al-runs": Route("api-manage", {"GET": 200, "POST": 202}, ("slug",)),
    "api-al-run": Route("api-manage", {"GET": 200}, ("slug", "al_run")),
    # API tokens: the caller's own (an empty name: refused, past the permission check).
    "api-tokens": Route("api-login", {"GET": 200, "POST": 400}),
    "api-token-revoke": Route("api-holder", {"POST": 200}, ("api_token",)),
    "annotators:profile": Route("login", {"GET": 200, "POST": 400}),
    "annotators:token-revoke": Route("holder", {"POST": 302}, ("api_token",)),
    "api-schema": Route("api-public", {"GET": 200}),
    "api-docs": Route("api-public", {"GET": 200}),
}
# Django's admin checks staff status itself.
IGNORED_NAMESPACES = ("admin",)
ROLE_LEVELS = {
    "manage": {"manager"},
    "review": {"manager", "reviewer"},
    "label": {"manager", "reviewer", "annotator"},
}


def _routes(resolver: URLResolver, namespace: str = "") -> list[tuple[str, URLPattern]]:
    found = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            ns = entry.namespace or ""
            if ns in IGNORED_NAMESPACES:
                continue
            found += _routes(entry, f"{namespace}{ns}:" if ns else namespace)
        else:
            found.append((f"{namespace}{entry.name}" if entry.name else repr(entry), entry))
    return found


ALL_ROUTES = _routes(get_resolver())


def test_every_route_has_an_entry():
    names = {name for name, _ in ALL_ROUTES}
    missing = sorted(names - set(ROUTES))
    assert not missing, f"routes without an entry in the permission matrix: {missing}"
    assert not sorted(set(ROUTES) - names), "entries for routes that no longer exist"


@dataclass
class CampaignObjects:
    slug: str
    objects: dict


@pytest.fixture
def world(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    users = {
        "manager": make_user(username="m"),
        "reviewer": make_user(username="r"),
        "annotator": make_user(username="a"),
        "outsider": make_user(username="o"),
        "site admin": make_user(username="admin", is_superuser=True, is_staff=True),
    }
    campaigns = {}
    for name in ("own", "other"):
        campaign = make_campaign(slug=name)
        if name == "own":
            for role in CAMPAIGN_ROLES:
                make_member(campaign=campaign, user=users[role], role=role)
            annotator = users["annotator"]
        else:
            make_member(campaign=campaign, role=Membership.Role.MANAGER)
            annotator = make_member(campaign=campaign).user
        make_solution(campaign=campaign)  # open work for "next"
        gold = make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1])
        labelled = make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1, -1])
        held = assignment_next(campaign=campaign, annotator=annotator)
        # Another annotator disagrees on step 1 of the labelled solution: a disputed step.
        make_labelled(solution=labelled.solution, ratings=[1, -1])
        disputed = labelled.solution.steps.get(index=1)
        my_work = make_labelled(
            solution=make_solution(campaign=campaign), ratings=[1, 1], annotator=annotator
        )
        invitation, token = invitation_create(campaign=campaign, created_by=None)
        export = Export.objects.create(
            campaign=campaign,
            format="csv",
            status=Export.Status.DONE,
            files=[{"name": "labels.csv"}],
        )
        export.directory.mkdir(parents=True)
        run = ActiveLearningRun.objects.create(campaign=campaign, status="succeeded")
        api_token, _ = api_token_create(user=annotator, name="matrix")
        (export.directory / "labels.csv").write_text("a,b\n")
        campaigns[name] = CampaignObjects(
            slug=campaign.slug,
            objects={
                "slug": campaign.slug,
                "import_job": ImportJob.objects.create(
                    campaign=campaign, file_name="x", format="jsonl"
                ).pk,
                "generation_job": GenerationJob.objects.create(
                    campaign=campaign, base_url="http://localhost:8000/v1", model="m"
                ).pk,
                "membership": Membership.objects.filter(campaign=campaign).first().pk,
                "invitation": invitation.pk,
                "token": token,
                "solution": gold.pk,
                "problem": gold.problem_id,
                "al_run": run.pk,
                "scoring_job": ScoringJob.objects.create(
                    campaign=campaign, endpoint="prm", model="m", status="done"
                ).pk,
                "api_token": api_token.pk,
                "assignment": labelled.pk if name == "other" else held.pk,
                "review_assignment": labelled.pk,
                "disputed_step": disputed.pk,
                "my_work": my_work.pk,
                "export": export.pk,
                "bulk_job": SolutionBulkAction.objects.create(
                    campaign=campaign, action="requeue"
                ).pk,
                "evidence_job": EvidenceJob.objects.create(
                    campaign=campaign, kind="judge", endpoint="e", model="m"
                ).pk,
                "phase1_sampling": Phase1Sampling.objects.create(
                    campaign=campaign, solution=gold, prefix_hash="h"
                ).pk,
                "job_kind": "imports",
                "snapshot": CampaignSnapshot.objects.create(campaign=campaign).pk,
                "file": "labels.csv",
                "uidb64": "MQ",
                "reset_token": "set-password",
            },
        )
    return users, campaigns


# The URL parameter each object fills; primary keys go in "pk".
URL_KWARG = {
    "job_kind": "kind",
    "file": "name",
    "slug": "slug",
    "token": "token",
    "uidb64": "uidb64",
    "reset_token": "token",
}


def _url(name: str, route: Route, objects: dict) -> str:
    kwargs = {}
    for key in route.kwargs:
        value = (
            objects["review_assignment"]
            if (name, key) == ("annotators:review", "assignment")
            else objects[key]
        )
        kwargs[URL_KWARG.get(key, "pk")] = value
    return reverse(name, kwargs=kwargs)


def expected(route: Route, method: str, visitor: str, campaign: str) -> int:
    """The status ``visitor`` should get for ``method`` on ``route`` with ``campaign``'s objects."""
    ok = route.ok[method]
    api = route.level.startswith("api")
    # API routes follow the same levels as pages; only an anonymous visitor's answer differs.
    level = route.level.removeprefix("api-")
    if level == "staff":
        return ok if visitor == "site admin" else 404
    if visitor == "anonymous":
        if level == "public":
            return ok
        return 401 if api else 302
    if level in ("public", "login"):
        return ok
    if level == "member":
        return ok if campaign == "own" and visitor in CAMPAIGN_ROLES else 404
    if level == "holder":
        if visitor == "site admin" and route.admin_ok:
            return route.admin_ok[method]
        return ok if campaign == "own" and visitor == "annotator" else 404
    if visitor == "site admin":
        return ok
    if campaign == "other" or visitor not in CAMPAIGN_ROLES:
        return 404
    return ok if visitor in ROLE_LEVELS[level] else 403


def _sessions(users) -> dict[str, dict[str, str]]:
    """Each visitor's cookies right after logging in (none for the anonymous visitor): every
    request starts from exactly these, as after a fresh login, without logging in again for each
    (a login for every request was a third of this module's time). Each request runs in a
    transaction rolled back, so the sessions stay as they were made."""
    cookies: dict[str, dict[str, str]] = {"anonymous": {}}
    for visitor, user in users.items():
        login = Client()
        login.force_login(user)
        cookies[visitor] = {name: morsel.value for name, morsel in login.cookies.items()}
    return cookies


def _as(client, sessions: dict[str, dict[str, str]], visitor: str) -> None:
    client.cookies = SimpleCookie(sessions[visitor])


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_route_answers_each_visitor_as_the_matrix_says(name, world, client):
    users, campaigns = world
    sessions = _sessions(users)
    route = ROUTES[name]
    wrong = []
    table = []
    for method in route.ok:
        for campaign in ("own", "other") if route.kwargs else ("own",):
            url = _url(name, route, campaigns[campaign].objects)
            for visitor in VISITORS:
                _as(client, sessions, visitor)
                with transaction.atomic():
                    send = client.get if method == "GET" else client.post
                    response = send(url, route.data)
                    transaction.set_rollback(True)
                want = expected(route, method, visitor, campaign)
                table.append(
                    f"{method:4} {campaign:5} {visitor:10} {response.status_code} (want {want})"
                )
                if response.status_code != want:
                    wrong.append(table[-1])
    assert not wrong, f"{name}:\n" + "\n".join(wrong) + "\n\nfull table:\n" + "\n".join(table)


# The job status view answers for every kind of job as the kind says (JobPage.viewers): the
# object of the kind, from the visitor's campaign or another one. A visitor without htmx is sent
# to the kind's page (302).
JOB_KINDS = {
    "imports": ("manage", "import_job"),
    "generation": ("manage", "generation_job"),
    "exports": ("manage", "export"),
    "snapshots": ("review", "snapshot"),
    "active_learning": ("manage", "al_run"),
    "scoring": ("manage", "scoring_job"),
    "bulk_actions": ("manage", "bulk_job"),
    "evidence": ("manage", "evidence_job"),
    # An annotator's labelling page polls the sampling of its phase 1 candidates.
    "phase1-sampling": ("label", "phase1_sampling"),
}


def test_every_kind_of_job_is_in_the_job_status_matrix():
    from common.jobs import job_kinds

    assert set(JOB_KINDS) == set(job_kinds())


@pytest.mark.parametrize("kind", sorted(JOB_KINDS))
def test_the_job_status_of_each_kind_answers_each_visitor_as_its_kind_says(kind, world, client):
    users, campaigns = world
    level, obj = JOB_KINDS[kind]
    route = Route(level, {"GET": 302}, ("slug", "job_kind", obj))
    sessions = _sessions(users)
    wrong = []
    for campaign in ("own", "other"):
        objects = campaigns[campaign].objects | {"job_kind": kind}
        url = _url("labeling:job-status", route, objects)
        for visitor in VISITORS:
            _as(client, sessions, visitor)
            status = client.get(url).status_code
            if status != expected(route, "GET", visitor, campaign):
                wrong.append(f"{campaign} {visitor}: {status}")
    assert not wrong, wrong
