"""The llama.cpp judge: a GGUF model in-process, decoding under llguidance grammars.

This module, with :mod:`localjudge.judge.engine.batched` (which it drives) and
:mod:`localjudge.judge.engine.kv` (its context), :mod:`localjudge.judge.llama.prompting` (the chat
template and the tokens of a prompt), :mod:`localjudge.judge.llama.native` (the build, the AMX
decision, importing the backends) and :mod:`localjudge.judge.llama.tokens` (the token table), is the
only place that uses ``llama_cpp`` and ``llguidance``, and they are imported when a judge is loaded,
so ``import localjudge`` and ``localjudge --help`` stay light.

How each guarantee is kept:

- valid JSON: every token is chosen under the schema's llguidance grammar
  (:mod:`localjudge.judge.engine.batched`); the text is then validated by the same pydantic schema
  (no repair).
- never cut off: the output bound is the schema's worst case (:func:`worst_case_tokens`),
  checked against the window before generating.
- never silently unconstrained: a matcher error, a rejected token, an early end or an output
  past its bound raises :class:`ConstraintError`; no output is returned without the grammar.
- prefix reuse: the instructions (the same for every metric) are evaluated once per machine
  and stored beside the cache; an item's question and contexts once per item (see the engine).
- reproducible: greedy decoding with a fixed seed; an output depends only on its own prompt and
  the settings (see the engine's notes on batches).
- no native crash from AMX: on CPUs where llama.cpp's AMX kernels are active, the model is loaded
  without llama.cpp's extra buffer types (:func:`~localjudge.judge.llama.native.amx_decision`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from localjudge.errors import ConstraintError, ContextOverflowError, ModelError, OutputBudgetError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import open_cache, resolve_cache_path
from localjudge.judge.engine.batched import DEFAULT_PARALLEL, Engine
from localjudge.judge.engine.log import raise_pending_interrupt
from localjudge.judge.engine.prefix_file import PREFIX_DIR, PrefixStore
from localjudge.judge.engine.values import N_UBATCH, EngineOutput, EngineRequest
from localjudge.judge.llama.native import (
    amx_decision,
    announce,
    debug_enabled,
    gpu_layers,
    import_backends,
    native_info,
    quiet_stderr,
)
from localjudge.judge.llama.options import (
    DEFAULT_FLASH_ATTN,
    default_threads,
    flash_attn_mode,
)
from localjudge.judge.llama.options import (
    chat_template_kwargs as check_template_kwargs,
)
from localjudge.judge.llama.prompting import Prepared, chat_formatter, render_prompt
from localjudge.judge.llama.tokens import lltokenizer
from localjudge.judge.models.ggufmeta import check_gguf
from localjudge.judge.models.registry import ResolvedModel, model_sha256, resolve_model
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    JudgeIdentity,
    JudgeRequest,
    M,
    OnOutcome,
    Outcome,
    Prompt,
    Reading,
    as_messages,
    check_fits,
)
from localjudge.judge.schemas import json_schema, output_budget, parse_output, worst_case_tokens
from localjudge.judge.soft import decision_keys
from localjudge.versions import package_version

DEFAULT_N_CTX = 8192
#: the decoding engine's identity, part of every cache key
ENGINE_VERSION = "localjudge-engine/1"
#: a prompt of more bytes than this is first checked against the window from its byte count
UNTOKENIZED_CHECK_BYTES = 1024 * 1024


class LlamaJudge:
    """A judge backed by a GGUF model run in-process by llama.cpp (:class:`Engine` decodes)."""

    def __init__(
        self,
        model: ResolvedModel,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_gpu_layers: int | str = "auto",
        n_threads: int | None = None,
        seed: int = 0,
        chat_template: bool | None = None,
        parallel: int = DEFAULT_PARALLEL,
        fast_forward: bool = True,
        flash_attn: str | bool = DEFAULT_FLASH_ATTN,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        prefix_dir: Path | None = None,
    ) -> None:
        if parallel < 1:
            raise ModelError(f"parallel must be at least 1, got {parallel}")
        if n_ctx < 0:
            raise ModelError(f"n_ctx must be 0 (the model's trained context) or more, got {n_ctx}")
        self.model = model
        self.seed = seed
        self.parallel = parallel
        self.flash_attn = flash_attn = flash_attn_mode(flash_attn)
        template_kwargs = check_template_kwargs(chat_template_kwargs)
        check_gguf(model.path)
        sha = model_sha256(model.path)
        if model.expected_sha256 and sha != model.expected_sha256:
            raise ModelError(
                f"model file {model.path} has sha256 {sha}, expected {model.expected_sha256}",
                hint=model.mismatch_hint(),
            )
        self.sha256 = sha
        llama_cpp, llguidance = import_backends()
        self._llama_cpp, self._llguidance = llama_cpp, llguidance
        info = native_info()
        self._system_info = info.system_info  # part of the stored prefix's key
        amx = amx_decision(info)
        announce(amx.notice)
        n_gpu_layers = gpu_layers(n_gpu_layers, bool(llama_cpp.llama_supports_gpu_offload()))
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = 0x7FFFFFFF if n_gpu_layers == -1 else n_gpu_layers
        params.use_extra_bufts = amx.extra_buffers
        from llama_cpp._internals import LlamaModel  # noqa: PLC0415

        with quiet_stderr():
            try:
                self._model = LlamaModel(
                    path_model=str(model.path), params=params, verbose=debug_enabled()
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(
                    f"llama.cpp could not load {model.path}: {exc}",
                    hint="the file may be truncated or corrupt, or need a newer llama-cpp-python",
                ) from exc
        raise_pending_interrupt()
        self._metadata = self._model.metadata()
        # 0: the context the model was trained with, as its GGUF metadata gives it
        self.n_ctx = n_ctx = n_ctx or int(self._model.n_ctx_train())
        self._formatter = chat_formatter(self._model, self._metadata, model, chat_template)
        # the variables reach only a template: without one they change nothing
        self._template_kwargs = template_kwargs if self._formatter is not None else {}
        self._tokenizer, self._max_token_bytes = lltokenizer(
            llama_cpp, llguidance, self._model.model, sha
        )
        self.n_threads = n_threads or default_threads()
        self._grammars: dict[type[BaseModel], tuple[str, dict[str, tuple[str, ...]]]] = {}
        self._identity = JudgeIdentity(
            model=model.alias or model.path.name,
            sha256=sha,
            backend=f"llama-cpp-python {package_version('llama-cpp-python')}",
            settings={
                "decoding": "greedy",
                "temperature": 0.0,
                "seed": seed,
                "n_gpu_layers": n_gpu_layers,
                # AMX kernels and weight repacking change numerics: part of the cache key
                "amx": amx.state,
                "cpu_extra_buffers": amx.extra_buffers,
                "chat_template": self._formatter is not None,
                "chat_template_kwargs": self._template_kwargs,
                # another attention kernel rounds differently: part of the cache key
                "flash_attn": flash_attn,
                "grammar": f"llguidance {package_version('llguidance')}",
                "engine": ENGINE_VERSION,
                # how many requests share a batch, and whether forced tokens skip sampling
                "parallel": parallel,
                "fast_forward": fast_forward,
            },
        )
        self._engine = Engine(
            self._model.model,
            self._tokenizer,
            parallel=parallel,
            n_ctx=n_ctx,
            n_threads=self.n_threads,
            fast_forward=fast_forward,
            flash_attn=flash_attn,
            prefix_store=None if prefix_dir is None else PrefixStore(prefix_dir, self._stored()),
        )

    def _stored(self) -> dict[str, Any]:
        """What decides the cells of an evaluated prefix, besides its tokens: the model file,
        the llama.cpp build and every setting that changes numerics (not ``parallel`` or
        ``fast_forward``, which change only how outputs are decoded)."""
        settings = {
            k: v
            for k, v in self._identity.settings.items()
            if k not in ("parallel", "fast_forward")
        }
        return {
            "sha256": self.sha256,
            "backend": self._identity.backend,
            "system_info": self._system_info,
            "settings": settings,
            "n_ctx": self.n_ctx,
            "n_ubatch": N_UBATCH,
        }

    # ------------------------------------------------------------------ Judge interface

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    @property
    def batch_invariant(self) -> bool:
        """Whether an output is the same whatever else is decoded with it: proven only for one
        request at a time (batched kernels may round differently; see the engine's notes)."""
        return self.parallel == 1

    @property
    def engine(self) -> Engine:
        """The decoding engine (its ``stats`` count decode calls, sampled and forced tokens)."""
        return self._engine

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        [outcome] = self.generate_many([JudgeRequest(list(as_messages(prompt)), schema)])
        if isinstance(outcome, ContextOverflowError):
            raise outcome
        return outcome  # type: ignore[return-value]

    def generate_many(
        self, requests: Sequence[JudgeRequest], *, on_outcome: OnOutcome | None = None
    ) -> list[Outcome]:
        """Decode ``requests`` together, ``parallel`` at a time; outcomes in request order.

        A request too long for the window is refused before anything is decoded (its
        :class:`ContextOverflowError` takes its place); a constraint failure raises.
        """
        outcomes: list[Outcome | None] = [None] * len(requests)
        batch: list[EngineRequest] = []
        positions: list[int] = []
        #: each request's own time outside the engine (rendering, tokenizing): in its seconds
        prepared_in: list[float] = []
        for i, request in enumerate(requests):
            began = time.perf_counter()
            budget = output_budget(request.schema)
            max_tokens = worst_case_tokens(request.schema) if budget is None else 1
            try:
                # a big prompt that cannot fit whatever its tokens is refused before tokenizing
                # it (a 100 MB context took 3 GB and 80 s): no token stands for more bytes than
                # the vocabulary's longest. A smaller one is tokenized for the exact numbers.
                text_bytes = sum(len(m["content"].encode("utf-8")) for m in request.messages)
                if text_bytes > UNTOKENIZED_CHECK_BYTES:
                    check_fits(
                        prompt_tokens=-(-text_bytes // self._max_token_bytes),
                        max_output_tokens=max_tokens,
                        n_ctx=self.n_ctx,
                        at_least=True,
                    )
                prepared = self.render(
                    request.messages,
                    shared_chars=request.shared_chars,
                    read_chars=request.read_chars,
                    branch_chars=request.branch_chars,
                )
                if budget is not None:  # a schema we did not write: its budget, or the rest
                    rest = self.n_ctx - len(prepared.tokens)
                    max_tokens = min(budget, rest) if isinstance(budget, int) else rest
                    max_tokens = max(max_tokens, 1)
                check_fits(
                    prompt_tokens=len(prepared.tokens),
                    max_output_tokens=max_tokens,
                    n_ctx=self.n_ctx,
                )
            except ContextOverflowError as exc:
                outcomes[i] = exc
                if on_outcome is not None:
                    on_outcome(i, exc)
                continue
            grammar, decisions = self._grammar(request.schema)
            batch.append(
                EngineRequest(
                    tokens=prepared.tokens,
                    fixed=prepared.fixed,
                    shared=prepared.shared,
                    grammar=grammar,
                    max_tokens=max_tokens,
                    decisions=decisions,
                    budgeted=budget is not None,
                    read=prepared.read,
                    branches=prepared.branches,
                )
            )
            positions.append(i)
            prepared_in.append(time.perf_counter() - began)

        def done(j: int, output: EngineOutput) -> None:
            i = positions[j]
            outcome: Outcome
            if output.truncated:
                outcome = OutputBudgetError(
                    f"the output reached its budget of {output.completion_tokens} tokens "
                    f"before its JSON ({requests[i].schema.__name__}) was complete; the partial "
                    "output was discarded",
                    needed=len(batch[j].tokens) + output.completion_tokens + 1,
                    available=self.n_ctx,
                    hint="give a larger max_tokens to budgeted(), or a larger -c/--n-ctx",
                )
            else:
                began = time.perf_counter()
                outcome = self._generation(requests[i].schema, output)
                extra = prepared_in[j] + time.perf_counter() - began
                stats = replace(outcome.stats, seconds=outcome.stats.seconds + extra)
                outcome = replace(outcome, stats=stats)
            outcomes[i] = outcome
            if on_outcome is not None:
                on_outcome(i, outcome)

        self._engine.run(batch, on_done=done)
        return [o for o in outcomes if o is not None]

    def _generation(self, schema: type[BaseModel], output: EngineOutput) -> Generation[Any]:
        value = parse_output(schema, output.text)
        stats = GenerationStats(
            prompt_tokens=output.prompt_tokens,
            evaluated_prompt_tokens=output.evaluated_prompt_tokens,
            completion_tokens=output.completion_tokens,
            seconds=output.seconds,
        )
        reading = None if output.reading is None else Reading(*output.reading)
        return Generation(
            value=value,
            raw=output.text,
            stats=stats,
            decisions=tuple(output.decisions),
            reading=reading,
        )

    def _grammar(self, schema: type[BaseModel]) -> tuple[str, dict[str, tuple[str, ...]]]:
        """The schema's llguidance grammar (checked once) and its decision keys."""
        cached = self._grammars.get(schema)
        if cached is None:
            js = json_schema(schema)
            grammar = self._llguidance.grammar_from("json_schema", json.dumps(js))
            error = self._llguidance.LLMatcher.validate_grammar(grammar, self._tokenizer)
            if error:
                raise ConstraintError(f"grammar for {schema.__name__} is invalid: {error}")
            cached = self._grammars[schema] = (grammar, decision_keys(js))
        return cached

    # ------------------------------------------------------------------ prompts

    def render(
        self,
        prompt: Prompt,
        *,
        shared_chars: int = 0,
        read_chars: tuple[int, int] | None = None,
        branch_chars: Sequence[int] = (),
    ) -> Prepared:
        """The exact prompt text and tokens the model sees (chat template or plain layout;
        :func:`~localjudge.judge.llama.prompting.render_prompt`)."""
        return render_prompt(
            self._model,
            self._formatter,
            prompt,
            template_kwargs=self._template_kwargs,
            shared_chars=shared_chars,
            read_chars=read_chars,
            branch_chars=branch_chars,
        )

    def count_tokens(self, text: str) -> int:
        return len(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def detokenize(self, tokens: Sequence[int], *, special: bool = True) -> str:
        """The text of ``tokens`` (control tokens spelled out when ``special``)."""
        return self._model.detokenize(list(tokens), special=special).decode("utf-8", "replace")


def plain_prompt(messages: list[dict[str, str]]) -> str:
    """The completion prompt for models without a chat template."""
    parts = [m["content"].strip() for m in messages]
    return "\n\n".join(parts) + "\n\nJSON answer:\n"


def plain_prompt_head(messages: list[dict[str, str]]) -> str:
    """The part of :func:`plain_prompt` before the last message: the same for every item."""
    return "".join(m["content"].strip() + "\n\n" for m in messages[:-1])


def load_judge(
    model: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_gpu_layers: int | str = "auto",
    n_threads: int | None = None,
    seed: int = 0,
    chat_template: bool | None = None,
    parallel: int = DEFAULT_PARALLEL,
    fast_forward: bool = True,
    flash_attn: str | bool = DEFAULT_FLASH_ATTN,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    cache: bool | str | os.PathLike[str] = True,
    store_prefix: bool | str | os.PathLike[str] | None = None,
) -> LlamaJudge | CachingJudge:
    """Load a judge: ``model`` is a GGUF path, a registered alias, a store name
    (``ollama:qwen2.5:7b``, ``hf:ORG/REPO/FILE.gguf``, ``lmstudio:P/R/FILE.gguf``), or None for
    the default judge.

    ``cache`` (on by default, as in the CLI): the judge answers a call it has made before from the
    SQLite cache (:class:`~localjudge.judge.cache.caching.CachingJudge`; the file in the user cache
    directory or ``$LOCALJUDGE_CACHE_DIR``, or at the path given); ``False`` returns the bare
    :class:`LlamaJudge`. The caching judge passes every other attribute to the one it wraps.

    ``n_threads`` defaults to the physical cores this process may use; ``flash_attn`` is
    ``"on"``, ``"off"`` (default) or ``"auto"``; ``chat_template_kwargs`` are extra variables
    for the chat template's render (``{"enable_thinking": False}``), part of the judge's
    identity and so of its cache keys.

    ``store_prefix`` (default: as ``cache``): the evaluated instructions are kept beside the cache
    (:mod:`localjudge.judge.engine.prefix_file`; a path: beside that cache), so the next process
    reads them instead of evaluating them; ``cache=False`` leaves that store alone too.

    Nothing is downloaded. Raises :class:`ModelError` for a missing, empty, non-GGUF, truncated or
    wrong-sha256 file, and :class:`ConstraintError` when constrained decoding is unavailable.
    """
    where = None if isinstance(cache, bool) else cache
    store = cache if store_prefix is None else store_prefix
    judge = LlamaJudge(
        resolve_model(model),
        n_ctx=n_ctx,
        n_gpu_layers=n_gpu_layers,
        n_threads=n_threads,
        seed=seed,
        chat_template=chat_template,
        parallel=parallel,
        fast_forward=fast_forward,
        flash_attn=flash_attn,
        chat_template_kwargs=chat_template_kwargs,
        prefix_dir=None if store is False else prefix_dir(None if store is True else store),
    )
    if cache is False:
        return judge
    return CachingJudge(judge, open_cache(where))


def prefix_dir(cache: str | os.PathLike[str] | None) -> Path:
    """Where the stored instruction prefixes of the judge-call cache ``cache`` live (``--cache``
    as the CLI reads it): a directory beside its file."""
    return resolve_cache_path(cache).parent / PREFIX_DIR
