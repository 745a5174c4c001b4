"""End-to-end: the real explorer server (``dpwitness explore``) driven by headless Chromium.

Needs a Chromium binary: ``$DPWITNESS_CHROMIUM`` or ``chromium`` on PATH (``scripts/install-browser``
installs Debian's). Screenshots of every step, at 1366 and 375 px, in English and Chinese, go to
``test-output/explorer/`` (gitignored); timings are printed (run with ``-s``) and written to
``test-output/explorer/timings.json``.

Each defect of issues 13, 22 and 32 has a test here that fails on the page as it was before the fix
(issue 32: answers held back by Playwright routes and released late, ``test_late_*``). Speed is
not asserted where it depends on the machine's load: the page's work per frame while dragging is
``bench/bench_explorer_frames.py``'s figure (docs/benchmarks.md).
axe-core (``tests/explorer/vendor/axe-core/axe.min.js``, 4.14.1 from the npm registry, MPL-2.0) is injected
into the page by Playwright for the accessibility checks.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from dpwitness.privacy import accounting

playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "explorer"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Targets from the issues (a slower CI machine may loosen them with these variables).
STEPS = 22
#: What each step must show, whatever the language: the issue's missing ideas, one selector each.
STEP_CONTENT = {
    3: ["#set-form", "#step-body path.set-area"],  # the set form of the definition, S shaded
    4: ["#step-body path[data-series='p(z | D)']", "#step-body path[data-series='p(z | D′)']"],  # two densities overlaid
    5: ["#density-formula", "#step-body path[data-hist]"],  # the formula; exact releases, their mean (unbiased)
    7: ["#edge-pictures svg:nth-of-type(1)", "#edge-pictures figure:nth-child(5) svg"],  # a picture of the edge cases
    8: ["#step-body .formula", "#step-body path[data-hist]"],  # log-ratios add; k releases, kε
    9: ["#step-body path.set-area", "#step-body svg.short"],  # the worked example's 95 % band; the trap
    10: ["#step-body table", "#step-body path[data-series]"],  # D and D′, overlapping noisy Q5 − Q4
    11: ["#step-body table", "#step-body circle.dot"],  # the vector: one draw per coordinate
    12: ["#step-body svg.summary rect.box"],  # the summary figure
    13: [
        "#linked-error svg",
        "#linked-roc svg",
        "#linked-posterior svg",
        "#linked-budget svg",
        "#predict-linked",
    ],  # one ε, four views
    14: ["#step-body path[data-series]", "#predict-rr"],  # randomized response: local against central
    15: ["#step-body path[data-hist]", "#predict-group"],  # group privacy
    16: ["#step-body path[data-series]", "#predict-clamp"],  # the clamp trade-off
    17: ["#step-body path[data-series]", "#predict-parallel"],  # parallel against sequential composition
    18: ["#step-body path[data-series]", "#predict-unit"],  # the privacy unit and contribution bounding
    19: ["#step-body rect.bar0", "#predict-noisymax"],  # the exponential mechanism: each candidate's chance
    20: ["#deploy-table a[href^='https://']", "#step-body rect.bar-you", "#predict-deploy"],  # real deployments' ε
    21: ["#step-body table.symbols"],  # the symbols
    22: ["#step-body details:nth-of-type(7)"],  # recall questions
}
WIDTHS = (1366, 375)
LANGUAGES = ("en", "zh")
TIMINGS: dict[str, Any] = {}

# --- axe-core: 0 serious or critical violations on every step, both languages, both widths -----------------
AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
AXE_RUN = """async (selector) => {
  const result = await axe.run(selector ? document.querySelector(selector) : document, {
    resultTypes: ['violations'],
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']},
  });
  return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => [v.id, v.impact, v.nodes.length, v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')]);
}"""


def _chromium() -> str | None:
    return os.environ.get("DPWITNESS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the explorer exited early: {process.stderr.read().decode() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise TimeoutError("the explorer did not start listening")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium: set DPWITNESS_CHROMIUM or install it (bash scripts/install-browser)")
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@contextmanager
def _explorer() -> Iterator[dict[str, Any]]:
    """A cold ``dpwitness explore`` in a subprocess on a free loopback port."""
    port = _free_port()
    command = [sys.executable, "-c", "from dpwitness.cli import main; main()", "explore", "--port", str(port)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_listening(port, process)
        yield {"url": f"http://127.0.0.1:{port}/", "started": started, "listening_s": time.perf_counter() - started}
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def server() -> Iterator[dict[str, Any]]:
    try:
        with _explorer() as running:
            TIMINGS["server_start_s"] = running["listening_s"]
            yield running
    finally:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        (OUTPUT / "timings.json").write_text(json.dumps(TIMINGS, indent=2) + "\n")
        print("\nexplorer timings:", json.dumps(TIMINGS, indent=2))


def _open(
    browser: Any, url: str, width: int, *, height: int = 900, query: str = "", withheld: re.Pattern[str] | None = None
) -> tuple[Any, list[str]]:
    """A fresh, empty browser profile; navigate and wait until every part of the page is drawn.
    Requests matching ``withheld`` are never answered (a route that holds them for good)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    if withheld is not None:
        page.route(withheld, lambda route: None)
    problems: list[str] = []
    page.on(
        "console", lambda message: problems.append(f"console.{message.type}: {message.text}") if message.type == "error" else None
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    started = time.perf_counter()
    page.goto(url + query)
    page.wait_for_function("window.dpwExplorer && window.dpwExplorer.ready", timeout=20_000)
    TIMINGS.setdefault("page_loads_s", []).append(round(time.perf_counter() - started, 3))
    return page, problems


def _shot(page: Any, name: str, selector: str | None = None, *, full_page: bool = True, unstuck: bool = False) -> None:
    """The whole page (or what the viewport shows), or just the element ``selector``, to test-output/explorer/NAME.png.
    ``unstuck``: the sticky bar left in its place for the picture instead of covering the element (the
    pictures in docs/img/explorer), then sticky again."""
    path = OUTPUT / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    if selector is None:
        page.screenshot(path=str(path), full_page=full_page)
    elif unstuck:
        page.evaluate("document.querySelectorAll('.sticky-bar').forEach(b => { b.style.position = 'static'; })")
        page.locator(selector).screenshot(path=str(path))
        page.evaluate("document.querySelectorAll('.sticky-bar').forEach(b => { b.style.position = ''; })")
    else:
        page.locator(selector).screenshot(path=str(path))


def _version(page: Any) -> int:
    version: int = page.evaluate("window.dpwExplorer.liveVersion")
    return version


def _drawn(page: Any) -> None:
    """Until the animation frame the page has asked for is drawn (a callback asked for after it runs after it)."""
    page.evaluate("() => new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(drawn)))")


def _set_number(page: Any, selector: str, value: str) -> None:
    """Type a value into a number box and wait for the server's answer to be drawn."""
    before = _version(page)
    page.fill(selector, value)
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}", timeout=15_000)
    _drawn(page)


def _press_and_wait(page: Any, key: str) -> None:
    before = _version(page)
    page.keyboard.press(key)
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}", timeout=15_000)
    _drawn(page)


def _text(page: Any, selector: str) -> str:
    text: str = page.inner_text(selector)
    return text


def _go_to_step(page: Any, step: int) -> None:
    page.click(f"#step-button-{step}")
    page.wait_for_function(f"document.getElementById('step').dataset.step === '{step}'", timeout=15_000)


# --- load, paint, every step in both languages and at both widths -----------------------------------
def test_first_paint_and_load(browser: Any, server: dict[str, Any]) -> None:
    """The page loads, paints and answers from the server, cold and warm. The times are recorded
    (timings.json) but not asserted: how fast a page paints depends on the machine's load, so the
    300 ms first-paint target is measured in bench/bench_explorer_frames.py."""
    page, problems = _open(browser, server["url"], 1366)
    TIMINGS["first_page_load_s"] = TIMINGS["page_loads_s"][0]
    TIMINGS["cold_start_to_page_ready_s"] = time.perf_counter() - server["started"]
    assert problems == []
    assert page.get_attribute("#badge", "data-ok") == "true"
    assert _text(page, "#out-scale") == "2"  # Δ/ε = 1/0.5, computed by the server
    page.context.close()
    paints = []
    for _ in range(3):  # warm server: the page, its modules and the first answers are cached
        again, problems = _open(browser, server["url"], 1366)
        paint = again.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
        paints.append(paint)
        assert problems == []
        again.context.close()
    TIMINGS["first_contentful_paint_ms"] = paints
    assert all(p is not None and p > 0 for p in paints)  # every load painted


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_step_in_each_language_and_width_renders_marked_without_errors(
    browser: Any, server: dict[str, Any], lang: str
) -> None:
    """Screenshots of every step; the current step is marked; no console error; nothing overflows;
    every drawn plot has a text alternative; axe-core finds no serious or critical violation."""
    violations: list[Any] = []
    for width in WIDTHS:
        page, problems = _open(browser, server["url"], width, query=f"?lang={lang}")
        page.add_script_tag(path=str(AXE))
        assert page.is_hidden("#fatal")
        title = _text(page, "h1")
        assert title == ("dpwitness explorer" if lang == "en" else "dpwitness 探索器")
        for step in range(1, STEPS + 1):
            _go_to_step(page, step)
            body = _text(page, "#step-body")
            assert "Error" not in body and "错误" not in body, (lang, width, step, body[:200])
            current = page.locator(f"#step-button-{step}")
            assert current.get_attribute("aria-current") == "step"
            other = page.locator(f"#step-button-{step % STEPS + 1}")
            assert other.get_attribute("aria-current") is None
            marked = current.evaluate("b => getComputedStyle(b).backgroundColor")
            assert marked != other.evaluate("b => getComputedStyle(b).backgroundColor")
            for selector in STEP_CONTENT.get(step, []):
                assert page.locator(selector).count() >= 1, (lang, width, step, selector)
            widths = page.evaluate("[document.getElementById('step').scrollWidth, document.getElementById('step').clientWidth]")
            assert widths[0] <= widths[1], (lang, width, step, widths)  # e.g. step 7's table at 375 px
            _shot(page, f"{lang}-{width}/step-{step:02d}", "#step")
            violations += [[width, step, *v] for v in page.evaluate(AXE_RUN, "#step")]
        violations += [[width, "page", *v] for v in page.evaluate(AXE_RUN, None)]
        _shot(page, f"{lang}-{width}/page")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        unlabelled = page.evaluate(
            "[...document.querySelectorAll('svg[role=img]')].filter(s => s.getClientRects().length && s.childElementCount"
            " && !(s.getAttribute('aria-label') || '').trim()).map(s => s.id || s.outerHTML.slice(0, 60))"
        )
        assert unlabelled == []
        assert problems == [], (lang, width, problems)
        page.context.close()
    assert violations == [], violations


