"""Imports: files of problems, solutions and step labels into a campaign.

``imports.pipeline.import_file(path, campaign=..., fmt=...)`` is the one entry point (the
``import_solutions`` command, the web upload, the demo loader and the round-trip tests call it).
The formats are described in ``docs/import-formats.md`` and in the module of each.
"""
