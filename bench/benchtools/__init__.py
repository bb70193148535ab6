"""The benchmark's tool set (toolset ``bench``), enabled only through ``bench.settings``."""
