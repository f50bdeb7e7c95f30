"""The viewer's temp-file names: one pattern, read the same by the live-sync model and `slfs edit`."""

from __future__ import annotations

import pytest

from slfs.cli.edit import parse_temp_name as verb_parse
from slfs.cli.output import VerbError
from slfs.model.live import parse_temp_name as model_parse
from slfs.protocol.constants import parse_temp_name

MD5 = "0123456789abcdef0123456789ABCDEF"
UUID = "01234567-89ab-cdef-0123-456789ABCDEF"


@pytest.mark.parametrize("ident", [MD5, UUID])
def test_both_id_forms_in_both_names(ident: str) -> None:
    assert parse_temp_name(f"sl_script_My Script_{ident}.lsl") == ("My Script", ident.lower(), "lsl")
    assert parse_temp_name(f"sl_script_{ident}.luau") == (None, ident.lower(), "luau")
    # the model names the fallback "script"; `slfs edit` says there is none
    assert model_parse(f"/tmp/sl_script_{ident}.luau") == ("script", ident.lower(), "luau")
    assert verb_parse(f"C:\\Temp\\sl_script_{ident}.luau") == (None, ident.lower(), "luau")
    assert model_parse(f"/tmp/sl_script_x_{ident}.lsl") == verb_parse(f"/tmp/sl_script_x_{ident}.lsl")


@pytest.mark.parametrize("base", [
    "sl_script_x_" + "-" * 36 + ".lsl",  # 36 characters that are not a UUID
    "sl_script_" + "0" * 36 + ".lsl",
    f"sl_script_x_{MD5[:-1]}.lsl", f"sl_script_{UUID[:-1]}.luau", f"sl_script_x_{MD5}.txt",
    f"sl_script__{MD5}.lsl", f"xsl_script_x_{MD5}.lsl", f"sl_script_{MD5}.lsl.bak",
    f"sl_script_x_{UUID.replace('-', '_')}.lsl",
])
def test_not_a_temp_name(base: str) -> None:
    assert parse_temp_name(base) is None
    assert model_parse(base) is None
    with pytest.raises(VerbError):
        verb_parse(base)
