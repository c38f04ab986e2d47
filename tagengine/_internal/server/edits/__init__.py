"""A player's edits in the server (docs/editor.md): the edits waiting for the next reply (`pending`), the point of
the game an edit is made at and how it is saved there (`points`), and what a reply opens with (`opening`)."""
