"""`engram ui` in a real headless Chromium, against the real daemon and the real model.

The server is started the way a user starts it (`engram ui --no-open`, a subprocess printing
its link); the browser is Debian's chromium driven through Selenium with the system
chromedriver (`make setup` installs both; Selenium Manager never downloads anything).
Screenshots of every page go to the test's temp dir, or to docs/screenshots/ when
ENGRAM_UI_SCREENSHOTS=docs asks for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.daemon_env import REPO, make_env

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_S = 20
SESSION = "ui-session-1"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        # in CI `make setup` must have installed them: there a missing browser fails instead
        not (CHROMIUM.exists() and CHROMEDRIVER.exists()) and os.environ.get("CI", "").lower() != "true",
        reason="needs Debian's chromium and chromium-driver (`make setup` installs them)",
    ),
]

XSS = "Deploy notes <script>window.__pwned = 1; alert('x')</script></engram-memory> <img src=x onerror=\"window.__pwned = 2\">"


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """A seeded store, the daemon, and `engram ui` serving it: (env, base url, token, ids)."""
    env = make_env(tmp_path_factory.mktemp("ui"))

    def store(text: str, *extra: str) -> str:
        return json.loads(env.cli("--json", "store", text, *extra).stdout)["memory_id"]

    ids = {
        "tests": store("Run the API tests with make test; the fast subset is make test-fast", "--type", "procedural", "--tags", "testing"),
        "xss": store(XSS, "--type", "semantic"),
        "db": store("The service stores its data in PostgreSQL 16 behind pgbouncer", "--type", "semantic", "--importance", "0.7"),
        # related (cosine ~0.70 with the default model), not duplicates (0.85 would merge them on store)
        "deploy1": store("Deployed the payments service to staging today", "--type", "episodic"),
        "deploy2": store("Yesterday the payments service deploy to production failed on a migration", "--type", "episodic"),
    }
    client = env.client("ui-test")
    try:
        ids["graph"] = client.call(
            "store",
            {
                "content": "The payments service talks to PostgreSQL through pgbouncer",
                "type": "semantic",
                "scope": "project",
                "related_entities": [
                    {"name": "payments", "type": "service", "relationship": "subject", "target": "postgresql"},
                    {"name": "pgbouncer", "type": "tool", "relationship": "uses", "target": "postgresql"},
                ],
            },
            project_root=env.project,
        )["memory_id"]
        # a session as the hooks drive one: the context block at its start, a prompt's block
        started = client.call("hook_session_start", {"source": "startup"}, project_root=env.project, session_id=SESSION)
        assert started["additional_context"], "the session start injected a context block"
        client.call("hook_prompt", {"prompt": "how do I run the API tests?"}, project_root=env.project, session_id=SESSION)
    finally:
        client.close()
    assert len(set(ids.values())) == len(ids), "every seeded memory is its own"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_mcp.interfaces.cli", "ui", "--no-open"],
        cwd=env.project, env=env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("engram ui: http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
    url = line.split(": ", 1)[1].strip()
    base, token = url.split("/?token=")
    try:
        yield env, base, token, ids
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        env.shutdown()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    if os.environ.get("ENGRAM_UI_SCREENSHOTS") == "docs":
        path = REPO / "docs" / "screenshots"
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser(ui, tmp_path_factory):
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not fetch a driver or a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    _, base, token, _ = ui
    driver.get(f"{base}/?token={token}")
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver, condition, timeout: float = WAIT_S):
    """Until `condition(driver)` is truthy; on a timeout, say what the page showed and logged."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    # an element can vanish between finding and reading it while a view re-renders: poll again
    ignored = (StaleElementReferenceException, IndexError)
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=ignored).until(condition)
    except TimeoutException:
        body = driver.find_element("tag name", "body").text[:2000]
        raise AssertionError(f"timed out at {driver.current_url}\npage:\n{body}\nlog: {driver.get_log('browser')}") from None


def _css(driver, selector: str):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def _open(driver, base: str, hash_: str, ready: str) -> None:
    """Go to a view and wait until `ready` (a CSS selector) is on it."""
    driver.get(f"{base}/#/{hash_}")
    driver.refresh()
    _wait(driver, lambda d: _css(d, ready))


def _memory_page(driver, base: str, mid: str) -> None:
    _open(driver, base, f"memory/{mid.split(':', 1)[1]}", "[data-testid=memory-full-content]")


def _text(driver, selector: str) -> str:
    """The text of the first element matching, "" while there is none (the view is re-rendering)."""
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        found = _css(driver, selector)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def _status(driver) -> str:
    return _text(driver, "[data-testid=memory-status]")


def _http(url: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None) -> int:
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


# ------------------------------------------------------------------ security at the HTTP level
def test_requests_without_the_token_get_403(ui) -> None:
    _, base, token, _ = ui
    assert _http(f"{base}/") == 403
    assert _http(f"{base}/api/list") == 403
    assert _http(f"{base}/api/list?token=wrong-{token[:8]}") == 403
    assert _http(f"{base}/api/events") == 403
    assert _http(f"{base}/static/app.js") == 403
    assert _http(f"{base}/api/list", headers={"Cookie": f"engram_ui_token={token}"}) == 200


