"""What the server keeps: the SQLite store, the campaigns, the state chain and its in-memory snapshots, the turns
the pages read, and the players' edits waiting for the next reply."""
