"""The explorer's JSON API, in process (FastAPI's TestClient over the real app and real mechanism)."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the explorer needs the web extra")

with warnings.catch_warnings():  # starlette's notice about httpx, not about this code
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dpwitness import Laplace, witness
from dpwitness.cli import app as cli_app
from dpwitness.explorer import compute, create_app
from dpwitness.explorer.strings import STATIC
from dpwitness.privacy import accounting


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def get(client: TestClient, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/{path}", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


# --- the page and its assets ---------------------------------------------------------------------
def test_page_and_assets_are_served_from_the_package(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    scripts = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert "/static/js/main.js" in scripts and "/static/explorer.css" not in scripts  # the stylesheet is inlined
    assert (STATIC / "explorer.css").read_text(encoding="utf-8") in page.text
    assert client.get("/static/explorer.css").status_code == 200
    for asset in scripts:
        assert client.get(asset).status_code == 200, asset


def test_assets_work_offline_no_cdn() -> None:
    namespaces = {"http://www.w3.org/2000/svg", "http://www.w3.org/1998/Math/MathML"}  # XML names, never fetched
    for path in STATIC.rglob("*"):
        if path.suffix in {".html", ".js", ".css", ".json"}:
            text = path.read_text(encoding="utf-8")
            urls = set(re.findall(r"https?://[^\s\"'`)]+", text)) - namespaces
            assert not urls, (path, urls)


def test_every_string_key_used_by_the_page_is_in_the_english_table(client: TestClient) -> None:
    table = get(client, "strings", lang="en")["strings"]
    used: set[str] = set()
    for path in STATIC.rglob("*"):
        if path.suffix in {".html", ".js"}:
            text = path.read_text(encoding="utf-8")
            used |= set(re.findall(r'data-i18n(?:-label)?="([\w.-]+)"', text))
            used |= set(re.findall(r'\bt\(\s*"([\w.-]+)"', text))
    assert used, "no string keys found"
    assert sorted(used - set(table)) == []
    assert all(isinstance(v, str) and v for v in table.values())


def test_english_and_chinese_tables_have_the_same_keys_and_placeholders() -> None:
    tables = {lang: json.loads((STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8")) for lang in ("en", "zh")}
    assert sorted(tables["en"]) == sorted(tables["zh"])
    for key, english in tables["en"].items():
        assert sorted(re.findall(r"\{(\w+)\}", english)) == sorted(re.findall(r"\{(\w+)\}", tables["zh"][key])), key
    # the standard Chinese terms of the field
    chinese = " ".join(tables["zh"].values())
    for term in ("差分隐私", "灵敏度", "拉普拉斯", "隐私预算", "邻近数据集"):
        assert term in chinese, term


def test_a_missing_key_falls_back_to_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpwitness.explorer import strings

    english = json.loads((STATIC / "i18n" / "en.json").read_text(encoding="utf-8"))
    partial = {key: value for key, value in english.items() if key != "page.title"} | {"nav.live": "Live (partial)"}
    (tmp_path / "en.json").write_text(json.dumps(english), encoding="utf-8")
    (tmp_path / "xx.json").write_text(json.dumps(partial), encoding="utf-8")
    monkeypatch.setattr(strings, "I18N", tmp_path)
    strings._load.cache_clear()
    try:
        table = strings.strings("xx")
        assert table["page.title"] == english["page.title"] and table["nav.live"] == "Live (partial)"
    finally:
        strings._load.cache_clear()


def test_strings_table_lists_languages_and_rejects_unknown(client: TestClient) -> None:
    body = get(client, "strings")
    assert body["lang"] == "en" and {"en", "zh"} <= set(body["languages"])
    assert get(client, "strings", lang="zh")["strings"]["page.title"] == "dpwitness 探索器"
    bad = client.get("/api/strings", params={"lang": "xx"})
    assert bad.status_code == 422 and "lang" in bad.json()["detail"]
    json.loads((STATIC / "i18n" / "en.json").read_text(encoding="utf-8"))  # valid JSON for translators


def test_every_endpoint_answers_its_defaults(client: TestClient) -> None:
    schema = client.get("/api/openapi.json").json()
    paths = sorted(path for path, methods in schema["paths"].items() if "get" in methods)
    # issue 22: younger-than-20, beyond/*; issue 29: linked, randomized-response, group, clamp, parallel,
    # contribution, noisy-max, deployments
    assert len(paths) == 27, paths
    assert sorted(path for path, methods in schema["paths"].items() if "post" in methods) == ["/api/planner/release"]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"].startswith("application/json")
    assert client.get("/api/docs").status_code == 404  # no Swagger UI: it would need a CDN


# --- live panel, release, witness ----------------------------------------------------------------
def test_live_numbers_come_from_the_mechanism(client: TestClient) -> None:
    body = get(client, "live", epsilon=0.5, sensitivity=1, value=42, d=1, seed=1, releases=3)
    mech = Laplace(sensitivity=1, epsilon=0.5)
    assert body["scale"] == pytest.approx(2.0) == mech.scale
    assert body["variance"] == pytest.approx(8.0)
    assert body["half_width"] == pytest.approx(2.0 * math.log(20))
    assert body["privacy_loss_d"] == pytest.approx(mech.privacy_loss(1.0))
    assert body["release"]["value"] == mech.release(42.0, seed=1).value
    assert body["release"]["seeded"] is True and "NOT for production" in body["release"]["notice"]
    low, high = body["release"]["interval"]
    assert high - low == pytest.approx(2 * body["half_width"])
    assert body["composition"] == {
        "releases": 3,
        "claimed_total": pytest.approx(1.5),
        "real_total": pytest.approx(1.5, rel=1e-6),
        "each": 0.5,
    }
    assert body["witness"]["ok"] is True
    curves = body["curves"]
    assert len(curves["z"]) == len(curves["density_1"]) == len(curves["log_ratio"]) > 100
    assert max(abs(v) for v in curves["log_ratio"]) <= 0.5 * (1 + 1e-6)
    assert curves["max_abs_log_ratio"] == pytest.approx(0.5, rel=1e-6)  # attained away from the centres


def test_moving_epsilon_changes_scale_variance_and_curves(client: TestClient) -> None:
    a, b = get(client, "live", epsilon=0.5), get(client, "live", epsilon=1)
    assert (a["scale"], b["scale"]) == (pytest.approx(2.0), pytest.approx(1.0))
    assert (a["variance"], b["variance"]) == (pytest.approx(8.0), pytest.approx(2.0))
    assert a["curves"]["density_1"] != b["curves"]["density_1"]


def test_tamper_turns_the_witness_red_with_delta_squared_over_epsilon(client: TestClient) -> None:
    body = get(client, "live", epsilon=0.5, sensitivity=1, tamper=True)
    report = body["witness"]
    assert report["ok"] is False and report["tamper"] is True
    assert report["worst_log_ratio"] == pytest.approx(1**2 / 0.5, rel=1e-6)
    assert report["realised_scale"] == pytest.approx(0.5, rel=1e-6)
    assert body["curves"]["max_abs_log_ratio"] > 0.5 * 1.5  # the curve leaves ±ε
    assert body["composition"]["real_total"] > body["composition"]["claimed_total"]
    assert get(client, "live", epsilon=0.5, sensitivity=1, tamper=False)["witness"]["ok"] is True


def test_witness_endpoint_matches_the_library(client: TestClient) -> None:
    body = get(client, "witness", epsilon=2, sensitivity=3)
    report = witness(Laplace(sensitivity=3, epsilon=2))
    assert body["ok"] is True
    assert body["worst_log_ratio"] == pytest.approx(report.worst_log_ratio)
    assert body["worst_log_ratio"] == pytest.approx(2.0, rel=1e-6)  # Δ = 3, ε = 2: the loss is ε
    assert body["expected_variance"] == pytest.approx(2 * (3 / 2) ** 2)
    tampered = get(client, "witness", epsilon=2, sensitivity=3, tamper=True)
    assert tampered["ok"] is False and tampered["worst_log_ratio"] == pytest.approx(9 / 2, rel=1e-6)


def test_release_same_seed_same_value_next_seed_differs(client: TestClient) -> None:
    one = get(client, "release", epsilon=1, sensitivity=1, value=10, seed=7)
    again = get(client, "release", epsilon=1, sensitivity=1, value=10, seed=7)
    other = get(client, "release", epsilon=1, sensitivity=1, value=10, seed=8)
    assert one["value"] == again["value"] != other["value"]
    assert one["seed"] == 7 and one["seeded"] is True


def test_zero_sensitivity_releases_exactly(client: TestClient) -> None:
    body = get(client, "live", epsilon=1, sensitivity=0, d=0, value=5)
    assert body["release"]["value"] == 5.0 and body["scale"] == 0.0
    assert body["curves"]["no_noise"] is True and body["witness"]["ok"] is True


# --- walkthrough --------------------------------------------------------------------------------
def test_neighbour_gap_and_fan(client: TestClient) -> None:
    body = get(client, "walkthrough/neighbour", query="sum", relation="add-remove", row=1)
    assert body["f_d1"] - body["f_d2"] == body["gap"] == 71.0  # Ben, 71, removed
    assert body["sensitivity"] == 100.0 == body["longest_arrow"]  # someone aged 100 may be added
    swap = get(client, "walkthrough/neighbour", query="sum", relation="replace-one", row=5, replacement=100)
    assert swap["gap"] == 19.0 - 100.0 and swap["sensitivity"] == 100.0
    assert swap["longest_arrow"] == 100.0 - 19.0  # the youngest (19) replaced by 100; Δ covers any table
    count = get(client, "walkthrough/neighbour", query="count", relation="replace-one")
    assert count["gap"] == 0.0 and count["sensitivity"] == 0.0


def test_tails_laplace_bounded_gaussian_not(client: TestClient) -> None:
    body = get(client, "walkthrough/tails", epsilon=1, sensitivity=1)
    assert max(abs(v) for v in body["laplace_log_ratio"]) <= 1 + 1e-9
    assert max(abs(v) for v in body["gauss_log_ratio"]) > 5  # grows without bound
    assert body["sigma"] == pytest.approx(math.sqrt(2) * body["scale"])


def test_derivation_fills_in_the_inequality(client: TestClient) -> None:
    body = get(client, "walkthrough/derivation", epsilon=1, sensitivity=2, value=0, d=-1.5, z=0.7)
    assert body["distance_gap"] <= body["shift"] <= body["sensitivity"]
    assert body["log_ratio"] == pytest.approx(body["distance_gap"] / body["scale"])
    assert body["log_ratio"] <= body["bound"] <= body["epsilon"] and body["holds"] is True


def test_edge_cases(client: TestClient) -> None:
    body = get(client, "walkthrough/edge-cases", epsilon=1, sensitivity=1)
    assert body["d_zero_loss"] == 0.0
    assert body["negative"]["forward"] == pytest.approx(-body["negative"]["backward"])
    assert body["far_tail"]["laplace_log_ratio"] == pytest.approx(1.0)
    assert body["far_tail"]["gauss_log_ratio"] > 1e5
    assert body["small_epsilon"]["scale"] > 100 * body["large_epsilon"]["scale"]
    assert {r["query"]: (r["add_remove"], r["replace_one"]) for r in body["relations"]} == {
        "count": (1.0, 0.0),
        "sum": (100.0, 100.0),
        "histogram": (1.0, 2.0),
    }


def test_worked_example_and_traps(client: TestClient) -> None:
    body = get(client, "walkthrough/worked-example", epsilon=1)
    assert body["sensitivity"] == pytest.approx(0.1) and body["scale"] == pytest.approx(0.1)
    assert body["std"] == pytest.approx(0.141, abs=5e-4)
    assert body["half_width"] == pytest.approx(0.30, abs=5e-3)
    assert body["trap_no_division"]["factor"] == pytest.approx(1000)
    assert body["trap_private_n"]["count_sensitivity"] == 1.0 and body["witness_ok"] is True


def test_myths_numbers(client: TestClient) -> None:
    body = get(client, "myths")
    assert body["uncalibrated"]["real_epsilon"] == pytest.approx(100, rel=1e-6)
    assert {f["epsilon"]: f["factor"] for f in body["factors"]}[1.0] == pytest.approx(math.e)


# --- red team -----------------------------------------------------------------------------------
def test_membership_likelihood_ratio_under_its_cap(client: TestClient) -> None:
    body = get(client, "redteam/membership", epsilon=0.5, sensitivity=1)["analytic"]
    assert body["max_likelihood_ratio"] <= body["cap"] * (1 + 1e-6)
    assert body["cap"] == pytest.approx(math.exp(0.5))
    # the cap is reached (in the tails), and the best test meets TPR = e^ε·FPR at FPR = 1%
    assert body["max_likelihood_ratio"] == pytest.approx(math.exp(0.5), rel=1e-6)
    assert body["tpr_at_1pct"] == pytest.approx(math.exp(0.5) * 0.01, rel=1e-6)
    bound = dict(zip(body["bound"]["fpr"], body["bound"]["tpr"], strict=True))
    assert body["tpr_at_1pct"] <= body["tpr_cap_at_1pct"] + 1e-9
    for fpr, tpr in zip(body["roc"]["fpr"], body["roc"]["tpr"], strict=True):
        assert tpr <= min(1.0, math.exp(0.5) * fpr, 1 - math.exp(-0.5) * (1 - fpr)) + 1e-9
    assert bound[0.0] == 0.0
    tampered = get(client, "redteam/membership", epsilon=0.5, sensitivity=1, tamper=True)["analytic"]
    assert tampered["max_likelihood_ratio"] > tampered["cap"] * 2


def test_membership_simulation_runs_the_real_attack(client: TestClient) -> None:
    body = get(client, "redteam/membership", epsilon=1, simulate=True, trials=2000)
    sim = body["simulation"]
    assert sim["available"] is True  # dpwitness.attacks.membership ships with this package
    assert sim["target_value"] == 71.0
    # the attack works (AUC well above a coin's 0.5) and stays under the ε = 1 cap tanh(½)
    assert sim["bound"] == pytest.approx(math.tanh(0.5))
    assert 0.6 < sim["auc"] < 0.8
    assert 0.2 < sim["advantage"] <= sim["bound"] + 0.03


def test_differencing_exact_tells_d1_from_d2_noisy_answers_agree_with_the_guess(client: TestClient) -> None:
    body = get(client, "redteam/differencing")
    assert body["d1"]["exact"]["difference"] == body["target_value"] == 1
    assert body["d2"]["exact"]["difference"] == body["target_value_d2"] == 0
    assert [p["diagnosis"] for p in body["patients"]][:4] == [p["diagnosis"] for p in body["patients_d2"]][:4]
    assert "noisy" not in body and body["attack"]["success_probability"] == 1.0
    noisy = get(client, "redteam/differencing", epsilon=0.5, seed=3)
    assert noisy == get(client, "redteam/differencing", epsilon=0.5, seed=3)  # seeded: reproducible
    for name, truth in (("d1", 1), ("d2", 0)):
        part = noisy[name]["noisy"]
        assert part["scale"] == pytest.approx(2.0)
        # the page shows one story: the estimate IS the displayed Q5 − Q4, the guess follows from it
        assert part["difference"] == pytest.approx(part["q5"] - part["q4"])
        assert part["guess"] == (1 if part["difference"] >= 0.5 else 0)
        assert part["right"] is (part["guess"] == truth)
    # the same noise draws on D₁ and D₂: only patient 5's bit differs
    assert noisy["d1"]["noisy"]["q4"] == noisy["d2"]["noisy"]["q4"]
    assert noisy["d1"]["noisy"]["q5"] - noisy["d2"]["noisy"]["q5"] == pytest.approx(1.0)
    dp = noisy["attack"]
    assert 0.5 < dp["success_probability"] <= dp["bound"] + 0.01
    assert dp["bound"] == pytest.approx(math.e**0.5 / (1 + math.e**0.5))


def test_membership_without_noise_is_a_coin_not_an_error(client: TestClient) -> None:
    body = get(client, "redteam/membership", epsilon=0.5, sensitivity=0)["analytic"]
    assert body["no_noise"] is True and body["max_likelihood_ratio"] == 1.0
    assert body["roc"]["fpr"] == body["roc"]["tpr"]  # the best test is a coin


def test_floating_point_runs_the_real_attack(client: TestClient) -> None:
    body = get(client, "redteam/floating-point", epsilon=1, samples=500)
    assert body["available"] is True and body["samples"] == 500
    assert body["naive_rate"] > 0.5 and body["dpwitness_rate"] == 0.0


# --- bad input: a 4xx naming the parameter, never a 5xx ------------------------------------------
BAD = [
    ("live", {"epsilon": 0}, "epsilon"),
    ("live", {"epsilon": -1}, "epsilon"),
    ("live", {"epsilon": "abc"}, "epsilon"),
    ("live", {"epsilon": "nan"}, "epsilon"),
    ("live", {"epsilon": "inf"}, "epsilon"),
    ("live", {"epsilon": 1e6}, "epsilon"),
    ("live", {"epsilon": 0.001}, "epsilon"),
    ("live", {"sensitivity": -1}, "sensitivity"),
    ("live", {"sensitivity": "NaN"}, "sensitivity"),
    ("live", {"sensitivity": 1, "d": 2}, "d"),
    ("live", {"sensitivity": 1, "d": -1.5}, "d"),
    ("live", {"value": "forty"}, "value"),
    ("live", {"value": 1e300}, "value"),
    ("live", {"seed": -1}, "seed"),
    ("live", {"seed": 1.5}, "seed"),
    ("live", {"seed": 2**64}, "seed"),
    ("live", {"tamper": "maybe"}, "tamper"),
    ("live", {"sensitivity": 0, "d": 0, "tamper": True}, "tamper"),
    ("live", {"releases": 0}, "releases"),
    ("live", {"releases": 10**6}, "releases"),
    ("witness", {"epsilon": 0}, "epsilon"),
    ("witness", {"sensitivity": "x"}, "sensitivity"),
    ("release", {"seed": "s"}, "seed"),
    ("release", {"value": "inf"}, "value"),
    ("walkthrough/neighbour", {"query": "median"}, "query"),
    ("walkthrough/neighbour", {"relation": "swap"}, "neighbours"),
    ("walkthrough/neighbour", {"row": 9}, "row"),
    ("walkthrough/neighbour", {"relation": "replace-one", "replacement": 200}, "replacement"),
    ("walkthrough/tails", {"sensitivity": 0}, "sensitivity"),
    ("walkthrough/tails", {"epsilon": 0}, "epsilon"),
    ("walkthrough/derivation", {"z": "far"}, "z"),
    ("walkthrough/derivation", {"sensitivity": 1, "d": 3}, "d"),
    ("walkthrough/derivation", {"sensitivity": 0, "d": 0}, "sensitivity"),
    ("walkthrough/edge-cases", {"sensitivity": 0}, "sensitivity"),
    ("walkthrough/worked-example", {"epsilon": -2}, "epsilon"),
    ("myths", {"epsilon": "e"}, "epsilon"),
    ("redteam/membership", {"epsilon": 0}, "epsilon"),
    ("walkthrough/vector", {"relation": "swap"}, "neighbours"),
    ("walkthrough/vector", {"epsilon": 0}, "epsilon"),
    ("gaussian", {"delta": 0}, "delta"),
    ("gaussian", {"delta": "x"}, "delta"),
    ("planner", {"total_epsilon": 0}, "total_epsilon"),
    ("planner", {"total_epsilon": 11}, "total_epsilon"),
    ("planner", {"count_epsilon": -1}, "count_epsilon"),
    ("planner", {"mean_epsilon": "nan"}, "mean_epsilon"),
    ("planner", {"count_epsilon": 0, "mean_epsilon": 0, "histogram_epsilon": 0}, "count_epsilon"),
    ("planner", {"total_delta": 0.5}, "total_delta"),
    ("planner", {"total_delta": 1e-5, "count_mechanism": "exponential"}, "count_mechanism"),
    ("redteam/membership", {"simulate": True, "trials": 5}, "trials"),
    ("redteam/differencing", {"epsilon": 0}, "epsilon"),
    ("redteam/differencing", {"seed": -3}, "seed"),
    ("redteam/floating-point", {"samples": 10**9}, "samples"),
    ("redteam/floating-point", {"epsilon": "nan"}, "epsilon"),
]


@pytest.mark.parametrize(("path", "params", "parameter"), BAD, ids=[f"{p}-{'-'.join(map(str, q.items()))}" for p, q, _ in BAD])
def test_bad_parameters_get_a_4xx_naming_them(client: TestClient, path: str, params: dict[str, Any], parameter: str) -> None:
    response = client.get(f"/api/{path}", params=params)
    assert 400 <= response.status_code < 500, response.text
    body = response.json()
    assert body["parameter"] == parameter
    assert body["detail"].startswith(f"{parameter} must be"), body["detail"]


WEIRD = ["", " ", "abc", "nan", "-inf", "1e999", "-0", "0x10", "[]", "1,2", "%00", "9" * 400, "true"]
ENDPOINTS = [
    ("live", ["epsilon", "sensitivity", "value", "d", "seed", "tamper", "releases"]),
    ("walkthrough/derivation", ["epsilon", "sensitivity", "value", "d", "z"]),
    ("walkthrough/neighbour", ["query", "relation", "row", "replacement"]),
    ("redteam/membership", ["epsilon", "sensitivity", "trials"]),
    ("redteam/differencing", ["epsilon", "seed"]),
]


@pytest.mark.parametrize(("path", "names"), ENDPOINTS, ids=[p for p, _ in ENDPOINTS])
def test_weird_input_never_crashes_the_server(client: TestClient, path: str, names: list[str]) -> None:
    for name in names:
        for raw in WEIRD:
            response = client.get(f"/api/{path}", params={name: raw})
            assert response.status_code < 500, (name, raw, response.text)
            if response.status_code >= 400:
                assert "detail" in response.json()


# --- live panel: claimed vs real, exact releases ------------------------------------------------
def test_tamper_reports_claimed_and_real_calibration_side_by_side(client: TestClient) -> None:
    body = get(client, "live", epsilon=0.5, sensitivity=2, d=2, tamper=True)
    assert body["claimed"]["scale"] == pytest.approx(4.0) and body["claimed"]["half_width"] == pytest.approx(4 * math.log(20))
    assert body["real"]["scale"] == pytest.approx(0.25, rel=1e-6)
    assert body["real"]["half_width"] == pytest.approx(0.25 * math.log(20), rel=1e-6)
    assert body["claimed"]["loss_d"] == pytest.approx(0.5) and body["real"]["loss_d"] == pytest.approx(8.0, rel=1e-6)
    honest = get(client, "live", epsilon=0.5, sensitivity=2, d=2)
    assert honest["real"]["scale"] == pytest.approx(honest["claimed"]["scale"], rel=1e-6)


def test_histogram_releases_come_from_the_exact_sampler(client: TestClient) -> None:
    body = get(client, "live", epsilon=1, sensitivity=1, value=10, seed=4)
    values = np.array(body["many_releases"])
    assert values.size == 2000
    mech = Laplace(sensitivity=1.0, epsilon=1.0)
    assert mech.noise is not None
    steps = values / mech.noise.granularity
    assert np.array_equal(steps, np.round(steps))  # on the sampler's grid: not a float formula
    assert abs(values.mean() - 10) < 5 * math.sqrt(2) / math.sqrt(2000)  # unbiased (5 sd)
    assert values.var() == pytest.approx(2.0, rel=0.2)
    assert body["many_releases"] == get(client, "live", epsilon=1, sensitivity=1, value=10, seed=4)["many_releases"]


def test_vector_query_one_draw_per_coordinate_with_l1_sensitivity(client: TestClient) -> None:
    add = get(client, "walkthrough/vector", relation="add-remove", epsilon=1)
    rep = get(client, "walkthrough/vector", relation="replace-one", epsilon=1)
    assert add["sensitivity"] == 1.0 and rep["sensitivity"] == 2.0
    assert add["scale"] == 1.0 and rep["scale"] == 2.0
    assert add["counts"] == [1.0, 2.0, 2.0, 1.0] and sum(add["counts"]) == 6  # every person in one group
    assert len(add["noisy"]) == add["draws"] == 4 and add["noisy"] != add["counts"]


def test_gaussian_panel_gets_the_exact_discrete_gaussian_and_its_witness(client: TestClient) -> None:
    body = get(client, "gaussian", epsilon=1, sensitivity=1, delta=0.1)
    assert body["witness"]["ok"] is True
    assert body["delta_sampled"] <= 0.1 and body["sigma"] >= body["analytic_sigma"] * (1 - 1e-9)
    assert body["sigma"] == pytest.approx(body["analytic_sigma"], rel=0.01)
    too_large = client.get("/api/gaussian", params={"epsilon": 8, "sensitivity": 1, "delta": 0.1})
    assert too_large.status_code == 422 and too_large.json()["parameter"] == "epsilon"


# --- the budget planner --------------------------------------------------------------------------
def test_planner_errors_risk_and_composition(client: TestClient) -> None:
    body = get(client, "planner", total_epsilon=1, count_epsilon=0.2, mean_epsilon=0.5, histogram_epsilon=0.3)
    assert body["composed_epsilon"] == pytest.approx(1.0) and body["within_budget"] is True
    queries = {q["name"]: q for q in body["queries"]}
    assert queries["count"]["sensitivity"] == [1.0]
    assert queries["count"]["expected_sd"] == pytest.approx(math.sqrt(2) / 0.2)
    assert queries["histogram"]["sensitivity"] == [1.0]
    assert queries["mean"]["sensitivity"] == [1.0, 36.5]  # count and centred sum over [17, 90]
    curve = queries["count"]["curve"]
    assert all(a > b for a, b in zip(curve["sd"], curve["sd"][1:], strict=False))  # error falls as ε grows
    risk = body["risk"]
    assert risk["advantage"] == pytest.approx(math.tanh(0.5))
    assert risk["posterior_at_1pct"] == pytest.approx(0.01 * math.e / (0.99 + 0.01 * math.e))
    over = get(client, "planner", total_epsilon=0.5, count_epsilon=0.2, mean_epsilon=0.5, histogram_epsilon=0.3)
    assert over["within_budget"] is False


def test_planner_releases_through_a_session_and_refuses_a_spent_plan(client: TestClient) -> None:
    params = {"plan_id": "test-plan-1", "total_epsilon": 1, "count_epsilon": 0.2, "mean_epsilon": 0.5, "histogram_epsilon": 0.3}
    first = client.post("/api/planner/release", params=params)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["spent"] == pytest.approx(1.0) and body["remaining"] == pytest.approx(0.0)
    answers = {a["name"]: a for a in body["answers"]}
    assert set(answers) == {"count", "mean", "histogram"}
    low, high = answers["count"]["interval"]
    assert low < answers["count"]["value"] < high and answers["count"]["epsilon"] == pytest.approx(0.2)
    assert set(answers["histogram"]["value"]) == {"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}
    assert 17 <= answers["mean"]["value"] <= 90
    assert [h["epsilon"] for h in body["history"]] == pytest.approx([0.2, 0.5, 0.3])
    again = client.post("/api/planner/release", params=params)
    assert again.status_code == 409 and "nothing was released" in again.json()["detail"]
    over = client.post("/api/planner/release", params={**params, "plan_id": "test-plan-2", "total_epsilon": 0.5})
    assert over.status_code == 409
    fresh = client.post("/api/planner/release", params={**params, "plan_id": "test-plan-2"})  # nothing was spent on it
    assert fresh.status_code == 200
    bad = client.post("/api/planner/release", params={**params, "plan_id": "x"})
    assert bad.status_code == 422 and bad.json()["parameter"] == "plan_id"


def test_planner_splits_delta_across_gaussian_queries_and_releases_them(client: TestClient) -> None:
    params = {"total_epsilon": 1, "count_epsilon": 0.2, "mean_epsilon": 0.5, "histogram_epsilon": 0.3}
    gaussian = {**params, "total_delta": 1e-5, "count_mechanism": "gaussian", "histogram_mechanism": "gaussian"}
    body = get(client, "planner", **gaussian)
    queries = {q["name"]: q for q in body["queries"]}
    assert queries["count"]["delta"] == queries["histogram"]["delta"] == pytest.approx(5e-6) and queries["mean"]["delta"] == 0
    assert body["composed_delta"] == pytest.approx(1e-5)
    # the Gaussian's σ for one count at (0.2, 5e-6) exceeds Laplace's sd √2/0.2: Gaussian pays off for many queries, not one
    assert queries["count"]["expected_sd"] > math.sqrt(2) / 0.2
    e = math.exp(1.0)
    assert body["risk"]["advantage"] == pytest.approx((e - 1 + 2e-5) / (e + 1))
    needs_delta = client.get("/api/planner", params={**params, "count_mechanism": "gaussian"})
    assert needs_delta.status_code == 422 and needs_delta.json()["parameter"] == "total_delta"
    released = client.post("/api/planner/release", params={**gaussian, "plan_id": "test-gauss-1"})
    assert released.status_code == 200, released.text
    out = released.json()
    assert {a["name"]: a["mechanism"] for a in out["answers"]} == {
        "count": "gaussian",
        "mean": "laplace",
        "histogram": "gaussian",
    }
    assert out["spent_delta"] == pytest.approx(1e-5) and out["total_delta"] == pytest.approx(1e-5)
    again = client.post("/api/planner/release", params={**gaussian, "plan_id": "test-gauss-1"})
    assert again.status_code == 409


def test_planner_falls_back_to_generated_data_without_adult(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dpwitness.explorer import planner

    monkeypatch.setenv("DPWITNESS_ADULT", str(tmp_path / "absent.csv"))
    planner.source.cache_clear()
    planner._unit_error.cache_clear()
    try:
        body = planner.plan(1.0, 0.2, 0.5, 0.3)
        assert body["data"] == "generated"
        released = planner.PlanLedger(str(tmp_path)).release("generated-1", 1.0, 0.2, 0.5, 0.3)
        assert released["data"] == "generated" and len(released["answers"]) == 3
    finally:
        planner.source.cache_clear()
        planner._unit_error.cache_clear()


# --- warming the caches -------------------------------------------------------------------------
def test_warm_up_fills_the_caches_and_stops_when_asked() -> None:
    import threading

    from dpwitness.explorer import compute, warm

    warm.warm_defaults()
    before = compute._witness_payload.cache_info().hits
    compute.witness_payload(1.0, 0.5)  # the page's default: already computed
    compute.witness_payload(sensitivity=1.0, epsilon=0.5, tamper=False)  # same key whatever the form
    assert compute._witness_payload.cache_info().hits == before + 2
    stop = threading.Event()
    stop.set()
    started = compute._mechanism.cache_info().misses
    warm.warm_slider(stop, delay=0.0)  # returns at once: nothing built
    assert compute._mechanism.cache_info().misses == started
    assert warm.SLIDER_EPSILONS[0] == warm.DEFAULTS["epsilon"] and len(set(warm.SLIDER_EPSILONS)) == 99


# --- the command ----------------------------------------------------------------------------------
def test_explore_command_defaults_to_loopback() -> None:
    result = CliRunner().invoke(cli_app, ["explore", "--help"])
    assert result.exit_code == 0
    text = re.sub(r"\s+", " ", result.output)
    assert "127.0.0.1" in text and "8000" in text and "--open" in text


def test_static_folder_is_inside_the_package() -> None:
    assert (STATIC / "index.html").is_file() and Path(STATIC).parent.name == "explorer"


# --- issue 22 ----------------------------------------------------------------------------------------
def test_page_embeds_the_servers_ranges(client: TestClient) -> None:
    """The page validates every control with the ranges the server enforces (one source: compute.limits)."""
    html = client.get("/").text
    match = re.search(r'<script type="application/json" id="dpw-limits">(.*?)</script>', html)
    assert match, "the limits are not embedded"
    limits = json.loads(match.group(1))
    assert limits["epsilon"] == [compute.MIN_EPSILON, compute.MAX_EPSILON]
    assert limits["sensitivity"] == [0.0, compute.MAX_SENSITIVITY]
    assert client.get("/api/live", params={"epsilon": limits["epsilon"][0]}).status_code == 200
    assert client.get("/api/live", params={"epsilon": limits["epsilon"][0] * 0.99}).status_code == 422
    assert client.get("/api/live", params={"sensitivity": limits["sensitivity"][1] * 1.01}).status_code == 422


def test_refusals_carry_a_code_and_the_parameter_so_the_page_can_word_them() -> None:
    with TestClient(create_app()) as fresh:
        for params, parameter in (
            ({"epsilon": 0}, "epsilon"),
            ({"epsilon": "x"}, "epsilon"),
            ({"sensitivity": 0, "d": 0, "tamper": True}, "tamper"),
        ):
            body = fresh.get("/api/live", params=params).json()
            assert body["code"] == "parameter" and body["parameter"] == parameter, body


def test_younger_than_20_is_answered_by_session_sql_and_post_processed_for_free(client: TestClient) -> None:
    body = get(client, "walkthrough/younger-than-20", epsilon=0.5, seed=1)
    assert body["sql"] == "SELECT COUNT(*) FROM people WHERE age < 20"
    table, sheet = body["cases"]
    assert table["true"] == 50 and table["rows"] == 1000 and sheet["true"] == 1
    from dpwitness import Session

    expected = Session(compute._people_table(50, 1000), epsilon=0.5, seed=1).sql(body["sql"], epsilon=0.5, name="people")
    assert table["noisy"][0] == expected.releases[0].value  # the same call, the same seeded release
    for case in (table, sheet):
        assert len(set(case["noisy"])) == len(case["noisy"])  # different possible releases
        assert case["clamped"] == [max(0.0, v) for v in case["noisy"]]
        assert case["rounded"] == [float(max(0, round(v))) for v in case["noisy"]]
    assert min(sheet["noisy"]) < 0 <= min(sheet["clamped"])


def test_replace_one_trap_breaks_the_claim() -> None:
    trap = compute.vector("replace-one", 0.5, 1)["trap"]
    assert trap["calibrated_sensitivity"] == 1 and trap["true_sensitivity"] == 2
    assert trap["worst_loss"] > 1.9 * 0.5 and trap["holds"] is False


def test_inverse_targets_give_the_epsilon_that_meets_them(client: TestClient) -> None:
    error = get(client, "beyond/inverse", target="error", value=5, sensitivity=2)
    assert error["epsilon"] == pytest.approx(2 * math.log(20) / 5, rel=1e-5)
    assert error["within"] is True and abs(error["achieved"] - 5) < 1e-3 * 5  # the sampler's real scale, put back
    posterior = get(client, "beyond/inverse", target="posterior", value=0.05)
    assert posterior["achieved"] == pytest.approx(0.05, rel=1e-5)
    advantage = get(client, "beyond/inverse", target="advantage", value=0.2)
    assert math.tanh(advantage["epsilon"] / 2) == pytest.approx(0.2, rel=1e-5)
    outside = get(client, "beyond/inverse", target="error", value=0.01, sensitivity=1)
    assert outside["within"] is False and outside["epsilon"] > 100 and outside["achieved"] is None  # said, not refused
    refused = client.get("/api/beyond/inverse", params={"target": "risk", "value": 0.1}).json()
    assert refused["code"] == "parameter" and refused["parameter"] == "target"


def test_zcdp_composition_compares_laplace_releases_at_one_fixed_stated_delta(client: TestClient) -> None:
    """Issue 29: zCDP was converted at δ = min(kδ, 0.5) from ρ = zcdp_rho(ε, δ), so at k = 50 the page said
    "zCDP ε = 2.097 at δ = 0.5". The releases are Laplace (ρ = ε²/2 each); kρ is stated at one δ."""
    body = get(client, "beyond/composition", epsilon=0.5, releases=50)
    assert body["delta"] == 1e-5  # one δ, shown on the page, whatever k
    assert body["rho"] == accounting.pure_dp_rho(0.5)
    for k, basic, zcdp in zip(body["k"], body["basic"], body["zcdp"], strict=True):
        assert basic == pytest.approx(k * 0.5)
        assert zcdp == accounting.zcdp_epsilon(k * accounting.pure_dp_rho(0.5), 1e-5)
    assert body["zcdp"][-1] == pytest.approx(22.0196, rel=1e-4)  # not 2.097: zCDP is not 12× cheaper
    assert body["best"] == [min(a, z) for a, z in zip(body["basic"], body["zcdp"], strict=True)]
    crossover = body["crossover"]
    assert crossover is not None and body["zcdp"][crossover - 1] < crossover * 0.5
    assert all(z >= a for a, z in zip(body["basic"][: crossover - 1], body["zcdp"][: crossover - 1], strict=True))
    assert get(client, "beyond/composition", epsilon=0.5, releases=10)["crossover"] is None  # kε is smaller up to 10
    assert all(a <= b for a, b in zip(body["zcdp"], body["zcdp"][1:], strict=False))


def test_kl_divergence_is_the_exact_closed_form_not_a_sample_mean(client: TestClient) -> None:
    """Issue 29: "its average, the KL divergence, is 0.09441" was a 2000-release estimate; the exact value is 0.1065."""
    body = get(client, "live", epsilon=0.5, sensitivity=1, d=1)
    b = body["real"]["scale"]
    assert body["kl_divergence"] == accounting.laplace_kl_divergence(1.0, b)
    assert body["kl_divergence"] == pytest.approx(0.5 + math.exp(-0.5) - 1, rel=1e-6)
    assert round(body["kl_divergence"], 4) == 0.1065
    assert get(client, "live", epsilon=0.5, sensitivity=0, d=0)["kl_divergence"] == 0  # no noise: nothing to tell apart


def test_step4_tails_follow_the_d_slider(client: TestClient) -> None:
    """Issue 29: at d = 0.7 the step said "log ratio 0.5" (its plots stayed at d = Δ); it is ε·d/Δ = 0.35."""
    body = get(client, "walkthrough/tails", epsilon=0.5, sensitivity=1, d=0.7)
    assert body["d"] == body["f1"] == 0.7 and body["f2"] == 0
    assert body["tail_log_ratio"] == pytest.approx(0.35)
    assert body["laplace_log_ratio"][-1] == pytest.approx(0.35, rel=1e-6)  # the plotted curve reaches it
    step = body["z"][1] - body["z"][0]
    assert body["z"][int(np.argmax(body["laplace_log_density_1"]))] == pytest.approx(0.7, abs=step)  # the tent peaks at z = d
    assert get(client, "walkthrough/tails", epsilon=0.5, sensitivity=1)["tail_log_ratio"] == pytest.approx(0.5)  # d = Δ


@pytest.mark.parametrize("value", [0.01, 0.5, 1.0, 7.3, 100.0])
def test_tamper_at_epsilon_equal_delta_is_recognised_as_the_claimed_scale(client: TestClient, value: float) -> None:
    """Issue 29: the realised scale 1.0000000189 failed a 1e-9 tolerance, so the page said "scale 1 instead of 1"."""
    body = get(client, "witness", epsilon=value, sensitivity=value, tamper=True)
    assert body["realised_scale"] != body["claimed_scale"]  # the grid's rounding is there
    assert body["scale_as_claimed"] is True
    assert abs(body["realised_scale"] - body["claimed_scale"]) <= compute.SCALE_TOLERANCE * body["claimed_scale"]
    assert get(client, "witness", epsilon=0.3, sensitivity=1, tamper=True)["scale_as_claimed"] is False
    assert get(client, "witness", epsilon=0.3, sensitivity=1)["scale_as_claimed"] is True


def _strings(lang: str) -> dict[str, str]:
    table: dict[str, str] = json.loads((STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    return table


@pytest.mark.parametrize(("lang", "patient5"), [("en", "Patient 5 is only in Q5"), ("zh", "病人 5 只出现在 Q5 中")])
def test_differencing_text_charges_patient_5_epsilon_the_red_teams_bound(client: TestClient, lang: str, patient5: str) -> None:
    """Issue 29: "Patient 5 is in both queries, so the pair costs them 2ε", while Q4 = x₁ + … + x₄."""
    text = _strings(lang)["step10.result"]
    sentence = text[text.index(patient5) :]
    assert sentence.index("{eps}") < sentence.index("{total}")  # patient 5: ε; patients 1–4: 2ε = {total}
    assert "2ε" not in sentence[: sentence.index("{eps}")]
    body = get(client, "redteam/differencing", epsilon=0.5, seed=1)
    assert body["attack"]["target_loss"] == pytest.approx(0.5)  # the red team's bound for patient 5 is ε


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_notation_d_and_d_prime_everywhere(lang: str) -> None:
    """Issue 29: the plot said f(D)/f(D′), the text D₁/D₂, the live panel D/D′."""
    for key, text in _strings(lang).items():
        assert not re.search(r"D₁|D₂|(?<![A-Za-z\\])D_[12]", text), (key, text)
    for path in (STATIC / "js").glob("*.js"):
        assert "D₁" not in path.read_text(encoding="utf-8") and "D₂" not in path.read_text(encoding="utf-8"), path


def test_add_remove_arrows_are_not_called_swaps_and_not_10x_is_tied_to_a_figure() -> None:
    en, zh = _strings("en"), _strings("zh")
    assert "swap a row" not in en["step2.what"] and "Under replace-one" in en["step2.what"]
    assert "not 10×" not in en["step9.trap1"] and "{n}" in en["step9.trap1"] and "10 倍" not in zh["step9.trap1"]
    assert all("移除" not in text for text in zh.values())  # one verb, 删除, with 添加
    assert zh["common.what_colon"] == "说明：" and "各个角落" not in zh["step7.what"]
    assert not [key for key, text in zh.items() if "声称成立" in text or "声称被违反" in text]


def test_every_red_team_and_gaussian_call_shown_reproduces_its_numbers(client: TestClient) -> None:
    """The copyable calls are the server's own, with the parameters it used: run, they give the same numbers."""
    fp = get(client, "redteam/floating-point", epsilon=1.0, samples=500, seed=3)
    namespace: dict[str, Any] = {}
    exec(fp["call"].replace("floating_point_attack(", "result = floating_point_attack(", 1), namespace)  # the page's call
    assert namespace["result"].to_dict()["naive"]["identification_rate"] == fp["naive_rate"]
    diff = get(client, "redteam/differencing", epsilon=0.5, seed=2)
    namespace = {}
    exec(diff["call"].replace("differencing_attack(", "result = differencing_attack(", 1), namespace)
    assert float(namespace["result"].success_probability) == diff["attack"]["success_probability"]
    sim = get(client, "redteam/membership", epsilon=0.5, simulate=True, trials=200, seed=4)["simulation"]
    namespace = {}
    exec(sim["call"].replace("membership_attack(", "result = membership_attack(", 1), namespace)
    assert float(namespace["result"].auc) == sim["auc"]


