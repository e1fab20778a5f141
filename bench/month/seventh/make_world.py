#!/usr/bin/env python3
"""Generator for the "seventh" coding-month world (Brackenridge Games build tooling).

Running this script rewrites world.json, facts.jsonl and sessions.jsonl in the
folder it lives in. Output is byte-for-byte deterministic (no clocks, no
randomness, fixed key order). Standard library only.

    python3 make_world.py

Session ids (s01..s40), turn numbers, `quiet` and every fact's `taught_in` are
derived from the session list below, so editing a session never leaves them
out of step.
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

WORLD = {
    "projects": [
        {
            "key": "buildhive",
            "name": "buildhive",
            "stack": "Rust (toolchain pinned in rust-toolchain.toml), tokio, axum 0.7, tonic gRPC, sqlx + Postgres 16, tracing, cargo-nextest, clippy, aws-sdk-s3, Ansible + systemd",
            "description": "Build-farm coordinator and agent for Brackenridge Games: the coordinator queues engine and game builds and hands them to Windows, Linux and console-devkit agents; the agent runs jobs and uploads their artifacts.",
        },
        {
            "key": "texbake",
            "name": "texbake",
            "stack": "C++20, CMake 3.29 presets + Ninja, Conan 2, clang 18 and MSVC 19.40, Catch2 v3 + ctest, BC7/BC5 block encoders, meshoptimizer, spdlog, Tracy, ccache, clang-format",
            "description": "Offline asset cooker for the game Hollowmere: turns source textures and meshes into GPU block formats and writes the .lpak packages the engine streams at runtime.",
        },
        {
            "key": "crashdesk",
            "name": "Crashdesk",
            "stack": "Elixir 1.17 / OTP 27, Phoenix 1.7 LiveView, Ecto + Postgres 16, Oban, Bandit, rust-minidump's minidump-stackwalk, MinIO (S3 API), ExUnit, Credo, Dialyxir, Docker images on Nomad",
            "description": "Crash triage service: game clients and playtest builds upload minidumps, which are symbolicated, grouped into signatures and shown to QA, who file Jira issues from them.",
        },
    ],
    "days": 30,
    "start_date": "2026-10-05",
}

# --------------------------------------------------------------------------- facts
# (fact_id, project or None for user scope, type, kind, content, anchors, superseded_by)
FACTS = [
    # ---- user scope
    ("U01", None, "semantic", "convention",
     "Commit messages: imperative subject without the ticket key; the ticket goes in a `Refs:` trailer at the end of the message (e.g. `Refs: BLD-311`). Applies in every repository.",
     ["Refs:"], None),
    ("U02", None, "semantic", "environment",
     "Heavy builds and full test runs go to the user's Linux build box tundra (`ssh tundra`, 32 cores), not the laptop; the tree is synced there with rsync.",
     ["tundra"], "U10"),
    ("U03", None, "semantic", "preference",
     "Any command the user will run more than a couple of times becomes a recipe in the repository's justfile rather than living in shell history or a README.",
     ["justfile"], None),
    ("U04", None, "procedural", "preference",
     "Pull requests are opened as drafts (`gh pr create --draft`) and only marked ready with `gh pr ready` once CI is green.",
     ["--draft"], None),
    ("U05", None, "semantic", "people",
     "Leilani Kahale is the producer: any scope change or slipped date needs her OK, so the user sends her a short note.",
     ["Leilani"], "U11"),
    ("U06", None, "episodic", "fix",
     "Hosts under bkg.lan are only reachable through Tailscale; when curl or ssh to an internal host times out, check `tailscale status` and run `tailscale up` before debugging anything else.",
     ["tailscale up"], None),
    ("U07", None, "semantic", "preference",
     "Performance numbers are measured with hyperfine (`--warmup 3`, several runs, median from --export-json), never from a single timed run.",
     ["hyperfine"], None),
    ("U08", None, "semantic", "convention",
     "Every user-visible change adds a line under `## Unreleased` in the repository's CHANGELOG.md, in the same PR.",
     ["## Unreleased"], None),
    ("U09", None, "semantic", "environment",
     "Dependencies come only through the studio mirror artifactory.bkg.lan (for Hex: HEX_MIRROR=https://artifactory.bkg.lan/artifactory/api/hex/hex-remote); nothing fetches from hex.pm, crates.io or ConanCenter directly.",
     ["artifactory.bkg.lan"], None),
    ("U10", None, "semantic", "environment",
     "The heavy-build box is now moraine (`ssh moraine`, 64-core Threadripper, Ubuntu 24.04); tundra is being wiped and is no longer used.",
     ["moraine"], None),
    ("U11", None, "semantic", "people",
     "Oskar Brandt took over as producer from Leilani Kahale (who moved to live-ops); scope changes and slipped dates now go to Oskar.",
     ["Oskar"], None),
    ("U12", None, "semantic", "preference",
     "Never a plain `git push --force`: rewritten history goes up with `--force-with-lease`, and only on the user's own branches, never on shared ones.",
     ["--force-with-lease"], None),
    ("U13", None, "semantic", "preference",
     "Times in reports, summaries and messages the user posts are written in UTC as ISO 8601 (e.g. 2026-10-16T09:14Z), because the team is split between Montreal and Lisbon.",
     ["ISO 8601"], None),
    # ---- buildhive
    ("B01", "buildhive", "semantic", "environment",
     "The production coordinator runs on hive-01.bkg.lan; its HTTP API listens on port 7420 and agents connect to it over gRPC on 7421.",
     ["7420"], None),
    ("B02", "buildhive", "semantic", "decision",
     "The Rust toolchain is pinned to 1.79.0 in rust-toolchain.toml because the Windows agents' MSVC image is only validated on that compiler; don't use APIs stabilised later.",
     ["1.79.0"], "B13"),
    ("B03", "buildhive", "semantic", "convention",
     "Schema changes are new reversible migrations created with `sqlx migrate add -r <name>` (up and down files); a merged migration is never edited, a new one is added instead.",
     ["sqlx migrate add -r"], None),
    ("B04", "buildhive", "procedural", "procedure",
     "After adding or changing a `sqlx::query!` macro, run `cargo sqlx prepare` and commit the .sqlx/ directory; CI builds with SQLX_OFFLINE=true and fails without the cached query data.",
     ["cargo sqlx prepare"], None),
    ("B05", "buildhive", "semantic", "people",
     "Kofi Mensah owns the farm's pool and scheduling config in farm.toml; any change to that file needs his review.",
     ["Kofi", "farm.toml"], None),
    ("B06", "buildhive", "semantic", "environment",
     "Agents upload build artifacts to the SMB share \\\\nas-02\\builds, one folder per job id.",
     ["nas-02"], "B14"),
    ("B07", "buildhive", "semantic", "convention",
     "Tests are run with `cargo nextest run` (the integration test group is set up in .config/nextest.toml), never with plain `cargo test`.",
     ["cargo nextest run"], None),
    ("B08", "buildhive", "semantic", "environment",
     "Integration tests need the compose Postgres (`docker compose up -d db`), published on localhost:55432 so it doesn't clash with a local 5432; DATABASE_URL in .env points there.",
     ["55432"], None),
    ("B09", "buildhive", "episodic", "fix",
     "Windows agent jobs failed with 'The filename or extension is too long' because workspaces were nested under C:\\hive-agent\\workspaces\\<uuid>; Windows agents use the short workspace root D:\\hw with 8-character job directories.",
     ["D:\\hw"], None),
    ("B10", "buildhive", "semantic", "decision",
     "The devkit pool runs one job per agent: its max_concurrent = 1 is never raised, because a console devkit cannot take two deploys at once.",
     ["max_concurrent = 1"], None),
    ("B11", "buildhive", "semantic", "convention",
     "Library crates define their errors as thiserror enums; anyhow is only allowed in the binaries' main.rs.",
     ["thiserror"], None),
    ("B12", "buildhive", "procedural", "procedure",
     "Coordinator deploys: `ansible-playbook ansible/hive.yml --limit <host>`, then follow `journalctl -u buildhive -f` on that host until the agents have reconnected.",
     ["ansible/hive.yml"], None),
    ("B13", "buildhive", "semantic", "decision",
     "The Rust toolchain pin moved from 1.79.0 to 1.82.0 (rust-toolchain.toml) once the Windows agents' MSVC image was revalidated; APIs up to 1.82 such as iter::repeat_n are fine.",
     ["1.82.0"], None),
    ("B14", "buildhive", "semantic", "environment",
     "Artifacts now go to the Ceph RGW bucket s3://hive-artifacts (endpoint https://rgw.bkg.lan), keyed <job-id>/<artifact>; the SMB share on nas-02 is retired.",
     ["hive-artifacts"], None),
    ("B15", "buildhive", "episodic", "fix",
     "Agents were marked lost during large uploads because blocking std::fs hashing ran on the agent's single-threaded tokio runtime and starved the heartbeat; file hashing runs in `tokio::task::spawn_blocking`.",
     ["spawn_blocking"], None),
    ("B16", "buildhive", "semantic", "environment",
     "The staging coordinator hive-stg.bkg.lan (two Linux agents plus win-bld-09) is where farm, scheduler and agent changes are tried before production.",
     ["hive-stg"], None),
    # ---- texbake
    ("K01", "texbake", "procedural", "convention",
     "texbake is configured only through CMake presets: `cmake --preset linux-clang-rel` on Linux and `win-msvc-rel` on Windows; no hand-written sets of -D flags.",
     ["linux-clang-rel"], None),
    ("K02", "texbake", "procedural", "procedure",
     "On a fresh checkout, install dependencies first with `conan install . -pr:a conan/profiles/linux-clang18 --build=missing`; the CMake preset then picks up the generated toolchain.",
     ["conan/profiles"], None),
    ("K03", "texbake", "semantic", "decision",
     "BC7 textures are encoded with Intel's ispc_texcomp (CompressBlocksBC7), slow profile for release cooks and basic profile for dev cooks.",
     ["ispc_texcomp"], "K12"),
    ("K04", "texbake", "semantic", "people",
     "Yusuf Demir (rendering) reviews every change that alters cooked texture output or the .lpak layout.",
     ["Yusuf"], "K13"),
    ("K05", "texbake", "semantic", "convention",
     "Any change to the .lpak on-disk format bumps kLpakVersion in src/pak/format.h and adds a golden pak under tests/data/golden/.",
     ["kLpakVersion"], None),
    ("K06", "texbake", "episodic", "fix",
     "Linux link errors on std::__cxx11 symbols (spdlog) came from Conan binaries built against libc++; the linux-clang18 Conan profile pins compiler.libcxx=libstdc++11 and packages are rebuilt with --build=missing.",
     ["libstdc++11"], None),
    ("K07", "texbake", "semantic", "environment",
     "The benchmark and test asset set is /mnt/assets/hollowmere-sample (1,840 textures, about 2.1 GB), mounted on the build boxes.",
     ["hollowmere-sample"], None),
    ("K08", "texbake", "semantic", "convention",
     "Only changed lines are formatted, with `git clang-format origin/main`; whole files are never reformatted.",
     ["git clang-format"], None),
    ("K09", "texbake", "episodic", "fix",
     "Windows test discovery failed with exit code 0xc0000135 (DLL not found); test targets copy $<TARGET_RUNTIME_DLLS:target> next to the executable in a POST_BUILD step.",
     ["TARGET_RUNTIME_DLLS"], None),
    ("K10", "texbake", "semantic", "decision",
     "Normal maps (`usage: normal` in .texmeta) are cooked to BC5, two channels with Z rebuilt in the shader, never to BC7.",
     ["BC5"], None),
    ("K11", "texbake", "procedural", "procedure",
     "To profile a cook, configure with -DTEXBAKE_TRACY=ON on top of the preset and attach the Tracy profiler GUI (port 8086, tunnelled over ssh) while the cook runs.",
     ["TEXBAKE_TRACY"], None),
    ("K12", "texbake", "semantic", "decision",
     "BC7 encoding switched from ispc_texcomp to bc7enc_rdo (RDO lambda 0.5 for release cooks): about 18% smaller paks at the same PSNR.",
     ["bc7enc_rdo"], None),
    ("K13", "texbake", "semantic", "people",
     "Mirela Stan (tech art lead) reviews texture output and .lpak layout changes while Yusuf Demir is on parental leave.",
     ["Mirela"], None),
    ("K14", "texbake", "semantic", "environment",
     "Linux builds use ccache with the shared Redis remote storage redis://cache-01.bkg.lan:6379, set in the preset's environment (CCACHE_REMOTE_STORAGE), not in anyone's shell.",
     ["cache-01"], None),
    ("K15", "texbake", "episodic", "fix",
     "sRGB mips came out too dark because they were box-filtered in gamma space; textures with `colorspace: srgb` in their .texmeta are converted to linear before downsampling and back afterwards.",
     ["colorspace: srgb"], None),
    ("K16", "texbake", "episodic", "fix",
     "CCACHE_REMOTE_STORAGE from a configure preset only reaches the compiler when building with `cmake --build --preset <name>`; every configure preset needs a matching build preset, because building by directory silently falls back to the local ccache only.",
     ["--build --preset"], None),
    # ---- crashdesk
    ("C01", "crashdesk", "semantic", "environment",
     "Locally the Phoenix server runs on port 4100 (PORT=4100), because 4000 is taken by the game's telemetry relay on the developers' machines.",
     ["4100"], None),
    ("C02", "crashdesk", "semantic", "environment",
     "Game clients upload crashes as a multipart POST to /api/v1/crashes, with the dump in the upload_file_minidump field and the build in `build`.",
     ["/api/v1/crashes"], "C12"),
    ("C03", "crashdesk", "semantic", "decision",
     "A crash signature is built from the top 5 frames of the crashing thread after normalisation (no addresses, no template arguments).",
     ["top 5 frames"], "C13"),
    ("C04", "crashdesk", "semantic", "people",
     "Aiko Tanabe (QA lead) signs off every change to crash grouping before it merges.",
     ["Aiko"], None),
    ("C05", "crashdesk", "semantic", "environment",
     "Symbolication runs minidump-stackwalk with --symbols-url https://symbols.bkg.lan and a local symbol cache in /var/cache/crashdesk/syms.",
     ["symbols.bkg.lan"], None),
    ("C06", "crashdesk", "episodic", "fix",
     "Large playtest dumps were rejected with HTTP 413 (Plug.Parsers.RequestTooLargeError, 8 MB default); the ingest pipelines' multipart parser sets length: 200_000_000, only on the ingest pipeline.",
     ["200_000_000"], None),
    ("C07", "crashdesk", "semantic", "decision",
     "Raw dumps are stored in the MinIO bucket crash-dumps with a 30-day expiry rule; Postgres keeps only the symbolicated stack and metadata.",
     ["crash-dumps"], None),
    ("C08", "crashdesk", "procedural", "procedure",
     "Deploys: bump the image tag in deploy/crashdesk.nomad.hcl, then `nomad job run` it with NOMAD_ADDR=https://nomad.bkg.lan:4646 (-var env=staging for staging).",
     ["crashdesk.nomad.hcl"], None),
    ("C09", "crashdesk", "semantic", "convention",
     "Grouping normalisation rules live in priv/grouping/rules.exs, and each rule comes with a fixture-based test under test/grouping/.",
     ["rules.exs"], None),
    ("C10", "crashdesk", "episodic", "fix",
     "After an Elixir/OTP bump Dialyzer fails on an old PLT; delete priv/plts/*.plt and rebuild with `mix dialyzer --plt` (the CI cache key includes the OTP and Elixir versions).",
     ["priv/plts"], None),
    ("C11", "crashdesk", "procedural", "procedure",
     "Production migrations run only through the crashdesk-migrate Nomad batch job (`nomad job dispatch crashdesk-migrate`), never from a laptop against the prod database.",
     ["crashdesk-migrate"], None),
    ("C12", "crashdesk", "semantic", "environment",
     "From build 0.44 the game's crash handler uploads to /api/v2/minidumps (same upload_file_minidump field plus an `annotations` JSON part); /api/v1/crashes stays only for older builds.",
     ["/api/v2/minidumps"], None),
    ("C13", "crashdesk", "semantic", "decision",
     "Crash signatures now use the top 3 frames, counted after skipping std::, core runtime and inlined allocator frames (changed from five).",
     ["top 3 frames"], None),
    ("C14", "crashdesk", "semantic", "environment",
     "Staging runs at crashdesk-stg.bkg.lan; playtest builds report their crashes there.",
     ["crashdesk-stg"], None),
    ("C15", "crashdesk", "semantic", "preference",
     "Lists in Crashdesk use keyset pagination on (inserted_at, id); OFFSET paging is not used anywhere in the app.",
     ["keyset"], None),
    ("C16", "crashdesk", "semantic", "people",
     "Declan Roche owns the Nomad cluster and the prod Postgres; resource bumps on Nomad and anything concerning the prod database go through him.",
     ["Declan"], None),
]

# --------------------------------------------------------------------------- helpers


def bash(command: str, output: str = "", error: bool = False) -> dict:
    return {"tool": "Bash", "input": {"command": command}, "output": output, "error": error}


def read(path: str, start: int, text: str) -> dict:
    lines = text.split("\n")
    out = "\n".join(f"{start + i:6d}\t{line}" for i, line in enumerate(lines))
    return {"tool": "Read", "input": {"file_path": path}, "output": out, "error": False}


def edit(path: str, old: str, new: str) -> dict:
    return {"tool": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new},
            "output": f"The file {path} has been updated.", "error": False}


def write(path: str, content: str) -> dict:
    return {"tool": "Write", "input": {"file_path": path, "content": content},
            "output": f"File created successfully at: {path}", "error": False}


def turn(prompt: str, events: list, answer: str, teaches=(), needs=()) -> dict:
    return {"prompt": prompt, "events": list(events), "answer": answer,
            "teaches": list(teaches), "needs": list(needs)}


SESSIONS: list[tuple[str, int, list[dict]]] = []


def session(project: str, day: int, *turns: dict) -> None:
    SESSIONS.append((project, day, list(turns)))


# =========================================================================== sessions
# Day 1 = Monday 2026-10-05. Weekends: days 6-7, 13-14, 20-21, 27-28.

# ---- s01 day 1 buildhive: BLD-311 agent drain
session("buildhive", 1,
    turn("Morning! First thing on my list is BLD-311: ops want to drain an agent (finish the current job, take nothing new) before they reboot it. Have a look at how the agents API is put together before we add anything.",
         [read("src/api/agents.rs", 1, """use axum::{extract::{Path, State}, routing::get, Json, Router};

use crate::{db::AgentRepo, model::{Agent, AgentState}, AppState, ApiError};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/agents", get(list_agents))
        .route("/agents/:id", get(get_agent))
}

async fn list_agents(State(st): State<AppState>) -> Result<Json<Vec<Agent>>, ApiError> {
    Ok(Json(AgentRepo::new(&st.db).list().await?))
}"""),
          read("src/model.rs", 40, """#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type, serde::Serialize)]
