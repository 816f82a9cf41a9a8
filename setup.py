"""What a wheel of Stepwise holds, beside pyproject.toml (which has the rest): the apps and the
PRM as packages, and the site's templates, static files and demo data, which live at the
repository's root, inside the ``stepwise`` package as ``stepwise/assets/`` (where
``settings.ASSETS_DIR`` finds them when no checkout is around). Tests, benchmarks, scripts and
docs stay in the repository. ``tests/test_wheel.py`` builds the wheel and starts it."""

from __future__ import annotations

from setuptools import find_packages, setup

APPS = ["common", "labeling", "annotators", "imports", "machines", "exports", "learning"]
ASSETS = {
    "stepwise.assets.templates": "templates",
    "stepwise.assets.static": "static",
    "stepwise.assets.demo": "demo",
}

setup(
    packages=[
        *find_packages(
            include=[name for app in [*APPS, "stepwise", "prm"] for name in (app, f"{app}.*")]
        ),
        *ASSETS,
    ],
    package_dir=ASSETS,
    package_data={"exports": ["data/math500/*"], **{package: ["**/*"] for package in ASSETS}},
    include_package_data=False,
)
