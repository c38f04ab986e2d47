"""The SillyTavern kit: `tagengine st regex` prints a regex script for SillyTavern's Regex extension that
hides the tags (and their receipts) in the chat display only. The outgoing prompt keeps them: the
receipts must come back to the server, which rebuilds the state from them."""

from __future__ import annotations

import uuid
from typing import Any

from ..tags.vocabulary import TAG_NAMES

AI_OUTPUT = 2  # SillyTavern's regex placement for the model's replies


def hide_pattern(names: tuple[str, ...] = TAG_NAMES) -> str:
    """A tag or receipt, `[name: ...]` up to its bracket, with the line break after it; JS and Python alike."""
    return r"\[[ \t]*(?:" + "|".join(names) + r")[ \t]*:[^\[\]]*\]?[ \t]*\n?"


def regex_script() -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "tagengine/hide-tags")),  # the same script on every run
        "scriptName": "tagengine: hide tags",
        "findRegex": f"/{hide_pattern()}/gi",
        "replaceString": "",
        "trimStrings": [],
        "placement": [AI_OUTPUT],
        "disabled": False,
        "markdownOnly": True,  # "Alter Chat Display": the stored message and the prompt keep the tags
        "promptOnly": False,
        "runOnEdit": True,
        "substituteRegex": 0,
        "minDepth": None,
        "maxDepth": None,
    }
