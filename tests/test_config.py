"""Behaviour of engram's layered configuration (engram_mcp/core/config.py)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import frontmatter
import jsonschema
import pytest

from engram_mcp.core.config import (
    CONFIG_SCHEMA,
    DEFAULTS,
    RUNTIME_ENV_VARS,
    SCOPE_WEIGHT_PROFILES,
    Config,
    ConfigError,
    ConfigProblem,
    check_config_files,
    load_config,
    load_config_lenient,
    project_config_path,
    user_config_path,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "config.local.md.example"
USER_FILE = "~/.claude/engram.local.md"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_user(home: Path, frontmatter_yaml: str) -> Path:
    return write(user_config_path(home), f"---\n{frontmatter_yaml}---\n\nnotes\n")


def write_project(project: Path, frontmatter_yaml: str) -> Path:
    return write(project_config_path(project), f"---\n{frontmatter_yaml}---\n")


def problems_of(project: Path | None, home: Path, environ: dict[str, str] | None = None) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as info:
        load_config(project, home=home, environ=environ or {})
    return info.value.problems


# --------------------------------------------------------------------------- defaults and paths


def test_no_files_and_no_env_give_the_defaults(home: Path, project: Path) -> None:
    config = load_config(project, home=home, environ={})
    assert config.as_dict() == DEFAULTS
    assert set(config.sources.values()) == {"default"}


def test_defaults_schema_and_config_fields_cover_the_same_keys() -> None:
    fields = {f.name for f in dataclasses.fields(Config)} - {"sources"}
    assert set(DEFAULTS) == set(CONFIG_SCHEMA["properties"]) == fields
    jsonschema.Draft202012Validator.check_schema(CONFIG_SCHEMA)
    jsonschema.validate(DEFAULTS, CONFIG_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert CONFIG_SCHEMA["additionalProperties"] is False


def test_config_paths_are_under_dot_claude(home: Path, project: Path) -> None:
    assert user_config_path(home) == home / ".claude" / "engram.local.md"
    assert project_config_path(project) == project / ".claude" / "engram.local.md"


def test_user_config_path_defaults_to_the_real_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    assert user_config_path() == home / ".claude" / "engram.local.md"


def test_missing_files_are_simply_skipped(home: Path, tmp_path: Path) -> None:
    config = load_config(tmp_path / "does-not-exist", home=home, environ={})
    assert config.context_token_budget == 1200


def test_project_root_none_reads_only_the_user_file(home: Path) -> None:
    write_user(home, "rrf_k: 7\n")
    assert load_config(None, home=home, environ={}).rrf_k == 7


def test_file_without_frontmatter_counts_as_empty(home: Path) -> None:
    write(user_config_path(home), "# just notes\n\nno settings here\n")
    assert load_config(home=home, environ={}).as_dict() == DEFAULTS


def test_body_starting_with_a_brace_is_not_read_as_json(home: Path) -> None:
    write(user_config_path(home), '{\n"rrf_k": 5\n}\n')
    assert load_config(home=home, environ={}).rrf_k == 60


# --------------------------------------------------------------------------- precedence


def test_project_file_overrides_user_file_and_env_overrides_both(home: Path, project: Path) -> None:
    write_user(home, "context_token_budget: 500\nrrf_k: 10\nlog_level: debug\n")
    write_project(project, "context_token_budget: 700\nrrf_k: 20\n")
    config = load_config(project, home=home, environ={"ENGRAM_CONTEXT_TOKEN_BUDGET": "800"})
    assert config.context_token_budget == 800
    assert config.rrf_k == 20
    assert config.log_level == "debug"
    assert config.fusion == "score"


def test_sources_name_where_each_value_came_from(home: Path, project: Path) -> None:
    write_user(home, "log_level: debug\n")
    project_file = write_project(project, "rrf_k: 20\n")
    config = load_config(project, home=home, environ={"ENGRAM_FUSION": "rrf"})
    assert config.sources["log_level"] == USER_FILE
    assert config.sources["rrf_k"] == str(project_file)
    assert config.sources["fusion"] == "env ENGRAM_FUSION"
    assert config.sources["candidate_pool"] == "default"
    assert set(config.sources) == set(DEFAULTS)


def test_number_keys_are_floats_even_when_written_as_integers(home: Path) -> None:
    write_user(home, "maintenance_interval_hours: 2\nkeyword_weight: 1\n")
    config = load_config(home=home, environ={})
    assert config.maintenance_interval_hours == 2.0 and isinstance(config.maintenance_interval_hours, float)
    assert isinstance(config.keyword_weight, float)
    assert isinstance(config.rrf_k, int)


def test_config_is_frozen_and_as_dict_is_a_copy(home: Path) -> None:
    write_user(home, "scope_weights: {session: 0.2, project: 0.3, user: 0.5}\n")
    config = load_config(home=home, environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.rrf_k = 1  # type: ignore[misc]
    exported = config.as_dict()
    exported["scope_weights"]["user"] = 0.0
    assert config.scope_weights == {"session": 0.2, "project": 0.3, "user": 0.5}
    assert "sources" not in exported


# --------------------------------------------------------------------------- environment parsing


@pytest.mark.parametrize(
    ("name", "raw", "key"),
    [
        ("ENGRAM_EMBEDDING_CACHE_DIR", "./.cache-in-repo", "embedding_cache_dir"),
        ("ENGRAM_TEAM_MEMORY_SHARE_MIN_IMPORTANCE", "0", "team_memory_share_min_importance"),
    ],
)
def test_a_setting_that_moves_data_is_never_taken_from_the_environment(home: Path, name: str, raw: str, key: str) -> None:
    """A repository's `.claude/settings.json` sets the hooks' environment, and the daemon a hook
    starts keeps it for every project it serves (red-team finding: `ENGRAM_TEAM_MEMORY_SHARE_MIN_IMPORTANCE=0`
    from one repository made a later `engram sync` in another project publish its private memory)."""
    config, problem = load_config_lenient(home=home, environ={name: raw})
    assert getattr(config, key) is None and config.sources[key] == "default"
    assert problem is not None and name in str(problem) and "settings.json" in str(problem)


@pytest.mark.parametrize(
    ("name", "raw", "key", "expected"),
    [
        ("ENGRAM_CONTEXT_TOKEN_BUDGET", "800", "context_token_budget", 800),
        ("ENGRAM_RRF_K", " 42 ", "rrf_k", 42),
        ("ENGRAM_KEYWORD_WEIGHT", "0.25", "keyword_weight", 0.25),
        ("ENGRAM_MAINTENANCE_INTERVAL_HOURS", "3", "maintenance_interval_hours", 3.0),
        ("ENGRAM_LOG_LEVEL", "warning", "log_level", "warning"),
        ("ENGRAM_EMBEDDING_MODEL", "BAAI/bge-small-en-v1.5", "embedding_model", "BAAI/bge-small-en-v1.5"),
        ("ENGRAM_EMBEDDING_MODEL_PATH", "/models/mine", "embedding_model_path", "/models/mine"),
        (
            "ENGRAM_SCOPE_WEIGHTS",
            '{"session": 0.6, "project": 0.3, "user": 0.1}',
            "scope_weights",
            {"session": 0.6, "project": 0.3, "user": 0.1},
        ),
        ("ENGRAM_SCOPE_WEIGHTS", "null", "scope_weights", None),
    ],
)
def test_env_strings_are_parsed_into_the_schema_type(
    home: Path, name: str, raw: str, key: str, expected: object
) -> None:
    config = load_config(home=home, environ={name: raw})
    value = getattr(config, key)
    assert value == expected
    assert type(value) is type(expected)
    assert config.sources[key] == f"env {name}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("false", False), ("1", True), ("0", False), ("yes", True), ("no", False),
     ("on", True), ("off", False), ("TRUE", True), ("Off", False)],
)
def test_env_booleans_accept_the_usual_words(home: Path, raw: str, expected: bool) -> None:
    config = load_config(home=home, environ={"ENGRAM_USER_PROMPT_RECALL": raw})
    assert config.user_prompt_recall is expected


@pytest.mark.parametrize(
    ("name", "raw", "fragment"),
    [
        ("ENGRAM_RRF_K", "sixty", "is not an integer; allowed: an integer >= 1"),
        ("ENGRAM_RRF_K", "1.5", "is not an integer"),
        ("ENGRAM_KEYWORD_WEIGHT", "half", "is not a number; allowed: a number from 0 to 1"),
        ("ENGRAM_KEYWORD_WEIGHT", "nan", "is not a finite number"),
        ("ENGRAM_STOP_HOOK", "maybe", "is not a boolean; allowed: true or false"),
        ("ENGRAM_SCOPE_WEIGHTS", "{session: 1}", "is not valid JSON"),
        ("ENGRAM_CONTEXT_TOKEN_BUDGET", "50", "= 50 is out of range; allowed: an integer from 100 to 8000"),
        ("ENGRAM_FUSION", "mix", "= 'mix' is not allowed; allowed: score, rrf"),
    ],
)
def test_unparsable_or_invalid_env_values_name_the_variable(
    home: Path, name: str, raw: str, fragment: str
) -> None:
    [problem] = problems_of(None, home, {name: raw})
    assert problem.source == f"env {name}"
    assert problem.key == name.removeprefix("ENGRAM_").lower()
    assert fragment in problem.message


def test_runtime_env_vars_are_ignored(home: Path) -> None:
    environ = {name: "whatever" for name in RUNTIME_ENV_VARS}
    environ["PATH"] = "/usr/bin"
    environ["NOT_ENGRAM_RRF_K"] = "nonsense"
    assert load_config(home=home, environ=environ).as_dict() == DEFAULTS
    assert {"ENGRAM_HOME", "ENGRAM_SESSION_ID", "ENGRAM_PYTHON"} <= RUNTIME_ENV_VARS


def test_misspelt_engram_env_var_is_a_warning_with_a_suggestion(home: Path) -> None:
    [problem] = check_config_files(None, home=home, environ={"ENGRAM_CONTEXT_BUDGET": "800"})
    assert problem.source == "env ENGRAM_CONTEXT_BUDGET" and problem.severity == "warning" and not problem.is_error
    assert "did you mean ENGRAM_CONTEXT_TOKEN_BUDGET?" in problem.message
    assert load_config(home=home, environ={"ENGRAM_CONTEXT_BUDGET": "800"}).as_dict() == DEFAULTS  # a warning, not an error
    from engram_mcp.core.config import load_config_lenient

    _, reported = load_config_lenient(None, home=home, environ={"ENGRAM_CONTEXT_BUDGET": "800"})
    assert str(reported).startswith("engram configuration: 1 warning") and "invalid" not in str(reported)


@pytest.mark.parametrize("name", ["ENGRAM_DATA_DIR", "ENGRAM_API_KEY", "ENGRAM_DB_PATH", "ENGRAM_URL", "ENGRAM_NOPE"])
def test_engram_env_vars_of_other_tools_are_not_reported(home: Path, name: str) -> None:
    """The ENGRAM_ prefix is shared (another Claude Code memory tool reads ENGRAM_DATA_DIR):
    a variable unlike every setting belongs to someone else and is not engram's problem."""
    assert check_config_files(None, home=home, environ={name: "/somewhere"}) == []
    assert load_config(home=home, environ={name: "/somewhere"}).as_dict() == DEFAULTS


