"""`engram ui` hands its token to the browser through a private file, never on a command line.

`webbrowser.open(url)` runs `xdg-open URL` (or `$BROWSER URL`); a process's command line is
readable by every local user in /proc/<pid>/cmdline, and a browser started cold keeps it for its
whole life, so a token in that URL let another local user read and rewrite the user's memories.
The browser is now given `file://` a 0600 redirect page in a 0700 directory, which holds the
token; following it opens the UI. `serve` runs in-process here (a stand-in daemon, the real
Guard, the real uvicorn server on a free port), so these tests take well under a second.
"""

from __future__ import annotations

import html
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import webbrowser
from pathlib import Path

import pytest
import uvicorn

from engram_mcp.interfaces.ui import server as ui

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# what a browser sends when a file:// page (an opaque origin) navigates to the UI
FROM_FILE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
REFRESH = re.compile(r'<meta http-equiv="refresh" content="0;\s*url=([^"]+)">', re.I)


class StandInDaemon:
    """`Backend` without a daemon: records the operations the page's API calls reach."""

    calls: list[str] = []

    def __init__(self, project: Path, session: str | None, user_dir: Path | None = None) -> None:
        self.project = project

    def call(self, op: str, args=None, project=None, session=None):
        StandInDaemon.calls.append(op)
        return {"memories": [], "total": 0}


