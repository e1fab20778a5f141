#!/usr/bin/env python3
"""Generate the 'fourth' coding-month world: Harrowvale Dairy Co-operative, June 2026.

Standard library only, deterministic. Writes world.json, facts.jsonl and
sessions.jsonl next to this file.

    python3 make_world.py              # write the three files
    python3 make_world.py --table      # also print the facts table used in README.md
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

T_API = "tanker-api"
MILK = "milkpay"

WORLD = {
    "projects": [
        {
            "key": T_API,
            "name": "tanker-api",
            "stack": "Kotlin 2.0, Ktor 2.3, Exposed, PostgreSQL 16, Flyway, kotest, "
                     "Testcontainers, Gradle (Kotlin DSL), Jib, Nomad",
            "description": "Sync API for the milk-tanker drivers' handhelds: collection rounds, "
                           "pickups, sample barcodes and SMS pickup reminders to farms",
        },
        {
            "key": MILK,
            "name": "milkpay",
            "stack": "Python 3.11, Poetry, Prefect 2, pandas, pandera, SQLAlchemy 2 + psycopg 3, "
                     "Alembic, WeasyPrint, pytest, hypothesis, MinIO",
            "description": "Monthly milk payment pipeline: lab quality results in, per-farm "
                           "payment lines and PDF statements out",
        },
    ],
    "days": 28,
    "start_date": "2026-06-01",
}


# --------------------------------------------------------------------------- helpers

def bash(command, output="", error=False):
    return {"tool": "Bash", "input": {"command": command}, "output": output, "error": error}


def edit(path, old, new):
    return {"tool": "Edit",
            "input": {"file_path": path, "old_string": old, "new_string": new},
            "output": f"The file {path} has been updated successfully.", "error": False}


def write(path, content):
    return {"tool": "Write", "input": {"file_path": path, "content": content},
            "output": f"File created successfully at: {path}", "error": False}


def read(path, start, text):
    lines = text.split("\n")
    out = "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start))
    return {"tool": "Read", "input": {"file_path": path}, "output": out, "error": False}


def turn(prompt, events, answer, teaches=(), needs=()):
    return {"prompt": prompt, "events": list(events), "answer": answer,
            "teaches": list(teaches), "needs": list(needs)}


KT = "api/src/main/kotlin/coop/harrowvale/tanker"
MIG = "api/src/main/resources/db/migration"
TC_ENV = "DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock TESTCONTAINERS_RYUK_DISABLED=true"
TUNNEL = "ssh -f -N -L 15432:tanker-db.stg.hvd.internal:5432 gate.hvd.internal"
PSQL_STG = "psql -h localhost -p 15432 -U tanker_ro tanker"
OPRUN = "op run --env-file=.env.op --"
BWS = 'bws run --project-id "$(cat .bws-project)" --'
PREFECT = "PREFECT_API_URL=http://prefect.hvd.internal:4200/api"

# --------------------------------------------------------------------------- facts

FACTS = [
    # ---- user scope
    ("U01", None, "semantic", "convention",
     "Commit messages: a plain subject line with no ticket key in it; the ticket goes in a "
     "'Refs: HV-nnn' trailer at the end of the message, because the release-notes script only "
     "reads tickets from trailers.",
     ["Refs:"], None),
    ("U02", None, "episodic", "fix",
     "The user's laptop runs rootless Podman, not Docker: Testcontainers (Java and Python) fails "
     "with 'Could not find a valid Docker environment' unless podman.socket is enabled and tests "
     "run with DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock and "
     "TESTCONTAINERS_RYUK_DISABLED=true (Ryuk cannot mount the socket under rootless Podman).",
     ["podman.sock", "TESTCONTAINERS_RYUK_DISABLED"], None),
    ("U03", None, "semantic", "preference",
     "The user does not want whole files pasted back: summarise a change with `git diff --stat` "
     "plus only the hunks that matter.",
     ["git diff --stat"], None),
    ("U04", None, "semantic", "people",
     "Rhiannon Pryce (member services) signs off all farmer-facing wording (payment statements, "
     "pickup SMS reminders, letters) before it ships; ask her for it in the PR description.",
     ["Rhiannon"], None),
    ("U05", None, "semantic", "preference",
     "After a rebase the user pushes with `git push --force-with-lease`, never a bare --force: "
     "other developers push fixup commits onto their branches.",
     ["--force-with-lease"], None),
    ("U06", None, "semantic", "environment",
     "Secrets (database passwords, API tokens) live in 1Password and are injected with the CLI: "
     "`op run --env-file=.env.op -- <command>`; they are never written into files.",
     ["op run --env-file"], "U08"),
    ("U07", None, "semantic", "preference",
     "The user's Markdown docs are written one sentence per line (semantic line breaks), with no "
     "hard wrapping at a fixed column, so diffs show only the sentence that changed.",
     ["one sentence per line"], None),
    ("U08", None, "semantic", "environment",
     "Secrets now come from Bitwarden Secrets Manager (the co-op left 1Password): run commands as "
     "`bws run --project-id \"$(cat .bws-project)\" -- <command>`, with BWS_ACCESS_TOKEN exported "
     "from the user's keyring; each repo has its project id in .bws-project.",
     ["bws run"], None),
    # ---- tanker-api
    ("K01", T_API, "semantic", "convention",
     "tanker-api Flyway migrations are versioned by UTC timestamp, "
     "V<yyyyMMddHHmm>__snake_case_description.sql, not by sequential numbers (two branches once "
     "both added a V12 and Flyway refused to start on staging).",
     ["yyyyMMddHHmm"], None),
    ("K02", T_API, "semantic", "people",
     "Osian Bevan writes the Android handheld app against tanker-api's sync DTOs; every change "
     "under sync/ needs his review (GitHub user osian-bevan) before it merges.",
     ["Osian"], None),
    ("K03", T_API, "episodic", "fix",
     "tanker-api's JVM must run in UTC (-Duser.timezone=UTC): collected_at is a zone-less "
     "timestamp and the code converts it with ZoneId.systemDefault() in ten places, so a laptop "
     "JVM on Europe/London (BST) reads times an hour off. It is set in tasks.test and the Jib jvmFlags; for ./gradlew run or "
     "IntelliJ use JAVA_TOOL_OPTIONS=-Duser.timezone=UTC.",
     ["-Duser.timezone=UTC"], None),
    ("K04", T_API, "semantic", "decision",
     "tanker-api /v1/ is frozen, not even additive changes, because the old TC52 handhelds cannot "
     "take an app update until the autumn rollout; every new or changed endpoint goes under /v2/.",
     ["/v2/"], None),
    ("K05", T_API, "procedural", "procedure",
     "Deploying tanker-api to staging: ./gradlew :api:jib (pushes registry.hvd.internal/"
     "tanker-api:<short sha>), then NOMAD_ADDR=https://nomad.hvd.internal:4646 nomad job run "
     "-var image_tag=<short sha> deploy/tanker-api.nomad.hcl.",
     ["nomad job run"], "K10"),
    ("K06", T_API, "procedural", "procedure",
     "The handheld client is generated from openapi/tanker.yaml: whenever tanker-api's API "
     "surface changes, run ./gradlew :api:generateOpenApi and commit the yaml in the same PR as "
     "the code.",
     ["generateOpenApi"], None),
    ("K07", T_API, "semantic", "environment",
     "The tanker-api staging database is only reachable through the bastion: "
     "ssh -N -L 15432:tanker-db.stg.hvd.internal:5432 gate.hvd.internal, then psql -h localhost "
     "-p 15432 -U tanker_ro tanker.",
     ["15432", "gate.hvd.internal"], None),
    ("K08", T_API, "episodic", "fix",
     "In tanker-api, after switching branches flywayMigrate fails with 'Detected applied "
     "migration not resolved locally'; on the local dev database only, reset it with "
     "./gradlew :api:flywayClean :api:flywayMigrate -Pflyway.cleanDisabled=false (Flyway 10 "
     "disables clean by default).",
     ["cleanDisabled=false"], None),
    ("K09", T_API, "semantic", "decision",
     "tanker-api error responses are problem+json (RFC 9457) with type URIs under "
     "https://errors.harrowvale.coop/ (API review decision); older error bodies are converted "
     "when touched.",
     ["errors.harrowvale.coop"], None),
    ("K10", T_API, "procedural", "procedure",
     "tanker-api staging deploys go through Woodpecker CI: push a git tag matching staging-* "
     "(staging-YYYYMMDD-N) and the pipeline builds the image and rolls it out; Nomad tokens were "
     "taken off laptops, so nobody deploys by hand.",
     ["Woodpecker", "staging-*"], None),
    # ---- milkpay
    ("M01", MILK, "episodic", "fix",
     "Pennant lab CSV exports are Windows-1252 (cp1252), semicolon-separated, with decimal commas "
     "and dd/mm/yyyy dates: read them with encoding='cp1252', sep=';', decimal=',' (UTF-8 fails "
     "on the degree sign, byte 0xb0).",
     ["cp1252"], None),
    ("M02", MILK, "semantic", "decision",
     "milkpay payment maths is done in Decimal and every statement line is rounded to the penny "
     "with ROUND_HALF_UP (board decision), not Python's default half-even rounding.",
     ["ROUND_HALF_UP"], None),
    ("M03", MILK, "semantic", "people",
     "Bronwen Lloyd (finance) owns milkpay's payment_rates table: missing or wrong rates go back "
     "to her; the developers never insert or patch rates in code or SQL.",
     ["Bronwen"], None),
    ("M04", MILK, "semantic", "environment",
     "milkpay's Prefect server is http://prefect.hvd.internal:4200 (PREFECT_API_URL ending /api); "
     "deployments target the churn-process work pool, served by the process worker on host churn.",
     ["churn-process"], None),
    ("M05", MILK, "semantic", "convention",
     "In milkpay every DataFrame that crosses a task boundary has a pandera model in "
     "milkpay/schemas.py, and the function producing or taking it is decorated with "
     "@pa.check_types.",
     ["check_types"], None),
    ("M06", MILK, "procedural", "procedure",
     "Issued milkpay statements are legal documents and are never regenerated in place: "
     "corrections use `milkpay rerun --month YYYY-MM --farm N --supersede`, which issues a new "
     "statement number (-R1) and marks the old one superseded in statement_issued.",
     ["--supersede"], None),
    ("M07", MILK, "semantic", "preference",
     "In milkpay the business logic lives in plain functions under milkpay/core/; Prefect @task "
     "and @flow functions only call them, and unit tests target the plain functions without "
     "Prefect.",
     ["milkpay/core/"], None),
    ("M08", MILK, "episodic", "fix",
     "Bulk loads in milkpay with DataFrame.to_sql(method='multi') must pass chunksize=2000: "
     "otherwise one INSERT carries rows x columns bind parameters and psycopg fails with "
     "'number of parameters must be between 0 and 65535'.",
     ["chunksize=2000"], None),
    ("M09", MILK, "semantic", "environment",
     "Pennant Analytical lab results are fetched from their SFTP, "
     "results@sftp.pennant-analytical.co.uk:/outbox/harrowvale/, with the key "
     "~/.ssh/pennant_ed25519, into data/raw/ (gitignored).",
     ["sftp.pennant-analytical"], "M10"),
    ("M10", MILK, "semantic", "environment",
     "Pennant lab results now arrive in the co-op's MinIO, bucket lab-inbox under "
     "pennant/YYYY/MM/ (mc alias hv on the laptop and on churn); milkpay's fetch step copies them "
     "from there into data/raw/.",
     ["lab-inbox"], None),
]

# --------------------------------------------------------------------------- sessions

S = []


def session(sid, project, day, turns):
    S.append({"session_id": sid, "project": project, "day": day, "turns": turns})


# ---- s01 tanker-api, day 1 (Mon 1 June) -------------------------------------------
session("s01", T_API, 1, [
    turn("Morning. I'm starting HV-231: drivers want to scan the barcode on the sample vial when "
         "they collect. Show me how a pickup is stored today.",
         [read(f"{KT}/db/Tables.kt", 1,
               "package coop.harrowvale.tanker.db\n\n"
               "import org.jetbrains.exposed.dao.id.LongIdTable\n"
               "import org.jetbrains.exposed.sql.javatime.datetime\n\n"
               "object Pickups : LongIdTable(\"pickups\") {\n"
               "    val farmId = long(\"farm_id\").index()\n"
               "    val roundId = reference(\"round_id\", Rounds)\n"
               "    val collectedAt = datetime(\"collected_at\")\n"
               "    val litres = decimal(\"litres\", 8, 1)\n"
               "    val tankTempC = decimal(\"tank_temp_c\", 4, 1)\n"
               "    val driverId = long(\"driver_id\")\n"
               "}"),
          bash("grep -rn \"Pickups\\.\" api/src/main/kotlin | grep -c insert",
               "2")],
         "A pickup is one row in `pickups` (Exposed table `Pickups` in db/Tables.kt): farm, round, "
         "`collected_at` (a plain `timestamp`, no zone), litres to one decimal, tank temperature "
         "and driver. Nothing ties a row to the lab sample yet, so the barcode needs a new column. "
         "There are two insert paths: the handheld sync in sync/PickupRoutes.kt and the depot "
         "back-office import."),
    turn("Add a nullable sample_barcode column to pickups, varchar(32), and the migration for it.",
         [bash("ls api/src/main/resources/db/migration | sort -V | tail -3",
               "V10__farm_contacts.sql\nV11__driver_shifts.sql\nV12__rounds_depot.sql"),
          write(f"{MIG}/V13__pickup_sample_barcode.sql",
                "ALTER TABLE pickups ADD COLUMN sample_barcode varchar(32);\n"
                "CREATE UNIQUE INDEX pickups_sample_barcode_key\n"
                "    ON pickups (sample_barcode) WHERE sample_barcode IS NOT NULL;\n"),
          edit(f"{KT}/db/Tables.kt",
               "    val driverId = long(\"driver_id\")\n",
               "    val driverId = long(\"driver_id\")\n"
               "    val sampleBarcode = varchar(\"sample_barcode\", 32).nullable()\n")],
         "Added `V13__pickup_sample_barcode.sql`: a nullable `sample_barcode varchar(32)` plus a "
         "partial unique index, so two pickups can't claim the same vial while old rows stay "
         "NULL. `Pickups.sampleBarcode` is the matching Exposed column."),
    turn("Not V13. After the V12 clash in May (two branches each added a V12 and Flyway wouldn't "
         "start on staging) we switched to timestamps: V + yyyyMMddHHmm in UTC, two underscores, "
         "then a snake_case description. Yours is the first one, so rename it.",
         [bash("date -u +%Y%m%d%H%M", "202606010947"),
          bash("git mv api/src/main/resources/db/migration/V13__pickup_sample_barcode.sql "
               "api/src/main/resources/db/migration/V202606010947__pickup_sample_barcode.sql && "
               "ls api/src/main/resources/db/migration | sort -V | tail -2",
               "V12__rounds_depot.sql\nV202606010947__pickup_sample_barcode.sql")],
         "Renamed to `V202606010947__pickup_sample_barcode.sql` (09:47 UTC today). Flyway compares "
         "versions numerically, so 202606010947 sorts after 12 and the existing history stays "
         "valid. Pattern for the next ones: `V<yyyyMMddHHmm>__snake_case_description.sql`, UTC."
         , teaches=["K01"]),
    turn("Now put the barcode on the sync payload so the handheld can send it. Osian Bevan writes "
         "the handheld app against these DTOs and anything under sync/ waits for his review "
         "before it merges, so he'll be on this one.",
         [read(f"{KT}/sync/PickupDto.kt", 1,
               "package coop.harrowvale.tanker.sync\n\n"
               "import kotlinx.datetime.Instant\n"
               "import kotlinx.serialization.Serializable\n\n"
               "@Serializable\n"
               "data class PickupDto(\n"
               "    val clientId: String,\n"
               "    val farmId: Long,\n"
               "    val collectedAt: Instant,\n"
               "    val litres: String,\n"
               "    val tankTempC: String,\n"
               ")"),
          edit(f"{KT}/sync/PickupDto.kt",
               "    val tankTempC: String,\n)",
               "    val tankTempC: String,\n    val sampleBarcode: String? = null,\n)"),
          edit(f"{KT}/sync/PickupRoutes.kt",
               "                tankTempC = BigDecimal(dto.tankTempC),\n",
               "                tankTempC = BigDecimal(dto.tankTempC),\n"
               "                sampleBarcode = dto.sampleBarcode?.trim()?.uppercase(),\n"),
          bash("./gradlew :api:compileKotlin", "> Task :api:compileKotlin\n\nBUILD SUCCESSFUL in 14s\n5 actionable tasks: 2 executed, 3 up-to-date")],
         "`PickupDto` has an optional `sampleBarcode` (defaults to null, so handhelds that don't "
         "send it keep working), and the sync route trims and upper-cases it before insert. "
         "Compiles. Since it's under sync/, Osian Bevan is the reviewer for this PR.",
         teaches=["K02"]),
    turn("Commit it. Leave the ticket out of the subject line; it goes in a trailer at the bottom, "
         "`Refs: HV-231`. The release-notes script only picks tickets up from trailers.",
         [bash("git add -A && git commit -m \"Add sample barcode to pickups\" "
               "-m \"Drivers scan the vial barcode at collection. Nullable until every handheld sends it.\" "
               "-m \"Refs: HV-231\"",
               "[hv-231-sample-barcode 4e1c2a7] Add sample barcode to pickups\n"
               " 4 files changed, 19 insertions(+), 1 deletion(-)\n"
               " create mode 100644 api/src/main/resources/db/migration/V202606010947__pickup_sample_barcode.sql")],
         "Committed as 4e1c2a7: subject \"Add sample barcode to pickups\", a one-line body, and "
         "`Refs: HV-231` as the trailer, no ticket key in the subject.",
         teaches=["U01"]),
])

# ---- s02 milkpay, day 1 -------------------------------------------------------------
LOADER_FULL = (
    "```python\n"
    "\"\"\"Pennant Analytical lab result exports.\"\"\"\n"
    "from pathlib import Path\n\n"
    "import pandas as pd\n\n"
    "RAW = Path(\"data/raw\")\n\n"
    "COLUMNS = {\n"
    "    \"Sample ID\": \"sample_id\",\n"
    "    \"Herd no\": \"herd_no\",\n"
    "    \"Sampled\": \"sampled\",\n"
    "    \"Butterfat %\": \"butterfat\",\n"
    "    \"Protein %\": \"protein\",\n"
    "    \"Lactose %\": \"lactose\",\n"
    "    \"SCC (x1000/ml)\": \"scc\",\n"
    "    \"TBC (x1000/ml)\": \"tbc\",\n"
    "    \"Freezing pt (m\u00b0C)\": \"freezing_point\",\n"
    "}\n\n\n"
    "def load_results() -> pd.DataFrame:\n"
    "    path = max(RAW.glob(\"pennant_harrowvale_*.csv\"))\n"
    "    # Pennant export: Windows-1252, semicolon-separated, decimal commas, dd/mm/yyyy dates\n"
    "    df = pd.read_csv(\n"
    "        path,\n"
    "        encoding=\"cp1252\",\n"
    "        sep=\";\",\n"
    "        decimal=\",\",\n"
    "        parse_dates=[\"Sampled\"],\n"
    "        dayfirst=True,\n"
    "    )\n"
    "    return df.rename(columns=COLUMNS)\n"
    "```"
)

session("s02", MILK, 1, [
    turn("Switching to milkpay. Pull down May's lab results so we've got real data to work with. "
         "They're on Pennant's SFTP, results@sftp.pennant-analytical.co.uk, folder "
         "/outbox/harrowvale/, and the key is ~/.ssh/pennant_ed25519. Put them in data/raw/, "
         "it's gitignored.",
         [bash("sftp -i ~/.ssh/pennant_ed25519 "
               "results@sftp.pennant-analytical.co.uk:/outbox/harrowvale/pennant_harrowvale_202605.csv data/raw/",
               "Connected to sftp.pennant-analytical.co.uk.\n"
               "Fetching /outbox/harrowvale/pennant_harrowvale_202605.csv to data/raw/pennant_harrowvale_202605.csv\n"
               "pennant_harrowvale_202605.csv                 100%  412KB   1.9MB/s   00:00"),
          bash("wc -l data/raw/pennant_harrowvale_202605.csv && git check-ignore -v data/raw/pennant_harrowvale_202605.csv",
               "4817 data/raw/pennant_harrowvale_202605.csv\n.gitignore:4:data/raw/\tdata/raw/pennant_harrowvale_202605.csv")],
         "Fetched `pennant_harrowvale_202605.csv` (412 KB, 4,816 samples plus header) from "
         "results@sftp.pennant-analytical.co.uk:/outbox/harrowvale/ into data/raw/, which "
         ".gitignore covers.",
         teaches=["M09"]),
    turn("Load it with the existing loader and give me the somatic cell count distribution.",
         [bash("poetry run python -c \"from milkpay.io.pennant import load_results; "
               "print(load_results()['SCC (x1000/ml)'].describe())\"",
               "Traceback (most recent call last):\n"
               "  File \"<string>\", line 1, in <module>\n"
               "  File \"/home/ffion/src/milkpay/milkpay/io/pennant.py\", line 24, in load_results\n"
               "    df = pd.read_csv(path)\n"
               "  File \"/home/ffion/.cache/pypoetry/virtualenvs/milkpay-Xc3kP0aa-py3.11/lib/python3.11/site-packages/pandas/io/parsers/readers.py\", line 1026, in read_csv\n"
               "    return _read(filepath_or_buffer, kwds)\n"
               "  ...\n"
               "  File \"parsers.pyx\", line 1923, in pandas._libs.parsers.raise_parser_error\n"
               "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xb0 in position 104: invalid start byte",
               error=True),
          bash("head -c 320 data/raw/pennant_harrowvale_202605.csv | iconv -f cp1252 -t utf-8",
               "Sample ID;Herd no;Sampled;Butterfat %;Protein %;Lactose %;SCC (x1000/ml);TBC (x1000/ml);Freezing pt (m\u00b0C)\n"
               "HV1187-0501-A;1187;01/05/2026;4,21;3,38;4,62;182;14;-521\n"
               "HV1203-0501-A;1203;01/05/2026;3,96;3,29;4,58;246;22;-519\n"
               "HV1244-0501-A;1244;01/05/2026;4,02;3,41;4,66;131;9;-523"),
          edit("milkpay/io/pennant.py",
               "    df = pd.read_csv(path)\n",
               "    # Pennant export: Windows-1252, semicolon-separated, decimal commas, dd/mm/yyyy dates\n"
               "    df = pd.read_csv(\n"
               "        path,\n"
               "        encoding=\"cp1252\",\n"
               "        sep=\";\",\n"
               "        decimal=\",\",\n"
               "        parse_dates=[\"Sampled\"],\n"
               "        dayfirst=True,\n"
               "    )\n"),
          bash("poetry run python -c \"from milkpay.io.pennant import load_results; "
               "print(load_results()['scc'].describe())\"",
               "count    4816.000000\nmean      197.402824\nstd        88.119406\nmin        31.000000\n"
               "25%       134.000000\n50%       183.000000\n75%       243.000000\nmax       912.000000\n"
               "Name: scc, dtype: float64")],
         "The loader died on byte 0xb0, which is the degree sign in the `Freezing pt (m\u00b0C)` "
         "header: Pennant's export is Windows-1252, not UTF-8. It's also semicolon-separated with "
         "decimal commas (`4,21`) and dd/mm/yyyy dates, so even with the right encoding a plain "
         "read_csv would have produced one column of strings. I changed `load_results` to read "
         "with `encoding=\"cp1252\", sep=\";\", decimal=\",\"` and `dayfirst=True`. Here's the "
         "whole module now:\n\n" + LOADER_FULL + "\n\n"
         "SCC (thousand cells/ml) for May: median 183, interquartile range 134-243, mean 197, "
         "maximum 912. 4,816 samples.",
         teaches=["M01"]),
    turn("What's the spread of butterfat across farms for May? Monthly mean per farm, top and "
         "bottom five.",
         [bash("poetry run python - <<'EOF'\n"
               "from milkpay.io.pennant import load_results\n"
               "m = load_results().groupby('herd_no')['butterfat'].mean().sort_values()\n"
               "print(m.head(5).round(2).to_string()); print('...'); print(m.tail(5).round(2).to_string())\n"
               "print(len(m), 'farms')\nEOF",
               "herd_no\n1288    3.61\n1175    3.66\n1330    3.70\n1203    3.74\n1261    3.77\n...\n"
               "herd_no\n1219    4.58\n1306    4.61\n1187    4.64\n1152    4.71\n1297    4.83\n311 farms")],
         "Across 311 farms the May mean butterfat runs from 3.61% (herd 1288) to 4.83% (herd "
         "1297). Bottom five: 1288, 1175, 1330, 1203, 1261 (3.61-3.77%). Top five: 1219, 1306, "
         "1187, 1152, 1297 (4.58-4.83%). Those top farms are the Jersey and Guernsey herds, so "
         "the top end is expected, not a lab problem."),
    turn("OK. Make load_results take the path as an argument instead of globbing data/raw. And "
         "don't paste whole files back at me like that answer before last: a git diff --stat "
         "plus the couple of hunks that matter is all I read anyway.",
         [edit("milkpay/io/pennant.py",
               "def load_results() -> pd.DataFrame:\n    path = max(RAW.glob(\"pennant_harrowvale_*.csv\"))\n",
               "def load_results(path: Path) -> pd.DataFrame:\n"),
          edit("milkpay/flows/fetch.py",
               "    df = load_results()\n",
               "    path = max(RAW.glob(\"pennant_harrowvale_*.csv\"))\n    df = load_results(path)\n"),
          bash("poetry run pytest -q tests/io", "....\n4 passed in 0.38s"),
          bash("git diff --stat",
               " milkpay/flows/fetch.py | 5 +++--\n milkpay/io/pennant.py  | 4 +---\n"
               " 2 files changed, 4 insertions(+), 5 deletions(-)")],
         "Done, tests pass.\n\n`git diff --stat`:\n```\n milkpay/flows/fetch.py | 5 +++--\n"
         " milkpay/io/pennant.py  | 4 +---\n```\nThe hunk that matters: "
         "`def load_results(path: Path) -> pd.DataFrame:`. The glob for the newest file moved "
         "into `flows/fetch.py`, which passes the path in.",
         teaches=["U03"]),
])

# ---- s03 tanker-api, day 2 ----------------------------------------------------------
session("s03", T_API, 2, [
    turn("Run the test suite before I go any further with the barcode.",
         [bash("./gradlew test",
               "> Task :api:test\n\n"
               "PickupRepositoryTest > initializationError FAILED\n"
               "    java.lang.IllegalStateException at DockerClientProviderStrategy.java:274\n\n"
               "SyncRoutesTest > initializationError FAILED\n"
               "    java.lang.IllegalStateException at DockerClientProviderStrategy.java:274\n\n"
               "14 tests completed, 2 failed\n\n"
               "FAILURE: Build failed with an exception.\n\n* What went wrong:\n"
               "Execution failed for task ':api:test'.\n"
               "> There were failing tests. See the report at: file:///home/ffion/src/tanker-api/api/build/reports/tests/test/index.html",
               error=True),
          bash("grep -h -m3 -E \"Could not find|ProviderStrategy: failed\" api/build/test-results/test/*.xml",
               "java.lang.IllegalStateException: Could not find a valid Docker environment. Please see logs and check configuration\n"
               "UnixSocketClientProviderStrategy: failed with exception InvalidConfigurationException (Could not find unix domain socket). Root cause NoSuchFileException (/var/run/docker.sock)\n"
               "DockerDesktopClientProviderStrategy: failed with exception NullPointerException (Cannot invoke \"java.nio.file.Path.toString()\" because the return value of \"org.testcontainers.dockerclient.DockerDesktopClientProviderStrategy.getSocketPath()\" is null)"),
          bash("command -v docker podman; systemctl --user is-active podman.socket || true",
               "/usr/bin/podman\ninactive"),
          bash("systemctl --user enable --now podman.socket && ls $XDG_RUNTIME_DIR/podman/",
               "Created symlink /home/ffion/.config/systemd/user/sockets.target.wants/podman.socket \u2192 /usr/lib/systemd/user/podman.socket.\n"
               "podman.sock"),
          bash("DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock ./gradlew test",
               "> Task :api:test\n\n"
               "PickupRepositoryTest > initializationError FAILED\n"
               "    org.testcontainers.containers.ContainerLaunchException: Container startup failed for image testcontainers/ryuk:0.7.0\n"
               "        Caused by: com.github.dockerjava.api.exception.InternalServerErrorException: Status 500: "
               "{\"cause\":\"permission denied\",\"message\":\"container create: statfs /var/run/docker.sock: permission denied\",\"response\":500}\n\n"
               "14 tests completed, 2 failed",
               error=True),
          bash(TC_ENV + " ./gradlew test",
               "> Task :api:test\n\n"
               "PickupRepositoryTest > stores collection time as sent by the handheld FAILED\n"
               "    io.kotest.assertions.AssertionFailedError at PickupRepositoryTest.kt:41\n\n"
               "14 tests completed, 1 failed",
               error=True)],
         "The suite never got as far as the tests. This laptop has rootless Podman and no Docker, "
         "so Testcontainers found no /var/run/docker.sock (\"Could not find a valid Docker "
         "environment\"). I enabled the user `podman.socket` and pointed Testcontainers at it with "
         "`DOCKER_HOST=unix://$XDG_RUNTIME_DIR/podman/podman.sock`. Then Ryuk, the clean-up "
         "container, failed because it bind-mounts the Docker socket into itself, which rootless "
         "Podman refuses, so it also needs `TESTCONTAINERS_RYUK_DISABLED=true`. With both set the "
         "Postgres containers start and 13 of 14 tests pass. The one left is a real failure: "
         "PickupRepositoryTest gets the collection time back an hour off. Want me to dig in?",
         teaches=["U02"]),
    turn("Yes, look at the collection time one.",
         [bash(TC_ENV + " ./gradlew :api:test --tests '*PickupRepositoryTest*'",
               "PickupRepositoryTest > stores collection time as sent by the handheld FAILED\n"
               "    io.kotest.assertions.AssertionFailedError: expected:<2026-06-02T05:40:00Z> but was:<2026-06-02T04:40:00Z>\n"
               "        at coop.harrowvale.tanker.db.PickupRepositoryTest$1$1.invokeSuspend(PickupRepositoryTest.kt:41)\n\n"
               "1 test completed, 1 failed",
               error=True),
          read(f"{KT}/db/PickupRepository.kt", 22,
               "    fun insert(p: NewPickup): Long = transaction {\n"
               "        Pickups.insertAndGetId {\n"
               "            it[farmId] = p.farmId\n"
               "            it[collectedAt] = LocalDateTime.ofInstant(p.collectedAt, ZoneOffset.UTC)\n"
               "            it[litres] = p.litres\n"
               "        }.value\n"
               "    }\n"
               "    ...\n"
               "    private fun ResultRow.toPickup() = Pickup(\n"
               "        id = this[Pickups.id].value,\n"
               "        collectedAt = this[Pickups.collectedAt].atZone(ZoneId.systemDefault()).toInstant(),"),
          bash("grep -rn \"systemDefault()\" api/src/main | wc -l", "10"),
          edit("api/build.gradle.kts",
               "tasks.test {\n    useJUnitPlatform()\n}",
               "tasks.test {\n    useJUnitPlatform()\n    jvmArgs(\"-Duser.timezone=UTC\")\n}"),
          edit("api/build.gradle.kts",
               "        jvmFlags = listOf(\"-XX:MaxRAMPercentage=75\")",
               "        jvmFlags = listOf(\"-XX:MaxRAMPercentage=75\", \"-Duser.timezone=UTC\")"),
          bash(TC_ENV + " ./gradlew test", "> Task :api:test\n\nBUILD SUCCESSFUL in 41s\n7 actionable tasks: 3 executed, 4 up-to-date")],
         "Root cause: `collected_at` is a zone-less `timestamp` (Exposed `datetime`). "
         "`PickupRepository.insert` stores the Instant as UTC wall-clock time, but `toPickup` "
         "turns it back into an Instant with `ZoneId.systemDefault()`. In the Nomad container the "
         "default zone is UTC, so production is fine; on this laptop the JVM picks up "
         "Europe/London, which is BST (+1) in June, so a stored 05:40 comes back as 05:40 BST, "
         "i.e. 04:40Z. There are "
         "ten `systemDefault()` calls in main (shift summaries, round reports), so rather than "
         "touch them all in a barcode PR I pinned the JVM: `-Duser.timezone=UTC` in `tasks.test` "
         "and explicitly in the Jib `jvmFlags`. Anything else that starts the app (`./gradlew run`, "
         "IntelliJ) needs it too, e.g. `JAVA_TOOL_OPTIONS=-Duser.timezone=UTC`. Whole suite green.",
         teaches=["K03"]),
    turn("Drivers also want to leave a short note on a pickup ('gate locked, left by the parlour', "
         "that sort of thing). Add a column for it, 200 characters max.",
         [bash("date -u +%Y%m%d%H%M", "202606020931"),
          write(f"{MIG}/V202606020931__pickup_driver_note.sql",
                "ALTER TABLE pickups ADD COLUMN driver_note varchar(200);\n"),
          edit(f"{KT}/db/Tables.kt",
               "    val sampleBarcode = varchar(\"sample_barcode\", 32).nullable()\n",
               "    val sampleBarcode = varchar(\"sample_barcode\", 32).nullable()\n"
               "    val driverNote = varchar(\"driver_note\", 200).nullable()\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*PickupRepositoryTest*'",
               "BUILD SUCCESSFUL in 19s")],
         "Added `V202606020931__pickup_driver_note.sql` (timestamp version, UTC) with a nullable "
         "`driver_note varchar(200)`, and `Pickups.driverNote`. Repository tests pass. I haven't "
         "put it on the sync DTO yet; say if you want that in the same PR."
         , needs=["K01"]),
    turn("Side question: why does the pickup sync endpoint always answer 204 when the handheld has "
         "nothing new? Not asking to change it, just curious.",
         [read(f"{KT}/sync/PickupRoutes.kt", 58,
               "        get(\"/changes\") {\n"
               "            val since = call.parameters[\"since\"]?.toLongOrNull() ?: 0L\n"
               "            val changes = repo.changedSince(call.driverId(), since)\n"
               "            if (changes.isEmpty()) {\n"
               "                call.respond(HttpStatusCode.NoContent)\n"
               "                return@get\n"
               "            }\n"
               "            call.response.header(\"X-Sync-Token\", changes.maxOf { it.version }.toString())\n"
               "            call.respond(changes)\n"
               "        }")],
         "It's the `since` token. The handheld sends the highest change version it has seen; "
         "`changedSince` returns rows with a newer version for that driver's rounds. When the list "
         "is empty the route answers 204 and skips the `X-Sync-Token` header, so the handheld "
         "keeps its old token and doesn't have to parse an empty body. A 200 with `[]` would work "
         "too; the 204 just saves the handheld a JSON parse on every poll, which mattered on the "
         "TC52s' 3G connections."),
])

# ---- s04 milkpay, day 3 -------------------------------------------------------------
session("s04", MILK, 3, [
    turn("Pennant emailed to say the May re-tests are up, file ending _202605r. Grab it.",
         [bash("sftp -i ~/.ssh/pennant_ed25519 "
               "results@sftp.pennant-analytical.co.uk:/outbox/harrowvale/pennant_harrowvale_202605r.csv data/raw/",
               "Connected to sftp.pennant-analytical.co.uk.\n"
               "Fetching /outbox/harrowvale/pennant_harrowvale_202605r.csv to data/raw/pennant_harrowvale_202605r.csv\n"
               "pennant_harrowvale_202605r.csv                100%   27KB 610.4KB/s   00:00")],
         "Got it: `data/raw/pennant_harrowvale_202605r.csv`, 27 KB, from the same Pennant SFTP "
         "folder.", needs=["M09"]),
    turn("Without going through the flow, just a throwaway script: which farms' butterfat changed "
         "between the original May file and the re-tests, and by how much?",
         [bash("poetry run python - <<'EOF'\n"
               "import pandas as pd\n"
               "opts = dict(encoding='cp1252', sep=';', decimal=',', usecols=['Herd no', 'Butterfat %'])\n"
               "a = pd.read_csv('data/raw/pennant_harrowvale_202605.csv', **opts).groupby('Herd no').mean()\n"
               "b = pd.read_csv('data/raw/pennant_harrowvale_202605r.csv', **opts).groupby('Herd no').mean()\n"
               "d = a.join(b, rsuffix='_retest', how='inner')\n"
               "d['diff'] = d['Butterfat %_retest'] - d['Butterfat %']\n"
               "print(d[d['diff'].abs() >= 0.05].round(2).to_string())\nEOF",
               "         Butterfat %  Butterfat %_retest  diff\nHerd no\n"
               "1187            4.02                4.19  0.17\n1203            3.88                4.05  0.17\n"
               "1244            3.94                4.08  0.14\n1319            4.11                3.97 -0.14")],
         "Four farms moved by 0.05 points or more on the re-tests: 1187 (+0.17), 1203 (+0.17), "
         "1244 (+0.14) and 1319 (-0.14). Read both files directly with pandas (Windows-1252, `;` "
         "separator, decimal commas) and compared the monthly mean per herd; 23 other herds in "
         "the re-test file changed by less than 0.05."
         , needs=["M01"]),
    turn("Finance meeting this morning: the board wants payments worked out in Decimal and "
         "rounded to the penny on each line, half up. ROUND_HALF_UP, not the half-even you get "
         "from Python's round() and from Decimal's default context. calc_payment in "
         "flows/statements.py does float maths at the moment; change it.",
         [read("milkpay/flows/statements.py", 18,
               "@task\n"
               "def calc_payment(farm: FarmMonth, rates: Rates) -> float:\n"
               "    base = farm.litres * rates.base_ppl / 100\n"
               "    fat_steps = max(0, int((farm.butterfat - 4.0) * 10))\n"
               "    fat_bonus = farm.litres * fat_steps * rates.fat_bonus_ppl / 100\n"
               "    return round(base + fat_bonus, 2)"),
          edit("milkpay/flows/statements.py",
               "@task\n"
               "def calc_payment(farm: FarmMonth, rates: Rates) -> float:\n"
               "    base = farm.litres * rates.base_ppl / 100\n"
               "    fat_steps = max(0, int((farm.butterfat - 4.0) * 10))\n"
               "    fat_bonus = farm.litres * fat_steps * rates.fat_bonus_ppl / 100\n"
               "    return round(base + fat_bonus, 2)",
               "PENNY = Decimal(\"0.01\")\n\n\n"
               "@task\n"
               "def calc_payment(farm: FarmMonth, rates: Rates) -> Decimal:\n"
               "    litres = Decimal(str(farm.litres))\n"
               "    base = (litres * rates.base_ppl / 100).quantize(PENNY, rounding=ROUND_HALF_UP)\n"
               "    fat_steps = max(0, int((Decimal(str(farm.butterfat)) - Decimal(\"4.0\")) * 10))\n"
               "    fat_bonus = (litres * fat_steps * rates.fat_bonus_ppl / 100).quantize(PENNY, rounding=ROUND_HALF_UP)\n"
               "    return base + fat_bonus"),
          bash("poetry run pytest -q tests/test_statements.py", "......\n6 passed in 0.44s")],
         "`calc_payment` now works in Decimal (litres and butterfat converted via `str` so no "
         "float noise gets in, rates already Decimal from the table) and rounds each line, base "
         "and fat bonus, to the penny with `ROUND_HALF_UP` before adding them up. The total is the "
         "sum of the rounded lines. Existing tests pass; none of them hit an exact half penny, so "
         "I'd like to add one that does."
         , teaches=["M02"]),
    turn("Hmm, no. I don't want real logic living inside @task functions: testing them means "
         "dragging Prefect in, and the last lot of task tests were half mocks. Pull the "
         "calculation out into milkpay/core/ as a plain function and have the task just call it. "
         "Tests go against the plain function.",
         [write("milkpay/core/payment.py",
                "from decimal import ROUND_HALF_UP, Decimal\n\n"
                "from milkpay.model import FarmMonth, Rates\n\n"
                "PENNY = Decimal(\"0.01\")\n\n\n"
                "def penny(x: Decimal) -> Decimal:\n"
                "    return x.quantize(PENNY, rounding=ROUND_HALF_UP)\n\n\n"
                "def payment_lines(farm: FarmMonth, rates: Rates) -> dict[str, Decimal]:\n"
                "    litres = Decimal(str(farm.litres))\n"
                "    fat_steps = max(0, int((Decimal(str(farm.butterfat)) - Decimal(\"4.0\")) * 10))\n"
                "    return {\n"
                "        \"base\": penny(litres * rates.base_ppl / 100),\n"
                "        \"fat_bonus\": penny(litres * fat_steps * rates.fat_bonus_ppl / 100),\n"
                "    }\n"),
          edit("milkpay/flows/statements.py",
               "    litres = Decimal(str(farm.litres))\n"
               "    base = (litres * rates.base_ppl / 100).quantize(PENNY, rounding=ROUND_HALF_UP)\n"
               "    fat_steps = max(0, int((Decimal(str(farm.butterfat)) - Decimal(\"4.0\")) * 10))\n"
               "    fat_bonus = (litres * fat_steps * rates.fat_bonus_ppl / 100).quantize(PENNY, rounding=ROUND_HALF_UP)\n"
               "    return base + fat_bonus",
               "    return sum(payment_lines(farm, rates).values(), Decimal(0))"),
          write("tests/core/test_payment.py",
                "from decimal import Decimal\n\nfrom milkpay.core.payment import payment_lines, penny\n\n\n"
                "def test_half_penny_rounds_up():\n    assert penny(Decimal(\"0.125\")) == Decimal(\"0.13\")\n\n\n"
                "def test_fat_bonus_steps(farm_month, rates):\n"
                "    lines = payment_lines(farm_month(litres=10000, butterfat=4.27), rates)\n"
                "    assert lines[\"fat_bonus\"] == Decimal(\"190.00\")\n"),
          bash("poetry run pytest -q tests", ".........\n9 passed in 0.52s")],
         "Moved: `milkpay/core/payment.py` has `payment_lines()` and a `penny()` helper, plain "
         "functions with no Prefect import. The `calc_payment` task is now a one-liner that sums "
         "`payment_lines`. New tests in tests/core/ call the functions directly, including a "
         "half-penny case (0.125 -> 0.13). 9 passed.",
         teaches=["M07"]),
    turn("Commit the rounding change. Ticket is HV-240.",
         [bash("git add -A && git commit -m \"Calculate payments in Decimal, rounding each line half up\" "
               "-m \"Board decision of 3 June. Calculation moved to milkpay.core.payment; the task only calls it.\" "
               "-m \"Refs: HV-240\"",
               "[hv-240-decimal-rounding 91c0d5e] Calculate payments in Decimal, rounding each line half up\n"
               " 4 files changed, 48 insertions(+), 9 deletions(-)\n"
               " create mode 100644 milkpay/core/payment.py\n create mode 100644 tests/core/test_payment.py")],
         "Committed 91c0d5e, \"Calculate payments in Decimal, rounding each line half up\", with "
         "`Refs: HV-240` as the trailer.", needs=["U01"]),
])

# ---- s05 tanker-api, day 4 ----------------------------------------------------------
session("s05", T_API, 4, [
    turn("Start the API locally against the dev database, I want to look at this morning's "
         "pickups through the API rather than in psql.",
         [bash("JAVA_TOOL_OPTIONS=-Duser.timezone=UTC nohup ./gradlew :api:run > /tmp/tanker-run.log 2>&1 &", ""),
          bash("sleep 12; grep -m1 \"Picked up\" /tmp/tanker-run.log; curl -s localhost:8080/health",
               "Picked up JAVA_TOOL_OPTIONS: -Duser.timezone=UTC\n"
               "{\"status\":\"ok\",\"db\":\"ok\",\"flyway\":\"202606020931\"}")],
         "Running on localhost:8080 against the dev database (Flyway at 202606020931). I started "
         "it with `JAVA_TOOL_OPTIONS=-Duser.timezone=UTC` so collection times come back right on "
         "this laptop. Logs are in /tmp/tanker-run.log.", needs=["K03"]),
    turn("Outcome of yesterday's handheld meeting: the old TC52s can't take an app update until "
         "the autumn rollout, so /v1/ is frozen, not even additive changes. Anything new goes "
         "under /v2/. First one: a GET that takes a sample barcode and returns the pickup it "
         "belongs to.",
         [write(f"{KT}/sync/v2/SampleRoutes.kt",
                "package coop.harrowvale.tanker.sync.v2\n\n"
                "fun Route.sampleRoutes(repo: PickupRepository) {\n"
                "    get(\"/samples/{barcode}\") {\n"
                "        val barcode = call.parameters.getOrFail(\"barcode\").uppercase()\n"
                "        val pickup = repo.findByBarcode(barcode).single()\n"
                "        call.respond(pickup.toV2Dto())\n"
                "    }\n"
                "}\n"),
          edit(f"{KT}/Application.kt",
               "        route(\"/v1/sync\") { syncRoutes(pickups) }\n",
               "        route(\"/v1/sync\") { syncRoutes(pickups) }\n"
               "        route(\"/v2/\") { sampleRoutes(pickups) }\n"),
          edit(f"{KT}/sync/PickupDto.kt",
               "    val tankTempC: String,\n    val sampleBarcode: String? = null,\n)",
               "    val tankTempC: String,\n)"),
          edit(f"{KT}/sync/PickupRoutes.kt",
               "                sampleBarcode = dto.sampleBarcode?.trim()?.uppercase(),\n",
               ""),
          write(f"{KT}/sync/v2/PickupDtoV2.kt",
                "package coop.harrowvale.tanker.sync.v2\n\n"
                "@Serializable\n"
                "data class PickupDtoV2(\n"
                "    val id: Long,\n    val clientId: String,\n    val farmId: Long,\n"
                "    val collectedAt: Instant,\n    val litres: String,\n    val tankTempC: String,\n"
                "    val sampleBarcode: String?,\n)\n"),
          bash("curl -s localhost:8080/v2/samples/HV1187-0604-A",
               "{\"id\":88213,\"clientId\":\"tc52-0417-5521\",\"farmId\":1187,\"collectedAt\":\"2026-06-04T05:12:00Z\","
               "\"litres\":\"4120.0\",\"tankTempC\":\"3.4\",\"sampleBarcode\":\"HV1187-0604-A\"}")],
         "Added `GET /v2/samples/{barcode}` in a new sync/v2 package, returning a `PickupDtoV2`. "
         "That decision also means the `sampleBarcode` field I put on the v1 `PickupDto` on "
         "Monday can't ship, so I took it off v1 (DTO and the v1 sync route); the barcode now only "
         "exists on the v2 DTO. "
         "Tried it against the dev data: HV1187-0604-A returns pickup 88213."
         , teaches=["K04"]),
    turn("Summarise what changed on the branch so I can paste it into HV-231.",
         [bash("git diff --stat main...HEAD",
               " api/build.gradle.kts                                        |  3 +-\n"
               " api/src/main/kotlin/coop/harrowvale/tanker/Application.kt   |  1 +\n"
               " .../coop/harrowvale/tanker/db/PickupRepository.kt          | 14 ++++++-\n"
               " api/src/main/kotlin/coop/harrowvale/tanker/db/Tables.kt    |  2 +\n"
               " .../harrowvale/tanker/sync/v2/PickupDtoV2.kt               | 14 +++++++\n"
               " .../harrowvale/tanker/sync/v2/SampleRoutes.kt              | 11 +++++\n"
               " .../V202606010947__pickup_sample_barcode.sql                |  3 +\n"
               " .../V202606020931__pickup_driver_note.sql                   |  1 +\n"
               " 8 files changed, 46 insertions(+), 3 deletions(-)")],
         "`git diff --stat main...HEAD`: 8 files, +46/-3.\n\nFor the ticket:\n"
         "- `pickups.sample_barcode` (nullable, unique when set) and `pickups.driver_note` "
         "(varchar 200), two timestamped migrations.\n"
         "- New `GET /v2/samples/{barcode}` returning the pickup a vial belongs to.\n"
         "- Test JVM and container pinned to UTC (collection times were an hour off on laptops).",
         needs=["U03"]),
    turn("Open the PR and get the right person reviewing it.",
         [bash("gh pr create --title \"Sample barcode on pickups\" --body-file /tmp/pr-hv231.md --reviewer osian-bevan",
               "Creating pull request for hv-231-sample-barcode into main in harrowvale/tanker-api\n\n"
               "https://github.com/harrowvale/tanker-api/pull/88")],
         "PR #88 is open: https://github.com/harrowvale/tanker-api/pull/88. It touches the sync "
         "code, so I requested Osian Bevan (osian-bevan) as reviewer.", needs=["K02"]),
    turn("Put it on staging so the handheld team can try the lookup. Staging runs on Nomad: build "
         "and push with ./gradlew :api:jib, then nomad job run -var image_tag=<short sha> "
         "deploy/tanker-api.nomad.hcl, with NOMAD_ADDR=https://nomad.hvd.internal:4646.",
         [bash("./gradlew :api:jib",
               "> Task :api:jib\n\nContainerizing application to registry.hvd.internal/tanker-api:3f9a0c1...\n"
               "Built and pushed image as registry.hvd.internal/tanker-api:3f9a0c1\n\nBUILD SUCCESSFUL in 47s"),
          bash("NOMAD_ADDR=https://nomad.hvd.internal:4646 nomad job run -var image_tag=3f9a0c1 deploy/tanker-api.nomad.hcl",
               "==> 2026-06-04T15:12:40+01:00: Monitoring evaluation \"6c1f0a2e\"\n"
               "    2026-06-04T15:12:40+01:00: Evaluation triggered by job \"tanker-api-stg\"\n"
               "    2026-06-04T15:12:41+01:00: Allocation \"b7d2e915\" created: node \"d2f7c1aa\", group \"api\"\n"
               "==> 2026-06-04T15:12:58+01:00: Monitoring deployment \"a04e6b3d\"\n"
               "  \u2713 Deployment \"a04e6b3d\" successful\n\n"
               "    Deployed\n"
               "    Task Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline\n"
               "    api         2        2       2        0          2026-06-04T15:22:57+01:00")],
         "On staging: Jib pushed registry.hvd.internal/tanker-api:3f9a0c1 and `nomad job run` "
         "with `image_tag=3f9a0c1` rolled out both allocations healthy. The lookup is at "
         "/v2/samples/{barcode} on the staging host.",
         teaches=["K05"]),
])

# ---- s06 milkpay, day 5 -------------------------------------------------------------
session("s06", MILK, 5, [
    turn("Run the integration tests, the ones under tests/integration that start a Postgres "
         "container.",
         [bash(TC_ENV + " poetry run pytest -q tests/integration",
               "........\n8 passed in 21.37s")],
         "8 passed in 21 s. Ran them with `DOCKER_HOST` pointed at the Podman socket and Ryuk "
         "disabled, same as tanker-api needs on this laptop.", needs=["U02"]),
    turn("Add the protein bonus: 0.8p per litre for every full 0.1% of protein above 3.30%. "
         "HV-245.",
         [write("milkpay/core/bonuses.py",
                "from decimal import ROUND_HALF_UP, Decimal\n\n"
                "PENNY = Decimal(\"0.01\")\nPROTEIN_THRESHOLD = Decimal(\"3.30\")\n\n\n"
                "def protein_steps(protein_pct: Decimal) -> int:\n"
                "    return max(0, int((protein_pct - PROTEIN_THRESHOLD) * 10))\n\n\n"
                "def protein_bonus(litres: Decimal, protein_pct: Decimal, ppl: Decimal) -> Decimal:\n"
                "    amount = litres * protein_steps(protein_pct) * ppl / 100\n"
                "    return amount.quantize(PENNY, rounding=ROUND_HALF_UP)\n"),
          edit("milkpay/core/payment.py",
               "        \"fat_bonus\": penny(litres * fat_steps * rates.fat_bonus_ppl / 100),\n",
               "        \"fat_bonus\": penny(litres * fat_steps * rates.fat_bonus_ppl / 100),\n"
               "        \"protein_bonus\": protein_bonus(litres, Decimal(str(farm.protein)), rates.protein_bonus_ppl),\n"),
          write("tests/core/test_bonuses.py",
                "from decimal import Decimal\n\nfrom hypothesis import given, strategies as st\n\n"
                "from milkpay.core.bonuses import protein_bonus, protein_steps\n\n\n"
                "def test_steps_are_full_tenths():\n    assert protein_steps(Decimal(\"3.39\")) == 0\n"
                "    assert protein_steps(Decimal(\"3.40\")) == 1\n\n\n"
                "@given(st.decimals(min_value=0, max_value=20000, places=1), st.decimals(min_value=2, max_value=5, places=2))\n"
                "def test_bonus_is_whole_pence(litres, protein):\n"
                "    assert protein_bonus(litres, protein, Decimal(\"0.8\")).as_tuple().exponent == -2\n"),
          bash("poetry run pytest -q tests/core", "..............\n14 passed in 1.12s")],
         "Protein bonus added as plain functions in `milkpay/core/bonuses.py`: full 0.1% steps "
         "above 3.30%, 0.8p x steps x litres, rounded to the penny half up like the other lines. "
         "`payment_lines` now returns a `protein_bonus` line. Tests include a hypothesis property "
         "that the bonus is always whole pence. 14 passed. The rate comes in as "
         "`rates.protein_bonus_ppl`; `Rates` doesn't load that yet.",
         needs=["M02", "M07"]),
    turn("The 0.8p is from the rates letter, but the number the pipeline uses has to come from "
         "payment_rates, not a constant. Bronwen Lloyd in finance owns that table: if a rate is "
         "missing or looks wrong it goes back to her, we don't insert or patch rates ourselves. "
         "Is there a protein bonus row for June?",
         [bash("psql -h localhost -U milkpay milkpay_dev -c \"select rate_code, valid_from, pence_per_unit, unit "
               "from payment_rates where valid_from <= '2026-06-30' order by rate_code\"",
               "  rate_code  | valid_from | pence_per_unit |      unit\n"
               "-------------+------------+----------------+----------------\n"
               " BASE        | 2026-04-01 |          38.20 | litre\n"
               " FAT_BONUS   | 2026-04-01 |           0.95 | litre per 0.1%\n"
               "(2 rows)"),
          edit("milkpay/io/rates.py",
               "        fat_bonus_ppl=rows[\"FAT_BONUS\"],\n",
               "        fat_bonus_ppl=rows[\"FAT_BONUS\"],\n"
               "        protein_bonus_ppl=rows[\"PROTEIN_BONUS\"],\n")],
         "No: payment_rates only has BASE (38.20p) and FAT_BONUS (0.95p) valid for June. I made "
         "`load_rates` read a `PROTEIN_BONUS` row, so a run will fail loudly with a KeyError until "
         "the row exists, and I haven't inserted anything. Draft for Bronwen Lloyd: \"Could you "
         "add a PROTEIN_BONUS rate to payment_rates, 0.8p per litre per 0.1% above 3.30%, valid "
         "from 1 June, as per the rates letter?\"",
         teaches=["M03"]),
    turn("Should the protein bonus be its own line on the statement? What does the template do "
         "with the fat bonus at the moment?",
         [read("templates/statement.html", 41,
               "{% for line in statement.lines %}\n"
               "  <tr class=\"line line-{{ line.code }}\">\n"
               "    <td>{{ line.label }}</td>\n"
               "    <td class=\"num\">{{ line.quantity | litres }}</td>\n"
               "    <td class=\"num\">{{ line.rate | pence }}</td>\n"
               "    <td class=\"num\">{{ line.amount | pounds }}</td>\n"
               "  </tr>\n"
               "{% endfor %}")],
         "The template doesn't know about bonuses as such: it loops over `statement.lines` and "
         "prints label, litres, rate and amount for each. The fat bonus appears as its own row "
         "because `payment_lines` returns it as a separate entry with its own label. So if "
         "`protein_bonus` stays a separate entry it will show as its own row automatically; what "
         "it still needs is a label, since today the label comes from a dict in "
         "statement_labels.py that only has BASE and FAT_BONUS."),
    turn("Give it its own line, labelled 'Protein bonus', under the fat bonus. Anything a farmer "
         "reads (statements, the pickup SMS, letters) gets signed off by Rhiannon Pryce in member "
         "services before it ships, so put a line in the PR description asking her to check the "
         "label.",
         [edit("milkpay/statement_labels.py",
               "    \"fat_bonus\": \"Butterfat bonus\",\n",
               "    \"fat_bonus\": \"Butterfat bonus\",\n    \"protein_bonus\": \"Protein bonus\",\n"),
          bash("gh pr create --title \"Protein bonus line\" --body \"Adds the protein bonus (HV-245) as its own statement line under the butterfat bonus.\n\n"
               "@rhiannon-pryce could you check the wording of the new statement line 'Protein bonus' before this ships?\n\n"
               "Needs a PROTEIN_BONUS row in payment_rates before the June run.\"",
               "Creating pull request for hv-245-protein-bonus into main in harrowvale/milkpay\n\n"
               "https://github.com/harrowvale/milkpay/pull/41")],
         "Label 'Protein bonus' added right after 'Butterfat bonus', so it renders as the next "
         "row. PR #41 is open, with a line asking Rhiannon Pryce (@rhiannon-pryce) to sign off "
         "the wording and a reminder that the PROTEIN_BONUS rate row is still missing.",
         teaches=["U04"]),
])

# ---- s07 tanker-api, day 8 (Mon) ----------------------------------------------------
session("s07", T_API, 8, [
    turn("Unknown barcodes on the lookup give a 500 on staging. We never saw that locally; find "
         "out why.",
         [write("api/src/test/kotlin/coop/harrowvale/tanker/sync/v2/SampleRoutesTest.kt",
                "class SampleRoutesTest : FunSpec({\n"
                "    test(\"unknown barcode is 404\") {\n"
                "        testApp { client.get(\"/v2/samples/NOPE-1\").status shouldBe HttpStatusCode.NotFound }\n"
                "    }\n})\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*SampleRoutesTest*'",
               "SampleRoutesTest > unknown barcode is 404 FAILED\n"
               "    io.kotest.assertions.AssertionFailedError: expected:<404 Not Found> but was:<500 Internal Server Error>\n"
               "    Caused by: java.util.NoSuchElementException: List is empty.\n"
               "        at coop.harrowvale.tanker.sync.v2.SampleRoutesKt$sampleRoutes$1.invokeSuspend(SampleRoutes.kt:6)\n\n"
               "1 test completed, 1 failed",
               error=True),
          edit(f"{KT}/sync/v2/SampleRoutes.kt",
               "        val pickup = repo.findByBarcode(barcode).single()\n        call.respond(pickup.toV2Dto())\n",
               "        val pickup = repo.findByBarcode(barcode).singleOrNull()\n"
               "            ?: return@get call.respond(HttpStatusCode.NotFound)\n"
               "        call.respond(pickup.toV2Dto())\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*SampleRoutesTest*'", "BUILD SUCCESSFUL in 17s")],
         "`.single()` on an empty result throws NoSuchElementException, which Ktor turns into a "
         "500. Locally every barcode we tried existed, so it never came up. Now it's "
         "`singleOrNull()` with a 404, and there's a test for the unknown case."),
    turn("Drivers want to see the last three pickups at a farm on the handheld before they "
         "connect the hose. Add an endpoint for it. HV-249.",
         [bash("git switch -c hv-249-last-pickups", "Switched to a new branch 'hv-249-last-pickups'"),
          write(f"{KT}/sync/v2/FarmPickupRoutes.kt",
                "package coop.harrowvale.tanker.sync.v2\n\n"
                "fun Route.farmPickupRoutes(repo: PickupRepository) {\n"
                "    get(\"/farms/{farmId}/pickups\") {\n"
                "        val farmId = call.parameters.getOrFail<Long>(\"farmId\")\n"
                "        call.respond(repo.latestForFarm(farmId, limit = 3).map { it.toV2Dto() })\n"
                "    }\n"
                "}\n"),
          edit(f"{KT}/Application.kt",
               "        route(\"/v2/\") { sampleRoutes(pickups) }\n",
               "        route(\"/v2/\") {\n            sampleRoutes(pickups)\n            farmPickupRoutes(pickups)\n        }\n"),
          bash(TC_ENV + " ./gradlew :api:test", "BUILD SUCCESSFUL in 44s")],
         "Added `GET /v2/farms/{farmId}/pickups` on a new branch hv-249-last-pickups, returning "
         "the three most recent pickups as `PickupDtoV2`, newest first. v1 is untouched. Tests "
         "pass.", needs=["K04"]),
    turn("Rebase onto main and push. With --force-with-lease, not a bare --force: the handheld "
         "devs sometimes push fixups onto my branches, and a plain force push has eaten one of "
         "theirs before.",
         [bash("git fetch origin && git rebase origin/main",
               "Successfully rebased and updated refs/heads/hv-249-last-pickups."),
          bash("git push --force-with-lease -u origin hv-249-last-pickups",
               "Enumerating objects: 23, done.\nTotal 14 (delta 6), reused 0 (delta 0)\n"
               "To github.com:harrowvale/tanker-api.git\n + 1d2c3b4...8e7f6a5 hv-249-last-pickups -> hv-249-last-pickups (forced update)\n"
               "branch 'hv-249-last-pickups' set up to track 'origin/hv-249-last-pickups'.")],
         "Rebased on origin/main and pushed with `--force-with-lease`, so the push would have been "
         "refused if anyone had pushed to the branch since my last fetch.", teaches=["U05"]),
    turn("Ship it to staging.",
         [bash("./gradlew :api:jib",
               "Built and pushed image as registry.hvd.internal/tanker-api:8e7f6a5\n\nBUILD SUCCESSFUL in 39s"),
          bash("NOMAD_ADDR=https://nomad.hvd.internal:4646 nomad job run -var image_tag=8e7f6a5 deploy/tanker-api.nomad.hcl",
               "==> 2026-06-08T11:04:09+01:00: Monitoring evaluation \"0f5b77c1\"\n"
               "    2026-06-08T11:04:10+01:00: Allocation \"3a9e0d42\" created: node \"d2f7c1aa\", group \"api\"\n"
               "  \u2713 Deployment \"c1e2a7f0\" successful\n\n"
               "    Task Group  Desired  Placed  Healthy  Unhealthy\n    api         2        2       2        0")],
         "Staging is on 8e7f6a5: pushed with Jib, then `nomad job run` with that tag; both "
         "allocations healthy.", needs=["K05"]),
    turn("The handheld build's failing because the new endpoint isn't in the spec. Their client "
         "is generated from openapi/tanker.yaml, so whenever the API surface changes, regenerate "
         "it with ./gradlew :api:generateOpenApi and commit the yaml in the same PR as the code.",
         [bash("./gradlew :api:generateOpenApi",
               "> Task :api:generateOpenApi\nWrote openapi/tanker.yaml (23 paths, 31 schemas)\n\nBUILD SUCCESSFUL in 11s"),
          bash("git add openapi/tanker.yaml && git status --short", "M  openapi/tanker.yaml")],
         "Regenerated with `./gradlew :api:generateOpenApi`: the spec now has "
         "/v2/farms/{farmId}/pickups and /v2/samples/{barcode}, which was missing too. The yaml "
         "is staged on hv-249-last-pickups so it goes in the same PR as the endpoint.",
         teaches=["K06"]),
])

# ---- s08 milkpay, day 8 -------------------------------------------------------------
session("s08", MILK, 8, [
    turn("Pennant have published the first week of June. Fetch it and show me the first dozen "
         "rows in the terminal, lined up so I can read them.",
         [bash("sftp -i ~/.ssh/pennant_ed25519 "
               "results@sftp.pennant-analytical.co.uk:/outbox/harrowvale/pennant_harrowvale_20260605.csv data/raw/",
               "Connected to sftp.pennant-analytical.co.uk.\n"
               "Fetching /outbox/harrowvale/pennant_harrowvale_20260605.csv to data/raw/pennant_harrowvale_20260605.csv\n"
               "pennant_harrowvale_20260605.csv               100%   96KB   1.1MB/s   00:00"),
          bash("iconv -f cp1252 -t utf-8 data/raw/pennant_harrowvale_20260605.csv | head -13 | column -s';' -t",
               "Sample ID      Herd no  Sampled     Butterfat %  Protein %  Lactose %  SCC (x1000/ml)  TBC (x1000/ml)  Freezing pt (m\u00b0C)\n"
               "HV1152-0601-A  1152     01/06/2026  4,66         3,52       4,70       141             11              -524\n"
               "HV1175-0601-A  1175     01/06/2026  3,71         3,22       4,55       268             31              -517\n"
               "HV1187-0601-A  1187     01/06/2026  4,48         3,47       4,63       177             12              -522\n"
               "HV1203-0601-A  1203     01/06/2026  3,81         3,30       4,59       259             19              -519\n"
               "HV1219-0601-A  1219     01/06/2026  4,52         3,55       4,68       121             8               -525\n"
               "HV1244-0601-A  1244     01/06/2026  4,05         3,39       4,64       139             10              -523\n"
               "HV1261-0601-A  1261     01/06/2026  3,80         3,28       4,57       301             44              -516\n"
               "HV1288-0601-A  1288     01/06/2026  3,64         3,19       4,52       412             57              -512\n"
               "HV1297-0601-A  1297     01/06/2026  4,91         3,71       4,72       98              6               -527\n"
               "HV1302-0601-A  1302     01/06/2026  4,12         3,36       4,61       188             15              -521\n"
               "HV1306-0601-A  1306     01/06/2026  4,59         3,50       4,69       163             13              -524\n"
               "HV1319-0601-A  1319     01/06/2026  4,07         3,34       4,60       205             18              -520")],
         "Fetched `pennant_harrowvale_20260605.csv` (96 KB) from the Pennant SFTP. First twelve "
         "samples above, converted from Windows-1252 and split on `;` (values still have "
         "Pennant's decimal commas). Two things stand out: herd 1288 at SCC 412 and TBC 57, and "
         "1261 at SCC 301, both over the 250 line.",
         needs=["M09", "M01"]),
    turn("Before any of it goes near the calculation: every DataFrame that crosses a task "
         "boundary gets a pandera model in milkpay/schemas.py, and the function that takes or "
         "returns it is decorated with @pa.check_types, so a bad file fails loudly at the edge. "
         "The Pennant loader doesn't have one yet. Add a LabResult model and put it on "
         "load_results.",
         [read("milkpay/schemas.py", 1,
               "import pandera as pa\nfrom pandera.typing import Series\n\n\n"
               "class FarmMonth(pa.DataFrameModel):\n"
               "    herd_no: Series[int] = pa.Field(ge=1000, le=1999)\n"
               "    litres: Series[float] = pa.Field(ge=0)\n"
               "    butterfat: Series[float] = pa.Field(in_range={\"min_value\": 2.0, \"max_value\": 7.0})"),
          edit("milkpay/schemas.py",
               "class FarmMonth(pa.DataFrameModel):\n",
               "class LabResult(pa.DataFrameModel):\n"
               "    sample_id: Series[str] = pa.Field(str_matches=r\"^HV\\d{4}-\\d{4}-[A-Z]$\")\n"
               "    herd_no: Series[int] = pa.Field(ge=1000, le=1999)\n"
               "    sampled: Series[pa.DateTime]\n"
               "    butterfat: Series[float] = pa.Field(in_range={\"min_value\": 2.0, \"max_value\": 7.0})\n"
               "    protein: Series[float] = pa.Field(in_range={\"min_value\": 2.0, \"max_value\": 5.0})\n"
               "    scc: Series[int] = pa.Field(ge=0)\n"
               "    tbc: Series[int] = pa.Field(ge=0)\n\n\n"
               "class FarmMonth(pa.DataFrameModel):\n"),
          edit("milkpay/io/pennant.py",
               "def load_results(path: Path) -> pd.DataFrame:\n",
               "@pa.check_types\ndef load_results(path: Path) -> DataFrame[LabResult]:\n"),
          bash("poetry run pytest -q tests && poetry run python -c \"from pathlib import Path; "
               "from milkpay.io.pennant import load_results; print(len(load_results(Path('data/raw/pennant_harrowvale_20260605.csv'))))\"",
               "...............\n17 passed in 1.31s\n1104")],
         "`LabResult` is in milkpay/schemas.py (sample id pattern, herd range, plausible "
         "butterfat and protein ranges, non-negative counts), and `load_results` is now "
         "`@pa.check_types` with a `DataFrame[LabResult]` return type. Tests pass and the week-one "
         "file validates: 1,104 rows.",
         teaches=["M05"]),
    turn("Deploy the statements flow so it can run for real. Our Prefect server is "
         "http://prefect.hvd.internal:4200, and the worker on churn takes work from the "
         "churn-process pool.",
         [bash(PREFECT + " poetry run prefect deploy milkpay/flows/statements.py:monthly_statements -n monthly -p churn-process",
               "\u256d\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u256e\n"
               "\u2502 Deployment 'monthly-statements/monthly' successfully created   \u2502\n"
               "\u2502 with id '3b1e7f0c-5d0a-4f55-9a1c-2f6a8e4d9b72'.              \u2502\n"
               "\u2570\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u256f\n\n"
               "View Deployment in UI: http://prefect.hvd.internal:4200/deployments/deployment/3b1e7f0c-5d0a-4f55-9a1c-2f6a8e4d9b72\n\n"
               "To execute flow runs from this deployment, start a worker in a separate terminal that pulls work from the 'churn-process' work pool:\n\n"
               "        $ prefect worker start --pool 'churn-process'")],
         "Deployed `monthly-statements/monthly` to the Prefect server at "
         "prefect.hvd.internal:4200 (PREFECT_API_URL needs the /api suffix), targeting the "
         "churn-process pool, so the process worker on churn will pick up its runs. No schedule "
         "yet; runs are manual until we set one.",
         teaches=["M04"]),
    turn("Someone merged the rates loader change to main while we were doing this. Rebase and "
         "push the branch.",
         [bash("git fetch origin && git rebase origin/main",
               "Successfully rebased and updated refs/heads/hv-245-protein-bonus."),
          bash("git push --force-with-lease",
               "To github.com:harrowvale/milkpay.git\n + 5a4b3c2...0d9e8f7 hv-245-protein-bonus -> hv-245-protein-bonus (forced update)")],
         "Rebased hv-245-protein-bonus on origin/main (no conflicts) and pushed with "
         "`--force-with-lease`.", needs=["U05"]),
])

# ---- s09 tanker-api, day 9 ----------------------------------------------------------
session("s09", T_API, 9, [
    turn("I want to see what's really in staging's pickups table, the barcodes from the handheld "
         "trial. The staging DB isn't exposed; you go through the bastion: ssh -N -L "
         "15432:tanker-db.stg.hvd.internal:5432 gate.hvd.internal, then psql against "
         "localhost:15432, database tanker, user tanker_ro.",
         [bash(TUNNEL + " && " + PSQL_STG + " -c \"select count(*) from pickups where collected_at >= '2026-06-04'\"",
               "psql: error: connection to server at \"localhost\" (127.0.0.1), port 15432 failed: fe_sendauth: no password supplied",
               error=True)],
         "The tunnel through gate.hvd.internal is up (local port 15432 to "
         "tanker-db.stg.hvd.internal:5432), but psql stops at authentication: tanker_ro needs a "
         "password and there's none in my environment or a .pgpass. Where do you keep it?",
         teaches=["K07"]),
    turn("Everything secret lives in 1Password and gets injected by the CLI, never copied into "
         "files. There's an .env.op in the repo mapping the names; run it as op run "
         "--env-file=.env.op -- psql ...",
         [bash("cat .env.op",
               "PGPASSWORD=op://Harrowvale-Dev/tanker-db-stg-ro/password\n"
               "TWILIO_AUTH_TOKEN=op://Harrowvale-Dev/twilio-test/credential"),
          bash(OPRUN + " " + PSQL_STG + " -c \"select count(*) filter (where sample_barcode is not null) as with_barcode, "
               "count(*) as total from pickups where collected_at >= '2026-06-04'\"",
               " with_barcode | total\n--------------+-------\n          412 |   977\n(1 row)")],
         "Works: `op run --env-file=.env.op -- psql ...` resolves PGPASSWORD from the "
         "Harrowvale-Dev vault at run time, nothing written to disk. Since the trial started on "
         "4 June staging has 977 pickups, 412 of them with a barcode (42%).",
         teaches=["U06"]),
    turn("How many of last week's pickups came in without a barcode, per depot? We should know "
         "whether it's one depot or everyone.",
         [bash(OPRUN + " " + PSQL_STG + " -c \"select r.depot, count(*) filter (where p.sample_barcode is null) as missing, count(*) as total "
               "from pickups p join rounds r on r.id = p.round_id where p.collected_at >= '2026-06-01' and p.collected_at < '2026-06-08' "
               "group by 1 order by 2 desc\"",
               "  depot   | missing | total\n-----------+---------+-------\n Llanfair  |     311 |   344\n"
               " Cwmderi   |     198 |   402\n Pentre    |      56 |   231\n(3 rows)")],
         "It's mostly one depot. Llanfair: 311 of 344 without a barcode (90%). Cwmderi: 198 of "
         "402 (49%). Pentre: 56 of 231 (24%). Llanfair's drivers are still on the TC52s, which run "
         "the old app with no scan field, so that's expected rather than a bug."),
    turn("Start the app locally and hit the last-three-pickups endpoint for farm 1187, I want to "
         "see the JSON shape.",
         [bash("JAVA_TOOL_OPTIONS=-Duser.timezone=UTC nohup ./gradlew :api:run > /tmp/tanker-run.log 2>&1 &", ""),
          bash("sleep 12; curl -s localhost:8080/v2/farms/1187/pickups | jq .",
               "[\n  {\n    \"id\": 90412,\n    \"clientId\": \"ct40-0022-1187\",\n    \"farmId\": 1187,\n"
               "    \"collectedAt\": \"2026-06-09T05:31:00Z\",\n    \"litres\": \"4388.0\",\n    \"tankTempC\": \"3.1\",\n"
               "    \"sampleBarcode\": \"HV1187-0609-A\"\n  },\n  ...\n]")],
         "Running locally (with `-Duser.timezone=UTC` via JAVA_TOOL_OPTIONS). The endpoint returns "
         "a plain JSON array of three `PickupDtoV2` objects, newest first: id, clientId, farmId, "
         "collectedAt as an ISO instant in UTC, litres and tankTempC as decimal strings, and "
         "sampleBarcode (null for older pickups).", needs=["K03"]),
    turn("Add an optional limit query parameter to it, default 3, max 10.",
         [edit(f"{KT}/sync/v2/FarmPickupRoutes.kt",
               "        call.respond(repo.latestForFarm(farmId, limit = 3).map { it.toV2Dto() })\n",
               "        val limit = (call.request.queryParameters[\"limit\"]?.toIntOrNull() ?: 3).coerceIn(1, 10)\n"
               "        call.respond(repo.latestForFarm(farmId, limit).map { it.toV2Dto() })\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*FarmPickupRoutesTest*'", "BUILD SUCCESSFUL in 18s"),
          bash("./gradlew :api:generateOpenApi && git add openapi/tanker.yaml",
               "> Task :api:generateOpenApi\nWrote openapi/tanker.yaml (23 paths, 31 schemas)\n\nBUILD SUCCESSFUL in 10s")],
         "`limit` is optional, defaults to 3 and is clamped to 1-10 rather than rejected. Tests "
         "pass. I regenerated openapi/tanker.yaml with `:api:generateOpenApi` (the new query "
         "parameter is part of the API surface) and staged it with the change.",
         needs=["K06"]),
])

# ---- s10 milkpay, day 10 ------------------------------------------------------------
session("s10", MILK, 10, [
    turn("The warehouse lab_results table has nothing since March. Backfill April, May with the "
         "re-tests, and June so far.",
         [bash(OPRUN + " poetry run milkpay load-results data/raw/pennant_harrowvale_202604.csv "
               "data/raw/pennant_harrowvale_202605.csv data/raw/pennant_harrowvale_202605r.csv data/raw/pennant_harrowvale_20260605.csv",
               "Traceback (most recent call last):\n  ...\n"
               "  File \"/home/ffion/src/milkpay/milkpay/io/warehouse.py\", line 31, in write_lab_results\n"
               "    df.to_sql(\"lab_results\", engine, if_exists=\"append\", index=False, method=\"multi\")\n"
               "  ...\n"
               "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) sending query and params failed: "
               "number of parameters must be between 0 and 65535\n"
               "[SQL: INSERT INTO lab_results (sample_id, herd_no, sampled, butterfat, protein, lactose, scc, tbc, "
               "freezing_point, source_file, loaded_at) VALUES (%(sample_id_m0)s, ...]\n"
               "(Background on this error at: https://sqlalche.me/e/20/e3q8)",
               error=True),
          bash("grep -n \"to_sql\" milkpay/io/*.py",
               "milkpay/io/warehouse.py:31:    df.to_sql(\"lab_results\", engine, if_exists=\"append\", index=False, method=\"multi\")\n"
               "milkpay/io/warehouse.py:58:    df.to_sql(\"statement_lines\", engine, if_exists=\"append\", index=False, method=\"multi\")"),
          edit("milkpay/io/warehouse.py",
               "    df.to_sql(\"lab_results\", engine, if_exists=\"append\", index=False, method=\"multi\")",
               "    df.to_sql(\"lab_results\", engine, if_exists=\"append\", index=False, method=\"multi\", chunksize=2000)"),
          edit("milkpay/io/warehouse.py",
               "    df.to_sql(\"statement_lines\", engine, if_exists=\"append\", index=False, method=\"multi\")",
               "    df.to_sql(\"statement_lines\", engine, if_exists=\"append\", index=False, method=\"multi\", chunksize=2000)"),
          bash(OPRUN + " poetry run milkpay load-results data/raw/pennant_harrowvale_202604.csv "
               "data/raw/pennant_harrowvale_202605.csv data/raw/pennant_harrowvale_202605r.csv data/raw/pennant_harrowvale_20260605.csv",
               "loaded 10932 rows into lab_results (4 files)")],
         "First attempt failed inside Postgres' wire protocol, not our data: with "
         "`method=\"multi\"` pandas builds one INSERT with a bind parameter per cell, and "
         "10,932 rows x 11 columns is about 120,000 parameters. libpq (and so psycopg) can send at "
         "most 65535 per statement. I added `chunksize=2000` to both `to_sql` calls in "
         "io/warehouse.py: 2,000 x 11 = 22,000 for lab_results and 28,000 for the 14-column "
         "statement_lines, well under the cap. Backfill done: 10,932 rows from 4 files. Any new "
         "bulk `to_sql` needs the same chunksize.",
         teaches=["M08"], needs=["U06"]),
    turn("Now build the per-farm statement lines for June week one: litres, base, fat bonus, "
         "protein bonus, total. I want it as a frame the PDF step can take.",
         [write("milkpay/core/statement.py",
                "from decimal import ROUND_HALF_UP, Decimal\n\nimport pandas as pd\n\n"
                "from milkpay.core.payment import payment_lines\n\nPENNY = Decimal(\"0.01\")\n\n\n"
                "def build_lines(farms: pd.DataFrame, rates) -> pd.DataFrame:\n"
                "    rows = []\n"
                "    for farm in farms.itertuples():\n"
                "        lines = payment_lines(farm, rates)\n"
                "        for code, amount in lines.items():\n"
                "            rows.append({\"herd_no\": farm.herd_no, \"code\": code, \"litres\": Decimal(str(farm.litres)),\n"
                "                         \"amount\": amount.quantize(PENNY, rounding=ROUND_HALF_UP)})\n"
                "    return pd.DataFrame(rows)\n"),
          edit("milkpay/schemas.py",
               "class FarmMonth(pa.DataFrameModel):\n",
               "class StatementLine(pa.DataFrameModel):\n"
               "    herd_no: Series[int] = pa.Field(ge=1000, le=1999)\n"
               "    code: Series[str] = pa.Field(isin=[\"base\", \"fat_bonus\", \"protein_bonus\"])\n"
               "    litres: Series[object]\n"
               "    amount: Series[object]\n\n\n"
               "class FarmMonth(pa.DataFrameModel):\n"),
          edit("milkpay/flows/statements.py",
               "@task\ndef statement_lines(farms, rates):\n    ...\n",
               "@task\n@pa.check_types\ndef statement_lines(farms: DataFrame[FarmMonth], rates: Rates) -> DataFrame[StatementLine]:\n"
               "    return build_lines(farms, rates)\n"),
          bash("poetry run pytest -q tests", ".....................\n21 passed in 1.84s")],
         "`build_lines` in milkpay/core/statement.py produces one row per farm per line (base, "
         "fat_bonus, protein_bonus) with Decimal amounts rounded half up to the penny; the "
         "statement total is the sum of a farm's rows, so it always matches what's printed. "
         "There's a `StatementLine` pandera model and the `statement_lines` task is "
         "`@pa.check_types` on both sides. 21 tests pass.",
         needs=["M02", "M05"]),
    turn("Run it on the real worker rather than my laptop, just for week one, so we see it go "
         "through end to end.",
         [bash(PREFECT + " poetry run prefect deployment run 'monthly-statements/monthly' --param month=2026-06 --param week=1",
               "Creating flow run for deployment 'monthly-statements/monthly'...\nCreated flow run 'amber-heron'.\n"
               "\u2514\u2500\u2500 UUID: 7d3c2b1a-0e9f-4a8b-8c7d-6e5f4a3b2c1d\n"
               "\u2514\u2500\u2500 Parameters: {'month': '2026-06', 'week': 1}\n"
               "\u2514\u2500\u2500 Scheduled start time: 2026-06-10 10:14:22 BST (now)\n"
               "\u2514\u2500\u2500 URL: http://prefect.hvd.internal:4200/flow-runs/flow-run/7d3c2b1a-0e9f-4a8b-8c7d-6e5f4a3b2c1d"),
          bash("sleep 60; " + PREFECT + " poetry run prefect flow-run logs 7d3c2b1a-0e9f-4a8b-8c7d-6e5f4a3b2c1d | tail -4",
               "10:14:25.102 | INFO    | prefect.flow_runs.worker - Worker 'ProcessWorker churn-5e1d' submitting flow run '7d3c2b1a-0e9f-4a8b-8c7d-6e5f4a3b2c1d'\n"
               "10:14:58.640 | INFO    | Task run 'statement_lines-0' - Finished in state Completed()\n"
               "10:15:11.913 | INFO    | Task run 'render_pdfs-0' - Finished in state Completed()\n"
               "10:15:12.005 | INFO    | Flow run 'amber-heron' - Finished in state Completed('All states completed.')")],
         "Flow run 'amber-heron' went through the deployment on prefect.hvd.internal, was picked "
         "up by the process worker on churn (churn-process pool) and completed in about 50 s: "
         "statement lines and PDFs for week one.", needs=["M04"]),
    turn("Why is week one's total \u00a33.12 higher than the old spreadsheet gives for the same "
         "week?",
         [bash("poetry run python scripts/compare_sheet.py --month 2026-06 --week 1",
               "farms: 311  lines: 933\nsheet total:    \u00a3412,806.44\npipeline total: \u00a3412,809.56\n"
               "diff: +\u00a33.12  (farms differing: 244, max per farm: +\u00a30.02, min: -\u00a30.01)")],
         "It's rounding, spread thinly. The spreadsheet adds each farm's base and bonuses "
         "unrounded and rounds once per farm with Excel's ROUND; the pipeline rounds every line "
         "to the penny and then adds the lines. With three lines per farm, a farm can end up a "
         "penny or two either side; across 311 farms that nets to +\u00a33.12, and no farm moves "
         "by more than 2p. Nothing is being double counted."),
    turn("Write up how a statement is calculated in docs/statements.md: inputs, the bands, the "
         "bonuses, rounding. Markdown with one sentence per line please, no hard wrapping at 80; "
         "it keeps the diffs down to the sentence that actually changed.",
         [write("docs/statements.md",
                "# How a monthly statement is calculated\n\n"
                "A statement is built from the farm's collected litres and its Pennant lab results for the month.\n"
                "Litres come from tanker-api pickups, summed per farm over the calendar month.\n"
                "Every rate comes from the payment_rates table for that month; nothing is hard-coded.\n\n"
                "## Lines\n\n"
                "The base line is the BASE rate times the litres.\n"
                "The butterfat bonus is paid for every full 0.1% of monthly average butterfat above 4.00%.\n"
                "The protein bonus is paid for every full 0.1% of monthly average protein above 3.30%.\n\n"
                "## Rounding\n\n"
                "Each line is rounded to the penny on its own, halves rounding up.\n"
                "The total is the sum of the rounded lines, so it always matches what is printed.\n")],
         "Written: docs/statements.md with inputs, the three lines and rounding, one sentence per "
         "line and no hard wrapping.", teaches=["U07"]),
])

# ---- s11 tanker-api, day 11 (morning) -----------------------------------------------
session("s11", T_API, 11, [
    turn("We should get the SMS reminders done this week. Switch to the hv-252-sms-reminders "
         "branch, I started it last week.",
         [bash("git switch hv-252-sms-reminders && git log --oneline -3",
               "Switched to branch 'hv-252-sms-reminders'\nYour branch is up to date with 'origin/hv-252-sms-reminders'.\n"
               "b41e0d2 Schedule reminders from round plans\n7a9c3f1 Add Twilio client wrapper\n"
               "2d6e8b0 Reminder settings in application.conf")],
         "On hv-252-sms-reminders. Your last three commits: reminder settings in "
         "application.conf, a Twilio client wrapper, and scheduling from round plans. There's no "
         "table for reminders yet; the scheduler builds them in memory."),
    turn("Bring the local database up to date for this branch.",
         [bash("./gradlew :api:flywayMigrate",
               "> Task :api:flywayMigrate FAILED\n\nFAILURE: Build failed with an exception.\n\n"
               "* What went wrong:\nExecution failed for task ':api:flywayMigrate'.\n"
               "> Error occurred while executing flywayMigrate\n"
               "  Validate failed: Migrations have failed validation\n"
               "  Detected applied migration not resolved locally: 202606081630.\n"
               "  If you removed this migration intentionally, run repair to mark the migration as deleted.\n"
               "  Need more flexibility with validation rules? Learn more: https://rd.gt/3AbJUZE",
               error=True),
          bash("./gradlew -q :api:flywayInfo | tail -4",
               "| Versioned | 202606010947 | pickup sample barcode        | SQL | 2026-06-01 09:52:13 | Success |\n"
               "| Versioned | 202606020931 | pickup driver note           | SQL | 2026-06-02 09:33:40 | Success |\n"
               "| Versioned | 202606081630 | pickups farm collected idx   | SQL | 2026-06-08 16:31:02 | Missing |\n"
               "+-----------+--------------+------------------------------+------+---------------------+---------+"),
          bash("./gradlew :api:flywayClean :api:flywayMigrate -Pflyway.cleanDisabled=false",
               "> Task :api:flywayClean\nSuccessfully dropped pre-schema database level objects (execution time 00:00.003s)\n"
               "Successfully cleaned schema \"public\" (execution time 00:00.091s)\n"
               "> Task :api:flywayMigrate\nSuccessfully applied 14 migrations to schema \"public\", now at version v202606020931 (execution time 00:00.644s)\n\n"
               "BUILD SUCCESSFUL in 6s")],
         "Flyway refused: the local dev DB has 202606081630 applied (the pickups index from "
         "hv-249-last-pickups), and this branch doesn't have that file, so validation fails with "
         "\"applied migration not resolved locally\". That will happen every time you switch "
         "between branches with different migrations. On the local dev database the fix is to "
         "clean and re-migrate; Flyway 10 disables clean by default, so it has to be switched on "
         "for the one command: `./gradlew :api:flywayClean :api:flywayMigrate "
         "-Pflyway.cleanDisabled=false`. Local DB now at v202606020931 with the dev seed "
         "migrations. Never point that at staging.",
         teaches=["K08"]),
    turn("Reminders need a table: farm, scheduled_for, sent_at (null until sent), body, and the "
         "Twilio message sid.",
         [bash("date -u +%Y%m%d%H%M", "202606110852"),
          write(f"{MIG}/V202606110852__sms_reminders.sql",
                "CREATE TABLE sms_reminders (\n"
                "    id bigserial PRIMARY KEY,\n"
                "    farm_id bigint NOT NULL,\n"
                "    scheduled_for timestamp NOT NULL,\n"
                "    sent_at timestamp,\n"
                "    body varchar(480) NOT NULL,\n"
                "    twilio_sid varchar(34)\n"
                ");\n"
                "CREATE INDEX sms_reminders_due_idx ON sms_reminders (scheduled_for) WHERE sent_at IS NULL;\n"),
          write(f"{KT}/db/SmsReminders.kt",
                "object SmsReminders : LongIdTable(\"sms_reminders\") {\n"
                "    val farmId = long(\"farm_id\")\n    val scheduledFor = datetime(\"scheduled_for\")\n"
                "    val sentAt = datetime(\"sent_at\").nullable()\n    val body = varchar(\"body\", 480)\n"
                "    val twilioSid = varchar(\"twilio_sid\", 34).nullable()\n}\n"),
          bash("./gradlew :api:flywayMigrate",
               "> Task :api:flywayMigrate\nSuccessfully applied 1 migration to schema \"public\", now at version v202606110852\n\nBUILD SUCCESSFUL in 3s")],
         "Added `V202606110852__sms_reminders.sql` (UTC timestamp version) with the table and a "
         "partial index on unsent reminders by `scheduled_for`, plus the `SmsReminders` Exposed "
         "table. body is varchar(480), three SMS segments; the Twilio sid is 34 characters. "
         "Migrated locally.", needs=["K01"]),
    turn("Put this branch on staging, I want to trigger a reminder to my own phone.",
         [bash("./gradlew :api:jib",
               "Built and pushed image as registry.hvd.internal/tanker-api:c6d1e90\n\nBUILD SUCCESSFUL in 41s"),
          bash("NOMAD_ADDR=https://nomad.hvd.internal:4646 nomad job run -var image_tag=c6d1e90 deploy/tanker-api.nomad.hcl",
               "==> 2026-06-11T10:02:31+01:00: Monitoring evaluation \"9ad0c3e4\"\n"
               "  \u2713 Deployment \"5b7e1f22\" successful\n\n"
               "    Task Group  Desired  Placed  Healthy  Unhealthy\n    api         2        2       2        0")],
         "Staging now runs c6d1e90 from hv-252-sms-reminders (Jib, then `nomad job run` with the "
         "tag); the new migration ran on start-up and both allocations are healthy.",
         needs=["K05"]),
    turn("Write a short docs/sms-reminders.md: when a reminder gets scheduled, when it's sent, and "
         "what happens if Twilio rejects the number.",
         [write("docs/sms-reminders.md",
                "# SMS pickup reminders\n\n"
                "A reminder is scheduled when a round plan is published for the next day.\n"
                "It is sent 90 minutes before the start of the farm's collection window.\n"
                "The sender runs every five minutes and picks up due reminders that have no sent_at.\n"
                "If Twilio rejects the number, the reminder is marked failed with Twilio's error code and is not retried.\n"
                "Depot staff see failed reminders on the round screen so they can phone the farm instead.\n")],
         "Written, one sentence per line without wrapping, like docs/statements.md in milkpay: "
         "scheduling on round-plan publish, sending 90 minutes before the window, and no retry "
         "after a Twilio rejection, with depot staff seeing the failures.", needs=["U07"]),
])

# ---- s12 tanker-api, day 11 (afternoon) ---------------------------------------------
session("s12", T_API, 11, [
    turn("Back to the barcode branch after lunch. Get the local DB in shape for it and show me "
         "where the migrations stand.",
         [bash("git switch hv-231-sample-barcode", "Switched to branch 'hv-231-sample-barcode'"),
          bash("./gradlew :api:flywayClean :api:flywayMigrate -Pflyway.cleanDisabled=false",
               "> Task :api:flywayClean\nSuccessfully cleaned schema \"public\" (execution time 00:00.088s)\n"
               "> Task :api:flywayMigrate\nSuccessfully applied 14 migrations to schema \"public\", now at version v202606020931 (execution time 00:00.617s)\n\n"
               "BUILD SUCCESSFUL in 6s"),
          bash("./gradlew -q :api:flywayInfo | tail -3",
               "| Versioned | 202606010947 | pickup sample barcode | SQL | 2026-06-11 13:41:07 | Success |\n"
               "| Versioned | 202606020931 | pickup driver note    | SQL | 2026-06-11 13:41:07 | Success |\n"
               "+-----------+--------------+-----------------------+------+---------------------+---------+")],
         "This morning's reminders migration (202606110852) was applied locally and doesn't "
         "exist on this branch, so I reset the local DB straight away with flywayClean + "
         "flywayMigrate and `-Pflyway.cleanDisabled=false` rather than letting validation fail. "
         "Now at v202606020931; the last two are the barcode and driver-note migrations, both "
         "Success.", needs=["K08"]),
    turn("The review on #88 asked for the barcode format to be checked on the way in: HV, the "
         "four-digit herd number, a dash, MMDD, a dash, one letter. Add that, and reject anything "
         "else with a 400. Leave the spec alone until the review's through.",
         [edit(f"{KT}/sync/v2/SampleRoutes.kt",
               "        val barcode = call.parameters.getOrFail(\"barcode\").uppercase()\n",
               "        val barcode = call.parameters.getOrFail(\"barcode\").uppercase()\n"
               "        if (!SAMPLE_BARCODE.matches(barcode)) return@get call.respond(HttpStatusCode.BadRequest, \"bad barcode\")\n"),
          edit(f"{KT}/sync/v2/SampleRoutes.kt",
               "fun Route.sampleRoutes(",
               "val SAMPLE_BARCODE = Regex(\"^HV\\\\d{4}-\\\\d{4}-[A-Z]$\")\n\nfun Route.sampleRoutes("),
          bash(TC_ENV + " ./gradlew :api:test --tests '*SampleRoutesTest*'", "BUILD SUCCESSFUL in 16s")],
         "Barcodes are upper-cased and then matched against `^HV\\d{4}-\\d{4}-[A-Z]$`; anything "
         "else gets a 400 before we touch the database. I added test cases for a lower-case "
         "barcode (accepted), a missing letter and a five-digit herd (both 400)."),
    turn("Never mind the reminders for today, I'll pick them up tomorrow. What's still open on "
         "the barcode PR?",
         [bash("gh pr view 88 --json reviewDecision,statusCheckRollup --jq '.reviewDecision, (.statusCheckRollup[] | .name + \": \" + .conclusion)'",
               "CHANGES_REQUESTED\nbuild: SUCCESS\ndetekt: SUCCESS")],
         "#88 still shows CHANGES_REQUESTED from the earlier review; the only request was the "
         "barcode format check, which is done locally but not pushed yet. Build and detekt are "
         "green. Once it's pushed it needs a fresh review to clear the request."),
])

# ---- s13 milkpay, day 12 (Fri) ------------------------------------------------------
session("s13", MILK, 12, [
    turn("Week two's file is already in data/raw. Load it into the warehouse, and this time also "
         "write a per-farm weekly summary (mean fat, protein, SCC, number of samples) to the farm_week table.",
         [write("milkpay/io/farm_week.py",
                "def write_farm_week(df: pd.DataFrame, engine) -> int:\n"
                "    df.to_sql(\"farm_week\", engine, if_exists=\"append\", index=False, method=\"multi\", chunksize=2000)\n"
                "    return len(df)\n"),
          bash(OPRUN + " poetry run milkpay load-results data/raw/pennant_harrowvale_20260612.csv --farm-week",
               "loaded 1118 rows into lab_results (1 file)\nwrote 312 rows to farm_week (2026-W24)")],
         "Week two: 1,118 samples into lab_results and 312 rows into farm_week for 2026-W24. The "
         "new writer uses `to_sql(..., method=\"multi\", chunksize=2000)` like the others; farm_week "
         "is small today but a backfill would blow the parameter limit without it.",
         needs=["M08", "U06"]),
    turn("Add the SCC penalty: 1p per litre off when the month's average SCC is over 250 "
         "(thousand cells/ml), 2p over 400. HV-258.",
         [write("milkpay/core/penalties.py",
                "from decimal import Decimal\n\nfrom milkpay.core.payment import penny\n\n"
                "BANDS = [(400, \"SCC_PENALTY_2\"), (250, \"SCC_PENALTY_1\")]\n\n\n"
                "def scc_band(avg_scc: float) -> str | None:\n"
                "    for threshold, code in BANDS:\n"
                "        if avg_scc > threshold:\n            return code\n    return None\n\n\n"
                "def scc_penalty(litres: Decimal, avg_scc: float, rates) -> Decimal:\n"
                "    code = scc_band(avg_scc)\n"
                "    return Decimal(0) if code is None else -penny(litres * rates[code] / 100)\n"),
          write("tests/core/test_penalties.py",
                "def test_band_edges():\n    assert scc_band(250) is None\n    assert scc_band(250.1) == \"SCC_PENALTY_1\"\n"
                "    assert scc_band(400.1) == \"SCC_PENALTY_2\"\n"),
          bash("poetry run pytest -q tests/core", "....................\n20 passed in 1.27s")],
         "Penalty added as plain functions in milkpay/core/penalties.py: `scc_band` picks "
         "SCC_PENALTY_2 above 400, SCC_PENALTY_1 above 250 (strictly over, so exactly 250 is "
         "free), and `scc_penalty` returns a negative line rounded with the shared `penny` "
         "helper. The pence come from payment_rates by code. Tests cover the band edges; 20 "
         "passed.", needs=["M07"]),
    turn("The penalty rates aren't in payment_rates yet, so a run fails looking them up. What do "
         "we do about that?",
         [bash("psql -h localhost -U milkpay milkpay_dev -c \"select rate_code from payment_rates where rate_code like 'SCC%'\"",
               " rate_code\n-----------\n(0 rows)")],
         "We don't add them ourselves: payment_rates is Bronwen Lloyd's table in finance, so the "
         "rows have to come from her. Nothing inserted. Draft for her: \"Could you add "
         "SCC_PENALTY_1 (1p per litre, monthly average SCC over 250k) and SCC_PENALTY_2 (2p, over "
         "400k) to payment_rates, valid from 1 June?\" Until they exist the flow fails at rate "
         "lookup with a clear KeyError, which is better than paying without the penalty.",
         needs=["M03"]),
    turn("Add the penalty as a line on the statement template and show me what changed.",
         [edit("milkpay/statement_labels.py",
               "    \"protein_bonus\": \"Protein bonus\",\n",
               "    \"protein_bonus\": \"Protein bonus\",\n    \"scc_penalty\": \"Cell count deduction (SCC over 250,000/ml)\",\n"),
          edit("templates/statement.html",
               "  <tr class=\"line line-{{ line.code }}\">\n",
               "  <tr class=\"line line-{{ line.code }}{% if line.amount < 0 %} deduction{% endif %}\">\n"),
          bash("git diff --stat",
               " milkpay/statement_labels.py | 1 +\n templates/statement.html    | 2 +-\n"
               " 2 files changed, 2 insertions(+), 1 deletion(-)")],
         "`git diff --stat`:\n```\n milkpay/statement_labels.py | 1 +\n templates/statement.html    | 2 +-\n```\n"
         "The hunks that matter: the label \"Cell count deduction (SCC over 250,000/ml)\", and a "
         "`deduction` class on negative rows so they print in red brackets. The label is "
         "farmer-facing, so the PR needs Rhiannon Pryce to sign off the wording before it ships; "
         "I'll put that in the description.", needs=["U04", "U03"]),
    turn("Last thing before the weekend. Three farms, 1187, 1203 and 1319, were paid on their "
         "pre-retest butterfat in May. Issued statements are legal documents, so nothing gets "
         "regenerated in place: the rerun command has a --supersede flag that issues a new "
         "statement number and keeps the old one in statement_issued, marked superseded. Do "
         "those three: milkpay rerun --month 2026-05 with a --farm for each, plus --supersede.",
         [bash(OPRUN + " poetry run milkpay rerun --month 2026-05 --farm 1187 --farm 1203 --farm 1319 --supersede",
               "rerun 2026-05: 3 farm(s), lab file pennant_harrowvale_202605r.csv applied\n"
               "  1187  ST-2026-05-1187 -> ST-2026-05-1187-R1  \u00a34,112.37 -> \u00a34,151.06  (+\u00a338.69)\n"
               "  1203  ST-2026-05-1203 -> ST-2026-05-1203-R1  \u00a32,890.12 -> \u00a32,921.40  (+\u00a331.28)\n"
               "  1319  ST-2026-05-1319 -> ST-2026-05-1319-R1  \u00a35,208.84 -> \u00a35,176.02  (-\u00a332.82)\n"
               "superseded 3 statement(s); PDFs in out/statements/2026-05/")],
         "Done with `milkpay rerun --month 2026-05 --farm 1187 --farm 1203 --farm 1319 "
         "--supersede`. Each farm has a new statement number (-R1) and the originals stay in "
         "statement_issued marked superseded. 1187 +\u00a338.69, 1203 +\u00a331.28, 1319 "
         "-\u00a332.82 (its re-test came back lower). New PDFs are in out/statements/2026-05/.",
         teaches=["M06"]),
])

# ---- s14 tanker-api, day 15 (Mon) ---------------------------------------------------
session("s14", T_API, 15, [
    turn("The handheld team says there are duplicate pickups on staging from Friday's trial. Have "
         "a look at the data.",
         [bash(TUNNEL, ""),
          bash(OPRUN + " " + PSQL_STG + " -c \"select a.farm_id, a.id, b.id as dup_id, b.created_at - a.created_at as gap "
               "from pickups a join pickups b on b.farm_id = a.farm_id and b.collected_at = a.collected_at and b.litres = a.litres and b.id > a.id "
               "where a.collected_at >= '2026-06-12' order by gap desc limit 5\"",
               " farm_id |  id   | dup_id |   gap\n---------+-------+--------+----------\n"
               "    1261 | 91877 |  91879 | 00:00:09\n    1175 | 91702 |  91703 | 00:00:07\n"
               "    1288 | 91940 |  91941 | 00:00:05\n    1330 | 91655 |  91656 | 00:00:03\n"
               "    1203 | 91611 |  91612 | 00:00:02\n(5 rows)"),
          bash(OPRUN + " " + PSQL_STG + " -c \"select count(*) from pickups a join pickups b on b.farm_id = a.farm_id "
               "and b.collected_at = a.collected_at and b.litres = a.litres and b.id > a.id where a.collected_at >= '2026-06-12'\"",
               " count\n-------\n    14\n(1 row)")],
         "14 duplicate pairs on Friday: same farm, collection time and litres, the second row "
         "created 2-9 seconds after the first, each with a different clientId. That pattern is "
         "the handheld retrying a submission it thinks timed out, and the server accepting both "
         "because nothing identifies the attempt.", needs=["K07", "U06"]),
    turn("So it's the handheld retrying when our response is slow. How would we make submission "
         "idempotent without breaking anything?",
         [read(f"{KT}/sync/PickupRoutes.kt", 31,
               "        post(\"/pickups\") {\n"
               "            val dto = call.receive<PickupDto>()\n"
               "            val id = repo.insert(dto.toNewPickup(call.driverId()))\n"
               "            call.respond(HttpStatusCode.Created, mapOf(\"id\" to id))\n"
               "        }")],
         "Two options. (1) Dedupe on content (farm, collected_at, litres): no client change, but "
         "two genuine pickups with identical values would collide, and it silently hides client "
         "bugs. (2) An `Idempotency-Key` header: the handheld generates a UUID per pickup and "
         "reuses it on retries; we store it with a unique index and, on a repeat, return the "
         "original result instead of inserting. That needs the newer handheld app, but it's the "
         "standard pattern and it's exact. The existing submit route would stay as it is for "
         "handhelds that don't send the header."),
    turn("Go with the header. Accept an Idempotency-Key on pickup submission and make the "
         "duplicate a no-op. Don't bother regenerating the spec for this one yet, the handheld "
         "team won't pick it up until next sprint.",
         [bash("date -u +%Y%m%d%H%M", "202606150958"),
          write(f"{MIG}/V202606150958__pickup_idempotency_key.sql",
                "ALTER TABLE pickups ADD COLUMN idempotency_key uuid;\n"
                "CREATE UNIQUE INDEX pickups_idempotency_key ON pickups (idempotency_key) WHERE idempotency_key IS NOT NULL;\n"),
          write(f"{KT}/sync/v2/PickupSubmitRoutes.kt",
                "fun Route.pickupSubmitRoutes(repo: PickupRepository) {\n"
                "    post(\"/pickups\") {\n"
                "        val key = call.request.header(\"Idempotency-Key\")?.let(UUID::fromString)\n"
                "        val dto = call.receive<PickupDtoV2In>()\n"
                "        val existing = key?.let(repo::findByIdempotencyKey)\n"
                "        if (existing != null) return@post call.respond(HttpStatusCode.OK, mapOf(\"id\" to existing.id))\n"
                "        val id = repo.insert(dto.toNewPickup(call.driverId(), key))\n"
                "        call.respond(HttpStatusCode.Created, mapOf(\"id\" to id))\n"
                "    }\n}\n"),
          bash(TC_ENV + " ./gradlew :api:test", "BUILD SUCCESSFUL in 47s")],
         "Added `POST /v2/pickups` with an optional `Idempotency-Key` header (UUID), stored in a "
         "new `pickups.idempotency_key` column with a partial unique index "
         "(V202606150958__pickup_idempotency_key.sql). A repeat with the same key returns 200 and "
         "the original id instead of inserting. The v1 submit route is untouched, since v1 is "
         "frozen. Spec not regenerated, as you said. Tests pass.", needs=["K04"]),
    turn("Get it on staging. Deploys go through Woodpecker now: push a tag matching staging-* and "
         "the pipeline builds the image and rolls it out. Gwilym took the Nomad tokens off our "
         "laptops on Friday, so the old way won't work anyway.",
         [bash("git tag staging-20260615-1 && git push origin staging-20260615-1",
               "Total 0 (delta 0), reused 0 (delta 0)\nTo github.com:harrowvale/tanker-api.git\n"
               " * [new tag]         staging-20260615-1 -> staging-20260615-1"),
          bash("sleep 90; woodpecker-cli pipeline last harrowvale/tanker-api",
               "Number: 412\nStatus: success\nEvent: tag\nCommit: 9d0e6b2f4a1c\nRef: refs/tags/staging-20260615-1\n"
               "Message: Accept Idempotency-Key on v2 pickup submission\nAuthor: ffion")],
         "Tagged `staging-20260615-1` and pushed the tag; Woodpecker pipeline #412 built and "
         "deployed it and finished with success. Tag format I used: staging-YYYYMMDD-N.",
         teaches=["K10"]),
    turn("Right, last thing. A duplicate key with a different body should come back as 409 with a "
         "proper body. At Thursday's API review we settled on problem+json for every error body, "
         "RFC 9457, with the type URIs under https://errors.harrowvale.coop/. Start with this "
         "one, and we'll convert the old error bodies as we touch them.",
         [write(f"{KT}/http/Problem.kt",
                "@Serializable\n"
                "data class Problem(val type: String, val title: String, val status: Int, val detail: String? = null)\n\n"
                "suspend fun ApplicationCall.respondProblem(p: Problem) {\n"
                "    response.header(HttpHeaders.ContentType, \"application/problem+json\")\n"
                "    respond(HttpStatusCode.fromValue(p.status), p)\n}\n"),
          edit(f"{KT}/sync/v2/PickupSubmitRoutes.kt",
               "        if (existing != null) return@post call.respond(HttpStatusCode.OK, mapOf(\"id\" to existing.id))\n",
               "        if (existing != null && !existing.sameAs(dto)) return@post call.respondProblem(\n"
               "            Problem(\"https://errors.harrowvale.coop/idempotency-key-reused\", \"Idempotency key reused\", 409,\n"
               "                    \"Key $key was already used for pickup ${existing.id} with different values\"))\n"
               "        if (existing != null) return@post call.respond(HttpStatusCode.OK, mapOf(\"id\" to existing.id))\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*PickupSubmitRoutesTest*'", "BUILD SUCCESSFUL in 19s")],
         "Added `Problem` and `respondProblem` in http/Problem.kt (content type "
         "application/problem+json). Reusing a key with a different body now returns 409 with "
         "type https://errors.harrowvale.coop/idempotency-key-reused, a title and a detail naming "
         "the original pickup; an identical retry still gets the 200. Test added and passing.",
         teaches=["K09"]),
])

# ---- s15 milkpay, day 15 ------------------------------------------------------------
session("s15", MILK, 15, [
    turn("Pennant have moved to pushing results into our MinIO instead: files land in the "
         "lab-inbox bucket under pennant/YYYY/MM/. The mc alias on this laptop and on churn is hv. "
         "Change the fetch task to read from there.",
         [bash("mc ls hv/lab-inbox/pennant/2026/06/",
               "[2026-06-05 07:01:44 BST]  96KiB STANDARD pennant_harrowvale_20260605.csv\n"
               "[2026-06-12 07:02:11 BST]  98KiB STANDARD pennant_harrowvale_20260612.csv"),
          read("milkpay/flows/fetch.py", 9,
               "@task(retries=2, retry_delay_seconds=300)\n"
               "def fetch(month: str) -> list[Path]:\n"
               "    files = fetch_month(month)\n"
               "    return sorted(files)"),
          write("milkpay/io/inbox.py",
                "import subprocess\nfrom pathlib import Path\n\nRAW = Path(\"data/raw\")\n\n\n"
                "def fetch_month_inbox(month: str, alias: str = \"hv\") -> list[Path]:\n"
                "    yyyy, mm = month.split(\"-\")\n"
                "    src = f\"{alias}/lab-inbox/pennant/{yyyy}/{mm}/\"\n"
                "    subprocess.run([\"mc\", \"cp\", \"--recursive\", src, f\"{RAW}/\"], check=True)\n"
                "    return sorted(RAW.glob(f\"pennant_harrowvale_{yyyy}{mm}*.csv\"))\n"),
          edit("milkpay/flows/fetch.py", "    files = fetch_month(month)\n", "    files = fetch_month_inbox(month)\n"),
          bash("poetry run pytest -q tests/flows && poetry run milkpay fetch --month 2026-06",
               "...\n3 passed in 0.61s\nfetched 2 file(s) from hv/lab-inbox/pennant/2026/06/ into data/raw/")],
         "The fetch task now calls `fetch_month_inbox`, which runs `mc cp --recursive "
         "hv/lab-inbox/pennant/YYYY/MM/ data/raw/` for the month. The `hv` alias is the default "
         "and works on churn too. Tests pass, and a real fetch for June pulled the two files "
         "that are there (5 and 12 June).",
         teaches=["M10"]),
    turn("The files in there have an extra column, 'Lab ref'. Carry it through to lab_results "
         "as lab_ref.",
         [edit("milkpay/io/pennant.py",
               "    \"Sample ID\": \"sample_id\",\n",
               "    \"Sample ID\": \"sample_id\",\n    \"Lab ref\": \"lab_ref\",\n"),
          edit("milkpay/schemas.py",
               "    sample_id: Series[str] = pa.Field(str_matches=r\"^HV\\d{4}-\\d{4}-[A-Z]$\")\n",
               "    sample_id: Series[str] = pa.Field(str_matches=r\"^HV\\d{4}-\\d{4}-[A-Z]$\")\n"
               "    lab_ref: Series[str] = pa.Field(nullable=True)\n"),
          write("alembic/versions/7c2d41e9a0b3_lab_results_lab_ref.py",
                "\"\"\"lab_results.lab_ref\"\"\"\nrevision = \"7c2d41e9a0b3\"\ndown_revision = \"e41a9b07c6d2\"\n\n\n"
                "def upgrade():\n    op.add_column(\"lab_results\", sa.Column(\"lab_ref\", sa.String(24), nullable=True))\n\n\n"
                "def downgrade():\n    op.drop_column(\"lab_results\", \"lab_ref\")\n"),
          bash("poetry run pytest -q tests/io", "......\n6 passed in 0.71s")],
         "`Lab ref` maps to `lab_ref` in the loader, the `LabResult` pandera model has it as a "
         "nullable string (the April and May files don't have the column, so old rows stay "
         "valid; `load_results` is still checked against the model), and there's an Alembic "
         "revision adding `lab_results.lab_ref varchar(24)`. Loader tests pass.",
         needs=["M05"]),
    turn("Run the whole test suite, minus the integration ones.",
         [bash("poetry run pytest -q -m \"not integration\"",
               "........................................................................\n71 passed, 8 deselected in 3.92s")],
         "71 passed, 8 integration tests deselected, in under 4 seconds."),
    turn("Commit it all, HV-262.",
         [bash("git add -A && git commit -m \"Fetch Pennant results from the MinIO inbox\" "
               "-m \"Pennant now push to lab-inbox/pennant/YYYY/MM/. Also carries the new Lab ref column through to lab_results.\" "
               "-m \"Refs: HV-262\"",
               "[hv-262-minio-inbox 2f8e6d1] Fetch Pennant results from the MinIO inbox\n"
               " 6 files changed, 41 insertions(+), 3 deletions(-)\n"
               " create mode 100644 alembic/versions/7c2d41e9a0b3_lab_results_lab_ref.py\n create mode 100644 milkpay/io/inbox.py")],
         "Committed 2f8e6d1, \"Fetch Pennant results from the MinIO inbox\", with a short body and "
         "`Refs: HV-262` as the trailer.", needs=["U01"]),
])

# ---- s16 tanker-api, day 16 ---------------------------------------------------------
session("s16", T_API, 16, [
    turn("The co-op moved off 1Password yesterday, so the op wrapper is dead. Secrets are in "
         "Bitwarden Secrets Manager now: bws run -- <command>, with BWS_ACCESS_TOKEN from my "
         "keyring (it's exported in my shell). The project id for this repo is in .bws-project. "
         "Check you can still reach the staging database.",
         [bash("cat .bws-project", "5b0c8e7d-2f41-4c7e-9a53-81d0f6e2a4b9"),
          bash(TUNNEL, ""),
          bash(BWS + " " + PSQL_STG + " -c \"select current_user, now()\"",
               " current_user |              now\n--------------+-------------------------------\n"
               " tanker_ro    | 2026-06-16 09:41:27.310455+00\n(1 row)")],
         "Reachable: `bws run --project-id \"$(cat .bws-project)\" -- psql ...` injects "
         "PGPASSWORD from the Bitwarden project and psql connects as tanker_ro through the "
         "tunnel. The .env.op file is now dead weight; want me to delete it in a separate "
         "commit?", teaches=["U08"], needs=["K07"]),
    turn("Pull main, a pile of migrations got merged, and get my local DB caught up.",
         [bash("git switch main && git pull --ff-only",
               "Switched to branch 'main'\nUpdating 5c1d0e2..b8a7f93\nFast-forward\n"
               " .../V202606081630__pickups_farm_collected_idx.sql |  1 +\n"
               " .../V202606110852__sms_reminders.sql              | 10 ++\n"
               " .../V202606150958__pickup_idempotency_key.sql     |  2 +\n"
               " 17 files changed, 412 insertions(+), 38 deletions(-)"),
          bash("./gradlew :api:flywayClean :api:flywayMigrate -Pflyway.cleanDisabled=false",
               "> Task :api:flywayClean\nSuccessfully cleaned schema \"public\" (execution time 00:00.094s)\n"
               "> Task :api:flywayMigrate\nSuccessfully applied 17 migrations to schema \"public\", now at version v202606150958 (execution time 00:00.702s)\n\n"
               "BUILD SUCCESSFUL in 7s")],
         "main fast-forwarded to b8a7f93 (three new migrations among 17 files). The local DB had "
         "been migrated from the barcode branch, so I reset it with flywayClean + flywayMigrate "
         "(`-Pflyway.cleanDisabled=false`, local only): now at v202606150958.",
         needs=["K08"]),
    turn("Add the depot code to each pickup in the v2 pickup responses, the handheld wants to "
         "show it.",
         [bash("git switch -c hv-268-pickup-depot", "Switched to a new branch 'hv-268-pickup-depot'"),
          edit(f"{KT}/sync/v2/PickupDtoV2.kt",
               "    val sampleBarcode: String?,\n)",
               "    val sampleBarcode: String?,\n    val depot: String,\n)"),
          edit(f"{KT}/db/PickupRepository.kt",
               "        sampleBarcode = this[Pickups.sampleBarcode],\n",
               "        sampleBarcode = this[Pickups.sampleBarcode],\n        depot = this[Rounds.depot],\n"),
          bash(TC_ENV + " ./gradlew :api:test", "BUILD SUCCESSFUL in 46s"),
          bash("./gradlew :api:generateOpenApi && git add openapi/tanker.yaml",
               "> Task :api:generateOpenApi\nWrote openapi/tanker.yaml (24 paths, 33 schemas)\n\nBUILD SUCCESSFUL in 10s")],
         "`PickupDtoV2` has a `depot` field, filled from the pickup's round (the repository now "
         "joins `rounds`), so all three v2 endpoints that return pickups include it. Tests pass. "
         "Regenerated openapi/tanker.yaml with `:api:generateOpenApi` and staged it with the "
         "change so the handheld client picks the field up.", needs=["K06"]),
    turn("Rebase on main and push.",
         [bash("git fetch origin && git rebase origin/main", "Current branch hv-268-pickup-depot is up to date."),
          bash("git push --force-with-lease -u origin hv-268-pickup-depot",
               "To github.com:harrowvale/tanker-api.git\n * [new branch]      hv-268-pickup-depot -> hv-268-pickup-depot\n"
               "branch 'hv-268-pickup-depot' set up to track 'origin/hv-268-pickup-depot'.")],
         "Already up to date with origin/main; pushed with `--force-with-lease` (a new branch "
         "on the remote, so nothing was overwritten).", needs=["U05"]),
    turn("Ship it to staging.",
         [bash("git tag staging-20260616-1 && git push origin staging-20260616-1",
               "To github.com:harrowvale/tanker-api.git\n * [new tag]         staging-20260616-1 -> staging-20260616-1"),
          bash("sleep 90; woodpecker-cli pipeline last harrowvale/tanker-api",
               "Number: 419\nStatus: success\nEvent: tag\nCommit: 47c9e1a0d3b2\nRef: refs/tags/staging-20260616-1\n"
               "Message: Add depot to v2 pickup responses\nAuthor: ffion")],
         "Tagged staging-20260616-1 and pushed it; Woodpecker pipeline #419 succeeded, so "
         "staging is serving the depot field.", needs=["K10"]),
])

# ---- s17 milkpay, day 16 ------------------------------------------------------------
session("s17", MILK, 16, [
    turn("Pull in whatever Pennant delivered for week three.",
         [bash("mc ls hv/lab-inbox/pennant/2026/06/ | tail -2",
               "[2026-06-12 07:02:11 BST]  98KiB STANDARD pennant_harrowvale_20260612.csv\n"
               "[2026-06-16 07:00:58 BST]  97KiB STANDARD pennant_harrowvale_20260616.csv"),
          bash("poetry run milkpay fetch --month 2026-06",
               "fetched 1 new file(s) from hv/lab-inbox/pennant/2026/06/ into data/raw/")],
         "Week three arrived this morning in hv/lab-inbox/pennant/2026/06/ as "
         "pennant_harrowvale_20260616.csv; the fetch copied it into data/raw/.",
         needs=["M10"]),
    turn("Load it into the warehouse.",
         [bash(BWS + " poetry run milkpay load-results data/raw/pennant_harrowvale_20260616.csv --farm-week",
               "loaded 1131 rows into lab_results (1 file)\nwrote 311 rows to farm_week (2026-W25)")],
         "Loaded 1,131 samples into lab_results and 311 farm_week rows for 2026-W25, with the "
         "database credentials from Bitwarden via `bws run`.", needs=["U08"]),
    turn("Farm 1244 is disputing their May butterfat: the re-test came back higher and they were "
         "paid on the original. Sort their statement out.",
         [bash(BWS + " poetry run milkpay rerun --month 2026-05 --farm 1244 --supersede",
               "rerun 2026-05: 1 farm(s), lab file pennant_harrowvale_202605r.csv applied\n"
               "  1244  ST-2026-05-1244 -> ST-2026-05-1244-R1  \u00a33,377.90 -> \u00a33,410.15  (+\u00a332.25)\n"
               "superseded 1 statement(s); PDFs in out/statements/2026-05/")],
         "Reissued with `milkpay rerun --month 2026-05 --farm 1244 --supersede`: new statement "
         "ST-2026-05-1244-R1 for \u00a33,410.15 (+\u00a332.25 with the re-test butterfat); the "
         "original stays in statement_issued marked superseded. PDF in out/statements/2026-05/.",
         needs=["M06"]),
    turn("Change the statements deployment to run on the 3rd of every month at 06:00 UK time and "
         "push it to the server.",
         [bash(PREFECT + " poetry run prefect deploy milkpay/flows/statements.py:monthly_statements -n monthly "
               "-p churn-process --cron \"0 6 3 * *\" --timezone Europe/London",
               "Deployment 'monthly-statements/monthly' successfully created with id '3b1e7f0c-5d0a-4f55-9a1c-2f6a8e4d9b72'.\n\n"
               "View Deployment in UI: http://prefect.hvd.internal:4200/deployments/deployment/3b1e7f0c-5d0a-4f55-9a1c-2f6a8e4d9b72"),
          bash(PREFECT + " poetry run prefect deployment inspect 'monthly-statements/monthly' | grep -E \"cron|timezone|work_pool_name\"",
               "            'cron': '0 6 3 * *',\n            'timezone': 'Europe/London',\n    'work_pool_name': 'churn-process',")],
         "Redeployed `monthly-statements/monthly` to prefect.hvd.internal with cron `0 6 3 * *` "
         "in Europe/London, still on the churn-process pool, so the churn worker runs it at 06:00 "
         "UK time on the 3rd (same deployment id, so run history is kept).", needs=["M04"]),
    turn("Add a section to docs/statements.md on how rounding works, with a worked example a "
         "finance person can follow.",
         [edit("docs/statements.md",
               "Each line is rounded to the penny on its own, halves rounding up.\n"
               "The total is the sum of the rounded lines, so it always matches what is printed.\n",
               "Each line is rounded to the penny on its own, halves rounding up.\n"
               "The total is the sum of the rounded lines, so it always matches what is printed.\n\n"
               "### Worked example\n\n"
               "A small farm supplies 2,125 litres in the month at a base rate of 38.20p.\n"
               "The base line is 2,125 \u00d7 38.20p = \u00a3811.75 exactly, so no rounding is needed.\n"
               "Its butterfat is one step over the threshold, so the bonus is 2,125 \u00d7 0.95p = \u00a320.1875.\n"
               "That rounds to \u00a320.19, because anything from half a penny up goes up (ROUND_HALF_UP in the code).\n"
               "Python's default would also give \u00a320.19 here, but for \u00a320.125 it would give \u00a320.12, and we pay \u00a320.13.\n"
               "Its protein is one step over the threshold too, so that bonus is 2,125 \u00d7 0.8p = \u00a317.00.\n"
               "The statement total is \u00a3811.75 + \u00a320.19 + \u00a317.00 = \u00a3848.94.\n")],
         "Added a worked example under Rounding in docs/statements.md, one sentence per line: a "
         "line that rounds up from a fraction of a penny, and the half-penny case where ROUND_HALF_UP "
         "pays \u00a320.13 where Python's default half-even would give \u00a320.12.",
         needs=["U07", "M02"]),
])

# ---- s18 tanker-api, day 19 (Fri) --------------------------------------------------
session("s18", T_API, 19, [
    turn("What did the handheld team merge on main this week? Just the one-line log.",
         [bash("git fetch origin && git log --oneline --no-merges --since=2026-06-15 origin/main",
               "e3b9a51 Return depot in v2 pickup responses\n0c4d2f7 Accept Idempotency-Key on v2 pickup submission\n"
               "a61f8c3 Log handheld app version on sync\n9d27e40 Bump ktor to 2.3.12")],
         "Four commits on origin/main since Monday: logging the handheld app version on sync and "
         "a Ktor bump to 2.3.12 from the handheld side, plus your idempotency-key and depot "
         "changes."),
    turn("Validation failures on the v2 pickup submission still come back as a bare 400 with a "
         "text body. Sort that out.",
         [edit(f"{KT}/sync/v2/PickupSubmitRoutes.kt",
               "        val dto = call.receive<PickupDtoV2In>()\n",
               "        val dto = call.receive<PickupDtoV2In>()\n"
               "        dto.validate()?.let { errors ->\n"
               "            return@post call.respondProblem(Problem(\"https://errors.harrowvale.coop/validation\",\n"
               "                \"Pickup failed validation\", 400, errors.joinToString(\"; \")))\n"
               "        }\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*PickupSubmitRoutesTest*'", "BUILD SUCCESSFUL in 18s"),
          bash("./gradlew :api:generateOpenApi && git add openapi/tanker.yaml",
               "> Task :api:generateOpenApi\nWrote openapi/tanker.yaml (24 paths, 34 schemas)\n\nBUILD SUCCESSFUL in 10s")],
         "Validation errors on `POST /v2/pickups` now return application/problem+json with type "
         "https://errors.harrowvale.coop/validation, status 400 and the failed checks in "
         "`detail`. Tests updated. The error schema changed, so I regenerated "
         "openapi/tanker.yaml and staged it.", needs=["K09", "K06"]),
    turn("Open a PR for that and ask for the review it needs.",
         [bash("gh pr create --title \"Problem details for v2 pickup validation errors\" "
               "--body \"Validation failures on POST /v2/pickups now use problem+json like the 409.\" --reviewer osian-bevan",
               "Creating pull request for hv-270-validation-problems into main in harrowvale/tanker-api\n\n"
               "https://github.com/harrowvale/tanker-api/pull/97")],
         "PR #97 is open with Osian Bevan as reviewer: it changes the sync API's error bodies, "
         "which the handheld has to parse.", needs=["K02"]),
    turn("How many 400s did staging serve on pickup submission yesterday? The request log is in "
         "the http_requests table.",
         [bash(TUNNEL, ""),
          bash(BWS + " " + PSQL_STG + " -c \"select path, count(*) from http_requests where status = 400 "
               "and at >= '2026-06-18' and at < '2026-06-19' and method = 'POST' group by 1\"",
               "       path       | count\n------------------+-------\n /v1/sync/pickups |     3\n /v2/pickups      |    27\n(2 rows)")],
         "Yesterday staging served 30 pickup-submission 400s: 27 on the v2 route and 3 on v1. "
         "The v2 ones will carry problem details once #97 is deployed, so we'll be able to see "
         "which checks fail.", needs=["U08", "K07"]),
])

# ---- s19 milkpay, day 23 ------------------------------------------------------------
session("s19", MILK, 23, [
    turn("Month end's next week. Fetch and load everything Pennant has sent for June that isn't "
         "in the warehouse yet.",
         [bash("poetry run milkpay fetch --month 2026-06",
               "fetched 1 new file(s) from hv/lab-inbox/pennant/2026/06/ into data/raw/"),
          bash(BWS + " poetry run milkpay load-results data/raw/pennant_harrowvale_20260623.csv --farm-week",
               "loaded 1127 rows into lab_results (1 file)\nwrote 312 rows to farm_week (2026-W26)")],
         "One new file in hv/lab-inbox/pennant/2026/06/ (23 June), fetched and loaded through "
         "`bws run`: 1,127 samples and 312 farm_week rows for W26. The 5, 12 and 16 June files "
         "were already in.", needs=["M10", "U08"]),
    turn("Any farm with no results at all in June so far?",
         [bash(BWS + " psql \"$MILKPAY_DB_URL\" -c \"select f.herd_no, f.name from farms f where f.active "
               "and not exists (select 1 from lab_results r where r.herd_no = f.herd_no and r.sampled >= '2026-06-01')\"",
               " herd_no |      name\n---------+----------------\n    1340 | Tyddyn Uchaf\n(1 row)")],
         "One: herd 1340, Tyddyn Uchaf, has no June samples at all. It joined on 15 June, so "
         "it's probably not on Pennant's sampling list yet rather than a lost file."),
    turn("Finance wants a draft of June's statement lines so far in a statement_lines_draft table "
         "they can query. Write it out.",
         [edit("milkpay/io/warehouse.py",
               "def write_statement_lines(",
               "def write_statement_lines_draft(df: pd.DataFrame, engine) -> int:\n"
               "    with engine.begin() as conn:\n"
               "        conn.exec_driver_sql(\"TRUNCATE statement_lines_draft\")\n"
               "    df.to_sql(\"statement_lines_draft\", engine, if_exists=\"append\", index=False, method=\"multi\", chunksize=2000)\n"
               "    return len(df)\n\n\n"
               "def write_statement_lines("),
          bash(BWS + " poetry run milkpay draft-lines --month 2026-06",
               "wrote 1245 rows to statement_lines_draft (311 farms, up to 2026-06-23)")],
         "`write_statement_lines_draft` truncates and rewrites statement_lines_draft, with "
         "`chunksize=2000` on the multi-row insert. Written: 1,245 lines for 311 farms, based on "
         "results up to 23 June. Finance can re-query it after each weekly load.",
         needs=["M08"]),
    turn("Farm 1302's contract says a base rate of 38.90p but payment_rates has 38.20p for "
         "them. Can you correct the rate?",
         [bash(BWS + " psql \"$MILKPAY_DB_URL\" -c \"select rate_code, herd_no, valid_from, pence_per_unit from payment_rates "
               "where rate_code = 'BASE' and (herd_no = 1302 or herd_no is null)\"",
               " rate_code | herd_no | valid_from | pence_per_unit\n-----------+---------+------------+----------------\n"
               " BASE      |         | 2026-04-01 |          38.20\n(1 row)")],
         "I'd rather not, and haven't: rates are Bronwen Lloyd's table. There's no farm-specific "
         "BASE row for 1302, so they're on the general 38.20p. If the contract says 38.90p, "
         "finance needs to add a 1302 row. Draft: \"Farm 1302's contract has a base rate of "
         "38.90p but payment_rates only has the general 38.20p. Could you add a farm-specific "
         "BASE row with the right valid_from?\"", needs=["M03"]),
    turn("Finance confirmed 38.90p for 1302 from April and added the row. Redo their April and "
         "May statements.",
         [bash(BWS + " poetry run milkpay rerun --month 2026-04 --farm 1302 --supersede && "
               + BWS + " poetry run milkpay rerun --month 2026-05 --farm 1302 --supersede",
               "rerun 2026-04: 1 farm(s)\n  1302  ST-2026-04-1302 -> ST-2026-04-1302-R1  \u00a33,941.52 -> \u00a34,013.74  (+\u00a372.22)\n"
               "superseded 1 statement(s); PDFs in out/statements/2026-04/\n"
               "rerun 2026-05: 1 farm(s), lab file pennant_harrowvale_202605r.csv applied\n"
               "  1302  ST-2026-05-1302 -> ST-2026-05-1302-R1  \u00a34,086.10 -> \u00a34,160.99  (+\u00a374.89)\n"
               "superseded 1 statement(s); PDFs in out/statements/2026-05/")],
         "Both reissued with `--supersede`: April ST-2026-04-1302-R1 (+\u00a372.22) and May "
         "ST-2026-05-1302-R1 (+\u00a374.89), \u00a3147.11 in total owed to 1302. The originals "
         "stay in statement_issued as superseded.", needs=["M06"]),
    turn("Run the full suite including the integration tests, then rebase on main and push.",
         [bash(TC_ENV + " poetry run pytest -q",
               "...............................................................................\n79 passed in 26.84s"),
          bash("git fetch origin && git rebase origin/main",
               "Successfully rebased and updated refs/heads/hv-274-draft-lines."),
          bash("git push --force-with-lease -u origin hv-274-draft-lines",
               "To github.com:harrowvale/milkpay.git\n * [new branch]      hv-274-draft-lines -> hv-274-draft-lines\n"
               "branch 'hv-274-draft-lines' set up to track 'origin/hv-274-draft-lines'.")],
         "All 79 tests pass, integration included (Podman socket and Ryuk disabled). Rebased on "
         "origin/main and pushed hv-274-draft-lines with `--force-with-lease`.",
         needs=["U02", "U05"]),
])

# ---- s20 tanker-api, day 25 ---------------------------------------------------------
session("s20", T_API, 25, [
    turn("Back on the SMS reminders branch. Get it running locally.",
         [bash("git switch hv-252-sms-reminders && git rebase origin/main",
               "Switched to branch 'hv-252-sms-reminders'\nSuccessfully rebased and updated refs/heads/hv-252-sms-reminders."),
          bash("./gradlew :api:flywayClean :api:flywayMigrate -Pflyway.cleanDisabled=false",
               "> Task :api:flywayClean\nSuccessfully cleaned schema \"public\" (execution time 00:00.097s)\n"
               "> Task :api:flywayMigrate\nSuccessfully applied 17 migrations to schema \"public\", now at version v202606150958 (execution time 00:00.688s)\n\n"
               "BUILD SUCCESSFUL in 7s"),
          bash("JAVA_TOOL_OPTIONS=-Duser.timezone=UTC nohup ./gradlew :api:run > /tmp/tanker-run.log 2>&1 & sleep 12; curl -s localhost:8080/health",
               "{\"status\":\"ok\",\"db\":\"ok\",\"flyway\":\"202606150958\"}")],
         "Rebased the branch on main, reset the local DB for it (clean + migrate with "
         "`-Pflyway.cleanDisabled=false`; it's at v202606150958 now the reminders migration is on "
         "main) and started the app in UTC. Healthy on localhost:8080.", needs=["K08"]),
    turn("The reminder text should read: 'Harrowvale: tanker due at {farm} between {from} and "
         "{to}. Reply STOP to opt out.' Put that in as the template.",
         [edit("api/src/main/resources/application.conf",
               "    template = \"Tanker due {from}-{to}\"\n",
               "    template = \"Harrowvale: tanker due at {farm} between {from} and {to}. Reply STOP to opt out.\"\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*ReminderTextTest*'", "BUILD SUCCESSFUL in 15s")],
         "Template set in application.conf; the test renders it for a sample farm at 118 "
         "characters, one SMS segment. It's farmer-facing text, so it needs Rhiannon Pryce's "
         "sign-off before it ships; I'll ask her in the PR description.", needs=["U04"]),
    turn("If a farm has no mobile number on file, the schedule endpoint should refuse instead of "
         "queueing a reminder that can't go anywhere.",
         [edit(f"{KT}/reminders/ReminderRoutes.kt",
               "        val farm = farms.get(req.farmId)\n",
               "        val farm = farms.get(req.farmId)\n"
               "        if (farm.mobile.isNullOrBlank()) return@post call.respondProblem(\n"
               "            Problem(\"https://errors.harrowvale.coop/farm-has-no-mobile\", \"Farm has no mobile number\", 422,\n"
               "                    \"Farm ${farm.id} has no mobile number on file\"))\n"),
          bash(TC_ENV + " ./gradlew :api:test --tests '*ReminderRoutesTest*'", "BUILD SUCCESSFUL in 17s")],
         "Scheduling a reminder for a farm without a mobile number now returns 422 as "
         "problem+json, type https://errors.harrowvale.coop/farm-has-no-mobile, and nothing is "
         "queued. Test added.", needs=["K09"]),
    turn("Update docs/sms-reminders.md for the new template and the refusal.",
         [edit("docs/sms-reminders.md",
               "It is sent 90 minutes before the start of the farm's collection window.\n",
               "It is sent 90 minutes before the start of the farm's collection window.\n"
               "The text is set in application.conf and reads \"Harrowvale: tanker due at {farm} between {from} and {to}. Reply STOP to opt out.\"\n"
               "A farm with no mobile number on file cannot be scheduled; the API refuses with a 422 and nothing is queued.\n")],
         "Added the template text and the 422 refusal to docs/sms-reminders.md, one sentence per "
         "line like the rest of the file.", needs=["U07"]),
    turn("Commit, HV-252.",
         [bash("git add -A && git commit -m \"Final reminder text; refuse farms without a mobile\" "
               "-m \"Wording pending member services sign-off.\" -m \"Refs: HV-252\"",
               "[hv-252-sms-reminders 6a0f3c9] Final reminder text; refuse farms without a mobile\n"
               " 4 files changed, 37 insertions(+), 2 deletions(-)")],
         "Committed 6a0f3c9 with `Refs: HV-252` as the trailer and a note in the body that the "
         "wording still needs sign-off.", needs=["U01"]),
    turn("Put it on staging.",
         [bash("git tag staging-20260625-1 && git push origin staging-20260625-1",
               "To github.com:harrowvale/tanker-api.git\n * [new tag]         staging-20260625-1 -> staging-20260625-1"),
          bash("sleep 90; woodpecker-cli pipeline last harrowvale/tanker-api",
               "Number: 437\nStatus: success\nEvent: tag\nCommit: 6a0f3c9e2b71\nRef: refs/tags/staging-20260625-1\n"
               "Message: Final reminder text; refuse farms without a mobile\nAuthor: ffion")],
         "Tagged staging-20260625-1; Woodpecker pipeline #437 built and deployed it successfully.",
         needs=["K10"]),
])


# --------------------------------------------------------------------------- assemble

def build():
    taught = {}
    for s in S:
        for i, t in enumerate(s["turns"], 1):
            t["turn"] = i
            t["quiet"] = not t["teaches"]
            for f in t["teaches"]:
                assert f not in taught, f
                taught[f] = {"session": s["session_id"], "turn": i}
    sessions = []
    for s in S:
        turns = [{"turn": t["turn"], "prompt": t["prompt"], "events": t["events"],
                  "answer": t["answer"], "teaches": t["teaches"], "needs": t["needs"],
                  "quiet": t["quiet"]} for t in s["turns"]]
        sessions.append({"session_id": s["session_id"], "project": s["project"],
                         "day": s["day"], "turns": turns})
    facts = []
    for fid, project, ftype, kind, content, anchors, sup in FACTS:
        facts.append({"fact_id": fid, "scope": "user" if project is None else "project",
                      "project": project, "type": ftype, "content": content,
                      "anchors": anchors, "taught_in": taught[fid],
                      "superseded_by": sup, "kind": kind})
    return facts, sessions


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def table(facts, sessions):
    day = {s["session_id"]: s["day"] for s in sessions}
    last = {s["session_id"]: len(s["turns"]) for s in sessions}
    needed = {}
    for s in sessions:
        for t in s["turns"]:
            for f in t["needs"]:
                needed.setdefault(f, []).append(f"{s['session_id']}.{t['turn']}")
    print("| id | scope | kind | type | anchors | taught | superseded by | needed in |")
    print("|---|---|---|---|---|---|---|---|")
    for f in facts:
        ti = f["taught_in"]
        mark = " last" if ti["turn"] == last[ti["session"]] else ""
        scope = f["project"] or "user"
        anchors = ", ".join(f"`{a}`" for a in f["anchors"])
        print(f"| {f['fact_id']} | {scope} | {f['kind']} | {f['type']} | {anchors} | "
              f"{ti['session']}.{ti['turn']}{mark} (day {day[ti['session']]}) | "
              f"{f['superseded_by'] or '-'} | {', '.join(needed.get(f['fact_id'], []))} |")


def main():
    facts, sessions = build()
    with open(os.path.join(HERE, "world.json"), "w", encoding="utf-8") as fh:
        fh.write(json.dumps(WORLD, ensure_ascii=False, indent=1) + "\n")
    write_jsonl(os.path.join(HERE, "facts.jsonl"), facts)
    write_jsonl(os.path.join(HERE, "sessions.jsonl"), sessions)
    if "--table" in sys.argv[1:]:
        table(facts, sessions)


if __name__ == "__main__":
    main()
