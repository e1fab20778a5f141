"""What injected context may cost, in estimated tokens: one home for the estimate and the
prompt's ceiling, read by the service that builds the blocks and by the hook process that adds
the Stop hook's note beside them (which imports nothing heavy: standard library only)."""

from __future__ import annotations

#: Characters per estimated token (the month replay's tokenizer: characters / 4, rounded up).
CHARS_PER_TOKEN = 4
#: What a prompt's injection may add after the first turn, the Stop hook's note included
#: (issue 33: at most 300 tokens per prompt): the hook passes the service what the note leaves.
PROMPT_MAX_TOKENS = 300


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (CHARS_PER_TOKEN characters each, rounded up)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
