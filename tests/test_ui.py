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
        # more of what a project's memory holds, so the pages (and their screenshots) look like daily use
        for text, kind, tags in (
            ("Code review: every pull request needs two approvals before it merges to main", "semantic", ["process"]),
            ("To rotate the API keys run scripts/rotate_keys.sh, then restart the gateway pods", "procedural", ["ops", "security"]),
            ("Prefer structured logging: JSON lines with the request id on every line", "semantic", ["logging", "convention"]),
            ("The user prefers small commits with messages that say why, not what", "semantic", ["preference"]),
        ):
            client.call("store", {"content": text, "type": kind, "scope": "project", "tags": tags}, project_root=env.project)
        # a session as the hooks drive one: the context block at its start, a prompt's block
        started = client.call("hook_session_start", {"source": "startup"}, project_root=env.project, session_id=SESSION)
        assert started["additional_context"], "the session start injected a context block"
        client.call("hook_prompt", {"prompt": "how do I run the API tests?"}, project_root=env.project, session_id=SESSION)
        # stored after the start (another session's), then shown after the failed step that needed it
        client.call("store", {"content": "The staging API gateway listens on port 8443, not 443: curl https://staging:8443/health",
                              "type": "semantic", "scope": "project", "tags": ["ops"]}, project_root=env.project)
        stepped = client.call("hook_step", {"step": "$ curl https://staging:443/health -H 'X-Note: <img src=x onerror=alert(1)>'\ncurl: (7) Failed to connect to staging port 443"},
                              project_root=env.project, session_id=SESSION)
        assert "8443" in (stepped["additional_context"] or ""), stepped
    finally:
        client.close()
    assert len(set(ids.values())) == len(ids), "every seeded memory is its own"
    proc, base, token = _start_ui(env)
    try:
        yield env, base, token, ids
    finally:
        _stop_ui(proc)
        env.shutdown()


