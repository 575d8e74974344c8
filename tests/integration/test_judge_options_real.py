"""The judge options that reach llama.cpp and the chat template, with the real SmolLM2 judge:
flash attention on and off both load and judge on this build, and chat-template kwargs reach
the template's render and the judge's identity."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from localjudge import ContextPosition, load_judge
from localjudge.data.item import make_item
from localjudge.judge.cache.rows import cache_key
from localjudge.run.evaluate.evaluation import score

pytestmark = pytest.mark.model

QUESTION = "At what temperature does water boil at sea level?"
CONTEXTS = ["At sea level, water boils at 100 degrees Celsius.", "Water freezes at 0 degrees."]
FLASH_ATTN = {
    "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}
RECORD = {"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "reference": "100 degrees C."}


def test_flash_attn_on_and_off_judge_and_template_kwargs_reach_the_render(
    isolated_env: Path,
) -> None:
    judges = {
        mode: load_judge(
            "smollm2-135m",
            n_threads=1,
            n_ctx=2048,
            flash_attn=mode,
            chat_template_kwargs={"x": 1},
            cache=False,
        )
        for mode in ("on", "off")
    }
    for mode, judge in judges.items():
        result = score(ContextPosition(), judge, **RECORD)
        assert result.value is not None, mode
        assert 0.0 <= result.value <= 1.0
        assert len(result.verdicts) == len(CONTEXTS)
        assert judge.identity.settings["flash_attn"] == mode
        assert judge.identity.settings["chat_template_kwargs"] == {"x": 1}
        assert judge.n_threads == 1
        assert judge.engine.flash_attn == FLASH_ATTN[mode]  # what the context is made with

    judge = judges["off"]
    messages = [{"role": "user", "content": "hello"}]
    # the kwargs are keys of the cache: another value is another call
    other = load_judge("smollm2-135m", n_threads=1, n_ctx=2048, cache=False)
    assert other.identity.settings["chat_template_kwargs"] == {}
    schema = ContextPosition().build(make_item(RECORD, index=0))[0].request.schema
    assert cache_key(judge.identity, messages, schema) != cache_key(
        other.identity, messages, schema
    )
    # SmolLM2's own template ignores `x`; one that prints it shows the value reaching the render
    judge._formatter = Jinja2ChatFormatter(
        template="{% for m in messages %}<{{ m.content }}>{% endfor %}x={{ x }}",
        eos_token="",
        bos_token="",
    )
    assert judge.render(messages).text.endswith("<hello>x=1")
