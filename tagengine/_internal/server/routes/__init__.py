"""The server's routes, one module per group, each a function of the `ServerContext` giving its `Route`s
(`openai_routes`, `check_routes`, `page_routes`, `sign_in_routes`, `health_routes`); `app.make_app` joins
them. Each group's function has its own name: one name means one thing across the package (NM-1)."""
