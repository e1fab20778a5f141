-- The tables claude-mem's importer reads, in the shape claude-mem's schema gives them.
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id TEXT UNIQUE NOT NULL,
  memory_session_id TEXT UNIQUE,
  project TEXT NOT NULL,
  platform_source TEXT NOT NULL DEFAULT 'claude',
  user_prompt TEXT,
  started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL,
  completed_at TEXT,
  completed_at_epoch INTEGER,
  status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'completed', 'failed')),
  worker_port INTEGER,
  prompt_counter INTEGER DEFAULT 0,
  custom_title TEXT
);
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  text TEXT,
  type TEXT NOT NULL,
  title TEXT,
  subtitle TEXT,
  facts TEXT,
  narrative TEXT,
  concepts TEXT,
  files_read TEXT,
  files_modified TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  content_hash TEXT,
  agent_type TEXT,
  agent_id TEXT,
  merged_into_project TEXT,
  generated_by_model TEXT,
  metadata TEXT,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL,
  UNIQUE(memory_session_id, content_hash)
);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL,
  project TEXT NOT NULL,
  request TEXT,
  investigated TEXT,
  learned TEXT,
  completed TEXT,
  next_steps TEXT,
  files_read TEXT,
  files_edited TEXT,
  notes TEXT,
  prompt_number INTEGER,
  discovery_tokens INTEGER DEFAULT 0,
  merged_into_project TEXT,
  created_at TEXT NOT NULL,
  created_at_epoch INTEGER NOT NULL
);
INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, user_prompt, started_at, started_at_epoch, status)
VALUES ('c-1', 'm-1', 'proj', 'fix the flaky upload test', '2026-03-02T09:00:00.000Z', 1772442000000, 'completed'),
       ('c-2', 'm-2', 'other-app', 'add dark mode', '2026-03-03T09:00:00.000Z', 1772528400000, 'completed');
INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts, files_read, files_modified, content_hash, created_at, created_at_epoch)
VALUES
 ('m-1', 'proj', 'bugfix', 'Upload test raced the temp-dir cleanup', 'Flaky CI fixed',
  '["The fixture deleted the temp dir before the worker finished","Joining the worker first fixes it"]',
  'The upload test failed one run in ten because cleanup ran before the background worker exited.',
  '["testing","race-condition"]', '["tests/test_upload.py"]', '["tests/conftest.py"]', 'h1', '2026-03-02T09:10:00.000Z', 1772442600000),
 ('m-1', 'proj', 'decision', 'Uploads go to object storage, not the database', 'Storage decision',
  '["Blobs over 1 MB are never stored in Postgres"]',
  'We chose object storage for uploads; the staging bucket key is AKIAIOSFODNN7EXAMPLQ and aws_secret_access_key=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.',
  '["architecture"]', '[]', '[]', 'h2', '2026-03-02T09:20:00.000Z', 1772443200000),
 ('m-1', 'proj', 'discovery', 'The API rate limit is 100 requests per minute per token', NULL,
  '[]', NULL, '[]', '[]', '[]', 'h3', '2026-03-02T09:30:00.000Z', 1772443800000),
 ('m-2', 'other-app', 'feature', 'Added a dark mode toggle', NULL, '[]', 'Theme switch in settings.', '[]', '[]', '[]', 'h4', '2026-03-03T09:10:00.000Z', 1772529000000);
INSERT INTO session_summaries (memory_session_id, project, request, investigated, learned, completed, next_steps, created_at, created_at_epoch)
VALUES ('m-1', 'proj', 'Fix the flaky upload test', 'Worker lifetime in the fixture', 'Cleanup must wait for workers',
        'Fixture joins the worker before cleanup', 'Audit other fixtures for the same race', '2026-03-02T10:00:00.000Z', 1772445600000),
       ('m-2', 'other-app', 'Add dark mode', NULL, NULL, 'Toggle shipped', NULL, '2026-03-03T10:00:00.000Z', 1772532000000);
