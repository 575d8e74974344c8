"""The prompt a llama.cpp judge's model sees: its chat template (read from the GGUF metadata,
or the plain layout of :func:`plain_prompt` for a model without one), the text that template
renders and the tokens it becomes (:func:`render_prompt`), with the fixed instructions and the
item's shared part marked for prefix reuse.

The model (llama-cpp-python's ``LlamaModel``) is handed in by :mod:`localjudge.judge.llama.judge`;
``llama_cpp`` itself is imported only for the template formatter, inside
:func:`chat_formatter`. Imports :mod:`localjudge.errors` and the judge's protocol and registry.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from localjudge.errors import ModelError
from localjudge.judge.models.registry import ResolvedModel
from localjudge.judge.protocol import Prompt, as_messages


@dataclass(frozen=True)
class Prepared:
    """A prompt as the model sees it: its text and tokens, and where its reusable parts end."""

    tokens: list[int]
    text: str
    #: how many leading tokens are the same for every item (the instructions and the template
    #: text before the last message's content): the prefix llama.cpp may keep between calls
    fixed: int
    #: where the last message's shared part (``JudgeRequest.shared_chars``) ends, in tokens;
    #: None when the request marks none
    shared: int | None = None
    #: the tokens of the span ``JudgeRequest.read_chars`` marks, ``(start, end)``; None: none
    read: tuple[int, int] | None = None
    #: where the openings ``JudgeRequest.branch_chars`` marks end, in tokens (ascending, each
    #: after ``fixed`` and before the last token)
    branches: tuple[int, ...] = ()


def render_prompt(
    model: Any,
    formatter: Any,
    prompt: Prompt,
    *,
    template_kwargs: Mapping[str, Any],
    shared_chars: int = 0,
    read_chars: tuple[int, int] | None = None,
    branch_chars: Sequence[int] = (),
) -> Prepared:
    """The exact prompt text and tokens the model sees (chat template or plain layout).

    Only the template's own text may produce control tokens: message contents are tokenized
    as plain text, so data that spells ``<|im_end|>`` stays data. The template is rendered
    with a sentinel per message and the contents are tokenized into the gaps. The last
    message's first ``shared_chars`` characters are tokenized on their own, so that the
    tokens of that part are the same whatever follows it; so is the span ``read_chars`` of
    that part (its tokens are those of the span's text alone, whatever surrounds it), and so
    is each opening that ``branch_chars`` marks.
    """
    messages = as_messages(prompt)
    segments, lead = _segments(formatter, messages, template_kwargs)
    # the last message's content is the item's data: everything before it is fixed
    item_start = len(segments) - 2 if formatter is not None else 1
    split = shared_chars > 0
    if read_chars is not None and not split:
        raise ValueError("read_chars needs a shared part (shared_chars > 0)")
    content = segments[item_start][0]
    marks = _marks(len(content), lead, shared_chars, read_chars, branch_chars)
    cuts = sorted({0, *(m for m in marks.values() if isinstance(m, int)), *marks["branches"]})
    if len(cuts) > 1:  # the item's content in parts tokenized on their own
        parts = [(content[i:j], False) for i, j in itertools.pairwise([*cuts, len(content)])]
        segments[item_start : item_start + 1] = parts
    tokens: list[int] = []
    bos = model.token_bos()
    if model.add_bos_token() and bos >= 0:
        tokens.append(bos)
        bos_text = model.detokenize([bos], special=True).decode("utf-8", "replace")
        first, special = segments[0]
        if special and bos_text and first.startswith(bos_text):  # the template wrote it too
            segments[0] = (first[len(bos_text) :], special)
    fixed = len(tokens)
    starts: dict[int, int] = {}  # segment index -> the token it starts at
    for n, (text, special) in enumerate(segments):
        starts[n] = len(tokens)
        if n == item_start:
            fixed = len(tokens)
        if text:
            tokens += model.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def at(char: int) -> int:
        """The token at which the content's part starting at ``char`` starts."""
        return starts[item_start + cuts.index(char)]

    shared = at(marks["shared"]) if isinstance(marks["shared"], int) else None
    read = None
    if isinstance(marks["read_start"], int) and isinstance(marks["read_end"], int):
        read = (at(marks["read_start"]), at(marks["read_end"]))
    # at least one token is always evaluated: its logits start the output
    fixed = max(0, min(fixed, len(tokens) - 1))
    if shared is not None:
        shared = max(fixed, min(shared, len(tokens) - 1))
    if read is not None and not (fixed < read[0] < read[1] <= (shared or 0)):
        raise ValueError(f"read_chars {read_chars} marks no token after the instructions")
    branches = sorted({min(at(c), len(tokens) - 1) for c in marks["branches"]} - {fixed})
    return Prepared(
        tokens=tokens,
        text="".join(text for text, _ in segments),
        fixed=fixed,
        shared=shared,
        read=read,
        branches=tuple(b for b in branches if b > fixed),
    )


def _marks(
    length: int,
    lead: int,
    shared_chars: int,
    read_chars: tuple[int, int] | None,
    branch_chars: Sequence[int],
) -> dict[str, Any]:
    """Where the item's content (``length`` characters, of which the layout dropped ``lead``
    leading ones) is cut, in its characters: the end of its shared part, the read span's ends
    inside it (None where the request marks none) and its branch points."""
    marks: dict[str, Any] = {"shared": None, "read_start": None, "read_end": None}
    if shared_chars > 0:
        cut = marks["shared"] = min(max(shared_chars - lead, 0), length)
        if read_chars is not None:
            a, b = (min(max(x - lead, 0), cut) for x in read_chars)
            if not a < b:
                raise ValueError(f"read_chars {read_chars} is empty or outside the shared part")
            marks["read_start"], marks["read_end"] = a, b
    marks["branches"] = sorted({min(max(c - lead, 0), length) for c in branch_chars} - {0})
    return marks


def _segments(
    formatter: Any, messages: list[dict[str, str]], template_kwargs: Mapping[str, Any]
) -> tuple[list[tuple[str, bool]], int]:
    """The prompt as (text, holds control tokens) segments, the last message's content one of
    them, and how many leading characters of that content the layout drops."""
    if formatter is None:
        text = plain_prompt(messages)
        head = plain_prompt_head(messages)
        last = messages[-1]["content"]
        return [(head, False), (text[len(head) :], False)], len(last) - len(last.lstrip())
    sentinels = [f"\x00LJ{i}\x00" for i in range(len(messages))]
    stand_ins = [
        {"role": m["role"], "content": s} for m, s in zip(messages, sentinels, strict=True)
    ]
    skeleton = render_template(formatter, stand_ins, template_kwargs)
    segments: list[tuple[str, bool]] = []
    for message, sentinel in zip(messages, sentinels, strict=True):
        before, found, skeleton = skeleton.partition(sentinel)
        if not found or sentinel in skeleton:
            raise ModelError(
                "the model's chat template rewrites message contents, so item data cannot "
                "be kept apart from its control tokens",
                hint="use --no-chat-template to prompt without it",
            )
        segments += [(before, True), (message["content"], False)]
    segments.append((skeleton, True))
    return segments, 0


def render_template(
    formatter: Any, messages: list[dict[str, str]], template_kwargs: Mapping[str, Any]
) -> str:
    """The chat template's text for ``messages``."""
    try:
        return str(formatter(messages=messages, **template_kwargs).prompt)
    except Exception as exc:  # jinja2's SecurityError and template errors
        raise ModelError(
            f"the model's chat template failed to render: {type(exc).__name__}: {exc}",
            hint="use --no-chat-template to prompt without it",
        ) from exc


def chat_formatter(
    model: Any, metadata: Mapping[str, str], resolved: ResolvedModel, chat_template: bool | None
) -> Any:
    """The formatter of the model's chat template, or None for the plain layout: the template
    is used when ``chat_template`` says so, or, left None, when the model has one (and, for a
    registered judge, is an instruct model)."""
    template = metadata.get("tokenizer.chat_template")
    use = chat_template if chat_template is not None else bool(template)
    if resolved.alias is not None and chat_template is None:
        from localjudge.judge.models.registry import registry  # noqa: PLC0415

        entry = next((j for j in registry() if j.alias == resolved.alias), None)
        use = bool(template) and (entry is None or entry.instruct)
    if not use:
        return None
    if not template:
        raise ModelError(f"{resolved.path.name} has no chat template in its metadata")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

    eos = model.detokenize([model.token_eos()], special=True).decode("utf-8", "replace")
    bos_id = model.token_bos()
    bos = model.detokenize([bos_id], special=True).decode("utf-8", "replace") if bos_id >= 0 else ""
    try:
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    except Exception as exc:  # a template that does not even parse
        raise ModelError(
            f"the model's chat template cannot be parsed: {exc}",
            hint="use --no-chat-template to prompt without it",
        ) from exc


def plain_prompt(messages: list[dict[str, str]]) -> str:
    """The completion prompt for models without a chat template."""
    parts = [m["content"].strip() for m in messages]
    return "\n\n".join(parts) + "\n\nJSON answer:\n"


def plain_prompt_head(messages: list[dict[str, str]]) -> str:
    """The part of :func:`plain_prompt` before the last message: the same for every item."""
    return "".join(m["content"].strip() + "\n\n" for m in messages[:-1])
