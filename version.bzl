"""The ctxprof version: stated here once; the tool, the agent, the recordings and the jar read it."""

CTXPROF_VERSION = "0.1.0"
