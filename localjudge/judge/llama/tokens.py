"""llguidance's tokenizer over a GGUF model's vocabulary: the token table (each token's bytes),
built once per model and kept on disk by the model's sha256, so the next process reads it
instead of asking llama.cpp for every token.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from localjudge.errors import ModelError
from localjudge.judge.cache.database import default_cache_dir
from localjudge.versions import package_version

__all__ = ["lltokenizer"]


def lltokenizer(llama_cpp: Any, llguidance: Any, model: Any, sha256: str) -> tuple[Any, int]:
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
