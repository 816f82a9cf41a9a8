"""The embedded broker's one fix: kombu's filesystem transport writes a message in place.

``kombu.transport.filesystem.Channel._put`` creates ``<time>_<uuid>.<queue>.msg`` empty and then
writes it, and ``_get`` moves and reads any ``*.<queue>.msg`` without taking the writer's lock:
a consumer that lists the folder between the two reads an empty file and the worker dies with
"Unrecoverable error: JSONDecodeError" (seen once in a full SQLite run, a worker with beat
sending the jobs sweep to itself). Here a message is written under a name ``_get`` skips and
renamed into place when whole, which is atomic on one filesystem (the transport's folders are
on one, ``stepwise/settings.py``). PostgreSQL + Redis deployments never load this.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


def _put_whole(self: Any, queue: str, payload: Any, **kwargs: Any) -> None:
    """Put ``payload`` onto ``queue``: written to ``<name>.tmp``, then renamed to ``<name>``."""
    name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
    final = os.path.join(self.data_folder_out, name)
    partial = final + ".tmp"  # "<queue>.msg.tmp" is no queue's file for _get
    try:
        with open(partial, "wb", buffering=0) as f:
            f.write(dumps(payload).encode())
        os.replace(partial, final)
    except OSError as exc:
        raise ChannelError(f"Cannot add file {final!r} to directory") from exc


def filesystem_broker_atomic_put() -> None:
    """Make the filesystem transport write each message whole before a consumer can see it."""
    filesystem.Channel._put = _put_whole  # type: ignore[method-assign]  # the fix itself
