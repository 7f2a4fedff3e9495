"""MkDocs hook: ```sh long fences render as ordinary sh code.

`long` is a tag for tests/test_doc_commands.py (check the arguments only, do not run);
Python-Markdown's fenced code takes only a language word, and would otherwise not see the
fence at all."""
from __future__ import annotations

import re

LONG_FENCE = re.compile(r"^(\s*```sh)[ \t]+long[ \t]*$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return LONG_FENCE.sub(r"\1", markdown)
