"""``trl`` / ``trl-parquet``: TRL's stepwise supervision as JSONL or Parquet.

One record per example: ``{"prompt", "completions", "labels"}``. With a ``tokenizer`` (and the
trainer's ``max_length`` and ``step_separator``) the manifest counts the labels ``PRMTrainer``
would cut off; ``keep_labels`` rewrites long rows so that it cuts none (``exports.lengths``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from exports.examples import training_examples_sourced
from exports.formats.base import (
    ALL_OPTIONS,
    BINARY_NAMES,
    Format,
    JsonlWriter,
    add_sources,
    with_sources,
)
from exports.formats.options import option_defaults
from exports.lengths import LengthFit
from exports.policy import MACHINE, LabelPolicy
from exports.reader import SolutionData


def trl_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """TRL stepwise supervision: the problem as prompt, the steps, one bool per step; under
    ``annotators="weighted"`` also ``label_probabilities``, P(positive) per label (soft labels;
    the JSONL carries them, the Parquet schema keeps TRL's three columns)."""
    fit: LengthFit | None = options.get("length_check")
    sourced = with_sources(policy)
    for texts, labels, soft, sources, models in training_examples_sourced(solution, policy):
        rows = (
            [(solution.problem_text, texts, labels)]
            if fit is None
            else fit.rows(solution.problem_text, texts, labels)
        )
        offset = 0  # the rows that replace a long one take its labels in order
        for prompt, completions, kept in rows:
            row = {"prompt": prompt, "completions": completions, "labels": kept}
            if soft is not None:
                row["label_probabilities"] = soft[offset : offset + len(kept)]
            if sourced:
                own = sources[offset : offset + len(kept)]
                add_sources(row, own, models if MACHINE in own else [])
                yield row, kept, own
            else:
                yield row, kept
            offset += len(kept)


# PRMTrainer's settings, as PRMConfig names them (exports.formats.options declares them); without
# a tokenizer nothing is measured.
TRL_OPTIONS = option_defaults("trl")


class ParquetWriter:
    """Buffers rows into record batches; one row group per ``rows_per_group`` rows."""

    rows_per_group = 5000

    def __init__(self, path: Path, fmt: Format, policy: LabelPolicy | None = None) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        columns = [
            ("prompt", pa.string()),
            ("completions", pa.list_(pa.string())),
            ("labels", pa.list_(pa.bool_())),
        ]
        if policy is not None and with_sources(policy):
            # TRL reads its three columns and leaves these; every row has both.
            columns += [
                ("label_sources", pa.list_(pa.string())),
                ("machine_models", pa.list_(pa.string())),
            ]
        self._schema = pa.schema(columns)
        self._writer = pq.ParquetWriter(path, self._schema, compression="zstd")
        self._buffer: dict[str, list] = {name: [] for name in self._schema.names}

    def write(self, row: dict) -> None:
        for name, column in self._buffer.items():
            column.append(row.get(name, []))
        if len(self._buffer["prompt"]) >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if self._buffer["prompt"]:
            batch = self._pa.RecordBatch.from_pydict(self._buffer, schema=self._schema)
            self._writer.write_batch(batch)
            self._buffer = {name: [] for name in self._schema.names}

    def close(self) -> None:
        self._flush()
        self._writer.close()


TRL = Format(
    "trl",
    ".jsonl",
    JsonlWriter,
    trl_rows,
    ALL_OPTIONS,
    BINARY_NAMES,
    options=TRL_OPTIONS,
    length_check=LengthFit.from_options,
    description="TRL stepwise supervision (JSONL)",
)
TRL_PARQUET = Format(
    "trl-parquet",
    ".parquet",
    ParquetWriter,
    trl_rows,
    ALL_OPTIONS,
    BINARY_NAMES,
    options=TRL_OPTIONS,
    length_check=LengthFit.from_options,
    description="TRL stepwise supervision (Parquet)",
)
