"""GPT-2 found where Hugging Face keeps it: a tiny GPT-2 saved here, laid out exactly as the hub cache lays it out
(models--<owner>--<name>/{refs, snapshots/<commit>/<file> -> ../../blobs/<sha256>, blobs}), under both repo ids;
the pinned revision preferred, another one refused unless allowed and then named in every output."""

import hashlib
from html import unescape
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

torch.set_num_threads(1)

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

import yaml  # noqa: E402
from adbench.families import Family  # noqa: E402
from adbench.gpt2.load import load_resolved, train_fallback_tokenizer  # noqa: E402
from adbench.gpt2.locate import REPOS, OtherRevision, fetch_command, repo_dir, weights_location  # noqa: E402
from adbench.gpt2.resolve import record_model, resolve_model  # noqa: E402
from adbench.render import TEMPLATES  # noqa: E402
from adbench.render.page import render  # noqa: E402
from adbench.verdicts.verdict import verdict  # noqa: E402
from conftest import ROOT  # noqa: E402
from test_config import problems  # noqa: E402

PINNED = yaml.safe_load((ROOT / "config.yaml").read_text())["gpt2"]["revision"]
OTHER = "11c5a3d5811f50298f278a704980280950aedb10"
TEXT = "The capital of France is Paris. The capital of Italy is Rome. " * 40
PROMPT = "The capital of France is Paris"


def _save_tiny(d: Path, seed: int) -> torch.Tensor:
    """A one-layer GPT-2 (n_embd 8) and a tiny BPE saved with save_pretrained into `d`; its logits on PROMPT."""
    tok = train_fallback_tokenizer(TEXT, 300)
    torch.manual_seed(seed)
    cfg = GPT2Config(n_layer=1, n_embd=8, n_head=2, n_positions=32, vocab_size=300, bos_token_id=0, eos_token_id=0,
                     attn_implementation="eager")
    model = GPT2LMHeadModel(cfg).eval()
    model.save_pretrained(d)
    tok.save_pretrained(d)
    with torch.no_grad():
        return model(torch.tensor([tok.encode(PROMPT)]), use_cache=False).logits


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two saved tiny models with different weights: {seed: (directory, logits)}."""
    out = {}
    for seed in (1, 2):
        d = tmp_path_factory.mktemp(f"tiny{seed}")
        out[seed] = (d, _save_tiny(d, seed))
    return out


def put_in_cache(hub: Path, repo_id: str, revision: str, files: Path, ref: str | None = "main") -> Path:
    """Lay `files` out as huggingface_hub does: content-addressed blobs, relative symlinks in the snapshot, a ref."""
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True)
    for f in sorted(files.iterdir()):
        data = f.read_bytes()
        blob = hashlib.sha256(data).hexdigest()  # LFS files are named by their sha256
        (repo / "blobs" / blob).write_bytes(data)
        (snap / f.name).symlink_to(Path("..", "..", "blobs", blob))
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(revision)  # no newline, as huggingface_hub writes it
    return snap


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty HF hub cache that HF_HUB_CACHE points at."""
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def _logits(loaded) -> torch.Tensor:
    ids = torch.tensor([loaded.tokenizer.encode(PROMPT)])
    with torch.no_grad():
        return loaded.model(ids, use_cache=False).logits


def test_the_fake_cache_is_the_layout_huggingface_hub_reads(hub, tiny):
    """The oracle for the layout is huggingface_hub's own scanner: it sees both repos, their commits and refs."""
    from huggingface_hub import scan_cache_dir

    put_in_cache(hub, "openai-community/gpt2", PINNED, tiny[1][0])
    put_in_cache(hub, "gpt2", OTHER, tiny[2][0], ref="main")
    info = scan_cache_dir(hub)
    assert not info.warnings
    seen = {(r.repo_id, rev.commit_hash, tuple(sorted(rev.refs))) for r in info.repos for rev in r.revisions}
    assert seen == {("openai-community/gpt2", PINNED, ("main",)), ("gpt2", OTHER, ("main",))}
    assert all(p.is_symlink() for p in (hub / "models--gpt2" / "snapshots" / OTHER).iterdir())
    assert [repo_dir(hub, r).name for r in REPOS] == ["models--openai-community--gpt2", "models--gpt2"]