def test_environ_defaults_to_os_environ(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_PROMPT_RECALL_LIMIT", "5")
    assert load_config(home=home).prompt_recall_limit == 5


# --------------------------------------------------------------------------- file validation


def test_bad_enum_value_names_file_key_value_and_allowed_values(home: Path) -> None:
    write_user(home, "scope_weight_profile: fast\n")
    [problem] = problems_of(None, home)
    assert problem == ConfigProblem(
        USER_FILE,
        "scope_weight_profile",
        "key 'scope_weight_profile' = 'fast' is not allowed; "
        "allowed: default, codebase, preferences, debugging, new_project, architecture",
    )
    assert str(problem) == (
        "~/.claude/engram.local.md: key 'scope_weight_profile' = 'fast' is not allowed; "
        "allowed: default, codebase, preferences, debugging, new_project, architecture"
    )


def test_unknown_key_is_an_error_suggesting_the_closest_key(home: Path) -> None:
    write_user(home, "context_budget: 800\n")
    [problem] = problems_of(None, home)
    assert problem.source == USER_FILE
    assert problem.key == "context_budget"
    assert "unknown key 'context_budget'" in problem.message
    assert "did you mean 'context_token_budget'?" in problem.message


def test_unknown_key_without_a_close_match_points_to_the_example(home: Path) -> None:
    write_user(home, "xyzzy: 1\n")
    [problem] = problems_of(None, home)
    assert "config.local.md.example" in problem.message


@pytest.mark.parametrize(
    ("line", "key", "fragment"),
    [
        ("context_token_budget: 50\n", "context_token_budget", "= 50 is out of range; allowed: an integer from 100 to 8000"),
        ("keyword_weight: 1.5\n", "keyword_weight", "= 1.5 is out of range; allowed: a number from 0 to 1"),
        ("store_dedup_similarity: 0.2\n", "store_dedup_similarity", "allowed: a number from 0.5 to 1"),
        ("rrf_k: 0\n", "rrf_k", "allowed: an integer >= 1"),
        ("daemon_idle_exit_seconds: 100000\n", "daemon_idle_exit_seconds", "from 10 to 86400"),
    ],
)
def test_out_of_range_number_names_file_key_value_and_range(home: Path, line: str, key: str, fragment: str) -> None:
    write_user(home, line)
    [problem] = problems_of(None, home)
    assert (problem.source, problem.key) == (USER_FILE, key)
    assert f"key '{key}'" in problem.message
    assert fragment in problem.message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("rrf_k: abc\n", "key 'rrf_k' = 'abc' has the wrong type (string); allowed: an integer >= 1"),
        ("rrf_k: 2.5\n", "has the wrong type (number)"),
        ("user_prompt_recall: maybe\n", "allowed: true or false"),
        ("keyword_weight: true\n", "has the wrong type (boolean)"),
        ("embedding_model_path: 3\n", "allowed: a non-empty string or null"),
        ("log_level:\n", "key 'log_level' = null has the wrong type (null)"),
    ],
)
def test_wrong_type_names_the_expected_type(home: Path, line: str, fragment: str) -> None:
    write_user(home, line)
    [problem] = problems_of(None, home)
    assert fragment in problem.message


