"""Worker of test_distributed.py, in its own module so that spawned processes can import it."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import softdtw_torch as st


def make_model(state):
    model = torch.nn.Linear(3, 3).double()
    model.load_state_dict(state)
    return model


def train_step(rank, world_size, init_file, x, y, state, out_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        torch.set_num_threads(1)
        model = DistributedDataParallel(make_model(state))
        shard = slice(rank * x.shape[0] // world_size, (rank + 1) * x.shape[0] // world_size)
        loss = st.SoftDTW(gamma=0.5, bandwidth=4)(model(x[shard]), y[shard])
        loss.backward()  # DDP all-reduces (averages) the gradients here
        if rank == 0:
            torch.save({name: p.grad for name, p in model.module.named_parameters()}, out_file)
        # Both ranks reach here before either tears gloo down: a rank destroying its process group
        # while the other is still in it can abort the other's gloo threads (SIGABRT seen in CI).
        dist.barrier()
    finally:
        dist.destroy_process_group()
