"""Layered, schema-validated configuration for engram.

Settings live in markdown files with YAML frontmatter (``engram.local.md``) so
they sit next to Claude Code's own ``.claude/*.local.md`` files and can carry
human-readable notes in their body.  Precedence, lowest first:

1. built-in :data:`DEFAULTS`
2. user level ``~/.claude/engram.local.md``
3. project level ``<project_root>/.claude/engram.local.md``
4. environment variables ``ENGRAM_<KEY_IN_UPPER_CASE>``

Every layer is validated on its own against :data:`CONFIG_SCHEMA`, so a problem
is always reported against the file or variable that caused it.  All problems
are collected first and raised together in one :class:`ConfigError`: fixing a
config file one error per run is miserable.

Which keys exist, their types, defaults and bounds are declared once, in
``config_keys.py`` (:class:`Config`); this module reads, validates and merges the layers.
It imports nothing else from ``engram_mcp`` but the standard-library-only ``config_keys``,
``vocabulary`` and ``paths``, so that every other module (hooks, daemon, CLI) can load
configuration without import cycles.

Config files are untrusted input (a repository commits its ``.claude``): the project
file is never read through a link, at most 64 KiB is read, the YAML goes through
``safe_yaml`` (the one hardened loader: no anchors or aliases, bounded depth, nodes and
numbers), and messages echo only a clipped prefix of any value.
"""

from __future__ import annotations

import copy
import difflib
import errno
import functools
import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engram_mcp.core import safe_yaml, store_owner
from engram_mcp.core.config_keys import (
    CONFIG_SCHEMA,
    DATA_MOVING_KEYS,
    DEFAULTS,
    SCOPE_WEIGHT_PROFILES,
    Config,
    scale_scope_weights,
)
from engram_mcp.core.display import printable
from engram_mcp.core.paths import describe, git_tracked, in_git_repository, project_dir, user_dir

if TYPE_CHECKING:
    import jsonschema

__all__ = [  # the declaration's names are re-exported: callers load and read config from here
    "CONFIG_SCHEMA",
    "DEFAULTS",
    "SCOPE_WEIGHT_PROFILES",
    "Config",
    "ConfigError",
    "ConfigProblem",
    "check_config_files",
    "load_config",
    "load_config_lenient",
    "project_config_path",
    "scale_scope_weights",
    "user_config_path",
]

CONFIG_FILE_NAME = "engram.local.md"
ENV_PREFIX = "ENGRAM_"
#: How alike (difflib ratio, 0..1) an unknown ``ENGRAM_*`` name must be to a key to be
#: reported as a likely typo; 0.8 allows one or two slips in a short key name.
ENV_NEAR_MISS_SIMILARITY = 0.8

#: ``ENGRAM_*`` variables that carry runtime plumbing, not settings; they must
#: not be mistaken for misspelt config keys.
RUNTIME_ENV_VARS: frozenset[str] = frozenset(
    {
        "ENGRAM_HOME",
        "ENGRAM_PROJECT_ROOT",
        "ENGRAM_SESSION_ID",
        "ENGRAM_SOCKET",
        "ENGRAM_LOG_FILE",
        "ENGRAM_DAEMON",
        "ENGRAM_PYTHON",
    }
)

BOOL_WORDS: dict[str, bool] = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}


_PROPERTIES: dict[str, dict[str, Any]] = CONFIG_SCHEMA["properties"]


@functools.cache
def _validator() -> Any:
    """jsonschema's validator of the schema. Importing jsonschema takes ~75 ms (a third of a
    daemon's start before its first answer), so it is imported only for a layer that
    `conforms` cannot pass: a mistake to report, or a keyword `conforms` does not read."""
    import jsonschema

    return jsonschema.Draft202012Validator(CONFIG_SCHEMA)