def _start_ui(env, *args: str, preexec_fn=None) -> tuple[subprocess.Popen, str, str]:
    """`engram ui --no-open` as a user runs it: (process, base URL, token) from the link it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_mcp.interfaces.cli", "ui", "--no-open", *args],
        cwd=env.project, env=env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=preexec_fn,
    )
    line = proc.stdout.readline()
    assert line.startswith("engram ui: http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
    url = line.split(": ", 1)[1].strip()
    base, token = url.split("/?token=")
    return proc, base, token


def _stop_ui(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


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


def _session_cookie(base: str, token: str) -> str:
    """The `name=value` of the session cookie the server sets when its link is opened."""
    with urllib.request.urlopen(f"{base}/?token={token}", timeout=30) as r:
        return r.headers["Set-Cookie"].split(";", 1)[0]


# ------------------------------------------------------------------ security at the HTTP level
def test_requests_without_the_token_get_403(ui) -> None:
    _, base, token, _ = ui
    assert _http(f"{base}/") == 403
    assert _http(f"{base}/api/list") == 403
    assert _http(f"{base}/api/list?token=wrong-{token[:8]}") == 403
    assert _http(f"{base}/api/live") == 403
    assert _http(f"{base}/static/app.js") == 403
    assert _http(f"{base}/api/list", headers={"X-Engram-UI": token}) == 200
    cookie = _session_cookie(base, token)
    assert token not in cookie, "the cookie never carries the token"
    assert _http(f"{base}/static/app.js", headers={"Cookie": cookie}) == 200, "the session cookie opens the page"
    assert _http(f"{base}/api/list", headers={"Cookie": cookie}) == 403, "but never the data"


def test_foreign_origin_and_host_get_403(ui) -> None:
    _, base, token, ids = ui
    cookie = {"Content-Type": "application/json", "X-Engram-UI": token}
    forget = f"{base}/api/memory/{ids['db']}/forget"
    assert _http(forget, method="POST", headers={**cookie, "Origin": "http://evil.example"}, body=b"{}") == 403
    assert _http(f"{base}/api/list", headers={**cookie, "Origin": "http://evil.example"}) == 403
    assert _http(f"{base}/api/live", headers={**cookie, "Origin": "http://127.0.0.1:1"}) == 403
    port = base.rsplit(":", 1)[1]
    assert _http(f"{base}/api/list", headers={**cookie, "Host": f"rebound.example:{port}"}) == 403
    assert _http(forget, method="POST", headers=cookie, body=b"{}") == 403, "a change needs our Origin"
    assert _http(forget, method="POST", headers={**cookie, "Origin": base, "X-Engram-UI": "0"}, body=b"{}") == 403
    env = ui[0]
    shown = json.loads(env.cli("--json", "show", ids["db"]).stdout)
    assert shown["status"] != "forgotten", "no refused request changed anything"


def test_the_link_sets_a_session_cookie_of_this_port_and_never_redirects_away(ui) -> None:
    _, base, token, _ = ui
    import http.client

    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"//evil.example/?token={token}")
    r = conn.getresponse()
    r.read()
    assert r.getheader("Location") is None and r.status == 404
    conn.request("GET", f"/?token={token}")
    r = conn.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie")
    assert r.status == 200 and cookie.startswith(f"engram_ui_{port}=") and token not in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
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
    _wait(browser, lambda d: (_css(d, "#project")[0].get_attribute("placeholder") or "").endswith("proj"))  # the project field names its project
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
    diff = history[0].find_element("css selector", "[data-testid=history-diff]")
    assert [e.text for e in diff.find_elements("css selector", "del")] == ["16"], "the change is shown as a diff"
    assert [e.text for e in diff.find_elements("css selector", "ins")] == ["17"]
    browser.save_screenshot(str(shots / "memory.png"))
    shown = json.loads(env.cli("--json", "show", ids["db"], "--history").stdout)
    assert "PostgreSQL 17" in shown["content"] and any("PostgreSQL 16" in h["snapshot"]["content"] for h in shown["history"])
    restore = history[0].find_element("css selector", "[data-testid=restore]")
    browser.execute_script("document.getElementById('toast').className = ''; arguments[0].scrollIntoView({block: 'center'})", restore)
    browser.save_screenshot(str(shots / "history.png"))
    restore.click()
    _wait(browser, lambda d: "PostgreSQL 16" in _text(d, "[data-testid=memory-full-content]"))
    restored = json.loads(env.cli("--json", "show", ids["db"], "--history").stdout)
    assert "PostgreSQL 16" in restored["content"] and len(restored["history"]) == len(shown["history"]) + 1, "restoring is an edit too"


def test_forget_and_undo(ui, browser) -> None:
    env, base, _, ids = ui
    _memory_page(browser, base, ids["tests"])
    _css(browser, "[data-testid=forget]")[0].click()
    assert "again" in _text(browser, "[data-testid=forget]"), "the first click only asks"
    assert json.loads(env.cli("--json", "show", ids["tests"]).stdout)["status"] != "forgotten"
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
    _open(browser, base, "consolidate", "[data-testid=plan][data-complete='1']")  # both parts of the plan are in
    steps = _wait(browser, lambda d: [s for s in _css(d, "[data-testid=step]") if (s.get_attribute("data-step") or "").startswith("summarize:")])
    step = steps[0]
    name = step.get_attribute("data-step")
    links = [a.get_attribute("title") for a in step.find_elements("css selector", "a[data-testid=memory-link]")]
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
    # the plan is made again: the applied step is gone from it
    _wait(browser, lambda d: _css(d, "[data-testid=plan][data-complete='1']") and name not in [s.get_attribute("data-step") for s in _css(d, "[data-testid=step]")])
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
    assert _http(f"{base}/api/list?project=relative/path", headers={"X-Engram-UI": ui[2]}) == 400
    browser.get(f"{base}/#/browse")


def test_other_pages_render(ui, browser, shots) -> None:
    _, base, _, _ = ui
    _open(browser, base, "health", "[data-testid=health-project]")
    row = _css(browser, "[data-testid=health-project]")[0]
    assert "%" in row.text and "MB" in row.text and "checked" in row.text
    _wait(browser, lambda d: "queued writes" in _text(d, "[data-testid=write-queue]"))
    browser.save_screenshot(str(shots / "health.png"))
    _open(browser, base, "sessions", "[data-testid=session]")
    session = next(s for s in _css(browser, "[data-testid=session]") if SESSION in s.text)
    injected = session.find_elements("css selector", "[data-testid=injected-start] li")
    assert injected and all(i.find_elements("css selector", "a[data-testid=memory-link]") for i in injected), "each links to its page"
    assert any("PostgreSQL" in i.text or "make test" in i.text for i in injected), "and says what it is, not only its id"
    assert "UTC" in session.text or "GMT" in session.text, "times carry their zone"
    assert "how do I run the API tests?" in session.find_element("css selector", "[data-testid=session-title]").text, "its first prompt"
    [step] = session.find_elements("css selector", "[data-testid=step]")
    assert "curl https://staging:443/health" in step.text, "which step it followed"
    assert "<img src=x onerror=alert(1)>" in step.text and not step.find_elements("css selector", "img"), "as text, never markup"
    assert "8443" in step.find_element("css selector", "[data-testid=injected-step] li").text, "and what it showed"
    browser.save_screenshot(str(shots / "sessions.png"))
    _open(browser, base, "graph", "[data-testid=graph-svg]")
    assert _css(browser, "[data-testid=graph-edge]")[0].get_attribute("marker-end") == "url(#arrow)"
    graph = _css(browser, "[data-testid=graph-svg]")[0]
    width = float(graph.get_dom_attribute("viewBox").split()[2])
    browser.execute_script("arguments[0].dispatchEvent(new WheelEvent('wheel', {deltaY: -300, clientX: 500, clientY: 400, bubbles: true, cancelable: true}))", graph)
    assert float(graph.get_dom_attribute("viewBox").split()[2]) < width, "the wheel zooms in"
    browser.save_screenshot(str(shots / "graph.png"))


# ------------------------------------------------------------------ daily use (issue 34)
def _rows(driver) -> list[str]:
    return [r.get_attribute("data-id") for r in _css(driver, "[data-testid=memory-row]")]


def _shows_memories(driver) -> bool:
    return bool(_css(driver, "[data-testid=memory-row]")) and "memories" in _text(driver, "[data-testid=result-info]")


def test_a_restarted_ui_and_a_second_ui_work_from_their_printed_links(ui, browser) -> None:
    env, base, _, _ = ui
    second, base2, token2 = _start_ui(env)
    try:
        browser.get(f"{base2}/?token={token2}#/browse")
        _wait(browser, _shows_memories)
        browser.get(f"{base}/#/browse")  # the first UI, from the same browser, still works
        _wait(browser, _shows_memories)
    finally:
        _stop_ui(second)
    port2 = base2.rsplit(":", 1)[1]
    restarted, base3, token3 = _start_ui(env, "--port", port2)
    try:
        assert base3 == base2 and token3 != token2
        browser.get(f"{base3}/?token={token3}#/browse")  # the old launch's cookie is still in the browser
        _wait(browser, _shows_memories)
        assert _http(f"{base3}/api/list", headers={"X-Engram-UI": token2}) == 403, "the old launch's token is dead"
    finally:
        _stop_ui(restarted)
        browser.get(f"{base}/#/browse")


def test_the_token_never_reaches_another_local_server(ui, browser) -> None:
    """Browsers send a host's cookies to all its ports: another server on 127.0.0.1 (a dev
    server, or one a local attacker runs) sees whatever cookie the UI set. It must never see the
    token, and nothing it sees may open the UI's data."""
    import http.server
    import threading

    _, base, token, _ = ui
    seen: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            seen.append(f"{self.requestline}\n{self.headers}")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<p>another local server</p>")

        def log_message(self, *args) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        _open(browser, base, "browse", "[data-testid=memory-row]")  # the UI's session is in the browser
        browser.get(f"http://127.0.0.1:{other.server_address[1]}/")
        _wait(browser, lambda d: seen)
    finally:
        other.shutdown()
        other.server_close()
        browser.get(f"{base}/#/browse")
    assert all(token not in request for request in seen), seen
    cookies = [line.split(":", 1)[1].strip() for request in seen for line in request.splitlines() if line.lower().startswith("cookie:")]
    for cookie in cookies:
        assert _http(f"{base}/api/list", headers={"Cookie": cookie}) == 403
        assert _http(f"{base}/api/memory/x/forget", method="POST", body=b"{}",
                     headers={"Cookie": cookie, "Origin": base, "X-Engram-UI": "1", "Content-Type": "application/json"}) == 403