# --- the later steps: one ε as accuracy and risk, randomized response, group privacy, the clamp ---------
def test_linked_view_computes_each_panel_from_the_mechanism_and_accounting(client: TestClient) -> None:
    body = get(client, "walkthrough/linked", epsilon=0.5, sensitivity=1, total=2)
    scale = Laplace(sensitivity=1, epsilon=0.5).scale
    assert (
        body["error"]["half_width"]
        == pytest.approx(accounting.laplace_half_width(scale, 0.05))
        == pytest.approx(2 * math.log(20))
    )
    assert body["posterior"]["bound"] == pytest.approx(math.exp(0.5) / (1 + math.exp(0.5)))
    assert body["roc"]["advantage_cap"] == pytest.approx(math.tanh(0.25))
    fpr, tpr = np.array(body["roc"]["fpr"]), np.array(body["roc"]["tpr"])
    assert np.all(tpr <= np.minimum(math.exp(0.5) * fpr, 1 - math.exp(-0.5) * (1 - fpr)) + 1e-9)  # under the ε-DP cap
    assert body["budget"] == pytest.approx({**body["budget"], "spent": 0.5, "left": 1.5, "releases": 4})
    doubled = get(client, "walkthrough/linked", epsilon=1, sensitivity=1, total=2)
    assert doubled["error"]["half_width"] == pytest.approx(body["error"]["half_width"] / 2)
    assert doubled["posterior"]["bound"] > body["posterior"]["bound"]
    over = get(client, "walkthrough/linked", epsilon=3, sensitivity=1, total=2)
    assert over["budget"]["over"] and over["budget"]["left"] == 0
    assert client.get("/api/walkthrough/linked", params={"total": 0}).status_code == 422


