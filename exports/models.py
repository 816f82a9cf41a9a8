"""Export jobs: one row per dataset snapshot a manager asked for (see exports/files.py).

The row is the job's record and its result: the policy it ran with, its progress while a Celery
worker writes the files, then the files with their checksums and the manifest written beside them.
Files live in the file storage as ``exports/<id>/<name>`` (``common.storage``: a directory under
``MEDIA_ROOT`` by default, shared by web processes and workers) and are served only through a
view that checks the campaign role, never from a public URL.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.db import models

from common.models import BackgroundJob
from labeling.models import Campaign


class Export(BackgroundJob):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=20)
    policy = models.JSONField(default=dict, blank=True, help_text="LabelPolicy as a dict")
    options = models.JSONField(default=dict, blank=True, help_text="Format options")
    progress = models.FloatField(default=0.0, help_text="Share of solutions written, 0..1")
    counts = models.JSONField(default=dict, blank=True)
    files = models.JSONField(
        default=list, blank=True, help_text="[{name, split, bytes, sha256, records}]"
    )
    manifest = models.JSONField(default=dict, blank=True)
    selection = models.JSONField(
        default=dict,
        blank=True,
        help_text="The data browser's filters (labeling.curation.filters): only what they match.",
    )

    def __str__(self) -> str:
        return f"export {self.pk} of {self.campaign} as {self.format} ({self.status})"

    @property
    def storage_dir(self) -> str:
        """Where this export's files are stored (a prefix in the file storage)."""
        return f"exports/{self.pk}"

    @property
    def directory(self) -> Path:
        """This export's files on this machine's disk (filesystem storage only)."""
        from common.storage import storage_local_path

        path = storage_local_path(self.storage_dir)
        if path is None:
            raise NotImplementedError("the file storage is not a local directory")
        return path

    def stored_file(self, name: str) -> str | None:
        """The storage name of one of this export's files, or None for a name it did not write.

        Only names recorded in ``files`` (and the manifest) resolve, so a crafted name cannot
        reach anything else in the storage.
        """
        names = {f["name"] for f in self.files}
        if self.manifest:
            names.add(self.manifest_name)
        if name not in names:
            return None
        return f"{self.storage_dir}/{name}"

    def download_name(self, name: str) -> str:
        """The name one of its files downloads under: the file's own with the export's number
        and the policy options set away from their defaults (``geo-trl-export7-neutral-negative
        .jsonl``), so that two exports of one format with different policies never download
        under the same name."""
        from exports.policy import LabelPolicy

        defaults = LabelPolicy().to_dict()
        changes = [f"{k}-{v}" for k, v in self.policy.items() if defaults.get(k) != v]
        changes += [f"{k}-{v}" for k, v in self.options.items()]
        tag = re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join([f"export{self.pk}", *changes]))[:120]
        stem, dot, extension = name.partition(".")
        return f"{stem}-{tag.strip('-')}{dot}{extension}"

    @property
    def policy_changes(self) -> list[str]:
        """The policy options this export set away from their defaults, for the list page."""
        from exports.policy import LabelPolicy

        defaults = LabelPolicy().to_dict()
        changes = [f"{k}={v}" for k, v in self.policy.items() if defaults.get(k) != v]
        if self.options.get("tokenizer", True):  # TRL's settings change nothing without one
            changes += [
                f"{k}={v!r}" if k == "step_separator" else f"{k}={v}"
                for k, v in self.options.items()
            ]
        if self.selection:
            changes.append("selection: " + self.selection_text)
        return changes

    @property
    def selection_text(self) -> str:
        """The selection as people read it: ``answer=wrong, negative=true``."""
        return ", ".join(
            f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in self.selection.items()
        )

    @property
    def manifest_name(self) -> str:
        return self.manifest.get("manifest_name", "manifest.json")