def test_language_switch_and_unknown_language_fallback(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366, query="?lang=xx")
    assert page.is_hidden("#fatal") and page.is_visible("#lang-note")
    assert _text(page, "h1") == "dpwitness explorer"
    assert page.get_attribute("#badge", "data-ok") == "true"
    options = page.eval_on_selector_all("#lang option", "os => os.map(o => [o.value, o.textContent])")
    assert ["zh", "中文"] in options and ["en", "English"] in options
    with page.expect_navigation():
        page.select_option("#lang", "zh")
    page.wait_for_function("window.dpwExplorer && window.dpwExplorer.ready", timeout=20_000)
    assert "lang=zh" in page.url and _text(page, "h1") == "dpwitness 探索器"
    assert "满足所声称的" in _text(page, "#badge")  # 声称 as a verb (issue 29)
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    # the failed /api/strings?lang=xx is the expected 422 that triggers the fallback
    assert all("422" in problem for problem in problems), problems
    page.context.close()


# --- dragging: every step redrawn in the page, for the value it shows ----------------------------------
#: Mouse moves of one drag of the ε slider, from its left end to its right end.
DRAG_MOVES = 80


@pytest.mark.parametrize("width", WIDTHS)
def test_drag_redraws_the_plot_for_every_value_it_shows(browser: Any, server: dict[str, Any], width: int) -> None:
    """A drag of the ε slider, with every server answer held back until it ends: each value the slider
    takes is drawn by the page itself, one picture per input event, for that value; after the drag,
    the server's numbers arrive for the final value. How long a frame takes is a benchmark's figure
    (bench/bench_explorer_frames.py), not this test's."""
    # The exact Gaussian never answers here: its answer would draw a frame of its own, at any time.
    page, problems = _open(browser, server["url"], width, withheld=re.compile(r"/api/gaussian\?"))
    held: list[Any] = []
    page.route(re.compile(r"/api/"), lambda route: held.append(route))  # no answer reaches the page during the drag
    page.locator("#plot-density").scroll_into_view_if_needed()
    page.evaluate(
        "window.inputsSeen = 0; document.getElementById('epsilon').addEventListener('input', () => { window.inputsSeen += 1; })"
    )
    box = page.locator("#epsilon").bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.evaluate("new Promise((done) => requestAnimationFrame(() => done(0)))")  # the load's last frame is drawn
    frames, version = page.evaluate("window.dpwExplorer.frames"), _version(page)
    curves: list[str | None] = []
    shown: list[str] = []

    def drawn_for_the_value_shown() -> None:
        value = page.input_value("#epsilon-n")
        page.wait_for_function(
            "([eps]) => document.getElementById('plot-density').dataset.epsilon === eps", arg=[value], timeout=15_000
        )
        shown.append(value)
        curves.append(page.get_attribute("#plot-density path[data-series='p(z | D)']", "d"))

    page.mouse.move(box["x"] + 4, y)
    page.mouse.down()  # on the track's left end: ε jumps to 0.01
    drawn_for_the_value_shown()
    for i in range(1, DRAG_MOVES + 1):
        page.mouse.move(box["x"] + 4 + (box["width"] - 8) * i / DRAG_MOVES, y)
        drawn_for_the_value_shown()
    inputs = page.evaluate("window.inputsSeen")
    painted = page.evaluate("window.dpwExplorer.frames") - frames
    assert shown[0] == "0.01" and shown[-1] == "100", shown
    assert painted == inputs, (painted, inputs)  # one picture per value, none skipped, none for nothing
    assert inputs == len(set(shown)) and inputs > DRAG_MOVES // 2, (inputs, shown)
    for i in range(1, len(shown)):  # each new value, a new curve; the same value, the same curve
        assert (curves[i] != curves[i - 1]) == (shown[i] != shown[i - 1]), (i, shown[i - 1], shown[i])
    assert _version(page) == version  # nothing came from the server: every picture was the page's own
    page.mouse.up()
    page.unroute(re.compile(r"/api/"))
    for route in held:
        with suppress(playwright_api.Error):
            route.continue_()
    # after the drag, the server's exact numbers for the final setting: b = Δ/ε = 1/100
    page.wait_for_function("document.getElementById('out-scale').textContent === '0.01'", timeout=15_000)
    assert page.get_attribute("#plot-density", "data-epsilon") == "100"
    assert "scale 0.01," in (page.get_attribute("#plot-density", "aria-label") or "")
    assert problems == []
    page.context.close()


