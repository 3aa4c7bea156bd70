"""explain: every finding code the fixtures produce can be explained."""

from __future__ import annotations

from tests.paths import FIXTURES

PASTES = FIXTURES / "pastes"


def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


def test_every_finding_code_the_fixtures_produce_can_be_explained(capsys):
    # `envdoctor explain messages.signature/...`, copied from diagnose's own output, used to be "unknown code"
    from envdoctor.compat import load_compat
    from envdoctor.compat.signatures import load_signatures
    from envdoctor.diagnose import NothingRecognised, diagnose_report

    compat = load_compat()
    codes = {f"messages.signature/{s.id}" for s in load_signatures()}
    for paste in sorted(PASTES.glob("*.txt")):
        try:
            report = diagnose_report([paste.read_text(encoding="utf-8")], compat)
        except NothingRecognised:
            continue
        codes |= {f.code for f in report.findings}
    assert any(c.startswith("messages.signature/") for c in codes)
    for code in sorted(codes):
        assert _cli("explain", code) == 0, (code, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "Category: DRIVER_TOO_OLD_FOR_TORCH_CUDA" in out
    assert _cli("explain", "messages.signature/no-such-signature") == 2
