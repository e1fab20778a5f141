#!/usr/bin/env python3
"""Generate the "sixth" coding-month world: Glanmor Regional Transit (GRT).

Deterministic and stdlib-only. Writes world.json, facts.jsonl and sessions.jsonl
next to this file. Session ids (s01..s40) and every fact's taught_in are derived
from the order of SESSIONS, so reordering sessions keeps the files consistent.

    python3 make_world.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

VA, RA, FS = "validator-agent", "rider-app", "feedsmith"

WORLD = {
    "projects": [
        {
            "key": VA,
            "name": "validator-agent",
            "stack": "Rust 1.78, tokio, reqwest (rustls), rusqlite, ed25519-dalek, tracing, "
                     "cross (armv7), cargo-nextest, cargo-deny, just, systemd on a Yocto image",
            "description": "Agent on the on-bus ticket validators: reads NFC cards and QR "
                           "tickets, verifies ticket signatures offline, journals taps and "
                           "uploads them to the back office",
        },
        {
            "key": RA,
            "name": "rider-app",
            "stack": "Dart 3.4, Flutter 3.22 (FVM), Riverpod, dio + openapi-generator, "
                     "Firebase Crashlytics, flutter_local_notifications, fastlane, golden "
                     "tests, Android (Gradle KTS) and iOS (CocoaPods)",
            "description": "Bilingual (English/Welsh) rider app: journey planning, live "
                           "departures, favourite stops and mobile tickets",
        },
        {
            "key": FS,
            "name": "feedsmith",
            "stack": "Java 21, Spring Boot 3.3, Gradle (Kotlin DSL), Flyway, PostgreSQL 16 + "
                     "PostGIS, onebusaway-gtfs, Eclipse Paho MQTT, JUnit 5, Testcontainers, "
                     "Jib, Argo CD on Kubernetes",
            "description": "Builds and publishes GRT's public GTFS timetable feed from HASTUS "
                           "exports and serves GTFS-Realtime vehicle positions from the AVL feed",
        },
    ],
    "days": 30,
    "start_date": "2026-06-01",
}

# ---------------------------------------------------------------------------
# Facts: (fact_id, project or None, kind, type, anchors, content, superseded_by)
# taught_in is filled in from SESSIONS.
# ---------------------------------------------------------------------------
FACTS = [
    # validator-agent ------------------------------------------------------
    ("V01", VA, "environment", "semantic", ["armv7-unknown-linux-gnueabihf"],
     "validator-agent targets the i.MX6ULL validator boards: build for "
     "armv7-unknown-linux-gnueabihf, always through `cross` (the host toolchain links "
     "against the wrong glibc).", None),
    ("V02", VA, "environment", "semantic", ["10.48.7.21"],
     "The bench validator in the depot lab is at 10.48.7.21 (ssh user grt); it runs the "
     "agent as the grt-validator systemd service.", "V12"),
    ("V03", VA, "decision", "semantic", ["journal_mode=WAL"],
     "The tap journal stays in SQLite via rusqlite with journal_mode=WAL (not sled or flat "
     "files): WAL recovered cleanly in the power-cut tests on the boards.", None),
    ("V04", VA, "convention", "semantic", ["thiserror"],
     "Error handling in validator-agent: thiserror enums in the library crates; anyhow only "
     "at the edge, in the binary's main.rs.", None),
    ("V05", VA, "people", "semantic", ["Rasmus"],
     "Rasmus Holt owns the validator hardware, the NFC reader and its pcsc driver config; "
     "reader problems go to him with an APDU trace, we don't tune the driver ourselves.", None),
    ("V06", VA, "fix", "episodic", ["time-sync.target"],
     "Validators have no RTC and boot in 1970, so uploads failed TLS ('certificate is not "
     "yet valid') after a power cycle; fixed by ordering grt-validator.service "
     "After=/Wants=time-sync.target with systemd-time-wait-sync enabled.", None),
    ("V07", VA, "procedure", "procedural", ["just deploy-bench"],
     "To put a build on the bench unit run `just deploy-bench` (cross build, copy, bench "
     "config, service restart) instead of doing the steps by hand.", None),
    ("V08", VA, "people", "semantic", ["Kofi"],
     "Changes under crates/grt-verify (ticket signature verification) need a review from "
     "Kofi Mensah in security before merge.", "V14"),
    ("V09", VA, "environment", "semantic", ["1.78.0"],
     "validator-agent's toolchain is pinned to Rust 1.78.0 in rust-toolchain.toml to match "
     "the board image's Yocto SDK; dependency updates must build on it (hold crates back "
     "with cargo update --precise).", None),
    ("V10", VA, "fix", "episodic", ["licenses.clarify"],
     "cargo deny failed with 'ring = 0.17.8 is unlicensed'; fixed with a [[licenses.clarify]] "
     "entry for ring in deny.toml (MIT AND ISC AND OpenSSL, LICENSE file hash).", None),
    ("V11", VA, "preference", "semantic", ["tracing-journald"],
     "No println! in validator-agent: all logging goes through tracing with structured "
     "fields, and on the devices through tracing-journald.", None),
    ("V12", VA, "environment", "semantic", ["10.48.9.40"],
     "The bench validator moved to the Northgate depot lab and is now at 10.48.9.40 (same "
     "ssh user grt).", None),
    ("V13", VA, "fix", "episodic", ["tempfile::tempdir"],
     "Journal tests failed intermittently under cargo nextest with 'database is locked' "
     "because they shared one SQLite file in /tmp; each test now opens its journal in its "
     "own tempfile::tempdir().", None),
    ("V14", VA, "people", "semantic", ["Leila"],
     "Security review of the ticket signature verification code (crates/grt-verify) is now "
     "done by Leila Haddad, who took over ticketing crypto from Kofi Mensah.", None),
    ("V15", VA, "procedure", "procedural", ["agent-v", ".ipk"],
     "validator-agent release: cargo set-version X.Y.Z, signed-off commit, tag agent-vX.Y.Z "
     "and push the tag; CI builds the signed .ipk for the image feed.", None),
    ("V16", VA, "environment", "semantic", ["/etc/grt/agent.toml"],
     "On the production image the agent's config lives at /etc/grt/agent.toml (the /etc/cvt "
     "path was the pilot image).", None),
    # rider-app ------------------------------------------------------------
    ("R01", RA, "environment", "semantic", ["fvm flutter"],
     "rider-app pins Flutter 3.22.2 with FVM (.fvmrc): run everything as `fvm flutter ...` / "
     "`fvm dart ...`; the global flutter is a newer version and fails version solving.", None),
    ("R02", RA, "decision", "semantic", ["riverpod_generator"],
     "State management in rider-app is Riverpod with riverpod_generator (@riverpod "
     "annotations): no Bloc, no provider package, no new ChangeNotifiers.", None),
    ("R03", RA, "convention", "semantic", ["app_cy.arb"],
     "Every user-facing string in rider-app goes into both lib/l10n/app_en.arb and "
     "app_cy.arb (Welsh Language Standards: a missing Welsh string is a compliance issue).",
     None),
    ("R04", RA, "people", "semantic", ["Yuki"],
     "Yuki Tanaka (design) signs off every new screen, accessibility included, before it "
     "goes to testers; send her screenshots.", None),
    ("R05", RA, "fix", "episodic", ["platform :ios, '13.0'"],
     "Newer Firebase pods need iOS 13: pod install failed with 'required a higher minimum "
     "deployment target' until ios/Podfile set platform :ios, '13.0'.", None),
    ("R06", RA, "procedure", "procedural", ["bundle exec fastlane beta"],
     "TestFlight builds: from ios/ run `bundle exec fastlane beta` (takes the next build "
     "number from App Store Connect and uploads); it needs the App Store Connect API key "
     "from the secrets tool.", None),
    ("R07", RA, "decision", "semantic", ["lib/api/gen/"],
     "lib/api/gen/ is generated from the back-office OpenAPI spec with openapi-generator "
     "(dart-dio); never hand-edit it, regenerate with `make api`.", None),
    ("R08", RA, "decision", "semantic", ["google_maps_flutter"],
     "The journey map stays on google_maps_flutter for now: no maps migration before the "
     "July release.", "R12"),
    ("R09", RA, "convention", "procedural", ["--delete-conflicting-outputs"],
     "Generated .g.dart files are committed in rider-app; after changing providers or models "
     "run `dart run build_runner build --delete-conflicting-outputs` (through fvm).", None),
    ("R10", RA, "environment", "semantic", ["lib/main_stg.dart"],
     "rider-app has stg and prod flavors with their own entry points; run against staging "
     "with --flavor stg -t lib/main_stg.dart (staging API, Firebase project grt-rider-stg). "
     "There is no default flavor.", None),
    ("R11", RA, "fix", "episodic", ["cirruslabs/flutter"],
     "Golden tests failed on the Mac with small pixel diffs because the goldens are rendered "
     "on Linux; run and update them inside ghcr.io/cirruslabs/flutter:3.22.2 "
     "(flutter test --tags golden --update-goldens).", None),
    ("R12", RA, "decision", "semantic", ["maplibre_gl"],
     "The journey map moved from google_maps_flutter to maplibre_gl with GRT's own vector "
     "tiles (tiles.grt-cymru.net), for licence cost and the bus-lane layer.", None),
    ("R13", RA, "decision", "semantic", ["minSdk = 23"],
     "rider-app keeps minSdk = 23 on Android (about 4% of riders are on Android 6/7); don't "
     "raise it as part of dependency updates.", "R15"),
    ("R14", RA, "fix", "episodic", ["proguard-rules.pro"],
     "Release-only crash when opening tickets (PlatformException 'Missing type parameter' from "
     "flutter_local_notifications) was R8 stripping Gson generic signatures; fixed with keep "
     "rules in android/app/proguard-rules.pro.", None),
    ("R15", RA, "decision", "semantic", ["minSdk = 26"],
     "From 1.9 rider-app requires minSdk = 26 (Android 8); Android 7 and below are dropped.",
     None),
    ("R16", RA, "preference", "semantic", ["bySemanticsLabel"],
     "In rider-app widget tests, find widgets with find.bySemanticsLabel rather than Keys, so "
     "the tests also check screen-reader labels.", None),
    # feedsmith ------------------------------------------------------------
    ("F01", FS, "environment", "semantic", ["5433"],
     "feedsmith's local PostGIS runs from docker compose (`docker compose up -d db`) on port "
     "5433 because Postgres.app holds 5432 on the laptop; integration tests expect it up.",
     None),
    ("F02", FS, "decision", "semantic", ["gtfs-validator"],
     "Nothing is published if the MobilityData gtfs-validator reports any ERROR notice "
     "(agreed after a feed was rejected by Google).", None),
    ("F03", FS, "convention", "semantic", ["yyyyMMddHHmm"],
     "Flyway migrations are named with a timestamp, V<yyyyMMddHHmm>__snake_case.sql, and a "
     "migration that has been applied is never edited.", None),
    ("F04", FS, "people", "semantic", ["Nadia"],
     "Nadia Qureshi (scheduling) produces the HASTUS exports; questions about odd trip or "
     "block data go to her, we never patch timetable data ourselves.", "F13"),
    ("F05", FS, "fix", "episodic", ["setFetchSize"],
     "Full-period exports ran out of heap (OutOfMemoryError in StopTimeExporter) because "
     "stop_times was loaded into a list; it is now streamed with JdbcTemplate "
     "setFetchSize(5000) inside a read-only transaction.", None),
    ("F06", FS, "procedure", "procedural", ["publishFeed"],
     "Publishing the public feed: `./gradlew publishFeed -Penv=prod -PdryRun=true` first, "
     "check the diff summary, then the same command without -PdryRun.", None),
    ("F07", FS, "convention", "semantic", ["24:00:00"],
     "After-midnight trips stay on their service day with times past 24:00:00 (e.g. "
     "24:40:00), never wrapped to 00:40:00.", None),
    ("F08", FS, "environment", "semantic", ["mqtt.avl.grt.internal"],
     "Vehicle positions come from the AVL vendor's MQTT broker at "
     "mqtt.avl.grt.internal:8883 (TLS).", None),
    ("F09", FS, "environment", "semantic", ["grt-gtfs-public"],
     "The public GTFS zip is published to the S3 bucket grt-gtfs-public (eu-west-2), which "
     "Traveline and Google pull from.", "F14"),
    ("F10", FS, "decision", "semantic", ["ATCO"],
     "stop_id in the public feed and in feedsmith tables is the NaPTAN ATCO code, not the "
     "internal HASTUS stop number.", None),
    ("F11", FS, "fix", "episodic", ["postgis/postgis:16-3.4"],
     "Testcontainers tests need the postgis/postgis:16-3.4 image; with plain postgres they "
     "fail with 'function st_makepoint(...) does not exist'.", None),
    ("F12", FS, "procedure", "procedural", ["argocd app sync"],
     "Deploying feedsmith: `./gradlew jib` pushes the image, then `argocd app sync "
     "feedsmith-prod`; prod deliberately does not auto-sync.", None),
    ("F13", FS, "people", "semantic", ["Owain"],
     "Owain Pryce now owns the HASTUS timetable exports (Nadia moved to fares); odd trip or "
     "block data goes to him.", None),
    ("F14", FS, "environment", "semantic", ["grt-open-data"],
     "The public feed is now published to the Cloudflare R2 bucket grt-open-data; the old "
     "S3 bucket is read-only and goes away at the end of July.", None),
    ("F15", FS, "preference", "semantic", ["Lombok"],
     "feedsmith uses Java records for DTOs and value types; no Lombok.", None),
    # user scope -----------------------------------------------------------
    ("U01", None, "convention", "semantic", ["git commit -s"],
     "All commits are signed off (`git commit -s`); the DCO check on GRT's Gitea rejects "
     "commits without a Signed-off-by line.", None),
    ("U02", None, "environment", "semantic", ["tramshed"],
     "Heavy builds (Android release builds, full Rust builds) run on tramshed, the 64-core "
     "Linux box (ssh tramshed, repos under ~/src).", None),
    ("U03", None, "environment", "semantic", [".tool-versions"],
     "The user manages toolchains per repo with asdf: versions are pinned in .tool-versions "
     "and installed with asdf install.", "U11"),
    ("U04", None, "environment", "semantic", ["op run --env-file"],
     "Secrets are never kept in the shell: commands that need credentials run as "
     "`op run --env-file=.env.op -- <cmd>` (1Password).", "U12"),
    ("U05", None, "preference", "semantic", ["recap"],
     "Answers should lead with what broke or what needs deciding; no recap at the end, the "
     "user reads the diff.", None),
    ("U06", None, "convention", "semantic", ["--force-with-lease"],
     "Never force-push with a bare --force; always git push --force-with-lease.", None),
    ("U07", None, "preference", "semantic", ["emoji"],
     "No emoji in commit messages, changelogs, PR text or code comments (GRT's Gitea renders "
     "them as boxes).", None),
    ("U08", None, "people", "semantic", ["Aoife"],
     "Aoife Brennan is the PM for all three projects; scope and timeline questions go to her.",
     None),
    ("U09", None, "convention", "semantic", ["Rider impact"],
     "PR descriptions start with a '## Rider impact' section: what a rider would notice, or "
     "'None'.", None),
    ("U10", None, "procedure", "procedural", ["oss-policy"],
     "A new third-party dependency must be on the licence allow-list in the grt/oss-policy "
     "repo (MIT/Apache/BSD fine, nothing GPL/AGPL) and be noted in the PR.", None),
    ("U11", None, "decision", "semantic", ["mise install"],
     "Toolchains are now managed with mise: `mise install` in the repo, new pins go in "
     "mise.toml (replaces asdf; mise still reads .tool-versions).", None),
    ("U12", None, "environment", "semantic", ["sops exec-env"],
     "Secrets now come from SOPS-encrypted env files with age keys: run commands as "
     "`sops exec-env secrets.enc.env '<cmd>'` (the 1Password vault is archived).", None),
    ("U13", None, "people", "semantic", ["Bartek"],
     "Bartek Nowak is the SRE on call; production restarts and incidents go through him in "
     "#grt-ops.", None),
]


# ---------------------------------------------------------------------------
# Event helpers
# ---------------------------------------------------------------------------
def B(command, output, error=False):
    return {"tool": "Bash", "input": {"command": command}, "output": output, "error": error}


def E(path, old, new):
    return {"tool": "Edit",
            "input": {"file_path": path, "old_string": old, "new_string": new},
            "output": "The file %s has been updated." % path, "error": False}


def W(path, content):
    return {"tool": "Write", "input": {"file_path": path, "content": content},
            "output": "File created successfully at: %s" % path, "error": False}


def R(path, start, text):
    lines = text.split("\n")
    out = "\n".join("%6d\t%s" % (start + i, ln) for i, ln in enumerate(lines))
    return {"tool": "Read", "input": {"file_path": path}, "output": out, "error": False}


def T(prompt, events, answer, teaches=(), needs=()):
    return {"prompt": prompt, "events": events, "answer": answer,
            "teaches": list(teaches), "needs": list(needs)}


def S(project, day, *turns):
    return {"project": project, "day": day, "turns": list(turns)}


# ---------------------------------------------------------------------------
# Sessions, in time order. Ids and taught_in come from this order.
# ---------------------------------------------------------------------------
SESSIONS = []

# --- week 1 ----------------------------------------------------------------
SESSIONS.append(S(VA, 1,
    T("Morning. First session in this repo with you. Walk me through the tap path, from the "
      "NFC read to the upload call, short version please.",
      [B("ls crates && rg -n '^pub (async )?fn' crates/grt-upload/src crates/grt-journal/src | head -12",
         "grt-journal\ngrt-reader\ngrt-upload\ngrt-verify\n"
         "crates/grt-journal/src/lib.rs:41:pub fn open(path: &Path) -> Result<Journal, JournalError> {\n"
         "crates/grt-journal/src/lib.rs:77:pub fn append(&self, tap: &Tap) -> Result<(), JournalError> {\n"
         "crates/grt-journal/src/lib.rs:102:pub fn pending(&self, limit: usize) -> Result<Vec<Tap>, JournalError> {\n"
         "crates/grt-upload/src/lib.rs:28:pub async fn run(cfg: UploadConfig, journal: Journal) -> anyhow::Result<()> {\n"
         "crates/grt-upload/src/lib.rs:63:pub async fn send_batch(client: &Client, url: &Url, taps: &[Tap]) -> anyhow::Result<()> {"),
       R("src/main.rs", 18,
         "#[tokio::main(flavor = \"current_thread\")]\n"
         "async fn main() -> anyhow::Result<()> {\n"
         "    let cfg = config::load(args.config.as_deref())?;\n"
         "    let journal = grt_journal::open(&cfg.data_dir.join(\"taps.db\"))?;\n"
         "    let (tx, rx) = mpsc::channel(64);\n"
         "    tokio::spawn(grt_reader::run(cfg.reader.clone(), tx));\n"
         "    tokio::spawn(grt_upload::run(cfg.upload.clone(), journal.clone()));\n"
         "    taps::process(rx, journal, grt_verify::Verifier::new(&cfg.keys)?).await")],
      "Four crates plus the binary. grt-reader polls the NFC/QR reader and sends raw reads down "
      "an mpsc channel. `taps::process` in the binary checks each one with grt-verify (offline "
      "ed25519 signature check) and appends the result to the grt-journal SQLite store. "
      "Separately, grt-upload loops: `pending(200)` from the journal, `send_batch` to the back "
      "office, then marks the rows uploaded. Reading and uploading are decoupled, so taps "
      "survive while the bus is offline."),
    T("Does it even build for the boards? They're the old i.MX6ULL units, so the target is "
      "armv7-unknown-linux-gnueabihf, and go through cross. The plain host toolchain route links "
      "against the wrong glibc and you only find out on the bus.",
      [B("cross build --release --target armv7-unknown-linux-gnueabihf",
         "   Compiling grt-verify v1.3.2 (/project/crates/grt-verify)\n"
         "   Compiling grt-journal v1.3.2 (/project/crates/grt-journal)\n"
         "   Compiling grt-upload v1.3.2 (/project/crates/grt-upload)\n"
         "   Compiling grt-validator v1.3.2 (/project)\n"
         "    Finished `release` profile [optimized] target(s) in 2m 41s"),
       B("file target/armv7-unknown-linux-gnueabihf/release/grt-validator",
         "target/armv7-unknown-linux-gnueabihf/release/grt-validator: ELF 32-bit LSB pie "
         "executable, ARM, EABI5 version 1 (SYSV), dynamically linked, interpreter "
         "/lib/ld-linux-armhf.so.3, for GNU/Linux 3.2.0, stripped")],
      "It builds: `cross build --release --target armv7-unknown-linux-gnueabihf` finished in "
      "2m 41s and the result is a 32-bit ARM EABI5 binary linked against the armhf loader. "
      "I'll always build for the boards through cross with that target.",
      teaches=["V01"]),
    T("Copy it onto the bench validator and check it starts. It's 10.48.7.21 in the depot lab, "
      "user grt, my key is already in the agent. The service is called grt-validator.",
      [B("scp target/armv7-unknown-linux-gnueabihf/release/grt-validator grt@10.48.7.21:/tmp/ && "
         "ssh grt@10.48.7.21 'sudo install -m755 /tmp/grt-validator /usr/bin/grt-validator && "
         "sudo systemctl restart grt-validator && systemctl status grt-validator --no-pager | head -4'",
         "grt-validator                                 100% 6112KB   9.8MB/s   00:00\n"
         "* grt-validator.service - GRT ticket validator agent\n"
         "     Loaded: loaded (/lib/systemd/system/grt-validator.service; enabled; vendor preset: enabled)\n"
         "     Active: active (running) since Mon 2026-06-01 10:14:02 BST; 3s ago\n"
         "   Main PID: 2291 (grt-validator)")],
      "Installed on the bench unit (grt@10.48.7.21) and restarted: grt-validator is active "
      "(running), PID 2291.",
      teaches=["V02"]),
    T("Good. Commit the Cargo.lock refresh from this morning while we're here. Everything gets "
      "a sign-off, git commit -s: the DCO check on our Gitea bounces anything without one.",
      [B("git add Cargo.lock && git commit -s -m 'Refresh Cargo.lock after tokio 1.38 bump'",
         "[main 4e1c9a2] Refresh Cargo.lock after tokio 1.38 bump\n"
         " 1 file changed, 14 insertions(+), 14 deletions(-)"),
       B("git log -1 --format='%(trailers)'",
         "Signed-off-by: Ceri Evans <ceri.evans@grt-cymru.net>")],
      "Committed as 4e1c9a2 with a Signed-off-by trailer. I'll use `git commit -s` for every "
      "commit so the DCO check passes.",
      teaches=["U01"]),
))

SESSIONS.append(S(RA, 1,
    T("Run the widget tests, I want a baseline before I touch anything.",
      [B("flutter test",
         "Resolving dependencies...\nThe current Dart SDK version is 3.5.3.\n\n"
         "Because grt_rider requires SDK version >=3.4.0 <3.5.0, version solving failed.",
         error=True),
       B("cat .fvmrc", "{\n  \"flutter\": \"3.22.2\"\n}"),
       B("fvm flutter test",
         "00:41 +212 ~3: All tests passed!")],
      "Baseline: 212 passed, 3 skipped. The first run failed because the global flutter is "
      "3.24 (Dart 3.5.3) and the repo pins Flutter 3.22.2 in .fvmrc, so version solving "
      "refused. In this repo I'll run everything as `fvm flutter ...` and `fvm dart ...`.",
      teaches=["R01"]),
    T("Yep, always through fvm here. Next: stop search hits the API on every keystroke. "
      "Debounce it, 300 ms is fine, don't make it configurable.",
      [R("lib/features/search/stop_search_controller.dart", 21,
         "  void onQueryChanged(String query) {\n"
         "    ref.read(stopSearchQueryProvider.notifier).state = query;\n"
         "  }"),
       E("lib/features/search/stop_search_controller.dart",
         "  void onQueryChanged(String query) {\n"
         "    ref.read(stopSearchQueryProvider.notifier).state = query;\n  }",
         "  Timer? _debounce;\n\n"
         "  void onQueryChanged(String query) {\n"
         "    _debounce?.cancel();\n"
         "    _debounce = Timer(const Duration(milliseconds: 300), () {\n"
         "      ref.read(stopSearchQueryProvider.notifier).state = query;\n"
         "    });\n  }"),
       B("fvm flutter test test/features/search",
         "00:06 +14: All tests passed!")],
      "Debounced at a fixed 300 ms with a Timer that's cancelled on each keystroke; search "
      "tests still pass (14)."),
    T("While you're in the map code you'll notice it's google_maps_flutter. Don't get ideas "
      "about swapping it: we're staying on google_maps_flutter until after the July release, "
      "nobody wants a maps migration in the middle of the timetable change.",
      [B("grep -rn 'google_maps_flutter' pubspec.yaml lib | head -4",
         "pubspec.yaml:41:  google_maps_flutter: ^2.7.0\n"
         "lib/features/map/journey_map.dart:3:import 'package:google_maps_flutter/google_maps_flutter.dart';\n"
         "lib/features/map/stop_markers.dart:2:import 'package:google_maps_flutter/google_maps_flutter.dart';")],
      "Noted: the journey map stays on google_maps_flutter (2.7, used in journey_map.dart and "
      "stop_markers.dart) until after the July release; I won't propose a maps migration.",
      teaches=["R08"]),
))

SESSIONS.append(S(FS, 2,
    T("Run the integration tests, I haven't touched this repo since May.",
      [B("./gradlew integrationTest",
         "> Task :integrationTest FAILED\n\n"
         "FeedRepositoryIT > initializationError FAILED\n"
         "    org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection\n"
         "        Caused by: org.postgresql.util.PSQLException: Connection to localhost:5433 refused. "
         "Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.\n\n"
         "14 tests completed, 14 failed\n\nFAILURE: Build failed with an exception.\n\nBUILD FAILED in 23s",
         error=True),
       B("grep -n -A3 '  db:' docker-compose.yml; lsof -nP -iTCP:5432 -sTCP:LISTEN",
         "4:  db:\n5-    image: postgis/postgis:16-3.4\n6-    ports:\n7-      - \"5433:5432\"\n"
         "COMMAND  PID USER   FD   TYPE             DEVICE SIZE/OFF NODE NAME\n"
         "postgres 812 ceri    7u  IPv6 0x5f1c2a0e8d7b41c3      0t0  TCP *:5432 (LISTEN)"),
       B("docker compose up -d db && ./gradlew integrationTest",
         "[+] Running 1/1\n ✔ Container feedsmith-db-1  Started                      0.6s\n"
         "> Task :integrationTest\n\nBUILD SUCCESSFUL in 1m 12s\n6 actionable tasks: 2 executed, 4 up-to-date")],
      "All 14 pass now. The database container simply wasn't running. Note the port: compose "
      "publishes PostGIS on 5433 because Postgres.app on this Mac already listens on 5432, and "
      "application-local.yml points at 5433. So it's `docker compose up -d db` before the "
      "integration tests.",
      teaches=["F01"]),
    T("Trip 4417 shows up twice in the last import with two different block ids. That's not "
      "ours to fix: Nadia Qureshi on the scheduling team produces the HASTUS exports, and "
      "anything odd in trips or blocks goes back to her. We never patch timetable data on our "
      "side. Draft her a short note with the evidence.",
      [B("psql -h localhost -p 5433 -U feedsmith -c \"select trip_id, block_id, service_id, "
         "import_batch from hastus_trip where trip_id = '4417';\"",
         " trip_id | block_id | service_id | import_batch \n"
         "---------+----------+------------+--------------\n"
         " 4417    | 2031     | WKDY-S26   | 2026-05-29\n"
         " 4417    | 2107     | WKDY-S26   | 2026-05-29\n(2 rows)")],
      "Draft for Nadia:\n\n> Hi Nadia, the HASTUS export from 29 May has trip 4417 (WKDY-S26) "
      "twice, once in block 2031 and once in block 2107. We haven't changed anything on our "
      "side. Could you check which block is right and re-export? Thanks.\n\nI haven't touched "
      "the data; the duplicate stays until a corrected export arrives.",
      teaches=["F04"]),
    T("Rename TripRowMapper to HastusTripMapper, it's too easy to confuse with the GTFS one.",
      [B("git mv src/main/java/cymru/grt/feedsmith/hastus/TripRowMapper.java "
         "src/main/java/cymru/grt/feedsmith/hastus/HastusTripMapper.java && "
         "git mv src/test/java/cymru/grt/feedsmith/hastus/TripRowMapperTest.java "
         "src/test/java/cymru/grt/feedsmith/hastus/HastusTripMapperTest.java && rg -l TripRowMapper src",
         "src/main/java/cymru/grt/feedsmith/hastus/HastusTripMapper.java\n"
         "src/main/java/cymru/grt/feedsmith/hastus/HastusImporter.java\n"
         "src/test/java/cymru/grt/feedsmith/hastus/HastusTripMapperTest.java"),
       B("rg -l TripRowMapper src | xargs sed -i '' 's/\\bTripRowMapper\\b/HastusTripMapper/g' && "
         "./gradlew compileJava compileTestJava -q && rg -c TripRowMapper src || true", "")],
      "Renamed the class and its test with git mv and updated the three references; both "
      "source sets compile and nothing named TripRowMapper is left."),
    T("Gradle's warning about the toolchain again. For the record, I manage JDKs, and pretty "
      "much every toolchain, with asdf, pinned per repo in .tool-versions. Check that's what's "
      "actually being used here.",
      [B("cat .tool-versions && asdf current java",
         "java temurin-21.0.3+9.0.LTS\ngradle 8.8\n"
         "java            temurin-21.0.3+9.0.LTS Not installed. Run \"asdf install java temurin-21.0.3+9.0.LTS\"",
         error=True),
       B("asdf install && java -version",
         "Downloading temurin-21.0.3+9.0.LTS ...\n"
         "openjdk version \"21.0.3\" 2024-04-16 LTS\n"
         "OpenJDK Runtime Environment Temurin-21.0.3+9 (build 21.0.3+9-LTS)\n"
         "OpenJDK 64-Bit Server VM Temurin-21.0.3+9 (build 21.0.3+9-LTS, mixed mode)"),
       B("./gradlew -q javaToolchains | head -5",
         " + Eclipse Temurin JDK 21.0.3+9-LTS\n"
         "     | Location:           /Users/ceri/.asdf/installs/java/temurin-21.0.3+9.0.LTS\n"
         "     | Language Version:   21\n     | Vendor:             Eclipse Temurin\n"
         "     | Is JDK:             true")],
      "The JDK pinned in .tool-versions (temurin-21.0.3) wasn't installed, so Gradle fell back "
      "to whatever it could find and warned. `asdf install` fixed it and Gradle now detects "
      "Temurin 21.0.3 from ~/.asdf/installs. I'll use asdf and the repo's .tool-versions for "
      "toolchains.",
      teaches=["U03"]),
))

SESSIONS.append(S(VA, 2,
    T("Get current main running on the bench validator, I want to tap the new concession "
      "cards this afternoon.",
      [B("git pull --ff-only && cross build --release --target armv7-unknown-linux-gnueabihf",
         "Updating 4e1c9a2..9a03d11\nFast-forward\n crates/grt-reader/src/desfire.rs | 22 ++++++++++++++++------\n"
         "    Finished `release` profile [optimized] target(s) in 38.2s"),
       B("scp target/armv7-unknown-linux-gnueabihf/release/grt-validator grt@10.48.7.21:/tmp/ && "
         "ssh grt@10.48.7.21 'sudo install -m755 /tmp/grt-validator /usr/bin/ && "
         "sudo systemctl restart grt-validator && systemctl is-active grt-validator'",
         "grt-validator                                 100% 6120KB  10.1MB/s   00:00\nactive")],
      "main (9a03d11, includes the DESFire read change) is built for the boards and running on "
      "the bench unit; the service is active.",
      needs=["V01", "V02"]),
    T("Don't do that by hand next time, there's a justfile. `just deploy-bench` does the cross "
      "build, the copy, drops the bench config in place and restarts the service. Try it so we "
      "know it works on your side.",
      [B("just deploy-bench", "zsh: command not found: just", error=True),
       B("echo 'just 1.28.0' >> .tool-versions && asdf plugin add just && asdf install just 1.28.0",
         "Downloading just 1.28.0...\njust 1.28.0 installation was successful!"),
       B("just deploy-bench",
         "cross build --release --target armv7-unknown-linux-gnueabihf\n"
         "    Finished `release` profile [optimized] target(s) in 1.9s\n"
         "scp target/armv7-unknown-linux-gnueabihf/release/grt-validator bench/agent.toml grt@10.48.7.21:/tmp/\n"
         "ssh grt@10.48.7.21 'sudo install -m755 /tmp/grt-validator /usr/bin/ && "
         "sudo install -m644 /tmp/agent.toml /etc/cvt/agent.toml && sudo systemctl restart grt-validator'\n"
         "bench: grt-validator active")],
      "`just` wasn't installed on this machine, so I pinned `just 1.28.0` in the repo's "
      ".tool-versions and installed it with asdf. `just deploy-bench` then ran cleanly: cross "
      "build, copy of binary and bench config, restart, service active. I'll use that recipe "
      "for the bench from now on.",
      teaches=["V07"], needs=["U03"]),
    T("uploader returns anyhow::Result all over the place. House style: thiserror enums in the "
      "library crates, anyhow only at the very edge in main.rs. Give grt-upload a proper error "
      "type.",
      [R("crates/grt-upload/src/lib.rs", 63,
         "pub async fn send_batch(client: &Client, url: &Url, taps: &[Tap]) -> anyhow::Result<()> {\n"
         "    let resp = client.post(url.clone()).json(&Batch::from(taps)).send().await?;\n"
         "    if !resp.status().is_success() {\n"
         "        anyhow::bail!(\"upload rejected: {}\", resp.status());\n    }"),
       W("crates/grt-upload/src/error.rs",
         "#[derive(Debug, thiserror::Error)]\npub enum UploadError {\n"
         "    #[error(\"request failed: {0}\")]\n    Http(#[from] reqwest::Error),\n"
         "    #[error(\"back office rejected batch: {status}\")]\n    Rejected { status: reqwest::StatusCode },\n"
         "    #[error(\"journal: {0}\")]\n    Journal(#[from] grt_journal::JournalError),\n}\n"),
       E("crates/grt-upload/src/lib.rs",
         "-> anyhow::Result<()> {\n    let resp = client.post(url.clone()).json(&Batch::from(taps)).send().await?;\n"
         "    if !resp.status().is_success() {\n        anyhow::bail!(\"upload rejected: {}\", resp.status());",
         "-> Result<(), UploadError> {\n    let resp = client.post(url.clone()).json(&Batch::from(taps)).send().await?;\n"
         "    if !resp.status().is_success() {\n        return Err(UploadError::Rejected { status: resp.status() });"),
       B("cargo nextest run -p grt-upload",
         "    Starting 23 tests across 1 binary\n"
         "        PASS [   0.011s] grt-upload tests::rejected_batch_is_not_marked_uploaded\n"
         "        PASS [   0.014s] grt-upload tests::retries_on_503\n"
         "------------\n     Summary [   0.402s] 23 tests run: 23 passed, 0 skipped")],
      "grt-upload now has `UploadError` (thiserror) with Http, Rejected and Journal variants; "
      "`run` and `send_batch` return it, and main.rs still uses anyhow and converts with `?`. "
      "All 23 grt-upload tests pass.",
      teaches=["V04"]),
))

SESSIONS.append(S(RA, 3,
    T("Departures less than a minute away should say 'Arriving now' instead of '0 min'. "
      "Reminder that every user-facing string goes in both lib/l10n/app_en.arb and app_cy.arb. "
      "The Welsh Language Standards apply to us, so a missing Welsh string is a compliance "
      "problem, not a nit. If you're not sure of the Welsh, flag it for the translators.",
      [E("lib/l10n/app_en.arb", "  \"departureMinutes\": \"{minutes} min\",",
         "  \"departureMinutes\": \"{minutes} min\",\n  \"departureArrivingNow\": \"Arriving now\","),
       E("lib/l10n/app_cy.arb", "  \"departureMinutes\": \"{minutes} mun\",",
         "  \"departureMinutes\": \"{minutes} mun\",\n  \"departureArrivingNow\": \"Yn cyrraedd nawr\","),
       E("lib/features/departures/departure_row.dart",
         "Text(l10n.departureMinutes(d.minutesAway))",
         "Text(d.minutesAway < 1 ? l10n.departureArrivingNow : l10n.departureMinutes(d.minutesAway))"),
       B("fvm flutter gen-l10n && fvm flutter test test/features/departures",
         "00:04 +19: All tests passed!")],
      "Added `departureArrivingNow` to app_en.arb ('Arriving now') and app_cy.arb ('Yn cyrraedd "
      "nawr'), used it in departure_row.dart for under a minute, regenerated l10n; departures "
      "tests pass. The Welsh is the standard phrasing, but I've listed it in the PR notes for "
      "the translators to confirm.",
      teaches=["R03"], needs=["R01"]),
    T("Run it against staging so I can look at it on the simulator. There's no default "
      "flavour: it's --flavor stg -t lib/main_stg.dart, which talks to the staging API and the "
      "grt-rider-stg Firebase project.",
      [B("fvm flutter run --flavor stg -t lib/main_stg.dart -d 'iPhone 15'",
         "Launching lib/main_stg.dart on iPhone 15 in debug mode...\nRunning Xcode build...\n"
         "Xcode build done.                                           38.4s\n"
         "Syncing files to device iPhone 15...                               412ms\n\n"
         "Flutter run key commands.\nr Hot reload.\nR Hot restart.\n"
         "A Dart VM Service on iPhone 15 is available at: http://127.0.0.1:50371/kq3Xw1Zg0aY=/")],
      "Running on the iPhone 15 simulator with the stg flavor (lib/main_stg.dart), so it's "
      "against the staging API and Firebase grt-rider-stg. Hot reload is live if you want to "
      "poke at the departures list.",
      teaches=["R10"]),
    T("Make the 'Arriving now' threshold a provider so we can tune it per operator later. And "
      "no ChangeNotifier for it: we settled on Riverpod with riverpod_generator across the "
      "app. No Bloc, no provider package in new code.",
      [W("lib/features/departures/arrival_threshold.dart",
         "import 'package:riverpod_annotation/riverpod_annotation.dart';\n\n"
         "part 'arrival_threshold.g.dart';\n\n"
         "/// Departures closer than this are shown as \"Arriving now\".\n"
         "@riverpod\nDuration arrivalThreshold(ArrivalThresholdRef ref) => const Duration(minutes: 1);\n"),
       E("lib/features/departures/departure_row.dart",
         "d.minutesAway < 1 ? l10n.departureArrivingNow",
         "d.until < ref.watch(arrivalThresholdProvider) ? l10n.departureArrivingNow"),
       B("fvm dart run build_runner build",
         "[INFO] Generating build script completed, took 388ms\n"
         "[INFO] Running build completed, took 8.7s\n"
         "[INFO] Succeeded after 8.8s with 2 outputs (5 actions)"),
       B("fvm flutter test test/features/departures", "00:04 +19: All tests passed!")],
      "Added `arrivalThresholdProvider` as a generated @riverpod function provider (one minute "
      "for now), the row watches it, and the .g.dart part is generated. Tests still pass. "
      "Riverpod + riverpod_generator for all state from here on, no Bloc or ChangeNotifier.",
      teaches=["R02"]),
))

SESSIONS.append(S(FS, 3,
    T("When did we last publish the public feed?",
      [B("rg -n 'bucket|region|publishFeed' build.gradle.kts",
         "88:tasks.register<PublishFeedTask>(\"publishFeed\") {\n"
         "91:    bucket.set(\"grt-gtfs-public\")\n92:    region.set(\"eu-west-2\")"),
       B("aws s3 ls s3://grt-gtfs-public/gtfs/ --region eu-west-2",
         "\nUnable to locate credentials. You can configure credentials by running \"aws configure\".",
         error=True)],
      "The publish task uploads to s3://grt-gtfs-public/gtfs/ in eu-west-2, but this shell has "
      "no AWS credentials, so I can't list it yet. How do you normally get credentials here?"),
    T("I never keep creds in the shell. Wrap it: op run --env-file=.env.op -- <command>, and "
      "1Password fills them in. And yes, grt-gtfs-public is the real thing: Traveline and "
      "Google both pull from it, so treat it as production.",
      [B("cat .env.op",
         "AWS_ACCESS_KEY_ID=op://GRT Data/feedsmith-publisher/access key id\n"
         "AWS_SECRET_ACCESS_KEY=op://GRT Data/feedsmith-publisher/secret access key"),
       B("op run --env-file=.env.op -- aws s3 ls s3://grt-gtfs-public/gtfs/ --region eu-west-2",
         "2026-05-22 01:17:44    6841290 grt-gtfs-2026-05-22.zip\n"
         "2026-05-29 01:16:09    6857713 grt-gtfs-2026-05-29.zip\n"
         "2026-05-29 01:16:10    6857713 latest.zip")],
      "Last publish was Friday 29 May at 01:16 (grt-gtfs-2026-05-29.zip, also copied to "
      "latest.zip). I'll run anything that needs credentials through `op run "
      "--env-file=.env.op -- ...` and treat grt-gtfs-public as production, since Traveline "
      "and Google consume it.",
      teaches=["U04", "F09"]),
    T("Roughly what changed between the 22nd and the 29th? Trip counts per route is enough, "
      "don't go down a rabbit hole.",
      [B("for d in 22 29; do op run --env-file=.env.op -- aws s3 cp "
         "s3://grt-gtfs-public/gtfs/grt-gtfs-2026-05-$d.zip /tmp/gtfs-$d.zip --quiet; done && "
         "diff <(unzip -p /tmp/gtfs-22.zip trips.txt | cut -d, -f1 | sort | uniq -c) "
         "<(unzip -p /tmp/gtfs-29.zip trips.txt | cut -d, -f1 | sort | uniq -c)",
         "14c14\n<     212 T1\n---\n>     236 T1\n27c27\n<      48 37\n---\n>      52 37",
         error=True)],
      "Only two routes changed: T1 went from 212 to 236 trips (the summer Saturday "
      "frequency) and route 37 from 48 to 52. Everything else is identical. (diff exits 1 "
      "because there are differences.)"),
))

SESSIONS.append(S(VA, 4,
    T("I'm about to change the ticket signature check to accept the new key id the back office "
      "rotates to next month. Heads up: anything under crates/grt-verify needs a review from "
      "Kofi Mensah in security before it merges, no exceptions, even one-liners. Show me where "
      "the key lookup happens first.",
      [R("crates/grt-verify/src/keys.rs", 12,
         "const KEYS: &[(&str, [u8; 32])] = &[\n"
         "    (\"grt-2025a\", hex!(\"3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29\")),\n"
         "];\n\n"
         "pub fn lookup(kid: &str) -> &'static VerifyingKey {\n"
         "    KEYS.iter().find(|(k, _)| *k == kid).map(|(_, b)| parse(b)).unwrap()\n}")],
      "The lookup is `keys::lookup` in crates/grt-verify/src/keys.rs: a static table with one "
      "entry (grt-2025a), and an `unwrap()` that panics on an unknown kid. Since this is "
      "grt-verify, the PR will need Kofi Mensah's review before merge.",
      teaches=["V08"]),
    T("Add the new key id grt-2026b next to the current one, and make an unknown key id a "
      "proper error instead of that panic.",
      [E("crates/grt-verify/src/keys.rs",
         "    (\"grt-2025a\", hex!(\"3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29\")),\n];",
         "    (\"grt-2025a\", hex!(\"3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29\")),\n"
         "    (\"grt-2026b\", hex!(\"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\")),\n];"),
       E("crates/grt-verify/src/keys.rs",
         "pub fn lookup(kid: &str) -> &'static VerifyingKey {\n"
         "    KEYS.iter().find(|(k, _)| *k == kid).map(|(_, b)| parse(b)).unwrap()",
         "pub fn lookup(kid: &str) -> Result<VerifyingKey, VerifyError> {\n"
         "    KEYS.iter().find(|(k, _)| *k == kid).map(|(_, b)| parse(b))\n"
         "        .ok_or_else(|| VerifyError::UnknownKeyId(kid.to_owned()))"),
       E("crates/grt-verify/src/error.rs",
         "    #[error(\"bad signature\")]\n    BadSignature,",
         "    #[error(\"bad signature\")]\n    BadSignature,\n"
         "    #[error(\"unknown key id {0:?}\")]\n    UnknownKeyId(String),"),
       B("cargo nextest run -p grt-verify",
         "    Starting 31 tests across 1 binary\n"
         "        PASS [   0.004s] grt-verify keys::tests::unknown_kid_is_an_error\n"
         "------------\n     Summary [   0.188s] 31 tests run: 31 passed, 0 skipped")],
      "grt-2026b is in the key table, and `lookup` now returns `Result<_, VerifyError>` with a "
      "new `UnknownKeyId` variant on the existing thiserror enum instead of panicking; callers "
      "propagate it and the tap is journalled as rejected. 31 tests pass, including a new one "
      "for the unknown kid.",
      needs=["V04"]),
    T("I power-cycled the bench unit at lunch and it hasn't uploaded a single tap since. Have "
      "a look.",
      [B("ssh grt@10.48.7.21 'journalctl -u grt-validator -b --no-pager | head -6'",
         "Jan 01 00:00:07 val-bench grt-validator[301]: INFO grt_validator: starting version=1.3.2\n"
         "Jan 01 00:00:09 val-bench grt-validator[301]: WARN grt_upload: upload failed, retrying "
         "error=error sending request for url (https://taps.grt-cymru.net/v2/taps/batch): "
         "invalid peer certificate: certificate is not yet valid backoff_secs=60\n"
         "Jun 04 12:41:15 val-bench systemd-timesyncd[220]: Initial clock synchronization to "
         "Thu 2026-06-04 12:41:15.310 BST.\n"
         "Jun 04 12:41:58 val-bench grt-validator[301]: WARN grt_upload: upload failed, retrying "
         "backoff_secs=3600"),
       B("ssh grt@10.48.7.21 'systemctl cat grt-validator | grep -E \"^(After|Wants)=\"'",
         "After=network-online.target\nWants=network-online.target"),
       E("packaging/grt-validator.service",
         "After=network-online.target\nWants=network-online.target",
         "After=network-online.target time-sync.target\nWants=network-online.target time-sync.target"),
       B("just deploy-bench && ssh grt@10.48.7.21 'sudo systemctl enable --now systemd-time-wait-sync "
         "&& sudo reboot'; sleep 90; ssh grt@10.48.7.21 'journalctl -u grt-validator -b --no-pager | tail -2'",
         "bench: grt-validator active\n"
         "Created symlink /etc/systemd/system/sysinit.target.wants/systemd-time-wait-sync.service.\n"
         "Jun 04 13:02:29 val-bench grt-validator[298]: INFO grt_validator: starting version=1.3.2\n"
         "Jun 04 13:02:31 val-bench grt-validator[298]: INFO grt_upload: batch uploaded count=200")],
      "Root cause: the boards have no RTC, so after a power cycle the clock starts at 1 Jan "
      "1970 and the agent started uploading before NTP sync. TLS rejected the back office "
      "certificate as 'not yet valid', and by the time the clock jumped the backoff had grown "
      "to an hour. Fix: grt-validator.service now has After=/Wants=time-sync.target and "
      "systemd-time-wait-sync is enabled, so time-sync.target only fires once the clock is "
      "real. After a reboot it uploaded 200 taps within two seconds of starting. The unit "
      "file change also needs to go into the image recipe.",
      teaches=["V06"], needs=["V02"]),
    T("Commit the unit-file change and the key-id change separately.",
      [B("git add packaging/grt-validator.service && git commit -s -m 'Start validator after time sync' "
         "&& git add crates/grt-verify && git commit -s -m 'Accept key id grt-2026b, error on unknown key ids'",
         "[feat/key-2026b 8d2e017] Start validator after time sync\n"
         " 1 file changed, 2 insertions(+), 2 deletions(-)\n"
         "[feat/key-2026b 1b9f4c3] Accept key id grt-2026b, error on unknown key ids\n"
         " 3 files changed, 41 insertions(+), 9 deletions(-)")],
      "Two signed-off commits on feat/key-2026b: 8d2e017 (unit file) and 1b9f4c3 (key id and "
      "UnknownKeyId error).",
      needs=["U01"]),
))

SESSIONS.append(S(RA, 4,
    T("Play Console is nagging about API levels, so let me get ahead of it: we keep "
      "minSdk = 23. About 4% of riders are still on Android 6 and 7, mostly concession pass "
      "holders, and we don't drop them without a decision from above. So no minSdk bump as a "
      "side effect of dependency updates. Where is it set at the moment?",
      [B("grep -n 'minSdk\\|targetSdk\\|compileSdk' android/app/build.gradle.kts",
         "14:    compileSdk = 34\n22:        minSdk = 23\n23:        targetSdk = 34")],
      "It's in android/app/build.gradle.kts, line 22: minSdk = 23, with targetSdk and "
      "compileSdk at 34. The Play warning is about targetSdk, which is separate. I'll leave "
      "minSdk = 23 alone during dependency updates and flag any package that demands more.",
      teaches=["R13"]),
    T("Bump firebase_core and firebase_crashlytics to current and make sure iOS still builds.",
      [B("fvm flutter pub upgrade --major-versions firebase_core firebase_crashlytics",
         "Resolving dependencies...\nChanged 2 constraints in pubspec.yaml:\n"
         "  firebase_core: ^2.32.0 -> ^3.1.1\n  firebase_crashlytics: ^3.5.7 -> ^4.0.2\n"
         "Changed 6 dependencies!"),
       B("cd ios && pod install",
         "Analyzing dependencies\n"
         "[!] CocoaPods could not find compatible versions for pod \"firebase_crashlytics\":\n"
         "  In Podfile:\n    firebase_crashlytics (from `.symlinks/plugins/firebase_crashlytics/ios`)\n\n"
         "Specs satisfying the `firebase_crashlytics (from `.symlinks/plugins/firebase_crashlytics/ios`)` "
         "dependency were found, but they required a higher minimum deployment target.",
         error=True),
       E("ios/Podfile", "# platform :ios, '12.0'", "platform :ios, '13.0'"),
       B("cd ios && pod install --repo-update",
         "Updating local specs repositories\nAnalyzing dependencies\nDownloading dependencies\n"
         "Pod installation complete! There are 14 dependencies from the Podfile and 38 total pods installed."),
       B("fvm flutter build ios --flavor prod -t lib/main_prod.dart --no-codesign",
         "Building cymru.grt.rider for device (ios-release)...\nRunning Xcode build...\n"
         "Xcode build done.                                          142.7s\n"
         "✓ Built build/ios/iphoneos/Runner.app (48.3MB)")],
      "Bumped firebase_core to ^3.1.1 and firebase_crashlytics to ^4.0.2. pod install then "
      "failed: the new Firebase pods need iOS 13 and the Podfile still had the default "
      "(commented-out) 12.0 platform. I set `platform :ios, '13.0'` in ios/Podfile, re-ran pod "
      "install with --repo-update, and the prod release build succeeds (48.3 MB). iOS 12 users "
      "can't get this version any more, though App Store data says that's nobody.",
      teaches=["R05"], needs=["R01"]),
    T("Open a PR for the Firebase bump. Our PR descriptions always start with a '## Rider "
      "impact' section, what a rider would actually notice or 'None'. Aoife reads that bit "
      "and nothing else.",
      [B("git checkout -b chore/firebase-3 && git commit -s -am 'Bump Firebase to 3.x, iOS 13 minimum'",
         "Switched to a new branch 'chore/firebase-3'\n"
         "[chore/firebase-3 6c1d8e4] Bump Firebase to 3.x, iOS 13 minimum\n"
         " 4 files changed, 61 insertions(+), 48 deletions(-)"),
       B("git push -u origin chore/firebase-3 && tea pulls create --head chore/firebase-3 --base main "
         "--title 'Bump Firebase to 3.x (iOS 13 minimum)' --description \"$(cat <<'EOF'\n"
         "## Rider impact\nNone for riders on iOS 13+. iOS 12 devices stop receiving updates (0 active installs).\n\n"
         "## Changes\n- firebase_core ^3.1.1, firebase_crashlytics ^4.0.2\n- Podfile platform raised to iOS 13.0\nEOF\n)\"",
         "branch 'chore/firebase-3' set up to track 'origin/chore/firebase-3'.\n"
         "#412 Bump Firebase to 3.x (iOS 13 minimum)\n"
         "https://git.grt-cymru.net/apps/rider-app/pulls/412")],
      "PR #412 is open: https://git.grt-cymru.net/apps/rider-app/pulls/412. The description "
      "starts with '## Rider impact' (none on iOS 13+, iOS 12 stops getting updates), then the "
      "change list. Every PR description will lead with that section.",
      teaches=["U09"], needs=["U01"]),
))

SESSIONS.append(S(FS, 5,
    T("Add a migration for a stop_accessibility table: stop_id, step_free, tactile_paving, "
      "updated_at. Migrations here are named with a timestamp, V<yyyyMMddHHmm>__snake_case.sql: "
      "two branches with sequential numbers collided last year and Flyway refused to start in "
      "prod. And once a migration has been applied anywhere it's never edited, you add a new one.",
      [B("ls src/main/resources/db/migration | tail -3",
         "V202605121030__hastus_block.sql\nV202605200915__trip_headsign_cy.sql\n"
         "V202605281140__import_batch_index.sql"),
       W("src/main/resources/db/migration/V202606050940__stop_accessibility.sql",
         "create table stop_accessibility (\n    stop_id        text primary key,\n"
         "    step_free      boolean not null,\n    tactile_paving boolean not null,\n"
         "    updated_at     timestamptz not null default now()\n);\n"),
       B("docker compose up -d db && ./gradlew flywayMigrate",
         " ✔ Container feedsmith-db-1  Running\n> Task :flywayMigrate\n"
         "Successfully applied 1 migration to schema \"public\", now at version v202606050940 "
         "(execution time 00:00.031s)\n\nBUILD SUCCESSFUL in 4s")],
      "Added V202606050940__stop_accessibility.sql (yyyyMMddHHmm timestamp) and applied it to "
      "the local database. From now on I'll name migrations by timestamp and never edit one "
      "once it has been applied anywhere beyond my machine.",
      teaches=["F03"], needs=["F01"]),
    T("stop_id there should be the NaPTAN ATCO code, not our HASTUS stop number. The public "
      "feed uses ATCO codes as stop_id so journey planners can match us against NaPTAN, and "
      "the same goes for anything new that references stops. This one isn't merged yet, so "
      "changing it in place is fine.",
      [E("src/main/resources/db/migration/V202606050940__stop_accessibility.sql",
         "    stop_id        text primary key,",
         "    stop_id        text primary key,  -- NaPTAN ATCO code, e.g. 5710AWA10617"),
       E("src/main/java/cymru/grt/feedsmith/stops/StopAccessibilityRepository.java",
         "    public Optional<StopAccessibility> find(int hastusStopNo) {",
         "    public Optional<StopAccessibility> find(String atcoCode) {"),
       B("./gradlew flywayClean flywayMigrate -Pflyway.cleanDisabled=false -q && ./gradlew compileJava -q", "")],
      "stop_id is documented as the ATCO code and the repository looks rows up by ATCO code "
      "(a String) instead of the HASTUS number. Since it wasn't applied anywhere else, I "
      "cleaned and re-migrated my local database. Anything new that references stops will key "
      "on ATCO codes.",
      teaches=["F10"]),
    T("Run the whole suite before I head off.",
      [B("./gradlew check",
         "> Task :test\n> Task :integrationTest\n> Task :check\n\n"
         "BUILD SUCCESSFUL in 2m 4s\n19 actionable tasks: 7 executed, 12 up-to-date")],
      "`./gradlew check` is green: unit and integration tests pass (2m 4s)."),
    T("One more thing. Aoife Brennan, who's PM across all three of my projects, asked whether "
      "the accessibility data can reach the app by the July release. Scope and timeline "
      "questions go to her, not to whoever happens to be in the thread. Write me a three-line "
      "reply I can paste.",
      [],
      "Draft for Aoife:\n\n> The table for step-free access and tactile paving is in feedsmith "
      "now (keyed by ATCO code). Getting it into the July app release needs an API endpoint "
      "and a rider-app screen, roughly a week together. If it's in scope for July, I'd cut "
      "the planned favourites polish to make room; your call.\n\nNoted that scope and timing "
      "decisions go to Aoife.",
      teaches=["U08"]),
))

# --- week 2 ----------------------------------------------------------------
SESSIONS.append(S(VA, 8,
    T("Someone on the platform team suggested moving the tap journal to sled. No. We decided "
      "on SQLite through rusqlite with journal_mode=WAL, because the boards lose power "
      "mid-write and WAL came through the pull-the-plug tests clean. Put a comment at the "
      "pragma so this doesn't come up every quarter.",
      [R("crates/grt-journal/src/lib.rs", 41,
         "pub fn open(path: &Path) -> Result<Journal, JournalError> {\n"
         "    let conn = Connection::open(path)?;\n"
         "    conn.pragma_update(None, \"journal_mode\", \"WAL\")?;\n"
         "    conn.pragma_update(None, \"synchronous\", \"NORMAL\")?;"),
       E("crates/grt-journal/src/lib.rs",
         "    conn.pragma_update(None, \"journal_mode\", \"WAL\")?;",
         "    // Decision: the journal is SQLite (rusqlite) with journal_mode=WAL, not sled or flat\n"
         "    // files. Validators lose power mid-write; WAL recovered cleanly in every\n"
         "    // power-cut test on the boards. Don't change this without repeating those tests.\n"
         "    conn.pragma_update(None, \"journal_mode\", \"WAL\")?;")],
      "Comment added above the pragma in grt-journal: SQLite via rusqlite with "
      "journal_mode=WAL is the decision, with the power-cut reason and a note not to change it "
      "without repeating those tests.",
      teaches=["V03"]),
    T("The reader keeps answering 6A82 on the new concession cards. Don't fiddle with the "
      "pcsc timings: Rasmus Holt owns the reader hardware and the driver config. Capture an "
      "APDU trace he can work from.",
      [E("crates/grt-reader/src/desfire.rs",
         "    let resp = card.transmit(&apdu, &mut buf)?;",
         "    let resp = card.transmit(&apdu, &mut buf)?;\n"
         "    println!(\"APDU >> {} << {}\", hex::encode(&apdu), hex::encode(resp));"),
       B("just deploy-bench && ssh grt@10.48.7.21 'sudo journalctl -u grt-validator -f -o cat' | head -4",
         "bench: grt-validator active\n"
         "APDU >> 00a4040007d276000085010100 << 6a82\n"
         "APDU >> 905a00000300a1c200 << 91a0\n"
         "APDU >> 00a4040007d276000085010100 << 6a82")],
      "Trace captured from the bench while you tapped: the SELECT of the DESFire application "
      "(AID D2760000850101) gets 6A82 'file or application not found', and the GRT "
      "application select returns 91A0. So the card doesn't expose the AID the reader "
      "expects. I haven't touched the driver. Message for Rasmus Holt with the trace attached: "
      "\"new concession cards return 6A82 on SELECT D2760000850101, trace below, reader config "
      "unchanged.\"",
      teaches=["V05"]),
    T("Keep the trace build on the bench overnight so he can play with it tomorrow morning.",
      [B("just deploy-bench",
         "cross build --release --target armv7-unknown-linux-gnueabihf\n"
         "    Finished `release` profile [optimized] target(s) in 2.3s\n"
         "bench: grt-validator active")],
      "Redeployed the trace build to the bench; it'll stay there until someone deploys over it.",
      teaches=[], needs=["V07"]),
    T("Hang on, why is there a println! in desfire.rs? Take it out. Everything goes through "
      "tracing with fields, and on the devices that's tracing-journald so it lands in the "
      "journal properly. I don't want to see println! anywhere in this crate.",
      [E("crates/grt-reader/src/desfire.rs",
         "    println!(\"APDU >> {} << {}\", hex::encode(&apdu), hex::encode(resp));",
         "    tracing::debug!(apdu = %hex::encode(&apdu), sw = %hex::encode(resp), \"apdu exchange\");"),
       B("rg -n 'println!' crates src | wc -l && just deploy-bench",
         "0\nbench: grt-validator active")],
      "Replaced it with `tracing::debug!` with apdu and sw fields; on the bench it reaches the "
      "journal through tracing-journald like everything else. No println! left in the tree, "
      "and I'll stick to tracing for any logging here.",
      teaches=["V11"]),
))

SESSIONS.append(S(RA, 8,
    T("Favourite stops: let people star a stop and show their list on the home screen, stored "
      "on the device.",
      [W("lib/features/favourites/favourite_stops.dart",
         "import 'package:riverpod_annotation/riverpod_annotation.dart';\n"
         "import 'package:shared_preferences/shared_preferences.dart';\n\n"
         "part 'favourite_stops.g.dart';\n\n"
         "@riverpod\nclass FavouriteStops extends _$FavouriteStops {\n"
         "  static const _key = 'favourite_stops';\n\n"
         "  @override\n  Future<List<String>> build() async =>\n"
         "      (await SharedPreferences.getInstance()).getStringList(_key) ?? const [];\n\n"
         "  Future<void> toggle(String stopId) async { /* ... */ }\n}\n"),
       B("fvm dart run build_runner build",
         "[INFO] Generating build script completed, took 401ms\n"
         "[SEVERE] Conflicting outputs were detected and the build is unable to prompt for "
         "permission to remove them. These outputs must be removed manually or the build can be "
         "run with `--delete-conflicting-outputs`. The outputs are: "
         "lib/features/departures/arrival_threshold.g.dart",
         error=True),
       B("git ls-files '*.g.dart' | wc -l && fvm dart run build_runner build --delete-conflicting-outputs",
         "37\n[INFO] Running build completed, took 10.1s\n"
         "[INFO] Succeeded after 10.2s with 4 outputs (9 actions)"),
       B("fvm flutter test", "01:02 +221 ~3: All tests passed!")],
      "Favourites are an `@riverpod` notifier backed by shared_preferences, with a star on the "
      "stop page and a list on home. build_runner first refused: the generated .g.dart files "
      "are committed (37 tracked), so a checked-in output it didn't produce counts as a "
      "conflict. With `--delete-conflicting-outputs` it regenerated cleanly; I'll always run "
      "it that way here and commit the .g.dart changes. 221 tests pass.",
      teaches=["R09"], needs=["R01", "R02"]),
    T("Put a 'Your stops' heading over the list, and drop a pin on the home map for each "
      "favourite.",
      [E("lib/l10n/app_en.arb", "  \"homeTitle\": \"Home\",",
         "  \"homeTitle\": \"Home\",\n  \"favouritesHeading\": \"Your stops\","),
       E("lib/l10n/app_cy.arb", "  \"homeTitle\": \"Hafan\",",
         "  \"homeTitle\": \"Hafan\",\n  \"favouritesHeading\": \"Eich arosfannau\","),
       E("lib/features/map/stop_markers.dart",
         "Set<Marker> stopMarkers(List<Stop> stops) => {};",
         "Set<Marker> stopMarkers(List<Stop> stops) => {\n"
         "      for (final s in stops)\n"
         "        Marker(markerId: MarkerId(s.id), position: LatLng(s.lat, s.lon),\n"
         "            infoWindow: InfoWindow(title: s.name)),\n    };"),
       B("fvm flutter gen-l10n && fvm flutter test test/features/favourites",
         "00:05 +9: All tests passed!")],
      "Heading added in English and Welsh ('Your stops' / 'Eich arosfannau'), and the home map "
      "gets a Marker per favourite via the existing google_maps_flutter markers helper. Tests "
      "pass.",
      needs=["R03", "R08"]),
    T("Good, commit it.",
      [B("git add -A && git commit -s -m 'Add favourite stops to home screen'",
         "[feat/favourites 2b7e9d0] Add favourite stops to home screen\n"
         " 9 files changed, 284 insertions(+), 6 deletions(-)")],
      "Committed as 2b7e9d0 on feat/favourites, signed off.",
      needs=["U01"]),
))

SESSIONS.append(S(FS, 9,
    T("Export the full June period, I want to see how long it takes now the summer trips are "
      "in.",
      [B("./gradlew bootRun --args='export --period 2026-06'",
         "2026-06-09T09:41:07.118+01:00  INFO 40122 --- [main] c.g.f.export.ExportCommand : exporting period 2026-06\n"
         "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"
         "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3540)\n"
         "\tat java.base/java.util.ArrayList.grow(ArrayList.java:237)\n"
         "\tat org.springframework.jdbc.core.RowMapperResultSetExtractor.extractData(RowMapperResultSetExtractor.java:94)\n"
         "\tat cymru.grt.feedsmith.export.StopTimeExporter.export(StopTimeExporter.java:58)\n\n"
         "> Task :bootRun FAILED",
         error=True),
       R("src/main/java/cymru/grt/feedsmith/export/StopTimeExporter.java", 55,
         "    public void export(String period, CsvWriter out) {\n"
         "        List<StopTime> all = jdbc.query(\n"
         "            \"select * from stop_time where period = ? order by trip_id, stop_sequence\",\n"
         "            mapper, period);\n"
         "        all.forEach(st -> out.write(st));"),
       E("src/main/java/cymru/grt/feedsmith/export/StopTimeExporter.java",
         "    public void export(String period, CsvWriter out) {\n"
         "        List<StopTime> all = jdbc.query(",
         "    @Transactional(readOnly = true) // pgjdbc only streams with autocommit off\n"
         "    public void export(String period, CsvWriter out) {\n"
         "        jdbc.setFetchSize(5000);\n"
         "        try (Stream<StopTime> rows = jdbc.queryForStream("),
       B("./gradlew bootRun --args='export --period 2026-06'",
         "2026-06-09T09:52:40.503+01:00  INFO 40410 --- [main] c.g.f.export.ExportCommand : "
         "exported 1,482,916 stop_times in 41.3s -> build/gtfs/grt-gtfs-2026-06.zip\n\nBUILD SUCCESSFUL in 58s")],
      "It ran out of heap: StopTimeExporter loaded every stop_time for the period into a List "
      "(about 1.5 million rows with summer). I changed it to stream: `queryForStream` with "
      "`setFetchSize(5000)` inside a read-only transaction (pgjdbc ignores the fetch size "
      "with autocommit on). The full June export now takes 41 s and stays flat on memory.",
      teaches=["F05"]),
    T("Before anyone calls this publishable: decision from the feed review after Google "
      "rejected the March feed, nothing goes out if the MobilityData gtfs-validator reports a "
      "single ERROR notice. Warnings we live with. Run it on that zip.",
      [B("java -jar tools/gtfs-validator-5.0.1-cli.jar -i build/gtfs/grt-gtfs-2026-06.zip "
         "-o build/validation -c gb",
         "INFO: Validation took 9.84 seconds\n"
         "INFO: report written to build/validation/report.html"),
       B("jq -r '.notices[] | \"\\(.severity) \\(.code) \\(.totalNotices)\"' build/validation/report.json",
         "ERROR block_trips_with_overlapping_stop_times 3\n"
         "WARNING stop_too_far_from_shape 38\nWARNING fast_travel_between_consecutive_stops 3\n"
         "INFO unknown_file 1")],
      "Not publishable: the gtfs-validator run shows 3 ERROR notices, all "
      "block_trips_with_overlapping_stop_times, plus 41 warnings (which we accept). I'll run "
      "the validator on every export and treat any ERROR as a stop.",
      teaches=["F02"]),
    T("Those overlaps are the same duplicate-trip mess from last week, aren't they? Get it to "
      "the right person with the three trip pairs.",
      [B("jq -r '.notices[] | select(.code==\"block_trips_with_overlapping_stop_times\") | "
         ".sampleNotices[] | \"\\(.blockId) \\(.tripIdA) \\(.tripIdB)\"' build/validation/report.json",
         "2031 4417 4419\n2107 4417 4452\n2107 4451 4452")],
      "Yes, two of the three involve trip 4417, which is still in blocks 2031 and 2107. "
      "Message for Nadia Qureshi, since the HASTUS export is hers:\n\n> Hi Nadia, the gtfs "
      "validator flags overlapping trips in blocks 2031 (4417/4419) and 2107 (4417/4452, "
      "4451/4452) in the 29 May export. 4417 is the duplicate I mentioned last week. Could "
      "you re-export once it's fixed? We're holding the June publish until then.\n\nNothing "
      "patched on our side.",
      needs=["F04"]),
    T("The OOM fix should still go out today, the nightly export job runs it too. Deploy is "
      "./gradlew jib to push the image, then argocd app sync feedsmith-prod. Prod doesn't "
      "auto-sync, that's on purpose, so nothing reaches it unless someone runs the sync.",
      [B("./gradlew jib",
         "> Task :jib\nContainerizing application to registry.grt-cymru.net/data/feedsmith:2026.06.09-a41c2e0...\n"
         "Built and pushed image as registry.grt-cymru.net/data/feedsmith:2026.06.09-a41c2e0\n\nBUILD SUCCESSFUL in 47s"),
       B("argocd app set feedsmith-prod --kustomize-image registry.grt-cymru.net/data/feedsmith:2026.06.09-a41c2e0 "
         "&& argocd app sync feedsmith-prod && argocd app wait feedsmith-prod --health --timeout 300",
         "Name:               argocd/feedsmith-prod\nSync Status:        Synced to main (a41c2e0)\n"
         "Health Status:      Healthy\n\nOperation:          Sync\n"
         "Phase:              Succeeded\nMessage:            successfully synced (all tasks run)")],
      "Image 2026.06.09-a41c2e0 pushed with jib; feedsmith-prod synced by hand with `argocd "
      "app sync` and is Healthy. I'll always deploy that way and never turn on auto-sync.",
      teaches=["F12"]),
))

SESSIONS.append(S(RA, 10,
    T("Let's get favourites onto TestFlight. The lane is bundle exec fastlane beta, run from "
      "ios/. It takes the next build number from App Store Connect and uploads. It needs the "
      "App Store Connect key, which is in the vault with every other secret.",
      [B("cd ios && op run --env-file=../.env.op -- bundle exec fastlane beta",
         "[10:12:03]: Driving the lane 'ios beta' 🚀\n"
         "[10:12:04]: Latest upload for live-version 1.8.0 is build: 187\n"
         "[10:12:04]: Setting build number to 188\n"
         "[10:17:55]: Successfully exported and compressed dSYM file\n"
         "[10:19:41]: Successfully uploaded package to App Store Connect. It might take a few minutes until it's visible online.\n"
         "[10:19:41]: fastlane.tools finished successfully 🎉")],
      "Build 188 (1.8.0) is uploaded to App Store Connect via `bundle exec fastlane beta`, with "
      "the key injected through the secrets wrapper; it'll show in TestFlight once "
      "processing finishes.",
      teaches=["R06"], needs=["U04"]),
    T("The departures endpoint grew a platform field; show it on the row when it's there. And "
      "don't hand-edit lib/api/gen/, that's generated from the back-office OpenAPI spec with "
      "openapi-generator's dart-dio generator. Pull the spec and run make api.",
      [B("make api",
         "curl -sSf https://api.stg.grt-cymru.net/openapi.yaml -o api/openapi.yaml\n"
         "openapi-generator-cli generate -i api/openapi.yaml -g dart-dio -o lib/api/gen -c api/config.yaml\n"
         "[main] INFO  o.o.codegen.DefaultGenerator - writing file lib/api/gen/lib/src/model/departure.dart\n"
         "cd lib/api/gen && fvm dart run build_runner build --delete-conflicting-outputs\n"
         "[INFO] Succeeded after 14.9s with 212 outputs (431 actions)"),
       E("lib/features/departures/departure_row.dart",
         "      subtitle: Text(d.headsign),",
         "      subtitle: Text(d.platform == null ? d.headsign : '${d.headsign} · ${l10n.platform(d.platform!)}'),"),
       E("lib/l10n/app_en.arb", "  \"departureArrivingNow\": \"Arriving now\",",
         "  \"departureArrivingNow\": \"Arriving now\",\n  \"platform\": \"Stand {code}\","),
       E("lib/l10n/app_cy.arb", "  \"departureArrivingNow\": \"Yn cyrraedd nawr\",",
         "  \"departureArrivingNow\": \"Yn cyrraedd nawr\",\n  \"platform\": \"Safle {code}\","),
       B("fvm flutter gen-l10n && fvm flutter test test/features/departures", "00:05 +21: All tests passed!")],
      "Regenerated the client with `make api` (Departure now has a nullable `platform`), and "
      "the row shows 'Stand X' / 'Safle X' when it's set. I didn't touch lib/api/gen/ by hand "
      "and won't: spec in, `make api`, commit the output.",
      teaches=["R07"], needs=["R03"]),
    T("Before this goes wider than the internal testers: Yuki Tanaka in design signs off "
      "every new screen, accessibility included. Grab screenshots of favourites at normal and "
      "at the largest text size for her.",
      [B("fvm flutter drive --driver=test_driver/screenshot_driver.dart "
         "--target=integration_test/favourites_screenshots_test.dart --flavor stg -d 'iPhone 15'",
         "Running Xcode build...\nXcode build done.                                           41.0s\n"
         "screenshot: build/screenshots/favourites_textscale_1.0.png\n"
         "screenshot: build/screenshots/favourites_textscale_2.0.png\nAll tests passed.")],
      "Two screenshots in build/screenshots/ (text scale 1.0 and 2.0). At 2.0 the stop names "
      "wrap onto two lines but nothing clips. They're ready to send to Yuki; the screen "
      "shouldn't go past internal testing until she signs off.",
      teaches=["R04"], needs=["R10"]),
))

SESSIONS.append(S(VA, 10,
    T("Update the deps, nothing major.",
      [B("cargo update",
         "    Updating crates.io index\n     Locking 9 packages to latest compatible versions\n"
         "    Updating litemap v0.7.4 -> v0.7.5\n    Updating rustls v0.23.19 -> v0.23.20\n"
         "    Updating tokio v1.38.0 -> v1.38.1"),
       B("cargo build",
         "error: package `litemap v0.7.5` cannot be built because it requires rustc 1.81 or newer, "
         "while the currently active rustc version is 1.78.0\n"
         "Either upgrade rustc or select compatible dependency versions with\n"
         "`cargo update <name>@<current-ver> --precise <compatible-ver>`\n"
         "where `<compatible-ver>` is the latest version supporting rustc 1.78.0",
         error=True),
       B("cat rust-toolchain.toml",
         "[toolchain]\n# Must match meta-rust in the board image SDK (kirkstone). Bump only with the image.\n"
         "channel = \"1.78.0\"\ntargets = [\"armv7-unknown-linux-gnueabihf\"]"),
       B("cargo update litemap@0.7.5 --precise 0.7.4 && cargo build && cargo nextest run",
         "    Downgrading litemap v0.7.5 -> v0.7.4\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 21.4s\n"
         "     Summary [   1.912s] 96 tests run: 96 passed, 0 skipped")],
      "Updated 9 crates, but litemap 0.7.5 needs rustc 1.81 and this repo is pinned to 1.78.0 "
      "in rust-toolchain.toml to match the board image's Yocto SDK. I held litemap at 0.7.4 "
      "with `cargo update --precise`; everything builds and 96 tests pass. Future dependency "
      "updates have to fit 1.78.0 until the image moves.",
      teaches=["V09"]),
    T("cargo deny runs in CI since last week, run it before I push.",
      [B("cargo deny check",
         "error[unlicensed]: ring = 0.17.8 is unlicensed\n"
         "  ┌─ registry+https://github.com/rust-lang/crates.io-index#ring@0.17.8:2:9\n  │\n"
         "2 │ name = \"ring\"\n  │         ━━━━ a valid license expression could not be retrieved for the crate\n"
         "3 │ version = \"0.17.8\"\n4 │ license = \"\"\n  │            ─ license expression was not specified\n"
         "5 │ license-files = [\n6 │     { path = \"LICENSE\", hash = 0xbd0eed23, score = 0.00 },\n"
         "  │                                                     ──── low confidence in the license text\n\n"
         "advisories ok, bans ok, licenses FAILED, sources ok",
         error=True),
       E("deny.toml", "[licenses]\nallow = [\"MIT\", \"Apache-2.0\", \"BSD-3-Clause\", \"ISC\", \"Unicode-DFS-2016\"]",
         "[licenses]\nallow = [\"MIT\", \"Apache-2.0\", \"BSD-3-Clause\", \"ISC\", \"Unicode-DFS-2016\", \"OpenSSL\"]\n\n"
         "# ring's LICENSE mixes several licences and cargo-deny can't score it.\n"
         "[[licenses.clarify]]\nname = \"ring\"\nexpression = \"MIT AND ISC AND OpenSSL\"\n"
         "license-files = [{ path = \"LICENSE\", hash = 0xbd0eed23 }]"),
       B("cargo deny check", "advisories ok, bans ok, licenses ok, sources ok")],
      "cargo deny failed on licences: ring 0.17.8 publishes no licence expression and its "
      "combined LICENSE file scores too low. I added a `[[licenses.clarify]]` entry for ring "
      "in deny.toml (MIT AND ISC AND OpenSSL, pinned to the LICENSE hash) and allowed OpenSSL. "
      "All four checks pass now.",
      teaches=["V10"]),
    T("I rebased this onto main in the meantime, push it. And while we're at it: never a bare "
      "--force on anything shared, always --force-with-lease.",
      [B("git push --force-with-lease origin chore/deps-june",
         "Enumerating objects: 11, done.\nWriting objects: 100% (6/6), 1.12 KiB | 1.12 MiB/s, done.\n"
         "To git.grt-cymru.net:devices/validator-agent.git\n"
         " + 7d21c0a...e5b90f4 chore/deps-june -> chore/deps-june (forced update)")],
      "Pushed chore/deps-june with --force-with-lease (7d21c0a...e5b90f4). I'll never use a "
      "bare --force on shared branches.",
      teaches=["U06"]),
))

SESSIONS.append(S(RA, 11,
    T("Decision from yesterday's call with Aoife and Yuki: the journey map moves to "
      "maplibre_gl with our own vector tiles from tiles.grt-cymru.net. Licence cost was one "
      "reason, the bus-lane layer the other. Start by swapping the dependency and getting a "
      "blank map on screen with our style.",
      [E("pubspec.yaml", "  google_maps_flutter: ^2.7.0", "  maplibre_gl: ^0.20.0"),
       B("fvm flutter pub get",
         "Resolving dependencies...\n- google_maps_flutter 2.7.0\n- google_maps_flutter_android 2.10.0\n"
         "+ maplibre_gl 0.20.0\n+ maplibre_gl_platform_interface 0.20.0\n+ maplibre_gl_web 0.20.0\n"
         "Changed 7 dependencies!"),
       W("lib/features/map/journey_map.dart",
         "import 'package:flutter/widgets.dart';\nimport 'package:maplibre_gl/maplibre_gl.dart';\n\n"
         "class JourneyMap extends StatelessWidget {\n  const JourneyMap({super.key});\n\n"
         "  @override\n  Widget build(BuildContext context) => const MapLibreMap(\n"
         "        styleString: 'https://tiles.grt-cymru.net/styles/grt-day.json',\n"
         "        initialCameraPosition: CameraPosition(target: LatLng(51.6214, -3.9436), zoom: 12),\n      );\n}\n"),
       B("fvm flutter analyze lib/features/map",
         "Analyzing map...\n\n  error • Undefined class 'Marker' • lib/features/map/stop_markers.dart:4:5 • undefined_class\n\n1 issue found.",
         error=True),
       E("lib/features/map/stop_markers.dart",
         "Set<Marker> stopMarkers(List<Stop> stops) => {",
         "List<SymbolOptions> stopMarkers(List<Stop> stops) => ["),
       B("fvm flutter analyze lib/features/map", "Analyzing map...\nNo issues found! (ran in 2.1s)")],
      "Swapped the dependency to maplibre_gl 0.20 and JourneyMap now renders our grt-day style "
      "from tiles.grt-cymru.net, centred on the city. The favourites pins moved from Marker to "
      "SymbolOptions; analyze is clean. Next steps are the bus-lane layer and the route line.",
      teaches=["R12"], needs=["R01"]),
    T("Map attribution: '© GRT © OpenStreetMap contributors' at the bottom, tappable, opening "
      "the OSM copyright page.",
      [E("lib/l10n/app_en.arb", "  \"platform\": \"Stand {code}\",",
         "  \"platform\": \"Stand {code}\",\n  \"mapAttribution\": \"© GRT © OpenStreetMap contributors\","),
       E("lib/l10n/app_cy.arb", "  \"platform\": \"Safle {code}\",",
         "  \"platform\": \"Safle {code}\",\n  \"mapAttribution\": \"© GRT © Cyfranwyr OpenStreetMap\","),
       E("lib/features/map/journey_map.dart",
         "  Widget build(BuildContext context) => const MapLibreMap(",
         "  Widget build(BuildContext context) => Stack(children: [\n        const MapLibreMap("),
       B("fvm flutter gen-l10n && fvm flutter analyze lib/features/map", "No issues found! (ran in 2.0s)")],
      "Attribution sits bottom-left over the map in both languages ('© Cyfranwyr "
      "OpenStreetMap' in Welsh) and opens openstreetmap.org/copyright via url_launcher. The "
      "built-in MapLibre attribution button is hidden so it doesn't show twice.",
      needs=["R03"]),
    T("Build the Android release on tramshed, not the laptop. It's the 64-core Linux box in "
      "the comms room, ssh tramshed, and my repos are checked out under ~/src there.",
      [B("git push -q origin feat/maplibre && ssh tramshed 'cd ~/src/rider-app && git fetch -q && "
         "git checkout -q feat/maplibre && fvm flutter build apk --release --flavor prod -t lib/main_prod.dart'",
         "Running Gradle task 'assembleProdRelease'...                      94.2s\n"
         "✓ Built build/app/outputs/flutter-apk/app-prod-release.apk (31.4MB)")],
      "Built on tramshed from ~/src/rider-app (feat/maplibre): app-prod-release.apk, 31.4 MB, "
      "in 94 s. I'll send heavy builds there.",
      teaches=["U02"]),
))

SESSIONS.append(S(FS, 12,
    T("Toolchains are all on mise now, I moved everything over the weekend. `mise install` "
      "in each repo, new pins go in mise.toml. Sort this one out and check Gradle still sees "
      "Java 21.",
      [B("mise install",
         "mise java@temurin-21.0.3+9.0.LTS  ✓ installed\nmise gradle@8.8                  ✓ installed"),
       B("mise use java@temurin-21.0.3+9.0.LTS && cat mise.toml",
         "mise ~/src/feedsmith/mise.toml tools: java@temurin-21.0.3+9.0.LTS\n"
         "[tools]\njava = \"temurin-21.0.3+9.0.LTS\""),
       B("./gradlew -q javaToolchains | head -2",
         " + Eclipse Temurin JDK 21.0.3+9-LTS\n"
         "     | Location:           /Users/ceri/.local/share/mise/installs/java/temurin-21.0.3+9.0.LTS")],
      "`mise install` installed Java 21.0.3 and Gradle 8.8 from the existing pins, and I "
      "pinned Java in a new mise.toml. Gradle finds Temurin 21 under mise's install directory. "
      "From now on: `mise install` and mise.toml for toolchains.",
      teaches=["U11"]),
    T("Scheduling re-exported with the blocks fixed, so publish the June feed for real. The drill: "
      "./gradlew publishFeed -Penv=prod -PdryRun=true first, look at the diff summary it "
      "prints, then the same again without dryRun.",
      [B("./gradlew bootRun --args='export --period 2026-06' -q && java -jar tools/gtfs-validator-5.0.1-cli.jar "
         "-i build/gtfs/grt-gtfs-2026-06.zip -o build/validation -c gb -q && "
         "jq '[.notices[] | select(.severity==\"ERROR\")] | length' build/validation/report.json",
         "0"),
       B("op run --env-file=.env.op -- ./gradlew publishFeed -Penv=prod -PdryRun=true",
         "> Task :publishFeed\nDRY RUN: would upload grt-gtfs-2026-06-12.zip (6.9 MB) to s3://grt-gtfs-public/gtfs/\n"
         "  routes: 61 (=)  trips: 11,402 (+212)  stop_times: 1,482,916 (+27,540)  stops: 2,114 (=)\n\n"
         "BUILD SUCCESSFUL in 14s"),
       B("op run --env-file=.env.op -- ./gradlew publishFeed -Penv=prod",
         "> Task :publishFeed\nUploaded grt-gtfs-2026-06-12.zip to s3://grt-gtfs-public/gtfs/ and replaced latest.zip\n\n"
         "BUILD SUCCESSFUL in 22s")],
      "Published. Fresh export first; the validator reports 0 errors now that the blocks are "
      "fixed. Dry run: +212 trips and +27,540 stop_times, with routes and stops unchanged, "
      "which matches the summer Saturday change. The real run uploaded "
      "grt-gtfs-2026-06-12.zip and replaced latest.zip.",
      teaches=["F06"], needs=["U04", "F02", "F09"]),
    T("Let the PM know it's out and that the summer Saturday frequencies are live in the "
      "feed. Two sentences.",
      [],
      "For Aoife:\n\n> The June GTFS feed is published (12 June) and includes the summer "
      "Saturday frequencies on T1 and route 37. Google and Traveline usually pick it up within "
      "24 hours.",
      needs=["U08"]),
))

SESSIONS.append(S(VA, 12,
    T("On the production image the config isn't under /etc/cvt any more, that was the pilot "
      "image. It's /etc/grt/agent.toml. Fix the default path in the code and in the unit file.",
      [B("rg -n '/etc/cvt' src packaging justfile",
         "src/config.rs:9:const DEFAULT_CONFIG: &str = \"/etc/cvt/agent.toml\";\n"
         "packaging/grt-validator.service:9:ExecStart=/usr/bin/grt-validator --config /etc/cvt/agent.toml\n"
         "justfile:15:    ssh {{bench_host}} 'sudo install -m644 /tmp/agent.toml /etc/cvt/agent.toml && sudo systemctl restart grt-validator'"),
       E("src/config.rs", "const DEFAULT_CONFIG: &str = \"/etc/cvt/agent.toml\";",
         "const DEFAULT_CONFIG: &str = \"/etc/grt/agent.toml\";"),
       E("packaging/grt-validator.service", "--config /etc/cvt/agent.toml", "--config /etc/grt/agent.toml"),
       E("justfile", "/tmp/agent.toml /etc/cvt/agent.toml", "/tmp/agent.toml /etc/grt/agent.toml"),
       B("cargo nextest run && rg -c '/etc/cvt' src packaging justfile || true",
         "     Summary [   1.874s] 97 tests run: 97 passed, 0 skipped")],
      "Default config path is /etc/grt/agent.toml in src/config.rs, the unit file and the "
      "justfile's bench recipe; no /etc/cvt references left and tests pass.",
      teaches=["V16"]),
    T("The key-cache change on this branch touches signature verification too. Open the PR "
      "and request the review it needs.",
      [B("git push -u origin feat/key-cache && tea pulls create --head feat/key-cache --base main "
         "--labels security-review --title 'Cache parsed verifying keys' --description \"$(cat <<'EOF'\n"
         "## Rider impact\nNone. Tap verification is about 3 ms faster per tap.\n\n"
         "## Changes\n- grt-verify parses each key once and caches it by kid\n\n"
         "Security review: @kofi.mensah (touches crates/grt-verify)\nEOF\n)\"",
         "branch 'feat/key-cache' set up to track 'origin/feat/key-cache'.\n"
         "#233 Cache parsed verifying keys\nhttps://git.grt-cymru.net/devices/validator-agent/pulls/233")],
      "PR #233 is open with the security-review label and Kofi Mensah asked to review, since "
      "it changes crates/grt-verify. The description starts with the Rider impact section "
      "(none, slightly faster taps).",
      needs=["V08", "U09"]),
    T("Leave the --once flag wiring for tomorrow, I'm out of time. Just stash it.",
      [B("git stash push -m 'wip: --once flag'",
         "Saved working directory and index state On feat/key-cache: wip: --once flag")],
      "Stashed as 'wip: --once flag' on feat/key-cache."),
))

# --- week 3 ----------------------------------------------------------------
SESSIONS.append(S(VA, 15,
    T("The bench validator moved to the Northgate depot lab over the weekend. It's "
      "10.48.9.40 now, same user. Check it's alive and running our agent.",
      [B("ssh grt@10.48.9.40 'uptime && systemctl is-active grt-validator && grt-validator --version'",
         " 09:41:12 up 2 days, 18:03,  0 users,  load average: 0.08, 0.11, 0.09\nactive\ngrt-validator 1.3.2")],
      "The bench unit answers at 10.48.9.40 (up 2 days) and grt-validator 1.3.2 is active. "
      "I'll use that address for the bench from now on."
      , teaches=["V12"]),
    T("Point the deploy recipe at it.",
      [R("justfile", 3, "bench_host := \"grt@10.48.7.21\"\ntarget := \"armv7-unknown-linux-gnueabihf\""),
       E("justfile", "bench_host := \"grt@10.48.7.21\"", "bench_host := \"grt@10.48.9.40\"  # Northgate depot lab"),
       B("just deploy-bench",
         "cross build --release --target armv7-unknown-linux-gnueabihf\n"
         "    Finished `release` profile [optimized] target(s) in 2.0s\n"
         "scp target/armv7-unknown-linux-gnueabihf/release/grt-validator bench/agent.toml grt@10.48.9.40:/tmp/\n"
         "bench: grt-validator active")],
      "justfile's bench_host now points at the Northgate unit, and `just deploy-bench` "
      "deployed main there successfully.",
      needs=["V07"]),
    T("After the move it sat for ages before uploading anything. I think they reflashed it "
      "from an old image. Check the new unit actually has our service ordering.",
      [B("ssh grt@10.48.9.40 'systemctl cat grt-validator | grep -E \"^(After|Wants)=\"; "
         "systemctl is-enabled systemd-time-wait-sync'",
         "After=network-online.target\nWants=network-online.target\ndisabled",
         error=True),
       B("scp packaging/grt-validator.service grt@10.48.9.40:/tmp/ && ssh grt@10.48.9.40 "
         "'sudo install -m644 /tmp/grt-validator.service /lib/systemd/system/ && sudo systemctl daemon-reload "
         "&& sudo systemctl enable systemd-time-wait-sync'",
         "Created symlink /etc/systemd/system/sysinit.target.wants/systemd-time-wait-sync.service.")],
      "You're right: the reflashed unit had the old unit file (network-online only) and "
      "systemd-time-wait-sync disabled, so after boot it raced the clock again and sat in "
      "backoff. I installed our unit file and enabled time-wait-sync. It's worth asking "
      "whoever builds the image to pick up the unit file from packaging/.",
      needs=["V06"]),
    T("CI went red on the journal tests twice this week, then green on retry. Get to the "
      "bottom of it.",
      [B("cargo nextest run -p grt-journal --retries 0 -j 16",
         "    Starting 18 tests across 1 binary\n"
         "        FAIL [   5.004s] grt-journal tests::compaction_keeps_pending\n"
         "--- STDERR:              grt-journal tests::compaction_keeps_pending ---\n"
         "thread 'tests::compaction_keeps_pending' panicked at crates/grt-journal/src/tests.rs:88:10:\n"
         "called `Result::unwrap()` on an `Err` value: Sqlite(SqliteFailure(Error { code: DatabaseBusy, "
         "extended_code: 5 }, Some(\"database is locked\")))\n"
         "     Summary [   5.311s] 18 tests run: 17 passed, 1 failed",
         error=True),
       B("rg -n 'temp_dir' crates/grt-journal/src/tests.rs",
         "12:    let path = std::env::temp_dir().join(\"journal-test.db\");"),
       E("crates/grt-journal/src/tests.rs",
         "fn test_journal() -> Journal {\n    let path = std::env::temp_dir().join(\"journal-test.db\");\n"
         "    crate::open(&path).unwrap()\n}",
         "fn test_journal() -> (tempfile::TempDir, Journal) {\n"
         "    let dir = tempfile::tempdir().unwrap();\n"
         "    let journal = crate::open(&dir.path().join(\"taps.db\")).unwrap();\n    (dir, journal)\n}"),
       B("for i in $(seq 20); do cargo nextest run -p grt-journal --retries 0 -j 16 --status-level none "
         "--final-status-level fail || break; done; echo \"$i runs\"",
         "20 runs")],
      "Every journal test opened the same file, $TMPDIR/journal-test.db. nextest runs each "
      "test in its own process, in parallel, so two tests writing at once got SQLITE_BUSY "
      "('database is locked') after the 5 s busy timeout; CI's retry usually hid it. Each "
      "test now gets its own `tempfile::tempdir()` (the guard is returned so the directory "
      "lives as long as the test). 20 consecutive runs at -j 16 pass.",
      teaches=["V13"]),
))

SESSIONS.append(S(RA, 15,
    T("Support says the 1.8.0 Android release crashes when you open a ticket. Debug builds "
      "are fine, apparently.",
      [B("ssh tramshed 'cd ~/src/rider-app && git checkout -q v1.8.0 && fvm flutter build apk --release "
         "--flavor prod -t lib/main_prod.dart' && scp tramshed:src/rider-app/build/app/outputs/flutter-apk/app-prod-release.apk /tmp/ "
         "&& adb install -r /tmp/app-prod-release.apk",
         "✓ Built build/app/outputs/flutter-apk/app-prod-release.apk (31.6MB)\n"
         "Performing Streamed Install\nSuccess"),
       B("adb logcat -d | grep -A3 'E/flutter' | head -5",
         "E/flutter (14022): [ERROR:flutter/runtime/dart_vm_initializer.cc(41)] Unhandled Exception: "
         "PlatformException(error, Missing type parameter., null, java.lang.RuntimeException: Missing type parameter.\n"
         "E/flutter (14022): \tat com.google.gson.reflect.TypeToken.getSuperclassTypeParameter(TypeToken.java:84)\n"
         "E/flutter (14022): \tat com.dexterous.flutterlocalnotifications.FlutterLocalNotificationsPlugin.loadScheduledNotifications(FlutterLocalNotificationsPlugin.java:392)"),
       W("android/app/proguard-rules.pro",
         "# flutter_local_notifications stores scheduled notifications with Gson; R8 must keep\n"
         "# generic signatures or TypeToken fails with \"Missing type parameter\" in release.\n"
         "-keepattributes Signature\n-keep class com.google.gson.reflect.TypeToken { *; }\n"
         "-keep class * extends com.google.gson.reflect.TypeToken\n"),
       E("android/app/build.gradle.kts",
         "            signingConfig = signingConfigs.getByName(\"release\")",
         "            signingConfig = signingConfigs.getByName(\"release\")\n"
         "            proguardFiles(getDefaultProguardFile(\"proguard-android-optimize.txt\"), \"proguard-rules.pro\")"),
       B("git stash -q && git checkout -q -b fix/r8-gson v1.8.0 && git stash pop -q && git push -q origin fix/r8-gson && "
         "ssh tramshed 'cd ~/src/rider-app && git fetch -q && git checkout -q fix/r8-gson && fvm flutter build apk "
         "--release --flavor prod -t lib/main_prod.dart' && scp tramshed:src/rider-app/build/app/outputs/flutter-apk/app-prod-release.apk /tmp/ "
         "&& adb install -r /tmp/app-prod-release.apk && adb logcat -c && sleep 20 && adb logcat -d | grep -c 'E/flutter'",
         "✓ Built build/app/outputs/flutter-apk/app-prod-release.apk (31.6MB)\nSuccess\n0",
         error=True)],
      "Reproduced with a release build from tramshed: opening a ticket schedules its expiry "
      "reminder, and flutter_local_notifications reads its saved notifications through Gson. "
      "In release, R8 strips the generic signature, so Gson's TypeToken throws 'Missing type "
      "parameter'. Debug doesn't run R8, hence 'fine in debug'. I added "
      "android/app/proguard-rules.pro (keep Signature and TypeToken) and wired it into the "
      "release buildType. With the fixed build a ticket opens and logcat shows no Flutter "
      "errors (grep -c exits 1 on zero matches).",
      teaches=["R14"], needs=["U02"]),
    T("While we're in Android land, bump flutter_local_notifications to 17, it has the "
      "exact-alarm fix. Make sure it doesn't change which Android versions we support.",
      [B("fvm flutter pub upgrade --major-versions flutter_local_notifications",
         "Changed 1 constraint in pubspec.yaml:\n  flutter_local_notifications: ^16.3.3 -> ^17.2.1"),
       B("grep -n minSdk ~/.pub-cache/hosted/pub.dev/flutter_local_notifications-17.2.1/android/build.gradle "
         "android/app/build.gradle.kts",
         "/Users/ceri/.pub-cache/hosted/pub.dev/flutter_local_notifications-17.2.1/android/build.gradle:31:        minSdkVersion 16\n"
         "android/app/build.gradle.kts:22:        minSdk = 23")],
      "Bumped to ^17.2.1. The plugin only needs API 16, so our minSdk = 23 stays as it is and "
      "nobody loses support.",
      needs=["R13"]),
    T("Commit both and open one PR, it's going out as a 1.8.1 hotfix.",
      [B("git add -A && git commit -s -m 'Keep Gson signatures for R8; flutter_local_notifications 17' && "
         "git push -q origin fix/r8-gson && tea pulls create --head fix/r8-gson --base release/1.8 "
         "--title 'Fix release crash when opening tickets (1.8.1)' --description \"$(cat <<'EOF'\n"
         "## Rider impact\nAndroid riders on 1.8.0 can open tickets again without the app closing.\n\n"
         "## Changes\n- R8 keep rules for Gson TypeToken (proguard-rules.pro)\n- flutter_local_notifications ^17.2.1\nEOF\n)\"",
         "[fix/r8-gson 0d4f6a1] Keep Gson signatures for R8; flutter_local_notifications 17\n"
         " 4 files changed, 19 insertions(+), 3 deletions(-)\n"
         "#431 Fix release crash when opening tickets (1.8.1)\nhttps://git.grt-cymru.net/apps/rider-app/pulls/431")],
      "Signed-off commit 0d4f6a1, PR #431 against release/1.8, opening with what Android "
      "riders will notice.",
      needs=["U01", "U09"]),
))

SESSIONS.append(S(FS, 16,
    T("Heads up: the open-data team moved us onto Cloudflare R2. The public feed now goes to "
      "the grt-open-data bucket; the S3 one goes read-only tomorrow and gets deleted at the end "
      "of July. Endpoint is https://3f1c0a9e5b7d.r2.cloudflarestorage.com, region 'auto'. "
      "Update the publish config.",
      [R("build.gradle.kts", 88,
         "tasks.register<PublishFeedTask>(\"publishFeed\") {\n    group = \"publishing\"\n"
         "    feedZip.set(layout.buildDirectory.file(\"gtfs/grt-gtfs-${period}.zip\"))\n"
         "    bucket.set(\"grt-gtfs-public\")\n    region.set(\"eu-west-2\")"),
       E("build.gradle.kts",
         "    bucket.set(\"grt-gtfs-public\")\n    region.set(\"eu-west-2\")",
         "    bucket.set(\"grt-open-data\")\n    region.set(\"auto\")\n"
         "    endpoint.set(\"https://3f1c0a9e5b7d.r2.cloudflarestorage.com\")"),
       B("./gradlew help -q", "")],
      "publishFeed now targets the R2 bucket grt-open-data through the account endpoint with "
      "region 'auto'. The task already used the AWS SDK's endpoint override, so nothing else "
      "had to change; the build script configures cleanly."
      , teaches=["F14"]),
    T("Do a dry run against the new bucket so we know the config's right.",
      [B("op run --env-file=.env.op -- ./gradlew publishFeed -Penv=prod -PdryRun=true",
         "> Task :publishFeed FAILED\n"
         "software.amazon.awssdk.services.s3.model.S3Exception: The AWS Access Key Id you provided "
         "does not exist in our records. (Service: S3, Status Code: 403, Request ID: null)",
         error=True),
       E(".env.op",
         "AWS_ACCESS_KEY_ID=op://GRT Data/feedsmith-publisher/access key id\n"
         "AWS_SECRET_ACCESS_KEY=op://GRT Data/feedsmith-publisher/secret access key",
         "AWS_ACCESS_KEY_ID=op://GRT Data/feedsmith-r2/access key id\n"
         "AWS_SECRET_ACCESS_KEY=op://GRT Data/feedsmith-r2/secret access key"),
       B("op run --env-file=.env.op -- ./gradlew publishFeed -Penv=prod -PdryRun=true",
         "> Task :publishFeed\nDRY RUN: would upload grt-gtfs-2026-06-16.zip (6.9 MB) to s3://grt-open-data/gtfs/\n"
         "  routes: 61 (=)  trips: 11,402 (=)  stop_times: 1,482,916 (=)  stops: 2,114 (=)\n\nBUILD SUCCESSFUL in 12s")],
      "First attempt got a 403: the old S3 keys mean nothing to R2. There's a feedsmith-r2 "
      "item in the same vault, so .env.op now points at it, and the dry run against "
      "grt-open-data works, with no content changes since Friday's publish.",
      needs=["F06", "U04"]),
    T("The night bus N1 trips show 00:40 departures in the export, and journey planners put "
      "them on the next day. In GTFS, after-midnight trips stay on the service day with times "
      "past 24:00:00, so 24:40:00, not 00:40:00. Fix the exporter and add a test.",
      [R("src/main/java/cymru/grt/feedsmith/export/GtfsTime.java", 14,
         "    static String format(int secondsSinceServiceDayStart) {\n"
         "        return LocalTime.ofSecondOfDay(secondsSinceServiceDayStart % 86_400)\n"
         "            .format(DateTimeFormatter.ISO_LOCAL_TIME);\n    }"),
       E("src/main/java/cymru/grt/feedsmith/export/GtfsTime.java",
         "        return LocalTime.ofSecondOfDay(secondsSinceServiceDayStart % 86_400)\n"
         "            .format(DateTimeFormatter.ISO_LOCAL_TIME);",
         "        // GTFS times are relative to the service day and may exceed 24:00:00.\n"
         "        int s = secondsSinceServiceDayStart;\n"
         "        return \"%02d:%02d:%02d\".formatted(s / 3600, s % 3600 / 60, s % 60);"),
       W("src/test/java/cymru/grt/feedsmith/export/GtfsTimeTest.java",
         "class GtfsTimeTest {\n    @Test\n    void afterMidnightStaysOnServiceDay() {\n"
         "        assertThat(GtfsTime.format(24 * 3600 + 40 * 60)).isEqualTo(\"24:40:00\");\n    }\n}\n"),
       B("./gradlew test --tests '*GtfsTime*'",
         "> Task :test\n\nGtfsTimeTest > afterMidnightStaysOnServiceDay() PASSED\n\nBUILD SUCCESSFUL in 6s")],
      "The formatter wrapped at midnight (`% 86_400` into LocalTime). It now prints hours "
      "past 24, so the N1's 00:40 run comes out as 24:40:00 on its service day; a unit test "
      "covers it. Times past 24:00:00 are how after-midnight trips will stay.",
      teaches=["F07"]),
))

SESSIONS.append(S(VA, 17,
    T("Security reviews for grt-verify go to Leila Haddad from this week, she's taken over "
      "ticketing crypto. Move the request on the key-cache PR to her.",
      [B("tea comment 233 '@leila.haddad could you take the security review? It caches parsed "
         "verifying keys in crates/grt-verify; no change to the signature check itself.'",
         "https://git.grt-cymru.net/devices/validator-agent/pulls/233#issuecomment-4127")],
      "Asked Leila Haddad on PR #233 for the security review. Anything touching grt-verify "
      "goes to her from now on.",
      teaches=["V14"]),
    T("Log it when a tap gets rejected because the product has expired, with the product code "
      "and the expiry time.",
      [E("src/taps.rs",
         "        Err(Rejection::Expired(p)) => journal.append(&Tap::rejected(read, Reason::Expired))?,",
         "        Err(Rejection::Expired(p)) => {\n"
         "            tracing::info!(product = %p.code, expired_at = %p.valid_to, \"tap rejected: product expired\");\n"
         "            journal.append(&Tap::rejected(read, Reason::Expired))?\n        }"),
       B("cargo nextest run -E 'test(expired)'",
         "        PASS [   0.006s] grt-validator taps::tests::expired_product_is_rejected\n"
         "     Summary [   0.214s] 2 tests run: 2 passed, 94 skipped")],
      "Added an info-level tracing event with `product` and `expired_at` fields where expired "
      "products are rejected; on the device it lands in the journal with those fields.",
      needs=["V11"]),
    T("I want jiff for the validity windows instead of the hand-rolled chrono maths. Before "
      "it goes in: every new third-party dependency has to be on the licence allow-list in the "
      "grt/oss-policy repo (MIT, Apache, BSD fine, nothing GPL or AGPL) and noted in the PR. "
      "Check it, and add it if it's clean.",
      [B("git -C ~/src/oss-policy pull -q && grep -nE '^(MIT|Unlicense)$' ~/src/oss-policy/allowed-licences.txt",
         "3:MIT\n11:Unlicense"),
       B("cargo add jiff@0.1 && cargo build && cargo deny check licenses",
         "    Updating crates.io index\n      Adding jiff v0.1.15 to dependencies\n"
         "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 17.8s\nlicenses ok")],
      "jiff 0.1.15 is 'Unlicense OR MIT', both on the grt/oss-policy allow-list, so I added "
      "it; it has no other new transitive dependencies. Its MSRV is 1.70, so it builds on our "
      "pinned toolchain. The PR will note it under dependencies with its licence.",
      teaches=["U10"], needs=["V09"]),
))

SESSIONS.append(S(RA, 17,
    T("Draw the selected journey on the map: bus legs in GRT red, walking legs thinner and "
      "grey.",
      [E("lib/features/map/journey_map.dart",
         "  void _onStyleLoaded() {}",
         "  Future<void> _onStyleLoaded() async {\n"
         "    for (final leg in widget.journey.legs) {\n"
         "      await _controller.addLine(LineOptions(\n"
         "        geometry: leg.points.map((p) => LatLng(p.lat, p.lon)).toList(),\n"
         "        lineColor: leg.isWalk ? '#8A8D8F' : '#C8102E',\n"
         "        lineWidth: leg.isWalk ? 3 : 5,\n      ));\n    }\n  }"),
       B("fvm flutter analyze lib/features/map && fvm flutter test test/features/map",
         "No issues found! (ran in 2.2s)\n00:05 +6: All tests passed!")],
      "Each leg is added as a MapLibre line once the style loads: bus legs #C8102E at width 5, "
      "walking legs grey at width 3. Analyze and map tests pass.",
      needs=["R12", "R01"]),
    T("Add a golden test for the map legend.",
      [W("test/goldens/map_legend_test.dart",
         "@Tags(['golden'])\nlibrary;\n\nvoid main() {\n  testWidgets('map legend', (tester) async {\n"
         "    await tester.pumpWidget(const TestApp(child: MapLegend()));\n"
         "    await expectLater(find.byType(MapLegend), matchesGoldenFile('goldens/map_legend.png'));\n  });\n}\n"),
       B("fvm flutter test --tags golden",
         "══╡ EXCEPTION CAUGHT BY FLUTTER TEST FRAMEWORK ╞══\n"
         "The following assertion was thrown while running async test code:\n"
         "Golden \"goldens/departure_row.png\": Pixel test failed, 0.41%, 612px diff detected.\n"
         "00:21 +9 -3: Some tests failed.",
         error=True),
       B("grep -n -B2 -A4 'golden' .gitea/workflows/ci.yml",
         "31-  goldens:\n32-    runs-on: linux-amd64\n"
         "33:    container: ghcr.io/cirruslabs/flutter:3.22.2\n"
         "34-    steps:\n35-      - uses: actions/checkout@v4\n36:      - run: flutter test --tags golden"),
       B("docker run --rm -v \"$PWD\":/app -w /app ghcr.io/cirruslabs/flutter:3.22.2 sh -c "
         "'flutter test --tags golden --update-goldens test/goldens/map_legend_test.dart && flutter test --tags golden'",
         "00:16 +1: All tests passed!\n00:19 +12: All tests passed!")],
      "The existing goldens failed on the Mac (0.4% pixel diffs in text rendering), not just "
      "the new one: CI renders goldens on Linux in ghcr.io/cirruslabs/flutter:3.22.2, so "
      "macOS font rasterisation never matches. I generated the legend golden inside that "
      "image and ran the whole golden suite there: 12/12 pass. Goldens should always be run "
      "and updated in that container, never on the laptop.",
      teaches=["R11"]),
    T("I want the map screen in front of external testers this week. Whatever has to happen "
      "first, get it moving.",
      [B("fvm flutter drive --driver=test_driver/screenshot_driver.dart "
         "--target=integration_test/map_screenshots_test.dart --flavor stg -d 'iPhone 15'",
         "screenshot: build/screenshots/map_route_textscale_1.0.png\n"
         "screenshot: build/screenshots/map_route_textscale_2.0.png\n"
         "screenshot: build/screenshots/map_legend_dark.png\nAll tests passed.")],
      "It's a new screen, so it needs Yuki Tanaka's design and accessibility sign-off before "
      "any external tester sees it. Screenshots (normal and 2x text, plus dark legend) are in "
      "build/screenshots/ for her. Once she approves I'll cut the TestFlight build with "
      "`bundle exec fastlane beta` from ios/ and add the external group.",
      needs=["R04", "R06"]),
))

SESSIONS.append(S(FS, 18,
    T("Nadia's moved over to the fares project, so Owain Pryce owns the HASTUS exports now. "
      "The overlap errors are back in this week's drop; draft him a note with the pairs.",
      [B("java -jar tools/gtfs-validator-5.0.1-cli.jar -i build/gtfs/grt-gtfs-2026-06.zip -o build/validation -c gb -q && "
         "jq -r '.notices[] | select(.code==\"block_trips_with_overlapping_stop_times\") | .sampleNotices[] | "
         "\"\\(.blockId) \\(.tripIdA) \\(.tripIdB)\"' build/validation/report.json",
         "3104 5120 5127\n3104 5127 5133")],
      "Draft for Owain:\n\n> Hi Owain, I gather you've taken over the HASTUS exports from "
      "Nadia. This week's drop has overlapping trips in block 3104 (5120/5127 and 5127/5133), "
      "which the GTFS validator rejects, so we can't publish it as is. Could you take a look "
      "and re-export? Happy to show you how we check it.\n\nOwain is the contact for "
      "timetable data from here on.",
      teaches=["F13"]),
    T("Write an integration test for the nearest-stop query. Testcontainers, not the compose "
      "database. Put the result in a small DTO.",
      [W("src/main/java/cymru/grt/feedsmith/stops/NearestStop.java",
         "@Value\npublic class NearestStop {\n    String stopId;\n    String name;\n    double distanceMetres;\n}\n"),
       E("build.gradle.kts", "dependencies {",
         "dependencies {\n    compileOnly(\"org.projectlombok:lombok:1.18.32\")\n"
         "    annotationProcessor(\"org.projectlombok:lombok:1.18.32\")"),
       W("src/integrationTest/java/cymru/grt/feedsmith/stops/NearestStopIT.java",
         "@Testcontainers\nclass NearestStopIT {\n    @Container\n"
         "    static PostgreSQLContainer<?> db = new PostgreSQLContainer<>(\"postgres:16-alpine\");\n\n"
         "    @Test\n    void returnsClosestStopFirst() {\n"
         "        var hits = repo.nearest(51.6196, -3.9431, 3);\n"
         "        assertThat(hits.get(0).getStopId()).isEqualTo(\"5710AWA10617\");\n    }\n}\n"),
       B("./gradlew integrationTest --tests '*NearestStopIT'",
         "NearestStopIT > returnsClosestStopFirst() FAILED\n"
         "    org.springframework.jdbc.BadSqlGrammarException: PreparedStatementCallback; bad SQL grammar\n"
         "        Caused by: org.postgresql.util.PSQLException: ERROR: function st_makepoint(double precision, "
         "double precision) does not exist\n"
         "          Hint: No function matches the given name and argument types. You might need to add explicit type casts.\n\n"
         "1 test completed, 1 failed\nBUILD FAILED in 19s",
         error=True),
       E("src/integrationTest/java/cymru/grt/feedsmith/stops/NearestStopIT.java",
         "new PostgreSQLContainer<>(\"postgres:16-alpine\");",
         "new PostgreSQLContainer<>(\n"
         "        DockerImageName.parse(\"postgis/postgis:16-3.4\").asCompatibleSubstituteFor(\"postgres\"));"),
       B("./gradlew integrationTest --tests '*NearestStopIT'",
         "NearestStopIT > returnsClosestStopFirst() PASSED\n\nBUILD SUCCESSFUL in 24s")],
      "The test failed because plain postgres:16-alpine has no PostGIS, so ST_MakePoint "
      "doesn't exist. Testcontainers tests here need postgis/postgis:16-3.4 (declared as a "
      "compatible substitute for postgres), the same image compose uses. With that it passes "
      "and the closest stop comes back by ATCO code (5710AWA10617). The DTO is NearestStop.",
      teaches=["F11"], needs=["F10"]),
    T("Don't pull Lombok in for that DTO. We use records for DTOs and value types in this "
      "codebase, no Lombok anywhere.",
      [E("src/main/java/cymru/grt/feedsmith/stops/NearestStop.java",
         "@Value\npublic class NearestStop {\n    String stopId;\n    String name;\n    double distanceMetres;\n}",
         "public record NearestStop(String stopId, String name, double distanceMetres) {}"),
       E("build.gradle.kts",
         "    compileOnly(\"org.projectlombok:lombok:1.18.32\")\n"
         "    annotationProcessor(\"org.projectlombok:lombok:1.18.32\")\n", ""),
       E("src/integrationTest/java/cymru/grt/feedsmith/stops/NearestStopIT.java",
         "hits.get(0).getStopId()", "hits.get(0).stopId()"),
       B("./gradlew integrationTest --tests '*NearestStopIT' -q && rg -c lombok build.gradle.kts src || true", "")],
      "NearestStop is now a record, the Lombok dependency is gone from build.gradle.kts, and "
      "the test passes. Records for DTOs and value types, no Lombok.",
      teaches=["F15"]),
))

SESSIONS.append(S(RA, 19,
    T("Release review decision: from 1.9 we drop Android 7 and below, so minSdk = 26. It's "
      "under 1% of riders now, and the map's offline tile cache wants it anyway. Make the "
      "change.",
      [E("android/app/build.gradle.kts", "        minSdk = 23", "        minSdk = 26"),
       B("fvm flutter build apk --debug --flavor stg -t lib/main_stg.dart",
         "Running Gradle task 'assembleStgDebug'...                          52.8s\n"
         "✓ Built build/app/outputs/flutter-apk/app-stg-debug.apk")],
      "minSdk = 26 in android/app/build.gradle.kts, and a stg debug build goes through. Play "
      "will stop offering 1.9 to Android 7 and older; 1.8.x stays installed there.",
      teaches=["R15"]),
    T("Add a provider for recent journeys, last ten, stored the same way favourites are.",
      [W("lib/features/journeys/recent_journeys.dart",
         "part 'recent_journeys.g.dart';\n\n@riverpod\nclass RecentJourneys extends _$RecentJourneys {\n"
         "  static const _max = 10;\n  @override\n  Future<List<JourneyRef>> build() async => _load();\n"
         "  Future<void> add(JourneyRef j) async { /* dedupe, cap at _max, persist */ }\n}\n"),
       B("fvm dart run build_runner build --delete-conflicting-outputs && fvm flutter test test/features/journeys",
         "[INFO] Succeeded after 9.6s with 2 outputs (6 actions)\n00:03 +5: All tests passed!")],
      "RecentJourneys is a generated @riverpod notifier on shared_preferences like favourites, "
      "capped at ten and de-duplicated; the .g.dart is regenerated and tests pass.",
      needs=["R02", "R09"]),
    T("I squashed the branch locally. Get it up to the remote.",
      [B("git push --force-with-lease origin feat/recent-journeys",
         "To git.grt-cymru.net:apps/rider-app.git\n"
         " + 91c0d2e...4aa7b13 feat/recent-journeys -> feat/recent-journeys (forced update)")],
      "Pushed the squashed feat/recent-journeys with a lease-protected force push "
      "(91c0d2e...4aa7b13).",
      needs=["U06"]),
))

SESSIONS.append(S(VA, 19,
    T("Time to cut 1.4.0. Release flow: cargo set-version 1.4.0, commit, tag agent-v1.4.0 and "
      "push the tag. CI builds the signed .ipk for the image feed from the tag.",
      [B("cargo set-version --workspace 1.4.0",
         "   Upgrading grt-validator from 1.3.2 to 1.4.0\n   Upgrading grt-journal from 1.3.2 to 1.4.0\n"
         "   Upgrading grt-reader from 1.3.2 to 1.4.0\n   Upgrading grt-upload from 1.3.2 to 1.4.0\n"
         "   Upgrading grt-verify from 1.3.2 to 1.4.0"),
       B("git commit -s -am 'Release 1.4.0' && git tag -a agent-v1.4.0 -m 'validator-agent 1.4.0' && "
         "git push origin main agent-v1.4.0",
         "[main 70c3e1b] Release 1.4.0\n 6 files changed, 12 insertions(+), 12 deletions(-)\n"
         "To git.grt-cymru.net:devices/validator-agent.git\n   e5b90f4..70c3e1b  main -> main\n"
         " * [new tag]         agent-v1.4.0 -> agent-v1.4.0")],
      "Workspace bumped to 1.4.0, signed-off release commit 70c3e1b, annotated tag "
      "agent-v1.4.0 pushed; CI will build the signed .ipk from the tag.",
      teaches=["V15"], needs=["U01"]),
    T("1.4.0 carries the key-cache change. Before CI publishes anything, make sure the "
      "security review on that PR actually happened.",
      [B("tea pr 233 --comments | sed -n '1,12p'",
         "#233 Cache parsed verifying keys (merged)\n"
         "@ceri.evans wants to merge feat/key-cache into main\n\n"
         "leila.haddad APPROVED (2026-06-18 15:02)\n"
         "  Cache is keyed by kid and rebuilt when the key table changes; fine.")],
      "Yes: Leila Haddad approved #233 on 18 June before it was merged, with one note that "
      "the cache is rebuilt when the key table changes. The 1.4.0 build is clear to publish.",
      needs=["V14"]),
))

SESSIONS.append(S(FS, 20,
    T("Sorry, it's Saturday. The realtime feed's been empty since 06:12, vehicle positions "
      "just stopped. Can you look?",
      [B("kubectl -n data logs deploy/feedsmith-realtime --since=3h | grep -m3 -E 'ERROR|Exception'",
         "2026-06-20T05:12:03.551Z ERROR 1 --- [MQTT Rec: feedsmith-rt] c.g.f.realtime.AvlSubscriber : connection lost\n"
         "org.eclipse.paho.client.mqttv3.MqttException: Unable to connect to server (32103) - "
         "java.net.UnknownHostException: avl-mqtt.grt.local"),
       B("rg -n 'broker|avl-mqtt|8883' docs/vendor/ src/main/resources/application-prod.yml",
         "docs/vendor/avl-change-notice-2026-05.md:7:From 20 June 2026 the MQTT broker moves to "
         "mqtt.avl.grt.internal:8883 (TLS). avl-mqtt.grt.local will be withdrawn.\n"
         "src/main/resources/application-prod.yml:22:    broker-url: ssl://avl-mqtt.grt.local:8883"),
       E("src/main/resources/application-prod.yml",
         "    broker-url: ssl://avl-mqtt.grt.local:8883",
         "    broker-url: ssl://mqtt.avl.grt.internal:8883"),
       B("kubectl -n data run mqtt-check --rm -i --restart=Never --image=eclipse-mosquitto:2 -- "
         "mosquitto_sub -h mqtt.avl.grt.internal -p 8883 --capath /etc/ssl/certs -t 'avl/+/position' -C 1 -W 10",
         "{\"vehicle\":\"GRT-2214\",\"lat\":51.6203,\"lon\":-3.9417,\"ts\":\"2026-06-20T09:48:11Z\"}\n"
         "pod \"mqtt-check\" deleted"),
       B("./gradlew jib -q", "Built and pushed image as registry.grt-cymru.net/data/feedsmith:2026.06.20-c7a90e2")],
      "The AVL vendor retired the old broker hostname this morning, as their May change "
      "notice (docs/vendor/avl-change-notice-2026-05.md) said they would: the subscriber "
      "can't resolve avl-mqtt.grt.local. The new broker is mqtt.avl.grt.internal:8883 (TLS); "
      "a one-off mosquitto_sub from inside the cluster gets positions from it. I changed "
      "application-prod.yml and pushed image 2026.06.20-c7a90e2. It isn't deployed yet.",
      teaches=["F08"]),
    T("Right. Weekend rule, though: restarting or redeploying anything in prod is Bartek "
      "Nowak's call, he's the SRE on call. Post in #grt-ops with what you've got and let him "
      "run it.",
      [],
      "Message for #grt-ops:\n\n> @Bartek Nowak feedsmith realtime has been empty since 06:12 "
      "BST: the AVL vendor withdrew avl-mqtt.grt.local as announced. Fix is in image "
      "registry.grt-cymru.net/data/feedsmith:2026.06.20-c7a90e2 (broker "
      "mqtt.avl.grt.internal:8883). To roll it out: `argocd app set feedsmith-prod "
      "--kustomize-image ...:2026.06.20-c7a90e2 && argocd app sync feedsmith-prod`. No "
      "schema changes. I'm around if you want me on a call.\n\nI won't restart or sync prod "
      "myself; production changes go through Bartek as SRE on call.",
      teaches=["U13"], needs=["F12"]),
))

# --- week 4 ----------------------------------------------------------------
SESSIONS.append(S(VA, 22,
    T("Rasmus flashed the new production image onto the bench unit on Friday. Check our agent "
      "comes up on it with the right config.",
      [B("ssh grt@10.48.9.40 'cat /etc/os-release | grep VERSION_ID; systemctl is-active grt-validator; "
         "grep -E \"^(endpoint|device_id|data_dir)\" /etc/grt/agent.toml'",
         "VERSION_ID=\"2026.06\"\nactive\nendpoint = \"https://taps.grt-cymru.net/v2\"\n"
         "device_id = \"VAL-BENCH-02\"\ndata_dir = \"/var/lib/grt-validator\"")],
      "The bench unit is on image 2026.06, grt-validator is active and reading its config from "
      "/etc/grt/agent.toml (production endpoint, device VAL-BENCH-02)."
      , needs=["V12", "V16"]),
    T("Secrets: we've moved to SOPS-encrypted env files with age keys, the 1Password vault "
      "goes away on Friday. Anything that needs credentials runs as sops exec-env "
      "secrets.enc.env '<cmd>'. Run the upload smoke test that way.",
      [B("ls secrets.enc.env && sops exec-env secrets.enc.env "
         "'cargo run -q --bin upload-smoke -- --endpoint https://taps.stg.grt-cymru.net/v2'",
         "secrets.enc.env\nsmoke: posted 3 taps, 3 accepted (HTTP 202), 0 rejected")],
      "Smoke test run through `sops exec-env secrets.enc.env '...'`: 3 taps posted to staging, "
      "all accepted. I'll wrap anything that needs credentials with sops exec-env from now on.",
      teaches=["U12"]),
    T("Add a test that compaction never drops taps that haven't been uploaded yet, including "
      "across a reopen.",
      [E("crates/grt-journal/src/tests.rs",
         "#[test]\nfn compaction_keeps_pending() {",
         "#[test]\nfn compaction_keeps_unuploaded_across_reopen() {\n"
         "    let dir = tempfile::tempdir().unwrap();\n    let path = dir.path().join(\"taps.db\");\n"
         "    let j = crate::open(&path).unwrap();\n"
         "    for t in sample_taps(50) { j.append(&t).unwrap(); }\n"
         "    j.mark_uploaded(&ids(0..30)).unwrap();\n    j.compact().unwrap();\n    drop(j);\n"
         "    let j = crate::open(&path).unwrap();\n"
         "    assert_eq!(j.pending(100).unwrap().len(), 20);\n}\n\n"
         "#[test]\nfn compaction_keeps_pending() {"),
       B("cargo nextest run -p grt-journal",
         "        PASS [   0.031s] grt-journal tests::compaction_keeps_unuploaded_across_reopen\n"
         "     Summary [   0.402s] 19 tests run: 19 passed, 0 skipped")],
      "New test appends 50 taps, marks 30 uploaded, compacts, reopens the same file and checks "
      "the 20 pending ones survive. It uses its own temp directory like the others; 19/19 pass.",
      needs=["V13"]),
))

SESSIONS.append(S(FS, 22,
    T("Publish this week's feed.",
      [B("./gradlew bootRun --args='export --period 2026-06' -q && java -jar tools/gtfs-validator-5.0.1-cli.jar "
         "-i build/gtfs/grt-gtfs-2026-06.zip -o build/validation -c gb -q && "
         "jq '[.notices[] | select(.severity==\"ERROR\")] | length' build/validation/report.json",
         "0"),
       B("sops exec-env secrets.enc.env './gradlew publishFeed -Penv=prod -PdryRun=true'",
         "> Task :publishFeed\nDRY RUN: would upload grt-gtfs-2026-06-22.zip (6.9 MB) to s3://grt-open-data/gtfs/\n"
         "  routes: 61 (=)  trips: 11,398 (-4)  stop_times: 1,482,360 (-556)  stops: 2,114 (=)\n\nBUILD SUCCESSFUL in 13s"),
       B("sops exec-env secrets.enc.env './gradlew publishFeed -Penv=prod'",
         "> Task :publishFeed\nUploaded grt-gtfs-2026-06-22.zip to s3://grt-open-data/gtfs/ and replaced latest.zip\n\n"
         "BUILD SUCCESSFUL in 19s")],
      "Published grt-gtfs-2026-06-22.zip to grt-open-data. Validator: 0 errors. Dry run "
      "showed 4 fewer trips (block 3104 cleaned up upstream), nothing else moved, so I ran it "
      "for real.",
      needs=["U12", "F14", "F06", "F02"]),
    T("The validator's flagging stop_times with no arrival time on route 37 again. Who do we "
      "tell, and can you draft it?",
      [B("jq -r '.notices[] | select(.code==\"missing_trip_edge\") | .sampleNotices[:3][] | "
         "\"\\(.tripId) seq \\(.stopSequence)\"' build/validation/report.json",
         "37-0614 seq 1\n37-0644 seq 1\n37-0714 seq 1")],
      "That's timetable data, so it goes to Owain Pryce. Draft:\n\n> Hi Owain, route 37 "
      "trips 37-0614, 37-0644 and 37-0714 have no arrival time at their first stop in this "
      "week's export (validator: missing_trip_edge). Could you check the HASTUS timing points "
      "for those? Published feed is unaffected for now, it's a warning.\n\nI haven't patched "
      "anything.",
      needs=["F13"]),
    T("Bump this repo to JDK 21.0.4.",
      [B("mise use java@temurin-21.0.4+7.0.LTS && mise install && cat mise.toml",
         "mise java@temurin-21.0.4+7.0.LTS  ✓ installed\n"
         "mise ~/src/feedsmith/mise.toml tools: java@temurin-21.0.4+7.0.LTS\n"
         "[tools]\njava = \"temurin-21.0.4+7.0.LTS\""),
       B("./gradlew -q javaToolchains | head -1 && ./gradlew check -q", " + Eclipse Temurin JDK 21.0.4+7-LTS")],
      "mise.toml now pins temurin-21.0.4+7.0.LTS, it's installed, Gradle picks it up and "
      "`check` passes.",
      needs=["U11"]),
))

SESSIONS.append(S(RA, 23,
    T("Upgrade the map plugin to 0.21 and check the Android config is consistent with the "
      "versions we support now.",
      [E("pubspec.yaml", "  maplibre_gl: ^0.20.0", "  maplibre_gl: ^0.21.0"),
       B("fvm flutter pub get && grep -n 'minSdk' android/app/build.gradle.kts "
         "~/.pub-cache/hosted/pub.dev/maplibre_gl-0.21.0/android/build.gradle",
         "Changed 3 dependencies!\nandroid/app/build.gradle.kts:22:        minSdk = 26\n"
         "/Users/ceri/.pub-cache/hosted/pub.dev/maplibre_gl-0.21.0/android/build.gradle:38:        minSdkVersion 21"),
       B("fvm flutter analyze", "Analyzing rider-app...\nNo issues found! (ran in 6.8s)")],
      "maplibre_gl is on 0.21.0. Android config is consistent: the app requires API 26 "
      "(Android 8) and the plugin only needs 21, so nothing else has to change. Analyze is "
      "clean.",
      needs=["R15", "R12"]),
    T("Push a TestFlight build with that.",
      [B("cd ios && sops exec-env ../secrets.enc.env 'bundle exec fastlane beta'",
         "[14:02:11]: Driving the lane 'ios beta' 🚀\n"
         "[14:02:12]: Latest upload for live-version 1.9.0 is build: 195\n"
         "[14:02:12]: Setting build number to 196\n"
         "[14:09:37]: Successfully uploaded package to App Store Connect. It might take a few minutes until it's visible online.\n"
         "[14:09:37]: fastlane.tools finished successfully 🎉")],
      "Build 196 (1.9.0) uploaded to App Store Connect through the fastlane beta lane, with "
      "the App Store Connect key from the SOPS file.",
      needs=["R06", "U12"]),
    T("Add share_plus so people can share a journey, with a short message like 'My bus: T1 to "
      "Castle Square at 17:42'.",
      [B("grep -nE '^(BSD-3-Clause)$' ~/src/oss-policy/allowed-licences.txt && fvm flutter pub add share_plus",
         "5:BSD-3-Clause\nResolving dependencies...\n+ share_plus 10.0.2\n+ share_plus_platform_interface 5.0.1\n"
         "Changed 2 dependencies!"),
       E("lib/l10n/app_en.arb", "  \"mapAttribution\": \"© GRT © OpenStreetMap contributors\",",
         "  \"mapAttribution\": \"© GRT © OpenStreetMap contributors\",\n"
         "  \"shareJourney\": \"My bus: {route} to {destination} at {time}\","),
       E("lib/l10n/app_cy.arb", "  \"mapAttribution\": \"© GRT © Cyfranwyr OpenStreetMap\",",
         "  \"mapAttribution\": \"© GRT © Cyfranwyr OpenStreetMap\",\n"
         "  \"shareJourney\": \"Fy mws: {route} i {destination} am {time}\","),
       B("fvm flutter gen-l10n && fvm flutter test test/features/journeys", "00:04 +7: All tests passed!")],
      "share_plus 10.0.2 is BSD-3-Clause, which is on the oss-policy allow-list; I'll note it "
      "in the PR. The share text is in both ARB files ('Fy mws: ...' in Welsh) and the share "
      "button is on the journey detail app bar. Tests pass.",
      needs=["U10", "R03"]),
    T("One thing about how you answer: skip the recap at the end of your replies, I read the "
      "diff. Lead with whatever broke or whatever I need to decide.",
      [],
      "Understood: what broke or needs a decision goes first, and no recap at the end.",
      teaches=["U05"]),
))

SESSIONS.append(S(FS, 24,
    T("Export the summer timetable, valid from 20 July, and check the night buses look right.",
      [B("./gradlew bootRun --args='export --period 2026-07-summer'",
         "2026-06-24T10:03:52.771+01:00  INFO 51230 --- [main] c.g.f.export.ExportCommand : "
         "exported 1,611,204 stop_times in 44.9s -> build/gtfs/grt-gtfs-2026-07-summer.zip\n\nBUILD SUCCESSFUL in 61s"),
       B("unzip -p build/gtfs/grt-gtfs-2026-07-summer.zip stop_times.txt | grep -E '^N1-' | "
         "awk -F, '$2 >= \"23:30:00\"' | head -4",
         "N1-2340,23:40:00,23:40:00,5710AWA10617,1\nN1-2340,24:12:00,24:12:00,5710AWC30114,14\n"
         "N1-0010,24:10:00,24:10:00,5710AWA10617,1\nN1-0010,24:42:00,24:42:00,5710AWC30114,14")],
      "Night buses look right: N1 runs after midnight come out as 24:10:00 and 24:42:00 on "
      "the Saturday service day, nothing wrapped to 00:xx. The export streamed 1.61 million "
      "stop_times in 45 s without memory trouble.",
      needs=["F07", "F05"]),
    T("Is it good to go out?",
      [B("java -jar tools/gtfs-validator-5.0.1-cli.jar -i build/gtfs/grt-gtfs-2026-07-summer.zip "
         "-o build/validation-summer -c gb -q && jq -r '[.notices[] | select(.severity==\"ERROR\")] | length' "
         "build/validation-summer/report.json",
         "0")],
      "Yes: 0 ERROR notices from the validator, so it meets the publishing bar. 37 warnings, "
      "the usual stop_too_far_from_shape ones.",
      needs=["F02"]),
    T("Write the changelog entry for it. And no emoji anywhere: commits, changelogs, PR text, "
      "code comments. Our Gitea renders them as little boxes and it looks like spam.",
      [E("CHANGELOG.md", "## Unreleased\n",
         "## Unreleased\n\n### Added\n- Summer 2026 timetable export (valid from 20 July), "
         "including N1 night services past midnight.\n")],
      "Added under Unreleased in CHANGELOG.md, plain text. No emoji in anything I write for "
      "the repos from here on.",
      teaches=["U07"]),
))

SESSIONS.append(S(VA, 24,
    T("If a bus is offline for a week the journal file grows without bound. Add a periodic "
      "checkpoint, and compaction of rows that have been uploaded.",
      [E("crates/grt-journal/src/lib.rs",
         "    conn.pragma_update(None, \"synchronous\", \"NORMAL\")?;",
         "    conn.pragma_update(None, \"synchronous\", \"NORMAL\")?;\n"
         "    conn.pragma_update(None, \"wal_autocheckpoint\", 1000)?;"),
       E("crates/grt-journal/src/lib.rs",
         "pub fn pending(&self, limit: usize)",
         "/// Deletes uploaded taps older than `keep` and truncates the WAL.\n"
         "pub fn compact(&self, keep: Duration) -> Result<usize, JournalError> {\n"
         "    let n = self.conn.execute(\"delete from tap where uploaded_at < ?1\", [cutoff(keep)])?;\n"
         "    self.conn.execute_batch(\"PRAGMA wal_checkpoint(TRUNCATE);\")?;\n    Ok(n)\n}\n\n"
         "pub fn pending(&self, limit: usize)"),
       B("cargo nextest run -p grt-journal",
         "     Summary [   0.433s] 21 tests run: 21 passed, 0 skipped")],
      "The journal keeps WAL mode and now checkpoints automatically every 1000 pages; "
      "`compact(keep)` deletes uploaded taps older than `keep` and truncates the WAL, "
      "returning a JournalError on failure. The uploader calls it hourly with a 7-day keep. "
      "21 tests pass.",
      needs=["V03", "V04"]),
    T("Run everything CI runs.",
      [B("cargo fmt --check && cargo clippy --all-targets -- -D warnings && cargo nextest run && cargo deny check",
         "    Checking grt-journal v1.4.0 (/Users/ceri/src/validator-agent/crates/grt-journal)\n"
         "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 8.1s\n"
         "     Summary [   2.104s] 99 tests run: 99 passed, 0 skipped\n"
         "advisories ok, bans ok, licenses ok, sources ok")],
      "All green: fmt, clippy with -D warnings, 99 tests, and cargo deny (licences pass with "
      "the ring clarification) on the pinned toolchain.",
      needs=["V10", "V09", "U05"]),
    T("Commit it.",
      [B("git add -A && git commit -s -m 'Checkpoint and compact the tap journal'",
         "[feat/journal-compaction 3f8a2c6] Checkpoint and compact the tap journal\n"
         " 3 files changed, 58 insertions(+), 2 deletions(-)")],
      "Committed as 3f8a2c6, signed off, plain message.",
      needs=["U07", "U01"]),
))

SESSIONS.append(S(RA, 25,
    T("Golden for the share preview card, please.",
      [W("test/goldens/share_card_test.dart",
         "@Tags(['golden'])\nlibrary;\n\nvoid main() {\n  testWidgets('share card', (tester) async {\n"
         "    await tester.pumpWidget(const TestApp(child: ShareCard(journey: sampleJourney)));\n"
         "    await expectLater(find.byType(ShareCard), matchesGoldenFile('goldens/share_card.png'));\n  });\n}\n"),
       B("docker run --rm -v \"$PWD\":/app -w /app ghcr.io/cirruslabs/flutter:3.22.2 sh -c "
         "'flutter test --tags golden --update-goldens test/goldens/share_card_test.dart && flutter test --tags golden'",
         "00:15 +1: All tests passed!\n00:20 +13: All tests passed!")],
      "Golden generated and checked in the Linux CI image, same as the others; all 13 goldens "
      "pass there.",
      needs=["R11"]),
    T("The back office has a recent-journeys endpoint now. Feed the recent list from it "
      "instead of local storage, keep local as the offline fallback.",
      [B("make api",
         "openapi-generator-cli generate -i api/openapi.yaml -g dart-dio -o lib/api/gen -c api/config.yaml\n"
         "[main] INFO  o.o.codegen.DefaultGenerator - writing file lib/api/gen/lib/src/api/journeys_api.dart"),
       E("lib/features/journeys/recent_journeys.dart",
         "  Future<List<JourneyRef>> build() async => _load();",
         "  Future<List<JourneyRef>> build() async {\n"
         "    try {\n      final res = await ref.watch(journeysApiProvider).getRecentJourneys(limit: _max);\n"
         "      return res.data!.map(JourneyRef.fromApi).toList();\n"
         "    } on DioException {\n      return _load(); // offline fallback\n    }\n  }"),
       B("fvm dart run build_runner build --delete-conflicting-outputs && fvm flutter test test/features/journeys",
         "[INFO] Succeeded after 10.4s with 3 outputs (7 actions)\n00:04 +8: All tests passed!")],
      "Regenerated the API client (new JourneysApi), and RecentJourneys now loads from "
      "`getRecentJourneys`, falling back to the local list on DioException. Generated files "
      "refreshed; 8 journey tests pass.",
      needs=["R07", "R02", "R09"]),
    T("PR please.",
      [B("git push -q -u origin feat/share-recent && tea pulls create --head feat/share-recent --base main "
         "--title 'Share journeys; recent journeys from the back office' --description \"$(cat <<'EOF'\n"
         "## Rider impact\nRiders can share a journey from its detail page, and recent journeys follow them across devices.\n\n"
         "## Changes\n- share_plus 10.0.2 (BSD-3-Clause, on the oss-policy allow-list)\n"
         "- Recent journeys from GET /journeys/recent, local fallback offline\n- Golden for the share card\nEOF\n)\"",
         "#447 Share journeys; recent journeys from the back office\n"
         "https://git.grt-cymru.net/apps/rider-app/pulls/447")],
      "PR #447: https://git.grt-cymru.net/apps/rider-app/pulls/447",
      needs=["U07", "U09", "U05"]),
))

SESSIONS.append(S(FS, 26,
    T("Add an endpoint that returns a stop's accessibility info, with an integration test.",
      [W("src/main/java/cymru/grt/feedsmith/stops/StopAccessibilityDto.java",
         "public record StopAccessibilityDto(String stopId, boolean stepFree, boolean tactilePaving, Instant updatedAt) {}\n"),
       W("src/main/java/cymru/grt/feedsmith/stops/StopAccessibilityController.java",
         "@RestController\n@RequestMapping(\"/api/stops\")\nclass StopAccessibilityController {\n"
         "    @GetMapping(\"/{atcoCode}/accessibility\")\n"
         "    ResponseEntity<StopAccessibilityDto> get(@PathVariable String atcoCode) {\n"
         "        return ResponseEntity.of(repo.find(atcoCode).map(StopAccessibilityDto::from));\n    }\n}\n"),
       W("src/integrationTest/java/cymru/grt/feedsmith/stops/StopAccessibilityControllerIT.java",
         "@Testcontainers\n@SpringBootTest(webEnvironment = RANDOM_PORT)\nclass StopAccessibilityControllerIT {\n"
         "    @Container @ServiceConnection\n    static PostgreSQLContainer<?> db = new PostgreSQLContainer<>(\n"
         "        DockerImageName.parse(\"postgis/postgis:16-3.4\").asCompatibleSubstituteFor(\"postgres\"));\n"
         "    // returns 200 for 5710AWA10617, 404 for unknown codes\n}\n"),
       B("./gradlew integrationTest --tests '*StopAccessibilityControllerIT'",
         "StopAccessibilityControllerIT > knownStopReturnsData() PASSED\n"
         "StopAccessibilityControllerIT > unknownStopIs404() PASSED\n\nBUILD SUCCESSFUL in 31s")],
      "GET /api/stops/{atcoCode}/accessibility returns a record DTO (stopId, stepFree, "
      "tactilePaving, updatedAt) or 404. The IT runs against the PostGIS Testcontainers image "
      "and both cases pass.",
      needs=["F15", "F11", "F10"]),
    T("We need a column for audible announcements in the stop accessibility data too.",
      [B("ls src/main/resources/db/migration | tail -2",
         "V202606050940__stop_accessibility.sql\nV202606150830__trip_wheelchair_flag.sql"),
       W("src/main/resources/db/migration/V202606261405__stop_accessibility_audible.sql",
         "alter table stop_accessibility\n    add column audible_announcements boolean not null default false;\n"),
       E("src/main/java/cymru/grt/feedsmith/stops/StopAccessibilityDto.java",
         "boolean tactilePaving, Instant updatedAt", "boolean tactilePaving, boolean audibleAnnouncements, Instant updatedAt"),
       B("./gradlew flywayMigrate -q && ./gradlew integrationTest --tests '*StopAccessibility*' -q", "")],
      "New migration V202606261405__stop_accessibility_audible.sql adds the column (default "
      "false), leaving the applied June 5 one untouched; DTO updated, tests pass.",
      needs=["F03"]),
    T("Get it into production. It's Friday afternoon, so think about who needs to know.",
      [B("./gradlew jib -q && argocd app set feedsmith-prod --kustomize-image "
         "registry.grt-cymru.net/data/feedsmith:2026.06.26-e12b7f4 && argocd app sync feedsmith-prod && "
         "argocd app wait feedsmith-prod --health --timeout 300 | tail -3",
         "Built and pushed image as registry.grt-cymru.net/data/feedsmith:2026.06.26-e12b7f4\n"
         "Health Status:      Healthy\nPhase:              Succeeded\n"
         "Message:            successfully synced (all tasks run)")],
      "Deployed 2026.06.26-e12b7f4 with a manual sync; feedsmith-prod is Healthy and the "
      "migration ran. Since it's going into the weekend, here's a heads-up for #grt-ops so "
      "Bartek isn't surprised if he's paged:\n\n> feedsmith 2026.06.26-e12b7f4 deployed 15:40, "
      "adds GET /api/stops/{atco}/accessibility and one additive migration. Rollback: sync "
      "the previous image, the column can stay.",
      needs=["F12", "U13"]),
))

SESSIONS.append(S(VA, 26,
    T("The reader drops every third tap on the new image. Collect what's needed and get it to "
      "the right person.",
      [B("ssh grt@10.48.9.40 'journalctl -u grt-validator --since \"-30 min\" -o cat | grep -E \"apdu|reader\" | head -6'",
         "reader: card present uid=04a23c8a1b2f80\n"
         "apdu exchange apdu=00a4040007d276000085010100 sw=9000\n"
         "reader: card present uid=04a23c8a1b2f80\n"
         "reader: pcsc error SCARD_W_REMOVED_CARD (0x80100069)\n"
         "reader: card present uid=04a23c8a1b2f80\napdu exchange apdu=00a4040007d276000085010100 sw=9000")],
      "Every third read fails with SCARD_W_REMOVED_CARD before any APDU goes out, which points "
      "at the reader or pcsc layer on the new image rather than our code. That's Rasmus "
      "Holt's area, so here's a note for him:\n\n> Rasmus, on image 2026.06 the bench reader "
      "reports SCARD_W_REMOVED_CARD on roughly one tap in three (log excerpt attached, same "
      "card each time). Agent and reader config are unchanged from 2026.05. Could you check "
      "the pcscd/driver version in the new image?\n\nI haven't changed any driver settings.",
      needs=["V05"]),
    T("Cut 1.4.1 with the journal compaction.",
      [B("cargo set-version --workspace 1.4.1 && git commit -s -am 'Release 1.4.1' && "
         "git tag -a agent-v1.4.1 -m 'validator-agent 1.4.1' && git push origin main agent-v1.4.1",
         "   Upgrading grt-validator from 1.4.0 to 1.4.1\n[main b21e07d] Release 1.4.1\n"
         " 6 files changed, 12 insertions(+), 12 deletions(-)\n * [new tag]         agent-v1.4.1 -> agent-v1.4.1")],
      "1.4.1 tagged and pushed (signed-off b21e07d, tag agent-v1.4.1); CI builds the signed "
      ".ipk from the tag.",
      needs=["V15", "U01"]),
    T("Write the rollout note for ops: 1.4.1 goes to the first 20 buses on Monday.",
      [],
      "For #grt-ops:\n\n> validator-agent 1.4.1 goes to the first 20 buses (Swansea depot, "
      "routes T1 and 37) on Monday 29 June from 05:00. Changes: tap journal compaction and "
      "WAL checkpointing; no config changes. If validators on those buses stop uploading, "
      "roll back to 1.4.0 from the image feed. @Bartek Nowak FYI as SRE on call.",
      needs=["U13", "U07"]),
))

# --- week 5 ----------------------------------------------------------------
SESSIONS.append(S(RA, 29,
    T("Bump the Firebase packages again and make sure iOS still builds.",
      [B("fvm flutter pub upgrade --major-versions firebase_core firebase_crashlytics",
         "Changed 2 constraints in pubspec.yaml:\n  firebase_core: ^3.1.1 -> ^3.4.0\n"
         "  firebase_crashlytics: ^4.0.2 -> ^4.1.0"),
       B("grep -n '^platform' ios/Podfile && cd ios && pod install --repo-update",
         "2:platform :ios, '13.0'\nPod installation complete! There are 14 dependencies from the Podfile and 38 total pods installed."),
       B("fvm flutter build ios --flavor prod -t lib/main_prod.dart --no-codesign",
         "✓ Built build/ios/iphoneos/Runner.app (49.0MB)")],
      "firebase_core ^3.4.0 and firebase_crashlytics ^4.1.0; they still need iOS 13, which "
      "the Podfile already sets, so pod install went straight through and the prod iOS build "
      "succeeds.",
      needs=["R05", "R01"]),
    T("Turn on R8 full mode for release builds.",
      [E("android/gradle.properties", "android.enableJetifier=true",
         "android.enableJetifier=true\nandroid.enableR8.fullMode=true"),
       B("ssh tramshed 'cd ~/src/rider-app && git pull -q && fvm flutter build apk --release --flavor prod "
         "-t lib/main_prod.dart' && scp tramshed:src/rider-app/build/app/outputs/flutter-apk/app-prod-release.apk /tmp/ "
         "&& adb install -r /tmp/app-prod-release.apk",
         "✓ Built build/app/outputs/flutter-apk/app-prod-release.apk (29.8MB)\nSuccess"),
       B("adb logcat -d | grep -A2 'E/flutter' | head -3",
         "E/flutter ( 9931): Unhandled Exception: PlatformException(error, Missing type parameter., null, "
         "java.lang.RuntimeException: Missing type parameter.", error=False),
       E("android/app/proguard-rules.pro",
         "-keep class * extends com.google.gson.reflect.TypeToken\n",
         "-keep class * extends com.google.gson.reflect.TypeToken\n"
         "# R8 full mode also strips signatures from classes only referenced via TypeToken subclasses.\n"
         "-keep,allowobfuscation,allowshrinking class com.google.gson.reflect.TypeToken\n"
         "-keep,allowobfuscation,allowshrinking class * extends com.google.gson.reflect.TypeToken\n")],
      "Full mode brought back the ticket crash: it's stricter about keeping generic "
      "signatures, so the Gson keep rules needed the allowobfuscation/allowshrinking form. "
      "With those added to proguard-rules.pro the full-mode release opens tickets cleanly, "
      "and the APK is 1.8 MB smaller.",
      needs=["R14"]),
    T("Set the Linux build box up for release builds of this repo. It doesn't have the "
      "Flutter we pin yet.",
      [B("ssh tramshed 'cd ~/src/rider-app && mise use flutter@3.22.2-stable && mise install && "
         "dart pub global activate fvm && fvm install && fvm flutter --version | head -1'",
         "mise ~/src/rider-app/mise.toml tools: flutter@3.22.2-stable\n"
         "mise flutter@3.22.2-stable  ✓ installed\nActivated fvm 3.1.7.\n"
         "✓ Flutter \"3.22.2\" is already installed.\n"
         "Flutter 3.22.2 • channel stable • https://github.com/flutter/flutter.git")],
      "tramshed has Flutter 3.22.2 through mise (pinned in mise.toml) and fvm on top, so the "
      "repo's .fvmrc pin resolves the same as on your laptop. Release builds can run there "
      "again.",
      needs=["U02", "U11"]),
))

SESSIONS.append(S(FS, 29,
    T("Vehicle positions are lagging by about 90 seconds. Is it us or the broker?",
      [B("kubectl -n data run mqtt-lag --rm -i --restart=Never --image=eclipse-mosquitto:2 -- sh -c "
         "\"mosquitto_sub -h mqtt.avl.grt.internal -p 8883 --capath /etc/ssl/certs -t 'avl/+/position' -C 5 -F '%I %p'\"",
         "2026-06-29T09:12:44+0000 {\"vehicle\":\"GRT-2214\",\"ts\":\"2026-06-29T09:12:43Z\"}\n"
         "2026-06-29T09:12:44+0000 {\"vehicle\":\"GRT-1180\",\"ts\":\"2026-06-29T09:12:42Z\"}"),
       B("kubectl -n data logs deploy/feedsmith-realtime --since=10m | grep -m2 'snapshot'",
         "2026-06-29T09:12:44.102Z  INFO 1 --- [scheduling-1] c.g.f.realtime.FeedSnapshotter : snapshot built vehicles=212 oldest_age=88s"),
       R("src/main/java/cymru/grt/feedsmith/realtime/FeedSnapshotter.java", 31,
         "    @Scheduled(fixedDelayString = \"${realtime.snapshot-interval:PT90S}\")")],
      "It's us. Straight from the broker, positions are 1-2 s old. Our snapshotter only "
      "rebuilds the GTFS-RT feed every 90 s (the PT90S default, prod never overrides it), so "
      "the oldest vehicle is ~88 s stale. Setting realtime.snapshot-interval to PT10S would "
      "fix it; the build takes about 40 ms.",
      needs=["F08"]),
    T("Set it to 10 seconds and roll it out.",
      [E("src/main/resources/application-prod.yml", "realtime:\n", "realtime:\n  snapshot-interval: PT10S\n"),
       B("./gradlew jib -q && sops exec-env secrets.enc.env 'argocd login argocd.grt-cymru.net --sso=false "
         "--username feedsmith-deployer --password \"$ARGOCD_PASSWORD\"' && argocd app set feedsmith-prod "
         "--kustomize-image registry.grt-cymru.net/data/feedsmith:2026.06.29-0be4d19 && argocd app sync feedsmith-prod "
         "&& argocd app wait feedsmith-prod --health --timeout 300 | tail -1",
         "Built and pushed image as registry.grt-cymru.net/data/feedsmith:2026.06.29-0be4d19\n"
         "'feedsmith-deployer' logged in successfully\n"
         "Message:            successfully synced (all tasks run)")],
      "Deployed 2026.06.29-0be4d19 with the 10 s interval (manual sync, login via the SOPS "
      "file); the next snapshot log shows oldest_age=9s.",
      needs=["F12", "U12"]),
    T("Summarise for the PM what changed in the feeds this month. Short.",
      [B("git log --since=2026-06-01 --oneline --no-merges | wc -l", "23")],
      "For Aoife:\n\n> Feeds in June: the summer Saturday frequencies and the 20 July summer "
      "timetable are out; the public feed moved to the open-data R2 bucket; night buses now "
      "show correctly after midnight; live bus positions were down on 20 June (vendor broker "
      "change) and are now about 10 s fresh instead of 90 s; stop accessibility data has an "
      "API for the app.",
      needs=["U08", "U05"]),
))

SESSIONS.append(S(VA, 29,
    T("Deploy main to the bench unit and power-cycle it. I want to see uploads resume with "
      "nobody touching it.",
      [B("just deploy-bench",
         "cross build --release --target armv7-unknown-linux-gnueabihf\n"
         "    Finished `release` profile [optimized] target(s) in 41.7s\nbench: grt-validator active"),
       B("ssh grt@10.48.9.40 'sudo systemctl reboot' ; sleep 120; ssh grt@10.48.9.40 "
         "'systemctl is-enabled systemd-time-wait-sync; journalctl -u grt-validator -b -o short --no-pager | tail -2'",
         "enabled\n"
         "Jun 29 16:44:08 val-bench grt-validator[305]: INFO grt_validator: starting version=1.4.1\n"
         "Jun 29 16:44:10 val-bench grt-validator[305]: INFO grt_upload: batch uploaded count=118")],
      "After the reboot the agent started only once the clock was synced (the journal shows "
      "real timestamps from the first line) and uploaded 118 queued taps two seconds later, "
      "with no manual steps.",
      needs=["V07", "V06", "V12"]),
    T("Open the PR for the verification cache fix.",
      [B("git push -q -u origin fix/key-cache-reload && tea pulls create --head fix/key-cache-reload --base main "
         "--labels security-review --title 'Rebuild key cache when the key table changes' --description \"$(cat <<'EOF'\n"
         "## Rider impact\nNone.\n\n## Changes\n- grt-verify drops cached keys when the key table version changes\n\n"
         "Security review: @leila.haddad (touches crates/grt-verify)\nEOF\n)\"",
         "#241 Rebuild key cache when the key table changes\n"
         "https://git.grt-cymru.net/devices/validator-agent/pulls/241")],
      "PR #241 is open with the security-review label and Leila Haddad asked to review; the "
      "description is plain text and starts with the rider impact section.",
      needs=["V14", "U09", "U07"]),
))

SESSIONS.append(S(RA, 30,
    T("Add a service disruption banner to the top of the home screen, fed from the "
      "disruptions endpoint. And in the widget tests, find things with find.bySemanticsLabel "
      "rather than Keys; it doubles as a check that screen readers get a label.",
      [W("lib/features/home/disruption_banner.dart",
         "class DisruptionBanner extends ConsumerWidget {\n  const DisruptionBanner({super.key});\n\n"
         "  @override\n  Widget build(BuildContext context, WidgetRef ref) {\n"
         "    final d = ref.watch(activeDisruptionProvider).valueOrNull;\n    if (d == null) return const SizedBox.shrink();\n"
         "    return Semantics(label: context.l10n.disruptionBannerLabel(d.title), child: MaterialBanner(/* ... */));\n  }\n}\n"),
       E("lib/l10n/app_en.arb", "  \"shareJourney\": \"My bus: {route} to {destination} at {time}\",",
         "  \"shareJourney\": \"My bus: {route} to {destination} at {time}\",\n"
         "  \"disruptionBannerLabel\": \"Service disruption: {title}\","),
       E("lib/l10n/app_cy.arb", "  \"shareJourney\": \"Fy mws: {route} i {destination} am {time}\",",
         "  \"shareJourney\": \"Fy mws: {route} i {destination} am {time}\",\n"
         "  \"disruptionBannerLabel\": \"Tarfu ar wasanaethau: {title}\","),
       W("test/features/home/disruption_banner_test.dart",
         "testWidgets('shows the active disruption', (tester) async {\n"
         "  await tester.pumpApp(const DisruptionBanner(), overrides: [activeDisruptionProvider.overrideWith((_) => sample)]);\n"
         "  expect(find.bySemanticsLabel('Service disruption: Castle Square closed'), findsOneWidget);\n});\n"),
       B("fvm flutter gen-l10n && fvm flutter test test/features/home", "00:04 +11: All tests passed!")],
      "The banner shows the active disruption with a semantics label in both languages, and "
      "its test finds it by that label. As a new home-screen element it'll need Yuki's "
      "sign-off before testers get it; I can produce the screenshots when you're ready.",
      teaches=["R16"], needs=["R04", "R03"]),
    T("Does the banner behave on the oldest Android we still support? Check on an emulator.",
      [B("grep -n minSdk android/app/build.gradle.kts && emulator -list-avds",
         "22:        minSdk = 26\nPixel_3a_API_26\nPixel_8_API_34"),
       B("emulator -avd Pixel_3a_API_26 -no-snapshot -no-window & adb wait-for-device && "
         "fvm flutter drive --driver=test_driver/screenshot_driver.dart --target=integration_test/home_screenshots_test.dart "
         "--flavor stg -d emulator-5554",
         "screenshot: build/screenshots/home_disruption_api26.png\nAll tests passed.")],
      "The oldest supported version is Android 8 (API 26). On the API 26 emulator the banner "
      "renders and wraps properly, and TalkBack reads the label.",
      needs=["R15"]),
))

SESSIONS.append(S(FS, 30,
    T("Month-end publish, please.",
      [B("./gradlew bootRun --args='export --period 2026-07' -q && java -jar tools/gtfs-validator-5.0.1-cli.jar "
         "-i build/gtfs/grt-gtfs-2026-07.zip -o build/validation -c gb -q && "
         "jq '[.notices[] | select(.severity==\"ERROR\")] | length' build/validation/report.json",
         "0"),
       B("sops exec-env secrets.enc.env './gradlew publishFeed -Penv=prod -PdryRun=true -Pperiod=2026-07'",
         "> Task :publishFeed\nDRY RUN: would upload grt-gtfs-2026-06-30.zip (7.2 MB) to s3://grt-open-data/gtfs/\n"
         "  routes: 62 (+1)  trips: 12,044 (+646)  stop_times: 1,611,204 (+128,844)  stops: 2,119 (+5)\n\nBUILD SUCCESSFUL in 15s"),
       B("sops exec-env secrets.enc.env './gradlew publishFeed -Penv=prod -Pperiod=2026-07'",
         "> Task :publishFeed\nUploaded grt-gtfs-2026-06-30.zip to s3://grt-open-data/gtfs/ and replaced latest.zip\n\n"
         "BUILD SUCCESSFUL in 21s")],
      "Published grt-gtfs-2026-06-30.zip (July period) to grt-open-data. Validator clean. "
      "The dry run's +1 route and +5 stops are the new X5 summer shuttle, which is expected.",
      needs=["F14", "F06", "U12", "F02"]),
    T("The July HASTUS drop has night trips that end at 00:20 the next day. Check how they "
      "come out in our export, and tell whoever needs to know if it's upstream.",
      [B("unzip -p build/gtfs/grt-gtfs-2026-07.zip stop_times.txt | grep -E '^N2-' | tail -3",
         "N2-2350,24:05:00,24:05:00,5710AWB20341,9\nN2-2350,24:20:00,24:20:00,5710AWC30114,14\n"
         "N2-2350,00:20:00,00:20:00,5710AWC30114,15")],
      "Our exporter is right for every stop HASTUS timed correctly (24:05:00, 24:20:00), but "
      "trip N2-2350 has an extra stop_sequence 15 that repeats the last stop at 00:20, "
      "already wrapped in the source. That's an upstream data issue. Draft for Owain:\n\n> "
      "Hi Owain, July drop: trip N2-2350 has a duplicate final timing point (seq 15, "
      "00:20:00) after seq 14 at 24:20:00. Could you drop it and re-export? Everything else "
      "in the night network looks fine.",
      needs=["F13", "F07"]),
))

SESSIONS.append(S(RA, 30,
    T("Back on the banner. Add a widget test for its dismiss button, then run the app against "
      "staging so I can see the real disruption feed.",
      [E("test/features/home/disruption_banner_test.dart",
         "  expect(find.bySemanticsLabel('Service disruption: Castle Square closed'), findsOneWidget);\n});",
         "  expect(find.bySemanticsLabel('Service disruption: Castle Square closed'), findsOneWidget);\n});\n\n"
         "testWidgets('can be dismissed', (tester) async {\n"
         "  await tester.pumpApp(const DisruptionBanner(), overrides: [activeDisruptionProvider.overrideWith((_) => sample)]);\n"
         "  await tester.tap(find.bySemanticsLabel('Dismiss'));\n  await tester.pumpAndSettle();\n"
         "  expect(find.bySemanticsLabel(RegExp('^Service disruption')), findsNothing);\n});"),
       B("fvm flutter test test/features/home", "00:04 +12: All tests passed!"),
       B("fvm flutter run --flavor stg -t lib/main_stg.dart -d 'iPhone 15'",
         "Launching lib/main_stg.dart on iPhone 15 in debug mode...\nXcode build done.                                           22.9s\n"
         "A Dart VM Service on iPhone 15 is available at: http://127.0.0.1:50912/P0zq2kWm1sE=/")],
      "Dismiss test added, again by semantics label ('Dismiss' button, banner gone "
      "afterwards); 12 pass. The app is running on the simulator against staging, which "
      "currently has one disruption ('Castle Square closed').",
      needs=["R16", "R10"]),
    T("Looks good. Ship it to TestFlight, and commit and tag the release commit as v1.9.0.",
      [B("git add -A && git commit -s -m 'Add service disruption banner' && git tag -a v1.9.0 -m 'rider-app 1.9.0' "
         "&& git push -q origin main v1.9.0",
         "[main 5e2c4b9] Add service disruption banner\n 7 files changed, 164 insertions(+), 2 deletions(-)"),
       B("cd ios && sops exec-env ../secrets.enc.env 'bundle exec fastlane beta'",
         "[16:48:02]: Setting build number to 201\n"
         "[16:55:19]: Successfully uploaded package to App Store Connect. It might take a few minutes until it's visible online.\n"
         "[16:55:19]: fastlane.tools finished successfully 🎉")],
      "Signed-off commit 5e2c4b9, tag v1.9.0 pushed, and build 201 uploaded to TestFlight "
      "through the beta lane.",
      needs=["R06", "U01", "U12"]),
))


# ---------------------------------------------------------------------------
# Extra ordinary turns, inserted into sessions by (session number, position).
# Kept apart so the teaching skeleton above stays readable; ids and taught_in
# are still derived after insertion.
# ---------------------------------------------------------------------------
EXTRA = {
    1: [(3, T("How bad is clippy at the moment? Don't fix anything yet, just tell me.",
              [B("cargo clippy --all-targets 2>&1 | grep -E '^warning: `' ",
                 "warning: `grt-reader` (lib) generated 5 warnings\n"
                 "warning: `grt-upload` (lib) generated 2 warnings\n"
                 "warning: `grt-validator` (bin \"grt-validator\") generated 1 warning")],
              "Eight warnings: five in grt-reader (mostly needless_borrow and a "
              "manual_range_contains), two in grt-upload, one in the binary. Nothing "
              "deny-level.")),
        (4, T("Fix the grt-reader ones only. The others can wait for whichever PR touches "
              "those files.",
              [E("crates/grt-reader/src/desfire.rs", "if sw1 >= 0x90 && sw1 <= 0x91 {",
                 "if (0x90..=0x91).contains(&sw1) {"),
               B("cargo clippy -p grt-reader --all-targets -- -D warnings",
                 "    Checking grt-reader v1.3.2 (/Users/ceri/src/validator-agent/crates/grt-reader)\n"
                 "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 3.4s")],
              "grt-reader is clippy-clean with -D warnings (range contains, four needless "
              "borrows). grt-upload and the binary are untouched.")),
        (6, T("How many taps are sitting in the bench journal right now?",
              [B("ssh grt@10.48.7.21 \"sqlite3 /var/lib/grt-validator/taps.db 'select count(*), "
                 "sum(uploaded_at is null) from tap;'\"",
                 "1842|0")],
              "1,842 taps in the journal, none pending upload.")),
        (7, T("Leave the uploader's retry policy alone today, I want to talk it through with "
              "the back-office people first.",
              [],
              "Leaving the retry policy as it is.")),
        ],
    2: [(4, T("Commit the debounce.",
              [B("git add lib/features/search && git commit -s -m 'Debounce stop search by 300 ms'",
                 "[main 0a7d3f1] Debounce stop search by 300 ms\n 1 file changed, 7 insertions(+), 2 deletions(-)")],
              "Committed as 0a7d3f1, signed off.",
              needs=["U01"]))],
    6: [(4, T("Clean those zips out of /tmp.",
              [B("rm -v /tmp/gtfs-22.zip /tmp/gtfs-29.zip",
                 "/tmp/gtfs-22.zip\n/tmp/gtfs-29.zip")],
              "Removed both."))],
    12: [(2, T("How much heap does the pod get in prod, for comparison?",
               [B("kubectl -n data get deploy feedsmith -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name==\"JAVA_TOOL_OPTIONS\")].value}{\"\\n\"}{.spec.template.spec.containers[0].resources.limits}'",
                  "-XX:MaxRAMPercentage=75\n{\"cpu\":\"2\",\"memory\":\"2Gi\"}")],
               "Prod gets a 2 GiB limit with MaxRAMPercentage=75, so about 1.5 GiB of heap; the "
               "old list-based export would have died there too once summer was added.")),
         (3, T("Don't touch the pod limits, the streaming change is enough.",
               [],
               "Agreed, limits stay as they are.")),
         (4, T("Run the exporter tests.",
               [B("./gradlew test --tests '*Export*'",
                  "> Task :test\n\nStopTimeExporterTest > streamsInServiceOrder() PASSED\n"
                  "StopTimeExporterTest > writesHeaderOnce() PASSED\n\nBUILD SUCCESSFUL in 9s")],
               "Exporter tests pass.")),
         (6, T("What are the warnings mostly? Open the report.",
               [B("jq -r '.notices[] | select(.severity==\"WARNING\") | \"\\(.totalNotices) \\(.code)\"' "
                  "build/validation/report.json | sort -rn",
                  "38 stop_too_far_from_shape\n3 fast_travel_between_consecutive_stops")],
               "38 of the 41 are stop_too_far_from_shape, mostly the Quadrant bus station "
               "stands sitting 120-160 m off the shapes; the other three are fast travel "
               "between two close stops on route 4. Both are long-standing."))],
    17: [(1, T("This laptop hasn't got cargo-nextest or just, apparently. Install them the way "
               "I do toolchains.",
               [B("mise use cargo:cargo-nextest@0.9.72 just@1.28.0 && mise install",
                  "mise ~/src/validator-agent/mise.toml tools: cargo:cargo-nextest@0.9.72, just@1.28.0\n"
                  "mise cargo:cargo-nextest@0.9.72 ✓ installed\nmise just@1.28.0           ✓ installed"),
                B("cargo nextest --version && just --version", "cargo-nextest 0.9.72\njust 1.28.0")],
               "Both pinned in this repo's mise.toml and installed: cargo-nextest 0.9.72 and "
               "just 1.28.0.",
               needs=["U11"]))],
    19: [(1, T("Remind me what went into 1.8.0 compared with 1.7.3.",
               [B("git log --oneline --no-merges v1.7.3..v1.8.0 | head -6",
                  "b9c2d10 Show platform on departures\n2b7e9d0 Add favourite stops to home screen\n"
                  "6c1d8e4 Bump Firebase to 3.x, iOS 13 minimum\n0a7d3f1 Debounce stop search by 300 ms\n"
                  "e41a7c2 Ticket expiry reminders\n91fe0b3 Arriving now label")],
               "Favourites, the platform on departures, Arriving now, search debounce, "
               "the Firebase 3 bump, and ticket expiry reminders (which is new in 1.8.0 and "
               "the first thing to suspect)."))],
    22: [(1, T("Pull main first, design pushed colour tokens yesterday.",
               [B("git pull --ff-only",
                  "Updating 4aa7b13..c01f9e2\nFast-forward\n lib/theme/grt_colors.dart | 24 ++++++++++++++++++++++++\n 1 file changed")],
               "Up to date with main (c01f9e2): new lib/theme/grt_colors.dart.")),
         (3, T("Use the colour tokens for those rather than hex literals.",
               [E("lib/features/map/journey_map.dart",
                  "        lineColor: leg.isWalk ? '#8A8D8F' : '#C8102E',",
                  "        lineColor: (leg.isWalk ? GrtColors.walkGrey : GrtColors.busRed).toHexStringRGB(),")],
               "Switched to GrtColors.busRed and GrtColors.walkGrey.")),
         (4, T("The legend wants route badges as SVGs. Pull in flutter_svg for that.",
               [B("grep -nE '^MIT$' ~/src/oss-policy/allowed-licences.txt && fvm flutter pub add flutter_svg",
                  "3:MIT\nResolving dependencies...\n+ flutter_svg 2.0.10+1\n+ vector_graphics 1.1.11+1\nChanged 4 dependencies!")],
               "flutter_svg 2.0.10+1 is MIT (its vector_graphics dependencies are BSD-3), both "
               "on the oss-policy allow-list; added, and I'll list it in the PR.",
               needs=["U10"])),
         (5, T("Badges: route number in white on the route colour, 24 px high.",
               [E("lib/features/map/map_legend.dart",
                  "  Widget _badge(Route r) => Text(r.shortName);",
                  "  Widget _badge(Route r) => Container(\n"
                  "        height: 24, padding: const EdgeInsets.symmetric(horizontal: 6),\n"
                  "        decoration: BoxDecoration(color: r.colour, borderRadius: BorderRadius.circular(4)),\n"
                  "        child: Center(child: Text(r.shortName, style: const TextStyle(color: Colors.white))),\n      );")],
               "Badges are 24 px pills in the route colour with the number in white.")),
         (8, T("Run the full suite before I stop.",
               [B("fvm flutter test", "01:09 +236 ~3: All tests passed!")],
               "236 passed, 3 skipped."))],
    25: [(3, T("Has CI published the release for the tag yet?",
               [B("tea releases list --output simple | head -2",
                  "agent-v1.4.0 validator-agent 1.4.0 2026-06-19 grt-validator_1.4.0_armv7hf.ipk")],
               "Yes, release agent-v1.4.0 is up with grt-validator_1.4.0_armv7hf.ipk attached."))],
    28: [(2, T("What's the realtime pod's memory been doing since the broker change?",
               [B("kubectl -n data top pod -l app=feedsmith-realtime",
                  "NAME                                  CPU(cores)   MEMORY(bytes)\n"
                  "feedsmith-realtime-6d9f7c7b8d-q2x4k   41m          388Mi")],
               "Steady at 388 MiB and 41 millicores, same as before the broker change."))],
    33: [(3, T("Regenerate the OpenAPI doc the app team builds their client from.",
               [B("./gradlew generateOpenApiDocs -q && git diff --stat docs/openapi.yaml",
                  " docs/openapi.yaml | 38 ++++++++++++++++++++++++++++++++++++++\n 1 file changed, 38 insertions(+)")],
               "docs/openapi.yaml now includes GET /api/stops/{atcoCode}/accessibility and the "
               "StopAccessibilityDto schema."))],
    35: [(2, T("Only Firebase should move in the lockfile for this. Undo any other churn.",
               [B("git diff --stat pubspec.lock && git diff pubspec.lock | grep -E '^[-+]    version' | head -6",
                  " pubspec.lock | 24 ++++++++++++------------\n"
                  "-    version: \"3.1.1\"\n+    version: \"3.4.0\"\n-    version: \"4.0.2\"\n+    version: \"4.1.0\"\n"
                  "-    version: \"5.1.0\"\n+    version: \"5.2.0\"")],
               "Only the Firebase family moved (core, crashlytics and their platform "
               "interfaces); no unrelated packages changed, so nothing to undo."))],
    37: [(2, T("How full is the bench's data partition? It was creeping up last month.",
               [B("ssh grt@10.48.9.40 'df -h /var/lib'",
                  "Filesystem      Size  Used Avail Use% Mounted on\n/dev/mmcblk0p4  2.0G  212M  1.7G  12% /var/lib")],
               "12% used (212M of 2.0G) on /var/lib; the journal compaction in 1.4.1 is doing its job.")),
         (3, T("Is the reader still dropping taps on the bench since the image fix?",
               [B("ssh grt@10.48.9.40 'journalctl -u grt-validator --since today -o cat | grep -c SCARD_W_REMOVED_CARD'",
                  "0", error=True)],
               "No: zero SCARD_W_REMOVED_CARD today (grep exits 1 on no matches).")),
         (4, T("Bump the default upload timeout to 20 seconds, depot wifi is dreadful.",
               [B("git switch -c chore/upload-timeout", "Switched to a new branch 'chore/upload-timeout'"),
                E("crates/grt-upload/src/config.rs",
                  "fn default_timeout() -> Duration { Duration::from_secs(8) }",
                  "fn default_timeout() -> Duration { Duration::from_secs(20) }"),
                B("cargo nextest run -p grt-upload", "     Summary [   0.398s] 24 tests run: 24 passed, 0 skipped")],
               "Default upload timeout is 20 s on chore/upload-timeout; grt-upload tests pass.")),
         (5, T("Clippy still clean?",
               [B("cargo clippy --all-targets -- -D warnings",
                  "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 6.2s")],
               "Yes, no warnings.")),
         (6, T("Don't cut a release for this, it can ride along with the next one.",
               [],
               "Fine, no release; it'll go out with the next one.")),
         (7, T("Commit the timeout change.",
               [B("git commit -s -am 'Raise default upload timeout to 20 s' && git switch -q fix/key-cache-reload",
                  "[chore/upload-timeout 8e6b1f2] Raise default upload timeout to 20 s\n 1 file changed, 1 insertion(+), 1 deletion(-)")],
               "Committed as 8e6b1f2 on chore/upload-timeout, signed off, and switched back to the key-cache branch.",
               needs=["U01"]))],
    39: [(3, T("Clear out the old validation output directories.",
               [B("rm -rf build/validation build/validation-summer && ls build", "gtfs\nlibs\ntmp")],
               "Removed; build/ has only gtfs, libs and tmp left."))],
}

for _num, _items in EXTRA.items():
    _turns = SESSIONS[_num - 1]["turns"]
    for _pos, _turn in _items:  # positions are 1-based in the final session
        _turns.insert(_pos - 1, _turn)


def build():
    sessions = []
    taught = {}
    for i, s in enumerate(SESSIONS, 1):
        sid = "s%02d" % i
        turns = []
        for j, t in enumerate(s["turns"], 1):
            for f in t["teaches"]:
                if f in taught:
                    raise SystemExit("fact %s taught twice" % f)
                taught[f] = {"session": sid, "turn": j}
            turns.append({"turn": j, "prompt": t["prompt"], "events": t["events"],
                          "answer": t["answer"], "teaches": t["teaches"],
                          "needs": t["needs"], "quiet": not t["teaches"]})
        sessions.append({"session_id": sid, "project": s["project"], "day": s["day"],
                         "turns": turns})
    facts = []
    for fid, proj, kind, typ, anchors, content, sup in FACTS:
        if fid not in taught:
            raise SystemExit("fact %s never taught" % fid)
        facts.append({"fact_id": fid, "scope": "project" if proj else "user",
                      "project": proj, "type": typ, "content": content,
                      "anchors": anchors, "taught_in": taught[fid],
                      "superseded_by": sup, "kind": kind})
    unknown = set(taught) - {f["fact_id"] for f in facts}
    if unknown:
        raise SystemExit("unknown facts taught: %s" % sorted(unknown))
    return facts, sessions


def dump_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def main():
    facts, sessions = build()
    with open(os.path.join(HERE, "world.json"), "w", encoding="utf-8", newline="\n") as fh:
        json.dump(WORLD, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    dump_jsonl(os.path.join(HERE, "facts.jsonl"), facts)
    dump_jsonl(os.path.join(HERE, "sessions.jsonl"), sessions)
    nturns = sum(len(s["turns"]) for s in sessions)
    nneeds = sum(len(t["needs"]) for s in sessions for t in s["turns"])
    print("wrote %d facts, %d sessions, %d turns, %d needs" %
          (len(facts), len(sessions), nturns, nneeds))


if __name__ == "__main__":
    main()
