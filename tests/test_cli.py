"""Every stage is reachable as `proofmatch <command>`, and bad commands fail clearly."""

from __future__ import annotations

import pytest

from proofmatch import cli


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_each_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    assert f"proofmatch {command}" in capsys.readouterr().out


def test_usage_and_unknown_command(capsys):
    assert cli.main([]) == 2
    assert cli.main(["--help"]) == 0
    assert "extract" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
