"""Provenance: code hashes follow intra-package imports; versions can be read and overridden; a job records its
SLURM job and node only inside a SLURM job."""

import json
import sys

from adbench import provenance


def _make_pkg(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_code_hash_follows_transitive_imports(tmp_path, monkeypatch):
    _make_pkg(tmp_path, {"pk/__init__.py": "", "pk/a.py": "from .b import f\n", "pk/b.py": "from pk import c\n",
                         "pk/c.py": "X = 1\n", "pk/d.py": "Y = 2\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in [m for m in sys.modules if m == "pk" or m.startswith("pk.")]:
        monkeypatch.delitem(sys.modules, m)
    assert set(provenance.module_closure(["pk.a"])) == {"pk.a", "pk.b", "pk", "pk.c"}
    before = provenance.code_hash("pk.a")
    (tmp_path / "pk/d.py").write_text("Y = 3\n")  # not imported by pk.a
    assert provenance.code_hash("pk.a") == before
    (tmp_path / "pk/c.py").write_text("X = 2\n")  # imported two levels down
    assert provenance.code_hash("pk.a") != before


def test_versions_and_override(monkeypatch):
    v = provenance.versions()
    assert set(v) == set(provenance.PACKAGES) and v["torch"].startswith("2.13.0")
    monkeypatch.setenv(provenance.VERSION_OVERRIDE_ENV, json.dumps({"torch": "9.9.9"}))
    assert provenance.installed_version("torch") == "9.9.9"


def test_meta_record_fields():
    m = provenance.meta_record(rule="r", wildcards={}, args={"a": 1}, seed=0, device="cpu", threads=1, wall_s=0.5)
    for key in ("versions", "device", "torch_threads", "seed", "config_hash", "wall_time_s", "cpu_model", "platform"):
        assert key in m
    assert m["config_hash"] == provenance.config_hash({"a": 1}) != provenance.config_hash({"a": 2})


def test_slurm_context_only_inside_a_job(monkeypatch):
    assert provenance.slurm_context({"PATH": "/bin"}) == {}
    env = {"SLURM_JOB_ID": "42", "SLURMD_NODENAME": "n7", "SLURM_JOB_NODELIST": "n[7-8]"}
    assert provenance.slurm_context(env) == {"slurm_job_id": "42", "slurm_node": "n7"}
    assert provenance.slurm_context({"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n8"})["slurm_node"] == "n8"
    monkeypatch.setenv("SLURM_JOB_ID", "43")
    monkeypatch.setenv("SLURMD_NODENAME", "n9")
    meta = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    assert (meta["slurm_job_id"], meta["slurm_node"]) == ("43", "n9")
    monkeypatch.delenv("SLURM_JOB_ID")
    meta = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    assert "slurm_job_id" not in meta and "slurm_node" not in meta
