"""Provenance of the whole installed stack: every meta.json records the lock's hash and every installed
package; the report's provenance appendix lists each package once."""

import hashlib
import re

import pandas as pd

from adbench import provenance
from adbench.render import TEMPLATES
from adbench.render.page import render
from conftest import ROOT


def _meta(**kw):
    m = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    return {**m, "_path": "results/X/meta.json", "code_hash": "c", **kw}


def _html(metas):
    cmp = pd.DataFrame([dict(id="S1", quantity="q", description="row", documented="1", unit="", measured=1.0,
                             measured_printed="1", kind="exact", status="match", note="", model_source="",
                             tolerance="")])
    return render(str(TEMPLATES), cmp, {"tables": {}, "figures": {}, "metas": metas, "paths": []})


def _packages_table(html):
    table = re.search(r'<table id="packages">(.*?)</table>', html, re.S).group(1)
    return re.findall(r'<tr><td class="mono">([^<]+)</td><td class="mono">([^<]+)</td></tr>', table)


def test_meta_records_the_lock_hash_and_the_whole_stack():
    m = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    assert m["lock_sha256"] == hashlib.sha256((ROOT / "envs" / "lock.txt").read_bytes()).hexdigest()
    assert m["packages"]["torch"] == m["versions"]["torch"] and m["packages"]["jinja2"]
    assert len(m["packages"]) > len(provenance.PACKAGES)


def test_negative_control_another_lock_has_another_hash(tmp_path):
    other = tmp_path / "lock.txt"
    other.write_text((ROOT / "envs" / "lock.txt").read_text().replace("numpy==2.4.6", "numpy==2.4.5"))
    assert provenance.lock_sha256(other) != provenance.lock_sha256()
    assert provenance.lock_sha256(tmp_path / "absent.txt") == "not found"


def test_appendix_lists_every_package_once_with_the_lock_hash():
    meta = _meta()
    html = _html([meta, {**meta, "_path": "results/Y/meta.json"}])
    rows = _packages_table(html)
    assert rows == sorted(meta["packages"].items())   # each package once, in name order
    assert meta["lock_sha256"] in html


def test_negative_control_a_job_that_saw_another_version_shows_both():
    meta = _meta()
    other = {**meta, "_path": "results/Y/meta.json", "packages": {**meta["packages"], "numpy": "0.0.1"}}
    rows = dict(_packages_table(_html([meta, other])))
    assert rows["numpy"] == f"{meta['packages']['numpy']}, 0.0.1"
    old = {k: v for k, v in meta.items() if k not in ("packages", "lock_sha256")}   # meta.json before this
    assert 'id="packages"' not in _html([old])