def test_randomized_response_epsilon_and_local_against_central_error(client: TestClient) -> None:
    body = get(client, "walkthrough/randomized-response", epsilon=1, people=1000)
    p = body["truth"]
    assert p == pytest.approx((math.e - 1) / (math.e + 1))  # tanh(ε/2), not e^ε/(1 + e^ε)
    assert math.log((1 + p) / (1 - p)) == pytest.approx(1.0) and body["ratio"] == pytest.approx(math.e)
    assert body["epsilon_of_truth"] <= 1.0 + 1e-12
    assert body["local_std"] == pytest.approx(math.sqrt(1000 * (1 - p * p)) / (2 * p))
    assert body["central_half_width"] == pytest.approx(math.log(20))
    assert body["local_half_width"] > 10 * body["central_half_width"]
    with pytest.raises(ValueError):
        accounting.randomized_response_epsilon(1.0)
    assert accounting.randomized_response_epsilon(0.5) == pytest.approx(math.log(3))  # (1 + ½)/(1 − ½)


def test_randomized_response_count_estimate_is_unbiased_with_the_stated_std() -> None:
    rng = np.random.default_rng(7)
    n, epsilon, truth_share = 400, 1.0, 0.3
    p = accounting.randomized_response_truth(epsilon)
    truths = rng.random((4000, n)) < truth_share
    honest = rng.random((4000, n)) < p
    coin = rng.random((4000, n)) < 0.5
    yes = np.where(honest, truths, coin).sum(axis=1)
    error = (yes - n * (1 - p) / 2) / p - truths.sum(axis=1)
    std = accounting.randomized_response_count_std(n, epsilon)
    assert abs(np.mean(error)) < 4.5 * std / math.sqrt(4000)  # unbiased
    assert np.std(error) == pytest.approx(std, rel=0.05)