#[sqlx(type_name = "agent_state", rename_all = "lowercase")]
pub enum AgentState {
    Idle,
    Busy,
    Lost,
}""")],
         "The agents API is an axum `Router` in src/api/agents.rs, nested under /api/v1 in src/api/mod.rs: `GET /agents` and `GET /agents/:id`, both going through `AgentRepo`. States are the Postgres enum `agent_state` mirrored by `AgentState { Idle, Busy, Lost }` in src/model.rs. A drain fits as `POST /agents/:id/drain` plus two new states, `Draining` and `Drained`, which the scheduler's pick step skips."),
    turn("The live coordinator is hive-01.bkg.lan: HTTP API on 7420, and the agents talk gRPC to it on 7421. Check what it reports for the agents right now so we know which states actually show up.",
         [bash("curl -s http://hive-01.bkg.lan:7420/api/v1/agents | jq -r '.[] | [.name, .pool, .state] | @tsv'",
               "win-bld-01\twindows\tbusy\nwin-bld-02\twindows\tbusy\nwin-bld-03\twindows\tidle\nwin-bld-04\twindows\tbusy\nlnx-bld-01\tlinux\tbusy\nlnx-bld-02\tlinux\tidle\ndk-01\tdevkit\tbusy\ndk-02\tdevkit\tidle")],
         "hive-01.bkg.lan:7420 lists 8 agents: four Windows, two Linux and two devkit agents, and the only states in the wild right now are idle and busy (nothing lost). Noted: HTTP API on 7420, agent gRPC on 7421.",
         teaches=["B01"]),
    turn("Add the endpoint. Draining an idle agent flips it straight to drained; a busy one goes to draining and the scheduler stops handing it work.",
         [edit("src/model.rs", "    Busy,\n    Lost,\n}", "    Busy,\n    Lost,\n    Draining,\n    Drained,\n}"),
          edit("src/api/agents.rs", "        .route(\"/agents/:id\", get(get_agent))\n",
               "        .route(\"/agents/:id\", get(get_agent))\n        .route(\"/agents/:id/drain\", post(drain_agent))\n"),
          edit("src/api/agents.rs", "async fn list_agents(",
               "async fn drain_agent(State(st): State<AppState>, Path(id): Path<i64>) -> Result<Json<Agent>, ApiError> {\n    let repo = AgentRepo::new(&st.db);\n    let agent = repo.get(id).await?.ok_or(ApiError::NotFound)?;\n    let next = if agent.state == AgentState::Busy { AgentState::Draining } else { AgentState::Drained };\n    Ok(Json(repo.set_state(id, next).await?))\n}\n\nasync fn list_agents("),
          edit("src/scheduler/pick.rs", "        .filter(|a| a.state == AgentState::Idle)\n",
               "        .filter(|a| a.state == AgentState::Idle) // Draining/Drained never get new work\n"),
          bash("cargo check", "    Checking buildhive v0.9.2 (/home/ak/src/buildhive/crates/buildhive)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 6.12s")],
         "Added `POST /api/v1/agents/:id/drain`: idle agents go to `Drained`, busy ones to `Draining`; the scheduler only picks `Idle` agents, so both new states are skipped. I still need a migration for the two enum values and a hook that moves Draining to Drained when the running job finishes. `cargo check` is clean."),
    turn("Run the tests. Here it's always `cargo nextest run`, never plain cargo test; the integration group is configured in .config/nextest.toml. The integration tests hit the compose Postgres, which we publish on 55432 so it doesn't fight anyone's local 5432.",
         [bash("cargo nextest run",
               "    Finished `test` profile [unoptimized + debuginfo] target(s) in 21.40s\n    Starting 52 tests across 7 binaries\n        PASS [   0.011s] buildhive api::agents::tests::drain_idle_goes_drained\n        FAIL [   5.004s] buildhive::db_it agents::drain_persists_state\n  thread 'agents::drain_persists_state' panicked at tests/db_it/agents.rs:18:51:\n  called `Result::unwrap()` on an `Err` value: Io(Os { code: 111, kind: ConnectionRefused, message: \"Connection refused\" })\n  ...\n     Summary [   5.380s] 52 tests run: 43 passed, 9 failed, 0 skipped\nerror: test run failed", True),
          bash("docker compose up -d db && docker compose port db 5432",
               "[+] Running 2/2\n ✔ Network buildhive_default  Created\n ✔ Container buildhive-db-1   Started\n0.0.0.0:55432"),
          bash("cargo nextest run",
               "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.38s\n    Starting 52 tests across 7 binaries\n        PASS [   0.214s] buildhive::db_it agents::drain_persists_state\n        ...\n     Summary [   3.902s] 52 tests run: 52 passed, 0 skipped")],
         "First run: all 9 integration tests failed with 'Connection refused' because the compose Postgres wasn't running. After `docker compose up -d db` (published on localhost:55432, which is what DATABASE_URL in .env points at) `cargo nextest run` is green: 52 of 52.",
         teaches=["B07", "B08"]),
    turn("Commit it. How I want commits, here and in every other repo: imperative subject, no ticket key in the subject, and the ticket goes in a trailer at the very end — `Refs: BLD-311`.",
         [bash("git checkout -b ak/bld-311-drain-agent && git add -A && git commit -q -m 'Add agent drain endpoint' -m 'Busy agents finish their current job and get no new work; idle agents go straight to drained.' -m 'Refs: BLD-311' && git log -1 --format='%h %s%n%n%b'",
               "Switched to a new branch 'ak/bld-311-drain-agent'\n4c1d2e9 Add agent drain endpoint\n\nBusy agents finish their current job and get no new work; idle agents go straight to drained.\n\nRefs: BLD-311")],
         "Committed on ak/bld-311-drain-agent: subject 'Add agent drain endpoint', a one-line body, and the `Refs: BLD-311` trailer at the end; no ticket key in the subject.",
         teaches=["U01"]),
    turn("Push and open the PR. I always open mine as drafts and only flip them to ready once CI has gone green.",
         [bash("git push -u origin ak/bld-311-drain-agent && gh pr create --draft --fill --base main",
               "remote: Create a pull request for 'ak/bld-311-drain-agent' on GitHub by visiting: ...\nbranch 'ak/bld-311-drain-agent' set up to track 'origin/ak/bld-311-drain-agent'.\n\nCreating draft pull request for ak/bld-311-drain-agent into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/212")],
         "Pushed and opened draft PR #212 with `gh pr create --draft`. I'll run `gh pr ready 212` once CI is green, not before.",
         teaches=["U04"]),
)

# ---- s02 day 1 crashdesk: CD-57 dump size on the crash page
session("crashdesk", 1,
    turn("Switching to crashdesk. CD-57: the crash detail page should show the dump's size and the game build. Where does ingest put that metadata today?",
         [read("lib/crashdesk_web/controllers/ingest_controller.ex", 8, """  def create(conn, %{"upload_file_minidump" => %Plug.Upload{} = upload} = params) do
    with {:ok, stored} <- Storage.put_dump(upload.path),
         {:ok, crash} <- Crashes.create_crash(%{dump_path: stored, build_id: params["build"]}) do
      Oban.insert!(SymbolicateWorker.new(%{crash_id: crash.id}))
      conn |> put_status(:created) |> json(%{id: crash.id, status: "queued"})
    end
  end"""),
          read("lib/crashdesk/crashes/crash.ex", 6, """  schema "crashes" do
    field :dump_path, :string
    field :build_id, :string
    field :platform, :string
    field :stack, :map
    belongs_to :signature, Crashdesk.Signatures.Signature
    timestamps(type: :utc_datetime_usec)
  end""")],
         "Ingest (IngestController.create) stores the uploaded file, creates a Crash with `dump_path` and `build_id` (from the `build` form field) and enqueues the symbolication job. `build_id` is already on the schema; the size isn't stored anywhere. I'll add a `dump_size` bigint filled from the upload's byte size and render both on CrashLive.Show."),
    turn("Do it, then bring up the dev server and look at a crash page. Locally we run Phoenix on 4100 — 4000 belongs to the game's telemetry relay on all our machines, so don't fight it.",
         [bash("mix ecto.gen.migration add_dump_size_to_crashes",
               "* creating priv/repo/migrations/20261005131204_add_dump_size_to_crashes.exs"),
          write("priv/repo/migrations/20261005131204_add_dump_size_to_crashes.exs",
                "defmodule Crashdesk.Repo.Migrations.AddDumpSizeToCrashes do\n  use Ecto.Migration\n\n  def change do\n    alter table(:crashes) do\n      add :dump_size, :bigint\n    end\n  end\nend\n"),
          edit("lib/crashdesk_web/live/crash_live/show.html.heex", "<dt>Platform</dt>",
               "<dt>Dump</dt><dd><%= format_bytes(@crash.dump_size) %></dd>\n  <dt>Build</dt><dd><%= @crash.build_id %></dd>\n  <dt>Platform</dt>"),
          bash("mix ecto.migrate && (PORT=4100 mix phx.server > /tmp/phx.log 2>&1 &) && sleep 6 && curl -s http://localhost:4100/crashes/8120 | grep -o 'Dump</dt><dd>[^<]*'",
               "13:12:41.870 [info] == Running 20261005131204 Crashdesk.Repo.Migrations.AddDumpSizeToCrashes.change/0 forward\n13:12:41.884 [info] == Migrated 20261005131204 in 0.0s\nDump</dt><dd>3.4 MB")],
         "Added `dump_size` (migration 20261005131204) and the Dump/Build rows on the crash page. Dev server is running on PORT=4100, leaving 4000 to the telemetry relay; /crashes/8120 shows 'Dump 3.4 MB' and its build. Old crashes show a dash until they're backfilled.",
         teaches=["C01"]),
    turn("Now push a sample through the way the game does it: multipart POST to /api/v1/crashes, dump in the upload_file_minidump field, build in `build`. There are fixtures in test/fixtures/dumps/.",
         [edit("lib/crashdesk_web/controllers/ingest_controller.ex",
               "Crashes.create_crash(%{dump_path: stored, build_id: params[\"build\"]})",
               "Crashes.create_crash(%{dump_path: stored, build_id: params[\"build\"], dump_size: File.stat!(upload.path).size})"),
          bash("curl -s -F upload_file_minidump=@test/fixtures/dumps/broadphase_av.dmp -F build=0.42.1187 http://localhost:4100/api/v1/crashes",
               "{\"id\":8121,\"status\":\"queued\"}"),
          bash("curl -s http://localhost:4100/crashes/8121 | grep -o 'Dump</dt><dd>[^<]*'",
               "Dump</dt><dd>2.9 MB")],
         "Ingest now records the size. Posting test/fixtures/dumps/broadphase_av.dmp as multipart to /api/v1/crashes (field upload_file_minidump, build=0.42.1187) returned crash 8121, queued, and its page shows 'Dump 2.9 MB' with the build.",
         teaches=["C02"]),
    turn("Good. Commit and put it up for review. And so you know for later: anything that touches how crashes get grouped has to be signed off by Aiko Tanabe, our QA lead, before it merges. This one doesn't, luckily.",
         [bash("git checkout -qb ak/cd-57-dump-size && git add -A && git commit -q -m 'Show dump size and build on the crash page' -m 'Refs: CD-57' && git push -qu origin ak/cd-57-dump-size && gh pr create --draft --fill",
               "Creating draft pull request for ak/cd-57-dump-size into main in brackenridge-games/crashdesk\n\nhttps://github.com/brackenridge-games/crashdesk/pull/87")],
         "Committed ('Show dump size and build on the crash page', `Refs: CD-57` trailer) and opened draft PR #87. Noted: any grouping change needs Aiko Tanabe's sign-off before merge; this PR doesn't touch grouping.",
         teaches=["C04"], needs=["U01", "U04"]),
)

# ---- s03 day 2 texbake: TEX-140 mip cap, first build
session("texbake", 2,
    turn("texbake today. TEX-140 wants a cap on the number of mips per texture. Start by getting a release build going on this laptop. Configure through the presets only — linux-clang-rel on Linux, win-msvc-rel on the Windows side — and never a hand-rolled pile of -D flags.",
         [bash("cmake --preset linux-clang-rel",
               "Preset CMake variables:\n\n  CMAKE_BUILD_TYPE=\"Release\"\n  CMAKE_TOOLCHAIN_FILE=\"build/linux-clang-rel/generators/conan_toolchain.cmake\"\n\n-- The CXX compiler identification is Clang 18.1.8\nCMake Error at CMakeLists.txt:31 (find_package):\n  By not providing \"Findmeshoptimizer.cmake\" in CMAKE_MODULE_PATH this project\n  has asked CMake to find a package configuration file provided by\n  \"meshoptimizer\", but CMake did not find one.\n\n-- Configuring incomplete, errors occurred!", True)],
         "`cmake --preset linux-clang-rel` fails at find_package(meshoptimizer): the preset expects the Conan toolchain in build/linux-clang-rel/generators/, and on a fresh clone nothing has generated it yet. Dependencies need installing before the configure step.",
         teaches=["K01"]),
    turn("Right, fresh clone. Conan first: `conan install . -pr:a conan/profiles/linux-clang18 --build=missing`, then the preset finds everything.",
         [bash("conan install . -pr:a conan/profiles/linux-clang18 --build=missing",
               "======== Computing dependency graph ========\nGraph root\n    conanfile.py (texbake/0.7.0): /home/ak/src/texbake/conanfile.py\nRequirements\n    catch2/3.7.1 - Downloaded (bkg)\n    meshoptimizer/0.22 - Downloaded (bkg)\n    spdlog/1.14.1 - Downloaded (bkg)\n    fmt/10.2.1 - Downloaded (bkg)\n\n======== Finalizing install (deploy, generators) ========\nconanfile.py (texbake/0.7.0): Generating aggregated env files\nInstall finished successfully"),
          bash("cmake --preset linux-clang-rel >/dev/null && time cmake --build --preset linux-clang-rel",
               "[214/214] Linking CXX executable texbake\n\nreal\t6m41.322s")],
         "After `conan install . -pr:a conan/profiles/linux-clang18 --build=missing` (catch2, meshoptimizer, spdlog, fmt from the bkg remote) the preset configures and the release build finishes — in 6m41s on this laptop.",
         teaches=["K02"]),
    turn("Six minutes is silly. Anything heavy — full builds, the whole ctest run — goes to tundra, my Linux build box (ssh tundra, 32 cores). Same in every repo. Sync the tree over and build there.",
         [bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && conan install . -pr:a conan/profiles/linux-clang18 --build=missing -v quiet && cmake --preset linux-clang-rel >/dev/null && time cmake --build --preset linux-clang-rel'",
               "[214/214] Linking CXX executable texbake\n\nreal\t0m58.204s")],
         "Synced to tundra:~/src/texbake and built there: 58 s instead of 6m41s. Heavy builds and full test runs go to tundra from now on, in any repo.",
         teaches=["U02"]),
    turn("Now the feature: `--max-mips N`, default unlimited, applied after the existing min-size rule. Tests for it, then the full ctest run over there.",
         [edit("src/cli/options.cpp", "  app.add_option(\"--min-mip-size\", opts.min_mip_size, \"smallest mip edge in texels\");\n",
               "  app.add_option(\"--min-mip-size\", opts.min_mip_size, \"smallest mip edge in texels\");\n  app.add_option(\"--max-mips\", opts.max_mips, \"cap on the number of mips per texture (0 = unlimited)\");\n"),
          edit("src/texture/mips.cpp", "  return count;\n}",
               "  if (opts.max_mips > 0) count = std::min(count, opts.max_mips);\n  return count;\n}"),
          edit("tests/texture/mips_test.cpp", "TEST_CASE(\"mip count respects min size\")",
               "TEST_CASE(\"mip count is capped by --max-mips\") {\n  CookOptions o; o.max_mips = 4;\n  CHECK(mip_count(2048, 2048, o) == 4);\n  o.max_mips = 0;\n  CHECK(mip_count(2048, 2048, o) == 12);\n}\n\nTEST_CASE(\"mip count respects min size\")"),
          bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel'",
               "[6/6] Linking CXX executable tests/texbake_tests\n...\n100% tests passed, 0 tests failed out of 143\n\nTotal Test time (real) =  11.87 sec")],
         "Added `--max-mips` (0 = unlimited), applied after the min-size rule in mip_count(), with a test for the cap. Full ctest run on tundra: 143/143 passed."),
    turn("Try it on real data before I open anything. The sample set lives at /mnt/assets/hollowmere-sample — 1,840 textures, mounted on tundra. Cook it with --max-mips 8.",
         [bash("ssh tundra 'cd ~/src/texbake && ./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --out /tmp/cook-cap --max-mips 8 --stats'",
               "cooking 1840 textures from /mnt/assets/hollowmere-sample (2.1 GB)\ncooked 1840 textures (0 failed) in 47.9s\nmips capped: 212 textures\npak: /tmp/cook-cap/sample.lpak 1.62 GiB")],
         "Cooked /mnt/assets/hollowmere-sample (1,840 textures, 2.1 GB) on tundra with --max-mips 8: no failures, 212 textures had their chain capped, pak is 1.62 GiB, 47.9 s.",
         teaches=["K07"]),
)

# ---- s04 day 2 buildhive: drain persisted, CI and sqlx offline data
session("buildhive", 2,
    turn("Back on the drain PR. Add a test for draining an agent that's mid-job: it has to stay draining until the job reports done, then flip to drained. Run the suite after.",
         [edit("tests/db_it/agents.rs", "#[sqlx::test]\nasync fn drain_persists_state",
               "#[sqlx::test]\nasync fn draining_agent_becomes_drained_when_job_finishes(pool: PgPool) {\n    let (agent, job) = fixtures::busy_agent(&pool).await;\n    drain(&pool, agent).await.unwrap();\n    assert_eq!(state(&pool, agent).await, AgentState::Draining);\n    finish_job(&pool, job, JobOutcome::Succeeded).await.unwrap();\n    assert_eq!(state(&pool, agent).await, AgentState::Drained);\n}\n\n#[sqlx::test]\nasync fn drain_persists_state"),
          edit("src/scheduler/events.rs", "        JobEvent::Finished { agent, .. } => repo.set_state(agent, AgentState::Idle).await?,",
               "        JobEvent::Finished { agent, .. } => {\n            let next = if repo.state(agent).await? == AgentState::Draining { AgentState::Drained } else { AgentState::Idle };\n            repo.set_state(agent, next).await?\n        }"),
          bash("docker compose up -d db && cargo nextest run",
               "[+] Running 1/1\n ✔ Container buildhive-db-1  Started\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 14.02s\n    Starting 53 tests across 7 binaries\n        PASS [   0.188s] buildhive::db_it agents::draining_agent_becomes_drained_when_job_finishes\n        ...\n     Summary [   4.117s] 53 tests run: 53 passed, 0 skipped")],
         "Added `draining_agent_becomes_drained_when_job_finishes` and made the job-finished handler move a Draining agent to Drained instead of Idle. Started the compose db first (it was down after the reboot); the suite is 53/53 green.",
         needs=["B07", "B08"]),
    turn("Draining has to survive a coordinator restart, so persist it: a drained_at timestamp on agents. Our rule for schema changes: every migration is reversible, created with `sqlx migrate add -r`, and once one is merged nobody edits it — you add a new one.",
         [bash("sqlx migrate add -r agent_drained_at",
               "Creating migrations/20261006101544_agent_drained_at.up.sql\nCreating migrations/20261006101544_agent_drained_at.down.sql"),
          write("migrations/20261006101544_agent_drained_at.up.sql",
                "ALTER TYPE agent_state ADD VALUE IF NOT EXISTS 'draining';\nALTER TYPE agent_state ADD VALUE IF NOT EXISTS 'drained';\nALTER TABLE agents ADD COLUMN drained_at timestamptz;\n"),
          write("migrations/20261006101544_agent_drained_at.down.sql",
                "ALTER TABLE agents DROP COLUMN drained_at;\n-- enum values cannot be dropped; agents in draining/drained are reset first\nUPDATE agents SET state = 'idle' WHERE state IN ('draining', 'drained');\n"),
          edit("src/db/agents.rs", "        sqlx::query_as!(Agent, \"UPDATE agents SET state = $2 WHERE id = $1 RETURNING *\", id, state as AgentState)",
               "        sqlx::query_as!(Agent,\n            \"UPDATE agents SET state = $2, drained_at = CASE WHEN $2 = 'drained'::agent_state THEN now() END WHERE id = $1 RETURNING *\",\n            id, state as AgentState)"),
          bash("sqlx migrate run && cargo nextest run",
               "Applied 20261006101544/migrate agent drained at (9.412ms)\n    Starting 53 tests across 7 binaries\n     Summary [   4.301s] 53 tests run: 53 passed, 0 skipped")],
         "Created a reversible migration with `sqlx migrate add -r agent_drained_at`: the up file adds the two enum values and `drained_at`, the down file drops the column and resets draining/drained agents to idle (Postgres can't drop enum values). set_state now stamps drained_at. Migration applied locally, tests green.",
         teaches=["B03"]),
    turn("Commit and push, CI should pick it up.",
         [bash("git add -A && git commit -q -m 'Persist agent drain state' -m 'Refs: BLD-311' && git push -q && gh pr checks 212 --watch",
               "Some checks were not successful\n0 cancelled, 1 failing, 1 successful, 0 skipped, and 0 pending checks\n\nX  build  1m12s  https://github.com/brackenridge-games/buildhive/actions/runs/11402231187/job/31729017734\n✓  lint   48s", True),
          bash("gh run view 11402231187 --log-failed | tail -4",
               "build\tcargo build\terror: `SQLX_OFFLINE=true` but there is no cached data for this query, run `cargo sqlx prepare` to update the query cache or unset `SQLX_OFFLINE`\nbuild\tcargo build\t  --> crates/buildhive/src/db/agents.rs:58:9\nbuild\tcargo build\terror: could not compile `buildhive` (lib) due to 1 previous error"),
          bash("cargo sqlx prepare --workspace && git add .sqlx && git commit -q -m 'Update sqlx offline query data' -m 'Refs: BLD-311' && git push -q && gh pr checks 212 --watch",
               "query data written to .sqlx in the workspace root; please check this into version control\nAll checks were successful\n0 cancelled, 0 failing, 2 successful, 0 skipped, and 0 pending checks\n\n✓  build  3m02s\n✓  lint   51s")],
         "CI failed: the build runs with SQLX_OFFLINE=true, and the changed `query_as!` in src/db/agents.rs had no cached data in .sqlx/. I ran `cargo sqlx prepare --workspace`, committed .sqlx ('Update sqlx offline query data', Refs: BLD-311) and pushed; both checks are green now. Any new or edited query! macro needs the same step before pushing.",
         teaches=["B04"]),
)

# ---- s05 day 3 crashdesk: CD-61 symbolication and signatures
session("crashdesk", 3,
    turn("CD-61: we need symbolicated stacks instead of raw addresses. Try by hand on the broadphase fixture first — minidump-stackwalk against our symbol server, https://symbols.bkg.lan, with a local cache under /var/cache/crashdesk/syms.",
         [bash("minidump-stackwalk --symbols-url https://symbols.bkg.lan --symbols-cache /var/cache/crashdesk/syms test/fixtures/dumps/broadphase_av.dmp | sed -n '1,16p'",
               "Operating system: Windows NT\n                  10.0.22631\nCPU: amd64\n     16 CPUs\n\nCrash reason:  EXCEPTION_ACCESS_VIOLATION_READ\nCrash address: 0x0000000000000018\n\nThread 0 (crashed)\n 0  Hollowmere-Win64-Shipping.exe!Loam::Physics::Broadphase::Query(Loam::AABB const&) [broadphase.cpp : 212 + 0x4]\n 1  Hollowmere-Win64-Shipping.exe!Loam::Physics::World::Sweep<Loam::Physics::CapsuleShape>(Loam::Physics::CapsuleShape const&, Loam::Vec3) [world.cpp : 488 + 0x11]\n 2  Hollowmere-Win64-Shipping.exe!Loam::Game::CharacterMover::Step(float) [character_mover.cpp : 131 + 0x9]\n 3  Hollowmere-Win64-Shipping.exe!Loam::Game::World::Tick(float) [game_world.cpp : 77 + 0x5]\n 4  Hollowmere-Win64-Shipping.exe!Loam::Engine::RunFrame() [engine.cpp : 302 + 0x0]\n 5  Hollowmere-Win64-Shipping.exe!WinMain [main_win.cpp : 58 + 0x0]\n 6  kernel32.dll!BaseThreadInitThunk + 0x1d")],
         "Symbolication works against https://symbols.bkg.lan with the cache in /var/cache/crashdesk/syms: the broadphase dump resolves to an access violation at 0x18 in `Loam::Physics::Broadphase::Query` (broadphase.cpp:212), called from World::Sweep and CharacterMover::Step. Next step is running the same command from the Oban worker with --json.",
         teaches=["C05"]),
    turn("Now grouping. What we agreed with QA: the signature is the top 5 frames of the crashing thread, after normalisation — no addresses, no template arguments. Build a Signature module that produces that from the --json output.",
         [write("lib/crashdesk/signatures/signature.ex",
                "defmodule Crashdesk.Signatures.Signature do\n  @moduledoc \"Builds a crash signature from minidump-stackwalk --json output.\"\n\n  @frames 5\n\n  def from_stackwalk(%{\"crashing_thread\" => %{\"frames\" => frames}}) do\n    frames\n    |> Enum.map(&normalise/1)\n    |> Enum.reject(&is_nil/1)\n    |> Enum.take(@frames)\n    |> Enum.join(\" | \")\n  end\n\n  defp normalise(%{\"function\" => nil}), do: nil\n  defp normalise(%{\"function\" => fun}), do: fun |> strip_templates() |> strip_args()\n\n  defp strip_templates(fun), do: Regex.replace(~r/<[^<>]*>/, fun, \"\")\n  defp strip_args(fun), do: Regex.replace(~r/\\(.*\\)$/, fun, \"\")\nend\n"),
          bash("mix compile", "Compiling 1 file (.ex)\nGenerated crashdesk app")],
         "Added Crashdesk.Signatures.Signature: it takes the crashing thread's frames from the --json output, normalises each function name (drops template arguments and parameter lists; frames without a function are skipped, so no raw addresses), keeps the top 5 frames and joins them with ' | '.",
         teaches=["C03"]),
    turn("Tests for it, using the three fixture dumps' JSON.",
         [write("test/crashdesk/signatures/signature_test.exs",
                "defmodule Crashdesk.Signatures.SignatureTest do\n  use ExUnit.Case, async: true\n  alias Crashdesk.Signatures.Signature\n\n  for name <- ~w(broadphase_av audio_mixer_abort streaming_oom) do\n    test \"#{name} signature matches snapshot\" do\n      json = File.read!(\"test/fixtures/stackwalk/#{unquote(name)}.json\") |> Jason.decode!()\n      assert Signature.from_stackwalk(json) == File.read!(\"test/fixtures/signatures/#{unquote(name)}.txt\") |> String.trim()\n    end\n  end\n\n  test \"template arguments are stripped\" do\n    json = %{\"crashing_thread\" => %{\"frames\" => [%{\"function\" => \"Loam::Pool<Loam::Actor>::Get(int)\"}]}}\n    assert Signature.from_stackwalk(json) == \"Loam::Pool::Get\"\n  end\nend\n"),
          bash("mix test test/crashdesk/signatures",
               "....\nFinished in 0.08 seconds (0.08s async, 0.00s sync)\n4 tests, 0 failures\n\nRandomized with seed 551204")],
         "Four tests: snapshot signatures for broadphase_av, audio_mixer_abort and streaming_oom, plus template stripping. All pass."),
    turn("I'll be running that symbolicate-one-dump command by hand a lot this week. Make it a recipe in the justfile — anything I'm going to type more than twice lives there, in any of my repos.",
         [read("justfile", 1, "set dotenv-load\n\nsetup:\n    mix deps.get && mix ecto.setup\n\ntest *args:\n    mix test {{args}}\n\nlint:\n    mix format --check-formatted && mix credo --strict"),
          edit("justfile", "lint:\n",
               "# symbolicate one dump by hand: just symbolicate test/fixtures/dumps/broadphase_av.dmp\nsymbolicate dump *args:\n    minidump-stackwalk --symbols-url https://symbols.bkg.lan --symbols-cache /var/cache/crashdesk/syms {{args}} {{dump}}\n\nlint:\n"),
          bash("just symbolicate test/fixtures/dumps/streaming_oom.dmp | sed -n '6,7p'",
               "Crash reason:  Out of Memory\nCrash address: 0x0000000000000000")],
         "Added a `symbolicate` recipe to the justfile (`just symbolicate <dump> [--json]`), wrapping minidump-stackwalk with the symbol server and cache flags; tried it on streaming_oom.dmp. Repeated commands go into the justfile in your other repos too.",
         teaches=["U03"]),
)

# ---- s06 day 3 texbake: TEX-144 BC7 encoder, libc++ link errors
session("texbake", 3,
    turn("TEX-144: the BC7 path is still a stub. We use Intel's ispc_texcomp for BC7 — CompressBlocksBC7, slow profile for release cooks, basic for dev ones. Wire it into src/encode/bc7.cpp and add the package to conanfile.py.",
         [edit("conanfile.py", "        self.requires(\"meshoptimizer/0.22\")\n",
               "        self.requires(\"meshoptimizer/0.22\")\n        self.requires(\"ispc_texcomp/1.0.0@bkg/stable\")\n"),
          edit("src/encode/bc7.cpp", "std::vector<uint8_t> encode_bc7(const Image& img, const CookOptions& opts) {\n  throw std::runtime_error(\"BC7 not implemented\");\n}",
               "std::vector<uint8_t> encode_bc7(const Image& img, const CookOptions& opts) {\n  bc7_enc_settings settings;\n  if (opts.release) GetProfile_slow(&settings); else GetProfile_basic(&settings);\n  rgba_surface src{const_cast<uint8_t*>(img.data()), int32_t(img.width()), int32_t(img.height()), int32_t(img.stride())};\n  std::vector<uint8_t> out(size_t(img.width() / 4) * (img.height() / 4) * 16);\n  CompressBlocksBC7(&src, out.data(), &settings);\n  return out;\n}"),
          edit("CMakeLists.txt", "find_package(meshoptimizer REQUIRED)\n",
               "find_package(meshoptimizer REQUIRED)\nfind_package(ispc_texcomp REQUIRED)\n")],
         "Wired BC7 through ispc_texcomp: `encode_bc7` fills a `bc7_enc_settings` from GetProfile_slow for release cooks and GetProfile_basic otherwise, then calls CompressBlocksBC7 over the image. Added `ispc_texcomp/1.0.0@bkg/stable` to conanfile.py and the find_package in CMakeLists.txt.",
         teaches=["K03"]),
    turn("Build it on my box and run the encoder tests there.",
         [bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && conan install . -pr:a conan/profiles/linux-clang18 --build=missing -v quiet && cmake --preset linux-clang-rel >/dev/null && cmake --build --preset linux-clang-rel'",
               "[203/214] Linking CXX executable texbake\nFAILED: texbake\nld.lld: error: undefined symbol: spdlog::details::registry::get(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>> const&)\n>>> referenced by log.cpp:14 (src/util/log.cpp:14)\nld.lld: error: undefined symbol: spdlog::logger::err_handler_(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>> const&)\nclang++: error: linker command failed with exit code 1 (use -v to see invocation)\nninja: build stopped: subcommand failed.", True),
          bash("ssh tundra 'cd ~/src/texbake && cat conan/profiles/linux-clang18 && git log --oneline -1 -- conan/profiles/linux-clang18'",
               "[settings]\nos=Linux\narch=x86_64\ncompiler=clang\ncompiler.version=18\ncompiler.libcxx=libc++\ncompiler.cppstd=20\nbuild_type=Release\n[conf]\ntools.build:compiler_executables={\"c\": \"clang-18\", \"cpp\": \"clang++-18\"}\n9b2e441 Add linux-clang18 profile (copied from macos-clang)"),
          edit("conan/profiles/linux-clang18", "compiler.libcxx=libc++", "compiler.libcxx=libstdc++11"),
          bash("rsync -a ./conan/ tundra:src/texbake/conan/ && ssh tundra 'cd ~/src/texbake && conan install . -pr:a conan/profiles/linux-clang18 --build=missing -v quiet && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R encode'",
               "spdlog/1.14.1: Building from source (package 6d0fc2... not found for compiler.libcxx=libstdc++11)\n...\n[214/214] Linking CXX executable texbake\n100% tests passed, 0 tests failed out of 12")],
         "The link failed on spdlog symbols taking `std::__cxx11::basic_string`: our code builds against libstdc++, but conan/profiles/linux-clang18 was copied from the macOS profile and said `compiler.libcxx=libc++`, so Conan had fetched spdlog binaries built against libc++. I set `compiler.libcxx=libstdc++11` in the profile and reinstalled with --build=missing on tundra (spdlog rebuilt from source); texbake links and the 12 encoder tests pass.",
         teaches=["K06"], needs=["U02"]),
    turn("Commit that, both changes. And the sync-rebuild-run-the-encoder-tests dance on the remote box: I want a one-word way to rerun it.",
         [edit("justfile", "test:\n",
               "# rebuild on the build box and run only the encoder tests\nremote-encode-test:\n    rsync -a --delete --exclude build/ ./ tundra:src/texbake/\n    ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R encode'\n\ntest:\n"),
          bash("git checkout -qb ak/tex-144-bc7 && git add -A && git commit -q -m 'Encode BC7 with ispc_texcomp' -m 'Also pin compiler.libcxx=libstdc++11 in the linux-clang18 profile; it was copied from macOS and pulled libc++ binaries.' -m 'Refs: TEX-144' && git log -1 --format=%h",
               "e07c5a3")],
         "Committed as e07c5a3 on ak/tex-144-bc7 ('Encode BC7 with ispc_texcomp', a body about the profile fix, `Refs: TEX-144`). Added `just remote-encode-test`, which syncs to the build box, rebuilds and runs the encoder tests.",
         needs=["U01", "U03"]),
)

# ---- s07 day 4 buildhive: BLD-318 artifact upload
session("buildhive", 4,
    turn("BLD-318: agents should upload a job's artifacts when it finishes, instead of us scraping workspaces afterwards. For now artifacts go to the SMB share \\\\nas-02\\builds, one folder per job id. Sketch the uploader in hive-agent.",
         [read("crates/hive-agent/src/job.rs", 60, """    pub async fn run(&mut self) -> Result<JobOutcome> {
        let outcome = self.execute_steps().await?;
        self.report(outcome).await?;
        Ok(outcome)
    }"""),
          write("crates/hive-agent/src/upload.rs",
                "//! Uploads a finished job's artifacts to the artifact share.\nuse std::path::{Path, PathBuf};\n\npub struct Uploader {\n    root: PathBuf, // \\\\nas-02\\builds, mounted on Linux agents at /mnt/builds\n}\n\nimpl Uploader {\n    pub fn new(root: impl Into<PathBuf>) -> Self {\n        Self { root: root.into() }\n    }\n\n    pub async fn upload(&self, job_id: &str, files: &[PathBuf]) -> anyhow::Result<()> {\n        let dest = self.root.join(job_id);\n        tokio::fs::create_dir_all(&dest).await?;\n        for f in files {\n            copy_in_parts(f, &dest.join(f.file_name().unwrap())).await?;\n        }\n        Ok(())\n    }\n}\n"),
          edit("crates/hive-agent/src/job.rs", "        let outcome = self.execute_steps().await?;\n",
               "        let outcome = self.execute_steps().await?;\n        self.uploader.upload(&self.id, &self.artifacts()).await?;\n")],
         "Sketched crates/hive-agent/src/upload.rs: `Uploader` copies each artifact into `<share>/<job id>/`, where the share is \\\\nas-02\\builds (mounted at /mnt/builds on the Linux agents), and Job::run calls it after the steps and before reporting. `copy_in_parts` is still to write.",
         teaches=["B06"]),
    turn("Copy big files in 64 MiB parts so a dropped connection only loses one part. Build it.",
         [edit("crates/hive-agent/src/upload.rs", "impl Uploader {",
               "const PART: u64 = 64 * 1024 * 1024;\n\nasync fn copy_in_parts(src: &Path, dst: &Path) -> anyhow::Result<()> {\n    let len = tokio::fs::metadata(src).await?.len();\n    let full = (len / PART) as usize;\n    let sizes = std::iter::repeat_n(PART, full).chain((len % PART > 0).then_some(len % PART));\n    copy_ranges(src, dst, sizes).await\n}\n\nimpl Uploader {"),
          bash("cargo build -p hive-agent",
               "   Compiling hive-agent v0.9.2 (/home/ak/src/buildhive/crates/hive-agent)\nerror[E0658]: use of unstable library feature 'iter_repeat_n'\n  --> crates/hive-agent/src/upload.rs:9:28\n   |\n9  |     let sizes = std::iter::repeat_n(PART, full).chain((len % PART > 0).then_some(len % PART));\n   |                            ^^^^^^^^\n   |\n   = note: see issue #104434 <https://github.com/rust-lang/rust/issues/104434> for more information\n\nFor more information about this error, try `rustc --explain E0658`.\nerror: could not compile `hive-agent` (lib) due to 1 previous error", True),
          bash("cat rust-toolchain.toml",
               "[toolchain]\nchannel = \"1.79.0\"\ncomponents = [\"clippy\", \"rustfmt\"]\ntargets = [\"x86_64-pc-windows-msvc\"]"),
          edit("crates/hive-agent/src/upload.rs", "std::iter::repeat_n(PART, full)", "std::iter::repeat(PART).take(full)"),
          bash("cargo build -p hive-agent",
               "   Compiling hive-agent v0.9.2 (/home/ak/src/buildhive/crates/hive-agent)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 8.77s")],
         "`std::iter::repeat_n` isn't stable on our toolchain: rust-toolchain.toml pins 1.79.0, and repeat_n only stabilised later. I used `repeat(PART).take(full)` instead, which is equivalent; hive-agent builds. Files are now copied in 64 MiB parts plus a tail part. Should the pin stay where it is?",
         teaches=["B02"]),
    turn("Yes, leave the pin alone — the Windows agents' MSVC image was only ever validated on that compiler. Next: make the part size configurable per pool instead of a constant. Pool settings live in farm.toml, and that file is Kofi Mensah's; any change there gets his review.",
         [read("farm.toml", 1, """[pools.windows]
