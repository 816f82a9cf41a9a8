"""Files that web processes and workers share, through Django's storage API.

Uploads, exports and PRM checkpoints are written by one process and read by another, possibly
on another machine: they live in ``django.core.files.storage.default_storage`` (``STORAGES``
in settings), never at a path one process assumes. The default backend is a directory under
``MEDIA_ROOT`` (every process must mount the same one); an S3-compatible bucket works by setting
(docs/operations.md). These helpers give code that needs a real file (the importer, the format
writers, PyTorch) a local path, and publish a finished directory in one step; and they name and
delete what a campaign leaves, so that deleting it frees its files (``campaign_media_register``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import transaction

log = logging.getLogger(__name__)


def storage_local_path(name: str) -> Path | None:
    """Where ``name`` is on this machine's disk, or None when the storage is not a filesystem."""
    if not isinstance(default_storage, FileSystemStorage):
        return None
    return Path(default_storage.path(name))


@contextmanager
def storage_local_file(name: str) -> Iterator[Path]:
    """A local path to read the stored file ``name`` from (a temporary copy off a filesystem)."""
    path = storage_local_path(name)
    if path is not None:
        yield path
        return
    with tempfile.TemporaryDirectory(dir=settings.FILE_UPLOAD_TEMP_DIR) as tmp:
        local = Path(tmp) / Path(name).name
        with default_storage.open(name, "rb") as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
        yield local


@contextmanager
def storage_scratch_dir(prefix: str) -> Iterator[Path]:
    """A fresh local directory to write files in before ``storage_publish_dir`` publishes them.

    On a filesystem storage it sits beside the destination (same filesystem), so publishing is
    a rename; elsewhere it is a temporary directory. It is removed afterwards unless published,
    and so is what an earlier attempt at the same destination left behind (the caller owns it).
    """
    target = storage_local_path(prefix)
    if target is not None:
        parent = target.parent / ".partial"
        parent.mkdir(parents=True, exist_ok=True)
        for orphan in parent.glob(f"{target.name}-*"):  # left by an attempt that was killed
            shutil.rmtree(orphan, ignore_errors=True)
        scratch = parent / f"{target.name}-{uuid.uuid4().hex[:12]}"
        scratch.mkdir()
    else:
        scratch = Path(tempfile.mkdtemp(dir=settings.FILE_UPLOAD_TEMP_DIR))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def storage_publish_dir(scratch: Path, prefix: str) -> None:
    """Make the files of ``scratch`` the stored directory ``prefix``, replacing what was there.

    On a filesystem: one rename, so nobody sees half the files (a reader only looks once the
    job's row says done). Elsewhere each file is uploaded whole, after the old ones are deleted.
    """
    target = storage_local_path(prefix)
    if target is not None:
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(scratch, target)
        return
    storage_delete_dir(prefix)
    for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
        name = f"{prefix}/{path.relative_to(scratch).as_posix()}"
        with open(path, "rb") as fh:
            default_storage.save(name, File(fh, name=path.name))


def storage_delete_dir(prefix: str) -> None:
    """Delete the stored directory ``prefix`` and everything in it (nothing when it is absent)."""
    target = storage_local_path(prefix)
    if target is not None:
        shutil.rmtree(target, ignore_errors=True)
        return
    try:
        dirs, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return
    for name in files:
        default_storage.delete(f"{prefix}/{name}")
    for sub in dirs:
        storage_delete_dir(f"{prefix}/{sub}")


def storage_local_dir(prefix: str) -> Path:
    """A local directory holding the stored directory ``prefix`` (a checkpoint PyTorch loads).

    On a filesystem it is the directory itself. Elsewhere it is a copy kept under
    ``VAR_DIR/storage-cache/`` (downloaded once, whole, then renamed into place): only for
    directories that never change once published, such as a PRM checkpoint's version.
    """
    path = storage_local_path(prefix)
    if path is not None:
        return path
    cached = Path(settings.VAR_DIR) / "storage-cache" / prefix
    if not cached.is_dir():
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=cached.parent, prefix=f".{cached.name}-"))
        try:
            _download_dir(prefix, partial)
            os.replace(partial, cached)
        except OSError:
            if not cached.is_dir():  # not another process that finished first
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return cached


def _download_dir(prefix: str, local: Path) -> None:
    dirs, files = default_storage.listdir(prefix)
    local.mkdir(parents=True, exist_ok=True)
    for name in files:
        with default_storage.open(f"{prefix}/{name}", "rb") as src, open(local / name, "wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
    for sub in dirs:
        _download_dir(f"{prefix}/{sub}", local / sub)


# --- What a campaign leaves on disk ---------------------------------------------------------

CampaignMedia = Callable[[Any], list[str]]
_campaign_media: list[CampaignMedia] = []


def campaign_media_register(media: CampaignMedia) -> None:
    """Register ``media(campaign)``: the stored directories (prefixes) that belong to a
    campaign, so that deleting the campaign deletes them. Each app registers its own in its
    ``ready()`` (uploads, exports, PRM checkpoints and runs): this layer knows none of them."""
    if media not in _campaign_media:
        _campaign_media.append(media)


def campaign_media(campaign: Any) -> list[str]:
    """Every stored directory of ``campaign`` that the registered apps name."""
    return sorted({prefix for media in _campaign_media for prefix in media(campaign)})


def campaign_media_on_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``pre_delete`` of a campaign: its directories are named now, while the rows that name
    them still exist (the cascade deletes them next), and deleted once the deletion commits (a
    rolled-back deletion keeps its files)."""
    prefixes = campaign_media(instance)
    if prefixes:
        transaction.on_commit(lambda: media_delete(prefixes))


def media_delete(prefixes: list[str]) -> int:
    """Delete the stored directories ``prefixes`` and any local copy under ``MEDIA_ROOT`` (a
    worker's scratch and caches when the storage is not a filesystem); the bytes freed."""
    freed = 0
    for prefix in prefixes:
        freed += storage_dir_size(prefix)
        storage_delete_dir(prefix)
        local = Path(settings.MEDIA_ROOT) / prefix
        if local.is_dir():
            freed += local_dir_size(local)
            shutil.rmtree(local, ignore_errors=True)
    if prefixes:
        log.info("deleted %d stored directories (%d bytes)", len(prefixes), freed)
    return freed


def local_dir_size(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it is absent); links are not followed."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking
                continue
    return total


def storage_dir_size(prefix: str) -> int:
    """Bytes stored under ``prefix`` (0 when it is absent)."""
    target = storage_local_path(prefix)
    if target is not None:
        return local_dir_size(target)
    try:
        dirs, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return 0
    return sum(default_storage.size(f"{prefix}/{name}") for name in files) + sum(
        storage_dir_size(f"{prefix}/{sub}") for sub in dirs
    )


def storage_listdir(prefix: str) -> tuple[list[str], list[str]]:
    """The folders and files directly under ``prefix`` (empty when it is absent)."""
    try:
        dirs, files = default_storage.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    return sorted(dirs), sorted(files)
