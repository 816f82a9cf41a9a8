"""PRM800K's phase 1 on the labelling page: rate candidate next steps, choose one or write one.

In a campaign with ``phase1_mode`` on, a regular solution is labelled as PRM800K's phase 1
labelled its trees (``labeling.models.candidates``): at each position the annotator sees the
candidate next steps for the prefix they have built so far, rates each (-1/0/+1), and continues
with one of them or writes their own step; the chosen (or written) step becomes the next step of
their path. A step that gives the final answer (PRM800K's ``# Answer``) ends the path.

Candidates of the served solution's own tree are *imported*: the solution's steps and the
candidates its PRM800K labels carry (their texts only: never another annotator's rating, nor
their written steps), stored once per solution the first time it is opened in this mode. A path
that leaves that tree meets no candidates there; the annotator writes the next step.

On submission the path becomes a solution's steps and each position one ``StepLabel``, mapped
as the importer maps a PRM800K phase 1 line (``submit``, whose docstring says how).

Candidates for a prefix the tree lacks are *sampled*, when the campaign names a chat endpoint
(``Campaign.phase1_endpoint``): the app that owns the endpoints (``machines``) registers a
starter here (``candidate_sampling_register``, as ``learning`` registers its step scorers with
``labeling.scores``), which queues a durable job when the page shows such a prefix (the page never
waits on a model server: it polls the job); what the job samples is stored once per prefix, so
every annotator on that prefix sees the same candidates.

Every action names what it acts on (a candidate, a position), so a retried request changes
nothing twice (``drafts``).

The modules, by what each holds: ``view`` (what the page shows, and opening a solution in this
mode), ``sampling`` (candidates asked of an endpoint), ``drafts`` (rating, choosing, writing,
undoing), ``submit`` (the path stored as step labels) and ``tree`` (the candidates and the path
as stored, which the others read). Callers import each name from its module.
"""

from __future__ import annotations
