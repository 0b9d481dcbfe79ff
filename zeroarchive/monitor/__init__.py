"""`scrapy monitor`: a read-only web app over the archive (Starlette on uvicorn): the
0archive GraphQL sites API and search at /graphql, and the site monitor's pages and the
/search page, from server-side templates with no script and nothing loaded from elsewhere.

May import: ``search``, ``storage``, ``events`` (reading events), ``copies`` (reading
clusters), ``media`` (a snapshot's stored pictures, stylesheets and screenshot),
``sources``, ``core``.
Never imported by: anything but ``commands``.
"""