agents = ["win-bld-01", "win-bld-02", "win-bld-03", "win-bld-04"]
max_concurrent = 2

[pools.linux]
agents = ["lnx-bld-01", "lnx-bld-02"]
max_concurrent = 4"""),
          edit("farm.toml", "[pools.windows]\nagents = [\"win-bld-01\", \"win-bld-02\", \"win-bld-03\", \"win-bld-04\"]\nmax_concurrent = 2\n",
               "[pools.windows]\nagents = [\"win-bld-01\", \"win-bld-02\", \"win-bld-03\", \"win-bld-04\"]\nmax_concurrent = 2\nupload_part_mib = 64\n"),
          edit("crates/buildhive/src/config.rs", "    pub max_concurrent: u32,\n",
               "    pub max_concurrent: u32,\n    #[serde(default = \"default_part_mib\")]\n    pub upload_part_mib: u64,\n"),
          bash("cargo nextest run -p buildhive config",
               "    Starting 6 tests across 2 binaries (47 skipped)\n     Summary [   0.041s] 6 tests run: 6 passed, 47 skipped")],
         "Pin stays. `upload_part_mib` is now a per-pool setting (default 64, set explicitly for the windows pool) that the coordinator sends to agents with the job; config tests pass. Since this touches farm.toml, the PR will need Kofi Mensah's review.",
         teaches=["B05"]),
    turn("I'm going to rerun the upload smoke test against a scratch job id over and over while this settles. Make that painless.",
         [read("justfile", 1, "set dotenv-load\n\ndb:\n    docker compose up -d db\n\ntest: db\n    cargo nextest run"),
          edit("justfile", "test: db\n",
               "# upload a few fake artifacts for a scratch job id, e.g. just smoke-upload smoke-002\nsmoke-upload job=\"smoke-001\":\n    cargo run -q -p hive-agent -- upload --job {{job}} --files testdata/artifacts/*\n\ntest: db\n"),
          bash("just smoke-upload smoke-001",
               "uploaded 3 files (81.2 MiB, 2 parts) to smoke-001/")],
         "Added a `smoke-upload` recipe to the justfile: `just smoke-upload [job]` (defaults to smoke-001) uploads the fixture artifacts for that job id. First run went through: 3 files, 81.2 MiB.",
         needs=["U03"]),
)

# ---- s08 day 5 crashdesk: MinIO storage
session("crashdesk", 5,
    turn("Morning. The symbolicated stack view from Wednesday — bring the app up locally and make sure the frames render with file and line.",
         [bash("(PORT=4100 mix phx.server > /tmp/phx.log 2>&1 &) && sleep 6 && curl -s http://localhost:4100/crashes/8121 | grep -o '<li class=\"frame\">[^<]*' | head -3",
               "<li class=\"frame\">Loam::Physics::Broadphase::Query\n<li class=\"frame\">Loam::Physics::World::Sweep\n<li class=\"frame\">Loam::Game::CharacterMover::Step"),
          edit("lib/crashdesk_web/components/stack_components.ex", "      <li class=\"frame\"><%= frame[\"function\"] %></li>",
               "      <li class=\"frame\"><%= frame[\"function\"] %> <span class=\"loc\"><%= frame[\"file\"] %>:<%= frame[\"line\"] %></span></li>"),
          bash("curl -s http://localhost:4100/crashes/8121 | grep -o '<span class=\"loc\">[^<]*' | head -2",
               "<span class=\"loc\">broadphase.cpp:212\n<span class=\"loc\">world.cpp:488")],
         "The server is up on localhost:4100 and crash 8121 renders its frames, but only function names. I added file:line to the frame component; the page now shows broadphase.cpp:212, world.cpp:488 and so on.",
         needs=["C01"]),
    turn("Storage got settled in yesterday's design review: raw dumps go to MinIO, bucket crash-dumps, with a 30-day expiry rule; Postgres keeps only the symbolicated stack and the metadata. Move ingest off the local disk.",
         [edit("config/runtime.exs", "config :crashdesk, :dump_dir, System.get_env(\"DUMP_DIR\", \"/var/lib/crashdesk/dumps\")\n",
               "config :crashdesk, :dump_bucket, System.get_env(\"DUMP_BUCKET\", \"crash-dumps\")\n"),
          edit("lib/crashdesk/storage.ex", "  def put_dump(path) do\n    dest = Path.join(dump_dir(), Ecto.UUID.generate() <> \".dmp\")\n    File.cp!(path, dest)\n    {:ok, dest}\n  end",
               "  def put_dump(path) do\n    key = Date.utc_today() |> Calendar.strftime(\"%Y/%m/%d/\") |> Kernel.<>(Ecto.UUID.generate() <> \".dmp\")\n    path\n    |> ExAws.S3.Upload.stream_file()\n    |> ExAws.S3.upload(bucket(), key)\n    |> ExAws.request()\n    |> case do\n      {:ok, _} -> {:ok, key}\n      error -> error\n    end\n  end"),
          bash("mc ilm rule ls bkg/crash-dumps",
               "┌───────────────────────────────────────────────────────────────────────┐\n│ Expiration for latest version (Expiration)                            │\n├──────────────────────┬─────────┬────────┬──────┬────────────────┬─────┤\n│ ID                   │ STATUS  │ PREFIX │ TAGS │ DAYS TO EXPIRE │ ... │\n├──────────────────────┼─────────┼────────┼──────┼────────────────┼─────┤\n│ cs3d1q9ek8b2rhv5g0f0 │ Enabled │ -      │ -    │             30 │ ... │\n└──────────────────────┴─────────┴────────┴──────┴────────────────┴─────┘")],
         "Ingest now streams the upload to MinIO, bucket crash-dumps, under a YYYY/MM/DD/<uuid>.dmp key, and `dump_path` stores that key; the bucket's expiry rule (30 days) is in place. Postgres keeps only the metadata and, once symbolicated, the stack.",
         teaches=["C07"]),
    turn("Write an end-to-end test that uploads a dump exactly the way the game client does and checks the object lands in storage.",
         [write("test/crashdesk_web/ingest_e2e_test.exs",
                "defmodule CrashdeskWeb.IngestE2ETest do\n  use CrashdeskWeb.ConnCase\n  @moduletag :minio\n\n  test \"a client-style multipart upload is stored and queued\", %{conn: conn} do\n    upload = %Plug.Upload{path: \"test/fixtures/dumps/broadphase_av.dmp\", filename: \"broadphase_av.dmp\"}\n    conn = post(conn, \"/api/v1/crashes\", %{\"upload_file_minidump\" => upload, \"build\" => \"0.42.1187\"})\n    assert %{\"id\" => id, \"status\" => \"queued\"} = json_response(conn, 201)\n    crash = Crashdesk.Crashes.get!(id)\n    assert {:ok, %{status_code: 200}} = ExAws.S3.head_object(\"crash-dumps\", crash.dump_path) |> ExAws.request()\n    assert_enqueued worker: Crashdesk.Workers.SymbolicateWorker, args: %{crash_id: id}\n  end\nend\n"),
          bash("mix test test/crashdesk_web/ingest_e2e_test.exs --include minio",
               "Including tags: [:minio]\n\n.\nFinished in 0.6 seconds (0.00s async, 0.6s sync)\n1 test, 0 failures")],
         "Added test/crashdesk_web/ingest_e2e_test.exs: it posts the broadphase fixture exactly like the client (multipart to /api/v1/crashes, field upload_file_minidump, build form field), expects 201 queued, checks the object exists in crash-dumps and that the symbolication job was enqueued. Tagged :minio because it needs the local MinIO; passes.",
         needs=["C02"]),
)

# ---- s09 day 5 texbake: TEX-152 mip count in the pak header
session("texbake", 5,
    turn("TEX-152: the runtime wants the mip count in the pak's texture header so the streamer doesn't have to parse payloads. Show me the header struct.",
         [read("src/pak/format.h", 12, """inline constexpr uint32_t kLpakMagic = 0x4B50414C;  // 'LAPK'
inline constexpr uint32_t kLpakVersion = 6;

struct TextureHeader {
  uint64_t name_hash;
  uint32_t width;
  uint32_t height;
  uint16_t format;      // BlockFormat
  uint16_t flags;
  uint32_t payload_size;
  uint64_t payload_offset;
  uint8_t  reserved[8];
};
static_assert(sizeof(TextureHeader) == 40);""")],
         "TextureHeader in src/pak/format.h is 40 bytes: name hash, width, height, a 16-bit format, 16-bit flags, payload size and offset, and 8 reserved bytes at the end. The mip count could go into `reserved` without changing the size, or after `format`, which grows the struct."),
    turn("Put a uint8 mip_count right after format, keep the struct 8-byte aligned, and run the pak tests on my box.",
         [edit("src/pak/format.h", "  uint16_t format;      // BlockFormat\n  uint16_t flags;\n",
               "  uint16_t format;      // BlockFormat\n  uint8_t  mip_count;\n  uint8_t  pad0;\n  uint16_t flags;\n  uint16_t pad1;\n"),
          edit("src/pak/format.h", "static_assert(sizeof(TextureHeader) == 40);", "static_assert(sizeof(TextureHeader) == 48);"),
          bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R pak'",
               "Test #88: pak.golden.reads_v6_basic ...........***Failed    0.02 sec\n  tests/pak/golden_test.cpp:31: FAILED:\n    REQUIRE( reader.open(\"tests/data/golden/v6_basic.lpak\") )\n  with message: header size mismatch: file has 40-byte texture headers, reader expects 48\nTest #89: pak.golden.roundtrip ....................   Passed    0.05 sec\n\n93% tests passed, 1 tests failed out of 14", True),
          read("docs/pak-format.md", 5, """## Changing the format

Every change to the on-disk layout MUST bump `kLpakVersion` in src/pak/format.h
and add a golden pak for the new version under tests/data/golden/
(`texbake pak-golden --out tests/data/golden/v<N>_basic.lpak`).
Readers keep accepting older versions; never regenerate an existing golden file."""),
          edit("src/pak/format.h", "inline constexpr uint32_t kLpakVersion = 6;", "inline constexpr uint32_t kLpakVersion = 7;"),
          edit("src/pak/reader.cpp", "  if (hdr.version != kLpakVersion) return Error::kVersion;\n",
               "  if (hdr.version < 6 || hdr.version > kLpakVersion) return Error::kVersion;\n  const size_t tex_header_size = hdr.version >= 7 ? sizeof(TextureHeader) : 40;\n"),
          bash("ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ./build/linux-clang-rel/texbake pak-golden --out tests/data/golden/v7_basic.lpak && ctest --preset linux-clang-rel -R pak' && scp -q tundra:src/texbake/tests/data/golden/v7_basic.lpak tests/data/golden/",
               "wrote tests/data/golden/v7_basic.lpak (3 textures, 18.4 KiB)\n100% tests passed, 0 tests failed out of 15")],
         "The new field grew TextureHeader to 48 bytes and the v6 golden pak stopped loading. docs/pak-format.md spells out the rule: any layout change bumps `kLpakVersion` in src/pak/format.h and adds a golden pak under tests/data/golden/, and old goldens are never regenerated. So: kLpakVersion 6 → 7, the reader accepts v6 (40-byte headers) and v7 (48), and there's a new tests/data/golden/v7_basic.lpak. All 15 pak tests pass.",
         teaches=["K05"]),
    turn("Looks right. Open the PR, and put Yusuf Demir on it — he reviews anything that changes texture output or the pak layout, no exceptions.",
         [bash("git checkout -qb ak/tex-152-mip-count && git add -A && git commit -q -m 'Store the mip count in pak texture headers' -m 'Bumps kLpakVersion to 7; readers still accept v6.' -m 'Refs: TEX-152' && git push -qu origin ak/tex-152-mip-count && gh pr create --draft --fill --reviewer ydemir",
               "Creating draft pull request for ak/tex-152-mip-count into main in brackenridge-games/texbake\n\nhttps://github.com/brackenridge-games/texbake/pull/58")],
         "Draft PR #58 is open ('Store the mip count in pak texture headers', `Refs: TEX-152`) with Yusuf Demir (ydemir) requested as reviewer, as for any change to texture output or the pak layout.",
         teaches=["K04"], needs=["U01", "U04"]),
    turn("One more: the changelog. Every user-visible change gets a line under ## Unreleased in CHANGELOG.md, in the same PR. That's how I do it everywhere.",
         [read("CHANGELOG.md", 1, "# Changelog\n\n## Unreleased\n\n- `texbake cook --max-mips N` caps the mip chain per texture.\n\n## 0.7.0 - 2026-09-21"),
          edit("CHANGELOG.md", "- `texbake cook --max-mips N` caps the mip chain per texture.\n",
               "- `texbake cook --max-mips N` caps the mip chain per texture.\n- Pak format v7: texture headers carry the mip count (readers still accept v6).\n"),
          bash("git commit -qam 'Add changelog entry for pak v7' -m 'Refs: TEX-152' && git push -q && git log --oneline -2",
               "a51f0d2 Add changelog entry for pak v7\n3e9c7b1 Store the mip count in pak texture headers")],
         "Added 'Pak format v7: texture headers carry the mip count (readers still accept v6)' under ## Unreleased in CHANGELOG.md and pushed it to PR #58. I'll add a changelog line with every user-visible change, in all your repos.",
         teaches=["U08"]),
)

# ---- s10 day 8 buildhive (long): Tailscale, Windows long paths, staging
session("buildhive", 8,
    turn("Monday, working from the flat today. How's the live coordinator's queue looking?",
         [bash("curl -s --max-time 10 http://hive-01.bkg.lan:7420/api/v1/queue | jq length",
               "curl: (28) Connection timed out after 10001 milliseconds", True),
          bash("ssh -o ConnectTimeout=5 hive-01.bkg.lan uptime",
               "ssh: connect to host hive-01.bkg.lan port 22: Connection timed out", True),
          bash("tailscale status", "Tailscale is stopped.", True),
          bash("tailscale up && curl -s http://hive-01.bkg.lan:7420/api/v1/queue | jq -c 'group_by(.pool) | map({pool: .[0].pool, queued: length})'",
               "[{\"pool\":\"devkit\",\"queued\":2},{\"pool\":\"linux\",\"queued\":3},{\"pool\":\"windows\",\"queued\":14}]")],
         "The coordinator was fine; the timeouts were on our side. Both curl and ssh to hive-01.bkg.lan timed out because `tailscale status` said 'Tailscale is stopped', and bkg.lan hosts are only reachable over the tailnet. After `tailscale up` the queue answers: 14 jobs waiting for windows, 3 for linux, 2 for devkit. The Windows backlog looks high.",
         teaches=["U06"], needs=["B01"]),
    turn("The Windows backlog is because job 48113 died on win-bld-04 overnight and took a retry storm with it: 'The filename or extension is too long'. Dig in.",
         [bash("curl -s http://hive-01.bkg.lan:7420/api/v1/jobs/48113/log | grep -m1 -B2 'too long'",
               "[cook] writing C:\\hive-agent\\workspaces\\5f0c8e2a-91d4-4f7e-b1a2-8c3d9e0f4a61\\Hollowmere\\Intermediate\\Cook\\Windows\\Content\\Environment\\Wetlands\\Props\\Boardwalk\\SM_Boardwalk_Plank_Broken_03_LOD2.ubulk\n[cook] error MSB3491: Could not write lines to file \"...\\SM_Boardwalk_Plank_Broken_03_LOD2.tlog\". The filename or extension is too long.\n[agent] step 'cook' failed with exit code 1"),
          bash("ssh win-bld-04 'powershell -NoProfile -c \"(Get-ItemProperty HKLM:\\SYSTEM\\CurrentControlSet\\Control\\FileSystem).LongPathsEnabled\"'",
               "0"),
          read("crates/hive-agent/src/workspace.rs", 8, """#[cfg(windows)]
const WORKSPACE_ROOT: &str = r"C:\\hive-agent\\workspaces";
#[cfg(not(windows))]
const WORKSPACE_ROOT: &str = "/var/lib/hive-agent/ws";

pub fn job_dir(job_id: &Uuid) -> PathBuf {
    Path::new(WORKSPACE_ROOT).join(job_id.to_string())
}"""),
          edit("crates/hive-agent/src/workspace.rs", "const WORKSPACE_ROOT: &str = r\"C:\\hive-agent\\workspaces\";", "const WORKSPACE_ROOT: &str = r\"D:\\hw\";"),
          edit("crates/hive-agent/src/workspace.rs", "    Path::new(WORKSPACE_ROOT).join(job_id.to_string())",
               "    // 8 hex chars keeps cook paths well under MAX_PATH on Windows\n    Path::new(WORKSPACE_ROOT).join(&job_id.simple().to_string()[..8])")],
         "Root cause: the workspace path itself. Jobs ran in C:\\hive-agent\\workspaces\\<36-char uuid>\\, and with the engine's deep Intermediate\\Cook tree the .tlog path hit 263 characters, over Windows' 260 MAX_PATH; LongPathsEnabled is 0 on win-bld-04, and MSBuild's file tracker wouldn't honour it anyway. I moved the Windows workspace root to D:\\hw and job directories to the first 8 hex characters of the job id, so the same file is now at 187 characters.",
         teaches=["B09"]),
    turn("And if two job ids share their first 8 characters? Handle it, with a test.",
         [edit("crates/hive-agent/src/workspace.rs", "pub fn job_dir(job_id: &Uuid) -> PathBuf {\n    // 8 hex chars keeps cook paths well under MAX_PATH on Windows\n    Path::new(WORKSPACE_ROOT).join(&job_id.simple().to_string()[..8])\n}",
               "pub fn job_dir(job_id: &Uuid) -> PathBuf {\n    claim(Path::new(WORKSPACE_ROOT), job_id)\n}\n\n/// First free `<8 hex>` or `<8 hex>-<n>` directory, or the one this job already owns.\nfn claim(root: &Path, job_id: &Uuid) -> PathBuf {\n    // 8 hex chars keeps cook paths well under MAX_PATH on Windows\n    let short = &job_id.simple().to_string()[..8];\n    let dir = (0..)\n        .map(|n| if n == 0 { root.join(short) } else { root.join(format!(\"{short}-{n}\")) })\n        .find(|p| !p.exists() || owner_of(p).as_ref() == Some(job_id))\n        .unwrap();\n    std::fs::create_dir_all(&dir).unwrap();\n    std::fs::write(dir.join(\".owner\"), job_id.to_string()).unwrap();\n    dir\n}"),
          edit("crates/hive-agent/src/workspace.rs", "#[cfg(test)]\nmod tests {\n",
               "#[cfg(test)]\nmod tests {\n    #[test]\n    fn colliding_prefixes_get_a_suffix() {\n        let tmp = tempfile::tempdir().unwrap();\n        let a = Uuid::parse_str(\"5f0c8e2a-0000-4000-8000-000000000001\").unwrap();\n        let b = Uuid::parse_str(\"5f0c8e2a-0000-4000-8000-000000000002\").unwrap();\n        let da = claim(tmp.path(), &a);\n        let db = claim(tmp.path(), &b);\n        assert_eq!(da.file_name().unwrap(), \"5f0c8e2a\");\n        assert_eq!(db.file_name().unwrap(), \"5f0c8e2a-1\");\n    }\n"),
          bash("cargo nextest run -p hive-agent workspace",
               "    Starting 4 tests across 1 binary (31 skipped)\n        PASS [   0.004s] hive-agent workspace::tests::colliding_prefixes_get_a_suffix\n     Summary [   0.019s] 4 tests run: 4 passed, 31 skipped")],
         "A colliding prefix now gets a numeric suffix (5f0c8e2a, 5f0c8e2a-1, ...); the agent writes the full job id into a .owner file in the directory so a retry of the same job finds its own directory again. The new test covers two ids sharing a prefix; workspace tests pass."),
    turn("I'm not putting this straight onto hive-01. We have a staging coordinator for exactly this: hive-stg.bkg.lan, two Linux agents plus win-bld-09. Changes to the farm or the agents get tried there first.",
         [bash("curl -s http://hive-stg.bkg.lan:7420/api/v1/agents | jq -r '.[] | [.name, .pool, .state, .version] | @tsv'",
               "lnx-stg-01\tlinux\tidle\t0.9.1\nlnx-stg-02\tlinux\tidle\t0.9.1\nwin-bld-09\twindows\tidle\t0.9.1")],
         "Staging at hive-stg.bkg.lan has lnx-stg-01, lnx-stg-02 and win-bld-09, all idle on agent 0.9.1. Farm and agent changes go there before hive-01.",
         teaches=["B16"]),
    turn("Deploy there. It's the Ansible playbook — `ansible-playbook ansible/hive.yml --limit hive-stg` — and afterwards you watch journalctl -u buildhive until the agents have reconnected.",
         [bash("ansible-playbook ansible/hive.yml --limit hive-stg",
               "PLAY [buildhive coordinator and agents] ****************************************\n\nTASK [Gathering Facts] *********************************************************\nok: [hive-stg]\n\nTASK [buildhive : install release] *********************************************\nchanged: [hive-stg]\n\nTASK [hive-agent : roll agents] ************************************************\nchanged: [hive-stg] => (item=win-bld-09)\n\nRUNNING HANDLER [buildhive : restart buildhive] ********************************\nchanged: [hive-stg]\n\nPLAY RECAP *********************************************************************\nhive-stg                   : ok=11   changed=3    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0"),
          bash("ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"3 min ago\" --no-pager | grep -E \"listening|agent connected\"'",
               "Oct 12 11:04:51 hive-stg buildhive[20814]: INFO buildhive: listening http=0.0.0.0:7420 grpc=0.0.0.0:7421\nOct 12 11:04:55 hive-stg buildhive[20814]: INFO agent connected name=lnx-stg-01 version=0.9.2\nOct 12 11:04:56 hive-stg buildhive[20814]: INFO agent connected name=lnx-stg-02 version=0.9.2\nOct 12 11:05:31 hive-stg buildhive[20814]: INFO agent connected name=win-bld-09 version=0.9.2")],
         "Deployed with `ansible-playbook ansible/hive.yml --limit hive-stg` (3 changed, 0 failed). journalctl -u buildhive shows the coordinator listening again and all three agents reconnected on 0.9.2, win-bld-09 last after its service restart.",
         teaches=["B12"]),
    turn("Kick a Windows smoke job on staging and check its artifacts made it to where artifacts go.",
         [bash("curl -s -X POST http://hive-stg.bkg.lan:7420/api/v1/jobs -H 'content-type: application/json' -d '{\"recipe\":\"smoke-win\",\"pool\":\"windows\"}' | jq -r .id",
               "a3c91f07-6d2e-4b8a-9c51-0e7f3d2b8a44"),
          bash("sleep 240; curl -s http://hive-stg.bkg.lan:7420/api/v1/jobs/a3c91f07-6d2e-4b8a-9c51-0e7f3d2b8a44 | jq -r '.state, .workspace'",
               "succeeded\nD:\\hw\\a3c91f07"),
          bash("smbclient //nas-02/builds -A ~/.smb-bkg -c 'ls a3c91f07-6d2e-4b8a-9c51-0e7f3d2b8a44\\*'",
               "  .                                   D        0  Mon Oct 12 11:12:40 2026\n  ..                                  D        0  Mon Oct 12 11:12:40 2026\n  smoke.lpak                          A 41943552  Mon Oct 12 11:12:38 2026\n  cook.log                            A   218841  Mon Oct 12 11:12:39 2026\n  manifest.json                       A     1822  Mon Oct 12 11:12:40 2026")],
         "Smoke job a3c91f07 succeeded on win-bld-09 in D:\\hw\\a3c91f07, and its three artifacts (smoke.lpak, cook.log, manifest.json) are in \\\\nas-02\\builds\\a3c91f07-6d2e-4b8a-9c51-0e7f3d2b8a44\\.",
         needs=["B06"]),
    turn("This ticket has grown: path fix, collision handling, staging rollout. None of that was in the plan. Leilani Kahale is our producer and she signs off on any scope change, so draft her a short note I can paste into Slack.",
         [],
         "Here's a note for Leilani Kahale:\n\n> Hi Leilani, BLD-322 grew past the original ticket. Besides the retry fix, Windows agents needed a workspace path change (a long-path failure on win-bld-04 blocked the Windows queue overnight), a collision guard for the shorter directory names, and a staging rollout before production. It's about two extra days of work and it pushes BLD-318 (artifact uploads) back by the same. OK to go ahead?\n\nI'll check with her the same way whenever scope or dates move.",
         teaches=["U05"]),
    turn("Changelog line and PR, then I'm done for today.",
         [edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Windows agents run jobs in D:\\hw\\<8-char id> to stay under MAX_PATH.\n"),
          bash("git checkout -qb ak/bld-322-win-paths && git add -A && git commit -q -m 'Use short workspace paths on Windows agents' -m 'Refs: BLD-322' && git push -qu origin ak/bld-322-win-paths && gh pr create --draft --fill",
               "Creating draft pull request for ak/bld-322-win-paths into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/219")],
         "Added the changelog line under Unreleased, committed ('Use short workspace paths on Windows agents', Refs: BLD-322) and opened draft PR #219. I'll mark it ready when CI passes.",
         needs=["U08"]),
)

# ---- s11 day 8 crashdesk: Hex mirror, grouping rules, keyset paging
session("crashdesk", 8,
    turn("CD-70: file Jira issues straight from a crash page. Add Req for the HTTP side, the old httpc helper has to go anyway.",
         [edit("mix.exs", "      {:oban, \"~> 2.18\"},\n", "      {:oban, \"~> 2.18\"},\n      {:req, \"~> 0.5\"},\n"),
          bash("mix deps.get",
               "Resolving Hex dependencies...\n** (Mix) httpc request failed with: {:failed_connect, [{:to_address, {~c\"repo.hex.pm\", 443}}, {:inet, [:inet], :nxdomain}]}\n\nCould not fetch registry from https://repo.hex.pm", True)],
         "Added `{:req, \"~> 0.5\"}` to mix.exs, but `mix deps.get` can't resolve repo.hex.pm from this machine (nxdomain). Is there a proxy or mirror I should be going through?"),
    turn("Of course — nothing here goes out to hex.pm, crates.io or ConanCenter directly. The studio mirror is artifactory.bkg.lan for all of it; for Hex, set HEX_MIRROR to https://artifactory.bkg.lan/artifactory/api/hex/hex-remote.",
         [bash("HEX_MIRROR=https://artifactory.bkg.lan/artifactory/api/hex/hex-remote mix deps.get",
               "Resolving Hex dependencies...\nResolution completed in 0.231s\nNew:\n  finch 0.19.0\n  mint 1.6.2\n  nimble_options 1.1.1\n  nimble_pool 1.1.0\n  req 0.5.8\n* Getting req (Hex package)\n* Getting finch (Hex package)\n..."),
          edit(".envrc", "export PORT=4100\n", "export PORT=4100\nexport HEX_MIRROR=https://artifactory.bkg.lan/artifactory/api/hex/hex-remote\n")],
         "With HEX_MIRROR pointing at https://artifactory.bkg.lan/artifactory/api/hex/hex-remote, deps resolve: req 0.5.8 plus finch, mint and friends. I put the export in .envrc so it sticks for this repo; everything else (Cargo, Conan) goes through artifactory.bkg.lan as well.",
         teaches=["U09"]),
    turn("Different thing. Template arguments are splitting one crash into dozens of signatures. The normalisation rules live in priv/grouping/rules.exs — add one that strips <...> from function names before anything else. Every rule comes with a fixture-based test under test/grouping/.",
         [read("priv/grouping/rules.exs", 1, """# Applied in order to every frame's function name before signatures are built.
