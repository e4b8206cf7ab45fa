"""The library's own text in a history: the marker ending a cut result and the tombstone line a dropped pair
leaves. Recognised wherever it matters — labels never count it as the agent's words, a restore tool finds
what was cut, and a later plan never cuts or drops it again (its bytes stay as the plan that wrote them
left them, so the prompt cache keeps them).
"""

from __future__ import annotations

import re

from .transcript import TextBlock, ToolResultBlock

TRUNCATION_MARKER = ("[JEV archived the full result. Ask the host to restore the scoped snapshot; "
                     "do not re-execute this tool for recovery.]")  # SPEC §6's marker, read as one still
TOMBSTONE_PREFIX = "[JEV dropped call "
_END = "do not re-execute this tool for recovery.]"
# a marker (SPEC §6's or one naming its call) ending a result, a tombstone line
_MARKER = re.compile(r"\n\[JEV archived the full result[^\n]*do not re-execute this tool for recovery\.\]\Z")
_TOMBSTONE = re.compile(r"\A\[JEV dropped call [^\n]*do not re-execute this tool for recovery\.\]\Z")


def is_truncated(result: ToolResultBlock) -> bool:
    """The result is what TRUNCATE_RESULT left (a head and the marker), not an original: after a host's
    format round trip too, where the one text block may have become a string."""
    output = result.output
    if not isinstance(output, str):  # blocks: their text joined by newlines ends with the last one's
        last = output[-1] if output else None
        if not isinstance(last, TextBlock) or not last.text.endswith(_END) or not result.text_only:
            return False
        output = result.text
    return output.endswith(_END) and _MARKER.search(output, max(0, len(output) - 4096)) is not None


def is_tombstone(text: str) -> bool:
    """The text is a tombstone this library wrote, not something the agent said."""
    return text.startswith(TOMBSTONE_PREFIX) and _TOMBSTONE.match(text) is not None
