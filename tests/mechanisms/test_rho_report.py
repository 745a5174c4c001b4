"""A ρ account is reported in ρ (issue 27): its remaining ε does not apply, like its total ε and
a spent ε with no δ to convert at (it used to read "remaining ε = 0.283" beside a spent ε of ∞),
the ρ left is always stated, and a ρ release's ε cell says its ρ, never "inf"."""

from __future__ import annotations

import json
import math
from pathlib import Path

from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.session import Session

PEOPLE = Path(__file__).resolve().parents[2] / "examples" / "people.csv"


def test_a_rho_session_reports_rho_left_and_no_epsilon_beside_an_infinite_spent_epsilon() -> None:
    session = Session(PEOPLE, rho=0.5)
    session.count(rho=0.46, by="town", keys=["Ashby"])
    assert math.isinf(session.spent.epsilon) and math.isinf(session.total.epsilon)
    assert math.isinf(session.remaining.epsilon)  # not √(2·0.04) = 0.283: ε does not apply on a ρ account
    assert math.isclose(session.remaining.rho, 0.04)
    archive = session.to_dict()
    assert archive["spent"]["epsilon"] is None and archive["remaining"]["epsilon"] is None
    text = repr(session).splitlines()[0]
    assert "remaining δ = 0, ρ = 0.04" in text and "ε" not in text
    # what is left is what the accounting admits: a Laplace release of ε with ε²/2 ≤ ρ left fits
    assert session.count(epsilon=math.sqrt(2 * 0.04) * (1 - 1e-9)).epsilon > 0.28


def test_a_spent_rho_account_says_rho_0_and_the_html_says_rho_not_inf() -> None:
    session = Session(PEOPLE, rho=0.5)
    session.count(rho=0.5, by="town", keys=["Ashby"])
    assert "remaining δ = 0, ρ = 0;" in repr(session)
    page = session._repr_html_()
    assert "<td class=num>ρ = 0.5</td>" in page and ">inf<" not in page


def test_the_command_line_reports_a_rho_account_in_rho() -> None:
    result = CliRunner().invoke(app, ["query", str(PEOPLE), "--rho", "0.5", "--count", "--epsilon", "0.6", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["total"]["epsilon"] is None and payload["remaining"]["epsilon"] is None
    assert math.isclose(payload["remaining"]["rho"], 0.5 - 0.6**2 / 2)
    text = CliRunner().invoke(app, ["query", str(PEOPLE), "--rho", "0.18", "--count", "--epsilon", "0.6"])
    assert text.exit_code == 0 and "remaining δ = 0, ρ = 0 " in " ".join(text.output.split())
