"""C1's run records: a loud bug is recorded, not lost; the training-path held-out score uses the run's own shift."""


import pytest
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

from adbench.charlm import checks, train  # noqa: E402
from adbench.charlm.variants import RAN_THROUGH  # noqa: E402

TEXT = "the loop over closures cannot fail loudly, so the logging has to. " * 20
VOCAB = "".join(sorted(set(TEXT)))
CFG = dict(steps=2, batch_size=4, block_size=8, n_layer=1, n_head=2, n_embd=16, lr=1e-3, weight_decay=0.1,
           betas=(0.9, 0.99), grad_clip=0.0, control_clip=1.0, log_every=1, loss_scale=40.0, seed=0,
           gemm_backend="default")


def test_a_loud_bug_is_recorded_and_the_silent_run_runs_through():
    loud = train.train_variant("loss_scaled", TEXT, VOCAB, **CFG, bug=train.TRAIN_BUGS[2])["run"].iloc[0]
    assert loud.raised.startswith("RuntimeError") and loud.steps_completed == 0
    quiet = train.train_variant("loss_scaled", TEXT, VOCAB, **CFG)["run"].iloc[0]
    assert quiet.raised == RAN_THROUGH and quiet.steps_completed == CFG["steps"]
    with pytest.raises(RuntimeError):  # negative control: the correct loop's error stays the job's error
        train.train_variant("correct", TEXT, VOCAB, **CFG, bug=train.TRAIN_BUGS[2])


def test_training_path_heldout_uses_the_runs_own_shift():
    blob = train.train_variant("correct", TEXT, VOCAB, **CFG)["weights"]
    model = checks.load_weights(blob)
    data = train.encode(TEXT[:300], VOCAB)
    gen = torch.Generator().manual_seed(0)
    n = -(-len(data) // (4 * 8))
    oracle = 0.0
    with torch.no_grad():
        for _ in range(n):  # the unshifted run's batches: the target is the input itself
            x, _ = train.get_batch(data, 4, 8, True, gen)
            oracle += F.cross_entropy(model(x).reshape(-1, len(VOCAB)).double(), x.reshape(-1)).item()
    got = checks.training_path_heldout(blob, "unshifted_targets", TEXT[:300], VOCAB, 4, 0).iloc[0]
    assert got.batches == n and got.heldout_loss == pytest.approx(oracle / n, rel=1e-12)
    shifted = checks.training_path_heldout(blob, "correct", TEXT[:300], VOCAB, 4, 0).heldout_loss.iloc[0]
    assert shifted != pytest.approx(got.heldout_loss, rel=1e-3)  # negative control: the shift changes the score
