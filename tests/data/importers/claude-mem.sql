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
-- Issue 35: a worktree's rows merged into this project by claude-mem's `adopt`
-- (merged_into_project), both file lists, legacy concept tags, a prompt, and two rows
-- claude-mem marks sensitive / security_alert. All months old.
INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, user_prompt, started_at, started_at_epoch, status)
VALUES ('c-3', 'm-3', 'proj/wt-orders', 'partition the orders table before black friday', '2026-03-05T09:00:00.000Z', 1772701200000, 'completed');
INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts, files_read, files_modified, prompt_number, merged_into_project, generated_by_model, content_hash, created_at, created_at_epoch)
VALUES
 ('m-3', 'proj/wt-orders', 'decision', 'Orders table partitioned by month', 'Partitioning decision',
  '["Each month of orders is its own partition","Queries must filter on created_month to prune"]',
  'The orders table grew past 400 million rows; monthly range partitions keep the hot month small.',
  '["pattern:-repository-pattern","how-it-works: partition pruning"]', '["db/schema.sql"]', '["db/migrations/0042_partition_orders.sql"]',
  2, 'proj', 'claude-sonnet-4-5', 'h5', '2026-03-05T09:20:00.000Z', 1772702400000),
 ('m-1', 'proj', 'security_alert', 'Staging database password committed in .env.staging', NULL,
  '["Rotated on 2026-03-02"]', 'The staging DB password was committed and pushed; it was rotated the same day.',
  '[]', '[]', '[".env.staging"]', 3, NULL, NULL, 'h6', '2026-03-02T11:00:00.000Z', 1772449200000),
 ('m-1', 'proj', 'sensitive', 'Customer export holds personal emails', NULL,
  '[]', 'The nightly customer export includes personal email addresses of every customer.',
  '[]', '[]', '[]', 4, NULL, NULL, 'h7', '2026-03-02T11:30:00.000Z', 1772451000000);
INSERT INTO session_summaries (memory_session_id, project, request, learned, completed, files_edited, merged_into_project, created_at, created_at_epoch)
VALUES ('m-3', 'proj/wt-orders', 'Partition the orders table', 'Range partitions by month prune well',
        'Migration 0042 written', '["db/migrations/0042_partition_orders.sql"]', 'proj', '2026-03-05T10:00:00.000Z', 1772704800000);
