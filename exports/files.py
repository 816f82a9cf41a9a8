"""Writing an export: stream the campaign's solutions through a format into one file per split.

:func:`write_export` is the one entry point (the Celery task, the command and active learning
call it); it counts what it writes and puts a manifest beside the files (see ``manifest``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exports.formats.base import Format
from exports.formats.registry import format_for, format_options
from exports.manifest import Tally, manifest_write
from exports.policy import LabelPolicy
from exports.reader import Progress, StreamStats, iter_solutions
from labeling.curation.filters import SolutionFilter
from labeling.models import Campaign


def output_paths(out: Path, fmt: Format, splits: tuple[str, ...]) -> tuple[dict[str, Path], Path]:
    """The data file of each split and the manifest, beside ``out``.

    ``data.jsonl`` stays as it is for a single split, becomes ``data.train.jsonl`` and
    ``data.test.jsonl`` for two, and the manifest is ``data.manifest.json``.
    """
    out = Path(out)
    if not out.suffix:
        out = out.with_name(out.name + fmt.extension)
    stem, suffix = out.name[: -len(out.suffix)], out.suffix
    if splits == ("all",):
        files = {"all": out}
    else:
        files = {s: out.with_name(f"{stem}.{s}{suffix}") for s in splits}
    return files, out.with_name(f"{stem}.manifest.json")


def write_export(
    *,
    campaign: Campaign,
    fmt: str,
    out: Path,
    policy: LabelPolicy | None = None,
    options: dict[str, Any] | None = None,
    progress: Progress | None = None,
    batch_size: int = 2000,
    selection: SolutionFilter | None = None,
) -> dict[str, Any]:
    """Write the campaign's labels as ``fmt`` to ``out`` (one file per split) and a manifest.

    Returns the manifest, which is also written beside the files. Counts are of what was
    written: records (lines or rows), distinct problems and solutions, steps (labels in the
    records, a prefix counted again in each alternative example) and labels by value (and by
    source, under the policy's ``machine_labels``).
    ``selection``: only the solutions these data-browser filters match.
    """
    policy = policy or LabelPolicy()
    spec = format_for(campaign, fmt)
    opts = format_options(spec, options)
    files, manifest_path = output_paths(Path(out), spec, policy.splits)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    row_options: dict[str, Any] = {**opts, "campaign_slug": campaign.slug}
    check = spec.length_check(opts) if spec.length_check else None
    if check is not None:
        row_options["length_check"] = check

    stats = StreamStats()
    tallies = {split: Tally() for split in files}
    writers = {split: spec.writer(path, spec, policy) for split, path in files.items()}
    try:
        for solution in iter_solutions(
            campaign=campaign,
            policy=policy,
            batch_size=batch_size,
            progress=progress,
            stats=stats,
            selection=selection,
        ):
            writer = writers[solution.split]
            tally = tallies[solution.split]
            for row, labels, *sources in spec.rows(solution, policy, row_options):
                writer.write(row)
                tally.add(
                    solution_id=solution.id,
                    problem_id=solution.problem_id,
                    labels=labels,
                    sources=sources[0] if sources else None,
                )
    finally:
        for w in writers.values():
            w.close()

    return manifest_write(
        path=manifest_path,
        spec=spec,
        format_options=opts,
        policy=policy,
        campaign=campaign,
        files=files,
        tallies=tallies,
        stats=stats,
        length_check=check.report() if check is not None else None,
    )