class Running:
    """`serve` in a thread, with what it printed and what it gave the browser."""

    def __init__(self, monkeypatch, capsys, tmp_path: Path, opener=None, open_browser: bool = True) -> None:
        self.opened: list[str] = []
        self.servers: list[uvicorn.Server] = []
        StandInDaemon.calls = []
        servers = self.servers

        class Recorded(uvicorn.Server):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, **kwargs)
                servers.append(self)

        def fake_open(url: str, *args, **kwargs) -> bool:
            self.opened.append(url)
            if opener is not None:
                opener(url)
            return True

        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(self.tmp))  # where mkdtemp makes the private dir
        monkeypatch.setattr(ui, "Backend", StandInDaemon)
        monkeypatch.setattr(ui, "display_available", lambda: True)
        monkeypatch.setattr(webbrowser, "open", fake_open)
        monkeypatch.setattr(uvicorn, "Server", Recorded)
        self.capsys = capsys
        self.thread = threading.Thread(
            target=ui.serve, args=(tmp_path, None), kwargs={"open_browser": open_browser}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not (self.servers and self.servers[0].started) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.servers and self.servers[0].started, "serve() is serving"
        line = capsys.readouterr().out.strip().splitlines()[0]
        assert line.startswith("engram ui: http://127.0.0.1:"), line
        self.url = line.split(": ", 1)[1]
        self.base, self.token = self.url.split("/?token=")

    def stop(self) -> None:
        for server in self.servers:
            server.should_exit = True
        self.thread.join(10)
        assert not self.thread.is_alive(), "the server stopped"


@pytest.fixture
def start(monkeypatch, capsys, tmp_path):
    running: list[Running] = []

    def _start(**kwargs) -> Running:
        running.append(Running(monkeypatch, capsys, tmp_path, **kwargs))
        return running[-1]

    yield _start
    for r in running:
        r.stop()


def _get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _handoff_file(opened: str) -> Path:
    parsed = urllib.parse.urlparse(opened)
    assert parsed.scheme == "file" and not parsed.query and not parsed.fragment, opened
    return Path(urllib.parse.unquote(parsed.path))


def test_the_browser_gets_a_private_redirect_file_and_never_the_token(start) -> None:
    r = start()
    assert len(r.opened) == 1, "the browser was opened once"
    opened = r.opened[0]
    assert r.token not in opened and "token" not in opened, f"the browser's command line would hold the token: {opened}"
    path = _handoff_file(opened)

    st, dst = path.lstat(), path.parent.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    assert stat.S_ISDIR(dst.st_mode) and stat.S_IMODE(dst.st_mode) == 0o700, oct(dst.st_mode)
    assert st.st_uid == dst.st_uid == os.getuid()
    assert path.parent.parent == r.tmp, "a directory of its own, made by mkdtemp"

    page = path.read_text(encoding="utf-8")
    found = REFRESH.search(page)
    assert found, page
    target = html.unescape(found.group(1))
    assert target == r.url and r.token in target, "the file redirects to this launch's link"
    pointers = {html.unescape(u) for u in re.findall(r'(?:url=|href=|src=)"?([^">]+)', page)}
    assert pointers == {target} and "<script" not in page, f"nothing but the redirect (and a link to it): {page}"

    # following the redirect, as a browser does from a file:// page, opens the UI
    status, headers, body = _get(target, FROM_FILE)
    assert status == 200, body
    assert b"<html" in body.lower()
    port = r.base.rsplit(":", 1)[1]
    cookie = headers.get("set-cookie", "").split(";", 1)[0]
    assert cookie.startswith(f"engram_ui_{port}=") and r.token not in cookie, cookie
    # ... then the page's own files with the cookie, and the API with the token header, as the page does
    same_origin = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    assert _get(f"{r.base}/static/app.js", {"Cookie": cookie, **same_origin})[0] == 200
    status, _, body = _get(f"{r.base}/api/list", {"X-Engram-UI": r.token, **same_origin})
    assert status == 200 and "list" in StandInDaemon.calls, body

    # the exception is only that navigation with the right token: the rest stays closed
    assert _get(f"{r.base}/?token=wrong", FROM_FILE)[0] == 403
    assert _get(f"{r.base}/api/list?token={r.token}", FROM_FILE)[0] == 403, "no data for a cross-site request"
    cross_fetch = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    assert _get(f"{r.base}/?token={r.token}", cross_fetch)[0] == 403, "a cross-site fetch is no navigation"
    assert _get(f"{r.base}/api/list", {"X-Engram-UI": r.token, **cross_fetch})[0] == 403
    assert _get(f"{r.base}/api/list", {"Cookie": cookie})[0] == 403, "the cookie alone opens no data"

    r.stop()
    assert not path.exists() and not path.parent.exists(), "the file (and its directory) go when the server stops"


def test_no_open_opens_nothing_and_writes_no_file(start) -> None:
    r = start(open_browser=False)
    assert r.opened == []
    assert list(r.tmp.iterdir()) == [], "no redirect file without a browser to open"
    status, _, _ = _get(r.url, {})  # the printed link works as before
    assert status == 200


CHILD = """
import sys, time, webbrowser
from pathlib import Path
from engram_mcp.interfaces.ui import server as ui

class StandIn:
    def __init__(self, project, session, user_dir=None):
        self.project = project
    def call(self, *args, **kwargs):
        return {}

def opened(url, *args, **kwargs):
    print("OPENED " + url, flush=True)
    if sys.argv[2] == "waits":
        time.sleep(60)  # webbrowser waits for a $BROWSER command: a browser started cold, for its life
    return True

ui.Backend = StandIn
ui.display_available = lambda: True
webbrowser.open = opened
sys.exit(ui.serve(Path(sys.argv[1]), None))
"""


def _default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("launcher", ["returns", "waits"])
@pytest.mark.parametrize(
    ("signum", "returncode"),
    [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP), (signal.SIGINT, 0)],
    ids=["SIGTERM", "SIGHUP", "Ctrl-C"],
)
def test_the_file_goes_when_the_server_is_stopped_by_a_signal(tmp_path, signum, returncode, launcher) -> None:
    """uvicorn stops on SIGTERM and then dies of it again, a closed terminal sends SIGHUP: neither
    reaches a `finally`, and the file must go all the same; the exit status stays the signal's.
    Also while the browser launcher is still running (webbrowser waits for a `$BROWSER`)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), launcher],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # as a terminal starts it, whatever started the suite: under nohup or as a background job
        # SIGHUP or SIGINT arrive ignored, and the server rightly keeps them ignored
        preexec_fn=_default_signals,
    )
    try:
        base = proc.stdout.readline().split(": ", 1)[1].split("/?token=")[0]
        path = _handoff_file(proc.stdout.readline().strip().removeprefix("OPENED "))
        assert path.is_file() and path.parent.parent == tmp
        if launcher == "returns":
            deadline = time.monotonic() + 10
            while _get(base, {})[0] != 403 and time.monotonic() < deadline:  # serving (and refusing no token)
                time.sleep(0.05)
        else:
            time.sleep(0.2)  # inside the launcher's wait
        proc.send_signal(signum)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)
        proc.stdout.close()
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert proc.returncode == returncode, stderr
    assert not path.exists() and not path.parent.exists(), stderr


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (`make setup` installs it)")
def test_a_real_browser_follows_the_file_and_the_page_reaches_the_api(start, tmp_path) -> None:
    procs: list[subprocess.Popen] = []

    def chromium(url: str) -> None:
        procs.append(
            subprocess.Popen(
                [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tmp_path / 'profile'}", url],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        )

    try:
        r = start(opener=chromium)
        assert r.opened and r.opened[0].startswith("file://"), r.opened
        deadline = time.monotonic() + 30
        while "list" not in StandInDaemon.calls and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "list" in StandInDaemon.calls, "the page opened from the file called the API with the token"
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