def test_seven_tabs_and_a_search_answer_within_2_s(ui, browser) -> None:
    _, base, token, _ = ui
    assert _http(f"{base}/api/search?q=warm+the+model&token={token}") == 200
    first = browser.current_window_handle
    opened = []
    try:
        for _ in range(7):
            browser.switch_to.new_window("tab")
            opened.append(browser.current_window_handle)
            browser.get(f"{base}/#/browse")
            _wait(browser, _shows_memories)
        browser.switch_to.window(first)
        _open(browser, base, "browse", "[data-testid=memory-row]")
        for _ in range(6):  # rapid navigation
            for page in ("sessions", "health", "browse"):
                browser.execute_script("location.hash = arguments[0]", f"#/{page}")
        _wait(browser, lambda d: d.execute_script("return document.querySelector('main').dataset.page") == "browse")
        _css(browser, "[data-testid=search-input]")[0].send_keys("payments deploy")
        _css(browser, "[data-testid=search-button]")[0].click()
        _wait(browser, lambda d: "matched" in _text(d, "[data-testid=result-info]"), timeout=2)
    finally:
        for handle in opened:
            browser.switch_to.window(handle)
            browser.close()
        browser.switch_to.window(first)


FETCH_PROBE = """
window.__started = []; window.__settled = [];
const original = window.fetch;
window.fetch = (...args) => {
  const url = String(args[0]);
  window.__started.push(url);
  const p = original(...args);
  p.then((r) => r.clone().text()).then(() => window.__settled.push(url), () => window.__settled.push(url));
  return p;
};
"""


