"""The format options are declared once (``exports.formats.options``): the export form, the API
serializer, the command's flags and each format's defaults come from that declaration."""

from __future__ import annotations

import pytest

from exports.api import ExportCreateSerializer
from exports.formats import FORMAT_OPTIONS, FORMATS, ExportError, FormatOption, format_options
from exports.forms import ExportForm
from exports.management.commands.export_dataset import Command
from exports.policy import POLICY_OPTIONS

NAMES = [o.name for o in FORMAT_OPTIONS]


def test_the_form_the_api_and_the_command_offer_every_declared_option_and_no_other():
    policy = [o.name for o in POLICY_OPTIONS]
    assert list(ExportForm().fields) == ["format", *policy, *NAMES, "selection"]
    assert list(ExportCreateSerializer().fields) == ["format", *policy, *NAMES, "selection"]
    parser = Command().create_parser("manage.py", "export_dataset")
    flags = {a.dest for a in parser._actions}
    assert set(NAMES) <= flags


def test_each_format_has_the_options_that_name_it_with_their_defaults():
    for fmt in FORMATS.values():
        assert fmt.options == {o.name: o.default for o in FORMAT_OPTIONS if fmt.name in o.formats}


def test_the_declared_bounds_are_the_services_and_the_apis():
    length = next(o for o in FORMAT_OPTIONS if o.name == "max_length")
    trl = FORMATS["trl"]
    assert format_options(trl, {"max_length": length.max_value})["max_length"] == 1_000_000
    with pytest.raises(ExportError, match="must be from 8 to 1000000"):
        format_options(trl, {"max_length": (length.max_value or 0) + 1})
    field = ExportCreateSerializer().fields["max_length"]
    assert (field.min_value, field.max_value) == (length.min_value, length.max_value)
    with pytest.raises(ExportError, match="step_tag must not be blank"):
        format_options(FORMATS["math-shepherd"], {"step_tag": "  "})


def test_a_text_option_keeps_its_spaces_where_declared():
    separator = next(o for o in FORMAT_OPTIONS if o.name == "step_separator")
    assert isinstance(separator, FormatOption) and separator.keep_spaces
    form = ExportForm()
    assert form.fields["step_separator"].strip is False
    assert ExportCreateSerializer().fields["step_separator"].trim_whitespace is False