def test_all_problems_are_collected_into_one_error(home: Path, project: Path) -> None:
    write_user(home, "fusion: mix\ncandidate_pool: 5\n")
    project_file = write_project(project, "log_level: loud\n")
    with pytest.raises(ConfigError) as info:
        load_config(project, home=home, environ={"ENGRAM_RRF_K": "x"})
    error = info.value
    assert isinstance(error, ValueError)
    assert {(p.source, p.key) for p in error.problems} == {
        (USER_FILE, "fusion"),
        (USER_FILE, "candidate_pool"),
        (str(project_file), "log_level"),
        ("env ENGRAM_RRF_K", "rrf_k"),
    }
    lines = str(error).splitlines()
    for problem in error.problems:
        assert any(str(problem) in line for line in lines)


def test_broken_yaml_names_the_file_and_line(home: Path) -> None:
    write(user_config_path(home), "---\nrrf_k: 5\nfusion: [score\nlog_level: info\n---\n")
    [problem] = problems_of(None, home)
    assert problem.source == USER_FILE
    assert problem.key is None
    assert "broken YAML frontmatter at line" in problem.message
    assert str(problem).startswith("~/.claude/engram.local.md: ")


def test_broken_yaml_line_counts_from_the_top_of_the_file(home: Path) -> None:
    write(user_config_path(home), "\n---\nrrf_k: 5\n  bad: : x\n---\n")
    [problem] = problems_of(None, home)
    assert "at line 4," in problem.message


