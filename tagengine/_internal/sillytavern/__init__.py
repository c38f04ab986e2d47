"""The SillyTavern kit: `regex.py` (`tagengine st regex`), `chatfile.py` (its chat files, read and written back
exactly), `chatreplay.py` (those chats replayed: `st import`, `st export`, `replay --format st`) and
`chat_commands.py` (the command line of those three)."""

from __future__ import annotations

from .regex import AI_OUTPUT, hide_pattern, regex_script

__all__ = ["AI_OUTPUT", "hide_pattern", "regex_script"]
