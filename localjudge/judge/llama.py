"""The llama.cpp judge: a GGUF model in-process, decoding under llguidance grammars.

This is the only module (with :mod:`localjudge.judge.engine`, which it drives) that imports
``llama_cpp`` and ``llguidance``, and it does so when a judge is loaded, so ``import localjudge``
and ``localjudge --help`` stay light.

How each guarantee is kept:

- valid JSON: every token is chosen under the schema's llguidance grammar
  (:mod:`localjudge.judge.engine`); the text is then validated by the same pydantic schema (no
  repair).
- never cut off: the output bound is the schema's worst case (:func:`worst_case_tokens`),
  checked against the window before generating.
- never silently unconstrained: a matcher error, a rejected token, an early end or an output
  past its bound raises :class:`ConstraintError`; no output is returned without the grammar.
- prefix reuse: the instructions (the same for every metric) are evaluated once per machine
  and stored beside the cache; an item's question and contexts once per item (see the engine).
- reproducible: greedy decoding with a fixed seed; an output depends only on its own prompt and
  the settings (see the engine's notes on batches).
- no native crash from AMX: on CPUs where llama.cpp's AMX kernels are active (they segfault,
  upstream llama.cpp #20824), the model is loaded without llama.cpp's extra buffer types, so
  those kernels never run (:func:`amx_decision`); ``LOCALJUDGE_AMX=1`` keeps them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from localjudge.errors import ConstraintError, ContextOverflowError, ModelError, OutputBudgetError
from localjudge.judge.cache import default_cache_dir, open_cache, resolve_cache_path
from localjudge.judge.caching import CachingJudge
from localjudge.judge.engine import (
    DEFAULT_PARALLEL,
    N_UBATCH,
    Engine,
    EngineOutput,
    EngineRequest,
    decision_keys,
    install_log,
    raise_pending_interrupt,
)
from localjudge.judge.options import (
    DEFAULT_FLASH_ATTN,
    default_threads,
    flash_attn_mode,
)
from localjudge.judge.options import (
    chat_template_kwargs as check_template_kwargs,
)
from localjudge.judge.prefix_store import PREFIX_DIR, PrefixStore
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    JudgeIdentity,
    JudgeRequest,
    M,
    OnOutcome,
    Outcome,
    Prompt,
    as_messages,
    check_fits,
)
from localjudge.judge.registry import ResolvedModel, check_gguf, model_sha256, resolve_model
from localjudge.judge.schemas import json_schema, output_budget, parse_output, worst_case_tokens
from localjudge.versions import package_version

DEFAULT_N_CTX = 8192
#: the decoding engine's identity, part of every cache key
ENGINE_VERSION = "localjudge-engine/1"
#: ``auto`` (default): load without extra buffer types when llama.cpp's AMX kernels are active;
#: ``1``: keep the AMX kernels; ``0``: never use extra buffer types (AMX, weight repacking)
AMX_ENV = "LOCALJUDGE_AMX"
#: the name of llama.cpp's AMX buffer type (``ggml_backend_amx_buffer_type_get_name``)
AMX_BUFFER_TYPE = "AMX"

#: a prompt of more bytes than this is first checked against the window from its byte count
UNTOKENIZED_CHECK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Device:
    """One device llama.cpp can compute on."""

    name: str
    description: str
    kind: str


@dataclass(frozen=True)
class NativeInfo:
    """What the loaded llama.cpp build reports about itself and this machine."""

    llama_cpp_python: str
    system_info: str
    #: CPU features the build uses (``AVX2``, ``AMX_INT8``, ...), from its system info
    features: dict[str, str]
    #: the CPU backend's extra buffer types (``AMX``, ``CPU_REPACK``); None when not listable
    extra_buffer_types: list[str] | None
    gpu_offload: bool
    devices: list[Device]

    @property
    def amx_build(self) -> bool:
        """The build carries llama.cpp's AMX kernels."""
        return self.features.get("AMX_INT8") == "1"

    @property
    def amx_active(self) -> bool:
        """llama.cpp would put weights in AMX buffers here (the path that crashes)."""
        if self.extra_buffer_types is not None:
            return AMX_BUFFER_TYPE in self.extra_buffer_types
        return self.amx_build