def test_a_slow_answer_for_a_view_left_is_never_shown(ui, browser) -> None:
    _, base, _, ids = ui
    _open(browser, base, "sessions", "[data-testid=session]")
    browser.execute_script(FETCH_PROBE)
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 400, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        mid = ids["db"].split(":", 1)[1]
        browser.execute_script("location.hash = arguments[0]", f"#/memory/{mid}")
        _wait(browser, lambda d: d.execute_script("return window.__started.some((u) => u.includes('/api/memory/'))"))
        browser.execute_script("location.hash = '#/sessions'")
        _wait(browser, lambda d: _css(d, "[data-testid=session]"))
        _wait(browser, lambda d: d.execute_script("return window.__settled.some((u) => u.includes('/api/memory/'))"))
        # the memory's answer has been read: one more turn of the event loop lets any code awaiting it run
        browser.execute_async_script("setTimeout(arguments[0], 200)")
        assert browser.execute_script("return document.querySelector('main').dataset.page") == "sessions"
        assert _css(browser, "[data-testid=memory-full-content]") == [], "the memory page was painted onto Sessions"
        assert _css(browser, "[data-testid=forget]") == []
    finally:
        browser.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})


def _counts(env, mid: str) -> tuple:
    shown = json.loads(env.cli("--json", "show", mid).stdout)
    return shown["access_count"], shown.get("last_accessed_at"), shown["status"]