def test_unclosed_or_non_mapping_frontmatter_is_reported(home: Path, project: Path) -> None:
    write(user_config_path(home), "---\nrrf_k: 5\n")
    write(project_config_path(project), "---\n- a\n- b\n---\n")
    problems = problems_of(project, home)
    assert "never closed" in problems[0].message
    assert "must be a mapping" in problems[1].message


def test_scope_weights_must_have_all_three_scopes_in_range(home: Path) -> None:
    write_user(home, "scope_weights: {session: 2, project: 0.5, other: 1}\n")
    messages = [p.message for p in problems_of(None, home)]
    assert any("missing 'user'" in m for m in messages)
    assert any("unknown entries 'other'" in m for m in messages)
    assert any("key 'scope_weights.session' = 2 is out of range" in m for m in messages)


def test_check_config_files_returns_problems_without_raising(home: Path, project: Path) -> None:
    write_user(home, "fusion: mix\n")
    write(project_config_path(project), "---\nrrf_k: [\n---\n")
    problems = check_config_files(project, home=home, environ={"ENGRAM_FUSON": "1"})
    assert [p.source for p in problems] == [USER_FILE, str(project_config_path(project)), "env ENGRAM_FUSON"]
    assert check_config_files(project, home=home / "elsewhere", environ={}) == [
        problems[1]
    ]


