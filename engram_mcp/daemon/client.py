"""Talk to the engram owner process (engramd) over a private Unix socket.

Standard library only: hooks import this with any `python3`, before the plugin's
virtualenv even exists, and have ~100 ms in all. The socket lives in the user store
directory (0700) and is itself 0600, so no other local user can connect; nothing
listens on TCP. If no daemon answers, `DaemonClient` starts one (detached, in its own
session, so it never becomes a zombie of a short-lived hook) and waits for it.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

from engram_mcp.core.errors import DaemonNotRunning, DaemonUnavailable, error_from_envelope

SOCKET_NAME = "engramd.sock"
#: In the user directory: the private directory holding the socket when its direct path is too long.
SOCKET_DIR_RECORD = "engramd.sockdir"
MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to ~104-108 bytes
DEFAULT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 60.0
CONNECT_RETRY_S = 0.05
PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the plugin root / checkout: engram_mcp/daemon/client.py
MAX_REPLY_BYTES = 64 * 1024 * 1024  # a reply longer than this is a broken daemon, not a result
READ_CHUNK_BYTES = 256 * 1024
# bin/engram-bootstrap's environment in ${CLAUDE_PLUGIN_DATA}, and `make setup`'s in a checkout.
PLUGIN_VENV_PYTHON = Path("venv") / "bin" / "python"
PLUGIN_VENV_STAMP = Path("venv") / "engram-pyproject.toml"
CHECKOUT_VENV_STAMP = Path(".venv") / ".engram-stamp"


def user_dir_from_env(home: Path | None = None) -> Path:
    env = os.environ.get("ENGRAM_HOME")
    if env and home is None:
        return Path(env).expanduser()
    return (home or Path.home()) / ".claude" / "engram"


def socket_path(user_dir: Path, *, create: bool = False) -> Path:
    """Where the daemon of `user_dir` listens: `<user_dir>/engramd.sock` when that fits AF_UNIX.

    When it is too long, the socket lives in a private directory the daemon made with a random
    name (`mkdtemp`: 0700, ours, unguessable, so no other local user can take or squat it), in
    `$XDG_RUNTIME_DIR` when that is a private directory of ours, else in /tmp. Its path is
    recorded in `<user_dir>/engramd.sockdir` (the user directory is 0700), which is how clients
    find it; a recorded directory is used only while it is still a real 0700 directory owned by
    this user. Only the daemon (`create=True`, holding the user directory's lock) makes one;
    without a usable record a client gets the too-long path, fails to connect, and starts the
    daemon, which records a new directory.
    """
    override = os.environ.get("ENGRAM_SOCKET")
    if override:
        return Path(override)
    direct = Path(user_dir) / SOCKET_NAME
    if _fits(direct):
        return direct
    recorded = _recorded_socket_dir(Path(user_dir))
    if recorded is not None:
        return recorded / SOCKET_NAME
    if not create:
        return direct
    return _new_socket_dir(Path(user_dir)) / SOCKET_NAME


def clear_stale_socket(path: Path) -> None:
    """Remove the socket a dead daemon left at `path`; refuse to remove anything else.

    `ENGRAM_SOCKET` (and so the path) can come from an environment a repository set through
    its Claude Code settings: unlinking whatever is there would delete any file of the user's.
    """
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        kind = (
            "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else "a file"
        )
        raise DaemonUnavailable(
            f"{path} exists and is {kind}, not a socket; engram will not replace it. "
            "Remove it, or point ENGRAM_SOCKET at a path of its own"
        )
    os.unlink(path)


class ForeignListener(ConnectionRefusedError):
    """The daemon's socket is held by a process of another user: never talked to, and no daemon
    is started in its place (a new one would fail to bind, or unlink the other's socket)."""


def connect_to_daemon(sock: Any, path: Path) -> None:
    """Connect `sock` to the daemon's socket at `path`, refusing a listener of another user.

    Whoever listens there receives the session's prompts and answers with the block engram
    shows Claude. `ENGRAM_SOCKET` can name any path (a repository's settings can set it), and
    /tmp is shared: a socket another local user bound there must not stand in for engram. The
    peer's credentials (SO_PEERCRED, Linux) name the process that bound it; where the platform
    has no such option, the socket file's owner does. Raises ConnectionRefusedError (an
    OSError, which callers treat as "no daemon") for a listener that is not this user's.
    """
    sock.connect(str(path))
    uid = _peer_uid(sock, path)
    if uid is not None and uid != os.getuid():
        sock.close()
        raise ForeignListener(f"{path}: the process listening there runs as uid {uid}, not as this user")


def _peer_uid(sock: Any, path: Path) -> int | None:
    """The uid of the process at the other end of a connected AF_UNIX socket, or None."""
    import socket
    import struct

    if hasattr(socket, "SO_PEERCRED"):
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return struct.unpack("3i", creds)[1]
        except OSError:
            pass
    try:
        st = os.lstat(path)  # a link is no daemon's socket: judged by its own owner
    except OSError:
        return None
    return st.st_uid


def _fits(path: Path) -> bool:
    return len(os.fsencode(str(path))) <= MAX_SOCKET_PATH


def _private_dir_ok(path: Path) -> bool:
    """A real directory (not a link), owned by this user, with no access for anyone else."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _recorded_socket_dir(user_dir: Path) -> Path | None:
    """The socket directory the daemon recorded, if it is still private and short enough."""
    try:
        fd = os.open(user_dir / SOCKET_DIR_RECORD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    path = Path(raw)
    if not raw or not path.is_absolute() or not _fits(path / SOCKET_NAME) or not _private_dir_ok(path):
        return None
    return path


def _new_socket_dir(user_dir: Path) -> Path:
    """Make a fresh private socket directory and record it (the daemon only, under its lock)."""
    import tempfile

    bases = [os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"), "/tmp"]
    for base in bases:
        if not base or not os.path.isabs(base) or not _fits(Path(base) / "engram-0000-xxxxxxxx" / SOCKET_NAME):
            continue
        if base == os.environ.get("XDG_RUNTIME_DIR") and not _private_dir_ok(Path(base)):
            continue  # a runtime directory that is not ours alone is no better than /tmp
        try:
            made = Path(tempfile.mkdtemp(prefix=f"engram-{os.getuid()}-", dir=base))
        except OSError:
            continue
        os.chmod(made, 0o700)  # mkdtemp's mode is masked by the umask
        if not _private_dir_ok(made) or not _fits(made / SOCKET_NAME):
            try:
                os.rmdir(made)
            except OSError:
                pass
            continue
        tmp = user_dir / f".{SOCKET_DIR_RECORD}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, str(made).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, user_dir / SOCKET_DIR_RECORD)
        return made
    raise DaemonUnavailable(
        f"the socket path {user_dir / SOCKET_NAME} is too long for a Unix socket and no private "
        "directory could be made for it in $XDG_RUNTIME_DIR, $TMPDIR or /tmp; set ENGRAM_SOCKET "
        "to a short path in a directory only you can write"
    )


def plugin_env_python(data: Path, root: Path = PACKAGE_PARENT) -> Path | None:
    """`<data>/venv/bin/python` once bin/engram-bootstrap has finished building it, else None.

    The venv's python exists seconds into the build, long before pip has installed anything:
    only the stamp, written last (atomically) with the plugin's pyproject.toml, says the
    environment is complete and is the one this plugin version needs.
    """
    python = Path(data) / PLUGIN_VENV_PYTHON
    try:
        ready = (
            python.exists()
            and (Path(data) / PLUGIN_VENV_STAMP).read_bytes() == (Path(root) / "pyproject.toml").read_bytes()
        )
    except OSError:
        return None
    return python if ready else None


def checkout_env_python(root: Path = PACKAGE_PARENT) -> Path | None:
    """A development checkout's `.venv/bin/python`, once `make setup` has written its stamp (last).
    None too when it cannot be looked at (a `.venv` of another user, not searchable)."""
    python = Path(root) / ".venv" / "bin" / "python"
    try:
        return python if python.exists() and (Path(root) / CHECKOUT_VENV_STAMP).exists() else None
    except OSError:
        return None


def _runnable(candidate: str | Path | None) -> bool:
    """Whether `candidate` names an executable file; a path that cannot be looked at is not."""
    try:
        return bool(candidate) and Path(str(candidate)).is_file() and os.access(str(candidate), os.X_OK)
    except OSError:
        return False


def find_python() -> str | None:
    """A Python that has engram's dependencies, to run the daemon with; None while none is complete.

    Candidates are looked at one at a time, in order, each only when the ones before it failed:
    an `ENGRAM_PYTHON` that runs wins without the checkout's `.venv` ever being looked at (one
    that cannot be, such as another user's, raised PermissionError here before)."""
    import importlib.util

    def candidates() -> Iterator[str | Path | None]:
        yield os.environ.get("ENGRAM_PYTHON")
        if importlib.util.find_spec("surrealdb") is not None:
            yield sys.executable
        data = os.environ.get("CLAUDE_PLUGIN_DATA")
        if data:
            yield plugin_env_python(Path(data))
        yield checkout_env_python()

    return next((str(c) for c in candidates() if _runnable(c)), None)


def environment_missing() -> str:
    """Why no daemon can start (find_python found nothing), worded for who will read it."""
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if data:  # an installed plugin: it builds its own environment on first use
        log = Path(data) / "bootstrap.log"
        try:
            failure = (Path(data) / "bootstrap.failed").read_text(errors="replace").strip().splitlines()[0]
        except (OSError, IndexError):
            failure = ""
        if failure:
            return f"engram could not prepare its Python environment ({failure[:200]}); log: {log}. It is retried when Claude Code starts engram again"
        return f"engram is preparing its Python environment (first use, about a minute; log: {log}); memory is available once it is ready"
    return (
        "engram's Python environment is not installed: set ENGRAM_PYTHON to a Python that has engram's dependencies "
        "(in a development checkout, `make setup` creates .venv)"
    )


def spawn_daemon(user_dir: Path, python: str | None = None) -> subprocess.Popen | None:
    """Start engramd detached; returns None when no suitable Python exists."""
    import subprocess  # lazily: hooks import this module on a ~100 ms budget

    python = python or find_python()
    if python is None:
        return None
    from engram_mcp.core.paths import make_private_dirs  # every level 0700, whatever the umask

    logs = make_private_dirs(user_dir / "logs")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_PARENT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["ENGRAM_HOME"] = str(user_dir)
    log_fd = os.open(logs / "engramd.out", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        return subprocess.Popen(
            [python, "-P", "-m", "engram_mcp.daemon.process", "--user-dir", str(user_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            env=env,
            start_new_session=True,
            close_fds=True,
            cwd=str(user_dir),
        )
    finally:
        os.close(log_fd)


def prestart_daemon(user_dir: Path | None = None) -> None:
    """Start engramd now if none answers, without waiting for it.

    The MCP server calls this before importing the MCP SDK (~2 s here), so the daemon's own
    start (imports, model, first store) runs beside it on the other core instead of after
    it. A second start is harmless: a daemon that finds another holding the lock exits.
    """
    try:
        client = DaemonClient(user_dir)
        if client._try_connect():
            client.close()
            return
        if not client._refused:  # another user's listener is reported at the first call, not replaced
            spawn_daemon(client.user_dir)
    except Exception:  # only an early start; the first call connects (or reports) as before
        pass


#: How long `stop_daemon` waits for the daemon to exit after it agreed to stop: it first writes
#: its index files (about 1 s for 100k memories here) and closes its stores.
STOP_WAIT_S = 30.0
_STOP_POLL_S = 0.02


def stop_daemon(user_dir: Path, *, wait_s: float = STOP_WAIT_S) -> dict[str, Any]:
    """Ask the daemon of `user_dir` to stop and wait until its process has exited, so whatever
    runs next (a backup, a move, `rm -rf` of a store) never races its last index writes.

    {"stopped": True, "pid", "waited_s"} once it is gone; {"stopped": False, "pid", "message"}
    when it is still there after `wait_s`. Raises DaemonUnavailable when none runs."""
    client = DaemonClient(user_dir, autostart=False)
    try:
        pid = client.call("ping").get("pid")
        client.call("shutdown")
    finally:
        client.close()
    started = time.monotonic()
    if not isinstance(pid, int) or pid <= 0:  # a daemon that does not say (an older one): its socket
        while socket_path(user_dir).exists() and time.monotonic() - started < wait_s:
            time.sleep(_STOP_POLL_S)
        return {"stopped": not socket_path(user_dir).exists(), "pid": None, "waited_s": time.monotonic() - started}
    while not process_exited(pid):
        if time.monotonic() - started >= wait_s:
            return {
                "stopped": False,
                "pid": pid,
                "message": (
                    f"engram daemon (pid {pid}) agreed to stop but has not exited after {wait_s:.0f} s; it may "
                    f"still be writing its index files. Wait and run this again, or end it with `kill {pid}`"
                ),
            }
        time.sleep(_STOP_POLL_S)
    return {"stopped": True, "pid": pid, "waited_s": round(time.monotonic() - started, 3)}


def process_exited(pid: int) -> bool:
    """Whether process `pid` has exited: gone, or a zombie (exited, its parent not told yet;
    reaped here when that parent is this process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: its parent reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's (the pid was reused)
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (macOS): alive as far as can be told
    fields = stat_line.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in ("Z", "X")


def remove_socket_dir(user_dir: Path, path: Path) -> None:
    """After the socket at `path` is removed: the private directory made for it (`_new_socket_dir`,
    `engram-<uid>-*` in the temporary folder) and its record go too, so none survives a stop.
    Only the recorded directory, and only when empty; a socket of ENGRAM_SOCKET is not ours."""
    recorded = _recorded_socket_dir(Path(user_dir))
    if os.environ.get("ENGRAM_SOCKET") or recorded is None or Path(path).parent != recorded:
        return
    try:
        (Path(user_dir) / SOCKET_DIR_RECORD).unlink()
    except OSError:
        pass
    try:
        os.rmdir(recorded)
    except OSError:
        pass


class DaemonClient:
    """A connection to engramd; reconnects (and restarts the daemon) when needed."""

    def __init__(
        self,
        user_dir: Path | None = None,
        *,
        autostart: bool = True,
        timeout: float = DEFAULT_TIMEOUT_S,
        start_timeout: float = START_TIMEOUT_S,
        client_name: str = "client",
    ) -> None:
        self.user_dir = Path(user_dir) if user_dir else user_dir_from_env()
        self.autostart = autostart
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.client_name = client_name
        self._sock: socket.socket | None = None
        self._buf = bytearray()  # what was read past the last reply line
        self._ids = itertools.count(1)
        self._refused: str | None = None  # why the last connect refused its listener (another user's)

    @property
    def path(self) -> Path:
        return socket_path(self.user_dir)

    def _try_connect(self) -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connect_to_daemon(s, self.path)
        except OSError as exc:
            s.close()
            self._refused = str(exc) if isinstance(exc, ForeignListener) else None
            return False
        s.settimeout(self.timeout)
        self._sock, self._buf = s, bytearray()
        return True

    def connect(self, *, wait: float | None = None) -> None:
        if self._sock is not None:
            return
        if self._try_connect():
            return
        if self._refused:
            raise DaemonUnavailable(
                f"engram will not talk to {self._refused}; unset ENGRAM_SOCKET or remove that socket"
            )
        if not self.autostart:
            raise DaemonNotRunning(f"engram daemon is not running (no socket at {self.path})")
        if spawn_daemon(self.user_dir) is None:
            raise DaemonUnavailable(environment_missing())
        deadline = time.monotonic() + (wait if wait is not None else self.start_timeout)
        while time.monotonic() < deadline:
            if self._try_connect():
                return
            time.sleep(CONNECT_RETRY_S)
        raise DaemonUnavailable(
            f"engram daemon did not start within {self.start_timeout:.0f}s; see {self.user_dir / 'logs'}"
        )

    def close(self) -> None:
        try:
            if self._sock is not None:
                self._sock.close()
        except OSError:
            pass
        self._sock = None
        self._buf = bytearray()

    def call(
        self,
        op: str,
        args: dict[str, Any] | None = None,
        *,
        project_root: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        timeout: float | None = None,
        on_progress: Any = None,
    ) -> Any:
        """Send one request; return its result or raise the typed error it carried."""
        request: dict[str, Any] = {
            "id": next(self._ids),
            "op": op,
            "args": args or {},
            "ctx": {
                "project_root": str(project_root) if project_root else None,
                "session_id": session_id,
                "client": self.client_name,
            },
        }
        if on_progress is not None:
            request["progress"] = True
        try:
            payload = (json.dumps(request, ensure_ascii=False) + "\n").encode()
        except UnicodeEncodeError:  # a lone surrogate: a byte that is not UTF-8 in an argument, a sliced emoji
            from engram_mcp.core.errors import InvalidInput

            raise InvalidInput(
                "an argument is not valid Unicode text (it holds a lone surrogate or a byte that is not UTF-8); "
                "send valid UTF-8 text"
            ) from None
        reply = self._round_trip(payload, request["id"], self.timeout if timeout is None else timeout, on_progress)
        if reply.get("ok"):
            return reply.get("result")
        error = reply.get("error")
        if not isinstance(error, dict):
            raise DaemonUnavailable(
                f"engram daemon did not answer properly: its reply has neither a result nor an error: {_short(reply)}"
            )
        err = error_from_envelope(error)
        if err.code == "daemon_unavailable":  # the daemon itself refused (busy): it closes the connection
            self.close()
        raise err

    def _round_trip(self, payload: bytes, rid: int, timeout_s: float, on_progress: Any) -> dict[str, Any]:
        """Send a request and read its reply (a JSON object), reconnecting once if the connection
        was closed before any answer; every failure is a DaemonUnavailable within `timeout_s`."""
        for attempt in (1, 2):
            self.connect()
            try:
                return self._exchange(payload, rid, timeout_s, on_progress)
            except _BadReply as exc:  # out of step: never retried (the daemon may have applied it)
                self.close()
                raise DaemonUnavailable(f"engram daemon did not answer properly: {exc}") from None
            except socket.timeout:
                self.close()
                raise DaemonUnavailable(f"engram daemon did not answer within {timeout_s:.0f}s (timed out)") from None
            except (OSError, ConnectionError) as exc:
                self.close()
                if attempt == 2:
                    raise DaemonUnavailable(f"engram daemon did not answer: {exc}") from None
        raise AssertionError("unreachable")

    def _exchange(self, payload: bytes, rid: int, timeout_s: float, on_progress: Any) -> dict[str, Any]:
        """One request on the open connection. The timeout bounds the whole wait for the reply
        (not each read, so a daemon dribbling bytes cannot hold a caller forever); each progress
        line proves the daemon alive and restarts it."""
        assert self._sock is not None
        deadline = time.monotonic() + timeout_s
        self._sock.settimeout(max(timeout_s, 0.001))
        self._sock.sendall(payload)
        while True:
            reply = _decode_reply(self._readline(deadline), rid)
            if "progress" in reply and "ok" not in reply:
                if on_progress is not None:
                    _report_progress(on_progress, reply.get("progress"))
                deadline = time.monotonic() + timeout_s
                continue
            return reply

    def _readline(self, deadline: float) -> bytes:
        """The next line from the daemon, at most MAX_REPLY_BYTES, before `deadline`."""
        assert self._sock is not None
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return line
            if len(self._buf) > MAX_REPLY_BYTES:
                raise _BadReply(f"its reply is longer than {MAX_REPLY_BYTES // (1024 * 1024)} MiB")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("timed out")
            self._sock.settimeout(remaining)
            chunk = self._sock.recv(READ_CHUNK_BYTES)
            if not chunk:
                if self._buf:
                    raise _BadReply("it closed the connection in the middle of a reply")
                raise ConnectionError("daemon closed the connection")
            self._buf += chunk

    def __enter__(self) -> "DaemonClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _BadReply(Exception):
    """A reply that cannot be a daemon's answer (not JSON, not an object, another request's, too long)."""


def _short(value: Any, limit: int = 120) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode_reply(line: bytes, rid: int) -> dict[str, Any]:
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise _BadReply(f"its reply is not JSON ({type(exc).__name__}): {_short(line)}") from None
    if not isinstance(reply, dict):
        raise _BadReply(f"its reply is not a JSON object: {_short(line)}")
    if reply.get("id") not in (rid, None):
        raise _BadReply(f"it answered request {_short(reply.get('id'), 40)} instead of {rid}")
    return reply


def _report_progress(on_progress: Any, progress: Any) -> None:
    """Pass a progress line on; a malformed one is skipped, never an error of the request."""
    if not isinstance(progress, dict):
        return
    try:
        done = int(progress.get("done", 0))
    except (TypeError, ValueError, OverflowError):
        return
    total = progress.get("total")
    on_progress(done, total if isinstance(total, int) else None, str(progress.get("label", "")))
