"""Built-in toolsets: ``catalog`` (always on), ``demo`` (embedded default) and ``conformance`` (test fixtures)."""
