"""What counts as rare: the document frequencies of the dev sets, shipped with the local judge's weights.

Two tables, one cut (more than `RARE_SHARE` of the instances show it: common). The strict proxy's tokens
(`calibration.labels.session_tokens`, read as the label reads them) and the judge's words
(`jev.judges.words.portable` hashes of the words `find_words` tracks in a session's results and
commands, read whole). Counted per instance, not per run: the runs of one instance (DeepSeek's dev set
holds ~13 of each) share its files, and counting them apart would call an instance's own paths common.
Both come from the training sessions only, so the rarity cut never reads the sessions it is applied to.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jev.judges.features import command_text
from jev.judges.words import Buffer, find_words, portable
from jev.model.transcript import ToolResultBlock, ToolUseBlock
from jev.reading.analysis import Transcript

from .labels import RARE_SHARE, frequent, session_tokens


def session_words(transcript: Transcript) -> np.ndarray:
    """The distinct `portable` hashes of the words a session's results and commands show."""
    texts = [block.text if isinstance(block, ToolResultBlock) else command_text(block.input)
             for message in transcript.messages for block in message.content
             if isinstance(block, (ToolResultBlock, ToolUseBlock))]
    return np.unique(portable(find_words(Buffer.of(texts)))) if texts else np.zeros(0, dtype=np.uint64)


def rarity_table(sessions: Iterable[tuple[str, Transcript]], share: float = RARE_SHARE) -> dict[str, Any]:
    """The `rarity` object of a model document from (instance, transcript) pairs: the label's common tokens
    and the judge's common words (sorted), the share and the number of instances they were counted over."""
    tokens: dict[str, set[str]] = {}
    words: dict[str, set[int]] = {}
    for instance, transcript in sessions:
        tokens.setdefault(instance, set()).update(session_tokens(transcript))
        words.setdefault(instance, set()).update(session_words(transcript).tolist())
    return {"share": share, "instances": len(tokens), "common": sorted(frequent(tokens.values(), share)),
            "common_words": sorted(frequent(words.values(), share))}


@dataclass(frozen=True, slots=True)
class Rarity:
    """The two common tables as the label and the features read them."""

    tokens: frozenset[str] = frozenset()  # the strict proxy's common tokens
    words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))  # the judge's, sorted

    @classmethod
    def of(cls, table: dict[str, Any] | None) -> Rarity:
        """From a model document's `rarity` object (empty tables when there is none: older weights)."""
        table = table or {}
        return cls(frozenset(table.get("common", ())), np.asarray(table.get("common_words", ()), dtype=np.uint64))

    @classmethod
    def shipped(cls) -> Rarity:
        """The tables shipped with the local judge's weights."""
        from jev.judges.local import load_model
        return cls.of(load_model().get("rarity"))
