"""Export jobs and dataset manifests (see exports/formats.py for the formats)."""
