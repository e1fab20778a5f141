#!/usr/bin/env python3
"""Generate the 'third' coding-month world (Brannock Ferries).

Run from this folder: python3 make_world.py
Writes world.json, facts.jsonl and sessions.jsonl next to this script.
All content is fictional; third-party tools and their messages are real (abridged).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

WORLD = {
    "projects": [
        {
            "key": "sailings",
            "name": "sailings",
            "stack": "Elixir 1.17, Phoenix 1.7 (LiveView), Ecto + PostgreSQL 16, Oban, ExUnit, "
                     "ExMachina, Credo, tz, Kamal 2 on Hetzner, GitHub Actions",
            "description": "Booking and capacity backend for Brannock Ferries' island routes: "
                           "timetables, fare rules, seat holds, checkout, waitlists and the "
                           "passenger manifest sent to the harbour master.",
        },
        {
            "key": "deckhand-app",
            "name": "deckhand-app",
            "stack": "TypeScript, React Native 0.74, Expo SDK 51, expo-router, TanStack Query, "
                     "expo-camera, Jest + jest-expo + Testing Library, EAS Build/Update/Submit, pnpm",
            "description": "Android/iOS app for deck crew and pursers: scan boarding tickets, count "
                           "vehicles on the car deck, queue scans offline and sync them to sailings.",
        },
    ],
    "days": 20,
    "start_date": "2026-05-04",
}

# ---------------------------------------------------------------------------
# facts (taught_in is filled in from the sessions below)
# ---------------------------------------------------------------------------
FACTS = [
    # user scope
    ("U01", "user", None, "semantic", "preference",
     "The user's commit messages keep the ticket out of the subject line and end with a "
     "trailer line `Refs: BRN-<n>` (e.g. Refs: BRN-412).",
     ["Refs: BRN-"], None),
    ("U02", "user", None, "semantic", "environment",
     "The user's iOS/Xcode builds run on their Mac mini mizzen (ssh mizzen.local, repos under "
     "~/src); the laptop has no Xcode.",
     ["mizzen"], "U08"),
    ("U03", "user", None, "procedural", "convention",
     "The user never pushes with a bare --force; after a rebase the branch is pushed with "
     "`git push --force-with-lease`, in every repository.",
     ["--force-with-lease"], None),
    ("U04", "user", None, "semantic", "convention",
     "The user writes TODO comments as `TODO(mf): BRN-<n> ...` (their initials plus the ticket) "
     "so they can grep for their own.",
     ["TODO(mf"], None),
    ("U05", "user", None, "semantic", "people",
     "Kasia Nowak handles the user's access requests for everything: bastion SSH keys, Hetzner, "
     "the Expo organisation, GitHub teams, Play Console.",
     ["Kasia"], None),
    ("U06", "user", None, "semantic", "preference",
     "Every PR the user opens, in any repository, needs a 'How to test' section in the "
     "description with exact steps someone else can follow.",
     ["How to test"], None),
    ("U07", "user", None, "semantic", "environment",
     "The user installs language runtimes (Node, Erlang, Elixir) only with mise, pinned per repo "
     "with `mise use`; Homebrew is for CLI tools, never for runtimes.",
     ["mise"], None),
    ("U08", "user", None, "semantic", "environment",
     "The user's iOS/Xcode builds now run on their Mac Studio gannet (ssh gannet.local, repos "
     "under ~/code, Xcode 16); the Mac mini went back to IT.",
     ["gannet"], None),
    # sailings
    ("S01", "project", "sailings", "semantic", "convention",
     "sailings stores every money amount as an integer number of cents in a column whose name "
     "ends in _cents (like adult_fare_cents); never :decimal or floats.",
     ["_cents"], None),
    ("S02", "project", "sailings", "procedural", "environment",
     "sailings' staging Postgres is only reachable through the bastion bollard: "
     "`ssh -f -N -L 6543:pg-staging.internal:5432 bollard`, then psql against localhost:6543.",
     ["bollard", "6543"], None),
    ("S03", "project", "sailings", "episodic", "fix",
     "sailings' timer-driven GenServers (Holds.Sweeper) must not start in the test env: "
     "application.ex gates them on config flags and config/test.exs sets start_sweeper: false, "
     "otherwise tests fail with DBConnection.OwnershipError. New periodic processes follow the "
     "same pattern.",
     ["start_sweeper"], None),
    ("S04", "project", "sailings", "semantic", "decision",
     "Business rule: sailings checkout holds seats for 15 minutes; the value lives in "
     "config :sailings, :hold_ttl and code and tests read it from there.",
     ["15 minutes"], "S10"),
    ("S05", "project", "sailings", "semantic", "people",
     "Eilidh MacRae (revenue team, GitHub eilidh-macrae) must approve every sailings change to "
     "fare rules; add her as a reviewer on those PRs.",
     ["Eilidh"], None),
    ("S06", "project", "sailings", "procedural", "procedure",
     "sailings staging deploy: `kamal deploy -d staging`, then `mix sailings.smoke --env staging` "
     "(books and cancels a seat on the test sailing); not deployed until the smoke run is green.",
     ["kamal deploy -d staging", "sailings.smoke"], None),
    ("S07", "project", "sailings", "semantic", "decision",
     "Decision from the architecture sync: Timex is being removed from sailings; use DateTime "
     "with the tz library (Tz.TimeZoneDatabase), store UTC and shift to Europe/Dublin only for "
     "display.",
     ["Timex"], None),
    ("S08", "project", "sailings", "semantic", "preference",
     "In sailings tests, build data with ExMachina factories in test/support/factory.ex rather "
     "than growing the old Fixtures modules.",
     ["ExMachina"], None),
    ("S09", "project", "sailings", "semantic", "environment",
     "sailings' local dev Postgres (docker compose) listens on localhost:5433, not 5432, so it "
     "does not clash with Postgres.app.",
     ["5433"], None),
    ("S10", "project", "sailings", "semantic", "decision",
     "Ops meeting decision for the summer timetable: sailings checkout now holds seats for "
     "7 minutes (config :sailings, :hold_ttl), also quoted in the checkout email.",
     ["7 minutes"], None),
    # deckhand-app
    ("D01", "project", "deckhand-app", "episodic", "fix",
     "deckhand-app's jest.config.js keeps a hand-maintained transformIgnorePatterns allowlist; "
     "every new expo-*/ESM package must be added to it, or Jest fails with "
     "'Cannot use import statement outside a module'.",
     ["transformIgnorePatterns"], None),
    ("D02", "project", "deckhand-app", "semantic", "environment",
     "deckhand-app's staging API is https://api.staging.brannockferries.ie, set as "
     "EXPO_PUBLIC_API_URL in .env.staging (the old herokuapp URL is dead).",
     ["api.staging.brannockferries.ie"], None),
    ("D03", "project", "deckhand-app", "semantic", "people",
     "Tadhg Rooney, deck officer on the MV Gráinne, runs the deckhand-app crew pilot and "
     "installs every preview build; send him the link and what changed.",
     ["Tadhg"], None),
    ("D04", "project", "deckhand-app", "semantic", "decision",
     "Decision: deckhand-app's offline scan queue is persisted in expo-sqlite (table "
     "pending_scans, src/offline/queue.ts), not AsyncStorage, which lost scans when Android "
     "killed the app mid-write.",
     ["expo-sqlite"], "D10"),
    ("D05", "project", "deckhand-app", "semantic", "convention",
     "Every deckhand-app UI string is a t() key present in both locales/en.json and "
     "locales/ga.json (Irish is required); untranslated Irish entries carry a [ga] prefix "
     "until Siobhán translates them.",
     ["ga.json"], None),
    ("D06", "project", "deckhand-app", "procedural", "procedure",
     "deckhand-app: JS-only changes reach the testers as an OTA with "
     "`eas update --channel preview --message ...`; only native changes (new native module, "
     "config plugin, SDK bump) need a new `eas build --profile preview`.",
     ["eas update --channel preview"], None),
    ("D07", "project", "deckhand-app", "semantic", "convention",
     "deckhand-app uses named exports everywhere; default exports only for the expo-router "
     "route files under app/.",
     ["named exports"], None),
    ("D08", "project", "deckhand-app", "episodic", "fix",
     "On the Android emulator deckhand-app must reach the local sailings server at "
     "http://10.0.2.2:4000 (the host machine), not localhost, which is the emulator itself.",
     ["10.0.2.2"], None),
    ("D09", "project", "deckhand-app", "semantic", "decision",
     "Decision with the deck crew: the deckhand-app scan screen never uses Alert.alert; rejected "
     "scans show the full-screen red ScanResult banner with the error haptic, dismissed "
     "automatically after 2 seconds (crew wear gloves).",
     ["Alert.alert"], None),
    ("D10", "project", "deckhand-app", "semantic", "decision",
     "Decision after the pilot battery drain: deckhand-app's offline scan queue lives in "
     "react-native-mmkv; expo-sqlite is on its way out, kept only for a one-time migration "
     "of leftover pending_scans rows on first launch.",
     ["react-native-mmkv"], None),
]


# ---------------------------------------------------------------------------
# helpers for events
# ---------------------------------------------------------------------------
def B(command, output, error=False):
    return {"tool": "Bash", "input": {"command": command}, "output": output, "error": error}


def E(path, old, new):
    return {"tool": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new},
            "output": f"The file {path} has been updated successfully.", "error": False}


def W(path, content):
    return {"tool": "Write", "input": {"file_path": path, "content": content},
            "output": f"File created successfully at: {path}", "error": False}


def R(path, lines, start=1):
    out = "\n".join(f"{i:>6}\t{l}" for i, l in enumerate(lines.split("\n"), start))
    return {"tool": "Read", "input": {"file_path": path}, "output": out, "error": False}


def T(prompt, events, answer, teaches=(), needs=()):
    return {"prompt": prompt, "events": events, "answer": answer,
            "teaches": list(teaches), "needs": list(needs)}


SESSIONS = []


def S(project, day, *turns):
    SESSIONS.append({"project": project, "day": day, "turns": list(turns)})


MIX_TEST_OK = "Finished in {t} seconds ({a}s async, {s}s sync)\n{n} tests, 0 failures\n\nRandomized with seed {seed}"
JEST_OK = "Test Suites: {s} passed, {s} total\nTests:       {n} passed, {n} total\nSnapshots:   6 passed, 6 total\nTime:        {t} s\nRan all test suites{x}."

# ---------------------------------------------------------------------------
# sessions
# ---------------------------------------------------------------------------
APP_EX = """defmodule Sailings.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    children = [
      SailingsWeb.Telemetry,
      Sailings.Repo,
      {DNSCluster, query: Application.get_env(:sailings, :dns_cluster_query) || :ignore},
      {Phoenix.PubSub, name: Sailings.PubSub},
      {Finch, name: Sailings.Finch},
      {Oban, Application.fetch_env!(:sailings, Oban)},
      Sailings.Holds.Sweeper,
      SailingsWeb.Endpoint
    ]

    opts = [strategy: :one_for_one, name: Sailings.Supervisor]
    Supervisor.start_link(children, opts)
  end"""

# ---------------------------------------------------------------- s01 day 1 sailings
S("sailings", 1,
  T("Pull main and get the test suite green again, I haven't touched this repo in a fortnight.",
    [B("git pull --ff-only",
       "Updating 3f9c2e1..a71d04b\nFast-forward\n lib/sailings/application.ex        |  1 +\n"
       " lib/sailings/holds/sweeper.ex      | 64 +++++++++++++++++\n lib/sailings/holds.ex              | 38 +++++++---\n"
       " test/sailings/holds_test.exs       | 52 ++++++++++++++\n 7 files changed, 211 insertions(+), 18 deletions(-)"),
     B("mix deps.get", "Resolving Hex dependencies...\nResolution completed in 0.412s\nUnchanged:\n  ecto_sql 3.12.1\n  oban 2.18.3\n  phoenix 1.7.14\n  tz 0.28.1\n  ...\nAll dependencies are up to date"),
     B("mix test",
       "Compiling 7 files (.ex)\nGenerated sailings app\n"
       "09:41:12.311 [error] GenServer Sailings.Holds.Sweeper terminating\n"
       "** (DBConnection.OwnershipError) cannot find ownership process for #PID<0.612.0>.\n\n"
       "When using ownership, you must manage connections in one\nof the four ways:\n\n"
       "* By explicitly checking out a connection\n* By explicitly allowing a spawned process\n"
       "* By running the pid with the :caller option\n* By using :shared mode\n...\n"
       "    (ecto_sql 3.12.1) lib/ecto/adapters/sql.ex:1096: Ecto.Adapters.SQL.raise_sql_call_error/1\n"
       "    (sailings 0.9.0) lib/sailings/holds/sweeper.ex:41: Sailings.Holds.Sweeper.handle_info/2\n"
       "Last message: :sweep\n...\n"
       "  1) test release_expired/1 frees seats on the sailing (Sailings.HoldsTest)\n"
       "     test/sailings/holds_test.exs:31\n     ** (EXIT from #PID<0.598.0>) shutdown\n...\n"
       "Finished in 4.8 seconds (1.9s async, 2.9s sync)\n212 tests, 9 failures", True),
     R("lib/sailings/application.ex", APP_EX),
     E("lib/sailings/application.ex",
       "      {Oban, Application.fetch_env!(:sailings, Oban)},\n      Sailings.Holds.Sweeper,\n      SailingsWeb.Endpoint\n    ]",
       "      {Oban, Application.fetch_env!(:sailings, Oban)}\n    ] ++ sweeper_children() ++ [SailingsWeb.Endpoint]"),
     E("lib/sailings/application.ex",
       "    Supervisor.start_link(children, opts)\n  end",
       "    Supervisor.start_link(children, opts)\n  end\n\n  defp sweeper_children do\n"
       "    if Application.get_env(:sailings, :start_sweeper, true), do: [Sailings.Holds.Sweeper], else: []\n  end"),
     E("config/test.exs", "config :sailings, Oban, testing: :manual",
       "config :sailings, Oban, testing: :manual\n\n# timer-driven processes touch the DB outside the SQL sandbox\nconfig :sailings, start_sweeper: false"),
     B("mix test", MIX_TEST_OK.format(t="3.9", a="1.8", s="2.1", n=212, seed=40117))],
    "Green again: 212 tests, 0 failures.\n\nThe cause was the new `Sailings.Holds.Sweeper` that came in with the pull. "
    "The application started it in every environment, test included; it wakes up every 30 s and queries `holds` from "
    "its own process, which never checked out a sandbox connection, so Ecto raised `DBConnection.OwnershipError` and the "
    "crash took down the tests that were mid-transaction (the 9 failures).\n\nFix: `application.ex` only starts the sweeper "
    "when `Application.get_env(:sailings, :start_sweeper, true)` is true, and `config/test.exs` sets "
    "`start_sweeper: false`. The holds tests call `Sweeper.sweep/0` directly, so coverage is unchanged. Any other process "
    "that polls the database on a timer should be gated the same way.",
    teaches=["S03"]),
  T("Good. Commit that as a fix, ticket is BRN-412. The ticket never goes in my subject line: it's a trailer at the "
    "bottom, `Refs: BRN-412`, on every commit I make.",
    [B("git add lib/sailings/application.ex config/test.exs && git commit -m \"Keep the holds sweeper out of the test env\" "
       "-m \"The sweeper polled the DB outside the SQL sandbox and crashed tests with OwnershipError. It is now gated on "
       ":start_sweeper, which config/test.exs turns off.\" -m \"Refs: BRN-412\"",
       "[main 5c0e7b2] Keep the holds sweeper out of the test env\n 2 files changed, 9 insertions(+), 2 deletions(-)")],
    "Committed as 5c0e7b2, subject \"Keep the holds sweeper out of the test env\", with a short body and `Refs: BRN-412` "
    "as the last line. Not pushed.",
    teaches=["U01"]),
  T("What else does the application supervisor start, apart from the sweeper? Just list them, don't change anything.",
    [R("lib/sailings/application.ex", APP_EX)],
    "In order: `SailingsWeb.Telemetry`, `Sailings.Repo`, `DNSCluster` (ignored unless `:dns_cluster_query` is set), "
    "`Phoenix.PubSub` as `Sailings.PubSub`, `Finch` as `Sailings.Finch` (used by the payment client), `Oban` with the "
    "`:sailings, Oban` config, then the sweeper when enabled, and finally `SailingsWeb.Endpoint`. One-for-one strategy."),
  )

# ---------------------------------------------------------------- s02 day 1 deckhand-app
S("deckhand-app", 1,
  T("Run the unit tests and the type check, I want a baseline before I touch the scanner.",
    [B("pnpm test",
       " ERR_PNPM_UNSUPPORTED_ENGINE  Unsupported environment (bad pnpm and/or Node.js version)\n\n"
       "Your Node version is incompatible with \"/Users/mf/src/deckhand-app\".\n\nExpected version: >=20.11.0\nGot: v18.19.1\n\n"
       "This is happening because the package's manifest has an engines.node field specified.\n"
       "To fix this issue, install the required Node version.", True),
     B("node --version && cat .nvmrc", "v18.19.1\n20.11.1")],
    "Couldn't get a baseline: pnpm refuses to run because the shell has Node 18.19.1 and `package.json` declares "
    "`engines.node >=20.11.0` (`.nvmrc` says 20.11.1). Nothing ran. I can install Node 20 with `brew install node@20` "
    "and put it on the PATH if you want."),
  T("Not brew. Every language runtime on my machines comes from mise; brew only gets plain CLI tools. Pin Node 20 for "
    "this repo with mise and carry on.",
    [B("mise use node@20.11.1", "mise node@20.11.1 ✓ installed\nmise ~/src/deckhand-app/mise.toml tools: node@20.11.1"),
     B("node --version && pnpm test",
       "v20.11.1\n\n> deckhand-app@1.4.0 test /Users/mf/src/deckhand-app\n> jest\n\n"
       + JEST_OK.format(s=14, n=83, t="7.412", x="")),
     B("pnpm tsc --noEmit", "")],
    "Done with `mise use node@20.11.1`, which wrote a `mise.toml` in the repo root (untracked for now, tell me whether to "
    "commit it). Baseline on Node 20.11.1: 14 suites, 83 tests passing, `tsc --noEmit` clean.",
    teaches=["U07"]),
  T("Now add expo-haptics and give the scanner a success buzz on a valid scan. With a test, and commit it once it's green, "
    "BRN-415.",
    [B("npx expo install expo-haptics",
       "› Installing 1 SDK 51.0.0 compatible native module using pnpm\n> pnpm add expo-haptics@~13.0.1\n"
       "Packages: +1\n+\nProgress: resolved 1204, reused 1183, downloaded 1, added 1, done\n\n"
       "dependencies:\n+ expo-haptics 13.0.1\n\nDone in 3.2s"),
     W("src/scanner/useScanFeedback.ts",
       "import * as Haptics from 'expo-haptics';\n\nexport function useScanFeedback() {\n"
       "  return {\n    success: () => Haptics.notificationAsync(Haptics.NotificationFeedbackType.Success),\n"
       "    error: () => Haptics.notificationAsync(Haptics.NotificationFeedbackType.Error),\n  };\n}\n"),
     E("src/scanner/ScanScreen.tsx", "    if (result.valid) {\n      queue.push(result.ticket);",
       "    if (result.valid) {\n      feedback.success();\n      queue.push(result.ticket);"),
     W("src/scanner/__tests__/useScanFeedback.test.ts",
       "import * as Haptics from 'expo-haptics';\nimport { renderHook } from '@testing-library/react-native';\n"
       "import { useScanFeedback } from '../useScanFeedback';\n\njest.mock('expo-haptics', () => ({\n"
       "  ...jest.requireActual('expo-haptics'),\n  notificationAsync: jest.fn(),\n}));\n\n"
       "test('valid scan gives a success buzz', () => {\n  const { result } = renderHook(() => useScanFeedback());\n"
       "  result.current.success();\n  expect(Haptics.notificationAsync).toHaveBeenCalledWith('success');\n});\n"),
     B("pnpm jest src/scanner",
       "FAIL src/scanner/__tests__/useScanFeedback.test.ts\n  ● Test suite failed to run\n\n"
       "    Jest encountered an unexpected token\n\n    Jest failed to parse a file. This happens e.g. when your code or its "
       "dependencies use non-standard JavaScript syntax, or when Jest is not configured to support such syntax.\n    ...\n"
       "    Details:\n\n    /Users/mf/src/deckhand-app/node_modules/expo-haptics/build/Haptics.js:1\n"
       "    ({\"Object.<anonymous>\":function(module,exports,require,__dirname,__filename,jest){import ExpoHaptics from './ExpoHaptics';\n"
       "                                                                                      ^^^^^^\n\n"
       "    SyntaxError: Cannot use import statement outside a module\n\n"
       "Test Suites: 1 failed, 3 passed, 4 total\nTests:       17 passed, 17 total", True),
     R("jest.config.js",
       "module.exports = {\n  preset: 'jest-expo',\n  setupFilesAfterEnv: ['./jest.setup.ts'],\n"
       "  // explicit allowlist: everything else in node_modules is used as-is\n  transformIgnorePatterns: [\n"
       "    'node_modules/(?!(\\\\.pnpm|react-native|@react-native|expo|expo-camera|expo-router|expo-modules-core|"
       "expo-sqlite|@tanstack)/)',\n  ],\n};"),
     E("jest.config.js", "expo-camera|expo-router|", "expo-camera|expo-haptics|expo-router|"),
     B("pnpm jest src/scanner", JEST_OK.format(s=4, n=18, t="2.106", x=" matching /src\\/scanner/i")),
     B("git add -A && git commit -m \"Buzz on a valid scan\" -m \"Adds expo-haptics and a useScanFeedback hook.\" -m \"Refs: BRN-415\"",
       "[main 0b4d8a2] Buzz on a valid scan\n 6 files changed, 41 insertions(+), 2 deletions(-)\n create mode 100644 src/scanner/useScanFeedback.ts")],
    "Added `expo-haptics` (SDK 51 pin 13.0.1), a `useScanFeedback` hook, and a success buzz on valid scans in "
    "`ScanScreen`; test included, scanner suites pass (18 tests). Committed as 0b4d8a2 with `Refs: BRN-415` as the trailer.\n\nThe first run failed with `SyntaxError: Cannot use "
    "import statement outside a module` inside `expo-haptics/build/Haptics.js`. Root cause: our `jest.config.js` replaces "
    "jest-expo's default `transformIgnorePatterns` with a hand-maintained allowlist, and only the packages named there get "
    "transpiled. expo-haptics ships untranspiled ESM, so I added it to the list. Any new expo-*/ESM package will need "
    "the same entry or Jest will fail the same way.",
    teaches=["D01"], needs=["U01"]),
  T("Good. Someone on last week's PR asked why the offline queue doesn't just use AsyncStorage. It stays on expo-sqlite, "
    "the pending_scans table: AsyncStorage lost scans when Android killed the app mid-write. Put a short comment at the "
    "top of src/offline/queue.ts saying so, so nobody re-opens that.",
    [E("src/offline/queue.ts", "import * as SQLite from 'expo-sqlite';",
       "// Offline scans are persisted in expo-sqlite (table pending_scans), deliberately not AsyncStorage:\n"
       "// AsyncStorage lost scans when Android killed the app mid-write. Writes here are transactional.\n"
       "import * as SQLite from 'expo-sqlite';")],
    "Added a two-line comment above the import in `src/offline/queue.ts`: the queue is persisted in expo-sqlite "
    "(`pending_scans`) on purpose, because AsyncStorage lost scans when Android killed the app mid-write.",
    teaches=["D04"]),
  )

# ---------------------------------------------------------------- s03 day 2 sailings
S("sailings", 2,
  T("Revenue want separate child fares: under-12s pay their own price on each route. Add it to fare rules.",
    [B("mix ecto.gen.migration add_child_fare_to_fare_rules",
       "* creating priv/repo/migrations/20260505091412_add_child_fare_to_fare_rules.exs"),
     W("priv/repo/migrations/20260505091412_add_child_fare_to_fare_rules.exs",
       "defmodule Sailings.Repo.Migrations.AddChildFareToFareRules do\n  use Ecto.Migration\n\n  def change do\n"
       "    alter table(:fare_rules) do\n      add :child_fare, :decimal, precision: 8, scale: 2\n    end\n  end\nend\n"),
     E("lib/sailings/fares/fare_rule.ex", "    field :adult_fare_cents, :integer",
       "    field :adult_fare_cents, :integer\n    field :child_fare, :decimal")],
    "Added a nullable `child_fare` decimal(8,2) to `fare_rules` plus the schema field; when it is null the adult price "
    "applies. Migration not run yet."),
  T("No. Money is never a decimal in this codebase: every amount is an integer count of cents and the column name ends "
    "in _cents. adult_fare_cents is sitting right there. Redo the migration and the schema.",
    [E("priv/repo/migrations/20260505091412_add_child_fare_to_fare_rules.exs",
       "      add :child_fare, :decimal, precision: 8, scale: 2", "      add :child_fare_cents, :integer"),
     E("lib/sailings/fares/fare_rule.ex", "    field :child_fare, :decimal", "    field :child_fare_cents, :integer"),
     E("lib/sailings/fares.ex",
       "  def price_for(%FareRule{} = rule, :child), do: rule.adult_fare_cents",
       "  def price_for(%FareRule{child_fare_cents: nil} = rule, :child), do: rule.adult_fare_cents\n"
       "  def price_for(%FareRule{} = rule, :child), do: rule.child_fare_cents"),
     B("mix ecto.migrate",
       "09:21:07.418 [info] == Running 20260505091412 Sailings.Repo.Migrations.AddChildFareToFareRules.change/0 forward\n"
       "09:21:07.420 [info] alter table fare_rules\n09:21:07.431 [info] == Migrated 20260505091412 in 0.0s"),
     B("mix test test/sailings/fares_test.exs", MIX_TEST_OK.format(t="0.4", a="0.4", s="0.0", n=23, seed=8812))],
    "Redone: the column is `child_fare_cents :integer` (nullable, null = adult price), the schema matches, and "
    "`Fares.price_for/2` returns `child_fare_cents` for children. Migrated locally; fares tests pass.",
    teaches=["S01"]),
  T("Commit it and open a PR against main, ticket BRN-418. Eilidh MacRae in revenue signs off anything that changes fare "
    "rules, so she has to be a reviewer. She's eilidh-macrae on GitHub.",
    [B("git checkout -b feat/child-fares && git add -A && git commit -m \"Add per-route child fares\" "
       "-m \"Adds fare_rules.child_fare_cents; null falls back to the adult fare.\" -m \"Refs: BRN-418\"",
       "Switched to a new branch 'feat/child-fares'\n[feat/child-fares 8d2a1f3] Add per-route child fares\n"
       " 4 files changed, 19 insertions(+), 1 deletion(-)\n create mode 100644 priv/repo/migrations/20260505091412_add_child_fare_to_fare_rules.exs"),
     B("git push -u origin feat/child-fares",
       "To github.com:brannock-ferries/sailings.git\n * [new branch]      feat/child-fares -> feat/child-fares\n"
       "branch 'feat/child-fares' set up to track 'origin/feat/child-fares'."),
     B("gh pr create --base main --title \"Add per-route child fares\" --body \"Adds fare_rules.child_fare_cents (integer cents, "
       "nullable). Null means children pay the adult fare, so existing routes are unchanged.\" --reviewer eilidh-macrae",
       "\nCreating pull request for feat/child-fares into main in brannock-ferries/sailings\n\n"
       "https://github.com/brannock-ferries/sailings/pull/231")],
    "PR #231 is open (https://github.com/brannock-ferries/sailings/pull/231) with Eilidh MacRae (eilidh-macrae) as "
    "reviewer. Commit 8d2a1f3 on `feat/child-fares` ends with `Refs: BRN-418`.",
    teaches=["S05"], needs=["U01"]),
  T("CI's gone red on it.",
    [B("gh pr checks 231",
       "Some checks were not successful\n0 cancelled, 1 failing, 2 successful, 0 skipped, and 0 pending checks\n\n"
       "X  ci/credo   41s   https://github.com/brannock-ferries/sailings/actions/runs/9214470012/job/25351120993\n"
       "✓  ci/test    2m13s https://github.com/brannock-ferries/sailings/actions/runs/9214470012/job/25351120871\n"
       "✓  ci/format  18s   https://github.com/brannock-ferries/sailings/actions/runs/9214470012/job/25351120642", True),
     B("mix credo --strict",
       "Checking 96 source files ...\n\n  Code Readability\n┃\n┃ [R] ↘ Nested modules could be aliased at the top of the invoking module.\n"
       "┃       lib/sailings/fares.ex:88:17 #(Sailings.Fares.price_for)\n\n"
       "Please report incorrect results: https://github.com/rrrene/credo/issues\n\n"
       "Analysis took 1.2 seconds (0.08s to load, 1.1s running 55 checks on 96 files)\n412 mods/funs, found 1 refactoring opportunity.", True),
     E("lib/sailings/fares.ex", "  alias Sailings.Fares.FareRule", "  alias Sailings.Fares.FareRule\n  alias Sailings.Routes.Route"),
     E("lib/sailings/fares.ex", "%Sailings.Routes.Route{} = route", "%Route{} = route"),
     B("mix credo --strict", "Checking 96 source files ...\n\nAnalysis took 1.1 seconds (0.07s to load, 1.0s running 55 checks on 96 files)\n412 mods/funs, found no issues."),
     B("git commit -am \"Alias Route in Fares\" -m \"Refs: BRN-418\" && git push",
       "[feat/child-fares 2b77e04] Alias Route in Fares\n 1 file changed, 2 insertions(+), 1 deletion(-)\n"
       "To github.com:brannock-ferries/sailings.git\n   8d2a1f3..2b77e04  feat/child-fares -> feat/child-fares")],
    "Only Credo failed: one `[R] Nested modules could be aliased` in `lib/sailings/fares.ex:88` (a pre-existing "
    "`%Sailings.Routes.Route{}` match near my change). Added the alias; `mix credo --strict` is clean, pushed as 2b77e04. "
    "Tests and format were already green."),
  )

# ---------------------------------------------------------------- s04 day 3 deckhand-app
S("deckhand-app", 3,
  T("The API behind the app moved last week. Staging is https://api.staging.brannockferries.ie now, and the herokuapp URL "
    "in .env.staging is dead. Update it and check it answers.",
    [R(".env.staging", "EXPO_PUBLIC_API_URL=https://brannock-sailings-stg.herokuapp.com\nEXPO_PUBLIC_SENTRY_ENV=staging"),
     E(".env.staging", "EXPO_PUBLIC_API_URL=https://brannock-sailings-stg.herokuapp.com",
       "EXPO_PUBLIC_API_URL=https://api.staging.brannockferries.ie"),
     B("curl -sS https://api.staging.brannockferries.ie/api/v2/health",
       "{\"status\":\"ok\",\"version\":\"0.9.0\",\"db\":\"ok\",\"node\":\"sailings@stg-web-1\"}")],
    "Updated `EXPO_PUBLIC_API_URL` in `.env.staging` to https://api.staging.brannockferries.ie; its `/api/v2/health` "
    "answers `ok` (version 0.9.0). Builds made with the staging env pick it up at build time.",
    teaches=["D02"]),
  T("Kick off an Android preview build. Tadhg Rooney, the deck officer on the MV Gráinne who's running the crew pilot, "
    "installs every preview build, so draft me a two-line note for him with the install link once it's queued.",
    [B("eas build --profile preview --platform android --non-interactive --no-wait",
       "Resolved \"preview\" environment for the build.\nLoaded \"env\" configuration for the \"preview\" profile: "
       "EXPO_PUBLIC_API_URL, EXPO_PUBLIC_SENTRY_ENV.\n✔ Using remote Android credentials (Expo server)\n"
       "✔ Compressed project files 1s (6.1 MB)\n✔ Uploaded to EAS 2s\n\nBuild details: "
       "https://expo.dev/accounts/brannock/projects/deckhand/builds/4f1c6a0e-2d9b-4d61-9a53-3e1a0f7c22b1\n\n"
       "Waiting for build to complete. You can press Ctrl+C to exit.\n✔ Build queued")],
    "Queued: https://expo.dev/accounts/brannock/projects/deckhand/builds/4f1c6a0e-2d9b-4d61-9a53-3e1a0f7c22b1 "
    "(preview profile, staging API). Note for Tadhg:\n\n> New deckhand preview for the pilot: install from the link "
    "above once it goes green (about 15 min). It now talks to the new staging server, so log in again with your crew PIN.",
    teaches=["D03"]),
  T("While that builds: the scanned-tickets list re-renders on every camera frame. Have a look.",
    [R("src/scanner/ScanList.tsx",
       "export function ScanList({ scans, onUndo }: Props) {\n  const sorted = scans.slice().sort(byScannedAtDesc);\n"
       "  return (\n    <FlatList\n      data={sorted}\n      renderItem={({ item }) => <ScanRow scan={item} onUndo={() => onUndo(item.id)} />}\n"
       "      keyExtractor={(s) => s.id}\n    />\n  );\n}"),
     E("src/scanner/ScanList.tsx",
       "export function ScanList({ scans, onUndo }: Props) {\n  const sorted = scans.slice().sort(byScannedAtDesc);",
       "export const ScanList = memo(function ScanList({ scans, onUndo }: Props) {\n"
       "  const sorted = useMemo(() => scans.slice().sort(byScannedAtDesc), [scans]);\n"
       "  const renderItem = useCallback(({ item }: { item: Scan }) => <ScanRow scan={item} onUndo={onUndo} />, [onUndo]);"),
     E("src/scanner/ScanScreen.tsx", "<ScanList scans={scans} onUndo={(id) => queue.undo(id)} />",
       "<ScanList scans={scans} onUndo={undo} />"),
     B("pnpm jest src/scanner", JEST_OK.format(s=4, n=18, t="2.311", x=" matching /src\\/scanner/i"))],
    "`ScanScreen` re-renders on every frame because of the camera callback, and `ScanList` re-sorted and re-created "
    "`renderItem` and the undo closure each time, so every row re-rendered. `ScanList` is now memoised, the sort is in "
    "`useMemo`, and `ScanScreen` passes a stable `undo` from `useCallback`. Scanner tests pass."),
  T("Don't start another build for that. JS-only changes go to the testers over the air: eas update --channel preview "
    "with a message, and the phones pick it up on their next launch. A fresh preview build is only for native changes, "
    "meaning a new native module, a config plugin or an SDK bump. Ship the re-render fix that way.",
    [B("eas update --channel preview --message \"Stop scan list re-rendering on every camera frame\" --non-interactive",
       "✔ Exported bundle(s)\n✔ Uploaded 2 app bundles\n✔ Uploaded 0 assets\n✔ Published!\n\n"
       "Branch             preview\nRuntime version    1.4.0\nPlatform           android, ios\n"
       "Update group ID    9b3e27a0-51c4-4d8e-a2f6-0c3f4e9d1b77\nMessage            Stop scan list re-rendering on every camera frame\n"
       "EAS Dashboard      https://expo.dev/accounts/brannock/projects/deckhand/updates/9b3e27a0-51c4-4d8e-a2f6-0c3f4e9d1b77")],
    "Published to the `preview` channel (runtime 1.4.0, Android and iOS), group 9b3e27a0. Testers get it on their next "
    "cold start, including the build that is queued now.",
    teaches=["D06"]),
  )


# ---------------------------------------------------------------- s05 day 4 sailings
S("sailings", 4,
  T("The local database is on 5433, compose maps it there so it doesn't fight with Postgres.app. Connect and tell me how "
    "many sailings rows have no vessel_id.",
    [B("psql -h localhost -p 5433 -U postgres sailings_dev -c \"select count(*) from sailings where vessel_id is null;\"",
       " count \n-------\n    37\n(1 row)"),
     B("psql -h localhost -p 5433 -U postgres sailings_dev -c \"select route_code, count(*) from sailings where vessel_id is null group by 1 order by 2 desc;\"",
       " route_code | count \n------------+-------\n CRK-ISG    |    29\n CRK-INC    |     8\n(2 rows)")],
    "37 sailings have no `vessel_id`: 29 on CRK-ISG and 8 on CRK-INC. They are all from the seed file for the summer "
    "timetable, so it looks like the seed, not the import, is missing the vessel column.",
    teaches=["S09"]),
  T("Separate thing: the manifest export shows departures an hour early since the clocks went forward. Why?",
    [R("lib/sailings/manifest/export.ex",
       "  defp row(%Sailing{} = sailing, %Booking{} = booking) do\n    [\n      sailing.route_code,\n"
       "      Timex.format!(sailing.departs_at, \"{h24}:{m}\"),\n      booking.lead_passenger_name,\n"
       "      Integer.to_string(booking.passenger_count)\n    ]\n  end", 41)],
    "`departs_at` is a `:utc_datetime` and `export.ex:44` formats it with `Timex.format!` without shifting it to Irish "
    "time first. In winter UTC and Irish time coincide, so nobody noticed; since the clocks went forward (IST, UTC+1) every "
    "departure prints an hour early."),
  T("Right. We agreed at the architecture sync that Timex is going out entirely: plain DateTime with the tz library, "
    "Tz.TimeZoneDatabase is already the configured database. Keep storing UTC and only convert to Europe/Dublin for display. "
    "Fix the manifest that way.",
    [E("lib/sailings/manifest/export.ex", "      Timex.format!(sailing.departs_at, \"{h24}:{m}\"),",
       "      sailing.departs_at |> DateTime.shift_zone!(\"Europe/Dublin\") |> Calendar.strftime(\"%H:%M\"),"),
     W("test/sailings/manifest/export_test.exs",
       "defmodule Sailings.Manifest.ExportTest do\n  use Sailings.DataCase, async: true\n  alias Sailings.Manifest.Export\n\n"
       "  test \"departures are shown in Irish local time\" do\n    sailing = insert_sailing!(departs_at: ~U[2026-05-07 06:30:00Z])\n"
       "    [[_, time | _]] = Export.rows(sailing)\n    assert time == \"07:30\"\n  end\nend\n"),
     B("mix test test/sailings/manifest", MIX_TEST_OK.format(t="0.2", a="0.2", s="0.0", n=6, seed=51230)),
     B("grep -rn \"Timex\" lib test | wc -l", "11")],
    "The manifest now shifts `departs_at` with `DateTime.shift_zone!(\"Europe/Dublin\")` and formats with "
    "`Calendar.strftime`; storage stays UTC. New test pins 06:30Z to 07:30 in May. There are 11 other Timex calls left in "
    "`lib` and `test` (checkout emails, the timetable importer, two test helpers); I left them alone for a separate change.",
    teaches=["S07"]),
  T("One more. test/sailings/holds_test.exs hard-codes 10 minutes, but the rule is that checkout holds seats for 15 minutes. "
    "Make the code and the test read it from config. And put a TODO(mf): BRN-426 on each of those leftover Timex calls; "
    "that's how I tag all my TODOs, so I can grep for mine later.",
    [E("config/config.exs", "config :sailings, ecto_repos: [Sailings.Repo]",
       "config :sailings, ecto_repos: [Sailings.Repo]\n\n# how long checkout holds seats before releasing them\n"
       "config :sailings, :hold_ttl, :timer.minutes(15)"),
     E("lib/sailings/holds.ex", "  @hold_ttl :timer.minutes(10)\n", ""),
     E("lib/sailings/holds.ex", "    expires_at = DateTime.add(now, @hold_ttl, :millisecond)",
       "    expires_at = DateTime.add(now, Application.fetch_env!(:sailings, :hold_ttl), :millisecond)"),
     E("test/sailings/holds_test.exs", "    assert hold.expires_at == DateTime.add(now, 600, :second)",
       "    ttl = Application.fetch_env!(:sailings, :hold_ttl)\n    assert hold.expires_at == DateTime.add(now, ttl, :millisecond)"),
     B("sed -i '' '/Timex\\./i\\\n    # TODO(mf): BRN-426 replace Timex with DateTime + Calendar.strftime\n' "
       "lib/sailings/notifications/checkout_email.ex lib/sailings/timetable/importer.ex test/support/time_helpers.ex && "
       "grep -rn \"TODO(mf): BRN-426\" lib test | wc -l", "11"),
     B("mix test", MIX_TEST_OK.format(t="4.1", a="1.9", s="2.2", n=219, seed=7734))],
    "Holds now read `config :sailings, :hold_ttl` (`:timer.minutes(15)` in `config/config.exs`); the module attribute with "
    "10 minutes is gone and the test asserts against the config value. Each of the 11 remaining Timex calls has a "
    "`# TODO(mf): BRN-426 ...` line above it. Full suite: 219 tests, 0 failures.",
    teaches=["S04", "U04"]),
  )

# ---------------------------------------------------------------- s06 day 5 deckhand-app
S("deckhand-app", 5,
  T("Add a vehicle-deck counter for the loading screen: cars, vans and HGVs, each with plus and minus buttons.",
    [W("src/components/VehicleCounter.tsx",
       "import { Pressable, Text, View } from 'react-native';\nimport { useDeckCount } from '../loading/useDeckCount';\n\n"
       "const KINDS = [\n  { key: 'car', label: 'Cars' },\n  { key: 'van', label: 'Vans' },\n  { key: 'hgv', label: 'HGVs' },\n] as const;\n\n"
       "export default function VehicleCounter() {\n  const { counts, inc, dec } = useDeckCount();\n  return (\n    <View>\n"
       "      {KINDS.map((k) => (\n        <View key={k.key} style={styles.row}>\n          <Text>{k.label}</Text>\n"
       "          <Pressable onPress={() => dec(k.key)}><Text>-</Text></Pressable>\n          <Text>{counts[k.key]}</Text>\n"
       "          <Pressable onPress={() => inc(k.key)}><Text>+</Text></Pressable>\n        </View>\n      ))}\n    </View>\n  );\n}\n"),
     E("app/(crew)/loading.tsx", "import { DeckPlan } from '../../src/components/DeckPlan';",
       "import { DeckPlan } from '../../src/components/DeckPlan';\nimport VehicleCounter from '../../src/components/VehicleCounter';"),
     E("app/(crew)/loading.tsx", "      <DeckPlan sailingId={sailingId} />", "      <DeckPlan sailingId={sailingId} />\n      <VehicleCounter />")],
    "Added `src/components/VehicleCounter.tsx` (rows for cars, vans and HGVs with -/+ buttons, backed by the existing "
    "`useDeckCount` hook) and placed it under the deck plan on the loading screen."),
  T("Make it a named export. The only default exports here are the route files under app/, because expo-router needs them; "
    "everything in src/ is named.",
    [E("src/components/VehicleCounter.tsx", "export default function VehicleCounter() {", "export function VehicleCounter() {"),
     E("app/(crew)/loading.tsx", "import VehicleCounter from '../../src/components/VehicleCounter';",
       "import { VehicleCounter } from '../../src/components/VehicleCounter';"),
     B("pnpm tsc --noEmit", "")],
    "Switched to named exports: `export function VehicleCounter()` and a named import in `app/(crew)/loading.tsx`, which "
    "keeps its default export as a route file. Typecheck clean.",
    teaches=["D07"]),
  T("And the labels can't be hard-coded. Every bit of UI text gets a key in both locales/en.json and locales/ga.json; the Irish "
    "is a legal requirement for the crew app. Siobhán does the translations, so put the English in the Irish file with a "
    "[ga] prefix until she gets to it.",
    [E("src/components/VehicleCounter.tsx", "  { key: 'car', label: 'Cars' },\n  { key: 'van', label: 'Vans' },\n  { key: 'hgv', label: 'HGVs' },",
       "  { key: 'car', label: 'deck.cars' },\n  { key: 'van', label: 'deck.vans' },\n  { key: 'hgv', label: 'deck.hgvs' },"),
     E("src/components/VehicleCounter.tsx", "          <Text>{k.label}</Text>", "          <Text>{t(k.label)}</Text>"),
     E("locales/en.json", "  \"deck.title\": \"Car deck\",",
       "  \"deck.title\": \"Car deck\",\n  \"deck.cars\": \"Cars\",\n  \"deck.vans\": \"Vans\",\n  \"deck.hgvs\": \"HGVs\","),
     E("locales/ga.json", "  \"deck.title\": \"Deic na gcarranna\",",
       "  \"deck.title\": \"Deic na gcarranna\",\n  \"deck.cars\": \"[ga] Cars\",\n  \"deck.vans\": \"[ga] Vans\",\n  \"deck.hgvs\": \"[ga] HGVs\",")],
    "Labels are now `deck.cars`, `deck.vans`, `deck.hgvs` rendered through `t()`. Added them to `locales/en.json`, and to "
    "`locales/ga.json` as `[ga] Cars` etc. for Siobhán to translate.",
    teaches=["D05"]),
  T("Run the tests and the typecheck.",
    [B("pnpm test", "\n> deckhand-app@1.4.0 test /Users/mf/src/deckhand-app\n> jest\n\n" + JEST_OK.format(s=15, n=85, t="7.902", x="")),
     B("pnpm tsc --noEmit", "")],
    "All green: 15 suites, 85 tests; `tsc --noEmit` clean."),
  )

# ---------------------------------------------------------------- s07 day 5 sailings
S("sailings", 5,
  T("How many fare rules on staging already have a child fare set? I'd like to know before the review.",
    [B("psql \"$STAGING_DATABASE_URL\" -c \"select count(*) filter (where child_fare_cents is not null), count(*) from fare_rules;\"",
       "psql: error: connection to server at \"pg-staging.internal\" (10.40.2.15), port 5432 failed: Connection timed out\n"
       "\tIs the server running on that host and accepting TCP/IP connections?", True)],
    "I couldn't reach it: `pg-staging.internal` (10.40.2.15) times out on 5432 from this machine. Do you normally go "
    "through a VPN or a tunnel for staging?"),
  T("It isn't reachable directly, you go through the bastion: ssh -f -N -L 6543:pg-staging.internal:5432 bollard, then "
    "psql against localhost:6543. My laptop key was rotated last week, but Kasia Nowak, who does access for everything "
    "(the bastions, Hetzner, the Expo org, GitHub teams), has already put the new one on.",
    [B("ssh -f -N -L 6543:pg-staging.internal:5432 bollard", ""),
     B("psql -h localhost -p 6543 -U sailings_ro sailings_staging -c \"select count(*) filter (where child_fare_cents is not null) as with_child, count(*) as total from fare_rules;\"",
       "ERROR:  column \"child_fare_cents\" does not exist\nLINE 1: select count(*) filter (where child_fare_cents is not null) as...\n"
       "                                     ^", True),
     B("psql -h localhost -p 6543 -U sailings_ro sailings_staging -c \"select count(*) from fare_rules;\"",
       " count \n-------\n   148\n(1 row)")],
    "The tunnel through bollard came up with the new key. The first query failed with `column \"child_fare_cents\" does "
    "not exist`, which is the answer in itself: PR #231 isn't migrated on staging, so none of the 148 fare rules has a "
    "child fare. Once it's deployed the column will be null everywhere, meaning adult price for everyone until revenue "
    "fill it in.",
    teaches=["S02", "U05"]),
  T("That's me for today. Rebase the child-fares branch on main and push it, with --force-with-lease. A plain --force "
    "is never OK.",
    [B("git fetch origin && git rebase origin/main",
       "From github.com:brannock-ferries/sailings\n   a71d04b..e03c5d9  main       -> origin/main\n"
       "Successfully rebased and updated refs/heads/feat/child-fares."),
     B("mix test", MIX_TEST_OK.format(t="4.0", a="1.9", s="2.1", n=221, seed=1190)),
     B("git push --force-with-lease",
       "To github.com:brannock-ferries/sailings.git\n + 2b77e04...c40b9e7 feat/child-fares -> feat/child-fares (forced update)")],
    "Rebased `feat/child-fares` onto origin/main (e03c5d9), suite still green (221 tests), pushed with "
    "`--force-with-lease`. PR #231 is up to date.",
    teaches=["U03"]),
  )

# ---------------------------------------------------------------- s08 day 8 deckhand-app
S("deckhand-app", 8,
  T("Run the app on the Android emulator against my local sailings server, it's up on port 4000.",
    [B("EXPO_PUBLIC_API_URL=http://localhost:4000 npx expo run:android",
       "› Building app...\nBUILD SUCCESSFUL in 1m 12s\n412 actionable tasks: 38 executed, 374 up-to-date\n"
       "› Installing /Users/mf/src/deckhand-app/android/app/build/outputs/apk/debug/app-debug.apk\n› Opening emulator-5554 on Pixel_7_API_34\n"
       "› Opening exp+deckhand://expo-development-client/?url=http%3A%2F%2F10.0.2.2%3A8081 on Pixel_7_API_34\n"
       " LOG  [api] GET http://localhost:4000/api/v2/sailings/today\n ERROR  [api] TypeError: Network request failed"),
     B("adb shell curl -sS -m 5 http://localhost:4000/api/v2/health",
       "curl: (7) Failed to connect to localhost port 4000 after 1 ms: Connection refused", True),
     B("adb shell curl -sS -m 5 http://10.0.2.2:4000/api/v2/health", "{\"status\":\"ok\",\"version\":\"0.9.0-dev\",\"db\":\"ok\"}"),
     W(".env.local", "# Android emulator: the host machine is 10.0.2.2, localhost is the emulator itself\n"
       "EXPO_PUBLIC_API_URL=http://10.0.2.2:4000\n"),
     B("npx expo start --android", "Starting Metro Bundler\n› Opening on Android...\n› Metro waiting on exp+deckhand://...\n"
       " LOG  [api] GET http://10.0.2.2:4000/api/v2/sailings/today 200 (84 ms)")],
    "It's running on the Pixel 7 emulator and loading today's sailings now.\n\nThe first launch built fine but every API "
    "call failed with `TypeError: Network request failed`. Inside the Android emulator `localhost` is the emulator itself "
    "(curl from `adb shell` to localhost:4000 was refused); your machine is reachable as `10.0.2.2`. I put "
    "`EXPO_PUBLIC_API_URL=http://10.0.2.2:4000` in `.env.local` (gitignored), and calls return 200.",
    teaches=["D08"]),
  T("Now iOS. There's no Xcode on this laptop any more; my iOS builds run on my Mac mini, mizzen. ssh mizzen.local, the "
    "repo's cloned in ~/src/deckhand-app there. Build it for the simulator.",
    [B("ssh mizzen.local 'cd ~/src/deckhand-app && git pull -q && pnpm install --frozen-lockfile && npx expo prebuild -p ios --no-install "
       "&& cd ios && pod install && xcodebuild -workspace deckhand.xcworkspace -scheme deckhand -configuration Debug "
       "-sdk iphonesimulator -destination \"platform=iOS Simulator,name=iPhone 15\" -quiet build'",
       "Lockfile is up to date, resolution step is skipped\nDone in 4.1s\n✔ Finished prebuild\n"
       "Analyzing dependencies\nDownloading dependencies\n...\nPod installation complete! There are 87 dependencies from the Podfile "
       "and 86 total pods installed.\n** BUILD SUCCEEDED **")],
    "Built on mizzen: pulled, installed, `expo prebuild -p ios`, `pod install` (86 pods) and a Debug simulator build for "
    "iPhone 15; `** BUILD SUCCEEDED **`. The .app is under `ios/build` on mizzen if you want to boot it there.",
    teaches=["U02"]),
  T("Write a test that scans queued while offline survive an app restart.",
    [R("src/offline/queue.ts",
       "// Offline scans are persisted in expo-sqlite (table pending_scans), deliberately not AsyncStorage:\n"
       "// AsyncStorage lost scans when Android killed the app mid-write. Writes here are transactional.\n"
       "import * as SQLite from 'expo-sqlite';\n\nexport async function openQueue(name = 'deckhand.db') {\n"
       "  const db = await SQLite.openDatabaseAsync(name);\n  await db.execAsync(CREATE_PENDING_SCANS);"),
     W("src/offline/__tests__/queue.restart.test.ts",
       "import { openQueue } from '../queue';\n\njest.mock('expo-sqlite', () => require('../../../test/fakes/sqliteFile'));\n\n"
       "test('pending scans survive closing and reopening the queue', async () => {\n  const q1 = await openQueue('restart.db');\n"
       "  await q1.push({ ticketId: 'T-1001', sailingId: 'CRK-ISG-0730', scannedAt: 1767000000 });\n  await q1.close();\n\n"
       "  const q2 = await openQueue('restart.db');\n  expect(await q2.pending()).toEqual([\n"
       "    expect.objectContaining({ ticketId: 'T-1001' }),\n  ]);\n});\n"),
     B("pnpm jest src/offline", JEST_OK.format(s=3, n=11, t="1.884", x=" matching /src\\/offline/i"))],
    "Added `src/offline/__tests__/queue.restart.test.ts`: it pushes a scan, closes the queue, reopens it from the same "
    "database file and expects the scan in `pending_scans` still. It uses the file-backed expo-sqlite fake in "
    "`test/fakes/sqliteFile`, so it really goes through close/reopen. Passes.",
    needs=["D04"]),
  T("Commit that, ticket BRN-455.",
    [B("git add src/offline/__tests__/queue.restart.test.ts && git commit -m \"Test that queued scans survive a restart\" -m \"Refs: BRN-455\"",
       "[main 1a9f3c6] Test that queued scans survive a restart\n 1 file changed, 17 insertions(+)\n create mode 100644 src/offline/__tests__/queue.restart.test.ts")],
    "Committed as 1a9f3c6 with `Refs: BRN-455` as the trailer. `.env.local` stays out, it is gitignored.",
    needs=["U01"]),
  )

# ---------------------------------------------------------------- s09 day 9 sailings
S("sailings", 9,
  T("Next up, waitlists. When a sailing is full, customers can join a waitlist, and when a checkout hold lapses the first "
    "person waiting is offered the seat. The offer window should match a normal checkout hold. Start with the process that "
    "watches for lapsed holds.",
    [W("lib/sailings/waitlist/offerer.ex",
       "defmodule Sailings.Waitlist.Offerer do\n  @moduledoc \"Offers seats freed by lapsed holds to the first waitlisted customer.\"\n"
       "  use GenServer\n  alias Sailings.{Holds, Waitlist}\n\n  @tick :timer.seconds(20)\n\n"
       "  def start_link(opts), do: GenServer.start_link(__MODULE__, opts, name: __MODULE__)\n\n"
       "  @impl true\n  def init(_), do: {:ok, schedule(%{})}\n\n  @impl true\n  def handle_info(:tick, state) do\n    run()\n    {:noreply, schedule(state)}\n  end\n\n"
       "  def run do\n    ttl = Application.fetch_env!(:sailings, :hold_ttl)\n"
       "    for seat <- Holds.released_since_last_run(), entry = Waitlist.next_for(seat.sailing_id), entry do\n"
       "      Waitlist.offer(entry, seat, expires_in: ttl)\n    end\n  end\n\n  defp schedule(state) do\n"
       "    Process.send_after(self(), :tick, @tick)\n    state\n  end\nend\n"),
     E("lib/sailings/application.ex", "    if Application.get_env(:sailings, :start_sweeper, true), do: [Sailings.Holds.Sweeper], else: []",
       "    [\n      {:start_sweeper, Sailings.Holds.Sweeper},\n      {:start_waitlist_offerer, Sailings.Waitlist.Offerer}\n    ]\n"
       "    |> Enum.filter(fn {flag, _} -> Application.get_env(:sailings, flag, true) end)\n    |> Enum.map(&elem(&1, 1))"),
     E("config/test.exs", "config :sailings, start_sweeper: false", "config :sailings, start_sweeper: false, start_waitlist_offerer: false"),
     B("mix test", MIX_TEST_OK.format(t="4.2", a="2.0", s="2.2", n=221, seed=30551))],
    "Added `Sailings.Waitlist.Offerer`, a GenServer that ticks every 20 s, takes seats released by lapsed holds and offers "
    "each to the next waitlist entry for that sailing. The offer expires after the same `:hold_ttl` as checkout holds, "
    "so 15 minutes today, and follows it if that changes. It is started next to the sweeper and, like the sweeper, kept "
    "out of the test env (`start_waitlist_offerer: false` in `config/test.exs`) so it can't hit the SQL sandbox; tests "
    "will call `Offerer.run/0` directly. `Waitlist.next_for/1` and `offer/3` are stubs until the table exists. Suite green.",
    needs=["S03", "S04"]),
  T("It needs a table: waitlist_entries, and keep the fare they were quoted when they joined so we can honour it.",
    [B("mix ecto.gen.migration create_waitlist_entries", "* creating priv/repo/migrations/20260512101733_create_waitlist_entries.exs"),
     W("priv/repo/migrations/20260512101733_create_waitlist_entries.exs",
       "defmodule Sailings.Repo.Migrations.CreateWaitlistEntries do\n  use Ecto.Migration\n\n  def change do\n"
       "    create table(:waitlist_entries) do\n      add :sailing_id, references(:sailings, on_delete: :delete_all), null: false\n"
       "      add :customer_id, references(:customers), null: false\n      add :passenger_count, :integer, null: false\n"
       "      add :quoted_fare_cents, :integer, null: false\n      add :offered_at, :utc_datetime\n      add :offer_expires_at, :utc_datetime\n\n"
       "      timestamps(type: :utc_datetime)\n    end\n\n    create index(:waitlist_entries, [:sailing_id, :inserted_at])\n"
       "    create unique_index(:waitlist_entries, [:sailing_id, :customer_id])\n  end\nend\n"),
     W("lib/sailings/waitlist/entry.ex",
       "defmodule Sailings.Waitlist.Entry do\n  use Ecto.Schema\n\n  schema \"waitlist_entries\" do\n"
       "    belongs_to :sailing, Sailings.Sailings.Sailing\n    belongs_to :customer, Sailings.Customers.Customer\n"
       "    field :passenger_count, :integer\n    field :quoted_fare_cents, :integer\n    field :offered_at, :utc_datetime\n"
       "    field :offer_expires_at, :utc_datetime\n    timestamps(type: :utc_datetime)\n  end\nend\n"),
     B("mix ecto.migrate",
       "10:18:02.114 [info] == Running 20260512101733 Sailings.Repo.Migrations.CreateWaitlistEntries.change/0 forward\n"
       "10:18:02.115 [info] create table waitlist_entries\n10:18:02.129 [info] create index waitlist_entries_sailing_id_inserted_at_index\n"
       "10:18:02.131 [info] create index waitlist_entries_sailing_id_customer_id_index\n10:18:02.133 [info] == Migrated 20260512101733 in 0.0s")],
    "Migration and schema added: `waitlist_entries` with sailing, customer, passenger count, `quoted_fare_cents` "
    "(integer, not null), offer timestamps, an index on `(sailing_id, inserted_at)` for queue order and a unique "
    "`(sailing_id, customer_id)`. Migrated locally.",
    needs=["S01"]),
  T("Tests for the offerer now. Build the data with ExMachina factories, add a waitlist_entry factory to "
    "test/support/factory.ex. I'd much rather we stopped growing the old Fixtures modules.",
    [E("test/support/factory.ex", "  def sailing_factory do",
       "  def waitlist_entry_factory do\n    %Sailings.Waitlist.Entry{\n      sailing: build(:sailing),\n      customer: build(:customer),\n"
       "      passenger_count: 1,\n      quoted_fare_cents: 2400\n    }\n  end\n\n  def sailing_factory do"),
     W("test/sailings/waitlist/offerer_test.exs",
       "defmodule Sailings.Waitlist.OffererTest do\n  use Sailings.DataCase, async: true\n  import Sailings.Factory\n"
       "  alias Sailings.Waitlist.Offerer\n\n  test \"a lapsed hold is offered to the first person waiting\" do\n"
       "    sailing = insert(:sailing, capacity: 1)\n    first = insert(:waitlist_entry, sailing: sailing)\n    _second = insert(:waitlist_entry, sailing: sailing)\n"
       "    lapse_hold!(sailing)\n\n    Offerer.run()\n\n    assert %{offered_at: %DateTime{}} = Repo.reload!(first)\n  end\nend\n"),
     B("mix test test/sailings/waitlist", MIX_TEST_OK.format(t="0.3", a="0.3", s="0.0", n=4, seed=6620))],
    "Added `waitlist_entry_factory` to `test/support/factory.ex` (builds its sailing and customer, 1 passenger, quoted "
    "fare 2400 cents) and `test/sailings/waitlist/offerer_test.exs` with four cases: first-in-line gets the offer, offer "
    "expiry, no offer when nobody waits, one offer per freed seat. All pass; nothing added to `Fixtures`.",
    teaches=["S08"]),
  T("Check the local database: did the migration actually create the table and the ordering index?",
    [B("psql -h localhost -p 5433 -U postgres sailings_dev -c '\\d waitlist_entries'",
       "                                        Table \"public.waitlist_entries\"\n      Column       |              Type              | Nullable \n"
       "-------------------+--------------------------------+----------\n id                | bigint                         | not null\n"
       " sailing_id        | bigint                         | not null\n customer_id       | bigint                         | not null\n"
       " passenger_count   | integer                        | not null\n quoted_fare_cents | integer                        | not null\n"
       " offered_at        | timestamp(0) without time zone |          \n offer_expires_at  | timestamp(0) without time zone |          \n"
       " inserted_at       | timestamp(0) without time zone | not null\n updated_at        | timestamp(0) without time zone | not null\n"
       "Indexes:\n    \"waitlist_entries_pkey\" PRIMARY KEY, btree (id)\n"
       "    \"waitlist_entries_sailing_id_customer_id_index\" UNIQUE, btree (sailing_id, customer_id)\n"
       "    \"waitlist_entries_sailing_id_inserted_at_index\" btree (sailing_id, inserted_at)")],
    "Yes. `waitlist_entries` exists in `sailings_dev` with all nine columns, and both indexes are there: "
    "`waitlist_entries_sailing_id_inserted_at_index` for ordering and the unique one on `(sailing_id, customer_id)`.",
    needs=["S09"]),
  T("Add the endpoint to join a waitlist, POST /api/v2/sailings/:id/waitlist. Leave it unauthenticated for today, it goes "
    "behind the customer session once Ruth's auth work lands.",
    [E("lib/sailings_web/router.ex", "    post \"/sailings/:id/holds\", HoldController, :create",
       "    post \"/sailings/:id/holds\", HoldController, :create\n    post \"/sailings/:id/waitlist\", WaitlistController, :create"),
     W("lib/sailings_web/controllers/waitlist_controller.ex",
       "defmodule SailingsWeb.WaitlistController do\n  use SailingsWeb, :controller\n  alias Sailings.Waitlist\n\n"
       "  # unauthenticated until the customer session work lands (BRN-451)\n"
       "  def create(conn, %{\"id\" => sailing_id} = params) do\n    case Waitlist.join(sailing_id, params) do\n"
       "      {:ok, entry} -> conn |> put_status(:created) |> json(%{id: entry.id, position: Waitlist.position(entry)})\n"
       "      {:error, :not_full} -> conn |> put_status(:conflict) |> json(%{error: \"sailing_not_full\"})\n"
       "      {:error, %Ecto.Changeset{} = cs} -> conn |> put_status(:unprocessable_entity) |> json(%{errors: errors_on(cs)})\n"
       "    end\n  end\nend\n"),
     W("test/sailings_web/controllers/waitlist_controller_test.exs",
       "defmodule SailingsWeb.WaitlistControllerTest do\n  use SailingsWeb.ConnCase, async: true\n  import Sailings.Factory\n\n"
       "  test \"joins a full sailing\", %{conn: conn} do\n    sailing = insert(:sailing, capacity: 0)\n"
       "    conn = post(conn, ~p\"/api/v2/sailings/#{sailing.id}/waitlist\", %{customer_id: insert(:customer).id, passenger_count: 2})\n"
       "    assert %{\"position\" => 1} = json_response(conn, 201)\n  end\n\n"
       "  test \"409 when the sailing still has seats\", %{conn: conn} do\n    sailing = insert(:sailing, capacity: 10)\n"
       "    conn = post(conn, ~p\"/api/v2/sailings/#{sailing.id}/waitlist\", %{customer_id: insert(:customer).id, passenger_count: 1})\n"
       "    assert json_response(conn, 409)\n  end\nend\n"),
     B("mix test test/sailings_web/controllers/waitlist_controller_test.exs", MIX_TEST_OK.format(t="0.3", a="0.3", s="0.0", n=2, seed=7309))],
    "Added `POST /api/v2/sailings/:id/waitlist` (`WaitlistController.create/2`): 201 with the entry id and queue "
    "position, 409 `sailing_not_full` if seats are still available, 422 with changeset errors otherwise. No auth plug "
    "yet, with a comment pointing at BRN-451 so it isn't forgotten. Two controller tests pass."),
  T("Push the branch and leave it there for today.",
    [B("git checkout -b feat/waitlist && git add -A && git commit -m \"Add waitlist: entries, offerer and join endpoint\" -m \"Refs: BRN-449\"",
       "Switched to a new branch 'feat/waitlist'\n[feat/waitlist 0c7e512] Add waitlist: entries, offerer and join endpoint\n 11 files changed, 318 insertions(+), 4 deletions(-)"),
     B("git push -u origin feat/waitlist",
       "To github.com:brannock-ferries/sailings.git\n * [new branch]      feat/waitlist -> feat/waitlist\nbranch 'feat/waitlist' set up to track 'origin/feat/waitlist'.")],
    "Committed everything as 0c7e512 on `feat/waitlist` and pushed it; no PR opened.",
    needs=["U01"]),
  )


# ---------------------------------------------------------------- s10 day 10 deckhand-app
S("deckhand-app", 10,
  T("Outcome of Monday's session with the deck crew: nothing on the scan screen is allowed to use Alert.alert. They're in "
    "gloves and can't tap OK in the rain. A rejected scan gets the full-screen red ScanResult banner plus the error haptic, "
    "and it clears itself after two seconds. Change the wrong-sailing path to work like that.",
    [R("src/scanner/ScanScreen.tsx",
       "    if (!result.valid && result.reason === 'wrong_sailing') {\n      Alert.alert(t('scan.wrongSailing.title'), t('scan.wrongSailing.body', { sailing: result.sailingCode }), [\n"
       "        { text: 'OK', onPress: resume },\n      ]);\n      return;\n    }", 58),
     E("src/scanner/ScanScreen.tsx",
       "      Alert.alert(t('scan.wrongSailing.title'), t('scan.wrongSailing.body', { sailing: result.sailingCode }), [\n"
       "        { text: 'OK', onPress: resume },\n      ]);\n      return;",
       "      feedback.error();\n      showResult({ tone: 'reject', title: t('scan.wrongSailing.title'),\n"
       "        body: t('scan.wrongSailing.body', { sailing: result.sailingCode }), autoDismissMs: 2000 });\n      return;"),
     E("src/scanner/ScanScreen.tsx", "import { Alert, StyleSheet, View } from 'react-native';", "import { StyleSheet, View } from 'react-native';"),
     B("grep -rn \"Alert.alert\" src/scanner || echo none", "none"),
     B("pnpm jest src/scanner", JEST_OK.format(s=4, n=19, t="2.274", x=" matching /src\\/scanner/i"))],
    "The wrong-sailing path now fires the error haptic and shows the full-screen red `ScanResult` banner (tone `reject`) "
    "that dismisses itself after 2000 ms; scanning resumes on dismiss. `Alert` is no longer imported and there is no "
    "`Alert.alert` left under `src/scanner`. Scanner tests pass, including the updated wrong-sailing case.",
    teaches=["D09"]),
  T("Tickets for tomorrow's sailing should get their own message rather than the generic wrong-sailing one.",
    [E("src/scanner/ScanScreen.tsx", "    if (!result.valid && result.reason === 'wrong_sailing') {",
       "    if (!result.valid && result.reason === 'wrong_sailing' && isTomorrow(result.sailingDate)) {\n"
       "      feedback.error();\n      showResult({ tone: 'reject', title: t('scan.tomorrowSailing.title'),\n"
       "        body: t('scan.tomorrowSailing.body', { time: result.departureTime }), autoDismissMs: 2000 });\n      return;\n    }\n"
       "    if (!result.valid && result.reason === 'wrong_sailing') {"),
     E("locales/en.json", "  \"scan.wrongSailing.title\": \"Wrong sailing\",",
       "  \"scan.wrongSailing.title\": \"Wrong sailing\",\n  \"scan.tomorrowSailing.title\": \"Ticket is for tomorrow\",\n"
       "  \"scan.tomorrowSailing.body\": \"Booked on tomorrow's {{time}} sailing\","),
     E("locales/ga.json", "  \"scan.wrongSailing.title\": \"Seoladh mícheart\",",
       "  \"scan.wrongSailing.title\": \"Seoladh mícheart\",\n  \"scan.tomorrowSailing.title\": \"[ga] Ticket is for tomorrow\",\n"
       "  \"scan.tomorrowSailing.body\": \"[ga] Booked on tomorrow's {{time}} sailing\","),
     B("pnpm jest src/scanner", JEST_OK.format(s=4, n=20, t="2.301", x=" matching /src\\/scanner/i"))],
    "Tomorrow's tickets now get their own banner, \"Ticket is for tomorrow / Booked on tomorrow's 07:30 sailing\", same "
    "red banner and haptic as the other rejects. New keys are in `locales/en.json` and, prefixed `[ga]`, in the Irish file "
    "for Siobhán. Added a test; scanner suites pass.",
    needs=["D05"]),
  T("Get this onto the crew phones today, and tell the pilot lead what changed.",
    [B("pnpm jest && pnpm tsc --noEmit", JEST_OK.format(s=15, n=87, t="8.015", x="")),
     B("eas update --channel preview --message \"Reject banner instead of dialogs; separate message for tomorrow's tickets\" --non-interactive",
       "✔ Exported bundle(s)\n✔ Uploaded 2 app bundles\n✔ Uploaded 0 assets\n✔ Published!\n\nBranch             preview\n"
       "Runtime version    1.4.0\nPlatform           android, ios\nUpdate group ID    c1d5a8e2-7f03-4b9a-9e41-55a0b2c6d3f8\n"
       "Message            Reject banner instead of dialogs; separate message for tomorrow's tickets\n"
       "EAS Dashboard      https://expo.dev/accounts/brannock/projects/deckhand/updates/c1d5a8e2-7f03-4b9a-9e41-55a0b2c6d3f8")],
    "JS-only change, so it went out as an over-the-air update on the `preview` channel (group c1d5a8e2, runtime 1.4.0); "
    "phones get it on their next cold start, no new build needed. Note for Tadhg:\n\n> Update on the pilot phones after "
    "a restart: rejected tickets now show a big red banner with a buzz that clears by itself, no OK button, and tickets "
    "for tomorrow's sailing say so. Tell me if two seconds is too short.",
    needs=["D06", "D03"]),
  T("Commit and open the PR, ticket BRN-461. The description needs a 'How to test' section with exact steps someone else "
    "could follow. I want one on every PR I open, whichever repo it's in.",
    [B("git checkout -b feat/reject-banner && git add -A && git commit -m \"Replace scan dialogs with the reject banner\" "
       "-m \"Crew can't dismiss dialogs with gloves on. Adds a tomorrow's-sailing message.\" -m \"Refs: BRN-461\"",
       "Switched to a new branch 'feat/reject-banner'\n[feat/reject-banner 7e21b90] Replace scan dialogs with the reject banner\n 6 files changed, 58 insertions(+), 14 deletions(-)"),
     B("git push -u origin feat/reject-banner", "To github.com:brannock-ferries/deckhand-app.git\n * [new branch]      feat/reject-banner -> feat/reject-banner"),
     B("gh pr create --title \"Replace scan dialogs with the reject banner\" --body-file - <<'EOF'\n"
       "Rejected scans (wrong sailing, tomorrow's sailing) show the full-screen red ScanResult banner with the error haptic "
       "and dismiss after 2 s, instead of a dialog.\n\n## How to test\n1. `pnpm install && npx expo run:android` against staging.\n"
       "2. Log in with crew PIN 4711 and open the 07:30 CRK-ISG sailing.\n3. Scan `test/fixtures/tickets/wrong-sailing.png`: red banner "
       "\"Wrong sailing\", buzz, gone after 2 s, no OK button.\n4. Scan `tomorrow.png`: banner \"Ticket is for tomorrow\".\n"
       "5. Scan `valid.png`: green tick and success buzz as before.\nEOF",
       "\nCreating pull request for feat/reject-banner into main in brannock-ferries/deckhand-app\n\n"
       "https://github.com/brannock-ferries/deckhand-app/pull/88")],
    "PR #88: https://github.com/brannock-ferries/deckhand-app/pull/88. Commit 7e21b90 carries `Refs: BRN-461`; the "
    "description has a How to test section with five steps using the ticket images in `test/fixtures/tickets`.",
    teaches=["U06"], needs=["U01"]),
  )

# ---------------------------------------------------------------- s11 day 11 sailings
S("sailings", 11,
  T("The harbour master wants an arrival-time column in the manifest CSV.",
    [E("lib/sailings/manifest/export.ex",
       "      sailing.departs_at |> DateTime.shift_zone!(\"Europe/Dublin\") |> Calendar.strftime(\"%H:%M\"),",
       "      local_time(sailing.departs_at),\n      local_time(sailing.arrives_at),"),
     E("lib/sailings/manifest/export.ex", "  defp row(%Sailing{} = sailing, %Booking{} = booking) do",
       "  defp local_time(%DateTime{} = utc),\n    do: utc |> DateTime.shift_zone!(\"Europe/Dublin\") |> Calendar.strftime(\"%H:%M\")\n\n"
       "  defp row(%Sailing{} = sailing, %Booking{} = booking) do"),
     E("lib/sailings/manifest/export.ex", "  @header [\"route\", \"departs\", \"lead passenger\", \"passengers\"]",
       "  @header [\"route\", \"departs\", \"arrives\", \"lead passenger\", \"passengers\"]"),
     E("test/sailings/manifest/export_test.exs", "    [[_, time | _]] = Export.rows(sailing)\n    assert time == \"07:30\"",
       "    [[_, departs, arrives | _]] = Export.rows(sailing)\n    assert {departs, arrives} == {\"07:30\", \"08:15\"}"),
     B("mix test test/sailings/manifest", MIX_TEST_OK.format(t="0.2", a="0.2", s="0.0", n=6, seed=2093))],
    "Added an `arrives` column after `departs`. Both go through a small `local_time/1` helper (DateTime.shift_zone! to "
    "Europe/Dublin plus Calendar.strftime), so no new Timex. Test updated: 06:30Z to 07:15Z shows as 07:30 and 08:15.",
    needs=["S07"]),
  T("Put it on staging. That's kamal deploy -d staging and then mix sailings.smoke --env staging, which books and cancels a "
    "seat on the test sailing. It doesn't count as deployed until the smoke run is green.",
    [B("kamal deploy -d staging",
       "  INFO [5e1f0a2c] Running docker login ghcr.io -u *** -p *** on 10.40.1.21\n  INFO [5e1f0a2c] Finished in 0.812 seconds with exit status 0 (successful).\n"
       "Build and push app image...\n  INFO [b03a7d11] Running docker buildx build --push --platform linux/amd64 --builder kamal-local-docker-container "
       "-t ghcr.io/brannock-ferries/sailings:4e7d0c1 -t ghcr.io/brannock-ferries/sailings:latest-staging ... as mf@localhost\n"
       "  INFO [b03a7d11] Finished in 71.402 seconds with exit status 0 (successful).\n...\n"
       "  INFO [9c2e44f0] Running docker run --detach --restart unless-stopped --name sailings-web-staging-4e7d0c1 ... on 10.40.1.21\n"
       "  INFO Container is healthy!\n...\nReleasing the deploy lock...\n  Finished all in 94.6 seconds"),
     B("mix sailings.smoke --env staging",
       "smoke: target https://api.staging.brannockferries.ie\nsmoke: GET /api/v2/health ok (41ms)\n"
       "smoke: hold 1 seat on TEST-0730 ok\nsmoke: book ok (ref SMK-7731)\nsmoke: cancel SMK-7731 ok\nsmoke: 4/4 passed")],
    "Deployed 4e7d0c1 to staging (94.6 s, container healthy) and the smoke run passed 4/4: health, hold, book (SMK-7731) "
    "and cancel on TEST-0730. So it's properly on staging.",
    teaches=["S06"]),
  T("Open a PR for the arrival column, ticket BRN-467.",
    [B("git checkout -b feat/manifest-arrivals && git add -A && git commit -m \"Add arrival time to the harbour manifest\" -m \"Refs: BRN-467\"",
       "Switched to a new branch 'feat/manifest-arrivals'\n[feat/manifest-arrivals 61c0b3e] Add arrival time to the harbour manifest\n 2 files changed, 11 insertions(+), 4 deletions(-)"),
     B("git push -u origin feat/manifest-arrivals", "To github.com:brannock-ferries/sailings.git\n * [new branch]      feat/manifest-arrivals -> feat/manifest-arrivals"),
     B("gh pr create --title \"Add arrival time to the harbour manifest\" --body-file - <<'EOF'\n"
       "Adds an `arrives` column (Irish local time) to the manifest CSV for the harbour master.\n\n## How to test\n"
       "1. `mix test test/sailings/manifest`.\n2. On staging (already deployed, 4e7d0c1): Admin → Manifests → 07:30 CRK-ISG → Download CSV.\n"
       "3. The `arrives` column reads 08:15, one hour ahead of the UTC value in the DB.\nEOF",
       "\nCreating pull request for feat/manifest-arrivals into main in brannock-ferries/sailings\n\nhttps://github.com/brannock-ferries/sailings/pull/240")],
    "PR #240 (https://github.com/brannock-ferries/sailings/pull/240), commit trailer `Refs: BRN-467`, with a three-step "
    "How to test that uses the staging deploy from a minute ago.",
    needs=["U06", "U01"]),
  )

# ---------------------------------------------------------------- s12 day 12 deckhand-app
S("deckhand-app", 12,
  T("Tadhg's phone died mid-crossing yesterday with about 400 scans queued, and profiling pinned the drain on the SQLite "
    "writes. Ruth and I agreed this morning: the offline queue moves to react-native-mmkv and expo-sqlite comes out. Do the "
    "swap, and on first launch move whatever's left in the old table into the new store.",
    [B("npx expo install react-native-mmkv",
       "› Installing 1 other package using pnpm\n> pnpm add react-native-mmkv@^2.12.2\nPackages: +1\n\ndependencies:\n+ react-native-mmkv 2.12.2\n\nDone in 2.8s"),
     E("jest.config.js", "expo-camera|expo-haptics|expo-router|expo-modules-core|expo-sqlite|@tanstack",
       "expo-camera|expo-haptics|expo-router|expo-modules-core|expo-sqlite|react-native-mmkv|@tanstack"),
     W("src/offline/queue.ts",
       "// Offline scans live in react-native-mmkv (synchronous, no per-write transaction cost on the pilot phones).\n"
       "import { MMKV } from 'react-native-mmkv';\n\nconst store = new MMKV({ id: 'offline-queue' });\nconst KEY = 'pending_scans';\n\n"
       "export function pending(): Scan[] {\n  return JSON.parse(store.getString(KEY) ?? '[]');\n}\n\n"
       "export function push(scan: Scan) {\n  store.set(KEY, JSON.stringify([...pending(), scan]));\n}\n\n"
       "export function ack(ids: string[]) {\n  store.set(KEY, JSON.stringify(pending().filter((s) => !ids.includes(s.id))));\n}\n"),
     W("src/offline/migrateLegacyQueue.ts",
       "import * as SQLite from 'expo-sqlite';\nimport { push } from './queue';\n\n"
       "export async function migrateLegacyQueue() {\n  const db = await SQLite.openDatabaseAsync('deckhand.db');\n"
       "  const rows = await db.getAllAsync<Scan>('select * from pending_scans order by scanned_at');\n  rows.forEach(push);\n"
       "  await db.closeAsync();\n  await SQLite.deleteDatabaseAsync('deckhand.db');\n}\n"),
     E("app/_layout.tsx", "  useEffect(() => {\n    startSync();", "  useEffect(() => {\n    migrateLegacyQueue().finally(startSync);"),
     W("__mocks__/react-native-mmkv.ts", "export { MMKV } from 'react-native-mmkv/lib/commonjs/createMMKV.mock';\n"),
     B("pnpm jest src/offline", JEST_OK.format(s=4, n=13, t="1.932", x=" matching /src\\/offline/i"))],
    "The queue is now on react-native-mmkv: `src/offline/queue.ts` keeps `pending_scans` as one JSON value in an "
    "`offline-queue` MMKV instance, and `migrateLegacyQueue()` runs from `app/_layout.tsx` before sync starts, copies any "
    "rows left in the old table in scan order and deletes `deckhand.db`. expo-sqlite stays installed only for that "
    "migration; we can drop it once every pilot phone has launched this version. I added react-native-mmkv to the Jest "
    "allowlist up front and a manual mock; offline tests pass (13), including the restart test.",
    teaches=["D10"], needs=["D01"]),
  T("Get it out to the testers.",
    [B("eas build --profile preview --platform android --non-interactive --no-wait",
       "You don't have the required permissions to perform this operation.\n\nThis can sometimes happen if you are logged in as "
       "incorrect user.\nRun eas whoami to check the username you are logged in as.\nRun eas login to change the account.\n\n"
       "Original error message: Entity not authorized: AppEntity[7d0e2b4c-...] (viewer = RegularUserViewerContext[2f9a...], "
       "action = READ, ruleIndex = -1)", True),
     B("eas whoami", "mfahy\n\nAccounts:\n• mfahy (Role: Owner)")],
    "react-native-mmkv is a native module, so this needs a new preview build rather than an OTA, but EAS refused: "
    "you're logged in as `mfahy` and that account no longer lists the `brannock` organisation, so it can't read the "
    "deckhand project. That's an org membership problem, not something I can fix from here; Kasia would need to re-add "
    "you to the Expo org.",
    needs=["U05"]),
  T("She's put me back in the org. Try again, and write the note for the pilot lead.",
    [B("eas whoami", "mfahy\n\nAccounts:\n• mfahy (Role: Owner)\n• brannock (Role: Developer)"),
     B("eas build --profile preview --platform android --non-interactive --no-wait",
       "✔ Using remote Android credentials (Expo server)\n✔ Compressed project files 1s (6.3 MB)\n✔ Uploaded to EAS 2s\n\n"
       "Build details: https://expo.dev/accounts/brannock/projects/deckhand/builds/b82d09f1-6c3e-4a57-8e2b-91f4d0a6c7e3\n✔ Build queued")],
    "Membership is back (brannock, Developer) and the Android preview build is queued: "
    "https://expo.dev/accounts/brannock/projects/deckhand/builds/b82d09f1-6c3e-4a57-8e2b-91f4d0a6c7e3. Runtime version "
    "changes with the new native module, so OTA updates for the old build stop here. Note for Tadhg:\n\n> New pilot "
    "build to install (not just a restart this time): the offline queue has been rebuilt to be much lighter on the "
    "battery. Anything still queued on your phone is carried over on first launch, so open it once on Wi-Fi before the "
    "next crossing.",
    needs=["D06", "D03"]),
  T("The purser's iPad needs this build too.",
    [B("ssh mizzen.local 'cd ~/src/deckhand-app && git pull -q && pnpm install --frozen-lockfile && cd ios && pod install "
       "&& cd .. && eas build --local --platform ios --profile preview --non-interactive --output build/deckhand-preview.ipa'",
       "Lockfile is up to date, resolution step is skipped\nInstalling MMKV (1.3.9)\nInstalling react-native-mmkv (2.12.2)\n"
       "Pod installation complete! There are 88 dependencies from the Podfile and 88 total pods installed.\n"
       "[PREPARE_CREDENTIALS] Using ad hoc provisioning profile for ie.brannockferries.deckhand\n...\n"
       "[RUN_FASTLANE] ** ARCHIVE SUCCEEDED **\n[RUN_FASTLANE] Successfully exported and signed the ipa file\n"
       "Build successful\nYou can find the build artifacts in /Users/mf/src/deckhand-app/build/deckhand-preview.ipa")],
    "Built the iOS preview locally on mizzen (new MMKV pods included, ad hoc profile): "
    "`~/src/deckhand-app/build/deckhand-preview.ipa` on that machine. The purser's iPad is in the ad hoc profile, so it "
    "can be installed from there with Apple Configurator or `eas build:run`.",
    needs=["U02"]),
  )

# ---------------------------------------------------------------- s13 day 12 sailings
S("sailings", 12,
  T("Straight out of the ops meeting: for the summer timetable, seats in checkout are only held for 7 minutes. Abandoned "
    "carts were blocking the evening sailings. Change the config, and the line in the checkout email that tells people how "
    "long they have.",
    [E("config/config.exs", "config :sailings, :hold_ttl, :timer.minutes(15)", "config :sailings, :hold_ttl, :timer.minutes(7)"),
     R("lib/sailings/notifications/checkout_email.ex",
       "  def hold_notice(assigns) do\n    ~H\"\"\"\n    <p>We'll hold your seats for 15 minutes while you complete payment.</p>\n    \"\"\"\n  end", 22),
     E("lib/sailings/notifications/checkout_email.ex",
       "    <p>We'll hold your seats for 15 minutes while you complete payment.</p>",
       "    <p>We'll hold your seats for <%= @hold_minutes %> minutes while you complete payment.</p>"),
     E("lib/sailings/notifications/checkout_email.ex", "    |> assign(:booking, booking)",
       "    |> assign(:booking, booking)\n    |> assign(:hold_minutes, div(Application.fetch_env!(:sailings, :hold_ttl), 60_000))")],
    "Hold TTL is now `:timer.minutes(7)` in `config/config.exs`, and the checkout email takes the number from the same "
    "config instead of hard-coding it, so it reads \"for 7 minutes\" and can't drift again. Waitlist offers follow the "
    "same setting.",
    teaches=["S10"]),
  T("Run the suite.",
    [B("mix test",
       "...........\n\n  1) test an offer expires after the hold window (Sailings.Waitlist.OffererTest)\n"
       "     test/sailings/waitlist/offerer_test.exs:54\n     Assertion with == failed\n"
       "     code:  assert offer.offer_expires_at == DateTime.add(now, 900, :second)\n"
       "     left:  ~U[2026-05-15 13:42:00Z]\n     right: ~U[2026-05-15 13:50:00Z]\n     stacktrace:\n"
       "       test/sailings/waitlist/offerer_test.exs:61: (test)\n\n"
       "Finished in 4.3 seconds (2.0s async, 2.3s sync)\n229 tests, 1 failure\n\nRandomized with seed 12870", True),
     E("test/sailings/waitlist/offerer_test.exs", "    assert offer.offer_expires_at == DateTime.add(now, 900, :second)",
       "    ttl = Application.fetch_env!(:sailings, :hold_ttl)\n    assert offer.offer_expires_at == DateTime.add(now, ttl, :millisecond)"),
     B("mix test", MIX_TEST_OK.format(t="4.2", a="2.0", s="2.2", n=229, seed=33104))],
    "One failure, in a test I wrote last week: the offer-expiry test had the old window hard-coded as 900 seconds. It now "
    "reads `:hold_ttl` like the holds test does. 229 tests, 0 failures."),
  T("Rebase on main and push.",
    [B("git fetch origin && git rebase origin/main",
       "From github.com:brannock-ferries/sailings\n   61c0b3e..f2a9d47  main       -> origin/main\nSuccessfully rebased and updated refs/heads/feat/waitlist."),
     B("git push --force-with-lease",
       "To github.com:brannock-ferries/sailings.git\n + 0c7e512...9a4d2b8 feat/waitlist -> feat/waitlist (forced update)")],
    "Rebased `feat/waitlist` onto origin/main (f2a9d47, which has the manifest arrivals) without conflicts and pushed with "
    "`--force-with-lease`.",
    needs=["U03"]),
  T("And get it onto staging.",
    [B("kamal deploy -d staging",
       "  INFO [77ab0e19] Running docker login ghcr.io -u *** -p *** on 10.40.1.21\nBuild and push app image...\n"
       "  INFO [3f6c02d8] Finished in 64.118 seconds with exit status 0 (successful).\n...\n  INFO Container is healthy!\n...\n  Finished all in 86.9 seconds"),
     B("mix sailings.smoke --env staging",
       "smoke: target https://api.staging.brannockferries.ie\nsmoke: GET /api/v2/health ok (39ms)\nsmoke: hold 1 seat on TEST-0730 ok\n"
       "smoke: book ok (ref SMK-7802)\nsmoke: cancel SMK-7802 ok\nsmoke: 4/4 passed")],
    "On staging (9a4d2b8, 86.9 s) and the smoke run is green, 4/4. The shorter hold and the waitlist offerer are live "
    "there.",
    needs=["S06"]),
  )

# ---------------------------------------------------------------- s14 day 15 deckhand-app
S("deckhand-app", 15,
  T("The pursers want a screen showing how many scans are still waiting to sync.",
    [W("src/components/QueueBadge.tsx",
       "import { Text, View } from 'react-native';\nimport { useMMKVString } from 'react-native-mmkv';\nimport { t } from '../i18n';\n\n"
       "export function QueueBadge() {\n  const [raw] = useMMKVString('pending_scans', offlineStore);\n  const count = raw ? JSON.parse(raw).length : 0;\n"
       "  return (\n    <View style={styles.badge}>\n      <Text style={styles.count}>{count}</Text>\n      <Text>{t('sync.waiting', { count })}</Text>\n    </View>\n  );\n}\n"),
     W("app/(crew)/sync-status.tsx",
       "import { QueueBadge } from '../../src/components/QueueBadge';\nimport { LastSync } from '../../src/components/LastSync';\n\n"
       "export default function SyncStatusScreen() {\n  return (\n    <Screen title=\"sync.title\">\n      <QueueBadge />\n      <LastSync />\n    </Screen>\n  );\n}\n"),
     E("locales/en.json", "  \"deck.title\": \"Car deck\",",
       "  \"deck.title\": \"Car deck\",\n  \"sync.title\": \"Sync status\",\n  \"sync.waiting\": \"{{count}} scans waiting to sync\","),
     E("locales/ga.json", "  \"deck.title\": \"Deic na gcarranna\",",
       "  \"deck.title\": \"Deic na gcarranna\",\n  \"sync.title\": \"[ga] Sync status\",\n  \"sync.waiting\": \"[ga] {{count}} scans waiting to sync\","),
     B("pnpm tsc --noEmit", "")],
    "Added the route `app/(crew)/sync-status.tsx` (default export, as routes need) and a named `QueueBadge` component that "
    "subscribes to the `pending_scans` key in the MMKV offline store, so the count updates live as scans queue and "
    "drain. Strings are in both locale files, the Irish ones `[ga]`-prefixed. Typecheck clean.",
    needs=["D07", "D05", "D10"]),
  T("Try it on the emulator against my local server.",
    [B("EXPO_PUBLIC_API_URL=http://10.0.2.2:4000 npx expo run:android",
       "› Building app...\nBUILD SUCCESSFUL in 1m 31s\n› Installing .../app-debug.apk\n› Opening emulator-5554 on Pixel_7_API_34\n"
       " LOG  [api] GET http://10.0.2.2:4000/api/v2/sailings/today 200 (77 ms)\n LOG  [sync] drained 3 scans (POST /api/v2/scans 201)")],
    "Running on the emulator against your local server (via 10.0.2.2:4000; a native rebuild was needed for MMKV). The "
    "sync-status screen showed 3 waiting, then 0 once the sync posted them (201).",
    needs=["D08"]),
  T("The refresh interval on that screen should come from remote config eventually. Leave a marker for it, ticket BRN-472, "
    "and move on.",
    [E("src/components/LastSync.tsx", "const REFRESH_MS = 15_000;",
       "// TODO(mf): BRN-472 read the refresh interval from remote config instead of hard-coding it\nconst REFRESH_MS = 15_000;")],
    "Added `// TODO(mf): BRN-472 read the refresh interval from remote config ...` above `REFRESH_MS` in "
    "`src/components/LastSync.tsx`.",
    needs=["U04"]),
  T("Commit and open the PR.",
    [B("git checkout -b feat/sync-status && git add -A && git commit -m \"Add sync status screen for pursers\" -m \"Refs: BRN-472\"",
       "Switched to a new branch 'feat/sync-status'\n[feat/sync-status 3d84e6a] Add sync status screen for pursers\n 5 files changed, 74 insertions(+)"),
     B("git push -u origin feat/sync-status", "To github.com:brannock-ferries/deckhand-app.git\n * [new branch]      feat/sync-status -> feat/sync-status"),
     B("gh pr create --title \"Add sync status screen for pursers\" --body-file - <<'EOF'\n"
       "Pursers can see how many scans are queued offline and when the last sync ran.\n\n## How to test\n"
       "1. `npx expo run:android` with `EXPO_PUBLIC_API_URL=http://10.0.2.2:4000` and sailings running locally.\n"
       "2. Turn on airplane mode in the emulator and scan three tickets from `test/fixtures/tickets`.\n"
       "3. Open Menu → Sync status: it shows 3 waiting.\n4. Turn airplane mode off: within 15 s it drops to 0 and Last sync updates.\nEOF",
       "\nCreating pull request for feat/sync-status into main in brannock-ferries/deckhand-app\n\nhttps://github.com/brannock-ferries/deckhand-app/pull/91")],
    "PR #91 is up (https://github.com/brannock-ferries/deckhand-app/pull/91); commit 3d84e6a with `Refs: BRN-472`, and "
    "the description has a How to test using airplane mode on the emulator.",
    needs=["U06", "U01"]),
  )


# ---------------------------------------------------------------- s15 day 16 sailings
S("sailings", 16,
  T("Bump us to Elixir 1.17.3 on OTP 27.",
    [R(".tool-versions", "erlang 26.2.5\nelixir 1.16.3-otp-26"),
     B("mise use erlang@27.1.2 elixir@1.17.3-otp-27",
       "mise erlang@27.1.2 ✓ installed\nmise elixir@1.17.3-otp-27 ✓ installed\nmise ~/src/sailings/.tool-versions tools: erlang@27.1.2, elixir@1.17.3-otp-27"),
     E("Dockerfile", "ARG ELIXIR_VERSION=1.16.3\nARG OTP_VERSION=26.2.5", "ARG ELIXIR_VERSION=1.17.3\nARG OTP_VERSION=27.1.2"),
     E(".github/workflows/ci.yml", "          otp-version: '26.2.5'\n          elixir-version: '1.16.3'",
       "          otp-version: '27.1.2'\n          elixir-version: '1.17.3'"),
     B("mix deps.get && mix compile --force --warnings-as-errors",
       "All dependencies are up to date\n==> sailings\nCompiling 104 files (.ex)\n"
       "    warning: Logger.warn/1 is deprecated. Use Logger.warning/2 instead\n    │\n 33 │     Logger.warn(\"stripe webhook: unknown event #{type}\")\n"
       "    │            ~\n    │\n    └─ lib/sailings/payments/webhook.ex:33:12: Sailings.Payments.Webhook.handle_event/1\n\n"
       "Compilation failed due to warnings while using the --warnings-as-errors option", True),
     E("lib/sailings/payments/webhook.ex", "    Logger.warn(\"stripe webhook: unknown event #{type}\")",
       "    Logger.warning(\"stripe webhook: unknown event #{type}\")"),
     B("mix compile --force --warnings-as-errors && mix test",
       "Compiling 104 files (.ex)\nGenerated sailings app\n" + MIX_TEST_OK.format(t="3.8", a="1.8", s="2.0", n=229, seed=7051))],
    "On Elixir 1.17.3 / OTP 27.1.2. `mise use` updated `.tool-versions` (and installed both locally); the Dockerfile "
    "build args and the CI `setup-beam` versions match. The strict compile tripped on one deprecation, `Logger.warn` in "
    "`payments/webhook.ex`, now `Logger.warning`. Compiles without warnings; 229 tests pass.",
    needs=["U07"]),
  T("Island residents get 10% off child fares from June. Implement it and put it up for review, ticket BRN-480.",
    [B("mix ecto.gen.migration add_resident_flag_to_customers", "* creating priv/repo/migrations/20260519093055_add_resident_flag_to_customers.exs"),
     W("priv/repo/migrations/20260519093055_add_resident_flag_to_customers.exs",
       "defmodule Sailings.Repo.Migrations.AddResidentFlagToCustomers do\n  use Ecto.Migration\n\n  def change do\n"
       "    alter table(:customers) do\n      add :island_resident, :boolean, null: false, default: false\n    end\n  end\nend\n"),
     E("lib/sailings/fares.ex",
       "  def price_for(%FareRule{} = rule, :child), do: rule.child_fare_cents",
       "  def price_for(%FareRule{} = rule, :child), do: rule.child_fare_cents\n\n"
       "  # 10% off, rounded half up to whole cents; integer arithmetic only\n"
       "  def price_for(%FareRule{} = rule, :child, %Customer{island_resident: true}),\n"
       "    do: div(price_for(rule, :child) * 90 + 50, 100)\n\n  def price_for(rule, kind, _customer), do: price_for(rule, kind)"),
     E("test/sailings/fares_test.exs", "  describe \"child fares\" do",
       "  describe \"resident child fares\" do\n    test \"10% off, rounded to the cent\" do\n"
       "      rule = insert(:fare_rule, child_fare_cents: 1295)\n      assert Fares.price_for(rule, :child, build(:customer, island_resident: true)) == 1166\n"
       "    end\n  end\n\n  describe \"child fares\" do"),
     B("mix ecto.migrate && mix test test/sailings/fares_test.exs",
       "09:31:22.640 [info] == Running 20260519093055 Sailings.Repo.Migrations.AddResidentFlagToCustomers.change/0 forward\n"
       "09:31:22.652 [info] == Migrated 20260519093055 in 0.0s\n" + MIX_TEST_OK.format(t="0.4", a="0.4", s="0.0", n=26, seed=4418)),
     B("git checkout -b feat/resident-child-discount && git add -A && git commit -m \"Discount child fares for island residents\" -m \"Refs: BRN-480\" && git push -u origin feat/resident-child-discount",
       "Switched to a new branch 'feat/resident-child-discount'\n[feat/resident-child-discount 5be1c20] Discount child fares for island residents\n 4 files changed, 31 insertions(+), 1 deletion(-)\n"
       "To github.com:brannock-ferries/sailings.git\n * [new branch]      feat/resident-child-discount -> feat/resident-child-discount"),
     B("gh pr create --title \"Discount child fares for island residents\" --reviewer eilidh-macrae --body-file - <<'EOF'\n"
       "Island residents pay 90% of the child fare from June (rounded half up to the cent).\n\n## How to test\n"
       "1. `mix ecto.migrate && mix test test/sailings/fares_test.exs`.\n2. In `iex -S mix`, set `island_resident: true` on a test customer.\n"
       "3. Price a child on CRK-ISG (child fare 1295): expect 1166; a non-resident still gets 1295.\nEOF",
       "\nCreating pull request for feat/resident-child-discount into main in brannock-ferries/sailings\n\nhttps://github.com/brannock-ferries/sailings/pull/246")],
    "PR #246 (https://github.com/brannock-ferries/sailings/pull/246), Eilidh MacRae requested as reviewer since it changes "
    "fare rules. Adds `customers.island_resident` (boolean, default false) and a 3-arity `Fares.price_for/3` that takes "
    "90% of the child fare in integer cents, rounding half up (1295 becomes 1166). Commit trailer `Refs: BRN-480`; the "
    "description has How to test steps. The June start date isn't enforced yet; tell me if it should be a dated rule "
    "rather than a deploy date.",
    needs=["S01", "S05", "U06"]),
  T("Before that merges: how many customer accounts on staging are already flagged as island residents in the old CRM "
    "import column?",
    [B("ssh -f -N -L 6543:pg-staging.internal:5432 bollard", ""),
     B("psql -h localhost -p 6543 -U sailings_ro sailings_staging -c \"select count(*) filter (where crm_tags ? 'island_resident') as flagged, count(*) as total from customers;\"",
       " flagged | total \n---------+-------\n     212 |  9841\n(1 row)")],
    "212 of 9,841 staging customers carry the `island_resident` tag in `crm_tags`. The new boolean defaults to false, so "
    "they'd need a backfill from that tag; I can add it as a data migration in the PR.",
    needs=["S02"]),
  T("Deploy to staging, then check that a hold on a test booking really lapses when it should.",
    [B("kamal deploy -d staging",
       "  INFO [0d4e61a3] Running docker login ghcr.io -u *** -p *** on 10.40.1.21\nBuild and push app image...\n"
       "  INFO [a7c5e290] Finished in 88.305 seconds with exit status 0 (successful).\n...\n  INFO Container is healthy!\n...\n  Finished all in 109.2 seconds"),
     B("mix sailings.smoke --env staging",
       "smoke: target https://api.staging.brannockferries.ie\nsmoke: GET /api/v2/health ok (44ms)\nsmoke: hold 1 seat on TEST-0730 ok\n"
       "smoke: book ok (ref SMK-8120)\nsmoke: cancel SMK-8120 ok\nsmoke: 4/4 passed"),
     B("kamal app exec -d staging --reuse 'bin/sailings rpc \"Application.fetch_env!(:sailings, :hold_ttl) |> IO.inspect()\"'",
       "  INFO [c2b17f04] Running docker exec sailings-web-staging-5be1c20 bin/sailings rpc ... on 10.40.1.21\n420000"),
     B("curl -sS -X POST https://api.staging.brannockferries.ie/api/v2/holds -H 'content-type: application/json' "
       "-d '{\"sailing\":\"TEST-0730\",\"seats\":1}'",
       "{\"hold_id\":\"hld_01HY7K2ZP4\",\"expires_at\":\"2026-05-19T10:21:40Z\",\"created_at\":\"2026-05-19T10:14:40Z\"}")],
    "Staging runs 5be1c20 and the smoke run is green (4/4). The running release has `hold_ttl` = 420000 ms, i.e. "
    "7 minutes, and a fresh hold on TEST-0730 was created at 10:14:40Z with `expires_at` 10:21:40Z, exactly 7 minutes "
    "later. I'll leave that hold to lapse on its own.",
    needs=["S06", "S10"]),
  )

# ---------------------------------------------------------------- s16 day 17 deckhand-app
S("deckhand-app", 17,
  T("My Mac mini has gone back to IT. The Mac Studio on my desk is gannet now, gannet.local, with Xcode 16 and the "
    "simulators on it; the repo's cloned under ~/code this time. Do a simulator build of main there so we know it's set up.",
    [B("ssh gannet.local 'xcodebuild -version && cd ~/code/deckhand-app && git pull -q && pnpm install --frozen-lockfile "
       "&& npx expo prebuild -p ios --no-install && cd ios && pod install && xcodebuild -workspace deckhand.xcworkspace "
       "-scheme deckhand -configuration Debug -sdk iphonesimulator -destination \"platform=iOS Simulator,name=iPhone 16\" -quiet build'",
       "Xcode 16.0\nBuild version 16A242d\nLockfile is up to date, resolution step is skipped\nDone in 38.2s\n✔ Finished prebuild\n"
       "Analyzing dependencies\n...\nPod installation complete! There are 88 dependencies from the Podfile and 88 total pods installed.\n"
       "** BUILD SUCCEEDED **")],
    "gannet is set up: Xcode 16.0 (16A242d), fresh install and prebuild in `~/code/deckhand-app`, 88 pods, and a Debug "
    "simulator build for iPhone 16 succeeded.",
    teaches=["U08"]),
  T("Tadhg says tickets from a sailing that's already gone only show small grey text under the viewfinder, and half the "
    "crew miss it. Make it impossible to miss.",
    [R("src/scanner/ScanScreen.tsx",
       "    if (!result.valid && result.reason === 'departed') {\n      setHint(t('scan.departed.hint'));\n      return;\n    }", 72),
     E("src/scanner/ScanScreen.tsx",
       "    if (!result.valid && result.reason === 'departed') {\n      setHint(t('scan.departed.hint'));\n      return;\n    }",
       "    if (!result.valid && result.reason === 'departed') {\n      feedback.error();\n"
       "      showResult({ tone: 'reject', title: t('scan.departed.title'), body: t('scan.departed.hint'), autoDismissMs: 2000 });\n      return;\n    }"),
     E("locales/en.json", "  \"scan.departed.hint\": \"This sailing has already departed\",",
       "  \"scan.departed.title\": \"Sailing departed\",\n  \"scan.departed.hint\": \"This sailing has already departed\","),
     E("locales/ga.json", "  \"scan.departed.hint\": \"[ga] This sailing has already departed\",",
       "  \"scan.departed.title\": \"[ga] Sailing departed\",\n  \"scan.departed.hint\": \"[ga] This sailing has already departed\","),
     B("pnpm jest src/scanner", JEST_OK.format(s=4, n=21, t="2.388", x=" matching /src\\/scanner/i"))],
    "Departed-sailing tickets now get the same treatment as the other rejects: error haptic plus the full-screen red "
    "ScanResult banner (\"Sailing departed\"), auto-dismissed after 2 s, no dialog to tap. New title key in both locale "
    "files. Scanner tests pass.",
    needs=["D09"]),
  T("And there's a crash report from the pilot: the app crashes on launch when the old-queue migration runs a second time.",
    [R("src/offline/migrateLegacyQueue.ts",
       "export async function migrateLegacyQueue() {\n  const db = await SQLite.openDatabaseAsync('deckhand.db');\n"
       "  const rows = await db.getAllAsync<Scan>('select * from pending_scans order by scanned_at');"),
     E("src/offline/migrateLegacyQueue.ts",
       "export async function migrateLegacyQueue() {\n  const db = await SQLite.openDatabaseAsync('deckhand.db');",
       "export async function migrateLegacyQueue() {\n  if (offlineStore.getBoolean('legacyQueueMigrated')) return;\n"
       "  const db = await SQLite.openDatabaseAsync('deckhand.db');"),
     E("src/offline/migrateLegacyQueue.ts", "  await SQLite.deleteDatabaseAsync('deckhand.db');\n}",
       "  await SQLite.deleteDatabaseAsync('deckhand.db');\n  offlineStore.set('legacyQueueMigrated', true);\n}"),
     B("pnpm jest src/offline", JEST_OK.format(s=4, n=14, t="1.977", x=" matching /src\\/offline/i"))],
    "The second run opened a fresh, empty `deckhand.db` (the first run had deleted it) and `select ... from pending_scans` "
    "threw `no such table`, which is unhandled in `_layout`. The migration now records `legacyQueueMigrated` in the MMKV "
    "offline store and returns early once it's set. Added a run-twice test; offline tests pass.",
    needs=["D10"]),
  T("Rebase on main, push, and get both fixes onto the crew phones.",
    [B("git fetch origin && git rebase origin/main",
       "From github.com:brannock-ferries/deckhand-app\n   3d84e6a..8f02c1b  main       -> origin/main\nSuccessfully rebased and updated refs/heads/fix/pilot-feedback."),
     B("git push --force-with-lease",
       "To github.com:brannock-ferries/deckhand-app.git\n + 4a1e9d0...b57c3f2 fix/pilot-feedback -> fix/pilot-feedback (forced update)"),
     B("eas update --channel preview --message \"Departed-sailing banner; fix crash when queue migration re-runs\" --non-interactive",
       "✔ Exported bundle(s)\n✔ Uploaded 2 app bundles\n✔ Uploaded 0 assets\n✔ Published!\n\nBranch             preview\n"
       "Runtime version    1.5.0\nPlatform           android, ios\nUpdate group ID    e4f09b61-2a7c-4d3e-b8f5-6c1a9d2e0f43\n"
       "Message            Departed-sailing banner; fix crash when queue migration re-runs\n"
       "EAS Dashboard      https://expo.dev/accounts/brannock/projects/deckhand/updates/e4f09b61-2a7c-4d3e-b8f5-6c1a9d2e0f43")],
    "Rebased on main (8f02c1b), pushed with `--force-with-lease`, and since both fixes are JS-only they went out as an "
    "OTA on the `preview` channel for runtime 1.5.0, the MMKV build the crew installed last week. Phones pick it up on "
    "the next restart.",
    needs=["U03", "D06"]),
  )

# ---------------------------------------------------------------- s17 day 18 sailings
S("sailings", 18,
  T("The countdown on the checkout page starts at the wrong number. Fix it.",
    [R("lib/sailings_web/live/checkout_live.ex",
       "  @hold_seconds 900\n\n  def mount(%{\"hold_id\" => id}, _session, socket) do\n    hold = Holds.get!(id)\n"
       "    {:ok, assign(socket, hold: hold, remaining: @hold_seconds)}\n  end", 9),
     E("lib/sailings_web/live/checkout_live.ex", "  @hold_seconds 900\n\n", ""),
     E("lib/sailings_web/live/checkout_live.ex", "    {:ok, assign(socket, hold: hold, remaining: @hold_seconds)}",
       "    remaining = max(DateTime.diff(hold.expires_at, DateTime.utc_now(), :second), 0)\n    {:ok, assign(socket, hold: hold, remaining: remaining)}"),
     B("mix test test/sailings_web/live/checkout_live_test.exs", MIX_TEST_OK.format(t="0.6", a="0.6", s="0.0", n=9, seed=2281))],
    "The LiveView started every countdown from a hard-coded 900 s (15:00) while holds now last 7 minutes, so the timer "
    "showed time the customer didn't have. It now counts down from the hold's own `expires_at`, which also makes a "
    "page reload show the real remaining time. Checkout tests pass.",
    needs=["S10"]),
  T("Add an hourly clean-up that deletes waitlist entries for sailings that have already departed.",
    [W("lib/sailings/waitlist/janitor.ex",
       "defmodule Sailings.Waitlist.Janitor do\n  @moduledoc \"Hourly removal of waitlist entries for departed sailings.\"\n  use GenServer\n"
       "  import Ecto.Query\n  alias Sailings.Repo\n  alias Sailings.Waitlist.Entry\n\n  @every :timer.hours(1)\n\n"
       "  def start_link(opts), do: GenServer.start_link(__MODULE__, opts, name: __MODULE__)\n\n  @impl true\n"
       "  def init(_), do: {:ok, schedule()}\n\n  @impl true\n  def handle_info(:run, _), do: {:noreply, (run(); schedule())}\n\n"
       "  def run(now \\\\ DateTime.utc_now()) do\n    from(e in Entry, join: s in assoc(e, :sailing), where: s.departs_at < ^now)\n"
       "    |> Repo.delete_all()\n  end\n\n  defp schedule, do: Process.send_after(self(), :run, @every)\nend\n"),
     E("lib/sailings/application.ex", "      {:start_waitlist_offerer, Sailings.Waitlist.Offerer}\n",
       "      {:start_waitlist_offerer, Sailings.Waitlist.Offerer},\n      {:start_waitlist_janitor, Sailings.Waitlist.Janitor}\n"),
     E("config/test.exs", "config :sailings, start_sweeper: false, start_waitlist_offerer: false",
       "config :sailings, start_sweeper: false, start_waitlist_offerer: false, start_waitlist_janitor: false"),
     W("test/sailings/waitlist/janitor_test.exs",
       "defmodule Sailings.Waitlist.JanitorTest do\n  use Sailings.DataCase, async: true\n  import Sailings.Factory\n\n"
       "  test \"removes entries for departed sailings only\" do\n    gone = insert(:waitlist_entry, sailing: build(:sailing, departs_at: ~U[2026-05-20 06:30:00Z]))\n"
       "    kept = insert(:waitlist_entry, sailing: build(:sailing, departs_at: ~U[2026-05-22 06:30:00Z]))\n"
       "    Sailings.Waitlist.Janitor.run(~U[2026-05-21 12:00:00Z])\n    refute Repo.reload(gone)\n    assert Repo.reload(kept)\n  end\nend\n"),
     B("mix test", MIX_TEST_OK.format(t="4.3", a="2.1", s="2.2", n=232, seed=15522))],
    "Added `Sailings.Waitlist.Janitor`: every hour it deletes waitlist entries whose sailing's `departs_at` is in the past. "
    "It's supervised with the other timer processes behind `start_waitlist_janitor`, which `config/test.exs` turns off so "
    "it never touches the sandbox; the test calls `Janitor.run/1` with a fixed clock and builds data with the factories. "
    "232 tests, 0 failures.",
    needs=["S03"]),
  T("Have the clean-up log how many entries it removed for each sailing, with the departure time the way the harbour "
    "staff read it.",
    [E("lib/sailings/waitlist/janitor.ex",
       "    from(e in Entry, join: s in assoc(e, :sailing), where: s.departs_at < ^now)\n    |> Repo.delete_all()",
       "    from(e in Entry, join: s in assoc(e, :sailing), where: s.departs_at < ^now,\n"
       "      group_by: [s.route_code, s.departs_at], select: {s.route_code, s.departs_at, count(e.id)})\n    |> Repo.all()\n"
       "    |> Enum.each(fn {route, departs_at, n} ->\n      local = departs_at |> DateTime.shift_zone!(\"Europe/Dublin\") |> Calendar.strftime(\"%d %b %H:%M\")\n"
       "      Logger.info(\"waitlist janitor: removed #{n} entries for #{route} #{local}\")\n    end)\n\n"
       "    from(e in Entry, join: s in assoc(e, :sailing), where: s.departs_at < ^now) |> Repo.delete_all()"),
     E("lib/sailings/waitlist/janitor.ex", "  import Ecto.Query\n", "  import Ecto.Query\n  require Logger\n"),
     B("mix test test/sailings/waitlist", MIX_TEST_OK.format(t="0.3", a="0.3", s="0.0", n=6, seed=940))],
    "Each run now logs one line per departed sailing, e.g. `waitlist janitor: removed 3 entries for CRK-ISG 20 May 07:30`, "
    "with the departure shifted to Europe/Dublin via DateTime and Calendar.strftime (no Timex). Waitlist tests pass.",
    needs=["S07"]),
  T("Put it on staging.",
    [B("kamal deploy -d staging",
       "  INFO [e8a11c07] Running docker login ghcr.io -u *** -p *** on 10.40.1.21\nBuild and push app image...\n"
       "  INFO [41d9b3a2] Running docker buildx build --push ... -t ghcr.io/brannock-ferries/sailings:c7f3a90 ...\n"
       "ERROR: failed to solve: failed to push ghcr.io/brannock-ferries/sailings:c7f3a90: unexpected status from HEAD request to "
       "https://ghcr.io/v2/brannock-ferries/sailings/blobs/sha256:5b0e...: 502 Bad Gateway\n"
       "  Finished all in 58.3 seconds\n  ERROR (SSHKit::Command::Failed): docker exit status: 1", True),
     B("kamal deploy -d staging",
       "  INFO [91f2d6b8] Running docker login ghcr.io -u *** -p *** on 10.40.1.21\nBuild and push app image...\n"
       "  INFO [0be47a15] Finished in 23.771 seconds with exit status 0 (successful).\n...\n  INFO Container is healthy!\n...\n  Finished all in 47.6 seconds"),
     B("mix sailings.smoke --env staging",
       "smoke: target https://api.staging.brannockferries.ie\nsmoke: GET /api/v2/health ok (40ms)\nsmoke: hold 1 seat on TEST-0730 ok\n"
       "smoke: book ok (ref SMK-8297)\nsmoke: cancel SMK-8297 ok\nsmoke: 4/4 passed")],
    "First attempt died pushing the image: GHCR answered `502 Bad Gateway` on a blob HEAD request, a registry hiccup "
    "rather than anything in our build. The retry went through (layers were cached, 47.6 s), the container is healthy, "
    "and the smoke run passed 4/4. c7f3a90 is on staging.",
    needs=["S06"]),
  )

# ---------------------------------------------------------------- s18 day 19 deckhand-app
S("deckhand-app", 19,
  T("The pursers' iPads need the current preview build.",
    [B("ssh gannet.local 'cd ~/code/deckhand-app && git pull -q && pnpm install --frozen-lockfile && cd ios && pod install "
       "&& cd .. && eas build --local --platform ios --profile preview --non-interactive --output build/deckhand-preview.ipa'",
       "Lockfile is up to date, resolution step is skipped\nPod installation complete! There are 88 dependencies from the Podfile and 88 total pods installed.\n"
       "[PREPARE_CREDENTIALS] Using ad hoc provisioning profile for ie.brannockferries.deckhand\n...\n[RUN_FASTLANE] ** ARCHIVE SUCCEEDED **\n"
       "[RUN_FASTLANE] Successfully exported and signed the ipa file\nBuild successful\n"
       "You can find the build artifacts in /Users/mf/code/deckhand-app/build/deckhand-preview.ipa")],
    "Built on gannet: `~/code/deckhand-app/build/deckhand-preview.ipa`, ad hoc signed, current main (runtime 1.5.0, so "
    "it also receives the OTA updates on the preview channel).",
    needs=["U08"]),
  T("Tadhg can't log in on the new build; his PIN is rejected. Check whether the backend the preview builds talk to is "
    "actually answering the crew login.",
    [B("grep EXPO_PUBLIC_API_URL eas.json .env.staging",
       "eas.json:        \"env\": { \"APP_ENV\": \"staging\" }\n.env.staging:EXPO_PUBLIC_API_URL=https://api.staging.brannockferries.ie"),
     B("curl -sS https://api.staging.brannockferries.ie/api/v2/health", "{\"status\":\"ok\",\"version\":\"0.9.4\",\"db\":\"ok\",\"node\":\"sailings@stg-web-1\"}"),
     B("curl -sS -o /dev/stderr -w '%{http_code}\\n' -X POST https://api.staging.brannockferries.ie/api/v2/crew/session "
       "-H 'content-type: application/json' -d '{\"crew_id\":\"GRA-014\",\"pin\":\"0000\"}'",
       "{\"error\":\"crew_member_inactive\",\"detail\":\"crew member GRA-014 is not active for any vessel\"}401", True)],
    "The staging API is up (0.9.4, db ok) and the crew login endpoint answers. For Tadhg's crew ID it returns 401 "
    "`crew_member_inactive`, before it even checks the PIN: GRA-014 isn't active on any vessel on staging. Probably the "
    "vessel roster reseed last week; someone with sailings admin needs to re-activate him on the MV Gráinne. The app side "
    "is fine.",
    needs=["D02"]),
  T("Leave a marker where hardware-scanner support will go, BRN-490 for the Zebra DataWedge work, then commit and open the PR.",
    [E("src/scanner/ScanScreen.tsx", "  const onBarcodeScanned = useCallback(",
       "  // TODO(mf): BRN-490 accept scans from Zebra DataWedge intents as well as the camera\n  const onBarcodeScanned = useCallback("),
     B("git checkout -b chore/datawedge-marker && git add -A && git commit -m \"Mark where DataWedge scanning will plug in\" -m \"Refs: BRN-490\"",
       "Switched to a new branch 'chore/datawedge-marker'\n[chore/datawedge-marker 0e6b7d4] Mark where DataWedge scanning will plug in\n 1 file changed, 1 insertion(+)"),
     B("git push -u origin chore/datawedge-marker && gh pr create --title \"Mark where DataWedge scanning will plug in\" --body-file - <<'EOF'\n"
       "Placeholder for BRN-490 (Zebra hardware scanner support); no behaviour change.\n\n## How to test\n"
       "1. `pnpm jest && pnpm tsc --noEmit` pass.\n2. `git grep -n BRN-490` shows the single marker in `src/scanner/ScanScreen.tsx`.\nEOF",
       "To github.com:brannock-ferries/deckhand-app.git\n * [new branch]      chore/datawedge-marker -> chore/datawedge-marker\n\n"
       "Creating pull request for chore/datawedge-marker into main in brannock-ferries/deckhand-app\n\nhttps://github.com/brannock-ferries/deckhand-app/pull/95")],
    "Marker added above `onBarcodeScanned`: `// TODO(mf): BRN-490 accept scans from Zebra DataWedge intents ...`. Commit "
    "0e6b7d4 (`Refs: BRN-490`), PR #95 with a short How to test.",
    needs=["U04", "U06", "U01"]),
  T("Submit the latest Android build to the Play internal track and let the pilot lead know it's coming.",
    [B("eas submit --platform android --latest --non-interactive",
       "✔ Using the latest build: b82d09f1-6c3e-4a57-8e2b-91f4d0a6c7e3\n✔ Using Google Service Account Key from EAS servers\n"
       "Scheduling Android submission\nSubmission details: https://expo.dev/accounts/brannock/projects/deckhand/submissions/3a0c...\n"
       "Waiting for submission to complete...\n✖ Something went wrong when submitting your app to Google Play Store.\n"
       "Error: Google Api Error: Invalid request - The caller does not have permission", True)],
    "The submission failed at Google's end: `The caller does not have permission`. EAS used the stored service-account "
    "key, so that service account has lost (or never had) release rights on the deckhand app in Play Console. That's an "
    "access change, so it's one for Kasia: the service account needs the Release manager permission for the app. Draft "
    "for Tadhg meanwhile:\n\n> The next pilot build is going to the Play internal track so you can install it from the "
    "store instead of a link; it's held up on a permissions fix and I'll send word when it's through.",
    needs=["D03", "U05"]),
  T("Run the whole test suite once more before I close the laptop; don't touch anything if it's red, just tell me.",
    [B("pnpm jest && pnpm tsc --noEmit", "\n" + JEST_OK.format(s=17, n=96, t="8.644", x=""))],
    "All green on `chore/datawedge-marker`: 17 suites, 96 tests, typecheck clean. Nothing changed."),
  )

# ---------------------------------------------------------------- s19 day 19 sailings
S("sailings", 19,
  T("Fare rules need an August bank-holiday surcharge: a flat amount per adult ticket on that weekend's sailings. Ticket "
    "BRN-493, and get it into review.",
    [B("mix ecto.gen.migration add_bank_holiday_surcharge_to_fare_rules", "* creating priv/repo/migrations/20260522141209_add_bank_holiday_surcharge_to_fare_rules.exs"),
     W("priv/repo/migrations/20260522141209_add_bank_holiday_surcharge_to_fare_rules.exs",
       "defmodule Sailings.Repo.Migrations.AddBankHolidaySurchargeToFareRules do\n  use Ecto.Migration\n\n  def change do\n"
       "    alter table(:fare_rules) do\n      add :bank_holiday_surcharge_cents, :integer, null: false, default: 0\n    end\n  end\nend\n"),
     E("lib/sailings/fares/fare_rule.ex", "    field :child_fare_cents, :integer",
       "    field :child_fare_cents, :integer\n    field :bank_holiday_surcharge_cents, :integer, default: 0"),
     E("lib/sailings/fares.ex", "  def price_for(%FareRule{} = rule, :adult), do: rule.adult_fare_cents",
       "  def price_for(%FareRule{} = rule, :adult, %Sailing{} = sailing) do\n"
       "    if BankHolidays.august_weekend?(sailing.departs_at),\n      do: rule.adult_fare_cents + rule.bank_holiday_surcharge_cents,\n"
       "      else: rule.adult_fare_cents\n  end\n\n  def price_for(%FareRule{} = rule, :adult), do: rule.adult_fare_cents"),
     B("git checkout -b feat/bank-holiday-surcharge && git add -A && git commit -m \"Add August bank-holiday surcharge to fare rules\" -m \"Refs: BRN-493\" && git push -u origin feat/bank-holiday-surcharge",
       "Switched to a new branch 'feat/bank-holiday-surcharge'\n[feat/bank-holiday-surcharge 9d31e7f] Add August bank-holiday surcharge to fare rules\n 4 files changed, 27 insertions(+)\n"
       "To github.com:brannock-ferries/sailings.git\n * [new branch]      feat/bank-holiday-surcharge -> feat/bank-holiday-surcharge"),
     B("gh pr create --title \"Add August bank-holiday surcharge to fare rules\" --reviewer eilidh-macrae --body-file - <<'EOF'\n"
       "Adds `fare_rules.bank_holiday_surcharge_cents` (default 0) added to adult fares on sailings over the August bank-holiday weekend.\n\n"
       "## How to test\n1. `mix ecto.migrate && mix test test/sailings/fares_test.exs`.\n"
       "2. Set a 300-cent surcharge on CRK-ISG and price an adult on Sat 1 Aug 2026: 2700 instead of 2400.\n3. A sailing on 8 Aug is still 2400.\nEOF",
       "\nCreating pull request for feat/bank-holiday-surcharge into main in brannock-ferries/sailings\n\nhttps://github.com/brannock-ferries/sailings/pull/251")],
    "PR #251 (https://github.com/brannock-ferries/sailings/pull/251) with Eilidh MacRae as reviewer, since it touches fare "
    "rules. New column `bank_holiday_surcharge_cents` (integer, default 0, so no route changes until revenue set it) and "
    "an adult price that adds it on the August bank-holiday weekend. Commit trailer `Refs: BRN-493`; How to test in the "
    "description. Tests for it still to come.",
    needs=["S05", "S01", "U06", "U01"]),
  T("Run the migration locally and show me the CRK-ISG fare rules with the new column.",
    [B("mix ecto.migrate",
       "14:15:40.201 [info] == Running 20260522141209 Sailings.Repo.Migrations.AddBankHolidaySurchargeToFareRules.change/0 forward\n"
       "14:15:40.214 [info] == Migrated 20260522141209 in 0.0s"),
     B("psql -h localhost -p 5433 -U postgres sailings_dev -c \"select id, season, adult_fare_cents, child_fare_cents, bank_holiday_surcharge_cents from fare_rules where route_code = 'CRK-ISG' order by season;\"",
       " id | season | adult_fare_cents | child_fare_cents | bank_holiday_surcharge_cents \n----+--------+------------------+------------------+------------------------------\n"
       " 12 | summer |             2400 |             1295 |                            0\n 13 | winter |             2100 |             1100 |                            0\n(2 rows)")],
    "Migrated. CRK-ISG has two rules locally: summer (adult 2400, child 1295) and winter (2100 / 1100), both with "
    "`bank_holiday_surcharge_cents` = 0 as expected.",
    needs=["S09"]),
  T("Now the tests for the surcharge.",
    [E("test/support/factory.ex", "      adult_fare_cents: 2400,", "      adult_fare_cents: 2400,\n      bank_holiday_surcharge_cents: 0,"),
     E("test/sailings/fares_test.exs", "  describe \"resident child fares\" do",
       "  describe \"bank-holiday surcharge\" do\n    test \"added to adult fares on the August weekend\" do\n"
       "      rule = insert(:fare_rule, bank_holiday_surcharge_cents: 300)\n      sailing = build(:sailing, departs_at: ~U[2026-08-01 06:30:00Z])\n"
       "      assert Fares.price_for(rule, :adult, sailing) == 2700\n    end\n\n    test \"not on other weekends\" do\n"
       "      rule = insert(:fare_rule, bank_holiday_surcharge_cents: 300)\n      sailing = build(:sailing, departs_at: ~U[2026-08-08 06:30:00Z])\n"
       "      assert Fares.price_for(rule, :adult, sailing) == 2400\n    end\n  end\n\n  describe \"resident child fares\" do"),
     B("mix test test/sailings/fares_test.exs", MIX_TEST_OK.format(t="0.4", a="0.4", s="0.0", n=28, seed=6119))],
    "Two tests in `fares_test.exs` using the factories (`insert(:fare_rule, ...)`, `build(:sailing, ...)`, with the "
    "surcharge defaulting to 0 in `fare_rule_factory`): 2400 + 300 on Sat 1 Aug, plain 2400 a week later. 28 fares "
    "tests pass.",
    needs=["S08"]),
  T("Rebase on main and push, then I'm off.",
    [B("git fetch origin && git rebase origin/main",
       "From github.com:brannock-ferries/sailings\n   c7f3a90..d19b8e4  main       -> origin/main\nSuccessfully rebased and updated refs/heads/feat/bank-holiday-surcharge."),
     B("git push --force-with-lease",
       "To github.com:brannock-ferries/sailings.git\n + 2f8c6a1...7b0d3e9 feat/bank-holiday-surcharge -> feat/bank-holiday-surcharge (forced update)")],
    "Rebased onto origin/main (d19b8e4) cleanly and pushed with `--force-with-lease`; PR #251 now has the tests too.",
    needs=["U03"]),
  )


# ---------------------------------------------------------------------------
# assemble and write
# ---------------------------------------------------------------------------
def main():
    sessions = []
    taught = {}
    for i, s in enumerate(SESSIONS, 1):
        sid = f"s{i:02d}"
        turns = []
        for j, t in enumerate(s["turns"], 1):
            for f in t["teaches"]:
                assert f not in taught, f
                taught[f] = {"session": sid, "turn": j}
            turns.append({"turn": j, "prompt": t["prompt"], "events": t["events"],
                          "answer": t["answer"], "teaches": t["teaches"], "needs": t["needs"],
                          "quiet": not t["teaches"]})
        sessions.append({"session_id": sid, "project": s["project"], "day": s["day"],
                         "turns": turns})
    facts = []
    for fid, scope, project, typ, kind, content, anchors, sup in FACTS:
        assert fid in taught, fid
        facts.append({"fact_id": fid, "scope": scope, "project": project, "type": typ,
                      "content": content, "anchors": anchors, "taught_in": taught[fid],
                      "superseded_by": sup, "kind": kind})
    with open(os.path.join(HERE, "world.json"), "w", encoding="utf-8") as fh:
        json.dump(WORLD, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    with open(os.path.join(HERE, "facts.jsonl"), "w", encoding="utf-8") as fh:
        for f in facts:
            fh.write(json.dumps(f, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "sessions.jsonl"), "w", encoding="utf-8") as fh:
        for s in sessions:
            fh.write(json.dumps(s, ensure_ascii=False) + "\n")
    print(f"wrote {len(facts)} facts, {len(sessions)} sessions, "
          f"{sum(len(s['turns']) for s in sessions)} turns")


if __name__ == "__main__":
    main()