[
  {:replace, ~r/\\+0x[0-9a-f]+$/, ""},          # trailing offsets
  {:replace, ~r/`anonymous namespace'::/, ""},  # MSVC anonymous namespaces
  {:drop_frame, ~r/^(ntdll|KERNELBASE)\\.dll!/}
]"""),
          edit("priv/grouping/rules.exs", "[\n  {:replace, ~r/\\+0x[0-9a-f]+$/, \"\"},",
               "[\n  {:strip_nested, \"<\", \">\"},                  # template arguments, nesting-aware\n  {:replace, ~r/\\+0x[0-9a-f]+$/, \"\"},"),
          write("test/grouping/strip_templates_test.exs",
                "defmodule Crashdesk.Grouping.StripTemplatesTest do\n  use ExUnit.Case, async: true\n  import Crashdesk.GroupingFixtures\n\n  test \"pool instantiations collapse to one signature\" do\n    sigs = for f <- ~w(pool_actor pool_projectile pool_decal), do: signature_for(f)\n    assert Enum.uniq(sigs) == [\"Loam::Pool::Get | Loam::World::Spawn | Loam::Game::Wave::Tick | Loam::Game::World::Tick | Loam::Engine::RunFrame\"]\n  end\nend\n"),
          bash("mix test test/grouping",
               "......\nFinished in 0.1 seconds (0.1s async, 0.00s sync)\n6 tests, 0 failures")],
         "Added a nesting-aware `{:strip_nested, \"<\", \">\"}` as the first rule in priv/grouping/rules.exs, and test/grouping/strip_templates_test.exs, which checks that three Pool<...> fixture dumps now collapse into a single signature. The grouping tests pass (6).",
         teaches=["C09"]),
    turn("Before I ask for review: check the three original fixture dumps still come out with the frame count we agreed, and remind me who has to approve this one.",
         [bash("mix run -e 'for f <- ~w(broadphase_av audio_mixer_abort streaming_oom), do: IO.puts(Crashdesk.GroupingFixtures.signature_for(f))'",
               "Loam::Physics::Broadphase::Query | Loam::Physics::World::Sweep | Loam::Game::CharacterMover::Step | Loam::Game::World::Tick | Loam::Engine::RunFrame\nLoam::Audio::Mixer::Abort | Loam::Audio::Mixer::Render | Loam::Audio::Device::Callback | Loam::Platform::Thread::Run | kernel32.dll!BaseThreadInitThunk\nLoam::Mem::Arena::Grow | Loam::Streaming::Loader::Load | Loam::Streaming::Loader::Pump | Loam::Engine::RunFrame | WinMain")],
         "All three still produce five normalised frames, identical to the snapshots; stripping template arguments only changes the Pool fixtures. Because this changes grouping, it needs Aiko Tanabe's sign-off before it merges. I'll list her as required approver in the PR description.",
         needs=["C03", "C04"]),
    turn("Last thing today: the crash list takes 4 s on the prod snapshot (210k rows) because it pages with OFFSET. Switch it to keyset pagination on (inserted_at, id). I don't want OFFSET anywhere in this app.",
         [edit("lib/crashdesk/crashes.ex", "  def list_crashes(page, per_page \\\\ 50) do\n    Crash\n    |> order_by(desc: :inserted_at)\n    |> offset(^((page - 1) * per_page))\n    |> limit(^per_page)\n    |> Repo.all()\n  end",
               "  def list_crashes(cursor \\\\ nil, per_page \\\\ 50) do\n    Crash\n    |> order_by(desc: :inserted_at, desc: :id)\n    |> after_cursor(cursor)\n    |> limit(^per_page)\n    |> Repo.all()\n  end\n\n  defp after_cursor(q, nil), do: q\n  defp after_cursor(q, {at, id}), do: where(q, [c], {c.inserted_at, c.id} < {^at, ^id})"),
          edit("lib/crashdesk_web/live/crash_live/index.ex", "    {:ok, assign(socket, crashes: Crashes.list_crashes(1), page: 1)}",
               "    crashes = Crashes.list_crashes()\n    {:ok, assign(socket, crashes: crashes, cursor: Crashes.cursor(List.last(crashes)))}"),
          bash("mix test && psql crashdesk_snapshot -c \"EXPLAIN ANALYZE SELECT * FROM crashes WHERE (inserted_at, id) < ('2026-09-30 12:00', 180000) ORDER BY inserted_at DESC, id DESC LIMIT 50\" | tail -2",
               "Finished in 2.3 seconds (1.1s async, 1.2s sync)\n118 tests, 0 failures\n Planning Time: 0.142 ms\n Execution Time: 0.611 ms")],
         "The crash list now uses keyset pagination: ordered by (inserted_at, id) descending, the next page continues after the last row's pair, with the index on (inserted_at, id). On the prod snapshot a page takes 0.6 ms instead of 4 s. Tests pass (118). I'll use keyset paging for any other list in Crashdesk too.",
         teaches=["C15"]),
)

# ---- s12 day 9 texbake: format check, BC5 normals
session("texbake", 9,
    turn("CI's format job is red on the pak PR. Fix it, but only on the lines we touched. I never want whole files reformatted: `git clang-format` against origin/main, that's the rule in this repo.",
         [bash("gh pr checks 58",
               "X  format   22s  https://github.com/brackenridge-games/texbake/actions/runs/11455012344/job/31877201110\n✓  linux    9m12s\n✓  windows  14m40s", True),
          bash("git fetch -q origin && git clang-format origin/main",
               "changed files:\n    src/pak/format.h\n    src/pak/reader.cpp"),
          bash("git diff --stat && git commit -qam 'Format pak header changes' -m 'Refs: TEX-152' && git push -q && gh pr checks 58 --watch",
               " src/pak/format.h   | 4 ++--\n src/pak/reader.cpp | 3 ++-\n 2 files changed, 4 insertions(+), 3 deletions(-)\nAll checks were successful\n✓  format   19s\n✓  linux    9m03s\n✓  windows  14m22s")],
         "`git clang-format origin/main` reformatted only the lines the PR touched (4 in format.h, 3 in reader.cpp), nothing else in those files. Committed and pushed; format, linux and windows checks are all green.",
         teaches=["K08"]),
    turn("Next, TEX-158. Normal maps cook to BC7 today. Decision from the rendering sync: normal maps go to BC5 — two channels, the shader rebuilds Z — and never BC7. Route anything with `usage: normal` in its .texmeta to BC5.",
         [read("src/cook/select_format.cpp", 20, """BlockFormat select_format(const TexMeta& meta, const Image& img) {
  if (meta.usage == Usage::kUi) return BlockFormat::kRGBA8;
  if (img.has_alpha()) return BlockFormat::kBC7;
  return BlockFormat::kBC7;
}"""),
          edit("src/cook/select_format.cpp", "  if (meta.usage == Usage::kUi) return BlockFormat::kRGBA8;\n",
               "  if (meta.usage == Usage::kUi) return BlockFormat::kRGBA8;\n  if (meta.usage == Usage::kNormal) return BlockFormat::kBC5;  // XY only, Z rebuilt in the shader\n"),
          edit("tests/cook/select_format_test.cpp", "TEST_CASE(\"ui textures stay uncompressed\")",
               "TEST_CASE(\"normal maps use BC5\") {\n  CHECK(select_format(meta_with(Usage::kNormal), rgb_image(256, 256)) == BlockFormat::kBC5);\n  CHECK(select_format(meta_with(Usage::kNormal), rgba_image(256, 256)) == BlockFormat::kBC5);\n}\n\nTEST_CASE(\"ui textures stay uncompressed\")")],
         "select_format now sends `usage: normal` textures to BC5 before the alpha check, so a normal map never ends up in BC7 even if it has an alpha channel; the encoder keeps only X and Y. Added a test for both the RGB and RGBA cases.",
         teaches=["K10"]),
    turn("Debug build on my Linux box, then run just the format-selection tests.",
         [bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && cmake --preset linux-clang-dbg >/dev/null && cmake --build --preset linux-clang-dbg && ctest --preset linux-clang-dbg -R select_format'",
               "[214/214] Linking CXX executable texbake\nTest #40: cook.select_format.normal_maps_use_BC5 ....   Passed    0.01 sec\nTest #41: cook.select_format.ui_textures_stay_uncompressed ...   Passed    0.01 sec\nTest #42: cook.select_format.alpha_goes_BC7 ...........   Passed    0.01 sec\n\n100% tests passed, 0 tests failed out of 3")],
         "Debug build through the linux-clang-dbg preset on tundra, then ctest -R select_format: 3/3 pass, including the new normal-map case.",
         needs=["K01"]),
)

# ---- s13 day 9 crashdesk: signatures paging, staging deploy, rebase
session("crashdesk", 9,
    turn("The signatures index has the same slow paging the crash list had. Same treatment, please.",
         [edit("lib/crashdesk/signatures.ex", "    |> offset(^((page - 1) * per_page))\n",
               "    |> Crashdesk.Paging.after_cursor(cursor, [:last_seen_at, :id])\n"),
          bash("mix ecto.gen.migration signatures_last_seen_id_index",
               "* creating priv/repo/migrations/20261013094120_signatures_last_seen_id_index.exs"),
          write("priv/repo/migrations/20261013094120_signatures_last_seen_id_index.exs",
                "defmodule Crashdesk.Repo.Migrations.SignaturesLastSeenIdIndex do\n  use Ecto.Migration\n  @disable_ddl_transaction true\n\n  def change do\n    create index(:signatures, [desc: :last_seen_at, desc: :id], concurrently: true)\n  end\nend\n"),
          bash("mix test test/crashdesk/signatures_test.exs", "..........\nFinished in 0.4 seconds\n10 tests, 0 failures")],
         "Signatures now page by cursor on (last_seen_at, id) with a matching index (created concurrently), using the after_cursor helper I pulled out into Crashdesk.Paging. No OFFSET left in the app. Tests pass.",
         needs=["C15"]),
    turn("Ship both to staging. Staging is crashdesk-stg.bkg.lan, which is also where the playtest builds send their crashes; deploys are `nomad job run deploy/crashdesk.nomad.hcl` after bumping the image tag in that file, with NOMAD_ADDR=https://nomad.bkg.lan:4646.",
         [bash("docker build -q -t registry.bkg.lan/crashdesk:2026.10.13-1 . && docker push -q registry.bkg.lan/crashdesk:2026.10.13-1",
               "sha256:6a1d9e...\nregistry.bkg.lan/crashdesk:2026.10.13-1"),
          edit("deploy/crashdesk.nomad.hcl", "  default = \"registry.bkg.lan/crashdesk:2026.10.07-2\"",
               "  default = \"registry.bkg.lan/crashdesk:2026.10.13-1\""),
          bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job run -var env=staging deploy/crashdesk.nomad.hcl",
               "==> 2026-10-13T13:41:07Z: Monitoring evaluation \"5b1e0c2a\"\n    2026-10-13T13:41:07Z: Evaluation triggered by job \"crashdesk-staging\"\n    2026-10-13T13:41:08Z: Allocation \"a41f9d07\" created: node \"3c0e9a51\", group \"web\"\n==> 2026-10-13T13:41:08Z: Evaluation \"5b1e0c2a\" finished with status \"complete\"\n==> 2026-10-13T13:41:08Z: Monitoring deployment \"e2f3a1b4\"\n  ✓ Deployment \"e2f3a1b4\" successful"),
          bash("curl -s https://crashdesk-stg.bkg.lan/healthz", "{\"status\":\"ok\",\"version\":\"2026.10.13-1\"}")],
         "Built and pushed registry.bkg.lan/crashdesk:2026.10.13-1, bumped the image default in deploy/crashdesk.nomad.hcl and ran `nomad job run -var env=staging` against https://nomad.bkg.lan:4646; the deployment succeeded and https://crashdesk-stg.bkg.lan/healthz reports the new version.",
         teaches=["C14", "C08"]),
    turn("main moved under us. Rebase the PR branch and push. And never a bare --force from me: --force-with-lease, only on my own branches, never on anything shared. That goes for every repo.",
         [bash("git fetch -q origin && git rebase origin/main",
               "Successfully rebased and updated refs/heads/ak/cd-66-keyset."),
          bash("git push --force-with-lease",
               "To github.com:brackenridge-games/crashdesk.git\n + 9e1f2a3...4b7c8d1 ak/cd-66-keyset -> ak/cd-66-keyset (forced update)")],
         "Rebased ak/cd-66-keyset onto origin/main (no conflicts) and pushed with `--force-with-lease`. I'll only rewrite your own branches, always with the lease, and never force-push shared ones.",
         teaches=["U12"]),
)

# ---- s14 day 10 buildhive: heartbeat starvation
session("buildhive", 10,
    turn("Staging is flapping: agents go 'lost' for half a minute whenever a job uploads something big, then come back. Find out why.",
         [bash("ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"2 hours ago\" --no-pager | grep -E \"heartbeat|lost|reconnected\" | tail -4'",
               "Oct 14 08:51:02 hive-stg buildhive[20814]: WARN agent heartbeat missed name=lnx-stg-02 last_seen=31.4s\nOct 14 08:51:02 hive-stg buildhive[20814]: WARN agent marked lost name=lnx-stg-02 job=c81e20b4\nOct 14 08:51:37 hive-stg buildhive[20814]: INFO agent reconnected name=lnx-stg-02\nOct 14 08:51:37 hive-stg buildhive[20814]: INFO upload finished job=c81e20b4 bytes=4294967296"),
          read("crates/hive-agent/src/main.rs", 14, """#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let cfg = Config::load()?;
    let hb = tokio::spawn(heartbeat::run(cfg.clone()));   // every 10 s, coordinator marks lost after 30 s"""),
          read("crates/hive-agent/src/upload.rs", 31, """    for f in files {
        let digest = sha256_file(f)?;   // std::fs::File + 1 MiB read loop
        manifest.push(Entry { name: file_name(f), sha256: digest });"""),
          edit("crates/hive-agent/src/upload.rs", "        let digest = sha256_file(f)?;   // std::fs::File + 1 MiB read loop\n",
               "        // blocking I/O: keep it off the runtime thread or the heartbeat starves\n        let path = f.clone();\n        let digest = tokio::task::spawn_blocking(move || sha256_file(&path)).await??;\n"),
          bash("cargo build -q -p hive-agent --release && scp -q target/release/hive-agent lnx-stg-02.bkg.lan:/tmp/ && ssh lnx-stg-02.bkg.lan 'sudo install /tmp/hive-agent /usr/local/bin/ && sudo systemctl restart hive-agent' && curl -s -X POST http://hive-stg.bkg.lan:7420/api/v1/jobs -d '{\"recipe\":\"upload-4g\",\"pool\":\"linux\"}' -H 'content-type: application/json' >/dev/null && sleep 90 && ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"2 min ago\" --no-pager | grep -cE \"heartbeat missed|marked lost\"'",
               "0")],
         "Root cause: the agent runs a current_thread tokio runtime, and artifact hashing (`sha256_file`, a std::fs read loop) ran directly inside the async upload. Hashing a 4 GiB file blocked the only runtime thread for about 35 s, the 10-second heartbeat task never got scheduled, and the coordinator marks an agent lost after 30 s. Hashing now runs in `tokio::task::spawn_blocking`. I put the new build on lnx-stg-02 and ran the same 4 GiB upload: no missed heartbeats.",
         teaches=["B15"]),
    turn("Full test run, please, integration tests included.",
         [bash("docker compose up -d db && cargo nextest run --workspace",
               "[+] Running 1/1\n ✔ Container buildhive-db-1  Running\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 19.77s\n    Starting 61 tests across 9 binaries\n        ...\n     Summary [   5.288s] 61 tests run: 61 passed, 0 skipped")],
         "Compose db was already running; `cargo nextest run --workspace`: 61 tests, all passed, integration group included.",
         needs=["B07", "B08"]),
    turn("Cargo.lock should only move if the agent change really needs it. Check.",
         [bash("git diff --stat origin/main -- Cargo.lock", "")],
         "It doesn't: Cargo.lock is unchanged against origin/main, and the branch only touches crates/hive-agent/src/upload.rs."),
    turn("Squash the fixup commits into one, add the usual changelog line, and update the PR.",
         [bash("GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash origin/main && git log --oneline origin/main..",
               "7d20c4e Hash artifacts off the agent's runtime thread"),
          edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Agents no longer drop to lost while hashing large artifacts.\n"),
          bash("git commit -qam 'Add changelog entry for heartbeat fix' -m 'Refs: BLD-327' && git push --force-with-lease && gh pr create --draft --fill",
               " + 51aa0e3...9c3f1d8 ak/bld-327-heartbeat -> ak/bld-327-heartbeat (forced update)\nCreating draft pull request for ak/bld-327-heartbeat into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/224")],
         "Autosquashed the fixups into 'Hash artifacts off the agent's runtime thread', added the changelog line under Unreleased, pushed with --force-with-lease (it's your branch) and opened draft PR #224.",
         needs=["U12"]),
)

# ---- s15 day 10 texbake: benchmarks, Tracy, ccache
session("texbake", 10,
    turn("How slow is the BC7 release cook on the sample textures, on my box? I want numbers I can quote: hyperfine, --warmup 3, report the median. Never a single run, for any benchmark you do for me.",
         [bash("ssh tundra 'cd ~/src/texbake && hyperfine --warmup 3 --runs 10 --export-json /tmp/bc7.json \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --only bc7 --out /tmp/c\" && jq \".results[0] | {median, stddev}\" /tmp/bc7.json'",
               "Benchmark 1: ./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --only bc7 --out /tmp/c\n  Time (mean ± σ):     41.318 s ±  0.402 s    [User: 1268.114 s, System: 7.902 s]\n  Range (min … max):   40.771 s … 42.051 s    10 runs\n\n{\n  \"median\": 41.2094,\n  \"stddev\": 0.4017\n}")],
         "BC7-only release cook of /mnt/assets/hollowmere-sample on tundra, hyperfine with 3 warmups and 10 runs: median 41.21 s (stddev 0.40 s, range 40.77-42.05 s). That's the number to quote. Benchmarks get the same treatment from now on: hyperfine, warmups, median.",
         teaches=["U07"], needs=["K07", "U02"]),
    turn("Where does the time go? Profile a cook: configure with -DTEXBAKE_TRACY=ON on top of the preset and I'll attach the Tracy GUI from my laptop while it runs.",
         [bash("ssh tundra 'cd ~/src/texbake && cmake --preset linux-clang-rel -DTEXBAKE_TRACY=ON >/dev/null && cmake --build --preset linux-clang-rel && (./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --only bc7 --out /tmp/c --wait-for-profiler &)' && ssh -fN -L 8086:localhost:8086 tundra && echo tunnel up",
               "[31/31] Linking CXX executable texbake\ntexbake: Tracy enabled, waiting for profiler on port 8086\ntunnel up")],
         "Reconfigured with -DTEXBAKE_TRACY=ON on top of linux-clang-rel, rebuilt, and started a cook with --wait-for-profiler. Port 8086 is tunnelled to your laptop, so connect the Tracy GUI to localhost and the cook starts once it's attached. From earlier runs I'd expect most of the time in CompressBlocksBC7 with the slow profile.",
         teaches=["K11"]),
    turn("Confirmed, 71% in the encoder. For dev cooks use the encoder's faster profile; release cooks keep the slow one.",
         [read("src/encode/bc7.cpp", 14, """  bc7_enc_settings settings;
  if (opts.release) GetProfile_slow(&settings); else GetProfile_basic(&settings);"""),
          edit("src/encode/bc7.cpp", "  if (opts.release) GetProfile_slow(&settings); else GetProfile_basic(&settings);",
               "  if (opts.release) GetProfile_slow(&settings); else GetProfile_veryfast(&settings);"),
          bash("ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && hyperfine --warmup 3 --runs 5 --export-json /tmp/dev.json \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --only bc7 --dev --out /tmp/c\" >/dev/null && jq .results[0].median /tmp/dev.json'",
               "[3/3] Linking CXX executable texbake\n9.8871")],
         "Dev cooks now use ispc_texcomp's GetProfile_veryfast instead of basic; release stays on GetProfile_slow. A dev BC7 cook of the sample set now takes a 9.89 s median (hyperfine, 5 runs).",
         needs=["K03"]),
    turn("One more: clean builds on tundra still take 9 minutes after every branch switch. Point ccache at the shared remote store, redis://cache-01.bkg.lan:6379, through the preset's environment and not my shell.",
         [edit("CMakePresets.json", "      \"name\": \"linux-base\",\n      \"hidden\": true,\n",
               "      \"name\": \"linux-base\",\n      \"hidden\": true,\n      \"environment\": {\n        \"CCACHE_REMOTE_STORAGE\": \"redis://cache-01.bkg.lan:6379\",\n        \"CCACHE_REMOTE_ONLY\": \"false\"\n      },\n"),
          bash("rsync -a ./CMakePresets.json tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && rm -rf build/linux-clang-rel && cmake --preset linux-clang-rel >/dev/null && ccache -z >/dev/null && time cmake --build --preset linux-clang-rel >/dev/null && ccache -s | grep -E \"Hits|Remote\"'",
               "\nreal\t0m41.880s\nCacheable calls:    214 / 214 (100.0%)\n  Hits:             203 / 214 (94.86%)\n  Remote storage:\n    Hits:           203 / 214 (94.86%)")],
         "Added CCACHE_REMOTE_STORAGE=redis://cache-01.bkg.lan:6379 to the linux-base preset's environment, so every Linux preset inherits it and nothing depends on your shell. A from-scratch build on tundra now takes 42 s with 203/214 remote hits (the first build after this fills the cache for everyone).",
         teaches=["K14"]),
)

