"""``manage.py deploy_units``: the systemd units of the Procfile's processes (common/units.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.units import UnitOptions, units_from_procfile


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise CommandError(f"{what}: expected NAME=VALUE, not {value!r}")
        out[key] = rest
    return out


class Command(BaseCommand):
    help = (
        "Write one systemd service per Procfile process (absolute virtualenv binaries, "
        "Environment=/EnvironmentFile=, Restart=always) and a target that starts them all."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        root = Path(settings.BASE_DIR)
        parser.add_argument("output", type=Path, help="Folder to write the units into.")
        parser.add_argument("--app", default="stepwise", help="Prefix of the units' names.")
        parser.add_argument("--user", default="stepwise", help="User the services run as.")
        parser.add_argument("--root", type=Path, default=root, help="The checkout (cwd).")
        parser.add_argument(
            "--bin",
            type=Path,
            default=Path(sys.executable).parent,
            help="The virtualenv's bin folder (default: this Python's).",
        )
        parser.add_argument(
            "--env-file",
            default=None,
            help="EnvironmentFile= of every unit (default: ROOT/.env; 'none' for none).",
        )
        parser.add_argument("--port", type=int, default=8000, help="The web process's port.")
        parser.add_argument(
            "--env", action="append", default=[], help="NAME=VALUE for an Environment= line."
        )
        parser.add_argument(
            "-c",
            "--concurrency",
            action="append",
            default=[],
            help="PROCESS=N: N units of that process (workers; e.g. -c long=2).",
        )
        parser.add_argument("-f", "--procfile", type=Path, default=root / "Procfile")

    def handle(self, *args: Any, **opts: Any) -> None:
        root: Path = opts["root"].absolute()
        env_file = opts["env_file"]
        counts = {k: int(v) for k, v in _pairs(opts["concurrency"], "--concurrency").items()}
        options = UnitOptions(
            app=opts["app"],
            user=opts["user"],
            root=root,
            bin_dir=opts["bin"].absolute(),
            env_file=None if env_file == "none" else Path(env_file or root / ".env").absolute(),
            port=opts["port"],
            env=_pairs(opts["env"], "--env"),
            counts=counts,
        )
        try:
            units = units_from_procfile(opts["procfile"], options)
        except ValueError as error:
            raise CommandError(str(error)) from None
        out: Path = opts["output"]
        out.mkdir(parents=True, exist_ok=True)
        for name, text in units.items():
            (out / name).write_text(text)
            self.stdout.write(str(out / name))
