"""Every sentence evcli writes for a user without a model, one catalogue per language.

The offline engine, the fallback answers (evcli/agents/fallback.py) and the review
flag on destructive commands (evcli/agents/actions.py) read their wording here.

A catalogue module (`en.py`, `zh.py`, ...) defines `LANGUAGE` (the code intent
detection assigns), `CJK` (whether its sentences are written in CJK script) and
`MESSAGES`, a dict from message id to a `str.format` template. Every catalogue has exactly the ids of `en.py`
(a test checks it), so adding a language is adding one module: the catalogues are the modules of this
package, found on first use. A question in a language without a catalogue is answered in
English, and the answer says so (`unsupported_note`).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Catalogue:
    language: str  # the code intent detection assigns ("en", "zh", ...)
    cjk: bool  # its sentences are written in CJK script (runbook sentences in that script are preferred)
    messages: dict[str, str] = field(default_factory=dict)

    def __call__(self, message_id: str, **values: Any) -> str:
        return self.messages[message_id].format(**values)

    def join(self, parts: list[str]) -> str:
        """Parts of one sentence, with this language's list separator."""
        return self("list_separator").join(parts)


def _catalogue(module: ModuleType) -> Catalogue:
    return Catalogue(language=module.LANGUAGE, cjk=module.CJK, messages=module.MESSAGES)


@cache
def _catalogues() -> dict[str, Catalogue]:
    """Every catalogue module of this package (its `__path__`), by language, English first."""
    names = sorted((found.name for found in pkgutil.iter_modules(__path__)), key=lambda name: name != "en")
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return {module.LANGUAGE: _catalogue(module) for module in modules if hasattr(module, "MESSAGES")}


LANGUAGE_NAMES = {
    "ja": "Japanese",
    "ko": "Korean",
}  # detected but without a catalogue yet


def catalogue(language: str) -> Catalogue:
    """The catalogue of a language; English for a language that has none."""
    return _catalogues().get(language) or _catalogues()["en"]


def catalogues() -> list[Catalogue]:
    """Every language's catalogue (e.g. to recognise a sentence written in any of them)."""
    return list(_catalogues().values())


def supported(language: str) -> bool:
    return language in _catalogues()


def unsupported_note(language: str) -> str | None:
    """The English sentence saying a question's language is not supported yet, or None."""
    if supported(language):
        return None
    return _catalogues()["en"]("unsupported_language", name=LANGUAGE_NAMES.get(language, language))