def test_a_ui_search_changes_nothing(ui, browser) -> None:
    env, base, _, ids = ui
    before = _counts(env, ids["graph"])
    _open(browser, base, "browse", "[data-testid=search-input]")
    _css(browser, "[data-testid=search-input]")[0].send_keys("payments service PostgreSQL pgbouncer")
    _css(browser, "[data-testid=search-button]")[0].click()
    _wait(browser, lambda d: ids["graph"] in _rows(d))
    # a recall's strengthening is written behind it, before the next statement on its store: the show below
    assert _counts(env, ids["graph"]) == before


def _search(driver, base: str, query: str, **filters: str) -> None:
    """A search through the form, with the filters named (select values or the tag text)."""
    from selenium.webdriver.support.ui import Select

    _open(driver, base, "browse", "[data-testid=search-input]")
    box = _css(driver, "[data-testid=search-input]")[0]
    box.clear()
    box.send_keys(query)
    for name, value in filters.items():
        Select(_css(driver, f"[data-testid=filter-{name}]")[0]).select_by_value(value)
    _css(driver, "[data-testid=search-button]")[0].click()
    _wait(driver, lambda d: "matched" in _text(d, "[data-testid=result-info]") or _css(d, "[data-testid=error]"))


def test_search_honours_every_filter_and_pages(ui, browser) -> None:
    env, base, _, ids = ui
    client = env.client("ui-filters")
    try:
        gone = client.call("store", {"content": "Obsolete: the staging cluster ran on Nomad", "type": "semantic", "scope": "project"}, project_root=env.project)["memory_id"]
        client.call("forget", {"memory_id": gone, "reason": "moved to Kubernetes"}, project_root=env.project)
        for i in range(22):
            client.call("store", {"content": f"Paging probe {i}: runbook step {i} for the payments queue worker", "type": "semantic", "scope": "project", "dedup": False}, project_root=env.project)
    finally:
        client.close()
    _search(browser, base, "staging cluster Nomad")
    assert gone not in _rows(browser), "a forgotten memory is not recallable by default"
    _search(browser, base, "staging cluster Nomad", status="forgotten")
    assert _rows(browser) and set(_rows(browser)) == {gone}, "status: forgotten shows only forgotten ones"
    _search(browser, base, "run the API tests", type="procedural")
    assert _rows(browser) and ids["db"] not in _rows(browser)
    _search(browser, base, "payments", age="90d+")
    assert _rows(browser) == [] and _css(browser, "[data-testid=empty]"), "nothing here is older than 90 days"
    _search(browser, base, "payments queue worker runbook")
    first_page = _rows(browser)
    assert len(first_page) == 20 and "page 1 of" in _text(browser, "[data-testid=result-info]")
    _css(browser, "[data-testid=next-page]")[0].click()
    _wait(browser, lambda d: "page 2 of" in _text(d, "[data-testid=result-info]"))
    assert _rows(browser) and not set(_rows(browser)) & set(first_page)


def test_a_hung_daemon_is_said_on_the_page_within_5_s(ui, browser) -> None:
    import signal

    env, base, _, _ = ui
    client = env.client("ui-pid")
    try:
        pid = client.call("ping")["pid"]
    finally:
        client.close()
    _open(browser, base, "browse", "[data-testid=memory-row]")
    os.kill(pid, signal.SIGSTOP)
    try:
        browser.execute_script("location.hash = '#/health'")
        notice = _wait(browser, lambda d: [n for n in _css(d, "[data-testid=slow], [data-testid=error]") if n.is_displayed()], timeout=5)
        assert "daemon" in notice[0].text
    finally:
        os.kill(pid, signal.SIGCONT)
    _wait(browser, lambda d: _css(d, "[data-testid=health-project]") or _css(d, "[data-testid=error]"))
    _open(browser, base, "health", "[data-testid=health-project]")  # and it recovers


