"""softdtw_torch.distributed on real gloo ranks (spawned processes on loopback, nothing mocked):
the all-pairs matrices, k-NN prediction, the ROCKET family's transforms, barycenters (L-BFGS and
Adam, K groups, ragged, the divergence, the unfused path) and k-means fits give, on every rank,
the single-process call's bits, at 2, 3 and 4 ranks; a barycenter callback that stops one rank stops
all; k-means without a seed, or with parameters that differ between ranks, is refused
everywhere; a part that fails on some ranks raises on every rank (naming the rank) instead of
leaving the others waiting; a rank that dies outright makes the others raise within the process
group's timeout; inputs that differ between ranks and inputs that require grad are refused by
name on every rank."""
import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import softdtw_torch as st
from softdtw_torch import metrics
from softdtw_torch.barycenter import softdtw_barycenter

import _distributed_ops_worker as worker

pytestmark = [
    pytest.mark.slow,  # a process group of 2, 3 or 4 spawned ranks: 20-40 s each
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="torch built without gloo"),
]

WORLD_SIZES = [2, 3, 4]


@pytest.fixture(scope="module", params=WORLD_SIZES, ids=[f"{w}-ranks" for w in WORLD_SIZES])
def ranks(request, tmp_path_factory):
    world = request.param
    out = tmp_path_factory.mktemp(f"ranks{world}")
    context = mp.spawn(worker.run, args=(world, str(out / "store"), str(out)), nprocs=world, join=False)
    # Bounded: a hang (a rank waiting for another forever) fails the test instead of blocking it.
    for _ in range(240):
        if context.join(timeout=1):
            break
    else:
        for process in context.processes:
            process.kill()
        pytest.fail(f"{world} ranks did not finish within 240 s")
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(world)]


def single_process():
    """Each case's single-process twin, on the same inputs."""
    X, Y, lengths, series, train, labels, test = worker.inputs()
    knn = st.KNeighborsTimeSeriesClassifier(n_neighbors=3).fit(train, labels)
    fitted = worker.transformers(series)
    return {
        "cdist_symmetric": st.cdist_soft_dtw(X, gamma=0.1, chunk_size=7),
        "cdist_xy_normalized_ragged": st.cdist_soft_dtw(X, Y, gamma=0.5, normalize=True, x_lengths=lengths,
                                                        chunk_size=4),
        "cdist_unfused_banded": st.cdist_soft_dtw(X, gamma=1.0, fused=False, bandwidth=3, chunk_size=5),
        "cdist_dtw_numpy": torch.as_tensor(metrics.cdist_dtw(X.double().numpy(), bandwidth=4, chunk_size=6)),
        "kneighbors_predict": torch.as_tensor(knn.predict(test)),
        **{f"transform_{name}": torch.as_tensor(est.transform(series)) for name, est in fitted.items()},
        "transform_tensor": fitted["MiniRocket"].transform(torch.from_numpy(series)),
        **clustering_single_process(),
    }


def clustering_single_process():
    groups, group_lengths, wide, series = worker.clustering_inputs()
    return {
        "barycenter": torch.as_tensor(softdtw_barycenter(groups[0], gamma=0.5, max_iter=15)),
        "barycenter_groups_ragged_divergence": softdtw_barycenter(
            torch.from_numpy(groups), gamma=1.0, max_iter=10, x_lengths=group_lengths, normalize=True),
        "barycenter_adam_float32": softdtw_barycenter(torch.from_numpy(groups[1]).float(), method="adam",
                                                      max_iter=20),
        "barycenter_unfused": torch.as_tensor(softdtw_barycenter(wide, gamma=1.0, max_iter=6)),
        "barycenter_callback": torch.as_tensor(softdtw_barycenter(groups[2], max_iter=15,
                                                                  callback=lambda it, z: it >= 2)),
        **{name: worker.fitted_state(est.fit(series, **kw)) for name, (est, kw) in worker.kmeans_fits().items()},
    }


EXPECTED = None


def expected(name):
    global EXPECTED
    if EXPECTED is None:
        EXPECTED = single_process()
    return EXPECTED[name]


@pytest.mark.parametrize("name", ["cdist_symmetric", "cdist_xy_normalized_ragged", "cdist_unfused_banded",
                                  "cdist_dtw_numpy", "kneighbors_predict", "transform_Rocket", "transform_MiniRocket",
                                  "transform_MultiRocket", "transform_Hydra", "transform_tensor", "barycenter",
                                  "barycenter_groups_ragged_divergence", "barycenter_adam_float32",
                                  "barycenter_unfused", "barycenter_callback", "kmeans_pp",
                                  "kmeans_divergence_random", "kmeans_tslearn"])
def test_every_rank_gets_the_single_process_bits(ranks, name):
    want = expected(name)
    for rank, results in enumerate(ranks):
        status, *got = results[name]
        assert status == "ok", f"rank {rank}: {got}"
        assert got[0].dtype == want.dtype and got[0].shape == want.shape, (rank, got[0].dtype, got[0].shape)
        assert torch.equal(got[0], want), f"rank {rank}: not the single-process bits"
    assert ranks[0][name][1].numel() > 0