# --------------------------------------------------------------------------- scope weights


def test_scope_weight_profiles_say_which_scope_wins_a_near_tie() -> None:
    # measured default: the project's own answer first, then the live session, then the user's habits
    assert SCOPE_WEIGHT_PROFILES["default"] == {"session": 0.60, "project": 1.00, "user": 0.00}
    assert SCOPE_WEIGHT_PROFILES["architecture"] == {"session": 0.15, "project": 0.65, "user": 0.20}
    assert set(SCOPE_WEIGHT_PROFILES) == set(CONFIG_SCHEMA["properties"]["scope_weight_profile"]["enum"])
    for weights in SCOPE_WEIGHT_PROFILES.values():
        assert set(weights) == {"session", "project", "user"} and max(weights.values()) > 0


def test_scope_weights_resolved_follows_the_profile_scaled_to_its_favourite(home: Path) -> None:
    write_user(home, "scope_weight_profile: preferences\n")
    config = load_config(home=home, environ={})
    assert config.scope_weights_resolved() == pytest.approx({"session": 0.10 / 0.7, "project": 0.20 / 0.7, "user": 1.0})


def test_explicit_scope_weights_override_the_profile(home: Path) -> None:
    write_user(home, "scope_weight_profile: codebase\nscope_weights: {session: 0.6, project: 0.3, user: 0.1}\n")
    config = load_config(home=home, environ={})
    assert config.scope_weights_resolved() == pytest.approx({"session": 1.0, "project": 0.5, "user": 0.1 / 0.6})
    resolved = config.scope_weights_resolved()
    resolved["user"] = 1.0
    assert config.scope_weights_resolved()["user"] == pytest.approx(0.1 / 0.6)
    write_user(home, "scope_weights: {session: 0, project: 0, user: 0}\n")  # all equal: no scope is favoured
    assert load_config(home=home, environ={}).scope_weights_resolved() == {"session": 0.0, "project": 0.0, "user": 0.0}


# --------------------------------------------------------------------------- example file


