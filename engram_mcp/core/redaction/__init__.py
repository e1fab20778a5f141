"""Secret redaction for everything engram stores.

Every path that persists text (tool outputs, failed commands, notes, metadata)
must go through :func:`sanitize` (strings) or :func:`redact_obj` (JSON-like
objects).  The package needs the standard library and, for speed only,
pyahocorasick (without it a regular expression finds the same literals, ~10x
slower); it does no work at import time beyond compiling regular expressions,
because it runs inside hook processes whose whole budget is about 100 ms.

Modules, from the bottom up (each imports only modules above it in this list):

* ``labels``: the kinds of secret, ``[REDACTED:<kind>]`` labels, findings.
* ``private_spans``: ``<private>...</private>`` spans.
* ``values``, ``passwords``, ``key_names``: judgements every rule family shares
  (a placeholder, a random token, a value built as a password, how strongly a
  key's name says secret, ``key = value`` judged whole).
* ``rule``: the rule type (a regex, its anchors, its check).
* rule families: ``private_keys``, ``providers``, ``urls``, ``codes``,
  ``assignments``, ``commands``, ``files``, ``logins``; ``rules`` puts them in
  the one order they run in.
* ``literals``, ``engine``: skipping the rules that cannot match, applying the rest.
* ``tables``, ``prose_values``, ``sentences``, ``prose``, ``outbound``: the passes
  that are not rules (markdown tables and SQL, secrets in sentences, the forms
  only the outbound pass takes).
* ``passes``, ``echoes``: one text through every pass, and a value redacted once
  redacted wherever the text repeats it.
* ``api``: :func:`redact`, :func:`sanitize`, :func:`redact_obj`,
  :func:`redact_outbound`; ``tags``: tags that are themselves a secret.

Behaviour summary
-----------------
* ``strip_private`` removes ``<private>...</private>`` spans (case-insensitive,
  multi-line, nesting-aware; an unclosed ``<private>`` hides everything up to
  the end of the text).  Each outermost span becomes ``[private]``.  A stray
  closing tag without an opening one is left as is.
* ``redact`` replaces each secret with ``[REDACTED:<kind>]``.  Rules run from the
  most specific (provider token formats, PEM blocks) to the most generic
  (``key=value`` assignments, then the entropy fallback), and no rule ever
  matches inside an earlier ``[REDACTED:...]`` label, so a secret is never
  wrapped twice and ``sanitize`` is idempotent.
* Where a secret sits inside a larger structure only the secret is replaced:
  the key of an assignment (``DB_PASSWORD=[REDACTED:password-assignment]``),
  the scheme/user/host of a URL
  (``postgres://admin:[REDACTED:url-credentials]@db:5432/x``), the
  ``Authorization: Bearer`` prefix, the ``https://hooks.slack.com/services/``
  prefix, the ``AccountKey=`` name, ...

Deliberate choices (documented so that tests and reviewers agree):
* Placeholders are left alone: ``<your-password>``, ``${TOKEN}``, ``$API_KEY``,
  ``$(cmd)``, ``{{ vault_pw }}``, ``%s``, ``{password}``, ``xxx``, ``****``,
  ``your_token_here``, elided examples (``hf_...``), ``None``/``null``/``true``,
  type names (``str``, ``SecretStr``), argparse metavars (``--token TOKEN``),
  values already masked by a tool (``[hidden]``) and colour codes.
* Digit-free values that *name* a secret instead of being one are kept:
  ``password``, ``my-secret``, ``db_password``, ``ExpiredToken``,
  ``X-Auth-Token``, ``mysecretpassword``; likewise ``https://user:password@host``.
  Weak but real passwords are redacted: ``changeme``, ``hunter2``, ``admin``,
  ``postgres``, ``letmein``.
* Assignment values shorter than 4 characters are not redacted (``token: 5``);
  all-digit values shorter than 8 are kept for token/key names (``token=2936``
  is a token id) but redacted for password names (PINs).  URL passwords of any
  length are redacted.
* Code is not a secret: attribute chains and calls (``args.token``,
  ``os.environ["X"]``, ``get_password()``), keyword arguments and dict entries
  passing a variable (``f(password=password, ...)``, ``{"token": token}``),
  indented ``name = variable`` assignments, expressions (``TOKEN = A ^ B``),
  type annotations (``token: AccessToken``).  A hard-coded *literal* in code
  (``password = "hunter2"``) is redacted.
* Unquoted multi-word values are only partly covered: in ``password: correct
  horse`` (YAML) the value is treated as prose and kept; in ``PASS=correct
  horse`` only the first word is redacted.  Quote such values.
* ``generic-high-entropy`` is a conservative fallback: base64/hex/url-safe
  values of 16+ characters with mixed character classes and high Shannon
  entropy, under a key naming a key/secret/token/password/credential.  Hex under
  a plain ``key`` (cache keys, digests), UUIDs, paths and camelCase names are
  kept.
* ``password`` in prose without an assigned value is never touched, and
  certificates / public keys (``-----BEGIN CERTIFICATE-----``, ``ssh-ed25519``,
  ``publicKeyToken``) are not secrets.
"""

from __future__ import annotations

# The public names, and internals the tests reach through the package: the rules' order, the
# literal lookup, the clean-pairs memo (one dict, cleared in place). A name the code rebinds or a
# test patches is not re-exported, as a copy here would go stale: it is reached on the module
# that reads it (`literals._LOOKUP`, `literals._PASSES_SEEN`, `api._redact_counts`).
from .api import _CLEAN_PAIRS as _CLEAN_PAIRS
from .api import redact, redact_obj, redact_outbound, redact_outbound_obj, sanitize
from .engine import _apply as _apply
from .engine import _run_rules as _run_rules
from .labels import PRIVATE_PLACEHOLDER as PRIVATE_PLACEHOLDER
from .labels import SECRET_KINDS, Finding, RedactionResult
from .labels import label_for as label_for
from .literals import _leading_literals as _leading_literals
from .literals import _Lookup as _Lookup
from .private_spans import strip_private
from .rule import _ascii_lower as _ascii_lower
from .rules import _RULES as _RULES
from .tags import redact_tags as redact_tags
from .tags import tag_secret_kind as tag_secret_kind

__all__ = [
    "Finding",
    "RedactionResult",
    "SECRET_KINDS",
    "redact",
    "strip_private",
    "sanitize",
    "redact_obj",
    "redact_outbound",
    "redact_outbound_obj",
]