def test_group_of_k_spends_k_epsilon(client: TestClient) -> None:
    body = get(client, "walkthrough/group", epsilon=0.5, size=4)
    assert body["loss"] == pytest.approx(Laplace(sensitivity=1, epsilon=0.5).privacy_loss(4)) == pytest.approx(2.0)
    assert body["losses"] == pytest.approx([0.5 * k for k in body["sizes"]])
    assert body["factor"] == pytest.approx(math.exp(2.0))
    assert client.get("/api/walkthrough/group", params={"size": 0}).status_code == 422


def test_clamp_trade_off_bias_noise_and_optimum(client: TestClient) -> None:
    from dpwitness.explorer import lessons

    body = get(client, "walkthrough/clamp", epsilon=0.5, bound=50)
    incomes = np.array(lessons.clamp_incomes())
    bias = float(np.mean(np.minimum(incomes, 50)) - np.mean(incomes))
    scale = Laplace(sensitivity=50 / len(incomes), epsilon=0.5).scale
    assert body["bias"] == pytest.approx(bias) and body["scale"] == pytest.approx(scale)
    assert body["rmse"] == pytest.approx(math.sqrt(bias**2 + 2 * scale**2))
    assert body["best_rmse"] == pytest.approx(min(body["rmse_curve"])) and body["best_rmse"] <= body["rmse"]
    assert body["best_bound"] < body["largest"]  # the point of the step: clamping below the largest value pays
    assert get(client, "walkthrough/clamp", epsilon=0.1, bound=50)["best_bound"] < body["best_bound"]  # less ε, lower C
    assert client.get("/api/walkthrough/clamp", params={"bound": 0.5}).status_code == 422


