"""``trl`` / ``trl-parquet``: TRL's stepwise supervision as JSONL or Parquet.

One record per example: ``{"prompt", "completions", "labels"}``. With a ``tokenizer`` (and the
trainer's ``max_length`` and ``step_separator``) the manifest counts the labels ``PRMTrainer``
would cut off; ``keep_labels`` rewrites long rows so that it cuts none (``exports.lengths``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from exports.examples import training_examples
from exports.formats.base import ALL_OPTIONS, BINARY_NAMES, Format, JsonlWriter
from exports.lengths import TRL_DEFAULT_MAX_LENGTH, TRL_DEFAULT_SEPARATOR, LengthFit
from exports.policy import LabelPolicy
from exports.reader import SolutionData


def trl_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """TRL stepwise supervision: the problem as prompt, the steps, one bool per step."""
    fit: LengthFit | None = options.get("length_check")
    for texts, labels in training_examples(solution, policy):
        if fit is None:
            yield {"prompt": solution.problem_text, "completions": texts, "labels": labels}, labels
            continue
        for prompt, completions, kept in fit.rows(solution.problem_text, texts, labels):
            yield {"prompt": prompt, "completions": completions, "labels": kept}, kept


# PRMTrainer's settings, as PRMConfig names them; without a tokenizer nothing is measured.
TRL_OPTIONS = {
    "tokenizer": "",
    "max_length": TRL_DEFAULT_MAX_LENGTH,
    "step_separator": TRL_DEFAULT_SEPARATOR,
    "keep_labels": False,
}


class ParquetWriter:
    """Buffers rows into record batches; one row group per ``rows_per_group`` rows."""

    rows_per_group = 5000

    def __init__(self, path: Path, fmt: Format) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        self._schema = pa.schema(
            [
                ("prompt", pa.string()),
                ("completions", pa.list_(pa.string())),
                ("labels", pa.list_(pa.bool_())),
            ]
        )
        self._writer = pq.ParquetWriter(path, self._schema, compression="zstd")
        self._buffer: dict[str, list] = {name: [] for name in self._schema.names}

    def write(self, row: dict) -> None:
        for name, column in self._buffer.items():
            column.append(row[name])
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
