"""The server's routes, one module per group, each a function of the `ServerContext` giving its `Route`s
(`health_routes`, `chat_routes`, `page_routes`, `sign_in_routes`, `campaign_page_routes`, `editor_routes`,
`check_routes`, `edit_api_routes`, `chat_state_routes`, `st_bridge_routes`), listed in `app.ROUTE_GROUPS`; each
handler a module-level function, and what several groups share in `base.py`, which is the only module a group
imports from this folder."""
