"""The SillyTavern kit: `regex.py` (`tagengine st regex`), `chatfile.py` (its chat files, read and written back
exactly), `chatreplay.py` (those chats replayed: `st import`, `st export`, `replay --format st`) and
`chat_commands.py` (the command line of those three).

Nothing is imported here: building the command line imports `chat_commands.py`, which stays light (no Lark,
no pydantic), so `tagengine --version` starts as fast as before.
"""