# ---- s16 day 11 texbake: normal map cook test, Windows test discovery
session("texbake", 11,
    turn("Add a cook test asserting that a normal map's texmeta ends up with the right block format in the pak.",
         [write("tests/cook/normal_map_pak_test.cpp",
                "#include <catch2/catch_test_macros.hpp>\n#include \"cook/cook.h\"\n#include \"pak/reader.h\"\n\nTEST_CASE(\"normal maps land in the pak as two-channel blocks\") {\n  auto out = test::cook_one(\"tests/data/textures/rock_n.png\", \"tests/data/textures/rock_n.texmeta\");\n  PakReader pak(out.pak_path);\n  REQUIRE(pak.texture_count() == 1);\n  CHECK(pak.texture(0).format == BlockFormat::kBC5);\n  CHECK(pak.texture(0).mip_count == 11);\n}\n"),
          bash("rsync -a --delete --exclude build/ ./ tundra:src/texbake/ && ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R normal_map'",
               "Test #97: cook.normal_maps_land_in_the_pak_as_two_channel_blocks ...   Passed    0.31 sec\n\n100% tests passed, 0 tests failed out of 1")],
         "Added tests/cook/normal_map_pak_test.cpp: it cooks rock_n.png with its texmeta (`usage: normal`), opens the pak and checks the texture is stored as BC5 with its full chain of 11 mips. Passes on the build box.",
         needs=["K10"]),
    turn("The Windows CI job has been red since yesterday, something in test discovery. Have a look.",
         [bash("gh run view --job 31901177204 --log-failed | tail -6",
               "windows\tBuild\tCMake Error at build/win-msvc-rel/_deps/catch2-src/extras/CatchAddTests.cmake:74 (message):\nwindows\tBuild\t  Error running test executable\nwindows\tBuild\t  'D:/a/texbake/texbake/build/win-msvc-rel/tests/texbake_tests.exe':\nwindows\tBuild\t    Result: Exit code 0xc0000135\nwindows\tBuild\t    Output:\nwindows\tBuild\tninja: build stopped: subcommand failed.", True),
          read("tests/CMakeLists.txt", 1, """add_executable(texbake_tests ${TEST_SOURCES})
target_link_libraries(texbake_tests PRIVATE texbake_core Catch2::Catch2WithMain)
catch_discover_tests(texbake_tests)"""),
          edit("tests/CMakeLists.txt", "catch_discover_tests(texbake_tests)",
               "# Windows: discovery runs the exe at build time, so its DLLs must sit next to it\nadd_custom_command(TARGET texbake_tests POST_BUILD\n  COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_RUNTIME_DLLS:texbake_tests> $<TARGET_FILE_DIR:texbake_tests>\n  COMMAND_EXPAND_LISTS)\ncatch_discover_tests(texbake_tests)"),
          bash("git commit -qam 'Copy runtime DLLs next to the test executable on Windows' -m 'Refs: TEX-161' && git push -q && gh run watch --exit-status | tail -2",
               "✓ windows in 14m51s (ID 31902640087)\n✓ linux in 9m10s (ID 31902640012)")],
         "0xc0000135 is STATUS_DLL_NOT_FOUND: catch_discover_tests runs texbake_tests.exe at build time to list the tests, and since yesterday's change made spdlog a shared library on Windows, the exe couldn't find spdlog.dll next to it. tests/CMakeLists.txt now copies `$<TARGET_RUNTIME_DLLS:texbake_tests>` next to the executable in a POST_BUILD step. Windows and Linux CI are green again.",
         teaches=["K09"]),
)

# ---- s17 day 12 buildhive: fetching artifacts, devkit pool
session("buildhive", 12,
    turn("Still at home. Pull the artifacts of last night's job 48211 onto my laptop, I want to diff the pak sizes against the night before.",
         [bash("tailscale status | head -1", "Tailscale is stopped.", True),
          bash("tailscale up && mkdir -p ~/tmp/48211 && smbclient //nas-02/builds -A ~/.smb-bkg -c 'prompt OFF; lcd ~/tmp/48211; cd 48211-b07e; mget *.lpak'",
               "getting file \\48211-b07e\\hollowmere_core.lpak of size 3221225472 as hollowmere_core.lpak (72913.4 KiloBytes/sec) (average 72913.4 KiloBytes/sec)\ngetting file \\48211-b07e\\hollowmere_wetlands.lpak of size 1895825408 as hollowmere_wetlands.lpak (72501.9 KiloBytes/sec) (average 72709.8 KiloBytes/sec)"),
          bash("ls -l ~/tmp/48211 ~/tmp/48190 | awk '{print $5, $9}'",
               "\n3221225472 hollowmere_core.lpak\n1895825408 hollowmere_wetlands.lpak\n\n3198204416 hollowmere_core.lpak\n1895825408 hollowmere_wetlands.lpak")],
         "Tailscale was off again, so I brought it up first, then pulled the two paks from \\\\nas-02\\builds\\48211-b07e into ~/tmp/48211. Compared with job 48190: hollowmere_core.lpak grew by 23,021,056 bytes (about 22 MiB, +0.7%); wetlands is byte-for-byte the same size.",
         needs=["B06", "U06"]),
    turn("Add the two new devkit agents, dk-03 and dk-04, to the farm config. Hard rule for that pool: max_concurrent = 1, one job per agent, and it never gets raised — a devkit can't take two deploys at once.",
         [read("farm.toml", 10, """[pools.devkit]
agents = ["dk-01", "dk-02"]
max_concurrent = 1"""),
          edit("farm.toml", "agents = [\"dk-01\", \"dk-02\"]\nmax_concurrent = 1",
               "agents = [\"dk-01\", \"dk-02\", \"dk-03\", \"dk-04\"]\n# one job per devkit: a devkit cannot take two deploys at once. Never raise this.\nmax_concurrent = 1"),
          bash("cargo run -q -p buildhive -- check-config farm.toml",
               "farm.toml ok: 3 pools, 12 agents (devkit: 4 agents, max_concurrent 1)")],
         "Added dk-03 and dk-04 to [pools.devkit]. max_concurrent = 1 stays, with a comment saying why it must never be raised; check-config passes (4 devkit agents).",
         teaches=["B10"]),
    turn("Open it for review with whoever has to approve pool config changes.",
         [bash("git checkout -qb ak/bld-330-devkits && git commit -qam 'Add dk-03 and dk-04 to the devkit pool' -m 'Refs: BLD-330' && git push -qu origin ak/bld-330-devkits && gh pr create --draft --fill --reviewer kmensah",
               "Creating draft pull request for ak/bld-330-devkits into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/226")],
         "Draft PR #226 ('Add dk-03 and dk-04 to the devkit pool', Refs: BLD-330) is open with Kofi Mensah (kmensah) requested, since it changes farm.toml.",
         needs=["B05"]),
)

# ---- s18 day 12 crashdesk: weekly summary, raw dump, allocator rule
session("crashdesk", 12,
    turn("Write the playtest crash summary for #hollowmere-qa: this week's five biggest signatures with counts and first/last seen. Times in UTC, ISO 8601 — half the team is in Lisbon, half in Montreal — and I always want them that way.",
         [bash("mix run priv/scripts/weekly_summary.exs --since 2026-10-09T00:00:00Z --limit 5",
               "count  first_seen            last_seen             signature\n  412  2026-10-09T18:02:11Z  2026-10-16T09:14:55Z  Loam::Physics::Broadphase::Query | ...\n  233  2026-10-10T20:40:03Z  2026-10-16T08:59:21Z  Loam::Mem::Arena::Grow | Loam::Streaming::Loader::Load | ...\n  151  2026-10-12T14:11:47Z  2026-10-15T22:31:09Z  Loam::Audio::Mixer::Abort | ...\n   64  2026-10-14T16:02:30Z  2026-10-16T07:48:12Z  Loam::Net::Session::OnPacket | ...\n   38  2026-10-15T11:20:44Z  2026-10-16T06:03:37Z  Loam::Pool::Get | Loam::World::Spawn | ...")],
         "Draft for #hollowmere-qa:\n\n**Playtest crashes, 2026-10-09T00:00Z to 2026-10-16T09:15Z**\n1. Broadphase::Query access violation: 412 (first 2026-10-09T18:02Z, last 2026-10-16T09:14Z)\n2. Arena::Grow OOM while streaming: 233 (2026-10-10T20:40Z to 2026-10-16T08:59Z)\n3. Audio mixer abort: 151 (2026-10-12T14:11Z to 2026-10-15T22:31Z)\n4. Net::Session::OnPacket: 64, new on 2026-10-14T16:02Z\n5. Pool::Get during wave spawns: 38, new on 2026-10-15T11:20Z\n\nAll times UTC in ISO 8601; I'll write times that way in anything I draft for you.",
         teaches=["U13"]),
    turn("Grab the raw dump behind crash 8812 so I can open it in WinDbg.",
         [bash("mix run -e 'IO.puts Crashdesk.Crashes.get!(8812).dump_path'", "2026/10/15/3fa9c2d1-7b7e-4c11-9a0e-55d2f1e8b6a3.dmp"),
          bash("mc cp bkg/crash-dumps/2026/10/15/3fa9c2d1-7b7e-4c11-9a0e-55d2f1e8b6a3.dmp ~/Downloads/crash-8812.dmp",
               "...3fa9c2d1-7b7e-4c11-9a0e-55d2f1e8b6a3.dmp: 4.12 MiB / 4.12 MiB ┃▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓▓┃ 38.71 MiB/s 0s")],
         "Copied it from the dump bucket (key 2026/10/15/3fa9c2d1-....dmp) to ~/Downloads/crash-8812.dmp, 4.12 MiB. It's from 2026-10-15, so it has until about 2026-11-14 before the expiry rule removes the original.",
         needs=["C07"]),
    turn("Add a normalisation that collapses the different allocator entry points — malloc, operator new, Loam::Mem::Alloc — into one frame, with its test, and get it in front of the right person.",
         [edit("priv/grouping/rules.exs", "  {:drop_frame, ~r/^(ntdll|KERNELBASE)\\.dll!/}\n",
               "  {:drop_frame, ~r/^(ntdll|KERNELBASE)\\.dll!/},\n  {:rename, ~r/^(malloc|operator new(\\[\\])?|Loam::Mem::Alloc)$/, \"<alloc>\"}\n"),
          write("test/grouping/alloc_entry_points_test.exs",
                "defmodule Crashdesk.Grouping.AllocEntryPointsTest do\n  use ExUnit.Case, async: true\n  import Crashdesk.GroupingFixtures\n\n  test \"malloc, operator new and Loam::Mem::Alloc group together\" do\n    sigs = for f <- ~w(oom_malloc oom_new oom_loam_alloc), do: signature_for(f)\n    assert [sig] = Enum.uniq(sigs)\n    assert sig =~ \"<alloc>\"\n  end\nend\n"),
          bash("mix test test/grouping && git checkout -qb ak/cd-73-alloc-rule && git add -A && git commit -qm 'Collapse allocator entry points in signatures' -m 'Refs: CD-73' && git push -qu origin ak/cd-73-alloc-rule && gh pr create --draft --fill --reviewer atanabe",
               ".......\n7 tests, 0 failures\nCreating draft pull request for ak/cd-73-alloc-rule into main in brackenridge-games/crashdesk\n\nhttps://github.com/brackenridge-games/crashdesk/pull/95")],
         "Added a `{:rename, ..., \"<alloc>\"}` rule for malloc, operator new/new[] and Loam::Mem::Alloc in the grouping rules, plus test/grouping/alloc_entry_points_test.exs with three OOM fixtures that now share one signature. Draft PR #95 requests Aiko Tanabe (atanabe), since it changes grouping.",
         needs=["C09"]),
)

# ---- s19 day 13 (Saturday) crashdesk: playtest weekend, 413s
session("crashdesk", 13,
    turn("Weekend playtest is live and some crash uploads are bouncing; the client log says HTTP 413. Find out what's going on, quickly.",
         [bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad alloc logs -stderr -job crashdesk-staging | grep -m1 -A2 RequestTooLarge",
               "** (Plug.Parsers.RequestTooLargeError) the request is too large. If you are willing to process larger requests, please give a :length to Plug.Parsers\n    (plug 1.16.1) lib/plug/parsers/multipart.ex:78: Plug.Parsers.MULTIPART.parse/5\n    (crashdesk 2026.10.13-1) lib/crashdesk_web/router.ex:14: CrashdeskWeb.Router.ingest/2"),
          read("lib/crashdesk_web/router.ex", 10, """  pipeline :ingest do
    plug :accepts, ["json"]
    plug Plug.Parsers, parsers: [:multipart]
  end"""),
          edit("lib/crashdesk_web/router.ex", "    plug Plug.Parsers, parsers: [:multipart]\n",
               "    # full-memory playtest dumps reach ~150 MB; only ingest accepts that much\n    plug Plug.Parsers, parsers: [:multipart], length: 200_000_000\n"),
          bash("mix test test/crashdesk_web/ingest_large_test.exs",
               ".\nFinished in 3.1 seconds\n1 test, 0 failures")],
         "Playtest builds write full-memory dumps, and anything over Plug.Parsers' default 8 MB limit was rejected with Plug.Parsers.RequestTooLargeError, hence the 413s. The `:ingest` pipeline's multipart parser now has `length: 200_000_000`; the rest of the app keeps the default. A new test uploads a 150 MB dump and passes.",
         teaches=["C06"], needs=["C14"]),
    turn("Get the fix out to where the playtest reports.",
         [bash("docker build -q -t registry.bkg.lan/crashdesk:2026.10.17-1 . && docker push -q registry.bkg.lan/crashdesk:2026.10.17-1",
               "sha256:0c44b1...\nregistry.bkg.lan/crashdesk:2026.10.17-1"),
          edit("deploy/crashdesk.nomad.hcl", "  default = \"registry.bkg.lan/crashdesk:2026.10.13-1\"",
               "  default = \"registry.bkg.lan/crashdesk:2026.10.17-1\""),
          bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job run -var env=staging deploy/crashdesk.nomad.hcl | tail -1 && sleep 600 && curl -s https://crashdesk-stg.bkg.lan/api/stats/ingest?since=10m",
               "  ✓ Deployment \"7c1e55a0\" successful\n{\"accepted\":57,\"rejected\":0,\"largest_bytes\":148102144}")],
         "Deployed 2026.10.17-1 to staging, where the playtest reports. In the ten minutes since, 57 uploads were accepted and none rejected; the largest was 148 MB.",
         needs=["C08"]),
    turn("Monday's triage meeting has to slip a day because of all this. Tell whoever owns the schedule, with the new time.",
         [],
         "Draft for Leilani Kahale:\n\n> Hi Leilani, the playtest upload failures (fixed today, 2026-10-17) cost us a day's crash data, so I'd like to move Monday's crash triage from 2026-10-19T14:00Z to Tuesday 2026-10-20T14:00Z. Nothing else in the sprint moves. OK with you?\n\nTimes are UTC; she can say no to the slip.",
         needs=["U05", "U13"]),
)

# ---- s20 day 15 texbake (long): sRGB mips, new build box
session("texbake", 15,
    turn("Morning. The albedo_mips golden test started failing on main after Friday's merges. Find out what broke.",
         [bash("ssh tundra 'cd ~/src/texbake && git pull -q && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R albedo_mips --output-on-failure'",
               "Test #71: cook.golden.albedo_mips ...............***Failed    0.44 sec\n  tests/cook/golden_test.cpp:52: FAILED:\n    CHECK( mean_luma(mip(3)) == Approx(golden.mean_luma(3)).margin(0.005) )\n  with expansion:\n    0.181 == Approx( 0.214 )\n\n0% tests passed, 1 tests failed out of 1", True),
          read("src/texture/mips.cpp", 40, """Image downsample(const Image& src) {
  Image dst(src.width() / 2, src.height() / 2, src.channels());
  for (int y = 0; y < dst.height(); ++y)
    for (int x = 0; x < dst.width(); ++x)
      for (int c = 0; c < src.channels(); ++c)
        dst.at(x, y, c) = (src.at(2*x, 2*y, c) + src.at(2*x+1, 2*y, c) + src.at(2*x, 2*y+1, c) + src.at(2*x+1, 2*y+1, c) + 2) / 4;
  return dst;
}"""),
          bash("git log --oneline -3 -- src/texture/mips.cpp && cat tests/data/textures/moss_albedo.texmeta",
               "c9d2f10 Simplify downsample (drop float path)\n3e9c7b1 Store the mip count in pak texture headers\n1b7a002 Add --max-mips\nusage: albedo\ncolorspace: srgb\nmips: full"),
          edit("src/texture/mips.cpp", "Image downsample(const Image& src) {\n",
               "Image downsample(const Image& src, ColorSpace cs) {\n  if (cs == ColorSpace::kSrgb) {\n    // average in linear light, otherwise every mip level gets darker\n    return to_srgb8(box_filter(to_linear_f32(src)));\n  }\n"),
          edit("src/cook/cook_texture.cpp", "    level = downsample(level);", "    level = downsample(level, meta.colorspace);"),
          bash("ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R \"albedo_mips|mips\"'",
               "100% tests passed, 0 tests failed out of 9")],
         "Friday's c9d2f10 ('Simplify downsample (drop float path)') made every texture box-filter its raw 8-bit values, so sRGB textures were averaged in gamma space and each mip got darker: mip 3 of the golden albedo went from 0.214 to 0.181 mean luma. Textures whose .texmeta says `colorspace: srgb` now go to linear float, get filtered there and go back to sRGB8; linear data (normals, roughness) keeps the integer path. The golden test and the other mip tests pass.",
         teaches=["K15"]),
    turn("That changes cooked output for every albedo texture, so get it reviewed properly: open the PR with the right reviewer.",
         [bash("git checkout -qb ak/tex-171-srgb-mips && git commit -qam 'Filter sRGB mips in linear space' -m 'Regression from c9d2f10: mips of sRGB textures were averaged in gamma space.' -m 'Refs: TEX-171' && git push -qu origin ak/tex-171-srgb-mips && gh pr create --draft --fill --reviewer ydemir",
               "Creating draft pull request for ak/tex-171-srgb-mips into main in brackenridge-games/texbake\n\nhttps://github.com/brackenridge-games/texbake/pull/61")],
         "Draft PR #61 ('Filter sRGB mips in linear space', Refs: TEX-171) is open, with Yusuf Demir requested because it changes cooked output for every sRGB texture.",
         needs=["K04", "U04"]),
    turn("Did the linear conversion cost us cook time? Measure it on the sample textures, before versus after.",
         [bash("ssh tundra 'cd ~/src/texbake && hyperfine --warmup 3 --runs 8 --export-json /tmp/mips.json -n before \"./build-main/texbake cook /mnt/assets/hollowmere-sample --out /tmp/a\" -n after \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --out /tmp/b\" | tail -3 && jq -r \".results[] | [.command, .median] | @tsv\" /tmp/mips.json'",
               "Summary\n  before ran\n    1.09 ± 0.01 times faster than after\nbefore\t52.4102\nafter\t57.1877")],
         "Yes: median full cook of the sample set went from 52.41 s to 57.19 s (hyperfine, 3 warmups, 8 runs each), about 9% slower. The cost is the per-texel pow() in to_linear_f32/to_srgb8.",
         needs=["U07", "K07", "U02"]),
    turn("9% is more than I'd like. Use a precomputed sRGB-to-linear table instead of calling pow per texel.",
         [edit("src/texture/color.cpp", "float srgb_to_linear(uint8_t v) {\n  float c = v / 255.0f;\n  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);\n}",
               "static const std::array<float, 256> kSrgbToLinear = [] {\n  std::array<float, 256> t{};\n  for (int i = 0; i < 256; ++i) {\n    float c = i / 255.0f;\n    t[i] = c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);\n  }\n  return t;\n}();\n\nfloat srgb_to_linear(uint8_t v) { return kSrgbToLinear[v]; }"),
          edit("src/texture/color.cpp", "uint8_t linear_to_srgb(float l) {", "// 4096-entry table, max error 0.5/255 against the exact curve\nuint8_t linear_to_srgb(float l) {"),
          bash("ssh tundra 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R mips && hyperfine --warmup 3 --runs 8 --export-json /tmp/mips2.json \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --out /tmp/b\" >/dev/null && jq .results[0].median /tmp/mips2.json'",
               "100% tests passed, 0 tests failed out of 9\n53.0368")],
         "Both directions now use lookup tables (256 entries for sRGB to linear, 4096 for linear to sRGB, max error half a code value). Mip tests still pass, and the full sample cook is at a 53.04 s median, about 1% over the old 52.41 s."),
    turn("Hardware news: tundra gets wiped on Friday. My new build box is moraine — 64-core Threadripper, Ubuntu 24.04, `ssh moraine`. Everything heavy goes there from now on, whatever the repo.",
         [bash("ssh moraine 'nproc && lsb_release -ds && df -h /mnt/assets | tail -1'",
               "64\nUbuntu 24.04.1 LTS\nassets:/export/assets  40T   31T  9.0T  78% /mnt/assets")],
         "moraine answers: 64 cores, Ubuntu 24.04.1, and /mnt/assets is mounted there too. I'll send heavy builds and full test runs to moraine from now on, in every repo, and stop using tundra.",
         teaches=["U10"]),
    turn("Set texbake up on the new box from nothing and do a release build.",
         [bash("rsync -a --delete --exclude build/ ./ moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && conan remote add bkg https://artifactory.bkg.lan/artifactory/api/conan/conan-remote --force && conan install . -pr:a conan/profiles/linux-clang18 --build=missing -v quiet && cmake --preset linux-clang-rel >/dev/null && ccache -z >/dev/null && time cmake --build --preset linux-clang-rel >/dev/null && ccache -s | grep -A1 Remote'",
               "\nreal\t0m19.406s\n  Remote storage:\n    Hits:           211 / 214 (98.60%)")],
         "On moraine: added the bkg Conan remote, ran the conan install with the linux-clang18 profile, configured through the release preset and built. 19 s from scratch, since the shared ccache store served 211 of 214 compilations.",
         needs=["K02", "K14"]),
    turn("Tidy the formatting on my changes before I push.",
         [bash("git clang-format origin/main && git diff --stat",
               "changed files:\n    src/texture/color.cpp\n src/texture/color.cpp | 6 +++---\n 1 file changed, 3 insertions(+), 3 deletions(-)")],
         "Formatted only the lines this branch touched (`git clang-format origin/main`): three lines in src/texture/color.cpp changed, nothing else.",
         needs=["K08"]),
    turn("Changelog entry, then update the PR branch. I reworded a commit message locally, so it's a rewrite.",
         [edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Mips of sRGB textures are filtered in linear space (fixes darkening on lower mips).\n"),
          bash("git commit -qam 'Add changelog entry for sRGB mips' -m 'Refs: TEX-171' && git push --force-with-lease",
               "To github.com:brackenridge-games/texbake.git\n + 7f2c9e0...c41b8d3 ak/tex-171-srgb-mips -> ak/tex-171-srgb-mips (forced update)")],
         "Added the changelog line under Unreleased and pushed the rewritten branch with --force-with-lease; PR #61 is up to date.",
         needs=["U08", "U12"]),
)

# ---- s21 day 15 buildhive: new box, staging, tokio bump
session("buildhive", 15,
    turn("Do a full release build of the workspace on my heavy box and tell me how long it takes.",
         [bash("rsync -a --delete --exclude target/ ./ moraine:src/buildhive/ && ssh moraine 'cd ~/src/buildhive && cargo build --release --workspace 2>&1 | tail -1'",
               "    Finished `release` profile [optimized] target(s) in 1m47s")],
         "Synced to moraine and ran `cargo build --release --workspace` there: 1m47s from a cold target directory.",
         needs=["U10"]),
    turn("Put the heartbeat fix on the staging coordinator and confirm agents stay connected through a big upload.",
         [bash("ansible-playbook ansible/hive.yml --limit hive-stg | tail -2",
               "PLAY RECAP *********************************************************************\nhive-stg                   : ok=11   changed=3    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0"),
          bash("ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"5 min ago\" --no-pager | grep -c \"agent connected\"' && curl -s -X POST http://hive-stg.bkg.lan:7420/api/v1/jobs -H 'content-type: application/json' -d '{\"recipe\":\"upload-4g\",\"pool\":\"windows\"}' | jq -r .id && sleep 120 && ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"3 min ago\" --no-pager | grep -cE \"heartbeat missed|marked lost\"'",
               "3\n0b5d4e71-2f0a-4c3e-8d61-7a9e2c1f5b08\n0")],
         "Rolled out with the playbook to hive-stg; journalctl shows all three agents reconnected. A 4 GiB upload job on win-bld-09 ran with zero missed heartbeats.",
         needs=["B16", "B12"]),
    turn("Bump tokio to the latest 1.x and make sure we still build with the compiler we're pinned to.",
         [bash("cargo update -p tokio && cargo build --workspace 2>&1 | tail -1 && rustc --version",
               "    Updating crates.io index\n    Updating tokio v1.40.0 -> v1.47.1\n    Updating tokio-macros v2.4.0 -> v2.5.0\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 41.30s\nrustc 1.79.0 (129f3b996 2024-06-10)")],
         "tokio is now 1.47.1 (tokio-macros 2.5.0). Its minimum supported Rust is 1.70, so it builds fine on the pinned rustc 1.79.0; the workspace compiles. (The crates.io index here is the Artifactory replacement configured in .cargo/config.toml.)",
         needs=["B02"]),
)

# ---- s22 day 16 crashdesk (morning): v2 upload route, annotations
session("crashdesk", 16,
    turn("The client team shipped their new crash handler in build 0.44. It posts to /api/v2/minidumps now — same multipart field for the dump, plus an `annotations` JSON part. Older builds keep using the old route for a while, so keep both working.",
         [edit("lib/crashdesk_web/router.ex", "    post \"/v1/crashes\", IngestController, :create\n",
               "    post \"/v1/crashes\", IngestController, :create\n    post \"/v2/minidumps\", IngestController, :create_v2\n"),
          edit("lib/crashdesk_web/controllers/ingest_controller.ex", "  def create(conn, %{\"upload_file_minidump\" => %Plug.Upload{} = upload} = params) do",
               "  def create_v2(conn, %{\"upload_file_minidump\" => %Plug.Upload{}, \"annotations\" => json} = params) do\n    with {:ok, annotations} <- Jason.decode(json) do\n      create(conn, Map.put(params, \"annotations\", annotations))\n    end\n  end\n\n  def create(conn, %{\"upload_file_minidump\" => %Plug.Upload{} = upload} = params) do"),
          bash("curl -s -F upload_file_minidump=@test/fixtures/dumps/net_onpacket.dmp -F 'annotations={\"build\":\"0.44.1302\",\"map\":\"wetlands\",\"session_id\":\"b3f1\"}' http://localhost:4100/api/v2/minidumps",
               "{\"id\":9120,\"status\":\"queued\"}")],
         "Added `POST /api/v2/minidumps` next to the old route: create_v2 decodes the `annotations` JSON part and goes through the same ingest path (same upload_file_minidump field). A local test upload with build 0.44.1302 annotations came back as crash 9120. /api/v1/crashes is untouched for older builds.",
         teaches=["C12"]),
    turn("Store the annotations as they come; we'll decide what to index later.",
         [edit("lib/crashdesk/crashes/crash.ex", "    field :stack, :map\n", "    field :stack, :map\n    field :annotations, :map, default: %{}\n"),
          edit("lib/crashdesk/crashes/crash.ex", "    |> cast(attrs, [:dump_path, :build_id, :dump_size, :platform])",
               "    |> cast(attrs, [:dump_path, :build_id, :dump_size, :platform, :annotations])")],
         "Crash has an `annotations` map field (default empty) and the changeset casts it, so whatever the client sends is kept as-is. It still needs a column."),
    turn("Then it needs a migration for an annotations jsonb column. And a note for later: prod migrations only ever run through the crashdesk-migrate Nomad batch job. Never from a laptop against the prod database.",
         [bash("mix ecto.gen.migration add_annotations_to_crashes",
               "* creating priv/repo/migrations/20261020092733_add_annotations_to_crashes.exs"),
          write("priv/repo/migrations/20261020092733_add_annotations_to_crashes.exs",
                "defmodule Crashdesk.Repo.Migrations.AddAnnotationsToCrashes do\n  use Ecto.Migration\n\n  def change do\n    alter table(:crashes) do\n      add :annotations, :map, null: false, default: %{}\n    end\n  end\nend\n"),
          bash("mix ecto.migrate && mix test",
               "09:27:51.204 [info] == Migrated 20261020092733 in 0.0s\nFinished in 2.6 seconds (1.2s async, 1.4s sync)\n124 tests, 0 failures"),
          read("deploy/migrate.nomad.hcl", 1, """job "crashdesk-migrate" {
  type = "batch"
  parameterized {}
  group "migrate" {
    task "migrate" {
      driver = "docker"
      config {
        image   = var.image
        command = "/app/bin/migrate"
      }""")],
         "Migration 20261020092733 adds `annotations` as jsonb (Ecto :map), not null, default '{}'; applied locally, 124 tests pass. For prod it goes through the parameterized crashdesk-migrate batch job (`nomad job dispatch crashdesk-migrate`; deploy/migrate.nomad.hcl runs /app/bin/migrate from the release image), never from a laptop.",
         teaches=["C11"]),
    turn("Staging allocs are getting OOM-killed at 512 MB since the annotations landed. Declan Roche owns the Nomad cluster and the prod Postgres; memory bumps go through him. Draft the request.",
         [bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job status crashdesk-staging | grep -A3 'Allocations' && NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad alloc status 91cde2f0 | grep -m2 -E 'OOM|Memory'",
               "Allocations\nID        Node ID   Task Group  Version  Desired  Status    Created    Modified\n91cde2f0  3c0e9a51  web         14       run      running   12m ago    2m ago\n  Memory  512 MiB\nOOM Killed  = true")],
         "Draft for Declan Roche:\n\n> Hi Declan, since today's deploy the crashdesk-staging web allocs get OOM-killed at their 512 MiB limit (alloc 91cde2f0, restarted twice in 12 min). Playtest uploads are now up to ~150 MB with JSON annotations, and multipart parsing buffers them. Could we get the web group raised to 1 GiB on staging, and the same for prod before Thursday's build? Happy to cap upload concurrency as well.\n\nI'll route resource and database requests through him from now on.",
         teaches=["C16"]),
)