@pytest.mark.parametrize("repo_id", ["openai-community/gpt2", "gpt2"])  # the canonical id and its alias
@pytest.mark.parametrize("env", ["HF_HUB_CACHE", "HF_HOME"])
def test_pinned_snapshot_found_under_either_repo_id_and_either_variable(repo_id, env, tiny, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv(env, str(tmp_path / ("hub" if env == "HF_HUB_CACHE" else "home")))
    hub = tmp_path / "hub" if env == "HF_HUB_CACHE" else tmp_path / "home" / "hub"
    snap = put_in_cache(hub, repo_id, PINNED, tiny[1][0])
    assert weights_location("auto", PINNED, None) == str(snap)  # what gpt2_model's input is at parse time
    record, tok = resolve_model("auto", PINNED, corpus_text=TEXT)
    assert (record["route"], record["repo_id"], record["revision"]) == ("cache", repo_id, PINNED)
    assert record["model_source"] == "pretrained" and record["location"] == str(snap)
    loaded = load_resolved(record, tokenizer=tok)
    assert torch.equal(_logits(loaded), tiny[1][1])  # the very weights saved into the cache
    assert loaded.info["model_repo_id"] == repo_id and loaded.info["model_revision"] == PINNED


def test_without_a_gpt2_folder_auto_falls_back_and_cache_says_where_it_looked(hub):
    assert weights_location("auto", PINNED, None) is None
    cfg = {"n_layer": 1, "n_embd": 8, "n_head": 2, "n_positions": 32, "vocab_size": 300}
    record, _ = resolve_model("auto", PINNED, random_config=cfg, corpus_text=TEXT, tokenizer_vocab_size=300)
    assert record["route"] == "random" and record["revision"] is None
    with pytest.raises(FileNotFoundError) as err:
        resolve_model("cache", PINNED)
    for r in REPOS:
        assert str(repo_dir(hub, r) / "snapshots" / PINNED) in str(err.value)
    assert fetch_command(PINNED) in str(err.value)


@pytest.mark.parametrize("allow", [False, True])
def test_pinned_revision_preferred_when_another_is_also_cached(hub, tiny, allow):
    # the other revision sits under the canonical id with refs/main: a lookup that ignored the pin would take it
    put_in_cache(hub, "openai-community/gpt2", OTHER, tiny[2][0], ref="main")
    snap = put_in_cache(hub, "gpt2", PINNED, tiny[1][0], ref=None)
    out = record_model("auto", PINNED, None, 0, {}, 300, TEXT, "unused.json", allow_other_revision=allow)
    rec = out["model"]
    assert (rec["repo_id"], rec["revision"], rec["location"]) == ("gpt2", PINNED, str(snap))
    loaded = load_resolved(rec)
    assert torch.equal(_logits(loaded), tiny[1][1])
    assert not torch.equal(_logits(loaded), tiny[2][1])  # control: the other revision's weights do differ


def test_another_revision_is_refused_naming_it_where_and_the_two_fixes(hub, tiny):
    snap = put_in_cache(hub, "openai-community/gpt2", OTHER, tiny[2][0])
    with pytest.raises(OtherRevision) as parse_time:
        weights_location("auto", PINNED, None)  # the rules file: the run stops before any job
    for source in ("auto", "cache"):
        with pytest.raises(OtherRevision) as job:
            resolve_model(source, PINNED, corpus_text=TEXT)
        assert str(job.value) == str(parse_time.value)
    msg = str(parse_time.value)
    assert f"revision {OTHER}" in msg and str(snap) in msg and f"gpt2.revision is {PINNED}" in msg
    assert f"`{fetch_command(PINNED)}`" in msg and "gpt2.allow_other_revision: true" in msg
    assert resolve_model("random", PINNED, corpus_text=TEXT, tokenizer_vocab_size=300,
                         random_config={"n_layer": 1, "n_embd": 8, "n_head": 2})[0]["route"] == "random"


def test_another_revision_runs_when_allowed_and_every_output_names_it(hub, tiny):
    snap = put_in_cache(hub, "gpt2", OTHER, tiny[2][0])
    assert weights_location("auto", PINNED, None, True) == str(snap)
    out = record_model("auto", PINNED, None, 0, {}, 300, TEXT, "unused.json", allow_other_revision=True)
    rec = out["model"]
    assert rec["model_source"] == f"pretrained@{OTHER}" and out["_meta"]["model_source"] == rec["model_source"]
    assert (rec["revision"], rec["pinned_revision"], rec["location"]) == (OTHER, PINNED, str(snap))
    loaded = load_resolved(rec)  # what each GPT-2 job does with model.json
    assert torch.equal(_logits(loaded), tiny[2][1])
    info = loaded.info  # each GPT-2 job's meta.json
    assert (info["model_source"], info["model_revision"], info["model_pinned_revision"]) == (rec["model_source"],
                                                                                            OTHER, PINNED)
    # a documented row that needs the pinned weights: judged on them, shown with the revision's name otherwise
    assert verdict("pretrained", "0.5", 0.5, model_source="pretrained")[0] == "match"
    status, why = verdict("pretrained", "0.5", 0.5, model_source=info["model_source"])
    assert status != "match" and OTHER in why
    # the report: that row with its reason, and the banner at the top and in the GPT-2 section
    row = dict(id="G1", quantity="target_loss", description="row", documented="0.5", unit="", measured=0.5,
               measured_printed="0.5", kind="pretrained", status=status, note=why, model_source=info["model_source"],
               tolerance="")
    html = render(str(TEMPLATES), pd.DataFrame([row]), {"tables": {}, "figures": {}, "metas": [], "paths": []},
                  models={"gpt2": rec}, families=[Family("gpt2", "GPT-2 probes", ("G1",), 70)],
                  config={"gpt2": {"source": "auto", "revision": PINNED}})
    assert html.count("GPT-2 ran with pretrained weights at another revision") == 2
    assert "GPT-2 ran with its pretrained weights" not in html and "without its pretrained" not in html
    banner = html[html.index("GPT-2 ran with pretrained weights at another revision"):]
    banner = " ".join(unescape(banner[:banner.index("</div>")]).split())
    assert f"<code>{OTHER}</code>" in banner and f"<code>{PINNED}</code>" in banner and str(snap) in banner
    assert fetch_command(PINNED) in banner.replace("<code>", "").replace("</code>", "")
    assert f"measured on pretrained@{OTHER} weights" in html


def test_allow_other_revision_is_checked_like_other_keys():
    assert problems({}) == ""
    msg = problems({"gpt2": {"allow_other_revision": "yes"}})
    assert "gpt2.allow_other_revision" in msg
    assert problems({"gpt2": {"allow_other_revision": True}}) == ""


def _fresh(code: str, env: dict) -> dict:
    """Run `code` (which prints one JSON line) in a fresh interpreter with exactly `env` (plus PATH, PYTHONPATH)."""
    base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    base["PYTHONPATH"] = str(ROOT / "src")
    out = subprocess.run([sys.executable, "-c", code], env=base | env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_hub_cache_dir_is_the_one_huggingface_hub_reads(tmp_path):
    """huggingface_hub.constants, imported fresh under each environment, is the oracle."""
    code = ("import json; from adbench.gpt2.locate import hub_cache_dir; import huggingface_hub.constants as c; "
            "print(json.dumps([str(hub_cache_dir()), c.HF_HUB_CACHE]))")
    cases = [{}, {"HF_HOME": str(tmp_path / "home")}, {"HF_HUB_CACHE": str(tmp_path / "hub")},
             {"HF_HOME": str(tmp_path / "home"), "HF_HUB_CACHE": str(tmp_path / "hub")},
             {"XDG_CACHE_HOME": str(tmp_path / "xdg")}, {"HUGGINGFACE_HUB_CACHE": str(tmp_path / "legacy")}]
    seen = set()
    for env in cases:
        ours, theirs = _fresh(code, env)
        assert Path(ours) == Path(theirs), env
        seen.add(ours)
    assert len(seen) == len(cases) - 1  # the cases do move the cache (HF_HUB_CACHE wins over HF_HOME)


def test_parse_time_lookup_stays_offline_light_and_leaves_the_environment_alone(tiny, tmp_path):
    """The rules file's lookup inside Snakemake: no socket, no offline switch left behind, huggingface_hub imported
    only when the cache holds a GPT-2 folder, torch never."""
    put_in_cache(tmp_path / "full", "openai-community/gpt2", PINNED, tiny[1][0])
    code = (
        "import json, os, socket, sys\n"
        "def refuse(*a, **k): raise OSError('network touched')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse; socket.getaddrinfo = refuse\n"
        "from adbench.gpt2.locate import weights_location\n"
        f"where = weights_location('auto', {PINNED!r}, None)\n"
        "try:\n    socket.create_connection(('localhost', 9)); guard = False\nexcept OSError:\n    guard = True\n"
        "print(json.dumps({'where': where, 'guard': guard, 'hub': 'huggingface_hub' in sys.modules,\n"
        "  'heavy': sorted(m for m in ('torch', 'transformers') if m in sys.modules),\n"
        "  'offline': [os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE')]}))\n")
    empty = _fresh(code, {"HF_HUB_CACHE": str(tmp_path / "empty")})
    assert empty == {"where": None, "guard": True, "hub": False, "heavy": [], "offline": [None, None]}
    full = _fresh(code, {"HF_HUB_CACHE": str(tmp_path / "full")})
    assert full["where"] == str(tmp_path / "full" / "models--openai-community--gpt2" / "snapshots" / PINNED)
    assert full["hub"] and full["guard"] and full["heavy"] == [] and full["offline"] == [None, None]


def test_the_family_note_gives_the_command_the_errors_give():
    """The note's fetch command is the one locate.py prints, at config.yaml's revision: the two cannot drift."""
    note = (ROOT / "src/adbench/gpt2/README.md").read_text()
    blocks = [b.split("```")[0] for b in note.split("```sh\n")[1:]]
    assert [" ".join(b.replace("\\\n", " ").split()) for b in blocks] == [".venv/bin/" + fetch_command(PINNED)]
    assert fetch_command(OTHER) not in note  # control: another revision's command is not what it says


@pytest.mark.parametrize("extra", [[], ["--bogus-flag"]])
def test_the_fetch_command_is_one_the_installed_hf_cli_accepts(extra, tmp_path):
    """Offline, so it reaches the network step and stops there; a usage error (click's exit 2) would mean a wrong
    flag. The control adds an unknown flag and must get that usage error."""
    argv = [str(Path(sys.executable).parent / "hf"), *shlex.split(fetch_command(PINNED))[1:], *extra]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path), "NO_COLOR": "1"}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if extra:
        assert out.returncode == 2
    else:
        assert out.returncode == 1 and "offline mode is enabled" in out.stdout + out.stderr
        assert f"tree/{PINNED}" in out.stdout + out.stderr  # it asked for the pinned revision
