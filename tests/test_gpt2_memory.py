"""G6's fake-tensor accounting against its oracle, the real accounting: every count, every case, row for row."""

import copy

import pandas as pd
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

torch.set_num_threads(1)  # tiny ops: more threads only contend on a shared machine

from adbench.gpt2.fake import FakeAccounting  # noqa: E402
from adbench.gpt2.memory import CONFIGURED, SWITCH, measure_memory  # noqa: E402
from adbench.gpt2.nanogpt import from_gpt2  # noqa: E402
from adbench.gpt2.resolve import record_model  # noqa: E402
from testing_tools import load_gpt2  # noqa: E402
from adbench.gpt2.saved import COUNTS, Accounting, account  # noqa: E402

REV = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
TINY = dict(n_layer=2, n_embd=32, n_head=2, n_positions=64, vocab_size=300)
MODEL = dict(source="random", revision=REV, path=None, seed=3, tokenizer_vocab_size=300, random_config=TINY)
TEXT = ("The capital of France is Paris. Gradients flow backward through every block of the model, "
        "and the loss is the average surprise of the next token. ") * 30
ROW = ("checkpoint", "batch", "tokens", "kept", *COUNTS)  # every column of a row but its forward time
SEQ, BATCH = 32, 2


def _nets(hf):
    return {"transformers": hf, "nanogpt": from_gpt2(hf)}


def _row(r: dict) -> dict:
    return {k: r[k] for k in ROW}


@pytest.fixture(scope="module")
def tiny():
    """The tiny model's two architectures and a (2, 32) batch of corpus tokens."""
    loaded = load_gpt2(**MODEL, corpus_text=TEXT)
    return _nets(loaded.model), torch.tensor(loaded.tokenizer.encode(TEXT)[: BATCH * SEQ]).view(BATCH, SEQ)


def _fake_vs_real(nets: dict, x: torch.Tensor, batches, kinds_ckpt) -> list[tuple]:
    """(case, real row, fake row) for each architecture, attention kernel, checkpointing and batch;
    batches slice one batch x, as the job does (a slice's storage is x's)."""
    out = []
    for arch, net in nets.items():
        real, fake = Accounting(net), FakeAccounting(net)
        for kind, ckpt in kinds_ckpt(arch):
            SWITCH[arch](real.module, kind)
            SWITCH[arch](fake.module, kind)
            out += [((arch, kind, ckpt, b), _row(real(x[:b], ckpt)), _row(fake(x[:b], ckpt))) for b in batches]
        SWITCH[arch](net, CONFIGURED[arch])
    return out


def test_fake_rows_equal_real_rows_in_every_case(tiny):
    nets, x = tiny
    cases = _fake_vs_real(nets, x, (1, BATCH), lambda arch: [(k, c) for k in ("sdpa", "eager") for c in (False, True)])
    assert len(cases) == 16
    for case, real, fake in cases:
        assert fake == real, case
    # the counts are not trivially equal: they differ between the cases
    assert len({tuple(real.values()) for _, real, _ in cases}) > 8


def test_real_kept_rows_equal_fake_dropped_rows(tiny):
    """The job's check on every run: the kept batch-1 rows (real, with backward) against the fake dropped ones."""
    nets, x = tiny
    for arch, net in nets.items():
        fake = FakeAccounting(net)
        for ckpt in (False, True):
            kept, dropped = account(net, x[:1], ckpt, True), fake(x[:1], ckpt)
            assert {k: kept[k] for k in COUNTS} == {k: dropped[k] for k in COUNTS}, (arch, ckpt)


def test_naive_fake_input_and_unpatched_masks_miscount(tiny):
    """Negative controls: the two ways a fake forward goes wrong (the reviewer's probe), each caught here."""
    nets, x = tiny
    hf = nets["transformers"]
    real = account(hf, x, False, False)
    # real parameters, fake input: each parameter is converted at use, so none counts as a parameter
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        naive = account(hf, mode.from_tensor(x), False, False)
    assert naive["parameter_bytes_seen"] < real["parameter_bytes_seen"]
    assert naive["unique_storages"] > real["unique_storages"]
    # a converted copy, but transformers left to read fake positions: under SDPA it builds the causal mask
    # the real forward skips, one more saved tensor per layer (68 instead of 66 on this two-layer model)
    fake = FakeAccounting(hf)
    SWITCH["transformers"](fake.module, "sdpa")
    sdpa = copy.deepcopy(hf)
    SWITCH["transformers"](sdpa, "sdpa")
    with fake.mode:
        unpatched = account(fake.module, fake.mode.from_tensor(x), False, False)
    real_sdpa = account(sdpa, x, False, False)
    assert unpatched["hook_calls"] == real_sdpa["hook_calls"] + TINY["n_layer"] and real_sdpa["hook_calls"] == 66
    assert _row(fake(x, False)) == _row(real_sdpa)  # with the patch: equal again