# ---- s23 day 16 crashdesk (afternoon): tests for v2, prod migration
session("crashdesk", 16,
    turn("Point the end-to-end ingest test at what the new client sends, and keep one case for old builds.",
         [edit("test/crashdesk_web/ingest_e2e_test.exs", "  test \"a client-style multipart upload is stored and queued\", %{conn: conn} do",
               "  test \"0.44+ clients: minidump with annotations\", %{conn: conn} do\n    upload = %Plug.Upload{path: \"test/fixtures/dumps/net_onpacket.dmp\", filename: \"net_onpacket.dmp\"}\n    ann = Jason.encode!(%{build: \"0.44.1302\", map: \"wetlands\"})\n    conn = post(conn, \"/api/v2/minidumps\", %{\"upload_file_minidump\" => upload, \"annotations\" => ann})\n    assert %{\"id\" => id} = json_response(conn, 201)\n    assert Crashdesk.Crashes.get!(id).annotations[\"map\"] == \"wetlands\"\n  end\n\n  test \"pre-0.44 clients: legacy route still accepted\", %{conn: conn} do"),
          bash("mix test test/crashdesk_web/ingest_e2e_test.exs --include minio",
               "Including tags: [:minio]\n\n..\nFinished in 0.9 seconds (0.00s async, 0.9s sync)\n2 tests, 0 failures")],
         "The e2e test now has two cases: the new client posting to /api/v2/minidumps with an annotations part (it checks the annotations are stored), and the legacy /api/v1/crashes upload for pre-0.44 builds. Both pass.",
         needs=["C12"]),
    turn("Declan says memory's bumped. Get the new column onto prod.",
         [bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job dispatch -meta image=registry.bkg.lan/crashdesk:2026.10.20-2 crashdesk-migrate",
               "Dispatched Job ID = crashdesk-migrate/dispatch-1792835133-6f1a2b0c\nEvaluation ID     = 2d9a51c4\n\n==> 2026-10-20T15:05:33Z: Monitoring evaluation \"2d9a51c4\"\n    2026-10-20T15:05:34Z: Allocation \"e61b0a97\" created: node \"8a4f0c12\", group \"migrate\"\n==> 2026-10-20T15:05:34Z: Evaluation \"2d9a51c4\" finished with status \"complete\""),
          bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad alloc logs e61b0a97 | tail -3",
               "15:05:41.118 [info] == Running 20261020092733 Crashdesk.Repo.Migrations.AddAnnotationsToCrashes.change/0 forward\n15:05:41.120 [info] alter table crashes\n15:05:41.402 [info] == Migrated 20261020092733 in 0.2s")],
         "Dispatched the crashdesk-migrate batch job with image 2026.10.20-2 (alloc e61b0a97); its log shows migration 20261020092733 ran on prod in 0.2 s. The new column is live.",
         needs=["C11"]),
)

# ---- s24 day 17 buildhive: artifacts move to Ceph
session("buildhive", 17,
    turn("nas-02 gets retired at the end of the month. From today artifacts go to Ceph: bucket s3://hive-artifacts through https://rgw.bkg.lan, keys <job-id>/<artifact>. Switch the uploader over.",
         [edit("crates/hive-agent/Cargo.toml", "[dependencies]\n", "[dependencies]\naws-config = { version = \"1\", default-features = false, features = [\"rustls\", \"rt-tokio\"] }\naws-sdk-s3 = { version = \"1\", default-features = false, features = [\"rustls\", \"rt-tokio\"] }\n"),
          edit("crates/hive-agent/src/upload.rs", "pub struct Uploader {\n    root: PathBuf, // \\\\nas-02\\builds, mounted on Linux agents at /mnt/builds\n}",
               "pub struct Uploader {\n    s3: aws_sdk_s3::Client, // endpoint https://rgw.bkg.lan, path-style\n    bucket: String,         // hive-artifacts\n}"),
          edit("crates/hive-agent/src/upload.rs", "        let dest = self.root.join(job_id);\n        tokio::fs::create_dir_all(&dest).await?;\n",
               "        // keys are <job-id>/<artifact>; multipart with the pool's part size\n"),
          bash("cargo build -q -p hive-agent && HIVE_ARTIFACT_BUCKET=hive-artifacts AWS_ENDPOINT_URL=https://rgw.bkg.lan just smoke-upload smoke-s3 && aws --endpoint-url https://rgw.bkg.lan s3 ls s3://hive-artifacts/smoke-s3/",
               "uploaded 3 files (81.2 MiB, 2 parts) to s3://hive-artifacts/smoke-s3/\n2026-10-21 10:14:02   84934656 smoke.lpak\n2026-10-21 10:14:03     218841 cook.log\n2026-10-21 10:14:03       1822 manifest.json")],
         "The uploader now writes to s3://hive-artifacts via https://rgw.bkg.lan (aws-sdk-s3, path-style, multipart with the pool's part size) under <job-id>/<artifact>. The smoke upload landed as smoke-s3/smoke.lpak, cook.log and manifest.json. The SMB path is gone from the agent.",
         teaches=["B14"]),
    turn("The UI wants to link to each artifact, so record the object key per artifact in the database. Schema change plus the integration tests.",
         [bash("sqlx migrate add -r artifact_object_key",
               "Creating migrations/20261021103510_artifact_object_key.up.sql\nCreating migrations/20261021103510_artifact_object_key.down.sql"),
          write("migrations/20261021103510_artifact_object_key.up.sql", "ALTER TABLE artifacts ADD COLUMN object_key text;\n"),
          write("migrations/20261021103510_artifact_object_key.down.sql", "ALTER TABLE artifacts DROP COLUMN object_key;\n"),
          bash("docker compose up -d db && sqlx migrate run && cargo sqlx prepare --workspace && cargo nextest run",
               "Applied 20261021103510/migrate artifact object key (6.118ms)\nquery data written to .sqlx in the workspace root; please check this into version control\n    Starting 66 tests across 9 binaries\n     Summary [   5.902s] 66 tests run: 66 passed, 0 skipped")],
         "New reversible migration 20261021103510_artifact_object_key (up adds `object_key text`, down drops it), applied against the compose db; refreshed the .sqlx offline data for the changed insert; nextest: 66/66.",
         needs=["B03", "B08"]),
    turn("Two more devkits came online this morning, dk-05 and dk-06. Add them and get it approved.",
         [edit("farm.toml", "agents = [\"dk-01\", \"dk-02\", \"dk-03\", \"dk-04\"]", "agents = [\"dk-01\", \"dk-02\", \"dk-03\", \"dk-04\", \"dk-05\", \"dk-06\"]"),
          bash("cargo run -q -p buildhive -- check-config farm.toml && git checkout -qb ak/bld-336-devkits && git commit -qam 'Add dk-05 and dk-06 to the devkit pool' -m 'Refs: BLD-336' && git push -qu origin ak/bld-336-devkits && gh pr create --draft --fill --reviewer kmensah",
               "farm.toml ok: 3 pools, 14 agents (devkit: 6 agents, max_concurrent 1)\nCreating draft pull request for ak/bld-336-devkits into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/231")],
         "Added dk-05 and dk-06 to the devkit pool; concurrency stays at one job per devkit. Draft PR #231 is open with Kofi Mensah requested for the farm.toml change.",
         needs=["B10", "B05"]),
    turn("Back to the artifact branch: squash my WIP commits into something reviewable and update it.",
         [bash("git checkout -q ak/bld-334-ceph && git reset -q --soft origin/main && git commit -qm 'Upload artifacts to Ceph RGW' -m 'Artifacts go to s3://hive-artifacts/<job-id>/<artifact>; object keys are stored per artifact.' -m 'Refs: BLD-334' && git push --force-with-lease",
               " + 2ac7710...e5d09b3 ak/bld-334-ceph -> ak/bld-334-ceph (forced update)")],
         "Squashed the WIP commits on ak/bld-334-ceph into one, 'Upload artifacts to Ceph RGW' with a short body and `Refs: BLD-334`, and pushed with --force-with-lease.",
         needs=["U12"]),
)

# ---- s25 day 18 texbake: reviewer change, detail normals
session("texbake", 18,
    turn("Yusuf starts three months of parental leave today. While he's out, Mirela Stan — our tech art lead — reviews texture output and pak layout changes. Swap her in on the open sRGB PR.",
         [bash("gh pr edit 61 --remove-reviewer ydemir --add-reviewer mstan && gh pr view 61 --json reviewRequests -q '.reviewRequests[].login'",
               "https://github.com/brackenridge-games/texbake/pull/61\nmstan")],
         "PR #61 now requests Mirela Stan (mstan) instead of Yusuf. Texture output and pak layout changes go to her until he's back.",
         teaches=["K13"]),
    turn("Wire the detail normal maps from the foliage set into the cook rules. They're the *_dn.png files.",
         [read("cook_rules.yaml", 1, """- match: "**/*_n.png"
  usage: normal
- match: "**/*_a.png"
  usage: albedo
  colorspace: srgb"""),
          edit("cook_rules.yaml", "- match: \"**/*_n.png\"\n  usage: normal\n",
               "- match: \"**/*_n.png\"\n  usage: normal\n- match: \"foliage/**/*_dn.png\"\n  usage: normal\n  mips: full\n"),
          bash("rsync -a cook_rules.yaml moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && ./build/linux-clang-rel/texbake plan /mnt/assets/hollowmere-sample/foliage --format-only' | sort | uniq -c",
               "     46 BC5\n     58 BC7")],
         "Added a rule so foliage/**/*_dn.png gets `usage: normal` with a full mip chain. A dry-run plan over the sample foliage folder now puts the 46 detail normals in BC5; the other 58 textures stay BC7.",
         needs=["K10"]),
    turn("Release build on my heavy box and run everything.",
         [bash("rsync -a --delete --exclude build/ ./ moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && cmake --preset linux-clang-rel >/dev/null && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -j 32'",
               "[214/214] Linking CXX executable texbake\n...\n100% tests passed, 0 tests failed out of 151\n\nTotal Test time (real) =   4.02 sec")],
         "On moraine: configured with the linux-clang-rel preset, built and ran the full ctest suite with -j 32: 151/151 pass in 4 s.",
         needs=["U10", "K01"]),
    turn("Compare today's full sample cook against the 52.4 s median from Monday.",
         [bash("ssh moraine 'cd ~/src/texbake && hyperfine --warmup 3 --runs 8 --export-json /tmp/cook.json \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --out /tmp/c\" >/dev/null && jq .results[0].median /tmp/cook.json'",
               "31.9427")],
         "Full sample cook on moraine: 31.94 s median (hyperfine, 3 warmups, 8 runs) against Monday's 52.41 s on tundra. Most of that is the machine (64 cores against 32), not the code, so it isn't a like-for-like comparison; for a code comparison we'd need both builds benchmarked on moraine.",
         needs=["U07", "K07"]),
)

# ---- s26 day 18 buildhive: new producer
session("buildhive", 18,
    turn("Org change: Leilani moved over to live-ops this week. Oskar Brandt is our producer from today, so scope questions go to him now. Write him a note that the Ceph switch ate two extra days and the BLD-318 follow-ups slip to next sprint.",
         [],
         "Draft for Oskar Brandt:\n\n> Hi Oskar, welcome aboard. One scope item from buildhive: nas-02 is being retired, so artifact uploads had to move to Ceph (s3://hive-artifacts) this week. That took two days we hadn't planned, and the BLD-318 follow-ups (retention and the artifact links in the UI) move to next sprint. Shout if that's a problem.\n\nNoted: scope changes and slipped dates go to Oskar now, not Leilani.",
         teaches=["U11"]),
    turn("Check that job 48390's artifacts actually landed in the new store.",
         [bash("aws --endpoint-url https://rgw.bkg.lan s3 ls s3://hive-artifacts/48390/ --human-readable",
               "2026-10-22 03:41:17    3.0 GiB hollowmere_core.lpak\n2026-10-22 03:41:52    1.8 GiB hollowmere_wetlands.lpak\n2026-10-22 03:41:53  212.4 KiB cook.log\n2026-10-22 03:41:53    1.9 KiB manifest.json")],
         "Yes: s3://hive-artifacts/48390/ has both paks (3.0 and 1.8 GiB), cook.log and manifest.json, uploaded at 03:41 UTC last night.",
         needs=["B14"]),
)

# ---- s27 day 18 crashdesk: signature rule change
session("crashdesk", 18,
    turn("Aiko went through the grouping numbers with QA and we're changing the rule: a signature is now the top 3 frames, counted after skipping std::, core runtime and inlined allocator frames. Five frames kept splitting the same crash across inlining differences.",
         [edit("lib/crashdesk/signatures/signature.ex", "  @frames 5\n", "  @frames 3\n  @skip ~r/^(std::|__scrt_|_CxxThrowException|RtlRaiseException|<alloc>$)/\n"),
          edit("lib/crashdesk/signatures/signature.ex", "    |> Enum.reject(&is_nil/1)\n", "    |> Enum.reject(&is_nil/1)\n    |> Enum.reject(&Regex.match?(@skip, &1))\n"),
          bash("mix test test/crashdesk/signatures",
               "  1) test broadphase_av signature matches snapshot (Crashdesk.Signatures.SignatureTest)\n     Assertion with == failed\n     left:  \"Loam::Physics::Broadphase::Query | Loam::Physics::World::Sweep | Loam::Game::CharacterMover::Step\"\n     right: \"Loam::Physics::Broadphase::Query | Loam::Physics::World::Sweep | Loam::Game::CharacterMover::Step | Loam::Game::World::Tick | Loam::Engine::RunFrame\"\n...\n4 tests, 3 failures", True),
          bash("for f in broadphase_av audio_mixer_abort streaming_oom; do mix run -e \"IO.puts Crashdesk.GroupingFixtures.signature_for(\\\"$f\\\")\" > test/fixtures/signatures/$f.txt; done && mix test test/crashdesk/signatures test/grouping",
               "...........\n11 tests, 0 failures")],
         "Signature now keeps the top 3 frames after skipping std::, CRT/runtime frames and the `<alloc>` frame. The three snapshot tests failed as expected (they held five frames); I regenerated them and the signature and grouping tests pass. Existing signatures will need a regroup job, since every hash changes.",
         teaches=["C13"]),
    turn("The allocator skip shouldn't be a hardcoded regex in the Signature module. Make it a proper normalisation rule with its own test.",
         [edit("lib/crashdesk/signatures/signature.ex", "  @skip ~r/^(std::|__scrt_|_CxxThrowException|RtlRaiseException|<alloc>$)/\n",
               "  @skip ~r/^(std::|__scrt_|_CxxThrowException|RtlRaiseException)/\n"),
          edit("priv/grouping/rules.exs", "  {:rename, ~r/^(malloc|operator new(\\[\\])?|Loam::Mem::Alloc)$/, \"<alloc>\"}\n",
               "  {:rename, ~r/^(malloc|operator new(\\[\\])?|Loam::Mem::Alloc)$/, \"<alloc>\"},\n  {:drop_frame, ~r/^<alloc>$/}                    # allocator entry points never count as a frame\n"),
          write("test/grouping/drop_alloc_frames_test.exs",
                "defmodule Crashdesk.Grouping.DropAllocFramesTest do\n  use ExUnit.Case, async: true\n  import Crashdesk.GroupingFixtures\n\n  test \"allocator frames are not counted\" do\n    refute signature_for(\"oom_new\") =~ \"<alloc>\"\n    assert signature_for(\"oom_new\") == signature_for(\"oom_new_inlined\")\n  end\nend\n"),
          bash("mix test test/grouping test/crashdesk/signatures", "............\n12 tests, 0 failures")],
         "Moved the allocator skip out of Signature into the grouping rules file as a `{:drop_frame, ~r/^<alloc>$/}` rule right after the rename, with test/grouping/drop_alloc_frames_test.exs (the inlined and non-inlined operator new dumps now share a signature). Signature only skips std:: and CRT frames itself. 12 tests pass.",
         needs=["C09"]),
    turn("Let the producer know the regrouping will reopen roughly 300 Jira issues on Monday.",
         [],
         "Draft for Oskar Brandt:\n\n> Hi Oskar, a note from Crashdesk: QA agreed a new crash grouping rule (shorter signatures), and regrouping existing crashes on Monday will close and reopen about 300 Jira issues under new signatures. QA will do the triage pass that day; I'll post the exact numbers after the job runs.",
         needs=["U11"]),
)

# ---- s28 day 19 texbake: encoder switch
session("texbake", 19,
    turn("We're done evaluating. BC7 goes to bc7enc_rdo from now on, RDO lambda 0.5 for release cooks: 18% smaller paks at the same PSNR on the sample set. Rip ispc_texcomp out.",
         [edit("conanfile.py", "        self.requires(\"ispc_texcomp/1.0.0@bkg/stable\")\n", "        self.requires(\"bc7enc_rdo/1.08@bkg/stable\")\n"),
          edit("src/encode/bc7.cpp", "  bc7_enc_settings settings;\n  if (opts.release) GetProfile_slow(&settings); else GetProfile_veryfast(&settings);",
               "  rdo_bc::rdo_bc_params p;\n  p.m_bc7_uber_level = opts.release ? 4 : 0;\n  p.m_rdo_lambda = opts.release ? 0.5f : 0.0f;\n  p.m_status_output = false;"),
          bash("rsync -a --delete --exclude build/ ./ moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && conan install . -pr:a conan/profiles/linux-clang18 --build=missing -v quiet && cmake --build --preset linux-clang-rel && ctest --preset linux-clang-rel -R \"encode|golden\"'",
               "[214/214] Linking CXX executable texbake\n100% tests passed, 0 tests failed out of 23")],
         "Replaced ispc_texcomp with bc7enc_rdo/1.08: release cooks use uber level 4 with RDO lambda 0.5, dev cooks uber 0 without RDO. The package is swapped in conanfile.py, and the encoder and golden tests pass on moraine (the goldens compare decoded PSNR, not bytes).",
         teaches=["K12"]),
    turn("The runtime wants to know which lambda a pak was cooked with. Put it in the pak header and get it reviewed.",
         [edit("src/pak/format.h", "inline constexpr uint32_t kLpakVersion = 7;", "inline constexpr uint32_t kLpakVersion = 8;"),
          edit("src/pak/format.h", "struct PakHeader {\n  uint32_t magic;\n  uint32_t version;\n",
               "struct PakHeader {\n  uint32_t magic;\n  uint32_t version;\n  float    rdo_lambda;   // 0 = no RDO (v8+)\n  uint32_t pad0;\n"),
          bash("ssh moraine 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ./build/linux-clang-rel/texbake pak-golden --out tests/data/golden/v8_basic.lpak && ctest --preset linux-clang-rel -R pak' && scp -q moraine:src/texbake/tests/data/golden/v8_basic.lpak tests/data/golden/",
               "wrote tests/data/golden/v8_basic.lpak (3 textures, 18.5 KiB)\n100% tests passed, 0 tests failed out of 16"),
          bash("git checkout -qb ak/tex-183-rdo && git add -A && git commit -qm 'Record the RDO lambda in the pak header' -m 'Bumps the pak format to v8; readers accept v6-v8.' -m 'Refs: TEX-183' && git push -qu origin ak/tex-183-rdo && gh pr create --draft --fill --reviewer mstan",
               "Creating draft pull request for ak/tex-183-rdo into main in brackenridge-games/texbake\n\nhttps://github.com/brackenridge-games/texbake/pull/66")],
         "PakHeader now carries `rdo_lambda` (0 means no RDO). Because that's a layout change, the format version went to 8 and there's a new golden, tests/data/golden/v8_basic.lpak; the pak tests pass. Draft PR #66 requests Mirela Stan.",
         needs=["K05", "K13"]),
    turn("Put numbers on the switch: pak size and cook time, old encoder versus new, over the sample textures, on my heavy box.",
         [bash("ssh moraine 'cd ~/src/texbake && hyperfine --warmup 3 --runs 6 --export-json /tmp/enc.json -n old \"./build-ispc/texbake cook /mnt/assets/hollowmere-sample --out /tmp/old\" -n new \"./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --out /tmp/new\" >/dev/null && jq -r \".results[] | [.command, .median] | @tsv\" /tmp/enc.json && du -b /tmp/old/sample.lpak /tmp/new/sample.lpak'",
               "old\t31.8810\nnew\t44.6203\n1739457331\t/tmp/old/sample.lpak\n1426355011\t/tmp/new/sample.lpak")],
         "On moraine, over the full sample set (hyperfine medians, 3 warmups, 6 runs): ispc_texcomp 31.88 s and 1.62 GiB; bc7enc_rdo 44.62 s and 1.33 GiB. So 18.0% smaller paks for a 40% longer release cook. Dev cooks don't use RDO and aren't affected.",
         needs=["U07", "U10"]),
    turn("Leave the Windows preset alone for now. I'll check the MSVC build myself on Monday.",
         [],
         "Understood. I haven't touched win-msvc-rel or anything Windows-specific; the encoder swap has only been built and tested on Linux so far."),
)

# ---- s29 day 22 buildhive: toolchain bump, cleanup job
session("buildhive", 22,
    turn("Good news from IT: the Windows agents' MSVC image has been revalidated on a newer compiler. Move the toolchain pin to 1.82.0, and use repeat_n in the uploader like you wanted to back then.",
         [edit("rust-toolchain.toml", "channel = \"1.79.0\"", "channel = \"1.82.0\""),
          edit("crates/hive-agent/src/upload.rs", "std::iter::repeat(PART).take(full)", "std::iter::repeat_n(PART, full)"),
          bash("cargo build --workspace 2>&1 | tail -1 && cargo clippy --workspace -q -- -D warnings && rustc --version",
               "info: syncing channel updates for '1.82.0-x86_64-unknown-linux-gnu'\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 58.03s\nrustc 1.82.0 (f6e511eec 2024-10-15)")],
         "rust-toolchain.toml now pins 1.82.0 (rustup fetched it); the uploader uses `std::iter::repeat_n(PART, full)`, which is stable there. The workspace builds and clippy is clean with -D warnings.",
         teaches=["B13"]),
    turn("Add a nightly cleanup that deletes job artifacts older than 30 days from the artifact store.",
         [write("crates/buildhive/src/cleanup.rs",
                "//! Nightly removal of artifacts older than the retention window.\nuse aws_sdk_s3::Client;\nuse chrono::{Duration, Utc};\n\npub const BUCKET: &str = \"hive-artifacts\";\npub const RETENTION_DAYS: i64 = 30;\n\npub async fn run(s3: &Client, db: &sqlx::PgPool) -> anyhow::Result<usize> {\n    let cutoff = Utc::now() - Duration::days(RETENTION_DAYS);\n    let expired = crate::db::artifacts::older_than(db, cutoff).await?;\n    for chunk in expired.chunks(1000) {\n        let objects = chunk.iter().map(|a| a.object_identifier()).collect::<Vec<_>>();\n        s3.delete_objects().bucket(BUCKET).delete(delete_request(objects)?).send().await?;\n        crate::db::artifacts::mark_deleted(db, chunk).await?;\n    }\n    Ok(expired.len())\n}\n"),
          edit("crates/buildhive/src/main.rs", "    let sched = Scheduler::start(&cfg, pool.clone());\n",
               "    let sched = Scheduler::start(&cfg, pool.clone());\n    tokio::spawn(cron::daily(\"03:30\", move || cleanup::run(&s3, &pool)));\n")],
         "Added crates/buildhive/src/cleanup.rs: every night at 03:30 UTC it looks up artifacts older than 30 days, deletes them from the hive-artifacts bucket in batches of 1,000 (S3 DeleteObjects) and marks the rows deleted. The database query it uses doesn't exist yet.",
         needs=["B14"]),
    turn("Agents dropped to lost on staging again last night, this time while the new cleanup verifies checksums before deleting. Sound familiar?",
         [bash("ssh hive-stg.bkg.lan 'journalctl -u buildhive --since \"today 03:00\" --until \"today 04:00\" --no-pager | grep -E \"marked lost|cleanup\" | head -3'",
               "Oct 26 03:30:00 hive-stg buildhive[31022]: INFO cleanup started expired=412\nOct 26 03:30:41 hive-stg buildhive[31022]: WARN agent marked lost name=lnx-stg-01 job=-\nOct 26 03:30:41 hive-stg buildhive[31022]: WARN agent marked lost name=win-bld-09 job=-"),
          read("crates/buildhive/src/cleanup.rs", 12, """        for a in chunk {
            verify_checksum(&a.local_copy)?;   // sha256 over std::fs::File"""),
          edit("crates/buildhive/src/cleanup.rs", "        for a in chunk {\n            verify_checksum(&a.local_copy)?;   // sha256 over std::fs::File",
               "        for a in chunk {\n            let path = a.local_copy.clone();\n            tokio::task::spawn_blocking(move || verify_checksum(&path)).await??;")],
         "Same pattern as the agent bug: the cleanup hashes files with blocking std::fs reads inside async code, so the coordinator's runtime couldn't service heartbeats for about 40 s and both staging agents were marked lost at 03:30:41. The checksum now runs in `tokio::task::spawn_blocking`, like the agent's hashing.",
         needs=["B15"]),
    turn("The cleanup needs its query for expired artifact rows. Add it and push.",
         [edit("crates/buildhive/src/db/artifacts.rs", "pub async fn insert(",
               "pub async fn older_than(db: &PgPool, cutoff: DateTime<Utc>) -> sqlx::Result<Vec<Artifact>> {\n    sqlx::query_as!(Artifact, \"SELECT * FROM artifacts WHERE created_at < $1 AND deleted_at IS NULL ORDER BY id\", cutoff)\n        .fetch_all(db)\n        .await\n}\n\npub async fn insert("),
          bash("cargo sqlx prepare --workspace && git add -A && git commit -qm 'Delete artifacts older than 30 days nightly' -m 'Refs: BLD-338' && git push -qu origin ak/bld-338-cleanup && gh pr checks --watch 2>/dev/null | tail -2",
               "query data written to .sqlx in the workspace root; please check this into version control\n✓  build  3m11s\n✓  lint   49s")],
         "Added `db::artifacts::older_than`, regenerated the .sqlx offline data so CI's offline build knows the new query, committed ('Delete artifacts older than 30 days nightly', Refs: BLD-338) and pushed. build and lint are green.",
         needs=["B04"]),
    turn("Wrap it up: changelog, and put the PR up.",
         [edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Nightly cleanup removes artifacts older than 30 days.\n- Toolchain pinned to Rust 1.82.0.\n"),
          bash("git commit -qam 'Add changelog entries for cleanup and toolchain' -m 'Refs: BLD-338' && git push -q && gh pr create --draft --fill",
               "Creating draft pull request for ak/bld-338-cleanup into main in brackenridge-games/buildhive\n\nhttps://github.com/brackenridge-games/buildhive/pull/235")],
         "Two changelog lines under Unreleased (cleanup, toolchain), committed with the Refs trailer and opened as draft PR #235. CI is already green on the previous push; I'll mark it ready once this commit's run passes too.",
         needs=["U08"]),
)

