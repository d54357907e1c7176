"""Follow-up questions (`evcli ask --continue`): what a short question inherits from the session it continues.

"what should I check next?" names nothing; it means the same service, range and search
terms as the question before. Each group of fields is inherited only when the new question
leaves the whole group empty, so anything the follow-up names replaces what came before
(a follow-up naming another service is about that service, not both). One exception: a follow-up
naming only content words keeps the phrases and tokens before ("did that IP ever get in?" asks a new
thing of the address asked before); one naming a phrase or token replaces the words too. What the question
itself is (narrow or broad, whether it asks for a count) is not inherited either, except by an elliptical
follow-up ("and since 09:15?", "what about web-02?", "那 web-02 呢？"): it asks the question before again
with something changed, so a count asked before is asked again. The language is always the new question's.
"""

from __future__ import annotations

from evcli.contracts import Query

# Fields that travel together: a follow-up naming any one of a group replaces the whole group.
_GROUPS: tuple[tuple[str, ...], ...] = (
    ("services", "unknown_services", "hosts"),
    ("alertnames", "alert_state"),
    ("range",),
    ("levels",),
    ("phrases", "tokens", "terms"),
)
# what a follow-up naming only new words still asks of: the phrases and tokens before ("that IP")
_REFERRED = ("phrases", "tokens")


def follow_up(scope: Query, previous: Query | None) -> Query:
    """`scope` completed from `previous` group by group; `previous` None leaves it unchanged."""
    if previous is None:
        return scope
    inherited = {
        field: getattr(previous, field)
        for group in _GROUPS
        if not any(getattr(scope, field) for field in group)
        for field in group
    }
    if scope.terms and not any(getattr(scope, field) for field in _REFERRED):
        inherited |= {field: getattr(previous, field) for field in _REFERRED}
    if "follow_up" in scope.kinds and not scope.wants_count:
        inherited |= {"wants_count": previous.wants_count, "task_scope": previous.task_scope} | _asked_again(previous)
    return scope.model_copy(update=inherited)


def _asked_again(previous: Query) -> dict[str, object]:
    """The answer an elliptical follow-up asks for: the question before's, still named a follow-up."""
    if previous.answer is None:
        return {}
    kinds = [kind for kind in previous.kinds if kind not in ("follow_up", "lookup")]
    return {"answer": kinds[0] if kinds else "follow_up", "kinds": ["follow_up", *kinds], "by": previous.by}