def test_new_steps_have_every_string_in_both_languages() -> None:
    tables = {lang: json.loads((STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8")) for lang in ("en", "zh")}
    for prefix in ("linked.", "rr.", "group.", "clamp.", "predict.", "parallel.", "unit.", "noisymax.", "deploy.", "param."):
        keys = {k for k in tables["en"] if k.startswith(prefix)}
        assert keys and keys == {k for k in tables["zh"] if k.startswith(prefix)}, prefix


def test_linked_view_answers_its_what_if_epsilon_doubles_question(client: TestClient) -> None:
    body = get(client, "walkthrough/linked", epsilon=0.5, sensitivity=1, total=2)
    assert body["doubled"]["epsilon"] == 1.0
    assert body["doubled"]["half_width"] == pytest.approx(body["error"]["half_width"] / 2)
    assert body["doubled"]["posterior"] == pytest.approx(math.e / (1 + math.e))


# --- issue 29's last steps: parallel composition, the privacy unit, the exponential mechanism, deployments ---
def test_parallel_composition_costs_epsilon_and_the_same_people_k_epsilon(client: TestClient) -> None:
    body = get(client, "walkthrough/parallel", epsilon=0.5, groups=4)
    one = Laplace(sensitivity=1, epsilon=0.5)
    assert body["histogram_sensitivity"] == 1  # one person, one group: L1 Δ = 1 whatever k
    assert body["parallel_loss"] == pytest.approx(one.privacy_loss(1)) == pytest.approx(0.5)
    assert body["sequential_loss"] == pytest.approx(4 * one.privacy_loss(1)) == pytest.approx(2.0)
    assert body["sequential_curve"] == pytest.approx([0.5 * k for k in body["sizes"]])
    assert body["parallel_curve"] == pytest.approx([0.5] * len(body["sizes"]))
    assert body["split_half_width"] == pytest.approx(4 * body["half_width"]) == pytest.approx(4 * 2 * math.log(20))
    assert get(client, "walkthrough/parallel", epsilon=0.5, groups=20)["parallel_loss"] == pytest.approx(0.5)
    assert client.get("/api/walkthrough/parallel", params={"groups": 0}).status_code == 422
    assert client.get("/api/walkthrough/parallel", params={"groups": 21}).status_code == 422


def test_contribution_bound_sets_delta_and_trades_noise_for_dropped_rows(client: TestClient) -> None:
    from dpwitness.explorer import lessons

    rows = np.array(lessons.unit_rows())
    assert len(rows) == 1000 and rows.min() == 1 and rows.mean() == pytest.approx(5, rel=0.02)  # geometric, mean 1/p
    body = get(client, "walkthrough/contribution", epsilon=0.5, cap=10)
    assert body["sensitivity"] == 10 and body["sum_sensitivity"] == 10 * 50  # Δ = c, and c·max(|L|, |U|)
    assert body["bias"] == -float(np.sum(np.maximum(rows - 10, 0))) and body["dropped_people"] == int(np.sum(rows > 10))
    scale = Laplace(sensitivity=10, epsilon=0.5).scale
    assert body["noise_std"] == pytest.approx(math.sqrt(2) * scale) == pytest.approx(math.sqrt(2) * 20)
    assert body["rmse"] == pytest.approx(math.sqrt(body["bias"] ** 2 + 2 * scale**2))
    assert body["best_rmse"] == pytest.approx(min(body["rmse_curve"])) and body["best_rmse"] <= body["rmse"]
    assert 1 < body["best_cap"] < body["largest"]  # the point of the step: neither extreme
    assert body["noise_curve"] == sorted(body["noise_curve"]) and body["bias_curve"] == sorted(body["bias_curve"], reverse=True)
    assert get(client, "walkthrough/contribution", epsilon=0.05, cap=10)["best_cap"] < body["best_cap"]  # less ε, lower c
    assert client.get("/api/walkthrough/contribution", params={"cap": 41}).status_code == 422


def test_exponential_mechanism_probabilities_follow_the_formula(client: TestClient) -> None:
    body = get(client, "walkthrough/noisy-max", epsilon=0.5)
    counts = np.array(body["counts"], dtype=float)
    assert body["sensitivity"] == 1
    weights = np.exp(0.5 * counts / 2)
    assert body["probabilities"] == pytest.approx((weights / weights.sum()).tolist(), rel=1e-12)
    assert sum(body["probabilities"]) == pytest.approx(1.0)
    # the ratio of two candidates is exp(ε·(u_i − u_j)/(2Δ)), whatever the others
    assert body["probabilities"][0] / body["probabilities"][1] == pytest.approx(math.exp(0.5 * 3 / 2))
    assert body["gumbel_scale"] == pytest.approx(4.0)
    assert body["top_curve"] == sorted(body["top_curve"])  # more ε, the top count chosen more often
    assert accounting.exponential_mechanism_probabilities([1e6, 0.0], 100.0, 1.0) == pytest.approx([1.0, 0.0])  # no overflow
    with pytest.raises(ValueError):
        accounting.exponential_mechanism_probabilities([], 1.0, 1.0)


def test_report_noisy_max_with_gumbel_noise_picks_with_the_exponential_mechanisms_probabilities() -> None:
    """The page's statement: adding Gumbel(2Δ/ε) to each score and reporting the largest is the exponential mechanism."""
    from dpwitness.explorer import lessons

    counts, epsilon, draws = np.array(lessons.CHOICE_COUNTS, dtype=float), 0.3, 40_000
    rng = np.random.default_rng(29)
    picks = np.argmax(counts + rng.gumbel(scale=2 / epsilon, size=(draws, len(counts))), axis=1)
    expected = np.array(accounting.exponential_mechanism_probabilities(counts.tolist(), epsilon, 1.0))
    observed = np.bincount(picks, minlength=len(counts)) / draws
    assert np.all(np.abs(observed - expected) < 4.5 * np.sqrt(expected * (1 - expected) / draws) + 1e-9)


def test_deployments_cite_a_primary_source_and_convert_their_epsilon(client: TestClient) -> None:
    body = get(client, "walkthrough/deployments", epsilon=1)
    rows = {row["key"]: row for row in body["deployments"]}
    assert set(rows) == {"linkedin", "google_covid_trends", "google_vaccination"}  # only figures checked at their source
    assert (rows["linkedin"]["epsilon"], rows["linkedin"]["period"]) == (34.9, "month")
    assert (rows["google_covid_trends"]["epsilon"], rows["google_covid_trends"]["delta"]) == (1.68, 0)
    assert (rows["google_vaccination"]["epsilon"], rows["google_vaccination"]["delta"]) == (2.19, 1e-5)
    for row in rows.values():
        assert row["url"].startswith("https://arxiv.org/abs/")
        assert row["posterior"] == pytest.approx(math.exp(row["epsilon"]) / (1 + math.exp(row["epsilon"])))
    assert body["posterior"] == pytest.approx(math.e / (1 + math.e))