# ---- s30 day 22 crashdesk: Elixir bump, v2 upload size, per-build page
session("crashdesk", 22,
    turn("Bump us to Elixir 1.18.1 / OTP 27.2 like the other services, and make sure CI is happy with it.",
         [edit(".tool-versions", "elixir 1.17.3-otp-27\nerlang 27.1.2", "elixir 1.18.1-otp-27\nerlang 27.2"),
          bash("mise install -q && mix deps.get -q && mix compile --warnings-as-errors 2>&1 | tail -1 && mix dialyzer",
               "Generated crashdesk app\nFinding suitable PLTs\nChecking PLT...\n:dialyzer.run error: Old PLT file /home/ak/src/crashdesk/priv/plts/dialyxir_erlang-27.1.2_elixir-1.17.3_deps-dev.plt", True),
          bash("rm priv/plts/*.plt && mix dialyzer --plt && mix dialyzer",
               "Finding suitable PLTs\nCreating PLT priv/plts/dialyxir_erlang-27.2_elixir-1.18.1_deps-dev.plt ...\nDone in 212.4s\n...\nTotal errors: 0, Skipped: 0, Unnecessary Skips: 0\ndone (passed successfully)"),
          edit(".github/workflows/ci.yml", "          key: plt-${{ hashFiles('mix.lock') }}",
               "          key: plt-otp${{ steps.beam.outputs.otp-version }}-ex${{ steps.beam.outputs.elixir-version }}-${{ hashFiles('mix.lock') }}")],
         "Now on Elixir 1.18.1 / OTP 27.2 and it compiles without warnings. Dialyzer then failed with 'Old PLT file' because priv/plts still held the PLT built for OTP 27.1.2 / Elixir 1.17.3. I deleted priv/plts/*.plt and rebuilt with `mix dialyzer --plt` (3.5 min): 0 errors. CI had the same problem waiting, since its PLT cache key only hashed mix.lock, so the key now includes the OTP and Elixir versions.",
         teaches=["C10"]),
    turn("Playtest build 0.44 uploads full-memory dumps through the new route, and those are bouncing with 413 again.",
         [read("lib/crashdesk_web/router.ex", 10, """  pipeline :ingest do
    plug :accepts, ["json"]
    # full-memory playtest dumps reach ~150 MB; only ingest accepts that much
    plug Plug.Parsers, parsers: [:multipart], length: 200_000_000
  end

  pipeline :ingest_v2 do
    plug :accepts, ["json"]
    plug Plug.Parsers, parsers: [:multipart]
  end"""),
          edit("lib/crashdesk_web/router.ex", "  pipeline :ingest_v2 do\n    plug :accepts, [\"json\"]\n    plug Plug.Parsers, parsers: [:multipart]\n  end",
               "  pipeline :ingest_v2 do\n    plug :accepts, [\"json\"]\n    plug Plug.Parsers, parsers: [:multipart], length: 200_000_000\n  end"),
          edit("test/crashdesk_web/ingest_large_test.exs", "  test \"150 MB dump is accepted\"", "  @tag route: \"/api/v2/minidumps\"\n  test \"150 MB dump is accepted on v2\""),
          bash("mix test test/crashdesk_web/ingest_large_test.exs", "..\nFinished in 6.0 seconds\n2 tests, 0 failures")],
         "The v2 route went into its own `:ingest_v2` pipeline, which had a bare Plug.Parsers and so the 8 MB default. It now gets the same `length: 200_000_000` as the old ingest pipeline (and still only the ingest pipelines). The large-upload test covers both routes and passes.",
         needs=["C06"]),
    turn("CD-74: a crashes-per-build page, paginated like the others, plus a CSV export of it. Use nimble_csv for the export.",
         [edit("mix.exs", "      {:req, \"~> 0.5\"},\n", "      {:req, \"~> 0.5\"},\n      {:nimble_csv, \"~> 1.2\"},\n"),
          bash("echo $HEX_MIRROR && mix deps.get | tail -2",
               "https://artifactory.bkg.lan/artifactory/api/hex/hex-remote\nNew:\n  nimble_csv 1.2.0"),
          write("lib/crashdesk_web/live/build_live/index.ex",
                "defmodule CrashdeskWeb.BuildLive.Index do\n  use CrashdeskWeb, :live_view\n  alias Crashdesk.Crashes\n\n  def mount(%{\"build\" => build}, _session, socket) do\n    crashes = Crashes.list_for_build(build, nil)\n    {:ok, assign(socket, build: build, crashes: crashes, cursor: Crashes.cursor(List.last(crashes)))}\n  end\n\n  def handle_event(\"more\", _, socket) do\n    more = Crashes.list_for_build(socket.assigns.build, socket.assigns.cursor)\n    {:noreply, assign(socket, crashes: socket.assigns.crashes ++ more, cursor: Crashes.cursor(List.last(more)))}\n  end\nend\n"),
          bash("mix test test/crashdesk_web/live/build_live_test.exs", "...\n3 tests, 0 failures")],
         "nimble_csv 1.2.0 came in through the Artifactory Hex mirror (HEX_MIRROR is set by .envrc). The new /builds/:build page uses the same (inserted_at, id) cursor paging as the crash list, with a 'more' button, and /builds/:build/export.csv streams all rows with NimbleCSV. 3 new tests pass.",
         needs=["C15", "U09"]),
)

# ---- s31 day 23 texbake (long): Windows tests, profiling, clang 19, moss textures
session("texbake", 23,
    turn("I added a test executable for the RDO code and Windows CI went red in test discovery again. Fix it properly this time, so the next test target doesn't hit the same thing.",
         [bash("gh run view --job 32377810451 --log-failed | grep -m2 -A1 'Error running'",
               "windows\tBuild\t  Error running test executable\nwindows\tBuild\t  'D:/a/texbake/texbake/build/win-msvc-rel/tests/rdo_tests.exe':\nwindows\tBuild\t    Result: Exit code 0xc0000135", True),
          edit("tests/CMakeLists.txt", "# Windows: discovery runs the exe at build time, so its DLLs must sit next to it\nadd_custom_command(TARGET texbake_tests POST_BUILD\n  COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_RUNTIME_DLLS:texbake_tests> $<TARGET_FILE_DIR:texbake_tests>\n  COMMAND_EXPAND_LISTS)\ncatch_discover_tests(texbake_tests)",
               "# Every test target goes through this: on Windows, discovery runs the exe at\n# build time, so its runtime DLLs are copied next to it first.\nfunction(texbake_add_test name)\n  add_executable(${name} ${ARGN})\n  target_link_libraries(${name} PRIVATE texbake_core Catch2::Catch2WithMain)\n  if(WIN32)\n    add_custom_command(TARGET ${name} POST_BUILD\n      COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_RUNTIME_DLLS:${name}> $<TARGET_FILE_DIR:${name}>\n      COMMAND_EXPAND_LISTS)\n  endif()\n  catch_discover_tests(${name})\nendfunction()\n\ntexbake_add_test(texbake_tests ${TEST_SOURCES})\ntexbake_add_test(rdo_tests ${RDO_TEST_SOURCES})"),
          bash("git commit -qam 'Add texbake_add_test helper for test targets' -m 'Refs: TEX-188' && git push -q && gh run watch --exit-status | tail -2",
               "✓ windows in 15m02s (ID 32379114020)\n✓ linux in 6m48s (ID 32379113977)")],
         "Same cause as last week (0xc0000135, DLL not found during catch_discover_tests), this time for rdo_tests.exe, which never got the DLL copy step. tests/CMakeLists.txt now has a `texbake_add_test(name sources...)` function that creates the target, links Catch2 and, on Windows, copies its runtime DLLs next to the exe before discovery. Both test targets use it and CI is green on Windows and Linux.",
         needs=["K09"]),
    turn("Profile a release cook with the new encoder; I'll connect from my laptop.",
         [bash("ssh moraine 'cd ~/src/texbake && cmake --preset linux-clang-rel -DTEXBAKE_TRACY=ON >/dev/null && cmake --build --preset linux-clang-rel && (./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --only bc7 --out /tmp/c --wait-for-profiler &)' && ssh -fN -L 8086:localhost:8086 moraine && echo tunnel up",
               "[31/31] Linking CXX executable texbake\ntexbake: Tracy enabled, waiting for profiler on port 8086\ntunnel up")],
         "Reconfigured on moraine with the Tracy option on top of the release preset, rebuilt, and started a BC7 cook that waits for the profiler. Port 8086 is tunnelled to your laptop, so point the Tracy GUI at localhost.",
         needs=["K11"]),
    turn("moraine has clang 19. Add a Conan profile for it and make sure everything builds and links.",
         [bash("sed -e 's/compiler.version=18/compiler.version=19/' -e 's/clang-18/clang-19/; s/clang++-18/clang++-19/' conan/profiles/linux-clang18 > conan/profiles/linux-clang19 && grep libcxx conan/profiles/linux-clang19",
               "compiler.libcxx=libstdc++11"),
          edit("CMakePresets.json", "    {\n      \"name\": \"linux-clang-dbg\",",
               "    {\n      \"name\": \"linux-clang19-rel\",\n      \"inherits\": \"linux-clang-rel\",\n      \"binaryDir\": \"build/linux-clang19-rel\",\n      \"cacheVariables\": { \"CMAKE_TOOLCHAIN_FILE\": \"build/linux-clang19-rel/generators/conan_toolchain.cmake\" }\n    },\n    {\n      \"name\": \"linux-clang-dbg\","),
          bash("rsync -a --delete --exclude build/ ./ moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && conan install . -pr:a conan/profiles/linux-clang19 --build=missing -of build/linux-clang19-rel -v quiet && cmake --preset linux-clang19-rel >/dev/null && cmake --build build/linux-clang19-rel && ctest --test-dir build/linux-clang19-rel -j 32 | tail -1'",
               "[214/214] Linking CXX executable texbake\nTotal Test time (real) =   4.11 sec")],
         "Created conan/profiles/linux-clang19 from the clang 18 one, keeping `compiler.libcxx=libstdc++11` (leaving that out is what broke the link with std::__cxx11 symbols back in TEX-144), and added a linux-clang19-rel preset that inherits the release preset. On moraine it installs, builds, links and passes ctest.",
         needs=["K06"]),
    turn("Art says the moss detail textures look darker in-engine than in Substance, mostly at a distance. Check whether they're taking the right mip path.",
         [bash("ssh moraine 'ls /mnt/assets/hollowmere-sample/foliage/moss/*.texmeta | head -3 && cat /mnt/assets/hollowmere-sample/foliage/moss/moss_detail_a.texmeta'",
               "/mnt/assets/hollowmere-sample/foliage/moss/moss_clump_a.texmeta\n/mnt/assets/hollowmere-sample/foliage/moss/moss_detail_a.texmeta\n/mnt/assets/hollowmere-sample/foliage/moss/moss_detail_n.texmeta\nusage: albedo\nmips: full"),
          bash("ssh moraine 'grep -L colorspace /mnt/assets/hollowmere-sample/foliage/moss/*_a.texmeta | wc -l'", "14")],
         "They're not. All 14 moss albedo .texmeta files lack a colorspace line, and the importer's default is linear, so their mips take the integer path and get averaged in gamma space. That's the darkening you see at a distance, the same bug as TEX-171 for files that declare sRGB. Fix: add the sRGB colorspace line to those 14 metas (or change the importer's default for `usage: albedo`).",
         needs=["K15"]),
    turn("Just fix the metas for the moss set; the importer default is a conversation for another day.",
         [bash("ssh moraine 'cd /mnt/assets/hollowmere-sample/foliage/moss && for f in $(grep -L colorspace *_a.texmeta); do echo \"colorspace: srgb\" >> $f; done; grep -l \"colorspace: srgb\" *_a.texmeta | wc -l'",
               "14")],
         "Appended the sRGB colorspace line to the 14 moss albedo metas; all 14 now have it. The importer default stays as it is."),
    turn("The clang 19 build isn't getting any cache hits. Why?",
         [bash("ssh moraine 'cd ~/src/texbake && cmake --build build/linux-clang19-rel --target clean && ccache -z >/dev/null && cmake --build build/linux-clang19-rel >/dev/null && ccache -s | grep -E \"Hits|Remote\"'",
               "  Hits:              0 / 214 (0.00%)"),
          bash("grep -n -A4 '\"buildPresets\"' CMakePresets.json",
               "58:  \"buildPresets\": [\n59-    { \"name\": \"linux-clang-rel\", \"configurePreset\": \"linux-clang-rel\" },\n60-    { \"name\": \"linux-clang-dbg\", \"configurePreset\": \"linux-clang-dbg\" },\n61-    { \"name\": \"win-msvc-rel\", \"configurePreset\": \"win-msvc-rel\" }"),
          bash("ssh moraine 'ccache --show-config | grep remote_storage'",
               "(default) remote_storage = ")],
         "The remote cache setting never reaches the clang 19 compiles. CCACHE_REMOTE_STORAGE lives in the configure presets' environment, and CMake only passes that environment to the compiler when you build through a build preset (which inherits its configure preset's environment). There's no build preset for linux-clang19-rel, so I built it by directory, and ccache ran with an empty remote_storage and only its local store: 0/214 hits. The fix is a matching linux-clang19-rel build preset, and building with `cmake --build --preset linux-clang19-rel`, never by directory.",
         teaches=["K16"], needs=["K14"]),
    turn("Add the build preset then. Also fold the fixups into their commits and update the branch.",
         [edit("CMakePresets.json", "    { \"name\": \"linux-clang-dbg\", \"configurePreset\": \"linux-clang-dbg\" },\n", "    { \"name\": \"linux-clang-dbg\", \"configurePreset\": \"linux-clang-dbg\" },\n    { \"name\": \"linux-clang19-rel\", \"configurePreset\": \"linux-clang19-rel\" },\n"),
          bash("git add -A && git commit -q --fixup HEAD~1 && GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash origin/main && git log --format='%h %s' origin/main.. && git push --force-with-lease",
               "5a0e1c7 Add clang 19 profile and presets\nd2b61f4 Add texbake_add_test helper for test targets\n + 90b3a2e...5a0e1c7 ak/tex-188-rdo-tests -> ak/tex-188-rdo-tests (forced update)"),
          bash("ssh moraine 'cd ~/src/texbake && git pull -q && cmake --build build/linux-clang19-rel --target clean && ccache -z >/dev/null && cmake --build --preset linux-clang19-rel >/dev/null && ccache -s | grep -A1 Remote'",
               "  Remote storage:\n    Hits:           214 / 214 (100.0%)")],
         "Added a linux-clang19-rel build preset (it inherits the configure preset's environment by default), so the ccache remote setting reaches the compiles; a clean rebuild through the preset now gets 214/214 remote hits. Folded the fixups with autosquash into two commits, each with its Refs trailer, and pushed with --force-with-lease.",
         needs=["U12"]),
    turn("The moss thing will push TEX-190 into next week. Write the note to whoever needs to OK that.",
         [],
         "Draft for Oskar Brandt:\n\n> Hi Oskar, TEX-190 (foliage cook rules) will land next week, not this one. Art found the moss textures cooking too dark; the cause was missing colorspace metadata, which is fixed now, but we need to re-cook and re-check the whole foliage set with art before closing it. Expect about two days' slip. OK?",
         needs=["U11"]),
)

# ---- s32 day 24 crashdesk: signature explanation, disk, missing symbols
session("crashdesk", 24,
    turn("QA wants the signature page to explain how a signature was computed. Add a short explanation under the title, and run it past the person who owns grouping.",
         [edit("lib/crashdesk_web/live/signature_live/show.html.heex", "<h1><%= @signature.title %></h1>",
               "<h1><%= @signature.title %></h1>\n<p class=\"explain\">\n  Grouped by the first three frames of the crashing thread, after dropping std::, runtime and allocator frames\n  and normalising names (no template arguments or offsets). Rules: priv/grouping/rules.exs.\n</p>"),
          bash("git checkout -qb ak/cd-78-explain && git commit -qam 'Explain signature computation on the signature page' -m 'Refs: CD-78' && git push -qu origin ak/cd-78-explain && gh pr create --draft --fill --reviewer atanabe",
               "Creating draft pull request for ak/cd-78-explain into main in brackenridge-games/crashdesk\n\nhttps://github.com/brackenridge-games/crashdesk/pull/104")],
         "The signature page now says it groups by the first three frames of the crashing thread after dropping std::, runtime and allocator frames and normalising names. Draft PR #104 requests Aiko Tanabe, who owns the grouping rules.",
         needs=["C13", "C04"]),
    turn("Prod Postgres is at 85% disk. Who do I ask, and draft it for me.",
         [bash("psql \"$PROD_RO_URL\" -c \"SELECT relname, pg_size_pretty(pg_total_relation_size(relid)) FROM pg_catalog.pg_statio_user_tables ORDER BY pg_total_relation_size(relid) DESC LIMIT 3\"",
               "   relname   | pg_size_pretty\n-------------+----------------\n crashes     | 61 GB\n oban_jobs   | 9812 MB\n signatures  | 402 MB\n(3 rows)")],
         "That's Declan Roche, since he owns the prod Postgres. Draft:\n\n> Hi Declan, crashdesk's prod Postgres volume is at 85%. The big items are `crashes` (61 GB, mostly the symbolicated stacks) and `oban_jobs` (9.8 GB of completed jobs we should be pruning; I'll enable Oban's pruner on our side). Could you grow the volume by 50 GB for now? I'll follow up with a retention proposal for old stacks.",
         needs=["C16"]),
    turn("Symbolication of some Xbox dumps comes back with no frames at all. Check whether the symbol server has their modules.",
         [bash("just symbolicate test/fixtures/dumps/xsx_9977.dmp --json | jq -r '.modules[] | select(.main) | [.debug_file, .debug_id, .missing_symbols] | @tsv'",
               "Hollowmere-XSX.pdb\t6F1C2A0B9D3E4F5A8B7C6D5E4F3A2B1C1\ttrue"),
          bash("curl -s -o /dev/null -w '%{http_code}\\n' https://symbols.bkg.lan/Hollowmere-XSX.pdb/6F1C2A0B9D3E4F5A8B7C6D5E4F3A2B1C1/Hollowmere-XSX.sym",
               "404")],
         "The symbol server doesn't have them: the Xbox main module Hollowmere-XSX.pdb with debug id 6F1C2A0B...1 returns 404 at https://symbols.bkg.lan, so minidump-stackwalk can't resolve any frame. Most likely the Xbox build job isn't uploading its .sym files; worth checking that job's upload step on the farm.",
         needs=["C05"]),
)

# ---- s33 day 24 buildhive: reimaged agent, release build, production rollout
session("buildhive", 24,
    turn("win-bld-07 got reimaged and its first job died with a path-too-long error. Fix the agent's setup.",
         [bash("ssh win-bld-07 'type C:\\ProgramData\\hive-agent\\agent.toml'",
               "name = \"win-bld-07\"\npool = \"windows\"\ncoordinator = \"hive-01.bkg.lan:7421\"\nworkspace_root = 'C:\\hive-agent\\workspaces'"),
          bash("ssh win-bld-07 'powershell -NoProfile -c \"New-Item -ItemType Directory -Force D:\\hw | Out-Null; (Get-Content C:\\ProgramData\\hive-agent\\agent.toml) -replace \\\"workspace_root = .*\\\", \\\"workspace_root = ''D:\\hw''\\\" | Set-Content C:\\ProgramData\\hive-agent\\agent.toml; Restart-Service hive-agent; Select-String workspace_root C:\\ProgramData\\hive-agent\\agent.toml\"'",
               "C:\\ProgramData\\hive-agent\\agent.toml:4:workspace_root = 'D:\\hw'"),
          edit("ansible/roles/hive-agent/templates/agent.toml.j2", "workspace_root = '{{ hive_agent_workspace_root | default(\"C:\\\\hive-agent\\\\workspaces\") }}'",
               "workspace_root = '{{ hive_agent_workspace_root | default(\"D:\\\\hw\") }}'")],
         "The reimage brought back the old agent.toml, which set workspace_root back to C:\\hive-agent\\workspaces and overrode the agent's short default. I created D:\\hw on win-bld-07, pointed workspace_root there and restarted the service. The real hole was the Ansible template's default, so I changed that to D:\\hw as well; the next reimage won't regress.",
         needs=["B09"]),
    turn("Build release binaries of both crates on my heavy box with the new compiler, and check the version string in the binary.",
         [bash("rsync -a --delete --exclude target/ ./ moraine:src/buildhive/ && ssh moraine 'cd ~/src/buildhive && cargo build --release --workspace 2>&1 | tail -1 && ./target/release/hive-agent --version && strings target/release/buildhive | grep -m1 -o \"rustc [0-9.]*\"'",
               "    Finished `release` profile [optimized] target(s) in 1m39s\nhive-agent 0.10.0 (rustc 1.82.0, 2026-10-28)\nrustc 1.82.0")],
         "Built on moraine in 1m39s; both binaries report rustc 1.82.0, matching the toolchain pin (hive-agent 0.10.0).",
         needs=["B13", "U10"]),
    turn("Roll the cleanup and toolchain change out to production and confirm the API is answering.",
         [bash("ansible-playbook ansible/hive.yml --limit hive-01 | tail -2",
               "PLAY RECAP *********************************************************************\nhive-01                    : ok=11   changed=3    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0"),
          bash("ssh hive-01.bkg.lan 'journalctl -u buildhive --since \"5 min ago\" --no-pager | grep -c \"agent connected\"' && curl -s http://hive-01.bkg.lan:7420/api/v1/version",
               "14\n{\"version\":\"0.10.0\",\"rustc\":\"1.82.0\"}")],
         "Deployed with the playbook limited to hive-01: 3 changed, 0 failed. journalctl shows all 14 agents reconnected, and the API on hive-01.bkg.lan:7420 reports version 0.10.0 built with rustc 1.82.0.",
         needs=["B12", "B01"]),
)

# ---- s34 day 25 texbake: size budget, lambda review, release note
session("texbake", 25,
    turn("Full release cook of the sample set with today's encoder settings. Is the pak under the 1.5 GiB budget?",
         [bash("ssh moraine 'cd ~/src/texbake && git pull -q && cmake --build --preset linux-clang-rel >/dev/null && ./build/linux-clang-rel/texbake cook /mnt/assets/hollowmere-sample --release --out /tmp/rel --stats | tail -3'",
               "encoder: bc7enc_rdo uber=4 lambda=0.50\ncooked 1840 textures (0 failed) in 44.1s\npak: /tmp/rel/sample.lpak 1.33 GiB")],
         "Yes: the release cook of the sample set (bc7enc_rdo, uber 4, lambda 0.5) produces a 1.33 GiB pak, 0.17 GiB under the 1.5 GiB budget. 1,840 textures, no failures, 44.1 s.",
         needs=["K12", "K07"]),
    turn("Lambda 0.5 leaves visible blocking on the UI atlas. Use 0.25 for UI textures, put it up, and get the right eyes on it.",
         [edit("src/encode/bc7.cpp", "  p.m_rdo_lambda = opts.release ? 0.5f : 0.0f;", "  p.m_rdo_lambda = !opts.release ? 0.0f : (meta.usage == Usage::kUi ? 0.25f : 0.5f);"),
          bash("git checkout -qb ak/tex-192-ui-lambda && git commit -qam 'Use a lower RDO lambda for UI textures' -m 'Refs: TEX-192' && git push -qu origin ak/tex-192-ui-lambda && gh pr create --draft --fill --reviewer mstan",
               "Creating draft pull request for ak/tex-192-ui-lambda into main in brackenridge-games/texbake\n\nhttps://github.com/brackenridge-games/texbake/pull/71")],
         "UI textures now use lambda 0.25 in release cooks; everything else stays at 0.5. Draft PR #71 requests Mirela Stan, since it changes cooked texture output.",
         needs=["K13", "U04"]),
    turn("Write the note for the art team about when the new paks go live on the build farm.",
         [],
         "Draft for #art-pipeline:\n\n> **New texture encoder goes live in farm builds.** From the nightly starting 2026-10-29T23:00Z, all BC7 textures in release cooks use the new RDO encoder: paks are about 18% smaller at the same quality. UI textures use a gentler setting to avoid blocking (PR #71, landing the same night). The first build with the change should be ready around 2026-10-30T03:30Z. Please flag anything that looks blotchy in #art-pipeline with the texture path.",
         needs=["U13"]),
)