def test_a_tensor_left_unconverted_raises(tiny):
    """A copy that converts the parameters but not the buffers (the nanoGPT-style causal mask): the mode
    refuses the real tensor instead of counting it wrong."""
    nets, x = tiny
    net = copy.deepcopy(nets["nanogpt"])
    SWITCH["nanogpt"](net, "eager")  # the eager path reads the `future` buffer
    fake = FakeAccounting(net)
    partial = copy.deepcopy(net, {id(p): fake.mode.from_tensor(p) for p in net.parameters()})
    with fake.mode, pytest.raises(Exception, match="(?i)fake"):
        account(partial, fake.mode.from_tensor(x), False, False)
    assert _row(fake(x, False)) == _row(account(net, x, False, False))  # the full conversion counts right


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    p = tmp_path_factory.mktemp("gpt2") / "tokenizer.json"
    out = record_model(**MODEL, corpus_text=TEXT, tokenizer_path=str(p))
    p.write_bytes(out["tokenizer"])
    return out["model"]


def _job(record, fake: bool) -> dict:
    return measure_memory(record, TEXT, SEQ, BATCH, timing_batch=1, timing_rounds=2, timing_warmup=0, seed=0,
                          fake=fake)


def _deterministic(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """A G6 table less what differs between identical runs (README: `_volatile` columns, the timing rows)."""
    df = df.drop(columns=[c for c in df.columns if c.endswith("_volatile")])
    if name == "values":
        df = df[~df.quantity.str.startswith("checkpoint_time_overhead_pct")]
    return df.reset_index(drop=True)


@pytest.fixture(scope="module")
def real_job(record):
    """The oracle: the G6 job with every forward real."""
    return _job(record, False)


def test_g6_job_on_fake_tensors_equals_the_all_real_job(record, real_job):
    fake, real = _job(record, True), real_job
    assert fake["_meta"]["dropped_rows_counted_on"] == {"transformers": "fake tensors", "nanogpt": "fake tensors"}
    assert real["_meta"]["dropped_rows_counted_on"] == {"transformers": "real forward", "nanogpt": "real forward"}
    for name in ("values", "saved", "by_node", "summary", "attention", "architectures"):
        pd.testing.assert_frame_equal(_deterministic(name, fake[name]), _deterministic(name, real[name]), obj=name)
    assert len(fake["saved"]) == 12 and len(fake["attention"]) == 4


def test_g6_falls_back_to_real_forwards_when_fake_counts_disagree(record, real_job, monkeypatch):
    """The job's own check: fake rows that differ from the kept (real) rows are not used."""
    real = real_job
    wrong = FakeAccounting.__call__
    monkeypatch.setattr(FakeAccounting, "__call__", lambda self, ids, ckpt: {**wrong(self, ids, ckpt),
                                                                            "hook_calls": -1})
    out = _job(record, True)
    assert out["_meta"]["dropped_rows_counted_on"] == {"transformers": "real forward", "nanogpt": "real forward"}
    pd.testing.assert_frame_equal(_deterministic("saved", out["saved"]), _deterministic("saved", real["saved"]))
    assert (out["saved"].hook_calls > 0).all()


def test_g6_counts_for_real_where_transformers_lacks_the_patched_function(record, real_job, monkeypatch):
    """A transformers release without `find_packed_sequence_indices` gets real forwards, not an unpatched fake."""
    from adbench.gpt2 import memory

    monkeypatch.setattr(memory, "supported", lambda: False)
    out = _job(record, True)
    assert out["_meta"]["dropped_rows_counted_on"] == {"transformers": "real forward", "nanogpt": "real forward"}
    pd.testing.assert_frame_equal(_deterministic("saved", out["saved"]), _deterministic("saved", real_job["saved"]))


@pytest.mark.fullsize
def test_full_size_batch_one_fake_equals_real():
    """GPT-2 small at 1,024 tokens, one sequence sliced from a batch of 8 as in the job: both architectures,
    plain and checkpointed with the configured kernel, and the other kernel plain (the attention table).
    Six real forwards, no backward."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(attn_implementation="eager", use_cache=False)).eval()
    x = torch.randint(0, hf.config.vocab_size, (8, hf.config.n_positions))
    other = {"transformers": "sdpa", "nanogpt": "eager"}
    cases = _fake_vs_real(_nets(hf), x, (1,), lambda a: [(CONFIGURED[a], False), (CONFIGURED[a], True),
                                                         (other[a], False)])
    for case, real, fake in cases:
        assert fake == real, case
    saved = {case: r for case, r, _ in cases}
    # the documents' order of magnitude: a sequence keeps about 1 GB outside the weights
    assert 0.5e9 < saved["nanogpt", "sdpa", False, 1]["unique_storage_bytes"] < 2e9


def test_page_faults_are_counted_per_call():
    """Touching 64 MiB of fresh memory faults pages in (4 KiB or 2 MiB ones: at least 32); doing nothing does not.
    The memory is a fresh anonymous mapping each call, unmapped after: an allocator's heap could hand back pages
    an earlier test already touched (numpy's buffer came from such a heap once, with 0 faults)."""
    import mmap
    from adbench.gpt2.memory import faulting

    def touch_fresh(size=64 * 2**20):
        with mmap.mmap(-1, size) as m:
            for offset in range(0, size, 4096):
                m[offset] = 1
    touched, idle = [], []
    touch = faulting(touch_fresh, touched)
    rest = faulting(lambda: None, idle)
    for _ in range(3):
        touch()
        rest()
    assert len(touched) == len(idle) == 3
    assert min(touched) >= 32 and max(idle) < 32
