"""A Django app of someone's own, installed by ``ERRCATALOG_EXTRA_APPS`` alone: its ``mcp_tools`` serve a tool."""
