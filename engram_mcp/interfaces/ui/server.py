"""`engram ui`: a local web page to see and curate memory (Starlette on uvicorn, loopback only).

An interface like the CLI: every read and every change is one daemon operation through
`DaemonClient` (core/operations.py), so edits keep their history exactly as `engram update`
does. The page is static HTML + JavaScript modules + CSS from this package (no build step, no
CDN); memory text reaches the DOM only as text (`textContent`), never as markup.

Security model (stored memories are untrusted text from tool output and web pages):
- bound to 127.0.0.1 only, on a random free port unless `--port` is given;
- a random token per launch (`secrets.token_urlsafe`), given once in the URL that is printed
  (to the user's own terminal) and never on a command line: the browser is opened on a
  redirect file instead (see `open_browser_privately`), as Jupyter does, because the command
  line of the browser launcher, and of the browser itself on a cold start, is readable by every
  local user in /proc/<pid>/cmdline. The token never goes into a cookie: browsers send a
  host's cookies to every port of it, so a cookie holding the token would reach any other
  server on 127.0.0.1.
  The first request with the token gets instead a second per-launch random value, the session,
  in an HttpOnly, SameSite=Strict cookie named after the port (`engram_ui_<port>`), which opens
  only the static page (no data). The API needs the token itself in the `X-Engram-UI` header:
  the page keeps it in its origin's localStorage, which no other port's page can read. A cookie
  from another launch or another port matches nothing here, and `?token=` in the URL wins over
  any cookie, so a restarted UI and two UIs at once each work from their printed link. Every
  other request gets 403, so another local user or another local server that has the cookie
  cannot read or change anything;
- connections must send their request headers within HEADER_READ_TIMEOUT_S and a request's
  body within BODY_READ_TIMEOUT_S of its headers, and idle ones are closed after KEEP_ALIVE_S,
  so idle or trickling connections cannot use up the descriptors (or the workers) before the
  token is ever checked;
- `Host` must be this server (127.0.0.1:<port> or localhost:<port>), against DNS rebinding;
- a request carrying an `Origin` that is not ours gets 403, and so does one whose
  `Sec-Fetch-Site` says another site, except the top-level navigation to the page that carries
  this launch's token (what a browser sends when it follows the redirect file, which has an
  opaque file:// origin: whoever has the token needs no browser); a state-changing request (POST)
  must carry our `Origin` (and, as every API call, the token header no cross-site form can send);
- a strict Content-Security-Policy (no inline script, nothing from elsewhere, no framing),
  nosniff, no referrer, no caching of API answers.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import resource
import secrets
import signal
import socket
import sys
import tempfile
import threading
import webbrowser
from html import escape
from pathlib import Path
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engram_mcp.core import operations
from engram_mcp.core.errors import DaemonUnavailable, EngramError, InvalidInput
from engram_mcp.core.paths import project_dir, resolve_project_root
from engram_mcp.core.schemas import SESSION_PATTERN
from engram_mcp.daemon.client import DaemonClient

STATIC_DIR = Path(__file__).resolve().parent / "static"
COOKIE_PREFIX = "engram_ui_"  # + the port: one cookie per UI, never the token itself
CSRF_HEADER = "x-engram-ui"  # carries the token on every API call (no form can send it)
LOOPBACK = "127.0.0.1"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
LIVE_WINDOW = 50  # newest memories a live poll returns (the page compares them with what it has shown)
CALL_TIMEOUT_S = 10.0  # a read the daemon does not answer in this is an error on the page, not a blank one
SLOW_CALL_TIMEOUT_S = 60.0  # a consolidation plan or apply at 10k takes seconds
SLOW_OPS = frozenset({"consolidate", "consolidate_steps"})
SEARCH_PAGE_LIMIT = 50  # results on one page of a search
HEADER_READ_TIMEOUT_S = 10.0  # a connection must send a request's headers within this
BODY_READ_TIMEOUT_S = 10.0  # and, once they are in, the whole body within this
KEEP_ALIVE_S = 5.0  # an idle kept-alive connection is closed after this
MAX_HEADER_BYTES = 64 * 1024  # h11's limit on an incomplete request head
LISTEN_BACKLOG = 1024
WANTED_OPEN_FILES = 8192  # soft descriptor limit the server raises itself to (within the hard one)
PAGES = ("/", "/index.html")
SESSION_ID = re.compile(SESSION_PATTERN.strip("^$"))
ULID_CHARS = 26  # a whole memory id; anything shorter is looked up (`resolve_id`)
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html"}


class Backend:
    """The daemon, as the routes use it: one client per server thread (a client is one connection
    and not thread-safe), all calls in the project the UI was started in."""

    def __init__(self, project: Path, session: str | None, user_dir: Path | None = None) -> None:
        self.project = project
        self.session = session
        self.user_dir = user_dir
        self._local = threading.local()

    def call(
        self, op: str, args: dict[str, Any] | None = None, project: Path | None = None, session: str | None = None
    ) -> Any:
        """One daemon operation in `project` (default: the one the UI was started in), as `session`
        (default: the UI's own; browsing a live session's scope names that session).

        Bounded by CALL_TIMEOUT_S (SLOW_CALL_TIMEOUT_S for consolidation): a hung daemon is an
        error the page shows within seconds, not a blank page for the client's 120 s."""
        if operations.get(op) is None:
            raise ValueError(f"{op!r} is not an engram operation")  # a bug here, not the user's input
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = DaemonClient(self.user_dir, client_name="ui")
        timeout = SLOW_CALL_TIMEOUT_S if op in SLOW_OPS else CALL_TIMEOUT_S
        try:
            return client.call(
                op,
                args or {},
                project_root=project or self.project,
                session_id=session or self.session,
                timeout=timeout,
            )
        except DaemonUnavailable:
            client.close()  # a late reply must not be read as the answer to the next call
            self._local.client = None
            raise