# ---- s35 day 26 buildhive (morning): review feedback, benchmark
session("buildhive", 26,
    turn("Kofi's review on the cleanup PR: library crates define their errors as thiserror enums, and anyhow is only for the binaries' main.rs. Rework cleanup.rs that way.",
         [edit("crates/buildhive/src/cleanup.rs", "pub async fn run(s3: &Client, db: &sqlx::PgPool) -> anyhow::Result<usize> {",
               "#[derive(Debug, thiserror::Error)]\npub enum CleanupError {\n    #[error(\"database: {0}\")]\n    Db(#[from] sqlx::Error),\n    #[error(\"deleting objects from {bucket}: {source}\")]\n    Delete { bucket: &'static str, #[source] source: aws_sdk_s3::Error },\n    #[error(\"checksum mismatch for {0}\")]\n    Checksum(String),\n}\n\npub async fn run(s3: &Client, db: &sqlx::PgPool) -> Result<usize, CleanupError> {"),
          bash("cargo clippy --workspace -q -- -D warnings && cargo nextest run -p buildhive cleanup",
               "    Starting 5 tests across 2 binaries (63 skipped)\n     Summary [   0.612s] 5 tests run: 5 passed, 63 skipped")],
         "cleanup.rs now returns `Result<usize, CleanupError>`, a thiserror enum with Db, Delete and Checksum variants; anyhow stays only in the binary's main.rs, which wraps it. Clippy is clean and the cleanup tests pass.",
         teaches=["B11"]),
    turn("How much faster is pick-next-job with the new partial index on queued jobs? Give me numbers I can quote.",
         [bash("docker compose up -d db && cargo build -q --release --bin pick-bench && hyperfine --warmup 3 --runs 20 --export-json /tmp/pick.json -n no-index 'target/release/pick-bench --jobs 50000 --drop-index' -n index 'target/release/pick-bench --jobs 50000' | tail -3 && jq -r '.results[] | [.command, (.median*1000|floor)] | @tsv' /tmp/pick.json",
               "Summary\n  index ran\n   11.42 ± 0.38 times faster than no-index\nno-index\t1713\nindex\t150")],
         "With 50,000 queued jobs, 1,000 picks take a median 150 ms with the partial index and 1,713 ms without it (hyperfine, 3 warmups, 20 runs): about 11.4 times faster.",
         needs=["U07"]),
)

# ---- s36 day 26 buildhive (afternoon): error types, staging check
session("buildhive", 26,
    turn("The agent's upload module still returns Box<dyn Error> all over the place. Bring it in line with what the review asked for this morning.",
         [edit("crates/hive-agent/src/upload.rs", "pub async fn upload(&self, job_id: &str, files: &[PathBuf]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {",
               "#[derive(Debug, thiserror::Error)]\npub enum UploadError {\n    #[error(\"reading {path}: {source}\")]\n    Io { path: PathBuf, #[source] source: std::io::Error },\n    #[error(\"uploading part {part} of {key}: {source}\")]\n    Part { key: String, part: u32, #[source] source: aws_sdk_s3::Error },\n    #[error(\"hashing task panicked\")]\n    Join(#[from] tokio::task::JoinError),\n}\n\npub async fn upload(&self, job_id: &str, files: &[PathBuf]) -> Result<(), UploadError> {"),
          bash("cargo clippy -p hive-agent -q -- -D warnings && cargo nextest run -p hive-agent",
               "    Starting 35 tests across 3 binaries\n     Summary [   1.204s] 35 tests run: 35 passed, 0 skipped")],
         "upload.rs now has an `UploadError` thiserror enum (Io with the path, Part with key and part number, Join for the hashing task) instead of Box<dyn Error>; anyhow stays in hive-agent's main.rs only. Clippy clean, 35 agent tests pass.",
         needs=["B11"]),
    turn("On the train now. Check whether staging picked up this morning's build.",
         [bash("tailscale status | head -1", "Tailscale is stopped.", True),
          bash("tailscale up && curl -s http://hive-stg.bkg.lan:7420/api/v1/version && curl -s http://hive-stg.bkg.lan:7420/api/v1/agents | jq -r '.[] | [.name, .version] | @tsv'",
               "{\"version\":\"0.10.1\",\"rustc\":\"1.82.0\"}\nlnx-stg-01\t0.10.1\nlnx-stg-02\t0.10.1\nwin-bld-09\t0.10.1")],
         "Tailscale was off on the laptop; after `tailscale up`, the staging coordinator reports 0.10.1 (this morning's build) and all three staging agents run 0.10.1 too.",
         needs=["U06", "B16"]),
)

# ---- s37 day 29 crashdesk: legacy route, dialyzer, staging
session("crashdesk", 29,
    turn("Builds older than 0.44 are out of the playtest pool now. Put a deprecation header on the old upload route and log which builds still use it.",
         [edit("lib/crashdesk_web/controllers/ingest_controller.ex", "  def create(conn, %{\"upload_file_minidump\" => %Plug.Upload{} = upload} = params) do",
               "  def create_legacy(conn, params) do\n    Logger.info(\"legacy crash upload\", build: params[\"build\"], route: \"/api/v1/crashes\")\n    conn\n    |> put_resp_header(\"deprecation\", \"true\")\n    |> put_resp_header(\"link\", \"</api/v2/minidumps>; rel=\\\"successor-version\\\"\")\n    |> create(params)\n  end\n\n  def create(conn, %{\"upload_file_minidump\" => %Plug.Upload{} = upload} = params) do"),
          edit("lib/crashdesk_web/router.ex", "    post \"/v1/crashes\", IngestController, :create\n", "    post \"/v1/crashes\", IngestController, :create_legacy\n"),
          bash("mix test test/crashdesk_web/ingest_e2e_test.exs --include minio",
               "..\nFinished in 1.0 seconds (0.00s async, 1.0s sync)\n2 tests, 0 failures")],
         "The v1 route (/api/v1/crashes) now goes through create_legacy: it sets `Deprecation: true` and a `Link` header pointing at the successor /api/v2/minidumps, and logs each legacy upload with its build, so we can see who still uses it before removing it. The v2 route is unchanged and both e2e cases pass.",
         needs=["C12"]),
    turn("CI's dialyzer step is failing after the OTP 27.2.1 patch bump. Sort it out.",
         [bash("gh run view --log-failed | grep -m1 -i plt",
               "dialyzer\tRun mix dialyzer\t:dialyzer.run error: Old PLT file /home/runner/work/crashdesk/crashdesk/priv/plts/dialyxir_erlang-27.2_elixir-1.18.1_deps-dev.plt", True),
          read(".github/workflows/ci.yml", 40, """      - uses: actions/cache@v4
        with:
          path: priv/plts
          key: plt-otp${{ steps.beam.outputs.otp-version }}-ex${{ steps.beam.outputs.elixir-version }}-${{ hashFiles('mix.lock') }}
          restore-keys: plt-"""),
          edit(".github/workflows/ci.yml", "          key: plt-otp${{ steps.beam.outputs.otp-version }}-ex${{ steps.beam.outputs.elixir-version }}-${{ hashFiles('mix.lock') }}\n          restore-keys: plt-",
               "          key: plt-otp${{ steps.beam.outputs.otp-version }}-ex${{ steps.beam.outputs.elixir-version }}-${{ hashFiles('mix.lock') }}\n          restore-keys: plt-otp${{ steps.beam.outputs.otp-version }}-ex${{ steps.beam.outputs.elixir-version }}-"),
          bash("rm -f priv/plts/*.plt && mix dialyzer --plt >/dev/null && mix dialyzer | tail -1 && git commit -qam 'Scope the PLT cache fallback to the same OTP and Elixir' -m 'Refs: CD-81' && git push -q && gh run watch --exit-status | tail -1",
               "done (passed successfully)\n✓ dialyzer in 4m12s (ID 32544120981)")],
         "The exact cache key missed after the patch bump, but `restore-keys: plt-` then restored the old 27.2 PLT, and Dialyzer refused it ('Old PLT file'). The fallback now only matches PLTs for the same OTP and Elixir versions, so a version bump rebuilds from scratch. Locally I deleted priv/plts/*.plt and rebuilt with `mix dialyzer --plt`. CI's dialyzer job passes again.",
         needs=["C10"]),
    turn("Deploy main to staging and smoke-test ingest there.",
         [bash("docker build -q -t registry.bkg.lan/crashdesk:2026.11.02-1 . && docker push -q registry.bkg.lan/crashdesk:2026.11.02-1 && sed -i 's/crashdesk:2026.10.2[0-9]-[0-9]/crashdesk:2026.11.02-1/' deploy/crashdesk.nomad.hcl && grep -m1 'crashdesk:' deploy/crashdesk.nomad.hcl",
               "registry.bkg.lan/crashdesk:2026.11.02-1\n  default = \"registry.bkg.lan/crashdesk:2026.11.02-1\""),
          bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job run -var env=staging deploy/crashdesk.nomad.hcl | tail -1 && curl -s -F upload_file_minidump=@test/fixtures/dumps/net_onpacket.dmp -F 'annotations={\"build\":\"0.45.1410\"}' https://crashdesk-stg.bkg.lan/api/v2/minidumps",
               "  ✓ Deployment \"0a7d3f19\" successful\n{\"id\":20418,\"status\":\"queued\"}")],
         "Built and pushed 2026.11.02-1, bumped the image in the Nomad job file and ran it against staging: the deployment succeeded. A smoke upload to https://crashdesk-stg.bkg.lan came back as crash 20418, queued.",
         needs=["C08", "C14"]),
    turn("Commit what's left, open the PR, and tell the producer the old-route deprecation ships this week.",
         [bash("git checkout -qb ak/cd-80-deprecate-v1 && git add -A && git commit -qm 'Mark the legacy crash upload route as deprecated' -m 'Refs: CD-80' && git push -qu origin ak/cd-80-deprecate-v1 && gh pr create --draft --fill",
               "Creating draft pull request for ak/cd-80-deprecate-v1 into main in brackenridge-games/crashdesk\n\nhttps://github.com/brackenridge-games/crashdesk/pull/109")],
         "Committed ('Mark the legacy crash upload route as deprecated', Refs: CD-80) and opened draft PR #109. Note for Oskar Brandt:\n\n> Hi Oskar, for your planning: this week Crashdesk starts flagging crash uploads from pre-0.44 builds as deprecated. Nothing breaks yet; we're only logging who still uses the old route, and we'll propose a removal date once the numbers are in.",
         needs=["U01", "U04", "U11"]),
)

# ---- s38 day 29 texbake: terrain rules, lockfile, comparison recipe
session("texbake", 29,
    turn("New terrain set from art: albedo, normal and roughness per material, in terrain/<material>/. Add cook rules so each kind goes through the right path.",
         [bash("ssh moraine ls /mnt/assets/hollowmere-sample/terrain/peat/", "peat_albedo.png\npeat_albedo.texmeta\npeat_normal.png\npeat_normal.texmeta\npeat_rough.png\npeat_rough.texmeta"),
          edit("cook_rules.yaml", "- match: \"foliage/**/*_dn.png\"\n",
               "- match: \"terrain/**/*_albedo.png\"\n  usage: albedo\n  colorspace: srgb\n- match: \"terrain/**/*_normal.png\"\n  usage: normal\n- match: \"terrain/**/*_rough.png\"\n  usage: mask\n  colorspace: linear\n- match: \"foliage/**/*_dn.png\"\n"),
          bash("rsync -a cook_rules.yaml moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && ./build/linux-clang-rel/texbake plan /mnt/assets/hollowmere-sample/terrain --format-only --show-colorspace' | sort | uniq -c",
               "      9 BC5 linear\n      9 BC7 linear\n      9 BC7 srgb")],
         "Added three terrain rules: *_albedo as sRGB colour (so its mips are filtered in linear light), *_normal as normal maps (BC5), *_rough as linear mask data (BC7, no colour conversion). A plan over the nine terrain materials shows 9 BC7 sRGB, 9 BC5 and 9 BC7 linear textures, as intended.",
         needs=["K15", "K10"]),
    turn("CI wants a Conan lockfile now. Generate one from the same profile we build with.",
         [bash("conan lock create . -pr:a conan/profiles/linux-clang18 --lockfile-out conan.lock && head -8 conan.lock",
               "======== Computing dependency graph ========\n...\nGenerated lockfile: /home/ak/src/texbake/conan.lock\n{\n    \"version\": \"0.5\",\n    \"requires\": [\n        \"spdlog/1.14.1#9ad8e3a...%1725003127.41\",\n        \"meshoptimizer/0.22#f1b0c77...%1718207715.02\",\n        \"fmt/10.2.1#e1b2b24...%1722511183.66\",\n        \"catch2/3.7.1#431e7a2...%1726213380.11\",\n        \"bc7enc_rdo/1.08@bkg/stable#5d0e7f1...%1729601445.87\""),
          edit(".github/workflows/ci.yml", "      - run: conan install . -pr:a conan/profiles/linux-clang18 --build=missing",
               "      - run: conan install . -pr:a conan/profiles/linux-clang18 --lockfile=conan.lock --build=missing")],
         "Created conan.lock from the linux-clang18 profile (spdlog, meshoptimizer, fmt, catch2 and bc7enc_rdo pinned by revision), and CI's conan install now passes --lockfile=conan.lock. Windows needs its own lock from its own profile; I didn't touch that.",
         needs=["K02"]),
    turn("I'll redo that old-versus-new pak size comparison every time art drops new assets. Make it one command.",
         [edit("justfile", "test:\n",
               "# compare pak size and cook time of two texbake builds over a folder: just compare-cook build-main build\ncompare-cook old=\"build-main\" new=\"build/linux-clang-rel\" src=\"/mnt/assets/hollowmere-sample\":\n    hyperfine --warmup 3 --runs 6 --export-json /tmp/compare.json -n old '{{old}}/texbake cook {{src}} --release --out /tmp/old' -n new '{{new}}/texbake cook {{src}} --release --out /tmp/new'\n    jq -r '.results[] | [.command, .median] | @tsv' /tmp/compare.json\n    du -b /tmp/old/*.lpak /tmp/new/*.lpak\n\ntest:\n"),
          bash("just --list | grep compare", "    compare-cook old=\"build-main\" new=\"build/linux-clang-rel\" src=\"/mnt/assets/hollowmere-sample\" # compare pak size and cook time of two texbake builds over a folder")],
         "Added `just compare-cook [old] [new] [src]` to the justfile: it benchmarks both builds with hyperfine (3 warmups, 6 runs), prints the median times and the pak sizes. Defaults are the main build against the current one over the sample set.",
         needs=["U03"]),
)

# ---- s39 day 30 texbake: fresh build, per-mip CRC, changelog
session("texbake", 30,
    turn("Fresh build directory on my heavy box, release config, and tell me whether the cache is doing its job.",
         [bash("ssh moraine 'cd ~/src/texbake && git pull -q && rm -rf build/linux-clang-rel && cmake --preset linux-clang-rel >/dev/null && ccache -z >/dev/null && time cmake --build --preset linux-clang-rel >/dev/null && ccache -s | grep -A1 Remote'",
               "\nreal\t0m17.902s\n  Remote storage:\n    Hits:           209 / 214 (97.66%)")],
         "Fresh linux-clang-rel build directory on moraine: 17.9 s, with 209 of 214 compilations served from the shared remote cache (97.7%). The five misses are the files changed since last night.",
         needs=["U10", "K14", "K16"]),
    turn("The runtime team asks for a CRC32 per mip in the pak, so the streamer can verify what it reads. Add it.",
         [edit("src/pak/format.h", "inline constexpr uint32_t kLpakVersion = 8;", "inline constexpr uint32_t kLpakVersion = 9;"),
          edit("src/pak/format.h", "struct MipEntry {\n  uint64_t offset;\n  uint32_t size;\n  uint32_t pad0;\n};",
               "struct MipEntry {\n  uint64_t offset;\n  uint32_t size;\n  uint32_t crc32;  // v9+: CRC32 of the mip's encoded blocks\n};"),
          bash("rsync -a --delete --exclude build/ ./ moraine:src/texbake/ && ssh moraine 'cd ~/src/texbake && cmake --build --preset linux-clang-rel && ./build/linux-clang-rel/texbake pak-golden --out tests/data/golden/v9_basic.lpak && ctest --preset linux-clang-rel -R pak' && scp -q moraine:src/texbake/tests/data/golden/v9_basic.lpak tests/data/golden/",
               "wrote tests/data/golden/v9_basic.lpak (3 textures, 18.5 KiB)\n100% tests passed, 0 tests failed out of 17"),
          bash("ssh moraine 'cd ~/src/texbake && ./build/linux-clang-rel/texbake pak-info tests/data/golden/v9_basic.lpak | head -3'",
               "lpak v9, 3 textures, encoder bc7enc_rdo (lambda 0.50)\n  rock_a   BC7  1024x1024  11 mips  crc ok\n  rock_n   BC5  1024x1024  11 mips  crc ok")],
         "MipEntry's padding word is now `crc32`, written by the pak writer over each mip's encoded blocks. It's a layout change, so the format is v9 with a new golden tests/data/golden/v9_basic.lpak; readers still accept v6-v8 (no CRC check for those). Pak tests pass, and pak-info on the golden shows the RDO encoder settings and 'crc ok' for every texture.",
         needs=["K05", "K12"]),
    turn("Changelog it and update my branch; I reworded a commit.",
         [edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Pak format v9: every mip entry carries a CRC32 of its blocks.\n"),
          bash("git commit -qam 'Add changelog entry for pak v9' -m 'Refs: TEX-195' && git push --force-with-lease",
               " + 3d81c0a...b7e20f5 ak/tex-195-mip-crc -> ak/tex-195-mip-crc (forced update)")],
         "Changelog line added under Unreleased; the reworded branch is pushed with --force-with-lease.",
         needs=["U12"]),
)

# ---- s40 day 30 crashdesk (long): month-end clean-up
session("crashdesk", 30,
    turn("Last day of the month, let's clean up. Bring the app up locally and check the signature explanation renders.",
         [bash("(PORT=4100 mix phx.server > /tmp/phx.log 2>&1 &) && sleep 6 && curl -s http://localhost:4100/signatures/412 | grep -o '<p class=\"explain\">[^<]*' | head -c 120",
               "<p class=\"explain\">\n  Grouped by the first three frames of the crashing thread, after dropping std::, runtime")],
         "The app is up locally on 4100 and signature 412's page shows the explanation under the title.",
         needs=["C01"]),
    turn("Storage costs: how much raw dump data are we holding right now, and is the expiry rule still in place?",
         [bash("mc du bkg/crash-dumps && mc ilm rule ls bkg/crash-dumps --json | jq -c '.config.Rules[] | {Status, days: .Expiration.Days}'",
               "412GiB\t96118 objects\tcrash-dumps\n{\"Status\":\"Enabled\",\"days\":30}")],
         "The crash-dumps bucket holds 412 GiB in 96,118 objects, and the 30-day expiry rule is still enabled, so that's roughly a month of dumps. The playtest full-memory dumps are most of it.",
         needs=["C07"]),
    turn("QA asks why crashes 9931 and 9940 ended up in one group even though their 4th frames differ. Explain it.",
         [bash("for id in 9931 9940; do mix run -e \"c = Crashdesk.Crashes.get!($id); IO.puts(Enum.map_join(Enum.take(c.stack[\\\"frames\\\"], 5), \\\" | \\\", & &1[\\\"function\\\"])); IO.puts(c.signature.key)\"; done",
               "Loam::Net::Session::OnPacket | Loam::Net::Channel::Dispatch | Loam::Net::Socket::Poll | Loam::Game::Lobby::Tick | Loam::Engine::RunFrame\nLoam::Net::Session::OnPacket | Loam::Net::Channel::Dispatch | Loam::Net::Socket::Poll\nLoam::Net::Session::OnPacket | Loam::Net::Channel::Dispatch | Loam::Net::Socket::Poll | Loam::Game::Match::Tick | Loam::Engine::RunFrame\nLoam::Net::Session::OnPacket | Loam::Net::Channel::Dispatch | Loam::Net::Socket::Poll")],
         "Both crashes have identical first three frames (Session::OnPacket, Channel::Dispatch, Socket::Poll) and only differ from the fourth frame on (Lobby::Tick against Match::Tick). Signatures only use the first three frames after skipping std::, runtime and allocator frames, so they share one signature. That's intended: it's the same packet-handling bug reached from two game states. If QA wants them separate, that's a grouping rule change.",
         needs=["C13"]),
    turn("Add a rule that drops the Loam::Jobs trampoline frames, with its test, and get it approved.",
         [edit("priv/grouping/rules.exs", "  {:drop_frame, ~r/^<alloc>$/}                    # allocator entry points never count as a frame\n",
               "  {:drop_frame, ~r/^<alloc>$/},                   # allocator entry points never count as a frame\n  {:drop_frame, ~r/^Loam::Jobs::(Trampoline|Worker::RunOne)$/}\n"),
          write("test/grouping/drop_job_trampolines_test.exs",
                "defmodule Crashdesk.Grouping.DropJobTrampolinesTest do\n  use ExUnit.Case, async: true\n  import Crashdesk.GroupingFixtures\n\n  test \"job system trampolines do not take a signature frame\" do\n    refute signature_for(\"job_physics_assert\") =~ \"Loam::Jobs::\"\n  end\nend\n"),
          bash("mix test test/grouping && git checkout -qb ak/cd-83-job-frames && git add -A && git commit -qm 'Drop job system trampoline frames from signatures' -m 'Refs: CD-83' && git push -qu origin ak/cd-83-job-frames && gh pr create --draft --fill --reviewer atanabe",
               "..............\n14 tests, 0 failures\nCreating draft pull request for ak/cd-83-job-frames into main in brackenridge-games/crashdesk\n\nhttps://github.com/brackenridge-games/crashdesk/pull/112")],
         "Added a drop_frame rule for Loam::Jobs::Trampoline and Worker::RunOne with test/grouping/drop_job_trampolines_test.exs; 14 grouping tests pass. Draft PR #112 requests Aiko Tanabe's sign-off.",
         needs=["C09", "C04"]),
    turn("Prod disk is at 91% now. Chase it.",
         [],
         "Follow-up for Declan Roche:\n\n> Hi Declan, following up on the crashdesk prod Postgres volume: it's at 91% now (85% a week ago). Oban's pruner is on since Tuesday and oban_jobs is down to 1.2 GB, so the growth is the crashes table. Could you grow the volume today? I'll have the stack-retention proposal to you by Friday.",
         needs=["C16"]),
    turn("Ship the migration that adds the index on (build_id, inserted_at) to prod.",
         [bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad job dispatch -meta image=registry.bkg.lan/crashdesk:2026.11.03-1 crashdesk-migrate | tail -1",
               "==> 2026-11-03T15:22:09Z: Evaluation \"8e0f6b21\" finished with status \"complete\""),
          bash("NOMAD_ADDR=https://nomad.bkg.lan:4646 nomad alloc logs -job crashdesk-migrate | tail -2",
               "15:22:31.906 [info] create index concurrently if not exists crashes_build_id_inserted_at_index\n15:24:02.117 [info] == Migrated 20261103101845 in 90.2s")],
         "Dispatched the migrate batch job with image 2026.11.03-1; it created crashes_build_id_inserted_at_index concurrently on prod, which took 90 s, with no table lock.",
         needs=["C11"]),
    turn("Post the monthly crash summary for October in the QA channel.",
         [bash("mix run priv/scripts/weekly_summary.exs --since 2026-10-01T00:00:00Z --until 2026-11-01T00:00:00Z --limit 3",
               "count  first_seen            last_seen             signature\n 1904  2026-10-09T18:02:11Z  2026-10-31T22:40:17Z  Loam::Physics::Broadphase::Query | ...\n  988  2026-10-10T20:40:03Z  2026-10-31T19:02:55Z  Loam::Streaming::Loader::Load | ...\n  611  2026-10-14T16:02:30Z  2026-10-30T08:11:42Z  Loam::Net::Session::OnPacket | ...")],
         "Posted draft:\n\n**October crash summary (2026-10-01T00:00Z to 2026-11-01T00:00Z)**\n1. Broadphase::Query access violation: 1,904 (2026-10-09T18:02Z to 2026-10-31T22:40Z)\n2. Streaming loader OOM: 988 (2026-10-10T20:40Z to 2026-10-31T19:02Z)\n3. Net::Session::OnPacket: 611 (2026-10-14T16:02Z to 2026-10-30T08:11Z)\n\nCounts are after the 2026-10-26 regrouping.",
         needs=["U13"]),
    turn("Don't touch the old upload route today; I'll talk to the client team first.",
         [],
         "OK, I'm leaving the legacy route and its deprecation headers exactly as they are."),
    turn("Commit everything that's left and put it up.",
         [edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Job system trampoline frames no longer count towards crash signatures.\n"),
          bash("git add -A && git commit -qm 'Add changelog entry for job frame rule' -m 'Refs: CD-83' && git push -q && gh pr view --json url,isDraft -q '.url + \" draft=\" + (.isDraft|tostring)'",
               "https://github.com/brackenridge-games/crashdesk/pull/112 draft=true")],
         "Added the changelog line under Unreleased, committed with `Refs: CD-83` and pushed to PR #112, which stays a draft until CI and Aiko's review are through.",
         needs=["U01", "U04", "U08"]),
)

# =========================================================================== build


def build():
    facts_by_id = {}
    for fid, project, ftype, kind, content, anchors, sup in FACTS:
        facts_by_id[fid] = {
            "fact_id": fid,
            "scope": "user" if project is None else "project",
            "project": project,
            "type": ftype,
            "content": content,
            "anchors": anchors,
            "taught_in": None,
            "superseded_by": sup,
            "kind": kind,
        }
    sessions = []
    for n, (project, day, turns) in enumerate(SESSIONS, 1):
        sid = f"s{n:02d}"
        out_turns = []
        for t, tr in enumerate(turns, 1):
            for fid in tr["teaches"]:
                if facts_by_id[fid]["taught_in"] is not None:
                    raise SystemExit(f"{fid} taught twice")
                facts_by_id[fid]["taught_in"] = {"session": sid, "turn": t}
            out_turns.append({
                "turn": t,
                "prompt": tr["prompt"],
                "events": tr["events"],
                "answer": tr["answer"],
                "teaches": tr["teaches"],
                "needs": tr["needs"],
                "quiet": not tr["teaches"],
            })
        sessions.append({"session_id": sid, "project": project, "day": day, "turns": out_turns})
    missing = [f for f, v in facts_by_id.items() if v["taught_in"] is None]
    if missing:
        raise SystemExit(f"never taught: {missing}")
    return [facts_by_id[f[0]] for f in FACTS], sessions


def self_check(facts, sessions):
    """Extra checks beyond validate.py: current facts must not show a superseded fact on their own."""
    by_id = {f["fact_id"]: f for f in facts}
    problems = []
    for old in facts:
        if not old["superseded_by"]:
            continue
        new = by_id[old["superseded_by"]]
        for f in facts:
            if f["superseded_by"] or f is old:
                continue
            low = f["content"].lower()
            if all(a.lower() in low for a in old["anchors"]) and not all(a.lower() in low for a in new["anchors"]):
                problems.append(f"{f['fact_id']} shows superseded {old['fact_id']} without {new['fact_id']}")
    return problems


def dump_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    facts, sessions = build()
    problems = self_check(facts, sessions)
    for p in problems:
        print("SELF-CHECK", p, file=sys.stderr)
    with open(os.path.join(HERE, "world.json"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(json.dumps(WORLD, ensure_ascii=False, indent=2) + "\n")
    dump_jsonl(os.path.join(HERE, "facts.jsonl"), facts)
    dump_jsonl(os.path.join(HERE, "sessions.jsonl"), sessions)
    turns = sum(len(s["turns"]) for s in sessions)
    needs = sum(len(t["needs"]) for s in sessions for t in s["turns"])
    print(f"wrote {len(sessions)} sessions, {turns} turns, {len(facts)} facts, {needs} needs")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
