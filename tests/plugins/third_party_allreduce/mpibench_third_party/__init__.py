"""All-reduces written by others, each adapted as an mpibench strategy in one module of at
most 30 lines using only the calls docs/strategy-api.md lists (sources in each module)."""