def project_of(request: Request, own: Path) -> Path | None:
    """The project a request names (`?project=<directory>`, as `engram --project` takes one), or None
    for the UI's own.

    Looking never creates a store: a folder whose project root (resolved as the daemon does) has
    no engram store yet is refused here, so a typo or `?project=/` is an error on the page
    instead of a `.claude/engram` made wherever it points."""
    raw = request.query_params.get("project", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute() or not path.is_dir():
        raise InvalidInput(f"project {raw[:200]!r} is not a directory (give its absolute path)", field="project")
    root = resolve_project_root(path)
    if root == resolve_project_root(own):
        return None
    if not project_dir(root).is_dir():
        raise InvalidInput(
            f"no engram memory in {str(root)[:200]!r} (its project has no .claude/engram; engram creates one "
            "when a session there stores something)",
            field="project",
        )
    return root


def session_of(request: Request) -> str | None:
    """The session whose own scope a browse names (`?session=`, a live session from the Sessions
    page), or None: the session scope is per session, and the UI has none of its own."""
    raw = request.query_params.get("session", "").strip()
    if not raw:
        return None
    if not SESSION_ID.fullmatch(raw):
        raise InvalidInput("session must be a session id (letters, digits, - and _)", field="session")
    return raw


def _our_hosts(port: int) -> set[str]:
    return {f"{LOOPBACK}:{port}", f"localhost:{port}"}


class Guard:
    """The security checks of every request, before any route (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str, port_of: Callable[[], int], session: str | None = None) -> None:
        self.app = app
        self.token = token
        self.session = session or secrets.token_urlsafe(32)  # what the cookie carries: never the token
        self.port_of = port_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        denied = self.check(request)
        if denied is not None:
            await _with_headers(PlainTextResponse(denied, status_code=403))(scope, receive, send)
            return
        # A page opened with this launch's token gets this launch's session cookie (never the
        # token); the page itself keeps the token for its API calls and drops it from the address.
        fresh_session = request.query_params.get("token") is not None and not _is_api(request)

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                for k, v in SECURITY_HEADERS.items():
                    if k.encode() not in present:
                        headers.append((k.encode(), v.encode()))
                if (_is_api(request) or fresh_session) and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                if fresh_session:
                    headers.append((b"set-cookie", self.session_cookie().encode("latin-1")))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def session_cookie(self) -> str:
        """`Set-Cookie` for this launch's session: HttpOnly, SameSite=Strict, named after the port."""
        response = Response()
        response.set_cookie(cookie_name(self.port_of()), self.session, httponly=True, samesite="strict", path="/")
        return response.headers["set-cookie"]

    def check(self, request: Request) -> str | None:
        """Why the request is refused, or None."""
        port = self.port_of()
        host = request.headers.get("host", "")
        if host not in _our_hosts(port):
            return "forbidden: unknown Host"
        ours = {f"http://{h}" for h in _our_hosts(port)}
        origin = request.headers.get("origin")
        if origin is not None and origin not in ours:
            return "forbidden: foreign Origin"
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none") and not self.opens_the_page(request):
            return "forbidden: cross-site request"
        if not self.authenticated(request, port):
            return "forbidden: missing or wrong token (open the URL `engram ui` printed)"
        if request.method not in ("GET", "HEAD") and origin is None:
            return "forbidden: a change needs the page's Origin"
        return None

    def opens_the_page(self, request: Request) -> bool:
        """Whether the request is the browser following this launch's link from the redirect file
        (`open_browser_privately`): a file:// page has an opaque origin, so its navigation says
        `Sec-Fetch-Site: cross-site`. Only a top-level GET of the page with this launch's token
        qualifies; it gets the page and the session cookie, never data, and a page elsewhere
        that could build it already has the token."""
        if request.method not in ("GET", "HEAD") or request.url.path not in PAGES:
            return False
        if request.headers.get("sec-fetch-mode", "navigate") != "navigate":
            return False
        if request.headers.get("sec-fetch-dest", "document") != "document":
            return False
        supplied = request.query_params.get("token")
        return supplied is not None and secrets.compare_digest(supplied.encode(), self.token.encode())

    def authenticated(self, request: Request, port: int) -> bool:
        """Whether the request proves it comes from this launch's link.

        The URL's token wins over anything else (a link from a new launch works whatever an old
        launch left in the browser). The API needs the token itself, in the `X-Engram-UI` header
        the page sends (or `?token=`): the page keeps it in its origin's storage, which no other
        port's page can read. The session cookie, which the browser also sends to every other
        server on 127.0.0.1, opens only the static page and its scripts, never the data."""
        supplied = request.query_params.get("token")
        if supplied is None and _is_api(request):
            supplied = request.headers.get(CSRF_HEADER, "")
        if supplied is not None:
            return secrets.compare_digest(supplied.encode(), self.token.encode())
        cookie = request.cookies.get(cookie_name(port), "")
        return secrets.compare_digest(cookie.encode(), self.session.encode())


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def cookie_name(port: int) -> str:
    """One cookie per port: browsers do not separate cookies by port, names do."""
    return f"{COOKIE_PREFIX}{port}"


def _with_headers(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers[k] = v
    return response


# ------------------------------------------------------------------ routes
# Tool names in messages written for the MCP interface (the service's errors and hints name the
# tools Claude calls), and what a person on this page does or types instead. Every tool has an
# entry (tests/test_ui.py checks), so no MCP name reaches the page; longer phrases come first.
PAGE_FOR_TOOL_PHRASE = (
    ("forget_memory with undo=true", "Undo forget on the memory's page"),
    ("use recall_memories to find one", "search for it in Browse"),
    ("recall_memories", "a search in Browse"),
    ("store_memory", "`engram store`"),
    ("update_memory", "Curate on the memory's page"),
    ("forget_memory", "Forget on the memory's page"),
    ("promote_memory", "Promote on the memory's page"),
    ("get_memory_status", "the Health page"),
    ("get_memory_context", "`engram context`"),
    ("reflect_and_consolidate", "the Consolidation page"),
    ("search_knowledge_graph", "the Graph page"),
    ("include_forgotten", "status: all"),
    ("target_scope", "promote to"),
    ("undo=true", "Undo forget"),
)


def for_page(text: Any) -> Any:
    """A message written for the MCP interface, with each tool name replaced by what a person
    does here."""
    if not isinstance(text, str):
        return text
    for phrase, instead in PAGE_FOR_TOOL_PHRASE:
        text = text.replace(phrase, instead)
    return text


def _error(exc: Exception) -> JSONResponse:
    if isinstance(exc, EngramError):
        status = {"not_found": 404, "daemon_unavailable": 503, "memory_unavailable": 503}.get(exc.code, 400)
        envelope = {k: for_page(v) for k, v in exc.envelope().items()}
        return JSONResponse({"error": envelope}, status_code=status)
    return JSONResponse({"error": {"error": "internal", "message": for_page(str(exc)[:300])}}, status_code=500)


def _params(request: Request, names: tuple[str, ...]) -> dict[str, Any]:
    """The query parameters named, comma lists split, empty ones left out."""
    out: dict[str, Any] = {}
    for name in names:
        value = request.query_params.get(name, "").strip()
        if value:
            out[name] = [v.strip() for v in value.split(",") if v.strip()]
    return out


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    try:
        return max(lo, min(hi, int(request.query_params.get(name, default))))
    except ValueError:
        return default


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise _BadBody()
    return body


class _BadBody(Exception):
    pass


def make_app(backend: Backend, token: str, port_of: Callable[[], int], session: str | None = None) -> ASGIApp:
    """The ASGI application: static page, JSON API, live feed, behind the Guard."""

    async def call(
        op: str, args: dict[str, Any] | None = None, request: Request | None = None, session: str | None = None
    ) -> Any:
        project = project_of(request, backend.project) if request is not None else None
        return await run_in_threadpool(backend.call, op, args, project, session)

    def endpoint(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapped(request: Request) -> Response:
            try:
                result = await fn(request)
            except _BadBody:
                return JSONResponse({"error": {"error": "invalid_input", "message": "send a JSON object"}}, 400)
            except Exception as exc:  # every failure is an answer the page can show
                return _error(exc)
            return result if isinstance(result, Response) else JSONResponse(result)

        return wrapped

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        path = (STATIC_DIR / name).resolve()
        if path.parent != STATIC_DIR or not path.is_file() or path.suffix not in STATIC_TYPES:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path, media_type=STATIC_TYPES[path.suffix])

    @endpoint
    async def api_list(request: Request) -> Any:
        args = _params(request, ("scope", "type", "status", "tags", "category"))
        for bound in ("after", "before"):
            if request.query_params.get(bound):
                args[bound] = request.query_params[bound]
        args["limit"] = _int(request, "limit", 25, 1, 200)
        args["page"] = _int(request, "page", 1, 1, 100_000)
        return await call("list", args, request, session_of(request))

    @endpoint
    async def api_search(request: Request) -> Any:
        """A ranked search that changes nothing (no access count, no status move, no decay reset),
        with browse's filters (the status one inside recall's candidates) and pages to the last
        match (services/browse.search)."""
        args = _params(request, ("scope", "type", "status", "tags", "category"))
        args["query"] = request.query_params.get("q", "")
        args["limit"] = _int(request, "limit", 20, 1, SEARCH_PAGE_LIMIT)
        args["page"] = _int(request, "page", 1, 1, 100_000)
        for bound in ("after", "before"):
            if request.query_params.get(bound):
                args[bound] = request.query_params[bound]
        if request.query_params.get("strategy"):
            args["strategy"] = request.query_params["strategy"]
        return await call("search", args, request)

    async def full_id(mid: str, request: Request) -> str:
        """A memory id as the page shows it (`…9WEBHKJ7`) or as typed, made whole (`resolve_id`)."""
        if len(mid.split(":", 1)[-1]) == ULID_CHARS:
            return mid
        return str((await call("resolve_id", {"short_id": mid}, request))["memory_id"])

    @endpoint
    async def api_memory(request: Request) -> Any:
        mid = await full_id(request.path_params["mid"], request)
        memory = await call("get", {"memory_id": mid, "history": True}, request)
        memory["decay"] = await call("decay_curve", {"memory_id": mid}, request)
        return memory

    @endpoint
    async def api_update(request: Request) -> Any:
        body = await _json_body(request)
        allowed = ("content", "summary", "importance", "category", "tags", "supersedes")
        args = {k: v for k, v in body.items() if k in allowed}
        if isinstance(args.get("supersedes"), str):
            args["supersedes"] = await full_id(args["supersedes"], request)
        mid = await full_id(request.path_params["mid"], request)
        return await call("update", {"memory_id": mid, **args}, request)

    @endpoint
    async def api_forget(request: Request) -> Any:
        body = await _json_body(request)
        args = {"memory_id": request.path_params["mid"], "undo": bool(body.get("undo"))}
        if isinstance(body.get("reason"), str):
            args["reason"] = body["reason"]
        return await call("forget", args, request)

    @endpoint
    async def api_promote(request: Request) -> Any:
        body = await _json_body(request)
        args = {"memory_id": request.path_params["mid"], "target_scope": body.get("target_scope")}
        return await call("promote", args, request)

    @endpoint
    async def api_plan(request: Request) -> Any:
        args: dict[str, Any] = {"dry_run": True}
        for name in ("scope", "strategy"):  # the page asks `summarize` first: its part comes in a fraction
            if request.query_params.get(name):
                args[name] = request.query_params[name]
        return await call("consolidate", args, request)

    @endpoint
    async def api_apply(request: Request) -> Any:
        body = await _json_body(request)
        args: dict[str, Any] = {"steps": body.get("steps")}
        if isinstance(body.get("scope"), str):
            args["scope"] = body["scope"]
        return await call("consolidate_steps", args, request)

    @endpoint
    async def api_graph(request: Request) -> Any:
        args: dict[str, Any] = {"depth": _int(request, "depth", 1, 1, 3), "limit": 40}
        if request.query_params.get("entity"):
            args["entity"] = request.query_params["entity"]
        return await call("graph", args, request)

    @endpoint
    async def api_health(request: Request) -> Any:
        """The health table, from the index alone (counts by type and status, the quality rates):
        `status` counts by reading every record, so the page asks for it separately (/api/status)."""
        return {"quality": await call("quality", None, request)}

    @endpoint
    async def api_status(request: Request) -> Any:
        return await call("status", None, request)

    @endpoint
    async def api_sessions(request: Request) -> Any:
        return await call("sessions", None, request)

    @endpoint
    async def api_info(request: Request) -> Any:
        return {"project": str(backend.project)}

    @endpoint
    async def api_tags(request: Request) -> Any:
        return await call("tags", {"limit": 200}, request)

    @endpoint
    async def api_live(request: Request) -> Any:
        """The newest memories, for the page's live poll. A short request instead of a held
        stream: a held connection per tab exhausts the browser's six per host and freezes tabs."""
        res = await call("list", {"limit": LIVE_WINDOW, "status": "all"}, request)
        return {"memories": list(res.get("memories") or [])}

    routes = [
        Route("/", page),
        Route("/index.html", page),
        Route("/static/{name}", static),
        Route("/api/list", api_list),
        Route("/api/search", api_search),
        Route("/api/info", api_info),
        Route("/api/tags", api_tags),
        Route("/api/memory/{mid}", api_memory),
        Route("/api/memory/{mid}/update", api_update, methods=["POST"]),
        Route("/api/memory/{mid}/forget", api_forget, methods=["POST"]),
        Route("/api/memory/{mid}/promote", api_promote, methods=["POST"]),
        Route("/api/consolidate", api_plan),
        Route("/api/consolidate/apply", api_apply, methods=["POST"]),
        Route("/api/graph", api_graph),
        Route("/api/health", api_health),
        Route("/api/status", api_status),
        Route("/api/sessions", api_sessions),
        Route("/api/live", api_live),
    ]
    return Guard(Starlette(routes=routes), token, port_of, session)


# ------------------------------------------------------------------ running it
MAX_PORT = 65535


class PortUnavailable(Exception):
    """The port asked for cannot be listened on; the message says why and what to do instead."""


def bind(port: int) -> socket.socket:
    """A listening socket on the loopback interface (port 0: a free one the kernel picks)."""
    if not 0 <= port <= MAX_PORT:
        raise PortUnavailable(f"port {port} is out of range: give 1 to {MAX_PORT}, or 0 for a free one")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortUnavailable(
                f"port {port} is taken on {LOOPBACK}; port {free_port()} is free (engram ui --port {free_port()}), "
                "or leave --port out for any free one"
            ) from None
        if exc.errno == errno.EACCES:
            raise PortUnavailable(f"port {port} needs privileges; use one above 1023, or leave --port out") from None
        raise PortUnavailable(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}") from None
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock


def free_port() -> int:
    """A port free right now on the loopback interface (for the message of a taken one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def raise_open_files_limit(wanted: int = WANTED_OPEN_FILES) -> int:
    """Raise the soft descriptor limit toward `wanted` (within the hard one): at the usual 1,024
    a thousand idle connections leave no descriptor for a real request. Returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            pass
    return soft


def display_available() -> bool:
    """Whether opening a browser can work here (not in CI, not on a headless Linux box)."""
    if os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


HANDOFF_FILE = "open-engram-ui.html"


def handoff_page(url: str) -> str:
    """A page that sends the browser on to `url` at once (meta refresh, a link to click if the
    browser does not follow it): no script, nothing from elsewhere, no referrer."""
    href = escape(url, quote=True)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f'<meta http-equiv="refresh" content="0;url={href}">\n'
        "<title>engram ui</title></head>\n"
        f'<body><p>Opening engram ui&hellip; If nothing happens, <a href="{href}">open it here</a>.</p></body></html>\n'
    )


def write_handoff(url: str) -> Path:
    """Write the redirect page to `url` (which holds the token) in a new private directory:
    the directory 0700 (`mkdtemp`: new, ours), the file 0600, created exclusively, never
    through a link. Returns the file's path; `remove_handoff` deletes both."""
    directory = Path(tempfile.mkdtemp(prefix="engram-ui-"))
    os.chmod(directory, 0o700)  # mkdtemp's 0700 less the umask: exactly 0700
    path = directory / HANDOFF_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(fd, 0o600)
            out.write(handoff_page(url))
    except BaseException:
        remove_handoff(path)
        raise
    return path


def remove_handoff(path: Path) -> None:
    """Delete the redirect page and its private directory (gone already: nothing to do)."""
    for remove, target in ((os.unlink, path), (os.rmdir, path.parent)):
        try:
            remove(target)
        except FileNotFoundError:
            pass
        except OSError as exc:
            print(f"engram ui: could not remove {target}: {exc.strerror}", file=sys.stderr)


def open_browser_privately(url: str) -> Callable[[], None]:
    """Open `url` in the browser without putting it on any command line.

    `webbrowser.open(url)` runs `xdg-open URL` (or `$BROWSER URL`, `firefox URL`), and a
    process's command line is readable by every local user in /proc/<pid>/cmdline; a browser
    that was not running keeps it in its own for its whole life. So, as Jupyter does, the URL
    goes into a 0600 file in a new 0700 directory (`write_handoff`) that redirects to it, and the
    browser is given `file://<that file>`, which holds no secret. The file stays until the
    server stops (a browser starting cold may take a while to read it): returns what removes
    it, which `serve` calls then. SIGTERM and SIGHUP remove it too (`remove_on_signals`), from
    before the browser is launched (`$BROWSER` is waited for); only a SIGKILL leaves it,
    private and holding a token no server accepts any more."""
    path = write_handoff(url)
    restore_signals = remove_on_signals(path)

    def close() -> None:
        remove_handoff(path)
        restore_signals()

    try:
        webbrowser.open(path.as_uri())
    except BaseException:
        close()
        raise
    return close


def remove_on_signals(path: Path) -> Callable[[], None]:
    """Have SIGTERM and SIGHUP remove the redirect file first, then act as they would have.

    Neither reaches `serve`'s `finally`: uvicorn stops gracefully on SIGTERM and then raises it
    again under the handler it found (by default, death), and a closed terminal's SIGHUP kills
    at once. A signal already ignored (`nohup`) stays ignored. Python takes signals only in the
    main thread: elsewhere nothing is installed. Returns what puts the previous handlers back."""
    installed: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(sig)
            if previous is None or previous == signal.SIG_IGN:
                continue  # ignored, or set outside Python: left as it is

            def remove_then_resignal(signum: int, frame: Any, previous: Any = previous) -> None:
                remove_handoff(path)
                signal.signal(signum, previous)
                signal.raise_signal(signum)

            signal.signal(sig, remove_then_resignal)
            installed[sig] = previous

    def restore() -> None:
        for sig, previous in installed.items():
            signal.signal(sig, previous)

    return restore


def header_timeout_protocol() -> type:
    """uvicorn's h11 protocol, plus a deadline for each request's headers and one for its body.

    uvicorn times out idle kept-alive connections but not a new connection that sends nothing
    or trickles its headers, nor a request whose body comes a byte at a time after its headers:
    those would hold a descriptor each (and a body, a worker waiting on it) until the process has
    none left. Here a connection has HEADER_READ_TIMEOUT_S from its opening (and from each
    response's end) to start its next request, and BODY_READ_TIMEOUT_S from a request's headers
    to the end of its body; past either it is closed."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _body_deadline: asyncio.TimerHandle | None = None
        _body_cycle: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            cycle = self.cycle
            if cycle is not None and cycle is not self._body_cycle and cycle.more_body:
                self._body_cycle = cycle  # a request whose body has not all come: its deadline starts now
                if self._body_deadline is not None:
                    self._body_deadline.cancel()
                self._body_deadline = self.loop.call_later(BODY_READ_TIMEOUT_S, self._expire_body, cycle)

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self._deadline, self._body_deadline):
                if timer is not None:
                    timer.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            waiting_after = self.cycle
            self._deadline = self.loop.call_later(HEADER_READ_TIMEOUT_S, self._expire, waiting_after)

        def _expire(self, waiting_after: Any) -> None:
            if self.cycle is waiting_after and not self.transport.is_closing():
                self.transport.close()  # no new request began: nothing is lost

        def _expire_body(self, cycle: Any) -> None:
            if cycle.more_body and not self.transport.is_closing():
                self.transport.close()  # the route waiting on the body is told the client left

    return HeaderTimeoutProtocol


def serve(
    project: Path, session: str | None, *, port: int = 0, open_browser: bool = True, as_json: bool = False
) -> int:
    """Serve until Ctrl-C; prints the URL (with the token) first, on a line of its own (or, with
    `as_json`, one JSON object: url, port, pid)."""
    import json

    import uvicorn

    sock = bind(port)  # before the daemon starts: a taken port is the first thing said
    backend = Backend(project, session)
    backend.call("ping")  # start the daemon now, so the first page does not wait for it
    raise_open_files_limit()
    token = secrets.token_urlsafe(32)
    bound = sock.getsockname()[1]
    url = f"http://{LOOPBACK}:{bound}/?token={token}"
    app = make_app(backend, token, lambda: bound)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
        lifespan="off",
        server_header=False,
        http=header_timeout_protocol(),
        timeout_keep_alive=int(KEEP_ALIVE_S),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        backlog=LISTEN_BACKLOG,
    )
    server = uvicorn.Server(config)
    if as_json:
        print(json.dumps({"url": url, "port": bound, "pid": os.getpid()}), flush=True)
    else:
        print(f"engram ui: {url}", flush=True)
    print("(Ctrl-C stops it)", file=sys.stderr, flush=True)
    close_handoff: Callable[[], None] | None = None
    try:
        if open_browser and display_available():
            close_handoff = open_browser_privately(url)
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if close_handoff is not None:
            close_handoff()  # the redirect file (it holds the token) lives as long as the server
    return 0