def conforms(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether `instance` certainly satisfies `schema`, reading only the keywords the config
    schema uses (type, enum, minimum, maximum, minLength, properties, required,
    additionalProperties). False means "not certain": a schema with any other keyword, or a
    value outside the plain cases (NaN, 1.0 for an integer), goes to jsonschema, which decides
    and words every error (`_validate`)."""
    if not _READ_KEYWORDS.issuperset(schema):
        return False
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_is_json_type(instance, t) for t in allowed):
            return False
    if "enum" in schema and not any(_same_json(instance, v) for v in schema["enum"]):
        return False
    if isinstance(instance, (int, float)) and not isinstance(instance, bool):
        if not math.isfinite(instance):
            return False
        if "minimum" in schema and instance < schema["minimum"]:
            return False
        if "maximum" in schema and instance > schema["maximum"]:
            return False
    if isinstance(instance, str) and len(instance) < schema.get("minLength", 0):
        return False
    if isinstance(instance, dict):
        return _object_conforms(instance, schema)
    return True


_READ_KEYWORDS = frozenset(
    {
        "$schema",
        "title",
        "description",
        "type",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "properties",
        "required",
        "additionalProperties",
    }
)


def _is_json_type(instance: Any, name: str) -> bool:
    """Whether `instance` is of JSON Schema type `name` (an integer is a number too; a boolean
    is neither), by the names `_json_type` gives."""
    actual = _json_type(instance)
    return actual == name or (name == "number" and actual == "integer")


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values (True is not 1)."""
    return type(a) is type(b) and a == b


def _object_conforms(instance: dict[Any, Any], schema: Mapping[str, Any]) -> bool:
    properties = schema.get("properties", {})
    if any(name not in instance for name in schema.get("required", ())):
        return False
    extra = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if not isinstance(key, str):
            return False
        if key in properties:
            if not conforms(value, properties[key]):
                return False
        elif extra is not True:
            return False  # an entry the schema forbids, or one a schema for the others would check
    return True


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the configuration, attributed to where it came from."""

    source: str  # display path of a file, or "env ENGRAM_X"
    key: str | None  # None when the problem concerns the whole file
    message: str
    severity: str = "error"  # "warning": reported, but nothing of engram's own was wrong or ignored

    def __str__(self) -> str:
        return f"{self.source}: {'warning: ' if self.severity == 'warning' else ''}{self.message}"

    @property
    def is_error(self) -> bool:
        return self.severity != "warning"


class ConfigError(ValueError):
    """All configuration problems at once, so they can be fixed in one pass."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        if all(not p.is_error for p in self.problems):  # only warnings (a likely misspelt variable): nothing is invalid
            header = f"engram configuration: {count} warning{'s' if count != 1 else ''}:"
        else:
            header = f"invalid engram configuration ({count} problem{'s' if count != 1 else ''}):"
        super().__init__("\n".join([header, *(f"  {p}" for p in self.problems)]))


def user_config_path(home: Path | None = None) -> Path:
    """User-level config file: ``~/.claude/engram.local.md``."""
    return (home if home is not None else Path.home()) / ".claude" / CONFIG_FILE_NAME


def project_config_path(project_root: Path) -> Path:
    """Project-level config file: ``<project_root>/.claude/engram.local.md``."""
    return Path(project_root) / ".claude" / CONFIG_FILE_NAME


def load_config(
    project_root: Path | None = None,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Merge all layers and return the effective :class:`Config`.

    Raises :class:`ConfigError` listing every problem found in any layer.
    """
    values, sources, problems = _collect(project_root, home, environ)
    errors = [p for p in problems if p.is_error]
    if errors:
        raise ConfigError(errors)
    return Config(**values, sources=sources)


def load_config_lenient(
    project_root: Path | None = None,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Config, ConfigError | None]:
    """Like :func:`load_config`, but a broken file or key falls back to the defaults.

    Memory must keep working when a config file is garbled: the daemon runs on what is
    valid and reports the problems (status, doctor, logs) instead of failing every call.
    """
    values, sources, problems = _collect(project_root, home, environ)
    return Config(**values, sources=sources), (ConfigError(problems) if problems else None)


def check_config_files(
    project_root: Path | None,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[ConfigProblem]:
    """Problems in every layer, for ``engram doctor``; never raises."""
    try:
        return _collect(project_root, home, environ)[2]
    except Exception as exc:  # doctor must report, not crash
        return [ConfigProblem("config", None, f"unexpected error while checking configuration: {exc!r}")]


# --------------------------------------------------------------------------- internals


def _collect(
    project_root: Path | None, home: Path | None, environ: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str], list[ConfigProblem]]:
    """Read every layer in precedence order; later layers overwrite earlier ones."""
    user_store = user_dir(home)
    home = home if home is not None else Path.home()
    values: dict[str, Any] = copy.deepcopy(DEFAULTS)
    sources = {key: "default" for key in values}
    problems: list[ConfigProblem] = []

    paths: list[tuple[Path, Path | None]] = [(user_config_path(home), None)]
    if project_root is not None:
        paths.append((project_config_path(Path(project_root)), Path(project_root)))
    for path, within in paths:
        display = _display_path(path, home)
        layer, file_problems = _read_file(path, display, within=within)
        problems += file_problems
        if within is not None:
            problems += _drop_repository_moves(layer, within, display, user_store)
        layer_problems = _validate(layer, display)
        problems += _capped(layer_problems, display)
        rejected = {problem.key for problem in layer_problems}
        for key, value in layer.items():
            if key in _PROPERTIES and key not in rejected:  # keep the merged result well-typed
                values[key], sources[key] = value, display

    for key, (source, value) in _env_layer(os.environ if environ is None else environ, problems).items():
        values[key], sources[key] = value, source

    return {key: _normalise(key, value) for key, value in values.items()}, sources, problems


def _drop_repository_moves(
    layer: dict[str, Any], project_root: Path, display: str, user_store: Path | None = None
) -> list[ConfigProblem]:
    """Remove from a project file's layer the keys that move data out of the private store
    (``moves_data``) unless the file is the user's: in a git repository that does not track it.
    A tracked file is the repository's (as Claude Code treats a committed ``settings.json``
    against the user's ``settings.local.json``); its other keys still apply. Fails safe: when git
    cannot say whether the file is tracked, or there is no repository to ask (a project unpacked
    from an archive brings its `.claude/` with it, untracked by anything), the keys are dropped
    too. And untracked is no proof in a repository the user did not make: an archive can carry
    its `.git` with the file left out of it (`.git/info/exclude`). So the file must also be newer
    than this user's claim on the project's store (`store_owner`: a mark only their engram
    writes, at the first session here), which no archive can arrange: what came with the project
    was there before. Returns one warning naming them."""
    moving = sorted(key for key in layer if key in DATA_MOVING_KEYS)
    if not moving:
        return []
    tracked = git_tracked(project_root, f".claude/{CONFIG_FILE_NAME}")
    repository = in_git_repository(project_root)
    written_since = _written_since_claim(project_root, user_store)
    if tracked is False and repository and written_since:
        return []
    for key in moving:
        del layer[key]
    if not repository:
        why = "is in no git repository, so it may have come with the project (an archive, a copy), not from you"
    elif tracked:
        why = "is tracked by git, so it is the repository's file, not yours"
    elif tracked is None:
        why = "is inside a git repository, and git could not say whether it is tracked"
    else:
        why = (
            "was there before your first engram session in this project, so it may have come with the project "
            f"(an archive with its .git) rather than from you; if it is yours, save it again (touch {display})"
        )
    return [
        ConfigProblem(
            display,
            moving[0],
            f"{why}: ignored {', '.join(moving)} (settings that write outside your private store are honoured only "
            f"from ~/.claude/engram.local.md or a project file git does not track); "
            "its other settings apply",
            severity="warning",
        )
    ]


def _written_since_claim(project_root: Path, user_store: Path | None) -> bool:
    """Whether the project's config file changed after this user's engram claimed the project's
    store (its owner mark, verified under the user's key; `core/store_owner.py`). False when
    either is missing or cannot be read: nothing says the file is the user's."""
    if user_store is None or not (Path(user_store) / store_owner.KEY_FILE).is_file():
        return False
    store = project_dir(Path(project_root))
    try:
        mark = os.stat(store / store_owner.OWNER_FILE, follow_symlinks=False)
        conf = os.stat(project_config_path(Path(project_root)), follow_symlinks=False)
        if not (stat.S_ISREG(mark.st_mode) and store_owner.load(Path(user_store)).owns(store)):
            return False
    except (OSError, ValueError):
        return False
    return conf.st_ctime > mark.st_ctime


def _display_path(path: Path, home: Path) -> str:
    """Show paths under home as ``~/...``: shorter and what users actually type."""
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


#: A config file is a few hundred bytes; anything past this is not read (hostile or mistaken).
MAX_CONFIG_FILE_BYTES = 64 * 1024
#: Bounds on the YAML a config file may hold: nesting depth and number of nodes. With aliases
#: and anchors refused, these keep parsing and every message about the values small.
MAX_YAML_DEPTH = 20
MAX_YAML_NODES = 5000
#: Problems reported per file; the rest are counted (a file of 5,000 unknown keys is one mistake).
MAX_PROBLEMS_PER_FILE = 20
#: Characters of a value or key echoed in a message.
SHOWN_VALUE_CHARS = 80


def _read_file(path: Path, display: str, *, within: Path | None = None) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """Frontmatter of one config file as a dict; a missing file is an empty layer.

    `within` is the project root for the project file: the repository decides what is at
    `.claude/engram.local.md`, so neither `.claude` nor the file may be a link there.
    """
    try:
        text = _read_config_text(path, display, within)
    except _Unreadable as exc:
        return {}, [ConfigProblem(display, None, str(exc))]
    if text is None:
        return {}, []

    try:
        front, _body = safe_yaml.split_frontmatter(
            text, source=display, max_bytes=MAX_CONFIG_FILE_BYTES, max_depth=MAX_YAML_DEPTH, max_nodes=MAX_YAML_NODES
        )
    except safe_yaml.UnsafeYAML as exc:
        return {}, [ConfigProblem(display, None, _yaml_problem(str(exc), display))]
    return {_cut(str(key)): value for key, value in front.items()}, []


class _Unreadable(Exception):
    """A config file that exists but is not read; the message says why and what to do."""


def _read_config_text(path: Path, display: str, within: Path | None) -> str | None:
    """The file's text (at most MAX_CONFIG_FILE_BYTES), or None when there is no file."""
    try:
        fd = _open_config(path, within)
    except FileNotFoundError:
        return None
    except _Unreadable:
        raise
    except OSError as exc:
        raise _Unreadable(f"cannot read file: {exc.strerror or exc}") from None
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise _Unreadable("is a directory, not a config file; running on the defaults")
        if not stat.S_ISREG(st.st_mode):
            raise _Unreadable("is not a regular file (a fifo, socket or device); not read, running on the defaults")
        data = os.read(fd, MAX_CONFIG_FILE_BYTES + 1)
    except OSError as exc:
        raise _Unreadable(f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_FILE_BYTES:
        raise _Unreadable(
            f"is larger than {MAX_CONFIG_FILE_BYTES // 1024} KiB, far more than any engram config; "
            "not read, running on the defaults"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"cannot read file: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _open_config(path: Path, within: Path | None) -> int | None:
    """A read descriptor of the config file (never blocking on a fifo); links refused below `within`."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if within is None:
        return os.open(path, flags)  # the user's own file: a link there is the user's choice
    parts = Path(path).relative_to(within).parts
    fd = os.open(within, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = Path(within)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            shown = shown / part
            try:
                child = os.open(part, (flags if last else flags | os.O_DIRECTORY) | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                what = describe(shown, dir_fd=fd, name=part)
                if "symbolic link" not in what:
                    os.close(fd)
                    return None  # `.claude` is a plain file: there is no config below it
                raise _Unreadable(
                    f"not read: {shown} {what}; engram reads a project's config only from a regular file inside the "
                    "project, never through a link a repository may have committed. Running on the defaults. "
                    f"Fix: replace {shown} with a regular file (or a real directory)"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _cut(text: str, limit: int = SHOWN_VALUE_CHARS) -> str:
    """At most `limit` characters of a key as written (a key is never rewritten into another:
    an invisible character keeps it an unknown key, reported through `_clip`)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip(text: str, limit: int = SHOWN_VALUE_CHARS) -> str:
    """At most `limit` characters of untrusted text for a message (an ellipsis marks the cut),
    made `printable`: a key of a committed file may hold escape sequences or bidi controls, and
    the message is shown by `engram status` and `doctor`."""
    text = printable(text[: limit * 4])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped(problems: list[ConfigProblem], source: str) -> list[ConfigProblem]:
    """The first MAX_PROBLEMS_PER_FILE problems of a file, then one line counting the rest."""
    if len(problems) <= MAX_PROBLEMS_PER_FILE:
        return problems
    more = len(problems) - MAX_PROBLEMS_PER_FILE
    return problems[:MAX_PROBLEMS_PER_FILE] + [
        ConfigProblem(source, None, f"... and {more} more problems in this file")
    ]


def _yaml_problem(message: str, display: str) -> str:
    """The loader's message without the file name (a ConfigProblem shows its source), worded
    as config messages always were: "broken YAML frontmatter at line N, column M: ..."."""
    detail = message.removeprefix(f"{display}: ")
    if detail.startswith("not valid YAML"):
        return "broken YAML frontmatter" + detail.removeprefix("not valid YAML")
    if "frontmatter" in detail:  # never closed, not a mapping, too large: already says what
        return detail
    return f"broken YAML frontmatter: {detail}"


def _env_layer(environ: Mapping[str, str], problems: list[ConfigProblem]) -> dict[str, tuple[str, Any]]:
    """Parse ``ENGRAM_*`` variables into typed values, appending problems found."""
    layer: dict[str, tuple[str, Any]] = {}
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in RUNTIME_ENV_VARS:
            continue
        source = f"env {name}"
        key = name[len(ENV_PREFIX) :].lower()
        if key not in _PROPERTIES:
            problem = _unknown_env_var(name, key)
            if problem is not None:
                problems.append(problem)
            continue
        try:
            value = _parse_env_value(key, environ[name])
        except ValueError as exc:
            allowed = _allowed(_PROPERTIES[key])
            problems.append(
                ConfigProblem(source, key, f"key '{key}' = {_clip(environ[name])!r} {exc}; allowed: {allowed}")
            )
            continue
        key_problems = _validate({key: value}, source)
        problems += key_problems
        if key in DATA_MOVING_KEYS:
            # a repository's `.claude/settings.json` sets the environment of the hooks, and the
            # daemon a hook starts keeps it for every project it serves
            problems.append(
                ConfigProblem(
                    source,
                    key,
                    f"ignored {name}: a setting that writes outside your private store is taken only from "
                    "~/.claude/engram.local.md (or a project file of yours), never from the environment, "
                    "which a repository's .claude/settings.json can set",
                    severity="warning",
                )
            )
            continue
        if not key_problems:
            layer[key] = (source, value)
    return layer


def _unknown_env_var(name: str, key: str) -> ConfigProblem | None:
    """An ``ENGRAM_*`` variable that is no setting: a warning when it looks like a misspelt
    key, else nothing at all. The prefix is not ours alone (another Claude Code memory tool
    reads ``ENGRAM_DATA_DIR``, for one), so a variable unlike every key is another tool's."""
    match = difflib.get_close_matches(key, list(_PROPERTIES), n=1, cutoff=ENV_NEAR_MISS_SIMILARITY)
    if not match:
        return None
    return ConfigProblem(
        f"env {name}",
        key,
        f"unknown setting {name} (no config key '{key}'); did you mean {ENV_PREFIX}{match[0].upper()}?",
        severity="warning",
    )


def _parse_env_value(key: str, raw: str) -> Any:
    """Convert an environment string to the schema type of ``key``.

    For nullable keys an empty value or ``null`` means null; objects and arrays
    are JSON.  Range checks are left to the schema.
    """
    types = _types(_PROPERTIES[key])
    text = raw.strip()
    if "null" in types and text.lower() in ("", "null", "none"):
        return None
    main = types[0]
    if main == "boolean":
        if text.lower() not in BOOL_WORDS:
            raise ValueError("is not a boolean")
        return BOOL_WORDS[text.lower()]
    if main == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("is not an integer") from None
    if main == "number":
        try:
            number = float(text)
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(number):
            raise ValueError("is not a finite number")
        return number
    if main in ("object", "array"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise ValueError("is not valid JSON (nested too deeply)") from None
    return text


def _validate(layer: Mapping[str, Any], source: str) -> list[ConfigProblem]:
    """Validate one layer with the schema and phrase each error for humans."""
    problems: list[ConfigProblem] = []
    instance = dict(layer)
    if conforms(instance, CONFIG_SCHEMA):
        return problems
    errors = sorted(_validator().iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    # A wrong type makes every other complaint about the same value noise (null also fails enum).
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    for error in errors:
        if tuple(error.absolute_path) in mistyped and error.validator != "type":
            continue
        path = [str(p) for p in error.absolute_path]
        if not path:  # root level: only additionalProperties can fail here
            for key in sorted(k for k in layer if k not in _PROPERTIES):
                problems.append(ConfigProblem(source, key, _unknown_key_message(key)))
            continue
        problems.append(ConfigProblem(source, path[0], _error_message(error, path)))
    return problems


def _unknown_key_message(key: str) -> str:
    key = _clip(key)
    match = difflib.get_close_matches(key, list(_PROPERTIES), n=1)
    hint = f"; did you mean '{match[0]}'?" if match else "; see config.local.md.example for the known keys"
    return f"unknown key '{key}'{hint}"


def _error_message(error: jsonschema.ValidationError, path: list[str]) -> str:
    """Message naming the key, the bad value and what would have been accepted."""
    name = _clip(".".join(path))
    shown = _show(error.instance)
    # The stubs allow a boolean or unset schema; every subschema of ours is an object, and an error
    # raised by validation always carries the subschema that failed.
    schema = cast(Mapping[str, Any], error.schema)
    instance: Any = error.instance  # likewise never unset on an error raised by validation
    allowed = _allowed(schema)
    if error.validator == "enum":
        return f"key '{name}' = {shown} is not allowed; allowed: {allowed}"
    if error.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"key '{name}' = {shown} is out of range; allowed: {allowed}"
    if error.validator == "type":
        return f"key '{name}' = {shown} has the wrong type ({_json_type(error.instance)}); allowed: {allowed}"
    if error.validator == "required":
        required = cast(list[str], error.validator_value)  # a "required" keyword's value is its list of names
        missing = [s for s in required if s not in instance]
        return f"key '{name}' is missing {', '.join(map(repr, missing))}; required: {', '.join(required)}"
    if error.validator == "additionalProperties":
        extra = [k for k in instance if k not in schema.get("properties", {})]
        return f"key '{name}' has unknown entries {_clip(', '.join(repr(_clip(str(e))) for e in extra), 200)}; allowed: {', '.join(schema['properties'])}"
    return f"key '{name}' = {shown} is invalid ({_clip(error.message, 200)}); allowed: {allowed}"


def _types(schema: Mapping[str, Any]) -> list[str]:
    """Schema types with the non-null one first."""
    types = schema.get("type", "string")
    types = [types] if isinstance(types, str) else list(types)
    return sorted(types, key=lambda t: t == "null")


def _allowed(schema: Mapping[str, Any]) -> str:
    """Human description of what a (sub)schema accepts."""
    if "enum" in schema:
        return ", ".join(map(str, schema["enum"]))
    types = _types(schema)
    main = types[0]
    if main in ("integer", "number"):
        noun = "an integer" if main == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            text = f"{noun} from {low} to {high}"
        elif low is not None:
            text = f"{noun} >= {low}"
        else:
            text = noun
    elif main == "boolean":
        text = "true or false (env: true/false/1/0/yes/no/on/off)"
    elif main == "object":
        entries = ", ".join(schema.get("properties", {}))
        text = f"an object with number entries {entries}, each from 0 to 1"
    elif main == "string":
        text = "a non-empty string" if schema.get("minLength") else "a string"
    else:
        text = main
    return text + (" or null" if "null" in types else "")


def _json_type(value: Any) -> str:
    """Name a Python value by its YAML/JSON type, as users wrote it."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """Render a value as in the example message (strings quoted, others as JSON), clipped:
    the value is untrusted and may be large, so only a bounded prefix is ever serialised."""
    return _clip(_render_bounded(value, SHOWN_VALUE_CHARS + 1))


def _render_bounded(value: Any, budget: int) -> str:
    """JSON-like text of `value`, stopping once about `budget` characters are produced."""
    if isinstance(value, str):
        return repr(value[:budget])
    if isinstance(value, dict):
        parts, used = [], 0
        for key, item in value.items():
            if used > budget:
                parts.append("…")
                break
            part = f"{json.dumps(str(key)[:budget])}: {_render_bounded(item, budget - used)}"
            parts.append(part)
            used += len(part) + 2
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        parts, used = [], 0
        for item in value:
            if used > budget:
                parts.append("…")
                break
            part = _render_bounded(item, budget - used)
            parts.append(part)
            used += len(part) + 2
        return "[" + ", ".join(parts) + "]"
    try:
        return json.dumps(value, default=str)[:budget]
    except (TypeError, ValueError):
        return repr(value)[:budget]


def _normalise(key: str, value: Any) -> Any:
    """Give number keys float values even when written as ``24``, so types are stable."""
    main = _types(_PROPERTIES[key])[0]
    if main == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if key == "scope_weights" and isinstance(value, dict):
        return {scope: float(weight) for scope, weight in value.items()}
    return value
