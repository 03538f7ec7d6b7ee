"""Small tools the tests share that the pipeline itself never calls (so they live here, not in the package)."""

from __future__ import annotations

from adbench.gpt2.load import Loaded
from adbench.gpt2.resolve import load_resolved, resolve_model
from adbench.matrix.locks import canonical, changed, dependencies, versions


def load_gpt2(source: str, revision: str, path: str | None = None, device: str = "cpu", seed: int = 0,
              random_config: dict | None = None, corpus_text: str | None = None,
              tokenizer_vocab_size: int = 50257) -> Loaded:
    """resolve_model then load_resolved in one process: what gpt2_model and a GPT-2 job do in two."""
    record, tok = resolve_model(source, revision, path, seed, random_config, corpus_text, tokenizer_vocab_size)
    return load_resolved(record, device, tokenizer=tok)


def unexplained(old: str, new: str, overrides: dict[str, str]) -> list[str]:
    """Packages that differ between locks `old` and `new` although neither an override nor anything an overridden
    package requires (in either lock) names them: 'numpy 2.4.6 -> 2.3.5'. [] when the difference is exactly the
    overrides and their transitive dependencies."""
    roots = {canonical(k) for k in overrides}
    allowed = dependencies(old, roots) | dependencies(new, roots)
    return [f"{p} {a or 'absent'} -> {b or 'absent'}" for p, (a, b) in changed(versions(old), versions(new)).items()
            if p not in allowed]
