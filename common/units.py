"""systemd units written from the Procfile: the production process definition.

honcho runs the Procfile for development, where one process dying may stop the others. In
production each process is a systemd service of its own, restarted on its own (``Restart=always``)
and started from the clean environment systemd gives it. ``honcho export systemd`` cannot be used
for that: its ``ExecStart=/bin/sh -lc '...'`` runs a login shell, which reads ``/etc/profile``, and
Debian's resets ``PATH`` there, so ``gunicorn`` is not found (exit 127, restarting for ever).

So the units here call the virtualenv's binaries by absolute path through ``/bin/sh -c`` (not a
login shell: the Procfile's ``${VAR:-default}`` still need a shell), take ``PATH`` and ``PORT``
from ``Environment=`` lines and the site's settings from ``EnvironmentFile=`` (the ``.env``, mode
600, read by systemd as root: secrets never appear in the units). ``manage.py deploy_units`` writes
them (docs/operations.md, "Deploying").
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
_EXEC = re.compile(r"\bexec\s+(\S+)")


@dataclass(frozen=True)
class UnitOptions:
    """What a site chooses: the app's name (the units' prefix), the user that runs it, where
    the checkout and the virtualenv's ``bin`` are, the environment file, the web port, extra
    ``Environment=`` values and how many instances of each process."""

    app: str
    user: str
    root: Path
    bin_dir: Path
    env_file: Path | None
    port: int = 8000
    env: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def procfile_processes(path: Path) -> dict[str, str]:
    """The Procfile's processes, name to command line, in order (comments skipped)."""
    processes: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, command = line.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name.strip()):
            raise ValueError(f"{path}: not a Procfile line: {line!r}")
        processes[name.strip()] = command.strip()
    return processes


def absolute_binaries(command: str, bin_dir: Path) -> str:
    """``command`` with every ``exec NAME`` whose NAME is in the virtualenv's ``bin`` replaced by
    its absolute path, so that it runs whatever ``PATH`` the service gets."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if "/" not in name and (bin_dir / name).exists():
            return f"exec {bin_dir / name}"
        return match.group(0)

    return _EXEC.sub(replace, command)


def systemd_escape(text: str) -> str:
    """``text`` as systemd reads it back: ``$`` and ``%`` are its own expansions (``%h`` is the
    user's home in a unit: celery's ``--hostname=...@%h`` must reach the shell whole)."""
    return text.replace("%", "%%").replace("$", "$$")


def _environment_line(key: str, value: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"not an environment variable name: {key!r}")
    if any(c in value for c in '"\\\n'):
        raise ValueError(f"{key}: a value with quotes, backslashes or newlines is for the env file")
    return f'Environment="{key}={systemd_escape(value)}"'


def service_unit(name: str, command: str, options: UnitOptions, *, web: bool) -> str:
    """One service: the Procfile line through ``/bin/sh -c`` with absolute binaries."""
    if "'" in command:
        raise ValueError(f"{name}: a Procfile line with a single quote cannot be written as a unit")
    line = systemd_escape(absolute_binaries(command, options.bin_dir))
    env = {"PATH": f"{options.bin_dir}:{SYSTEM_PATH}", "PYTHONUNBUFFERED": "1"}
    if web:
        env["PORT"] = str(options.port)
    env.update(options.env)
    lines = [
        "[Unit]",
        f"Description={options.app} {name} (Procfile process {name})",
        "After=network-online.target postgresql.service redis-server.service",
        "Wants=network-online.target",
        f"PartOf={options.app}.target",
        "",
        "[Service]",
        "Type=simple",
        f"User={options.user}",
        f"WorkingDirectory={options.root}",
        *(_environment_line(k, v) for k, v in env.items()),
        *([f"EnvironmentFile=-{options.env_file}"] if options.env_file else []),
        f"ExecStart=/bin/sh -c '{line}'",
        "Restart=always",
        "RestartSec=5",
        # SIGTERM to the main process first (gunicorn and celery finish what they do), the rest
        # of the group only after TimeoutStopSec.
        "KillMode=mixed",
        "TimeoutStopSec=60",
        f"SyslogIdentifier={options.app}-{name}",
        "",
        "[Install]",
        f"WantedBy={options.app}.target",
        "",
    ]
    return "\n".join(lines)


def units_from_procfile(procfile: Path, options: UnitOptions) -> dict[str, str]:
    """Every unit file's name and text: one service per Procfile process (``counts`` more of a
    process: ``<app>-<name>-<n>.service``) and ``<app>.target``, which starts them all."""
    units: dict[str, str] = {}
    processes = procfile_processes(procfile)
    unknown = set(options.counts) - set(processes)
    if unknown:
        raise ValueError(f"no such process in the Procfile: {', '.join(sorted(unknown))}")
    for name, command in processes.items():
        count = options.counts.get(name, 1)
        if name == "web" and count != 1:
            raise ValueError("web: one unit per port; write another with --port for a second")
        for n in range(1, count + 1):
            units[f"{options.app}-{name}-{n}.service"] = service_unit(
                name, command, options, web=name == "web"
            )
    units[f"{options.app}.target"] = "\n".join(
        [
            "[Unit]",
            f"Description={options.app}: every process of the Procfile",
            f"Wants={' '.join(units)}",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
            "",
        ]
    )
    return units


def unit_command(unit: str) -> tuple[dict[str, str], list[str], Path | None, list[Path]]:
    """What systemd would run for a service unit's text: the ``Environment=`` values, the
    ``ExecStart=`` argument list (systemd's ``$$`` and ``%%`` undone), the working directory and
    the environment files. The tests start each unit this way; the units written here use no
    other systemd expansion."""
    env: dict[str, str] = {}
    argv: list[str] = []
    workdir: Path | None = None
    files: list[Path] = []
    for raw in unit.splitlines():
        key, sep, value = raw.partition("=")
        if not sep:
            continue
        if key == "Environment":
            for pair in shlex.split(value):
                name, _, val = pair.partition("=")
                env[name] = val.replace("$$", "$").replace("%%", "%")
        elif key == "EnvironmentFile":
            files.append(Path(value.removeprefix("-")))
        elif key == "WorkingDirectory":
            workdir = Path(value)
        elif key == "ExecStart":
            argv = [w.replace("$$", "$").replace("%%", "%") for w in shlex.split(value)]
    return env, argv, workdir, files


def read_environment_file(path: Path) -> dict[str, str]:
    """An ``EnvironmentFile=`` as systemd reads it: ``KEY=VALUE`` lines, ``#`` and ``;`` lines
    are comments, a value may be quoted; nothing after the value is a comment (write comments
    on lines of their own)."""
    env: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[key.strip().removeprefix("export ").strip()] = value
    return env