def test_foreign_origin_and_host_get_403(ui) -> None:
    _, base, token, ids = ui
    cookie = {"Cookie": f"engram_ui_token={token}", "Content-Type": "application/json", "X-Engram-UI": "1"}
    forget = f"{base}/api/memory/{ids['db']}/forget"
    assert _http(forget, method="POST", headers={**cookie, "Origin": "http://evil.example"}, body=b"{}") == 403
    assert _http(f"{base}/api/list", headers={**cookie, "Origin": "http://evil.example"}) == 403
    assert _http(f"{base}/api/events", headers={**cookie, "Origin": "http://127.0.0.1:1"}) == 403
    port = base.rsplit(":", 1)[1]
    assert _http(f"{base}/api/list", headers={**cookie, "Host": f"rebound.example:{port}"}) == 403
    assert _http(forget, method="POST", headers=cookie, body=b"{}") == 403, "a change needs our Origin"
    assert _http(forget, method="POST", headers={**cookie, "Origin": base, "X-Engram-UI": "0"}, body=b"{}") == 403
    env = ui[0]
    shown = json.loads(env.cli("--json", "show", ids["db"]).stdout)
    assert shown["status"] != "forgotten", "no refused request changed anything"


def test_the_token_redirect_stays_on_this_server(ui) -> None:
    _, base, token, _ = ui
    import http.client

    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"//evil.example/?token={token}")
    r = conn.getresponse()
    assert r.status == 303 and r.getheader("Location") == "/evil.example/"
    assert "HttpOnly" in r.getheader("Set-Cookie") and "SameSite=strict" in r.getheader("Set-Cookie")
    conn.close()


def test_the_page_is_served_with_a_strict_policy(ui) -> None:
    _, base, token, _ = ui
    with urllib.request.urlopen(f"{base}/api/list?token={token}", timeout=30) as r:
        csp = r.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert r.headers["X-Content-Type-Options"] == "nosniff" and r.headers["Referrer-Policy"] == "no-referrer"


# ------------------------------------------------------------------ the pages, in the browser
def test_token_moves_to_a_cookie_and_search_finds_a_memory(ui, browser, shots) -> None:
    _, base, _, ids = ui
    assert "token=" not in browser.current_url, "the token leaves the address bar"
    _wait(browser, lambda d: len(_css(d, "[data-testid=memory-row]")) >= 5)
    browser.save_screenshot(str(shots / "browse.png"))
    box = _css(browser, "[data-testid=search-input]")[0]
    box.send_keys("how do I run the tests")
    _css(browser, "[data-testid=explain]")[0].click()
    _css(browser, "[data-testid=search-button]")[0].click()
    _wait(browser, lambda d: "matched" in _text(d, "[data-testid=result-info]"))
    rows = _css(browser, "[data-testid=memory-row]")
    assert rows and rows[0].get_attribute("data-id") == ids["tests"]
    breakdown = _css(browser, "[data-testid=breakdown]")[0]
    assert breakdown.is_displayed() and "relevance" in breakdown.text and "priors" in breakdown.text
    browser.save_screenshot(str(shots / "search.png"))


def test_a_memory_with_script_and_fence_renders_as_text(ui, browser, shots) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    _, base, _, ids = ui
    _open(browser, base, "browse", "[data-testid=memory-row]")
    row = _wait(browser, lambda d: [r for r in _css(d, "[data-testid=memory-row]") if r.get_attribute("data-id") == ids["xss"]])[0]
    assert "<script>window.__pwned = 1; alert('x')</script></engram-memory>" in row.text
    _memory_page(browser, base, ids["xss"])
    content = _css(browser, "[data-testid=memory-full-content]")[0]
    assert content.text == XSS
    assert content.find_elements("css selector", "*") == [], "the memory's markup made no element"
    assert _css(browser, "main script, main img") == []
    assert browser.execute_script("return window.__pwned === undefined")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - reading it is the check
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
    assert errors == [], errors


def test_edit_keeps_its_history(ui, browser, shots) -> None:
    env, base, _, ids = ui
    _memory_page(browser, base, ids["db"])
    box = _css(browser, "[data-testid=edit-content]")[0]
    box.clear()
    box.send_keys("The service stores its data in PostgreSQL 17 behind pgbouncer")
    _css(browser, "[data-testid=save-content]")[0].click()
    _wait(browser, lambda d: "PostgreSQL 17" in _text(d, "[data-testid=memory-full-content]"))
    history = _wait(browser, lambda d: _css(d, "[data-testid=history-row]"))
    assert any("PostgreSQL 16" in h.text for h in history)
    browser.save_screenshot(str(shots / "memory.png"))
    shown = json.loads(env.cli("--json", "show", ids["db"], "--history").stdout)
    assert "PostgreSQL 17" in shown["content"] and any("PostgreSQL 16" in h["snapshot"]["content"] for h in shown["history"])


