"""SoftDTW as a loss under DistributedDataParallel: 2 CPU processes (gloo) give the gradients of
a single process on the whole batch."""
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import softdtw_torch as st
from softdtw_torch import _reference as ref

import _ddp_worker


@pytest.mark.slow  # two gloo ranks spawned: 9-10 s
@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="torch built without gloo")
def test_ddp_gradients_match_single_process(tmp_path):
    torch.manual_seed(0)
    state = torch.nn.Linear(3, 3).double().state_dict()
    x, y = ref.random_pairs(8, 12, 10, 3, seed=1)

    mp.spawn(_ddp_worker.train_step, args=(2, str(tmp_path / "store"), x, y, state, str(tmp_path / "grads.pt")),
             nprocs=2, join=True)
    ddp_grads = torch.load(tmp_path / "grads.pt", weights_only=True)

    model = _ddp_worker.make_model(state)
    st.SoftDTW(gamma=0.5, bandwidth=4)(model(x), y).backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(ddp_grads[name], p.grad, rtol=1e-12, atol=1e-12)