def test_example_file_documents_every_key_with_its_default() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    metadata = frontmatter.loads(text).metadata
    assert set(metadata) == set(CONFIG_SCHEMA["properties"])
    jsonschema.validate(metadata, CONFIG_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert metadata == DEFAULTS
    # every key is preceded by a comment line explaining it
    lines = text.split("---", 2)[1].splitlines()
    for index, line in enumerate(lines):
        if line and not line.startswith(("#", " ")):
            assert lines[index - 1].startswith("#"), f"no comment above {line!r}"
    body = frontmatter.loads(text).content
    assert "~/.claude/engram.local.md" in body and ".claude/engram.local.md" in body
    assert "ENGRAM_" in body


def test_example_file_used_as_a_config_file_loads_the_defaults(home: Path) -> None:
    write(user_config_path(home), EXAMPLE.read_text(encoding="utf-8"))
    config = load_config(home=home, environ={})
    assert config.as_dict() == DEFAULTS
    assert config.sources["log_level"] == USER_FILE


# --------------------------------------------------------------------------- hostile files (issue 12)

ALIAS_BOMB = "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=False)) + "scope_weights: *i\n---\n"
HOSTILE_SECONDS = 0.5
HOSTILE_PEAK_BYTES = 20 * 1024 * 1024


def _lenient_measured(project: Path, home: Path) -> tuple[Config, list[ConfigProblem], float, int]:
    import time
    import tracemalloc

    from engram_mcp.core.config import load_config_lenient

    tracemalloc.start()
    started = time.perf_counter()
    try:
        config, error = load_config_lenient(project, home=home, environ={})
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return config, (error.problems if error else []), seconds, peak


@pytest.mark.parametrize("text", [
    ALIAS_BOMB,
    "---\nfusion: &x rrf\nrrf_k: 5\n---\n",  # an anchor alone
    "---\nscope_weights: {session: 0.2, project: 0.3, user: 0.5}\nfusion: *undefined\n---\n",
], ids=["alias-bomb", "anchor", "alias"])
def test_yaml_aliases_and_anchors_are_refused_at_once_with_bounded_memory(home: Path, project: Path, text: str) -> None:
    write(project_config_path(project), text)
    config, problems, seconds, peak = _lenient_measured(project, home)
    assert seconds < HOSTILE_SECONDS and peak < HOSTILE_PEAK_BYTES, (seconds, peak)
    assert config.as_dict() == DEFAULTS
    assert len(problems) == 1 and problems[0].source == str(project_config_path(project))
    assert "are not allowed" in problems[0].message and "line" in problems[0].message, problems[0].message


@pytest.mark.parametrize("text, expected", [
    ("---\nscope_weights: " + "[" * 30 + "]" * 30 + "\n---\n", "nested deeper"),
    ("---\nrrf_k: [" + ", ".join(["1"] * 6000) + "]\n---\n", "more than"),
    ("---\n" + "k: v\n" * 20_000 + "---\n", "larger than 64 KiB"),
    ("---\nrrf_k: " + "9" * 6000 + "\n---\n", "broken YAML"),
    ("---\nlog_level: 2024-13-45\n---\n", "log_level"),  # an invalid date is text, and not a level
    (b"---\nfusion: \xff\xfe\n---\n", "not UTF-8"),
], ids=["deep", "many-nodes", "oversize", "huge-int", "bad-date", "not-utf8"])
def test_hostile_config_files_are_refused_quickly_and_named(home: Path, project: Path, text: str | bytes, expected: str) -> None:
    path = project_config_path(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    config, problems, seconds, peak = _lenient_measured(project, home)
    assert seconds < HOSTILE_SECONDS and peak < HOSTILE_PEAK_BYTES, (seconds, peak)
    assert config.as_dict() == DEFAULTS
    assert any(expected in p.message for p in problems), [p.message for p in problems]


def test_messages_never_echo_a_large_untrusted_value(home: Path, project: Path) -> None:
    write_project(project, f"fusion: {'z' * 30_000}\nscope_weights: {{session: 0.1, project: 0.1, user: 0.1, {'q' * 1000}: 1}}\n")
    problems = problems_of(project, home)
    assert len(str(ConfigError(problems))) < 2000, str(ConfigError(problems))[:3000]
    assert any("fusion" in p.message and "…" in p.message for p in problems)
    assert any("scope_weights" in p.message and "…" in p.message for p in problems)
    write_project(project, "".join(f"unknown_{i}_{'k' * 200}: [1, 2]\n" for i in range(60)))
    problems = problems_of(project, home)
    assert len(str(ConfigError(problems))) < 8000
    assert problems[-1].message == "... and 40 more problems in this file"


def test_a_linked_project_config_is_refused_and_never_read(home: Path, project: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside.md", "---\ncontext_token_budget: 100\n---\n")
    (project / ".claude").mkdir()
    project_config_path(project).symlink_to(outside)
    problems = problems_of(project, home)
    assert len(problems) == 1 and "symbolic link" in problems[0].message and "defaults" in problems[0].message
    assert str(project_config_path(project)) in problems[0].message and "Fix:" in problems[0].message


def test_a_linked_dot_claude_directory_is_refused_for_the_project_config(home: Path, project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "engram.local.md", "---\ncontext_token_budget: 100\n---\n")
    (project / ".claude").symlink_to(elsewhere)
    problems = problems_of(project, home)
    assert "symbolic link" in problems[0].message and str(project / ".claude") in problems[0].message


def test_the_users_own_config_may_be_a_link(home: Path, tmp_path: Path) -> None:
    dotfiles = write(tmp_path / "dotfiles" / "engram.local.md", "---\ncontext_token_budget: 900\n---\n")
    user_config_path(home).parent.mkdir(parents=True)
    user_config_path(home).symlink_to(dotfiles)
    assert load_config(home=home, environ={}).context_token_budget == 900


def test_a_fifo_or_directory_as_config_is_reported_without_blocking(home: Path, project: Path) -> None:
    (project / ".claude").mkdir()
    os.mkfifo(project_config_path(project))
    problems = problems_of(project, home)
    assert "not a regular file" in problems[0].message
    os.unlink(project_config_path(project))
    project_config_path(project).mkdir()
    assert "is a directory" in problems_of(project, home)[0].message


def test_a_hostile_environment_value_is_a_clipped_problem_not_a_crash(home: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    problems = problems_of(None, home, {"ENGRAM_SCOPE_WEIGHTS": deep, "ENGRAM_RRF_K": "x" * 100_000})
    assert {p.key for p in problems} == {"scope_weights", "rrf_k"}
    assert any("nested too deeply" in p.message for p in problems)
    assert len(str(ConfigError(problems))) < 2000


# --------------------------------------------------------------------------- the fast check


def _candidate_values(schema: dict) -> list:
    """Values around what a property's schema accepts: its enum, its bounds and just past them,
    each JSON type, and the Python values JSON Schema reads differently (bool, 1.0, NaN)."""
    values: list = [None, True, False, 0, 1, -1, 1.0, 0.5, 2.5, float("nan"), float("inf"), "", "x", "default",
                    [], ["a"], {}, {"session": 0.5}, 10**6]
    values += list(schema.get("enum", []))
    for bound in ("minimum", "maximum"):
        if bound in schema:
            b = schema[bound]
            values += [b, b - 1, b + 1, b - 0.001, b + 0.001, float(b), int(b)]
    if "properties" in schema:
        good = {name: 0.5 for name in schema["properties"]}
        values += [good, {**good, "extra": 0.5}, {**good, "user": 2}, {**good, "user": "0.5"},
                   {k: v for k, v in good.items() if k != "user"}]
    return values


def test_the_fast_check_passes_nothing_jsonschema_refuses() -> None:
    """`conforms` lets a layer skip jsonschema (a daemon's start does not import it), so it
    must never pass what jsonschema would refuse; and it passes the defaults and every
    enum value, or it saves nothing."""
    from engram_mcp.core.config import conforms

    validator = jsonschema.Draft202012Validator(CONFIG_SCHEMA)
    passed = 0
    for name, schema in CONFIG_SCHEMA["properties"].items():
        for value in _candidate_values(schema):
            layer = {name: value}
            if conforms(layer, CONFIG_SCHEMA):
                passed += 1
                assert validator.is_valid(layer), (name, value)
    assert conforms(dict(DEFAULTS), CONFIG_SCHEMA)
    assert passed > len(CONFIG_SCHEMA["properties"])
    assert not conforms({"no_such_key": 1}, CONFIG_SCHEMA)
    assert not conforms({"keyword_weight": 0.5}, {**CONFIG_SCHEMA, "minProperties": 2})  # a keyword it does not read


def test_a_valid_config_loads_without_importing_jsonschema(home: Path, project: Path) -> None:
    """The daemon's start reads the config before its model loads: a valid file and environment
    must not pay jsonschema's import, and a mistake in either is still worded by it."""
    import subprocess
    import sys

    write_user(home, "keyword_weight: 0.4\nfusion: rrf\n")
    write_project(project, "candidate_pool: 120\n")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from engram_mcp.core.config import load_config_lenient\n"
        f"cfg, problem = load_config_lenient(Path({str(project)!r}), home=Path({str(home)!r}),"
        " environ={'ENGRAM_INDEX_PERSIST': 'true', **({'ENGRAM_RRF_K': '0'} if sys.argv[1] == 'bad' else {})})\n"
        "print(cfg.keyword_weight, cfg.candidate_pool, problem is not None, 'jsonschema' in sys.modules)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    good = subprocess.run([sys.executable, "-c", code, "good"], capture_output=True, text=True, env=env, check=True)
    assert good.stdout.split() == ["0.4", "120", "False", "False"]
    bad = subprocess.run([sys.executable, "-c", code, "bad"], capture_output=True, text=True, env=env, check=True)
    assert bad.stdout.split() == ["0.4", "120", "True", "True"]


def test_a_key_with_escapes_or_invisible_characters_is_reported_printable_and_stays_unknown(
    home: Path, project: Path
) -> None:
    write_project(project, "fusion\u200b: rrf\n\"\\e[2Jrrf_k\\u202e\": 5\n")
    problems = problems_of(project, home)
    shown = str(ConfigError(problems))
    assert "\x1b" not in shown and "\u202e" not in shown and "\u200b" not in shown
    assert len(problems) == 2 and all("unknown key" in p.message for p in problems)
    assert load_config_lenient_fusion(project, home) == "score"


def load_config_lenient_fusion(project: Path, home: Path) -> str:
    from engram_mcp.core.config import load_config_lenient

    return load_config_lenient(project, home=home, environ={})[0].fusion
