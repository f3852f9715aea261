"""HTTP: the FastAPI application, its routers and schemas, and the static page."""
