"""The llama.cpp judge: a GGUF model in-process, decoding under an llguidance grammar via outlines.

This is the only module that imports ``llama_cpp``, ``outlines`` and ``llguidance``, and it does
so when a judge is loaded, so ``import localjudge`` and ``localjudge --help`` stay light.

How each guarantee is kept:

- valid JSON: outlines' llguidance logits processor masks every token the schema's grammar
  forbids; the text is then validated by the same pydantic schema (no repair).
- never cut off: ``max_tokens`` is the schema's worst case (:func:`worst_case_tokens`), checked
  against the window before generating.
- never silently unconstrained: the processor runs inside a guard; an exception there (which
  llama-cpp-python would only print from its ctypes callback) ends generation at once and the
  call raises :class:`ConstraintError`, as does any matcher error or an output that is not
  accepted by the grammar.
- prefix reuse: we call ``Llama.create_completion`` on token ids ourselves and never reset the
  model between calls, so llama.cpp keeps the KV cache of the shared instruction prefix.
- reproducible: greedy decoding (temperature 0) with a fixed seed.
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
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from localjudge.cache import default_cache_dir
from localjudge.errors import ConstraintError, ModelError
from localjudge.judge import (
    Generation,
    GenerationStats,
    JudgeIdentity,
    M,
    Prompt,
    as_messages,
    check_fits,
)
from localjudge.registry import ResolvedModel, check_gguf, model_sha256, resolve_model
from localjudge.schemas import json_schema, parse_output, worst_case_tokens
from localjudge.versions import package_version

DEFAULT_N_CTX = 8192
#: ``auto`` (default): load without extra buffer types when llama.cpp's AMX kernels are active;
#: ``1``: keep the AMX kernels; ``0``: never use extra buffer types (AMX, weight repacking)
AMX_ENV = "LOCALJUDGE_AMX"
#: the name of llama.cpp's AMX buffer type (``ggml_backend_amx_buffer_type_get_name``)
AMX_BUFFER_TYPE = "AMX"


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


class _Guard:
    """Wraps the grammar's logits processor so that no failure can go unnoticed.

    llama-cpp-python calls logits processors from a ctypes callback, where an exception is only
    printed. The guard records the exception and forces end-of-sequence, so generation stops on
    the next token and :meth:`LlamaJudge.generate` raises instead of returning free text.
    """

    def __init__(self, processor: Any, eos: int) -> None:
        self.processor = processor
        self.eos = eos
        self.error: BaseException | None = None
        self.steps = 0

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        if self.error is not None:
            return self._stop(logits)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # outlines only *warns* on a matcher error
                out = self.processor(input_ids, logits)
            self.steps += 1
            return out
        except BaseException as exc:  # noqa: BLE001 (anything here must end the call)
            self.error = exc
            return self._stop(logits)

    def _stop(self, logits: Any) -> Any:
        logits[:] = -np.inf
        logits[self.eos] = 0.0
        return logits


class LlamaJudge:
    """A judge backed by a GGUF model run in-process by llama-cpp-python."""

    def __init__(
        self,
        model: ResolvedModel,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_gpu_layers: int = 0,
        n_threads: int | None = None,
        seed: int = 0,
        chat_template: bool | None = None,
    ) -> None:
        self.model = model
        self.n_ctx = n_ctx
        self.seed = seed
        check_gguf(model.path)
        sha = model_sha256(model.path)
        if model.expected_sha256 and sha != model.expected_sha256:
            raise ModelError(
                f"model file {model.path} has sha256 {sha}, expected {model.expected_sha256}",
                hint="the file is corrupt or was replaced; reinstall its package",
            )
        self.sha256 = sha
        llama_cpp, llguidance, backend_cls = _import_backends()
        amx = amx_decision(native_info())
        _announce(amx.notice)
        with _quiet_stderr(), _model_params(llama_cpp, extra_buffers=amx.extra_buffers):
            try:
                self._llm = llama_cpp.Llama(
                    model_path=str(model.path),
                    n_ctx=n_ctx,
                    n_gpu_layers=n_gpu_layers,
                    n_threads=n_threads or os.cpu_count() or 1,
                    seed=seed,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(
                    f"llama.cpp could not load {model.path}: {exc}",
                    hint="the file may be truncated or corrupt, or need a newer llama-cpp-python",
                ) from exc
        self._llama_cpp = llama_cpp
        self._eos = int(self._llm.token_eos())
        self._formatter = self._chat_formatter(chat_template)
        self._backend = backend_cls(_lltokenizer(llama_cpp, llguidance, self._llm, sha))
        self._processors: dict[type[BaseModel], Any] = {}
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
                "grammar": f"outlines {package_version('outlines')} / "
                f"llguidance {package_version('llguidance')}",
            },
        )

    # ------------------------------------------------------------------ Judge interface

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        prepared = self.render(prompt)
        max_tokens = worst_case_tokens(schema)
        check_fits(
            prompt_tokens=len(prepared.tokens), max_output_tokens=max_tokens, n_ctx=self.n_ctx
        )
        guard = _Guard(self._processor(schema), self._eos)
        evaluated = len(prepared.tokens) - self._prepare_cache(prepared)
        start = time.perf_counter()
        out = self._llm.create_completion(
            prompt=prepared.tokens,
            max_tokens=max_tokens,
            temperature=0.0,
            top_k=1,
            repeat_penalty=1.0,
            seed=self.seed,
            logits_processor=self._llama_cpp.LogitsProcessorList([guard]),
        )
        seconds = time.perf_counter() - start
        choice = out["choices"][0]
        raw = choice["text"]
        if isinstance(guard.error, (KeyboardInterrupt, SystemExit)):
            raise guard.error  # Ctrl-C inside the callback: an interrupt, not a grammar fault
        if guard.error is not None:
            raise ConstraintError(
                f"constrained decoding failed: {type(guard.error).__name__}: {guard.error}",
                hint="the output was discarded; check that outlines and llguidance are installed "
                "and compatible (pip install -U outlines llguidance)",
            ) from guard.error
        if choice.get("finish_reason") != "stop":
            raise ConstraintError(
                f"generation ended with finish_reason={choice.get('finish_reason')!r} after "
                f"{out['usage']['completion_tokens']} of at most {max_tokens} tokens",
                hint="this is a bug in the schema bound; please report it",
            )
        value = parse_output(schema, raw)
        assert isinstance(value, schema)
        stats = GenerationStats(
            prompt_tokens=len(prepared.tokens),
            evaluated_prompt_tokens=evaluated,
            completion_tokens=int(out["usage"]["completion_tokens"]),
            seconds=seconds,
        )
        return Generation(value=value, raw=raw, stats=stats)

    # ------------------------------------------------------------------ helpers

    def render(self, prompt: Prompt) -> _Prepared:
        """The exact prompt text and tokens the model sees (chat template or plain layout).

        Only the template's own text may produce control tokens: message contents are tokenized
        as plain text, so data that spells ``<|im_end|>`` stays data. The template is rendered
        with a sentinel per message and the contents are tokenized into the gaps.
        """
        messages = as_messages(prompt)
        if self._formatter is None:
            text = plain_prompt(messages)
            head = plain_prompt_head(messages)
            segments = [(head, False), (text[len(head) :], False)]
        else:
            sentinels = [f"\x00LJ{i}\x00" for i in range(len(messages))]
            stand_ins = [
                {"role": m["role"], "content": s} for m, s in zip(messages, sentinels, strict=True)
            ]
            skeleton = self._render_template(stand_ins)
            segments = []
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
        llm = self._llm
        tokens: list[int] = []
        if llm._model.add_bos_token() and llm.token_bos() >= 0:
            tokens.append(llm.token_bos())
            bos_text = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
            first, special = segments[0]
            if special and bos_text and first.startswith(bos_text):  # the template wrote it too
                segments[0] = (first[len(bos_text) :], special)
        # the last message's content is the item's data: everything before it is fixed
        item_start = len(segments) - 2 if self._formatter is not None else 1
        fixed = len(tokens)
        for n, (text, special) in enumerate(segments):
            if n == item_start:
                fixed = len(tokens)
            if text:
                tokens += llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        # at least one token is always evaluated: its logits start the output
        fixed = max(0, min(fixed, len(tokens) - 1))
        return _Prepared(tokens=tokens, text="".join(text for text, _ in segments), fixed=fixed)

    def _render_template(self, messages: list[dict[str, str]]) -> str:
        try:
            return str(self._formatter(messages=messages).prompt)
        except Exception as exc:  # jinja2's SecurityError and template errors
            raise ModelError(
                f"the model's chat template failed to render: {type(exc).__name__}: {exc}",
                hint="use --no-chat-template to prompt without it",
            ) from exc

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _processor(self, schema: type[BaseModel]) -> Any:
        proc = self._processors.get(schema)
        if proc is None:
            proc = self._backend.get_json_schema_logits_processor(json.dumps(json_schema(schema)))
            # compile and check the grammar now, so a broken schema fails before generating
            import llguidance  # noqa: PLC0415

            error = llguidance.LLMatcher.validate_grammar(proc.grammar, self._backend.llg_tokenizer)
            if error:
                raise ConstraintError(f"grammar for {schema.__name__} is invalid: {error}")
            self._processors[schema] = proc
        proc.reset()
        return proc

    def _prepare_cache(self, prepared: _Prepared) -> int:
        """Leave llama.cpp's KV cache holding exactly the prompt's fixed prefix; return how many
        prompt tokens were already there (the call evaluates the rest).

        Floating-point results depend on how a prompt is cut into evaluation batches, so a
        verdict would otherwise depend on what the previous call left in the cache. Here the
        fixed prefix is always evaluated alone and the item's part always from the prefix's end,
        so every call's output is a function of its own prompt only.
        """
        llm, fixed = self._llm, prepared.fixed
        cached = llm.input_ids[: llm.n_tokens]
        if fixed and llm.n_tokens >= fixed and list(cached[:fixed]) == prepared.tokens[:fixed]:
            llm.n_tokens = fixed  # llama-cpp-python drops the KV cache beyond this
            return fixed
        llm.reset()
        if fixed:
            llm.eval(prepared.tokens[:fixed])
        return 0

    def _chat_formatter(self, chat_template: bool | None) -> Any:
        template = self._llm.metadata.get("tokenizer.chat_template")
        use = chat_template if chat_template is not None else bool(template)
        if self.model.alias is not None and chat_template is None:
            from localjudge.registry import registry  # noqa: PLC0415

            entry = next((j for j in registry() if j.alias == self.model.alias), None)
            use = bool(template) and (entry is None or entry.instruct)
        if not use:
            return None
        if not template:
            raise ModelError(f"{self.model.path.name} has no chat template in its metadata")
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

        tok = self._llm
        eos = tok.detokenize([tok.token_eos()], special=True).decode("utf-8", "replace")
        bos_id = tok.token_bos()
        bos = (
            tok.detokenize([bos_id], special=True).decode("utf-8", "replace") if bos_id >= 0 else ""
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


def load_judge(
    model: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_gpu_layers: int = 0,
    n_threads: int | None = None,
    seed: int = 0,
    chat_template: bool | None = None,
) -> LlamaJudge:
    """Load a judge: ``model`` is a GGUF path, a registered alias, or None for the embedded default.

    Nothing is downloaded. Raises :class:`ModelError` for a missing, empty, non-GGUF, truncated or
    wrong-sha256 file, and :class:`ConstraintError` when constrained decoding is unavailable.
    """
    return LlamaJudge(
        resolve_model(model),
        n_ctx=n_ctx,
        n_gpu_layers=n_gpu_layers,
        n_threads=n_threads,
        seed=seed,
        chat_template=chat_template,
    )


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


@contextmanager
def _model_params(llama_cpp: Any, *, extra_buffers: bool) -> Any:
    """Make ``llama_cpp.Llama`` load with ``use_extra_bufts`` as given.

    ``Llama`` builds its model parameters from ``llama_model_default_params()`` and offers no
    argument for this field, so the defaults are adjusted while one model loads."""
    if extra_buffers:
        yield
        return
    module = llama_cpp.llama_cpp
    original = module.llama_model_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    with _PARAMS_LOCK:
        module.llama_model_default_params = defaults
        try:
            yield
        finally:
            module.llama_model_default_params = original


_PARAMS_LOCK = threading.Lock()


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


def _import_backends() -> tuple[Any, Any, Any]:
    llama_cpp = _import_llama_cpp()
    try:
        import llguidance  # noqa: PLC0415
        from outlines.backends.llguidance import LLGuidanceBackend  # noqa: PLC0415
    except ImportError as exc:
        raise ConstraintError(
            f"constrained decoding is unavailable: {exc}",
            hint="pip install 'outlines>=1.2' llguidance; localjudge never decodes unconstrained",
        ) from exc
    return llama_cpp, llguidance, _backend_class(LLGuidanceBackend)


@lru_cache(maxsize=1)
def _backend_class(base: Any) -> Any:
    class _Backend(base):  # type: ignore[misc]
        """outlines' llguidance backend over a tokenizer we build (and cache) ourselves, instead of
        outlines' LlamaCpp model wrapper, which walks the whole vocabulary in Python first."""

        def __init__(self, llg_tokenizer: Any) -> None:
            import llguidance  # noqa: PLC0415

            self.llg = llguidance
            self.tensor_library_name = "numpy"
            self.llg_tokenizer = llg_tokenizer

    return _Backend


def _lltokenizer(llama_cpp: Any, llguidance: Any, llm: Any, sha256: str) -> Any:
    """llguidance's tokenizer for the model; the token table is cached on disk per model sha256
    (reading 262k tokens through ctypes takes ~1.5 s, the cached table ~0.1 s)."""
    import ctypes  # noqa: PLC0415

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    cache_file = (
        default_cache_dir() / "tokens" / f"{sha256}-{package_version('llama-cpp-python')}.bin"
    )
    tokens = _read_token_table(cache_file, sha256)
    if tokens is None:
        tokens = _token_table(llama_cpp, vocab)
        _write_token_table(cache_file, sha256, tokens)
    fptr = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    return llguidance.LLTokenizer.from_llamacpp(
        tokens=tokens,
        vocab_ptr=vocab,
        tokenize_fptr=fptr,
        eos_token=llama_cpp.llama_vocab_eos(vocab),
        slices=None,
    )


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


@contextmanager
def _quiet_stderr() -> Any:
    """Silence llama.cpp's C-level log lines while loading (they go straight to fd 2)."""
    if os.environ.get("LOCALJUDGE_DEBUG"):
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
