"""Corpus rule: default source, override, clear errors, deterministic split."""

from __future__ import annotations

import hashlib

import pytest

from adbench.corpus import CorpusError, build_corpus, read_text, split


def split_is_suffix(text: str, train: str, heldout: str, fraction: float) -> bool:
    """The check: train + heldout is the text, held-out is its last `fraction` (±1 char)."""
    return train + heldout == text and abs(len(heldout) - fraction * len(text)) <= 1


def test_default_corpus_split_and_hash():
    out = build_corpus(None, 0.1)
    text = out["corpus"].decode("utf-8")
    train, heldout = out["train"].decode("utf-8"), out["heldout"].decode("utf-8")
    from pydoc_data.topics import topics  # oracle: rebuild the default source here
    assert text == "\n\n".join(topics[k] for k in sorted(topics))
    assert len(text) > 100_000
    assert split_is_suffix(text, train, heldout, 0.1)
    meta = out["_meta"]
    assert meta["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert (meta["characters"], meta["train_characters"], meta["heldout_characters"]) == (
        len(text), len(train), len(heldout))
    assert meta["distinct_characters"] == len(set(text)) and meta["path"] is None
    stats = out["stats"].set_index("part")
    assert stats.loc["heldout", "sha256"] == hashlib.sha256(out["heldout"]).hexdigest()
    assert build_corpus(None, 0.1)["_meta"]["sha256"] == meta["sha256"]  # deterministic


def test_split_check_catches_a_broken_split():
    text = "".join(chr(65 + i % 26) + str(i) for i in range(40))  # no period
    train, heldout = split(text, 0.2)
    assert split_is_suffix(text, train, heldout, 0.2)
    assert not split_is_suffix(text, train, heldout[1:], 0.2)  # a dropped character
    assert not split_is_suffix(text, text[20:], text[:20], 0.2)  # held out from the front


def test_user_file_overrides_default(tmp_path):
    p = tmp_path / "my.txt"
    p.write_text("hello world, hello corpus\n" * 20, encoding="utf-8")
    out = build_corpus(str(p), 0.25)
    assert out["corpus"] == p.read_bytes()
    assert str(p.resolve()) in out["_meta"]["source"] and out["_meta"]["path"] == str(p)


@pytest.mark.parametrize("content", [None, "", "  \n\t\n"])
def test_missing_or_empty_file_is_a_clear_error(tmp_path, content):
    p = tmp_path / "corpus.txt"
    if content is not None:
        p.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match="corpus.path") as err:
        read_text(str(p))
    assert str(p) in str(err.value)
    assert ("not found" if content is None else "empty") in str(err.value)


def test_too_short_to_split():
    with pytest.raises(CorpusError, match="too short"):
        split("a", 0.1)
