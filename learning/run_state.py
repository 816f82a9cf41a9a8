"""What an active-learning run's stages share (``RunState``) and what a stage is (``Stage``).

The stages themselves are declared in ``learning.stages`` (``STAGES``, in the order they run);
those that train the campaign's own PRM are in ``learning.training_stages``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage

from common.jobs import JobAttempt
from labeling.models import Campaign
from learning.auto import AutoChoice
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored
from learning.strategies import (
    signals_of,
)


@dataclass
class RunState:
    """What a run's stages share: the run, its attempt and what each stage made."""

    run: ActiveLearningRun
    attempt: JobAttempt
    campaign: Campaign
    workdir: Path
    model: PRMModel | None  # an earlier attempt's registered model, else the one registered here
    reused: bool  # an earlier attempt registered ``model``: this one scores with it
    resources: ExitStack = field(default_factory=ExitStack)
    timings: dict[str, float | str | int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    spec: Any = None
    labels: int = 0
    data: dict = field(default_factory=dict)
    checkpoint: str = ""
    scratch: Path | None = None
    overrides: dict = field(default_factory=dict)
    train_metrics: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    scorer: Any = None
    choice: AutoChoice | None = None
    shares: list[tuple[str, float]] = field(default_factory=list)
    members: list = field(default_factory=list)
    scored: list[Scored] = field(default_factory=list)
    # what the strategies' signals say of each open solution: ``Scored`` field -> value
    signals: dict[int, dict[str, Any]] = field(default_factory=dict)
    order: list[Scored] = field(default_factory=list)
    placed_by: list[str] = field(default_factory=list)
    head: dict = field(default_factory=dict)
    available: set[str] = field(default_factory=set)  # the signals the campaign has now
    ordered_by: dict[str, str] = field(default_factory=dict)  # what orders the queue, for the page
    unordered: str = ""  # why this run leaves the queue as it is (nothing to order it by yet)

    @classmethod
    def start(cls, run: ActiveLearningRun, attempt: JobAttempt) -> RunState:
        campaign = run.campaign
        model = run.model
        reusable = model if model is not None and _is_checkpoint(model.path) else None
        workdir = Path(settings.MEDIA_ROOT) / "prm" / campaign.slug / f"run-{run.pk}"
        return cls(
            run=run,
            attempt=attempt,
            campaign=campaign,
            workdir=workdir,
            model=reusable,
            reused=reusable is not None,
        )

    @property
    def trains(self) -> bool:
        """Whether this attempt trains the campaign's own PRM: it has labels to train on and no
        earlier attempt registered the model."""
        return not self.reused and bool(self.data)

    @property
    def needs(self) -> frozenset[str]:
        """The signals the strategies placing this run's queue order by."""
        return signals_of([name for name, _ in self.shares])

    def save(self, **fields: Any) -> None:
        """The timings so far (and ``fields``) on the run, while this attempt owns it."""
        self.attempt.update(timings=dict(self.timings), **fields)


@dataclass(frozen=True)
class Stage:
    """One stage: ``work`` when ``when`` says so, timed as ``name`` unless ``timed`` is off."""

    name: str
    work: Callable[[RunState], None]
    when: Callable[[RunState], bool] = lambda state: True
    timed: bool = True


def _is_checkpoint(name: str) -> bool:
    return default_storage.exists(f"{name}/config.json")
