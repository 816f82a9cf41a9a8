"""Review: the list and its filters, the detail page, decisions, the annotator's view, exports."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotators.models import CampaignSnapshot
from annotators.review.services import review_submit
from annotators.services import ManageError
from annotators.snapshots import snapshot_run
from exports.formats import LabelPolicy, write_export
from labeling.models import Review
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="rev", overlap=2)


@pytest.fixture
def people(campaign):
    return {
        role: make_member(campaign=campaign, user=make_user(username=role), role=kind).user
        for role, kind in [
            ("reviewer", "reviewer"),
            ("ann", "annotator"),
            ("bob", "annotator"),
            ("cat", "annotator"),
        ]
    }


def reviews_url(campaign, **query):
    url = reverse("annotators:reviews", kwargs={"slug": campaign.slug})
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def review_url(assignment):
    return reverse(
        "annotators:review", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
    )


def listed(client, url) -> list[int]:
    return [row["id"] for row in client.get(url).context["rows"]]


def test_the_list_filters_by_annotator_disagreement_state_and_qc_agreement(
    client, campaign, people
):
    ann, bob, cat = people["ann"], people["bob"], people["cat"]
    shared = make_solution(campaign=campaign, steps=["a", "b", "c"])
    ann_shared = make_labelled(solution=shared, ratings=[1, 1, 1], annotator=ann)
    bob_shared = make_labelled(solution=shared, ratings=[1, -1], annotator=bob)
    cat_alone = make_labelled(
        solution=make_solution(campaign=campaign), ratings=[1, 0, 1], annotator=cat
    )
    ann_reviewed = make_labelled(
        solution=make_solution(campaign=campaign), ratings=[1], annotator=ann
    )
    review_submit(assignment=ann_reviewed, reviewer=people["reviewer"], decision="accepted")
    # Cat agrees with gold on one step of two: 50%, below the default threshold of 75%.
    qc = make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1])
    cat_qc = make_labelled(solution=qc, ratings=[1, 0], annotator=cat)
    make_labelled(
        solution=make_gold_solution(campaign=campaign, kind="qc", gold=[1]),
        ratings=[1],
        annotator=ann,
    )
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    client.force_login(people["reviewer"])

    assert sorted(listed(client, reviews_url(campaign))) == sorted(
        [ann_shared.pk, bob_shared.pk, cat_alone.pk, cat_qc.pk]
        + [a.pk for a in ann.assignments.filter(solution__kind="qc")]
    )
    assert listed(client, reviews_url(campaign, annotator=bob.pk)) == [bob_shared.pk]
    assert sorted(listed(client, reviews_url(campaign, disagreement="on"))) == sorted(
        [ann_shared.pk, bob_shared.pk]
    )
    assert listed(client, reviews_url(campaign, state="accepted")) == [ann_reviewed.pk]
    assert sorted(listed(client, reviews_url(campaign, low_qc="on"))) == sorted(
        [cat_alone.pk, cat_qc.pk]
    )
    assert listed(client, reviews_url(campaign, kind="qc", annotator=cat.pk)) == [cat_qc.pk]


def test_the_list_pages_without_counting(client, campaign, people):
    solutions = [make_solution(campaign=campaign) for _ in range(30)]
    done = [
        make_labelled(solution=s, ratings=[1, 1, 1], annotator=people["ann"]) for s in solutions
    ]
    client.force_login(people["reviewer"])

    first = client.get(reviews_url(campaign, sort="submitted"))
    second = client.get(reviews_url(campaign, sort="submitted", page=2))

    assert [r["id"] for r in first.context["rows"]] == [a.pk for a in done[:25]]
    assert first.context["has_next"] and not second.context["has_next"]
    assert [r["id"] for r in second.context["rows"]] == [a.pk for a in done[25:]]
    assert 'rel="next" href="?sort=submitted&amp;page=2"' in first.content.decode()


def test_the_detail_shows_the_other_annotators_ratings_and_gold_to_reviewers(
    client, campaign, people
):
    qc = make_gold_solution(
        campaign=campaign, kind="qc", gold=[1, -1], steps=["First <b>step</b>", "Second"]
    )
    mine = make_labelled(solution=qc, ratings=[1, 0], annotator=people["ann"])
    make_labelled(solution=qc, ratings=[0, -1], annotator=people["bob"])
    client.force_login(people["reviewer"])

    response = client.get(review_url(mine))
    page = response.content.decode()

    detail = response.context["detail"]
    assert detail.others == ["bob"]
    assert [(s.rating, s.others, s.gold) for s in detail.steps] == [(1, [0], 1), (0, [-1], -1)]
    assert "First &lt;b&gt;step&lt;/b&gt;" in page
    assert "<th>bob</th>" in page


def test_a_reviewer_rejects_with_a_comment_and_the_annotator_sees_it(client, campaign, people):
    work = make_labelled(
        solution=make_solution(campaign=campaign), ratings=[1, 1, -1], annotator=people["ann"]
    )
    client.force_login(people["reviewer"])

    without = client.post(review_url(work), {"decision": "rejected", "comment": ""})
    response = client.post(
        review_url(work), {"decision": "rejected", "comment": "Step 2 is <wrong>."}
    )

    assert without.status_code == 400 and "Say why you reject it" in without.content.decode()
    assert response.status_code == 302
    review = Review.objects.get(assignment=work)
    assert (review.decision, review.comment, review.reviewer) == (
        "rejected",
        "Step 2 is <wrong>.",
        people["reviewer"],
    )

    client.force_login(people["ann"])
    mine = client.get(
        reverse("annotators:my-reviews", kwargs={"slug": campaign.slug})
    ).content.decode()
    assert "rejected" in mine and "Step 2 is &lt;wrong&gt;." in mine
    assert "reviewer" not in mine.split("<h1>My reviews</h1>")[1]  # who reviewed is not shown


def test_accepting_with_corrections_keeps_only_real_changes_and_feeds_reviewed_exports(
    client, campaign, people, tmp_path
):
    solution = make_solution(campaign=campaign, steps=["a", "b", "c"])
    accepted = make_labelled(solution=solution, ratings=[1, 0, 1], annotator=people["ann"])
    rejected = make_labelled(solution=solution, ratings=[1, 1, 1], annotator=people["bob"])
    client.force_login(people["reviewer"])

    client.post(
        review_url(accepted), {"decision": "accepted", "step_0": "1", "step_1": "-1", "comment": ""}
    )
    client.post(review_url(rejected), {"decision": "rejected", "comment": "Careless."})

    assert Review.objects.get(assignment=accepted).corrections == {"1": -1}
    client.force_login(people["ann"])
    mine = client.get(
        reverse("annotators:my-reviews", kwargs={"slug": campaign.slug})
    ).content.decode()
    assert "step 2: yours 0 → −1" in mine
    out = tmp_path / "reviewed.csv"
    write_export(campaign=campaign, fmt="csv", out=out, policy=LabelPolicy(reviewed_only=True))
    rows = out.read_text().splitlines()
    assert len(rows) == 1 + 3  # the header and the accepted assignment's three labels
    assert all("bob" not in row for row in rows)
    trl = tmp_path / "reviewed.jsonl"
    write_export(
        campaign=campaign,
        fmt="trl",
        out=trl,
        policy=LabelPolicy(reviewed_only=True, alternatives=False),
    )
    [record] = [json.loads(line) for line in trl.read_text().splitlines()]
    assert record["labels"] == [True, False]  # the correction: step 2 negative, the path stops


def test_nobody_reviews_their_own_work_or_unsubmitted_work(campaign, people):
    manager = make_member(campaign=campaign, role="manager").user
    own = make_labelled(solution=make_solution(campaign=campaign), ratings=[1], annotator=manager)
    draft = make_labelled(
        solution=make_solution(campaign=campaign),
        ratings=[1],
        annotator=people["ann"],
        status="leased",
    )

    with pytest.raises(ManageError, match="your own work"):
        review_submit(assignment=own, reviewer=manager, decision="accepted")
    with pytest.raises(ManageError, match="Only submitted work"):
        review_submit(assignment=draft, reviewer=manager, decision="accepted")


def test_a_correction_must_be_of_a_rated_step_and_rejections_carry_none(campaign, people):
    work = make_labelled(
        solution=make_solution(campaign=campaign), ratings=[1, -1], annotator=people["ann"]
    )

    with pytest.raises(ManageError, match="Step 2 was not rated"):
        review_submit(
            assignment=work, reviewer=people["reviewer"], decision="accepted", corrections={2: 1}
        )
    with pytest.raises(ManageError, match="never exported"):
        review_submit(
            assignment=work,
            reviewer=people["reviewer"],
            decision="rejected",
            comment="x",
            corrections={0: -1},
        )


def test_a_later_review_replaces_the_earlier_one(campaign, people):
    work = make_labelled(
        solution=make_solution(campaign=campaign), ratings=[1], annotator=people["ann"]
    )
    review_submit(assignment=work, reviewer=people["reviewer"], decision="rejected", comment="no")

    review_submit(assignment=work, reviewer=people["reviewer"], decision="accepted")

    assert list(Review.objects.values_list("decision", "comment")) == [("accepted", "")]