@dataclass(frozen=True)
class AmxDecision:
    """How a judge loads its weights given the AMX state and ``LOCALJUDGE_AMX``."""

    #: ``absent`` (no AMX kernels in use), ``guarded`` (active, turned off), ``kept``
    #: (active, kept by LOCALJUDGE_AMX=1) or ``off`` (LOCALJUDGE_AMX=0)
    state: str
    #: whether llama.cpp may load weights into extra buffer types (AMX, repacking)
    extra_buffers: bool
    #: what to tell the user once, or None
    notice: str | None


@dataclass(frozen=True)
class _Prepared:
    tokens: list[int]
    text: str
    #: how many leading tokens are the same for every item (the instructions and the template
    #: text before the last message's content): the prefix llama.cpp may keep between calls
    fixed: int
    #: where the last message's shared part (``JudgeRequest.shared_chars``) ends, in tokens;
    #: None when the request marks none
    shared: int | None = None


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
                hint="the file is corrupt or was replaced: reinstall its package, or register "
                "the new file with `localjudge models add PATH --alias NAME --force`",
            )
        self.sha256 = sha
        llama_cpp, llguidance = _import_backends()
        self._llama_cpp, self._llguidance = llama_cpp, llguidance
        info = native_info()
        self._system_info = info.system_info  # part of the stored prefix's key
        amx = amx_decision(info)
        _announce(amx.notice)
        n_gpu_layers = gpu_layers(n_gpu_layers, bool(llama_cpp.llama_supports_gpu_offload()))
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = 0x7FFFFFFF if n_gpu_layers == -1 else n_gpu_layers
        params.use_extra_bufts = amx.extra_buffers
        from llama_cpp._internals import LlamaModel  # noqa: PLC0415

        with _quiet_stderr():
            try:
                self._model = LlamaModel(
                    path_model=str(model.path), params=params, verbose=_debug()
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
        self._formatter = self._chat_formatter(chat_template)
        # the variables reach only a template: without one they change nothing
        self._template_kwargs = template_kwargs if self._formatter is not None else {}
        self._tokenizer, self._max_token_bytes = _lltokenizer(
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
        for i, request in enumerate(requests):
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
                prepared = self.render(request.messages, shared_chars=request.shared_chars)
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
                )
            )
            positions.append(i)

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
                outcome = self._generation(requests[i].schema, output)
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
        return Generation(
            value=value, raw=output.text, stats=stats, decisions=tuple(output.decisions)
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

    def render(self, prompt: Prompt, *, shared_chars: int = 0) -> _Prepared:
        """The exact prompt text and tokens the model sees (chat template or plain layout).

        Only the template's own text may produce control tokens: message contents are tokenized
        as plain text, so data that spells ``<|im_end|>`` stays data. The template is rendered
        with a sentinel per message and the contents are tokenized into the gaps. The last
        message's first ``shared_chars`` characters are tokenized on their own, so that the
        tokens of that part are the same whatever follows it.
        """
        messages = as_messages(prompt)
        if self._formatter is None:
            text = plain_prompt(messages)
            head = plain_prompt_head(messages)
            segments = [(head, False), (text[len(head) :], False)]
            last = messages[-1]["content"]
            cut = shared_chars - (len(last) - len(last.lstrip()))  # plain_prompt strips it
        else:
            sentinels = [f"\x00LJ{i}\x00" for i in range(len(messages))]
            stand_ins = [
                {"role": m["role"], "content": s} for m, s in zip(messages, sentinels, strict=True)
            ]
            skeleton = self._render_template(stand_ins)
            segments = []
            cut = shared_chars
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
        # the last message's content is the item's data: everything before it is fixed
        item_start = len(segments) - 2 if self._formatter is not None else 1
        split = shared_chars > 0
        if split:  # the item's shared part becomes a segment of its own
            content = segments[item_start][0]
            cut = min(max(cut, 0), len(content))
            segments[item_start : item_start + 1] = [(content[:cut], False), (content[cut:], False)]
        model = self._model
        tokens: list[int] = []
        bos = model.token_bos()
        if model.add_bos_token() and bos >= 0:
            tokens.append(bos)
            bos_text = model.detokenize([bos], special=True).decode("utf-8", "replace")
            first, special = segments[0]
            if special and bos_text and first.startswith(bos_text):  # the template wrote it too
                segments[0] = (first[len(bos_text) :], special)
        fixed = len(tokens)
        shared = None
        for n, (text, special) in enumerate(segments):
            if n == item_start:
                fixed = len(tokens)
            if split and n == item_start + 1:
                shared = len(tokens)
            if text:
                tokens += model.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        # at least one token is always evaluated: its logits start the output
        fixed = max(0, min(fixed, len(tokens) - 1))
        if shared is not None:
            shared = max(fixed, min(shared, len(tokens) - 1))
        return _Prepared(
            tokens=tokens, text="".join(text for text, _ in segments), fixed=fixed, shared=shared
        )

    def _render_template(self, messages: list[dict[str, str]]) -> str:
        try:
            return str(self._formatter(messages=messages, **self._template_kwargs).prompt)
        except Exception as exc:  # jinja2's SecurityError and template errors
            raise ModelError(
                f"the model's chat template failed to render: {type(exc).__name__}: {exc}",
                hint="use --no-chat-template to prompt without it",
            ) from exc

    def count_tokens(self, text: str) -> int:
        return len(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def detokenize(self, tokens: Sequence[int], *, special: bool = True) -> str:
        """The text of ``tokens`` (control tokens spelled out when ``special``)."""
        return self._model.detokenize(list(tokens), special=special).decode("utf-8", "replace")

    def _chat_formatter(self, chat_template: bool | None) -> Any:
        template = self._metadata.get("tokenizer.chat_template")
        use = chat_template if chat_template is not None else bool(template)
        if self.model.alias is not None and chat_template is None:
            from localjudge.judge.registry import registry  # noqa: PLC0415

            entry = next((j for j in registry() if j.alias == self.model.alias), None)
            use = bool(template) and (entry is None or entry.instruct)
        if not use:
            return None
        if not template:
            raise ModelError(f"{self.model.path.name} has no chat template in its metadata")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

        model = self._model
        eos = model.detokenize([model.token_eos()], special=True).decode("utf-8", "replace")
        bos_id = model.token_bos()
        bos = (
            model.detokenize([bos_id], special=True).decode("utf-8", "replace")
            if bos_id >= 0
            else ""
        )
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


def gpu_layers(requested: int | str, offload_supported: bool) -> int:
    """The layers to offload: ``auto`` is all of them (-1) on a build that can offload and 0
    on a CPU-only one; ``all`` is -1. Asking a CPU-only build for offload is an error, never a
    silent CPU run."""
    value = str(requested).strip().lower()
    if value == "auto":
        return -1 if offload_supported else 0
    if value == "all":
        layers = -1
    else:
        try:
            layers = int(value)
        except ValueError:
            raise ModelError(
                f"n_gpu_layers must be auto, all, -1 or a number of layers, got {requested!r}"
            ) from None
        if layers < -1:
            raise ModelError(f"n_gpu_layers must be -1 (all) or more, got {layers}")
    if layers != 0 and not offload_supported:
        raise ModelError(
            f"GPU offload asked for (n_gpu_layers {requested}) but this llama-cpp-python build "
            "cannot offload: it was built for the CPU only",
            hint="reinstall llama-cpp-python with GPU support (e.g. CMAKE_ARGS=-DGGML_CUDA=on), "
            "or use -ngl 0 / auto",
        )
    return layers


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
    """Load a judge: ``model`` is a GGUF path, a registered alias, or None for the default judge.

    ``cache`` (on by default, as in the CLI): the judge answers a call it has made before from
    the SQLite cache (:class:`~localjudge.judge.caching.CachingJudge`; the file in the user cache
    directory or ``$LOCALJUDGE_CACHE_DIR``, or at the path given); ``False`` returns the bare
    :class:`LlamaJudge`. The caching judge passes every other attribute to the one it wraps.

    ``n_threads`` defaults to the physical cores this process may use; ``flash_attn`` is
    ``"on"``, ``"off"`` (default) or ``"auto"``; ``chat_template_kwargs`` are extra variables
    for the chat template's render (``{"enable_thinking": False}``), part of the judge's
    identity and so of its cache keys.

    ``store_prefix`` (default: as ``cache``): the evaluated instructions are kept beside the
    cache (:mod:`localjudge.judge.prefix_store`; a path: beside that cache), so the next process
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


# ---------------------------------------------------------------------- the native build


def native_info() -> NativeInfo:
    """What the installed llama.cpp reports: CPU features, extra buffer types, GPU offload and
    devices. Loads llama.cpp (not a model); raises :class:`ModelError` when it cannot."""
    llama_cpp = _import_llama_cpp()
    system_info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    features = dict(re.findall(r"([A-Z][A-Z0-9_]*) = (\w+)", system_info))
    buffer_types, devices = _ggml_registry(llama_cpp)
    return NativeInfo(
        llama_cpp_python=package_version("llama-cpp-python"),
        system_info=system_info,
        features=features,
        extra_buffer_types=buffer_types,
        gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
        devices=devices,
    )


def amx_decision(info: NativeInfo, setting: str | None = None) -> AmxDecision:
    """Whether a judge may use llama.cpp's extra buffer types, from the AMX state of the build and
    this CPU and ``setting`` (default: ``$LOCALJUDGE_AMX``; ``auto``, ``1`` or ``0``).

    llama.cpp's AMX matmul kernels fault on ``ldtilecfg`` in worker threads (llama.cpp #20824);
    the AMX buffer type is an "extra buffer type", so loading without those keeps the kernels from
    ever running. It also turns off weight repacking, which costs some speed on such CPUs only.
    """
    value = (os.environ.get(AMX_ENV, "") if setting is None else setting).strip().lower()
    if value not in ("", "auto", "0", "1"):
        raise ModelError(
            f"{AMX_ENV}={value!r} is not understood",
            hint=f"use {AMX_ENV}=1 to keep llama.cpp's AMX kernels, 0 to turn off extra buffer "
            "types, or leave it unset",
        )
    if value == "0":
        return AmxDecision("off", extra_buffers=False, notice=None)
    if not info.amx_active:
        return AmxDecision("absent", extra_buffers=True, notice=None)
    if value == "1":
        return AmxDecision("kept", extra_buffers=True, notice=None)
    return AmxDecision(
        "guarded",
        extra_buffers=False,
        notice="localjudge: this CPU runs llama.cpp's AMX kernels, which crash (llama.cpp "
        f"#20824); the judge loads without them. Set {AMX_ENV}=1 to keep them.",
    )


_announced: set[str] = set()


def _announce(notice: str | None) -> None:
    """Print a notice on stderr once per process."""
    if notice and notice not in _announced:
        _announced.add(notice)
        print(notice, file=sys.stderr, flush=True)


def _ggml_registry(llama_cpp: Any) -> tuple[list[str] | None, list[Device]]:
    """The CPU backend's extra buffer types and every device, through ggml's backend registry
    (plain C calls; llama-cpp-python binds none of them). ``(None, [])`` when unavailable."""
    import ctypes  # noqa: PLC0415

    try:
        from llama_cpp._ggml import libggml as lib  # noqa: PLC0415

        p = ctypes.c_void_p
        for name, restype, argtypes in (
            ("ggml_backend_reg_by_name", p, [ctypes.c_char_p]),
            ("ggml_backend_reg_dev_get", p, [p, ctypes.c_size_t]),
            ("ggml_backend_reg_get_proc_address", p, [p, ctypes.c_char_p]),
            ("ggml_backend_buft_name", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_count", ctypes.c_size_t, []),
            ("ggml_backend_dev_get", p, [ctypes.c_size_t]),
            ("ggml_backend_dev_name", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_description", ctypes.c_char_p, [p]),
            ("ggml_backend_dev_type", ctypes.c_int, [p]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except (ImportError, AttributeError, OSError):
        return None, []
    kinds = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
    devices = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        devices.append(
            Device(
                name=(lib.ggml_backend_dev_name(dev) or b"").decode("utf-8", "replace"),
                description=(lib.ggml_backend_dev_description(dev) or b"").decode(
                    "utf-8", "replace"
                ),
                kind=kinds.get(lib.ggml_backend_dev_type(dev), "other"),
            )
        )
    reg = lib.ggml_backend_reg_by_name(b"CPU")
    address = lib.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_dev_get_extra_bufts")
    if not reg or not address:
        return None, devices
    get_extra = ctypes.CFUNCTYPE(ctypes.POINTER(p), p)(address)
    array = get_extra(lib.ggml_backend_reg_dev_get(reg, 0))
    names: list[str] = []
    i = 0
    while array and array[i]:
        names.append((lib.ggml_backend_buft_name(array[i]) or b"").decode("utf-8", "replace"))
        i += 1
    return names, devices


# ---------------------------------------------------------------------- backend plumbing


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp  # noqa: PLC0415
    except ImportError as exc:
        raise ModelError(
            f"llama-cpp-python is not importable: {exc}", hint="pip install llama-cpp-python"
        ) from exc
    return llama_cpp


def _import_backends() -> tuple[Any, Any]:
    llama_cpp = _import_llama_cpp()
    install_log(llama_cpp, verbose=_debug())  # llama.cpp's log: errors only, unless debugging
    try:
        import llguidance  # noqa: PLC0415
        import llguidance.numpy  # noqa: PLC0415 (the engine's masks)
    except ImportError as exc:
        raise ConstraintError(
            f"constrained decoding is unavailable: {exc}",
            hint="pip install llguidance; localjudge never decodes unconstrained",
        ) from exc
    return llama_cpp, llguidance


def _lltokenizer(llama_cpp: Any, llguidance: Any, model: Any, sha256: str) -> tuple[Any, int]:
    """llguidance's tokenizer for the model, and the most bytes one token stands for; the
    token table is cached on disk per model sha256 (reading 262k tokens through ctypes takes
    ~1.5 s, the cached table ~0.1 s)."""
    import ctypes  # noqa: PLC0415

    vocab = llama_cpp.llama_model_get_vocab(model)
    cache_file = (
        default_cache_dir() / "tokens" / f"{sha256}-{package_version('llama-cpp-python')}.bin"
    )
    tokens = _read_token_table(cache_file, sha256)
    if tokens is None:
        tokens = _token_table(llama_cpp, vocab)
        _write_token_table(cache_file, sha256, tokens)
    fptr = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    tokenizer = llguidance.LLTokenizer.from_llamacpp(
        tokens=tokens,
        vocab_ptr=vocab,
        tokenize_fptr=fptr,
        eos_token=llama_cpp.llama_vocab_eos(vocab),
        slices=None,
    )
    return tokenizer, max(1, *(len(t) for t in tokens))


def _token_table(llama_cpp: Any, vocab: Any) -> list[bytes]:
    """Each token's bytes, control tokens marked with a 0xFF prefix (llguidance's convention)."""
    import ctypes  # noqa: PLC0415

    size = 16 * 1024
    buffer = ctypes.create_string_buffer(size + 1)
    tokens: list[bytes] = []
    for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, size, 0, True)
        if n < 0:
            raise ModelError(f"token {token} does not fit a {size}-byte buffer")
        tok: bytes = buffer.raw[:n]
        attr = llama_cpp.llama_vocab_get_attr(vocab, token)
        user_control = (
            attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
            and tok.startswith(b"<")
            and tok.endswith(b">")
        )
        if attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL or user_control:
            tok = b"\xff" + tok
        tokens.append(tok)
    return tokens


def _read_token_table(path: Path, sha256: str) -> list[bytes] | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    digest, payload = blob[:32], blob[32:]
    if hashlib.sha256(payload + sha256.encode()).digest() != digest:
        return None  # torn write or foreign file: rebuild
    tokens, pos = [], 0
    while pos < len(payload):
        n = int.from_bytes(payload[pos : pos + 4], "little")
        tokens.append(payload[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return tokens


def _write_token_table(path: Path, sha256: str, tokens: list[bytes]) -> None:
    """Length-prefixed token bytes behind a sha256 (plain data: nothing to unpickle)."""
    payload = b"".join(len(t).to_bytes(4, "little") + t for t in tokens)
    digest = hashlib.sha256(payload + sha256.encode()).digest()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(digest + payload)
        tmp.replace(path)
    except OSError:
        pass  # an optimisation only


def _debug() -> bool:
    """``LOCALJUDGE_DEBUG`` is set: tracebacks and llama.cpp's own log."""
    return bool(os.environ.get("LOCALJUDGE_DEBUG"))


@contextmanager
def _quiet_stderr() -> Any:
    """Silence llama.cpp's C-level log lines while loading (they go straight to fd 2)."""
    if _debug():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