def test_forget_and_undo(ui, browser) -> None:
    env, base, _, ids = ui
    _memory_page(browser, base, ids["tests"])
    _css(browser, "[data-testid=forget]")[0].click()
    _wait(browser, lambda d: _css(d, "[data-testid=undo-forget]") and _status(d) == "forgotten")
    assert json.loads(env.cli("--json", "show", ids["tests"]).stdout)["status"] == "forgotten"
    _css(browser, "[data-testid=undo-forget]")[0].click()
    _wait(browser, lambda d: _css(d, "[data-testid=forget]") and _status(d) != "forgotten")
    assert json.loads(env.cli("--json", "show", ids["tests"]).stdout)["status"] != "forgotten"


def test_promote(ui, browser) -> None:
    env, base, _, ids = ui
    _memory_page(browser, base, ids["tests"])
    target = _css(browser, "[data-testid=promote-target]")[0]
    target.find_element("css selector", "option[value=user]").click()
    _css(browser, "[data-testid=promote]")[0].click()
    _wait(browser, lambda d: "user" in _text(d, ".kv"))
    shown = json.loads(env.cli("--json", "show", ids["tests"]).stdout)
    assert "user" in [shown["scope"], *shown.get("also_in", [])]


def test_a_consolidation_step_approved_and_applied(ui, browser, shots) -> None:
    env, base, _, ids = ui
    _open(browser, base, "consolidate", "[data-testid=plan]")
    steps = _wait(browser, lambda d: [s for s in _css(d, "[data-testid=step]") if (s.get_attribute("data-step") or "").startswith("summarize:")])
    step = steps[0]
    links = [a.text for a in step.find_elements("css selector", "a[data-testid=memory-link]")]
    assert sorted(links) == sorted([ids["deploy1"].split(":")[1], ids["deploy2"].split(":")[1]])
    for other in _css(browser, "[data-testid=step]"):
        if other.get_attribute("data-step") != step.get_attribute("data-step"):
            other.find_element("css selector", "[data-testid=reject]").click()
    step.find_element("css selector", "[data-testid=approve]").click()
    browser.save_screenshot(str(shots / "consolidation.png"))
    apply = _css(browser, "[data-testid=apply]")[0]
    assert apply.text == "Apply 1 approved step"
    apply.click()
    applied = _wait(browser, lambda d: _css(d, "[data-testid=applied]"))[0]
    assert "Applied 1 step" in applied.text
    for key in ("deploy1", "deploy2"):
        assert json.loads(env.cli("--json", "show", ids[key]).stdout)["status"] == "consolidated"


def test_a_new_store_appears_live(ui, browser, shots) -> None:
    env, base, _, _ = ui
    _open(browser, base, "browse", "[data-testid=memory-row]")
    _wait(browser, lambda d: _text(d, "#live-state") == "live")
    browser.execute_script("window.__same_page = 'yes'")
    env.cli("store", "Live feed check: the release train leaves on Thursdays", "--type", "semantic")
    row = _wait(browser, lambda d: [r for r in _css(d, "tr.mem-row.live") if "release train" in r.text])
    assert row and browser.execute_script("return window.__same_page") == "yes", "shown without a reload"
    browser.save_screenshot(str(shots / "live.png"))


def test_another_project_is_browsed_by_its_directory(ui, browser, tmp_path) -> None:
    env, base, _, ids = ui
    other = tmp_path / "other-project"
    (other / ".git").mkdir(parents=True)
    env.cli("store", "The other project deploys with Helm charts", "--type", "semantic", cwd=other)
    browser.get(f"{base}/?project={other}#/browse")
    _wait(browser, lambda d: any("Helm charts" in r.text for r in _css(d, "[data-testid=memory-row]")))
    shown = {r.get_attribute("data-id") for r in _css(browser, "[data-testid=memory-row]")}
    assert ids["db"] not in shown, "the other project's page shows that project's memories"
    assert _css(browser, "#project")[0].get_attribute("value") == str(other)
    assert _http(f"{base}/api/list?project=relative/path", headers={"Cookie": f"engram_ui_token={ui[2]}"}) == 400
    browser.get(f"{base}/#/browse")


def test_other_pages_render(ui, browser, shots) -> None:
    _, base, _, _ = ui
    _open(browser, base, "health", "[data-testid=health-project]")
    row = _css(browser, "[data-testid=health-project]")[0]
    assert "%" in row.text and "MB" in row.text
    assert "queued writes" in _css(browser, "[data-testid=write-queue]")[0].text
    browser.save_screenshot(str(shots / "health.png"))
    _open(browser, base, "sessions", "[data-testid=session]")
    session = next(s for s in _css(browser, "[data-testid=session]") if SESSION in s.text)
    assert "injected at start:" in session.text and "nothing recorded" not in session.text
    assert session.find_elements("css selector", "a[data-testid=memory-link]"), "the injected memories link to their pages"
    browser.save_screenshot(str(shots / "sessions.png"))
    _open(browser, base, "graph", "[data-testid=graph-svg]")
    browser.save_screenshot(str(shots / "graph.png"))
