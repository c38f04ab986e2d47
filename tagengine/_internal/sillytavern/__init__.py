"""The SillyTavern kit: `regex.py` (`tagengine st regex`), `chatfile.py` (its chat files, read and written back
exactly), `chatreplay.py` (those chats replayed: `st import`, `st export`, `replay --format st`) and
`chatbatch.py` (many chat files at once, from plain arguments: what those three commands call).

Nothing is imported here; the command line (`cli/st.py`, `cli/replay.py`) imports these modules only when one
of those commands runs.
"""
