"""`engram ui`: a local web page to see and curate memory (Starlette on uvicorn, loopback only).

An interface like the CLI: every read and every change is one daemon operation through
`DaemonClient` (core/operations.py), so edits keep their history exactly as `engram update`
does. The page is static HTML + JavaScript modules + CSS from this package (no build step, no
CDN); memory text reaches the DOM only as text (`textContent`), never as markup.

Security model (stored memories are untrusted text from tool output and web pages):
- bound to 127.0.0.1 only, on a random free port unless `--port` is given;
- a random token per launch (`secrets.token_urlsafe`), given once in the URL that is opened,
  then kept in an HttpOnly, SameSite=Strict cookie scoped to this origin; it is written to no
  file. Every request without it (cookie or `?token=`) gets 403, so another local user who
  finds the port cannot read or change anything;
- `Host` must be this server (127.0.0.1:<port> or localhost:<port>), against DNS rebinding;
- a request carrying an `Origin` that is not ours gets 403; a state-changing request (POST)
  must carry our `Origin` and the `X-Engram-UI` header (which a cross-site form cannot send);
- a strict Content-Security-Policy (no inline script, nothing from elsewhere, no framing),
  nosniff, no referrer, no caching of API answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import sys
import threading
import time
import webbrowser
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engram_mcp.core import operations
from engram_mcp.core.errors import EngramError, InvalidInput
from engram_mcp.daemon.client import DaemonClient

STATIC_DIR = Path(__file__).resolve().parent / "static"
COOKIE_NAME = "engram_ui_token"
CSRF_HEADER = "x-engram-ui"
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
LIVE_POLL_S = 1.0  # how often the live feed asks the daemon for memories newer than the last it saw
LIVE_WINDOW = 50  # newest memories compared per poll
LIVE_KEEPALIVE_S = 15.0
PAGES = ("/", "/index.html")
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html"}


class Backend:
    """The daemon, as the routes use it: one client per server thread (a client is one connection
    and not thread-safe), all calls in the project the UI was started in."""

    def __init__(self, project: Path, session: str | None, user_dir: Path | None = None) -> None:
        self.project = project
        self.session = session
        self.user_dir = user_dir
        self._local = threading.local()

    def call(self, op: str, args: dict[str, Any] | None = None, project: Path | None = None) -> Any:
        """One daemon operation in `project` (default: the one the UI was started in)."""
        if operations.get(op) is None:
            raise ValueError(f"{op!r} is not an engram operation")  # a bug here, not the user's input
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = DaemonClient(self.user_dir, client_name="ui")
        return client.call(op, args or {}, project_root=project or self.project, session_id=self.session)


def project_of(request: Request) -> Path | None:
    """The project a request names (`?project=<directory>`, as `engram --project` takes one), or None
    for the UI's own. The daemon resolves it to its project root as for any other caller."""
    raw = request.query_params.get("project", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute() or not path.is_dir():
        raise InvalidInput(f"project {raw[:200]!r} is not a directory (give its absolute path)", field="project")
    return path


def _our_hosts(port: int) -> set[str]:
    return {f"{LOOPBACK}:{port}", f"localhost:{port}"}


class Guard:
    """The security checks of every request, before any route (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str, port_of: Callable[[], int]) -> None:
        self.app = app
        self.token = token
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
        supplied = request.query_params.get("token")
        if supplied is not None and request.method == "GET" and not request.url.path.startswith("/api/"):
            # First visit: keep the token in a cookie and drop it from the address bar (and history).
            rest = _without_token(request)
            clean = "/" + request.url.path.lstrip("/") + ("?" + rest if rest else "")  # never `//host`
            response: Response = RedirectResponse(clean, status_code=303)
            response.set_cookie(COOKIE_NAME, self.token, httponly=True, samesite="strict", path="/")
            await _with_headers(response)(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                for k, v in SECURITY_HEADERS.items():
                    if k.encode() not in present:
                        headers.append((k.encode(), v.encode()))
                if request.url.path.startswith("/api/") and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)

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
        if site is not None and site not in ("same-origin", "none"):
            return "forbidden: cross-site request"
        given = request.cookies.get(COOKIE_NAME) or request.query_params.get("token") or ""
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return "forbidden: missing or wrong token (open the URL `engram ui` printed)"
        if request.method not in ("GET", "HEAD"):
            if origin is None:
                return "forbidden: a change needs the page's Origin"
            if request.headers.get(CSRF_HEADER) != "1":
                return "forbidden: missing X-Engram-UI header"
        return None


def _without_token(request: Request) -> str:
    return urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])


def _with_headers(response: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        response.headers[k] = v
    return response


# ------------------------------------------------------------------ routes
def _error(exc: Exception) -> JSONResponse:
    if isinstance(exc, EngramError):
        status = {"not_found": 404, "daemon_unavailable": 503, "memory_unavailable": 503}.get(exc.code, 400)
        return JSONResponse({"error": exc.envelope()}, status_code=status)
    return JSONResponse({"error": {"error": "internal", "message": str(exc)[:300]}}, status_code=500)


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


def make_app(backend: Backend, token: str, port_of: Callable[[], int]) -> ASGIApp:
    """The ASGI application: static page, JSON API, live feed, behind the Guard."""

    async def call(op: str, args: dict[str, Any] | None = None, request: Request | None = None) -> Any:
        project = project_of(request) if request is not None else None
        return await run_in_threadpool(backend.call, op, args, project)

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
        return await call("list", args, request)

    @endpoint
    async def api_search(request: Request) -> Any:
        args = _params(request, ("scope", "type", "tags", "category"))
        args["query"] = request.query_params.get("q", "")
        args["limit"] = _int(request, "limit", 20, 1, 50)
        if request.query_params.get("strategy"):
            args["strategy"] = request.query_params["strategy"]
        return await call("recall", args, request)

    @endpoint
    async def api_memory(request: Request) -> Any:
        mid = request.path_params["mid"]
        memory = await call("get", {"memory_id": mid, "history": True}, request)
        memory["decay"] = await call("decay_curve", {"memory_id": mid}, request)
        return memory

    @endpoint
    async def api_update(request: Request) -> Any:
        body = await _json_body(request)
        allowed = ("content", "summary", "importance", "category", "tags", "supersedes")
        args = {k: v for k, v in body.items() if k in allowed}
        return await call("update", {"memory_id": request.path_params["mid"], **args}, request)

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
        if request.query_params.get("scope"):
            args["scope"] = request.query_params["scope"]
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
        status, quality = await asyncio.gather(call("status", None, request), call("quality", None, request))
        return {"status": status, "quality": quality}

    @endpoint
    async def api_sessions(request: Request) -> Any:
        return await call("sessions", None, request)

    @endpoint
    async def api_info(request: Request) -> Any:
        return {"project": str(backend.project)}

    @endpoint
    async def api_tags(request: Request) -> Any:
        return await call("tags", {"limit": 200}, request)

    async def api_events(request: Request) -> Response:
        """Server-sent events: each memory created since the page connected, newest last."""

        async def newest() -> list[dict[str, Any]]:
            res = await call("list", {"limit": LIVE_WINDOW, "status": "all"}, request)
            return list(res.get("memories") or [])

        async def stream() -> Any:
            try:
                seen = {m["id"] for m in await newest()}
            except Exception:
                seen = set()
            yield "retry: 2000\n\n"
            last_beat = time.monotonic()
            while True:
                if await request.is_disconnected():
                    return
                await asyncio.sleep(LIVE_POLL_S)
                try:
                    current = await newest()
                except Exception:
                    continue
                fresh = [m for m in reversed(current) if m["id"] not in seen]
                for m in fresh:
                    seen.add(m["id"])
                    yield f"event: memory\ndata: {json.dumps(m, ensure_ascii=False)}\n\n"
                if time.monotonic() - last_beat > LIVE_KEEPALIVE_S:
                    last_beat = time.monotonic()
                    yield ": keepalive\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"cache-control": "no-store", "x-accel-buffering": "no"}
        )

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
        Route("/api/sessions", api_sessions),
        Route("/api/events", api_events),
    ]
    return Guard(Starlette(routes=routes), token, port_of)


# ------------------------------------------------------------------ running it
def bind(port: int) -> socket.socket:
    """A listening socket on the loopback interface (port 0: a free one the kernel picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def display_available() -> bool:
    """Whether opening a browser can work here (not in CI, not on a headless Linux box)."""
    if os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def serve(project: Path, session: str | None, *, port: int = 0, open_browser: bool = True) -> int:
    """Serve until Ctrl-C; prints the URL (with the token) first, on a line of its own."""
    import uvicorn

    backend = Backend(project, session)
    backend.call("ping")  # start the daemon now, so the first page does not wait for it
    token = secrets.token_urlsafe(32)
    sock = bind(port)
    bound = sock.getsockname()[1]
    url = f"http://{LOOPBACK}:{bound}/?token={token}"
    app = make_app(backend, token, lambda: bound)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=2, lifespan="off", server_header=False
    )
    server = uvicorn.Server(config)
    print(f"engram ui: {url}", flush=True)
    print("(Ctrl-C stops it)", file=sys.stderr, flush=True)
    if open_browser and display_available():
        webbrowser.open(url)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