def test_sharded_features_are_each_ranks_block_of_the_single_process_ones(ranks):
    want = expected("transform_MiniRocket")
    stops = []
    for rank, results in enumerate(ranks):
        status, got = results["transform_sharded"][:2]
        assert status == "ok", got
        start, stop = int(got[0]), int(got[1])
        block = got[2:].reshape(stop - start, -1)
        assert torch.equal(block, want[start:stop]), f"rank {rank}"
        stops.append((start, stop))
    # The blocks cover the cases once, in order.
    assert stops[0][0] == 0 and stops[-1][1] == want.shape[0]
    assert all(a[1] == b[0] for a, b in zip(stops, stops[1:]))


def test_a_part_failing_on_some_ranks_raises_on_every_rank(ranks):
    messages = [results["failing_part"] for results in ranks]
    assert all(status == "error" for status, *_ in messages), messages
    for status, message, _ in messages:
        assert message.startswith("ValueError: cdist_soft_dtw"), message
        assert "finite" in message, message
    # Some rank learnt it from another: the message names the rank where it arose.
    assert any("rank " in message and "failed" in message for _, message, _ in messages), messages


def test_inputs_that_differ_between_ranks_are_refused_everywhere(ranks):
    for status, message, _ in (results["different_inputs"] for results in ranks):
        assert status == "error"
        assert message.startswith("ValueError: cdist_soft_dtw: every rank must pass the same inputs"), message


def test_inputs_that_require_grad_are_refused(ranks):
    for status, message, _ in (results["requires_grad"] for results in ranks):
        assert status == "error"
        assert "not differentiable" in message and message.startswith("ValueError: cdist_soft_dtw"), message


def test_without_a_process_group_the_call_says_so():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(RuntimeError, match="cdist_soft_dtw: torch.distributed is not initialized"):
        from softdtw_torch import distributed

        distributed.cdist_soft_dtw(torch.randn(3, 5, 1))


def test_a_rank_that_dies_makes_the_others_raise_within_the_timeout(tmp_path):
    context = mp.spawn(worker.run_with_a_dying_rank, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2,
                       join=False)
    deadline = 120
    for _ in range(deadline):
        if all(not process.is_alive() for process in context.processes):
            break
        for process in context.processes:
            process.join(timeout=0.5)
    else:
        for process in context.processes:
            process.kill()
        pytest.fail(f"the surviving rank was still waiting after {deadline} s")
    survivor = torch.load(tmp_path / "survivor.pt", weights_only=False)
    assert survivor["outcome"].startswith("RuntimeError: cdist_soft_dtw: the process group failed"), survivor
    assert survivor["seconds"] < 60, survivor  # the group's 10 s timeout, with room for a loaded machine


def test_a_callback_that_stops_one_rank_stops_every_rank(ranks):
    # Only rank 1's callback says stop; every rank returns the barycenter of a single process
    # stopped after two iterations (test_every_rank_gets_the_single_process_bits), which is not
    # the barycenter of the 15 iterations.
    groups = worker.clustering_inputs()[0]
    unstopped = torch.as_tensor(softdtw_barycenter(groups[2], max_iter=15))
    for results in ranks:
        status, got = results["barycenter_callback"][:2]
        assert status == "ok", got
        assert torch.equal(got, expected("barycenter_callback")) and not torch.equal(got, unstopped)


def test_kmeans_without_a_seed_or_with_other_parameters_is_refused_everywhere(ranks):
    for results in ranks:
        status, message, _ = results["kmeans_unseeded"]
        assert status == "error" and message.startswith("ValueError: SoftDTWKMeans.fit: random_state=None"), message
        status, message, _ = results["kmeans_other_params"]
        assert status == "error" and "every rank must pass the same inputs" in message, message


def test_fit_refuses_other_estimators():
    from softdtw_torch import distributed

    with pytest.raises(TypeError, match="distributed.fit: expected a SoftDTWKMeans"):
        distributed.fit(st.KNeighborsTimeSeriesClassifier(), np.zeros((4, 5, 1)))


@pytest.mark.needs_cuda
def test_nccl_ranks_on_cuda_tensors_get_the_single_process_bits(tmp_path):
    """NCCL, one rank per GPU (world size 1 on a one-GPU machine: the CUDA exchanges and the success
    flag on the device, not the split itself, which the gloo tests cover)."""
    if not dist.is_nccl_available():
        pytest.skip("torch built without NCCL")
    world = torch.cuda.device_count()
    mp.spawn(worker.run_nccl_on_one_gpu, args=(world, str(tmp_path / "store"), str(tmp_path)), nprocs=world,
             join=True)
    got = torch.load(tmp_path / "nccl.pt", weights_only=False)
    X = worker.inputs()[0].cuda()
    groups = torch.from_numpy(worker.clustering_inputs()[0]).cuda()
    assert torch.equal(got["cdist"], st.cdist_soft_dtw(X, gamma=0.1, chunk_size=7).cpu())
    assert torch.equal(got["barycenter"], softdtw_barycenter(groups, gamma=1.0, max_iter=10).cpu())