def test_an_unknown_project_folder_is_an_error_and_creates_nothing(ui, browser, tmp_path) -> None:
    _, base, token, _ = ui
    folder = tmp_path / "typo"
    folder.mkdir()
    browser.get(f"{base}/?project={folder}#/browse")
    error = _wait(browser, lambda d: _css(d, "[data-testid=error]"))[0]
    assert "no engram memory" in error.text
    assert not (folder / ".claude").exists()
    assert _http(f"{base}/api/list?project=/", headers={"X-Engram-UI": token}) == 400
    assert not Path("/.claude/engram").exists()
    browser.get(f"{base}/#/browse")


def test_a_thousand_idle_connections_leave_a_request_answered_within_1_s(ui) -> None:
    """As a local user without the token could: connections that send nothing, or trickle their
    headers. The UI starts with the usual soft limit of 1,024 descriptors."""
    import resource
    import socket

    env = ui[0]

    def usual_limit() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    proc, base, token = _start_ui(env, preexec_fn=usual_limit)
    port = int(base.rsplit(":", 1)[1])
    idle: list[socket.socket] = []
    try:
        for i in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 10 == 0:
                s.sendall(b"GET /api/list HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never finishes
            idle.append(s)
        started = time.monotonic()
        assert _http(f"{base}/api/list?token={token}") == 200
        assert time.monotonic() - started < 1.0
        import selectors

        sel = selectors.DefaultSelector()
        for s in idle:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        closed = 0
        while closed < len(idle) and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                try:
                    data = key.fileobj.recv(4096)
                except (ConnectionResetError, BlockingIOError):
                    data = b""
                if not data:
                    sel.unregister(key.fileobj)
                    closed += 1
        assert closed == len(idle), f"{len(idle) - closed} idle connections are still open after 30 s"
    finally:
        for s in idle:
            s.close()
        _stop_ui(proc)


def test_cli_port_errors_and_json(ui) -> None:
    import socket

    env = ui[0]
    for bad in ("70000", "-1"):
        r = env.cli("ui", "--no-open", "--port", bad, check=False)
        assert r.returncode != 0 and "out of range" in r.stderr and "Traceback" not in r.stderr, r.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = env.cli("ui", "--no-open", "--port", str(port), check=False)
    assert r.returncode != 0 and "is taken" in r.stderr and "--port" in r.stderr and "Traceback" not in r.stderr, r.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_mcp.interfaces.cli", "ui", "--no-open", "--json"],
        cwd=env.project, env=env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        shown = json.loads(proc.stdout.readline())
        assert shown["pid"] == proc.pid and shown["url"].startswith(f"http://127.0.0.1:{shown['port']}/?token=")
    finally:
        _stop_ui(proc)


def test_a_430_px_window_does_not_scroll_sideways(ui, browser, shots) -> None:
    _, base, _, ids = ui
    size = browser.get_window_size()
    browser.set_window_size(430, 900)
    try:
        for view, ready in (("browse", "[data-testid=memory-row]"), (f"memory/{ids['db'].split(':', 1)[1]}", "[data-testid=memory-full-content]"),
                            ("sessions", "[data-testid=session]"), ("health", "[data-testid=health-project]"), ("consolidate", "[data-testid=plan]")):
            _open(browser, base, view, ready)
            inner, scroll = browser.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
            assert scroll <= inner, f"{view}: the page is {scroll} px wide in a {inner} px window"
        _open(browser, base, "browse", "[data-testid=memory-row]")
        browser.save_screenshot(str(shots / "narrow.png"))
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_mark_superseded_by_the_short_id_the_page_shows(ui, browser) -> None:
    env, base, token, _ = ui
    client = env.client("ui-short-ids")
    try:
        older = client.call("store", {"content": "CI runs on a self-hosted Jenkins", "type": "semantic", "scope": "project"}, project_root=env.project)["memory_id"]
        newer = client.call("store", {"content": "CI moved to GitHub Actions in March", "type": "semantic", "scope": "project"}, project_root=env.project)["memory_id"]
    finally:
        client.close()
    _memory_page(browser, base, older)
    shown = "…" + newer.split(":", 1)[1][-8:]  # as the page writes it
    box = _css(browser, "[data-testid=superseded-by]")[0]
    box.send_keys(shown)
    _css(browser, "[data-testid=mark-superseded]")[0].click()
    _wait(browser, lambda d: any("supersedes" in li.text for li in _css(d, "[data-testid=links] li")))
    links = json.loads(env.cli("--json", "show", newer).stdout)["links"]
    assert {"from": newer, "to": older, "relation": "supersedes"} in links
    assert _http(f"{base}/api/memory/ABC?token={token}") == 400, "too short to name one memory"
    assert _http(f"{base}/api/memory/{older.split(':', 1)[1][-8:]}?token={token}") == 200


def test_a_live_sessions_own_memories_show_and_the_session_filter_counts_them(ui, browser) -> None:
    env, base, _, _ = ui
    client = env.client("ui-session-scope")
    try:
        own = [client.call("store", {"content": f"Scratch for this session {i}: the flaky test is test_retry_{i}", "type": "working", "scope": "session"},
                           project_root=env.project, session_id=SESSION)["memory_id"] for i in range(3)]
    finally:
        client.close()
    _open(browser, base, "sessions", "[data-testid=session]")
    session = next(s for s in _css(browser, "[data-testid=session]") if SESSION in s.text)
    shown = {a.get_attribute("title") for a in session.find_elements("css selector", "[data-testid=session-scope] a")}
    assert {m.split(":", 1)[1] for m in own} <= shown, "the live session's own memories are on its card"
    heading = next(h.text for h in session.find_elements("css selector", "h3") if "session scope" in h.text)
    count = int(heading.rsplit("(", 1)[1].rstrip(")"))
    session.find_element("css selector", "[data-testid=browse-session]").click()
    _wait(browser, lambda d: f"{count} memories of session {SESSION}" in _text(d, "[data-testid=result-info]"))
    assert set(own) <= set(_rows(browser))
    browser.get(f"{base}/#/browse")


def test_text_merged_in_by_dedup_shows_and_an_unchanged_importance_is_no_change(ui, browser) -> None:
    env, base, _, _ = ui
    text = "The nightly backup of the orders database runs at 02:00 UTC and keeps 14 days"
    first = json.loads(env.cli("--json", "store", text, "--type", "semantic", "--importance", "0.6").stdout)
    again = json.loads(env.cli("--json", "store", text + ".", "--type", "semantic").stdout)
    assert again["action"] == "merged" and again["memory_id"] == first["memory_id"], again
    _memory_page(browser, base, first["memory_id"])
    merged = _wait(browser, lambda d: _css(d, "[data-testid=merged-text]"))
    assert text + "." in merged[0].text, "the merged-in text is on the memory's page"
    rows = len(_css(browser, "[data-testid=history-row]"))
    assert any("merged a near-duplicate" in r.text for r in _css(browser, "[data-testid=history-row]"))
    box = _css(browser, "[data-testid=edit-importance]")[0]
    box.clear()
    box.send_keys("0.6")
    _css(browser, "[data-testid=save-importance]")[0].click()
    _wait(browser, lambda d: "nothing changed" in _text(d, "#toast"))
    _memory_page(browser, base, first["memory_id"])
    assert len(_css(browser, "[data-testid=history-row]")) == rows, "no version for an importance that did not change"
    assert not any("importance 0.60 → 0.60" in r.text for r in _css(browser, "[data-testid=history-row]"))


def test_the_graph_with_no_entity_is_spread_out_and_an_unknown_one_is_said(ui, browser, shots) -> None:
    import itertools
    import math

    env, base, _, _ = ui
    services = ["checkout", "billing", "ledger", "notifier", "search", "catalog", "auth", "gateway", "reports", "scheduler", "inventory", "shipping"]
    client = env.client("ui-graph")
    try:
        client.call("store", {
            "content": "The gateway routes to every backend service; each one writes to kafka and reads its config from vault",
            "type": "semantic", "scope": "project",
            "related_entities": [{"name": n, "type": "service", "relationship": "uses", "target": "kafka"} for n in services]
            + [{"name": "gateway", "type": "service", "relationship": "routes_to", "target": n} for n in services[:6]]
            + [{"name": n, "type": "service", "relationship": "reads", "target": "vault"} for n in services[6:]],
        }, project_root=env.project)
    finally:
        client.close()
    _open(browser, base, "graph", "[data-testid=graph-svg] circle")
    nodes = [(float(c.get_attribute("cx")), float(c.get_attribute("cy"))) for c in _css(browser, "[data-testid=graph-svg] circle")]
    assert len(nodes) >= 14
    closest = min(math.dist(a, b) for a, b in itertools.combinations(nodes, 2))
    xs, ys = [x for x, _ in nodes], [y for _, y in nodes]
    assert closest >= 25, f"nodes overlap: two are {closest:.1f} units apart"
    assert max(xs) - min(xs) >= 450 and max(ys) - min(ys) >= 250, "the nodes fill the drawing, not a small cluster"
    browser.save_screenshot(str(shots / "graph.png"))
    _open(browser, base, "graph/no-such-entity", "[data-testid=graph] [data-testid=empty]")
    assert 'No entity named "no-such-entity"' in _text(browser, "[data-testid=graph] [data-testid=empty]")


def test_errors_on_the_page_name_what_a_person_does_not_mcp_tools(ui) -> None:
    from engram_mcp.core.operations import TOOL_NAMES
    from engram_mcp.interfaces.ui.server import PAGE_FOR_TOOL_PHRASE, for_page

    assert set(TOOL_NAMES) <= {phrase for phrase, _ in PAGE_FOR_TOOL_PHRASE}, "every tool has what a person does instead"
    assert not any(tool in for_page(" ".join(TOOL_NAMES)) for tool in TOOL_NAMES)
    _, base, token, _ = ui
    req = urllib.request.Request(f"{base}/api/memory/01ARZ3NDEKTSV4RRFFQ69G5FAV", headers={"X-Engram-UI": token})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    message = json.loads(err.value.read())["error"]["message"]
    assert err.value.code == 404 and "search for it in Browse" in message and "recall_memories" not in message, message


def test_a_body_trickled_after_the_headers_is_cut_off(ui) -> None:
    """After complete headers, a body sent a byte at a time must not hold the connection (and a
    worker waiting on it) for ever: with the token (the route reads the body) and without it."""
    import select
    import socket

    from engram_mcp.interfaces.ui.server import BODY_READ_TIMEOUT_S

    _, base, token, _ = ui
    port = int(base.rsplit(":", 1)[1])
    for auth in (f"X-Engram-UI: {token}\r\nOrigin: {base}\r\n", ""):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall((f"POST /api/memory/ABCDEFGH/update HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}"
                       "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{").encode())
            started, closed = time.monotonic(), False
            while time.monotonic() - started < BODY_READ_TIMEOUT_S + 10 and not closed:
                readable, _, _ = select.select([s], [], [], 0.5)  # the pace of the trickle: one byte per half second
                if readable:
                    try:
                        closed = s.recv(65536) == b"" or closed
                    except ConnectionResetError:
                        closed = True
                    continue
                try:
                    s.sendall(b" ")
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
            assert closed, f"a trickled body held the connection for {time.monotonic() - started:.0f} s ({'with' if auth else 'without'} the token)"
            assert time.monotonic() - started < BODY_READ_TIMEOUT_S + 5
        finally:
            s.close()
    assert _http(f"{base}/api/list?token={token}") == 200