def test_server_round_trip_for_exact_numbers(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    page.focus("#epsilon")
    page.evaluate("window.dpwExplorer.redraws = []")
    for key in ["ArrowRight"] * 8 + ["ArrowLeft"] * 8:
        _press_and_wait(page, key)
    redraws: list[float] = page.evaluate("window.dpwExplorer.redraws")
    TIMINGS["server_redraw_ms"] = {"median": round(statistics.median(redraws), 1), "max": round(max(redraws), 1)}
    assert len(redraws) == 16  # every key press brought the server's exact numbers (the time is a bench figure)
    assert problems == []
    page.context.close()


# --- ε made visible -------------------------------------------------------------------------------
def _peak_height(page: Any) -> float:
    height: float = page.evaluate("document.querySelector(\"#plot-density path[data-series='p(z | D)']\").getBBox().height")
    return height


def _x_ticks(page: Any, selector: str) -> list[str]:
    ticks: list[str] = page.eval_on_selector_all(f"{selector} text.tick.x", "ts => ts.map(t => t.textContent)")
    return ticks


def test_fixed_axes_ghost_and_histogram_make_epsilon_visible(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _set_number(page, "#epsilon-n", "0.1")
    ticks_small, peak_small = _x_ticks(page, "#plot-density"), _peak_height(page)
    page.wait_for_timeout(450)  # a pause: the next change starts a new gesture, whose ghost is this curve
    _set_number(page, "#epsilon-n", "2")
    ticks_large, peak_large = _x_ticks(page, "#plot-density"), _peak_height(page)
    assert ticks_small == ticks_large  # fixed axes: not rescaled to the curve
    assert peak_large > 5 * peak_small  # so a larger ε shows as a visibly narrower, taller curve
    assert page.locator("#plot-density path.ghost").count() == 1
    assert page.get_attribute("#plot-density path[data-hist]", "d")
    assert "2000 exact releases" in (page.text_content("#plot-density .legend") or "")
    _shot(page, "live-epsilon-2-ghost", "#live")
    assert problems == []
    page.context.close()


def test_seeded_illustration_moves_with_every_small_epsilon_step(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    page.focus("#epsilon")
    shown = [_text(page, "#out-illustration")]
    releases = [_text(page, "#out-release")]
    for _ in range(6):
        _press_and_wait(page, "ArrowRight")  # ε + 0.05 each
        shown.append(_text(page, "#out-illustration"))
        releases.append(_text(page, "#out-release"))
    assert len(set(shown)) == len(shown), shown  # the fixed draw u scaled by b = Δ/ε moves every step
    assert "not a release" in shown[0]
    assert all(re.fullmatch(r"-?[\d.]+(e[-+]\d+)?", r) for r in releases)  # the exact release is still shown
    assert problems == []
    page.context.close()


def test_gaussian_beside_laplace_with_delta_area_and_exact_witness(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    assert page.get_attribute("#plot-gauss path[data-area=delta]", "d")  # δ shaded where p > e^ε·q
    assert "δ = 0.01" in (page.text_content("#plot-gauss .legend") or "")
    assert page.get_attribute("#plot-gauss-delta path[data-area=delta-zoom]", "d")  # the same area, magnified
    page.locator("#plot-gauss").scroll_into_view_if_needed()
    page.wait_for_function(
        "['ok', 'bad', 'error'].includes(document.getElementById('gauss-witness').dataset.state)", timeout=90_000
    )
    assert page.get_attribute("#gauss-witness", "data-state") == "ok", _text(page, "#gauss-witness")
    assert "dpwitness.Gaussian" in _text(page, "#gauss-witness") and "✔" in _text(page, "#gauss-witness")
    assert problems == []
    page.context.close()


# --- tamper, d and Δ ------------------------------------------------------------------------------------
def test_tamper_shows_claimed_and_real_calibration_side_by_side(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _set_number(page, "#sensitivity-n", "2")
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "false"
    assert _text(page, "#out-scale") == "4" and _text(page, "#out-scale-real") == "0.25"
    assert "± 11.98" in _text(page, "#out-interval") and "± 0.7489" in _text(page, "#out-interval-real")
    assert _text(page, "#out-loss-claimed") == "0.5" and _text(page, "#out-loss") == "8"
    assert "Δ²/ε = 8" in _text(page, "#tamper-detail")
    # the plot draws the real, narrow curve: its log ratio leaves ±ε
    assert float(page.get_attribute("#plot-ratio", "data-max-abs") or 0) > 0.5 * 10
    _shot(page, "live-tampered", "#live")
    before = _version(page)
    page.uncheck("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "true"
    assert _text(page, "#out-scale") == _text(page, "#out-scale-real") == "4"
    assert problems == []
    page.context.close()


def test_d_follows_delta_so_the_tampered_log_ratio_leaves_the_band(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _set_number(page, "#sensitivity-n", "0.1")
    assert _text(page, "#shift-out").startswith("d = 0.1")
    _set_number(page, "#sensitivity-n", "2")
    assert _text(page, "#shift-out").startswith("d = 2")
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "false"
    assert float(page.get_attribute("#plot-ratio", "data-max-abs") or 0) > 0.5  # outside ±ε, as the badge says
    assert "outside" in (page.get_attribute("#plot-ratio", "aria-label") or "")
    assert problems == []
    page.context.close()


_REDRAWN_AS_FRESH = """async () => {
  const plot = await import("/static/js/plot.js");
  const svgOf = (id) => {
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.id = id;
    svg.style.width = "600px"; svg.style.height = "260px";
    document.body.append(svg);
    return svg;
  };
  const x = Array.from({ length: 50 }, (_, i) => i / 5);
  const wide = {
    title: "two curves", xLabel: "z", yLabel: "density", xMin: 0, xMax: 10, yMin: 0, yMax: 1, clip: true,
    series: [
      { x, y: x.map((v) => Math.exp(-v)), cls: "s0", label: "p(z | D)" },
      { x, y: x.map((v) => 0.5 * Math.exp(-v / 2)), cls: "s1", label: "p(z | D′)" },
    ],
    bins: { edges: [0, 2, 4, 6], counts: [0.5, 0.2, 0.1], label: "2000 releases" },
    vlines: [{ x: 3, cls: "marker release", id: "release", label: "release at 3.000" }],
    hlines: [{ y: 0.8, label: "+ε", id: "eps" }],
  };
  const narrow = {
    title: "one curve", xLabel: "ε", xMin: -1, xMax: 1000, yMin: -5, yMax: 5,
    series: [{ x, y: x.map((v) => v - 5), cls: "s4", label: "ratio at most e^ε" }], points: [{ x: 2, y: 1 }],
  };
  const kept = svgOf("kept"), fresh = svgOf("fresh");
  // what a node is: its tag, its attributes in any order, its children (a plot's own id aside)
  const attributes = (node, id) => [...node.attributes]
    .filter((a) => node.localName !== "svg" || a.name !== "style")
    .map((a) => `${a.name}=${JSON.stringify(a.value.replaceAll(id, "ID"))}`)
    .sort().join(" ");
  const canon = (node, id) => node.nodeType === Node.TEXT_NODE
    ? JSON.stringify(node.data)
    : `<${node.localName} ${attributes(node, id)}>${[...node.childNodes].map((child) => canon(child, id)).join("")}</>`;
  const steps = [];
  plot.linePlot(kept, wide);
  const curve = kept.querySelector("path.s0");
  for (const [name, spec] of [["narrow", narrow], ["empty", null], ["wide", wide], ["wide again", wide], ["narrow", narrow]]) {
    if (spec) plot.linePlot(kept, spec); else plot.emptyPlot(kept, "nothing to draw");
    fresh.replaceChildren();
    if (spec) plot.linePlot(fresh, spec); else plot.emptyPlot(fresh, "nothing to draw");
    const count = (svg) => svg.querySelectorAll("*").length;
    steps.push([name, canon(kept, "kept") === canon(fresh, "fresh"), count(kept), count(fresh)]);
  }
  const before = kept.querySelector("path.s4");
  plot.linePlot(kept, { ...narrow, series: [{ ...narrow.series[0], y: x.map((v) => 5 - v) }] });
  return { steps, keptNode: before === kept.querySelector("path.s4"), curveGone: !curve.isConnected };
}"""


def test_a_plot_drawn_again_into_its_own_nodes_is_the_plot_drawn_afresh(browser: Any, server: dict[str, Any]) -> None:
    """A drag redraws plots into the nodes they drew last time (plot.js el): after any sequence of
    plots (more series, fewer, an empty plot, a superscript label) the svg is exactly the one a
    fresh draw of the last plot makes, nothing left over and nothing missing; a curve that moves
    keeps its node."""
    page, problems = _open(browser, server["url"], 1280)
    result = page.evaluate(_REDRAWN_AS_FRESH)
    assert all(step[1] for step in result["steps"]), result["steps"]
    assert [step[2] for step in result["steps"]] == [step[3] for step in result["steps"]]
    assert result["keptNode"] and result["curveGone"]
    assert problems == []
    page.context.close()


def test_zero_sensitivity_keeps_every_panel_working(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _set_number(page, "#sensitivity-n", "0")
    page.wait_for_function("document.getElementById('membership-result').textContent.includes('Δ = 0')", timeout=15_000)
    assert "Error" not in _text(page, "#membership-result")
    assert page.is_visible("#no-noise") and page.is_hidden("#live-error")
    assert "all mass at f(D)" in (page.text_content("#plot-density .legend") or "")
    assert page.get_attribute("#plot-density path.spike", "d")
    assert page.get_attribute("#plot-ratio path[data-series]", "d")  # a flat zero log ratio, not an empty box
    assert page.get_attribute("#plot-lr path[data-series]", "d")
    assert page.get_attribute("#badge", "data-ok") == "true"
    _shot(page, "live-delta-zero", "#live")
    assert problems == []
    page.context.close()


# --- red team -----------------------------------------------------------------------------------------
def test_noisy_differencing_shows_one_consistent_story_on_d1_and_d2(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    assert _text(page, "#diabetes thead").split() == ["Patient", "D", "D′"]
    assert "D′, exact" in _text(page, "#diff-result-d2") and "Q5 − Q4 = 0" in _text(page, "#diff-result-d2")
    page.click("#diff-noisy")
    page.wait_for_function("document.getElementById('diff-result').textContent.includes('noisy')")
    for selector, truth in (("#diff-result", 1), ("#diff-result-d2", 0)):
        text = _text(page, selector)
        match = re.search(r"Q5 − Q4 = (-?[\d.e-]+); the attacker guesses bit (\d) \((right|wrong)", text)
        assert match, text
        difference, guess, verdict = float(match.group(1)), int(match.group(2)), match.group(3)
        assert guess == (1 if difference >= 0.5 else 0)
        assert (verdict == "right") is (guess == truth)
    assert "probability" in _text(page, "#diff-attack") and "estimate" not in _text(page, "#diff-attack")
    assert problems == []
    page.context.close()


def test_smaller_problems(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    # the release's label sits in the legend, above the plotting area, never on the curve
    label = page.locator("#plot-density text.label-release")
    assert label.count() == 1
    top = float(page.get_attribute("#plot-density", "data-plot-top") or 0)
    assert page.evaluate("document.querySelector('#plot-density text.label-release').getBBox().y") + 12 <= top + 1
    # the likelihood ratio is on a log axis: e^ε and e^−ε are far apart, not flattened at the bottom
    # (drawn when the server's answer arrives, which "ready" does not wait for: later on a busy machine)
    page.wait_for_selector("#plot-lr[data-ylog=true] line[data-h=cap]", state="attached")
    cap = page.evaluate("document.querySelector('#plot-lr line[data-h=cap]').getAttribute('y1')")
    one = page.evaluate("document.querySelector('#plot-lr line[data-h=one]').getAttribute('y1')")
    height = page.evaluate("document.getElementById('plot-lr').getBoundingClientRect().height")
    assert abs(float(cap) - float(one)) > 0.1 * height
    # the floating-point plot is not an empty box before the attack has run
    assert page.is_hidden("#fp-figure")
    page.click("#fp-run")
    page.wait_for_function("!document.getElementById('fp-result').textContent.includes('computing')", timeout=60_000)
    assert page.is_visible("#fp-figure") and "dpwitness 0%" in _text(page, "#fp-result")
    # step 9's log-scale ticks are powers of ten
    _go_to_step(page, 9)
    ticks = page.eval_on_selector_all("#step-body svg.short text.tick.x", "ts => ts.map(t => t.textContent)")
    assert ticks and all(re.fullmatch(r"1(0*)|0\.0*1|1e[-+]?\d+", tick) for tick in ticks), ticks
    assert "±0.2996" in _text(page, "#step-what") and "1000× the noise" in _text(page, "#step-result")
    assert "n = 1000 to be public and fixed" in _text(page, "#step-result")
    assert "noisy sum" in _text(page, "#step-result") and "noisy count" in _text(page, "#step-result")
    # myth 3 keeps its claim, corrected
    assert page.locator("#myth-list [data-verdict=kept]").count() == 1
    assert "Kept, corrected" in _text(page, "#myth-list")
    assert problems == []
    page.context.close()


def test_step2_caption_tells_longest_arrow_from_delta_under_replace_one(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _go_to_step(page, 2)
    page.select_option("#walk-relation", "replace-one")
    page.wait_for_function(
        "document.getElementById('step2-caption') && document.getElementById('step2-caption').textContent.includes('81')"
    )
    caption = _text(page, "#step2-caption")
    assert "longest here is 81" in caption and "Δ = 100" in caption
    assert page.locator("#step-body path[data-longest=true]").count() == 1
    assert page.get_attribute("#step-body path[data-delta]", "data-delta") == "100"
    assert "81" in _text(page, "#step-result") and "100" in _text(page, "#step-result")
    assert problems == []
    page.context.close()


def test_phone_keeps_controls_and_badge_on_screen(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 375, height=800)
    page.locator("#plot-density").scroll_into_view_if_needed()
    page.evaluate("document.getElementById('plot-density').scrollIntoView({block: 'center'})")
    for selector in ("#epsilon", "#badge", "#tamper"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800, (selector, box)
    plot = page.locator("#plot-density").bounding_box()
    slider = page.locator("#epsilon").bounding_box()
    assert plot is not None and slider is not None and plot["y"] - slider["y"] < 800
    _shot(page, "phone-sticky-375", full_page=False)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert problems == []
    page.context.close()


# --- the budget planner ------------------------------------------------------------------------------
def test_planner_releases_through_session_and_refuses_to_release_again(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    assert "= 1 of the total 1" in _text(page, "#plan-composition")
    assert page.locator("#plot-plan-error path[data-series]").count() == 3
    # the bound typeset (KaTeX), its value tanh(1/2) at δ = 0
    assert (
        "\\dfrac{e^{\\varepsilon} - 1 + 2\\delta}{e^{\\varepsilon} + 1}"
        in page.locator("#plan-risk annotation").all_text_contents()
    )
    assert "= 0.4621" in _text(page, "#plan-risk")
    assert page.is_disabled("#plan-count-mechanism")  # Gaussian noise needs δ > 0
    page.click("#plan-release")
    page.wait_for_function("document.getElementById('plan-status').dataset.state === 'released'", timeout=30_000)
    rows = page.locator("#plan-answers tbody tr")
    assert rows.count() == 7  # count, mean and five race keys
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td").all_inner_texts()
        low, high = (float(v) for v in cells[3].split(" … "))
        assert low < float(cells[2]) < high
    assert "remaining 0" in _text(page, "#plan-ledger")
    _shot(page, "planner-released", "#planner")
    page.click("#plan-release")
    page.wait_for_function("document.getElementById('plan-status').dataset.state === 'refused'", timeout=30_000)
    assert "nothing was released" in _text(page, "#plan-status")
    # a new plan with δ: the count uses Gaussian noise, released by the same Session API
    page.click("#plan-new")
    page.select_option("#plan-delta", "0.00001")
    page.select_option("#plan-count-mechanism", "gaussian")
    page.wait_for_function("document.getElementById('plan-count-info').textContent.startsWith('Gaussian')")
    assert "δ 10⁻⁵ of 10⁻⁵" in _text(page, "#plan-composition")  # never "1.000e-5"
    page.click("#plan-release")
    page.wait_for_function("document.getElementById('plan-status').dataset.state === 'released'", timeout=30_000)
    assert "(Gaussian)" in page.locator("#plan-answers tbody tr").first.inner_text()
    assert "δ = 10⁻⁵ of 10⁻⁵" in _text(page, "#plan-status")
    # over the budget: the total turns red and the release button is disabled
    page.locator("#plan-count").fill("2")
    assert "more than the total" in _text(page, "#plan-composition")
    assert page.is_disabled("#plan-release")
    # 409 (refused) is the expected answer to the second release
    assert all("409" in problem for problem in problems), problems
    page.context.close()


# --- kept from before: bad input, resample, keyboard ------------------------------------------------------
def test_bad_input_shows_the_servers_message_and_resample_is_reproducible(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    first = _text(page, "#out-release")
    assert "not for production" in _text(page, "#release-notice")
    before = _version(page)
    page.click("#resample")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert _text(page, "#out-release") != first and "seed 2" in _text(page, "#release-label")
    before = _version(page)
    page.fill("#epsilon-n", "0")
    page.wait_for_selector("#live-error:not([hidden])")
    # refused in the page, with the server's own range, in the page's words (never Python's)
    assert _text(page, "#live-error") == "ε must be between 0.01 and 100; nothing was computed for this setting."
    assert _version(page) == before
    _set_number(page, "#epsilon-n", "0.5")
    assert page.is_hidden("#live-error")
    assert all("422" in problem for problem in problems), problems
    page.context.close()


def test_keyboard_reaches_the_controls(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    seen: list[str] = []
    for _ in range(80):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("document.activeElement.id"))
    for control in ["step-next", "epsilon", "epsilon-n", "sensitivity", "tamper", "value", "shift", "releases", "resample"]:
        assert control in seen, seen
    assert seen.index("epsilon") < seen.index("sensitivity") < seen.index("tamper") < seen.index("resample")
    before = _version(page)
    page.focus("#tamper")
    page.keyboard.press("Space")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "false"
    assert problems == []
    page.context.close()


# --- issue 22: one setting on screen at a time -------------------------------------------------------
#: Every element of the live panel whose text derives from the setting (live.js DERIVED).
DERIVED = [
    "out-release", "out-illustration", "out-scale", "out-scale-real", "out-variance", "out-variance-real", "out-std",
    "out-std-real", "out-interval", "out-interval-real", "out-loss-claimed", "out-loss", "out-worst-claimed", "out-worst",
    "out-composition", "out-unbiased", "badge-detail", "gauss-summary", "gauss-witness",
]  # fmt: skip
LIVE_PLOTS = [
    "plot-density",
    "plot-ratio",
    "plot-gauss",
    "plot-gauss-delta",
    "plot-lr",
    "plot-roc",
    "plot-dots",
    "plot-loss",
    "plot-kzcdp",
]
NOT_COMPUTED = "not computed for this setting"
#: Each refused input: (number box, what is typed, what the page must say).
REFUSALS = [
    ("#epsilon-n", "0.005", "ε must be between 0.01 and 100"),
    ("#epsilon-n", "150", "ε must be between 0.01 and 100"),
    ("#epsilon-n", "", "ε must be between 0.01 and 100"),
    ("#sensitivity-n", "-1", "Δ must be between 0 and 10⁶"),
    ("#sensitivity-n", "2e6", "Δ must be between 0 and 10⁶"),
    ("#value", "2e9", "f(D) must be between −10⁹ and 10⁹"),
]


def _assert_nothing_stale(page: Any, context: Any) -> None:
    """Every number and picture the refused setting would change says it was not computed."""
    assert page.get_attribute("#live", "data-stale") == "true", context
    for element in DERIVED:
        assert _text(page, f"#{element}") == NOT_COMPUTED, (context, element, _text(page, f"#{element}"))
    assert (
        page.get_attribute("#badge", "data-ok") == "none"
        and "✔" not in _text(page, "#badge")
        and "✘" not in _text(page, "#badge")
    )
    cells = " ".join(page.locator("#numbers tbody td").all_inner_texts())
    assert not re.search(r"\d", cells), (context, cells)
    for plot in LIVE_PLOTS:
        assert page.get_attribute(f"#{plot}", "data-empty") == "true", (context, plot)
        assert page.locator(f"#{plot} path").count() == 0, (context, plot)
    assert _text(page, "#membership-result") == NOT_COMPUTED, context
    for element in ("dots-text", "loss-text", "kzcdp-text", "inv-result"):
        assert _text(page, f"#{element}") == NOT_COMPUTED, (context, element)
    _go_to_step(page, 3)  # a step drawn from the live setting
    assert "Not computed for this setting" in _text(page, "#step-body"), context
    assert page.locator("#step-body svg").count() == 0, context


def test_every_refused_input_leaves_no_stale_number(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    valid = {"#epsilon-n": "0.5", "#sensitivity-n": "1", "#value": "42"}
    for selector, typed, message in REFUSALS:
        assert page.get_attribute("#badge", "data-ok") == "true"
        refusals = page.evaluate("window.dpwExplorer.refusals")
        page.fill(selector, typed)
        page.wait_for_function(f"window.dpwExplorer.refusals > {refusals}")
        # (an answer in flight for the previous setting arriving now: test_late_* below, held on purpose)
        assert page.get_attribute(selector, "aria-invalid") == "true"
        assert message in _text(page, "#live-error"), (typed, _text(page, "#live-error"))
        _assert_nothing_stale(page, (selector, typed))
        _shot(page, f"refused-{selector.strip('#')}-{typed or 'empty'}", "#live")
        # back to a valid setting: every number returns, for that setting
        _set_number(page, selector, valid[selector])
        assert page.get_attribute("#badge", "data-ok") == "true" and _text(page, "#out-scale") == "2"
    assert page.get_attribute("#badge", "data-ok") == "true" and _text(page, "#out-scale") == "2"
    assert page.is_hidden("#live-error") and page.get_attribute("#live", "data-stale") is None
    assert problems == []
    page.context.close()


# --- late answers: held back on purpose, released after the setting moved or was refused --------------
class _Held:
    """The server's answers to requests matching ``pattern``, held back by a Playwright route.

    The first ``count`` matching requests are held (later ones go through) until ``release``; the test
    then waits on the page's own record of what became of each released answer, never on time."""

    def __init__(self, page: Any, pattern: re.Pattern[str], count: int = 1) -> None:
        self.page, self.count = page, count
        self.routes: list[Any] = []
        page.route(pattern, self._route)

    def _route(self, route: Any) -> None:
        if len(self.routes) < self.count:
            self.routes.append(route)
        else:
            route.continue_()

    def wait(self, expected: int = 1) -> str:
        """Until ``expected`` requests are held (each page call lets Playwright deliver its route events);
        returns the last one's address as the page asked it (/api/…)."""
        deadline = time.monotonic() + 30
        while len(self.routes) < expected:
            assert time.monotonic() < deadline, f"no request held for {self.routes}"
            self.page.evaluate("0")  # a round trip to the browser: pending route events are delivered
        url: str = self.routes[expected - 1].request.url
        return url[url.index("/api/") :]

    def release(self, index: int = 0) -> None:
        """Let the held request through to the server, whose answer then reaches the page late. A request
        the page aborted meanwhile (a refusal aborts what was asked for the refused setting) has no answer."""
        with suppress(playwright_api.Error):
            self.routes[index].continue_()


def _wait_handled(page: Any, url: str, shown_js: str) -> None:
    """Until the page has dealt with the late answer to ``url``: it dropped it (``dpwExplorer.dropped``)
    or it drew it (``shown_js`` turns true: what the late answer would put on screen)."""
    page.wait_for_function(
        f"([url]) => (window.dpwExplorer.dropped || []).includes(url) || ({shown_js})", arg=[url], timeout=60_000
    )


def _refuse(page: Any, selector: str, typed: str) -> None:
    refusals = page.evaluate("window.dpwExplorer.refusals")
    page.fill(selector, typed)
    page.wait_for_function(f"window.dpwExplorer.refusals > {refusals}")


TEXT_OF = "document.getElementById('{}').textContent"


def test_late_gaussian_witness_is_dropped_after_the_value_is_refused(browser: Any, server: dict[str, Any]) -> None:
    """Issue 32's failure, made certain: the exact Gaussian asked for ε = 0.6 answers after f(D) = 2·10⁹
    was refused; the witness must not say "✔ the claim holds" for a refused setting."""
    page, problems = _open(browser, server["url"], 1366)
    page.locator("#plot-gauss").scroll_into_view_if_needed()
    held = _Held(page, re.compile(r"/api/gaussian\?epsilon=0\.6&"))
    _set_number(page, "#epsilon-n", "0.6")
    url = held.wait()  # asked once the setting has rested, while the panel is on screen
    assert "epsilon=0.6" in url and page.get_attribute("#gauss-witness", "data-state") == "loading"
    _refuse(page, "#value", "2e9")
    assert _text(page, "#gauss-witness") == NOT_COMPUTED
    held.release()
    _wait_handled(page, url, "['ok', 'bad'].includes(document.getElementById('gauss-witness').dataset.state)")
    assert _text(page, "#gauss-witness") == NOT_COMPUTED and page.get_attribute("#gauss-witness", "data-state") == "none"
    assert "σ really sampled" not in _text(page, "#live")
    _assert_nothing_stale(page, "late Gaussian witness")
    assert problems == []
    page.context.close()


def test_late_membership_answer_is_dropped_after_epsilon_is_refused(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    held = _Held(page, re.compile(r"/api/redteam/membership\?epsilon=0\.7&"))
    _set_number(page, "#epsilon-n", "0.7")
    url = held.wait()
    _refuse(page, "#epsilon-n", "150")
    page.wait_for_function(f"{TEXT_OF.format('membership-result')} === '{NOT_COMPUTED}'")
    held.release()
    _wait_handled(page, url, f"{TEXT_OF.format('membership-result')} !== '{NOT_COMPUTED}'")
    _assert_nothing_stale(page, "late membership answer")
    assert problems == []
    page.context.close()


def test_late_composition_answer_never_overwrites_a_newer_one(browser: Any, server: dict[str, Any]) -> None:
    """kε against zCDP asked for ε = 0.7, then for ε = 0.8; the answer for 0.7 arrives last."""
    page, problems = _open(browser, server["url"], 1366)
    held = _Held(page, re.compile(r"/api/beyond/composition\?epsilon=0\.7&"))
    _set_number(page, "#epsilon-n", "0.7")
    url = held.wait()
    assert "epsilon=0.7" in url
    _set_number(page, "#epsilon-n", "0.8")
    page.wait_for_function(f"{TEXT_OF.format('kzcdp-text')}.includes('basic composition says ε = 0.8 ')")
    newer = _text(page, "#kzcdp-text")
    held.release()
    _wait_handled(page, url, f"{TEXT_OF.format('kzcdp-text')} !== {json.dumps(newer)}")
    assert _text(page, "#kzcdp-text") == newer
    assert "ε = 0.7 " not in _text(page, "#kzcdp-text")
    assert problems == []
    page.context.close()


@pytest.mark.parametrize("change", ["moved", "refused"])
def test_late_red_team_answers_after_the_setting_moved_or_was_refused(browser: Any, server: dict[str, Any], change: str) -> None:
    """The simulation and the floating-point leak are asked by a button; their answers arrive after ε
    moved to another valid value (the request is not aborted: the answer really arrives late) or was
    refused (the request is aborted). Either way the window says "not computed", never the old numbers."""
    page, problems = _open(browser, server["url"], 1366)
    simulation = _Held(page, re.compile(r"/api/redteam/membership\?.*simulate=true"))
    floating = _Held(page, re.compile(r"/api/redteam/floating-point\?"))
    page.click("#membership-run")
    page.click("#fp-run")
    urls = {"membership-sim": simulation.wait(), "fp-result": floating.wait()}
    if change == "moved":
        _set_number(page, "#epsilon-n", "0.7")
    else:
        _refuse(page, "#epsilon-n", "0.001")
    simulation.release()
    floating.release()
    for element, url in urls.items():
        _wait_handled(page, url, f"/\\d/.test({TEXT_OF.format(element)})")
        assert _text(page, f"#{element}") == NOT_COMPUTED, (change, element, _text(page, f"#{element}"))
    assert page.is_hidden("#fp-figure") and page.is_hidden("#fp-doubles-figure")
    if change == "moved":  # pressed again, each answers for the setting now shown
        page.click("#fp-run")
        page.wait_for_function(f"{TEXT_OF.format('fp-result')}.includes('at ε = 0.7 ')")
    assert problems == []
    page.context.close()


def test_late_live_answer_is_dropped_and_the_newest_setting_drawn(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    held = _Held(page, re.compile(r"/api/live\?epsilon=0\.25&"))
    page.fill("#epsilon-n", "0.25")
    url = held.wait()
    assert "epsilon=0.25" in url
    version = _version(page)
    page.fill("#epsilon-n", "4")  # asked once the answer in flight is in: one question at a time
    held.release()
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {version}", timeout=15_000)
    assert url in page.evaluate("window.dpwExplorer.dropped")
    assert _version(page) == version + 1 and _text(page, "#out-scale") == "0.25"  # Δ/ε = 1/4, not 1/0.25
    assert problems == []
    page.context.close()


def test_a_server_refusal_is_worded_by_the_page_and_greys_everything(browser: Any, server: dict[str, Any]) -> None:
    """A setting the page cannot check itself (here: a seed beyond the server's range, from the URL)."""
    page, problems = _open(browser, server["url"], 1366, query="?seed=99999999999999999999")
    page.wait_for_selector("#live-error:not([hidden])")
    assert _text(page, "#live-error") == "The server refused the seed for this setting; nothing was computed."
    assert "must be" not in _text(page, "#live-error") and "got" not in _text(page, "#live-error")
    assert page.get_attribute("#live", "data-stale") == "true"
    assert _text(page, "#out-scale") == NOT_COMPUTED
    assert all("422" in problem for problem in problems), problems
    page.context.close()


def test_tamper_switch_is_disabled_where_meaningless(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "false"
    _set_number(page, "#sensitivity-n", "0")
    assert page.is_disabled("#tamper") and not page.is_checked("#tamper")
    assert page.is_hidden("#live-error")
    assert page.get_attribute("#badge", "data-ok") == "true" and "Claim holds" in _text(page, "#badge")
    assert _text(page, "#out-scale") == "0" and page.is_hidden("#tamper-detail")
    assert "Miscalibrated" not in _text(page, "#live")
    _set_number(page, "#sensitivity-n", "1")
    assert page.is_enabled("#tamper") and not page.is_checked("#tamper")
    page.context.close()
    # the same from a shared URL: never a refused request, never a tampered badge at Δ = 0
    page, more = _open(browser, server["url"], 1366, query="?sens=0&tamper=1")
    assert page.is_disabled("#tamper") and not page.is_checked("#tamper") and page.is_hidden("#live-error")
    assert page.get_attribute("#badge", "data-ok") == "true"
    assert problems == [] and more == []
    page.context.close()


def test_slider_and_box_show_the_same_setting(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    limits = json.loads(page.text_content("#dpw-limits") or "{}")
    assert limits["epsilon"] == [0.01, 100.0] and limits["sensitivity"] == [0.0, 1e6]  # the server's own ranges
    _set_number(page, "#epsilon-n", "8")
    assert page.get_attribute("#epsilon", "aria-valuetext") == "ε = 8"
    position = float(page.input_value("#epsilon"))
    assert abs(10 ** (-2 + 4 * position / 400) - 8) < 0.2  # the slider sits at 8 (log scale over [0.01, 100])
    _set_number(page, "#epsilon-n", "0.01")
    assert page.input_value("#epsilon") == "0"
    page.focus("#epsilon")
    _press_and_wait(page, "End")
    assert page.input_value("#epsilon-n") == "100" and _text(page, "#out-scale") == "0.01"
    _set_number(page, "#sensitivity-n", "1000")
    assert page.get_attribute("#sensitivity", "data-beyond") == "true"
    assert "Δ = 1000" in (page.get_attribute("#sensitivity", "aria-valuetext") or "")
    assert page.get_attribute("#shift", "aria-valuetext") == "d = 1000 (1·Δ)"
    assert problems == []
    page.context.close()


def test_exact_gaussian_witness_never_speaks_for_another_setting(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    page.locator("#plot-gauss").scroll_into_view_if_needed()
    page.wait_for_function("document.getElementById('gauss-witness').dataset.state === 'ok'", timeout=90_000)
    old = _text(page, "#gauss-witness")
    sigma = re.search(r"σ really sampled ([\d.]+)", old)
    assert sigma, old
    assert page.is_visible("#gauss-call") and "Gaussian(" in _text(page, "#gauss-call")
    _refuse(page, "#value", "2e9")  # f(D) is not part of the Gaussian's question, but the setting is refused
    assert _text(page, "#gauss-witness") == NOT_COMPUTED and page.is_hidden("#gauss-call")
    _set_number(page, "#value", "42")
    page.locator("#plot-gauss").scroll_into_view_if_needed()  # asked for again while on screen
    page.wait_for_function("document.getElementById('gauss-witness').dataset.state === 'ok'", timeout=90_000)
    _set_number(page, "#epsilon-n", "8")
    now = _text(page, "#gauss-witness")
    assert sigma.group(1) not in now and "δ(ε = 0.5)" not in now, now
    assert page.get_attribute("#gauss-witness", "data-state") in {"range", "pending"}
    assert problems == []
    page.context.close()


# --- axes from the whole setting ------------------------------------------------------------------------
FIT_SETTINGS = [
    {"#epsilon-n": "5"},
    {"#epsilon-n": "0.1"},
    {"#value": "1000"},
    {"#epsilon-n": "0.05", "#sensitivity-n": "7"},
]


def test_fit_puts_peaks_and_999_permille_of_mass_in_view_and_the_delta_shown_is_the_delta_stated(
    browser: Any, server: dict[str, Any]
) -> None:
    page, problems = _open(browser, server["url"], 1366)
    for setting in FIT_SETTINGS:
        for selector, value in setting.items():
            _set_number(page, selector, value)
        page.click("#fit-axes")
        page.wait_for_function("document.getElementById('fit-axes').dataset.needed === 'false'")
        _drawn(page)  # the fit is drawn in the animation frame it asked for
        assert float(page.get_attribute("#plot-density", "data-mass-in-view") or 0) >= 0.999, setting
        assert page.get_attribute("#plot-density", "data-peak-in-view") == "true", setting
        shown = float(page.get_attribute("#plot-gauss", "data-delta-in-view") or 0)
        stated = float(page.get_attribute("#plot-gauss", "data-delta") or 0)
        assert stated > 0 and abs(shown - stated) <= 0.01 * stated, (setting, shown, stated)
        ticks = [float(v.replace("−", "-")) for v in _x_ticks(page, "#plot-gauss")]
        assert min(ticks) >= 0 or float(setting.get("#value", "42")) - 100 < min(ticks), ticks
    # typing ε without a fit keeps the axes, and the page says part of the curve left them
    _set_number(page, "#epsilon-n", "0.5")
    page.click("#fit-axes")
    _set_number(page, "#epsilon-n", "5")
    assert page.get_attribute("#fit-axes", "data-needed") == "true"
    assert page.get_attribute("#plot-density", "data-peak-in-view") == "false"
    # f(D) typed and committed: the axes follow at once (never an empty plot until "Fit")
    page.fill("#value", "1000")
    page.keyboard.press("Tab")
    page.wait_for_function("document.getElementById('fit-axes').dataset.needed === 'false'")
    assert float(page.get_attribute("#plot-density", "data-mass-in-view") or 0) >= 0.999
    assert problems == []
    page.context.close()


def test_step7_pictures_share_axes_and_draw_the_epsilon_they_name(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _go_to_step(page, 7)
    axes = page.eval_on_selector_all("#edge-pictures svg", "ss => ss.map(s => s.dataset.axes)")
    assert len(axes) == 5 and len(set(axes)) == 1, axes
    captions = page.eval_on_selector_all("#edge-pictures figcaption", "cs => cs.map(c => c.textContent)")
    large = re.search(r"ε → ∞: at ε = (\d+)", _text(page, "#step-result"))
    assert large and f"ε = {large.group(1)}:" in captions[3], (captions, _text(page, "#step-result"))
    # flat and wide: the ε = 0.01 curve stays in the bottom 5% of the shared axes; the ε = 100 one is clipped at the top
    heights = page.eval_on_selector_all(
        "#edge-pictures svg", "ss => ss.map(s => { const p = s.querySelector('path.s0'); return p ? p.getBBox().height : 0; })"
    )
    plot_height = page.evaluate(
        "(() => { const s = document.querySelectorAll('#edge-pictures svg')[2]; return s.getBoundingClientRect().height; })()"
    )
    assert heights[2] < 0.05 * plot_height < heights[3], (heights, plot_height)
    assert problems == []
    page.context.close()


# --- typeset mathematics, offline -----------------------------------------------------------------------
FORMULA_STEPS = (3, 5, 8, 9, 11, 17, 18, 19, 20)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_formulas_are_typeset_offline(browser: Any, server: dict[str, Any], lang: str) -> None:
    page, problems = _open(browser, server["url"], 1366, query=f"?lang={lang}")
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    assert page.evaluate("typeof window.katex") == "object"
    for step in range(1, STEPS + 1):
        _go_to_step(page, step)
        if step in FORMULA_STEPS:
            formulas = page.locator("#step-body .formula")
            assert formulas.count() >= 1, (lang, step)
            for i in range(formulas.count()):
                assert formulas.nth(i).locator(".katex").count() >= 1, (lang, step, formulas.nth(i).inner_text())
        visible = page.evaluate(
            "(() => { const c = document.getElementById('step').cloneNode(true);"
            " c.querySelectorAll('.katex, pre, code').forEach(n => n.remove()); return c.textContent; })()"
        )
        for raw in ("$", "\\", "e^ε", "e^(", "Q_i", "z_k"):
            assert raw not in visible, (lang, step, raw, visible[:300])
    fonts = page.evaluate("[...document.fonts].filter(f => f.family.startsWith('KaTeX') && f.status === 'loaded').length")
    assert fonts >= 2
    assert all(url.startswith(server["url"]) for url in requested), [u for u in requested if not u.startswith(server["url"])]
    assert problems == []
    page.context.close()


# --- a complete Chinese page ------------------------------------------------------------------------------
#: Latin words allowed on the Chinese page: the product's name and standard function names of mathematics.
LATIN_ALLOWED = {"dpwitness", "ln", "log", "exp", "tanh", "max", "min", "Pr", "Var", "Lap"}
VISIBLE_LATIN = """(() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('.katex, code, pre, script, style, noscript, #lang, .sr-only, #dpw-limits')) continue;
    if (!parent.getClientRects().length || getComputedStyle(parent).visibility === 'hidden') continue;
    if (parent.closest('details:not([open])') && !parent.closest('summary')) continue;
    for (const word of node.textContent.match(/[A-Za-z]{2,}/g) || []) out.push([word, node.textContent.trim().slice(0, 80)]);
  }
  return out;
})()"""


def _latin(page: Any) -> list[list[str]]:
    found: list[list[str]] = page.evaluate(VISIBLE_LATIN)
    return [item for item in found if item[0] not in LATIN_ALLOWED]


def test_chinese_page_shows_no_latin_text(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366, query="?lang=zh")
    found = _latin(page)
    for step in range(1, STEPS + 1):
        _go_to_step(page, step)
        found += [[*item, f"step {step}"] for item in _latin(page)]
    # the answers of buttons, the exact Gaussian, a released plan and its refusal, a refused input
    page.click("#diff-noisy")
    page.click("#fp-run")
    page.click("#membership-run")
    page.locator("#plot-gauss").scroll_into_view_if_needed()
    page.wait_for_function(
        "['ok', 'bad', 'error'].includes(document.getElementById('gauss-witness').dataset.state)", timeout=90_000
    )
    page.wait_for_function("!document.getElementById('fp-result').textContent.includes('…')", timeout=60_000)
    page.click("#plan-release")
    page.wait_for_function("document.getElementById('plan-status').dataset.state === 'released'", timeout=30_000)
    page.click("#plan-release")
    page.wait_for_function("document.getElementById('plan-status').dataset.state === 'refused'", timeout=30_000)
    found += _latin(page)
    page.fill("#epsilon-n", "0.001")
    page.wait_for_selector("#live-error:not([hidden])")
    found += _latin(page)
    assert "ε 须在 0.01 到 100 之间" in _text(page, "#live-error")
    assert found == [], found[:20]
    # natural Chinese punctuation: full-width colons after the labels
    assert _text(page, "#step strong").endswith("：")
    assert all("409" in problem for problem in problems), problems
    page.context.close()


# --- accessible and shareable ------------------------------------------------------------------------------
LIVE_REGIONS = "[aria-live]:not([aria-live=off]), [role=status], [role=alert], output"


def test_live_region_announces_only_a_changed_verdict_in_one_sentence(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    assert page.get_attribute("#step", "aria-live") is None
    regions = page.eval_on_selector_all("[aria-live]:not([aria-live=off])", "rs => rs.map(r => r.id)")
    assert regions == ["announce"], regions
    page.evaluate(
        "window.__said = []; new MutationObserver(() => window.__said.push(document.getElementById('announce').textContent))"
        ".observe(document.getElementById('announce'), {childList: true, characterData: true, subtree: true})"
    )
    page.focus("#epsilon")
    for _ in range(5):  # a five-value drag that keeps the verdict: nothing to announce
        _press_and_wait(page, "ArrowRight")
    assert page.evaluate("window.__said") == []
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    said: list[str] = page.evaluate("window.__said")
    assert len(said) == 1 and len(said[0]) <= 80 and len(re.findall(r"[.。](?:\s|$)", said[0])) == 1, said
    assert said[0] == "Claim violated at ε = 0.562."
    assert problems == []
    page.context.close()


def _contrast(a: list[float], b: list[float]) -> float:
    def luminance(rgb: list[float]) -> float:
        channels = [c / 255 for c in rgb[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _rgb(css: str) -> list[float]:
    return [float(v) for v in re.findall(r"[\d.]+", css)[:3]]


def test_targets_focus_ring_value_texts_skip_link_at_375(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 375, height=812)
    small = page.evaluate(
        "[...document.querySelectorAll('input, select, button, summary')].filter(e => e.getClientRects().length)"
        ".map(e => [e.id || e.tagName + ':' + (e.textContent || '').slice(0, 20), e.getBoundingClientRect().width,"
        " e.getBoundingClientRect().height])"
        ".filter(([, w, h]) => w < 24 || h < 24)"
    )
    assert small == [], small
    for slider, prefix in (("#epsilon", "ε = "), ("#sensitivity", "Δ = "), ("#shift", "d = "), ("#releases", "k = ")):
        assert (page.get_attribute(slider, "aria-valuetext") or "").startswith(prefix), slider
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "#walk-heading"
    page.focus("#epsilon-n")
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineColor")
    for background in ("#fffdf6", "#ffffff", "#f5f7fa"):
        assert (
            _contrast(
                _rgb(ring), _rgb(f"rgb({int(background[1:3], 16)}, {int(background[3:5], 16)}, {int(background[5:7], 16)})")
            )
            >= 3
        ), ring
    # the sticky bar stays small on a phone
    assert page.evaluate("document.getElementById('sticky').getBoundingClientRect().height") <= 100  # was ≈ 115 (3 rows)
    assert problems == []
    page.context.close()


def test_setting_and_language_live_in_the_url_and_survive_a_language_switch(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _set_number(page, "#epsilon-n", "2")
    _set_number(page, "#sensitivity-n", "3")
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    _go_to_step(page, 5)
    page.wait_for_function("location.search.includes('step=5') && location.search.includes('tamper=1')")
    assert "eps=2" in page.url and "sens=3" in page.url
    with page.expect_navigation():
        page.select_option("#lang", "zh")
    page.wait_for_function("window.dpwExplorer && window.dpwExplorer.ready", timeout=20_000)
    assert "lang=zh" in page.url
    assert page.input_value("#epsilon-n") == "2" and page.input_value("#sensitivity-n") == "3" and page.is_checked("#tamper")
    # the step is restored from the URL once the walkthrough has loaded: wait for the state, not a time
    page.wait_for_selector('#step[data-step="5"]', timeout=20_000)
    page.wait_for_function(
        "document.querySelector('#out-scale') && document.querySelector('#out-scale').textContent.trim() === '1.5'",
        timeout=20_000,
    )
    assert page.get_attribute("#badge", "data-ok") == "false"
    assert problems == []
    page.context.close()


def test_message_when_javascript_is_off(browser: Any, server: dict[str, Any]) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(server["url"])
    text = page.inner_text("body")
    assert "JavaScript" in text and "turn it on and reload" in text and "请开启后重新加载" in text
    context.close()


def test_a_data_table_behind_every_plot(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    missing = page.evaluate(
        "[...document.querySelectorAll('svg.plot')].filter(s => s.getClientRects().length && s.childElementCount"
        " && !(s.nextElementSibling && s.nextElementSibling.matches('details.plot-data'))).map(s => s.id)"
    )
    assert missing == [], missing
    page.click("#plot-density + details summary")
    # The table is written when the details open (and again on each redraw): wait for it, then count.
    page.wait_for_function("document.querySelectorAll('#plot-density + details table tr').length >= 5", timeout=10_000)
    rows = page.locator("#plot-density + details table tr")
    assert rows.count() >= 5
    assert "p(z | D)" in _text(page, "#plot-density + details table")
    assert problems == []
    page.context.close()


# --- the learner's hands on the pictures ----------------------------------------------------------------
def test_step_controls_move_the_set_the_tent_and_k(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _go_to_step(page, 3)
    first = float(page.get_attribute("#step-result", "data-ratio") or 0)
    page.focus("#walk-s0")
    page.keyboard.press("Home")  # S far to the left of both centres
    page.wait_for_function(f"document.getElementById('step-result').dataset.ratio !== '{first}'")
    moved = float(page.get_attribute("#step-result", "data-ratio") or 0)
    assert moved < first <= math.exp(0.5) * (1 + 1e-9) and moved >= math.exp(-0.5) * (1 - 1e-9), (first, moved)
    assert page.locator("#side-knowledge").count() == 1 and page.locator("#discrete .katex").count() == 1
    _go_to_step(page, 4)
    before = _version(page)
    page.focus("#walk-shift")
    page.keyboard.press("Home")  # d = −Δ
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert _text(page, "#shift-out").startswith("d = -1") or _text(page, "#shift-out").startswith("d = −1")
    _go_to_step(page, 8)
    before = _version(page)
    page.focus("#walk-releases")
    page.keyboard.press("End")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert _text(page, "#releases-out") == "k = 50"
    assert "k = 1 releases" not in _text(page, "#live")
    assert problems == []
    page.context.close()


def test_replace_one_trap_turns_the_witness_red_and_younger_than_20_is_post_processed(
    browser: Any, server: dict[str, Any]
) -> None:
    page, problems = _open(browser, server["url"], 1366)
    _go_to_step(page, 11)
    assert page.get_attribute("#trap-witness", "data-ok") == "true"
    page.check("#walk-trap")
    page.wait_for_function(
        "document.getElementById('trap-witness') && document.getElementById('trap-witness').dataset.ok === 'false'"
    )
    witness = _text(page, "#trap-witness")
    assert witness.startswith("✘") and "b = 2" in witness and "not ε = 0.5" in witness, witness
    assert page.evaluate("getComputedStyle(document.getElementById('trap-witness')).backgroundColor") != page.evaluate(
        "getComputedStyle(document.getElementById('badge')).backgroundColor"
    )
    # the Chinese source's example: true 50, noisy answers, clamped and rounded (free), with its SQL
    assert _text(page, "#younger pre.sql") == "SELECT COUNT(*) FROM people WHERE age < 20"
    assert "true answer 50" in _text(page, "#younger [data-case=table] caption")
    for case in ("table", "spreadsheet"):
        rows = page.locator(f"#younger [data-case={case}] tr").all_inner_texts()[1:]
        assert len(rows) == 5
        for row in rows:
            _, noisy, clamped, rounded = row.split("\t")
            value = float(noisy.replace("−", "-"))
            assert float(clamped) == max(0.0, value) or abs(float(clamped) - max(0.0, value)) < 1e-3 * max(1, abs(value))
            assert float(rounded) == max(0, round(value)) and float(rounded) >= 0
    negative = [
        r
        for r in page.locator("#younger [data-case=spreadsheet] tr").all_inner_texts()[1:]
        if r.split("\t")[1].startswith(("-", "−"))
    ]
    assert negative, "the seeded draws show a negative noisy count that clamping repairs"
    assert "post-processing is free" in _text(page, "#younger")
    assert "Session(people" in _text(page, "#step-body")  # the exact call, copyable
    assert page.locator("#step-body .code button.copy").count() >= 2
    assert problems == []
    page.context.close()


def test_the_copyable_call_reproduces_the_panels_numbers(browser: Any, server: dict[str, Any]) -> None:
    """The live panel's dpwitness call, run as a user would paste it, gives the release shown."""
    page, problems = _open(browser, server["url"], 1366)
    for tamper in (False, True):
        if tamper:
            before = _version(page)
            page.check("#tamper")
            page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
        source = page.text_content("#live-call") or ""
        namespace: dict[str, Any] = {}
        exec(compile(source.replace("print(", "str("), "live-call", "exec"), namespace)  # the page's own call, as pasted
        assert f"{namespace['release'].value:.6g}" == _text(page, "#out-release"), (source, _text(page, "#out-release"))
    # the floating-point attack: two inputs, ε, and doubles reachable from one input only (loss = ∞)
    page.click("#fp-run")
    page.wait_for_function("document.getElementById('fp-doubles-figure').dataset.infinite", timeout=60_000)
    assert int(page.get_attribute("#fp-doubles-figure", "data-infinite") or 0) >= 1
    assert page.locator("#plot-fp-doubles rect[data-on=false]").count() >= 1
    assert (
        "x = 0" in _text(page, "#fp-result") and "x′ = 1" in _text(page, "#fp-result") and "loss = ∞" in _text(page, "#fp-result")
    )
    bar_labels = page.eval_on_selector_all("#plot-fp text", "ts => ts.map(t => t.textContent)")
    assert any(label.endswith("%") for label in bar_labels), bar_labels  # the bars say what the sentence says
    assert problems == []
    page.context.close()


def test_beyond_inverse_controls_dots_loss_histogram_and_zcdp(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    page.wait_for_function("document.getElementById('inv-result').textContent.includes('ε = ')")
    assert "ε = 0.5991" in _text(page, "#inv-result")  # ± 5 at 95% with Δ = 1: ε = ln 20 / 5
    _set_number(page, "#sensitivity-n", "2")
    page.wait_for_function("document.getElementById('inv-result').textContent.includes('Δ = 2')")
    assert "ε = 1.198" in _text(page, "#inv-result")  # re-solved for the new Δ
    _set_number(page, "#sensitivity-n", "1")
    page.select_option("#inv-target", "posterior")
    page.wait_for_function("document.getElementById('inv-result').textContent.includes('1% sure')")
    assert "ε = 1.651" in _text(page, "#inv-result")
    before = _version(page)
    page.click("#inv-use")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.input_value("#epsilon-n") == "1.65068"
    # 100 dots of possible releases; the privacy loss of the exact releases never leaves ε
    assert 85 <= int(page.get_attribute("#plot-dots", "data-inside") or 0) <= 100
    assert page.locator("#plot-dots > g:not(.legend) circle.dot").count() == 100
    assert float(page.get_attribute("#plot-loss", "data-max") or 0) <= 1.65068 * (1 + 1e-6)
    # kε against zCDP, for Laplace releases (ρ = ε²/2 each) at one stated δ = 10⁻⁵ (issue 29: not δ = min(kδ, 0.5))
    page.focus("#releases")
    page.keyboard.press("End")
    page.wait_for_function("document.getElementById('kzcdp-text').textContent.startsWith('k = 50')")
    text = _text(page, "#kzcdp-text")
    eps = float(page.input_value("#epsilon-n"))
    expected = accounting.zcdp_epsilon(50 * accounting.pure_dp_rho(eps), 1e-5)
    assert float(page.get_attribute("#plot-kzcdp", "data-zcdp") or 0) == pytest.approx(expected, rel=1e-9), text
    assert "δ = 10⁻⁵" in text and "δ = 0.5" not in text, text
    assert problems == []
    page.context.close()


def test_statements_are_right_and_consistent(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1366)
    # e^10 is 22026.47: never printed as "22030" (false zeros), but with its power of ten
    myths = _text(page, "#myth-list")
    assert "2.203 × 10⁴" in myths and "22030" not in myths, myths
    # with δ > 0 the posterior is not called a pure-ε bound: it holds outside a δ-probability event
    assert "pure ε-DP" in _text(page, "#plan-risk")
    page.select_option("#plan-delta", "0.00001")
    page.select_option("#plan-count-mechanism", "gaussian")  # δ is spent only by a Gaussian query
    page.wait_for_function("document.getElementById('plan-risk').textContent.includes('probability at most δ')")
    assert "posterior can reach 100%" in _text(page, "#plan-risk")
    # a query at ε = 0 is left out of the plan: no "± NaN"
    page.locator("#plan-count").fill("0")
    page.wait_for_function("document.getElementById('plan-count-info').textContent.includes('left out')")
    assert "NaN" not in _text(page, "#planner")
    # the differencing pair: which person loses what
    _go_to_step(page, 10)
    step = _text(page, "#step-result")
    assert "Patient 5 is only in Q5 (Q4 = x₁ + … + x₄), so the pair costs them ε = 0.5," in step, step  # ε, not 2ε
    assert "patients 1–4 are in both queries, so the pair costs each of them 2ε = 1" in step and "independently" in step
    # membership: Δ = 100 is the clamp's bound, the oldest person is 71; trials and an interval
    page.click("#membership-run")
    page.wait_for_function("document.getElementById('membership-sim').textContent.includes('interval')", timeout=60_000)
    sim = _text(page, "#membership-sim")
    assert "aged 71" in sim and "4000 releases" in sim and "95% interval" in sim, sim
    assert problems == []
    page.context.close()


def test_new_controls_work_by_touch_on_a_phone(browser: Any, server: dict[str, Any]) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 812}, has_touch=True, is_mobile=True)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(server["url"])
    page.wait_for_function("window.dpwExplorer && window.dpwExplorer.ready", timeout=20_000)
    before = _version(page)
    page.tap("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    assert page.get_attribute("#badge", "data-ok") == "false"
    page.tap("#step-button-11")
    page.wait_for_function("document.getElementById('step').dataset.step === '11'")
    page.tap("#walk-trap")
    page.wait_for_function("document.getElementById('trap-witness').dataset.ok === 'false'")
    page.tap("#plot-density + details summary")
    # The table is written on the details' toggle event, a task after the tap: wait for it.
    page.wait_for_function("document.querySelectorAll('#plot-density + details table').length === 1", timeout=10_000)
    assert page.locator("#plot-density + details table").count() == 1
    assert problems == []
    context.close()


# --- issue 29: every statement true, ε and Δ reachable from every step, one setting on screen, layout ------
#: Texts of the svgs matched by a selector whose box leaves their svg's box (clipped), with the svg's id.
CLIPPED_TEXTS = """(selector) => {
  const out = [];
  for (const svg of document.querySelectorAll(selector)) {
    const frame = svg.getBoundingClientRect();
    if (!frame.width) continue;
    for (const text of svg.querySelectorAll('text')) {
      const box = text.getBoundingClientRect();
      if (!box.width || !text.textContent.trim()) continue;
      if (box.left < frame.left - 1 || box.right > frame.right + 1 || box.top < frame.top - 1 || box.bottom > frame.bottom + 1)
        out.push([svg.id || svg.closest('figure')?.querySelector('figcaption')?.textContent.slice(0, 30), text.textContent]);
    }
  }
  return out;
}"""
#: Pairs of elements (two selectors) whose boxes overlap.
OVERLAPS = """([a, b]) => {
  const out = [];
  const boxes = (s) => [...document.querySelectorAll(s)]
    .map(n => [n, n.getBoundingClientRect()]).filter(([, r]) => r.width);
  for (const [na, ra] of boxes(a)) for (const [nb, rb] of boxes(b)) {
    if (na === nb) continue;
    const [ta, tb] = [na.textContent, nb.textContent];
    const meets = ra.left < rb.right - 0.5 && rb.left < ra.right - 0.5 && ra.top < rb.bottom - 0.5 && rb.top < ra.bottom - 0.5;
    if (meets) out.push([ta, tb]);
  }
  return out;
}"""


def _in_viewport(page: Any, selector: str, width: int, height: int) -> None:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box)
    assert box["y"] >= 0 and box["y"] + box["height"] <= height + 0.5, (selector, box)


def test_issue29_statements_on_the_page_follow_the_servers_formulas(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1280)
    # the mean privacy loss is the exact KL divergence |d|/b + e^(−|d|/b) − 1 (was a 2000-release average, 0.09441)
    b = float(_text(page, "#out-scale-real"))
    kl = float(page.get_attribute("#plot-loss", "data-kl") or 0)
    assert kl == pytest.approx(accounting.laplace_kl_divergence(1.0, b), rel=1e-6)  # b as shown: the realised scale, rounded
    assert "0.1065" in _text(page, "#loss-text")
    # step 4: the d slider moves every picture and the text: the log ratio is ε·d/Δ (was "0.5" at d = 0.7)
    _go_to_step(page, 4)
    page.focus("#walk-shift")
    for _ in range(6):
        page.keyboard.press("ArrowLeft")  # d = 1 − 6·0.05 = 0.7
    page.wait_for_function("document.getElementById('step-result') && document.getElementById('step-result').dataset.d === '0.7'")
    assert float(page.get_attribute("#step-result", "data-log-ratio") or 0) == pytest.approx(0.5 * 0.7 / 1)
    assert "= 0.35" in _text(page, "#step-result")
    tents = page.locator("#step-body svg").nth(1)
    assert "f = d" in (tents.text_content() or "")
    # the tamper detail at ε = Δ: the inversion changes nothing (was "scale 1 instead of 1")
    _set_number(page, "#epsilon-n", "1")
    before = _version(page)
    page.check("#tamper")
    page.wait_for_function(f"window.dpwExplorer.liveVersion > {before}")
    detail = _text(page, "#tamper-detail")
    assert "changes nothing" in detail and "instead of" not in detail, detail
    page.uncheck("#tamper")
    # Δ = 0: steps 3, 4 and 5 say that no noise is needed (b = 0), never a silent Δ = 1 (b = 2, variance 8)
    _set_number(page, "#sensitivity-n", "0")
    for step in (3, 4, 5):
        _go_to_step(page, step)
        page.wait_for_selector("#step-result.no-noise")
        text = _text(page, "#step-result")
        assert "no noise is needed" in text and "b = Δ/ε = 0" in text, (step, text)
        assert page.locator("#step-body svg").count() == 0
    assert problems == []
    page.context.close()


@pytest.mark.parametrize("width", [375, 1280])
def test_issue29_epsilon_and_delta_reachable_from_every_step_and_pending_until_answered(
    browser: Any, server: dict[str, Any], width: int
) -> None:
    height = 800
    page, problems = _open(browser, server["url"], width, height=height)
    for step in (1, 3, 8, 12):
        _go_to_step(page, step)
        page.evaluate("document.querySelector('#step .step-nav').scrollIntoView({block: 'end'})")
        for selector in ("#epsilon", "#epsilon-n", "#sensitivity-n"):
            _in_viewport(page, selector, width, height)
    # a change: every view that shows the previous setting is marked pending in the same task, until answered
    _go_to_step(page, 3)
    marked = page.evaluate(
        """() => {
          const box = document.getElementById('epsilon-n');
          box.value = '2.75';
          box.dispatchEvent(new Event('input'));
          const views = ['#step-body', '#live .results', '#badge', '#plot-kzcdp'];
          return views.map(s => document.querySelector(s).classList.contains('pending'));
        }"""
    )
    assert marked == [True, True, True, True]
    page.wait_for_function("document.querySelectorAll('.pending').length === 0", timeout=30_000)
    assert "ε = 2.75" in _text(page, "#step-result")
    assert "epsilon=2.75" in _text(page, "#live-call")
    assert "ε = 2.75" in _text(page, "#badge-detail")
    assert problems == []
    page.context.close()


def test_issue29_refused_epsilon_moves_the_slider_and_never_writes_nan(browser: Any, server: dict[str, Any]) -> None:
    page, problems = _open(browser, server["url"], 1280)
    page.fill("#epsilon-n", "1000")
    page.wait_for_selector("#live-error:not([hidden])")
    assert page.input_value("#epsilon") == "400" and page.get_attribute("#epsilon", "data-refused") == "true"
    page.fill("#epsilon-n", "")
    page.wait_for_selector("#live-error:not([hidden])")
    assert page.get_attribute("#epsilon", "data-refused") == "true"
    _go_to_step(page, 2)  # writes the URL (after its 150 ms debounce)
    page.wait_for_function("location.search.includes('step=2')")
    assert "NaN" not in page.url and "eps=" not in page.url, page.url
    _set_number(page, "#epsilon-n", "2")
    position = round((math.log10(2) + 2) / 4 * 400)
    assert page.input_value("#epsilon") == str(position) and page.get_attribute("#epsilon", "data-refused") == "false"
    page.wait_for_function("location.search.includes('eps=2')")
    assert "NaN" not in page.url
    assert problems == []
    page.context.close()


@pytest.mark.parametrize(("width", "lang"), [(375, "en"), (375, "zh"), (1280, "en"), (1280, "zh")])
def test_issue29_layout_nothing_clipped_or_overlapping(browser: Any, server: dict[str, Any], width: int, lang: str) -> None:
    page, problems = _open(browser, server["url"], width, height=900, query=f"?lang={lang}")
    # step 12: compact boxes with readable text, each line inside its box, arrows only between boxes
    _go_to_step(page, 12)
    figure = page.locator("#step-body svg.summary")
    box = figure.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    layout = page.evaluate(
        """() => {
          const svg = document.querySelector('#step-body svg.summary');
          const rects = [...svg.querySelectorAll('rect.box')].map(r => r.getBoundingClientRect());
          const texts = [...svg.querySelectorAll('text')]
            .map(t => [t.getBoundingClientRect(), parseFloat(getComputedStyle(t).fontSize)]);
          const arrows = [...svg.querySelectorAll('path.arrow')].map(p => p.getBoundingClientRect());
          const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5
            && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
          const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
          return {
            heights: rects.map(r => r.height),
            outside: texts.filter(([t]) => !rects.some(r => inside(t, r))).length,
            small: texts.filter(([box, size]) => size < 14 || box.height < 14).length, // as drawn: no viewBox shrinking
            crossed: arrows.filter(a => texts.some(([t]) => meets(a, t))).length,
          };
        }"""
    )
    assert max(layout["heights"]) <= 90 and layout["outside"] == 0 and layout["small"] == 0 and layout["crossed"] == 0, layout
    # step 11: the released table's last column (rounded: post-processing is free) inside the page
    _go_to_step(page, 11)
    page.wait_for_selector("#younger table")
    last = page.locator("#younger table th:last-child").first
    last.scroll_into_view_if_needed()
    cell = last.bounding_box()
    assert cell is not None and cell["x"] + cell["width"] <= width + 0.5, cell
    # step 7's and step 9's axes, and the live panel's legend: every label inside its plot
    clipped = page.evaluate(CLIPPED_TEXTS, "#plot-density, #plot-ratio")
    for step in (7, 9, 13, 14, 15, 16, 17, 18, 19, 20):  # and every new step's plots (issue 29)
        _go_to_step(page, step)
        clipped += [[step, *item] for item in page.evaluate(CLIPPED_TEXTS, "#step-body svg")]
    assert clipped == [], clipped
    # step 8 at k = 1: the ε and kε labels side by side, never on top of each other
    _go_to_step(page, 8)
    assert page.evaluate(OVERLAPS, ["#step-body text.hlabel", "#step-body text.hlabel"]) == []
    # the floating-point picture: its legend never covers the ∞ markers
    page.click("#fp-run")
    page.wait_for_selector("#fp-doubles-figure:not([hidden])", timeout=60_000)
    page.locator("#plot-fp-doubles").scroll_into_view_if_needed()
    assert page.evaluate(OVERLAPS, ["#plot-fp-doubles text.cells-legend", "#plot-fp-doubles text.cell-mark"]) == []
    assert page.evaluate(CLIPPED_TEXTS, "#plot-fp-doubles") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert problems == []
    page.context.close()


#: The new steps (issue 29): their number, their own control and their predict-then-reveal question.
NEW_STEPS = {
    13: ("#walk-total", "predict-linked"),
    14: ("#walk-people", "predict-rr"),
    15: ("#walk-group", "predict-group"),
    16: ("#walk-clamp", "predict-clamp"),
    17: ("#walk-groups", "predict-parallel"),
    18: ("#walk-cap", "predict-unit"),
    19: ("#walk-epsilon", "predict-noisymax"),
    20: ("#walk-epsilon", "predict-deploy"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_new_steps_render_with_their_control_and_reveal_feedback_after_an_answer(
    browser: Any, server: dict[str, Any], lang: str
) -> None:
    """Each new step at 375 and 1280 px: its ε slider and own control, no overflow; the feedback is
    hidden until the learner answers, then says right or wrong and stays through a redraw."""
    for width in (1280, 375):
        page, problems = _open(browser, server["url"], width, query=f"?lang={lang}")
        for step, (control, question) in NEW_STEPS.items():
            _go_to_step(page, step)
            assert page.locator("#walk-epsilon").count() == 1 and page.locator(control).is_visible(), (step, control)
            feedback = f"#{question}-feedback"
            assert page.is_hidden(feedback), (lang, width, step)
            page.click(f"#{question}-choice-0")
            page.wait_for_selector(f"{feedback}:not([hidden])")
            assert page.get_attribute(feedback, "data-correct") in {"true", "false"}
            assert _text(page, feedback).strip()
            widths = page.evaluate("[document.getElementById('step').scrollWidth, document.getElementById('step').clientWidth]")
            assert widths[0] <= widths[1], (lang, width, step, widths)
            _shot(page, f"{lang}-{width}/new-step-{step:02d}", "#step", unstuck=True)
        # the pick survives a redraw for a new total budget (the step asks the server again)
        _go_to_step(page, 13)
        before = _text(page, "#step-result")
        page.eval_on_selector("#walk-total", "el => { el.value = '5'; el.dispatchEvent(new Event('input')); }")
        changed = f"(document.getElementById('step-result') || {{}}).innerText !== {json.dumps(before)}"
        page.wait_for_function(changed)
        page.wait_for_selector("#predict-linked-feedback:not([hidden])")
        assert page.get_attribute("#predict-linked-feedback", "data-correct") == "false"  # choice 0 is wrong: the risk rises
        assert problems == [], (lang, width, problems)
        page.context.close()


def _page_number(text: str) -> float:
    """A number as the page prints it: '0.5867', or '8.318 × 10⁻⁵'."""
    mantissa, _, power = text.partition(" × 10")
    exponent = power.translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")) or "0"
    return float(mantissa) * 10 ** int(exponent)


def test_issue29_last_steps_draw_the_servers_numbers_and_grade_by_them(browser: Any, server: dict[str, Any]) -> None:
    """Steps 17–20 show the server's numbers (computed again here from the formulas) and grade the
    predict question by them: the right answer changes with the setting."""
    page, problems = _open(browser, server["url"], 1280)
    # 17: parallel composition: one person loses ε whatever k; the same people asked k times lose kε
    _go_to_step(page, 17)
    page.eval_on_selector("#walk-groups", "el => { el.value = '7'; el.dispatchEvent(new Event('input')); }")
    page.wait_for_function("(document.getElementById('step-result') || {dataset: {}}).dataset.sequential > 3")
    assert float(page.get_attribute("#step-result", "data-parallel") or 0) == pytest.approx(0.5, rel=1e-6)
    assert float(page.get_attribute("#step-result", "data-sequential") or 0) == pytest.approx(7 * 0.5, rel=1e-6)
    page.click("#predict-parallel-choice-1")  # kε: wrong
    assert page.get_attribute("#predict-parallel-feedback", "data-correct") == "false"
    page.click("#predict-parallel-choice-0")
    assert page.get_attribute("#predict-parallel-feedback", "data-correct") == "true"
    # 18: Δ = c, and the best c lies between 1 and the most active person's rows; the right answer is read from it
    _go_to_step(page, 18)
    page.eval_on_selector("#walk-cap", "el => { el.value = '3'; el.dispatchEvent(new Event('input')); }")
    page.wait_for_function("(document.getElementById('step-result') || {dataset: {}}).dataset.delta === '3'")
    best = int(page.get_attribute("#step-result", "data-best") or 0)
    assert 1 < best < 35
    page.click("#predict-unit-choice-1")
    assert page.get_attribute("#predict-unit-feedback", "data-correct") == "true"
    # 19: each candidate's probability is exp(ε·u/(2Δ)) / Σ, from the server's accounting function
    _go_to_step(page, 19)
    cells = page.eval_on_selector_all("#step-body table td:last-child", "cells => cells.map(c => c.textContent)")
    shown = [_page_number(v) for v in cells]
    expected = accounting.exponential_mechanism_probabilities([48, 45, 30, 12, 5], 0.5, 1.0)
    assert shown == pytest.approx(expected, abs=6e-4)  # as printed (4 significant digits)
    page.click("#predict-noisymax-choice-1")  # at ε = 0.5 the top is chosen most often but below 90%
    assert page.get_attribute("#predict-noisymax-feedback", "data-correct") == "true"
    _set_number(page, "#epsilon-n", "20")
    page.wait_for_function("Number((document.getElementById('step-result') || {dataset: {}}).dataset.top) > 0.99")
    assert page.get_attribute("#predict-noisymax-feedback", "data-correct") == "false"  # the pick is kept; now it is wrong
    # 20: three deployments, each with its primary source linked; the 50% prior's bound from ε
    _go_to_step(page, 20)
    links = page.eval_on_selector_all("#deploy-table a", "links => links.map(a => a.href)")
    assert sorted(links) == sorted(
        ["https://arxiv.org/abs/2002.05839", "https://arxiv.org/abs/2009.01265", "https://arxiv.org/abs/2107.01179"]
    )
    assert "34.9" in _text(page, "#deploy-table") and "1.68" in _text(page, "#deploy-table")
    assert problems == []
    page.context.close()
